/* segments.c -- format 5: /series/step and /series/value of STORE are HDF5
 * virtual datasets (VDS) over immutable segment files in a directory next to
 * STORE (STORE.seg/), so a publish writes what is new plus a small top file
 * instead of copying the whole store. See docs/store.md, "Segments".
 *
 * A segment file <uuid>-<gen>-<k>.h5 holds /step (int64) and /value (float64)
 * for a consecutive range of the store's records; gen is the generation of the
 * STORE that first referenced it, k its number within that publish (0: the
 * new records; 1...: merges). /series of the top file lists them in order
 * (attribute "segments", n x 4 int64: gen, k, nstep, nvalue), names the
 * directory (attribute "segment_dir", relative to STORE's directory) and the
 * segments its publish merged away ("retired", same shape): those are
 * deleted by the next publish, so a reader of the previous STORE keeps its
 * files for one more publish interval.
 *
 * Merging: after the new segment is added, adjacent segments whose sum is at
 * most the cap (4% of the series bytes, at least 4 MiB; DYNSWEEP_SEG_CAP
 * bytes for tests) are merged, smallest pair first, while a merge costs at
 * most max(4 x the new bytes, 1 MiB) -- or, above DS_SEG_MAX segments, the
 * cap. So a publish writes O(what is new) plus at most one cap, the number of
 * segments stays bounded (every adjacent pair > cap means n < 2 / 4% + 1) and
 * the extra disk of a publish is at most the cap plus the retired segments
 * of the previous publish (<= the cap). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"
#include "fsio.h"
#include "store_priv.h"

#define DS_SEG_CHUNK 8192   /* elements per chunk of a segment's datasets (64 KiB) */
#define DS_SEG_MAX 48       /* above this many segments, merges may cost up to the cap */
#define DS_SEG_CAP_MIN (4.0 * 1048576)
#define DS_SEG_CAP_FRAC 0.04
#define DS_SEG_BLOCK (1 << 20) /* elements per read/write of a merge */

int ds_seg_wanted(int dflt) {
  int on = ds_knob_on(DS_KNOB_STORE_SEGMENTS);
  return on < 0 ? dflt != 0 : on;
}

static double ds_seg_bytes(const ds_seg *g) { return 8.0 * (double)(g->nstep + g->nval); }

/* "<uuid>-<gen>-<k>.h5" */
static void ds_seg_name(const ds_store *s, const ds_seg *g, char *buf, size_t n) {
  snprintf(buf, n, "%016" PRIx64 "-%" PRId64 "-%" PRId64 ".h5", s->uuid, g->gen, g->k);
}

/* The path of segment g as this process opens it (STORE's directory / dir / name). */
static void ds_seg_path(const ds_store *s, const ds_seg *g, char *buf, size_t n) {
  char name[80];
  ds_seg_name(s, g, name, sizeof name);
  snprintf(buf, n, "%s/%s/%s", s->topdir, s->segdir, name);
}

static void ds_seg_dirpath(const ds_store *s, char *buf, size_t n) {
  snprintf(buf, n, "%s/%s", s->topdir, s->segdir);
}

/* Sets s->topdir and s->segdir (name = basename(STORE).seg unless given). */
int ds_seg_set_dirs(ds_store *s, const char *segdir) {
  char *a = ds_strdup(s->path), *b = ds_strdup(s->path);
  free(s->topdir);
  free(s->segdir);
  s->topdir = a ? ds_strdup(dirname(a)) : NULL;
  size_t n = (segdir ? strlen(segdir) : strlen(s->path)) + 8;
  s->segdir = ds_calloc(n, 1);
  if (s->segdir && segdir) snprintf(s->segdir, n, "%s", segdir);
  else if (s->segdir && b) snprintf(s->segdir, n, "%s.seg", basename(b));
  free(a), free(b);
  return s->topdir && s->segdir ? DS_OK : DS_ENOMEM;
}

void ds_seg_free(ds_store *s) {
  ds_seg_close(s);
  ds_blk_free(s);
  free(s->segs), free(s->ret), free(s->made), free(s->nsegs), free(s->nret);
  s->segs = s->ret = s->made = s->nsegs = s->nret = NULL;
  s->nseg = s->nretired = s->nmade = s->nnseg = s->nnret = 0;
  free(s->topdir), free(s->segdir);
  s->topdir = s->segdir = NULL;
}

void ds_seg_close(ds_store *s) {
  for (int64_t i = 0; s->segf && i < s->nsegf; i++)
    if (s->segf[i] >= 0) H5Fclose(s->segf[i]);
  free(s->segf);
  s->segf = NULL;
  s->nsegf = 0;
}

/* ---- attributes ---------------------------------------------------------- */

static int ds_seg_put_list(hid_t loc, const char *name, const ds_seg *g, int64_t n) {
  return ds_store_put_i64_table(loc, name, (const int64_t *)g, n, 4, 0);
}

_Static_assert(sizeof(ds_seg) == 4 * sizeof(int64_t), "ds_seg is read as an n x 4 int64 table");

static int ds_seg_get_list(hid_t loc, const char *name, ds_seg **out, int64_t *n) {
  int64_t *v = NULL;
  int rc = ds_store_get_i64_table(loc, name, 4, &v, n);
  *out = (ds_seg *)v; /* ds_seg is four int64_t */
  return rc;
}

/* A fixed-length string attribute (its bytes inside the checksummed header). */
static int ds_seg_put_fstr(hid_t loc, const char *name, const char *v) {
  if (H5Aexists(loc, name) > 0 && H5Adelete(loc, name) < 0) return -1;
  hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR), a = -1;
  int ok = t >= 0 && sp >= 0 && H5Tset_size(t, strlen(v) + 1) >= 0 && H5Tset_strpad(t, H5T_STR_NULLTERM) >= 0 &&
           H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
           (a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT)) >= 0 && H5Awrite(a, t, v) >= 0;
  if (a >= 0) H5Aclose(a);
  if (t >= 0) H5Tclose(t);
  if (sp >= 0) H5Sclose(sp);
  return ok ? 0 : -1;
}

/* ---- reader: load and check the segments of the open file ------------------ */

static int ds_seg_mapping_ok(ds_store *s, const char *dname, const ds_seg *g, int64_t n, char *why,
                             size_t wn) {
  hid_t d = H5Dopen2(s->series, dname, H5P_DEFAULT), dcpl = d >= 0 ? H5Dget_create_plist(d) : -1;
  int ok = dcpl >= 0;
  size_t cnt = 0;
  int virt = ok && H5Pget_layout(dcpl) == H5D_VIRTUAL;
  if (!ok) snprintf(why, wn, "cannot open /series/%s", dname);
  else if (n == 0 && virt) ok = 0, snprintf(why, wn, "/series/%s is virtual but no segment is listed", dname);
  else if (n > 0 && (!virt || H5Pget_virtual_count(dcpl, &cnt) < 0 || (int64_t)cnt != n))
    ok = 0, snprintf(why, wn, "/series/%s maps %zu segment(s), /series lists %" PRId64, dname, cnt, n);
  int64_t off = 0;
  for (int64_t i = 0; ok && i < n; i++) {
    char want[4200], got[4200] = "", ds[16] = "";
    char name[80];
    ds_seg_name(s, &g[i], name, sizeof name);
    snprintf(want, sizeof want, "%s/%s", s->segdir, name);
    H5Pget_virtual_filename(dcpl, (size_t)i, got, sizeof got);
    H5Pget_virtual_dsetname(dcpl, (size_t)i, ds, sizeof ds);
    hid_t vs = H5Pget_virtual_vspace(dcpl, (size_t)i);
    hsize_t lo = 0, hi = 0;
    int64_t len = !strcmp(dname, "step") ? g[i].nstep : g[i].nval;
    int sel = vs >= 0 && H5Sget_select_bounds(vs, &lo, &hi) >= 0;
    if (vs >= 0) H5Sclose(vs);
    if (strcmp(got, want) || strcmp(ds, dname) || !sel || (int64_t)lo != off || (int64_t)hi != off + len - 1) {
      ok = 0;
      snprintf(why, wn, "/series/%s mapping %" PRId64 " is %s:%s [%llu..%llu], expected %s:%s [%" PRId64
               "..%" PRId64 "]", dname, i, got, ds, (unsigned long long)lo, (unsigned long long)hi, want, dname,
               off, off + len - 1);
    }
    off += len;
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (d >= 0) H5Dclose(d);
  return ok;
}

static int64_t ds_seg_dlen(hid_t f, const char *name) {
  hid_t d = H5Dopen2(f, name, H5P_DEFAULT), sp = d >= 0 ? H5Dget_space(d) : -1;
  hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  return (int64_t)n;
}

/* Opens segment g read-only and checks it belongs here; the file or -1 with
 * why[] saying what was found. */
static hid_t ds_seg_open_checked(ds_store *s, const ds_seg *g, char *why, size_t wn) {
  char p[4300];
  ds_seg_path(s, g, p, sizeof p);
  struct stat st;
  if (stat(p, &st) != 0) {
    snprintf(why, wn, "%s: %s", p, strerror(errno));
    return -1;
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0) {
    H5Pset_fapl_sec2(fapl);
    H5Pset_metadata_read_attempts(fapl, 1);
  }
  hid_t f = fapl >= 0 ? H5Fopen(p, H5F_ACC_RDONLY, fapl) : -1;
  if (fapl >= 0) H5Pclose(fapl);
  if (f < 0) {
    snprintf(why, wn, "%s: cannot open it as HDF5 (damaged or not a segment)", p);
    return -1;
  }
  char fmt[40] = "", uuid[40] = "", want[17];
  int64_t gen = -1, k = -1;
  snprintf(want, sizeof want, "%016" PRIx64, s->uuid);
  ds_store_get_text(f, "format", fmt, sizeof fmt);
  ds_store_get_text(f, "store_uuid", uuid, sizeof uuid);
  ds_store_get_i64(f, "generation", &gen);
  ds_store_get_i64(f, "k", &k);
  int64_t ns = ds_seg_dlen(f, "step"), nv = ds_seg_dlen(f, "value");
  if (strcmp(fmt, "dynsweep-segment") || strcmp(uuid, want) || gen != g->gen || k != g->k || ns != g->nstep ||
      nv != g->nval) {
    snprintf(why, wn, "%s: found format \"%.20s\", store %s, generation %" PRId64 ", part %" PRId64 ", %" PRId64
             " steps, %" PRId64 " values; expected a dynsweep-segment of store %s, generation %" PRId64
             ", part %" PRId64 ", %" PRId64 " steps, %" PRId64 " values", p, fmt, uuid[0] ? uuid : "?", gen, k,
             ns, nv, want, g->gen, g->k, g->nstep, g->nval);
    H5Fclose(f);
    return -1;
  }
  return f;
}

/* Called by every open of a format-5 file: reads the segment list, checks
 * every segment (exists, is this store's, right sizes) and the VDS mappings,
 * and keeps the segment files open (so a later merge deleting one cannot
 * pull it from under this reader: HDF5 reuses the open file). A missing or
 * foreign segment would read as fill values through the VDS: it is an
 * error here. */
int ds_seg_load(ds_store *s) {
  ds_seg_close(s);
  free(s->segs), free(s->ret);
  s->segs = s->ret = NULL;
  s->nseg = s->nretired = 0;
  s->segmented = s->version >= 5;
  if (!s->segmented) return DS_OK;
  char dir[4096] = "", uuid[40] = "";
  if (ds_store_get_text(s->series, "segment_dir", dir, sizeof dir) < 0 || !dir[0] || strchr(dir, '/'))
    return ds_store_h5fail(DS_EIO, s->path, "/series: cannot read its attribute segment_dir (damaged?)");
  if (ds_store_get_text(s->file, "store_uuid", uuid, sizeof uuid) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot read the root attribute store_uuid");
  s->uuid = strtoull(uuid, NULL, 16);
  DS_TRY(ds_seg_set_dirs(s, dir));
  if (ds_seg_get_list(s->series, "segments", &s->segs, &s->nseg) < 0 ||
      ds_seg_get_list(s->series, "retired", &s->ret, &s->nretired) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "/series: cannot read its attributes segments, retired (damaged?)");
  char why[1024];
  if (!ds_seg_mapping_ok(s, "step", s->segs, s->nseg, why, sizeof why) ||
      !ds_seg_mapping_ok(s, "value", s->segs, s->nseg, why, sizeof why))
    return ds_fail(DS_EIO, "%s: the file is damaged: %s", s->path, why);
  s->segf = ds_calloc(s->nseg ? (size_t)s->nseg : 1, sizeof *s->segf);
  if (!s->segf) return DS_ENOMEM;
  s->nsegf = s->nseg;
  for (int64_t i = 0; i < s->nseg; i++) s->segf[i] = -1;
  int64_t st = 0;
  for (int64_t i = 0; i < s->nseg; i++) {
    s->segf[i] = ds_seg_open_checked(s, &s->segs[i], why, sizeof why);
    if (s->segf[i] < 0) {
      H5Eclear2(H5E_DEFAULT);
      return ds_fail(DS_EIO, "%s: segment %" PRId64 " of %" PRId64 " (records %" PRId64 "..%" PRId64
                     " of /series/step) is missing or damaged: %s; a store is STORE plus its directory %s/ "
                     "(copy or move both, into one directory)",
                     s->path, i + 1, s->nseg, st, st + s->segs[i].nstep - 1, why, s->segdir);
    }
    st += s->segs[i].nstep;
  }
  return ds_blk_load(s);
}

/* ---- writer --------------------------------------------------------------- */

/* Creates the (empty) segment directory of a new format-5 store and names it
 * in /series. */
int ds_seg_mkdir(ds_store *s) {
  DS_TRY(ds_seg_set_dirs(s, NULL));
  char d[4300];
  ds_seg_dirpath(s, d, sizeof d);
  if (ds_fs_mkdir(d) != 0 && errno != EEXIST)
    return ds_fail(DS_EIO, "%s: cannot create the segment directory %s: %s", s->path, d, strerror(errno));
  return DS_OK;
}

int ds_seg_create(ds_store *s) {
  if (!s->segdir) DS_TRY(ds_seg_mkdir(s));
  if (ds_seg_put_fstr(s->series, "segment_dir", s->segdir) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write /series attributes");
  s->segmented = 1;
  return DS_OK;
}

static hid_t ds_seg_dcpl(int64_t n) {
  hsize_t c = (hsize_t)(n < DS_SEG_CHUNK ? n : DS_SEG_CHUNK);
  hid_t p = c ? ds_store_dcpl_sum(1, &c) : H5Pcreate(H5P_DATASET_CREATE);
  if (p >= 0 && c) H5Pset_fill_time(p, H5D_FILL_TIME_NEVER);
  return p;
}

/* Writes segment g: from memory (step/val) or, if src, the segments src[0..nsrc)
 * concatenated. Reserves its space first (HDF5 1.10 cannot recover from a failed
 * write at close), fsyncs it. */
static int ds_seg_write(ds_store *s, const ds_seg *g, const int64_t *step, const double *val, const ds_seg *src,
                        int64_t nsrc) {
  char p[4300];
  ds_seg_path(s, g, p, sizeof p);
  s->made[s->nmade++] = *g; /* recorded before anything can fail: a failed publish removes it */
  hid_t f = ds_seg_file_create(s, p, ds_seg_bytes(g) * 1.02 + 65536.0, "dynsweep-segment");
  if (f < 0) return DS_EIO;
  int ok = ds_store_put_i64(f, "generation", g->gen) >= 0 && ds_store_put_i64(f, "k", g->k) >= 0;
  const char *names[2] = {"step", "value"};
  hid_t ft[2] = {H5T_STD_I64LE, H5T_IEEE_F64LE}, mt[2] = {H5T_NATIVE_INT64, H5T_NATIVE_DOUBLE};
  int64_t len[2] = {g->nstep, g->nval};
  void *buf = NULL;
  for (int j = 0; ok && j < 2; j++) {
    hsize_t n = (hsize_t)len[j];
    hid_t sp = H5Screate_simple(1, &n, NULL), dcpl = ds_seg_dcpl(len[j]);
    hid_t d = sp >= 0 && dcpl >= 0 ? H5Dcreate2(f, names[j], ft[j], sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    ok = d >= 0;
    if (ok && !src && n) ok = H5Dwrite(d, mt[j], H5S_ALL, H5S_ALL, ds_store_dxpl(), j ? (const void *)val : (const void *)step) >= 0;
    int64_t off = 0;
    for (int64_t i = 0; ok && src && i < nsrc; i++) { /* merge: copy block by block */
      char sp2[4300];
      ds_seg_path(s, &src[i], sp2, sizeof sp2);
      hid_t sf = H5Fopen(sp2, H5F_ACC_RDONLY, H5P_DEFAULT);
      hid_t sd = sf >= 0 ? H5Dopen2(sf, names[j], H5P_DEFAULT) : -1;
      int64_t sn = j ? src[i].nval : src[i].nstep;
      if (!buf) buf = malloc((size_t)DS_SEG_BLOCK * 8);
      ok = sd >= 0 && buf;
      for (int64_t o = 0; ok && o < sn; o += DS_SEG_BLOCK) {
        hsize_t c = (hsize_t)(sn - o < DS_SEG_BLOCK ? sn - o : DS_SEG_BLOCK), so = (hsize_t)o, doff = (hsize_t)(off + o);
        hid_t ms = H5Screate_simple(1, &c, NULL), ss = H5Dget_space(sd), ds = H5Dget_space(d);
        ok = ms >= 0 && ss >= 0 && ds >= 0 && H5Sselect_hyperslab(ss, H5S_SELECT_SET, &so, NULL, &c, NULL) >= 0 &&
             H5Sselect_hyperslab(ds, H5S_SELECT_SET, &doff, NULL, &c, NULL) >= 0 &&
             H5Dread(sd, mt[j], ms, ss, ds_store_dxpl(), buf) >= 0 &&
             H5Dwrite(d, mt[j], ms, ds, ds_store_dxpl(), buf) >= 0;
        if (ms >= 0) H5Sclose(ms);
        if (ss >= 0) H5Sclose(ss);
        if (ds >= 0) H5Sclose(ds);
      }
      if (!ok && sf >= 0) ds_store_h5fail(DS_EIO, sp2, "merging: cannot read /%s", names[j]);
      if (sd >= 0) H5Dclose(sd);
      if (sf >= 0) H5Fclose(sf);
      off += sn;
      if (!ok) {
        free(buf);
        if (d >= 0) H5Dclose(d);
        if (sp >= 0) H5Sclose(sp);
        if (dcpl >= 0) H5Pclose(dcpl);
        H5Fclose(f);
        return DS_EIO;
      }
    }
    if (d >= 0) H5Dclose(d);
    if (sp >= 0) H5Sclose(sp);
    if (dcpl >= 0) H5Pclose(dcpl);
  }
  free(buf);
  return ds_seg_file_finish(f, p, ok);
}

/* /series/step or value anew: a VDS over the segments (a plain empty
 * dataset while there are none). */
static int ds_seg_vds(ds_store *s, const char *dname, hid_t type, const ds_seg *g, int64_t n) {
  if (H5Lexists(s->series, dname, H5P_DEFAULT) > 0 && H5Ldelete(s->series, dname, H5P_DEFAULT) < 0) return -1;
  int isstep = !strcmp(dname, "step");
  hsize_t total = 0;
  for (int64_t i = 0; i < n; i++) total += (hsize_t)(isstep ? g[i].nstep : g[i].nval);
  hid_t vs = H5Screate_simple(1, &total, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int ok = vs >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0;
  if (isstep) {
    int64_t fill = INT64_MIN;
    ok = ok && H5Pset_fill_value(dcpl, H5T_NATIVE_INT64, &fill) >= 0;
  } else {
    double fill = 0.0 / 0.0;
    ok = ok && H5Pset_fill_value(dcpl, H5T_NATIVE_DOUBLE, &fill) >= 0;
  }
  if (n == 0) { /* no segment: an empty dataset, as a new store has */
    hsize_t c = 1;
    ok = ok && H5Pset_chunk(dcpl, 1, &c) >= 0;
  }
  hsize_t off = 0;
  for (int64_t i = 0; ok && i < n; i++) {
    hsize_t cnt = (hsize_t)(isstep ? g[i].nstep : g[i].nval);
    char name[80], src[4200];
    ds_seg_name(s, &g[i], name, sizeof name);
    snprintf(src, sizeof src, "%s/%s", s->segdir, name);
    hid_t ss = H5Screate_simple(1, &cnt, NULL);
    ok = ss >= 0 && H5Sselect_hyperslab(vs, H5S_SELECT_SET, &off, NULL, &cnt, NULL) >= 0 &&
         H5Pset_virtual(dcpl, vs, src, dname, ss) >= 0;
    if (ss >= 0) H5Sclose(ss);
    off += cnt;
  }
  if (ok) H5Sselect_all(vs);
  hid_t d = ok ? H5Dcreate2(s->series, dname, type, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
  ok = d >= 0;
  if (d >= 0) H5Dclose(d);
  if (vs >= 0) H5Sclose(vs);
  if (dcpl >= 0) H5Pclose(dcpl);
  return ok ? 0 : -1;
}

static double ds_seg_cap(double total) {
  double given = ds_knob_real(DS_KNOB_SEG_CAP);
  if (given > 0) return given;
  double c = DS_SEG_CAP_FRAC * total;
  return c > DS_SEG_CAP_MIN ? c : DS_SEG_CAP_MIN;
}

/* A publish of a format-5 store (called by ds_store_h5_end with the batch's
 * new records): writes them as a new segment, merges, and rewrites
 * /series/step and value and the /series attributes of the file being
 * published. s->gen + 1 is the generation being published. */
int ds_seg_publish(ds_store *s, const int64_t *step, int64_t nstep, const double *val, int64_t nval) {
  int64_t n = s->nseg + 1;
  free(s->nsegs), free(s->nret), free(s->made);
  s->nsegs = ds_calloc((size_t)n, sizeof *s->nsegs);
  s->nret = ds_calloc((size_t)n, sizeof *s->nret);
  s->made = ds_calloc((size_t)n + 1, sizeof *s->made);
  int64_t *glo = ds_calloc((size_t)n + 1, sizeof *glo); /* groups: [glo[i], glo[i+1]) of the list */
  ds_seg *all = ds_calloc((size_t)n, sizeof *all);
  s->nnseg = s->nnret = s->nmade = 0;
  if (!s->nsegs || !s->nret || !s->made || !glo || !all) {
    free(glo), free(all);
    return DS_ENOMEM;
  }
  int rc = DS_OK;
  int64_t na = s->nseg;
  if (s->nseg) memcpy(all, s->segs, (size_t)s->nseg * sizeof *all); /* segs is NULL when empty */
  ds_seg fresh = {s->gen + 1, 0, nstep, nval};
  if (nstep > 0) {
    rc = ds_seg_write(s, &fresh, step, val, NULL, 0);
    all[na++] = fresh;
  }
  /* plan the merges: groups of consecutive segments */
  double total = 0, newb = ds_seg_bytes(&fresh);
  for (int64_t i = 0; i < na; i++) total += ds_seg_bytes(&all[i]);
  double cap = ds_seg_cap(total), cheap = 4.0 * newb > 1048576.0 ? 4.0 * newb : 1048576.0;
  if (cheap > cap) cheap = cap;
  int64_t ng = na;
  double *gb = ds_calloc((size_t)na + 1, sizeof *gb);
  int *multi = ds_calloc((size_t)na + 1, sizeof *multi);
  if (!gb || !multi) rc = DS_ENOMEM;
  for (int64_t i = 0; i <= na; i++) glo[i] = i;
  for (int64_t i = 0; rc == DS_OK && i < na; i++) gb[i] = ds_seg_bytes(&all[i]);
  double spent = 0;
  while (rc == DS_OK && ng > 1) {
    int64_t best = -1;
    for (int64_t i = 0; i + 1 < ng; i++)
      if (gb[i] + gb[i + 1] <= cap && (best < 0 || gb[i] + gb[i + 1] < gb[best] + gb[best + 1])) best = i;
    if (best < 0) break;
    double sum = gb[best] + gb[best + 1];
    double cost = spent + sum - (multi[best] ? gb[best] : 0) - (multi[best + 1] ? gb[best + 1] : 0);
    if (cost > (ng > DS_SEG_MAX ? cap : cheap)) break;
    spent = cost;
    gb[best] = sum;
    multi[best] = 1;
    for (int64_t i = best + 1; i + 1 < ng; i++) gb[i] = gb[i + 1], multi[i] = multi[i + 1];
    for (int64_t i = best + 1; i < ng; i++) glo[i] = glo[i + 1];
    ng--;
  }
  /* write the merged groups, build the new list */
  int64_t k = 1;
  for (int64_t i = 0; rc == DS_OK && i < ng; i++) {
    int64_t a = glo[i], b = glo[i + 1];
    if (b - a == 1) {
      s->nsegs[s->nnseg++] = all[a];
      continue;
    }
    ds_seg m = {s->gen + 1, k++, 0, 0};
    for (int64_t j = a; j < b; j++) m.nstep += all[j].nstep, m.nval += all[j].nval;
    rc = ds_seg_write(s, &m, NULL, NULL, all + a, b - a);
    s->nsegs[s->nnseg++] = m;
    for (int64_t j = a; rc == DS_OK && j < b; j++) {
      if (all[j].gen == s->gen + 1) { /* made by this publish: nobody has seen it */
        char p[4300];
        ds_seg_path(s, &all[j], p, sizeof p);
        ds_fs_unlink(p);
      } else {
        s->nret[s->nnret++] = all[j];
      }
    }
  }
  free(gb), free(multi), free(glo), free(all);
  if (rc != DS_OK) return rc;
  if (ds_seg_vds(s, "step", H5T_STD_I64LE, s->nsegs, s->nnseg) < 0 ||
      ds_seg_vds(s, "value", H5T_IEEE_F64LE, s->nsegs, s->nnseg) < 0 ||
      ds_seg_put_list(s->series, "segments", s->nsegs, s->nnseg) < 0 ||
      ds_seg_put_list(s->series, "retired", s->nret, s->nnret) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot rewrite /series/step and value over the segments");
  return DS_OK;
}

/* The new files' directory entries, before STORE names them (end of a
 * publish's writes: segments and blocks). */
void ds_seg_sync_dir(ds_store *s) {
  if (!s->nmade && !s->nbmade) return;
  char d[4300];
  ds_seg_dirpath(s, d, sizeof d);
  ds_fs_sync_dir(d);
}

static void ds_seg_unlink_all(ds_store *s, const ds_seg *g, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    char p[4300];
    ds_seg_path(s, &g[i], p, sizeof p);
    ds_fs_unlink(p);
  }
}

/* A publish without new records: the segments stay, nothing is retired (the
 * previous publish's retired segments are deleted once this one is in place). */
int ds_seg_publish_none(ds_store *s) {
  s->nmade = 0;
  if (ds_seg_put_list(s->series, "retired", NULL, 0) < 0)
    return ds_store_h5fail(DS_EIO, s->path, "cannot write /series attributes");
  return DS_OK;
}

/* A publish failed: the files it made are referenced by nothing. */
void ds_seg_abort(ds_store *s) {
  ds_seg_unlink_all(s, s->made, s->nmade);
  s->nmade = 0;
  ds_blk_abort(s);
}

/* The new STORE is in place: the segments the previous one retired go (a
 * reader of the STORE before it has had a publish interval). */
void ds_seg_committed(ds_store *s) {
  ds_seg_unlink_all(s, s->ret, s->nretired);
  s->nmade = 0;
  ds_blk_committed(s);
}

static int ds_seg_listed(const ds_seg *g, int64_t n, int64_t gen, int64_t k) {
  for (int64_t i = 0; i < n; i++)
    if (g[i].gen == gen && g[i].k == k) return 1;
  return 0;
}

/* Resume: removes this store's segment files that the published STORE
 * neither uses nor retired (left by a kill during a publish, or retired
 * before). Files of other stores are left alone. */
void ds_seg_gc(ds_store *s) {
  if (!s->segmented) return;
  char d[4300], pre[20];
  ds_seg_dirpath(s, d, sizeof d);
  snprintf(pre, sizeof pre, "%016" PRIx64 "-", s->uuid);
  DIR *dp = opendir(d);
  if (!dp) {
    if (errno == ENOENT) ds_fs_mkdir(d);
    return;
  }
  struct dirent *e;
  while ((e = readdir(dp))) {
    long long gen, k;
    char tail[8] = "";
    int blk = strncmp(e->d_name, pre, 17) ? -1 : ds_blk_known(s, e->d_name + 17);
    if (blk == 1) continue;
    if (blk == 0) {
      char p[4400];
      snprintf(p, sizeof p, "%s/%s", d, e->d_name);
      ds_fs_unlink(p);
      continue;
    }
    if (strncmp(e->d_name, pre, 17) || sscanf(e->d_name + 17, "%lld-%lld%7s", &gen, &k, tail) != 3 ||
        strcmp(tail, ".h5"))
      continue;
    if (ds_seg_listed(s->segs, s->nseg, gen, k) || ds_seg_listed(s->ret, s->nretired, gen, k)) continue;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", d, e->d_name);
    ds_fs_unlink(p);
  }
  closedir(dp);
}
