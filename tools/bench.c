/* bench.c -- dynsweep-bench: how fast is one training step compared with the
 * machine's DGEMM (and, with --compare, with a PyTorch reference)?
 *
 * Prints the OpenBLAS kernel in use and the best one for this CPU, the DGEMM
 * rate of the BLAS in use (square, 1 thread unless OPENBLAS_NUM_THREADS says
 * otherwise, best of a few reps), then for depth-4 MLPs (linear without bias,
 * ReLU with bias; widths 64, 256, 1024, d_in = d_out = width, n = 1024
 * samples) the training steps per second (loss + gradient + GD step) and the
 * achieved GFLOP/s (the flops the step computes, ds_mlp_step_flops_run, over
 * the best step time; bias-free linear nets with n well above d_0 take the
 * end-to-end product step, fewer flops than the layered step) as a fraction
 * of the best DGEMM rate (best-of against best-of: this VM's timings are noisy).
 *
 *   dynsweep-bench [--csv FILE] [--quick]
 *   dynsweep-bench --compare DIR [--quick] [--width W] [--net linear|relu]
 *   dynsweep-bench --shapes W N
 *   dynsweep-bench --compare DIR --single
 *
 * --single (with --compare): the single-point grid of issue 13 (widths 16,
 * 64, 256 x n = 256, 1024, 4096 x depth 2, 4 x linear / ReLU + bias), each case
 * timed twice in the same process, repetitions alternating: "before"
 * (OpenBLAS for every product, no blocks of samples, no end-to-end product
 * step for linear nets: the code before issue
 * 13, bit for bit) and "after" (LIBXSMM per shape, blocks of samples); the
 * "before" figures are the b_* columns of cases.csv (bench/single.sh).
 *
 * --compare DIR: the C half of bench/run.sh's comparison with PyTorch. For
 * every case of the grid (deep linear / deep ReLU nets, widths 4..2048,
 * depths 2..8, n = 256..4096, d_in = d_out = width) it draws the data (linear
 * teacher) and the initial weights, writes them raw (float64, little endian:
 * X d_in x n, Y d_out x n, theta = W_1[,b_1],W_2,... all column-major) to
 * DIR/case_NNN.bin for bench/torch_ref.py, trains k full-batch GD steps
 * (one warm-up step from a copy, then timed repetitions, at least 2, of the
 * same k steps from the same start until the time budget is spent; timed in
 * process CPU time, so other jobs on a shared machine do not count, and in
 * wall time) and writes the case
 * definitions with the C figures to DIR/cases.csv and the DGEMM reference to
 * DIR/env.csv. Losses of the first and the k-th step go to the CSV so the
 * Python side can check it computed the same thing.
 *
 * --shapes W N: each GEMM of a training step of W x W layers on N samples
 * timed alone (NN with beta 0 and 1, NT, TN, and TN done as copy + NN), in
 * GFLOP/s and % of DGEMM: what a step can reach at most (docs/performance.md).
 *
 * OPENBLAS_CORETYPE=Prescott dynsweep-bench shows the generic kernel. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dynsweep/data.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/util.h"
#include "../src/nn/layers.h" /* ds_nn_set_xsmm, ds_mlp_set_sample_block (--single) */

typedef struct {
  const char *name;
  int act, bias, depth, width, n;
  int steps;
  double sec_per_step, best_step; /* mean and best seconds per step */
  double gflops, frac;             /* from the best step, vs best DGEMM */
} bench_row;

/* this process's CPU seconds (ns resolution) */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* best-of-reps GFLOP/s of C = A B, all n x n; clock: ds_now (wall) or
 * cpu_now (process CPU time, for --compare on a shared machine) */
static double bench_dgemm_clock(int n, int reps, double (*clock)(void)) {
  size_t nn = (size_t)n * n;
  double *A = malloc(nn * sizeof *A), *B = malloc(nn * sizeof *B), *C = malloc(nn * sizeof *C);
  if (!A || !B || !C) {
    free(A), free(B), free(C);
    return 0.0;
  }
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_TEST);
  for (size_t k = 0; k < nn; k++) A[k] = ds_rng_normal(&r), B[k] = ds_rng_normal(&r);
  double best = 1e300;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = clock();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
    double dt = clock() - t0;
    best = dt < best ? dt : best;
  }
  free(A), free(B), free(C);
  return 2.0 * n * (double)n * n / best * 1e-9;
}

/* Times training steps of one net for about budget seconds (at least 3). */
static int bench_net(bench_row *row, double dgemm_gflops, double budget) {
  int L = row->depth, w = row->width, n = row->n;
  int dims[16];
  for (int l = 0; l <= L; l++) dims[l] = w;
  ds_mlp m;
  ds_mlp_work work;
  ds_dataset data;
  DS_TRY(ds_mlp_init(&m, row->act, row->bias, L, dims));
  DS_TRY(ds_mlp_work_init(&m, n, &work));
  ds_rng r;
  ds_rng_init(&r, 7, (uint64_t)w, 0, DS_STREAM_DATA);
  DS_TRY(ds_data_teacher(w, w, w / 2, 0.1, n, 0, &r, &data, NULL));
  double *theta = malloc(m.nparams * sizeof *theta), *grad = malloc(m.nparams * sizeof *grad);
  if (!theta || !grad) return ds_fail(DS_ENOMEM, "bench: out of memory");
  ds_rng_init(&r, 7, (uint64_t)w, 0, DS_STREAM_INIT);
  ds_mlp_init_gaussian(&m, 1.0, &r, theta);
  const double c = 0.5 / n, lr = 1e-3;
  /* one warm-up step, then time */
  ds_mlp_loss_grad(&m, theta, data.X, data.Y, c, grad, &work);
  cblas_daxpy((int)m.nparams, -lr, grad, 1, theta, 1);
  int steps = 0;
  double t0 = ds_now(), dt = 0.0, loss = 0.0, best = 1e300;
  while (steps < 3 || dt < budget) {
    double ts = ds_now();
    loss = ds_mlp_loss_grad(&m, theta, data.X, data.Y, c, grad, &work);
    /* the GD step, = ds_gd_step (optim is not linked into this tool) */
    cblas_daxpy((int)m.nparams, -lr, grad, 1, theta, 1);
    double te = ds_now();
    best = te - ts < best ? te - ts : best;
    steps++;
    dt = te - t0;
  }
  row->steps = steps;
  row->sec_per_step = dt / steps;
  row->best_step = best;
  row->gflops = ds_mlp_step_flops_run(&m, n) / best * 1e-9;
  row->frac = row->gflops / dgemm_gflops;
  int rc = loss == loss ? DS_OK : ds_fail(DS_ENUM, "bench: loss is NaN");
  free(theta);
  free(grad);
  ds_dataset_free(&data);
  ds_mlp_work_free(&work);
  ds_mlp_free(&m);
  return rc;
}

/* ---- --compare: the C half of the PyTorch comparison -------------------- */

typedef struct {
  int act, bias, depth, width, n;
} cmp_case;

static int add_case(cmp_case *c, int nc, int max, int act, int depth, int width, int n) {
  if (nc >= max) return nc;
  c[nc].act = act;
  c[nc].bias = act == DS_ACT_RELU; /* linear nets without bias, ReLU nets with */
  c[nc].depth = depth;
  c[nc].width = width;
  c[nc].n = n;
  return nc + 1;
}

/* The case grid: every width of issue 7 with a depth/n subset chosen so the
 * whole comparison (both sides) stays within a few minutes. */
static int g_single = 0; /* --single: issue 13's grid, before / after in one run */

static int compare_cases(int quick, cmp_case *c, int max) {
  int nc = 0;
  if (g_single) {
    static const int w[] = {16, 64, 256}, ns[] = {256, 1024, 4096}, dp[] = {2, 4};
    for (int a = 0; a < 2; a++)
      for (int wi = 0; wi < 3; wi++)
        for (int di = 0; di < 2; di++)
          for (int ni = 0; ni < 3; ni++)
            nc = add_case(c, nc, max, a ? DS_ACT_RELU : DS_ACT_LINEAR, dp[di], w[wi], ns[ni]);
    return nc;
  }
  for (int a = 0; a < 2; a++) {
    int act = a ? DS_ACT_RELU : DS_ACT_LINEAR;
    if (quick) {
      static const int w[] = {4, 16, 64, 256, 1024}, n[] = {256, 256, 1024, 1024, 256};
      for (int i = 0; i < 5; i++) nc = add_case(c, nc, max, act, 4, w[i], n[i]);
      nc = add_case(c, nc, max, act, 4, 64, 256);
      continue;
    }
    static const int small_w[] = {4, 16};
    static const int depths[] = {2, 4, 8};
    for (int wi = 0; wi < 2; wi++)
      for (int di = 0; di < 3; di++) {
        nc = add_case(c, nc, max, act, depths[di], small_w[wi], 256);
        nc = add_case(c, nc, max, act, depths[di], small_w[wi], 4096);
      }
    for (int di = 0; di < 3; di++) {
      nc = add_case(c, nc, max, act, depths[di], 64, 256);
      nc = add_case(c, nc, max, act, depths[di], 64, 1024);
      nc = add_case(c, nc, max, act, depths[di], 64, 4096);
    }
    for (int di = 0; di < 3; di++) {
      nc = add_case(c, nc, max, act, depths[di], 256, 256);
      nc = add_case(c, nc, max, act, depths[di], 256, 1024);
    }
    nc = add_case(c, nc, max, act, 4, 256, 4096);
    nc = add_case(c, nc, max, act, 2, 1024, 256);
    nc = add_case(c, nc, max, act, 4, 1024, 1024);
    nc = add_case(c, nc, max, act, 2, 1024, 4096);
    nc = add_case(c, nc, max, act, 2, 2048, 1024);
  }
  return nc;
}

/* k steps of loss + gradient + GD from theta (overwritten); losses of the
 * first and the last step. */
static void train_k(const ds_mlp *m, double *theta, double *grad, const ds_dataset *d, double c,
                    double lr, int k, ds_mlp_work *w, double *first, double *last) {
  for (int s = 0; s < k; s++) {
    double loss = ds_mlp_loss_grad(m, theta, d->X, d->Y, c, grad, w);
    ds_gd_step(theta, grad, m->nparams, lr);
    if (s == 0) *first = loss;
    *last = loss;
  }
}

static int write_raw(FILE *f, const double *v, size_t count) {
  return fwrite(v, sizeof *v, count, f) == count ? DS_OK : ds_fail(DS_EIO, "bench: short write");
}

static int compare_one(const cmp_case *cc, int id, const char *dir, double budget,
                       double dgemm_ref, FILE *csv) {
  int L = cc->depth, w = cc->width, n = cc->n;
  int dims[16];
  for (int l = 0; l <= L; l++) dims[l] = w;
  ds_mlp m;
  ds_mlp_work work;
  ds_dataset data;
  double t_setup = ds_now();
  DS_TRY(ds_mlp_init(&m, cc->act, cc->bias, L, dims));
  DS_TRY(ds_mlp_work_init(&m, n, &work));
  ds_rng r;
  ds_rng_init(&r, 7, (uint64_t)w * 100 + L, 0, DS_STREAM_DATA);
  DS_TRY(ds_data_teacher(w, w, w / 2 > 0 ? w / 2 : 1, 0.1, n, 0, &r, &data, NULL));
  size_t P = m.nparams;
  double *theta0 = malloc(P * sizeof *theta0), *theta = malloc(P * sizeof *theta),
         *grad = malloc(P * sizeof *grad);
  if (!theta0 || !theta || !grad) return ds_fail(DS_ENOMEM, "bench: out of memory");
  ds_rng_init(&r, 7, (uint64_t)w * 100 + L, 0, DS_STREAM_INIT);
  ds_mlp_init_gaussian(&m, 1.0, &r, theta0);
  t_setup = ds_now() - t_setup;
  const double c = 0.5 / n, lr = 1e-3;
  double flops = ds_mlp_step_flops(&m, n);
  /* k: about budget seconds of PyTorch steps by a rough model of its per-step
   * cost here (framework overhead ~60 us + ~33 us per layer, ~30 us more per
   * ReLU layer, GEMMs at ~35 GFLOP/s); the C side repeats the k steps */
  double t_est = 60e-6 + (cc->act == DS_ACT_RELU ? 63e-6 : 33e-6) * L + flops / 35e9;
  double kd = budget / t_est;
  int k = kd < 3 ? 3 : kd > 20000 ? 20000 : (int)kd;

  char path[1024];
  snprintf(path, sizeof path, "%s/case_%03d.bin", dir, id);
  FILE *f = fopen(path, "wb");
  if (!f) return ds_fail(DS_EIO, "bench: cannot write %s", path);
  int rc = write_raw(f, data.X, (size_t)w * n);
  if (rc == DS_OK) rc = write_raw(f, data.Y, (size_t)w * n);
  if (rc == DS_OK) rc = write_raw(f, theta0, P);
  if (fclose(f) != 0 && rc == DS_OK) rc = ds_fail(DS_EIO, "bench: cannot write %s", path);
  if (rc != DS_OK) return rc;

  /* warm-up: one step from a copy */
  double first = 0, last = 0, f2, l2;
  memcpy(theta, theta0, P * sizeof *theta);
  train_k(&m, theta, grad, &data, c, lr, 1, &work, &f2, &l2);
  /* timed repetitions (at least 2) of the same k steps from theta0. Process
   * CPU time is the primary clock: other jobs on a shared machine take wall
   * time but not our CPU time (one thread); wall time is kept too. */
  int reps = 0, same = 1, breps = 0;
  double total = 0.0, best = 1e300, wall = 0.0, btotal = 0.0, bbest = 1e300, blast = 0.0;
  if (g_single) { /* warm-up of the "before" variant too */
    ds_nn_set_xsmm(0), ds_mlp_set_sample_block(0), ds_mlp_set_e2e(0);
    memcpy(theta, theta0, P * sizeof *theta);
    train_k(&m, theta, grad, &data, c, lr, 1, &work, &f2, &l2);
  }
  for (int it = 0; reps < 2 || total < budget || (g_single && breps < 2); it++) {
    int before = g_single && it % 2 == 0; /* --single: alternate, "before" first */
    if (g_single) ds_nn_set_xsmm(!before), ds_mlp_set_sample_block(!before), ds_mlp_set_e2e(!before);
    memcpy(theta, theta0, P * sizeof *theta);
    double w0 = ds_now(), t0 = cpu_now();
    train_k(&m, theta, grad, &data, c, lr, k, &work, &f2, &l2);
    double dt = cpu_now() - t0;
    if (before) {
      btotal += dt;
      bbest = dt < bbest ? dt : bbest;
      blast = l2;
      breps++;
      continue;
    }
    wall += ds_now() - w0;
    if (reps == 0) first = f2, last = l2;
    else same &= f2 == first && l2 == last;
    total += dt;
    best = dt < best ? dt : best;
    reps++;
  }
  double sps = (double)k * reps / total, best_sps = k / best, wall_sps = (double)k * reps / wall;
  /* the rate of the flops the step computes (linear nets' product step: fewer) */
  if (g_single) ds_mlp_set_e2e(1);
  double gflops = ds_mlp_step_flops_run(&m, n) * best_sps * 1e-9;
  const char *net = cc->act == DS_ACT_RELU ? "relu" : "linear";
  printf("%3d %-6s %4s %5d %5d %5d %6d %5d %12.1f %9.1f %7.1f%% %22.15e%s\n", id, net,
         cc->bias ? "yes" : "no", L, w, n, k, reps, sps, gflops, 100.0 * gflops / dgemm_ref, last,
         same ? "" : "  (reps differ!)");
  double bsps = breps ? (double)k * breps / btotal : 0, bgfl = breps ? flops * (k / bbest) * 1e-9 : 0;
  if (g_single)
    printf("    before: %12.1f steps/s %9.1f GFLOP/s %7.1f%%  (loss at step k %.15e, rel diff %.2e)\n",
           bsps, bgfl, 100.0 * bgfl / dgemm_ref, blast, fabs(blast - last) / fabs(last));
  fflush(stdout);
  fprintf(csv,
          "%d,%s,%d,%d,%d,%d,%d,%d,%zu,%.17g,%.17g,%d,%.6g,case_%03d.bin,%d,%.6g,%.6g,%.6g,%.6g,"
          "%.17g,%.17g,%d,%.4g,%.6g",
          id, net, cc->bias, L, w, w, w, n, P, lr, c, k, flops, id, reps, sps, best_sps, gflops,
          gflops / dgemm_ref, first, last, same, t_setup, wall_sps);
  if (g_single)
    fprintf(csv, ",%d,%.6g,%.6g,%.6g,%.6g,%.17g", breps, bsps, breps ? k / bbest : 0.0, bgfl,
            bgfl / dgemm_ref, blast);
  fprintf(csv, "\n");
  free(theta0);
  free(theta);
  free(grad);
  ds_dataset_free(&data);
  ds_mlp_work_free(&work);
  ds_mlp_free(&m);
  return last == last ? DS_OK : ds_fail(DS_ENUM, "bench: loss is NaN");
}

/* ---- --shapes W N: the GEMMs of one W x W layer on N samples, alone ------
 * The evidence for "the step runs at its GEMMs' rate": each product of a
 * training step timed in isolation (best of 5 runs of reps calls, process CPU
 * time), next to the variants layers.c chooses between. */
static int bench_shapes(int d, int n, double dgemm_ref) {
  size_t dn = (size_t)d * n;
  double *W = malloc((size_t)d * d * sizeof *W), *Wt = malloc((size_t)d * d * sizeof *Wt),
         *A = malloc(dn * sizeof *A), *Z = malloc(dn * sizeof *Z), *G = malloc((size_t)d * d * sizeof *G);
  if (!W || !Wt || !A || !Z || !G) return ds_fail(DS_ENOMEM, "bench: out of memory");
  ds_rng r;
  ds_rng_init(&r, 3, 0, 0, DS_STREAM_TEST);
  for (size_t k = 0; k < (size_t)d * d; k++) W[k] = ds_rng_normal(&r);
  for (size_t k = 0; k < dn; k++) A[k] = ds_rng_normal(&r), Z[k] = ds_rng_normal(&r);
  static const char *names[] = {"Z = W A        (NN, beta 0)", "Z = W A + Z    (NN, beta 1)",
                                "dW = dZ A^T    (NT, beta 0)", "dA = W^T dZ    (TN, beta 0)",
                                "dA = (W^T) dZ  (copy + NN) "};
  double flops = 2.0 * d * (double)d * n;
  int reps = (int)(2e7 / (flops + 2e4));
  reps = reps < 3 ? 3 : reps;
  printf("GEMMs of a %d x %d layer on n = %d samples (%.0f flop each, %d calls per run):\n", d, d,
         n, flops, reps);
  for (int c = 0; c < 5; c++) {
    double best = 1e300;
    for (int run = 0; run < 5; run++) {
      double t0 = cpu_now();
      for (int k = 0; k < reps; k++) {
        if (c == 0 || c == 1)
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d, n, d, 1.0, W, d, A, d,
                      c == 1 ? 1.0 : 0.0, Z, d);
        else if (c == 2)
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, d, d, n, 1.0, Z, d, A, d, 0.0, G, d);
        else if (c == 3)
          cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, d, n, d, 1.0, W, d, Z, d, 0.0, A, d);
        else {
          for (int i = 0; i < d; i++)
            for (int q = 0; q < d; q++) Wt[q + (size_t)i * d] = W[i + (size_t)q * d];
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d, n, d, 1.0, Wt, d, Z, d, 0.0,
                      A, d);
        }
      }
      double dt = (cpu_now() - t0) / reps;
      best = dt < best ? dt : best;
    }
    double g = flops / best * 1e-9;
    printf("  %s %10.3f us %8.1f GFLOP/s %6.1f%% DGEMM\n", names[c], best * 1e6, g,
           100.0 * g / dgemm_ref);
  }
  free(W), free(Wt), free(A), free(Z), free(G);
  return DS_OK;
}

/* --width W / --net linear|relu: only those cases (re-running, profiling) */
static int g_only_width = 0, g_only_act = -1;

static int bench_compare(const char *dir, int quick, double g1024, double g2048) {
  double ref = g1024 > g2048 ? g1024 : g2048;
  char path[1024];
  snprintf(path, sizeof path, "%s/env.csv", dir);
  FILE *f = fopen(path, "w");
  if (!f) return ds_fail(DS_EIO, "bench: cannot write %s (does the directory exist?)", path);
  fprintf(f, "kernel,best_kernel,threads,dgemm1024_gflops,dgemm2048_gflops,dgemm_ref_gflops\n");
  const char *bk = ds_blas_best_kernel();
  fprintf(f, "%s,%s,%d,%.4f,%.4f,%.4f\n", ds_blas_kernel(), bk ? bk : "", openblas_get_num_threads(),
          g1024, g2048, ref);
  fclose(f);
  snprintf(path, sizeof path, "%s/cases.csv", dir);
  FILE *csv = fopen(path, "w");
  if (!csv) return ds_fail(DS_EIO, "bench: cannot write %s", path);
  fprintf(csv, "id,net,bias,depth,width,d_in,d_out,n,nparams,lr,c,k,flops_step,file,c_reps,"
               "c_steps_per_s,c_best_steps_per_s,c_gflops,c_frac_dgemm,c_loss_first,c_loss_last,"
               "c_reps_bitwise_equal,c_setup_s,c_wall_steps_per_s%s\n",
          g_single ? ",b_reps,b_steps_per_s,b_best_steps_per_s,b_gflops,b_frac_dgemm,b_loss_last"
                   : "");
  cmp_case all[128], cases[128];
  int na = compare_cases(quick, all, 128), nc = 0;
  for (int i = 0; i < na; i++)
    if ((!g_only_width || all[i].width == g_only_width) && (g_only_act < 0 || all[i].act == g_only_act))
      cases[nc++] = all[i];
  printf("C side: %d cases, k GD steps each (lr 1e-3, loss 1/(2n) sum (f-y)^2), timed reps of "
         "the same k steps\n", nc);
  printf("%3s %-6s %4s %5s %5s %5s %6s %5s %12s %9s %8s %22s\n", "id", "net", "bias", "depth",
         "width", "n", "k", "reps", "steps/s", "GFLOP/s", "% DGEMM", "loss at step k");
  int rc = DS_OK;
  for (int i = 0; i < nc && rc == DS_OK; i++)
    rc = compare_one(&cases[i], i, dir, quick ? 0.1 : g_single ? 0.5 : 0.3, ref, csv);
  if (fclose(csv) != 0 && rc == DS_OK) rc = ds_fail(DS_EIO, "bench: cannot write %s", path);
  if (rc == DS_OK) printf("wrote %s/cases.csv and %s/env.csv\n", dir, dir);
  return rc;
}

int main(int argc, char **argv) {
  ds_blas_ensure_fast_kernel(argv);
  const char *csv = NULL;
  const char *compare = NULL;
  int quick = 0, shapes_w = 0, shapes_n = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv = argv[++i];
    else if (strcmp(argv[i], "--compare") == 0 && i + 1 < argc) compare = argv[++i];
    else if (strcmp(argv[i], "--width") == 0 && i + 1 < argc) g_only_width = atoi(argv[++i]);
    else if (strcmp(argv[i], "--net") == 0 && i + 1 < argc)
      g_only_act = strcmp(argv[++i], "relu") == 0 ? DS_ACT_RELU : DS_ACT_LINEAR;
    else if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--single") == 0) g_single = 1;
    else if (strcmp(argv[i], "--shapes") == 0 && i + 2 < argc) {
      shapes_w = atoi(argv[++i]);
      shapes_n = atoi(argv[++i]);
      if (shapes_w < 1 || shapes_n < 1) {
        fprintf(stderr, "dynsweep-bench: --shapes W N needs W, N >= 1\n");
        return 2;
      }
    }
    else {
      fprintf(stderr, "usage: dynsweep-bench [--csv FILE] [--quick]\n"
                      "       dynsweep-bench --compare DIR [--quick] [--width W] [--net linear|relu]"
                      "   (see bench/run.sh)\n"
                      "       dynsweep-bench --shapes W N   (the GEMMs of a W x W layer, n = N)\n");
      return 2;
    }
  }
  const char *best = ds_blas_best_kernel();
  printf("OpenBLAS kernel in use : %s\n", ds_blas_kernel());
  printf("best kernel for the CPU: %s\n", best ? best : "(none better than the default)");
  printf("OpenBLAS config        : %s\n", ds_blas_config());
  printf("BLAS threads           : %d\n", openblas_get_num_threads());

  double (*clk)(void) = compare || shapes_w ? cpu_now : ds_now;
  double g1024 = bench_dgemm_clock(1024, quick ? 3 : 5, clk);
  double g2048 = quick && !compare ? 0.0 : bench_dgemm_clock(2048, 3, clk);
  double ref = g1024 > g2048 ? g1024 : g2048;
  printf("DGEMM n=1024           : %.1f GFLOP/s\n", g1024);
  if (g2048 > 0) printf("DGEMM n=2048           : %.1f GFLOP/s\n", g2048);
  printf("reference (best DGEMM) : %.1f GFLOP/s%s\n\n", ref,
         compare ? " (process CPU time)" : "");
  if (shapes_w) {
    int rc = bench_shapes(shapes_w, shapes_n, ref);
    if (rc != DS_OK) fprintf(stderr, "dynsweep-bench: %s\n", ds_errmsg());
    return rc == DS_OK ? 0 : ds_exit_code(rc);
  }
  if (compare) {
    int rc = bench_compare(compare, quick, g1024, g2048);
    if (rc != DS_OK) {
      fprintf(stderr, "dynsweep-bench: %s\n", ds_errmsg());
      return ds_exit_code(rc);
    }
    return 0;
  }

  static const int widths[] = {64, 256, 1024};
  bench_row rows[6];
  int nrows = 0;
  for (int a = 0; a < 2; a++)
    for (int wi = 0; wi < 3; wi++) {
      bench_row *row = &rows[nrows++];
      memset(row, 0, sizeof *row);
      row->name = a == 0 ? "linear" : "relu";
      row->act = a == 0 ? DS_ACT_LINEAR : DS_ACT_RELU;
      row->bias = a == 1;
      row->depth = 4;
      row->width = widths[wi];
      row->n = 1024;
      int rc = bench_net(row, ref, quick ? 0.3 : 2.0);
      if (rc != DS_OK) {
        fprintf(stderr, "dynsweep-bench: %s\n", ds_errmsg());
        return ds_exit_code(rc);
      }
    }

  printf("training step = loss + gradient + GD step, depth 4, d_in = d_out = width, n = 1024\n");
  printf("(steps/s from the mean step time; GFLOP/s and %% DGEMM from the best step)\n");
  printf("%-7s %4s %6s %6s %10s %9s %9s %9s %8s\n", "net", "bias", "width", "steps", "steps/s",
         "mean ms", "best ms", "GFLOP/s", "% DGEMM");
  for (int i = 0; i < nrows; i++) {
    bench_row *r = &rows[i];
    printf("%-7s %4s %6d %6d %10.2f %9.3f %9.3f %9.1f %7.1f%%\n", r->name, r->bias ? "yes" : "no",
           r->width, r->steps, 1.0 / r->sec_per_step, 1e3 * r->sec_per_step, 1e3 * r->best_step,
           r->gflops, 100.0 * r->frac);
  }

  if (csv) {
    FILE *f = fopen(csv, "w");
    if (!f) {
      fprintf(stderr, "dynsweep-bench: cannot write %s\n", csv);
      return 1;
    }
    fprintf(f, "kernel,threads,dgemm1024_gflops,dgemm2048_gflops,net,bias,depth,width,n,steps,"
               "steps_per_s,mean_ms,best_ms,gflops,frac_dgemm\n");
    for (int i = 0; i < nrows; i++) {
      bench_row *r = &rows[i];
      fprintf(f, "%s,%d,%.2f,%.2f,%s,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.2f,%.4f\n", ds_blas_kernel(),
              openblas_get_num_threads(), g1024, g2048, r->name, r->bias, r->depth, r->width,
              r->n, r->steps, 1.0 / r->sec_per_step, 1e3 * r->sec_per_step, 1e3 * r->best_step,
              r->gflops, r->frac);
    }
    fclose(f);
    printf("\nwrote %s\n", csv);
  }
  return 0;
}
