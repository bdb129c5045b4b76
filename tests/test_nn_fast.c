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

int main(void) {
  printf("OpenBLAS kernel: %s\n", ds_blas_kernel());
  test_forward();
  test_backward_dA();
  test_elementwise();
  return ds_check_report("test_nn_fast");
}
