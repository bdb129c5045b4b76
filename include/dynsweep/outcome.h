/* outcome.h -- when a finished point counts as converged (issue 24).
 *
 * Header-only and free of MPI so that the worker (which classifies a point as
 * it finishes) and the analysis commands (which re-read the finished points of
 * stores written before this rule existed) apply the very same rule to the
 * very same stored data (docs/store.md, "Outcome").
 *
 * A point that finished its steps without diverging and without a catapult is
 *   converged    when its training loss fell below train.tol (tol > 0: the run
 *                stopped there), or when the recorded loss has SETTLED:
 *   unconverged  otherwise.
 * Settled, on the recorded `loss` series (steps ascending; the last record is
 * the last step T): let a be the last record at or before T - ceil(T/10) (the
 * final window is the last tenth of the run, or more), p the last record at
 * or before a - (T - a) (a window as long before it), L_0 the first record.
 * gain = L_0 - L_T, d1 = L_a - L_T, d0 = L_p - L_a. Settled iff
 *   gain > 0                      the run learned something,
 *   |d1| <= DS_SETTLE_REL * L_T   its last tenth changed the loss by at most
 *     + DS_SETTLE_FLOOR * L_0     1% of the loss itself (flat to two digits
 *                                 over the last 10% of training; changes
 *                                 below 1e-12 L_0 are round-off), and
 *   d1 <= max(d0, 1e-6 * gain)    its decrease is not speeding up (a run that
 *                                 is leaving a saddle has d1 > d0).
 * A loss still falling at a visible rate (demo point 15: 0.097 against a
 * floor of 0.0002, falling by 20% in its last tenth), a loss falling
 * geometrically towards 0 (give train.tol to call that converged), a run that
 * stays on its initial plateau (gain <= 0) and a run leaving a saddle at its
 * last steps are unconverged. Limit: from the loss alone a run that is still
 * approaching a saddle (decelerating) cannot be told from one at a minimum.
 * No `loss` series, or records too sparse for the two windows: only
 * train.tol decides. */
#ifndef DYNSWEEP_OUTCOME_H
#define DYNSWEEP_OUTCOME_H
#include <math.h>
#include <stdint.h>

#define DS_SETTLE_REL 1e-2
#define DS_SETTLE_FLOOR 1e-12 /* of L_0: changes below it are round-off */

/* 1 if the recorded loss (n records, steps ascending) has settled by the
 * rule above; T = train.steps (the run's last step). */
static inline int ds_outcome_settled(const int64_t *step, const double *loss, int64_t n, int64_t T) {
  if (n < 3 || T < 2 || step[n - 1] != T) return 0;
  int64_t ea = T - (T + 9) / 10, ia = -1, ip = -1;
  for (int64_t i = 0; i < n - 1; i++)
    if (step[i] <= ea) ia = i;
  if (ia < 0) return 0;
  int64_t ep = step[ia] - (T - step[ia]);
  for (int64_t i = 0; i < ia; i++)
    if (step[i] <= ep) ip = i;
  if (ip < 0) return 0;
  double L0 = loss[0], LT = loss[n - 1], La = loss[ia], Lp = loss[ip];
  if (!isfinite(L0) || !isfinite(LT) || !isfinite(La) || !isfinite(Lp)) return 0;
  double gain = L0 - LT, d1 = La - LT, d0 = Lp - La;
  if (!(gain > 0)) return 0;
  /* + 1e-12 L_0: a loss at round-off (1e-31 wandering by more than 1% of
   * itself) has settled too */
  if (fabs(d1) > DS_SETTLE_REL * fabs(LT) + DS_SETTLE_FLOOR * fabs(L0)) return 0;
  return d1 <= fmax(d0, 1e-6 * gain);
}

/* The whole rule: converged (1) or unconverged (0) for a point that finished
 * without diverging or a catapult; final_loss its last training loss. */
static inline int ds_outcome_converged(const int64_t *step, const double *loss, int64_t n,
                                       int64_t T, double tol, double final_loss) {
  if (tol > 0 && final_loss < tol) return 1;
  return step && loss ? ds_outcome_settled(step, loss, n, T) : 0;
}
#endif
