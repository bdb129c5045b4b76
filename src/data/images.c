/* images.c -- issue 26: image data sets read from their distribution files.
 *   CIFAR-10 binary: records of 1 label byte + 3072 pixel bytes (R, G, B
 *     planes, each 32 x 32 row-major: already CHW), several batch files.
 *   CIFAR-100 binary: records of coarse label, fine label, 3072 pixel bytes.
 *   SVHN "format 2" .mat: MAT level 5, variables X uint8 [32, 32, 3, N]
 *     (column-major: X(r, c, ch, i) at r + 32c + 1024ch + 3072i) and y [N, 1]
 *     with labels 1..10, 10 meaning digit 0; elements may be miCOMPRESSED.
 * Every sample becomes one column of 3072 values in CHW order (raw 0..255).
 * Problems are DS_EINPUT "PATH: ..." naming the record or element. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data_internal.h"

enum { IMG_C = 3, IMG_H = 32, IMG_W = 32, IMG_D = 3072 };

const char *ds_data_kind_name(ds_data_kind k) {
  switch (k) {
    case DS_DATA_IDX: return "idx";
    case DS_DATA_LIBSVM: return "libsvm";
    case DS_DATA_CSV: return "csv";
    case DS_DATA_HDF5: return "hdf5";
    case DS_DATA_CIFAR10: return "cifar10";
    case DS_DATA_CIFAR100: return "cifar100";
    case DS_DATA_SVHN: return "svhn";
    default: return "(synthetic)";
  }
}

int ds_data_is_file_kind(ds_data_kind k) {
  return k == DS_DATA_IDX || k == DS_DATA_LIBSVM || k == DS_DATA_CSV || k == DS_DATA_HDF5 ||
         k == DS_DATA_CIFAR10 || k == DS_DATA_CIFAR100 || k == DS_DATA_SVHN;
}

/* The image shape an IDX image file's header gives (its first 16 bytes;
 * files.c reads the whole file): 1 for 3 dimensions (n, rows, cols: *H =
 * rows, *W = cols), 0 otherwise or when the header cannot be read (the
 * loaders report that with the file's name). */
static int idx_image_shape(const char *path, int *H, int *W) {
  gzFile f;
  if (ds_gz_open(path, &f) != DS_OK) return ds_clear_error(), 0;
  unsigned char b[16];
  int got = gzread(f, b, sizeof b) == (int)sizeof b;
  gzclose(f);
  if (!got || b[0] || b[1] || b[3] != 3) return 0;
  size_t h = (size_t)b[8] << 24 | (size_t)b[9] << 16 | (size_t)b[10] << 8 | b[11];
  size_t w = (size_t)b[12] << 24 | (size_t)b[13] << 16 | (size_t)b[14] << 8 | b[15];
  if (h < 1 || w < 1 || h * w > (size_t)INT32_MAX) return 0;
  *H = (int)h, *W = (int)w;
  return 1;
}

int ds_data_image_side(int d_in) {
  int s = (int)lround(sqrt((double)d_in));
  return s >= 3 && (long long)s * s == d_in ? s : 0;
}

int ds_data_image_filters(int d_in, double *u1, double *u2) {
  int s = ds_data_image_side(d_in);
  if (!s) return ds_fail(DS_EINPUT, "data image_rank2: d_in = %d is not s^2 with s >= 3", d_in);
  memset(u1, 0, (size_t)d_in * sizeof *u1);
  memset(u2, 0, (size_t)d_in * sizeof *u2);
  double a = 1.0 / sqrt(6.0);
  for (int r = -1; r <= 1; r++)
    for (int c = -1; c <= 1; c++) {
      size_t k = (size_t)(s / 2 + r) * s + (s / 2 + c);
      u1[k] = -r * a; /* rows: +1 top, 0 middle, -1 bottom */
      u2[k] = -c * a; /* columns: the transpose */
    }
  return DS_OK;
}

int ds_data_image_shape(const ds_data_spec *s, int *C, int *H, int *W) {
  if (s->kind == DS_DATA_IDX) { /* the images file's header: n x rows x cols */
    int h = 0, w = 0, yes = s->path[0] && idx_image_shape(s->path, &h, &w);
    *C = yes ? 1 : 0, *H = h, *W = w;
    return yes;
  }
  if (s->kind == DS_DATA_IMAGE_RANK2) {
    int side = ds_data_image_side(s->d_in);
    *C = side ? 1 : 0, *H = *W = side;
    return side > 0;
  }
  int yes = s->kind == DS_DATA_CIFAR10 || s->kind == DS_DATA_CIFAR100 || s->kind == DS_DATA_SVHN;
  *C = yes ? IMG_C : 0;
  *H = yes ? IMG_H : 0;
  *W = yes ? IMG_W : 0;
  return yes;
}

static int in_classes(const ds_data_spec *s, double c) {
  if (s->nclasses == 0) return 1;
  for (int k = 0; k < s->nclasses; k++)
    if (c == (double)s->classes[k]) return 1;
  return 0;
}

/* ---------------------------------------------------------------- file lists */

/* data_batch_<digits>.bin */
static int is_cifar10_batch(const char *name) {
  const char *p = "data_batch_";
  if (strncmp(name, p, strlen(p))) return 0;
  const char *q = name + strlen(p);
  if (*q < '0' || *q > '9') return 0;
  while (*q >= '0' && *q <= '9') q++;
  return !strcmp(q, ".bin");
}

/* Shorter names first, then bytewise: data_batch_9 before data_batch_10. */
static int cmp_batch(const void *a, const void *b) {
  const char *x = a, *y = b;
  size_t lx = strlen(x), ly = strlen(y);
  if (lx != ly) return lx < ly ? -1 : 1;
  return strcmp(x, y);
}

int ds_data_files(ds_data_kind kind, const char *path, int test, char (**files)[DS_MAX_PATH], int *n) {
  *files = NULL;
  *n = 0;
  struct stat st;
  if (!path || !path[0] || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    if (!(*files = malloc(DS_MAX_PATH))) return DS_ENOMEM;
    snprintf((*files)[0], DS_MAX_PATH, "%s", path ? path : "");
    *n = 1;
    return DS_OK;
  }
  if (kind != DS_DATA_CIFAR10 && kind != DS_DATA_CIFAR100)
    return ds_fail(DS_EINPUT, "%s: is a directory; data.kind %s reads one file (only cifar10 and "
                   "cifar100 read a directory of batch files)", path, ds_data_kind_name(kind));
  const char *want = kind == DS_DATA_CIFAR100 ? (test ? "test.bin" : "train.bin")
                                              : (test ? "test_batch.bin" : NULL);
  DIR *d = opendir(path);
  if (!d) return ds_fail(DS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
  int cap = 0, rc = DS_OK;
  char(*list)[DS_MAX_PATH] = NULL;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (want ? strcmp(e->d_name, want) : !is_cifar10_batch(e->d_name)) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 8;
      char(*nl)[DS_MAX_PATH] = realloc(list, (size_t)cap * DS_MAX_PATH);
      if (!nl) {
        rc = DS_ENOMEM;
        break;
      }
      list = nl;
    }
    if (strlen(path) + strlen(e->d_name) + 2 > DS_MAX_PATH) {
      rc = ds_fail(DS_EINPUT, "%s: file name too long: %s", path, e->d_name);
      break;
    }
    snprintf(list[*n], DS_MAX_PATH, "%s", e->d_name);
    (*n)++;
  }
  closedir(d);
  if (rc == DS_OK && *n == 0)
    rc = ds_fail(DS_EINPUT, "%s: a directory without %s (the %s %s file%s of the binary version)", path,
                 want ? want : "data_batch_*.bin", kind == DS_DATA_CIFAR100 ? "CIFAR-100" : "CIFAR-10",
                 test ? "test" : "training", want ? "" : "s");
  if (rc != DS_OK) {
    free(list);
    *n = 0;
    return rc;
  }
  qsort(list, (size_t)*n, DS_MAX_PATH, cmp_batch);
  size_t L = strlen(path);
  for (int i = 0; i < *n; i++) {
    char name[DS_MAX_PATH];
    snprintf(name, sizeof name, "%s", list[i]);
    snprintf(list[i], DS_MAX_PATH, "%s%s%s", path, L && path[L - 1] == '/' ? "" : "/", name);
  }
  *files = list;
  return DS_OK;
}

/* ---------------------------------------------------------------- raw table growth */

static int raw_grow(ds_raw *r, int *cap, int want_x) {
  if (r->n < *cap) return DS_OK;
  int nc = *cap ? 2 * *cap : 1024;
  double *C = realloc(r->C, (size_t)nc * sizeof *C), *T;
  if (!C) return DS_ENOMEM;
  r->C = C;
  if (!(T = realloc(r->T, (size_t)nc * sizeof *T))) return DS_ENOMEM;
  r->T = T;
  if (want_x == 1) {
    double *X = realloc(r->X, (size_t)nc * IMG_D * sizeof *X);
    if (!X) return DS_ENOMEM;
    r->X = X;
  }
  *cap = nc;
  return DS_OK;
}

/* ---------------------------------------------------------------- CIFAR */

static int cifar_file(const ds_data_spec *s, const char *path, int want_x, ds_raw *r, int *cap) {
  int c100 = s->kind == DS_DATA_CIFAR100;
  size_t rec = c100 ? 3074 : 3073, nl = c100 ? 2 : 1;
  const char *name = c100 ? "CIFAR-100" : "CIFAR-10";
  /* a plain (not gzip) file: its size first, so a file of the other CIFAR's
   * records is named for what it is rather than by a label out of range */
  FILE *pf = fopen(path, "rb");
  struct stat st;
  if (pf) {
    unsigned char mg[2] = {0, 0};
    size_t got = fread(mg, 1, 2, pf);
    int gz = got == 2 && mg[0] == 0x1f && mg[1] == 0x8b;
    if (!gz && fstat(fileno(pf), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size % rec) {
      size_t sz = (size_t)st.st_size;
      fclose(pf);
      return ds_fail(DS_EINPUT, "%s: %zu bytes is not a multiple of the %zu-byte %s record (%s + 3072 "
                     "pixel bytes): %zu whole records and %zu bytes over; the file is cut short or not "
                     "%s (CIFAR-%s records are %d bytes)", path, sz, rec, name,
                     c100 ? "coarse and fine label bytes" : "1 label byte", sz / rec, sz % rec, name,
                     c100 ? "10" : "100", c100 ? 3073 : 3074);
    }
    fclose(pf);
  }
  gzFile f;
  DS_TRY(ds_gz_open(path, &f));
  unsigned char buf[3074];
  int rc = DS_OK;
  size_t i = 0;
  for (;; i++) {
    size_t got = 0;
    if ((rc = ds_gz_read(f, path, buf, rec, &got)) != DS_OK) break;
    if (got == 0) break;
    if (got < rec) {
      rc = ds_fail(DS_EINPUT, "%s: truncated: record %zu has %zu of its %zu bytes (the file holds %zu "
                   "whole %s records and %zu bytes: its size is not a multiple of %zu = %s%s)", path,
                   i + 1, got, rec, i, name, got, rec, c100 ? "coarse and fine label bytes" : "1 label byte",
                   " + 3072 pixel bytes");
      break;
    }
    int label;
    if (c100) {
      if (buf[0] >= 20 || buf[1] >= 100) {
        rc = ds_fail(DS_EINPUT, "%s: record %zu (byte %zu): %s label %d out of range, expected 0..%d "
                     "(CIFAR-100 records start with the coarse label 0..19, then the fine label 0..99)",
                     path, i + 1, i * rec + (buf[0] >= 20 ? 0 : 1), buf[0] >= 20 ? "coarse" : "fine",
                     buf[0] >= 20 ? buf[0] : buf[1], buf[0] >= 20 ? 19 : 99);
        break;
      }
      label = s->cifar100_coarse ? buf[0] : buf[1];
    } else {
      if (buf[0] >= 10) {
        rc = ds_fail(DS_EINPUT, "%s: record %zu (byte %zu): label %d out of range, expected 0..9 "
                     "(CIFAR-10)", path, i + 1, i * rec, buf[0]);
        break;
      }
      label = buf[0];
    }
    if (i >= (size_t)INT32_MAX || r->n == INT32_MAX) {
      rc = ds_fail(DS_EINPUT, "%s: too many records", path);
      break;
    }
    if (!in_classes(s, label)) continue;
    if ((rc = raw_grow(r, cap, want_x)) != DS_OK) break;
    r->C[r->n] = r->T[r->n] = label;
    if (want_x == 1)
      for (int q = 0; q < IMG_D; q++) r->X[(size_t)r->n * IMG_D + q] = buf[nl + q];
    r->n++;
  }
  gzclose(f);
  return rc;
}

int ds_load_cifar(const ds_data_spec *s, const char *path, int which, int want_x, ds_raw *r) {
  char(*files)[DS_MAX_PATH] = NULL;
  int nf = 0, cap = 0;
  if (!path || !path[0]) return ds_fail(DS_EINPUT, "data: a file path is required");
  DS_TRY(ds_data_files(s->kind, path, which, &files, &nf));
  r->d = IMG_D;
  r->dy = 1;
  r->t_is_class = 1;
  int rc = DS_OK;
  for (int k = 0; k < nf && rc == DS_OK; k++) rc = cifar_file(s, files[k], want_x, r, &cap);
  if (rc == DS_OK && r->n == 0)
    rc = ds_fail(DS_EINPUT, "%s: no samples%s", path, s->nclasses ? " of the listed classes" : "");
  free(files);
  if (rc == DS_ENOMEM) rc = ds_fail(DS_ENOMEM, "%s: out of memory", path);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}

/* ---------------------------------------------------------------- MAT level 5 */

enum {
  MI_INT8 = 1, MI_UINT8 = 2, MI_INT16 = 3, MI_UINT16 = 4, MI_INT32 = 5, MI_UINT32 = 6,
  MI_SINGLE = 7, MI_DOUBLE = 9, MI_INT64 = 12, MI_UINT64 = 13, MI_MATRIX = 14, MI_COMPRESSED = 15,
  MI_UTF8 = 16, MI_UTF16 = 17, MI_UTF32 = 18
};

typedef struct {
  const char *path;
  int swap; /* the file's byte order is not ours */
} mat_ctx;

static uint32_t mat_u32(const mat_ctx *m, const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  if (m->swap) v = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
  return v;
}

static size_t mi_size(uint32_t t) {
  switch (t) {
    case MI_INT8: case MI_UINT8: case MI_UTF8: return 1;
    case MI_INT16: case MI_UINT16: case MI_UTF16: return 2;
    case MI_INT32: case MI_UINT32: case MI_SINGLE: case MI_UTF32: return 4;
    case MI_DOUBLE: case MI_INT64: case MI_UINT64: return 8;
    default: return 0;
  }
}

static const char *mi_name(uint32_t t) {
  static const char *const n[] = {"type 0",   "miINT8",   "miUINT8",  "miINT16",  "miUINT16",
                                  "miINT32",  "miUINT32", "miSINGLE", "type 8",   "miDOUBLE",
                                  "type 10",  "type 11",  "miINT64",  "miUINT64", "miMATRIX",
                                  "miCOMPRESSED", "miUTF8", "miUTF16", "miUTF32"};
  return t < sizeof n / sizeof *n ? n[t] : "an unknown type";
}

/* Value k of numeric storage type t at p (byte order of the file). */
static double mi_value(const mat_ctx *m, uint32_t t, const unsigned char *p, size_t k) {
  size_t sz = mi_size(t);
  unsigned char b[8];
  memcpy(b, p + k * sz, sz);
  if (m->swap)
    for (size_t i = 0; i < sz / 2; i++) {
      unsigned char x = b[i];
      b[i] = b[sz - 1 - i];
      b[sz - 1 - i] = x;
    }
  switch (t) {
    case MI_INT8: return (signed char)b[0];
    case MI_UINT8: return b[0];
    case MI_INT16: { int16_t v; memcpy(&v, b, 2); return v; }
    case MI_UINT16: { uint16_t v; memcpy(&v, b, 2); return v; }
    case MI_INT32: { int32_t v; memcpy(&v, b, 4); return v; }
    case MI_UINT32: { uint32_t v; memcpy(&v, b, 4); return v; }
    case MI_SINGLE: { float v; memcpy(&v, b, 4); return v; }
    case MI_DOUBLE: { double v; memcpy(&v, b, 8); return v; }
    case MI_INT64: { int64_t v; memcpy(&v, b, 8); return (double)v; }
    default: { uint64_t v; memcpy(&v, b, 8); return (double)v; }
  }
}

/* One element of buf[0..len) at *off: type, data, count; *off moves past it
 * (data padded to 8 bytes, except after a miCOMPRESSED element). where names
 * the element in messages ("element at byte 128", "...'s dimensions"). */
typedef struct {
  uint32_t type, count;
  const unsigned char *data;
} mat_el;

static int mat_element(const mat_ctx *m, const unsigned char *buf, size_t len, size_t *off,
                       const char *where, mat_el *e) {
  size_t o = *off;
  if (len - o < 8)
    return ds_fail(DS_EINPUT, "%s: truncated: %s needs an 8-byte tag, %zu bytes are left", m->path,
                   where, len - o);
  uint32_t w0 = mat_u32(m, buf + o);
  if (w0 >> 16) { /* small element: count in the upper half, data in the tag's second word */
    e->type = w0 & 0xffff;
    e->count = w0 >> 16;
    e->data = buf + o + 4;
    if (e->count > 4)
      return ds_fail(DS_EINPUT, "%s: %s: a small data element of %u bytes, expected at most 4 (bad "
                     "tag 0x%08x)", m->path, where, e->count, w0);
    *off = o + 8;
    return DS_OK;
  }
  e->type = w0;
  e->count = mat_u32(m, buf + o + 4);
  e->data = buf + o + 8;
  if (e->count > len - o - 8)
    return ds_fail(DS_EINPUT, "%s: truncated: %s (%s) declares %u bytes of data, the file has %zu "
                   "after its tag", m->path, where, mi_name(e->type), e->count, len - o - 8);
  size_t step = e->type == MI_COMPRESSED ? e->count : (e->count + 7u) & ~(size_t)7;
  *off = o + 8 + (step < len - o - 8 ? step : len - o - 8);
  return DS_OK;
}

/* A variable found in the file. */
typedef struct {
  int found, ndims;
  long long dims[8];
  uint32_t type; /* storage type of the real part */
  size_t nval;
  const unsigned char *data;
  unsigned char *owned; /* the inflated element the data live in */
} mat_var;

static const char *mx_class_name(int c) {
  static const char *const n[] = {"class 0", "a cell array", "a struct", "an object", "a char array",
                                  "a sparse matrix", "double", "single", "int8", "uint8", "int16",
                                  "uint16", "int32", "uint32", "int64", "uint64"};
  return c >= 0 && c < 16 ? n[c] : "an unknown class";
}

/* Parse the miMATRIX body b[0..len) at file byte `at`; keeps X and y. */
static int mat_matrix(const mat_ctx *m, const unsigned char *b, size_t len, size_t at, mat_var *X,
                      mat_var *Y, unsigned char **owned) {
  char where[160];
  size_t off = 0;
  mat_el fl, dm, nm, re;
  snprintf(where, sizeof where, "the array flags of the miMATRIX element at byte %zu", at);
  DS_TRY(mat_element(m, b, len, &off, where, &fl));
  if (fl.type != MI_UINT32 || fl.count != 8)
    return ds_fail(DS_EINPUT, "%s: %s: %s of %u bytes, expected miUINT32 of 8 bytes (bad header or "
                   "not a MAT level 5 array)", m->path, where, mi_name(fl.type), fl.count);
  uint32_t flags = mat_u32(m, fl.data);
  int cls = flags & 0xff;
  snprintf(where, sizeof where, "the dimensions of the miMATRIX element at byte %zu", at);
  DS_TRY(mat_element(m, b, len, &off, where, &dm));
  if (dm.type != MI_INT32 || dm.count % 4 || dm.count < 8 || dm.count > 32)
    return ds_fail(DS_EINPUT, "%s: %s: %s of %u bytes, expected 2 to 8 miINT32 sizes", m->path, where,
                   mi_name(dm.type), dm.count);
  snprintf(where, sizeof where, "the name of the miMATRIX element at byte %zu", at);
  DS_TRY(mat_element(m, b, len, &off, where, &nm));
  char name[64];
  size_t L = nm.count < sizeof name - 1 ? nm.count : sizeof name - 1;
  memcpy(name, nm.data, L);
  name[L] = 0;
  mat_var *v = !strcmp(name, "X") ? X : !strcmp(name, "y") ? Y : NULL;
  if (!v) return DS_OK; /* another variable: not ours */
  if (v->found)
    return ds_fail(DS_EINPUT, "%s: variable '%s' appears twice (again at byte %zu)", m->path, name, at);
  if (cls < 6 || cls > 15)
    return ds_fail(DS_EINPUT, "%s: variable '%s' (byte %zu) is %s (array class %d), expected a numeric "
                   "array (uint8 or another number class)", m->path, name, at, mx_class_name(cls), cls);
  if (flags & 0x0800)
    return ds_fail(DS_EINPUT, "%s: variable '%s' (byte %zu) is complex, expected real numbers", m->path,
                   name, at);
  v->ndims = (int)(dm.count / 4);
  size_t nval = 1;
  for (int k = 0; k < v->ndims; k++) {
    int32_t d = (int32_t)mat_u32(m, dm.data + 4 * k);
    if (d < 0)
      return ds_fail(DS_EINPUT, "%s: variable '%s' (byte %zu): dimension %d is %d", m->path, name, at,
                     k + 1, d);
    v->dims[k] = d;
    nval *= (size_t)d;
  }
  snprintf(where, sizeof where, "the data of variable '%s' (miMATRIX element at byte %zu)", name, at);
  DS_TRY(mat_element(m, b, len, &off, where, &re));
  size_t sz = mi_size(re.type);
  if (!sz || re.type >= MI_UTF8)
    return ds_fail(DS_EINPUT, "%s: %s: stored as %s, expected numbers", m->path, where, mi_name(re.type));
  if (re.count != nval * sz)
    return ds_fail(DS_EINPUT, "%s: %s: %u bytes of %s = %zu values, but its dimensions give %zu values",
                   m->path, where, re.count, mi_name(re.type), (size_t)re.count / sz, nval);
  v->found = 1;
  v->type = re.type;
  v->nval = nval;
  v->data = re.data;
  v->owned = *owned; /* the element keeps the inflated buffer alive */
  *owned = NULL;
  return DS_OK;
}

/* Inflate a miCOMPRESSED element's zlib stream into a new buffer. */
static int mat_inflate(const mat_ctx *m, const unsigned char *src, size_t n, size_t at,
                       unsigned char **out, size_t *outlen) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit(&z) != Z_OK) return ds_fail(DS_ENOMEM, "%s: zlib inflateInit failed", m->path);
  size_t cap = (n < ((size_t)1 << 28) ? 2 * n : n) + 4096, used = 0; /* doubled as needed */
  unsigned char *buf = malloc(cap);
  int rc = DS_OK, zr = Z_OK;
  z.next_in = (unsigned char *)src;
  size_t left = n;
  while (buf) {
    if (used == cap) {
      unsigned char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    uInt chunk_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
    z.next_in = (unsigned char *)src + (n - left);
    z.avail_in = chunk_in;
    size_t room = cap - used;
    z.next_out = buf + used;
    z.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
    uInt out0 = z.avail_out;
    zr = inflate(&z, Z_NO_FLUSH);
    left -= chunk_in - z.avail_in;
    used += out0 - z.avail_out;
    if (zr == Z_STREAM_END) break;
    if (zr == Z_BUF_ERROR && left == 0) {
      rc = ds_fail(DS_EINPUT, "%s: miCOMPRESSED element at byte %zu: truncated zlib stream (its %zu "
                   "bytes end before the stream does; %zu bytes inflated)", m->path, at, n, used);
      break;
    }
    if (zr != Z_OK && zr != Z_BUF_ERROR) {
      rc = ds_fail(DS_EINPUT, "%s: miCOMPRESSED element at byte %zu: corrupt zlib data: %s (zlib error "
                   "%d)", m->path, at, z.msg ? z.msg : "no message", zr);
      break;
    }
    if (zr == Z_OK && left == 0 && z.avail_out > 0) {
      rc = ds_fail(DS_EINPUT, "%s: miCOMPRESSED element at byte %zu: truncated zlib stream (its %zu "
                   "bytes end before the stream does; %zu bytes inflated)", m->path, at, n, used);
      break;
    }
  }
  inflateEnd(&z);
  if (!buf && rc == DS_OK) rc = ds_fail(DS_ENOMEM, "%s: out of memory inflating the element at byte %zu",
                                        m->path, at);
  if (rc != DS_OK) {
    free(buf);
    return rc;
  }
  unsigned char *fit = realloc(buf, used ? used : 1); /* give the slack back */
  *out = fit ? fit : buf;
  *outlen = used;
  return DS_OK;
}

static int mat_read(const char *path, const unsigned char *buf, size_t len, mat_ctx *m, mat_var *X,
                    mat_var *Y) {
  m->path = path;
  m->swap = 0;
  if (len >= 19 && !memcmp(buf, "MATLAB 7.3 MAT-file", 19))
    return ds_fail(DS_EINPUT, "%s: a MATLAB 7.3 MAT-file (HDF5 inside), expected MAT level 5 (v5-v7): "
                   "save it with -v7 (or scipy.io.savemat), or write X and y to an hdf5 data file",
                   path);
  if (len < 128)
    return ds_fail(DS_EINPUT, "%s: truncated: expected a 128-byte MAT-file header, found %zu bytes", path,
                   len);
  if (buf[126] == 'I' && buf[127] == 'M') m->swap = 0;
  else if (buf[126] == 'M' && buf[127] == 'I') m->swap = 1;
  else
    return ds_fail(DS_EINPUT, "%s: bad header: not a MAT level 5 file (endian indicator at bytes 126-127 "
                   "is 0x%02x%02x, expected 'IM' or 'MI')", path, buf[126], buf[127]);
  uint16_t ver;
  memcpy(&ver, buf + 124, 2);
  if (m->swap) ver = (uint16_t)(ver >> 8 | ver << 8);
  if (ver != 0x0100)
    return ds_fail(DS_EINPUT, "%s: bad header: MAT-file version 0x%04x, expected 0x0100 (level 5)", path,
                   ver);
  size_t off = 128;
  int rc = DS_OK;
  while (rc == DS_OK && off < len) {
    size_t at = off;
    char where[64];
    snprintf(where, sizeof where, "the element at byte %zu", at);
    mat_el e;
    if ((rc = mat_element(m, buf, len, &off, where, &e)) != DS_OK) break;
    unsigned char *inf = NULL;
    size_t ilen = 0;
    const unsigned char *body = e.data;
    size_t blen = e.count;
    if (e.type == MI_COMPRESSED) {
      if ((rc = mat_inflate(m, e.data, e.count, at, &inf, &ilen)) != DS_OK) break;
      size_t o2 = 0;
      mat_el in;
      snprintf(where, sizeof where, "the inflated element at byte %zu", at);
      if ((rc = mat_element(m, inf, ilen, &o2, where, &in)) != DS_OK) {
        free(inf);
        break;
      }
      if (in.type != MI_MATRIX) { /* not an array: nothing we read */
        free(inf);
        continue;
      }
      body = in.data;
      blen = in.count;
    } else if (e.type != MI_MATRIX) {
      continue;
    }
    rc = mat_matrix(m, body, blen, at, X, Y, &inf);
    free(inf); /* NULL when a variable took it */
  }
  return rc;
}

int ds_load_svhn(const ds_data_spec *s, const char *path, int want_x, ds_raw *r) {
  char *file = NULL;
  size_t len = 0;
  DS_TRY(ds_gz_slurp(path, &file, &len));
  mat_ctx m;
  mat_var X, Y;
  memset(&X, 0, sizeof X);
  memset(&Y, 0, sizeof Y);
  const unsigned char *buf = (const unsigned char *)file;
  int rc = mat_read(path, buf, len, &m, &X, &Y);
  if (rc == DS_OK && !X.found)
    rc = ds_fail(DS_EINPUT, "%s: no variable 'X' (SVHN .mat files hold X, uint8 [32, 32, 3, N], and y, "
                 "[N, 1])", path);
  if (rc == DS_OK && !Y.found)
    rc = ds_fail(DS_EINPUT, "%s: no variable 'y' (SVHN .mat files hold X, uint8 [32, 32, 3, N], and y, "
                 "[N, 1])", path);
  long long N = 0;
  if (rc == DS_OK) {
    N = X.ndims == 4 ? X.dims[3] : X.ndims == 3 ? 1 : 0;
    if (!((X.ndims == 4 || X.ndims == 3) && X.dims[0] == IMG_H && X.dims[1] == IMG_W &&
          X.dims[2] == IMG_C)) {
      char dt[128];
      size_t u = 0;
      for (int k = 0; k < X.ndims; k++)
        u += (size_t)snprintf(dt + u, sizeof dt - u, "%s%lld", k ? " x " : "", X.dims[k]);
      rc = ds_fail(DS_EINPUT, "%s: variable 'X' has dimensions %s, expected 32 x 32 x 3 x N (rows, "
                   "columns, RGB, samples)", path, dt);
    }
  }
  if (rc == DS_OK && !(Y.ndims == 2 && (Y.dims[1] == 1 || Y.dims[0] == 1) && (long long)Y.nval == N))
    rc = ds_fail(DS_EINPUT, "%s: variable 'y' has dimensions %lld x %lld%s, expected %lld x 1 (one "
                 "label per image of X)", path, Y.dims[0], Y.ndims >= 2 ? Y.dims[1] : 0,
                 Y.ndims > 2 ? " x ..." : "", N);
  if (rc == DS_OK && N == 0) rc = ds_fail(DS_EINPUT, "%s: no samples", path);
  if (rc == DS_OK && N > INT32_MAX) rc = ds_fail(DS_EINPUT, "%s: too many samples", path);
  for (long long i = 0; rc == DS_OK && i < N; i++) {
    double v = mi_value(&m, Y.type, Y.data, (size_t)i);
    if (!(v >= 1 && v <= 10 && v == (double)(int)v))
      rc = ds_fail(DS_EINPUT, "%s: y(%lld) is %g, expected a label 1..10 (10 = digit 0)", path, i + 1, v);
  }
  if (rc == DS_OK) {
    int keep = 0;
    for (long long i = 0; i < N; i++) {
      int c = (int)mi_value(&m, Y.type, Y.data, (size_t)i) % 10;
      keep += in_classes(s, c);
    }
    r->n = keep;
    r->d = IMG_D;
    r->dy = 1;
    r->t_is_class = 1;
    r->C = ds_calloc((size_t)keep + 1, sizeof *r->C);
    r->T = ds_calloc((size_t)keep + 1, sizeof *r->T);
    if (want_x == 1) r->X = ds_calloc((size_t)keep * IMG_D + 1, sizeof *r->X);
    double *scratch = want_x == 2 && X.type != MI_UINT8 ? ds_calloc(IMG_D, sizeof *scratch) : NULL;
    if (!r->C || !r->T || (want_x == 1 && !r->X) || (want_x == 2 && X.type != MI_UINT8 && !scratch))
      rc = ds_fail(DS_ENOMEM, "%s: out of memory", path);
    size_t j = 0;
    for (long long i = 0; rc == DS_OK && i < N; i++) {
      int c = (int)mi_value(&m, Y.type, Y.data, (size_t)i) % 10;
      int keep_it = in_classes(s, c);
      if (keep_it) r->C[j] = r->T[j] = c;
      double *col = want_x == 1 && keep_it ? r->X + j * IMG_D : scratch;
      if (col) { /* want_x 2: non-uint8 pixels are checked, not kept */
        size_t base = (size_t)i * IMG_D;
        /* column-major planes -> CHW row-major: out[ch 1024 + row 32 + col] = in[row + 32 col + 1024 ch] */
        for (int ch = 0; ch < IMG_C; ch++)
          for (int y = 0; y < IMG_H; y++)
            for (int x = 0; x < IMG_W; x++)
              col[ch * IMG_H * IMG_W + y * IMG_W + x] =
                  X.type == MI_UINT8 ? X.data[base + y + IMG_H * x + IMG_H * IMG_W * ch]
                                     : mi_value(&m, X.type, X.data, base + y + IMG_H * x + IMG_H * IMG_W * ch);
        for (int q = 0; q < IMG_D; q++)
          if (!isfinite(col[q])) {
            rc = ds_fail(DS_EINPUT, "%s: image %lld, value %d is %g, expected a finite number", path,
                         i + 1, q + 1, col[q]);
            break;
          }
      }
      j += keep_it;
    }
    free(scratch);
  }
  free(X.owned);
  free(Y.owned);
  free(file);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}
