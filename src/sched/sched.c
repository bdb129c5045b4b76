/* sched.c -- the rank-0 scheduler and the worker loop of `dynsweep run`.
 *
 * Protocol (world communicator):
 *   worker -> 0  TAG_READY   (int 0)                   "give me a point"
 *   0 -> worker  TAG_ASSIGN  (int64[3]: row id, sweep point index, blob
 *                             length; id -1 = stop)
 *   0 -> worker  TAG_BLOB    (the checkpoint to resume from), only when the
 *                             length above is > 0
 *   worker -> 0  TAG_CKPT    (int64 row id + checkpoint blob), any number of
 *                             times while a point runs
 *   worker -> 0  TAG_RESULT  (ds_point_result bytes) then
 *   worker -> 0  TAG_TRAJ    (packed ds_traj bytes)    a result doubles as READY
 * A result with status pending means the worker stopped the point (drain
 * signal) after checkpointing it: rank 0 stops handing out work.
 *
 * Workers form teams (train.ranks_per_point; plan_teams): only a team's
 * leader (its lowest world rank) talks to rank 0 and passes the assignment
 * on to its members over the team communicator (work()).
 * Points go out longest-estimated-first to whichever worker asks (a team
 * gets only points of its size). Rank 0
 * waits with MPI_Iprobe and an exponential sleep back-off (Open MPI's
 * blocking receives busy-poll and would burn a core), is the only rank that
 * touches the store, fsyncs the journal when it has nothing else to do and
 * publishes the store when due. With one rank, rank 0 runs the points itself.
 * A run on an existing store resumes it (points are matched by their grid
 * values, so a sweep file that only added grid values extends the store). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dynsweep/sched.h"
#include "dynsweep/spectra.h"
#include "dynsweep/store.h"
#include "dynsweep/util.h"
#include "dynsweep/worker.h"

enum {
  TAG_READY = 11,
  TAG_ASSIGN = 12,
  TAG_RESULT = 13,
  TAG_TRAJ = 14,
  TAG_BLOB = 15,
  TAG_CKPT = 16
};

/* ---- drain signal ----------------------------------------------------------- */

/* The drain flag lives in util/signals.c: main() installs its handlers before
 * anything else runs (SIGTERM/SIGUSR1 drain, SIGXFSZ ignored so that a write
 * fails with EFBIG and is reported). */
#define g_stop (*ds_drain_flag())

/* ---- state of rank 0 ------------------------------------------------------------ */

typedef struct {
  const ds_sweep *sw;
  const ds_run_opts *o;
  int64_t n;             /* store rows (= points); row id == index */
  int64_t *sidx;         /* sweep point index of each row */
  double *cost;          /* estimated cost of each row */
  ds_summary_row *rows;
  char **blob;           /* latest checkpoint of each unfinished row, or NULL */
  size_t *bloblen;
  int64_t *queue, qn, qhead; /* rows to run, longest first */
  ds_store *store;
  int64_t final0;        /* finished rows when this session started */
  int64_t nfinal, ndone, ndiv, nfail, nrunning, session_done;
  double t0, prev_wall, prev_cpu, drain_deadline, last_prog;
  int fatal, draining, tty, nothing_to_do, resumed;
  char fatal_msg[1024];
  /* teams (train.ranks_per_point) */
  int nworkers;          /* world ranks 1..size-1 */
  int *tsize;            /* team size of each row */
  struct tclass *cls;    /* one queue per team size (multi-rank runs), or NULL */
  int ncls;
  int *lead_size;        /* world rank -> size of the team it leads (0: not a leader) */
  /* attempts (issue 11) */
  int max_attempts;
  double has;            /* bytes a rank has (ds_rank_memory; the least over the ranks) */
  char has_why[128];     /* where that figure comes from */
  char *lone;            /* rows on their last attempt after a death: run alone */
  int lone_running;      /* a lone row is running: nothing else starts */
  int *parked, nparked;  /* leaders waiting for a lone row to end */
} sched;

/* The queued rows of one team size, longest first, and its teams. */
typedef struct tclass {
  int size, teams;
  int64_t *q, n, head;
  double cost;
} tclass;

static int is_final(int st) { return st >= DS_ST_DONE && st <= DS_ST_FAILED; }

/* A store error: remember the first message, stop handing out work. */
static void set_fatal(sched *s) {
  if (!s->fatal) snprintf(s->fatal_msg, sizeof s->fatal_msg, "%s", ds_errmsg());
  s->fatal = 1;
  if (!s->draining) {
    s->draining = 1;
    s->drain_deadline = ds_now() + s->o->drain_timeout;
  }
}

static void start_drain(sched *s, const char *why) {
  if (s->draining) return;
  s->draining = 1;
  s->drain_deadline = ds_now() + s->o->drain_timeout;
  if (s->tty) ds_console_bar_end();
  ds_log("%s: no new points; waiting up to %.0f s for %lld running point(s) to checkpoint",
         why, s->o->drain_timeout, (long long)s->nrunning);
}

/* ---- rows, identity, queue ----------------------------------------------------- */

static void fill_row(ds_summary_row *r, int64_t id, const ds_point *p) {
  memset(r, 0, sizeof *r);
  r->id = id;
  r->combo = p->combo;
  r->replica = p->replica;
  r->width = p->cfg.model.width;
  r->depth = p->cfg.model.depth;
  r->lr = p->cfg.optimizer.lr;
  r->init_scale = p->cfg.model.init_scale;
  r->status = DS_ST_PENDING;
  r->final_loss = r->min_loss = r->final_test_loss = NAN;
  r->diverged_step = -1;
  r->rank = -1;
  r->outcome = DS_OUT_UNFINISHED;
  r->event_step = r->plateau_end = -1;
  r->peak_ratio = NAN;
}

/* Axis values of sweep point idx (last axis fastest). */
static void point_axis_vals(const ds_sweep *sw, int64_t idx, double *out) {
  int64_t c = idx / sw->replicas;
  for (int a = sw->naxes - 1; a >= 0; a--) {
    out[a] = sw->axes[a].val[c % sw->axes[a].nvals];
    c /= sw->axes[a].nvals;
  }
}

int64_t ds_sched_map_rows(const ds_sweep *sw, const double *vals, const ds_summary_row *rows,
                          int64_t n, int64_t *map) {
  int64_t mapped = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t combo = 0;
    int ok = rows[i].replica >= 0 && rows[i].replica < sw->replicas;
    for (int a = 0; ok && a < sw->naxes; a++) {
      double v = vals[i * sw->naxes + a];
      int k = 0;
      while (k < sw->axes[a].nvals && memcmp(&sw->axes[a].val[k], &v, sizeof v) != 0) k++;
      ok = k < sw->axes[a].nvals;
      combo = combo * sw->axes[a].nvals + k;
    }
    map[i] = ok ? combo * sw->replicas + rows[i].replica : -1;
    mapped += ok;
  }
  return mapped;
}

/* ---- teams (train.ranks_per_point) ------------------------------------------------ */

static double rank_mem_bytes(const ds_run_opts *o) {
  return (o->rank_mem_mb > 0 ? o->rank_mem_mb : 1024.0) * 1048576.0;
}

/* Team size a point runs on with nworkers worker ranks: its ranks_per_point,
 * auto capped at the largest power of two <= nworkers; 1 with -n 1. */
static int point_team(const ds_run_opts *o, const ds_point_cfg *c, int nworkers) {
  if (nworkers < 1) return 1;
  int t = ds_point_team_size(c, rank_mem_bytes(o));
  if (c->train.ranks_per_point == 0)
    while (t > nworkers) t /= 2;
  return t;
}

/* Rank 0, before anything is created: every team size the sweep needs must
 * fit the worker ranks at the same time (one team of each size). */
static int check_teams(sched *s) {
  const ds_sweep *sw = s->sw;
  int W = s->nworkers, nsz = 0, sizes[64], maxreq = 1, capped = 0, cap_to = 0;
  int64_t np = ds_sweep_npoints(sw), maxpt = 0;
  double cap_mem = 0;
  int axis = 0;
  for (int a = 0; a < sw->naxes; a++) axis |= !strcmp(sw->axes[a].path, "train.ranks_per_point");
  if (!axis && sw->base.train.ranks_per_point > 0 && np > 1) np = 1; /* one size for all */
  for (int64_t i = 0; i < np; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(sw, i, &p));
    int req = ds_point_team_size(&p.cfg, rank_mem_bytes(s->o));
    if (req > maxreq) maxreq = req, maxpt = i;
    if (W < 1) continue;
    if (p.cfg.train.ranks_per_point > 0 && req > W)
      return ds_fail(DS_EINPUT, "%s: ranks_per_point %d (point %lld) needs a team of %d worker "
                     "ranks, but this run has only %d (ranks 1..%d of %d); run with -n %d or more",
                     sw->path, req, (long long)i, req, W, W, W + 1, req + 1);
    int t = point_team(s->o, &p.cfg, W);
    if (t < req && !capped) capped = req, cap_to = t, cap_mem = ds_point_mem_bytes(&p.cfg);
    int k = 0;
    while (k < nsz && sizes[k] != t) k++;
    if (k == nsz && nsz == 64)
      return ds_fail(DS_EINPUT, "%s: ranks_per_point: more than 64 different team sizes", sw->path);
    if (k == nsz) sizes[nsz++] = t;
  }
  if (W < 1) {
    if (maxreq > 1)
      ds_warn("ranks_per_point: point %lld asks for a team of %d ranks, but with -n 1 rank 0 runs "
              "every point itself on a team of 1", (long long)maxpt, maxreq);
    return DS_OK;
  }
  int need = 0;
  char list[256] = "";
  for (int k = 0; k < nsz; k++) {
    need += sizes[k];
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%d", k ? (k + 1 == nsz ? " and " : ", ") : "", sizes[k]);
  }
  if (need > W)
    return ds_fail(DS_EINPUT, "%s: ranks_per_point needs teams of %s ranks at the same time (%d "
                   "worker ranks for one team of each size), but this run has only %d (ranks 1..%d "
                   "of %d); run with -n %d or more", sw->path, list, need, W, W, W + 1, need + 1);
  if (capped)
    ds_warn("ranks_per_point: auto wants a team of %d ranks for an estimated %.0f MB per point "
            "(--rank-memory %.0f MB per rank), more than the %d worker ranks; those points run on "
            "teams of %d", capped, cap_mem / 1048576.0, rank_mem_bytes(s->o) / 1048576.0, W, cap_to);
  return DS_OK;
}

/* Rank 0, after the queue is built: splits worker ranks 1..size-1 into
 * teams. One team for every size the queue needs, then the remaining ranks
 * go, a team at a time, to the size with the most estimated cost per rank
 * (never more teams of a size than it has points). Ranks are given out
 * consecutively, largest teams first. color[r] = team number of world rank
 * r, -1 for rank 0 and idle ranks. Returns the number of teams. */
static int plan_teams(sched *s, int size, int *color) {
  for (int r = 0; r < size; r++) color[r] = -1;
  s->lead_size = ds_calloc((size_t)size, sizeof *s->lead_size);
  if (!s->lead_size) return -1;
  int cap = 0;
  for (int64_t j = s->qhead; j < s->qn; j++) {
    int64_t id = s->queue[j];
    int c = 0;
    while (c < s->ncls && s->cls[c].size != s->tsize[id]) c++;
    if (c == s->ncls) {
      if (s->ncls == cap) {
        cap = cap ? 2 * cap : 8;
        tclass *g = realloc(s->cls, (size_t)cap * sizeof *g);
        if (!g) return -1;
        s->cls = g;
      }
      memset(&s->cls[c], 0, sizeof s->cls[c]);
      s->cls[c].size = s->tsize[id];
      s->ncls++;
    }
    s->cls[c].n++;
    s->cls[c].cost += s->cost[id];
  }
  for (int c = 0; c < s->ncls; c++) {
    s->cls[c].q = ds_calloc((size_t)s->cls[c].n, sizeof *s->cls[c].q);
    if (!s->cls[c].q) return -1;
    s->cls[c].n = 0;
  }
  for (int64_t j = s->qhead; j < s->qn; j++) { /* keep longest-first order */
    int64_t id = s->queue[j];
    for (int c = 0; c < s->ncls; c++)
      if (s->cls[c].size == s->tsize[id]) s->cls[c].q[s->cls[c].n++] = id;
  }
  int left = size - 1, nteams = 0;
  for (int c = 0; c < s->ncls; c++) {
    if (s->cls[c].size > left) return -1; /* check_teams made sure it fits */
    s->cls[c].teams = 1;
    left -= s->cls[c].size;
  }
  for (;;) {
    int best = -1;
    double bl = -1;
    for (int c = 0; c < s->ncls; c++) {
      tclass *k = &s->cls[c];
      if (k->size > left || k->teams >= k->n) continue;
      double load = k->cost / ((double)k->teams * k->size);
      if (load > bl) bl = load, best = c;
    }
    if (best < 0) break;
    s->cls[best].teams++;
    left -= s->cls[best].size;
  }
  int r = 1, big = 0;
  for (int done = 0; done < s->ncls; done++) { /* largest size first */
    int c = -1;
    for (int k = 0; k < s->ncls; k++)
      if (s->cls[k].teams > 0 && (c < 0 || s->cls[k].size > s->cls[c].size)) c = k;
    for (int t = 0; t < s->cls[c].teams; t++, nteams++) {
      s->lead_size[r] = s->cls[c].size;
      for (int m = 0; m < s->cls[c].size; m++) color[r++] = nteams;
    }
    big |= s->cls[c].size > 1;
    s->cls[c].teams = -s->cls[c].teams; /* mark placed */
  }
  for (int c = 0; c < s->ncls; c++) s->cls[c].teams = -s->cls[c].teams;
  if (big && !s->o->quiet) {
    char msg[512] = "";
    for (int c = 0; c < s->ncls; c++) {
      size_t l = strlen(msg);
      snprintf(msg + l, sizeof msg - l, "%s%d team(s) of %d rank(s) for %lld point(s)", c ? ", " : "",
               s->cls[c].teams, s->cls[c].size, (long long)s->cls[c].n);
    }
    ds_log("teams: %s", msg);
    if (left) ds_log("teams: %d worker rank(s) idle (no team size fits them)", left);
  }
  return nteams;
}

static double *g_cost; /* for qsort */
static const ds_summary_row *g_rows;
/* Never-started points first, longest first; then the points that were
 * running when a run died: fewest attempts first, shortest first (the point
 * that killed the job is more likely the big one; the others finish first). */
static int by_queue_order(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  int tx = g_rows[x].attempts > 0, ty = g_rows[y].attempts > 0;
  if (tx != ty) return tx - ty;
  if (tx && g_rows[x].attempts != g_rows[y].attempts)
    return g_rows[x].attempts < g_rows[y].attempts ? -1 : 1;
  if (g_cost[x] != g_cost[y]) return (g_cost[x] > g_cost[y]) == !tx ? -1 : 1;
  return x < y ? -1 : x > y;
}

static int alloc_rows(sched *s, int64_t n) {
  size_t m = n ? (size_t)n : 1;
  s->n = n;
  s->sidx = ds_calloc(m, sizeof *s->sidx);
  s->cost = ds_calloc(m, sizeof *s->cost);
  s->blob = ds_calloc(m, sizeof *s->blob);
  s->bloblen = ds_calloc(m, sizeof *s->bloblen);
  s->queue = ds_calloc(m, sizeof *s->queue);
  free(s->tsize);
  s->tsize = ds_calloc(m, sizeof *s->tsize);
  free(s->lone);
  s->lone = ds_calloc(m, 1);
  if (!s->rows) s->rows = ds_calloc(m, sizeof *s->rows);
  return s->sidx && s->cost && s->blob && s->bloblen && s->queue && s->tsize && s->lone && s->rows
             ? DS_OK
             : DS_ENOMEM;
}

static void free_sched(sched *s) {
  for (int64_t i = 0; s->blob && i < s->n; i++) free(s->blob[i]);
  free(s->blob);
  free(s->bloblen);
  free(s->sidx);
  free(s->cost);
  free(s->rows);
  free(s->queue);
  free(s->tsize);
  free(s->lone);
  free(s->parked);
  for (int c = 0; s->cls && c < s->ncls; c++) free(s->cls[c].q);
  free(s->cls);
  free(s->lead_size);
}

/* A point that will not run: failed with reason, journaled (no series). */
static int fail_unrun(sched *s, ds_summary_row *r, const char *reason) {
  r->team_size = s->nworkers ? s->tsize[r->id] : 1; /* the team it would have had */
  r->status = DS_ST_FAILED;
  r->outcome = DS_OUT_FAILED;
  r->rank = -1;
  snprintf(r->reason, sizeof r->reason, "%s", reason);
  if (!s->o->quiet) ds_warn("point %lld failed without running: %s", (long long)r->id, r->reason);
  ds_traj none; /* written like a point that failed in its worker: no series */
  ds_traj_init(&none);
  return ds_store_write_point(s->store, r, &none);
}

/* Queue every unfinished row (by_queue_order); count the finished ones. A
 * row left running was running when a run died: that attempt counts (it was
 * counted when the point was handed out), and after max_attempts the point
 * ends failed. A point whose memory estimate does not fit a rank ends
 * failed without running. */
static int build_queue(sched *s) {
  int64_t died = 0;
  for (int64_t i = 0; i < s->n; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(s->sw, s->sidx[i], &p));
    s->cost[i] = p.cost;
    s->tsize[i] = point_team(s->o, &p.cfg, s->nworkers);
    ds_summary_row *r = &s->rows[i];
    if (!is_final(r->status)) {
      char why[256], est[32], has[32];
      if (r->status == DS_ST_RUNNING) {
        r->status = DS_ST_PENDING;
        r->rank = -1;
        died++;
        DS_TRY(ds_store_write_row(s->store, r));
      }
      ds_fmt_bytes(est, sizeof est, ds_point_mem_bytes(&p.cfg));
      ds_fmt_bytes(has, sizeof has, s->has);
      if (r->attempts >= s->max_attempts) {
        snprintf(why, sizeof why, "killed while running, %d attempts; estimated %s, this rank has %s",
                 r->attempts, est, has);
        DS_TRY(fail_unrun(s, r, why));
      } else if (ds_point_misfit(&p.cfg, s->nworkers ? s->tsize[i] : 1, s->has, s->has_why, why,
                                 sizeof why)) {
        DS_TRY(fail_unrun(s, r, why));
      } else if (r->attempts > 0 && r->attempts + 1 >= s->max_attempts) {
        s->lone[i] = 1; /* its last attempt runs alone, so a death names it */
      }
    }
    if (is_final(r->status)) {
      s->nfinal++;
      s->ndone += r->status == DS_ST_DONE;
      s->ndiv += r->status == DS_ST_DIVERGED;
      s->nfail += r->status == DS_ST_FAILED;
    } else {
      s->queue[s->qn++] = i;
    }
  }
  s->final0 = s->nfinal;
  if (died && !s->o->quiet)
    ds_log("%lld point(s) were running when the last run died: their attempt counts (--max-attempts "
           "%d); they run after the points not tried yet", (long long)died, s->max_attempts);
  g_cost = s->cost;
  g_rows = s->rows;
  qsort(s->queue, s->qn, sizeof *s->queue, by_queue_order);
  g_cost = NULL;
  g_rows = NULL;
  return DS_OK;
}

/* The head of a queue, unless a lone row blocks it: -2 = wait (a lone row
 * runs, or the head is lone and other points run). */
static int64_t take_head(sched *s, int64_t *q, int64_t n, int64_t *head) {
  if (s->fatal || s->draining || g_stop || *head >= n) return -1;
  int64_t id = q[*head];
  if (s->lone_running || (s->lone[id] && s->nrunning > 0)) return -2;
  (*head)++;
  return id;
}

static int64_t next_point(sched *s) { return take_head(s, s->queue, s->qn, &s->qhead); }

/* The next point for a team of tsz ranks: the longest of that size. */
static int64_t next_point_for(sched *s, int tsz) {
  for (int c = 0; c < s->ncls; c++) {
    tclass *k = &s->cls[c];
    if (k->size == tsz) return take_head(s, k->q, k->n, &k->head);
  }
  return -1;
}

/* A point a worker stopped goes back to the front of the queue. */
static void requeue(sched *s, int64_t id) {
  for (int c = 0; s->cls && id >= 0 && id < s->n && c < s->ncls; c++) {
    tclass *k = &s->cls[c];
    if (k->size != s->tsize[id]) continue;
    if (k->head > 0) k->q[--k->head] = id;
    return;
  }
  if (s->qhead > 0) s->queue[--s->qhead] = id;
}

static void keep_blob(sched *s, int64_t id, const char *b, size_t len) {
  if (id < 0 || id >= s->n) return;
  char *c = malloc(len ? len : 1);
  if (!c) return; /* the journal has it; only this session's reuse is lost */
  memcpy(c, b, len);
  free(s->blob[id]);
  s->blob[id] = c;
  s->bloblen[id] = len;
}

/* ---- store: create, or resume / extend -------------------------------------------- */

static int make_meta_and_create(sched *s, const char *hosts, int nranks) {
  const ds_sweep *sw = s->sw;
  int na = sw->naxes;
  const char **names = ds_calloc(na + 1, sizeof *names), **paths = ds_calloc(na + 1, sizeof *paths);
  double *vals = ds_calloc((size_t)s->n * (na ? na : 1) + 1, sizeof *vals);
  int rc = names && paths && vals ? DS_OK : DS_ENOMEM;
  for (int a = 0; rc == DS_OK && a < na; a++) {
    names[a] = sw->axes[a].name;
    paths[a] = sw->axes[a].path;
  }
  for (int64_t i = 0; rc == DS_OK && i < s->n; i++) point_axis_vals(sw, s->sidx[i], vals + i * na);
  char start[32], ihash[17] = "";
  ds_iso_time(start, sizeof start);
  char *inputs = NULL; /* issue 11: the input files' content, recorded at create */
  uint64_t ih = 0;
  if (rc == DS_OK && !s->store) rc = ds_sweep_inputs_hash(sw, &inputs, &ih);
  snprintf(ihash, sizeof ihash, "%016llx", (unsigned long long)ih);
  ds_store_meta m = {
      .sweep_name = sw->name, .sweep_text = sw->text, .sweep_path = sw->path,
      .sweep_hash = sw->hash, .dynsweep_version = DYNSWEEP_VERSION,
      .library_versions = s->o->library_versions ? s->o->library_versions : "",
      .hosts = hosts, .start_time = start, .blas_kernel = ds_blas_kernel(), .nranks = nranks,
      .naxes = na, .axis_names = names, .axis_paths = paths, .npoints = s->n,
      .point_axis_vals = vals, .inputs = inputs, .inputs_hash = inputs ? ihash : NULL};
  if (rc == DS_OK && !s->store) rc = ds_store_create(s->o->store_path, &m, s->rows, &s->store);
  else if (rc == DS_OK) rc = ds_store_extend(s->store, &m, s->rows);
  free(names);
  free(paths);
  free(vals);
  free(inputs);
  return rc;
}

/* Issue 11: the hash recorded for path in an inputs list ("PATH\tSIZE\tHASH"
 * lines), or "none". */
static void input_hash_of(const char *list, const char *path, size_t plen, char out[17]) {
  snprintf(out, 17, "none");
  for (const char *l = list; l && *l;) {
    size_t len = strcspn(l, "\n");
    if (len > plen + 17 && !strncmp(l, path, plen) && l[plen] == '\t') snprintf(out, 17, "%.16s", l + len - 16);
    l += len + (l[len] == '\n');
  }
}

/* Warns for each input file whose content differs from what the store
 * recorded when it was created. */
static void warn_inputs_changed(const char *old, const char *now) {
  for (const char *l = now; *l;) {
    size_t len = strcspn(l, "\n"), plen = strcspn(l, "\t");
    char was[17], is[17];
    input_hash_of(old, l, plen, was);
    input_hash_of(now, l, plen, is);
    if (plen < len && strcmp(was, is))
      ds_warn("input %.*s changed since the store was created (hash %s -> %s); finished points used "
              "the old content", (int)plen, l, was, is);
    l += len + (l[len] == '\n');
  }
}

static int create_new(sched *s, const char *hosts, int nranks) {
  DS_TRY(alloc_rows(s, ds_sweep_npoints(s->sw)));
  for (int64_t i = 0; i < s->n; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(s->sw, i, &p));
    s->sidx[i] = i;
    fill_row(&s->rows[i], i, &p);
  }
  return make_meta_and_create(s, hosts, nranks);
}

/* Why the sweep file sw cannot continue the store whose sweep is old (rows
 * and their axis values as stored); "" if it can. map gets each row's point
 * index in sw. */
static void compare_sweeps(const ds_sweep *old, const ds_sweep *sw, const double *vals,
                           int naxes, char **names, const ds_summary_row *rows, int64_t n,
                           int64_t *map, char *why, size_t wn) {
  why[0] = 0;
  if (strcmp(old->name, sw->name) != 0) {
    snprintf(why, wn, "the store's sweep is named '%s', the sweep file's '%s'", old->name, sw->name);
    return;
  }
  if (old->seed != sw->seed) {
    snprintf(why, wn, "seed %llu in the store, %llu in the sweep file",
             (unsigned long long)old->seed, (unsigned long long)sw->seed);
    return;
  }
  int same_axes = naxes == sw->naxes && old->naxes == sw->naxes;
  for (int a = 0; same_axes && a < sw->naxes; a++)
    same_axes = !strcmp(old->axes[a].path, sw->axes[a].path) && !strcmp(names[a], sw->axes[a].name);
  if (!same_axes) {
    size_t k = (size_t)snprintf(why, wn, "the grid axes differ (store:");
    for (int a = 0; a < old->naxes && k < wn; a++)
      k += (size_t)snprintf(why + k, wn - k, " %s", old->axes[a].name);
    if (k < wn) k += (size_t)snprintf(why + k, wn - k, "; sweep file:");
    for (int a = 0; a < sw->naxes && k < wn; a++)
      k += (size_t)snprintf(why + k, wn - k, " %s", sw->axes[a].name);
    if (k < wn) snprintf(why + k, wn - k, ")");
    return;
  }
  if (ds_sched_map_rows(sw, vals, rows, n, map) < n) {
    for (int64_t i = 0; i < n; i++) {
      if (map[i] >= 0) continue;
      if (rows[i].replica >= sw->replicas) {
        snprintf(why, wn, "replicas went down from %d to %d", old->replicas, sw->replicas);
        return;
      }
      for (int a = 0; a < sw->naxes; a++) {
        double v = vals[i * sw->naxes + a];
        int k = 0;
        while (k < sw->axes[a].nvals && memcmp(&sw->axes[a].val[k], &v, sizeof v) != 0) k++;
        if (k == sw->axes[a].nvals) {
          snprintf(why, wn, "grid value %.17g of axis %s (point %lld) is gone from the sweep file",
                   v, sw->axes[a].name, (long long)rows[i].id);
          return;
        }
      }
    }
    snprintf(why, wn, "some of its points are not in the sweep file");
    return;
  }
  if (old->hash == sw->hash) return;
  /* grid values were added or reordered: every old point must still mean
   * exactly the same configuration */
  int64_t *omap = ds_calloc(n ? (size_t)n : 1, sizeof *omap);
  if (!omap) {
    snprintf(why, wn, "out of memory comparing the sweeps");
    return;
  }
  ds_sched_map_rows(old, vals, rows, n, omap);
  static const char *const sect[] = {"model", "data", "loss", "optimizer", "train", "record"};
  for (int64_t i = 0; i < n && !why[0]; i++) {
    ds_point po, pn;
    if (omap[i] < 0 || ds_sweep_point(old, omap[i], &po) != DS_OK ||
        ds_sweep_point(sw, map[i], &pn) != DS_OK) {
      snprintf(why, wn, "point %lld of the store cannot be found in its own sweep", (long long)i);
      break;
    }
    const void *a[] = {&po.cfg.model, &po.cfg.data, &po.cfg.loss, &po.cfg.optimizer, &po.cfg.train,
                       &po.cfg.record};
    const void *b[] = {&pn.cfg.model, &pn.cfg.data, &pn.cfg.loss, &pn.cfg.optimizer, &pn.cfg.train,
                       &pn.cfg.record};
    const size_t sz[] = {sizeof po.cfg.model, sizeof po.cfg.data, sizeof po.cfg.loss,
                         sizeof po.cfg.optimizer, sizeof po.cfg.train, sizeof po.cfg.record};
    for (int k = 0; k < 6; k++)
      if (memcmp(a[k], b[k], sz[k]) != 0) {
        snprintf(why, wn, "settings in section '%s' changed (point %lld would not mean the same "
                          "run any more)", sect[k], (long long)i);
        break;
      }
  }
  free(omap);
}

/* Reads an existing store's sweep and grid (read-only), decides whether sw
 * continues it, then resumes it (and extends it with sw's new points). */
static int resume_existing(sched *s) {
  const char *path = s->o->store_path;
  ds_store *r = NULL;
  ds_summary_row *rows = NULL;
  int64_t n = 0, np = 0;
  char *text = NULL, **names = NULL;
  double *vals = NULL;
  int naxes = 0, have_old = 0;
  ds_sweep old;
  int rc = ds_store_open(path, &r);
  if (rc == DS_EINPUT) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ds_errmsg());
    return ds_fail(DS_EINPUT, "%s; refusing to use it as the store (it was left untouched)", msg);
  }
  if (rc == DS_OK) rc = ds_store_read_summary(r, &rows, &n);
  if (rc == DS_OK) rc = ds_store_sweep_text(r, &text);
  if (rc == DS_OK) rc = ds_store_read_axes(r, &naxes, &names, &vals, &np);
  if (rc == DS_OK && np != n) rc = ds_fail(DS_EIO, "%s: /grid and /summary disagree", path);
  char state[32] = "";
  if (rc == DS_OK && ds_store_attr(r, "run_state", state, sizeof state) != DS_OK) ds_clear_error();
  char old_ihash[17] = "", *old_inputs = ds_calloc(8192, 1), *inputs = NULL;
  uint64_t ih = 0;
  if (rc == DS_OK && !old_inputs) rc = DS_ENOMEM;
  if (rc == DS_OK && (ds_store_attr(r, "inputs_hash", old_ihash, sizeof old_ihash) != DS_OK ||
                      ds_store_attr(r, "inputs", old_inputs, 8192) != DS_OK))
    ds_clear_error(), old_ihash[0] = 0; /* a store made before issue 11 */
  if (rc == DS_OK) rc = ds_sweep_inputs_hash(s->sw, &inputs, &ih);
  char new_ihash[17];
  snprintf(new_ihash, sizeof new_ihash, "%016llx", (unsigned long long)ih);
  int inputs_changed = rc == DS_OK && strcmp(old_ihash, new_ihash) != 0;
  if (rc == DS_OK) {
    rc = ds_sweep_parse(path, text, &old);
    if (rc != DS_OK) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", ds_errmsg());
      rc = ds_fail(DS_EINPUT, "%s: the sweep stored in it cannot be read: %s", path, msg);
    }
    have_old = rc == DS_OK;
  }
  ds_store_close(r);
  free(text);
  int64_t *map = NULL;
  char why[768] = "";
  if (rc == DS_OK && !(map = ds_calloc(n ? (size_t)n : 1, sizeof *map))) rc = DS_ENOMEM;
  if (rc == DS_OK) compare_sweeps(&old, s->sw, vals, naxes, names, rows, n, map, why, sizeof why);
  if (rc == DS_OK && why[0])
    rc = ds_fail(DS_EINPUT, "%s: made by a different sweep than %s: %s. A store continues only "
                            "the sweep that made it, or that sweep with grid values (or replicas) "
                            "added; nothing was changed. Use another -o path for a new sweep.",
                 path, s->sw->path, why);
  if (rc == DS_OK && inputs_changed && old_ihash[0]) warn_inputs_changed(old_inputs, inputs);
  int extend = rc == DS_OK && (old.hash != s->sw->hash || ds_sweep_npoints(s->sw) != n);
  int complete = rc == DS_OK && !extend && !strcmp(state, "complete");
  for (int64_t i = 0; complete && i < n; i++)
    complete = is_final(rows[i].status) && !(s->o->retry_failed && rows[i].status == DS_ST_FAILED);
  if (have_old) ds_sweep_free(&old);
  for (int a = 0; names && a < naxes; a++) free(names[a]);
  free(names);
  free(vals);
  free(rows);
  rows = NULL;
  if (complete) { /* nothing to do: not even the writer lock (read-only media) */
    s->nothing_to_do = 1;
    free(map);
    free(old_inputs);
    free(inputs);
    ds_store_tidy(path);
    return DS_OK;
  }
  /* the store's current rows (the journal of a killed run replayed) */
  if (rc == DS_OK) rc = ds_store_resume(path, &s->store);
  if (rc == DS_OK && inputs_changed) rc = ds_store_set_inputs(s->store, inputs, new_ihash);
  free(old_inputs);
  free(inputs);
  s->resumed = rc == DS_OK;
  if (rc == DS_OK) rc = ds_store_read_summary(s->store, &rows, &n);
  int64_t nsw = ds_sweep_npoints(s->sw);
  if (rc == DS_OK) {
    s->rows = rows;
    rows = NULL;
    if (extend) {
      ds_summary_row *grown = realloc(s->rows, (size_t)(nsw ? nsw : 1) * sizeof *grown);
      if (!grown) rc = ds_fail(DS_ENOMEM, "out of memory");
      else s->rows = grown;
    }
  }
  if (rc == DS_OK) rc = alloc_rows(s, extend ? nsw : n);
  if (rc == DS_OK) {
    char *used = ds_calloc(nsw ? (size_t)nsw : 1, 1);
    if (!used) rc = DS_ENOMEM;
    for (int64_t i = 0; rc == DS_OK && i < n; i++) {
      s->sidx[i] = map[i];
      used[map[i]] = 1;
      s->rows[i].combo = map[i] / s->sw->replicas;
    }
    int64_t k = n;
    for (int64_t j = 0; rc == DS_OK && extend && j < nsw; j++) {
      if (used[j]) continue;
      ds_point p;
      rc = ds_sweep_point(s->sw, j, &p);
      s->sidx[k] = j;
      fill_row(&s->rows[k], k, &p);
      k++;
    }
    free(used);
    if (rc == DS_OK && extend) {
      s->n = k;
      ds_log("%s: the sweep file adds grid values: %lld new point(s) (ids %lld..%lld); the %lld "
             "old points keep their ids", path, (long long)(k - n), (long long)n,
             (long long)k - 1, (long long)n);
      rc = make_meta_and_create(s, "", 0);
    }
  }
  free(rows);
  free(map);
  return rc;
}

/* Checkpoints of unfinished points; rows left "running" by a killed run
 * become pending again. */
static int load_unfinished(sched *s) {
  int64_t nblob = 0;
  for (int64_t i = 0; i < s->n; i++) {
    ds_summary_row *r = &s->rows[i];
    if (is_final(r->status)) continue;
    char *b = NULL;
    size_t len = 0;
    int rc = ds_store_read_ckpt(s->store, i, &b, &len);
    if (rc == DS_OK) {
      s->blob[i] = b;
      s->bloblen[i] = len;
      nblob++;
    } else if (rc != DS_EINPUT) { /* damaged: never resumed from */
      ds_warn("%s; not resuming from it, point %lld restarts from step 0", ds_errmsg(), (long long)i);
      ds_clear_error();
    }
  }
  ds_clear_error();
  int64_t todo = s->n - s->nfinal;
  if (s->resumed || nblob > 0)
    ds_log("resuming %s: %lld of %lld points finished, %lld to run (%lld from a checkpoint)",
           s->o->store_path, (long long)s->nfinal, (long long)s->n, (long long)todo,
           (long long)nblob);
  return DS_OK;
}

static double attr_num(ds_store *st, const char *name) {
  char buf[64];
  if (ds_store_attr(st, name, buf, sizeof buf) != DS_OK) {
    ds_clear_error();
    return 0;
  }
  return strtod(buf, NULL);
}

/* --retry failed: failed rows become pending with no attempts (their old
 * series are superseded when they finish again); the others are kept. */
static int reopen_failed(sched *s) {
  int64_t k = 0;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->rows[i].status != DS_ST_FAILED) continue;
    ds_point p;
    DS_TRY(ds_sweep_point(s->sw, s->sidx[i], &p));
    fill_row(&s->rows[i], s->rows[i].id, &p);
    DS_TRY(ds_store_reopen_row(s->store, &s->rows[i]));
    k++;
  }
  if (!s->o->quiet) ds_log("--retry failed: %lld failed point(s) to run again", (long long)k);
  return k ? ds_store_publish(s->store, 1) : DS_OK;
}

static int prepare(sched *s, const char *hosts, int nranks) {
  struct stat st;
  int rc;
  if (lstat(s->o->store_path, &st) == 0) rc = resume_existing(s);
  else rc = create_new(s, hosts, nranks);
  if (rc == DS_OK && s->nothing_to_do) {
    if (!s->o->quiet) ds_log("%s: nothing to do, all points finished", s->o->store_path);
    return DS_OK;
  }
  if (rc == DS_OK && s->o->retry_failed) rc = reopen_failed(s);
  if (rc == DS_OK) rc = build_queue(s);
  if (rc == DS_OK && s->nfinal == s->n) {
    s->nothing_to_do = 1;
    if (!s->o->quiet)
      ds_log("%s: nothing to do, all %lld points finished", s->o->store_path, (long long)s->n);
    char state[32] = "";
    if (ds_store_attr(s->store, "run_state", state, sizeof state) != DS_OK) ds_clear_error();
    if (strcmp(state, "complete") != 0) { /* killed after its last point: finish it now */
      char end[32];
      ds_iso_time(end, sizeof end);
      rc = ds_store_finish(s->store, end, attr_num(s->store, "rank0_cpu_s"),
                           attr_num(s->store, "wall_s"));
    }
    return rc;
  }
  if (rc == DS_OK) rc = load_unfinished(s);
  if (rc == DS_OK) {
    s->prev_wall = attr_num(s->store, "wall_s");
    s->prev_cpu = attr_num(s->store, "rank0_cpu_s");
    ds_store_set_publish_every(s->store, s->o->publish_every);
    ds_store_set_run(s->store, "running", (double)time(NULL), s->final0);
    rc = ds_store_publish(s->store, 1); /* the session is visible at once */
  }
  return rc;
}

/* ---- progress --------------------------------------------------------------------- */

static void progress(sched *s, const ds_summary_row *r, int force) {
  if (s->o->quiet) return;
  double now = ds_now(), el = now - s->t0;
  double rate = s->session_done / (el > 0 ? el : 1e-9);
  int64_t left = s->n - s->nfinal, pending = left - s->nrunning;
  double eta = rate > 0 ? left / rate : 0;
  char etas[32];
  if (!(rate > 0)) snprintf(etas, sizeof etas, "?");
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

/* ---- results --------------------------------------------------------------------- */

static void finish_point(sched *s, int64_t id, const ds_point_result *res, const ds_traj *tr) {
  if (id < 0 || id >= s->n) return;
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
  if (!s->fatal && ds_store_write_point(s->store, r, tr) != DS_OK) set_fatal(s);
  if (s->fatal) return;
  free(s->blob[id]);
  s->blob[id] = NULL;
  s->bloblen[id] = 0;
  s->nfinal++;
  s->session_done++;
  s->ndone += r->status == DS_ST_DONE;
  s->ndiv += r->status == DS_ST_DIVERGED;
  s->nfail += r->status == DS_ST_FAILED;
  progress(s, r, 0);
}

/* A result: final (write it) or pending (the worker stopped it). */
static void take_result(sched *s, const ds_point_result *res, const ds_traj *tr) {
  int64_t id = res->id;
  s->nrunning--;
  if (id >= 0 && id < s->n && s->lone[id]) s->lone_running = 0;
  if (res->status == DS_ST_PENDING || res->status == DS_ST_RUNNING) {
    requeue(s, id);
    if (id >= 0 && id < s->n) {
      s->rows[id].status = DS_ST_PENDING;
      if (s->rows[id].attempts > 0) s->rows[id].attempts--; /* handed back: not an attempt */
      if (!s->fatal && ds_store_write_row(s->store, &s->rows[id]) != DS_OK) set_fatal(s);
    }
    start_drain(s, "a worker stopped its point (drain signal)");
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
  if (!s->fatal && ds_store_write_row(s->store, &s->rows[id]) != DS_OK) set_fatal(s);
}

/* Periodic work of rank 0: drain signal, publish, progress. */
static void tick(sched *s) {
  if (g_stop && !s->draining) start_drain(s, "drain signal");
  if (!s->fatal && ds_store_commit(s->store) != DS_OK) set_fatal(s);
  if (!s->fatal && ds_store_publish(s->store, 0) != DS_OK) set_fatal(s);
  progress(s, NULL, 0);
}

/* ---- running a point (any rank) ------------------------------------------------------ */

static void run_one(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
                    ds_traj *tr, ds_point_result *res, const ds_ckpt *ck) {
  ds_point p;
  ds_traj_init(tr);
  memset(res, 0, sizeof *res);
  int rc = ds_sweep_point(sw, sidx, &p);
  p.id = id; /* the store id: stable when a sweep is extended (checkpoints name it) */
  if (rc == DS_OK) rc = ds_worker_run_point(sw, &p, team, tr, res, ck);
  res->id = id;
  res->rank = rank;
  if (rc != DS_OK) {
    res->status = DS_ST_FAILED;
    snprintf(res->reason, sizeof res->reason, "%s", ds_errmsg());
  }
}

typedef struct {
  MPI_Comm comm;
  int64_t id;
  sched *s; /* -n 1: rank 0 itself */
} ckpt_ctx;

static int save_remote(void *arg, int64_t point, const char *blob, size_t len) {
  ckpt_ctx *c = arg;
  (void)point;
  if (len > (size_t)INT_MAX - sizeof(int64_t)) return 1;
  char *m = malloc(len + sizeof(int64_t));
  if (!m) return 1;
  memcpy(m, &c->id, sizeof c->id);
  memcpy(m + sizeof c->id, blob, len);
  MPI_Send(m, (int)(len + sizeof c->id), MPI_BYTE, 0, TAG_CKPT, c->comm);
  free(m);
  return 0;
}

static int save_local(void *arg, int64_t point, const char *blob, size_t len) {
  ckpt_ctx *c = arg;
  sched *s = c->s;
  (void)point;
  if (s->fatal) return 1;
  if (ds_store_write_ckpt(s->store, c->id, blob, len) != DS_OK || ds_store_sync(s->store) != DS_OK) {
    set_fatal(s);
    return 1;
  }
  keep_blob(s, c->id, blob, len);
  tick(s);
  return 0;
}

static void init_ckpt(ds_ckpt *ck, const ds_run_opts *o, ckpt_ctx *c, int local,
                      const char *resume, size_t resume_len) {
  memset(ck, 0, sizeof *ck);
  ck->every_s = o->checkpoint_every > 0 ? o->checkpoint_every : 0;
  ck->stop = (volatile int *)&g_stop;
  ck->save = local ? save_local : save_remote;
  ck->arg = c;
  ck->resume = resume_len ? resume : NULL;
  ck->resume_len = resume_len;
}

/* ---- rank 0 ---------------------------------------------------------------------------- */

/* Waits for a message without burning a core: probe, then sleep with an
 * exponential back-off from 50 us to at most 20 ms. Before sleeping, the
 * journal gets its group commit (fsync at most every 0.5 s, ds_store_commit).
 * Returns 0 after ~0.25 s without a message, so the
 * caller can do its periodic work. */
static int wait_message(sched *s, MPI_Comm comm, MPI_Status *st) {
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
    if (!s->fatal && ds_store_commit(s->store) != DS_OK) set_fatal(s); /* group commit */
    if (ds_now() - t0 > 0.25) return 0;
    ds_sleep(nap);
    nap = nap * 2 < cap ? nap * 2 : cap;
  }
}

static char *recv_bytes(MPI_Comm comm, int src, int tag, int *len) {
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
  char *buf = recv_bytes(comm, src, TAG_TRAJ, &len);
  ds_traj_init(tr);
  if (!buf) return DS_ENOMEM;
  int rc = ds_traj_unpack(buf, len, tr);
  free(buf);
  return rc;
}

/* Hands worker dst its next point, or stop (-1); a worker that must wait
 * for a lone point is parked (served again by unpark). */
static void assign(sched *s, MPI_Comm comm, int dst, int *active) {
  int64_t id = s->cls ? next_point_for(s, s->lead_size[dst]) : next_point(s);
  if (id == -2) {
    s->parked[s->nparked++] = dst;
    return;
  }
  int64_t hdr[3] = {id, id >= 0 ? s->sidx[id] : -1, id >= 0 ? (int64_t)s->bloblen[id] : 0};
  if (id >= 0 && !s->blob[id]) hdr[2] = 0;
  if (id >= 0) {
    s->rows[id].team_size = s->tsize[id];
    mark_running(s, id, dst);
  }
  MPI_Send(hdr, 3, MPI_INT64_T, dst, TAG_ASSIGN, comm);
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

static int serve(sched *s, MPI_Comm comm, int nworkers, int size) {
  int active = nworkers;
  s->parked = ds_calloc((size_t)size, sizeof *s->parked);
  if (!s->parked) set_fatal(s); /* no work goes out, so nobody is parked */
  while (active > 0) {
    MPI_Status st;
    int got = wait_message(s, comm, &st);
    tick(s);
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
        set_fatal(s);
      } else {
        take_result(s, &res, &tr);
      }
      ds_traj_free(&tr);
    } else if (st.MPI_TAG == TAG_CKPT) {
      int len;
      char *buf = recv_bytes(comm, src, TAG_CKPT, &len);
      int64_t id = -1;
      if (buf && len >= (int)sizeof id) {
        memcpy(&id, buf, sizeof id);
        if (!s->fatal && ds_store_write_ckpt(s->store, id, buf + sizeof id, len - sizeof id) != DS_OK)
          set_fatal(s);
        else keep_blob(s, id, buf + sizeof id, len - sizeof id);
      }
      free(buf);
      continue; /* no reply: the worker is still training */
    } else {
      return ds_fail(DS_EINTERNAL, "unexpected message tag %d from rank %d", st.MPI_TAG, src);
    }
    assign(s, comm, src, &active);
    if (s->nparked) unpark(s, comm, &active);
  }
  return DS_OK;
}

static void serve_alone(sched *s) {
  ds_team team;
  if (ds_team_init(&team, MPI_COMM_SELF) != DS_OK) {
    set_fatal(s);
    return;
  }
  for (int64_t id; tick(s), (id = next_point(s)) >= 0;) {
    ds_point_result res;
    ds_traj tr;
    ds_ckpt ck;
    ckpt_ctx c = {MPI_COMM_SELF, id, s};
    s->rows[id].team_size = 1; /* -n 1: whatever ranks_per_point asked for */
    mark_running(s, id, 0);
    /* the bar says "run 1" while rank 0 trains a point that takes a while
     * (estimated > 1e8 FLOP), not around every short one */
    if (s->tty && (s->cost[id] > 1e8 || ds_now() - s->last_prog > 0.2)) progress(s, NULL, 1);
    init_ckpt(&ck, s->o, &c, 1, s->blob[id], s->bloblen[id]);
    run_one(s->sw, id, s->sidx[id], &team, 0, &tr, &res, &ck);
    take_result(s, &res, &tr);
    ds_traj_free(&tr);
  }
  if (g_stop && !s->draining && s->nfinal < s->n) start_drain(s, "drain signal");
  ds_team_free(&team);
}

/* ---- workers -------------------------------------------------------------------------- */

/* Team members other than the leader: checkpoints go through the leader. */
static int save_none(void *arg, int64_t point, const char *blob, size_t len) {
  (void)arg, (void)point, (void)blob, (void)len;
  return 0;
}

/* A worker team over tcomm (team rank 0 = its leader, the lowest world
 * rank). Only the leader talks to rank 0; it passes each assignment (and the
 * checkpoint to resume from) to the members, every member runs the point,
 * the leader alone sends checkpoints and the result. */
static int work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm) {
  ds_team team;
  int trank;
  MPI_Comm_rank(tcomm, &trank);
  int rc = ds_team_init(&team, tcomm);
  char terr[256];
  snprintf(terr, sizeof terr, "%s", rc == DS_OK ? "" : ds_errmsg());
  if (trank != 0 && rc != DS_OK) return DS_OK; /* the leader fails each point with terr */
  int lead = trank == 0, multi = rc == DS_OK && team.size > 1;
  int zero = 0;
  if (lead) MPI_Send(&zero, 1, MPI_INT, 0, TAG_READY, comm);
  for (;;) {
    int64_t hdr[4] = {-1, -1, 0, 0}; /* id, sweep index, blob length, run it */
    char *blob = NULL;
    int blen = 0;
    if (lead) {
      MPI_Recv(hdr, 3, MPI_INT64_T, 0, TAG_ASSIGN, comm, MPI_STATUS_IGNORE);
      if (hdr[0] >= 0 && hdr[2] > 0) blob = recv_bytes(comm, 0, TAG_BLOB, &blen);
      hdr[2] = blob ? blen : 0;
      hdr[3] = rc == DS_OK && !g_stop; /* the leader decides for the team */
    }
    if (multi) {
      MPI_Bcast(hdr, 4, MPI_INT64_T, 0, team.comm);
      if (hdr[0] >= 0 && hdr[3] && hdr[2] > 0) {
        if (!lead) blob = malloc((size_t)hdr[2]);
        int ok = blob != NULL, all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, team.comm);
        if (all) MPI_Bcast(blob, (int)hdr[2], MPI_BYTE, 0, team.comm);
        else hdr[3] = -1; /* out of memory somewhere: fail the point on every member */
        blen = (int)hdr[2];
      }
    }
    if (hdr[0] < 0) break;
    ds_point_result res;
    ds_traj tr;
    if (hdr[3] > 0) {
      ds_ckpt ck;
      ckpt_ctx c = {comm, hdr[0], NULL};
      init_ckpt(&ck, o, &c, 0, blob, blob ? (size_t)blen : 0);
      if (!lead) {
        ck.save = save_none;
        ck.stop = NULL;
      }
      run_one(sw, hdr[0], hdr[1], &team, rank, &tr, &res, &ck);
    } else { /* stopping: hand the point back; or team setup failed */
      memset(&res, 0, sizeof res);
      ds_traj_init(&tr);
      res.id = hdr[0];
      res.rank = rank;
      res.status = hdr[3] == 0 && rc == DS_OK ? DS_ST_PENDING : DS_ST_FAILED;
      snprintf(res.reason, sizeof res.reason, "%s",
               rc != DS_OK ? terr : hdr[3] < 0 ? "out of memory for the checkpoint on a team member" : "");
    }
    free(blob);
    if (lead) {
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
    }
    ds_traj_free(&tr);
  }
  if (rc == DS_OK) ds_team_free(&team);
  return DS_OK;
}

/* ---- entry ------------------------------------------------------------------------------ */

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

/* After the work: finish (complete) or record the session (drained,
 * stopped), report, close. */
static int wrap_up(sched *s, int size, double cpu, double wall) {
  int rc = DS_OK;
  int complete = s->nfinal == s->n;
  char end[32];
  ds_iso_time(end, sizeof end);
  if (s->tty && !s->o->quiet) {
    progress(s, NULL, 1);
    ds_console_bar_end();
  }
  if (!complete)
    ds_store_set_run(s->store, s->fatal ? "stopped" : "drained", (double)time(NULL), s->final0);
  /* ds_store_finish publishes the last results; the wall_s and rank0_cpu_s
   * it records include that publish up to the closing of the file. After a
   * drain signal the watchdog allows for it (a slow publish is not a wedge). */
  ds_store_stats st;
  ds_store_get_stats(s->store, &st);
  ds_drain_watchdog_extend(30 + 20 * st.last_publish_s);
  int frc = ds_store_finish(s->store, complete ? end : NULL, s->prev_cpu + cpu, s->prev_wall + wall);
  if (frc != DS_OK && !s->fatal) set_fatal(s);
  ds_store_get_stats(s->store, &st);
  int crc = ds_store_close(s->store);
  s->store = NULL;
  if (crc != DS_OK && !s->fatal) set_fatal(s);
  if (s->fatal) return ds_fail(DS_EIO, "%s", s->fatal_msg);
  if (!s->o->quiet) {
    ds_log("%s %lld points in %.2f s: %lld done, %lld diverged, %lld failed of %lld; rank 0 CPU "
           "%.3f s (%.1f%% of a core)%s", complete ? "finished" : "drained after",
           (long long)s->session_done, wall, (long long)s->ndone, (long long)s->ndiv,
           (long long)s->nfail, (long long)s->n, cpu, 100.0 * cpu / (wall > 0 ? wall : 1),
           size == 1 ? ", rank 0 also trained" : "");
    ds_log("store: %lld publishes, %.3f s (%.2f%% of wall; copy %.3f s, fsync+rename %.3f s, the "
           "rest HDF5 writing; last %.1f ms, file %.2f MB); journal %lld records, %.2f MB, %.3f s "
           "writing+fsync (%.2f%% of wall)", (long long)st.publishes, st.publish_s,
           100 * st.publish_s / (wall > 0 ? wall : 1), st.copy_s, st.sync_s,
           1e3 * st.last_publish_s, st.file_bytes * 1e-6, (long long)st.journal_records,
           st.journal_bytes * 1e-6, st.journal_s, 100 * st.journal_s / (wall > 0 ? wall : 1));
    if (!complete)
      ds_log("drained: %lld point(s) left; run the same command again to resume",
             (long long)(s->n - s->nfinal));
    if (s->nfail)
      ds_warn("%lld point(s) failed ('dynsweep ls %s' says why; 'dynsweep run ... --retry failed' "
              "runs them again)", (long long)s->nfail, s->o->store_path);
  }
  return rc;
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
  char *hosts = gather_hosts(comm, rank, size);
  sched s = {.sw = sw, .o = o};
  s.tty = rank == 0 && !o->quiet && ds_console_open_bar();
  s.nworkers = size - 1;
  s.max_attempts = o->max_attempts > 0 ? o->max_attempts : 2;
  s.has = rank_has(o, comm, rank, size, s.has_why, sizeof s.has_why);
  if (rank == 0 && !o->quiet) {
    char hb[32];
    ds_fmt_bytes(hb, sizeof hb, s.has);
    ds_log("memory: a rank has %s (%s)", hb, s.has_why);
  }
  if (rank == 0) {
    s.t0 = ds_now();
    rc = check_teams(&s); /* before anything is created */
    if (rc == DS_OK) rc = prepare(&s, hosts ? hosts : "", size);
    if (rc != DS_OK && s.store) {
      ds_store_close(s.store);
      s.store = NULL;
    }
  }
  free(hosts);
  int start[2] = {rc, s.nothing_to_do};
  MPI_Bcast(start, 2, MPI_INT, 0, comm); /* refused: everyone stops, nothing ran */
  if (start[0] != DS_OK || start[1]) {
    int nothing = start[1];
    if (rank == 0 && s.store) ds_store_close(s.store);
    free_sched(&s);
    if (o->drained) *o->drained = 0;
    if (nothing) return DS_OK;
    return rank == 0 ? rc : ds_fail(start[0], "rank 0 could not start the sweep");
  }
  int drained = 0, nteams = 0;
  MPI_Comm tcomm = MPI_COMM_NULL;
  if (size > 1) { /* teams: rank 0 plans, every worker joins its team's communicator */
    int *color = ds_calloc((size_t)size, sizeof *color);
    if (!color) MPI_Abort(comm, 1); /* a few ints; the collectives below need every rank */
    if (rank == 0 && (nteams = plan_teams(&s, size, color)) < 0) {
      ds_fail(DS_ENOMEM, "out of memory planning the worker teams");
      set_fatal(&s);
      nteams = 0;
      for (int r = 0; r < size; r++) color[r] = -1;
    }
    MPI_Bcast(color, size, MPI_INT, 0, comm);
    MPI_Comm_split(comm, color[rank] < 0 ? MPI_UNDEFINED : color[rank], rank, &tcomm);
    free(color);
  }
  if (rank == 0) {
    double cpu0 = ds_cpu_time();
    s.t0 = s.last_prog = ds_now();
    if (size == 1) serve_alone(&s);
    else rc = serve(&s, comm, nteams, size);
    double cpu = ds_cpu_time() - cpu0, wall = ds_now() - s.t0;
    drained = s.nfinal < s.n && !s.fatal;
    int wrc = wrap_up(&s, size, cpu, wall);
    if (rc == DS_OK) rc = wrc;
  } else if (tcomm != MPI_COMM_NULL) {
    rc = work(sw, o, comm, rank, tcomm);
  }
  if (tcomm != MPI_COMM_NULL) MPI_Comm_free(&tcomm);
  int all[2] = {rc, drained};
  MPI_Bcast(all, 2, MPI_INT, 0, comm);
  free_sched(&s);
  if (o->drained) *o->drained = all[0] == DS_OK && all[1];
  return rank == 0 ? rc : (all[0] != DS_OK && rc == DS_OK ? ds_fail(all[0], "rank 0 failed") : rc);
}
