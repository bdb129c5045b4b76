/* layers.c -- per-layer weight spectra and statistics (ds_diag_layers) and
 * the activation spectra of hidden layers (ds_diag_activations). Singular
 * values come from ds_svd_values (pdgesvd on the team grid). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

/* out[0..k) top-k of s (NaN-padded), then fro, s1, s1/s2, stable rank, tail
 * ratio. fro2 is ||W||_F^2 from the entries. */
static void layer_stats(const double *s, int ns, double fro2, int k, double *out) {
  for (int i = 0; i < k; i++) out[i] = i < ns ? s[i] : NAN;
  double s1 = ns > 0 ? s[0] : 0.0, s2 = ns > 1 ? s[1] : 0.0;
  double tail = 0.0, all = 0.0;
  for (int i = ns - 1; i >= 1; i--) tail += s[i] * s[i]; /* small ones first */
  all = tail + s1 * s1;
  out[k + 0] = sqrt(fro2);
  out[k + 1] = s1;
  out[k + 2] = s2 > 0.0 ? s1 / s2 : (s1 > 0.0 ? INFINITY : NAN);
  out[k + 3] = s1 > 0.0 ? fro2 / (s1 * s1) : NAN;
  out[k + 4] = all > 0.0 ? tail / all : NAN;
}

int ds_diag_layers(ds_team *t, const ds_mlp *m, const double *theta, int k, double *out) {
  int L = m->depth, smax = 1, rc = DS_OK;
  if (k < 0) rc = ds_fail(DS_EINPUT, "diag layers: k = %d must be >= 0", k);
  for (int l = 1; l <= L; l++) {
    int r = m->dims[l] < m->dims[l - 1] ? m->dims[l] : m->dims[l - 1];
    smax = r > smax ? r : smax;
  }
  double *s = rc == DS_OK ? ds_calloc((size_t)smax, sizeof *s) : NULL;
  if (rc == DS_OK && !s) rc = DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) {
    free(s);
    return rc;
  }
  for (int l = 1; l <= L && rc == DS_OK; l++) {
    int dout = m->dims[l], din = m->dims[l - 1], ns = dout < din ? dout : din;
    const double *W = theta + m->w_off[l - 1];
    rc = ds_svd_values(t, dout, din, W, dout, s);
    if (rc != DS_OK) {
      ds_context(rc, "diag layers: W_%d", l);
      break;
    }
    double fro2 = 0.0;
    for (size_t q = 0; q < (size_t)dout * din; q++) fro2 += W[q] * W[q];
    layer_stats(s, ns, fro2, k, out + (size_t)(l - 1) * (k + DS_DIAG_LAYER_EXTRA));
  }
  free(s);
  return rc;
}

int ds_diag_activations(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                        ds_mlp_work *w, int k, double *out) {
  int L = m->depth, n = w->n, smax = 1, rc = DS_OK;
  if (k < 0) rc = ds_fail(DS_EINPUT, "diag activations: k = %d must be >= 0", k);
  for (int l = 1; l < L; l++) {
    int r = m->dims[l] < n ? m->dims[l] : n;
    smax = r > smax ? r : smax;
  }
  double *s = rc == DS_OK ? ds_calloc((size_t)smax, sizeof *s) : NULL;
  if (rc == DS_OK && !s) rc = DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) {
    free(s);
    return rc;
  }
  ds_mlp_forward(m, theta, X, w);
  for (int l = 1; l < L && rc == DS_OK; l++) {
    int d = m->dims[l], ns = d < n ? d : n;
    const double *A = w->A[l], *Z = w->Z[l]; /* d_l x n (A == Z for a linear net) */
    rc = ds_svd_values(t, d, n, A, d, s);
    if (rc != DS_OK) {
      ds_context(rc, "diag activations: layer %d", l);
      break;
    }
    double *o = out + (size_t)(l - 1) * (k + 1);
    for (int i = 0; i < k; i++) o[i] = i < ns ? s[i] : NAN;
    double num = 0.0, den = 0.0;
    for (size_t q = 0; q < (size_t)d * n; q++) {
      double r = A[q] - Z[q];
      num += r * r;
      den += Z[q] * Z[q];
    }
    o[k] = den > 0.0 ? num / den : NAN;
  }
  free(s);
  return rc;
}

/* ---- convolutional nets (issue 26) ---- */

int ds_diag_cnn_weight_sv(ds_team *t, const ds_cnn *net, const double *theta, int i, double *s) {
  size_t off;
  int rows, cols;
  ds_cnn_weight(net, i, &off, &rows, &cols);
  /* theta's order (cnn.h): a conv kernel is C_out x C_in s^2 row-major (PyTorch's
   * Conv2d.weight), i.e. its transpose column-major; the readout is column-major.
   * A matrix and its transpose have the same singular values. */
  if (i < ds_cnn_nweights(net) - 1) return ds_svd_values(t, cols, rows, theta + off, cols, s);
  return ds_svd_values(t, rows, cols, theta + off, rows, s);
}

int ds_diag_cnn_layers(ds_team *t, const ds_cnn *net, const double *theta, int k, double *out) {
  int nw = ds_cnn_nweights(net), smax = 1, rc = DS_OK;
  if (k < 0) rc = ds_fail(DS_EINPUT, "diag layers: k = %d must be >= 0", k);
  for (int i = 0; i < nw; i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(net, i, &off, &rows, &cols);
    int r = rows < cols ? rows : cols;
    smax = r > smax ? r : smax;
  }
  double *s = rc == DS_OK ? ds_calloc((size_t)smax, sizeof *s) : NULL;
  if (rc == DS_OK && !s) rc = DS_ENOMEM;
  rc = ds_diag_agree(t, rc);
  for (int i = 0; i < nw && rc == DS_OK; i++) {
    size_t off;
    int rows, cols;
    ds_cnn_weight(net, i, &off, &rows, &cols);
    rc = ds_diag_cnn_weight_sv(t, net, theta, i, s);
    if (rc != DS_OK) {
      ds_context(rc, "diag layers: W_%d of the CNN", i + 1);
      break;
    }
    const double *W = theta + off;
    double fro2 = 0.0;
    for (size_t q = 0; q < (size_t)rows * cols; q++) fro2 += W[q] * W[q];
    layer_stats(s, rows < cols ? rows : cols, fro2, k, out + (size_t)i * (k + DS_DIAG_LAYER_EXTRA));
  }
  free(s);
  return rc;
}
