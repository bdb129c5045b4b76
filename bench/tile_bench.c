/* tile_bench.c -- map tiles trained together (src/nn/tile.c) on the study's
 * workload (docs/maps.md): width 16, depth 2, d_in 16, d_out 1, n = 272,
 * mean field, no bias, mse mean, full-batch GD, 1000 steps; tiles of P points
 * (default 256) for linear, relu and tanh hidden layers. Prints trainings per
 * second (one core: OPENBLAS_NUM_THREADS=1 is set here) and the GFLOP/s of the
 * step's model FLOPs (ds_mlp_step_flops) against the square DGEMM rate
 * measured in the same run (best of 3 at n = 1024 and 2048), repeats times
 * each (min / median / max). Times are process CPU time (the machine is
 * shared: wall time would count the other jobs).
 *   build/dynsweep-bench-tile [P [steps [repeats [acts]]]]   (default 256 1000 5 linear,relu,tanh)
 *   build/dynsweep-bench-tile --gemms    the two GEMMs of a step alone, per point
 *       and stacked over g points (g = 1, 4, 16, 64), LIBXSMM against OpenBLAS,
 *       best of 7 (what src/nn/tile.c chose from) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include "dynsweep/nn.h"
#include "dynsweep/tile.h"

static int nonfinite;
static int never_drop(void *arg, int p, int64_t t, double loss) {
  if (!isfinite(loss)) nonfinite++;
  return !isfinite(loss);
}

/* process CPU time: the machine is shared, wall time counts the others' load */
static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double dgemm_rate(int S) {
  double *A = malloc(sizeof(double) * S * S), *B = malloc(sizeof(double) * S * S),
         *C = malloc(sizeof(double) * S * S);
  for (long i = 0; i < (long)S * S; i++) A[i] = B[i] = 1.0 / (1 + i % 7);
  double best = INFINITY;
  for (int r = 0; r < 3; r++) {
    double t0 = cpu_now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1.0, A, S, B, S, 0.0, C, S);
    double t = cpu_now() - t0;
    best = t < best ? t : best;
  }
  free(A), free(B), free(C);
  return 2.0 * S * S * (double)S / best * 1e-9;
}

/* Z^T (n x gm) = X^T (n x d) W^T (d x gm) and W^T (d x gm) += X (d x n) D (n x gm), over
 * 64 points' buffers in turn (in cache as in a tile) */
static void gemms(double dgemm) {
  const int n = 272, d = 16, m = 16, P = 64;
  double *XT = calloc((size_t)n * d, 8), *X = calloc((size_t)n * d, 8);
  double *W = calloc((size_t)d * m * P, 8), *Z = calloc((size_t)n * m * P, 8);
  for (int i = 0; i < n * d; i++) XT[i] = X[i] = 1.0 / (1 + i % 5);
  for (int i = 0; i < d * m * P; i++) W[i] = 1e-3 / (1 + i % 3);
  int gs[4] = {1, 4, 16, 64};
  printf("GEMM shapes of a step (M x N x K, column-major), GFLOP/s and %% of DGEMM %.1f:\n", dgemm);
  for (int gi = 0; gi < 4; gi++)
    for (int which = 0; which < 2; which++)
      for (int lib = 0; lib < 2; lib++) {
        int g = gs[gi], N = g * m;
        double one = 1.0, zero = 0.0, best = INFINITY;
#ifdef DS_HAVE_LIBXSMM
        libxsmm_blasint ln = n, ld = d;
        libxsmm_dmmfunction k = NULL;
        if (lib == 1)
          k = which == 0 ? libxsmm_dmmdispatch(n, N, d, &ln, &ld, &ln, &one, &zero, NULL, NULL)
                         : libxsmm_dmmdispatch(d, N, n, &ld, &ln, &ld, &one, &one, NULL, NULL);
        if (lib == 1 && !k) continue;
#else
        if (lib == 1) continue;
#endif
        for (int r = 0; r < 7; r++) {
          double t0 = cpu_now();
          for (int rep = 0; rep < 50; rep++)
            for (int p = 0; p < P; p += g) {
              double *w = W + (size_t)p * d * m, *z = Z + (size_t)p * n * m;
#ifdef DS_HAVE_LIBXSMM
              if (k) {
                if (which == 0) k(XT, w, z);
                else k(X, z, w);
                continue;
              }
#endif
              if (which == 0)
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, N, d, 1.0, XT, n, w, d,
                            0.0, z, n);
              else
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d, N, n, 1.0, X, d, z, n,
                            1.0, w, d);
            }
          double t = (cpu_now() - t0) / 50;
          best = t < best ? t : best;
        }
        double fl = 2.0 * n * d * m * P;
        printf("  %-28s %4d x %4d x %3d  %-8s %6.1f GFLOP/s %6.1f%%\n",
               which == 0 ? "Z^T = X^T W^T (beta 0)" : "W^T += X D (beta 1)", which ? d : n, N,
               which ? n : d, lib ? "libxsmm" : "OpenBLAS", fl / best * 1e-9,
               100 * fl / best * 1e-9 / dgemm);
      }
  free(XT), free(X), free(W), free(Z);
}

int main(int argc, char **argv) {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  if (argc > 1 && !strcmp(argv[1], "--gemms")) {
    double a = dgemm_rate(1024), b = dgemm_rate(2048);
    gemms(a > b ? a : b);
    return 0;
  }
  int P = argc > 1 ? atoi(argv[1]) : 256;
  long steps = argc > 2 ? atol(argv[2]) : 1000;
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  const char *acts = argc > 4 ? argv[4] : "linear,relu,tanh";
  if (P < 1 || steps < 1 || reps < 1 || reps > 100) {
    fprintf(stderr, "usage: dynsweep-bench-tile [P [steps [repeats]]]\n");
    return 2;
  }
  const int d = 16, m = 16, n = 272;
  ds_rng r;
  ds_rng_init(&r, 13, 0, 0, DS_STREAM_TEST);
  double *X = malloc(sizeof(double) * d * n), *Y = malloc(sizeof(double) * n);
  double *th = malloc(sizeof(double) * (m * d + m));
  for (int k = 0; k < d * n; k++) X[k] = ds_rng_normal(&r);
  for (int k = 0; k < n; k++) Y[k] = ds_rng_normal(&r);
  for (int k = 0; k < m * d + m; k++) th[k] = ds_rng_normal(&r);
  double *lr_in = malloc(sizeof(double) * P), *lr_out = malloc(sizeof(double) * P);
  for (int p = 0; p < P; p++) { /* small rates, log-spaced: every point trains all steps */
    lr_in[p] = 0.02 * pow(2.0, (double)(p % 16) / 16);
    lr_out[p] = 0.02 * pow(2.0, (double)(p / 16 % 16) / 16);
  }
  double dg = dgemm_rate(1024), dg2 = dgemm_rate(2048);
  double dgemm = dg > dg2 ? dg : dg2;
  printf("DGEMM n=1024 %.1f GFLOP/s, n=2048 %.1f GFLOP/s: reference %.1f GFLOP/s\n", dg, dg2,
         dgemm);
  const char *names[3] = {"linear", "relu", "tanh"};
  for (int act = 0; act < 3; act++) {
    if (!strstr(acts, names[act])) continue;
    ds_tile_net net = {act, DS_PARAM_MEANFIELD, 1, d, m, 1, n,
                       act == DS_ACT_TANH ? sqrt(2.0) : 1.0, 1.0 / n};
    if (act == 0 || !strstr(acts, "linear")) printf("kernels: %s\n", ds_tile_kernels(&net));
    double t[100];
    for (int k = 0; k < reps; k++) {
      double t0 = cpu_now();
      ds_tile_gd(&net, X, Y, th, P, lr_in, lr_out, NULL, steps, never_drop, NULL);
      t[k] = cpu_now() - t0;
    }
    qsort(t, reps, sizeof *t, cmp);
    double fl = ds_tile_step_flops(&net) * (double)P * (double)steps;
    double med = t[reps / 2];
    printf("%-6s P %d steps %ld: %.1f trainings/s (min time), %.1f (median); %.2f us/point-step; "
           "%.1f GFLOP/s = %.1f%% DGEMM (min time), %.1f%% (median), %.1f%% (max)\n",
           names[act], P, steps, P / t[0], P / med, 1e6 * med / P / steps, fl / t[0] * 1e-9,
           100 * fl / t[0] * 1e-9 / dgemm, 100 * fl / med * 1e-9 / dgemm,
           100 * fl / t[reps - 1] * 1e-9 / dgemm);
  }
  if (nonfinite) printf("note: %d non-finite losses (points stopped early)\n", nonfinite);
  return 0;
}
