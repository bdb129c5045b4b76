/* publish.c -- the durable writer: create, resume, journal, publish, close.
 *
 * STORE is never modified in place. Writes go to the append-only journal
 * STORE.journal (journal.c). A publish copies STORE to STORE.tmp (reflink,
 * copy_file_range or read/write), opens the copy with HDF5, applies the
 * journal records and the run attributes, closes it, fsyncs it, renames it
 * onto STORE and fsyncs the directory; then the journal is reset to an empty
 * one whose header names the new generation. A kill at any moment leaves
 * either the old or the new STORE, both complete and closed, and a journal
 * whose valid records (base generation == STORE's generation) are exactly
 * what the next publish or resume has to replay. See docs/store.md. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/util.h"
#include "fsio.h"
#include "layout.h"
#include "store_priv.h"

static char *ds_store_suffix(const char *path, const char *suf) {
  size_t n = strlen(path) + strlen(suf) + 1;
  char *p = ds_calloc(n, 1);
  if (p) snprintf(p, n, "%s%s", path, suf);
  return p;
}

static uint64_t ds_store_new_uuid(void) {
  uint64_t u = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &u, sizeof u) != (ssize_t)sizeof u) u = 0;
    close(fd);
  }
  if (!u) {
    double t = ds_store_unix_now();
    pid_t pid = getpid();
    u = ds_fnv1a(&t, sizeof t, ds_fnv1a(&pid, sizeof pid, 0));
  }
  return u ? u : 1;
}

static int ds_store_is_final(int st) { return ds_status_is_final(st); }

/* ---- applying journal records to the file being published ------------------- */

static int ds_store_apply(void *arg, uint32_t type, const char *p, size_t len) {
  ds_store *s = arg;
  ds_summary_row r;
  if (type == DS_JR_MAP) { /* applied by the layout's flush */
    if (!s->lops->collect) return ds_fail(DS_EIO, "%s: a map record in the journal of a row store", s->jpath);
    return s->lops->collect(s, p, len);
  }
  if (type == DS_JR_CKPT) {
    int64_t id;
    if (len < sizeof id) return ds_fail(DS_EIO, "%s: corrupt checkpoint record", s->jpath);
    memcpy(&id, p, sizeof id);
    int64_t i = ds_store_row_index(s, id);
    if (i < 0 || ds_store_is_final(s->rows[i].status)) return DS_OK; /* finished: drop */
    return ds_store_h5_write_ckpt(s, id, p + sizeof id, len - sizeof id);
  }
  if (len < sizeof r || (type != DS_JR_RESULT && type != DS_JR_ROW))
    return ds_fail(DS_EIO, "%s: corrupt journal record (type %u, %zu bytes)", s->jpath, type, len);
  memcpy(&r, p, sizeof r);
  r.reason[sizeof r.reason - 1] = 0;
  int64_t i = ds_store_row_index(s, r.id);
  if (i < 0) return ds_fail(DS_EIO, "%s: journal names point %" PRId64 ", which the store does "
                                    "not have", s->jpath, r.id);
  /* the summary rows are written from s->rows (which already holds every
   * journaled row) at the end of the publish: a ROW record needs nothing here */
  if (type == DS_JR_RESULT) {
    ds_traj t;
    DS_TRY(ds_traj_unpack(p + sizeof r, len - sizeof r, &t));
    int rc = ds_store_h5_write_point(s, &r, &t);
    ds_traj_free(&t);
    DS_TRY(rc);
  }
  return DS_OK;
}

/* Resume: folds the journal's rows into s->rows (a RESULT always, a ROW
 * unless it would turn a finished row back into an unfinished one). */
static int ds_store_fold(void *arg, uint32_t type, const char *p, size_t len) {
  ds_store *s = arg;
  ds_summary_row r;
  if (type == DS_JR_MAP && s->lops->fold) return s->lops->fold(s, p, len);
  size_t head = type == DS_JR_CKPT || len < sizeof r ? 0 : sizeof r;
  s->jtop += ds_journal_top_bytes(type, head, len - head);
  if ((type != DS_JR_RESULT && type != DS_JR_ROW) || len < sizeof r) return DS_OK;
  memcpy(&r, p, sizeof r);
  r.reason[sizeof r.reason - 1] = 0;
  int64_t i = ds_store_row_index(s, r.id);
  if (i < 0) return DS_OK; /* reported by the publish that replays it */
  if (type == DS_JR_ROW && ds_store_is_final(s->rows[i].status) && !ds_store_is_final(r.status))
    return DS_OK;
  s->rows[i] = r;
  ds_store_mark_dirty(s, i);
  return DS_OK;
}

/* ---- publish ---------------------------------------------------------------- */

static int ds_store_open_tmp(ds_store *s) {
  hid_t fapl = ds_store_fapl();
  if (fapl < 0) return ds_store_h5fail(DS_EIO, s->path, "cannot set up file access");
  s->file = H5Fopen(s->tmppath, H5F_ACC_RDWR, fapl);
  H5Pclose(fapl);
  if (s->file < 0) return ds_store_h5fail(DS_EIO, s->tmppath, "cannot open the copy for writing");
  s->summary = H5Dopen2(s->file, "summary", H5P_DEFAULT);
  s->series = H5Gopen2(s->file, "series", H5P_DEFAULT);
  if (s->summary < 0 || s->series < 0)
    return ds_store_h5fail(DS_EIO, s->tmppath, "cannot open /summary and /series");
  int bad = 0; /* never publish over string data that rotted since the last publish */
  DS_TRY(ds_store_digests_check(s, &bad));
  return ds_store_h5_begin(s);
}

/* Closes the HDF5 file being written; -1 if it did not close cleanly. */
static int ds_store_close_tmp(ds_store *s) {
  ds_store_h5_abort(s);
  if (s->lops && s->lops->close) s->lops->close(s);
  if (s->summary >= 0) H5Dclose(s->summary);
  if (s->points >= 0) H5Gclose(s->points);
  if (s->series >= 0) H5Gclose(s->series);
  int bad = s->file >= 0 && H5Fclose(s->file) < 0;
  s->file = s->summary = s->points = s->series = -1;
  return bad ? -1 : 0;
}

/* Everything from STORE.tmp being opened to it being renamed onto STORE. */
static int ds_store_publish_tmp(ds_store *s) {
  DS_TRY(ds_store_open_tmp(s));
  if (s->ext_meta) DS_TRY(ds_store_h5_extend(s, s->ext_meta, s->ext_rows));
  if (s->ext_meta) {
    ds_summary_row *r = ds_calloc(s->npoints ? (size_t)s->npoints : 1, sizeof *r);
    if (!r) return DS_ENOMEM;
    memcpy(r, s->ext_rows, (size_t)s->npoints * sizeof *r);
    free(s->rows);
    s->rows = r;
    unsigned char *w = ds_calloc(s->npoints ? (size_t)s->npoints : 1, 1);
    if (!w) return DS_ENOMEM;
    if (s->written) memcpy(w, s->written, (size_t)s->ext_old_np);
    free(s->written);
    s->written = w;
  }
  int64_t end = 0, n = 0;
  DS_TRY(ds_journal_scan(s->jfd, ds_store_apply, s, &end, &n));
  if (end != s->jend)
    return ds_fail(DS_EIO, "%s: the journal is damaged at byte %lld (expected %lld valid bytes)",
                   s->jpath, (long long)end, (long long)s->jend);
  if (s->lops->flush) DS_TRY(s->lops->flush(s));
  DS_TRY(ds_store_h5_end(s));
  DS_TRY(ds_store_h5_run_attrs(s));
  char uuid[17];
  snprintf(uuid, sizeof uuid, "%016" PRIx64, s->uuid);
  /* a format-3 store stays format 3 (its datasets have no checksums) */
  if (ds_store_put_str(s->file, "store_uuid", uuid) < 0 ||
      ds_store_put_i32(s->file, "format_version", (int32_t)s->version) < 0)
    return ds_store_h5fail(DS_EIO, s->tmppath, "cannot write root attributes");
  DS_TRY(ds_store_digests_seal(s));
  if (ds_store_close_tmp(s) < 0) return ds_store_h5fail(DS_EIO, s->tmppath, "cannot close the copy");
  double t0 = ds_now();
  if (ds_fs_fsync_path(s->tmppath) != 0)
    return ds_fail(DS_EIO, "%s: cannot fsync: %s", s->tmppath, strerror(errno));
  if (ds_fs_rename(s->tmppath, s->path) != 0)
    return ds_fail(DS_EIO, "cannot rename %s onto %s: %s", s->tmppath, s->path, strerror(errno));
  ds_fs_sync_parent(s->path);
  s->st.sync_s += ds_now() - t0;
  return DS_OK;
}

int ds_store_publish(ds_store *s, int force) {
  if (!s || !s->writable) return DS_OK;
  double t0 = ds_now();
  if (!s->jrecs && !s->attrs_dirty && !s->ext_meta && s->dirty_hi <= s->dirty_lo) return DS_OK;
  if (!force && t0 < s->next_publish) return DS_OK;
  ds_store_silence_hdf5();
  ds_store_close_handles(s);
  int64_t old_np = s->npoints;
  s->ext_old_np = old_np;
  int rc = ds_fs_copy(s->path, s->tmppath);
  struct stat pst;
  /* format 5: the records' series go to a segment (reserved by segments.c) */
  double need = (stat(s->path, &pst) == 0 ? (double)pst.st_size : 0) +
                2.0 * (double)(s->segmented ? s->jtop : s->jend - DS_JOURNAL_HDR) + 262144.0;
  if (s->lops->reserve) need += s->lops->reserve(s);
  if (s->ext_meta)
    need += 2.0 * (double)s->ext_meta->npoints * (sizeof(ds_summary_row) + 8.0 * s->ext_meta->naxes) +
            (s->ext_meta->sweep_text ? 2.0 * strlen(s->ext_meta->sweep_text) : 0);
  if (rc == DS_OK) rc = ds_fs_reserve(s->tmppath, need);
  s->st.copy_s += ds_now() - t0;
  if (rc == DS_OK) rc = ds_store_publish_tmp(s);
  if (rc != DS_OK) {
    ds_store_close_tmp(s);
    ds_fs_unlink(s->tmppath);
    if (s->lops->abort) s->lops->abort(s);
    ds_context(rc, "%s: publishing failed; the store keeps its last published state and "
                   "the journal keeps the rest", s->path);
    s->npoints = old_np;
    if (ds_store_open_handles(s) != DS_OK) { /* keep the publish message */ }
    ds_store_silence_hdf5();
    return rc;
  }
  s->gen++;
  if (s->lops->committed) s->lops->committed(s);
  s->attrs_dirty = 0;
  s->dirty_lo = s->dirty_hi = 0;
  DS_TRY(ds_journal_reset(s));
  s->blk_trusted = 1; /* what this publish wrote: ids from s->rows, no block file checks */
  rc = ds_store_open_handles(s);
  s->blk_trusted = 0;
  DS_TRY(rc);
  double cost = ds_now() - t0;
  struct stat st;
  s->st.publishes++;
  s->st.generation = s->gen;
  s->st.publish_s += cost;
  s->st.last_publish_s = cost;
  if (stat(s->path, &st) == 0) s->st.file_bytes = (double)st.st_size;
  /* DYNSWEEP_PUBLISH_FACTOR (tests: 0 publishes every --publish-every) */
  double factor = ds_knob_real(DS_KNOB_PUBLISH_FACTOR);
  double gap = factor * cost > s->publish_every ? factor * cost : s->publish_every;
  s->next_publish = ds_now() + gap;
  return DS_OK;
}

/* ---- create / resume ----------------------------------------------------------- */

/* The error for a journal (hence store) that cannot be created. */
static int ds_store_create_error(const char *path, int err) {
  char dir[4096];
  struct stat st;
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  const char *d = slash ? (dir[0] ? dir : "/") : ".";
  if ((err == ENOENT || err == ENOTDIR) && stat(d, &st) != 0)
    return ds_fail(DS_EIO, "%s: cannot create store: directory '%s' does not exist", path, d);
  if (err == ENOTDIR || (err == ENOENT && !S_ISDIR(st.st_mode)))
    return ds_fail(DS_EIO, "%s: cannot create store: '%s' is not a directory", path, d);
  return ds_fail(DS_EIO, "%s: cannot create store in '%s': %s", path, d, strerror(err));
}

static ds_store *ds_store_writer(const char *path) {
  ds_store *s = ds_store_alloc(path);
  if (!s) return NULL;
  s->writable = 1;
  s->publish_every = 2.0;
  snprintf(s->run_state, sizeof s->run_state, "running");
  s->session_start = ds_store_unix_now();
  s->jpath = ds_store_suffix(path, ".journal");
  s->tmppath = ds_store_suffix(path, ".tmp");
  if (!s->jpath || !s->tmppath) {
    ds_store_release(s);
    return NULL;
  }
  return s;
}

static int ds_store_create_file(ds_store *s, const ds_store_meta *m, const ds_summary_row *rows) {
  int fd = ds_fs_create(s->tmppath, O_WRONLY | O_TRUNC);
  if (fd < 0) return ds_fail(DS_EIO, "%s: cannot create: %s", s->tmppath, strerror(errno));
  close(fd);
  /* format 5: the rows go to block files (blocks.c), which reserve their own */
  double need = 262144.0 + (s->segmented ? 512.0 * ((double)m->npoints / 1024.0 + 16.0)
                                         : 2.0 * (double)m->npoints * (sizeof(ds_summary_row) + 8.0 * m->naxes)) +
                (m->sweep_text ? 2.0 * strlen(m->sweep_text) : 0);
  DS_TRY(ds_fs_reserve(s->tmppath, need));
  hid_t fapl = ds_store_fapl(), fcpl = ds_store_fcpl();
  if (fapl < 0 || fcpl < 0) {
    if (fapl >= 0) H5Pclose(fapl);
    if (fcpl >= 0) H5Pclose(fcpl);
    return ds_store_h5fail(DS_EIO, s->path, "cannot set up file creation");
  }
  s->file = H5Fcreate(s->tmppath, H5F_ACC_TRUNC, fcpl, fapl);
  H5Pclose(fapl);
  H5Pclose(fcpl);
  if (s->file < 0) return ds_store_h5fail(DS_EIO, s->tmppath, "cannot create HDF5 file");
  s->summary = -1;
  DS_TRY(ds_store_create_layout(s, m, rows));
  if (s->lops->create) DS_TRY(s->lops->create(s, m));
  DS_TRY(ds_store_h5_run_attrs(s));
  DS_TRY(ds_store_digests_seal(s));
  if (ds_store_close_tmp(s) < 0) return ds_store_h5fail(DS_EIO, s->tmppath, "cannot close new store");
  if (s->lops->sync) s->lops->sync(s); /* the block files' entries, before STORE names them */
  if (ds_fs_fsync_path(s->tmppath) != 0)
    return ds_fail(DS_EIO, "%s: cannot fsync: %s", s->tmppath, strerror(errno));
  /* link, not rename: never replaces a store that appeared meanwhile */
  if (ds_fs_link(s->tmppath, s->path) != 0) {
    int err = errno;
    if (err == EEXIST)
      return ds_fail(DS_EINPUT, "%s: already exists (a store is never overwritten; remove it "
                                "or choose another path)", s->path);
    return ds_fail(DS_EIO, "%s: cannot create store: %s", s->path, strerror(err));
  }
  ds_fs_unlink(s->tmppath);
  ds_fs_sync_parent(s->path);
  return DS_OK;
}

/* A new store of layout lops (NULL: rows or segments) whose state (of its
 * prepare; NULL for rows and segments) it takes, and frees on failure. */
static int ds_store_create_with(const char *path, const ds_store_meta *meta, const ds_summary_row *rows,
                                const struct ds_layout_ops *lops, void *state, ds_store **out) {
  struct stat st;
  *out = NULL;
  ds_store tmp = {.path = NULL}; /* frees the state on the early failures */
  if (state && lops->attach) lops->attach(&tmp, state);
  int rc = !path || !path[0] ? ds_fail(DS_EINPUT, "store path is empty")
                             : ds_store_check_meta(path, meta, rows);
  ds_store_silence_hdf5();
  if (rc == DS_OK && lstat(path, &st) == 0)
    rc = ds_fail(DS_EINPUT, "%s: already exists (a store is never overwritten; remove it or "
                            "choose another path)", path);
  ds_store *s = rc == DS_OK ? ds_store_writer(path) : NULL;
  if (rc == DS_OK && !s) rc = DS_ENOMEM;
  if (rc != DS_OK) {
    if (state && lops->free) lops->free(&tmp);
    return rc;
  }
  s->lops = ds_layout_new(lops, meta);
  if (state && s->lops->attach) s->lops->attach(s, state);
  s->segmented = s->lops->segmented;
  rc = ds_journal_lock(s);
  if (rc < 0) {
    rc = ds_store_create_error(path, -rc);
    ds_store_release(s);
    return rc;
  }
  if (rc != DS_OK) {
    ds_store_release(s);
    return rc;
  }
  s->uuid = ds_store_new_uuid();
  s->npoints = meta->npoints;
  s->rows = ds_calloc(meta->npoints ? (size_t)meta->npoints : 1, sizeof *s->rows);
  if (!s->rows) rc = DS_ENOMEM;
  if (rc == DS_OK) {
    if (meta->npoints) memcpy(s->rows, rows, (size_t)meta->npoints * sizeof *s->rows);
    s->written = ds_calloc(meta->npoints ? (size_t)meta->npoints : 1, 1);
    rc = s->written ? ds_store_create_file(s, meta, rows) : DS_ENOMEM;
  }
  if (rc == DS_OK) {
    s->gen = 1;
    rc = ds_journal_reset(s);
  }
  if (rc == DS_OK) rc = ds_store_open_handles(s);
  if (rc != DS_OK) {
    ds_store_close_tmp(s);
    ds_fs_unlink(s->tmppath);
    if (lstat(path, &st) != 0) ds_fs_unlink(s->jpath); /* no store: no journal either */
    if (s->lops->uncreate && lstat(path, &st) != 0) s->lops->uncreate(s); /* nor its (empty) segments */
    ds_store_release(s);
    return rc;
  }
  s->next_publish = ds_now() + s->publish_every;
  s->fresh = 1;
  *out = s;
  return DS_OK;
}

/* Reads the published state of an existing store into the writer s. */
static int ds_store_load(ds_store *s) {
  char uuid[40] = "";
  DS_TRY(ds_store_open_handles(s));
  if (ds_store_get_text(s->file, "store_uuid", uuid, sizeof uuid) >= 0)
    s->uuid = strtoull(uuid, NULL, 16);
  else
    s->uuid = ds_store_new_uuid(); /* a version-1 store: gets one at the next publish */
  if (ds_store_get_i64(s->file, "generation", &s->gen) < 0) s->gen = 0;
  H5Eclear2(H5E_DEFAULT);
  if (s->version < DS_STORE_FORMAT_RESUME_MIN)
    return ds_fail(DS_EINPUT, "%s: store format_version %lld was written by an older dynsweep "
                   "(series under /points); this dynsweep reads it (ls, show, export, status) but "
                   "cannot add to it: finish the sweep with the dynsweep that made it, or start a "
                   "new store", s->path, (long long)s->version);
  int64_t n = 0;
  int mask = 0;
  DS_TRY(ds_store_digests_check(s, &mask));
  DS_TRY(ds_store_read_rows(s, &s->rows, &n));
  if (n != s->npoints) return ds_fail(DS_EIO, "%s: /summary changed while reading", s->path);
  DS_TRY(ds_store_load_written(s));
  s->lops = ds_layout_of(s);
  return s->lops->load ? s->lops->load(s) : DS_OK;
}

int ds_store_create(const char *path, const ds_store_meta *meta, const ds_summary_row *rows,
                    ds_store **out) {
  return ds_store_create_with(path, meta, rows, NULL, NULL, out);
}

int ds_store_create_map(const char *path, const ds_store_meta *meta, const ds_map_meta *mm,
                        ds_store **out) {
  ds_store_meta m2;
  void *state = NULL;
  *out = NULL;
  DS_TRY(ds_layout_map.prepare(path, meta, mm, &m2, &state));
  return ds_store_create_with(path, &m2, NULL, &ds_layout_map, state, out); /* takes state */
}

int ds_store_resume(const char *path, ds_store **out) {
  *out = NULL;
  ds_store_silence_hdf5();
  DS_TRY(ds_store_check_file(path));
  ds_store *s = ds_store_writer(path);
  if (!s) return DS_ENOMEM;
  int rc = ds_store_load(s);
  if (rc == DS_OK) {
    rc = ds_journal_lock(s);
    if (rc < 0) rc = ds_fail(DS_EIO, "%s: cannot open %s: %s", path, s->jpath, strerror(-rc));
  }
  if (rc != DS_OK) {
    ds_store_release(s);
    return rc;
  }
  ds_fs_unlink(s->tmppath); /* left by a writer killed while publishing */
  if (s->lops->gc) s->lops->gc(s); /* and its segment files */
  ds_journal_hdr h;
  struct stat st;
  int valid = ds_journal_read_hdr(s->jfd, &h) == 0;
  int mine = valid && h.uuid == s->uuid && h.row_size == sizeof(ds_summary_row);
  if (mine && h.base_gen == s->gen) {
    int64_t end = 0, n = 0;
    rc = ds_journal_scan(s->jfd, ds_store_fold, s, &end, &n);
    s->jend = end;
    s->jrecs = n;
    if (rc == DS_OK && fstat(s->jfd, &st) == 0 && end < (int64_t)st.st_size) {
      char what[256];
      ds_journal_describe_tail(s->jfd, end, what, sizeof what);
      ds_warn("%s: %s is torn at byte %lld: %s, left by a kill or damaged, is dropped (%lld "
              "record(s) before it are replayed); what it recorded is recomputed: an unfinished "
              "point runs again from its previous checkpoint or from step 0", path, s->jpath,
              (long long)end, what, (long long)n);
      if (ds_fs_ftruncate(s->jfd, (off_t)end) != 0) { /* the next append overwrites it anyway */ }
    }
    if (rc == DS_OK && n > 0) rc = ds_store_publish(s, 1); /* replay */
  } else if (fstat(s->jfd, &st) == 0 && st.st_size > DS_JOURNAL_HDR &&
             !(mine && h.base_gen == s->gen - 1)) {
    /* not ours: keep a copy for inspection, say what it held, start afresh */
    char what[512], *keep = ds_store_suffix(path, ".journal.ignored");
    ds_journal_ids ids;
    ds_journal_list(s->jfd, &ids, what, sizeof what);
    int kept = keep && ds_fs_copy(s->jpath, keep) == DS_OK;
    ds_clear_error();
    ds_warn("%s: ignoring %s (%s): its %s are not applied%s%s; points of this store that are not "
            "finished run (again)", path, s->jpath,
            !valid ? "damaged header" : !mine ? "it belongs to another store" : "older generation",
            what, kept ? "; kept as " : "", kept ? keep : "");
    free(keep);
  }
  if (rc == DS_OK && s->jrecs == 0) rc = ds_journal_reset(s);
  if (rc != DS_OK) {
    ds_store_release(s);
    return rc;
  }
  s->next_publish = ds_now() + s->publish_every;
  *out = s;
  return DS_OK;
}

int ds_store_extend(ds_store *s, const ds_store_meta *meta, const ds_summary_row *rows) {
  if (!s->writable) return ds_fail(DS_EINTERNAL, "%s: store is open read-only", s->path);
  if (s->map) return ds_fail(DS_EINPUT, "%s: a map store cannot be extended (yet)", s->path);
  DS_TRY(ds_store_check_meta(s->path, meta, rows));
  if (meta->npoints < s->npoints)
    return ds_fail(DS_EINTERNAL, "%s: an extension cannot remove points", s->path);
  DS_TRY(ds_store_publish(s, 1)); /* the journal must be empty */
  s->ext_meta = meta;
  s->ext_rows = rows;
  int rc = ds_store_publish(s, 1);
  s->ext_meta = NULL;
  s->ext_rows = NULL;
  return rc;
}

/* ---- journaled writes ------------------------------------------------------------ */

static int ds_store_writer_row(ds_store *s, int64_t id, int64_t *idx) {
  if (!s->writable) return ds_fail(DS_EINTERNAL, "%s: store is open read-only", s->path);
  *idx = ds_store_row_index(s, id);
  if (*idx < 0)
    return ds_fail(DS_EINTERNAL, "%s: point id %" PRId64 " is not in /summary", s->path, id);
  return DS_OK;
}

int ds_store_write_point(ds_store *s, const ds_summary_row *row, const ds_traj *traj) {
  int64_t idx = -1;
  DS_TRY(ds_store_writer_row(s, row->id, &idx));
  DS_TRY(ds_store_check_point(s, row, traj));
  ds_traj empty;
  ds_traj_init(&empty);
  char *buf = NULL;
  size_t len = 0;
  DS_TRY(ds_traj_pack(traj ? traj : &empty, &buf, &len));
  ds_summary_row r = *row;
  r.reason[sizeof r.reason - 1] = 0;
  int rc = ds_journal_append(s, DS_JR_RESULT, &r, sizeof r, buf, len);
  free(buf);
  if (rc == DS_OK) {
    s->rows[idx] = r;
    ds_store_mark_dirty(s, idx);
  }
  return rc;
}

int ds_store_write_row(ds_store *s, const ds_summary_row *row) {
  int64_t idx = -1;
  DS_TRY(ds_store_writer_row(s, row->id, &idx));
  if (ds_store_is_final(s->rows[idx].status) && !ds_store_is_final(row->status)) return DS_OK;
  ds_summary_row r = *row;
  r.reason[sizeof r.reason - 1] = 0;
  /* "running" is journaled too: it carries the attempt count, so a resume
   * after a kill knows which points were running (src/sched/dispatch.c) */
  DS_TRY(ds_journal_append(s, DS_JR_ROW, &r, sizeof r, NULL, 0));
  s->rows[idx] = r;
  ds_store_mark_dirty(s, idx);
  return DS_OK;
}

int ds_store_reopen_row(ds_store *s, const ds_summary_row *row) {
  int64_t idx = -1;
  DS_TRY(ds_store_writer_row(s, row->id, &idx));
  s->rows[idx] = *row;
  s->rows[idx].reason[sizeof row->reason - 1] = 0;
  ds_store_mark_dirty(s, idx);
  return DS_OK;
}

int ds_store_write_ckpt(ds_store *s, int64_t id, const char *blob, size_t len) {
  int64_t idx = -1;
  DS_TRY(ds_store_writer_row(s, id, &idx));
  if (ds_store_is_final(s->rows[idx].status)) return DS_OK;
  return ds_journal_append(s, DS_JR_CKPT, &id, sizeof id, blob, len);
}

void ds_store_set_publish_every(ds_store *s, double every_s) {
  if (!s) return;
  s->publish_every = every_s > 0 ? every_s : 0;
  s->next_publish = ds_now() + s->publish_every;
}

void ds_store_set_run(ds_store *s, const char *state, double session_start_unix, int64_t done0) {
  if (!s || !s->writable) return;
  /* a store created by this writer already holds these attributes (the
   * session started when it was created): no publish just for them */
  if (s->fresh && state && !strcmp(state, s->run_state) && done0 == s->session_done0 &&
      session_start_unix > s->session_start - 2 && session_start_unix < s->session_start + 2)
    return;
  s->fresh = 0;
  snprintf(s->run_state, sizeof s->run_state, "%s", state ? state : "");
  s->session_start = session_start_unix;
  s->session_done0 = done0;
  s->attrs_dirty = 1;
}

void ds_store_set_eta(ds_store *s, double eta_unix) {
  if (!s || !s->writable) return;
  /* a change `status` should see (by > 5 s and > 10% of what is left) asks
   * for a publish, at most one every 10 s (results publish anyway; this is for
   * the first minutes of long points); small drifts ride with the next one */
  double left = eta_unix - ds_store_unix_now(), d = fabs(eta_unix - s->eta_unix), now = ds_now();
  if (d > 5 && d > 0.1 * (left > 0 ? left : 0) && (s->eta_pub_at == 0 || now - s->eta_pub_at > 10)) {
    s->attrs_dirty = 1;
    s->eta_pub_at = now;
  }
  s->eta_unix = eta_unix;
}

int ds_store_set_inputs(ds_store *s, const char *inputs, const char *inputs_hash) {
  if (!s || !s->writable) return ds_fail(DS_EINTERNAL, "store is not open for writing");
  char *a = ds_strdup(inputs), *b = ds_strdup(inputs_hash);
  if (!a || !b) {
    free(a);
    free(b);
    return DS_ENOMEM;
  }
  free(s->inputs);
  free(s->inputs_hash);
  s->inputs = a;
  s->inputs_hash = b;
  s->fresh = 0;
  s->attrs_dirty = 1;
  return DS_OK;
}

/* A string root attribute kept by the writer (*slot), written at every
 * publish from the next one on. */
static int set_run_text(ds_store *s, char **slot, const char *text) {
  if (!s || !s->writable) return ds_fail(DS_EINTERNAL, "store is not open for writing");
  char *a = ds_strdup(text);
  if (!a) return DS_ENOMEM;
  free(*slot);
  *slot = a;
  s->fresh = 0;
  s->attrs_dirty = 1;
  return DS_OK;
}

int ds_store_set_failed_pixels(ds_store *s, const char *text) {
  return set_run_text(s, s ? &s->failed_pixels : NULL, text);
}

int ds_store_set_rank_nodes(ds_store *s, const char *rank_nodes) {
  return set_run_text(s, s ? &s->rank_nodes : NULL, rank_nodes);
}

void ds_store_get_stats(const ds_store *s, ds_store_stats *st) {
  memset(st, 0, sizeof *st);
  if (s) *st = s->st;
  if (s) st->generation = s->gen;
}

int ds_store_finish(ds_store *s, const char *end_time, double rank0_cpu_s, double wall_s) {
  if (!s->writable) return ds_fail(DS_EINTERNAL, "%s: store is open read-only", s->path);
  s->cpu_s = rank0_cpu_s;
  s->wall_s = wall_s;
  s->have_totals = 1;
  s->fin_t0 = ds_now(); /* the publish below adds its own time to the totals */
  s->fin_c0 = ds_cpu_time();
  if (end_time) { /* complete; NULL: only the totals of an unfinished session */
    snprintf(s->end_time, sizeof s->end_time, "%s", end_time);
    s->finished = 1;
    snprintf(s->run_state, sizeof s->run_state, "complete");
  }
  s->attrs_dirty = 1;
  return ds_store_publish(s, 1);
}

/* A complete store left by a writer killed after its last publish may still
 * have a journal and a stale STORE.tmp: remove them under the writer lock.
 * Every point of the published store is final, so the journal can only repeat
 * what the store already holds (results, markers and checkpoints of finished
 * points), whatever its header says. Without a journal no writer is running,
 * and STORE.tmp is a dead publish. */
void ds_store_tidy(const char *path) {
  ds_store *r = NULL;
  char uuid[40] = "";
  int64_t gen = -1;
  if (ds_store_open(path, &r) != DS_OK) {
    ds_clear_error();
    return;
  }
  if (ds_store_get_text(r->file, "store_uuid", uuid, sizeof uuid) < 0 ||
      ds_store_get_i64(r->file, "generation", &gen) < 0)
    gen = -1;
  H5Eclear2(H5E_DEFAULT);
  ds_store_release(r);
  ds_store *s = gen >= 0 ? ds_store_writer(path) : NULL;
  if (!s) return;
  int fd = open(s->jpath, O_RDWR | O_CLOEXEC);
  struct stat a, b;
  if (fd < 0 && errno == ENOENT) {
    ds_fs_unlink(s->tmppath);
  } else if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
             stat(s->jpath, &b) == 0 && a.st_ino == b.st_ino) {
    /* a writer killed after its last publish (the store complete) may have
     * left the segment and block files that publish retired: the resume of
     * an unfinished store collects them (ds_store_resume), so does this */
    if (ds_store_load(s) == DS_OK && s->lops->gc) s->lops->gc(s);
    ds_fs_unlink(s->tmppath);
    ds_fs_unlink(s->jpath);
  }
  if (fd >= 0) close(fd);
  ds_clear_error();
  ds_store_release(s);
}

/* ---- close ------------------------------------------------------------------------ */

int ds_store_close(ds_store *s) {
  if (!s) return DS_OK;
  char path[4096];
  snprintf(path, sizeof path, "%s", s->path);
  int rc = DS_OK;
  if (s->writable) {
    rc = ds_store_sync(s);
    ds_store_commit_stop(s);
    if (rc == DS_OK) rc = ds_store_publish(s, 1);
    /* everything is in STORE: the empty journal goes (still under our lock) */
    if (rc == DS_OK && s->jrecs == 0) ds_fs_unlink(s->jpath);
  }
  if (ds_store_release(s) < 0 && rc == DS_OK)
    rc = ds_store_h5fail(DS_EIO, path, "cannot close store");
  return rc;
}
