/* cnn_team_bench.c -- a CNN point on a team of ranks (issue 26, "Big CNNs
 * run on teams"; bench/cnn_team.sh runs it under mpirun -n 1, 2, 4).
 *
 * The net: seed 003's 5-layer CNN (4 conv layers 3 x 3 "same", C channels,
 * ReLU, flatten, dense readout to 1 output; NTK parameterisation) on n
 * images of 1 x H x W (Gaussian pixels), the team = MPI_COMM_WORLD.
 *   step: one full-batch GD step as the point trainer takes it on a team
 *         (src/worker/point.c, cnn_split_loss): each member's contiguous
 *         block of samples through ds_cnn_loss_grad, gradient and loss summed
 *         by MPI_Reduce to the root and MPI_Bcast, then the update;
 *   ntk:  K = J J^T (kn x kn) by ds_diag_cnn_ntk_team (src/diag/cnn.c: each
 *         member's rows of J, MPI_Alltoallv to parameter slices, local
 *         DSYRK, reduce + broadcast), budget 1 GiB per member (a sweep's
 *         follows the rank's memory: ds_point_cnn_jbytes); the
 *         eigensolve after it is the team's ScaLAPACK in both cases and is
 *         not timed.
 * Wall-clock seconds (MPI_Wtime, after a barrier; the slowest member), best
 * of R repeats after one warm-up, one OpenBLAS thread per rank; and the
 * CPU seconds of the busiest member's own work (its block's loss and
 * gradient; its rows of J and its slice's DSYRK), without the collectives:
 * on a machine whose cores are busy the wall seconds cannot drop with more
 * ranks, the work per member can. Prints one line "team S: step T s ntk T s
 * cpu/member step T s ntk T s (...)" (rank 0), with the loss and trace K
 * as checksums so runs on different teams can be compared.
 *
 *   mpirun -n S build/dynsweep-bench-cnn-team [--C 32] [--hw 16] [--n 64] [--reps 3] */
#include <cblas.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynsweep/cnn.h"
#include "dynsweep/diag.h"
#include "dynsweep/nn.h"

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The largest of the members' v. */
static double maxof(double v) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

static double slowest(double t0) {
  double t = MPI_Wtime() - t0, m = 0;
  MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int C = 32, hw = 16, n = 64, R = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--C")) C = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--hw")) hw = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--n")) n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) R = atoi(argv[i + 1]);
  }
  int me, s;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  ds_team team;
  if (ds_team_init(&team, MPI_COMM_WORLD) != DS_OK) MPI_Abort(MPI_COMM_WORLD, 1);
  ds_cnn_spec sp = {1, hw, hw, 4, C, 3, 1, 1, DS_CNN_FLATTEN, 1, DS_PARAM_NTK, 1.0};
  char err[256];
  ds_cnn *m = ds_cnn_create(&sp, n, err, sizeof err);
  if (!m) {
    fprintf(stderr, "%s\n", err);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  size_t P = ds_cnn_nparams(m), d = (size_t)ds_cnn_din(m);
  double *theta = malloc(P * sizeof *theta), *grad = malloc((P + 1) * sizeof *grad);
  double *X = malloc(d * n * sizeof *X), *Y = malloc(n * sizeof *Y);
  double *K = malloc((size_t)n * n * sizeof *K);
  ds_rng r;
  ds_rng_init(&r, 3, 0, 0, 0);
  ds_cnn_init(m, &r, theta);
  for (size_t q = 0; q < d * n; q++) X[q] = ds_rng_normal(&r);
  for (int i = 0; i < n; i++) Y[i] = ds_rng_normal(&r);
  ds_loss_spec ls = {0};
  ls.type = DS_LOSS_MSE, ls.reduction = DS_RED_HALF_MEAN;
  ds_loss l;
  if (ds_loss_setup(&l, &ls, n) != DS_OK) MPI_Abort(MPI_COMM_WORLD, 1);
  int lo = (int)((long)n * me / s), hi = (int)((long)n * (me + 1) / s);
  double best_step = INFINITY, best_ntk = INFINITY, loss = 0, cpu_step = INFINITY, cpu_ntk = INFINITY;
  for (int rep = 0; rep <= R; rep++) { /* rep 0: warm-up */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    double c0 = cpu_now();
    grad[P] = ds_cnn_loss_grad(m, theta, X + (size_t)lo * d, Y + lo, hi - lo, &l, grad);
    double c = maxof(cpu_now() - c0);
    if (rep > 0 && c < cpu_step) cpu_step = c;
    MPI_Reduce(me == 0 ? MPI_IN_PLACE : grad, me == 0 ? grad : NULL, (int)P + 1, MPI_DOUBLE,
               MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(grad, (int)P + 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    cblas_daxpy((int)P, -1e-3, grad, 1, theta, 1);
    double t = slowest(t0);
    loss = grad[P];
    if (rep > 0 && t < best_step) best_step = t;
  }
  for (int rep = 0; rep <= R; rep++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (ds_diag_cnn_ntk_team(&team, m, theta, X, n, 1, (size_t)1 << 30, K) != DS_OK)
      MPI_Abort(MPI_COMM_WORLD, 1);
    double t = slowest(t0);
    if (rep > 0 && t < best_ntk) best_ntk = t;
  }
  /* the members' own work in the NTK, without the collectives (whose waits
   * Open MPI spends polling): the rows of J of its samples, then the DSYRK of
   * its parameter slice (on a copy of the right shape) */
  {
    int nr = hi - lo;
    size_t c0 = P * me / s, nc = P * (me + 1) / s - c0;
    double *Jr = malloc(P * (nr > 0 ? nr : 1) * sizeof *Jr), *Kp = malloc((size_t)n * n * sizeof *Kp);
    double *Jc = calloc(nc * n + 1, sizeof *Jc);
    for (int rep = 0; rep <= R; rep++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = cpu_now();
      if (nr > 0) ds_diag_cnn_jacobian(m, theta, X, n, 1, lo, nr, Jr);
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, n, (int)nc, 1.0, Jc, (int)nc, 0.0, Kp, n);
      double c = maxof(cpu_now() - t0);
      if (rep > 0 && c < cpu_ntk) cpu_ntk = c;
    }
    free(Jr), free(Kp), free(Jc);
  }
  double tr = 0;
  for (int i = 0; i < n; i++) tr += K[(size_t)i * n + i];
  if (me == 0)
    printf("team %d: step %.4f s ntk %.4f s cpu/member step %.4f s ntk %.4f s (cnn5 C=%d %dx%d n=%d, P=%zu; loss %.12g, trace K %.12g)\n",
           s, best_step, best_ntk, cpu_step, cpu_ntk, C, hw, hw, n, P, loss, tr);
  free(theta), free(grad), free(X), free(Y), free(K);
  ds_cnn_free(m);
  ds_team_free(&team);
  MPI_Finalize();
  return 0;
}
