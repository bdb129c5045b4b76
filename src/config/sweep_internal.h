/* sweep_internal.h -- private to the sweep file's parser (sweep.c and its
 * parts sweep_sections.c, sweep_grid.c, sweep_check.c, sweep_err.c): the parse
 * state and the functions one part calls in another. sweep.c calls the
 * parts; sweep_check.c calls sweep_grid.c; all call sweep_err.c. */
#ifndef DS_SWEEP_INTERNAL_H
#define DS_SWEEP_INTERNAL_H
#include <stdint.h>

#include "config_internal.h"

#define SW_MAX_OPTS 192 /* >= ds_noptions */
#define SW_PROBE_CACHE 8
#define SW_STORE_LIMIT (64.0 * 1024 * 1024 * 1024) /* bytes */

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

/* ---- sweep_err.c ---- */
/* The option sections, in the order of sw_ctx's secline/seccol. */
extern const char *const sw_sections[6];
int sw_err(const sw_ctx *x, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "unknown key 'k' in WHERE (did you mean 'x'?)" or the list of valid keys. */
int sw_unknown_key(const sw_ctx *x, const ds_yn *k, const char *where,
                   const char *const *cands, int n, const char *extra);
/* An empty plain value ("model:" with nothing under it) counts as an empty map. */
int sw_is_null(const ds_yn *v);

/* ---- sweep_sections.c ---- */
int sw_parse_name(sw_ctx *x, const ds_yn *v);
int sw_parse_seed(sw_ctx *x, const ds_yn *v);
void sw_basedir(sw_ctx *x, const char *path);
int sw_parse_section(sw_ctx *x, const char *sec, const ds_yn *m);
int sw_overrides(sw_ctx *x, ds_yn *root);

/* ---- sweep_grid.c ---- */
int sw_parse_mapsec(sw_ctx *x, const ds_yn *v);
int sw_parse_grid(sw_ctx *x, const ds_yn *k, const ds_yn *g);
void sw_combo_index(const ds_sweep *s, int64_t combo, int *idx);
void sw_kind_shape(ds_data_kind k, int *din, int *dout, int *min_din);
int sw_is_file_kind(ds_data_kind k);
void sw_apply_axes(const ds_sweep *s, const ds_point_cfg *base, const int *idx, ds_point_cfg *c);
void sw_derive(const ds_sweep *s, ds_point_cfg *c);
void sw_apply(const ds_sweep *s, const int *idx, ds_point_cfg *c);

/* ---- sweep_check.c ---- */
int sw_check_points(sw_ctx *x);
int sw_check_lists(sw_ctx *x);
int sw_base_file_data(sw_ctx *x);
#endif
