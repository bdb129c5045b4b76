/* sched.c -- ds_sched_run: the entry of `dynsweep run` on every rank. The
 * rooms and the protocol are described in state.h. */
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

int ds_sched_run(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm) {
  int rank, size, rc = DS_OK;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  ds_signals_install_drain();
  sched s = {.run = {.sw = sw, .o = o, .ops = &sc_rows_ops, .pace = {.gap = 1.0}}};
  char *rank_nodes = NULL;
  s.node = ds_calloc((size_t)size, sizeof *s.node);
  if (!s.node) MPI_Abort(comm, 1);
  char *hosts = gather_hosts(comm, rank, size, &rank_nodes, s.node);
  if (sw->map) { /* issue 13: outcome-only points in tiles (mapsched.c) */
    int mrc = sc_run_map(sw, o, comm, hosts, rank_nodes);
    free(hosts);
    free(rank_nodes);
    free(s.node);
    return mrc;
  }
  s.run.tty = rank == 0 && !o->quiet && ds_console_open_bar();
  s.nworkers = size - 1;
  s.max_attempts = o->max_attempts > 0 ? o->max_attempts : 2;
  s.has = rank_has(o, comm, rank, size, s.has_why, sizeof s.has_why);
  if (rank == 0 && !o->quiet) {
    char hb[32];
    ds_fmt_bytes(hb, sizeof hb, s.has);
    ds_log("memory: a rank has %s (%s)", hb, s.has_why);
  }
  if (rank == 0) {
    s.run.t0 = ds_now();
    rc = sc_check_teams(&s); /* before anything is created */
    if (rc == DS_OK) rc = sc_prepare(&s, hosts ? hosts : "", size);
    if (rc == DS_OK && s.run.store && rank_nodes) rc = ds_store_set_rank_nodes(s.run.store, rank_nodes);
    if (rc != DS_OK && s.run.store) {
      ds_store_close(s.run.store);
      s.run.store = NULL;
    }
  }
  free(hosts);
  free(rank_nodes);
  int start[2] = {rc, s.nothing_to_do};
  MPI_Bcast(start, 2, MPI_INT, 0, comm); /* refused: everyone stops, nothing ran */
  if (start[0] != DS_OK || start[1]) {
    int nothing = start[1];
    if (rank == 0 && s.run.store) ds_store_close(s.run.store);
    sc_free_sched(&s);
    if (o->drained) *o->drained = 0;
    if (nothing) return DS_OK;
    return rank == 0 ? rc : ds_fail(start[0], "rank 0 could not start the sweep");
  }
  int drained = 0, nteams = 0;
  MPI_Comm tcomm = MPI_COMM_NULL;
  if (size > 1) { /* teams: rank 0 plans, every worker joins its team's communicator */
    int *color = ds_calloc((size_t)size, sizeof *color);
    if (!color) MPI_Abort(comm, 1); /* a few ints; the collectives below need every rank */
    if (rank == 0 && (nteams = sc_plan_teams(&s, size, color)) < 0) {
      ds_fail(DS_ENOMEM, "out of memory planning the worker teams");
      run_fatal(&s.run);
      nteams = 0;
      for (int r = 0; r < size; r++) color[r] = -1;
    }
    MPI_Bcast(color, size, MPI_INT, 0, comm);
    MPI_Comm_split(comm, color[rank] < 0 ? MPI_UNDEFINED : color[rank], rank, &tcomm);
    free(color);
  }
  if (rank == 0) {
    double cpu0 = ds_cpu_time();
    s.slots = size == 1 ? 1 : nteams > 0 ? nteams : size - 1; /* points running at once */
    s.run.t0 = s.run.last_prog = ds_now();
    if (size == 1) run_alone(&s.run);
    else rc = sc_serve(&s, comm, nteams, size);
    double cpu = ds_cpu_time() - cpu0, wall = ds_now() - s.run.t0;
    drained = s.nfinal < s.n && !s.run.fatal;
    int wrc = sc_wrap_up(&s, size, cpu, wall);
    if (rc == DS_OK) rc = wrc;
  } else if (tcomm != MPI_COMM_NULL) {
    rc = sc_work(sw, o, comm, rank, tcomm);
  }
  if (tcomm != MPI_COMM_NULL) MPI_Comm_free(&tcomm);
  int all[2] = {rc, drained};
  MPI_Bcast(all, 2, MPI_INT, 0, comm);
  sc_free_sched(&s);
  if (o->drained) *o->drained = all[0] == DS_OK && all[1];
  return rank == 0 ? rc : (all[0] != DS_OK && rc == DS_OK ? ds_fail(all[0], "rank 0 failed") : rc);
}
