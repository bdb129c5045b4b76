/* data_internal.h -- shared between the files of the data room (not public). */
#ifndef DS_DATA_INTERNAL_H
#define DS_DATA_INTERNAL_H
#include "dynsweep/data.h"

/* Q (m x k, in place over A, m >= k) of a QR factorisation with diag(R) > 0. */
int ds_data_orthonormalise(double *A, int m, int k);

/* Synthetic kinds (everything except the file kinds). */
int ds_data_synth(const ds_data_spec *spec, ds_rng *rng, ds_dataset *train, ds_dataset *test);

/* A table as read from a file, before preprocessing. */
typedef struct {
  int n, d;       /* samples, input features */
  double *X;      /* d x n (column-major, one column per sample); NULL when not wanted */
  int dy;         /* rows of T */
  double *T;      /* dy x n regression targets */
  double *C;      /* n class labels (NULL when the file has no single label column) */
  int t_is_class; /* T is the class label itself (dy == 1, T == C) */
} ds_raw;

void ds_raw_free(ds_raw *r);
/* Load the file(s) of spec (file kinds only). which = 0: path/labels_path,
 * 1: test_path/test_labels_path. want_x = 0 reads only the shape and labels
 * where the format allows it (IDX, HDF5); 2 reads and checks every value
 * (finite, IDX size vs header) but keeps no X (r->X = NULL). IDX drops samples outside the class
 * subset while reading (memory). */
int ds_raw_load(const ds_data_spec *spec, int which, int want_x, ds_raw *r);

/* Whole file (gzip transparently) into a NUL-terminated buffer; a missing
 * file is DS_EINPUT "PATH: cannot open: ...". */
int ds_gz_slurp(const char *path, char **buf, size_t *len);

/* gzip-transparent reading (gzio.c); errors are DS_EINPUT naming path.
 * ds_gz_read: up to n bytes, *got how many arrived; ds_gz_read_exact: n
 * bytes or "PATH: truncated: expected n bytes of WHAT, found k". */
#include <zlib.h>
int ds_gz_open(const char *path, gzFile *f);
int ds_gz_read(gzFile f, const char *path, void *buf, size_t n, size_t *got);
int ds_gz_read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what);

/* images.c (issue 26): CIFAR-10/100 binary batches (path: a file or a
 * directory, ds_data_files) and SVHN .mat files, filling r as load_idx does
 * (class subset applied while reading; which = 1: the test files). */
int ds_load_cifar(const ds_data_spec *s, const char *path, int which, int want_x, ds_raw *r);
int ds_load_svhn(const ds_data_spec *s, const char *path, int want_x, ds_raw *r);
const char *ds_data_kind_name(ds_data_kind k);
#endif
