/* rop.c -- Pearlmutter's R-operator by hand: Jacobian-vector products,
 * Hessian-vector products of the outputs and of the loss, and the linearised
 * (f_lin) and quadratic (f_quad, the NQM of seed 003) models built on them.
 *
 * Notation as in mlp.c: Z_l = alpha_l W_l A_{l-1} + b_l 1^T, A_l = relu(Z_l)
 * (hidden layers of a ReLU net) or Z_l, A_0 = X, F = Z_L, alpha_l = 1 or
 * 1/sqrt(d_{l-1}) (NTK). R{.} is the directional derivative along
 * v = (V_1, c_1, V_2, c_2, ...) (c_l the bias part), laid out like theta.
 *
 * Tangent forward (JVP), R{A_0} = 0:
 *   R{Z_l} = alpha_l (V_l A_{l-1} + W_l R{A_{l-1}}) + c_l 1^T      (d_l x n)
 *   R{A_l} = [Z_l > 0] * R{Z_l}          ReLU (ReLU'' = 0 a.e.); linear: = R{Z_l}
 *   R{A_l} = s'(Z_l) R{Z_l}              tanh: s(z) = tanh(g z), s' = g (1 - A^2),
 *                                        s'' = -2 g A s' (from the stored A_l)
 *   J v = R{Z_L}
 * Second-order forward (f_quad), S_l = R^2{Z_l}, S_1 = 0:
 *   S_l = alpha_l (2 V_l R{A_{l-1}} + W_l R^2{A_{l-1}}),  R^2{A_l} = [Z_l > 0] * S_l
 *   (tanh: R^2{A_l} = s' S_l + s'' R{Z_l}^2)
 *   v^T H_{F_kj} v = (S_L)_kj    (bias terms are linear: no second-order part)
 * Backward with output cotangent G (D_L = G, R{D_L} = RG):
 *   gW_l = alpha_l D_l A_{l-1}^T,                         gb_l = D_l 1
 *   R{gW_l} = alpha_l (R{D_l} A_{l-1}^T + D_l R{A_{l-1}}^T), R{gb_l} = R{D_l} 1
 *   D_{l-1} = [Z_{l-1} > 0] * alpha_l W_l^T D_l
 *   R{D_{l-1}} = [Z_{l-1} > 0] * alpha_l (V_l^T D_l + W_l^T R{D_l})
 * (tanh: D_{l-1} = s' P, R{D_{l-1}} = s' R{P} + s'' R{Z_{l-1}} P, P = alpha_l W_l^T D_l)
 * so J^T G = (gW, gb), H_<G,F> v = R{g} with RG = 0, and the loss HVP is
 * R{g} with G = dL/dF and RG = (d2L/dF2) J v.
 * A fixed output layer (train_output = 0) is a constant: its part of v is read
 * as 0 and its part of every output vector is 0. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/nn.h"
#include "layers.h"
#include "nn_internal.h"

/* ---- workspace -------------------------------------------------------------- */

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

int ds_mlp_work_products(const ds_mlp *m, ds_mlp_work *w) {
  if (w->prod) return DS_OK;
  int L = m->depth, n = w->n, relu = ds_nn_has_act(m);
  int dmax = 1;
  for (int l = 0; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  size_t col = (size_t)n * sizeof(double);
  size_t head = round64(sizeof(ds_nn_prod)) + round64(2 * ((size_t)L + 1) * sizeof(double *));
  size_t bytes = head;
  for (int l = 1; l <= L; l++) {
    bytes += round64(m->dims[l] * col);                  /* RZ_l */
    if (relu && l < L) bytes += round64(m->dims[l] * col); /* RA_l */
  }
  bytes += 6 * round64(dmax * col);             /* S[2], D[2], RD[2] */
  bytes += 2 * round64(m->dims[L] * col);       /* SL, RG */
  char *block = aligned_alloc(64, bytes);
  if (!block)
    return ds_fail(DS_ENOMEM, "mlp: out of memory allocating a %zu-byte product workspace",
                   bytes);
  memset(block, 0, bytes);
  ds_nn_prod *p = (ds_nn_prod *)block;
  p->RZ = (double **)(block + round64(sizeof(ds_nn_prod)));
  p->RA = p->RZ + (L + 1);
  char *q = block + head;
  for (int l = 1; l <= L; l++) {
    p->RZ[l] = (double *)q;
    q += round64(m->dims[l] * col);
    if (relu && l < L) {
      p->RA[l] = (double *)q;
      q += round64(m->dims[l] * col);
    } else {
      p->RA[l] = p->RZ[l];
    }
  }
  double **six[6] = {&p->S[0], &p->S[1], &p->D[0], &p->D[1], &p->RD[0], &p->RD[1]};
  for (int k = 0; k < 6; k++) {
    *six[k] = (double *)q;
    q += round64(dmax * col);
  }
  p->SL = (double *)q;
  q += round64(m->dims[L] * col);
  p->RG = (double *)q;
  w->prod = p;
  return DS_OK;
}

/* The products workspace, allocated if needed; NULL (and the message
 * recorded) if that fails, in which case out (count entries) becomes NaN. */
static ds_nn_prod *products(const ds_mlp *m, ds_mlp_work *w, double *out, size_t count) {
  if (ds_mlp_work_products(m, w) == DS_OK) return w->prod;
  if (out)
    for (size_t k = 0; k < count; k++) out[k] = NAN;
  return NULL;
}

/* C (r x c) = alpha op(A) op(B) + beta C, column-major, leading dims = rows */
static void gemm(int ta, int tb, int r, int c, int k, double alpha, const double *A,
                 const double *B, double beta, double *C) {
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, r,
              c, k, alpha, A, ta ? k : r, B, tb ? c : k, beta, C, r);
}

/* ---- tangent forward -----------------------------------------------------------
 * Needs the forward pass at theta in w. Writes RZ[l], RA[l] (all layers) and,
 * with order2, S_L = v^T H_F v into p->SL. */
static void tangent_forward(const ds_mlp *m, const double *theta, const double *v,
                            ds_mlp_work *w, ds_nn_prod *p, int order2) {
  int L = m->depth, n = w->n, relu = m->act == DS_ACT_RELU, tanh_ = m->act == DS_ACT_TANH;
  int szero = 1;        /* R^2{A_{l-1}} == 0 */
  const double *SA = NULL; /* R^2{A_{l-1}} */
  for (int l = 1; l <= L; l++) {
    int dout = m->dims[l], din = m->dims[l - 1];
    double al = ds_nn_alpha(m, l);
    const double *W = theta + m->w_off[l - 1];
    const double *V = ds_nn_trained(m, l) ? v + m->w_off[l - 1] : NULL; /* d_l x d_{l-1} */
    const double *c = V && m->bias ? v + m->b_off[l - 1] : NULL;       /* d_l */
    double *RZ = p->RZ[l];                                              /* d_l x n */
    double beta = 0.0;
    if (c) {
      ds_nn_bias_fill(RZ, c, dout, n);
      beta = 1.0;
    }
    if (V) { /* RZ += alpha V_l A_{l-1} */
      gemm(0, 0, dout, n, din, al, V, w->A[l - 1], beta, RZ);
      beta = 1.0;
    }
    if (l > 1) { /* RZ += alpha W_l R{A_{l-1}} */
      gemm(0, 0, dout, n, din, al, W, p->RA[l - 1], beta, RZ);
      beta = 1.0;
    }
    if (beta == 0.0) memset(RZ, 0, (size_t)dout * n * sizeof *RZ);
    if (relu && l < L) ds_nn_relu_tangent(p->RA[l], RZ, w->Z[l], dout, n);
    if (tanh_ && l < L) ds_nn_tanh_tangent(p->RA[l], RZ, w->A[l], dout, n, m->gain);
    if (!order2) continue;
    double *S = l == L ? p->SL : p->S[l % 2]; /* d_l x n */
    beta = 0.0;
    if (l > 1 && V) { /* S = 2 alpha V_l R{A_{l-1}} */
      gemm(0, 0, dout, n, din, 2.0 * al, V, p->RA[l - 1], 0.0, S);
      beta = 1.0;
    }
    if (!szero) { /* S += alpha W_l R^2{A_{l-1}} */
      gemm(0, 0, dout, n, din, al, W, SA, beta, S);
      beta = 1.0;
    }
    if (tanh_ && l < L) { /* R^2{A_l} = s' S_l + s'' R{Z_l}^2: never zero */
      if (beta == 0.0) memset(S, 0, (size_t)dout * n * sizeof *S);
      ds_nn_tanh_second(S, RZ, w->A[l], dout, n, m->gain);
      szero = 0;
    } else if (beta == 0.0) {
      szero = 1;
      if (l == L) memset(S, 0, (size_t)dout * n * sizeof *S);
    } else {
      szero = 0;
      if (relu && l < L) ds_nn_relu_tangent(S, S, w->Z[l], dout, n);
    }
    SA = S;
  }
}

/* ---- backward with R ------------------------------------------------------------
 * Needs the forward pass at theta in w and (want_r) the tangent along v in p.
 * out (nparams) = [J^T G if want_g] + [R{J^T G} with R{G} = RG (NULL = 0) if want_r]. */
static void backward_r(const ds_mlp *m, const double *theta, const double *v, ds_mlp_work *w,
                       ds_nn_prod *p, const double *G, const double *RG, int want_g, int want_r,
                       double *out) {
  int L = m->depth, n = w->n, relu = m->act == DS_ACT_RELU, tanh_ = m->act == DS_ACT_TANH;
  const double *D = G, *RD = want_r ? RG : NULL; /* D_l, R{D_l} (d_l x n) */
  for (int l = L; l >= 1; l--) {
    int dout = m->dims[l], din = m->dims[l - 1];
    double al = ds_nn_alpha(m, l);
    int trained = ds_nn_trained(m, l);
    const double *W = theta + m->w_off[l - 1];
    const double *V = trained && want_r ? v + m->w_off[l - 1] : NULL;
    const double *RAp = l > 1 && want_r ? p->RA[l - 1] : NULL; /* R{A_{l-1}} */
    double *oW = out + m->w_off[l - 1];                         /* d_l x d_{l-1} */
    double *ob = m->bias ? out + m->b_off[l - 1] : NULL;        /* d_l */
    if (!trained) {
      memset(oW, 0, (size_t)dout * din * sizeof *oW);
      if (ob) memset(ob, 0, (size_t)dout * sizeof *ob);
    } else {
      double beta = 0.0;
      if (want_g) { /* alpha D_l A_{l-1}^T */
        gemm(0, 1, dout, din, n, al, D, w->A[l - 1], 0.0, oW);
        beta = 1.0;
      }
      if (RD) { /* + alpha R{D_l} A_{l-1}^T */
        gemm(0, 1, dout, din, n, al, RD, w->A[l - 1], beta, oW);
        beta = 1.0;
      }
      if (RAp) { /* + alpha D_l R{A_{l-1}}^T */
        gemm(0, 1, dout, din, n, al, D, RAp, beta, oW);
        beta = 1.0;
      }
      if (beta == 0.0) memset(oW, 0, (size_t)dout * din * sizeof *oW);
      if (ob) {
        int acc = 0;
        if (want_g) ds_nn_bias_backward_acc(ob, D, dout, n, acc++);
        if (RD) ds_nn_bias_backward_acc(ob, RD, dout, n, acc++);
        if (!acc) memset(ob, 0, (size_t)dout * sizeof *ob);
      }
    }
    if (l == 1) break;
    double *Dn = p->D[l % 2], *RDn = p->RD[l % 2]; /* d_{l-1} x n */
    gemm(1, 0, din, n, dout, al, W, D, 0.0, Dn);   /* alpha W_l^T D_l */
    const double *RDnext = NULL;
    if (want_r) {
      double beta = 0.0;
      if (V) { /* alpha V_l^T D_l */
        gemm(1, 0, din, n, dout, al, V, D, 0.0, RDn);
        beta = 1.0;
      }
      if (RD) { /* + alpha W_l^T R{D_l} */
        gemm(1, 0, din, n, dout, al, W, RD, beta, RDn);
        beta = 1.0;
      }
      if (beta != 0.0) RDnext = RDn;
    }
    if (relu) {
      ds_nn_relu_tangent(Dn, Dn, w->Z[l - 1], din, n);
      if (RDnext) ds_nn_relu_tangent(RDn, RDn, w->Z[l - 1], din, n);
    } else if (tanh_ && want_r) { /* R{D} = s' R{P} + s'' R{Z} P, D = s' P */
      ds_nn_tanh_backward_r(Dn, RDnext, RDn, p->RZ[l - 1], w->A[l - 1], din, n, m->gain);
      RDnext = RDn;
    } else if (tanh_) {
      ds_nn_tanh_tangent(Dn, Dn, w->A[l - 1], din, n, m->gain);
    }
    D = Dn;
    RD = RDnext;
  }
}

/* ---- public products ------------------------------------------------------------- */

void ds_mlp_jvp(const ds_mlp *m, const double *theta, const double *X, const double *v,
                ds_mlp_work *w, double *JV) {
  size_t count = (size_t)m->dims[m->depth] * w->n;
  ds_nn_prod *p = products(m, w, JV, count);
  if (!p) return;
  ds_mlp_forward(m, theta, X, w);
  tangent_forward(m, theta, v, w, p, 0);
  memcpy(JV, p->RZ[m->depth], count * sizeof *JV);
}

void ds_mlp_hvp_output(const ds_mlp *m, const double *theta, const double *X, const double *G,
                       const double *v, ds_mlp_work *w, double *out) {
  ds_nn_prod *p = products(m, w, out, m->nparams);
  if (!p) return;
  ds_mlp_forward(m, theta, X, w);
  tangent_forward(m, theta, v, w, p, 0);
  backward_r(m, theta, v, w, p, G, NULL, 0, 1, out);
}

double ds_mlp_loss_hvp(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                       const ds_loss *l, const double *v, ds_mlp_work *w, double *out) {
  ds_nn_prod *p = products(m, w, out, m->nparams);
  if (!p) return NAN;
  int k = m->dims[m->depth], n = w->n;
  const double *F = ds_mlp_forward(m, theta, X, w);
  double loss = ds_loss_eval(l, F, Y, k, n, w->dF); /* G = dL/dF */
  tangent_forward(m, theta, v, w, p, 0);
  ds_loss_hess_apply(l, F, Y, k, n, p->RZ[m->depth], p->RG); /* R{G} = d2L/dF2 J v */
  backward_r(m, theta, v, w, p, w->dF, p->RG, 0, 1, out);
  return loss;
}

/* ---- f_lin / f_quad -----------------------------------------------------------------
 * F = f(theta0) + J(theta0) d [+ 1/2 d^T H_f(theta0) d], d = theta - theta0,
 * from one forward pass at theta0 and the tangent (and second-order) forward
 * along d: 3 (order 1) or 5 (order 2) GEMMs per layer for the outputs.
 * Gradient of L(F): J^T g [+ H_<g,f>(theta0) d], g = dL/dF, in one backward
 * pass with R (order 2) or the plain backward pass (order 1). Nothing about X
 * is cached, so X may change between calls (minibatches, test sets). */

int ds_approx_init(ds_approx *a, const ds_mlp *m, int order, const double *theta0, int max_n) {
  memset(a, 0, sizeof *a);
  if (order != 1 && order != 2)
    return ds_fail(DS_EINPUT, "approx: order must be 1 (f_lin) or 2 (f_quad), got %d", order);
  if (max_n < 1) return ds_fail(DS_EINPUT, "approx: max_n must be >= 1 (got %d)", max_n);
  size_t P = m->nparams;
  a->m = m;
  a->order = order;
  a->max_n = max_n;
  a->theta0 = ds_calloc(P, sizeof *a->theta0);
  a->d = ds_calloc(P, sizeof *a->d);
  a->F = ds_calloc((size_t)m->dims[m->depth] * max_n, sizeof *a->F);
  if (!a->theta0 || !a->d || !a->F) {
    ds_approx_free(a);
    return DS_ENOMEM;
  }
  memcpy(a->theta0, theta0, P * sizeof *theta0);
  return DS_OK;
}

void ds_approx_free(ds_approx *a) {
  free(a->theta0);
  free(a->d);
  free(a->F);
  memset(a, 0, sizeof *a);
}

/* F (d_L x n) of the approximate model; leaves the forward pass at theta0 in
 * w and the tangent along d in p. */
static void approx_outputs(ds_approx *a, ds_nn_prod *p, const double *theta, const double *X,
                           ds_mlp_work *w, double *F) {
  const ds_mlp *m = a->m;
  size_t P = m->nparams, count = (size_t)m->dims[m->depth] * w->n;
  for (size_t k = 0; k < P; k++) a->d[k] = theta[k] - a->theta0[k];
  const double *F0 = ds_mlp_forward(m, a->theta0, X, w);
  tangent_forward(m, a->theta0, a->d, w, p, a->order == 2);
  const double *R = p->RZ[m->depth];
  if (a->order == 2)
    for (size_t q = 0; q < count; q++) F[q] = (F0[q] + R[q]) + 0.5 * p->SL[q];
  else
    for (size_t q = 0; q < count; q++) F[q] = F0[q] + R[q];
}

void ds_approx_forward(ds_approx *a, const double *theta, const double *X, ds_mlp_work *w,
                       double *F) {
  ds_nn_prod *p = products(a->m, w, F, (size_t)a->m->dims[a->m->depth] * w->n);
  if (p) approx_outputs(a, p, theta, X, w, F);
}

double ds_approx_loss_grad(ds_approx *a, const double *theta, const double *X, const double *Y,
                           const ds_loss *l, double *grad, ds_mlp_work *w) {
  const ds_mlp *m = a->m;
  if (w->n > a->max_n) {
    ds_fail(DS_EINTERNAL, "approx: workspace has %d samples, more than max_n = %d", w->n,
            a->max_n);
    for (size_t k = 0; k < m->nparams; k++) grad[k] = NAN;
    return NAN;
  }
  ds_nn_prod *p = products(m, w, grad, m->nparams);
  if (!p) return NAN;
  approx_outputs(a, p, theta, X, w, a->F);
  double loss = ds_loss_eval(l, a->F, Y, m->dims[m->depth], w->n, w->dF); /* g = dL/dF */
  if (a->order == 1) ds_mlp_backward(m, a->theta0, w, grad);               /* J^T g */
  else backward_r(m, a->theta0, a->d, w, p, w->dF, NULL, 1, 1, grad); /* J^T g + H_<g,f> d */
  return loss;
}
