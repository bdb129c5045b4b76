/* cnnact.c -- activation spectra of a CNN (record.spectra.activations,
 * issue 26): for each ReLU of the net (cnn.h's ds_cnn_nrelus: relu layers,
 * the two inside each residual block, each depth of a DAG block), its output
 * on the n training samples as a matrix A (n x d, a row per sample, a column
 * per feature, d = C H W of the map; the MLP's A_l is d_l x n, its
 * transpose: the same singular values), and
 *   - the top-k singular values of A, NaN-padded past min(n, d);
 *   - the nonlinearity ratio ||A - Z||_F^2 / ||Z||_F^2, Z the ReLU's input
 *     (NaN when Z = 0).
 * The singular values are those of A itself, as the MLP's (ds_svd_values:
 * LAPACK dgesdd on one rank, ScaLAPACK pdgesvd on the team grid), about
 * 4 d n min(d, n) flops per ReLU. Not through the Gram matrix A A^T: that
 * would be cheaper (n^2 d) but gives a singular value s_i only to about
 * eps s_1^2 / s_i, so a dead unit's exact 0 (common in ReLU nets) would read
 * as ~1e-8 s_1 (tests/cnn_act_torch.py saw 3e-9 s_1 on a 5-unit dense layer).
 *
 * Teams (samples split as the NTK's, cnn.c): member r runs the forward pass
 * of its samples [floor(n r / s), floor(n (r+1) / s)) only, sums its
 * samples' terms of the ratio (summed over the team by MPI_Allreduce), and
 * sends its rows of A to the team root (MPI_Gatherv: A is d x n column-major,
 * a member's samples are contiguous columns), where ds_svd_values takes the
 * matrix as every root-held spectrum (scattered over the team grid). Results
 * agree with one rank to round-off. Dropout must be off (point.c turns it
 * off between steps). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

extern void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work,
                    const int *lwork, int *iwork, int *info, size_t);

/* No team (t NULL, the room's unit tests): LAPACK dgesdd (JOBZ = 'N') on A
 * (m x n, destroyed), min(m, n) values descending into sv. */
static int svd_here(int m, int n, double *A, double *sv) {
  int k = m < n ? m : n, one = 1, query = -1, info = 0, lwork;
  double wq = 0, du = 0;
  int *iw = ds_calloc((size_t)8 * k + 1, sizeof *iw);
  if (!iw) return DS_ENOMEM;
  dgesdd_("N", &m, &n, A, &m, sv, &du, &one, &du, &one, &wq, &query, iw, &info, 1);
  lwork = (int)wq + 1;
  double *work = ds_calloc((size_t)lwork, sizeof *work);
  if (work) dgesdd_("N", &m, &n, A, &m, sv, &du, &one, &du, &one, work, &lwork, iw, &info, 1);
  free(work), free(iw);
  if (!work) return DS_ENOMEM;
  return info ? ds_fail(DS_ENUM, "dgesdd: info %d on a %d x %d matrix", info, m, n) : DS_OK;
}

int ds_diag_cnn_activations(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                            int k, double *out) {
  int s = t ? t->size : 1, me = t ? t->rank : 0, nr = ds_cnn_nrelus(net), d0 = ds_cnn_din(net);
  int lo = (int)((int64_t)n * me / s), hi = (int)((int64_t)n * (me + 1) / s), nl = hi - lo;
  int rc = DS_OK;
  if (k < 0) rc = ds_fail(DS_EINPUT, "diag activations: k = %d must be >= 0", k);
  if (n < 1) rc = ds_fail(DS_EINPUT, "diag activations: no samples");
  if (rc == DS_OK && nl > 0) ds_cnn_forward(net, theta, X + (size_t)lo * d0, nl);
  size_t amax = 1; /* the largest map, d n */
  for (int j = 0; j < nr && rc == DS_OK; j++) {
    ds_cnn_relu r;
    ds_cnn_relu_map(net, j, X, &r);
    if ((size_t)r.d * n > INT_MAX)
      rc = ds_fail(DS_EINPUT, "diag activations: ReLU %d's map (%d features x %d samples) is too "
                   "large", j + 1, r.d, n);
    amax = (size_t)r.d * n > amax ? (size_t)r.d * n : amax;
  }
  double *A = NULL, *sv = NULL;
  int *cnt = NULL;
  if (rc == DS_OK) {
    A = ds_calloc(amax, sizeof *A);
    sv = ds_calloc((size_t)n, sizeof *sv);
    cnt = ds_calloc(2 * (size_t)s, sizeof *cnt);
    if (!A || !sv || !cnt)
      rc = ds_fail(DS_ENOMEM, "diag activations: out of memory for a %zu-double map", amax);
  }
  if (t) rc = ds_diag_agree(t, rc);
  for (int j = 0; j < nr && rc == DS_OK; j++) {
    ds_cnn_relu r;
    ds_cnn_relu_map(net, j, X, &r);
    int d = r.d, g = d < n ? d : n;
    double sums[2] = {0.0, 0.0}; /* ||A - Z||^2, ||Z||^2 over my samples */
    for (int i = 0; i < nl; i++) { /* a sample's sums first: the error grows with d + n, not d n */
      const double *a = r.A + i * r.lda, *z = r.Z + i * r.ldz;
      double e2 = 0.0, z2 = 0.0;
      memcpy(A + (size_t)(lo + i) * d, a, (size_t)d * sizeof *A); /* my columns of A^T */
      for (int q = 0; q < d; q++) {
        double e = a[q] - z[q];
        e2 += e * e;
        z2 += z[q] * z[q];
      }
      sums[0] += e2, sums[1] += z2;
    }
    if (s > 1) { /* my rows to the root; the ratio's sums to everyone */
      int *rcnt = cnt, *rdsp = cnt + s;
      for (int q = 0; q < s; q++) {
        int qlo = (int)((int64_t)n * q / s), qhi = (int)((int64_t)n * (q + 1) / s);
        rcnt[q] = d * (qhi - qlo), rdsp[q] = d * qlo;
      }
      if (MPI_Gatherv(me == 0 ? MPI_IN_PLACE : A + (size_t)lo * d, d * nl, MPI_DOUBLE, A, rcnt,
                      rdsp, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS ||
          MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, t->comm) != MPI_SUCCESS) {
        rc = ds_fail(DS_EMPI, "diag activations: MPI_Gatherv of ReLU %d's map failed", j + 1);
        break;
      }
    }
    /* A^T (d x n, on the root) has A's singular values */
    rc = t ? ds_svd_values(t, d, n, A, d, sv) : svd_here(d, n, A, sv);
    if (rc != DS_OK) {
      ds_context(rc, "diag activations: ReLU %d (layer %d)", j + 1, r.layer + 1);
      break;
    }
    double *o = out + (size_t)j * (k + 1);
    for (int i = 0; i < k; i++) o[i] = i < g ? sv[i] : NAN;
    o[k] = sums[1] > 0.0 ? sums[0] / sums[1] : NAN;
  }
  free(A), free(sv), free(cnt);
  return rc;
}
