/* cnnrop.c -- Pearlmutter's R-operator for the CNNs of cnn.c (issue 26):
 * Hessian-vector products of the loss, ds_cnn_hvp, and Jacobian-vector
 * products of the outputs, ds_cnn_jvp (the tangent forward alone; cnn.h).
 *
 * R{.} is the directional derivative along v (laid out like theta: V_W, c per
 * layer). After the forward pass at theta (which stores every layer's output,
 * the residual blocks' internals, the max pools' arg-maxes and the dropout
 * masks), the tangent forward maps R{x} (R{X} = 0) layer by layer:
 *   conv     R{Z} = alpha (conv(V_W, A) + conv(W, R{A})) + beta c
 *   dense    R{Z} = alpha (V a + W R{a}) + beta c (a masked readout: W, V ->
 *            s .* M .* W, s .* M .* V, alpha -> 1; its R{dW} masked by s .* M)
 *   relu     R{y} = [x > 0] R{x}                 (ReLU'' = 0 a.e.)
 *   avgpool, gap, flatten: the same linear map on R{x}
 *   maxpool  R{y} = R{x} at the forward's arg-max (frozen)
 *   dropout  R{y} = mask R{x} (the forward's mask; the identity when off)
 *   dag      the block's chain (cnnlayers.c: R{z_k} = R{E_k} c_k + E_k R{c_k})
 *   resblock R{r} = [x > 0] R{x}, R{z1} = conv1 rule, R{a1} = [z1 > 0] R{z1},
 *            R{y} = conv2 rule on (a1, R{a1}) + (R{x} | convS rule on (r, R{r})).
 * Then R{F} = the readout's R{Z}, G = dL/dF, R{G} = (d2L/dF2) R{F}
 * (ds_loss_hess_apply: squared error, lp, cross-entropy), and the R-backward
 * carries (dy, R{dy}) top down, each parametrised layer adding R{grad}:
 *   conv     dx = B_in(dy; W), R{dx} = B_in(R{dy}; W) + B_in(dy; V_W),
 *            R{dW} = B_w(R{dy}; x) + B_w(dy; R{x}), R{db} = beta sum R{dy}
 *            (B_in, B_w: ds_conv_backward's input and weight parts)
 *   dense    the same with B_in(d; W) = alpha W^T d, B_w(d; x) = alpha d x^T
 *   relu, pools, gap, flatten, dropout: their backward applied to dy and to
 *            R{dy} alike (masks and arg-maxes frozen)
 *   dag      cnnlayers.c's R-backward of the block (masks frozen, gradients
 *            masked)
 *   resblock the chain of cnn.c's backward with the conv rule at each conv
 *            and [z1 > 0], [x > 0] applied to both.
 * Hv = R{grad}: the exact Hessian of L(F(theta)) times v (ReLU's second
 * derivative is 0 away from the kinks; max pooling's choice is frozen).
 * cnnquad.c's f_quad gradient runs the same R-backward with R{dF} = 0 and the
 * plain gradient added: the layers without parameters, the DAG block's R part,
 * the dense layers' weight and input sides and the residual blocks' last step
 * are the shared routines below (ds_cnn_rbackward_common and the like,
 * cnn_internal.h). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_internal.h"

typedef struct {
  int n;          /* columns the buffers hold */
  double **Ry;    /* per layer: R{y} (dout x n) */
  double **Rr;    /* resblock: R{relu(x)} (din x n) */
  double **Ra1;   /* resblock: R{a1} (dout x n) */
  double *R0;     /* zeros (din x n): R{X} */
  double *d[2], *Rd[2]; /* cotangents and their R, ping-pong (maxact x n) */
  double *t1, *t2, *t3, *t4; /* scratch (maxact x n; t4 spare) */
} rop_buf;

static rop_buf *rop_get(ds_cnn *m) {
  if (m->rop) return m->rop;
  int n = m->nmax, nl = m->nl;
  size_t maxact = (size_t)m->din, total = 0;
  for (int l = 0; l < nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    if (y->dout > maxact) maxact = y->dout;
    if (y->din > maxact) maxact = y->din;
    total += y->dout;
    if (y->L.kind == DS_LAYER_RESBLOCK) total += y->din + y->dout;
  }
  total += (size_t)m->din + 8 * maxact;
  /* one allocation (cnn.c's ds_cnn_free frees it): the struct, 3 nl
   * pointers, then the doubles (both sizes are multiples of 8 bytes) */
  size_t head = sizeof(rop_buf) + 3 * (size_t)nl * sizeof(double *);
  rop_buf *b = calloc(1, head + total * n * sizeof(double));
  if (!b) return NULL;
  b->Ry = (double **)(b + 1);
  b->Rr = b->Ry + nl, b->Ra1 = b->Ry + 2 * nl, b->n = n;
  double *q = (double *)((char *)b + head);
  for (int l = 0; l < nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    b->Ry[l] = q, q += y->dout * n;
    if (y->L.kind == DS_LAYER_RESBLOCK) {
      b->Rr[l] = q, q += y->din * n;
      b->Ra1[l] = q, q += y->dout * n;
    }
  }
  b->R0 = q, q += (size_t)m->din * n;
  double **bufs[8] = {&b->d[0], &b->d[1], &b->Rd[0], &b->Rd[1], &b->t1, &b->t2, &b->t3, &b->t4};
  for (int k = 0; k < 8; k++) *bufs[k] = q, q += maxact * n;
  m->rop = b;
  return b;
}

static void add(double *y, const double *x, size_t cnt) {
  for (size_t i = 0; i < cnt; i++) y[i] += x[i];
}
static void mask_pos(double *y, const double *x, const double *gate, size_t cnt) {
  for (size_t i = 0; i < cnt; i++) y[i] = gate[i] > 0.0 ? x[i] : 0.0;
}

/* Conv tangent: RZ = alpha (conv(V, A) + conv(W, RA)) + beta c; tmp scratch. */
static void conv_r(ds_cnn *m, double *RZ, const double *W, const double *V, const double *c,
                   const double *A, const double *RA, const ds_conv_geom *g, int n, double alpha,
                   double *tmp) {
  size_t cnt = (size_t)g->cout * g->ho * g->wo * n;
  ds_conv_forward(RZ, V, c, A, g, n, alpha, m->beta, m->col);
  ds_conv_forward(tmp, W, NULL, RA, g, n, alpha, m->beta, m->col);
  add(RZ, tmp, cnt);
}

/* Conv R-backward: dx (NULL: skipped) = B_in(dy; W), Rdx = B_in(Rdy; W) +
 * B_in(dy; V), RgW (+)= B_w(Rdy; x) + B_w(dy; Rx), Rgb (+)= beta sum Rdy;
 * accumulate as ds_conv_backward's. tmp: din x n scratch. */
static void conv_rb(ds_cnn *m, double *dx, double *Rdx, double *RgW, double *Rgb,
                    const double *dy, const double *Rdy, const double *W, const double *V,
                    const double *x, const double *Rx, const ds_conv_geom *g, int n,
                    double alpha, int accumulate, double *tmp) {
  ds_conv_backward(Rdx, RgW, Rgb, Rdy, W, x, g, n, alpha, m->beta, accumulate, m->col);
  ds_conv_backward(Rdx ? tmp : NULL, RgW, NULL, dy, V, Rx, g, n, alpha, m->beta, 1, m->col);
  if (Rdx) add(Rdx, tmp, (size_t)g->cin * g->h * g->w * n);
  if (dx) ds_conv_backward(dx, NULL, NULL, dy, W, x, g, n, alpha, m->beta, 0, m->col);
}

/* Tangent forward of layer l: Ry from (x, Rx). */
static void layer_r(ds_cnn *m, rop_buf *b, int l, const double *theta, const double *v,
                    const double *x, const double *Rx, int n) {
  ds_cnn_ly *y = &m->ly[l];
  double *Ry = b->Ry[l];
  const size_t cnt = y->dout * n;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    conv_r(m, Ry, theta + y->off_w[0], v + y->off_w[0], v + y->off_b[0], x, Rx, &y->g[0], n,
           y->alpha[0], b->t1);
    break;
  case DS_LAYER_RELU:
    mask_pos(Ry, Rx, x, cnt);
    break;
  case DS_LAYER_AVGPOOL:
    ds_avgpool_forward(Ry, Rx, &y->pg, n);
    break;
  case DS_LAYER_MAXPOOL: {
    const size_t din = (size_t)y->pg.h * y->pg.w, dout = (size_t)y->pg.ho * y->pg.wo;
    for (size_t cc = 0; cc < (size_t)n * y->pg.c; cc++)
      for (size_t o = 0; o < dout; o++)
        Ry[cc * dout + o] = Rx[cc * din + (size_t)y->arg[cc * dout + o]];
    break;
  }
  case DS_LAYER_GAP:
    ds_gap_forward(Ry, Rx, y->cin, y->hin * y->win, n);
    break;
  case DS_LAYER_FLATTEN:
    memcpy(Ry, Rx, cnt * sizeof *Ry);
    break;
  case DS_LAYER_DAG:
    ds_dag_tangent(y, v + y->off_w[0], Rx, Ry, n);
    break;
  case DS_LAYER_DROPOUT:
    if (m->drop_on && y->L.p > 0.0)
      for (size_t i = 0; i < cnt; i++) Ry[i] = Rx[i] * y->mask[i];
    else
      memcpy(Ry, Rx, cnt * sizeof *Ry);
    break;
  case DS_LAYER_DENSE: { /* a masked readout: E(W), E(V) with scale 1 (cnnlayers.c) */
    const int rows = y->cout, cols = (int)y->din, rm = y->rowmajor;
    double al;
    const double *W = ds_cnn_dense_wv(y, theta + y->off_w[0], 0, 0, &al);
    const double *V = ds_cnn_dense_wv(y, v + y->off_w[0], 1, 1, &al);
    for (int i = 0; i < n; i++)
      for (int k = 0; k < rows; k++)
        Ry[(size_t)i * rows + k] = y->L.nobias ? 0.0 : m->beta * v[y->off_b[0] + k];
    CBLAS_TRANSPOSE tr = rm ? CblasTrans : CblasNoTrans;
    int ld = rm ? cols : rows;
    cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, al, V, ld, x, cols, 1.0, Ry, rows);
    cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, al, W, ld, Rx, cols, 1.0, Ry,
                rows);
    break;
  }
  case DS_LAYER_RESBLOCK: {
    double *Rr = b->Rr[l], *Ra1 = b->Ra1[l];
    mask_pos(Rr, Rx, x, y->din * n);
    conv_r(m, Ra1, theta + y->off_w[0], v + y->off_w[0], v + y->off_b[0], y->r, Rr, &y->g[0], n,
           y->alpha[0], b->t1);
    mask_pos(Ra1, Ra1, y->z1, cnt);
    conv_r(m, Ry, theta + y->off_w[1], v + y->off_w[1], v + y->off_b[1], y->a1, Ra1, &y->g[1], n,
           y->alpha[1], b->t1);
    if (y->shortcut) {
      conv_r(m, b->t2, theta + y->off_w[2], v + y->off_w[2], v + y->off_b[2], y->r, Rr, &y->g[2],
             n, y->alpha[2], b->t1);
      add(Ry, b->t2, cnt);
    } else {
      add(Ry, Rx, cnt);
    }
    break;
  }
  }
}

/* The R-backward of the layers without parameters of their own and of the
 * DAG block's R part, shared by ds_cnn_hvp below and cnnquad.c's f_quad
 * gradient (cnn_internal.h). */
int ds_cnn_rbackward_common(const ds_cnn *m, ds_cnn_ly *y, const double *x, const double *Ry,
                            int n, const double *dy, const double *Rdy, double *dx, double *Rdx,
                            double *gW, double *tmp) {
  const size_t cnt = y->dout * n;
  switch (y->L.kind) {
  case DS_LAYER_RELU:
    if (dx) mask_pos(dx, dy, x, cnt), mask_pos(Rdx, Rdy, x, cnt);
    return 1;
  case DS_LAYER_AVGPOOL:
    if (dx) ds_avgpool_backward(dx, dy, &y->pg, n), ds_avgpool_backward(Rdx, Rdy, &y->pg, n);
    return 1;
  case DS_LAYER_MAXPOOL:
    if (dx)
      ds_maxpool_backward(dx, dy, y->arg, &y->pg, n),
          ds_maxpool_backward(Rdx, Rdy, y->arg, &y->pg, n);
    return 1;
  case DS_LAYER_GAP:
    if (dx)
      ds_gap_backward(dx, dy, y->cin, y->hin * y->win, n),
          ds_gap_backward(Rdx, Rdy, y->cin, y->hin * y->win, n);
    return 1;
  case DS_LAYER_FLATTEN:
    if (dx) memcpy(dx, dy, cnt * sizeof *dx), memcpy(Rdx, Rdy, cnt * sizeof *Rdx);
    return 1;
  case DS_LAYER_DROPOUT:
    if (dx) {
      int on = m->drop_on && y->L.p > 0.0;
      for (size_t i = 0; i < cnt; i++) {
        dx[i] = on ? dy[i] * y->mask[i] : dy[i];
        Rdx[i] = on ? Rdy[i] * y->mask[i] : Rdy[i];
      }
    }
    return 1;
  case DS_LAYER_DAG:
    ds_dag_rbackward(y, dy, Rdy, Ry, dx, Rdx, tmp ? tmp : gW, n);
    if (tmp) add(gW, tmp, y->dagP);
    return 1;
  default:
    return 0;
  }
}

/* Dense R-backward, the weights' side: gW = alpha (e x^T + dy Rx^T), gb =
 * beta sum e (overwritten: each dense layer owns its slice of the gradient;
 * a masked readout: scale 1 and then gW .*= s .* M). */
void ds_cnn_dense_rbackward_w(const ds_cnn *m, const ds_cnn_ly *y, const double *x,
                              const double *Rx, const double *dy, const double *e, double *gW,
                              double *gb, int n) {
  const int rows = y->cout, cols = (int)y->din, rm = y->rowmajor;
  const double al = y->masked ? 1.0 : y->alpha[0];
  if (rm) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, cols, rows, n, al, x, cols, e, rows, 0.0,
                gW, cols);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, cols, rows, n, al, Rx, cols, dy, rows,
                1.0, gW, cols);
  } else {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, rows, cols, n, al, e, rows, x, cols, 0.0,
                gW, rows);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, rows, cols, n, al, dy, rows, Rx, cols,
                1.0, gW, rows);
  }
  if (y->masked) ds_mdense_gmask(y, gW);
  for (int k = 0; k < rows && !y->L.nobias; k++) {
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += e[(size_t)i * rows + k];
    gb[k] = m->beta * sum;
  }
}

/* Dense R-backward, the input side: dx = alpha W^T dy, R{dx} = alpha (W^T
 * R{dy} + V^T dy) (W, V rows x cols as the layer's; rowmajor: row-major; a
 * masked readout: the tangent's E(W), E(V) with scale 1). */
void ds_cnn_dense_rbackward_in(const ds_cnn_ly *y, const double *W, const double *V,
                               const double *dy, const double *Rdy, double *dx, double *Rdx,
                               int n) {
  const int rows = y->cout, cols = (int)y->din, rm = y->rowmajor;
  double al;
  W = ds_cnn_dense_wv(y, W, 0, 0, &al);
  V = ds_cnn_dense_wv(y, V, 1, 0, &al);
  CBLAS_TRANSPOSE tr = rm ? CblasNoTrans : CblasTrans;
  int ld = rm ? cols : rows;
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, cols, n, rows, al, W, ld, dy, rows, 0.0, dx, cols);
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, cols, n, rows, al, W, ld, Rdy, rows, 0.0, Rdx,
              cols);
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, cols, n, rows, al, V, ld, dy, rows, 1.0, Rdx,
              cols);
}

/* Residual block R-backward, the last step: dx = [x > 0] dr (+ dy for the
 * identity shortcut), R{dx} alike, with dr, R{dr} (and the 1 x 1
 * shortcut's) already summed in dx, Rdx. */
void ds_cnn_resblock_rbackward_in(const ds_cnn_ly *y, const double *x, const double *dy,
                                  const double *Rdy, double *dx, double *Rdx, int n) {
  const size_t cin = y->din * n;
  for (size_t i = 0; i < cin; i++) {
    int on = x[i] > 0.0;
    dx[i] = (on ? dx[i] : 0.0) + (y->shortcut ? 0.0 : dy[i]);
    Rdx[i] = (on ? Rdx[i] : 0.0) + (y->shortcut ? 0.0 : Rdy[i]);
  }
}

/* R-backward of layer l: (dy, Rdy) -> (dx, Rdx) (NULL at layer 0: skipped),
 * R{grad} of its parameters into out. */
static void layer_rb(ds_cnn *m, rop_buf *b, int l, const double *theta, const double *v,
                     const double *x, const double *Rx, int n, const double *dy,
                     const double *Rdy, double *dx, double *Rdx, double *out) {
  ds_cnn_ly *y = &m->ly[l];
  const size_t cnt = y->dout * n, cin = y->din * n;
  if (ds_cnn_rbackward_common(m, y, x, b->Ry[l], n, dy, Rdy, dx, Rdx, out + y->off_w[0], NULL))
    return;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    conv_rb(m, dx, Rdx, out + y->off_w[0], out + y->off_b[0], dy, Rdy, theta + y->off_w[0],
            v + y->off_w[0], x, Rx, &y->g[0], n, y->alpha[0], 0, b->t1);
    break;
  case DS_LAYER_DENSE: {
    /* R{dW} = alpha (Rdy x^T + dy Rx^T), R{db} = beta sum Rdy */
    ds_cnn_dense_rbackward_w(m, y, x, Rx, dy, Rdy, out + y->off_w[0], out + y->off_b[0], n);
    if (dx)
      ds_cnn_dense_rbackward_in(y, theta + y->off_w[0], v + y->off_w[0], dy, Rdy, dx, Rdx, n);
    break;
  }
  case DS_LAYER_RESBLOCK: {
    double *da1 = b->t2, *Rda1 = b->t3, *tmp = b->t1;
    const double *Rr = b->Rr[l], *Ra1 = b->Ra1[l];
    conv_rb(m, da1, Rda1, out + y->off_w[1], out + y->off_b[1], dy, Rdy, theta + y->off_w[1],
            v + y->off_w[1], y->a1, Ra1, &y->g[1], n, y->alpha[1], 0, tmp);
    mask_pos(da1, da1, y->z1, cnt); /* dz1, R{dz1} in place */
    mask_pos(Rda1, Rda1, y->z1, cnt);
    /* dr, R{dr} into dx, Rdx (NULL at layer 0: the weights' part only) */
    double *dr = dx, *Rdr = Rdx;
    conv_rb(m, dr, Rdr, out + y->off_w[0], out + y->off_b[0], da1, Rda1, theta + y->off_w[0],
            v + y->off_w[0], y->r, Rr, &y->g[0], n, y->alpha[0], 0, tmp);
    if (y->shortcut) {
      double *ds = dx ? b->t2 : NULL, *Rds = dx ? b->t3 : NULL; /* da1, Rda1 no longer needed */
      conv_rb(m, ds, Rds, out + y->off_w[2], out + y->off_b[2], dy, Rdy, theta + y->off_w[2],
              v + y->off_w[2], y->r, Rr, &y->g[2], n, y->alpha[2], 0, tmp);
      if (dx) add(dr, ds, cin), add(Rdr, Rds, cin);
    }
    if (dx) ds_cnn_resblock_rbackward_in(y, x, dy, Rdy, dx, Rdx, n);
    break;
  }
  default: /* the kinds of ds_cnn_rbackward_common */
    break;
  }
}

/* The tangent forward along v after the forward pass at theta: b->Ry. */
static void tangent(ds_cnn *m, rop_buf *b, const double *theta, const double *X, int n,
                    const double *v) {
  const double *x = X, *Rx = b->R0;
  memset(b->R0, 0, (size_t)m->din * n * sizeof *b->R0);
  for (int l = 0; l < m->nl; l++) {
    layer_r(m, b, l, theta, v, x, Rx, n);
    x = m->ly[l].y, Rx = b->Ry[l];
  }
}

int ds_cnn_jvp(ds_cnn *m, const double *theta, const double *X, int n, const double *v,
               double *JV) {
  rop_buf *b = n >= 1 && n <= m->nmax ? rop_get(m) : NULL;
  size_t cnt = (size_t)m->dout * (n > 0 ? n : 0);
  if (!b) {
    for (size_t q = 0; q < cnt; q++) JV[q] = NAN;
    return n >= 1 && n <= m->nmax ? DS_ENOMEM : DS_EINPUT;
  }
  ds_cnn_forward(m, theta, X, n);
  tangent(m, b, theta, X, n, v);
  memcpy(JV, b->Ry[m->nl - 1], cnt * sizeof *JV);
  return DS_OK;
}

double ds_cnn_hvp(ds_cnn *m, const double *theta, const double *X, const double *Y, int n,
                  const ds_loss *loss, const double *v, double *Hv) {
  rop_buf *b = n >= 1 && n <= m->nmax ? rop_get(m) : NULL;
  if (!b) {
    for (size_t k = 0; k < m->nparams; k++) Hv[k] = NAN;
    return NAN;
  }
  const double *F = ds_cnn_forward(m, theta, X, n);
  tangent(m, b, theta, X, n, v);
  /* G = dL/dF, R{G} = (d2L/dF2) R{F} */
  double L = ds_loss_eval(loss, F, Y, m->dout, n, b->d[0]);
  ds_loss_hess_apply(loss, F, Y, m->dout, n, b->Ry[m->nl - 1], b->Rd[0]);
  memset(Hv, 0, m->nparams * sizeof *Hv);
  int cur = 0;
  for (int l = m->nl - 1; l >= 0; l--) {
    const ds_cnn_ly *y = &m->ly[l];
    int has_params = y->nconv > 0 || y->L.kind == DS_LAYER_DENSE || y->L.kind == DS_LAYER_DAG;
    if (l == 0 && !has_params) break;
    double *dx = l ? b->d[1 - cur] : NULL, *Rdx = l ? b->Rd[1 - cur] : NULL;
    layer_rb(m, b, l, theta, v, l ? m->ly[l - 1].y : X, l ? b->Ry[l - 1] : b->R0, n,
             b->d[cur], b->Rd[cur], dx, Rdx, Hv);
    cur = 1 - cur;
  }
  return L;
}

/* ---- f_lin (the linearised model, seed 003) ------------------------------------
 * F = f(theta0) + J(theta0) d, d = theta - theta0: one forward pass at theta0
 * and the tangent along d; the gradient of L(F) is J(theta0)^T dL/dF, the
 * plain backward pass at theta0 (the forward pass at theta0 is still in m). */
int ds_cnn_lin_init(ds_cnn_lin *a, ds_cnn *m, const double *theta0) {
  memset(a, 0, sizeof *a);
  size_t P = m->nparams, cnt = (size_t)m->dout * m->nmax;
  a->m = m;
  a->theta0 = malloc(P * sizeof *a->theta0);
  a->d = malloc(P * sizeof *a->d);
  a->F = malloc(cnt * sizeof *a->F);
  a->dF = malloc(cnt * sizeof *a->dF);
  if (!a->theta0 || !a->d || !a->F || !a->dF || !rop_get(m)) {
    ds_cnn_lin_free(a);
    return DS_ENOMEM;
  }
  memcpy(a->theta0, theta0, P * sizeof *theta0);
  return DS_OK;
}

void ds_cnn_lin_free(ds_cnn_lin *a) {
  free(a->theta0);
  free(a->d);
  free(a->F);
  free(a->dF);
  memset(a, 0, sizeof *a);
}

const double *ds_cnn_lin_forward(ds_cnn_lin *a, const double *theta, const double *X, int n) {
  ds_cnn *m = a->m;
  size_t P = m->nparams, cnt = (size_t)m->dout * (n > 0 ? n : 0);
  if (n < 1 || n > m->nmax) {
    for (size_t q = 0; q < cnt && q < (size_t)m->dout * m->nmax; q++) a->F[q] = NAN;
    return a->F;
  }
  for (size_t k = 0; k < P; k++) a->d[k] = theta[k] - a->theta0[k];
  const double *F0 = ds_cnn_forward(m, a->theta0, X, n);
  rop_buf *b = m->rop;
  tangent(m, b, a->theta0, X, n, a->d);
  const double *R = b->Ry[m->nl - 1];
  for (size_t q = 0; q < cnt; q++) a->F[q] = F0[q] + R[q];
  return a->F;
}

double ds_cnn_lin_loss_grad(ds_cnn_lin *a, const double *theta, const double *X, const double *Y,
                            int n, const ds_loss *l, double *grad) {
  ds_cnn *m = a->m;
  if (n < 1 || n > m->nmax) {
    for (size_t k = 0; k < m->nparams; k++) grad[k] = NAN;
    return NAN;
  }
  const double *F = ds_cnn_lin_forward(a, theta, X, n);
  double loss = ds_loss_eval(l, F, Y, m->dout, n, a->dF);
  ds_cnn_backward(m, a->theta0, X, n, a->dF, grad); /* J(theta0)^T dL/dF */
  return loss;
}
