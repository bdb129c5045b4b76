/* dispatch.c -- rank 0: hands points out to the workers, takes their results
 * and checkpoints into the store, shows progress, drains. */
#include "dynsweep/knobs.h"
#include "sched_priv.h"

void sc_keep_blob(sched *s, int64_t id, const char *b, size_t len) {
  if (id < 0 || id >= s->n) return;
  char *c = malloc(len ? len : 1);
  if (!c) return; /* the journal has it; only this session's reuse is lost */
  memcpy(c, b, len);
  free(s->blob[id]);
  s->blob[id] = c;
  s->bloblen[id] = len;
}

void sc_progress(sched *s, const ds_summary_row *r, int force) {
  int64_t left = s->n - s->nfinal, pending = left - s->nrunning;
  double eta = sc_eta(s);
  struct timespec ts; /* for `status`, quiet or not */
  clock_gettime(CLOCK_REALTIME, &ts);
  if (s->store) ds_store_set_eta(s->store, left > 0 ? (double)ts.tv_sec + 1e-9 * ts.tv_nsec + eta : 0);
  if (s->o->quiet) return;
  double now = ds_now(), el = now - s->t0;
  double rate = s->session_done / (el > 0 ? el : 1e-9);
  char etas[32];
  if (!(eta >= 0) || !isfinite(eta)) snprintf(etas, sizeof etas, "?");
  else if (eta < 100) snprintf(etas, sizeof etas, "%.0fs", eta);
  else if (eta < 6000) snprintf(etas, sizeof etas, "%.0fm%02.0fs", floor(eta / 60), fmod(eta, 60));
  else snprintf(etas, sizeof etas, "%.0fh%02.0fm", floor(eta / 3600), fmod(eta / 60, 60));
  if (r && s->o->verbose) {
    ds_log("[%lld/%lld] point %lld %-8s steps %-7lld loss %-11.4g rank %d %.2fs%s%s",
           (long long)s->nfinal, (long long)s->n, (long long)r->id, ds_status_name(r->status),
           (long long)r->steps, r->final_loss, r->rank, r->wall_s, r->reason[0] ? " | " : "",
           r->reason);
  }
  if (s->tty) { /* one line that fits the terminal, redrawn in place */
    if (!force && now - s->last_prog < 0.2) return;
    char text[256], line[512], bar[64];
    snprintf(text, sizeof text, "%lld/%lld done %lld div %lld fail %lld run %lld | %.3g pts/s ETA %s",
             (long long)s->nfinal, (long long)s->n, (long long)s->ndone, (long long)s->ndiv,
             (long long)s->nfail, (long long)s->nrunning, rate, etas);
    int w = ds_console_width() - 1 - (int)strlen(text) - 3;
    if (w > 40) w = 40;
    if (w >= 8) {
      int fill = s->n ? (int)(w * s->nfinal / s->n) : w;
      for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
      bar[w] = 0;
      snprintf(line, sizeof line, "[%s] %s", bar, text);
    } else {
      snprintf(line, sizeof line, "%s", text);
    }
    ds_console_bar(line);
  } else if (!s->o->verbose || force) {
    if (!force && now - s->last_prog < 10.0) return;
    ds_log("progress: %lld/%lld finished (done %lld, diverged %lld, failed %lld), running %lld, "
           "pending %lld | %.2f pts/s ETA %s", (long long)s->nfinal, (long long)s->n,
           (long long)s->ndone, (long long)s->ndiv, (long long)s->nfail, (long long)s->nrunning,
           (long long)pending, rate, etas);
  }
  s->last_prog = now;
}

/* The running sums of the ETA: a row starts, or stops running (finished:
 * its measured seconds feed the correction; handed back: queued again). */
static void eta_start(sched *s, int64_t id) {
  s->t_run[id] = ds_now();
  s->est_pending -= s->est[id];
  s->est_running += s->est[id];
  s->t_running += s->t_run[id];
}

static void eta_stop(sched *s, int64_t id, int finished, double wall_s, int64_t steps) {
  if (s->t_run[id] <= 0) return;
  s->est_running -= s->est[id];
  s->t_running -= s->t_run[id];
  /* a point that stopped early (diverged, train.tol) ran its share of the estimate */
  double share = s->nsteps[id] > 0 ? (double)steps / (double)s->nsteps[id] : 1;
  share = share < 0 ? 0 : share > 1 ? 1 : share;
  if (finished && wall_s > 0 && s->est[id] > 0) s->done_est += share * s->est[id], s->done_wall += wall_s;
  if (!finished) s->est_pending += s->est[id];
  s->t_run[id] = 0;
}

/* Seconds left: the estimated seconds of the queued points, and of the
 * running ones less the time they have run, each scaled by the measured /
 * estimated ratio of this session's finished points (starting from 1, worth
 * two average points, so one odd early point does not swing it), spread
 * over the points that run at once. */
double sc_eta(const sched *s) {
  double corr = (s->done_wall + s->est_prior) / (s->done_est + s->est_prior);
  if (!isfinite(corr) || corr <= 0) corr = 1;
  int64_t nrun = s->nrunning > 0 ? s->nrunning : 0;
  double ran = nrun * ds_now() - s->t_running; /* sum of (now - t_run) over running rows */
  double left_run = corr * s->est_running - ran;
  double floor_run = nrun ? 0.05 * corr * s->est_running : 0; /* a late point is not done */
  if (left_run < floor_run) left_run = floor_run;
  double left = corr * (s->est_pending > 0 ? s->est_pending : 0) + left_run;
  return left / (s->slots > 0 ? s->slots : 1);
}

static void finish_point(sched *s, int64_t id, const ds_point_result *res, const ds_traj *tr) {
  if (id < 0 || id >= s->n) return;
  eta_stop(s, id, 1, res->wall_s, res->steps);
  ds_summary_row *r = &s->rows[id];
  r->status = res->status;
  r->steps = res->steps;
  r->final_loss = res->final_loss;
  r->min_loss = res->min_loss;
  r->final_test_loss = res->final_test_loss;
  r->diverged_step = res->diverged_step;
  r->wall_s = res->wall_s;
  r->rank = res->rank;
  int failed = res->status == DS_ST_FAILED; /* the worker never classified it */
  r->outcome = failed ? DS_OUT_FAILED : res->outcome;
  r->event_step = failed ? -1 : res->event_step;
  r->peak_ratio = failed ? NAN : res->peak_ratio;
  r->plateaus = failed ? 0 : res->plateaus;
  r->plateau_end = failed ? -1 : res->plateau_end;
  memcpy(r->reason, res->reason, sizeof r->reason);
  r->reason[sizeof r->reason - 1] = 0;
  if (!s->fatal && ds_store_write_point(s->store, r, tr) != DS_OK) sc_set_fatal(s);
  if (s->fatal) return;
  free(s->blob[id]);
  s->blob[id] = NULL;
  s->bloblen[id] = 0;
  s->nfinal++;
  s->session_done++;
  s->ndone += r->status == DS_ST_DONE;
  s->ndiv += r->status == DS_ST_DIVERGED;
  s->nfail += r->status == DS_ST_FAILED;
  sc_progress(s, r, 0);
}

/* A result: final (write it) or pending (the worker stopped it). */
static void take_result(sched *s, const ds_point_result *res, const ds_traj *tr) {
  int64_t id = res->id;
  s->nrunning--;
  if (id >= 0 && id < s->n && s->lone[id]) s->lone_running = 0;
  if (res->status == DS_ST_PENDING || res->status == DS_ST_RUNNING) {
    if (id >= 0 && id < s->n) eta_stop(s, id, 0, 0, 0);
    sc_requeue(s, id);
    if (id >= 0 && id < s->n) {
      s->rows[id].status = DS_ST_PENDING;
      if (s->rows[id].attempts > 0) s->rows[id].attempts--; /* handed back: not an attempt */
      if (!s->fatal && ds_store_write_row(s->store, &s->rows[id]) != DS_OK) sc_set_fatal(s);
    }
    sc_start_drain(s, "a worker stopped its point (drain signal)");
    return;
  }
  finish_point(s, id, res, tr);
}

/* Counts the attempt and journals it before the point is handed out, so a
 * kill at any moment after this is counted at the next resume. */
static void mark_running(sched *s, int64_t id, int rank) {
  s->nrunning++;
  s->lone_running |= s->lone[id];
  s->rows[id].status = DS_ST_RUNNING;
  s->rows[id].rank = rank;
  s->rows[id].attempts++;
  eta_start(s, id);
  if (!s->fatal && ds_store_write_row(s->store, &s->rows[id]) != DS_OK) sc_set_fatal(s);
}

/* Periodic sc_work of rank 0: drain signal, publish, sc_progress. */
void sc_tick(sched *s) {
  if (g_stop && !s->draining) sc_start_drain(s, "drain signal");
  if (!s->fatal && ds_store_commit(s->store) != DS_OK) sc_set_fatal(s);
  if (!s->fatal && ds_store_publish(s->store, 0) != DS_OK) sc_set_fatal(s);
  sc_progress(s, NULL, 0);
}

/* Waits for a message without burning a core: probe, then sleep with an
 * exponential back-off from 50 us to at most 20 ms. Before sleeping, the
 * journal gets its group commit (fsync at most every 0.5 s, ds_store_commit).
 * Returns 0 after ~0.25 s without a message, so the
 * caller can do its periodic work. *fatal != 0: no commit; a failed commit
 * sets it (the caller records the error). Rank 0 of a map sweep waits here
 * too (mapsched.c). */
int sc_wait_message(ds_store *store, int *fatal, MPI_Comm comm, MPI_Status *st) {
  /* the longest nap follows the message rate: a quarter of the typical gap
   * between messages (points of a few ms: naps of ~0.1-1 ms, so a worker
   * does not wait for rank 0 to wake up), 20 ms for long points */
  static double last_msg, gap = 1.0;
  double nap = 50e-6, t0 = ds_now(), cap = gap / 4;
  cap = cap < 50e-6 ? 50e-6 : cap > 20e-3 ? 20e-3 : cap;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, st);
    if (flag) {
      double now = ds_now();
      if (last_msg > 0) gap = 0.9 * gap + 0.1 * (now - last_msg);
      last_msg = now;
      return 1;
    }
    if (!*fatal && ds_store_commit(store) != DS_OK) *fatal = 1; /* group commit */
    if (ds_now() - t0 > 0.25) return 0;
    ds_sleep(nap);
    nap = nap * 2 < cap ? nap * 2 : cap;
  }
}

char *sc_recv_bytes(MPI_Comm comm, int src, int tag, int *len) {
  MPI_Status st;
  MPI_Probe(src, tag, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, len);
  char *buf = malloc(*len ? (size_t)*len : 1);
  if (!buf) {
    ds_fail(DS_ENOMEM, "out of memory receiving %d bytes", *len);
    char dummy[1];
    MPI_Recv(dummy, 0, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE); /* truncation error */
    return NULL;
  }
  MPI_Recv(buf, *len, MPI_BYTE, src, tag, comm, MPI_STATUS_IGNORE);
  return buf;
}

static int recv_result(MPI_Comm comm, int src, ds_point_result *res, ds_traj *tr) {
  MPI_Recv(res, sizeof *res, MPI_BYTE, src, TAG_RESULT, comm, MPI_STATUS_IGNORE);
  int len;
  char *buf = sc_recv_bytes(comm, src, TAG_TRAJ, &len);
  ds_traj_init(tr);
  if (!buf) return DS_ENOMEM;
  int rc = ds_traj_unpack(buf, len, tr);
  free(buf);
  return rc;
}

/* Hands worker dst its next point, or stop (-1); a worker that must wait
 * for a lone point is parked (served again by unpark). */
static void assign(sched *s, MPI_Comm comm, int dst, int *active) {
  int64_t id = s->cls ? sc_next_point_for(s, s->lead_size[dst]) : sc_next_point(s);
  if (id == -2) {
    s->parked[s->nparked++] = dst;
    return;
  }
  int64_t hdr[4] = {id, id >= 0 ? s->sidx[id] : -1, id >= 0 ? (int64_t)s->bloblen[id] : 0,
                    id >= 0 && s->isolate && s->tsize[id] == 1};
  if (id >= 0 && !s->blob[id]) hdr[2] = 0;
  if (id >= 0) {
    s->rows[id].team_size = s->tsize[id];
    mark_running(s, id, dst);
  }
  MPI_Send(hdr, 4, MPI_INT64_T, dst, TAG_ASSIGN, comm);
  if (hdr[2] > 0) MPI_Send(s->blob[id], (int)hdr[2], MPI_BYTE, dst, TAG_BLOB, comm);
  if (id < 0) (*active)--;
}

static void unpark(sched *s, MPI_Comm comm, int *active) {
  int n = s->nparked;
  s->nparked = 0;
  for (int k = 0; k < n; k++) assign(s, comm, s->parked[k], active);
}

/* Drain or store failure with workers still busy past the deadline: publish
 * what we have and end the job. */
static void abort_busy(sched *s, MPI_Comm comm) {
  int code = s->fatal ? 1 : DS_EXIT_DRAINED;
  if (s->tty) ds_console_bar_end();
  ds_warn("%lld point(s) still running %.0f s after the %s; ending the job (they resume from "
          "their last checkpoint)", (long long)s->nrunning, s->o->drain_timeout,
          s->fatal ? "store failure" : "drain signal");
  if (!s->fatal) ds_store_set_run(s->store, "drained", (double)time(NULL), s->final0);
  /* the rows still running keep their attempt: a point that did not stop
   * within the drain timeout may be on a dead or hung rank (srun does not
   * end the job when one task is killed) */
  if (s->fatal) fprintf(stderr, "dynsweep: %s\n", s->fatal_msg);
  ds_store_stats st;
  ds_store_get_stats(s->store, &st);
  ds_drain_watchdog_extend(30 + 10 * st.last_publish_s); /* a slow publish is not a wedge */
  ds_store_close(s->store);
  s->store = NULL;
  fflush(stderr);
  MPI_Abort(comm, code);
}

/* ---- scheduler figures (docs/performance.md, "Rank 0 at scale") ------------
 * Rank 0's service latency of each READY/RESULT: from the moment its probe
 * saw the message to the ASSIGN sent (the tick first -- group commit,
 * publish -- then receiving the result, journaling it, the queue, the
 * reply), in a log histogram (20 bins a decade from 1 us: a
 * percentile is known to ~12%, in O(1) memory). Printed with --verbose, and
 * as one JSON line appended to the file $DYNSWEEP_SCHED_STATS if set. */
enum { LAT_BINS = 160 };
static struct {
  int64_t n, hist[LAT_BINS], traj_bytes, results;
  int64_t long_ticks;  /* ticks (group commit, publish) that held the loop > 1 ms */
  double sum, max, store_s, tick_s, tick_max, t_first, t_last;
} g_lat;

static void lat_add(double dt) {
  int b = dt <= 1e-6 ? 0 : (int)(20 * log10(dt / 1e-6)) + 1;
  g_lat.hist[b < 0 ? 0 : b >= LAT_BINS ? LAT_BINS - 1 : b]++;
  g_lat.n++;
  g_lat.sum += dt;
  if (dt > g_lat.max) g_lat.max = dt;
}

static double lat_pct(double q) { /* upper edge of the bin holding quantile q */
  int64_t want = (int64_t)ceil(q * g_lat.n), c = 0;
  for (int b = 0; b < LAT_BINS; b++)
    if ((c += g_lat.hist[b]) >= want && want > 0) return b == 0 ? 1e-6 : 1e-6 * pow(10, b / 20.0);
  return 0;
}

static long vm_kb(const char *key) { /* /proc/self/status, kB; -1 if unknown */
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t k = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, k) && line[k] == ':') v = strtol(line + k + 1, NULL, 10);
  if (f) fclose(f);
  return v;
}

static void lat_report(sched *s, int nworkers) {
  double span = g_lat.t_last - g_lat.t_first;
  double rate = span > 0 ? (g_lat.n - 1) / span : 0;
  long hwm = vm_kb("VmHWM"), rss = vm_kb("VmRSS");
  if (s->o->verbose && !s->o->quiet)
    ds_log("scheduler: %lld assignments, %.0f/s; service READY->ASSIGN median %.1f us, p99 %.1f "
           "us, max %.1f us; journaling results %.3f s, ticks %.3f s (%lld over 1 ms, longest "
           "%.1f ms); %.2f MB of trajectories (%.2f MB/s); rank 0 VmHWM %ld kB",
           (long long)g_lat.n, rate, 1e6 * lat_pct(0.5), 1e6 * lat_pct(0.99), 1e6 * g_lat.max,
           g_lat.store_s, g_lat.tick_s, (long long)g_lat.long_ticks, 1e3 * g_lat.tick_max,
           g_lat.traj_bytes * 1e-6, span > 0 ? g_lat.traj_bytes * 1e-6 / span : 0, hwm);
  const char *path = ds_knob_str(DS_KNOB_SCHED_STATS);
  FILE *f = path && *path ? fopen(path, "a") : NULL;
  if (!f) return;
  fprintf(f, "{\"workers\": %d, \"points\": %lld, \"assignments\": %lld, \"results\": %lld, "
          "\"span_s\": %.6f, \"assign_per_s\": %.1f, \"service_median_us\": %.2f, "
          "\"service_p99_us\": %.2f, \"service_max_us\": %.2f, \"service_mean_us\": %.2f, "
          "\"store_s\": %.6f, \"tick_s\": %.6f, \"long_ticks\": %lld, \"tick_max_s\": %.6f, "
          "\"traj_bytes\": %lld, \"traj_MB_per_s\": %.3f, "
          "\"vm_hwm_kb\": %ld, \"vm_rss_kb\": %ld, \"service_hist_us\": [",
          nworkers, (long long)s->n,
          (long long)g_lat.n, (long long)g_lat.results, span, rate, 1e6 * lat_pct(0.5),
          1e6 * lat_pct(0.99), 1e6 * g_lat.max, g_lat.n ? 1e6 * g_lat.sum / g_lat.n : 0,
          g_lat.store_s, g_lat.tick_s, (long long)g_lat.long_ticks, g_lat.tick_max,
          (long long)g_lat.traj_bytes,
          span > 0 ? g_lat.traj_bytes * 1e-6 / span : 0, hwm, rss);
  for (int b = 0, first = 1; b < LAT_BINS; b++) /* [upper edge of the bin in us, count] */
    if (g_lat.hist[b]) {
      fprintf(f, "%s[%.4g, %lld]", first ? "" : ", ", b ? pow(10, b / 20.0) : 1.0,
              (long long)g_lat.hist[b]);
      first = 0;
    }
  fprintf(f, "]}\n");
  fclose(f);
}

int sc_serve(sched *s, MPI_Comm comm, int nworkers, int size) {
  int active = nworkers;
  s->parked = ds_calloc((size_t)size, sizeof *s->parked);
  if (!s->parked) sc_set_fatal(s); /* no sc_work goes out, so nobody is parked */
  while (active > 0) {
    MPI_Status st;
    int failed = s->fatal;
    int got = sc_wait_message(s->store, &failed, comm, &st);
    if (failed && !s->fatal) sc_set_fatal(s);
    double t_msg = ds_now();
    sc_tick(s);
    double dt_tick = ds_now() - t_msg;
    g_lat.tick_s += dt_tick;
    g_lat.long_ticks += dt_tick > 1e-3;
    if (dt_tick > g_lat.tick_max) g_lat.tick_max = dt_tick;
    if (s->nparked) unpark(s, comm, &active);
    if (s->draining && s->nrunning > 0 && ds_now() > s->drain_deadline) abort_busy(s, comm);
    if (!got) continue;
    int src = st.MPI_SOURCE;
    if (st.MPI_TAG == TAG_READY) {
      int dummy;
      MPI_Recv(&dummy, 1, MPI_INT, src, TAG_READY, comm, MPI_STATUS_IGNORE);
    } else if (st.MPI_TAG == TAG_RESULT) {
      ds_point_result res;
      ds_traj tr;
      if (recv_result(comm, src, &res, &tr) != DS_OK) {
        s->nrunning--;
        sc_set_fatal(s);
      } else {
        double t_st = ds_now();
        take_result(s, &res, &tr);
        g_lat.store_s += ds_now() - t_st;
        g_lat.results++;
        for (int k = 0; k < tr.n; k++) /* steps + values */
          g_lat.traj_bytes += (int64_t)tr.s[k].n * (1 + tr.s[k].ncols) * 8;
      }
      ds_traj_free(&tr);
    } else if (st.MPI_TAG == TAG_CKPT) {
      int len;
      char *buf = sc_recv_bytes(comm, src, TAG_CKPT, &len);
      int64_t id = -1;
      if (buf && len >= (int)sizeof id) {
        memcpy(&id, buf, sizeof id);
        if (!s->fatal && ds_store_write_ckpt(s->store, id, buf + sizeof id, len - sizeof id) != DS_OK)
          sc_set_fatal(s);
        else sc_keep_blob(s, id, buf + sizeof id, len - sizeof id);
      }
      free(buf);
      continue; /* no reply: the worker is still training */
    } else {
      return ds_fail(DS_EINTERNAL, "unexpected message tag %d from rank %d", st.MPI_TAG, src);
    }
    assign(s, comm, src, &active);
    double t_done = ds_now();
    lat_add(t_done - t_msg);
    if (!g_lat.t_first) g_lat.t_first = t_done;
    g_lat.t_last = t_done;
    if (s->nparked) unpark(s, comm, &active);
  }
  lat_report(s, nworkers);
  return DS_OK;
}

void sc_serve_alone(sched *s) {
  ds_team team;
  if (ds_team_init(&team, MPI_COMM_SELF) != DS_OK) {
    sc_set_fatal(s);
    return;
  }
  for (int64_t id; sc_tick(s), (id = sc_next_point(s)) >= 0;) {
    ds_point_result res;
    ds_traj tr;
    ds_ckpt ck;
    ckpt_ctx c = {MPI_COMM_SELF, id, s};
    s->rows[id].team_size = 1; /* -n 1: whatever ranks_per_point asked for */
    mark_running(s, id, 0);
    /* the bar says "run 1" while rank 0 trains a point that takes a while
     * (estimated > 1e8 FLOP), not around every short one */
    if (s->tty && (s->cost[id] > 1e8 || ds_now() - s->last_prog > 0.2)) sc_progress(s, NULL, 1);
    sc_init_ckpt(&ck, s->o, &c, 1, s->blob[id], s->bloblen[id]);
    if (s->isolate) sc_run_isolated(s->sw, id, s->sidx[id], &team, 0, &tr, &res, &ck);
    else sc_run_one(s->sw, id, s->sidx[id], &team, 0, &tr, &res, &ck);
    take_result(s, &res, &tr);
    ds_traj_free(&tr);
  }
  if (g_stop && !s->draining && s->nfinal < s->n) sc_start_drain(s, "drain signal");
  ds_team_free(&team);
}
