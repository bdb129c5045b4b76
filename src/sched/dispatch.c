/* dispatch.c -- the row source on rank 0: hands points out to the workers,
 * takes their results and checkpoints into the store, shows progress,
 * drains; the scheduler figures. Its functions fill the ops table in rows.c. */
#include "state.h"

#include "dynsweep/knobs.h"

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
  if (!s->run.fatal && ds_store_write_point(s->run.store, r, tr) != DS_OK) run_fatal(&s->run);
  if (s->run.fatal) return;
  free(s->blob[id]);
  s->blob[id] = NULL;
  s->bloblen[id] = 0;
  s->nfinal++;
  s->run.session_done++;
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
      if (!s->run.fatal && ds_store_write_row(s->run.store, &s->rows[id]) != DS_OK) run_fatal(&s->run);
    }
    run_drain(&s->run, "a worker stopped its point (drain signal)");
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
  if (!s->run.fatal && ds_store_write_row(s->run.store, &s->rows[id]) != DS_OK) run_fatal(&s->run);
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
 * for a lone point is parked (offered work again by serve.c). */
static void assign(sched *s, MPI_Comm comm, int dst, int *active) {
  int64_t id = s->cls ? sc_next_point_for(s, s->lead_size[dst]) : sc_next_point(s);
  if (id == -2) {
    s->run.parked[s->run.nparked++] = dst;
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

/* ---- scheduler figures (docs/performance.md, "Rank 0 at scale") ------------
 * Rank 0's service latency of each READY/RESULT: from the moment its probe
 * saw the message to the ASSIGN sent (the tick first -- group commit,
 * publish -- then receiving the result, journaling it, the queue, the
 * reply), in a log histogram (20 bins a decade from 1 us: a
 * percentile is known to ~12%, in O(1) memory). Printed with --verbose, and
 * as one JSON line appended to the file $DYNSWEEP_SCHED_STATS if set. */

static double lat_pct(const sc_lat *lat, double q) { /* upper edge of the bin holding quantile q */
  int64_t want = (int64_t)ceil(q * lat->n), c = 0;
  for (int b = 0; b < LAT_BINS; b++)
    if ((c += lat->hist[b]) >= want && want > 0) return b == 0 ? 1e-6 : 1e-6 * pow(10, b / 20.0);
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
  const sc_lat *lat = &s->run.lat;
  double span = lat->t_last - lat->t_first;
  double rate = span > 0 ? (lat->n - 1) / span : 0;
  long hwm = vm_kb("VmHWM"), rss = vm_kb("VmRSS");
  if (s->run.o->verbose && !s->run.o->quiet)
    ds_log("scheduler: %lld assignments, %.0f/s; service READY->ASSIGN median %.1f us, p99 %.1f "
           "us, max %.1f us; journaling results %.3f s, ticks %.3f s (%lld over 1 ms, longest "
           "%.1f ms); %.2f MB of trajectories (%.2f MB/s); rank 0 VmHWM %ld kB",
           (long long)lat->n, rate, 1e6 * lat_pct(lat, 0.5), 1e6 * lat_pct(lat, 0.99), 1e6 * lat->max,
           lat->store_s, lat->tick_s, (long long)lat->long_ticks, 1e3 * lat->tick_max,
           lat->traj_bytes * 1e-6, span > 0 ? lat->traj_bytes * 1e-6 / span : 0, hwm);
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
          (long long)lat->n, (long long)lat->results, span, rate, 1e6 * lat_pct(lat, 0.5),
          1e6 * lat_pct(lat, 0.99), 1e6 * lat->max, lat->n ? 1e6 * lat->sum / lat->n : 0,
          lat->store_s, lat->tick_s, (long long)lat->long_ticks, lat->tick_max,
          (long long)lat->traj_bytes,
          span > 0 ? lat->traj_bytes * 1e-6 / span : 0, hwm, rss);
  for (int b = 0, first = 1; b < LAT_BINS; b++) /* [upper edge of the bin in us, count] */
    if (lat->hist[b]) {
      fprintf(f, "%s[%.4g, %lld]", first ? "" : ", ", b ? pow(10, b / 20.0) : 1.0,
              (long long)lat->hist[b]);
      first = 0;
    }
  fprintf(f, "]}\n");
  fclose(f);
}

/* ---- the row source's handlers and loop ops (serve.c, work.c; table: rows.c) - */

static int rows_on_result(ds_run *r, MPI_Comm comm, int src) {
  sched *s = (sched *)r;
  ds_point_result res;
  ds_traj tr;
  if (recv_result(comm, src, &res, &tr) != DS_OK) {
    s->nrunning--;
    run_fatal(r);
  } else {
    double t_st = ds_now();
    take_result(s, &res, &tr);
    r->lat.store_s += ds_now() - t_st;
    r->lat.results++;
    for (int k = 0; k < tr.n; k++) /* steps + values */
      r->lat.traj_bytes += (int64_t)tr.s[k].n * (1 + tr.s[k].ncols) * 8;
  }
  ds_traj_free(&tr);
  return RUN_REPLY;
}

static int rows_on_ckpt(ds_run *r, MPI_Comm comm, int src) {
  sched *s = (sched *)r;
  int len;
  char *buf = sc_recv_bytes(comm, src, TAG_CKPT, &len);
  int64_t id = -1;
  if (buf && len >= (int)sizeof id) {
    memcpy(&id, buf, sizeof id);
    if (!r->fatal && ds_store_write_ckpt(r->store, id, buf + sizeof id, len - sizeof id) != DS_OK)
      run_fatal(r);
    else sc_keep_blob(s, id, buf + sizeof id, len - sizeof id);
  }
  free(buf);
  return RUN_NO_REPLY; /* the worker is still training */
}

const ds_handler sc_rows_handlers[] = {
    {TAG_READY, run_on_ready}, {TAG_RESULT, rows_on_result}, {TAG_CKPT, rows_on_ckpt}, {0, NULL}};

void sc_rows_progress(ds_run *r, int force) { sc_progress((sched *)r, NULL, force); }
int64_t sc_rows_running(const ds_run *r) { return ((const sched *)r)->nrunning; }
void sc_rows_assign(ds_run *r, MPI_Comm comm, int dst, int *active) {
  assign((sched *)r, comm, dst, active);
}
void sc_rows_report(ds_run *r, int nworkers) { lat_report((sched *)r, nworkers); }

/* -n 1 (run_alone): rank 0 trains the next point itself; RUN_STOP when none
 * is left to start. */
int sc_rows_local(ds_run *r, ds_team *team) {
  sched *s = (sched *)r;
  int64_t id = sc_next_point(s);
  if (id < 0) {
    if (g_stop && !r->draining && s->nfinal < s->n) run_drain(r, "drain signal");
    return RUN_STOP;
  }
  ds_point_result res;
  ds_traj tr;
  ds_ckpt ck;
  ckpt_ctx c = {MPI_COMM_SELF, id, s};
  s->rows[id].team_size = 1; /* -n 1: whatever ranks_per_point asked for */
  mark_running(s, id, 0);
  /* the bar says "run 1" while rank 0 trains a point that takes a while
   * (estimated > 1e8 FLOP), not around every short one */
  if (r->tty && (s->cost[id] > 1e8 || ds_now() - r->last_prog > 0.2)) sc_progress(s, NULL, 1);
  sc_init_ckpt(&ck, r->o, &c, 1, s->blob[id], s->bloblen[id]);
  if (s->isolate) sc_run_isolated(r->sw, id, s->sidx[id], team, 0, &tr, &res, &ck);
  else sc_run_one(r->sw, id, s->sidx[id], team, 0, &tr, &res, &ck);
  take_result(s, &res, &tr);
  ds_traj_free(&tr);
  return RUN_GO;
}

int sc_serve(sched *s, MPI_Comm comm, int nworkers, int size) {
  s->run.parked = ds_calloc((size_t)size, sizeof *s->run.parked);
  if (!s->run.parked) run_fatal(&s->run); /* no work goes out, so nobody is parked */
  return run_serve(&s->run, comm, nworkers);
}
