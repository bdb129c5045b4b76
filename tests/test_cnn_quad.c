/* test_cnn_quad.c -- f_quad of a CNN (ds_cnn_quad, src/nn/cnnquad.c) against
 * finite differences, for nets that together hold every layer kind (conv,
 * relu, avg/max pooling, gap, flatten, hidden dense with and without bias,
 * resblocks with both shortcuts, dropout on, seed 003's DenseNet-DAG block
 * with edges dropped, after a flatten, after conv + relu, and as layer 0):
 *   - D2F(theta0)[v, v] (QF) against (F(theta0 + h v) - 2 F(theta0) +
 *     F(theta0 - h v)) / h^2, and J v (RF) against the central difference;
 *   - f_quad(theta0 + t v) = F0 + t J v + t^2/2 D2F[v, v] exactly (it is a
 *     quadratic in t), f_quad(theta0) = F0;
 *   - the gradient of L(f_quad) away from theta0 against central differences
 *     of L(f_quad) (every coordinate of the small nets; random directions),
 *     for squared error and cross-entropy.
 *
 *   test_cnn_quad                 the checks (exit 0 ok, 1 failed)
 *   test_cnn_quad --count         the number of nets
 *   test_cnn_quad --dump FILE K   net K, theta0, X, Y, v, J v, D2F[v, v],
 *                                 then 8 steps of GD on the f_quad loss with
 *                                 dropout on (losses, final theta, masks) for
 *                                 tests/cnn_quad_torch.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cnn_testlib.h"
#include "dynsweep/cnn.h"

/* The layer-list macros, lspec and lcreate: cnn_testlib.h. The layer lists
 * (net < 0, small) have their gradient checked against every coordinate's
 * central difference, the named nets along random directions only. */
static const lspec qspecs[] = {
    {"cnn(3, 2) (003's 2-layer CNN)", 1, 6, 6, 1, DS_PARAM_NTK, 1.0, 2,
     {LCONV(3, 3, 1, 1), LK(DS_LAYER_RELU)}, -1, 0, 0, 0, 0},
    LSPECS_SMALL, /* pools, gap, resblocks, hidden dense and dropout (cnn_testlib.h) */
    {"myrtle5 (3 ch)", 1, 32, 32, 2, DS_PARAM_NTK, 0.5, 0, {LK(0)}, DS_NET_MYRTLE5, 3, 2, 0, 0},
    {"tf_mnist (2 ch, dropout 0.5)", 1, 8, 8, 2, DS_PARAM_STANDARD, 1.0, 0, {LK(0)},
     DS_NET_TF_MNIST, 2, 2, 0.5, 0},
    {"wrn-10-1", 1, 8, 8, 1, DS_PARAM_NTK, 1.0, 0, {LK(0)}, DS_NET_WRN, 1, 10, 0, 0},
    {"tf_mnist overparam (2 ch, nobias dense)", 1, 8, 8, 3, DS_PARAM_NTK, 0.5, 0, {LK(0)},
     DS_NET_TF_MNIST, 2, 2, 0.0, 1},
    /* seed 003's DenseNet-DAG block (cnn.h's DS_LAYER_DAG): as model.net dag
     * (flatten, dag), after conv + relu (standard), and as the first layer */
    {"flatten, dag 4 x 2 drop 0.5 (model.net dag)", 1, 3, 3, 2, DS_PARAM_NTK, 0.5, 2,
     {LK(DS_LAYER_FLATTEN), {DS_LAYER_DAG, 4, 0, 0, 0, 0.5, 0, 2, 0.0}}, -1, 0, 0, 0, 0},
    {"conv, relu, dag 3 x 3 drop 0.3, standard", 2, 4, 4, 1, DS_PARAM_STANDARD, 1.0, 3,
     {LCONV(2, 3, 1, 1), LK(DS_LAYER_RELU), {DS_LAYER_DAG, 3, 0, 0, 0, 0.3, 0, 3, 0.0}}, -1, 0, 0, 0,
     0},
    {"dag 5 x 3 first, no drop", 1, 2, 3, 3, DS_PARAM_NTK, 0.2, 1,
     {{DS_LAYER_DAG, 5, 0, 0, 0, 0.0, 0, 3, 0.0}}, -1, 0, 0, 0, 0},
    /* and with its readout masked (model.dag_readout_drop; rdrop) */
    {"flatten, dag 4 x 2 drop 0.5, readout drop 0.5", 1, 3, 3, 2, DS_PARAM_NTK, 0.5, 2,
     {LK(DS_LAYER_FLATTEN), {DS_LAYER_DAG, 4, 0, 0, 0, 0.5, 0, 2, 0.5}}, -1, 0, 0, 0, 0},
};
#define NQ ((int)(sizeof qspecs / sizeof qspecs[0]))

static double amax(const double *x, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s = fmax(s, fabs(x[i]));
  return s;
}

static void quad_fd(int k) {
  const lspec *sp = &qspecs[k];
  const int n = 3;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *th = malloc(P * 8), *v = malloc(P * 8), *tp = malloc(P * 8), *g = malloc(P * 8);
  double *X = malloc(din * n * 8), *Y = malloc(dF * 8), *F0 = malloc(dF * 8);
  double *Fp = malloc(dF * 8), *Fm = malloc(dF * 8), *RF = malloc(dF * 8), *QF = malloc(dF * 8);
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)k, 2, 0);
  ds_cnn_init(m, &r, th);
  randn(X, din * n, &r);
  randn(v, P, &r);
  for (size_t j = 0; j < P; j++) v[j] *= 0.3;
  ds_cnn_dropout(m, 1, 23, 4, NULL); /* masks of one step, frozen */
  ds_cnn_quad q;
  CHECK(ds_cnn_quad_init(&q, m, th) == DS_OK, "%s: quad init", sp->name);
  memcpy(F0, ds_cnn_forward(m, th, X, n), dF * 8);
  /* f_quad(theta0 + v): RF = J v, QF = D2F[v, v] */
  for (size_t j = 0; j < P; j++) tp[j] = th[j] + v[j];
  const double *FQ = ds_cnn_quad_forward(&q, tp, X, n);
  memcpy(RF, q.RF, dF * 8), memcpy(QF, q.QF, dF * 8);
  double eq = 0.0, ej = 0.0, e2 = 0.0, e0 = 0.0;
  for (size_t i = 0; i < dF; i++) eq = fmax(eq, fabs(FQ[i] - (F0[i] + RF[i] + 0.5 * QF[i])));
  /* central differences of the net itself; the smallest error over steps h
   * (a step that crosses a ReLU kink or moves a max pool's arg-max is off) */
  double jm = amax(RF, dF), qm = amax(QF, dF);
  ej = e2 = INFINITY;
  for (double h = 1e-2; h > 3e-5; h /= 4) {
    for (size_t j = 0; j < P; j++) tp[j] = th[j] + h * v[j];
    memcpy(Fp, ds_cnn_forward(m, tp, X, n), dF * 8);
    for (size_t j = 0; j < P; j++) tp[j] = th[j] - h * v[j];
    memcpy(Fm, ds_cnn_forward(m, tp, X, n), dF * 8);
    double a = 0.0, b = 0.0;
    for (size_t i = 0; i < dF; i++) {
      a = fmax(a, fabs((Fp[i] - Fm[i]) / (2 * h) - RF[i]) / jm);
      b = fmax(b, fabs((Fp[i] - 2 * F0[i] + Fm[i]) / (h * h) - QF[i]) / qm);
    }
    if (getenv("QUAD_FD_VERBOSE")) printf("   h %.1e: J v %.2e D2F %.2e\n", h, a, b);
    ej = fmin(ej, a), e2 = fmin(e2, b);
  }
  /* f_quad at theta0 and its quadratic in t */
  const double *FQ0 = ds_cnn_quad_forward(&q, th, X, n);
  for (size_t i = 0; i < dF; i++) e0 = fmax(e0, fabs(FQ0[i] - F0[i]));
  double et = 0.0;
  for (size_t j = 0; j < P; j++) tp[j] = th[j] - 1.7 * v[j];
  FQ = ds_cnn_quad_forward(&q, tp, X, n);
  for (size_t i = 0; i < dF; i++)
    et = fmax(et, fabs(FQ[i] - (F0[i] - 1.7 * RF[i] + 0.5 * 2.89 * QF[i])) / amax(F0, dF));
  printf("quad %d (%s): %zu params, |D2F[v,v]| %.3g: FD rel err J v %.2e, D2F %.2e; "
         "f_quad at theta0 %.1e, quadratic in t %.1e, assembly %.1e\n",
         k, sp->name, P, qm, ej, e2, e0, et, eq);
  CHECK(qm > 0 && ej < 1e-5 && e2 < 1e-5 && e0 == 0.0 && et < 1e-12 && eq == 0.0,
        "%s: f_quad forward: %.3e %.3e %.3e %.3e %.3e", sp->name, ej, e2, e0, et, eq);
  /* the gradient of L(f_quad) at theta1 = theta0 + v */
  for (int lq = 0; lq < 2; lq++) {
    ds_loss l = {.type = lq ? DS_LOSS_CE : DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
    if (lq && sp->dout == 1) continue;
    if (lq) onehot(Y, sp->dout, n, k);
    else randn(Y, dF, &r);
    double *th1 = malloc(P * 8), *w = malloc(P * 8), *g2 = malloc(P * 8);
    for (size_t j = 0; j < P; j++) th1[j] = th[j] + v[j];
    ds_cnn_quad_loss_grad(&q, th1, X, Y, n, &l, g);
    double gm = amax(g, P), eg = 0.0, ed = 0.0;
    const int nfd = sp->net < 0;
    const double hh = 1e-5;
    if (nfd)
      for (size_t j = 0; j < P; j++) {
        memcpy(tp, th1, P * 8);
        tp[j] += hh;
        double lp = ds_cnn_quad_loss_grad(&q, tp, X, Y, n, &l, g2);
        tp[j] -= 2 * hh;
        double lm = ds_cnn_quad_loss_grad(&q, tp, X, Y, n, &l, g2);
        eg = fmax(eg, fabs((lp - lm) / (2 * hh) - g[j]) / gm);
      }
    for (int rep = 0; rep < 3; rep++) {
      randn(w, P, &r);
      double gw = 0.0;
      for (size_t j = 0; j < P; j++) gw += g[j] * w[j];
      for (size_t j = 0; j < P; j++) tp[j] = th1[j] + hh * w[j];
      double lp = ds_cnn_quad_loss_grad(&q, tp, X, Y, n, &l, g2);
      for (size_t j = 0; j < P; j++) tp[j] = th1[j] - hh * w[j];
      double lm = ds_cnn_quad_loss_grad(&q, tp, X, Y, n, &l, g2);
      ed = fmax(ed, fabs((lp - lm) / (2 * hh) - gw) / fmax(fabs(gw), 1e-300));
    }
    printf("  grad of L(f_quad) (%s): |g| %.3g, coordinate FD %.2e%s, directional FD %.2e\n",
           lq ? "cross-entropy" : "mse", gm, eg, nfd ? "" : " (not run)", ed);
    CHECK(gm > 0 && eg < 1e-6 && ed < 1e-6, "%s: grad FD %.3e %.3e", sp->name, eg, ed);
    free(th1), free(w), free(g2);
  }
  CHECK(isnan(ds_cnn_quad_forward(&q, th, X, n + 1)[0]), "%s: n > nmax gives NaN", sp->name);
  ds_cnn_quad_free(&q);
  free(th), free(v), free(tp), free(g), free(X), free(Y), free(F0), free(Fp), free(Fm), free(RF);
  free(QF);
  ds_cnn_free(m);
}

/* The dump of tests/cnn_quad_torch.py: header and layers as test_cnn's
 * --dump-layers, theta0, X, Y, v, J v, D2F[v, v] (dropout off), then GD on
 * the f_quad loss (1/n sum (F - Y)^2) with dropout on (step s: the masks of
 * step s): losses, final theta, every step's masks. */
static int dump(const char *path, int k) {
  const lspec *sp = &qspecs[k];
  const int n = 4, steps = 8;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return 1;
  const double lr = sp->param == DS_PARAM_NTK ? 0.05 : 0.1;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *th0 = malloc(P * 8), *th = malloc(P * 8), *v = malloc(P * 8), *grad = malloc(P * 8);
  double *X = malloc(din * n * 8), *Y = malloc(dF * 8), losses[9];
  ds_rng r;
  ds_rng_init(&r, 7, (uint64_t)k, 3, 0);
  ds_cnn_init(m, &r, th0);
  randn(X, din * n, &r);
  randn(Y, dF, &r);
  randn(v, P, &r);
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  dump_head(f, sp, L, nl, n, steps, 0, lr);
  fwrite(th0, 8, P, f), fwrite(X, 8, din * n, f), fwrite(Y, 8, dF, f), fwrite(v, 8, P, f);
  ds_cnn_quad q;
  if (ds_cnn_quad_init(&q, m, th0) != DS_OK) return 1;
  for (size_t j = 0; j < P; j++) th[j] = th0[j] + v[j];
  ds_cnn_quad_forward(&q, th, X, n);
  fwrite(q.RF, 8, dF, f), fwrite(q.QF, 8, dF, f);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
  memcpy(th, th0, P * 8);
  for (int s = 0; s <= steps; s++) {
    ds_cnn_dropout(m, 1, 17, (uint64_t)s, NULL);
    losses[s] = ds_cnn_quad_loss_grad(&q, th, X, Y, n, &l, grad);
    if (s < steps)
      for (size_t j = 0; j < P; j++) th[j] -= lr * grad[j];
  }
  fwrite(losses, 8, (size_t)steps + 1, f), fwrite(th, 8, P, f);
  dump_masks(f, m, L, nl, n, steps, 17);
  int bad = fclose(f) != 0;
  ds_cnn_quad_free(&q);
  free(th0), free(th), free(v), free(grad), free(X), free(Y);
  ds_cnn_free(m);
  return bad;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--count")) return printf("%d\n", NQ) < 0;
  if (argc == 4 && !strcmp(argv[1], "--dump")) {
    int k = atoi(argv[3]);
    if (k < 0 || k >= NQ) return 2;
    return dump(argv[2], k);
  }
  for (int k = 0; k < NQ; k++) quad_fd(k);
  return ds_check_report("test_cnn_quad");
}
