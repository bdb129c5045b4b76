/* test_generators.c -- the synthetic data kinds of ds_data_build (exact
 * formulas recomputed from the stored inputs and the documented draw order),
 * the input transforms on them, ds_data_probe for synthetic kinds, and the
 * minibatch sampler. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/data.h"


static ds_data_spec base_spec(ds_data_kind kind) {
  ds_data_spec s;
  memset(&s, 0, sizeof s);
  s.kind = kind;
  s.n_train = 64;
  s.n_test = 16;
  s.d_in = 8;
  s.d_out = 3;
  s.rank = 2;
  s.target_scale = 1.0;
  s.pixel_scale = 1.0;
  s.sphere_scale = 1.0;
  return s;
}

/* max |(1/n) X X^T - I| */
static double gram_error(const ds_dataset *d) {
  int p = d->d_in;
  double *G = calloc((size_t)p * p, sizeof *G), err = 0.0;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, p, p, d->n, 1.0 / d->n, d->X, p, d->X, p,
              0.0, G, p);
  for (int i = 0; i < p; i++)
    for (int j = 0; j < p; j++) err = fmax(err, fabs(G[(size_t)j * p + i] - (i == j)));
  free(G);
  return err;
}

static void test_whitened(void) {
  ds_data_spec s = base_spec(DS_DATA_WHITENED);
  s.d_in = 12;
  s.d_out = 5;
  s.rank = 3;
  s.n_train = 40;
  s.target_scale = 2.5;
  ds_rng r, r0;
  ds_rng_init(&r, 7, 1, 0, DS_STREAM_DATA);
  r0 = r;
  ds_dataset tr, te;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "whitened build: %s", ds_errmsg());
  CHECK(tr.n == 40 && tr.d_in == 12 && tr.d_out == 5 && te.n == 16, "whitened shapes");
  double ge = gram_error(&tr);
  CHECK(ge < 1e-12, "(1/n) X X^T = I: max error %.3g", ge);
  /* Phi = target_scale * T, T drawn first from the same stream */
  double *Phi = malloc(5 * 12 * sizeof *Phi), *Y = malloc((size_t)5 * 40 * sizeof *Y);
  ds_data_teacher_matrix(12, 5, 3, &r0, Phi);
  cblas_dscal(60, 2.5, Phi, 1);
  double sv[5];
  ds_ref_singular_values(Phi, 5, 12, sv);
  CHECK(fabs(sv[0] - 2.5) < 1e-12 && fabs(sv[2] - 2.5) < 1e-12 && fabs(sv[3]) < 1e-12,
        "Phi rank 3, singular values 2.5: %g %g %g", sv[0], sv[2], sv[3]);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 5, 40, 12, 1.0, Phi, 5, tr.X, 12, 0.0, Y, 5);
  double e = 0;
  for (int k = 0; k < 5 * 40; k++) e = fmax(e, fabs(Y[k] - tr.Y[k]));
  CHECK(e == 0.0, "Y = Phi X exactly (max diff %.3g)", e);
  /* (1/n) Y X^T = Phi (the seed 001 Lambda_yx) */
  double *L = malloc(5 * 12 * sizeof *L);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, 5, 12, 40, 1.0 / 40, tr.Y, 5, tr.X, 12, 0.0, L,
              5);
  e = 0;
  for (int k = 0; k < 60; k++) e = fmax(e, fabs(L[k] - Phi[k]));
  CHECK(e < 1e-12, "(1/n) Y X^T = Phi (max diff %.3g)", e);
  /* test set: Gaussian inputs, same Phi */
  double *Yt = malloc((size_t)5 * 16 * sizeof *Yt);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 5, 16, 12, 1.0, Phi, 5, te.X, 12, 0.0, Yt, 5);
  e = 0;
  for (int k = 0; k < 5 * 16; k++) e = fmax(e, fabs(Yt[k] - te.Y[k]));
  CHECK(e == 0.0, "test Y = Phi X (max diff %.3g)", e);
  CHECK(gram_error(&te) > 1e-3, "test inputs are not whitened");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* n < d is refused */
  s.n_train = 10;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_EINPUT, "whitened n < d");
  free(Phi);
  free(Y);
  free(L);
  free(Yt);
}

static void test_gaussian_spectrum(void) {
  ds_data_spec s = base_spec(DS_DATA_GAUSSIAN_SPECTRUM);
  s.d_in = 5;
  s.d_out = 2;
  s.rank = 2;
  s.n_train = 20000;
  s.n_test = 0;
  s.nspectrum = 3;
  s.spectrum[0] = 4.0;
  s.spectrum[1] = 1.0;
  s.spectrum[2] = 0.25;
  const double want[5] = {4, 1, 0.25, 0.25, 0.25};
  ds_rng r, r0;
  ds_rng_init(&r, 3, 0, 0, DS_STREAM_DATA);
  r0 = r;
  ds_dataset tr, te;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "spectrum build: %s", ds_errmsg());
  CHECK(te.n == 0, "no test set");
  int n = tr.n, ok = 1, okoff = 1;
  for (int a = 0; a < 5; a++)
    for (int b = 0; b < 5; b++) {
      double c = 0;
      for (int i = 0; i < n; i++) c += tr.X[(size_t)i * 5 + a] * tr.X[(size_t)i * 5 + b];
      c /= n;
      /* sd of the sample covariance: sqrt((1 + [a==b]) l_a l_b / n); 5 sigma */
      double tol = 5.0 * sqrt((1.0 + (a == b)) * want[a] * want[b] / n);
      if (a == b) ok &= fabs(c - want[a]) < tol;
      else okoff &= fabs(c) < tol;
      if (a == b && fabs(c - want[a]) >= tol) fprintf(stderr, "  var[%d] = %g want %g\n", a, c, want[a]);
    }
  CHECK(ok, "diagonal covariance matches the padded spectrum");
  CHECK(okoff, "off-diagonal covariance near 0");
  double *T = malloc(2 * 5 * sizeof *T), *Y = malloc((size_t)2 * n * sizeof *Y);
  ds_data_teacher_matrix(5, 2, 2, &r0, T);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, n, 5, 1.0, T, 2, tr.X, 5, 0.0, Y, 2);
  double e = 0;
  for (int k = 0; k < 2 * n; k++) e = fmax(e, fabs(Y[k] - tr.Y[k]));
  CHECK(e == 0.0, "y = T x at noise 0");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* decay: lambda_i = i^-1 */
  s.nspectrum = 0;
  s.spectrum_decay = 1.0;
  s.d_in = 4;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "decay build");
  ok = 1;
  for (int a = 0; a < 4; a++) {
    double c = 0, l = 1.0 / (a + 1);
    for (int i = 0; i < n; i++) c += tr.X[(size_t)i * 4 + a] * tr.X[(size_t)i * 4 + a];
    ok &= fabs(c / n - l) < 5.0 * sqrt(2.0 / n) * l;
  }
  CHECK(ok, "variances i^-decay");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  free(T);
  free(Y);
}

static double rank_f(ds_data_kind k, const double *x, int d) {
  switch (k) {
    case DS_DATA_RANK2: return x[0] * x[1];
    case DS_DATA_RANK3: {
      double s = 0;
      for (int i = 0; i < 10; i++) s += x[i];
      return x[0] * x[1] * s;
    }
    case DS_DATA_RANK4: return x[0] + x[0] * x[1] + x[0] * x[1] * x[2] + x[0] * x[1] * x[2] * x[3];
    default: {
      double s = 0;
      for (int i = 0; i < d; i++) s += x[i] * x[i];
      return sqrt(s / d);
    }
  }
}

static void test_rank_kinds(void) {
  const ds_data_kind kinds[] = {DS_DATA_RANK2, DS_DATA_RANK3, DS_DATA_RANK4, DS_DATA_FULLRANK};
  for (int q = 0; q < 4; q++) {
    ds_data_spec s = base_spec(kinds[q]);
    s.d_in = 100;
    s.d_out = 4; /* ignored: scalar targets */
    s.n_train = 200;
    s.n_test = 50;
    ds_rng r;
    ds_rng_init(&r, 5, (uint64_t)q, 0, DS_STREAM_DATA);
    ds_dataset tr, te;
    CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "rank kind %d: %s", q, ds_errmsg());
    CHECK(tr.d_out == 1 && te.d_out == 1 && tr.d_in == 100 && te.n == 50, "rank kind %d shapes", q);
    double e = 0;
    for (int w = 0; w < 2; w++) {
      ds_dataset *d = w ? &te : &tr;
      for (int i = 0; i < d->n; i++)
        e = fmax(e, fabs(d->Y[i] - rank_f(kinds[q], d->X + (size_t)i * 100, 100)));
    }
    CHECK(e < 1e-14, "rank kind %d: y = f*(x) (max diff %.3g)", q, e);
    int di, dout, na;
    CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 100 && dout == 1 && na == 200,
          "rank kind %d probe", q);
    /* noise: same X, residual std ~ noise */
    ds_dataset tr2, te2;
    s.noise = 0.1;
    ds_rng_init(&r, 5, (uint64_t)q, 0, DS_STREAM_DATA);
    ds_data_build(&s, &r, &tr2, &te2);
    CHECK(memcmp(tr.X, tr2.X, (size_t)100 * 200 * 8) == 0, "X independent of the noise level");
    double v = 0;
    for (int i = 0; i < 200; i++) v += (tr2.Y[i] - tr.Y[i]) * (tr2.Y[i] - tr.Y[i]);
    v /= 200;
    CHECK(fabs(v / 0.01 - 1.0) < 0.5, "noise variance %g want 0.01", v);
    ds_dataset_free(&tr);
    ds_dataset_free(&te);
    ds_dataset_free(&tr2);
    ds_dataset_free(&te2);
  }
  ds_data_spec s = base_spec(DS_DATA_RANK3);
  s.d_in = 9;
  ds_rng r;
  ds_rng_init(&r, 5, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_EINPUT, "rank3 with d_in < 10 refused");
}

static void test_circle_two_gaussians(void) {
  ds_data_spec s = base_spec(DS_DATA_CIRCLE);
  s.n_train = 100; /* ignored */
  ds_rng r;
  ds_rng_init(&r, 1, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "circle");
  CHECK(tr.n == 8 && tr.d_in == 2 && tr.d_out == 1 && te.n == 0, "circle shape");
  int ok = 1;
  for (int j = 1; j <= 8; j++) {
    double a = 2 * M_PI * j / 8;
    ok &= tr.X[2 * (j - 1)] == sin(a) && tr.X[2 * (j - 1) + 1] == cos(a);
    ok &= tr.Y[j - 1] == ((j % 2) ? -1.0 : 1.0);
  }
  CHECK(ok, "circle: x_j = (sin 2pi j/8, cos 2pi j/8), y_j = (-1)^j");
  CHECK(fabs(tr.X[2 * 7 + 1] - 1.0) < 1e-15 && fabs(tr.X[2 * 1]) - 1.0 < 1e-15, "x_8 = (0,1), x_2 = (1,0)");
  int di, dout, na;
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 2 && dout == 1 && na == 8, "circle probe");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  s = base_spec(DS_DATA_TWO_GAUSSIANS);
  s.n_train = 4001;
  s.n_test = 128;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "two gaussians");
  CHECK(tr.d_in == 1 && tr.d_out == 1 && tr.n == 4001 && te.n == 128, "two gaussians shape");
  int npos = 0, nneg = 0;
  double mp = 0, mn = 0, vp = 0;
  ok = 1;
  for (int i = 0; i < tr.n; i++) {
    ok &= tr.Y[i] == (i < 2001 ? 1.0 : -1.0);
    if (tr.Y[i] > 0) {
      npos++;
      mp += tr.X[i];
      vp += (tr.X[i] - 2) * (tr.X[i] - 2);
    } else {
      nneg++;
      mn += tr.X[i];
    }
  }
  mp /= npos;
  mn /= nneg;
  vp /= npos;
  CHECK(ok && npos == 2001 && nneg == 2000, "labels: first half +1, rest -1");
  CHECK(fabs(mp - 2) < 5 / sqrt(2000.) && fabs(mn + 2) < 5 / sqrt(2000.), "means %g %g", mp, mn);
  CHECK(fabs(vp - 1) < 5 * sqrt(2 / 2000.), "variance %g", vp);
  ok = 1;
  for (int i = 0; i < te.n; i++) ok &= te.Y[i] == (i < 64 ? 1.0 : -1.0);
  CHECK(ok, "test labels");
  CHECK(ds_data_probe(&s, &di, &dout, &na) == DS_OK && di == 1 && dout == 1 && na == 4001,
        "two gaussians probe");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

static void test_relu_sphere_teacher(void) {
  /* relu teacher: y = A relu(B x / sqrt(d)) / sqrt(m), B then A drawn first */
  ds_data_spec s = base_spec(DS_DATA_RELU_TEACHER);
  s.teacher_width = 7;
  ds_rng r, r0;
  ds_rng_init(&r, 9, 2, 1, DS_STREAM_DATA);
  r0 = r;
  ds_dataset tr, te;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "relu teacher: %s", ds_errmsg());
  int m = 7, d = 8, k = 3;
  double B[7 * 8], A[3 * 7];
  for (int q = 0; q < m * d; q++) B[q] = ds_rng_normal(&r0);
  for (int q = 0; q < k * m; q++) A[q] = ds_rng_normal(&r0);
  double e = 0;
  for (int i = 0; i < tr.n; i++)
    for (int o = 0; o < k; o++) {
      double y = 0;
      for (int h = 0; h < m; h++) {
        double z = 0;
        for (int c = 0; c < d; c++) z += B[c * m + h] * tr.X[(size_t)i * d + c];
        z /= sqrt((double)d);
        y += A[h * k + o] * (z > 0 ? z : 0);
      }
      y /= sqrt((double)m);
      e = fmax(e, fabs(y - tr.Y[(size_t)i * k + o]));
    }
  CHECK(e < 1e-13, "relu teacher formula (max diff %.3g)", e);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  s.teacher_width = 0;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_EINPUT, "teacher_width 0 refused");

  /* sphere: unit norms, point 0 scaled; y = T x */
  s = base_spec(DS_DATA_SPHERE);
  s.sphere_scale = 3.0;
  ds_rng_init(&r, 9, 3, 1, DS_STREAM_DATA);
  r0 = r;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "sphere");
  int ok = fabs(cblas_dnrm2(8, tr.X, 1) - 3.0) < 1e-14;
  for (int i = 1; i < tr.n; i++) ok &= fabs(cblas_dnrm2(8, tr.X + (size_t)i * 8, 1) - 1.0) < 1e-14;
  for (int i = 0; i < te.n; i++) ok &= fabs(cblas_dnrm2(8, te.X + (size_t)i * 8, 1) - 1.0) < 1e-14;
  CHECK(ok, "sphere norms");
  double T[3 * 8];
  ds_data_teacher_matrix(8, 3, 2, &r0, T);
  e = 0;
  for (int i = 0; i < tr.n; i++)
    for (int o = 0; o < 3; o++) {
      double y = 0;
      for (int c = 0; c < 8; c++) y += T[c * 3 + o] * tr.X[(size_t)i * 8 + c];
      e = fmax(e, fabs(y - tr.Y[(size_t)i * 3 + o]));
    }
  CHECK(e < 1e-14, "sphere y = T x");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);

  /* teacher through ds_data_build is ds_data_teacher */
  s = base_spec(DS_DATA_TEACHER);
  s.noise = 0.2;
  ds_dataset tr2, te2;
  ds_rng_init(&r, 9, 4, 1, DS_STREAM_DATA);
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "teacher build");
  ds_rng_init(&r, 9, 4, 1, DS_STREAM_DATA);
  ds_data_teacher(8, 3, 2, 0.2, 64, 16, &r, &tr2, &te2);
  CHECK(memcmp(tr.X, tr2.X, 8 * 64 * 8) == 0 && memcmp(tr.Y, tr2.Y, 3 * 64 * 8) == 0 &&
            memcmp(te.Y, te2.Y, 3 * 16 * 8) == 0,
        "build(teacher) == ds_data_teacher");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);
  s.n_test = 0;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK && te.n == 0 && te.d_in == 8, "teacher no test set");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
}

static void test_transforms_and_determinism(void) {
  ds_data_spec s = base_spec(DS_DATA_GAUSSIAN_SPECTRUM);
  s.nspectrum = 2;
  s.spectrum[0] = 9.0;
  s.spectrum[1] = 0.5;
  s.n_train = 500;
  s.n_test = 100;
  s.standardize = 1;
  ds_rng r;
  ds_rng_init(&r, 21, 0, 0, DS_STREAM_DATA);
  ds_dataset tr, te, tr2, te2;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "standardised build");
  int ok = 1;
  for (int k = 0; k < 8; k++) {
    double m = 0, v = 0;
    for (int i = 0; i < tr.n; i++) m += tr.X[(size_t)i * 8 + k];
    m /= tr.n;
    for (int i = 0; i < tr.n; i++) v += pow(tr.X[(size_t)i * 8 + k] - m, 2);
    v /= tr.n;
    ok &= fabs(m) < 1e-12 && fabs(v - 1) < 1e-12;
  }
  CHECK(ok, "standardised: train mean 0, variance 1 per feature");
  /* same key, same data; other key, other data */
  ds_rng_init(&r, 21, 0, 0, DS_STREAM_DATA);
  ds_data_build(&s, &r, &tr2, &te2);
  CHECK(memcmp(tr.X, tr2.X, (size_t)8 * 500 * 8) == 0 && memcmp(te.Y, te2.Y, (size_t)3 * 100 * 8) == 0,
        "same key, same data");
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);
  ds_rng_init(&r, 21, 0, 1, DS_STREAM_DATA);
  ds_data_build(&s, &r, &tr2, &te2);
  CHECK(memcmp(tr.X, tr2.X, (size_t)8 * 500 * 8) != 0, "other key, other data");
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* whiten flag on Gaussian data */
  s.standardize = 0;
  s.whiten = 1;
  CHECK(ds_data_build(&s, &r, &tr, &te) == DS_OK, "whitened-input build");
  double ge = gram_error(&tr);
  CHECK(ge < 1e-12, "whiten: (1/n) X X^T = I on train (%.3g)", ge);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  /* pixel scale */
  s.whiten = 0;
  s.pixel_scale = 0.5;
  ds_rng_init(&r, 21, 0, 0, DS_STREAM_DATA);
  ds_data_build(&s, &r, &tr, &te);
  s.pixel_scale = 1.0;
  ds_rng_init(&r, 21, 0, 0, DS_STREAM_DATA);
  ds_data_build(&s, &r, &tr2, &te2);
  ok = 1;
  for (int k = 0; k < 8 * 500; k++) ok &= tr.X[k] == 0.5 * tr2.X[k];
  CHECK(ok, "pixel_scale multiplies the inputs");
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  ds_dataset_free(&tr2);
  ds_dataset_free(&te2);
}

/* every run of n consecutive indices starting at a multiple of n is a permutation */
static void test_batcher(void) {
  const int n = 37;
  const int bs[] = {1, 5, 37, 10};
  for (int q = 0; q < 4; q++) {
    int b = bs[q];
    ds_rng r;
    ds_rng_init(&r, 77, 1, 0, DS_STREAM_BATCH);
    ds_batcher bt, bt2;
    CHECK(ds_batcher_init(&bt, n, b, &r) == DS_OK, "batcher init b=%d", b);
    CHECK(ds_batcher_init(&bt2, n, b, &r) == DS_OK, "batcher init 2");
    int nb = 5 * n; /* 5 * n batches = 5 * b epochs */
    int *stream = malloc((size_t)nb * b * sizeof *stream), *buf = malloc((size_t)b * sizeof *buf);
    int same = 1, ret = 1;
    for (int k = 0; k < nb; k++) {
      const int *p = ds_batcher_next(&bt, stream + (size_t)k * b);
      ret &= p == stream + (size_t)k * b;
      ds_batcher_next(&bt2, buf);
      same &= memcmp(buf, stream + (size_t)k * b, (size_t)b * sizeof *buf) == 0;
    }
    int perm_ok = 1, differs = 0;
    for (int e = 0; e < nb * b / n; e++) {
      int seen[37] = {0};
      for (int i = 0; i < n; i++) {
        int v = stream[e * n + i];
        if (v < 0 || v >= n || seen[v]++) perm_ok = 0;
      }
      if (e > 0) differs |= memcmp(stream + e * n, stream + (e - 1) * n, n * sizeof(int)) != 0;
    }
    CHECK(perm_ok, "b=%d: every epoch covers each index exactly once", b);
    CHECK(differs, "b=%d: epochs are reshuffled", b);
    CHECK(same, "b=%d: same rng, same batches", b);
    CHECK(ret, "b=%d: next returns idx_buf", b);
    CHECK(bt.epoch == (int64_t)(nb * b / n) - (nb * b % n == 0), "b=%d: epoch counter %lld", b,
          (long long)bt.epoch);
    /* a copied batcher state continues identically (checkpoint) */
    ds_batcher cp = bt;
    cp.perm = malloc(n * sizeof(int));
    memcpy(cp.perm, bt.perm, n * sizeof(int));
    int a1[37], a2[37];
    ds_batcher_next(&bt, a1);
    ds_batcher_next(&cp, a2);
    CHECK(memcmp(a1, a2, (size_t)b * sizeof(int)) == 0, "copied state continues identically");
    free(cp.perm);
    /* another key gives another order */
    ds_rng r2;
    ds_rng_init(&r2, 77, 1, 1, DS_STREAM_BATCH);
    ds_batcher bt3;
    ds_batcher_init(&bt3, n, b, &r2);
    int *s3 = malloc((size_t)n * b * sizeof *s3);
    for (int k = 0; k < n; k++) ds_batcher_next(&bt3, s3 + (size_t)k * b);
    CHECK(memcmp(s3, stream, (size_t)n * b * sizeof *s3) != 0, "b=%d: another key, other batches", b);
    free(s3);
    ds_batcher_free(&bt3);
    ds_batcher_free(&bt);
    ds_batcher_free(&bt2);
    free(stream);
    free(buf);
  }
  ds_rng r;
  ds_rng_init(&r, 1, 1, 1, DS_STREAM_BATCH);
  ds_batcher bt;
  CHECK(ds_batcher_init(&bt, 4, 5, &r) == DS_EINPUT, "batch > n refused");
  CHECK(ds_batcher_init(&bt, 4, 0, &r) == DS_OK && bt.b == 4, "b = 0 is the full batch");
  ds_batcher_free(&bt);

  /* gather */
  ds_dataset d;
  ds_dataset_alloc(&d, 5, 2, 1);
  for (int i = 0; i < 5; i++) {
    d.X[2 * i] = i;
    d.X[2 * i + 1] = 10 * i;
    d.Y[i] = -i;
  }
  int idx[3] = {4, 0, 2};
  double Xb[6], Yb[3];
  ds_dataset_gather(&d, idx, 3, Xb, Yb);
  CHECK(Xb[0] == 4 && Xb[1] == 40 && Xb[2] == 0 && Xb[4] == 2 && Xb[5] == 20 && Yb[0] == -4 &&
            Yb[2] == -2,
        "gather columns");
  ds_dataset_free(&d);
}

int main(void) {
  test_whitened();
  test_gaussian_spectrum();
  test_rank_kinds();
  test_circle_two_gaussians();
  test_relu_sphere_teacher();
  test_transforms_and_determinism();
  test_batcher();
  return ds_check_report("test_generators");
}
