/* sched.c -- the rank-0 scheduler and the worker loop of `dynsweep run`.
 *
 * Protocol (world communicator):
 *   worker -> 0  TAG_READY   (int 0)                 "give me a point"
 *   0 -> worker  TAG_ASSIGN  (int64 id, -1 = stop)
 *   worker -> 0  TAG_RESULT  (ds_point_result bytes) then
 *   worker -> 0  TAG_TRAJ    (packed ds_traj bytes)  a result doubles as READY
 * Points go out longest-estimated-first to whichever worker asks. Rank 0
 * waits with MPI_Iprobe and an exponential sleep back-off (Open MPI's
 * blocking receives busy-poll and would burn a core), and is the only rank
 * that touches the store. With one rank, rank 0 runs the points itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynsweep/sched.h"
#include "dynsweep/spectra.h"
#include "dynsweep/store.h"
#include "dynsweep/util.h"
#include "dynsweep/worker.h"

enum { TAG_READY = 11, TAG_ASSIGN = 12, TAG_RESULT = 13, TAG_TRAJ = 14 };

typedef struct {
  const ds_sweep *sw;
  const ds_run_opts *o;
  int64_t n, next;      /* points, next index into order */
  int64_t *order;       /* point ids, longest first */
  ds_summary_row *rows;
  ds_store *store;
  int64_t finished, ndone, ndiv, nfail;
  double t0;
  int fatal;            /* store error: stop handing out work */
} sched;

/* ---- point queue ---------------------------------------------------------- */

static double *g_cost; /* for qsort */
static int by_cost_desc(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  if (g_cost[x] != g_cost[y]) return g_cost[x] > g_cost[y] ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int build_queue(sched *s) {
  s->n = ds_sweep_npoints(s->sw);
  s->order = ds_calloc(s->n, sizeof *s->order);
  s->rows = ds_calloc(s->n, sizeof *s->rows);
  double *cost = ds_calloc(s->n, sizeof *cost);
  if (!s->order || !s->rows || !cost) { free(cost); return DS_ENOMEM; }
  for (int64_t i = 0; i < s->n; i++) {
    ds_point p;
    int rc = ds_sweep_point(s->sw, i, &p);
    if (rc) { free(cost); return rc; }
    cost[i] = p.cost;
    s->order[i] = i;
    ds_summary_row *r = &s->rows[i];
    r->id = p.id;
    r->combo = p.combo;
    r->replica = p.replica;
    r->width = p.cfg.model.width;
    r->depth = p.cfg.model.depth;
    r->lr = p.cfg.optimizer.lr;
    r->init_scale = p.cfg.model.init_scale;
    r->status = DS_ST_PENDING;
    r->final_loss = r->min_loss = r->final_test_loss = NAN;
    r->diverged_step = -1;
    r->rank = -1;
  }
  g_cost = cost;
  qsort(s->order, s->n, sizeof *s->order, by_cost_desc);
  g_cost = NULL;
  free(cost);
  return DS_OK;
}

static int64_t next_point(sched *s) {
  return (s->fatal || s->next >= s->n) ? -1 : s->order[s->next++];
}

/* ---- store ---------------------------------------------------------------- */

static int create_store(sched *s, const char *hosts, int nranks) {
  const ds_sweep *sw = s->sw;
  int na = sw->naxes;
  const char **names = ds_calloc(na + 1, sizeof *names), **paths = ds_calloc(na + 1, sizeof *paths);
  double *vals = ds_calloc(s->n * (na ? na : 1), sizeof *vals);
  if (!names || !paths || !vals) { free(names); free(paths); free(vals); return DS_ENOMEM; }
  for (int a = 0; a < na; a++) {
    names[a] = sw->axes[a].name;
    paths[a] = sw->axes[a].path;
  }
  /* axis values per point: decode the combo, last axis fastest */
  for (int64_t i = 0; i < s->n; i++) {
    int64_t c = s->rows[i].combo;
    for (int a = na - 1; a >= 0; a--) {
      vals[i * na + a] = sw->axes[a].val[c % sw->axes[a].nvals];
      c /= sw->axes[a].nvals;
    }
  }
  char start[32];
  ds_iso_time(start, sizeof start);
  ds_store_meta m = {
      .sweep_name = sw->name, .sweep_text = sw->text, .sweep_path = sw->path,
      .sweep_hash = sw->hash, .dynsweep_version = DYNSWEEP_VERSION,
      .library_versions = s->o->library_versions ? s->o->library_versions : "",
      .hosts = hosts, .start_time = start, .blas_kernel = ds_blas_kernel(), .nranks = nranks,
      .naxes = na, .axis_names = names, .axis_paths = paths, .npoints = s->n,
      .point_axis_vals = vals};
  int rc = ds_store_create(s->o->store_path, &m, s->rows, &s->store);
  free(names);
  free(paths);
  free(vals);
  return rc;
}

static void progress(sched *s, const ds_summary_row *r) {
  s->finished++;
  s->ndone += r->status == DS_ST_DONE;
  s->ndiv += r->status == DS_ST_DIVERGED;
  s->nfail += r->status == DS_ST_FAILED;
  if (s->o->quiet) return;
  double el = ds_now() - s->t0, rate = s->finished / (el > 0 ? el : 1e-9);
  double eta = (s->n - s->finished) / (rate > 0 ? rate : 1e-9);
  ds_log("[%lld/%lld] point %lld %-8s steps %-7lld loss %-11.4g rank %d %.2fs | done %lld "
         "diverged %lld failed %lld | %.2f pts/s ETA %.0fs",
         (long long)s->finished, (long long)s->n, (long long)r->id, ds_status_name(r->status),
         (long long)r->steps, r->final_loss, r->rank, r->wall_s, (long long)s->ndone,
         (long long)s->ndiv, (long long)s->nfail, rate, eta);
}

/* Fold a worker's result into its row and write it; a store failure is fatal. */
static void finish_point(sched *s, const ds_point_result *res, const ds_traj *tr) {
  if (res->id < 0 || res->id >= s->n) return;
  ds_summary_row *r = &s->rows[res->id];
  r->status = res->status;
  r->steps = res->steps;
  r->final_loss = res->final_loss;
  r->min_loss = res->min_loss;
  r->final_test_loss = res->final_test_loss;
  r->diverged_step = res->diverged_step;
  r->wall_s = res->wall_s;
  r->rank = res->rank;
  memcpy(r->reason, res->reason, sizeof r->reason);
  r->reason[sizeof r->reason - 1] = 0;
  if (!s->fatal && ds_store_write_point(s->store, r, tr) != DS_OK) {
    ds_warn("%s", ds_errmsg());
    s->fatal = 1;
  }
  progress(s, r);
}

/* ---- running a point (any rank) --------------------------------------------- */

static void run_one(const ds_sweep *sw, int64_t id, ds_team *team, int rank, ds_traj *tr,
                    ds_point_result *res) {
  ds_point p;
  ds_traj_init(tr);
  int rc = ds_sweep_point(sw, id, &p);
  if (rc == DS_OK) rc = ds_worker_run_point(sw, &p, team, tr, res, NULL);
  res->id = id;
  res->rank = rank;
  if (rc != DS_OK) {
    res->status = DS_ST_FAILED;
    snprintf(res->reason, sizeof res->reason, "%s", ds_errmsg());
  }
}

/* ---- rank 0 --------------------------------------------------------------- */

/* Wait for any message without burning a core: probe, then sleep with
 * exponential back-off from 50 us to 20 ms. */
static void wait_message(MPI_Comm comm, MPI_Status *st) {
  double nap = 50e-6;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, st);
    if (flag) return;
    ds_sleep(nap);
    nap = nap * 2 < 20e-3 ? nap * 2 : 20e-3;
  }
}

static int recv_result(MPI_Comm comm, int src, ds_point_result *res, ds_traj *tr) {
  MPI_Recv(res, sizeof *res, MPI_BYTE, src, TAG_RESULT, comm, MPI_STATUS_IGNORE);
  MPI_Status st;
  int len;
  MPI_Probe(src, TAG_TRAJ, comm, &st);
  MPI_Get_count(&st, MPI_BYTE, &len);
  char *buf = malloc(len ? len : 1);
  if (!buf) return ds_fail(DS_ENOMEM, "out of memory receiving %d bytes", len);
  MPI_Recv(buf, len, MPI_BYTE, src, TAG_TRAJ, comm, MPI_STATUS_IGNORE);
  int rc = ds_traj_unpack(buf, len, tr);
  free(buf);
  return rc;
}

static int serve(sched *s, MPI_Comm comm, int nworkers) {
  int active = nworkers;
  while (active > 0) {
    MPI_Status st;
    wait_message(comm, &st);
    int src = st.MPI_SOURCE;
    if (st.MPI_TAG == TAG_READY) {
      int dummy;
      MPI_Recv(&dummy, 1, MPI_INT, src, TAG_READY, comm, MPI_STATUS_IGNORE);
    } else if (st.MPI_TAG == TAG_RESULT) {
      ds_point_result res;
      ds_traj tr;
      if (recv_result(comm, src, &res, &tr) != DS_OK) {
        ds_warn("%s", ds_errmsg());
        s->fatal = 1;
      } else {
        finish_point(s, &res, &tr);
        ds_traj_free(&tr);
      }
    } else {
      return ds_fail(DS_EINTERNAL, "unexpected message tag %d from rank %d", st.MPI_TAG, src);
    }
    int64_t id = next_point(s);
    MPI_Send(&id, 1, MPI_INT64_T, src, TAG_ASSIGN, comm);
    if (id < 0) active--;
  }
  return DS_OK;
}

static void serve_alone(sched *s) {
  ds_team team;
  if (ds_team_init(&team, MPI_COMM_SELF) != DS_OK) {
    ds_warn("%s", ds_errmsg());
    s->fatal = 1;
    return;
  }
  for (int64_t id; (id = next_point(s)) >= 0;) {
    ds_point_result res;
    ds_traj tr;
    run_one(s->sw, id, &team, 0, &tr, &res);
    finish_point(s, &res, &tr);
    ds_traj_free(&tr);
  }
  ds_team_free(&team);
}

/* ---- workers -------------------------------------------------------------- */

static int work(const ds_sweep *sw, MPI_Comm comm, int rank) {
  ds_team team;
  int rc = ds_team_init(&team, MPI_COMM_SELF); /* team size 1 */
  int zero = 0;
  MPI_Send(&zero, 1, MPI_INT, 0, TAG_READY, comm);
  for (;;) {
    int64_t id;
    MPI_Recv(&id, 1, MPI_INT64_T, 0, TAG_ASSIGN, comm, MPI_STATUS_IGNORE);
    if (id < 0) break;
    ds_point_result res;
    ds_traj tr;
    if (rc == DS_OK) {
      run_one(sw, id, &team, rank, &tr, &res);
    } else { /* team setup failed: report every point as failed */
      memset(&res, 0, sizeof res);
      ds_traj_init(&tr);
      res.id = id;
      res.rank = rank;
      res.status = DS_ST_FAILED;
      snprintf(res.reason, sizeof res.reason, "%s", ds_errmsg());
    }
    char *buf;
    size_t len;
    if (ds_traj_pack(&tr, &buf, &len) != DS_OK) {
      ds_traj_free(&tr);
      ds_traj_init(&tr);
      res.status = DS_ST_FAILED;
      snprintf(res.reason, sizeof res.reason, "%s", ds_errmsg());
      ds_traj_pack(&tr, &buf, &len);
    }
    MPI_Send(&res, sizeof res, MPI_BYTE, 0, TAG_RESULT, comm);
    MPI_Send(buf, (int)len, MPI_BYTE, 0, TAG_TRAJ, comm);
    free(buf);
    ds_traj_free(&tr);
  }
  if (rc == DS_OK) ds_team_free(&team);
  return DS_OK;
}

/* ---- entry ---------------------------------------------------------------- */

static char *gather_hosts(MPI_Comm comm, int rank, int size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len;
  MPI_Get_processor_name(name, &len);
  char *all = rank == 0 ? calloc(size, MPI_MAX_PROCESSOR_NAME) : NULL;
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  if (rank != 0) return NULL;
  char *out = calloc(size, MPI_MAX_PROCESSOR_NAME + 1);
  for (int i = 0; out && all && i < size; i++) {
    const char *h = all + (size_t)i * MPI_MAX_PROCESSOR_NAME;
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= strcmp(h, all + (size_t)j * MPI_MAX_PROCESSOR_NAME) == 0;
    if (seen) continue;
    if (*out) strcat(out, ",");
    strcat(out, h);
  }
  free(all);
  return out;
}

int ds_sched_run(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm) {
  int rank, size, rc = DS_OK;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char *hosts = gather_hosts(comm, rank, size);
  sched s = {.sw = sw, .o = o};
  if (rank == 0) {
    s.t0 = ds_now();
    rc = build_queue(&s);
    if (rc == DS_OK) rc = create_store(&s, hosts ? hosts : "", size);
  }
  free(hosts);
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm); /* store refused: everyone stops, nothing ran */
  if (rc != DS_OK) {
    free(s.order);
    free(s.rows);
    return rank == 0 ? rc : ds_fail(rc, "rank 0 could not start the sweep");
  }
  if (rank == 0) {
    double cpu0 = ds_cpu_time();
    if (size == 1) serve_alone(&s);
    else rc = serve(&s, comm, size - 1);
    double cpu = ds_cpu_time() - cpu0, wall = ds_now() - s.t0;
    char end[32];
    ds_iso_time(end, sizeof end);
    if (!s.fatal) {
      rc = ds_store_finish(s.store, end, cpu, wall);
      if (!o->quiet && rc == DS_OK)
        ds_log("finished %lld points in %.2f s: %lld done, %lld diverged, %lld failed; "
               "rank 0 CPU %.3f s (%.1f%% of a core)%s", (long long)s.finished, wall,
               (long long)s.ndone, (long long)s.ndiv, (long long)s.nfail, cpu,
               100.0 * cpu / (wall > 0 ? wall : 1), size == 1 ? ", rank 0 also trained" : "");
    } else if (rc == DS_OK) {
      rc = ds_fail(DS_EIO, "the sweep stopped: writing the store failed (see above)");
    }
    int crc = ds_store_close(s.store);
    if (rc == DS_OK) rc = crc;
  } else {
    rc = work(sw, comm, rank);
  }
  int all = rc;
  MPI_Bcast(&all, 1, MPI_INT, 0, comm);
  free(s.order);
  free(s.rows);
  return rank == 0 ? rc : (all != DS_OK && rc == DS_OK ? ds_fail(all, "rank 0 failed") : rc);
}
