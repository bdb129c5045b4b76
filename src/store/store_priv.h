/* store_priv.h -- private to the store room: the store handle and the small
 * HDF5 helpers shared by store_h5.c, store_write.c and store_read.c. */
#ifndef DYNSWEEP_STORE_PRIV_H
#define DYNSWEEP_STORE_PRIV_H
#include <hdf5.h>
#include <pthread.h>
#include <stdint.h>

#include "dynsweep/store.h"

#define DS_STORE_FORMAT "dynsweep-store"
#define DS_STORE_FORMAT_VERSION 5
/* version 5: /series/step and value are virtual datasets over segment files
 * in STORE.seg/ (segments.c); written when DYNSWEEP_STORE_SEGMENTS is set,
 * else new stores are version 4 */
/* Oldest format this dynsweep reads (read-only; resuming needs version 3). */
#define DS_STORE_FORMAT_READ_MIN 1
#define DS_STORE_FORMAT_RESUME_MIN 3
/* version 4: Fletcher32 on every numeric dataset, CRC-32 digests of the
 * string data (root attributes digest_*), a crc32 attribute per checkpoint */
/* version 3: the series of all points in sweep-wide tables under /series */
typedef struct {
  int64_t point;       /* point id; -1: superseded by a rewrite of the point */
  int32_t kind;        /* row of /series/names, units, definitions */
  int32_t ncols;       /* values per record */
  int64_t n;           /* records */
  int64_t step_start;  /* first record in /series/step */
  int64_t value_start; /* first value in /series/value (n * ncols values, row-major) */
} ds_store_idx;
#define DS_STORE_REASON_LEN DS_SUMMARY_REASON_LEN

typedef struct {
  int64_t gen, k, nstep, nval; /* segment <uuid>-<gen>-<k>.h5: its records */
} ds_seg;
/* format 5 (blocks.c): datasets of the top file kept as VDS over row blocks */
enum { DS_BLK_SUM, DS_BLK_IDX, DS_BLK_AXV, DS_BLK_N };

/* A reader has the file open read-only in file/summary/points. A writer
 * (writable = 1) has the *published* file open read-only there between
 * publishes; during a publish they are the handles of STORE.tmp. */
struct ds_store {
  char *path;
  int writable;
  hid_t file;
  hid_t summary;    /* /summary dataset */
  hid_t points;     /* /points group */
  hid_t row_mem;    /* in-memory compound type of ds_summary_row */
  int64_t npoints;
  int64_t *ids;     /* ids[i] = id of summary row i */
  int64_t version;  /* format_version of the open file */
  hid_t series;     /* /series group (version 3), -1 otherwise */
  /* reader cache of /series (version 3): index rows, kinds */
  ds_store_idx *idx;
  int64_t nidx;
  int64_t *pfirst;  /* per summary row: its first /series/index row, -1 */
  int64_t *pnext;   /* per index row: the next row of the same point, -1 */
  char **knames, **kunits, **kdefs;
  int64_t nkinds;
  int idx_loaded;
  /* ---- writer only ---- */
  char *jpath, *tmppath;     /* STORE.journal, STORE.tmp */
  int jfd;                   /* journal, flock'ed (the writer lock) */
  uint64_t uuid;             /* pairs the journal with the store */
  int64_t gen;               /* generation of the published file */
  int64_t jend;              /* logical end of the journal (bytes) */
  int64_t jrecs;             /* records since the last publish */
  int64_t jtop;              /* format 5: what they add to the top file (ds_journal_top_bytes) */
  int jsync;                 /* appended since the last fsync */
  double last_sync;          /* ds_now() of the last journal fsync (group commit) */
  /* the group commit's fdatasync runs on a thread of its own (publish.c), so
   * rank 0's loop never waits for the disk; mu guards the fields below */
  pthread_t cthr;
  pthread_mutex_t cmu;
  pthread_cond_t ccv;
  int cstarted, cwant, cbusy, cquit, cerr;
  double cspent;             /* seconds the thread spent in fdatasync (not yet in st) */
  int64_t csyncs;
  int64_t ext_old_np;         /* rows before the extension being published */
  int64_t dirty_lo, dirty_hi; /* summary rows [lo, hi) changed since the last publish */
  unsigned char *written;    /* per summary row: the point has series in /series */
  struct ds_store_batch *batch; /* series being appended by a publish */
  ds_summary_row *rows;      /* current rows (published + journaled), npoints */
  int attrs_dirty;           /* run attributes changed since the last publish */
  char *inputs, *inputs_hash; /* ds_store_set_inputs: written with the run attributes */
  char *rank_nodes;          /* ds_store_set_rank_nodes: likewise */
  char *failed_pixels;       /* ds_store_set_failed_pixels: likewise */
  char run_state[16];
  double session_start, next_publish, publish_every;
  int64_t session_done0;
  double eta_unix;       /* the run's predicted end (ds_store_set_eta), 0 = none */
  double eta_pub_at;     /* ds_now() of the last publish the ETA asked for */
  char end_time[40];
  double cpu_s, wall_s;
  double fin_t0, fin_c0;     /* ds_store_finish: its start (wall, CPU), 0 before */
  int finished, have_totals;
  int fresh;                 /* created by this writer, run attributes as in the file */
  const ds_store_meta *ext_meta;   /* extension being published */
  const ds_summary_row *ext_rows;
  ds_store_stats st;
  /* format 5 (segments.c): /series/step and value over segment files */
  int segmented;
  char *topdir, *segdir;     /* STORE's directory; the segment directory's name in it */
  ds_seg *segs, *ret;        /* segments of the open file, and those its publish retired */
  int64_t nseg, nretired;
  hid_t *segf;               /* the open segment files (reader check) */
  int64_t nsegf;
  ds_seg *nsegs, *nret, *made; /* publish in progress: new list, newly retired, files made */
  int64_t nnseg, nnret, nmade;
  /* format 5 blocks (blocks.c), per dataset t: rows per block (0: a plain
   * dataset), columns; the list of the open file (gen, rows per block) and
   * its retired blocks (b, gen); this publish's retired blocks */
  int64_t brows[DS_BLK_N], bcols[DS_BLK_N];
  int64_t *blk[DS_BLK_N], nblk[DS_BLK_N];
  int64_t *bret[DS_BLK_N], nbret[DS_BLK_N];
  int64_t *nbret_new[DS_BLK_N], nnbret[DS_BLK_N];
  int64_t *bmade, nbmade, cbmade; /* block files this publish made: t, gen, b */
  unsigned char *sdirty;     /* per summary block: rows changed since the last publish */
  int64_t nsdirty;
  int sdirty_all;
  int blk_trusted;           /* the writer reopens what its publish just wrote: no block file checks */
  /* map stores (map_read.c, map_write.c): NULL for a row store */
  struct ds_map_state *map;
  /* the writer's layout (layout.h): rows, segments or map */
  const struct ds_layout_ops *lops;
};

/* The series a publish appends (store_write.c; freed by ds_store_h5_abort, handle.c). */
struct ds_store_batch {
  hid_t d[6]; /* names, units, definitions, index, step, value */
  int64_t nidx0, nstep0, nval0, nk0;
  char **kn, **ku, **kd;
  int64_t nk, kcap;
  ds_store_idx *idx;
  int64_t nidx, icap;
  int64_t *step;
  int64_t nstep, scap;
  double *val;
  int64_t nval, vcap;
  int ckpts; /* /checkpoints may have entries to drop */
  int64_t *sup, nsup, csup; /* format 5: points rewritten (their file rows get point = -1) */
};

/* store_write.c: layout and point writing on the open (writable) handles. */
int ds_store_create_layout(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows);
int ds_store_h5_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj);
int ds_store_h5_write_ckpt(ds_store *s, int64_t id, const char *blob, size_t len);
int ds_store_h5_drop_ckpt(ds_store *s, int64_t id);
int ds_store_h5_extend(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows);
int ds_store_h5_run_attrs(ds_store *s);
/* publish: begin (load /series sizes and kinds), end (append the batch, write
 * the dirty summary rows); ds_store_mark_dirty widens the dirty row range. */
int ds_store_h5_begin(ds_store *s);
int ds_store_h5_end(ds_store *s);
void ds_store_h5_abort(ds_store *s);
void ds_store_mark_dirty(ds_store *s, int64_t idx);
int ds_store_load_written(ds_store *s);
int ds_store_take_ids(ds_store *s, const ds_summary_row *rows);
int ds_store_check_meta(const char *path, const ds_store_meta *m, const ds_summary_row *rows);
int ds_store_check_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj);
hid_t ds_store_fcpl(void); /* persistent free-space tracking */
double ds_store_unix_now(void);

/* segments.c (format 5) */
int ds_seg_wanted(int dflt); /* DYNSWEEP_STORE_SEGMENTS=1/0 if set, else dflt: format 5 or 4 */   /* DYNSWEEP_STORE_SEGMENTS set: new stores are format 5 */
int ds_seg_set_dirs(ds_store *s, const char *segdir);
int ds_seg_create(ds_store *s);
int ds_seg_load(ds_store *s);  /* every open of a format-5 file: list + checks */
void ds_seg_close(ds_store *s);
void ds_seg_free(ds_store *s);
int ds_seg_publish(ds_store *s, const int64_t *step, int64_t nstep, const double *val, int64_t nval);
int ds_seg_publish_none(ds_store *s);
void ds_seg_abort(ds_store *s);
void ds_seg_committed(ds_store *s);
void ds_seg_gc(ds_store *s);
/* blocks.c (format 5): /summary, /series/index, /grid/axis_values over row blocks */
int64_t ds_blk_rows_for(size_t rowbytes);
int ds_blk_mark_new(hid_t d, int64_t rows_per_block);
int ds_blk_load(ds_store *s);
int ds_blk_still_there(ds_store *s, int t);
int ds_blk_read_rows(ds_store *s, int t, int64_t lo, int64_t hi, hid_t mt, size_t rowb, void *buf);
void ds_blk_free(ds_store *s);
void ds_blk_begin(ds_store *s);
void ds_blk_mark(ds_store *s, int64_t row);
void ds_blk_committed_clear(ds_store *s);
int ds_blk_update(ds_store *s, int t, int64_t nrows, int64_t ncols, int (*dirty)(void *, int64_t),
                  int (*fill)(void *, int64_t, int64_t, void *), void *arg);
void ds_blk_abort(ds_store *s);
void ds_blk_committed(ds_store *s);
int ds_blk_known(const ds_store *s, const char *rest);
void ds_seg_sync_dir(ds_store *s);
int ds_seg_mkdir(ds_store *s);
hid_t ds_seg_file_create(ds_store *s, const char *p, double bytes, const char *format);
int ds_seg_file_finish(hid_t f, const char *p, int ok);

/* store_read.c */
int ds_store_open_checked(const char *path, ds_store **out, int check_digests);
int ds_store_check_file(const char *path); /* exists, regular, HDF5 */
int ds_store_open_handles(ds_store *s);  /* opens s->path read-only into s */
void ds_store_close_handles(ds_store *s);
void ds_store_drop_cache(ds_store *s);
hid_t ds_store_idx_memtype(void);
hid_t ds_store_idx_filetype(void);
/* Reads the whole /series/index (version 3) into a malloc'd array. */
int ds_store_read_index(ds_store *s, ds_store_idx **out, int64_t *n);
int ds_store_read_rows(ds_store *s, ds_summary_row **rows, int64_t *n);

/* map_read.c: map stores, what the rest of the room calls. open: called by
 * every open of the file (loads the map's description once, when the file
 * has /map); free: the map state (and its publish batch); verify: `dynsweep
 * verify`'s checks of /map. The writer half (map_write.c) is reached
 * through its ops table, ds_layout_map (layout.h). */
int ds_map_open(ds_store *s);
void ds_map_free(ds_store *s);
int ds_map_refuse(ds_store *s); /* DS_EINPUT: the row readers on a map store */
void ds_map_verify(ds_store *s, FILE *out, int64_t *ndamaged, int64_t *nread);

/* journal.c: STORE.journal. Records: 1 RESULT (row + packed traj), 2 ROW
 * (row), 3 CKPT (int64 id + blob), 4 MAP (map_write.c: a tile's map records). */
enum { DS_JR_RESULT = 1, DS_JR_ROW = 2, DS_JR_CKPT = 3, DS_JR_MAP = 4 };
#define DS_JOURNAL_HDR 64
uint32_t ds_crc32(const void *data, size_t len, uint32_t crc); /* crc = 0 starts */
typedef struct {
  uint64_t uuid;
  int64_t base_gen;
  uint32_t row_size;
} ds_journal_hdr;
/* Reads and checks the header of an open journal; -1 if invalid/short. */
int ds_journal_read_hdr(int fd, ds_journal_hdr *h);
int64_t ds_journal_top_bytes(uint32_t type, size_t alen, size_t blen);
/* Truncates the journal to a new header (fsync'ed). */
int ds_journal_reset(ds_store *s);
/* Appends one record at s->jend (two buffers: a + b), no fsync. */
int ds_journal_append(ds_store *s, uint32_t type, const void *a, size_t alen, const void *b,
                      size_t blen);
/* Calls fn for each valid record from offset DS_JOURNAL_HDR until the end or
 * the first torn/corrupt record; *end gets the offset after the last valid
 * record. fn returns DS_OK to go on. */
typedef int (*ds_journal_fn)(void *arg, uint32_t type, const char *payload, size_t len);
int ds_journal_scan(int fd, ds_journal_fn fn, void *arg, int64_t *end, int64_t *nrec);
/* What starts at byte off, where a scan stopped: "a result record of point 7
 * (cut short; 120 of its 5000 bytes present)" or similar, for warnings. */
void ds_journal_describe_tail(int fd, int64_t off, char *buf, size_t n);
/* The valid records of a journal whatever its header: count and the first
 * point ids, and "N record(s), of points a b c" in buf. */
typedef struct {
  int64_t n;
  int64_t id[12];
} ds_journal_ids;
void ds_journal_list(int fd, ds_journal_ids *x, char *buf, size_t n);
/* Opens (creating) STORE.journal and takes its exclusive lock. */
int ds_journal_lock(ds_store *s);

/* Errors: records "PATH: OP (HDF5: <innermost message of the latest HDF5
 * failure>)". ds_store_silence_hdf5() installs the quiet recording handler
 * (nothing is printed) and forgets old failures; called by create/open and
 * at the start of each write. */
int ds_store_h5fail(int code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ds_store_silence_hdf5(void);

/* Types (caller closes). */
hid_t ds_store_vlen_str(void);
hid_t ds_store_row_memtype(void);
hid_t ds_store_row_filetype(void);
hid_t ds_store_gcpl(unsigned est_links); /* link creation order tracked + indexed */
hid_t ds_store_dcpl(int no_attrs);
hid_t ds_store_dcpl_sum(int rank, const hsize_t *chunk); /* chunked + Fletcher32 */
hid_t ds_store_dcpl_strs(int64_t n); /* string datasets: compact (checksummed header) */
/* Did the latest HDF5 failure come from a checksum (Fletcher32 or metadata)? */
int ds_store_h5_checksum_failed(void);
/* CRC-32 digests of the string data HDF5 does not checksum (it keeps
 * variable-length strings in the global heap): DS_DIGESTS parts, see
 * store_write.c. compute: into crc[]; seal: computes and writes them as root
 * attributes; check: compares with the stored ones (DS_OK if equal or
 * absent, else DS_EIO naming the parts). */
#define DS_DIGESTS 4
extern const char *const ds_store_digest_names[DS_DIGESTS]; /* digest.c: root attribute names */
extern const char *const ds_store_digest_what[DS_DIGESTS];  /* and what each covers */
int ds_store_digests_compute(ds_store *s, uint32_t crc[DS_DIGESTS]);
int ds_store_digests_seal(ds_store *s);
int ds_store_digests_check(ds_store *s, int *bad_mask);
hid_t ds_store_fapl(void); /* sec2, libver latest, close degree strong */
hid_t ds_store_dxpl(void); /* transfers with a small conversion buffer (cached) */

/* Attributes on any object (loc). Return 0 on success, -1 on HDF5 failure. */
int ds_store_put_str(hid_t loc, const char *name, const char *val);
int ds_store_put_strs(hid_t loc, const char *name, const char *const *vals, int64_t n);
int ds_store_put_i64(hid_t loc, const char *name, int64_t val);
int ds_store_put_i32(hid_t loc, const char *name, int32_t val);
int ds_store_put_f64(hid_t loc, const char *name, double val);
/* n x k int64 attributes (block and segment lists): replaced; n == 0 leaves
 * an empty one if keep_empty, else none; read into a malloc'd array */
int ds_store_put_i64_table(hid_t loc, const char *name, const int64_t *v, int64_t n, int k, int keep_empty);
int ds_store_get_i64_table(hid_t loc, const char *name, int k, int64_t **out, int64_t *n);
/* Reads a scalar attribute as text into buf (n bytes); -1 on failure. */
int ds_store_get_text(hid_t loc, const char *name, char *buf, int n);
int ds_store_get_i64(hid_t loc, const char *name, int64_t *val);
/* Reads a 1-D string attribute or dataset into a malloc'd array of n
 * malloc'd strings (free with ds_store_free_strs). */
int ds_store_get_strs_attr(hid_t attr, char ***out, int64_t *n);
int ds_store_get_strs_dset(hid_t dset, char ***out, int64_t *n);
void ds_store_free_strs(char **v, int64_t n);

/* handle.c: allocation (all ids -1) and quiet release (-1 if H5Fclose failed). */
ds_store *ds_store_alloc(const char *path);
int ds_store_release(ds_store *s);

/* Summary row index of point id, or -1. */
int64_t ds_store_row_index(const ds_store *s, int64_t id);
void ds_store_point_name(int64_t id, char *buf, size_t n);
/* journal.c: ends the group commit's thread (waits for a running fdatasync) */
void ds_store_commit_stop(ds_store *s);
#endif
