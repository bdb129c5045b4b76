/* cnnquad.c -- the neural quadratic model f_quad of a CNN (issue 26, seed
 * 003's model.approx quad; the MLPs' is rop.c's ds_approx of order 2):
 *
 *   f_quad(theta) = f(theta0) + J(theta0) d + 1/2 D2f(theta0)[d, d],
 *   d = theta - theta0,
 *
 * by second-order forward mode through the layers of cnn.c. With R{.} the
 * first and Q{.} the second directional derivative along d (Q{x} =
 * d^2/dt^2 x(theta0 + t d) at t = 0; R{X} = Q{X} = 0), each layer maps
 * (x, R{x}, Q{x}) to (y, R{y}, Q{y}). y comes from ds_cnn_forward at theta0;
 * W, b are linear in t (their Q is 0), so for the bilinear layers
 *   conv     R{Z} = alpha (conv(V, A) + conv(W, R{A})) + beta c
 *            Q{Z} = alpha (conv(W, Q{A}) + 2 conv(V, R{A}))   (no bias term)
 *   dense    the same with alpha (V a + W R{a}) + beta c, alpha (W Q{a} + 2 V R{a})
 *            (a masked readout: W, V -> s .* M .* W, s .* M .* V, alpha -> 1;
 *            its gradient below masked by s .* M)
 * and every other layer is (piecewise) linear in its input, so R and Q take
 * the same map, with ReLU masks [x > 0], max pooling's arg-maxes and the
 * dropout masks of theta0's forward frozen (ReLU'' = 0 away from the kinks):
 *   relu     R{y} = [x > 0] R{x},  Q{y} = [x > 0] Q{x}
 *   avgpool, gap, flatten, maxpool (frozen arg-max), dropout (frozen mask)
 *   resblock r = relu(x), z1 = conv1(r), a1 = relu(z1), y = conv2(a1) + S:
 *            the relu and conv rules in that order; S = x (R{x}, Q{x}) or
 *            the conv rule of the 1 x 1 shortcut on (r, R{r}, Q{r}).
 *   dag      (cnn.h's DS_LAYER_DAG) depth k sees c_k = [x; f_1; ...; f_{k-1}],
 *            z_k = E_k c_k with E_k = s_k .* M_k .* W_k linear in theta (the
 *            fixed mask M_k and scales s_k = 1/sqrt(kept in-degree) do not
 *            move), f_k = relu(z_k): the dense rule without bias then relu,
 *            R{z_k} = E(V)_k c_k + E_k R{c_k},
 *            Q{z_k} = E_k Q{c_k} + 2 E(V)_k R{c_k},
 *            R{f_k} = [z_k > 0] R{z_k}, Q{f_k} = [z_k > 0] Q{z_k}; the
 *            output's R, Q are [R{x}; R{f_1}; ...] and [Q{x}; Q{f_1}; ...].
 * F_quad = F0 + R{F} + 1/2 Q{F}.
 *
 * Gradient of L(F_quad), g = dL/dF at F_quad: since d/dd of 1/2 g.Q{F} =
 * sum_k g_k Hess(f_k)(theta0) d,
 *   grad = J(theta0)^T g + H_<g,f>(theta0) d
 * and H_<g,f> d = R{J^T g} along d with g held fixed: the R-backward of
 * cnnrop.c with R{dF} = 0 (as rop.c's backward_r with RG = 0). One pass top
 * down carries (dy, R{dy}); each parametrised layer adds
 *   conv     gW += B_w(dy; x) + B_w(R{dy}; x) + B_w(dy; R{x}),
 *            gb += beta sum (dy + R{dy}),
 *            dx = B_in(dy; W), R{dx} = B_in(R{dy}; W) + B_in(dy; V)
 *            (B_in, B_w: ds_conv_backward's input and weight parts)
 *   dense    the same with B_in(d; W) = alpha W^T d, B_w(d; x) = alpha d x^T
 *   relu, pools, gap, flatten, dropout: their backward on dy and R{dy} alike
 *   resblock the chain of cnn.c's backward with the conv rule at each conv.
 *   dag      gW += B_w(dy) + R{B_w}(dy, R{dy}): cnnlayers.c's plain backward
 *            (ds_dag_backward) plus its R-backward (ds_dag_rbackward, which
 *            also gives dx and R{dx}), as the dense rule is B_w(dy; x) plus
 *            the R of it; both mask the weights' gradient with s .* M.
 * The layers without parameters, the DAG block's R part and the dense and
 * residual blocks' input side and the dense weights' part are cnnrop.c's own
 * code (ds_cnn_rbackward_common, ds_cnn_dense_rbackward_in / _w,
 * ds_cnn_resblock_rbackward_in; cnn_internal.h).
 * The Q's are not needed by the gradient (Q{x} enters F_quad only through
 * the outputs). Per-kind code is one switch in each direction; a kind
 * without a rule here is refused by ds_cnn_quad_init. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_internal.h"

typedef struct {
  double **Ry, **Qy;   /* per layer (dout x nmax) */
  double **Rr, **Qr;   /* resblock: relu(x)'s (din x nmax) */
  double **Ra1, **Qa1; /* resblock: relu(z1)'s (dout x nmax) */
  double *Z0;          /* zeros (din x nmax): R{X} = Q{X} = 0 */
  double *d[2], *Rd[2], *t[6]; /* cotangents (ping-pong), scratch (maxact x nmax) */
  double *gdag;                /* dag: the largest block's weight gradient (dagP) */
} quad_buf;

/* 1 when cnnquad.c has a rule for the kind (the switch of layer_q). */
static int kind_known(int kind) {
  switch (kind) {
  case DS_LAYER_CONV:
  case DS_LAYER_RELU:
  case DS_LAYER_AVGPOOL:
  case DS_LAYER_MAXPOOL:
  case DS_LAYER_GAP:
  case DS_LAYER_FLATTEN:
  case DS_LAYER_DENSE:
  case DS_LAYER_RESBLOCK:
  case DS_LAYER_DROPOUT:
  case DS_LAYER_DAG:
    return 1;
  default:
    return 0;
  }
}

static void quad_buf_free(quad_buf *b) {
  if (!b) return;
  free(b->Ry); /* the pointer arrays: one block */
  free(b->Z0); /* the doubles: one block */
  free(b->gdag);
  free(b);
}

static quad_buf *quad_buf_new(const ds_cnn *m) {
  int nl = m->nl;
  size_t n = (size_t)m->nmax, maxact = (size_t)m->din, total = 0, dagP = 0;
  for (int l = 0; l < nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    if (y->L.kind == DS_LAYER_DAG && y->dagP > dagP) dagP = y->dagP;
    if (y->dout > maxact) maxact = y->dout;
    if (y->din > maxact) maxact = y->din;
    total += 2 * y->dout;
    if (y->L.kind == DS_LAYER_RESBLOCK) total += 2 * (y->din + y->dout);
  }
  total += (size_t)m->din + 10 * maxact;
  quad_buf *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->Ry = calloc(6 * (size_t)nl, sizeof(double *));
  b->Z0 = calloc(total * n, sizeof(double));
  b->gdag = dagP ? malloc(dagP * sizeof(double)) : NULL;
  if (!b->Ry || !b->Z0 || (dagP && !b->gdag)) {
    quad_buf_free(b);
    return NULL;
  }
  b->Qy = b->Ry + nl, b->Rr = b->Ry + 2 * nl, b->Qr = b->Ry + 3 * nl;
  b->Ra1 = b->Ry + 4 * nl, b->Qa1 = b->Ry + 5 * nl;
  double *q = b->Z0 + (size_t)m->din * n;
  for (int l = 0; l < nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    b->Ry[l] = q, q += y->dout * n;
    b->Qy[l] = q, q += y->dout * n;
    if (y->L.kind == DS_LAYER_RESBLOCK) {
      b->Rr[l] = q, q += y->din * n;
      b->Qr[l] = q, q += y->din * n;
      b->Ra1[l] = q, q += y->dout * n;
      b->Qa1[l] = q, q += y->dout * n;
    }
  }
  double **bufs[10] = {&b->d[0], &b->d[1], &b->Rd[0], &b->Rd[1], &b->t[0],
                       &b->t[1], &b->t[2], &b->t[3], &b->t[4], &b->t[5]};
  for (int k = 0; k < 10; k++) *bufs[k] = q, q += maxact * n;
  return b;
}

static void add(double *y, const double *x, double s, size_t cnt) {
  for (size_t i = 0; i < cnt; i++) y[i] += s * x[i];
}
static void mask_pos(double *y, const double *x, const double *gate, size_t cnt) {
  for (size_t i = 0; i < cnt; i++) y[i] = gate[i] > 0.0 ? x[i] : 0.0;
}

/* Conv, second order: RZ = alpha (conv(V, A) + conv(W, RA)) + beta c,
 * QZ = alpha (conv(W, QA) + 2 conv(V, RA)); tmp: dout x n scratch. */
static void conv_q(ds_cnn *m, double *RZ, double *QZ, const double *W, const double *V,
                   const double *c, const double *A, const double *RA, const double *QA,
                   const ds_conv_geom *g, int n, double alpha, double *tmp) {
  size_t cnt = (size_t)g->cout * g->ho * g->wo * n;
  ds_conv_forward(tmp, V, NULL, RA, g, n, alpha, m->beta, m->col);
  ds_conv_forward(RZ, V, c, A, g, n, alpha, m->beta, m->col);
  ds_conv_forward(QZ, W, NULL, RA, g, n, alpha, m->beta, m->col);
  add(RZ, QZ, 1.0, cnt);
  ds_conv_forward(QZ, W, NULL, QA, g, n, alpha, m->beta, m->col);
  add(QZ, tmp, 2.0, cnt);
}

/* Dense, second order (W rows x cols; rm: row-major): as conv_q. A masked
 * readout: E(W) of theta0's forward and E(V) (into y->veff, for the
 * R-backward) with scale 1. */
static void dense_q(ds_cnn *m, const ds_cnn_ly *y, double *RZ, double *QZ, const double *W,
                    const double *V, const double *c, const double *x, const double *Rx,
                    const double *Qx, int n) {
  const int rows = y->cout, cols = (int)y->din, rm = y->rowmajor;
  double al;
  W = ds_cnn_dense_wv(y, W, 0, 0, &al);
  V = ds_cnn_dense_wv(y, V, 1, 1, &al);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < rows; k++) RZ[(size_t)i * rows + k] = c ? m->beta * c[k] : 0.0;
  CBLAS_TRANSPOSE tr = rm ? CblasTrans : CblasNoTrans;
  int ld = rm ? cols : rows;
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, al, V, ld, x, cols, 1.0, RZ, rows);
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, al, W, ld, Rx, cols, 1.0, RZ, rows);
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, al, W, ld, Qx, cols, 0.0, QZ, rows);
  cblas_dgemm(CblasColMajor, tr, CblasNoTrans, rows, n, cols, 2.0 * al, V, ld, Rx, cols, 1.0, QZ,
              rows);
}

/* DAG block, second order: (Ry, Qy) from (Rx, Qx) along V (the forward at
 * theta0 in y: out, pre, weff). ds_dag_tangent gives Ry (and y->veff =
 * E(V)); then per depth k Q{z_k} = E_k Q{c_k} + 2 E(V)_k R{c_k} into y->dz
 * and Q{f_k} = [z_k > 0] Q{z_k}. */
static void dag_q(ds_cnn_ly *y, const double *V, const double *Rx, const double *Qx, double *Ry,
                  double *Qy, int n) {
  const int mu = y->L.cout;
  const size_t din = y->din, T = y->dout, Dm = (size_t)y->ndag * mu;
  ds_dag_tangent(y, V, Rx, Ry, n);
  for (int i = 0; i < n; i++) memcpy(Qy + i * T, Qx + i * din, din * sizeof *Qx);
  for (int k = 0; k < y->ndag; k++) {
    const int in = (int)(din + (size_t)k * mu);
    const size_t o = ds_dag_woff(y, k);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, mu, n, in, 1.0, y->weff + o, in, Qy,
                (int)T, 0.0, y->dz, mu);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, mu, n, in, 2.0, y->veff + o, in, Ry,
                (int)T, 1.0, y->dz, mu);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < mu; j++)
        Qy[i * T + in + j] =
            y->pre[i * Dm + (size_t)k * mu + j] > 0.0 ? y->dz[(size_t)i * mu + j] : 0.0;
  }
}

/* Layer l, second-order forward: (Ry, Qy) from (x, Rx, Qx) (the forward pass
 * at theta0 is in m). DS_OK, or DS_EINPUT for a kind without a rule. */
static int layer_q(ds_cnn *m, quad_buf *b, int l, const double *theta, const double *v,
                   const double *x, const double *Rx, const double *Qx, int n) {
  ds_cnn_ly *y = &m->ly[l];
  double *Ry = b->Ry[l], *Qy = b->Qy[l];
  const size_t cnt = y->dout * n;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    conv_q(m, Ry, Qy, theta + y->off_w[0], v + y->off_w[0], v + y->off_b[0], x, Rx, Qx, &y->g[0],
           n, y->alpha[0], b->t[0]);
    break;
  case DS_LAYER_RELU:
    mask_pos(Ry, Rx, x, cnt);
    mask_pos(Qy, Qx, x, cnt);
    break;
  case DS_LAYER_AVGPOOL:
    ds_avgpool_forward(Ry, Rx, &y->pg, n);
    ds_avgpool_forward(Qy, Qx, &y->pg, n);
    break;
  case DS_LAYER_MAXPOOL: {
    const size_t din = (size_t)y->pg.h * y->pg.w, dout = (size_t)y->pg.ho * y->pg.wo;
    for (size_t cc = 0; cc < (size_t)n * y->pg.c; cc++)
      for (size_t o = 0; o < dout; o++) {
        size_t at = cc * din + (size_t)y->arg[cc * dout + o];
        Ry[cc * dout + o] = Rx[at], Qy[cc * dout + o] = Qx[at];
      }
    break;
  }
  case DS_LAYER_GAP:
    ds_gap_forward(Ry, Rx, y->cin, y->hin * y->win, n);
    ds_gap_forward(Qy, Qx, y->cin, y->hin * y->win, n);
    break;
  case DS_LAYER_FLATTEN:
    memcpy(Ry, Rx, cnt * sizeof *Ry);
    memcpy(Qy, Qx, cnt * sizeof *Qy);
    break;
  case DS_LAYER_DROPOUT: {
    int on = m->drop_on && y->L.p > 0.0;
    for (size_t i = 0; i < cnt; i++) {
      Ry[i] = on ? Rx[i] * y->mask[i] : Rx[i];
      Qy[i] = on ? Qx[i] * y->mask[i] : Qx[i];
    }
    break;
  }
  case DS_LAYER_DENSE:
    dense_q(m, y, Ry, Qy, theta + y->off_w[0], v + y->off_w[0],
            y->L.nobias ? NULL : v + y->off_b[0], x, Rx, Qx, n);
    break;
  case DS_LAYER_DAG:
    dag_q(y, v + y->off_w[0], Rx, Qx, Ry, Qy, n);
    break;
  case DS_LAYER_RESBLOCK: {
    double *Rr = b->Rr[l], *Qr = b->Qr[l], *Ra1 = b->Ra1[l], *Qa1 = b->Qa1[l];
    mask_pos(Rr, Rx, x, y->din * n);
    mask_pos(Qr, Qx, x, y->din * n);
    conv_q(m, Ra1, Qa1, theta + y->off_w[0], v + y->off_w[0], v + y->off_b[0], y->r, Rr, Qr,
           &y->g[0], n, y->alpha[0], b->t[0]);
    mask_pos(Ra1, Ra1, y->z1, cnt); /* R{a1}, Q{a1} from R{z1}, Q{z1} in place */
    mask_pos(Qa1, Qa1, y->z1, cnt);
    conv_q(m, Ry, Qy, theta + y->off_w[1], v + y->off_w[1], v + y->off_b[1], y->a1, Ra1, Qa1,
           &y->g[1], n, y->alpha[1], b->t[0]);
    if (y->shortcut) {
      conv_q(m, b->t[1], b->t[2], theta + y->off_w[2], v + y->off_w[2], v + y->off_b[2], y->r, Rr,
             Qr, &y->g[2], n, y->alpha[2], b->t[0]);
      add(Ry, b->t[1], 1.0, cnt);
      add(Qy, b->t[2], 1.0, cnt);
    } else {
      add(Ry, Rx, 1.0, cnt);
      add(Qy, Qx, 1.0, cnt);
    }
    break;
  }
  default:
    return ds_fail(DS_EINPUT, "f_quad: layer %d (%s) has no second-order rule in cnnquad.c", l + 1,
                   ds_cnn_kind_name(y->L.kind));
  }
  return DS_OK;
}

/* Conv, backward with R (g held fixed): dx = B_in(dy; W) (NULL: skipped),
 * Rdx = B_in(Rdy; W) + B_in(dy; V) (with dx), and into the gradient gW +=
 * B_w(dy + Rdy; x) + B_w(dy; Rx), gb += beta sum (dy + Rdy). tmp: din x n,
 * s: dout x n scratch. */
static void conv_qb(ds_cnn *m, double *dx, double *Rdx, double *gW, double *gb, const double *dy,
                    const double *Rdy, const double *W, const double *V, const double *x,
                    const double *Rx, const ds_conv_geom *g, int n, double alpha, double *tmp,
                    double *s) {
  size_t cnt = (size_t)g->cout * g->ho * g->wo * n;
  for (size_t i = 0; i < cnt; i++) s[i] = dy[i] + Rdy[i];
  ds_conv_backward(NULL, gW, gb, s, W, x, g, n, alpha, m->beta, 1, m->col);
  ds_conv_backward(dx ? tmp : NULL, gW, NULL, dy, V, Rx, g, n, alpha, m->beta, 1, m->col);
  if (!dx) return;
  ds_conv_backward(Rdx, NULL, NULL, Rdy, W, x, g, n, alpha, m->beta, 0, m->col);
  add(Rdx, tmp, 1.0, (size_t)g->cin * g->h * g->w * n);
  ds_conv_backward(dx, NULL, NULL, dy, W, x, g, n, alpha, m->beta, 0, m->col);
}

/* Layer l, backward with R: (dy, Rdy) -> (dx, Rdx) (NULL at layer 0), its
 * parameters' part added into grad. x, Rx: the layer's input and its R. */
static int layer_qb(ds_cnn *m, quad_buf *b, int l, const double *theta, const double *v,
                    const double *x, const double *Rx, int n, const double *dy,
                    const double *Rdy, double *dx, double *Rdx, double *grad) {
  ds_cnn_ly *y = &m->ly[l];
  const size_t cnt = y->dout * n, cin = y->din * n;
  /* dag: the plain part B_w(dy) first (it leaves dx alone), then the R part
   * with (dx, R{dx}) in ds_cnn_rbackward_common; y->veff = E(d) from dag_q's
   * tangent */
  if (y->L.kind == DS_LAYER_DAG) {
    ds_dag_backward(y, dy, NULL, b->gdag, n);
    add(grad + y->off_w[0], b->gdag, 1.0, y->dagP);
  }
  if (ds_cnn_rbackward_common(m, y, x, b->Ry[l], n, dy, Rdy, dx, Rdx, grad + y->off_w[0],
                              b->gdag))
    return DS_OK;
  switch (y->L.kind) {
  case DS_LAYER_CONV:
    conv_qb(m, dx, Rdx, grad + y->off_w[0], grad + y->off_b[0], dy, Rdy, theta + y->off_w[0],
            v + y->off_w[0], x, Rx, &y->g[0], n, y->alpha[0], b->t[0], b->t[1]);
    break;
  case DS_LAYER_DENSE: {
    double *s = b->t[1];
    for (size_t i = 0; i < cnt; i++) s[i] = dy[i] + Rdy[i];
    /* gW = alpha ((dy + Rdy) x^T + dy Rx^T), gb = beta sum (dy + Rdy) */
    ds_cnn_dense_rbackward_w(m, y, x, Rx, dy, s, grad + y->off_w[0], grad + y->off_b[0], n);
    if (dx)
      ds_cnn_dense_rbackward_in(y, theta + y->off_w[0], v + y->off_w[0], dy, Rdy, dx, Rdx, n);
    break;
  }
  case DS_LAYER_RESBLOCK: {
    /* scratch: t0 (conv tmp), t1 (conv sum), t2, t3 (da1, R{da1}), t4, t5 (shortcut's) */
    double *da1 = b->t[2], *Rda1 = b->t[3];
    const double *Rr = b->Rr[l], *Ra1 = b->Ra1[l];
    conv_qb(m, da1, Rda1, grad + y->off_w[1], grad + y->off_b[1], dy, Rdy, theta + y->off_w[1],
            v + y->off_w[1], y->a1, Ra1, &y->g[1], n, y->alpha[1], b->t[0], b->t[1]);
    mask_pos(da1, da1, y->z1, cnt); /* dz1, R{dz1} in place */
    mask_pos(Rda1, Rda1, y->z1, cnt);
    conv_qb(m, dx, Rdx, grad + y->off_w[0], grad + y->off_b[0], da1, Rda1, theta + y->off_w[0],
            v + y->off_w[0], y->r, Rr, &y->g[0], n, y->alpha[0], b->t[0], b->t[1]);
    if (y->shortcut) {
      double *ds = dx ? b->t[4] : NULL, *Rds = dx ? b->t[5] : NULL;
      conv_qb(m, ds, Rds, grad + y->off_w[2], grad + y->off_b[2], dy, Rdy, theta + y->off_w[2],
              v + y->off_w[2], y->r, Rr, &y->g[2], n, y->alpha[2], b->t[0], b->t[1]);
      if (dx) add(dx, ds, 1.0, cin), add(Rdx, Rds, 1.0, cin);
    }
    if (dx) ds_cnn_resblock_rbackward_in(y, x, dy, Rdy, dx, Rdx, n);
    break;
  }
  default:
    return ds_fail(DS_EINPUT, "f_quad: layer %d (%s) has no second-order rule in cnnquad.c", l + 1,
                   ds_cnn_kind_name(y->L.kind));
  }
  return DS_OK;
}

int ds_cnn_quad_init(ds_cnn_quad *a, ds_cnn *m, const double *theta0) {
  memset(a, 0, sizeof *a);
  for (int l = 0; l < m->nl; l++)
    if (!kind_known(m->ly[l].L.kind))
      return ds_fail(DS_EINPUT,
                     "model.approx quad: layer %d (%s) has no second-order rule (f_quad, "
                     "src/nn/cnnquad.c); use model.approx lin or none for this net",
                     l + 1, ds_cnn_kind_name(m->ly[l].L.kind));
  size_t P = m->nparams, cnt = (size_t)m->dout * m->nmax;
  a->m = m;
  a->theta0 = malloc(P * sizeof *a->theta0);
  a->d = malloc(P * sizeof *a->d);
  a->F = malloc(cnt * sizeof *a->F);
  a->dF = malloc(cnt * sizeof *a->dF);
  a->buf = quad_buf_new(m);
  if (!a->theta0 || !a->d || !a->F || !a->dF || !a->buf) {
    ds_cnn_quad_free(a);
    return ds_fail(DS_ENOMEM, "model.approx quad: out of memory for the second-order buffers");
  }
  memcpy(a->theta0, theta0, P * sizeof *theta0);
  return DS_OK;
}

void ds_cnn_quad_free(ds_cnn_quad *a) {
  free(a->theta0);
  free(a->d);
  free(a->F);
  free(a->dF);
  quad_buf_free(a->buf);
  memset(a, 0, sizeof *a);
}

/* The forward pass at theta0 and the second-order forward along d. */
static int quad_outputs(ds_cnn_quad *a, const double *theta, const double *X, int n) {
  ds_cnn *m = a->m;
  quad_buf *b = a->buf;
  size_t P = m->nparams, cnt = (size_t)m->dout * n;
  for (size_t k = 0; k < P; k++) a->d[k] = theta[k] - a->theta0[k];
  const double *F0 = ds_cnn_forward(m, a->theta0, X, n);
  const double *x = X, *Rx = b->Z0, *Qx = b->Z0;
  for (int l = 0; l < m->nl; l++) {
    DS_TRY(layer_q(m, b, l, a->theta0, a->d, x, Rx, Qx, n));
    x = m->ly[l].y, Rx = b->Ry[l], Qx = b->Qy[l];
  }
  a->RF = b->Ry[m->nl - 1], a->QF = b->Qy[m->nl - 1];
  for (size_t q = 0; q < cnt; q++) a->F[q] = (F0[q] + a->RF[q]) + 0.5 * a->QF[q];
  return DS_OK;
}

const double *ds_cnn_quad_forward(ds_cnn_quad *a, const double *theta, const double *X, int n) {
  ds_cnn *m = a->m;
  if (n < 1 || n > m->nmax || quad_outputs(a, theta, X, n) != DS_OK) {
    size_t cnt = (size_t)m->dout * m->nmax;
    for (size_t q = 0; q < cnt; q++) a->F[q] = NAN;
  }
  return a->F;
}

double ds_cnn_quad_loss_grad(ds_cnn_quad *a, const double *theta, const double *X,
                             const double *Y, int n, const ds_loss *l, double *grad) {
  ds_cnn *m = a->m;
  quad_buf *b = a->buf;
  if (n < 1 || n > m->nmax || quad_outputs(a, theta, X, n) != DS_OK) {
    for (size_t k = 0; k < m->nparams; k++) grad[k] = NAN;
    return NAN;
  }
  double loss = ds_loss_eval(l, a->F, Y, m->dout, n, b->d[0]); /* g = dL/dF */
  memset(b->Rd[0], 0, (size_t)m->dout * n * sizeof(double));      /* R{g} = 0 */
  memset(grad, 0, m->nparams * sizeof *grad);
  int cur = 0;
  for (int ll = m->nl - 1; ll >= 0; ll--) {
    const ds_cnn_ly *y = &m->ly[ll];
    if (ll == 0 && !(y->nconv > 0 || y->L.kind == DS_LAYER_DENSE || y->L.kind == DS_LAYER_DAG))
      break;
    double *dx = ll ? b->d[1 - cur] : NULL, *Rdx = ll ? b->Rd[1 - cur] : NULL;
    if (layer_qb(m, b, ll, a->theta0, a->d, ll ? m->ly[ll - 1].y : X, ll ? b->Ry[ll - 1] : b->Z0,
                 n, b->d[cur], b->Rd[cur], dx, Rdx, grad) != DS_OK) {
      for (size_t k = 0; k < m->nparams; k++) grad[k] = NAN;
      return NAN;
    }
    cur = 1 - cur;
  }
  return loss;
}
