/* cnn.c -- a convolutional net as a sequence of layers (cnn.h): shapes and
 * theta offsets, initial weights, forward, backward (parameters' and inputs'
 * gradients), loss and gradient. The convolution products are in conv.c,
 * pooling and dropout masks in cnnlayers.c; dense layers (hidden and the
 * readout) are one DGEMM each on the flattened activations, column-major as
 * the MLPs' layers.
 *
 * Backward is the chain rule layer by layer, top down: each layer maps the
 * cotangent of its output dy to that of its input dx (and its parameters'
 * gradient), with its input and whatever it saved in the forward pass
 * (pre-activations for ReLU, arg-maxes, masks). For the residual block
 * y = conv2(relu(conv1(r))) + S, r = relu(x):
 *   dW2 from (dy, relu(z1)); dz1 = conv2^T dy * [z1 > 0]; dW1 from (dz1, r);
 *   dr = conv1^T dz1 (+ convS^T dy, its dWs from (dy, r));
 *   dx = dr * [x > 0] (+ dy for the identity shortcut).
 * A conv layer followed by a ReLU runs as one pass (conv.c's
 * ds_conv_forward_relu; backward, ds_conv_backward_mask masks the conv's dx
 * by the ReLU's input and the ReLU's own step is skipped): the same bits. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/cnn.h"

#include "cnn_internal.h"

size_t ds_cnn_nparams(const ds_cnn *m) { return m->nparams; }
int ds_cnn_din(const ds_cnn *m) { return m->din; }
int ds_cnn_readout_din(const ds_cnn *m) { return (int)m->ly[m->nl - 1].din; }

void ds_cnn_free(ds_cnn *m) {
  if (!m) return;
  for (int l = 0; l < m->nl && m->ly; l++) {
    ds_cnn_ly *y = &m->ly[l];
    free(y->out);
    free(y->arg);
    free(y->mask);
    free(y->r);
    free(y->z1);
    free(y->a1);
    free(y->sc);
    free(y->dmask);
    free(y->dscale);
    free(y->weff);
    free(y->veff);
    free(y->pre);
    free(y->acc);
    free(y->racc);
    free(y->dz);
    free(y->rdz);
  }
  free(m->ly);
  free(m->dF);
  free(m->col);
  free(m->d1);
  free(m->d2);
  free(m->s1);
  free(m->s2);
  free(m->rop); /* cnnrop.c's buffers: one allocation */
  free(m);
}

/* Shapes of layer l (input c x h x w): fills y, *c, *h, *w; a message in
 * err when the layer does not fit its input. */
static int layer_shape(ds_cnn_ly *y, int l, int *c, int *h, int *w, int param, char *err,
                       size_t errlen) {
  const ds_cnn_layer *L = &y->L;
  const char *kn = ds_cnn_kind_name(L->kind);
  y->cin = *c, y->hin = *h, y->win = *w;
  int co = *c, ho = *h, wo = *w;
  switch (L->kind) {
  case DS_LAYER_CONV:
  case DS_LAYER_RESBLOCK:
    if (L->cout < 1 || L->size < 1 || L->stride < 1) {
      snprintf(err, errlen, "layer %d (%s): channels, kernel and stride must be >= 1", l + 1, kn);
      return DS_EINPUT;
    }
    if (ds_conv_geom_set(&y->g[0], *c, *h, *w, L->cout, L->size, L->stride, L->same)) {
      snprintf(err, errlen, "layer %d (%s): kernel %d larger than its %d x %d input (%s "
               "padding %d): no output", l + 1, kn, L->size, *h, *w, L->same ? "same" : "valid",
               L->same ? (L->size - 1) / 2 : 0);
      return DS_EINPUT;
    }
    y->nconv = 1;
    co = L->cout, ho = y->g[0].ho, wo = y->g[0].wo;
    if (L->kind == DS_LAYER_RESBLOCK) {
      if (ds_conv_geom_set(&y->g[1], co, ho, wo, co, L->size, 1, L->same)) {
        snprintf(err, errlen, "layer %d (resblock): its second conv (kernel %d) does not fit "
                 "the %d x %d map", l + 1, L->size, ho, wo);
        return DS_EINPUT;
      }
      y->nconv = 2;
      y->shortcut = *c != co || L->stride != 1;
      int sh = *h, sw = *w;
      if (y->shortcut) {
        ds_conv_geom_set(&y->g[2], *c, *h, *w, co, 1, L->stride, 0);
        sh = y->g[2].ho, sw = y->g[2].wo;
        y->nconv = 3;
      }
      if (sh != y->g[1].ho || sw != y->g[1].wo) {
        snprintf(err, errlen, "layer %d (resblock): shortcut shape mismatch: the %s gives %d x "
                 "%d x %d but the convolutions give %d x %d x %d (use an odd kernel with same "
                 "padding)", l + 1, y->shortcut ? "1 x 1 conv shortcut" : "identity shortcut",
                 co, sh, sw, co, y->g[1].ho, y->g[1].wo);
        return DS_EINPUT;
      }
      ho = y->g[1].ho, wo = y->g[1].wo;
    }
    for (int k = 0; k < y->nconv; k++) {
      y->fan[k] = (double)y->g[k].cin * y->g[k].s * y->g[k].s;
      y->alpha[k] = param == DS_PARAM_NTK ? 1.0 / sqrt(y->fan[k]) : 1.0;
    }
    break;
  case DS_LAYER_RELU:
  case DS_LAYER_FLATTEN:
  case DS_LAYER_DROPOUT:
    if (L->kind == DS_LAYER_FLATTEN) {
      if ((long long)*c * *h * *w > INT_MAX) {
        snprintf(err, errlen, "layer %d (flatten): %d x %d x %d features are too many", l + 1,
                 *c, *h, *w);
        return DS_EINPUT;
      }
      co = *c * *h * *w, ho = wo = 1;
    }
    if (L->kind == DS_LAYER_DROPOUT && !(L->p >= 0.0 && L->p < 1.0)) {
      snprintf(err, errlen, "layer %d (dropout): probability %g not in [0, 1)", l + 1, L->p);
      return DS_EINPUT;
    }
    break;
  case DS_LAYER_AVGPOOL:
  case DS_LAYER_MAXPOOL:
    if (L->size < 1 || L->stride < 0) {
      snprintf(err, errlen, "layer %d (%s): window >= 1 and stride >= 0", l + 1, kn);
      return DS_EINPUT;
    }
    if (ds_pool_geom_set(&y->pg, *c, *h, *w, L->size, L->stride)) {
      snprintf(err, errlen, "layer %d (%s): window %d larger than its %d x %d input", l + 1, kn,
               L->size, *h, *w);
      return DS_EINPUT;
    }
    ho = y->pg.ho, wo = y->pg.wo;
    break;
  case DS_LAYER_GAP:
    ho = wo = 1;
    break;
  case DS_LAYER_DAG: {
    if (L->cout < 1 || L->depth < 1 || !(L->p >= 0.0 && L->p < 1.0) ||
        !(L->rdrop >= 0.0 && L->rdrop < 1.0)) {
      snprintf(err, errlen, "layer %d (dag): units and depth must be >= 1 and the edge drop "
               "probabilities (block, readout) in [0, 1), got %d, %d, %g, %g", l + 1, L->cout,
               L->depth, L->p, L->rdrop);
      return DS_EINPUT;
    }
    long long din = (long long)*c * *h * *w, T = din + (long long)L->depth * L->cout;
    if (T > INT_MAX || (double)L->cout * (double)T * L->depth > 1e15) {
      snprintf(err, errlen, "layer %d (dag): %lld inputs + %d x %d units are too many", l + 1,
               din, L->depth, L->cout);
      return DS_EINPUT;
    }
    y->ndag = L->depth;
    y->dagP = 0;
    for (int k = 0; k < L->depth; k++)
      y->dagP += (size_t)L->cout * (size_t)(din + (long long)k * L->cout);
    co = (int)T, ho = wo = 1;
    break;
  }
  case DS_LAYER_DENSE:
    if (L->cout < 1) {
      snprintf(err, errlen, "layer %d (dense): units must be >= 1", l + 1);
      return DS_EINPUT;
    }
    co = L->cout, ho = wo = 1;
    y->fan[0] = (double)*c * *h * *w;
    y->alpha[0] = param == DS_PARAM_NTK ? 1.0 / sqrt(y->fan[0]) : 1.0;
    break;
  default:
    snprintf(err, errlen, "layer %d: unknown kind %d", l + 1, L->kind);
    return DS_EINPUT;
  }
  y->cout = co, y->hout = ho, y->wout = wo;
  y->din = (size_t)*c * *h * *w, y->dout = (size_t)co * ho * wo;
  *c = co, *h = ho, *w = wo;
  return DS_OK;
}

/* The readout's edge drop probability (a DAG layer's rdrop; the block must
 * be the last layer, whose output the readout reads), or -1 with a message. */
static double readout_drop(const ds_cnn_layer *layers, int nlayers, char *err, size_t errlen) {
  for (int l = 0; l < nlayers; l++)
    if (layers[l].kind == DS_LAYER_DAG && layers[l].rdrop != 0.0 && l != nlayers - 1) {
      snprintf(err, errlen, "layer %d (dag): a masked readout (readout drop probability %g) "
               "needs the block to be the last layer (the readout reads its output); %d layers "
               "follow it", l + 1, layers[l].rdrop, nlayers - 1 - l);
      return -1.0;
    }
  return nlayers > 0 && layers[nlayers - 1].kind == DS_LAYER_DAG ? layers[nlayers - 1].rdrop : 0.0;
}

int ds_cnn_layers_check(const ds_cnn_layer *layers, int nlayers, int c0, int h0, int w0,
                        int dout, ds_cnn_cost *cost, char *err, size_t errlen) {
  char dummy[8];
  if (!err) err = dummy, errlen = sizeof dummy;
  ds_cnn_cost z = {0};
  if (nlayers < 0 || nlayers > DS_CNN_MAX_LAYERS || dout < 1 || c0 < 1 || h0 < 1 || w0 < 1 ||
      (long long)c0 * h0 * w0 > INT_MAX) {
    snprintf(err, errlen, "cnn: 0..%d layers, outputs and image sizes >= 1, C H W <= %d",
             DS_CNN_MAX_LAYERS, INT_MAX);
    return DS_EINPUT;
  }
  int c = c0, h = h0, w = w0, has_res = 0;
  double rp = readout_drop(layers, nlayers, err, errlen);
  if (rp < 0.0) return DS_EINPUT;
  for (int l = 0; l <= nlayers; l++) {
    ds_cnn_ly y = {0};
    y.L = l < nlayers ? layers[l] : (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = dout, .p = rp};
    if (layer_shape(&y, l, &c, &h, &w, DS_PARAM_NTK, err, errlen)) return DS_EINPUT;
    for (int k = 0; k < y.nconv; k++) {
      const ds_conv_geom *g = &y.g[k];
      double P = (double)g->ho * g->wo;
      z.params += (double)g->cout * g->cin * g->s * g->s + g->cout;
      z.macs += g->cout * P * g->cin * g->s * g->s;
      z.col = fmax(z.col, (double)ds_conv_col_size(g, INT_MAX)); /* a full block */
    }
    int kind = y.L.kind;
    z.outs += (double)y.dout + (kind == DS_LAYER_RESBLOCK ? (double)y.din + y.dout : 0.0);
    if (kind == DS_LAYER_DAG) {
      z.dag += (double)y.dagP;
      z.params += (double)y.dagP;
      z.macs += (double)y.dagP;
      z.acts += (double)y.L.depth * y.L.cout; /* pre-activations (the output below) */
    }
    if (kind == DS_LAYER_DENSE) {
      z.params += (double)y.cout * (double)y.din + (y.L.nobias ? 0 : y.cout);
      z.macs += (double)y.cout * (double)y.din;
      if (y.L.p > 0.0) z.dag += (double)y.cout * (double)y.din; /* a masked readout */
    }
    if (l == nlayers) break;
    if (kind == DS_LAYER_RESBLOCK)
      z.acts += (double)y.din + (3.0 + y.shortcut) * (double)y.dout;
    else if (kind != DS_LAYER_FLATTEN && kind != DS_LAYER_GAP)
      z.acts += (double)y.dout;
    z.big = fmax(z.big, (double)y.dout);
    has_res |= kind == DS_LAYER_RESBLOCK;
  }
  if (has_res) z.acts += 2.0 * fmax(z.big, (double)c0 * h0 * w0); /* backward scratch */
  if (cost) *cost = z;
  return DS_OK;
}

static double *dalloc(size_t n, int *ok) {
  double *p = malloc((n ? n : 1) * sizeof(double));
  *ok &= p != NULL;
  return p;
}

ds_cnn *ds_cnn_create_layers(const ds_cnn_layer *layers, int nlayers, int c0, int h0, int w0,
                             int dout, int param, double beta, int nmax, char *err,
                             size_t errlen) {
  char dummy[8];
  if (!err) err = dummy, errlen = sizeof dummy;
  if (nlayers < 0 || nlayers > DS_CNN_MAX_LAYERS || dout < 1 || nmax < 1 || c0 < 1 || h0 < 1 ||
      w0 < 1 || (long long)c0 * h0 * w0 > INT_MAX ||
      (param != DS_PARAM_NTK && param != DS_PARAM_STANDARD)) {
    snprintf(err, errlen, "cnn: 0..%d layers, outputs, samples and image sizes >= 1, "
             "parameterisation ntk|standard", DS_CNN_MAX_LAYERS);
    return NULL;
  }
  double rp = readout_drop(layers, nlayers, err, errlen);
  if (rp < 0.0) return NULL;
  ds_cnn *m = calloc(1, sizeof *m);
  if (m) m->ly = calloc((size_t)nlayers + 1, sizeof *m->ly);
  if (!m || !m->ly) {
    snprintf(err, errlen, "cnn: out of memory");
    ds_cnn_free(m);
    return NULL;
  }
  m->nl = nlayers + 1, m->dout = dout, m->param = param, m->nmax = nmax;
  m->din = c0 * h0 * w0;
  m->beta = param == DS_PARAM_NTK ? beta : 1.0;
  for (int l = 0; l < nlayers; l++) m->ly[l].L = layers[l];
  m->ly[nlayers].L = (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = dout, .p = rp}; /* the readout */
  m->ly[nlayers].masked = rp > 0.0;
  for (int l = 0; l < nlayers; l++) m->ly[l].rowmajor = layers[l].kind == DS_LAYER_DENSE;
  int c = c0, h = h0, w = w0;
  size_t off = 0, maxcol = 1, maxact = (size_t)m->din;
  for (int l = 0; l < m->nl; l++) {
    ds_cnn_ly *y = &m->ly[l];
    if (layer_shape(y, l, &c, &h, &w, param, err, errlen)) {
      ds_cnn_free(m);
      return NULL;
    }
    for (int k = 0; k < y->nconv; k++) { /* conv kernels: C_out x C_in s^2, then biases */
      y->off_w[k] = off;
      off += (size_t)y->fan[k] * y->g[k].cout;
      y->off_b[k] = off;
      off += y->g[k].cout;
      size_t cs = ds_conv_col_size(&y->g[k], nmax);
      if (cs > maxcol) maxcol = cs;
    }
    if (y->L.kind == DS_LAYER_DAG) {
      y->off_w[0] = y->off_b[0] = off;
      off += y->dagP;
    }
    if (y->L.kind == DS_LAYER_DENSE) {
      y->off_w[0] = off;
      off += y->din * y->cout;
      y->off_b[0] = off;
      if (!y->L.nobias) off += y->cout;
    }
    if (y->dout > maxact) maxact = y->dout;
  }
  m->nparams = off;
  int ok = 1;
  for (int l = 0; l < m->nl; l++) {
    ds_cnn_ly *y = &m->ly[l];
    int kind = y->L.kind;
    if (kind != DS_LAYER_FLATTEN) y->out = dalloc(y->dout * nmax, &ok);
    if (kind == DS_LAYER_MAXPOOL) {
      y->arg = malloc(y->dout * nmax * sizeof(int));
      ok &= y->arg != NULL;
    }
    if (kind == DS_LAYER_DROPOUT) y->mask = dalloc(y->dout * nmax, &ok);
    if (kind == DS_LAYER_RESBLOCK) {
      y->r = dalloc(y->din * nmax, &ok);
      y->z1 = dalloc(y->dout * nmax, &ok);
      y->a1 = dalloc(y->dout * nmax, &ok);
      if (y->shortcut) y->sc = dalloc(y->dout * nmax, &ok);
    }
    if (kind == DS_LAYER_DAG) {
      size_t Dm = (size_t)y->ndag * y->L.cout, mn = (size_t)y->L.cout * nmax;
      y->dmask = dalloc(y->dagP, &ok);
      y->dscale = dalloc(Dm, &ok);
      y->weff = dalloc(y->dagP, &ok);
      y->veff = dalloc(y->dagP, &ok);
      y->pre = dalloc(Dm * nmax, &ok);
      y->acc = dalloc(y->dout * nmax, &ok);
      y->racc = dalloc(y->dout * nmax, &ok);
      y->dz = dalloc(mn, &ok);
      y->rdz = dalloc(mn, &ok);
      if (ok) ds_dag_reset(y, param == DS_PARAM_NTK);
    }
    if (y->masked) { /* the masked readout's mask, scales and effective weights */
      size_t P = y->din * (size_t)y->cout;
      y->dmask = dalloc(P, &ok);
      y->dscale = dalloc((size_t)y->cout, &ok);
      y->weff = dalloc(P, &ok);
      y->veff = dalloc(P, &ok);
      if (ok) ds_mdense_reset(y, y->alpha[0]);
    }
  }
  m->dF = dalloc((size_t)dout * nmax, &ok);
  m->col = dalloc(maxcol, &ok);
  m->d1 = dalloc(maxact * nmax, &ok);
  m->d2 = dalloc(maxact * nmax, &ok);
  int has_res = 0;
  for (int l = 0; l < m->nl; l++) has_res |= m->ly[l].L.kind == DS_LAYER_RESBLOCK;
  if (has_res) { /* the residual blocks' backward scratch */
    m->s1 = dalloc(maxact * nmax, &ok);
    m->s2 = dalloc(maxact * nmax, &ok);
  }
  if (!ok) {
    snprintf(err, errlen, "cnn: out of memory for %d samples", nmax);
    ds_cnn_free(m);
    return NULL;
  }
  return m;
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
  ds_cnn_layer layers[2 * DS_CNN_MAX_CONV + 1];
  int nl = ds_cnn_spec_layers(spec, layers);
  char msg[256];
  ds_cnn *m = ds_cnn_create_layers(layers, nl, spec->c0, spec->h0, spec->w0, spec->dout,
                                   spec->param, spec->beta, nmax, msg, sizeof msg);
  if (!m) { /* name the conv layer as before ("conv layer 2: ... gives no output") */
    int l = 0;
    const char *rest = strstr(msg, "): ");
    if (sscanf(msg, "layer %d", &l) == 1 && l % 2 == 1 && rest)
      snprintf(err, errlen, "cnn: conv layer %d: %s", (l + 1) / 2, rest + 3);
    else
      snprintf(err, errlen, "cnn: %s", msg);
  }
  return m;
}

/* count draws in theta order: std > 0: N(0, (scale std)^2); else ntk:
 * N(0, scale^2), standard: U(+-scale / sqrt(fan_in)). scale 1, std 0 give
 * the same bits as before the two knobs existed (x 1.0 is exact). */
static void fill(double *x, size_t count, int ntk, double fan_in, ds_rng *rng, double scale,
                 double std) {
  double bound = 1.0 / sqrt(fan_in);
  for (size_t i = 0; i < count; i++)
    x[i] = std > 0 ? scale * std * ds_rng_normal(rng)
           : ntk   ? scale * ds_rng_normal(rng)
                   : scale * (bound * (2.0 * ds_rng_uniform(rng) - 1.0));
}

void ds_cnn_init_scaled(const ds_cnn *m, ds_rng *rng, double *theta, double scale, double std) {
  int ntk = m->param == DS_PARAM_NTK;
  for (int l = 0; l < m->nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    for (int k = 0; k < y->nconv; k++) {
      fill(theta + y->off_w[k], (size_t)y->fan[k] * y->g[k].cout, ntk, y->fan[k], rng, scale, std);
      fill(theta + y->off_b[k], (size_t)y->g[k].cout, ntk, y->fan[k], rng, scale, std);
    }
    if (y->L.kind == DS_LAYER_DAG) ds_dag_init(y, rng, theta + y->off_w[0], ntk, scale, std);
    if (y->L.kind == DS_LAYER_DENSE) {
      if (y->masked) /* its mask first, then W (the masked entries 0) */
        ds_mdense_init(y, rng, theta + y->off_w[0], ntk, scale, std);
      else
        fill(theta + y->off_w[0], y->din * y->cout, ntk, y->fan[0], rng, scale, std);
      if (!y->L.nobias) fill(theta + y->off_b[0], (size_t)y->cout, ntk, y->fan[0], rng, scale, std);
    }
  }
}

void ds_cnn_init(const ds_cnn *m, ds_rng *rng, double *theta) {
  ds_cnn_init_scaled(m, rng, theta, 1.0, 0.0);
}

void ds_cnn_dropout(ds_cnn *m, int on, uint64_t seed, uint64_t step, const int *ids) {
  m->drop_on = on, m->drop_seed = seed, m->drop_step = step, m->drop_ids = ids;
}

int ds_cnn_has_dropout(const ds_cnn *m) {
  for (int l = 0; l < m->nl; l++)
    if (m->ly[l].L.kind == DS_LAYER_DROPOUT && m->ly[l].L.p > 0.0) return 1;
  return 0;
}

int ds_cnn_nlayers(const ds_cnn *m) { return m->nl; }
void ds_cnn_layer_shape(const ds_cnn *m, int l, int *c, int *h, int *w) {
  *c = m->ly[l].cout, *h = m->ly[l].hout, *w = m->ly[l].wout;
}

static void relu(double *y, const double *x, size_t count) {
  for (size_t i = 0; i < count; i++) y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

/* F (rows x n) = alpha W x + beta b (b NULL: none), W rows x cols column-major
 * (rm: row-major, i.e. the column-major cols x rows W^T) */
static void dense_forward(double *F, const double *W, const double *b, const double *x, int rows,
                          int cols, int n, double alpha, double beta, int rm) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < rows; k++) F[(size_t)i * rows + k] = b ? beta * b[k] : 0.0;
  cblas_dgemm(CblasColMajor, rm ? CblasTrans : CblasNoTrans, CblasNoTrans, rows, n, cols, alpha,
              W, rm ? cols : rows, x, cols, 1.0, F, rows);
}

static void layer_forward(ds_cnn *m, int l, const double *theta, const double *x, int n) {
  ds_cnn_ly *y = &m->ly[l];
  const size_t cnt = y->dout * n;
  y->y = y->out;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    ds_conv_forward(y->out, theta + y->off_w[0], theta + y->off_b[0], x, &y->g[0], n,
                    y->alpha[0], m->beta, m->col);
    break;
  case DS_LAYER_RELU:
    relu(y->out, x, cnt);
    break;
  case DS_LAYER_AVGPOOL:
    ds_avgpool_forward(y->out, x, &y->pg, n);
    break;
  case DS_LAYER_MAXPOOL:
    ds_maxpool_forward(y->out, y->arg, x, &y->pg, n);
    break;
  case DS_LAYER_GAP:
    ds_gap_forward(y->out, x, y->cin, y->hin * y->win, n);
    break;
  case DS_LAYER_FLATTEN:
    y->y = x;
    break;
  case DS_LAYER_DENSE: { /* a masked readout: its s .* M .* W with scale 1 */
    double al;
    const double *W = ds_cnn_dense_wv(y, theta + y->off_w[0], 0, 1, &al);
    dense_forward(y->out, W, y->L.nobias ? NULL : theta + y->off_b[0], x, y->cout, (int)y->din, n,
                  al, m->beta, y->rowmajor);
    break;
  }
  case DS_LAYER_DAG:
    ds_dag_forward(y, theta + y->off_w[0], x, n);
    break;
  case DS_LAYER_DROPOUT:
    if (!m->drop_on || y->L.p == 0.0) {
      y->y = x;
      break;
    }
    ds_dropout_mask(y->mask, y->dout, n, y->L.p, m->drop_seed, m->drop_step, m->drop_ids, l);
    for (size_t i = 0; i < cnt; i++) y->out[i] = x[i] * y->mask[i];
    break;
  case DS_LAYER_RESBLOCK:
    relu(y->r, x, y->din * n);
    ds_conv_forward(y->z1, theta + y->off_w[0], theta + y->off_b[0], y->r, &y->g[0], n,
                    y->alpha[0], m->beta, m->col);
    relu(y->a1, y->z1, cnt);
    ds_conv_forward(y->out, theta + y->off_w[1], theta + y->off_b[1], y->a1, &y->g[1], n,
                    y->alpha[1], m->beta, m->col);
    const double *s = x;
    if (y->shortcut) {
      ds_conv_forward(y->sc, theta + y->off_w[2], theta + y->off_b[2], y->r, &y->g[2], n,
                      y->alpha[2], m->beta, m->col);
      s = y->sc;
    }
    for (size_t i = 0; i < cnt; i++) y->out[i] += s[i];
    break;
  }
}

/* a conv layer followed by a ReLU: the pair runs as one pass (conv.c's
 * ds_conv_forward_relu, ds_conv_backward_mask; the same bits) */
static int conv_relu(const ds_cnn *m, int l) {
  return l + 1 < m->nl && m->ly[l].L.kind == DS_LAYER_CONV &&
         m->ly[l + 1].L.kind == DS_LAYER_RELU;
}

const double *ds_cnn_forward(ds_cnn *m, const double *theta, const double *X, int n) {
  const double *x = X;
  for (int l = 0; l < m->nl; l++) {
    if (conv_relu(m, l)) { /* conv l writes its output and relu l + 1's */
      ds_cnn_ly *y = &m->ly[l], *r = &m->ly[l + 1];
      ds_conv_forward_relu(y->out, r->out, theta + y->off_w[0], theta + y->off_b[0], x,
                           &y->g[0], n, y->alpha[0], m->beta, m->col);
      y->y = y->out, r->y = r->out;
      x = r->y;
      l++;
      continue;
    }
    layer_forward(m, l, theta, x, n);
    x = m->ly[l].y;
  }
  return x;
}

int ds_cnn_nweights(const ds_cnn *m) {
  int count = 0;
  for (int l = 0; l < m->nl; l++)
    count += m->ly[l].nconv + m->ly[l].ndag + (m->ly[l].L.kind == DS_LAYER_DENSE);
  return count;
}

void ds_cnn_weight(const ds_cnn *m, int i, size_t *off, int *rows, int *cols) {
  for (int l = 0; l < m->nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    if (i < y->nconv) {
      *off = y->off_w[i], *rows = y->g[i].cout, *cols = (int)y->fan[i];
      return;
    }
    i -= y->nconv;
    if (i < y->ndag) {
      *off = y->off_w[0] + ds_dag_woff(y, i), *rows = y->L.cout;
      *cols = (int)y->din + i * y->L.cout;
      return;
    }
    i -= y->ndag;
    if (y->L.kind == DS_LAYER_DENSE) {
      if (i == 0) {
        *off = y->off_w[0], *rows = y->cout, *cols = (int)y->din;
        return;
      }
      i--;
    }
  }
  *off = 0, *rows = *cols = 0;
}

/* Layer l's backward: dy (dout x n) -> dx (din x n, NULL: not needed), its
 * parameters' gradient into grad (NULL: skipped). dx may be dy for the
 * elementwise layers (in place). x: the layer's input. */
static void layer_backward(ds_cnn *m, int l, const double *theta, const double *x, int n,
                           double *dy, double *dx, double *grad, const double *mask) {
  ds_cnn_ly *y = &m->ly[l];
  const size_t cnt = y->dout * n, cin = y->din * n;
  double *gw = grad ? grad + y->off_w[0] : NULL, *gb = grad ? grad + y->off_b[0] : NULL;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    ds_conv_backward_mask(dx, gw, gb, dy, theta + y->off_w[0], x, mask, &y->g[0], n,
                          y->alpha[0], m->beta, 0, m->col);
    break;
  case DS_LAYER_RELU: /* y = relu(x): dx = dy [x > 0] */
    if (dx)
      for (size_t i = 0; i < cnt; i++) dx[i] = x[i] > 0.0 ? dy[i] : 0.0;
    break;
  case DS_LAYER_AVGPOOL:
    if (dx) ds_avgpool_backward(dx, dy, &y->pg, n);
    break;
  case DS_LAYER_MAXPOOL:
    if (dx) ds_maxpool_backward(dx, dy, y->arg, &y->pg, n);
    break;
  case DS_LAYER_GAP:
    if (dx) ds_gap_backward(dx, dy, y->cin, y->hin * y->win, n);
    break;
  case DS_LAYER_DAG:
    ds_dag_backward(y, dy, dx, gw, n);
    break;
  case DS_LAYER_FLATTEN:
    if (dx && dx != dy) memcpy(dx, dy, cnt * sizeof *dx);
    break;
  case DS_LAYER_DROPOUT:
    if (dx) {
      int on = m->drop_on && y->L.p > 0.0;
      for (size_t i = 0; i < cnt; i++) dx[i] = on ? dy[i] * y->mask[i] : dy[i];
    }
    break;
  case DS_LAYER_DENSE: { /* dW = alpha dy x^T, db = beta dy 1, dx = alpha W^T dy; a masked
                          * readout: E = s .* M .* W of the forward for alpha W, dW masked */
    const int rows = y->cout, cols = (int)y->din;
    double al;
    const double *W = ds_cnn_dense_wv(y, theta + y->off_w[0], 0, 0, &al);
    if (grad) {
      if (y->rowmajor) /* dW^T = alpha x dy^T, column-major cols x rows */
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, cols, rows, n, al, x, cols, dy, rows,
                    0.0, gw, cols);
      else
        cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, rows, cols, n, al, dy, rows, x, cols,
                    0.0, gw, rows);
      if (y->masked) ds_mdense_gmask(y, gw);
      for (int k = 0; k < rows && !y->L.nobias; k++) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) sum += dy[(size_t)i * rows + k];
        gb[k] = m->beta * sum;
      }
    }
    if (dx)
      cblas_dgemm(CblasColMajor, y->rowmajor ? CblasNoTrans : CblasTrans, CblasNoTrans, cols, n,
                  rows, al, W, y->rowmajor ? cols : rows, dy, rows, 0.0, dx, cols);
    break;
  }
  case DS_LAYER_RESBLOCK: {
    double *da1 = m->s1, *dr2 = m->s2;
    ds_conv_backward(da1, grad ? grad + y->off_w[1] : NULL, grad ? grad + y->off_b[1] : NULL, dy,
                     theta + y->off_w[1], y->a1, &y->g[1], n, y->alpha[1], m->beta, 0, m->col);
    for (size_t i = 0; i < cnt; i++)
      if (!(y->z1[i] > 0.0)) da1[i] = 0.0; /* dz1 in place */
    ds_conv_backward(dx, gw, gb, da1, theta + y->off_w[0], y->r, &y->g[0], n, y->alpha[0],
                     m->beta, 0, m->col);
    if (y->shortcut)
      ds_conv_backward(dx ? dr2 : NULL, grad ? grad + y->off_w[2] : NULL,
                       grad ? grad + y->off_b[2] : NULL, dy, theta + y->off_w[2], y->r, &y->g[2],
                       n, y->alpha[2], m->beta, 0, m->col);
    if (dx)
      for (size_t i = 0; i < cin; i++) {
        double d = y->shortcut ? dx[i] + dr2[i] : dx[i];
        dx[i] = (x[i] > 0.0 ? d : 0.0) + (y->shortcut ? 0.0 : dy[i]);
      }
    break;
  }
  }
}

/* grad NULL: parameters' gradient skipped; dX NULL: inputs' skipped. */
static void cnn_backward(ds_cnn *m, const double *theta, const double *X, int n,
                         const double *dF, double *grad, double *dX) {
  double *dy = (double *)dF; /* dF is the caller's: never written */
  for (int l = m->nl - 1; l >= 0; l--) {
    const ds_cnn_ly *y = &m->ly[l];
    int kind = y->L.kind;
    int inplace = kind == DS_LAYER_RELU || kind == DS_LAYER_FLATTEN || kind == DS_LAYER_DROPOUT;
    int has_params = y->nconv > 0 || kind == DS_LAYER_DENSE || kind == DS_LAYER_DAG;
    if (l == 0 && !dX && !(grad && has_params)) break;
    double *dx = l == 0 ? dX : (inplace && dy != dF) ? dy : dy == m->d1 ? m->d2 : m->d1;
    /* relu l - 1 (not the first layer) then conv l: conv l's dx masked by the relu's
     * input in the same pass; the relu's backward (in place, dx = dy) is then done */
    const int fused = l >= 2 && kind == DS_LAYER_CONV && m->ly[l - 1].L.kind == DS_LAYER_RELU;
    layer_backward(m, l, theta, l ? m->ly[l - 1].y : X, n, dy, dx, grad,
                   fused ? m->ly[l - 2].y : NULL);
    dy = dx;
    if (fused) l--;
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
  double loss = ds_loss_eval(l, F, Y, m->dout, n, m->dF);
  ds_cnn_backward(m, theta, X, n, m->dF, grad);
  return loss;
}
