/* build.c -- ds_data_build / ds_data_probe: the synthetic kinds (synth.c) or
 * a file table (files.c), then the preprocessing pipeline:
 *   1. class subset (keep the listed classes, relabel to 0..k-1 in list order)
 *      -- or, for one_hot / pm1 without a list, the distinct labels sorted
 *   2. train/test pools: test_path, else the last test_fraction (or the last
 *      n_test samples when test_fraction is 0) of the data, shuffled first
 *      when random_subset
 *   3. first n_train / n_test samples of the pools (random when shuffled);
 *      n_train beyond the train pool is an error, n_test is capped by the pool
 *   4. pixel_scale, 5. standardise (per feature, or per channel of the
 *      kind's image shape), 6. whiten (train statistics), 7. labels
 * See docs/data.md. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_internal.h"

void dsyev_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
            double *work, const int *lwork, int *info);

static int is_file_kind(ds_data_kind k) {
  return ds_data_is_file_kind(k);
}

/* ------------------------------------------------------------ raw tables */

/* Replace r by its columns idx[0..m). */
static int raw_select(ds_raw *r, const int *idx, int m) {
  ds_raw o = *r;
  o.n = m;
  o.X = NULL;
  o.T = NULL;
  o.C = NULL;
  if (r->X && !(o.X = ds_calloc((size_t)m * r->d, sizeof *o.X))) goto nomem;
  if (!(o.T = ds_calloc((size_t)m * r->dy, sizeof *o.T))) goto nomem;
  if (r->C && !(o.C = ds_calloc((size_t)m, sizeof *o.C))) goto nomem;
  for (int i = 0; i < m; i++) {
    int j = idx[i];
    if (o.X) memcpy(o.X + (size_t)i * r->d, r->X + (size_t)j * r->d, (size_t)r->d * sizeof *o.X);
    memcpy(o.T + (size_t)i * r->dy, r->T + (size_t)j * r->dy, (size_t)r->dy * sizeof *o.T);
    if (o.C) o.C[i] = r->C[j];
  }
  ds_raw_free(r);
  *r = o;
  return DS_OK;
nomem:
  ds_raw_free(&o);
  return DS_ENOMEM;
}

/* Keep the first m columns (no copy). */
static void raw_prefix(ds_raw *r, int m) {
  if (m < r->n) r->n = m;
}

/* dst = copy of the last m columns of src. */
static int raw_tail(const ds_raw *src, int m, ds_raw *dst) {
  memset(dst, 0, sizeof *dst);
  dst->n = m;
  dst->d = src->d;
  dst->dy = src->dy;
  dst->t_is_class = src->t_is_class;
  int j0 = src->n - m;
  if (src->X && !(dst->X = ds_calloc((size_t)m * src->d, sizeof *dst->X))) goto nomem;
  if (!(dst->T = ds_calloc((size_t)m * src->dy, sizeof *dst->T))) goto nomem;
  if (src->C && !(dst->C = ds_calloc((size_t)m, sizeof *dst->C))) goto nomem;
  if (dst->X) memcpy(dst->X, src->X + (size_t)j0 * src->d, (size_t)m * src->d * sizeof *dst->X);
  memcpy(dst->T, src->T + (size_t)j0 * src->dy, (size_t)m * src->dy * sizeof *dst->T);
  if (dst->C) memcpy(dst->C, src->C + j0, (size_t)m * sizeof *dst->C);
  return DS_OK;
nomem:
  ds_raw_free(dst);
  return DS_ENOMEM;
}

/* Zero-pad the features of r to d rows. */
static int raw_pad(ds_raw *r, int d) {
  if (d == r->d) return DS_OK;
  if (r->X) {
    double *X = ds_calloc((size_t)r->n * d, sizeof *X);
    if (!X) return DS_ENOMEM;
    for (int i = 0; i < r->n; i++)
      memcpy(X + (size_t)i * d, r->X + (size_t)i * r->d, (size_t)r->d * sizeof *X);
    free(r->X);
    r->X = X;
  }
  r->d = d;
  return DS_OK;
}

static void shuffle(int *p, int n, ds_rng *rng) {
  for (int i = 0; i < n; i++) p[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(ds_rng_u64(rng) % (uint64_t)(i + 1));
    int t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The tables of a file spec (train file a, test file b -- n = 0 without
 * test_path) with classes mapped: C holds the class index 0..k-1 (k = 0
 * when no classes are used). */
typedef struct {
  ds_raw a, b;
  int has_test, k;
} file_tables;

static void tables_free(file_tables *t) {
  ds_raw_free(&t->a);
  ds_raw_free(&t->b);
}

static int map_classes(const ds_data_spec *s, file_tables *t) {
  int need = s->nclasses > 0 || s->labels != DS_LABELS_VALUE;
  t->k = 0;
  if (!need) return DS_OK;
  if (!t->a.C)
    return ds_fail(DS_EINPUT,
                   "%s: class labels (classes / one_hot / pm1) need a single label column (the "
                   "file has %d target columns)",
                   s->path, t->a.dy);
  if (s->nclasses > 0) {
    for (int i = 0; i < s->nclasses; i++)
      for (int j = 0; j < i; j++)
        if (s->classes[i] == s->classes[j])
          return ds_fail(DS_EINPUT, "data: class %d is listed twice in classes", s->classes[i]);
    for (int w = 0; w < 2; w++) {
      ds_raw *r = w ? &t->b : &t->a;
      if (w && !t->has_test) break;
      int *idx = ds_calloc((size_t)r->n, sizeof *idx);
      if (!idx) return DS_ENOMEM;
      int m = 0;
      for (int i = 0; i < r->n; i++) {
        int c = -1;
        for (int q = 0; q < s->nclasses && c < 0; q++)
          if (r->C[i] == (double)s->classes[q]) c = q;
        if (c >= 0) {
          idx[m++] = i;
          r->C[i] = c;
          if (r->t_is_class) r->T[i] = c;
        }
      }
      int rc = m == r->n ? DS_OK : raw_select(r, idx, m);
      free(idx);
      DS_TRY(rc);
      if (m == 0)
        return ds_fail(DS_EINPUT, "%s: no samples of the listed classes",
                       w ? s->test_path : s->path);
    }
    t->k = s->nclasses;
    return DS_OK;
  }
  /* distinct labels of both files, sorted */
  int nall = t->a.n + t->b.n;
  double *u = ds_calloc((size_t)nall, sizeof *u);
  if (!u) return DS_ENOMEM;
  memcpy(u, t->a.C, (size_t)t->a.n * sizeof *u);
  if (t->b.n) memcpy(u + t->a.n, t->b.C, (size_t)t->b.n * sizeof *u);
  qsort(u, (size_t)nall, sizeof *u, cmp_double);
  int k = 0;
  for (int i = 0; i < nall; i++)
    if (k == 0 || u[i] != u[k - 1]) u[k++] = u[i];
  for (int w = 0; w < 2; w++) {
    ds_raw *r = w ? &t->b : &t->a;
    for (int i = 0; i < r->n; i++) {
      const double *p = bsearch(&r->C[i], u, (size_t)k, sizeof *u, cmp_double);
      r->C[i] = (double)(p - u);
    }
  }
  free(u);
  t->k = k;
  return DS_OK;
}

static int load_tables(const ds_data_spec *s, int want_x, file_tables *t) {
  memset(t, 0, sizeof *t);
  t->has_test = s->test_path[0] != '\0';
  int rc = ds_raw_load(s, 0, want_x, &t->a);
  if (rc == DS_OK && t->has_test) rc = ds_raw_load(s, 1, want_x, &t->b);
  if (rc == DS_OK && t->has_test && t->a.d != t->b.d) {
    if (s->kind == DS_DATA_LIBSVM) { /* sparse: the larger index wins */
      int d = t->a.d > t->b.d ? t->a.d : t->b.d;
      rc = raw_pad(&t->a, d);
      if (rc == DS_OK) rc = raw_pad(&t->b, d);
    } else {
      rc = ds_fail(DS_EINPUT, "%s: %d input features but %s has %d", s->test_path, t->b.d, s->path,
                   t->a.d);
    }
  }
  if (rc == DS_OK && t->has_test && t->a.dy != t->b.dy)
    rc = ds_fail(DS_EINPUT, "%s: %d target columns but %s has %d", s->test_path, t->b.dy, s->path,
                 t->a.dy);
  if (rc == DS_OK && t->a.d < 1) rc = ds_fail(DS_EINPUT, "%s: no input features", s->path);
  if (rc == DS_OK) rc = map_classes(s, t);
  if (rc == DS_OK && s->labels == DS_LABELS_PM1 && t->k != 2)
    rc = ds_fail(DS_EINPUT, "%s: labels pm1 needs exactly two classes (found %d)", s->path, t->k);
  if (rc != DS_OK) tables_free(t);
  return rc;
}

/* Size of the test pool split off the end of a single file of n samples. */
static int split_size(const ds_data_spec *s, int n, int *m) {
  if (s->test_fraction > 0.0) {
    if (!(s->test_fraction < 1.0))
      return ds_fail(DS_EINPUT, "data: test_fraction must be < 1 (got %g)", s->test_fraction);
    *m = (int)floor(s->test_fraction * n);
  } else {
    *m = s->n_test > 0 ? s->n_test : 0;
  }
  if (*m >= n)
    return ds_fail(DS_EINPUT, "%s: %d samples leave none for training after a test split of %d",
                   s->path, n, *m);
  return DS_OK;
}

static int file_dout(const ds_data_spec *s, const file_tables *t) {
  switch (s->labels) {
    case DS_LABELS_ONE_HOT: return t->k;
    case DS_LABELS_PM1: return 1;
    default: return t->a.dy;
  }
}

/* Move the table into a dataset, building Y by the label mode. */
static int to_dataset(const ds_data_spec *s, ds_raw *r, int k, ds_dataset *out) {
  int dout = s->labels == DS_LABELS_ONE_HOT ? k : s->labels == DS_LABELS_PM1 ? 1 : r->dy;
  memset(out, 0, sizeof *out);
  double *Y = ds_calloc((size_t)r->n * dout, sizeof *Y);
  if (!Y) return DS_ENOMEM;
  for (int i = 0; i < r->n; i++) {
    if (s->labels == DS_LABELS_ONE_HOT) Y[(size_t)i * k + (int)r->C[i]] = 1.0;
    else if (s->labels == DS_LABELS_PM1) Y[i] = r->C[i] == 0.0 ? -1.0 : 1.0;
  }
  if (s->labels == DS_LABELS_VALUE) memcpy(Y, r->T, (size_t)r->n * dout * sizeof *Y);
  out->n = r->n;
  out->d_in = r->d;
  out->d_out = dout;
  out->Y = Y;
  if (r->X && (size_t)r->n * r->d > 0) {
    out->X = r->X; /* take ownership */
    r->X = NULL;
  } else {
    out->X = ds_calloc((size_t)r->n * r->d, sizeof *out->X);
    if (!out->X) return DS_ENOMEM;
  }
  return DS_OK;
}

static int file_build(const ds_data_spec *s, ds_rng *rng, ds_dataset *tr, ds_dataset *te) {
  file_tables t;
  DS_TRY(load_tables(s, 1, &t));
  int rc = DS_OK, *perm = NULL;
  int N = t.a.n;
  if (!t.has_test) {
    int m = 0;
    if ((rc = split_size(s, N, &m)) != DS_OK) goto done;
    if (!(perm = ds_calloc((size_t)N, sizeof *perm))) {
      rc = DS_ENOMEM;
      goto done;
    }
    if (s->random_subset) {
      shuffle(perm, N, rng);
      if ((rc = raw_select(&t.a, perm, N)) != DS_OK) goto done;
    }
    if ((rc = raw_tail(&t.a, m, &t.b)) != DS_OK) goto done;
    raw_prefix(&t.a, N - m);
  } else if (s->random_subset) {
    int nmax = t.a.n > t.b.n ? t.a.n : t.b.n;
    if (!(perm = ds_calloc((size_t)nmax, sizeof *perm))) {
      rc = DS_ENOMEM;
      goto done;
    }
    shuffle(perm, t.a.n, rng);
    if ((rc = raw_select(&t.a, perm, t.a.n)) != DS_OK) goto done;
    shuffle(perm, t.b.n, rng);
    if ((rc = raw_select(&t.b, perm, t.b.n)) != DS_OK) goto done;
  }
  int ntr = s->n_train > 0 ? s->n_train : t.a.n;
  if (ntr > t.a.n) {
    rc = ds_fail(DS_EINPUT, "%s: n_train = %d but only %d training samples are available", s->path,
                 s->n_train, t.a.n);
    goto done;
  }
  /* n_test caps the test pool (a small file simply gives a smaller test set) */
  int nte = s->n_test > 0 ? s->n_test : 0;
  if (nte > t.b.n) nte = t.b.n;
  raw_prefix(&t.a, ntr);
  raw_prefix(&t.b, nte);
  if ((rc = to_dataset(s, &t.a, t.k, tr)) != DS_OK) goto done;
  if ((rc = to_dataset(s, &t.b, t.k, te)) != DS_OK) goto done;
done:
  free(perm);
  tables_free(&t);
  return rc;
}

/* ------------------------------------------------------------ input transforms */

static void scale_inputs(ds_dataset *d, double c) {
  size_t nx = (size_t)d->d_in * d->n;
  for (size_t k = 0; k < nx; k++) d->X[k] *= c;
}

/* Per-feature (x - mean) / std with the train statistics (std 0: left at 1). */
static int standardise(ds_dataset *tr, ds_dataset *te) {
  int d = tr->d_in, n = tr->n;
  double *mu = ds_calloc((size_t)d, sizeof *mu), *sd = ds_calloc((size_t)d, sizeof *sd);
  if (!mu || !sd) {
    free(mu);
    free(sd);
    return DS_ENOMEM;
  }
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) mu[k] += tr->X[(size_t)i * d + k];
  for (int k = 0; k < d; k++) mu[k] /= n;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < d; k++) {
      double e = tr->X[(size_t)i * d + k] - mu[k];
      sd[k] += e * e;
    }
  for (int k = 0; k < d; k++) {
    sd[k] = sqrt(sd[k] / n);
    if (!(sd[k] > 0.0)) sd[k] = 1.0;
  }
  for (int w = 0; w < 2; w++) {
    ds_dataset *ds = w ? te : tr;
    for (int i = 0; i < ds->n; i++)
      for (int k = 0; k < d; k++) {
        double *x = ds->X + (size_t)i * d + k;
        *x = (*x - mu[k]) / sd[k];
      }
  }
  free(mu);
  free(sd);
  return DS_OK;
}

/* X <- W X with W = C^{-1/2} (pseudo-inverse square root on the range),
 * C = (1/n) X_train X_train^T. */
static int whiten(ds_dataset *tr, ds_dataset *te) {
  int d = tr->d_in, n = tr->n, info = 0, lwork = -1;
  double *C = ds_calloc((size_t)d * d, sizeof *C), *e = ds_calloc((size_t)d, sizeof *e);
  double *W = ds_calloc((size_t)d * d, sizeof *W), *Q = ds_calloc((size_t)d * d, sizeof *Q);
  double *work = NULL, *tmp = NULL, q = 0.0;
  int rc = DS_OK;
  if (!C || !e || !W || !Q) {
    rc = DS_ENOMEM;
    goto done;
  }
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, d, n, 1.0 / n, tr->X, d, 0.0, C, d);
  dsyev_("V", "U", &d, C, &d, e, &q, &lwork, &info);
  lwork = (int)q + 1;
  if (!(work = ds_calloc((size_t)lwork, sizeof *work))) {
    rc = DS_ENOMEM;
    goto done;
  }
  dsyev_("V", "U", &d, C, &d, e, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "data whiten: dsyev failed (info = %d)", info);
    goto done;
  }
  double emax = e[d - 1], tol = emax * 1e-10;
  if (!(emax > 0.0)) {
    rc = ds_fail(DS_EINPUT, "data whiten: the training inputs are all zero");
    goto done;
  }
  for (int j = 0; j < d; j++) { /* Q = V diag(f(e)) */
    double f = e[j] > tol ? 1.0 / sqrt(e[j]) : 0.0;
    for (int i = 0; i < d; i++) Q[(size_t)j * d + i] = C[(size_t)j * d + i] * f;
  }
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, Q, d, C, d, 0.0, W, d);
  int nmax = tr->n > te->n ? tr->n : te->n;
  if (!(tmp = ds_calloc((size_t)d * nmax, sizeof *tmp))) {
    rc = DS_ENOMEM;
    goto done;
  }
  for (int w = 0; w < 2; w++) {
    ds_dataset *ds = w ? te : tr;
    if (ds->n == 0) continue;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, d, ds->n, d, 1.0, W, d, ds->X, d, 0.0,
                tmp, d);
    memcpy(ds->X, tmp, (size_t)d * ds->n * sizeof *tmp);
  }
done:
  free(C);
  free(e);
  free(W);
  free(Q);
  free(work);
  free(tmp);
  return rc;
}

/* Per-channel (x - mean_c) / std_c: the statistics over every training
 * sample and pixel of channel c (C channels of d_in / C consecutive features,
 * CHW order); std 0 is left at 1. */
static int standardise_channels(ds_dataset *tr, ds_dataset *te, int C) {
  int d = tr->d_in, n = tr->n;
  if (C < 1 || d % C)
    return ds_fail(DS_EINPUT, "data.standardize_channels: %d features do not split into %d channels", d, C);
  int P = d / C;
  for (int c = 0; c < C; c++) {
    double mu = 0.0, var = 0.0;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < P; k++) mu += tr->X[(size_t)i * d + (size_t)c * P + k];
    mu /= (double)n * P;
    for (int i = 0; i < n; i++)
      for (int k = 0; k < P; k++) {
        double e = tr->X[(size_t)i * d + (size_t)c * P + k] - mu;
        var += e * e;
      }
    double sd = sqrt(var / ((double)n * P));
    if (!(sd > 0.0)) sd = 1.0;
    for (int w = 0; w < 2; w++) {
      ds_dataset *ds = w ? te : tr;
      for (int i = 0; i < ds->n; i++)
        for (int k = 0; k < P; k++) {
          double *x = ds->X + (size_t)i * d + (size_t)c * P + k;
          *x = (*x - mu) / sd;
        }
    }
  }
  return DS_OK;
}

static int transform_inputs(const ds_data_spec *s, ds_dataset *tr, ds_dataset *te) {
  if (s->pixel_scale != 0.0 && s->pixel_scale != 1.0) {
    scale_inputs(tr, s->pixel_scale);
    scale_inputs(te, s->pixel_scale);
  }
  if (s->standardize && s->standardize_channels)
    return ds_fail(DS_EINPUT, "data: standardize (per feature) and standardize_channels (per channel) "
                   "both set; give one");
  if (s->standardize) DS_TRY(standardise(tr, te));
  if (s->standardize_channels) DS_TRY(standardise_channels(tr, te, tr->c > 0 ? tr->c : 1));
  if (s->whiten) DS_TRY(whiten(tr, te));
  return DS_OK;
}

/* ------------------------------------------------------------ public */

int ds_data_build(const ds_data_spec *spec, ds_rng *rng, ds_dataset *train, ds_dataset *test) {
  memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  int rc = is_file_kind(spec->kind) ? file_build(spec, rng, train, test)
                                    : ds_data_synth(spec, rng, train, test);
  if (rc == DS_OK && train->n < 1)
    rc = ds_fail(DS_EINPUT, "data: the training set is empty");
  if (rc == DS_OK && ds_data_image_shape(spec, &train->c, &train->h, &train->w) &&
      (long long)train->c * train->h * train->w != train->d_in)
    rc = ds_fail(DS_EINTERNAL, "data: image shape %d x %d x %d but d_in = %d", train->c, train->h,
                 train->w, train->d_in);
  if (rc == DS_OK) {
    test->c = train->c, test->h = train->h, test->w = train->w;
    rc = transform_inputs(spec, train, test);
  }
  if (rc != DS_OK) {
    ds_dataset_free(train);
    ds_dataset_free(test);
  }
  return rc;
}

int ds_data_check(const ds_data_spec *s) {
  if (!is_file_kind(s->kind)) return DS_OK;
  file_tables t;
  DS_TRY(load_tables(s, 2, &t)); /* every value read and checked, none kept */
  int m = t.b.n, rc = t.has_test ? DS_OK : split_size(s, t.a.n, &m);
  /* n_test is capped by the test pool, but an empty pool is no test set at all */
  if (rc == DS_OK && s->n_test > 0 && m == 0)
    rc = t.has_test ? ds_fail(DS_EINPUT, "%s: n_test = %d but the test file has no samples", s->test_path,
                              s->n_test)
                    : ds_fail(DS_EINPUT, "%s: n_test = %d but the test split is empty (test_fraction %g of %d "
                              "samples is 0 samples); raise data.test_fraction or set data.n_test: 0",
                              s->path, s->n_test, s->test_fraction, t.a.n);
  tables_free(&t);
  return rc;
}

int ds_data_probe(const ds_data_spec *s, int *d_in, int *d_out, int *n_avail) {
  if (!is_file_kind(s->kind)) {
    int di = s->d_in, dout = s->d_out, n = s->n_train;
    switch (s->kind) {
      case DS_DATA_RANK2: case DS_DATA_RANK3: case DS_DATA_RANK4: case DS_DATA_FULLRANK:
      case DS_DATA_IMAGE_RANK2:
        dout = 1;
        break;
      case DS_DATA_TWO_GAUSSIANS: di = dout = 1; break;
      case DS_DATA_CIRCLE: di = 2; dout = 1; n = 8; break;
      default: break;
    }
    if (d_in) *d_in = di;
    if (d_out) *d_out = dout;
    if (n_avail) *n_avail = n;
    return DS_OK;
  }
  file_tables t;
  DS_TRY(load_tables(s, 0, &t));
  int rc = DS_OK, n = t.a.n;
  if (!t.has_test) {
    int m = 0;
    rc = split_size(s, t.a.n, &m);
    n -= m;
  }
  if (rc == DS_OK) {
    if (d_in) *d_in = t.a.d;
    if (d_out) *d_out = file_dout(s, &t);
    if (n_avail) *n_avail = n;
  }
  tables_free(&t);
  return rc;
}
