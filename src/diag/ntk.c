/* ntk.c -- the empirical NTK K = J J^T on the training set (kn x kn, row
 * index o + k*i), its top eigenpairs (pdsyevd on the team), and the derived
 * quantities: critical learning rate, loss split, kernel change.
 *
 * Kernel change, two norms: ||K_t - K_0||_F / ||K_0||_F and the spectral
 * ||K_t - K_0||_2 / ||K_0||_2 (seed 003 Fig. 2.2's). K_t - K_0 is symmetric,
 * indefinite, so its spectral norm is max(|lambda_min|, |lambda_max|) of its
 * eigenvalues (pdsyevd on the team, values only); K_0 is PSD, so ||K_0||_2 =
 * lambda_max(K_0).
 *
 * K is formed layer by layer without ever building J (kn x P). For layer l,
 * the rows of J for W_l are alpha_l delta_l^{(o,i)} a_{l-1}^{(i)T} (outer
 * products), with delta_l^{(o,i)} = dF_{o,i}/dZ_l[:, i], so
 *   K[(o,i),(o',i')] = sum_{trained l} (D_l^T D_l)[(o,i),(o',i')]
 *                      * (alpha_l^2 <a_{l-1}^i, a_{l-1}^{i'}> + [bias])
 * D_l (d_l x kn) comes from one top-down sweep of the unit cotangents
 * (ds_diag_cot_step). Cost: sum_l d_l (kn)^2 + d_{l-1} n^2 flops (dsyrk)
 * instead of P (kn)^2 for J J^T. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

/* K (kn x kn, lower triangle) from the forward pass in w. Scratch: Da, Db
 * (dmax x kn), Gd (kn x kn), Ga (n x n). */
static void ntk_matrix(const ds_mlp *m, const double *theta, const ds_mlp_work *w, double *K,
                       double *Da, double *Db, double *Gd, double *Ga) {
  int L = m->depth, n = w->n, k = m->dims[L], kn = k * n;
  memset(K, 0, (size_t)kn * kn * sizeof *K);
  double *D = Da, *Dn = Db;
  ds_diag_cot_top(k, n, D);
  for (int l = L; l >= 1; l--) {
    int dl = m->dims[l], dp = m->dims[l - 1];
    if (ds_diag_trained(m, l)) {
      double al = ds_diag_alpha(m, l);
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, kn, dl, 1.0, D, dl, 0.0, Gd, kn);
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, dp, al * al, w->A[l - 1], dp, 0.0,
                  Ga, n);
      double bias = m->bias ? 1.0 : 0.0;
      for (int c = 0; c < kn; c++) {
        int ic = c / k;
        for (int r = c; r < kn; r++) {
          int ir = r / k; /* ir >= ic */
          K[(size_t)c * kn + r] += Gd[(size_t)c * kn + r] * (Ga[(size_t)ic * n + ir] + bias);
        }
      }
    }
    if (l == 1) break;
    ds_diag_cot_step(m, theta, w, l, D, Dn);
    double *tmp = D;
    D = Dn;
    Dn = tmp;
  }
  for (int c = 0; c < kn; c++) /* mirror to full */
    for (int r = c + 1; r < kn; r++) K[(size_t)r * kn + c] = K[(size_t)c * kn + r];
}

int ds_diag_ntk_eig(ds_team *t, int kn_, double *K, int topk, double *evals, double *evecs) {
  size_t kn = (size_t)kn_;
  int rc = DS_OK;
  double *ev = ds_calloc(kn, sizeof *ev), *Z = NULL;
  if (evecs && t->rank == 0) Z = ds_calloc(kn * kn, sizeof *Z);
  if (!ev || (evecs && t->rank == 0 && !Z)) rc = DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  rc = ds_diag_root_finite(t, K, kn * kn, "the NTK matrix");
  if (rc != DS_OK) goto done;
  if (evecs)
    rc = ds_syev(t, (int)kn, K, (int)kn, ev, Z, (int)kn);
  else if (topk > 0)
    rc = ds_syev_values(t, (int)kn, K, (int)kn, ev);
  if (rc != DS_OK) {
    ds_context(rc, "diag ntk");
    goto done;
  }
  for (int i = 0; i < topk && evals; i++) evals[i] = (size_t)i < kn ? ev[kn - 1 - i] : NAN;
  if (evecs) {
    if (t->rank == 0)
      for (int i = 0; i < topk; i++) {
        double *dst = evecs + (size_t)i * kn;
        if ((size_t)i < kn) {
          memcpy(dst, Z + (kn - 1 - i) * kn, kn * sizeof *dst);
          ds_diag_fix_sign(dst, (int)kn);
        } else {
          for (size_t r = 0; r < kn; r++) dst[r] = NAN;
        }
      }
    if (topk > 0 && MPI_Bcast(evecs, (int)(kn * topk), MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
      rc = ds_fail(DS_EMPI, "diag ntk: MPI_Bcast failed");
  }
done:
  free(ev);
  free(Z);
  return rc;
}

int ds_diag_ntk(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                ds_mlp_work *w, int topk, double *evals, double *evecs, double *K) {
  int L = m->depth, n = w->n, k = m->dims[L], rc = DS_OK, dmax = 1;
  for (int l = 0; l <= L; l++) dmax = m->dims[l] > dmax ? m->dims[l] : dmax;
  size_t kn = (size_t)k * n;
  if (topk < 0) rc = ds_fail(DS_EINPUT, "diag ntk: topk = %d must be >= 0", topk);
  if (kn * kn > (size_t)INT_MAX)
    rc = ds_fail(DS_EINPUT, "diag ntk: k*n = %zu is too large for the NTK matrix", kn);
  double *Kb = NULL, *Da = NULL, *Db = NULL, *Gd = NULL, *Ga = NULL;
  if (rc == DS_OK) {
    Kb = K ? K : ds_calloc(kn * kn, sizeof *Kb);
    Da = ds_calloc((size_t)dmax * kn, sizeof *Da);
    Db = ds_calloc((size_t)dmax * kn, sizeof *Db);
    Gd = ds_calloc(kn * kn, sizeof *Gd);
    Ga = ds_calloc((size_t)n * n, sizeof *Ga);
    if (!Kb || !Da || !Db || !Gd || !Ga) rc = DS_ENOMEM;
  }
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  ds_mlp_forward(m, theta, X, w);
  ntk_matrix(m, theta, w, Kb, Da, Db, Gd, Ga);
  free(Gd);
  Gd = NULL;
  rc = ds_diag_ntk_eig(t, (int)kn, Kb, topk, evals, evecs);
done:
  if (Kb != K) free(Kb);
  free(Da);
  free(Db);
  free(Gd);
  free(Ga);
  return rc;
}

/* L = c sum r^2 for mse (and lp with p = 2); NaN for other losses. */
static int is_mse(const ds_loss *l) {
  return l->type == DS_LOSS_MSE || (l->type == DS_LOSS_LP && l->p == 2.0);
}

double ds_diag_critical_lr(const ds_loss *l, double lambda_max) {
  if (!is_mse(l) || !(lambda_max > 0.0)) return NAN;
  return 1.0 / (l->c * lambda_max);
}

void ds_diag_loss_split(const ds_loss *l, const double *r, int kn, const double *evecs, int topk,
                        const int *split, int nsplit, double *le, double *gt) {
  /* L<=s = c sum_{i<=s} <u_i, r>^2; L>s = c ||r - sum_{i<=s} <u_i, r> u_i||^2 (= L - L<=s,
   * computed as the residual so a small L>s keeps its relative accuracy) */
  double *res = ds_calloc((size_t)kn > 0 ? (size_t)kn : 1, sizeof *res);
  for (int j = 0; j < nsplit; j++) {
    int s = split[j];
    if (!res || !is_mse(l) || s < 0 || s > topk || s > kn || !evecs) {
      le[j] = gt[j] = NAN;
      continue;
    }
    memcpy(res, r, (size_t)kn * sizeof *res);
    double sum = 0.0;
    for (int i = 0; i < s; i++) {
      const double *u = evecs + (size_t)i * kn;
      double p = cblas_ddot(kn, u, 1, r, 1);
      sum += p * p;
      cblas_daxpy(kn, -p, u, 1, res, 1);
    }
    double rest = 0.0;
    for (int q = 0; q < kn; q++) rest += res[q] * res[q];
    le[j] = l->c * sum;
    gt[j] = l->c * rest;
  }
  free(res);
}

double ds_diag_kernel_change(const double *K, const double *K0, int kn) {
  double num = 0.0, den = 0.0;
  for (size_t q = 0; q < (size_t)kn * kn; q++) {
    double d = K[q] - K0[q];
    num += d * d;
    den += K0[q] * K0[q];
  }
  return den > 0.0 ? sqrt(num / den) : NAN;
}

int ds_diag_kernel_change_2(ds_team *t, const double *K, const double *K0, int kn_,
                            double *lam0, double *out) {
  size_t kn = (size_t)kn_;
  int rc = DS_OK;
  double *D = ds_calloc(kn * kn, sizeof *D), *ev = ds_calloc(kn, sizeof *ev);
  if (!D || !ev) rc = DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  if (!(*lam0 > 0.0)) { /* ||K_0||_2 once (and again after a resume) */
    rc = ds_syev_values(t, kn_, K0, kn_, ev);
    if (rc != DS_OK) goto fail;
    *lam0 = ev[kn - 1];
  }
  for (size_t q = 0; q < kn * kn; q++) D[q] = K[q] - K0[q];
  rc = ds_syev_values(t, kn_, D, kn_, ev);
  if (rc != DS_OK) goto fail;
  double a = fabs(ev[0]) > fabs(ev[kn - 1]) ? fabs(ev[0]) : fabs(ev[kn - 1]);
  *out = *lam0 > 0.0 ? a / *lam0 : NAN;
  goto done;
fail:
  ds_context(rc, "diag kernel change (spectral norm)");
done:
  free(D);
  free(ev);
  return rc;
}
