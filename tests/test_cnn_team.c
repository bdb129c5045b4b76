/* test_cnn_team.c -- the CNN NTK and AGOP on a team (issue 26, "Big CNNs run on
 * teams"; src/diag/cnn.c ds_diag_cnn_ntk_team), run on 3 ranks: each member
 * forms its samples' rows of J, MPI_Alltoallv makes them parameter-column
 * slices, the slices' DSYRKs are summed. On the team of all 3 ranks and on a
 * team of 2 (ranks 0, 1) with 3 of the CNN configurations, n = 5 samples
 * (blocks 1, 2, 2) and n = 2 (a member without samples):
 *   - K equals the one-rank K (ds_diag_cnn_ntk_matrix) to 1e-13 relative;
 *   - every member holds bitwise the same K;
 *   - a budget too small for the split (the blocked row path on every
 *     member) gives the one-rank blocked K bit for bit;
 *   - ds_diag_cnn_ntk's top eigenvalues on the team equal the one-rank
 *     ones to 1e-12;
 *   - the AGOP on the team (ds_diag_cnn_agop_team: samples split, shares
 *     summed) equals the one-rank AGOP to 1e-13, alignment included, and
 *     every member holds bitwise the same G;
 *   - the activation spectra (issue 26, acts() below) equal one rank's. */
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
    {1, 6, 6, 3, 3, 3, 1, 1, DS_CNN_FLATTEN, 1, DS_PARAM_NTK, 1.0},
    {2, 9, 8, 2, 4, 3, 2, 0, DS_CNN_GAP, 2, DS_PARAM_STANDARD, 1.0},
    {3, 5, 5, 2, 2, 2, 1, 1, DS_CNN_FLATTEN, 3, DS_PARAM_NTK, 0.1},
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))
#define NMAX 5

static double maxabs(const double *a, size_t n) {
  double m = 0.0;
  for (size_t i = 0; i < n; i++) m = fabs(a[i]) > m ? fabs(a[i]) : m;
  return m;
}

/* Config c on team t (name for messages) with n samples. */
static void one(ds_team *t, ds_team *solo, const char *name, int c, int n) {
  const ds_cnn_spec *sp = &specs[c];
  char err[256];
  ds_cnn *m = ds_cnn_create(sp, NMAX, err, sizeof err);
  if (!m) {
    fprintf(stderr, "config %d: %s\n", c, err);
    exit(1);
  }
  size_t P = ds_cnn_nparams(m), d = (size_t)ds_cnn_din(m), kn = (size_t)sp->dout * n;
  double *theta = malloc(P * sizeof *theta), *X = malloc(d * NMAX * sizeof *X);
  double *K = calloc(kn * kn, sizeof *K), *K1 = calloc(kn * kn, sizeof *K1);
  double *Kr = calloc(kn * kn, sizeof *Kr), *Kb = calloc(kn * kn, sizeof *Kb);
  ds_rng r; /* the same net and data on every rank */
  ds_rng_init(&r, 9, (uint64_t)c, 0, 0);
  ds_cnn_init(m, &r, theta);
  for (size_t q = 0; q < d * NMAX; q++) X[q] = ds_rng_normal(&r);
  CHECK(ds_diag_cnn_ntk_matrix(m, theta, X, n, sp->dout, (size_t)1 << 30, K1) == DS_OK, "K1");
  CHECK(ds_diag_cnn_ntk_team(t, m, theta, X, n, sp->dout, (size_t)1 << 30, K) == DS_OK,
        "%s: team K: %s", name, ds_errmsg());
  double e = 0;
  for (size_t q = 0; q < kn * kn; q++) e = fmax(e, fabs(K[q] - K1[q]));
  CHECK(e <= 1e-13 * maxabs(K1, kn * kn), "%s config %d n %d: team K differs from one rank's by "
        "%g (max %g)", name, c, n, e, maxabs(K1, kn * kn));
  memcpy(Kr, K, kn * kn * sizeof *K);
  MPI_Bcast(Kr, (int)(kn * kn), MPI_DOUBLE, 0, t->comm);
  CHECK(memcmp(Kr, K, kn * kn * sizeof *K) == 0, "%s config %d: members hold different K", name, c);
  /* a budget of 2 rows of J: no split, every member blocks as one rank does */
  size_t small = 2 * P * sizeof(double);
  CHECK(ds_diag_cnn_ntk_team(t, m, theta, X, n, sp->dout, small, K) == DS_OK, "blocked");
  CHECK(ds_diag_cnn_ntk_matrix(m, theta, X, n, sp->dout, small, Kb) == DS_OK, "Kb");
  CHECK(memcmp(Kb, K, kn * kn * sizeof *K) == 0, "%s config %d n %d: small budget: not the "
        "blocked K", name, c, n);
  double ev[2] = {0}, ev1[2] = {0};
  int topk = kn < 2 ? (int)kn : 2;
  CHECK(ds_diag_cnn_ntk(t, m, theta, X, n, sp->dout, (size_t)1 << 30, topk, ev, NULL, NULL) == DS_OK,
        "team eig: %s", ds_errmsg());
  CHECK(ds_diag_cnn_ntk(solo, m, theta, X, n, sp->dout, (size_t)1 << 30, topk, ev1, NULL, NULL) == DS_OK,
        "solo eig");
  for (int i = 0; i < topk; i++)
    CHECK(ds_close_rel(ev[i], ev1[i], 1e-12), "%s config %d: eigenvalue %d %.17g vs %.17g", name,
          c, i, ev[i], ev1[i]);
  /* the AGOP: samples split, shares summed */
  double *G = calloc(d * d, sizeof *G), *G1 = calloc(d * d, sizeof *G1), *Gr = calloc(d * d, sizeof *Gr);
  double al = 0, al1 = 0;
  for (size_t q = 0; q < d * d; q++) Gr[q] = q % (d + 1) == 0 ? 1.0 : 0.0; /* a reference: I */
  CHECK(ds_diag_cnn_agop(m, theta, X, n, sp->dout, Gr, G1, &al1) == DS_OK, "agop solo");
  CHECK(ds_diag_cnn_agop_team(t, m, theta, X, n, sp->dout, Gr, G, &al) == DS_OK, "agop team");
  e = 0;
  for (size_t q = 0; q < d * d; q++) e = fmax(e, fabs(G[q] - G1[q]));
  CHECK(e <= 1e-13 * maxabs(G1, d * d) && ds_close_rel(al, al1, 1e-13),
        "%s config %d n %d: team AGOP differs by %g (max %g), alignment %.17g vs %.17g", name, c, n,
        e, maxabs(G1, d * d), al, al1);
  memcpy(Gr, G, d * d * sizeof *G);
  MPI_Bcast(Gr, (int)(d * d), MPI_DOUBLE, 0, t->comm);
  CHECK(memcmp(Gr, G, d * d * sizeof *G) == 0, "%s config %d: members hold different G", name, c);
  free(G), free(G1), free(Gr);
  free(theta), free(X), free(K), free(K1), free(Kr), free(Kb);
  ds_cnn_free(m);
}

/* Activation spectra (ds_diag_cnn_activations, src/diag/cnnact.c): each
 * member forwards its samples, the rows are gathered on the root; = the
 * one-rank values (no team) to 1e-13 relative to s_1 (ratios relative), NaN
 * pattern equal, every member bitwise the same. Nets with resblocks (wrn-10-1:
 * two ReLUs per block), a DAG block (its pre-activations strided in the
 * block's buffers) and hidden dense layers with dropout (off). */
static void acts(ds_team *t, const char *name, int n) {
  static const struct {
    int net, width, depth, c0, h;
  } nets[] = {{DS_NET_WRN, 1, 10, 1, 8}, {DS_NET_DAG, 3, 3, 2, 3}, {DS_NET_TF_MNIST, 2, 2, 1, 8}};
  const int k = 4;
  for (size_t c = 0; c < sizeof nets / sizeof nets[0]; c++) {
    ds_cnn_net nt = {.net = nets[c].net, .width = nets[c].width, .depth = nets[c].depth,
                     .kernel = 3, .stride = 1, .same = 1, .pool_every = 1, .pool_size = 2,
                     .dropout = nets[c].net == DS_NET_TF_MNIST ? 0.5 : 0.0, .dout = 2,
                     .dag_drop = 0.3};
    ds_cnn_layer L[DS_CNN_MAX_LAYERS];
    char err[256];
    int nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
    ds_cnn *m = nl < 0 ? NULL : ds_cnn_create_layers(L, nl, nets[c].c0, nets[c].h, nets[c].h, 2,
                                                     DS_PARAM_NTK, 0.5, NMAX, err, sizeof err);
    if (!m) {
      fprintf(stderr, "acts net %zu: %s\n", c, err);
      exit(1);
    }
    size_t P = ds_cnn_nparams(m), d = (size_t)ds_cnn_din(m), R = (size_t)ds_cnn_nrelus(m);
    double *theta = malloc(P * sizeof *theta), *X = malloc(d * NMAX * sizeof *X);
    double *o = calloc(R * (k + 1), sizeof *o), *o1 = calloc(R * (k + 1), sizeof *o1);
    double *orr = calloc(R * (k + 1), sizeof *orr);
    ds_rng r;
    ds_rng_init(&r, 21, (uint64_t)c, 0, 0);
    ds_cnn_init(m, &r, theta);
    for (size_t q = 0; q < d * NMAX; q++) X[q] = ds_rng_normal(&r);
    CHECK(ds_diag_cnn_activations(NULL, m, theta, X, n, k, o1) == DS_OK, "acts one rank: %s",
          ds_errmsg());
    CHECK(ds_diag_cnn_activations(t, m, theta, X, n, k, o) == DS_OK, "%s acts: %s", name,
          ds_errmsg());
    double e = 0;
    int nan_ok = 1;
    for (size_t j = 0; j < R; j++) {
      const double *a = o + j * (k + 1), *b = o1 + j * (k + 1);
      for (int i = 0; i <= k; i++) {
        nan_ok &= isnan(a[i]) == isnan(b[i]);
        if (!isnan(b[i])) e = fmax(e, fabs(a[i] - b[i]) / fabs(i < k ? b[0] : b[k]));
      }
    }
    CHECK(R > 1 && nan_ok && e <= 1e-13, "%s net %zu n %d: %zu ReLUs, activations differ from one "
          "rank's by %g relative (NaN pattern %s)", name, c, n, R, e, nan_ok ? "equal" : "differs");
    memcpy(orr, o, R * (k + 1) * sizeof *o);
    MPI_Bcast(orr, (int)(R * (k + 1)), MPI_DOUBLE, 0, t->comm);
    CHECK(memcmp(orr, o, R * (k + 1) * sizeof *o) == 0, "%s net %zu: members differ", name, c);
    free(theta), free(X), free(o), free(o1), free(orr);
    ds_cnn_free(m);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ds_team all, solo, two;
  MPI_Comm c2;
  MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &c2);
  if (ds_team_init(&all, MPI_COMM_WORLD) || ds_team_init(&solo, MPI_COMM_SELF) ||
      (c2 != MPI_COMM_NULL && ds_team_init(&two, c2))) {
    fprintf(stderr, "team: %s\n", ds_errmsg());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int c = 0; c < NSPECS; c++)
    for (int n = NMAX; n >= 2; n -= 3) {
      one(&all, &solo, "team of 3", c, n);
      if (c2 != MPI_COMM_NULL) one(&two, &solo, "team of 2", c, n);
    }
  for (int n = NMAX; n >= 2; n -= 3) {
    acts(&all, "team of 3", n);
    if (c2 != MPI_COMM_NULL) acts(&two, "team of 2", n);
  }
  int rc = ds_check_report("test_cnn_team");
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (c2 != MPI_COMM_NULL) ds_team_free(&two), MPI_Comm_free(&c2);
  ds_team_free(&solo);
  ds_team_free(&all);
  MPI_Finalize();
  return worst;
}
