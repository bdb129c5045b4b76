/* workloop.c -- a worker: asks rank 0 for points, runs them (on its team),
 * checkpoints them and sends the results back. */
#include "state.h"
#include "dynsweep/isolate.h"

void sc_run_one(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
                ds_traj *tr, ds_point_result *res, const ds_ckpt *ck) {
  ds_point p;
  ds_traj_init(tr);
  memset(res, 0, sizeof *res);
  ds_test_crash("point", id); /* the test-only fault switch (DYNSWEEP_TEST_CRASH) */
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
  if (s->run.fatal) return 1;
  if (ds_store_write_ckpt(s->run.store, c->id, blob, len) != DS_OK || ds_store_sync(s->run.store) != DS_OK) {
    run_fatal(&s->run);
    return 1;
  }
  sc_keep_blob(s, c->id, blob, len);
  run_tick(&s->run);
  return 0;
}

/* ---- a point in a child process (issue 23; docs/design.md, "Attempts") -------
 * The child trains the point as sc_run_one would in this process and sends
 * its checkpoints, then its result and series, over a pipe (isolate.h); the
 * parent passes each checkpoint to the save function the point would have
 * used (to rank 0, or into the store with -n 1). A child that dies is
 * evidence against this point alone: the point fails with the signal, the
 * child's peak RSS and the point's memory estimate, and this rank carries on. */
enum { ISO_CKPT = 1, ISO_RESULT = 2, ISO_TRAJ = 3 };

typedef struct {
  const ds_sweep *sw;
  int64_t id, sidx;
  ds_team *team;
  int rank;
  const ds_ckpt *ck;  /* the parent's: its save goes to rank 0 / the store */
  ds_iso_chan *ch;    /* the child's end */
  ds_point_result *res;
  ds_traj *tr;
  int got_res, got_traj;
} iso_point;

static int save_pipe(void *arg, int64_t point, const char *blob, size_t len) {
  iso_point *j = arg;
  (void)point;
  return ds_iso_send(j->ch, ISO_CKPT, blob, len);
}

static int iso_child(void *arg, ds_iso_chan *ch) {
  iso_point *j = arg;
  j->ch = ch;
  ds_ckpt ck = *j->ck;
  ck.save = save_pipe;
  ck.arg = j;
  ds_point_result res;
  ds_traj tr;
  sc_run_one(j->sw, j->id, j->sidx, j->team, j->rank, &tr, &res, &ck);
  char *buf = NULL;
  size_t len = 0;
  if (ds_traj_pack(&tr, &buf, &len) != DS_OK) {
    res.status = DS_ST_FAILED;
    snprintf(res.reason, sizeof res.reason, "%s", ds_errmsg());
    len = 0;
  }
  int bad = ds_iso_send(ch, ISO_RESULT, &res, sizeof res) || ds_iso_send(ch, ISO_TRAJ, buf, len);
  free(buf);
  return bad ? 1 : 0;
}

static int iso_parent(void *arg, uint32_t type, const char *buf, size_t len) {
  iso_point *j = arg;
  if (type == ISO_CKPT) {
    if (j->ck->save) j->ck->save(j->ck->arg, j->id, buf, len); /* a failure is the saver's to report */
  } else if (type == ISO_RESULT && len == sizeof *j->res) {
    memcpy(j->res, buf, len);
    j->got_res = 1;
  } else if (type == ISO_TRAJ && j->got_res) {
    ds_traj_free(j->tr);
    ds_traj_init(j->tr);
    if (!len) j->got_traj = 1; /* a failed point: no series */
    else j->got_traj = ds_traj_unpack(buf, len, j->tr) == DS_OK;
  }
  return 0;
}

void sc_run_isolated(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
                     ds_traj *tr, ds_point_result *res, const ds_ckpt *ck) {
  iso_point j = {sw, id, sidx, team, rank, ck, NULL, res, tr, 0, 0};
  ds_traj_init(tr);
  memset(res, 0, sizeof *res);
  ds_iso_fate f;
  int rc = ds_isolate_run(iso_child, &j, iso_parent, &j, &f);
  if (j.got_res && j.got_traj) return; /* whatever became of the child after its result */
  ds_traj_free(tr);
  ds_traj_init(tr);
  memset(res, 0, sizeof *res);
  res->id = id;
  res->rank = rank;
  if (rc != DS_OK) { /* no child (fork failed): train here, as without isolation (maps too) */
    ds_warn("point %lld: %s; the point is trained in the worker itself", (long long)id, ds_errmsg());
    ds_clear_error();
    sc_run_one(sw, id, sidx, team, rank, tr, res, ck);
    return;
  }
  if (j.got_res && !f.signo && f.code == 0) { /* it ended well, but its series did not arrive */
    res->status = DS_ST_FAILED;
    snprintf(res->reason, sizeof res->reason, "its isolated run's series could not be received");
    return;
  }
  if (!f.signo && (f.drained || (ck->stop && *ck->stop) || f.code == 111)) {
    res->status = DS_ST_PENDING; /* drained (watchdog exit) or orphaned: not its fault */
    return;
  }
  char how[48], est[32], rss[32];
  ds_iso_fate_text(&f, how, sizeof how);
  ds_point p;
  double mem = ds_sweep_point(sw, sidx, &p) == DS_OK ? ds_point_mem_bytes(&p.cfg) : 0;
  ds_clear_error();
  ds_fmt_bytes(est, sizeof est, mem);
  ds_fmt_bytes(rss, sizeof rss, 1024.0 * (double)f.maxrss_kb);
  res->status = DS_ST_FAILED;
  snprintf(res->reason, sizeof res->reason, "%s %s in its own process (peak RSS %s, estimated %s)",
           f.signo ? "killed by" : "ended with", how, rss, est);
  ds_warn("point %lld failed: %s %s in its own process on rank %d (peak RSS %s; estimated %s); "
          "the run goes on", (long long)id, f.signo ? "killed by" : "ended with", how, rank, rss, est);
}

void sc_init_ckpt(ds_ckpt *ck, const ds_run_opts *o, ckpt_ctx *c, int local,
                  const char *resume, size_t resume_len) {
  memset(ck, 0, sizeof *ck);
  ck->every_s = o->checkpoint_every > 0 ? o->checkpoint_every : 0;
  ck->stop = (volatile int *)&g_stop;
  ck->save = local ? save_local : save_remote;
  ck->arg = c;
  ck->resume = resume_len ? resume : NULL;
  ck->resume_len = resume_len;
}

/* Team members other than the leader: checkpoints go through the leader. */
static int save_none(void *arg, int64_t point, const char *blob, size_t len) {
  (void)arg, (void)point, (void)blob, (void)len;
  return 0;
}

/* A worker team over tcomm (team rank 0 = its leader, the lowest world
 * rank). Only the leader talks to rank 0; it passes each assignment (and the
 * checkpoint to resume from) to the members, every member runs the point,
 * the leader alone sends checkpoints and the result. */
typedef struct {
  const ds_sweep *sw;
  const ds_run_opts *o;
  int rank, lead, multi, rc;
  ds_team team;
  char terr[256];
} sc_worker;

/* One assignment of the row source (run_work): {id, sweep index, blob
 * length, isolate}; id < 0: stop. */
static int work_point(void *ctx, MPI_Comm comm, const int64_t in[4]) {
  sc_worker *w = ctx;
  int lead = w->lead, multi = w->multi, rank = w->rank, rc = w->rc;
  int64_t hdr[5] = {-1, -1, 0, 0, 0}; /* id, sweep index, blob length, isolate, run it */
  char *blob = NULL;
  int blen = 0;
  if (lead) {
    memcpy(hdr, in, 4 * sizeof *hdr);
    if (hdr[0] >= 0 && hdr[2] > 0) blob = sc_recv_bytes(comm, 0, TAG_BLOB, &blen);
    hdr[2] = blob ? blen : 0;
    hdr[4] = rc == DS_OK && !g_stop; /* the leader decides for the team */
  }
  if (multi) {
    MPI_Bcast(hdr, 5, MPI_INT64_T, 0, w->team.comm);
    if (hdr[0] >= 0 && hdr[4] && hdr[2] > 0) {
      if (!lead) blob = malloc((size_t)hdr[2]);
      int ok = blob != NULL, all = 0;
      MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, w->team.comm);
      if (all) MPI_Bcast(blob, (int)hdr[2], MPI_BYTE, 0, w->team.comm);
      else hdr[4] = -1; /* out of memory somewhere: fail the point on every member */
      blen = (int)hdr[2];
    }
  }
  if (hdr[0] < 0) return RUN_STOP;
  ds_point_result res;
  ds_traj tr;
  if (hdr[4] > 0) {
    ds_ckpt ck;
    ckpt_ctx c = {comm, hdr[0], NULL};
    sc_init_ckpt(&ck, w->o, &c, 0, blob, blob ? (size_t)blen : 0);
    if (!lead) {
      ck.save = save_none;
      ck.stop = NULL;
    }
    if (hdr[3] && !multi) /* rank 0 isolates single-rank points only */
      sc_run_isolated(w->sw, hdr[0], hdr[1], &w->team, rank, &tr, &res, &ck);
    else
      sc_run_one(w->sw, hdr[0], hdr[1], &w->team, rank, &tr, &res, &ck);
  } else { /* stopping: hand the point back; or team setup failed */
    memset(&res, 0, sizeof res);
    ds_traj_init(&tr);
    res.id = hdr[0];
    res.rank = rank;
    res.status = hdr[4] == 0 && rc == DS_OK ? DS_ST_PENDING : DS_ST_FAILED;
    snprintf(res.reason, sizeof res.reason, "%s",
             rc != DS_OK ? w->terr : hdr[4] < 0 ? "out of memory for the checkpoint on a team member" : "");
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
  return RUN_GO;
}

int sc_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm) {
  sc_worker w = {.sw = sw, .o = o, .rank = rank};
  int trank;
  MPI_Comm_rank(tcomm, &trank);
  w.rc = ds_team_init(&w.team, tcomm);
  snprintf(w.terr, sizeof w.terr, "%s", w.rc == DS_OK ? "" : ds_errmsg());
  if (trank != 0 && w.rc != DS_OK) return DS_OK; /* the leader fails each point with terr */
  w.lead = trank == 0;
  w.multi = w.rc == DS_OK && w.team.size > 1;
  run_work(work_point, &w, comm, w.lead);
  if (w.rc == DS_OK) ds_team_free(&w.team);
  return DS_OK;
}
