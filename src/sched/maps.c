/* maps.c -- `dynsweep run` of a map sweep (issue 13; include/dynsweep/map.h).
 *
 * Which points exist (the planner): a dense map's points in tiles of
 * ds_map_tile_points consecutive grid indices; a refined map (grid.refine)
 * level by level: level 0 is the coarse grid (every 2^L-th value of the two
 * refined axes), level k adds the midpoints of every cell of side 2^(L-k+1)
 * whose four corners disagree in outcome, in grid order, cut into tiles. A
 * level starts when the one before has finished, so the points of a level,
 * and its tiles, follow from the sweep alone: the same whatever the rank
 * count or how often the run was resumed.
 *
 * Who runs them (the dispatcher, rank 0): one message per tile.
 *   worker -> 0  TAG_READY       (int 0)
 *   0 -> worker  TAG_ASSIGN      (int64[4]: first grid index or -1, count, level, isolate);
 *                                count 0 = stop; first -1: the count grid
 *                                indices follow in TAG_MAP_IDX (refined levels)
 *   worker -> 0  TAG_MAP_RESULT  (count x ds_map_rec), which doubles as READY
 * Workers of a map run alone (teams of one). A tile is written to the store
 * as one journal record, so it is either whole or absent after a kill: resume
 * is per tile, and a drain lets every running tile finish (a tile is about
 * DS_MAP_TILE_S seconds of work).
 *
 * The store: rank 0 keeps one outcome byte per pixel (DS_MAP_UNSET until
 * computed) for refinement and progress; the records go to the store's map
 * arrays (ds_store_write_map). */
#include "state.h"
#include "dynsweep/isolate.h"
#include "dynsweep/map.h"

typedef struct {
  ds_run run;               /* first: the run core (state.h) */
  int64_t N, tile;          /* pixels, points per tile */
  uint8_t *out;             /* outcome per pixel */
  int64_t shape[DS_MAX_AXES], stride[DS_MAX_AXES];
  int L, level;             /* refinement levels, the level being run (dense: L = level = 0) */
  int64_t *pts, npts;       /* the points of this level (refined), in grid order */
  int64_t prev_npts, level_done; /* the level before's points; pixels of this level taken (ETA) */
  int64_t nunits, next;     /* tiles of this level, the next to hand out */
  int64_t inflight;         /* tiles out */
  int64_t (*wunit)[3];      /* per world rank: its tile (first index or -1, count, offset in pts) */
  int64_t *redo;            /* tiles that came back incomplete (a drained child): hand out again */
  int nredo;
  int last_died;            /* the store says its last run did not end (run_state "running") */
  int isolate;              /* every tile runs in a child process (the last run died, or --isolate always) */
  int64_t px_killed;        /* pixels failed because their own process died (this session) */
  char *pxfail_text;        /* their lines for the store (failed_pixels), an earlier run's first */
  size_t pxfail_len;
  int64_t count[5], computed; /* pixels of each outcome, pixels computed (run.done0 at the start) */
} msched;

/* ---- the planner ------------------------------------------------------------ */

static int ms_dense(const msched *m) { return m->run.sw->refine_levels == 0; }

/* Tiles of the current level. */
static void ms_level_units(msched *m) {
  int64_t n = ms_dense(m) ? m->N : m->npts;
  m->nunits = (n + m->tile - 1) / m->tile;
  m->next = 0;
}

/* First grid index and count of tile u of the current level. */
static void ms_unit(const msched *m, int64_t u, int64_t *first, int64_t *count, int64_t *off) {
  int64_t n = ms_dense(m) ? m->N : m->npts, a = u * m->tile, b = a + m->tile < n ? a + m->tile : n;
  *count = b - a;
  *off = a;
  *first = ms_dense(m) ? a : -1;
}

static int64_t ms_unit_idx0(const msched *m, int64_t u) {
  return ms_dense(m) ? u * m->tile : m->pts[u * m->tile];
}

/* The refined plane at stride h, in every slice (the other axes' values):
 * mode 0 lists the coarse grid (i, j multiples of h); mode 1 lists the five
 * midpoints of every cell of side 2h whose four corners are known (trained or
 * inferred) and disagree in class; mode 2 gives every unknown midpoint of a
 * cell whose corners agree their class, flagged DS_MAP_INFERRED (rank 0's
 * copy only: the store keeps trained pixels, readers fill the same way,
 * python/dynsweep/maps.py fill_refined). Returns the number listed. */
static int64_t ms_plane(msched *m, int64_t h, int mode, int64_t *list, int64_t cap) {
  const ds_sweep *sw = m->run.sw;
  int ra = sw->refine_axes[0], rb = sw->refine_axes[1], two = rb >= 0; /* else: intervals */
  int64_t na = m->shape[ra], nb = two ? m->shape[rb] : 1, sa = m->stride[ra], sb = two ? m->stride[rb] : 0;
  int64_t nslice = m->N / (na * nb), n = 0;
  for (int64_t sl = 0; sl < nslice; sl++) {
    int64_t base = 0, r = sl; /* the slice's first index: sl over the other axes in grid order */
    for (int a = sw->naxes - 1; a >= 0; a--) {
      if (a == ra || a == rb) continue;
      base += (r % m->shape[a]) * m->stride[a];
      r /= m->shape[a];
    }
    if (mode == 0) {
      for (int64_t i = 0; i < na; i += h)
        for (int64_t j = 0; j < nb; j += h, n++)
          if (list && n < cap) list[n] = base + i * sa + j * sb;
      continue;
    }
    int64_t H = 2 * h;
    for (int64_t i = 0; i + H < na; i += H)
      for (int64_t j = 0; two ? j + H < nb : j == 0; j += two ? H : 1) {
        int64_t c00 = base + i * sa + j * sb, c10 = c00 + H * sa, c01 = c00 + H * sb, c11 = c10 + H * sb;
        uint8_t o00 = m->out[c00], o10 = m->out[c10], o01 = m->out[c01], o11 = m->out[c11];
        if (o00 == DS_MAP_UNSET || o10 == DS_MAP_UNSET || o01 == DS_MAP_UNSET || o11 == DS_MAP_UNSET)
          continue;
        uint8_t k = o00 & 0x3f;
        int agree = k == (o10 & 0x3f) && k == (o01 & 0x3f) && k == (o11 & 0x3f);
        if (agree != (mode == 2)) continue;
        int64_t mid[5] = {c00 + h * sa, c00 + h * sb, c00 + h * sa + h * sb, c10 + h * sb, c01 + h * sa};
        for (int q = 0; q < (two ? 5 : 1); q++) {
          if (mode == 2 && m->out[mid[q]] == DS_MAP_UNSET) m->out[mid[q]] = k | DS_MAP_INFERRED;
          if (mode == 1 && list && n < cap) list[n] = mid[q];
          n += mode == 1;
        }
      }
  }
  return n;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

#define MS_QUEUED 254 /* an unknown pixel listed for this level (while filling) */

/* The points of refinement level k (sorted, without repeats); k > 0 also
 * fills the cells of side 2h that agree (mode 2 of ms_plane). */
static int ms_make_level(msched *m, int k) {
  int64_t h = (int64_t)1 << (m->L - k);
  int64_t n = ms_plane(m, h, k > 0, NULL, 0);
  free(m->pts);
  m->pts = ds_calloc((size_t)(n ? n : 1), sizeof *m->pts);
  if (!m->pts) return DS_ENOMEM;
  ms_plane(m, h, k > 0, m->pts, n);
  qsort(m->pts, (size_t)n, sizeof *m->pts, cmp_i64);
  int64_t w = 0;
  for (int64_t i = 0; i < n; i++)
    if (!w || m->pts[i] != m->pts[w - 1]) m->pts[w++] = m->pts[i];
  m->npts = w;
  if (k > m->level) m->prev_npts = m->npts > 0 ? m->npts : m->prev_npts;
  m->level = k;
  m->level_done = 0;
  if (k > 0) { /* a midpoint listed here is trained, not filled by an agreeing neighbour */
    for (int64_t i = 0; i < w; i++)
      if (m->out[m->pts[i]] == DS_MAP_UNSET) m->out[m->pts[i]] = MS_QUEUED;
    ms_plane(m, h, 2, NULL, 0);
    for (int64_t i = 0; i < w; i++)
      if (m->out[m->pts[i]] == MS_QUEUED) m->out[m->pts[i]] = DS_MAP_UNSET;
  }
  ms_level_units(m);
  return DS_OK;
}

/* The next tile of this level nobody has computed (a tile is written whole). */
static int64_t ms_next_unit(msched *m) {
  if (m->nredo > 0) return m->redo[--m->nredo];
  while (m->next < m->nunits && m->out[ms_unit_idx0(m, m->next)] != DS_MAP_UNSET) m->next++;
  return m->next < m->nunits ? m->next++ : -1;
}

/* Level done and nothing in flight: move to the next level with points. */
static int ms_advance(msched *m) {
  while (!ms_dense(m) && m->inflight == 0 && m->nredo == 0 && m->next >= m->nunits &&
         m->level < m->L) {
    DS_TRY(ms_make_level(m, m->level + 1));
    if (!m->run.o->quiet && m->npts && !m->run.tty)
      ds_log("refinement level %d of %d: %lld points near the boundary", m->level, m->L,
             (long long)m->npts);
    while (m->next < m->nunits && m->out[ms_unit_idx0(m, m->next)] != DS_MAP_UNSET) m->next++;
  }
  return DS_OK;
}

static int ms_finished(const msched *m) {
  return m->next >= m->nunits && m->inflight == 0 && m->nredo == 0 &&
         (ms_dense(m) || m->level >= m->L);
}

/* The tile's grid indices from an assignment. */
static int64_t *ms_tile_idx(int64_t first, int64_t count, MPI_Comm comm) {
  int64_t *idx = ds_calloc((size_t)(count ? count : 1), sizeof *idx);
  if (first >= 0) {
    for (int64_t i = 0; idx && i < count; i++) idx[i] = first + i;
    return idx;
  }
  if (idx) MPI_Recv(idx, (int)count, MPI_INT64_T, 0, TAG_MAP_IDX, comm, MPI_STATUS_IGNORE);
  else { /* take the message anyway, then report the tile failed */
    int64_t *tmp = malloc((size_t)count * sizeof *tmp);
    MPI_Recv(tmp, tmp ? (int)count : 0, MPI_INT64_T, 0, TAG_MAP_IDX, comm, MPI_STATUS_IGNORE);
    free(tmp);
  }
  return idx;
}

typedef struct {
  const ds_sweep *sw;
  ds_team team;
} ms_worker;

/* A worker's tile (run_work): train it, send the records back. */
static int ms_work_tile(void *ctx, MPI_Comm comm, const int64_t hdr[4]) {
  ms_worker *w = ctx;
  if (hdr[1] <= 0) return RUN_STOP;
  int64_t *idx = ms_tile_idx(hdr[0], hdr[1], comm);
  ds_pixel_fail *fails = NULL;
  int64_t nfail = 0;
  size_t rbytes = (size_t)hdr[1] * sizeof(ds_map_rec);
  /* the records, then one ds_pixel_fail per pixel whose own process died */
  char *msg = ds_calloc(rbytes + (size_t)hdr[1] * sizeof *fails, 1);
  ds_map_rec *recs = (ds_map_rec *)msg;
  if (idx && recs) ds_worker_train_tile(w->sw, &w->team, (int)hdr[3], idx, hdr[1], recs, &fails, &nfail);
  else if (recs) for (int64_t i = 0; i < hdr[1]; i++) ds_map_rec_failed(&recs[i]);
  if (nfail) memcpy(msg + rbytes, fails, (size_t)nfail * sizeof *fails);
  MPI_Send(msg, msg ? (int)(rbytes + (size_t)nfail * sizeof *fails) : 0, MPI_BYTE, 0,
           TAG_MAP_RESULT, comm);
  free(fails);
  free(idx);
  free(msg);
  return RUN_GO;
}

/* A worker rank of a map (ds_source_ops work; workers of a map run alone:
 * no team communicator). */
static int ms_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm) {
  (void)o, (void)rank, (void)tcomm;
  ms_worker w = {.sw = sw};
  int rc = ds_team_init(&w.team, MPI_COMM_SELF);
  if (rc != DS_OK) return rc;
  rc = run_work(ms_work_tile, &w, comm, 1); /* workers of a map run alone */
  ds_team_free(&w.team);
  return rc;
}

/* ---- rank 0 ------------------------------------------------------------------ */

/* Seconds left at this session's pixels per second (every pixel of a map
 * costs about the same, unlike a row sweep's points: issue 24): a dense map's
 * pixels not computed; a refined map's points of this level not taken, and
 * the levels to come, each the last growth (points of this level over the
 * one before; 3.5x before it is known, docs/repro/fractal.md: 3.0-3.6x)
 * times the one before, never more than the pixels left. < 0: unknown. */
static double ms_eta(const msched *m, double rate) {
  if (!(rate > 0)) return -1;
  double left = (double)(m->N - m->computed);
  if (!ms_dense(m)) {
    double g = m->prev_npts > 0 ? (double)m->npts / (double)m->prev_npts : 3.5, next = (double)m->npts;
    g = g < 1 ? 1 : g > 4 ? 4 : g;
    double want = (double)(m->npts - m->level_done);
    for (int k = m->level + 1; k <= m->L; k++) want += next *= g;
    if (want < left) left = want;
  }
  return left / rate;
}

static void ms_progress(msched *m, int force) {
  double now = ds_now(), el = now - m->run.t0, rate = m->run.session_done / (el > 0 ? el : 1e-9);
  double eta = ms_eta(m, rate);
  struct timespec ts; /* for `status` */
  clock_gettime(CLOCK_REALTIME, &ts);
  if (m->run.store) ds_store_set_eta(m->run.store, eta >= 0 ? (double)ts.tv_sec + 1e-9 * ts.tv_nsec + eta : 0);
  if (m->run.o->quiet) return;
  if (!force && now - m->run.last_prog < (m->run.tty ? 0.2 : 10.0)) return;
  char etas[32];
  if (eta < 0) snprintf(etas, sizeof etas, "?");
  else if (eta < 100) snprintf(etas, sizeof etas, "%.0fs", eta);
  else if (eta < 6000) snprintf(etas, sizeof etas, "%.0fm%02.0fs", floor(eta / 60), fmod(eta, 60));
  else snprintf(etas, sizeof etas, "%.0fh%02.0fm", floor(eta / 3600), fmod(eta / 60, 60));
  char text[256];
  if (ms_dense(m))
    snprintf(text, sizeof text, "%lld/%lld px | c %lld C %lld D %lld F %lld | %.3g px/s ETA %s",
             (long long)m->computed, (long long)m->N, (long long)m->count[DS_OUT_CONVERGED],
             (long long)m->count[DS_OUT_CATAPULT], (long long)m->count[DS_OUT_DIVERGED],
             (long long)m->count[DS_OUT_FAILED], rate, etas);
  else
    snprintf(text, sizeof text, "level %d/%d tile %lld/%lld | %lld px trained | %.3g px/s ETA %s",
             m->level, m->L, (long long)(m->next < m->nunits ? m->next : m->nunits),
             (long long)m->nunits, (long long)m->computed, rate, etas);
  if (m->run.tty) ds_console_bar(text);
  else ds_log("progress: %s", text);
  m->run.last_prog = now;
}

/* "pixel 17 (optimizer.lr_in=3.16, optimizer.lr_out=1) failed: its process was
 * killed by SIGKILL (signal 9), peak RSS 512 MB" on rank 0 (a user reads it
 * in the job's log; the map records the pixel failed). */
static void ms_log_pxfail(msched *m, const ds_pixel_fail *e) {
  char where[512] = "", how[64];
  size_t w = 0;
  for (int a = 0; a < m->run.sw->naxes && w < sizeof where; a++) {
    int64_t c = (e->idx / m->stride[a]) % m->shape[a];
    w += (size_t)snprintf(where + w, sizeof where - w, "%s%s=%.6g", a ? ", " : "",
                          m->run.sw->axes[a].name, m->run.sw->axes[a].val[c]);
  }
  ds_iso_fate f = {.started = 1, .exited = !e->signo, .code = e->code, .signo = e->signo};
  ds_iso_fate_text(&f, how, sizeof how);
  ds_warn("pixel %lld (%s) failed: its own process %s %s, peak RSS %.0f MB (the rest of its tile "
          "was trained in other processes)", (long long)e->idx, where,
          e->signo ? "was killed by" : "ended with", how, e->maxrss_kb / 1024.0);
  m->px_killed++;
  /* the reason in the store too (root attribute failed_pixels, a line a
   * pixel; at most 16 KB: an HDF5 attribute lives in the object header) */
  char line[768];
  int ln = snprintf(line, sizeof line, "%lld %s: %s %s, peak RSS %.0f MB\n", (long long)e->idx, where,
                    e->signo ? "killed by" : "ended with", how, e->maxrss_kb / 1024.0);
  if (ln <= 0 || m->pxfail_len + (size_t)ln > 16384) return;
  char *t = realloc(m->pxfail_text, m->pxfail_len + (size_t)ln + 1);
  if (!t) return;
  memcpy(t + m->pxfail_len, line, (size_t)ln + 1);
  m->pxfail_text = t, m->pxfail_len += (size_t)ln;
  if (m->run.store && ds_store_set_failed_pixels(m->run.store, t) != DS_OK) ds_clear_error();
}

/* A tile's records from a worker (or rank 0 itself), with the pixels whose
 * own process died. A tile with a pixel not computed (a child drained before
 * it sent its records) is not written: it goes back to the queue (unit u). */
static void ms_take(msched *m, int64_t first, int64_t count, int64_t off, const ds_map_rec *recs,
                    const ds_pixel_fail *fails, int64_t nfail) {
  for (int64_t i = 0; i < count; i++)
    if (recs[i].outcome == DS_MAP_UNSET) {
      m->redo[m->nredo++] = off / m->tile;
      return;
    }
  for (int64_t k = 0; k < nfail; k++) {
    ds_pixel_fail e;
    memcpy(&e, fails + k, sizeof e);
    ms_log_pxfail(m, &e);
  }
  int64_t *idx = ds_calloc((size_t)(count ? count : 1), sizeof *idx);
  if (!idx) {
    run_fatal(&m->run);
    return;
  }
  for (int64_t i = 0; i < count; i++) idx[i] = first >= 0 ? first + i : m->pts[off + i];
  if (!m->run.fatal && ds_store_write_map(m->run.store, count, idx, recs) != DS_OK) run_fatal(&m->run);
  if (!m->run.fatal)
    for (int64_t i = 0; i < count; i++) {
      uint8_t o = recs[i].outcome;
      if (m->out[idx[i]] == DS_MAP_UNSET) m->computed++, m->run.session_done++, m->level_done++;
      m->out[idx[i]] = o;
      if (o < 5) m->count[o]++;
    }
  free(idx);
  ms_progress(m, 0);
}

/* Hands rank dst its next tile, parks it (the level is not finished), or
 * stops it. */
static void ms_assign(msched *m, MPI_Comm comm, int dst, int *active) {
  if (!m->run.fatal && ms_advance(m) != DS_OK) run_fatal(&m->run);
  int64_t u = m->run.draining ? -1 : ms_next_unit(m);
  if (u < 0 && !m->run.draining && !ms_finished(m)) {
    m->run.parked[m->run.nparked++] = dst;
    return;
  }
  int64_t hdr[4] = {0, 0, m->level, m->isolate}, off = 0;
  if (u >= 0) {
    ms_unit(m, u, &hdr[0], &hdr[1], &off);
    m->wunit[dst][0] = hdr[0], m->wunit[dst][1] = hdr[1], m->wunit[dst][2] = off;
    m->inflight++;
  }
  MPI_Send(hdr, 4, MPI_INT64_T, dst, TAG_ASSIGN, comm);
  if (u >= 0 && hdr[0] < 0) MPI_Send(m->pts + off, (int)hdr[1], MPI_INT64_T, dst, TAG_MAP_IDX, comm);
  if (u < 0) (*active)--;
}

/* A tile's records (TAG_MAP_RESULT), then the worker waits for its next tile. */
static int map_on_result(ds_run *r, MPI_Comm comm, int src) {
  msched *m = (msched *)r;
  int len;
  char *buf = sc_recv_bytes(comm, src, TAG_MAP_RESULT, &len);
  int64_t *w = m->wunit[src];
  m->inflight--;
  int64_t rb = w[1] * (int64_t)sizeof(ds_map_rec), extra = len - rb;
  if (!buf || extra < 0 || extra % (int64_t)sizeof(ds_pixel_fail) ||
      extra / (int64_t)sizeof(ds_pixel_fail) > w[1]) {
    if (buf) ds_fail(DS_EINTERNAL, "rank %d sent %d bytes for a tile of %lld points", src, len,
                     (long long)w[1]);
    run_fatal(r);
  } else {
    ms_take(m, w[0], w[1], w[2], (const ds_map_rec *)buf, (const ds_pixel_fail *)(buf + rb),
            extra / (int64_t)sizeof(ds_pixel_fail));
  }
  free(buf);
  return RUN_REPLY;
}

/* -n 1 (run_alone): rank 0 trains the next tile itself; RUN_STOP when the
 * map is finished, drained or failed. */
static int map_local(ds_run *r, ds_team *team) {
  msched *m = (msched *)r;
  if (r->draining || r->fatal || (ms_advance(m), ms_finished(m))) return RUN_STOP;
  int64_t u = ms_next_unit(m), first, count, off;
  if (u < 0) return RUN_GO;
  ms_unit(m, u, &first, &count, &off);
  int64_t *idx = ds_calloc((size_t)count, sizeof *idx);
  ds_map_rec *recs = ds_calloc((size_t)count, sizeof *recs);
  if (!idx || !recs) {
    free(idx);
    free(recs);
    run_fatal(r);
    return RUN_STOP;
  }
  for (int64_t i = 0; i < count; i++) idx[i] = first >= 0 ? first + i : m->pts[off + i];
  /* isolated: the child must not touch the open store (it leaves with _exit) */
  ds_pixel_fail *fails = NULL;
  int64_t nfail = 0;
  ds_worker_train_tile(r->sw, team, m->isolate, idx, count, recs, &fails, &nfail);
  ms_take(m, first, count, off, recs, fails, nfail);
  free(fails);
  free(idx);
  free(recs);
  return RUN_GO;
}

static void map_progress(ds_run *r, int force) { ms_progress((msched *)r, force); }
static int64_t map_running(const ds_run *r) { return ((const msched *)r)->inflight; }

static void map_assign(ds_run *r, MPI_Comm comm, int dst, int *active) {
  ms_assign((msched *)r, comm, dst, active);
}

static const ds_handler map_handlers[] = {
    {TAG_READY, run_on_ready}, {TAG_MAP_RESULT, map_on_result}, {0, NULL}};

/* ---- the store ---------------------------------------------------------------- */

static int ms_create(msched *m, const char *hosts, int nranks) {
  const ds_sweep *sw = m->run.sw;
  int na = sw->naxes;
  const char *names[DS_MAX_AXES + 1], *paths[DS_MAX_AXES + 1];
  const double *vals[DS_MAX_AXES + 1];
  for (int a = 0; a < na; a++) names[a] = sw->axes[a].name, paths[a] = sw->axes[a].path, vals[a] = sw->axes[a].val;
  char start[32], ihash[17] = "";
  ds_iso_time(start, sizeof start);
  char *inputs = NULL;
  uint64_t ih = 0;
  DS_TRY(ds_sweep_inputs_hash(sw, &inputs, &ih));
  snprintf(ihash, sizeof ihash, "%016llx", (unsigned long long)ih);
  ds_store_meta meta = {
      .sweep_name = sw->name, .sweep_text = sw->text, .sweep_path = sw->path,
      .sweep_hash = sw->hash, .dynsweep_version = DYNSWEEP_VERSION,
      .library_versions = m->run.o->library_versions ? m->run.o->library_versions : "", .hosts = hosts,
      .start_time = start, .blas_kernel = ds_blas_kernel(), .nranks = nranks, .naxes = na,
      .axis_names = names, .axis_paths = paths, .npoints = m->N, .point_axis_vals = NULL,
      .inputs = inputs, .inputs_hash = inputs ? ihash : NULL};
  ds_map_meta mm = {.naxes = na, .shape = m->shape, .axis_vals = vals,
                    .steps = sw->base.train.steps, .tile_points = m->tile,
                    .refine_levels = sw->refine_levels,
                    .refine_axes = {sw->refine_axes[0], sw->refine_axes[1]},
                    .early_stop = sw->map_early_stop};
  int rc = ds_store_create_map(m->run.o->store_path, &meta, &mm, &m->run.store);
  free(inputs);
  return rc;
}

static double ms_attr(ds_store *st, const char *name) {
  char b[64] = "";
  if (ds_store_attr(st, name, b, sizeof b) != DS_OK) {
    ds_clear_error();
    return 0;
  }
  return atof(b);
}

static int ms_resume(msched *m) {
  DS_TRY(ds_store_resume(m->run.o->store_path, &m->run.store));
  if (!ds_store_is_map(m->run.store))
    return ds_fail(DS_EINPUT, "%s: a store of per-point rows, but %s is a map sweep (map:); write "
                   "the map to a new store", m->run.o->store_path, m->run.sw->path);
  char h[32] = "", want[32];
  snprintf(want, sizeof want, "%016llx", (unsigned long long)m->run.sw->hash);
  if (ds_store_attr(m->run.store, "sweep_hash", h, sizeof h) != DS_OK || strcmp(h, want))
    return ds_fail(DS_EINPUT, "%s: made by another sweep (hash %s, this sweep %s); a map store "
                   "resumes only the sweep that made it: write to a new store", m->run.o->store_path,
                   h, want);
  uint8_t *out = NULL;
  int64_t n = 0;
  DS_TRY(ds_store_read_map_outcomes(m->run.store, &out, &n));
  if (n != m->N) {
    free(out);
    return ds_fail(DS_EIO, "%s: the map holds %lld pixels, the sweep has %lld", m->run.o->store_path,
                   (long long)n, (long long)m->N);
  }
  free(m->out);
  m->out = out;
  for (int64_t i = 0; i < n; i++)
    if (out[i] != DS_MAP_UNSET && !(out[i] & DS_MAP_INFERRED)) {
      m->computed++;
      if (out[i] < 5) m->count[out[i]]++;
    } else if (out[i] != DS_MAP_UNSET) {
      out[i] = DS_MAP_UNSET; /* an inferred fill is recomputed from its corners */
    }
  m->run.prev_wall = ms_attr(m->run.store, "wall_s");
  m->run.prev_cpu = ms_attr(m->run.store, "rank0_cpu_s");
  char measure[32] = "";
  if (ds_store_attr(m->run.store, "map_measure", measure, sizeof measure) != DS_OK) {
    ds_clear_error();
    if (m->computed > 0 && !m->run.sw->map_early_stop && !m->run.o->quiet)
      ds_warn("%s: made before the map measure followed the study (issue 24): its %lld trained "
              "pixels stopped at 10^6 L_0, the rest will be trained to the end. For one rule "
              "throughout write a new store (map: {early_stop: true} gives the old rule)",
              m->run.o->store_path, (long long)m->computed);
  }
  char *old = ds_calloc(16385, 1); /* an earlier run's failed_pixels: kept, this run's appended */
  if (old && ds_store_attr(m->run.store, "failed_pixels", old, 16385) == DS_OK && old[0]) {
    m->pxfail_text = old;
    m->pxfail_len = strlen(old);
  } else {
    ds_clear_error();
    free(old);
  }
  return DS_OK;
}

/* The store holds the same map at fewer refinement levels (the sweep only
 * raised grid.refine.levels): every axis the same but the refined ones, whose
 * old values sit bit for bit at every 2^(new - old)-th new value. Returns the
 * stride (> 1), or 0. */
static int64_t ms_extends(const ds_sweep *old, const ds_sweep *sw) {
  if (!old->map || old->refine_levels < 1 || old->refine_levels >= sw->refine_levels ||
      old->naxes != sw->naxes || old->seed != sw->seed || old->map_tile != sw->map_tile ||
      old->refine_axes[0] != sw->refine_axes[0] || old->refine_axes[1] != sw->refine_axes[1] ||
      memcmp(&old->base, &sw->base, sizeof sw->base))
    return 0;
  int64_t k = (int64_t)1 << (sw->refine_levels - old->refine_levels);
  for (int a = 0; a < sw->naxes; a++) {
    const ds_axis *o = &old->axes[a], *n = &sw->axes[a];
    int refined = a == sw->refine_axes[0] || a == sw->refine_axes[1];
    int64_t st = refined ? k : 1;
    if (strcmp(o->path, n->path) || (int64_t)(o->nvals - 1) * st + 1 != n->nvals) return 0;
    for (int i = 0; i < o->nvals; i++)
      if (memcmp(&o->val[i], &n->val[(int64_t)i * st], sizeof(double))) return 0;
  }
  return k;
}

/* Raising grid.refine.levels: the old store is kept as STORE.levelsN, a new
 * one is made and the old trained pixels go in at their new places (tile by
 * tile, journaled like trained ones). A kill part way loses nothing: the
 * pixels not copied yet are trained again, to the same bits. */
static int ms_extend(msched *m, const ds_sweep *old, int64_t k, const char *hosts, int nranks) {
  const char *path = m->run.o->store_path;
  ds_store *w = NULL, *r = NULL;
  DS_TRY(ds_store_resume(path, &w)); /* a killed run's journal is applied first */
  DS_TRY(ds_store_close(w));
  DS_TRY(ds_store_open(path, &r));
  ds_map_rec *recs = NULL;
  int64_t n = 0;
  int rc = ds_store_read_map(r, &recs, &n);
  ds_store_close(r);
  if (rc != DS_OK) return rc;
  char keep[4200];
  snprintf(keep, sizeof keep, "%s.levels%d", path, old->refine_levels);
  if (rename(path, keep) != 0) {
    free(recs);
    return ds_fail(DS_EIO, "%s: cannot keep the old map as %s: %s", path, keep, strerror(errno));
  }
  if (!m->run.o->quiet)
    ds_log("%s: the map at %d refinement levels is kept as %s; its trained pixels go into the "
           "map at %d levels", path, old->refine_levels, keep, m->run.sw->refine_levels);
  rc = ms_create(m, hosts, nranks);
  int64_t ostride[DS_MAX_AXES], acc = 1;
  for (int a = old->naxes - 1; a >= 0; a--) ostride[a] = acc, acc *= old->axes[a].nvals;
  int64_t *idx = ds_calloc((size_t)m->tile, sizeof *idx);
  ds_map_rec *buf = ds_calloc((size_t)m->tile, sizeof *buf);
  if (rc == DS_OK && (!idx || !buf)) rc = DS_ENOMEM;
  int64_t nb = 0;
  for (int64_t i = 0; rc == DS_OK && i <= n; i++) {
    if (i < n && (recs[i].outcome == DS_MAP_UNSET || (recs[i].outcome & DS_MAP_INFERRED))) continue;
    if (i < n) {
      int64_t j = 0, r0 = i;
      for (int a = 0; a < old->naxes; a++) {
        int64_t c = r0 / ostride[a];
        r0 %= ostride[a];
        int refined = a == m->run.sw->refine_axes[0] || a == m->run.sw->refine_axes[1];
        j += c * (refined ? k : 1) * m->stride[a];
      }
      idx[nb] = j, buf[nb++] = recs[i];
    }
    if (nb == m->tile || (i == n && nb > 0)) { /* a full tile, or the last one */
      rc = ds_store_write_map(m->run.store, nb, idx, buf);
      for (int64_t q = 0; rc == DS_OK && q < nb; q++) m->out[idx[q]] = buf[q].outcome, m->computed++;
      nb = 0;
    }
  }
  for (int64_t i = 0; i < m->N; i++)
    if (m->out[i] < 5) m->count[m->out[i]]++;
  free(idx);
  free(buf);
  free(recs);
  return rc;
}

/* An existing store: resume it, or extend it when the sweep raised the levels. */
static int ms_open(msched *m, const char *hosts, int nranks) {
  ds_store *r = NULL;
  char *text = NULL, h[32] = "", want[32];
  DS_TRY(ds_store_open(m->run.o->store_path, &r));
  snprintf(want, sizeof want, "%016llx", (unsigned long long)m->run.sw->hash);
  int rc = DS_OK, is_map = ds_store_is_map(r);
  if (ds_store_attr(r, "sweep_hash", h, sizeof h) != DS_OK) ds_clear_error();
  char state[32] = "";
  if (ds_store_attr(r, "run_state", state, sizeof state) != DS_OK) ds_clear_error();
  m->last_died = !strcmp(state, "running"); /* a live writer would hold the lock: resume refuses */
  if (is_map && strcmp(h, want)) rc = ds_store_sweep_text(r, &text);
  ds_store_close(r);
  if (rc != DS_OK) return rc;
  if (!text) return ms_resume(m);
  ds_sweep old;
  int64_t k = 0;
  if (ds_sweep_parse_flags(m->run.o->store_path, text, DS_SWEEP_NO_FILES, &old) == DS_OK) {
    k = ms_extends(&old, m->run.sw);
    if (k > 1) rc = ms_extend(m, &old, k, hosts, nranks);
    ds_sweep_free(&old);
  } else {
    ds_clear_error();
  }
  free(text);
  return k > 1 ? rc : ms_resume(m); /* ms_resume says why another sweep cannot continue it */
}

static int ms_prepare(msched *m, const char *hosts, int nranks) {
  const ds_sweep *sw = m->run.sw;
  m->N = 1;
  for (int a = sw->naxes - 1; a >= 0; a--) {
    m->shape[a] = sw->axes[a].nvals;
    m->stride[a] = m->N;
    m->N *= m->shape[a];
  }
  m->tile = ds_map_tile_points(sw);
  m->L = sw->refine_levels;
  m->out = malloc((size_t)m->N);
  if (!m->out)
    return ds_fail(DS_ENOMEM, "out of memory: rank 0 keeps one byte per pixel, %lld bytes",
                   (long long)m->N);
  memset(m->out, DS_MAP_UNSET, (size_t)m->N);
  struct stat st;
  DS_TRY(lstat(m->run.o->store_path, &st) == 0 ? ms_open(m, hosts, nranks) : ms_create(m, hosts, nranks));
  m->run.done0 = m->computed;
  if (ms_dense(m)) ms_level_units(m);
  else DS_TRY(ms_make_level(m, 0));
  ds_store_set_publish_every(m->run.store, m->run.o->publish_every);
  ds_store_set_run(m->run.store, "running", (double)time(NULL), m->run.done0);
  /* isolation ("A pixel that kills its process", docs/maps.md) */
  m->isolate = m->run.o->isolate == DS_ISOLATE_ALWAYS || (m->run.o->isolate == DS_ISOLATE_AUTO && m->last_died);
  if (!m->run.o->quiet)
    ds_log("map: %lld pixels in tiles of %lld%s; %lld trained already", (long long)m->N,
           (long long)m->tile, ms_dense(m) ? "" : ", refined", (long long)m->computed);
  if (!m->run.o->quiet && m->isolate && !ms_finished(m))
    ds_log("map: %s: every tile runs in a child process of its worker; a tile whose child dies "
           "is split down to the pixels that kill it", m->run.o->isolate == DS_ISOLATE_ALWAYS
           ? "--isolate always" : "the last run did not end (killed?)");
  return ds_store_publish(m->run.store, 1);
}

static int ms_wrap_up(msched *m, double cpu, double wall) {
  int complete = ms_finished(m) && !m->run.draining && !m->run.fatal;
  ds_store_stats st;
  int rc = run_close(&m->run, complete, cpu, wall, &st);
  if (rc != DS_OK) return rc;
  if (!m->run.o->quiet) {
    ds_log("%s: %lld pixels trained in %.2f s (%.3g px/s; rank 0 CPU %.3f s): converged %lld, "
           "catapult %lld, diverged %lld, failed %lld of %lld pixels", complete ? "finished" : "drained",
           (long long)m->run.session_done, wall, m->run.session_done / (wall > 0 ? wall : 1e-9), cpu,
           (long long)m->count[DS_OUT_CONVERGED], (long long)m->count[DS_OUT_CATAPULT],
           (long long)m->count[DS_OUT_DIVERGED], (long long)m->count[DS_OUT_FAILED], (long long)m->N);
    if (!complete) ds_log("drained: run the same command again to resume");
    if (m->px_killed)
      ds_warn("%lld pixel(s) failed because their own process died (listed above, 'pixel N "
              "(...) failed'); the other pixels of their tiles are trained", (long long)m->px_killed);
  }
  return DS_OK;
}

/* ---- the map source's ops (ds_sched_run, sched.c) --------------------------- */

/* rank 0: the plan, the store, and room for every rank's tile */
static int map_prepare(ds_run *r, const char *hosts, int nranks) {
  msched *m = (msched *)r;
  int rc = ms_prepare(m, hosts, nranks);
  m->wunit = ds_calloc((size_t)nranks, sizeof *m->wunit);
  m->run.parked = ds_calloc((size_t)nranks, sizeof *m->run.parked);
  m->redo = ds_calloc((size_t)nranks + 1, sizeof *m->redo);
  if (rc == DS_OK && (!m->wunit || !m->run.parked || !m->redo)) rc = DS_ENOMEM;
  return rc;
}

static int map_finished(const ds_run *r) { return ms_finished((const msched *)r); }

static int map_wrap_up(ds_run *r, int size, double cpu, double wall) {
  (void)size;
  return ms_wrap_up((msched *)r, cpu, wall);
}

static void map_free(ds_run *r) {
  msched *m = (msched *)r;
  free(m->out);
  free(m->pts);
  free(m->pxfail_text);
  free(m->wunit);
  free(m->run.parked);
  free(m->redo);
}

/* The map source (state.h, ds_source_ops): no teams, run_serve as it is;
 * the scheduler's figures are the row sweeps' alone (no report). */
const ds_source_ops sc_map_ops = {
    .noun = "tile",
    .drain_tail = "",
    .abort_tail = "they run again in the next run",
    .progress = map_progress,
    .running = map_running,
    .handlers = map_handlers,
    .assign = map_assign,
    .local = map_local,
    .size = sizeof(msched),
    .what = "map",
    .prepare = map_prepare,
    .finished = map_finished,
    .wrap_up = map_wrap_up,
    .work = ms_work,
    .free = map_free,
};
