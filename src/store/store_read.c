/* store_read.c -- reading a sweep store from any process (no MPI needed):
 * open, the summary table, a point's trajectory,
 * the grid axes and root attributes. Layout in docs/store.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "store_priv.h"

static const char *const ds_store_status_names[] = {"pending", "done", "diverged", "failed",
                                                    "running"};

const char *ds_status_name(int status) {
  if (status < 0 || status > DS_ST_RUNNING) return "unknown";
  return ds_store_status_names[status];
}

/* ---- open ------------------------------------------------------------------- */

int ds_store_check_file(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return ds_fail(errno == ENOENT ? DS_EINPUT : DS_EIO, "%s: cannot open store: %s", path,
                   strerror(errno));
  if (!S_ISREG(st.st_mode)) return ds_fail(DS_EINPUT, "%s: not a regular file", path);
  htri_t h5 = H5Fis_hdf5(path);
  if (h5 < 0) return ds_store_h5fail(DS_EIO, path, "cannot read file");
  if (h5 == 0) return ds_fail(DS_EINPUT, "%s: not an HDF5 file (expected a dynsweep store)", path);
  return DS_OK;
}

/* Opens read-only. Not as a SWMR reader: a published store is never written
 * in place, and SWMR reading retries a bad checksum for minutes (a corrupt
 * file must fail at once); one metadata read attempt. */
static hid_t ds_store_open_file(const char *path) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return -1;
  H5Pset_fapl_sec2(fapl);
  H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
  H5Pset_metadata_read_attempts(fapl, 1);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  return f;
}

static int ds_store_check_format(ds_store *s) {
  char fmt[64] = "";
  int64_t ver = 0;
  if (ds_store_get_text(s->file, "format", fmt, sizeof fmt) < 0 && ds_store_h5_checksum_failed())
    return ds_store_h5fail(DS_EIO, s->path, "cannot read the root attribute format");
  if (strcmp(fmt, DS_STORE_FORMAT) != 0 && H5Aexists(s->file, "digest_attrs") > 0)
    return ds_fail(DS_EIO, "%s: the file is damaged: its root attribute format reads \"%.40s\", "
                   "not \"%s\", in a file with a store's digests (bit rot?); 'dynsweep verify %s' "
                   "lists what is damaged", s->path, fmt, DS_STORE_FORMAT, s->path);
  if (strcmp(fmt, DS_STORE_FORMAT) != 0) {
    H5Eclear2(H5E_DEFAULT);
    return ds_fail(DS_EINPUT, "%s: HDF5 file but not a dynsweep store (root attribute format "
                              "is not \"%s\")", s->path, DS_STORE_FORMAT);
  }
  if (ds_store_get_i64(s->file, "format_version", &ver) < 0)
    return ds_store_h5fail(DS_EINPUT, s->path, "no format_version attribute");
  if (ver < DS_STORE_FORMAT_READ_MIN || ver > DS_STORE_FORMAT_VERSION)
    return ds_fail(DS_EINPUT, "%s: store format_version %" PRId64 " is not supported (this "
                              "dynsweep reads versions %d to %d)", s->path, ver,
                   DS_STORE_FORMAT_READ_MIN, DS_STORE_FORMAT_VERSION);
  s->version = ver;
  return DS_OK;
}

/* Reads the id column of /summary (partial compound read). */
static int ds_store_load_ids(ds_store *s) {
  hid_t sp = H5Dget_space(s->summary);
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  if (n < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot read /summary shape");
  int64_t had = s->npoints;
  s->npoints = n;
  s->ids = ds_calloc((size_t)n, sizeof *s->ids);
  if (!s->ids) return DS_ENOMEM;
  if (s->writable && s->rows && s->blk_trusted && had == n) { /* the writer's reopen after its publish: it wrote them */
    for (int64_t i = 0; i < n; i++) s->ids[i] = s->rows[i].id;
    return DS_OK;
  }
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
  int ok = t >= 0 && H5Tinsert(t, "id", 0, H5T_NATIVE_INT64) >= 0 &&
           (n == 0 || H5Dread(s->summary, t, H5S_ALL, H5S_ALL, ds_store_dxpl(), s->ids) >= 0);
  if (t >= 0) H5Tclose(t);
  if (ok && s->brows[DS_BLK_SUM] > 0 && ds_blk_still_there(s, DS_BLK_SUM) != DS_OK) return DS_EIO;
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot read /summary ids");
}

static int ds_store_open_layout(ds_store *s, int tolerant) {
  s->file = ds_store_open_file(s->path);
  if (s->file < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot open the store: the file is damaged "
                           "(truncated or corrupt?); nothing was changed");
  ds_store_silence_hdf5();
  DS_TRY(ds_store_check_format(s));
  s->summary = H5Dopen2(s->file, "summary", H5P_DEFAULT);
  if (s->summary < 0) return ds_store_h5fail(DS_EINPUT, s->path, "store has no /summary");
  if (s->version >= 3) {
    s->series = H5Gopen2(s->file, "series", H5P_DEFAULT);
    if (s->series < 0) return ds_store_h5fail(DS_EINPUT, s->path, "store has no /series");
    DS_TRY(ds_seg_load(s));
  } else {
    s->points = H5Gopen2(s->file, "points", H5P_DEFAULT);
    if (s->points < 0) return ds_store_h5fail(DS_EINPUT, s->path, "store has no /points");
  }
  if (s->row_mem < 0) s->row_mem = ds_store_row_memtype();
  if (s->row_mem < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot build summary row type");
  free(s->ids);
  s->ids = NULL;
  int rc = ds_store_load_ids(s);
  if (rc != DS_OK && tolerant && s->ids) { /* verify: rows whose ids are unreadable are their ids */
    for (int64_t i = 0; i < s->npoints; i++) s->ids[i] = i;
    ds_clear_error();
    H5Eclear2(H5E_DEFAULT);
    rc = DS_OK;
  }
  if (rc == DS_OK) rc = ds_map_open(s);
  return rc;
}

/* (Re)opens s->path read-only into s's handles (a writer does this after
 * every publish). */
int ds_store_open_handles(ds_store *s) {
  ds_store_close_handles(s);
  return ds_store_open_layout(s, 0);
}

void ds_store_close_handles(ds_store *s) {
  ds_seg_close(s);
  if (s->summary >= 0) H5Dclose(s->summary);
  if (s->points >= 0) H5Gclose(s->points);
  if (s->series >= 0) H5Gclose(s->series);
  if (s->file >= 0) H5Fclose(s->file);
  s->summary = s->points = s->series = s->file = -1;
  ds_store_drop_cache(s);
}


/* Readers (format 4) check the digests of the string data at open: a store
 * whose names, units or sweep text rotted is refused with a clear error
 * rather than shown with wrong labels. verify opens with check = 0. */
int ds_store_open_checked(const char *path, ds_store **out, int check) {
  *out = NULL;
  ds_store_silence_hdf5();
  DS_TRY(ds_store_check_file(path));
  ds_store *s = ds_store_alloc(path);
  if (!s) return DS_ENOMEM;
  int rc = ds_store_open_layout(s, !check), mask = 0;
  if (rc == DS_OK && check) rc = ds_store_digests_check(s, &mask);
  if (rc != DS_OK) {
    ds_store_release(s);
    H5Eclear2(H5E_DEFAULT);
    return rc;
  }
  *out = s;
  return DS_OK;
}

int ds_store_open(const char *path, ds_store **out) { return ds_store_open_checked(path, out, 1); }

/* ---- summary ------------------------------------------------------------------ */

int ds_store_read_summary(ds_store *s, ds_summary_row **rows, int64_t *n) {
  if (s->map) return ds_map_refuse(s);
  if (s->writable && s->rows) { /* published + journaled */
    ds_summary_row *r = ds_calloc(s->npoints ? (size_t)s->npoints : 1, sizeof *r);
    if (!r) return DS_ENOMEM;
    memcpy(r, s->rows, (size_t)s->npoints * sizeof *r);
    *rows = r;
    *n = s->npoints;
    return DS_OK;
  }
  return ds_store_read_rows(s, rows, n);
}

/* The rows of the open file. */
int ds_store_read_rows(ds_store *s, ds_summary_row **rows, int64_t *n) {
  hsize_t cnt = 0;
  hid_t sp = H5Dget_space(s->summary);
  int ok = sp >= 0 && H5Sget_simple_extent_dims(sp, &cnt, NULL) == 1;
  if (sp >= 0) H5Sclose(sp);
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot read /summary shape");
  ds_summary_row *r = ds_calloc(cnt ? cnt : 1, sizeof *r);
  if (!r) return DS_ENOMEM;
  if (cnt > 0 && H5Dread(s->summary, s->row_mem, H5S_ALL, H5S_ALL, ds_store_dxpl(), r) < 0) {
    free(r);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /summary");
  }
  for (hsize_t i = 0; i < cnt; i++) r[i].reason[DS_STORE_REASON_LEN - 1] = 0;
  if (s->brows[DS_BLK_SUM] > 0 && ds_blk_still_there(s, DS_BLK_SUM) != DS_OK) { /* format 5 */
    free(r);
    return DS_EIO;
  }
  *rows = r;
  *n = (int64_t)cnt;
  return DS_OK;
}

/* ---- trajectories ------------------------------------------------------------- */

/* Reads dataset name of g into a new buffer; checks rank and shape. */
static int ds_store_read_dset(hid_t g, const char *name, hid_t mtype, size_t esize,
                              hsize_t dims[2], int *rank, void **buf) {
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  int ok = sp >= 0;
  dims[1] = 1;
  if (ok) *rank = H5Sget_simple_extent_dims(sp, dims, NULL);
  ok = ok && *rank >= 1 && *rank <= 2;
  size_t count = ok ? (size_t)(dims[0] * (*rank == 2 ? dims[1] : 1)) : 0;
  *buf = ok ? malloc((count ? count : 1) * esize) : NULL;
  ok = ok && *buf && (count == 0 || H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *buf) >= 0);
  if (!ok) {
    free(*buf);
    *buf = NULL;
  }
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  return ok ? 0 : -1;
}

/* Reads series `name` of point group pg and adds it to t. */
static int ds_store_read_series(ds_store *s, hid_t pg, const char *pname, const char *name,
                                ds_traj *t) {
  hid_t g = H5Gopen2(pg, name, H5P_DEFAULT);
  hid_t v = g >= 0 ? H5Dopen2(g, "value", H5P_DEFAULT) : -1;
  char unit[sizeof(((ds_series *)0)->unit)] = "", def[sizeof(((ds_series *)0)->definition)] = "";
  int64_t ncols = 1;
  int ok = v >= 0 && ds_store_get_text(v, "unit", unit, sizeof unit) >= 0 &&
           ds_store_get_text(v, "definition", def, sizeof def) >= 0 &&
           ds_store_get_i64(v, "ncols", &ncols) >= 0;
  if (v >= 0) H5Dclose(v);
  hsize_t sd[2], vd[2];
  int sr = 0, vr = 0;
  void *step = NULL, *val = NULL;
  ok = ok && ds_store_read_dset(g, "step", H5T_NATIVE_INT64, sizeof(int64_t), sd, &sr, &step) >= 0 &&
       ds_store_read_dset(g, "value", H5T_NATIVE_DOUBLE, sizeof(double), vd, &vr, &val) >= 0;
  if (g >= 0) H5Gclose(g);
  if (!ok) {
    free(step), free(val);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read series /points/%s/%s", pname, name);
  }
  if (sr != 1 || vd[0] != sd[0] || ncols < 1 || (int64_t)vd[1] != ncols || (vr == 2) != (ncols > 1)) {
    free(step), free(val);
    return ds_fail(DS_EIO, "%s: series /points/%s/%s: step/value shapes disagree", s->path, pname,
                   name);
  }
  int idx = ds_traj_add(t, name, (int)ncols, unit, def);
  if (idx < 0) {
    free(step), free(val);
    return -idx;
  }
  ds_series *ser = &t->s[idx];
  ser->step = step;
  ser->val = val;
  ser->n = ser->cap = (int64_t)sd[0];
  return DS_OK;
}

static int ds_store_read_point(ds_store *s, hid_t pg, const char *pname, ds_traj *out) {
  hid_t a = H5Aopen(pg, "series_names", H5P_DEFAULT);
  char **names = NULL;
  int64_t n = 0;
  int ok = a >= 0 && ds_store_get_strs_attr(a, &names, &n) >= 0;
  if (a >= 0) H5Aclose(a);
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot read /points/%s/series_names", pname);
  int rc = DS_OK;
  for (int64_t i = 0; i < n && rc == DS_OK; i++)
    rc = ds_store_read_series(s, pg, pname, names[i], out);
  ds_store_free_strs(names, n);
  return rc;
}

/* ---- version 3: /series tables ---------------------------------------------- */

int ds_store_read_index(ds_store *s, ds_store_idx **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  hid_t d = s->series >= 0 ? H5Dopen2(s->series, "index", H5P_DEFAULT) : -1;
  hid_t t = ds_store_idx_memtype();
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  hssize_t cnt = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  ds_store_idx *x = cnt >= 0 ? malloc((cnt ? (size_t)cnt : 1) * sizeof *x) : NULL;
  int ok = x && t >= 0 && (cnt == 0 || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, x) >= 0);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  if (!ok) {
    free(x);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /series/index");
  }
  if (s->brows[DS_BLK_IDX] > 0 && ds_blk_still_there(s, DS_BLK_IDX) != DS_OK) { /* format 5 */
    free(x);
    return DS_EIO;
  }
  *out = x;
  *n = (int64_t)cnt;
  return DS_OK;
}

static int ds_store_load_series(ds_store *s) {
  if (s->idx_loaded) return DS_OK;
  ds_store_drop_cache(s);
  DS_TRY(ds_store_read_index(s, &s->idx, &s->nidx));
  const char *names[3] = {"names", "units", "definitions"};
  char **v[3] = {NULL, NULL, NULL};
  int64_t n[3] = {0, 0, 0};
  int ok = 1;
  for (int i = 0; ok && i < 3; i++) {
    hid_t d = H5Dopen2(s->series, names[i], H5P_DEFAULT);
    ok = d >= 0 && ds_store_get_strs_dset(d, &v[i], &n[i]) >= 0;
    if (d >= 0) H5Dclose(d);
  }
  s->knames = v[0], s->kunits = v[1], s->kdefs = v[2];
  s->nkinds = n[0];
  if (!ok || n[1] != n[0] || n[2] != n[0]) {
    for (int i = 0; i < 3; i++) ds_store_free_strs(v[i], n[i]);
    s->knames = s->kunits = s->kdefs = NULL;
    s->nkinds = 0;
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /series names, units and definitions");
  }
  size_t np = s->npoints ? (size_t)s->npoints : 1;
  s->pfirst = malloc(np * sizeof *s->pfirst);
  s->pnext = malloc((s->nidx ? (size_t)s->nidx : 1) * sizeof *s->pnext);
  int64_t *last = malloc(np * sizeof *last);
  if (!s->pfirst || !s->pnext || !last) {
    free(last);
    return DS_ENOMEM;
  }
  for (int64_t r = 0; r < s->npoints; r++) s->pfirst[r] = last[r] = -1;
  for (int64_t i = 0; i < s->nidx; i++) { /* chain each point's rows in order */
    int64_t r = s->idx[i].point >= 0 ? ds_store_row_index(s, s->idx[i].point) : -1;
    s->pnext[i] = -1;
    if (r < 0) continue;
    if (last[r] < 0) s->pfirst[r] = i;
    else s->pnext[last[r]] = i;
    last[r] = i;
  }
  free(last);
  s->idx_loaded = 1;
  return DS_OK;
}

/* Reads count elements from offset start of /series/<name>. */
static int ds_store_read_part(hid_t g, const char *name, hid_t mtype, int64_t start, int64_t count,
                              void *buf) {
  if (count == 0) return 0;
  hid_t d = H5Dopen2(g, name, H5P_DEFAULT);
  hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
  hsize_t st = (hsize_t)start, cnt = (hsize_t)count;
  hid_t ms = H5Screate_simple(1, &cnt, NULL);
  int ok = fs >= 0 && ms >= 0 && start >= 0 &&
           H5Sget_simple_extent_npoints(fs) >= (hssize_t)(start + count) &&
           H5Sselect_hyperslab(fs, H5S_SELECT_SET, &st, NULL, &cnt, NULL) >= 0 &&
           H5Dread(d, mtype, ms, fs, H5P_DEFAULT, buf) >= 0;
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  if (d >= 0) H5Dclose(d);
  return ok ? 0 : -1;
}

static int ds_store_read_traj3(ds_store *s, int64_t id, ds_traj *out) {
  DS_TRY(ds_store_load_series(s));
  int64_t found = 0, r = ds_store_row_index(s, id);
  for (int64_t i = r >= 0 ? s->pfirst[r] : -1; i >= 0; i = s->pnext[i]) {
    const ds_store_idx *x = &s->idx[i];
    found = 1;
    if (x->kind < 0) continue; /* a point written with no series */
    if (x->kind >= s->nkinds || x->ncols < 1 || x->n < 0 || x->n > INT64_MAX / x->ncols)
      return ds_fail(DS_EIO, "%s: point %" PRId64 ": /series/index row %lld is corrupt (the file is "
                     "damaged; 'dynsweep verify' lists what)", s->path, id, (long long)i);
    int k = ds_traj_add(out, s->knames[x->kind], x->ncols, s->kunits[x->kind], s->kdefs[x->kind]);
    if (k < 0) return -k;
    ds_series *ser = &out->s[k];
    size_t n = (size_t)x->n;
    ser->step = malloc((n ? n : 1) * sizeof *ser->step);
    ser->val = malloc((n ? n * x->ncols : 1) * sizeof *ser->val);
    if (!ser->step || !ser->val) return DS_ENOMEM;
    ser->n = ser->cap = x->n;
    if (ds_store_read_part(s->series, "step", H5T_NATIVE_INT64, x->step_start, x->n, ser->step) < 0 ||
        ds_store_read_part(s->series, "value", H5T_NATIVE_DOUBLE, x->value_start, x->n * x->ncols,
                           ser->val) < 0)
      return ds_store_h5fail(DS_EIO, s->path, "point %" PRId64 ": cannot read its series %s", id,
                             s->knames[x->kind]);
  }
  if (!found)
    return ds_fail(DS_EINPUT, "%s: point %" PRId64 " has no trajectory (not written yet)", s->path,
                   id);
  return DS_OK;
}

int ds_store_read_traj(ds_store *s, int64_t id, ds_traj *out) {
  char name[32];
  ds_traj_init(out);
  if (s->version >= 3) {
    int rc = ds_store_read_traj3(s, id, out);
    if (rc != DS_OK) ds_traj_free(out);
    return rc;
  }
  ds_store_point_name(id, name, sizeof name);
  htri_t ex = H5Lexists(s->points, name, H5P_DEFAULT);
  if (ex < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot look up /points/%s", name);
  if (!ex)
    return ds_fail(DS_EINPUT, "%s: point %" PRId64 " has no trajectory (/points/%s not written)",
                   s->path, id, name);
  hid_t pg = H5Gopen2(s->points, name, H5P_DEFAULT);
  if (pg < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot open /points/%s", name);
  int rc = ds_store_read_point(s, pg, name, out);
  H5Gclose(pg);
  if (rc != DS_OK) ds_traj_free(out);
  return rc;
}

int ds_store_read_first(ds_store *s, int64_t id, const char *name, int64_t *step, double *v0,
                        int *found) {
  *found = 0;
  if (s->version < 3) { /* one group per point: read it whole */
    ds_traj tr;
    int rc = ds_store_read_traj(s, id, &tr);
    if (rc == DS_EINPUT) { /* not written */
      ds_clear_error();
      return DS_OK;
    }
    DS_TRY(rc);
    int k = ds_traj_find(&tr, name);
    if (k >= 0 && tr.s[k].n > 0) {
      *step = tr.s[k].step[0];
      *v0 = tr.s[k].val[0];
      *found = 1;
    }
    ds_traj_free(&tr);
    return DS_OK;
  }
  DS_TRY(ds_store_load_series(s));
  int64_t r = ds_store_row_index(s, id);
  for (int64_t i = r >= 0 ? s->pfirst[r] : -1; i >= 0; i = s->pnext[i]) {
    const ds_store_idx *x = &s->idx[i];
    if (x->kind < 0 || x->kind >= s->nkinds || x->n < 1 || strcmp(s->knames[x->kind], name))
      continue;
    if (ds_store_read_part(s->series, "step", H5T_NATIVE_INT64, x->step_start, 1, step) < 0 ||
        ds_store_read_part(s->series, "value", H5T_NATIVE_DOUBLE, x->value_start, 1, v0) < 0)
      return ds_store_h5fail(DS_EIO, s->path, "point %" PRId64 ": cannot read its series %s", id,
                             name);
    *found = 1;
    return DS_OK;
  }
  return DS_OK;
}

/* ---- axes and attributes -------------------------------------------------------- */

static int ds_store_read_axis_vals(ds_store *s, int64_t naxes, double **vals, int64_t *npoints) {
  hid_t d = H5Dopen2(s->file, "grid/axis_values", H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  hsize_t dims[2] = {0, 0};
  int ok = sp >= 0 && H5Sget_simple_extent_dims(sp, dims, NULL) == 2 && (int64_t)dims[1] == naxes;
  size_t count = ok ? (size_t)(dims[0] * dims[1]) : 0;
  *vals = ok ? ds_calloc(count ? count : 1, sizeof(double)) : NULL;
  ok = ok && *vals &&
       (count == 0 || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *vals) >= 0);
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  if (!ok) {
    free(*vals);
    *vals = NULL;
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /grid/axis_values");
  }
  if (s->brows[DS_BLK_AXV] > 0 && ds_blk_still_there(s, DS_BLK_AXV) != DS_OK) { /* format 5 */
    free(*vals);
    *vals = NULL;
    return DS_EIO;
  }
  *npoints = (int64_t)dims[0];
  return DS_OK;
}

int ds_store_read_axes(ds_store *s, int *naxes, char ***names, double **vals, int64_t *npoints) {
  if (s->map) return ds_map_refuse(s);
  hid_t d = H5Dopen2(s->file, "grid/axis_names", H5P_DEFAULT);
  int64_t n = 0;
  int ok = d >= 0 && ds_store_get_strs_dset(d, names, &n) >= 0;
  if (d >= 0) H5Dclose(d);
  if (!ok) return ds_store_h5fail(DS_EIO, s->path, "cannot read /grid/axis_names");
  int rc = ds_store_read_axis_vals(s, n, vals, npoints);
  if (rc != DS_OK) {
    ds_store_free_strs(*names, n);
    *names = NULL;
    return rc;
  }
  *naxes = (int)n;
  return DS_OK;
}

int ds_store_attr(ds_store *s, const char *name, char *buf, int n) {
  htri_t ex = H5Aexists(s->file, name);
  if (ex < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot look up attribute %s", name);
  if (!ex) return ds_fail(DS_EINPUT, "%s: store has no root attribute '%s'", s->path, name);
  if (ds_store_get_text(s->file, name, buf, n) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot read root attribute %s as text", name);
  return DS_OK;
}


/* ---- checkpoints ------------------------------------------------------------- */

int ds_store_read_ckpt(ds_store *s, int64_t id, char **blob, size_t *len) {
  char name[64];
  *blob = NULL;
  *len = 0;
  snprintf(name, sizeof name, "checkpoints/%06" PRId64, id);
  htri_t g = H5Lexists(s->file, "checkpoints", H5P_DEFAULT);
  htri_t ex = g > 0 ? H5Lexists(s->file, name, H5P_DEFAULT) : g;
  if (ex < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot look up /%s", name);
  if (!ex) return ds_fail(DS_EINPUT, "%s: point %" PRId64 " has no checkpoint", s->path, id);
  hid_t d = H5Dopen2(s->file, name, H5P_DEFAULT);
  hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  char *b = n >= 0 ? malloc(n ? (size_t)n : 1) : NULL;
  int ok = b && (n == 0 || H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) >= 0);
  int64_t crc = -1;
  if (ok && d >= 0 && H5Aexists(d, "crc32") > 0 && ds_store_get_i64(d, "crc32", &crc) < 0) ok = 0;
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  if (!ok) {
    free(b);
    return ds_store_h5fail(DS_EIO, s->path, "point %" PRId64 ": cannot read its checkpoint /%s", id,
                           name);
  }
  if (crc >= 0 && (uint32_t)crc != ds_crc32(b, (size_t)n, 0)) { /* format 4 */
    free(b);
    return ds_fail(DS_EIO, "%s: point %" PRId64 ": its checkpoint /%s fails its CRC-32 (the file is "
                           "damaged: bit rot?)", s->path, id, name);
  }
  *blob = b;
  *len = (size_t)n;
  return DS_OK;
}

/* ---- live view (status) --------------------------------------------------------- */

typedef struct {
  ds_store *s;
  ds_summary_row *rows;
  int64_t n;
} ds_store_live;

static int ds_store_live_rec(void *arg, uint32_t type, const char *p, size_t len) {
  ds_store_live *l = arg;
  ds_summary_row r;
  if ((type != DS_JR_RESULT && type != DS_JR_ROW) || len < sizeof r) return DS_OK;
  memcpy(&r, p, sizeof r);
  int64_t i = ds_store_row_index(l->s, r.id);
  if (i < 0) return DS_OK;
  int final = l->rows[i].status >= DS_ST_DONE && l->rows[i].status <= DS_ST_FAILED;
  if (type == DS_JR_RESULT || !final) l->rows[i] = r;
  return DS_OK;
}

int ds_store_read_summary_live(ds_store *s, ds_summary_row **rows, int64_t *n, int64_t *nrec,
                               double *journal_mtime) {
  *nrec = 0;
  *journal_mtime = 0;
  DS_TRY(ds_store_read_summary(s, rows, n));
  if (s->writable) return DS_OK;
  char jpath[4200], uuid[40] = "";
  int64_t gen = 0;
  snprintf(jpath, sizeof jpath, "%s.journal", s->path);
  int fd = open(jpath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return DS_OK;
  struct stat st;
  ds_journal_hdr h;
  if (fstat(fd, &st) == 0) *journal_mtime = (double)st.st_mtim.tv_sec + 1e-9 * st.st_mtim.tv_nsec;
  if (ds_journal_read_hdr(fd, &h) == 0 && h.row_size == sizeof(ds_summary_row) &&
      ds_store_get_text(s->file, "store_uuid", uuid, sizeof uuid) >= 0 &&
      ds_store_get_i64(s->file, "generation", &gen) >= 0 &&
      strtoull(uuid, NULL, 16) == h.uuid && h.base_gen == gen) {
    ds_store_live l = {s, *rows, *n};
    ds_journal_scan(fd, ds_store_live_rec, &l, NULL, nrec);
  }
  H5Eclear2(H5E_DEFAULT);
  close(fd);
  return DS_OK;
}
