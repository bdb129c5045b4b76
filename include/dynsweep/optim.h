/* optim.h -- optimisers acting on a flat parameter vector. */
#ifndef DYNSWEEP_OPTIM_H
#define DYNSWEEP_OPTIM_H
#include <stddef.h>

/* Full-batch gradient descent: theta -= lr * grad. */
void ds_gd_step(double *theta, const double *grad, size_t n, double lr);
#endif
