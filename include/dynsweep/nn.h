/* nn.h -- models: multilayer perceptrons with hand-written forward/backward
 * passes on BLAS, and the losses.
 *
 * Layout conventions (all column-major, BLAS style):
 *   X      d_0 x n       one column per sample
 *   W_l    d_l x d_{l-1} l = 1..L (L = depth)
 *   b_l    d_l
 *   Z_l    d_l x n       Z_l = W_l A_{l-1} + b_l 1^T,  A_0 = X
 *   A_l    d_l x n       A_l = relu(Z_l) for a ReLU net (l < L), else Z_l
 *   F = Z_L              network output, d_L x n
 * All parameters live in one contiguous vector theta (llm.c style): W_1, b_1,
 * W_2, b_2, ... (b_l absent without bias); ds_mlp.w_off/b_off index it.
 * nn knows nothing of MPI or HDF5. */
#ifndef DYNSWEEP_NN_H
#define DYNSWEEP_NN_H
#include <stddef.h>
#include "dynsweep/util.h"

enum { DS_ACT_LINEAR = 0, DS_ACT_RELU = 1 };

typedef struct {
  int act;       /* DS_ACT_* for hidden layers; the output layer is linear */
  int bias;
  int depth;     /* L */
  int *dims;     /* L+1 entries */
  size_t nparams;
  size_t *w_off; /* L entries: offset of W_l (l = 1..L stored at [l-1]) */
  size_t *b_off; /* L entries, only meaningful with bias */
} ds_mlp;

/* Workspace for n samples: activations and backprop buffers. */
typedef struct {
  int n;
  double **Z;    /* Z[l], l = 1..L, d_l x n (Z[0] unused) */
  double **A;    /* A[l], l = 1..L-1 (A[0] = X, A[L] = Z[L] by reference) */
  double *dF;    /* d_L x n */
  double *bufa, *bufb; /* max_l d_l x n each */
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
#endif
