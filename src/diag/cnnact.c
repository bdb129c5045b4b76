/* cnnact.c -- activation spectra of a CNN (record.spectra.activations,
 * issue 27): for each ReLU of the net (cnn.h's ds_cnn_nrelus: relu layers,
 * the two inside each residual block, each depth of a DAG block), its output
 * on the n training samples as a matrix A (n x d, a row per sample, a column
 * per feature, d = C H W of the map; the MLP's A_l is d_l x n, its
 * transpose: the same singular values), and
 *   - the top-k singular values of A, NaN-padded past min(n, d);
 *   - the nonlinearity ratio ||A - Z||_F^2 / ||Z||_F^2, Z the ReLU's input
 *     (NaN when Z = 0).
 * Singular values come from the g x g Gram matrix, g = min(n, d): G = A A^T
 * (n x n, the sample Gram) when n <= d, else G = A^T A (d x d, a sum over
 * samples), s_i = sqrt(lambda_i(G)) (ScaLAPACK pdsyevd on the team: ds_syev_values;
 * negative round-off eigenvalues clamp to 0). Forming G costs g^2 max(n, d)
 * flops; through G, s_i carries an absolute error of about eps s_1^2 / s_i,
 * so the top singular values are exact to round-off and ones below ~1e-8 s_1
 * are not resolved (the MLP's ds_diag_activations takes the SVD of A itself).
 *
 * Teams (samples split as the NTK's, cnn.c): member r runs the forward pass
 * of its samples [floor(n r / s), floor(n (r+1) / s)) only and sums its
 * samples' terms of the ratio; the Gram's shares:
 *   d < n:  G = sum_i a_i a_i^T over its samples (a DSYRK of d^2 n/s);
 *   n <= d: the rows of A are gathered on every member (MPI_Allgatherv,
 *           n d doubles) and member r takes the feature slice
 *           [floor(d r / s), floor(d (r+1) / s)): G_r = A[:, F_r] A[:, F_r]^T
 *           (n^2 d / s).
 * The shares and the ratio's sums are summed on the team root by MPI_Reduce;
 * the eigenvalues are the team's (pdsyevd), on every member. Results agree
 * with one rank to round-off (the order of the sums depends on the team
 * size). Dropout must be off (point.c turns it off between steps). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

int ds_diag_cnn_activations(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                            int k, double *out) {
  int s = t ? t->size : 1, me = t ? t->rank : 0, nr = ds_cnn_nrelus(net), d0 = ds_cnn_din(net);
  int lo = (int)((int64_t)n * me / s), hi = (int)((int64_t)n * (me + 1) / s), nl = hi - lo;
  int rc = DS_OK;
  if (k < 0) rc = ds_fail(DS_EINPUT, "diag activations: k = %d must be >= 0", k);
  if (n < 1) rc = ds_fail(DS_EINPUT, "diag activations: no samples");
  /* the largest Gram and map over the ReLUs (shapes only: no forward pass yet) */
  size_t gmax = 1, amax = 1;
  if (rc == DS_OK && nl > 0) ds_cnn_forward(net, theta, X + (size_t)lo * d0, nl);
  for (int j = 0; j < nr && rc == DS_OK; j++) {
    ds_cnn_relu r;
    ds_cnn_relu_map(net, j, X, &r);
    size_t g = (size_t)(r.d < n ? r.d : n);
    if (g * g > INT_MAX || (size_t)r.d * n > INT_MAX)
      rc = ds_fail(DS_EINPUT, "diag activations: ReLU %d's map (%d features x %d samples) is too "
                   "large", j + 1, r.d, n);
    gmax = g * g > gmax ? g * g : gmax;
    if (r.d >= n) amax = (size_t)r.d * n > amax ? (size_t)r.d * n : amax;
  }
  double *G = NULL, *Gs = NULL, *ev = NULL, *A = NULL;
  int *cnt = NULL;
  if (rc == DS_OK) {
    G = ds_calloc(gmax, sizeof *G);
    Gs = ds_calloc(gmax, sizeof *Gs);
    ev = ds_calloc((size_t)n, sizeof *ev);
    A = ds_calloc(amax, sizeof *A);
    cnt = ds_calloc(2 * (size_t)s, sizeof *cnt);
    if (!G || !Gs || !ev || !A || !cnt)
      rc = ds_fail(DS_ENOMEM, "diag activations: out of memory for the Gram matrices (%zu "
                   "doubles) and maps (%zu)", gmax, amax);
  }
  if (t) rc = ds_diag_agree(t, rc);
  for (int j = 0; j < nr && rc == DS_OK; j++) {
    ds_cnn_relu r;
    ds_cnn_relu_map(net, j, X, &r);
    int d = r.d, g = d < n ? d : n;
    double sums[2] = {0.0, 0.0}; /* ||A - Z||^2, ||Z||^2 over my samples */
    for (int i = 0; i < nl; i++) {
      const double *a = r.A + i * r.lda, *z = r.Z + i * r.ldz;
      for (int q = 0; q < d; q++) {
        double e = a[q] - z[q];
        sums[0] += e * e;
        sums[1] += z[q] * z[q];
      }
    }
    memset(Gs, 0, (size_t)g * g * sizeof *Gs);
    if (d < n) { /* G = A^T A = sum over my samples a_i a_i^T (d x d, lower) */
      if (nl > 0)
        cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, d, nl, 1.0, r.A, (int)r.lda, 0.0, Gs,
                    d);
    } else { /* G = A A^T (n x n): every member gets every row, then its feature slice */
      for (int i = 0; i < nl; i++)
        memcpy(A + (size_t)(lo + i) * d, r.A + i * r.lda, (size_t)d * sizeof *A);
      if (s > 1) {
        int *rcnt = cnt, *rdsp = cnt + s;
        for (int q = 0; q < s; q++) {
          int qlo = (int)((int64_t)n * q / s), qhi = (int)((int64_t)n * (q + 1) / s);
          rcnt[q] = d * (qhi - qlo), rdsp[q] = d * qlo;
        }
        if (MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, A, rcnt, rdsp, MPI_DOUBLE,
                           t->comm) != MPI_SUCCESS)
          rc = ds_fail(DS_EMPI, "diag activations: MPI_Allgatherv of ReLU %d's map failed", j + 1);
      }
      int f0 = (int)((int64_t)d * me / s), f1 = (int)((int64_t)d * (me + 1) / s);
      if (rc == DS_OK && f1 > f0)
        cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, f1 - f0, 1.0, A + f0, d, 0.0, Gs, n);
    }
    if (rc != DS_OK) break;
    if (s > 1) {
      if (MPI_Reduce(Gs, G, g * g, MPI_DOUBLE, MPI_SUM, 0, t->comm) != MPI_SUCCESS ||
          MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, t->comm) != MPI_SUCCESS) {
        rc = ds_fail(DS_EMPI, "diag activations: MPI_Reduce of ReLU %d's Gram failed", j + 1);
        break;
      }
    } else {
      memcpy(G, Gs, (size_t)g * g * sizeof *G);
    }
    if (t) rc = ds_diag_root_finite(t, G, (size_t)g * g, "an activation Gram matrix");
    if (rc == DS_OK) {
      if (t) {
        rc = ds_syev_values(t, g, G, g, ev); /* ascending, on every member */
      } else { /* no team (tests of the room): LAPACK on this rank */
        int info = 0, lw = -1, liw = -1, iw1;
        double w1;
        dsyevd_("N", "L", &g, G, &g, ev, &w1, &lw, &iw1, &liw, &info, 1, 1);
        lw = (int)w1, liw = iw1;
        double *wk = ds_calloc((size_t)lw, sizeof *wk);
        int *iwk = ds_calloc((size_t)liw, sizeof *iwk);
        if (!wk || !iwk) rc = DS_ENOMEM;
        else dsyevd_("N", "L", &g, G, &g, ev, wk, &lw, iwk, &liw, &info, 1, 1);
        if (rc == DS_OK && info != 0) rc = ds_fail(DS_ENUM, "diag activations: dsyevd info %d", info);
        free(wk), free(iwk);
      }
    }
    if (rc != DS_OK) {
      ds_context(rc, "diag activations: ReLU %d (layer %d)", j + 1, r.layer + 1);
      break;
    }
    double *o = out + (size_t)j * (k + 1);
    for (int i = 0; i < k; i++) o[i] = i < g ? sqrt(ev[g - 1 - i] > 0.0 ? ev[g - 1 - i] : 0.0) : NAN;
    o[k] = sums[1] > 0.0 ? sums[0] / sums[1] : NAN;
  }
  free(G), free(Gs), free(ev), free(A), free(cnt);
  return rc;
}
