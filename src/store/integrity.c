/* integrity.c -- bit rot: `dynsweep verify` (ds_store_verify), which reads everything in a store and
 * checks checksums and internal consistency (docs/store.md, "Integrity").
 *
 * What checks what (format 4, library format bounds `latest`): HDF5 checksums
 * the superblock, object headers (hence every attribute stored in them, the
 * dataspaces, types and layouts), chunk indexes, fractal heaps and free-space
 * managers (Jenkins lookup3, checked at every read); every numeric dataset is
 * chunked with the Fletcher32 filter (checked at every read of a chunk);
 * variable-length strings live in the global heap, which has no checksum:
 * the digests of digest.c cover them. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "store_priv.h"

/* ---- verify ------------------------------------------------------------------- */

typedef struct {
  ds_store *s;
  FILE *out;
  int64_t ndamaged, nwarn;
  unsigned char *hurt; /* per summary row: the point is damaged */
  int64_t nrows;
  int64_t nread;       /* datasets read */
} ds_verify;

static void ds_verify_point(ds_verify *v, int64_t row) {
  if (row >= 0 && row < v->nrows) v->hurt[row] = 1;
}

/* One "damaged: ..." (counted as damage) or "warning: ..." line. */
static void ds_verify_say(ds_verify *v, int damage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ds_verify_say(ds_verify *v, int damage, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(v->out, damage ? "damaged: " : "warning: ");
  vfprintf(v->out, fmt, ap);
  fputc('\n', v->out);
  va_end(ap);
  if (damage) v->ndamaged++;
  else v->nwarn++;
}
#define ds_verify_damaged(v, ...) ds_verify_say(v, 1, __VA_ARGS__)
#define ds_verify_warn(v, ...) ds_verify_say(v, 0, __VA_ARGS__)

/* The innermost HDF5 message of the latest failure, for a damaged line. */
static const char *ds_verify_why(char *buf, size_t n) {
  ds_store_h5fail(DS_EIO, "", "x");
  const char *m = ds_errmsg(), *h = strstr(m, "(HDF5: ");
  const char *d = strstr(m, "damaged: ");
  if (d) snprintf(buf, n, "%.*s", (int)strcspn(d + 9, "("), d + 9);
  else if (h) snprintf(buf, n, "%.*s", (int)strcspn(h + 7, ")"), h + 7);
  else snprintf(buf, n, "read error");
  size_t l = strlen(buf);
  while (l && (buf[l - 1] == ' ' || buf[l - 1] == ';')) buf[--l] = 0;
  ds_clear_error();
  return buf;
}

/* Reads a dataset of nrows rows (row = relem elements of esize bytes, memory
 * type mtype) chunk by chunk into buf; bad[k] = 1 for every row of a chunk
 * that fails (checksum or other read error). Returns the rows per chunk. */
static int64_t ds_verify_read_rows(hid_t d, hid_t mtype, size_t rowbytes, int64_t nrows,
                                   int rank, void *buf, unsigned char *bad, char *why,
                                   size_t whylen) {
  hid_t dcpl = H5Dget_create_plist(d);
  hsize_t cd[2] = {0, 0};
  int64_t cr = nrows > 0 ? nrows : 1;
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 2, cd) >= 1 && cd[0] > 0)
    cr = (int64_t)cd[0];
  int64_t br = 0; /* format 5 row blocks (a VDS): block by block */
  if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL && H5Aexists(d, "block_rows") > 0 &&
      ds_store_get_i64(d, "block_rows", &br) == 0 && br > 0)
    cr = br;
  if (dcpl >= 0) H5Pclose(dcpl);
  hid_t fs = H5Dget_space(d);
  hsize_t dims[2] = {0, 0};
  if (fs >= 0) H5Sget_simple_extent_dims(fs, dims, NULL);
  why[0] = 0;
  for (int64_t r0 = 0; r0 < nrows; r0 += cr) {
    int64_t nr = nrows - r0 < cr ? nrows - r0 : cr;
    hsize_t st[2] = {(hsize_t)r0, 0}, cnt[2] = {(hsize_t)nr, rank == 2 ? dims[1] : 1};
    hid_t ms = H5Screate_simple(rank, cnt, NULL);
    int ok = fs >= 0 && ms >= 0 &&
             H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL) >= 0 &&
             (cnt[1] == 0 ||
              H5Dread(d, mtype, ms, fs, H5P_DEFAULT, (char *)buf + (size_t)r0 * rowbytes) >= 0);
    if (ms >= 0) H5Sclose(ms);
    if (!ok) {
      if (!why[0]) ds_verify_why(why, whylen);
      memset(bad + r0, 1, (size_t)nr);
      memset((char *)buf + (size_t)r0 * rowbytes, 0, (size_t)nr * rowbytes);
    }
  }
  if (fs >= 0) H5Sclose(fs);
  H5Eclear2(H5E_DEFAULT);
  return cr;
}

/* Prints one damaged line per run of bad rows of dataset `what`. */
static int64_t ds_verify_bad_runs(ds_verify *v, const char *what, const unsigned char *bad,
                                  int64_t n, const char *why, int mark_rows) {
  int64_t runs = 0;
  for (int64_t i = 0; i < n;) {
    if (!bad[i]) {
      i++;
      continue;
    }
    int64_t j = i;
    while (j < n && bad[j]) j++;
    if (mark_rows)
      for (int64_t r = i; r < j; r++) ds_verify_point(v, r);
    ds_verify_damaged(v, "%s rows %" PRId64 "-%" PRId64 " cannot be read: %s%s", what, i, j - 1,
                      why, mark_rows ? " (the summary rows of these points)" : "");
    runs++;
    i = j;
  }
  return runs;
}

/* ---- everything else: every object, attribute and dataset, read once ---------- */

static int ds_verify_read_any(hid_t obj, int is_attr) {
  hid_t ft = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
  hid_t sp = is_attr ? H5Aget_space(obj) : H5Dget_space(obj);
  hid_t mt = ft >= 0 ? H5Tget_native_type(ft, H5T_DIR_ASCEND) : -1;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  size_t sz = mt >= 0 ? H5Tget_size(mt) : 0;
  int ok = mt >= 0 && n >= 0 && sz > 0;
  void *buf = ok ? calloc(n ? (size_t)n : 1, sz) : NULL;
  ok = ok && buf &&
       (n == 0 || (is_attr ? H5Aread(obj, mt, buf) : H5Dread(obj, mt, H5S_ALL, H5S_ALL, ds_store_dxpl(), buf)) >= 0);
  if (ok && n > 0 && (H5Tis_variable_str(mt) > 0 || H5Tdetect_class(mt, H5T_VLEN) > 0))
    H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
  free(buf);
  if (mt >= 0) H5Tclose(mt);
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

typedef struct {
  ds_verify *v;
  const char *obj;
} ds_verify_obj;

static herr_t ds_verify_attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *arg) {
  (void)info;
  ds_verify_obj *o = arg;
  char why[256];
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  if (a < 0 || ds_verify_read_any(a, 1) < 0)
    ds_verify_damaged(o->v, "/%s attribute %s cannot be read: %s", strcmp(o->obj, ".") ? o->obj : "",
                      name, ds_verify_why(why, sizeof why));
  if (a >= 0) H5Aclose(a);
  return 0;
}

/* Datasets with their own, localising checks below. */
static int ds_verify_structured(const char *name) {
  static const char *const own[] = {"summary", "grid/axis_values", "series/index", "series/step",
                                    "series/value"};
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
    if (!strcmp(name, own[i])) return 1;
  /* the /map arrays are read chunk by chunk by ds_map_verify (the axes here) */
  if (!strncmp(name, "map/", 4) && strncmp(name, "map/axes/", 9)) return 1;
  return !strncmp(name, "checkpoints/", 12);
}

/* the point of a format 1-2 object /points/<id>/..., or -1 */
static int64_t ds_verify_points_id(const char *name) {
  if (strncmp(name, "points/", 7)) return -1;
  char *end;
  long long id = strtoll(name + 7, &end, 10);
  return end != name + 7 ? (int64_t)id : -1;
}

static herr_t ds_verify_obj_cb(hid_t root, const char *name, const H5O_info_t *info, void *arg) {
  ds_verify *v = arg;
  char why[256];
  ds_verify_obj o = {v, name};
  hsize_t idx = 0;
  hid_t obj = H5Oopen(root, name, H5P_DEFAULT);
  int64_t pid = ds_verify_points_id(name);
  if (obj < 0) {
    ds_verify_damaged(v, "/%s cannot be opened: %s", name, ds_verify_why(why, sizeof why));
    ds_verify_point(v, ds_store_row_index(v->s, pid));
    return 0;
  }
  int64_t before = v->ndamaged;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, ds_verify_attr_cb, &o) < 0)
    ds_verify_damaged(v, "/%s: its attributes cannot be listed: %s", strcmp(name, ".") ? name : "",
                      ds_verify_why(why, sizeof why));
  if (info->type == H5O_TYPE_DATASET && !ds_verify_structured(name)) {
    v->nread++;
    if (ds_verify_read_any(obj, 0) < 0)
      ds_verify_damaged(v, "/%s cannot be read: %s", name, ds_verify_why(why, sizeof why));
  }
  if (v->ndamaged > before && pid >= 0) ds_verify_point(v, ds_store_row_index(v->s, pid));
  H5Oclose(obj);
  H5Eclear2(H5E_DEFAULT);
  return 0;
}

/* ---- /summary, /grid ---------------------------------------------------------- */

static int ds_verify_final(int st) { return st >= DS_ST_DONE && st <= DS_ST_FAILED; }

static ds_summary_row *ds_verify_summary(ds_verify *v, unsigned char **badrow) {
  ds_store *s = v->s;
  int64_t n = s->npoints;
  ds_summary_row *r = ds_calloc(n ? (size_t)n : 1, sizeof *r);
  unsigned char *bad = ds_calloc(n ? (size_t)n : 1, 1);
  char why[256];
  if (!r || !bad) {
    free(r), free(bad);
    return NULL;
  }
  ds_verify_read_rows(s->summary, s->row_mem, sizeof *r, n, 1, r, bad, why, sizeof why);
  ds_verify_bad_runs(v, "/summary", bad, n, why, 1);
  unsigned char *seen = ds_calloc(n ? (size_t)n : 1, 1);
  for (int64_t i = 0; seen && i < n; i++) {
    if (bad[i]) continue;
    r[i].reason[DS_STORE_REASON_LEN - 1] = 0;
    const ds_summary_row *x = &r[i];
    const char *what = NULL;
    if (x->id < 0 || x->id >= n) what = "id out of range";
    else if (seen[x->id]) what = "id used twice";
    else if (x->status < 0 || x->status > DS_ST_RUNNING) what = "status out of range";
    else if (ds_verify_final(x->status) && x->steps < 0) what = "negative steps";
    if (x->id >= 0 && x->id < n) seen[x->id] = 1;
    if (what) {
      ds_verify_damaged(v, "/summary row %" PRId64 " (point %" PRId64 "): %s", i, x->id, what);
      ds_verify_point(v, i);
      bad[i] = 1;
    }
  }
  free(seen);
  *badrow = bad;
  return r;
}

/* Axis paths the summary repeats: the axis value must equal the row's. */
static int ds_verify_axis_field(const char *path) {
  static const char *const p[] = {"model.width", "model.depth", "optimizer.lr", "model.init_scale"};
  for (int i = 0; i < 4; i++)
    if (!strcmp(path, p[i])) return i;
  return -1;
}

static void ds_verify_grid(ds_verify *v, const ds_summary_row *r, const unsigned char *badrow) {
  ds_store *s = v->s;
  hid_t dn = H5Dopen2(s->file, "grid/axis_paths", H5P_DEFAULT);
  hid_t dv = H5Dopen2(s->file, "grid/axis_values", H5P_DEFAULT);
  char **paths = NULL, why[256];
  int64_t na = 0;
  hsize_t dims[2] = {0, 0};
  hid_t sp = dv >= 0 ? H5Dget_space(dv) : -1;
  int ok = dn >= 0 && ds_store_get_strs_dset(dn, &paths, &na) >= 0 && sp >= 0 &&
           H5Sget_simple_extent_dims(sp, dims, NULL) == 2;
  if (sp >= 0) H5Sclose(sp);
  if (!ok) {
    ds_verify_damaged(v, "/grid cannot be read: %s", ds_verify_why(why, sizeof why));
  } else if ((int64_t)dims[0] != s->npoints || (int64_t)dims[1] != na) {
    ds_verify_damaged(v, "/grid/axis_values is %llu x %llu, expected %" PRId64 " x %" PRId64,
                      (unsigned long long)dims[0], (unsigned long long)dims[1], s->npoints, na);
  } else {
    int64_t n = s->npoints;
    double *a = ds_calloc(n * na > 0 ? (size_t)(n * na) : 1, sizeof *a);
    unsigned char *bad = ds_calloc(n ? (size_t)n : 1, 1);
    if (a && bad) {
      ds_verify_read_rows(dv, H5T_NATIVE_DOUBLE, (size_t)na * sizeof *a, n, 2, a, bad, why, sizeof why);
      ds_verify_bad_runs(v, "/grid/axis_values", bad, n, why, 1);
      for (int64_t i = 0; i < n; i++) {
        if (bad[i] || badrow[i]) continue;
        for (int64_t k = 0; k < na; k++) {
          int f = ds_verify_axis_field(paths[k]);
          double want = f == 0 ? r[i].width : f == 1 ? r[i].depth : f == 2 ? r[i].lr : r[i].init_scale;
          if (f >= 0 && memcmp(&want, &a[i * na + k], sizeof want)) {
            ds_verify_damaged(v, "point %" PRId64 ": /grid says %s = %.17g, /summary says %.17g",
                              r[i].id, paths[k], a[i * na + k], want);
            ds_verify_point(v, i);
          }
        }
      }
    }
    free(a), free(bad);
  }
  ds_store_free_strs(paths, na);
  if (dn >= 0) H5Dclose(dn);
  if (dv >= 0) H5Dclose(dv);
  H5Eclear2(H5E_DEFAULT);
}

/* ---- /series (format 3+) ---------------------------------------------------------- */

typedef struct {
  int64_t n, cr;
  unsigned char *bad;
  void *buf;
  char why[256];
} ds_verify_col;

static void ds_verify_col_read(ds_verify *v, const char *name, hid_t mtype, size_t esize,
                               ds_verify_col *c) {
  memset(c, 0, sizeof *c);
  hid_t d = H5Dopen2(v->s->series, name, H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  c->n = n > 0 ? n : 0;
  c->buf = ds_calloc(c->n ? (size_t)c->n : 1, esize);
  c->bad = ds_calloc(c->n ? (size_t)c->n : 1, 1);
  if (n < 0 || !c->buf || !c->bad) {
    ds_verify_damaged(v, "/series/%s cannot be opened: %s", name, ds_verify_why(c->why, sizeof c->why));
    c->n = 0;
  } else {
    v->nread++;
    c->cr = ds_verify_read_rows(d, mtype, esize, c->n, 1, c->buf, c->bad, c->why, sizeof c->why);
  }
  if (d >= 0) H5Dclose(d);
  H5Eclear2(H5E_DEFAULT);
}

static int ds_verify_any_bad(const ds_verify_col *c, int64_t start, int64_t n) {
  for (int64_t i = start; i < start + n; i++)
    if (c->bad[i]) return 1;
  return 0;
}

typedef struct {
  int64_t start, end, row;
} ds_verify_range;

static int ds_verify_range_cmp(const void *a, const void *b) {
  const ds_verify_range *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* Overlapping [start, end) ranges of two index rows: each names a damaged point. */
static void ds_verify_overlaps(ds_verify *v, ds_verify_range *rg, int64_t n, const ds_store_idx *x,
                               const char *what) {
  qsort(rg, (size_t)n, sizeof *rg, ds_verify_range_cmp);
  for (int64_t i = 1; i < n; i++)
    if (rg[i].start < rg[i - 1].end) {
      const ds_store_idx *a = &x[rg[i - 1].row], *b = &x[rg[i].row];
      ds_verify_damaged(v, "/series/index rows %" PRId64 " (point %" PRId64 ") and %" PRId64
                        " (point %" PRId64 ") overlap in /series/%s", rg[i - 1].row, a->point,
                        rg[i].row, b->point, what);
      ds_verify_point(v, ds_store_row_index(v->s, a->point));
      ds_verify_point(v, ds_store_row_index(v->s, b->point));
    }
}

static void ds_verify_series(ds_verify *v, const ds_summary_row *r, const unsigned char *badrow) {
  ds_store *s = v->s;
  int64_t np = s->npoints;
  char **kn = NULL, why[256];
  int64_t nk = 0;
  hid_t dk = H5Dopen2(s->series, "names", H5P_DEFAULT);
  if (dk < 0 || ds_store_get_strs_dset(dk, &kn, &nk) < 0) {
    ds_verify_damaged(v, "/series/names cannot be read: %s", ds_verify_why(why, sizeof why));
    nk = 0;
  }
  if (dk >= 0) H5Dclose(dk);
  hid_t it = ds_store_idx_memtype();
  ds_verify_col ci, cs, cv;
  ds_verify_col_read(v, "index", it, sizeof(ds_store_idx), &ci);
  ds_verify_col_read(v, "step", H5T_NATIVE_INT64, sizeof(int64_t), &cs);
  ds_verify_col_read(v, "value", H5T_NATIVE_DOUBLE, sizeof(double), &cv);
  H5Tclose(it);
  int64_t lost_index = ds_verify_bad_runs(v, "/series/index", ci.bad, ci.n, ci.why, 0);
  const ds_store_idx *x = ci.buf;
  const int64_t *step = cs.buf;
  const double *val = cv.buf;
  unsigned char *has = ds_calloc(np ? (size_t)np : 1, 1);
  int64_t *lost = ds_calloc(np ? (size_t)np : 1, sizeof *lost); /* 1 steps, 2 values unreadable */
  int64_t *nlost = ds_calloc(np ? (size_t)np : 1, sizeof *nlost);
  ds_verify_range *rs = ds_calloc(ci.n ? (size_t)ci.n : 1, sizeof *rs);
  ds_verify_range *rv = ds_calloc(ci.n ? (size_t)ci.n : 1, sizeof *rv);
  int64_t nrs = 0, nrv = 0;
  if (!has || !rs || !rv || !lost || !nlost) goto done;
  for (int64_t i = 0; i < ci.n; i++) {
    if (ci.bad[i]) continue;
    const ds_store_idx *e = &x[i];
    int64_t row = e->point >= 0 ? ds_store_row_index(s, e->point) : -1;
    const char *kname = e->kind >= 0 && e->kind < nk ? kn[e->kind] : "?";
    const char *what = NULL;
    if (e->point < -1 || (e->point >= 0 && row < 0)) what = "names a point the summary does not have";
    else if (e->kind < -1 || e->kind >= nk) what = "kind out of range";
    else if (e->ncols < 1 || e->n < 0 || e->n > INT64_MAX / e->ncols) what = "bad record count";
    else if (e->step_start < 0 || e->step_start > cs.n - e->n) what = "steps outside /series/step";
    else if (e->value_start < 0 || e->value_start > cv.n - e->n * e->ncols)
      what = "values outside /series/value";
    else if (e->kind < 0 && e->n != 0) what = "a row of kind -1 with records";
    if (what) {
      ds_verify_damaged(v, "/series/index row %" PRId64 " (point %" PRId64 "): %s", i, e->point, what);
      ds_verify_point(v, row);
      continue;
    }
    rs[nrs++] = (ds_verify_range){e->step_start, e->step_start + e->n, i};
    rv[nrv++] = (ds_verify_range){e->value_start, e->value_start + e->n * e->ncols, i};
    if (row < 0) continue; /* superseded */
    has[row] = 1;
    if (e->kind < 0) continue;
    if (ds_verify_any_bad(&cs, e->step_start, e->n) || ds_verify_any_bad(&cv, e->value_start, e->n * e->ncols)) {
      lost[row] = lost[row] ? lost[row] : (int64_t)(ds_verify_any_bad(&cs, e->step_start, e->n) ? 1 : 2);
      nlost[row]++;
      ds_verify_point(v, row);
      continue;
    }
    if (badrow[row]) continue;
    const ds_summary_row *sr = &r[row];
    const int64_t *st = step + e->step_start;
    for (int64_t k = 0; k < e->n; k++)
      if (st[k] < 0 || (k > 0 && st[k] <= st[k - 1]) ||
          (ds_verify_final(sr->status) && st[k] > sr->steps)) {
        ds_verify_damaged(v, "point %" PRId64 ": series %s: step %" PRId64 " (record %" PRId64
                          ") is out of order or beyond the point's %" PRId64 " steps",
                          e->point, kname, st[k], k, sr->steps);
        ds_verify_point(v, row);
        break;
      }
    /* the loss series ends at the point's last step with its final loss */
    if (!strcmp(kname, "loss") && e->n > 0 && e->ncols == 1 &&
        (sr->status == DS_ST_DONE || sr->status == DS_ST_DIVERGED) &&
        (st[e->n - 1] != sr->steps ||
         memcmp(&val[e->value_start + e->n - 1], &sr->final_loss, sizeof(double)))) {
      ds_verify_damaged(v, "point %" PRId64 ": series loss ends at step %" PRId64 " with %.17g, "
                        "/summary says %" PRId64 " steps, final_loss %.17g", e->point,
                        st[e->n - 1], val[e->value_start + e->n - 1], sr->steps, sr->final_loss);
      ds_verify_point(v, row);
    }
  }
  for (int64_t i = 0; i < np; i++)
    if (lost[i])
      ds_verify_damaged(v, "point %" PRId64 ": %" PRId64 " of its series cannot be read (/series/%s): %s",
                        r[i].id, nlost[i], lost[i] == 1 ? "step" : "value", lost[i] == 1 ? cs.why : cv.why);
  ds_verify_overlaps(v, rs, nrs, x, "step");
  ds_verify_overlaps(v, rv, nrv, x, "value");
  /* summary vs series: finished points have series, unfinished ones not */
  for (int64_t i = 0; i < np; i++) {
    if (badrow[i]) continue;
    if (ds_verify_final(r[i].status) && !has[i] && !lost_index) {
      ds_verify_damaged(v, "point %" PRId64 ": %s in /summary but has no series", r[i].id,
                        ds_status_name(r[i].status));
      ds_verify_point(v, i);
    } else if (ds_verify_final(r[i].status) && !has[i]) {
      ds_verify_damaged(v, "point %" PRId64 ": %s but its series are not found (in the unreadable "
                        "/series/index rows?)", r[i].id, ds_status_name(r[i].status));
      ds_verify_point(v, i);
    } else if (!ds_verify_final(r[i].status) && has[i]) {
      ds_verify_damaged(v, "point %" PRId64 ": %s in /summary but has series", r[i].id,
                        ds_status_name(r[i].status));
      ds_verify_point(v, i);
    }
  }
done:
  free(has), free(rs), free(rv), free(lost), free(nlost);
  free(ci.buf), free(ci.bad), free(cs.buf), free(cs.bad), free(cv.buf), free(cv.bad);
  ds_store_free_strs(kn, nk);
}

/* ---- /checkpoints ----------------------------------------------------------------- */

typedef struct {
  ds_verify *v;
  const ds_summary_row *r;
  const unsigned char *badrow;
  int64_t n;
} ds_verify_ck;

static herr_t ds_verify_ckpt_cb(hid_t g, const char *name, const H5L_info_t *info, void *arg) {
  (void)g, (void)info;
  ds_verify_ck *c = arg;
  ds_verify *v = c->v;
  char *end, *blob = NULL;
  size_t len = 0;
  long long id = strtoll(name, &end, 10);
  int64_t row = *end || end == name ? -1 : ds_store_row_index(v->s, id);
  c->n++;
  if (row < 0) {
    ds_verify_damaged(v, "/checkpoints/%s names no point of the summary", name);
    return 0;
  }
  v->nread++;
  if (ds_store_read_ckpt(v->s, id, &blob, &len) != DS_OK) {
    const char *m = ds_errmsg(), *p = strstr(m, ": point ");
    ds_verify_damaged(v, "%s", p ? p + 2 : m);
    ds_clear_error();
    ds_verify_point(v, row);
  } else if (!c->badrow[row] && ds_verify_final(c->r[row].status)) {
    ds_verify_warn(v, "point %lld is %s but still has a checkpoint (never used)", id,
                   ds_status_name(c->r[row].status));
  }
  free(blob);
  H5Eclear2(H5E_DEFAULT);
  return 0;
}

static void ds_verify_ckpts(ds_verify *v, const ds_summary_row *r, const unsigned char *badrow) {
  char why[256];
  htri_t ex = H5Lexists(v->s->file, "checkpoints", H5P_DEFAULT);
  if (ex <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  hid_t g = H5Gopen2(v->s->file, "checkpoints", H5P_DEFAULT);
  ds_verify_ck c = {v, r, badrow, 0};
  hsize_t idx = 0;
  if (g < 0 || H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, ds_verify_ckpt_cb, &c) < 0)
    ds_verify_damaged(v, "/checkpoints cannot be listed: %s", ds_verify_why(why, sizeof why));
  if (g >= 0) H5Gclose(g);
}

/* ---- the journal ---------------------------------------------------------------- */

static int ds_verify_jrec(void *arg, uint32_t type, const char *p, size_t len) {
  int64_t *ids = arg; /* ids[0] = count, then up to 16 ids */
  int64_t id = -1;
  if ((type == DS_JR_RESULT || type == DS_JR_ROW || type == DS_JR_CKPT) && len >= sizeof id)
    memcpy(&id, p, sizeof id);
  if (ids[0] < 16) ids[1 + ids[0]] = id;
  ids[0]++;
  return DS_OK;
}

static void ds_verify_journal(ds_verify *v) {
  ds_store *s = v->s;
  char jpath[4200], uuid[40] = "";
  int64_t gen = -1;
  snprintf(jpath, sizeof jpath, "%s.journal", s->path);
  int fd = open(jpath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  ds_journal_hdr h;
  ds_store_get_text(s->file, "store_uuid", uuid, sizeof uuid);
  ds_store_get_i64(s->file, "generation", &gen);
  H5Eclear2(H5E_DEFAULT);
  if (fstat(fd, &st) != 0 || st.st_size <= DS_JOURNAL_HDR) {
    close(fd);
    return;
  }
  if (ds_journal_read_hdr(fd, &h) != 0) {
    ds_verify_warn(v, "%s: its header is damaged; a run ignores it (points it finished that are not "
                   "in the store run again)", jpath);
  } else if (h.uuid != strtoull(uuid, NULL, 16) || h.row_size != sizeof(ds_summary_row)) {
    ds_verify_warn(v, "%s belongs to another store (uuid %016" PRIx64 ", this store %s); a run "
                   "ignores it", jpath, h.uuid, uuid);
  } else if (h.base_gen != gen) {
    fprintf(v->out, "note: %s is of generation %" PRId64 " (the store is %" PRId64 "): already "
            "published, a run discards it\n", jpath, h.base_gen, gen);
  } else {
    int64_t ids[17] = {0}, end = 0, n = 0;
    ds_journal_scan(fd, ds_verify_jrec, ids, &end, &n);
    ds_clear_error();
    if (n > 0) {
      fprintf(v->out, "note: %s holds %" PRId64 " records not published yet (points", jpath, n);
      for (int64_t i = 0; i < n && i < 16; i++) fprintf(v->out, " %" PRId64, ids[1 + i]);
      fprintf(v->out, "%s); a run on this store replays them\n", n > 16 ? " ..." : "");
    }
    if (end < (int64_t)st.st_size)
      ds_verify_warn(v, "%s: %lld bytes from byte %" PRId64 " are torn or corrupt (a record cut "
                     "short by a kill, or damage); a run drops them and runs again what they "
                     "finished", jpath, (long long)(st.st_size - end), end);
  }
  close(fd);
}

/* ---- entry -------------------------------------------------------------------------- */

int ds_store_verify(const char *path, FILE *out, int64_t *ndamaged) {
  ds_store *s = NULL;
  char why[256];
  *ndamaged = 0;
  ds_store_silence_hdf5();
  DS_TRY(ds_store_check_file(path));
  int rc = ds_store_open_checked(path, &s, 0);
  if (rc != DS_OK) {
    fprintf(out, "damaged: %s\n", ds_errmsg());
    fprintf(out, "%s: DAMAGED: the store cannot be opened\n", path);
    ds_clear_error();
    *ndamaged = 1;
    return DS_OK;
  }
  ds_verify v = {s, out, 0, 0, NULL, s->npoints, 0};
  v.hurt = ds_calloc(s->npoints ? (size_t)s->npoints : 1, 1);
  if (!v.hurt) {
    ds_store_release(s);
    return DS_ENOMEM;
  }
  if (s->version < 4)
    fprintf(out, "note: %s: format_version %" PRId64 " has no checksums (written before format 4): "
            "checking that everything reads and is consistent\n", path, s->version);
  if (H5Ovisit2(s->file, H5_INDEX_NAME, H5_ITER_INC, ds_verify_obj_cb, &v, H5O_INFO_BASIC) < 0)
    ds_verify_damaged(&v, "the groups cannot be walked: %s", ds_verify_why(why, sizeof why));
  unsigned char *badrow = NULL;
  ds_summary_row *r = ds_verify_summary(&v, &badrow);
  if (s->map) ds_map_verify(s, out, &v.ndamaged, &v.nread);
  if (r) {
    if (!s->map) ds_verify_grid(&v, r, badrow); /* a map has no /grid/axis_values */
    if (s->version >= 3) ds_verify_series(&v, r, badrow);
    ds_verify_ckpts(&v, r, badrow);
  }
  int mask = 0;
  if (ds_store_digests_check(s, &mask) != DS_OK)
    for (int i = 0; i < DS_DIGESTS; i++)
      if (mask & (1 << i))
        ds_verify_damaged(&v, "%s fail their CRC-32 digest (%s)", ds_store_digest_what[i],
                          ds_store_digest_names[i]);
  ds_clear_error();
  H5Eclear2(H5E_DEFAULT);
  ds_verify_journal(&v);
  int64_t nhurt = 0;
  for (int64_t i = 0; i < s->npoints; i++) nhurt += v.hurt[i];
  if (v.ndamaged == 0 && s->map) {
    int64_t np = 0;
    uint8_t *o = NULL;
    if (ds_store_read_map_outcomes(s, &o, &np) != DS_OK) ds_clear_error();
    int64_t done = 0;
    for (int64_t i = 0; o && i < np; i++) done += o[i] != DS_MAP_UNSET;
    free(o);
    fprintf(out, "%s: OK: map store of %" PRId64 " points (%" PRId64 " computed or inferred), %"
            PRId64 " datasets read, all checksums and digests match, consistent\n", path, np, done,
            v.nread);
  } else if (v.ndamaged == 0) {
    fprintf(out, "%s: OK: %" PRId64 " points, %" PRId64 " datasets read, %s\n", path, s->npoints,
            v.nread, s->version >= 4 ? "all checksums and digests match, consistent"
                                     : "consistent (no checksums in this format)");
  } else {
    fprintf(out, "%s: DAMAGED: %" PRId64 " problem(s); %" PRId64 " point(s) affected", path,
            v.ndamaged, nhurt);
    int64_t shown = 0;
    for (int64_t i = 0; i < s->npoints && shown < 40; i++)
      if (v.hurt[i])
        fprintf(out, "%s%" PRId64, shown++ ? " " : ": ", r && !badrow[i] ? r[i].id : i);
    fprintf(out, "%s\n", nhurt > shown ? " ..." : "");
  }
  *ndamaged = v.ndamaged;
  free(r), free(badrow), free(v.hurt);
  ds_store_release(s);
  ds_clear_error();
  return DS_OK;
}
