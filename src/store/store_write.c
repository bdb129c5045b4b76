/* store_write.c -- the HDF5 content of a store (rank 0 only): root
 * attributes, /sweep, /grid, the /summary table, the sweep-wide /series tables
 * (format 3) and /checkpoints/<id> blobs. Serial HDF5 (sec2 driver), no
 * MPI. These functions write through the open handles of the file being
 * published (STORE.tmp, see publish.c); the layout is in docs/store.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "layout.h"
#include "store_priv.h"

static const char *ds_store_nz(const char *s) { return s ? s : ""; }

/* ---- create ---------------------------------------------------------------- */

static int ds_store_write_root_attrs(ds_store *s, const ds_store_meta *m) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, m->sweep_hash);
  hid_t f = s->file;
  if (ds_store_put_str(f, "format", DS_STORE_FORMAT) < 0 ||
      ds_store_put_i32(f, "format_version", s->segmented ? 5 : 4) < 0 ||
      ds_store_put_str(f, "dynsweep_version", ds_store_nz(m->dynsweep_version)) < 0 ||
      ds_store_put_str(f, "sweep_name", ds_store_nz(m->sweep_name)) < 0 ||
      ds_store_put_str(f, "sweep_hash", hash) < 0 ||
      ds_store_put_str(f, "library_versions", ds_store_nz(m->library_versions)) < 0 ||
      ds_store_put_str(f, "hosts", ds_store_nz(m->hosts)) < 0 ||
      ds_store_put_str(f, "start_time", ds_store_nz(m->start_time)) < 0 ||
      ds_store_put_str(f, "end_time", "") < 0 ||
      ds_store_put_str(f, "blas_kernel", ds_store_nz(m->blas_kernel)) < 0 ||
      ds_store_put_i32(f, "nranks", m->nranks) < 0 ||
      ds_store_put_f64(f, "rank0_cpu_s", 0.0) < 0 || ds_store_put_f64(f, "wall_s", 0.0) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
  char uuid[17];
  snprintf(uuid, sizeof uuid, "%016" PRIx64, s->uuid);
  if (ds_store_put_str(f, "store_uuid", uuid) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
  if (m->inputs && m->inputs_hash &&
      (ds_store_put_str(f, "inputs", m->inputs) < 0 || ds_store_put_str(f, "inputs_hash", m->inputs_hash) < 0))
    return ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
  return DS_OK;
}

/* Attributes that change while a sweep runs; written at every publish. */
int ds_store_h5_run_attrs(ds_store *s) {
  hid_t f = s->file;
  char now[40];
  ds_iso_time(now, sizeof now);
  int ok = ds_store_put_i64(f, "generation", s->gen + 1) >= 0 &&
           ds_store_put_str(f, "updated", now) >= 0 &&
           ds_store_put_f64(f, "updated_unix", ds_store_unix_now()) >= 0 &&
           ds_store_put_str(f, "run_state", s->run_state) >= 0 &&
           ds_store_put_f64(f, "session_start_unix", s->session_start) >= 0 &&
           ds_store_put_i64(f, "session_done0", s->session_done0) >= 0;
  if (ok && s->finished) ok = ds_store_put_str(f, "end_time", s->end_time) >= 0;
  if (ok) ok = ds_store_put_f64(f, "eta_unix", s->finished ? 0 : s->eta_unix) >= 0;
  if (ok && s->inputs && s->inputs_hash)
    ok = ds_store_put_str(f, "inputs", s->inputs) >= 0 && ds_store_put_str(f, "inputs_hash", s->inputs_hash) >= 0;
  if (ok && s->rank_nodes) ok = ds_store_put_str(f, "rank_nodes", s->rank_nodes) >= 0;
  if (ok && s->failed_pixels) ok = ds_store_put_str(f, "failed_pixels", s->failed_pixels) >= 0;
  /* totals include the finishing publish so far (all but closing, fsync and
   * rename of the file: a few ms) */
  double fw = s->fin_t0 > 0 ? ds_now() - s->fin_t0 : 0, fc = s->fin_t0 > 0 ? ds_cpu_time() - s->fin_c0 : 0;
  if (ok && s->have_totals)
    ok = ds_store_put_f64(f, "rank0_cpu_s", s->cpu_s + fc) >= 0 &&
         ds_store_put_f64(f, "wall_s", s->wall_s + fw) >= 0;
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
}

/* /sweep/yaml: the sweep file verbatim, attribute path. */
static int ds_store_write_sweep(ds_store *s, const ds_store_meta *m, int replace) {
  hid_t g = replace ? H5Gopen2(s->file, "sweep", H5P_DEFAULT)
                    : H5Gcreate2(s->file, "sweep", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g >= 0 && replace && H5Ldelete(g, "yaml", H5P_DEFAULT) < 0) {
    H5Gclose(g);
    g = -1;
  }
  hid_t t = ds_store_vlen_str(), sp = H5Screate(H5S_SCALAR), d = -1;
  const char *text = ds_store_nz(m->sweep_text);
  int ok = g >= 0 && t >= 0 && sp >= 0;
  hid_t dcpl = ds_store_dcpl_strs(1);
  if (ok) d = H5Dcreate2(g, "yaml", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0) H5Pclose(dcpl);
  ok = ok && d >= 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0 &&
       ds_store_put_str(d, "path", ds_store_nz(m->sweep_path)) >= 0;
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  if (g >= 0) H5Gclose(g);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot write /sweep/yaml");
}

/* Variable-length strings: the dataset holds references into HDF5's global
 * heap, which nothing checksums, and a damaged reference can crash HDF5 1.10
 * when read. A compact dataset keeps the references inside its object header,
 * which is checksummed (format 4); the strings themselves are covered by the
 * digests (integrity.c). Compact data must stay below 64 KiB: 16 bytes per
 * string. */
#define DS_STRS_COMPACT_MAX 3500
hid_t ds_store_dcpl_strs(int64_t n) {
  hid_t p = H5Pcreate(H5P_DATASET_CREATE);
  if (p < 0) return -1;
  if (H5Pset_obj_track_times(p, 0) < 0 ||
      (n <= DS_STRS_COMPACT_MAX && H5Pset_layout(p, H5D_COMPACT) < 0)) {
    H5Pclose(p);
    return -1;
  }
  return p;
}

/* A 1-D string dataset (n may be 0). */
static int ds_store_write_strs_dset(hid_t loc, const char *name, const char *const *v,
                                    int64_t n) {
  hsize_t dim = (hsize_t)n;
  hid_t t = ds_store_vlen_str(), sp = H5Screate_simple(1, &dim, NULL), d = -1;
  hid_t dcpl = ds_store_dcpl_strs(n);
  int ok = t >= 0 && sp >= 0 && dcpl >= 0;
  if (ok) d = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0) H5Pclose(dcpl);
  ok = ok && d >= 0 && (n == 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return ok ? 0 : -1;
}

/* Chunk rows of /summary and /grid/axis_values: small enough that a
 * damaged chunk names few points, large enough for a short chunk index. */
#define DS_ROWS_CHUNK 64

/* A float64 dataset of rank 2 (dims may be 0), chunked and checksummed. */
static int ds_store_write_f64_dset(hid_t loc, const char *name, const hsize_t *dims,
                                   const double *v) {
  /* fixed size; an empty dimension is unlimited (a chunk is >= 1) */
  hsize_t maxd[2] = {dims[0] ? dims[0] : H5S_UNLIMITED, dims[1] ? dims[1] : H5S_UNLIMITED};
  hsize_t chunk[2] = {dims[0] < 1 ? 1 : dims[0] > DS_ROWS_CHUNK ? DS_ROWS_CHUNK : dims[0],
                      dims[1] < 1 ? 1 : dims[1]};
  hid_t sp = H5Screate_simple(2, dims, maxd), d = -1, dcpl = ds_store_dcpl_sum(2, chunk);
  hsize_t count = dims[0] * dims[1];
  int ok = sp >= 0 && dcpl >= 0;
  if (ok) d = H5Dcreate2(loc, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0) H5Pclose(dcpl);
  ok = ok && d >= 0 &&
       (count == 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

/* /grid: axis_names, axis_paths (naxes strings), axis_values (npoints x naxes).
 * replace: the group exists (extension); its datasets are made anew. */
static int ds_store_write_grid(ds_store *s, const ds_store_meta *m, int replace) {
  hid_t g = replace ? H5Gopen2(s->file, "grid", H5P_DEFAULT)
                    : H5Gcreate2(s->file, "grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t dims[2] = {(hsize_t)m->npoints, (hsize_t)m->naxes};
  /* format 5: axis_values over blocks (a plain empty dataset while there are no values) */
  const struct ds_layout_ops *L = ds_layout_of(s);
  int blk = ds_layout_outside(s, DS_LY_GRID), vblk = blk && m->npoints > 0 && m->naxes > 0;
  if (g >= 0 && replace &&
      (H5Ldelete(g, "axis_names", H5P_DEFAULT) < 0 || H5Ldelete(g, "axis_paths", H5P_DEFAULT) < 0 ||
       (!vblk && H5Ldelete(g, "axis_values", H5P_DEFAULT) < 0))) {
    H5Gclose(g);
    g = -1;
  }
  int ok = g >= 0 && ds_store_put_i32(g, "naxes", m->naxes) >= 0 &&
           ds_store_write_strs_dset(g, "axis_names", m->axis_names, m->naxes) >= 0 &&
           ds_store_write_strs_dset(g, "axis_paths", m->axis_paths, m->naxes) >= 0 &&
           (vblk || ds_store_write_f64_dset(g, "axis_values", dims, m->point_axis_vals) >= 0);
  if (ok && blk && !vblk) {
    hid_t d = H5Dopen2(g, "axis_values", H5P_DEFAULT);
    ok = d >= 0 && L->mark_new(s, DS_LY_GRID, d) >= 0;
    if (d >= 0) H5Dclose(d);
  }
  if (g >= 0) H5Gclose(g);
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot write /grid");
  if (!vblk) return DS_OK;
  return L->put_grid(s, m);
}

/* /summary: all rows, fixed size (rows are later updated in place). */
static int ds_store_write_summary(ds_store *s, const ds_summary_row *rows) {
  const struct ds_layout_ops *L = ds_layout_of(s);
  int blk = ds_layout_outside(s, DS_LY_SUMMARY);
  if (blk && s->npoints > 0) return L->put_summary(s, rows, 1);
  hsize_t n = (hsize_t)s->npoints, maxd = n ? n : H5S_UNLIMITED;
  hsize_t chunk = n < 1 ? 1 : n > DS_ROWS_CHUNK ? DS_ROWS_CHUNK : n;
  hid_t ft = ds_store_row_filetype(), sp = H5Screate_simple(1, &n, &maxd);
  hid_t dcpl = ds_store_dcpl_sum(1, &chunk);
  int ok = ft >= 0 && sp >= 0 && dcpl >= 0;
  if (ok) s->summary = H5Dcreate2(s->file, "summary", ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0) H5Pclose(dcpl);
  ok = ok && s->summary >= 0 &&
       ds_store_put_str(s->summary, "status_names",
                        "0=pending,1=done,2=diverged,3=failed,4=running") >= 0 &&
       (!blk || L->mark_new(s, DS_LY_SUMMARY, s->summary) >= 0);
  if (ok && n > 0) {
    ds_summary_row *copy = malloc(n * sizeof *copy);
    ok = copy != NULL;
    if (ok) {
      memcpy(copy, rows, n * sizeof *copy);
      for (hsize_t i = 0; i < n; i++) copy[i].reason[DS_STORE_REASON_LEN - 1] = 0;
      ok = H5Dwrite(s->summary, s->row_mem, H5S_ALL, H5S_ALL, ds_store_dxpl(), copy) >= 0;
      free(copy);
    }
  }
  if (ft >= 0) H5Tclose(ft);
  if (sp >= 0) H5Sclose(sp);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot write /summary");
}

static int ds_store_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Copies the row ids; they must be unique so a point maps to one row. */
int ds_store_take_ids(ds_store *s, const ds_summary_row *rows) {
  int dense = 1;
  free(s->ids);
  s->ids = ds_calloc(s->npoints ? (size_t)s->npoints : 1, sizeof *s->ids);
  if (!s->ids) return DS_ENOMEM;
  for (int64_t i = 0; i < s->npoints; i++) {
    s->ids[i] = rows[i].id;
    dense = dense && rows[i].id == i;
  }
  if (dense) return DS_OK;
  int64_t *sorted = ds_calloc(s->npoints ? (size_t)s->npoints : 1, sizeof *sorted);
  if (!sorted) return DS_ENOMEM;
  memcpy(sorted, s->ids, s->npoints * sizeof *sorted);
  qsort(sorted, s->npoints, sizeof *sorted, ds_store_cmp_i64);
  int rc = DS_OK;
  for (int64_t i = 1; i < s->npoints && rc == DS_OK; i++)
    if (sorted[i] == sorted[i - 1])
      rc = ds_fail(DS_EINTERNAL, "%s: duplicate point id %" PRId64 " in summary rows", s->path,
                   sorted[i]);
  free(sorted);
  return rc;
}

int ds_store_check_meta(const char *path, const ds_store_meta *m,
                               const ds_summary_row *rows) {
  if (!m || m->npoints < 0 || m->naxes < 0 || (m->npoints > 0 && !rows) ||
      (m->naxes > 0 && (!m->axis_names || !m->axis_paths)) ||
      (m->naxes > 0 && m->npoints > 0 && !m->point_axis_vals))
    return ds_fail(DS_EINTERNAL, "%s: ds_store_create: inconsistent store metadata", path);
  for (int a = 0; a < m->naxes; a++)
    if (!m->axis_names[a] || !m->axis_paths[a])
      return ds_fail(DS_EINTERNAL, "%s: ds_store_create: axis %d has no name/path", path, a);
  return DS_OK;
}

static int ds_store_create_series(ds_store *s);

/* The whole layout of a new store in the open, empty s->file. */
int ds_store_create_layout(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows) {
  s->row_mem = ds_store_row_memtype();
  if (s->row_mem < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot build summary row type");
  DS_TRY(ds_store_take_ids(s, rows));
  DS_TRY(ds_store_write_root_attrs(s, m));
  const struct ds_layout_ops *L = ds_layout_of(s);
  if (L->h5_create) DS_TRY(L->h5_create(s, m)); /* its files' directory, which datasets go there */
  DS_TRY(ds_store_write_sweep(s, m, 0));
  DS_TRY(ds_store_write_grid(s, m, 0));
  DS_TRY(ds_store_write_summary(s, rows));
  s->version = s->segmented ? 5 : 4;
  DS_TRY(ds_store_create_series(s));
  if (L->h5_series) DS_TRY(L->h5_series(s));
  hid_t c = H5Gcreate2(s->file, "checkpoints", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (c < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot create /checkpoints");
  H5Gclose(c);
  return DS_OK;
}

/* Extension: new sweep text/name/hash, grid and summary (all rows anew). */
int ds_store_h5_extend(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, m->sweep_hash);
  if (ds_store_put_str(s->file, "sweep_name", ds_store_nz(m->sweep_name)) < 0 ||
      ds_store_put_str(s->file, "sweep_hash", hash) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
  DS_TRY(ds_store_write_sweep(s, m, 1));
  DS_TRY(ds_store_write_grid(s, m, 1));
  if (ds_layout_outside(s, DS_LY_SUMMARY)) { /* format 5: every block anew at the end of the publish */
    s->npoints = m->npoints;
    ds_layout_of(s)->mark(s, -1);
    return ds_store_take_ids(s, rows);
  }
  if (s->summary >= 0) H5Dclose(s->summary);
  s->summary = -1;
  if (H5Ldelete(s->file, "summary", H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot replace /summary");
  s->npoints = m->npoints;
  DS_TRY(ds_store_take_ids(s, rows));
  return ds_store_write_summary(s, rows);
}

/* ---- points: the sweep-wide series tables (format version 3) ------------------ */

/* A series name is one or more '/'-separated non-empty components, none of
 * them "." or "..". */
static int ds_store_check_series_name(const char *name) {
  size_t len = strnlen(name, sizeof(((ds_series *)0)->name));
  if (len == 0 || len == sizeof(((ds_series *)0)->name)) return -1;
  const char *p = name;
  while (*p) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return -1;
    if (!e) break;
    if (!e[1]) return -1; /* trailing '/' */
    p = e + 1;
  }
  return 0;
}

static int ds_store_check_traj(const ds_store *s, int64_t id, const ds_traj *t) {
  for (int i = 0; t && i < t->n; i++) {
    const ds_series *ser = &t->s[i];
    if (ds_store_check_series_name(ser->name) < 0)
      return ds_fail(DS_EINTERNAL, "%s: point %" PRId64 ": bad series name '%.64s'", s->path, id,
                     ser->name);
    if (ser->ncols < 1 || ser->n < 0 || (ser->n > 0 && (!ser->step || !ser->val)))
      return ds_fail(DS_EINTERNAL, "%s: point %" PRId64 ": series %s is malformed", s->path, id,
                     ser->name);
  }
  return DS_OK;
}

static int ds_store_row_for(ds_store *s, const ds_summary_row *row, int64_t *idx) {
  *idx = ds_store_row_index(s, row->id);
  if (*idx < 0)
    return ds_fail(DS_EINTERNAL, "%s: point id %" PRId64 " is not in /summary", s->path, row->id);
  return DS_OK;
}

int ds_store_check_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj) {
  int64_t idx;
  DS_TRY(ds_store_row_for(s, row, &idx));
  return ds_store_check_traj(s, row->id, traj);
}

/* Chunk sizes (elements) of the extendible /series datasets: 16 KiB chunks of
 * step and value keep the unused tail of the last chunk small for small
 * stores; the chunk index (extensible array) stays small for large ones. */
#define DS_SERIES_CHUNK 2048
#define DS_INDEX_CHUNK 256

static hid_t ds_store_ext_dset(hid_t loc, const char *name, hid_t type, hsize_t chunk) {
  hsize_t zero = 0, maxd = H5S_UNLIMITED;
  /* Fletcher32 on numbers; HDF5 filters cannot take variable-length strings
   * (the digests of integrity.c cover those) */
  int vlen = H5Tis_variable_str(type) > 0;
  hid_t sp = H5Screate_simple(1, &zero, &maxd), d = -1;
  hid_t dcpl = vlen ? H5Pcreate(H5P_DATASET_CREATE) : ds_store_dcpl_sum(1, &chunk);
  if (sp >= 0 && dcpl >= 0 &&
      (!vlen || (H5Pset_chunk(dcpl, 1, &chunk) >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0)) &&
      (vlen || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) >= 0))
    d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (sp >= 0) H5Sclose(sp);
  if (dcpl >= 0) H5Pclose(dcpl);
  return d;
}

/* /series: names, units, definitions (one row per series kind), index (one
 * row per written series of a point), step and value (all records). */
static int ds_store_create_series(ds_store *s) {
  hid_t g = H5Gcreate2(s->file, "series", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t str = ds_store_vlen_str(), it = ds_store_idx_filetype();
  int ok = g >= 0 && str >= 0 && it >= 0;
  const char *names[] = {"names", "units", "definitions"};
  for (int i = 0; ok && i < 3; i++) /* compact (see ds_store_dcpl_strs); rewritten when kinds are added */
    ok = ds_store_write_strs_dset(g, names[i], NULL, 0) >= 0;
  hid_t d1 = ok ? ds_store_ext_dset(g, "index", it, DS_INDEX_CHUNK) : -1;
  hid_t d2 = d1 >= 0 ? ds_store_ext_dset(g, "step", H5T_STD_I64LE, DS_SERIES_CHUNK) : -1;
  hid_t d3 = d2 >= 0 ? ds_store_ext_dset(g, "value", H5T_IEEE_F64LE, DS_SERIES_CHUNK) : -1;
  ok = ok && d3 >= 0 &&
       (!ds_layout_outside(s, DS_LY_INDEX) || ds_layout_of(s)->mark_new(s, DS_LY_INDEX, d1) >= 0);
  if (d1 >= 0) H5Dclose(d1);
  if (d2 >= 0) H5Dclose(d2);
  if (d3 >= 0) H5Dclose(d3);
  if (str >= 0) H5Tclose(str);
  if (it >= 0) H5Tclose(it);
  s->series = g;
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot create /series");
}

/* What a publish appends to /series, gathered from the journal records and
 * written at the end with one write per dataset. */
static const char *const ds_store_series_dsets[6] = {"names", "units", "definitions",
                                                     "index", "step", "value"};

static int64_t ds_store_dset_len(hid_t d) {
  hid_t sp = H5Dget_space(d);
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  return (int64_t)n;
}

/* Opens /series of the file being published and reads its kinds. */
int ds_store_h5_begin(ds_store *s) {
  ds_store_h5_abort(s);
  if (ds_layout_of(s)->begin) ds_layout_of(s)->begin(s);
  struct ds_store_batch *b = ds_calloc(1, sizeof *b);
  if (!b) return DS_ENOMEM;
  for (int i = 0; i < 6; i++) b->d[i] = -1;
  s->batch = b;
  int ok = s->series >= 0;
  for (int i = 0; ok && i < 6; i++) ok = (b->d[i] = H5Dopen2(s->series, ds_store_series_dsets[i], H5P_DEFAULT)) >= 0;
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot open /series");
  b->nidx0 = ds_store_dset_len(b->d[3]);
  b->nstep0 = ds_store_dset_len(b->d[4]);
  b->nval0 = ds_store_dset_len(b->d[5]);
  char **v[3] = {NULL, NULL, NULL};
  int64_t n[3] = {0, 0, 0};
  for (int i = 0; ok && i < 3; i++) ok = ds_store_get_strs_dset(b->d[i], &v[i], &n[i]) >= 0;
  if (!ok || n[0] != n[1] || n[0] != n[2] || b->nidx0 < 0 || b->nstep0 < 0 || b->nval0 < 0) {
    for (int i = 0; i < 3; i++) ds_store_free_strs(v[i], n[i]);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /series (damaged?)");
  }
  b->kn = v[0], b->ku = v[1], b->kd = v[2];
  b->nk = b->nk0 = b->kcap = n[0];
  H5G_info_t gi;
  hid_t c = H5Gopen2(s->file, "checkpoints", H5P_DEFAULT);
  b->ckpts = c < 0 || H5Gget_info(c, &gi) < 0 || gi.nlinks > 0;
  if (c >= 0) H5Gclose(c);
  H5Eclear2(H5E_DEFAULT);
  return DS_OK;
}

static int ds_store_grow(void **p, int64_t *cap, int64_t need, size_t esize) {
  if (need <= *cap) return 0;
  int64_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * esize);
  if (!q) return -1;
  *p = q;
  *cap = c;
  return 0;
}

static int64_t ds_store_kind(struct ds_store_batch *b, const char *name, const char *unit,
                             const char *def) {
  for (int64_t k = 0; k < b->nk; k++)
    if (!strcmp(b->kn[k], name) && !strcmp(b->ku[k], unit) && !strcmp(b->kd[k], def)) return k;
  if (b->nk == b->kcap) {
    int64_t c = b->kcap ? 2 * b->kcap : 16;
    char **a = realloc(b->kn, c * sizeof *a);
    if (a) b->kn = a;
    char **u = a ? realloc(b->ku, c * sizeof *u) : NULL;
    if (u) b->ku = u;
    char **d = u ? realloc(b->kd, c * sizeof *d) : NULL;
    if (d) b->kd = d;
    if (!d) return -1;
    b->kcap = c;
  }
  b->kn[b->nk] = ds_strdup(name);
  b->ku[b->nk] = ds_strdup(unit);
  b->kd[b->nk] = ds_strdup(def);
  if (!b->kn[b->nk] || !b->ku[b->nk] || !b->kd[b->nk]) {
    free(b->kn[b->nk]), free(b->ku[b->nk]), free(b->kd[b->nk]);
    return -1;
  }
  return b->nk++;
}

/* A rewrite of point id: its older index rows (in the file and in this
 * batch) are marked superseded (point = -1). Rare (the scheduler writes a
 * point once). */
static int ds_store_supersede(ds_store *s, int64_t id) {
  struct ds_store_batch *b = s->batch;
  for (int64_t i = 0; i < b->nidx; i++)
    if (b->idx[i].point == id) b->idx[i].point = -1;
  if (b->nidx0 == 0) return DS_OK;
  if (ds_layout_outside(s, DS_LY_INDEX)) { /* format 5: the blocks holding its rows are rewritten at the end */
    if (ds_store_grow((void **)&b->sup, &b->csup, b->nsup + 1, sizeof *b->sup) < 0) return DS_ENOMEM;
    b->sup[b->nsup++] = id;
    return DS_OK;
  }
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
  int64_t *pt = malloc((size_t)b->nidx0 * sizeof *pt);
  int ok = t >= 0 && pt && H5Tinsert(t, "point", 0, H5T_NATIVE_INT64) >= 0 &&
           H5Dread(b->d[3], t, H5S_ALL, H5S_ALL, H5P_DEFAULT, pt) >= 0;
  for (int64_t i = 0; ok && i < b->nidx0; i++)
    if (pt[i] == id) pt[i] = -1;
  ok = ok && H5Dwrite(b->d[3], t, H5S_ALL, H5S_ALL, H5P_DEFAULT, pt) >= 0;
  free(pt);
  if (t >= 0) H5Tclose(t);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot rewrite /series/index");
}

/* Adds point row->id's series to the publish batch (summary rows are
 * written from s->rows at the end of the publish). */
int ds_store_h5_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj) {
  int64_t idx = -1;
  struct ds_store_batch *b = s->batch;
  DS_TRY(ds_store_row_for(s, row, &idx));
  DS_TRY(ds_store_check_traj(s, row->id, traj));
  if (!b) return ds_fail(DS_EINTERNAL, "%s: write_point outside a publish", s->path);
  if (s->written && s->written[idx]) DS_TRY(ds_store_supersede(s, row->id));
  for (int i = 0; traj && i < traj->n; i++) {
    const ds_series *ser = &traj->s[i];
    char unit[sizeof ser->unit + 1], def[sizeof ser->definition + 1];
    snprintf(unit, sizeof unit, "%.*s", (int)sizeof ser->unit, ser->unit);
    snprintf(def, sizeof def, "%.*s", (int)sizeof ser->definition, ser->definition);
    int64_t k = ds_store_kind(b, ser->name, unit, def);
    int64_t nv = ser->n * ser->ncols;
    if (k < 0 || ds_store_grow((void **)&b->idx, &b->icap, b->nidx + 1, sizeof *b->idx) < 0 ||
        ds_store_grow((void **)&b->step, &b->scap, b->nstep + ser->n, sizeof *b->step) < 0 ||
        ds_store_grow((void **)&b->val, &b->vcap, b->nval + nv, sizeof *b->val) < 0)
      return ds_fail(DS_ENOMEM, "%s: out of memory publishing point %" PRId64, s->path, row->id);
    ds_store_idx *x = &b->idx[b->nidx++];
    x->point = row->id;
    x->kind = (int32_t)k;
    x->ncols = ser->ncols;
    x->n = ser->n;
    x->step_start = b->nstep0 + b->nstep;
    x->value_start = b->nval0 + b->nval;
    if (ser->n) {
      memcpy(b->step + b->nstep, ser->step, (size_t)ser->n * sizeof *b->step);
      memcpy(b->val + b->nval, ser->val, (size_t)nv * sizeof *b->val);
    }
    b->nstep += ser->n;
    b->nval += nv;
  }
  if (!traj || traj->n == 0) { /* no series: one row of kind -1 says it was written */
    if (ds_store_grow((void **)&b->idx, &b->icap, b->nidx + 1, sizeof *b->idx) < 0)
      return ds_fail(DS_ENOMEM, "%s: out of memory publishing point %" PRId64, s->path, row->id);
    b->idx[b->nidx++] = (ds_store_idx){row->id, -1, 1, 0, b->nstep0 + b->nstep, b->nval0 + b->nval};
  }
  if (s->written) s->written[idx] = 1;
  return b->ckpts ? ds_store_h5_drop_ckpt(s, row->id) : DS_OK;
}

/* Appends n elements of buf to the 1-D dataset d (now n0 long). */
static int ds_store_append(hid_t d, int64_t n0, int64_t n, hid_t mtype, const void *buf) {
  if (n == 0) return 0;
  hsize_t size = (hsize_t)(n0 + n), start = (hsize_t)n0, cnt = (hsize_t)n;
  if (H5Dset_extent(d, &size) < 0) return -1;
  hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, &cnt, NULL);
  int ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL) >= 0 &&
           H5Dwrite(d, mtype, ms, fs, ds_store_dxpl(), buf) >= 0;
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  return ok ? 0 : -1;
}

/* Summary rows [lo, hi) from s->rows, one write. */
static int ds_store_write_rows(ds_store *s, int64_t lo, int64_t hi) {
  if (hi <= lo) return DS_OK;
  hsize_t start = (hsize_t)lo, cnt = (hsize_t)(hi - lo);
  ds_summary_row *r = malloc((size_t)cnt * sizeof *r);
  if (!r) return DS_ENOMEM;
  memcpy(r, s->rows + lo, (size_t)cnt * sizeof *r);
  for (hsize_t i = 0; i < cnt; i++) r[i].reason[DS_STORE_REASON_LEN - 1] = 0;
  hid_t fs = H5Dget_space(s->summary), ms = H5Screate_simple(1, &cnt, NULL);
  int ok = fs >= 0 && ms >= 0 &&
           H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &cnt, NULL) >= 0 &&
           H5Dwrite(s->summary, s->row_mem, ms, fs, ds_store_dxpl(), r) >= 0;
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  free(r);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot update /summary rows");
}

/* A /summary written before a field was added (attempts, issue 11) is
 * replaced by one of today's row type holding all rows, so the new field is
 * kept from now on (readers read either type; format_version unchanged).
 * *done = 1 if it did (all rows written). */
static int ds_store_upgrade_summary(ds_store *s, int *done) {
  hid_t ft = H5Dget_type(s->summary);
  int old = ft >= 0 && H5Tget_member_index(ft, "attempts") < 0;
  if (ft >= 0) H5Tclose(ft);
  *done = 0;
  if (!old) return DS_OK;
  H5Dclose(s->summary);
  s->summary = -1;
  if (H5Ldelete(s->file, "summary", H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot replace /summary of an older row type");
  DS_TRY(ds_store_write_summary(s, s->rows));
  *done = 1;
  return DS_OK;
}

/* End of a publish: appends the batch to /series and writes the summary rows
 * that changed. */
int ds_store_h5_end(ds_store *s) {
  struct ds_store_batch *b = s->batch;
  const struct ds_layout_ops *L = ds_layout_of(s);
  int ok = 1;
  if (b) {
    hid_t str = ds_store_vlen_str(), it = ds_store_idx_memtype();
    int64_t nk = b->nk - b->nk0;
    char **kv[3] = {b->kn, b->ku, b->kd};
    ok = str >= 0 && it >= 0;
    for (int i = 0; ok && nk > 0 && i < 3; i++) { /* the kinds anew, all of them */
      H5Dclose(b->d[i]);
      b->d[i] = -1;
      ok = H5Ldelete(s->series, ds_store_series_dsets[i], H5P_DEFAULT) >= 0 &&
           ds_store_write_strs_dset(s->series, ds_store_series_dsets[i], (const char *const *)kv[i],
                                    b->nk) >= 0;
    }
    int rc = DS_OK;
    if (ok && L->put_series) { /* format 5: a new segment, the VDS anew */
      for (int i = 4; i < 6; i++) {
        H5Dclose(b->d[i]);
        b->d[i] = -1;
      }
      rc = L->put_series(s, b);
    } else if (ok) {
      ok = ds_store_append(b->d[4], b->nstep0, b->nstep, H5T_NATIVE_INT64, b->step) >= 0 &&
           ds_store_append(b->d[5], b->nval0, b->nval, H5T_NATIVE_DOUBLE, b->val) >= 0;
    }
    if (rc != DS_OK) {
      H5Tclose(str);
      H5Tclose(it);
      ds_store_h5_abort(s);
      return rc;
    }
    if (ok && ds_layout_outside(s, DS_LY_INDEX)) rc = L->put_index(s, b);
    else ok = ok && ds_store_append(b->d[3], b->nidx0, b->nidx, it, b->idx) >= 0;
    if (str >= 0) H5Tclose(str);
    if (it >= 0) H5Tclose(it);
    ds_store_h5_abort(s);
    DS_TRY(rc);
  }
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot append to /series");
  if (ds_layout_outside(s, DS_LY_SUMMARY)) return L->put_rows(s, b != NULL); /* format 5: the dirty blocks */
  if (L->sync) L->sync(s);
  int all = 0;
  DS_TRY(ds_store_upgrade_summary(s, &all));
  return all ? DS_OK : ds_store_write_rows(s, s->dirty_lo, s->dirty_hi);
}

void ds_store_mark_dirty(ds_store *s, int64_t idx) {
  if (ds_layout_of(s)->mark) ds_layout_of(s)->mark(s, idx);
  if (s->dirty_hi <= s->dirty_lo) {
    s->dirty_lo = idx;
    s->dirty_hi = idx + 1;
    return;
  }
  if (idx < s->dirty_lo) s->dirty_lo = idx;
  if (idx + 1 > s->dirty_hi) s->dirty_hi = idx + 1;
}

/* Writer: which summary rows have series in the published file. */
int ds_store_load_written(ds_store *s) {
  free(s->written);
  s->written = ds_calloc(s->npoints ? (size_t)s->npoints : 1, 1);
  if (!s->written) return DS_ENOMEM;
  if (s->version < 3) return DS_OK;
  ds_store_idx *x = NULL;
  int64_t n = 0;
  DS_TRY(ds_store_read_index(s, &x, &n));
  for (int64_t i = 0; i < n; i++) {
    int64_t r = x[i].point >= 0 ? ds_store_row_index(s, x[i].point) : -1;
    if (r >= 0) s->written[r] = 1;
  }
  free(x);
  return DS_OK;
}

/* ---- checkpoints ------------------------------------------------------------ */

/* /checkpoints/<id>: a chunked 1-D uint8 dataset, extended or shrunk and
 * overwritten in place, so replacing a checkpoint reuses its chunks. */
int ds_store_h5_write_ckpt(ds_store *s, int64_t id, const char *blob, size_t len) {
  char name[32];
  ds_store_point_name(id, name, sizeof name);
  hid_t g = H5Gopen2(s->file, "checkpoints", H5P_DEFAULT);
  if (g < 0) { /* a version-1 store: add the group */
    H5Eclear2(H5E_DEFAULT);
    g = H5Gcreate2(s->file, "checkpoints", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  }
  if (g < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot open /checkpoints");
  hsize_t n = (hsize_t)len, maxd = H5S_UNLIMITED;
  hid_t d = -1, sp = -1, dcpl = -1;
  htri_t ex = H5Lexists(g, name, H5P_DEFAULT);
  int ok = ex >= 0;
  if (ok && ex > 0) {
    d = H5Dopen2(g, name, H5P_DEFAULT);
    ok = d >= 0 && H5Dset_extent(d, &n) >= 0;
  } else if (ok) {
    hsize_t chunk = len < 4096 ? 4096 : len > (1u << 20) ? (1u << 20) : (hsize_t)len;
    sp = H5Screate_simple(1, &n, &maxd);
    dcpl = ds_store_dcpl_sum(1, &chunk);
    ok = sp >= 0 && dcpl >= 0;
    if (ok) d = H5Dcreate2(g, name, H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ok = ok && d >= 0;
  }
  char now[40];
  ds_iso_time(now, sizeof now);
  ok = ok && (len == 0 || H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob) >= 0) &&
       ds_store_put_i64(d, "bytes", (int64_t)len) >= 0 && ds_store_put_str(d, "time", now) >= 0 &&
       ds_store_put_i64(d, "crc32", (int64_t)ds_crc32(blob, len, 0)) >= 0;
  if (dcpl >= 0) H5Pclose(dcpl);
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  H5Gclose(g);
  return ok ? DS_OK
            : ds_store_h5fail(DS_EIO, s->path, "cannot write /checkpoints/%s (%zu bytes)", name, len);
}

int ds_store_h5_drop_ckpt(ds_store *s, int64_t id) {
  char name[64];
  snprintf(name, sizeof name, "checkpoints/%06" PRId64, id);
  htri_t g = H5Lexists(s->file, "checkpoints", H5P_DEFAULT);
  htri_t ex = g > 0 ? H5Lexists(s->file, name, H5P_DEFAULT) : 0;
  if (ex > 0 && H5Ldelete(s->file, name, H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot delete /%s", name);
  H5Eclear2(H5E_DEFAULT);
  return DS_OK;
}

