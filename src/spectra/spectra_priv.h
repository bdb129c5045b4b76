/* spectra_priv.h -- BLACS / ScaLAPACK prototypes (no C header ships with
 * Debian's libscalapack-openmpi) and helpers shared inside the spectra room.
 * Fortran entry points take every argument by reference; CHARACTER arguments
 * carry a hidden trailing length (size_t with gfortran >= 8). */
#ifndef DS_SPECTRA_PRIV_H
#define DS_SPECTRA_PRIV_H
#include <stddef.h>
#include <mpi.h>

#include "dynsweep/spectra.h"

/* ---- BLACS (C interface) ---- */
int Csys2blacs_handle(MPI_Comm comm);
void Cfree_blacs_system_handle(int handle);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridmap(int *ctxt, int *usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);

/* ---- ScaLAPACK tools ---- */
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld,
               int *info);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc,
            const int *nprocs);
void pdgemr2d_(const int *m, const int *n, const double *a, const int *ia, const int *ja,
               const int *desca, double *b, const int *ib, const int *jb,
               const int *descb, const int *ictxt);

/* ---- ScaLAPACK drivers ---- */
void pdgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
              const int *ia, const int *ja, const int *desca, double *s, double *u,
              const int *iu, const int *ju, const int *descu, double *vt,
              const int *ivt, const int *jvt, const int *descvt, double *work,
              const int *lwork, int *info, size_t jobu_len, size_t jobvt_len);
void pdsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, double *w, double *z, const int *iz,
              const int *jz, const int *descz, double *work, const int *lwork,
              int *iwork, const int *liwork, int *info, size_t jobz_len,
              size_t uplo_len);

/* Descriptor field indices (0-based) */
enum { DS_DESC_CTXT = 1, DS_DESC_M = 2, DS_DESC_N = 3, DS_DESC_LLD = 8 };

/* Agree on an outcome across the team: every member passes its local rc and
 * gets back DS_OK only if all members were OK. Members that were fine
 * themselves record a message naming the failure elsewhere. The sizes m, n
 * are checked to be the same on every member too (DS_EINTERNAL if not). */
int ds_team_agree(ds_team *t, int rc, int m, int n);

/* ScaLAPACK workspace sizes come back as doubles; turn one into an int
 * allocation size, failing (DS_ENOMEM) if it does not fit. */
int ds_team_lwork(double query, int *lwork);
#endif
