/* cnn_bench.c -- the GD step of convolutional nets (src/nn/cnn.c, conv.c)
 * against DGEMM (issue 26, "Speed and scale").
 *
 * For each case (a net of cnn.h: nconv 3x3 "same" stride-1 convs of C
 * channels with ReLU, flatten, dense readout to 1 output, standard
 * parameterisation; n images of c0 x h x w) prints the GFLOP/s of one full
 * GD step's products -- forward, then the backward of 1/2 sum (f - y)^2 --
 * as ds_cnn_forward + ds_cnn_backward run them, and the DGEMM rate measured
 * in the same run (square DGEMM n = 1024 and 2048, best of 3, at the start
 * and at the end; the best is the reference). The model FLOPs of a step
 * (the same count bench/cnn_torch_bench.py uses): per conv layer
 * 2 n P K C_out for the forward, as much for the weight gradient, and as much
 * for the input gradient except at the first layer (the images' gradient is
 * not formed); the readout 2 n d_in d_out times 3 (the same, plus the readout's
 * input gradient). Biases, ReLU, the loss and col2im are not counted.
 *
 * Times are process CPU time (the machine is shared) with one OpenBLAS
 * thread; the step time is the best of R repeats of k steps (k chosen so a
 * repeat takes >= 0.3 s), after one warm-up step.
 *
 *   build/dynsweep-bench-cnn [--reps R] [--case NAME]...
 *   NAME as printed: cnn<L>-C<C>-<c0>x<h>x<w>-n<n> (L = nconv + 1), or the
 *   same spec not in the default list. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynsweep/cnn.h"

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
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

typedef struct {
  int L, C, c0, h, w, n;
} bcase;

/* the default list: the 5-layer CNN of seed 003 at C = 16, 64, 128 on
 * Fashion-MNIST-size and CIFAR-size images, and the 2-layer CNN of its
 * Chapter 3 (one conv layer, flatten, dense) */
static const bcase defaults[] = {
    {5, 16, 1, 28, 28, 128}, {5, 16, 3, 32, 32, 128}, {5, 64, 1, 28, 28, 64},
    {5, 64, 3, 32, 32, 64},  {5, 128, 1, 28, 28, 32}, {5, 128, 3, 32, 32, 32},
    {2, 256, 1, 28, 28, 128}, {2, 64, 3, 32, 32, 128},
};

static double step_flops(const bcase *c) {
  double f = 0;
  int cin = c->c0;
  double P = (double)c->h * c->w;
  for (int l = 0; l < c->L - 1; l++) {
    double K = (double)cin * 9;
    f += 2.0 * c->n * P * K * c->C * (l ? 3 : 2);
    cin = c->C;
  }
  f += 3 * 2.0 * c->n * P * c->C; /* readout, d_out = 1 */
  return f;
}

static void name(const bcase *c, char *buf, size_t len) {
  snprintf(buf, len, "cnn%d-C%d-%dx%dx%d-n%d", c->L, c->C, c->c0, c->h, c->w, c->n);
}

static int run_case(const bcase *c, int reps, double ref) {
  ds_cnn_spec spec = {.c0 = c->c0, .h0 = c->h, .w0 = c->w, .nconv = c->L - 1,
                      .channels = c->C, .ksize = 3, .stride = 1, .same = 1,
                      .readout = DS_CNN_FLATTEN, .dout = 1, .param = DS_PARAM_STANDARD,
                      .beta = 1.0};
  char err[256], nm[64];
  name(c, nm, sizeof nm);
  ds_cnn *m = ds_cnn_create(&spec, c->n, err, sizeof err);
  if (!m) {
    fprintf(stderr, "%s: %s\n", nm, err);
    return 1;
  }
  size_t np = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m);
  double *theta = malloc(np * sizeof *theta), *grad = malloc(np * sizeof *grad),
         *X = malloc(din * c->n * sizeof *X), *dF = malloc(c->n * sizeof *dF);
  ds_rng rng;
  ds_rng_init(&rng, 26, 0, 0, 0);
  ds_cnn_init(m, &rng, theta);
  for (size_t i = 0; i < din * c->n; i++) X[i] = ds_rng_normal(&rng);
  double loss = 0;
#define STEP()                                                        \
  do {                                                                \
    const double *F = ds_cnn_forward(m, theta, X, c->n);              \
    loss = 0;                                                         \
    for (int i = 0; i < c->n; i++) {                                  \
      dF[i] = F[i] - (i % 2 ? 1.0 : -1.0);                            \
      loss += 0.5 * dF[i] * dF[i];                                    \
    }                                                                 \
    ds_cnn_backward(m, theta, X, c->n, dF, grad);                     \
  } while (0)
  double t0 = cpu_now();
  STEP();
  double t1 = cpu_now() - t0;
  int k = t1 > 0.3 ? 1 : (int)ceil(0.3 / (t1 > 1e-6 ? t1 : 1e-6));
  double best = INFINITY;
  for (int r = 0; r < reps; r++) {
    t0 = cpu_now();
    for (int s = 0; s < k; s++) STEP();
    double t = (cpu_now() - t0) / k;
    best = t < best ? t : best;
  }
  double gf = step_flops(c) / best * 1e-9;
  printf("%-24s step %9.3f ms  %7.2f GFLOP/s  %5.1f%% DGEMM  (%.3f GFLOP/step, k %d, loss %.6g)\n",
         nm, best * 1e3, gf, 100 * gf / ref, step_flops(c) * 1e-9, k, loss);
  fflush(stdout);
  free(theta), free(grad), free(X), free(dF);
  ds_cnn_free(m);
  return 0;
}

int main(int argc, char **argv) {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  int reps = 3, ncase = 0;
  bcase cases[64];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--case") && i + 1 < argc && ncase < 64) {
      bcase c;
      if (sscanf(argv[++i], "cnn%d-C%d-%dx%dx%d-n%d", &c.L, &c.C, &c.c0, &c.h, &c.w, &c.n) != 6 ||
          c.L < 2) {
        fprintf(stderr, "bad case %s (cnn<L>-C<C>-<c0>x<h>x<w>-n<n>)\n", argv[i]);
        return 2;
      }
      cases[ncase++] = c;
    } else {
      fprintf(stderr, "usage: %s [--reps R] [--case cnn<L>-C<C>-<c0>x<h>x<w>-n<n>]...\n", argv[0]);
      return 2;
    }
  }
  if (!ncase) {
    ncase = (int)(sizeof defaults / sizeof *defaults);
    memcpy(cases, defaults, sizeof defaults);
  }
  double d1 = dgemm_rate(1024), d2 = dgemm_rate(2048);
  printf("DGEMM n=1024 %.2f GFLOP/s  n=2048 %.2f GFLOP/s (start)\n", d1, d2);
  double ref = d1 > d2 ? d1 : d2;
  int bad = 0;
  for (int i = 0; i < ncase; i++) bad |= run_case(&cases[i], reps, ref);
  double e1 = dgemm_rate(1024), e2 = dgemm_rate(2048);
  printf("DGEMM n=1024 %.2f GFLOP/s  n=2048 %.2f GFLOP/s (end)\n", e1, e2);
  if (e1 > ref) ref = e1;
  if (e2 > ref) ref = e2;
  printf("DGEMM reference (best) %.2f GFLOP/s\n", ref);
  return bad;
}
