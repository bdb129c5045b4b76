/* bench.c -- dynsweep-bench: how fast is one training step compared with the
 * machine's DGEMM?
 *
 * Prints the OpenBLAS kernel in use and the best one for this CPU, the DGEMM
 * rate of the BLAS in use (square, 1 thread unless OPENBLAS_NUM_THREADS says
 * otherwise, best of a few reps), then for depth-4 MLPs (linear without bias,
 * ReLU with bias; widths 64, 256, 1024, d_in = d_out = width, n = 1024
 * samples) the training steps per second (loss + gradient + GD step) and the
 * achieved GFLOP/s (ds_mlp_step_flops / best step time) as a fraction of the
 * best DGEMM rate (best-of against best-of: this VM's timings are noisy).
 *
 *   dynsweep-bench [--csv FILE] [--quick]
 *
 * OPENBLAS_CORETYPE=Prescott dynsweep-bench shows the generic kernel. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"
#include "dynsweep/nn.h"
#include "dynsweep/util.h"

typedef struct {
  const char *name;
  int act, bias, depth, width, n;
  int steps;
  double sec_per_step, best_step; /* mean and best seconds per step */
  double gflops, frac;             /* from the best step, vs best DGEMM */
} bench_row;

/* best-of-reps GFLOP/s of C = A B, all n x n */
static double bench_dgemm(int n, int reps) {
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
    double t0 = ds_now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.0, C, n);
    double dt = ds_now() - t0;
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
  row->gflops = ds_mlp_step_flops(&m, n) / best * 1e-9;
  row->frac = row->gflops / dgemm_gflops;
  int rc = loss == loss ? DS_OK : ds_fail(DS_ENUM, "bench: loss is NaN");
  free(theta);
  free(grad);
  ds_dataset_free(&data);
  ds_mlp_work_free(&work);
  ds_mlp_free(&m);
  return rc;
}

int main(int argc, char **argv) {
  ds_blas_ensure_fast_kernel(argv);
  const char *csv = NULL;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else {
      fprintf(stderr, "usage: dynsweep-bench [--csv FILE] [--quick]\n");
      return 2;
    }
  }
  const char *best = ds_blas_best_kernel();
  printf("OpenBLAS kernel in use : %s\n", ds_blas_kernel());
  printf("best kernel for the CPU: %s\n", best ? best : "(none better than the default)");
  printf("OpenBLAS config        : %s\n", ds_blas_config());
  printf("BLAS threads           : %d\n", openblas_get_num_threads());

  double g1024 = bench_dgemm(1024, quick ? 2 : 5);
  double g2048 = quick ? 0.0 : bench_dgemm(2048, 3);
  double ref = g1024 > g2048 ? g1024 : g2048;
  printf("DGEMM n=1024           : %.1f GFLOP/s\n", g1024);
  if (!quick) printf("DGEMM n=2048           : %.1f GFLOP/s\n", g2048);
  printf("reference (best DGEMM) : %.1f GFLOP/s\n\n", ref);

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
