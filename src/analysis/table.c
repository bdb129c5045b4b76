/* table.c -- a store as a table: summary rows, named columns materialised on
 * demand (summary fields, grid parameters decoded from the stored sweep file,
 * any option path), --where conditions and --sort keys. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "dynsweep/analysis.h"
#include "dynsweep/outcome.h"
#include "dynsweep/util.h"

static const char *const field_names[AN_F_COUNT] = {
    "id", "combo", "replica", "status", "steps", "final_loss", "min_loss", "final_test_loss",
    "diverged_step", "wall_s", "rank", "reason", "outcome", "event_step", "peak_ratio",
    "plateaus", "plateau_end", "steps_to_tol", "team_size", "attempts", "eta", "lambda0", "eta_crit0",
    "lr_lambda0", "lr_eta_crit"};

const char *an_field_name(int f) { return f >= 0 && f < AN_F_COUNT ? field_names[f] : "?"; }

/* The summary columns (DS_SUMMARY_COLUMNS, store.h): name, offset in
 * ds_summary_row and kind ("I" int64, "i" int32, "d" double, "s" text). A
 * field of field_names that is one of these numbers is read from here, so a
 * new number column needs no case in materialise. */
#define AN_SUMMARY_COLUMN(name, kind) {#name, offsetof(ds_summary_row, name), #kind},
static const struct {
  const char *name;
  size_t off;
  const char *kind;
} summary_columns[] = {DS_SUMMARY_COLUMNS(AN_SUMMARY_COLUMN)};
#undef AN_SUMMARY_COLUMN
enum { NSUMMARY_COLUMNS = sizeof summary_columns / sizeof summary_columns[0] };

/* the index in summary_columns of the number column name, or -1 */
static int summary_number_column(const char *name) {
  for (int k = 0; k < NSUMMARY_COLUMNS; k++)
    if (!strcmp(summary_columns[k].name, name)) return summary_columns[k].kind[0] == 's' ? -1 : k;
  return -1;
}

static double summary_number(const ds_summary_row *r, int k) {
  const char *p = (const char *)r + summary_columns[k].off;
  switch (summary_columns[k].kind[0]) {
  case 'I': { int64_t x; memcpy(&x, p, sizeof x); return (double)x; }
  case 'i': { int32_t x; memcpy(&x, p, sizeof x); return x; }
  default: { double x; memcpy(&x, p, sizeof x); return x; }
  }
}

/* ---- outcome categories (analysis.h) ---------------------------------------- */

static const char *const oc_names[DS_OC_COUNT] = {"converged", "catapult", "diverged", "plateaus",
                                                  "failed",    "pending",  "unconverged"};

/* Stored codes (worker.h DS_OUT_*): 2 catapult, 5 unconverged, 6 converged; 0 in
 * a store written before issue 24 means "finished without diverging": an_open
 * re-classifies such rows by dynsweep/outcome.h (see legacy_outcomes). */
int ds_outcome_category(const ds_summary_row *r) {
  switch (r->status) {
  case DS_ST_DONE:
    if (r->outcome == 2) return DS_OC_CATAPULT; /* DS_OUT_CATAPULT (worker.h) */
    if (r->outcome == 5) return DS_OC_UNCONVERGED; /* DS_OUT_UNCONVERGED */
    return r->plateaus >= 1 ? DS_OC_PLATEAUS : DS_OC_CONVERGED;
  case DS_ST_DIVERGED: return DS_OC_DIVERGED;
  case DS_ST_FAILED: return DS_OC_FAILED;
  default: return DS_OC_PENDING; /* pending, running */
  }
}

/* ---- short numbers (analysis.h) --------------------------------------------- */

static int exact_digits(double v) {
  char b[40];
  for (int p = 1; p < 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strtod(b, NULL) == v) return p;
  }
  return 17;
}

void ds_short_format(double v, int P, char *buf, int len) {
  if (!isfinite(v)) {
    snprintf(buf, (size_t)len, "%g", v);
    return;
  }
  int r = exact_digits(v), ip = 0; /* the integer part is never rounded */
  for (double a = fabs(v); a >= 1 && ip < 17; a /= 10) ip++;
  if (P > 0 && P < ip) P = ip;
  snprintf(buf, (size_t)len, "%.*g", P > 0 && P < r ? P : r, v);
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int ds_short_digits(const double *v, int n) {
  double *u = malloc((size_t)(n > 0 ? n : 1) * sizeof *u);
  if (!u) return 17;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) u[m++] = v[i];
  qsort(u, (size_t)m, sizeof *u, cmp_dbl);
  int P = 3;
  for (; P < 17; P++) { /* rounding is monotone: only neighbours can collide */
    int clash = 0;
    char a[40], b[40];
    for (int i = 1; i < m && !clash; i++) {
      if (u[i] == u[i - 1]) continue;
      ds_short_format(u[i - 1], P, a, sizeof a);
      ds_short_format(u[i], P, b, sizeof b);
      clash = !strcmp(a, b);
    }
    if (!clash) break;
  }
  free(u);
  return P;
}

const char *ds_outcome_category_name(int oc) {
  return oc >= 0 && oc < DS_OC_COUNT ? oc_names[oc] : "unknown";
}

char ds_outcome_category_letter(int oc) {
  return oc >= 0 && oc < DS_OC_COUNT ? "cCDPF.u"[oc] : '?';
}

static const struct { const char *alias, *path; } aliases[] = {
    {"width", "model.width"}, {"depth", "model.depth"}, {"lr", "optimizer.lr"},
    {"init_scale", "model.init_scale"}};

int an_bad_args(const char *usage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "dynsweep: ");
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  an_short_usage(usage);
  return 2;
}

void ds_short_usage(const char *usage) { an_short_usage(usage); }

void an_short_usage(const char *usage) {
  /* the usage lines (up to the first blank line), then where the help is */
  const char *end = strstr(usage, "\n\n");
  int len = end ? (int)(end - usage) : (int)strlen(usage);
  char cmd[32] = "";
  const char *d = strstr(usage, "dynsweep ");
  if (d) sscanf(d, "dynsweep %31s", cmd);
  if (!strcmp(cmd, "COMMAND")) cmd[0] = 0;
  fprintf(stderr, "%.*s\n(dynsweep %s%s--help for every option)\n", len, usage, cmd, *cmd ? " " : "");
}

int an_want_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  return 0;
}

int an_fail(an_table *t, int rc) {
  fprintf(stderr, "dynsweep: %s\n", ds_errmsg());
  if (t) an_close(t);
  return ds_exit_code(rc);
}

int an_parse_number(const char *s, double *v) {
  if (!*s || isspace((unsigned char)*s)) return 0;
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *end == 0 && end != s;
}

/* Issue 24: a done row with outcome code 0 (DS_OUT_CONVERGED) was written before
 * "converged" had a criterion (then it meant "did not diverge"). Its stored loss
 * series, train.steps and train.tol decide it by the rule of dynsweep/outcome.h,
 * the same rule the worker applies now: code 6 (converged) or 5 (unconverged),
 * in memory only. Stores of this version hold no such rows: nothing is read. */
static int legacy_outcomes(an_table *t) {
  for (int64_t i = 0; i < t->n; i++) {
    ds_summary_row *r = &t->rows[i];
    if (r->status != DS_ST_DONE || r->outcome != 0) continue;
    ds_point p;
    if (ds_sweep_point(&t->sw, r->combo * t->sw.replicas + r->replica, &p) != DS_OK) {
      ds_clear_error(); /* reported by the column that needs the point */
      continue;
    }
    const ds_train_spec *tr = &p.cfg.train;
    int conv = tr->tol > 0 && r->final_loss < tr->tol;
    if (!conv) {
      ds_traj traj;
      ds_traj_init(&traj);
      int rc = ds_store_read_traj(t->st, r->id, &traj);
      if (rc == DS_OK) {
        int li = ds_traj_find(&traj, "loss");
        if (li >= 0)
          conv = ds_outcome_converged(traj.s[li].step, traj.s[li].val, traj.s[li].n, tr->steps,
                                      tr->tol, r->final_loss);
      } else {
        ds_clear_error();
      }
      ds_traj_free(&traj);
    }
    r->outcome = conv ? 6 : 5;
  }
  return DS_OK;
}

int an_open(const char *path, an_table *t) {
  memset(t, 0, sizeof *t);
  t->path = path;
  char *text = NULL;
  int rc = ds_store_open(path, &t->st);
  if (rc == DS_OK) rc = ds_store_read_summary(t->st, &t->rows, &t->n);
  if (rc == DS_OK) rc = ds_store_sweep_text(t->st, &text);
  if (rc == DS_OK) {
    rc = ds_sweep_parse_flags(path, text, DS_SWEEP_NO_FILES, &t->sw);
    if (rc == DS_OK) t->have_sw = 1;
    else ds_context(rc, "%s: the stored sweep file", path);
  }
  free(text);
  if (rc == DS_OK && t->have_sw) rc = legacy_outcomes(t);
  return rc;
}

void an_close(an_table *t) {
  for (int c = 0; c < t->ncols; c++) {
    an_col *col = &t->cols[c];
    if (col->s)
      for (int64_t i = 0; i < t->n; i++) free(col->s[i]);
    free(col->s);
    free(col->v);
    free(col->isnum);
    free(col->empty);
  }
  free(t->cols);
  free(t->lam0);
  free(t->eta0);
  free(t->eta);
  if (t->have_sw) ds_sweep_free(&t->sw);
  free(t->rows);
  if (t->st) ds_store_close(t->st);
  memset(t, 0, sizeof *t);
}

/* ---- columns ------------------------------------------------------------- */

static int valid_names_error(an_table *t, const char *name) {
  char buf[2048];
  int used = snprintf(buf, sizeof buf, "summary columns: ");
  for (int f = 0; f < AN_F_COUNT; f++)
    used += snprintf(buf + used, sizeof buf - (size_t)used, "%s%s", f ? ", " : "", field_names[f]);
  used += snprintf(buf + used, sizeof buf - (size_t)used, " (point = id); grid parameters: ");
  for (int a = 0; a < t->sw.naxes && used < (int)sizeof buf; a++)
    used += snprintf(buf + used, sizeof buf - (size_t)used, "%s%s", a ? ", " : "",
                     t->sw.axes[a].name);
  if (!t->sw.naxes) used += snprintf(buf + used, sizeof buf - (size_t)used, "(none)");
  if (used < (int)sizeof buf)
    snprintf(buf + used, sizeof buf - (size_t)used,
             "; or width, depth, lr, init_scale, or any option path such as train.steps, "
             "loss.reduction (docs/sweep-spec.md)");
  /* did you mean: summary fields, point, axes (names and paths), aliases, option paths */
  const char *cands[AN_F_COUNT + 1 + 2 * DS_MAX_AXES + 8];
  int nc = 0;
  for (int f = 0; f < AN_F_COUNT; f++) cands[nc++] = field_names[f];
  cands[nc++] = "point";
  for (int a = 0; a < t->sw.naxes && a < DS_MAX_AXES; a++)
    cands[nc++] = t->sw.axes[a].name, cands[nc++] = t->sw.axes[a].path;
  for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++) cands[nc++] = aliases[k].alias;
  const char *sug = ds_suggest(name, cands, nc);
  if (!sug) sug = ds_opt_suggest(name);
  if (sug)
    return ds_fail(DS_EINPUT, "%s: unknown column '%s' (did you mean '%s'?); valid names: %s",
                   t->path, name, sug, buf);
  return ds_fail(DS_EINPUT, "%s: unknown column '%s'; valid names: %s", t->path, name, buf);
}

/* Resolve NAME: field (is_param 0) or option path (is_param 1) and display name. */
static int resolve(an_table *t, const char *name, an_col *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  if (!strcmp(name, "point")) name = "id";
  for (int f = 0; f < AN_F_COUNT; f++)
    if (!strcmp(name, field_names[f])) {
      c->field = (an_field)f;
      snprintf(c->name, sizeof c->name, "%s", field_names[f]);
      return DS_OK;
    }
  c->is_param = 1;
  for (int a = 0; a < t->sw.naxes; a++)
    if (!strcmp(name, t->sw.axes[a].name) || !strcmp(name, t->sw.axes[a].path)) {
      snprintf(c->path, sizeof c->path, "%s", t->sw.axes[a].path);
      snprintf(c->name, sizeof c->name, "%s", t->sw.axes[a].name);
      return DS_OK;
    }
  for (size_t k = 0; k < sizeof aliases / sizeof aliases[0]; k++)
    if (!strcmp(name, aliases[k].alias) || !strcmp(name, aliases[k].path)) {
      snprintf(c->path, sizeof c->path, "%s", aliases[k].path);
      snprintf(c->name, sizeof c->name, "%s", aliases[k].alias);
      return DS_OK;
    }
  char buf[16];
  if (strlen(name) < sizeof c->path && strchr(name, '.') &&
      ds_cfg_get_text(&t->sw.base, name, buf, sizeof buf) == DS_OK) {
    snprintf(c->path, sizeof c->path, "%s", name);
    return DS_OK;
  }
  ds_clear_error();
  return valid_names_error(t, name);
}

/* lambda0 and eta_crit0 of every written point: the step-0 records of ntk/top and
 * ntk/critical_lr, else of hessian/top (eta_crit0 = 2 / lambda0, the GD stability
 * threshold of the sharpness). One record per series and point is read.
 * eta (issue 24), the absolute learning rate: optimizer.lr under lr_units
 * absolute; under lr_units lambda0 (the grid's lr is eta * lambda_0) the stored
 * series eta (step 0), else, in stores before it, lr / ntk/top at step 0 (the
 * same NTK the rates were divided by: exact up to round-off), else unknown.
 * Under lr_units lambda0 a point without ntk/top gets lambda0 = lr / eta (the
 * NTK eigenvalue its rates were divided by). */
static int load_normalised(an_table *t) {
  if (t->lam0) return DS_OK;
  size_t n = t->n > 0 ? (size_t)t->n : 1;
  t->lam0 = malloc(n * sizeof *t->lam0);
  t->eta0 = malloc(n * sizeof *t->eta0);
  t->eta = malloc(n * sizeof *t->eta);
  if (!t->lam0 || !t->eta0 || !t->eta)
    return ds_fail(DS_ENOMEM, "out of memory for a column of %lld rows", (long long)t->n);
  for (int64_t i = 0; i < t->n; i++) {
    const ds_summary_row *r = &t->rows[i];
    t->lam0[i] = t->eta0[i] = t->eta[i] = NAN;
    if (r->status == DS_ST_PENDING || r->status == DS_ST_RUNNING) continue;
    int units = DS_LR_ABSOLUTE;
    ds_point p;
    if (t->have_sw && ds_sweep_point(&t->sw, r->combo * t->sw.replicas + r->replica, &p) == DS_OK)
      units = p.cfg.optimizer.lr_units;
    else
      ds_clear_error();
    int64_t step;
    double v;
    int found;
    if (units == DS_LR_LAMBDA0) {
      DS_TRY(ds_store_read_first(t->st, r->id, "eta", &step, &v, &found));
      if (found && step == 0) t->eta[i] = v;
    } else {
      t->eta[i] = r->lr;
    }
    DS_TRY(ds_store_read_first(t->st, r->id, "ntk/top", &step, &v, &found));
    if (found && step == 0) {
      t->lam0[i] = v;
      if (units == DS_LR_LAMBDA0 && isnan(t->eta[i])) t->eta[i] = r->lr / v;
      DS_TRY(ds_store_read_first(t->st, r->id, "ntk/critical_lr", &step, &v, &found));
      if (found && step == 0) t->eta0[i] = v;
      continue;
    }
    if (units == DS_LR_LAMBDA0 && isfinite(t->eta[i]) && t->eta[i] > 0) {
      t->lam0[i] = r->lr / t->eta[i];
      continue;
    }
    DS_TRY(ds_store_read_first(t->st, r->id, "hessian/top", &step, &v, &found));
    if (found && step == 0) {
      t->lam0[i] = v;
      t->eta0[i] = 2.0 / v;
    }
  }
  return DS_OK;
}

static int normalised(const an_col *c) {
  return !c->is_param && c->field >= AN_F_LAMBDA0 && c->field <= AN_F_LR_ETA_CRIT;
}

int an_col_is_normalised(const an_table *t, int c) { return normalised(&t->cols[c]); }

static int materialise(an_table *t, an_col *c) {
  int64_t n = t->n > 0 ? t->n : 1;
  c->v = calloc((size_t)n, sizeof *c->v);
  c->isnum = calloc((size_t)n, 1);
  c->empty = calloc((size_t)n, 1);
  int text = c->is_param || c->field == AN_F_STATUS || c->field == AN_F_REASON ||
             c->field == AN_F_OUTCOME;
  if (text) c->s = calloc((size_t)n, sizeof *c->s);
  if (!c->v || !c->isnum || !c->empty || (text && !c->s))
    return ds_fail(DS_ENOMEM, "out of memory for a column of %lld rows", (long long)t->n);
  int need_cfg = c->is_param || c->field == AN_F_STEPS_TO_TOL;
  int sum = c->is_param || text ? -1 : summary_number_column(field_names[c->field]);
  if (normalised(c) || (!c->is_param && c->field == AN_F_ETA)) DS_TRY(load_normalised(t));
  for (int64_t i = 0; i < t->n; i++) {
    const ds_summary_row *r = &t->rows[i];
    ds_point p;
    if (need_cfg) {
      /* the sweep index, not the store id: an extended store keeps old ids */
      int rc = ds_sweep_point(&t->sw, r->combo * t->sw.replicas + r->replica, &p);
      if (rc != DS_OK)
        return ds_context(rc, "%s: row %lld (point %lld) does not match the stored sweep", t->path,
                          (long long)i, (long long)r->id);
    }
    double v = NAN;
    int isnum = 1;
    if (c->is_param) {
      char buf[512];
      ds_cfg_get_text(&p.cfg, c->path, buf, sizeof buf);
      if (!(c->s[i] = strdup(buf))) return ds_fail(DS_ENOMEM, "out of memory");
      isnum = an_parse_number(buf, &v);
      if (!isnum) v = NAN;
    } else if (sum >= 0) {
      v = summary_number(r, sum);
    } else {
      switch (c->field) {
      case AN_F_STATUS:
        v = r->status;
        if (!(c->s[i] = strdup(ds_status_name(r->status)))) return ds_fail(DS_ENOMEM, "out of memory");
        break;
      case AN_F_REASON: {
        char buf[sizeof r->reason + 1];
        memcpy(buf, r->reason, sizeof r->reason);
        buf[sizeof r->reason] = 0;
        if (!(c->s[i] = strdup(buf))) return ds_fail(DS_ENOMEM, "out of memory");
        isnum = 0;
        break;
      }
      case AN_F_OUTCOME: /* the named category, compared by text */
        v = ds_outcome_category(r);
        isnum = 0;
        if (!(c->s[i] = strdup(ds_outcome_category_name(ds_outcome_category(r)))))
          return ds_fail(DS_ENOMEM, "out of memory");
        break;
      case AN_F_LAMBDA0: v = t->lam0[i]; break;
      case AN_F_ETA_CRIT0: v = t->eta0[i]; break;
      case AN_F_ETA: v = t->eta[i]; break;
      case AN_F_LR_LAMBDA0: v = t->eta[i] * t->lam0[i]; break;
      case AN_F_LR_ETA_CRIT: v = t->eta[i] / t->eta0[i]; break;
      case AN_F_STEPS_TO_TOL:
        /* reached the tolerance: finished as done with the last loss below train.tol */
        if (r->status == DS_ST_DONE && p.cfg.train.tol > 0 && r->final_loss < p.cfg.train.tol)
          v = (double)r->steps;
        else isnum = 0, c->empty[i] = 1;
        break;
      default: break;
      }
    }
    if ((normalised(c) || (!c->is_param && c->field == AN_F_ETA)) && isnan(v))
      isnum = 0, c->empty[i] = 1; /* not recorded at step 0; eta: not known */
    c->v[i] = v;
    c->isnum[i] = (char)isnum;
  }
  if (c->is_param) { /* numeric values print in the shortest form that tells them apart */
    double *u = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *u);
    int m = 0;
    if (!u) return ds_fail(DS_ENOMEM, "out of memory");
    for (int64_t i = 0; i < t->n && m < INT32_MAX; i++)
      if (c->isnum[i]) u[m++] = c->v[i];
    c->digits = m ? ds_short_digits(u, m) : 0;
    free(u);
  }
  return DS_OK;
}

int an_col_get(an_table *t, const char *name, int *idx) {
  an_col c;
  DS_TRY(resolve(t, name, &c));
  for (int i = 0; i < t->ncols; i++)
    if (t->cols[i].is_param == c.is_param &&
        (c.is_param ? !strcmp(t->cols[i].path, c.path) : t->cols[i].field == c.field)) {
      *idx = i;
      return DS_OK;
    }
  if (t->ncols == t->capcols) {
    int cap = t->capcols ? 2 * t->capcols : 16;
    an_col *nc = realloc(t->cols, (size_t)cap * sizeof *nc);
    if (!nc) return ds_fail(DS_ENOMEM, "out of memory");
    t->cols = nc;
    t->capcols = cap;
  }
  t->cols[t->ncols] = c;
  int rc = materialise(t, &t->cols[t->ncols]);
  t->ncols++; /* even on failure, so an_close frees what was allocated */
  if (rc != DS_OK) return rc;
  *idx = t->ncols - 1;
  return DS_OK;
}

int an_axis_cols(an_table *t, int *idx, int *n) {
  *n = 0;
  for (int a = 0; a < t->sw.naxes; a++) DS_TRY(an_col_get(t, t->sw.axes[a].path, &idx[(*n)++]));
  return DS_OK;
}

void an_cell_text(const an_table *t, int col, int64_t row, char *buf, int n, int exact) {
  const an_col *c = &t->cols[col];
  if (c->empty[row]) buf[0] = 0;
  else if (!exact && c->digits && c->isnum[row]) ds_short_format(c->v[row], c->digits, buf, n);
  else if (c->s) snprintf(buf, (size_t)n, "%s", c->s[row]);
  else {
    double v = c->v[row];
    if (v == floor(v) && fabs(v) < 1e15) snprintf(buf, (size_t)n, "%.0f", v);
    else snprintf(buf, (size_t)n, exact ? "%.17g" : "%.5g", v);
  }
}

/* ---- --where ------------------------------------------------------------- */

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

static const char *op_text(an_op op) {
  static const char *const t[] = {"=", "!=", "<", "<=", ">", ">="};
  return t[op];
}

/* Distinct values of a column as printed (numbers ascending), for messages. */
static void distinct_values(const an_table *t, const an_col *c, char *buf, int n) {
  int used = 0, count = 0;
  buf[0] = 0;
  int col = (int)(c - t->cols);
  int numeric = c->digits > 0;
  for (int64_t i = 0; i < t->n; i++) numeric &= c->isnum[i] || c->empty[i];
  char seen[20][64];
  double sv[20];
  for (int64_t i = 0; i < t->n && count < 21 && i < 100000; i++) {
    if (c->empty[i]) continue;
    char b[64];
    an_cell_text(t, col, i, b, sizeof b, 0);
    int dup = 0;
    for (int j = 0; j < count && j < 20 && !dup; j++) dup = !strcmp(seen[j], b);
    if (dup) continue;
    if (count < 20) snprintf(seen[count], sizeof seen[count], "%s", b), sv[count] = c->v[i];
    count++;
  }
  int m = count < 20 ? count : 20;
  if (numeric) /* ascending */
    for (int a = 1; a < m; a++)
      for (int b = a; b > 0 && sv[b] < sv[b - 1]; b--) {
        double x = sv[b];
        sv[b] = sv[b - 1], sv[b - 1] = x;
        char tmp[64];
        memcpy(tmp, seen[b], 64), memcpy(seen[b], seen[b - 1], 64), memcpy(seen[b - 1], tmp, 64);
      }
  for (int j = 0; j < m && used < n - 8; j++)
    used += snprintf(buf + used, (size_t)(n - used), "%s%s", j ? ", " : "", seen[j]);
  if (count > 20 && used < n - 8) snprintf(buf + used, (size_t)(n - used), ", ...");
}

void an_no_match_note(const an_table *t, const an_cond *cs, int n, const char *where) {
  fprintf(stderr, "dynsweep: no point matches --where '%s'", where ? where : "");
  int any = 0;
  for (int j = 0; j < n; j++) {
    const an_col *c = &t->cols[cs[j].col];
    int dup = 0;
    for (int i = 0; i < j; i++) dup |= cs[i].col == cs[j].col;
    if (dup || !c->is_param) continue;
    char vals[1024];
    distinct_values(t, c, vals, sizeof vals);
    fprintf(stderr, "%s %s: %s", any++ ? ";" : "; the values of", c->name, vals);
  }
  fprintf(stderr, "\n");
}

static int check_cond(an_table *t, an_cond *k) {
  const an_col *c = &t->cols[k->col];
  int any_num = 0, any_text = 0, match = 0;
  for (int64_t i = 0; i < t->n; i++) {
    if (c->isnum[i]) any_num = 1;
    else if (c->s) any_text = 1;
    if (!k->val_isnum && c->s && !strcmp(c->s[i], k->val)) match = 1;
  }
  if (k->val_isnum && c->is_param && c->digits && (k->op == AN_EQ || k->op == AN_NE)) {
    /* a grid value: the nearest one within 1% (so printed, rounded values match) */
    double best = NAN;
    for (int64_t i = 0; i < t->n; i++)
      if (c->isnum[i] && (isnan(best) || fabs(c->v[i] - k->num) < fabs(best - k->num))) best = c->v[i];
    if (!isnan(best) && fabs(best - k->num) <= 0.01 * fabs(best)) {
      k->num = best;
      return DS_OK;
    }
    char vals[1024];
    distinct_values(t, c, vals, sizeof vals);
    return ds_fail(DS_EINPUT, "--where %s%s%s: no point has %s = %s (nor within 1%%); its values: %s",
                   c->name, op_text(k->op), k->val, c->name, k->val, vals);
  }
  if (k->val_isnum) return DS_OK; /* numbers compare with numbers, or as text with text */
  if (k->op != AN_EQ && k->op != AN_NE)
    return ds_fail(DS_EINPUT, "--where %s%s%s: '%s' needs a number", c->name, op_text(k->op),
                   k->val, op_text(k->op));
  if (!c->s && any_num)
    return ds_fail(DS_EINPUT, "--where %s%s%s: %s is numeric and '%s' is not a number", c->name,
                   op_text(k->op), k->val, c->name, k->val);
  if (!c->is_param && c->field == AN_F_STATUS) {
    for (int s = 0; s <= DS_ST_RUNNING; s++)
      if (!strcmp(k->val, ds_status_name(s))) return DS_OK;
    return ds_fail(DS_EINPUT,
                   "--where status%s%s: unknown status; use pending, done, diverged, failed, running",
                   op_text(k->op), k->val);
  }
  if (!c->is_param && c->field == AN_F_OUTCOME) {
    for (int o = 0; o < DS_OC_COUNT; o++)
      if (!strcmp(k->val, ds_outcome_category_name(o))) return DS_OK;
    return ds_fail(DS_EINPUT,
                   "--where outcome%s%s: unknown outcome; use converged, unconverged, catapult, "
                   "diverged, plateaus, failed, pending",
                   op_text(k->op), k->val);
  }
  if (c->is_param && any_text && !match) {
    char vals[1024];
    distinct_values(t, c, vals, sizeof vals);
    return ds_fail(DS_EINPUT, "--where %s%s%s: no point has %s = '%s'; its values: %s", c->name,
                   op_text(k->op), k->val, c->name, k->val, vals);
  }
  return DS_OK;
}

int an_parse_where(an_table *t, const char *spec, an_cond **conds, int *n) {
  *conds = NULL;
  *n = 0;
  if (!spec || !*spec) return DS_OK;
  char *copy = strdup(spec);
  if (!copy) return ds_fail(DS_ENOMEM, "out of memory");
  int cap = 1;
  for (const char *p = spec; *p; p++) cap += *p == ',';
  an_cond *cs = calloc((size_t)cap, sizeof *cs);
  if (!cs) {
    free(copy);
    return ds_fail(DS_ENOMEM, "out of memory");
  }
  int rc = DS_OK, m = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == DS_OK; tok = strtok_r(NULL, ",", &save)) {
    char *s = trim(tok);
    if (!*s) continue;
    char *o = strpbrk(s, "=!<>");
    if (!o || o == s) {
      rc = ds_fail(DS_EINPUT, "--where: '%s' is not a condition NAME OP VALUE (OP one of = != < <= > >=)", s);
      break;
    }
    an_cond *k = &cs[m];
    int len = 1;
    if (o[0] == '!' && o[1] == '=') k->op = AN_NE, len = 2;
    else if (o[0] == '<' && o[1] == '=') k->op = AN_LE, len = 2;
    else if (o[0] == '>' && o[1] == '=') k->op = AN_GE, len = 2;
    else if (o[0] == '=' && o[1] == '=') k->op = AN_EQ, len = 2;
    else if (o[0] == '<') k->op = AN_LT;
    else if (o[0] == '>') k->op = AN_GT;
    else if (o[0] == '=') k->op = AN_EQ;
    else {
      rc = ds_fail(DS_EINPUT, "--where: '%s': unknown operator (use = != < <= > >=)", s);
      break;
    }
    char *val = trim(o + len);
    *o = 0;
    char *name = trim(s);
    if (!*val) {
      rc = ds_fail(DS_EINPUT, "--where: '%s%s': missing value", name, op_text(k->op));
      break;
    }
    if (strlen(val) >= sizeof k->val) {
      rc = ds_fail(DS_EINPUT, "--where: value of %s too long", name);
      break;
    }
    snprintf(k->val, sizeof k->val, "%s", val);
    k->val_isnum = an_parse_number(val, &k->num);
    if ((rc = an_col_get(t, name, &k->col)) != DS_OK) break;
    if ((rc = check_cond(t, k)) != DS_OK) break;
    m++;
  }
  free(copy);
  if (rc != DS_OK) {
    free(cs);
    return rc;
  }
  *conds = cs;
  *n = m;
  return DS_OK;
}

static int num_eq(double a, double b) {
  return a == b || fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

int an_row_matches(const an_table *t, const an_cond *cs, int n, int64_t row) {
  for (int j = 0; j < n; j++) {
    const an_cond *k = &cs[j];
    const an_col *c = &t->cols[k->col];
    int ok;
    if (c->empty[row]) ok = k->op == AN_NE; /* an empty cell satisfies only != */
    else if (k->val_isnum && c->isnum[row]) {
      double a = c->v[row], b = k->num;
      switch (k->op) {
      case AN_EQ: ok = num_eq(a, b); break;
      case AN_NE: ok = !num_eq(a, b); break;
      case AN_LT: ok = a < b && !num_eq(a, b); break;
      case AN_LE: ok = a <= b || num_eq(a, b); break;
      case AN_GT: ok = a > b && !num_eq(a, b); break;
      default: ok = a >= b || num_eq(a, b); break;
      }
    } else if (c->s && (k->op == AN_EQ || k->op == AN_NE)) {
      ok = (strcmp(c->s[row], k->val) == 0) == (k->op == AN_EQ);
    } else {
      ok = 0; /* e.g. a number against a text cell with < */
    }
    if (!ok) return 0;
  }
  return 1;
}

/* ---- --sort -------------------------------------------------------------- */

int an_parse_sort(an_table *t, const char *spec, an_key **keys, int *n) {
  *keys = NULL;
  *n = 0;
  if (!spec || !*spec) return DS_OK;
  char *copy = strdup(spec);
  int cap = 1;
  for (const char *p = spec; *p; p++) cap += *p == ',';
  an_key *ks = calloc((size_t)cap, sizeof *ks);
  if (!copy || !ks) {
    free(copy);
    free(ks);
    return ds_fail(DS_ENOMEM, "out of memory");
  }
  int rc = DS_OK, m = 0;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *s = trim(tok);
    if (!*s) continue;
    int desc = 0;
    if (*s == '-' || *s == '+') desc = *s++ == '-';
    size_t L = strlen(s);
    if (L > 5 && !strcmp(s + L - 5, ":desc")) desc = 1, s[L - 5] = 0;
    else if (L > 4 && !strcmp(s + L - 4, ":asc")) s[L - 4] = 0;
    if ((rc = an_col_get(t, trim(s), &ks[m].col)) != DS_OK) break;
    ks[m++].desc = desc;
  }
  free(copy);
  if (rc != DS_OK) {
    free(ks);
    return rc;
  }
  *keys = ks;
  *n = m;
  return DS_OK;
}

static const an_table *sort_t;
static const an_key *sort_k;
static int sort_nk;

/* Numbers before text before empty; NaN after every number; ties by row order. */
static int cmp_rows(const void *pa, const void *pb) {
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  for (int j = 0; j < sort_nk; j++) {
    const an_col *c = &sort_t->cols[sort_k[j].col];
    int ca = c->empty[a] ? 3 : c->isnum[a] ? (isnan(c->v[a]) ? 1 : 0) : 2;
    int cb = c->empty[b] ? 3 : c->isnum[b] ? (isnan(c->v[b]) ? 1 : 0) : 2;
    if (ca != cb) return ca < cb ? -1 : 1; /* classes keep their order either way */
    int r = 0;
    if (ca == 0) r = c->v[a] < c->v[b] ? -1 : c->v[a] > c->v[b] ? 1 : 0;
    else if (ca == 2) r = strcmp(c->s[a], c->s[b]);
    if (r) return sort_k[j].desc ? -r : r;
  }
  return a < b ? -1 : a > b;
}

int an_select(an_table *t, const an_cond *c, int nc, const an_key *k, int nk, int64_t **out,
              int64_t *nout) {
  int64_t *sel = malloc((size_t)(t->n > 0 ? t->n : 1) * sizeof *sel), m = 0;
  if (!sel) return ds_fail(DS_ENOMEM, "out of memory");
  for (int64_t i = 0; i < t->n; i++)
    if (an_row_matches(t, c, nc, i)) sel[m++] = i;
  if (nk > 0) {
    sort_t = t, sort_k = k, sort_nk = nk;
    qsort(sel, (size_t)m, sizeof *sel, cmp_rows);
  }
  *out = sel;
  *nout = m;
  return DS_OK;
}
