/* sched_wrap.c -- `dynsweep-sched-bench`: the real dynsweep program (src/main.c
 * and every room, unchanged) linked with -Wl,--wrap for three functions, for
 * the scheduler figures of docs/performance.md, "Rank 0 at scale"
 * (bench/sched_scale.sh). Rank 0 runs the real `dynsweep run` code: queue,
 * sc_serve, journal, group commit, publish, the store. What is changed is
 * only on the workers' side, and only when these BENCHMARK-ONLY environment
 * variables are set (they do nothing in build/dynsweep):
 *
 *   DS_BENCH_DURATIONS=FILE  point durations in seconds, one a line (e.g.
 *                            the wall_s of a real run); point id i takes line
 *                            i mod n, times DS_BENCH_DURATION_SCALE (1). A
 *                            real worker trains the point for real and then
 *                            sleeps until the recorded duration has passed
 *                            (so 256 oversubscribed ranks can hold "1 s"
 *                            points without 256 cores).
 *   DS_BENCH_VWORKERS=K      each worker rank plays K virtual workers over
 *                            the real protocol (READY, ASSIGN, RESULT+TRAJ
 *                            with the real message sizes): rank 0 is told it
 *                            has K x (ranks - 1) workers (its only change: the
 *                            count of stops it sends before it ends). A
 *                            virtual worker holds a point for its recorded
 *                            duration and sends back the result and packed
 *                            trajectory of the first point its rank trained
 *                            for real (id, rank and wall time patched).
 *   DS_BENCH_PREFETCH=B      (with DS_BENCH_VWORKERS) the rank is a prototype
 *                            of the next level, a sub-scheduler: it keeps B
 *                            more requests outstanding at rank 0 than it has
 *                            idle workers, so up to B assigned points wait in
 *                            a local buffer and a virtual worker whose point
 *                            ends takes the next one at once; it waits for
 *                            rank 0 only when the buffer is empty (rank 0 is
 *                            told it has K + B workers per rank and counts
 *                            the buffered points as running).
 *   DS_BENCH_OUT=PREFIX      each virtual-worker rank writes the waits it saw
 *                            as float64 triples (time the virtual worker asked,
 *                            i.e. its point ended or, at the start, it sent
 *                            READY, since the rank started; its wait until it
 *                            had its next point, seconds, including this
 *                            rank's own lag in noticing the end; the wait
 *                            from the moment this rank sent the RESULT)
 *                            to PREFIX.RANK.lat and one line of
 *                            figures to PREFIX.RANK.txt.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>

#include "state.h"

int __real_ds_worker_run_point(const ds_sweep *sw, const ds_point *p, ds_team *team, ds_traj *tr,
                               ds_point_result *res, const ds_ckpt *ck);
int __real_sc_serve(sched *s, MPI_Comm comm, int nworkers, int size);
int __real_sc_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank,
                   MPI_Comm tcomm);

static double *g_dur;
static int g_no_sleep; /* the template point of a virtual-worker rank: no sleep */
static int64_t g_ndur = -1;

static void load_durations(void) {
  if (g_ndur >= 0) return;
  g_ndur = 0;
  const char *path = getenv("DS_BENCH_DURATIONS");
  const char *sc = getenv("DS_BENCH_DURATION_SCALE");
  double scale = sc && *sc ? atof(sc) : 1.0;
  FILE *f = path && *path ? fopen(path, "r") : NULL;
  if (path && *path && !f) {
    fprintf(stderr, "sched-bench: cannot read DS_BENCH_DURATIONS=%s\n", path);
    exit(1);
  }
  int64_t cap = 0;
  double v;
  while (f && fscanf(f, "%lf", &v) == 1) {
    if (g_ndur == cap) g_dur = realloc(g_dur, (cap = cap ? 2 * cap : 1024) * sizeof *g_dur);
    g_dur[g_ndur++] = v * scale;
  }
  if (f) fclose(f);
}

static double duration_of(int64_t id) {
  load_durations();
  return g_ndur ? g_dur[(id < 0 ? -id : id) % g_ndur] : 0;
}

int __wrap_ds_worker_run_point(const ds_sweep *sw, const ds_point *p, ds_team *team, ds_traj *tr,
                               ds_point_result *res, const ds_ckpt *ck) {
  double t0 = ds_now();
  int rc = __real_ds_worker_run_point(sw, p, team, tr, res, ck);
  double d = duration_of(p->id), left = d - (ds_now() - t0);
  if (g_ndur && left > 0 && !g_no_sleep) {
    ds_sleep(left);
    res->wall_s = ds_now() - t0;
  }
  return rc;
}

static int vworkers(void) {
  const char *k = getenv("DS_BENCH_VWORKERS");
  return k && atoi(k) > 0 ? atoi(k) : 0;
}

static int prefetch(void) {
  const char *b = getenv("DS_BENCH_PREFETCH");
  return vworkers() && b && atoi(b) > 0 ? atoi(b) : 0;
}

int __wrap_sc_serve(sched *s, MPI_Comm comm, int nworkers, int size) {
  int k = vworkers();
  return __real_sc_serve(s, comm, k ? nworkers * (k + prefetch()) : nworkers, size);
}

/* ---- a rank of K virtual workers -------------------------------------------- */

typedef struct {
  double due;
  int vw;
} ev;

static void heap_push(ev *h, int *n, ev e) {
  int i = (*n)++;
  while (i > 0 && h[(i - 1) / 2].due > e.due) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

static ev heap_pop(ev *h, int *n) {
  ev top = h[0], last = h[--(*n)];
  int i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1].due < h[c].due) c++;
    if (h[c].due >= last.due) break;
    h[i] = h[c];
    i = c;
  }
  if (*n > 0) h[i] = last;
  return top;
}

int __wrap_sc_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank,
                   MPI_Comm tcomm) {
  int K = vworkers(), B = prefetch(), M = K + B; /* M requests outstanding at rank 0 */
  if (!K) return __real_sc_work(sw, o, comm, rank, tcomm);
  ds_team team;
  if (ds_team_init(&team, tcomm) != DS_OK) MPI_Abort(comm, 1);
  int64_t *id = calloc(K, sizeof *id);
  double *t_req = calloc(K, sizeof *t_req), *t_seen = calloc(K, sizeof *t_seen);
  int *fifo = calloc(K, sizeof *fifo), fh = 0, fn = 0; /* idle virtual workers, in order */
  int64_t *buf = calloc(M, sizeof *buf);               /* points assigned, not started yet */
  int bh = 0, bn = 0;
  ev *heap = calloc(K, sizeof *heap);
  int nh = 0, stopped = 0;
  int64_t nlat = 0, cap = 1 << 16, sent = 0;
  double *lat = malloc(cap * sizeof *lat), late_max = 0, late_sum = 0, t_start = ds_now();
  char *tmpl = NULL; /* the packed trajectory of the first point trained for real */
  size_t tmpl_len = 0;
  ds_point_result res0;
  int zero = 0;
  /* results go out with MPI_Isend (RESULT and TRAJ, in order), so this rank
   * keeps serving its workers while rank 0 is busy (a publish) */
  int P = 4 * K + 16, np = 0;
  MPI_Request *rq = malloc(2 * P * sizeof *rq);
  ds_point_result *rres = malloc(P * sizeof *rres);
  int *freeslot = malloc(P * sizeof *freeslot), *done = malloc(2 * P * sizeof *done);
  int *left = calloc(P, sizeof *left); /* sends of a slot not completed yet */
  for (int i = 0; i < P; i++) freeslot[i] = P - 1 - i, rq[2 * i] = rq[2 * i + 1] = MPI_REQUEST_NULL;
  int nfree = P;
  t_start = ds_now();
  for (int v = 0; v < K; v++) {
    t_req[v] = t_seen[v] = ds_now();
    fifo[(fh + fn++) % K] = v;
  }
  for (int r = 0; r < M; r++) MPI_Send(&zero, 1, MPI_INT, 0, TAG_READY, comm);
  while (stopped < M) {
    int flag = 0, progress = 0;
    MPI_Status st;
    MPI_Iprobe(0, TAG_ASSIGN, comm, &flag, &st);
    if (flag) {
      int64_t hdr[3];
      MPI_Recv(hdr, 3, MPI_INT64_T, 0, TAG_ASSIGN, comm, MPI_STATUS_IGNORE);
      progress = 1;
      if (hdr[0] < 0) {
        stopped++;
      } else {
        if (hdr[2] > 0) {
          int blen;
          free(sc_recv_bytes(comm, 0, TAG_BLOB, &blen));
        }
        if (!tmpl) { /* train one point for real: the message every virtual worker sends */
          ds_traj tr;
          ds_ckpt ck;
          ckpt_ctx c = {comm, hdr[0], NULL};
          sc_init_ckpt(&ck, o, &c, 0, NULL, 0);
          ck.every_s = 0;
          g_no_sleep = 1;
          sc_run_one(sw, hdr[0], hdr[1], &team, rank, &tr, &res0, &ck);
          g_no_sleep = 0;
          if (ds_traj_pack(&tr, &tmpl, &tmpl_len) != DS_OK) MPI_Abort(comm, 1);
          ds_traj_free(&tr);
        }
        buf[(bh + bn++) % M] = hdr[0];
      }
    }
    double now = ds_now();
    if (!progress && nh > 0 && heap[0].due <= now) {
      ev e = heap_pop(heap, &nh);
      double late = now - e.due;
      late_sum += late;
      if (late > late_max) late_max = late;
      while (!nfree) { /* every slot in flight: wait for one */
        int nd = 0;
        MPI_Waitsome(2 * P, rq, &nd, done, MPI_STATUSES_IGNORE);
        for (int i = 0; i < nd; i++)
          if (--left[done[i] / 2] == 0) freeslot[nfree++] = done[i] / 2, np--;
      }
      int sl = freeslot[--nfree];
      np++;
      left[sl] = 2;
      ds_point_result *res = &rres[sl];
      *res = res0;
      res->id = id[e.vw];
      res->rank = rank;
      res->wall_s = duration_of(id[e.vw]);
      /* also the next request */
      MPI_Isend(res, sizeof *res, MPI_BYTE, 0, TAG_RESULT, comm, &rq[2 * sl]);
      MPI_Isend(tmpl, (int)tmpl_len, MPI_BYTE, 0, TAG_TRAJ, comm, &rq[2 * sl + 1]);
      sent++;
      t_req[e.vw] = e.due; /* the wait a worker sees starts when its point ends */
      t_seen[e.vw] = now;  /* ... this rank noticed it (late) at now */
      fifo[(fh + fn++) % K] = e.vw;
      progress = 1;
    }
    while (bn > 0 && fn > 0) { /* idle virtual workers take the points at hand */
      int v = fifo[fh];
      fh = (fh + 1) % K, fn--;
      int64_t p = buf[bh];
      bh = (bh + 1) % M, bn--;
      now = ds_now();
      if (3 * nlat + 3 > cap) lat = realloc(lat, (cap *= 2) * sizeof *lat);
      lat[3 * nlat] = t_req[v] - t_start;
      lat[3 * nlat + 1] = now - t_req[v];
      lat[3 * nlat + 2] = now - t_seen[v];
      nlat++;
      id[v] = p;
      heap_push(heap, &nh, (ev){now + duration_of(p), v});
    }
    if (np) { /* slots whose two sends completed are free again */
      int nd = 0;
      MPI_Testsome(2 * P, rq, &nd, done, MPI_STATUSES_IGNORE);
      for (int i = 0; i < nd; i++)
        if (--left[done[i] / 2] == 0) freeslot[nfree++] = done[i] / 2, np--;
    }
    if (progress) continue;
    double nap = nh > 0 ? heap[0].due - now : 1e-3;
    ds_sleep(nap < 20e-6 ? 20e-6 : nap > 200e-6 ? 200e-6 : nap);
  }
  MPI_Waitall(2 * P, rq, MPI_STATUSES_IGNORE);
  free(rq), free(rres), free(freeslot), free(done), free(left);
  const char *out = getenv("DS_BENCH_OUT");
  if (out && *out) {
    char p[4096];
    snprintf(p, sizeof p, "%s.%d.lat", out, rank);
    FILE *f = fopen(p, "wb");
    if (f) fwrite(lat, sizeof *lat, 3 * nlat, f), fclose(f);
    snprintf(p, sizeof p, "%s.%d.txt", out, rank);
    f = fopen(p, "w");
    if (f) {
      fprintf(f, "rank %d vworkers %d results %lld waits %lld late_mean_s %.6f late_max_s %.6f "
              "traj_bytes %zu span_s %.3f cpu_s %.3f\n", rank, K, (long long)sent, (long long)nlat,
              sent ? late_sum / sent : 0, late_max, tmpl_len, ds_now() - t_start, ds_cpu_time());
      fclose(f);
    }
  }
  free(tmpl), free(lat), free(heap), free(buf), free(fifo), free(t_req), free(t_seen), free(id);
  ds_team_free(&team);
  return DS_OK;
}
