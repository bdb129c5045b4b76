/* test_science.c -- the studies' exact predictions, run through nn:
 *   seed 003: the single-example NQM recurrences for g(t) and lambda(t) hold to
 *             round-off; catapult phases at eta*lambda0 = 2 and 4 for the NQM
 *             and the 2-layer linear net (NTK parameterisation);
 *   seed 001: the per-step balancedness drift identity of GD, the gradient
 *             formula under whitened data, Claim 4 (unbalanced init explodes,
 *             balanced converges) and Claim 5 (loss never below lambda^2/2);
 *   seed 000: Def. 4 makes B^l = Q^l^T Q^l -> I like 1/sqrt(width). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/nn.h"

static double *vec(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static double dot(const double *a, const double *b, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += a[k] * b[k];
  return s;
}

/* C (r x c) = op(A) op(B), plain loops (test reference) */
static void matmul(int ta, int tb, int r, int c, int k, const double *A, int lda, const double *B,
                   int ldb, double *C) {
  for (int j = 0; j < c; j++)
    for (int i = 0; i < r; i++) {
      double s = 0;
      for (int q = 0; q < k; q++)
        s += (ta ? A[(size_t)i * lda + q] : A[(size_t)q * lda + i]) *
             (tb ? B[(size_t)q * ldb + j] : B[(size_t)j * ldb + q]);
      C[(size_t)j * r + i] = s;
    }
}

/* ---- seed 003: the NQM of a 2-layer ReLU net, one example ---------------------------- */

typedef struct {
  ds_mlp m;
  ds_mlp_work w;
  ds_approx a; /* order 2 = NQM; unused (order 0) for the network itself */
  int quad;
  double *th, *g, X[64], Y[1];
  ds_loss l;
} one_ex;

/* f = (1/sqrt(m)) sum v_i act(u_i^T x / sqrt(d)), NTK parameterisation, no bias,
 * theta0 ~ N(0, 1); loss 1/2 (f - y)^2 */
static void one_ex_make(one_ex *e, int act, int d, int width, int quad, unsigned seed) {
  memset(e, 0, sizeof *e);
  int dims[] = {d, width, 1};
  ds_mlp_setup(&e->m, act, 0, 2, dims, DS_PARAM_NTK, 1);
  ds_mlp_work_init(&e->m, 1, &e->w);
  e->th = vec(e->m.nparams);
  e->g = vec(e->m.nparams);
  ds_rng r;
  ds_rng_init(&r, seed, (uint64_t)width, (uint32_t)act, DS_STREAM_INIT);
  ds_model_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.init = DS_INIT_NTK;
  sp.init_scale = 1.0;
  ds_mlp_init_weights(&e->m, &sp, &r, e->th);
  for (int j = 0; j < d; j++) e->X[j] = ds_rng_normal(&r);
  e->Y[0] = 1.0;
  ds_loss_spec ls = {DS_LOSS_MSE, DS_RED_HALF_SUM, 2, 0};
  ds_loss_setup(&e->l, &ls, 1);
  e->quad = quad;
  if (quad) ds_approx_init(&e->a, &e->m, 2, e->th, 1);
}

static void one_ex_free(one_ex *e) {
  if (e->quad) ds_approx_free(&e->a);
  free(e->th);
  free(e->g);
  ds_mlp_work_free(&e->w);
  ds_mlp_free(&e->m);
}

/* loss and gradient at e->th into e->g; *out = model output */
static double one_ex_lg(one_ex *e, double *out) {
  double L = e->quad ? ds_approx_loss_grad(&e->a, e->th, e->X, e->Y, &e->l, e->g, &e->w)
                     : ds_mlp_loss_grad_l(&e->m, e->th, e->X, e->Y, &e->l, e->g, &e->w);
  *out = e->Y[0] + e->w.dF[0]; /* dL/dF = f - y */
  return L;
}

/* NTK of the single example: ||grad_theta f||^2, from a backward pass with dF = 1 */
static double one_ex_ntk(one_ex *e) {
  double Ysave = e->Y[0], f;
  ds_loss unit = {DS_LOSS_MSE, 2.0, 0.5};
  /* loss 1/2 (f - (f - 1))^2 has dL/dF = f - (f - 1) = 1 up to one rounding */
  if (e->quad) {
    ds_approx_forward(&e->a, e->th, e->X, &e->w, &f);
    e->Y[0] = f - 1.0;
    ds_approx_loss_grad(&e->a, e->th, e->X, e->Y, &unit, e->g, &e->w);
  } else {
    f = ds_mlp_forward(&e->m, e->th, e->X, &e->w)[0];
    e->Y[0] = f - 1.0;
    ds_mlp_loss_grad_l(&e->m, e->th, e->X, e->Y, &unit, e->g, &e->w);
  }
  double s = e->w.dF[0];
  e->Y[0] = Ysave;
  return dot(e->g, e->g, e->m.nparams) / (s * s);
}

static void test_nqm_recurrence(void) {
  const int d = 10, width = 256;
  one_ex e;
  one_ex_make(&e, DS_ACT_RELU, d, width, 1, 3);
  size_t P = e.m.nparams;
  double xx = dot(e.X, e.X, d), q = xx / ((double)width * d);
  double g, lam0 = one_ex_ntk(&e);
  double etas[] = {1.0 / lam0, 3.0 / lam0};
  for (int k = 0; k < 2; k++) {
    memcpy(e.th, e.a.theta0, P * sizeof *e.th);
    double eta = etas[k], worst_g = 0, worst_l = 0;
    one_ex_lg(&e, &g);
    double lam = one_ex_ntk(&e);
    int steps = 0;
    for (int t = 0; t < 60; t++) {
      one_ex_lg(&e, &g); /* e.g = (g - y) grad f_quad */
      double r = g - e.Y[0];
      double lam_from_grad = dot(e.g, e.g, P) / (r * r);
      worst_l = fmax(worst_l, fabs(lam_from_grad - lam) / lam);
      /* predictions (3.11), (3.12) */
      double r_next = (1 - eta * lam + q * eta * eta * r * g) * r;
      double lam_next = lam - eta * q * r * r * (4 * g / r - eta * lam);
      for (size_t p = 0; p < P; p++) e.th[p] -= eta * e.g[p];
      double g1;
      one_ex_lg(&e, &g1);
      double lam1 = one_ex_ntk(&e);
      double scale = fabs(g) + fabs(e.Y[0]) + fabs(g1);
      worst_g = fmax(worst_g, fabs((g1 - e.Y[0]) - r_next) / scale);
      worst_l = fmax(worst_l, fabs(lam1 - lam_next) / lam1);
      lam = lam1;
      steps++;
      if (fabs(g1 - e.Y[0]) < 1e-9) break;
    }
    printf("NQM eta*lambda0 = %g: %d steps, max recurrence error g %.2g lambda %.2g\n",
           eta * lam0, steps, worst_g, worst_l);
    CHECK(worst_g < 1e-12 && worst_l < 1e-12,
          "NQM eta*lambda0 = %g: %d steps, recurrence errors g %.3g lambda %.3g", eta * lam0,
          steps, worst_g, worst_l);
  }
  /* lambda(0) closed form (dissertation): (1/md) sum_i [(u_i.x)^2 1_i + v_i^2 ||x||^2 1_i] */
  const double *U = e.a.theta0, *v = e.a.theta0 + e.m.w_off[1];
  double l0 = 0;
  for (int i = 0; i < width; i++) {
    double z = 0;
    for (int j = 0; j < d; j++) z += U[(size_t)j * width + i] * e.X[j];
    if (z > 0) l0 += z * z + v[i] * v[i] * xx;
  }
  l0 /= (double)width * d;
  CHECK(fabs(l0 - lam0) < 1e-12 * lam0, "lambda(0) = %.15g closed form %.15g", lam0, l0);
  one_ex_free(&e);
}

/* GD on one example at eta = c / lambda0; returns phase: 0 monotone, 1 catapult
 * (rose, then converged with final eta*lambda < 2), 2 diverged, -1 other */
static int run_phase(int act, int quad, int width, double c, double *peak, double *final_el) {
  one_ex e;
  one_ex_make(&e, act, 10, width, quad, 5);
  size_t P = e.m.nparams;
  double g, lam0 = one_ex_ntk(&e), eta = c / lam0;
  double L0 = one_ex_lg(&e, &g), Lprev = L0, Lmax = L0, L = L0;
  int mono = 1, phase = -1;
  for (int t = 0; t < 20000; t++) {
    for (size_t p = 0; p < P; p++) e.th[p] -= eta * e.g[p];
    L = one_ex_lg(&e, &g);
    if (!isfinite(L) || L > 1e12 * L0) {
      phase = 2;
      break;
    }
    if (L > Lprev) mono = 0;
    Lmax = fmax(Lmax, L);
    Lprev = L;
    if (L < 1e-24 * L0) break;
  }
  *peak = Lmax / L0;
  *final_el = eta * one_ex_ntk(&e);
  if (phase != 2 && L < 1e-20 * L0) phase = mono ? 0 : (Lmax > L0 && *final_el < 2 ? 1 : -1);
  one_ex_free(&e);
  return phase;
}

static void test_catapult_single(void) {
  const double cs[] = {1.0, 1.9, 2.5, 3.5, 4.2, 6.0};
  const int want[] = {0, 0, 1, 1, 2, 2};
  for (int model = 0; model < 2; model++) { /* 0: NQM of ReLU net, 1: 2-layer linear net */
    int widths[] = {256, 1024};
    for (int wi = 0; wi < 2; wi++)
      for (int k = 0; k < 6; k++) {
        double peak, fel;
        int ph = run_phase(model ? DS_ACT_LINEAR : DS_ACT_RELU, model == 0, widths[wi], cs[k],
                           &peak, &fel);
        printf("%-10s width %4d eta*lambda0 %.1f: phase %d, peak L/L0 %9.3g, final eta*lambda %.3f\n",
               model ? "linear net" : "NQM", widths[wi], cs[k], ph, peak, fel);
        CHECK(ph == want[k], "%s width %d eta*lambda0 = %g: phase %d want %d (peak L/L0 %.3g, "
              "final eta*lambda %.3g)", model ? "linear net" : "NQM", widths[wi], cs[k], ph,
              want[k], peak, fel);
      }
  }
}

/* several examples: lambda0 = top eigenvalue of K = J J^T, built from JVPs of
 * the rows of J (K e_j = J (J^T e_j)) */
static void test_catapult_multi(void) {
  const int d = 8, width = 1024, n = 4;
  int dims[] = {d, width, 1};
  ds_mlp m;
  ds_mlp_work w;
  ds_mlp_setup(&m, DS_ACT_LINEAR, 0, 2, dims, DS_PARAM_NTK, 1);
  ds_mlp_work_init(&m, n, &w);
  size_t P = m.nparams;
  double *th0 = vec(P), *th = vec(P), *g = vec(P), X[32], Y[4], K[16], e[4], Je[4];
  ds_rng r;
  ds_rng_init(&r, 17, 0, 0, DS_STREAM_INIT);
  ds_model_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.init = DS_INIT_NTK;
  sp.init_scale = 1.0;
  ds_mlp_init_weights(&m, &sp, &r, th0);
  for (int k = 0; k < d * n; k++) X[k] = ds_rng_normal(&r);
  for (int i = 0; i < n; i++) Y[i] = i % 2 ? 1.0 : -1.0;
  for (int j = 0; j < n; j++) { /* column j of K = J (J^T e_j) */
    for (int i = 0; i < n; i++) e[i] = i == j;
    ds_mlp_forward(&m, th0, X, &w);
    memcpy(w.dF, e, sizeof e);
    ds_mlp_backward(&m, th0, &w, g);
    ds_mlp_jvp(&m, th0, X, g, &w, Je);
    memcpy(K + 4 * j, Je, sizeof Je);
  }
  double v[4] = {1, 1, 1, 1}, lam = 0;
  for (int it = 0; it < 2000; it++) { /* power iteration */
    double Kv[4] = {0}, nv = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) Kv[i] += K[4 * j + i] * v[j];
    for (int i = 0; i < n; i++) nv += Kv[i] * Kv[i];
    nv = sqrt(nv);
    lam = nv / sqrt(dot(v, v, 4));
    for (int i = 0; i < n; i++) v[i] = Kv[i] / nv;
  }
  CHECK(fabs(K[1] - K[4]) < 1e-12 * lam, "K symmetric");
  ds_loss l = {DS_LOSS_MSE, 2.0, 0.5}; /* 1/2 sum: critical lr 2 / lambda_max(K) */
  const double cs[] = {1.5, 3.0, 6.0};
  for (int k = 0; k < 3; k++) {
    double eta = cs[k] / lam;
    memcpy(th, th0, P * sizeof *th);
    double L0 = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w), L = L0, Lprev = L0, Lmax = L0;
    int mono = 1, diverged = 0;
    for (int t = 0; t < 20000 && L > 1e-22 * L0; t++) {
      for (size_t p = 0; p < P; p++) th[p] -= eta * g[p];
      L = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
      if (!isfinite(L) || L > 1e12 * L0) {
        diverged = 1;
        break;
      }
      mono &= L <= Lprev;
      Lmax = fmax(Lmax, L);
      Lprev = L;
    }
    if (k == 0) CHECK(mono && L < 1e-20 * L0, "n = 4, eta*lambda0 = 1.5: monotone, converged");
    if (k == 1)
      CHECK(!diverged && !mono && Lmax > L0 && L < 1e-20 * L0,
            "n = 4, eta*lambda0 = 3: catapult (peak L/L0 %.3g)", Lmax / L0);
    if (k == 2) CHECK(diverged, "n = 4, eta*lambda0 = 6: diverges");
  }
  free(th0), free(th), free(g);
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

/* ---- seed 001 -------------------------------------------------------------------------------- */

/* product W_b ... W_a of a linear net's layers (1-based, a..b; empty = identity of size dim) */
static double *prod_range(const ds_mlp *m, const double *th, int a, int b) {
  int d0 = m->dims[a - 1];
  double *cur = vec((size_t)d0 * d0);
  for (int i = 0; i < d0; i++) cur[(size_t)i * d0 + i] = 1;
  for (int l = a; l <= b; l++) {
    double *nxt = vec((size_t)m->dims[l] * d0);
    matmul(0, 0, m->dims[l], d0, m->dims[l - 1], th + m->w_off[l - 1], m->dims[l], cur,
           m->dims[l - 1], nxt);
    free(cur);
    cur = nxt;
  }
  return cur; /* dims[b] x dims[a-1] */
}

static double fro_diff(const double *A, const double *B, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += (A[k] - B[k]) * (A[k] - B[k]);
  return sqrt(s);
}

/* whitened X (d0 x n): sqrt(n) times the transpose of an n x d0 orthonormal Q */
static void whitened(int d0, int n, ds_rng *r, double *X) {
  double *Q = vec((size_t)n * d0);
  for (int k = 0; k < n * d0; k++) Q[k] = ds_rng_normal(r);
  for (int j = 0; j < d0; j++) { /* modified Gram-Schmidt, twice */
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < j; i++) {
        double c = dot(Q + (size_t)i * n, Q + (size_t)j * n, n);
        for (int k = 0; k < n; k++) Q[(size_t)j * n + k] -= c * Q[(size_t)i * n + k];
      }
    double nr = sqrt(dot(Q + (size_t)j * n, Q + (size_t)j * n, n));
    for (int k = 0; k < n; k++) Q[(size_t)j * n + k] /= nr;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < d0; j++) X[(size_t)i * d0 + j] = sqrt((double)n) * Q[(size_t)j * n + i];
  free(Q);
}

static void test_balancedness_drift(void) {
  const int N = 4, n = 12;
  int dims[] = {5, 7, 6, 8, 3};
  ds_mlp m;
  ds_mlp_work w;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, N, dims);
  ds_mlp_work_init(&m, n, &w);
  size_t P = m.nparams;
  double *th = vec(P), *th1 = vec(P), *g = vec(P), X[60], Y[36], Phi[15];
  ds_rng r;
  ds_rng_init(&r, 31, 0, 0, DS_STREAM_TEST);
  whitened(5, n, &r, X);
  for (int k = 0; k < 3 * n; k++) Y[k] = ds_rng_normal(&r);
  matmul(0, 1, 3, 5, n, Y, 3, X, 5, Phi); /* Phi = Y X^T / m */
  for (int k = 0; k < 15; k++) Phi[k] /= n;
  ds_model_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.init = DS_INIT_GAUSSIAN;
  sp.init_scale = 1.0;
  ds_mlp_init_weights(&m, &sp, &r, th);
  ds_loss l;
  ds_loss_spec ls = {DS_LOSS_MSE, DS_RED_HALF_MEAN, 2, 0}; /* 1/(2m) ||W X - Y||^2 */
  ds_loss_setup(&l, &ls, n);
  ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
  double *E = prod_range(&m, th, 1, N), G[15];
  for (int k = 0; k < 15; k++) G[k] = E[k] - Phi[k];
  /* the gradient is W_{j+1:N}^T G W_{1:j-1}^T */
  double worst = 0;
  for (int j = 1; j <= N; j++) {
    double *Pa = prod_range(&m, th, j + 1, N), *Pb = prod_range(&m, th, 1, j - 1);
    int dj = dims[j], dj1 = dims[j - 1];
    double *T = vec((size_t)dj * 5), *Gj = vec((size_t)dj * dj1);
    matmul(1, 0, dj, 5, 3, Pa, 3, G, 3, T);       /* W_{j+1:N}^T G  (dj x d0) */
    matmul(0, 1, dj, dj1, 5, T, dj, Pb, dj1, Gj); /* ... W_{1:j-1}^T */
    double nrm = sqrt(dot(Gj, Gj, (size_t)dj * dj1));
    worst = fmax(worst, fro_diff(Gj, g + m.w_off[j - 1], (size_t)dj * dj1) / nrm);
    free(Pa), free(Pb), free(T), free(Gj);
  }
  CHECK(worst < 1e-12, "whitened data: gradient = W_{j+1:N}^T (W_{1:N} - Phi) W_{1:j-1}^T (%.3g)",
        worst);
  /* one GD step; B_j(t+1) - B_j(t) against the exact eta^2 identity */
  const double eta = 0.05;
  for (size_t p = 0; p < P; p++) th1[p] = th[p] - eta * g[p];
  worst = 0;
  for (int j = 1; j < N; j++) {
    int dj = dims[j];
    size_t dd = (size_t)dj * dj;
    double *B0 = vec(dd), *B1 = vec(dd), *T1 = vec(dd), *T2 = vec(dd), *pred = vec(dd);
    const double *thv[2] = {th, th1};
    double *Bv[2] = {B0, B1};
    for (int s = 0; s < 2; s++) { /* B_j = W_{j+1}^T W_{j+1} - W_j W_j^T */
      const double *Wn = thv[s] + m.w_off[j], *Wj = thv[s] + m.w_off[j - 1];
      matmul(1, 0, dj, dj, dims[j + 1], Wn, dims[j + 1], Wn, dims[j + 1], T1);
      matmul(0, 1, dj, dj, dims[j - 1], Wj, dj, Wj, dj, T2);
      for (size_t k = 0; k < dd; k++) Bv[s][k] = T1[k] - T2[k];
    }
    /* first term: W_{1:j} G^T W_{j+2:N} W_{j+2:N}^T G W_{1:j}^T, via M1 = W_{j+2:N}^T G W_{1:j}^T */
    double *P1j = prod_range(&m, th, 1, j), *Pc = prod_range(&m, th, j + 2, N);
    double *P1j1 = prod_range(&m, th, 1, j - 1), *Pa = prod_range(&m, th, j + 1, N);
    int dj2 = dims[j + 1];
    double *T = vec((size_t)dj2 * 5), *M1 = vec((size_t)dj2 * dj), *M2 = vec((size_t)dj * dims[j - 1]);
    matmul(1, 0, dj2, 5, 3, Pc, 3, G, 3, T);
    matmul(0, 1, dj2, dj, 5, T, dj2, P1j, dj, M1); /* dj2 x dj */
    matmul(1, 0, dj, dj, dj2, M1, dj2, M1, dj2, T1); /* M1^T M1 */
    double *T3 = vec((size_t)dj * 5);
    matmul(1, 0, dj, 5, 3, Pa, 3, G, 3, T3);
    matmul(0, 1, dj, dims[j - 1], 5, T3, dj, P1j1, dims[j - 1], M2); /* W_{j+1:N}^T G W_{1:j-1}^T */
    matmul(0, 1, dj, dj, dims[j - 1], M2, dj, M2, dj, T2);           /* M2 M2^T */
    for (size_t k = 0; k < dd; k++) pred[k] = eta * eta * (T1[k] - T2[k]);
    double dif = 0, nrm = 0;
    for (size_t k = 0; k < dd; k++) {
      double act = B1[k] - B0[k];
      dif += (act - pred[k]) * (act - pred[k]);
      nrm += pred[k] * pred[k];
    }
    worst = fmax(worst, sqrt(dif / nrm));
    free(B0), free(B1), free(T1), free(T2), free(pred), free(P1j), free(Pc), free(P1j1), free(Pa);
    free(T), free(M1), free(M2), free(T3);
  }
  printf("balancedness drift identity: rel err %.2g\n", worst);
  CHECK(worst < 1e-9, "balancedness drift identity, one GD step: rel err %.3g", worst);
  free(E), free(th), free(th1), free(g);
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

/* Claim 4: N = 4, Phi = 1, scalar net; unbalanced init with W_{1:N}(0) = c explodes */
static void test_claim4(void) {
  const int N = 4;
  int dims[] = {1, 1, 1, 1, 1};
  ds_mlp m;
  ds_mlp_work w;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, N, dims);
  ds_mlp_work_init(&m, 1, &w);
  double th[4], g[4], X[] = {1.0}, Y[] = {1.0};
  const double c = 0.9, cr = pow(c, 1.0 / N);
  ds_loss l = {DS_LOSS_MSE, 2.0, 0.5}; /* 1/2 (W_{1:N} - 1)^2 */
  const double etas[] = {1e-3, 1e-2, 0.1, 0.5};
  for (int k = 0; k < 4; k++) {
    double eta = etas[k];
    /* A per Eq. (50) of the proof */
    double A = fmax(fmax(sqrt(eta * N), 2.0 / (eta * (1 - c) * pow(c, (N - 1.0) / N))),
                    fmax(fmax(2000.0, 20.0 / eta), pow(20.0 * pow(10.0, 2 * N - 1) / pow(eta, 2 * N),
                                                       1.0 / (2 * N - 2))));
    for (int j = 0; j < N; j++) th[j] = j < N / 2 ? A * cr : cr / A;
    double L0 = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
    int t, above = 1;
    double L = L0;
    for (t = 1; t <= 20; t++) {
      for (int j = 0; j < N; j++) th[j] -= eta * g[j];
      L = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
      if (!isfinite(L)) break;
      above &= L >= 0.5 * pow(pow(2.0, N) - 1, 2); /* Lemma 17 */
    }
    CHECK(fabs(L0 - 0.5 * (1 - c) * (1 - c)) < 1e-12, "Claim 4: margin-c start (L0 %g)", L0);
    CHECK(!isfinite(L) && t <= 8 && above,
          "Claim 4, eta %g, A %.3g: loss overflows (step %d, L %g), stays >= (2^N-1)^2/2", eta,
          A, t, L);
    /* balanced: W_j = c^{1/N}, same product, converges */
    for (int j = 0; j < N; j++) th[j] = cr;
    if (eta <= 0.1) {
      L = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
      int mono = 1;
      for (t = 0; t < 20000 && L > 1e-20; t++) {
        for (int j = 0; j < N; j++) th[j] -= eta * g[j];
        double L1 = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
        mono &= L1 <= L;
        L = L1;
      }
      CHECK(L <= 1e-20 && mono, "Claim 4, eta %g: balanced init converges monotonically (L %g)",
            eta, L);
    }
  }
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

/* Claim 5: Phi symmetric with eigenvalue -lambda, identity init: loss >= lambda^2/2 */
static void test_claim5(void) {
  const int N = 4, d = 2, n = 2;
  int dims[] = {2, 2, 2, 2, 2};
  ds_mlp m;
  ds_mlp_work w;
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, N, dims);
  ds_mlp_work_init(&m, n, &w);
  double th[16], g[16], X[4], Y[4], Phi[4];
  const double lam = 1.0, ang = 0.3, cs = cos(ang), sn = sin(ang);
  /* Phi = R diag(-lam, 2) R^T */
  double Rm[4] = {cs, sn, -sn, cs}, D[2] = {-lam, 2.0};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) Phi[j * 2 + i] = Rm[i] * D[0] * Rm[j] + Rm[2 + i] * D[1] * Rm[2 + j];
  for (int k = 0; k < 4; k++) X[k] = (k % 3 == 0) ? sqrt(2.0) : 0.0; /* (1/m) X X^T = I */
  matmul(0, 0, 2, 2, 2, Phi, 2, X, 2, Y);
  ds_loss l;
  ds_loss_spec ls = {DS_LOSS_MSE, DS_RED_HALF_MEAN, 2, 0};
  ds_loss_setup(&l, &ls, n);
  ds_model_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.init = DS_INIT_BALANCED;
  sp.balanced_identity = 1;
  sp.init_scale = 1.0;
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_INIT);
  const double etas[] = {1e-3, 1e-2, 0.1, 0.2};
  (void)d;
  for (int k = 0; k < 4; k++) {
    ds_mlp_init_weights(&m, &sp, &r, th);
    double Lmin = INFINITY, L = 0;
    for (int t = 0; t < 3000; t++) {
      L = ds_mlp_loss_grad_l(&m, th, X, Y, &l, g, &w);
      Lmin = fmin(Lmin, L);
      for (int p = 0; p < 16; p++) th[p] -= etas[k] * g[p];
    }
    CHECK(Lmin >= 0.5 * lam * lam * (1 - 1e-12) && isfinite(L),
          "Claim 5, eta %g: min loss %.15g >= lambda^2/2 (final %.15g)", etas[k], Lmin, L);
  }
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

/* ---- seed 000: Def. 4, B^l -> I ------------------------------------------------------------ */

static void test_def4_width(void) {
  const int widths[] = {16, 64, 256, 1024}, reps[] = {40, 20, 10, 6}, d0 = 4;
  double mean[4][2];
  for (int wi = 0; wi < 4; wi++) {
    int h = widths[wi];
    int dims[] = {d0, h, h, 3};
    ds_mlp m;
    ds_mlp_init(&m, DS_ACT_LINEAR, 0, 3, dims);
    double *th = vec(m.nparams), *Q2 = vec((size_t)h * d0), B[16];
    ds_model_spec sp;
    memset(&sp, 0, sizeof sp);
    sp.init = DS_INIT_DEF4;
    sp.init_scale = 1.0;
    mean[wi][0] = mean[wi][1] = 0;
    for (int rep = 0; rep < reps[wi]; rep++) {
      ds_rng r;
      ds_rng_init(&r, 100, (uint64_t)h, (uint32_t)rep, DS_STREAM_INIT);
      ds_mlp_init_weights(&m, &sp, &r, th);
      const double *W1 = th + m.w_off[0], *W2 = th + m.w_off[1];
      for (int l = 2; l <= 3; l++) { /* Q^l = W_{l-1} ... W_1; B^l = Q^T Q (d0 x d0) */
        const double *Q = W1;
        int rows = h;
        if (l == 3) {
          matmul(0, 0, h, d0, h, W2, h, W1, h, Q2);
          Q = Q2;
        }
        matmul(1, 0, d0, d0, rows, Q, rows, Q, rows, B);
        double e = 0;
        for (int i = 0; i < d0; i++)
          for (int j = 0; j < d0; j++) e += pow(B[j * d0 + i] - (i == j), 2);
        mean[wi][l - 2] += sqrt(e) / reps[wi];
      }
    }
    free(th), free(Q2);
    ds_mlp_free(&m);
  }
  for (int l = 0; l < 2; l++) {
    int dec = 1;
    for (int wi = 1; wi < 4; wi++) dec &= mean[wi][l] < mean[wi - 1][l];
    /* least-squares slope of log ||B - I|| on log m: -1/2 */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int wi = 0; wi < 4; wi++) {
      double x = log(widths[wi]), y = log(mean[wi][l]);
      sx += x, sy += y, sxx += x * x, sxy += x * y;
    }
    double slope = (4 * sxy - sx * sy) / (4 * sxx - sx * sx);
    printf("Def. 4: mean ||B^%d - I||_F = %.3g %.3g %.3g %.3g (widths 16 64 256 1024), slope %.3f\n",
           l + 2, mean[0][l], mean[1][l], mean[2][l], mean[3][l], slope);
    CHECK(dec && fabs(slope + 0.5) < 0.1,
          "Def. 4: ||B^%d - I||_F %.3g %.3g %.3g %.3g over widths 16..1024, log-log slope %.3f",
          l + 2, mean[0][l], mean[1][l], mean[2][l], mean[3][l], slope);
  }
}

int main(void) {
  test_nqm_recurrence();
  test_catapult_single();
  test_catapult_multi();
  test_balancedness_drift();
  test_claim4();
  test_claim5();
  test_def4_width();
  return ds_check_report("test_science");
}
