/* worker.h -- train one point: build its data and network, run the optimiser,
 * record the series the sweep file asks for. Runs on a worker team (team
 * size 1 for now); spectra go through the team's ScaLAPACK grid. */
#ifndef DYNSWEEP_WORKER_H
#define DYNSWEEP_WORKER_H
#include <stdint.h>
#include "dynsweep/config.h"
#include "dynsweep/map.h"
#include "dynsweep/spectra.h"
#include "dynsweep/traj.h"

/* Outcome of one point; status is one of the DS_ST_* codes of store.h. */
typedef struct {
  int64_t id;
  int32_t status;
  int64_t steps;          /* optimiser steps applied */
  double final_loss, min_loss, final_test_loss;
  int64_t diverged_step;  /* -1 unless diverged */
  double wall_s;
  int32_t rank;           /* world rank of the team root */
  char reason[96];
  /* issue 4: outcome of the point (from its training loss) */
  int32_t outcome;        /* DS_OUT_* (a row point: never DS_OUT_CONVERGED) */
  int64_t event_step;     /* catapult: step of the loss peak; diverged: the diverged step; else -1 */
  double peak_ratio;      /* max_{t >= 1} L_t / L_0 (the step losses) */
  int32_t plateaus;       /* plateaus in the recorded loss (definition: ds_worker_plateaus) */
  int64_t plateau_end;    /* step where the last plateau ended, -1 if none */
} ds_point_result;

/* Outcomes (docs/store.md, "Outcome"; the rule: dynsweep/outcome.h):
 *   DS_OUT_CONVERGED_ROW (6) finished and converged: the loss fell below
 *            train.tol, or the recorded loss settled (outcome.h);
 *   DS_OUT_UNCONVERGED (5) finished its steps without diverging, without a
 *            catapult and without converging (issue 24);
 *   catapult = finished after the loss rose above record.spectra.catapult_factor
 *            x its initial value; diverged; failed; unfinished (stopped with a
 *            checkpoint).
 *   DS_OUT_CONVERGED (0): map pixels: converged in the map's measure (map.h);
 *            row stores written before issue 24: finished without diverging or
 *            a catapult, converged or not -- readers re-classify such rows by
 *            the rule of outcome.h (their loss series and train.tol are stored),
 *            the worker no longer writes it for a row point. */
enum { DS_OUT_CONVERGED = 0, DS_OUT_DIVERGED = 1, DS_OUT_CATAPULT = 2, DS_OUT_FAILED = 3,
       DS_OUT_UNFINISHED = 4, DS_OUT_UNCONVERGED = 5, DS_OUT_CONVERGED_ROW = 6 };
const char *ds_outcome_name(int outcome);

/* Plateaus of a loss series (steps ascending): a plateau is a run of records
 * from step a to step b >= max(2a, a + 10) over which the loss stays within 5%
 * of its value at a, ended by a drop below 80% of that value. Returns the
 * count; *last_end receives the step of the last drop (-1 if none). */
int ds_worker_plateaus(const int64_t *step, const double *loss, int64_t n, int64_t *last_end);

/* Checkpointing a point mid-trajectory (issue 5). A checkpoint is one opaque
 * byte blob made and read only by the worker (weights, optimiser state, batch
 * sampler and random-stream positions, step, the series recorded so far);
 * whoever keeps it (rank 0 / the store) treats it as bytes. Resuming from it
 * continues the trajectory bitwise identically to an uninterrupted run. The
 * blob ends with a CRC-32 of the rest: a damaged one is not resumed from (a
 * warning naming the point; the point restarts from step 0). */
typedef struct {
  int64_t every_steps;            /* save every k steps (0 = off) */
  double every_s;                 /* save when this many wall seconds passed since the last (0 = off) */
  volatile int *stop;             /* when *stop becomes non-zero: save and return at once with
                                     res->status = DS_ST_PENDING (the point is unfinished) */
  int (*save)(void *arg, int64_t id, const char *blob, size_t len); /* non-zero = error */
  void *arg;
  const char *resume;             /* blob to continue from, or NULL to start afresh */
  size_t resume_len;
} ds_ckpt;

/* Trains point p of sweep sw on team t, filling traj (initialised by the
 * caller) and res. A numerical blow-up is a result (status diverged), not an
 * error; an error return means the point could not be run at all. ck may be
 * NULL (no checkpoints, start afresh). */
int ds_worker_run_point(const ds_sweep *sw, const ds_point *p, ds_team *t, ds_traj *traj,
                        ds_point_result *res, const ds_ckpt *ck);
/* What a rank has (bytes; ds_rank_memory, the least over the run's ranks:
 * the same on every rank), from which ds_worker_run_point gives a CNN's NTK
 * its budget for J (ds_point_cnn_jbytes); 0 (the default): not known, 1 GiB.
 * verbose: the team root logs the budget and the NTK's path of each point.
 * Set once per process, before points run (src/sched/rows.c; a map sweep,
 * maps.c, does not measure its ranks and keeps 1 GiB). */
void ds_worker_set_rank_memory(double bytes, int verbose);

/* A "loss rose" event (record.spectra.*.on_loss_rise): step loss cur exceeds
 * the previous step's prev by more than rel * |prev| (rel =
 * record.spectra.loss_rise_rel; 0 = any rise). Non-finite losses never rise. */
int ds_worker_loss_rose(double prev, double cur, double rel);

/* The record schedule: should step t (0..steps) be recorded? */
int ds_worker_record_step(const ds_record_spec *r, int64_t t, int64_t steps);
/* A map tile (issue 13; docs/maps.md). A pixel whose own process died
 * (isolation, "A pixel that kills its process" in docs/maps.md): a worker
 * sends these after a tile's records, rank 0 logs them. */
typedef struct {
  int64_t idx;       /* grid index */
  int32_t signo;     /* the signal that killed the child (0: it exited with code) */
  int32_t code;
  int64_t maxrss_kb; /* the child's peak RSS */
} ds_pixel_fail;

/* Trains the count points idx[] of sweep sw (a tile) into recs: runs of
 * points that may be trained together go through ds_tile_train, the others
 * one at a time (ds_worker_run_point). isolate: in child processes, a tile
 * whose child dies split down to the pixels that kill it; those pixels are
 * listed in *fails (malloc'd, *nfail of them; NULL when none); a child
 * drained before it sent its records leaves its pixels DS_MAP_UNSET.
 * Benchmark knob DYNSWEEP_BENCH_NOWORK=1 and the test-only fault switch
 * DYNSWEEP_TEST_CRASH=pixel:N: src/worker/tilerun.c. */
void ds_worker_train_tile(const ds_sweep *sw, ds_team *team, int isolate, const int64_t *idx,
                          int64_t count, ds_map_rec *recs, ds_pixel_fail **fails, int64_t *nfail);
#endif
