/* mlp.c -- the multilayer perceptron: parameter layout (one flat theta with
 * named offsets W_1, b_1, W_2, b_2, ...), the workspace holding every buffer a
 * training step needs (allocated once, one aligned block), Gaussian init, and
 * the whole-network forward and backward passes built from layers.c.
 *
 * Shapes (column-major, n samples): X d_0 x n, W_l d_l x d_{l-1}, b_l d_l,
 * Z_l = alpha_l W_l A_{l-1} + b_l 1^T (d_l x n), A_l = relu(Z_l), tanh(g Z_l) or Z_l, F = Z_L,
 * alpha_l = 1 (standard) or 1/sqrt(d_{l-1}) (NTK parameterisation).
 * With a fixed output layer (train_output = 0) the gradient of W_L, b_L is 0. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/nn.h"
#include "layers.h"
#include "nn_internal.h"

/* ---- parameter layout ---------------------------------------------------- */

int ds_mlp_init(ds_mlp *m, int act, int bias, int depth, const int *dims) {
  memset(m, 0, sizeof *m);
  if (act != DS_ACT_LINEAR && act != DS_ACT_RELU && act != DS_ACT_TANH)
    return ds_fail(DS_EINPUT, "mlp: unknown activation %d", act);
  if (depth < 1) return ds_fail(DS_EINPUT, "mlp: depth must be >= 1 (got %d)", depth);
  for (int l = 0; l <= depth; l++)
    if (dims[l] < 1) return ds_fail(DS_EINPUT, "mlp: dims[%d] = %d must be >= 1", l, dims[l]);
  m->act = act;
  m->bias = bias ? 1 : 0;
  m->depth = depth;
  m->param = DS_PARAM_STANDARD;
  m->train_output = 1;
  m->gain = 1.0;
  m->dims = ds_calloc((size_t)depth + 1, sizeof *m->dims);
  m->w_off = ds_calloc((size_t)depth, sizeof *m->w_off);
  m->b_off = ds_calloc((size_t)depth, sizeof *m->b_off);
  if (!m->dims || !m->w_off || !m->b_off) {
    ds_mlp_free(m);
    return DS_ENOMEM;
  }
  memcpy(m->dims, dims, ((size_t)depth + 1) * sizeof *dims);
  size_t off = 0;
  for (int l = 1; l <= depth; l++) {
    m->w_off[l - 1] = off;
    off += (size_t)dims[l] * dims[l - 1];
    m->b_off[l - 1] = off; /* == next offset when there is no bias */
    if (m->bias) off += (size_t)dims[l];
  }
  m->nparams = off;
  return DS_OK;
}

int ds_mlp_setup(ds_mlp *m, int act, int bias, int depth, const int *dims, int param,
                 int train_output) {
  if (param != DS_PARAM_STANDARD && param != DS_PARAM_NTK && param != DS_PARAM_MEANFIELD) {
    memset(m, 0, sizeof *m);
    return ds_fail(DS_EINPUT, "mlp: unknown parameterisation %d", param);
  }
  DS_TRY(ds_mlp_init(m, act, bias, depth, dims));
  m->param = param;
  m->train_output = train_output ? 1 : 0;
  return DS_OK;
}

void ds_mlp_free(ds_mlp *m) {
  free(m->dims);
  free(m->w_off);
  free(m->b_off);
  memset(m, 0, sizeof *m);
}

double ds_mlp_step_flops(const ds_mlp *m, int n) {
  double fwd = 0.0;
  for (int l = 1; l <= m->depth; l++) fwd += 2.0 * n * m->dims[l] * (double)m->dims[l - 1];
  double dA0 = 2.0 * n * m->dims[1] * (double)m->dims[0];
  return fwd + (2.0 * fwd - dA0);
}

/* ---- workspace ------------------------------------------------------------
 * One block: [Z pointers (L+1)] [A pointers (L+1)] then 64-byte aligned
 * buffers Z_1..Z_L, A_1..A_{L-1} (ReLU only; a linear net has A_l == Z_l),
 * dF, bufa, bufb. w->Z is the block, so freeing it frees everything. */

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

int ds_mlp_work_init(const ds_mlp *m, int n, ds_mlp_work *w) {
  memset(w, 0, sizeof *w);
  if (n < 1) return ds_fail(DS_EINPUT, "mlp: workspace needs n >= 1 samples (got %d)", n);
  int L = m->depth, relu = ds_nn_has_act(m);
  int dmax = 1;
  for (int l = 0; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  size_t head = round64(2 * ((size_t)L + 1) * sizeof(double *));
  size_t bytes = head;
  for (int l = 1; l <= L; l++) {
    size_t mat = round64((size_t)m->dims[l] * n * sizeof(double));
    bytes += mat;                 /* Z_l */
    if (relu && l < L) bytes += mat; /* A_l */
  }
  bytes += round64((size_t)m->dims[L] * n * sizeof(double));  /* dF */
  bytes += 2 * round64((size_t)dmax * n * sizeof(double));     /* bufa, bufb */
  char *block = aligned_alloc(64, bytes);
  if (!block) return ds_fail(DS_ENOMEM, "mlp: out of memory allocating a %zu-byte workspace", bytes);
  memset(block, 0, bytes);
  w->n = n;
  w->Z = (double **)block;
  w->A = w->Z + (L + 1);
  char *p = block + head;
  for (int l = 1; l <= L; l++) {
    size_t mat = round64((size_t)m->dims[l] * n * sizeof(double));
    w->Z[l] = (double *)p;
    p += mat;
    if (relu && l < L) {
      w->A[l] = (double *)p;
      p += mat;
    } else {
      w->A[l] = w->Z[l];
    }
  }
  w->dF = (double *)p;
  p += round64((size_t)m->dims[L] * n * sizeof(double));
  w->bufa = (double *)p;
  p += round64((size_t)dmax * n * sizeof(double));
  w->bufb = (double *)p;
  return DS_OK;
}

void ds_mlp_work_free(ds_mlp_work *w) {
  ds_nn_prod_free(w->prod);
  free(w->Z);
  memset(w, 0, sizeof *w);
}

/* ---- init ------------------------------------------------------------------ */

void ds_mlp_init_gaussian(const ds_mlp *m, double scale, ds_rng *rng, double *theta) {
  memset(theta, 0, m->nparams * sizeof *theta);
  for (int l = 1; l <= m->depth; l++) {
    double sd = scale / sqrt((double)m->dims[l - 1]);
    double *W = theta + m->w_off[l - 1];
    size_t count = (size_t)m->dims[l] * m->dims[l - 1];
    for (size_t k = 0; k < count; k++) W[k] = sd * ds_rng_normal(rng);
  }
}

double ds_mlp_alpha(const ds_mlp *m, int l) { return ds_nn_alpha(m, l); }

void ds_mlp_gd_step_layers(const ds_mlp *m, double *theta, const double *grad, double lr,
                           double lr_in, double lr_out) {
  int L = m->depth;
  for (int l = 1; l <= L; l++) {
    double r = l == L && lr_out > 0 ? lr_out : l == 1 && lr_in > 0 ? lr_in : lr;
    size_t lo = m->w_off[l - 1];
    size_t hi = l < L ? m->w_off[l] : m->nparams; /* W_l and b_l */
    for (size_t off = lo; off < hi; off += (size_t)1 << 30) { /* ds_gd_step's daxpy */
      size_t len = hi - off < ((size_t)1 << 30) ? hi - off : (size_t)1 << 30;
      cblas_daxpy((int)len, -r, grad + off, 1, theta + off, 1);
    }
  }
}

/* ---- whole-network passes ------------------------------------------------- */

const double *ds_mlp_forward(const ds_mlp *m, const double *theta, const double *X,
                             ds_mlp_work *w) {
  int L = m->depth, n = w->n;
  w->A[0] = (double *)X; /* read only */
  for (int l = 1; l <= L; l++) {
    const double *b = m->bias ? theta + m->b_off[l - 1] : NULL;
    /* Z_l (d_l x n) = W_l (d_l x d_{l-1}) A_{l-1} (d_{l-1} x n) + b_l 1^T */
    /* A_l = relu(Z_l) in the same pass as the bias where it pays (layers.c) */
    double *A = m->act == DS_ACT_RELU && l < L ? w->A[l] : NULL;
    ds_nn_linear_forward_relu(w->Z[l], A, theta + m->w_off[l - 1], b, w->A[l - 1], m->dims[l],
                              m->dims[l - 1], n, ds_nn_alpha(m, l));
    /* A_l = tanh(g Z_l) (SLEEF, tanh.c) */
    if (m->act == DS_ACT_TANH && l < L) ds_nn_tanh_forward(w->A[l], w->Z[l], m->dims[l], n, m->gain);
  }
  w->A[L] = w->Z[L];
  return w->Z[L];
}

void ds_mlp_backward(const ds_mlp *m, const double *theta, ds_mlp_work *w, double *grad) {
  int L = m->depth, n = w->n, relu = m->act == DS_ACT_RELU;
  const double *dZ = w->dF; /* dZ_L = dF (d_L x n) */
  if (m->bias) {
    if (m->train_output) ds_nn_bias_backward(grad + m->b_off[L - 1], dZ, m->dims[L], n);
    else memset(grad + m->b_off[L - 1], 0, (size_t)m->dims[L] * sizeof *grad);
  }
  for (int l = L; l >= 1; l--) {
    int dout = m->dims[l], din = m->dims[l - 1];
    double *dA = l > 1 ? ((L - l) % 2 == 0 ? w->bufa : w->bufb) : NULL; /* d_{l-1} x n */
    double *dW = grad + m->w_off[l - 1];
    if (!ds_nn_trained(m, l)) { /* fixed output layer: no gradient */
      memset(dW, 0, (size_t)dout * din * sizeof *dW);
      dW = NULL;
    }
    /* dW_l = alpha_l dZ_l A_{l-1}^T; dA_{l-1} = alpha_l W_l^T dZ_l */
    ds_nn_linear_backward(dA, dW, dZ, theta + m->w_off[l - 1], w->A[l - 1], dout, din, n,
                          ds_nn_alpha(m, l));
    if (l == 1) break;
    double *db = m->bias ? grad + m->b_off[l - 2] : NULL;
    if (relu) ds_nn_relu_backward(dA, w->Z[l - 1], db, din, n); /* dZ_{l-1}, db_{l-1} */
    else if (m->act == DS_ACT_TANH) ds_nn_tanh_backward(dA, w->A[l - 1], db, din, n, m->gain);
    else if (db) ds_nn_bias_backward(db, dA, din, n);
    dZ = dA;
  }
}

double ds_mlp_loss_grad_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                          const ds_loss *l, double *grad, ds_mlp_work *w) {
  const double *F = ds_mlp_forward(m, theta, X, w);
  double loss = ds_loss_eval(l, F, Y, m->dims[m->depth], w->n, w->dF);
  ds_mlp_backward(m, theta, w, grad);
  return loss;
}

double ds_mlp_loss_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                     const ds_loss *l, ds_mlp_work *w) {
  const double *F = ds_mlp_forward(m, theta, X, w);
  return ds_loss_eval(l, F, Y, m->dims[m->depth], w->n, NULL);
}

/* The squared-error versions: thin wrappers (ds_loss_eval's mse is ds_loss_mse
 * with the same c, so the results are bitwise those of the generic path). */
double ds_mlp_loss_grad(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                        double c, double *grad, ds_mlp_work *w) {
  ds_loss l = {DS_LOSS_MSE, 2.0, c};
  return ds_mlp_loss_grad_l(m, theta, X, Y, &l, grad, w);
}

double ds_mlp_loss(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                   double c, ds_mlp_work *w) {
  ds_loss l = {DS_LOSS_MSE, 2.0, c};
  return ds_mlp_loss_l(m, theta, X, Y, &l, w);
}
