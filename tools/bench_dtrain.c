/* bench_dtrain.c -- dynsweep-bench-dtrain: training steps per second of a
 * wide MLP on a team (src/spectra/dtrain.c, pdgemm) against the single-rank
 * ds_mlp path, and the per-rank memory of the distributed parameters.
 *
 *   mpirun -n P dynsweep-bench-dtrain [--width W] [--depth L] [--n N]
 *          [--steps K] [--net linear|relu] [--nb NB] [--mlp]
 *
 * d_in = d_out = width. Every rank draws its own local weight blocks
 * (N(0, 1/d_{l-1}); timing does not depend on which values) so no rank ever
 * holds the whole theta. One warm-up step, then K timed steps (loss +
 * gradient + GD update); prints the best (over steps) of the slowest rank's
 * wall time and process CPU time per step (CPU time: other jobs on a shared
 * machine do not count; Open MPI busy-polls, so waiting for a peer does),
 * steps/s, GFLOP/s (ds_mlp_step_flops over CPU time), the parameters held per rank (max
 * over ranks, MiB), the distributed workspace per rank and the peak RSS.
 * --mlp (one rank only): the same with ds_mlp (the reference path). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <mpi.h>

#include "dynsweep/dtrain.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/util.h"

static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double peak_rss_mib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, W = 2048, L = 3, N = 1024, K = 5, relu = 0, nb = 0, mlp = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--width") && i + 1 < argc) W = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--depth") && i + 1 < argc) L = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--n") && i + 1 < argc) N = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) K = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--nb") && i + 1 < argc) nb = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--net") && i + 1 < argc) relu = !strcmp(argv[++i], "relu");
    else if (!strcmp(argv[i], "--mlp")) mlp = 1;
    else {
      if (rank == 0)
        fprintf(stderr, "usage: dynsweep-bench-dtrain [--width W] [--depth L] [--n N] "
                        "[--steps K] [--net linear|relu] [--nb NB] [--mlp]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (L < 1 || L > 64 || W < 1 || N < 1 || K < 1 || (mlp && size != 1)) {
    if (rank == 0) fprintf(stderr, "dynsweep-bench-dtrain: bad arguments (--mlp: one rank)\n");
    MPI_Finalize();
    return 2;
  }
  int dims[65];
  for (int l = 0; l <= L; l++) dims[l] = W;
  ds_mlp m;
  ds_mlp_setup(&m, relu ? DS_ACT_RELU : DS_ACT_LINEAR, relu, L, dims, DS_PARAM_STANDARD, 1);
  double flops = ds_mlp_step_flops(&m, N);
  ds_rng rng;
  ds_rng_init(&rng, 5, 0, 0, 0);
  double *X = malloc(sizeof(double) * W * N), *Y = malloc(sizeof(double) * W * N);
  for (size_t i = 0; i < (size_t)W * N; i++) X[i] = ds_rng_normal(&rng), Y[i] = ds_rng_normal(&rng);
  ds_loss loss = {DS_LOSS_MSE, 2.0, 1.0 / (2.0 * N)};
  ds_optim_spec os;
  memset(&os, 0, sizeof os);
  os.type = DS_OPT_GD;
  os.lr = 1e-3;
  double best = INFINITY, bestc = INFINITY, lossv = 0, par_mib = 0, work_mib = 0;
  if (mlp) {
    double *theta = malloc(sizeof(double) * m.nparams), *grad = malloc(sizeof(double) * m.nparams);
    ds_mlp_init_gaussian(&m, 1.0, &rng, theta);
    ds_mlp_work w;
    if (!theta || !grad || ds_mlp_work_init(&m, N, &w) != DS_OK) {
      fprintf(stderr, "out of memory\n");
      return 1;
    }
    par_mib = m.nparams * 8.0 / 1048576;
    lossv = ds_mlp_loss_grad_l(&m, theta, X, Y, &loss, grad, &w);
    for (int k = 0; k < K; k++) {
      double t0 = ds_now(), c0 = cpu_now();
      lossv = ds_mlp_loss_grad_l(&m, theta, X, Y, &loss, grad, &w);
      ds_gd_step(theta, grad, m.nparams, os.lr);
      double dt = ds_now() - t0, dc = cpu_now() - c0;
      best = dt < best ? dt : best;
      bestc = dc < bestc ? dc : bestc;
    }
  } else {
    ds_team team;
    if (ds_team_init(&team, MPI_COMM_WORLD) != DS_OK) {
      fprintf(stderr, "%s\n", ds_errmsg());
      return 1;
    }
    ds_dtrain dt;
    ds_dtrain_spec spec = {L, dims, relu, relu, 1, 0, nb};
    ds_dtrain_work w;
    if (ds_dtrain_init(&dt, &team, &spec) != DS_OK || ds_dtrain_work_init(&dt, N, 1, &w) != DS_OK) {
      fprintf(stderr, "%s\n", ds_errmsg());
      return 1;
    }
    ds_dtrain_set_loss(&dt, DS_DT_LOSS_MSE, 2.0, loss.c);
    ds_rng lr;
    ds_rng_init(&lr, 6, 0, (uint32_t)rank, 1);
    for (size_t i = 0; i < dt.nloc; i++) dt.theta[i] = ds_rng_normal(&lr) / sqrt((double)W);
    double mine = dt.nloc * 8.0 / 1048576, wk = 0;
    for (int l = 1; l <= L; l++)
      wk += (double)w.Z[l].mloc * w.Z[l].nloc * ((relu && l < L) ? 3 : 2);
    wk += (double)w.A0.mloc * w.A0.nloc + (double)w.Y.mloc * w.Y.nloc;
    wk = wk * 8.0 / 1048576;
    MPI_Allreduce(&mine, &par_mib, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&wk, &work_mib, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    lossv = ds_dtrain_loss_grad(&dt, X, Y, &w, 1);
    for (int k = 0; k < K; k++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = ds_now(), c0 = cpu_now();
      lossv = ds_dtrain_loss_grad(&dt, X, Y, &w, 1);
      ds_gd_step(dt.theta, dt.grad, dt.nloc, os.lr);
      double t[2] = {ds_now() - t0, cpu_now() - c0}, tmax[2];
      MPI_Allreduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      best = tmax[0] < best ? tmax[0] : best;
      bestc = tmax[1] < bestc ? tmax[1] : bestc;
    }
    ds_dtrain_work_free(&dt, &w);
    ds_dtrain_free(&dt);
    ds_team_free(&team);
  }
  double rss = peak_rss_mib(), rss_max;
  MPI_Allreduce(&rss, &rss_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%s ranks=%d width=%d depth=%d n=%d net=%s: wall %.3f s/step (%.2f steps/s), CPU %.3f s/step (%.2f steps/s, %.1f GFLOP/s), "
           "params/rank %.1f MiB (all: %.1f MiB), workspace/rank %.1f MiB, peak RSS/rank %.0f MiB, "
           "loss %.6g\n",
           mlp ? "ds_mlp" : "dtrain", size, W, L, N, relu ? "relu+bias" : "linear", best, 1 / best,
           bestc, 1 / bestc, flops / bestc / 1e9, par_mib, m.nparams * 8.0 / 1048576, work_mib, rss_max, lossv);
  ds_mlp_free(&m);
  free(X);
  free(Y);
  MPI_Finalize();
  return 0;
}
