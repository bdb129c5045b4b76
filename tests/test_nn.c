/* test_nn.c -- MLP forward/backward against hand-computed values and central
 * finite differences; loss, init, flop count, determinism. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/nn.h"

/* ---- known answers --------------------------------------------------------- */

static void test_forward_known(void) {
  /* dims 2 -> 2 -> 1, ReLU, bias.
   * W1 = [1 -2; 3 0.5] (column-major {1,3,-2,0.5}), b1 = [0.5; -1],
   * W2 = [2 -1], b2 = 0.25; x1 = (1, 1), x2 = (-1, 2).
   * x1: Z1 = (1-2+0.5, 3+0.5-1) = (-0.5, 2.5), A1 = (0, 2.5), F = -2.5+0.25 = -2.25
   * x2: Z1 = (-1-4+0.5, -3+1-1) = (-4.5, -3), A1 = (0, 0), F = 0.25 */
  int dims[] = {2, 2, 1};
  ds_mlp m;
  ds_mlp_work w;
  CHECK(ds_mlp_init(&m, DS_ACT_RELU, 1, 2, dims) == DS_OK, "init");
  CHECK(m.nparams == 9, "nparams %zu", m.nparams);
  CHECK(ds_mlp_work_init(&m, 2, &w) == DS_OK, "work");
  double theta[9];
  double W1[] = {1, 3, -2, 0.5}, b1[] = {0.5, -1}, W2[] = {2, -1}, b2[] = {0.25};
  memcpy(theta + m.w_off[0], W1, sizeof W1);
  memcpy(theta + m.b_off[0], b1, sizeof b1);
  memcpy(theta + m.w_off[1], W2, sizeof W2);
  memcpy(theta + m.b_off[1], b2, sizeof b2);
  double X[] = {1, 1, -1, 2};
  const double *F = ds_mlp_forward(&m, theta, X, &w);
  CHECK(F[0] == -2.25 && F[1] == 0.25, "F = (%g, %g)", F[0], F[1]);
  CHECK(w.Z[1][0] == -0.5 && w.Z[1][1] == 2.5 && w.A[1][0] == 0 && w.A[1][1] == 2.5, "layer 1");
  /* the same net, linear: x1: Z1 = (-0.5, 2.5) -> F = -1 - 2.5 + 0.25 = -3.25
   * x2: Z1 = (-4.5, -3) -> F = -9 + 3 + 0.25 = -5.75 */
  ds_mlp lin;
  ds_mlp_work wl;
  ds_mlp_init(&lin, DS_ACT_LINEAR, 1, 2, dims);
  ds_mlp_work_init(&lin, 2, &wl);
  F = ds_mlp_forward(&lin, theta, X, &wl);
  CHECK(F[0] == -3.25 && F[1] == -5.75, "linear F = (%g, %g)", F[0], F[1]);
  /* loss with Y = (0, 1), c = 1/2: 0.5 * (3.25^2 + 6.75^2) = 28.0625;
   * grad: dF = (-3.25, -6.75); db2 = -10; dW2 = dF A1^T =
   * (-3.25*-0.5 + -6.75*-4.5, -3.25*2.5 + -6.75*-3) = (32.0, 12.125) */
  double Y[] = {0, 1}, g[9];
  double loss = ds_mlp_loss_grad(&lin, theta, X, Y, 0.5, g, &wl);
  CHECK(loss == 28.0625, "loss %g", loss);
  CHECK(g[lin.b_off[1]] == -10.0, "db2 %g", g[lin.b_off[1]]);
  CHECK(g[lin.w_off[1]] == 32.0 && g[lin.w_off[1] + 1] == 12.125, "dW2 = (%g, %g)",
        g[lin.w_off[1]], g[lin.w_off[1] + 1]);
  ds_mlp_work_free(&wl);
  ds_mlp_free(&lin);
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

static void test_loss_known(void) {
  double F[] = {1.0, -2.0, 0.5}, Y[] = {0.0, 1.0, 0.5}, dF[3];
  /* residuals (1, -3, 0): sum of squares 10 */
  double l = ds_loss_mse(F, Y, 3, 0.25, dF);
  CHECK(l == 2.5, "loss %g", l);
  CHECK(dF[0] == 0.5 && dF[1] == -1.5 && dF[2] == 0.0, "dF (%g %g %g)", dF[0], dF[1], dF[2]);
  CHECK(ds_loss_mse(F, Y, 3, 1.0, NULL) == 10.0, "loss without grad");
}

static void test_layout_and_flops(void) {
  int dims[] = {3, 5, 2};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_LINEAR, 1, 2, dims);
  CHECK(m.nparams == 15 + 5 + 10 + 2, "nparams %zu", m.nparams);
  CHECK(m.w_off[0] == 0 && m.b_off[0] == 15 && m.w_off[1] == 20 && m.b_off[1] == 30, "offsets");
  /* fwd 2n(15 + 10) = 50n; bwd 2*50n - 2n*15 = 70n; total 120n */
  CHECK(ds_mlp_step_flops(&m, 7) == 120.0 * 7, "flops %g", ds_mlp_step_flops(&m, 7));
  ds_mlp_free(&m);
  ds_mlp_init(&m, DS_ACT_RELU, 0, 2, dims);
  CHECK(m.nparams == 25 && m.w_off[1] == 15, "no-bias layout");
  ds_mlp_free(&m);
  int bad[] = {3, 0, 2};
  CHECK(ds_mlp_init(&m, DS_ACT_LINEAR, 0, 2, bad) == DS_EINPUT, "zero width rejected");
  CHECK(ds_mlp_init(&m, DS_ACT_LINEAR, 0, 0, dims) == DS_EINPUT, "depth 0 rejected");
  CHECK(ds_mlp_init(&m, 7, 0, 2, dims) == DS_EINPUT, "bad activation rejected");
}

static void test_init_gaussian(void) {
  int dims[] = {4, 3, 2};
  ds_mlp m;
  ds_mlp_init(&m, DS_ACT_RELU, 1, 2, dims);
  double *th = malloc(m.nparams * sizeof *th);
  ds_rng r, r2;
  ds_rng_init(&r, 42, 1, 0, DS_STREAM_INIT);
  r2 = r;
  ds_mlp_init_gaussian(&m, 1.5, &r, th);
  int ok = 1;
  for (int l = 1; l <= 2; l++) {
    double sd = 1.5 / sqrt(dims[l - 1]);
    for (int k = 0; k < dims[l] * dims[l - 1]; k++)
      ok &= th[m.w_off[l - 1] + k] == sd * ds_rng_normal(&r2);
    for (int i = 0; i < dims[l]; i++) ok &= th[m.b_off[l - 1] + i] == 0.0;
  }
  CHECK(ok, "init draws W_1, W_2 in order, N(0, scale^2/fan_in), biases 0");
  free(th);
  ds_mlp_free(&m);
  /* variance on a wide layer */
  int big[] = {400, 500};
  ds_mlp_init(&m, DS_ACT_LINEAR, 0, 1, big);
  th = malloc(m.nparams * sizeof *th);
  ds_mlp_init_gaussian(&m, 2.0, &r, th);
  double s2 = 0;
  for (size_t k = 0; k < m.nparams; k++) s2 += th[k] * th[k];
  s2 /= m.nparams;
  double want = 4.0 / 400, se = want * sqrt(2.0 / m.nparams);
  CHECK(fabs(s2 - want) < 5 * se, "init variance %g want %g", s2, want);
  free(th);
  ds_mlp_free(&m);
}

/* ---- gradient vs central finite differences -------------------------------- */

/* sign pattern of all hidden pre-activations, to detect ReLU kinks crossed */
static long count_flips(const ds_mlp *m, const ds_mlp_work *w, const unsigned char *ref) {
  long flips = 0, k = 0;
  for (int l = 1; l < m->depth; l++)
    for (long i = 0; i < (long)m->dims[l] * w->n; i++, k++) flips += (w->Z[l][i] > 0) != ref[k];
  return flips;
}

static void gradcheck(int act, int bias, int depth, const int *dims, int n, double c,
                      unsigned seed) {
  ds_mlp m;
  ds_mlp_work w;
  ds_mlp_init(&m, act, bias, depth, dims);
  ds_mlp_work_init(&m, n, &w);
  size_t P = m.nparams;
  double *th = malloc(P * sizeof *th), *g = malloc(P * sizeof *g), *gfd = malloc(P * sizeof *gfd);
  double *X = malloc((size_t)dims[0] * n * sizeof *X);
  double *Y = malloc((size_t)dims[depth] * n * sizeof *Y);
  ds_rng r;
  ds_rng_init(&r, seed, (uint64_t)(act * 100 + bias * 10 + depth), 0, DS_STREAM_TEST);
  /* redraw until every hidden ReLU pre-activation is clearly away from its kink */
  double zmin = 0;
  long hidden = 0;
  for (int l = 1; l < depth; l++) hidden += (long)dims[l] * n;
  unsigned char *ref = malloc(hidden ? (size_t)hidden : 1);
  for (int tries = 0; tries < 1000; tries++) {
    ds_mlp_init_gaussian(&m, 1.0, &r, th);
    if (bias)
      for (int l = 1; l <= depth; l++)
        for (int i = 0; i < dims[l]; i++) th[m.b_off[l - 1] + i] = 0.5 * ds_rng_normal(&r);
    for (long k = 0; k < (long)dims[0] * n; k++) X[k] = ds_rng_normal(&r);
    for (long k = 0; k < (long)dims[depth] * n; k++) Y[k] = ds_rng_normal(&r);
    ds_mlp_forward(&m, th, X, &w);
    zmin = INFINITY;
    long k = 0;
    for (int l = 1; l < depth; l++)
      for (long i = 0; i < (long)dims[l] * n; i++, k++) {
        zmin = fmin(zmin, fabs(w.Z[l][i]));
        ref[k] = w.Z[l][i] > 0;
      }
    if (act == DS_ACT_LINEAR || zmin > 1e-2) break;
  }
  CHECK(act == DS_ACT_LINEAR || zmin > 1e-2, "no init keeps ReLU pre-activations off 0");

  double loss = ds_mlp_loss_grad(&m, th, X, Y, c, g, &w);
  double base = ds_mlp_loss(&m, th, X, Y, c, &w);
  CHECK(loss == base, "loss_grad and loss agree bitwise (%.17g vs %.17g)", loss, base);
  const double h = 1e-6;
  long flips = 0;
  for (size_t p = 0; p < P; p++) {
    double t0 = th[p];
    th[p] = t0 + h;
    double lp = ds_mlp_loss(&m, th, X, Y, c, &w);
    if (act == DS_ACT_RELU) flips += count_flips(&m, &w, ref);
    th[p] = t0 - h;
    double lm = ds_mlp_loss(&m, th, X, Y, c, &w);
    if (act == DS_ACT_RELU) flips += count_flips(&m, &w, ref);
    th[p] = t0;
    gfd[p] = (lp - lm) / (2 * h);
  }
  CHECK(flips == 0, "%ld ReLU kinks crossed by the finite differences", flips);
  double num = 0, den = 0, gmax = 0;
  for (size_t p = 0; p < P; p++) {
    num += (g[p] - gfd[p]) * (g[p] - gfd[p]);
    den += g[p] * g[p];
    gmax = fmax(gmax, fabs(g[p]));
  }
  double rel = sqrt(num / den);
  CHECK(rel < 1e-6, "act %d bias %d depth %d c %g: norm-wise rel err %.3g", act, bias, depth, c,
        rel);
  long bad = 0, checked = 0;
  double worst = 0;
  for (size_t p = 0; p < P; p++) {
    if (fabs(g[p]) < 1e-3 * gmax) continue; /* tiny entries: FD round-off dominates */
    checked++;
    double e = fabs(g[p] - gfd[p]) / fabs(g[p]);
    worst = fmax(worst, e);
    bad += e >= 1e-6;
  }
  CHECK(bad == 0 && checked > (long)P / 2,
        "act %d bias %d depth %d c %g: %ld of %ld entries off (worst rel err %.3g)", act, bias,
        depth, c, bad, checked, worst);
  free(ref);
  free(th);
  free(g);
  free(gfd);
  free(X);
  free(Y);
  ds_mlp_work_free(&w);
  ds_mlp_free(&m);
}

static void test_gradients(void) {
  static const int d1[] = {3, 2}, d2[] = {3, 5, 2}, d4[] = {4, 6, 5, 7, 3};
  const int *dims[] = {NULL, d1, d2, NULL, d4};
  const int depths[] = {1, 2, 4};
  const int n = 5;
  const double cs[] = {1.0, 0.5, 1.0 / n, 0.5 / n};
  for (int act = 0; act <= 1; act++)
    for (int bias = 0; bias <= 1; bias++)
      for (int di = 0; di < 3; di++)
        for (int ci = 0; ci < 4; ci++)
          gradcheck(act, bias, depths[di], dims[depths[di]], n, cs[ci], 7 + ci);
}

/* ---- determinism and workspace reuse --------------------------------------- */

static void test_determinism(void) {
  int dims[] = {37, 64, 48, 5};
  int n = 33;
  ds_mlp m;
  ds_mlp_work w1, w2;
  ds_mlp_init(&m, DS_ACT_RELU, 1, 3, dims);
  ds_mlp_work_init(&m, n, &w1);
  ds_mlp_work_init(&m, n, &w2);
  double *th = malloc(m.nparams * sizeof *th);
  double *g1 = malloc(m.nparams * sizeof *g1), *g2 = malloc(m.nparams * sizeof *g2);
  double *X = malloc(37 * n * sizeof *X), *Y = malloc(5 * n * sizeof *Y);
  ds_rng r;
  ds_rng_init(&r, 3, 0, 0, DS_STREAM_TEST);
  ds_mlp_init_gaussian(&m, 1.0, &r, th);
  for (int k = 0; k < 37 * n; k++) X[k] = ds_rng_normal(&r);
  for (int k = 0; k < 5 * n; k++) Y[k] = ds_rng_normal(&r);
  double l1 = ds_mlp_loss_grad(&m, th, X, Y, 0.5, g1, &w1);
  double l2 = ds_mlp_loss_grad(&m, th, X, Y, 0.5, g2, &w2);
  double l3 = ds_mlp_loss_grad(&m, th, X, Y, 0.5, g2, &w1); /* reused workspace */
  CHECK(l1 == l2 && l1 == l3, "loss bitwise reproducible");
  CHECK(memcmp(g1, g2, m.nparams * sizeof *g1) == 0, "gradient bitwise reproducible");
  free(th);
  free(g1);
  free(g2);
  free(X);
  free(Y);
  ds_mlp_work_free(&w1);
  ds_mlp_work_free(&w2);
  ds_mlp_free(&m);
}

int main(void) {
  test_forward_known();
  test_loss_known();
  test_layout_and_flops();
  test_init_gaussian();
  test_gradients();
  test_determinism();
  return ds_check_report("test_nn");
}
