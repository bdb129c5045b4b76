/* store.h -- the HDF5 store: one file per sweep (layout in docs/store.md).
 *
 * One writer (rank 0) at a time. The store knows rows, axes and series; it
 * knows nothing of networks. */
#ifndef DYNSWEEP_STORE_H
#define DYNSWEEP_STORE_H
#include <stdint.h>
#include "dynsweep/traj.h"

enum {
  DS_ST_PENDING = 0,
  DS_ST_DONE = 1,
  DS_ST_DIVERGED = 2,
  DS_ST_FAILED = 3,
  DS_ST_RUNNING = 4
};
const char *ds_status_name(int status);

/* One row of /summary. */
typedef struct {
  int64_t id, combo;
  int32_t replica;
  int32_t width, depth;
  double lr, init_scale;
  int32_t status;          /* DS_ST_* */
  int64_t steps;           /* steps done */
  double final_loss, min_loss, final_test_loss;
  int64_t diverged_step;   /* -1 unless diverged */
  double wall_s;           /* wall seconds of the point */
  int32_t rank;            /* rank that ran it (-1 pending) */
  char reason[96];         /* why it failed/diverged, "" otherwise */
} ds_summary_row;

typedef struct {
  const char *sweep_name;
  const char *sweep_text;     /* verbatim sweep file */
  const char *sweep_path;
  uint64_t sweep_hash;
  const char *dynsweep_version;
  const char *library_versions; /* "Open MPI 4.1.4; HDF5 1.10.8; ..." */
  const char *hosts;          /* comma-separated host names */
  const char *start_time;     /* ISO 8601 */
  const char *blas_kernel;
  int nranks;
  /* grid: naxes axes with names, and per point the axis values */
  int naxes;
  const char *const *axis_names;  /* e.g. "lr", "optimizer.batch_size" */
  const char *const *axis_paths;  /* canonical dotted paths */
  int64_t npoints;
  const double *point_axis_vals;  /* npoints x naxes, row-major */
} ds_store_meta;

typedef struct ds_store ds_store; /* opaque */

/* Creates a new store (fails with DS_EINPUT if path exists) with all rows. */
int ds_store_create(const char *path, const ds_store_meta *meta, const ds_summary_row *rows,
                    ds_store **out);
/* Writes point row->id: its series under /points/<id>/ and its summary row,
 * then flushes the file. */
int ds_store_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj);
/* Records end time and scheduler figures as root attributes. */
int ds_store_finish(ds_store *s, const char *end_time, double rank0_cpu_s, double wall_s);
int ds_store_close(ds_store *s);

/* Reading (any process, no MPI needed). */
int ds_store_open(const char *path, ds_store **out);
int ds_store_read_summary(ds_store *s, ds_summary_row **rows, int64_t *n);
int ds_store_read_traj(ds_store *s, int64_t id, ds_traj *out);
/* The sweep file's text as stored in /sweep/yaml (caller frees). */
int ds_store_sweep_text(ds_store *s, char **text);
/* Root attribute as text (strings, or numbers formatted). */
int ds_store_attr(ds_store *s, const char *name, char *buf, int n);
/* Axis names and per-point axis values (caller frees with free()). */
int ds_store_read_axes(ds_store *s, int *naxes, char ***names, double **vals, int64_t *npoints);

/* ---- additions (store room) ----
 * Notes on the functions above: read_summary's rows are one malloc'd block
 * (free()); read_axes' names is an array of naxes malloc'd strings (free
 * each, then the array; names and vals are non-NULL even when naxes == 0);
 * read_traj fills an initialised ds_traj (free with ds_traj_free) and fails
 * with DS_EINPUT if the point was not written yet; ds_store_attr truncates
 * to n-1 characters. */

/* Updates only the /summary row of point row->id (e.g. to mark it running)
 * and flushes; the point's trajectory group is not touched. */
int ds_store_write_row(ds_store *s, const ds_summary_row *row);
#endif
