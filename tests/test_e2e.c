/* test_e2e.c -- seed 002's end-to-end update (Eq. 9) in ds_e2e_step:
 *  (a) depth 1 is a plain GD step (with coupled weight decay);
 *  (b) d_out = 1: Eq. 11, W <- (1 - lr wd N) W - lr ||W||^{2-2/N} (G + (N-1) Pr_W(G)),
 *      agrees with Eq. 9 to round-off; general shapes agree with a slow
 *      reference that forms the fractional matrix powers by dsyev;
 *  (c) deep GD on a balanced linear net (ds_mlp) tracks the e2e iteration with
 *      a gap ||W_deep - W_e||_F / ||W_deep||_F at fixed horizon lr*t that
 *      shrinks in proportion to lr. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/util.h"

void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info);

static void randn(ds_rng *r, double *x, size_t n, double s) {
  for (size_t i = 0; i < n; i++) x[i] = s * ds_rng_normal(r);
}

static double fro_diff_rel(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* P = S^p for symmetric PSD S (k x k): eigenvalues below 1e-12 * max set to 0,
 * then 0^0 = 1 (C pow) */
static void mpow(const double *S, int k, double p, double *P) {
  double *Q = malloc((size_t)k * k * sizeof *Q), *w = malloc((size_t)k * sizeof *w);
  memcpy(Q, S, (size_t)k * k * sizeof *Q);
  int lwork = 64 * k + 64, info = 0;
  double *work = malloc((size_t)lwork * sizeof *work);
  dsyev_("V", "U", &k, Q, &k, w, work, &lwork, &info);
  CHECK(info == 0, "dsyev info %d", info);
  double mx = 0;
  for (int i = 0; i < k; i++) mx = fmax(mx, w[i]);
  for (int i = 0; i < k; i++) w[i] = w[i] < 1e-12 * mx ? pow(0.0, p) : pow(w[i], p);
  for (int a = 0; a < k; a++)
    for (int b = 0; b < k; b++) {
      double s = 0;
      for (int i = 0; i < k; i++) s += Q[a + (size_t)i * k] * w[i] * Q[b + (size_t)i * k];
      P[a + (size_t)b * k] = s;
    }
  free(Q);
  free(w);
  free(work);
}

/* Eq. 9 literally: W' = (1 - lr wd N) W - lr sum_j [W W^T]^{(j-1)/N} G [W^T W]^{(N-j)/N} */
static void e2e_reference(double *W, int m, int n, int N, const double *G, double lr, double wd) {
  double *A = malloc((size_t)m * m * sizeof *A), *B = malloc((size_t)n * n * sizeof *B);
  double *Ap = malloc((size_t)m * m * sizeof *Ap), *Bp = malloc((size_t)n * n * sizeof *Bp);
  double *T = malloc((size_t)m * n * sizeof *T), *D = calloc((size_t)m * n, sizeof *D);
  for (int a = 0; a < m; a++)
    for (int b = 0; b < m; b++) {
      double s = 0;
      for (int k = 0; k < n; k++) s += W[a + (size_t)k * m] * W[b + (size_t)k * m];
      A[a + (size_t)b * m] = s;
    }
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      double s = 0;
      for (int k = 0; k < m; k++) s += W[k + (size_t)a * m] * W[k + (size_t)b * m];
      B[a + (size_t)b * n] = s;
    }
  for (int j = 1; j <= N; j++) {
    mpow(A, m, (double)(j - 1) / N, Ap);
    mpow(B, n, (double)(N - j) / N, Bp);
    for (int a = 0; a < m; a++) /* T = G Bp */
      for (int b = 0; b < n; b++) {
        double s = 0;
        for (int k = 0; k < n; k++) s += G[a + (size_t)k * m] * Bp[k + (size_t)b * n];
        T[a + (size_t)b * m] = s;
      }
    for (int a = 0; a < m; a++) /* D += Ap T */
      for (int b = 0; b < n; b++) {
        double s = 0;
        for (int k = 0; k < m; k++) s += Ap[a + (size_t)k * m] * T[k + (size_t)b * m];
        D[a + (size_t)b * m] += s;
      }
  }
  for (size_t i = 0; i < (size_t)m * n; i++) W[i] = (1 - lr * wd * N) * W[i] - lr * D[i];
  free(A);
  free(B);
  free(Ap);
  free(Bp);
  free(T);
  free(D);
}

static void test_depth1(void) {
  ds_rng r;
  ds_rng_init(&r, 7, 0, 0, 1);
  const int m = 3, n = 5;
  double W[15], G[15], W2[15];
  randn(&r, W, 15, 1);
  randn(&r, G, 15, 1);
  memcpy(W2, W, sizeof W);
  CHECK(ds_e2e_step(W, m, n, 1, G, 0.1, 0.0) == DS_OK, "depth 1");
  ds_gd_step(W2, G, 15, 0.1);
  CHECK(fro_diff_rel(W, W2, 15) < 1e-15, "depth 1 == GD: %g", fro_diff_rel(W, W2, 15));
  /* with weight decay: the coupled GD step of ds_optim */
  randn(&r, W, 15, 1);
  memcpy(W2, W, sizeof W);
  CHECK(ds_e2e_step(W, m, n, 1, G, 0.1, 0.3) == DS_OK, "depth 1 wd");
  ds_optim_spec s;
  memset(&s, 0, sizeof s);
  s.type = DS_OPT_GD;
  s.weight_decay = 0.3;
  ds_optim o;
  ds_optim_init(&o, &s, 15);
  ds_optim_step(&o, W2, G, 0.1);
  ds_optim_free(&o);
  CHECK(fro_diff_rel(W, W2, 15) < 1e-15, "depth 1 wd == GD wd: %g", fro_diff_rel(W, W2, 15));
}

static void test_eq11(void) {
  ds_rng r;
  ds_rng_init(&r, 7, 1, 0, 1);
  const int d = 6;
  static const int depths[] = {2, 3, 4, 8};
  for (int di = 0; di < 4; di++)
    for (int trial = 0; trial < 3; trial++) {
      const int N = depths[di];
      const double lr = 0.05, wd = trial == 2 ? 0.01 : 0.0;
      double W[6], G[6], W11[6];
      randn(&r, W, d, trial == 1 ? 1e-3 : 1.0); /* near zero too */
      randn(&r, G, d, 1);
      double nw = 0, wg = 0;
      for (int i = 0; i < d; i++) {
        nw += W[i] * W[i];
        wg += W[i] * G[i];
      }
      nw = sqrt(nw);
      const double f = pow(nw, 2 - 2.0 / N);
      for (int i = 0; i < d; i++) {
        double pr = wg / nw * W[i] / nw; /* Pr_W(G) = (W/|W|) G^T (W/|W|) */
        W11[i] = (1 - lr * wd * N) * W[i] - lr * f * (G[i] + (N - 1) * pr);
      }
      CHECK(ds_e2e_step(W, 1, d, N, G, lr, wd) == DS_OK, "e2e 1 x d");
      double e = fro_diff_rel(W, W11, d);
      CHECK(e < 1e-14, "Eq. 9 vs Eq. 11, N=%d trial %d: rel diff %.3g", N, trial, e);
    }
  /* column vector (d x 1): the mirror image, ||W||^{2-2/N} (G + (N-1) W W^T G / |W|^2) */
  {
    const int N = 3;
    double W[6], G[6], Wc[6];
    randn(&r, W, d, 1);
    randn(&r, G, d, 1);
    double nw = 0, wg = 0;
    for (int i = 0; i < d; i++) nw += W[i] * W[i], wg += W[i] * G[i];
    const double f = pow(sqrt(nw), 2 - 2.0 / N);
    for (int i = 0; i < d; i++) Wc[i] = W[i] - 0.1 * f * (G[i] + (N - 1) * wg / nw * W[i]);
    CHECK(ds_e2e_step(W, d, 1, N, G, 0.1, 0) == DS_OK, "e2e d x 1");
    CHECK(fro_diff_rel(W, Wc, d) < 1e-14, "d x 1: %g", fro_diff_rel(W, Wc, d));
  }
  /* W = 0: Pr_0 = 0 and ||0||^{2-2/N} = 0 -> no move for N >= 2 */
  {
    double W[6] = {0}, G[6] = {1, 2, 3, 4, 5, 6};
    CHECK(ds_e2e_step(W, 1, d, 3, G, 0.1, 0.5) == DS_OK, "W = 0");
    int zero = 1;
    for (int i = 0; i < d; i++) zero &= W[i] == 0;
    CHECK(zero, "W = 0 stays 0 at depth 3");
  }
}

static void test_eq9_general(void) {
  ds_rng r;
  ds_rng_init(&r, 7, 2, 0, 1);
  static const int shapes[][2] = {{3, 5}, {5, 3}, {4, 4}, {2, 7}, {7, 2}};
  static const int depths[] = {2, 3, 5};
  double worst = 0;
  for (int si = 0; si < 5; si++)
    for (int di = 0; di < 3; di++)
      for (int kind = 0; kind < 2; kind++) {
        const int m = shapes[si][0], n = shapes[si][1], N = depths[di];
        const size_t mn = (size_t)m * n;
        double W[64], Wr[64], G[64];
        if (kind == 0) {
          randn(&r, W, mn, 0.7);
        } else { /* rank 1: u v^T */
          double u[8], v[8];
          randn(&r, u, m, 1);
          randn(&r, v, n, 1);
          for (int b = 0; b < n; b++)
            for (int a = 0; a < m; a++) W[a + (size_t)b * m] = u[a] * v[b];
        }
        randn(&r, G, mn, 1);
        memcpy(Wr, W, mn * sizeof *W);
        if (kind == 1) { /* analytic: W = sig u v^T (unit u, v) gives
          * D = sig^{2(N-1)/N} (G v v^T + u u^T G + (N-2) (u^T G v) u v^T) */
          double u[8], v[8], nu = 0, nv = 0, Wa[64];
          for (int a = 0; a < m; a++) nu += W[a] * W[a];
          for (int a = 0; a < m; a++) u[a] = W[a] / sqrt(nu);
          for (int b = 0; b < n; b++) {
            v[b] = 0;
            for (int a = 0; a < m; a++) v[b] += W[a + (size_t)b * m] * u[a];
            nv += v[b] * v[b];
          }
          const double sig = sqrt(nv);
          for (int b = 0; b < n; b++) v[b] /= sig;
          double Gv[8] = {0}, uG[8] = {0}, uGv = 0;
          for (int a = 0; a < m; a++)
            for (int b = 0; b < n; b++) {
              Gv[a] += G[a + (size_t)b * m] * v[b];
              uG[b] += u[a] * G[a + (size_t)b * m];
            }
          for (int a = 0; a < m; a++) uGv += u[a] * Gv[a];
          const double f = pow(sig, 2.0 * (N - 1) / N);
          for (int a = 0; a < m; a++)
            for (int b = 0; b < n; b++)
              Wa[a + (size_t)b * m] = (1 - 0.03 * 0.02 * N) * W[a + (size_t)b * m] -
                                      0.03 * f * (Gv[a] * v[b] + u[a] * uG[b] + (N - 2) * uGv * u[a] * v[b]);
          double W2[64];
          memcpy(W2, W, mn * sizeof *W);
          CHECK(ds_e2e_step(W2, m, n, N, G, 0.03, 0.02) == DS_OK, "e2e rank 1");
          double ea = fro_diff_rel(W2, Wa, mn);
          CHECK(ea < 1e-13, "Eq. 9 rank 1 %dx%d N=%d vs analytic: %.3g", m, n, N, ea);
        }
        CHECK(ds_e2e_step(W, m, n, N, G, 0.03, 0.02) == DS_OK, "e2e %dx%d", m, n);
        e2e_reference(Wr, m, n, N, G, 0.03, 0.02);
        double e = fro_diff_rel(W, Wr, mn);
        if (e > worst) worst = e;
        CHECK(e < 1e-12, "Eq. 9 %dx%d N=%d %s: rel diff %.3g", m, n, N,
              kind ? "rank 1" : "full rank", e);
      }
  printf("Eq. 9 vs dsyev reference: worst rel diff %.3g\n", worst);
  /* errors and non-finite input */
  double W[4] = {1, 0, 0, 1}, G[4] = {1, 1, 1, 1};
  CHECK(ds_e2e_step(W, 2, 2, 0, G, 0.1, 0) == DS_EINPUT, "depth 0 refused");
  CHECK(ds_e2e_step(W, 0, 2, 2, G, 0.1, 0) == DS_EINPUT, "0 rows refused");
  ds_clear_error();
  W[1] = NAN;
  CHECK(ds_e2e_step(W, 2, 2, 3, G, 0.1, 0) == DS_OK && isnan(W[1]), "NaN propagates");
}

/* y = W X: loss (1/2n) ||W X - Y||_F^2, end-to-end gradient G = (1/n)(W X - Y) X^T */
static void e2e_grad(const double *W, const double *X, const double *Y, int dout, int din, int n,
                     double *G) {
  double *R = malloc((size_t)dout * n * sizeof *R);
  for (int s = 0; s < n; s++)
    for (int o = 0; o < dout; o++) {
      double f = 0;
      for (int i = 0; i < din; i++) f += W[o + (size_t)i * dout] * X[i + (size_t)s * din];
      R[o + (size_t)s * dout] = f - Y[o + (size_t)s * dout];
    }
  for (int i = 0; i < din; i++)
    for (int o = 0; o < dout; o++) {
      double g = 0;
      for (int s = 0; s < n; s++) g += R[o + (size_t)s * dout] * X[i + (size_t)s * din];
      G[o + (size_t)i * dout] = g / n;
    }
  free(R);
}

/* product W_N ... W_1 of the net's weights (dout x din) */
static void end_to_end(const ds_mlp *m, const double *theta, double *We) {
  const int *d = m->dims;
  int rows = d[1];
  double *P = malloc((size_t)d[0] * d[1] * sizeof *P), *Q;
  memcpy(P, theta + m->w_off[0], (size_t)d[0] * d[1] * sizeof *P);
  for (int l = 2; l <= m->depth; l++) {
    const double *Wl = theta + m->w_off[l - 1];
    Q = malloc((size_t)d[l] * d[0] * sizeof *Q);
    for (int a = 0; a < d[l]; a++)
      for (int b = 0; b < d[0]; b++) {
        double s = 0;
        for (int k = 0; k < rows; k++) s += Wl[a + (size_t)k * d[l]] * P[k + (size_t)b * rows];
        Q[a + (size_t)b * d[l]] = s;
      }
    free(P);
    P = Q;
    rows = d[l];
  }
  memcpy(We, P, (size_t)d[0] * d[m->depth] * sizeof *We);
  free(P);
}

/* Deep GD from a balanced init vs Eq. 9, at horizon lr*t = T; returns the gap. */
static double deep_vs_e2e(int din, int dout, int h, int N, double lr, double T, double wd) {
  const int n = 24;
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)dout, (uint32_t)N, 1);
  double *X = malloc((size_t)din * n * sizeof *X), *Y = malloc((size_t)dout * n * sizeof *Y);
  double Tm[64];
  randn(&r, X, (size_t)din * n, 1);
  randn(&r, Tm, (size_t)dout * din, 1);
  for (int s = 0; s < n; s++)
    for (int o = 0; o < dout; o++) {
      double y = 0;
      for (int i = 0; i < din; i++) y += Tm[o + (size_t)i * dout] * X[i + (size_t)s * din];
      Y[o + (size_t)s * dout] = y;
    }
  /* W_e(0) = U S V^T: U (dout x k) = identity columns rotated, S = diag(0.5, 0.3, ...),
   * V (din x k) by Gram-Schmidt of Gaussian columns, k = dout <= h, din */
  const int k = dout;
  double V[64], U[64], S[8];
  randn(&r, V, (size_t)din * k, 1);
  for (int c = 0; c < k; c++) {
    for (int p = 0; p < c; p++) {
      double dot = 0;
      for (int i = 0; i < din; i++) dot += V[i + (size_t)c * din] * V[i + (size_t)p * din];
      for (int i = 0; i < din; i++) V[i + (size_t)c * din] -= dot * V[i + (size_t)p * din];
    }
    double nr = 0;
    for (int i = 0; i < din; i++) nr += V[i + (size_t)c * din] * V[i + (size_t)c * din];
    for (int i = 0; i < din; i++) V[i + (size_t)c * din] /= sqrt(nr);
    S[c] = 0.5 / (1 + c);
  }
  const double ang = 0.7;
  for (int a = 0; a < dout; a++)
    for (int c = 0; c < k; c++) U[a + (size_t)c * dout] = a == c ? 1 : 0;
  if (dout >= 2) { /* rotate the first two */
    U[0] = cos(ang), U[1] = sin(ang), U[0 + dout] = -sin(ang), U[1 + dout] = cos(ang);
  }
  /* balanced layers: W_1 = E S^{1/N} V^T, W_j = E S^{1/N} E^T, W_N = U S^{1/N} E^T,
   * E = first k columns of the identity; then W_{j+1}^T W_{j+1} = W_j W_j^T */
  int dims[16];
  dims[0] = din;
  for (int l = 1; l < N; l++) dims[l] = h;
  dims[N] = dout;
  ds_mlp net;
  CHECK(ds_mlp_init(&net, DS_ACT_LINEAR, 0, N, dims) == DS_OK, "mlp init");
  double *th = calloc(net.nparams, sizeof *th), *g = malloc(net.nparams * sizeof *g);
  for (int l = 1; l <= N; l++) {
    double *Wl = th + net.w_off[l - 1];
    const int rl = dims[l], cl = dims[l - 1];
    for (int c = 0; c < k; c++) {
      const double sc = pow(S[c], 1.0 / N);
      for (int a = 0; a < rl; a++)
        for (int b = 0; b < cl; b++) {
          double left = l == N ? U[a + (size_t)c * dout] : (a == c ? 1.0 : 0.0);
          double right = l == 1 ? V[b + (size_t)c * din] : (b == c ? 1.0 : 0.0);
          Wl[a + (size_t)b * rl] += left * sc * right;
        }
    }
  }
  double We[64], Wd[64], G[64];
  end_to_end(&net, th, We);
  /* initial product = U S V^T */
  double init_err = 0;
  for (int a = 0; a < dout; a++)
    for (int b = 0; b < din; b++) {
      double s = 0;
      for (int c = 0; c < k; c++) s += U[a + (size_t)c * dout] * S[c] * V[b + (size_t)c * din];
      init_err = fmax(init_err, fabs(s - We[a + (size_t)b * dout]));
    }
  CHECK(init_err < 1e-14, "balanced init product: %g", init_err);

  ds_mlp_work w;
  CHECK(ds_mlp_work_init(&net, n, &w) == DS_OK, "work");
  const long steps = lround(T / lr);
  double L0 = 0, L1 = 0;
  for (long t = 0; t < steps; t++) {
    double L = ds_mlp_loss_grad(&net, th, X, Y, 0.5 / n, g, &w);
    if (t == 0) L0 = L;
    for (size_t i = 0; i < net.nparams; i++) g[i] += wd * th[i]; /* L2 on every layer */
    ds_gd_step(th, g, net.nparams, lr);
    e2e_grad(We, X, Y, dout, din, n, G);
    CHECK(ds_e2e_step(We, dout, din, N, G, lr, wd) == DS_OK, "e2e step");
  }
  L1 = ds_mlp_loss(&net, th, X, Y, 0.5 / n, &w);
  end_to_end(&net, th, Wd);
  double gap = fro_diff_rel(We, Wd, (size_t)dout * din);
  printf("deep(N=%d, %dx%d, h=%d, wd %g) vs e2e: lr %.4g, %ld steps, loss %.4g -> %.4g, gap %.3e\n",
         N, dout, din, h, wd, lr, steps, L0, L1, gap);
  CHECK(L1 < 0.5 * L0, "training made progress: %g -> %g", L0, L1);
  ds_mlp_work_free(&w);
  ds_mlp_free(&net);
  free(th);
  free(g);
  free(X);
  free(Y);
  return gap;
}

static void test_deep_tracks_e2e(void) {
  static const struct {
    int din, dout, h, N;
    double wd;
  } cfg[] = {{6, 1, 5, 3, 0}, {6, 1, 1, 2, 0}, {5, 2, 3, 3, 0}, {4, 3, 4, 2, 0}, {5, 2, 4, 3, 0.05}};
  for (int i = 0; i < 5; i++) {
    const double lr = 0.02, T = 2.0;
    double g1 = deep_vs_e2e(cfg[i].din, cfg[i].dout, cfg[i].h, cfg[i].N, lr, T, cfg[i].wd);
    double g2 = deep_vs_e2e(cfg[i].din, cfg[i].dout, cfg[i].h, cfg[i].N, lr / 4, T, cfg[i].wd);
    CHECK(g1 < 0.05 && g2 > 0, "gap at lr %g: %g", lr, g1);
    CHECK(g1 / g2 > 2.5 && g1 / g2 < 6, "gap ratio %g (want ~4: O(lr))", g1 / g2);
  }
}

int main(void) {
  test_depth1();
  test_eq11();
  test_eq9_general();
  test_deep_tracks_e2e();
  return ds_check_report("test_e2e");
}
