/* test_spectra.c -- the spectra room against LAPACK on teams of size 1, 2
 * and 4: singular values (ds_svd_values vs dgesdd), symmetric eigenvalues
 * and vectors (ds_syev vs dsyevd), root <-> grid data movement, error paths,
 * and repeated team creation. Run on 1, 2 and 4 ranks (tests/spectra.cmake).
 * DYNSWEEP_SPECTRA_BENCH=1 adds timings (never a failure). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/spectra.h"
#include "dynsweep/util.h"

void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda,
             double *s, double *u, const int *ldu, double *vt, const int *ldvt,
             double *work, const int *lwork, int *iwork, int *info, size_t);
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda,
             double *w, double *work, const int *lwork, int *iwork, const int *liwork,
             int *info, size_t, size_t);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau,
             double *work, const int *lwork, int *info);
void dorgqr_(const int *m, const int *n, const int *k, double *a, const int *lda,
             const double *tau, double *work, const int *lwork, int *info);

static int world_rank, world_size;

/* ---- matrices ---------------------------------------------------------- */

static double *gaussian(int m, int n, uint64_t id) {
  ds_rng r;
  ds_rng_init(&r, 20240611, id, 0, DS_STREAM_TEST);
  double *A = malloc(sizeof(double) * (size_t)(m > 0 ? m : 1) * (size_t)(n > 0 ? n : 1));
  for (size_t i = 0; i < (size_t)m * (size_t)n; i++) A[i] = ds_rng_normal(&r);
  return A;
}

/* m x n (m >= n) with orthonormal columns: Q of a Gaussian matrix. */
static double *orthonormal(int m, int n, uint64_t id) {
  double *Q = gaussian(m, n, id), *tau = malloc(sizeof(double) * (size_t)n), wq;
  int lw = -1, info;
  dgeqrf_(&m, &n, Q, &m, tau, &wq, &lw, &info);
  lw = (int)wq + 1;
  double *work = malloc(sizeof(double) * (size_t)lw);
  dgeqrf_(&m, &n, Q, &m, tau, work, &lw, &info);
  dorgqr_(&m, &n, &n, Q, &m, tau, work, &lw, &info);
  free(work);
  free(tau);
  return Q;
}

/* C (m x n) = A (m x k) * diag(d or 1) * B^T (B: n x k). */
static double *product(int m, int n, int k, const double *A, const double *d, const double *B) {
  double *C = calloc((size_t)m * (size_t)n, sizeof(double));
  for (int j = 0; j < n; j++)
    for (int l = 0; l < k; l++) {
      double b = B[(size_t)l * n + j] * (d ? d[l] : 1.0);
      for (int i = 0; i < m; i++) C[(size_t)j * m + i] += A[(size_t)l * m + i] * b;
    }
  return C;
}

/* ---- references ---------------------------------------------------------- */

static void lapack_svd(int m, int n, const double *A, double *s) {
  int k = m < n ? m : n, lw = -1, info = 0, one = 1;
  double *a = malloc(sizeof(double) * (size_t)m * (size_t)n), wq, dummy;
  memcpy(a, A, sizeof(double) * (size_t)m * (size_t)n);
  int *iw = malloc(sizeof(int) * 8 * (size_t)(k > 0 ? k : 1));
  dgesdd_("N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, &wq, &lw, iw, &info, 1);
  lw = (int)wq + 1;
  double *work = malloc(sizeof(double) * (size_t)lw);
  dgesdd_("N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, work, &lw, iw, &info, 1);
  CHECK(info == 0, "dgesdd info %d", info);
  free(work);
  free(iw);
  free(a);
}

static void lapack_syev(int n, const double *A, double *w) {
  int lw = -1, liw = -1, info = 0, iq;
  double *a = malloc(sizeof(double) * (size_t)n * (size_t)n), wq;
  memcpy(a, A, sizeof(double) * (size_t)n * (size_t)n);
  dsyevd_("N", "L", &n, a, &n, w, &wq, &lw, &iq, &liw, &info, 1, 1);
  lw = (int)wq + 1;
  liw = iq + 1;
  double *work = malloc(sizeof(double) * (size_t)lw);
  int *iwork = malloc(sizeof(int) * (size_t)liw);
  dsyevd_("N", "L", &n, a, &n, w, work, &lw, iwork, &liw, &info, 1, 1);
  CHECK(info == 0, "dsyevd info %d", info);
  free(iwork);
  free(work);
  free(a);
}

/* Every member of the team holds bit-identical v[0..k). */
static int same_on_team(ds_team *t, const double *v, int k) {
  if (k <= 0) return 1;
  double *lo = malloc(sizeof(double) * (size_t)k), *hi = malloc(sizeof(double) * (size_t)k);
  MPI_Allreduce(v, lo, k, MPI_DOUBLE, MPI_MIN, t->comm);
  MPI_Allreduce(v, hi, k, MPI_DOUBLE, MPI_MAX, t->comm);
  int same = memcmp(lo, hi, sizeof(double) * (size_t)k) == 0;
  free(lo);
  free(hi);
  return same;
}

/* ---- singular values ------------------------------------------------------ */

/* ds_svd_values on A (given to the root only) vs dgesdd: error relative to
 * the largest value < 1e-12; elementwise relative too if `elementwise`. */
static void svd_case(ds_team *t, const char *name, int m, int n, const double *A,
                     int elementwise) {
  int k = m < n ? m : n;
  double *s = calloc((size_t)k + 1, sizeof(double)), *ref = calloc((size_t)k + 1, sizeof(double));
  int rc = ds_svd_values(t, m, n, t->rank == 0 ? A : NULL, m, s);
  CHECK(rc == DS_OK, "%s (%d x %d) team %d: %s", name, m, n, t->size, ds_errmsg());
  lapack_svd(m, n, A, ref);
  double err = 0, rel = 0;
  for (int i = 0; i < k; i++) {
    err = fmax(err, fabs(s[i] - ref[i]));
    if (!ds_close_rel(s[i], ref[i], 1e-11)) rel = fmax(rel, fabs(s[i] - ref[i]) / ref[i]);
  }
  CHECK(err <= 1e-12 * ref[0], "%s (%d x %d) team %d: max |s - s_lapack| = %g, s_max %g", name,
        m, n, t->size, err, ref[0]);
  if (elementwise)
    CHECK(rel == 0, "%s (%d x %d) team %d: elementwise relative error %g", name, m, n,
          t->size, rel);
  int desc = 1;
  for (int i = 1; i < k; i++) desc &= s[i] <= s[i - 1];
  CHECK(desc, "%s: values not descending", name);
  CHECK(same_on_team(t, s, k), "%s (%d x %d): values differ across team of %d", name, m, n,
        t->size);
  free(s);
  free(ref);
}

static void svd_shapes(ds_team *t) {
  static const int shapes[][2] = {{1, 1}, {7, 3}, {3, 7}, {64, 64}, {100, 37},
                                  {200, 300}, {300, 2}, {2, 129}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    int m = shapes[c][0], n = shapes[c][1];
    double *A = gaussian(m, n, 100 + c);
    /* Gaussian matrices far from square are well conditioned */
    int well = (m >= 2 * n || n >= 2 * m) || (m == 200 && n == 300);
    char name[32];
    snprintf(name, sizeof name, "gaussian #%zu", c);
    svd_case(t, name, m, n, A, well);
    free(A);
  }
}

/* singular values 1e2 .. 1e-8 (log-spaced), A = U diag(sigma) V^T */
static void svd_ill_conditioned(ds_team *t) {
  int m = 120, n = 80;
  double *U = orthonormal(m, n, 7), *V = orthonormal(n, n, 8), sig[80];
  for (int i = 0; i < n; i++) sig[i] = pow(10.0, 2.0 - 10.0 * i / (n - 1));
  double *A = product(m, n, n, U, sig, V);
  svd_case(t, "ill-conditioned", m, n, A, 0);
  double s[80];
  ds_svd_values(t, m, n, t->rank == 0 ? A : NULL, m, s);
  double err = 0;
  for (int i = 0; i < n; i++) err = fmax(err, fabs(s[i] - sig[i]));
  CHECK(err < 1e-12 * sig[0], "ill-conditioned: vs constructed sigma err %g", err);
  CHECK(fabs(s[0] - 100) < 1e-12 * 100 && s[n - 1] > 0, "ill-conditioned: ends %g %g", s[0],
        s[n - 1]);
  free(A);
  free(U);
  free(V);
}

static void svd_rank_deficient(ds_team *t) {
  int m = 60, n = 45, r = 7;
  double *B = gaussian(m, r, 11), *C = gaussian(n, r, 12);
  double *A = product(m, n, r, B, NULL, C), s[45];
  svd_case(t, "rank-deficient", m, n, A, 0);
  int rc = ds_svd_values(t, m, n, t->rank == 0 ? A : NULL, m, s);
  CHECK(rc == DS_OK, "rank-deficient: %s", ds_errmsg());
  double tail = 0;
  for (int i = r; i < n; i++) tail = fmax(tail, s[i]);
  CHECK(tail < 1e-13 * s[0], "rank-deficient: s[%d..] up to %g (s0 %g)", r, tail, s[0]);
  CHECK(s[r - 1] > 1e-3 * s[0], "rank-deficient: s[%d] = %g too small", r - 1, s[r - 1]);
  free(A);
  free(B);
  free(C);
}

static void svd_special(ds_team *t) {
  double a = -3.5, s = 0;
  CHECK(ds_svd_values(t, 1, 1, t->rank == 0 ? &a : NULL, 1, &s) == DS_OK && s == 3.5,
        "1x1: s = %g", s);
  /* empty: nothing to do, still OK everywhere */
  CHECK(ds_svd_values(t, 0, 5, NULL, 1, NULL) == DS_OK, "0 x 5: %s", ds_errmsg());
  /* the root's matrix is not modified (pdgesvd works on a copy) */
  double *A = gaussian(9, 4, 77), *A0 = gaussian(9, 4, 77), sv[4];
  ds_svd_values(t, 9, 4, t->rank == 0 ? A : NULL, 9, sv);
  CHECK(memcmp(A, A0, sizeof(double) * 36) == 0, "input modified");
  /* leading dimension larger than m: the 9x4 block at the top of a 12x4 array */
  double *Abig = calloc(48, sizeof(double)), sv2[4];
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 9; i++) Abig[j * 12 + i] = A[j * 9 + i];
  ds_svd_values(t, 9, 4, t->rank == 0 ? Abig : NULL, 12, sv2);
  CHECK(memcmp(sv, sv2, sizeof sv) == 0 || fabs(sv[3] - sv2[3]) < 1e-14 * sv[0], "lda > m");
  free(Abig);
  free(A);
  free(A0);
}

static void svd_errors(ds_team *t) {
  double *A = gaussian(6, 5, 5), s[5];
  A[13] = NAN;
  int rc = ds_svd_values(t, 6, 5, t->rank == 0 ? A : NULL, 6, s);
  CHECK(rc == DS_ENUM, "NaN input: rc %d (%s)", rc, ds_errmsg());
  A[13] = 1;
  rc = ds_svd_values(t, 6, 5, t->rank == 0 ? A : NULL, 3, s); /* lda < m on the root */
  CHECK(rc == DS_EINTERNAL, "lda < m: rc %d (%s)", rc, ds_errmsg());
  if (t->size > 1) { /* members disagreeing on the size are caught, not hung */
    int m = t->rank == 0 ? 6 : 5;
    rc = ds_svd_values(t, m, 5, t->rank == 0 ? A : NULL, 6, s);
    CHECK(rc == DS_EINTERNAL, "size mismatch: rc %d (%s)", rc, ds_errmsg());
  }
  ds_clear_error();
  free(A);
}

/* ---- data movement and symmetric eigenproblems ---------------------------- */

static void dist_roundtrip(ds_team *t, int m, int n) {
  double *A = gaussian(m, n, 900 + m), *B = calloc((size_t)m * n + 1, sizeof(double));
  ds_dmat D;
  int rc = ds_team_scatter(t, m, n, t->rank == 0 ? A : NULL, m, &D);
  CHECK(rc == DS_OK, "scatter %d x %d: %s", m, n, ds_errmsg());
  if (rc != DS_OK) return;
  long local = (long)D.mloc * D.nloc, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_LONG, MPI_SUM, t->comm);
  CHECK(total == (long)m * n, "scatter %d x %d: local parts sum to %ld", m, n, total);
  if (m >= t->nprow && n >= t->npcol)
    CHECK(local > 0, "scatter %d x %d: rank %d of %d got no work (nb %d)", m, n, t->rank,
          t->size, D.nb);
  for (long i = 0; i < local; i++) D.a[i] *= 2; /* a distributed update */
  rc = ds_team_gather(t, &D, t->rank == 0 ? B : NULL, m);
  CHECK(rc == DS_OK, "gather: %s", ds_errmsg());
  if (t->rank == 0) {
    int ok = 1;
    for (size_t i = 0; i < (size_t)m * n; i++) ok &= B[i] == 2 * A[i];
    CHECK(ok, "scatter/gather %d x %d round trip", m, n);
  }
  ds_dmat_free(&D);
  free(A);
  free(B);
}

static void syev_case(ds_team *t, int n) {
  double *G = gaussian(n, n, 500 + n), *A = calloc((size_t)n * n, sizeof(double));
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) A[(size_t)j * n + i] = G[(size_t)j * n + i] + G[(size_t)i * n + j];
  double *w = calloc(n, sizeof(double)), *ref = calloc(n, sizeof(double));
  double *Z = t->rank == 0 ? calloc((size_t)n * n, sizeof(double)) : NULL;
  int rc = ds_syev(t, n, t->rank == 0 ? A : NULL, n, w, Z, n);
  CHECK(rc == DS_OK, "syev %d team %d: %s", n, t->size, ds_errmsg());
  lapack_syev(n, A, ref);
  double scale = fmax(fabs(ref[0]), fabs(ref[n - 1])), err = 0;
  for (int i = 0; i < n; i++) err = fmax(err, fabs(w[i] - ref[i]));
  CHECK(err <= 1e-12 * scale, "syev %d team %d: eigenvalue err %g (scale %g)", n, t->size, err,
        scale);
  CHECK(same_on_team(t, w, n), "syev %d: eigenvalues differ across team", n);
  if (t->rank == 0) { /* residual ||A z - w z|| and orthonormality */
    double res = 0, orth = 0;
    for (int k = 0; k < n; k++) {
      const double *z = Z + (size_t)k * n;
      for (int i = 0; i < n; i++) {
        double az = 0;
        for (int j = 0; j < n; j++) az += A[(size_t)j * n + i] * z[j];
        res = fmax(res, fabs(az - w[k] * z[i]));
      }
      for (int l = 0; l <= k; l++) {
        double d = 0;
        for (int i = 0; i < n; i++) d += z[i] * Z[(size_t)l * n + i];
        orth = fmax(orth, fabs(d - (l == k)));
      }
    }
    CHECK(res < 1e-11 * scale && orth < 1e-12, "syev %d: residual %g orthogonality %g", n, res,
          orth);
  }
  double *w2 = calloc(n, sizeof(double));
  rc = ds_syev_values(t, n, t->rank == 0 ? A : NULL, n, w2);
  CHECK(rc == DS_OK && memcmp(w, w2, sizeof(double) * n) == 0, "syev_values %d", n);
  free(w2);
  free(Z);
  free(w);
  free(ref);
  free(A);
  free(G);
}

/* ---- one team ------------------------------------------------------------- */

static void team_suite(MPI_Comm comm, const char *what) {
  ds_team t;
  int rc = ds_team_init(&t, comm);
  CHECK(rc == DS_OK, "%s: ds_team_init: %s", what, ds_errmsg());
  if (rc != DS_OK) return;
  int size;
  MPI_Comm_size(comm, &size);
  CHECK(t.size == size && t.nprow * t.npcol == size && t.nprow <= t.npcol,
        "%s: grid %d x %d for %d", what, t.nprow, t.npcol, size);
  CHECK(size != 4 || (t.nprow == 2 && t.npcol == 2), "%s: 4 ranks not 2 x 2", what);
  CHECK((t.root_ctxt >= 0) == (t.rank == 0), "%s: root grid on rank %d", what, t.rank);
  CHECK(t.nb == 64, "%s: default nb %d", what, t.nb);
  CHECK(ds_team_block(&t, 1000, 1000) == 64 && ds_team_block(&t, 1, 1) == 1, "%s: block", what);

  svd_shapes(&t);
  svd_ill_conditioned(&t);
  svd_rank_deficient(&t);
  svd_special(&t);
  svd_errors(&t);
  dist_roundtrip(&t, 1, 1);
  dist_roundtrip(&t, 37, 53);
  dist_roundtrip(&t, 200, 3);
  syev_case(&t, 1);
  syev_case(&t, 2);
  syev_case(&t, 64);
  syev_case(&t, 130);

  t.nb = 5; /* small blocks: many blocks per rank, wrap-around everywhere */
  svd_shapes(&t);
  svd_ill_conditioned(&t);
  dist_roundtrip(&t, 37, 53);
  syev_case(&t, 64);
  ds_team_free(&t);
  CHECK(t.comm == MPI_COMM_NULL && t.ctxt == -1 && t.root_ctxt == -1, "%s: freed", what);
}

/* ---- benchmark (information only) ---------------------------------------- */

static void bench(void) {
  ds_team t;
  if (ds_team_init(&t, MPI_COMM_WORLD) != DS_OK) return;
  if (world_rank == 0) printf("bench: OpenBLAS kernel %s, best of 3\n", ds_blas_kernel());
  static const int sizes[] = {256, 1024};
  for (int c = 0; c < 2; c++) {
    int n = sizes[c];
    double *A = gaussian(n, n, 4000 + n), *s = calloc(n, sizeof(double));
    double t_scal = 1e30, t_lap = 1e30;
    for (int rep = 0; rep < 3; rep++) {
      MPI_Barrier(t.comm);
      double t0 = ds_now();
      ds_svd_values(&t, n, n, A, n, s);
      t_scal = fmin(t_scal, ds_now() - t0);
      if (world_rank == 0) {
        t0 = ds_now();
        lapack_svd(n, n, A, s);
        t_lap = fmin(t_lap, ds_now() - t0);
      }
    }
    if (world_rank == 0)
      printf("bench: n = %4d  ds_svd_values (%d x %d grid, nb %d) %.4f s   dgesdd %.4f s\n", n,
             t.nprow, t.npcol, ds_team_block(&t, n, n), t_scal, t_lap);
    free(A);
    free(s);
  }
  ds_team_free(&t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);

  /* teams of size 1 (every rank alone), of size 2 (pairs), and the world */
  MPI_Comm solo, pairs;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank, 0, &solo);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank / 2, world_rank, &pairs);
  team_suite(solo, "solo");
  if (world_size >= 2) team_suite(pairs, "pairs");
  if (world_size > 2) team_suite(MPI_COMM_WORLD, "world");

  /* teams come and go many times in one process (BLACS handles are reused) */
  for (int i = 0; i < 20; i++) {
    ds_team t;
    int rc = ds_team_init(&t, i % 2 ? solo : MPI_COMM_WORLD);
    double a[4] = {3, 0, 0, 4}, s[2] = {0, 0};
    if (rc == DS_OK) rc = ds_svd_values(&t, 2, 2, a, 2, s);
    CHECK(rc == DS_OK && s[0] == 4 && s[1] == 3, "init/free cycle %d: %s", i, ds_errmsg());
    ds_team_free(&t);
  }
  /* two live teams at once over the same ranks */
  {
    ds_team a, b;
    CHECK(ds_team_init(&a, MPI_COMM_WORLD) == DS_OK && ds_team_init(&b, solo) == DS_OK,
          "two teams: %s", ds_errmsg());
    double m[2] = {1, 2}, sa = 0, sb = 0;
    ds_svd_values(&a, 2, 1, m, 2, &sa);
    ds_svd_values(&b, 1, 2, m, 1, &sb);
    CHECK(fabs(sa - sqrt(5.0)) < 1e-15 && fabs(sb - sqrt(5.0)) < 1e-15, "two teams: %g %g", sa,
          sb);
    ds_team_free(&b);
    ds_team_free(&a);
  }

  const char *b = getenv("DYNSWEEP_SPECTRA_BENCH");
  if (b && *b && *b != '0') bench();

  MPI_Comm_free(&solo);
  MPI_Comm_free(&pairs);
  char name[64];
  snprintf(name, sizeof name, "test_spectra[rank %d/%d]", world_rank, world_size);
  int code = ds_check_report(name);
  int any = 0;
  MPI_Allreduce(&code, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
