/* layout.c -- the rows and segments layouts' ops tables (layout.h; the map's
 * is in map_write.c), which layout a store has, and the format-5 side of
 * the HDF5 content: the datasets kept over block files (blocks.c) and the
 * series in segment files (segments.c), which store_write.c reaches only
 * through the hooks. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"
#include "fsio.h"

static void ds_layout_blk_clear(ds_store *s) { ds_blk_committed_clear(s); }

/* formats 3 and 4: everything is inside STORE */
const struct ds_layout_ops ds_layout_rows = {
    .name = "rows",
    .committed = ds_layout_blk_clear,
};

static void ds_layout_seg_committed(ds_store *s) {
  ds_seg_committed(s);
  ds_blk_committed_clear(s);
}

/* a new store that failed: the block files it made and its (empty) segment directory */
static void ds_layout_seg_uncreate(ds_store *s) {
  if (!s->topdir || !s->segdir) return;
  char d[8300];
  ds_seg_abort(s);
  snprintf(d, sizeof d, "%s/%s", s->topdir, s->segdir);
  ds_fs_rmdir(d);
}

/* What the callbacks of ds_blk_update get: the source of the rows and the
 * per-block dirtiness. */
typedef struct {
  ds_store *s;
  const void *src;          /* summary rows, axis values (memory layout) */
  int all;                  /* every block is dirty */
  int64_t nold;             /* index: rows before this publish */
  const ds_store_idx *add;  /* index: rows appended after nold */
  const int64_t *sup;       /* index: points superseded by this publish */
  int64_t nsup;
  const unsigned char *bd;  /* index: per block, holds a superseded row */
  int64_t nbd;
} ds_blk_ctx;

static int ds_blk_fill_axv(void *arg, int64_t lo, int64_t hi, void *buf) {
  const ds_store_meta *m = ((const ds_blk_ctx *)arg)->src;
  memcpy(buf, m->point_axis_vals + lo * m->naxes, (size_t)((hi - lo) * m->naxes) * sizeof(double));
  return DS_OK;
}

static int ds_blk_fill_rows(void *arg, int64_t lo, int64_t hi, void *buf) {
  const ds_blk_ctx *c = arg;
  ds_summary_row *r = buf;
  memcpy(r, (const ds_summary_row *)c->src + lo, (size_t)(hi - lo) * sizeof *r);
  for (int64_t i = 0; i < hi - lo; i++) r[i].reason[DS_STORE_REASON_LEN - 1] = 0;
  return DS_OK;
}

static int ds_blk_sum_dirty(void *arg, int64_t b) {
  const ds_blk_ctx *c = arg;
  const ds_store *s = c->s;
  return c->all || s->sdirty_all || (b < s->nsdirty && s->sdirty[b]);
}

/* /summary over its blocks: the blocks with changed rows (all: every block)
 * written from rows; s->summary reopened. */
static int ds_store_blk_summary(ds_store *s, const ds_summary_row *rows, int all) {
  if (s->summary >= 0) H5Dclose(s->summary);
  s->summary = -1;
  ds_blk_ctx c = {.s = s, .src = rows, .all = all};
  int rc = ds_blk_update(s, DS_BLK_SUM, s->npoints, 1, ds_blk_sum_dirty, ds_blk_fill_rows, &c);
  s->summary = H5Dopen2(s->file, "summary", H5P_DEFAULT);
  if (rc == DS_OK && s->summary < 0) rc = ds_store_h5fail(DS_EIO, s->path, "cannot open /summary");
  return rc;
}

static int ds_blk_idx_dirty(void *arg, int64_t b) {
  const ds_blk_ctx *c = arg;
  return (b + 1) * c->s->brows[DS_BLK_IDX] > c->nold || (b < c->nbd && c->bd[b]);
}

static int ds_blk_is_sup(const ds_blk_ctx *c, int64_t point) {
  for (int64_t i = 0; i < c->nsup; i++)
    if (c->sup[i] == point) return 1;
  return 0;
}

/* Index rows [lo, hi): the old ones read from the dataset being replaced
 * (superseded points' rows get point = -1), then the appended ones. */
static int ds_blk_fill_idx(void *arg, int64_t lo, int64_t hi, void *buf) {
  const ds_blk_ctx *c = arg;
  ds_store_idx *x = buf;
  int64_t oh = hi < c->nold ? hi : c->nold;
  if (lo < oh) { /* from the block files, never through STORE.tmp's VDS (ds_blk_read_rows) */
    hid_t it = ds_store_idx_memtype();
    int rc = it >= 0 ? ds_blk_read_rows(c->s, DS_BLK_IDX, lo, oh, it, sizeof *x, x) : DS_EIO;
    if (it >= 0) H5Tclose(it);
    DS_TRY(rc);
    for (int64_t i = 0; c->nsup && i < oh - lo; i++)
      if (ds_blk_is_sup(c, x[i].point)) x[i].point = -1;
  }
  for (int64_t i = lo > c->nold ? lo : c->nold; i < hi; i++) x[i - lo] = c->add[i - c->nold];
  return DS_OK;
}

/* Format 5: /series/index over its blocks: the last (partial) block and the
 * new ones, plus, after a rewrite of a point (the C API allows it; the
 * scheduler never does it), every block holding one of its older rows. */
static int ds_store_blk_index(ds_store *s, const struct ds_store_batch *b) {
  ds_blk_ctx c = {.s = s, .nold = b->nidx0, .add = b->idx, .sup = b->sup, .nsup = b->nsup};
  unsigned char *bd = NULL;
  int rc = DS_OK;
  if (b->nsup > 0 && b->nidx0 > 0) { /* which blocks hold rows of those points: read the point column */
    int64_t br = s->brows[DS_BLK_IDX];
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(int64_t));
    int64_t *pt = malloc((size_t)b->nidx0 * sizeof *pt);
    c.nbd = (b->nidx0 + br - 1) / br;
    bd = ds_calloc((size_t)c.nbd, 1);
    int ok = t >= 0 && pt && bd && H5Tinsert(t, "point", 0, H5T_NATIVE_INT64) >= 0 &&
             ds_blk_read_rows(s, DS_BLK_IDX, 0, b->nidx0, t, sizeof *pt, pt) == DS_OK;
    for (int64_t i = 0; ok && i < b->nidx0; i++)
      if (ds_blk_is_sup(&c, pt[i])) bd[i / br] = 1;
    free(pt);
    if (t >= 0) H5Tclose(t);
    if (!ok) rc = ds_store_h5fail(DS_EIO, s->path, "cannot read /series/index");
    c.bd = bd;
  }
  if (rc == DS_OK)
    rc = ds_blk_update(s, DS_BLK_IDX, b->nidx0 + b->nidx, 1, ds_blk_idx_dirty, ds_blk_fill_idx, &c);
  free(bd);
  return rc;
}

/* a new format-5 store: its segment directory; row blocks unless
 * DYNSWEEP_STORE_BLOCKS=0 (the layout before blocks: /summary and
 * /series/index in the top file; for comparisons) */
static int ds_layout_seg_h5_create(ds_store *s, const ds_store_meta *m) {
  DS_TRY(ds_seg_mkdir(s));
  if (!ds_knob_on(DS_KNOB_STORE_BLOCKS)) return DS_OK;
  hid_t ft = ds_store_row_filetype();
  s->brows[DS_BLK_SUM] = ds_blk_rows_for(ft >= 0 ? H5Tget_size(ft) : 240);
  if (ft >= 0) H5Tclose(ft);
  s->brows[DS_BLK_IDX] = ds_blk_rows_for(40);
  s->brows[DS_BLK_AXV] = ds_blk_rows_for(8 * (size_t)(m->naxes > 0 ? m->naxes : 1));
  s->bcols[DS_BLK_SUM] = s->bcols[DS_BLK_IDX] = 1;
  return DS_OK;
}

static int ds_layout_seg_mark_new(ds_store *s, int t, hid_t d) { return ds_blk_mark_new(d, s->brows[t]); }

static int ds_layout_seg_put_grid(ds_store *s, const ds_store_meta *m) {
  ds_blk_ctx c = {.s = s, .src = m, .all = 1};
  return ds_blk_update(s, DS_BLK_AXV, m->npoints, m->naxes, ds_blk_sum_dirty, ds_blk_fill_axv, &c);
}

static int ds_layout_seg_put_series(ds_store *s, const struct ds_store_batch *b) {
  return b->nstep > 0 ? ds_seg_publish(s, b->step, b->nstep, b->val, b->nval) : ds_seg_publish_none(s);
}

/* the dirty summary blocks; grid and (without a batch) index unchanged:
 * their retired lists reset */
static int ds_layout_seg_put_rows(ds_store *s, int series) {
  DS_TRY(ds_store_blk_summary(s, s->rows, 0));
  if (s->brows[DS_BLK_AXV] > 0) DS_TRY(ds_blk_update(s, DS_BLK_AXV, -1, 0, NULL, NULL, NULL));
  if (s->brows[DS_BLK_IDX] > 0 && !series) DS_TRY(ds_blk_update(s, DS_BLK_IDX, -1, 0, NULL, NULL, NULL));
  ds_seg_sync_dir(s);
  return DS_OK;
}

static void ds_layout_seg_mark(ds_store *s, int64_t row) {
  if (row < 0) s->sdirty_all = 1;
  else ds_blk_mark(s, row);
}

/* format 5: series in segment files, rows in block files (segments.c, blocks.c) */
const struct ds_layout_ops ds_layout_segments = {
    .name = "segments",
    .segmented = 1,
    .uncreate = ds_layout_seg_uncreate,
    .gc = ds_seg_gc,
    .sync = ds_seg_sync_dir,
    .abort = ds_seg_abort,
    .committed = ds_layout_seg_committed,
    .h5_create = ds_layout_seg_h5_create,
    .h5_series = ds_seg_create,
    .mark_new = ds_layout_seg_mark_new,
    .put_grid = ds_layout_seg_put_grid,
    .put_summary = ds_store_blk_summary,
    .put_series = ds_layout_seg_put_series,
    .put_index = ds_store_blk_index,
    .put_rows = ds_layout_seg_put_rows,
    .begin = ds_blk_begin,
    .mark = ds_layout_seg_mark,
};

const struct ds_layout_ops *ds_layout_new(const struct ds_layout_ops *asked, const ds_store_meta *meta) {
  if (asked) return asked;
  return ds_seg_wanted(meta->segments) ? &ds_layout_segments : &ds_layout_rows;
}

const struct ds_layout_ops *ds_layout_of(const ds_store *s) {
  return s->map ? &ds_layout_map : s->segmented ? &ds_layout_segments : &ds_layout_rows;
}
