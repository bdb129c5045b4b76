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
/* ---- additions: distributed matrices, data movement, symmetric eigen ----
 * Block size: a team's nb (64 after ds_team_init) is an upper bound; for an
 * m x n matrix the block actually used is ds_team_block(t, m, n) =
 * clamp(min(ceil(m/nprow), ceil(n/npcol)), 1, nb), so that small matrices are
 * still spread over every grid member. */
int ds_team_block(const ds_team *t, int m, int n);

/* An m x n matrix distributed block-cyclically (square blocks nb) over the
 * team grid, starting at process (0,0). */
typedef struct {
  int m, n, nb;
  int mloc, nloc; /* local rows / columns on this rank */
  int desc[9];    /* ScaLAPACK array descriptor (team grid context) */
  double *a;      /* local part, column-major, leading dimension desc[8] */
} ds_dmat;

/* Allocates (zeroed) the local part of an m x n distributed matrix with the
 * team's block size for that shape. Local: no communication. */
int ds_dmat_alloc(ds_team *t, int m, int n, ds_dmat *D);
void ds_dmat_free(ds_dmat *D);

/* Root-held column-major A (lda; ignored elsewhere) -> new distributed D
 * (allocated here; free with ds_dmat_free). Collective over the team. */
int ds_team_scatter(ds_team *t, int m, int n, const double *A, int lda, ds_dmat *D);
/* Distributed D -> root-held column-major A (lda >= D->m; ignored
 * elsewhere). Collective over the team. */
int ds_team_gather(ds_team *t, const ds_dmat *D, double *A, int lda);

/* Eigenvalues (ascending) of the symmetric n x n matrix A held by the team
 * root (lower triangle referenced); w receives n values on every team member.
 * Uses pdsyevd. Collective over the team. */
int ds_syev_values(ds_team *t, int n, const double *A, int lda, double *w);
/* As ds_syev_values, and also the orthonormal eigenvectors (columns of the
 * n x n Z, leading dimension ldz) on the team root only. */
int ds_syev(ds_team *t, int n, const double *A, int lda, double *w, double *Z, int ldz);
#endif
