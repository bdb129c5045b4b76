/* cnn_internal.h -- the layers of a ds_cnn (private to src/nn/): shapes,
 * theta offsets and the buffers of the forward pass, shared by cnn.c
 * (forward, backward), cnnrop.c (the R-operator) and cnnquad.c (f_quad), and
 * the parts of the R-backward the last two share. */
#ifndef DS_CNN_INTERNAL_H
#define DS_CNN_INTERNAL_H
#include <stdint.h>

#include "dynsweep/cnn.h"

typedef struct {
  ds_cnn_layer L;
  int cin, hin, win, cout, hout, wout; /* input and output maps */
  size_t din, dout;                    /* per sample */
  int nconv, shortcut;                 /* convs (conv 1, resblock 2-3); resblock: conv shortcut */
  int rowmajor;                        /* dense: W row-major (hidden), column-major (readout) */
  ds_conv_geom g[3];                   /* conv: g[0]; resblock: conv1, conv2, shortcut */
  ds_pool_geom pg;
  size_t off_w[3], off_b[3];
  double alpha[3], fan[3]; /* forward scale, fan-in (init) */
  double *out;             /* dout x nmax; NULL for flatten and dropout off (y = x) */
  const double *y;         /* this forward's output */
  int *arg;                /* maxpool arg-max */
  double *mask;            /* dropout scales */
  double *r, *z1, *a1, *sc; /* resblock: relu(x), conv1 out, relu(z1), shortcut out */
  /* dag (cnnlayers.c): ndag = depth weight matrices of P = sum_k m in_k
   * entries from off_w[0]; dmask (P, 0/1), dscale (depth m: 1/sqrt(in-degree)),
   * weff, veff (P: s .* M .* W and s .* M .* V of the last forward / tangent),
   * pre (depth m x nmax pre-activations), acc, racc (dout x nmax) and dz, rdz
   * (m x nmax) backward scratch */
  int ndag;
  size_t dagP;
  double *dmask, *dscale, *weff, *veff, *pre, *acc, *racc, *dz, *rdz;
  /* masked dense readout (cnn.h's rdrop, L.p = its drop probability): dmask
   * (cout x din column-major, 0/1), dscale (cout: 1/sqrt(kept in-degree),
   * NTK; 1 standard), weff, veff (s .* M .* W and s .* M .* V of the last
   * forward / tangent); the products then take them with scale 1 instead of
   * W, V with alpha[0] (ds_cnn_dense_wv) */
  int masked;
} ds_cnn_ly;

/* The masked readout (cnnlayers.c). reset: a mask keeping every weight, the
 * scales alpha (before ds_cnn_init); init: the mask (one uniform per weight,
 * column-major; kept when u >= p), the scales and the weights (masked ones
 * 0; ntk N(0, 1), standard U(+-1/sqrt(kept in-degree)); model.init_scale /
 * init_std as ds_cnn_init_scaled), not the bias; eff: E = s .* M .* W;
 * gmask: G .*= s .* M. */
void ds_mdense_reset(ds_cnn_ly *y, double alpha);
void ds_mdense_init(const ds_cnn_ly *y, ds_rng *rng, double *W, int ntk, double scale, double std);
void ds_mdense_eff(const ds_cnn_ly *y, const double *W, double *E);
void ds_mdense_gmask(const ds_cnn_ly *y, double *G);
/* A dense layer's weights as its products take them: a masked readout's
 * effective weights (*al = 1; E = y->weff (ef = 0) or y->veff (ef = 1),
 * computed from W when compute is set, else the last ones), otherwise W
 * itself with *al = alpha[0]. */
static inline const double *ds_cnn_dense_wv(const ds_cnn_ly *y, const double *W, int ef, int compute,
                                            double *al) {
  if (!y->masked) {
    *al = y->alpha[0];
    return W;
  }
  double *E = ef ? y->veff : y->weff;
  if (compute) ds_mdense_eff(y, W, E);
  *al = 1.0;
  return E;
}

/* The DAG block (cnnlayers.c; cnn.h's DS_LAYER_DAG). W, V, gW, RgW point at
 * the layer's weights (theta + off_w[0]) and the like; x (din x n) is its
 * input, y->out its output [x; f_1; ...; f_depth] (dout x n). */
size_t ds_dag_woff(const ds_cnn_ly *y, int k); /* W_k's offset from off_w[0] */
void ds_dag_reset(ds_cnn_ly *y, int ntk);      /* mask keeping every edge */
/* The block's mask and weights (model.init_scale / init_std as ds_cnn_init_scaled). */
void ds_dag_init(const ds_cnn_ly *y, ds_rng *rng, double *W, int ntk, double scale, double std);
void ds_dag_forward(ds_cnn_ly *y, const double *W, const double *x, int n);
/* dx (NULL: skipped; overwritten), gW (NULL: skipped; overwritten) from dy. */
void ds_dag_backward(ds_cnn_ly *y, const double *dy, double *dx, double *gW, int n);
/* R{out} (Ry, dout x n) along V from R{x} (Rx). */
void ds_dag_tangent(ds_cnn_ly *y, const double *V, const double *Rx, double *Ry, int n);
/* (dy, Rdy) -> (dx, Rdx) (NULL: skipped), R{gW} (overwritten); Ry: the tangent. */
void ds_dag_rbackward(ds_cnn_ly *y, const double *dy, const double *Rdy, const double *Ry,
                      double *dx, double *Rdx, double *RgW, int n);

/* The R-backward (cnnrop.c), the parts that ds_cnn_hvp and cnnquad.c's f_quad
 * gradient share. The backward of a layer is carried as (dy, R{dy}) ->
 * (dx, R{dx}); dx = NULL (layer 0): nothing below to carry to (Rdx unused).
 *
 * ds_cnn_rbackward_common: the layers without parameters (relu, avgpool,
 * maxpool, gap, flatten, dropout), their backward applied to dy and to R{dy}
 * alike with the forward's masks and arg-maxes frozen, and the DAG block's R
 * part (ds_dag_rbackward; Ry: the block's tangent output): R{gW} overwrites gW
 * (the layer's weights' part of the output), or, with tmp (dagP doubles) not
 * NULL, goes to tmp and is added into gW. x: the layer's input. Returns 1 when
 * the layer is one of these kinds, 0 otherwise (conv, dense, resblock: the
 * caller's own rules). */
int ds_cnn_rbackward_common(const ds_cnn *m, ds_cnn_ly *y, const double *x,
                            const double *Ry, int n, const double *dy, const double *Rdy,
                            double *dx, double *Rdx, double *gW, double *tmp);
/* Dense: gW = alpha (e x^T + dy R{x}^T), gb = beta sum e (overwritten); e =
 * R{dy} (HVP) or dy + R{dy} (f_quad). */
void ds_cnn_dense_rbackward_w(const ds_cnn *m, const ds_cnn_ly *y, const double *x,
                              const double *Rx, const double *dy, const double *e, double *gW,
                              double *gb, int n);
/* Dense: dx = alpha W^T dy, R{dx} = alpha (W^T R{dy} + V^T dy). */
void ds_cnn_dense_rbackward_in(const ds_cnn_ly *y, const double *W, const double *V,
                               const double *dy, const double *Rdy, double *dx, double *Rdx,
                               int n);
/* Residual block, last step: dx = [x > 0] dx (+ dy, identity shortcut), R alike. */
void ds_cnn_resblock_rbackward_in(const ds_cnn_ly *y, const double *x, const double *dy,
                                  const double *Rdy, double *dx, double *Rdx, int n);

struct ds_cnn {
  int nl, dout, param, nmax, din;
  double beta;
  ds_cnn_ly *ly; /* nl layers, the last the readout */
  size_t nparams;
  double *dF;               /* dout x nmax (ds_cnn_loss_grad) */
  double *col;              /* im2col scratch */
  double *d1, *d2, *s1, *s2; /* cotangents, resblock scratch (NULL: none), maxact x nmax */
  int drop_on;
  uint64_t drop_seed, drop_step;
  const int *drop_ids;
  void *rop; /* cnnrop.c's R-operator buffers, allocated on first use as one
             * block (ds_cnn_free frees it) */
};

#endif
