/* map.h -- map sweeps (issue 13): points that record their outcome only.
 *
 * A map sweep (a `map:` section in the sweep file) trains every point of its
 * grid and keeps, per point, one ds_map_rec: how training ended (the outcome
 * class), the step it was decided, the trainability study's convergence
 * measure (docs/maps.md) and two loss ratios. The store keeps these as
 * N-dimensional arrays over the grid axes (docs/store.md, "Map stores"), not
 * as summary rows and series.
 *
 * The convergence measure of one run (Sohl-Dickstein 2024), from its losses
 * L_0 .. L_{T-1} (T = train.steps: the loss before each of the T updates):
 *   v_t = L_t / L_0, non-finite values and values above DS_MAP_CAP -> DS_MAP_CAP;
 *   converged when the mean of the last DS_MAP_TAIL v_t is below 1;
 *   measure = -sum_t v_t when converged, +sum_t 1/v_t otherwise.
 * By default every point is trained for all T steps and the measure is the
 * study's exactly (a loss that climbs above the cap and comes back counts as
 * it does there). Non-finite values count as the cap: the study's stated rule
 * (its code's v*fin + cap*(1-fin) gives NaN there, inf*0; docs/maps.md, "The
 * measure at the cap"). A point is stopped early only where the rest of its
 * series is known: the tile trainer stops a point whose output weights hold a
 * non-finite entry (every later loss is then non-finite) and passes its
 * remaining losses as NaN. The option map.early_stop (sweep file: map:
 * {early_stop: true}) restores the older, faster rule: a point stops once v_t
 * reaches the cap and its remaining steps count as the cap (which differs from
 * the study's measure where the loss comes back from above the cap).
 *
 * Outcome classes (worker.h DS_OUT_*): diverged = not converged in the
 * measure's sense; catapult = converged after the loss rose above
 * catapult_factor x L_0 (record.spectra.catapult_factor); converged otherwise.
 * Decided step: diverged: the first step v reached the cap (T if it never did);
 * catapult: the step of the peak; converged: the first step from which v
 * stayed below 1. */
#ifndef DYNSWEEP_MAP_H
#define DYNSWEEP_MAP_H
#include <stdint.h>

#define DS_MAP_CAP 1e6
#define DS_MAP_TAIL 20
/* outcome byte of a pixel nobody computed (yet) */
#define DS_MAP_UNSET 255
/* outcome bit: the pixel was not trained but filled from the corners of a
 * refinement cell that never split (the low bits are the corners' outcome) */
#define DS_MAP_INFERRED 0x40

/* One point of a map: 21 bytes in memory, <= 16 bytes per point on disk. */
typedef struct {
  uint8_t outcome;     /* DS_OUT_CONVERGED / DIVERGED / CATAPULT / FAILED, or DS_MAP_UNSET;
                          | DS_MAP_INFERRED for refinement fills */
  int32_t step;        /* decided step (see above); -1 unknown */
  float measure;       /* the convergence measure; NaN when not computed */
  float final_ratio;   /* v_{T-1} (capped) */
  float peak_ratio;    /* max_t v_t (capped) */
} ds_map_rec;

/* Streaming accumulator of one point's loss series (no series is kept). */
typedef struct {
  int64_t t;           /* losses added so far */
  double l0;
  double sum_v, sum_inv, peak, last;
  int64_t peak_step, last_ge1, cap_step; /* cap_step: the first step at the cap, or -1 */
  int early_stop;      /* map.early_stop: decided (and frozen) once v reaches the cap */
  double tail[DS_MAP_TAIL];
} ds_map_acc;

/* Starts a point's accumulator: the study's measure over every step
 * (ds_map_acc_start), or with early_stop (map.early_stop) decided at the cap. */
void ds_map_acc_start(ds_map_acc *a);
void ds_map_acc_start_rule(ds_map_acc *a, int early_stop);
/* Adds the next loss L_t. Returns 1 when the point is decided: only with
 * early_stop, once v_t reached the cap (the caller may stop training it; later
 * losses are ignored). Without it every loss counts and it returns 0. */
int ds_map_acc_add(ds_map_acc *a, double loss);
/* The record after T losses (T = train.steps). Fewer added: the remaining
 * steps repeat the last v (the cap for a point stopped at the cap or at a
 * non-finite loss). */
void ds_map_acc_finish(const ds_map_acc *a, int64_t T, double catapult_factor, ds_map_rec *out);
/* The record of a point that could not be trained (outcome failed). */
void ds_map_rec_failed(ds_map_rec *out);
#endif
