/* tanh_bench.c -- the tanh figures of issue 13 (docs/performance.md):
 *   1. tanh throughput: SLEEF (the kernel dynsweep dispatches to) against a
 *      scalar libm loop, on the study's hidden layer (16 x 272) and on 1M values;
 *   2. time per GD step (loss + gradient + update) of the study's net: width
 *      16, depth 2, d_in 16, d_out 1, n = 272 samples, mean field, no bias,
 *      for tanh, relu and linear hidden layers.
 * One thread (OPENBLAS_NUM_THREADS=1 is set here), best of 5 repeats.
 *   build/dynsweep-bench-tanh [steps]   (default 20000) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dynsweep/nn.h"
#include "layers.h"

static double best_of(double (*f)(void *, long), void *arg, long reps) {
  double best = INFINITY;
  for (int r = 0; r < 5; r++) {
    double t = f(arg, reps);
    best = t < best ? t : best;
  }
  return best;
}

typedef struct {
  double *in, *out;
  size_t count;
} vec_arg;

static volatile double sink;

static double run_sleef(void *p, long reps) {
  vec_arg *a = p;
  double t0 = ds_now();
  for (long r = 0; r < reps; r++) ds_nn_tanh(a->out, a->in, a->count, 1.4142135623730951);
  sink = a->out[a->count / 2];
  return (ds_now() - t0) / reps;
}

static double run_libm(void *p, long reps) {
  vec_arg *a = p;
  double t0 = ds_now();
  for (long r = 0; r < reps; r++)
    for (size_t k = 0; k < a->count; k++) a->out[k] = tanh(1.4142135623730951 * a->in[k]);
  sink = a->out[a->count / 2];
  return (ds_now() - t0) / reps;
}

typedef struct {
  ds_mlp m;
  ds_mlp_work w;
  double *th, *g, *X, *Y;
} step_arg;

static double run_steps(void *p, long reps) {
  step_arg *s = p;
  double t0 = ds_now();
  for (long r = 0; r < reps; r++) {
    ds_mlp_loss_grad(&s->m, s->th, s->X, s->Y, 1.0 / s->w.n, s->g, &s->w);
    ds_mlp_gd_step_layers(&s->m, s->th, s->g, 1e-9, 0, 0); /* tiny lr: stays put */
  }
  sink = s->th[0];
  return (ds_now() - t0) / reps;
}

int main(int argc, char **argv) {
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  long steps = argc > 1 ? atol(argv[1]) : 20000;
  ds_rng r;
  ds_rng_init(&r, 13, 0, 0, DS_STREAM_TEST);
  printf("tanh kernel: %s\n", ds_nn_tanh_kernel());
  size_t sizes[2] = {16 * 272, 1 << 20};
  for (int i = 0; i < 2; i++) {
    vec_arg a = {malloc(sizes[i] * sizeof(double)), malloc(sizes[i] * sizeof(double)), sizes[i]};
    for (size_t k = 0; k < sizes[i]; k++) a.in[k] = 2.0 * ds_rng_normal(&r);
    long reps = (long)(2e7 / sizes[i]) + 1;
    double ts = best_of(run_sleef, &a, reps), tl = best_of(run_libm, &a, reps);
    printf("tanh of %8zu values: SLEEF %.3f ns/value (%.0f Mvalues/s), libm %.3f ns/value (%.0f "
           "Mvalues/s), SLEEF %.2fx\n",
           sizes[i], 1e9 * ts / sizes[i], sizes[i] / ts * 1e-6, 1e9 * tl / sizes[i],
           sizes[i] / tl * 1e-6, tl / ts);
    free(a.in);
    free(a.out);
  }
  int dims[3] = {16, 16, 1}, n = 272;
  const char *names[3] = {"linear", "relu", "tanh"};
  double t[3];
  for (int act = 0; act < 3; act++) {
    step_arg s;
    ds_mlp_setup(&s.m, act, 0, 2, dims, DS_PARAM_MEANFIELD, 1);
    s.m.gain = act == DS_ACT_TANH ? 1.4142135623730951 : 1.0;
    ds_mlp_work_init(&s.m, n, &s.w);
    s.th = malloc(s.m.nparams * sizeof(double));
    s.g = malloc(s.m.nparams * sizeof(double));
    s.X = malloc((size_t)16 * n * sizeof(double));
    s.Y = malloc((size_t)n * sizeof(double));
    for (size_t k = 0; k < s.m.nparams; k++) s.th[k] = ds_rng_normal(&r);
    for (int k = 0; k < 16 * n; k++) s.X[k] = ds_rng_normal(&r);
    for (int k = 0; k < n; k++) s.Y[k] = ds_rng_normal(&r);
    t[act] = best_of(run_steps, &s, steps);
    double fl = ds_mlp_step_flops(&s.m, n);
    printf("GD step, width 16, depth 2, n %d, mean field, %-6s: %.2f us/step (%.2f GFLOP/s on "
           "the %.3g GEMM flops)\n", n, names[act], 1e6 * t[act], fl / t[act] * 1e-9, fl);
    ds_mlp_work_free(&s.w);
    ds_mlp_free(&s.m);
    free(s.th), free(s.g), free(s.X), free(s.Y);
  }
  printf("tanh / relu step time: %.2f\n", t[2] / t[1]);
  return 0;
}
