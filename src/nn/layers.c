/* layers.c -- linear (dense + bias) and ReLU layers, forward and backward.
 *
 * The matrix products go to cblas_dgemm (column-major) with transpose flags
 * instead of copied transposes. Elementwise work is fused into single passes:
 * the bias is written into Z before a beta = 1 GEMM (OpenBLAS would otherwise
 * spend the same pass zeroing Z for beta = 0), the ReLU mask is applied in
 * place on the backward buffer together with the bias row sums. Every loop
 * has a fixed summation order, so results are bitwise reproducible with one
 * BLAS thread. */
#include <cblas.h>

#include "layers.h"

/* Elementwise loops: compiled at -O3 (vectorised) and cloned for AVX-512 /
 * AVX2 / baseline x86-64, picked at load time. They only compare, select, copy
 * and add one pair of numbers per element in a fixed order, so every clone
 * gives bitwise the same result. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DS_ELEMENTWISE __attribute__((optimize("O3"), target_clones("avx512f", "avx2", "default")))
#else
#define DS_ELEMENTWISE
#endif

/* Z = b 1^T:  b (d) -> Z (d x n) */
DS_ELEMENTWISE
void ds_nn_bias_fill(double *Z, const double *b, int d, int n) {
  for (int j = 0; j < n; j++) {
    double *z = Z + (size_t)j * d;
    for (int i = 0; i < d; i++) z[i] = b[i];
  }
}

/* alpha = 1.0 (standard parameterisation) goes to BLAS as is: the same
 * products, bitwise, as before the NTK scale existed. */
void ds_nn_linear_forward(double *Z, const double *W, const double *b, const double *A,
                          int dout, int din, int n, double alpha) {
  double beta = 0.0;
  if (b) {
    ds_nn_bias_fill(Z, b, dout, n);
    beta = 1.0;
  }
  /* Z (dout x n) = alpha W (dout x din) A (din x n) + beta Z */
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, n, din, alpha, W, dout, A, din,
              beta, Z, dout);
}

void ds_nn_linear_backward(double *dA, double *dW, const double *dZ, const double *W,
                           const double *A, int dout, int din, int n, double alpha) {
  if (dW) /* dW (dout x din) = alpha dZ (dout x n) A^T (n x din) */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, dout, din, n, alpha, dZ, dout, A, din,
                0.0, dW, dout);
  if (dA) /* dA (din x n) = alpha W^T (din x dout) dZ (dout x n) */
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, din, n, dout, alpha, W, dout, dZ, dout,
                0.0, dA, din);
}

DS_ELEMENTWISE
void ds_nn_bias_backward(double *db, const double *dZ, int d, int n) {
  for (int i = 0; i < d; i++) db[i] = 0.0;
  for (int j = 0; j < n; j++) {
    const double *dz = dZ + (size_t)j * d;
    for (int i = 0; i < d; i++) db[i] += dz[i];
  }
}

DS_ELEMENTWISE
void ds_nn_bias_backward_acc(double *db, const double *dZ, int d, int n, int accumulate) {
  if (!accumulate)
    for (int i = 0; i < d; i++) db[i] = 0.0;
  for (int j = 0; j < n; j++) {
    const double *dz = dZ + (size_t)j * d;
    for (int i = 0; i < d; i++) db[i] += dz[i];
  }
}

DS_ELEMENTWISE
void ds_nn_relu_tangent(double *RA, const double *RZ, const double *Z, int d, int n) {
  size_t count = (size_t)d * n;
  for (size_t k = 0; k < count; k++) RA[k] = Z[k] > 0.0 ? RZ[k] : 0.0;
}

DS_ELEMENTWISE
void ds_nn_relu_forward(double *A, const double *Z, int d, int n) {
  size_t count = (size_t)d * n;
  for (size_t k = 0; k < count; k++) A[k] = Z[k] > 0.0 ? Z[k] : 0.0;
}

DS_ELEMENTWISE
void ds_nn_relu_backward(double *dA, const double *Z, double *db, int d, int n) {
  if (!db) {
    size_t count = (size_t)d * n;
    for (size_t k = 0; k < count; k++) dA[k] = Z[k] > 0.0 ? dA[k] : 0.0;
    return;
  }
  for (int i = 0; i < d; i++) db[i] = 0.0;
  for (int j = 0; j < n; j++) {
    double *da = dA + (size_t)j * d;
    const double *z = Z + (size_t)j * d;
    for (int i = 0; i < d; i++) {
      double g = z[i] > 0.0 ? da[i] : 0.0;
      da[i] = g;
      db[i] += g;
    }
  }
}
