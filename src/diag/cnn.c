/* cnn.c -- the NTK of a convolutional net (issue 26) through the public CNN
 * API only (include/dynsweep/cnn.h: forward, backward, nparams), so it does
 * not depend on how the conv layers are computed.
 *
 * Weight sharing makes the MLP's layer-wise trick K_l = (D^T D) o (A^T A)
 * (ntk.c) a sum over spatial positions that needs the layers' internal
 * cotangents; cnn.h does not expose them. So the Jacobian J (kn x P, row
 * o + k i = grad_theta f_o(x_i)) is formed explicitly from per-sample
 * gradients: one forward pass of sample i alone, then k backward passes with
 * the unit cotangents e_o (ds_cnn_backward of a 1-sample forward is exactly
 * that sample's gradient; an n-sample backward would sum over samples). Then
 * K = J J^T by one DSYRK (kn^2 P flops) and the eigenpairs as for the MLPs
 * (ds_diag_ntk_eig).
 *
 * Memory: J holds kn P doubles. When that exceeds the budget jbytes (R rows
 * of J), the rows go in blocks a of Ba = R - Bb rows, Bb = R/8 (at least one
 * row each): J_a is formed once, K_aa = J_a J_a^T (DSYRK), and every later
 * row is recomputed Bb rows at a time to give K_ba = J_b J_a^T (DGEMM):
 * about nb/2 extra sweeps of per-sample gradients for nb = kn/Ba blocks, and
 * K is exact.
 * Why not a matrix-free Lanczos on K v = J (J^T v)? J^T v is one n-sample
 * backward with cotangent v, and J u is now one ds_cnn_jvp (cnnrop.c; it was
 * missing when this was written, when each product cost a full sweep of
 * per-sample gradients) -- but K itself (kn^2, bounded by
 * record.spectra.ntk_max) is needed anyway for the kernel change ||K_t -
 * K_0|| and the eigenvectors of the loss split, so the blocked exact K stays
 * (a JVP-based Lanczos for the top eigenvalues alone is not built). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

int ds_diag_cnn_jacobian(ds_cnn *net, const double *theta, const double *X, int n, int k, int r0,
                         int nr, double *J) {
  size_t P = ds_cnn_nparams(net);
  int d = ds_cnn_din(net);
  if (k < 1 || r0 < 0 || nr < 0 || r0 + nr > k * n)
    return ds_fail(DS_EINPUT, "diag cnn jacobian: rows [%d, %d) of k n = %d x %d", r0, r0 + nr, k, n);
  double *e = ds_calloc((size_t)k, sizeof *e);
  if (!e) return DS_ENOMEM;
  int cur = -1; /* the sample whose forward pass the net holds */
  for (int r = r0; r < r0 + nr; r++) {
    int i = r / k, o = r % k;
    const double *x = X + (size_t)i * d;
    if (i != cur) {
      ds_cnn_forward(net, theta, x, 1);
      cur = i;
    }
    e[o] = 1.0;
    ds_cnn_backward(net, theta, x, 1, e, J + (size_t)(r - r0) * P);
    e[o] = 0.0;
  }
  free(e);
  return DS_OK;
}

int ds_diag_cnn_ntk_matrix(ds_cnn *net, const double *theta, const double *X, int n, int k,
                           size_t jbytes, double *K) {
  size_t P = ds_cnn_nparams(net), kn = (size_t)k * n;
  if (kn * kn > (size_t)INT_MAX)
    return ds_fail(DS_EINPUT, "diag cnn ntk: k*n = %zu is too large for the NTK matrix", kn);
  size_t rows = jbytes / (sizeof(double) * P); /* rows of J the budget holds */
  int one = rows >= kn;
  /* blocks: Ba rows held (the more, the fewer recomputations), Bb recomputed at a time */
  size_t Bb = one ? 0 : rows / 8 > 0 ? rows / 8 : 1;
  size_t Ba = one ? kn : rows > Bb ? rows - Bb : 1;
  double *Ja = ds_calloc(P * Ba, sizeof *Ja), *Jb = one ? NULL : ds_calloc(P * Bb, sizeof *Jb);
  if (!Ja || (!one && !Jb)) {
    free(Ja);
    free(Jb);
    return ds_fail(DS_ENOMEM, "diag cnn ntk: out of memory for %zu rows of the Jacobian (%zu "
                   "parameters)", Ba + Bb, P);
  }
  int rc = DS_OK;
  for (size_t a0 = 0; a0 < kn && rc == DS_OK; a0 += Ba) {
    int na = (int)(kn - a0 < Ba ? kn - a0 : Ba);
    rc = ds_diag_cnn_jacobian(net, theta, X, n, k, (int)a0, na, Ja);
    if (rc != DS_OK) break;
    /* K_aa (lower) = J_a J_a^T; J_a is P x na column-major (a column per row of J) */
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, na, (int)P, 1.0, Ja, (int)P, 0.0,
                K + a0 * kn + a0, (int)kn);
    for (size_t b0 = a0 + Ba; b0 < kn && rc == DS_OK; b0 += Bb) {
      int nb = (int)(kn - b0 < Bb ? kn - b0 : Bb);
      rc = ds_diag_cnn_jacobian(net, theta, X, n, k, (int)b0, nb, Jb);
      if (rc == DS_OK) /* K_ba = J_b J_a^T (rows b0.., columns a0..: below the diagonal) */
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, nb, na, (int)P, 1.0, Jb, (int)P, Ja,
                    (int)P, 0.0, K + a0 * kn + b0, (int)kn);
    }
  }
  free(Ja);
  free(Jb);
  if (rc != DS_OK) return rc;
  for (size_t c = 0; c < kn; c++) /* mirror to full */
    for (size_t r = c + 1; r < kn; r++) K[r * kn + c] = K[c * kn + r];
  return DS_OK;
}

int ds_diag_cnn_ntk(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n, int k,
                    size_t jbytes, int topk, double *evals, double *evecs, double *K) {
  size_t kn = (size_t)k * n;
  int rc = DS_OK;
  if (topk < 0) rc = ds_fail(DS_EINPUT, "diag cnn ntk: topk = %d must be >= 0", topk);
  if (kn * kn > (size_t)INT_MAX)
    rc = ds_fail(DS_EINPUT, "diag cnn ntk: k*n = %zu is too large for the NTK matrix", kn);
  double *Kb = NULL;
  if (rc == DS_OK) {
    Kb = K ? K : ds_calloc(kn * kn, sizeof *Kb);
    if (!Kb) rc = DS_ENOMEM;
  }
  /* every team member forms the same K (same theta, X; deterministic BLAS on
   * one thread), then the eigenproblem is the team's */
  if (rc == DS_OK) rc = ds_diag_cnn_ntk_matrix(net, theta, X, n, k, jbytes, Kb);
  rc = ds_diag_agree(t, rc);
  if (rc == DS_OK) rc = ds_diag_ntk_eig(t, (int)kn, Kb, topk, evals, evecs);
  if (Kb != K) free(Kb);
  return rc;
}
