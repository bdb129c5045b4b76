/* test_diag.c -- the diagnostics room (issue 4) against independent
 * computations: LAPACK on explicitly formed matrices, finite differences,
 * closed forms from the seed papers, and real GD dynamics. Run on 1, 2 and 4
 * ranks (tests/diag.cmake): team-collective diagnostics are computed on a
 * team of one (every rank alone) and on the whole world (and pairs on 4
 * ranks) and must agree to 1e-10. DYNSWEEP_DIAG_BENCH=1 prints the cost of
 * each diagnostic relative to one training step (never a failure). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/data.h"
#include "dynsweep/diag.h"

void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
            double *w, double *work, const int *lwork, int *info, size_t, size_t);
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work,
             const int *lwork, int *iwork, int *info, size_t);

static int wrank, wsize;
static ds_team solo, world, pairs;
static int have_pairs;

/* ---- helpers ----------------------------------------------------------------- */

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static void gauss(double *a, size_t n, double sd, uint64_t id) {
  ds_rng r;
  ds_rng_init(&r, 4040, id, 0, DS_STREAM_TEST);
  for (size_t i = 0; i < n; i++) a[i] = sd * ds_rng_normal(&r);
}

/* eigenvalues ascending of the symmetric n x n A (copied), LAPACK dsyev */
static void lapack_eigs(int n, const double *A, double *w) {
  double *C = dalloc((size_t)n * n), q;
  memcpy(C, A, sizeof(double) * n * n);
  int lw = -1, info;
  dsyev_("N", "L", &n, C, &n, w, &q, &lw, &info, 1, 1);
  lw = (int)q + 1;
  double *work = dalloc((size_t)lw);
  dsyev_("N", "L", &n, C, &n, w, work, &lw, &info, 1, 1);
  free(work);
  free(C);
}

/* singular values descending of m x n A (copied), LAPACK dgesdd */
static void lapack_svals(int m, int n, const double *A, double *s) {
  double *C = dalloc((size_t)m * n), q;
  memcpy(C, A, sizeof(double) * m * n);
  int lw = -1, info, mn = m < n ? m : n;
  int *iw = calloc(8 * (size_t)mn + 8, sizeof(int));
  dgesdd_("N", &m, &n, C, &m, s, NULL, &m, NULL, &n, &q, &lw, iw, &info, 1);
  lw = (int)q + 1;
  double *work = dalloc((size_t)lw);
  dgesdd_("N", &m, &n, C, &m, s, NULL, &m, NULL, &n, work, &lw, iw, &info, 1);
  free(work);
  free(iw);
  free(C);
}

static double maxabs(const double *a, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
  return m;
}
/* max |a - b| / max |b| */
static double reldiff(const double *a, const double *b, size_t n) {
  double d = 0;
  for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
  double s = maxabs(b, n);
  return s > 0 ? d / s : d;
}

typedef struct {
  const char *name;
  int act, bias, depth, dims[6], param, train_output;
  int loss;            /* DS_LOSS_MSE / CE */
  ds_reduction red;
  int n;
} net_case;

typedef struct {
  ds_mlp m;
  ds_mlp_work w;
  ds_loss l;
  double *theta, *X, *Y;
  int n, k, d0;
} net;

static void net_make(net *N, const net_case *c, double scale, uint64_t id) {
  memset(N, 0, sizeof *N);
  int rc = ds_mlp_setup(&N->m, c->act, c->bias, c->depth, c->dims, c->param, c->train_output);
  CHECK(rc == DS_OK, "%s: setup: %s", c->name, ds_errmsg());
  /* issue 13: the study's tanh(sqrt 2 z), and sqrt 2 relu(z) for bias-free ReLU nets */
  if (c->act == DS_ACT_TANH || (c->act == DS_ACT_RELU && !c->bias)) N->m.gain = sqrt(2.0);
  N->n = c->n;
  N->k = c->dims[c->depth];
  N->d0 = c->dims[0];
  ds_mlp_work_init(&N->m, c->n, &N->w);
  N->theta = dalloc(N->m.nparams);
  gauss(N->theta, N->m.nparams, 1.0, id);
  if (c->param == DS_PARAM_STANDARD) /* 1/sqrt(fan_in) entries */
    for (int l = 1; l <= c->depth; l++) {
      double s = scale / sqrt((double)c->dims[l - 1]);
      for (size_t q = 0; q < (size_t)c->dims[l] * c->dims[l - 1]; q++)
        N->theta[N->m.w_off[l - 1] + q] *= s;
    }
  if (c->bias)
    for (int l = 1; l <= c->depth; l++)
      for (int q = 0; q < c->dims[l]; q++) N->theta[N->m.b_off[l - 1] + q] *= 0.3;
  N->X = dalloc((size_t)N->d0 * c->n);
  N->Y = dalloc((size_t)N->k * c->n);
  gauss(N->X, (size_t)N->d0 * c->n, 1.0, id + 1000);
  if (c->loss == DS_LOSS_CE) {
    ds_rng r;
    ds_rng_init(&r, 4040, id + 2000, 0, DS_STREAM_TEST);
    for (int i = 0; i < c->n; i++) N->Y[(size_t)i * N->k + ds_rng_u32(&r) % N->k] = 1.0;
  } else {
    gauss(N->Y, (size_t)N->k * c->n, 1.0, id + 2000);
  }
  ds_loss_spec ls = {.type = c->loss, .reduction = c->red, .p = 2.0};
  CHECK(ds_loss_setup(&N->l, &ls, c->n) == DS_OK, "%s: loss: %s", c->name, ds_errmsg());
}

static void net_free(net *N) {
  ds_mlp_work_free(&N->w);
  ds_mlp_free(&N->m);
  free(N->theta);
  free(N->X);
  free(N->Y);
}

static const net_case cases[] = {
    {"linear nobias mse", DS_ACT_LINEAR, 0, 2, {4, 5, 2}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
     DS_RED_HALF_SUM, 7},
    {"relu bias mse", DS_ACT_RELU, 1, 3, {3, 6, 5, 2}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
     DS_RED_HALF_MEAN, 9},
    {"relu nobias ce", DS_ACT_RELU, 0, 2, {4, 7, 3}, DS_PARAM_STANDARD, 1, DS_LOSS_CE, DS_RED_MEAN,
     8},
    {"linear bias ntk ce", DS_ACT_LINEAR, 1, 3, {3, 4, 4, 3}, DS_PARAM_NTK, 1, DS_LOSS_CE,
     DS_RED_SUM, 6},
    {"relu ntk fixed-output mse", DS_ACT_RELU, 1, 2, {3, 8, 2}, DS_PARAM_NTK, 0, DS_LOSS_MSE,
     DS_RED_MEAN, 6},
    {"tanh meanfield mse", DS_ACT_TANH, 0, 2, {4, 6, 1}, DS_PARAM_MEANFIELD, 1, DS_LOSS_MSE,
     DS_RED_MEAN, 8},
    {"tanh bias ce", DS_ACT_TANH, 1, 3, {3, 5, 4, 3}, DS_PARAM_STANDARD, 1, DS_LOSS_CE, DS_RED_SUM,
     6},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* ---- per-layer statistics ----------------------------------------------------- */

static void test_layers(void) {
  net_case c = {"layers", DS_ACT_RELU, 1, 3, {7, 12, 5, 3}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
                DS_RED_SUM, 4};
  net N;
  net_make(&N, &c, 1.0, 11);
  int k = 6, L = 3, E = k + DS_DIAG_LAYER_EXTRA;
  /* make W_3 exactly rank one: tail ratio 0, s1/s2 inf */
  double *W3 = N.theta + N.m.w_off[2];
  for (int j = 0; j < 5; j++)
    for (int i = 0; i < 3; i++) W3[j * 3 + i] = (i + 1.0) * (j - 2.5);
  double *out = dalloc((size_t)L * E);
  CHECK(ds_diag_layers(&solo, &N.m, N.theta, k, out) == DS_OK, "layers: %s", ds_errmsg());
  for (int l = 1; l <= L; l++) {
    int dout = c.dims[l], din = c.dims[l - 1], ns = dout < din ? dout : din;
    const double *W = N.theta + N.m.w_off[l - 1];
    double s[16], fro2 = 0, tail = 0;
    lapack_svals(dout, din, W, s);
    for (int q = 0; q < dout * din; q++) fro2 += W[q] * W[q];
    for (int i = 1; i < ns; i++) tail += s[i] * s[i];
    const double *o = out + (size_t)(l - 1) * E;
    for (int i = 0; i < k; i++) {
      if (i < ns) CHECK(fabs(o[i] - s[i]) <= 1e-12 * s[0], "layer %d sv %d: %.17g vs %.17g", l, i, o[i], s[i]);
      else CHECK(isnan(o[i]), "layer %d sv %d not NaN-padded", l, i);
    }
    CHECK(ds_close_rel(o[k], sqrt(fro2), 1e-14), "layer %d fro", l);
    CHECK(ds_close_rel(o[k + 1], s[0], 1e-12), "layer %d spectral", l);
    CHECK(ds_close_rel(o[k + 3], fro2 / (s[0] * s[0]), 1e-12), "layer %d stable rank", l);
    if (l < 3) {
      CHECK(ds_close_rel(o[k + 2], s[0] / s[1], 1e-12), "layer %d s1/s2", l);
      CHECK(ds_close_rel(o[k + 4], tail / (tail + s[0] * s[0]), 1e-11), "layer %d tail %.17g vs %.17g",
            l, o[k + 4], tail / (tail + s[0] * s[0]));
    } else {
      CHECK(o[k + 4] < 1e-28 && o[k + 2] > 1e14, "rank-one layer: tail %g, s1/s2 %g", o[k + 4], o[k + 2]);
      CHECK(fabs(o[k + 3] - 1.0) < 1e-14, "rank-one layer: stable rank %.17g", o[k + 3]);
    }
  }
  free(out);
  net_free(&N);
}

/* ---- linear nets: end-to-end ----------------------------------------------------- */

static void test_e2e(void) {
  /* balanced init (seed 001 Procedure 1): every b_j = 0 */
  {
    int dims[5] = {5, 7, 6, 8, 3};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 4, dims, DS_PARAM_STANDARD, 1);
    ds_model_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.type = DS_MODEL_LINEAR;
    sp.depth = 4;
    sp.init = DS_INIT_BALANCED;
    sp.init_scale = 2.0;
    sp.train_output = 1;
    ds_rng r;
    ds_rng_init(&r, 1, 2, 3, DS_STREAM_INIT);
    double *th = dalloc(m.nparams), sv[3], bal[3], mg;
    CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "balanced init: %s", ds_errmsg());
    CHECK(ds_diag_e2e(&solo, &m, th, NULL, NULL, sv, bal, &mg, NULL) == DS_OK, "e2e: %s",
          ds_errmsg());
    double w2 = 0;
    for (size_t q = 0; q < m.nparams; q++) w2 += th[q] * th[q];
    for (int j = 0; j < 3; j++) CHECK(bal[j] < 1e-13 * w2, "balanced b_%d = %g", j + 1, bal[j]);
    CHECK(isnan(mg), "margin without Phi is NaN");
    /* unbalance it: b_j > 0 and equal to the explicit formula */
    th[m.w_off[1]] += 0.5;
    ds_diag_e2e(&solo, &m, th, NULL, NULL, sv, bal, NULL, NULL);
    for (int j = 1; j <= 3; j++) {
      int dj = dims[j];
      double f = 0;
      const double *Wa = th + m.w_off[j - 1], *Wb = th + m.w_off[j];
      for (int a = 0; a < dj; a++)
        for (int b = 0; b < dj; b++) {
          double s = 0;
          for (int i = 0; i < dims[j + 1]; i++) s += Wb[a * dims[j + 1] + i] * Wb[b * dims[j + 1] + i];
          for (int i = 0; i < dims[j - 1]; i++) s -= Wa[i * dj + a] * Wa[i * dj + b];
          f += s * s;
        }
      CHECK(fabs(bal[j - 1] - sqrt(f)) < 1e-12 * w2, "b_%d = %.17g vs %.17g", j, bal[j - 1], sqrt(f));
    }
    /* singular values of W_{1:N} vs dgesdd of the explicit product */
    double *P = dalloc(64), *T = dalloc(64), *Q = dalloc(64), s[3];
    memcpy(P, th + m.w_off[0], sizeof(double) * 35);
    int rows = 7;
    for (int l = 2; l <= 4; l++) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dims[l], 5, rows, 1.0,
                  th + m.w_off[l - 1], dims[l], P, rows, 0.0, T, dims[l]);
      memcpy(P, T, sizeof(double) * dims[l] * 5);
      rows = dims[l];
    }
    lapack_svals(3, 5, P, s);
    for (int i = 0; i < 3; i++) CHECK(fabs(sv[i] - s[i]) < 1e-12 * s[0], "e2e sv %d", i);
    free(P);
    free(T);
    free(Q);
    free(th);
    ds_mlp_free(&m);
  }
  /* hand example: depth 2, W1 = [[2,0],[0,1]], W2 = [[1,0],[0,3]] -> W = diag(2,3);
   * Phi = [[3,1],[0,2]]: sigma_min(Phi) = sqrt((14 - sqrt(196-144))/2) = sqrt(7 - sqrt(13)),
   * ||W - Phi||_F = sqrt(1 + 1 + 1) = sqrt(3) */
  {
    int dims[3] = {2, 2, 2};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 2, dims, DS_PARAM_STANDARD, 1);
    double th[8] = {2, 0, 0, 1, 1, 0, 0, 3}, Phi[4] = {3, 0, 1, 2}, sv[2], bal, mg, pc[2];
    /* principal directions at 30 degrees */
    double c = cos(M_PI / 6), s = sin(M_PI / 6), V[4] = {c, s, -s, c};
    CHECK(ds_diag_e2e(&solo, &m, th, Phi, V, sv, &bal, &mg, pc) == DS_OK, "e2e hand: %s",
          ds_errmsg());
    CHECK(fabs(mg - (sqrt(7 - sqrt(13.0)) - sqrt(3.0))) < 1e-14, "margin %.17g", mg);
    CHECK(fabs(sv[0] - 3) < 1e-14 && fabs(sv[1] - 2) < 1e-14, "e2e sv %g %g", sv[0], sv[1]);
    /* balancedness: W2^T W2 - W1 W1^T = diag(1-4, 9-1) -> sqrt(9 + 64) */
    CHECK(fabs(bal - sqrt(73.0)) < 1e-13, "hand balancedness %.17g", bal);
    /* residual R = W - Phi = [[-1,-1],[0,1]]: R v1 = (-c - s, s), R v2 = (s - c, c) */
    CHECK(fabs(pc[0] - hypot(c + s, s)) < 1e-14 && fabs(pc[1] - hypot(s - c, c)) < 1e-14,
          "pc %g %g", pc[0], pc[1]);
    CHECK(fabs(pc[0] * pc[0] + pc[1] * pc[1] - 3.0) < 1e-14, "pc sum of squares");
    ds_mlp_free(&m);
  }
  /* data maps + projection identity on a random deep linear net (NTK param) */
  {
    int dims[4] = {6, 9, 8, 4}, n = 40;
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_LINEAR, 1, 3, dims, DS_PARAM_NTK, 1);
    double *th = dalloc(m.nparams), *X = dalloc(6 * n), *Y = dalloc(4 * n), *T = dalloc(24);
    gauss(th, m.nparams, 1.0, 31);
    gauss(X, 6 * n, 1.0, 32);
    gauss(T, 24, 1.0, 33);
    for (int q = 0; q < 6; q++) /* anisotropic data */
      for (int i = 0; i < n; i++) X[i * 6 + q] *= 1.0 + q;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 4, n, 6, 1.0, T, 4, X, 6, 0.0, Y, 4);
    double Phi[24], V[36], lam[6], pc[6], sv[4], mg;
    CHECK(ds_diag_data_maps(X, Y, 6, 4, n, Phi, V, lam) == DS_OK, "data maps: %s", ds_errmsg());
    CHECK(reldiff(Phi, T, 24) < 1e-12, "Phi recovers the noise-free teacher: %g", reldiff(Phi, T, 24));
    /* X X^T/n V = V diag(lambda), V orthonormal, lambda descending */
    double C[36], CV[36], VtV[36];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, 6, 6, n, 1.0 / n, X, 6, X, 6, 0.0, C, 6);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 6, 6, 6, 1.0, C, 6, V, 6, 0.0, CV, 6);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, 6, 6, 6, 1.0, V, 6, V, 6, 0.0, VtV, 6);
    double res = 0, orth = 0;
    for (int j = 0; j < 6; j++) {
      if (j) CHECK(lam[j] <= lam[j - 1], "lambda descending");
      for (int i = 0; i < 6; i++) {
        res = fmax(res, fabs(CV[j * 6 + i] - lam[j] * V[j * 6 + i]));
        orth = fmax(orth, fabs(VtV[j * 6 + i] - (i == j)));
      }
    }
    CHECK(res < 1e-12 * lam[0] && orth < 1e-13, "PCA residual %g orth %g", res, orth);
    /* sum_j pc_j^2 = ||W_{1:N} - Phi||_F^2, margin consistent */
    CHECK(ds_diag_e2e(&solo, &m, th, Phi, V, sv, NULL, &mg, pc) == DS_OK, "e2e: %s", ds_errmsg());
    double E[24], A[72], B2[64];
    /* explicit E = a3 W3 a2 W2 a1 W1 */
    for (int q = 0; q < 54; q++) A[q] = th[m.w_off[0] + q] / sqrt(6.0);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 8, 6, 9, 1.0 / 3.0, th + m.w_off[1], 8,
                A, 9, 0.0, B2, 8);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 4, 6, 8, 1.0 / sqrt(8.0),
                th + m.w_off[2], 4, B2, 8, 0.0, E, 4);
    double r2 = 0, p2 = 0, sP[4], sE[4];
    for (int q = 0; q < 24; q++) r2 += (E[q] - Phi[q]) * (E[q] - Phi[q]);
    for (int j = 0; j < 6; j++) p2 += pc[j] * pc[j];
    CHECK(ds_close_rel(p2, r2, 1e-12), "sum pc^2 %.17g vs ||W - Phi||^2 %.17g", p2, r2);
    lapack_svals(4, 6, Phi, sP);
    lapack_svals(4, 6, E, sE);
    CHECK(fabs(mg - (sP[3] - sqrt(r2))) < 1e-12 * sP[0], "margin %g vs %g", mg, sP[3] - sqrt(r2));
    for (int i = 0; i < 4; i++) CHECK(fabs(sv[i] - sE[i]) < 1e-12 * sE[0], "NTK e2e sv %d", i);
    free(th);
    free(X);
    free(Y);
    free(T);
    ds_mlp_free(&m);
  }
}

/* ---- Hessian -------------------------------------------------------------------------- */

static void test_hessian(void) {
  for (int ci = 0; ci < NCASES; ci++) {
    const net_case *c = &cases[ci];
    net N;
    net_make(&N, c, 1.3, 100 + ci);
    int P = (int)N.m.nparams;
    double *H = dalloc((size_t)P * P), *Hfd = dalloc((size_t)P * P), asym = -1;
    double *full = dalloc(P), *ref = dalloc(P), *fdev = dalloc(P);
    CHECK(ds_diag_hessian_matrix(&world, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, H, &asym) == DS_OK,
          "%s: hessian matrix: %s", c->name, ds_errmsg());
    CHECK(asym < 1e-10, "%s: HVP-formed H asymmetry %g", c->name, asym);
    CHECK(ds_diag_hessian_full(&world, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, full) == DS_OK,
          "%s: hessian full: %s", c->name, ds_errmsg());
    if (wrank == 0) {
      for (int j = 0; j < P; j++)
        for (int i = 0; i < P; i++) Hfd[j * P + i] = 0.5 * (H[j * P + i] + H[i * P + j]);
      lapack_eigs(P, Hfd, ref);
      CHECK(reldiff(full, ref, P) < 1e-10, "%s: ScaLAPACK vs LAPACK on H: %g", c->name,
            reldiff(full, ref, P));
    }
    /* finite differences of gradients */
    double *th = dalloc(P), *gp = dalloc(P), *gm = dalloc(P), h = 1e-5;
    memcpy(th, N.theta, sizeof(double) * P);
    /* with a fixed output layer H is the Hessian in the trained parameters:
     * the rows and columns of W_L, b_L are zero */
    int Ptr = c->train_output ? P : (int)N.m.w_off[c->depth - 1];
    memset(Hfd, 0, sizeof(double) * P * P);
    for (int p = 0; p < Ptr; p++) {
      th[p] = N.theta[p] + h;
      ds_mlp_loss_grad_l(&N.m, th, N.X, N.Y, &N.l, gp, &N.w);
      th[p] = N.theta[p] - h;
      ds_mlp_loss_grad_l(&N.m, th, N.X, N.Y, &N.l, gm, &N.w);
      th[p] = N.theta[p];
      for (int i = 0; i < P; i++) Hfd[p * P + i] = (gp[i] - gm[i]) / (2 * h);
    }
    for (int j = 0; j < P; j++)
      for (int i = j + 1; i < P; i++) Hfd[j * P + i] = Hfd[i * P + j] = 0.5 * (Hfd[j * P + i] + Hfd[i * P + j]);
    lapack_eigs(P, Hfd, fdev);
    CHECK(reldiff(full, fdev, P) < 1e-5, "%s: full spectrum vs FD Hessian: %g", c->name,
          reldiff(full, fdev, P));
    /* Lanczos top-5 (40 iterations) and with iters = P the whole spectrum */
    double top[5], top2[5], *all = dalloc(P);
    ds_rng r;
    ds_rng_init(&r, 7, ci, 0, DS_STREAM_TEST);
    int it = P < 40 ? P : 40;
    CHECK(ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 5, it, &r, top) == DS_OK,
          "%s: lanczos: %s", c->name, ds_errmsg());
    double scale = fmax(fabs(full[0]), fabs(full[P - 1]));
    for (int i = 0; i < 5; i++)
      CHECK(fabs(top[i] - full[P - 1 - i]) <= 1e-8 * scale, "%s: lanczos top %d: %.15g vs %.15g",
            c->name, i, top[i], full[P - 1 - i]);
    ds_rng_init(&r, 7, ci, 0, DS_STREAM_TEST);
    ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 5, it, &r, top2);
    CHECK(memcmp(top, top2, sizeof top) == 0, "%s: lanczos deterministic given rng", c->name);
    ds_rng_init(&r, 8, ci, 0, DS_STREAM_TEST);
    CHECK(ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, P, P, &r, all) == DS_OK,
          "%s: lanczos full: %s", c->name, ds_errmsg());
    double worst = 0;
    for (int i = 0; i < P; i++) worst = fmax(worst, fabs(all[i] - full[P - 1 - i]));
    CHECK(worst <= 1e-8 * scale, "%s: lanczos iters = P (%d) gives the whole spectrum: %g",
          c->name, P, worst / scale);
    if (wrank == 0)
      printf("hessian %-26s P %3d  lambda_max %.6g  lambda_min %.6g  asym %.1e  |FD| %.1e  "
             "lanczos(%d) %.1e\n",
             c->name, P, full[P - 1], full[0], asym, reldiff(full, fdev, P), it,
             fabs(top[0] - full[P - 1]) / scale);
    free(all);
    free(th);
    free(gp);
    free(gm);
    free(H);
    free(Hfd);
    free(full);
    free(ref);
    free(fdev);
    net_free(&N);
  }
}

/* Lanczos with iters << P: top-3 of a P = 503 net in 40 iterations */
static void test_lanczos_large(void) {
  net_case c = {"lanczos P=503", DS_ACT_RELU, 1, 3, {6, 20, 15, 3}, DS_PARAM_NTK, 1, DS_LOSS_CE,
                DS_RED_MEAN, 30};
  net N;
  net_make(&N, &c, 1.0, 990);
  int P = (int)N.m.nparams;
  double *full = dalloc(P), top[3];
  CHECK(ds_diag_hessian_full(&world, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, full) == DS_OK,
        "full: %s", ds_errmsg());
  ds_rng r;
  ds_rng_init(&r, 5, 5, 5, DS_STREAM_TEST);
  CHECK(ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 3, 40, &r, top) == DS_OK,
        "lanczos: %s", ds_errmsg());
  double scale = fmax(fabs(full[0]), full[P - 1]), worst = 0;
  for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(top[i] - full[P - 1 - i]) / scale);
  CHECK(worst < 1e-8, "%s: top-3 in 40 iterations: %g", c.name, worst);
  if (wrank == 0)
    printf("hessian %s: top-3 %.8g %.8g %.8g, 40 Lanczos iterations vs pdsyevd: %.1e\n", c.name,
           top[0], top[1], top[2], worst);
  free(full);
  net_free(&N);
}

/* ---- NTK -------------------------------------------------------------------------------- */

static void test_ntk(void) {
  const net_case nc[] = {
      {"ntk relu bias k=2", DS_ACT_RELU, 1, 3, {3, 7, 6, 2}, DS_PARAM_NTK, 1, DS_LOSS_MSE,
       DS_RED_HALF_SUM, 6},
      {"ntk linear k=1", DS_ACT_LINEAR, 0, 2, {5, 4, 1}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
       DS_RED_MEAN, 9},
      {"ntk relu fixed-output k=3", DS_ACT_RELU, 1, 2, {4, 9, 3}, DS_PARAM_STANDARD, 0,
       DS_LOSS_MSE, DS_RED_SUM, 5},
      {"ntk tanh meanfield k=1", DS_ACT_TANH, 0, 2, {5, 6, 1}, DS_PARAM_MEANFIELD, 1,
       DS_LOSS_MSE, DS_RED_MEAN, 7},
      {"ntk tanh bias k=2", DS_ACT_TANH, 1, 3, {3, 5, 4, 2}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
       DS_RED_HALF_SUM, 5},
  };
  for (int ci = 0; ci < (int)(sizeof nc / sizeof nc[0]); ci++) {
    const net_case *c = &nc[ci];
    net N;
    net_make(&N, c, 1.0, 300 + ci);
    int P = (int)N.m.nparams, k = N.k, n = N.n, kn = k * n, topk = kn < 6 ? kn : 6;
    double *K = dalloc((size_t)kn * kn), *ev = dalloc(topk), *U = dalloc((size_t)kn * topk);
    CHECK(ds_diag_ntk(&world, &N.m, N.theta, N.X, &N.w, topk, ev, U, K) == DS_OK, "%s: %s",
          c->name, ds_errmsg());
    /* J from JVP columns (exact) and from finite differences of F */
    double *Jj = dalloc((size_t)kn * P), *Jf = dalloc((size_t)kn * P), *v = dalloc(P);
    double *th = dalloc(P), *Fp = dalloc(kn), h = 1e-6;
    memcpy(th, N.theta, sizeof(double) * P);
    int Ptr = c->train_output ? P : (int)N.m.w_off[c->depth - 1]; /* J in trained parameters */
    for (int p = 0; p < Ptr; p++) {
      v[p] = 1;
      ds_mlp_jvp(&N.m, N.theta, N.X, v, &N.w, Jj + (size_t)p * kn);
      v[p] = 0;
      th[p] = N.theta[p] + h;
      memcpy(Fp, ds_mlp_forward(&N.m, th, N.X, &N.w), sizeof(double) * kn);
      th[p] = N.theta[p] - h;
      const double *Fm = ds_mlp_forward(&N.m, th, N.X, &N.w);
      th[p] = N.theta[p];
      for (int r = 0; r < kn; r++) Jf[(size_t)p * kn + r] = (Fp[r] - Fm[r]) / (2 * h);
    }
    double *Kj = dalloc((size_t)kn * kn), *Kf = dalloc((size_t)kn * kn);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, kn, kn, P, 1.0, Jj, kn, Jj, kn, 0.0, Kj, kn);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, kn, kn, P, 1.0, Jf, kn, Jf, kn, 0.0, Kf, kn);
    CHECK(reldiff(K, Kj, (size_t)kn * kn) < 1e-12, "%s: K vs JVP-built K: %g", c->name,
          reldiff(K, Kj, (size_t)kn * kn));
    double *ej = dalloc(kn), *ef = dalloc(kn);
    lapack_eigs(kn, Kj, ej);
    lapack_eigs(kn, Kf, ef);
    for (int i = 0; i < topk; i++) {
      CHECK(fabs(ev[i] - ej[kn - 1 - i]) <= 1e-12 * ej[kn - 1], "%s: eig %d vs JVP K", c->name, i);
      CHECK(fabs(ev[i] - ef[kn - 1 - i]) <= 1e-6 * ef[kn - 1], "%s: eig %d vs FD K: %.12g %.12g",
            c->name, i, ev[i], ef[kn - 1 - i]);
    }
    /* eigenvectors: K u = lambda u, orthonormal */
    double res = 0, orth = 0;
    for (int i = 0; i < topk; i++) {
      for (int r = 0; r < kn; r++) {
        double s = 0;
        for (int q = 0; q < kn; q++) s += K[(size_t)q * kn + r] * U[(size_t)i * kn + q];
        res = fmax(res, fabs(s - ev[i] * U[(size_t)i * kn + r]));
      }
      for (int j = 0; j <= i; j++)
        orth = fmax(orth, fabs(cblas_ddot(kn, U + (size_t)i * kn, 1, U + (size_t)j * kn, 1) - (i == j)));
    }
    CHECK(res < 1e-12 * ev[0] && orth < 1e-12, "%s: eigvec residual %g orth %g", c->name, res, orth);
    /* loss split: L<=s + L>s = L; with s = kn (all eigenvectors) L>s = 0 */
    const double *F = ds_mlp_forward(&N.m, N.theta, N.X, &N.w);
    double *rr = dalloc(kn);
    for (int q = 0; q < kn; q++) rr[q] = F[q] - N.Y[q];
    double Lfull = ds_loss_eval(&N.l, F, N.Y, k, n, NULL);
    int split[4] = {1, 2, topk, topk + 1};
    double le[4], gt[4];
    ds_diag_loss_split(&N.l, rr, kn, U, topk, split, 4, le, gt);
    for (int j = 0; j < 3; j++)
      CHECK(ds_close_rel(le[j] + gt[j], Lfull, 1e-12), "%s: split %d sums to L", c->name, split[j]);
    double p0 = cblas_ddot(kn, U, 1, rr, 1);
    CHECK(ds_close_rel(le[0], N.l.c * p0 * p0, 1e-13), "%s: L<=1", c->name);
    CHECK(isnan(le[3]) && isnan(gt[3]), "%s: s > topk is NaN", c->name);
    if (topk == kn) CHECK(fabs(gt[2]) < 1e-12 * Lfull, "%s: L>kn = %g", c->name, gt[2]);
    /* kernel change */
    double *K2 = dalloc((size_t)kn * kn);
    for (size_t q = 0; q < (size_t)kn * kn; q++) K2[q] = 1.5 * K[q];
    CHECK(ds_diag_kernel_change(K, K, kn) == 0.0, "kernel change of K vs itself");
    CHECK(fabs(ds_diag_kernel_change(K2, K, kn) - 0.5) < 1e-15, "kernel change 1.5K vs K");
    /* spectral norms: ||0.5 K||_2 / ||K||_2 = 0.5; K + diag(a, 0, .., -b), b > a:
     * ||K3 - K||_2 = b (the negative end), over lambda_max(K) = ev[0] */
    double lam0 = 0.0, c2 = -1.0;
    CHECK(ds_diag_kernel_change_2(&world, K2, K, kn, &lam0, &c2) == DS_OK &&
              fabs(c2 - 0.5) < 1e-14 && ds_close_rel(lam0, ev[0], 1e-13),
          "%s: spectral kernel change 1.5K vs K = %.17g, lambda_max(K0) %g vs %g", c->name, c2,
          lam0, ev[0]);
    if (kn >= 2) {
      double a = 0.125 * ev[0], b = 0.25 * ev[0];
      memcpy(K2, K, (size_t)kn * kn * sizeof *K2);
      K2[0] += a;
      K2[(size_t)kn * kn - 1] -= b;
      CHECK(ds_diag_kernel_change_2(&world, K2, K, kn, &lam0, &c2) == DS_OK &&
                fabs(c2 - 0.25) < 1e-14,
            "%s: spectral kernel change of diag(a, .., -b) = %.17g, want 0.25", c->name, c2);
      double kc = ds_diag_kernel_change(K2, K, kn);
      CHECK(ds_close_rel(kc * kc, (a * a + b * b) / cblas_ddot(kn * kn, K, 1, K, 1), 1e-12),
            "%s: Frobenius kernel change of diag(a, .., -b)", c->name);
    }
    if (wrank == 0)
      printf("ntk %-26s kn %2d P %3d  lambda_1 %.6g  |K-K_jvp| %.1e  |lambda-lambda_FD| %.1e\n",
             c->name, kn, P, ev[0], reldiff(K, Kj, (size_t)kn * kn), fabs(ev[0] - ef[kn - 1]) / ef[kn - 1]);
    free(K2);
    free(rr);
    free(ej);
    free(ef);
    free(Kj);
    free(Kf);
    free(Jj);
    free(Jf);
    free(v);
    free(th);
    free(Fp);
    free(K);
    free(ev);
    free(U);
    net_free(&N);
  }
}

/* ---- critical learning rate of a linear model, and GD on either side of it ---------- */

static void test_critical_lr(void) {
  int d = 5, n = 20;
  for (int red = 0; red < 2; red++) {
    for (int k = 1; k <= 3; k += 2) {
      int dims[2] = {d, k};
      ds_mlp m;
      ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 1, dims, DS_PARAM_STANDARD, 1);
      ds_mlp_work w;
      ds_mlp_work_init(&m, n, &w);
      double *X = dalloc((size_t)d * n), *Y = dalloc((size_t)k * n), *th = dalloc(m.nparams);
      double *g = dalloc(m.nparams), *XtX = dalloc((size_t)n * n), *e = dalloc(n);
      gauss(X, (size_t)d * n, 1.0, 500);
      gauss(Y, (size_t)k * n, 1.0, 501);
      ds_loss l;
      ds_loss_spec ls = {.type = DS_LOSS_MSE, .reduction = red ? DS_RED_MEAN : DS_RED_HALF_SUM};
      ds_loss_setup(&l, &ls, n);
      double lam;
      CHECK(ds_diag_ntk(&world, &m, th, X, &w, 1, &lam, NULL, NULL) == DS_OK, "linear ntk: %s",
            ds_errmsg());
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, n, n, d, 1.0, X, d, X, d, 0.0, XtX, n);
      lapack_eigs(n, XtX, e);
      double eta = ds_diag_critical_lr(&l, lam), expect = (red ? n : 2.0) / e[n - 1];
      CHECK(fabs(eta - expect) <= 1e-12 * expect, "critical lr %.17g vs %.17g (k %d red %d)", eta,
            expect, k, red);
      double Lstar;
      ds_linear_optimum(&l, X, Y, d, k, n, &Lstar);
      for (int side = 0; side < 2; side++) {
        double f = side ? 1.01 : 0.99, loss = 0, L0 = 0;
        memset(th, 0, sizeof(double) * m.nparams);
        for (int s = 0; s < 3000; s++) {
          loss = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
          if (s == 0) L0 = loss;
          if (!isfinite(loss) || loss > 1e30) break;
          for (size_t q = 0; q < m.nparams; q++) th[q] -= f * eta * g[q];
        }
        if (side == 0)
          CHECK(loss - Lstar < 1e-10 * L0, "GD at 0.99 eta_crit converges: L - L* = %g", loss - Lstar);
        else
          CHECK(!(loss < 1e20 * L0), "GD at 1.01 eta_crit diverges: L = %g", loss);
      }
      free(X);
      free(Y);
      free(th);
      free(g);
      free(XtX);
      free(e);
      ds_mlp_work_free(&w);
      ds_mlp_free(&m);
    }
  }
  ds_loss ce = {DS_LOSS_CE, 0.0, 1.0};
  CHECK(isnan(ds_diag_critical_lr(&ce, 2.0)), "critical lr undefined for cross-entropy");
}

/* ---- AGOP ---------------------------------------------------------------------------------- */

static double agop_align(const double *G, const double *R, int d) {
  double a = 0, b = 0, c = 0;
  for (int q = 0; q < d * d; q++) a += G[q] * R[q], b += G[q] * G[q], c += R[q] * R[q];
  return a / sqrt(b * c);
}

static void test_agop(void) {
  int d = 12, n = 7;
  double *G = dalloc(d * d), *R = dalloc(d * d), al;
  /* references: rank2, rank4 aligned with themselves; other kinds refused */
  CHECK(ds_diag_agop_reference(DS_DATA_RANK2, d, R) == DS_OK && R[0] == 1 && R[d + 1] == 1 &&
            R[2 * d + 2] == 0,
        "rank2 reference");
  CHECK(fabs(agop_align(R, R, d) - 1) < 1e-15, "reference aligned with itself");
  CHECK(ds_diag_agop_reference(DS_DATA_CIRCLE, d, R) == DS_EINPUT, "no reference for circle");
  CHECK(ds_diag_agop_reference(DS_DATA_RANK4, 3, R) == DS_EINPUT, "rank4 needs d >= 4");
  /* linear model f = w^T x: AGOP = w w^T exactly */
  {
    int dims[2] = {d, 1};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_LINEAR, 1, 1, dims, DS_PARAM_STANDARD, 1);
    ds_mlp_work w;
    ds_mlp_work_init(&m, n, &w);
    double *th = dalloc(m.nparams), *X = dalloc(d * n);
    gauss(th, m.nparams, 1.0, 600);
    gauss(X, d * n, 1.0, 601);
    for (int i = 0; i < d; i++)
      for (int j = 0; j < d; j++) R[j * d + i] = th[i] * th[j];
    CHECK(ds_diag_agop(&m, th, X, &w, R, G, &al) == DS_OK, "agop: %s", ds_errmsg());
    CHECK(reldiff(G, R, d * d) < 1e-15 && fabs(al - 1) < 1e-12, "w w^T: %g align %.17g",
          reldiff(G, R, d * d), al);
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
    free(th);
    free(X);
  }
  /* G = G* exactly: deep linear NTK-param nets whose end-to-end map E has
   * E^T E = G* (rank2: rows e1, e2; rank4: diag(2, sqrt3, sqrt2, 1)) */
  for (int task = 0; task < 2; task++) {
    int kout = task ? 4 : 2, dims[4] = {d, 6, 5, kout};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 3, dims, DS_PARAM_NTK, 1);
    ds_mlp_work w;
    ds_mlp_work_init(&m, n, &w);
    double *th = dalloc(m.nparams), *X = dalloc(d * n);
    gauss(X, d * n, 1.0, 602);
    /* W1 = sqrt(d) [D 0; 0 0] (6 x d), W2 = sqrt(6) [I 0] (5 x 6), W3 = sqrt(5) [I 0] */
    double *W1 = th + m.w_off[0], *W2 = th + m.w_off[1], *W3 = th + m.w_off[2];
    for (int i = 0; i < kout; i++) {
      double s = task ? sqrt(4.0 - i) : 1.0;
      W1[i * 6 + i] = sqrt((double)d) * s;
      W2[i * 5 + i] = sqrt(6.0);
      W3[i * kout + i] = sqrt(5.0);
    }
    ds_diag_agop_reference(task ? DS_DATA_RANK4 : DS_DATA_RANK2, d, R);
    CHECK(ds_diag_agop(&m, th, X, &w, R, G, &al) == DS_OK, "agop: %s", ds_errmsg());
    CHECK(fabs(al - 1) < 1e-12 && reldiff(G, R, d * d) < 1e-14, "G = G* (%s): align %.17g",
          task ? "rank4" : "rank2", al);
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
    free(th);
    free(X);
  }
  /* ReLU nets (bias, NTK and standard, k = 2), and tanh nets (issue 13: gain
   * sqrt 2, standard and mean field): G against finite differences in x */
  for (int param = 0; param < 4; param++) {
    int dims[4] = {5, 8, 6, 2}, dd = 5, k = 2;
    ds_mlp m;
    ds_mlp_setup(&m, param < 2 ? DS_ACT_RELU : DS_ACT_TANH, 1, 3, dims,
                 param < 2 ? param : param == 2 ? DS_PARAM_STANDARD : DS_PARAM_MEANFIELD, 1);
    m.gain = param < 2 ? 1.0 : sqrt(2.0);
    ds_mlp_work w;
    ds_mlp_work_init(&m, n, &w);
    double *th = dalloc(m.nparams), *X = dalloc(dd * n), *Gf = dalloc(dd * dd), *Fp = dalloc(k * n);
    gauss(th, m.nparams, 1.0, 610 + param);
    gauss(X, dd * n, 1.0, 612);
    double h = 1e-6;
    for (int i = 0; i < n; i++) {
      double J[2 * 5];
      for (int j = 0; j < dd; j++) {
        double x0 = X[i * dd + j];
        X[i * dd + j] = x0 + h;
        memcpy(Fp, ds_mlp_forward(&m, th, X, &w), sizeof(double) * k * n);
        X[i * dd + j] = x0 - h;
        const double *Fm = ds_mlp_forward(&m, th, X, &w);
        X[i * dd + j] = x0;
        for (int o = 0; o < k; o++) J[j * k + o] = (Fp[i * k + o] - Fm[i * k + o]) / (2 * h);
      }
      for (int a = 0; a < dd; a++)
        for (int b = 0; b < dd; b++)
          for (int o = 0; o < k; o++) Gf[b * dd + a] += J[a * k + o] * J[b * k + o] / n;
    }
    CHECK(ds_diag_agop(&m, th, X, &w, NULL, G, &al) == DS_OK && isnan(al), "agop relu/tanh");
    CHECK(reldiff(G, Gf, dd * dd) < 1e-7, "%s AGOP vs FD (case %d): %g", param < 2 ? "relu" : "tanh",
          param, reldiff(G, Gf, dd * dd));
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
    free(th);
    free(X);
    free(Gf);
    free(Fp);
  }
  /* the analytic rank3 and fullrank references against Monte Carlo E[grad f* grad f*^T] */
  {
    int dd = 12, ns = 200000;
    double *Gm = dalloc(dd * dd), *Gm2 = dalloc(dd * dd), x[12], g[12];
    ds_rng r;
    ds_rng_init(&r, 9, 9, 9, DS_STREAM_TEST);
    for (int s = 0; s < ns; s++) {
      double S = 0, nx = 0;
      for (int i = 0; i < dd; i++) x[i] = ds_rng_normal(&r), nx += x[i] * x[i];
      for (int i = 0; i < 10; i++) S += x[i];
      memset(g, 0, sizeof g);
      g[0] = x[1] * S + x[0] * x[1];
      g[1] = x[0] * S + x[0] * x[1];
      for (int i = 2; i < 10; i++) g[i] = x[0] * x[1];
      for (int a = 0; a < dd; a++)
        for (int b = 0; b < dd; b++) {
          Gm[b * dd + a] += g[a] * g[b] / ns;
          Gm2[b * dd + a] += x[a] * x[b] / (nx * dd) / ns; /* grad ||x||/sqrt(d) = x / (||x|| sqrt d) */
        }
    }
    ds_diag_agop_reference(DS_DATA_RANK3, dd, R);
    CHECK(reldiff(Gm, R, dd * dd) < 0.05, "rank3 G* vs Monte Carlo: %g", reldiff(Gm, R, dd * dd));
    ds_diag_agop_reference(DS_DATA_FULLRANK, dd, R);
    CHECK(reldiff(Gm2, R, dd * dd) < 0.03, "fullrank G* vs Monte Carlo: %g", reldiff(Gm2, R, dd * dd));
    free(Gm);
    free(Gm2);
  }
  free(G);
  free(R);
}

/* A 2-layer ReLU net trained by GD on the rank-2 task x1 x2: the AGOP aligns
 * with G* = diag(1,1,0..) (feature learning), starting near the isotropic
 * 1/sqrt(d)-ish level. */
static void test_agop_training(void) {
  int d = 8, n = 256, width = 64, dims[3] = {d, width, 1};
  ds_mlp m;
  ds_mlp_setup(&m, DS_ACT_RELU, 1, 2, dims, DS_PARAM_STANDARD, 1);
  ds_mlp_work w;
  ds_mlp_work_init(&m, n, &w);
  double *th = dalloc(m.nparams), *g = dalloc(m.nparams), *X = dalloc(d * n), *Y = dalloc(n);
  double *G = dalloc(d * d), *R = dalloc(d * d), a0, a1;
  ds_rng r;
  ds_rng_init(&r, 3, 3, 3, DS_STREAM_TEST);
  ds_mlp_init_gaussian(&m, 1.0, &r, th);
  gauss(X, d * n, 1.0, 700);
  for (int i = 0; i < n; i++) Y[i] = X[i * d] * X[i * d + 1];
  ds_loss l;
  ds_loss_spec ls = {.type = DS_LOSS_MSE, .reduction = DS_RED_HALF_MEAN};
  ds_loss_setup(&l, &ls, n);
  ds_diag_agop_reference(DS_DATA_RANK2, d, R);
  ds_diag_agop(&m, th, X, &w, R, G, &a0);
  double loss0 = 0, loss = 0;
  for (int s = 0; s < 1500; s++) {
    loss = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
    if (s == 0) loss0 = loss;
    for (size_t q = 0; q < m.nparams; q++) th[q] -= 0.1 * g[q];
  }
  ds_diag_agop(&m, th, X, &w, R, G, &a1);
  CHECK(a1 > a0 + 0.2 && loss < 0.5 * loss0, "AGOP alignment rises in training: %.3f -> %.3f (loss %.3g -> %.3g)",
        a0, a1, loss0, loss);
  if (wrank == 0)
    printf("agop rank2 training: alignment %.4f -> %.4f, loss %.4g -> %.4g\n", a0, a1, loss0, loss);
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
  free(th);
  free(g);
  free(X);
  free(Y);
  free(G);
  free(R);
}

/* ---- activations ---------------------------------------------------------------------- */

static void test_activations(void) {
  int dims[4] = {4, 9, 6, 2}, n = 11, k = 5;
  for (int variant = 0; variant < 3; variant++) {
    ds_mlp m;
    ds_mlp_setup(&m, variant == 2 ? DS_ACT_LINEAR : DS_ACT_RELU, 1, 3, dims, DS_PARAM_STANDARD, 1);
    ds_mlp_work w;
    ds_mlp_work_init(&m, n, &w);
    double *th = dalloc(m.nparams), *X = dalloc(4 * n), out[2 * 6];
    gauss(th, m.nparams, 1.0, 800);
    gauss(X, 4 * n, 1.0, 801);
    if (variant == 1) /* all-positive pre-activations: positive x, W, b */
      for (size_t q = 0; q < m.nparams; q++) th[q] = fabs(th[q]) + 0.01;
    if (variant == 1)
      for (int q = 0; q < 4 * n; q++) X[q] = fabs(X[q]);
    CHECK(ds_diag_activations(&world, &m, th, X, &w, k, out) == DS_OK, "activations: %s",
          ds_errmsg());
    for (int l = 1; l <= 2; l++) {
      const double *Z = w.Z[l], *A = w.A[l];
      double s[16], num = 0, den = 0;
      double *Ar = dalloc(dims[l] * n);
      for (int q = 0; q < dims[l] * n; q++) {
        Ar[q] = variant == 2 ? Z[q] : fmax(Z[q], 0.0);
        num += fmin(Z[q], 0.0) * fmin(Z[q], 0.0);
        den += Z[q] * Z[q];
      }
      CHECK(A != NULL, "A");
      lapack_svals(dims[l], n, Ar, s);
      const double *o = out + (l - 1) * (k + 1);
      for (int i = 0; i < k; i++) CHECK(fabs(o[i] - s[i]) < 1e-12 * s[0], "act sv %d layer %d", i, l);
      if (variant == 0) {
        CHECK(ds_close_rel(o[k], num / den, 1e-13) && o[k] > 0.05, "nonlinearity ratio %g vs %g",
              o[k], num / den);
      } else {
        CHECK(o[k] == 0.0, "nonlinearity ratio 0 (%s): %g",
              variant == 1 ? "positive pre-activations" : "linear net", o[k]);
      }
      free(Ar);
    }
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
    free(th);
    free(X);
  }
}

/* ---- escape speed (seed 004, Example 1) --------------------------------------------------- */

static void circle(double *X, double *Y) {
  for (int j = 1; j <= 8; j++) {
    X[(j - 1) * 2] = sin(2 * M_PI * j / 8);
    X[(j - 1) * 2 + 1] = cos(2 * M_PI * j / 8);
    Y[j - 1] = j % 2 ? -1.0 : 1.0;
  }
}

static void test_escape(void) {
  double X[16], Y[8];
  circle(X, Y);
  /* targets Y_j = (-1)^j with the 1/2-sum squared loss: G = dC/dF(0) = -Y (the
   * paper's footnote), speed -Tr[G^T f] = Tr[Y^T f] */
  ds_loss l;
  ds_loss_spec ls = {.type = DS_LOSS_MSE, .reduction = DS_RED_HALF_SUM};
  ds_loss_setup(&l, &ls, 8);
  /* rank-two direction (Eq. 2): speed exactly 1/2 */
  {
    int dims[4] = {2, 4, 1, 1};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_RELU, 0, 3, dims, DS_PARAM_STANDARD, 1);
    ds_mlp_work w;
    ds_mlp_work_init(&m, 8, &w);
    double th[13] = {0.5, 0, -0.5, 0, 0, 0.5, 0, -0.5, /* W1 4x2 */
                     0.5, -0.5, 0.5, -0.5,             /* W2 1x4 */
                     1.0};                             /* W3 */
    double s = ds_diag_escape(&m, th, X, Y, &l, &w);
    CHECK(fabs(s - 0.5) < 1e-15, "rank-two escape speed %.17g (paper: 1/2)", s);
    for (int q = 0; q < 13; q++) th[q] *= 0.01; /* theta~ normalises: same speed */
    s = ds_diag_escape(&m, th, X, Y, &l, &w);
    CHECK(fabs(s - 0.5) < 1e-14, "escape speed scale-free %.17g", s);
    /* the rank-one optimum embedded in the width-4 net: speed sqrt2 - 1 */
    double r1[13] = {1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, -1};
    s = ds_diag_escape(&m, r1, X, Y, &l, &w);
    CHECK(fabs(s - (sqrt(2.0) - 1)) < 1e-15, "rank-one escape speed %.17g (paper: sqrt2-1)", s);
    /* mean reduction: G = -Y/n, speed / 8 */
    ds_loss lm;
    ds_loss_spec lsm = {.type = DS_LOSS_MSE, .reduction = DS_RED_HALF_MEAN};
    ds_loss_setup(&lm, &lsm, 8);
    s = ds_diag_escape(&m, r1, X, Y, &lm, &w);
    CHECK(fabs(s - (sqrt(2.0) - 1) / 8) < 1e-15, "half_mean speed %.17g", s);
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
  }
  /* rank-one directions W1 = [cos phi, sin phi], W2 = 1, W3 = +-1: best speed sqrt2 - 1 */
  {
    int dims[4] = {2, 1, 1, 1};
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_RELU, 0, 3, dims, DS_PARAM_STANDARD, 1);
    ds_mlp_work w;
    ds_mlp_work_init(&m, 8, &w);
    double best = -1, worst_gap = 0;
    for (int q = 0; q < 3600; q++) {
      double phi = 2 * M_PI * q / 3600;
      for (int sg = -1; sg <= 1; sg += 2) {
        double th[4] = {cos(phi), sin(phi), 1, sg};
        double s = ds_diag_escape(&m, th, X, Y, &l, &w);
        best = fmax(best, s);
        if (sg == 1) { /* Eq. 6 of the paper, xi = phi mod pi/4 (|.| picks the sign) */
          double xi = fmod(phi, M_PI / 4);
          double e6 = fabs(cos(xi + M_PI / 4) - cos(xi) + cos(xi - M_PI / 4) - cos(xi - M_PI / 2));
          double s2 = ds_diag_escape(&m, (double[4]){cos(phi), sin(phi), 1, -1}, X, Y, &l, &w);
          worst_gap = fmax(worst_gap, fabs(fmax(s, s2) - e6));
        }
      }
    }
    CHECK(fabs(best - (sqrt(2.0) - 1)) < 1e-12, "best rank-one speed %.17g", best);
    CHECK(worst_gap < 1e-12, "rank-one speed = Eq. 6 of the paper: gap %g", worst_gap);
    if (wrank == 0)
      printf("escape: rank-two 1/2, best rank-one over 3600 angles %.15f (sqrt2-1 = %.15f), "
             "Eq. 6 gap %.1e\n",
             best, sqrt(2.0) - 1, worst_gap);
    ds_mlp_work_free(&w);
    ds_mlp_free(&m);
  }
}

/* ---- the same results on teams of 1, 2 and 4 ---------------------------------------------- */

/* o receives the outputs, sec[0..nsec] the section boundaries (each section
 * is compared relative to its own largest value). */
static void team_outputs(ds_team *t, double *o, size_t *sec, int *nsec) {
  net_case c = {"teams", DS_ACT_RELU, 1, 3, {6, 20, 15, 3}, DS_PARAM_NTK, 1, DS_LOSS_MSE,
                DS_RED_HALF_MEAN, 12};
  net N;
  net_make(&N, &c, 1.0, 900);
  size_t q = 0;
  int k = 4, ns = 0;
  sec[ns++] = q;
  CHECK(ds_diag_layers(t, &N.m, N.theta, k, o + q) == DS_OK, "teams layers");
  q += 3 * (k + DS_DIAG_LAYER_EXTRA);
  sec[ns++] = q;
  CHECK(ds_diag_activations(t, &N.m, N.theta, N.X, &N.w, k, o + q) == DS_OK, "teams act");
  q += 2 * (k + 1);
  sec[ns++] = q;
  CHECK(ds_diag_hessian_full(t, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, o + q) == DS_OK,
        "teams hessian full: %s", ds_errmsg());
  q += N.m.nparams;
  sec[ns++] = q;
  int kn = 36, topk = 5;
  CHECK(ds_diag_ntk(t, &N.m, N.theta, N.X, &N.w, topk, o + q, o + q + topk, NULL) == DS_OK,
        "teams ntk");
  q += topk;
  sec[ns++] = q;
  q += (size_t)kn * topk;
  sec[ns++] = q;
  ds_rng r; /* Lanczos: a team sums its members' sample shares of each HVP */
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_TEST);
  CHECK(ds_diag_hessian_top(t, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 4, 30, &r, o + q) == DS_OK,
        "teams lanczos: %s", ds_errmsg());
  q += 4;
  sec[ns++] = q;
  net_free(&N);
  /* e2e of a linear net */
  int dims[4] = {5, 8, 7, 4};
  ds_mlp m;
  ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 3, dims, DS_PARAM_STANDARD, 1);
  double *th = dalloc(m.nparams), Phi[20], V[25];
  gauss(th, m.nparams, 0.5, 901);
  gauss(Phi, 20, 1.0, 902);
  for (int i = 0; i < 25; i++) V[i] = i % 6 == 0;
  CHECK(ds_diag_e2e(t, &m, th, Phi, V, o + q, o + q + 4, o + q + 6, o + q + 7) == DS_OK, "teams e2e");
  q += 12;
  sec[ns++] = q;
  free(th);
  ds_mlp_free(&m);
  *nsec = ns - 1;
}

/* worst section-relative difference; NaN must match NaN */
static double team_diff(const double *a, const double *b, const size_t *sec, int nsec) {
  double worst = 0;
  for (int s = 0; s < nsec; s++) {
    size_t lo = sec[s], n = sec[s + 1] - lo;
    for (size_t q = lo; q < sec[s + 1]; q++)
      if (isnan(a[q]) != isnan(b[q])) return INFINITY;
    worst = fmax(worst, reldiff(a + lo, b + lo, n));
  }
  return worst;
}

static void test_teams(void) {
  double *a = dalloc(4096), *b = dalloc(4096);
  size_t sa[16], sb[16];
  int na = 0, nb = 0;
  team_outputs(&solo, a, sa, &na);
  team_outputs(&world, b, sb, &nb);
  double d = team_diff(b, a, sa, na);
  CHECK(na == nb && d < 1e-10, "team of %d vs team of 1: %g", world.size, d);
  if (have_pairs) {
    double *c = dalloc(4096);
    size_t sc[16];
    int nc = 0;
    team_outputs(&pairs, c, sc, &nc);
    double d2 = team_diff(c, a, sa, na);
    CHECK(nc == na && d2 < 1e-10, "team of 2 vs team of 1: %g", d2);
    free(c);
  }
  if (wrank == 0)
    printf("teams: %zu outputs (layers, activations, Hessian spectrum, NTK values and vectors, Lanczos, "
           "e2e), team of %d vs 1: max diff %.2e (relative to each section's max)\n",
           sa[na], world.size, d);
  free(a);
  free(b);
}

/* ---- errors are values, agreed over the team ---------------------------------------------- */

static void test_errors(void) {
  net_case c = {"errors", DS_ACT_RELU, 1, 2, {3, 5, 2}, DS_PARAM_STANDARD, 1, DS_LOSS_MSE,
                DS_RED_SUM, 4};
  net N;
  net_make(&N, &c, 1.0, 950);
  double out[64], ev[4], top[2];
  size_t bad = N.m.w_off[1]; /* output layer: a NaN there reaches F (ReLU would mask a hidden one) */
  N.theta[bad] = NAN;
  CHECK(ds_diag_layers(&world, &N.m, N.theta, 2, out) == DS_ENUM, "NaN weights: layers DS_ENUM");
  CHECK(ds_diag_ntk(&world, &N.m, N.theta, N.X, &N.w, 2, ev, NULL, NULL) == DS_ENUM,
        "NaN weights: ntk DS_ENUM");
  ds_rng r;
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_TEST);
  CHECK(ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 2, 5, &r, top) == DS_ENUM,
        "NaN weights: lanczos DS_ENUM");
  CHECK(ds_diag_hessian_full(&world, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, out) == DS_ENUM,
        "NaN weights: full Hessian DS_ENUM");
  N.theta[bad] = 0.5;
  CHECK(ds_diag_hessian_top(NULL, &N.m, N.theta, N.X, N.Y, &N.l, &N.w, 0, 5, &r, top) == DS_EINPUT,
        "k = 0 is DS_EINPUT");
  CHECK(ds_diag_layers(&world, &N.m, N.theta, -1, out) == DS_EINPUT, "k < 0 is DS_EINPUT");
  /* top-k beyond kn / nparams is NaN-padded */
  double ev8[8];
  CHECK(ds_diag_ntk(&world, &N.m, N.theta, N.X, &N.w, 8, ev8, NULL, NULL) == DS_OK &&
            !isnan(ev8[7]) && ev8[7] >= -1e-12,
        "ntk topk = kn");
  ds_clear_error();
  net_free(&N);
}

/* ---- benchmark ---------------------------------------------------------------------------------- */

static double best_of(int reps, double (*fn)(void *), void *arg) {
  double best = 1e300;
  for (int r = 0; r < reps; r++) {
    double t0 = ds_now();
    fn(arg);
    best = fmin(best, ds_now() - t0);
  }
  return best;
}

typedef struct {
  net *N;
  int which;
  double *buf, *buf2;
} bench_arg;

static double bench_run(void *p) {
  bench_arg *a = p;
  net *N = a->N;
  ds_rng r;
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_TEST);
  double al;
  switch (a->which) {
  case 0: ds_mlp_loss_grad_l(&N->m, N->theta, N->X, N->Y, &N->l, a->buf, &N->w); break;
  case 1: ds_diag_layers(&solo, &N->m, N->theta, 10, a->buf); break;
  case 2: ds_diag_activations(&solo, &N->m, N->theta, N->X, &N->w, 10, a->buf); break;
  case 3: ds_diag_hessian_top(NULL, &N->m, N->theta, N->X, N->Y, &N->l, &N->w, 1, 20, &r, a->buf); break;
  case 4: ds_diag_hessian_top(NULL, &N->m, N->theta, N->X, N->Y, &N->l, &N->w, 5, 40, &r, a->buf); break;
  case 5: ds_diag_ntk(&solo, &N->m, N->theta, N->X, &N->w, 10, a->buf, a->buf2, NULL); break;
  case 6: ds_diag_agop(&N->m, N->theta, N->X, &N->w, NULL, a->buf, &al); break;
  case 7: ds_diag_escape(&N->m, N->theta, N->X, N->Y, &N->l, &N->w); break;
  case 8: ds_diag_hessian_full(&solo, &N->m, N->theta, N->X, N->Y, &N->l, &N->w, a->buf); break;
  case 9: ds_mlp_loss_hvp(&N->m, N->theta, N->X, N->Y, &N->l, N->theta, &N->w, a->buf); break;
  case 10:
    ds_diag_hessian_matrix(&solo, &N->m, N->theta, N->X, N->Y, &N->l, &N->w, a->buf2, NULL);
    break;
  }
  return 0;
}

static void bench(void) {
  const char *names[] = {"step", "layers", "activ", "hess1x20", "hess5x40", "ntk10", "agop",
                         "escape", "hessfull", "hvp"};
  printf("bench: ReLU MLP d_in 32, two hidden layers of width m, 1 output, NTK param, bias, "
         "n = 256, half_mean mse; time of one training step, others as multiples of it\n");
  printf("bench: %6s %8s %10s", "m", "P", "step[s]");
  for (int i = 1; i <= 7; i++) printf(" %9s", names[i]);
  printf(" %9s\n", names[9]);
  /* DYNSWEEP_DIAG_BENCH_WIDTHS="2048" (comma-separated) replaces the list;
   * m = 2048 needs ~12 GB (the NTK's 256 x P Jacobian, P = 4.3M, and the
   * Lanczos basis) */
  int widths[16] = {64, 128, 256, 512, 1024}, nw = 5;
  const char *wl = getenv("DYNSWEEP_DIAG_BENCH_WIDTHS");
  if (wl && *wl) {
    nw = 0;
    for (char *e; nw < 16 && *wl; wl = *e ? e + 1 : e) {
      long v = strtol(wl, &e, 10);
      if (e == wl || v < 1 || v > 65536) break;
      widths[nw++] = (int)v;
    }
  }
  for (int wi = 0; wi < nw; wi++) {
    int mw = widths[wi];
    net_case c = {"bench", DS_ACT_RELU, 1, 3, {32, mw, mw, 1}, DS_PARAM_NTK, 1, DS_LOSS_MSE,
                  DS_RED_HALF_MEAN, 256};
    net N;
    net_make(&N, &c, 1.0, 1000 + wi);
    ds_mlp_work_products(&N.m, &N.w);
    size_t P = N.m.nparams, big = P > 256 * 256 ? P : 256 * 256;
    bench_arg a = {&N, 0, dalloc(big), dalloc(256 * 10)};
    double t[10];
    for (int i = 0; i < 10; i++) {
      if (i == 8) continue;
      a.which = i;
      t[i] = best_of(i == 0 ? 5 : (i == 3 || i == 4) && mw >= 512 ? 1 : 3, bench_run, &a);
    }
    printf("bench: %6d %8zu %10.3g", mw, P, t[0]);
    for (int i = 1; i <= 7; i++) printf(" %9.1f", t[i] / t[0]);
    printf(" %9.1f\n", t[9] / t[0]);
    free(a.buf);
    free(a.buf2);
    net_free(&N);
  }
  printf("bench: Lanczos top-1 (20 iters) vs full Hessian spectrum (P HVPs + pdsyevd), same nets, small m\n");
  int small[] = {16, 32, 48};
  for (int wi = 0; wi < 3; wi++) {
    int mw = small[wi];
    net_case c = {"bench", DS_ACT_RELU, 1, 3, {32, mw, mw, 1}, DS_PARAM_NTK, 1, DS_LOSS_MSE,
                  DS_RED_HALF_MEAN, 256};
    net N;
    net_make(&N, &c, 1.0, 1100 + wi);
    size_t P = N.m.nparams;
    bench_arg a = {&N, 0, dalloc(P), dalloc(P * P)};
    double t0, t1, t8, tm;
    a.which = 0;
    t0 = best_of(5, bench_run, &a);
    a.which = 3;
    t1 = best_of(3, bench_run, &a);
    a.which = 8;
    a.which = 10;
    tm = best_of(1, bench_run, &a);
    a.which = 8;
    t8 = best_of(1, bench_run, &a);
    double top = a.buf[P - 1];
    a.which = 3;
    bench_run(&a);
    printf("bench: m %3d P %5zu step %.3g s  lanczos top-1 %.3g s (%.0f steps)  full %.3g s (%.0f "
           "steps, %.0fx lanczos; forming H %.3g s, pdsyevd %.3g s)  |top1 - max| / max = %.1e\n",
           mw, P, t0, t1, t1 / t0, t8, t8 / t0, t8 / t1, tm, t8 - tm,
           fabs(a.buf[0] - top) / fabs(top));
    free(a.buf);
    free(a.buf2);
    net_free(&N);
  }
}

/* data.kind image_rank2 (seed 003's synthetic image task): the filters are
 * the documented ones (written out here), y = (u1.x)(u2.x), the analytic G*
 * is u1 u1' + u2 u2' and equals the Monte Carlo mean of grad f* grad f*'. */
static void test_agop_image(void) {
  int s = 8, d = s * s, n = 20000;
  double *u = dalloc(2 * d), *R = dalloc(d * d), *G = dalloc(d * d), a = 1 / sqrt(6.0);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++) {
      u[(3 + r) * s + 3 + c] = (1 - r) * a; /* rows 3..5, columns 3..5 of the 8 x 8 image */
      u[d + (3 + r) * s + 3 + c] = (1 - c) * a;
    }
  CHECK(ds_diag_agop_reference(DS_DATA_IMAGE_RANK2, d, R) == DS_OK, "image_rank2 reference");
  double e = 0, tr = 0;
  for (int j = 0; j < d; j++)
    for (int i = 0; i < d; i++) e = fmax(e, fabs(R[j * d + i] - u[i] * u[j] - u[d + i] * u[d + j]));
  for (int i = 0; i < d; i++) tr += R[i * d + i];
  CHECK(e < 1e-16 && fabs(tr - 2) < 1e-15, "G* = u1 u1' + u2 u2' (max diff %.2e, trace %.17g)", e, tr);
  CHECK(ds_diag_agop_reference(DS_DATA_IMAGE_RANK2, 50, R) == DS_EINPUT, "d_in 50 is no square");
  ds_data_spec sp = {.kind = DS_DATA_IMAGE_RANK2, .d_in = d, .d_out = 1, .n_train = n, .n_test = 3};
  ds_dataset tr_ = {0}, te_ = {0};
  ds_rng rng;
  ds_rng_init(&rng, 7, 0, 0, 0);
  CHECK(ds_data_build(&sp, &rng, &tr_, &te_) == DS_OK, "image_rank2 data: %s", ds_errmsg());
  CHECK(tr_.c == 1 && tr_.h == 8 && tr_.w == 8, "the data set says 1 x 8 x 8");
  int C, H, W;
  CHECK(ds_data_image_shape(&sp, &C, &H, &W) && C == 1 && H == 8 && W == 8, "1 x 8 x 8 image");
  double ey = 0;
  memset(G, 0, sizeof(double) * d * d);
  double *g = dalloc(d);
  for (int i = 0; i < tr_.n; i++) {
    const double *x = tr_.X + (size_t)i * d;
    double p = 0, q = 0;
    for (int k = 0; k < d; k++) p += u[k] * x[k], q += u[d + k] * x[k];
    ey = fmax(ey, fabs(tr_.Y[i] - p * q));
    for (int k = 0; k < d; k++) g[k] = u[k] * q + u[d + k] * p;
    cblas_dsyr(CblasColMajor, CblasUpper, d, 1.0 / n, g, 1, G, d);
  }
  for (int j = 0; j < d; j++)
    for (int i = j + 1; i < d; i++) G[j * d + i] = G[i * d + j];
  double al = agop_align(G, R, d);
  printf("image_rank2: max |y - (u1.x)(u2.x)| %.2e; Monte Carlo AGOP of f* (n %d) vs G*: "
         "alignment %.6f\n", ey, n, al);
  CHECK(ey < 1e-14, "y = (u1.x)(u2.x): max diff %.2e", ey);
  CHECK(al > 0.999, "E[grad f* grad f*'] aligned with G*: %.6f", al);
  ds_dataset_free(&tr_), ds_dataset_free(&te_);
  free(u), free(R), free(G), free(g);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  CHECK(ds_team_init(&solo, MPI_COMM_SELF) == DS_OK, "solo team: %s", ds_errmsg());
  CHECK(ds_team_init(&world, MPI_COMM_WORLD) == DS_OK, "world team: %s", ds_errmsg());
  MPI_Comm pc;
  have_pairs = wsize > 2 && wsize % 2 == 0;
  MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &pc);
  if (have_pairs) ds_team_init(&pairs, pc);

  double t0 = ds_now();
  test_layers();
  test_e2e();
  test_hessian();
  test_lanczos_large();
  test_ntk();
  test_critical_lr();
  test_agop();
  test_agop_training();
  test_agop_image();
  test_activations();
  test_escape();
  test_teams();
  test_errors();
  if (wrank == 0) printf("tests took %.2f s\n", ds_now() - t0);

  const char *b = getenv("DYNSWEEP_DIAG_BENCH");
  if (b && *b && *b != '0' && wrank == 0) bench();

  if (have_pairs) ds_team_free(&pairs);
  MPI_Comm_free(&pc);
  ds_team_free(&world);
  ds_team_free(&solo);
  char name[64];
  snprintf(name, sizeof name, "test_diag[rank %d/%d]", wrank, wsize);
  int code = ds_check_report(name);
  int any = 0;
  MPI_Allreduce(&code, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
