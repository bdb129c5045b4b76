/* work.c -- THE worker loop, whatever the point source: a team's leader says
 * it is ready, then takes one assignment after another (TAG_ASSIGN, int64[4]
 * whose meaning is the source's) and hands each to the source's function,
 * which runs it (with its team) and sends the result; the function says when
 * the assignment was a stop. Members of a team other than its leader get
 * their assignment from the leader (the function does that). With -n 1,
 * run_alone: rank 0 runs the work itself. */
#include "state.h"

int run_work(run_work_fn fn, void *ctx, MPI_Comm comm, int lead) {
  int zero = 0;
  if (lead) MPI_Send(&zero, 1, MPI_INT, 0, TAG_READY, comm);
  for (;;) {
    int64_t hdr[4] = {-1, -1, 0, 0};
    if (lead) MPI_Recv(hdr, 4, MPI_INT64_T, 0, TAG_ASSIGN, comm, MPI_STATUS_IGNORE);
    if (fn(ctx, comm, hdr) == RUN_STOP) break;
  }
  return DS_OK;
}

/* -n 1: rank 0 is the one worker; between two pieces of work it does the
 * tick (drain signal, commit, publish, progress). */
void run_alone(ds_run *r) {
  ds_team team;
  if (ds_team_init(&team, MPI_COMM_SELF) != DS_OK) {
    run_fatal(r);
    return;
  }
  for (;;) {
    run_tick(r);
    if (r->ops->local(r, &team) == RUN_STOP) break;
  }
  ds_team_free(&team);
}
