/* config_internal.h -- private to the config room: the YAML node tree that
 * keeps line:col of every key and value, and the option table that drives
 * parsing, validation, axis application, canonical text and hashing. */
#ifndef DS_CONFIG_INTERNAL_H
#define DS_CONFIG_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

#include "dynsweep/config.h"

/* ---- YAML node tree (yaml_tree.c) ---------------------------------------- */
#define DS_YAML_MAX_DEPTH 32      /* nesting levels of maps/lists */
#define DS_YAML_MAX_NODES 100000  /* total nodes in one file */
#define DS_YAML_MAX_KEYS 1024     /* entries in one map */

typedef enum { DS_YN_SCALAR, DS_YN_SEQ, DS_YN_MAP } ds_yn_kind;

typedef struct ds_yn {
  ds_yn_kind kind;
  int line, col;        /* 1-based start of the node */
  char *str;            /* scalar text (DS_YN_SCALAR) */
  int quoted;           /* scalar was quoted ('..' or "..") */
  int n, cap;           /* items (SEQ) or entries (MAP) */
  struct ds_yn **item;  /* SEQ items, MAP values */
  struct ds_yn **key;   /* MAP keys (always scalars) */
} ds_yn;

/* Parses text into a tree; errors "file:line:col: ..." (DS_EINPUT). *root is
 * NULL for an empty document. */
int ds_yaml_load(const char *file, const char *text, ds_yn **root);
void ds_yaml_free(ds_yn *n);
/* Value of key k in map m, or NULL; *ki receives the entry index. */
ds_yn *ds_yaml_get(const ds_yn *m, const char *k, int *ki);
const char *ds_yaml_kind_name(const ds_yn *n);
/* An unquoted null scalar: empty, ~, null, Null or NULL. */
int ds_yaml_is_null(const ds_yn *v);

/* ---- option table (options.c) -------------------------------------------- */
typedef enum {
  DS_OT_INT,    /* int */
  DS_OT_INT64,  /* int64_t */
  DS_OT_DOUBLE, /* double */
  DS_OT_BOOL,   /* int 0/1 */
  DS_OT_ENUM,   /* int-sized enum, value = index into choices */
  DS_OT_SERIES, /* unsigned DS_REC_* bit set, written as a YAML list */
  DS_OT_PATH,   /* char[DS_MAX_PATH]: a file name, resolved against the sweep file's directory */
  DS_OT_INT_LIST,    /* int[DS_MAX_LIST], count (int) at cnt_off */
  DS_OT_INT64_LIST,  /* int64_t[DS_MAX_LIST], count (int) at cnt_off */
  DS_OT_DOUBLE_LIST  /* double[DS_MAX_LIST], count (int) at cnt_off */
} ds_opt_type;

typedef struct {
  const char *path;            /* "model.width" */
  const char *alias;           /* grid alias ("width") or NULL */
  ds_opt_type type;
  size_t off;                  /* offset into ds_point_cfg */
  double min, max;             /* allowed range (numeric types) */
  int min_excl;                /* min is exclusive ("> 0") */
  const char *const *choices;  /* ENUM / SERIES names, NULL-terminated */
  double def;                  /* default (ENUM: code, SERIES: bits) */
  const char *def_text;        /* default as documented */
  const char *doc;             /* one-line meaning */
  size_t cnt_off;              /* lists: offset of the int element count */
  int max_excl;                /* max is exclusive ("< 1") */
} ds_option;

extern const ds_option ds_options[];
extern const int ds_noptions;
extern const char *const ds_series_names[]; /* indexed by DS_REC_* bit number */
extern const char *const ds_reduction_help;  /* "half_sum (L = 1/2 * sum ...), ..." */

const ds_option *ds_opt_find(const char *path);       /* by path or grid alias */
int ds_opt_index(const ds_option *o);
int ds_opt_is_scalar(const ds_option *o);             /* may be a grid axis */
int ds_opt_is_list(const ds_option *o);               /* one of the *_LIST types */
void ds_opt_defaults(ds_point_cfg *c);
/* Numeric value (enum: code, bool: 0/1, series: bits) of an option in c. */
double ds_opt_get(const ds_option *o, const ds_point_cfg *c);
void ds_opt_set(const ds_option *o, ds_point_cfg *c, double v);
/* Canonical text of value v of option o (scalar options). */
void ds_opt_format(const ds_option *o, double v, char *buf, int n);
/* Canonical text of option o as set in c, any type: lists "[1,2]", paths as
 * stored (resolved), scalars as ds_opt_format. */
void ds_opt_format_cfg(const ds_option *o, const ds_point_cfg *c, char *buf, int n);
/* Parses a YAML list v into list option o of c (count and elements); each
 * element is type- and range-checked with its own line:col. */
int ds_opt_parse_list(const char *file, const ds_option *o, const ds_yn *v, ds_point_cfg *c);
/* Capacity of list option o (DS_MAX_LIST, or 8 for record.spectra.split). */
int ds_opt_list_cap(const ds_option *o);
/* Count of list option o in c. */
int ds_opt_list_count(const ds_option *o, const ds_point_cfg *c);
/* Parses scalar node v for option o into *val; checks type and range.
 * Errors name the option and carry v's file:line:col. */
int ds_opt_parse_scalar(const char *file, const ds_option *o, const ds_yn *v, double *val);
/* Checks the range of a numeric value; line:col for the message. */
int ds_opt_check_range(const char *file, const ds_option *o, double v, int line, int col);
/* Parses record.series (a YAML list) into DS_REC_* bits. */
int ds_opt_parse_series(const char *file, const ds_option *o, const ds_yn *v, double *val);
/* Canonical shortest round-trip text of a double. */
void ds_fmt_double(double v, char *buf, int n);

/* ---- cost.c ------------------------------------------------------------ */
/* Estimated trainable parameter count: weights plus biases (e2e: d_in * d_out). */
double ds_point_nparams(const ds_point_cfg *c);
/* Evaluations of a diagnostic over a run of `steps` steps (0 if the cadence is off). */
double ds_cadence_evals(const ds_cadence *cad, int64_t steps);

/* ---- suggestions ------------------------------------------------------- */
/* Optimal-string-alignment (Damerau-Levenshtein) distance. */
int ds_edit_distance(const char *a, const char *b);
/* Best match of key among cands (n of them) if close enough, else NULL. */
const char *ds_suggest(const char *key, const char *const *cands, int n);
#endif
