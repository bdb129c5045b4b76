/* nn.h -- models: multilayer perceptrons with hand-written forward/backward
 * passes on BLAS, and the losses.
 *
 * Layout conventions (all column-major, BLAS style):
 *   X      d_0 x n       one column per sample
 *   W_l    d_l x d_{l-1} l = 1..L (L = depth)
 *   b_l    d_l
 *   Z_l    d_l x n       Z_l = W_l A_{l-1} + b_l 1^T,  A_0 = X
 *                        (NTK parameterisation: W_l A_{l-1} / sqrt(d_{l-1}))
 *   A_l    d_l x n       A_l = relu(Z_l) for a ReLU net, tanh(g Z_l) for a tanh
 *                        net (g = gain) (l < L), else Z_l
 *   F = Z_L              network output, d_L x n
 * All parameters live in one contiguous vector theta (llm.c style): W_1, b_1,
 * W_2, b_2, ... (b_l absent without bias); ds_mlp.w_off/b_off index it.
 * nn knows nothing of MPI or HDF5. */
#ifndef DYNSWEEP_NN_H
#define DYNSWEEP_NN_H
#include <stddef.h>
#include "dynsweep/util.h"

enum { DS_ACT_LINEAR = 0, DS_ACT_RELU = 1, DS_ACT_TANH = 2 };

typedef struct {
  int act;       /* DS_ACT_* for hidden layers; the output layer is linear */
  int bias;
  int depth;     /* L */
  int *dims;     /* L+1 entries */
  size_t nparams;
  size_t *w_off; /* L entries: offset of W_l (l = 1..L stored at [l-1]) */
  size_t *b_off; /* L entries, only meaningful with bias */
  /* --- issue 3 (set by ds_mlp_setup; ds_mlp_init gives standard, all trained) --- */
  int param;        /* DS_PARAM_STANDARD, or DS_PARAM_NTK: Z_l = W_l A_{l-1} / sqrt(d_{l-1}) + b_l */
  int train_output; /* 0: gradient of the last layer (W_L, b_L) is zeroed (fixed output layer) */
  /* --- issue 13 --- */
  double gain; /* tanh nets: A_l = tanh(gain Z_l) (1 after ds_mlp_init; set before use) */
} ds_mlp;

/* Workspace for n samples: activations and backprop buffers. */
typedef struct {
  int n;
  double **Z;    /* Z[l], l = 1..L, d_l x n (Z[0] unused) */
  double **A;    /* A[l], l = 1..L-1 (A[0] = X, A[L] = Z[L] by reference) */
  double *dF;    /* d_L x n */
  double *bufa, *bufb; /* max_l d_l x n each */
  /* --- issue 3 --- */
  void *prod; /* buffers of the JVP/HVP/approx products: NULL until first used
                 (ds_mlp_work_products); freed by ds_mlp_work_free */
  /* --- issue 13 --- */
  void *e2e; /* linear nets' end-to-end step (mlp.c): NULL until first used */
} ds_mlp_work;

int ds_mlp_init(ds_mlp *m, int act, int bias, int depth, const int *dims);
void ds_mlp_free(ds_mlp *m);
/* (Note: one aligned allocation; in a linear net A[l] aliases Z[l]. After
 * ds_mlp_forward, Z[l] and A[l] hold the pre-/post-activations of X.) */
int ds_mlp_work_init(const ds_mlp *m, int n, ds_mlp_work *w);
void ds_mlp_work_free(ds_mlp_work *w);

/* Gaussian init: W_l entries N(0, scale^2 / d_{l-1}), biases 0. Draws the
 * entries of W_1, W_2, ... in order from rng (column-major). */
void ds_mlp_init_gaussian(const ds_mlp *m, double scale, ds_rng *rng, double *theta);

/* Forward pass over n = w->n samples; returns pointer to F (d_L x n, inside w). */
const double *ds_mlp_forward(const ds_mlp *m, const double *theta, const double *X, ds_mlp_work *w);

/* Squared-error loss L = c * sum (F - Y)^2, where c is 1, 1/2, 1/n or 1/(2n)
 * (the coefficient is passed directly). dF (may be NULL) receives dL/dF. */
double ds_loss_mse(const double *F, const double *Y, size_t count, double c, double *dF);

/* Loss and full gradient. Runs forward, the loss with coefficient c, and the
 * backward pass; grad has nparams entries (overwritten). Returns the loss. */
double ds_mlp_loss_grad(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                        double c, double *grad, ds_mlp_work *w);

/* Backward pass alone (added): given w->dF = dL/dF (d_L x n) and the buffers
 * of the last ds_mlp_forward on this workspace (same theta), writes the full
 * gradient into grad (nparams entries, overwritten). Lets callers backprop
 * any output cotangent (Jacobian rows, other losses). */
void ds_mlp_backward(const ds_mlp *m, const double *theta, ds_mlp_work *w, double *grad);

/* Loss only (forward + loss), no gradient. */
double ds_mlp_loss(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                   double c, ds_mlp_work *w);

/* FLOPs of one loss+gradient evaluation on n samples (for cost estimates and
 * the benchmark): 2*n*sum d_l d_{l-1} forward, twice that backward (minus the
 * unneeded dA_0). */
double ds_mlp_step_flops(const ds_mlp *m, int n);
/* The flops the step really computes: ds_mlp_step_flops, or for a linear net
 * taking its end-to-end product step (mlp.c) the net over the d_0 columns of
 * I plus F = P X and M = G X^T over the n samples. */
double ds_mlp_step_flops_run(const ds_mlp *m, int n);

/* ======================= issue 13: tanh nets, mean field ======================= */
/* Layer l's weight scale alpha_l (Z_l = alpha_l W_l A_{l-1} + b_l): 1
 * (standard), 1/sqrt(d_{l-1}) (NTK), and under mean field 1/sqrt(d_{l-1})
 * for hidden layers and 1/d_{L-1} for the output layer (Sohl-Dickstein 2024:
 * the output is the last layer's W a / sqrt(fan_in) divided by sqrt(fan_in)
 * once more; the bias b_L, not in that study, is added unscaled). */
double ds_mlp_alpha(const ds_mlp *m, int l);
/* The SLEEF kernel tanh nets use on this machine (src/nn/tanh.c). */
const char *ds_nn_tanh_kernel(void);
/* Gradient descent with per-layer learning rates: W_1, b_1 move by lr_in,
 * W_L, b_L by lr_out, the layers between by lr (lr_in/lr_out <= 0: lr).
 * theta -= lr_l grad layer by layer, by the daxpy of ds_gd_step. */
void ds_mlp_gd_step_layers(const ds_mlp *m, double *theta, const double *grad, double lr,
                           double lr_in, double lr_out);

/* ======================= issue 3: the studies' models ======================= */
#include "dynsweep/config.h"

/* Like ds_mlp_init with a parameterisation (DS_PARAM_*) and whether the output
 * layer is trained. */
int ds_mlp_setup(ds_mlp *m, int act, int bias, int depth, const int *dims, int param,
                 int train_output);

/* Allocates the extra buffers the products below need (about twice the
 * forward activations) in w, if not done yet. Optional: the product functions
 * call it on first use, but they return nothing, so an allocation failure
 * there shows up only as NaN outputs (and DS_ENOMEM in ds_errmsg()); call this
 * first to get the error as a value. Plain training never allocates them. */
int ds_mlp_work_products(const ds_mlp *m, ds_mlp_work *w);

/* Initialise theta by spec->init (every kind of ds_init_kind except
 * DS_INIT_FILE, which the caller loads and writes into theta itself), times
 * spec->init_scale, honouring spec->symmetric (seed 000 pairing; needs an even
 * hidden width, depth 2) and spec->init_std / balanced_identity. Draws only
 * from rng, in a documented order (src/nn/init.c; every entry of W_1, W_2, ...
 * column-major for the iid kinds). Biases start at 0. gaussian with init_std 0
 * equals ds_mlp_init_gaussian(init_scale) bitwise. Note: the seed 000 pairing
 * makes a ReLU net linear at init (f(x) = 1/2 W_2 W_1 x, scaled), not zero.
 * DS_EINPUT: FILE, balanced with a hidden width < min(d_in, d_out), symmetric
 * without depth 2 / even width, non-finite init_scale, init_std < 0. */
int ds_mlp_init_weights(const ds_mlp *m, const ds_model_spec *spec, ds_rng *rng, double *theta);

/* A loss: type DS_LOSS_*, exponent p (lp), coefficient c (see config.h). */
typedef struct {
  int type;
  double p;
  double c;
} ds_loss;
/* Coefficient from the reduction for n samples (half = 1/p for lp).
 * Cross-entropy takes sum or mean only: a half reduction is DS_EINPUT. For
 * probability (not one-hot) columns y_i with sum t_i, CE is
 * c sum_i sum_k y_ki (logsumexp(f_i) - f_ki), gradient c (t_i softmax(f_i) - y_i),
 * Hessian c t_i (diag(s_i) - s_i s_i^T). */
int ds_loss_setup(ds_loss *l, const ds_loss_spec *spec, int n);
/* L and (if dF) dL/dF for outputs F, targets Y (k x n). Cross-entropy takes
 * one-hot (or probability) columns Y. */
double ds_loss_eval(const ds_loss *l, const double *F, const double *Y, int k, int n, double *dF);
/* ds_loss_eval over consecutive blocks of samples (the blocked step): dF of
 * the block, and for squared error the loss's partial sums carried in part[8]
 * from block to block (first starts them), *loss set at the last block:
 * bitwise ds_loss_eval over all samples. Returns 0 (dF only) for other
 * losses, or when a block but the last has k n % 8 != 0: evaluate the
 * loss on the whole F afterwards. */
int ds_loss_eval_blk(const ds_loss *l, const double *F, const double *Y, int k, int n, double *dF,
                     double *part, int first, int last, double *loss);
/* Second derivative action: out = (d^2 L / dF^2) V for V (k x n). */
void ds_loss_hess_apply(const ds_loss *l, const double *F, const double *Y, int k, int n,
                        const double *V, double *out);

double ds_mlp_loss_grad_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                          const ds_loss *l, double *grad, ds_mlp_work *w);
double ds_mlp_loss_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                     const ds_loss *l, ds_mlp_work *w);

/* Optimal loss L* of a single linear map W (d_out x d_in) on (X, Y): closed
 * form (least squares) for mse, a converged numerical optimum for lp (Newton
 * from the least-squares solution). Cross-entropy: DS_EINPUT (not defined). */
int ds_linear_optimum(const ds_loss *l, const double *X, const double *Y, int d_in, int d_out,
                      int n, double *Lstar);
/* The same, also returning the minimiser W (d_out x d_in, column-major; may be
 * NULL). mse: the minimum-norm least-squares solution (dgelsd). */
int ds_linear_optimum_w(const ds_loss *l, const double *X, const double *Y, int d_in,
                        int d_out, int n, double *W, double *Lstar);

/* Pearlmutter products (exact, by hand, every activation/parameterisation):
 * JVP: JV = J(theta) v, the directional derivative of F (d_L x n).
 * Output-Hessian product: out = (d^2/dtheta^2 <G, F(theta)>) v for fixed G.
 * Loss HVP: out = H_L(theta) v = J^T (d2L/dF2) J v + H_<dL/dF, F> v. */
void ds_mlp_jvp(const ds_mlp *m, const double *theta, const double *X, const double *v,
                ds_mlp_work *w, double *JV);
void ds_mlp_hvp_output(const ds_mlp *m, const double *theta, const double *X, const double *G,
                       const double *v, ds_mlp_work *w, double *out);
double ds_mlp_loss_hvp(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                       const ds_loss *l, const double *v, ds_mlp_work *w, double *out);

/* Linearised (order 1) or quadratic (order 2, the NQM) model of m around
 * theta0 (seed 003): f_lin(theta) = f(theta0) + J(theta0) d, f_quad adds
 * 1/2 d^T H_f(theta0) d, d = theta - theta0. Works for any X (nothing is
 * cached; w->n <= max_n). Gradient: J^T g (+ H_<g,f>(theta0) d), g = dL/dF.
 * With a fixed output layer, its part of d is ignored (it never moves).
 * Cost per loss+gradient: about 5 (order 1) / 11 (order 2) GEMMs per layer,
 * vs 3 for the network itself. */
typedef struct {
  const ds_mlp *m;
  int order;
  double *theta0; /* copy */
  double *d;      /* scratch, nparams */
  double *F;      /* scratch outputs */
  /* implementation scratch may be added */
  int max_n;      /* F holds d_L x max_n: w->n must not exceed it */
} ds_approx;
int ds_approx_init(ds_approx *a, const ds_mlp *m, int order, const double *theta0, int max_n);
void ds_approx_free(ds_approx *a);
/* Outputs of the approximate model at theta on X (n = w->n) into F (d_L x n). */
void ds_approx_forward(ds_approx *a, const double *theta, const double *X, ds_mlp_work *w,
                       double *F);
double ds_approx_loss_grad(ds_approx *a, const double *theta, const double *X, const double *Y,
                           const ds_loss *l, double *grad, ds_mlp_work *w);
#endif
