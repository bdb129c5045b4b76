/* test_data.c -- the teacher generator (shape, rank, noise-free labels,
 * reproducibility) and the RNG it draws from (Philox4x32-10 known answers,
 * normal moments). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/data.h"


static void test_philox_known_answers(void) {
  /* Random123 known-answer vectors for Philox4x32-10 */
  const uint32_t k1[2] = {0xa4093822u, 0x299f31d0u};
  const uint32_t c1[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
  const uint32_t e1[4] = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
  const uint32_t k0[2] = {0, 0}, c0[4] = {0, 0, 0, 0};
  const uint32_t e0[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
  uint32_t out[4];
  ds_philox4x32(k1, c1, out);
  CHECK(memcmp(out, e1, sizeof out) == 0, "pi key: got %08x %08x %08x %08x", out[0], out[1],
        out[2], out[3]);
  ds_philox4x32(k0, c0, out);
  CHECK(memcmp(out, e0, sizeof out) == 0, "zero key: got %08x %08x %08x %08x", out[0], out[1],
        out[2], out[3]);
}

static void test_normal_moments(void) {
  ds_rng r;
  ds_rng_init(&r, 2024, 5, 1, DS_STREAM_DATA);
  const int N = 1000000;
  double s1 = 0, s2 = 0;
  for (int i = 0; i < N; i++) {
    double x = ds_rng_normal(&r);
    s1 += x;
    s2 += x * x;
  }
  double mean = s1 / N, var = s2 / N - mean * mean;
  /* standard errors: mean 1/sqrt(N), variance sqrt(2/N) */
  CHECK(fabs(mean) < 5.0 / sqrt(N), "mean %g", mean);
  CHECK(fabs(var - 1.0) < 5.0 * sqrt(2.0 / N), "variance %g", var);
}

static void test_teacher_rank(int d_in, int d_out, int rank) {
  ds_rng r;
  ds_rng_init(&r, 11, (uint64_t)rank, 0, DS_STREAM_DATA);
  double *T = malloc((size_t)d_in * d_out * sizeof *T);
  CHECK(ds_data_teacher_matrix(d_in, d_out, rank, &r, T) == DS_OK, "teacher matrix");
  int k = d_in < d_out ? d_in : d_out;
  double *s = malloc((size_t)k * sizeof *s);
  CHECK(ds_ref_singular_values(T, d_out, d_in, s) == 0, "dgesdd");
  int ok = 1;
  for (int i = 0; i < k; i++) ok &= i < rank ? fabs(s[i] - 1.0) < 1e-12 : fabs(s[i]) < 1e-12;
  CHECK(ok, "%dx%d rank %d: singular values s[0] %.17g s[rank-1] %.3g s[rank] %.3g", d_out, d_in,
        rank, s[0], rank ? s[rank - 1] : 0.0, rank < k ? s[rank] : 0.0);
  free(s);
  free(T);
}

static void test_teacher(void) {
  const int d_in = 20, d_out = 7, rank = 3, ntr = 50, nte = 30;
  ds_rng r, r0;
  ds_rng_init(&r, 99, 4, 2, DS_STREAM_DATA);
  r0 = r;
  ds_dataset tr, te;
  CHECK(ds_data_teacher(d_in, d_out, rank, 0.0, ntr, nte, &r, &tr, &te) == DS_OK, "teacher");
  CHECK(tr.n == ntr && tr.d_in == d_in && tr.d_out == d_out, "train shape");
  CHECK(te.n == nte && te.d_in == d_in && te.d_out == d_out, "test shape");
  /* noise 0: Y = T X exactly, with T drawn first from the same stream */
  double *T = malloc((size_t)d_in * d_out * sizeof *T);
  ds_data_teacher_matrix(d_in, d_out, rank, &r0, T);
  double *Y = malloc((size_t)d_out * ntr * sizeof *Y);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d_out, ntr, d_in, 1.0, T, d_out, tr.X,
              d_in, 0.0, Y, d_out);
  CHECK(memcmp(Y, tr.Y, (size_t)d_out * ntr * sizeof *Y) == 0, "noise 0: Y == T X bitwise");
  /* the draw order: X follows the teacher, then the train noise */
  int xok = 1;
  for (int k = 0; k < d_in * ntr; k++) xok &= tr.X[k] == ds_rng_normal(&r0);
  CHECK(xok, "train X drawn right after the teacher");
  for (int k = 0; k < d_out * ntr; k++) ds_rng_normal(&r0); /* train noise */
  xok = 1;
  for (int k = 0; k < d_in * nte; k++) xok &= te.X[k] == ds_rng_normal(&r0);
  CHECK(xok, "test X drawn after the train noise");
  /* inputs look like N(0, 1) */
  double s2 = 0;
  for (int k = 0; k < d_in * ntr; k++) s2 += tr.X[k] * tr.X[k];
  CHECK(fabs(s2 / (d_in * ntr) - 1.0) < 0.2, "X variance %g", s2 / (d_in * ntr));

  /* same key -> identical data; different key -> different data */
  ds_dataset tr2, te2, tr3, te3;
  ds_rng_init(&r, 99, 4, 2, DS_STREAM_DATA);
  ds_data_teacher(d_in, d_out, rank, 0.0, ntr, nte, &r, &tr2, &te2);
  CHECK(memcmp(tr.X, tr2.X, (size_t)d_in * ntr * 8) == 0 &&
            memcmp(tr.Y, tr2.Y, (size_t)d_out * ntr * 8) == 0 &&
            memcmp(te.Y, te2.Y, (size_t)d_out * nte * 8) == 0,
        "same key, same data");
  ds_rng_init(&r, 99, 4, 3, DS_STREAM_DATA);
  ds_data_teacher(d_in, d_out, rank, 0.0, ntr, nte, &r, &tr3, &te3);
  CHECK(memcmp(tr.X, tr3.X, (size_t)d_in * ntr * 8) != 0 &&
            memcmp(tr.Y, tr3.Y, (size_t)d_out * ntr * 8) != 0,
        "different key, different data");
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);
  ds_dataset_free(&tr3);
  ds_dataset_free(&te3);

  /* noise: same X (noise is drawn either way), residual Y - T X ~ noise N(0,1) */
  ds_rng_init(&r, 99, 4, 2, DS_STREAM_DATA);
  ds_data_teacher(d_in, d_out, rank, 0.5, ntr, nte, &r, &tr2, &te2);
  CHECK(memcmp(tr.X, tr2.X, (size_t)d_in * ntr * 8) == 0, "X independent of noise level");
  double e2 = 0;
  for (int k = 0; k < d_out * ntr; k++) e2 += (tr2.Y[k] - tr.Y[k]) * (tr2.Y[k] - tr.Y[k]);
  e2 /= d_out * ntr;
  CHECK(fabs(e2 / 0.25 - 1.0) < 0.3, "noise variance %g want 0.25", e2);
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);

  /* bad input is an error value */
  CHECK(ds_data_teacher(5, 4, 5, 0.0, 10, 0, &r, &tr2, NULL) == DS_EINPUT, "rank > min dim");
  CHECK(ds_data_teacher(5, 4, 2, -1.0, 10, 0, &r, &tr2, NULL) == DS_EINPUT, "negative noise");
  CHECK(ds_data_teacher(5, 4, 2, 0.0, 10, 0, &r, &tr2, NULL) == DS_OK && tr2.n == 10,
        "no test set");
  ds_dataset_free(&tr2);

  free(Y);
  free(T);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

/* iid_gaussian (issue 13, the trainability study): X and Y N(0, 1), Y
 * independent of X (its least-squares fit on X explains ~d_in/n of it). */
static void test_iid_gaussian(void) {
  ds_data_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.kind = DS_DATA_IID_GAUSSIAN;
  sp.n_train = 4000, sp.n_test = 100, sp.d_in = 4, sp.d_out = 2;
  ds_rng r;
  ds_rng_init(&r, 7, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te;
  CHECK(ds_data_build(&sp, &r, &tr, &te) == DS_OK && tr.n == 4000 && te.n == 100 && tr.d_in == 4 &&
            tr.d_out == 2, "iid_gaussian builds 4000 x 4 -> 2 and a test set of 100");
  double sy = 0, syy = 0, sxy = 0;
  for (int i = 0; i < tr.n; i++) {
    double y = tr.Y[(size_t)i * 2], x = tr.X[(size_t)i * 4];
    sy += y, syy += y * y, sxy += x * y;
  }
  double n = tr.n, var = syy / n - (sy / n) * (sy / n), cor = sxy / n;
  CHECK(fabs(sy / n) < 5 / sqrt(n) && fabs(var - 1) < 5 * sqrt(2 / n), "y ~ N(0,1): mean %g var %g",
        sy / n, var);
  CHECK(fabs(cor) < 5 / sqrt(n), "y independent of x_1: E[x y] = %g", cor);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

int main(void) {
  test_iid_gaussian();
  test_philox_known_answers();
  test_normal_moments();
  test_teacher_rank(20, 7, 3);
  test_teacher_rank(7, 20, 7);
  test_teacher_rank(16, 16, 16);
  test_teacher_rank(64, 48, 10);
  test_teacher_rank(5, 6, 0);
  test_teacher();
  return ds_check_report("test_data");
}
