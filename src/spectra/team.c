/* team.c -- a worker team: a duplicated communicator, its BLACS process grid
 * (as square as possible, nprow <= npcol) and a 1x1 grid holding only the
 * team root, which is where matrices enter and leave (see dist.c). */
#include <limits.h>
#include <math.h>

#include "dynsweep/util.h"
#include "spectra_priv.h"

enum { DS_TEAM_NB = 64 }; /* default (maximum) block size */

/* Most square factorisation size = nprow * npcol with nprow <= npcol. */
static void ds_team_grid_shape(int size, int *nprow, int *npcol) {
  int r = (int)sqrt((double)size);
  while (r > 1 && size % r) r--;
  if (r < 1) r = 1;
  *nprow = r;
  *npcol = size / r;
}

static void ds_team_reset(ds_team *t) {
  t->comm = MPI_COMM_NULL;
  t->rank = 0;
  t->size = 0;
  t->ctxt = -1;
  t->root_ctxt = -1;
  t->nprow = t->npcol = 0;
  t->myrow = t->mycol = -1;
  t->nb = DS_TEAM_NB;
}

int ds_team_init(ds_team *t, MPI_Comm comm) {
  ds_team_reset(t);
  if (comm == MPI_COMM_NULL) return ds_fail(DS_EINTERNAL, "ds_team_init: MPI_COMM_NULL");
  if (MPI_Comm_dup(comm, &t->comm) != MPI_SUCCESS) {
    t->comm = MPI_COMM_NULL;
    return ds_fail(DS_EMPI, "ds_team_init: MPI_Comm_dup failed");
  }
  MPI_Comm_rank(t->comm, &t->rank);
  MPI_Comm_size(t->comm, &t->size);

  int nprow, npcol;
  ds_team_grid_shape(t->size, &nprow, &npcol);
  /* Both grids are built from the same BLACS system handle for t->comm; it
   * is looked up again (same value) and released in ds_team_free. Cblacs_*
   * overwrite their context argument, so each grid gets its own copy. */
  int handle = Csys2blacs_handle(t->comm);
  t->ctxt = handle;
  Cblacs_gridinit(&t->ctxt, "Row", nprow, npcol);
  int root_map[1] = {0};
  t->root_ctxt = handle;
  Cblacs_gridmap(&t->root_ctxt, root_map, 1, 1, 1); /* collective; -1 off root */

  Cblacs_gridinfo(t->ctxt, &t->nprow, &t->npcol, &t->myrow, &t->mycol);
  int ok = t->ctxt >= 0 && t->nprow == nprow && t->npcol == npcol && t->myrow >= 0 &&
           (t->rank == 0) == (t->root_ctxt >= 0);
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, t->comm);
  if (!all_ok) {
    int size = t->size;
    ds_team_free(t);
    return ds_fail(DS_EMPI, "ds_team_init: BLACS grid %d x %d over %d ranks not formed",
                   nprow, npcol, size);
  }
  return DS_OK;
}

void ds_team_free(ds_team *t) {
  if (t->ctxt >= 0) Cblacs_gridexit(t->ctxt);
  if (t->root_ctxt >= 0) Cblacs_gridexit(t->root_ctxt);
  if (t->comm != MPI_COMM_NULL) {
    Cfree_blacs_system_handle(Csys2blacs_handle(t->comm));
    MPI_Comm_free(&t->comm);
  }
  ds_team_reset(t);
}

int ds_team_block(const ds_team *t, int m, int n) {
  int pr = t->nprow > 0 ? t->nprow : 1, pc = t->npcol > 0 ? t->npcol : 1;
  int br = (m + pr - 1) / pr, bc = (n + pc - 1) / pc;
  int b = br < bc ? br : bc;
  int cap = t->nb > 0 ? t->nb : DS_TEAM_NB;
  if (b > cap) b = cap;
  return b < 1 ? 1 : b;
}

int ds_team_agree(ds_team *t, int rc, int m, int n) {
  int mine[5] = {rc, m, -m, n, -n}, all[5];
  if (MPI_Allreduce(mine, all, 5, MPI_INT, MPI_MAX, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "spectra: MPI_Allreduce failed on the team");
  if (rc != DS_OK) return rc; /* keep our own message */
  if (all[0] != DS_OK)
    return ds_fail(all[0], "spectra: another team member failed (code %d)", all[0]);
  if (all[1] != -all[2] || all[3] != -all[4])
    return ds_fail(DS_EINTERNAL,
                   "spectra: team members disagree on the matrix size (%d..%d x %d..%d)",
                   -all[2], all[1], -all[4], all[3]);
  return DS_OK;
}

int ds_team_lwork(double query, int *lwork) {
  double w = ceil(query);
  if (!(w >= 1.0)) w = 1.0;
  if (w > (double)(INT_MAX - 1))
    return ds_fail(DS_ENOMEM, "spectra: ScaLAPACK workspace of %.0f doubles is too large", w);
  *lwork = (int)w;
  return DS_OK;
}
