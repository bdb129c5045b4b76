/* data.h -- data sets: synthetic generators (and, later, file loaders).
 * X is d_in x n, Y is d_out x n, column-major, one column per sample. */
#ifndef DYNSWEEP_DATA_H
#define DYNSWEEP_DATA_H
#include "dynsweep/util.h"

typedef struct {
  int n, d_in, d_out;
  double *X; /* d_in x n */
  double *Y; /* d_out x n */
  /* issue 26: the image shape of a column (CHW order, c*h*w = d_in) when the
   * data kind fixes it (cifar10, cifar100, svhn: 3 x 32 x 32); 0 = not known */
  int c, h, w;
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

/* ============================ issue 3 ============================ */
#include "dynsweep/config.h"

/* Builds the train and test sets a data spec describes: every kind of
 * ds_data_kind, then preprocessing in this order: class subset, train/test
 * pools (test_path, else the last test_fraction, shuffled first with
 * random_subset), first/random n_train / n_test, pixel scaling,
 * standardisation (per feature, or per channel: standardize_channels),
 * whitening (train statistics), label mode. Draws only from
 * rng. A missing or malformed file gives DS_EINPUT with "PATH: what is wrong"
 * ("PATH:LINE: ..." in text files). test may come back with n = 0.
 * Conventions (docs/data.md): pm1 maps class index 0 (first listed class, or
 * the smaller label) to -1 and index 1 to +1; one_hot without a class list
 * uses the distinct labels sorted; for file kinds n_train <= 0 takes every
 * available sample, n_test = 0 gives no test set and a larger n_test is
 * capped by the test pool; rank2/rank3/rank4/fullrank have d_out = 1;
 * circle is always the 8 points (no test set); target_scale, sphere_scale
 * and pixel_scale equal to 0 mean 1. */
int ds_data_build(const ds_data_spec *spec, ds_rng *rng, ds_dataset *train, ds_dataset *test);

/* Cheap look at a file data set (headers or one pass): the d_in, d_out
 * (after the label mode and class subset) and the number of samples available
 * for training, so configs can be validated before any rank starts. */
int ds_data_probe(const ds_data_spec *spec, int *d_in, int *d_out, int *n_avail);

/* Reads every value of the file(s) of a file-kind spec with the loaders
 * ds_data_build uses (nothing is kept, so Fashion-MNIST costs one read, not
 * 376 MB): NaN/Inf anywhere, an IDX file longer or shorter than its header,
 * HDF5 datasets that are not numbers, NUL bytes, ragged CSV rows, duplicate
 * libsvm indices, ... are DS_EINPUT naming the file and dataset or line.
 * Synthetic kinds: DS_OK. */
int ds_data_check(const ds_data_spec *spec);

/* Matrix rows x cols (column-major out) from HDF5 dataset `name` in `path`,
 * stored row-major as rows x cols (as numpy/h5py write it). DS_EINPUT when the
 * file/dataset is missing, not numeric, the shape differs or a value is not
 * finite. ds_h5_exists: 1/0. */
int ds_h5_read_matrix(const char *path, const char *name, int rows, int cols, double *out);
int ds_h5_exists(const char *path, const char *name);

/* Minibatches without replacement: each epoch is a fresh permutation of
 * 0..n-1 drawn from the batcher's own rng stream; batches are consecutive
 * runs of it (the last batch of an epoch may wrap into the next epoch's
 * permutation so every batch has exactly b samples). Plain data, so a
 * checkpoint can copy it whole together with perm. */
typedef struct {
  int n, b, pos;
  int *perm;   /* n */
  ds_rng rng;
  int64_t epoch;
} ds_batcher;
int ds_batcher_init(ds_batcher *bt, int n, int b, const ds_rng *rng);
void ds_batcher_free(ds_batcher *bt);
const int *ds_batcher_next(ds_batcher *bt, int *idx_buf); /* b indices into idx_buf */
/* ============================ issue 26 ============================ */
/* 1 for the kinds read from files (idx, libsvm, csv, hdf5, cifar10, cifar100, svhn). */
int ds_data_is_file_kind(ds_data_kind k);
/* The image shape (C, H, W) the data kind fixes: 3 x 32 x 32 for cifar10,
 * cifar100 and svhn, 1 x s x s (d_in = s^2) for image_rank2, 1 x rows x cols
 * from an idx images file's header (3 dimensions) (returns 1); 0 and
 * C = H = W = 0 for the other kinds.
 * A CNN without model.image takes it (src/worker/cnnpoint.c), and so does
 * data.standardize_channels. */
int ds_data_image_shape(const ds_data_spec *spec, int *C, int *H, int *W);
/* image_rank2: the side s of a d_in = s^2 image (s >= 3), else 0. */
int ds_data_image_side(int d_in);
/* image_rank2's filters (docs/data.md): u1, u2 (d_in each, zero outside the
 * 3 x 3 centre patch at rows and columns s/2 - 1 .. s/2 + 1), orthonormal:
 * u1 = (1 1 1; 0 0 0; -1 -1 -1) / sqrt 6, u2 = its transpose. DS_EINPUT
 * when d_in is not a square of side >= 3. */
int ds_data_image_filters(int d_in, double *u1, double *u2);
/* The files a data path stands for: path itself, or for a directory (cifar10
 * and cifar100 only) the batch files in it: cifar10 data_batch_*.bin in
 * numeric order (test = 1: test_batch.bin), cifar100 train.bin (test.bin).
 * *files is one malloc'd block of *n paths of DS_MAX_PATH characters. A
 * directory for another kind, or one without those files, is DS_EINPUT. */
int ds_data_files(ds_data_kind kind, const char *path, int test, char (**files)[DS_MAX_PATH], int *n);
/* Gather the columns idx[0..b) of d into Xb (d_in x b) and Yb (d_out x b). */
void ds_dataset_gather(const ds_dataset *d, const int *idx, int b, double *Xb, double *Yb);
#endif
