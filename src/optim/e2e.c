/* e2e.c -- the end-to-end update of seed 002 (Arora, Cohen, Hazan 2018, Eq. 9):
 *
 *   W <- (1 - lr wd N) W - lr sum_{j=1}^{N} [W W^T]^{(j-1)/N} G [W^T W]^{(N-j)/N}.
 *
 * Computed through the thin SVD W = U S V^T (U rows x r, V cols x r,
 * r = min(rows, cols)). U's columns (completed by any orthonormal basis U_perp
 * of their complement) are eigenvectors of W W^T with eigenvalues s_k^2 (0 on
 * U_perp), likewise V for W^T W, so with p_k(x) = x^{2k/N} (0^0 = 1):
 *
 *   sum_j ... = [U U_perp] (Pi o ([U U_perp]^T G [V V_perp])) [V V_perp]^T,
 *   Pi_{ab} = sum_{j=1}^{N} p_{j-1}(s_a) p_{N-j}(s_b)   (s = 0 beyond r).
 *
 * At most one of U_perp, V_perp is non-empty. If rows < cols (V_perp present),
 * Pi_{a,b} = p_{N-1}(s_a) =: c_a for every b beyond r, and the V_perp block is
 * U diag(c) U^T G (I - V V^T); so
 *   D = U [ diag(c) U^T G + ((Pi - c 1^T) o P) V^T ],  P = U^T G V,
 * with (Pi - c 1^T)_{ab} = sum_{j=1}^{N-1} p_{j-1}(s_a) p_{N-j}(s_b) summed
 * directly (no cancellation). If rows > cols, symmetrically with
 * c'_b = p_{N-1}(s_b):
 *   D = [ G V diag(c') + U ((Pi - 1 c'^T) o P) ] V^T,
 *   (Pi - 1 c'^T)_{ab} = sum_{j=2}^{N} p_{j-1}(s_a) p_{N-j}(s_b).
 * If rows == cols, D = U (Pi o P) V^T. Singular values come straight from the
 * SVD (accurate to eps * s_1 even when W is rank deficient), which is what
 * "eigenvalues clamped at 0" means here: s_k^2 >= 0 by construction, and
 * s_k <= max(rows, cols) * DBL_EPSILON * s_1 counts as exactly 0.
 * No U_perp / V_perp is ever formed: the cost is one SVD and a few GEMMs. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/optim.h"
#include "dynsweep/util.h"

void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info);

int ds_e2e_step(double *W, int rows, int cols, int depth, const double *G, double lr, double wd) {
  if (rows <= 0 || cols <= 0) return ds_fail(DS_EINPUT, "e2e: bad shape %d x %d", rows, cols);
  if (depth < 1) return ds_fail(DS_EINPUT, "e2e: depth %d < 1", depth);
  const size_t mn = (size_t)rows * cols;
  const int N = depth;
  int finite = 1;
  for (size_t i = 0; i < mn; i++)
    if (!isfinite(W[i]) || !isfinite(G[i])) {
      finite = 0;
      break;
    }
  if (N == 1 || !finite) {
    /* depth 1 is plain GD with coupled weight decay; a non-finite W or G is
     * propagated the same way (the caller's divergence check sees it) */
    const double f = 1 - lr * wd * N;
    for (size_t i = 0; i < mn; i++) W[i] = f * W[i] - lr * G[i];
    return DS_OK;
  }

  const int m = rows, n = cols, r = m < n ? m : n;
  int info = 0, lwork = -1;
  double q = 0;
  dgesvd_("S", "S", &m, &n, W, &m, &q, W, &m, W, &r, &q, &lwork, &info); /* query */
  if (info != 0) return ds_fail(DS_ENUM, "e2e: dgesvd workspace query info %d", info);
  lwork = (int)q + 1;
  /* A (copy of W), s, U, VT, R = U^T G (r x n), P (r x r), M (r x r), T (max(m,n) x r or r x n),
   * powers (N x r), work */
  const size_t nA = mn, nU = (size_t)m * r, nVT = (size_t)r * n, nR = (size_t)r * n,
               nGV = (size_t)m * r, nP = (size_t)r * r, nT = (size_t)(m > n ? m : n) * r,
               nPow = (size_t)N * r;
  double *buf = malloc((nA + r + nU + nVT + nR + nGV + 2 * nP + nT + nPow + (size_t)lwork) *
                       sizeof *buf);
  if (!buf) return ds_fail(DS_ENOMEM, "e2e: out of memory (%d x %d)", m, n);
  double *A = buf, *s = A + nA, *U = s + r, *VT = U + nU, *R = VT + nVT, *GV = R + nR,
         *P = GV + nGV, *M = P + nP, *T = M + nP, *pw = T + nT, *work = pw + nPow;
  memcpy(A, W, mn * sizeof *A);
  dgesvd_("S", "S", &m, &n, A, &m, s, U, &m, VT, &r, work, &lwork, &info);
  if (info != 0) {
    free(buf);
    return ds_fail(DS_ENUM, "e2e: dgesvd info %d (%d x %d)", info, m, n);
  }
  /* Numerical zeros: singular values below max(m,n) eps s_1 (LAPACK's rank
   * tolerance) are round-off of exact zeros, and x -> x^{2k/N} would amplify
   * them (1e-16 -> 1e-6.4 for 2k/N = 0.4), so they are set to 0 exactly.
   * pw[k*r + a] = s_a^{2k/N}, pow(0, 0) = 1. */
  const double tol = (double)(m > n ? m : n) * DBL_EPSILON * s[0];
  for (int a = 0; a < r; a++)
    if (s[a] <= tol) s[a] = 0;
  for (int k = 0; k < N; k++)
    for (int a = 0; a < r; a++) pw[(size_t)k * r + a] = pow(s[a], 2.0 * k / N);

  double *D = A; /* A is no longer needed: D (m x n) overwrites it */
  if (m <= n) {
    /* R = U^T G (r x n), P = R V = R VT^T (r x r) */
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r, n, m, 1.0, U, m, G, m, 0.0, R, r);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, r, r, n, 1.0, R, r, VT, r, 0.0, P, r);
    const int jmax = m == n ? N : N - 1; /* square: the full Pi, no complement */
    for (int b = 0; b < r; b++)
      for (int a = 0; a < r; a++) {
        double pi = 0;
        for (int j = 1; j <= jmax; j++) pi += pw[(size_t)(j - 1) * r + a] * pw[(size_t)(N - j) * r + b];
        M[a + (size_t)b * r] = pi * P[a + (size_t)b * r];
      }
    /* T = M VT (r x n) + (m < n ? diag(c) R : 0) */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, r, n, r, 1.0, M, r, VT, r, 0.0, T, r);
    if (m < n)
      for (int b = 0; b < n; b++)
        for (int a = 0; a < r; a++) T[a + (size_t)b * r] += pw[(size_t)(N - 1) * r + a] * R[a + (size_t)b * r];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, r, 1.0, U, m, T, r, 0.0, D, m);
  } else {
    /* GV = G V = G VT^T (m x r), P = U^T GV (r x r) */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, r, n, 1.0, G, m, VT, r, 0.0, GV, m);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, r, r, m, 1.0, U, m, GV, m, 0.0, P, r);
    for (int b = 0; b < r; b++)
      for (int a = 0; a < r; a++) {
        double pi = 0;
        for (int j = 2; j <= N; j++) pi += pw[(size_t)(j - 1) * r + a] * pw[(size_t)(N - j) * r + b];
        M[a + (size_t)b * r] = pi * P[a + (size_t)b * r];
      }
    /* T = U M + GV diag(c') (m x r), D = T VT */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, r, r, 1.0, U, m, M, r, 0.0, T, m);
    for (int b = 0; b < r; b++) {
      const double c = pw[(size_t)(N - 1) * r + b];
      for (int a = 0; a < m; a++) T[a + (size_t)b * m] += c * GV[a + (size_t)b * m];
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, r, 1.0, T, m, VT, r, 0.0, D, m);
  }
  const double f = 1 - lr * wd * N;
  for (size_t i = 0; i < mn; i++) W[i] = f * W[i] - lr * D[i];
  free(buf);
  return DS_OK;
}
