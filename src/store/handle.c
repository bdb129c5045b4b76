/* handle.c -- the store handle: allocation and release (readers and the
 * writer), the reader cache and the publish batch it may hold. */
#include <stdlib.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "store_priv.h"

ds_store *ds_store_alloc(const char *path) {
  ds_store *s = ds_calloc(1, sizeof *s);
  if (!s) return NULL;
  s->path = ds_strdup(path);
  if (!s->path) {
    free(s);
    return NULL;
  }
  s->file = s->summary = s->points = s->row_mem = s->series = -1;
  s->jfd = -1;
  return s;
}

void ds_store_drop_cache(ds_store *s) {
  free(s->idx);
  free(s->pfirst);
  free(s->pnext);
  s->idx = NULL;
  s->pfirst = s->pnext = NULL;
  s->nidx = 0;
  ds_store_free_strs(s->knames, s->nkinds);
  ds_store_free_strs(s->kunits, s->nkinds);
  ds_store_free_strs(s->kdefs, s->nkinds);
  s->knames = s->kunits = s->kdefs = NULL;
  s->nkinds = 0;
  s->idx_loaded = 0;
}

static void ds_store_batch_free(struct ds_store_batch *b) {
  if (!b) return;
  for (int i = 0; i < 6; i++)
    if (b->d[i] >= 0) H5Dclose(b->d[i]);
  for (int64_t k = 0; k < b->nk; k++) free(b->kn[k]), free(b->ku[k]), free(b->kd[k]);
  free(b->kn), free(b->ku), free(b->kd), free(b->idx), free(b->step), free(b->val), free(b->sup);
  free(b);
}

void ds_store_h5_abort(ds_store *s) {
  ds_store_batch_free(s->batch);
  s->batch = NULL;
}

/* ---- close ------------------------------------------------------------------ */

/* Closes everything (HDF5 handles, journal and its lock); returns -1 if the
 * file did not close cleanly. Does not touch the error message. */
int ds_store_release(ds_store *s) {
  int bad = 0;
  if (!s) return 0;
  ds_store_commit_stop(s); /* the group commit's thread, before its journal closes */
  if (s->summary >= 0) H5Dclose(s->summary);
  if (s->points >= 0) H5Gclose(s->points);
  if (s->series >= 0) H5Gclose(s->series);
  ds_store_h5_abort(s);
  ds_store_drop_cache(s);
  ds_map_free(s);
  ds_seg_free(s);
  free(s->written);
  if (s->row_mem >= 0) H5Tclose(s->row_mem);
  if (s->file >= 0) bad = H5Fclose(s->file) < 0;
  if (s->jfd >= 0) close(s->jfd); /* releases the lock */
  free(s->ids);
  free(s->rows);
  free(s->jpath);
  free(s->tmppath);
  free(s->inputs);
  free(s->inputs_hash);
  free(s->rank_nodes);
  free(s->failed_pixels);
  free(s->path);
  free(s);
  return bad ? -1 : 0;
}
