/* state.c -- the run core of rank 0 (ds_run, state.h), whatever the point
 * source: a store failure, the drain, the periodic tick, giving up on busy
 * workers, closing the store at the end. The bottom floor of src/sched/: it
 * calls nothing else of the room (the source through its ops table). */
#include "state.h"

/* A store error: remember the first message, hand out no more work. */
void run_fatal(ds_run *r) {
  if (!r->fatal) snprintf(r->fatal_msg, sizeof r->fatal_msg, "%s", ds_errmsg());
  r->fatal = 1;
  if (!r->draining) {
    r->draining = 1;
    r->drain_deadline = ds_now() + r->o->drain_timeout;
  }
}

void run_drain(ds_run *r, const char *why) {
  if (r->draining) return;
  r->draining = 1;
  r->drain_deadline = ds_now() + r->o->drain_timeout;
  if (r->tty) ds_console_bar_end();
  ds_log("%s: no new %ss; waiting up to %.0f s for %lld running %s(s)%s", why, r->ops->noun,
         r->o->drain_timeout, (long long)r->ops->running(r), r->ops->noun, r->ops->drain_tail);
}

/* Periodic work of rank 0: drain signal, group commit, publish, progress. */
void run_tick(ds_run *r) {
  if (g_stop && !r->draining) run_drain(r, "drain signal");
  if (!r->fatal && ds_store_commit(r->store) != DS_OK) run_fatal(r);
  if (!r->fatal && ds_store_publish(r->store, 0) != DS_OK) run_fatal(r);
  r->ops->progress(r, 0);
}

/* Drain or store failure with workers still busy past the deadline: publish
 * what we have and end the job, exit 1 after a store failure,
 * DS_EXIT_DRAINED after a drain. The rows still running keep their attempt:
 * a point that did not stop within the drain timeout may be on a dead or
 * hung rank (srun does not end the job when one task is killed). The
 * watchdog a drain signal armed waits for the publish (a slow publish is not
 * a wedge). */
void run_abort_busy(ds_run *r, MPI_Comm comm) {
  int code = r->fatal ? 1 : DS_EXIT_DRAINED;
  if (r->tty) ds_console_bar_end();
  ds_warn("%lld %s(s) still running %.0f s after the %s; ending the job (%s)",
          (long long)r->ops->running(r), r->ops->noun, r->o->drain_timeout,
          r->fatal ? "store failure" : "drain signal", r->ops->abort_tail);
  if (!r->fatal) ds_store_set_run(r->store, "drained", (double)time(NULL), r->done0);
  if (r->fatal) fprintf(stderr, "dynsweep: %s\n", r->fatal_msg);
  ds_store_stats st;
  ds_store_get_stats(r->store, &st);
  ds_drain_watchdog_extend(30 + 10 * st.last_publish_s);
  ds_store_close(r->store);
  r->store = NULL;
  fflush(stderr);
  MPI_Abort(comm, code);
}

/* The end of a session: finish the store (complete) or record the session
 * (drained, stopped), close it. ds_store_finish publishes the last results;
 * the wall_s and rank0_cpu_s it records include that publish up to the
 * closing of the file. After a drain signal the watchdog allows for it (a
 * slow publish is not a wedge). *st gets the store's figures after the
 * finish. Returns the first store failure of the session, if any. */
int run_close(ds_run *r, int complete, double cpu, double wall, ds_store_stats *st) {
  char end[32];
  ds_iso_time(end, sizeof end);
  if (r->tty && !r->o->quiet) {
    r->ops->progress(r, 1);
    ds_console_bar_end();
  }
  if (!complete)
    ds_store_set_run(r->store, r->fatal ? "stopped" : "drained", (double)time(NULL), r->done0);
  ds_store_get_stats(r->store, st);
  ds_drain_watchdog_extend(30 + 20 * st->last_publish_s);
  int frc = ds_store_finish(r->store, complete ? end : NULL, r->prev_cpu + cpu, r->prev_wall + wall);
  if (frc != DS_OK && !r->fatal) run_fatal(r);
  ds_store_get_stats(r->store, st);
  int crc = ds_store_close(r->store);
  r->store = NULL;
  if (crc != DS_OK && !r->fatal) run_fatal(r);
  if (r->fatal) return ds_fail(DS_EIO, "%s", r->fatal_msg);
  return DS_OK;
}
