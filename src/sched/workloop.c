/* workloop.c -- a worker: asks rank 0 for points, runs them (on its team),
 * checkpoints them and sends the results back. */
#include "sched_priv.h"

void sc_run_one(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
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
    sc_set_fatal(s);
    return 1;
  }
  sc_keep_blob(s, c->id, blob, len);
  sc_tick(s);
  return 0;
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
int sc_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm) {
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
      if (hdr[0] >= 0 && hdr[2] > 0) blob = sc_recv_bytes(comm, 0, TAG_BLOB, &blen);
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
      sc_init_ckpt(&ck, o, &c, 0, blob, blob ? (size_t)blen : 0);
      if (!lead) {
        ck.save = save_none;
        ck.stop = NULL;
      }
      sc_run_one(sw, hdr[0], hdr[1], &team, rank, &tr, &res, &ck);
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
