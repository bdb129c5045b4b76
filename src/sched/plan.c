/* plan.c -- which points exist and in what order: the store rows of a sweep,
 * the teams that run them (train.ranks_per_point) and the queue. */
#include "state.h"

void sc_fill_row(ds_summary_row *r, int64_t id, const ds_point *p) {
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
void sc_point_axis_vals(const ds_sweep *sw, int64_t idx, double *out) {
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
int sc_check_teams(sched *s) {
  const ds_sweep *sw = s->run.sw;
  int W = s->nworkers, nsz = 0, sizes[64], maxreq = 1, capped = 0, cap_to = 0;
  int64_t np = ds_sweep_npoints(sw), maxpt = 0;
  double cap_mem = 0;
  int axis = 0;
  for (int a = 0; a < sw->naxes; a++) axis |= !strcmp(sw->axes[a].path, "train.ranks_per_point");
  if (!axis && sw->base.train.ranks_per_point > 0 && np > 1) np = 1; /* one size for all */
  for (int64_t i = 0; i < np; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(sw, i, &p));
    int req = ds_point_team_size(&p.cfg, rank_mem_bytes(s->run.o));
    if (req > maxreq) maxreq = req, maxpt = i;
    if (W < 1) continue;
    if (p.cfg.train.ranks_per_point > 0 && req > W)
      return ds_fail(DS_EINPUT, "%s: ranks_per_point %d (point %lld) needs a team of %d worker "
                     "ranks, but this run has only %d (ranks 1..%d of %d); run with -n %d or more",
                     sw->path, req, (long long)i, req, W, W, W + 1, req + 1);
    int t = point_team(s->run.o, &p.cfg, W);
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
            "teams of %d", capped, cap_mem / 1048576.0, rank_mem_bytes(s->run.o) / 1048576.0, W, cap_to);
  return DS_OK;
}

/* Rank 0, after the queue is built: splits worker ranks 1..size-1 into
 * teams. One team for every size the queue needs, then the remaining ranks
 * go, a team at a time, to the size with the most estimated cost per rank
 * (never more teams of a size than it has points). A team's ranks are on
 * one node (issue 14) unless no node has that many workers; they are given
 * out in rank order within a node, largest teams first. color[r] = team number of world rank
 * r, -1 for rank 0 and idle ranks. Returns the number of teams. */
int sc_plan_teams(sched *s, int size, int *color) {
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
  /* Issue 14: a team never spans nodes (s->node: SLURMD_NODENAME, else the
   * host) unless its size exceeds the worker ranks of every node. room[n]:
   * worker ranks of node n not given to a team yet; pl[]: the teams planned
   * (class, node or -1 = spanning); full[c]: no node has room for class c. */
  int left = size - 1, nteams = 0, np = 0, maxnode = 0, big = 0, ok = 1;
  int *room = ds_calloc((size_t)size, sizeof *room), *pl = ds_calloc(2 * (size_t)size, sizeof *pl),
      *used = ds_calloc((size_t)size, sizeof *used), *full = ds_calloc((size_t)s->ncls + 1, sizeof *full);
  ok = room && pl && used && full;
  for (int r = 1; ok && r < size; r++) room[s->node[r]]++;
  for (int n = 0; ok && n < size; n++) maxnode = room[n] > maxnode ? room[n] : maxnode;
  for (int pass = 0; ok && pass < 2; pass++) /* one team of each size, largest first; then by load */
    for (;;) {
      int best = -1, at = -1;
      double bl = -1;
      for (int c = 0; c < s->ncls; c++) {
        tclass *k = &s->cls[c];
        if (pass == 0 ? k->teams > 0 : k->size > left || full[c] || k->teams >= k->n) continue;
        double load = pass == 0 ? k->size : k->cost / ((double)k->teams * k->size);
        if (load > bl) bl = load, best = c;
      }
      if (best < 0) break;
      int sz = s->cls[best].size;
      if (sz > left) { /* sc_check_teams made sure one team of each size fits */
        ok = 0;
        break;
      }
      for (int n = 0; n < size; n++) /* best fit: the fullest node it fits on */
        if (room[n] >= sz && (at < 0 || room[n] < room[at])) at = n;
      if (at < 0 && sz <= maxnode && pass == 1) {
        full[best] = 1;
        continue;
      }
      if (at < 0 && sz <= maxnode && !s->run.o->quiet)
        ds_warn("teams: no node has %d free worker ranks left; a team of %d spans nodes", sz, sz);
      if (at >= 0) room[at] -= sz;
      for (int m = sz; at < 0 && m > 0;) { /* spanning: from the nodes with the most room */
        int f = 0;
        for (int n = 1; n < size; n++) f = room[n] > room[f] ? n : f;
        int t = room[f] < m ? room[f] : m;
        room[f] -= t, m -= t;
      }
      left -= sz;
      s->cls[best].teams++;
      pl[2 * np] = best, pl[2 * np + 1] = at, np++;
    }
  /* ranks: teams on one node first, then the spanning ones; largest first */
  for (int pass = 0; ok && pass < 2; pass++)
    for (int sz = size; ok && sz >= 1; sz--)
      for (int i = 0; ok && i < np; i++) {
        int c = pl[2 * i], at = pl[2 * i + 1], lead = -1;
        if (s->cls[c].size != sz || (at < 0) != pass) continue;
        for (int r = 1, m = 0; r < size && m < sz; r++)
          if (!used[r] && (at < 0 || s->node[r] == at)) {
            used[r] = 1, color[r] = nteams, m++;
            lead = lead < 0 ? r : lead;
          }
        ok = lead > 0;
        if (ok) s->lead_size[lead] = sz;
        nteams++;
        big |= sz > 1;
        if (at < 0 && !s->run.o->quiet)
          ds_log("teams: a team of %d spans nodes (a node has at most %d worker ranks)", sz, maxnode);
      }
  free(room);
  free(pl);
  free(used);
  free(full);
  if (!ok) return -1;
  if (big && !s->run.o->quiet) {
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

/* Never-started points first, longest first; then the points that were
 * running when a run died: fewest attempts first, shortest first (the point
 * that killed the job is more likely the big one; the others finish first). */
static int by_queue_order(const void *a, const void *b, void *arg) {
  const sched *s = arg;
  const ds_summary_row *rows = s->rows;
  const double *cost = s->cost;
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  int tx = rows[x].attempts > 0, ty = rows[y].attempts > 0;
  if (tx != ty) return tx - ty;
  if (tx && rows[x].attempts != rows[y].attempts)
    return rows[x].attempts < rows[y].attempts ? -1 : 1;
  if (cost[x] != cost[y]) return (cost[x] > cost[y]) == !tx ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* A point that will not run: failed with reason, journaled (no series). */
static int fail_unrun(sched *s, ds_summary_row *r, const char *reason) {
  r->team_size = s->nworkers ? s->tsize[r->id] : 1; /* the team it would have had */
  r->status = DS_ST_FAILED;
  r->outcome = DS_OUT_FAILED;
  r->rank = -1;
  snprintf(r->reason, sizeof r->reason, "%s", reason);
  if (!s->run.o->quiet) ds_warn("point %lld failed without running: %s", (long long)r->id, r->reason);
  ds_traj none; /* written like a point that failed in its worker: no series */
  ds_traj_init(&none);
  return ds_store_write_point(s->run.store, r, &none);
}

/* Queue every unfinished row (by_queue_order); count the finished ones.
 * A row left running was running when a run died (docs/design.md,
 * "Attempts"). A job's death is no evidence against a point: when the last
 * run died, every single-rank point of this run trains in a child process of
 * its worker (s->isolate, --isolate auto), so a point that kills its process
 * kills only its child and fails with the signal, while the job goes on.
 * Single-rank points are failed here only by the crash-loop guard (started
 * 10 x --max-attempts times, each start ended by a job death). Team points
 * (MPI inside the point) cannot run in a child: one that was running when a
 * job died runs alone on its next start, and after --max-attempts starts it
 * ends failed. A point whose memory estimate does not fit a rank ends failed
 * without running. */
int sc_build_queue(sched *s) {
  int64_t died = 0;
  int guard = 10 * s->max_attempts;
  for (int64_t i = 0; i < s->n; i++) {
    if (s->rows[i].status == DS_ST_RUNNING) died++;
  }
  s->died = died;
  ds_probe pr; /* the plan's rates (cached per host; a probe of < 1 s otherwise) */
  ds_probe_get(0, &pr);
  s->est_pending = 0;
  s->isolate = s->run.o->isolate == DS_ISOLATE_ALWAYS || (s->run.o->isolate == DS_ISOLATE_AUTO && died > 0);
  for (int64_t i = 0; i < s->n; i++) {
    ds_point p;
    DS_TRY(ds_sweep_point(s->run.sw, s->sidx[i], &p));
    s->cost[i] = p.cost;
    s->est[i] = ds_point_seconds(&p.cfg, &pr);
    s->nsteps[i] = p.cfg.train.steps;
    s->tsize[i] = point_team(s->run.o, &p.cfg, s->nworkers);
    ds_summary_row *r = &s->rows[i];
    if (!is_final(r->status)) {
      char why[256], est[32], has[32];
      if (r->status == DS_ST_RUNNING) {
        r->status = DS_ST_PENDING;
        r->rank = -1;
        DS_TRY(ds_store_write_row(s->run.store, r));
      }
      /* team points cannot run in a child; with --isolate never no point does
       * (-n 1 runs every point on rank 0, a team of one) */
      int team = (s->nworkers && s->tsize[i] > 1) || s->run.o->isolate == DS_ISOLATE_NEVER;
      ds_fmt_bytes(est, sizeof est, ds_point_mem_bytes(&p.cfg));
      ds_fmt_bytes(has, sizeof has, s->has);
      if (team && r->attempts >= s->max_attempts) {
        snprintf(why, sizeof why, "killed while running, %d attempts; estimated %s, this rank has %s",
                 r->attempts, est, has);
        DS_TRY(fail_unrun(s, r, why));
      } else if (!team && r->attempts >= guard) {
        snprintf(why, sizeof why, "crash-loop guard: %d starts, each ended by a job death "
                 "(--max-attempts %d x 10)", r->attempts, s->max_attempts);
        DS_TRY(fail_unrun(s, r, why));
      } else if (ds_point_misfit(&p.cfg, s->nworkers ? s->tsize[i] : 1, s->has, s->has_why, why,
                                 sizeof why)) {
        DS_TRY(fail_unrun(s, r, why));
      } else if (team && r->attempts > 0 && r->attempts + 1 >= s->max_attempts) {
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
      s->est_pending += s->est[i];
    }
  }
  s->run.done0 = s->nfinal;
  s->est_prior = s->qn ? 2 * s->est_pending / (double)s->qn : 0; /* two average points */
  if (died && !s->run.o->quiet)
    ds_log("%lld point(s) were running when the last run died; they run after the points not "
           "tried yet. %s", (long long)died,
           s->isolate ? "This run trains every single-rank point in a child process of its worker: "
                        "a point fails only if its own process is killed (--isolate)"
                      : "--isolate never: a point that kills its process kills the job again");
  qsort_r(s->queue, s->qn, sizeof *s->queue, by_queue_order, s);
  return DS_OK;
}

/* The head of a queue, unless a lone row blocks it: -2 = wait (a lone row
 * runs, or the head is lone and other points run). */
static int64_t take_head(sched *s, int64_t *q, int64_t n, int64_t *head) {
  if (s->run.fatal || s->run.draining || g_stop || *head >= n) return -1;
  int64_t id = q[*head];
  if (s->lone_running || (s->lone[id] && s->nrunning > 0)) return -2;
  (*head)++;
  return id;
}

int64_t sc_next_point(sched *s) { return take_head(s, s->queue, s->qn, &s->qhead); }

/* The next point for a team of tsz ranks: the longest of that size. */
int64_t sc_next_point_for(sched *s, int tsz) {
  for (int c = 0; c < s->ncls; c++) {
    tclass *k = &s->cls[c];
    if (k->size == tsz) return take_head(s, k->q, k->n, &k->head);
  }
  return -1;
}

/* A point a worker stopped goes back to the front of the queue. */
void sc_requeue(sched *s, int64_t id) {
  for (int c = 0; s->cls && id >= 0 && id < s->n && c < s->ncls; c++) {
    tclass *k = &s->cls[c];
    if (k->size != s->tsize[id]) continue;
    if (k->head > 0) k->q[--k->head] = id;
    return;
  }
  if (s->qhead > 0) s->queue[--s->qhead] = id;
}
