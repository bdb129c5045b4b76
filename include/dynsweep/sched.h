/* sched.h -- `dynsweep run`: rank 0 hands points to workers as they free up
 * (longest estimated first), receives their trajectories and checkpoints and
 * writes the store; with one rank, rank 0 does the work itself. A run on an
 * existing store continues it (docs/design.md, "Resume"). */
#ifndef DYNSWEEP_SCHED_H
#define DYNSWEEP_SCHED_H
#include <mpi.h>
#include <stddef.h>
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
  int rank_mem_given;       /* rank_mem_mb came from --rank-memory: it is also what a
                               rank has (else measured, ds_rank_memory) */
  int max_attempts;         /* a point killed while running this often ends failed (<= 0: 2) */
  int retry_failed;         /* --retry failed: failed points run again */
  int isolate;              /* --isolate: DS_ISOLATE_AUTO (every point and tile of a run
                               after a job death runs in a child process of its worker),
                               _ALWAYS, _NEVER (docs/design.md, "Attempts") */
} ds_run_opts;

enum { DS_ISOLATE_AUTO = 0, DS_ISOLATE_ALWAYS = 1, DS_ISOLATE_NEVER = 2 };

/* What one rank may use, bytes (INFINITY if nothing limits it): --rank-memory
 * if given_mb > 0, else the least of the cgroup memory limit, MemAvailable and
 * SLURM_MEM_PER_NODE (each shared by the node_ranks training ranks of this
 * node), SLURM_MEM_PER_CPU x SLURM_CPUS_PER_TASK and the address-space limit
 * (ulimit -v) left. why gets the source, e.g. "cgroup limit 2.5 GB / 2 ranks". */
double ds_rank_memory(int node_ranks, double given_mb, char *why, size_t n);
/* 1 if point c on a team of team ranks cannot fit ranks having has bytes
 * each (its memory estimate, ds_point_mem_bytes, is pooled over the team);
 * reason gets e.g. "does not fit: estimated 80.1 GB, this rank has 2.5 GB (src)". */
int ds_point_misfit(const ds_point_cfg *c, int team, double has, const char *src, char *reason,
                    size_t n);

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
