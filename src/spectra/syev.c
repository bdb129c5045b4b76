/* syev.c -- eigenvalues (and optionally eigenvectors) of a root-held
 * symmetric matrix with ScaLAPACK pdsyevd on the team grid: the path the
 * Hessian and NTK spectra take. pdsyevd always forms eigenvectors (JOBZ='N'
 * is not implemented in ScaLAPACK); ds_syev_values simply drops them. */
#include <math.h>
#include <stdlib.h>

#include "dynsweep/util.h"
#include "spectra_priv.h"

static int ds_syev_info(int info) {
  if (info == 0) return DS_OK;
  if (info < 0) return ds_fail(DS_ENUM, "pdsyevd: argument %d had an illegal value", -info);
  return ds_fail(DS_ENUM, "pdsyevd: eigenvalue computation failed (info %d)", info);
}

/* The workspace pdsyevd reports can be too small for the routines it calls
 * (PDORMTR, PDLASRT inside PDSTEDC: known ScaLAPACK bugs), so add their own
 * stated needs on top, with local sizes padded by one block. */
static double ds_syev_extra(const ds_dmat *Z) {
  double nb = Z->nb, np = Z->mloc + nb, nq = Z->nloc + nb, n = Z->n;
  double ormtr = fmax(nb * (nb - 1) / 2, (np + nq) * nb) + nb * nb;
  double lasrt = fmax(n, np * (nb + nq));
  return fmax(ormtr, lasrt) + 2 * n;
}

/* D is destroyed; Z receives the distributed eigenvectors. */
static int ds_syev_run(ds_team *t, ds_dmat *D, ds_dmat *Z, double *w) {
  static const int one = 1, query = -1;
  int n = D->n, info = 0, lwork = 0, liwork = 0, iq = 0;
  double wq = 0;
  pdsyevd_("V", "L", &n, D->a, &one, &one, D->desc, w, Z->a, &one, &one, Z->desc, &wq,
           &query, &iq, &query, &info, 1, 1);
  int rc = ds_syev_info(info);
  if (rc != DS_OK) return ds_context(rc, "workspace query");
  rc = ds_team_lwork(wq + ds_syev_extra(Z), &lwork);
  liwork = iq > 7 * n + 8 * t->npcol + 2 ? iq : 7 * n + 8 * t->npcol + 2;
  double *work = rc == DS_OK ? ds_calloc((size_t)lwork, sizeof(double)) : NULL;
  int *iwork = rc == DS_OK ? ds_calloc((size_t)liwork, sizeof(int)) : NULL;
  if (rc == DS_OK && (!work || !iwork)) rc = DS_ENOMEM;
  rc = ds_team_agree(t, rc, n, n);
  if (rc == DS_OK) {
    pdsyevd_("V", "L", &n, D->a, &one, &one, D->desc, w, Z->a, &one, &one, Z->desc, work,
             &lwork, iwork, &liwork, &info, 1, 1);
    int info_max = info, info_min = info;
    MPI_Allreduce(&info, &info_max, 1, MPI_INT, MPI_MAX, t->comm);
    MPI_Allreduce(&info, &info_min, 1, MPI_INT, MPI_MIN, t->comm);
    rc = ds_syev_info(info_min < 0 ? info_min : info_max);
  }
  free(work);
  free(iwork);
  return rc;
}

static int ds_syev_impl(ds_team *t, int n, const double *A, int lda, double *w, double *Z,
                        int ldz, int want_z) {
  int rc = n > 0 && !w ? ds_fail(DS_EINTERNAL, "ds_syev: NULL output") : DS_OK;
  if (rc == DS_OK && want_z && t->rank == 0 && n > 0 && (!Z || ldz < n))
    rc = ds_fail(DS_EINTERNAL, "ds_syev: eigenvector output Z NULL or ldz %d < n %d", ldz, n);
  DS_TRY(ds_team_agree(t, rc, n, n));
  if (n == 0) return DS_OK;
  ds_dmat D, Zd = {.a = NULL};
  rc = ds_team_scatter(t, n, n, A, lda, &D);
  if (rc != DS_OK) return ds_context(rc, "ds_syev %d x %d", n, n);
  rc = ds_dmat_alloc(t, n, n, &Zd);
  rc = ds_team_agree(t, rc, n, n);
  if (rc == DS_OK) rc = ds_syev_run(t, &D, &Zd, w);
  ds_dmat_free(&D);
  if (rc == DS_OK && want_z) rc = ds_team_gather(t, &Zd, Z, ldz);
  ds_dmat_free(&Zd);
  if (rc != DS_OK) return ds_context(rc, "ds_syev %d x %d", n, n);
  if (MPI_Bcast(w, n, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "ds_syev: MPI_Bcast failed");
  return DS_OK;
}

int ds_syev_values(ds_team *t, int n, const double *A, int lda, double *w) {
  return ds_syev_impl(t, n, A, lda, w, NULL, 0, 0);
}

int ds_syev(ds_team *t, int n, const double *A, int lda, double *w, double *Z, int ldz) {
  return ds_syev_impl(t, n, A, lda, w, Z, ldz, 1);
}
