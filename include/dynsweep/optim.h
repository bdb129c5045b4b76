/* optim.h -- optimisers acting on a flat parameter vector, learning-rate
 * schedules, and the end-to-end update of seed 002. */
#ifndef DYNSWEEP_OPTIM_H
#define DYNSWEEP_OPTIM_H
#include <stddef.h>
#include <stdint.h>
#include "dynsweep/config.h"

/* Full-batch gradient descent: theta -= lr * grad. */
void ds_gd_step(double *theta, const double *grad, size_t n, double lr);

/* An optimiser of kind spec->type over n parameters. All its state is one
 * contiguous vector (velocity, accumulators, ...) plus the step count, so a
 * checkpoint copies state[0..nstate) and t. */
typedef struct {
  ds_optim_spec spec;
  size_t n;
  double *state;
  size_t nstate;
  int64_t t;      /* steps taken */
  double *scratch; /* n, for weight decay */
} ds_optim;
int ds_optim_init(ds_optim *o, const ds_optim_spec *spec, size_t n);
void ds_optim_free(ds_optim *o);
/* One step with learning rate lr (from ds_schedule_lr). Weight decay is
 * coupled: g + weight_decay * theta. */
void ds_optim_step(ds_optim *o, double *theta, const double *grad, double lr);

/* Learning rate at step t (0-based): constant, piecewise (schedule_lrs[i]
 * from schedule_steps[i] on), or adaptive_norm lr * ||theta||^(2 - depth). */
double ds_schedule_lr(const ds_optim_spec *spec, int64_t t, double theta_norm, int depth);

/* Seed 002 Eq. 9 (with Eq. 11 as the exact d_out = 1 special case):
 * W <- (1 - lr*wd*N) W - lr * sum_{j=1}^{N} [W W^T]^{(j-1)/N} G [W^T W]^{(N-j)/N}
 * for W (rows x cols, column-major), G = dL/dW at W, N = depth; fractional
 * powers of PSD matrices by eigendecomposition with eigenvalues clamped at 0
 * and [.]^0 = I. */
int ds_e2e_step(double *W, int rows, int cols, int depth, const double *G, double lr, double wd);
#endif
