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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef DS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include "dynsweep/knobs.h"
#include "layers.h"

/* ---- LIBXSMM for small GEMMs (issue 13) ------------------------------------
 * Which library computes a product is decided by its shape alone
 * (ds_nn_xsmm_nn / ds_nn_xsmm_nt, from the measurements in docs/performance.md,
 * "Single points: LIBXSMM and blocking over samples"), never by timing or
 * load, so a point's numbers depend only on the point (and on the binary, the
 * CPU family and LIBXSMM's JIT target). The products are run over blocks of
 * DS_NN_XSMM_NB samples with one JIT kernel per shape:
 *   - NN (Z = W A, dA = W^T dZ on a copied W^T): each output column depends on
 *     its own column only, so the blocking does not change any bit;
 *   - NT (dW = dZ A^T, a sum over samples): the first block with beta = 0,
 *     the others with beta = 1; LIBXSMM's kernel keeps C in registers and
 *     adds the products in sample order, so the result is bitwise the one
 *     kernel over all samples (tested), whatever the block size.
 * DYNSWEEP_NN_GEMM=openblas (read once) or ds_nn_set_xsmm(0) turns it off
 * (comparisons, benchmarks): then every product is the OpenBLAS call of
 * before, bit for bit. */
static int g_xsmm = -1;

int ds_nn_xsmm_enabled(void) {
#ifdef DS_HAVE_LIBXSMM
  if (g_xsmm < 0) {
    g_xsmm = !ds_knob_is(DS_KNOB_NN_GEMM, "openblas");
  }
  return g_xsmm;
#else
  return 0;
#endif
}

void ds_nn_set_xsmm(int on) {
#ifdef DS_HAVE_LIBXSMM
  g_xsmm = on ? 1 : 0;
#else
  (void)on;
#endif
}

/* C (m x n) = A (m x k) B (k x n): LIBXSMM when it is faster for the shape.
 * Measured (one thread, blocks of 64 samples): 1.3-5x OpenBLAS for m, k <= 64,
 * about equal at m k = 128 x 128 / 64 x 256, slower beyond (0.75x at 256 x 256). */
int ds_nn_xsmm_nn(int m, int k) { return m <= 256 && k <= 256 && (long)m * k <= 16384; }
/* C (m x k) = A (m x n) B^T (n x k), summed over n samples: LIBXSMM up to
 * 64 x 64 outputs, and thin ones (min <= 32, max <= 256); 0.6-0.9x beyond. */
int ds_nn_xsmm_nt(int m, int k) {
  int lo = m < k ? m : k, hi = m < k ? k : m;
  return (long)m * k <= 4096 || (lo <= 32 && hi <= 256);
}

#ifdef DS_HAVE_LIBXSMM
/* A few kernels per thread, looked up by shape (LIBXSMM's own registry is
 * the fallback: dispatching costs more than a small block's product). */
typedef struct {
  int m, n, k, flags;
  double beta;
  libxsmm_dmmfunction f;
} xsmm_slot;
#define XSMM_SLOTS 32
static _Thread_local xsmm_slot g_slots[XSMM_SLOTS];

static libxsmm_dmmfunction xsmm_get(int m, int n, int k, int lda, int ldb, int ldc, double beta,
                                    int flags) {
  unsigned h = ((unsigned)m * 73856093u) ^ ((unsigned)n * 19349663u) ^ ((unsigned)k * 83492791u) ^
               (unsigned)flags * 2654435761u ^ (beta != 0.0 ? 0x5bd1e995u : 0u);
  xsmm_slot *s = &g_slots[(h ^ (h >> 16)) % XSMM_SLOTS];
  /* lda/ldb/ldc are m, k (or n for trans B), m in every call below */
  if (s->f && s->m == m && s->n == n && s->k == k && s->flags == flags && s->beta == beta)
    return s->f;
  const double one = 1.0;
  const libxsmm_blasint M = m, N = n, K = k, la = lda, lb = ldb, lc = ldc;
  libxsmm_dmmfunction f = libxsmm_dmmdispatch(M, N, K, &la, &lb, &lc, &one, &beta,
                                              flags ? &flags : NULL, NULL);
  if (f) *s = (xsmm_slot){m, n, k, flags, beta, f};
  return f;
}
#endif

/* C (m x n, ld m) = A (m x k, ld m) B (k x n, ld k) (+ C with beta = 1) in
 * blocks of DS_NN_XSMM_NB columns; 0 when LIBXSMM could not make a kernel
 * (nothing written: the caller goes to OpenBLAS). */
static int xsmm_nn(double *C, const double *A, const double *B, int m, int n, int k,
                   double beta) {
#ifdef DS_HAVE_LIBXSMM
  const int nb = DS_NN_XSMM_NB, full = n / nb, rem = n % nb;
  libxsmm_dmmfunction kf = full ? xsmm_get(m, nb, k, m, k, m, beta, 0) : NULL;
  libxsmm_dmmfunction kr = rem ? xsmm_get(m, rem, k, m, k, m, beta, 0) : NULL;
  if ((full && !kf) || (rem && !kr)) return 0;
  for (int j = 0; j < full; j++) kf(A, B + (size_t)j * nb * k, C + (size_t)j * nb * m);
  if (rem) kr(A, B + (size_t)full * nb * k, C + (size_t)full * nb * m);
  return 1;
#else
  (void)C, (void)A, (void)B, (void)m, (void)n, (void)k, (void)beta;
  return 0;
#endif
}

/* C (m x k, ld m) = A (m x n, ld m) B^T, B (k x n, ld k): sum over n samples
 * in blocks (first beta = 0, then beta = 1: the same bits as one kernel);
 * with add, every block adds to C (a later block of samples, in order). */
static int xsmm_nt(double *C, const double *A, const double *B, int m, int k, int n, int add) {
#ifdef DS_HAVE_LIBXSMM
  const int nb = DS_NN_XSMM_NB, full = n / nb, rem = n % nb, tb = LIBXSMM_GEMM_FLAG_TRANS_B;
  const double b0 = add ? 1.0 : 0.0;
  libxsmm_dmmfunction k0 = full ? xsmm_get(m, k, nb, m, k, m, b0, tb) : NULL;
  libxsmm_dmmfunction k1 = full > 1 ? xsmm_get(m, k, nb, m, k, m, 1.0, tb) : NULL;
  libxsmm_dmmfunction kr = rem ? xsmm_get(m, k, rem, m, k, m, full ? 1.0 : b0, tb) : NULL;
  if ((full && !k0) || (full > 1 && !k1) || (rem && !kr)) return 0;
  for (int j = 0; j < full; j++)
    (j ? k1 : k0)(A + (size_t)j * nb * m, B + (size_t)j * nb * k, C);
  if (rem) kr(A + (size_t)full * nb * m, B + (size_t)full * nb * k, C);
  return 1;
#else
  (void)C, (void)A, (void)B, (void)m, (void)k, (void)n, (void)add;
  return 0;
#endif
}

/* Wt (din x dout) = W^T, W (dout x din), both column-major */
static inline void transpose_w(double *restrict Wt, const double *restrict W, int dout, int din) {
  for (int i = 0; i < dout; i++)
    for (int k = 0; k < din; k++) Wt[k + (size_t)i * din] = W[i + (size_t)k * dout];
}

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
  if (d == 16) bias_add_relu_d(Z, A, b, 16, n);
  else if (d == 32) bias_add_relu_d(Z, A, b, 32, n);
  else if (d == 64) bias_add_relu_d(Z, A, b, 64, n);
  else bias_add_relu_d(Z, A, b, d, n);
}

/* Z (m x n) = W (m x k) Ain (k x n) by LIBXSMM in blocks of samples, each
 * block followed at once (still in L1) by Z += b and A = max(Z, 0) when b /
 * A are given: blocking over samples. Every element gets the same s + b and
 * max as in separate passes, so the block size changes no bit. */
static int xsmm_nn_post(double *Z, double *A, const double *b, const double *W,
                        const double *Ain, int m, int n, int k) {
#ifdef DS_HAVE_LIBXSMM
  const int nb = DS_NN_XSMM_NB, full = n / nb, rem = n % nb;
  libxsmm_dmmfunction kf = full ? xsmm_get(m, nb, k, m, k, m, 0.0, 0) : NULL;
  libxsmm_dmmfunction kr = rem ? xsmm_get(m, rem, k, m, k, m, 0.0, 0) : NULL;
  if ((full && !kf) || (rem && !kr)) return 0;
  for (int j = 0; j <= full; j++) {
    int cols = j < full ? nb : rem;
    if (!cols) break;
    size_t c0 = (size_t)j * nb;
    double *z = Z + c0 * m, *a = A ? A + c0 * m : NULL;
    (j < full ? kf : kr)(W, Ain + c0 * k, z);
    if (b) ds_nn_bias_add_relu(z, a, b, m, cols);
    else if (a) ds_nn_relu_forward(a, z, m, cols);
  }
  return 1;
#else
  (void)Z, (void)A, (void)b, (void)W, (void)Ain, (void)m, (void)n, (void)k;
  return 0;
#endif
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
  if (alpha == 1.0 && ds_nn_xsmm_enabled() && ds_nn_xsmm_nn(dout, din) &&
      xsmm_nn_post(Z, A, b, W, Ain, dout, n, din)) /* bias and ReLU per block, in cache */
    return;
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
  if (alpha == 1.0 && ds_nn_xsmm_enabled() && ds_nn_xsmm_nn(dout, din) &&
      xsmm_nn_post(Z, NULL, b, W, A, dout, n, din))
    return;
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
  int xs = alpha == 1.0 && ds_nn_xsmm_enabled();
  if (dW && !(xs && ds_nn_xsmm_nt(dout, din) && xsmm_nt(dW, dZ, A, dout, din, n, 0)))
    /* dW (dout x din) = alpha dZ (dout x n) A^T (n x din) */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, dout, din, n, alpha, dZ, dout, A, din,
                0.0, dW, dout);
  if (!dA) return;
  if (xs && ds_nn_xsmm_nn(din, dout)) {
    /* dA = W^T dZ as an NN product on a copy of W^T (LIBXSMM has no
     * transposed-A kernel); at most 16384 entries */
    double stack[4096];
    size_t cnt = (size_t)dout * din;
    double *Wt = cnt <= sizeof stack / sizeof *stack ? stack : malloc(cnt * sizeof *Wt);
    if (Wt) {
      transpose_w(Wt, W, dout, din);
      int ok = xsmm_nn(dA, Wt, dZ, din, n, dout, 0.0);
      if (Wt != stack) free(Wt);
      if (ok) return;
    }
  }
  if (dout <= DS_NN_TN_MAX_DOUT && din <= DS_NN_TN_MAX_DIN) {
    /* Small layers: OpenBLAS's TN path packs both operands and runs the
     * general kernel (1.0 us for 4x4 by 4x256); the NN product with W^T
     * copied out (din x dout, at most 64 x 15) takes the small-matrix kernel
     * (0.39 us). Same K = dout products summed in the same order: bitwise
     * equal for K <= 15 (test_nn_fast; K = 16 is not on Cooperlake). */
    double Wt[DS_NN_TN_MAX_DOUT * DS_NN_TN_MAX_DIN];
    transpose_w(Wt, W, dout, din);
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
                                                                   int d, int n, int first) {
  if (d > 16) {
    if (first)
      for (int i = 0; i < d; i++) db[i] = 0.0;
    for (int j = 0; j < n; j++) {
      const double *dz = dZ + (size_t)j * d;
      for (int i = 0; i < d; i++) db[i] += dz[i];
    }
    return;
  }
  double acc[16] = {0};
  if (!first)
    for (int i = 0; i < d; i++) acc[i] = db[i];
  for (int j = 0; j < n; j++) {
    const double *dz = dZ + (size_t)j * d;
    for (int i = 0; i < d; i++) acc[i] += dz[i];
  }
  for (int i = 0; i < d; i++) db[i] = acc[i];
}

DS_ELEMENTWISE
void ds_nn_bias_backward(double *db, const double *dZ, int d, int n) {
#define CALL_D(D) bias_backward_d(db, dZ, D, n, 1)
  DS_SMALL_D_DISPATCH(CALL_D, bias_backward_d(db, dZ, d, n, 1))
#undef CALL_D
}

DS_ELEMENTWISE
void ds_nn_bias_backward_blk(double *db, const double *dZ, int d, int n, int first) {
#define CALL_D(D) bias_backward_d(db, dZ, D, n, first)
  DS_SMALL_D_DISPATCH(CALL_D, bias_backward_d(db, dZ, d, n, first))
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
                                                                      int n, int first) {
  if (d > 16) {
    if (first)
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
  if (!first) /* a later block of samples: carry on from the sums so far */
    for (int i = 0; i < d; i++) acc[i] = db[i];
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
#define CALL_D(D) relu_backward_db_d(dA, Z, db, D, n, 1)
  DS_SMALL_D_DISPATCH(CALL_D, relu_backward_db_d(dA, Z, db, d, n, 1))
#undef CALL_D
}

/* ds_nn_relu_backward on a block of samples; first = 0 carries the row sums
 * on from db (the same additions in the same order as one pass). */
DS_ELEMENTWISE
static void relu_backward_blk(double *dA, const double *Z, double *db, int d, int n, int first) {
  if (!db) {
    size_t count = (size_t)d * n;
    for (size_t k = 0; k < count; k++) dA[k] = Z[k] > 0.0 ? dA[k] : 0.0;
    return;
  }
#define CALL_D(D) relu_backward_db_d(dA, Z, db, D, n, first)
  DS_SMALL_D_DISPATCH(CALL_D, relu_backward_db_d(dA, Z, db, d, n, first))
#undef CALL_D
}

void ds_nn_linear_backward_relu(double *dA, double *dW, const double *dZ, const double *W,
                                const double *A, const double *Zin, double *db, int dout,
                                int din, int n, double alpha) {
  if (alpha == 1.0 && ds_nn_xsmm_enabled() && ds_nn_xsmm_nn(din, dout) &&
      (size_t)dout * din <= 4096) {
    ds_nn_linear_backward(NULL, dW, dZ, W, A, dout, din, n, alpha);
    /* per block of samples: dA = W^T dZ, then the ReLU mask and the bias row
     * sums while the block is in L1 */
    if (ds_nn_xsmm_backward_act(dA, dZ, W, Zin, db, dout, din, n, 1)) return;
    dW = NULL; /* done */
  }
  ds_nn_linear_backward(dA, dW, dZ, W, A, dout, din, n, alpha);
  ds_nn_relu_backward(dA, Zin, db, din, n);
}

/* ---- blocks of samples through the whole net (mlp.c, issue 13) ------------ */

int ds_nn_xsmm_forward(double *Z, double *A, const double *b, const double *W, const double *Ain,
                       int dout, int din, int n) {
  return xsmm_nn_post(Z, A, b, W, Ain, dout, n, din);
}

int ds_nn_xsmm_dw(double *dW, const double *dZ, const double *A, int dout, int din, int n,
                  int first) {
  /* a later block adds to dW (beta = 1), in sample order */
  return xsmm_nt(dW, dZ, A, dout, din, n, !first);
}

int ds_nn_xsmm_backward_act(double *dA, const double *dZ, const double *W, const double *Zin,
                            double *db, int dout, int din, int n, int first) {
#ifdef DS_HAVE_LIBXSMM
  if ((size_t)dout * din > 4096) return 0;
  const int nb = DS_NN_XSMM_NB, full = n / nb, rem = n % nb;
  libxsmm_dmmfunction kf = full ? xsmm_get(din, nb, dout, din, dout, din, 0.0, 0) : NULL;
  libxsmm_dmmfunction kr = rem ? xsmm_get(din, rem, dout, din, dout, din, 0.0, 0) : NULL;
  if ((full && !kf) || (rem && !kr)) return 0;
  double Wt[4096];
  transpose_w(Wt, W, dout, din);
  for (int j = 0; j <= full; j++) {
    int cols = j < full ? nb : rem;
    if (!cols) break;
    size_t c0 = (size_t)j * nb;
    (j < full ? kf : kr)(Wt, dZ + c0 * dout, dA + c0 * din);
    if (Zin) relu_backward_blk(dA + c0 * din, Zin + c0 * din, db, din, cols, first && j == 0);
    else if (db) ds_nn_bias_backward_blk(db, dA + c0 * din, din, cols, first && j == 0);
  }
  return 1;
#else
  (void)dA, (void)dZ, (void)W, (void)Zin, (void)db, (void)dout, (void)din, (void)n, (void)first;
  return 0;
#endif
}
