/* journal.c -- STORE.journal: the append-only log that makes the store
 * crash-safe (docs/store.md, "Durability").
 *
 * File header (64 bytes): "DSJOURNL", u32 version 1, u32 sizeof(ds_summary_row),
 * u64 store uuid, i64 base generation (the published generation the records
 * apply on top of), zeros, u32 CRC32 of bytes 0..59 at offset 60.
 * Record: u32 magic "DSJR", u32 type, u64 payload length, u32 CRC32 of the
 * payload, u32 CRC32 of the 20 bytes before it; then the payload. A record is
 * written with one pwrite; a kill can leave a torn last record, which the CRCs
 * detect and every reader ignores. The journal is a local, same-machine
 * format (native byte order and row layout; the header records the row size).
 * The open journal carries the writer lock (flock, released by the kernel
 * when the process dies). */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dynsweep/util.h"
#include "fsio.h"
#include "store_priv.h"

#define DS_JR_MAGIC 0x524A5344u /* "DSJR" little-endian */
#define DS_JR_HDR 24

/* ---- CRC32 (IEEE 802.3, reflected, as zlib) ------------------------------- */

static uint32_t ds_crc_table[256];
static int ds_crc_ready;

static void ds_crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    ds_crc_table[i] = c;
  }
  ds_crc_ready = 1;
}

uint32_t ds_crc32(const void *data, size_t len, uint32_t crc) {
  if (!ds_crc_ready) ds_crc_init();
  const unsigned char *p = data;
  crc = ~crc;
  for (size_t i = 0; i < len; i++) crc = ds_crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/* ---- header ---------------------------------------------------------------- */

static void ds_journal_pack_hdr(unsigned char *b, uint64_t uuid, int64_t gen) {
  uint32_t ver = 1, rs = (uint32_t)sizeof(ds_summary_row);
  memset(b, 0, DS_JOURNAL_HDR);
  memcpy(b, "DSJOURNL", 8);
  memcpy(b + 8, &ver, 4);
  memcpy(b + 12, &rs, 4);
  memcpy(b + 16, &uuid, 8);
  memcpy(b + 24, &gen, 8);
  uint32_t crc = ds_crc32(b, 60, 0);
  memcpy(b + 60, &crc, 4);
}

int ds_journal_read_hdr(int fd, ds_journal_hdr *h) {
  unsigned char b[DS_JOURNAL_HDR];
  uint32_t ver, crc;
  if (pread(fd, b, sizeof b, 0) != (ssize_t)sizeof b) return -1;
  memcpy(&crc, b + 60, 4);
  if (memcmp(b, "DSJOURNL", 8) != 0 || crc != ds_crc32(b, 60, 0)) return -1;
  memcpy(&ver, b + 8, 4);
  memcpy(&h->row_size, b + 12, 4);
  memcpy(&h->uuid, b + 16, 8);
  memcpy(&h->base_gen, b + 24, 8);
  return ver == 1 ? 0 : -1;
}

/* Both writes reach the disk before we return: the header names the
 * generation the (now empty) journal applies to. */
int ds_journal_reset(ds_store *s) {
  unsigned char b[DS_JOURNAL_HDR];
  ds_journal_pack_hdr(b, s->uuid, s->gen);
  if (ds_fs_ftruncate(s->jfd, 0) != 0 || ds_fs_pwrite(s->jfd, b, sizeof b, 0) != (ssize_t)sizeof b ||
      ds_fs_jsync(s->jfd, 1) != 0)
    return ds_fail(DS_EIO, "%s: cannot reset the journal: %s", s->jpath, strerror(errno));
  s->jend = DS_JOURNAL_HDR;
  s->jrecs = 0;
  s->jtop = 0;
  s->jsync = 0;
  return DS_OK;
}

/* ---- records ------------------------------------------------------------- */

/* What a record adds to the top file of a format-5 store (its series go to a
 * segment): the row, a checkpoint, a generous share for index rows. */
int64_t ds_journal_top_bytes(uint32_t type, size_t alen, size_t blen) {
  return (int64_t)alen + (type == DS_JR_RESULT ? (int64_t)blen / 16 + 4096 : (int64_t)blen);
}

int ds_journal_append(ds_store *s, uint32_t type, const void *a, size_t alen, const void *b,
                      size_t blen) {
  double t0 = ds_now();
  unsigned char h[DS_JR_HDR];
  uint32_t magic = DS_JR_MAGIC, pcrc = ds_crc32(a, alen, 0), hcrc;
  uint64_t len = (uint64_t)alen + blen;
  if (blen) pcrc = ds_crc32(b, blen, pcrc);
  memcpy(h, &magic, 4);
  memcpy(h + 4, &type, 4);
  memcpy(h + 8, &len, 8);
  memcpy(h + 16, &pcrc, 4);
  hcrc = ds_crc32(h, 20, 0);
  memcpy(h + 20, &hcrc, 4);
  struct iovec iov[3] = {{h, sizeof h}, {(void *)a, alen}, {(void *)b, blen}};
  size_t total = sizeof h + alen + blen, done = 0;
  int iovcnt = blen ? 3 : 2;
  /* pwritev may write less than asked (e.g. at a file size limit): go on
   * from where it stopped; on failure cut the torn record off again */
  while (done < total) {
    struct iovec v[3];
    int nv = 0;
    size_t skip = done;
    for (int i = 0; i < iovcnt; i++) {
      if (skip >= iov[i].iov_len) {
        skip -= iov[i].iov_len;
        continue;
      }
      v[nv].iov_base = (char *)iov[i].iov_base + skip;
      v[nv].iov_len = iov[i].iov_len - skip;
      skip = 0;
      nv++;
    }
    ssize_t w = ds_fs_pwritev(s->jfd, v, nv, (off_t)(s->jend + (int64_t)done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      int err = w < 0 ? errno : ENOSPC;
      if (ds_fs_ftruncate(s->jfd, (off_t)s->jend) != 0) { /* the CRC catches what stays */ }
      return ds_fail(DS_EIO, "%s: cannot append to the journal: %s (the published store is "
                             "intact; fix the cause and run again to resume)", s->jpath,
                     strerror(err));
    }
    done += (size_t)w;
  }
  s->jend += (int64_t)total;
  s->jrecs++;
  s->jtop += ds_journal_top_bytes(type, alen, blen);
  s->jsync = 1;
  s->st.journal_bytes += (double)total;
  s->st.journal_records++;
  s->st.journal_s += ds_now() - t0;
  return DS_OK;
}

int ds_journal_scan(int fd, ds_journal_fn fn, void *arg, int64_t *end, int64_t *nrec) {
  struct stat st;
  int64_t off = DS_JOURNAL_HDR, n = 0;
  int rc = DS_OK;
  char *buf = NULL;
  size_t cap = 0;
  if (fstat(fd, &st) != 0) return ds_fail(DS_EIO, "cannot stat the journal: %s", strerror(errno));
  while (off + DS_JR_HDR <= (int64_t)st.st_size) {
    unsigned char h[DS_JR_HDR];
    uint32_t magic, type, pcrc, hcrc;
    uint64_t len;
    if (pread(fd, h, sizeof h, (off_t)off) != (ssize_t)sizeof h) break;
    memcpy(&magic, h, 4);
    memcpy(&type, h + 4, 4);
    memcpy(&len, h + 8, 8);
    memcpy(&pcrc, h + 16, 4);
    memcpy(&hcrc, h + 20, 4);
    if (magic != DS_JR_MAGIC || hcrc != ds_crc32(h, 20, 0)) break;
    if (len > (uint64_t)(st.st_size - off - DS_JR_HDR)) break; /* torn tail */
    if (len + 1 > cap) {
      char *nb = realloc(buf, len + 1);
      if (!nb) {
        rc = ds_fail(DS_ENOMEM, "out of memory reading a journal record of %llu bytes",
                     (unsigned long long)len);
        break;
      }
      buf = nb;
      cap = len + 1;
    }
    if (pread(fd, buf, len, (off_t)(off + DS_JR_HDR)) != (ssize_t)len) break;
    if (ds_crc32(buf, len, 0) != pcrc) break;
    if (fn && (rc = fn(arg, type, buf, (size_t)len)) != DS_OK) break;
    off += DS_JR_HDR + (int64_t)len;
    n++;
  }
  free(buf);
  if (end) *end = off;
  if (nrec) *nrec = n;
  return rc;
}

/* ---- lock ------------------------------------------------------------------ */

/* flock on STORE.journal. The file is never renamed or replaced while a
 * writer holds it, but a previous writer may unlink it at close: after
 * locking, check that the path still names the locked file, else retry. */
int ds_journal_lock(ds_store *s) {
  for (int tries = 0; tries < 10; tries++) {
    int fd = ds_fs_create(s->jpath, O_RDWR);
    if (fd < 0) return -errno; /* caller words the message */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      close(fd);
      if (err == EWOULDBLOCK)
        return ds_fail(DS_EIO, "%s: another dynsweep run is writing this store (%s is locked); "
                               "wait for it to finish or stop it first", s->path, s->jpath);
      return ds_fail(DS_EIO, "%s: cannot lock %s: %s", s->path, s->jpath, strerror(err));
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(s->jpath, &b) == 0 && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev) {
      s->jfd = fd;
      return DS_OK;
    }
    close(fd);
  }
  return ds_fail(DS_EIO, "%s: cannot lock %s (it keeps being replaced)", s->path, s->jpath);
}

/* ---- reporting --------------------------------------------------------------- */

static const char *ds_journal_type_name(uint32_t type) {
  return type == DS_JR_RESULT ? "result" : type == DS_JR_ROW ? "summary row" : type == DS_JR_CKPT ? "checkpoint" : type == DS_JR_MAP ? "map (tile)" : "unknown";
}

void ds_journal_describe_tail(int fd, int64_t off, char *buf, size_t n) {
  struct stat st;
  unsigned char h[DS_JR_HDR];
  uint32_t magic, type, hcrc;
  uint64_t len;
  int64_t id = -1, size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : off;
  if (pread(fd, h, sizeof h, (off_t)off) != (ssize_t)sizeof h) {
    snprintf(buf, n, "%lld bytes too short for a record header", (long long)(size - off));
    return;
  }
  memcpy(&magic, h, 4);
  memcpy(&type, h + 4, 4);
  memcpy(&len, h + 8, 8);
  memcpy(&hcrc, h + 20, 4);
  if (magic != DS_JR_MAGIC || hcrc != ds_crc32(h, 20, 0)) {
    snprintf(buf, n, "%lld bytes whose record header is damaged (which points they recorded is "
             "unknown)", (long long)(size - off));
    return;
  }
  if (pread(fd, &id, sizeof id, (off_t)(off + DS_JR_HDR)) != (ssize_t)sizeof id) id = -1;
  int64_t have = size - off - DS_JR_HDR;
  snprintf(buf, n, "a %s record of point %lld (%s; %lld of its %llu bytes present)",
           ds_journal_type_name(type), (long long)id,
           have < (int64_t)len ? "cut short" : "its CRC does not match", (long long)(have < 0 ? 0 : have),
           (unsigned long long)len);
}

static int ds_journal_ids_cb(void *arg, uint32_t type, const char *p, size_t len) {
  ds_journal_ids *x = arg;
  int64_t id = -1;
  (void)type;
  if (len >= sizeof id) memcpy(&id, p, sizeof id);
  if (x->n < (int64_t)(sizeof x->id / sizeof x->id[0])) x->id[x->n] = id;
  x->n++;
  return DS_OK;
}

void ds_journal_list(int fd, ds_journal_ids *x, char *buf, size_t n) {
  memset(x, 0, sizeof *x);
  ds_journal_scan(fd, ds_journal_ids_cb, x, NULL, NULL);
  ds_clear_error();
  int64_t shown = x->n < (int64_t)(sizeof x->id / sizeof x->id[0]) ? x->n : (int64_t)(sizeof x->id / sizeof x->id[0]);
  size_t o = (size_t)snprintf(buf, n, "%lld record(s)", (long long)x->n);
  for (int64_t i = 0; i < shown && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? " " : ", of points ", (long long)x->id[i]);
  if (x->n > shown && o < n) snprintf(buf + o, n - o, " ...");
}

/* ---- the group commit's thread -------------------------------------------------
 * ds_store_commit hands the fdatasync to this thread and returns at once:
 * records appended before the hand-over are covered by the fdatasync that
 * starts after it; records appended later set jsync again and go with the
 * next commit. ds_store_sync (an explicit sync: a checkpoint of rank 0's own
 * point, close) waits for a running one, then syncs itself. */
static void *commit_thread(void *arg) {
  ds_store *s = arg;
  pthread_mutex_lock(&s->cmu);
  for (;;) {
    while (!s->cwant && !s->cquit) pthread_cond_wait(&s->ccv, &s->cmu);
    if (s->cquit) break;
    s->cwant = 0;
    pthread_mutex_unlock(&s->cmu);
    double t0 = ds_now();
    int bad = ds_fs_jsync(s->jfd, 0) != 0 ? errno : 0;
    double t1 = ds_now();
    pthread_mutex_lock(&s->cmu);
    s->cbusy = 0;
    if (bad && !s->cerr) s->cerr = bad;
    s->last_sync = t1;
    s->cspent += t1 - t0;
    s->csyncs++;
    pthread_cond_broadcast(&s->ccv);
  }
  pthread_mutex_unlock(&s->cmu);
  return NULL;
}

/* Takes the thread's figures and error into the store (caller holds cmu). */
static int commit_collect(ds_store *s) {
  s->st.journal_s += s->cspent;
  s->st.journal_syncs += s->csyncs;
  s->cspent = 0;
  s->csyncs = 0;
  if (!s->cerr) return DS_OK;
  int e = s->cerr;
  s->cerr = 0;
  return ds_fail(DS_EIO, "%s: cannot fsync the journal: %s", s->jpath, strerror(e));
}

/* Waits for a running background fdatasync. */
static int commit_wait(ds_store *s) {
  if (!s->cstarted) return DS_OK;
  pthread_mutex_lock(&s->cmu);
  while (s->cbusy) pthread_cond_wait(&s->ccv, &s->cmu);
  int rc = commit_collect(s);
  pthread_mutex_unlock(&s->cmu);
  return rc;
}

void ds_store_commit_stop(ds_store *s) {
  if (!s || !s->cstarted) return;
  pthread_mutex_lock(&s->cmu);
  s->cquit = 1;
  pthread_cond_broadcast(&s->ccv);
  pthread_mutex_unlock(&s->cmu);
  pthread_join(s->cthr, NULL);
  pthread_mutex_lock(&s->cmu);
  commit_collect(s); /* an error here was already reported by ds_store_sync */
  pthread_mutex_unlock(&s->cmu);
  pthread_mutex_destroy(&s->cmu);
  pthread_cond_destroy(&s->ccv);
  s->cstarted = 0;
}

int ds_store_sync(ds_store *s) {
  if (!s || !s->writable) return DS_OK;
  DS_TRY(commit_wait(s));
  if (!s->jsync) return DS_OK;
  double t0 = ds_now();
  if (ds_fs_jsync(s->jfd, 0) != 0) /* the data and the file size; not the times */
    return ds_fail(DS_EIO, "%s: cannot fsync the journal: %s", s->jpath, strerror(errno));
  s->jsync = 0;
  s->last_sync = ds_now();
  s->st.journal_s += s->last_sync - t0;
  s->st.journal_syncs++;
  return DS_OK;
}

int ds_store_commit(ds_store *s) {
  if (!s || !s->writable) return DS_OK;
  if (!s->cstarted) {
    if (!s->jsync || ds_now() - s->last_sync < DS_STORE_COMMIT_S) return DS_OK;
    if (pthread_mutex_init(&s->cmu, NULL) != 0 || pthread_cond_init(&s->ccv, NULL) != 0 ||
        pthread_create(&s->cthr, NULL, commit_thread, s) != 0)
      return ds_store_sync(s); /* no thread: commit on this one */
    s->cstarted = 1;
  }
  pthread_mutex_lock(&s->cmu);
  int rc = commit_collect(s);
  if (rc == DS_OK && s->jsync && !s->cbusy && ds_now() - s->last_sync >= DS_STORE_COMMIT_S) {
    s->jsync = 0;
    s->cbusy = s->cwant = 1;
    pthread_cond_signal(&s->ccv);
  }
  pthread_mutex_unlock(&s->cmu);
  return rc;
}
