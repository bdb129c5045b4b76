/* loss.c -- squared-error loss L = c * sum (F - Y)^2 and its gradient
 * dL/dF = 2 c (F - Y), one pass, summed in index order (deterministic). */
#include "dynsweep/nn.h"

double ds_loss_mse(const double *F, const double *Y, size_t count, double c, double *dF) {
  double sum = 0.0;
  if (dF) {
    double c2 = 2.0 * c;
    for (size_t k = 0; k < count; k++) {
      double r = F[k] - Y[k];
      sum += r * r;
      dF[k] = c2 * r;
    }
  } else {
    for (size_t k = 0; k < count; k++) {
      double r = F[k] - Y[k];
      sum += r * r;
    }
  }
  return c * sum;
}
