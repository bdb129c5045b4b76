/* export.c -- `dynsweep export`: the summary table or one series as CSV / TSV. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis_internal.h"
#include "dynsweep/analysis.h"
#include "dynsweep/traj.h"
#include "dynsweep/util.h"

typedef struct {
  FILE *f;
  char sep;
  int nfield; /* fields written on the current line */
} out_t;

static void put_field(out_t *o, const char *s) {
  if (o->nfield++) fputc(o->sep, o->f);
  if (o->sep == ',') {
    if (!strpbrk(s, ",\"\r\n")) {
      fputs(s, o->f);
      return;
    }
    fputc('"', o->f);
    for (const char *p = s; *p; p++) {
      if (*p == '"') fputc('"', o->f);
      fputc(*p, o->f);
    }
    fputc('"', o->f);
  } else {
    for (const char *p = s; *p; p++) fputc(*p == '\t' || *p == '\n' || *p == '\r' ? ' ' : *p, o->f);
  }
}

static void put_real(out_t *o, double v) {
  char b[40];
  if (isnan(v)) snprintf(b, sizeof b, "nan");
  else if (isinf(v)) snprintf(b, sizeof b, v > 0 ? "inf" : "-inf");
  else snprintf(b, sizeof b, "%.17g", v);
  put_field(o, b);
}

static void put_int(out_t *o, long long v) {
  char b[32];
  snprintf(b, sizeof b, "%lld", v);
  put_field(o, b);
}

static void end_line(out_t *o) {
  fputc('\n', o->f);
  o->nfield = 0;
}

static void put_cell(out_t *o, const an_table *t, int col, int64_t row) {
  char buf[512];
  const an_col *c = &t->cols[col];
  if (!c->s && !c->empty[row] && (isnan(c->v[row]) || isinf(c->v[row]))) put_real(o, c->v[row]);
  else {
    an_cell_text(t, col, row, buf, sizeof buf, 1);
    put_field(o, buf);
  }
}

/* Parameter columns: the axes, the four aliases unless they are axes, then --params. */
static int param_cols(an_table *t, const char *extra, int *cols, int *n, int max) {
  int naxes;
  DS_TRY(an_axis_cols(t, cols, &naxes));
  *n = naxes;
  const char *alias[] = {"width", "depth", "lr", "init_scale"};
  char *copy = extra ? strdup(extra) : NULL;
  int nx = 4;
  char *names[64 + 4];
  for (int k = 0; k < 4; k++) names[k] = (char *)alias[k];
  char *save = NULL;
  if (copy)
    for (char *tok = strtok_r(copy, ",", &save); tok && nx < 68; tok = strtok_r(NULL, ",", &save))
      if (*tok) names[nx++] = tok;
  int rc = DS_OK;
  for (int k = 0; k < nx && rc == DS_OK; k++) {
    int c;
    if ((rc = an_col_get(t, names[k], &c)) != DS_OK) break;
    int dup = 0;
    for (int j = 0; j < *n; j++) dup |= cols[j] == c;
    if (!dup && *n < max) cols[(*n)++] = c;
  }
  free(copy);
  return rc;
}

static int export_summary(an_table *t, out_t *o, const int64_t *sel, int64_t nsel, const int *pc,
                          int npc) {
  static const char *const before[] = {"id", "combo", "replica"};
  static const char *const after[] = {"status", "outcome", "steps", "final_loss", "min_loss",
                                      "final_test_loss", "diverged_step", "event_step",
                                      "peak_ratio", "plateaus", "plateau_end", "wall_s", "rank",
                                      "team_size", "attempts", "reason", "steps_to_tol"};
  enum { NAFTER = sizeof after / sizeof after[0] };
  int cols[3 + DS_MAX_AXES + 80 + NAFTER + 5], n = 0;
  for (int k = 0; k < 3; k++) DS_TRY(an_col_get(t, before[k], &cols[n++]));
  for (int k = 0; k < npc; k++) cols[n++] = pc[k];
  for (int k = 0; k < NAFTER; k++) DS_TRY(an_col_get(t, after[k], &cols[n++]));
  /* the normalised axes, when the sweep records the NTK or the Hessian */
  const ds_spectra_spec *sp = &t->sw.base.record.spectra;
  if (ds_cadence_on(&sp->ntk) || ds_cadence_on(&sp->hessian)) {
    static const char *const norm[] = {"lambda0", "eta_crit0", "lr_lambda0", "lr_eta_crit"};
    for (int k = 0; k < 4; k++) DS_TRY(an_col_get(t, norm[k], &cols[n++]));
  }
  /* issue 24: the absolute learning rate, when a rate is given in units of 1/lambda0
   * (or with the normalised axes, which are computed from it) */
  int lam_units = t->sw.base.optimizer.lr_units == DS_LR_LAMBDA0;
  for (int a = 0; a < t->sw.naxes; a++)
    lam_units |= !strcmp(t->sw.axes[a].path, "optimizer.lr_units");
  if (lam_units || ds_cadence_on(&sp->ntk) || ds_cadence_on(&sp->hessian))
    DS_TRY(an_col_get(t, "eta", &cols[n++]));
  for (int k = 0; k < n; k++) put_field(o, t->cols[cols[k]].name);
  end_line(o);
  for (int64_t j = 0; j < nsel; j++) {
    for (int k = 0; k < n; k++) put_cell(o, t, cols[k], sel[j]);
    end_line(o);
  }
  return DS_OK;
}

/* Reads the trajectory of row's point; *have = 0 if the point was not written. */
static int read_traj(an_table *t, int64_t row, ds_traj *tr, int *have) {
  *have = 0;
  const ds_summary_row *r = &t->rows[row];
  if (r->status == DS_ST_PENDING || r->status == DS_ST_RUNNING) return DS_OK;
  int rc = ds_store_read_traj(t->st, r->id, tr);
  if (rc == DS_EINPUT) { /* not written (yet) */
    ds_clear_error();
    return DS_OK;
  }
  if (rc == DS_OK) *have = 1;
  return rc;
}

static int export_series(an_table *t, out_t *o, const char *name, const int64_t *sel, int64_t nsel,
                         const int *pc, int npc) {
  int kmax = 0, rep, stat;
  int64_t npoints = 0;
  char seen[1024] = "";
  DS_TRY(an_col_get(t, "replica", &rep));
  DS_TRY(an_col_get(t, "status", &stat));
  /* pass 1: the widest record */
  for (int64_t j = 0; j < nsel; j++) {
    ds_traj tr;
    int have;
    ds_traj_init(&tr);
    int rc = read_traj(t, sel[j], &tr, &have);
    if (rc != DS_OK) return rc;
    if (have) {
      int k = ds_traj_find(&tr, name);
      if (k >= 0) {
        npoints++;
        if (tr.s[k].ncols > kmax) kmax = tr.s[k].ncols;
      } else if (!seen[0]) {
        int used = 0;
        for (int s = 0; s < tr.n && used < (int)sizeof seen; s++)
          used += snprintf(seen + used, sizeof seen - (size_t)used, "%s%s", s ? ", " : "", tr.s[s].name);
      }
    }
    ds_traj_free(&tr);
  }
  if (npoints == 0) {
    if (seen[0])
      return ds_fail(DS_EINPUT, "%s: no exported point has a series '%s'; series in the store: %s",
                     t->path, name, seen);
    return ds_fail(DS_EINPUT, "%s: no exported point has a series '%s' (no point written yet?)",
                   t->path, name);
  }
  put_field(o, "point");
  put_field(o, "step");
  if (kmax == 1) put_field(o, "value");
  for (int c = 0; kmax > 1 && c < kmax; c++) {
    char b[32];
    snprintf(b, sizeof b, "value_%d", c);
    put_field(o, b);
  }
  put_field(o, "replica");
  for (int k = 0; k < npc; k++) put_field(o, t->cols[pc[k]].name);
  put_field(o, "status");
  end_line(o);
  /* pass 2: the records */
  for (int64_t j = 0; j < nsel; j++) {
    ds_traj tr;
    int have;
    ds_traj_init(&tr);
    int rc = read_traj(t, sel[j], &tr, &have);
    if (rc != DS_OK) return rc;
    int k = have ? ds_traj_find(&tr, name) : -1;
    if (k >= 0) {
      const ds_series *s = &tr.s[k];
      for (int64_t r = 0; r < s->n; r++) {
        put_int(o, (long long)t->rows[sel[j]].id);
        put_int(o, (long long)s->step[r]);
        for (int c = 0; c < kmax; c++)
          if (c < s->ncols) put_real(o, s->val[r * s->ncols + c]);
          else put_field(o, "");
        put_cell(o, t, rep, sel[j]);
        for (int p = 0; p < npc; p++) put_cell(o, t, pc[p], sel[j]);
        put_cell(o, t, stat, sel[j]);
        end_line(o);
      }
    }
    ds_traj_free(&tr);
  }
  return DS_OK;
}

int ds_cli_export(int argc, char **argv) {
  if (an_want_help(argc, argv)) {
    fputs(ds_usage_export, stdout);
    return 0;
  }
  const char *path = NULL, *where = NULL, *series = NULL, *params = NULL, *outp = NULL;
  const char *format = "csv";
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char **dst = !strcmp(a, "--where")    ? &where
                       : !strcmp(a, "--series") ? &series
                       : !strcmp(a, "--params") ? &params
                       : !strcmp(a, "--format") ? &format
                       : (!strcmp(a, "-o") || !strcmp(a, "--output")) ? &outp
                                                                      : NULL;
    if (dst) {
      if (++i == argc) return an_bad_args(ds_usage_export, "export: %s needs a value", a);
      *dst = argv[i];
    } else if (a[0] == '-') return an_bad_args(ds_usage_export, "export: unknown option '%s'", a);
    else if (!path) path = a;
    else return an_bad_args(ds_usage_export, "export: unexpected argument '%s'", a);
  }
  if (!path) return an_bad_args(ds_usage_export, "export: expected a store file%s", "");
  if (strcmp(format, "csv") && strcmp(format, "tsv"))
    return an_bad_args(ds_usage_export, "export: --format must be csv or tsv, got '%s'", format);

  an_table t;
  an_cond *conds = NULL;
  int64_t *sel = NULL, nsel = 0;
  int ncond = 0, npc = 0;
  int pc[DS_MAX_AXES + 70];
  int rc = an_open(path, &t);
  if (rc == DS_OK) rc = param_cols(&t, params, pc, &npc, (int)(sizeof pc / sizeof pc[0]));
  if (rc == DS_OK) rc = an_parse_where(&t, where, &conds, &ncond);
  if (rc == DS_OK) rc = an_select(&t, conds, ncond, NULL, 0, &sel, &nsel);
  if (rc == DS_OK && nsel == 0 && ncond > 0) an_no_match_note(&t, conds, ncond, where);
  free(conds);
  if (rc != DS_OK) return an_fail(&t, rc);
  out_t o = {stdout, format[0] == 'c' ? ',' : '\t', 0};
  char tmp[4096] = "";
  if (outp && strcmp(outp, "-")) {
    /* write next to the target and rename, so a failed export leaves no half file */
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", outp, (long)getpid());
    if (!(o.f = fopen(tmp, "w"))) {
      free(sel);
      rc = ds_fail(DS_EIO, "%s: cannot create: %s", outp, strerror(errno));
      return an_fail(&t, rc);
    }
  }
  rc = series ? export_series(&t, &o, series, sel, nsel, pc, npc)
              : export_summary(&t, &o, sel, nsel, pc, npc);
  free(sel);
  if (o.f != stdout) {
    if (fclose(o.f) != 0 && rc == DS_OK) rc = ds_fail(DS_EIO, "%s: write failed: %s", outp, strerror(errno));
    if (rc == DS_OK && rename(tmp, outp) != 0)
      rc = ds_fail(DS_EIO, "%s: cannot rename %s: %s", outp, tmp, strerror(errno));
    if (rc != DS_OK) remove(tmp);
  } else if (fflush(stdout) != 0 && rc == DS_OK) {
    rc = ds_fail(DS_EIO, "standard output: write failed: %s", strerror(errno));
  }
  if (rc != DS_OK) return an_fail(&t, rc);
  an_close(&t);
  return 0;
}
