/* test_cnn_diag.c -- the diagnostics of a CNN (issue 26; src/diag/cnn.c,
 * layers.c, agop.c through include/dynsweep/cnn.h): the blocked NTK (J held
 * a few rows at a time) equals the one-block K, K is symmetric and positive
 * semi-definite, its eigenvalues are those of the team eigensolver, the
 * Jacobian rows against central differences of the forward pass, the layer
 * statistics against their singular values, the AGOP's trace against the
 * input gradients' norms.
 *
 *   test_cnn_diag                 the checks (exit 0 ok, 1 failed)
 *   test_cnn_diag --count         the number of dump configurations
 *   test_cnn_diag --dump FILE K   config K's net, data, NTK, eigenvalues,
 *                                 weight singular values and AGOP for
 *                                 tests/cnn_diag_torch.py (PyTorch float64,
 *                                 functorch jacrev). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/cnn.h"
#include "dynsweep/diag.h"

static const ds_cnn_spec specs[] = {
    /* c0 h0 w0 nconv C s t same readout dout param beta */
    {1, 6, 6, 3, 3, 3, 1, 1, DS_CNN_FLATTEN, 1, DS_PARAM_NTK, 1.0},  /* 003's CNN, small */
    {2, 9, 8, 2, 4, 3, 2, 0, DS_CNN_GAP, 2, DS_PARAM_STANDARD, 1.0}, /* stride 2, valid, GAP */
    {3, 5, 5, 2, 2, 2, 1, 1, DS_CNN_FLATTEN, 3, DS_PARAM_NTK, 0.1},  /* even kernel, beta, k = 3 */
    {1, 8, 8, 2, 3, 5, 2, 1, DS_CNN_GAP, 1, DS_PARAM_NTK, 0.0},      /* 5x5 stride 2, no bias */
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))
#define NS 5 /* samples */

static ds_team solo;

static void setup(int k, ds_cnn **m, double **theta, double **X) {
  const ds_cnn_spec *sp = &specs[k];
  char err[256];
  *m = ds_cnn_create(sp, NS, err, sizeof err);
  if (!*m) {
    fprintf(stderr, "config %d: %s\n", k, err);
    exit(1);
  }
  size_t P = ds_cnn_nparams(*m), d = (size_t)ds_cnn_din(*m);
  *theta = malloc(P * sizeof **theta);
  *X = malloc(d * NS * sizeof **X);
  ds_rng r;
  ds_rng_init(&r, 5, (uint64_t)k, 0, 0);
  ds_cnn_init(*m, &r, *theta);
  for (size_t q = 0; q < d * NS; q++) (*X)[q] = ds_rng_normal(&r);
}

static double maxabs(const double *a, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
  return m;
}

static void checks(int k) {
  const ds_cnn_spec *sp = &specs[k];
  ds_cnn *m;
  double *theta, *X;
  setup(k, &m, &theta, &X);
  int kk = sp->dout, kn = kk * NS, d = ds_cnn_din(m);
  size_t P = ds_cnn_nparams(m), kn2 = (size_t)kn * kn;
  double *K = calloc(kn2, sizeof *K), *Kb = calloc(kn2, sizeof *Kb), *J = calloc(P * kn, sizeof *J);
  /* one block, then budgets of 1, 3, 7 and 10 rows of J (held blocks of 1, 2, 6, 9 rows) */
  CHECK(ds_diag_cnn_ntk_matrix(m, theta, X, NS, kk, (size_t)1 << 30, K) == DS_OK, "K: %s", ds_errmsg());
  static const int budgets[] = {1, 3, 7, 10};
  for (int bi = 0; bi < 4; bi++) {
    int rows = budgets[bi];
    CHECK(ds_diag_cnn_ntk_matrix(m, theta, X, NS, kk, rows * P * sizeof(double), Kb) == DS_OK,
          "blocked K: %s", ds_errmsg());
    double e = 0.0;
    for (size_t q = 0; q < kn2; q++) e = fmax(e, fabs(K[q] - Kb[q]));
    CHECK(e <= 1e-13 * maxabs(K, kn2), "config %d: K with %d-row budget differs by %g", k, rows, e);
  }
  double asym = 0.0, mind = INFINITY;
  for (int c = 0; c < kn; c++) {
    mind = fmin(mind, K[(size_t)c * kn + c]);
    for (int r = 0; r < kn; r++) asym = fmax(asym, fabs(K[(size_t)c * kn + r] - K[(size_t)r * kn + c]));
  }
  CHECK(asym == 0.0 && mind > 0.0, "config %d: K symmetric (%g), positive diagonal (%g)", k, asym, mind);
  /* rows of J against central differences of F: J[(o,i), p] ~ (f_o(x_i; theta + h e_p) - ...)/2h */
  CHECK(ds_diag_cnn_jacobian(m, theta, X, NS, kk, 0, kn, J) == DS_OK, "J");
  double fd = 0.0, jmax = maxabs(J, P * kn);
  double *F = malloc((size_t)kn * sizeof *F);
  for (size_t p = 0; p < P; p += P / 17 + 1) {
    const double h = 1e-6, t0 = theta[p];
    theta[p] = t0 + h;
    memcpy(F, ds_cnn_forward(m, theta, X, NS), (size_t)kn * sizeof *F);
    theta[p] = t0 - h;
    const double *Fm = ds_cnn_forward(m, theta, X, NS);
    theta[p] = t0;
    for (int r = 0; r < kn; r++) fd = fmax(fd, fabs((F[r] - Fm[r]) / (2 * h) - J[(size_t)r * P + p]));
  }
  CHECK(fd <= 1e-7 * jmax, "config %d: J against central differences: %g (max |J| %g)", k, fd, jmax);
  /* eigenvalues: top-3 from the team eigensolver (solo), and the ones of K */
  double ev[3], evec[3 * 64];
  CHECK(kn <= 64 && ds_diag_cnn_ntk(&solo, m, theta, X, NS, kk, 1 << 20, 3, ev, evec, Kb) == DS_OK,
        "ntk: %s", ds_errmsg());
  double Kv = 0.0; /* Rayleigh quotient of the top eigenvector */
  for (int c = 0; c < kn; c++)
    for (int r = 0; r < kn; r++) Kv += evec[r] * K[(size_t)c * kn + r] * evec[c];
  CHECK(ds_close_rel(Kv, ev[0], 1e-12) && ev[0] >= ev[1] && ev[1] >= ev[2],
        "config %d: top eigenpair %g vs u^T K u %g", k, ev[0], Kv);
  /* layer statistics: k singular values, then ||W||_F and ||W||_2 */
  int nw = ds_cnn_nweights(m), kt = 2;
  double *out = calloc((size_t)nw * (kt + DS_DIAG_LAYER_EXTRA), sizeof *out), s[256];
  CHECK(ds_diag_cnn_layers(&solo, m, theta, kt, out) == DS_OK, "layers: %s", ds_errmsg());
  for (int i = 0; i < nw; i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(m, i, &off, &rows, &cols);
    CHECK(ds_diag_cnn_weight_sv(&solo, m, theta, i, s) == DS_OK, "sv");
    int ns = rows < cols ? rows : cols;
    double f2 = 0.0, s2 = 0.0;
    for (int j = 0; j < ns; j++) s2 += s[j] * s[j];
    for (size_t q = 0; q < (size_t)rows * cols; q++) f2 += theta[off + q] * theta[off + q];
    const double *o = out + (size_t)i * (kt + DS_DIAG_LAYER_EXTRA);
    CHECK(ds_close_rel(s2, f2, 1e-12) && ds_close_rel(o[kt], sqrt(f2), 1e-14) && o[0] == s[0] &&
          o[kt + 1] == s[0] && (ns > 1 ? o[1] == s[1] : isnan(o[1])),
          "config %d W_%d (%d x %d): sum s^2 %g vs ||W||_F^2 %g", k, i + 1, rows, cols, s2, f2);
  }
  /* AGOP: Tr G = (1/n) sum_{o,i} ||grad_x f_o(x_i)||^2 */
  double *G = calloc((size_t)d * d, sizeof *G), *dX = calloc((size_t)d * NS, sizeof *dX);
  double *dF = calloc((size_t)kn, sizeof *dF), align = 0.0, tr = 0.0, want = 0.0;
  CHECK(ds_diag_cnn_agop(m, theta, X, NS, kk, G, G, &align) == DS_OK, "agop");
  for (int j = 0; j < d; j++) tr += G[(size_t)j * d + j];
  for (int r = 0; r < kn; r++) {
    memset(dF, 0, (size_t)kn * sizeof *dF);
    dF[r] = 1.0;
    ds_cnn_forward(m, theta, X, NS);
    ds_cnn_input_grad(m, theta, X, NS, dF, dX);
    for (size_t q = 0; q < (size_t)d * NS; q++) want += dX[q] * dX[q] / NS;
  }
  CHECK(ds_close_rel(tr, want, 1e-12) && ds_close_rel(align, 1.0, 1e-14),
        "config %d: Tr G %g vs %g, cos(G, G) %g", k, tr, want, align);
  free(G), free(dX), free(dF), free(out), free(F);
  free(K), free(Kb), free(J), free(theta), free(X);
  ds_cnn_free(m);
}

/* FILE: the 68-byte header of tests/test_cnn.c's dumps (cnn_torch.read_header;
 * 13th int: n), then theta, X (CHW columns), K (kn x kn), all kn eigenvalues
 * descending, each weight matrix's singular values, G (d x d). */
static int dump(const char *path, int k) {
  const ds_cnn_spec *sp = &specs[k];
  ds_cnn *m;
  double *theta, *X;
  setup(k, &m, &theta, &X);
  int kk = sp->dout, kn = kk * NS, d = ds_cnn_din(m);
  size_t P = ds_cnn_nparams(m), kn2 = (size_t)kn * kn;
  double *K = calloc(kn2, sizeof *K), *ev = calloc((size_t)kn, sizeof *ev), s[256];
  double *G = calloc((size_t)d * d, sizeof *G);
  int rc = ds_diag_cnn_ntk(&solo, m, theta, X, NS, kk, (size_t)1 << 30, kn, ev, NULL, K);
  rc = rc ? rc : ds_diag_cnn_agop(m, theta, X, NS, kk, NULL, G, NULL);
  FILE *f = fopen(path, "wb");
  if (rc || !f) return 1;
  int hdr[13] = {sp->c0, sp->h0,    sp->w0, sp->nconv, sp->channels, sp->ksize, sp->stride,
                 sp->same, sp->readout, sp->dout, sp->param, NS, NS};
  double hd[2] = {sp->beta, 0.0};
  fwrite(hdr, sizeof hdr, 1, f), fwrite(hd, sizeof hd, 1, f);
  fwrite(theta, 8, P, f), fwrite(X, 8, (size_t)d * NS, f), fwrite(K, 8, kn2, f);
  fwrite(ev, 8, (size_t)kn, f);
  for (int i = 0; i < ds_cnn_nweights(m); i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(m, i, &off, &rows, &cols);
    if (ds_diag_cnn_weight_sv(&solo, m, theta, i, s)) return 1;
    fwrite(s, 8, (size_t)(rows < cols ? rows : cols), f);
  }
  fwrite(G, 8, (size_t)d * d, f);
  int bad = fclose(f) != 0;
  free(K), free(ev), free(G), free(theta), free(X);
  ds_cnn_free(m);
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  if (ds_team_init(&solo, MPI_COMM_SELF) != DS_OK) {
    fprintf(stderr, "team: %s\n", ds_errmsg());
    rc = 1;
  } else if (argc == 2 && !strcmp(argv[1], "--count")) {
    printf("%d\n", NSPECS);
  } else if (argc == 4 && !strcmp(argv[1], "--dump")) {
    int k = atoi(argv[3]);
    rc = k < 0 || k >= NSPECS ? 2 : dump(argv[2], k);
  } else {
    for (int k = 0; k < NSPECS; k++) checks(k);
    rc = ds_check_report("test_cnn_diag");
  }
  ds_team_free(&solo);
  MPI_Finalize();
  return rc;
}
