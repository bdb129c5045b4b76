/* nn_internal.h -- helpers shared by the files of src/nn/ (private): the
 * per-layer scale of the parameterisation, the products workspace hung off
 * ds_mlp_work, and the LAPACK routines nn calls (Fortran symbols). */
#ifndef DS_NN_INTERNAL_H
#define DS_NN_INTERNAL_H
#include <math.h>

#include "dynsweep/nn.h"

/* Layer l's weight scale: Z_l = alpha_l W_l A_{l-1} + b_l, alpha_l = 1
 * (standard), 1/sqrt(d_{l-1}) (NTK), mean field: NTK but 1/d_{L-1} for l = L. */
static inline double ds_nn_alpha(const ds_mlp *m, int l) {
  if (m->param == DS_PARAM_MEANFIELD && l == m->depth) return 1.0 / (double)m->dims[l - 1];
  double a = m->param == DS_PARAM_NTK || m->param == DS_PARAM_MEANFIELD
                 ? 1.0 / sqrt((double)m->dims[l - 1])
                 : 1.0;
  /* ReLU nets' gain (model.gain): g relu(z) = relu(g z) for g > 0, so a hidden
   * layer's product carries it (bias-free nets only: the config refuses a gain
   * with biases, whose relu(g (W a + b)) this would not be). */
  if (m->act == DS_ACT_RELU && l < m->depth && m->gain != 1.0 && m->gain > 0.0) a *= m->gain;
  return a;
}
/* Hidden activations need their own buffer (A_l != Z_l). */
static inline int ds_nn_has_act(const ds_mlp *m) { return m->act != DS_ACT_LINEAR; }
/* Is layer l trained (only the output layer can be fixed)? */
static inline int ds_nn_trained(const ds_mlp *m, int l) {
  return l < m->depth || m->train_output;
}

/* Buffers of the Pearlmutter products (rop.c), allocated on first use by
 * ds_mlp_work_products and freed with the workspace. n = w->n columns each. */
typedef struct {
  double **RZ;     /* RZ[l] = R{Z_l}, l = 1..L (d_l x n) */
  double **RA;     /* RA[l] = R{A_l}, l = 1..L-1 (ReLU: own buffer, linear: = RZ[l]) */
  double *S[2];    /* second-order forward ping-pong (dmax x n) */
  double *SL;      /* second-order output R^2{F} (d_L x n) */
  double *D[2];    /* backprop cotangents ping-pong (dmax x n) */
  double *RD[2];   /* their R-derivatives (dmax x n) */
  double *RG;      /* R of the output cotangent (d_L x n) */
} ds_nn_prod;

void ds_nn_prod_free(void *prod); /* mlp.c; NULL is fine */

/* ---- LAPACK ---- */
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *work, const int *lwork, int *info);
void dgesvd_(const char *jobu, const char *jobvt, const int *m, const int *n, double *a,
             const int *lda, double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *info);
void dgelsd_(const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
             const int *ldb, double *s, const double *rcond, int *rank, double *work,
             const int *lwork, int *iwork, int *info);
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
void dpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *lda,
             double *b, const int *ldb, int *info);
#endif
