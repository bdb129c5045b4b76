/* sweep.c -- the sweep file: walks the YAML tree into ds_sweep (base point
 * configuration + grid axes), checks required keys and cross-field
 * constraints on every grid point, computes the canonical hash, and expands
 * point ids (combo * replicas + replica, last axis fastest). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "dynsweep/util.h"

#define SW_MAX_OPTS 64
#define SW_STORE_LIMIT (64.0 * 1024 * 1024 * 1024) /* bytes */

static const char *const sw_top_keys[] = {"name",      "seed",  "grid",  "model", "data",
                                          "loss",      "optimizer", "train", "record"};
static const char *const sw_sections[] = {"model", "data", "loss", "optimizer", "train", "record"};
static const char *const sw_range_keys[] = {"start", "stop", "num", "spacing"};

/* Parse state: positions of everything a later message may point at. */
typedef struct {
  const char *file;
  ds_sweep *s;
  int have_name;
  int set[SW_MAX_OPTS], sline[SW_MAX_OPTS], scol[SW_MAX_OPTS]; /* base option given at */
  int axis_of[SW_MAX_OPTS];                                    /* option -> axis or -1 */
  int *vline[DS_MAX_AXES], *vcol[DS_MAX_AXES];                 /* each axis value's position */
  int have_grid, gline, gcol;
  int have_loss, lline, lcol;
} sw_ctx;

static int sw_err(const sw_ctx *x, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sw_err(const sw_ctx *x, int line, int col, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s", x->file, line, col, msg);
}

/* "unknown key 'k' in WHERE (did you mean 'x'?)" or the list of valid keys. */
static int sw_unknown_key(const sw_ctx *x, const ds_yn *k, const char *where,
                          const char *const *cands, int n, const char *extra) {
  const char *sug = ds_suggest(k->str, cands, n);
  if (sug)
    return sw_err(x, k->line, k->col, "unknown key '%s' in %s (did you mean '%s'?)", k->str, where, sug);
  char list[1024];
  int used = 0;
  list[0] = 0;
  for (int i = 0; i < n && used < (int)sizeof list; i++)
    used += snprintf(list + used, sizeof list - (size_t)used, "%s%s", i ? ", " : "", cands[i]);
  return sw_err(x, k->line, k->col, "unknown key '%s' in %s (valid keys: %s%s)", k->str, where, list,
                extra ? extra : "");
}

/* An empty plain value ("model:" with nothing under it) counts as an empty map. */
static int sw_is_null(const ds_yn *v) {
  return v->kind == DS_YN_SCALAR && !v->quoted && (!v->str[0] || !strcmp(v->str, "~") || !strcmp(v->str, "null"));
}

/* ---- top-level scalars --------------------------------------------------- */

static int sw_parse_name(sw_ctx *x, const ds_yn *v) {
  if (v->kind != DS_YN_SCALAR || !v->str[0])
    return sw_err(x, v->line, v->col, "name: expected a short name such as 'width-sweep', got %s",
                  v->kind == DS_YN_SCALAR ? "an empty value" : ds_yaml_kind_name(v));
  size_t n = strlen(v->str);
  if (n >= sizeof x->s->name)
    return sw_err(x, v->line, v->col, "name: too long (%zu characters, limit %zu)", n,
                  sizeof x->s->name - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v->str[i];
    if (!isalnum(c) && c != '-' && c != '_' && c != '.')
      return sw_err(x, v->line, v->col,
                    "name: use only letters, digits, '-', '_' and '.', got '%s'", v->str);
  }
  memcpy(x->s->name, v->str, n + 1);
  x->have_name = 1;
  return DS_OK;
}

static int sw_parse_seed(sw_ctx *x, const ds_yn *v) {
  const char *s = v->kind == DS_YN_SCALAR ? v->str : "";
  int ok = v->kind == DS_YN_SCALAR && s[0] && strspn(s, "0123456789") == strlen(s);
  char *end;
  errno = 0;
  unsigned long long u = ok ? strtoull(s, &end, 10) : 0;
  if (!ok || errno == ERANGE)
    return sw_err(x, v->line, v->col, "seed: expected an integer in 0..18446744073709551615, got %s%s%s",
                  v->kind == DS_YN_SCALAR ? "'" : "", v->kind == DS_YN_SCALAR ? s : ds_yaml_kind_name(v),
                  v->kind == DS_YN_SCALAR ? "'" : "");
  x->s->seed = (uint64_t)u;
  return DS_OK;
}

/* ---- option sections (model:, data:, ...) -------------------------------- */

static int sw_parse_section(sw_ctx *x, const char *sec, const ds_yn *m) {
  if (sw_is_null(m)) return DS_OK;
  if (m->kind != DS_YN_MAP)
    return sw_err(x, m->line, m->col, "%s: expected a map of %s options (key: value lines), got %s",
                  sec, sec, ds_yaml_kind_name(m));
  size_t sl = strlen(sec);
  for (int i = 0; i < m->n; i++) {
    const ds_yn *k = m->key[i];
    char path[160];
    snprintf(path, sizeof path, "%s.%s", sec, k->str);
    const ds_option *o = ds_opt_find(path);
    if (!o || strcmp(o->path, path) != 0) { /* not a grid alias either */
      const char *cands[SW_MAX_OPTS];
      int n = 0;
      for (int j = 0; j < ds_noptions; j++)
        if (!strncmp(ds_options[j].path, sec, sl) && ds_options[j].path[sl] == '.')
          cands[n++] = ds_options[j].path + sl + 1;
      return sw_unknown_key(x, k, sec, cands, n, NULL);
    }
    double v;
    DS_TRY(ds_opt_parse_scalar(x->file, o, m->item[i], &v));
    int oi = ds_opt_index(o);
    ds_opt_set(o, &x->s->base, v);
    x->set[oi] = 1;
    x->sline[oi] = m->item[i]->line;
    x->scol[oi] = m->item[i]->col;
  }
  return DS_OK;
}

/* ---- grid axes ----------------------------------------------------------- */

static int sw_axis_alloc(ds_axis *a, int n) {
  a->val = ds_calloc((size_t)n, sizeof *a->val);
  a->text = ds_calloc((size_t)n, sizeof *a->text);
  if (!a->val || !a->text) return DS_ENOMEM;
  a->nvals = n;
  return DS_OK;
}

static int sw_axis_texts(const ds_option *o, ds_axis *a) {
  for (int i = 0; i < a->nvals; i++) {
    char buf[128];
    ds_opt_format(o, a->val[i], buf, sizeof buf);
    if (!(a->text[i] = ds_strdup(buf))) return DS_ENOMEM;
  }
  return DS_OK;
}

static int sw_axis_list(sw_ctx *x, const ds_option *o, int ai, const ds_yn *v) {
  ds_axis *a = &x->s->axes[ai];
  DS_TRY(sw_axis_alloc(a, v->n));
  x->vline[ai] = ds_calloc((size_t)v->n, sizeof(int));
  x->vcol[ai] = ds_calloc((size_t)v->n, sizeof(int));
  if (!x->vline[ai] || !x->vcol[ai]) return DS_ENOMEM;
  for (int i = 0; i < v->n; i++) {
    const ds_yn *it = v->item[i];
    if (it->kind != DS_YN_SCALAR)
      return sw_err(x, it->line, it->col, "grid.%s: axis values must be single values, got %s",
                    a->name, ds_yaml_kind_name(it));
    DS_TRY(ds_opt_parse_scalar(x->file, o, it, &a->val[i]));
    for (int j = 0; j < i; j++)
      if (a->val[j] == a->val[i])
        return sw_err(x, it->line, it->col,
                      "grid.%s: value '%s' is listed twice (also at line %d); list each value once "
                      "(use grid.replicas for repeats)", a->name, it->str, x->vline[ai][j]);
    x->vline[ai][i] = it->line;
    x->vcol[ai][i] = it->col;
  }
  return sw_axis_texts(o, a);
}

/* Values of a {start, stop, num, spacing} range, both ends included. */
static int sw_range_values(sw_ctx *x, const ds_option *o, ds_axis *a, const ds_yn *m, double lo,
                           double hi, int num, int logsp) {
  DS_TRY(sw_axis_alloc(a, num));
  int integral = o->type == DS_OT_INT || o->type == DS_OT_INT64;
  for (int i = 0; i < num; i++) {
    double t = num > 1 ? (double)i / (num - 1) : 0, v;
    if (i == 0) v = lo;
    else if (i == num - 1) v = hi;
    else if (logsp) /* exponents exact when start and stop are powers of ten */
      v = pow(10.0, (log10(lo) * (num - 1 - i) + log10(hi) * i) / (num - 1));
    else v = lo + (hi - lo) * t;
    if (i > 0 && i < num - 1) { /* 0.1, not 0.09999999999999999 */
      char tb[40];
      snprintf(tb, sizeof tb, "%.15g", v);
      v = strtod(tb, NULL);
    }
    if (integral) {
      double r = nearbyint(v);
      if (!logsp && fabs(v - r) > 1e-9 * fmax(1.0, fabs(v))) {
        char vb[64];
        ds_fmt_double(v, vb, sizeof vb);
        return sw_err(x, m->line, m->col,
                      "grid.%s: linear range gives the non-integer value %s for an integer option; "
                      "choose num so that (stop - start) / (num - 1) is a whole number",
                      a->name, vb);
      }
      v = r;
      if (i > 0 && v == a->val[i - 1])
        return sw_err(x, m->line, m->col,
                      "grid.%s: log range rounds to the integer %.0f twice; use a smaller num or a "
                      "wider range", a->name, v);
    }
    a->val[i] = v;
  }
  return DS_OK;
}

static int sw_range_num(sw_ctx *x, const char *axname, const ds_yn *v, int *num) {
  double d = 0;
  char *end = NULL;
  if (v->kind == DS_YN_SCALAR && v->str[0]) d = strtod(v->str, &end);
  if (!end || *end || d != floor(d) || d < 1 || d > DS_MAX_POINTS)
    return sw_err(x, v->line, v->col, "grid.%s.num: expected an integer in 1..%d, got %s%s%s", axname,
                  DS_MAX_POINTS, v->kind == DS_YN_SCALAR ? "'" : "",
                  v->kind == DS_YN_SCALAR ? v->str : ds_yaml_kind_name(v),
                  v->kind == DS_YN_SCALAR ? "'" : "");
  *num = (int)d;
  return DS_OK;
}

static int sw_axis_range(sw_ctx *x, const ds_option *o, int ai, const ds_yn *m) {
  ds_axis *a = &x->s->axes[ai];
  if (o->type != DS_OT_INT && o->type != DS_OT_INT64 && o->type != DS_OT_DOUBLE)
    return sw_err(x, m->line, m->col,
                  "grid.%s: a {start, stop, num} range needs a numeric option; give a list of "
                  "values instead, e.g. [%s]", a->name, o->choices ? o->choices[0] : "true, false");
  for (int i = 0; i < m->n; i++) {
    const char *k = m->key[i]->str;
    if (strcmp(k, "start") && strcmp(k, "stop") && strcmp(k, "num") && strcmp(k, "spacing")) {
      char where[96];
      snprintf(where, sizeof where, "range of grid.%s", a->name);
      return sw_unknown_key(x, m->key[i], where, sw_range_keys, 4, NULL);
    }
  }
  const ds_yn *vs = ds_yaml_get(m, "start", NULL), *ve = ds_yaml_get(m, "stop", NULL);
  const ds_yn *vn = ds_yaml_get(m, "num", NULL), *vp = ds_yaml_get(m, "spacing", NULL);
  const char *miss = !vs ? "start" : !ve ? "stop" : !vn ? "num" : NULL;
  if (miss)
    return sw_err(x, m->line, m->col,
                  "grid.%s: range is missing '%s'; write {start: a, stop: b, num: k, spacing: "
                  "linear|log}", a->name, miss);
  double lo, hi;
  int num = 0, logsp = 0;
  DS_TRY(ds_opt_parse_scalar(x->file, o, vs, &lo));
  DS_TRY(ds_opt_parse_scalar(x->file, o, ve, &hi));
  DS_TRY(sw_range_num(x, a->name, vn, &num));
  if (vp) {
    if (vp->kind == DS_YN_SCALAR && !strcmp(vp->str, "log")) logsp = 1;
    else if (vp->kind != DS_YN_SCALAR || strcmp(vp->str, "linear"))
      return sw_err(x, vp->line, vp->col, "grid.%s.spacing: expected linear or log, got %s%s%s",
                    a->name, vp->kind == DS_YN_SCALAR ? "'" : "",
                    vp->kind == DS_YN_SCALAR ? vp->str : ds_yaml_kind_name(vp),
                    vp->kind == DS_YN_SCALAR ? "'" : "");
  }
  if (logsp && !(lo > 0))
    return sw_err(x, vs->line, vs->col, "grid.%s: log spacing needs start > 0, got %s", a->name, vs->str);
  if (logsp && !(hi > 0))
    return sw_err(x, ve->line, ve->col, "grid.%s: log spacing needs stop > 0, got %s", a->name, ve->str);
  if (num == 1 && lo != hi)
    return sw_err(x, vn->line, vn->col,
                  "grid.%s: num: 1 gives a single value but start != stop; use num >= 2 or stop = start",
                  a->name);
  if (num > 1 && lo == hi)
    return sw_err(x, vn->line, vn->col,
                  "grid.%s: start = stop gives %d identical values; use num: 1 or a wider range",
                  a->name, num);
  DS_TRY(sw_range_values(x, o, a, m, lo, hi, num, logsp));
  x->vline[ai] = ds_calloc((size_t)num, sizeof(int));
  x->vcol[ai] = ds_calloc((size_t)num, sizeof(int));
  if (!x->vline[ai] || !x->vcol[ai]) return DS_ENOMEM;
  for (int i = 0; i < num; i++) {
    const ds_yn *at = i == 0 ? vs : i == num - 1 ? ve : m;
    x->vline[ai][i] = at->line;
    x->vcol[ai][i] = at->col;
  }
  return sw_axis_texts(o, a);
}

static int sw_parse_replicas(sw_ctx *x, const ds_yn *v) {
  double d = 0;
  char *end = NULL;
  if (v->kind == DS_YN_SCALAR && v->str[0]) d = strtod(v->str, &end);
  if (!end || *end || d != floor(d))
    return sw_err(x, v->line, v->col, "grid.replicas: expected an integer, got %s%s%s",
                  v->kind == DS_YN_SCALAR ? "'" : "", v->kind == DS_YN_SCALAR ? v->str : ds_yaml_kind_name(v),
                  v->kind == DS_YN_SCALAR ? "'" : "");
  if (d < 1 || d > DS_MAX_POINTS)
    return sw_err(x, v->line, v->col, "grid.replicas: must be in 1..%d, got %s", DS_MAX_POINTS, v->str);
  x->s->replicas = (int)d;
  return DS_OK;
}

static int sw_grid_unknown(sw_ctx *x, const ds_yn *k) {
  const char *cands[SW_MAX_OPTS + 8];
  int n = 0;
  for (int j = 0; j < ds_noptions; j++)
    if (ds_options[j].alias) cands[n++] = ds_options[j].alias;
  cands[n++] = "replicas";
  int nshort = n;
  for (int j = 0; j < ds_noptions; j++)
    if (ds_opt_is_scalar(&ds_options[j])) cands[n++] = ds_options[j].path;
  const char *sug = ds_suggest(k->str, cands, n);
  if (sug)
    return sw_err(x, k->line, k->col, "unknown key '%s' in grid (did you mean '%s'?)", k->str, sug);
  return sw_unknown_key(x, k, "grid", cands, nshort,
                        ", or the dotted path of any single-valued option such as optimizer.lr");
}

static int sw_parse_axis(sw_ctx *x, const ds_yn *k, const ds_yn *v) {
  const ds_option *o = ds_opt_find(k->str);
  if (!o) return sw_grid_unknown(x, k);
  if (!ds_opt_is_scalar(o))
    return sw_err(x, k->line, k->col,
                  "%s cannot be a grid axis: only single-valued options can be swept; set it under "
                  "%.*s: instead", o->path, (int)(strchr(o->path, '.') - o->path), o->path);
  int oi = ds_opt_index(o);
  if (x->axis_of[oi] >= 0)
    return sw_err(x, k->line, k->col, "grid: axis %s is given twice (also at line %d); give it once",
                  o->path, x->s->axes[x->axis_of[oi]].line);
  ds_sweep *s = x->s;
  if (s->naxes >= DS_MAX_AXES)
    return sw_err(x, k->line, k->col, "grid: too many axes (limit %d)", DS_MAX_AXES);
  int ai = s->naxes++;
  ds_axis *a = &s->axes[ai];
  snprintf(a->path, sizeof a->path, "%s", o->path);
  snprintf(a->name, sizeof a->name, "%s", o->alias ? o->alias : o->path);
  a->line = k->line;
  a->col = k->col;
  x->axis_of[oi] = ai;
  if (v->kind == DS_YN_MAP) return sw_axis_range(x, o, ai, v);
  if ((v->kind == DS_YN_SEQ && v->n == 0) || sw_is_null(v))
    return sw_err(x, v->line, v->col,
                  "empty axis '%s': give at least one value, e.g. %s: [a, b] or a range {start, "
                  "stop, num, spacing}", k->str, k->str);
  if (v->kind != DS_YN_SEQ)
    return sw_err(x, v->line, v->col,
                  "grid.%s: expected a list of values such as [%s, ...] or a range {start, stop, "
                  "num, spacing}, got a single value '%s'", k->str, v->str, v->str);
  return sw_axis_list(x, o, ai, v);
}

static int sw_parse_grid(sw_ctx *x, const ds_yn *k, const ds_yn *g) {
  x->have_grid = 1;
  x->gline = k->line;
  x->gcol = k->col;
  if (sw_is_null(g)) return DS_OK;
  if (g->kind != DS_YN_MAP)
    return sw_err(x, g->line, g->col, "grid: expected a map of axes (e.g. width: [16, 64]), got %s",
                  ds_yaml_kind_name(g));
  x->s->axes = ds_calloc(DS_MAX_AXES, sizeof *x->s->axes);
  if (!x->s->axes) return DS_ENOMEM;
  for (int i = 0; i < g->n; i++) {
    if (!strcmp(g->key[i]->str, "replicas")) DS_TRY(sw_parse_replicas(x, g->item[i]));
    else DS_TRY(sw_parse_axis(x, g->key[i], g->item[i]));
  }
  return DS_OK;
}

/* ---- top level ----------------------------------------------------------- */

static int sw_walk(sw_ctx *x, const ds_yn *root) {
  if (!root)
    return sw_err(x, 1, 1, "empty sweep file: expected a map with at least 'name:' and 'loss: "
                           "{reduction: ...}'");
  if (root->kind != DS_YN_MAP)
    return sw_err(x, root->line, root->col,
                  "expected a map of sweep settings (name:, grid:, model:, ...) at top level, got %s",
                  ds_yaml_kind_name(root));
  for (int i = 0; i < root->n; i++) {
    const ds_yn *k = root->key[i], *v = root->item[i];
    int sec = -1;
    for (int j = 0; j < 6; j++)
      if (!strcmp(k->str, sw_sections[j])) sec = j;
    if (sec >= 0) {
      if (sec == 2) x->have_loss = 1, x->lline = k->line, x->lcol = k->col;
      DS_TRY(sw_parse_section(x, sw_sections[sec], v));
    } else if (!strcmp(k->str, "name")) DS_TRY(sw_parse_name(x, v));
    else if (!strcmp(k->str, "seed")) DS_TRY(sw_parse_seed(x, v));
    else if (!strcmp(k->str, "grid")) DS_TRY(sw_parse_grid(x, k, v));
    else if (strchr(k->str, '.') && ds_opt_find(k->str))
      return sw_err(x, k->line, k->col,
                    "unknown key '%s' at top level: write options nested (%.*s: then %s: indented "
                    "under it), or put the path under grid: to sweep it", k->str,
                    (int)(strchr(k->str, '.') - k->str), k->str, strchr(k->str, '.') + 1);
    else return sw_unknown_key(x, k, "the top level", sw_top_keys, 9, NULL);
  }
  return DS_OK;
}

static int sw_required(sw_ctx *x) {
  if (!x->have_name)
    return sw_err(x, 1, 1, "missing required key 'name' at top level (e.g. name: my-sweep)");
  const ds_option *red = ds_opt_find("loss.reduction");
  int ri = ds_opt_index(red);
  if (!x->set[ri] && x->axis_of[ri] < 0)
    return sw_err(x, x->have_loss ? x->lline : 1, x->have_loss ? x->lcol : 1,
                  "loss.reduction is required and must be stated explicitly: add 'reduction: "
                  "<choice>' under loss:, one of %s", ds_reduction_help);
  return DS_OK;
}

/* ---- points -------------------------------------------------------------- */

int64_t ds_sweep_npoints(const ds_sweep *s) {
  int64_t n = s->replicas > 0 ? s->replicas : 1;
  for (int a = 0; a < s->naxes; a++) n *= s->axes[a].nvals;
  return n;
}

/* Index of every axis' value for combo (last axis fastest). */
static void sw_combo_index(const ds_sweep *s, int64_t combo, int *idx) {
  for (int a = s->naxes - 1; a >= 0; a--) {
    idx[a] = (int)(combo % s->axes[a].nvals);
    combo /= s->axes[a].nvals;
  }
}

static void sw_apply(const ds_sweep *s, const int *idx, ds_point_cfg *c) {
  *c = s->base;
  for (int a = 0; a < s->naxes; a++) ds_opt_set(ds_opt_find(s->axes[a].path), c, s->axes[a].val[idx[a]]);
  if (s->rank_auto) {
    int rank_axis = 0;
    for (int a = 0; a < s->naxes; a++) rank_axis |= !strcmp(s->axes[a].path, "data.rank");
    if (!rank_axis) c->data.rank = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  }
}

int ds_sweep_point(const ds_sweep *s, int64_t id, ds_point *out) {
  int64_t n = ds_sweep_npoints(s);
  if (id < 0 || id >= n)
    return ds_fail(DS_EINPUT, "point id %lld out of range: sweep '%s' has points 0..%lld", (long long)id,
                   s->name, (long long)n - 1);
  int idx[DS_MAX_AXES];
  memset(out, 0, sizeof *out);
  out->id = id;
  out->combo = id / s->replicas;
  out->replica = (int)(id % s->replicas);
  sw_combo_index(s, out->combo, idx);
  sw_apply(s, idx, &out->cfg);
  out->cost = ds_point_cost(&out->cfg);
  return DS_OK;
}

/* Rank constraint for one combo; the message points at whatever made it fail. */
static int sw_check_rank(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  int m = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  if (c->data.rank <= m) return DS_OK;
  int ri = ds_opt_index(ds_opt_find("data.rank"));
  int ii = ds_opt_index(ds_opt_find("data.d_in")), oi = ds_opt_index(ds_opt_find("data.d_out"));
  int bm = x->s->base.data.d_in < x->s->base.data.d_out ? x->s->base.data.d_in : x->s->base.data.d_out;
  int line = x->sline[ri], col = x->scol[ri];
  if (x->axis_of[ri] >= 0) {
    int a = x->axis_of[ri];
    line = x->vline[a][idx[a]], col = x->vcol[a][idx[a]];
  } else if (x->s->base.data.rank <= bm) {
    /* the base was fine: an axis on d_in or d_out made min(d_in, d_out) smaller */
    int a = c->data.d_in == m && x->axis_of[ii] >= 0 ? x->axis_of[ii] : x->axis_of[oi];
    if (a >= 0) {
      return sw_err(x, x->vline[a][idx[a]], x->vcol[a][idx[a]],
                    "grid.%s: value %s makes min(data.d_in, data.d_out) = %d smaller than data.rank "
                    "= %d; data.rank must be <= min(d_in, d_out)", x->s->axes[a].name,
                    x->s->axes[a].text[idx[a]], m, c->data.rank);
    }
  }
  return sw_err(x, line, col, "data.rank: must be <= min(data.d_in, data.d_out) = %d, got %d", m,
                c->data.rank);
}

static int sw_check_record(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  if (c->record.every > 0 || c->record.per_decade > 0) return DS_OK;
  int ei = ds_opt_index(ds_opt_find("record.every"));
  int pi = ds_opt_index(ds_opt_find("record.per_decade"));
  int line = 1, col = 1;
  if (x->axis_of[pi] >= 0) line = x->vline[x->axis_of[pi]][idx[x->axis_of[pi]]], col = x->vcol[x->axis_of[pi]][idx[x->axis_of[pi]]];
  else if (x->axis_of[ei] >= 0) line = x->vline[x->axis_of[ei]][idx[x->axis_of[ei]]], col = x->vcol[x->axis_of[ei]][idx[x->axis_of[ei]]];
  else if (x->set[pi]) line = x->sline[pi], col = x->scol[pi];
  else if (x->set[ei]) line = x->sline[ei], col = x->scol[ei];
  return sw_err(x, line, col,
                "record: record.every and record.per_decade are both 0, so nothing would be "
                "recorded; set at least one > 0 (e.g. every: 10)");
}

/* Size limits, then every combo: cross-field constraints and store estimate. */
static int sw_check_points(sw_ctx *x) {
  ds_sweep *s = x->s;
  double np = s->replicas;
  for (int a = 0; a < s->naxes; a++) np *= s->axes[a].nvals;
  int line = x->have_grid ? x->gline : 1, col = x->have_grid ? x->gcol : 1;
  if (np > DS_MAX_POINTS)
    return sw_err(x, line, col, "grid too large: %.0f points (limit %d); use fewer axis values or replicas",
                  np, DS_MAX_POINTS);
  int64_t ncombo = ds_sweep_npoints(s) / s->replicas;
  double bytes = 0;
  for (int64_t k = 0; k < ncombo; k++) {
    int idx[DS_MAX_AXES];
    ds_point_cfg c;
    sw_combo_index(s, k, idx);
    sw_apply(s, idx, &c);
    DS_TRY(sw_check_rank(x, idx, &c));
    DS_TRY(sw_check_record(x, idx, &c));
    bytes += ds_point_store_bytes(&c) * s->replicas;
  }
  if (bytes > SW_STORE_LIMIT)
    return sw_err(x, line, col,
                  "grid too large for the store: estimated %.1f GiB (limit 64 GiB); record fewer "
                  "series or less often (record.every, record.per_decade), or use fewer points",
                  bytes / (1024.0 * 1024 * 1024));
  return DS_OK;
}

/* ---- hash ---------------------------------------------------------------- */

static uint64_t sw_hash_line(uint64_t h, const char *k, const char *v) {
  h = ds_fnv1a(k, strlen(k), h);
  h = ds_fnv1a("=", 1, h);
  h = ds_fnv1a(v, strlen(v), h);
  return ds_fnv1a("\n", 1, h);
}

/* FNV-1a over canonical "path=value" lines: the meaning, not the formatting. */
static uint64_t sw_hash(const ds_sweep *s) {
  char buf[256];
  uint64_t h = ds_fnv1a("dynsweep-sweep-v1\n", 18, 0);
  h = sw_hash_line(h, "name", s->name);
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->seed);
  h = sw_hash_line(h, "seed", buf);
  snprintf(buf, sizeof buf, "%d", s->replicas);
  h = sw_hash_line(h, "replicas", buf);
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    if (s->rank_auto && !strcmp(o->path, "data.rank")) snprintf(buf, sizeof buf, "auto");
    else ds_opt_format(o, ds_opt_get(o, &s->base), buf, sizeof buf);
    h = sw_hash_line(h, o->path, buf);
  }
  for (int a = 0; a < s->naxes; a++) {
    h = ds_fnv1a("axis ", 5, h);
    h = ds_fnv1a(s->axes[a].path, strlen(s->axes[a].path), h);
    h = ds_fnv1a("=", 1, h);
    for (int i = 0; i < s->axes[a].nvals; i++) {
      if (i) h = ds_fnv1a(",", 1, h);
      h = ds_fnv1a(s->axes[a].text[i], strlen(s->axes[a].text[i]), h);
    }
    h = ds_fnv1a("\n", 1, h);
  }
  return h;
}

/* ---- entry points -------------------------------------------------------- */

void ds_sweep_free(ds_sweep *s) {
  if (!s) return;
  for (int a = 0; s->axes && a < DS_MAX_AXES; a++) {
    ds_axis *ax = &s->axes[a];
    for (int i = 0; ax->text && i < ax->nvals; i++) free(ax->text[i]);
    free(ax->text);
    free(ax->val);
  }
  free(s->axes);
  free(s->path);
  free(s->text);
  memset(s, 0, sizeof *s);
}

static int sw_build(sw_ctx *x, const ds_yn *root) {
  ds_sweep *s = x->s;
  DS_TRY(sw_walk(x, root));
  DS_TRY(sw_required(x));
  int ri = ds_opt_index(ds_opt_find("data.rank"));
  if (!x->set[ri]) {
    s->rank_auto = x->axis_of[ri] < 0;
    s->base.data.rank = s->base.data.d_in < s->base.data.d_out ? s->base.data.d_in : s->base.data.d_out;
  }
  DS_TRY(sw_check_points(x));
  s->hash = sw_hash(s);
  return DS_OK;
}

int ds_sweep_parse(const char *path, const char *text, ds_sweep *out) {
  sw_ctx x;
  ds_yn *root = NULL;
  memset(out, 0, sizeof *out);
  memset(&x, 0, sizeof x);
  for (int i = 0; i < SW_MAX_OPTS; i++) x.axis_of[i] = -1;
  x.file = path;
  x.s = out;
  out->replicas = 1;
  ds_opt_defaults(&out->base);
  if (!(out->path = ds_strdup(path)) || !(out->text = ds_strdup(text))) {
    ds_sweep_free(out);
    return DS_ENOMEM;
  }
  int rc = ds_yaml_load(path, text, &root);
  if (rc == DS_OK) rc = sw_build(&x, root);
  ds_yaml_free(root);
  for (int a = 0; a < DS_MAX_AXES; a++) {
    free(x.vline[a]);
    free(x.vcol[a]);
  }
  if (rc != DS_OK) ds_sweep_free(out);
  return rc;
}

int ds_sweep_load(const char *path, ds_sweep *out) {
  char *text = NULL;
  memset(out, 0, sizeof *out);
  DS_TRY(ds_read_file(path, &text, NULL));
  int rc = ds_sweep_parse(path, text, out);
  free(text);
  return rc;
}
