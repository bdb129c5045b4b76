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

/* Exact rules (docs/optimizers.md), g = grad + weight_decay * theta formed in
 * scratch (allocated, n entries, only when weight_decay != 0; grad is never
 * written), t = o->t after its increment (1 on the first step):
 *   gd, sgd   theta -= lr g                     (batching is the caller's)
 *   momentum  v = mu v + g; theta -= lr v                  (PyTorch SGD)
 *   nesterov  v = mu v + g; theta -= lr (g + mu v)         (PyTorch SGD)
 *   adagrad   s += g^2; theta -= lr g / (sqrt(s) + eps), s0 = initial_accumulator
 *             (tf.keras ApplyAdagradV2 form: eps = 0, or any eps < ~1e-17 sqrt(s0)
 *             such as 1e-30, is TF1 AdagradOptimizer; initial_accumulator = 0 is PyTorch)
 *   adadelta  a = rho a + (1-rho) g^2; d = g sqrt(u + eps) / sqrt(a + eps);
 *             u = rho u + (1-rho) d^2; theta -= lr d     (Zeiler; TF = PyTorch)
 *   rmsprop   s = alpha s + (1-alpha) g^2; theta -= lr g / (sqrt(s) + eps) (PyTorch)
 *   adam      m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 *             theta -= (lr / (1-b1^t)) m / (sqrt(v) / sqrt(1-b2^t) + eps) (PyTorch)
 * State layout (nstate entries, all zero at start except adagrad's s):
 *   gd, sgd: none; momentum, nesterov: v[0..n); adagrad: s[0..n);
 *   rmsprop: s[0..n); adadelta: a[0..n), u[n..2n); adam: m[0..n), v[n..2n). */
size_t ds_optim_nstate(ds_opt_kind type, size_t n);
/* Back to the initial state (t = 0, state as after ds_optim_init). */
void ds_optim_reset(ds_optim *o);

/* Learning rate at step t (0-based): constant, piecewise (schedule_lrs[i]
 * from schedule_steps[i] on), or adaptive_norm lr * ||theta||^(2 - depth).
 * piecewise: spec->lr for t < schedule_steps[0]; schedule_lrs[i] for
 * schedule_steps[i] <= t < schedule_steps[i+1]; the last one thereafter.
 * adaptive_norm: theta_norm = ||theta||_2 at the step's start; when
 * theta_norm is 0 (or NaN) the result is spec->lr (no scaling), for every depth. */
double ds_schedule_lr(const ds_optim_spec *spec, int64_t t, double theta_norm, int depth);

/* Seed 002 Eq. 9 (with Eq. 11 as the exact d_out = 1 special case):
 * W <- (1 - lr*wd*N) W - lr * sum_{j=1}^{N} [W W^T]^{(j-1)/N} G [W^T W]^{(N-j)/N}
 * for W (rows x cols, column-major), G = dL/dW at W, N = depth; fractional
 * powers of PSD matrices by eigendecomposition with eigenvalues clamped at 0
 * and [.]^0 = I. Computed exactly through the thin SVD of W (no fractional
 * power matrix is formed; see src/optim/e2e.c): one SVD and a few GEMMs.
 * Singular values <= max(rows, cols) * DBL_EPSILON * s_max count as exact 0.
 * depth 1: W <- (1 - lr*wd) W - lr G (plain GD). A non-finite entry of W or G
 * is propagated by that same plain update (no LAPACK call) so the caller's
 * divergence check sees it. Errors: DS_EINPUT (shape, depth < 1), DS_ENOMEM,
 * DS_ENUM (SVD did not converge). */
int ds_e2e_step(double *W, int rows, int cols, int depth, const double *G, double lr, double wd);
#endif
