/* agop.c -- the average gradient outer product G = (1/n) sum_i J_x(x_i)^T
 * J_x(x_i) (input Jacobians by backprop of the k unit cotangents down to
 * A_0, through the NTK scale and the ReLU masks), its alignment with a
 * reference, the analytic references of the seed 003 tasks, and the
 * escape-speed proxy of seed 004. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"
#include "dynsweep/data.h"

int ds_diag_input_jacobian(const ds_mlp *m, const double *theta, const double *X,
                           ds_mlp_work *w, double *Jx) {
  int L = m->depth, n = w->n, k = m->dims[L], dmax = 1;
  for (int l = 1; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  size_t kn = (size_t)k * n;
  double *Da = ds_calloc((size_t)dmax * kn, sizeof *Da), *Db = ds_calloc((size_t)dmax * kn, sizeof *Db);
  if (!Da || !Db) {
    free(Da);
    free(Db);
    return DS_ENOMEM;
  }
  ds_mlp_forward(m, theta, X, w);
  double *D = Da, *Dn = Db;
  ds_diag_cot_top(k, n, D);
  for (int l = L; l >= 1; l--) {
    ds_diag_cot_step(m, theta, w, l, D, l == 1 ? Jx : Dn);
    double *tmp = D;
    D = Dn;
    Dn = tmp;
  }
  free(Da);
  free(Db);
  return DS_OK;
}

/* cos(G, Gref) over the d x d entries; NaN without a reference or for a zero matrix. */
double ds_diag_agop_align(const double *G, const double *Gref, int d) {
  if (!Gref) return NAN;
  double dot = 0.0, g2 = 0.0, r2 = 0.0;
  for (size_t q = 0; q < (size_t)d * d; q++) {
    dot += G[q] * Gref[q];
    g2 += G[q] * G[q];
    r2 += Gref[q] * Gref[q];
  }
  return g2 > 0.0 && r2 > 0.0 ? dot / (sqrt(g2) * sqrt(r2)) : NAN;
}

int ds_diag_agop(const ds_mlp *m, const double *theta, const double *X, ds_mlp_work *w,
                 const double *Gref, double *G, double *align) {
  int d = m->dims[0], n = w->n, k = m->dims[m->depth];
  size_t kn = (size_t)k * n;
  double *Jx = ds_calloc((size_t)d * kn, sizeof *Jx);
  if (!Jx) return DS_ENOMEM;
  int rc = ds_diag_input_jacobian(m, theta, X, w, Jx);
  if (rc != DS_OK) {
    free(Jx);
    return rc;
  }
  /* G = (1/n) Jx Jx^T: column (o, i) of Jx is grad_x f_o(x_i) */
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, d, (int)kn, 1.0 / n, Jx, d, 0.0, G, d);
  for (int c = 0; c < d; c++)
    for (int r = c + 1; r < d; r++) G[(size_t)r * d + c] = G[(size_t)c * d + r];
  free(Jx);
  if (align) *align = ds_diag_agop_align(G, Gref, d);
  return DS_OK;
}

/* issue 26: a CNN through cnn.h's ds_cnn_input_grad. One n-sample forward;
 * for each output o the cotangent e_o on every sample gives the k-th block of
 * input gradients (each sample's gradient depends on its own cotangent
 * column only), dX (d x n) with column i = grad_x f_o(x_i); G accumulates
 * (1/n) dX dX^T over the k blocks (DSYRK). */
int ds_diag_cnn_agop(ds_cnn *net, const double *theta, const double *X, int n, int k,
                     const double *Gref, double *G, double *align) {
  int d = ds_cnn_din(net);
  double *dX = ds_calloc((size_t)d * n, sizeof *dX), *dF = ds_calloc((size_t)k * n, sizeof *dF);
  if (!dX || !dF) {
    free(dX);
    free(dF);
    return ds_fail(DS_ENOMEM, "diag cnn agop: out of memory for %d x %d input gradients", d, n);
  }
  ds_cnn_forward(net, theta, X, n);
  for (int o = 0; o < k; o++) {
    for (size_t q = 0; q < (size_t)k * n; q++) dF[q] = q % (size_t)k == (size_t)o ? 1.0 : 0.0;
    ds_cnn_input_grad(net, theta, X, n, dF, dX);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, d, n, 1.0 / n, dX, d, o ? 1.0 : 0.0, G, d);
  }
  for (int c = 0; c < d; c++)
    for (int r = c + 1; r < d; r++) G[(size_t)r * d + c] = G[(size_t)c * d + r];
  free(dX);
  free(dF);
  if (align) *align = ds_diag_agop_align(G, Gref, d);
  return DS_OK;
}

int ds_diag_agop_reference(ds_data_kind kind, int d_in, double *Gref) {
  if (d_in < 1) return ds_fail(DS_EINPUT, "agop reference: d_in = %d", d_in);
  size_t dd = (size_t)d_in * d_in;
  if (kind == DS_DATA_IMAGE_RANK2) { /* G* = u1 u1' + u2 u2' (synth.c) */
    double *u = ds_calloc(2 * (size_t)d_in, sizeof *u);
    if (!u) return ds_fail(DS_ENOMEM, "agop reference: out of memory");
    int rc = ds_data_image_filters(d_in, u, u + d_in);
    if (rc == DS_OK)
      for (int j = 0; j < d_in; j++)
        for (int i = 0; i < d_in; i++)
          Gref[(size_t)j * d_in + i] = u[i] * u[j] + u[d_in + i] * u[d_in + j];
    free(u);
    return rc;
  }
  int need = kind == DS_DATA_RANK2 ? 2 : kind == DS_DATA_RANK4 ? 4 : kind == DS_DATA_RANK3 ? 10 : 1;
  switch (kind) {
  case DS_DATA_RANK2:
  case DS_DATA_RANK3:
  case DS_DATA_RANK4:
  case DS_DATA_FULLRANK: break;
  default:
    return ds_fail(DS_EINPUT,
                   "agop reference: no analytic G* for data kind %d (rank2, rank3, rank4, "
                   "fullrank, image_rank2 only; give record.spectra.agop_reference)",
                   (int)kind);
  }
  if (d_in < need)
    return ds_fail(DS_EINPUT, "agop reference: the task needs d_in >= %d (got %d)", need, d_in);
  memset(Gref, 0, dd * sizeof *Gref);
#define G_(i, j) Gref[(size_t)(j) * d_in + (i)]
  if (kind == DS_DATA_RANK2) { /* f* = x1 x2: grad = (x2, x1, 0..) */
    G_(0, 0) = G_(1, 1) = 1.0;
  } else if (kind == DS_DATA_RANK4) { /* f* = sum_{j<=4} prod_{i<=j} x_i */
    for (int i = 0; i < 4; i++) G_(i, i) = 4.0 - i;
  } else if (kind == DS_DATA_RANK3) {
    /* f* = x1 x2 S, S = sum_{i<=10} x_i: E[df/dx_a df/dx_b] for x ~ N(0, I):
     * (1,1) = (2,2) = 15, (1,2) = 5, (1|2, i) = 2 and (i, j) = 1 for 3 <= i, j <= 10 */
    for (int j = 2; j < 10; j++)
      for (int i = 2; i < 10; i++) G_(i, j) = 1.0;
    for (int i = 2; i < 10; i++) G_(0, i) = G_(i, 0) = G_(1, i) = G_(i, 1) = 2.0;
    G_(0, 0) = G_(1, 1) = 15.0;
    G_(0, 1) = G_(1, 0) = 5.0;
  } else { /* f* = ||x|| / sqrt(d): E[x x^T / ||x||^2] / d = I / d^2 */
    for (int i = 0; i < d_in; i++) G_(i, i) = 1.0 / ((double)d_in * d_in);
  }
#undef G_
  return DS_OK;
}

double ds_diag_escape(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                      const ds_loss *l, ds_mlp_work *w) {
  int L = m->depth, n = w->n, k = m->dims[L];
  size_t P = m->nparams, kn = (size_t)k * n;
  double *tt = ds_calloc(P, sizeof *tt);
  if (!tt) return NAN;
  /* G = dL/dF at F = 0 (into w->dF; bufa holds the zero outputs) */
  memset(w->bufa, 0, kn * sizeof *w->bufa);
  ds_loss_eval(l, w->bufa, Y, k, n, w->dF);
  double nrm = cblas_dnrm2((int)P, theta, 1);
  if (!(nrm > 0.0)) {
    free(tt);
    return NAN;
  }
  double s = sqrt((double)L) / nrm;
  for (size_t p = 0; p < P; p++) tt[p] = s * theta[p];
  const double *F = ds_mlp_forward(m, tt, X, w);
  double tr = 0.0;
  for (size_t q = 0; q < kn; q++) tr += w->dF[q] * F[q];
  free(tt);
  return -tr;
}
