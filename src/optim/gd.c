/* gd.c -- full-batch gradient descent on the flat parameter vector:
 * theta <- theta - lr * grad (one BLAS daxpy, elementwise, deterministic). */
#include <cblas.h>

#include "dynsweep/optim.h"

void ds_gd_step(double *theta, const double *grad, size_t n, double lr) {
  /* daxpy takes an int length: step through very long vectors in chunks */
  const size_t chunk = (size_t)1 << 30;
  for (size_t off = 0; off < n; off += chunk) {
    size_t len = n - off < chunk ? n - off : chunk;
    cblas_daxpy((int)len, -lr, grad + off, 1, theta + off, 1);
  }
}
