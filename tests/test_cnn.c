/* test_cnn.c -- the convolution layer and the CNN (cnn.h) against central
 * finite differences, and known answers of the layer.
 *
 *   test_cnn                 the checks (exit 0 ok, 1 failed)
 *   test_cnn --dump FILE K   writes config K's net, data, forward output,
 *                            gradient and a GD trajectory for tests/cnn_torch.py
 *                            (PyTorch float64 replays them).
 *   test_cnn --dump-layers FILE K, --count-layers: the same for the layer
 *                            lists and named nets (tests/cnn_layers_torch.py).
 *   test_cnn --dump-hvp FILE K: layer list K's Hessian-vector products
 *                            (ds_cnn_hvp) for tests/cnn_hvp_torch.py.
 *   test_cnn --dump-act FILE K: layer list K's activation spectra
 *                            (ds_diag_cnn_activations) for tests/cnn_act_torch.py. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/nn/layers.h"
#include "check.h"
#include "cnn_testlib.h"
#include "dynsweep/cnn.h"
#include "dynsweep/data.h"
#include "dynsweep/diag.h"

/* The configurations shared with cnn_torch.py (by index). */
static const ds_cnn_spec specs[] = {
    /* c0 h0 w0 nconv C s t same readout dout param beta */
    {1, 6, 6, 4, 3, 3, 1, 1, DS_CNN_FLATTEN, 1, DS_PARAM_NTK, 1.0},  /* 003's CNN, small */
    {2, 9, 8, 2, 4, 3, 2, 0, DS_CNN_GAP, 2, DS_PARAM_STANDARD, 1.0}, /* stride 2, valid, GAP */
    {3, 5, 6, 3, 2, 2, 1, 1, DS_CNN_FLATTEN, 3, DS_PARAM_NTK, 0.1},  /* even kernel, beta */
    {1, 8, 8, 2, 3, 5, 2, 1, DS_CNN_GAP, 1, DS_PARAM_NTK, 0.0},      /* 5x5 stride 2, no bias */
    /* channels multiples of 8: conv.c's implicit GEMM after the first layer */
    {1, 6, 6, 3, 8, 3, 1, 1, DS_CNN_FLATTEN, 1, DS_PARAM_NTK, 1.0},    /* stride 1 */
    {1, 8, 8, 3, 16, 3, 2, 1, DS_CNN_GAP, 2, DS_PARAM_STANDARD, 0.5}, /* stride 2 */
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))

/* Fashion-MNIST images (Debian dataset-fashion-mnist): the first n training
 * images of T-shirt (0) vs trouser (1), pixels / 255, labels -1/+1, through
 * the sweeps' IDX loader: 1 x 28 x 28 columns in CHW order. 0: not installed. */
#define FMNIST "/usr/share/datasets/fashion-mnist/train-"
static const ds_cnn_spec fmnist_spec = {1, 28, 28, 2, 4, 3, 1, 1, DS_CNN_FLATTEN, 1,
                                        DS_PARAM_NTK, 0.0};
static int fmnist(int n, ds_dataset *tr) {
  ds_data_spec s;
  memset(&s, 0, sizeof s);
  s.kind = DS_DATA_IDX;
  snprintf(s.path, sizeof s.path, "%s", FMNIST "images-idx3-ubyte.gz");
  snprintf(s.labels_path, sizeof s.labels_path, "%s", FMNIST "labels-idx1-ubyte.gz");
  FILE *f = fopen(s.path, "rb");
  if (!f) return 0;
  fclose(f);
  s.n_train = n, s.d_out = 1, s.pixel_scale = 1.0 / 255;
  s.nclasses = 2, s.classes[0] = 0, s.classes[1] = 1, s.labels = DS_LABELS_PM1;
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_DATA);
  ds_dataset te;
  int rc = ds_data_build(&s, &r, tr, &te);
  ds_dataset_free(&te);
  CHECK(rc == DS_OK && tr->n == n && tr->d_in == 784, "fashion-mnist %d images", n);
  return rc == DS_OK;
}

static double dot(const double *a, const double *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

/* The layer: phi = sum Z .* R; its gradients in A, W, b against central
 * differences. Returns the max error relative to the largest gradient entry. */
static double layer_fd(int cin, int h, int w, int cout, int s, int t, int same, int n) {
  ds_conv_geom g;
  CHECK(ds_conv_geom_set(&g, cin, h, w, cout, s, t, same) == DS_OK, "geometry");
  size_t din = (size_t)cin * h * w, dz = (size_t)cout * g.ho * g.wo, K = (size_t)cin * s * s;
  ds_rng r;
  ds_rng_init(&r, 7, (uint64_t)(cin * 1000 + s * 10 + t), 0, 0);
  double *A = malloc(din * n * 8), *W = malloc(K * cout * 8), *b = malloc(cout * 8);
  double *R = malloc(dz * n * 8), *Z = malloc(dz * n * 8), 
         *col = malloc(ds_conv_col_size(&g, n) * 8);
  double *dA = malloc(din * n * 8), *dW = malloc(K * cout * 8), *db = malloc(cout * 8);
  randn(A, din * n, &r), randn(W, K * cout, &r), randn(b, cout, &r), randn(R, dz * n, &r);
  double alpha = 1.0 / sqrt((double)K), beta = 0.7;
  ds_conv_backward(dA, dW, db, R, W, A, &g, n, alpha, beta, 0, col);
  double *vars[3] = {A, W, b}, *grads[3] = {dA, dW, db};
  size_t counts[3] = {din * n, K * cout, (size_t)cout};
  double gmax = 0.0, err = 0.0, h_ = 1e-6;
  for (int v = 0; v < 3; v++)
    for (size_t j = 0; j < counts[v]; j++) gmax = fmax(gmax, fabs(grads[v][j]));
  for (int v = 0; v < 3; v++)
    for (size_t j = 0; j < counts[v]; j++) {
      double x0 = vars[v][j], fp, fm;
      vars[v][j] = x0 + h_;
      ds_conv_forward(Z, W, b, A, &g, n, alpha, beta, col);
      fp = dot(Z, R, dz * n);
      vars[v][j] = x0 - h_;
      ds_conv_forward(Z, W, b, A, &g, n, alpha, beta, col);
      fm = dot(Z, R, dz * n);
      vars[v][j] = x0;
      err = fmax(err, fabs((fp - fm) / (2 * h_) - grads[v][j]) / gmax);
    }
  free(A), free(W), free(b), free(R), free(Z), free(col), free(dA), free(dW), free(db);
  return err;
}

/* conv.c computes blocks of samples with one GEMM each (the block size from
 * the layer's shape): n samples in one call, several blocks and a partial
 * last one, against one sample a call. Z and dA agree to round-off (each
 * entry is the same sum), dW and db to the round-off of another order of the
 * sum over samples; a second call with the same n gives the same bits.
 * Returns the max error relative to each output's largest entry. */
static double layer_blocks(int cin, int h, int w, int cout, int s, int t, int same, int n) {
  ds_conv_geom g;
  CHECK(ds_conv_geom_set(&g, cin, h, w, cout, s, t, same) == DS_OK, "geometry");
  size_t din = (size_t)cin * h * w, dz = (size_t)cout * g.ho * g.wo, K = (size_t)cin * s * s;
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)(cin * 1000 + s * 10 + t), 0, 0);
  double *A = malloc(din * n * 8), *W = malloc(K * cout * 8), *b = malloc(cout * 8);
  double *R = malloc(dz * n * 8), *Z = malloc(dz * n * 8), *Z1 = malloc(dz * n * 8);
  double *col = malloc(ds_conv_col_size(&g, n) * 8), *col1 = malloc(ds_conv_col_size(&g, 1) * 8);
  double *dA = malloc(din * n * 8), *dA1 = malloc(din * n * 8), *dW = malloc(K * cout * 8),
         *dW1 = malloc(K * cout * 8), *dW2 = malloc(K * cout * 8), *db = malloc(cout * 8),
         *db1 = malloc(cout * 8);
  CHECK(ds_conv_col_size(&g, n) == ds_conv_col_size(&g, n - 1) &&
            ds_conv_col_size(&g, 2) > ds_conv_col_size(&g, 1),
        "blocks of 2 .. n - 1 samples");
  randn(A, din * n, &r), randn(W, K * cout, &r), randn(b, cout, &r), randn(R, dz * n, &r);
  double alpha = 1.0 / sqrt((double)K), beta = 0.7;
  ds_conv_forward(Z, W, b, A, &g, n, alpha, beta, col);
  ds_conv_backward(dA, dW, db, R, W, A, &g, n, alpha, beta, 0, col);
  for (int i = 0; i < n; i++) {
    ds_conv_forward(Z1 + i * dz, W, b, A + i * din, &g, 1, alpha, beta, col1);
    ds_conv_backward(dA1 + i * din, dW1, db1, R + i * dz, W, A + i * din, &g, 1, alpha, beta,
                     i > 0, col1);
  }
  double err = 0.0;
  double *x[4] = {Z, dA, dW, db}, *y[4] = {Z1, dA1, dW1, db1};
  size_t cnt[4] = {dz * n, din * n, K * cout, (size_t)cout};
  for (int v = 0; v < 4; v++) {
    double m = 0.0, e = 0.0;
    for (size_t j = 0; j < cnt[v]; j++) m = fmax(m, fabs(y[v][j]));
    for (size_t j = 0; j < cnt[v]; j++) e = fmax(e, fabs(x[v][j] - y[v][j]));
    err = fmax(err, e / m);
  }
  ds_conv_backward(NULL, dW2, NULL, R, W, A, &g, n, alpha, beta, 0, col);
  CHECK(!memcmp(dW, dW2, K * cout * 8), "dW: the same bits for the same n");
  /* the ReLU fused in (cnn.c's conv + relu pairs): forward's R = relu(Z) and
   * backward's dA [M > 0] the same bits as the separate passes, n samples a
   * call (blocks) and one (nb = 1: the GEMM writes Z and dA in place) */
  double *Zf = malloc(dz * n * 8), *Rf = malloc(dz * n * 8), *M = malloc(din * n * 8),
         *dAf = malloc(din * n * 8), *dWf = malloc(K * cout * 8), *dbf = malloc(cout * 8);
  randn(M, din * n, &r);
  for (int one = 0; one < 2; one++) {
    int n1 = one ? 1 : n;
    ds_conv_forward_relu(Zf, Rf, W, b, A, &g, n1, alpha, beta, one ? col1 : col);
    ds_conv_backward_mask(dAf, dWf, dbf, R, W, A, M, &g, n1, alpha, beta, 0, one ? col1 : col);
    int zok = 1, aok = 1;
    for (size_t j = 0; j < dz * n1; j++) {
      double z = one ? Z1[j] : Z[j];
      zok &= !memcmp(&Zf[j], &z, 8) && Rf[j] == (z > 0.0 ? z : 0.0);
    }
    for (size_t j = 0; j < din * n1; j++) {
      double a = M[j] > 0.0 ? (one ? dA1[j] : dA[j]) : 0.0;
      aok &= !memcmp(&dAf[j], &a, 8);
    }
    CHECK(zok, "conv + relu forward (%d samples a call): Z and relu(Z) the same bits", n1);
    CHECK(aok, "conv backward masked (%d samples a call): dA [M > 0] the same bits", n1);
    if (!one) CHECK(!memcmp(dWf, dW, K * cout * 8), "masked backward: the same dW bits");
  }
  /* the implicit GEMM (LIBXSMM, conv.c; cin and cout multiples of 8) against
   * im2col + OpenBLAS (DYNSWEEP_NN_GEMM=openblas): Z, dA and dW the same sums
   * in another order (round-off), db the same code (bits); where the implicit
   * path applies (implicit > 0: forward and dW, 2: also dA) its Z, dW (dA)
   * must differ somewhere in the last bits -- else it was not taken */
  if (ds_nn_xsmm_enabled()) {
    ds_nn_set_xsmm(0);
    ds_conv_forward(Zf, W, b, A, &g, n, alpha, beta, col);
    ds_conv_backward(dAf, dWf, dbf, R, W, A, &g, n, alpha, beta, 0, col);
    ds_nn_set_xsmm(1);
    int implicit = cin % 8 == 0 && cout % 8 == 0 ? (t == 1 ? 2 : 1) : 0;
    double ez = 0.0, ea = 0.0, ew = 0.0, mz = 0.0, ma = 0.0, mw = 0.0;
    for (size_t j = 0; j < dz * n; j++) ez = fmax(ez, fabs(Z[j] - Zf[j])), mz = fmax(mz, fabs(Zf[j]));
    for (size_t j = 0; j < din * n; j++)
      ea = fmax(ea, fabs(dA[j] - dAf[j])), ma = fmax(ma, fabs(dAf[j]));
    for (size_t j = 0; j < K * cout; j++)
      ew = fmax(ew, fabs(dW[j] - dWf[j])), mw = fmax(mw, fabs(dWf[j]));
    printf("  implicit %d vs im2col + OpenBLAS: Z %.2e, dA %.2e, dW %.2e (relative)\n", implicit,
           ez / mz, ea / ma, ew / mw);
    CHECK(ez / mz < 1e-13 && ea / ma < 1e-13 && ew / mw < 1e-13,
          "implicit vs OpenBLAS: Z %.3e dA %.3e dW %.3e", ez / mz, ea / ma, ew / mw);
    CHECK(!memcmp(dbf, db, cout * 8), "db the same bits");
    CHECK((ez > 0.0) == (implicit >= 1) && (ew > 0.0) == (implicit >= 1) &&
              (ea > 0.0) == (implicit == 2),
          "implicit path taken exactly where expected (%d: Z %.3e dA %.3e dW %.3e)", implicit, ez,
          ea, ew);
  }
  free(Zf), free(Rf), free(M), free(dAf), free(dWf), free(dbf);
  free(A), free(W), free(b), free(R), free(Z), free(Z1), free(col), free(col1), free(dA),
      free(dA1), free(dW), free(dW1), free(dW2), free(db), free(db1);
  return err;
}

/* A known answer: a 3x3 'same' conv of a 1-channel 3x3 image with the kernel
 * [[0,0,0],[0,0,1],[0,0,0]] shifts it left (x+1), zero at the right edge. */
static void layer_known(void) {
  ds_conv_geom g;
  ds_conv_geom_set(&g, 1, 3, 3, 1, 3, 1, 1);
  double A[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, W[9] = {0, 0, 0, 0, 0, 1, 0, 0, 0}, b = 0.5;
  double Z[9], col[128], want[9] = {2.5, 3.5, 0.5, 5.5, 6.5, 0.5, 8.5, 9.5, 0.5};
  CHECK(ds_conv_col_size(&g, 1) <= 128, "scratch");
  ds_conv_forward(Z, W, &b, A, &g, 1, 1.0, 1.0, col);
  int ok = 1;
  for (int i = 0; i < 9; i++) ok &= Z[i] == want[i];
  CHECK(ok, "shift kernel: Z = %g %g %g / %g %g %g / %g %g %g", Z[0], Z[1], Z[2], Z[3], Z[4],
        Z[5], Z[6], Z[7], Z[8]);
  /* stride 2 valid 2x2 of a 1x4x4 image with all-ones kernel: 2x2 block sums */
  double A4[16], W4[4] = {1, 1, 1, 1}, Z4[4], col4[128];
  for (int i = 0; i < 16; i++) A4[i] = i;
  ds_conv_geom_set(&g, 1, 4, 4, 1, 2, 2, 0);
  CHECK(g.ho == 2 && g.wo == 2, "valid stride 2 output %dx%d", g.ho, g.wo);
  CHECK(ds_conv_col_size(&g, 1) <= 128, "scratch");
  ds_conv_forward(Z4, W4, NULL, A4, &g, 1, 1.0, 1.0, col4);
  CHECK(Z4[0] == 10 && Z4[1] == 18 && Z4[2] == 42 && Z4[3] == 50, "block sums %g %g %g %g",
        Z4[0], Z4[1], Z4[2], Z4[3]);
  CHECK(ds_conv_geom_set(&g, 1, 2, 2, 1, 3, 1, 0) == DS_EINPUT, "valid 3x3 on 2x2 refused");
}

/* Data of config k: n images N(0,1), targets N(0,1). */
static void make_data(const ds_cnn_spec *sp, int n, double *X, double *Y, uint64_t seed) {
  ds_rng r;
  ds_rng_init(&r, seed, 1, 0, 0);
  randn(X, (size_t)sp->c0 * sp->h0 * sp->w0 * n, &r);
  randn(Y, (size_t)sp->dout * n, &r);
}

/* The net: gradient of sum F .* R against central differences (all params). */
static double net_fd(int k) {
  const ds_cnn_spec *sp = &specs[k];
  int n = 3;
  ds_cnn *m = ds_cnn_create(sp, n, NULL, 0);
  CHECK(m != NULL, "create config %d", k);
  if (!m) return 1.0;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *theta = malloc(P * 8), *grad = malloc(P * 8), *X = malloc(din * n * 8);
  double *Y = malloc(dF * 8);
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)k, 0, 0);
  ds_cnn_init(m, &r, theta);
  make_data(sp, n, X, Y, 5);
  ds_cnn_forward(m, theta, X, n);
  ds_cnn_backward(m, theta, X, n, Y, grad); /* Y as the cotangent R */
  double gmax = 0.0, err = 0.0, h = 1e-6;
  for (size_t j = 0; j < P; j++) gmax = fmax(gmax, fabs(grad[j]));
  for (size_t j = 0; j < P; j++) {
    double x0 = theta[j];
    theta[j] = x0 + h;
    double fp = dot(ds_cnn_forward(m, theta, X, n), Y, dF);
    theta[j] = x0 - h;
    double fm = dot(ds_cnn_forward(m, theta, X, n), Y, dF);
    theta[j] = x0;
    err = fmax(err, fabs((fp - fm) / (2 * h) - grad[j]) / gmax);
  }
  /* the inputs' gradient (ds_cnn_input_grad), every entry */
  double *dX = malloc(din * n * 8), xmax = 0.0, xerr = 0.0;
  ds_cnn_forward(m, theta, X, n);
  ds_cnn_input_grad(m, theta, X, n, Y, dX);
  for (size_t j = 0; j < din * n; j++) xmax = fmax(xmax, fabs(dX[j]));
  for (size_t j = 0; j < din * n; j++) {
    double x0 = X[j];
    X[j] = x0 + h;
    double fp = dot(ds_cnn_forward(m, theta, X, n), Y, dF);
    X[j] = x0 - h;
    double fm = dot(ds_cnn_forward(m, theta, X, n), Y, dF);
    X[j] = x0;
    xerr = fmax(xerr, fabs((fp - fm) / (2 * h) - dX[j]) / xmax);
  }
  CHECK(xmax > 0 && xerr < 1e-7, "config %d inputs' gradient FD error %.3e", k, xerr);
  /* the weight matrices tile theta: conv kernels C_out x C_in s^2, readout dout x d_in */
  size_t covered = 0;
  for (int i = 0; i < ds_cnn_nweights(m); i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(m, i, &off, &rows, &cols);
    int want_rows = i < sp->nconv ? sp->channels : sp->dout;
    CHECK(rows == want_rows && off >= covered, "config %d weight %d: %d rows at %zu", k, i, rows,
          off);
    covered = off + (size_t)rows * cols + rows; /* and its bias */
  }
  CHECK(covered == P, "config %d: weights and biases cover %zu of %zu params", k, covered, P);
  free(dX);
  free(theta), free(grad), free(X), free(Y);
  ds_cnn_free(m);
  return err;
}

/* GD on L = (1/n) sum (F - Y)^2 and the dump read by cnn_torch.py. */
static int dump(const char *path, int k) {
  const ds_cnn_spec *sp = k < NSPECS ? &specs[k] : &fmnist_spec;
  const int n = k < NSPECS ? 5 : 8, steps = 20;
  ds_dataset tr = {0};
  if (k == NSPECS && !fmnist(n, &tr)) return 1;
  const double lr = sp->param == DS_PARAM_NTK ? 0.05 : 0.2;
  ds_cnn *m = ds_cnn_create(sp, n, NULL, 0);
  if (!m) return 1;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *theta = malloc(P * 8), *grad = malloc(P * 8), *X = malloc(din * n * 8);
  double *Y = malloc(dF * 8), losses[21];
  ds_rng r;
  ds_rng_init(&r, 3, (uint64_t)k, 0, 0);
  ds_cnn_init(m, &r, theta);
  make_data(sp, n, X, Y, 9);
  if (tr.n) {
    memcpy(X, tr.X, din * n * sizeof *X);
    memcpy(Y, tr.Y, dF * sizeof *Y);
    ds_dataset_free(&tr);
  }
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  int hdr[13] = {sp->c0, sp->h0,    sp->w0, sp->nconv, sp->channels, sp->ksize, sp->stride,
                 sp->same, sp->readout, sp->dout, sp->param, n, steps};
  double hd[2] = {sp->beta, lr};
  fwrite(hdr, sizeof hdr, 1, f), fwrite(hd, sizeof hd, 1, f);
  fwrite(theta, 8, P, f), fwrite(X, 8, din * n, f), fwrite(Y, 8, dF, f);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
  for (int s = 0; s <= steps; s++) {
    losses[s] = ds_cnn_loss_grad(m, theta, X, Y, n, &l, grad);
    if (s == 0) {
      fwrite(ds_cnn_forward(m, theta, X, n), 8, dF, f);
      fwrite(grad, 8, P, f);
    }
    if (s < steps)
      for (size_t j = 0; j < P; j++) theta[j] -= lr * grad[j];
  }
  fwrite(losses, 8, (size_t)steps + 1, f), fwrite(theta, 8, P, f);
  int bad = fclose(f) != 0;
  free(theta), free(grad), free(X), free(Y);
  ds_cnn_free(m);
  return bad;
}

/* ---- layer lists (ds_cnn_create_layers) and the named nets ---------------- */

/* The layer-list macros, lspec and lcreate: cnn_testlib.h. Shared with cnn_layers_torch.py by index; the first five also against
 * finite differences. */
static const lspec lspecs[] = {
    LSPECS_SMALL, /* the five small layer lists (cnn_testlib.h) */
    {"cnn5 (3 ch)", 1, 6, 6, 1, DS_PARAM_NTK, 0.0, 0, {LK(0)}, DS_NET_CNN5, 3, 2, 0, 0},
    {"myrtle5 (4 ch)", 1, 32, 32, 2, DS_PARAM_NTK, 0.5, 0, {LK(0)}, DS_NET_MYRTLE5, 4, 2, 0, 0},
    {"tf_mnist (2 ch, dropout 0.5)", 1, 8, 8, 2, DS_PARAM_STANDARD, 1.0, 0, {LK(0)},
     DS_NET_TF_MNIST, 2, 2, 0.5, 0},
    {"wrn-10-1", 1, 8, 8, 1, DS_PARAM_NTK, 1.0, 0, {LK(0)}, DS_NET_WRN, 1, 10, 0, 0},
    {"tf_mnist overparam (2 ch)", 1, 8, 8, 3, DS_PARAM_NTK, 0.5, 0, {LK(0)}, DS_NET_TF_MNIST, 2,
     2, 0.0, 1},
    /* from NLDAG: seed 003's DenseNet-DAG (also against finite differences) */
    {"dag (4 units x 2 layers, drop 0.5)", 1, 3, 3, 2, DS_PARAM_NTK, 0.5, 0, {LK(0)}, DS_NET_DAG,
     4, 2, 0, 0},
    {"conv, relu, dag 3 x 3 drop 0.3, standard", 2, 4, 4, 1, DS_PARAM_STANDARD, 1.0, 3,
     {LCONV(2, 3, 1, 1), LK(DS_LAYER_RELU), {DS_LAYER_DAG, 3, 0, 0, 0, 0.3, 0, 3, 0.0}}, -1, 0, 0, 0,
     0},
    {"dag 5 x 3, no drop, ntk", 1, 2, 3, 3, DS_PARAM_NTK, 0.2, 1,
     {{DS_LAYER_DAG, 5, 0, 0, 0, 0.0, 0, 3, 0.0}}, -1, 0, 0, 0, 0},
    /* the readout masked too (model.dag_readout_drop; rdrop) */
    {"flatten, dag 4 x 2 drop 0.5, readout drop 0.5", 1, 3, 3, 2, DS_PARAM_NTK, 0.5, 2,
     {LK(DS_LAYER_FLATTEN), {DS_LAYER_DAG, 4, 0, 0, 0, 0.5, 0, 2, 0.5}}, -1, 0, 0, 0, 0},
    {"dag 3 x 2 drop 0.3, readout drop 0.4, standard", 1, 2, 3, 3, DS_PARAM_STANDARD, 1.0, 1,
     {{DS_LAYER_DAG, 3, 0, 0, 0, 0.3, 0, 2, 0.4}}, -1, 0, 0, 0, 0},
};
#define NLSPECS ((int)(sizeof lspecs / sizeof lspecs[0]))
#define NLFD 5
#define NLDAG 10

/* Gradients of sum F .* R in theta and X against central differences, with
 * the dropout masks of one step held fixed. */
static void list_fd(int k) {
  const lspec *sp = &lspecs[k];
  const int n = 3;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return;
  ds_cnn_dropout(m, 1, 7, 3, NULL);
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *theta = malloc(P * 8), *grad = malloc(P * 8), *X = malloc(din * n * 8);
  double *R = malloc(dF * 8), *dX = malloc(din * n * 8);
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  randn(R, dF, &r);
  ds_cnn_forward(m, theta, X, n);
  ds_cnn_backward(m, theta, X, n, R, grad);
  ds_cnn_input_grad(m, theta, X, n, R, dX);
  double gmax = 0, err = 0, xmax = 0, xerr = 0, h = 1e-6;
  for (size_t j = 0; j < P; j++) gmax = fmax(gmax, fabs(grad[j]));
  for (size_t j = 0; j < din * n; j++) xmax = fmax(xmax, fabs(dX[j]));
  for (size_t j = 0; j < P + din * n; j++) {
    double *v = j < P ? theta + j : X + (j - P), x0 = *v;
    *v = x0 + h;
    double fp = dot(ds_cnn_forward(m, theta, X, n), R, dF);
    *v = x0 - h;
    double fm = dot(ds_cnn_forward(m, theta, X, n), R, dF);
    *v = x0;
    double fd = (fp - fm) / (2 * h);
    if (j < P) err = fmax(err, fabs(fd - grad[j]) / gmax);
    else xerr = fmax(xerr, fabs(fd - dX[j - P]) / xmax);
  }
  printf("layers %d (%s): %zu params, max rel FD error params %.2e, inputs %.2e\n", k, sp->name,
         P, err, xerr);
  CHECK(gmax > 0 && xmax > 0 && err < 1e-7 && xerr < 1e-7, "layers %d FD %.3e %.3e", k, err,
        xerr);
  /* the weight matrices and their biases (a dag block's have none) tile theta */
  size_t covered = 0;
  int prev = 0;
  for (int i = 0; i < ds_cnn_nweights(m); i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(m, i, &off, &rows, &cols);
    CHECK(off == covered || off == covered + (size_t)prev, "layers %d weight %d at %zu, want %zu",
          k, i, off, covered);
    covered = off + (size_t)rows * cols, prev = rows;
  }
  CHECK(covered + (size_t)prev == P, "layers %d: weights cover %zu of %zu", k, covered + prev, P);
  free(theta), free(grad), free(X), free(R), free(dX);
  ds_cnn_free(m);
}

/* Dropout masks: a pure function of (seed, step, id, layer, unit): a batch's
 * columns equal the same ids' columns in another batch (as ranks see them);
 * another step or seed changes them; off is the identity; keep rate ~ 1-p. */
static void dropout_checks(void) {
  enum { U = 4000, N = 6 };
  static double a[U * N], b[U * 3];
  int ids[N] = {10, 11, 12, 13, 14, 15}, sub[3] = {14, 11, 12};
  ds_dropout_mask(a, U, N, 0.3, 42, 5, ids, 2);
  ds_dropout_mask(b, U, 3, 0.3, 42, 5, sub, 2);
  int same = !memcmp(b, a + 4 * U, U * 8) && !memcmp(b + U, a + U, 2 * U * 8);
  size_t kept = 0;
  for (size_t j = 0; j < (size_t)U * N; j++) kept += a[j] != 0.0;
  CHECK(same, "dropout mask of an id independent of the batch");
  double rate = (double)kept / (U * N);
  CHECK(fabs(rate - 0.7) < 0.01, "dropout keep rate %.4f (p 0.3)", rate);
  ds_dropout_mask(b, U, 1, 0.3, 42, 6, ids, 2);
  CHECK(memcmp(b, a, U * 8), "another step, another mask");
  ds_dropout_mask(b, U, 1, 0.3, 43, 5, ids, 2);
  CHECK(memcmp(b, a, U * 8), "another seed, another mask");
  /* the net: a batch split in two (two ranks) gives the same columns; off = no dropout layer */
  const lspec *sp = &lspecs[4];
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, N, L, &nl);
  ds_cnn *m0 = ds_cnn_create_layers(L, nl - 1, sp->c0, sp->h0, sp->w0, sp->dout, sp->param,
                                    sp->beta, N, NULL, 0);
  if (!m || !m0) return;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m);
  double *theta = malloc(P * 8), *X = malloc(din * N * 8), F[3 * N], F2[3 * N];
  ds_rng r;
  ds_rng_init(&r, 1, 2, 3, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * N, &r);
  ds_cnn_dropout(m, 1, 9, 4, ids);
  memcpy(F, ds_cnn_forward(m, theta, X, N), sizeof F);
  ds_cnn_dropout(m, 1, 9, 4, ids + 2);
  memcpy(F2, ds_cnn_forward(m, theta, X + 2 * din, 4), 12 * 8);
  ds_cnn_dropout(m, 1, 9, 4, ids);
  memcpy(F2 + 12, ds_cnn_forward(m, theta, X, 2), 6 * 8);
  CHECK(!memcmp(F + 6, F2, 12 * 8) && !memcmp(F, F2 + 12, 6 * 8),
        "dropout forward of a split batch equals the whole batch's");
  ds_cnn_dropout(m, 0, 9, 4, ids);
  memcpy(F, ds_cnn_forward(m, theta, X, N), sizeof F);
  CHECK(!memcmp(F, ds_cnn_forward(m0, theta, X, N), sizeof F), "dropout off = no dropout layer");
  CHECK(ds_cnn_has_dropout(m) && !ds_cnn_has_dropout(m0), "ds_cnn_has_dropout");
  free(theta), free(X);
  ds_cnn_free(m), ds_cnn_free(m0);
}

/* Bad layer lists and nets are refused with a message naming the layer. */
static void list_refusals(void) {
  char err[256];
  struct {
    ds_cnn_layer L[3];
    int nl, h;
    const char *want;
  } bad[] = {
      {{LPOOL(DS_LAYER_MAXPOOL, 4, 0)}, 1, 3, "layer 1 (maxpool): window 4 larger than its 3 x 3"},
      {{LCONV(2, 5, 1, 0)}, 1, 4, "layer 1 (conv): kernel 5 larger than its 4 x 4 input"},
      {{LCONV(2, 3, 1, 1), LRES(2, 2, 1)}, 2, 6, "layer 2 (resblock): shortcut shape mismatch"},
      {{LCONV(2, 3, 1, 1), {DS_LAYER_RESBLOCK, 3, 3, 1, 0, 0, 0, 0, 0.0}}, 2, 6,
       "shortcut shape mismatch"},
      {{{DS_LAYER_DROPOUT, 0, 0, 0, 0, 1.0, 0, 0, 0.0}}, 1, 3, "probability 1 not in [0, 1)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    ds_cnn *m = ds_cnn_create_layers(bad[i].L, bad[i].nl, 1, bad[i].h, bad[i].h, 1, DS_PARAM_NTK,
                                     1.0, 1, err, sizeof err);
    CHECK(!m && strstr(err, bad[i].want), "bad list %zu refused: '%s'", i, err);
    ds_cnn_free(m);
  }
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  ds_cnn_net nt = net_of(&lspecs[8]);
  nt.depth = 12;
  CHECK(ds_cnn_net_layers(&nt, L, err, sizeof err) < 0 && strstr(err, "6 N + 4"), "wrn 12: '%s'",
        err);
  nt = net_of(&lspecs[6]);
  nt.kernel = 5;
  CHECK(ds_cnn_net_layers(&nt, L, err, sizeof err) < 0 && strstr(err, "model.kernel"),
        "myrtle5 kernel: '%s'", err);
  int nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
  nt.kernel = 3;
  nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
  ds_cnn *m = ds_cnn_create_layers(L, nl, 1, 28, 28, 1, DS_PARAM_NTK, 1.0, 1, err, sizeof err);
  CHECK(!m && strstr(err, "(avgpool): window 2 larger than its 1 x 1 input"),
        "myrtle5 on 28 x 28: '%s'", err);
  /* tf_mnist at C = 32 on 28 x 28, 10 outputs: 002's 1,663,370 parameters (its Fig. 5) */
  ds_cnn_net tf = net_of(&lspecs[7]);
  tf.width = 32;
  nl = ds_cnn_net_layers(&tf, L, err, sizeof err);
  ds_cnn_cost cost;
  CHECK(ds_cnn_layers_check(L, nl, 1, 28, 28, 10, &cost, err, sizeof err) == DS_OK &&
        cost.params == 1663370, "tf_mnist(32) on 28 x 28: %.0f parameters, 002 says 1663370",
        cost.params);
  m = ds_cnn_create_layers(L, nl, 1, 28, 28, 10, DS_PARAM_STANDARD, 1.0, 1, err, sizeof err);
  CHECK(m && ds_cnn_nparams(m) == 1663370, "ds_cnn_nparams = ds_cnn_layers_check's count");
  ds_cnn_free(m);
  /* ... and with its over-parameterised dense layers 1,925,614 (+262,244) */
  tf.overparam = 1, tf.dout = 10;
  nl = ds_cnn_net_layers(&tf, L, err, sizeof err);
  CHECK(ds_cnn_layers_check(L, nl, 1, 28, 28, 10, &cost, err, sizeof err) == DS_OK &&
        cost.params == 1925614, "tf_mnist(32) overparam: %.0f parameters, 002 says 1925614",
        cost.params);
  tf.net = DS_NET_CNN;
  CHECK(ds_cnn_net_layers(&tf, L, err, sizeof err) < 0 && strstr(err, "overparam"),
        "overparam on cnn refused: '%s'", err);
  /* the generic net without extras is ds_cnn_create's list */
  ds_cnn_layer L2[DS_CNN_MAX_LAYERS];
  ds_cnn_net g = {DS_NET_CNN, 4, 3, 3, 1, 1, DS_CNN_GAP, 0, 1, 2, 0, 0.0, 0, 1, 0.5, 0.0};
  ds_cnn_spec sp = {1, 6, 6, 3, 4, 3, 1, 1, DS_CNN_GAP, 1, DS_PARAM_NTK, 1.0};
  int a = ds_cnn_net_layers(&g, L, err, sizeof err), b = ds_cnn_spec_layers(&sp, L2);
  int same = a == b;
  for (int i = 0; same && i < a; i++) /* field by field: the structs have padding */
    same = L[i].kind == L2[i].kind && L[i].cout == L2[i].cout && L[i].size == L2[i].size &&
           L[i].stride == L2[i].stride && L[i].same == L2[i].same && L[i].p == L2[i].p;
  CHECK(same, "net cnn = the spec's layers");
}

/* GD on L = (1/n) sum (F - Y)^2 with dropout on (step s draws the masks of
 * step s), and the dump read by cnn_layers_torch.py: header, layers, theta,
 * X, Y, F0, grad0, dX0, losses, final theta, then every step's masks. */
static int dump_layers(const char *path, int k) {
  const lspec *sp = &lspecs[k];
  const int n = 4, steps = 12;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return 1;
  const double lr = sp->param == DS_PARAM_NTK ? 0.05 : 0.1;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *theta = malloc(P * 8), *grad = malloc(P * 8), *X = malloc(din * n * 8);
  double *Y = malloc(dF * 8), *dX = malloc(din * n * 8), losses[13];
  ds_rng r;
  ds_rng_init(&r, 3, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  randn(Y, dF, &r);
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  dump_head(f, sp, L, nl, n, steps, 0, lr);
  fwrite(theta, 8, P, f), fwrite(X, 8, din * n, f), fwrite(Y, 8, dF, f);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
  for (int s = 0; s <= steps; s++) {
    ds_cnn_dropout(m, 1, 17, (uint64_t)s, NULL);
    losses[s] = ds_cnn_loss_grad(m, theta, X, Y, n, &l, grad);
    if (s == 0) {
      ds_cnn_input_grad(m, theta, X, n, Y, dX);
      fwrite(ds_cnn_forward(m, theta, X, n), 8, dF, f);
      fwrite(grad, 8, P, f), fwrite(dX, 8, din * n, f);
    }
    if (s < steps)
      for (size_t j = 0; j < P; j++) theta[j] -= lr * grad[j];
  }
  fwrite(losses, 8, (size_t)steps + 1, f), fwrite(theta, 8, P, f);
  dump_masks(f, m, L, nl, n, steps, 17);
  int bad = fclose(f) != 0;
  free(theta), free(grad), free(X), free(Y), free(dX);
  ds_cnn_free(m);
  return bad;
}

/* Activation spectra (ds_diag_cnn_activations, src/diag/cnnact.c; one rank,
 * no team) of layer list k at its initial weights, dropout off, and the dump
 * read by cnn_act_torch.py: dump_layers' header and layers (steps 0), theta,
 * X (n = 9 samples: fewer than some maps' features, more than a DAG's units),
 * then as doubles k, the ReLU count R, per ReLU (layer, part, d), and the
 * R (k+1) outputs. */
static int dump_act(const char *path, int k) {
  const lspec *sp = &lspecs[k];
  const int n = 9, topk = 6;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return 1;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m);
  int R = ds_cnn_nrelus(m);
  double *theta = malloc(P * 8), *X = malloc(din * n * 8), *out = malloc((size_t)R * (topk + 1) * 8);
  ds_rng r;
  ds_rng_init(&r, 5, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  int rc = ds_diag_cnn_activations(NULL, m, theta, X, n, topk, out);
  FILE *f = rc == DS_OK ? fopen(path, "wb") : NULL;
  if (!f) return 1;
  dump_head(f, sp, L, nl, n, 0, 0, 0.0);
  fwrite(theta, 8, P, f), fwrite(X, 8, din * n, f);
  double meta[2] = {topk, R};
  fwrite(meta, 8, 2, f);
  for (int j = 0; j < R; j++) {
    ds_cnn_relu re;
    ds_cnn_relu_map(m, j, X, &re);
    double v[3] = {re.layer, re.part, re.d};
    fwrite(v, 8, 3, f);
  }
  fwrite(out, 8, (size_t)R * (topk + 1), f);
  int bad = fclose(f) != 0;
  free(theta), free(X), free(out);
  ds_cnn_free(m);
  return bad;
}

/* ---- Hessian-vector products (ds_cnn_hvp, cnnrop.c) -------------------------- */

/* The net for HVP case k: k < NSPECS the spec nets, then the layer lists. */
static ds_cnn *hvp_net(int k, int n, int *dout) {
  if (k < NSPECS) {
    *dout = specs[k].dout;
    return ds_cnn_create(&specs[k], n, NULL, 0);
  }
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  *dout = lspecs[k - NSPECS].dout;
  return lcreate(&lspecs[k - NSPECS], n, L, &nl);
}


/* H v against central differences of the gradient along v, for squared
 * error, l4 and (several outputs) cross-entropy; dropout on (masks frozen). */
static void hvp_fd(int k) {
  const int n = 3;
  int dout;
  ds_cnn *m = hvp_net(k, n, &dout);
  if (!m) return;
  ds_cnn_dropout(m, 1, 7, 3, NULL);
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)dout * n;
  double *theta = malloc(P * 8), *v = malloc(P * 8), *Hv = malloc(P * 8), *X = malloc(din * n * 8);
  double *Y = malloc(dF * 8), *gp = malloc(P * 8), *gm = malloc(P * 8), *tp = malloc(P * 8);
  ds_rng r;
  ds_rng_init(&r, 13, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  randn(v, P, &r);
  const ds_loss losses[3] = {{DS_LOSS_MSE, 2.0, 1.0 / n}, {DS_LOSS_LP, 4.0, 0.25 / n},
                             {DS_LOSS_CE, 0.0, 1.0 / n}};
  const char *lname[3] = {"mse", "l4", "ce"};
  for (int q = 0; q < 3; q++) {
    if (q == 2 && dout < 2) continue;
    if (q == 2) onehot(Y, dout, n, k);
    else randn(Y, dF, &r);
    double L = ds_cnn_hvp(m, theta, X, Y, n, &losses[q], v, Hv);
    double Lg = ds_cnn_loss_grad(m, theta, X, Y, n, &losses[q], gp);
    const double h = 1e-5;
    for (size_t j = 0; j < P; j++) tp[j] = theta[j] + h * v[j];
    ds_cnn_loss_grad(m, tp, X, Y, n, &losses[q], gp);
    for (size_t j = 0; j < P; j++) tp[j] = theta[j] - h * v[j];
    ds_cnn_loss_grad(m, tp, X, Y, n, &losses[q], gm);
    double hmax = 0, err = 0;
    for (size_t j = 0; j < P; j++) hmax = fmax(hmax, fabs(Hv[j]));
    for (size_t j = 0; j < P; j++) err = fmax(err, fabs((gp[j] - gm[j]) / (2 * h) - Hv[j]) / hmax);
    printf("hvp %d (%s, %s): %zu params, |Hv|max %.3g, max rel FD error %.2e\n", k,
           k < NSPECS ? "spec" : lspecs[k - NSPECS].name, lname[q], P, hmax, err);
    CHECK(hmax > 0 && err < 1e-6 && L == Lg, "hvp %d %s: FD error %.3e (loss %g vs %g)", k,
          lname[q], err, L, Lg);
  }
  /* n out of range: NaN */
  CHECK(isnan(ds_cnn_hvp(m, theta, X, Y, n + 1, &losses[0], v, Hv)) && isnan(Hv[0]),
        "hvp %d: n > nmax gives NaN", k);
  free(theta), free(v), free(Hv), free(X), free(Y), free(gp), free(gm), free(tp);
  ds_cnn_free(m);
}

/* J v against central differences of the forward pass and against the
 * backward pass (<R, J v> = <J^T R, v>); f_lin (ds_cnn_lin): F(theta0) at
 * theta0, exactly linear along v, its gradient = the net's at theta0 and
 * against central differences of its loss. Dropout on (masks frozen). */
static void jvp_lin(int k) {
  const int n = 3;
  int dout;
  ds_cnn *m = hvp_net(k, n, &dout);
  if (!m) return;
  ds_cnn_dropout(m, 1, 7, 3, NULL);
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)dout * n;
  double *theta = malloc(P * 8), *v = malloc(P * 8), *X = malloc(din * n * 8), *tp = malloc(P * 8);
  double *JV = malloc((dF + dout) * 8), *Fp = malloc(dF * 8), *R = malloc(dF * 8), *g = malloc(P * 8);
  double *Y = malloc(dF * 8), *g2 = malloc(P * 8), *F0 = malloc(dF * 8);
  ds_rng r;
  ds_rng_init(&r, 17, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  randn(v, P, &r);
  randn(R, dF, &r);
  randn(Y, dF, &r);
  CHECK(ds_cnn_jvp(m, theta, X, n, v, JV) == DS_OK, "jvp %d", k);
  const double h = 1e-6;
  for (size_t j = 0; j < P; j++) tp[j] = theta[j] + h * v[j];
  memcpy(Fp, ds_cnn_forward(m, tp, X, n), dF * 8);
  for (size_t j = 0; j < P; j++) tp[j] = theta[j] - h * v[j];
  const double *Fm = ds_cnn_forward(m, tp, X, n);
  double jmax = 0, err = 0;
  for (size_t q = 0; q < dF; q++) jmax = fmax(jmax, fabs(JV[q]));
  for (size_t q = 0; q < dF; q++) err = fmax(err, fabs((Fp[q] - Fm[q]) / (2 * h) - JV[q]) / jmax);
  memcpy(F0, ds_cnn_forward(m, theta, X, n), dF * 8);
  ds_cnn_backward(m, theta, X, n, R, g);
  double a = dot(R, JV, dF), b = dot(g, v, P), adj = fabs(a - b) / fmax(fabs(a), fabs(b));
  /* f_lin */
  ds_cnn_lin lin;
  CHECK(ds_cnn_lin_init(&lin, m, theta) == DS_OK, "lin init %d", k);
  double e0 = 0, elin = 0, egrad = 0, efd = 0, gmax = 0;
  const double *FL = ds_cnn_lin_forward(&lin, theta, X, n);
  for (size_t q = 0; q < dF; q++) e0 = fmax(e0, fabs(FL[q] - F0[q]));
  for (size_t j = 0; j < P; j++) tp[j] = theta[j] + 0.3 * v[j];
  FL = ds_cnn_lin_forward(&lin, tp, X, n);
  for (size_t q = 0; q < dF; q++) elin = fmax(elin, fabs(FL[q] - (F0[q] + 0.3 * JV[q])) / jmax);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
  double L0 = ds_cnn_lin_loss_grad(&lin, theta, X, Y, n, &l, g);
  double Ln = ds_cnn_loss_grad(m, theta, X, Y, n, &l, g2);
  for (size_t j = 0; j < P; j++) gmax = fmax(gmax, fabs(g2[j]));
  for (size_t j = 0; j < P; j++) egrad = fmax(egrad, fabs(g[j] - g2[j]) / gmax);
  /* away from theta0: the gradient of the (quadratic) lin loss along v */
  double *th1 = malloc(P * 8);
  for (size_t j = 0; j < P; j++) th1[j] = theta[j] + 0.3 * v[j];
  ds_cnn_lin_loss_grad(&lin, th1, X, Y, n, &l, g);
  double dd = 0;
  for (size_t j = 0; j < P; j++) dd += g[j] * v[j];
  for (size_t j = 0; j < P; j++) tp[j] = th1[j] + h * v[j];
  double lp = ds_cnn_lin_loss_grad(&lin, tp, X, Y, n, &l, g2);
  for (size_t j = 0; j < P; j++) tp[j] = th1[j] - h * v[j];
  double lm = ds_cnn_lin_loss_grad(&lin, tp, X, Y, n, &l, g2);
  efd = fabs((lp - lm) / (2 * h) - dd) / fabs(dd);
  printf("jvp %d: max rel FD error %.2e, <R,Jv> vs <J^T R,v> %.2e; f_lin: at theta0 %.1e, "
         "linear %.2e, grad at theta0 %.2e, directional FD %.2e\n", k, err, adj, e0, elin, egrad,
         efd);
  CHECK(jmax > 0 && err < 1e-7 && adj < 1e-12, "jvp %d: FD %.3e adjoint %.3e", k, err, adj);
  CHECK(e0 == 0 && elin < 1e-12 && egrad < 1e-13 && L0 == Ln && efd < 1e-7,
        "f_lin %d: %.3e %.3e %.3e %.3e", k, e0, elin, egrad, efd);
  CHECK(ds_cnn_jvp(m, theta, X, n + 1, v, JV) == DS_EINPUT && isnan(JV[0]), "jvp %d: n > nmax", k);
  ds_cnn_lin_free(&lin);
  free(theta), free(v), free(X), free(tp), free(JV), free(Fp), free(R), free(g), free(Y);
  free(g2), free(F0), free(th1);
  ds_cnn_free(m);
}

/* The dump of tests/cnn_hvp_torch.py for layer list K (dropout off): the
 * layer header of --dump-layers (steps 0), theta, X, v, then per loss (mse on
 * random Y, cross-entropy on one-hot Y) Y and H v; then J v (ds_cnn_jvp). */
static int dump_hvp(const char *path, int k) {
  const lspec *sp = &lspecs[k];
  const int n = 4;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  int nl;
  ds_cnn *m = lcreate(sp, n, L, &nl);
  if (!m) return 1;
  size_t P = ds_cnn_nparams(m), din = (size_t)ds_cnn_din(m), dF = (size_t)sp->dout * n;
  double *theta = malloc(P * 8), *v = malloc(P * 8), *Hv = malloc(P * 8), *X = malloc(din * n * 8);
  double *Y = malloc(dF * 8);
  ds_rng r;
  ds_rng_init(&r, 5, (uint64_t)k, 1, 0);
  ds_cnn_init(m, &r, theta);
  randn(X, din * n, &r);
  randn(v, P, &r);
  FILE *f = fopen(path, "wb");
  if (!f) return 1;
  dump_head(f, sp, L, nl, n, 0, 0, 0.0);
  fwrite(theta, 8, P, f), fwrite(X, 8, din * n, f), fwrite(v, 8, P, f);
  for (int q = 0; q < 2; q++) {
    ds_loss l = {.type = q ? DS_LOSS_CE : DS_LOSS_MSE, .p = 2.0, .c = 1.0 / n};
    if (q) onehot(Y, sp->dout, n, k);
    else randn(Y, dF, &r);
    ds_cnn_hvp(m, theta, X, Y, n, &l, v, Hv);
    fwrite(Y, 8, dF, f), fwrite(Hv, 8, P, f);
  }
  ds_cnn_jvp(m, theta, X, n, v, Y); /* J v (dout x n) */
  fwrite(Y, 8, dF, f);
  int bad = fclose(f) != 0;
  free(theta), free(v), free(Hv), free(X), free(Y);
  ds_cnn_free(m);
  return bad;
}

/* model.init_scale / init_std: scale x the default draws bit for bit (both
 * parameterisations); std > 0: N(0, (scale std)^2), the sample moments of
 * the ~8000 draws of a tf_mnist-like net within 4 standard errors. */
static void init_scaled(void) {
  for (int ntk = 0; ntk < 2; ntk++) {
    ds_cnn_spec sp = specs[0];
    sp.param = ntk ? DS_PARAM_NTK : DS_PARAM_STANDARD;
    ds_cnn *m = ds_cnn_create(&sp, 1, NULL, 0);
    CHECK(m != NULL, "create");
    if (!m) return;
    size_t P = ds_cnn_nparams(m);
    double *a = malloc(P * 8), *b = malloc(P * 8);
    ds_rng r;
    ds_rng_init(&r, 5, 1, 0, 0);
    ds_cnn_init(m, &r, a);
    ds_rng_init(&r, 5, 1, 0, 0);
    ds_cnn_init_scaled(m, &r, b, 0.375, 0.0);
    size_t bad = 0;
    for (size_t j = 0; j < P; j++) bad += b[j] != 0.375 * a[j];
    CHECK(bad == 0, "%s: init_scale 0.375: %zu of %zu parameters not 0.375 x the default",
          ntk ? "ntk" : "standard", bad, P);
    ds_rng_init(&r, 5, 1, 0, 0);
    ds_cnn_init_scaled(m, &r, b, 1.0, 0.0);
    CHECK(!memcmp(a, b, P * 8), "scale 1, std 0: the default's bits");
    free(a), free(b);
    ds_cnn_free(m);
  }
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  ds_cnn_net nt = {.net = DS_NET_TF_MNIST, .width = 2, .depth = 2, .kernel = 3, .stride = 1,
                   .same = 1, .readout = DS_CNN_FLATTEN, .pool_every = 1, .pool_size = 2,
                   .dout = 10};
  int nl = ds_cnn_net_layers(&nt, L, NULL, 0);
  ds_cnn *m = nl > 0 ? ds_cnn_create_layers(L, nl, 1, 28, 28, 10, DS_PARAM_STANDARD, 1.0, 1,
                                            NULL, 0) : NULL;
  CHECK(m != NULL, "tf_mnist(2)");
  if (!m) return;
  size_t P = ds_cnn_nparams(m);
  double *t = malloc(P * 8), s1 = 0, s2 = 0, sd = 0.5 * 0.1;
  ds_rng r;
  ds_rng_init(&r, 9, 0, 0, 0);
  ds_cnn_init_scaled(m, &r, t, 0.5, 0.1);
  for (size_t j = 0; j < P; j++) s1 += t[j], s2 += t[j] * t[j];
  double mean = s1 / P, var = s2 / P - mean * mean;
  printf("init_std 0.1, init_scale 0.5 on %zu parameters: mean %.2e, std %.5f (want %.5f)\n", P,
         mean, sqrt(var), sd);
  CHECK(fabs(mean) < 4 * sd / sqrt((double)P), "mean %.3e", mean);
  CHECK(fabs(var - sd * sd) < 4 * sd * sd * sqrt(2.0 / P), "var %.3e vs %.3e", var, sd * sd);
  free(t);
  ds_cnn_free(m);
}

/* The masked readout (cnn.h's rdrop, model.dag_readout_drop) of a dag net
 * of M units x 2 on 6 inputs with 3 outputs: the block's weights are the
 * unmasked readout's net's bit for bit (its mask is drawn after them); about
 * 1 - p of the readout's weights kept; masked ones exactly 0 at init, with
 * exactly 0 gradient and Hv, still 0 after GD; F independent of them; and F
 * by hand from the block's output: output o = sum_kept W x / sqrt(kept_o). */
static void readout_mask_checks(void) {
  enum { M = 20, DIN = 6, T = DIN + 2 * M, K = 3, N = 4 };
  ds_cnn_layer L = {.kind = DS_LAYER_DAG, .cout = M, .depth = 2, .p = 0.5, .rdrop = 0.5};
  char err[256] = "";
  ds_cnn *m = ds_cnn_create_layers(&L, 1, DIN, 1, 1, K, DS_PARAM_NTK, 0.0, N, err, sizeof err);
  L.rdrop = 0.0;
  ds_cnn *m0 = ds_cnn_create_layers(&L, 1, DIN, 1, 1, K, DS_PARAM_NTK, 0.0, N, err, sizeof err);
  CHECK(m && m0, "masked readout create: %s", err);
  if (!m || !m0) return;
  size_t P = ds_cnn_nparams(m), PW = M * DIN + M * (DIN + M), RW = (size_t)K * T;
  ds_cnn_cost cost;
  L.rdrop = 0.5;
  CHECK(P == ds_cnn_nparams(m0) && P == PW + RW + K &&
            !ds_cnn_layers_check(&L, 1, DIN, 1, 1, K, &cost, err, sizeof err) &&
            cost.dag == (double)(PW + RW),
        "masked readout: params %zu, cost.dag %g want %zu", P, cost.dag, PW + RW);
  double *theta = malloc(P * 8), *t0 = malloc(P * 8), *grad = malloc(P * 8), *Hv = malloc(P * 8);
  double *v = malloc(P * 8), X[DIN * N], Y[K * N], F[K * N];
  ds_rng r;
  ds_rng_init(&r, 31, 0, 0, 0);
  ds_cnn_init(m, &r, theta);
  ds_rng_init(&r, 31, 0, 0, 0);
  ds_cnn_init(m0, &r, t0);
  CHECK(!memcmp(theta, t0, PW * 8), "masked readout: the block's mask and weights unchanged");
  const double *R = theta + PW; /* K x T column-major */
  size_t kept = 0;
  for (size_t j = 0; j < RW; j++) kept += R[j] != 0.0;
  printf("masked readout: %zu of %zu readout weights kept (%.3f)\n", kept, RW, (double)kept / RW);
  CHECK(fabs((double)kept / RW - 0.5) < 0.12, "masked readout keep rate %zu of %zu", kept, RW);
  randn(X, DIN * N, &r);
  randn(Y, K * N, &r);
  randn(v, P, &r);
  /* by hand from the block's output (the unmasked net's readout input is the same) */
  int nl0 = ds_cnn_nlayers(m0);
  CHECK(nl0 == 2, "dag + readout: 2 layers, got %d", nl0);
  memcpy(F, ds_cnn_forward(m, theta, X, N), sizeof F);
  ds_cnn_forward(m0, theta, X, N);
  double worst = 0.0;
  {
    ds_cnn_relu re;
    ds_cnn_relu_map(m0, 1, X, &re); /* f_2; the block's output is [x; f_1; f_2] */
    ds_cnn_relu r1;
    ds_cnn_relu_map(m0, 0, X, &r1);
    for (int i = 0; i < N; i++)
      for (int o = 0; o < K; o++) {
        double sum = 0.0;
        int deg = 0;
        for (int c = 0; c < T; c++) {
          double a = c < DIN ? X[i * DIN + c] : c < DIN + M ? r1.A[i * r1.lda + c - DIN]
                                                            : re.A[i * re.lda + c - DIN - M];
          sum += R[o + (size_t)c * K] * a, deg += R[o + (size_t)c * K] != 0.0;
        }
        double want = deg ? sum / sqrt(deg) : 0.0;
        worst = fmax(worst, fabs(F[i * K + o] - want) / fmax(1.0, fabs(want)));
      }
  }
  CHECK(worst < 1e-13, "masked readout by hand: max rel diff %.2e", worst);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / N};
  double l0 = ds_cnn_loss_grad(m, theta, X, Y, N, &l, grad), lT = l0;
  ds_cnn_hvp(m, theta, X, Y, N, &l, v, Hv);
  int gz = 1, hz = 1, gnz = 0;
  for (size_t j = PW; j < PW + RW; j++)
    if (theta[j] == 0.0) gz &= grad[j] == 0.0, hz &= Hv[j] == 0.0;
    else gnz += grad[j] != 0.0;
  CHECK(gz && hz && gnz > 0, "masked readout: 0 gradient (%d) and Hv (%d) where masked", gz, hz);
  memcpy(t0, theta, P * 8);
  for (size_t j = PW; j < PW + RW; j++)
    if (theta[j] == 0.0) t0[j] = -2.5;
  CHECK(!memcmp(F, ds_cnn_forward(m, t0, X, N), sizeof F),
        "masked readout: F independent of the masked entries");
  memcpy(t0, theta, P * 8);
  for (int s = 0; s < 20; s++) {
    lT = ds_cnn_loss_grad(m, theta, X, Y, N, &l, grad);
    for (size_t j = 0; j < P; j++) theta[j] -= 0.5 * grad[j];
  }
  int stay = 1;
  for (size_t j = PW; j < PW + RW; j++) stay &= (t0[j] == 0.0) == (theta[j] == 0.0);
  printf("masked readout: 20 GD steps, loss %.4g -> %.4g, masked weights still 0: %d\n", l0, lT,
         stay);
  CHECK(stay && lT < l0, "masked readout: masked weights stay 0 (%d), loss %g -> %g", stay, l0, lT);
  free(theta), free(t0), free(grad), free(Hv), free(v);
  ds_cnn_free(m), ds_cnn_free(m0);
}

/* The DAG block (seed 003 Fig. 2.2): parameter count; the mask (a fraction
 * ~ 1 - p kept, the same for the same init stream, another for another);
 * masked weights exactly 0 at init, with exactly 0 gradient and Hv, still
 * exactly 0 after GD steps; F does not depend on them; a neuron's scale is
 * 1/sqrt(its kept in-degree) (the output of a one-layer block by hand). */
static void dag_checks(void) {
  enum { M = 40, D = 2, DIN = 6, N = 5 };
  ds_cnn_net nt = {.net = DS_NET_DAG, .width = M, .depth = D, .kernel = 3, .stride = 1, .same = 1,
                   .pool_every = 1, .pool_size = 2, .dout = 1, .dag_drop = 0.5};
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  char err[256] = "";
  int nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
  CHECK(nl == 2 && L[0].kind == DS_LAYER_FLATTEN && L[1].kind == DS_LAYER_DAG && L[1].depth == D,
        "dag net layers: %d '%s'", nl, err);
  if (nl != 2) return;
  ds_cnn *m = ds_cnn_create_layers(L, nl, 1, 2, 3, 1, DS_PARAM_NTK, 0.0, N, err, sizeof err);
  CHECK(m != NULL, "dag create: %s", err);
  if (!m) return;
  /* W_1 M x 6, W_2 M x (6 + M), readout 1 x (6 + 2M) and its bias */
  size_t P = ds_cnn_nparams(m), want = M * DIN + M * (DIN + M) + (DIN + 2 * M) + 1;
  CHECK(P == want && ds_cnn_nweights(m) == D + 1, "dag params %zu want %zu, weights %d", P, want,
        ds_cnn_nweights(m));
  ds_cnn_cost cost;
  CHECK(!ds_cnn_layers_check(L, nl, 1, 2, 3, 1, &cost, err, sizeof err) && cost.params == (double)P,
        "dag cost params %g want %zu", cost.params, P);
  size_t PW = M * DIN + M * (DIN + M);
  double *theta = malloc(P * 8), *t2 = malloc(P * 8), *grad = malloc(P * 8), *Hv = malloc(P * 8);
  double *v = malloc(P * 8), X[DIN * N], Y[N], F[N];
  unsigned char *zero = malloc(PW);
  ds_rng r;
  ds_rng_init(&r, 21, 0, 0, 0);
  ds_cnn_init(m, &r, theta);
  ds_rng_init(&r, 21, 0, 0, 0);
  ds_cnn_init(m, &r, t2);
  CHECK(!memcmp(theta, t2, P * 8), "dag: the same init stream, the same mask and weights");
  size_t kept = 0, same_mask = 0;
  for (size_t j = 0; j < PW; j++) zero[j] = theta[j] == 0.0, kept += !zero[j];
  ds_rng_init(&r, 22, 0, 0, 0);
  ds_cnn_init(m, &r, t2);
  for (size_t j = 0; j < PW; j++) same_mask += (t2[j] == 0.0) == zero[j];
  ds_rng_init(&r, 21, 0, 0, 0);
  ds_cnn_init(m, &r, theta); /* back to stream 21's mask */
  double rate = (double)kept / PW;
  printf("dag: %zu params, %zu of %zu weights kept (%.3f), another seed's mask agrees on %.3f\n",
         P, kept, PW, rate, (double)same_mask / PW);
  CHECK(fabs(rate - 0.5) < 0.05 && same_mask < 0.7 * PW, "dag keep rate %.3f, mask agreement %zu",
        rate, same_mask);
  randn(X, DIN * N, &r);
  randn(Y, N, &r);
  randn(v, P, &r);
  ds_loss l = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / N};
  double l0 = ds_cnn_loss_grad(m, theta, X, Y, N, &l, grad), lT = l0;
  ds_cnn_hvp(m, theta, X, Y, N, &l, v, Hv);
  int gz = 1, hz = 1;
  for (size_t j = 0; j < PW; j++)
    if (zero[j]) gz &= grad[j] == 0.0, hz &= Hv[j] == 0.0;
  CHECK(gz && hz, "dag: masked weights get exactly 0 gradient (%d) and Hv (%d)", gz, hz);
  /* F does not see masked entries */
  memcpy(F, ds_cnn_forward(m, theta, X, N), sizeof F);
  memcpy(t2, theta, P * 8);
  for (size_t j = 0; j < PW; j++)
    if (zero[j]) t2[j] = 3.0;
  CHECK(!memcmp(F, ds_cnn_forward(m, t2, X, N), sizeof F), "dag: F independent of masked entries");
  for (int s = 0; s < 20; s++) {
    lT = ds_cnn_loss_grad(m, theta, X, Y, N, &l, grad);
    for (size_t j = 0; j < P; j++) theta[j] -= 0.5 * grad[j];
  }
  int stay = 1, moved = 0;
  for (size_t j = 0; j < PW; j++) stay &= !zero[j] || theta[j] == 0.0, moved += theta[j] != 0.0;
  printf("dag: 20 GD steps, loss %.4g -> %.4g, masked weights still exactly 0: %d\n", l0, lT, stay);
  CHECK(stay && moved == (int)kept && lT < l0, "dag: masked weights stay 0 (%d), loss %g -> %g",
        stay, l0, lT);
  free(theta), free(t2), free(grad), free(Hv), free(v), free(zero);
  ds_cnn_free(m);
  /* one layer of 3 units on 4 inputs, by hand: f_i = relu(sum_kept w x / sqrt(kept_i)) */
  ds_cnn_layer one = {.kind = DS_LAYER_DAG, .cout = 3, .depth = 1, .p = 0.5};
  m = ds_cnn_create_layers(&one, 1, 4, 1, 1, 1, DS_PARAM_NTK, 0.0, 1, err, sizeof err);
  CHECK(m != NULL, "dag one layer: %s", err);
  if (!m) return;
  P = ds_cnn_nparams(m); /* 12 + 7 + 1 */
  theta = malloc(P * 8);
  ds_rng_init(&r, 5, 0, 0, 0);
  ds_cnn_init(m, &r, theta);
  double x[4] = {0.3, -1.2, 0.7, 2.0}, out = 0.0;
  const double *W = theta, *R = theta + 12; /* readout: 1 x 7 */
  for (int i = 0; i < 4; i++) out += R[i] * x[i];
  for (int u = 0; u < 3; u++) {
    double z = 0.0;
    int deg = 0;
    for (int i = 0; i < 4; i++) z += W[u * 4 + i] * x[i], deg += W[u * 4 + i] != 0.0;
    z = deg ? z / sqrt(deg) : 0.0;
    out += R[4 + u] * (z > 0.0 ? z : 0.0);
  }
  out /= sqrt(7.0);
  double got = ds_cnn_forward(m, theta, x, 1)[0];
  CHECK(fabs(got - out) < 1e-14 * fmax(1.0, fabs(out)), "dag by hand: %.17g want %.17g", got, out);
  free(theta);
  ds_cnn_free(m);
  readout_mask_checks();
  /* refusals */
  ds_cnn_layer bad = {.kind = DS_LAYER_DAG, .cout = 3, .depth = 0, .p = 0.5};
  CHECK(!ds_cnn_create_layers(&bad, 1, 1, 2, 2, 1, DS_PARAM_NTK, 0.0, 1, err, sizeof err) &&
            strstr(err, "layer 1 (dag)"), "dag depth 0: '%s'", err);
  nt.dag_drop = 1.0;
  CHECK(ds_cnn_net_layers(&nt, L, err, sizeof err) < 0 && strstr(err, "model.dag_drop"),
        "dag_drop 1: '%s'", err);
  nt.dag_drop = 0.5, nt.dropout = 0.5;
  CHECK(ds_cnn_net_layers(&nt, L, err, sizeof err) < 0 && strstr(err, "no dropout"),
        "dag with dropout: '%s'", err);
  nt.dropout = 0.0, nt.dag_readout_drop = 1.0;
  CHECK(ds_cnn_net_layers(&nt, L, err, sizeof err) < 0 && strstr(err, "model.dag_readout_drop 1"),
        "dag_readout_drop 1: '%s'", err);
  ds_cnn_layer two[2] = {{.kind = DS_LAYER_DAG, .cout = 3, .depth = 1, .rdrop = 0.5},
                         {.kind = DS_LAYER_RELU}};
  CHECK(!ds_cnn_create_layers(two, 2, 4, 1, 1, 1, DS_PARAM_NTK, 0.0, 1, err, sizeof err) &&
            strstr(err, "layer 1 (dag): a masked readout") &&
            ds_cnn_layers_check(two, 2, 4, 1, 1, 1, NULL, NULL, 0) == DS_EINPUT,
        "rdrop on a dag that is not last: '%s'", err);
}

int main(int argc, char **argv) {
  ds_dataset tr = {0};
  if (argc == 4 && !strcmp(argv[1], "--dump")) {
    int k = atoi(argv[3]);
    if (k < 0 || k > NSPECS) return 2;
    return dump(argv[2], k);
  }
  if (argc == 4 && !strcmp(argv[1], "--dump-layers")) {
    int k = atoi(argv[3]);
    if (k < 0 || k >= NLSPECS) return 2;
    return dump_layers(argv[2], k);
  }
  if (argc == 4 && !strcmp(argv[1], "--dump-act")) {
    int k = atoi(argv[3]);
    if (k < 0 || k >= NLSPECS) return 2;
    return dump_act(argv[2], k);
  }
  if (argc == 4 && !strcmp(argv[1], "--dump-hvp")) {
    int k = atoi(argv[3]);
    if (k < 0 || k >= NLSPECS) return 2;
    return dump_hvp(argv[2], k);
  }
  if (argc == 2 && !strcmp(argv[1], "--count-layers")) return printf("%d\n", NLSPECS) < 0;
  if (argc == 2 && !strcmp(argv[1], "--count")) { /* and the Fashion-MNIST config */
    int have = fmnist(2, &tr);
    ds_dataset_free(&tr);
    return printf("%d\n", NSPECS + have) < 0;
  }
  layer_known();
  init_scaled();
  /* cin h w cout s t same n */
  static const int layers[][8] = {{2, 5, 4, 3, 3, 1, 1, 2}, {3, 7, 6, 2, 3, 2, 0, 2},
                                  {1, 6, 5, 2, 2, 1, 1, 1}, {2, 9, 9, 3, 5, 3, 1, 2},
                                  {2, 4, 4, 2, 4, 1, 0, 1},
                                  /* channels multiples of 8: the implicit GEMM (conv.c) */
                                  {8, 5, 4, 8, 3, 1, 1, 2}, {8, 7, 6, 16, 3, 2, 0, 2},
                                  {16, 6, 5, 8, 2, 1, 1, 1}, {8, 9, 9, 8, 5, 3, 1, 1}};
  for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
    const int *c = layers[i];
    double e = layer_fd(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    printf("conv layer %zu (cin %d %dx%d cout %d s %d t %d %s): max rel FD error %.2e\n", i,
           c[0], c[1], c[2], c[3], c[4], c[5], c[6] ? "same" : "valid", e);
    CHECK(e < 1e-8, "layer %zu FD error %.3e", i, e);
  }
  /* cin h w cout s t same n: blocks of 12 (29 = 12 + 12 + 5), 16 (50 = 3 x 16 + 2),
   * 25 (31 = 25 + 6), 32 (40 = 32 + 8), 44 (50 = 44 + 6) samples (conv.c's 2^20-double
   * budget); the input gradient by the flipped kernel in 0, 2, 3, by col2im in 1, 4 */
  static const int blocks[][8] = {{32, 16, 16, 32, 3, 1, 1, 29}, {40, 23, 23, 24, 3, 2, 0, 50},
                                  {40, 12, 12, 24, 3, 1, 0, 31}, {16, 20, 20, 16, 2, 1, 1, 40},
                                  {3, 20, 20, 32, 3, 1, 1, 50}};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    const int *c = blocks[i];
    double e = layer_blocks(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
    printf("conv blocks %zu (cin %d %dx%d cout %d s %d t %d %s, n %d): max rel diff to one "
           "sample a call %.2e\n", i, c[0], c[1], c[2], c[3], c[4], c[5], c[6] ? "same" : "valid",
           c[7], e);
    CHECK(e < 1e-13, "blocks %zu: %.3e", i, e);
  }
  for (int k = 0; k < NSPECS; k++) {
    double e = net_fd(k);
    printf("cnn config %d: max rel FD error %.2e\n", k, e);
    CHECK(e < 1e-7, "cnn config %d FD error %.3e", k, e);
  }
  /* Fashion-MNIST: 30 GD steps (lr 2) of a 2-conv net on 32 images halve the loss at least */
  if (fmnist(32, &tr)) {
    ds_cnn *m = ds_cnn_create(&fmnist_spec, tr.n, NULL, 0);
    size_t P = ds_cnn_nparams(m);
    double *theta = malloc(P * 8), *grad = malloc(P * 8), l0 = 0, l = 0;
    ds_rng r;
    ds_rng_init(&r, 2, 0, 0, 0);
    ds_cnn_init(m, &r, theta);
    ds_loss loss = {.type = DS_LOSS_MSE, .p = 2.0, .c = 1.0 / tr.n};
    for (int s = 0; s < 30; s++) {
      l = ds_cnn_loss_grad(m, theta, tr.X, tr.Y, tr.n, &loss, grad);
      if (s == 0) l0 = l;
      for (size_t j = 0; j < P; j++) theta[j] -= 2.0 * grad[j];
    }
    printf("fashion-mnist (32 images, 2 conv x 4 ch, flatten): loss %.4g -> %.4g\n", l0, l);
    CHECK(isfinite(l) && l < 0.5 * l0, "fashion-mnist loss %g -> %g", l0, l);
    free(theta), free(grad);
    ds_cnn_free(m);
    ds_dataset_free(&tr);
  } else
    printf("skip: Fashion-MNIST not installed (package dataset-fashion-mnist)\n");
  for (int k = 0; k < NLFD; k++) list_fd(k);
  for (int k = 0; k < NSPECS + NLFD; k++) hvp_fd(k);
  for (int k = 0; k < NSPECS + NLFD; k++) jvp_lin(k);
  for (int k = NLDAG; k < NLSPECS; k++) list_fd(k), hvp_fd(NSPECS + k), jvp_lin(NSPECS + k);
  dag_checks();
  dropout_checks();
  list_refusals();
  /* bad specs are refused with a message */
  char err[200] = "";
  ds_cnn_spec bad = specs[0];
  bad.h0 = bad.w0 = 2, bad.same = 0;
  CHECK(ds_cnn_create(&bad, 1, err, sizeof err) == NULL && strstr(err, "no output"),
        "valid 3x3 on 2x2 refused: '%s'", err);
  bad = specs[0];
  bad.channels = 0;
  CHECK(ds_cnn_create(&bad, 1, err, sizeof err) == NULL && strstr(err, "channels"),
        "0 channels refused: '%s'", err);
  return ds_check_report("test_cnn");
}
