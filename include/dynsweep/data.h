/* data.h -- data sets: synthetic generators (and, later, file loaders).
 * X is d_in x n, Y is d_out x n, column-major, one column per sample. */
#ifndef DYNSWEEP_DATA_H
#define DYNSWEEP_DATA_H
#include "dynsweep/util.h"

typedef struct {
  int n, d_in, d_out;
  double *X; /* d_in x n */
  double *Y; /* d_out x n */
} ds_dataset;

/* Random linear teacher of given rank: T = U diag(s) V^T (d_out x d_in) with
 * U, V having orthonormal columns from QR of Gaussian matrices and
 * s_i = 1 (i < rank); inputs x ~ N(0, I); y = T x + noise * N(0, I).
 * train and test share T; draws come from rng in a fixed order
 * (teacher, train X, train noise, test X, test noise). */
int ds_data_teacher(int d_in, int d_out, int rank, double noise, int n_train, int n_test,
                    ds_rng *rng, ds_dataset *train, ds_dataset *test);
void ds_dataset_free(ds_dataset *d);

/* Added: test may be NULL when n_test == 0 (no test set, nothing drawn).
 * The teacher alone: T (d_out x d_in, column-major) drawn exactly as the first
 * step of ds_data_teacher, so the same rng state gives the same T. */
int ds_data_teacher_matrix(int d_in, int d_out, int rank, ds_rng *rng, double *T);
/* Allocate zeroed X (d_in x n) and Y (d_out x n); DS_ENOMEM on failure. */
int ds_dataset_alloc(ds_dataset *d, int n, int d_in, int d_out);
#endif
