/* rows.c -- the row source (a grid of points, one store row each): its ops
 * table, which ds_sched_run (sched.c) drives, and what the run asks of it
 * beyond the loops: the ranks' memory at bring-up, the plan and the store
 * (plan.c, lifecycle.c), the teams, the wrap-up. The top floor of the row
 * source: it calls dispatch.c (rank 0), workloop.c (the workers), plan.c and
 * lifecycle.c; nothing calls it but through sc_rows_ops. sc_serve and
 * sc_work are called from here, not from their own files, so that
 * dynsweep-sched-bench can wrap them at link time (-Wl,--wrap). */
#include "state.h"

/* Collective: what a training rank has (ds_rank_memory with the training
 * ranks of its node; rank 0 of a multi-rank run only schedules), the least
 * over the ranks, and where that figure comes from. */
static double rank_has(const ds_run_opts *o, MPI_Comm comm, int rank, int size, char *why, size_t n) {
  MPI_Comm node;
  int nr = 1, me0 = rank == 0 && size > 1, has0 = 0;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &nr);
  MPI_Allreduce(&me0, &has0, 1, MPI_INT, MPI_MAX, node);
  MPI_Comm_free(&node);
  char w[128] = "no limit found";
  struct { double v; int r; } in = {INFINITY, rank}, out;
  if (!me0) in.v = ds_rank_memory(nr - has0, o->rank_mem_given ? o->rank_mem_mb : 0, w, sizeof w);
  MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm);
  MPI_Bcast(w, sizeof w, MPI_CHAR, out.r, comm);
  snprintf(why, n, "%s", w);
  return out.v;
}

static void rows_bring_up(ds_run *r, MPI_Comm comm, int rank, int size) {
  sched *s = (sched *)r;
  s->nworkers = size - 1;
  s->max_attempts = r->o->max_attempts > 0 ? r->o->max_attempts : 2;
  if (size == 1) s->slots = 1; /* points running at once (with teams: rows_teams) */
  s->has = rank_has(r->o, comm, rank, size, s->has_why, sizeof s->has_why);
  ds_worker_set_rank_memory(s->has, r->o->verbose && !r->o->quiet); /* NTK J budgets */
  if (rank == 0 && !r->o->quiet) {
    char hb[32];
    ds_fmt_bytes(hb, sizeof hb, s->has);
    ds_log("memory: a rank has %s (%s)", hb, s->has_why);
  }
}

static int rows_prepare(ds_run *r, const char *hosts, int nranks) {
  sched *s = (sched *)r;
  int rc = sc_check_teams(s); /* before anything is created */
  return rc == DS_OK ? sc_prepare(s, hosts, nranks) : rc;
}

static int rows_teams(ds_run *r, int size, int *node, int *color) {
  sched *s = (sched *)r;
  s->node = node;
  int n = sc_plan_teams(s, size, color);
  s->slots = n > 0 ? n : size - 1;
  return n;
}

static int rows_serve(ds_run *r, MPI_Comm comm, int nworkers, int size) {
  return sc_serve((sched *)r, comm, nworkers, size);
}

static int rows_finished(const ds_run *r) {
  const sched *s = (const sched *)r;
  return s->nfinal >= s->n;
}

static int rows_wrap_up(ds_run *r, int size, double cpu, double wall) {
  return sc_wrap_up((sched *)r, size, cpu, wall);
}

static void rows_free(ds_run *r) { sc_free_sched((sched *)r); }

/* The row source (state.h, ds_source_ops). */
const ds_source_ops sc_rows_ops = {
    .noun = "point",
    .drain_tail = " to checkpoint",
    .abort_tail = "they resume from their last checkpoint",
    .progress = sc_rows_progress,
    .running = sc_rows_running,
    .handlers = sc_rows_handlers,
    .assign = sc_rows_assign,
    .report = sc_rows_report,
    .local = sc_rows_local,
    .size = sizeof(sched),
    .what = "sweep",
    .bring_up = rows_bring_up,
    .prepare = rows_prepare,
    .teams = rows_teams,
    .serve = rows_serve,
    .finished = rows_finished,
    .wrap_up = rows_wrap_up,
    .work = sc_work,
    .free = rows_free,
};
