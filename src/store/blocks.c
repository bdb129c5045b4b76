/* blocks.c -- format 5: /summary, /series/index and /grid/axis_values of STORE
 * are HDF5 virtual datasets over fixed-size row blocks, each an immutable file
 * <uuid>-<tag>-<gen>-<b>.h5 in STORE.seg/ (tag sum, idx or axv; gen the
 * generation of the first STORE that lists it; b the block number: rows
 * [b * block_rows, ...)). A publish writes only the blocks holding rows that
 * changed (summary rows of points that finished, index rows appended or
 * superseded, the grid at create/extend), so the top file copied at each
 * publish holds no per-point data. See docs/store.md, "Segments (format 5)".
 *
 * Each blocked dataset carries attributes block_rows (scalar), blocks (n x 2
 * int64: gen, rows of each block, in order) and retired (m x 2: b, gen of the
 * block files this version's publish replaced; deleted by the next publish,
 * as merged-away segments are). A dataset without block_rows (format-5 stores
 * written before blocks, format 4) is a plain dataset. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"
#include "fsio.h"
#include "store_priv.h"

#define DS_BLK_BYTES (1 << 20) /* a block holds at most ~1 MiB (docs/store.md: why) */

static const char *const ds_blk_tag[DS_BLK_N] = {"sum", "idx", "axv"};
static const char *const ds_blk_dset[DS_BLK_N] = {"summary", "series/index", "grid/axis_values"};

/* Rows per block for rows of rowbytes bytes: the largest power of two that
 * keeps a block <= DS_BLK_BYTES; DYNSWEEP_BLOCK_ROWS overrides (tests). */
int64_t ds_blk_rows_for(size_t rowbytes) {
  int64_t given = ds_knob_int(DS_KNOB_BLOCK_ROWS);
  if (given > 0) return given;
  int64_t r = 1;
  while ((size_t)(2 * r) * (rowbytes ? rowbytes : 1) <= DS_BLK_BYTES) r *= 2;
  return r;
}

static void ds_blk_name(const ds_store *s, int t, int64_t gen, int64_t b, char *buf, size_t n) {
  snprintf(buf, n, "%016" PRIx64 "-%s-%" PRId64 "-%" PRId64 ".h5", s->uuid, ds_blk_tag[t], gen, b);
}

static void ds_blk_path(const ds_store *s, int t, int64_t gen, int64_t b, char *buf, size_t n) {
  char name[96];
  ds_blk_name(s, t, gen, b, name, sizeof name);
  snprintf(buf, n, "%s/%s/%s", s->topdir, s->segdir, name);
}

/* The types of dataset t: file and memory, and the memory size of a row
 * (ncols values for axv). Caller closes the types. */
static void ds_blk_types(ds_store *s, int t, int64_t ncols, hid_t *ft, hid_t *mt, size_t *rowb) {
  if (t == DS_BLK_SUM) {
    *ft = ds_store_row_filetype(), *mt = H5Tcopy(s->row_mem), *rowb = sizeof(ds_summary_row);
  } else if (t == DS_BLK_IDX) {
    *ft = ds_store_idx_filetype(), *mt = ds_store_idx_memtype(), *rowb = sizeof(ds_store_idx);
  } else {
    *ft = H5Tcopy(H5T_IEEE_F64LE), *mt = H5Tcopy(H5T_NATIVE_DOUBLE), *rowb = 8 * (size_t)ncols;
  }
}

static hid_t ds_blk_parent(ds_store *s, int t) {
  return t == DS_BLK_SUM ? s->file : t == DS_BLK_IDX ? s->series : -1;
}

static const char *ds_blk_leaf(int t) {
  const char *p = strrchr(ds_blk_dset[t], '/');
  return p ? p + 1 : ds_blk_dset[t];
}

static int ds_blk_put_pairs(hid_t loc, const char *name, const int64_t *v, int64_t n) {
  return ds_store_put_i64_table(loc, name, v, n, 2, 1);
}

static int ds_blk_get_pairs(hid_t loc, const char *name, int64_t **out, int64_t *n) {
  return ds_store_get_i64_table(loc, name, 2, out, n);
}

/* Marks dataset d (just created, 0 blocks) as blocked with rows per block r. */
int ds_blk_mark_new(hid_t d, int64_t r) {
  return ds_store_put_i64(d, "block_rows", r) < 0 || ds_blk_put_pairs(d, "blocks", NULL, 0) < 0 ? -1 : 0;
}

/* ---- reader: list and check ------------------------------------------------- */

void ds_blk_free(ds_store *s) {
  for (int t = 0; t < DS_BLK_N; t++) {
    free(s->blk[t]), free(s->bret[t]), free(s->nbret_new[t]);
    s->blk[t] = s->bret[t] = s->nbret_new[t] = NULL;
    s->nblk[t] = s->nbret[t] = s->nnbret[t] = 0;
  }
  free(s->bmade);
  s->bmade = NULL;
  s->nbmade = s->cbmade = 0;
  free(s->sdirty);
  s->sdirty = NULL;
  s->nsdirty = 0;
}

/* Opens block file b of dataset t and checks it belongs here; -1 and why[]. */
static hid_t ds_blk_open_checked(ds_store *s, int t, int64_t b, int64_t gen, int64_t rows, int64_t ncols,
                                 char *why, size_t wn) {
  char p[4400];
  ds_blk_path(s, t, gen, b, p, sizeof p);
  struct stat st;
  if (stat(p, &st) != 0) {
    snprintf(why, wn, "%s: %s", p, strerror(errno));
    return -1;
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0) H5Pset_fapl_sec2(fapl), H5Pset_metadata_read_attempts(fapl, 1);
  hid_t f = fapl >= 0 ? H5Fopen(p, H5F_ACC_RDONLY, fapl) : -1;
  if (fapl >= 0) H5Pclose(fapl);
  if (f < 0) {
    snprintf(why, wn, "%s: cannot open it as HDF5 (truncated, damaged or not a block file)", p);
    return -1;
  }
  char fmt[40] = "", uuid[40] = "", tag[16] = "", want[17];
  int64_t g = -1, bb = -1;
  snprintf(want, sizeof want, "%016" PRIx64, s->uuid);
  ds_store_get_text(f, "format", fmt, sizeof fmt);
  ds_store_get_text(f, "store_uuid", uuid, sizeof uuid);
  ds_store_get_text(f, "dataset", tag, sizeof tag);
  ds_store_get_i64(f, "generation", &g);
  ds_store_get_i64(f, "block", &bb);
  hid_t d = H5Dopen2(f, "rows", H5P_DEFAULT), sp = d >= 0 ? H5Dget_space(d) : -1;
  hsize_t dims[2] = {0, 0};
  int rank = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
  if (sp >= 0) H5Sclose(sp);
  if (d >= 0) H5Dclose(d);
  int shape = t == DS_BLK_AXV ? rank == 2 && (int64_t)dims[0] == rows && (int64_t)dims[1] == ncols
                              : rank == 1 && (int64_t)dims[0] == rows;
  if (strcmp(fmt, "dynsweep-block") || strcmp(uuid, want) || strcmp(tag, ds_blk_tag[t]) || g != gen || bb != b ||
      !shape) {
    snprintf(why, wn, "%s: found format \"%.20s\", store %s, dataset %s, generation %" PRId64 ", block %" PRId64
             ", %llu rows; expected a dynsweep-block of store %s, dataset %s, generation %" PRId64 ", block %" PRId64
             ", %" PRId64 " rows", p, fmt, uuid[0] ? uuid : "?", tag[0] ? tag : "?", g, bb,
             (unsigned long long)dims[0], want, ds_blk_tag[t], gen, b, rows);
    H5Fclose(f);
    return -1;
  }
  return f;
}

/* The mappings of the VDS d must be exactly the listed blocks. */
static int ds_blk_mapping_ok(ds_store *s, int t, hid_t d, int64_t br, const int64_t *l, int64_t n, char *why,
                             size_t wn) {
  hid_t dcpl = H5Dget_create_plist(d);
  size_t cnt = 0;
  int virt = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_VIRTUAL, ok = dcpl >= 0;
  if (!ok) snprintf(why, wn, "cannot read the layout of /%s", ds_blk_dset[t]);
  else if (n == 0 && virt) ok = 0, snprintf(why, wn, "/%s is virtual but lists no block", ds_blk_dset[t]);
  else if (n > 0 && (!virt || H5Pget_virtual_count(dcpl, &cnt) < 0 || (int64_t)cnt != n))
    ok = 0, snprintf(why, wn, "/%s maps %zu block(s), its attribute blocks lists %" PRId64, ds_blk_dset[t], cnt, n);
  for (int64_t i = 0; ok && i < n; i++) {
    char want[4300], got[4300] = "", ds[16] = "", name[96];
    ds_blk_name(s, t, l[2 * i], i, name, sizeof name);
    snprintf(want, sizeof want, "%s/%s", s->segdir, name);
    H5Pget_virtual_filename(dcpl, (size_t)i, got, sizeof got);
    H5Pget_virtual_dsetname(dcpl, (size_t)i, ds, sizeof ds);
    hid_t vs = H5Pget_virtual_vspace(dcpl, (size_t)i);
    hsize_t lo[2] = {0, 0}, hi[2] = {0, 0};
    int sel = vs >= 0 && H5Sget_select_bounds(vs, lo, hi) >= 0;
    if (vs >= 0) H5Sclose(vs);
    if (strcmp(got, want) || strcmp(ds, "rows") || !sel || (int64_t)lo[0] != i * br ||
        (int64_t)hi[0] != i * br + l[2 * i + 1] - 1) {
      ok = 0;
      snprintf(why, wn, "/%s mapping %" PRId64 " is %s:%s [%llu..%llu], expected %s:rows [%" PRId64 "..%" PRId64 "]",
               ds_blk_dset[t], i, got, ds, (unsigned long long)lo[0], (unsigned long long)hi[0], want, i * br,
               i * br + l[2 * i + 1] - 1);
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  return ok;
}

/* Part of every open of a format-5 file (ds_seg_load): the block lists of the
 * three datasets, checked against the VDS mappings and the block files
 * (opened, checked, closed: keeping ~360 files open at 10^6 points made HDF5
 * 1.10 read fill values through a later top file's VDS in the same process,
 * tests/test_store.c; see ds_blk_still_there for what a reader does instead). */
int ds_blk_load(ds_store *s) {
  int64_t total = 0;
  for (int t = 0; t < DS_BLK_N; t++) {
    free(s->blk[t]), free(s->bret[t]);
    s->blk[t] = s->bret[t] = NULL;
    s->nblk[t] = s->nbret[t] = 0;
    s->brows[t] = 0;
    hid_t d = H5Lexists(s->file, ds_blk_dset[t], H5P_DEFAULT) > 0 ? H5Dopen2(s->file, ds_blk_dset[t], H5P_DEFAULT)
                                                                  : -1;
    if (d < 0 || H5Aexists(d, "block_rows") <= 0) {
      if (d >= 0) H5Dclose(d);
      H5Eclear2(H5E_DEFAULT);
      continue;
    }
    int bad = ds_store_get_i64(d, "block_rows", &s->brows[t]) < 0 || s->brows[t] < 1 ||
              ds_blk_get_pairs(d, "blocks", &s->blk[t], &s->nblk[t]) < 0 ||
              ds_blk_get_pairs(d, "retired", &s->bret[t], &s->nbret[t]) < 0;
    char why[1024] = "";
    hid_t sp = H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    if (sp >= 0) H5Sget_simple_extent_dims(sp, dims, NULL), H5Sclose(sp);
    s->bcols[t] = t == DS_BLK_AXV ? (int64_t)dims[1] : 1;
    int64_t rows = 0;
    for (int64_t i = 0; !bad && i < s->nblk[t]; i++) {
      if (s->blk[t][2 * i + 1] < 1 || s->blk[t][2 * i + 1] > s->brows[t]) bad = 1;
      rows += s->blk[t][2 * i + 1];
    }
    int ok = !bad && (s->nblk[t] == 0 || rows == (int64_t)dims[0]) &&
             ds_blk_mapping_ok(s, t, d, s->brows[t], s->blk[t], s->nblk[t], why, sizeof why);
    H5Dclose(d);
    if (!ok) {
      H5Eclear2(H5E_DEFAULT);
      return ds_fail(DS_EIO, "%s: the file is damaged: /%s: %s", s->path, ds_blk_dset[t],
                     why[0] ? why : "its block list does not match its rows");
    }
    total += s->nblk[t];
  }
  /* the writer reopening the STORE its publish just wrote (blocks it wrote or
   * checked at its resume/create) checks the lists and mappings, not every
   * file: at 10^6 points the ~330 opens were most of a publish */
  if (!total || s->blk_trusted) return DS_OK;
  for (int t = 0; t < DS_BLK_N; t++)
    for (int64_t i = 0; i < s->nblk[t]; i++) {
      char why[1024];
      hid_t f = ds_blk_open_checked(s, t, i, s->blk[t][2 * i], s->blk[t][2 * i + 1], s->bcols[t], why, sizeof why);
      if (f < 0) {
        H5Eclear2(H5E_DEFAULT);
        return ds_fail(DS_EIO, "%s: block %" PRId64 " of %" PRId64 " of /%s (rows %" PRId64 "..%" PRId64
                       ") is missing or damaged: %s; a store is STORE plus its directory %s/ (copy or move both, "
                       "into one directory)", s->path, i + 1, s->nblk[t], ds_blk_dset[t], i * s->brows[t],
                       i * s->brows[t] + s->blk[t][2 * i + 1] - 1, why, s->segdir);
      }
      H5Fclose(f); /* not kept open: see ds_blk_still_there */
    }
  return DS_OK;
}

/* After a read of blocked dataset t through its VDS: are its block files all
 * still there? A reader holding an old STORE for longer than a publish
 * interval may find a block the publish after next deleted, which HDF5 reads
 * as fill values without an error; the files are never re-created under the
 * same name, so present after the read means read from them. DS_EIO naming
 * the file otherwise (reopen the store: a newer version is published). */
int ds_blk_still_there(ds_store *s, int t) {
  for (int64_t i = 0; i < s->nblk[t]; i++) {
    char p[4400];
    struct stat st;
    ds_blk_path(s, t, s->blk[t][2 * i], i, p, sizeof p);
    if (stat(p, &st) != 0)
      return ds_fail(DS_EIO, "%s: block %" PRId64 " of /%s is gone: %s: %s (a later publish replaced it, or the "
                     "store's directory %s/ is incomplete); open the store again", s->path, i, ds_blk_dset[t], p,
                     strerror(errno), s->segdir);
  }
  return DS_OK;
}

/* ---- writer ------------------------------------------------------------------- */

/* Rows [lo, hi) of blocked dataset t read from its block files (opened
 * read-only), of memory type mt (row = rowb bytes). A publish must not read
 * through the VDS of STORE.tmp: HDF5 opens the sources with the access of the
 * file holding the VDS (read-write), which marks the immutable block files
 * "open for write" (a kill then leaves a listed block h5py cannot open). */
int ds_blk_read_rows(ds_store *s, int t, int64_t lo, int64_t hi, hid_t mt, size_t rowb, void *buf) {
  int64_t br = s->brows[t];
  for (int64_t b = lo / br; lo < hi && b < s->nblk[t]; b++) {
    int64_t b0 = b * br, a = lo > b0 ? lo : b0, e = hi < b0 + s->blk[t][2 * b + 1] ? hi : b0 + s->blk[t][2 * b + 1];
    if (a >= e) continue;
    char p[4400];
    ds_blk_path(s, t, s->blk[t][2 * b], b, p, sizeof p);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT), d = f >= 0 ? H5Dopen2(f, "rows", H5P_DEFAULT) : -1;
    hid_t fs = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t st[2] = {(hsize_t)(a - b0), 0}, cnt[2] = {(hsize_t)(e - a), (hsize_t)s->bcols[t]};
    int rank = t == DS_BLK_AXV ? 2 : 1;
    hid_t ms = H5Screate_simple(rank, cnt, NULL);
    int ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cnt, NULL) >= 0 &&
             H5Dread(d, mt, ms, fs, ds_store_dxpl(), (char *)buf + (size_t)(a - lo) * rowb) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    if (f >= 0) H5Fclose(f);
    if (!ok) return ds_store_h5fail(DS_EIO, p, "cannot read rows %" PRId64 "..%" PRId64 " of /%s", a, e - 1,
                                    ds_blk_dset[t]);
  }
  return DS_OK;
}

/* Publish start: nothing made or retired yet. */
void ds_blk_begin(ds_store *s) {
  for (int t = 0; t < DS_BLK_N; t++) s->nnbret[t] = 0;
  s->nbmade = 0;
}

void ds_blk_mark(ds_store *s, int64_t row) {
  int64_t br = s->brows[DS_BLK_SUM];
  if (br < 1 || row < 0) return;
  int64_t b = row / br;
  if (b >= s->nsdirty) {
    int64_t n = b + 1 > 2 * s->nsdirty ? b + 1 : 2 * s->nsdirty;
    unsigned char *p = realloc(s->sdirty, (size_t)n);
    if (!p) { /* without the map every block is rewritten */
      s->sdirty_all = 1;
      return;
    }
    memset(p + s->nsdirty, 0, (size_t)(n - s->nsdirty));
    s->sdirty = p, s->nsdirty = n;
  }
  s->sdirty[b] = 1;
}

void ds_blk_committed_clear(ds_store *s) {
  if (s->sdirty) memset(s->sdirty, 0, (size_t)s->nsdirty);
  s->sdirty_all = 0;
}

static int ds_blk_made(ds_store *s, int t, int64_t gen, int64_t b) {
  if (s->nbmade == s->cbmade) {
    int64_t c = s->cbmade ? 2 * s->cbmade : 64;
    int64_t *p = realloc(s->bmade, (size_t)c * 3 * sizeof *p);
    if (!p) return -1;
    s->bmade = p, s->cbmade = c;
  }
  int64_t *m = s->bmade + 3 * s->nbmade++;
  m[0] = t, m[1] = gen, m[2] = b;
  return 0;
}

/* Writes block file b (rows [lo, lo + rows) of dataset t) from buf. */
static int ds_blk_write(ds_store *s, int t, int64_t gen, int64_t b, int64_t rows, int64_t ncols, hid_t ft,
                        hid_t mt, const void *buf) {
  char p[4400];
  ds_blk_path(s, t, gen, b, p, sizeof p);
  if (ds_blk_made(s, t, gen, b) < 0) return DS_ENOMEM; /* a failed publish removes it */
  hid_t f = ds_seg_file_create(s, p, (double)H5Tget_size(ft) * (double)(rows * ncols) * 1.05 + 65536.0,
                               "dynsweep-block");
  if (f < 0) return DS_EIO;
  int rank = t == DS_BLK_AXV ? 2 : 1;
  hsize_t dims[2] = {(hsize_t)rows, (hsize_t)ncols};
  /* chunks small enough that a damaged one names few points (verify) */
  hsize_t chunk[2] = {(hsize_t)(rows < (t == DS_BLK_IDX ? 256 : 64) ? rows : (t == DS_BLK_IDX ? 256 : 64)),
                      (hsize_t)ncols};
  hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = ds_store_dcpl_sum(rank, chunk), d = -1;
  if (dcpl >= 0) H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
  int ok = ds_store_put_str(f, "dataset", ds_blk_tag[t]) >= 0 && ds_store_put_i64(f, "generation", gen) >= 0 &&
           ds_store_put_i64(f, "block", b) >= 0 && sp >= 0 && dcpl >= 0 &&
           (d = H5Dcreate2(f, "rows", ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)) >= 0 &&
           H5Dwrite(d, mt, H5S_ALL, H5S_ALL, ds_store_dxpl(), buf) >= 0;
  if (d >= 0) H5Dclose(d);
  if (sp >= 0) H5Sclose(sp);
  if (dcpl >= 0) H5Pclose(dcpl);
  return ds_seg_file_finish(f, p, ok);
}

/* The VDS /<dset t> anew over the list l (n blocks of br rows). */
static int ds_blk_vds(ds_store *s, hid_t loc, int t, hid_t ft, int64_t br, int64_t ncols, const int64_t *l,
                      int64_t n) {
  const char *leaf = ds_blk_leaf(t);
  if (H5Lexists(loc, leaf, H5P_DEFAULT) > 0 && H5Ldelete(loc, leaf, H5P_DEFAULT) < 0) return -1;
  int rank = t == DS_BLK_AXV ? 2 : 1;
  hsize_t total = 0;
  for (int64_t i = 0; i < n; i++) total += (hsize_t)l[2 * i + 1];
  hsize_t dims[2] = {total, (hsize_t)ncols};
  hid_t vs = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  int ok = vs >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0;
  for (int64_t i = 0; ok && i < n; i++) {
    hsize_t off[2] = {(hsize_t)(i * br), 0}, cnt[2] = {(hsize_t)l[2 * i + 1], (hsize_t)ncols};
    char name[96], src[4300];
    ds_blk_name(s, t, l[2 * i], i, name, sizeof name);
    snprintf(src, sizeof src, "%s/%s", s->segdir, name);
    hid_t ss = H5Screate_simple(rank, cnt, NULL);
    ok = ss >= 0 && H5Sselect_hyperslab(vs, H5S_SELECT_SET, off, NULL, cnt, NULL) >= 0 &&
         H5Pset_virtual(dcpl, vs, src, "rows", ss) >= 0;
    if (ss >= 0) H5Sclose(ss);
  }
  if (ok) H5Sselect_all(vs);
  hid_t d = ok ? H5Dcreate2(loc, leaf, ft, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
  ok = d >= 0 && ds_store_put_i64(d, "block_rows", br) >= 0 && ds_blk_put_pairs(d, "blocks", l, n) >= 0;
  if (ok && t == DS_BLK_SUM)
    ok = ds_store_put_str(d, "status_names", "0=pending,1=done,2=diverged,3=failed,4=running") >= 0;
  if (d >= 0) H5Dclose(d);
  if (vs >= 0) H5Sclose(vs);
  if (dcpl >= 0) H5Pclose(dcpl);
  return ok ? 0 : -1;
}

/* A publish's update of blocked dataset t of the file being published:
 * nrows rows of ncols values (nrows < 0: unchanged), block b rewritten when
 * dirty(arg, b) says so, or when its row count changes; fill(arg, lo, hi,
 * buf) gives rows [lo, hi) in memory layout. The replaced block files are
 * added to this publish's retired list (those this publish made are simply
 * overwritten); the VDS is made anew when a block changed; the attribute
 * retired is written in any case. */
int ds_blk_update(ds_store *s, int t, int64_t nrows, int64_t ncols, int (*dirty)(void *, int64_t),
                  int (*fill)(void *, int64_t, int64_t, void *), void *arg) {
  int64_t br = s->brows[t], gen = s->gen + 1;
  if (br < 1) return ds_fail(DS_EINTERNAL, "%s: /%s is not blocked", s->path, ds_blk_dset[t]);
  hid_t loc = t == DS_BLK_AXV ? H5Gopen2(s->file, "grid", H5P_DEFAULT) : ds_blk_parent(s, t);
  if (loc < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot open the parent of /%s", ds_blk_dset[t]);
  int64_t oldn = s->nblk[t];
  if (nrows < 0) {
    nrows = 0;
    for (int64_t i = 0; i < oldn; i++) nrows += s->blk[t][2 * i + 1];
    ncols = s->bcols[t];
  }
  int64_t nb = nrows > 0 && ncols > 0 ? (nrows + br - 1) / br : 0;
  int64_t *l = ds_calloc((size_t)(nb ? 2 * nb : 2), sizeof *l);
  int64_t need = s->nnbret[t] + oldn + 1;
  int64_t *r = realloc(s->nbret_new[t], (size_t)need * 2 * sizeof *r);
  hid_t ft = -1, mt = -1;
  size_t rowb = 0;
  ds_blk_types(s, t, ncols, &ft, &mt, &rowb);
  void *buf = ds_calloc((size_t)(nrows < br ? (nrows ? nrows : 1) : br), rowb ? rowb : 1);
  int rc = l && r && buf && ft >= 0 && mt >= 0 ? DS_OK : DS_ENOMEM;
  if (r) s->nbret_new[t] = r;
  int changed = nb != oldn || ncols != s->bcols[t];
  for (int64_t b = 0; rc == DS_OK && b < nb; b++) {
    int64_t lo = b * br, rows = nrows - lo < br ? nrows - lo : br;
    int keep = b < oldn && s->blk[t][2 * b + 1] == rows && ncols == s->bcols[t] &&
               !(dirty && dirty(arg, b));
    if (keep) {
      l[2 * b] = s->blk[t][2 * b], l[2 * b + 1] = rows;
      continue;
    }
    changed = 1;
    rc = fill(arg, lo, lo + rows, buf);
    if (rc == DS_OK) rc = ds_blk_write(s, t, gen, b, rows, ncols, ft, mt, buf);
    l[2 * b] = gen, l[2 * b + 1] = rows;
    if (b < oldn && s->blk[t][2 * b] != gen) {
      s->nbret_new[t][2 * s->nnbret[t]] = b, s->nbret_new[t][2 * s->nnbret[t] + 1] = s->blk[t][2 * b];
      s->nnbret[t]++;
    }
  }
  for (int64_t b = nb; rc == DS_OK && b < oldn; b++) /* fewer blocks (not done by dynsweep today) */
    if (s->blk[t][2 * b] != gen) {
      s->nbret_new[t][2 * s->nnbret[t]] = b, s->nbret_new[t][2 * s->nnbret[t] + 1] = s->blk[t][2 * b];
      s->nnbret[t]++;
    }
  if (rc == DS_OK && changed && nb > 0 && ds_blk_vds(s, loc, t, ft, br, ncols, l, nb) < 0)
    rc = ds_store_h5fail(DS_EIO, s->path, "cannot make /%s anew over its blocks", ds_blk_dset[t]);
  if (rc == DS_OK && changed && nb == 0)
    rc = ds_fail(DS_EINTERNAL, "%s: /%s would have no block", s->path, ds_blk_dset[t]);
  if (rc == DS_OK) { /* this publish's list is the current one from now on (extension + end) */
    free(s->blk[t]);
    s->blk[t] = l, s->nblk[t] = nb, s->bcols[t] = ncols;
    l = NULL;
    hid_t d = H5Dopen2(s->file, ds_blk_dset[t], H5P_DEFAULT);
    if (d < 0 || ds_blk_put_pairs(d, "retired", s->nbret_new[t], s->nnbret[t]) < 0)
      rc = ds_store_h5fail(DS_EIO, s->path, "cannot write the attributes of /%s", ds_blk_dset[t]);
    if (d >= 0) H5Dclose(d);
  }
  free(l), free(buf);
  if (ft >= 0) H5Tclose(ft);
  if (mt >= 0) H5Tclose(mt);
  if (t == DS_BLK_AXV) H5Gclose(loc);
  return rc;
}

/* A publish failed: the block files it made are listed nowhere. */
void ds_blk_abort(ds_store *s) {
  for (int64_t i = 0; i < s->nbmade; i++) {
    char p[4400];
    ds_blk_path(s, (int)s->bmade[3 * i], s->bmade[3 * i + 1], s->bmade[3 * i + 2], p, sizeof p);
    ds_fs_unlink(p);
  }
  s->nbmade = 0;
}

/* The new STORE is in place: the blocks the previous one retired go. */
void ds_blk_committed(ds_store *s) {
  for (int t = 0; t < DS_BLK_N; t++)
    for (int64_t i = 0; i < s->nbret[t]; i++) {
      char p[4400];
      ds_blk_path(s, t, s->bret[t][2 * i + 1], s->bret[t][2 * i], p, sizeof p);
      ds_fs_unlink(p);
    }
  s->nbmade = 0;
}

/* ds_seg_gc: is "<tag>-<gen>-<b>.h5" (after the uuid) a block file of this
 * store? 1 = listed or retired by STORE, 0 = garbage, -1 = not a block name. */
int ds_blk_known(const ds_store *s, const char *rest) {
  char tag[8] = "", tail[8] = "";
  long long gen, b;
  if (sscanf(rest, "%3[a-z]-%lld-%lld%7s", tag, &gen, &b, tail) != 4 || strcmp(tail, ".h5")) return -1;
  int t = -1;
  for (int i = 0; i < DS_BLK_N; i++)
    if (!strcmp(tag, ds_blk_tag[i])) t = i;
  if (t < 0) return -1;
  if (b < s->nblk[t] && s->blk[t][2 * b] == gen) return 1;
  for (int64_t i = 0; i < s->nbret[t]; i++)
    if (s->bret[t][2 * i] == b && s->bret[t][2 * i + 1] == gen) return 1;
  return 0;
}
