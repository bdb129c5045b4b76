/* rowstate.c -- what rank 0 knows of a row sweep's progress (struct sched,
 * state.h): the progress line, the ETA, the checkpoints kept for reuse. */
#include "state.h"

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
  if (s->run.store) ds_store_set_eta(s->run.store, left > 0 ? (double)ts.tv_sec + 1e-9 * ts.tv_nsec + eta : 0);
  if (s->run.o->quiet) return;
  double now = ds_now(), el = now - s->run.t0;
  double rate = s->run.session_done / (el > 0 ? el : 1e-9);
  char etas[32];
  if (!(eta >= 0) || !isfinite(eta)) snprintf(etas, sizeof etas, "?");
  else if (eta < 100) snprintf(etas, sizeof etas, "%.0fs", eta);
  else if (eta < 6000) snprintf(etas, sizeof etas, "%.0fm%02.0fs", floor(eta / 60), fmod(eta, 60));
  else snprintf(etas, sizeof etas, "%.0fh%02.0fm", floor(eta / 3600), fmod(eta / 60, 60));
  if (r && s->run.o->verbose) {
    ds_log("[%lld/%lld] point %lld %-8s steps %-7lld loss %-11.4g rank %d %.2fs%s%s",
           (long long)s->nfinal, (long long)s->n, (long long)r->id, ds_status_name(r->status),
           (long long)r->steps, r->final_loss, r->rank, r->wall_s, r->reason[0] ? " | " : "",
           r->reason);
  }
  if (s->run.tty) { /* one line that fits the terminal, redrawn in place */
    if (!force && now - s->run.last_prog < 0.2) return;
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
  } else if (!s->run.o->verbose || force) {
    if (!force && now - s->run.last_prog < 10.0) return;
    ds_log("progress: %lld/%lld finished (done %lld, diverged %lld, failed %lld), running %lld, "
           "pending %lld | %.2f pts/s ETA %s", (long long)s->nfinal, (long long)s->n,
           (long long)s->ndone, (long long)s->ndiv, (long long)s->nfail, (long long)s->nrunning,
           (long long)pending, rate, etas);
  }
  s->run.last_prog = now;
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
