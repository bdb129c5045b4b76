/* analysis.h -- post-hoc analysis of a store from the command line (no Python):
 * `dynsweep ls`, `dynsweep export`, `dynsweep phase` (docs/analysis.md).
 *
 * Each ds_cli_* is a whole subcommand: argv holds the arguments after the
 * subcommand name (argv[0] is the first argument, not "ls"). It prints its
 * usage for -h/--help (exit 0), reports errors on stderr as "dynsweep: ..."
 * and returns the process exit code: 0 ok, 2 bad input (arguments, unknown
 * column names, not a store), 1 other failures. No MPI is needed. */
#ifndef DYNSWEEP_ANALYSIS_H
#define DYNSWEEP_ANALYSIS_H
#include "dynsweep/store.h"

/* The named outcome of a point (docs/store.md "Outcome"), derived from the
 * stored status, outcome code and plateau count (the stored codes keep their
 * meaning; stores without the outcome fields read as 0 and still classify):
 *   pending   status pending or running
 *   failed    status failed
 *   diverged  status diverged
 *   catapult  status done and stored outcome DS_OUT_CATAPULT (peak ratio above
 *             record.spectra.catapult_factor)
 *   unconverged status done, stored outcome DS_OUT_UNCONVERGED: finished its
 *             steps without diverging, a catapult or converging (issue 24;
 *             the rule: dynsweep/outcome.h)
 *   plateaus  status done, converged, and >= 1 plateau in the loss
 *             (ds_worker_plateaus: a saddle the loss sat on and escaped)
 *   converged status done otherwise: the loss fell below train.tol or settled
 *             (outcome.h). A row of a store written before issue 24 with code 0
 *             ("did not diverge") is re-classified by an_open (table.c). */
enum { DS_OC_CONVERGED, DS_OC_CATAPULT, DS_OC_DIVERGED, DS_OC_PLATEAUS, DS_OC_FAILED,
       DS_OC_PENDING, DS_OC_UNCONVERGED, DS_OC_COUNT };
int ds_outcome_category(const ds_summary_row *r);

/* Grid values as printed by plan, ls and phase: the fewest significant
 * digits P >= 3 that keep the n given values apart (17 at most); each value
 * is printed with its own shortest exact form if that is shorter, else
 * rounded to P digits (0.00316978638492223 -> 0.00317 next to 0.00356).
 * ds_short_format(v, 0, ...) is the shortest exact form. */
int ds_short_digits(const double *v, int n);
void ds_short_format(double v, int P, char *buf, int len);
const char *ds_outcome_category_name(int oc); /* "converged", ...; "unknown" out of range */
char ds_outcome_category_letter(int oc);     /* c C D P F . u */

/* "model.type relu width 16 lr 0.005": point id's value on every grid axis
 * of the store's sweep, as `ls` prints them (`show`'s header); "" when the
 * store holds no sweep. */
int ds_point_axes_text(const char *store_path, int64_t id, char *buf, size_t n);

extern const char *const ds_usage_ls;
extern const char *const ds_usage_export;
extern const char *const ds_usage_phase;

/* On stderr: the first lines of a usage text (up to its first blank line)
 * and "(dynsweep CMD --help for every option)": what a bad argument prints. */
void ds_short_usage(const char *usage);

/* dynsweep ls STORE [--where COND,...] [--sort KEY,...] [--limit N] */
int ds_cli_ls(int argc, char **argv);
/* dynsweep export STORE [--format csv|tsv] [--series NAME] [--where ...]
 *                 [--params PATH,...] [-o FILE] */
int ds_cli_export(int argc, char **argv);
/* dynsweep phase STORE --x COL --y COL [--metric M] [--agg mean|min|max|count]
 *                [--where ...] [--digits N] */
int ds_cli_phase(int argc, char **argv);
/* `dynsweep map`: runs tools/dynsweep-map (Python) with the arguments. */
int ds_cli_map(int argc, char **argv);
#endif
