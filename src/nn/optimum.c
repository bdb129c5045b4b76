/* optimum.c -- L*, the optimal loss of a single linear map W (d_out x d_in)
 * on (X, Y), so a sweep can record L - L* (seed 002).
 *
 *   mse: least squares X^T W^T = Y^T by LAPACK dgelsd (SVD based: the
 *        minimum-norm solution also when X is rank deficient); L* is the loss
 *        of that W, evaluated like every other loss (ds_loss_eval).
 *   lp:  the loss is separable over the rows w_k of W and convex in each:
 *        phi(w) = sum_i |x_i^T w - y_ki|^p. Newton's method from the
 *        least-squares row, Hessian p(p-1) X diag(|r|^{p-2}) X^T by Cholesky
 *        (a tiny ridge only if it is singular), Armijo backtracking; stops when
 *        ||grad|| <= 1e-12 * p sum_i |r_i|^{p-1} ||x_i|| (the size of the
 *        gradient's terms: its round-off level), when no step decreases phi
 *        any more, or after 200 iterations (only reached when the data can be
 *        interpolated and r -> 0 linearly).
 *   ce:  no finite optimum in general (separable data drive L to 0 at
 *        infinity): DS_EINPUT. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/nn.h"
#include "nn_internal.h"

/* W (d_out x d_in) from least squares; B scratch */
static int least_squares(const double *X, const double *Y, int d_in, int d_out, int n,
                         double *W) {
  int ldb = n > d_in ? n : d_in, mn = n < d_in ? n : d_in, rank = 0, info = 0, lwork = -1;
  double rcond = -1.0, q = 0.0;
  int iq = 0;
  double *A = ds_calloc((size_t)n * d_in, sizeof *A), *B = ds_calloc((size_t)ldb * d_out, sizeof *B);
  double *s = ds_calloc((size_t)mn, sizeof *s), *work = NULL;
  int *iwork = NULL, rc = DS_OK;
  if (!A || !B || !s) {
    rc = DS_ENOMEM;
    goto done;
  }
  for (int i = 0; i < n; i++) /* A = X^T (n x d_in), B = Y^T (n x d_out, ldb rows) */
    for (int j = 0; j < d_in; j++) A[(size_t)j * n + i] = X[(size_t)i * d_in + j];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d_out; k++) B[(size_t)k * ldb + i] = Y[(size_t)i * d_out + k];
  dgelsd_(&n, &d_in, &d_out, A, &n, B, &ldb, s, &rcond, &rank, &q, &lwork, &iq, &info);
  lwork = (int)fmax(q, 1.0);
  work = ds_calloc((size_t)lwork, sizeof *work);
  iwork = ds_calloc((size_t)(iq > 1 ? iq : 1), sizeof *iwork);
  if (!work || !iwork) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgelsd_(&n, &d_in, &d_out, A, &n, B, &ldb, s, &rcond, &rank, work, &lwork, iwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "optimum: dgelsd failed (info = %d)", info);
    goto done;
  }
  for (int k = 0; k < d_out; k++)
    for (int j = 0; j < d_in; j++) W[(size_t)j * d_out + k] = B[(size_t)k * ldb + j];
done:
  free(A);
  free(B);
  free(s);
  free(work);
  free(iwork);
  return rc;
}

/* r = X^T w - y (y with stride incy); returns sum |r|^p */
static double lp_resid(const double *X, const double *w, const double *y, int incy, int d_in,
                       int n, double p, double *r) {
  cblas_dgemv(CblasColMajor, CblasTrans, d_in, n, 1.0, X, d_in, w, 1, 0.0, r, 1);
  double phi = 0.0;
  for (int i = 0; i < n; i++) {
    r[i] -= y[(size_t)i * incy];
    phi += pow(fabs(r[i]), p);
  }
  return phi;
}

/* Newton on phi for one row w (d_in), in place */
static int lp_row(const double *X, const double *y, int incy, int d_in, int n, double p,
                  const double *xnorm, double *w) {
  size_t dd = (size_t)d_in * d_in;
  double *r = ds_calloc((size_t)n, sizeof *r), *r2 = ds_calloc((size_t)n, sizeof *r2);
  double *g = ds_calloc((size_t)d_in, sizeof *g), *st = ds_calloc((size_t)d_in, sizeof *st);
  double *wt = ds_calloc((size_t)d_in, sizeof *wt), *H = ds_calloc(dd, sizeof *H);
  double *Xs = ds_calloc((size_t)d_in * n, sizeof *Xs), *u = ds_calloc((size_t)n, sizeof *u);
  int rc = DS_OK;
  if (!r || !r2 || !g || !st || !wt || !H || !Xs || !u) {
    rc = DS_ENOMEM;
    goto done;
  }
  double phi = lp_resid(X, w, y, incy, d_in, n, p, r);
  for (int it = 0; it < 200 && phi > 0.0; it++) {
    /* g = X u, u_i = p |r_i|^{p-2} r_i; gscale = p sum |r_i|^{p-1} ||x_i|| */
    double gscale = 0.0;
    for (int i = 0; i < n; i++) {
      double a = fabs(r[i]), ap2 = pow(a, p - 2.0);
      u[i] = p * ap2 * r[i];
      gscale += p * ap2 * a * xnorm[i];
      double sq = sqrt(p * (p - 1.0) * ap2); /* Xs = X diag(sqrt(p(p-1)|r|^{p-2})) */
      for (int j = 0; j < d_in; j++) Xs[(size_t)i * d_in + j] = sq * X[(size_t)i * d_in + j];
    }
    cblas_dgemv(CblasColMajor, CblasNoTrans, d_in, n, 1.0, X, d_in, u, 1, 0.0, g, 1);
    double gn = cblas_dnrm2(d_in, g, 1);
    if (gn <= 1e-12 * gscale) break;
    /* H = Xs Xs^T (upper), Cholesky with a ridge only if needed */
    double ridge = 0.0;
    int info = 1;
    for (int tries = 0; tries < 8 && info != 0; tries++) {
      cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, d_in, n, 1.0, Xs, d_in, 0.0, H, d_in);
      double hmax = 0.0;
      for (int j = 0; j < d_in; j++) hmax = fmax(hmax, H[(size_t)j * d_in + j]);
      if (tries > 0) ridge = ridge == 0.0 ? 1e-12 * hmax + 1e-300 : 100.0 * ridge;
      for (int j = 0; j < d_in; j++) H[(size_t)j * d_in + j] += ridge;
      dpotrf_("U", &d_in, H, &d_in, &info);
    }
    if (info != 0) break; /* no usable Hessian: keep the best w so far */
    for (int j = 0; j < d_in; j++) st[j] = -g[j];
    int one = 1;
    dpotrs_("U", &d_in, &one, H, &d_in, st, &d_in, &info);
    if (info != 0) break;
    double slope = cblas_ddot(d_in, g, 1, st, 1); /* < 0 */
    if (!(slope < 0.0)) break;
    double t = 1.0, phinew = INFINITY;
    for (int ls = 0; ls < 60; ls++, t *= 0.5) {
      for (int j = 0; j < d_in; j++) wt[j] = w[j] + t * st[j];
      phinew = lp_resid(X, wt, y, incy, d_in, n, p, r2);
      if (phinew <= phi + 1e-4 * t * slope) break;
    }
    if (!(phinew < phi)) break; /* round-off floor reached */
    memcpy(w, wt, (size_t)d_in * sizeof *w);
    memcpy(r, r2, (size_t)n * sizeof *r);
    phi = phinew;
  }
done:
  free(r);
  free(r2);
  free(g);
  free(st);
  free(wt);
  free(H);
  free(Xs);
  free(u);
  return rc;
}

int ds_linear_optimum_w(const ds_loss *l, const double *X, const double *Y, int d_in,
                        int d_out, int n, double *Wout, double *Lstar) {
  if (l->type == DS_LOSS_CE)
    return ds_fail(DS_EINPUT, "optimum: L* is not defined for cross-entropy (no finite "
                              "minimiser in general); use loss.optimum only with mse or lp");
  if (l->type != DS_LOSS_MSE && l->type != DS_LOSS_LP)
    return ds_fail(DS_EINPUT, "optimum: unknown loss type %d", l->type);
  if (d_in < 1 || d_out < 1 || n < 1)
    return ds_fail(DS_EINPUT, "optimum: bad sizes d_in %d d_out %d n %d", d_in, d_out, n);
  double *W = ds_calloc((size_t)d_out * d_in, sizeof *W);
  double *F = ds_calloc((size_t)d_out * n, sizeof *F), *xnorm = NULL;
  int rc = DS_OK;
  if (!W || !F) {
    rc = DS_ENOMEM;
    goto done;
  }
  rc = least_squares(X, Y, d_in, d_out, n, W);
  if (rc != DS_OK) goto done;
  if (l->type == DS_LOSS_LP && l->p != 2.0) {
    xnorm = ds_calloc((size_t)n, sizeof *xnorm);
    double *row = ds_calloc((size_t)d_in, sizeof *row);
    if (!xnorm || !row) {
      free(row);
      rc = DS_ENOMEM;
      goto done;
    }
    for (int i = 0; i < n; i++) xnorm[i] = cblas_dnrm2(d_in, X + (size_t)i * d_in, 1);
    for (int k = 0; k < d_out && rc == DS_OK; k++) {
      cblas_dcopy(d_in, W + k, d_out, row, 1);
      rc = lp_row(X, Y + k, d_out, d_in, n, l->p, xnorm, row);
      cblas_dcopy(d_in, row, 1, W + k, d_out);
    }
    free(row);
    if (rc != DS_OK) goto done;
  }
  /* F = W X; L* = the loss of W */
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d_out, n, d_in, 1.0, W, d_out, X, d_in,
              0.0, F, d_out);
  *Lstar = ds_loss_eval(l, F, Y, d_out, n, NULL);
  if (Wout) memcpy(Wout, W, (size_t)d_out * d_in * sizeof *W);
done:
  free(W);
  free(F);
  free(xnorm);
  return rc;
}

int ds_linear_optimum(const ds_loss *l, const double *X, const double *Y, int d_in, int d_out,
                      int n, double *Lstar) {
  return ds_linear_optimum_w(l, X, Y, d_in, d_out, n, NULL, Lstar);
}
