/* test_nn_init.c -- issue 3: every initialisation (shapes, statistics,
 * structure, draw order, errors), the loss kinds (known values, Hessian
 * actions vs finite differences, refusals) and L* of a linear map. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/nn.h"

void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a,
            const int *lda, double *b, const int *ldb, double *work, const int *lwork, int *info);

static double *vec(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static ds_model_spec spec_of(ds_init_kind kind, double scale) {
  ds_model_spec s;
  memset(&s, 0, sizeof s);
  s.init = kind;
  s.init_scale = scale;
  s.train_output = 1;
  return s;
}

/* sample variance (about 0) of W_l's entries; max |entry| */
static double var_of(const double *W, size_t count, double *amax) {
  double s = 0, mx = 0;
  for (size_t k = 0; k < count; k++) s += W[k] * W[k], mx = fmax(mx, fabs(W[k]));
  if (amax) *amax = mx;
  return s / count;
}

/* |var - want| within 5 standard errors (Gaussian: se = want sqrt(2/count)) */
static int var_ok(double var, double want, size_t count, double kurt_factor) {
  return fabs(var - want) < 5.0 * want * sqrt(kurt_factor / count);
}

/* C (r x c) = op(A) op(B) */
static void matmul(int ta, int tb, int r, int c, int k, const double *A, int lda, const double *B,
                   int ldb, double *C) {
  for (int j = 0; j < c; j++)
    for (int i = 0; i < r; i++) {
      double s = 0;
      for (int q = 0; q < k; q++) {
        double a = ta ? A[(size_t)i * lda + q] : A[(size_t)q * lda + i];
        double b = tb ? B[(size_t)q * ldb + j] : B[(size_t)j * ldb + q];
        s += a * b;
      }
      C[(size_t)j * r + i] = s;
    }
}

static double fro(const double *A, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += A[k] * A[k];
  return sqrt(s);
}

/* ---- the simple iid kinds ------------------------------------------------------------ */

static void test_iid_kinds(void) {
  int dims[] = {300, 400, 200, 50};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_RELU, 1, 3, dims);
  double *th = vec(m.nparams);
  ds_rng r;
  ds_rng_init(&r, 1, 2, 0, DS_STREAM_INIT);
  const double s = 1.7;
  struct {
    ds_init_kind kind;
    double init_std;
  } cases[] = {{DS_INIT_GAUSSIAN, 0}, {DS_INIT_GAUSSIAN, 0.2}, {DS_INIT_HE, 0},
               {DS_INIT_DEF4, 0},     {DS_INIT_NTK, 0},        {DS_INIT_GLOROT_UNIFORM, 0}};
  for (int c = 0; c < 6; c++) {
    ds_model_spec sp = spec_of(cases[c].kind, s);
    sp.init_std = cases[c].init_std;
    CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "init kind %d", cases[c].kind);
    for (int l = 1; l <= 3; l++) {
      double fi = dims[l - 1], fo = dims[l], want, amax;
      size_t count = (size_t)fi * fo;
      switch (cases[c].kind) {
      case DS_INIT_GAUSSIAN: want = cases[c].init_std > 0 ? pow(s * cases[c].init_std, 2) : s * s / fi; break;
      case DS_INIT_HE: want = s * s * 2 / fi; break;
      case DS_INIT_NTK: want = s * s; break;
      case DS_INIT_DEF4: want = s * s * (l == 1 ? 1 / fo : l == 3 ? 1 / fi : 2 / (fi + fo)); break;
      default: want = s * s * 6 / (fi + fo) / 3; break; /* U(-a,a): a^2/3 */
      }
      double var = var_of(th + m.w_off[l - 1], count, &amax);
      double kf = cases[c].kind == DS_INIT_GLOROT_UNIFORM ? 0.8 : 2.0; /* var of x^2 / var^2 */
      CHECK(var_ok(var, want, count, kf), "kind %d layer %d: variance %g want %g", cases[c].kind,
            l, var, want);
      if (cases[c].kind == DS_INIT_GLOROT_UNIFORM) {
        double a = s * sqrt(6 / (fi + fo));
        CHECK(amax < a && amax > 0.99 * a, "glorot bound: max %g, a %g", amax, a);
      }
      int bz = 1;
      for (int i = 0; i < dims[l]; i++) bz &= th[m.b_off[l - 1] + i] == 0.0;
      CHECK(bz, "biases start at 0");
    }
  }
  /* gaussian with init_std 0 is ds_mlp_init_gaussian, bitwise; draw order W_1, W_2, ... */
  double *th2 = vec(m.nparams);
  ds_rng r1, r2;
  ds_rng_init(&r1, 4, 4, 0, DS_STREAM_INIT);
  r2 = r1;
  ds_model_spec sp = spec_of(DS_INIT_GAUSSIAN, 0.8);
  ds_mlp_init_weights(&m, &sp, &r1, th);
  ds_mlp_init_gaussian(&m, 0.8, &r2, th2);
  CHECK(memcmp(th, th2, m.nparams * sizeof *th) == 0, "gaussian == ds_mlp_init_gaussian");
  ds_rng_init(&r1, 4, 5, 0, DS_STREAM_INIT);
  r2 = r1;
  sp = spec_of(DS_INIT_HE, 1.0);
  ds_mlp_init_weights(&m, &sp, &r1, th);
  int ok = 1;
  for (int l = 1; l <= 3; l++)
    for (int k = 0; k < dims[l] * dims[l - 1]; k++)
      ok &= th[m.w_off[l - 1] + k] == sqrt(2.0 / dims[l - 1]) * ds_rng_normal(&r2);
  CHECK(ok, "he: documented draw order");
  free(th2);
  free(th);
  ds_mlp_free(&m);
}

static void test_orthogonal(void) {
  int dims[] = {30, 50, 50, 20};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, 3, dims);
  double *th = vec(m.nparams), *G = vec(60 * 60);
  ds_rng r;
  ds_rng_init(&r, 2, 0, 0, DS_STREAM_INIT);
  ds_model_spec sp = spec_of(DS_INIT_ORTHOGONAL, 1.5);
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "orthogonal");
  for (int l = 1; l <= 3; l++) {
    int fo = dims[l], fi = dims[l - 1], k = fo < fi ? fo : fi;
    const double *W = th + m.w_off[l - 1];
    if (fo >= fi) matmul(1, 0, fi, fi, fo, W, fo, W, fo, G); /* W^T W */
    else matmul(0, 1, fo, fo, fi, W, fo, W, fo, G);          /* W W^T */
    double err = 0;
    for (int j = 0; j < k; j++)
      for (int i = 0; i < k; i++) err = fmax(err, fabs(G[(size_t)j * k + i] - (i == j ? 2.25 : 0)));
    CHECK(err < 1e-13, "layer %d (%d x %d): orthogonality error %g", l, fo, fi, err);
  }
  free(th);
  free(G);
  ds_mlp_free(&m);
}

static void test_near_identity(void) {
  int dims[] = {128, 100, 60, 1};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, 3, dims);
  double *th = vec(m.nparams);
  ds_rng r;
  ds_rng_init(&r, 3, 0, 0, DS_STREAM_INIT);
  ds_model_spec sp = spec_of(DS_INIT_NEAR_IDENTITY, 1.0);
  sp.init_std = 0.01; /* seed 002 */
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "near identity");
  for (int l = 1; l <= 3; l++) {
    int fo = dims[l], fi = dims[l - 1];
    double *W = th + m.w_off[l - 1];
    double s2 = 0, dmax = 0;
    for (int j = 0; j < fi; j++)
      for (int i = 0; i < fo; i++) {
        double x = W[(size_t)j * fo + i] - (i == j ? 1.0 : 0.0);
        s2 += x * x;
        if (i == j) dmax = fmax(dmax, fabs(x));
      }
    size_t count = (size_t)fo * fi;
    CHECK(var_ok(s2 / count, 1e-4, count, 2.0), "layer %d: noise variance %g", l, s2 / count);
    CHECK(dmax < 0.06, "layer %d: diagonal within 1 +- 6 std (%g)", l, dmax);
  }
  free(th);
  ds_mlp_free(&m);
}

/* issue 13: model.init_offset adds c to every entry of W_1 after the draw,
 * exactly (W_1 + c bitwise, the rest untouched, the rng at the same place). */
static void test_init_offset(void) {
  int dims[] = {16, 16, 1};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_TANH, 0, 2, dims);
  double *a = vec(m.nparams), *b = vec(m.nparams);
  ds_rng ra, rb;
  ds_rng_init(&ra, 7, 0, 0, DS_STREAM_INIT);
  ds_rng_init(&rb, 7, 0, 0, DS_STREAM_INIT);
  ds_model_spec sp = spec_of(DS_INIT_NTK, 1.0);
  CHECK(ds_mlp_init_weights(&m, &sp, &ra, a) == DS_OK, "offset 0");
  sp.init_offset = -0.375;
  CHECK(ds_mlp_init_weights(&m, &sp, &rb, b) == DS_OK, "offset -0.375");
  int exact = 1;
  for (size_t k = 0; k < m.nparams; k++)
    exact &= b[k] == (k < m.w_off[1] ? a[k] + -0.375 : a[k]);
  CHECK(exact, "W_1 + offset bitwise, W_2 unchanged");
  CHECK(ds_rng_normal(&ra) == ds_rng_normal(&rb), "same draws consumed");
  sp.init_offset = NAN;
  CHECK(ds_mlp_init_weights(&m, &sp, &rb, b) == DS_EINPUT, "non-finite offset refused");
  free(a);
  free(b);
  ds_mlp_free(&m);
}

/* ---- balanced (seed 001 Procedure 1) ---------------------------------------------------- */

/* product W_L ... W_1 (dims[L] x dims[0]) into E */
static void end_to_end(const ds_mlp *m, const double *th, double *E) {
  int d0 = m->dims[0];
  double *cur = vec((size_t)m->dims[0] * d0), *nxt;
  for (int i = 0; i < d0; i++) cur[(size_t)i * d0 + i] = 1;
  for (int l = 1; l <= m->depth; l++) {
    nxt = vec((size_t)m->dims[l] * d0);
    matmul(0, 0, m->dims[l], d0, m->dims[l - 1], th + m->w_off[l - 1], m->dims[l], cur,
           m->dims[l - 1], nxt);
    free(cur);
    cur = nxt;
  }
  memcpy(E, cur, (size_t)m->dims[m->depth] * d0 * sizeof *E);
  free(cur);
}

static void check_balanced(const int *dims, int depth, double s, int identity) {
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, depth, dims);
  double *th = vec(m.nparams);
  ds_rng r, r2;
  ds_rng_init(&r, 8, (uint64_t)depth, 0, DS_STREAM_INIT);
  r2 = r;
  ds_model_spec sp = spec_of(DS_INIT_BALANCED, s);
  sp.balanced_identity = identity;
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "balanced init");
  int d0 = dims[0], dL = dims[depth];
  double *A = vec((size_t)dL * d0), *E = vec((size_t)dL * d0);
  for (int j = 0; j < d0; j++)
    for (int i = 0; i < dL; i++)
      A[(size_t)j * dL + i] = identity ? (i == j ? s : 0) : s / sqrt(d0) * ds_rng_normal(&r2);
  end_to_end(&m, th, E);
  double e = 0;
  for (size_t k = 0; k < (size_t)dL * d0; k++) e = fmax(e, fabs(E[k] - A[k]));
  CHECK(e < 1e-12 * fmax(1, fabs(s)), "depth %d %dx%d identity %d: |W_{1:N} - A|max = %.3g",
        depth, dL, d0, identity, e);
  for (int j = 1; j < depth; j++) { /* W_{j+1}^T W_{j+1} - W_j W_j^T, both d_j x d_j */
    int dj = dims[j];
    double *P1 = vec((size_t)dj * dj), *P2 = vec((size_t)dj * dj);
    matmul(1, 0, dj, dj, dims[j + 1], th + m.w_off[j], dims[j + 1], th + m.w_off[j],
           dims[j + 1], P1);
    matmul(0, 1, dj, dj, dims[j - 1], th + m.w_off[j - 1], dj, th + m.w_off[j - 1], dj, P2);
    for (size_t k = 0; k < (size_t)dj * dj; k++) P1[k] -= P2[k];
    double b = fro(P1, (size_t)dj * dj);
    CHECK(b < 1e-13 * fmax(1, s * s), "depth %d: balancedness b_%d = %.3g", depth, j, b);
    free(P1);
    free(P2);
  }
  free(A);
  free(E);
  free(th);
  ds_mlp_free(&m);
}

static void test_balanced(void) {
  int a[] = {6, 8, 7, 9, 4}, b[] = {3, 5, 4, 7}, c[] = {5, 2}, d[] = {4, 4, 4, 4, 4};
  check_balanced(a, 4, 1.3, 0); /* d_in > d_out */
  check_balanced(b, 3, 0.7, 0); /* d_in < d_out */
  check_balanced(c, 1, 2.0, 0); /* depth 1: W_1 = A */
  check_balanced(d, 4, 1.0, 1); /* identity */
  check_balanced(a, 4, 0.5, 1); /* padded identity */
  check_balanced(b, 3, -2.0, 1);
  /* exact identity init: W_j = I */
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, 4, d);
  double *th = vec(m.nparams);
  ds_rng r;
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_INIT);
  ds_model_spec sp = spec_of(DS_INIT_BALANCED, 1.0);
  sp.balanced_identity = 1;
  ds_mlp_init_weights(&m, &sp, &r, th);
  int ok = 1;
  for (int l = 0; l < 4; l++)
    for (int k = 0; k < 16; k++) ok &= th[m.w_off[l] + k] == (k % 5 == 0 ? 1.0 : 0.0);
  CHECK(ok, "balanced identity with scale 1 is W_j = I exactly");
  free(th);
  ds_mlp_free(&m);
  /* hidden width < rank: refused */
  int bad[] = {5, 6, 3, 5};
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, 3, bad);
  th = vec(m.nparams);
  sp = spec_of(DS_INIT_BALANCED, 1.0);
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_EINPUT, "hidden width < rank -> DS_EINPUT");
  free(th);
  ds_mlp_free(&m);
}

/* ---- symmetric pairing (seed 000) -------------------------------------------------------- */

static void test_symmetric(void) {
  int dims[] = {5, 8, 2};
  for (int param = 0; param <= 1; param++) {
    ds_mlp m;
    ds_mlp_setup(&m, DS_ACT_RELU, 1, 2, dims, param, 0);
    double *th = vec(m.nparams);
    ds_rng r;
    ds_rng_init(&r, 6, (uint64_t)param, 0, DS_STREAM_INIT);
    ds_model_spec sp = spec_of(param ? DS_INIT_NTK : DS_INIT_GAUSSIAN, 1.0);
    sp.symmetric = 1;
    CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_OK, "symmetric init");
    const double *W1 = th + m.w_off[0], *W2 = th + m.w_off[1];
    int ok = 1;
    for (int i = 0; i < 8; i += 2) {
      for (int j = 0; j < 5; j++) ok &= W1[j * 8 + i + 1] == -W1[j * 8 + i] && W1[j * 8 + i] != 0;
      for (int k = 0; k < 2; k++) ok &= W2[(i + 1) * 2 + k] == -W2[i * 2 + k];
    }
    CHECK(ok, "rows of W_1 / columns of W_2 paired with opposite signs");
    /* the ReLU net is linear at init: f(x) = 1/2 alpha2 alpha1 W_2 W_1 x, so
     * f(x) + f(-x) = 0 (not f = 0: relu(z) - relu(-z) = z) */
    int n = 6;
    double X[30], Xm[30], F1[12], M[10];
    ds_rng_init(&r, 60, 0, 0, DS_STREAM_TEST);
    for (int k = 0; k < 30; k++) X[k] = ds_rng_normal(&r), Xm[k] = -X[k];
    ds_mlp_work w;
    ds_mlp_work_init(&m, n, &w);
    memcpy(F1, ds_mlp_forward(&m, th, X, &w), sizeof F1);
    const double *F2 = ds_mlp_forward(&m, th, Xm, &w);
    matmul(0, 0, 2, 5, 8, W2, 2, W1, 8, M);
    double a = param ? 1.0 / sqrt(5.0 * 8.0) : 1.0, e = 0, e2 = 0, fmx = 0;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < 2; k++) {
        double lin = 0;
        for (int j = 0; j < 5; j++) lin += 0.5 * a * M[j * 2 + k] * X[i * 5 + j];
        e = fmax(e, fabs(F1[i * 2 + k] - lin));
        e2 = fmax(e2, fabs(F1[i * 2 + k] + F2[i * 2 + k]));
        fmx = fmax(fmx, fabs(F1[i * 2 + k]));
      }
    CHECK(e < 1e-14 * (1 + fmx) && e2 < 1e-14 * (1 + fmx) && fmx > 1e-3,
          "param %d: f = 1/2 W2 W1 x at init (err %.3g, odd err %.3g, |f| %.3g)", param, e, e2,
          fmx);
    ds_mlp_work_free(&w);
    free(th);
    ds_mlp_free(&m);
  }
  int odd[] = {5, 7, 2}, deep[] = {5, 8, 8, 2};
  ds_mlp m;
  ds_rng r;
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_INIT);
  ds_model_spec sp = spec_of(DS_INIT_GAUSSIAN, 1.0);
  sp.symmetric = 1;
  double th[200];
  ds_mlp_init(&m, DS_ACT_RELU, 0, 2, odd);
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_EINPUT, "odd width refused");
  ds_mlp_free(&m);
  ds_mlp_init(&m, DS_ACT_RELU, 0, 3, deep);
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_EINPUT, "depth 3 refused");
  sp = spec_of(DS_INIT_FILE, 1.0);
  CHECK(ds_mlp_init_weights(&m, &sp, &r, th) == DS_EINPUT, "file refused");
  ds_mlp_free(&m);
}

/* ---- losses ------------------------------------------------------------------------------- */

static void test_losses(void) {
  ds_loss l;
  ds_loss_spec sp = {DS_LOSS_MSE, DS_RED_HALF_MEAN, 2, 0};
  CHECK(ds_loss_setup(&l, &sp, 4) == DS_OK && l.c == 0.125, "mse half mean c %g", l.c);
  sp = (ds_loss_spec){DS_LOSS_LP, DS_RED_HALF_SUM, 4, 0};
  CHECK(ds_loss_setup(&l, &sp, 4) == DS_OK && l.c == 0.25, "lp half sum c = 1/p");
  sp.reduction = DS_RED_HALF_MEAN;
  CHECK(ds_loss_setup(&l, &sp, 4) == DS_OK && l.c == 1.0 / 16, "lp half mean c = 1/(pn)");
  /* lp known values: r = (1, -2), c = 1/4: L = (1 + 16)/4, dF = |r|^2 r = (1, -8) */
  sp.reduction = DS_RED_HALF_SUM;
  ds_loss_setup(&l, &sp, 2);
  double F[] = {1, -2}, Y[] = {0, 0}, dF[2];
  double L = ds_loss_eval(&l, F, Y, 1, 2, dF);
  CHECK(L == 17.0 / 4 && dF[0] == 1 && dF[1] == -8, "lp: L %g dF (%g %g)", L, dF[0], dF[1]);
  sp.p = 1.5;
  CHECK(ds_loss_setup(&l, &sp, 2) == DS_EINPUT, "lp p < 2 refused");
  /* cross-entropy: f = (c0, c0 + ln 3), y = e_1 -> softmax (1/4, 3/4), L = ln 4,
   * dF = (1/4 - 1, 3/4); shifting f by +-1000 changes nothing (stable) */
  sp = (ds_loss_spec){DS_LOSS_CE, DS_RED_SUM, 0, 0};
  CHECK(ds_loss_setup(&l, &sp, 3) == DS_OK && l.c == 1.0, "ce sum");
  double Fc[] = {0, log(3.0), 1000, 1000 + log(3.0), -1000, -1000 + log(3.0)};
  double Yc[] = {1, 0, 1, 0, 1, 0}, dc[6];
  L = ds_loss_eval(&l, Fc, Yc, 2, 3, dc);
  CHECK(fabs(L - 3 * log(4.0)) < 1e-12, "ce loss %.17g", L);
  int ok = 1;
  for (int i = 0; i < 3; i++) ok &= fabs(dc[2 * i] + 0.75) < 1e-12 && fabs(dc[2 * i + 1] - 0.75) < 1e-12;
  CHECK(ok, "ce gradient stable and = softmax - y");
  sp.reduction = DS_RED_HALF_MEAN;
  CHECK(ds_loss_setup(&l, &sp, 3) == DS_EINPUT, "ce half reduction refused");
  sp.reduction = DS_RED_MEAN;
  ds_loss_setup(&l, &sp, 3);
  CHECK(fabs(ds_loss_eval(&l, Fc, Yc, 2, 3, NULL) - log(4.0)) < 1e-12, "ce mean");
  /* Hessian actions vs FD of the gradient, each kind */
  ds_rng r;
  ds_rng_init(&r, 12, 0, 0, DS_STREAM_TEST);
  int k = 4, n = 5;
  double Fr[20], Yr[20], V[20], Hv[20], gp[20], gm[20], Fp[20], Fm[20];
  for (int kind = 0; kind < 3; kind++) {
    ds_loss_spec s2 = {(ds_loss_kind)kind, DS_RED_MEAN, 4, 0};
    ds_loss_setup(&l, &s2, n);
    for (int q = 0; q < 20; q++) Fr[q] = ds_rng_normal(&r), V[q] = ds_rng_normal(&r);
    for (int q = 0; q < 20; q++) Yr[q] = kind == 2 ? (q % k == (q / k) % k) : ds_rng_normal(&r);
    ds_loss_hess_apply(&l, Fr, Yr, k, n, V, Hv);
    const double h = 1e-5;
    for (int q = 0; q < 20; q++) Fp[q] = Fr[q] + h * V[q], Fm[q] = Fr[q] - h * V[q];
    ds_loss_eval(&l, Fp, Yr, k, n, gp);
    ds_loss_eval(&l, Fm, Yr, k, n, gm);
    double num = 0, den = 0;
    for (int q = 0; q < 20; q++) {
      double fd = (gp[q] - gm[q]) / (2 * h);
      num += (fd - Hv[q]) * (fd - Hv[q]);
      den += Hv[q] * Hv[q];
    }
    CHECK(sqrt(num / den) < 1e-8, "loss %d: Hessian action vs FD rel %.3g", kind, sqrt(num / den));
  }
}

/* ---- L* ------------------------------------------------------------------------------------ */

/* loss of W (dout x din) */
static double loss_of(const ds_loss *l, const double *W, const double *X, const double *Y,
                      int din, int dout, int n, double *dF, double *G) {
  double *F = vec((size_t)dout * n);
  matmul(0, 0, dout, n, din, W, dout, X, din, F);
  double L = ds_loss_eval(l, F, Y, dout, n, dF);
  if (G) matmul(0, 1, dout, din, n, dF, dout, X, din, G); /* dL/dW = dF X^T */
  free(F);
  return L;
}

static void test_optimum(void) {
  int din = 6, dout = 3, n = 40;
  double *X = vec((size_t)din * n), *Y = vec((size_t)dout * n), *W = vec((size_t)dout * din);
  double *W2 = vec((size_t)dout * din), *dF = vec((size_t)dout * n), *G = vec((size_t)dout * din);
  ds_rng r;
  ds_rng_init(&r, 21, 0, 0, DS_STREAM_TEST);
  for (int q = 0; q < din * n; q++) X[q] = ds_rng_normal(&r);
  for (int q = 0; q < dout * n; q++) Y[q] = ds_rng_normal(&r) + 0.5 * X[q % (din * n)];
  ds_loss l;
  ds_loss_spec sp = {DS_LOSS_MSE, DS_RED_HALF_MEAN, 2, 1};
  ds_loss_setup(&l, &sp, n);
  double Ls = 0;
  CHECK(ds_linear_optimum_w(&l, X, Y, din, dout, n, W, &Ls) == DS_OK, "mse optimum");
  /* own dgels on X^T W^T = Y^T */
  double *A = vec((size_t)n * din), *B = vec((size_t)n * dout), work[4096];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < din; j++) A[(size_t)j * n + i] = X[(size_t)i * din + j];
  for (int i = 0; i < n; i++)
    for (int k = 0; k < dout; k++) B[(size_t)k * n + i] = Y[(size_t)i * dout + k];
  int info = 0, lw = 4096;
  dgels_("N", &n, &din, &dout, A, &n, B, &n, work, &lw, &info);
  for (int k = 0; k < dout; k++)
    for (int j = 0; j < din; j++) W2[(size_t)j * dout + k] = B[(size_t)k * n + j];
  double Lg = loss_of(&l, W2, X, Y, din, dout, n, dF, NULL);
  CHECK(info == 0 && ds_close_rel(Ls, Lg, 1e-12), "mse L* %.17g = loss of dgels solution %.17g",
        Ls, Lg);
  double wmax = 0;
  for (int q = 0; q < dout * din; q++) wmax = fmax(wmax, fabs(W[q] - W2[q]));
  CHECK(wmax < 1e-12, "same minimiser (%.3g)", wmax);
  int worse = 1;
  for (int t = 0; t < 20; t++) {
    for (int q = 0; q < dout * din; q++) W2[q] = W[q] + 1e-3 * ds_rng_normal(&r);
    worse &= loss_of(&l, W2, X, Y, din, dout, n, dF, NULL) >= Ls;
  }
  CHECK(worse, "perturbed W has loss >= L*");
  double Ls2;
  CHECK(ds_linear_optimum(&l, X, Y, din, dout, n, &Ls2) == DS_OK && Ls2 == Ls, "no-W variant");
  /* underdetermined (n < d_in): interpolation, L* ~ 0 */
  CHECK(ds_linear_optimum(&l, X, Y, din, dout, 4, &Ls2) == DS_OK && Ls2 < 1e-25,
        "n < d_in: L* = %.3g", Ls2);

  /* lp, p = 4: Newton optimum */
  sp = (ds_loss_spec){DS_LOSS_LP, DS_RED_HALF_MEAN, 4, 1};
  ds_loss_setup(&l, &sp, n);
  CHECK(ds_linear_optimum_w(&l, X, Y, din, dout, n, W, &Ls) == DS_OK, "lp optimum");
  double Lls = loss_of(&l, W2, X, Y, din, dout, n, dF, NULL); /* any point */
  double *Wls = vec((size_t)dout * din), *Gls = vec((size_t)dout * din);
  for (int k = 0; k < dout; k++)
    for (int j = 0; j < din; j++) Wls[(size_t)j * dout + k] = B[(size_t)k * n + j];
  Lls = loss_of(&l, Wls, X, Y, din, dout, n, dF, Gls);
  double Lw = loss_of(&l, W, X, Y, din, dout, n, dF, G);
  CHECK(Lw == Ls && Ls < Lls, "lp L* %.10g < loss of the LS solution %.10g", Ls, Lls);
  double gr = fro(G, (size_t)dout * din) / fro(Gls, (size_t)dout * din);
  CHECK(gr < 1e-10, "lp optimum: |grad L(W*)| / |grad L(W_ls)| = %.3g", gr);
  worse = 1;
  for (int t = 0; t < 20; t++) {
    for (int q = 0; q < dout * din; q++) W2[q] = W[q] + 1e-3 * ds_rng_normal(&r);
    worse &= loss_of(&l, W2, X, Y, din, dout, n, dF, NULL) >= Ls;
  }
  CHECK(worse, "lp: perturbed W has loss >= L*");
  sp = (ds_loss_spec){DS_LOSS_CE, DS_RED_MEAN, 0, 1};
  ds_loss_setup(&l, &sp, n);
  CHECK(ds_linear_optimum(&l, X, Y, din, dout, n, &Ls) == DS_EINPUT, "ce: no L*");
  free(X), free(Y), free(W), free(W2), free(dF), free(G), free(A), free(B), free(Wls), free(Gls);
}

int main(void) {
  test_iid_kinds();
  test_orthogonal();
  test_near_identity();
  test_init_offset();
  test_balanced();
  test_symmetric();
  test_losses();
  test_optimum();
  return ds_check_report("test_nn_init");
}
