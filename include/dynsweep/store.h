/* store.h -- the HDF5 store: one file per sweep (layout in docs/store.md).
 *
 * One writer (rank 0) at a time. The store knows rows, axes, series and
 * opaque checkpoint blobs; it knows nothing of networks.
 *
 * Crash safety (docs/store.md, "Durability"): the published file STORE is
 * never modified in place. A writer appends every write to the append-only
 * journal STORE.journal (length + CRC32 per record) and from time to time
 * PUBLISHES: copies STORE to STORE.tmp, applies the journal, closes, fsyncs
 * and renames STORE.tmp onto STORE. Readers always see a complete, closed
 * HDF5 file; after a kill, the journal records since the last publish are
 * replayed by ds_store_resume (a torn tail is ignored). */
#ifndef DYNSWEEP_STORE_H
#define DYNSWEEP_STORE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "dynsweep/traj.h"

enum {
  DS_ST_PENDING = 0,
  DS_ST_DONE = 1,
  DS_ST_DIVERGED = 2,
  DS_ST_FAILED = 3,
  DS_ST_RUNNING = 4
};
/* A final status: done, diverged or failed (a result; pending and running are not). */
static inline int ds_status_is_final(int st) { return st >= DS_ST_DONE && st <= DS_ST_FAILED; }
const char *ds_status_name(int status);

/* The columns of /summary, in order: the one definition of ds_summary_row
 * and of the HDF5 compound of /summary (src/store/store_h5.c), whose field
 * names these are. X(name, kind): kind I int64, i int32, d double, s the
 * reason string (char[DS_SUMMARY_REASON_LEN]). A new column goes at the end
 * (the journal records rows byte for byte: its header holds the row size). */
#define DS_SUMMARY_REASON_LEN 96
#define DS_SUMMARY_COLUMNS(X)                                                          \
  X(id, I) X(combo, I) X(replica, i) X(width, i) X(depth, i) X(lr, d) X(init_scale, d) \
  X(status, i)        /* DS_ST_* */                                                    \
  X(steps, I)         /* steps done */                                                 \
  X(final_loss, d) X(min_loss, d) X(final_test_loss, d)                               \
  X(diverged_step, I) /* -1 unless diverged */                                         \
  X(wall_s, d)        /* wall seconds of the point */                                  \
  X(rank, i)          /* rank that ran it (-1 pending) */                              \
  X(reason, s)        /* why it failed/diverged, "" otherwise */                       \
  /* outcome of the training loss (worker.h DS_OUT_*: 0 converged, 1 diverged,         \
   * 2 catapult, 3 failed, 4 unfinished) */                                            \
  X(outcome, i)                                                                        \
  X(event_step, I)    /* catapult: step of the loss peak; diverged: that step; else -1 */ \
  X(peak_ratio, d)    /* max_{t>=1} L_t / L_0 */                                       \
  X(plateaus, i)      /* plateaus in the recorded loss */                              \
  X(plateau_end, I)   /* step the last plateau ended, -1 if none */                    \
  X(team_size, i)     /* ranks in the team that ran it (0 pending) */                  \
  X(attempts, i)      /* times it was started (counted at assignment; a start handed   \
                         back by a drain is not counted); 0 in older stores */
#define DS_SUMMARY_CTYPE_I int64_t
#define DS_SUMMARY_CTYPE_i int32_t
#define DS_SUMMARY_CTYPE_d double
#define DS_SUMMARY_CTYPE_s char
#define DS_SUMMARY_DIM_I
#define DS_SUMMARY_DIM_i
#define DS_SUMMARY_DIM_d
#define DS_SUMMARY_DIM_s [DS_SUMMARY_REASON_LEN]
#define DS_SUMMARY_FIELD(name, kind) DS_SUMMARY_CTYPE_##kind name DS_SUMMARY_DIM_##kind;

/* One row of /summary. */
typedef struct {
  DS_SUMMARY_COLUMNS(DS_SUMMARY_FIELD)
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
  /* issue 11: the input files ("PATH\tSIZE\tHASH" lines) and their hash
   * (16 hex digits), root attributes inputs / inputs_hash; NULL = none */
  const char *inputs, *inputs_hash;
  /* issue 14: 1 = trajectories in segment files (format 5, STORE.seg/: a
   * publish costs what is new), 0 = one file (format 4: a publish copies the
   * store); the environment's DYNSWEEP_STORE_SEGMENTS=1/0 overrides it */
  int segments;
} ds_store_meta;

/* A row sweep whose store is estimated (plan) at this size or more gets the
 * segment layout (format 5); smaller ones stay one file (format 4), which a
 * user copies as one file and whose publish copy is cheap at that size
 * (docs/store.md, "Segments (format 5)"). */
#define DS_STORE_SEGMENTS_BYTES (256.0 * 1048576)

typedef struct ds_store ds_store; /* opaque */

/* Creates a new store (fails with DS_EINPUT if path exists) with all rows and
 * publishes it: STORE appears complete or not at all. Returns a writer. */
int ds_store_create(const char *path, const ds_store_meta *meta, const ds_summary_row *rows,
                    ds_store **out);
/* Opens an existing store for writing: takes the writer lock (STORE.journal),
 * replays the journal records written after the last publish (a torn tail is
 * ignored) and publishes them. DS_EINPUT for a file that is not a dynsweep
 * store (left untouched), DS_EIO for a damaged one or a store another run is
 * writing. */
int ds_store_resume(const char *path, ds_store **out);
/* Replaces the sweep text, hash, name, the grid and the summary of a writer
 * by meta/rows (npoints >= the old count; rows[i].id == i; old rows keep
 * their ids, new points are appended) and publishes. Used when a sweep file
 * only added grid values. */
int ds_store_extend(ds_store *s, const ds_store_meta *meta, const ds_summary_row *rows);
/* Journals point row->id: its series (published under /points/<id>/) and its
 * summary row. Durable once ds_store_sync returned (or the next publish). */
int ds_store_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj);
/* Records end time and scheduler figures (totals over all sessions) as root
 * attributes, marks the run state "complete" and publishes. end_time NULL:
 * an unfinished session, only the figures are recorded. */
int ds_store_finish(ds_store *s, const char *end_time, double rank0_cpu_s, double wall_s);
/* A writer publishes what is journaled, then releases the lock (and removes
 * the then empty journal). */
int ds_store_close(ds_store *s);

/* Reading (any process, no MPI needed). */
int ds_store_open(const char *path, ds_store **out);
int ds_store_read_summary(ds_store *s, ds_summary_row **rows, int64_t *n);
int ds_store_read_traj(ds_store *s, int64_t id, ds_traj *out);
/* The first record of point id's series NAME: its step and column 0. *found
 * = 0 (and DS_OK) when the point has no such series or was not written. Reads
 * one record, not the whole trajectory (stores of format >= 3). */
int ds_store_read_first(ds_store *s, int64_t id, const char *name, int64_t *step, double *v0,
                        int *found);
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

/* Journals only the /summary row of point row->id (e.g. to mark it running);
 * the point's trajectory group is not touched. A non-final row (pending,
 * running) never replaces a final one (done, diverged, failed). */
int ds_store_write_row(ds_store *s, const ds_summary_row *row);
/* `run --retry failed`: replaces a failed row by row (pending) in the writer's
 * rows, which ds_store_write_row would refuse; not journaled, so the caller
 * publishes at once (a kill before that leaves the row failed: retry again). */
int ds_store_reopen_row(ds_store *s, const ds_summary_row *row);

/* ---- durability, checkpoints, progress (issue 5) ---- */

/* Journals a checkpoint blob of unfinished point id (published as
 * /checkpoints/<id>, replacing the previous one; removed when the point's
 * result is written). Ignored for a point that already finished. */
int ds_store_write_ckpt(ds_store *s, int64_t id, const char *blob, size_t len);
/* The last published checkpoint of point id (malloc'd; DS_EINPUT if none). */
int ds_store_read_ckpt(ds_store *s, int64_t id, char **blob, size_t *len);
/* fsyncs the journal now if records were appended since the last sync. */
int ds_store_sync(ds_store *s);
/* Group commit: fsyncs the journal if records are waiting and the last
 * fsync is at least DS_STORE_COMMIT_S old (rank 0 calls it whenever it is
 * idle and at every tick). A finished point is durable against a machine
 * crash after the next group commit (<= ~0.75 s); against a kill of the
 * processes it is durable as soon as it is journaled (the page cache
 * survives the process). */
#define DS_STORE_COMMIT_S 0.5
int ds_store_commit(ds_store *s);
/* Publishes when due: at least every_s seconds after the last publish and
 * at least 100x the last publish's cost (so publishing stays <= ~1% of wall
 * time). force = 1: now. Nothing to publish: no-op. */
int ds_store_publish(ds_store *s, int force);
void ds_store_set_publish_every(ds_store *s, double every_s);
/* Run bookkeeping, written as root attributes at the next publish:
 * run_state ("running", "drained", "stopped", "complete"), the session's
 * start (unix seconds) and how many points had finished when it started. */
void ds_store_set_run(ds_store *s, const char *state, double session_start_unix, int64_t done0);
/* The run's predicted end (unix seconds; 0 = none), root attribute eta_unix,
 * written with the next publish (it forces none): what `status` shows. */
void ds_store_set_eta(ds_store *s, double eta_unix);
/* Map stores (issue 23): the pixels that killed their own process, one line
 * each ("IDX AXIS=V AXIS=V: killed by SIGSEGV (signal 11), peak RSS 9 MB"),
 * root attribute failed_pixels, written at the next publish (whole text:
 * the caller keeps what an earlier run recorded). */
int ds_store_set_failed_pixels(ds_store *s, const char *text);
/* New values of the inputs / inputs_hash root attributes (the input files
 * changed since the store was created), written at the next publish. */
int ds_store_set_inputs(ds_store *s, const char *inputs, const char *inputs_hash);
/* Issue 14: the node of each rank of this session (comma-separated, rank 0
 * first), root attribute rank_nodes, written at every publish from now on. */
int ds_store_set_rank_nodes(ds_store *s, const char *rank_nodes);

typedef struct {
  int64_t publishes, generation;
  double publish_s;        /* total seconds spent publishing */
  double last_publish_s;   /* cost of the latest publish */
  double copy_s;           /* of publish_s: copying STORE to STORE.tmp (+ reserving space) */
  double sync_s;           /* of publish_s: fsync of the new file, rename, directory fsync */
  double journal_s;        /* seconds spent appending + fsyncing the journal */
  double journal_bytes;    /* bytes appended to the journal */
  int64_t journal_records;
  int64_t journal_syncs;   /* fsyncs of the journal */
  double file_bytes;       /* size of the published file */
} ds_store_stats;
void ds_store_get_stats(const ds_store *s, ds_store_stats *st);

/* Best effort, for a complete store: removes an empty journal and a stale
 * STORE.tmp a killed writer left, if no writer holds the lock. */
void ds_store_tidy(const char *path);

/* `dynsweep verify` (docs/store.md, "Integrity"): reads every object,
 * attribute and dataset of the store at path, checks the checksums (HDF5
 * metadata, Fletcher32, the string digests, checkpoint CRCs) and the
 * consistency of index, series, summary and grid, and reports the journal.
 * Prints one line per damaged thing (naming the points) and a final line to
 * out; *ndamaged = their count. DS_EINPUT: not a dynsweep store at all. */
int ds_store_verify(const char *path, FILE *out, int64_t *ndamaged);

/* Live view for `dynsweep status` (reader handle, no lock): the summary rows
 * of the published file with the journal's newer rows folded in, the number
 * of such journal records, and the journal's modification time (unix s, 0 if
 * there is no journal). */
int ds_store_read_summary_live(ds_store *s, ds_summary_row **rows, int64_t *n, int64_t *nrec,
                               double *journal_mtime);
/* Is a writer running on STORE (liveness.c)? 1 with its pid (-1: a holder on
 * another node), 0 if no writer holds the store's lock as far as this node
 * can see. Takes no lock. */
int ds_store_live_writer(const char *path, long *pid);
/* ---- map stores (issue 13; docs/store.md, "Map stores") ----
 * A map sweep's points record only their outcome (ds_map_rec, map.h). Its
 * store keeps them as N-dimensional chunked, compressed (shuffle + deflate),
 * Fletcher32-checksummed arrays over the grid axes under /map (outcome,
 * step, measure, final_ratio, peak_ratio) with per-axis coordinate vectors
 * /map/axes/<name>; /summary and /series are empty and /grid has no
 * axis_values. Journal, publish, resume, close, finish and tidy work as for
 * row stores (a MAP journal record per tile). The row readers (read_summary,
 * read_axes) fail with DS_EINPUT on a map store. */
#include "dynsweep/map.h"
typedef struct {
  int naxes;                       /* grid axes, the sweep's order (last axis fastest) */
  const int64_t *shape;            /* values per axis */
  const double *const *axis_vals;  /* per axis, shape[a] values */
  int64_t steps;                   /* train.steps (chooses the step type) */
  int64_t tile_points;             /* points per tile (attribute, informative) */
  int refine_levels;               /* 0 = dense map; else grid.refine's levels ... */
  int refine_axes[2];              /* ... over these two axes (indices) */
  int early_stop;                  /* map.early_stop: root attribute map_measure "early_stop",
                                      else "study" (issue 24; stores before it have none) */
} ds_map_meta;
/* Creates a map store (meta as for ds_store_create, with meta->npoints =
 * product of shape and meta->point_axis_vals NULL): all pixels DS_MAP_UNSET.
 * Nothing is O(points) on disk at creation (chunks are allocated when first
 * written). meta->naxes == mm->naxes >= 1. */
int ds_store_create_map(const char *path, const ds_store_meta *meta, const ds_map_meta *mm,
                        ds_store **out);
/* 1 for a map store (reader or writer handle), 0 otherwise. */
int ds_store_is_map(ds_store *s);
/* The map's shape (malloc'd, naxes entries) and refinement (refine_axes
 * {-1, -1} for a dense map). Any output pointer may be NULL. */
int ds_store_map_info(ds_store *s, int *naxes, int64_t **shape, int *refine_levels,
                      int refine_axes[2]);
/* Fills a refined map's outcome bytes o (product of shape, row-major) with
 * the pixels its refinement inferred (DS_MAP_INFERRED | the corners' class),
 * as every reader does (python: dynsweep.maps.fill_refined); a no-op for
 * levels <= 0. axes as ds_store_map_info's refine_axes. */
int ds_map_fill_refined(uint8_t *o, int naxes, const int64_t *shape, int levels,
                        const int axes[2]);
/* The map's axis names and per-axis coordinate vectors (/map/axes/<name>):
 * names as ds_store_read_axes (naxes malloc'd strings in a malloc'd array),
 * vals a malloc'd array of naxes malloc'd vectors of shape[a] values. */
int ds_store_read_map_axes(ds_store *s, int *naxes, char ***names, double ***vals);
/* A refined map's pixels trained at each level (issue 13): trained[k] for
 * k = 0 (the coarse grid) .. levels, from outcome bytes o as read (before
 * ds_map_fill_refined: trained = set and not DS_MAP_INFERRED). A pixel's
 * level is the deepest of its refined coordinates', index i having level
 * levels - (the power of two in i, at most levels). */
void ds_map_level_counts(const uint8_t *o, int naxes, const int64_t *shape, int levels,
                         const int axes[2], int64_t *trained);
/* Journals n records at linear grid indices idx (one tile, hundreds to
 * thousands of points, indices strictly ascending). Durable like
 * ds_store_write_point (journaled now, published at the next publish). A
 * record whose outcome is DS_MAP_INFERRED|x never replaces a trained one
 * (such records are dropped here). Outcomes: DS_OUT_CONVERGED..DS_OUT_FAILED,
 * optionally | DS_MAP_INFERRED; step in [-1, 65534] when train.steps fits
 * uint16 (else any int32). */
int ds_store_write_map(ds_store *s, int64_t n, const int64_t *idx, const ds_map_rec *recs);
/* Every pixel's outcome byte (malloc'd, product-of-shape bytes), with the
 * journaled records folded in (the writer's, or for a reader handle those of
 * a running writer's journal). */
int ds_store_read_map_outcomes(ds_store *s, uint8_t **out, int64_t *n);
/* All records (malloc'd array of n ds_map_rec, linear grid order), journal
 * folded in as above. */
int ds_store_read_map(ds_store *s, ds_map_rec **recs, int64_t *n);
#endif
