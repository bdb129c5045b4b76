/* files.c -- readers for the file data kinds: IDX (MNIST format, gzip
 * transparently), libsvm text, CSV, HDF5. Each fills a ds_raw table; the
 * preprocessing lives in build.c. Every problem with a file is DS_EINPUT with
 * "PATH: what is wrong" (text formats: "PATH:LINE: what is wrong"). */
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data_internal.h"

/* ---------------------------------------------------------------- IDX */

typedef struct {
  int type, ndims;
  size_t n, d, esize; /* items (dims[0]), values per item, bytes per value */
} idx_header;

static int idx_read_header(gzFile f, const char *path, idx_header *h) {
  unsigned char m[4];
  DS_TRY(ds_gz_read_exact(f, path, m, 4, "the IDX magic number"));
  uint32_t magic = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 | (uint32_t)m[2] << 8 | m[3];
  h->type = m[2];
  h->ndims = m[3];
  switch (h->type) {
    case 0x08: case 0x09: h->esize = 1; break;
    case 0x0B: h->esize = 2; break;
    case 0x0C: case 0x0D: h->esize = 4; break;
    case 0x0E: h->esize = 8; break;
    default: h->esize = 0;
  }
  if (m[0] != 0 || m[1] != 0 || h->esize == 0 || h->ndims < 1)
    return ds_fail(DS_EINPUT, "%s: not an IDX file (bad magic number 0x%08x)", path, magic);
  h->n = 0;
  h->d = 1;
  for (int k = 0; k < h->ndims; k++) {
    unsigned char b[4];
    DS_TRY(ds_gz_read_exact(f, path, b, 4, "the IDX dimensions"));
    size_t v = (size_t)b[0] << 24 | (size_t)b[1] << 16 | (size_t)b[2] << 8 | b[3];
    if (k == 0) h->n = v;
    else h->d *= v;
  }
  if (h->n > (size_t)INT32_MAX || h->d > (size_t)INT32_MAX)
    return ds_fail(DS_EINPUT, "%s: IDX dimensions too large", path);
  return DS_OK;
}

static double idx_value(const unsigned char *p, int type) {
  switch (type) {
    case 0x08: return p[0];
    case 0x09: return (signed char)p[0];
    case 0x0B: return (int16_t)(uint16_t)(p[0] << 8 | p[1]);
    case 0x0C: return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
    case 0x0D: {
      uint32_t u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
      float v;
      memcpy(&v, &u, 4);
      return v;
    }
    default: {
      uint64_t u = 0;
      for (int k = 0; k < 8; k++) u = u << 8 | p[k];
      double v;
      memcpy(&v, &u, 8);
      return v;
    }
  }
}

/* The header promises n items of d values: nothing may follow them. */
static int idx_no_trailing(gzFile f, const char *path, const idx_header *h, const char *what) {
  unsigned char extra;
  size_t got = 0;
  DS_TRY(ds_gz_read(f, path, &extra, 1, &got));
  if (got)
    return ds_fail(DS_EINPUT, "%s: the header says %zu %s of %zu bytes, but the file has more data after "
                   "them (header and size disagree)", path, h->n, what, h->d * h->esize);
  return DS_OK;
}

static int in_classes(const ds_data_spec *s, double c) {
  for (int k = 0; k < s->nclasses; k++)
    if (c == (double)s->classes[k]) return 1;
  return 0;
}

static int load_idx(const ds_data_spec *s, const char *ipath, const char *lpath, int want_x,
                    ds_raw *r) {
  if (!lpath || !lpath[0])
    return ds_fail(DS_EINPUT, "%s: IDX images need a labels file (labels_path / test_labels_path)",
                   ipath);
  gzFile f;
  idx_header lh, ih;
  /* labels first: they decide which images are kept */
  DS_TRY(ds_gz_open(lpath, &f));
  int rc = idx_read_header(f, lpath, &lh);
  if (rc == DS_OK && lh.ndims != 1)
    rc = ds_fail(DS_EINPUT, "%s: a labels file must have 1 dimension (has %d)", lpath, lh.ndims);
  unsigned char *lb = NULL;
  if (rc == DS_OK) {
    lb = malloc(lh.n * lh.esize + 1);
    if (!lb) rc = ds_fail(DS_ENOMEM, "%s: out of memory", lpath);
  }
  if (rc == DS_OK) rc = ds_gz_read_exact(f, lpath, lb, lh.n * lh.esize, "the labels");
  if (rc == DS_OK) rc = idx_no_trailing(f, lpath, &lh, "labels");
  gzclose(f);
  if (rc != DS_OK) {
    free(lb);
    return rc;
  }
  if ((rc = ds_gz_open(ipath, &f)) != DS_OK) {
    free(lb);
    return rc;
  }
  rc = idx_read_header(f, ipath, &ih);
  if (rc == DS_OK && ih.n != lh.n)
    rc = ds_fail(DS_EINPUT, "%s: %zu images but %s has %zu labels", ipath, ih.n, lpath, lh.n);
  size_t keep = 0;
  for (size_t i = 0; rc == DS_OK && i < lh.n; i++)
    if (!isfinite(idx_value(lb + i * lh.esize, lh.type)))
      rc = ds_fail(DS_EINPUT, "%s: label %zu is %g, expected a finite class label", lpath, i + 1,
                   idx_value(lb + i * lh.esize, lh.type));
  if (rc == DS_OK) {
    for (size_t i = 0; i < lh.n; i++)
      keep += s->nclasses == 0 || in_classes(s, idx_value(lb + i * lh.esize, lh.type));
    r->n = (int)keep;
    r->d = (int)ih.d;
    r->dy = 1;
    r->t_is_class = 1;
    r->C = ds_calloc(keep, sizeof *r->C);
    r->T = ds_calloc(keep, sizeof *r->T);
    if (want_x == 1) r->X = ds_calloc(keep * ih.d, sizeof *r->X);
    if (!r->C || !r->T || (want_x == 1 && !r->X)) rc = DS_ENOMEM;
  }
  unsigned char *row = NULL;
  if (rc == DS_OK && want_x) {
    row = malloc(ih.d * ih.esize);
    if (!row) rc = ds_fail(DS_ENOMEM, "%s: out of memory", ipath);
  }
  size_t j = 0;
  for (size_t i = 0; rc == DS_OK && i < lh.n; i++) {
    double c = idx_value(lb + i * lh.esize, lh.type);
    int k = s->nclasses == 0 || in_classes(s, c);
    if (want_x) {
      size_t got = 0;
      if ((rc = ds_gz_read(f, ipath, row, ih.d * ih.esize, &got)) != DS_OK) break;
      if (got != ih.d * ih.esize) {
        rc = ds_fail(DS_EINPUT, "%s: truncated: image %zu of %zu is incomplete", ipath, i + 1, ih.n);
        break;
      }
      for (size_t q = 0; ih.type >= 0x0D && q < ih.d; q++) /* float32 / float64 pixels */
        if (!isfinite(idx_value(row + q * ih.esize, ih.type))) {
          rc = ds_fail(DS_EINPUT, "%s: image %zu, value %zu is %g, expected a finite number", ipath,
                       i + 1, q + 1, idx_value(row + q * ih.esize, ih.type));
          break;
        }
      if (rc != DS_OK) break;
      if (k && want_x == 1)
        for (size_t q = 0; q < ih.d; q++) r->X[j * ih.d + q] = idx_value(row + q * ih.esize, ih.type);
    }
    if (k) {
      r->C[j] = r->T[j] = c;
      j++;
    }
  }
  if (rc == DS_OK && want_x) rc = idx_no_trailing(f, ipath, &ih, "images");
  gzclose(f);
  free(row);
  free(lb);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}

/* ---------------------------------------------------------------- text helpers */

/* Next line of buf (NUL-terminated) starting at *pos; the line is made
 * NUL-terminated in place (without \r\n). Returns NULL at the end. */
static char *next_line(char *buf, size_t len, size_t *pos) {
  if (*pos >= len) return NULL;
  char *line = buf + *pos;
  char *nl = memchr(line, '\n', len - *pos);
  if (nl) {
    *nl = '\0';
    *pos = (size_t)(nl - buf) + 1;
  } else {
    *pos = len;
  }
  size_t L = strlen(line);
  if (L > 0 && line[L - 1] == '\r') line[L - 1] = '\0';
  return line;
}

/* Text formats: a NUL byte would silently end a line early. */
static int text_no_nul(const char *path, const char *buf, size_t len) {
  const char *z = memchr(buf, 0, len);
  if (!z) return DS_OK;
  int line = 1;
  for (const char *p = buf; p < z; p++) line += *p == '\n';
  return ds_fail(DS_EINPUT, "%s:%d: NUL byte (binary data) at byte %zu, expected text", path, line,
                 (size_t)(z - buf) + 1);
}

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static char *skip_ws(char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

/* ---------------------------------------------------------------- libsvm */

/* One pass over the text (modified in place). fill = 0: count samples (*n)
 * and the largest index (*dmax), validating every line. fill = 1: store T, C
 * and, when X != NULL, the features (X is d x n, zeroed). */
static int libsvm_pass(const ds_data_spec *s, const char *path, char *text, size_t len, int fill,
                       int *n, int *dmax, int d, double *X, double *T, double *C) {
  size_t pos = 0;
  int lineno = 0, i = 0, nidx = 0, capidx = 0, rc = DS_OK;
  long *seen = NULL; /* the indices of the current line (duplicates are refused) */
  char *line;
#define LS_FAIL(...) do { rc = ds_fail(__VA_ARGS__); goto out; } while (0)
  while ((line = next_line(text, len, &pos)) != NULL) {
    lineno++;
    char *p = skip_ws(line);
    char *hash = strchr(p, '#');
    if (hash) *hash = '\0';
    if (*p == '\0') continue;
    char *end;
    errno = 0;
    double lab = strtod(p, &end);
    if (end != p && !isfinite(lab))
      LS_FAIL(DS_EINPUT, "%s:%d: the label is '%.*s', expected a finite number", path, lineno,
              (int)(end - p < 20 ? end - p : 20), p);
    if (end == p || errno == ERANGE)
      LS_FAIL(DS_EINPUT, "%s:%d: cannot parse the label at '%.20s'", path, lineno, p);
    double target = lab;
    p = end;
    if (*p == ';') {
      p++;
      target = strtod(p, &end);
      if (end == p || !isfinite(target))
        LS_FAIL(DS_EINPUT, "%s:%d: cannot parse the target after ';' at '%.20s'", path,
                       lineno, p);
      p = end;
      if (!s->libsvm_target_after_semicolon) target = lab;
    } else if (s->libsvm_target_after_semicolon) {
      LS_FAIL(DS_EINPUT, "%s:%d: expected 'label;target' (libsvm_target_after_semicolon)",
                     path, lineno);
    }
    if (*p != '\0' && *p != ' ' && *p != '\t')
      LS_FAIL(DS_EINPUT, "%s:%d: unexpected '%.20s' after the label", path, lineno, p);
    nidx = 0;
    for (;;) {
      p = skip_ws(p);
      if (*p == '\0') break;
      char *tok = p;
      errno = 0;
      long idx = strtol(p, &end, 10);
      if (end == p || *end != ':' || errno == ERANGE)
        LS_FAIL(DS_EINPUT, "%s:%d: bad feature '%.20s' (want index:value)", path, lineno, tok);
      if (idx < 1 || idx > INT32_MAX)
        LS_FAIL(DS_EINPUT, "%s:%d: feature index %ld out of range (indices start at 1)",
                       path, lineno, idx);
      p = end + 1;
      double v = strtod(p, &end);
      if (end != p && !isfinite(v))
        LS_FAIL(DS_EINPUT, "%s:%d: feature %ld is '%.*s', expected a finite number", path, lineno, idx,
                (int)(end - p < 20 ? end - p : 20), p);
      if (end == p || (*end != '\0' && *end != ' ' && *end != '\t'))
        LS_FAIL(DS_EINPUT, "%s:%d: bad feature value in '%.20s'", path, lineno, tok);
      p = end;
      if (!fill) {
        if (nidx == capidx) {
          long *ns = realloc(seen, (size_t)(capidx = capidx ? 2 * capidx : 64) * sizeof *ns);
          if (!ns) LS_FAIL(DS_ENOMEM, "%s: out of memory", path);
          seen = ns;
        }
        seen[nidx++] = idx;
      }
      if (!fill && idx > *dmax) *dmax = (int)idx;
      if (fill && X && idx <= d) X[(size_t)i * d + (idx - 1)] = v;
    }
    if (!fill && nidx > 1) {
      qsort(seen, (size_t)nidx, sizeof *seen, cmp_long);
      for (int q = 1; q < nidx && rc == DS_OK; q++)
        if (seen[q] == seen[q - 1])
          rc = ds_fail(DS_EINPUT, "%s:%d: feature index %ld given twice, expected each index at most "
                       "once per line", path, lineno, seen[q]);
      if (rc != DS_OK) break;
    }
    if (fill) {
      T[i] = target;
      C[i] = lab;
    }
    if (i == INT32_MAX) {
      rc = ds_fail(DS_EINPUT, "%s: too many samples", path);
      break;
    }
    i++;
  }
out:
  free(seen);
  if (!fill && rc == DS_OK) *n = i;
  return rc;
}
#undef LS_FAIL

static int load_libsvm(const ds_data_spec *s, const char *path, int want_x, ds_raw *r) {
  char *text;
  size_t len;
  DS_TRY(ds_gz_slurp(path, &text, &len));
  int n = 0, dmax = 0, rc = text_no_nul(path, text, len);
  /* a pass writes NULs into the text, so the second pass reads a copy */
  char *copy = malloc(len + 1);
  if (!copy) rc = ds_fail(DS_ENOMEM, "%s: out of memory", path);
  else if (rc == DS_OK) memcpy(copy, text, len + 1);
  if (rc == DS_OK) rc = libsvm_pass(s, path, text, len, 0, &n, &dmax, 0, NULL, NULL, NULL);
  if (rc == DS_OK && n == 0) rc = ds_fail(DS_EINPUT, "%s: no samples", path);
  if (rc == DS_OK) {
    r->n = n;
    r->d = dmax;
    r->dy = 1;
    r->t_is_class = !s->libsvm_target_after_semicolon;
    r->T = ds_calloc((size_t)n, sizeof *r->T);
    r->C = ds_calloc((size_t)n, sizeof *r->C);
    if (want_x) r->X = ds_calloc((size_t)n * (dmax > 0 ? dmax : 1), sizeof *r->X);
    if (!r->T || !r->C || (want_x && !r->X)) rc = DS_ENOMEM;
  }
  if (rc == DS_OK) rc = libsvm_pass(s, path, copy, len, 1, &n, &dmax, dmax, r->X, r->T, r->C);
  free(text);
  free(copy);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}

/* ---------------------------------------------------------------- CSV */

/* Split line at ',' into fields (in place); returns the count (at most max). */
static int csv_split(char *line, char **fields, int max) {
  int k = 0;
  char *p = line;
  for (;;) {
    char *c = strchr(p, ',');
    if (k < max) fields[k] = p;
    k++;
    if (!c) break;
    *c = '\0';
    p = c + 1;
  }
  return k;
}

/* 0: a finite number, 1: not a number (text), 2: a number that is not finite (nan, inf). */
static int csv_number(char *f, double *v) {
  f = skip_ws(f);
  size_t L = strlen(f);
  while (L > 0 && (f[L - 1] == ' ' || f[L - 1] == '\t')) f[--L] = '\0';
  if (L >= 2 && f[0] == '"' && f[L - 1] == '"') { /* in place, so messages show the bare value */
    memmove(f, f + 1, L - 2);
    f[L - 2] = '\0';
  }
  char *end;
  *v = strtod(f, &end);
  if (end == f || *end != '\0') return 1;
  return isfinite(*v) ? 0 : 2;
}

static int load_csv(const ds_data_spec *s, const char *path, int want_x, ds_raw *r) {
  char *text;
  size_t len;
  DS_TRY(ds_gz_slurp(path, &text, &len));
  int rc = text_no_nul(path, text, len), ncols = -1, lineno = 0, n = 0, cap = 0, first = 1;
  int value = s->labels == DS_LABELS_VALUE;
  int ny = value ? s->d_out : 1;
  if (ny < 1) ny = 1;
  size_t pos = 0;
  char *line;
  char **fields = NULL;
  double *vals = NULL; /* ncols x n, grown */
  int maxf = 0;
  while (rc == DS_OK && (line = next_line(text, len, &pos)) != NULL) {
    lineno++;
    if (*skip_ws(line) == '\0') continue;
    int k = csv_split(line, fields, maxf);
    if (k > maxf) { /* more fields than the buffer holds: grow, then collect the pieces */
      free(fields);
      maxf = k;
      fields = malloc((size_t)maxf * sizeof *fields);
      if (!fields) {
        rc = ds_fail(DS_ENOMEM, "%s: out of memory", path);
        break;
      }
      char *p = line;
      for (int q = 0; q < k; q++) {
        fields[q] = p;
        p += strlen(p) + 1;
      }
    }
    if (ncols < 0) {
      ncols = k;
      if (ncols <= ny) {
        rc = ds_fail(DS_EINPUT, "%s:%d: %d column(s) leave no inputs with %d target column(s)", path,
                     lineno, ncols, ny);
        break;
      }
    } else if (k != ncols) {
      rc = ds_fail(DS_EINPUT, "%s:%d: expected %d columns, got %d", path, lineno, ncols, k);
      break;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      double *nv = realloc(vals, (size_t)cap * ncols * sizeof *nv);
      if (!nv) {
        rc = ds_fail(DS_ENOMEM, "%s: out of memory", path);
        break;
      }
      vals = nv;
    }
    int bad = -1, nonfinite = -1;
    for (int q = 0; q < k; q++) {
      int st = csv_number(fields[q], &vals[(size_t)n * ncols + q]);
      if (st == 1 && bad < 0) bad = q;
      if (st == 2 && nonfinite < 0) nonfinite = q;
    }
    if (bad >= 0 && first) { /* a first line with text is the header */
      first = 0;
      continue;
    }
    first = 0;
    if (nonfinite >= 0) {
      rc = ds_fail(DS_EINPUT, "%s:%d: column %d is '%.20s', expected a finite number", path, lineno,
                   nonfinite + 1, skip_ws(fields[nonfinite]));
      break;
    }
    if (bad >= 0) {
      rc = ds_fail(DS_EINPUT, "%s:%d: column %d: cannot parse '%.20s' as a number", path, lineno,
                   bad + 1, skip_ws(fields[bad]));
      break;
    }
    n++;
  }
  free(fields);
  free(text);
  if (rc == DS_OK && n == 0) rc = ds_fail(DS_EINPUT, "%s: no data rows", path);
  if (rc == DS_OK) {
    int d = ncols - ny;
    r->n = n;
    r->d = d;
    r->dy = ny;
    r->t_is_class = ny == 1;
    r->T = ds_calloc((size_t)n * ny, sizeof *r->T);
    if (ny == 1) r->C = ds_calloc((size_t)n, sizeof *r->C);
    if (want_x) r->X = ds_calloc((size_t)n * d, sizeof *r->X);
    if (!r->T || (ny == 1 && !r->C) || (want_x && !r->X)) rc = DS_ENOMEM;
    for (int i = 0; rc == DS_OK && i < n; i++) {
      const double *row = vals + (size_t)i * ncols;
      if (want_x) memcpy(r->X + (size_t)i * d, row, (size_t)d * sizeof *row);
      memcpy(r->T + (size_t)i * ny, row + d, (size_t)ny * sizeof *row);
      if (ny == 1) r->C[i] = row[d];
    }
  }
  free(vals);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}

/* ---------------------------------------------------------------- HDF5 */

/* Silence HDF5's own error printing around a call sequence. */
typedef struct {
  H5E_auto2_t func;
  void *data;
} h5_quiet;
static void h5_quiet_on(h5_quiet *q) {
  H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}
static void h5_quiet_off(h5_quiet *q) {
  H5Eclear2(H5E_DEFAULT);
  H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

static int h5_open(const char *path, hid_t *f) {
  if (access(path, R_OK) != 0) return ds_fail(DS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
  *f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (*f < 0) return ds_fail(DS_EINPUT, "%s: not an HDF5 file (or unreadable)", path);
  return DS_OK;
}

static const char *h5_class_name(H5T_class_t c) {
  switch (c) {
    case H5T_STRING: return "strings";
    case H5T_COMPOUND: return "compound records";
    case H5T_ENUM: return "enum values";
    case H5T_BITFIELD: return "bit fields";
    case H5T_OPAQUE: return "opaque bytes";
    case H5T_REFERENCE: return "references";
    case H5T_VLEN: return "variable-length sequences";
    case H5T_ARRAY: return "array elements";
    case H5T_TIME: return "time values";
    default: return "data of an unknown type";
  }
}

/* The first non-finite value of a row-major rows x cols matrix: DS_EINPUT. */
static int h5_finite(const char *path, const char *name, const double *v, size_t rows, size_t cols) {
  for (size_t k = 0; k < rows * cols; k++)
    if (!isfinite(v[k]))
      return ds_fail(DS_EINPUT, "%s: dataset '%s' has %g at [%zu, %zu] (row, column from 0), expected "
                     "finite numbers", path, name, v[k], k / cols, k % cols);
  return DS_OK;
}

/* Shape of dataset name: rank 1 or 2; dims[1] = 1 for rank 1. */
static int h5_shape(hid_t f, const char *path, const char *name, hid_t *ds, hsize_t dims[2], int *rank) {
  if (H5Lexists(f, name, H5P_DEFAULT) <= 0 || (*ds = H5Dopen2(f, name, H5P_DEFAULT)) < 0)
    return ds_fail(DS_EINPUT, "%s: no dataset '%s'", path, name);
  hid_t ty = H5Dget_type(*ds);
  H5T_class_t cls = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
  if (ty >= 0) H5Tclose(ty);
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) {
    H5Dclose(*ds);
    *ds = -1;
    return ds_fail(DS_EINPUT, "%s: dataset '%s' holds %s, expected numbers (integer or float)", path,
                   name, h5_class_name(cls));
  }
  hid_t sp = H5Dget_space(*ds);
  int rk = H5Sget_simple_extent_ndims(sp);
  dims[0] = dims[1] = 1;
  if (rk == 1 || rk == 2) H5Sget_simple_extent_dims(sp, dims, NULL);
  H5Sclose(sp);
  *rank = rk;
  if (rk != 1 && rk != 2) {
    H5Dclose(*ds);
    *ds = -1;
    return ds_fail(DS_EINPUT, "%s: dataset '%s' must have 1 or 2 dimensions (has %d)", path, name, rk);
  }
  if (rk == 1) dims[1] = 1;
  if (dims[0] > INT32_MAX || dims[1] > INT32_MAX)
    return ds_fail(DS_EINPUT, "%s: dataset '%s' too large", path, name);
  return DS_OK;
}

static int h5_read_all(hid_t ds, const char *path, const char *name, double *out) {
  if (H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    return ds_fail(DS_EINPUT, "%s: cannot read dataset '%s' as numbers", path, name);
  return DS_OK;
}

static int load_hdf5(const ds_data_spec *s, const char *path, int want_x, ds_raw *r) {
  h5_quiet q;
  h5_quiet_on(&q);
  hid_t f = -1, dx = -1, dyid = -1;
  hsize_t xd[2], yd[2];
  int xr, yr;
  int rc = h5_open(path, &f);
  if (rc == DS_OK) rc = h5_shape(f, path, "X", &dx, xd, &xr);
  if (rc == DS_OK) rc = h5_shape(f, path, "y", &dyid, yd, &yr);
  if (rc == DS_OK && yd[0] != xd[0])
    rc = ds_fail(DS_EINPUT, "%s: X has %llu rows but y has %llu", path, (unsigned long long)xd[0],
                 (unsigned long long)yd[0]);
  if (rc == DS_OK && xd[0] == 0) rc = ds_fail(DS_EINPUT, "%s: no samples", path);
  if (rc == DS_OK) {
    int n = (int)xd[0];
    r->n = n;
    r->d = (int)xd[1];
    r->dy = (int)yd[1];
    r->t_is_class = r->dy == 1;
    r->T = ds_calloc((size_t)n * r->dy, sizeof *r->T);
    if (r->dy == 1) r->C = ds_calloc((size_t)n, sizeof *r->C);
    if (want_x) r->X = ds_calloc((size_t)n * r->d, sizeof *r->X);
    if (!r->T || (r->dy == 1 && !r->C) || (want_x && !r->X)) rc = DS_ENOMEM;
    /* row-major n x d (h5py) is column-major d x n: one column per sample */
    if (rc == DS_OK && want_x) rc = h5_read_all(dx, path, "X", r->X);
    if (rc == DS_OK) rc = h5_read_all(dyid, path, "y", r->T);
    if (rc == DS_OK && r->C) memcpy(r->C, r->T, (size_t)n * sizeof *r->C);
    if (rc == DS_OK && want_x) rc = h5_finite(path, "X", r->X, (size_t)n, (size_t)r->d);
    if (rc == DS_OK) rc = h5_finite(path, "y", r->T, (size_t)n, (size_t)r->dy);
  }
  (void)s;
  if (dx >= 0) H5Dclose(dx);
  if (dyid >= 0) H5Dclose(dyid);
  if (f >= 0) H5Fclose(f);
  h5_quiet_off(&q);
  if (rc != DS_OK) ds_raw_free(r);
  return rc;
}

int ds_h5_exists(const char *path, const char *name) {
  if (access(path, R_OK) != 0) return 0;
  h5_quiet q;
  h5_quiet_on(&q);
  int yes = 0;
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) {
    yes = H5Lexists(f, name, H5P_DEFAULT) > 0;
    if (yes) { /* a dataset, not a group */
      hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
      yes = d >= 0;
      if (d >= 0) H5Dclose(d);
    }
    H5Fclose(f);
  }
  h5_quiet_off(&q);
  return yes;
}

int ds_h5_read_matrix(const char *path, const char *name, int rows, int cols, double *out) {
  h5_quiet q;
  h5_quiet_on(&q);
  hid_t f = -1, ds = -1;
  hsize_t dims[2];
  int rk;
  double *tmp = NULL;
  int rc = h5_open(path, &f);
  if (rc == DS_OK) rc = h5_shape(f, path, name, &ds, dims, &rk);
  if (rc == DS_OK && (dims[0] != (hsize_t)rows || dims[1] != (hsize_t)cols))
    rc = ds_fail(DS_EINPUT, "%s: dataset '%s' is %llu x %llu, expected %d x %d", path, name,
                 (unsigned long long)dims[0], (unsigned long long)dims[1], rows, cols);
  if (rc == DS_OK && !(tmp = ds_calloc((size_t)rows * cols, sizeof *tmp))) rc = DS_ENOMEM;
  if (rc == DS_OK) rc = h5_read_all(ds, path, name, tmp);
  if (rc == DS_OK) rc = h5_finite(path, name, tmp, (size_t)rows, (size_t)cols);
  if (rc == DS_OK) /* row-major rows x cols -> column-major */
    for (int i = 0; i < rows; i++)
      for (int j = 0; j < cols; j++) out[(size_t)j * rows + i] = tmp[(size_t)i * cols + j];
  free(tmp);
  if (ds >= 0) H5Dclose(ds);
  if (f >= 0) H5Fclose(f);
  h5_quiet_off(&q);
  return rc;
}

/* ---------------------------------------------------------------- dispatch */

int ds_raw_load(const ds_data_spec *s, int which, int want_x, ds_raw *r) {
  memset(r, 0, sizeof *r);
  const char *path = which ? s->test_path : s->path;
  const char *lpath = which ? s->test_labels_path : s->labels_path;
  int rc;
  if (s->kind != DS_DATA_CIFAR10 && s->kind != DS_DATA_CIFAR100 && path && path[0]) {
    struct stat st; /* only the CIFAR kinds read a directory (of batch files) */
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
      return ds_fail(DS_EINPUT, "%s: is a directory; data.kind %s reads one file (only cifar10 and "
                     "cifar100 read a directory of batch files)", path, ds_data_kind_name(s->kind));
  }
  switch (s->kind) {
    case DS_DATA_IDX: return load_idx(s, path, lpath, want_x, r); /* 2: checks pixels, keeps none */
    /* the text formats parse every value whatever want_x says: 2 keeps no X */
    case DS_DATA_LIBSVM: rc = load_libsvm(s, path, want_x == 1, r); break;
    case DS_DATA_CSV: rc = load_csv(s, path, want_x == 1, r); break;
    case DS_DATA_HDF5: rc = load_hdf5(s, path, want_x != 0, r); break;
    case DS_DATA_CIFAR10: case DS_DATA_CIFAR100: return ds_load_cifar(s, path, which, want_x, r);
    case DS_DATA_SVHN: return ds_load_svhn(s, path, want_x, r);
    default: return ds_fail(DS_EINTERNAL, "data: kind %d is not a file kind", (int)s->kind);
  }
  if (rc == DS_OK && want_x == 2) { /* checked while reading; not kept */
    free(r->X);
    r->X = NULL;
  }
  return rc;
}
