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

#include "dynsweep/knobs.h"
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

static double fwd_flops(const ds_mlp *m, int n) {
  double f = 0.0;
  for (int l = 1; l <= m->depth; l++) f += 2.0 * n * m->dims[l] * (double)m->dims[l - 1];
  return f;
}

double ds_mlp_step_flops(const ds_mlp *m, int n) {
  double fwd = fwd_flops(m, n);
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

static void e2e_free(void *e2e);

/* The products block is one aligned_alloc (rop.c's ds_mlp_work_products); it
 * is freed here, with the workspace that owns it. */
void ds_nn_prod_free(void *prod) { free(prod); }

void ds_mlp_work_free(ds_mlp_work *w) {
  ds_nn_prod_free(w->prod);
  e2e_free(w->e2e);
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
    double *db = l > 1 && m->bias ? grad + m->b_off[l - 2] : NULL;
    if (relu && l > 1) { /* dW_l, dA_{l-1} -> dZ_{l-1}, db_{l-1}, per block of samples */
      ds_nn_linear_backward_relu(dA, dW, dZ, theta + m->w_off[l - 1], w->A[l - 1], w->Z[l - 1],
                                 db, dout, din, n, ds_nn_alpha(m, l));
      dZ = dA;
      continue;
    }
    /* dW_l = alpha_l dZ_l A_{l-1}^T; dA_{l-1} = alpha_l W_l^T dZ_l */
    ds_nn_linear_backward(dA, dW, dZ, theta + m->w_off[l - 1], w->A[l - 1], dout, din, n,
                          ds_nn_alpha(m, l));
    if (l == 1) break;
    if (m->act == DS_ACT_TANH) ds_nn_tanh_backward(dA, w->A[l - 1], db, din, n, m->gain);
    else if (db) ds_nn_bias_backward(db, dA, din, n);
    dZ = dA;
  }
}

/* ---- blocks of samples (issue 13) -------------------------------------------
 * When every product of the net goes to LIBXSMM (ReLU or linear, alpha = 1,
 * small layers) and n > DS_NN_SAMPLE_BLOCK, the whole step (forward, the
 * loss gradient, backward) runs over blocks of DS_NN_SAMPLE_BLOCK samples,
 * so a block's activations and cotangents stay in L1/L2 from the forward
 * pass to the weight gradient instead of streaming n samples per layer.
 * Bitwise the same as the unblocked step: every column of Z, A, dF, dA is
 * computed by the same kernels, the sums over samples (dW by LIBXSMM's
 * in-order kernels with beta = 1, db by carried row sums) add in sample
 * order whatever the block size, and the loss value is the squared error's
 * 8 lane sums carried from block to block (blocks start at multiples of 8
 * entries: the additions of one pass over F), for other losses evaluated on
 * the whole F afterwards (the gradient dL/dF is per column for every loss).
 * DYNSWEEP_NN_BLOCK=0 (read once) or ds_mlp_set_sample_block(0) turns it off. */
static int g_block = -1;

void ds_mlp_set_sample_block(int on) { g_block = on ? 1 : 0; }

static int blocked_ok(const ds_mlp *m, int n) {
  if (g_block < 0) {
    g_block = ds_knob_on(DS_KNOB_NN_BLOCK);
  }
  if (!g_block || n <= DS_NN_SAMPLE_BLOCK || !ds_nn_xsmm_enabled()) return 0;
  if (m->act != DS_ACT_RELU && m->act != DS_ACT_LINEAR) return 0;
  for (int l = 1; l <= m->depth; l++) {
    int dout = m->dims[l], din = m->dims[l - 1];
    if (ds_nn_alpha(m, l) != 1.0 || !ds_nn_xsmm_nn(dout, din) || !ds_nn_xsmm_nt(dout, din))
      return 0;
    if (l > 1 && (!ds_nn_xsmm_nn(din, dout) || (size_t)dout * din > 4096)) return 0;
  }
  return 1;
}

/* 1 when done; *loss is the loss when *have_loss (squared error: summed
 * along the blocks, ds_loss_eval_blk), else the caller evaluates it on F */
static int loss_grad_blocked(const ds_mlp *m, const double *theta, const double *X,
                             const double *Y, const ds_loss *lo, double *grad, ds_mlp_work *w,
                             double *loss, int *have_loss) {
  int L = m->depth, n = w->n, relu = m->act == DS_ACT_RELU, dL = m->dims[L];
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  *have_loss = 1;
  w->A[0] = (double *)X;
  if (!m->train_output) {
    memset(grad + m->w_off[L - 1], 0, (size_t)dL * m->dims[L - 1] * sizeof *grad);
    if (m->bias) memset(grad + m->b_off[L - 1], 0, (size_t)dL * sizeof *grad);
  }
  for (int c0 = 0; c0 < n; c0 += DS_NN_SAMPLE_BLOCK) {
    int cols = n - c0 < DS_NN_SAMPLE_BLOCK ? n - c0 : DS_NN_SAMPLE_BLOCK, first = c0 == 0;
    size_t c = (size_t)c0;
    for (int l = 1; l <= L; l++) {
      const double *b = m->bias ? theta + m->b_off[l - 1] : NULL;
      double *A = relu && l < L ? w->A[l] + c * m->dims[l] : NULL;
      if (!ds_nn_xsmm_forward(w->Z[l] + c * m->dims[l], A, b, theta + m->w_off[l - 1],
                              w->A[l - 1] + c * m->dims[l - 1], m->dims[l], m->dims[l - 1], cols))
        return 0;
    }
    double *dF = w->dF + c * dL;
    /* the gradient, and the loss's partial sums carried from block to block */
    *have_loss &= ds_loss_eval_blk(lo, w->Z[L] + c * dL, Y + c * dL, dL, cols, dF, part, first,
                                   c0 + cols == n, loss);
    if (m->bias && m->train_output) ds_nn_bias_backward_blk(grad + m->b_off[L - 1], dF, dL, cols, first);
    const double *dZ = dF;
    for (int l = L; l >= 1; l--) {
      int dout = m->dims[l], din = m->dims[l - 1];
      if (ds_nn_trained(m, l) &&
          !ds_nn_xsmm_dw(grad + m->w_off[l - 1], dZ, w->A[l - 1] + c * din, dout, din, cols, first))
        return 0;
      if (l == 1) break;
      double *dA = ((L - l) % 2 == 0 ? w->bufa : w->bufb) + c * din;
      double *db = m->bias ? grad + m->b_off[l - 2] : NULL;
      if (!ds_nn_xsmm_backward_act(dA, dZ, theta + m->w_off[l - 1], relu ? w->Z[l - 1] + c * din : NULL,
                                   db, dout, din, cols, first))
        return 0;
      dZ = dA;
    }
  }
  w->A[L] = w->Z[L];
  return 1;
}

/* ---- linear nets: the end-to-end product (issue 13) -------------------------
 * A bias-free linear net computes F = P X with P = c W_L ... W_1 (d_L x d_0,
 * c the product of the layers' alpha), so its gradient sees the data only
 * through M = G X^T (G = dL/dF): dL/dP = M, and dW_l = alpha_l dZ_l A_{l-1}^T
 * is what the backward pass of the same net gives when it is run on the d_0
 * columns of the identity (its output is then P) with the output cotangent M.
 * A step is therefore: the forward pass on I (d_0 "samples"), F = P X, the
 * loss and G, M = G X^T, and the backward pass on I -- two products over the
 * n samples instead of 3L - 1, the rest d x d x d_0 products. It is taken when
 * its flop count is at most 3/4 of the layered step's (so for n well above
 * d_0, the deep-linear studies' regime: width 64, depth 4, n = 256 is 2.3x
 * fewer flops), decided by the shapes alone, so a point always takes the same
 * path. The gradient and loss are the layered step's up to round-off (the
 * products are associated differently; tests/test_nn_fast.c compares them).
 * After it only Z_L (= F) and dF of the workspace hold values of the n
 * samples (every caller of the hidden Z_l runs ds_mlp_forward itself).
 * DYNSWEEP_NN_E2E=0 (read once) or ds_mlp_set_e2e(0) turns it off. */
typedef struct {
  ds_mlp_work w; /* the net over the d_0 columns of I */
  double *eye;   /* d_0 x d_0 identity */
} e2e_ws;

static int g_e2e = -1;

void ds_mlp_set_e2e(int on) { g_e2e = on ? 1 : 0; }

static void e2e_free(void *e2e) {
  e2e_ws *e = e2e;
  if (!e) return;
  ds_mlp_work_free(&e->w);
  free(e->eye);
  free(e);
}

/* Flops of the product step (grad) or of its forward half (the net over the
 * d_0 columns of I, then F = P X and, with grad, M = G X^T over n samples) */
static double e2e_flops(const ds_mlp *m, int n, int grad) {
  int d0 = m->dims[0];
  double data = 2.0 * n * m->dims[m->depth] * (double)d0; /* one product over the samples */
  return grad ? ds_mlp_step_flops(m, d0) + 2.0 * data : fwd_flops(m, d0) + data;
}

int ds_mlp_e2e_taken(const ds_mlp *m, int n, int grad) {
  if (g_e2e < 0) {
    g_e2e = ds_knob_on(DS_KNOB_NN_E2E);
  }
  if (!g_e2e || m->act != DS_ACT_LINEAR || m->bias || m->depth < 2) return 0;
  return e2e_flops(m, n, grad) <= 0.75 * (grad ? ds_mlp_step_flops(m, n) : fwd_flops(m, n));
}

double ds_mlp_step_flops_run(const ds_mlp *m, int n) {
  return ds_mlp_e2e_taken(m, n, 1) ? e2e_flops(m, n, 1) : ds_mlp_step_flops(m, n);
}

static e2e_ws *e2e_get(const ds_mlp *m, ds_mlp_work *w) {
  if (w->e2e) return w->e2e;
  int d0 = m->dims[0];
  e2e_ws *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->eye = calloc((size_t)d0 * d0, sizeof *e->eye);
  if (!e->eye || ds_mlp_work_init(m, d0, &e->w) != DS_OK) {
    free(e->eye);
    free(e);
    return NULL; /* the layered step instead */
  }
  for (int k = 0; k < d0; k++) e->eye[k + (size_t)k * d0] = 1.0;
  w->e2e = e;
  return e;
}

/* F = P X into w->Z[L] (P from the forward pass on I) */
static const double *e2e_forward(const ds_mlp *m, const double *theta, const double *X,
                                 ds_mlp_work *w, e2e_ws *e) {
  int L = m->depth, d0 = m->dims[0], dL = m->dims[L];
  const double *P = ds_mlp_forward(m, theta, e->eye, &e->w);
  ds_nn_linear_forward(w->Z[L], P, NULL, X, dL, d0, w->n, 1.0);
  w->A[0] = (double *)X;
  w->A[L] = w->Z[L];
  return w->Z[L];
}

double ds_mlp_loss_grad_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                          const ds_loss *l, double *grad, ds_mlp_work *w) {
  double loss;
  int have_loss;
  e2e_ws *e;
  if (ds_mlp_e2e_taken(m, w->n, 1) && (e = e2e_get(m, w))) {
    int L = m->depth, d0 = m->dims[0], dL = m->dims[L];
    const double *F = e2e_forward(m, theta, X, w, e);
    loss = ds_loss_eval(l, F, Y, dL, w->n, w->dF);
    /* M = G X^T (d_L x d_0) is the output cotangent of the net on I */
    ds_nn_linear_backward(NULL, e->w.dF, w->dF, NULL, X, dL, d0, w->n, 1.0);
    ds_mlp_backward(m, theta, &e->w, grad);
    return loss;
  }
  if (blocked_ok(m, w->n) && loss_grad_blocked(m, theta, X, Y, l, grad, w, &loss, &have_loss))
    return have_loss ? loss : ds_loss_eval(l, w->Z[m->depth], Y, m->dims[m->depth], w->n, NULL);
  const double *F = ds_mlp_forward(m, theta, X, w);
  loss = ds_loss_eval(l, F, Y, m->dims[m->depth], w->n, w->dF);
  ds_mlp_backward(m, theta, w, grad);
  return loss;
}

double ds_mlp_loss_l(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                     const ds_loss *l, ds_mlp_work *w) {
  e2e_ws *e;
  const double *F = ds_mlp_e2e_taken(m, w->n, 0) && (e = e2e_get(m, w))
                        ? e2e_forward(m, theta, X, w, e)
                        : ds_mlp_forward(m, theta, X, w);
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
