/* state.h -- `dynsweep run`, in rooms along its one-way data path
 * sweep -> point source -> dispatcher -> workers -> store, laid out in
 * floors (a file calls only files on the floors below it; the loops reach
 * the source through its ops table, ds_source_ops):
 *   state.c     (bottom) the run core ds_run of rank 0, whatever the source:
 *               store failure, drain, the periodic tick, giving up on busy
 *               workers, closing the store (run_close)
 *   wire.c      (bottom) the messages: waiting for one (paced), receiving one
 *   rowstate.c  (bottom) a row sweep's progress line, ETA, kept checkpoints
 *   serve.c     THE rank-0 loop (run_serve): a handler per message tag
 *   work.c      THE worker loop (run_work), and rank 0's own with -n 1 (run_alone)
 *   plan.c      the row source: which points exist and in what order (store
 *               rows from the sweep, teams: train.ranks_per_point, the queue)
 *   workloop.c  the row source's worker side: runs points, checkpoints
 *   lifecycle.c the row store's lifecycle: create, or resume / extend / compare
 *               with the sweep, load what is unfinished, wrap up
 *   dispatch.c  the row source on rank 0: hands points out, takes results and
 *               checkpoints into the store, the scheduler figures
 *   rows.c      the row source's ops table sc_rows_ops (bring-up, plan and
 *               store, teams, wrap-up: plan.c, lifecycle.c)
 *   maps.c      the map source (issue 13): tiles of outcome-only points,
 *               refinement levels, its store; sc_map_ops (the tiles' training:
 *               src/worker/tilerun.c)
 *   sched.c     (top) ds_sched_run: the one run body, driving either source
 *               through its ops
 *
 * Protocol of a row sweep (world communicator; a map's: maps.c, the
 * same TAG_READY and TAG_ASSIGN):
 *   worker -> 0  TAG_READY   (int 0)                   "give me a point"
 *   0 -> worker  TAG_ASSIGN  (int64[4]: row id, sweep point index, blob
 *                             length, isolate; id -1 = stop)
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
 * on to its members over the team communicator (workloop.c).
 * Points go out longest-estimated-first to whichever worker asks (a team
 * gets only points of its size). Rank 0
 * waits with MPI_Iprobe and an exponential sleep back-off (Open MPI's
 * blocking receives busy-poll and would burn a core), is the only rank that
 * touches the store, fsyncs the journal when it has nothing else to do and
 * publishes the store when due. With one rank, rank 0 runs the points itself.
 * A run on an existing store resumes it (points are matched by their grid
 * values, so a sweep file that only added grid values extends the store). */
#ifndef DS_SCHED_PRIV_H
#define DS_SCHED_PRIV_H
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
  TAG_CKPT = 16,
  TAG_MAP_IDX = 22,   /* map sweeps (maps.c) */
  TAG_MAP_RESULT = 23
};

/* ---- drain signal ----------------------------------------------------------- */

/* The drain flag lives in util/signals.c: main() installs its handlers before
 * anything else runs (SIGTERM/SIGUSR1 drain, SIGXFSZ ignored so that a write
 * fails with EFBIG and is reported). */
#define g_stop (*ds_drain_flag())

/* ---- the scheduler's figures (dispatch.c; docs/performance.md) ------------- */

enum { LAT_BINS = 160 };
typedef struct {
  int64_t n, hist[LAT_BINS], traj_bytes, results;
  int64_t long_ticks;  /* ticks (group commit, publish) that held the loop > 1 ms */
  double sum, max, store_s, tick_s, tick_max, t_first, t_last;
} sc_lat;

/* The pacing of sc_wait_message: the message rate seen so far (start with
 * gap = 1.0). */
typedef struct {
  double last_msg, gap;
} sc_pace;

/* ---- the run core: what every sweep's rank 0 has ------------------------------
 * A point source (rows: struct sched; a map: struct msched in maps.c)
 * starts with a ds_run, so the loops of state.c, serve.c and work.c and the
 * run body (sched.c) work on either; what they need of the source goes
 * through its ops table. */
typedef struct ds_run ds_run;

/* A message handler of rank 0 (serve.c): receives the message of tag from
 * src; RUN_REPLY: src now waits for work (ops->assign answers it). */
enum { RUN_REPLY = 0, RUN_NO_REPLY = 1 };
typedef struct {
  int tag; /* 0 ends a table */
  int (*fn)(ds_run *r, MPI_Comm comm, int src);
} ds_handler;

typedef struct {
  const char *noun;       /* "point", "tile": the drain and abort messages */
  const char *drain_tail; /* after "... for N running point(s)" in the drain message */
  const char *abort_tail; /* after "ending the job" when busy workers are given up on */
  void (*progress)(ds_run *r, int force);  /* the progress line and the store's ETA */
  int64_t (*running)(const ds_run *r);     /* points (tiles) out */
  /* multi-rank runs (serve.c) */
  const ds_handler *handlers;              /* one per message tag a worker sends */
  /* hands worker dst its next work, parks it (r->parked: none yet) or stops
   * it (--*active) */
  void (*assign)(ds_run *r, MPI_Comm comm, int dst, int *active);
  void (*report)(ds_run *r, int nworkers); /* after the loop, or NULL */
  /* -n 1 (work.c, run_alone): rank 0 runs the next work itself on team;
   * RUN_STOP when there is none to start */
  int (*local)(ds_run *r, ds_team *team);
  /* the run (sched.c, ds_sched_run: bring-up, the serve/work/alone choice
   * and the common wrap-up are written there once) */
  size_t size;      /* bytes of the source's struct, which starts with a ds_run */
  const char *what; /* "sweep", "map": "rank 0 could not start the <what>" */
  /* every rank, collective, before rank 0 prepares; or NULL */
  void (*bring_up)(ds_run *r, MPI_Comm comm, int rank, int size);
  /* rank 0: which points exist, the store created, resumed or extended
   * (r->nothing_to_do: all finished already, the run ends at once) */
  int (*prepare)(ds_run *r, const char *hosts, int nranks);
  /* rank 0: the workers' teams (color[r]: the team of world rank r; node:
   * each rank's node); returns their number, < 0 when out of memory; NULL:
   * every worker rank works alone on the world communicator */
  int (*teams)(ds_run *r, int size, int *node, int *color);
  /* rank 0 of a multi-rank run: the loop with nworkers workers (teams);
   * NULL: run_serve */
  int (*serve)(ds_run *r, MPI_Comm comm, int nworkers, int size);
  int (*finished)(const ds_run *r); /* every point done (else: drained or failed) */
  /* rank 0, after the loop: finish or record the session, close, report */
  int (*wrap_up)(ds_run *r, int size, double cpu, double wall);
  /* a worker rank (tcomm: its team's communicator, or MPI_COMM_NULL) */
  int (*work)(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm);
  void (*free)(ds_run *r); /* what the source allocated (every rank) */
} ds_source_ops;

struct ds_run {
  const ds_sweep *sw;
  const ds_run_opts *o;
  const ds_source_ops *ops;
  ds_store *store;
  int fatal, draining, tty;
  int nothing_to_do;     /* prepare found every point finished */
  char fatal_msg[1024];
  double t0, last_prog, drain_deadline, prev_wall, prev_cpu;
  int64_t done0;         /* finished points (computed pixels) when this session started */
  int64_t session_done;  /* finished this session */
  int *parked, nparked;  /* workers waiting for work that is not there yet */
  sc_pace pace;          /* the message rate (wire.c) */
  sc_lat lat;            /* the scheduler's figures (dispatch.c) */
};

/* ---- state of rank 0 ------------------------------------------------------------ */

typedef struct {
  ds_run run;            /* first: the run core */
  int64_t n;             /* store rows (= points); row id == index */
  int64_t *sidx;         /* sweep point index of each row */
  double *cost;          /* estimated cost of each row */
  ds_summary_row *rows;
  char **blob;           /* latest checkpoint of each unfinished row, or NULL */
  size_t *bloblen;
  int64_t *queue, qn, qhead; /* rows to run, longest first */
  int64_t nfinal, ndone, ndiv, nfail, nrunning;
  int resumed;
  /* teams (train.ranks_per_point) */
  int nworkers;          /* world ranks 1..size-1 */
  int *tsize;            /* team size of each row */
  struct tclass *cls;    /* one queue per team size (multi-rank runs), or NULL */
  int ncls;
  int *lead_size;        /* world rank -> size of the team it leads (0: not a leader) */
  int *node;             /* world rank -> its node (index of the first rank on it; rank 0;
                          * the run's, sched.c: set by the teams op) */
  /* attempts (issue 11) */
  int max_attempts;
  double has;            /* bytes a rank has (ds_rank_memory; the least over the ranks) */
  char has_why[128];     /* where that figure comes from */
  char *lone;            /* rows on their last attempt after a death: run alone */
  int lone_running;      /* a lone row is running: nothing else starts */
  int isolate;           /* single-rank points run in a child process (issue 23) */
  /* the ETA (issue 24): the plan's cost model (probed seconds of each row),
   * corrected by the ratio of measured to estimated seconds of the points
   * finished this session */
  double *est;           /* estimated seconds of each row (ds_point_seconds) */
  double *t_run;         /* when each running row was handed out (ds_now) */
  int64_t *nsteps;       /* train.steps of each row: a point that stopped early ran a share */
  double est_prior;      /* seconds of estimate the correction starts from at ratio 1 */
  double est_pending;    /* sum of est over rows queued, not running */
  double est_running, t_running; /* sums of est and t_run over running rows */
  double done_est, done_wall;    /* finished this session: sum of est, of wall_s */
  int slots;             /* points that run at once: teams, or 1 with -n 1 */
  int64_t died;          /* rows left running by the last run (it died) */
} sched;

/* The queued rows of one team size, longest first, and its teams. */
typedef struct tclass {
  int size, teams;
  int64_t *q, n, head;
  double cost;
} tclass;

static inline int is_final(int st) { return ds_status_is_final(st); }

typedef struct {
  MPI_Comm comm;
  int64_t id;
  sched *s; /* -n 1: rank 0 itself */
} ckpt_ctx;

/* state.c: the run core */
void run_fatal(ds_run *r);
void run_drain(ds_run *r, const char *why);
void run_tick(ds_run *r);
void run_abort_busy(ds_run *r, MPI_Comm comm);
int run_close(ds_run *r, int complete, double cpu, double wall, ds_store_stats *st);
/* serve.c: the rank-0 loop (r->parked: room for every rank) */
int run_serve(ds_run *r, MPI_Comm comm, int nworkers);
int run_on_ready(ds_run *r, MPI_Comm comm, int src);
/* work.c: the worker loop. fn runs one assignment hdr (the leader's, as
 * received; a member's: {-1, -1, 0, 0}) and returns RUN_STOP when it was a stop. */
enum { RUN_GO = 0, RUN_STOP = 1 };
typedef int (*run_work_fn)(void *ctx, MPI_Comm comm, const int64_t hdr[4]);
int run_work(run_work_fn fn, void *ctx, MPI_Comm comm, int lead);
void run_alone(ds_run *r); /* -n 1: tick, then r->ops->local, until it stops */
/* rowstate.c: a row sweep's progress */
void sc_keep_blob(sched *s, int64_t id, const char *b, size_t len);
void sc_progress(sched *s, const ds_summary_row *r, int force);
double sc_eta(const sched *s); /* seconds left, from the cost model; < 0 unknown */
/* wire.c */
char *sc_recv_bytes(MPI_Comm comm, int src, int tag, int *len);
int sc_wait_message(sc_pace *pace, ds_store *store, int *fatal, MPI_Comm comm, MPI_Status *st);
/* plan.c */
void sc_fill_row(ds_summary_row *r, int64_t id, const ds_point *p);
void sc_point_axis_vals(const ds_sweep *sw, int64_t idx, double *out);
int sc_check_teams(sched *s);
int sc_plan_teams(sched *s, int size, int *color);
int sc_build_queue(sched *s);
int64_t sc_next_point(sched *s);
int64_t sc_next_point_for(sched *s, int tsz);
void sc_requeue(sched *s, int64_t id);
/* workloop.c */
void sc_run_one(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
                ds_traj *tr, ds_point_result *res, const ds_ckpt *ck);
void sc_run_isolated(const ds_sweep *sw, int64_t id, int64_t sidx, ds_team *team, int rank,
                     ds_traj *tr, ds_point_result *res, const ds_ckpt *ck);
void sc_init_ckpt(ds_ckpt *ck, const ds_run_opts *o, ckpt_ctx *c, int local,
                  const char *resume, size_t resume_len);
int sc_work(const ds_sweep *sw, const ds_run_opts *o, MPI_Comm comm, int rank, MPI_Comm tcomm);
/* lifecycle.c */
int sc_prepare(sched *s, const char *hosts, int nranks);
int sc_wrap_up(sched *s, int size, double cpu, double wall);
void sc_free_sched(sched *s);
/* dispatch.c: the row source on rank 0 (its ops table: rows.c) */
extern const ds_handler sc_rows_handlers[];
void sc_rows_progress(ds_run *r, int force);
int64_t sc_rows_running(const ds_run *r);
void sc_rows_assign(ds_run *r, MPI_Comm comm, int dst, int *active);
void sc_rows_report(ds_run *r, int nworkers);
int sc_rows_local(ds_run *r, ds_team *team);
int sc_serve(sched *s, MPI_Comm comm, int nworkers, int size);
/* rows.c: the row source, its ops table (dynsweep-sched-bench wraps sc_serve
 * and sc_work at link time: they are called from rows.c, not their own file) */
extern const ds_source_ops sc_rows_ops;
/* maps.c: the map source (issue 13) */
extern const ds_source_ops sc_map_ops;
#endif
