/* dist.c -- data movement between the team root and the team grid.
 *
 * A root-held column-major matrix is described as a matrix on the 1x1 grid
 * t->root_ctxt (descriptor with lld = lda); on every other member that
 * descriptor carries context -1, meaning "not in this grid". pdgemr2d, run
 * over the team grid context (which contains every member of both grids),
 * then redistributes between the two layouts in one collective call. */
#include <stdlib.h>

#include "dynsweep/util.h"
#include "spectra_priv.h"

int ds_dmat_alloc(ds_team *t, int m, int n, ds_dmat *D) {
  static const int zero = 0;
  D->a = NULL;
  D->m = m;
  D->n = n;
  D->nb = ds_team_block(t, m, n);
  D->mloc = numroc_(&m, &D->nb, &t->myrow, &zero, &t->nprow);
  D->nloc = numroc_(&n, &D->nb, &t->mycol, &zero, &t->npcol);
  int lld = D->mloc > 1 ? D->mloc : 1, info = 0;
  descinit_(D->desc, &m, &n, &D->nb, &D->nb, &zero, &zero, &t->ctxt, &lld, &info);
  if (info != 0)
    return ds_fail(DS_EINTERNAL, "ds_dmat_alloc: descinit info %d (%d x %d, nb %d)", info,
                   m, n, D->nb);
  D->a = ds_calloc((size_t)lld * (size_t)(D->nloc > 0 ? D->nloc : 1), sizeof(double));
  if (!D->a) return ds_context(DS_ENOMEM, "ds_dmat_alloc %d x %d", m, n);
  return DS_OK;
}

void ds_dmat_free(ds_dmat *D) {
  free(D->a);
  D->a = NULL;
}

/* Descriptor of the root-held m x n array (leading dimension lda) on the
 * team's 1x1 root grid; context -1 on the other members. */
static int ds_team_root_desc(ds_team *t, int m, int n, int nb, int lda, int desc[9]) {
  static const int zero = 0;
  if (t->root_ctxt < 0) {
    int off[9] = {1, -1, m, n, nb, nb, 0, 0, 1};
    for (int i = 0; i < 9; i++) desc[i] = off[i];
    return DS_OK;
  }
  int info = 0;
  descinit_(desc, &m, &n, &nb, &nb, &zero, &zero, &t->root_ctxt, &lda, &info);
  if (info != 0)
    return ds_fail(DS_EINTERNAL, "spectra: root descriptor info %d (%d x %d, lda %d)", info,
                   m, n, lda);
  return DS_OK;
}

/* Checks the root's array arguments; DS_OK elsewhere. */
static int ds_team_check_root(ds_team *t, const char *who, int m, int n, const void *A,
                              int lda) {
  if (m < 0 || n < 0) return ds_fail(DS_EINTERNAL, "%s: bad size %d x %d", who, m, n);
  if (t->rank != 0 || m == 0 || n == 0) return DS_OK;
  if (!A) return ds_fail(DS_EINTERNAL, "%s: NULL matrix on the team root", who);
  if (lda < m) return ds_fail(DS_EINTERNAL, "%s: lda %d < m %d", who, lda, m);
  return DS_OK;
}

int ds_team_scatter(ds_team *t, int m, int n, const double *A, int lda, ds_dmat *D) {
  static const int one = 1;
  D->a = NULL;
  int rc = ds_team_check_root(t, "ds_team_scatter", m, n, A, lda);
  if (rc == DS_OK) rc = ds_dmat_alloc(t, m, n, D);
  int desc_root[9];
  if (rc == DS_OK) rc = ds_team_root_desc(t, m, n, D->nb, lda > 1 ? lda : 1, desc_root);
  rc = ds_team_agree(t, rc, m, n);
  if (rc != DS_OK) {
    ds_dmat_free(D);
    return rc;
  }
  if (m == 0 || n == 0) return DS_OK;
  double dummy = 0;
  pdgemr2d_(&m, &n, t->root_ctxt >= 0 ? A : &dummy, &one, &one, desc_root, D->a, &one, &one,
            D->desc, &t->ctxt);
  return DS_OK;
}

int ds_team_gather(ds_team *t, const ds_dmat *D, double *A, int lda) {
  static const int one = 1;
  int m = D->m, n = D->n;
  int rc = ds_team_check_root(t, "ds_team_gather", m, n, A, lda);
  int desc_root[9];
  if (rc == DS_OK) rc = ds_team_root_desc(t, m, n, D->nb, lda > 1 ? lda : 1, desc_root);
  rc = ds_team_agree(t, rc, m, n);
  if (rc != DS_OK || m == 0 || n == 0) return rc;
  double dummy = 0;
  pdgemr2d_(&m, &n, D->a, &one, &one, D->desc, t->root_ctxt >= 0 ? A : &dummy, &one, &one,
            desc_root, &t->ctxt);
  return DS_OK;
}
