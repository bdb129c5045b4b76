/* teacher.c -- synthetic regression from a random linear teacher of given
 * rank: T = U V^T (d_out x d_in; U d_out x r, V d_in x r with orthonormal
 * columns, all singular values 1), x ~ N(0, I), y = T x + noise * N(0, I).
 *
 * Draw order from the rng (fixed, so a seed reproduces the data exactly):
 *   1. G_U (d_out x r, column-major), 2. G_V (d_in x r)   -> teacher
 *   3. train X (d_in x n_train), 4. train noise (d_out x n_train)
 *   5. test X (d_in x n_test),   6. test noise (d_out x n_test)
 * The noise is drawn even when noise == 0, so X does not depend on the noise
 * level. U and V are the Q factors of G_U, G_V (LAPACK dgeqrf + dorgqr) with
 * column signs fixed so diag(R) > 0: Haar-distributed orthonormal columns. */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"
#include "data_internal.h"

/* LAPACK (Fortran symbols from liblapack) */
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *work, const int *lwork, int *info);

static void fill_normal(double *x, size_t count, ds_rng *rng) {
  for (size_t k = 0; k < count; k++) x[k] = ds_rng_normal(rng);
}

/* Q (m x k, in place over the Gaussian matrix A, m >= k): orthonormal columns
 * with the QR sign convention diag(R) > 0. */
int ds_data_orthonormalise(double *A, int m, int k) {
  int info = 0, lwork = -1;
  double query = 0.0;
  double *tau = ds_calloc((size_t)k, sizeof *tau);
  if (!tau) return DS_ENOMEM;
  dgeqrf_(&m, &k, A, &m, tau, &query, &lwork, &info);
  int lw2 = -1;
  double query2 = 0.0;
  dorgqr_(&m, &k, &k, A, &m, tau, &query2, &lw2, &info);
  lwork = (int)(query > query2 ? query : query2);
  if (lwork < k) lwork = k;
  double *work = ds_calloc((size_t)lwork, sizeof *work);
  double *sign = ds_calloc((size_t)k, sizeof *sign);
  int rc = DS_OK;
  if (!work || !sign) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgeqrf_(&m, &k, A, &m, tau, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "teacher: dgeqrf failed (info = %d)", info);
    goto done;
  }
  for (int j = 0; j < k; j++) sign[j] = A[(size_t)j * m + j] < 0.0 ? -1.0 : 1.0;
  dorgqr_(&m, &k, &k, A, &m, tau, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "teacher: dorgqr failed (info = %d)", info);
    goto done;
  }
  for (int j = 0; j < k; j++)
    if (sign[j] < 0.0) cblas_dscal(m, -1.0, A + (size_t)j * m, 1);
done:
  free(tau);
  free(work);
  free(sign);
  return rc;
}

int ds_data_teacher_matrix(int d_in, int d_out, int rank, ds_rng *rng, double *T) {
  if (d_in < 1 || d_out < 1 || rank < 0 || rank > d_in || rank > d_out)
    return ds_fail(DS_EINPUT, "teacher: need 0 <= rank <= min(d_in, d_out) (got d_in %d, d_out %d, rank %d)",
                   d_in, d_out, rank);
  memset(T, 0, (size_t)d_out * d_in * sizeof *T);
  if (rank == 0) return DS_OK;
  double *U = ds_calloc((size_t)d_out * rank, sizeof *U);
  double *V = ds_calloc((size_t)d_in * rank, sizeof *V);
  int rc = DS_OK;
  if (!U || !V) {
    rc = DS_ENOMEM;
    goto done;
  }
  fill_normal(U, (size_t)d_out * rank, rng);
  fill_normal(V, (size_t)d_in * rank, rng);
  if ((rc = ds_data_orthonormalise(U, d_out, rank)) != DS_OK) goto done;
  if ((rc = ds_data_orthonormalise(V, d_in, rank)) != DS_OK) goto done;
  /* T (d_out x d_in) = U (d_out x r) V^T (r x d_in) */
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, d_out, d_in, rank, 1.0, U, d_out, V, d_in,
              0.0, T, d_out);
done:
  free(U);
  free(V);
  return rc;
}

/* X ~ N(0, I), then E ~ N(0, I); Y = T X + noise E. */
static int teacher_sample(const double *T, double noise, int n, int d_in, int d_out,
                          ds_rng *rng, ds_dataset *d) {
  DS_TRY(ds_dataset_alloc(d, n, d_in, d_out));
  size_t ny = (size_t)d_out * n;
  fill_normal(d->X, (size_t)d_in * n, rng);
  fill_normal(d->Y, ny, rng);
  if (noise == 0.0) memset(d->Y, 0, ny * sizeof *d->Y);
  else cblas_dscal((int)ny, noise, d->Y, 1);
  /* Y (d_out x n) = T (d_out x d_in) X (d_in x n) + Y */
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d_out, n, d_in, 1.0, T, d_out, d->X,
              d_in, 1.0, d->Y, d_out);
  return DS_OK;
}

int ds_data_teacher(int d_in, int d_out, int rank, double noise, int n_train, int n_test,
                    ds_rng *rng, ds_dataset *train, ds_dataset *test) {
  if (train) memset(train, 0, sizeof *train);
  if (test) memset(test, 0, sizeof *test);
  if (!(noise >= 0.0)) return ds_fail(DS_EINPUT, "teacher: noise must be >= 0 (got %g)", noise);
  if (n_train < 1 || n_test < 0 || (n_test > 0 && !test))
    return ds_fail(DS_EINPUT, "teacher: need n_train >= 1 and n_test >= 0 (got %d, %d)", n_train,
                   n_test);
  if (d_in < 1 || d_out < 1 || rank < 0 || rank > d_in || rank > d_out)
    return ds_fail(DS_EINPUT, "teacher: need 0 <= rank <= min(d_in, d_out) (got d_in %d, d_out %d, rank %d)",
                   d_in, d_out, rank);
  double *T = ds_calloc((size_t)d_out * d_in, sizeof *T);
  if (!T) return DS_ENOMEM;
  int rc = ds_data_teacher_matrix(d_in, d_out, rank, rng, T);
  if (rc == DS_OK) rc = teacher_sample(T, noise, n_train, d_in, d_out, rng, train);
  if (rc == DS_OK && test) rc = teacher_sample(T, noise, n_test, d_in, d_out, rng, test);
  free(T);
  if (rc != DS_OK) {
    ds_dataset_free(train);
    ds_dataset_free(test);
    return ds_context(rc, "teacher data");
  }
  return DS_OK;
}
