/* tanh.c -- the tanh activation of tanh nets, A = tanh(g Z) (g = model.gain),
 * vectorised with SLEEF (libsleef-dev), its derivatives for backprop and the
 * R-operator, all elementwise on column-major buffers.
 *
 * Which SLEEF kernel runs is chosen once per process from the CPU:
 *   AVX2 + FMA   Sleef_tanhd4_u10avx2 (4 doubles per call; the FMA family)
 *   AVX          Sleef_tanhd4_u10avx  (4 doubles; the non-FMA family)
 *   otherwise    Sleef_tanhd2_u10sse2 (2 doubles, any x86-64; non-FMA family)
 * Measured here (4.2 million arguments over [-20, 20] and tiny values): the
 * FMA kernels (avx2, avx2128, purecfma) agree bitwise with each other, and the
 * non-FMA ones (sse2, sse4, avx, purec) with each other; the two families
 * differ by 1 ulp on 14 of the 4.2 million (relative 2e-16). So every machine
 * with AVX2+FMA gives the same bits, and ranks of one machine always do.
 * DYNSWEEP_TANH=portable runs the non-FMA family on every machine (avx where
 * the CPU has AVX, else sse2: the same bits), for bitwise agreement between
 * CPUs with and without FMA. DYNSWEEP_TANH=sse2 forces the sse2 kernel (tests
 * check that it gives the bits of avx).
 * Every element goes through the same vector function (a tail shorter than
 * the vector is padded), so a value never depends on its position, the
 * number of samples or how work is split between ranks.
 * The derivative loops are plain C compiled for baseline x86-64 (no FMA
 * contraction): the same bits on every CPU. */
#include <immintrin.h>
#include <sleef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/knobs.h"
#include "dynsweep/nn.h"
#include "layers.h"

/* sleef.h declares the AVX kernels only when the including unit is compiled
 * with -mavx; this one is not (baseline x86-64), so they are declared here. */
__m256d Sleef_tanhd4_u10avx2(__m256d);
__m256d Sleef_tanhd4_u10avx(__m256d);

typedef void (*tanh_kernel)(double *out, const double *in, size_t count, double gain);

/* out = F(gain * in) 4 at a time; a tail is padded (the same function for it) */
#define DS_TANH4(name, isa, F)                                                                   \
  __attribute__((target(isa))) static void name(double *out, const double *in, size_t count,    \
                                                double gain) {                                  \
    __m256d g = _mm256_set1_pd(gain);                                                           \
    size_t k = 0;                                                                               \
    for (; k + 4 <= count; k += 4)                                                              \
      _mm256_storeu_pd(out + k, F(_mm256_mul_pd(g, _mm256_loadu_pd(in + k))));                  \
    if (k < count) {                                                                            \
      double buf[4] = {0, 0, 0, 0};                                                             \
      memcpy(buf, in + k, (count - k) * sizeof *buf);                                           \
      _mm256_storeu_pd(buf, F(_mm256_mul_pd(g, _mm256_loadu_pd(buf))));                         \
      memcpy(out + k, buf, (count - k) * sizeof *buf);                                          \
    }                                                                                           \
  }
DS_TANH4(tanh_avx2, "avx2,fma", Sleef_tanhd4_u10avx2)
DS_TANH4(tanh_avx, "avx", Sleef_tanhd4_u10avx)

static void tanh_sse2(double *out, const double *in, size_t count, double gain) {
  __m128d g = _mm_set1_pd(gain);
  size_t k = 0;
  for (; k + 2 <= count; k += 2)
    _mm_storeu_pd(out + k, Sleef_tanhd2_u10sse2(_mm_mul_pd(g, _mm_loadu_pd(in + k))));
  if (k < count) {
    double buf[2] = {in[k], 0};
    _mm_storeu_pd(buf, Sleef_tanhd2_u10sse2(_mm_mul_pd(g, _mm_loadu_pd(buf))));
    out[k] = buf[0];
  }
}

static tanh_kernel kernel;
static const char *kernel_name;

static void choose(void) {
  __builtin_cpu_init();
  int avx = __builtin_cpu_supports("avx");
  int fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (ds_knob_is(DS_KNOB_TANH, "portable")) fma = 0;
  if (ds_knob_is(DS_KNOB_TANH, "sse2")) fma = avx = 0; /* the same bits as portable (tests) */
  kernel = fma ? tanh_avx2 : avx ? tanh_avx : tanh_sse2;
  kernel_name = fma   ? "sleef tanhd4_u10avx2 (FMA family)"
                : avx ? "sleef tanhd4_u10avx (non-FMA family)"
                      : "sleef tanhd2_u10sse2 (non-FMA family)";
}

const char *ds_nn_tanh_kernel(void) {
  if (!kernel) choose();
  return kernel_name;
}

void ds_nn_tanh(double *out, const double *in, size_t count, double gain) {
  if (!kernel) choose();
  kernel(out, in, count, gain);
}

void ds_nn_tanh_forward(double *A, const double *Z, int d, int n, double gain) {
  ds_nn_tanh(A, Z, (size_t)d * n, gain);
}

/* s'(z) = g (1 - t^2) with t = tanh(g z) = A */
static inline double dtanh(double g, double t) { return g * (1.0 - t * t); }

void ds_nn_tanh_tangent(double *RA, const double *RZ, const double *A, int d, int n,
                        double gain) {
  size_t count = (size_t)d * n;
  for (size_t k = 0; k < count; k++) RA[k] = dtanh(gain, A[k]) * RZ[k];
}

void ds_nn_tanh_backward(double *dA, const double *A, double *db, int d, int n, double gain) {
  if (db)
    for (int i = 0; i < d; i++) db[i] = 0.0;
  for (int j = 0; j < n; j++) {
    double *da = dA + (size_t)j * d;
    const double *a = A + (size_t)j * d;
    for (int i = 0; i < d; i++) {
      double g = dtanh(gain, a[i]) * da[i];
      da[i] = g;
      if (db) db[i] += g;
    }
  }
}

/* R^2{A} = s' S + s'' RZ^2, s'' = -2 g^2 t (1 - t^2) */
void ds_nn_tanh_second(double *S, const double *RZ, const double *A, int d, int n, double gain) {
  size_t count = (size_t)d * n;
  for (size_t k = 0; k < count; k++) {
    double t = A[k], s1 = dtanh(gain, t), s2 = -2.0 * gain * t * s1;
    S[k] = s1 * S[k] + s2 * (RZ[k] * RZ[k]);
  }
}

/* R{D} = s' RP + s'' RZ P, then D = s' P (in place: P -> D, RP -> R{D};
 * RP NULL means R{P} = 0 and R{D} is written into RDout) */
void ds_nn_tanh_backward_r(double *P, const double *RP, double *RDout, const double *RZ,
                           const double *A, int d, int n, double gain) {
  size_t count = (size_t)d * n;
  for (size_t k = 0; k < count; k++) {
    double t = A[k], s1 = dtanh(gain, t), s2 = -2.0 * gain * t * s1;
    double rd = s2 * RZ[k] * P[k];
    if (RP) rd += s1 * RP[k];
    RDout[k] = rd;
    P[k] = s1 * P[k];
  }
}
