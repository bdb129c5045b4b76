/* map_priv.h -- private to the map layout (map_read.c: open, readers,
 * verify; map_write.c: create, journal records, resume, publish): the map
 * state and the helpers both halves use. See map_read.c for the format. */
#ifndef DYNSWEEP_STORE_MAP_PRIV_H
#define DYNSWEEP_STORE_MAP_PRIV_H
#include <math.h>
#include <stdint.h>

#include "store_priv.h"

#define DS_MAP_NDSET 5
static const char *const ds_map_dsets[DS_MAP_NDSET] = {"outcome", "step", "measure",
                                                        "final_ratio", "peak_ratio"};
#define DS_MAP_CHUNK_ELEMS 65536
#define DS_MAP_DEFLATE 1
#define DS_MAP_STEP16_UNKNOWN 65535
#define DS_MAP_PACKED 17
#define DS_MAP_OUTCODES "0=converged,1=diverged,2=catapult,3=failed; +64=inferred (not trained: " \
                        "filled from a refinement cell's corners); 255=unset (not computed)"

struct ds_map_state {
  int naxes;
  int64_t *shape, *nch;      /* values per axis; chunks per axis */
  hsize_t *chunk;            /* chunk dims */
  int64_t npix, nchunks, chunk_elems;
  int64_t steps, tile_points;
  int step16;                /* step stored as uint16 (65535 = unknown) */
  int refine_levels, refine_axes[2];
  int early_stop;
  const double *const *axis_vals; /* create only */
  uint8_t *out;              /* writer: every pixel's outcome, published + journaled */
  uint8_t *dirty;            /* writer: per chunk, touched since the last publish */
  int64_t ndirty;
  int64_t *bidx;             /* publish batch, journal order */
  ds_map_rec *brec;
  int64_t bn, bcap;
};

static inline int ds_map_trained(uint8_t o) { return o != DS_MAP_UNSET && !(o & DS_MAP_INFERRED); }
/* Does a record with outcome nw replace a pixel whose outcome is old? */
static inline int ds_map_takes(uint8_t old, uint8_t nw) { return !(nw & DS_MAP_INFERRED) || !ds_map_trained(old); }
/* outcome codes 0..3: worker.h DS_OUT_CONVERGED .. DS_OUT_FAILED (the store room does not
 * include worker.h) */
#define DS_MAP_OUT_MAX 3
static inline int ds_map_valid_rec(uint8_t o) { return (o & (uint8_t)~DS_MAP_INFERRED) <= DS_MAP_OUT_MAX; }
static inline int ds_map_valid_px(uint8_t o) { return o == DS_MAP_UNSET || ds_map_valid_rec(o); }

static inline hid_t ds_map_ftype(const struct ds_map_state *m, int k) {
  return k == 0 ? H5T_STD_U8LE : k == 1 ? (m->step16 ? H5T_STD_U16LE : H5T_STD_I32LE) : H5T_IEEE_F32LE;
}

static inline hid_t ds_map_mtype(const struct ds_map_state *m, int k) {
  return k == 0 ? H5T_NATIVE_UINT8 : k == 1 ? (m->step16 ? H5T_NATIVE_UINT16 : H5T_NATIVE_INT32)
                                            : H5T_NATIVE_FLOAT;
}

static inline size_t ds_map_esize(const struct ds_map_state *m, int k) {
  return k == 0 ? 1 : k == 1 ? (m->step16 ? 2 : 4) : 4;
}

/* fill value of dataset k, in its memory type */
static inline void ds_map_fill(const struct ds_map_state *m, int k, void *v) {
  if (k == 0) *(uint8_t *)v = DS_MAP_UNSET;
  else if (k == 1 && m->step16) *(uint16_t *)v = DS_MAP_STEP16_UNKNOWN;
  else if (k == 1) *(int32_t *)v = -1;
  else *(float *)v = NAN;
}

typedef int (*ds_map_fn)(void *arg, int64_t idx, const ds_map_rec *r);
int64_t ds_map_chunk_box(const struct ds_map_state *m, int64_t c, hsize_t *st, hsize_t *cnt);
int64_t ds_map_chunk_of(const struct ds_map_state *m, int64_t idx);
void ds_map_chunks(struct ds_map_state *m);
int ds_map_decode(ds_store *s, const char *p, size_t len, ds_map_fn fn, void *arg);
void ds_map_dset_name(const char *axis, char *buf, size_t n);
int ds_map_fold_cb(void *arg, int64_t idx, const ds_map_rec *r);
void ds_map_mark(struct ds_map_state *m, int64_t idx);
struct ds_map_state *ds_map_new(int naxes);
hid_t ds_map_open_dset(ds_store *s, int k);
void ds_map_pack(unsigned char *b, const ds_map_rec *r);
int ds_map_read_all(ds_store *s, int k, void *buf);
/* the layout's hooks (map_write.c; ds_map_abort: map_read.c, as free uses
 * it). create_layout: /map of a new store; load_writer: the writer's outcome
 * bytes from the published file; fold: a resume folds a MAP record into
 * them; collect + flush: a publish gathers the MAP records and applies them
 * chunk by chunk; abort: the gathered batch goes; reserve: extra bytes a
 * publish may need. */
int ds_map_create_layout(ds_store *s, const ds_store_meta *m);
int ds_map_load_writer(ds_store *s);
int ds_map_fold(ds_store *s, const char *p, size_t len);
int ds_map_collect(ds_store *s, const char *p, size_t len);
int ds_map_flush(ds_store *s);
void ds_map_abort(ds_store *s);
double ds_map_reserve(ds_store *s);
#endif
