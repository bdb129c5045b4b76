/* traj.h -- a point's recorded trajectory: named (step, value) series.
 *
 * Each series has ncols values per record (1 for a scalar such as the loss,
 * k for top-k singular values of one layer, L for one value per layer).
 * Values are row-major: val[r*ncols + c]. A trajectory packs into one
 * contiguous byte buffer for sending between ranks and unpacks unchanged. */
#ifndef DYNSWEEP_TRAJ_H
#define DYNSWEEP_TRAJ_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  char name[64];        /* e.g. "loss", "grad_norm", "sv/W1" */
  char unit[32];        /* e.g. "1" for dimensionless */
  char definition[256]; /* exact formula, stored as an attribute */
  int ncols;
  int64_t n, cap;
  int64_t *step;
  double *val;
} ds_series;

typedef struct {
  int n, cap;
  ds_series *s;
} ds_traj;

void ds_traj_init(ds_traj *t);
void ds_traj_free(ds_traj *t);
/* Adds a series, returns its index (>= 0) or -DS_ENOMEM. */
int ds_traj_add(ds_traj *t, const char *name, int ncols, const char *unit, const char *definition);
int ds_traj_find(const ds_traj *t, const char *name); /* index or -1 */
int ds_traj_append(ds_traj *t, int idx, int64_t step, const double *vals);
int ds_traj_pack(const ds_traj *t, char **buf, size_t *len);
int ds_traj_unpack(const char *buf, size_t len, ds_traj *t);
#endif
