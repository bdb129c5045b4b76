/* layout.c -- the rows and segments layouts' ops tables (layout.h; the map's
 * is in map_write.c) and which layout a store has. */
#include "layout.h"

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

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
  rmdir(d);
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
};

const struct ds_layout_ops *ds_layout_new(const struct ds_layout_ops *asked, const ds_store_meta *meta) {
  if (asked) return asked;
  return ds_seg_wanted(meta->segments) ? &ds_layout_segments : &ds_layout_rows;
}

const struct ds_layout_ops *ds_layout_of(const ds_store *s) {
  return s->map ? &ds_layout_map : s->segmented ? &ds_layout_segments : &ds_layout_rows;
}
