/* loss.c -- squared-error loss L = c * sum (F - Y)^2 and its gradient
 * dL/dF = 2 c (F - Y), in one pass.
 *
 * The sum uses 8 fixed partial sums (entry k goes to partial k mod 8, the
 * partials are added in order at the end), so the loop vectorises and yet the
 * rounding is the same for every vector width: bitwise identical results on
 * any x86-64 clone, run to run. FMA contraction is off for the same reason. */
#include "dynsweep/nn.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DS_LOSS_FN                                                                               \
  __attribute__((optimize("O3", "fp-contract=off"), target_clones("avx512f", "avx2", "default")))
#else
#define DS_LOSS_FN
#endif

/* part[q] += sum over blocks of (F - Y)^2 at q mod 8; dF = c2 (F - Y) if asked */
DS_LOSS_FN
static void mse_blocks(const double *F, const double *Y, size_t nblk, double c2, double *dF,
                       double *restrict part) {
  double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (dF) {
    for (size_t b = 0; b < nblk; b++)
      for (int q = 0; q < 8; q++) {
        double r = F[8 * b + q] - Y[8 * b + q];
        p[q] += r * r;
        dF[8 * b + q] = c2 * r;
      }
  } else {
    for (size_t b = 0; b < nblk; b++)
      for (int q = 0; q < 8; q++) {
        double r = F[8 * b + q] - Y[8 * b + q];
        p[q] += r * r;
      }
  }
  for (int q = 0; q < 8; q++) part[q] = p[q];
}

double ds_loss_mse(const double *F, const double *Y, size_t count, double c, double *dF) {
  double part[8];
  double c2 = 2.0 * c;
  size_t nblk = count / 8;
  mse_blocks(F, Y, nblk, c2, dF, part);
  for (size_t k = 8 * nblk; k < count; k++) {
    double r = F[k] - Y[k];
    part[k % 8] += r * r;
    if (dF) dF[k] = c2 * r;
  }
  double sum = 0.0;
  for (int q = 0; q < 8; q++) sum += part[q];
  return c * sum;
}
