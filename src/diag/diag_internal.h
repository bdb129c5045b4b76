/* diag_internal.h -- helpers shared by the files of src/diag/ (private):
 * LAPACK prototypes (Fortran symbols), small dense helpers, the team
 * agreement used before collective steps, and the top-down unit-cotangent
 * backprop shared by the NTK and the AGOP. */
#ifndef DS_DIAG_INTERNAL_H
#define DS_DIAG_INTERNAL_H
#include <stddef.h>

#include "dynsweep/diag.h"

/* ---- LAPACK ---- */
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
             double *w, double *work, const int *lwork, int *iwork, const int *liwork, int *info,
             size_t jobz_len, size_t uplo_len);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
             const int *ldb, double *s, const double *rcond, int *rank, double *work,
             const int *lwork, int *iwork, int *info);
void dstev_(const char *jobz, const int *n, double *d, double *e, double *z, const int *ldz,
            double *work, int *info, size_t jobz_len);

/* Layer l's weight scale (as nn): 1 standard, 1/sqrt(d_{l-1}) NTK. */
double ds_diag_alpha(const ds_mlp *m, int l);
/* Is layer l trained (only the output layer can be fixed)? */
int ds_diag_trained(const ds_mlp *m, int l);

/* Every team member passes its local rc; returns DS_OK only if all were OK
 * (members that were fine record "another team member failed"). */
int ds_diag_agree(ds_team *t, int rc);

/* C (r x c) = alpha op(A) op(B) + beta C, column-major, leading dims = rows. */
void ds_diag_gemm(int ta, int tb, int r, int c, int k, double alpha, const double *A,
                  const double *B, double beta, double *C);

/* Unit-cotangent backprop (after ds_mlp_forward on w): the kn columns of
 * D_l (d_l x kn), column r = o + k*i, hold dF_{o,i}/dZ_l[:, i] (d_l values;
 * the derivative of output o of sample i with respect to sample i's
 * pre-activation of layer l). D_L = [I_k I_k ... I_k].
 * ds_diag_cot_top fills D_L; ds_diag_cot_step maps D_l to D_{l-1}
 * (l >= 1; for l = 1 the result is dF_{o,i}/dx_i, no mask):
 *   D_{l-1} = mask_{l-1} .* (alpha_l W_l^T D_l),  mask = [Z_{l-1} > 0] (ReLU, l > 1). */
void ds_diag_cot_top(int k, int n, double *D);
void ds_diag_cot_step(const ds_mlp *m, const double *theta, const ds_mlp_work *w, int l,
                      const double *Din, double *Dout);

/* Fix the sign of a vector (length n) so that sum_j c_j v_j >= 0 with the
 * fixed weights c_j = frac((j+1) * 0.6180339887...) - 1/2: a sign convention
 * that does not hinge on ties between entries. */
void ds_diag_fix_sign(double *v, int n);

/* On the team root: DS_ENUM if any of the count entries of A is not finite
 * (ds_syev* does not check, and pdsyevd misbehaves on NaN); agreed over the
 * team, so every member gets the same code. what names the matrix. */
int ds_diag_root_finite(ds_team *t, const double *A, size_t count, const char *what);

/* The AGOP's alignment <G, Gref> / (||G|| ||Gref||) (agop.c; NaN without
 * Gref or for a zero G). */
double ds_diag_agop_align(const double *G, const double *Gref, int d);
/* The eigen part of the NTK (ntk.c; shared with the CNN's, cnn.c): checks K
 * (kn x kn, full, on every member) is finite, then top-topk eigenvalues
 * descending into evals and, with evecs, their sign-fixed eigenvectors
 * (kn x topk, on every member). K is not changed. */
int ds_diag_ntk_eig(ds_team *t, int kn, double *K, int topk, double *evals, double *evecs);

/* Frobenius norm of the symmetric n x n matrix from its lower triangle. */
double ds_diag_sym_fro(const double *S, int n);
#endif
