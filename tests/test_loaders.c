/* test_loaders.c -- the file data kinds (IDX plain and gzip, libsvm, CSV,
 * HDF5) on fixture files written into a temporary directory here, the
 * preprocessing pipeline (class subset, label modes, split, subsets,
 * standardise, whiten), every malformed-file error, ds_data_probe,
 * ds_h5_read_matrix / ds_h5_exists, and Fashion-MNIST when it is installed. */
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "dynsweep/data.h"

static char dir[64];
static char pbuf[8][512];
static int pnext;

/* path of a fixture file in the temp dir (a few rotating buffers) */
static const char *P(const char *name) {
  char *p = pbuf[pnext++ % 8];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  fwrite(buf, 1, len, f);
  fclose(f);
}

static void write_text(const char *path, const char *text) { write_file(path, text, strlen(text)); }

static void write_gz(const char *path, const void *buf, size_t len) {
  gzFile f = gzopen(path, "wb");
  gzwrite(f, buf, (unsigned)len);
  gzclose(f);
}

static size_t read_all(const char *path, unsigned char **buf) {
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *buf = malloc((size_t)n + 1);
  size_t got = fread(*buf, 1, (size_t)n, f);
  fclose(f);
  return got;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = v >> 24;
  p[1] = v >> 16;
  p[2] = v >> 8;
  p[3] = v;
}

/* ---------------------------------------------------------------- fixtures */

enum { NI = 20, RI = 2, CI = 3, DI = RI * CI };
static unsigned char pix(int i, int q) { return (unsigned char)((i * 37 + q * 11 + (i * q) % 7) % 256); }
static int lab(int i) { return (i * 3) % 4; } /* 0 3 2 1 0 3 ... */

/* IDX images (n x 2 x 3, ubyte) and labels; returns sizes */
static size_t idx_images(unsigned char *b, int n) {
  put_be32(b, 0x00000803);
  put_be32(b + 4, (uint32_t)n);
  put_be32(b + 8, RI);
  put_be32(b + 12, CI);
  for (int i = 0; i < n; i++)
    for (int q = 0; q < DI; q++) b[16 + i * DI + q] = pix(i, q);
  return 16 + (size_t)n * DI;
}
static size_t idx_labels(unsigned char *b, int n) {
  put_be32(b, 0x00000801);
  put_be32(b + 4, (uint32_t)n);
  for (int i = 0; i < n; i++) b[8 + i] = (unsigned char)lab(i);
  return 8 + (size_t)n;
}

/* a dense real feature matrix for the text and HDF5 formats */
enum { NF = 20, DF = 3 };
static double feat(int i, int k) { return round(1000.0 * sin(1.3 * i + 0.7 * k + 0.1 * i * k)) / 100.0; }

static void write_h5(const char *path, const double *X, int n, int d, const double *y, int ny) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dx[2] = {(hsize_t)n, (hsize_t)d}, dyv[2] = {(hsize_t)n, (hsize_t)ny};
  hid_t sx = H5Screate_simple(2, dx, NULL);
  hid_t ds = H5Dcreate2(f, "X", H5T_IEEE_F64LE, sx, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, X);
  H5Dclose(ds);
  H5Sclose(sx);
  if (y) {
    hid_t sy = H5Screate_simple(ny == 1 ? 1 : 2, dyv, NULL);
    ds = H5Dcreate2(f, "y", H5T_IEEE_F64LE, sy, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, y);
    H5Dclose(ds);
    H5Sclose(sy);
  }
  H5Fclose(f);
}

static ds_data_spec spec_of(ds_data_kind kind, const char *path, const char *labels) {
  ds_data_spec s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  snprintf(s.path, sizeof s.path, "%s", path);
  if (labels) snprintf(s.labels_path, sizeof s.labels_path, "%s", labels);
  s.n_train = 0; /* all */
  s.n_test = 0;
  s.d_out = 1;
  s.pixel_scale = 1.0;
  return s;
}

/* build must fail with DS_EINPUT naming `file` (and containing `what`) */
static void expect_einput(const ds_data_spec *s, const char *file, const char *what, const char *label) {
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te;
  ds_clear_error();
  int rc = ds_data_build(s, &r, &tr, &te);
  const char *msg = ds_errmsg();
  if (getenv("DS_TEST_VERBOSE")) printf("  %s -> %s\n", label, msg);
  CHECK(rc == DS_EINPUT, "%s: rc %d (%s)", label, rc, msg);
  CHECK(strstr(msg, file) != NULL && (!what || strstr(msg, what) != NULL),
        "%s: message '%s' should name %s%s%s", label, msg, file, what ? " and say " : "",
        what ? what : "");
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
}

static int build(const ds_data_spec *s, ds_dataset *tr, ds_dataset *te) {
  ds_rng r;
  ds_rng_init(&r, 5, 0, 0, DS_STREAM_DATA);
  int rc = ds_data_build(s, &r, tr, te);
  if (rc != DS_OK) fprintf(stderr, "  build: %s\n", ds_errmsg());
  return rc;
}

/* ---------------------------------------------------------------- IDX */

static void test_idx(void) {
  unsigned char img[16 + NI * DI], lb[8 + NI];
  size_t ni = idx_images(img, NI), nl = idx_labels(lb, NI);
  write_file(P("img.idx"), img, ni);
  write_file(P("lab.idx"), lb, nl);
  write_gz(P("img.idx.gz"), img, ni);
  write_gz(P("lab.idx.gz"), lb, nl);

  for (int gz = 0; gz < 2; gz++) {
    ds_data_spec s = spec_of(DS_DATA_IDX, P(gz ? "img.idx.gz" : "img.idx"), P(gz ? "lab.idx.gz" : "lab.idx"));
    ds_dataset tr, te;
    CHECK(build(&s, &tr, &te) == DS_OK, "idx gz=%d", gz);
    CHECK(tr.n == NI && tr.d_in == DI && tr.d_out == 1 && te.n == 0, "idx shape %d x %d", tr.d_in, tr.n);
    int ok = 1;
    for (int i = 0; i < NI; i++) {
      for (int q = 0; q < DI; q++) ok &= tr.X[i * DI + q] == pix(i, q);
      ok &= tr.Y[i] == lab(i);
    }
    CHECK(ok, "idx gz=%d: exact pixels and labels", gz);
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }

  ds_data_spec s = spec_of(DS_DATA_IDX, P("img.idx.gz"), P("lab.idx"));
  /* separate test file; pixel scale */
  snprintf(s.test_path, sizeof s.test_path, "%s", P("img.idx"));
  snprintf(s.test_labels_path, sizeof s.test_labels_path, "%s", P("lab.idx.gz"));
  s.n_train = 12;
  s.n_test = 5;
  s.pixel_scale = 1.0 / 255;
  ds_dataset tr, te;
  CHECK(build(&s, &tr, &te) == DS_OK, "idx with test file");
  CHECK(tr.n == 12 && te.n == 5 && te.d_in == DI, "first n_train / n_test");
  CHECK(te.X[4 * DI + 5] == pix(4, 5) * (1.0 / 255) && tr.X[11 * DI] == pix(11, 0) * (1.0 / 255),
        "pixel_scale");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  /* class subset [3, 1]: keep labels 3 and 1 in file order, relabel 3 -> 0, 1 -> 1 */
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("lab.idx"));
  s.nclasses = 2;
  s.classes[0] = 3;
  s.classes[1] = 1;
  CHECK(build(&s, &tr, &te) == DS_OK, "class subset");
  int m = 0, ok = 1;
  for (int i = 0; i < NI; i++)
    if (lab(i) == 3 || lab(i) == 1) {
      ok &= tr.X[m * DI + 2] == pix(i, 2) && tr.Y[m] == (lab(i) == 3 ? 0.0 : 1.0);
      m++;
    }
  CHECK(ok && tr.n == m && m == 10, "class subset keeps and relabels (n %d)", tr.n);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* pm1: first listed class -> -1, second -> +1 */
  s.labels = DS_LABELS_PM1;
  CHECK(build(&s, &tr, &te) == DS_OK, "pm1");
  m = 0;
  ok = tr.d_out == 1;
  for (int i = 0; i < NI; i++)
    if (lab(i) == 3 || lab(i) == 1) ok &= tr.Y[m++] == (lab(i) == 3 ? -1.0 : 1.0);
  CHECK(ok, "pm1 labels");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* one-hot over [3, 1, 0] */
  s.labels = DS_LABELS_ONE_HOT;
  s.nclasses = 3;
  s.classes[2] = 0;
  CHECK(build(&s, &tr, &te) == DS_OK, "one-hot subset");
  m = 0;
  ok = tr.d_out == 3;
  for (int i = 0; i < NI && ok; i++) {
    int c = lab(i) == 3 ? 0 : lab(i) == 1 ? 1 : lab(i) == 0 ? 2 : -1;
    if (c < 0) continue;
    for (int k = 0; k < 3; k++) ok &= tr.Y[m * 3 + k] == (k == c);
    m++;
  }
  CHECK(ok && tr.n == 15, "one-hot rows e_c in list order (n %d)", tr.n);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* one-hot without a list: sorted distinct labels 0..3 */
  s.nclasses = 0;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.d_out == 4 && tr.Y[1 * 4 + 3] == 1.0 && tr.Y[2 * 4 + 2] == 1.0,
        "one-hot of all labels");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == DI && dout == 4 && na == NI,
        "probe one-hot: %d %d %d", di, dout, na);
  s.labels = DS_LABELS_PM1;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_EINPUT, "probe pm1 with 4 classes refused");
  s.nclasses = 2;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && dout == 1 && na == 10, "probe pm1 subset");

  /* malformed files */
  s = spec_of(DS_DATA_IDX, P("nothere.idx"), P("lab.idx"));
  expect_einput(&s, "nothere.idx", "cannot open", "missing images");
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("nolabels.idx"));
  expect_einput(&s, "nolabels.idx", "cannot open", "missing labels");
  s = spec_of(DS_DATA_IDX, P("img.idx"), "");
  expect_einput(&s, "img.idx", "labels", "no labels path");
  unsigned char bad[16 + NI * DI];
  memcpy(bad, img, ni);
  bad[0] = 0x12;
  write_file(P("badmagic.idx"), bad, ni);
  s = spec_of(DS_DATA_IDX, P("badmagic.idx"), P("lab.idx"));
  expect_einput(&s, "badmagic.idx", "magic", "bad magic");
  memcpy(bad, img, ni);
  bad[2] = 0x07; /* unknown type */
  write_file(P("badtype.idx"), bad, ni);
  s = spec_of(DS_DATA_IDX, P("badtype.idx"), P("lab.idx"));
  expect_einput(&s, "badtype.idx", "magic", "bad type byte");
  write_file(P("trunc.idx"), img, ni - 3);
  s = spec_of(DS_DATA_IDX, P("trunc.idx"), P("lab.idx"));
  expect_einput(&s, "trunc.idx", "truncated", "truncated images");
  write_file(P("trunchdr.idx"), img, 10);
  s = spec_of(DS_DATA_IDX, P("trunchdr.idx"), P("lab.idx"));
  expect_einput(&s, "trunchdr.idx", "truncated", "truncated header");
  write_file(P("trunclab.idx"), lb, nl - 1);
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("trunclab.idx"));
  expect_einput(&s, "trunclab.idx", "truncated", "truncated labels");
  write_file(P("empty.idx"), img, 0);
  s = spec_of(DS_DATA_IDX, P("empty.idx"), P("lab.idx"));
  expect_einput(&s, "empty.idx", "truncated", "empty file");
  unsigned char lb2[8 + NI];
  idx_labels(lb2, NI - 1);
  write_file(P("lab19.idx"), lb2, 8 + NI - 1);
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("lab19.idx"));
  expect_einput(&s, "img.idx", "labels", "count mismatch");
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("img.idx")); /* 3-d file as labels */
  expect_einput(&s, "img.idx", "1 dimension", "labels with 3 dims");
  /* gzip stream cut short */
  unsigned char *gzb;
  size_t gzn = read_all(P("img.idx.gz"), &gzb);
  write_file(P("cut.idx.gz"), gzb, gzn / 2);
  s = spec_of(DS_DATA_IDX, P("cut.idx.gz"), P("lab.idx"));
  expect_einput(&s, "cut.idx.gz", NULL, "truncated gzip");
  free(gzb);
  /* too many samples asked for */
  s = spec_of(DS_DATA_IDX, P("img.idx"), P("lab.idx"));
  s.n_train = NI + 1;
  expect_einput(&s, "img.idx", "n_train", "n_train too large");
}

/* ---------------------------------------------------------------- libsvm */

static void test_libsvm(void) {
  /* gas-sensor style: "class;concentration i:v ..." with gaps and blank/comment lines */
  const char *gas =
      "1;10.5 1:0.5 2:-1.25 5:3\n"
      "2;50 1:1 3:2.5e-1\n"
      "\n"
      "# a comment\n"
      "1;20.25 2:4 4:-0.5 5:1e2\r\n"
      "2;100 5:7 1:-2\n";
  write_text(P("gas.svm"), gas);
  ds_data_spec s = spec_of(DS_DATA_LIBSVM, P("gas.svm"), NULL);
  s.libsvm_target_after_semicolon = 1;
  ds_dataset tr, te;
  CHECK(build(&s, &tr, &te) == DS_OK, "libsvm gas");
  const double X[4][5] = {{0.5, -1.25, 0, 0, 3}, {1, 0, 0.25, 0, 0}, {0, 4, 0, -0.5, 100}, {-2, 0, 0, 0, 7}};
  const double Y[4] = {10.5, 50, 20.25, 100};
  int ok = tr.n == 4 && tr.d_in == 5 && tr.d_out == 1;
  for (int i = 0; i < 4 && ok; i++) {
    for (int k = 0; k < 5; k++) ok &= tr.X[i * 5 + k] == X[i][k];
    ok &= tr.Y[i] == Y[i];
  }
  CHECK(ok, "libsvm: exact values, targets after ';', d_in = max index");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* class subset on the label before ';', targets kept */
  s.nclasses = 1;
  s.classes[0] = 2;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 2 && tr.Y[0] == 50 && tr.Y[1] == 100 && tr.X[5 + 4] == 7,
        "libsvm class subset keeps concentrations");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* without the flag the label is the target */
  s.nclasses = 0;
  s.libsvm_target_after_semicolon = 0;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.Y[0] == 1 && tr.Y[1] == 2, "libsvm label as target");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* +1/-1 file, pm1 (sorted: -1 is class 0 -> -1) and a test file with a larger index */
  write_text(P("pm.svm"), "+1 1:1\n-1 2:1\n+1 1:2 2:2\n");
  write_text(P("pm_test.svm"), "-1 3:5\n");
  s = spec_of(DS_DATA_LIBSVM, P("pm.svm"), NULL);
  s.labels = DS_LABELS_PM1;
  snprintf(s.test_path, sizeof s.test_path, "%s", P("pm_test.svm"));
  s.n_test = 1;
  CHECK(build(&s, &tr, &te) == DS_OK, "libsvm pm1");
  CHECK(tr.Y[0] == 1 && tr.Y[1] == -1 && tr.Y[2] == 1 && te.Y[0] == -1, "pm1 values");
  CHECK(tr.d_in == 3 && te.d_in == 3 && te.X[2] == 5 && tr.X[3 * 2 + 1] == 2, "d_in = max over both files");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 3 && dout == 1 && na == 3, "libsvm probe");

  /* malformed lines name PATH:LINE */
  write_text(P("bad1.svm"), "1 1:0.5\n2 1:x\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad1.svm"), NULL);
  expect_einput(&s, "bad1.svm:2:", "value", "bad feature value");
  write_text(P("bad2.svm"), "1 1:0.5\n\n2 a:1\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad2.svm"), NULL);
  expect_einput(&s, "bad2.svm:3:", "index:value", "bad feature token");
  write_text(P("bad3.svm"), "abc 1:1\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad3.svm"), NULL);
  expect_einput(&s, "bad3.svm:1:", "label", "bad label");
  write_text(P("bad4.svm"), "1;2 1:1\n1 1:1\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad4.svm"), NULL);
  s.libsvm_target_after_semicolon = 1;
  expect_einput(&s, "bad4.svm:2:", "target", "missing ;target");
  write_text(P("bad5.svm"), "1 0:1\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad5.svm"), NULL);
  expect_einput(&s, "bad5.svm:1:", "index", "index 0");
  write_text(P("bad6.svm"), "# nothing\n\n");
  s = spec_of(DS_DATA_LIBSVM, P("bad6.svm"), NULL);
  expect_einput(&s, "bad6.svm", "no samples", "empty libsvm");
  s = spec_of(DS_DATA_LIBSVM, P("missing.svm"), NULL);
  expect_einput(&s, "missing.svm", "cannot open", "missing libsvm");
}

/* ---------------------------------------------------------------- CSV */

static void test_csv(void) {
  char text[8192];
  int len = snprintf(text, sizeof text, "f1,f2,f3,t1,t2\n");
  for (int i = 0; i < NF; i++)
    len += snprintf(text + len, sizeof text - len, "%.2f, %.2f,%.2f,%d,%.1f\n", feat(i, 0), feat(i, 1),
                    feat(i, 2), lab(i), 0.5 * i);
  write_text(P("d.csv"), text);
  write_text(P("noheader.csv"), strchr(text, '\n') + 1);
  for (int h = 0; h < 2; h++) {
    ds_data_spec s = spec_of(DS_DATA_CSV, P(h ? "noheader.csv" : "d.csv"), NULL);
    s.d_out = 2;
    ds_dataset tr, te;
    CHECK(build(&s, &tr, &te) == DS_OK, "csv value header=%d", !h);
    int ok = tr.n == NF && tr.d_in == 3 && tr.d_out == 2;
    for (int i = 0; i < NF && ok; i++) {
      for (int k = 0; k < 3; k++) ok &= tr.X[i * 3 + k] == feat(i, k);
      ok &= tr.Y[i * 2] == lab(i) && tr.Y[i * 2 + 1] == 0.5 * i;
    }
    CHECK(ok, "csv header=%d: exact values, last d_out columns are targets", !h);
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
  /* class mode: last column is the class label */
  len = 0;
  for (int i = 0; i < NF; i++)
    len += snprintf(text + len, sizeof text - len, "%.2f,%.2f,%.2f,%d\n", feat(i, 0), feat(i, 1),
                    feat(i, 2), lab(i));
  write_text(P("cls.csv"), text);
  ds_data_spec s = spec_of(DS_DATA_CSV, P("cls.csv"), NULL);
  s.labels = DS_LABELS_ONE_HOT;
  s.d_out = 7; /* ignored in class mode */
  ds_dataset tr, te;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.d_in == 3 && tr.d_out == 4 && tr.Y[1 * 4 + 3] == 1,
        "csv one-hot");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  /* split: last test_fraction of the file is the test pool */
  s = spec_of(DS_DATA_CSV, P("cls.csv"), NULL);
  s.test_fraction = 0.25;
  s.n_train = 15;
  s.n_test = 5;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 15 && te.n == 5, "split sizes 15 / 5");
  CHECK(tr.X[14 * 3] == feat(14, 0) && te.X[0] == feat(15, 0) && te.Y[4] == lab(19),
        "train = first 15, test = last 5");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 3 && dout == 1 && na == 15, "probe split");
  s.n_train = 16;
  expect_einput(&s, "cls.csv", "n_train", "n_train beyond the train pool");
  s.n_train = 10;
  s.n_test = 6;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 10 && te.n == 5, "n_test is capped by the test pool");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* test_fraction 0: the last n_test samples */
  s.test_fraction = 0;
  s.n_train = 0;
  s.n_test = 4;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 16 && te.n == 4 && te.X[3] == feat(17, 0),
        "no fraction: last n_test samples are the test set");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* random subset: a shuffle of the file before the split, reproducible */
  s.random_subset = 1;
  s.n_train = 10;
  ds_dataset tr2, te2;
  CHECK(build(&s, &tr, &te) == DS_OK && build(&s, &tr2, &te2) == DS_OK, "random subset");
  CHECK(memcmp(tr.X, tr2.X, 30 * 8) == 0 && memcmp(te.X, te2.X, 12 * 8) == 0, "same rng, same subset");
  int seen[NF] = {0}, ok = 1, first = 1;
  for (int w = 0; w < 2; w++) {
    ds_dataset *d = w ? &te : &tr;
    for (int i = 0; i < d->n; i++) {
      int found = -1;
      for (int j = 0; j < NF; j++)
        if (d->X[i * 3] == feat(j, 0) && d->X[i * 3 + 1] == feat(j, 1)) found = j;
      ok &= found >= 0 && !seen[found]++ && d->Y[i] == lab(found);
      if (!w) first &= found == i;
    }
  }
  CHECK(ok && !first, "random subset: distinct samples of the file with their labels, not the first n");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);

  /* standardise: train mean 0 / variance 1; the test set uses the train statistics */
  s = spec_of(DS_DATA_CSV, P("cls.csv"), NULL);
  s.test_fraction = 0.25;
  s.n_train = 15;
  s.n_test = 5;
  s.standardize = 1;
  CHECK(build(&s, &tr, &te) == DS_OK, "standardise");
  ok = 1;
  for (int k = 0; k < 3; k++) {
    double m = 0, v = 0, rm = 0, rv = 0;
    for (int i = 0; i < 15; i++) {
      m += tr.X[i * 3 + k];
      rm += feat(i, k);
    }
    m /= 15;
    rm /= 15;
    for (int i = 0; i < 15; i++) {
      v += pow(tr.X[i * 3 + k] - m, 2);
      rv += pow(feat(i, k) - rm, 2);
    }
    v /= 15;
    rv = sqrt(rv / 15);
    ok &= fabs(m) < 1e-12 && fabs(v - 1) < 1e-12;
    ok &= fabs(te.X[2 * 3 + k] - (feat(17, k) - rm) / rv) < 1e-12;
  }
  CHECK(ok, "standardise: train mean 0 var 1, test (x - mu_train) / sd_train");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* whiten: (1/n) X X^T = I on train */
  s.standardize = 0;
  s.whiten = 1;
  CHECK(build(&s, &tr, &te) == DS_OK, "whiten");
  double e = 0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      double g = 0;
      for (int i = 0; i < 15; i++) g += tr.X[i * 3 + a] * tr.X[i * 3 + b];
      e = fmax(e, fabs(g / 15 - (a == b)));
    }
  CHECK(e < 1e-12, "whiten: (1/n) X X^T = I (max error %.3g)", e);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  /* malformed */
  write_text(P("cols.csv"), "1,2,3\n4,5,6\n7,8\n");
  s = spec_of(DS_DATA_CSV, P("cols.csv"), NULL);
  expect_einput(&s, "cols.csv:3:", "columns", "column count");
  write_text(P("num.csv"), "a,b\n1,2\n3,x4\n");
  s = spec_of(DS_DATA_CSV, P("num.csv"), NULL);
  expect_einput(&s, "num.csv:3:", "x4", "not a number");
  write_text(P("hdr.csv"), "a,b,c\n");
  s = spec_of(DS_DATA_CSV, P("hdr.csv"), NULL);
  expect_einput(&s, "hdr.csv", "no data rows", "header only");
  write_text(P("one.csv"), "1\n2\n");
  s = spec_of(DS_DATA_CSV, P("one.csv"), NULL);
  expect_einput(&s, "one.csv:1:", "no inputs", "no input columns");
  s = spec_of(DS_DATA_CSV, P("d.csv"), NULL);
  s.d_out = 2;
  s.labels = DS_LABELS_VALUE;
  s.nclasses = 1;
  s.classes[0] = 1;
  expect_einput(&s, "d.csv", "label column", "classes with 2 target columns");
  s = spec_of(DS_DATA_CSV, P("nope.csv"), NULL);
  expect_einput(&s, "nope.csv", "cannot open", "missing csv");
}

/* ---------------------------------------------------------------- HDF5 */

static void test_hdf5(void) {
  double X[NF * DF], y[NF], y2[NF * 2];
  for (int i = 0; i < NF; i++) {
    for (int k = 0; k < DF; k++) X[i * DF + k] = feat(i, k); /* row-major n x d, as h5py */
    y[i] = lab(i);
    y2[2 * i] = 0.25 * i;
    y2[2 * i + 1] = -i;
  }
  write_h5(P("d.h5"), X, NF, DF, y, 1);
  write_h5(P("d2.h5"), X, NF, DF, y2, 2);
  write_h5(P("noy.h5"), X, NF, DF, NULL, 1);
  write_h5(P("short.h5"), X, NF, DF, y, 1);
  ds_data_spec s = spec_of(DS_DATA_HDF5, P("d.h5"), NULL);
  ds_dataset tr, te;
  CHECK(build(&s, &tr, &te) == DS_OK, "hdf5");
  int ok = tr.n == NF && tr.d_in == DF && tr.d_out == 1;
  for (int i = 0; i < NF && ok; i++) {
    for (int k = 0; k < DF; k++) ok &= tr.X[i * DF + k] == feat(i, k);
    ok &= tr.Y[i] == lab(i);
  }
  CHECK(ok, "hdf5: exact X (n x d row-major) and y");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  s.labels = DS_LABELS_ONE_HOT;
  s.nclasses = 2;
  s.classes[0] = 2;
  s.classes[1] = 0;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 10 && tr.d_out == 2 && tr.Y[0] == 0 && tr.Y[1] == 1 &&
            tr.Y[2] == 1 && tr.Y[3] == 0,
        "hdf5 class subset one-hot (first kept: label 0 -> e_1, then label 2 -> e_0)");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  s = spec_of(DS_DATA_HDF5, P("d2.h5"), NULL);
  CHECK(build(&s, &tr, &te) == DS_OK && tr.d_out == 2 && tr.Y[2 * 3] == 0.75 && tr.Y[2 * 3 + 1] == -3,
        "hdf5 y (n x d_out)");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == DF && dout == 2 && na == NF, "hdf5 probe");
  /* test file, same preprocessing */
  snprintf(s.test_path, sizeof s.test_path, "%s", P("d2.h5"));
  s.n_train = 8;
  s.n_test = 3;
  CHECK(build(&s, &tr, &te) == DS_OK && tr.n == 8 && te.n == 3 && te.X[2 * DF + 1] == feat(2, 1),
        "hdf5 with test file");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  snprintf(s.test_path, sizeof s.test_path, "%s", P("d.h5"));
  expect_einput(&s, "d.h5", "target columns", "test file with other y shape");

  /* ds_h5_read_matrix: row-major rows x cols -> column-major */
  double M[NF * DF];
  CHECK(ds_h5_read_matrix(P("d.h5"), "X", NF, DF, M) == DS_OK, "read_matrix");
  ok = 1;
  for (int i = 0; i < NF; i++)
    for (int k = 0; k < DF; k++) ok &= M[k * NF + i] == feat(i, k);
  CHECK(ok, "read_matrix transposes to column-major");
  CHECK(ds_h5_read_matrix(P("d.h5"), "X", DF, NF, M) == DS_EINPUT && strstr(ds_errmsg(), "d.h5"),
        "read_matrix wrong shape");
  CHECK(ds_h5_read_matrix(P("d.h5"), "Z", 1, 1, M) == DS_EINPUT, "read_matrix missing dataset");
  CHECK(ds_h5_read_matrix(P("none.h5"), "X", 1, 1, M) == DS_EINPUT, "read_matrix missing file");
  CHECK(ds_h5_exists(P("d.h5"), "X") == 1 && ds_h5_exists(P("d.h5"), "y") == 1, "exists");
  CHECK(ds_h5_exists(P("d.h5"), "Z") == 0 && ds_h5_exists(P("none.h5"), "X") == 0 &&
            ds_h5_exists(P("d.h5"), "a/b") == 0,
        "does not exist");

  /* malformed */
  s = spec_of(DS_DATA_HDF5, P("noy.h5"), NULL);
  expect_einput(&s, "noy.h5", "'y'", "missing y");
  write_text(P("text.h5"), "not hdf5\n");
  s = spec_of(DS_DATA_HDF5, P("text.h5"), NULL);
  expect_einput(&s, "text.h5", "HDF5", "not an HDF5 file");
  s = spec_of(DS_DATA_HDF5, P("none.h5"), NULL);
  expect_einput(&s, "none.h5", "cannot open", "missing hdf5");
  write_h5(P("mism.h5"), X, NF, DF, NULL, 1);
  {
    hid_t f = H5Fopen(P("mism.h5"), H5F_ACC_RDWR, H5P_DEFAULT);
    hsize_t n = NF - 1;
    hid_t sp = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "y", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, y);
    H5Dclose(d);
    H5Sclose(sp);
    H5Fclose(f);
  }
  s = spec_of(DS_DATA_HDF5, P("mism.h5"), NULL);
  expect_einput(&s, "mism.h5", "rows", "X / y row mismatch");
}

/* ---------------------------------------------------------------- Fashion-MNIST */

static void test_fashion_mnist(void) {
  const char *d = "/usr/share/datasets/fashion-mnist";
  char img[256], labp[256], timg[256], tlab[256];
  snprintf(img, sizeof img, "%s/train-images-idx3-ubyte.gz", d);
  snprintf(labp, sizeof labp, "%s/train-labels-idx1-ubyte.gz", d);
  snprintf(timg, sizeof timg, "%s/t10k-images-idx3-ubyte.gz", d);
  snprintf(tlab, sizeof tlab, "%s/t10k-labels-idx1-ubyte.gz", d);
  if (access(img, R_OK) != 0 || access(labp, R_OK) != 0 || access(timg, R_OK) != 0 ||
      access(tlab, R_OK) != 0) {
    printf("skip: Fashion-MNIST not installed (%s; package dataset-fashion-mnist)\n", d);
    return;
  }
  ds_data_spec s = spec_of(DS_DATA_IDX, img, labp);
  snprintf(s.test_path, sizeof s.test_path, "%s", timg);
  snprintf(s.test_labels_path, sizeof s.test_labels_path, "%s", tlab);
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 784 && dout == 1 && na == 60000,
        "fashion-mnist probe %d %d %d", di, dout, na);
  s.n_train = 60000;
  s.n_test = 10000;
  s.pixel_scale = 1.0 / 255;
  ds_dataset tr, te;
  CHECK(build(&s, &tr, &te) == DS_OK, "fashion-mnist");
  CHECK(tr.n == 60000 && tr.d_in == 784 && te.n == 10000 && te.d_in == 784, "60000 / 10000 x 784");
  int count[10] = {0}, ok = 1;
  for (int i = 0; i < tr.n; i++) {
    int c = (int)tr.Y[i];
    ok &= c >= 0 && c <= 9 && c == tr.Y[i];
    if (c >= 0 && c <= 9) count[c]++;
  }
  for (int c = 0; c < 10; c++) ok &= count[c] == 6000;
  double mx = 0;
  for (size_t k = 0; k < (size_t)784 * tr.n; k++) mx = fmax(mx, tr.X[k]);
  CHECK(ok, "labels 0..9, 6000 each");
  CHECK(mx <= 1.0 && mx > 0.99, "scaled pixels in [0, 1] (max %g)", mx);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* two-class subset (T-shirt 0 vs trouser 1) with pm1 labels */
  s.nclasses = 2;
  s.classes[0] = 0;
  s.classes[1] = 1;
  s.labels = DS_LABELS_PM1;
  s.n_train = 12000;
  s.n_test = 2000;
  CHECK(build(&s, &tr, &te) == DS_OK, "fashion-mnist two classes");
  int np = 0, nm = 0;
  for (int i = 0; i < tr.n; i++) np += tr.Y[i] == 1.0, nm += tr.Y[i] == -1.0;
  CHECK(tr.n == 12000 && te.n == 2000 && tr.d_out == 1 && np == 6000 && nm == 6000,
        "pm1: 6000 +1 / 6000 -1 (n %d)", tr.n);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

/* ds_data_check (what plan/run call) and ds_data_build (what a worker calls)
 * both fail with exactly `want` ("PATH" is replaced by the fixture's path). */
static void expect_check(const ds_data_spec *s, const char *name, const char *want, const char *label) {
  char full[1024];
  const char *at = strstr(want, "PATH");
  snprintf(full, sizeof full, "%.*s%s%s", (int)(at - want), want, P(name), at + 4);
  ds_clear_error();
  int rc = ds_data_check(s);
  CHECK(rc == DS_EINPUT && !strcmp(ds_errmsg(), full), "%s: check rc %d, '%s', want '%s'", label, rc,
        ds_errmsg(), full);
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te;
  ds_clear_error();
  rc = ds_data_build(s, &r, &tr, &te);
  CHECK(rc == DS_EINPUT && !strcmp(ds_errmsg(), full), "%s: build rc %d, '%s', want '%s'", label, rc,
        ds_errmsg(), full);
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
}

/* issue 11: every value read and checked before any work */
static void test_check(void) {
  unsigned char b[16 + NI * DI + 8], l[8 + NI + 1];
  ds_data_spec s;
  /* IDX: good files pass; images longer than the header; labels longer; float NaN */
  write_file(P("ci.idx"), b, idx_images(b, NI));
  write_file(P("cl.idx"), l, idx_labels(l, NI));
  s = spec_of(DS_DATA_IDX, P("ci.idx"), P("cl.idx"));
  s.test_fraction = 0.25;
  CHECK(ds_data_check(&s) == DS_OK, "good IDX: %s", ds_errmsg());
  /* one byte more than the header promises, in the images or in the labels */
  size_t ni = idx_images(b, NI), nl = idx_labels(l, NI);
  b[ni] = 7, l[nl] = 1;
  write_file(P("long.idx"), b, ni + 1);
  write_file(P("longl.idx"), l, nl + 1);
  const char *const longer[2][3] = {{"long.idx", "cl.idx", "20 images of 6"}, {"ci.idx", "longl.idx", "20 labels of 1"}};
  for (int k = 0; k < 2; k++) {
    char want[200];
    snprintf(want, sizeof want, "PATH: the header says %s bytes, but the file has more data after them "
             "(header and size disagree)", longer[k][2]);
    s = spec_of(DS_DATA_IDX, P(longer[k][0]), P(longer[k][1]));
    s.test_fraction = 0.25;
    expect_check(&s, longer[k][k], want, longer[k][k]);
  }
  unsigned char fb[16 + 2 * DI * 4];
  put_be32(fb, 0x00000D03);
  put_be32(fb + 4, 2), put_be32(fb + 8, RI), put_be32(fb + 12, CI);
  for (int k = 0; k < 2 * DI; k++) {
    float v = k == DI + 2 ? INFINITY : (float)k;
    uint32_t u;
    memcpy(&u, &v, 4);
    put_be32(fb + 16 + 4 * k, u);
  }
  write_file(P("f.idx"), fb, sizeof fb);
  write_file(P("l2.idx"), l, idx_labels(l, 2));
  s = spec_of(DS_DATA_IDX, P("f.idx"), P("l2.idx"));
  s.test_fraction = 0.4;
  expect_check(&s, "f.idx", "PATH: image 2, value 3 is inf, expected a finite number", "IDX float Inf");
  /* HDF5: NaN in y; ds_h5_read_matrix refuses NaN */
  double X[NF * DF], y[NF];
  for (int i = 0; i < NF; i++) {
    for (int k = 0; k < DF; k++) X[i * DF + k] = feat(i, k);
    y[i] = i % 2;
  }
  y[3] = NAN;
  write_h5(P("ynan.h5"), X, NF, DF, y, 1);
  s = spec_of(DS_DATA_HDF5, P("ynan.h5"), NULL);
  expect_check(&s, "ynan.h5", "PATH: dataset 'y' has nan at [3, 0] (row, column from 0), expected finite "
               "numbers", "HDF5 y NaN");
  double m[NF * DF];
  ds_clear_error();
  CHECK(ds_h5_read_matrix(P("ynan.h5"), "y", NF, 1, m) == DS_EINPUT &&
            strstr(ds_errmsg(), "dataset 'y' has nan at [3, 0]"), "read_matrix NaN: %s", ds_errmsg());
  /* text files: libsvm duplicate index, NaN label / value, NUL byte; CSV NaN
   * on the first line is data (not a header) */
  static const struct {
    ds_data_kind kind;
    const char *name, *text;
    size_t len;
    const char *want, *label;
  } bad_text[] = {
      {DS_DATA_LIBSVM, "dup.svm", "1 1:1 2:2\n0 2:1 1:3 2:4\n", 0,
       "PATH:2: feature index 2 given twice, expected each index at most once per line", "libsvm duplicate index"},
      {DS_DATA_LIBSVM, "nanl.svm", "1 1:1\nnan 1:2\n", 0, "PATH:2: the label is 'nan', expected a finite number",
       "libsvm NaN label"},
      {DS_DATA_LIBSVM, "nanv.svm", "1 1:1 3:-inf\n0 1:2\n", 0,
       "PATH:1: feature 3 is '-inf', expected a finite number", "libsvm Inf value"},
      {DS_DATA_LIBSVM, "nul.svm", "1 1:1\n0 1:\0002\n", 12, "PATH:2: NUL byte (binary data) at byte 11, expected text",
       "libsvm NUL"},
      {DS_DATA_CSV, "nan1.csv", "1,nan,3\n4,5,6\n7,8,9\n", 0, "PATH:1: column 2 is 'nan', expected a finite number",
       "CSV NaN first line"},
  };
  for (size_t k = 0; k < sizeof bad_text / sizeof bad_text[0]; k++) {
    write_file(P(bad_text[k].name), bad_text[k].text,
               bad_text[k].len ? bad_text[k].len : strlen(bad_text[k].text));
    s = spec_of(bad_text[k].kind, P(bad_text[k].name), NULL);
    expect_check(&s, bad_text[k].name, bad_text[k].want, bad_text[k].label);
  }
  write_text(P("ok.csv"), "a,b,c\n1,2,3\n4,5,6\n7,8,9\n1,1,1\n");
  s = spec_of(DS_DATA_CSV, P("ok.csv"), NULL);
  s.test_fraction = 0.25;
  CHECK(ds_data_check(&s) == DS_OK, "good CSV: %s", ds_errmsg());
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/ds_loaders_XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  test_idx();
  test_libsvm();
  test_csv();
  test_hdf5();
  test_check();
  test_fashion_mnist();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return ds_check_report("test_loaders");
}
