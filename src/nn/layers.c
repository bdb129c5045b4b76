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

/* Small d (a few rows per column): the loops below are inlined with d a
 * compile-time constant 1..8 or 16, so the compiler keeps a column in vector
 * registers instead of running a scalar remainder loop per column (at d = 4
 * the generic versions took 0.7 us per 4 x 256 pass). The same operations on
 * the same elements in the same order: bitwise equal to the generic loop. */
#define DS_SMALL_D_DISPATCH(call_d, call_generic)                                              \
  switch (d) {                                                                                 \
  case 1: call_d(1); break;                                                                    \
  case 2: call_d(2); break;                                                                    \
  case 3: call_d(3); break;                                                                    \
  case 4: call_d(4); break;                                                                    \
  case 5: call_d(5); break;                                                                    \
  case 6: call_d(6); break;                                                                    \
  case 7: call_d(7); break;                                                                    \
  case 8: call_d(8); break;                                                                    \
  case 16: call_d(16); break;                                                                  \
  default: call_generic; break;                                                                \
  }

static inline __attribute__((always_inline)) void bias_add_relu_d(double *restrict Z,
                                                                  double *restrict A,
                                                                  const double *restrict b, int d,
                                                                  int n) {
  if (!A) {
    for (int j = 0; j < n; j++) {
      double *z = Z + (size_t)j * d;
      for (int i = 0; i < d; i++) z[i] += b[i];
    }
    return;
  }
  for (int j = 0; j < n; j++) {
    double *z = Z + (size_t)j * d, *a = A + (size_t)j * d;
    for (int i = 0; i < d; i++) {
      double v = z[i] + b[i];
      z[i] = v;
      a[i] = v > 0.0 ? v : 0.0;
    }
  }
}

/* Z += b 1^T, and A = max(Z, 0) when A is not NULL, in one pass. For d < 8
 * the bias is repeated into a pattern of P = lcm(d, 8) entries and the matrix
 * is walked as one flat array in blocks of P (vectorises at any d); the
 * tail and d >= 8 go column by column. Each element gets the same z + b. */
DS_ELEMENTWISE
void ds_nn_bias_add_relu(double *Z, double *A, const double *b, int d, int n) {
  if (d < 8) {
    double pat[56];
    int P = d;
    while (P % 8) P += d;
    for (int q = 0; q < P; q++) pat[q] = b[q % d];
    int cols = P / d, nblk = n / cols;
    size_t count = (size_t)nblk * P;
    if (A) {
      for (size_t k0 = 0; k0 < count; k0 += P)
        for (int q = 0; q < P; q++) {
          double v = Z[k0 + q] + pat[q];
          Z[k0 + q] = v;
          A[k0 + q] = v > 0.0 ? v : 0.0;
        }
    } else {
      for (size_t k0 = 0; k0 < count; k0 += P)
        for (int q = 0; q < P; q++) Z[k0 + q] += pat[q];
    }
    int done = nblk * cols;
    bias_add_relu_d(Z + (size_t)done * d, A ? A + (size_t)done * d : NULL, b, d, n - done);
    return;
  }
  bias_add_relu_d(Z, A, b, d, n);
}

int ds_nn_bias_after(int din) { return din <= DS_NN_BIAS_AFTER_MAX_K; }

/* alpha = 1.0 (standard parameterisation) goes to BLAS as is: the same
 * products, bitwise, as before the NTK scale existed.
 * With a bias and din <= DS_NN_BIAS_AFTER_MAX_K the GEMM runs with beta = 0
 * and the bias is added in the pass that follows (fused with the ReLU when
 * A is given): OpenBLAS's beta = 1 small-matrix kernel costs 5x its beta = 0
 * one at d = 4 (2.1 vs 0.4 us for 4x4 by 4x256). The GEMM sums the K = din
 * products into one register accumulator and adds it to C once (one K
 * block), so b + s (beta = 1) and s + b (here) are the same rounding:
 * bitwise equal (test_nn_fast). Not with alpha != 1 (NTK parameterisation):
 * the kernels then form alpha s + b in one FMA, so that keeps beta = 1. */
void ds_nn_linear_forward_relu(double *Z, double *A, const double *W, const double *b,
                               const double *Ain, int dout, int din, int n, double alpha) {
  if (b && alpha == 1.0 && ds_nn_bias_after(din)) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, n, din, alpha, W, dout, Ain, din,
                0.0, Z, dout);
    ds_nn_bias_add_relu(Z, A, b, dout, n);
    return;
  }
  ds_nn_linear_forward(Z, W, b, Ain, dout, din, n, alpha);
  if (A) ds_nn_relu_forward(A, Z, dout, n);
}

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
  if (!dA) return;
  if (dout <= DS_NN_TN_MAX_DOUT && din <= DS_NN_TN_MAX_DIN) {
    /* Small layers: OpenBLAS's TN path packs both operands and runs the
     * general kernel (1.0 us for 4x4 by 4x256); the NN product with W^T
     * copied out (din x dout, at most 64 x 15) takes the small-matrix kernel
     * (0.39 us). Same K = dout products summed in the same order: bitwise
     * equal for K <= 15 (test_nn_fast; K = 16 is not on Cooperlake). */
    double Wt[DS_NN_TN_MAX_DOUT * DS_NN_TN_MAX_DIN];
    for (int i = 0; i < dout; i++)
      for (int k = 0; k < din; k++) Wt[k + (size_t)i * din] = W[i + (size_t)k * dout];
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, din, n, dout, alpha, Wt, din, dZ, dout,
                0.0, dA, din);
    return;
  }
  /* dA (din x n) = alpha W^T (din x dout) dZ (dout x n) */
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, din, n, dout, alpha, W, dout, dZ, dout,
              0.0, dA, din);
}

static inline __attribute__((always_inline)) void bias_backward_d(double *restrict db,
                                                                   const double *restrict dZ,
                                                                   int d, int n) {
  if (d > 16) {
    for (int i = 0; i < d; i++) db[i] = 0.0;
    for (int j = 0; j < n; j++) {
      const double *dz = dZ + (size_t)j * d;
      for (int i = 0; i < d; i++) db[i] += dz[i];
    }
    return;
  }
  double acc[16] = {0};
  for (int j = 0; j < n; j++) {
    const double *dz = dZ + (size_t)j * d;
    for (int i = 0; i < d; i++) acc[i] += dz[i];
  }
  for (int i = 0; i < d; i++) db[i] = acc[i];
}

DS_ELEMENTWISE
void ds_nn_bias_backward(double *db, const double *dZ, int d, int n) {
#define CALL_D(D) bias_backward_d(db, dZ, D, n)
  DS_SMALL_D_DISPATCH(CALL_D, bias_backward_d(db, dZ, d, n))
#undef CALL_D
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

static inline __attribute__((always_inline)) void relu_backward_db_d(double *restrict dA,
                                                                      const double *restrict Z,
                                                                      double *restrict db, int d,
                                                                      int n) {
  if (d > 16) {
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
    return;
  }
  double acc[16] = {0}; /* db in registers: 0 + g_0 + g_1 + ... */
  for (int j = 0; j < n; j++) {
    double *da = dA + (size_t)j * d;
    const double *z = Z + (size_t)j * d;
    for (int i = 0; i < d; i++) {
      double g = z[i] > 0.0 ? da[i] : 0.0;
      da[i] = g;
      acc[i] += g;
    }
  }
  for (int i = 0; i < d; i++) db[i] = acc[i];
}

DS_ELEMENTWISE
void ds_nn_relu_backward(double *dA, const double *Z, double *db, int d, int n) {
  if (!db) {
    size_t count = (size_t)d * n;
    for (size_t k = 0; k < count; k++) dA[k] = Z[k] > 0.0 ? dA[k] : 0.0;
    return;
  }
#define CALL_D(D) relu_backward_db_d(dA, Z, db, D, n)
  DS_SMALL_D_DISPATCH(CALL_D, relu_backward_db_d(dA, Z, db, d, n))
#undef CALL_D
}
