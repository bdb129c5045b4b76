/* test_data_images.c -- issue 26: the CIFAR-10/100 binary and SVHN .mat
 * loaders (src/data/images.c) on files written here: a CIFAR writer (records
 * of label byte(s) + 3072 CHW pixel bytes) and a MAT level 5 writer (header,
 * miMATRIX elements, optionally miCOMPRESSED with zlib's compress2, little-
 * or big-endian), so CI needs no Python. Checks exact pixels and labels
 * against the generator's formula, directories of batch files, class subsets
 * and pm1 relabelling, per-channel standardisation, the image shape on the
 * dataset, probe/check, and every malformed-file error with its message.
 *
 *   test_data_images                 the tests (a temporary directory)
 *   test_data_images write DIR       only write the fixture files into DIR
 *                                    (tests/data_images.sh uses them)
 *   test_data_images scipy DIR       also load DIR/scipy_plain.mat and
 *                                    DIR/scipy_z.mat (scipy.io.savemat, same
 *                                    formula, tests/data_images.py) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "dynsweep/data.h"

static char dir[512];
static char pbuf[8][1024];
static int pnext;

static const char *P(const char *name) {
  char *p = pbuf[pnext++ % 8];
  snprintf(p, 1024, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fwrite(buf, 1, len, f);
  fclose(f);
}

/* The generator: sample i, channel c, row r, column x. */
static int pix(long i, int c, int r, int x) { return (int)((7 * i + 3 * c + 5 * r + x) % 256); }

/* ---------------------------------------------------------------- CIFAR writer */

/* Records i0 .. i0+n-1 of CIFAR-10 (c100 = 0: label i mod 10) or CIFAR-100
 * (coarse i mod 20, fine (3i + 1) mod 100). */
static void write_cifar(const char *path, long i0, int n, int c100) {
  size_t rec = c100 ? 3074 : 3073, nl = c100 ? 2 : 1;
  unsigned char *b = malloc(rec * (size_t)n + 1);
  for (int k = 0; k < n; k++) {
    long i = i0 + k;
    unsigned char *p = b + rec * k;
    if (c100) {
      p[0] = (unsigned char)(i % 20);
      p[1] = (unsigned char)((3 * i + 1) % 100);
    } else {
      p[0] = (unsigned char)(i % 10);
    }
    for (int c = 0; c < 3; c++)
      for (int r = 0; r < 32; r++)
        for (int x = 0; x < 32; x++) p[nl + 1024 * c + 32 * r + x] = (unsigned char)pix(i, c, r, x);
  }
  write_file(path, b, rec * (size_t)n);
  free(b);
}

/* ---------------------------------------------------------------- MAT writer */

typedef struct {
  unsigned char *b;
  size_t n, cap;
  int be; /* write big-endian */
} obuf;

static void put(obuf *o, const void *p, size_t n) {
  if (o->n + n > o->cap) {
    o->cap = (o->n + n) * 2 + 256;
    o->b = realloc(o->b, o->cap);
  }
  memcpy(o->b + o->n, p, n);
  o->n += n;
}
/* a value of sz bytes in the file's byte order */
static void put_num(obuf *o, const void *v, size_t sz) {
  unsigned char t[8];
  memcpy(t, v, sz);
  if (o->be)
    for (size_t i = 0; i < sz / 2; i++) {
      unsigned char x = t[i];
      t[i] = t[sz - 1 - i];
      t[sz - 1 - i] = x;
    }
  put(o, t, sz);
}
static void put32(obuf *o, uint32_t v) { put_num(o, &v, 4); }
static void pad8(obuf *o) {
  static const unsigned char z[8] = {0};
  if (o->n % 8) put(o, z, 8 - o->n % 8);
}

/* One variable: miMATRIX [flags; dims; name; real data of type mi (values of
 * sz bytes, host order)], compressed into a miCOMPRESSED element when z. */
typedef struct {
  const char *name;
  uint32_t flags; /* class | 0x0800 complex ... */
  int nd;
  int32_t dims[4];
  uint32_t mi;
  size_t sz, count;
  const void *data;
  int drop_bytes; /* write this many fewer data bytes than count*sz says (count mismatch) */
} mvar;

static void mat_var(obuf *o, const mvar *v, int z) {
  obuf body = {0};
  body.be = o->be;
  put32(&body, 6); /* miUINT32 */
  put32(&body, 8);
  put32(&body, v->flags);
  put32(&body, 0);
  put32(&body, 5); /* miINT32 */
  put32(&body, (uint32_t)(4 * v->nd));
  for (int k = 0; k < v->nd; k++) put32(&body, (uint32_t)v->dims[k]);
  pad8(&body);
  size_t L = strlen(v->name);
  if (L <= 4) { /* small element, as scipy writes 'X' */
    put32(&body, (uint32_t)(L << 16 | 1));
    char nm[4] = {0};
    memcpy(nm, v->name, L);
    put(&body, nm, 4);
  } else {
    put32(&body, 1);
    put32(&body, (uint32_t)L);
    put(&body, v->name, L);
    pad8(&body);
  }
  size_t bytes = v->count * v->sz - (size_t)v->drop_bytes;
  if (bytes <= 4) { /* small data element (scipy: y of 2 bytes) */
    put32(&body, (uint32_t)(bytes << 16 | v->mi));
    unsigned char t[4] = {0};
    obuf tmp = {0};
    tmp.be = o->be;
    for (size_t k = 0; k < bytes / v->sz; k++) put_num(&tmp, (const char *)v->data + k * v->sz, v->sz);
    memcpy(t, tmp.b, tmp.n);
    free(tmp.b);
    put(&body, t, 4);
  } else {
    put32(&body, v->mi);
    put32(&body, (uint32_t)bytes);
    for (size_t k = 0; k < bytes / v->sz; k++) put_num(&body, (const char *)v->data + k * v->sz, v->sz);
    pad8(&body);
  }
  obuf el = {0};
  el.be = o->be;
  put32(&el, 14); /* miMATRIX */
  put32(&el, (uint32_t)body.n);
  put(&el, body.b, body.n);
  free(body.b);
  if (!z) {
    put(o, el.b, el.n);
  } else {
    uLongf zn = compressBound(el.n);
    unsigned char *zb = malloc(zn);
    compress2(zb, &zn, el.b, el.n, 6);
    put32(o, 15); /* miCOMPRESSED, not padded */
    put32(o, (uint32_t)zn);
    put(o, zb, zn);
    free(zb);
  }
  free(el.b);
}

static void mat_header(obuf *o, const char *text) {
  char h[116];
  memset(h, ' ', sizeof h);
  memcpy(h, text, strlen(text));
  put(o, h, 116);
  static const unsigned char sub[8] = {0};
  put(o, sub, 8);
  uint16_t ver = 0x0100, endian = (uint16_t)('M' << 8 | 'I');
  put_num(o, &ver, 2);
  put_num(o, &endian, 2); /* 'I','M' little-endian; 'M','I' big-endian */
}

/* SVHN-like data: X uint8 [32, 32, 3, n] column-major from the generator,
 * y [n, 1] = i mod 10 with 0 stored as 10. */
typedef struct {
  int n, z, be;
  uint32_t xflags, yflags; /* classes (9 uint8) and flags */
  int32_t xdims[4];
  int ynd;
  int32_t ydims[2];
  int bad_label_at; /* >= 0: y there is bad_label */
  int bad_label;
  int no_y, x_drop;
  const char *header;
  uint32_t ymi; /* storage type of y: miUINT8 (2) or miDOUBLE (9) */
} svhn_opts;

static svhn_opts svhn_default(int n) {
  svhn_opts s;
  memset(&s, 0, sizeof s);
  s.n = n;
  s.xflags = s.yflags = 9;
  s.xdims[0] = 32, s.xdims[1] = 32, s.xdims[2] = 3, s.xdims[3] = n;
  s.ynd = 2, s.ydims[0] = n, s.ydims[1] = 1;
  s.bad_label_at = -1;
  s.header = "MATLAB 5.0 MAT-file, Platform: test, Created on: Sat Nov 28 00:00:00 2026";
  s.ymi = 2;
  return s;
}

static size_t write_svhn(const char *path, const svhn_opts *s) {
  size_t nx = (size_t)3072 * s->n;
  unsigned char *X = malloc(nx + 1), *y8 = malloc((size_t)s->n + 1);
  double *yd = malloc(((size_t)s->n + 1) * sizeof *yd);
  for (long i = 0; i < s->n; i++)
    for (int ch = 0; ch < 3; ch++)
      for (int r = 0; r < 32; r++)
        for (int c = 0; c < 32; c++) X[r + 32 * c + 1024 * ch + 3072 * i] = (unsigned char)pix(i, ch, r, c);
  for (int i = 0; i < s->n; i++) {
    int lab = i % 10 == 0 ? 10 : i % 10;
    if (i == s->bad_label_at) lab = s->bad_label;
    y8[i] = (unsigned char)lab;
    yd[i] = lab;
  }
  obuf o = {0};
  o.be = s->be;
  mat_header(&o, s->header);
  mvar vx = {"X", s->xflags, 4, {s->xdims[0], s->xdims[1], s->xdims[2], s->xdims[3]}, 2, 1, nx, X,
             s->x_drop};
  mvar vy = {"y", s->yflags, s->ynd, {s->ydims[0], s->ydims[1]}, s->ymi,
             s->ymi == 9 ? sizeof(double) : 1, (size_t)s->n, s->ymi == 9 ? (void *)yd : (void *)y8, 0};
  mvar other = {"__note", 4, 2, {1, 3}, 16, 1, 3, "abc", 0}; /* a char variable: skipped */
  mat_var(&o, &other, 0);
  mat_var(&o, &vx, s->z);
  if (!s->no_y) mat_var(&o, &vy, s->z);
  write_file(path, o.b, o.n);
  size_t n = o.n;
  free(o.b);
  free(X);
  free(y8);
  free(yd);
  return n;
}

/* ---------------------------------------------------------------- helpers */

static ds_data_spec spec_of(ds_data_kind kind, const char *path, const char *test_path) {
  ds_data_spec s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  snprintf(s.path, sizeof s.path, "%s", path);
  if (test_path) snprintf(s.test_path, sizeof s.test_path, "%s", test_path);
  s.labels = DS_LABELS_VALUE;
  s.pixel_scale = 1.0;
  return s;
}

static int build(const ds_data_spec *s, ds_dataset *tr, ds_dataset *te) {
  ds_rng rng;
  ds_rng_init(&rng, 1, 0, 0, DS_STREAM_DATA);
  return ds_data_build(s, &rng, tr, te);
}

/* Every pixel of column j equals the generator's sample i (CHW order). */
static int pixels_are(const ds_dataset *d, int j, long i) {
  for (int c = 0; c < 3; c++)
    for (int r = 0; r < 32; r++)
      for (int x = 0; x < 32; x++)
        if (d->X[(size_t)j * 3072 + 1024 * c + 32 * r + x] != pix(i, c, r, x)) return 0;
  return 1;
}

/* build fails with DS_EINPUT and a message holding every fragment */
static void expect_err(const ds_data_spec *s, const char *what, const char *f1, const char *f2) {
  ds_dataset tr, te;
  int rc = build(s, &tr, &te);
  const char *m = ds_errmsg();
  int ok = rc == DS_EINPUT && strstr(m, f1) && (!f2 || strstr(m, f2));
  printf("%s: %s\n", what, m);
  CHECK(ok, "%s: rc %d, message '%s' (want '%s'%s%s)", what, rc, m, f1, f2 ? " and '" : "", f2 ? f2 : "");
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
  /* ds_data_check (plan) says the same (the loaders' errors) */
  if (!strstr(what, "standardize")) rc = ds_data_check(s);
  else rc = DS_EINPUT;
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), f1), "%s: ds_data_check: rc %d, '%s'", what, rc, ds_errmsg());
}

/* ---------------------------------------------------------------- fixture set */

static void write_fixtures(void) {
  char d10[600];
  snprintf(d10, sizeof d10, "%s/c10", dir);
  mkdir(d10, 0755);
  /* batches 1, 2, 10 (numeric order: 1, 2, 10), 30 records in all, and 20 test records */
  write_cifar(P("c10/data_batch_1.bin"), 0, 12, 0);
  write_cifar(P("c10/data_batch_2.bin"), 12, 10, 0);
  write_cifar(P("c10/data_batch_10.bin"), 22, 8, 0);
  write_cifar(P("c10/test_batch.bin"), 1000, 20, 0);
  write_file(P("c10/batches.meta.txt"), "airplane\n", 9); /* ignored */
  write_cifar(P("c10_one.bin"), 0, 30, 0);
  mkdir(P("c100"), 0755);
  write_cifar(P("c100/train.bin"), 0, 40, 1);
  write_cifar(P("c100/test.bin"), 500, 10, 1);
  svhn_opts o = svhn_default(24);
  write_svhn(P("svhn_plain.mat"), &o);
  o.z = 1;
  write_svhn(P("svhn_z.mat"), &o);
  svhn_opts t = svhn_default(10);
  t.z = 1;
  write_svhn(P("svhn_test.mat"), &t);
  /* broken files for the shell test */
  write_cifar(P("c10_short.bin"), 0, 5, 0);
  if (truncate(P("c10_short.bin"), 5 * 3073 - 100) != 0) perror("truncate");
  unsigned char rec[3073];
  memset(rec, 3, sizeof rec);
  FILE *f = fopen(P("c10_label.bin"), "wb");
  for (int i = 0; i < 4; i++) {
    rec[0] = i == 2 ? 10 : (unsigned char)i;
    fwrite(rec, 1, sizeof rec, f);
  }
  fclose(f);
  svhn_opts b = svhn_default(6);
  b.z = 1;
  b.bad_label_at = 4;
  b.bad_label = 0;
  write_svhn(P("svhn_label0.mat"), &b);
}

/* ---------------------------------------------------------------- tests */

static void test_cifar10(void) {
  ds_dataset tr, te;
  ds_data_spec s = spec_of(DS_DATA_CIFAR10, P("c10"), P("c10"));
  s.n_test = 100;
  int rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK, "cifar10 directory: %s", ds_errmsg());
  if (rc != DS_OK) return;
  CHECK(tr.n == 30 && tr.d_in == 3072 && tr.d_out == 1, "n %d d_in %d d_out %d", tr.n, tr.d_in, tr.d_out);
  CHECK(te.n == 20, "test n %d (test_batch.bin)", te.n);
  CHECK(tr.c == 3 && tr.h == 32 && tr.w == 32 && te.c == 3, "image shape %d x %d x %d", tr.c, tr.h, tr.w);
  int good = 1;
  for (int j = 0; j < tr.n; j++) good &= pixels_are(&tr, j, j) && tr.Y[j] == j % 10;
  CHECK(good, "training pixels (CHW) and labels equal the generator, batches in order 1, 2, 10");
  good = 1;
  for (int j = 0; j < te.n; j++) good &= pixels_are(&te, j, 1000 + j) && te.Y[j] == (1000 + j) % 10;
  CHECK(good, "test pixels and labels equal the generator");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  /* one file (the batches concatenated), a test split */
  s = spec_of(DS_DATA_CIFAR10, P("c10_one.bin"), NULL);
  s.test_fraction = 0.2;
  s.n_test = 6;
  rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK && tr.n == 24 && te.n == 6 && pixels_are(&te, 0, 24) && pixels_are(&tr, 23, 23),
        "one file, test_fraction 0.2: %d + %d", tr.n, te.n);
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }

  /* classes [7, 9] -> pm1 */
  s = spec_of(DS_DATA_CIFAR10, P("c10"), P("c10"));
  s.classes[0] = 7, s.classes[1] = 9, s.nclasses = 2;
  s.labels = DS_LABELS_PM1;
  s.n_test = 100;
  rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK, "cifar10 classes [7, 9] pm1: %s", ds_errmsg());
  if (rc == DS_OK) {
    /* samples 7, 9, 17, 19, 27, 29 */
    static const int want[] = {7, 9, 17, 19, 27, 29};
    good = tr.n == 6 && tr.d_out == 1;
    for (int j = 0; good && j < 6; j++)
      good &= pixels_are(&tr, j, want[j]) && tr.Y[j] == (want[j] % 10 == 7 ? -1.0 : 1.0);
    CHECK(good, "the kept samples are 7, 9, 17, 19, 27, 29 with 7 -> -1, 9 -> +1 (n %d)", tr.n);
    CHECK(te.n == 4 && te.Y[0] == -1 && te.Y[1] == 1 && pixels_are(&te, 0, 1007),
          "test: 1007, 1009, 1017, 1019 (n %d)", te.n);
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
  /* one_hot over classes [3, 1, 4] */
  s = spec_of(DS_DATA_CIFAR10, P("c10_one.bin"), NULL);
  s.classes[0] = 3, s.classes[1] = 1, s.classes[2] = 4, s.nclasses = 3;
  s.labels = DS_LABELS_ONE_HOT;
  s.test_fraction = 0;
  rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK && tr.n == 9 && tr.d_out == 3 && tr.Y[0 * 3 + 1] == 1 && tr.Y[1 * 3 + 0] == 1 &&
            tr.Y[2 * 3 + 2] == 1 && pixels_are(&tr, 0, 1) && pixels_are(&tr, 1, 3),
        "one_hot [3, 1, 4]: sample 1 -> e_1, 3 -> e_0, 4 -> e_2 (n %d)", tr.n);
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }

  /* probe: 30 training samples of 3072 features; classes [7, 9] pm1: 6, d_out 1 */
  int din = 0, dout = 0, avail = 0;
  s = spec_of(DS_DATA_CIFAR10, P("c10"), P("c10"));
  rc = ds_data_probe(&s, &din, &dout, &avail);
  CHECK(rc == DS_OK && din == 3072 && dout == 1 && avail == 30, "probe: %d %d %d", din, dout, avail);
  CHECK(ds_data_check(&s) == DS_OK, "ds_data_check on the good directory: %s", ds_errmsg());
  char(*files)[DS_MAX_PATH] = NULL;
  int nf = 0;
  rc = ds_data_files(DS_DATA_CIFAR10, P("c10"), 0, &files, &nf);
  CHECK(rc == DS_OK && nf == 3 && strstr(files[0], "data_batch_1.bin") && strstr(files[2], "data_batch_10.bin"),
        "ds_data_files: %d files", nf);
  free(files);
}

static void test_cifar100(void) {
  ds_dataset tr, te;
  ds_data_spec s = spec_of(DS_DATA_CIFAR100, P("c100"), P("c100"));
  s.n_test = 10;
  int rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK, "cifar100: %s", ds_errmsg());
  if (rc != DS_OK) return;
  int good = tr.n == 40 && te.n == 10;
  for (int j = 0; good && j < tr.n; j++) good &= pixels_are(&tr, j, j) && tr.Y[j] == (3 * j + 1) % 100;
  for (int j = 0; good && j < te.n; j++) good &= pixels_are(&te, j, 500 + j) && te.Y[j] == (3 * (500 + j) + 1) % 100;
  CHECK(good, "cifar100 fine labels (second byte) and pixels");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  s.cifar100_coarse = 1;
  rc = build(&s, &tr, &te);
  good = rc == DS_OK && tr.n == 40;
  for (int j = 0; good && j < tr.n; j++) good &= pixels_are(&tr, j, j) && tr.Y[j] == j % 20;
  CHECK(good, "cifar100 coarse labels (first byte)");
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
  /* coarse classes [5, 6] -> pm1: samples 5, 6, 25, 26 */
  s.classes[0] = 5, s.classes[1] = 6, s.nclasses = 2;
  s.labels = DS_LABELS_PM1;
  rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK && tr.n == 4 && tr.Y[0] == -1 && tr.Y[1] == 1 && tr.Y[2] == -1 && pixels_are(&tr, 3, 26),
        "cifar100 coarse [5, 6] pm1 (n %d)", rc == DS_OK ? tr.n : -1);
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
}

static void check_svhn(const char *path, int n, const char *what) {
  ds_dataset tr, te;
  ds_data_spec s = spec_of(DS_DATA_SVHN, path, NULL);
  s.test_fraction = 0;
  int rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK, "%s: %s", what, ds_errmsg());
  if (rc != DS_OK) return;
  int good = tr.n == n && tr.d_in == 3072 && tr.c == 3 && tr.h == 32 && tr.w == 32;
  for (int j = 0; good && j < tr.n; j++) good &= pixels_are(&tr, j, j) && tr.Y[j] == j % 10;
  CHECK(good, "%s: pixels transposed to CHW and labels (10 -> 0) equal the generator (n %d)", what, tr.n);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

static void test_svhn(void) {
  check_svhn(P("svhn_plain.mat"), 24, "svhn uncompressed");
  check_svhn(P("svhn_z.mat"), 24, "svhn miCOMPRESSED");
  svhn_opts o = svhn_default(13);
  o.be = 1;
  write_svhn(P("svhn_be.mat"), &o);
  check_svhn(P("svhn_be.mat"), 13, "svhn big-endian ('MI')");
  o = svhn_default(12);
  o.z = 1;
  o.yflags = 6; /* class double, stored as miDOUBLE */
  o.ymi = 9;
  write_svhn(P("svhn_yd.mat"), &o);
  check_svhn(P("svhn_yd.mat"), 12, "svhn y double");
  o = svhn_default(2); /* y of 2 bytes: a small data element, as scipy writes it */
  write_svhn(P("svhn_small.mat"), &o);
  check_svhn(P("svhn_small.mat"), 2, "svhn y as a small element");
  /* test file, classes [0, 1] pm1 (digit 0 = label 10 in the file) */
  ds_dataset tr, te;
  ds_data_spec s = spec_of(DS_DATA_SVHN, P("svhn_z.mat"), P("svhn_test.mat"));
  s.classes[0] = 1, s.classes[1] = 0, s.nclasses = 2;
  s.labels = DS_LABELS_PM1;
  s.n_test = 10;
  int rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK && tr.n == 6 && te.n == 2 && tr.Y[0] == 1 && tr.Y[1] == -1 && pixels_are(&tr, 0, 0) &&
            pixels_are(&tr, 1, 1) && pixels_are(&tr, 5, 21),
        "svhn classes [1, 0] pm1: digit 1 -> -1, 0 -> +1 (n %d + %d): %s", rc == DS_OK ? tr.n : -1,
        rc == DS_OK ? te.n : -1, ds_errmsg());
  if (rc == DS_OK) {
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
  }
  int din, dout, avail;
  s = spec_of(DS_DATA_SVHN, P("svhn_z.mat"), NULL);
  s.test_fraction = 0.25;
  rc = ds_data_probe(&s, &din, &dout, &avail);
  CHECK(rc == DS_OK && din == 3072 && dout == 1 && avail == 18, "svhn probe %d %d %d", din, dout, avail);
}

static void test_standardize_channels(void) {
  ds_dataset tr, te;
  ds_data_spec s = spec_of(DS_DATA_CIFAR10, P("c10"), P("c10"));
  s.n_test = 20;
  s.pixel_scale = 1.0 / 255;
  s.standardize_channels = 1;
  int rc = build(&s, &tr, &te);
  CHECK(rc == DS_OK, "standardize_channels: %s", ds_errmsg());
  if (rc != DS_OK) return;
  /* the train statistics, recomputed from the generator */
  double mu[3] = {0}, sd[3] = {0};
  for (int c = 0; c < 3; c++) {
    double m = 0, v = 0;
    for (int i = 0; i < 30; i++)
      for (int q = 0; q < 1024; q++) m += pix(i, c, q / 32, q % 32) / 255.0;
    m /= 30 * 1024.0;
    for (int i = 0; i < 30; i++)
      for (int q = 0; q < 1024; q++) v += (pix(i, c, q / 32, q % 32) / 255.0 - m) * (pix(i, c, q / 32, q % 32) / 255.0 - m);
    mu[c] = m;
    sd[c] = sqrt(v / (30 * 1024.0));
  }
  double worst_m = 0, worst_s = 0, worst_t = 0;
  for (int c = 0; c < 3; c++) {
    double m = 0, v = 0;
    for (int i = 0; i < tr.n; i++)
      for (int q = 0; q < 1024; q++) m += tr.X[(size_t)i * 3072 + c * 1024 + q];
    m /= tr.n * 1024.0;
    for (int i = 0; i < tr.n; i++)
      for (int q = 0; q < 1024; q++) v += pow(tr.X[(size_t)i * 3072 + c * 1024 + q] - m, 2);
    v /= tr.n * 1024.0;
    worst_m = fmax(worst_m, fabs(m));
    worst_s = fmax(worst_s, fabs(sqrt(v) - 1));
    for (int i = 0; i < te.n; i++)
      for (int q = 0; q < 1024; q += 37) {
        double want = (pix(1000 + i, c, q / 32, q % 32) / 255.0 - mu[c]) / sd[c];
        worst_t = fmax(worst_t, fabs(te.X[(size_t)i * 3072 + c * 1024 + q] - want));
      }
  }
  printf("standardize_channels: train channel |mean| <= %.2e, |std - 1| <= %.2e; test vs train "
         "statistics %.2e (mu %.4f %.4f %.4f, sd %.4f %.4f %.4f)\n",
         worst_m, worst_s, worst_t, mu[0], mu[1], mu[2], sd[0], sd[1], sd[2]);
  CHECK(worst_m < 1e-12 && worst_s < 1e-12, "train channel means 0 and stds 1: %g %g", worst_m, worst_s);
  CHECK(worst_t < 1e-12, "test set standardised with the train statistics: %g", worst_t);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  s.standardize = 1;
  expect_err(&s, "standardize and standardize_channels", "give one", NULL);
}

static void test_errors(void) {
  char m[2048];
  ds_data_spec s;
  /* CIFAR: size not a multiple of the record (cut short) */
  write_cifar(P("e_short.bin"), 0, 5, 0);
  if (truncate(P("e_short.bin"), 5 * 3073 - 100) != 0) perror("truncate");
  s = spec_of(DS_DATA_CIFAR10, P("e_short.bin"), NULL);
  snprintf(m, sizeof m, "%s: 15265 bytes is not a multiple of the 3073-byte CIFAR-10 record (1 label byte + "
           "3072 pixel bytes): 4 whole records and 2973 bytes over; the file is cut short or not CIFAR-10",
           P("e_short.bin"));
  expect_err(&s, "cifar10 cut short", m, NULL);
  /* gzip: the size is known only at the end, so the last record is found incomplete */
  {
    unsigned char *b = malloc(5 * 3073);
    FILE *g = fopen(P("e_short.bin"), "rb");
    size_t nb = fread(b, 1, 5 * 3073, g);
    fclose(g);
    gzFile z = gzopen(P("e_short.bin.gz"), "wb");
    gzwrite(z, b, (unsigned)nb);
    gzclose(z);
    free(b);
  }
  s = spec_of(DS_DATA_CIFAR10, P("e_short.bin.gz"), NULL);
  snprintf(m, sizeof m, "%s: truncated: record 5 has 2973 of its 3073 bytes", P("e_short.bin.gz"));
  expect_err(&s, "cifar10 gzip cut short", m, "not a multiple of 3073");
  /* a bad batch in a directory is named by its own path */
  mkdir(P("e_dir"), 0755);
  write_cifar(P("e_dir/data_batch_1.bin"), 0, 3, 0);
  write_cifar(P("e_dir/data_batch_2.bin"), 3, 3, 0);
  if (truncate(P("e_dir/data_batch_2.bin"), 3 * 3073 + 7) != 0) perror("truncate");
  s = spec_of(DS_DATA_CIFAR10, P("e_dir"), NULL);
  snprintf(m, sizeof m, "%s: 9226 bytes is not a multiple of the 3073-byte CIFAR-10 record", P("e_dir/data_batch_2.bin"));
  expect_err(&s, "cifar10 directory, second batch cut short", m, NULL);
  /* CIFAR-100 file read as CIFAR-10: 3074-byte records */
  write_cifar(P("e_100.bin"), 0, 4, 1);
  s = spec_of(DS_DATA_CIFAR10, P("e_100.bin"), NULL);
  expect_err(&s, "cifar100 file as cifar10", "12296 bytes is not a multiple of the 3073-byte CIFAR-10 record",
             "(CIFAR-100 records are 3074 bytes)");
  /* labels out of range */
  unsigned char rec[3074];
  memset(rec, 1, sizeof rec);
  FILE *f = fopen(P("e_label10.bin"), "wb");
  for (int i = 0; i < 4; i++) {
    rec[0] = i == 2 ? 10 : (unsigned char)i;
    fwrite(rec, 1, 3073, f);
  }
  fclose(f);
  s = spec_of(DS_DATA_CIFAR10, P("e_label10.bin"), NULL);
  snprintf(m, sizeof m, "%s: record 3 (byte 6146): label 10 out of range, expected 0..9", P("e_label10.bin"));
  expect_err(&s, "cifar10 label 10", m, NULL);
  s.nclasses = 1, s.classes[0] = 1; /* refused even when the record would be dropped */
  expect_err(&s, "cifar10 label 10 outside the class subset", m, NULL);
  f = fopen(P("e_fine.bin"), "wb");
  rec[0] = 3, rec[1] = 100;
  fwrite(rec, 1, 3074, f);
  fclose(f);
  s = spec_of(DS_DATA_CIFAR100, P("e_fine.bin"), NULL);
  snprintf(m, sizeof m, "%s: record 1 (byte 1): fine label 100 out of range, expected 0..99", P("e_fine.bin"));
  expect_err(&s, "cifar100 fine 100", m, NULL);
  f = fopen(P("e_coarse.bin"), "wb");
  rec[0] = 1, rec[1] = 5;
  fwrite(rec, 1, 3074, f);
  rec[0] = 20;
  fwrite(rec, 1, 3074, f);
  fclose(f);
  s = spec_of(DS_DATA_CIFAR100, P("e_coarse.bin"), NULL);
  snprintf(m, sizeof m, "%s: record 2 (byte 3074): coarse label 20 out of range, expected 0..19", P("e_coarse.bin"));
  expect_err(&s, "cifar100 coarse 20", m, NULL);
  /* empty file, directory without batches, directory for svhn */
  write_file(P("e_empty.bin"), "", 0);
  s = spec_of(DS_DATA_CIFAR10, P("e_empty.bin"), NULL);
  expect_err(&s, "cifar10 empty", "no samples", NULL);
  mkdir(P("e_nobatch"), 0755);
  s = spec_of(DS_DATA_CIFAR10, P("e_nobatch"), NULL);
  expect_err(&s, "cifar10 empty directory", "a directory without data_batch_*.bin", NULL);
  s = spec_of(DS_DATA_CIFAR100, P("c10"), NULL);
  expect_err(&s, "cifar100 directory without train.bin", "a directory without train.bin", NULL);
  s = spec_of(DS_DATA_SVHN, P("c10"), NULL);
  expect_err(&s, "svhn directory", "is a directory; data.kind svhn reads one file", NULL);
  s = spec_of(DS_DATA_IDX, P("c10"), NULL);
  snprintf(s.labels_path, sizeof s.labels_path, "%s", P("c10_one.bin"));
  expect_err(&s, "idx directory", "is a directory; data.kind idx reads one file", NULL);

  /* SVHN .mat */
  svhn_opts o = svhn_default(5);
  o.z = 1;
  size_t n = write_svhn(P("m_cut.mat"), &o);
  if (truncate(P("m_cut.mat"), (off_t)(n - 500)) != 0) perror("truncate");
  s = spec_of(DS_DATA_SVHN, P("m_cut.mat"), NULL);
  expect_err(&s, "mat cut inside the compressed X", "truncated: the element at byte 192 (miCOMPRESSED) declares",
             "after its tag");
  o.z = 0;
  n = write_svhn(P("m_cut_plain.mat"), &o);
  if (truncate(P("m_cut_plain.mat"), (off_t)(n - 3000)) != 0) perror("truncate");
  s = spec_of(DS_DATA_SVHN, P("m_cut_plain.mat"), NULL);
  expect_err(&s, "mat cut inside the plain X", "truncated: the element at byte 192 (miMATRIX) declares", NULL);
  if (truncate(P("m_cut_plain.mat"), 100) != 0) perror("truncate");
  expect_err(&s, "mat cut inside the header", "truncated: expected a 128-byte MAT-file header, found 100 bytes",
             NULL);
  o = svhn_default(5);
  o.header = "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: x HDF5 schema 1.00 .";
  write_svhn(P("m_73.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_73.mat"), NULL);
  expect_err(&s, "v7.3 header", "a MATLAB 7.3 MAT-file (HDF5 inside)", NULL);
  unsigned char *buf = NULL;
  o = svhn_default(5);
  n = write_svhn(P("m_endian.mat"), &o);
  f = fopen(P("m_endian.mat"), "r+b");
  fseek(f, 126, SEEK_SET);
  fwrite("XY", 1, 2, f);
  fclose(f);
  s = spec_of(DS_DATA_SVHN, P("m_endian.mat"), NULL);
  expect_err(&s, "bad endian indicator", "bad header: not a MAT level 5 file (endian indicator at bytes 126-127 "
             "is 0x5859, expected 'IM' or 'MI')", NULL);
  /* zlib: corrupt stream, and a stream cut short inside a consistent element */
  o.z = 1;
  n = write_svhn(P("m_zbad.mat"), &o);
  f = fopen(P("m_zbad.mat"), "r+b");
  fseek(f, 192 + 8 + 2, SEEK_SET); /* the X element's stream, past the zlib header */
  unsigned char junk[64];
  memset(junk, 0xff, sizeof junk);
  fwrite(junk, 1, sizeof junk, f);
  fclose(f);
  s = spec_of(DS_DATA_SVHN, P("m_zbad.mat"), NULL);
  expect_err(&s, "corrupt zlib data", "miCOMPRESSED element at byte 192: corrupt zlib data", NULL);
  {
    /* a compressed element whose stream is cut short (its count says so, nothing follows) */
    obuf ob = {0};
    mat_header(&ob, "MATLAB 5.0 MAT-file, Platform: test");
    unsigned char X[3072];
    for (int k = 0; k < 3072; k++) X[k] = (unsigned char)(k * 7919 % 251);
    mvar vx = {"X", 9, 4, {32, 32, 3, 1}, 2, 1, 3072, X, 0};
    obuf one = {0};
    mat_var(&one, &vx, 1); /* tag (8) + stream */
    uint32_t zc;
    memcpy(&zc, one.b + 4, 4);
    uint32_t cut = zc / 2;
    put32(&ob, 15);
    put32(&ob, cut);
    put(&ob, one.b + 8, cut);
    write_file(P("m_zcut.mat"), ob.b, ob.n);
    free(ob.b);
    free(one.b);
    s = spec_of(DS_DATA_SVHN, P("m_zcut.mat"), NULL);
    expect_err(&s, "truncated zlib stream", "miCOMPRESSED element at byte 128: truncated zlib stream", NULL);
  }
  /* wrong class, complex, wrong dimensions, count mismatch, missing y, labels */
  o = svhn_default(5);
  o.z = 1;
  o.xflags = 2; /* struct */
  write_svhn(P("m_class.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_class.mat"), NULL);
  expect_err(&s, "X a struct", "variable 'X' (byte 192) is a struct (array class 2), expected a numeric array",
             NULL);
  o = svhn_default(5);
  o.xflags = 0x0809; /* complex uint8 */
  write_svhn(P("m_complex.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_complex.mat"), NULL);
  expect_err(&s, "X complex", "variable 'X' (byte 192) is complex, expected real numbers", NULL);
  o = svhn_default(5);
  o.z = 1;
  o.xdims[0] = 32, o.xdims[1] = 96, o.xdims[2] = 1, o.xdims[3] = 5;
  write_svhn(P("m_dims.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_dims.mat"), NULL);
  expect_err(&s, "X 32 x 96 x 1 x 5", "variable 'X' has dimensions 32 x 96 x 1 x 5, expected 32 x 32 x 3 x N",
             NULL);
  o = svhn_default(5);
  o.z = 1;
  o.ydims[0] = 4, o.ydims[1] = 1;
  write_svhn(P("m_ydims.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_ydims.mat"), NULL);
  expect_err(&s, "y 4 x 1 for 5 images", "the data of variable 'y'", "5 values, but its dimensions give 4 values");
  o = svhn_default(5);
  o.x_drop = 3072;
  write_svhn(P("m_count.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_count.mat"), NULL);
  expect_err(&s, "X one image short", "12288 bytes of miUINT8 = 12288 values, but its dimensions give 15360 values",
             NULL);
  o = svhn_default(5);
  o.z = 1;
  o.no_y = 1;
  write_svhn(P("m_noy.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_noy.mat"), NULL);
  expect_err(&s, "no y", "no variable 'y'", NULL);
  o = svhn_default(6);
  o.z = 1;
  o.bad_label_at = 4;
  o.bad_label = 0;
  write_svhn(P("m_y0.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_y0.mat"), NULL);
  snprintf(m, sizeof m, "%s: y(5) is 0, expected a label 1..10 (10 = digit 0)", P("m_y0.mat"));
  expect_err(&s, "label 0", m, NULL);
  o.bad_label = 11;
  write_svhn(P("m_y11.mat"), &o);
  s = spec_of(DS_DATA_SVHN, P("m_y11.mat"), NULL);
  expect_err(&s, "label 11", "y(5) is 11, expected a label 1..10", NULL);
  free(buf);
}

static void test_scipy(const char *sdir) {
  char p[1024];
  snprintf(p, sizeof p, "%s/scipy_plain.mat", sdir);
  check_svhn(p, 17, "scipy.io.savemat uncompressed");
  snprintf(p, sizeof p, "%s/scipy_z.mat", sdir);
  check_svhn(p, 17, "scipy.io.savemat do_compression=True");
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "write")) {
    snprintf(dir, sizeof dir, "%s", argv[2]);
    mkdir(dir, 0755); /* may exist */
    write_fixtures();
    return 0;
  }
  snprintf(dir, sizeof dir, "/tmp/ds_images_XXXXXX");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  write_fixtures();
  test_cifar10();
  test_cifar100();
  test_svhn();
  test_standardize_channels();
  test_errors();
  if (argc == 3 && !strcmp(argv[1], "scipy")) test_scipy(argv[2]);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return ds_check_report("test_data_images");
}
