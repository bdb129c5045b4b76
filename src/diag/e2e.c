/* e2e.c -- linear nets: the end-to-end matrix W_{1:N} and its singular
 * values, balancedness, deficiency margin and the residual on each principal
 * component of the data (seeds 000 / 001); the data maps Phi, V, lambda. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

/* E (d_N x d_0) = (alpha_N W_N) ... (alpha_1 W_1): the map the linear net
 * computes (biases ignored). */
static int end_to_end(const ds_mlp *m, const double *theta, double *E) {
  int L = m->depth, d0 = m->dims[0], dmax = 1;
  for (int l = 0; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  double *buf = ds_calloc(2 * (size_t)dmax * d0, sizeof *buf);
  if (!buf) return DS_ENOMEM;
  const double *P = NULL; /* current product, d_{l-1} x d_0 */
  for (int l = 1; l <= L; l++) {
    double *dst = buf + (size_t)(l % 2) * dmax * d0; /* ping-pong */
    const double *W = theta + m->w_off[l - 1];
    double al = ds_diag_alpha(m, l);
    if (l == 1) {
      size_t cnt = (size_t)m->dims[1] * d0;
      for (size_t q = 0; q < cnt; q++) dst[q] = al * W[q];
    } else {
      ds_diag_gemm(0, 0, m->dims[l], d0, m->dims[l - 1], al, W, P, 0.0, dst);
    }
    P = dst;
  }
  memcpy(E, P, (size_t)m->dims[L] * d0 * sizeof *E);
  free(buf);
  return DS_OK;
}

int ds_diag_e2e(ds_team *t, const ds_mlp *m, const double *theta, const double *Phi,
                const double *V, double *sv, double *bal, double *margin, double *pc) {
  int L = m->depth, d0 = m->dims[0], dN = m->dims[L], r = d0 < dN ? d0 : dN, dmax = 1, rc;
  for (int l = 0; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  size_t ne = (size_t)dN * d0;
  double *E = ds_calloc(ne, sizeof *E), *R = ds_calloc(ne, sizeof *R);
  double *B = ds_calloc((size_t)dmax * dmax, sizeof *B), *s = ds_calloc((size_t)r, sizeof *s);
  rc = (E && R && B && s) ? end_to_end(m, theta, E) : DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  if (sv) {
    rc = ds_svd_values(t, dN, d0, E, dN, sv);
    if (rc != DS_OK) goto done;
  }
  if (bal)
    for (int j = 1; j < L; j++) { /* B = W_{j+1}^T W_{j+1} - W_j W_j^T (d_j x d_j), lower */
      int dj = m->dims[j];
      const double *W1 = theta + m->w_off[j - 1], *W2 = theta + m->w_off[j];
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, dj, m->dims[j + 1], 1.0, W2,
                  m->dims[j + 1], 0.0, B, dj);
      cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, dj, m->dims[j - 1], -1.0, W1, dj, 1.0,
                  B, dj);
      bal[j - 1] = ds_diag_sym_fro(B, dj);
    }
  double res = NAN;
  if (Phi) {
    double sum = 0.0;
    for (size_t q = 0; q < ne; q++) {
      R[q] = E[q] - Phi[q];
      sum += R[q] * R[q];
    }
    res = sqrt(sum);
  }
  if (margin) {
    *margin = NAN;
    if (Phi) {
      rc = ds_svd_values(t, dN, d0, Phi, dN, s);
      if (rc != DS_OK) goto done;
      *margin = s[r - 1] - res;
    }
  }
  if (pc && V) {
    if (!Phi) {
      for (int j = 0; j < d0; j++) pc[j] = NAN;
    } else {
      ds_diag_gemm(0, 0, dN, d0, d0, 1.0, R, V, 0.0, E); /* E := R V */
      for (int j = 0; j < d0; j++) pc[j] = cblas_dnrm2(dN, E + (size_t)j * dN, 1);
    }
  }
done:
  free(E);
  free(R);
  free(B);
  free(s);
  return rc;
}

/* Workspace of the sizes a LAPACK query returned (q doubles, iq ints). */
static int alloc_workspace(double q, int iq, double **work, int *lwork, int **iwork, int *liwork) {
  *lwork = (int)fmax(q, 1.0);
  *liwork = iq > 1 ? iq : 1;
  *work = ds_calloc((size_t)*lwork, sizeof **work);
  *iwork = ds_calloc((size_t)*liwork, sizeof **iwork);
  return *work && *iwork ? DS_OK : DS_ENOMEM;
}

int ds_diag_data_maps(const double *X, const double *Y, int d_in, int d_out, int n, double *Phi,
                      double *V, double *lambda) {
  if (d_in < 1 || d_out < 1 || n < 1)
    return ds_fail(DS_EINPUT, "diag data maps: bad sizes d_in %d d_out %d n %d", d_in, d_out, n);
  int rc = DS_OK, info = 0;
  if (Phi) { /* min ||X^T B - Y^T||, B = Phi^T (d_in x d_out), minimum norm (dgelsd) */
    int ldb = n > d_in ? n : d_in, mn = n < d_in ? n : d_in, rank = 0, lwork = -1, liwork = 0;
    double *A = ds_calloc((size_t)n * d_in, sizeof *A);
    double *Bm = ds_calloc((size_t)ldb * d_out, sizeof *Bm);
    double *sv = ds_calloc((size_t)mn, sizeof *sv), q = 0.0, rcond = 1e-12;
    double *work = NULL;
    int iq = 0, *iwork = NULL;
    if (!A || !Bm || !sv) {
      rc = DS_ENOMEM;
      goto phi_done;
    }
    for (int i = 0; i < n; i++)
      for (int j = 0; j < d_in; j++) A[(size_t)j * n + i] = X[(size_t)i * d_in + j];
    for (int o = 0; o < d_out; o++)
      for (int i = 0; i < n; i++) Bm[(size_t)o * ldb + i] = Y[(size_t)i * d_out + o];
    dgelsd_(&n, &d_in, &d_out, A, &n, Bm, &ldb, sv, &rcond, &rank, &q, &lwork, &iq, &info);
    if ((rc = alloc_workspace(q, iq, &work, &lwork, &iwork, &liwork)) != DS_OK) goto phi_done;
    dgelsd_(&n, &d_in, &d_out, A, &n, Bm, &ldb, sv, &rcond, &rank, work, &lwork, iwork, &info);
    if (info != 0) {
      rc = ds_fail(DS_ENUM, "diag data maps: dgelsd failed (info = %d)", info);
      goto phi_done;
    }
    for (int o = 0; o < d_out; o++)
      for (int j = 0; j < d_in; j++) Phi[(size_t)j * d_out + o] = Bm[(size_t)o * ldb + j];
  phi_done:
    free(A);
    free(Bm);
    free(sv);
    free(work);
    free(iwork);
    if (rc != DS_OK) return rc;
  }
  if (V || lambda) { /* X X^T / n = V diag(lambda) V^T, descending */
    double *C = ds_calloc((size_t)d_in * d_in, sizeof *C), *ev = ds_calloc((size_t)d_in, sizeof *ev);
    double q = 0.0, *work = NULL;
    int lwork = -1, liwork = -1, iq = 0, *iwork = NULL;
    if (!C || !ev) {
      rc = DS_ENOMEM;
      goto v_done;
    }
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, d_in, n, 1.0 / n, X, d_in, 0.0, C, d_in);
    dsyevd_("V", "L", &d_in, C, &d_in, ev, &q, &lwork, &iq, &liwork, &info, 1, 1);
    if ((rc = alloc_workspace(q, iq, &work, &lwork, &iwork, &liwork)) != DS_OK) goto v_done;
    dsyevd_("V", "L", &d_in, C, &d_in, ev, work, &lwork, iwork, &liwork, &info, 1, 1);
    if (info != 0) {
      rc = ds_fail(DS_ENUM, "diag data maps: dsyevd failed (info = %d)", info);
      goto v_done;
    }
    for (int j = 0; j < d_in; j++) {
      int src = d_in - 1 - j;
      if (lambda) lambda[j] = ev[src];
      if (V) {
        memcpy(V + (size_t)j * d_in, C + (size_t)src * d_in, (size_t)d_in * sizeof *V);
        ds_diag_fix_sign(V + (size_t)j * d_in, d_in);
      }
    }
  v_done:
    free(C);
    free(ev);
    free(work);
    free(iwork);
  }
  return rc;
}
