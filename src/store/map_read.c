/* map_read.c -- map stores (issue 13; docs/store.md, "Map stores"): the
 * reader half (open, readers, verify); map_write.c has the writer half.
 *
 * A map sweep's points record their outcome only (ds_map_rec, map.h). The
 * store keeps them as five N-dimensional arrays over the grid axes under
 * /map (outcome uint8, step uint16 or int32, measure / final_ratio /
 * peak_ratio float32), chunked (~64 Ki pixels a chunk, square-ish),
 * shuffle + deflate compressed and Fletcher32-checksummed, with HDF5 fill
 * values for pixels nobody wrote (so a new map costs nothing on disk), and
 * the axis coordinates as vectors /map/axes/<name>. /summary and /series
 * stay empty; /grid has axis_names and axis_paths but no per-point
 * axis_values.
 *
 * Durability is the store's (journal + publish): ds_store_write_map appends
 * one MAP journal record per tile; a publish gathers the MAP records of the
 * journal, groups them by chunk (a stable counting sort) and reads, updates
 * and writes each touched chunk once. The writer keeps every pixel's outcome
 * byte in memory (1 byte a pixel) for the "inferred never replaces trained"
 * rule and for ds_store_read_map_outcomes.
 *
 * MAP record payload: int64 first index, int64 n, int64 nruns, nruns x
 * (int64 start, int64 length) runs of consecutive indices, then n packed
 * records of 17 bytes (u8 outcome, i32 step, f32 measure, f32 final_ratio,
 * f32 peak_ratio), native byte order like the rest of the journal. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "map_priv.h"



int ds_map_refuse(ds_store *s) {
  return ds_fail(DS_EINPUT, "%s is a map store (%" PRId64 " points as arrays): use `dynsweep map` "
                 "or h5py (/map/outcome, /map/measure, ...; docs/store.md, \"Map stores\")", s->path,
                 s->map ? s->map->npix : (int64_t)0);
}

int ds_store_is_map(ds_store *s) { return s && s->map ? 1 : 0; }

void ds_map_abort(ds_store *s) {
  if (!s->map) return;
  free(s->map->bidx);
  free(s->map->brec);
  s->map->bidx = NULL;
  s->map->brec = NULL;
  s->map->bn = s->map->bcap = 0;
}

void ds_map_free(ds_store *s) {
  struct ds_map_state *m = s->map;
  if (!m) return;
  ds_map_abort(s);
  free(m->shape), free(m->nch), free(m->chunk), free(m->out), free(m->dirty);
  free(m);
  s->map = NULL;
}

/* Chunk dims: start from the whole shape and halve the largest dimension
 * until a chunk holds at most DS_MAP_CHUNK_ELEMS pixels (square-ish tiles of
 * the image: 4096 x 4096 -> 256 x 256). */
void ds_map_chunks(struct ds_map_state *m) {
  for (int a = 0; a < m->naxes; a++) m->chunk[a] = (hsize_t)m->shape[a];
  for (;;) {
    double prod = 1;
    int big = 0;
    for (int a = 0; a < m->naxes; a++) {
      prod *= (double)m->chunk[a];
      if (m->chunk[a] > m->chunk[big]) big = a;
    }
    if (prod <= DS_MAP_CHUNK_ELEMS || m->chunk[big] <= 1) break;
    m->chunk[big] = (m->chunk[big] + 1) / 2;
  }
  m->nchunks = 1;
  m->chunk_elems = 1;
  for (int a = 0; a < m->naxes; a++) {
    m->nch[a] = (m->shape[a] + (int64_t)m->chunk[a] - 1) / (int64_t)m->chunk[a];
    m->nchunks *= m->nch[a];
    m->chunk_elems *= (int64_t)m->chunk[a];
  }
}

struct ds_map_state *ds_map_new(int naxes) {
  struct ds_map_state *m = ds_calloc(1, sizeof *m);
  if (!m) return NULL;
  m->naxes = naxes;
  m->shape = ds_calloc((size_t)naxes, sizeof *m->shape);
  m->nch = ds_calloc((size_t)naxes, sizeof *m->nch);
  m->chunk = ds_calloc((size_t)naxes, sizeof *m->chunk);
  m->refine_axes[0] = m->refine_axes[1] = -1;
  if (!m->shape || !m->nch || !m->chunk) {
    free(m->shape), free(m->nch), free(m->chunk), free(m);
    return NULL;
  }
  return m;
}

int64_t ds_map_chunk_of(const struct ds_map_state *m, int64_t idx) {
  int64_t c = 0, mul = 1;
  for (int a = m->naxes - 1; a >= 0; a--) {
    int64_t x = idx % m->shape[a];
    idx /= m->shape[a];
    c += x / (int64_t)m->chunk[a] * mul;
    mul *= m->nch[a];
  }
  return c;
}

void ds_map_mark(struct ds_map_state *m, int64_t idx) {
  if (!m->dirty) return;
  int64_t c = ds_map_chunk_of(m, idx);
  if (!m->dirty[c]) {
    m->dirty[c] = 1;
    m->ndirty++;
  }
}



void ds_map_dset_name(const char *axis, char *buf, size_t n) {
  snprintf(buf, n, "map/axes/%s", axis);
  for (char *p = buf + 9; *p; p++)
    if (*p == '/') *p = '_';
}

/* ---- open ------------------------------------------------------------------------ */

static int ds_map_get_arr(hid_t loc, const char *name, hid_t mtype, hsize_t n, void *v) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  hid_t sp = a >= 0 ? H5Aget_space(a) : -1;
  int ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == (hssize_t)n && H5Aread(a, mtype, v) >= 0;
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  return ok ? 0 : -1;
}

int ds_map_open(ds_store *s) {
  if (s->map) return DS_OK; /* a writer reopening after a publish keeps its state */
  htri_t ex = H5Lexists(s->file, "map", H5P_DEFAULT);
  if (ex < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot look up /map");
  if (!ex) return DS_OK;
  hid_t g = H5Gopen2(s->file, "map", H5P_DEFAULT);
  int64_t na = 0, v = 0;
  if (g < 0 || ds_store_get_i64(g, "naxes", &na) < 0 || na < 1 || na > 32) {
    if (g >= 0) H5Gclose(g);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /map: the file is damaged");
  }
  struct ds_map_state *m = ds_map_new((int)na);
  if (!m) {
    H5Gclose(g);
    return DS_ENOMEM;
  }
  int32_t ra[2] = {-1, -1};
  int ok = ds_map_get_arr(g, "shape", H5T_NATIVE_INT64, (hsize_t)na, m->shape) >= 0 &&
           ds_map_get_arr(g, "refine_axes", H5T_NATIVE_INT32, 2, ra) >= 0;
  if (ok && ds_store_get_i64(g, "steps", &v) >= 0) m->steps = v;
  if (ok && ds_store_get_i64(g, "tile_points", &v) >= 0) m->tile_points = v;
  if (ok && ds_store_get_i64(g, "refine_levels", &v) >= 0) m->refine_levels = (int)v;
  m->refine_axes[0] = ra[0];
  m->refine_axes[1] = ra[1];
  double prod = 1;
  m->npix = 1;
  for (int a = 0; ok && a < m->naxes; a++) {
    ok = m->shape[a] >= 1;
    prod *= (double)m->shape[a];
    m->npix *= m->shape[a];
  }
  ok = ok && prod <= 9e15;
  /* the step type and chunking as the file has them */
  hid_t d = ok ? H5Dopen2(g, "step", H5P_DEFAULT) : -1;
  hid_t t = d >= 0 ? H5Dget_type(d) : -1;
  hid_t dcpl = d >= 0 ? H5Dget_create_plist(d) : -1;
  ok = ok && t >= 0 && dcpl >= 0 && H5Pget_chunk(dcpl, m->naxes, m->chunk) == m->naxes;
  if (ok) m->step16 = H5Tget_size(t) == 2;
  if (dcpl >= 0) H5Pclose(dcpl);
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  H5Gclose(g);
  for (int a = 0; ok && a < m->naxes; a++) ok = m->chunk[a] >= 1;
  if (!ok) {
    s->map = m;
    ds_map_free(s);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /map (shape, step, chunks): the file is "
                           "damaged; 'dynsweep verify %s' lists what", s->path);
  }
  m->nchunks = m->chunk_elems = 1;
  for (int a = 0; a < m->naxes; a++) {
    m->nch[a] = (m->shape[a] + (int64_t)m->chunk[a] - 1) / (int64_t)m->chunk[a];
    m->nchunks *= m->nch[a];
    m->chunk_elems *= (int64_t)m->chunk[a];
  }
  s->map = m;
  return DS_OK;
}

int ds_store_map_info(ds_store *s, int *naxes, int64_t **shape, int *refine_levels,
                      int refine_axes[2]) {
  if (!s->map) return ds_fail(DS_EINPUT, "%s is not a map store", s->path);
  struct ds_map_state *m = s->map;
  if (shape) {
    *shape = malloc((size_t)m->naxes * sizeof **shape);
    if (!*shape) return DS_ENOMEM;
    memcpy(*shape, m->shape, (size_t)m->naxes * sizeof **shape);
  }
  if (naxes) *naxes = m->naxes;
  if (refine_levels) *refine_levels = m->refine_levels;
  if (refine_axes) refine_axes[0] = m->refine_axes[0], refine_axes[1] = m->refine_axes[1];
  return DS_OK;
}

/* The refinement's inferred pixels, as python/dynsweep/maps.py fill_refined
 * (and rank 0's ms_plane, mode 2) make them: from the coarsest cells down,
 * every cell whose corners are known and agree gives its class, flagged
 * DS_MAP_INFERRED, to its midpoints nobody trained. */
int ds_map_fill_refined(uint8_t *o, int naxes, const int64_t *shape, int levels,
                        const int axes[2]) {
  if (levels <= 0) return DS_OK;
  if (naxes < 1 || naxes > 32 || axes[0] < 0 || axes[0] >= naxes || axes[1] >= naxes)
    return ds_fail(DS_EINTERNAL, "ds_map_fill_refined: bad axes");
  int64_t stride[32], N = 1;
  for (int a = naxes - 1; a >= 0; a--) stride[a] = N, N *= shape[a];
  int ra = axes[0], rb = axes[1], two = rb >= 0;
  int64_t na = shape[ra], nb = two ? shape[rb] : 1, sa = stride[ra], sb = two ? stride[rb] : 0;
  int64_t nslice = N / (na * nb);
  for (int64_t H = (int64_t)1 << levels; H >= 2; H /= 2) {
    int64_t h = H / 2;
    for (int64_t sl = 0; sl < nslice; sl++) {
      int64_t base = 0, r = sl;
      for (int a = naxes - 1; a >= 0; a--) {
        if (a == ra || a == rb) continue;
        base += (r % shape[a]) * stride[a];
        r /= shape[a];
      }
      for (int64_t i = 0; i + H < na; i += H)
        for (int64_t j = 0; two ? j + H < nb : j == 0; j += two ? H : 1) {
          int64_t c00 = base + i * sa + j * sb, c10 = c00 + H * sa, c01 = c00 + H * sb,
                  c11 = c10 + H * sb;
          if (o[c00] == DS_MAP_UNSET || o[c10] == DS_MAP_UNSET || o[c01] == DS_MAP_UNSET ||
              o[c11] == DS_MAP_UNSET)
            continue;
          uint8_t k = o[c00] & 0x3f;
          if (k != (o[c10] & 0x3f) || k != (o[c01] & 0x3f) || k != (o[c11] & 0x3f)) continue;
          int64_t mid[5] = {c00 + h * sa, c00 + h * sb, c00 + h * sa + h * sb, c10 + h * sb,
                            c01 + h * sa};
          for (int q = 0; q < (two ? 5 : 1); q++)
            if (o[mid[q]] == DS_MAP_UNSET) o[mid[q]] = k | DS_MAP_INFERRED;
        }
    }
  }
  return DS_OK;
}

static int ds_map_index_level(int64_t i, int levels) {
  int k = 0;
  if (i == 0) return 0;
  while (k < levels && !(i & 1)) i >>= 1, k++;
  return levels - k;
}

void ds_map_level_counts(const uint8_t *o, int naxes, const int64_t *shape, int levels,
                         const int axes[2], int64_t *trained) {
  for (int k = 0; k <= levels; k++) trained[k] = 0;
  if (levels <= 0 || naxes < 1 || naxes > 32 || axes[0] < 0 || axes[0] >= naxes) return;
  int64_t stride[32], N = 1;
  for (int a = naxes - 1; a >= 0; a--) stride[a] = N, N *= shape[a];
  for (int64_t p = 0; p < N; p++) {
    if (!ds_map_trained(o[p])) continue;
    int l = ds_map_index_level(p / stride[axes[0]] % shape[axes[0]], levels);
    if (axes[1] >= 0) {
      int l2 = ds_map_index_level(p / stride[axes[1]] % shape[axes[1]], levels);
      l = l2 > l ? l2 : l;
    }
    trained[l]++;
  }
}

int ds_store_read_map_axes(ds_store *s, int *naxes, char ***names, double ***vals) {
  if (!s->map) return ds_fail(DS_EINPUT, "%s is not a map store", s->path);
  struct ds_map_state *m = s->map;
  hid_t d = H5Dopen2(s->file, "grid/axis_names", H5P_DEFAULT);
  char **nm = NULL;
  int64_t n = 0;
  int ok = d >= 0 && ds_store_get_strs_dset(d, &nm, &n) >= 0;
  if (d >= 0) H5Dclose(d);
  if (!ok || n != m->naxes) {
    ds_store_free_strs(nm, n);
    return ds_store_h5fail(DS_EIO, s->path, "cannot read /grid/axis_names of the map");
  }
  double **v = ds_calloc((size_t)n, sizeof *v);
  for (int a = 0; v && ok && a < m->naxes; a++) {
    char name[600];
    ds_map_dset_name(nm[a], name, sizeof name);
    v[a] = malloc((size_t)m->shape[a] * sizeof **v);
    hid_t ad = H5Dopen2(s->file, name, H5P_DEFAULT);
    hid_t sp = ad >= 0 ? H5Dget_space(ad) : -1;
    ok = v[a] && sp >= 0 && H5Sget_simple_extent_npoints(sp) == m->shape[a] &&
         H5Dread(ad, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v[a]) >= 0;
    if (sp >= 0) H5Sclose(sp);
    if (ad >= 0) H5Dclose(ad);
  }
  if (!v || !ok) {
    for (int a = 0; v && a < m->naxes; a++) free(v[a]);
    free(v);
    ds_store_free_strs(nm, n);
    return v ? ds_store_h5fail(DS_EIO, s->path, "cannot read the map's axis values /map/axes")
             : DS_ENOMEM;
  }
  *naxes = m->naxes;
  *names = nm;
  *vals = v;
  return DS_OK;
}

/* ---- journal records --------------------------------------------------------------- */

void ds_map_pack(unsigned char *b, const ds_map_rec *r) {
  b[0] = r->outcome;
  memcpy(b + 1, &r->step, 4);
  memcpy(b + 5, &r->measure, 4);
  memcpy(b + 9, &r->final_ratio, 4);
  memcpy(b + 13, &r->peak_ratio, 4);
}

static void ds_map_unpack(const unsigned char *b, ds_map_rec *r) {
  memset(r, 0, sizeof *r);
  r->outcome = b[0];
  memcpy(&r->step, b + 1, 4);
  memcpy(&r->measure, b + 5, 4);
  memcpy(&r->final_ratio, b + 9, 4);
  memcpy(&r->peak_ratio, b + 13, 4);
}


/* Decodes a MAP record and calls fn for each of its pixels. */
int ds_map_decode(ds_store *s, const char *p, size_t len, ds_map_fn fn, void *arg) {
  int64_t h[3];
  struct ds_map_state *m = s->map;
  if (len < sizeof h) goto bad;
  memcpy(h, p, sizeof h);
  int64_t n = h[1], nruns = h[2];
  if (n < 0 || nruns < 0 || nruns > n || (uint64_t)n > len / DS_MAP_PACKED ||
      len != sizeof h + (size_t)nruns * 16 + (size_t)n * DS_MAP_PACKED)
    goto bad;
  const char *runs = p + sizeof h;
  const unsigned char *recs = (const unsigned char *)runs + nruns * 16;
  int64_t k = 0;
  for (int64_t r = 0; r < nruns; r++) {
    int64_t rs[2];
    memcpy(rs, runs + r * 16, sizeof rs);
    if (rs[0] < 0 || rs[1] < 1 || rs[1] > n - k || rs[0] > m->npix - rs[1]) goto bad;
    for (int64_t i = 0; i < rs[1]; i++, k++) {
      ds_map_rec rec;
      ds_map_unpack(recs + k * DS_MAP_PACKED, &rec);
      if (!ds_map_valid_rec(rec.outcome)) goto bad;
      DS_TRY(fn(arg, rs[0] + i, &rec));
    }
  }
  if (k != n) goto bad;
  return DS_OK;
bad:
  return ds_fail(DS_EIO, "%s: corrupt map journal record (%zu bytes)", s->jpath ? s->jpath : s->path,
                 len);
}

int ds_map_fold_cb(void *arg, int64_t idx, const ds_map_rec *r) {
  struct ds_map_state *m = arg;
  if (ds_map_takes(m->out[idx], r->outcome)) {
    m->out[idx] = r->outcome;
    ds_map_mark(m, idx);
  }
  return DS_OK;
}

hid_t ds_map_open_dset(ds_store *s, int k) {
  struct ds_map_state *m = s->map;
  hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
  size_t cb = (size_t)m->chunk_elems * ds_map_esize(m, k);
  if (dapl >= 0) H5Pset_chunk_cache(dapl, 12421, cb * 4 > (1u << 20) ? cb * 4 : (1u << 20), 1.0);
  char name[32];
  snprintf(name, sizeof name, "map/%s", ds_map_dsets[k]);
  hid_t d = H5Dopen2(s->file, name, dapl >= 0 ? dapl : H5P_DEFAULT);
  if (dapl >= 0) H5Pclose(dapl);
  return d;
}

/* Reads dataset k whole into buf (npix elements of its memory type). */
int ds_map_read_all(ds_store *s, int k, void *buf) {
  hid_t d = ds_map_open_dset(s, k);
  int ok = d >= 0 && H5Dread(d, ds_map_mtype(s->map, k), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
  if (d >= 0) H5Dclose(d);
  return ok ? DS_OK : ds_store_h5fail(DS_EIO, s->path, "cannot read /map/%s", ds_map_dsets[k]);
}


/* The pixels of chunk c: start st and dims cnt (clipped at the edges); returns
 * their count. */
int64_t ds_map_chunk_box(const struct ds_map_state *m, int64_t c, hsize_t *st, hsize_t *cnt) {
  int64_t elems = 1;
  for (int a = m->naxes - 1; a >= 0; a--) {
    int64_t cc = c % m->nch[a];
    c /= m->nch[a];
    st[a] = (hsize_t)cc * m->chunk[a];
    cnt[a] = (hsize_t)m->shape[a] - st[a] < m->chunk[a] ? (hsize_t)m->shape[a] - st[a] : m->chunk[a];
    elems *= (int64_t)cnt[a];
  }
  return elems;
}

/* Applies the gathered records: grouped by chunk (stable, so journal order
 * holds within a chunk), each touched chunk read, updated and written once. */
/* ---- readers ------------------------------------------------------------------------- */

typedef struct {
  ds_store *s;
  ds_map_fn fn;
  void *arg;
} ds_map_jscan;

static int ds_map_jscan_cb(void *arg, uint32_t type, const char *p, size_t len) {
  ds_map_jscan *j = arg;
  if (type != DS_JR_MAP) return DS_OK;
  return ds_map_decode(j->s, p, len, j->fn, j->arg);
}

/* The journaled records not yet published: a writer's own journal, or for a
 * reader the journal of a running writer when it belongs to this file's
 * generation. A torn tail or a damaged record ends the scan quietly. */
static int ds_map_journal(ds_store *s, ds_map_fn fn, void *arg) {
  ds_map_jscan j = {s, fn, arg};
  if (s->writable) {
    if (s->jfd < 0) return DS_OK;
    return ds_journal_scan(s->jfd, ds_map_jscan_cb, &j, NULL, NULL);
  }
  char jpath[4200], uuid[40] = "";
  int64_t gen = 0;
  snprintf(jpath, sizeof jpath, "%s.journal", s->path);
  int fd = open(jpath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return DS_OK;
  ds_journal_hdr h;
  if (ds_journal_read_hdr(fd, &h) == 0 && h.row_size == sizeof(ds_summary_row) &&
      ds_store_get_text(s->file, "store_uuid", uuid, sizeof uuid) >= 0 &&
      ds_store_get_i64(s->file, "generation", &gen) >= 0 && strtoull(uuid, NULL, 16) == h.uuid &&
      h.base_gen == gen) {
    ds_journal_scan(fd, ds_map_jscan_cb, &j, NULL, NULL);
    ds_clear_error(); /* what the writer has not finished writing is not there yet */
  }
  H5Eclear2(H5E_DEFAULT);
  close(fd);
  return DS_OK;
}

int ds_store_read_map_outcomes(ds_store *s, uint8_t **out, int64_t *n) {
  *out = NULL;
  *n = 0;
  if (!s->map) return ds_fail(DS_EINPUT, "%s is not a map store", s->path);
  struct ds_map_state *m = s->map;
  uint8_t *o = malloc((size_t)m->npix);
  if (!o) return DS_ENOMEM;
  int rc;
  if (s->writable && m->out) {
    memcpy(o, m->out, (size_t)m->npix);
    rc = DS_OK;
  } else {
    struct ds_map_state tmp = *m; /* fold into o, not into a writer's state */
    tmp.out = o;
    tmp.dirty = NULL;
    rc = ds_map_read_all(s, 0, o);
    if (rc == DS_OK) rc = ds_map_journal(s, ds_map_fold_cb, &tmp);
  }
  if (rc != DS_OK) {
    free(o);
    return rc;
  }
  *out = o;
  *n = m->npix;
  return DS_OK;
}

static int ds_map_rec_cb(void *arg, int64_t idx, const ds_map_rec *r) {
  ds_map_rec *v = arg;
  if (ds_map_takes(v[idx].outcome, r->outcome)) v[idx] = *r;
  return DS_OK;
}

int ds_store_read_map(ds_store *s, ds_map_rec **recs, int64_t *n) {
  *recs = NULL;
  *n = 0;
  if (!s->map) return ds_fail(DS_EINPUT, "%s is not a map store", s->path);
  struct ds_map_state *m = s->map;
  size_t np = (size_t)m->npix;
  ds_map_rec *v = ds_calloc(np, sizeof *v);
  void *tmp = malloc(np * 4);
  int rc = v && tmp ? DS_OK : DS_ENOMEM;
  for (int k = 0; rc == DS_OK && k < DS_MAP_NDSET; k++) {
    rc = ds_map_read_all(s, k, tmp);
    if (rc != DS_OK) break;
    for (size_t i = 0; i < np; i++) {
      if (k == 0) v[i].outcome = ((uint8_t *)tmp)[i];
      else if (k == 1 && m->step16) {
        uint16_t x = ((uint16_t *)tmp)[i];
        v[i].step = x == DS_MAP_STEP16_UNKNOWN ? -1 : x;
      } else if (k == 1) v[i].step = ((int32_t *)tmp)[i];
      else if (k == 2) v[i].measure = ((float *)tmp)[i];
      else if (k == 3) v[i].final_ratio = ((float *)tmp)[i];
      else v[i].peak_ratio = ((float *)tmp)[i];
    }
  }
  free(tmp);
  if (rc == DS_OK) rc = ds_map_journal(s, ds_map_rec_cb, v);
  if (rc != DS_OK) {
    free(v);
    return rc;
  }
  *recs = v;
  *n = m->npix;
  return DS_OK;
}

/* ---- verify ------------------------------------------------------------------------- */

#define ds_map_damaged(nd, out, ...) (fprintf(out, "damaged: "), fprintf(out, __VA_ARGS__), \
                                      fputc('\n', out), (*(nd))++)

static const char *ds_map_why(char *buf, size_t n) {
  ds_store_h5fail(DS_EIO, "", "x");
  const char *msg = ds_errmsg(), *h = strstr(msg, "(HDF5: ");
  if (h) snprintf(buf, n, "%.*s", (int)strcspn(h + 7, ")"), h + 7);
  else snprintf(buf, n, "read error");
  ds_clear_error();
  return buf;
}

/* Every chunk of every /map dataset is read (Fletcher32 checked by HDF5);
 * shapes against /map's shape and the axes; outcome bytes valid; steps in
 * range; the axis vectors readable and of the right length. */
void ds_map_verify(ds_store *s, FILE *out, int64_t *ndamaged, int64_t *nread) {
  struct ds_map_state *m = s->map;
  char why[256];
  int na = 0;
  char **names = NULL;
  double **vals = NULL;
  if (ds_store_read_map_axes(s, &na, &names, &vals) != DS_OK) {
    ds_map_damaged(ndamaged, out, "the map's axes cannot be read: %s", ds_errmsg());
    ds_clear_error();
  } else {
    for (int a = 0; a < na; a++) {
      for (int64_t i = 0; i < m->shape[a]; i++)
        if (!isfinite(vals[a][i])) {
          ds_map_damaged(ndamaged, out, "/map/axes/%s[%" PRId64 "] is not finite", names[a], i);
          break;
        }
      free(vals[a]);
    }
    free(vals);
    ds_store_free_strs(names, na);
    *nread += na;
  }
  hsize_t *st = ds_calloc((size_t)m->naxes, sizeof *st), *cnt = ds_calloc((size_t)m->naxes, sizeof *cnt);
  hsize_t *dims = ds_calloc((size_t)m->naxes, sizeof *dims);
  void *buf = malloc((size_t)m->chunk_elems * 4);
  if (!st || !cnt || !dims || !buf) {
    free(st), free(cnt), free(dims), free(buf);
    ds_map_damaged(ndamaged, out, "out of memory checking /map");
    return;
  }
  for (int k = 0; k < DS_MAP_NDSET; k++) {
    hid_t d = ds_map_open_dset(s, k), fs = d >= 0 ? H5Dget_space(d) : -1;
    (*nread)++;
    if (fs < 0 || H5Sget_simple_extent_ndims(fs) != m->naxes) {
      ds_map_damaged(ndamaged, out, "/map/%s cannot be opened or has the wrong rank: %s",
                     ds_map_dsets[k], ds_map_why(why, sizeof why));
      if (fs >= 0) H5Sclose(fs);
      if (d >= 0) H5Dclose(d);
      continue;
    }
    H5Sget_simple_extent_dims(fs, dims, NULL);
    int shape_ok = 1;
    for (int a = 0; a < m->naxes; a++) shape_ok = shape_ok && (int64_t)dims[a] == m->shape[a];
    if (!shape_ok) {
      ds_map_damaged(ndamaged, out, "/map/%s does not have the map's shape", ds_map_dsets[k]);
      H5Sclose(fs);
      H5Dclose(d);
      continue;
    }
    int64_t bad_chunks = 0, bad_vals = 0, first_bad = -1;
    for (int64_t c = 0; c < m->nchunks; c++) {
      int64_t elems = ds_map_chunk_box(m, c, st, cnt);
      hid_t ms = H5Screate_simple(m->naxes, cnt, NULL);
      int ok = ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL) >= 0 &&
               H5Dread(d, ds_map_mtype(m, k), ms, fs, H5P_DEFAULT, buf) >= 0;
      if (ms >= 0) H5Sclose(ms);
      if (!ok) {
        if (bad_chunks++ < 8) {
          char where[256];
          size_t o = 0;
          for (int a = 0; a < m->naxes && o < sizeof where; a++)
            o += (size_t)snprintf(where + o, sizeof where - o, "%s%llu-%llu", a ? ", " : "",
                                  (unsigned long long)st[a], (unsigned long long)(st[a] + cnt[a] - 1));
          ds_map_damaged(ndamaged, out, "/map/%s chunk of pixels [%s] cannot be read: %s",
                         ds_map_dsets[k], where, ds_map_why(why, sizeof why));
        } else {
          (*ndamaged)++;
        }
        H5Eclear2(H5E_DEFAULT);
        continue;
      }
      for (int64_t i = 0; i < elems; i++) {
        int bad = 0;
        if (k == 0) bad = !ds_map_valid_px(((uint8_t *)buf)[i]);
        else if (k == 1 && !m->step16) bad = ((int32_t *)buf)[i] < -1;
        else if (k == 1 && m->steps > 0) {
          uint16_t x = ((uint16_t *)buf)[i];
          bad = x != DS_MAP_STEP16_UNKNOWN && x > m->steps;
        }
        if (bad && !bad_vals++) first_bad = c;
      }
    }
    if (bad_chunks > 8)
      fprintf(out, "damaged: /map/%s: %" PRId64 " more damaged chunk(s) not listed\n",
              ds_map_dsets[k], bad_chunks - 8);
    if (bad_vals)
      ds_map_damaged(ndamaged, out, "/map/%s holds %" PRId64 " value(s) out of range (first in "
                     "chunk %" PRId64 ")", ds_map_dsets[k], bad_vals, first_bad);
    H5Sclose(fs);
    H5Dclose(d);
  }
  free(st), free(cnt), free(dims), free(buf);
  H5Eclear2(H5E_DEFAULT);
}

