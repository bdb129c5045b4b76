/* svd.c -- singular values of a root-held matrix with ScaLAPACK pdgesvd on
 * the team grid: copy to the grid (pdgemr2d), workspace query, pdgesvd with
 * JOBU = JOBVT = 'N', then one broadcast from the team root so every member
 * holds bit-identical values.
 *
 * A team of one rank takes LAPACK's dgesdd instead (same values to ~1e-15):
 * pdgesvd builds and frees BLACS sub-grids (MPI communicators) inside every
 * call, which the benchmark measured at ~70% of a small-point worker's time
 * (docs/performance.md). DYNSWEEP_SVD=scalapack forces pdgesvd on 1x1 grids
 * too (the tests run both paths). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"
#include "dynsweep/dtrain.h"
#include "spectra_priv.h"

/* On the root: DS_ENUM if A has a NaN or infinity (ScaLAPACK would spin or
 * return garbage). DS_OK elsewhere. */
static int ds_svd_check_finite(ds_team *t, int m, int n, const double *A, int lda) {
  if (t->rank != 0 || !A || lda < m) return DS_OK; /* argument errors: ds_team_scatter */
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++)
      if (!isfinite(A[(size_t)j * (size_t)lda + (size_t)i]))
        return ds_fail(DS_ENUM, "ds_svd_values: entry (%d, %d) of the %d x %d matrix is %g",
                       i, j, m, n, A[(size_t)j * (size_t)lda + (size_t)i]);
  return DS_OK;
}

/* info from pdgesvd (global) -> error code + message. */
static int ds_svd_info(int info, int k) {
  if (info == 0) return DS_OK;
  if (info < 0) return ds_fail(DS_ENUM, "pdgesvd: argument %d had an illegal value", -info);
  if (info == k + 1)
    return ds_fail(DS_ENUM, "pdgesvd: singular values differ across the process grid "
                            "(heterogeneous grid)");
  return ds_fail(DS_ENUM, "pdgesvd: DBDSQR did not converge (info %d)", info);
}

/* Workspace query + factorisation on the distributed copy D (destroyed). */
static int ds_svd_run(ds_team *t, ds_dmat *D, double *s) {
  static const int one = 1, query = -1;
  int m = D->m, n = D->n, k = m < n ? m : n, info = 0, lwork = 0;
  double wq = 0, udummy = 0, vtdummy = 0;
  pdgesvd_("N", "N", &m, &n, D->a, &one, &one, D->desc, s, &udummy, &one, &one, D->desc,
           &vtdummy, &one, &one, D->desc, &wq, &query, &info, 1, 1);
  int rc = ds_svd_info(info, k); /* info is global: same on every member */
  if (rc != DS_OK) return ds_context(rc, "workspace query");
  rc = ds_team_lwork(wq, &lwork);
  double *work = rc == DS_OK ? ds_calloc((size_t)lwork, sizeof(double)) : NULL;
  if (rc == DS_OK && !work) rc = DS_ENOMEM;
  rc = ds_team_agree(t, rc, m, n);
  if (rc != DS_OK) {
    free(work);
    return rc;
  }
  pdgesvd_("N", "N", &m, &n, D->a, &one, &one, D->desc, s, &udummy, &one, &one, D->desc,
           &vtdummy, &one, &one, D->desc, work, &lwork, &info, 1, 1);
  free(work);
  int info_max = info, info_min = info;
  MPI_Allreduce(&info, &info_max, 1, MPI_INT, MPI_MAX, t->comm);
  MPI_Allreduce(&info, &info_min, 1, MPI_INT, MPI_MIN, t->comm);
  return ds_svd_info(info_min < 0 ? info_min : info_max, k);
}

extern void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda,
                    double *s, double *u, const int *ldu, double *vt, const int *ldvt, double *work,
                    const int *lwork, int *iwork, int *info, size_t);

/* One rank: LAPACK dgesdd (JOBZ = 'N') on a copy. */
static int ds_svd_local(int m, int n, const double *A, int lda, double *s) {
  int k = m < n ? m : n, one = 1, query = -1, info = 0, lwork;
  double wq = 0, du = 0;
  double *a = malloc((size_t)m * n * sizeof *a);
  int *iwork = malloc((size_t)(8 * k + 1) * sizeof *iwork);
  if (!a || !iwork) {
    free(a);
    free(iwork);
    return ds_fail(DS_ENOMEM, "ds_svd_values: out of memory for a %d x %d copy", m, n);
  }
  for (int j = 0; j < n; j++)
    for (int i = 0; i < m; i++) a[(size_t)j * m + i] = A[(size_t)j * lda + i];
  dgesdd_("N", &m, &n, a, &m, s, &du, &one, &du, &one, &wq, &query, iwork, &info, 1);
  lwork = (int)wq + 1;
  double *work = malloc((size_t)lwork * sizeof *work);
  if (work) dgesdd_("N", &m, &n, a, &m, s, &du, &one, &du, &one, work, &lwork, iwork, &info, 1);
  free(work);
  free(a);
  free(iwork);
  if (!work) return ds_fail(DS_ENOMEM, "ds_svd_values: out of memory for dgesdd workspace");
  if (info != 0) return ds_fail(DS_ENUM, "dgesdd: info %d on a %d x %d matrix", info, m, n);
  return DS_OK;
}

static int ds_svd_force_scalapack(void) {
  return ds_knob_is(DS_KNOB_SVD, "scalapack");
}

int ds_svd_values(ds_team *t, int m, int n, const double *A, int lda, double *s) {
  int k = m < n ? m : n;
  int rc = k > 0 && !s ? ds_fail(DS_EINTERNAL, "ds_svd_values: NULL output") : DS_OK;
  if (rc == DS_OK) rc = ds_svd_check_finite(t, m, n, A, lda);
  if (rc == DS_OK && t->size == 1 && k > 0 && A && lda >= m && !ds_svd_force_scalapack())
    return ds_svd_local(m, n, A, lda, s);
  DS_TRY(ds_team_agree(t, rc, m, n));
  ds_dmat D; /* the copy pdgesvd destroys */
  rc = ds_team_scatter(t, m, n, A, lda, &D);
  if (rc != DS_OK) return ds_context(rc, "ds_svd_values %d x %d", m, n);
  if (k > 0) rc = ds_svd_run(t, &D, s);
  ds_dmat_free(&D);
  if (rc != DS_OK) return ds_context(rc, "ds_svd_values %d x %d", m, n);
  if (k > 0 && MPI_Bcast(s, k, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "ds_svd_values: MPI_Bcast failed");
  return DS_OK;
}

/* The distributed variant (dtrain.h): pdgesvd on a local copy of A's blocks
 * (same descriptor), no gather; a non-finite entry anywhere is DS_ENUM on
 * every member. */
int ds_svd_values_dmat(ds_team *t, const ds_dmat *A, double *s) {
  int m = A->m, n = A->n, k = m < n ? m : n;
  size_t cnt = (size_t)A->mloc * (size_t)A->nloc;
  int bad = 0;
  for (size_t q = 0; q < cnt; q++)
    if (!isfinite(A->a[q])) bad = 1;
  int rc = bad ? ds_fail(DS_ENUM, "ds_svd_values_dmat: the %d x %d matrix has a non-finite entry",
                         m, n)
               : DS_OK;
  ds_dmat D = *A;
  D.a = rc == DS_OK ? malloc((cnt ? cnt : 1) * sizeof(double)) : NULL;
  if (rc == DS_OK && !D.a) rc = ds_fail(DS_ENOMEM, "ds_svd_values_dmat: out of memory");
  if (rc == DS_OK && cnt) memcpy(D.a, A->a, cnt * sizeof(double));
  rc = ds_team_agree(t, rc, m, n);
  if (rc == DS_OK && k > 0) rc = ds_svd_run(t, &D, s);
  free(D.a);
  if (rc != DS_OK) return ds_context(rc, "ds_svd_values_dmat %d x %d", m, n);
  if (k > 0 && MPI_Bcast(s, k, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "ds_svd_values_dmat: MPI_Bcast failed");
  return DS_OK;
}
