/* phase.c -- `dynsweep phase`: a metric aggregated over the cells of two
 * parameters, printed as a text grid. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "dynsweep/analysis.h"
#include "dynsweep/util.h"

typedef struct {
  char **key;  /* distinct texts (exact) */
  char **disp; /* as printed (numbers in their shortest distinct form) */
  double *num;
  int n, allnum;
} an_levels;

static void levels_free(an_levels *l) {
  for (int i = 0; i < l->n; i++) free(l->key[i]), free(l->disp ? l->disp[i] : NULL);
  free(l->key);
  free(l->disp);
  free(l->num);
}

static const double *lv_num;
static int cmp_level(const void *a, const void *b) {
  double x = lv_num[*(const int *)a], y = lv_num[*(const int *)b];
  return x < y ? -1 : x > y;
}

/* Lower edge of the bin of width bw that holds v (edges at multiples of bw; a
 * value within 1e-9 bin widths below an edge counts as on it, so 4 lands in
 * [4, 4.5) even when 4/0.5 rounds down). */
static double bin_edge(double v, double bw) { return floor(v / bw + 1e-9) * bw; }

/* A "nice" bin width (1, 2, 2.5 or 5 x 10^k) giving at most 16 bins over the
 * selected rows' values of column c (1 if it has no finite values). */
static double auto_bin(const an_table *t, int c, const int64_t *sel, int64_t nsel) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t j = 0; j < nsel; j++) {
    double v = t->cols[c].v[sel[j]];
    if (t->cols[c].isnum[sel[j]] && isfinite(v)) lo = v < lo ? v : lo, hi = v > hi ? v : hi;
  }
  if (!(hi >= lo)) return 1; /* no values: every row is left out */
  double raw = (hi - lo) / 16;
  if (raw <= 0) raw = fabs(hi) > 0 ? fabs(hi) / 16 : 1;
  double p = pow(10, floor(log10(raw)));
  static const double nice[] = {1, 2, 2.5, 5, 10};
  for (int k = 0; k < 5; k++)
    if (nice[k] * p >= raw * (1 - 1e-12)) return nice[k] * p;
  return 10 * p;
}

/* Distinct values of column c over the selected rows; idx[j] = level of row sel[j].
 * With bw > 0 the levels are the bins [k bw, (k+1) bw), named by their lower edge. */
static int levels(an_table *t, int c, const int64_t *sel, int64_t nsel, double bw, an_levels *l,
                  int *idx) {
  memset(l, 0, sizeof *l);
  l->allnum = 1;
  int cap = 0;
  for (int64_t j = 0; j < nsel; j++) {
    char buf[512];
    double edge = bw > 0 ? bin_edge(t->cols[c].v[sel[j]], bw) : 0;
    if (bw > 0) snprintf(buf, sizeof buf, "%.17g", edge);
    else an_cell_text(t, c, sel[j], buf, sizeof buf, 1);
    int k;
    for (k = 0; k < l->n; k++)
      if (!strcmp(l->key[k], buf)) break;
    if (k == l->n) {
      if (l->n == 100000) return ds_fail(DS_EINPUT, "phase: more than 100000 distinct values of %s", t->cols[c].name);
      if (l->n == cap) {
        cap = cap ? 2 * cap : 16;
        char **nk = realloc(l->key, (size_t)cap * sizeof *nk);
        if (nk) l->key = nk;
        double *nn = realloc(l->num, (size_t)cap * sizeof *nn);
        if (nn) l->num = nn;
        if (!nk || !nn) return ds_fail(DS_ENOMEM, "out of memory");
      }
      if (!(l->key[l->n] = strdup(buf))) return ds_fail(DS_ENOMEM, "out of memory");
      l->num[l->n] = bw > 0 ? edge : t->cols[c].v[sel[j]];
      if (!t->cols[c].isnum[sel[j]] || isnan(l->num[l->n])) l->allnum = 0;
      l->n++;
    }
    idx[j] = k;
  }
  if (l->allnum && l->n > 1) { /* numeric: ascending; else first appearance (grid order) */
    int *perm = malloc((size_t)l->n * sizeof *perm), *rank = malloc((size_t)l->n * sizeof *rank);
    char **key = malloc((size_t)l->n * sizeof *key);
    double *num = malloc((size_t)l->n * sizeof *num);
    if (!perm || !rank || !key || !num) {
      free(perm), free(rank), free(key), free(num);
      return ds_fail(DS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < l->n; i++) perm[i] = i;
    lv_num = l->num;
    qsort(perm, (size_t)l->n, sizeof *perm, cmp_level);
    for (int i = 0; i < l->n; i++) {
      key[i] = l->key[perm[i]];
      num[i] = l->num[perm[i]];
      rank[perm[i]] = i;
    }
    for (int64_t j = 0; j < nsel; j++) idx[j] = rank[idx[j]];
    free(l->key), free(l->num), free(perm), free(rank);
    l->key = key;
    l->num = num;
  }
  /* labels: the display text of a row of each level */
  if (!(l->disp = calloc((size_t)(l->n > 0 ? l->n : 1), sizeof *l->disp))) return ds_fail(DS_ENOMEM, "out of memory");
  for (int64_t j = 0; j < nsel; j++) {
    if (l->disp[idx[j]]) continue;
    char buf[512];
    if (bw > 0) snprintf(buf, sizeof buf, "%.4g", l->num[idx[j]]);
    else an_cell_text(t, c, sel[j], buf, sizeof buf, 0);
    if (!(l->disp[idx[j]] = strdup(buf))) return ds_fail(DS_ENOMEM, "out of memory");
  }
  return DS_OK;
}

typedef enum { AG_MEAN, AG_MIN, AG_MAX, AG_COUNT } an_agg;

/* A header line: "# " and the text, wrapped at spaces to fit 80 columns
 * (continuation lines "#   "); a word longer than the line is not cut. */
static void comment(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void comment(const char *fmt, ...) {
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  const char *p = buf;
  int first = 1;
  while (*p) {
    int room = first ? 78 : 76, n = (int)strlen(p);
    if (n > room) {
      int cut = room;
      while (cut > 0 && p[cut] != ' ') cut--;
      if (cut == 0) /* one long word: up to the next space */
        for (cut = room; p[cut] && p[cut] != ' '; cut++) {}
      n = cut;
    }
    printf("%s%.*s\n", first ? "# " : "#   ", n, p);
    p += n;
    while (*p == ' ') p++;
    first = 0;
  }
}

/* Severity of an outcome category for ties: F > D > C > P > u > . > c. */
static int severity(int oc) {
  static const int sev[DS_OC_COUNT] = {[DS_OC_CONVERGED] = 0, [DS_OC_PENDING] = 1,
                                       [DS_OC_UNCONVERGED] = 2, [DS_OC_PLATEAUS] = 3,
                                       [DS_OC_CATAPULT] = 4,  [DS_OC_DIVERGED] = 5,
                                       [DS_OC_FAILED] = 6};
  return sev[oc];
}

int ds_cli_phase(int argc, char **argv) {
  if (an_want_help(argc, argv)) {
    fputs(ds_usage_phase, stdout);
    return 0;
  }
  const char *path = NULL, *xs = NULL, *ys = NULL, *metric = "outcome", *aggs = NULL, *where = NULL,
             *digs = NULL, *xbins = NULL, *ybins = NULL;
  int shares = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--shares")) {
      shares = 1;
      continue;
    }
    const char **dst = !strcmp(a, "--x")        ? &xs
                       : !strcmp(a, "--y")      ? &ys
                       : !strcmp(a, "--metric") ? &metric
                       : !strcmp(a, "--agg")    ? &aggs
                       : !strcmp(a, "--where")  ? &where
                       : !strcmp(a, "--digits") ? &digs
                       : !strcmp(a, "--x-bin")  ? &xbins
                       : !strcmp(a, "--y-bin")  ? &ybins
                                                : NULL;
    if (dst) {
      if (++i == argc) return an_bad_args(ds_usage_phase, "phase: %s needs a value", a);
      *dst = argv[i];
    } else if (a[0] == '-') return an_bad_args(ds_usage_phase, "phase: unknown option '%s'", a);
    else if (!path) path = a;
    else return an_bad_args(ds_usage_phase, "phase: unexpected argument '%s'", a);
  }
  if (!path) return an_bad_args(ds_usage_phase, "phase: expected a store file%s", "");
  if (!xs || !ys) return an_bad_args(ds_usage_phase, "phase: --x and --y are required%s", "");
  an_agg agg = AG_MEAN;
  if (aggs) {
    if (!strcmp(aggs, "mean")) agg = AG_MEAN;
    else if (!strcmp(aggs, "min")) agg = AG_MIN;
    else if (!strcmp(aggs, "max")) agg = AG_MAX;
    else if (!strcmp(aggs, "count")) agg = AG_COUNT;
    else return an_bad_args(ds_usage_phase, "phase: --agg must be mean, min, max or count, got '%s'", aggs);
  }
  int digits = 4;
  if (digs) {
    char *end;
    long d = strtol(digs, &end, 10);
    if (*end || end == digs || d < 1 || d > 17)
      return an_bad_args(ds_usage_phase, "phase: --digits must be 1..17, got '%s'", digs);
    digits = (int)d;
  }
  double bw[2] = {-1, -1}; /* -1 auto: bins for the normalised columns, none otherwise */
  for (int a = 0; a < 2; a++) {
    const char *b = a ? ybins : xbins;
    if (!b || !strcmp(b, "auto")) continue;
    double v;
    if (!strcmp(b, "none")) bw[a] = 0;
    else if (an_parse_number(b, &v) && v > 0 && isfinite(v)) bw[a] = v;
    else
      return an_bad_args(ds_usage_phase, "phase: --%c-bin must be a width > 0, auto or none, got '%s'",
                         a ? 'y' : 'x', b);
  }
  int outcome = !strcmp(metric, "outcome");

  an_table t;
  an_cond *conds = NULL;
  int64_t *sel = NULL, nsel = 0;
  int ncond = 0, cx, cy, cm;
  int rc = an_open(path, &t);
  if (rc == DS_OK) rc = an_col_get(&t, xs, &cx);
  if (rc == DS_OK) rc = an_col_get(&t, ys, &cy);
  if (rc == DS_OK) rc = an_col_get(&t, outcome ? "outcome" : metric, &cm);
  if (rc == DS_OK && !outcome && t.cols[cm].s)
    rc = ds_fail(DS_EINPUT, "phase: --metric %s is not numeric; use outcome, final_loss, min_loss, "
                 "final_test_loss, steps_to_tol, steps, wall_s or diverged_step", metric);
  if (rc == DS_OK) rc = an_parse_where(&t, where, &conds, &ncond);
  if (rc == DS_OK) rc = an_select(&t, conds, ncond, NULL, 0, &sel, &nsel);
  if (rc == DS_OK && nsel == 0) { /* says which values exist; exit 2 */
    an_no_match_note(&t, conds, ncond, where);
    free(conds), free(sel);
    an_close(&t);
    return 2;
  }
  free(conds);
  if (rc != DS_OK) {
    free(sel);
    return an_fail(&t, rc);
  }
  /* binned axes: widths, and the points without a value there (a normalised
   * axis the point did not record at step 0) are left out */
  int cxy[2] = {cx, cy};
  int64_t nleft = 0, kept = 0;
  for (int a = 0; a < 2; a++)
    if (bw[a] < 0) bw[a] = an_col_is_normalised(&t, cxy[a]) ? auto_bin(&t, cxy[a], sel, nsel) : 0;
  for (int a = 0; a < 2; a++)
    if (bw[a] > 0 && t.cols[cxy[a]].s) {
      rc = ds_fail(DS_EINPUT, "phase: --%c-bin needs a numeric column, %s is not", a ? 'y' : 'x',
                   t.cols[cxy[a]].name);
      free(sel);
      return an_fail(&t, rc);
    }
  for (int64_t j = 0; j < nsel; j++) {
    int ok = 1;
    for (int a = 0; a < 2; a++)
      if (bw[a] > 0) ok &= t.cols[cxy[a]].isnum[sel[j]] && isfinite(t.cols[cxy[a]].v[sel[j]]);
    if (ok) sel[kept++] = sel[j];
    else nleft++;
  }
  nsel = kept;
  if (nsel == 0) {
    fprintf(stderr, "dynsweep: phase: none of the %lld point(s) has a value of %s%s%s (the "
            "normalised axes need record.spectra.ntk or .hessian at step 0 of a finished point)\n",
            (long long)nleft, bw[0] > 0 ? t.cols[cx].name : "", bw[0] > 0 && bw[1] > 0 ? " and " : "",
            bw[1] > 0 ? t.cols[cy].name : "");
    free(sel);
    an_close(&t);
    return 2;
  }
  int *ix = malloc((size_t)nsel * sizeof *ix), *iy = malloc((size_t)nsel * sizeof *iy);
  an_levels lx = {0}, ly = {0};
  if (!ix || !iy) rc = ds_fail(DS_ENOMEM, "out of memory");
  if (rc == DS_OK) rc = levels(&t, cx, sel, nsel, bw[0], &lx, ix);
  if (rc == DS_OK) rc = levels(&t, cy, sel, nsel, bw[1], &ly, iy);
  int64_t ncell = (int64_t)lx.n * ly.n;
  double *sum = NULL, *mn = NULL, *mx = NULL;
  int64_t *cnt = NULL, *npts = NULL, (*stc)[DS_OC_COUNT] = NULL;
  if (rc == DS_OK) {
    sum = calloc((size_t)ncell, sizeof *sum);
    mn = calloc((size_t)ncell, sizeof *mn);
    mx = calloc((size_t)ncell, sizeof *mx);
    cnt = calloc((size_t)ncell, sizeof *cnt);
    npts = calloc((size_t)ncell, sizeof *npts);
    stc = calloc((size_t)ncell, sizeof *stc);
    if (!sum || !mn || !mx || !cnt || !npts || !stc) rc = ds_fail(DS_ENOMEM, "out of memory");
  }
  if (rc != DS_OK) {
    free(ix), free(iy), free(sum), free(mn), free(mx), free(cnt), free(npts), free(stc), free(sel);
    levels_free(&lx), levels_free(&ly);
    return an_fail(&t, rc);
  }
  for (int64_t j = 0; j < nsel; j++) {
    int64_t c = (int64_t)iy[j] * lx.n + ix[j];
    const an_col *m = &t.cols[cm];
    npts[c]++;
    stc[c][ds_outcome_category(&t.rows[sel[j]])]++;
    if (outcome || m->empty[sel[j]] || !m->isnum[sel[j]] || isnan(m->v[sel[j]])) continue;
    double v = m->v[sel[j]];
    if (!cnt[c]++) mn[c] = mx[c] = v;
    sum[c] += v;
    if (v < mn[c]) mn[c] = v;
    if (v > mx[c]) mx[c] = v;
  }

  /* what was aggregated */
  char aggd[1024] = "";
  int used = 0, nrep = t.sw.replicas;
  if (nrep > 1) used += snprintf(aggd, sizeof aggd, "replicas (%d)", nrep);
  for (int a = 0; a < t.sw.naxes && used < (int)sizeof aggd; a++) {
    int c;
    if (an_col_get(&t, t.sw.axes[a].path, &c) != DS_OK || c == cx || c == cy) continue;
    int varies = 0;
    for (int64_t j = 1; j < nsel && !varies; j++)
      varies = strcmp(t.cols[c].s[sel[j]], t.cols[c].s[sel[0]]) != 0;
    if (varies) used += snprintf(aggd + used, sizeof aggd - (size_t)used, "%s%s", used ? ", " : "", t.cols[c].name);
  }
  static const char *const agg_name[] = {"mean", "min", "max", "count"};
  comment("phase diagram of %s%s%s%s over %s (columns) and %s (rows)",
          outcome ? "outcome" : t.cols[cm].name, outcome && agg != AG_COUNT ? "" : " (",
          outcome && agg != AG_COUNT ? "" : agg_name[agg], outcome && agg != AG_COUNT ? "" : ")",
          t.cols[cx].name, t.cols[cy].name);
  comment("%lld point(s)%s%s", (long long)nsel, used ? ", aggregated over " : "", aggd);
  for (int a = 0; a < 2; a++)
    if (bw[a] > 0) {
      char e[32], e2[32];
      snprintf(e, sizeof e, "%.4g", 2 * bw[a]);
      snprintf(e2, sizeof e2, "%.4g", 3 * bw[a]);
      comment("%s: bins of width %.4g named by their lower edge (%s = [%s, %s))",
             t.cols[cxy[a]].name, bw[a], e, e, e2);
    }
  if (nleft)
    comment("%lld point(s) left out: no value of %s (not recorded at step 0, or not finished)",
           (long long)nleft, bw[0] > 0 ? t.cols[cx].name : t.cols[cy].name);
  if (!outcome || agg == AG_COUNT) comment("%s", agg == AG_COUNT ? "count = number of values" : "'-' = no value");
  if (outcome && agg != AG_COUNT) {
    /* two lines, so that no letter is wrapped away from its name (". \n#   pending") */
    comment("c converged, u unconverged, P plateaus, C catapult, D diverged, F failed,");
    comment(". pending, - empty");
    comment("mixed cells: the most common letter%s (ties: the worse)",
            shares ? " and its share" : ", then *");
  }

  /* cell texts */
  char **cell = calloc((size_t)ncell, sizeof *cell);
  int *w = calloc((size_t)lx.n, sizeof *w);
  int w0 = (int)(strlen(t.cols[cy].name) + 3 + strlen(t.cols[cx].name));
  for (int k = 0; k < ly.n; k++)
    if ((int)strlen(ly.disp[k]) > w0) w0 = (int)strlen(ly.disp[k]);
  for (int k = 0; k < lx.n; k++) w[k] = (int)strlen(lx.disp[k]);
  for (int64_t c = 0; c < ncell; c++) {
    char b[64];
    if (outcome && agg == AG_COUNT) snprintf(b, sizeof b, "%lld", (long long)npts[c]);
    else if (outcome) {
      if (!npts[c]) snprintf(b, sizeof b, "-");
      else {
        int best = -1;
        for (int o = 0; o < DS_OC_COUNT; o++) {
          if (!stc[c][o]) continue;
          if (best < 0 || stc[c][o] > stc[c][best] ||
              (stc[c][o] == stc[c][best] && severity(o) > severity(best)))
            best = o;
        }
        char L = ds_outcome_category_letter(best);
        if (stc[c][best] == npts[c]) snprintf(b, sizeof b, "%c", L);
        else if (shares)
          snprintf(b, sizeof b, "%c%lld/%lld", L, (long long)stc[c][best], (long long)npts[c]);
        else snprintf(b, sizeof b, "%c*", L);
      }
    } else if (agg == AG_COUNT) snprintf(b, sizeof b, "%lld", (long long)cnt[c]);
    else if (!cnt[c]) snprintf(b, sizeof b, "-");
    else {
      double v = agg == AG_MEAN ? sum[c] / (double)cnt[c] : agg == AG_MIN ? mn[c] : mx[c];
      snprintf(b, sizeof b, "%.*g", digits, v);
    }
    cell[c] = strdup(b);
    int k = (int)(c % lx.n);
    if (cell[c] && (int)strlen(b) > w[k]) w[k] = (int)strlen(b);
  }
  char corner[160];
  snprintf(corner, sizeof corner, "%s \\ %s", t.cols[cy].name, t.cols[cx].name);
  printf("%-*s", w0, corner);
  for (int k = 0; k < lx.n; k++) printf(" %*s", w[k], lx.disp[k]);
  printf("\n");
  for (int r = ly.n - 1; r >= 0; r--) { /* largest y on top, like a plot */
    printf("%-*s", w0, ly.disp[r]);
    for (int k = 0; k < lx.n; k++) {
      const char *s = cell[(int64_t)r * lx.n + k];
      printf(" %*s", w[k], s ? s : "?");
    }
    printf("\n");
  }
  for (int64_t c = 0; c < ncell; c++) free(cell[c]);
  free(cell), free(w);
  free(ix), free(iy), free(sum), free(mn), free(mx), free(cnt), free(npts), free(stc), free(sel);
  levels_free(&lx), levels_free(&ly);
  an_close(&t);
  return 0;
}
