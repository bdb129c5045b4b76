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
#include <sys/stat.h>
#include <unistd.h>

#include "config_internal.h"
#include "dynsweep/data.h"
#include "dynsweep/util.h"

#define SW_MAX_OPTS 192 /* >= ds_noptions */
#define SW_PROBE_CACHE 8
#define SW_STORE_LIMIT (64.0 * 1024 * 1024 * 1024) /* bytes */

static const char *const sw_top_keys[] = {"name",      "seed",  "grid",  "model", "data",
                                          "loss",      "optimizer", "train", "record",
                                          "overrides", "map"};
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
  int secline[6], seccol[6];                                   /* section keys */
  int flags;                                                   /* DS_SWEEP_* */
  char basedir[DS_MAX_PATH];                                   /* sweep file's directory */
  int listn[SW_MAX_OPTS];                                      /* list lengths as given */
  char given[SW_MAX_OPTS][DS_MAX_PATH];                        /* paths as written */
  /* ds_data_probe results per distinct file data spec (the probed fields only) */
  int nprobe;
  ds_data_spec probe_key[SW_PROBE_CACHE];
  int probe_din[SW_PROBE_CACHE], probe_dout[SW_PROBE_CACHE], probe_avail[SW_PROBE_CACHE];
  ds_point_cfg raw_base;                                       /* base before sw_derive */
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
  if (v->kind != DS_YN_SCALAR || !v->str[0] || ds_yaml_is_null(v))
    return sw_err(x, v->line, v->col, "name: expected a short name such as 'width-sweep', got %s%s%s",
                  v->kind != DS_YN_SCALAR ? ds_yaml_kind_name(v) : !v->str[0] ? "an empty value"
                                                                  : "the null value '",
                  v->kind == DS_YN_SCALAR && v->str[0] ? v->str : "",
                  v->kind == DS_YN_SCALAR && v->str[0] ? "'" : "");
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

/* ---- file names --------------------------------------------------------- */

/* Appends the segments of p to out (an absolute path being built), dropping
 * empty and "." segments; ".." is kept (symlinks make dropping it wrong). */
static void sw_path_append(char *out, size_t n, const char *p) {
  while (*p) {
    while (*p == '/') p++;
    size_t len = strcspn(p, "/");
    if (len && !(len == 1 && p[0] == '.')) {
      size_t used = strlen(out);
      if (used + len + 2 > n) return; /* caller checks the length first */
      if (used == 0 || out[used - 1] != '/') out[used++] = '/';
      memcpy(out + used, p, len);
      out[used + len] = 0;
    }
    p += len;
  }
}

/* Absolute directory of the sweep file: relative names in it are resolved
 * against this directory, whatever the working directory of the run. */
static void sw_basedir(sw_ctx *x, const char *path) {
  char dir[DS_MAX_PATH * 2] = "";
  const char *slash = strrchr(path, '/');
  if (path[0] != '/' && !getcwd(dir, sizeof dir)) snprintf(dir, sizeof dir, ".");
  if (slash) {
    char rel[DS_MAX_PATH * 2];
    size_t len = (size_t)(slash - path);
    if (len >= sizeof rel) len = sizeof rel - 1;
    memcpy(rel, path, len);
    rel[len] = 0;
    if (path[0] == '/') snprintf(dir, sizeof dir, "/");
    sw_path_append(dir, sizeof dir, rel);
  }
  if (!dir[0]) snprintf(dir, sizeof dir, "/");
  snprintf(x->basedir, sizeof x->basedir, "%s", dir);
}

/* A file name option: stored resolved against the sweep file's directory;
 * the file must exist and be readable (unless DS_SWEEP_NO_FILES). "" = unset. */
static int sw_parse_path(sw_ctx *x, const ds_option *o, const ds_yn *v) {
  if (v->kind != DS_YN_SCALAR)
    return sw_err(x, v->line, v->col, "%s: expected a file name, got %s", o->path, ds_yaml_kind_name(v));
  if (ds_yaml_is_null(v))
    return sw_err(x, v->line, v->col, "%s: expected a file name, got %s%s%s (null values are not "
                  "allowed; write \"\" for no file, or omit the key)", o->path,
                  v->str[0] ? "the null value '" : "an empty value", v->str, v->str[0] ? "'" : "");
  char *dst = (char *)&x->s->base + o->off;
  size_t n = strlen(v->str);
  if (n >= DS_MAX_PATH)
    return sw_err(x, v->line, v->col, "%s: file name too long (%zu characters, limit %d)", o->path, n,
                  DS_MAX_PATH - 1);
  snprintf(x->given[ds_opt_index(o)], DS_MAX_PATH, "%s", v->str);
  if (!n) {
    dst[0] = 0;
    return DS_OK;
  }
  char full[DS_MAX_PATH * 3] = "";
  if (v->str[0] == '/') snprintf(full, sizeof full, "/");
  else snprintf(full, sizeof full, "%s", x->basedir);
  if (strlen(full) + n + 2 > sizeof full || strlen(full) + n + 1 >= DS_MAX_PATH)
    return sw_err(x, v->line, v->col,
                  "%s: file name too long once resolved against '%s' (limit %d characters)", o->path,
                  x->basedir, DS_MAX_PATH - 1);
  sw_path_append(full, sizeof full, v->str);
  snprintf(dst, DS_MAX_PATH, "%s", full);
  for (int k = 0; k < DS_NFILE_OPTS; k++)
    if (!strcmp(ds_file_opts[k], o->path)) x->s->file_line[k] = v->line, x->s->file_col[k] = v->col;
  if (x->flags & DS_SWEEP_NO_FILES) return DS_OK;
  struct stat st; /* before opening: a FIFO would block, a device never end */
  if (stat(full, &st) == 0 && !S_ISREG(st.st_mode))
    return sw_err(x, v->line, v->col, "%s: '%s' is %s, not a regular file; give a data file", o->path,
                  full, S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)" : S_ISDIR(st.st_mode) ? "a directory"
                  : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file");
  FILE *f = fopen(full, "rb");
  if (!f) {
    int e = errno;
    if (v->str[0] == '/')
      return sw_err(x, v->line, v->col, "%s: cannot open '%s': %s", o->path, v->str, strerror(e));
    return sw_err(x, v->line, v->col, "%s: cannot open '%s': %s (relative names are resolved "
                  "against the sweep file's directory: looked for '%s')", o->path, v->str,
                  strerror(e), full);
  }
  fclose(f);
  return DS_OK;
}

/* Checks on a whole list beyond the range of each element. */
static int sw_list_checks(sw_ctx *x, const ds_option *o, const ds_yn *v) {
  const ds_point_cfg *b = &x->s->base;
  if (!strcmp(o->path, "optimizer.schedule_steps")) {
    for (int i = 1; i < v->n; i++)
      if (b->optimizer.schedule_steps[i] <= b->optimizer.schedule_steps[i - 1])
        return sw_err(x, v->item[i]->line, v->item[i]->col,
                      "optimizer.schedule_steps: steps must be strictly increasing, got %lld after %lld",
                      (long long)b->optimizer.schedule_steps[i],
                      (long long)b->optimizer.schedule_steps[i - 1]);
  } else if (!strcmp(o->path, "record.spectra.split")) {
    for (int i = 1; i < v->n; i++)
      if (b->record.spectra.split[i] <= b->record.spectra.split[i - 1])
        return sw_err(x, v->item[i]->line, v->item[i]->col,
                      "record.spectra.split: sizes must be strictly increasing, got %d after %d",
                      b->record.spectra.split[i], b->record.spectra.split[i - 1]);
  } else if (!strcmp(o->path, "data.classes")) {
    for (int i = 1; i < v->n; i++)
      for (int j = 0; j < i; j++)
        if (b->data.classes[i] == b->data.classes[j])
          return sw_err(x, v->item[i]->line, v->item[i]->col,
                        "data.classes: class %d is listed twice; list each class once",
                        b->data.classes[i]);
  }
  return DS_OK;
}

/* ---- option sections (model:, data:, ...) -------------------------------- */

/* The distinct next path components under prefix ("record" -> series, every,
 * ..., spectra), in table order: the keys a map at prefix may hold. */
static int sw_sub_keys(const char *prefix, const char **cands, char (*buf)[64], int cap) {
  size_t pl = strlen(prefix);
  int n = 0;
  for (int j = 0; j < ds_noptions && n < cap; j++) {
    const char *p = ds_options[j].path;
    if (strncmp(p, prefix, pl) || p[pl] != '.') continue;
    const char *k = p + pl + 1;
    size_t kl = strcspn(k, ".");
    if (kl >= 64) continue;
    int dup = 0;
    for (int i = 0; i < n && !dup; i++) dup = strlen(cands[i]) == kl && !strncmp(cands[i], k, kl);
    if (dup) continue;
    memcpy(buf[n], k, kl);
    buf[n][kl] = 0;
    cands[n] = buf[n];
    n++;
  }
  return n;
}

/* Options below path exist (path names a nested map such as record.spectra). */
static int sw_is_group(const char *path) {
  size_t pl = strlen(path);
  for (int j = 0; j < ds_noptions; j++)
    if (!strncmp(ds_options[j].path, path, pl) && ds_options[j].path[pl] == '.') return 1;
  return 0;
}

/* A diagnostic's cadence map (record.spectra.ntk: {every, per_decade, on_loss_rise}). */
static int sw_is_cadence(const char *path) {
  char p[200];
  snprintf(p, sizeof p, "%s.on_loss_rise", path);
  return ds_opt_find(p) != NULL;
}

/* A map of options at prefix: a section (model, ..., record) or a nested map
 * (record.spectra, record.spectra.ntk); nested maps recurse. */
static int sw_parse_map(sw_ctx *x, const char *prefix, const ds_yn *m) {
  int nested = strchr(prefix, '.') != NULL, cadence = sw_is_cadence(prefix);
  if (sw_is_null(m) && !cadence) /* as every other null (issue 24): never a silent default */
    return sw_err(x, m->line, m->col, "%s: expected a map of %s options, got %s%s%s (null values "
                  "are not allowed; omit %s: for the defaults, or write %s: {})", prefix, prefix,
                  m->str && m->str[0] ? "the null value '" : "an empty value",
                  m->str ? m->str : "", m->str && m->str[0] ? "'" : "", prefix, prefix);
  if (sw_is_null(m) || (m->kind == DS_YN_MAP && m->n == 0)) {
    if (cadence)
      return sw_err(x, m->line, m->col,
                    "%s: empty; give at least one of every, per_decade, on_loss_rise (e.g. {every: 10})",
                    prefix);
    return DS_OK;
  }
  if (m->kind != DS_YN_MAP) {
    const char *got = m->kind == DS_YN_SCALAR ? m->str : ds_yaml_kind_name(m);
    const char *q = m->kind == DS_YN_SCALAR ? "'" : "";
    if (cadence)
      return sw_err(x, m->line, m->col,
                    "%s: expected a map of when to compute it, such as {every: 10, per_decade: 5, "
                    "on_loss_rise: true}, got %s%s%s", prefix, q, got, q);
    if (nested)
      return sw_err(x, m->line, m->col, "%s: expected a map of %s options (key: value lines, e.g. "
                    "ntk: {every: 10}), got %s%s%s", prefix, prefix, q, got, q);
    return sw_err(x, m->line, m->col, "%s: expected a map of %s options (key: value lines), got %s",
                  prefix, prefix, ds_yaml_kind_name(m));
  }
  for (int i = 0; i < m->n; i++) {
    const ds_yn *k = m->key[i];
    char path[200];
    snprintf(path, sizeof path, "%s.%s", prefix, k->str);
    const ds_option *o = strchr(k->str, '.') ? NULL : ds_opt_find(path);
    if (o && strcmp(o->path, path) != 0) o = NULL; /* a grid alias is not a key */
    if (!o && !strchr(k->str, '.') && sw_is_group(path)) {
      DS_TRY(sw_parse_map(x, path, m->item[i]));
      continue;
    }
    if (!o) {
      const char *cands[SW_MAX_OPTS];
      char buf[SW_MAX_OPTS][64];
      int n = sw_sub_keys(prefix, cands, buf, SW_MAX_OPTS);
      if (strchr(k->str, '.') && ds_opt_find(path))
        return sw_err(x, k->line, k->col,
                      "unknown key '%s' in %s: keys cannot contain '.'; write each part of the path "
                      "as a nested map key, indented under the one before", k->str, prefix);
      return sw_unknown_key(x, k, prefix, cands, n, NULL);
    }
    int oi = ds_opt_index(o);
    if (o->type == DS_OT_PATH) {
      DS_TRY(sw_parse_path(x, o, m->item[i]));
    } else if (ds_opt_is_list(o)) {
      DS_TRY(ds_opt_parse_list(x->file, o, m->item[i], &x->s->base));
      DS_TRY(sw_list_checks(x, o, m->item[i]));
      x->listn[oi] = m->item[i]->n;
    } else {
      double v;
      DS_TRY(ds_opt_parse_scalar(x->file, o, m->item[i], &v));
      ds_opt_set(o, &x->s->base, v);
    }
    x->set[oi] = 1;
    x->sline[oi] = m->item[i]->line;
    x->scol[oi] = m->item[i]->col;
  }
  return DS_OK;
}

static int sw_parse_section(sw_ctx *x, const char *sec, const ds_yn *m) {
  return sw_parse_map(x, sec, m);
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

static int sw_parse_mapsec(sw_ctx *x, const ds_yn *v) {
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
  const ds_yn *refine = NULL, *rkey = NULL;
  for (int i = 0; i < g->n; i++) {
    if (!strcmp(g->key[i]->str, "replicas")) DS_TRY(sw_parse_replicas(x, g->item[i]));
    else if (!strcmp(g->key[i]->str, "refine")) refine = g->item[i], rkey = g->key[i];
    else DS_TRY(sw_parse_axis(x, g->key[i], g->item[i]));
  }
  return refine ? sw_parse_refine(x, g, rkey, refine) : DS_OK;
}

/* ---- overrides (issue 13: --set KEY=VALUE) --------------------------------
 * A top-level map "overrides: {KEY: VALUE, ...}" is applied to the tree before
 * anything else is read, whatever its place in the file: KEY is an option's
 * dotted path (or grid alias: lr), name, seed, grid, grid.replicas or grid.AXIS;
 * VALUE replaces what the file gives there (an option set this way stops
 * being a grid axis; grid.AXIS replaces that axis or adds it). `dynsweep
 * plan/run --set KEY=VALUE` appends such a map to the sweep text
 * (ds_sweep_parse_set), so the text kept in a store says what ran. */

static ds_yn *sw_node(ds_yn_kind kind, const ds_yn *at, const char *str) {
  ds_yn *n = ds_calloc(1, sizeof *n);
  if (!n) return NULL;
  n->kind = kind;
  n->line = at->line;
  n->col = at->col;
  if (str && !(n->str = ds_strdup(str))) {
    free(n);
    return NULL;
  }
  return n;
}

/* Sets m[k] = v (replacing and freeing an old value), appending k if absent. */
static int sw_map_put(ds_yn *m, const char *k, ds_yn *v, const ds_yn *at) {
  int ki = -1;
  if (ds_yaml_get(m, k, &ki)) {
    ds_yaml_free(m->item[ki]);
    m->item[ki] = v;
    return DS_OK;
  }
  if (m->n == m->cap) {
    int cap = m->cap ? 2 * m->cap : 4;
    ds_yn **item = realloc(m->item, (size_t)cap * sizeof *item);
    if (!item) return DS_ENOMEM;
    m->item = item;
    ds_yn **key = realloc(m->key, (size_t)cap * sizeof *key);
    if (!key) return DS_ENOMEM;
    m->key = key;
    m->cap = cap;
  }
  if (!(m->key[m->n] = sw_node(DS_YN_SCALAR, at, k))) return DS_ENOMEM;
  m->item[m->n++] = v;
  return DS_OK;
}

static void sw_map_remove(ds_yn *m, int i) {
  ds_yaml_free(m->key[i]);
  ds_yaml_free(m->item[i]);
  memmove(m->key + i, m->key + i + 1, (size_t)(m->n - i - 1) * sizeof *m->key);
  memmove(m->item + i, m->item + i + 1, (size_t)(m->n - i - 1) * sizeof *m->item);
  m->n--;
}

/* The map at key k of m, made (or an empty value turned into one) if needed;
 * NULL if m[k] is something else. */
static ds_yn *sw_map_child(ds_yn *m, const char *k, const ds_yn *at) {
  ds_yn *c = ds_yaml_get(m, k, NULL);
  if (c && c->kind == DS_YN_MAP) return c;
  if (c && !sw_is_null(c)) return NULL;
  ds_yn *n = sw_node(DS_YN_MAP, at, NULL);
  if (!n || sw_map_put(m, k, n, at) != DS_OK) {
    free(n);
    return NULL;
  }
  return n;
}

/* The grid key of m naming option o (path or alias), or -1. */
static int sw_grid_key_of(const ds_yn *g, const ds_option *o) {
  for (int j = 0; g && g->kind == DS_YN_MAP && j < g->n; j++)
    if (strcmp(g->key[j]->str, "replicas") && ds_opt_find(g->key[j]->str) == o) return j;
  return -1;
}

static int sw_override(sw_ctx *x, ds_yn *root, const ds_yn *k, ds_yn *v) {
  const char *K = k->str;
  if (!strcmp(K, "name") || !strcmp(K, "seed") || !strcmp(K, "grid") || !strcmp(K, "map"))
    return sw_map_put(root, K, v, k);
  if (!strncmp(K, "map.", 4) || !strncmp(K, "grid.refine.", 12)) {
    int g = K[0] == 'g';
    ds_yn *m = g ? sw_map_child(root, "grid", k) : sw_map_child(root, "map", k);
    if (m && g) m = sw_map_child(m, "refine", k);
    if (!m) return sw_err(x, k->line, k->col, "overrides: %s: the file's %s is not a map", K,
                          g ? "grid.refine" : "map:");
    return sw_map_put(m, K + (g ? 12 : 4), v, k);
  }
  if (!strncmp(K, "grid.", 5)) {
    ds_yn *g = sw_map_child(root, "grid", k);
    if (!g) return sw_err(x, k->line, k->col, "overrides: %s: the file's grid: is not a map", K);
    if (!strcmp(K + 5, "replicas") || !strcmp(K + 5, "refine")) return sw_map_put(g, K + 5, v, k);
    const ds_option *o = ds_opt_find(K + 5);
    if (!o) {
      const char *cands[2 * SW_MAX_OPTS];
      int nc = 0;
      for (int j = 0; j < ds_noptions; j++) {
        if (ds_options[j].alias) cands[nc++] = ds_options[j].alias;
        if (ds_opt_is_scalar(&ds_options[j])) cands[nc++] = ds_options[j].path;
      }
      const char *sug = ds_suggest(K + 5, cands, nc);
      return sw_err(x, k->line, k->col, "overrides: unknown grid axis '%s'%s%s%s; an axis is the "
                    "dotted path of an option (grid.optimizer.lr) or an alias (grid.lr)", K + 5,
                    sug ? " (did you mean 'grid." : "", sug ? sug : "", sug ? "'?)" : "");
    }
    int j = sw_grid_key_of(g, o);
    return sw_map_put(g, j >= 0 ? g->key[j]->str : K + 5, v, k);
  }
  const ds_option *o = ds_opt_find(K);
  const char *path = o ? o->path : K;
  if (!o && !sw_is_group(K)) {
    const char *sug = ds_opt_suggest(K);
    return sw_err(x, k->line, k->col, "overrides: unknown option '%s'%s%s%s; give an option's dotted "
                  "path (optimizer.lr), name, seed, grid, grid.replicas or grid.AXIS", K,
                  sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
  }
  if (o) { /* an option given a value is no longer swept */
    ds_yn *g = ds_yaml_get(root, "grid", NULL);
    int j = sw_grid_key_of(g, o);
    if (j >= 0) sw_map_remove(g, j);
  }
  ds_yn *cur = root;
  char part[200];
  const char *p = path;
  for (const char *dot; (dot = strchr(p, '.')); p = dot + 1) {
    snprintf(part, sizeof part, "%.*s", (int)(dot - p), p);
    ds_yn *next = sw_map_child(cur, part, k);
    if (!next)
      return sw_err(x, k->line, k->col, "overrides: %s: '%.*s' in the file is not a map of options",
                    path, (int)(dot - path), path);
    cur = next;
  }
  return sw_map_put(cur, p, v, k);
}

static int sw_overrides(sw_ctx *x, ds_yn *root) {
  int ki = -1;
  ds_yn *ov = root && root->kind == DS_YN_MAP ? ds_yaml_get(root, "overrides", &ki) : NULL;
  if (!ov) return DS_OK;
  if (ov->kind != DS_YN_MAP && !sw_is_null(ov))
    return sw_err(x, ov->line, ov->col, "overrides: expected a map of option paths to values, e.g. "
                  "{optimizer.lr: 0.3, grid.lr: [0.1, 0.2]}, got %s", ds_yaml_kind_name(ov));
  for (int i = 0; ov->kind == DS_YN_MAP && i < ov->n; i++) {
    ds_yn *v = ov->item[i];
    ov->item[i] = NULL; /* moved into the tree (freed with it) */
    int rc = sw_override(x, root, ov->key[i], v);
    if (rc != DS_OK) {
      if (v && ov->item[i] == NULL) ov->item[i] = v;
      return rc;
    }
  }
  ds_yaml_get(root, "overrides", &ki);
  sw_map_remove(root, ki);
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
      x->secline[sec] = k->line;
      x->seccol[sec] = k->col;
      DS_TRY(sw_parse_section(x, sw_sections[sec], v));
    } else if (!strcmp(k->str, "name")) DS_TRY(sw_parse_name(x, v));
    else if (!strcmp(k->str, "seed")) DS_TRY(sw_parse_seed(x, v));
    else if (!strcmp(k->str, "grid")) DS_TRY(sw_parse_grid(x, k, v));
    else if (strchr(k->str, '.') != strrchr(k->str, '.') && ds_opt_find(k->str))
      return sw_err(x, k->line, k->col,
                    "unknown key '%s' at top level: write options as nested maps (%.*s: then each "
                    "further part indented under the one before), or put the path under grid: to "
                    "sweep it", k->str, (int)(strchr(k->str, '.') - k->str), k->str);
    else if (strchr(k->str, '.') && ds_opt_find(k->str))
      return sw_err(x, k->line, k->col,
                    "unknown key '%s' at top level: write options nested (%.*s: then %s: indented "
                    "under it), or put the path under grid: to sweep it", k->str,
                    (int)(strchr(k->str, '.') - k->str), k->str, strchr(k->str, '.') + 1);
    else if (!strcmp(k->str, "map")) DS_TRY(sw_parse_mapsec(x, v));
    else return sw_unknown_key(x, k, "the top level", sw_top_keys, 11, NULL);
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

/* Shape a synthetic data kind fixes: d_in (0 = free, then at least min_din)
 * and d_out (0 = free). */
static void sw_kind_shape(ds_data_kind k, int *din, int *dout, int *min_din) {
  *din = 0, *dout = 0, *min_din = 1;
  switch (k) {
  case DS_DATA_RANK2: *dout = 1, *min_din = 2; break;
  case DS_DATA_RANK3: *dout = 1, *min_din = 10; break; /* x1 x2 sum_{i<=10} x_i */
  case DS_DATA_RANK4: *dout = 1, *min_din = 4; break;
  case DS_DATA_FULLRANK: *dout = 1; break;
  case DS_DATA_TWO_GAUSSIANS: *din = 1, *dout = 1; break;
  case DS_DATA_CIRCLE: *din = 2, *dout = 1; break;
  default: break;
  }
}

static int sw_is_file_kind(ds_data_kind k) {
  return k == DS_DATA_IDX || k == DS_DATA_LIBSVM || k == DS_DATA_CSV || k == DS_DATA_HDF5;
}

/* base with this combo's axis values, nothing derived yet. */
static void sw_apply_axes(const ds_sweep *s, const ds_point_cfg *base, const int *idx, ds_point_cfg *c) {
  *c = *base;
  for (int a = 0; a < s->naxes; a++) ds_opt_set(ds_opt_find(s->axes[a].path), c, s->axes[a].val[idx[a]]);
}

/* What follows from other values: the shape of fixed-shape data kinds, the
 * 8 circle points, and an omitted rank (min(d_in, d_out) of the point). */
static void sw_derive(const ds_sweep *s, ds_point_cfg *c) {
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

static void sw_apply(const ds_sweep *s, const int *idx, ds_point_cfg *c) {
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

/* ---- cross-field checks --------------------------------------------------- */

#define SW_AT(...) ((const char *const[]){__VA_ARGS__, NULL})

static int sw_opt_i(const char *path) { return ds_opt_index(ds_opt_find(path)); }

/* Option given in the file (section or grid axis). */
static int sw_explicit(const sw_ctx *x, const char *path) {
  int oi = sw_opt_i(path);
  return x->set[oi] || x->axis_of[oi] >= 0;
}

/* A cross-field message points at the first of the options involved (paths)
 * that is a grid axis (the value of this point), else at the first one given
 * in the file, else at its section; an axis value is named in the message. */
static int sw_xerr(const sw_ctx *x, const int *idx, const char *const *paths, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sw_xerr(const sw_ctx *x, const int *idx, const char *const *paths, const char *fmt, ...) {
  char msg[1800], at[200] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  for (int i = 0; paths[i] && !line; i++) {
    int a = x->axis_of[sw_opt_i(paths[i])];
    if (a >= 0 && idx) {
      line = x->vline[a][idx[a]], col = x->vcol[a][idx[a]];
      snprintf(at, sizeof at, " (at grid.%s = %s)", x->s->axes[a].name, x->s->axes[a].text[idx[a]]);
    }
  }
  for (int i = 0; paths[i] && !line; i++) {
    int oi = sw_opt_i(paths[i]);
    if (x->set[oi]) line = x->sline[oi], col = x->scol[oi];
  }
  for (int i = 0; paths[i] && !line; i++) {
    for (int j = 0; j < 6; j++) {
      size_t l = strlen(sw_sections[j]);
      if (!strncmp(paths[i], sw_sections[j], l) && paths[i][l] == '.' && x->secline[j])
        line = x->secline[j], col = x->seccol[j];
    }
  }
  if (!line) line = 1, col = 1;
  return sw_err(x, line, col, "%s%s", msg, at);
}

static const char *sw_choice(const char *path, int v) {
  return ds_opt_find(path)->choices[v];
}

/* Explicit d_in/d_out against a fixed-shape kind (before sw_derive overrides them). */
static int sw_check_shape(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  int din, dout, dmin;
  const char *kind = sw_choice("data.kind", c->data.kind);
  sw_kind_shape(c->data.kind, &din, &dout, &dmin);
  if (din && sw_explicit(x, "data.d_in") && c->data.d_in != din)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind"),
                   "data.d_in: data.kind %s has d_in = %d, got %d; omit data.d_in (the kind sets it)",
                   kind, din, c->data.d_in);
  if (dout && sw_explicit(x, "data.d_out") && c->data.d_out != dout)
    return sw_xerr(x, idx, SW_AT("data.d_out", "data.kind"),
                   "data.d_out: data.kind %s has d_out = %d, got %d; omit data.d_out (the kind sets it)",
                   kind, dout, c->data.d_out);
  if (c->data.d_in < dmin)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind"),
                   "data.d_in: data.kind %s needs d_in >= %d, got %d", kind, dmin, c->data.d_in);
  return DS_OK;
}

/* Fields of a data spec that ds_data_probe's answer depends on. */
static int sw_probe_same(const ds_data_spec *a, const ds_data_spec *b) {
  return a->kind == b->kind && !strcmp(a->path, b->path) && !strcmp(a->labels_path, b->labels_path) &&
         !strcmp(a->test_path, b->test_path) && !strcmp(a->test_labels_path, b->test_labels_path) &&
         a->nclasses == b->nclasses &&
         !memcmp(a->classes, b->classes, (size_t)a->nclasses * sizeof a->classes[0]) &&
         a->labels == b->labels && a->test_fraction == b->test_fraction &&
         a->libsvm_target_after_semicolon == b->libsvm_target_after_semicolon;
}

/* ds_data_probe with a small cache (grid points mostly share one data set). */
static int sw_probe(sw_ctx *x, const int *idx, const ds_data_spec *d, int *din, int *dout, int *avail) {
  for (int i = 0; i < x->nprobe; i++) {
    if (sw_probe_same(&x->probe_key[i], d)) {
      *din = x->probe_din[i], *dout = x->probe_dout[i], *avail = x->probe_avail[i];
      return DS_OK;
    }
  }
  int rc = ds_data_probe(d, din, dout, avail);
  if (rc != DS_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ds_errmsg());
    sw_xerr(x, idx, SW_AT("data.path", "data.kind"), "data.path: %s", msg);
    return rc == DS_ENOMEM ? rc : DS_EINPUT;
  }
  int k = x->nprobe < SW_PROBE_CACHE ? x->nprobe++ : SW_PROBE_CACHE - 1;
  x->probe_key[k] = *d;
  x->probe_din[k] = *din, x->probe_dout[k] = *dout, x->probe_avail[k] = *avail;
  return DS_OK;
}

/* File data: the files named, and the shape and size the probe reports. */
static int sw_check_file_data(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  const char *kind = sw_choice("data.kind", d->kind);
  if (!sw_is_file_kind(d->kind)) return DS_OK;
  if (!d->path[0])
    return sw_xerr(x, idx, SW_AT("data.kind", "data.path"),
                   "data.kind: %s needs data.path (the data file)", kind);
  if (d->kind == DS_DATA_IDX && !d->labels_path[0])
    return sw_xerr(x, idx, SW_AT("data.kind", "data.labels_path"),
                   "data.kind: idx needs data.labels_path (the IDX labels file)");
  if (d->kind == DS_DATA_IDX && d->test_path[0] && !d->test_labels_path[0])
    return sw_xerr(x, idx, SW_AT("data.test_path", "data.kind"),
                   "data.test_path: idx test images need data.test_labels_path too");
  if (x->flags & DS_SWEEP_NO_FILES) return DS_OK;
  int din, dout, avail;
  DS_TRY(sw_probe(x, idx, d, &din, &dout, &avail));
  if (d->d_in != din)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind", "data.labels", "data.path"),
                   "data.d_in: the data file '%s' gives d_in = %d, got %d; omit data.d_in for file data "
                   "(and do not mix data sets of different shapes in one sweep)",
                   x->given[sw_opt_i("data.path")], din, d->d_in);
  if (d->d_out != dout)
    return sw_xerr(x, idx, SW_AT("data.d_out", "data.labels", "data.classes", "data.kind", "data.path"),
                   "data.d_out: the data file '%s' with data.labels %s gives d_out = %d, got %d; omit "
                   "data.d_out for file data (and do not sweep options that change it)",
                   x->given[sw_opt_i("data.path")], sw_choice("data.labels", d->labels), dout, d->d_out);
  if (d->n_train > avail)
    return sw_xerr(x, idx, SW_AT("data.n_train", "data.path"),
                   "data.n_train: %d training samples requested but '%s' has only %d available",
                   d->n_train, x->given[sw_opt_i("data.path")], avail);
  return DS_OK;
}

static int sw_check_model(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_model_spec *m = &c->model;
  if (m->nwidths > 0 && m->nwidths != m->depth - 1)
    return sw_xerr(x, idx, SW_AT("model.widths", "model.depth"),
                   "model.widths: has %d entries but model.depth = %d needs depth-1 = %d hidden widths",
                   m->nwidths, m->depth, m->depth - 1);
  if (m->type == DS_MODEL_E2E && m->bias)
    return sw_xerr(x, idx, SW_AT("model.type", "model.bias"),
                   "model.type: e2e has no biases; set model.bias: false");
  if (m->approx != DS_APPROX_NONE && m->type == DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT("model.approx", "model.type"),
                   "model.approx: %s needs model.type linear or relu, got e2e",
                   sw_choice("model.approx", m->approx));
  int dims[65], minw = INT32_MAX;
  ds_point_dims(c, dims);
  for (int l = 1; l < m->depth; l++)
    if (dims[l] < minw) minw = dims[l];
  int r = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  /* data dims of a file kind are known only when the file was read */
  int dims_known = !((x->flags & DS_SWEEP_NO_FILES) && sw_is_file_kind(c->data.kind));
  if (m->init == DS_INIT_BALANCED && m->depth >= 2 && minw < r && dims_known)
    return sw_xerr(x, idx, SW_AT("model.init", "model.width", "model.widths", "model.depth", "data.d_in",
                                 "data.d_out"),
                   "model.init: balanced needs every hidden width >= min(data.d_in, data.d_out) = %d, "
                   "but the smallest is %d", r, minw);
  if (m->gain != 1.0 && m->type != DS_MODEL_TANH && m->type != DS_MODEL_RELU)
    return sw_xerr(x, idx, SW_AT("model.gain", "model.type"),
                   "model.gain: applies to tanh nets (tanh(gain z)) and ReLU nets (gain relu(z)), "
                   "got model.type %s; remove model.gain or use model.type tanh or relu",
                   sw_choice("model.type", m->type));
  if (m->gain != 1.0 && m->type == DS_MODEL_RELU && m->bias)
    return sw_xerr(x, idx, SW_AT("model.gain", "model.bias"),
                   "model.gain: a ReLU net's gain is applied as a factor of its hidden layers' "
                   "weights (gain relu(W a) = relu(gain W a)), which is not gain relu(W a + b) "
                   "once there are biases; use model.bias: false with model.gain, or gain 1");
  if (m->init_offset != 0.0 && (m->type == DS_MODEL_E2E || m->init == DS_INIT_FILE))
    return sw_xerr(x, idx, SW_AT("model.init_offset", "model.init", "model.type"),
                   "model.init_offset: not applied to %s; use a drawn initialisation of a "
                   "network (model.type linear, relu or tanh)",
                   m->type == DS_MODEL_E2E ? "model.type e2e" : "weights from a file (init: file)");
  if (m->symmetric && m->depth != 2)
    return sw_xerr(x, idx, SW_AT("model.symmetric", "model.depth"),
                   "model.symmetric: needs model.depth = 2, got %d", m->depth);
  if (m->symmetric && dims[1] % 2)
    return sw_xerr(x, idx, SW_AT("model.symmetric", "model.width", "model.widths"),
                   "model.symmetric: needs an even hidden width (units come in +/- pairs), got %d", dims[1]);
  if (m->init == DS_INIT_FILE && !m->init_file[0])
    return sw_xerr(x, idx, SW_AT("model.init", "model.init_file"),
                   "model.init: file needs model.init_file (an HDF5 file with W1..W%d)", m->depth);
  /* init_scale is not applied to weights from a file; refused unless model.init
   * is an axis, where it scales the other initialisations (docs/sweep-spec.md) */
  if (m->init == DS_INIT_FILE && m->init_scale != 1.0 && x->axis_of[sw_opt_i("model.init")] < 0) {
    char v[64];
    ds_fmt_double(m->init_scale, v, sizeof v);
    return sw_xerr(x, idx, SW_AT("model.init_scale", "model.init"),
                   "model.init_scale: not applied with model.init: file (the weights are used exactly as "
                   "stored), got %s; remove init_scale (or use 1) and scale the weights in the file", v);
  }
  return DS_OK;
}

/* Label mode against the data kind and class list (before any file is probed). */
static int sw_check_labels(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  const char *kind = sw_choice("data.kind", d->kind);
  if (d->labels != DS_LABELS_VALUE && !sw_is_file_kind(d->kind))
    return sw_xerr(x, idx, SW_AT("data.labels", "data.kind"),
                   "data.labels: %s needs class labels from a file data set (data.kind idx, libsvm, "
                   "csv or hdf5), got data.kind %s", sw_choice("data.labels", d->labels), kind);
  if (d->labels == DS_LABELS_PM1 && d->nclasses != 2)
    return sw_xerr(x, idx, SW_AT("data.labels", "data.classes"),
                   "data.labels: pm1 needs exactly two classes in data.classes (e.g. [0, 1]), got %d",
                   d->nclasses);
  return DS_OK;
}

static int sw_check_data(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  if (d->kind == DS_DATA_WHITENED && d->n_train < d->d_in)
    return sw_xerr(x, idx, SW_AT("data.n_train", "data.d_in", "data.kind"),
                   "data.n_train: whitened data needs n_train >= data.d_in = %d ((1/n) X X^T = I), got %d",
                   d->d_in, d->n_train);
  if (d->whiten && d->n_train < d->d_in)
    return sw_xerr(x, idx, SW_AT("data.whiten", "data.n_train", "data.d_in"),
                   "data.whiten: needs n_train >= data.d_in = %d to whiten the inputs, got n_train = %d",
                   d->d_in, d->n_train);
  if (d->kind == DS_DATA_GAUSSIAN_SPECTRUM && d->nspectrum > d->d_in)
    return sw_xerr(x, idx, SW_AT("data.spectrum", "data.d_in"),
                   "data.spectrum: has %d eigenvalues but data.d_in = %d; give at most d_in",
                   d->nspectrum, d->d_in);
  return DS_OK;
}

static int sw_check_loss_optim(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_loss_spec *l = &c->loss;
  const ds_optim_spec *o = &c->optimizer;
  if (l->type == DS_LOSS_CE) {
    if (c->data.labels != DS_LABELS_ONE_HOT)
      return sw_xerr(x, idx, SW_AT("loss.type", "data.labels"),
                     "loss.type: cross_entropy needs data.labels: one_hot, got %s",
                     sw_choice("data.labels", c->data.labels));
    if (l->reduction != DS_RED_SUM && l->reduction != DS_RED_MEAN)
      return sw_xerr(x, idx, SW_AT("loss.reduction", "loss.type"),
                     "loss.reduction: cross_entropy takes sum or mean, got %s",
                     sw_choice("loss.reduction", l->reduction));
    if (l->optimum)
      return sw_xerr(x, idx, SW_AT("loss.optimum", "loss.type"),
                     "loss.optimum: not available with loss.type cross_entropy (L* is computed for mse "
                     "and lp only)");
  }
  if (l->optimum && c->model.type != DS_MODEL_LINEAR && c->model.type != DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT("loss.optimum", "model.type"),
                   "loss.optimum: needs a linear model (model.type linear or e2e), got %s",
                   sw_choice("model.type", c->model.type));
  if ((c->record.series & DS_REC_LOSS_GAP) && !l->optimum)
    return sw_xerr(x, idx, SW_AT("loss.optimum", "record.series"),
                   "record.series: loss_gap needs loss.optimum: true (L* of a linear model)");
  if (o->type == DS_OPT_SGD && o->batch_size == 0)
    return sw_xerr(x, idx, SW_AT("optimizer.type", "optimizer.batch_size"),
                   "optimizer.type: sgd needs optimizer.batch_size >= 1 (0 means full batch: use gd)");
  if (o->batch_size > c->data.n_train)
    return sw_xerr(x, idx, SW_AT("optimizer.batch_size", "data.n_train"),
                   "optimizer.batch_size: must be <= data.n_train = %d, got %d", c->data.n_train,
                   o->batch_size);
  if (o->lr_in > 0 || o->lr_out > 0) { /* issue 13: per-layer learning rates */
    const char *const *at = o->lr_in > 0 ? SW_AT("optimizer.lr_in", "optimizer.lr_out", "optimizer.type",
                                                 "optimizer.schedule", "optimizer.weight_decay",
                                                 "model.depth", "model.type")
                                         : SW_AT("optimizer.lr_out", "optimizer.type", "optimizer.schedule",
                                                 "optimizer.weight_decay", "model.depth", "model.type");
    const char *which = o->lr_in > 0 ? "optimizer.lr_in" : "optimizer.lr_out";
    if (o->type != DS_OPT_GD && o->type != DS_OPT_SGD)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates are supported for optimizer.type gd and "
                     "sgd only, got %s", which, sw_choice("optimizer.type", o->type));
    if (o->schedule != DS_SCHED_CONSTANT)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates need optimizer.schedule constant, got %s",
                     which, sw_choice("optimizer.schedule", o->schedule));
    if (o->weight_decay != 0)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates do not take optimizer.weight_decay "
                     "(remove it or use optimizer.lr alone)", which);
    if (c->model.type == DS_MODEL_E2E || c->model.depth < 2)
      return sw_xerr(x, idx, at, "%s: needs a network of depth >= 2 (first and last layer distinct), "
                     "got model.type %s, depth %d", which, sw_choice("model.type", c->model.type),
                     c->model.depth);
  }
  if (o->schedule == DS_SCHED_PIECEWISE && o->nschedule == 0)
    return sw_xerr(x, idx, SW_AT("optimizer.schedule"),
                   "optimizer.schedule: piecewise needs optimizer.schedule_steps and "
                   "optimizer.schedule_lrs (lists of equal length, e.g. [100, 200] and [0.1, 0.01])");
  return DS_OK;
}

/* ---- record.spectra ---- */


#define SW_CAD(d) "record.spectra." d ".every", "record.spectra." d ".per_decade", \
                  "record.spectra." d ".on_loss_rise"

/* hessian, hessian_full, ntk: exact derivatives of the network itself only (for now). */
static int sw_check_exact_model(sw_ctx *x, const int *idx, const ds_point_cfg *c, const char *d,
                                const char *const *at) {
  if (c->model.type == DS_MODEL_E2E)
    return sw_xerr(x, idx, at,
                   "record.spectra.%s: not supported with model.type e2e (yet); use model.type linear "
                   "for the same network", d);
  if (c->model.approx != DS_APPROX_NONE)
    return sw_xerr(x, idx, at,
                   "record.spectra.%s: not supported with model.approx %s (yet); only the network "
                   "itself (approx: none)", d, sw_choice("model.approx", c->model.approx));
  return DS_OK;
}

static int sw_check_spectra(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  const ds_model_spec *m = &c->model;
  if (ds_cadence_on(&sp->e2e) && m->type != DS_MODEL_LINEAR && m->type != DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT(SW_CAD("e2e"), "model.type"),
                   "record.spectra.e2e: needs a linear model (model.type linear or e2e), got %s",
                   sw_choice("model.type", m->type));
  if (ds_cadence_on(&sp->activations) && m->type != DS_MODEL_RELU)
    return sw_xerr(x, idx, SW_AT(SW_CAD("activations"), "model.type"),
                   "record.spectra.activations: needs model.type relu (activations of a ReLU net), got %s",
                   sw_choice("model.type", m->type));
  if (ds_cadence_on(&sp->agop) && !sp->agop_reference[0] && c->data.kind != DS_DATA_RANK2 &&
      c->data.kind != DS_DATA_RANK4)
    return sw_xerr(x, idx, SW_AT(SW_CAD("agop"), "data.kind"),
                   "record.spectra.agop: the analytic reference G* exists for data.kind rank2 and rank4 "
                   "only, got %s; give record.spectra.agop_reference (an HDF5 file with dataset G, "
                   "d_in x d_in)", sw_choice("data.kind", c->data.kind));
  if (ds_cadence_on(&sp->hessian)) {
    DS_TRY(sw_check_exact_model(x, idx, c, "hessian", SW_AT(SW_CAD("hessian"), "model.type", "model.approx")));
    if (sp->lanczos_iters < sp->top_k)
      return sw_xerr(x, idx, SW_AT("record.spectra.lanczos_iters", "record.spectra.top_k", SW_CAD("hessian")),
                     "record.spectra.lanczos_iters: must be >= record.spectra.top_k = %d (Lanczos gives "
                     "at most one eigenvalue per iteration), got %d", sp->top_k, sp->lanczos_iters);
  }
  if (ds_cadence_on(&sp->hessian_full)) {
    DS_TRY(sw_check_exact_model(x, idx, c, "hessian_full",
                                SW_AT(SW_CAD("hessian_full"), "model.type", "model.approx")));
    double np = ds_point_nparams(c);
    if (np > sp->hessian_full_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("hessian_full"), "record.spectra.hessian_full_max", "model.width",
                                   "model.widths", "model.depth", "model.bias", "data.d_in", "data.d_out"),
                     "record.spectra.hessian_full: the network has %.0f parameters, more than "
                     "record.spectra.hessian_full_max = %d; use a smaller network, raise hessian_full_max "
                     "(the Hessian is a %.0f x %.0f matrix) or use record.spectra.hessian (top-k by Lanczos)",
                     np, sp->hessian_full_max, np, np);
  }
  if (ds_cadence_on(&sp->ntk)) {
    DS_TRY(sw_check_exact_model(x, idx, c, "ntk", SW_AT(SW_CAD("ntk"), "model.type", "model.approx")));
    double kn = (double)c->data.d_out * c->data.n_train;
    if (kn > sp->ntk_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("ntk"), "record.spectra.ntk_max", "data.n_train", "data.d_out"),
                     "record.spectra.ntk: the NTK has d_out * n_train = %d * %d = %.0f rows, more than "
                     "record.spectra.ntk_max = %d; use fewer training samples or raise ntk_max (K is a "
                     "%.0f x %.0f matrix)", c->data.d_out, c->data.n_train, kn, sp->ntk_max, kn, kn);
  }
  if (ds_cadence_on(&sp->batch_ntk)) {
    DS_TRY(sw_check_exact_model(x, idx, c, "batch_ntk",
                                SW_AT(SW_CAD("batch_ntk"), "model.type", "model.approx")));
    int b = c->optimizer.batch_size; /* full batch: the whole training set */
    if (b <= 0 || b > c->data.n_train) b = c->data.n_train;
    double kb = (double)c->data.d_out * b;
    if (kb > sp->ntk_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("batch_ntk"), "record.spectra.ntk_max", "optimizer.batch_size",
                                   "data.d_out"),
                     "record.spectra.batch_ntk: the batch NTK has d_out * batch_size = %d * %d = %.0f "
                     "rows, more than record.spectra.ntk_max = %d; use a smaller batch or raise ntk_max",
                     c->data.d_out, b, kb, sp->ntk_max);
  }
  return DS_OK;
}

/* Every constraint of one combo. */
/* train.distributed: on is refused for what the distributed trainer does not
 * do (src/spectra/dtrain.c); auto quietly falls back to one rank for those. */
static int sw_check_dist(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  if (c->train.distributed != DS_DIST_ON) return DS_OK;
  const ds_spectra_spec *sp = &c->record.spectra;
  if (c->model.type == DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT("train.distributed", "model.type"),
                   "train.distributed: on is not supported with model.type e2e (the end-to-end "
                   "update is one-rank); use off or auto");
  if (c->model.approx != DS_APPROX_NONE)
    return sw_xerr(x, idx, SW_AT("train.distributed", "model.approx"),
                   "train.distributed: on is not supported with model.approx %s; use off or auto",
                   sw_choice("model.approx", c->model.approx));
  if (c->loss.type == DS_LOSS_CE)
    return sw_xerr(x, idx, SW_AT("train.distributed", "loss.type"),
                   "train.distributed: on supports loss.type mse and lp, not cross_entropy (its "
                   "softmax spans a whole output column); use off or auto");
  if (c->model.type == DS_MODEL_TANH || c->model.param == DS_PARAM_MEANFIELD)
    return sw_xerr(x, idx, SW_AT("train.distributed", "model.type", "model.param"),
                   "train.distributed: on is not supported with %s (the distributed trainer has "
                   "linear and ReLU layers, standard and ntk scales); use off or auto",
                   c->model.type == DS_MODEL_TANH ? "model.type tanh" : "model.param meanfield");
  if (c->optimizer.lr_units == DS_LR_LAMBDA0)
    return sw_xerr(x, idx, SW_AT("train.distributed", "optimizer.lr_units"),
                   "train.distributed: on does not support optimizer.lr_units: lambda0 (the NTK at "
                   "initialisation needs the whole theta on one rank); use off or auto");
  if (c->optimizer.lr_in > 0 || c->optimizer.lr_out > 0)
    return sw_xerr(x, idx, SW_AT("train.distributed", "optimizer.lr_in", "optimizer.lr_out"),
                   "train.distributed: on is not supported with per-layer learning rates "
                   "(optimizer.lr_in / lr_out); use off or auto");
  if (ds_spectra_any_on(sp))
    return sw_xerr(x, idx, SW_AT("train.distributed"),
                   "train.distributed: on does not compute record.spectra diagnostics (they need "
                   "the whole theta on one rank); turn them off, or use off or auto");
  return DS_OK;
}

static int sw_check_combo(sw_ctx *x, const int *idx, ds_point_cfg *c) {
  ds_point_cfg raw; /* the values as written, before anything is derived */
  sw_apply_axes(x->s, &x->raw_base, idx, &raw);
  DS_TRY(sw_check_shape(x, idx, &raw));
  sw_apply(x->s, idx, c);
  DS_TRY(sw_check_labels(x, idx, c));
  DS_TRY(sw_check_file_data(x, idx, c));
  DS_TRY(sw_check_rank(x, idx, c));
  DS_TRY(sw_check_record(x, idx, c));
  DS_TRY(sw_check_model(x, idx, c));
  DS_TRY(sw_check_data(x, idx, c));
  DS_TRY(sw_check_loss_optim(x, idx, c));
  DS_TRY(sw_check_spectra(x, idx, c));
  DS_TRY(sw_check_dist(x, idx, c));
  return DS_OK;
}

/* A map sweep: at most DS_MAX_MAP_POINTS points, one replica, no diagnostics.
 * Up to 2^14 combos every one is checked; beyond, every value of every axis
 * (the others at their first value) and every corner of the grid. */
static int sw_check_map(sw_ctx *x, double np, int line, int col) {
  ds_sweep *s = x->s;
  if (np > (double)DS_MAX_MAP_POINTS)
    return sw_err(x, line, col, "map too large: %.0f points (limit %lld); use fewer axis values",
                  np, (long long)DS_MAX_MAP_POINTS);
  if (s->replicas != 1)
    return sw_err(x, line, col, "grid.replicas: a map sweep has one point per pixel; make the seed "
                  "an axis instead, or drop map:");
  ds_point_cfg c;
  int idx[DS_MAX_AXES] = {0};
  if (ds_spectra_any_on(&s->base.record.spectra))
    return sw_err(x, x->secline[5] ? x->secline[5] : line, x->secline[5] ? x->seccol[5] : col,
                  "record.spectra: a map sweep records outcomes only (map:); drop record.spectra "
                  "or the map: section");
  if (np <= (double)(1 << 14)) {
    for (int64_t k = 0; k < (int64_t)np; k++) {
      sw_combo_index(s, k, idx);
      DS_TRY(sw_check_combo(x, idx, &c));
    }
    return DS_OK;
  }
  for (int a = 0; a < s->naxes; a++)
    for (int i = 0; i < s->axes[a].nvals; i++) {
      memset(idx, 0, sizeof idx);
      idx[a] = i;
      DS_TRY(sw_check_combo(x, idx, &c));
    }
  for (int m = 0; m < (1 << s->naxes); m++) {
    for (int a = 0; a < s->naxes; a++) idx[a] = m >> a & 1 ? s->axes[a].nvals - 1 : 0;
    DS_TRY(sw_check_combo(x, idx, &c));
  }
  return DS_OK;
}

int64_t ds_map_tile_points(const ds_sweep *s) {
  if (s->map_tile > 0) return s->map_tile;
  ds_point p;
  if (ds_sweep_point(s, 0, &p) != DS_OK) {
    ds_clear_error();
    return 1024;
  }
  /* from the FLOP estimate at a nominal 10 GFLOP/s, not from this machine's
   * speed: tiles are fixed by the sweep, whoever runs it */
  double t = p.cost > 0 ? DS_MAP_TILE_S * 1e10 / p.cost : 1024;
  int64_t n = 64;
  while (n < 16384 && n * 2 <= t) n *= 2;
  return n;
}

/* Size limits, then every combo: cross-field constraints and store estimate. */
static int sw_check_points(sw_ctx *x) {
  ds_sweep *s = x->s;
  double np = s->replicas;
  for (int a = 0; a < s->naxes; a++) np *= s->axes[a].nvals;
  int line = x->have_grid ? x->gline : 1, col = x->have_grid ? x->gcol : 1;
  if (s->map) return sw_check_map(x, np, line, col);
  if (np > DS_MAX_POINTS)
    return sw_err(x, line, col, "grid too large: %.0f points (limit %d); use fewer axis values or "
                  "replicas, or make it a map sweep (map: true) that records outcomes only", np,
                  DS_MAX_POINTS);
  int64_t ncombo = ds_sweep_npoints(s) / s->replicas;
  double bytes = 0;
  for (int64_t k = 0; k < ncombo; k++) {
    int idx[DS_MAX_AXES];
    ds_point_cfg c;
    sw_combo_index(s, k, idx);
    DS_TRY(sw_check_combo(x, idx, &c));
    bytes += ds_point_store_bytes(&c) * s->replicas;
  }
  s->store_bytes = bytes;
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
  char buf[4096];
  uint64_t h = ds_fnv1a("dynsweep-sweep-v1\n", 18, 0);
  h = sw_hash_line(h, "name", s->name);
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)s->seed);
  h = sw_hash_line(h, "seed", buf);
  snprintf(buf, sizeof buf, "%d", s->replicas);
  h = sw_hash_line(h, "replicas", buf);
  ds_point_cfg def;
  ds_opt_defaults(&def);
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    if (s->rank_auto && !strcmp(o->path, "data.rank")) snprintf(buf, sizeof buf, "auto");
    else ds_opt_format_cfg(o, &s->base, buf, sizeof buf);
    if (!strncmp(o->path, "record.spectra.", 15) || !strcmp(o->path, "train.ranks_per_point") ||
        !strcmp(o->path, "train.distributed") || !strcmp(o->path, "model.gain") ||
        !strcmp(o->path, "model.init_offset") || !strcmp(o->path, "optimizer.lr_in") ||
        !strcmp(o->path, "optimizer.lr_units") ||
        !strcmp(o->path, "optimizer.lr_out")) {
      /* added with issue 4: hashed only when not at its default, so sweeps that
       * do not use record.spectra keep the hash they had before */
      char dbuf[4096];
      ds_opt_format_cfg(o, &def, dbuf, sizeof dbuf);
      if (!strcmp(buf, dbuf)) continue;
    }
    h = sw_hash_line(h, o->path, buf);
  }
  if (s->map) { /* issue 13: only map sweeps hash these, so other hashes stay */
    snprintf(buf, sizeof buf, "tile %lld refine %d axes %d %d", (long long)s->map_tile,
             s->refine_levels, s->refine_axes[0], s->refine_axes[1]);
    h = sw_hash_line(h, "map", buf);
    if (s->map_early_stop) h = sw_hash_line(h, "map.early_stop", "true"); /* only when set */
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

/* Lists given together must agree in length. */
static int sw_check_lists(sw_ctx *x) {
  int si = sw_opt_i("optimizer.schedule_steps"), li = sw_opt_i("optimizer.schedule_lrs");
  if (x->listn[si] == x->listn[li]) return DS_OK;
  int at = x->set[li] ? li : si;
  return sw_err(x, x->sline[at], x->scol[at],
                "optimizer.schedule_lrs: has %d values but optimizer.schedule_steps has %d; give one "
                "learning rate per step", x->listn[li], x->listn[si]);
}

/* File data in the base: d_in and d_out come from the file (ds_data_probe). */
static int sw_base_file_data(sw_ctx *x) {
  ds_data_spec *d = &x->s->base.data;
  if ((x->flags & DS_SWEEP_NO_FILES) || !sw_is_file_kind(d->kind) || !d->path[0]) return DS_OK;
  if (d->kind == DS_DATA_IDX && !d->labels_path[0]) return DS_OK; /* reported per point */
  DS_TRY(sw_check_labels(x, NULL, &x->s->base));
  int din, dout, avail;
  int ii = sw_opt_i("data.d_in"), oi = sw_opt_i("data.d_out");
  /* CSV with value labels: d_out is the number of trailing target columns,
   * one unless stated */
  if (d->kind == DS_DATA_CSV && d->labels == DS_LABELS_VALUE && !x->set[oi] && x->axis_of[oi] < 0)
    d->d_out = 1;
  DS_TRY(sw_probe(x, NULL, d, &din, &dout, &avail));
  if (x->set[ii] && d->d_in != din)
    return sw_err(x, x->sline[ii], x->scol[ii],
                  "data.d_in: the data file '%s' gives d_in = %d, got %d; omit data.d_in for file data",
                  x->given[sw_opt_i("data.path")], din, d->d_in);
  if (x->set[oi] && d->d_out != dout)
    return sw_err(x, x->sline[oi], x->scol[oi],
                  "data.d_out: the data file '%s' with data.labels %s gives d_out = %d, got %d; omit "
                  "data.d_out for file data", x->given[sw_opt_i("data.path")],
                  sw_choice("data.labels", d->labels), dout, d->d_out);
  d->d_in = din;
  d->d_out = dout;
  return DS_OK;
}

static int sw_build(sw_ctx *x, const ds_yn *root) {
  ds_sweep *s = x->s;
  DS_TRY(sw_walk(x, root));
  DS_TRY(sw_required(x));
  DS_TRY(sw_check_lists(x));
  x->raw_base = s->base;
  DS_TRY(sw_base_file_data(x));
  int ri = ds_opt_index(ds_opt_find("data.rank"));
  if (!x->set[ri]) s->rank_auto = x->axis_of[ri] < 0;
  sw_derive(s, &s->base);
  if (!x->set[ri])
    s->base.data.rank = s->base.data.d_in < s->base.data.d_out ? s->base.data.d_in : s->base.data.d_out;
  if (s->refine_levels > 0) s->map = 1; /* grid.refine makes a map sweep */
  DS_TRY(sw_check_points(x));
  s->hash = sw_hash(s);
  return DS_OK;
}

int ds_sweep_parse(const char *path, const char *text, ds_sweep *out) {
  return ds_sweep_parse_flags(path, text, 0, out);
}

int ds_sweep_parse_flags(const char *path, const char *text, int flags, ds_sweep *out) {
  ds_yn *root = NULL;
  memset(out, 0, sizeof *out);
  sw_ctx *x = ds_calloc(1, sizeof *x); /* large (file names, probe cache): not on the stack */
  if (!x) return DS_ENOMEM;
  for (int i = 0; i < SW_MAX_OPTS; i++) x->axis_of[i] = -1;
  x->flags = flags;
  sw_basedir(x, path);
  x->file = path;
  x->s = out;
  out->replicas = 1;
  ds_opt_defaults(&out->base);
  int rc = DS_ENOMEM;
  if ((out->path = ds_strdup(path)) && (out->text = ds_strdup(text))) {
    rc = ds_yaml_load(path, text, &root);
    if (rc == DS_OK) rc = sw_overrides(x, root);
    if (rc == DS_OK) rc = sw_build(x, root);
  }
  ds_yaml_free(root);
  for (int a = 0; a < DS_MAX_AXES; a++) {
    free(x->vline[a]);
    free(x->vcol[a]);
  }
  free(x);
  if (rc != DS_OK) ds_sweep_free(out);
  return rc;
}

/* ---- --set KEY=VALUE ------------------------------------------------------ */

/* KEY of a --set argument: letters, digits, '_' and '.'; VALUE one line. */
static int sw_set_check(const char *set, size_t *klen) {
  const char *eq = strchr(set, '=');
  if (!eq || eq == set)
    return ds_fail(DS_EINPUT, "--set %s: expected KEY=VALUE, e.g. --set optimizer.lr=0.3 or --set "
                   "'grid.lr={start: 0.1, stop: 1, num: 64}'", set);
  for (const char *c = set; c < eq; c++)
    if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.')
      return ds_fail(DS_EINPUT, "--set %s: KEY '%.*s' is not an option path (letters, digits, '_' "
                     "and '.', e.g. optimizer.lr or grid.lr)", set, (int)(eq - set), set);
  if (strpbrk(eq + 1, "\n\r"))
    return ds_fail(DS_EINPUT, "--set %s: VALUE must be one line (a YAML scalar or flow value such "
                   "as [1, 2] or {start: 1, stop: 2, num: 3})", set);
  *klen = (size_t)(eq - set);
  return DS_OK;
}

/* A message "PATH:LINE:COL: msg" about an appended --set line becomes
 * "--set KEY=VALUE: msg" (col counted within VALUE when it points there). */
static void sw_set_message(const char *path, const int *line_of, int nset, char *const *sets) {
  const char *msg = ds_errmsg();
  size_t pl = strlen(path);
  int line = 0, col = 0, used = 0;
  if (strncmp(msg, path, pl) || sscanf(msg + pl, ":%d:%d: %n", &line, &col, &used) < 2 || !used)
    return;
  int i = 0;
  while (i < nset && line_of[i] != line) i++;
  if (i == nset) return;
  char rest[2048];
  const char *r = msg + pl + used;
  if (!strncmp(r, "overrides: ", 11)) r += 11;
  snprintf(rest, sizeof rest, "%s", r);
  size_t klen = strcspn(sets[i], "=");
  int vcol = col - (int)(klen + 4); /* "  KEY: " */
  if (vcol >= 1)
    ds_fail(DS_EINPUT, "--set %s: %s (at character %d of the value)", sets[i], rest, vcol);
  else ds_fail(DS_EINPUT, "--set %s: %s", sets[i], rest);
}

int ds_sweep_parse_set(const char *path, const char *text, int nset, char *const *sets,
                       ds_sweep *out) {
  memset(out, 0, sizeof *out);
  if (nset <= 0) return ds_sweep_parse(path, text, out);
  size_t need = strlen(text) + 128, klen;
  for (int i = 0; i < nset; i++) {
    DS_TRY(sw_set_check(sets[i], &klen));
    need += strlen(sets[i]) + 8;
  }
  ds_yn *root = NULL;
  DS_TRY(ds_yaml_load(path, text, &root));
  int has = root && root->kind == DS_YN_MAP && ds_yaml_get(root, "overrides", NULL);
  int at = has ? ds_yaml_get(root, "overrides", NULL)->line : 0;
  ds_yaml_free(root);
  if (has)
    return ds_fail(DS_EINPUT, "%s:%d: the sweep already has an overrides: map (from an earlier "
                   "--set?); add KEY: VALUE lines to it instead of --set", path, at);
  char *all = ds_calloc(need, 1);
  if (!all) return DS_ENOMEM;
  size_t n = strlen(text);
  memcpy(all, text, n);
  if (n && text[n - 1] != '\n') all[n++] = '\n';
  int first = 2; /* line of the first --set entry */
  for (size_t q = 0; q < n; q++) first += all[q] == '\n';
  n += (size_t)snprintf(all + n, need - n, "overrides:  # dynsweep --set\n");
  int *line_of = ds_calloc((size_t)nset, sizeof *line_of), line = first; /* set -> its line */
  if (!line_of) {
    free(all);
    return DS_ENOMEM;
  }
  for (int i = 0; i < nset; i++) {
    sw_set_check(sets[i], &klen);
    int later = 0; /* a later --set of the same KEY wins */
    for (int j = i + 1; j < nset && !later; j++)
      later = strcspn(sets[j], "=") == klen && !strncmp(sets[i], sets[j], klen);
    line_of[i] = later ? 0 : line++;
    if (!later)
      n += (size_t)snprintf(all + n, need - n, "  %.*s: %s\n", (int)klen, sets[i], sets[i] + klen + 1);
  }
  int rc = ds_sweep_parse(path, all, out);
  if (rc == DS_EINPUT) sw_set_message(path, line_of, nset, sets);
  free(all);
  free(line_of);
  return rc;
}

int ds_sweep_load_set(const char *path, int nset, char *const *sets, ds_sweep *out) {
  char *text = NULL;
  memset(out, 0, sizeof *out);
  DS_TRY(ds_sweep_read(path, &text, NULL));
  int rc = ds_sweep_parse_set(path, text, nset, sets, out);
  free(text);
  return rc;
}

int ds_sweep_read(const char *path, char **text, size_t *len) {
  size_t n = 0;
  DS_TRY(ds_read_file(path, text, &n));
  const char *z = memchr(*text, 0, n);
  if (z) {
    int line = 1;
    size_t at = (size_t)(z - *text) + 1;
    for (const char *p = *text; p < z; p++) line += *p == '\n';
    free(*text);
    *text = NULL;
    return ds_fail(DS_EINPUT, "%s:%d: NUL byte at byte %zu: a sweep file is YAML text", path, line, at);
  }
  if (len) *len = n;
  return DS_OK;
}

int ds_sweep_load(const char *path, ds_sweep *out) {
  char *text = NULL;
  memset(out, 0, sizeof *out);
  DS_TRY(ds_sweep_read(path, &text, NULL));
  int rc = ds_sweep_parse(path, text, out);
  free(text);
  return rc;
}
