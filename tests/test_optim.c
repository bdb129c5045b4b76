/* test_optim.c -- the GD step (exact values) and GD on a linear regression
 * (a depth-1 MLP with bias) converging to the LAPACK least-squares solution. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "dynsweep/data.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"

void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a,
            const int *lda, double *b, const int *ldb, double *work, const int *lwork, int *info);

static void test_gd_exact(void) {
  double th[] = {1.0, -2.0, 0.5, 3.0}, g[] = {2.0, -4.0, 0.0, 1.0};
  ds_gd_step(th, g, 4, 0.25);
  CHECK(th[0] == 0.5 && th[1] == -1.0 && th[2] == 0.5 && th[3] == 2.75,
        "gd step: %g %g %g %g", th[0], th[1], th[2], th[3]);
  ds_gd_step(th, g, 0, 1.0); /* empty: no-op */
  CHECK(th[0] == 0.5, "empty step");
}

static void test_gd_regression(void) {
  const int d_in = 5, d_out = 2, n = 60;
  ds_rng r;
  ds_rng_init(&r, 1, 2, 3, DS_STREAM_DATA);
  ds_dataset tr;
  CHECK(ds_data_teacher(d_in, d_out, 2, 0.3, n, 0, &r, &tr, NULL) == DS_OK, "data");
  /* least squares: [X^T 1] (n x d_in+1) S = Y^T (n x d_out), S = [W^T; b^T] */
  int m = n, k = d_in + 1, nrhs = d_out, info = 0, lwork = -1;
  double *A = malloc((size_t)m * k * sizeof *A), *B = malloc((size_t)m * nrhs * sizeof *B);
  for (int j = 0; j < n; j++) {
    for (int i = 0; i < d_in; i++) A[j + (size_t)i * m] = tr.X[i + (size_t)j * d_in];
    A[j + (size_t)d_in * m] = 1.0;
    for (int i = 0; i < d_out; i++) B[j + (size_t)i * m] = tr.Y[i + (size_t)j * d_out];
  }
  double q;
  dgels_("N", &m, &k, &nrhs, A, &m, B, &m, &q, &lwork, &info);
  lwork = (int)q;
  double *work = malloc((size_t)lwork * sizeof *work);
  dgels_("N", &m, &k, &nrhs, A, &m, B, &m, work, &lwork, &info);
  CHECK(info == 0, "dgels info %d", info);

  int dims[] = {d_in, d_out};
  ds_mlp net;
  ds_mlp_work w;
  ds_mlp_init(&net, DS_ACT_LINEAR, 1, 1, dims);
  ds_mlp_work_init(&net, n, &w);
  double *th = calloc(net.nparams, sizeof *th), *g = malloc(net.nparams * sizeof *g);
  double loss = 0, c = 0.5 / n;
  for (int t = 0; t < 3000; t++) {
    loss = ds_mlp_loss_grad(&net, th, tr.X, tr.Y, c, g, &w);
    ds_gd_step(th, g, net.nparams, 0.5);
  }
  double num = 0, den = 0;
  for (int o = 0; o < d_out; o++) {
    for (int i = 0; i < d_in; i++) {
      double want = B[i + (size_t)o * m], got = th[net.w_off[0] + o + (size_t)i * d_out];
      num += (got - want) * (got - want);
      den += want * want;
    }
    double want = B[d_in + (size_t)o * m], got = th[net.b_off[0] + o];
    num += (got - want) * (got - want);
    den += want * want;
  }
  CHECK(sqrt(num / den) < 1e-10, "GD vs least squares: rel err %.3g (loss %g)", sqrt(num / den),
        loss);
  free(th);
  free(g);
  free(A);
  free(B);
  free(work);
  ds_mlp_work_free(&w);
  ds_mlp_free(&net);
  ds_dataset_free(&tr);
}

int main(void) {
  test_gd_exact();
  test_gd_regression();
  return ds_check_report("test_optim");
}
