/* test_nn_fast.c -- the fast paths of src/nn/layers.c for small layers give
 * bitwise the results of the plain formulation they replace:
 *   - bias after a beta = 0 GEMM (fused with the ReLU) == bias as the initial
 *     C of a beta = 1 GEMM, then the ReLU (din <= DS_NN_BIAS_AFTER_MAX_K);
 *   - dA = W^T dZ as an NN GEMM on a transposed copy of W == the TN GEMM
 *     (dout <= DS_NN_TN_MAX_DOUT, din <= DS_NN_TN_MAX_DIN);
 *   - the small-d (1..8) specialisations of the ReLU backward / bias row sums
 *     == the plain loops.
 * Training results (determinism across rank counts, the PyTorch reference)
 * rely on this; the OpenBLAS kernel in use is printed. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/nn/layers.h"
#include "check.h"
#include "dynsweep/nn.h"
#include "dynsweep/util.h"

static double *rnd(ds_rng *r, size_t count) {
  double *v = malloc((count ? count : 1) * sizeof *v);
  for (size_t k = 0; k < count; k++) v[k] = ds_rng_normal(r);
  return v;
}

static const int ns[] = {1, 3, 8, 17, 64, 256, 1000};
#define NNS (int)(sizeof ns / sizeof ns[0])

static void test_forward(void) {
  ds_rng r;
  ds_rng_init(&r, 11, 0, 0, DS_STREAM_TEST);
  long cases = 0, bad = 0;
  static const int dins[] = {1, 2, 3, 4, 5, 8, 13, 16, 17, 31, 32, 64, 65, 100};
  static const int douts[] = {1, 2, 4, 7, 8, 16, 24, 64};
  for (size_t a = 0; a < sizeof dins / sizeof *dins; a++)
    for (size_t b = 0; b < sizeof douts / sizeof *douts; b++)
      for (int q = 0; q < NNS; q++)
        for (int ntk = 0; ntk < 2; ntk++) {
          int din = dins[a], dout = douts[b], n = ns[q];
          double alpha = ntk ? 1.0 / sqrt((double)din) : 1.0;
          size_t zn = (size_t)dout * n;
          double *W = rnd(&r, (size_t)dout * din), *X = rnd(&r, (size_t)din * n),
                 *bias = rnd(&r, dout);
          double *Z = malloc(zn * sizeof *Z), *A = malloc(zn * sizeof *A),
                 *Zr = malloc(zn * sizeof *Zr), *Ar = malloc(zn * sizeof *Ar);
          /* reference: Z = b 1^T, beta = 1 GEMM, then max(Z, 0) */
          for (int j = 0; j < n; j++)
            for (int i = 0; i < dout; i++) Zr[i + (size_t)j * dout] = bias[i];
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, n, din, alpha, W, dout, X,
                      din, 1.0, Zr, dout);
          for (size_t k = 0; k < zn; k++) Ar[k] = Zr[k] > 0.0 ? Zr[k] : 0.0;
          ds_nn_linear_forward_relu(Z, A, W, bias, X, dout, din, n, alpha);
          int ok = !memcmp(Z, Zr, zn * sizeof *Z) && !memcmp(A, Ar, zn * sizeof *A);
          /* without the ReLU (output layer), and without a bias */
          ds_nn_linear_forward_relu(Z, NULL, W, bias, X, dout, din, n, alpha);
          ok &= !memcmp(Z, Zr, zn * sizeof *Z);
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, n, din, alpha, W, dout, X,
                      din, 0.0, Zr, dout);
          ds_nn_linear_forward_relu(Z, NULL, W, NULL, X, dout, din, n, alpha);
          ok &= !memcmp(Z, Zr, zn * sizeof *Z);
          if (!ok && bad++ < 50)
            fprintf(stderr, "forward differs: din %d dout %d n %d alpha %g\n", din, dout, n, alpha);
          cases++;
          free(W), free(X), free(bias), free(Z), free(A), free(Zr), free(Ar);
        }
  CHECK(bad == 0, "linear+bias+ReLU forward: %ld of %ld shapes not bitwise equal to the "
                  "beta = 1 GEMM", bad, cases);
}

static void test_backward_dA(void) {
  ds_rng r;
  ds_rng_init(&r, 12, 0, 0, DS_STREAM_TEST);
  long cases = 0, bad = 0, fast = 0;
  for (int din = 1; din <= 70; din += din < 20 ? 1 : 7)
    for (int dout = 1; dout <= 18; dout++)
      for (int q = 0; q < NNS; q++) {
        int n = ns[q];
        double alpha = (dout + n) % 2 ? 1.0 : 1.0 / sqrt((double)dout);
        double *W = rnd(&r, (size_t)dout * din), *dZ = rnd(&r, (size_t)dout * n),
               *A = rnd(&r, (size_t)din * n);
        double *dA = malloc((size_t)din * n * sizeof *dA), *dAr = malloc((size_t)din * n * sizeof *dAr);
        double *dW = malloc((size_t)dout * din * sizeof *dW), *dWr = malloc((size_t)dout * din * sizeof *dW);
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, din, n, dout, alpha, W, dout, dZ, dout,
                    0.0, dAr, din);
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, dout, din, n, alpha, dZ, dout, A, din,
                    0.0, dWr, dout);
        ds_nn_linear_backward(dA, dW, dZ, W, A, dout, din, n, alpha);
        int ok = !memcmp(dA, dAr, (size_t)din * n * sizeof *dA) &&
                 !memcmp(dW, dWr, (size_t)dout * din * sizeof *dW);
        fast += dout <= DS_NN_TN_MAX_DOUT && din <= DS_NN_TN_MAX_DIN;
        if (!ok && bad++ < 5)
          fprintf(stderr, "backward differs: din %d dout %d n %d\n", din, dout, n);
        cases++;
        free(W), free(dZ), free(A), free(dA), free(dAr), free(dW), free(dWr);
      }
  CHECK(fast > 1000, "the transposed-copy path was taken in %ld cases", fast);
  CHECK(bad == 0, "linear backward: %ld of %ld shapes not bitwise equal to the TN GEMM", bad,
        cases);
}

static void test_elementwise(void) {
  ds_rng r;
  ds_rng_init(&r, 13, 0, 0, DS_STREAM_TEST);
  long cases = 0, bad = 0;
  for (int d = 1; d <= 66; d += d < 18 ? 1 : 16)
    for (int q = 0; q < NNS; q++) {
      int n = ns[q];
      size_t cnt = (size_t)d * n;
      double *Z = rnd(&r, cnt), *G = rnd(&r, cnt), *b = rnd(&r, d);
      double *dA = malloc(cnt * sizeof *dA), *dAr = malloc(cnt * sizeof *dAr);
      double *db = malloc(d * sizeof *db), *dbr = malloc(d * sizeof *dbr);
      /* plain loops: dZ = dA [Z > 0] with row sums in sample order */
      for (int i = 0; i < d; i++) dbr[i] = 0.0;
      for (int j = 0; j < n; j++)
        for (int i = 0; i < d; i++) {
          size_t k = i + (size_t)j * d;
          dAr[k] = Z[k] > 0.0 ? G[k] : 0.0;
          dbr[i] += dAr[k];
        }
      memcpy(dA, G, cnt * sizeof *dA);
      ds_nn_relu_backward(dA, Z, db, d, n);
      int ok = !memcmp(dA, dAr, cnt * sizeof *dA) && !memcmp(db, dbr, d * sizeof *db);
      for (int i = 0; i < d; i++) dbr[i] = 0.0;
      for (int j = 0; j < n; j++)
        for (int i = 0; i < d; i++) dbr[i] += G[i + (size_t)j * d];
      ds_nn_bias_backward(db, G, d, n);
      ok &= !memcmp(db, dbr, d * sizeof *db);
      /* Z + b then the ReLU, in place */
      memcpy(dA, Z, cnt * sizeof *dA);
      double *Ar = malloc(cnt * sizeof *Ar), *A = malloc(cnt * sizeof *A);
      for (int j = 0; j < n; j++)
        for (int i = 0; i < d; i++) {
          size_t k = i + (size_t)j * d;
          dAr[k] = Z[k] + b[i];
          Ar[k] = dAr[k] > 0.0 ? dAr[k] : 0.0;
        }
      ds_nn_bias_add_relu(dA, A, b, d, n);
      ok &= !memcmp(dA, dAr, cnt * sizeof *dA) && !memcmp(A, Ar, cnt * sizeof *A);
      if (!ok && bad++ < 5) fprintf(stderr, "elementwise differs: d %d n %d\n", d, n);
      cases++;
      free(Z), free(G), free(b), free(dA), free(dAr), free(db), free(dbr), free(A), free(Ar);
    }
  CHECK(bad == 0, "ReLU backward / bias row sums / bias+ReLU: %ld of %ld shapes differ", bad,
        cases);
}

/* The LIBXSMM path (issue 13): against the OpenBLAS path to rounding (its
 * kernels order a few products differently), and bitwise independent of the
 * block of samples an element falls in: every column of Z and dA, and dW and
 * db (sums over the samples), are the same whether the product runs over n
 * samples (several blocks and a remainder) or is rebuilt from a prefix. */
static double rel_diff(const double *a, const double *b, size_t cnt) {
  double num = 0.0, den = 0.0;
  for (size_t k = 0; k < cnt; k++) {
    num = fmax(num, fabs(a[k] - b[k]));
    den = fmax(den, fabs(b[k]));
  }
  return den > 0 ? num / den : num;
}

static void test_xsmm(void) {
  if (!ds_nn_xsmm_enabled()) {
    printf("LIBXSMM path off (not built with libxsmm or DYNSWEEP_NN_GEMM=openblas): skipped\n");
    return;
  }
  ds_rng r;
  ds_rng_init(&r, 14, 0, 0, DS_STREAM_TEST);
  static const int ds_[] = {1, 3, 4, 8, 13, 16, 32, 64, 100, 128};
  static const int nx[] = {1, 63, 64, 65, 200, 1000};
  long cases = 0, bad = 0, taken = 0;
  double worst = 0.0;
  for (size_t a = 0; a < sizeof ds_ / sizeof *ds_; a++)
    for (size_t b = 0; b < sizeof ds_ / sizeof *ds_; b++)
      for (size_t q = 0; q < sizeof nx / sizeof *nx; q++) {
        int din = ds_[a], dout = ds_[b], n = nx[q];
        taken += ds_nn_xsmm_nn(dout, din) || ds_nn_xsmm_nt(dout, din);
        size_t zn = (size_t)dout * n, an = (size_t)din * n;
        double *W = rnd(&r, (size_t)dout * din), *X = rnd(&r, an), *bias = rnd(&r, dout),
               *dZ = rnd(&r, zn), *Zin = rnd(&r, an);
        double *Z = malloc(zn * 8), *A = malloc(zn * 8), *Zo = malloc(zn * 8), *Ao = malloc(zn * 8);
        double *dA = malloc(an * 8), *dAo = malloc(an * 8), *dW = malloc((size_t)dout * din * 8),
               *dWo = malloc((size_t)dout * din * 8), *db = malloc(din * 8), *dbo = malloc(din * 8);
        ds_nn_set_xsmm(0);
        ds_nn_linear_forward_relu(Zo, Ao, W, bias, X, dout, din, n, 1.0);
        ds_nn_linear_backward_relu(dAo, dWo, dZ, W, X, Zin, dbo, dout, din, n, 1.0);
        ds_nn_set_xsmm(1);
        ds_nn_linear_forward_relu(Z, A, W, bias, X, dout, din, n, 1.0);
        ds_nn_linear_backward_relu(dA, dW, dZ, W, X, Zin, db, dout, din, n, 1.0);
        double e = fmax(fmax(rel_diff(Z, Zo, zn), rel_diff(A, Ao, zn)),
                        fmax(rel_diff(dA, dAo, an), rel_diff(dW, dWo, (size_t)dout * din)));
        e = fmax(e, rel_diff(db, dbo, din));
        worst = fmax(worst, e);
        int ok = e < 1e-13;
        /* prefix: the first m samples alone give the same columns bitwise,
         * m a whole number of kernel calls (DS_NN_XSMM_NB samples): the
         * same kernels on the same columns, as the blocks of samples in
         * mlp.c make them. (At other m a column can fall in a remainder
         * call of another width: LIBXSMM's AVX-512 kernels for 100 rows
         * then differ in the last bit, its AVX2 ones do not.) */
        int m = n / 2 / DS_NN_XSMM_NB * DS_NN_XSMM_NB;
        if (m > 0) {
          ds_nn_linear_forward_relu(Zo, Ao, W, bias, X, dout, din, m, 1.0);
          ok &= !memcmp(Zo, Z, (size_t)dout * m * 8) && !memcmp(Ao, A, (size_t)dout * m * 8);
        }
        /* the same again: deterministic */
        ds_nn_linear_backward_relu(dAo, dWo, dZ, W, X, Zin, dbo, dout, din, n, 1.0);
        ok &= !memcmp(dAo, dA, an * 8) && !memcmp(dWo, dW, (size_t)dout * din * 8) &&
              !memcmp(dbo, db, din * 8);
        /* dW over two blocks of samples (the first m, then the rest added,
         * as mlp.c's blocks do) == over all n at once, bitwise. (Not the
         * plain sequential fma sum: LIBXSMM's AVX-512 kernels for small
         * dW add along the samples in more than one chain.) */
        if (m > 0 && ds_nn_xsmm_nt(dout, din)) {
          int ok1 = ds_nn_xsmm_dw(dWo, dZ, X, dout, din, m, 1) &&
                    ds_nn_xsmm_dw(dWo, dZ + (size_t)m * dout, X + (size_t)m * din, dout, din,
                                  n - m, 0);
          ok &= ok1 && !memcmp(dWo, dW, (size_t)dout * din * 8);
        }
        if (!ok && bad++ < 10)
          fprintf(stderr, "xsmm path: din %d dout %d n %d: rel diff %.3g or not blockwise equal\n",
                  din, dout, n, e);
        cases++;
        free(W), free(X), free(bias), free(dZ), free(Zin), free(Z), free(A), free(Zo), free(Ao);
        free(dA), free(dAo), free(dW), free(dWo), free(db), free(dbo);
      }
  printf("LIBXSMM path: %ld of %ld shapes take it, largest relative difference to OpenBLAS %.3g\n",
         taken, cases, worst);
  CHECK(taken > 100, "LIBXSMM taken in %ld shapes", taken);
  CHECK(bad == 0, "LIBXSMM path: %ld of %ld shapes differ beyond rounding or by block", bad,
        cases);
}

/* Blocks of samples through the whole net (mlp.c): the loss and gradient are
 * bitwise those of the unblocked step, for every n, ReLU / linear, with and
 * without biases, a fixed output layer, narrow and uneven layers. */
static void test_sample_blocks(void) {
  if (!ds_nn_xsmm_enabled()) return;
  ds_mlp_set_e2e(0); /* linear nets: the layered step (the product step: test_e2e) */
  ds_rng r;
  ds_rng_init(&r, 15, 0, 0, DS_STREAM_TEST);
  static const int ns_[] = {257, 300, 512, 777, 1000, 4096};
  static const int nets[][5] = {{16, 16, 16, 0, 0}, {4, 16, 1, 0, 0}, {8, 32, 16, 4, 0},
                                {64, 64, 64, 64, 64}, {3, 13, 7, 0, 0}, {16, 1, 0, 0, 0}};
  long cases = 0, bad = 0, blocked = 0;
  for (size_t t = 0; t < sizeof nets / sizeof *nets; t++)
    for (int act = 0; act < 2; act++)
      for (int bias = 0; bias < 2; bias++)
        for (int fixed = 0; fixed < 2; fixed++)
          for (size_t q = 0; q < sizeof ns_ / sizeof *ns_; q++) {
            int dims[5], depth = 0;
            for (int l = 0; l < 5 && nets[t][l]; l++) dims[l] = nets[t][l], depth = l;
            int n = ns_[q];
            ds_mlp m;
            if (ds_mlp_setup(&m, act ? DS_ACT_RELU : DS_ACT_LINEAR, bias, depth, dims,
                             DS_PARAM_STANDARD, !fixed) != DS_OK)
              continue;
            ds_mlp_work w;
            ds_mlp_work_init(&m, n, &w);
            double *th = rnd(&r, m.nparams), *X = rnd(&r, (size_t)dims[0] * n),
                   *Y = rnd(&r, (size_t)dims[depth] * n);
            double *g0 = malloc(m.nparams * 8), *g1 = malloc(m.nparams * 8);
            for (size_t k = 0; k < m.nparams; k++) th[k] *= 0.5;
            ds_mlp_set_sample_block(0);
            double l0 = ds_mlp_loss_grad(&m, th, X, Y, 0.5 / n, g0, &w);
            ds_mlp_set_sample_block(1);
            double l1 = ds_mlp_loss_grad(&m, th, X, Y, 0.5 / n, g1, &w);
            int ok = l0 == l1 && !memcmp(g0, g1, m.nparams * 8);
            if (!ok && bad++ < 10)
              fprintf(stderr, "sample blocks differ: net %zu act %d bias %d fixed %d n %d: "
                      "loss %.17g vs %.17g\n", t, act, bias, fixed, n, l0, l1);
            blocked += n > DS_NN_SAMPLE_BLOCK;
            cases++;
            free(th), free(X), free(Y), free(g0), free(g1);
            ds_mlp_work_free(&w);
            ds_mlp_free(&m);
          }
  CHECK(cases > 100, "%ld nets", cases);
  CHECK(bad == 0, "blocks of samples: %ld of %ld steps not bitwise the unblocked step", bad, cases);
  ds_mlp_set_e2e(1);
}

/* Linear nets' end-to-end product step (mlp.c): the loss, gradient, output
 * F and dL/dF agree with the layered step to round-off, for every
 * parameterisation, a fixed output layer, uneven layers and both losses
 * the product step serves; it is taken exactly where the flop rule says
 * (n well above d_0), never with biases, ReLU or depth 1. */
static void test_e2e(void) {
  ds_rng r;
  ds_rng_init(&r, 16, 0, 0, DS_STREAM_TEST);
  static const int nets[][6] = {{64, 64, 64, 64, 64, 0}, {16, 16, 1, 0, 0, 0},
                                {10, 32, 32, 5, 0, 0},   {3, 8, 2, 0, 0, 0},
                                {64, 64, 64, 0, 0, 0},   {5, 7, 0, 0, 0, 0},
                                {8, 16, 16, 16, 16, 8}};
  static const int ns_[] = {7, 64, 256, 1000};
  long cases = 0, taken = 0, bad = 0, wrong_rule = 0;
  double worst = 0.0;
  for (size_t t = 0; t < sizeof nets / sizeof *nets; t++)
    for (int param = 0; param < 3; param++)
      for (int fixed = 0; fixed < 2; fixed++)
        for (int bias = 0; bias < 2; bias++)
          for (int lp = 0; lp < 2; lp++)
            for (size_t q = 0; q < sizeof ns_ / sizeof *ns_; q++) {
              int dims[6], depth = 0;
              for (int l = 0; l < 6 && nets[t][l]; l++) dims[l] = nets[t][l], depth = l;
              int n = ns_[q];
              static const int params[3] = {DS_PARAM_STANDARD, DS_PARAM_NTK, DS_PARAM_MEANFIELD};
              ds_mlp m;
              if (ds_mlp_setup(&m, DS_ACT_LINEAR, bias, depth, dims, params[param], !fixed) != DS_OK)
                continue;
              ds_loss lo = {lp ? DS_LOSS_LP : DS_LOSS_MSE, lp ? 4.0 : 2.0, 0.5 / n};
              size_t fn = (size_t)dims[depth] * n;
              ds_mlp_work w;
              ds_mlp_work_init(&m, n, &w);
              double *th = rnd(&r, m.nparams), *X = rnd(&r, (size_t)dims[0] * n), *Y = rnd(&r, fn);
              double *g0 = malloc(m.nparams * 8), *g1 = malloc(m.nparams * 8);
              double *F0 = malloc(fn * 8), *dF0 = malloc(fn * 8);
              ds_mlp_set_e2e(0);
              double l0 = ds_mlp_loss_grad_l(&m, th, X, Y, &lo, g0, &w);
              memcpy(F0, w.Z[depth], fn * 8);
              memcpy(dF0, w.dF, fn * 8);
              double f0 = ds_mlp_loss_l(&m, th, X, Y, &lo, &w);
              ds_mlp_set_e2e(1);
              int tk = ds_mlp_e2e_taken(&m, n, 1);
              double l1 = ds_mlp_loss_grad_l(&m, th, X, Y, &lo, g1, &w);
              double e = fmax(fabs(l1 - l0) / fabs(l0), rel_diff(g1, g0, m.nparams));
              e = fmax(e, fmax(rel_diff(w.Z[depth], F0, fn), rel_diff(w.dF, dF0, fn)));
              double f1 = ds_mlp_loss_l(&m, th, X, Y, &lo, &w);
              e = fmax(e, fabs(f1 - f0) / fabs(f0));
              /* the rule: bias-free, depth >= 2, and 2 n d_0 d_L products over
               * the samples plus the net over d_0 columns <= 3/4 of the layers' */
              double lay = 0, id = 0;
              for (int l = 1; l <= depth; l++) {
                lay += 2.0 * n * dims[l] * dims[l - 1];
                id += 2.0 * dims[0] * dims[l] * dims[l - 1];
              }
              lay = 3 * lay - 2.0 * n * dims[1] * dims[0];
              id = 3 * id - 2.0 * dims[0] * dims[1] * dims[0];
              int expect = !bias && depth >= 2 && id + 4.0 * n * dims[0] * dims[depth] <= 0.75 * lay;
              wrong_rule += tk != expect;
              if (tk) {
                worst = fmax(worst, e);
                taken++;
              }
              if (e > 1e-12 && bad++ < 10)
                fprintf(stderr, "e2e step: net %zu param %d fixed %d bias %d lp %d n %d: "
                        "rel diff %.3g (taken %d)\n", t, param, fixed, bias, lp, n, e, tk);
              if (fixed) /* the fixed output layer's gradient stays exactly 0 */
                for (size_t k = m.w_off[depth - 1]; k < m.nparams; k++) bad += g1[k] != 0.0;
              cases++;
              free(th), free(X), free(Y), free(g0), free(g1), free(F0), free(dF0);
              ds_mlp_work_free(&w);
              ds_mlp_free(&m);
            }
  printf("linear nets' product step: taken in %ld of %ld cases, largest relative difference "
         "to the layered step %.3g\n", taken, cases, worst);
  CHECK(taken >= 40 && taken < cases / 2, "product step taken in %ld of %ld cases", taken, cases);
  CHECK(wrong_rule == 0, "product step: %ld cases against the flop rule", wrong_rule);
  CHECK(bad == 0, "product step: %ld of %ld cases differ from the layered step", bad, cases);
}

int main(void) {
  printf("OpenBLAS kernel: %s\n", ds_blas_kernel());
  int xs = ds_nn_xsmm_enabled();
  ds_nn_set_xsmm(0); /* the OpenBLAS fast paths against their plain formulation */
  test_forward();
  test_backward_dA();
  test_elementwise();
  ds_nn_set_xsmm(xs);
  test_xsmm();
  test_sample_blocks();
  test_e2e();
  return ds_check_report("test_nn_fast");
}
