/* store_h5.c -- small HDF5 helpers for the store: error conversion, types,
 * property lists, and reading/writing attributes and string arrays. Nothing
 * here knows the store layout; see store_write.c and store_read.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "fsio.h"
#include "store_priv.h"

/* ---- errors ------------------------------------------------------------ */

/* HDF5 clears its error stack at the start of every API call, so by the time
 * a helper has closed its handles the cause of a failure is gone. Instead of
 * printing (HDF5's default), the store's handler keeps the innermost message
 * of the latest failure here; ds_store_h5fail() adds it to the error. */
static _Thread_local char ds_store_h5msg[256];

/* System-call failures come as "file write failed: time = <ctime with a
 * newline>, filename = ..., errno = 28, error message = 'No space left on
 * device', ..."; keep "file write failed: No space left on device". */
static herr_t ds_store_walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
  char *msg = data;
  if (n != 0 || !e->desc || !e->desc[0]) return 0;
  const char *em = strstr(e->desc, "error message = '");
  const char *colon = strchr(e->desc, ':');
  if (em && colon && colon < em) {
    em += strlen("error message = '");
    const char *q = strchr(em, '\'');
    snprintf(msg, sizeof ds_store_h5msg, "%.*s: %.*s", (int)(colon - e->desc), e->desc,
             (int)(q ? q - em : (ptrdiff_t)strlen(em)), em);
  } else {
    snprintf(msg, sizeof ds_store_h5msg, "%s", e->desc);
  }
  for (char *p = msg; *p; p++)
    if (*p == '\n') *p = ' ';
  return 0;
}

static herr_t ds_store_auto_cb(hid_t estack, void *data) {
  (void)data;
  ds_store_h5msg[0] = 0;
  H5Ewalk2(estack, H5E_WALK_UPWARD, ds_store_walk_cb, ds_store_h5msg);
  return 0;
}

void ds_store_silence_hdf5(void) {
  H5Eset_auto2(H5E_DEFAULT, ds_store_auto_cb, NULL);
  ds_store_h5msg[0] = 0;
}

int ds_store_h5_checksum_failed(void) {
  return strstr(ds_store_h5msg, "checksum") != NULL || strstr(ds_store_h5msg, "Fletcher32") != NULL;
}

int ds_store_h5fail(int code, const char *path, const char *fmt, ...) {
  char op[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(op, sizeof op, fmt, ap);
  va_end(ap);
  /* a checksum that does not match: the file is damaged, whatever was asked */
  int sum = ds_store_h5_checksum_failed();
  int rc = sum ? ds_fail(DS_EIO, "%s: %s: the file is damaged: %s (bit rot?); 'dynsweep verify %s' "
                                 "lists what is damaged", path, op, ds_store_h5msg, path)
         : ds_store_h5msg[0] ? ds_fail(code, "%s: %s (HDF5: %s)", path, op, ds_store_h5msg)
                             : ds_fail(code, "%s: %s", path, op);
  ds_store_h5msg[0] = 0;
  H5Eclear2(H5E_DEFAULT);
  return rc;
}

/* ---- types and property lists ------------------------------------------ */

hid_t ds_store_vlen_str(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return -1;
  if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

static hid_t ds_store_reason_type(void) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0) return -1;
  if (H5Tset_size(t, DS_STORE_REASON_LEN) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0 ||
      H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}

/* The fields of ds_summary_row, in order (DS_SUMMARY_COLUMNS, store.h): 'I'
 * int64, 'i' int32, 'd' double, 's' reason string. */
typedef struct {
  const char *name;
  size_t off;
  char kind;
} ds_store_field;

#define F(name, kind) {#name, offsetof(ds_summary_row, name), (#kind)[0]},
static const ds_store_field ds_store_fields[] = {DS_SUMMARY_COLUMNS(F)};
#undef F
/* the journal records rows byte for byte (its header holds this size): a
 * column changed or added shows here first */
_Static_assert(sizeof(ds_summary_row) == 248, "ds_summary_row changed: journals of older runs become foreign");
#define DS_STORE_NFIELDS (sizeof ds_store_fields / sizeof ds_store_fields[0])

/* Builds the row compound: native layout (packed == 0) or packed
 * little-endian standard types for the file (packed == 1). */
static hid_t ds_store_row_type(int packed) {
  hid_t str = ds_store_reason_type();
  if (str < 0) return -1;
  size_t size = packed ? 0 : sizeof(ds_summary_row);
  if (packed)
    for (size_t i = 0; i < DS_STORE_NFIELDS; i++) {
      char k = ds_store_fields[i].kind;
      size += k == 'i' ? 4 : k == 's' ? DS_STORE_REASON_LEN : 8;
    }
  hid_t t = H5Tcreate(H5T_COMPOUND, size);
  size_t off = 0;
  for (size_t i = 0; t >= 0 && i < DS_STORE_NFIELDS; i++) {
    const ds_store_field *f = &ds_store_fields[i];
    hid_t ft = f->kind == 'I' ? (packed ? H5T_STD_I64LE : H5T_NATIVE_INT64)
             : f->kind == 'i' ? (packed ? H5T_STD_I32LE : H5T_NATIVE_INT32)
             : f->kind == 'd' ? (packed ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE)
                              : str;
    if (H5Tinsert(t, f->name, packed ? off : f->off, ft) < 0) {
      H5Tclose(t);
      t = -1;
    }
    off += H5Tget_size(ft);
  }
  H5Tclose(str);
  return t;
}

hid_t ds_store_row_memtype(void) { return ds_store_row_type(0); }
hid_t ds_store_row_filetype(void) { return ds_store_row_type(1); }

/* Object headers sized for est_links links; no time stamps (smaller, and the
 * same input gives the same bytes). */
hid_t ds_store_gcpl(unsigned est_links) {
  hid_t p = H5Pcreate(H5P_GROUP_CREATE);
  if (p < 0) return -1;
  if (H5Pset_link_creation_order(p, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED) < 0 ||
      H5Pset_link_phase_change(p, 64, 48) < 0 || H5Pset_est_link_info(p, est_links, 8) < 0 ||
      H5Pset_obj_track_times(p, 0) < 0) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

/* Contiguous datasets without time stamps; no_attrs minimises the header. */
hid_t ds_store_dcpl(int no_attrs) {
  hid_t p = H5Pcreate(H5P_DATASET_CREATE);
  if (p < 0) return -1;
  if (H5Pset_obj_track_times(p, 0) < 0 || (no_attrs && H5Pset_dset_no_attrs_hint(p, 1) < 0)) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

/* Chunked, Fletcher32-checksummed datasets without time stamps (format 4):
 * every chunk carries a checksum that HDF5 checks at each read. rank 1 or 2;
 * chunk dimensions must be > 0. */
hid_t ds_store_dcpl_sum(int rank, const hsize_t *chunk) {
  hid_t p = H5Pcreate(H5P_DATASET_CREATE);
  if (p < 0) return -1;
  if (H5Pset_chunk(p, rank, chunk) < 0 || H5Pset_fletcher32(p) < 0 ||
      H5Pset_obj_track_times(p, 0) < 0) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

/* Transfers with a 64 KiB type-conversion buffer: HDF5's default (1 MiB,
 * zeroed at every H5Dread/H5Dwrite that converts: strings, partial compound
 * rows) cost more than the small reads and writes of a publish themselves. */
hid_t ds_store_dxpl(void) {
  static hid_t p = -1;
  if (p < 0 && (p = H5Pcreate(H5P_DATASET_XFER)) >= 0 && H5Pset_buffer(p, 65536, NULL, NULL) < 0) {
    H5Pclose(p);
    p = -1;
  }
  return p >= 0 ? p : H5P_DEFAULT;
}

/* Persistent free-space tracking: space freed by a replaced checkpoint or
 * summary is found again after the file is closed and reopened (each
 * publish reopens a copy), instead of being lost. */
hid_t ds_store_fcpl(void) {
  hid_t p = H5Pcreate(H5P_FILE_CREATE);
  if (p < 0) return -1;
  if (H5Pset_file_space_strategy(p, H5F_FSPACE_STRATEGY_FSM_AGGR, 1, 1) < 0) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

double ds_store_unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

hid_t ds_store_fapl(void) {
  hid_t p = H5Pcreate(H5P_FILE_ACCESS);
  if (p < 0) return -1;
  if (H5Pset_fapl_sec2(p) < 0 ||
      H5Pset_libver_bounds(p, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_fclose_degree(p, H5F_CLOSE_STRONG) < 0) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

/* ---- attribute writing --------------------------------------------------- */

/* Opens attribute name on loc, creating it with type and space if absent. */
static hid_t ds_store_attr_for_write(hid_t loc, const char *name, hid_t type, hid_t space) {
  htri_t ex = H5Aexists(loc, name);
  if (ex < 0) return -1;
  if (ex) return H5Aopen(loc, name, H5P_DEFAULT);
  return H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
}

static int ds_store_put(hid_t loc, const char *name, hid_t ftype, hid_t mtype, hid_t space,
                        const void *buf) {
  hid_t a = ds_store_attr_for_write(loc, name, ftype, space);
  if (a < 0) return -1;
  herr_t rc = H5Awrite(a, mtype, buf);
  H5Aclose(a);
  return rc < 0 ? -1 : 0;
}

int ds_store_put_str(hid_t loc, const char *name, const char *val) {
  hid_t t = ds_store_vlen_str(), sp = H5Screate(H5S_SCALAR);
  const char *v = val ? val : "";
  int rc = (t < 0 || sp < 0) ? -1 : ds_store_put(loc, name, t, t, sp, &v);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

int ds_store_put_strs(hid_t loc, const char *name, const char *const *vals, int64_t n) {
  hsize_t dim = (hsize_t)n;
  hid_t t = ds_store_vlen_str(), sp = H5Screate_simple(1, &dim, NULL);
  int rc = (t < 0 || sp < 0) ? -1 : ds_store_put(loc, name, t, t, sp, vals);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

int ds_store_put_i64(hid_t loc, const char *name, int64_t val) {
  hid_t sp = H5Screate(H5S_SCALAR);
  int rc = sp < 0 ? -1 : ds_store_put(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, sp, &val);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

int ds_store_put_i32(hid_t loc, const char *name, int32_t val) {
  hid_t sp = H5Screate(H5S_SCALAR);
  int rc = sp < 0 ? -1 : ds_store_put(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, sp, &val);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

int ds_store_put_f64(hid_t loc, const char *name, double val) {
  hid_t sp = H5Screate(H5S_SCALAR);
  int rc = sp < 0 ? -1 : ds_store_put(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, sp, &val);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

/* An n x k int64 attribute (replaced; n == 0: an empty one if keep_empty,
 * else none). */
int ds_store_put_i64_table(hid_t loc, const char *name, const int64_t *v, int64_t n, int k, int keep_empty) {
  if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) return -1;
  if (n == 0 && !keep_empty) return 0;
  hsize_t dims[2] = {(hsize_t)n, (hsize_t)k};
  hid_t sp = H5Screate_simple(2, dims, NULL);
  hid_t a = sp >= 0 ? H5Acreate2(loc, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = a >= 0 && (n == 0 || H5Awrite(a, H5T_NATIVE_INT64, v) >= 0);
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

/* Reads an n x k int64 attribute into a malloc'd array (absent: n = 0). */
int ds_store_get_i64_table(hid_t loc, const char *name, int k, int64_t **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  htri_t ex = H5Aexists(loc, name);
  if (ex <= 0) return ex < 0 ? -1 : 0;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT), sp = a >= 0 ? H5Aget_space(a) : -1;
  hsize_t dims[2] = {0, 0};
  int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 2 && H5Sget_simple_extent_dims(sp, dims, NULL) == 2 &&
           dims[1] == (hsize_t)k;
  int64_t *v = ok ? ds_calloc(dims[0] ? dims[0] * (size_t)k : (size_t)k, sizeof *v) : NULL;
  ok = ok && v && (dims[0] == 0 || H5Aread(a, H5T_NATIVE_INT64, v) >= 0);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  if (!ok) {
    free(v);
    return -1;
  }
  *out = v;
  *n = (int64_t)dims[0];
  return 0;
}

/* ---- attribute reading --------------------------------------------------- */

/* Reads a scalar string attribute (variable or fixed length) into buf. */
static int ds_store_get_str(hid_t a, hid_t ft, char *buf, int n) {
  hid_t mt = H5Tget_native_type(ft, H5T_DIR_ASCEND);
  int rc = -1;
  if (mt < 0) return -1;
  if (H5Tis_variable_str(ft) > 0) {
    char *p = NULL;
    if (H5Aread(a, mt, &p) >= 0) {
      snprintf(buf, n, "%s", p ? p : "");
      H5free_memory(p);
      rc = 0;
    }
  } else {
    size_t sz = H5Tget_size(ft);
    char *tmp = calloc(sz + 1, 1);
    if (tmp && H5Aread(a, mt, tmp) >= 0) {
      snprintf(buf, n, "%s", tmp);
      rc = 0;
    }
    free(tmp);
  }
  H5Tclose(mt);
  return rc;
}

int ds_store_get_text(hid_t loc, const char *name, char *buf, int n) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t ft = H5Aget_type(a), sp = H5Aget_space(a);
  int rc = -1;
  if (ft >= 0 && sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1) {
    H5T_class_t cls = H5Tget_class(ft);
    if (cls == H5T_STRING) {
      rc = ds_store_get_str(a, ft, buf, n);
    } else if (cls == H5T_INTEGER) {
      long long v;
      if (H5Aread(a, H5T_NATIVE_LLONG, &v) >= 0) rc = 0, snprintf(buf, n, "%lld", v);
    } else if (cls == H5T_FLOAT) {
      double v;
      if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) >= 0) rc = 0, snprintf(buf, n, "%.17g", v);
    }
  }
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  H5Aclose(a);
  return rc;
}

int ds_store_get_i64(hid_t loc, const char *name, int64_t *val) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0) return -1;
  herr_t rc = H5Aread(a, H5T_NATIVE_INT64, val);
  H5Aclose(a);
  return rc < 0 ? -1 : 0;
}

/* ---- string arrays --------------------------------------------------------- */

void ds_store_free_strs(char **v, int64_t n) {
  for (int64_t i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

/* Copies n strings (vlen pointers, or fixed-size records if fixed > 0) into
 * a malloc'd array of malloc'd strings. */
static char **ds_store_copy_strs(char *const *src, int64_t n, size_t fixed) {
  char **out = ds_calloc(n ? (size_t)n : 1, sizeof *out);
  for (int64_t i = 0; out && i < n; i++) {
    const char *s = fixed ? (const char *)src + i * fixed : (src[i] ? src[i] : "");
    size_t len = fixed ? strnlen(s, fixed) : strlen(s);
    out[i] = ds_calloc(len + 1, 1);
    if (!out[i]) {
      ds_store_free_strs(out, i);
      return NULL;
    }
    memcpy(out[i], s, len);
  }
  return out;
}

/* obj is an attribute (is_attr) or a dataset holding a 1-D string array. */
static int ds_store_get_strs(hid_t obj, int is_attr, char ***out, int64_t *n) {
  hid_t ft = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
  hid_t sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
  hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
  hssize_t cnt = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  int rc = -1, vlen = ft >= 0 && H5Tis_variable_str(ft) > 0;
  size_t fixed = vlen || ft < 0 ? 0 : H5Tget_size(ft);
  void *buf = NULL;
  if (mt < 0 || cnt < 0 || (ft >= 0 && H5Tget_class(ft) != H5T_STRING)) goto done;
  buf = calloc(cnt ? (size_t)cnt : 1, vlen ? sizeof(char *) : fixed);
  if (!buf) goto done;
  if ((is_attr ? H5Aread(obj, mt, buf) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, ds_store_dxpl(), buf)) < 0)
    goto done;
  *out = ds_store_copy_strs(buf, cnt, fixed);
  *n = cnt;
  rc = *out ? 0 : -1;
  if (vlen) H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
done:
  free(buf);
  if (mt >= 0) H5Tclose(mt);
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  return rc;
}

int ds_store_get_strs_attr(hid_t attr, char ***out, int64_t *n) {
  return ds_store_get_strs(attr, 1, out, n);
}

int ds_store_get_strs_dset(hid_t dset, char ***out, int64_t *n) {
  return ds_store_get_strs(dset, 0, out, n);
}

/* ---- ids ------------------------------------------------------------------ */

int64_t ds_store_row_index(const ds_store *s, int64_t id) {
  if (id >= 0 && id < s->npoints && s->ids[id] == id) return id;
  for (int64_t i = 0; i < s->npoints; i++)
    if (s->ids[i] == id) return i;
  return -1;
}

void ds_store_point_name(int64_t id, char *buf, size_t n) {
  snprintf(buf, n, "%06" PRId64, id);
}

/* /series/index row (version 3): native layout in memory, packed
 * little-endian in the file (40 bytes). */
static hid_t ds_store_idx_type(int packed) {
  hid_t t = H5Tcreate(H5T_COMPOUND, packed ? 40 : sizeof(ds_store_idx));
  hid_t i64 = packed ? H5T_STD_I64LE : H5T_NATIVE_INT64, i32 = packed ? H5T_STD_I32LE : H5T_NATIVE_INT32;
  if (t < 0) return -1;
  if (H5Tinsert(t, "point", packed ? 0 : offsetof(ds_store_idx, point), i64) < 0 ||
      H5Tinsert(t, "kind", packed ? 8 : offsetof(ds_store_idx, kind), i32) < 0 ||
      H5Tinsert(t, "ncols", packed ? 12 : offsetof(ds_store_idx, ncols), i32) < 0 ||
      H5Tinsert(t, "n", packed ? 16 : offsetof(ds_store_idx, n), i64) < 0 ||
      H5Tinsert(t, "step_start", packed ? 24 : offsetof(ds_store_idx, step_start), i64) < 0 ||
      H5Tinsert(t, "value_start", packed ? 32 : offsetof(ds_store_idx, value_start), i64) < 0) {
    H5Tclose(t);
    return -1;
  }
  return t;
}
hid_t ds_store_idx_memtype(void) { return ds_store_idx_type(0); }
hid_t ds_store_idx_filetype(void) { return ds_store_idx_type(1); }

/* /sweep/yaml (public: store.h; here, below digest.c and store_read.c, which use it) */
int ds_store_sweep_text(ds_store *s, char **text) {
  hid_t d = H5Dopen2(s->file, "sweep/yaml", H5P_DEFAULT);
  if (d < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot open /sweep/yaml");
  hid_t t = ds_store_vlen_str();
  char *v = NULL;
  int ok = t >= 0 && H5Dread(d, t, H5S_ALL, H5S_ALL, ds_store_dxpl(), &v) >= 0 && v;
  if (ok) *text = ds_strdup(v);
  if (v) H5free_memory(v);
  if (t >= 0) H5Tclose(t);
  H5Dclose(d);
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot read /sweep/yaml");
  return *text ? DS_OK : DS_ENOMEM;
}

/* ---- the immutable files of STORE.seg/ (segments.c, blocks.c) ---------------- */

/* An immutable file of STORE.seg/ (a segment or a block file, which the
 * caller has recorded as made: a failed publish removes it): created, its
 * space reserved (HDF5 1.10 cannot recover from a failed write at close),
 * created by HDF5 with the root attributes format and store_uuid. -1 with
 * the error recorded on failure. */
hid_t ds_seg_file_create(ds_store *s, const char *p, double bytes, const char *format) {
  int fd = ds_fs_create(p, O_WRONLY | O_TRUNC);
  if (fd < 0) return ds_fail(DS_EIO, "%s: cannot create: %s", p, strerror(errno)), -1;
  close(fd);
  if (ds_fs_reserve(p, bytes) != DS_OK) return -1;
  hid_t fapl = ds_store_fapl();
  hid_t f = fapl >= 0 ? H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
  if (fapl >= 0) H5Pclose(fapl);
  if (f < 0) return ds_store_h5fail(DS_EIO, p, "cannot create the %s file", format), -1;
  char uuid[17];
  snprintf(uuid, sizeof uuid, "%016" PRIx64, s->uuid);
  if (ds_store_put_str(f, "format", format) < 0 || ds_store_put_str(f, "store_uuid", uuid) < 0) {
    ds_store_h5fail(DS_EIO, p, "cannot write the attributes of the %s file", format);
    H5Fclose(f);
    return -1;
  }
  return f;
}

/* Closes file f of ds_seg_file_create and fsyncs it; ok == 0: writing it failed. */
int ds_seg_file_finish(hid_t f, const char *p, int ok) {
  if (!ok) {
    ds_store_h5fail(DS_EIO, p, "cannot write the file");
    H5Fclose(f);
    return DS_EIO;
  }
  if (H5Fclose(f) < 0) return ds_store_h5fail(DS_EIO, p, "cannot close the file");
  if (ds_fs_fsync_path(p) != 0) return ds_fail(DS_EIO, "%s: cannot fsync: %s", p, strerror(errno));
  return DS_OK;
}
