/* map_write.c -- the map layout's writer half (map_read.c has the format):
 * a new map store's state and /map, the MAP journal records, resume's fold,
 * a publish's collect and flush, and the layout's ops table (layout.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "layout.h"
#include "map_priv.h"

/* ---- create -------------------------------------------------------------------- */

/* ds_store_create_map (publish.c) through the ops table: checks the map's
 * description, makes its state (every pixel unset) and the meta of the
 * store: no summary rows, no /grid/axis_values. */
static int ds_map_prepare(const char *path, const ds_store_meta *meta, const void *desc, ds_store_meta *m2,
                          void **state) {
  const ds_map_meta *mm = desc;
  *state = NULL;
  if (!path || !path[0]) return ds_fail(DS_EINPUT, "store path is empty");
  if (!meta || !mm || mm->naxes < 1 || mm->naxes > 32 || meta->naxes != mm->naxes || !mm->shape ||
      !mm->axis_vals || meta->point_axis_vals)
    return ds_fail(DS_EINTERNAL, "%s: ds_store_create_map: inconsistent map metadata", path);
  double prod = 1;
  int64_t npix = 1;
  for (int a = 0; a < mm->naxes; a++) {
    if (mm->shape[a] < 1 || !mm->axis_vals[a])
      return ds_fail(DS_EINTERNAL, "%s: ds_store_create_map: axis %d has no values", path, a);
    prod *= (double)mm->shape[a];
    npix *= mm->shape[a];
  }
  if (prod > 9e15 || npix != meta->npoints)
    return ds_fail(DS_EINTERNAL, "%s: ds_store_create_map: npoints %" PRId64 " is not the product "
                   "of the shape (%.0f)", path, meta->npoints, prod);
  if (mm->refine_levels < 0 ||
      (mm->refine_levels > 0 &&
       (mm->refine_axes[0] < 0 || mm->refine_axes[0] >= mm->naxes || mm->refine_axes[1] < -1 ||
        mm->refine_axes[1] >= mm->naxes || mm->refine_axes[0] == mm->refine_axes[1])))
    return ds_fail(DS_EINTERNAL, "%s: ds_store_create_map: bad refinement axes", path);
  struct ds_map_state *m = ds_map_new(mm->naxes);
  if (!m) return DS_ENOMEM;
  for (int a = 0; a < mm->naxes; a++) m->shape[a] = mm->shape[a];
  m->npix = npix;
  m->steps = mm->steps;
  m->tile_points = mm->tile_points;
  m->step16 = mm->steps > 0 && mm->steps < DS_MAP_STEP16_UNKNOWN;
  m->refine_levels = mm->refine_levels;
  m->early_stop = mm->early_stop;
  if (mm->refine_levels > 0) {
    m->refine_axes[0] = mm->refine_axes[0];
    m->refine_axes[1] = mm->refine_axes[1];
  }
  m->axis_vals = mm->axis_vals;
  ds_map_chunks(m);
  m->out = malloc((size_t)npix);
  m->dirty = ds_calloc((size_t)m->nchunks, 1);
  if (!m->out || !m->dirty) {
    free(m->out), free(m->dirty), free(m->shape), free(m->nch), free(m->chunk), free(m);
    return DS_ENOMEM;
  }
  memset(m->out, DS_MAP_UNSET, (size_t)npix);
  *m2 = *meta;
  m2->npoints = 0; /* no summary rows, no /grid/axis_values */
  m2->point_axis_vals = NULL;
  *state = m;
  return DS_OK;
}


static int ds_map_put_arr(hid_t loc, const char *name, hid_t ftype, hid_t mtype, hsize_t n,
                          const void *v) {
  if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) return -1;
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t a = sp >= 0 ? H5Acreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int ok = a >= 0 && H5Awrite(a, mtype, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

/* fixed-length string attribute: kept in the (checksummed) object header */
static int ds_map_put_fixed_str(hid_t loc, const char *name, const char *v) {
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR), a = -1;
  int ok = t >= 0 && sp >= 0 && H5Tset_size(t, strlen(v) + 1) >= 0 &&
           H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
           (a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 &&
           H5Awrite(a, t, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  return ok ? 0 : -1;
}

int ds_map_create_layout(ds_store *s, const ds_store_meta *meta) {
  struct ds_map_state *m = s->map;
  if (H5Ldelete(s->file, "grid/axis_values", H5P_DEFAULT) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot drop /grid/axis_values");
  if (ds_store_put_str(s->file, "store_kind", "map") < 0 ||
      ds_store_put_str(s->file, "map_measure", m->early_stop ? "early_stop" : "study") < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write root attributes");
  hid_t g = H5Gcreate2(s->file, "map", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hid_t ax = g >= 0 ? H5Gcreate2(g, "axes", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : -1;
  int32_t ra[2] = {m->refine_axes[0], m->refine_axes[1]};
  hsize_t na = (hsize_t)m->naxes;
  int ok = ax >= 0 && ds_store_put_i32(g, "naxes", m->naxes) >= 0 &&
           ds_map_put_arr(g, "shape", H5T_STD_I64LE, H5T_NATIVE_INT64, na, m->shape) >= 0 &&
           ds_store_put_i64(g, "npoints", m->npix) >= 0 &&
           ds_store_put_i64(g, "steps", m->steps) >= 0 &&
           ds_store_put_i64(g, "tile_points", m->tile_points) >= 0 &&
           ds_store_put_i32(g, "refine_levels", m->refine_levels) >= 0 &&
           ds_map_put_arr(g, "refine_axes", H5T_STD_I32LE, H5T_NATIVE_INT32, 2, ra) >= 0 &&
           ds_store_put_i64(g, "step_unknown", m->step16 ? DS_MAP_STEP16_UNKNOWN : -1) >= 0 &&
           ds_map_put_fixed_str(g, "outcome_codes", DS_MAP_OUTCODES) >= 0;
  if (ax >= 0) H5Gclose(ax);
  hsize_t *dims = ds_calloc(na, sizeof *dims);
  ok = ok && dims;
  for (int a = 0; ok && a < m->naxes; a++) dims[a] = (hsize_t)m->shape[a];
  for (int k = 0; ok && k < DS_MAP_NDSET; k++) {
    unsigned char fill[8];
    ds_map_fill(m, k, fill);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(m->naxes, dims, NULL), d = -1;
    ok = dcpl >= 0 && sp >= 0 && H5Pset_chunk(dcpl, m->naxes, m->chunk) >= 0 &&
         H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, DS_MAP_DEFLATE) >= 0 &&
         H5Pset_fletcher32(dcpl) >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0 &&
         H5Pset_fill_value(dcpl, ds_map_mtype(m, k), fill) >= 0 &&
         (d = H5Dcreate2(g, ds_map_dsets[k], ds_map_ftype(m, k), sp, H5P_DEFAULT, dcpl,
                         H5P_DEFAULT)) >= 0;
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    if (dcpl >= 0) H5Pclose(dcpl);
  }
  free(dims);
  for (int a = 0; ok && a < m->naxes; a++) {
    char name[600];
    ds_map_dset_name(meta->axis_names[a], name, sizeof name);
    hsize_t n = (hsize_t)m->shape[a], chunk = n < 4096 ? n : 4096;
    hid_t sp = H5Screate_simple(1, &n, NULL), dcpl = ds_store_dcpl_sum(1, &chunk), d = -1;
    ok = sp >= 0 && dcpl >= 0 &&
         (d = H5Dcreate2(s->file, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0 &&
         H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m->axis_vals[a]) >= 0;
    if (d >= 0) H5Dclose(d);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (sp >= 0) H5Sclose(sp);
  }
  if (g >= 0) H5Gclose(g);
  m->axis_vals = NULL;
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot create /map");
}

int ds_store_write_map(ds_store *s, int64_t n, const int64_t *idx, const ds_map_rec *recs) {
  if (!s->writable) return ds_fail(DS_EINTERNAL, "%s: store is open read-only", s->path);
  if (!s->map) return ds_fail(DS_EINTERNAL, "%s: not a map store", s->path);
  struct ds_map_state *m = s->map;
  if (n < 0 || (n > 0 && (!idx || !recs)))
    return ds_fail(DS_EINTERNAL, "%s: ds_store_write_map: bad arguments", s->path);
  for (int64_t i = 0; i < n; i++) {
    if (idx[i] < 0 || idx[i] >= m->npix || (i > 0 && idx[i] <= idx[i - 1]))
      return ds_fail(DS_EINTERNAL, "%s: ds_store_write_map: index %" PRId64 " (record %" PRId64
                     ") is out of range or not ascending", s->path, idx[i], i);
    if (!ds_map_valid_rec(recs[i].outcome) ||
        (m->step16 && (recs[i].step < -1 || recs[i].step >= DS_MAP_STEP16_UNKNOWN)))
      return ds_fail(DS_EINTERNAL, "%s: ds_store_write_map: pixel %" PRId64 ": outcome %u / step "
                     "%" PRId32 " out of range", s->path, idx[i], recs[i].outcome, recs[i].step);
  }
  /* keep what takes: an inferred record never replaces a trained pixel */
  int64_t keep = 0, nruns = 0;
  for (int64_t i = 0; i < n; i++)
    if (ds_map_takes(m->out[idx[i]], recs[i].outcome)) {
      if (!keep || idx[i] != idx[i - 1] + 1 || !ds_map_takes(m->out[idx[i - 1]], recs[i - 1].outcome))
        nruns++;
      keep++;
    }
  if (!keep) return DS_OK;
  size_t len = 24 + (size_t)nruns * 16 + (size_t)keep * DS_MAP_PACKED;
  char *buf = malloc(len);
  if (!buf) return DS_ENOMEM;
  int64_t *hdr = (int64_t *)(void *)buf, r = -1, k = 0, first = -1;
  unsigned char *rp = (unsigned char *)buf + 24 + nruns * 16;
  for (int64_t i = 0; i < n; i++) {
    if (!ds_map_takes(m->out[idx[i]], recs[i].outcome)) continue;
    if (first < 0) first = idx[i];
    int64_t rs[2];
    if (r >= 0) memcpy(rs, buf + 24 + r * 16, sizeof rs);
    if (r >= 0 && idx[i] == rs[0] + rs[1]) {
      rs[1]++;
    } else {
      r++;
      rs[0] = idx[i];
      rs[1] = 1;
    }
    memcpy(buf + 24 + r * 16, rs, sizeof rs);
    ds_map_pack(rp + k++ * DS_MAP_PACKED, &recs[i]);
  }
  int64_t h[3] = {first, keep, r + 1};
  memcpy(hdr, h, sizeof h);
  if (r + 1 != nruns) { /* runs merged across a dropped record: close the gap */
    memmove(buf + 24 + (r + 1) * 16, rp, (size_t)keep * DS_MAP_PACKED);
    len = 24 + (size_t)(r + 1) * 16 + (size_t)keep * DS_MAP_PACKED;
  }
  int rc = ds_journal_append(s, DS_JR_MAP, buf, len, NULL, 0);
  free(buf);
  if (rc != DS_OK) return rc;
  for (int64_t i = 0; i < n; i++)
    if (ds_map_takes(m->out[idx[i]], recs[i].outcome)) {
      m->out[idx[i]] = recs[i].outcome;
      ds_map_mark(m, idx[i]);
    }
  return DS_OK;
}

/* ---- resume ------------------------------------------------------------------------- */

int ds_map_fold(ds_store *s, const char *p, size_t len) {
  return ds_map_decode(s, p, len, ds_map_fold_cb, s->map);
}

/* dataset k of /map, opened with a chunk cache that holds a few chunks */
int ds_map_load_writer(ds_store *s) {
  struct ds_map_state *m = s->map;
  free(m->out);
  free(m->dirty);
  m->out = malloc((size_t)m->npix);
  m->dirty = ds_calloc((size_t)m->nchunks, 1);
  m->ndirty = 0;
  if (!m->out || !m->dirty) return DS_ENOMEM;
  return ds_map_read_all(s, 0, m->out);
}

/* ---- publish ----------------------------------------------------------------------- */

static int ds_map_collect_cb(void *arg, int64_t idx, const ds_map_rec *r) {
  struct ds_map_state *m = arg;
  if (m->bn == m->bcap) {
    int64_t cap = m->bcap ? 2 * m->bcap : 65536;
    int64_t *ni = realloc(m->bidx, (size_t)cap * sizeof *ni);
    if (ni) m->bidx = ni;
    ds_map_rec *nr = ni ? realloc(m->brec, (size_t)cap * sizeof *nr) : NULL;
    if (!ni || !nr) return ds_fail(DS_ENOMEM, "out of memory gathering %" PRId64 " map records", cap);
    m->brec = nr;
    m->bcap = cap;
  }
  m->bidx[m->bn] = idx;
  m->brec[m->bn++] = *r;
  return DS_OK;
}

int ds_map_collect(ds_store *s, const char *p, size_t len) {
  if (!s->map) return ds_fail(DS_EIO, "%s: a map record in the journal of a row store", s->jpath);
  return ds_map_decode(s, p, len, ds_map_collect_cb, s->map);
}

/* Offset of pixel idx inside the chunk block starting at st with dims cnt. */
static int64_t ds_map_local(const struct ds_map_state *m, int64_t idx, const hsize_t *st,
                            const hsize_t *cnt) {
  int64_t off = 0, mul = 1;
  for (int a = m->naxes - 1; a >= 0; a--) {
    int64_t x = idx % m->shape[a];
    idx /= m->shape[a];
    off += (x - (int64_t)st[a]) * mul;
    mul *= (int64_t)cnt[a];
  }
  return off;
}
int ds_map_flush(ds_store *s) {
  struct ds_map_state *m = s->map;
  if (!m || !m->bn) return DS_OK;
  int64_t n = m->bn, nc = m->nchunks;
  int64_t *cid = malloc((size_t)n * sizeof *cid), *start = ds_calloc((size_t)nc + 1, sizeof *start);
  int64_t *order = malloc((size_t)n * sizeof *order);
  void *buf[DS_MAP_NDSET] = {NULL};
  hid_t d[DS_MAP_NDSET] = {-1, -1, -1, -1, -1};
  hsize_t *st = ds_calloc((size_t)m->naxes, sizeof *st), *cnt = ds_calloc((size_t)m->naxes, sizeof *cnt);
  int rc = cid && start && order && st && cnt ? DS_OK : DS_ENOMEM;
  for (int k = 0; rc == DS_OK && k < DS_MAP_NDSET; k++) {
    buf[k] = malloc((size_t)m->chunk_elems * ds_map_esize(m, k));
    if (!buf[k]) rc = DS_ENOMEM;
    else if ((d[k] = ds_map_open_dset(s, k)) < 0)
      rc = ds_store_h5fail(DS_EIO, s->tmppath, "cannot open /map/%s", ds_map_dsets[k]);
  }
  if (rc == DS_OK) {
    for (int64_t i = 0; i < n; i++) {
      cid[i] = ds_map_chunk_of(m, m->bidx[i]);
      start[cid[i] + 1]++;
    }
    for (int64_t c = 0; c < nc; c++) start[c + 1] += start[c];
    int64_t *pos = malloc((size_t)nc * sizeof *pos);
    if (!pos) rc = DS_ENOMEM;
    else {
      memcpy(pos, start, (size_t)nc * sizeof *pos);
      for (int64_t i = 0; i < n; i++) order[pos[cid[i]]++] = i;
      free(pos);
    }
  }
  hid_t fs = rc == DS_OK ? H5Dget_space(d[0]) : -1;
  for (int64_t c = 0; rc == DS_OK && c < nc; c++) {
    if (start[c] == start[c + 1]) continue;
    int64_t elems = ds_map_chunk_box(m, c, st, cnt);
    hid_t ms = H5Screate_simple(m->naxes, cnt, NULL);
    int ok = ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL) >= 0;
    for (int k = 0; ok && k < DS_MAP_NDSET; k++)
      ok = H5Dread(d[k], ds_map_mtype(m, k), ms, fs, H5P_DEFAULT, buf[k]) >= 0;
    if (ok) {
      uint8_t *o = buf[0];
      float *me = buf[2], *fr = buf[3], *pr = buf[4];
      for (int64_t j = start[c]; j < start[c + 1]; j++) {
        int64_t i = order[j], off = ds_map_local(m, m->bidx[i], st, cnt);
        const ds_map_rec *r = &m->brec[i];
        if (off < 0 || off >= elems || !ds_map_takes(o[off], r->outcome)) continue;
        o[off] = r->outcome;
        if (m->step16) ((uint16_t *)buf[1])[off] = r->step < 0 ? DS_MAP_STEP16_UNKNOWN : (uint16_t)r->step;
        else ((int32_t *)buf[1])[off] = r->step;
        me[off] = r->measure;
        fr[off] = r->final_ratio;
        pr[off] = r->peak_ratio;
      }
    }
    for (int k = 0; ok && k < DS_MAP_NDSET; k++)
      ok = H5Dwrite(d[k], ds_map_mtype(m, k), ms, fs, H5P_DEFAULT, buf[k]) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (!ok) rc = ds_store_h5fail(DS_EIO, s->tmppath, "cannot update a chunk of /map");
  }
  if (fs >= 0) H5Sclose(fs);
  for (int k = 0; k < DS_MAP_NDSET; k++) {
    if (d[k] >= 0 && H5Dclose(d[k]) < 0 && rc == DS_OK)
      rc = ds_store_h5fail(DS_EIO, s->tmppath, "cannot write /map/%s", ds_map_dsets[k]);
    free(buf[k]);
  }
  free(cid), free(start), free(order), free(st), free(cnt);
  ds_map_abort(s);
  if (rc == DS_OK && m->dirty) {
    memset(m->dirty, 0, (size_t)m->nchunks);
    m->ndirty = 0;
  }
  return rc;
}

/* Extra bytes a publish may need beyond the old file and the journal: every
 * touched chunk rewritten (at most its raw size) while its old copy is freed. */
double ds_map_reserve(ds_store *s) {
  struct ds_map_state *m = s->map;
  if (!m) return 0;
  int64_t nd = m->dirty ? m->ndirty : m->nchunks;
  return (double)nd * (double)m->chunk_elems * 18.0 + 65536.0;
}

static void ds_map_attach(ds_store *s, void *state) { s->map = state; }

/* map stores (issue 13): /map arrays; /summary and /series stay empty */
const struct ds_layout_ops ds_layout_map = {
    .name = "map",
    .prepare = ds_map_prepare,
    .attach = ds_map_attach,
    .create = ds_map_create_layout,
    .load = ds_map_load_writer,
    .reserve = ds_map_reserve,
    .fold = ds_map_fold,
    .collect = ds_map_collect,
    .flush = ds_map_flush,
    .close = ds_map_abort,
    .free = ds_map_free,
};
