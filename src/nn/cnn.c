/* cnn.c -- a convolutional net (cnn.h): nconv x [conv, ReLU], global average
 * pooling or flatten, dense readout; forward, backward, loss and gradient,
 * and its initial weights. The layer products are in conv.c; the readout is
 * one DGEMM on the flattened (or pooled) activations, column-major as the
 * MLPs' layers. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/cnn.h"

struct ds_cnn {
  ds_cnn_spec spec;
  int nmax, din, rdin; /* input features, readout fan-in */
  ds_conv_geom g[DS_CNN_MAX_CONV];
  size_t off_w[DS_CNN_MAX_CONV], off_b[DS_CNN_MAX_CONV], off_rw, off_rb, nparams;
  double alpha[DS_CNN_MAX_CONV], ralpha, beta;
  double *Z[DS_CNN_MAX_CONV]; /* pre-activations, cout P x nmax each */
  double *A[DS_CNN_MAX_CONV]; /* relu(Z) */
  double *R;                  /* readout input when pooled (C x nmax) */
  double *F, *dF;             /* dout x nmax */
  double *col;                /* im2col scratch, max P K */
  double *d1, *d2;            /* cotangents, max cout P x nmax */
  double *dR;                 /* readout input cotangent (rdin x nmax) */
};

size_t ds_cnn_nparams(const ds_cnn *m) { return m->nparams; }
int ds_cnn_din(const ds_cnn *m) { return m->din; }
int ds_cnn_readout_din(const ds_cnn *m) { return m->rdin; }

void ds_cnn_free(ds_cnn *m) {
  if (!m) return;
  for (int l = 0; l < m->spec.nconv; l++) {
    free(m->Z[l]);
    free(m->A[l]);
  }
  free(m->R);
  free(m->F);
  free(m->dF);
  free(m->col);
  free(m->d1);
  free(m->d2);
  free(m->dR);
  free(m);
}

ds_cnn *ds_cnn_create(const ds_cnn_spec *spec, int nmax, char *err, size_t errlen) {
  char dummy[8];
  if (!err) err = dummy, errlen = sizeof dummy;
  if (spec->nconv < 1 || spec->nconv > DS_CNN_MAX_CONV || spec->dout < 1 || nmax < 1 ||
      (spec->readout != DS_CNN_FLATTEN && spec->readout != DS_CNN_GAP) ||
      spec->c0 < 1 || spec->h0 < 1 || spec->w0 < 1 || spec->channels < 1 || spec->ksize < 1 ||
      spec->stride < 1 || (spec->param != DS_PARAM_NTK && spec->param != DS_PARAM_STANDARD)) {
    snprintf(err, errlen, "cnn: conv layers 1..%d, outputs, image sizes, channels, kernel and "
             "stride >= 1, readout flatten|gap, parameterisation ntk|standard", DS_CNN_MAX_CONV);
    return NULL;
  }
  ds_cnn *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "cnn: out of memory");
    return NULL;
  }
  m->spec = *spec;
  m->nmax = nmax;
  m->din = spec->c0 * spec->h0 * spec->w0;
  m->beta = spec->param == DS_PARAM_NTK ? spec->beta : 1.0;
  int c = spec->c0, h = spec->h0, w = spec->w0;
  size_t off = 0, maxcol = 1, maxact = (size_t)m->din;
  for (int l = 0; l < spec->nconv; l++) {
    ds_conv_geom *g = &m->g[l];
    if (ds_conv_geom_set(g, c, h, w, spec->channels, spec->ksize, spec->stride, spec->same)) {
      snprintf(err, errlen, "cnn: conv layer %d: %d x %d x %d input, kernel %d, stride %d, "
               "%s padding gives no output", l + 1, c, h, w, spec->ksize, spec->stride,
               spec->same ? "same" : "valid");
      ds_cnn_free(m);
      return NULL;
    }
    size_t K = (size_t)g->cin * g->s * g->s, P = (size_t)g->ho * g->wo;
    size_t cs = ds_conv_col_size(g, nmax);
    m->off_w[l] = off;
    off += K * g->cout;
    m->off_b[l] = off;
    off += g->cout;
    m->alpha[l] = spec->param == DS_PARAM_NTK ? 1.0 / sqrt((double)K) : 1.0;
    if (cs > maxcol) maxcol = cs;
    if (P * g->cout > maxact) maxact = P * g->cout;
    c = g->cout, h = g->ho, w = g->wo;
  }
  m->rdin = spec->readout == DS_CNN_GAP ? c : c * h * w;
  m->off_rw = off;
  off += (size_t)spec->dout * m->rdin;
  m->off_rb = off;
  off += spec->dout;
  m->nparams = off;
  m->ralpha = spec->param == DS_PARAM_NTK ? 1.0 / sqrt((double)m->rdin) : 1.0;
  int ok = 1;
  for (int l = 0; l < spec->nconv; l++) {
    size_t sz = (size_t)m->g[l].cout * m->g[l].ho * m->g[l].wo * nmax;
    ok &= (m->Z[l] = malloc(sz * sizeof(double))) != NULL;
    ok &= (m->A[l] = malloc(sz * sizeof(double))) != NULL;
  }
  ok &= (m->R = malloc((size_t)m->rdin * nmax * sizeof(double))) != NULL;
  ok &= (m->F = malloc((size_t)spec->dout * nmax * sizeof(double))) != NULL;
  ok &= (m->dF = malloc((size_t)spec->dout * nmax * sizeof(double))) != NULL;
  ok &= (m->col = malloc(maxcol * sizeof(double))) != NULL;
  ok &= (m->d1 = malloc(maxact * nmax * sizeof(double))) != NULL;
  ok &= (m->d2 = malloc(maxact * nmax * sizeof(double))) != NULL;
  ok &= (m->dR = malloc((size_t)m->rdin * nmax * sizeof(double))) != NULL;
  if (!ok) {
    snprintf(err, errlen, "cnn: out of memory for %d samples", nmax);
    ds_cnn_free(m);
    return NULL;
  }
  return m;
}

static void fill(double *x, size_t count, int ntk, double fan_in, ds_rng *rng) {
  double bound = 1.0 / sqrt(fan_in);
  for (size_t i = 0; i < count; i++)
    x[i] = ntk ? ds_rng_normal(rng) : bound * (2.0 * ds_rng_uniform(rng) - 1.0);
}

void ds_cnn_init(const ds_cnn *m, ds_rng *rng, double *theta) {
  int ntk = m->spec.param == DS_PARAM_NTK;
  for (int l = 0; l < m->spec.nconv; l++) {
    const ds_conv_geom *g = &m->g[l];
    double K = (double)g->cin * g->s * g->s;
    fill(theta + m->off_w[l], (size_t)K * g->cout, ntk, K, rng);
    fill(theta + m->off_b[l], (size_t)g->cout, ntk, K, rng);
  }
  fill(theta + m->off_rw, (size_t)m->spec.dout * m->rdin, ntk, m->rdin, rng);
  fill(theta + m->off_rb, (size_t)m->spec.dout, ntk, m->rdin, rng);
}

const double *ds_cnn_forward(ds_cnn *m, const double *theta, const double *X, int n) {
  const double *A = X;
  for (int l = 0; l < m->spec.nconv; l++) {
    const ds_conv_geom *g = &m->g[l];
    size_t sz = (size_t)g->cout * g->ho * g->wo * n;
    ds_conv_forward(m->Z[l], theta + m->off_w[l], theta + m->off_b[l], A, g, n, m->alpha[l],
                    m->beta, m->col);
    for (size_t i = 0; i < sz; i++) m->A[l][i] = m->Z[l][i] > 0.0 ? m->Z[l][i] : 0.0;
    A = m->A[l];
  }
  const ds_conv_geom *g = &m->g[m->spec.nconv - 1];
  if (m->spec.readout == DS_CNN_GAP) {
    ds_gap_forward(m->R, A, g->cout, g->ho * g->wo, n);
    A = m->R;
  }
  int dout = m->spec.dout;
  const double *rb = theta + m->off_rb;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < dout; k++) m->F[(size_t)i * dout + k] = m->beta * rb[k];
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dout, n, m->rdin, m->ralpha,
              theta + m->off_rw, dout, A, m->rdin, 1.0, m->F, dout);
  return m->F;
}

int ds_cnn_nweights(const ds_cnn *m) { return m->spec.nconv + 1; }

void ds_cnn_weight(const ds_cnn *m, int i, size_t *off, int *rows, int *cols) {
  if (i < m->spec.nconv) {
    const ds_conv_geom *g = &m->g[i];
    *off = m->off_w[i], *rows = g->cout, *cols = g->cin * g->s * g->s;
  } else {
    *off = m->off_rw, *rows = m->spec.dout, *cols = m->rdin;
  }
}

/* grad NULL: parameters' gradient skipped; dX NULL: inputs' skipped. */
static void cnn_backward(ds_cnn *m, const double *theta, const double *X, int n,
                         const double *dF, double *grad, double *dX) {
  const int L = m->spec.nconv, dout = m->spec.dout;
  const ds_conv_geom *gl = &m->g[L - 1];
  const double *R = m->spec.readout == DS_CNN_GAP ? m->R : m->A[L - 1];
  /* readout: dWr = ralpha dF R^T, dbr = beta dF 1, dR = ralpha Wr^T dF */
  if (grad) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, dout, m->rdin, n, m->ralpha, dF, dout,
                R, m->rdin, 0.0, grad + m->off_rw, dout);
    double *rb = grad + m->off_rb;
    for (int k = 0; k < dout; k++) {
      double sum = 0.0;
      for (int i = 0; i < n; i++) sum += dF[(size_t)i * dout + k];
      rb[k] = m->beta * sum;
    }
  }
  double *dA = m->d1, *spare = m->d2;
  double *dR = m->spec.readout == DS_CNN_GAP ? m->dR : dA;
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, m->rdin, n, dout, m->ralpha,
              theta + m->off_rw, dout, dF, dout, 0.0, dR, m->rdin);
  if (m->spec.readout == DS_CNN_GAP) ds_gap_backward(dA, dR, gl->cout, gl->ho * gl->wo, n);
  for (int l = L - 1; l >= 0; l--) {
    const ds_conv_geom *g = &m->g[l];
    size_t sz = (size_t)g->cout * g->ho * g->wo * n;
    for (size_t i = 0; i < sz; i++)
      if (!(m->Z[l][i] > 0.0)) dA[i] = 0.0; /* dZ in place */
    ds_conv_backward(l ? spare : dX, grad ? grad + m->off_w[l] : NULL,
                     grad ? grad + m->off_b[l] : NULL, dA, theta + m->off_w[l],
                     l ? m->A[l - 1] : X, g, n, m->alpha[l], m->beta, 0, m->col);
    double *t = dA;
    dA = spare, spare = t;
  }
}

void ds_cnn_backward(ds_cnn *m, const double *theta, const double *X, int n, const double *dF,
                     double *grad) {
  cnn_backward(m, theta, X, n, dF, grad, NULL);
}

void ds_cnn_input_grad(ds_cnn *m, const double *theta, const double *X, int n,
                       const double *dF, double *dX) {
  cnn_backward(m, theta, X, n, dF, NULL, dX);
}

double ds_cnn_loss_grad(ds_cnn *m, const double *theta, const double *X, const double *Y, int n,
                        const ds_loss *l, double *grad) {
  const double *F = ds_cnn_forward(m, theta, X, n);
  double loss = ds_loss_eval(l, F, Y, m->spec.dout, n, m->dF);
  ds_cnn_backward(m, theta, X, n, m->dF, grad);
  return loss;
}
