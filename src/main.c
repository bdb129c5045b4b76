/* main.c -- the dynsweep command line: run, plan, ls, show, status, submit,
 * version.
 *
 * Exit codes: 0 success; 2 bad input (sweep file, arguments, data file, a
 * store of another sweep or a file that is not a store); 3 run drained on a
 * signal with points left (resumable); 1 any other failure (I/O, MPI,
 * numerical, internal). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <hdf5.h>
#include <mpi.h>
#include <yaml.h>

#include "dynsweep/config.h"
#include "dynsweep/diag.h" /* ds_diag_cnn_ntk_split_fits */
#include "dynsweep/knobs.h"
#include "dynsweep/models.h"
#include "dynsweep/sched.h"
#include "dynsweep/store.h"
#include "dynsweep/analysis.h"
#include "dynsweep/outcome.h"
#include "dynsweep/worker.h" /* DS_OUT_* */
#include "dynsweep/nn.h"
#include "dynsweep/submit.h"
#include "dynsweep/tile.h"
#include "dynsweep/util.h"

#ifndef DS_SCALAPACK_VERSION
#define DS_SCALAPACK_VERSION "?"
#endif

static const char *usage_main =
    "usage: dynsweep COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run SWEEP.yaml -o STORE.h5   run a sweep, or resume / extend STORE (under mpirun)\n"
    "  plan SWEEP.yaml              validate, expand the grid, estimate the cost (no MPI)\n"
    "  ls STORE.h5 [--where --sort] one row per point: parameters, status, losses, time\n"
    "  export STORE.h5 --format csv the summary table or a series as CSV/TSV\n"
    "  phase STORE.h5 --x A --y B   a phase diagram over two axes as a text grid\n"
    "  map STORE.h5 -o map.png      a trainability map image (tools/dynsweep-map)\n"
    "  show STORE.h5 POINT          the recorded series of one point\n"
    "  status STORE.h5              progress of a sweep, also while it runs\n"
    "  verify STORE.h5              read everything, check checksums and consistency\n"
    "  submit SWEEP.yaml -o STORE.h5 [...]  run a sweep as Slurm job(s) until complete\n"
    "  version [--knobs]            versions of dynsweep and its libraries, BLAS kernel,\n"
    "                               DYNSWEEP_* settings (--knobs: every one, documented)\n"
    "  keys [--markdown]            every key a sweep file may hold: type, range, default\n"
    "  models [--markdown]          model kinds, parameterisations, which trainer takes\n"
    "                               what, which diagnostics apply\n"    "\n"
    "'dynsweep COMMAND --help' describes each command.\n"
    "exit codes: 0 ok, 2 bad input (sweep file, arguments, a store of another sweep),\n"
    "            3 run drained by a signal (run again to resume), 1 other failures\n";

static const char *usage_run =
    "usage: mpirun -n P dynsweep run SWEEP.yaml -o STORE.h5 [options]\n"
    "\n"
    "Runs every point of the sweep and writes one HDF5 store. Rank 0 schedules\n"
    "(longest points first, to whichever worker is free) and writes the store;\n"
    "ranks 1..P-1 train. With P = 1, rank 0 trains itself. The sweep file and\n"
    "every file it names (data, init weights, AGOP reference) are checked against\n"
    "every grid point before any work starts or any file is created.\n"
    "\n"
    "If STORE exists, the run continues it: finished points are skipped, unfinished\n"
    "ones run (from their last checkpoint when there is one). The sweep file must be\n"
    "the one that made STORE, or that one with grid values (or replicas) added: the\n"
    "new points are appended and old points keep their ids. Any other change, or a\n"
    "file that is not a dynsweep store, is refused (exit 2) and left untouched.\n"
    "\n"
    "The store survives kill -9 at any moment: finished points are journaled to\n"
    "STORE.journal at once and published into STORE (a complete, closed HDF5 file\n"
    "at all times) every few seconds. SIGUSR1 or SIGTERM drains the run: no new\n"
    "points, running points checkpoint, the store is published, exit code 3.\n"
    "  -o, --output STORE          the store to create or continue (required)\n"
    "  --drain-exit CODE           exit code of a drained run (3); the Slurm job\n"
    "                              scripts use 0: a drained step is not FAILED\n"
    "  --checkpoint-every SECONDS  workers checkpoint running points this often (300; 0 off)\n"
    "  --publish-every SECONDS     publish the store at most this often (2; publishing\n"
    "                              is also kept below ~1% of the wall time)\n"
    "  --drain-timeout SECONDS     after a drain signal, wait this long for running\n"
    "                              points to checkpoint, then end the job (25)\n"
    "  --rank-memory MB            what one rank has (MB = 2^20 bytes); default: measured,\n"
    "                              the least of the cgroup limit and MemAvailable shared\n"
    "                              by the node's ranks, ulimit -v, SLURM_MEM_PER_CPU and\n"
    "                              SLURM_MEM_PER_NODE. A point whose estimated memory\n"
    "                              (shared by its team) cannot fit ends failed without\n"
    "                              running, with the reason. ranks_per_point: auto takes\n"
    "                              the smallest power-of-two team whose share fits it\n"
    "                              (1024 when not given)\n"
    "  --isolate auto|always|never a point runs in a child process of its worker when\n"
    "                              the last run died (auto), always or never; a point\n"
    "                              fails only when its own child is killed (a signal:\n"
    "                              out of memory, a segfault), never for a job's death\n"
    "  --max-attempts N            team points (not isolated) that were running when the\n"
    "                              job died run again alone; a death in that lone run\n"
    "                              fails them after N starts (2). Single points: a\n"
    "                              crash-loop guard fails a point after 10 x N starts\n"
    "  --retry failed              run the store's failed points again (attempts reset);\n"
    "                              the other points are kept\n"
    "  --set KEY=VALUE             override an option of the sweep (repeatable; as 'dynsweep\n"
    "                              plan --help' says); the store keeps the sweep with them\n"
    "  -q, --quiet                 no progress output\n"
    "  -v, --verbose               one progress line per finished point, and the source\n"
    "                              places (file:line) an error went through\n"
    "Progress: a bar on a terminal, else a log line every 10 s (stderr of rank 0).\n"
    "exit codes: 0 complete (failed points are final results: a warning counts them),\n"
    "            2 bad input, 3 drained (run again to resume), 1 failure\n";

static const char *usage_plan =
    "usage: dynsweep plan SWEEP.yaml [--all] [--rank-memory MB] [--set KEY=VALUE ...]\n"
    "                                [--recalibrate] [--from STORE.h5]\n"
    "\n"
    "Validates the sweep file and every file it names (data read in full, init\n"
    "weights and AGOP reference in the shapes of every grid point), expands the\n"
    "grid and prints the number of points, each point's parameters and estimated\n"
    "cost (numeric grid values with the fewest digits, >= 3, that tell the axis'\n"
    "values apart: 0.00178, not 0.00177827941003892), and the total. Needs no MPI.\n"
    "Then the points whose estimated memory cannot fit one rank (or its team),\n"
    "which 'dynsweep run' fails without running.\n"
    "  --all              list every point (default: the first 40)\n"
    "  --rank-memory MB   what a rank has (default: measured on this node for one\n"
    "                     rank, as 'dynsweep run --help' describes)\n"
    "  --set KEY=VALUE    override an option of the sweep file (repeatable): KEY an\n"
    "                     option path (optimizer.lr, model.width), name, seed, grid,\n"
    "                     grid.replicas or grid.AXIS; VALUE a YAML value, e.g.\n"
    "                     --set optimizer.lr=0.3 --set 'grid.lr={start: 0.1, stop: 1,\n"
    "                     num: 64, spacing: log}' (docs/sweep-spec.md, \"Overrides\")\n"
    "  --recalibrate      measure this host's BLAS rates again (a < 1 s probe, else\n"
    "                     read from ~/.cache/dynsweep: docs/performance.md)\n"
    "  --from STORE       a refined map: STORE holds the same map (the same coarse\n"
    "                     grid) refined to fewer levels so far; its points trained\n"
    "                     per level, and the deeper levels at its last growth a\n"
    "                     level, replace the smooth-boundary estimate\n"
    "Time: each point's seconds (est. s) from its GEMM shapes and diagnostics at\n"
    "the probed rates, the sum and the wall time per number of MPI ranks.\n";

static const char *usage_status =
    "usage: dynsweep status STORE.h5 [--state | --chain]\n"
    "\n"
    "Progress of a sweep, also while it runs (reads the published store and the\n"
    "journal of finished points not published yet; takes no lock): points done /\n"
    "running / diverged / failed / pending of the total, points per second and ETA\n"
    "of the current (or last) session, the run state and the time of the last update.\n"
    "Whether a run is alive is told by the writer's lock on STORE.journal (looked at,\n"
    "not taken), not by the recorded state: a killed run says 'not running'.\n"
    "  --state   print one word, for scripts: running (a writer is alive), complete,\n"
    "            drained (stopped by a signal, resumable), stopped (a store error),\n"
    "            dead (the last run died without closing the store: resumable)\n"
    "  --chain   only the Slurm job chain of 'dynsweep submit' (STORE.chain.tsv): per\n"
    "            job its id, segment, state, start/end, points finished in it, drain\n"
    "            margin and measured drain cost (also shown by default when present)\n";

static const char *usage_show =
    "usage: dynsweep show STORE.h5 POINT [--series NAME]\n"
    "\n"
    "Prints the recorded series of point POINT (its id from 'dynsweep ls'): for each\n"
    "series a header '# name [unit]: definition' and one line per record 'step v1 v2 ...'.\n"
    "  --series NAME   only this series (e.g. loss, sv/W1)\n";

static const char *usage_verify =
    "usage: dynsweep verify STORE.h5\n"
    "\n"
    "Reads every object, attribute and dataset of STORE and checks it: HDF5's\n"
    "metadata checksums, the Fletcher32 checksum of every chunk of results\n"
    "(/summary, /grid/axis_values, /series, /checkpoints), the CRC-32 digests of\n"
    "the string data and of every checkpoint, and the consistency of the store\n"
    "(index rows inside /series/step and /series/value, every finished point has\n"
    "its series and its loss series ends at its steps and final loss, /grid\n"
    "agrees with /summary). Reports STORE.journal (records not yet published, a\n"
    "torn tail, a journal of another store) as notes and warnings.\n"
    "Prints one line per damaged thing ('damaged: ...', naming the points) and a\n"
    "final line 'STORE: OK ...' or 'STORE: DAMAGED: N problem(s); points ...'.\n"
    "Stores older than format 4 have no checksums: only read errors and\n"
    "consistency are checked (said in a note). Needs no MPI and takes no lock.\n"
    "exit codes: 0 clean, 1 damaged (or unreadable), 2 not a dynsweep store\n";

static int want_help(int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  return 0;
}

static int bad_args(const char *usage, const char *fmt, const char *arg) {
  fprintf(stderr, "dynsweep: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  ds_short_usage(usage);
  return 2;
}

static void library_versions(char *buf, size_t n) {
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
  int len;
  MPI_Get_library_version(mpi, &len);
  char *nl = strpbrk(mpi, ",\n");
  if (nl) *nl = 0;
  unsigned maj, min, rel;
  H5get_libversion(&maj, &min, &rel);
  snprintf(buf, n, "%s; HDF5 %u.%u.%u; ScaLAPACK %s; %s; libyaml %s", mpi, maj, min, rel,
           DS_SCALAPACK_VERSION, ds_blas_config(), yaml_get_version_string());
}

/* A non-negative number of seconds, or -1. */
static double seconds_arg(const char *s) {
  char *end;
  double v = strtod(s, &end);
  return (end == s || *end || !(v >= 0) || v > 1e9) ? -1 : v;
}

/* ---- plan ------------------------------------------------------------------ */

/* --set KEY=VALUE at argv[*i] (also --set=KEY=VALUE): kept in sets; 1 if taken. */
static int set_arg(int argc, char **argv, int *i, char **sets, int *nset, int *bad) {
  if (strcmp(argv[*i], "--set") && strncmp(argv[*i], "--set=", 6)) return 0;
  char *v = argv[*i][5] == '=' ? argv[*i] + 6 : ++*i < argc ? argv[*i] : NULL;
  if (!v || *nset >= 64) *bad = 1;
  else sets[(*nset)++] = v;
  return 1;
}

/* A grid value as plan prints it: a number in the shortest form that tells the
 * axis' values apart (digits > 0), anything else as its text. */
static void plan_cell(const char *text, int digits, char *out, size_t n) {
  char *end;
  double v = strtod(text, &end);
  if (digits && *end == 0 && end != text) ds_short_format(v, digits, out, (int)n);
  else snprintf(out, n, "%s", text);
}

/* plan --from: the trained pixels per level of STORE, a map store of the
 * sweep's map (same axes, same coarse grid) refined to fewer or as many
 * levels; levels of a run not complete end before its deepest level with
 * points (still running). Errors name the store and what differs. */
static int plan_from(const char *path, const ds_sweep *sw, ds_map_levels *lv) {
  memset(lv, 0, sizeof *lv);
  lv->path = path;
  if (!sw->map || sw->refine_levels <= 0)
    return ds_fail(DS_EINPUT, "plan --from %s: the sweep is not a refined map (grid.refine)", path);
  ds_store *s = NULL;
  uint8_t *o = NULL;
  int64_t *shape = NULL, n = 0;
  char **names = NULL;
  double **vals = NULL;
  int nax = 0, lev = 0, rax[2] = {-1, -1}, nnames = 0;
  int rc = ds_store_open(path, &s);
  if (rc == DS_OK && !ds_store_is_map(s))
    rc = ds_fail(DS_EINPUT, "plan --from %s: not a map store (a sweep with map:)", path);
  if (rc == DS_OK) rc = ds_store_map_info(s, &nax, &shape, &lev, rax);
  if (rc == DS_OK) rc = ds_store_read_map_axes(s, &nnames, &names, &vals);
  if (rc == DS_OK && (lev <= 0 || nax != sw->naxes))
    rc = ds_fail(DS_EINPUT, "plan --from %s: %s", path,
                 lev <= 0 ? "a dense map (no grid.refine): nothing to extrapolate from"
                          : "a map over other axes than the sweep's");
  int L = sw->refine_levels;
  if (rc == DS_OK && lev > L)
    rc = ds_fail(DS_EINPUT, "plan --from %s: refined over %d levels there, more than the sweep's %d "
                 "(grid.refine levels): nothing left to extrapolate", path, lev, L);
  for (int a = 0; rc == DS_OK && a < nax; a++) {
    const ds_axis *ax = &sw->axes[a];
    int refined = a == sw->refine_axes[0] || a == sw->refine_axes[1];
    int64_t want = ax->nvals, step = 1, sstep = 1; /* the coarse grid's values: every step-th */
    if (refined) { /* the same coarse grid: (n - 1) / 2^levels alike */
      int64_t cs = (shape[a] - 1) >> lev, cw = (int64_t)(ax->nvals - 1) >> L;
      int same = !((shape[a] - 1) & ((1LL << lev) - 1)) && cs == cw; /* lev <= L: above */
      want = same ? shape[a] : -1;
      step = (int64_t)1 << L, sstep = (int64_t)1 << lev;
    }
    if (strcmp(names[a], ax->path) && strcmp(names[a], ax->name))
      rc = ds_fail(DS_EINPUT, "plan --from %s: axis %d is %s, the sweep's is %s", path, a + 1,
                   names[a], ax->path);
    else if (refined != (a == rax[0] || a == rax[1]))
      rc = ds_fail(DS_EINPUT, "plan --from %s: axis %s is %srefined there, %srefined in the sweep",
                   path, ax->path, refined ? "not " : "", refined ? "" : "not ");
    else if (want != shape[a])
      rc = ds_fail(DS_EINPUT, "plan --from %s: axis %s has %lld values refined over %d levels there, "
                   "the sweep %d over %d: not the same coarse grid (the sweep's coarse grid has "
                   "%lld values, the store's %lld)", path, ax->path, (long long)shape[a], lev,
                   ax->nvals, L, (long long)((ax->nvals - 1) >> L) + 1,
                   (long long)((shape[a] - 1) >> lev) + 1);
    for (int64_t i = 0; rc == DS_OK && i * step < ax->nvals; i++) { /* and its values */
      double v = ax->val[i * step], u = vals[a][i * sstep];
      if (fabs(u - v) > 1e-9 * fmax(fabs(u), fabs(v)))
        rc = ds_fail(DS_EINPUT, "plan --from %s: axis %s's %svalue %lld is %.17g there, %.17g in "
                     "the sweep: another window of the map", path, ax->path,
                     refined ? "coarse-grid " : "", (long long)i + 1, u, v);
    }
  }
  if (rc == DS_OK) rc = ds_store_read_map_outcomes(s, &o, &n);
  if (rc == DS_OK) {
    ds_map_level_counts(o, nax, shape, lev, rax, lv->trained);
    char state[32] = "";
    int deepest = 0;
    for (int k = 1; k <= lev; k++)
      if (lv->trained[k] > 0) deepest = k;
    int complete = ds_store_attr(s, "run_state", state, sizeof state) == DS_OK &&
                   !strcmp(state, "complete");
    lv->levels = complete ? deepest : deepest - 1;
    lv->running = !complete && deepest > 0;
    if (lv->levels < 2 || lv->trained[lv->levels - 1] == 0)
      rc = ds_fail(DS_EINPUT, "plan --from %s: %d complete level%s of refinement there; the growth "
                   "a level needs two (run the map with grid.refine levels >= 2 first)", path,
                   lv->levels > 0 ? lv->levels : 0, lv->levels == 1 ? "" : "s");
  }
  for (int a = 0; a < nnames; a++) free(names ? names[a] : NULL), free(vals ? vals[a] : NULL);
  free(names), free(vals), free(shape), free(o);
  if (s) ds_store_close(s);
  return rc;
}

static int cmd_plan(int argc, char **argv) {
  const char *file = NULL;
  const char *from_path = NULL;
  int all = 0, nset = 0, bad = 0, recal = 0;
  char *sets[64];
  double rank_mem = 0;
  ds_map_levels from;
  for (int i = 0; i < argc; i++) {
    if (set_arg(argc, argv, &i, sets, &nset, &bad)) {
      if (bad) return bad_args(usage_plan, "plan: --set needs KEY=VALUE (at most 64)%s", "");
    } else if (!strcmp(argv[i], "--all")) all = 1;
    else if (!strcmp(argv[i], "--recalibrate")) recal = 1;
    else if (!strcmp(argv[i], "--from")) {
      if (++i == argc) return bad_args(usage_plan, "plan: --from needs a store%s", "");
      from_path = argv[i];
    } else if (!strcmp(argv[i], "--rank-memory")) {
      if (++i == argc || (rank_mem = seconds_arg(argv[i])) <= 0)
        return bad_args(usage_plan, "plan: --rank-memory needs a number of MB > 0%s", "");
    } else if (argv[i][0] == '-') return bad_args(usage_plan, "plan: unknown option '%s'", argv[i]);
    else if (!file) file = argv[i];
    else return bad_args(usage_plan, "plan: unexpected argument '%s'", argv[i]);
  }
  if (!file) return bad_args(usage_plan, "plan: missing the sweep file%s", "");
  ds_sweep sw;
  int rc = ds_sweep_load_set(file, nset, sets, &sw);
  if (rc == DS_OK && (rc = ds_sweep_check_inputs(&sw)) != DS_OK) ds_sweep_free(&sw);
  if (rc) {
    fprintf(stderr, "%s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  int64_t n = ds_sweep_npoints(&sw), nmis = 0;
  double total = 0, bytes = 0;
  ds_probe pr;
  ds_estimate est;
  ds_probe_get(recal, &pr);
  if (from_path) {
    if ((rc = plan_from(from_path, &sw, &from)) != DS_OK) {
      fprintf(stderr, "%s\n", ds_errmsg());
      ds_sweep_free(&sw);
      return ds_exit_code(rc);
    }
  }
  if (sw.map) { /* issue 13: a map's pixels are not listed one by one */
    char why[128];
    double has = ds_rank_memory(1, rank_mem, why, sizeof why);
    printf("sweep '%s' (%s), hash %016llx\n", sw.name, file, (unsigned long long)sw.hash);
    ds_point p0;
    double tile_sec = 0;
    if (ds_sweep_point(&sw, 0, &p0) == DS_OK) /* ~0.1 s: 64 points x 100 steps in a tile */
      tile_sec = ds_tile_seconds(&sw, &p0, 64, 100) * (double)p0.cfg.train.steps;
    rc = ds_map_plan_print(stdout, &sw, &pr, has, why, from_path ? &from : NULL, tile_sec);
    ds_sweep_free(&sw);
    if (rc) fprintf(stderr, "%s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  if ((rc = ds_sweep_estimate(&sw, &pr, (rank_mem > 0 ? rank_mem : 1024) * 1048576.0, &est))) {
    fprintf(stderr, "%s\n", ds_errmsg());
    ds_sweep_free(&sw);
    return ds_exit_code(rc);
  }
  char why[128], mis[4096] = "", jbl[2048] = "";
  double has = ds_rank_memory(1, rank_mem, why, sizeof why);
  int njb = 0;
  printf("sweep '%s' (%s), hash %016llx\n%d axes, %d replica(s), %lld points\n", sw.name, file,
         (unsigned long long)sw.hash, sw.naxes, sw.replicas, (long long)n);
  /* numbers in the shortest form that tells the axis' values apart */
  int digits[DS_MAX_AXES] = {0};
  for (int a = 0; a < sw.naxes; a++) {
    char *end;
    int num = sw.axes[a].nvals > 0;
    for (int i = 0; i < sw.axes[a].nvals && num; i++) {
      (void)strtod(sw.axes[a].text[i], &end);
      num = *end == 0 && end != sw.axes[a].text[i];
    }
    if (num) digits[a] = ds_short_digits(sw.axes[a].val, sw.axes[a].nvals);
  }
  /* each axis column as wide as its name or its widest value (80 columns) */
  int wid[DS_MAX_AXES];
  for (int a = 0; a < sw.naxes; a++) {
    wid[a] = (int)strlen(sw.axes[a].name);
    for (int i = 0; i < sw.axes[a].nvals; i++) {
      char t[64];
      plan_cell(sw.axes[a].text[i], digits[a], t, sizeof t);
      if ((int)strlen(t) > wid[a]) wid[a] = (int)strlen(t);
    }
  }
  printf("%6s %3s", "point", "rep");
  for (int a = 0; a < sw.naxes; a++) printf(" %*s", wid[a], sw.axes[a].name);
  printf(" %10s %8s\n", "est. GFLOP", "est. s");
  for (int64_t i = 0; i < n; i++) {
    ds_point p;
    if ((rc = ds_sweep_point(&sw, i, &p))) break;
    total += p.cost;
    bytes += ds_point_store_bytes(&p.cfg);
    char r[256];
    int team = ds_point_team_size(&p.cfg, (rank_mem > 0 ? rank_mem : 1024) * 1048576.0);
    if (ds_point_misfit(&p.cfg, team, has, why, r, sizeof r) && nmis++ < 20) {
      size_t l = strlen(mis);
      snprintf(mis + l, sizeof mis - l, "  point %lld: %s\n", (long long)p.id, r);
    }
    const ds_point_cfg *pc = &p.cfg;
    int nf = 0, nb = 0; /* the samples of its training-set and minibatch NTKs */
    if (pc->model.type == DS_MODEL_CNN) ds_point_cnn_ntks(pc, &nf, &nb);
    if (nf > 0 && njb++ < 20) {
      /* the budget run gives the training set's NTK (ds_point_cnn_jbytes) */
      double jb = ds_point_cnn_jbytes(pc, team, has);
      int split = ds_diag_cnn_ntk_split_fits(team, (size_t)ds_point_nparams(pc), nf,
                                             pc->data.d_out, (size_t)jb);
      char b[32];
      ds_fmt_bytes(b, sizeof b, jb);
      size_t l = strlen(jbl);
      snprintf(jbl + l, sizeof jbl - l, "  point %lld: %s on each of %d member(s), %s path\n",
               (long long)p.id, b, team, split ? "split" : "blocked");
    }
    if (!all && i >= 40) continue;
    printf("%6lld %3d", (long long)p.id, p.replica);
    for (int a = 0; a < sw.naxes; a++) {
      char raw[64], t[64];
      ds_cfg_get_text(&p.cfg, sw.axes[a].path, raw, sizeof raw);
      plan_cell(raw, digits[a], t, sizeof t);
      printf(" %*s", wid[a], t);
    }
    printf(" %10.4g %8.3g\n", p.cost * 1e-9, est.sec[i]);
  }
  if (!all && n > 41) printf("... (%lld more; --all lists every point)\n", (long long)(n - 41));
  printf("total: %lld points, %.4g GFLOP, store about %.3g MB (%s)\n", (long long)n, total * 1e-9,
         bytes * 1e-6, bytes >= DS_STORE_SEGMENTS_BYTES ? "STORE plus segment files in STORE.seg/"
                                                        : "one file");
  ds_estimate_print(stdout, &est, &pr);
  ds_estimate_free(&est);
  char hb[32];
  ds_fmt_bytes(hb, sizeof hb, has);
  printf("memory: a rank has %s (%s); %lld point(s) cannot fit%s\n%s", hb, why, (long long)nmis,
         nmis ? " ('dynsweep run' fails them without running them):" : "", mis);
  if (nmis > 20) printf("  ... (%lld more)\n", (long long)(nmis - 20));
  if (njb) /* ds_point_cnn_jbytes: 80 columns (tests/plan.sh) */
    printf("CNN NTK's J budget (a rank's memory less 1/8, less the rest of the point):\n%s", jbl);
  if (njb > 20) printf("  ... (%d more)\n", njb - 20);
  ds_sweep_free(&sw);
  if (rc) fprintf(stderr, "%s\n", ds_errmsg());
  return ds_exit_code(rc);
}

/* ---- run ------------------------------------------------------------------- */

/* Rank 0 reads the file and broadcasts its text: other nodes need not see it. */
static int load_everywhere(const char *file, int nset, char **sets, ds_sweep *sw, int rank) {
  char *text = NULL;
  size_t len = 0;
  int rc = DS_OK;
  if (rank == 0) rc = ds_sweep_read(file, &text, &len);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != DS_OK) return rc;
  long long l = (long long)len;
  MPI_Bcast(&l, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  if (rank != 0) text = calloc(l + 1, 1);
  MPI_Bcast(text, (int)l + 1, MPI_CHAR, 0, MPI_COMM_WORLD);
  rc = ds_sweep_parse_set(file, text, nset, sets, sw);
  free(text);
  /* every input file checked by rank 0 before anything is created; all ranks
   * exit together (issue 11) */
  if (rc == DS_OK && rank == 0 && (rc = ds_sweep_check_inputs(sw)) != DS_OK) ds_sweep_free(sw);
  int rc0 = rc;
  MPI_Bcast(&rc0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc0 != DS_OK && rc == DS_OK) {
    ds_sweep_free(sw);
    rc = ds_fail(rc0, "rank 0 refused the sweep's input files");
  }
  return rc;
}

static int cmd_run(int argc, char **argv) {
  const char *file = NULL, *out = NULL;
  int quiet = 0, verbose = 0;
  double ckpt = 300, publish = 2, drain = 25, rank_mem = 0, attempts = 2, drain_exit = DS_EXIT_DRAINED;
  int retry = 0, nset = 0, bad = 0, isolate = DS_ISOLATE_AUTO;
  char *sets[64];
  for (int i = 0; i < argc; i++) {
    if (set_arg(argc, argv, &i, sets, &nset, &bad)) {
      if (bad) return bad_args(usage_run, "run: --set needs KEY=VALUE (at most 64)%s", "");
      continue;
    }
    double *num = !strcmp(argv[i], "--checkpoint-every") ? &ckpt
                : !strcmp(argv[i], "--publish-every")    ? &publish
                : !strcmp(argv[i], "--drain-timeout")    ? &drain
                : !strcmp(argv[i], "--rank-memory")      ? &rank_mem
                : !strcmp(argv[i], "--max-attempts")     ? &attempts
                : !strcmp(argv[i], "--drain-exit")       ? &drain_exit
                                                         : NULL;
    if (num) {
      if (++i == argc) return bad_args(usage_run, "run: %s needs a number of seconds", argv[i - 1]);
      if ((*num = seconds_arg(argv[i])) < 0)
        return bad_args(usage_run, "run: expected a number of seconds >= 0, got '%s'", argv[i]);
    } else if (!strcmp(argv[i], "--retry")) {
      if (++i == argc || strcmp(argv[i], "failed"))
        return bad_args(usage_run, "run: --retry takes 'failed'%s", "");
      retry = 1;
    } else if (!strcmp(argv[i], "--isolate")) {
      if (++i == argc || (strcmp(argv[i], "auto") && strcmp(argv[i], "always") && strcmp(argv[i], "never")))
        return bad_args(usage_run, "run: --isolate takes auto, always or never%s", "");
      isolate = !strcmp(argv[i], "auto") ? DS_ISOLATE_AUTO : !strcmp(argv[i], "always") ? DS_ISOLATE_ALWAYS
                                                                                          : DS_ISOLATE_NEVER;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
      if (++i == argc) return bad_args(usage_run, "run: %s needs a file name", argv[i - 1]);
      out = argv[i];
    } else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
      quiet = 1;
    } else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
      verbose = 1;
    } else if (argv[i][0] == '-') {
      return bad_args(usage_run, "run: unknown option '%s'", argv[i]);
    } else if (!file) {
      file = argv[i];
    } else {
      return bad_args(usage_run, "run: unexpected argument '%s'", argv[i]);
    }
  }
  if (!file) return bad_args(usage_run, "run: missing the sweep file%s", "");
  if (!out) return bad_args(usage_run, "run: missing -o STORE.h5%s", "");
  if (attempts < 1 || attempts > 1000 || attempts != floor(attempts))
    return bad_args(usage_run, "run: --max-attempts needs a whole number 1..1000%s", "");
  if (drain_exit > 255 || drain_exit != floor(drain_exit))
    return bad_args(usage_run, "run: --drain-exit needs a whole number 0..255%s", "");
  ds_drain_exit_code_set((int)drain_exit);
  /* the handlers are in place since early_signals(); until MPI_Init says
   * which rank we are, the launcher's variables tell */
  const char *er = getenv("OMPI_COMM_WORLD_RANK");
  if (!er) er = getenv("PMIX_RANK");
  if (!er) er = getenv("SLURM_PROCID");
  ds_drain_watchdog_set(drain, !er || atoi(er) == 0);
  MPI_Init(NULL, NULL);
  int rank, size, drained = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ds_drain_watchdog_set(drain, rank == 0);
  if (rank == 0) ds_blas_warn(); /* once per run, not once per rank */
  ds_sweep sw;
  int rc = load_everywhere(file, nset, sets, &sw, rank);
  if (rc == DS_OK) {
    char libs[1024];
    library_versions(libs, sizeof libs);
    if (rank == 0 && !quiet)
      ds_log("sweep '%s': %lld points on %d rank(s), OpenBLAS kernel %s", sw.name,
             (long long)ds_sweep_npoints(&sw), size, ds_blas_kernel());
    ds_run_opts o = {.store_path = out, .quiet = quiet, .verbose = verbose && !quiet,
                     .library_versions = libs, .checkpoint_every = ckpt,
                     .publish_every = publish, .drain_timeout = drain, .drained = &drained,
                     .rank_mem_mb = rank_mem, .rank_mem_given = rank_mem > 0,
                     .max_attempts = (int)attempts, .retry_failed = retry,
                     .isolate = isolate};
    rc = ds_sched_run(&sw, &o, MPI_COMM_WORLD);
    ds_sweep_free(&sw);
  }
  if (rc != DS_OK && rank == 0) fprintf(stderr, "dynsweep: %s\n", ds_errmsg());
  if (rc != DS_OK && rank == 0 && verbose) ds_errtrace_print(stderr); /* DS_TRY's places */
  MPI_Finalize();
  return rc == DS_OK && drained ? (int)drain_exit : ds_exit_code(rc);
}

/* ---- ls / show --------------------------------------------------------------- */

static int fail_store(ds_store *s, int rc) {
  fprintf(stderr, "dynsweep: %s\n", ds_errmsg());
  if (s) ds_store_close(s);
  return ds_exit_code(rc);
}

/* ---- status -------------------------------------------------------------------- */

static double store_num(ds_store *s, const char *name) {
  char buf[64];
  if (ds_store_attr(s, name, buf, sizeof buf) != DS_OK) return NAN;
  return strtod(buf, NULL);
}

static void fmt_secs(char *buf, size_t n, double t) {
  if (t < 0 && t > -5) t = 0; /* clocks of other nodes */
  if (!(t >= 0) || !isfinite(t)) snprintf(buf, n, "?");
  else if (t < 120) snprintf(buf, n, "%.0f s", t);
  else if (t < 7200) snprintf(buf, n, "%.1f min", t / 60);
  else snprintf(buf, n, "%.1f h", t / 3600);
}

static int cmd_status(int argc, char **argv) {
  int only_state = argc == 2 && !strcmp(argv[1], "--state");
  int only_chain = argc == 2 && !strcmp(argv[1], "--chain"); /* Slurm room: submit.c */
  if ((argc != 1 && !only_state && !only_chain) || argv[0][0] == '-')
    return bad_args(usage_status, "status: expected exactly one store file%s", "");
  const char *path = argv[0];
  if (only_chain) return ds_chain_print(path, stdout, 1);
  struct stat st;
  char jpath[4200];
  snprintf(jpath, sizeof jpath, "%s.journal", path);
  if (stat(path, &st) != 0 && stat(jpath, &st) == 0) {
    long wpid;
    int live = ds_store_live_writer(path, &wpid);
    if (only_state) printf("%s\n", live ? "running" : "dead");
    else printf("store:   %s: not published yet (%s)\n", path,
                live ? "a run is creating it" : "the run that was creating it died; run it again");
    return 0;
  }
  ds_store *s = NULL;
  ds_summary_row *rows = NULL;
  int64_t n = 0, nrec = 0;
  double jmtime = 0;
  int rc = ds_store_open(path, &s);
  /* a map store (issue 13): its pixels' outcome bytes, journal folded in */
  /* converged diverged catapult failed (trained or inferred), trained, inferred, unset */
  int64_t mc[7] = {0}, lvc[33] = {0};
  int is_map = rc == DS_OK && ds_store_is_map(s), refined = 0, nlev = 0;
  if (is_map) {
    uint8_t *o = NULL;
    int nax = 0, lev = 0, rax[2] = {-1, -1};
    int64_t *shape = NULL;
    rc = ds_store_read_map_outcomes(s, &o, &n);
    if (rc == DS_OK) rc = ds_store_map_info(s, &nax, &shape, &lev, rax);
    if (rc == DS_OK && lev > 0 && lev <= 32) { /* trained per level, before the inferred fill */
      ds_map_level_counts(o, nax, shape, lev, rax, lvc);
      nlev = lev;
    }
    if (rc == DS_OK) rc = ds_map_fill_refined(o, nax, shape, lev, rax); /* as readers see it */
    free(shape);
    refined = lev > 0;
    for (int64_t i = 0; rc == DS_OK && i < n; i++) {
      if (o[i] == DS_MAP_UNSET) {
        mc[6]++;
        continue;
      }
      mc[o[i] & 3]++;
      mc[o[i] & DS_MAP_INFERRED ? 5 : 4]++;
    }
    free(o);
  } else if (rc == DS_OK) {
    rc = ds_store_read_summary_live(s, &rows, &n, &nrec, &jmtime);
  }
  if (rc != DS_OK) return fail_store(s, rc);
  int64_t c[5] = {0};
  for (int64_t i = 0; i < n && !is_map; i++)
    if (rows[i].status >= 0 && rows[i].status < 5) c[rows[i].status]++;
  free(rows);
  if (is_map) { /* trained pixels make the speed; unknown ones are what is left */
    c[DS_ST_DONE] = mc[4];
    c[DS_ST_PENDING] = mc[6];
    struct stat jst;
    if (stat(jpath, &jst) == 0) jmtime = (double)jst.st_mtim.tv_sec + 1e-9 * jst.st_mtim.tv_nsec;
  }
  char name[128] = "?", state[32] = "?", updated[64] = "";
  if (ds_store_attr(s, "sweep_name", name, sizeof name) != DS_OK) snprintf(name, sizeof name, "?");
  if (ds_store_attr(s, "run_state", state, sizeof state) != DS_OK)
    snprintf(state, sizeof state, "%s", "unknown (store of an older dynsweep)");
  if (ds_store_attr(s, "updated", updated, sizeof updated) != DS_OK) updated[0] = 0;
  double upd = store_num(s, "updated_unix"), start = store_num(s, "session_start_unix");
  double done0 = store_num(s, "session_done0"), gen = store_num(s, "generation");
  ds_clear_error();
  double last = isfinite(upd) ? upd : 0;
  if (jmtime > last) last = jmtime;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double now = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  int64_t fin = c[DS_ST_DONE] + c[DS_ST_DIVERGED] + c[DS_ST_FAILED];
  int64_t left = is_map ? mc[6] : n - fin;
  char ago[32];
  fmt_secs(ago, sizeof ago, now - last);
  /* live or dead: the journal's writer lock, not the recorded state (a
   * killed run or one stopped by a full disk leaves "running" behind) */
  long wpid = 0;
  int live = ds_store_live_writer(path, &wpid);
  int said_running = !strcmp(state, "running");
  if (only_state) {
    printf("%s\n", live ? "running" : said_running ? "dead" : state);
    ds_store_close(s);
    return 0;
  }
  /* lines of at most ~80 columns: the path alone, what follows on the next */
  printf("store:   %s\n         sweep '%s', %lld points, published generation %.0f%s\n", path, name,
         (long long)n, isfinite(gen) ? gen : 0, nrec ? ", plus journal" : "");
  char who[64] = "";
  if (live && wpid > 0) snprintf(who, sizeof who, " (writer pid %ld on this node)", wpid);
  else if (live) snprintf(who, sizeof who, " (writer on another node)");
  if (live) {
    printf("state:   running%s\n         last update %s ago%s%s%s\n", who, ago,
           updated[0] ? " (published " : "", updated, updated[0] ? ")" : "");
  } else {
    const char *what = said_running ? "not running: the last run ended without closing the store"
                     : !strcmp(state, "drained") ? "drained (not running; resumable)"
                     : !strcmp(state, "stopped") ? "stopped by a store error (not running)"
                                                 : state;
    printf("state:   %s\n         last update %s ago%s%s%s\n", what, ago,
           updated[0] ? " (published " : "", updated, updated[0] ? ")" : "");
    if (said_running)
      printf("         (killed, out of memory, node lost or disk full): no writer holds the store\n");
    /* issue 23: what the next run does about the points the death caught */
    if (said_running && (is_map || c[DS_ST_RUNNING] > 0)) {
      char what[64];
      if (is_map) snprintf(what, sizeof what, "tiles were running");
      else snprintf(what, sizeof what, "%lld point(s) were running", (long long)c[DS_ST_RUNNING]);
      printf("attempts: %s when it died; the next run trains every\n"
             "         %s in a child process of its worker (--isolate auto): one\n"
             "         whose own process is killed fails with the signal; a job's\n"
             "         death fails none (crash-loop guard: 10 x --max-attempts starts)\n",
             what, is_map ? "tile" : "single-rank point");
    }
  }
  char nr[32] = "";
  if (ds_store_attr(s, "nranks", nr, sizeof nr) != DS_OK) ds_clear_error();
  if (is_map) {
    int nax = 0;
    int64_t *shape = NULL;
    if (ds_store_map_info(s, &nax, &shape, NULL, NULL) != DS_OK) ds_clear_error();
    printf("map:     ");
    for (int a = 0; shape && a < nax; a++) printf("%s%lld", a ? " x " : "", (long long)shape[a]);
    free(shape);
    /* three lines of at most ~80 columns (a terminal's width) up to 10^8 pixels */
    printf(" pixels; %lld of %lld known (%.1f%%)\n", (long long)(n - mc[6]), (long long)n,
           n ? 100.0 * (double)(n - mc[6]) / (double)n : 100.0);
    printf("         %lld converged, %lld diverged, %lld catapult, %lld failed\n", (long long)mc[0],
           (long long)mc[1], (long long)mc[2], (long long)mc[3]);
    if (refined)
      printf("         %lld trained (%.2f%%), %lld inferred (refinement), %lld not known yet\n",
             (long long)mc[4], n ? 100.0 * (double)mc[4] / (double)n : 0.0, (long long)mc[5],
             (long long)mc[6]);
    else
      printf("         %lld trained, %lld not computed yet\n", (long long)mc[4], (long long)mc[6]);
    /* issue 23: the pixels that killed their own process, with the reason */
    char *fp = ds_calloc(16385, 1);
    if (fp && ds_store_attr(s, "failed_pixels", fp, 16385) == DS_OK && fp[0]) {
      int nl = 0;
      for (const char *q = fp; *q; q++) nl += *q == '\n';
      printf("failed:  %d pixel(s) killed their own process (grid index, values: how):\n", nl);
      const char *q = fp;
      for (int k = 0; k < 5 && *q; k++) {
        const char *e = strchr(q, '\n');
        int len = e ? (int)(e - q) : (int)strlen(q);
        printf("         %.*s\n", len, q);
        q = e ? e + 1 : q + len;
      }
      if (nl > 5) printf("         ... %d more: h5dump -a failed_pixels STORE\n", nl - 5);
    } else {
      ds_clear_error();
    }
    free(fp);
    if (nlev > 0) { /* what each level trained, and the growth a level (plan --from) */
      printf("levels:  trained %lld coarse |", (long long)lvc[0]);
      for (int k = 1; k <= nlev; k++) printf(" %lld", (long long)lvc[k]);
      printf("\n");
      if (nlev >= 2 && lvc[1] > 0 && lvc[2] > 0) {
        printf("         growth a level");
        for (int k = 2; k <= nlev && lvc[k] > 0 && lvc[k - 1] > 0; k++)
          printf(" %.2fx", (double)lvc[k] / (double)lvc[k - 1]);
        printf("\n");
      }
    }
  } else
  printf("points:  %lld done, %lld %s, %lld diverged, %lld failed, %lld pending of %lld "
         "(%.1f%% finished)\n", (long long)c[DS_ST_DONE], (long long)c[DS_ST_RUNNING],
         live || !c[DS_ST_RUNNING] ? "running" : "interrupted",
         (long long)c[DS_ST_DIVERGED], (long long)c[DS_ST_FAILED], (long long)c[DS_ST_PENDING],
         (long long)n, n ? 100.0 * fin / n : 100.0);
  double span = last - start, made = fin - done0;
  /* the ETA the run itself keeps (its cost model corrected by the points
   * finished, eta_unix at each publish); else from the rate */
  double eta_at = store_num(s, "eta_unix");
  ds_clear_error();
  char eta[32] = "";
  if (isfinite(eta_at) && eta_at > 0) fmt_secs(eta, sizeof eta, eta_at > now ? eta_at - now : 0);
  if (isfinite(start) && isfinite(done0) && span > 0 && made > 0) {
    double rate = made / span;
    if (!eta[0] && !refined) fmt_secs(eta, sizeof eta, left / rate); /* refined: most are never trained */
    printf("speed:   %.3g points/s this session (%.0f points in %.0f s)", rate, made, span);
    if (left > 0 && live && eta[0]) printf("; ETA %s", eta);
    printf("\n");
  } else if (left > 0) {
    printf("speed:   no point finished yet this session%s%s\n", live && eta[0] ? "; ETA " : "",
           live && eta[0] ? eta : "");
  }
  if (!live && left > 0)
    printf("resume:  mpirun -q -n %s dynsweep run SWEEP.yaml -o %s   (the sweep file that made it)\n",
           nr[0] ? nr : "P", path);
  ds_store_close(s);
  return ds_chain_print(path, stdout, 0);
}

static int cmd_show(int argc, char **argv) {
  const char *path = NULL, *pt = NULL, *only = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strcmp(argv[i], "--series")) {
      if (++i == argc) return bad_args(usage_show, "show: --series needs a name%s", "");
      only = argv[i];
    } else if (argv[i][0] == '-') {
      return bad_args(usage_show, "show: unknown option '%s'", argv[i]);
    } else if (!path) path = argv[i];
    else if (!pt) pt = argv[i];
    else return bad_args(usage_show, "show: unexpected argument '%s'", argv[i]);
  }
  if (!path || !pt) return bad_args(usage_show, "show: expected STORE and POINT%s", "");
  char *end;
  long long id = strtoll(pt, &end, 10);
  if (*end || end == pt || id < 0)
    return bad_args(usage_show, "show: POINT must be a point id (a whole number >= 0), got '%s'", pt);
  ds_store *s = NULL;
  ds_summary_row *rows = NULL;
  int64_t n;
  int rc = ds_store_open(path, &s);
  if (rc == DS_OK) rc = ds_store_read_summary(s, &rows, &n);
  if (rc != DS_OK) return fail_store(s, rc);
  if (id >= n) {
    free(rows);
    ds_store_close(s);
    fprintf(stderr, "dynsweep: %s: no point %lld (the store has points 0..%lld)\n", path, id,
            (long long)n - 1);
    return 2;
  }
  const ds_summary_row *r = &rows[id];
  char axes[1024];
  if (ds_point_axes_text(path, id, axes, sizeof axes) != DS_OK || !axes[0]) {
    ds_clear_error(); /* a store without its sweep: the fixed fields */
    snprintf(axes, sizeof axes, "width %d depth %d lr %g init_scale %g", r->width, r->depth, r->lr,
             r->init_scale);
  }
  ds_traj tr;
  if ((rc = ds_store_read_traj(s, id, &tr)) != DS_OK) {
    free(rows);
    return fail_store(s, rc);
  }
  /* issue 24: a done row of code 0 (DS_OUT_CONVERGED) was written before "converged"
   * had a criterion (it meant "did not diverge"). Name it as ls/export/phase do (an_open):
   * by the rule of dynsweep/outcome.h on its stored loss series, train.steps and
   * train.tol (from the stored sweep file), code 6 converged or 5 unconverged. */
  ds_summary_row named = *r;
  if (named.status == DS_ST_DONE && named.outcome == DS_OUT_CONVERGED) {
    char *text = NULL;
    ds_sweep sw;
    ds_point p;
    if (ds_store_sweep_text(s, &text) == DS_OK &&
        ds_sweep_parse_flags(path, text, DS_SWEEP_NO_FILES, &sw) == DS_OK) {
      if (ds_sweep_point(&sw, named.combo * sw.replicas + named.replica, &p) == DS_OK) {
        int li = ds_traj_find(&tr, "loss");
        int conv = ds_outcome_converged(li >= 0 ? tr.s[li].step : NULL, li >= 0 ? tr.s[li].val : NULL,
                                        li >= 0 ? tr.s[li].n : 0, p.cfg.train.steps, p.cfg.train.tol,
                                        named.final_loss);
        named.outcome = conv ? DS_OUT_CONVERGED_ROW : DS_OUT_UNCONVERGED;
      }
      ds_sweep_free(&sw);
    }
    ds_clear_error(); /* no stored sweep: the code as stored */
    free(text);
  }
  printf("# point %lld replica %d %s: %s, %lld steps, final loss %g%s%s; outcome %s (event step "
         "%lld, peak ratio %g, %d plateau(s))\n", id, r->replica, axes, ds_status_name(r->status),
         (long long)r->steps, r->final_loss, r->reason[0] ? ", " : "", r->reason,
         ds_outcome_category_name(ds_outcome_category(&named)),
         (long long)r->event_step, r->peak_ratio, r->plateaus);
  free(rows);
  int shown = 0;
  char names[1024] = "";
  for (int i = 0, w = 0; i < tr.n && w < (int)sizeof names; i++)
    w += snprintf(names + w, sizeof names - (size_t)w, "%s%s", i ? ", " : "", tr.s[i].name);
  for (int i = 0; i < tr.n; i++) {
    const ds_series *se = &tr.s[i];
    if (only && strcmp(only, se->name)) continue;
    shown++;
    printf("# %s [%s]: %s\n", se->name, se->unit, se->definition);
    for (int64_t k = 0; k < se->n; k++) {
      printf("%lld", (long long)se->step[k]);
      for (int c = 0; c < se->ncols; c++) printf(" %.17g", se->val[k * se->ncols + c]);
      putchar('\n');
    }
  }
  ds_traj_free(&tr);
  ds_store_close(s);
  if (only && !shown) {
    fprintf(stderr, "dynsweep: point %lld has no series '%s'; it has: %s\n", id, only,
            names[0] ? names : "none (a failed or pending point)");
    return 2;
  }
  return 0;
}

static int cmd_verify(int argc, char **argv) {
  if (argc != 1 || argv[0][0] == '-')
    return bad_args(usage_verify, "verify: expected exactly one store file%s", "");
  int64_t nbad = 0;
  int rc = ds_store_verify(argv[0], stdout, &nbad);
  fflush(stdout);
  if (rc != DS_OK) {
    fprintf(stderr, "dynsweep: %s\n", ds_errmsg());
    return ds_exit_code(rc);
  }
  return nbad ? 1 : 0;
}

static const char *usage_version =
    "usage: dynsweep version [--knobs [--markdown]]\n"
    "\n"
    "Prints versions, the OpenBLAS kernel and the DYNSWEEP_* environment settings\n"
    "that are set. --knobs: every DYNSWEEP_* setting dynsweep reads, with its\n"
    "values, default and meaning, from its own table; --markdown: the table of\n"
    "docs/environment.md.\n";

static int cmd_version(int argc, char **argv) {
  int knobs = argc >= 1 && !strcmp(argv[0], "--knobs");
  int md = knobs && argc >= 2 && !strcmp(argv[1], "--markdown");
  if (argc > knobs + md)
    return bad_args(usage_version, "version: unexpected argument '%s'", argv[knobs + md]);
  if (knobs) {
    ds_knobs_print_all(stdout, md);
    return 0;
  }
  char libs[1024];
  library_versions(libs, sizeof libs);
  const char *best = ds_blas_best_kernel();
  printf("dynsweep %s\n%s\nOpenBLAS kernel: %s ran (best for this CPU: %s)\n  %s\n",
         DYNSWEEP_VERSION, libs, ds_blas_kernel(), best ? best : "generic", ds_blas_explain());
  printf("tanh: %s (DYNSWEEP_TANH=portable: the non-FMA family)\n", ds_nn_tanh_kernel());
  ds_knobs_print_set(stdout);
  return 0;
}

/* keys, models: a table from the binary's own, as text or (--markdown) as
 * the docs hold it. */
static int cmd_table(const char *name, int argc, char **argv, void (*print)(FILE *, int)) {
  if (argc > 1 || (argc == 1 && strcmp(argv[0], "--markdown"))) {
    char usage[64], fmt[64];
    snprintf(usage, sizeof usage, "usage: dynsweep %s [--markdown]\n", name);
    snprintf(fmt, sizeof fmt, "%s: unexpected argument '%%s'", name);
    return bad_args(usage, fmt, argv[0]);
  }
  print(stdout, argc == 1);
  return 0;
}

/* `run` catches its drain signals from the first moment: this runs from the
 * executable's DT_PREINIT_ARRAY, i.e. before the initialisers of every shared
 * library (OpenBLAS starts its threads in one, Open MPI and HDF5 have theirs)
 * and before main(), so before the OpenBLAS re-exec, which keeps the signals
 * blocked across the exec (util/signals.c). glibc passes argc/argv/envp to
 * these functions. Other commands keep the default actions. */
static void early_signals(int argc, char **argv, char **envp) {
  (void)envp;
  if (argc >= 2 && argv && argv[1] && !strcmp(argv[1], "run")) ds_signals_install_drain();
  else ds_signals_unblock();
}
__attribute__((section(".preinit_array"), used)) static void (*const early_signals_p)(
    int, char **, char **) = early_signals;

int main(int argc, char **argv) {
  ds_blas_ensure_fast_kernel(argv);
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    fputs(usage_main, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const char *cmd = argv[1];
  int sub_argc = argc - 2;
  char **sub_argv = argv + 2;
  struct { const char *name, *usage; } cmds[] = {
      {"run", usage_run}, {"plan", usage_plan}, {"ls", ds_usage_ls}, {"export", ds_usage_export}, {"phase", ds_usage_phase}, {"show", usage_show},
      {"status", usage_status}, {"verify", usage_verify}, {"submit", ds_usage_submit},
      {"version", usage_version},
      {"keys", "usage: dynsweep keys [--markdown]\n\nEvery key a sweep file may hold (option "
               "paths, grid aliases, name, seed, grid, map, overrides): type, range, default and\n"
               "meaning, from the parser's own table. --markdown: the table of docs/sweep-spec.md "
               "(\"Key index\").\n"},
      {"models", "usage: dynsweep models [--markdown]\n\nThe model kinds, parameterisations, "
                 "which trainer (point, tile, team) takes\nwhat and which diagnostics apply, "
                 "from the one table plan and run consult\n(src/config/models.c). --markdown: the "
                 "tables of docs/models.md.\n"}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
    if (!strcmp(cmd, cmds[i].name) && want_help(sub_argc, sub_argv)) {
      fputs(cmds[i].usage, stdout);
      return 0;
    }
  if (!strcmp(cmd, "run")) return cmd_run(sub_argc, sub_argv);
  if (!strcmp(cmd, "plan")) return cmd_plan(sub_argc, sub_argv);
  /* ---- analysis room (src/analysis, include/dynsweep/analysis.h) ---- */
  if (!strcmp(cmd, "ls")) return ds_cli_ls(sub_argc, sub_argv);
  if (!strcmp(cmd, "export")) return ds_cli_export(sub_argc, sub_argv);
  if (!strcmp(cmd, "phase")) return ds_cli_phase(sub_argc, sub_argv);
  if (!strcmp(cmd, "map")) return ds_cli_map(sub_argc, sub_argv);
  if (!strcmp(cmd, "show")) return cmd_show(sub_argc, sub_argv);
  if (!strcmp(cmd, "status")) return cmd_status(sub_argc, sub_argv);
  if (!strcmp(cmd, "verify")) return cmd_verify(sub_argc, sub_argv);
  /* ---- submit: the Slurm room (src/submit, include/dynsweep/submit.h) ---- */
  if (!strcmp(cmd, "submit")) return ds_cli_submit(sub_argc, sub_argv);
  if (!strcmp(cmd, "chain")) return ds_cli_chain(sub_argc, sub_argv);
  if (!strcmp(cmd, "version")) return cmd_version(sub_argc, sub_argv);
  if (!strcmp(cmd, "keys")) return cmd_table("keys", sub_argc, sub_argv, ds_keys_print);
  if (!strcmp(cmd, "models")) return cmd_table("models", sub_argc, sub_argv, ds_models_print);
  static const char *const names[] = {"run", "plan", "ls", "export", "phase", "map", "show",
                                      "status", "verify", "submit", "version", "keys", "models"};
  const char *near = ds_suggest(cmd, names, (int)(sizeof names / sizeof *names));
  if (near) fprintf(stderr, "dynsweep: unknown command '%s' (did you mean '%s'?)\n\n%s", cmd, near, usage_main);
  else fprintf(stderr, "dynsweep: unknown command '%s'\n\n%s", cmd, usage_main);
  return 2;
}
