/* probe.c -- measure what this machine does per second, once, and cache it.
 *
 * `dynsweep plan` turns a point's shapes into seconds (ds_point_seconds) with
 * these rates. Small GEMMs run far below DGEMM peak (a 16 x 16 layer on 8
 * samples at a few percent of it), so the probe times the three GEMMs of a
 * training step at layer widths 2..512 and 1..512 samples, one tiny call (the
 * per-call overhead), a daxpy (the elementwise passes) and the SVD and
 * symmetric eigensolver of the diagnostics at sizes 4..256. Each figure is
 * the best of five timings of a repetition lasting >= 1.5 ms of CPU time (a
 * core of its own: on a loaded machine points take longer); the whole
 * probe takes ~0.6 s (the load average is recorded with the figures, and
 * `plan --recalibrate` measures again).
 *
 * Cache: $XDG_CACHE_HOME/dynsweep/probe-<host>-<cpu>-<openblas core>.txt
 * (XDG_CACHE_HOME unset or relative: ~/.cache). Its "key" line names host,
 * CPU model, kernel release, OpenBLAS core and config, dynsweep version and
 * probe format; a file whose key differs, or that does not parse, is probed
 * again and replaced (written to a temporary file and renamed). A cache
 * directory that cannot be created or written is not an error: the figures
 * are used for this run only and note says why. */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "dynsweep/probe.h"
#include "dynsweep/util.h"

#define PROBE_FORMAT 1

extern void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
                    double *u, const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork,
                    int *iwork, int *info, size_t);
extern void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
                    double *work, const int *lwork, int *iwork, const int *liwork, int *info, size_t, size_t);

static double pw(int base, int i) { return pow(base, i); }
static double probe_w(int i) { return pw(2, i + 1); }
static double probe_b(int i) { return pw(8, i); }
static double probe_s(int i) { return pw(4, i + 1); }

/* ---- the measurements ---- */

typedef struct {
  int m, b;
  double *W, *A, *Z, *dW, *dA, *S, *work;
  int *iwork;
  int lwork, liwork;
} bufs;

static void fill(double *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    x[i] = ((seed >> 8) & 0xffff) / 65536.0 - 0.5;
  }
}

static void op_step(bufs *q) {
  int w = q->m, b = q->b;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, w, b, w, 1.0, q->W, w, q->A, w, 0.0, q->Z, w);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, w, w, b, 1.0, q->Z, w, q->A, w, 0.0, q->dW, w);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, w, b, w, 1.0, q->W, w, q->Z, w, 0.0, q->dA, w);
}
static void op_call(bufs *q) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 1, 2, 1.0, q->W, 2, q->A, 2, 0.0, q->Z, 2);
}
/* the skinny GEMMs of a 1-unit layer on 1024 samples of 128 inputs: a
 * forward pass (1 x 128 by 128 x 1024), dW (1 x 1024 by 1024 x 128), dA
 * (128 x 1 by 1 x 1024) */
static void op_skinny(bufs *q) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 1, 1024, 128, 1.0, q->W, 1, q->A, 128, 0.0, q->Z, 1);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, 1, 128, 1024, 1.0, q->Z, 1, q->A, 128, 0.0, q->dW, 1);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, 128, 1024, 1, 1.0, q->W, 1, q->Z, 1, 0.0, q->dA, 128);
}
static void op_axpy(bufs *q) { cblas_daxpy(q->m, 1e-3, q->A, 1, q->Z, 1); }
static void op_svd(bufs *q) {
  int n = q->m, info, one = 1;
  double du;
  memcpy(q->dW, q->W, sizeof(double) * n * n);
  dgesdd_("N", &n, &n, q->dW, &n, q->S, &du, &one, &du, &one, q->work, &q->lwork, q->iwork, &info, 1);
}
static void op_syev(bufs *q) {
  int n = q->m, info;
  memcpy(q->dW, q->W, sizeof(double) * n * n);
  dsyevd_("V", "L", &n, q->dW, &n, q->S, q->work, &q->lwork, q->iwork, &q->liwork, &info, 1, 1);
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Seconds of one op: the best of five (three if > 5 ms) timings of a
 * repetition of >= 1.5 ms of this thread's CPU time (what a core of its own
 * does: time another process had the core is not counted, and a timing
 * disturbed otherwise is longer, never shorter, so the best is the
 * reproducible figure). */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double time_op(void (*op)(bufs *), bufs *q) {
  op(q); /* warm: page faults, first-call setup */
  int reps = 1;
  double t0 = cpu_now();
  op(q);
  double one = cpu_now() - t0;
  if (one < 1.5e-3) reps = (int)(1.5e-3 / (one > 1e-8 ? one : 1e-8)) + 1;
  double s[5];
  int ns = one > 5e-3 ? 3 : 5; /* the big shapes: fewer, each long enough */
  for (int k = 0; k < ns; k++) {
    t0 = cpu_now();
    for (int r = 0; r < reps; r++) op(q);
    s[k] = (cpu_now() - t0) / reps;
  }
  qsort(s, ns, sizeof s[0], cmpd);
  return s[0] > 1e-12 ? s[0] : 1e-12;
}

static int measure(ds_probe *p) {
  int wmax = (int)probe_w(DS_PROBE_NW - 1), bmax = (int)probe_b(DS_PROBE_NB - 1);
  int smax = (int)probe_s(DS_PROBE_NS - 1);
  bufs q = {0};
  size_t big = (size_t)wmax * (wmax > bmax ? wmax : bmax);
  q.W = malloc(sizeof(double) * big);
  q.A = malloc(sizeof(double) * big);
  q.Z = malloc(sizeof(double) * big);
  q.dW = malloc(sizeof(double) * big);
  q.dA = malloc(sizeof(double) * big);
  q.S = malloc(sizeof(double) * smax);
  /* workspace: dsyevd 'V' needs 1 + 6n + 2n^2, dgesdd 'N' 3n + max(n, 7n); liwork 8n */
  q.lwork = 1 + 6 * smax + 2 * smax * smax + 16 * smax;
  q.liwork = 8 * smax + 3;
  q.work = malloc(sizeof(double) * q.lwork);
  q.iwork = malloc(sizeof(int) * q.liwork);
  if (!q.W || !q.A || !q.Z || !q.dW || !q.dA || !q.S || !q.work || !q.iwork) {
    free(q.W), free(q.A), free(q.Z), free(q.dW), free(q.dA), free(q.S), free(q.work), free(q.iwork);
    return ds_fail(DS_ENOMEM, "probe: out of memory");
  }
  fill(q.W, big, 1), fill(q.A, big, 2), fill(q.Z, big, 3);
  double t0 = ds_now();
  for (int iw = 0; iw < DS_PROBE_NW; iw++)
    for (int ib = 0; ib < DS_PROBE_NB; ib++) {
      q.m = (int)probe_w(iw), q.b = (int)probe_b(ib);
      p->gemm[iw][ib] = time_op(op_step, &q) / (6.0 * q.m * q.m * q.b);
    }
  p->call = time_op(op_call, &q);
  p->skinny = time_op(op_skinny, &q) / (3 * 128.0 * 1024);
  q.m = 16384;
  p->vec = time_op(op_axpy, &q) / q.m;
  for (int i = 0; i < DS_PROBE_NS; i++) {
    q.m = (int)probe_s(i);
    /* a symmetric matrix for dsyevd: W + W^T in place of the first s x s */
    for (int c = 0; c < q.m; c++)
      for (int r = 0; r < c; r++) q.W[r + (size_t)c * q.m] = q.W[c + (size_t)r * q.m];
    p->svd[i] = time_op(op_svd, &q);
    p->syev[i] = time_op(op_syev, &q);
  }
  p->seconds = ds_now() - t0;
  free(q.W), free(q.A), free(q.Z), free(q.dW), free(q.dA), free(q.S), free(q.work), free(q.iwork);
  double la[1] = {0};
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &la[0]) != 1) la[0] = 0;
    fclose(f);
  }
  p->load = la[0];
  p->when = (long long)time(NULL);
  p->cached = 0;
  return DS_OK;
}

/* ---- the key and the cache file ---- */

static void cpu_model(char *buf, size_t n) {
  snprintf(buf, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10)) continue;
    char *c = strchr(line, ':');
    if (!c) continue;
    c++;
    while (*c == ' ' || *c == '\t') c++;
    c[strcspn(c, "\n")] = 0;
    snprintf(buf, n, "%s", c);
    break;
  }
  fclose(f);
}

/* Letters, digits, '.', '_' and '-' only, runs of others as one '_'. */
static void clean(char *s, size_t max) {
  size_t o = 0;
  for (size_t i = 0; s[i] && o + 1 < max; i++) {
    char c = s[i];
    int okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_';
    if (okc) s[o++] = c;
    else if (o && s[o - 1] != '_') s[o++] = '_';
  }
  while (o && s[o - 1] == '_') o--;
  s[o] = 0;
}

static void make_key(ds_probe *p, char *name, size_t nn) {
  char host[256] = "", cpu[256], core[64];
  struct utsname u;
  if (gethostname(host, sizeof host - 1)) snprintf(host, sizeof host, "unknown");
  if (uname(&u)) snprintf(u.release, sizeof u.release, "unknown");
  cpu_model(cpu, sizeof cpu);
  snprintf(core, sizeof core, "%s", ds_blas_kernel());
  snprintf(p->key, sizeof p->key, "format=%d version=%s host=%s cpu=%s kernel=%s core=%s openblas=%s",
           PROBE_FORMAT, DYNSWEEP_VERSION, host, cpu, u.release, core, ds_blas_config());
  for (char *c = p->key; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' ';
  clean(host, 64), clean(cpu, 96), clean(core, 32);
  snprintf(name, nn, "probe-%.64s-%.96s-%.32s.txt", host, cpu, core);
}

/* The cache directory ($XDG_CACHE_HOME/dynsweep, ~/.cache/dynsweep), "" if none. */
static void cache_dir(char *buf, size_t n) {
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  buf[0] = 0;
  if (x && x[0] == '/') snprintf(buf, n, "%s/dynsweep", x);
  else if (h && h[0] == '/') snprintf(buf, n, "%s/.cache/dynsweep", h);
}

static int read_cache(ds_probe *p) {
  FILE *f = fopen(p->path, "r");
  if (!f) return 0;
  char line[2048];
  int ok = 0, have = 0, ng = 0, ns = 0;
  ds_probe r = *p;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    int iw, ib, i;
    double v;
    if (!strncmp(line, "key ", 4)) ok = !strcmp(line + 4, p->key);
    else if (sscanf(line, "probed %lld", &r.when) == 1) have |= 1;
    else if (sscanf(line, "seconds %lf", &r.seconds) == 1) have |= 2;
    else if (sscanf(line, "load %lf", &r.load) == 1) have |= 4;
    else if (sscanf(line, "call %lf", &r.call) == 1 && r.call > 0) have |= 8;
    else if (sscanf(line, "vec %lf", &r.vec) == 1 && r.vec > 0) have |= 16;
    else if (sscanf(line, "skinny %lf", &r.skinny) == 1 && r.skinny > 0) have |= 32;
    else if (sscanf(line, "gemm %d %d %lf", &iw, &ib, &v) == 3 && iw >= 0 && iw < DS_PROBE_NW && ib >= 0 &&
             ib < DS_PROBE_NB && v > 0 && isfinite(v))
      r.gemm[iw][ib] = v, ng++;
    else if (sscanf(line, "svd %d %lf", &i, &v) == 2 && i >= 0 && i < DS_PROBE_NS && v > 0)
      r.svd[i] = v, ns++;
    else if (sscanf(line, "syev %d %lf", &i, &v) == 2 && i >= 0 && i < DS_PROBE_NS && v > 0)
      r.syev[i] = v, ns++;
  }
  fclose(f);
  if (!ok || have != 63 || ng != DS_PROBE_NW * DS_PROBE_NB || ns != 2 * DS_PROBE_NS) return 0;
  *p = r;
  p->cached = 1;
  return 1;
}

static void write_cache(ds_probe *p, const char *dir) {
  char tmp[1100];
  /* mkdir -p of the directory (two levels at most: ~/.cache/dynsweep) */
  char parent[1024];
  snprintf(parent, sizeof parent, "%s", dir);
  char *sl = strrchr(parent, '/');
  if (sl && sl != parent) {
    *sl = 0;
    if (mkdir(parent, 0755) && errno != EEXIST) goto fail;
  }
  if (mkdir(dir, 0755) && errno != EEXIST) goto fail;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", p->path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) goto fail;
  char iso[32];
  time_t t = (time_t)p->when;
  strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  fprintf(f, "# dynsweep probe (src/util/probe.c): seconds per flop of the training-step\n"
             "# GEMMs of a w x w layer on b samples (gemm IW IB, w = 2^(IW+1), b = 8^IB), one\n"
             "# tiny BLAS call, a daxpy element, SVD/eigen of s x s (s = 4^(I+1)); %s\n", iso);
  fprintf(f, "key %s\nprobed %lld\nseconds %.4f\nload %.2f\ncall %.6e\nvec %.6e\nskinny %.6e\n", p->key,
          p->when, p->seconds, p->load, p->call, p->vec, p->skinny);
  for (int iw = 0; iw < DS_PROBE_NW; iw++)
    for (int ib = 0; ib < DS_PROBE_NB; ib++) fprintf(f, "gemm %d %d %.6e\n", iw, ib, p->gemm[iw][ib]);
  for (int i = 0; i < DS_PROBE_NS; i++) fprintf(f, "svd %d %.6e\nsyev %d %.6e\n", i, p->svd[i], i, p->syev[i]);
  int bad = ferror(f);
  if (fclose(f) || bad || rename(tmp, p->path)) {
    unlink(tmp);
    goto fail;
  }
  return;
fail:
  snprintf(p->note, sizeof p->note, "not cached: %.160s: %s", dir, strerror(errno));
}

/* OpenBLAS retries mmap without end when its buffer does not fit an address
 * space limit: probe only with 256 MB to spare under RLIMIT_AS. */
static int room_to_probe(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY) return 1;
  unsigned long long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%llu", &pages) != 1) pages = 0;
    fclose(f);
  }
  return (double)rl.rlim_cur > (double)pages * sysconf(_SC_PAGESIZE) + 256.0 * 1048576;
}

int ds_probe_get(int recalibrate, ds_probe *p) {
  memset(p, 0, sizeof *p);
  char name[256], dir[900];
  make_key(p, name, sizeof name);
  cache_dir(dir, sizeof dir);
  if (dir[0]) snprintf(p->path, sizeof p->path, "%s/%s", dir, name);
  if (!recalibrate && p->path[0] && read_cache(p)) return DS_OK;
  int rc = room_to_probe() ? measure(p) : ds_fail(DS_ENOMEM, "address space limit (ulimit -v) too tight");
  if (rc) { /* nominal rates, said: the estimate is then a rough one */
    for (int iw = 0; iw < DS_PROBE_NW; iw++)
      for (int ib = 0; ib < DS_PROBE_NB; ib++) p->gemm[iw][ib] = 1 / 5e9;
    p->call = 1e-7, p->vec = 1e-9, p->skinny = 1e-9;
    for (int i = 0; i < DS_PROBE_NS; i++) {
      double s = probe_s(i);
      p->svd[i] = 4 * s * s * s / 5e9, p->syev[i] = 9 * s * s * s / 5e9;
    }
    p->when = (long long)time(NULL);
    p->nominal = 1;
    snprintf(p->note, sizeof p->note, "no probe: %.200s", ds_errmsg());
    return rc;
  }
  if (p->path[0]) write_cache(p, dir);
  else snprintf(p->note, sizeof p->note, "not cached: neither XDG_CACHE_HOME nor HOME is an absolute path");
  return DS_OK;
}

/* ---- using the figures ---- */

/* Position of x on the grid base^(i + off), i = 0..n-1, clamped: index + fraction. */
static void grid_pos(double x, double base, int off, int n, int *i, double *f) {
  double u = log(x > 1 ? x : 1) / log(base) - off;
  if (u <= 0) u = 0;
  if (u >= n - 1) u = n - 1;
  *i = (int)u;
  if (*i >= n - 1) *i = n - 2;
  *f = u - *i;
}

double ds_probe_gemm_spf(const ds_probe *p, double w, double b) {
  int iw, ib;
  double fw, fb;
  grid_pos(w, 2, 1, DS_PROBE_NW, &iw, &fw);
  grid_pos(b, 8, 0, DS_PROBE_NB, &ib, &fb);
  double l00 = log(p->gemm[iw][ib]), l01 = log(p->gemm[iw][ib + 1]);
  double l10 = log(p->gemm[iw + 1][ib]), l11 = log(p->gemm[iw + 1][ib + 1]);
  return exp((1 - fw) * ((1 - fb) * l00 + fb * l01) + fw * ((1 - fb) * l10 + fb * l11));
}

/* Interpolate seconds per flop (flops ~ c s^3) on the size grid; beyond the
 * largest size the rate of the largest. */
static double cubic_s(const double *t, double s) {
  int i;
  double f;
  if (s < 1) s = 1;
  grid_pos(s, 4, 1, DS_PROBE_NS, &i, &f);
  double s0 = probe_s(i), s1 = probe_s(i + 1);
  double l0 = log(t[i] / (s0 * s0 * s0)), l1 = log(t[i + 1] / (s1 * s1 * s1));
  double spf = exp((1 - f) * l0 + f * l1);
  double fixed = t[0] * (s < 4 ? 1 : 0); /* below 4 x 4: the 4 x 4 time */
  double v = spf * s * s * s;
  return v > fixed ? v : fixed;
}

double ds_probe_gemm_s(const ds_probe *p, double m, double n, double k, double w, double b) {
  double big = m * k > k * n ? m * k : k * n;
  big = m * n > big ? m * n : big;
  double flop = 2 * m * n * k * ds_probe_gemm_spf(p, w, b), mem = big * p->skinny;
  return (flop > mem ? flop : mem) + p->call;
}

double ds_probe_svd_s(const ds_probe *p, double m, double n) {
  double lo = m < n ? m : n, hi = m < n ? n : m;
  if (lo < 1) return 0;
  /* below 4 x 4 (a row or column: the e2e map of a scalar output) the work
   * is a pass over its elements: the 4 x 4 time per 16 elements */
  if (lo < 4) {
    double t = p->svd[0] * lo * hi / 16;
    return t > p->call ? t : p->call;
  }
  /* dgesdd 'N' of m x n ~ 4 m n min(m, n): the square of side lo, scaled by hi / lo */
  return cubic_s(p->svd, lo) * (hi / lo);
}

double ds_probe_syev_s(const ds_probe *p, double s) { return s >= 1 ? cubic_s(p->syev, s) : 0; }

void ds_probe_basis(const ds_probe *p, char *buf, size_t n) {
  /* w = 64 is iw 5, w = 512 iw 8; b = 64 is ib 2, 512 ib 3 */
  snprintf(buf, n, "DGEMM 16x16 on 64 samples %.2g GFLOP/s, 64x64 %.3g, 512x512 on 512 %.3g",
           1e-9 / p->gemm[3][2], 1e-9 / p->gemm[5][2], 1e-9 / p->gemm[8][3]);
}
