/* tile.c -- the batched trainer of map tiles (include/dynsweep/tile.h).
 *
 * Every point of a tile is the same depth-2 net on the same X, Y from the same
 * W(0), with its own lr_in, lr_out and W_1 offset. Per point and step:
 *
 *   G1   Z^T (n x m)   = X^T (n x d) W_1^T (d x m)          GEMM, K = d
 *   pass A = act(alpha_1 Z); F = alpha_2 W_2 A; r = F - Y; L = c sum r^2;
 *        g = 2c r (= dL/dF); dW_2 = alpha_2 g A^T;
 *        D = -lr_in alpha_1 alpha_2 (W_2^T g) * act'      (n x m, over Z)
 *   G2   W_1^T (d x m) += X (d x n) D (n x m)              GEMM, K = n (the update)
 *        W_2 -= lr_out dW_2
 *
 * W_1 is kept transposed (d x m) so both GEMMs are NN products with the
 * shared X^T / X as the left operand, and Z is kept transposed (samples
 * contiguous) so the pass vectorises over samples with the sums over the
 * hidden units and over samples in vector lanes. The GEMMs are LIBXSMM JIT
 * kernels (measured faster than OpenBLAS on these shapes, and than stacking
 * several points into one wider product: docs/performance.md "Map tiles");
 * OpenBLAS when LIBXSMM is absent or cannot JIT the shape.
 *
 * Determinism: a point's numbers come from the same kernels on the same
 * shapes in the same order whatever the other points are, so its losses are
 * bitwise independent of the tile. The pass is compiled with
 * -ffp-contract=off and uses explicit fma() where it accumulates (the same
 * bits in its AVX-512, AVX2 and baseline versions). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef DS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include "dynsweep/knobs.h"
#include "dynsweep/nn.h"
#include "dynsweep/tile.h"
#include "layers.h"
#include "nn_internal.h"

#define LANES 16 /* samples per block of the pass: 4 AVX2 vectors (accumulators stay in registers) */
#define MAXW 64  /* width and d_out limit (stack buffers) */

typedef struct tile_ctx {
  const ds_tile_net *net;
  double a1, a2;
  const double *X, *XT, *Y;
  double *Z;   /* n x m: s = X^T W_1^T, then A, then D */
  double *G;   /* d_out x n: dL/dF, row k at G + k n */
  double *W1T; /* d x m */
  double *W2;  /* d_out x m */
#ifdef DS_HAVE_LIBXSMM
  libxsmm_dmmfunction k1, k2;
#endif
  void (*tanh_pass)(double *Z, size_t count, double a1, double g);
  /* d_out = 1 on AVX2 + FMA: the pass in intrinsics (the same operations as
   * forward() / backward() below, so the same bits), NULL otherwise */
  double (*fwd1)(struct tile_ctx *t);
  void (*bwd1)(struct tile_ctx *t, double lr_in, double lr_out);
} tile_ctx;

static void gemm_forward(tile_ctx *t) {
  const ds_tile_net *net = t->net;
#ifdef DS_HAVE_LIBXSMM
  if (t->k1) {
    t->k1(t->XT, t->W1T, t->Z);
    return;
  }
#endif
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, net->n, net->width, net->d_in, 1.0, t->XT,
              net->n, t->W1T, net->d_in, 0.0, t->Z, net->n);
}

static void gemm_update(tile_ctx *t) {
  const ds_tile_net *net = t->net;
#ifdef DS_HAVE_LIBXSMM
  if (t->k2) {
    t->k2(t->X, t->Z, t->W1T);
    return;
  }
#endif
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, net->d_in, net->width, net->n, 1.0, t->X,
              net->d_in, t->Z, net->n, 1.0, t->W1T, net->d_in);
}

/* ---- tanh of tiles: tanh(x) = u / (u + 2), u = expm1(2|x|), sign restored ----
 * expm1(y) = 2^k (expm1(r) + 1) - 1 = fma(2^k, p, 2^k - 1), y = k ln2 + r,
 * |r| <= ln2/2, p = expm1(r) by its Taylor polynomial of degree 13 (the
 * remainder is below 2e-17 relative); y is clamped at 40 (tanh = 1 in double
 * from 2|x| > 38). At most a few ulp from the true tanh (tests/test_tile.c
 * checks <= 6 ulp against libm's on 10^6 values, 4.0 measured, and agreement
 * with the per-point path, SLEEF's 1-ulp tanh, to 1e-12 on whole training
 * runs); about
 * twice as fast as SLEEF's tanhd4_u10avx2 here because it is inlined and
 * needs no special cases. The AVX2 and the scalar version do the same IEEE
 * operations in the same order (fma, round-to-nearest-even): the same bits. */
#define TANH_LN2_HI 6.93147180369123816490e-01 /* fdlibm: k ln2_hi exact for |k| < 2^20 */
#define TANH_LN2_LO 1.90821492927058770002e-10
#define TANH_INV_LN2 1.44269504088896338700e+00
static const double tanh_q[12] = { /* 1/13!, 1/12!, ..., 1/2! */
    1.0 / 6227020800.0, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0,
    1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};

static inline __attribute__((always_inline)) double tanh1(double x) {
  double ax = fabs(x), y = ax + ax;
  y = y > 40.0 ? 40.0 : y; /* NaN stays NaN */
  double kd = nearbyint(y * TANH_INV_LN2);
  double r = fma(-kd, TANH_LN2_HI, y);
  r = fma(-kd, TANH_LN2_LO, r);
  double q = tanh_q[0];
  for (int i = 1; i < 12; i++) q = fma(q, r, tanh_q[i]);
  double p = fma(r * r, q, r);
  double tk = isnan(kd) ? 1.0 : ldexp(1.0, (int)kd);
  double u = fma(tk, p, tk - 1.0);
  return copysign(u / (u + 2.0), x);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx2,fma"))) static inline __m256d tanh4(__m256d x) {
  const __m256d sign = _mm256_set1_pd(-0.0), one = _mm256_set1_pd(1.0);
  __m256d ax = _mm256_andnot_pd(sign, x);
  __m256d y = _mm256_min_pd(_mm256_set1_pd(40.0), _mm256_add_pd(ax, ax)); /* NaN: y */
  __m256d kd = _mm256_round_pd(_mm256_mul_pd(y, _mm256_set1_pd(TANH_INV_LN2)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(TANH_LN2_HI), y);
  r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(TANH_LN2_LO), r);
  __m256d q = _mm256_set1_pd(tanh_q[0]);
  for (int i = 1; i < 12; i++) q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(tanh_q[i]));
  __m256d p = _mm256_fmadd_pd(_mm256_mul_pd(r, r), q, r);
  /* 2^k, k = 0..58 (NaN: any power, p is NaN) */
  __m256i k64 = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(kd));
  __m256d tk = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(k64, _mm256_set1_epi64x(1023)), 52));
  /* (NaN: tk is garbage but p is NaN, so u is NaN: no blend needed) */
  __m256d u = _mm256_fmadd_pd(tk, p, _mm256_sub_pd(tk, one));
  __m256d t = _mm256_div_pd(u, _mm256_add_pd(u, _mm256_set1_pd(2.0)));
  return _mm256_or_pd(t, _mm256_and_pd(x, sign));
}

/* tanh4 in 8 lanes: the same IEEE operations, so the same bits (tested);
 * about twice the values per instruction where the CPU has 512-bit units */
__attribute__((target("avx512f,avx512dq,fma"))) static inline __m512d tanh8(__m512d x) {
  const __m512d one = _mm512_set1_pd(1.0);
  __m512d ax = _mm512_abs_pd(x);
  __m512d y = _mm512_min_pd(_mm512_set1_pd(40.0), _mm512_add_pd(ax, ax)); /* NaN: y */
  __m512d kd = _mm512_roundscale_pd(_mm512_mul_pd(y, _mm512_set1_pd(TANH_INV_LN2)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(TANH_LN2_HI), y);
  r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(TANH_LN2_LO), r);
  __m512d q = _mm512_set1_pd(tanh_q[0]);
  for (int i = 1; i < 12; i++) q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(tanh_q[i]));
  __m512d p = _mm512_fmadd_pd(_mm512_mul_pd(r, r), q, r);
  __m512i k64 = _mm512_cvtpd_epi64(kd); /* 0..58 (NaN: garbage, p is NaN) */
  __m512d tk = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(k64, _mm512_set1_epi64(1023)), 52));
  __m512d u = _mm512_fmadd_pd(tk, p, _mm512_sub_pd(tk, one));
  __m512d t = _mm512_div_pd(u, _mm512_add_pd(u, _mm512_set1_pd(2.0)));
  /* the sign of x back: t >= 0 or NaN, so or-ing the sign bit is copysign */
  return _mm512_castsi512_pd(_mm512_or_si512(
      _mm512_castpd_si512(t),
      _mm512_and_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)0x8000000000000000ULL))));
}

/* Z = tanh(g * (a1 * Z)) in place, 16 values an iteration (two independent
 * polynomial chains) */
__attribute__((target("avx512f,avx512dq,fma"))) static void tanh_pass_avx512(double *Z, size_t count,
                                                                            double a1, double g) {
  __m512d va = _mm512_set1_pd(a1), vg = _mm512_set1_pd(g);
  size_t k = 0;
  for (; k + 16 <= count; k += 16) {
    __m512d z0 = _mm512_loadu_pd(Z + k), z1 = _mm512_loadu_pd(Z + k + 8);
    if (a1 != 1.0) {
      z0 = _mm512_mul_pd(va, z0);
      z1 = _mm512_mul_pd(va, z1);
    }
    _mm512_storeu_pd(Z + k, tanh8(_mm512_mul_pd(vg, z0)));
    _mm512_storeu_pd(Z + k + 8, tanh8(_mm512_mul_pd(vg, z1)));
  }
  for (; k + 8 <= count; k += 8) {
    __m512d z = _mm512_loadu_pd(Z + k);
    if (a1 != 1.0) z = _mm512_mul_pd(va, z);
    _mm512_storeu_pd(Z + k, tanh8(_mm512_mul_pd(vg, z)));
  }
  for (; k < count; k++) Z[k] = tanh1(g * (a1 != 1.0 ? a1 * Z[k] : Z[k]));
}

/* Z = tanh(g * (a1 * Z)) in place (a1 = 1: tanh(g Z)) */
__attribute__((target("avx2,fma"))) static void tanh_pass_avx2(double *Z, size_t count, double a1,
                                                               double g) {
  __m256d va = _mm256_set1_pd(a1), vg = _mm256_set1_pd(g);
  size_t k = 0;
  for (; k + 4 <= count; k += 4) {
    __m256d z = _mm256_loadu_pd(Z + k);
    if (a1 != 1.0) z = _mm256_mul_pd(va, z);
    _mm256_storeu_pd(Z + k, tanh4(_mm256_mul_pd(vg, z)));
  }
  for (; k < count; k++) Z[k] = tanh1(g * (a1 != 1.0 ? a1 * Z[k] : Z[k]));
}
#endif

static void tanh_pass_generic(double *Z, size_t count, double a1, double g) {
  for (size_t k = 0; k < count; k++) Z[k] = tanh1(g * (a1 != 1.0 ? a1 * Z[k] : Z[k]));
}

/* DYNSWEEP_TILE_TANH=sleef: the per-point path's SLEEF tanh (tanh.c) instead,
 * for comparisons (about half the speed) */
static void tanh_pass_sleef(double *Z, size_t count, double a1, double g) {
  if (a1 != 1.0)
    for (size_t k = 0; k < count; k++) Z[k] = a1 * Z[k];
  ds_nn_tanh(Z, Z, count, g);
}

typedef void (*tanh_pass_fn)(double *Z, size_t count, double a1, double g);
static const char *pass_isa(void);

/* The tiles' tanh kernel: the widest vector version pass_isa allows (the
 * same bits whichever), the scalar one under DYNSWEEP_TILE_GENERIC=1, SLEEF's
 * under DYNSWEEP_TILE_TANH=sleef. */
static tanh_pass_fn tanh_pick(const char **name) {
  if (ds_knob_is(DS_KNOB_TILE_TANH, "sleef")) {
    *name = ds_nn_tanh_kernel();
    return tanh_pass_sleef;
  }
  const char *isa = pass_isa();
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  if (strcmp(isa, "generic") && !ds_knob_on(DS_KNOB_TILE_GENERIC)) {
    if (!strcmp(isa, "avx512")) {
      *name = "the tiles' own (avx512)";
      return tanh_pass_avx512;
    }
    *name = "the tiles' own (avx2)";
    return tanh_pass_avx2;
  }
#endif
  (void)isa;
  *name = "the tiles' own (scalar)";
  return tanh_pass_generic;
}

/* for tests/test_tile.c: the tiles' tanh, the kernel tanh_pick chooses (one
 * value: the scalar version) */
void ds_tile_tanh(double *out, const double *in, size_t count, double gain) {
  if (out != in) memcpy(out, in, count * sizeof *out);
  const char *name;
  tanh_pick(&name)(out, count, 1.0, gain);
}

/* act(alpha_1 s) in place; relu/linear fused into the forward pass below,
 * tanh here (SLEEF, tanh.c) */
static inline __attribute__((always_inline)) double act_f(int act, double a1, double s) {
  double z = a1 == 1.0 ? s : a1 * s;
  if (act == DS_ACT_RELU) return z > 0.0 ? z : 0.0;
  return z;
}

/* Forward pass and loss of the current point: A over Z, G = 2c r; returns L. */
static inline __attribute__((always_inline)) double forward(tile_ctx *t, int act) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, dout = net->d_out;
  const double a1 = t->a1, a2 = t->a2, c2 = 2.0 * net->c;
  double *restrict Z = t->Z;
  double *restrict G = t->G;
  const double *restrict W2 = t->W2, *restrict Y = t->Y;
  gemm_forward(t);
  if (t->fwd1) return t->fwd1(t);
  int fused = act != DS_ACT_TANH; /* tanh: one pass first */
  if (!fused) t->tanh_pass(Z, (size_t)n * m, a1, net->gain);
  double part[LANES];
  for (int q = 0; q < LANES; q++) part[q] = 0.0;
  int nb = n / LANES * LANES;
  for (int k = 0; k < dout; k++) {
    for (int j = 0; j < nb; j += LANES) {
      double f[LANES];
      for (int q = 0; q < LANES; q++) f[q] = 0.0;
      for (int i = 0; i < m; i++) {
        double w = W2[k + (size_t)i * dout];
        double *zc = Z + (size_t)i * n + j;
        for (int q = 0; q < LANES; q++) {
          double a = zc[q];
          if (fused && k == 0) zc[q] = a = act_f(act, a1, a);
          f[q] = fma(w, a, f[q]);
        }
      }
      for (int q = 0; q < LANES; q++) {
        double r = a2 * f[q] - Y[k + (size_t)(j + q) * dout];
        part[q] += r * r;
        G[(size_t)k * n + j + q] = c2 * r;
      }
    }
    double lanes[LANES]; /* the tail indexes its lanes: kept apart so part stays in registers */
    memcpy(lanes, part, sizeof lanes);
    for (int j = nb; j < n; j++) { /* the tail: the same operations per sample */
      double f = 0.0;
      for (int i = 0; i < m; i++) {
        double *zc = Z + (size_t)i * n + j;
        double a = *zc;
        if (fused && k == 0) *zc = a = act_f(act, a1, a);
        f = fma(W2[k + (size_t)i * dout], a, f);
      }
      double r = a2 * f - Y[k + (size_t)j * dout];
      lanes[j - nb] += r * r;
      G[(size_t)k * n + j] = c2 * r;
    }
    memcpy(part, lanes, sizeof part);
  }
  double sum = 0.0;
  for (int q = 0; q < LANES; q++) sum += part[q];
  return net->c * sum;
}

/* D of one sample of column i (a = A, da = (W_2^T g) of the sample) */
static inline __attribute__((always_inline)) double dz(int act, double s, double gain, double a,
                                                       double da) {
  double d = s * da;
  if (act == DS_ACT_RELU) return a > 0.0 ? d : 0.0;
  if (act == DS_ACT_TANH) return d * (gain * (1.0 - a * a));
  return d;
}

/* Backward pass and W_2 update: Z (holding A) becomes D; dW_2 from A and G
 * (summed in LANES lanes, lane = sample mod LANES, then the lanes in order). */
static inline __attribute__((always_inline)) void backward(tile_ctx *t, int act, double lr_in,
                                                           double lr_out) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, dout = net->d_out;
  const double a2 = t->a2, s = -lr_in * t->a1 * a2, gain = net->gain;
  double *restrict Z = t->Z;
  const double *restrict G = t->G;
  double *restrict W2 = t->W2;
  if (t->bwd1) {
    t->bwd1(t, lr_in, lr_out);
    return;
  }
  const int nb = n / LANES * LANES;
  for (int i = 0; i < m; i++) {
    double *restrict zc = Z + (size_t)i * n;
    double dw[MAXW];
    if (dout == 1) {
      double acc[LANES], w = W2[i];
      for (int q = 0; q < LANES; q++) acc[q] = 0.0;
      for (int j = 0; j < nb; j += LANES)
        for (int q = 0; q < LANES; q++) {
          double a = zc[j + q], g = G[j + q];
          acc[q] = fma(g, a, acc[q]);
          zc[j + q] = dz(act, s, gain, a, w * g);
        }
      double lanes[LANES]; /* the tail indexes its lanes: kept apart so acc stays in registers */
      memcpy(lanes, acc, sizeof lanes);
      for (int j = nb; j < n; j++) {
        double a = zc[j], g = G[j];
        lanes[j - nb] = fma(g, a, lanes[j - nb]);
        zc[j] = dz(act, s, gain, a, w * g);
      }
      double sum = 0.0;
      for (int q = 0; q < LANES; q++) sum += lanes[q];
      dw[0] = sum;
    } else {
      for (int k = 0; k < dout; k++) dw[k] = 0.0;
      for (int j = 0; j < n; j++) { /* general d_out: plain loops */
        double a = zc[j], da = W2[(size_t)i * dout] * G[j];
        dw[0] = fma(G[j], a, dw[0]);
        for (int k = 1; k < dout; k++) {
          double g = G[(size_t)k * n + j];
          da = fma(W2[k + (size_t)i * dout], g, da);
          dw[k] = fma(g, a, dw[k]);
        }
        zc[j] = dz(act, s, gain, a, da);
      }
    }
    if (!net->train_output) continue;
    for (int k = 0; k < dout; k++) W2[k + (size_t)i * dout] -= lr_out * (a2 * dw[k]);
  }
}

/* The passes' scalar ends, shared by the AVX2 and the AVX-512 versions: the
 * samples after the last block of LANES (as forward() / backward() do them),
 * then the lane sums in lane order. */
static inline __attribute__((always_inline)) double fwd1_tail(tile_ctx *t, int act,
                                                              double lanes[LANES]) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, nb = n / LANES * LANES;
  const double a1 = t->a1, a2 = t->a2, c2 = 2.0 * net->c;
  double *Z = t->Z, *G = t->G;
  const double *W2 = t->W2, *Y = t->Y;
  for (int j = nb; j < n; j++) { /* the tail as forward() */
    double f = 0.0;
    for (int i = 0; i < m; i++) {
      double *zc = Z + (size_t)i * n + j, a = *zc;
      if (act != DS_ACT_TANH) *zc = a = act_f(act, a1, a);
      f = fma(W2[i], a, f);
    }
    double r = a2 * f - Y[j];
    lanes[j - nb] += r * r;
    G[j] = c2 * r;
  }
  double sum = 0.0;
  for (int q = 0; q < LANES; q++) sum += lanes[q];
  return net->c * sum;
}

static inline __attribute__((always_inline)) void bwd1_tail(tile_ctx *t, int act, int i, double s,
                                                            double lanes[LANES], double lr_out) {
  const ds_tile_net *net = t->net;
  const int n = net->n, nb = n / LANES * LANES;
  const double a2 = t->a2, gain = net->gain;
  double *zc = t->Z + (size_t)i * n, *W2 = t->W2, w = W2[i];
  const double *G = t->G;
  for (int j = nb; j < n; j++) { /* the tail as backward() */
    double a = zc[j], g = G[j];
    lanes[j - nb] = fma(g, a, lanes[j - nb]);
    zc[j] = dz(act, s, gain, a, w * g);
  }
  double sum = 0.0;
  for (int q = 0; q < LANES; q++) sum += lanes[q];
  if (net->train_output) W2[i] -= lr_out * (a2 * sum);
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) static inline
/* relu(a1 s) / a1 s as act_f, 4 lanes: max(z, 0) is z > 0 ? z : 0 (NaN, -0 -> +0) */
AVX2_INLINE __m256d act4(int act, double a1, __m256d s) {
  __m256d z = a1 == 1.0 ? s : _mm256_mul_pd(_mm256_set1_pd(a1), s);
  return act == DS_ACT_RELU ? _mm256_max_pd(z, _mm256_setzero_pd()) : z;
}

AVX2_INLINE double fwd1_body(tile_ctx *t, int act) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, nb = n / LANES * LANES;
  const double a1 = t->a1, a2 = t->a2, c2 = 2.0 * net->c;
  double *Z = t->Z, *G = t->G;
  const double *W2 = t->W2, *Y = t->Y;
  if (act == DS_ACT_TANH) t->tanh_pass(Z, (size_t)n * m, a1, net->gain);
  const __m256d va2 = _mm256_set1_pd(a2), vc2 = _mm256_set1_pd(c2);
  __m256d p[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                  _mm256_setzero_pd()};
  for (int j = 0; j < nb; j += LANES) {
    __m256d f[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
    for (int i = 0; i < m; i++) {
      __m256d w = _mm256_set1_pd(W2[i]);
      double *zc = Z + (size_t)i * n + j;
      for (int v = 0; v < 4; v++) {
        __m256d a = _mm256_loadu_pd(zc + 4 * v);
        if (act != DS_ACT_TANH) {
          a = act4(act, a1, a);
          _mm256_storeu_pd(zc + 4 * v, a);
        }
        f[v] = _mm256_fmadd_pd(w, a, f[v]);
      }
    }
    for (int v = 0; v < 4; v++) {
      __m256d r = _mm256_sub_pd(_mm256_mul_pd(va2, f[v]), _mm256_loadu_pd(Y + j + 4 * v));
      p[v] = _mm256_add_pd(p[v], _mm256_mul_pd(r, r));
      _mm256_storeu_pd(G + j + 4 * v, _mm256_mul_pd(vc2, r));
    }
  }
  double lanes[LANES];
  for (int v = 0; v < 4; v++) _mm256_storeu_pd(lanes + 4 * v, p[v]);
  return fwd1_tail(t, act, lanes);
}

AVX2_INLINE void bwd1_body(tile_ctx *t, int act, double lr_in, double lr_out) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, nb = n / LANES * LANES;
  const double a2 = t->a2, s = -lr_in * t->a1 * a2, gain = net->gain;
  double *Z = t->Z, *W2 = t->W2;
  const double *G = t->G;
  const __m256d vs = _mm256_set1_pd(s), vg = _mm256_set1_pd(gain), one = _mm256_set1_pd(1.0),
                zero = _mm256_setzero_pd();
  for (int i = 0; i < m; i++) {
    double *zc = Z + (size_t)i * n, w = W2[i];
    const __m256d vw = _mm256_set1_pd(w);
    __m256d acc[4] = {zero, zero, zero, zero};
    for (int j = 0; j < nb; j += LANES)
      for (int v = 0; v < 4; v++) {
        __m256d a = _mm256_loadu_pd(zc + j + 4 * v), g = _mm256_loadu_pd(G + j + 4 * v);
        acc[v] = _mm256_fmadd_pd(g, a, acc[v]);
        __m256d d = _mm256_mul_pd(vs, _mm256_mul_pd(vw, g));
        if (act == DS_ACT_RELU) d = _mm256_and_pd(d, _mm256_cmp_pd(a, zero, _CMP_GT_OQ));
        else if (act == DS_ACT_TANH)
          d = _mm256_mul_pd(d, _mm256_mul_pd(vg, _mm256_sub_pd(one, _mm256_mul_pd(a, a))));
        _mm256_storeu_pd(zc + j + 4 * v, d);
      }
    double lanes[LANES];
    for (int v = 0; v < 4; v++) _mm256_storeu_pd(lanes + 4 * v, acc[v]);
    bwd1_tail(t, act, i, s, lanes, lr_out);
  }
}

#define AVX512_INLINE __attribute__((target("avx512f,avx512dq,avx2,fma"), always_inline)) static inline
/* fwd1_body and bwd1_body in 8 lanes: the same 16 lane sums (lanes 0-7 and
 * 8-15 in two registers instead of four of 4), the same IEEE operations in
 * the same order: the same bits (tests/test_tile.c) */
AVX512_INLINE double fwd1_body512(tile_ctx *t, int act) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, nb = n / LANES * LANES;
  const double a1 = t->a1, a2 = t->a2, c2 = 2.0 * net->c;
  double *Z = t->Z, *G = t->G;
  const double *W2 = t->W2, *Y = t->Y;
  if (act == DS_ACT_TANH) t->tanh_pass(Z, (size_t)n * m, a1, net->gain);
  const __m512d va1 = _mm512_set1_pd(a1), va2 = _mm512_set1_pd(a2), vc2 = _mm512_set1_pd(c2),
                zero = _mm512_setzero_pd();
  __m512d p[2] = {zero, zero};
  for (int j = 0; j < nb; j += LANES) {
    __m512d f[2] = {zero, zero};
    for (int i = 0; i < m; i++) {
      __m512d w = _mm512_set1_pd(W2[i]);
      double *zc = Z + (size_t)i * n + j;
      for (int v = 0; v < 2; v++) {
        __m512d a = _mm512_loadu_pd(zc + 8 * v);
        if (act != DS_ACT_TANH) {
          if (a1 != 1.0) a = _mm512_mul_pd(va1, a);
          if (act == DS_ACT_RELU) a = _mm512_max_pd(a, zero); /* as act4 */
          _mm512_storeu_pd(zc + 8 * v, a);
        }
        f[v] = _mm512_fmadd_pd(w, a, f[v]);
      }
    }
    for (int v = 0; v < 2; v++) {
      __m512d r = _mm512_sub_pd(_mm512_mul_pd(va2, f[v]), _mm512_loadu_pd(Y + j + 8 * v));
      p[v] = _mm512_add_pd(p[v], _mm512_mul_pd(r, r));
      _mm512_storeu_pd(G + j + 8 * v, _mm512_mul_pd(vc2, r));
    }
  }
  double lanes[LANES];
  for (int v = 0; v < 2; v++) _mm512_storeu_pd(lanes + 8 * v, p[v]);
  return fwd1_tail(t, act, lanes);
}

AVX512_INLINE void bwd1_body512(tile_ctx *t, int act, double lr_in, double lr_out) {
  const ds_tile_net *net = t->net;
  const int n = net->n, m = net->width, nb = n / LANES * LANES;
  const double a2 = t->a2, s = -lr_in * t->a1 * a2, gain = net->gain;
  double *Z = t->Z, *W2 = t->W2;
  const double *G = t->G;
  const __m512d vs = _mm512_set1_pd(s), vg = _mm512_set1_pd(gain), one = _mm512_set1_pd(1.0),
                zero = _mm512_setzero_pd();
  for (int i = 0; i < m; i++) {
    double *zc = Z + (size_t)i * n, w = W2[i];
    const __m512d vw = _mm512_set1_pd(w);
    __m512d acc[2] = {zero, zero};
    for (int j = 0; j < nb; j += LANES)
      for (int v = 0; v < 2; v++) {
        __m512d a = _mm512_loadu_pd(zc + j + 8 * v), g = _mm512_loadu_pd(G + j + 8 * v);
        acc[v] = _mm512_fmadd_pd(g, a, acc[v]);
        __m512d d = _mm512_mul_pd(vs, _mm512_mul_pd(vw, g));
        if (act == DS_ACT_RELU) /* d where a > 0, else +0 (as the AVX2 and-mask) */
          d = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(a, zero, _CMP_GT_OQ), d);
        else if (act == DS_ACT_TANH)
          d = _mm512_mul_pd(d, _mm512_mul_pd(vg, _mm512_sub_pd(one, _mm512_mul_pd(a, a))));
        _mm512_storeu_pd(zc + j + 8 * v, d);
      }
    double lanes[LANES];
    for (int v = 0; v < 2; v++) _mm512_storeu_pd(lanes + 8 * v, acc[v]);
    bwd1_tail(t, act, i, s, lanes, lr_out);
  }
}

#define DS_TILE_PASS1(name, ACT)                                                                 \
  __attribute__((target("avx2,fma"))) static double fwd1_##name(tile_ctx *t) {                  \
    return fwd1_body(t, ACT);                                                                   \
  }                                                                                             \
  __attribute__((target("avx2,fma"))) static void bwd1_##name(tile_ctx *t, double li, double lo) { \
    bwd1_body(t, ACT, li, lo);                                                                  \
  }                                                                                             \
  __attribute__((target("avx512f,avx512dq,avx2,fma"))) static double fwd1_##name##512(          \
      tile_ctx *t) {                                                                            \
    return fwd1_body512(t, ACT);                                                                \
  }                                                                                             \
  __attribute__((target("avx512f,avx512dq,avx2,fma"))) static void bwd1_##name##512(           \
      tile_ctx *t, double li, double lo) {                                                      \
    bwd1_body512(t, ACT, li, lo);                                                               \
  }
DS_TILE_PASS1(linear, DS_ACT_LINEAR)
DS_TILE_PASS1(relu, DS_ACT_RELU)
DS_TILE_PASS1(tanh, DS_ACT_TANH)
#endif

typedef struct {
  int npts;
  const double *theta0, *lr_in, *lr_out, *offset;
  int64_t steps;
  ds_tile_loss_fn fn;
  void *arg;
  int stop_nonfinite; /* 1 but under DYNSWEEP_TILE_NOSTOP=1 (tests: the stop changes nothing) */
} tile_job;

/* 1 when W_2 holds a non-finite entry. Then every later loss is non-finite,
 * whatever the activation and the other weights: F = alpha_2 sum_i W_2[i] A_i
 * is accumulated by fma, where inf * 0 and NaN * x are NaN and a non-finite
 * partial sum never becomes finite again, so every F (hence r, r^2, their sum
 * and L) is non-finite; and W_2 -= lr_out alpha_2 dW_2 keeps a non-finite
 * entry non-finite (x - y is non-finite when x is; lr_out 0 gives 0 * inf =
 * NaN), as does a fixed output layer. A non-finite loss alone does not say as
 * much (r^2 may overflow while the weights are finite, and a ReLU maps a NaN
 * pre-activation to 0), so it is only the trigger for this check. */
static int w2_nonfinite(const tile_ctx *t) {
  const size_t k = (size_t)t->net->d_out * (size_t)t->net->width;
  for (size_t i = 0; i < k; i++)
    if (!isfinite(t->W2[i])) return 1;
  return 0;
}

/* Trains every point of the job in turn. A point stops when fn says it is
 * decided (map.early_stop) or when W_2 holds a non-finite entry after a
 * non-finite loss: its remaining losses, all non-finite, are passed as NaN. */
static inline __attribute__((always_inline)) void run_points(tile_ctx *t, const tile_job *jb) {
  const ds_tile_net *net = t->net;
  const int m = net->width, d = net->d_in, act = net->act;
  for (int p = 0; p < jb->npts; p++) {
    double off = jb->offset ? jb->offset[p] : 0.0;
    for (int r = 0; r < m; r++) /* W_1^T[c, r] = W_1[r, c] (+ offset, as init.c adds it) */
      for (int c = 0; c < d; c++) {
        double v = jb->theta0[r + (size_t)c * m];
        t->W1T[c + (size_t)r * d] = off != 0.0 ? v + off : v;
      }
    memcpy(t->W2, jb->theta0 + (size_t)m * d, (size_t)net->d_out * m * sizeof(double));
    for (int64_t s = 0; s < jb->steps; s++) {
      double loss = forward(t, act);
      if (jb->fn(jb->arg, p, s, loss)) break;
      if (s + 1 == jb->steps) break; /* the last update is never seen */
      backward(t, act, jb->lr_in[p], jb->lr_out[p]);
      gemm_update(t);
      if (jb->stop_nonfinite && !isfinite(loss) && w2_nonfinite(t)) { /* the rest is non-finite */
        for (int64_t k = s + 1; k < jb->steps; k++)
          if (jb->fn(jb->arg, p, k, NAN)) break;
        break;
      }
    }
  }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target("avx512f,avx512dq,avx2,fma"))) static void run_avx512(tile_ctx *t,
                                                                            const tile_job *j) {
  run_points(t, j);
}
__attribute__((target("avx2,fma"))) static void run_avx2(tile_ctx *t, const tile_job *j) {
  run_points(t, j);
}
#endif
static void run_generic(tile_ctx *t, const tile_job *j) { run_points(t, j); }

static const char *pass_isa(void) {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  __builtin_cpu_init();
  int cap_avx2 = ds_knob_is(DS_KNOB_TILE_ISA, "avx2"); /* the AVX2 kernels (comparisons) */
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("fma") && !cap_avx2)
    return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
#endif
  return "generic";
}

static int net_check(const ds_tile_net *net) {
  if (net->width < 1 || net->width > MAXW || net->d_out < 1 || net->d_out > MAXW ||
      net->d_in < 1 || net->d_in > 4096 || net->n < 1)
    return ds_fail(DS_EINPUT, "tile: unsupported net (width %d, d_in %d, d_out %d, n %d)",
                   net->width, net->d_in, net->d_out, net->n);
  if (net->act != DS_ACT_LINEAR && net->act != DS_ACT_RELU && net->act != DS_ACT_TANH)
    return ds_fail(DS_EINPUT, "tile: unknown activation %d", net->act);
  return DS_OK;
}

static void alphas(const ds_tile_net *net, double *a1, double *a2) {
  int dims[3] = {net->d_in, net->width, net->d_out};
  ds_mlp m = {0};
  m.param = net->param;
  m.act = net->act;
  m.gain = net->gain; /* a ReLU net's gain is a factor of alpha_1 (ds_nn_alpha) */
  m.depth = 2;
  m.dims = dims;
  *a1 = ds_nn_alpha(&m, 1);
  *a2 = ds_nn_alpha(&m, 2);
}

#ifdef DS_HAVE_LIBXSMM
static void xsmm_kernels(const ds_tile_net *net, libxsmm_dmmfunction *k1, libxsmm_dmmfunction *k2) {
  const double one = 1.0, zero = 0.0;
  const libxsmm_blasint n = net->n, m = net->width, d = net->d_in;
  /* Z^T (n x m) = X^T (n x d) W_1^T (d x m); W_1^T (d x m) += X (d x n) D (n x m) */
  *k1 = *k2 = NULL;
  if (ds_knob_is(DS_KNOB_TILE_GEMM, "openblas")) return; /* for comparisons (bench) */
  *k1 = libxsmm_dmmdispatch(n, m, d, &n, &d, &n, &one, &zero, NULL, NULL);
  *k2 = libxsmm_dmmdispatch(d, m, n, &d, &n, &d, &one, &one, NULL, NULL);
}
#endif

const char *ds_tile_kernels(const ds_tile_net *net) {
  static char buf[160];
  const char *g1 = "OpenBLAS", *g2 = "OpenBLAS";
#ifdef DS_HAVE_LIBXSMM
  if (net_check(net) == DS_OK) {
    libxsmm_dmmfunction k1, k2;
    xsmm_kernels(net, &k1, &k2);
    if (k1) g1 = "libxsmm JIT";
    if (k2) g2 = "libxsmm JIT";
  }
#endif
  const char *tname;
  tanh_pick(&tname);
  snprintf(buf, sizeof buf, "forward GEMM %s, update GEMM %s, pass %s, tanh: %s", g1, g2,
           pass_isa(), tname);
  return buf;
}

double ds_tile_step_flops(const ds_tile_net *net) {
  double fwd = 2.0 * net->n * ((double)net->width * net->d_in + (double)net->d_out * net->width);
  return fwd + (2.0 * fwd - 2.0 * net->n * (double)net->width * net->d_in);
}

int ds_tile_gd(const ds_tile_net *net, const double *X, const double *Y, const double *theta0,
               int npts, const double *lr_in, const double *lr_out, const double *init_offset,
               int64_t steps, ds_tile_loss_fn fn, void *arg) {
  DS_TRY(net_check(net));
  if (npts <= 0 || steps <= 0) return DS_OK;
  tile_ctx t;
  memset(&t, 0, sizeof t);
  t.net = net;
  alphas(net, &t.a1, &t.a2);
  const size_t n = (size_t)net->n, m = (size_t)net->width, d = (size_t)net->d_in;
  size_t zc = (n * m + 7) & ~(size_t)7, gc = (net->d_out * n + 7) & ~(size_t)7;
  size_t xc = (n * d + 7) & ~(size_t)7, wc = (d * m + 7) & ~(size_t)7;
  size_t total = zc + gc + xc + wc + (size_t)net->d_out * m;
  double *block = aligned_alloc(64, ((total * sizeof(double)) + 63) & ~(size_t)63);
  if (!block) return ds_fail(DS_ENOMEM, "tile: out of memory (%zu doubles)", total);
  t.Z = block;
  t.G = t.Z + zc;
  double *XT = t.G + gc;
  t.W1T = XT + xc;
  t.W2 = t.W1T + wc;
  for (size_t j = 0; j < n; j++) /* X^T (n x d) */
    for (size_t i = 0; i < d; i++) XT[j + i * n] = X[i + j * d];
  t.X = X;
  t.XT = XT;
  t.Y = Y;
#ifdef DS_HAVE_LIBXSMM
  xsmm_kernels(net, &t.k1, &t.k2);
#endif
  const char *tname;
  t.tanh_pass = tanh_pick(&tname);
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  if (strcmp(pass_isa(), "generic") && !ds_knob_on(DS_KNOB_TILE_GENERIC)) {
    if (net->d_out == 1 && !strcmp(pass_isa(), "avx512")) {
      t.fwd1 = net->act == DS_ACT_RELU   ? fwd1_relu512
               : net->act == DS_ACT_TANH ? fwd1_tanh512
                                         : fwd1_linear512;
      t.bwd1 = net->act == DS_ACT_RELU   ? bwd1_relu512
               : net->act == DS_ACT_TANH ? bwd1_tanh512
                                         : bwd1_linear512;
    } else if (net->d_out == 1) {
      t.fwd1 = net->act == DS_ACT_RELU ? fwd1_relu : net->act == DS_ACT_TANH ? fwd1_tanh : fwd1_linear;
      t.bwd1 = net->act == DS_ACT_RELU ? bwd1_relu : net->act == DS_ACT_TANH ? bwd1_tanh : bwd1_linear;
    }
  }
#endif
  tile_job job = {npts, theta0, lr_in, lr_out, init_offset, steps, fn, arg,
                  !ds_knob_on(DS_KNOB_TILE_NOSTOP)};
  const char *isa = pass_isa();
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
  if (!strcmp(isa, "avx512")) run_avx512(&t, &job);
  else if (!strcmp(isa, "avx2")) run_avx2(&t, &job);
  else
#endif
    run_generic(&t, &job);
  free(block);
  return DS_OK;
}
