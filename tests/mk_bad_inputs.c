/* mk_bad_inputs.c -- writes the broken (and a few good) input files of
 * tests/bad_inputs.sh into DIR: real bytes, written with the HDF5 library or
 * by hand, so `dynsweep plan/run` meets them exactly as a user's files.
 * usage: mk_bad_inputs DIR */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[4096];

static const char *P(const char *name) {
  static char buf[4][4200];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, sizeof buf[0], "%s/%s", dir, name);
  return p;
}

static void put(hid_t f, const char *name, int rows, int cols, const double *v) {
  hsize_t d[2] = {(hsize_t)rows, (hsize_t)cols};
  hid_t sp = H5Screate_simple(cols > 0 ? 2 : 1, d, NULL);
  hid_t ds = H5Dcreate2(f, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
  H5Dclose(ds);
  H5Sclose(sp);
}

/* rows x cols matrix with entries 0.01 * (i + 1) * (j + 2) (cols 0: a vector) */
static void put_mat(hid_t f, const char *name, int rows, int cols) {
  int c = cols > 0 ? cols : 1;
  double *v = malloc(sizeof *v * (size_t)rows * c);
  for (int i = 0; i < rows; i++)
    for (int j = 0; j < c; j++) v[i * c + j] = 0.01 * (i + 1) * (j + 2) * ((i + j) % 2 ? 1 : -1);
  put(f, name, rows, cols, v);
  free(v);
}

static hid_t h5new(const char *name) { return H5Fcreate(P(name), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); }

/* X (n x 3) and y (n) of a small regression set; nan_at >= 0 puts NaN in X there */
static void data_h5(const char *name, int nan_at, int x_strings) {
  enum { N = 20, D = 3 };
  hid_t f = h5new(name);
  double X[N * D], y[N];
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < D; j++) X[i * D + j] = sin(1.0 + i * D + j);
    y[i] = cos(0.5 * i);
  }
  if (nan_at >= 0) X[nan_at] = NAN;
  if (x_strings) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 8);
    char s[N * D][8];
    for (int k = 0; k < N * D; k++) snprintf(s[k], 8, "%.4f", X[k]);
    hsize_t d[2] = {N, D};
    hid_t sp = H5Screate_simple(2, d, NULL);
    hid_t ds = H5Dcreate2(f, "X", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Tclose(t);
  } else {
    put(f, "X", N, D, X);
  }
  put(f, "y", N, 0, y);
  H5Fclose(f);
}

static void write_bytes(const char *name, const void *b, size_t n) {
  FILE *f = fopen(P(name), "wb");
  fwrite(b, 1, n, f);
  fclose(f);
}

static void text(const char *name, const char *t) { write_bytes(name, t, strlen(t)); }

static void be32(unsigned char *p, unsigned v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
  p[3] = (unsigned char)v;
}

/* IDX images: n_hdr in the header, n_data images of 2 x 2 written (+ extra bytes);
 * type 0x08 ubyte or 0x0D float32 (nan_at >= 0: that value NaN) */
static void idx_images(const char *name, int n_hdr, int n_data, int extra, int type, int nan_at) {
  int es = type == 0x0D ? 4 : 1;
  size_t n = 16 + (size_t)n_data * 4 * es + (size_t)extra;
  unsigned char *b = calloc(1, n);
  be32(b, 0x800 | (unsigned)type << 0);
  b[2] = (unsigned char)type, b[3] = 3;
  be32(b + 4, (unsigned)n_hdr);
  be32(b + 8, 2);
  be32(b + 12, 2);
  for (int k = 0; k < n_data * 4; k++) {
    if (type == 0x0D) {
      float v = k == nan_at ? NAN : (float)(k % 7);
      unsigned u;
      memcpy(&u, &v, 4);
      be32(b + 16 + 4 * k, u);
    } else {
      b[16 + k] = (unsigned char)(k * 37);
    }
  }
  write_bytes(name, b, n);
  free(b);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: mk_bad_inputs DIR\n");
    return 2;
  }
  snprintf(dir, sizeof dir, "%s", argv[1]);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  data_h5("good.h5", -1, 0);
  data_h5("x_nan.h5", 4 * 3 + 1, 0); /* sample 5, feature 2 */
  data_h5("x_strings.h5", -1, 1);
  /* init files for data d_in 3, d_out 1, depth 2, width 16 */
  hid_t f = h5new("init_ok.h5");
  put_mat(f, "W1", 16, 3);
  put_mat(f, "W2", 1, 16);
  H5Fclose(f);
  f = h5new("init_transposed.h5");
  put_mat(f, "W1", 3, 16);
  put_mat(f, "W2", 1, 16);
  H5Fclose(f);
  f = h5new("init_missing_w2.h5");
  put_mat(f, "W1", 16, 3);
  H5Fclose(f);
  f = h5new("init_nan.h5");
  put_mat(f, "W1", 16, 3);
  double w2[16];
  for (int j = 0; j < 16; j++) w2[j] = j == 7 ? NAN : 0.1 * j;
  put(f, "W2", 1, 16, w2);
  H5Fclose(f);
  f = h5new("agop_2x2.h5");
  put_mat(f, "G", 2, 2);
  H5Fclose(f);
  text("not_hdf5.h5", "this is plain text, not an HDF5 file\n");
  /* IDX: 10 labels; images truncated, longer than the header, float with NaN */
  unsigned char lab[8 + 10];
  be32(lab, 0x801);
  be32(lab + 4, 10);
  for (int i = 0; i < 10; i++) lab[8 + i] = (unsigned char)(i % 2);
  write_bytes("labels.idx", lab, sizeof lab);
  idx_images("images_ok.idx", 10, 10, 0, 0x08, -1);
  idx_images("images_truncated.idx", 10, 9, 2, 0x08, -1);
  idx_images("images_long.idx", 10, 11, 0, 0x08, -1);
  idx_images("images_nan.idx", 10, 10, 0, 0x0D, 4 * 6 + 3); /* image 7, value 4 */
  /* text formats */
  text("ragged.csv", "a,b,c\n1,2,3\n4,5,6\n7,8\n9,10,11\n");
  write_bytes("nul.csv", "1,2,3\n4,5,6\n7,\0,9\n1,1,1\n", 24);
  text("nan.csv", "1,2,3\n4,nan,6\n7,8,9\n1,1,1\n");
  text("index0.svm", "1 1:0.5 2:1\n0 0:1 2:2\n1 1:1\n0 2:3\n");
  text("dup.svm", "1 1:0.5 2:1\n0 1:1 2:2 1:3\n1 1:1\n0 2:3\n");
  text("good.svm", "1 1:0.5 2:1\n0 1:1 2:2\n1 1:1\n0 2:3\n1 1:2\n");
  return 0;
}
