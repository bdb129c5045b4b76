/* layout.h -- private to the store room: the layouts the writer (publish.c)
 * drives through one ops table (Redis's dictType, PETSc's ops): rows
 * (formats 3 and 4: everything inside STORE), segments (format 5: series in
 * segment files, rows in block files next to STORE; segments.c, blocks.c)
 * and map (/map arrays; map_write.c). publish.c names no layout function:
 * it calls these hooks at fixed points of create, resume and publish. A NULL
 * hook does nothing (collect: a MAP record is an error). docs/design.md,
 * "Adding a store layout". */
#ifndef DYNSWEEP_STORE_LAYOUT_H
#define DYNSWEEP_STORE_LAYOUT_H
#include <stddef.h>

#include "store_priv.h"

struct ds_layout_ops {
  const char *name;
  int segmented; /* 1: format 5 (s->segmented) */
  /* ds_store_create_*: checks the layout's own description (desc) and makes
   * its state (*state) and the meta the store is created with (*m2) */
  int (*prepare)(const char *path, const ds_store_meta *meta, const void *desc, ds_store_meta *m2,
                 void **state);
  void (*attach)(ds_store *s, void *state); /* the state of prepare onto s (taken) */
  int (*create)(ds_store *s, const ds_store_meta *m); /* a new store's layout, after the rows' */
  void (*uncreate)(ds_store *s);    /* a new store that failed: what create made outside STORE */
  int (*load)(ds_store *s);         /* resume: the writer's state from the published file */
  void (*gc)(ds_store *s);          /* resume, tidy: files a killed writer left */
  double (*reserve)(ds_store *s);   /* extra bytes a publish may need */
  int (*fold)(ds_store *s, const char *p, size_t len);    /* resume: a MAP record */
  int (*collect)(ds_store *s, const char *p, size_t len); /* publish: a MAP record */
  int (*flush)(ds_store *s);        /* publish: after the journal is applied */
  void (*sync)(ds_store *s);        /* new files' directory entries, before STORE names them */
  void (*close)(ds_store *s);       /* the publish's working state goes (its file closes) */
  void (*abort)(ds_store *s);       /* a failed publish: the files it made */
  void (*committed)(ds_store *s);   /* the new STORE is in place */
  void (*free)(ds_store *s);        /* the state of attach */
  /* The HDF5 content (store_write.c): where the layout keeps datasets in its
   * own files (format 5: segment and block files). NULL: all inside STORE. */
  int (*h5_create)(ds_store *s, const ds_store_meta *m); /* before the datasets: its directory, sizes */
  int (*h5_series)(ds_store *s);                         /* after /series: its attributes */
  int (*mark_new)(ds_store *s, int which, hid_t d);      /* new in-STORE dataset that moves to its files */
  int (*put_grid)(ds_store *s, const ds_store_meta *m);  /* /grid/axis_values */
  int (*put_summary)(ds_store *s, const ds_summary_row *rows, int all); /* rows changed (all: every one) */
  int (*put_series)(ds_store *s, const struct ds_store_batch *b);       /* publish: step and value */
  int (*put_index)(ds_store *s, const struct ds_store_batch *b);        /* publish: /series/index */
  int (*put_rows)(ds_store *s, int series); /* end of a publish: the changed rows (series: a batch ran) */
  void (*begin)(ds_store *s);               /* a publish starts */
  void (*mark)(ds_store *s, int64_t row);   /* summary row changed (-1: all of them) */
};

/* The datasets a layout may keep outside STORE (ds_layout_outside). */
enum { DS_LY_SUMMARY = DS_BLK_SUM, DS_LY_INDEX = DS_BLK_IDX, DS_LY_GRID = DS_BLK_AXV };
static inline int ds_layout_outside(const ds_store *s, int which) { return s->brows[which] > 0; }

extern const struct ds_layout_ops ds_layout_rows, ds_layout_segments, ds_layout_map;
/* The layout of a new store (asked: map, or NULL: rows or segments as
 * DYNSWEEP_STORE_SEGMENTS / meta->segments say) and of an opened one. */
const struct ds_layout_ops *ds_layout_new(const struct ds_layout_ops *asked, const ds_store_meta *meta);
const struct ds_layout_ops *ds_layout_of(const ds_store *s);
#endif
