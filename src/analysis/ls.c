/* ls.c -- `dynsweep ls`: the summary table, filtered and sorted. */
#include <stdlib.h>
#include <string.h>

#include "analysis_internal.h"
#include "dynsweep/analysis.h"
#include "dynsweep/util.h"

#define AN_NAMES_HELP                                                                            \
  "Column names (for --where, --sort, --x, --y, --params):\n"                                     \
  "  summary: id (or point), combo, replica, status, outcome, steps, final_loss, min_loss,\n"    \
  "           final_test_loss, diverged_step, event_step, peak_ratio, plateaus, plateau_end,\n" \
  "           wall_s, rank, team_size, attempts, reason, steps_to_tol, eta\n"                    \
  "           (attempts = times the point was started, run --max-attempts;\n"                    \
  "           steps_to_tol = steps of a point that finished done with its last loss below\n"    \
  "           train.tol, empty otherwise; eta = the absolute learning rate: lr, or with\n"       \
  "           optimizer.lr_units: lambda0 (lr = eta x lambda_0) the stored eta)\n"              \
  "  normalised axes (empty unless the point recorded record.spectra.ntk or .hessian\n"       \
  "           at step 0): lambda0 = top NTK eigenvalue at step 0 (ntk/top), else top\n"         \
  "           Hessian eigenvalue (hessian/top); eta_crit0 = ntk/critical_lr at step 0\n"        \
  "           (2/lambda0 for half_sum, n/lambda0 for mean), else 2/lambda0 (Hessian);\n"       \
  "           lr_lambda0 = eta x lambda0; lr_eta_crit = eta / eta_crit0 (seed 003's\n"           \
  "           catapult band: 2 < lr_lambda0 < 4 with half_sum, 1 < lr_eta_crit < 2)\n"           \
  "  parameters: a grid axis by its name or path (lr, width, model.type, ...), the aliases\n"    \
  "           width depth lr init_scale, or any option path (train.steps, loss.reduction)\n"     \
  "Outcome (a name, derived from the stored status, outcome code and plateau count):\n"         \
  "  pending   pending or running        failed    status failed\n"                            \
  "  diverged  status diverged\n"                                                                \
  "  catapult  done, and the loss rose above record.spectra.catapult_factor (default 2)\n"      \
  "            x its step-0 value (peak_ratio = max_{t>=1} L_t/L_0; event_step = the peak)\n"   \
  "  converged done, no catapult, and the loss fell below train.tol or settled: over the\n"   \
  "            last tenth of the steps it changed by <= 1% of its final value, and\n"         \
  "            its decrease is not speeding up (docs/store.md, \"Outcome\")\n"                 \
  "  plateaus  converged, and >= 1 plateau in the recorded loss (a run from step a\n"        \
  "            to b >= max(2a, a+10) within 5% of its start, ended by a drop below 80%)\n"      \
  "  unconverged done (all its steps), no catapult, not converged\n"                          \
  "Conditions: NAME OP VALUE, OP one of = != < <= > >=, comma-separated, all must hold.\n"       \
  "  Enum and bool parameters compare by name (model.type=relu, model.bias=true),\n"             \
  "  status and outcome by name (status=diverged, outcome=catapult). Numbers compare with a\n"  \
  "  relative tolerance of 1e-12; = and != on a numeric parameter match the nearest value\n"    \
  "  in the store within 1% (lr=0.00178 selects 0.00177827941003892), else exit 2 with the\n"  \
  "  values. A filter matching no point lists the values of the parameters it names.\n"       \
  "Numbers print with the fewest digits (>= 3) that tell the grid's values apart (export:\n"  \
  "exact, 17 digits). An unknown column name suggests the nearest one (did you mean).\n"

const char *const ds_usage_ls =
    "usage: dynsweep ls STORE.h5 [--where COND,...] [--sort KEY,...] [--limit N]\n"
    "                   [--add COL,...]\n"
    "\n"
    "Prints one row per point: id, replica, grid parameters, status\n"
    "(done / diverged / failed / pending / running), outcome (converged / unconverged / catapult /\n"
    "diverged / plateaus / failed / pending, see below), steps done, final and minimum\n"
    "training loss, wall seconds, and the rank that ran it; then counts per status and\n"
    "per outcome,\n"
    "and for each failed point its attempts and the reason ('dynsweep run --retry failed').\n"
    "Columns named in --where or --sort that are not in the table are added to it.\n"
    "  --where 'depth=4,lr<0.1'  only the points meeting every condition\n"
    "  --sort KEY[,KEY...]       order by these columns (ascending; -KEY or KEY:desc for\n"
    "                            descending; NaN and empty values last); default: point id\n"
    "  --limit N                 print at most N rows (the counts cover all matches)\n"
    "  --add COL[,COL...]        show these columns too (peak_ratio, lr_lambda0, ...)\n"
    "\n" AN_NAMES_HELP
    "\nExamples:\n"
    "  dynsweep ls s.h5 --where 'model.type=relu,status=done' --sort final_loss\n"
    "  dynsweep ls s.h5 --add lr_lambda0,peak_ratio --where outcome=catapult\n"
    "  dynsweep ls s.h5 --where 'lr>=0.02' --sort -wall_s --limit 5\n";

const char *const ds_usage_export =
    "usage: dynsweep export STORE.h5 [--format csv|tsv] [--series NAME] [--where COND,...]\n"
    "                       [--params PATH,...] [-o FILE]\n"
    "\n"
    "Writes a table with a header line (default: CSV to standard output).\n"
    "Without --series: the summary table, one row per point:\n"
    "  id,combo,replica,<grid parameters>,<width,depth,lr,init_scale unless axes>,<--params>,\n"
    "  status,outcome,steps,final_loss,min_loss,final_test_loss,diverged_step,event_step,\n"
    "  peak_ratio,plateaus,plateau_end,wall_s,rank,team_size,attempts,reason,steps_to_tol\n"
    "  and, when the sweep records record.spectra.ntk or .hessian, the normalised axes\n"
    "  lambda0,eta_crit0,lr_lambda0,lr_eta_crit\n"
    "With --series NAME: the series in long format, one row per record of every written point:\n"
    "  point,step,value,replica,<parameters>,status            (scalar series)\n"
    "  point,step,value_0,...,value_{K-1},replica,<parameters>,status\n"
    "  (multi-column series such as sv/W1 or layer_fro; K = the most columns any exported\n"
    "  point has; a point with fewer columns leaves the rest empty). Points without the\n"
    "  series (pending, running) are skipped.\n"
    "Reals are printed with 17 significant digits (they read back bit for bit); enum and\n"
    "bool parameters by name; NaN as nan, infinities as inf / -inf; empty cells are empty.\n"
    "CSV quotes fields containing , \" or line breaks (RFC 4180); TSV replaces tabs and line\n"
    "breaks inside fields by spaces.\n"
    "  --format csv|tsv      output format (default csv)\n"
    "  --series NAME         export this series (loss, grad_norm, sv/W1, ...)\n"
    "  --where COND,...      only points meeting every condition (as in 'dynsweep ls')\n"
    "  --params PATH,...     more parameter columns (any option path, e.g. train.steps)\n"
    "  -o, --output FILE     write to FILE instead of standard output\n"
    "\n" AN_NAMES_HELP;

const char *const ds_usage_phase =
    "usage: dynsweep phase STORE.h5 --x COL --y COL [--metric M] [--agg mean|min|max|count]\n"
    "                      [--where COND,...] [--digits N] [--shares]\n"
    "                      [--x-bin W|auto|none] [--y-bin W|auto|none]\n"
    "\n"
    "Prints a phase diagram as a text grid: one column per distinct value of --x, one\n"
    "row per distinct value of --y (numbers ascending to the right and upwards, like a\n"
    "plot; enum values in grid order). Every point whose (x, y) falls in a cell is\n"
    "aggregated into it: replicas and all other axes (list them in --where to fix them).\n"
    "  --x COL, --y COL      the two parameters (or any column, see below)\n"
    "  --metric M            outcome (default), or a numeric column: final_loss, min_loss,\n"
    "                        final_test_loss, steps_to_tol, steps, wall_s, diverged_step,\n"
    "                        peak_ratio, event_step, plateaus, ...\n"
    "  --agg A               mean (default), min, max or count, for numeric metrics;\n"
    "                        NaN values are left out (count counts the values used);\n"
    "                        a cell without values prints '-'\n"
    "  --where COND,...      only points meeting every condition\n"
    "  --digits N            significant digits of numbers (default 4, up to 17)\n"
    "  --shares              mixed outcome cells show the share, e.g. D5/8, instead of D*\n"
    "  --x-bin W, --y-bin W  bin a numeric axis into [k W, (k+1) W), named by the lower\n"
    "                        edge; auto (default) bins the normalised axes (lambda0,\n"
    "                        eta_crit0, lr_lambda0, lr_eta_crit) with a round width giving\n"
    "                        <= 16 bins and leaves others as distinct values; none: never.\n"
    "                        Points without a value on a binned axis are left out (noted)\n"
    "Outcome cells, one letter per outcome (see Outcome below): c converged, C catapult,\n"
    "P plateaus, u unconverged, D diverged, F failed, . pending or running, '-' no point.\n"
    "A cell whose points (replicas, other axes) do not all agree shows its most common\n"
    "outcome followed by '*' (D* = mostly diverged); ties go to the worse outcome (F, D, C,\n"
    "P, u, ., c).\n"
    "With --agg count an outcome cell shows its number of points.\n"
    "\n" AN_NAMES_HELP
    "\nExamples:\n"
    "  dynsweep phase s.h5 --x lr --y width\n"
    "  dynsweep phase s.h5 --x lr --y width --metric final_loss --agg min --where depth=2\n"
    "  dynsweep phase s.h5 --x lr_lambda0 --y width      # seed 003: C between 2 and 4\n";

/* Columns are at least 11 wide, and as wide as their name (values never truncated). */
static int colw(const an_table *t, int c) {
  int w = (int)strlen(t->cols[c].name);
  return w > 11 ? w : 11;
}

static void print_row_header(an_table *t, const int *cols, int ncols) {
  printf("%6s %3s", "point", "rep");
  for (int j = 0; j < ncols; j++) printf(" %*s", colw(t, cols[j]), t->cols[cols[j]].name);
  printf(" %-8s %-9s %8s %12s %12s %8s %4s\n", "status", "outcome", "steps", "final_loss",
         "min_loss", "wall_s", "rank");
}

int ds_cli_ls(int argc, char **argv) {
  if (an_want_help(argc, argv)) {
    fputs(ds_usage_ls, stdout);
    return 0;
  }
  const char *path = NULL, *where = NULL, *sort = NULL, *add = NULL;
  long long limit = -1;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--where") || !strcmp(a, "--sort") || !strcmp(a, "--limit")) {
      if (++i == argc) return an_bad_args(ds_usage_ls, "ls: %s needs a value", a);
      if (a[2] == 'w') where = argv[i];
      else if (a[2] == 's') sort = argv[i];
      else {
        char *end;
        limit = strtoll(argv[i], &end, 10);
        if (*end || end == argv[i] || limit < 0)
          return an_bad_args(ds_usage_ls, "ls: --limit needs a whole number >= 0, got '%s'", argv[i]);
      }
    } else if (!strcmp(a, "--add")) {
      if (++i == argc) return an_bad_args(ds_usage_ls, "ls: %s needs a value", a);
      add = argv[i];
    } else if (!strncmp(a, "--add=", 6)) add = a + 6;
    else if (!strncmp(a, "--where=", 8)) where = a + 8;
    else if (!strncmp(a, "--sort=", 7)) sort = a + 7;
    else if (a[0] == '-') return an_bad_args(ds_usage_ls, "ls: unknown option '%s'", a);
    else if (!path) path = a;
    else return an_bad_args(ds_usage_ls, "ls: unexpected argument '%s'", a);
  }
  if (!path) return an_bad_args(ds_usage_ls, "ls: expected a store file%s", "");

  an_table t;
  an_cond *conds = NULL;
  an_key *keys = NULL;
  int64_t *sel = NULL, nsel = 0;
  int ncond = 0, nkey = 0, naxes = 0;
  int rc = an_open(path, &t);
  int cols[DS_MAX_AXES + 64];
  if (rc == DS_OK) rc = an_axis_cols(&t, cols, &naxes);
  if (rc == DS_OK) rc = an_parse_where(&t, where, &conds, &ncond);
  if (rc == DS_OK) rc = an_parse_sort(&t, sort, &keys, &nkey);
  if (rc == DS_OK) rc = an_select(&t, conds, ncond, keys, nkey, &sel, &nsel);
  if (rc == DS_OK && nsel == 0 && ncond > 0) an_no_match_note(&t, conds, ncond, where);
  if (rc != DS_OK) {
    free(conds);
    free(keys);
    return an_fail(&t, rc);
  }
  /* columns named in --where / --sort / --add that the table does not show yet */
  int addc[64], nadd = 0;
  char *addcopy = add ? strdup(add) : NULL, *save = NULL;
  if (add && !addcopy) rc = ds_fail(DS_ENOMEM, "out of memory");
  for (char *tok = addcopy ? strtok_r(addcopy, ",", &save) : NULL; tok && rc == DS_OK && nadd < 64;
       tok = strtok_r(NULL, ",", &save))
    if (*tok) rc = an_col_get(&t, tok, &addc[nadd++]);
  free(addcopy);
  if (rc != DS_OK) {
    free(conds), free(keys), free(sel);
    return an_fail(&t, rc);
  }
  int ncols = naxes;
  for (int j = 0; j < ncond + nkey + nadd && ncols < (int)(sizeof cols / sizeof cols[0]); j++) {
    int c = j < ncond ? conds[j].col : j < ncond + nkey ? keys[j - ncond].col : addc[j - ncond - nkey];
    const an_col *col = &t.cols[c];
    int shown = 0;
    for (int k = 0; k < ncols; k++) shown |= cols[k] == c;
    if (!col->is_param)
      shown |= col->field == AN_F_ID || col->field == AN_F_REPLICA || col->field == AN_F_STATUS ||
               col->field == AN_F_OUTCOME ||
               col->field == AN_F_STEPS || col->field == AN_F_FINAL_LOSS ||
               col->field == AN_F_MIN_LOSS || col->field == AN_F_WALL_S || col->field == AN_F_RANK;
    if (!shown) cols[ncols++] = c;
  }
  print_row_header(&t, cols, ncols);
  int64_t count[5] = {0}, ocount[DS_OC_COUNT] = {0};
  for (int64_t j = 0; j < nsel; j++) {
    const ds_summary_row *r = &t.rows[sel[j]];
    if (r->status >= 0 && r->status < 5) count[r->status]++;
    ocount[ds_outcome_category(r)]++;
    if (limit >= 0 && j >= limit) continue;
    printf("%6lld %3d", (long long)r->id, r->replica);
    for (int k = 0; k < ncols; k++) {
      char buf[128];
      an_cell_text(&t, cols[k], sel[j], buf, sizeof buf, 0);
      printf(" %*s", colw(&t, cols[k]), buf);
    }
    printf(" %-8s %-9s %8lld %12.5g %12.5g %8.3f %4d\n", ds_status_name(r->status),
           ds_outcome_category_name(ds_outcome_category(r)), (long long)r->steps, r->final_loss,
           r->min_loss, r->wall_s, r->rank);
  }
  printf("%lld points: %lld done, %lld diverged, %lld failed, %lld pending", (long long)nsel,
         (long long)count[DS_ST_DONE], (long long)count[DS_ST_DIVERGED],
         (long long)count[DS_ST_FAILED], (long long)(count[DS_ST_PENDING] + count[DS_ST_RUNNING]));
  if (ncond > 0) printf(" (matching --where, of %lld in the store)", (long long)t.n);
  if (limit >= 0 && nsel > limit) printf("; first %lld shown", limit);
  printf("\noutcomes:");
  for (int o = 0; o < DS_OC_COUNT; o++)
    printf("%s %lld %s", o ? "," : "", (long long)ocount[o], ds_outcome_category_name(o));
  printf("\n");
  for (int64_t j = 0; j < nsel && (limit < 0 || j < limit); j++) { /* why each failed */
    const ds_summary_row *r = &t.rows[sel[j]];
    if (r->status == DS_ST_FAILED)
      printf("failed: point %lld (%d attempt(s)): %.*s\n", (long long)r->id, r->attempts,
             (int)sizeof r->reason, r->reason);
  }
  free(sel);
  free(conds);
  free(keys);
  an_close(&t);
  return 0;
}
