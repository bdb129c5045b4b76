/* sched.h -- `dynsweep run`: rank 0 hands points to workers as they free up
 * (longest estimated first), receives their trajectories and checkpoints and
 * writes the store; with one rank, rank 0 does the work itself. A run on an
 * existing store continues it (docs/design.md, "Resume"). */
#ifndef DYNSWEEP_SCHED_H
#define DYNSWEEP_SCHED_H
#include <mpi.h>
#include <stdint.h>
#include "dynsweep/config.h"
#include "dynsweep/store.h"

#include "dynsweep/util.h" /* DS_EXIT_DRAINED, the drain signals */

typedef struct {
  const char *store_path;
  int quiet;           /* no progress output */
  int verbose;         /* one progress line per point */
  const char *library_versions; /* recorded in the store */
  double checkpoint_every;  /* seconds between worker checkpoints (0 = off) */
  double publish_every;     /* minimum seconds between publishes of the store */
  double drain_timeout;     /* seconds rank 0 waits for busy workers after a drain
                               signal before it aborts the job (their points then
                               resume from their last checkpoint) */
  int *drained;             /* out, every rank: 1 if the run stopped on a drain
                               signal with points left */
  double rank_mem_mb;       /* per-rank memory budget (MB) for train.ranks_per_point:
                               auto; <= 0 = 1024 */
} ds_run_opts;

/* ds_sched_run drains on SIGTERM/SIGUSR1 (finish or checkpoint running
 * points, hand out no more); the handlers are util.h's
 * ds_signals_install_drain, which main() installs before anything else. */

/* Collective over comm. Every rank returns the same status code. */
int ds_sched_run(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm);

/* A point's identity is its grid values and replica, not its position: maps
 * store rows (their axis values, naxes = sw->naxes per row, row-major, and
 * replica) to point indices of sw; map[i] = -1 where sw has no such point.
 * Returns the number of rows mapped. */
int64_t ds_sched_map_rows(const ds_sweep *sw, const double *row_axis_vals,
                          const ds_summary_row *rows, int64_t n, int64_t *map);
#endif
