/* publish_bench.c -- the cost of one publish of a large store (issue 14).
 *
 *   publish_bench STORE TARGET_MB [REPEATS]
 *   publish_bench --points N STORE [REPEATS] [PER]
 *
 * --points: a store of N points with small trajectories (one series of 60
 * records, 960 bytes a point: the summary, 240 B a row, and the index, 40 B a
 * series, are a large part of it), filled but for REPEATS x PER points in
 * publishes of 100,000 points; then REPEATS times PER (default 300) more points
 * are journaled and published at once (a publish that finishes a few hundred
 * points). DYNSWEEP_STORE_BLOCKS=0 makes the format-5 store of before the
 * row blocks (summary and index in the top file) for comparison.
 *
 * Creates STORE (which must not exist) through the real store API
 * (include/dynsweep/store.h), fills it with points whose trajectories are
 * "several series recorded every step" until the published file holds about
 * TARGET_MB MB (in a few large publishes, so building stays cheap), then
 * REPEATS times: journals ONE more point (~1.8 MB), fsyncs the journal and
 * times ds_store_publish(s, 1) -- the publish a running sweep makes after a
 * point finished. Meanwhile a thread samples, every ~1 ms, the allocated
 * bytes (st_blocks * 512) of STORE.tmp, STORE, STORE.journal and the files
 * of STORE.seg/ (format 5, DYNSWEEP_STORE_SEGMENTS=1), and the
 * free bytes of the file system (statvfs: noisy, other processes write too).
 *
 * One line per measured publish on stdout, tab-separated:
 *   M <store_bytes_before> <publish_s> <copy_s> <apply_s> <sync_s>
 *     <peak_extra_bytes> <fs_drop_bytes> <new_bytes> <samples> <format> <segment files>
 *     <top file bytes after the publish>
 * where publish_s = copy_s (copy + fallocate) + apply_s (HDF5 open, journal
 * applied, attributes, digests, close) + sync_s (fsync, rename, dir fsync)
 * (+ journal reset and reopening the handles), peak_extra_bytes = the
 * largest (tmp + store + journal + segments) seen minus the same before the
 * publish, fs_drop_bytes = the largest drop of the file system's free bytes.
 * Lines starting with "#" are progress. bench/publish.sh drives it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "dynsweep/store.h"
#include "dynsweep/traj.h"
#include "dynsweep/util.h"

#define STEPS 5000 /* records per series */
#define NAX 1

static char g_tmp[4200], g_store[4200], g_jour[4200], g_dir[4200], g_seg[4200];
static atomic_int g_run, g_stop;
static double g_base, g_peak, g_fs0, g_fsdrop;
static long g_samples;

static double blocks(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 ? 512.0 * (double)st.st_blocks : 0.0;
}

/* allocated (blocks) or apparent (size) bytes of the files in the segment
 * directory of a format-5 store (0 for format 4) */
static double seg_bytes(int apparent) {
  DIR *d = opendir(g_seg);
  double t = 0;
  if (!d) return 0;
  struct dirent *e;
  char p[8500];
  struct stat st;
  while ((e = readdir(d)))
    if (e->d_name[0] != '.') {
      snprintf(p, sizeof p, "%s/%s", g_seg, e->d_name);
      if (stat(p, &st) == 0) t += apparent ? (double)st.st_size : 512.0 * (double)st.st_blocks;
    }
  closedir(d);
  return t;
}

static int seg_files(void) {
  DIR *d = opendir(g_seg);
  int n = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static double fs_free(void) {
  struct statvfs v;
  return statvfs(g_dir, &v) == 0 ? (double)v.f_bfree * (double)v.f_frsize : 0.0;
}

static void *sampler(void *arg) {
  (void)arg;
  struct timespec ts = {0, 1000000};
  while (!atomic_load(&g_stop)) {
    if (atomic_load(&g_run)) {
      /* tmp first: a rename between the two stats counts the new file twice
       * (an over-estimate by at most the new data), never misses the copy */
      double t = blocks(g_tmp), s = blocks(g_store), j = blocks(g_jour), g = seg_bytes(0);
      double x = t + s + j + g - g_base;
      if (x > g_peak) g_peak = x;
      double d = g_fs0 - fs_free();
      if (d > g_fsdrop) g_fsdrop = d;
      g_samples++;
    }
    nanosleep(&ts, NULL);
  }
  return NULL;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static double rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (double)(rng >> 11) * 0x1.0p-53;
}

/* A point's trajectory: loss, test_loss, grad_norm (scalars), sv/W1 and
 * sv/W2 (top-16 singular values), layers/norm (4 layers), every step. */
static int64_t g_steps = STEPS;
static int g_small; /* --points: one series of 60 records */

static int make_traj(ds_traj *t) {
  static const struct { const char *name; int ncols; } S[] = {
      {"loss", 1}, {"test_loss", 1}, {"grad_norm", 1}, {"sv/W1", 16}, {"sv/W2", 16},
      {"layers/norm", 4}};
  ds_traj_init(t);
  double v[16];
  for (size_t k = 0; k < (g_small ? 1 : sizeof S / sizeof S[0]); k++) {
    int idx = ds_traj_add(t, S[k].name, S[k].ncols, "1", "synthetic (bench/publish_bench.c)");
    if (idx < 0) return idx;
    for (int64_t step = 0; step < g_steps; step++) {
      for (int c = 0; c < S[k].ncols; c++) v[c] = rnd();
      int rc = ds_traj_append(t, idx, step, v);
      if (rc != DS_OK) return rc;
    }
  }
  return DS_OK;
}

static ds_summary_row row_of(int64_t id) {
  ds_summary_row r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.combo = id;
  r.width = 16;
  r.depth = 2;
  r.lr = 0.01;
  r.init_scale = 1;
  r.status = DS_ST_DONE;
  r.steps = g_steps;
  r.final_loss = r.min_loss = r.final_test_loss = 0.5;
  r.diverged_step = -1;
  r.rank = 1;
  r.event_step = -1;
  r.plateau_end = -1;
  r.team_size = 1;
  r.attempts = 1;
  return r;
}

static int die(const char *what) {
  fprintf(stderr, "publish_bench: %s: %s\n", what, ds_errmsg());
  return 1;
}

int main(int argc, char **argv) {
  int64_t npts = 0, per = 1;
  const char *path = argc > 1 ? argv[1] : NULL;
  double target = argc > 2 ? atof(argv[2]) * 1e6 : 0;
  int repeats = argc > 3 ? atoi(argv[3]) : 3;
  if (argc > 3 && !strcmp(argv[1], "--points")) {
    npts = atoll(argv[2]);
    path = argv[3];
    target = 0;
    repeats = argc > 4 ? atoi(argv[4]) : 3;
    per = argc > 5 ? atoll(argv[5]) : 300;
    g_small = 1, g_steps = 60;
  } else if (argc < 3) {
    fprintf(stderr, "usage: publish_bench STORE TARGET_MB [REPEATS] | --points N STORE [REPEATS] [PER]\n");
    return 2;
  }
  snprintf(g_store, sizeof g_store, "%s", path);
  snprintf(g_tmp, sizeof g_tmp, "%s.tmp", path);
  snprintf(g_jour, sizeof g_jour, "%s.journal", path);
  snprintf(g_seg, sizeof g_seg, "%s.seg", path);
  snprintf(g_dir, sizeof g_dir, "%s", path);
  char *sl = strrchr(g_dir, '/');
  if (sl) *sl = 0; else snprintf(g_dir, sizeof g_dir, ".");

  ds_traj traj;
  if (make_traj(&traj) != DS_OK) return die("trajectory");
  char *pk = NULL;
  size_t pklen = 0;
  if (ds_traj_pack(&traj, &pk, &pklen) != DS_OK) return die("pack");
  free(pk);
  double per_point = 0; /* payload bytes of one point: steps + values */
  for (int k = 0; k < traj.n; k++) per_point += 8.0 * (double)traj.s[k].n * (1 + traj.s[k].ncols);
  int64_t nfill = (int64_t)(target / per_point + 0.5);
  if (nfill < 1) nfill = 1;
  if (npts) nfill = npts - repeats * per;
  int64_t np = nfill + repeats * per;

  static const char *an[NAX] = {"lr"}, *ap[NAX] = {"optimizer.lr"};
  double *axv = calloc((size_t)np, sizeof *axv);
  ds_summary_row *rows = calloc((size_t)np, sizeof *rows);
  if (!axv || !rows) return 1;
  for (int64_t i = 0; i < np; i++) {
    axv[i] = 0.01 * (double)(i + 1);
    rows[i] = row_of(i);
    rows[i].status = DS_ST_PENDING;
    rows[i].rank = -1;
    rows[i].team_size = 0;
  }
  ds_store_meta m;
  memset(&m, 0, sizeof m);
  m.sweep_name = "publish-bench";
  m.sweep_text = "name: publish-bench\n# synthetic store of bench/publish_bench.c\n";
  m.sweep_path = "bench/publish_bench.c";
  m.sweep_hash = 1;
  m.dynsweep_version = "bench";
  m.library_versions = "bench";
  m.hosts = "localhost";
  m.start_time = "2026-01-01T00:00:00Z";
  m.blas_kernel = "none";
  m.nranks = 1;
  m.naxes = NAX;
  m.axis_names = an;
  m.axis_paths = ap;
  m.npoints = np;
  m.point_axis_vals = axv;

  ds_store *s = NULL;
  if (ds_store_create(path, &m, rows, &s) != DS_OK) return die("create");
  printf("# point payload %.0f bytes (journal record %zu bytes); %lld points to fill, %d measured\n",
         per_point, pklen, (long long)nfill, repeats);
  /* fill in about 4 publishes (at least 64 MB and at most 2 GB of journal each) */
  double batch_b = target / 4;
  if (batch_b < 64e6) batch_b = 64e6;
  if (batch_b > 2e9) batch_b = 2e9;
  int64_t batch = npts ? 100000 : (int64_t)(batch_b / per_point) + 1;
  double t0 = ds_now();
  for (int64_t i = 0; i < nfill; i++) {
    ds_summary_row r = row_of(i);
    if (ds_store_write_point(s, &r, &traj) != DS_OK) return die("write_point");
    if ((i + 1) % batch == 0 || i + 1 == nfill) {
      if (ds_store_publish(s, 1) != DS_OK) return die("publish (fill)");
      struct stat st;
      stat(path, &st);
      printf("# filled %lld points, store %.0f bytes, %.1f s\n", (long long)(i + 1),
             (double)st.st_size, ds_now() - t0);
      fflush(stdout);
    }
  }

  pthread_t th;
  pthread_create(&th, NULL, sampler, NULL);
  ds_store_stats a, b;
  for (int k = 0; k < repeats; k++) {
    for (int64_t j = 0; j < per; j++) {
      ds_summary_row r = row_of(nfill + k * per + j);
      if (ds_store_write_point(s, &r, &traj) != DS_OK) return die("write_point");
    }
    if (ds_store_sync(s) != DS_OK) return die("sync");
    struct stat st;
    stat(path, &st);
    double before = (double)st.st_size + seg_bytes(1);
    double jb = blocks(g_jour);
    sync(); /* the fill's dirty pages are not this publish's to write */
    g_base = blocks(g_store) + jb + seg_bytes(0);
    g_peak = 0;
    g_fs0 = fs_free();
    g_fsdrop = 0;
    g_samples = 0;
    ds_store_get_stats(s, &a);
    atomic_store(&g_run, 1);
    double p0 = ds_now();
    int rc = ds_store_publish(s, 1);
    double p1 = ds_now();
    atomic_store(&g_run, 0);
    struct timespec ts = {0, 3000000};
    nanosleep(&ts, NULL); /* let a sample in flight finish */
    if (rc != DS_OK) return die("publish");
    ds_store_get_stats(s, &b);
    double copy = b.copy_s - a.copy_s, sy = b.sync_s - a.sync_s, tot = p1 - p0;
    stat(path, &st);
    printf("M\t%.0f\t%.4f\t%.4f\t%.4f\t%.4f\t%.0f\t%.0f\t%.0f\t%ld\t%d\t%d\t%.0f\n", before, tot, copy,
           tot - copy - sy, sy, g_peak, g_fsdrop, per_point * (double)per, g_samples, seg_files() ? 5 : 4,
           seg_files(), (double)st.st_size);
    fflush(stdout);
  }
  atomic_store(&g_stop, 1);
  pthread_join(th, NULL);
  ds_traj_free(&traj);
  if (ds_store_close(s) != DS_OK) return die("close");
  free(axv);
  free(rows);
  return 0;
}
