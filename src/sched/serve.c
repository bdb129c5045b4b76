/* serve.c -- THE rank-0 loop of a multi-rank run, whatever the point source
 * (Redis's ae.c: one loop, a handler per event, the periodic work before
 * each wait). It waits for a message (wire.c), does the tick (state.c: drain
 * signal, group commit, publish, progress), gives up on busy workers past
 * the drain deadline, passes the message to the source's handler for its
 * tag and, when the handler says the worker waits for work, asks the source
 * to assign it some (or park or stop it). Workers a source parked (no work
 * yet: a lone point running, a refinement level not finished) are offered
 * work again after every tick and every reply. */
#include "state.h"

static void lat_add(sc_lat *lat, double dt) {
  int b = dt <= 1e-6 ? 0 : (int)(20 * log10(dt / 1e-6)) + 1;
  lat->hist[b < 0 ? 0 : b >= LAT_BINS ? LAT_BINS - 1 : b]++;
  lat->n++;
  lat->sum += dt;
  if (dt > lat->max) lat->max = dt;
}

static void unpark(ds_run *r, MPI_Comm comm, int *active) {
  int n = r->nparked;
  r->nparked = 0;
  for (int k = 0; k < n; k++) r->ops->assign(r, comm, r->parked[k], active);
}

/* The first worker that sends anything says it is ready (int 0). */
int run_on_ready(ds_run *r, MPI_Comm comm, int src) {
  int dummy;
  MPI_Recv(&dummy, 1, MPI_INT, src, TAG_READY, comm, MPI_STATUS_IGNORE);
  return RUN_REPLY;
}

int run_serve(ds_run *r, MPI_Comm comm, int nworkers) {
  int active = nworkers;
  sc_lat *lat = &r->lat;
  while (active > 0) {
    MPI_Status st;
    int failed = r->fatal;
    int got = sc_wait_message(&r->pace, r->store, &failed, comm, &st);
    if (failed && !r->fatal) run_fatal(r);
    double t_msg = ds_now();
    run_tick(r); /* drain signal, publish, progress: also while results stream in */
    double dt_tick = ds_now() - t_msg;
    lat->tick_s += dt_tick;
    lat->long_ticks += dt_tick > 1e-3;
    if (dt_tick > lat->tick_max) lat->tick_max = dt_tick;
    if (r->nparked) unpark(r, comm, &active);
    if (r->draining && r->ops->running(r) > 0 && ds_now() > r->drain_deadline) run_abort_busy(r, comm);
    if (!got) continue;
    int src = st.MPI_SOURCE;
    const ds_handler *h = r->ops->handlers;
    while (h->tag && h->tag != st.MPI_TAG) h++;
    if (!h->tag) return ds_fail(DS_EINTERNAL, "unexpected message tag %d from rank %d", st.MPI_TAG, src);
    if (h->fn(r, comm, src) == RUN_NO_REPLY) continue; /* e.g. a checkpoint: still training */
    r->ops->assign(r, comm, src, &active);
    double t_done = ds_now();
    lat_add(lat, t_done - t_msg);
    if (!lat->t_first) lat->t_first = t_done;
    lat->t_last = t_done;
    if (r->nparked) unpark(r, comm, &active);
  }
  if (r->ops->report) r->ops->report(r, nworkers);
  return DS_OK;
}
