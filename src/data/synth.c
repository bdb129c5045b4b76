/* synth.c -- synthetic data kinds (docs/data.md has the formulas).
 *
 * Draw order from the rng (fixed, so a seed reproduces the data exactly):
 *   teacher-like kinds (whitened, gaussian_spectrum, relu_teacher, sphere):
 *     1. the teacher (T / Phi from ds_data_teacher_matrix; relu: B then A)
 *     2. train X, 3. train noise, 4. test X, 5. test noise
 *   rank2/rank3/rank4/fullrank: train X, train noise, test X, test noise
 *   two_gaussians: train x, test x;  circle: nothing.
 *   iid_gaussian: train X, train Y, test X, test Y.
 * Noise is drawn even when noise == 0, so X does not depend on the noise level. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

static void fill_normal(double *x, size_t count, ds_rng *rng) {
  for (size_t k = 0; k < count; k++) x[k] = ds_rng_normal(rng);
}

/* Y += noise * N(0,1) (drawn always). */
static void add_noise(ds_dataset *d, double noise, ds_rng *rng) {
  size_t ny = (size_t)d->d_out * d->n;
  for (size_t k = 0; k < ny; k++) {
    double e = ds_rng_normal(rng);
    if (noise != 0.0) d->Y[k] += noise * e;
  }
}

/* Y = M X (M d_out x d_in). */
static void apply_linear(const double *M, ds_dataset *d) {
  if (d->n == 0) return;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d->d_out, d->n, d->d_in, 1.0, M,
              d->d_out, d->X, d->d_in, 0.0, d->Y, d->d_out);
}

static int check_dims(const ds_data_spec *s, int din_min, const char *kind) {
  if (s->d_in < din_min || s->d_out < 1)
    return ds_fail(DS_EINPUT, "data %s: need d_in >= %d and d_out >= 1 (got %d, %d)", kind, din_min,
                   s->d_in, s->d_out);
  return DS_OK;
}

/* f*(x) of the seed 003 AGOP tasks. */
static double rank_fn(ds_data_kind kind, const double *x, int d) {
  switch (kind) {
    case DS_DATA_RANK2: return x[0] * x[1];
    case DS_DATA_RANK3: {
      double s = 0.0;
      for (int i = 0; i < 10; i++) s += x[i];
      return x[0] * x[1] * s;
    }
    case DS_DATA_RANK4: {
      double s = 0.0, p = 1.0;
      for (int j = 0; j < 4; j++) {
        p *= x[j];
        s += p;
      }
      return s;
    }
    default: { /* fullrank */
      double s = 0.0;
      for (int i = 0; i < d; i++) s += x[i] * x[i];
      return sqrt(s) / sqrt((double)d);
    }
  }
}

/* Everything built here is (train, test) with test possibly n = 0. */
static int alloc_pair(int ntr, int nte, int d_in, int d_out, ds_dataset *tr, ds_dataset *te) {
  DS_TRY(ds_dataset_alloc(tr, ntr, d_in, d_out));
  int rc = ds_dataset_alloc(te, nte, d_in, d_out);
  if (rc != DS_OK) ds_dataset_free(tr);
  return rc;
}

static int synth_whitened(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  DS_TRY(check_dims(s, 1, "whitened"));
  int n = s->n_train, d = s->d_in;
  if (n < d)
    return ds_fail(DS_EINPUT, "data whitened: (1/n) X X^T = I needs n_train >= d_in (got %d < %d)", n,
                   d);
  double scale = s->target_scale != 0.0 ? s->target_scale : 1.0;
  double *Phi = ds_calloc((size_t)s->d_out * d, sizeof *Phi);
  double *A = ds_calloc((size_t)n * d, sizeof *A);
  int rc = DS_OK;
  if (!Phi || !A) {
    rc = DS_ENOMEM;
    goto done;
  }
  if ((rc = ds_data_teacher_matrix(d, s->d_out, s->rank, rng, Phi)) != DS_OK) goto done;
  cblas_dscal(s->d_out * d, scale, Phi, 1);
  if ((rc = alloc_pair(n, s->n_test, d, s->d_out, tr, te)) != DS_OK) goto done;
  fill_normal(tr->X, (size_t)d * n, rng);
  /* A = X^T (n x d) = Q R; X <- sqrt(n) Q^T, so (1/n) X X^T = Q^T Q = I */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) A[(size_t)k * n + i] = tr->X[(size_t)i * d + k];
  if ((rc = ds_data_orthonormalise(A, n, d)) != DS_OK) goto done;
  double sq = sqrt((double)n);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) tr->X[(size_t)i * d + k] = sq * A[(size_t)k * n + i];
  apply_linear(Phi, tr);
  add_noise(tr, s->noise, rng);
  fill_normal(te->X, (size_t)d * te->n, rng);
  apply_linear(Phi, te);
  add_noise(te, s->noise, rng);
done:
  free(Phi);
  free(A);
  return rc;
}

/* lambda_i of gaussian_spectrum, i = 0..d-1 */
static double spectrum_value(const ds_data_spec *s, int i) {
  if (s->nspectrum > 0) return s->spectrum[i < s->nspectrum ? i : s->nspectrum - 1];
  return pow((double)(i + 1), -s->spectrum_decay);
}

/* Inputs of teacher-like kinds: Gaussian scaled per coordinate, or sphere. */
static void draw_inputs(const ds_data_spec *s, ds_dataset *d, ds_rng *rng, int is_train) {
  int din = d->d_in;
  fill_normal(d->X, (size_t)din * d->n, rng);
  if (s->kind == DS_DATA_GAUSSIAN_SPECTRUM) {
    for (int k = 0; k < din; k++) {
      double sl = sqrt(spectrum_value(s, k));
      for (int i = 0; i < d->n; i++) d->X[(size_t)i * din + k] *= sl;
    }
  } else if (s->kind == DS_DATA_SPHERE) {
    for (int i = 0; i < d->n; i++) {
      double *x = d->X + (size_t)i * din;
      double nrm = cblas_dnrm2(din, x, 1);
      if (nrm > 0) cblas_dscal(din, 1.0 / nrm, x, 1);
    }
    double sc = s->sphere_scale != 0.0 ? s->sphere_scale : 1.0;
    if (is_train && d->n > 0) cblas_dscal(din, sc, d->X, 1);
  }
}

static int synth_linear_teacher(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  const char *name = s->kind == DS_DATA_SPHERE ? "sphere" : "gaussian_spectrum";
  DS_TRY(check_dims(s, 1, name));
  if (s->kind == DS_DATA_GAUSSIAN_SPECTRUM)
    for (int k = 0; k < s->nspectrum; k++)
      if (!(s->spectrum[k] >= 0.0))
        return ds_fail(DS_EINPUT, "data gaussian_spectrum: spectrum[%d] = %g must be >= 0", k,
                       s->spectrum[k]);
  double *T = ds_calloc((size_t)s->d_out * s->d_in, sizeof *T);
  if (!T) return DS_ENOMEM;
  int rc = ds_data_teacher_matrix(s->d_in, s->d_out, s->rank, rng, T);
  if (rc == DS_OK) rc = alloc_pair(s->n_train, s->n_test, s->d_in, s->d_out, tr, te);
  if (rc == DS_OK) {
    draw_inputs(s, tr, rng, 1);
    apply_linear(T, tr);
    add_noise(tr, s->noise, rng);
    draw_inputs(s, te, rng, 0);
    apply_linear(T, te);
    add_noise(te, s->noise, rng);
  }
  free(T);
  return rc;
}

/* y = (1/sqrt(m)) A relu(B x / sqrt(d_in)), B m x d_in, A d_out x m, N(0,1) */
static int synth_relu_teacher(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  DS_TRY(check_dims(s, 1, "relu_teacher"));
  int m = s->teacher_width, din = s->d_in, dout = s->d_out;
  if (m < 1) return ds_fail(DS_EINPUT, "data relu_teacher: teacher_width must be >= 1 (got %d)", m);
  double *B = ds_calloc((size_t)m * din, sizeof *B);
  double *A = ds_calloc((size_t)dout * m, sizeof *A);
  int nmax = s->n_train > s->n_test ? s->n_train : s->n_test;
  double *H = ds_calloc((size_t)m * (nmax > 0 ? nmax : 1), sizeof *H);
  int rc = DS_OK;
  if (!A || !B || !H) {
    rc = DS_ENOMEM;
    goto done;
  }
  fill_normal(B, (size_t)m * din, rng);
  fill_normal(A, (size_t)dout * m, rng);
  if ((rc = alloc_pair(s->n_train, s->n_test, din, dout, tr, te)) != DS_OK) goto done;
  for (int pass = 0; pass < 2; pass++) {
    ds_dataset *d = pass ? te : tr;
    fill_normal(d->X, (size_t)din * d->n, rng);
    if (d->n > 0) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, d->n, din, 1.0 / sqrt((double)din),
                  B, m, d->X, din, 0.0, H, m);
      for (size_t k = 0; k < (size_t)m * d->n; k++) H[k] = H[k] > 0.0 ? H[k] : 0.0;
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, d->n, m, 1.0 / sqrt((double)m),
                  A, dout, H, m, 0.0, d->Y, dout);
    }
    add_noise(d, s->noise, rng);
  }
done:
  free(A);
  free(B);
  free(H);
  return rc;
}

static int synth_rank(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  static const char *names[] = {"rank2", "rank3", "rank4", "fullrank"};
  static const int dmin[] = {2, 10, 4, 1};
  int w = s->kind - DS_DATA_RANK2;
  if (s->d_in < dmin[w])
    return ds_fail(DS_EINPUT, "data %s: needs d_in >= %d (got %d)", names[w], dmin[w], s->d_in);
  DS_TRY(alloc_pair(s->n_train, s->n_test, s->d_in, 1, tr, te));
  for (int pass = 0; pass < 2; pass++) {
    ds_dataset *d = pass ? te : tr;
    fill_normal(d->X, (size_t)s->d_in * d->n, rng);
    for (int i = 0; i < d->n; i++) d->Y[i] = rank_fn(s->kind, d->X + (size_t)i * s->d_in, s->d_in);
    add_noise(d, s->noise, rng);
  }
  return DS_OK;
}

/* first n - n/2 samples: N(+2, 1), y = +1; the rest N(-2, 1), y = -1 */
static int synth_two_gaussians(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  DS_TRY(alloc_pair(s->n_train, s->n_test, 1, 1, tr, te));
  for (int pass = 0; pass < 2; pass++) {
    ds_dataset *d = pass ? te : tr;
    int npos = d->n - d->n / 2;
    for (int i = 0; i < d->n; i++) {
      double c = i < npos ? 2.0 : -2.0;
      d->X[i] = c + ds_rng_normal(rng);
      d->Y[i] = i < npos ? 1.0 : -1.0;
    }
  }
  return DS_OK;
}

/* x ~ N(0, I), y ~ N(0, I) drawn independently (no teacher, no noise term) */
static int synth_iid(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  DS_TRY(alloc_pair(s->n_train, s->n_test, s->d_in, s->d_out, tr, te));
  for (int pass = 0; pass < 2; pass++) {
    ds_dataset *d = pass ? te : tr;
    fill_normal(d->X, (size_t)s->d_in * d->n, rng);
    fill_normal(d->Y, (size_t)s->d_out * d->n, rng);
  }
  return DS_OK;
}

/* x_j = (sin 2 pi j/8, cos 2 pi j/8), y_j = (-1)^j, j = 1..8 (column j-1); no test set */
static int synth_circle(ds_dataset *tr, ds_dataset *te) {
  DS_TRY(alloc_pair(8, 0, 2, 1, tr, te));
  for (int j = 1; j <= 8; j++) {
    double a = 2.0 * M_PI * j / 8.0;
    tr->X[2 * (j - 1)] = sin(a);
    tr->X[2 * (j - 1) + 1] = cos(a);
    tr->Y[j - 1] = (j % 2) ? -1.0 : 1.0;
  }
  return DS_OK;
}

/* image_rank2 (seed 003's synthetic image task, cnn.md 6.4): x ~ N(0, I) on a
 * 1 x s x s image, f*(x) = (u1.x)(u2.x) with the orthonormal centre filters of
 * ds_data_image_filters, so grad f* = u1 (u2.x) + u2 (u1.x) and
 * G* = E[grad f* grad f*'] = u1 u1' + u2 u2' exactly. */
static int synth_image_rank2(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  int d = s->d_in;
  if (!ds_data_image_side(d))
    return ds_fail(DS_EINPUT, "data image_rank2: d_in must be s^2 with s >= 3 (a 1 x s x s "
                   "image), got %d", d);
  double *u = ds_calloc(2 * (size_t)d, sizeof *u);
  if (!u) return ds_fail(DS_ENOMEM, "data image_rank2: out of memory");
  int rc = ds_data_image_filters(d, u, u + d);
  if (rc == DS_OK) rc = alloc_pair(s->n_train, s->n_test, d, 1, tr, te);
  for (int pass = 0; rc == DS_OK && pass < 2; pass++) {
    ds_dataset *ds = pass ? te : tr;
    fill_normal(ds->X, (size_t)d * ds->n, rng);
    for (int i = 0; i < ds->n; i++) {
      const double *x = ds->X + (size_t)i * d;
      double a = 0.0, b = 0.0;
      for (int k = 0; k < d; k++) a += u[k] * x[k], b += u[d + k] * x[k];
      ds->Y[i] = a * b;
    }
    add_noise(ds, s->noise, rng);
  }
  free(u);
  return rc;
}

int ds_data_synth(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  if (s->kind != DS_DATA_CIRCLE && (s->n_train < 1 || s->n_test < 0))
    return ds_fail(DS_EINPUT, "data: need n_train >= 1 and n_test >= 0 (got %d, %d)", s->n_train,
                   s->n_test);
  if (!(s->noise >= 0.0)) return ds_fail(DS_EINPUT, "data: noise must be >= 0 (got %g)", s->noise);
  switch (s->kind) {
    case DS_DATA_TEACHER: {
      int rc = ds_data_teacher(s->d_in, s->d_out, s->rank, s->noise, s->n_train, s->n_test, rng, tr,
                               s->n_test > 0 ? te : NULL);
      if (rc == DS_OK && s->n_test == 0) rc = ds_dataset_alloc(te, 0, s->d_in, s->d_out);
      return rc;
    }
    case DS_DATA_WHITENED: return synth_whitened(s, rng, tr, te);
    case DS_DATA_GAUSSIAN_SPECTRUM:
    case DS_DATA_SPHERE: return synth_linear_teacher(s, rng, tr, te);
    case DS_DATA_RELU_TEACHER: return synth_relu_teacher(s, rng, tr, te);
    case DS_DATA_RANK2:
    case DS_DATA_RANK3:
    case DS_DATA_RANK4:
    case DS_DATA_FULLRANK: return synth_rank(s, rng, tr, te);
    case DS_DATA_IMAGE_RANK2: return synth_image_rank2(s, rng, tr, te);
    case DS_DATA_TWO_GAUSSIANS: return synth_two_gaussians(s, rng, tr, te);
    case DS_DATA_CIRCLE: return synth_circle(tr, te);
    case DS_DATA_IID_GAUSSIAN: return synth_iid(s, rng, tr, te);
    default: return ds_fail(DS_EINTERNAL, "data: kind %d is not synthetic", (int)s->kind);
  }
}
