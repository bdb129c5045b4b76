/* analysis_internal.h -- the analysis room's private tools: a store loaded as
 * a table of rows, named columns (summary fields, grid parameters, any option
 * path), conditions (--where) and sort keys (--sort). */
#ifndef DS_ANALYSIS_INTERNAL_H
#define DS_ANALYSIS_INTERNAL_H
#include <stdint.h>
#include <stdio.h>

#include "dynsweep/config.h"
#include "dynsweep/store.h"

/* Summary fields a column can name (besides parameters). */
typedef enum {
  AN_F_ID, AN_F_COMBO, AN_F_REPLICA, AN_F_STATUS, AN_F_STEPS, AN_F_FINAL_LOSS, AN_F_MIN_LOSS,
  AN_F_FINAL_TEST_LOSS, AN_F_DIVERGED_STEP, AN_F_WALL_S, AN_F_RANK, AN_F_REASON,
  AN_F_OUTCOME, AN_F_EVENT_STEP, AN_F_PEAK_RATIO, AN_F_PLATEAUS, AN_F_PLATEAU_END,
  AN_F_STEPS_TO_TOL, /* derived: steps if the point reached train.tol, else empty */
  AN_F_TEAM_SIZE,    /* ranks of the team that ran the point (0 pending, format >= 3) */
  AN_F_ATTEMPTS,     /* times the point was started (0 in stores before the field) */
  AN_F_ETA,          /* issue 24: the absolute learning rate: lr, or under optimizer.lr_units
                        lambda0 the stored series eta (else lr / ntk/top at step 0) */
  /* normalised axes, derived from the step-0 record of the spectra series
   * (empty when the point did not record them at step 0): */
  AN_F_LAMBDA0,      /* ntk/top[0] at step 0, else hessian/top[0] at step 0 */
  AN_F_ETA_CRIT0,    /* ntk/critical_lr at step 0, else 2 / lambda0 (Hessian) */
  AN_F_LR_LAMBDA0,   /* eta * lambda0 (eta: the absolute rate, AN_F_ETA) */
  AN_F_LR_ETA_CRIT,  /* eta / eta_crit0 */
  AN_F_COUNT
} an_field;

typedef struct {
  char name[64];   /* display name: axis name, alias, path or field name */
  char path[64];   /* option path for parameters, "" for summary fields */
  int is_param;
  an_field field;  /* summary field when !is_param */
  /* materialised cells, one per store row */
  double *v;       /* numeric value (NaN if the cell is not a number or empty) */
  char **s;        /* text (parameters, status, reason), NULL for plain numbers */
  char *isnum;     /* cell has a numeric value */
  char *empty;     /* cell has no value (steps_to_tol not reached) */
  int digits;      /* numeric parameters: ds_short_digits of its values (0 = print the text) */
} an_col;

typedef struct {
  const char *path;
  ds_store *st;
  ds_summary_row *rows;
  int64_t n;
  ds_sweep sw;
  int have_sw;
  int ncols, capcols;
  an_col *cols;
  double *lam0, *eta0; /* per row, NaN if not recorded at step 0 (loaded on first use) */
  double *eta;         /* per row: the absolute learning rate, NaN if unknown (same) */
} an_table;

typedef enum { AN_EQ, AN_NE, AN_LT, AN_LE, AN_GT, AN_GE } an_op;
typedef struct {
  int col;          /* index into table cols */
  an_op op;
  char val[128];
  double num;
  int val_isnum;
} an_cond;

typedef struct {
  int col;
  int desc;
} an_key;

int an_open(const char *path, an_table *t);
void an_close(an_table *t);
/* Column index of NAME (added and materialised on first use); DS_EINPUT with
 * a message listing the valid names if NAME is unknown. */
int an_col_get(an_table *t, const char *name, int *idx);
/* The grid axes of the sweep, in order, as columns. */
int an_axis_cols(an_table *t, int *idx, int *n);
/* Is column c one of the normalised axes (lambda0, eta_crit0, lr_lambda0, lr_eta_crit)? */
int an_col_is_normalised(const an_table *t, int c);
/* Text of a cell as printed in tables and exported ("" if empty). */
void an_cell_text(const an_table *t, int col, int64_t row, char *buf, int n, int exact);

int an_parse_where(an_table *t, const char *spec, an_cond **conds, int *n);
/* On stderr: no point matches WHERE, and the values of the parameters it names. */
void an_no_match_note(const an_table *t, const an_cond *c, int n, const char *where);
int an_row_matches(const an_table *t, const an_cond *c, int n, int64_t row);
int an_parse_sort(an_table *t, const char *spec, an_key **keys, int *n);
/* Rows passing the conditions (in store order, or sorted by keys): *out is malloc'd. */
int an_select(an_table *t, const an_cond *c, int nc, const an_key *k, int nk, int64_t **out,
              int64_t *nout);

/* Argument helpers: all return an exit code through *rc when they fail. */
int an_bad_args(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int an_want_help(int argc, char **argv);
/* On stderr: the usage lines of a usage text and a pointer to --help. */
void an_short_usage(const char *usage);
int an_fail(an_table *t, int rc);
int an_parse_number(const char *s, double *v);
/* Names of the summary columns (AN_F_*), for messages and "did you mean". */
const char *an_field_name(int f);
#endif
