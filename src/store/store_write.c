/* store_write.c -- the HDF5 content of a store (rank 0 only): root
 * attributes, /sweep, /grid, the /summary table, one /points/<id> group per
 * finished point and /checkpoints/<id> blobs. Serial HDF5 (sec2 driver), no
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
#include "store_priv.h"

static const char *ds_store_nz(const char *s) { return s ? s : ""; }

/* ---- create ---------------------------------------------------------------- */

static int ds_store_write_root_attrs(ds_store *s, const ds_store_meta *m) {
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, m->sweep_hash);
  hid_t f = s->file;
  if (ds_store_put_str(f, "format", DS_STORE_FORMAT) < 0 ||
      ds_store_put_i32(f, "format_version", DS_STORE_FORMAT_VERSION) < 0 ||
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
  if (ok && s->have_totals)
    ok = ds_store_put_f64(f, "rank0_cpu_s", s->cpu_s) >= 0 &&
         ds_store_put_f64(f, "wall_s", s->wall_s) >= 0;
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
  if (ok) d = H5Dcreate2(g, "yaml", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ok = ok && d >= 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text) >= 0 &&
       ds_store_put_str(d, "path", ds_store_nz(m->sweep_path)) >= 0;
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  if (g >= 0) H5Gclose(g);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot write /sweep/yaml");
}

/* A 1-D string dataset (n may be 0). */
static int ds_store_write_strs_dset(hid_t loc, const char *name, const char *const *v,
                                    int64_t n) {
  hsize_t dim = (hsize_t)n;
  hid_t t = ds_store_vlen_str(), sp = H5Screate_simple(1, &dim, NULL), d = -1;
  int ok = t >= 0 && sp >= 0;
  if (ok) d = H5Dcreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ok = ok && d >= 0 && (n == 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return ok ? 0 : -1;
}

/* A float64 dataset of rank 1 or 2 (dims may be 0). */
static int ds_store_write_f64_dset(hid_t loc, const char *name, int rank, const hsize_t *dims,
                                   const double *v, hid_t dcpl) {
  hid_t sp = H5Screate_simple(rank, dims, NULL), d = -1;
  hsize_t count = dims[0] * (rank > 1 ? dims[1] : 1);
  int ok = sp >= 0;
  if (ok) d = H5Dcreate2(loc, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ok = ok && d >= 0 &&
       (count == 0 || H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

static int ds_store_write_i64_dset(hid_t loc, const char *name, hsize_t n, const int64_t *v,
                                   hid_t dcpl) {
  hid_t sp = H5Screate_simple(1, &n, NULL), d = -1;
  int ok = sp >= 0;
  if (ok) d = H5Dcreate2(loc, name, H5T_STD_I64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ok = ok && d >= 0 &&
       (n == 0 || H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
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
  if (g >= 0 && replace &&
      (H5Ldelete(g, "axis_names", H5P_DEFAULT) < 0 || H5Ldelete(g, "axis_paths", H5P_DEFAULT) < 0 ||
       H5Ldelete(g, "axis_values", H5P_DEFAULT) < 0)) {
    H5Gclose(g);
    g = -1;
  }
  int ok = g >= 0 && ds_store_put_i32(g, "naxes", m->naxes) >= 0 &&
           ds_store_write_strs_dset(g, "axis_names", m->axis_names, m->naxes) >= 0 &&
           ds_store_write_strs_dset(g, "axis_paths", m->axis_paths, m->naxes) >= 0 &&
           ds_store_write_f64_dset(g, "axis_values", 2, dims, m->point_axis_vals, H5P_DEFAULT) >= 0;
  if (g >= 0) H5Gclose(g);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot write /grid");
}

/* /summary: all rows, fixed size (rows are later updated in place). */
static int ds_store_write_summary(ds_store *s, const ds_summary_row *rows) {
  hsize_t n = (hsize_t)s->npoints;
  hid_t ft = ds_store_row_filetype(), sp = H5Screate_simple(1, &n, NULL);
  int ok = ft >= 0 && sp >= 0;
  if (ok) s->summary = H5Dcreate2(s->file, "summary", ft, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ok = ok && s->summary >= 0 &&
       ds_store_put_str(s->summary, "status_names",
                        "0=pending,1=done,2=diverged,3=failed,4=running") >= 0;
  if (ok && n > 0) {
    ds_summary_row *copy = malloc(n * sizeof *copy);
    ok = copy != NULL;
    if (ok) {
      memcpy(copy, rows, n * sizeof *copy);
      for (hsize_t i = 0; i < n; i++) copy[i].reason[DS_STORE_REASON_LEN - 1] = 0;
      ok = H5Dwrite(s->summary, s->row_mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, copy) >= 0;
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

/* The whole layout of a new store in the open, empty s->file. */
int ds_store_create_layout(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows) {
  s->row_mem = ds_store_row_memtype();
  if (s->row_mem < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot build summary row type");
  DS_TRY(ds_store_take_ids(s, rows));
  DS_TRY(ds_store_write_root_attrs(s, m));
  DS_TRY(ds_store_write_sweep(s, m, 0));
  DS_TRY(ds_store_write_grid(s, m, 0));
  DS_TRY(ds_store_write_summary(s, rows));
  s->points = H5Gcreate2(s->file, "points", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (s->points < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot create /points");
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
  if (s->summary >= 0) H5Dclose(s->summary);
  s->summary = -1;
  if (H5Ldelete(s->file, "summary", H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot replace /summary");
  s->npoints = m->npoints;
  DS_TRY(ds_store_take_ids(s, rows));
  return ds_store_write_summary(s, rows);
}

ds_store *ds_store_alloc(const char *path) {
  ds_store *s = ds_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->path = ds_strdup(path);
  if (!s->path) {
    free(s);
    return NULL;
  }
  s->file = s->summary = s->points = s->row_mem = -1;
  s->jfd = -1;
  return s;
}

/* ---- points ---------------------------------------------------------------- */

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

/* Creates the groups of "a/b/c" (all components) under pg, reusing any
 * that exist (e.g. "sv" shared by "sv/W1" and "sv/W2"). Returns the series
 * group or -1. */
static hid_t ds_store_series_group(hid_t pg, const char *name, hid_t gcpl) {
  char prefix[64];
  size_t len = strlen(name);
  for (size_t i = 0; i <= len; i++) {
    if (name[i] != '/' && name[i] != 0) continue;
    memcpy(prefix, name, i);
    prefix[i] = 0;
    if (name[i] == 0) return H5Gcreate2(pg, prefix, H5P_DEFAULT, gcpl, H5P_DEFAULT);
    htri_t ex = H5Lexists(pg, prefix, H5P_DEFAULT);
    if (ex < 0) return -1;
    if (!ex) {
      hid_t g = H5Gcreate2(pg, prefix, H5P_DEFAULT, gcpl, H5P_DEFAULT);
      if (g < 0) return -1;
      H5Gclose(g);
    }
  }
  return -1;
}

/* Creation property lists for a point's groups and datasets. */
typedef struct {
  hid_t group, step, value;
} ds_store_plists;

static int ds_store_plists_open(ds_store_plists *pl) {
  pl->group = ds_store_gcpl(2);
  pl->step = ds_store_dcpl(1);
  pl->value = ds_store_dcpl(0);
  return pl->group >= 0 && pl->step >= 0 && pl->value >= 0 ? 0 : -1;
}

static void ds_store_plists_close(ds_store_plists *pl) {
  if (pl->group >= 0) H5Pclose(pl->group);
  if (pl->step >= 0) H5Pclose(pl->step);
  if (pl->value >= 0) H5Pclose(pl->value);
}

/* <series>/step (int64, n) and <series>/value (float64, n or n x ncols). */
static int ds_store_write_series(ds_store *s, hid_t pg, const ds_store_plists *pl,
                                 const ds_series *ser) {
  hid_t g = ds_store_series_group(pg, ser->name, pl->group);
  if (g < 0) return -1;
  hsize_t dims[2] = {(hsize_t)ser->n, (hsize_t)ser->ncols};
  int ok = ds_store_write_i64_dset(g, "step", dims[0], ser->step, pl->step) >= 0 &&
           ds_store_write_f64_dset(g, "value", ser->ncols == 1 ? 1 : 2, dims, ser->val,
                                   pl->value) >= 0;
  hid_t v = ok ? H5Dopen2(g, "value", H5P_DEFAULT) : -1;
  char unit[sizeof ser->unit + 1], def[sizeof ser->definition + 1];
  snprintf(unit, sizeof unit, "%.*s", (int)sizeof ser->unit, ser->unit);
  snprintf(def, sizeof def, "%.*s", (int)sizeof ser->definition, ser->definition);
  ok = ok && v >= 0 && ds_store_put_str(v, "unit", unit) >= 0 &&
       ds_store_put_str(v, "definition", def) >= 0 &&
       ds_store_put_i32(v, "ncols", ser->ncols) >= 0;
  if (v >= 0) H5Dclose(v);
  H5Gclose(g);
  return ok ? 0 : -1;
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

/* Writes the point group pg's content; -1 on HDF5 failure (name in *what). */
static int ds_store_fill_point(ds_store *s, hid_t pg, const ds_traj *t, const char **what) {
  int ns = t ? t->n : 0;
  const char **names = ds_calloc(ns ? ns : 1, sizeof *names);
  ds_store_plists pl = {-1, -1, -1};
  int ok = names && ds_store_plists_open(&pl) >= 0;
  for (int i = 0; ok && i < ns; i++) names[i] = t->s[i].name;
  *what = "series_names";
  ok = ok && ds_store_put_strs(pg, "series_names", names, ns) >= 0;
  for (int i = 0; ok && i < ns; i++) {
    *what = t->s[i].name;
    ok = ds_store_write_series(s, pg, &pl, &t->s[i]) >= 0;
  }
  free(names);
  ds_store_plists_close(&pl);
  return ok ? 0 : -1;
}

static int ds_store_update_row(ds_store *s, int64_t idx, const ds_summary_row *row) {
  ds_summary_row r = *row;
  hsize_t start = (hsize_t)idx, one = 1;
  r.reason[DS_STORE_REASON_LEN - 1] = 0;
  hid_t fs = H5Dget_space(s->summary), ms = H5Screate_simple(1, &one, NULL);
  int ok = fs >= 0 && ms >= 0 &&
           H5Sselect_hyperslab(fs, H5S_SELECT_SET, &start, NULL, &one, NULL) >= 0 &&
           H5Dwrite(s->summary, s->row_mem, ms, fs, H5P_DEFAULT, &r) >= 0;
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  return ok ? DS_OK
            : ds_store_h5fail(DS_EIO, s->path, "cannot update /summary row of point %" PRId64,
                              row->id);
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

/* /points/<id>: replaces an older group; a failed write leaves no group. */
int ds_store_h5_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj) {
  int64_t idx = -1;
  char name[32];
  const char *what = "";
  DS_TRY(ds_store_row_for(s, row, &idx));
  DS_TRY(ds_store_check_traj(s, row->id, traj));
  ds_store_point_name(row->id, name, sizeof name);
  htri_t ex = H5Lexists(s->points, name, H5P_DEFAULT);
  if (ex > 0 && H5Ldelete(s->points, name, H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot delete old /points/%s", name);
  hid_t gcpl = ds_store_gcpl(traj && traj->n > 2 ? (unsigned)traj->n : 2);
  hid_t pg = ex >= 0 && gcpl >= 0 ? H5Gcreate2(s->points, name, H5P_DEFAULT, gcpl, H5P_DEFAULT) : -1;
  if (gcpl >= 0) H5Pclose(gcpl);
  if (pg < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot create /points/%s", name);
  int bad = ds_store_fill_point(s, pg, traj, &what) < 0;
  H5Gclose(pg);
  if (bad) {
    int rc = ds_store_h5fail(DS_EIO, s->path, "cannot write /points/%s (%s)", name, what);
    H5Ldelete(s->points, name, H5P_DEFAULT); /* no half-written point */
    H5Eclear2(H5E_DEFAULT);
    return rc;
  }
  DS_TRY(ds_store_update_row(s, idx, row));
  return ds_store_h5_drop_ckpt(s, row->id);
}

int ds_store_h5_write_row(ds_store *s, const ds_summary_row *row) {
  int64_t idx = -1;
  DS_TRY(ds_store_row_for(s, row, &idx));
  return ds_store_update_row(s, idx, row);
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
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    ok = sp >= 0 && dcpl >= 0 && H5Pset_chunk(dcpl, 1, &chunk) >= 0 &&
         H5Pset_obj_track_times(dcpl, 0) >= 0;
    if (ok) d = H5Dcreate2(g, name, H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    ok = ok && d >= 0;
  }
  char now[40];
  ds_iso_time(now, sizeof now);
  ok = ok && (len == 0 || H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, blob) >= 0) &&
       ds_store_put_i64(d, "bytes", (int64_t)len) >= 0 && ds_store_put_str(d, "time", now) >= 0;
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

/* ---- close ------------------------------------------------------------------ */

/* Closes everything (HDF5 handles, journal and its lock); returns -1 if the
 * file did not close cleanly. Does not touch the error message. */
int ds_store_release(ds_store *s) {
  int bad = 0;
  if (!s) return 0;
  if (s->summary >= 0) H5Dclose(s->summary);
  if (s->points >= 0) H5Gclose(s->points);
  if (s->row_mem >= 0) H5Tclose(s->row_mem);
  if (s->file >= 0) bad = H5Fclose(s->file) < 0;
  if (s->jfd >= 0) close(s->jfd); /* releases the lock */
  free(s->ids);
  free(s->rows);
  free(s->jpath);
  free(s->tmppath);
  free(s->path);
  free(s);
  return bad ? -1 : 0;
}
