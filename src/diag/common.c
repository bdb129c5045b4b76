/* common.c -- helpers of the diagnostics room (see diag_internal.h). */
#include <cblas.h>
#include <math.h>
#include <mpi.h>
#include <string.h>

#include "diag_internal.h"

double ds_diag_alpha(const ds_mlp *m, int l) { return ds_mlp_alpha(m, l); }

int ds_diag_trained(const ds_mlp *m, int l) { return l < m->depth || m->train_output; }

int ds_diag_agree(ds_team *t, int rc) {
  int all = rc;
  if (MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "diag: MPI_Allreduce failed");
  if (all != DS_OK && rc == DS_OK)
    return ds_fail(all, "diag: another team member failed");
  return all;
}

void ds_diag_gemm(int ta, int tb, int r, int c, int k, double alpha, const double *A,
                  const double *B, double beta, double *C) {
  if (r == 0 || c == 0) return;
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, r,
              c, k, alpha, A, ta ? k : r, B, tb ? c : k, beta, C, r);
}

void ds_diag_cot_top(int k, int n, double *D) {
  size_t kn = (size_t)k * n;
  memset(D, 0, (size_t)k * kn * sizeof *D);
  for (size_t r = 0; r < kn; r++) D[r * k + r % k] = 1.0;
}

void ds_diag_cot_step(const ds_mlp *m, const double *theta, const ds_mlp_work *w, int l,
                      const double *Din, double *Dout) {
  int k = m->dims[m->depth], n = w->n, dout = m->dims[l], din = m->dims[l - 1];
  int kn = k * n;
  /* Dout (d_{l-1} x kn) = alpha_l W_l^T Din */
  ds_diag_gemm(1, 0, din, kn, dout, ds_diag_alpha(m, l), theta + m->w_off[l - 1], Din, 0.0,
               Dout);
  if (l == 1 || m->act == DS_ACT_LINEAR) return;
  if (m->act == DS_ACT_TANH) { /* times tanh'(g z) = g (1 - a^2), a = A_{l-1} */
    const double *A = w->A[l - 1];
    for (int i = 0; i < n; i++) {
      const double *a = A + (size_t)i * din;
      for (int o = 0; o < k; o++) {
        double *d = Dout + ((size_t)i * k + o) * din;
        for (int j = 0; j < din; j++) d[j] *= m->gain * (1.0 - a[j] * a[j]);
      }
    }
    return;
  }
  const double *Z = w->Z[l - 1]; /* d_{l-1} x n */
  for (int i = 0; i < n; i++) {
    const double *z = Z + (size_t)i * din;
    for (int o = 0; o < k; o++) {
      double *d = Dout + ((size_t)i * k + o) * din;
      for (int j = 0; j < din; j++)
        if (!(z[j] > 0.0)) d[j] = 0.0;
    }
  }
}

void ds_diag_fix_sign(double *v, int n) {
  const double phi = 0.61803398874989484820;
  double s = 0.0;
  for (int j = 0; j < n; j++) {
    double c = (j + 1) * phi;
    s += (c - floor(c) - 0.5) * v[j];
  }
  if (s < 0.0)
    for (int j = 0; j < n; j++) v[j] = -v[j];
}

double ds_diag_sym_fro(const double *S, int n) {
  double diag = 0.0, off = 0.0;
  for (int j = 0; j < n; j++) {
    diag += S[(size_t)j * n + j] * S[(size_t)j * n + j];
    for (int i = j + 1; i < n; i++) off += S[(size_t)j * n + i] * S[(size_t)j * n + i];
  }
  return sqrt(diag + 2.0 * off);
}

int ds_diag_root_finite(ds_team *t, const double *A, size_t count, const char *what) {
  int rc = DS_OK;
  if (t->rank == 0)
    for (size_t q = 0; q < count; q++)
      if (!isfinite(A[q])) {
        rc = ds_fail(DS_ENUM, "diag: %s has a non-finite entry (%g at %zu)", what, A[q], q);
        break;
      }
  return ds_diag_agree(t, rc);
}
