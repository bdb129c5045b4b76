/* spectra.h -- ScaLAPACK on a worker team's BLACS process grid.
 *
 * A team is a group of ranks with its own communicator (size 1 in the
 * foundation issue; larger teams later). Its BLACS grid is as square as
 * possible. Matrices enter and leave on the team's root (team rank 0) in
 * plain column-major storage; the wrappers distribute them block-cyclically
 * over the team grid (pdgemr2d), call ScaLAPACK, and return results to every
 * team member. */
#ifndef DYNSWEEP_SPECTRA_H
#define DYNSWEEP_SPECTRA_H
#include <mpi.h>

typedef struct {
  MPI_Comm comm;  /* team communicator (owned: freed by ds_team_free) */
  int rank, size;
  int ctxt;       /* BLACS context of the team grid */
  int nprow, npcol, myrow, mycol;
  int root_ctxt;  /* 1x1 grid holding only the team root */
  int nb;         /* block size for block-cyclic distribution */
} ds_team;

/* Builds a team over comm (duplicated). Collective over comm. */
int ds_team_init(ds_team *t, MPI_Comm comm);
void ds_team_free(ds_team *t);

/* Singular values (descending) of the m x n matrix A held by the team root
 * (column-major, leading dimension lda; ignored elsewhere). s receives
 * min(m,n) values on every team member. Uses pdgesvd (JOBU=JOBVT='N').
 * Collective over the team. */
int ds_svd_values(ds_team *t, int m, int n, const double *A, int lda, double *s);
#endif
