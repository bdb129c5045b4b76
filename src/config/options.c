/* options.c -- the one table of configuration options (dotted path, type,
 * offset into ds_point_cfg, range, default, doc) and everything driven by
 * it: defaults, typed get/set by path, scalar parsing with range checks,
 * canonical value text, and "did you mean" suggestions. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"
#include "dynsweep/util.h"

static const char *const model_types[] = {"linear", "relu", NULL};
static const char *const init_kinds[] = {"gaussian", NULL};
static const char *const data_kinds[] = {"teacher", NULL};
static const char *const loss_types[] = {"mse", NULL};
/* Indexed by ds_reduction. */
static const char *const reductions[] = {"sum", "half_sum", "mean", "half_mean", NULL};
static const char *const opt_types[] = {"gd", NULL};
const char *const ds_series_names[] = {"loss",       "test_loss", "grad_norm",
                                       "param_norm", "layer_fro", "layer_sv", NULL};
const char *const ds_reduction_help =
    "half_sum (L = 1/2 * sum (f-y)^2), sum (L = sum (f-y)^2), "
    "mean (L = 1/n * sum (f-y)^2), half_mean (L = 1/(2n) * sum (f-y)^2), "
    "where the sum runs over the n training samples and all outputs";

#define ALL_SERIES 63.0
#define OFF(f) offsetof(ds_point_cfg, f)
#define NOMAX INFINITY

const ds_option ds_options[] = {
    {"model.type", NULL, DS_OT_ENUM, OFF(model.type), 0, 0, 0, model_types, DS_MODEL_LINEAR,
     "linear", "activation between layers: linear (deep linear network) or relu"},
    {"model.bias", NULL, DS_OT_BOOL, OFF(model.bias), 0, 1, 0, NULL, 0, "false",
     "add a bias vector to every layer"},
    {"model.width", "width", DS_OT_INT, OFF(model.width), 1, INT_MAX, 0, NULL, 16, "16",
     "hidden layer width"},
    {"model.depth", "depth", DS_OT_INT, OFF(model.depth), 1, 64, 0, NULL, 2, "2",
     "number of weight matrices (layers)"},
    {"model.init", NULL, DS_OT_ENUM, OFF(model.init), 0, 0, 0, init_kinds, DS_INIT_GAUSSIAN,
     "gaussian", "initialisation: W_ij ~ N(0, init_scale^2 / fan_in)"},
    {"model.init_scale", "init_scale", DS_OT_DOUBLE, OFF(model.init_scale), 0, NOMAX, 1, NULL, 1.0,
     "1.0", "initialisation scale (standard deviation times sqrt(fan_in))"},
    {"data.kind", NULL, DS_OT_ENUM, OFF(data.kind), 0, 0, 0, data_kinds, DS_DATA_TEACHER,
     "teacher", "data: Gaussian inputs labelled by a random low-rank linear teacher"},
    {"data.n_train", NULL, DS_OT_INT, OFF(data.n_train), 1, INT_MAX, 0, NULL, 256, "256",
     "number of training samples n"},
    {"data.n_test", NULL, DS_OT_INT, OFF(data.n_test), 0, INT_MAX, 0, NULL, 256, "256",
     "number of test samples (0 = no test set)"},
    {"data.d_in", NULL, DS_OT_INT, OFF(data.d_in), 1, INT_MAX, 0, NULL, 16, "16",
     "input dimension"},
    {"data.d_out", NULL, DS_OT_INT, OFF(data.d_out), 1, INT_MAX, 0, NULL, 4, "4",
     "output dimension"},
    {"data.rank", NULL, DS_OT_INT, OFF(data.rank), 1, INT_MAX, 0, NULL, 0, "min(d_in, d_out)",
     "teacher rank, 1..min(d_in, d_out)"},
    {"data.noise", NULL, DS_OT_DOUBLE, OFF(data.noise), 0, NOMAX, 0, NULL, 0.0, "0.0",
     "standard deviation of Gaussian label noise"},
    {"loss.type", NULL, DS_OT_ENUM, OFF(loss.type), 0, 0, 0, loss_types, DS_LOSS_MSE, "mse",
     "loss function: squared error"},
    {"loss.reduction", NULL, DS_OT_ENUM, OFF(loss.reduction), 0, 0, 0, reductions,
     DS_RED_HALF_MEAN, "(required)", "constant c in L = c * sum (f-y)^2"},
    {"optimizer.type", NULL, DS_OT_ENUM, OFF(optimizer.type), 0, 0, 0, opt_types, DS_OPT_GD, "gd",
     "full-batch gradient descent"},
    {"optimizer.lr", "lr", DS_OT_DOUBLE, OFF(optimizer.lr), 0, NOMAX, 1, NULL, 0.01, "0.01",
     "learning rate"},
    {"train.steps", NULL, DS_OT_INT64, OFF(train.steps), 1, 1e9, 0, NULL, 1000, "1000",
     "maximum number of optimiser steps"},
    {"train.tol", NULL, DS_OT_DOUBLE, OFF(train.tol), 0, NOMAX, 0, NULL, 0.0, "0",
     "stop early once the train loss is below tol (0 = never)"},
    {"train.diverge_above", NULL, DS_OT_DOUBLE, OFF(train.diverge_above), 0, NOMAX, 1, NULL, 1e6,
     "1e6", "declare divergence when the loss exceeds this or is not finite"},
    {"record.series", NULL, DS_OT_SERIES, OFF(record.series), 0, 0, 0, ds_series_names,
     ALL_SERIES, "all six", "series to record"},
    {"record.every", NULL, DS_OT_INT64, OFF(record.every), 0, 1e18, 0, NULL, 10, "10",
     "record every k steps (0 = off)"},
    {"record.per_decade", NULL, DS_OT_INT, OFF(record.per_decade), 0, INT_MAX, 0, NULL, 10, "10",
     "also record this many log-spaced steps per decade (0 = off)"},
    {"record.top_k", NULL, DS_OT_INT, OFF(record.top_k), 1, INT_MAX, 0, NULL, 5, "5",
     "singular values recorded per layer (layer_sv)"},
};
const int ds_noptions = (int)(sizeof ds_options / sizeof ds_options[0]);

const ds_option *ds_opt_find(const char *path) {
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    if (strcmp(o->path, path) == 0 || (o->alias && strcmp(o->alias, path) == 0)) return o;
  }
  return NULL;
}

int ds_opt_index(const ds_option *o) { return (int)(o - ds_options); }

int ds_opt_is_scalar(const ds_option *o) { return o->type != DS_OT_SERIES; }

double ds_opt_get(const ds_option *o, const ds_point_cfg *c) {
  const char *p = (const char *)c + o->off;
  switch (o->type) {
  case DS_OT_INT:
  case DS_OT_BOOL: return *(const int *)p;
  case DS_OT_ENUM: return (double)*(const int *)p; /* C enums here are int-sized */
  case DS_OT_INT64: return (double)*(const int64_t *)p;
  case DS_OT_DOUBLE: return *(const double *)p;
  case DS_OT_SERIES: return *(const unsigned *)p;
  }
  return 0;
}

void ds_opt_set(const ds_option *o, ds_point_cfg *c, double v) {
  char *p = (char *)c + o->off;
  switch (o->type) {
  case DS_OT_INT:
  case DS_OT_BOOL:
  case DS_OT_ENUM: *(int *)p = (int)v; break;
  case DS_OT_INT64: *(int64_t *)p = (int64_t)v; break;
  case DS_OT_DOUBLE: *(double *)p = v; break;
  case DS_OT_SERIES: *(unsigned *)p = (unsigned)v; break;
  }
}

void ds_opt_defaults(ds_point_cfg *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < ds_noptions; i++) ds_opt_set(&ds_options[i], c, ds_options[i].def);
}

void ds_fmt_double(double v, char *buf, int n) {
  snprintf(buf, (size_t)n, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, (size_t)n, "%.17g", v);
}

static void opt_format_series(unsigned bits, char *buf, int n) {
  int used = 0;
  buf[0] = 0;
  for (int b = 0; ds_series_names[b]; b++) {
    if (!(bits & (1u << b))) continue;
    used += snprintf(buf + used, (size_t)(used < n ? n - used : 0), "%s%s", used ? "," : "",
                     ds_series_names[b]);
    if (used >= n) return;
  }
}

void ds_opt_format(const ds_option *o, double v, char *buf, int n) {
  switch (o->type) {
  case DS_OT_INT:
  case DS_OT_INT64: snprintf(buf, (size_t)n, "%lld", (long long)v); break;
  case DS_OT_DOUBLE: ds_fmt_double(v, buf, n); break;
  case DS_OT_BOOL: snprintf(buf, (size_t)n, "%s", v != 0 ? "true" : "false"); break;
  case DS_OT_ENUM: {
    int k = (int)v, nc = 0;
    while (o->choices[nc]) nc++;
    snprintf(buf, (size_t)n, "%s", k >= 0 && k < nc ? o->choices[k] : "?");
    break;
  }
  case DS_OT_SERIES: opt_format_series((unsigned)v, buf, n); break;
  }
}

int ds_cfg_get_text(const ds_point_cfg *c, const char *path, char *buf, int n) {
  const ds_option *o = ds_opt_find(path);
  if (!o) return ds_fail(DS_EINPUT, "unknown configuration option '%s'", path);
  ds_opt_format(o, ds_opt_get(o, c), buf, n);
  return DS_OK;
}

/* ---- parsing scalars ----------------------------------------------------- */

static void opt_choices(const char *const *ch, char *buf, int n) {
  int used = 0;
  buf[0] = 0;
  for (int i = 0; ch[i] && used < n; i++)
    used += snprintf(buf + used, (size_t)(n - used), "%s%s", i ? ", " : "", ch[i]);
}

/* Strict number parse of a whole string; 0 if it is not a finite number. */
static int opt_strtod(const char *s, double *v) {
  if (!*s || isspace((unsigned char)*s)) return 0;
  /* refuse hex floats, nan and inf: the file is for people */
  for (const char *q = s; *q; q++)
    if (!strchr("0123456789+-.eE", *q)) return 0;
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *end == 0 && isfinite(*v) && errno != ERANGE;
}

static int opt_parse_bool(const char *s, double *v) {
  static const char *const t[] = {"true", "yes", "on"}, *const f[] = {"false", "no", "off"};
  for (int i = 0; i < 3; i++) {
    if (strcasecmp(s, t[i]) == 0) return *v = 1, 1;
    if (strcasecmp(s, f[i]) == 0) return *v = 0, 1;
  }
  return 0;
}

int ds_opt_check_range(const char *file, const ds_option *o, double v, int line, int col) {
  char got[64], lo[64], hi[64];
  if (o->type == DS_OT_BOOL || o->type == DS_OT_ENUM || o->type == DS_OT_SERIES) return DS_OK;
  int bad = o->min_excl ? !(v > o->min) : !(v >= o->min);
  bad = bad || v > o->max;
  if (!bad) return DS_OK;
  ds_opt_format(o, v, got, sizeof got);
  ds_opt_format(o, o->min, lo, sizeof lo);
  ds_opt_format(o, o->max, hi, sizeof hi);
  if (o->min_excl)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be > %s, got %s", file, line, col, o->path, lo, got);
  if (o->max >= (o->type == DS_OT_INT ? (double)INT_MAX : 1e18))
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be >= %s, got %s", file, line, col, o->path, lo, got);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be in %s..%s, got %s", file, line, col, o->path, lo,
                 hi, got);
}

static int opt_type_error(const char *file, const ds_option *o, const ds_yn *v, const char *what) {
  if (v->kind != DS_YN_SCALAR)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got %s", file, v->line, v->col, o->path,
                   what, ds_yaml_kind_name(v));
  if (!v->str[0] && !v->quoted)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got an empty value", file, v->line, v->col,
                   o->path, what);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got '%s'", file, v->line, v->col, o->path,
                 what, v->str);
}

static int opt_parse_enum(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  int nc = 0;
  while (o->choices[nc]) nc++;
  if (v->kind == DS_YN_SCALAR) {
    for (int i = 0; i < nc; i++)
      if (strcmp(v->str, o->choices[i]) == 0) return *val = i, DS_OK;
  }
  char list[256];
  opt_choices(o->choices, list, sizeof list);
  const char *sug = v->kind == DS_YN_SCALAR ? ds_suggest(v->str, o->choices, nc) : NULL;
  if (sug)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected one of %s, got '%s' (did you mean '%s'?)", file,
                   v->line, v->col, o->path, list, v->str, sug);
  char what[300];
  snprintf(what, sizeof what, "one of %s", list);
  return opt_type_error(file, o, v, what);
}

int ds_opt_parse_scalar(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  double x = 0;
  if (o->type == DS_OT_SERIES) return ds_opt_parse_series(file, o, v, val);
  if (o->type == DS_OT_ENUM) return opt_parse_enum(file, o, v, val);
  if (v->kind != DS_YN_SCALAR) goto bad_type;
  switch (o->type) {
  case DS_OT_BOOL:
    if (!opt_parse_bool(v->str, &x)) goto bad_type;
    break;
  case DS_OT_INT:
  case DS_OT_INT64:
    if (!opt_strtod(v->str, &x)) goto bad_type;
    if (x != floor(x)) goto bad_type;
    if (fabs(x) > 9.0e15) { /* beyond exact doubles: certainly out of range */
      return ds_opt_check_range(file, o, x, v->line, v->col);
    }
    break;
  case DS_OT_DOUBLE:
    if (!opt_strtod(v->str, &x)) goto bad_type;
    break;
  default: break;
  }
  DS_TRY(ds_opt_check_range(file, o, x, v->line, v->col));
  *val = x;
  return DS_OK;
bad_type:
  return opt_type_error(file, o, v,
                        o->type == DS_OT_BOOL     ? "true or false"
                        : o->type == DS_OT_DOUBLE ? "a number"
                                                  : "an integer");
}

int ds_opt_parse_series(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  char list[256];
  opt_choices(ds_series_names, list, sizeof list);
  if (v->kind != DS_YN_SEQ)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected a list such as [loss, test_loss], got %s", file,
                   v->line, v->col, o->path, ds_yaml_kind_name(v));
  if (v->n == 0)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: empty list; name at least one of %s", file, v->line,
                   v->col, o->path, list);
  unsigned bits = 0;
  for (int i = 0; i < v->n; i++) {
    const ds_yn *it = v->item[i];
    int b = -1;
    for (int k = 0; it->kind == DS_YN_SCALAR && ds_series_names[k]; k++)
      if (strcmp(it->str, ds_series_names[k]) == 0) b = k;
    if (b < 0) {
      const char *sug = it->kind == DS_YN_SCALAR ? ds_suggest(it->str, ds_series_names, 6) : NULL;
      if (sug)
        return ds_fail(DS_EINPUT, "%s:%d:%d: %s: unknown series '%s' (did you mean '%s'?)", file,
                       it->line, it->col, o->path, it->str, sug);
      return ds_fail(DS_EINPUT, "%s:%d:%d: %s: unknown series %s%s%s; valid: %s", file, it->line,
                     it->col, o->path, it->kind == DS_YN_SCALAR ? "'" : "",
                     it->kind == DS_YN_SCALAR ? it->str : ds_yaml_kind_name(it),
                     it->kind == DS_YN_SCALAR ? "'" : "", list);
    }
    if (bits & (1u << b))
      return ds_fail(DS_EINPUT, "%s:%d:%d: %s: series '%s' listed twice; list each once", file,
                     it->line, it->col, o->path, it->str);
    bits |= 1u << b;
  }
  *val = bits;
  return DS_OK;
}

/* ---- suggestions --------------------------------------------------------- */

int ds_edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++) {
    for (int j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int m = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < m) m = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < m) m = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m)
        m = d[i - 2][j - 2] + 1; /* transposition */
      d[i][j] = m;
    }
  }
  return d[la][lb];
}

const char *ds_suggest(const char *key, const char *const *cands, int n) {
  const char *best = NULL;
  int bd = 3, len = (int)strlen(key);
  for (int i = 0; i < n; i++) {
    int d = ds_edit_distance(key, cands[i]);
    if (d < bd && 2 * d < len + 1) {
      bd = d;
      best = cands[i];
    }
  }
  return best;
}
