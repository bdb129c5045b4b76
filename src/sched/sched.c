/* sched.c -- ds_sched_run: the entry of `dynsweep run` on every rank, one
 * body for every point source. The rooms and the protocol are described in
 * state.h. */
#include "state.h"

/* Rank 0 gets every rank's MPI processor name (the host) and node: the Slurm
 * node name SLURMD_NODENAME (several Slurm nodes may share one host), else
 * the host name. Returns the distinct hosts (comma-separated, root attribute
 * hosts); *nodes (rank_nodes: each rank's node, rank 0 first) and node[r] (an
 * index per distinct node, for the teams) are set on rank 0. NULL elsewhere. */
static char *gather_hosts(MPI_Comm comm, int rank, int size, char **nodes, int *node) {
  enum { L = MPI_MAX_PROCESSOR_NAME };
  char name[2 * L] = {0};
  int len;
  MPI_Get_processor_name(name, &len);
  const char *sn = getenv("SLURMD_NODENAME");
  snprintf(name + L, L, "%s", sn && *sn ? sn : name);
  char *all = rank == 0 ? calloc(size, 2 * L) : NULL;
  MPI_Gather(name, 2 * L, MPI_CHAR, all, 2 * L, MPI_CHAR, 0, comm);
  if (rank != 0) return NULL;
  char *out = calloc(size, L + 1);
  *nodes = calloc(size, L + 1);
  for (int i = 0; out && *nodes && all && i < size; i++) {
    const char *h = all + (size_t)i * 2 * L, *nd = h + L;
    int seen = 0;
    node[i] = i;
    for (int j = 0; j < i; j++) seen |= strcmp(h, all + (size_t)j * 2 * L) == 0;
    for (int j = 0; j < i && node[i] == i; j++)
      if (!strcmp(nd, all + (size_t)j * 2 * L + L)) node[i] = node[j];
    strcat(strcat(*nodes, i ? "," : ""), nd);
    if (seen) continue;
    if (*out) strcat(out, ",");
    strcat(out, h);
  }
  free(all);
  return out;
}

/* One run body for every point source (rows: rows.c; a map: maps.c):
 * bring-up, rank 0's plan and store, the teams, then rank 0 serves (or with
 * -n 1 runs the points itself) while the workers work, and the common
 * wrap-up. What differs is the source's, through its ops table. */
int ds_sched_run(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm) {
  int rank, size, rc = DS_OK;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ds_signals_install_drain();
  const ds_source_ops *ops = sw->map ? &sc_map_ops : &sc_rows_ops; /* map: issue 13 */
  ds_run *r = ds_calloc(1, ops->size);
  char *rank_nodes = NULL;
  int *node = ds_calloc((size_t)size, sizeof *node);
  if (!r || !node) MPI_Abort(comm, 1);
  *r = (ds_run){.sw = sw, .o = o, .ops = ops, .pace = {.gap = 1.0}};
  char *hosts = gather_hosts(comm, rank, size, &rank_nodes, node);
  r->tty = rank == 0 && !o->quiet && ds_console_open_bar();
  if (ops->bring_up) ops->bring_up(r, comm, rank, size);
  if (rank == 0) {
    r->t0 = ds_now();
    rc = ops->prepare(r, hosts ? hosts : "", size);
    if (rc == DS_OK && r->store && rank_nodes) rc = ds_store_set_rank_nodes(r->store, rank_nodes);
    if (rc != DS_OK && r->store) {
      ds_store_close(r->store);
      r->store = NULL;
    }
  }
  free(hosts);
  free(rank_nodes);
  int start[2] = {rc, r->nothing_to_do};
  MPI_Bcast(start, 2, MPI_INT, 0, comm); /* refused: everyone stops, nothing ran */
  if (start[0] != DS_OK || start[1]) {
    int nothing = start[1];
    if (rank == 0 && r->store) ds_store_close(r->store);
    ops->free(r);
    free(r);
    free(node);
    if (o->drained) *o->drained = 0;
    if (nothing) return DS_OK;
    return rank == 0 ? rc : ds_fail(start[0], "rank 0 could not start the %s", ops->what);
  }
  int drained = 0, nteams = 0;
  MPI_Comm tcomm = MPI_COMM_NULL;
  if (size > 1 && ops->teams) { /* teams: rank 0 plans, every worker joins its team's communicator */
    int *color = ds_calloc((size_t)size, sizeof *color);
    if (!color) MPI_Abort(comm, 1); /* a few ints; the collectives below need every rank */
    if (rank == 0 && (nteams = ops->teams(r, size, node, color)) < 0) {
      ds_fail(DS_ENOMEM, "out of memory planning the worker teams");
      run_fatal(r);
      nteams = 0;
      for (int k = 0; k < size; k++) color[k] = -1;
    }
    MPI_Bcast(color, size, MPI_INT, 0, comm);
    MPI_Comm_split(comm, color[rank] < 0 ? MPI_UNDEFINED : color[rank], rank, &tcomm);
    free(color);
  }
  if (rank == 0) {
    double cpu0 = ds_cpu_time();
    r->t0 = r->last_prog = ds_now();
    int nworkers = ops->teams ? nteams : size - 1;
    if (size == 1) run_alone(r);
    else rc = ops->serve ? ops->serve(r, comm, nworkers, size) : run_serve(r, comm, nworkers);
    double cpu = ds_cpu_time() - cpu0, wall = ds_now() - r->t0;
    drained = !ops->finished(r) && !r->fatal;
    int wrc = ops->wrap_up(r, size, cpu, wall);
    if (rc == DS_OK) rc = wrc;
  } else if (!ops->teams || tcomm != MPI_COMM_NULL) {
    rc = ops->work(sw, o, comm, rank, tcomm);
  }
  if (tcomm != MPI_COMM_NULL) MPI_Comm_free(&tcomm);
  int all[2] = {rc, drained};
  MPI_Bcast(all, 2, MPI_INT, 0, comm);
  ops->free(r);
  free(r);
  free(node);
  if (o->drained) *o->drained = all[0] == DS_OK && all[1];
  return rank == 0 ? rc : (all[0] != DS_OK && rc == DS_OK ? ds_fail(all[0], "rank 0 failed") : rc);
}
