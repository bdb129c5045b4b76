/* svd.c -- singular values of a root-held matrix with ScaLAPACK pdgesvd on
 * the team grid. The path is the same for every team size, including 1 (a
 * 1x1 BLACS grid): copy to the grid (pdgemr2d), workspace query, pdgesvd
 * with JOBU = JOBVT = 'N', then one broadcast from the team root so every
 * member holds bit-identical values. */
#include <math.h>
#include <stdlib.h>

#include "dynsweep/util.h"
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

int ds_svd_values(ds_team *t, int m, int n, const double *A, int lda, double *s) {
  int k = m < n ? m : n;
  int rc = k > 0 && !s ? ds_fail(DS_EINTERNAL, "ds_svd_values: NULL output") : DS_OK;
  if (rc == DS_OK) rc = ds_svd_check_finite(t, m, n, A, lda);
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
