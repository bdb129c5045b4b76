/* sweep_grid.c -- the sweep file's grid: axes (lists and ranges), replicas,
 * map sweeps (map:, grid.refine), and the expansion of a point id into its
 * configuration (combo * replicas + replica, last axis fastest). Part of
 * sweep.c's parser (sweep_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"
#include "dynsweep/util.h"
#include "sweep_internal.h"

static const char *const sw_range_keys[] = {"start", "stop", "num", "spacing"};

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
                  "%s cannot be a grid axis: only single-valued options can be swept (%s); set it "
                  "under %.*s: instead", o->path,
                  o->type == DS_OT_PATH ? "file names are not" : "lists are not",
                  (int)(strrchr(o->path, '.') - o->path), o->path);
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

/* ---- map sweeps (issue 13) ------------------------------------------------
 * map: true | {tile: N}            points record their outcome only (map.h)
 * grid.refine: {levels: L, axes: [a, b]}
 *   the two axes (ranges) give the coarse grid; the map has (num - 1) * 2^L + 1
 *   values along each, and only cells whose corners disagree are split. */
static int sw_int_in(sw_ctx *x, const ds_yn *v, const char *what, double lo, double hi, double *out) {
  char *end = NULL;
  double d = v->kind == DS_YN_SCALAR && v->str[0] ? strtod(v->str, &end) : NAN;
  if (!end || *end || d != floor(d) || d < lo || d > hi)
    return sw_err(x, v->line, v->col, "%s: expected an integer in %.0f..%.0f, got %s%s%s", what, lo, hi,
                  v->kind == DS_YN_SCALAR ? "'" : "", v->kind == DS_YN_SCALAR ? v->str : ds_yaml_kind_name(v),
                  v->kind == DS_YN_SCALAR ? "'" : "");
  *out = d;
  return DS_OK;
}

int sw_parse_mapsec(sw_ctx *x, const ds_yn *v) {
  static const char *const keys[] = {"tile", "early_stop"};
  if (v->kind == DS_YN_SCALAR && !v->quoted && (!strcmp(v->str, "true") || !strcmp(v->str, "false"))) {
    x->s->map = !strcmp(v->str, "true");
    return DS_OK;
  }
  if (sw_is_null(v)) {
    x->s->map = 1;
    return DS_OK;
  }
  if (v->kind != DS_YN_MAP)
    return sw_err(x, v->line, v->col, "map: expected true, false or a map such as {tile: 1024}, got %s",
                  v->kind == DS_YN_SCALAR ? v->str : ds_yaml_kind_name(v));
  x->s->map = 1;
  for (int i = 0; i < v->n; i++) {
    const ds_yn *it = v->item[i];
    if (!strcmp(v->key[i]->str, "early_stop")) { /* map.h: stop a point at the cap */
      if (it->kind != DS_YN_SCALAR || it->quoted || (strcmp(it->str, "true") && strcmp(it->str, "false")))
        return sw_err(x, it->line, it->col, "map.early_stop: expected true or false, got %s",
                      it->kind == DS_YN_SCALAR ? it->str : ds_yaml_kind_name(it));
      x->s->map_early_stop = !strcmp(it->str, "true");
      continue;
    }
    if (strcmp(v->key[i]->str, "tile")) return sw_unknown_key(x, v->key[i], "map", keys, 2, NULL);
    double d;
    DS_TRY(sw_int_in(x, it, "map.tile", 1, 1 << 20, &d));
    x->s->map_tile = (int64_t)d;
  }
  return DS_OK;
}

static int sw_parse_refine(sw_ctx *x, const ds_yn *g, const ds_yn *k, const ds_yn *r) {
  static const char *const keys[] = {"levels", "axes"};
  ds_sweep *s = x->s;
  if (r->kind != DS_YN_MAP)
    return sw_err(x, r->line, r->col, "grid.refine: expected a map such as {levels: 6, axes: [lr, "
                  "width]}, got %s", r->kind == DS_YN_SCALAR ? r->str : ds_yaml_kind_name(r));
  const ds_yn *lv = NULL, *ax = NULL;
  for (int i = 0; i < r->n; i++) {
    if (!strcmp(r->key[i]->str, "levels")) lv = r->item[i];
    else if (!strcmp(r->key[i]->str, "axes")) ax = r->item[i];
    else return sw_unknown_key(x, r->key[i], "grid.refine", keys, 2, NULL);
  }
  if (!lv) return sw_err(x, r->line, r->col, "grid.refine: missing 'levels' (how many times a cell may split, e.g. levels: 6)");
  double d;
  DS_TRY(sw_int_in(x, lv, "grid.refine.levels", 0, DS_MAX_REFINE_LEVELS, &d));
  int L = (int)d, n = 0;
  s->refine_axes[1] = -1; /* one axis: intervals split instead of squares */
  if (ax) {
    if (ax->kind != DS_YN_SEQ || ax->n < 1 || ax->n > 2)
      return sw_err(x, ax->line, ax->col, "grid.refine.axes: expected one or two grid axes, e.g. "
                    "[optimizer.lr_in, optimizer.lr_out]");
    for (int j = 0; j < ax->n; j++) {
      const ds_option *o = ds_opt_find(ax->item[j]->str);
      int ai = o ? x->axis_of[ds_opt_index(o)] : -1;
      if (ai < 0)
        return sw_err(x, ax->item[j]->line, ax->item[j]->col, "grid.refine.axes: '%s' is not an axis of "
                      "grid:", ax->item[j]->str);
      if (j == 1 && ai == s->refine_axes[0])
        return sw_err(x, ax->item[j]->line, ax->item[j]->col, "grid.refine.axes: give two different axes");
      s->refine_axes[j] = ai;
    }
    n = ax->n;
  } else {
    for (int a = 0; a < s->naxes; a++)
      if (s->axes[a].nvals > 1) {
        if (n == 2)
          return sw_err(x, r->line, r->col, "grid.refine: the grid has more than two axes; name the one "
                        "or two to refine with axes: [a, b]");
        s->refine_axes[n++] = a;
      }
    if (n < 1)
      return sw_err(x, r->line, r->col, "grid.refine: needs an axis with at least two values");
  }
  s->refine_levels = L;
  if (!L) return DS_OK;
  for (int j = 0; j < n; j++) {
    ds_axis *a = &s->axes[s->refine_axes[j]];
    const ds_option *o = ds_opt_find(a->path);
    const ds_yn *m = NULL;
    for (int i = 0; i < g->n && !m; i++)
      if (strcmp(g->key[i]->str, "refine") && strcmp(g->key[i]->str, "replicas") && ds_opt_find(g->key[i]->str) == o)
        m = g->item[i];
    if (!m || m->kind != DS_YN_MAP || a->nvals < 2 || o->type != DS_OT_DOUBLE)
      return sw_err(x, m ? m->line : k->line, m ? m->col : k->col,
                    "grid.refine: axis %s must be a range of real values {start, stop, num >= 2, "
                    "spacing} (refinement puts new values between the given ones)", a->name);
    const ds_yn *sp = ds_yaml_get(m, "spacing", NULL);
    int logsp = sp && sp->kind == DS_YN_SCALAR && !strcmp(sp->str, "log");
    double lo = a->val[0], hi = a->val[a->nvals - 1], num = (double)(a->nvals - 1) * ldexp(1.0, L) + 1;
    if (num > DS_MAX_POINTS)
      return sw_err(x, lv->line, lv->col, "grid.refine.levels: %d levels give %.0f values along %s "
                    "(limit %d); use fewer levels or a coarser start", L, num, a->name, DS_MAX_POINTS);
    for (int i = 0; i < a->nvals; i++) free(a->text[i]);
    free(a->text);
    free(a->val);
    DS_TRY(sw_range_values(x, o, a, m, lo, hi, (int)num, logsp));
    int ai = s->refine_axes[j], line = x->vline[ai][0], col = x->vcol[ai][0];
    free(x->vline[ai]);
    free(x->vcol[ai]);
    x->vline[ai] = ds_calloc((size_t)num, sizeof(int));
    x->vcol[ai] = ds_calloc((size_t)num, sizeof(int));
    if (!x->vline[ai] || !x->vcol[ai]) return DS_ENOMEM;
    for (int i = 0; i < (int)num; i++) x->vline[ai][i] = line, x->vcol[ai][i] = col;
    DS_TRY(sw_axis_texts(o, a));
  }
  return DS_OK;
}

int sw_parse_grid(sw_ctx *x, const ds_yn *k, const ds_yn *g) {
  x->have_grid = 1;
  x->gline = k->line;
  x->gcol = k->col;
  if (sw_is_null(g)) return DS_OK;
  if (g->kind != DS_YN_MAP)
    return sw_err(x, g->line, g->col, "grid: expected a map of axes (e.g. width: [16, 64]), got %s",
                  ds_yaml_kind_name(g));
  x->s->axes = ds_calloc(DS_MAX_AXES, sizeof *x->s->axes);
  if (!x->s->axes) return DS_ENOMEM;
  const ds_yn *refine = NULL, *rkey = NULL;
  for (int i = 0; i < g->n; i++) {
    if (!strcmp(g->key[i]->str, "replicas")) DS_TRY(sw_parse_replicas(x, g->item[i]));
    else if (!strcmp(g->key[i]->str, "refine")) refine = g->item[i], rkey = g->key[i];
    else DS_TRY(sw_parse_axis(x, g->key[i], g->item[i]));
  }
  return refine ? sw_parse_refine(x, g, rkey, refine) : DS_OK;
}

/* ---- points -------------------------------------------------------------- */

int64_t ds_sweep_npoints(const ds_sweep *s) {
  int64_t n = s->replicas > 0 ? s->replicas : 1;
  for (int a = 0; a < s->naxes; a++) n *= s->axes[a].nvals;
  return n;
}

/* Index of every axis' value for combo (last axis fastest). */
void sw_combo_index(const ds_sweep *s, int64_t combo, int *idx) {
  for (int a = s->naxes - 1; a >= 0; a--) {
    idx[a] = (int)(combo % s->axes[a].nvals);
    combo /= s->axes[a].nvals;
  }
}

/* Shape a synthetic data kind fixes: d_in (0 = free, then at least min_din)
 * and d_out (0 = free). */
void sw_kind_shape(ds_data_kind k, int *din, int *dout, int *min_din) {
  *din = 0, *dout = 0, *min_din = 1;
  switch (k) {
  case DS_DATA_RANK2: *dout = 1, *min_din = 2; break;
  case DS_DATA_RANK3: *dout = 1, *min_din = 10; break; /* x1 x2 sum_{i<=10} x_i */
  case DS_DATA_RANK4: *dout = 1, *min_din = 4; break;
  case DS_DATA_IMAGE_RANK2: *dout = 1, *min_din = 9; break; /* a square image of side >= 3 */
  case DS_DATA_FULLRANK: *dout = 1; break;
  case DS_DATA_TWO_GAUSSIANS: *din = 1, *dout = 1; break;
  case DS_DATA_CIRCLE: *din = 2, *dout = 1; break;
  default: break;
  }
}

int sw_is_file_kind(ds_data_kind k) {
  return ds_data_is_file_kind(k);
}

/* base with this combo's axis values, nothing derived yet. */
void sw_apply_axes(const ds_sweep *s, const ds_point_cfg *base, const int *idx, ds_point_cfg *c) {
  *c = *base;
  for (int a = 0; a < s->naxes; a++) ds_opt_set(ds_opt_find(s->axes[a].path), c, s->axes[a].val[idx[a]]);
}

/* What follows from other values: the shape of fixed-shape data kinds, the
 * 8 circle points, and an omitted rank (min(d_in, d_out) of the point). */
void sw_derive(const ds_sweep *s, ds_point_cfg *c) {
  int din, dout, dmin;
  sw_kind_shape(c->data.kind, &din, &dout, &dmin);
  if (din) c->data.d_in = din;
  if (dout) c->data.d_out = dout;
  if (c->data.kind == DS_DATA_CIRCLE) c->data.n_train = 8;
  if (s->rank_auto) {
    int rank_axis = 0;
    for (int a = 0; a < s->naxes; a++) rank_axis |= !strcmp(s->axes[a].path, "data.rank");
    if (!rank_axis) c->data.rank = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  }
}

void sw_apply(const ds_sweep *s, const int *idx, ds_point_cfg *c) {
  sw_apply_axes(s, &s->base, idx, c);
  sw_derive(s, c);
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
