/* cnn.h -- convolutional nets (issue 26): 2-D convolutions as implicit
 * GEMMs (LIBXSMM; C_in, C_out multiples of 8) or GEMMs on im2col patches of
 * blocks of samples (OpenBLAS DGEMM), ReLU, pooling,
 * residual blocks, dense layers and dropout, as a list of layers
 * (ds_cnn_create_layers, below) or the fixed stack of a ds_cnn_spec
 * (ds_cnn_create).
 *
 * Data layout: as the MLPs, one column per sample; an image column holds its
 * features in CHW order (c H W + r W + x). X (C0 H0 W0 x n), F (dout x n).
 *
 * ds_cnn_spec's net: nconv x [conv s x s, stride t, C channels, ReLU], then global average
 * pooling (readout DS_CNN_GAP) or flatten (DS_CNN_FLATTEN), then a dense
 * linear readout to dout outputs. The paper's "L-layer CNN" (003) is
 * nconv = L - 1 with flatten.
 *
 * Conv layer: Z[k,i,j] = alpha sum_{o,p,q} W[k,o,p,q] A[o, t i + p - pi,
 * t j + q - pi] + beta b[k], A = 0 outside the image; padding pi =
 * floor((s-1)/2) ("same"; the output is H x W for t = 1 and odd s) or 0
 * ("valid"); output size floor((H + 2 pi - s)/t) + 1.
 *   DS_PARAM_NTK: alpha = 1/sqrt(C_in s^2) (readout 1/sqrt(d_in)), beta as
 *     given (spec.beta), W, b ~ N(0, 1).
 *   DS_PARAM_STANDARD (PyTorch default): alpha = beta = 1,
 *     W, b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
 * theta: per conv layer W (C_out x C_in x s x s, row-major: PyTorch's
 * Conv2d.weight order) then b (C_out); then the readout's W (dout x d_in,
 * column-major, as the MLPs) and b (dout). Biases are always in theta (beta =
 * 0 makes them inert). */
#ifndef DYNSWEEP_CNN_H
#define DYNSWEEP_CNN_H
#include <stddef.h>
#include <stdint.h>

#include "dynsweep/nn.h"
#include "dynsweep/util.h"

enum { DS_CNN_FLATTEN = 0, DS_CNN_GAP = 1 };
#define DS_CNN_MAX_CONV 64

typedef struct {
  int c0, h0, w0;  /* input image: channels, height, width */
  int nconv;       /* conv layers, 1..DS_CNN_MAX_CONV */
  int channels;    /* C of every conv layer */
  int ksize;       /* s */
  int stride;      /* t (every conv layer) */
  int same;        /* 1: "same" zero padding floor((s-1)/2), 0: "valid" */
  int readout;     /* DS_CNN_FLATTEN or DS_CNN_GAP */
  int dout;        /* outputs */
  int param;       /* DS_PARAM_NTK or DS_PARAM_STANDARD */
  double beta;     /* NTK bias scale (standard: ignored, 1) */
} ds_cnn_spec;

/* One conv layer's shapes. */
typedef struct {
  int cin, h, w, cout, s, stride, pad, ho, wo;
} ds_conv_geom;

/* Fills g; DS_EINPUT when a size is < 1 or the output would be empty. */
int ds_conv_geom_set(ds_conv_geom *g, int cin, int h, int w, int cout, int s, int stride,
                     int same);

/* The layer (one sample per column; col: scratch of ds_conv_col_size(g, n)
 * doubles):
 *   forward:  Z (cout ho wo x n) = conv(W, A) alpha + beta b   (b NULL: none)
 *   backward: dW (+)= alpha sum_i U_i^T dZ_i, db (+)= beta sum dZ (NULL:
 *             skipped; accumulate = 1 adds to them), dA = alpha col2im(dZ W^T)
 *             (NULL: skipped; overwritten). */
void ds_conv_forward(double *Z, const double *W, const double *b, const double *A,
                     const ds_conv_geom *g, int n, double alpha, double beta, double *col);
void ds_conv_backward(double *dA, double *dW, double *db, const double *dZ, const double *W,
                      const double *A, const ds_conv_geom *g, int n, double alpha, double beta,
                      int accumulate, double *col);
/* The same with a ReLU fused in (conv.c; the same bits as the separate
 * layers): forward also writes R = relu(Z) (R NULL: not); backward masks dA
 * by [M > 0], M the input of a ReLU that produced A (M NULL: no mask). */
void ds_conv_forward_relu(double *Z, double *R, const double *W, const double *b,
                          const double *A, const ds_conv_geom *g, int n, double alpha,
                          double beta, double *col);
void ds_conv_backward_mask(double *dA, double *dW, double *db, const double *dZ,
                           const double *W, const double *A, const double *M,
                           const ds_conv_geom *g, int n, double alpha, double beta,
                           int accumulate, double *col);
/* Doubles of the col scratch ds_conv_forward/backward need for calls of up
 * to n samples (the caller allocates it once, for its largest layer). */
size_t ds_conv_col_size(const ds_conv_geom *g, int n);
/* Global average pooling: G (c x n) = means of A (c p x n) over p positions;
 * backward dA = dG / p spread over the positions. */
void ds_gap_forward(double *G, const double *A, int c, int p, int n);
void ds_gap_backward(double *dA, const double *dG, int c, int p, int n);

/* ---- the net as a sequence of layers (cnnlayers.c, cnn.c) ----------------
 * A net is a list of layers applied in order to the image, then a dense
 * linear readout to dout outputs that the constructor appends. Each layer
 * maps a C x H x W map to another (dense layers: to a units x 1 x 1 map):
 *   DS_LAYER_CONV     Z = alpha conv(W, A) + beta b, size s, stride, same
 *                     padding floor((s-1)/2) or valid (none), cout channels
 *   DS_LAYER_RELU     max(A, 0)
 *   DS_LAYER_AVGPOOL  mean over size x size windows, stride (0: = size);
 *   DS_LAYER_MAXPOOL  max over them. No padding; the output is
 *                     floor((H - size)/stride) + 1 as PyTorch's avg_pool2d /
 *                     max_pool2d (windows that do not fit are dropped); a
 *                     window larger than the input is refused
 *   DS_LAYER_GAP      global average pooling (C x 1 x 1)
 *   DS_LAYER_FLATTEN  C H W x 1 x 1 (CHW order; no computation)
 *   DS_LAYER_DENSE    hidden dense layer, cout units: alpha W a + beta b on
 *                     the flattened input (add a DS_LAYER_RELU after it);
 *                     nobias: alpha W a (b not in theta)
 *   DS_LAYER_RESBLOCK residual block without BatchNorm (WRN, pre-activation):
 *                     r = relu(A), y = conv2(relu(conv1(r))) + S, conv1 of size
 *                     s, stride t, cout channels, conv2 size s stride 1, both
 *                     with the layer's padding; S = A (identity) when
 *                     cin = cout and t = 1, else a 1 x 1 conv of stride t on r
 *                     (WRN's convShortcut; with a bias as every layer here).
 *                     The two paths must have the same shape (odd s, same
 *                     padding) or the net is refused
 *   DS_LAYER_DROPOUT  inverted dropout with probability p: A m, m = 1/(1 - p)
 *                     (kept) or 0 (dropped), a pure function of (seed, step,
 *                     sample id, layer, unit) (ds_cnn_dropout); off (the
 *                     identity) unless turned on.
 *   DS_LAYER_DAG      seed 003's DenseNet-style DAG (Eq. A.5, Fig. 2.2) with
 *                     randomly dropped edges (App. A.1): depth dense layers of
 *                     cout = m units; layer k sees the concatenation
 *                     c_k = [a; f_1; ...; f_{k-1}] of the (flattened) input a
 *                     and all earlier outputs, f_k = relu(diag(s_k) (M_k .* W_k)
 *                     c_k), no bias; the output is the whole concatenation
 *                     [a; f_1; ...; f_depth] (the readout sees every neuron,
 *                     Eq. A.6). M_k: a fixed 0/1 mask, each entry kept with
 *                     probability 1 - p, drawn once by ds_cnn_init from the
 *                     init stream; masked weights are set to exactly 0 and get
 *                     zero gradient (they stay 0 under every optimiser). s_k:
 *                     1/sqrt(in-degree) per neuron, the in-degree being the
 *                     neuron's kept edges (Def. 2.2.2 on the DAG left after
 *                     dropping, App. A.1; 0 kept edges: s = 0); standard
 *                     parameterisation: s = 1, W ~ U(+-1/sqrt(in-degree)).
 *                     Before ds_cnn_init the mask keeps every edge.
 *                     rdrop > 0 (the block must then be the list's last
 *                     layer) masks the dense readout after it alike (003's
 *                     "each weight removed", applied to the output layer,
 *                     model.dag_readout_drop): a fixed 0/1 mask on the
 *                     readout's W, each entry kept with probability
 *                     1 - rdrop, drawn by ds_cnn_init after the block's
 *                     masks and weights, masked entries exactly 0 with zero
 *                     gradient, and output unit o scaled by 1/sqrt(its kept
 *                     in-degree) instead of 1/sqrt(d_in) (NTK; 0 kept: the
 *                     unit is beta b_o; standard: scale 1, W ~
 *                     U(+-1/sqrt(kept in-degree))); the bias as before.
 *                     rdrop = 0: the readout of every other net, bit for bit.
 * theta: the layers' parameters in list order (conv: W as C_out x C_in x s x
 * s row-major, then b; hidden dense: W units x d_in row-major (PyTorch's
 * Linear.weight), then b; dag: W_1 .. W_depth, W_k m x (d_in + (k-1) m)
 * row-major, masked entries included (as fixed zeros; no biases); resblock:
 * conv1, conv2, then the shortcut conv if
 * any), then the readout's W (dout x d_in column-major, as ds_cnn_spec's
 * nets) and b. So every weight matrix but the last (the readout) is stored
 * row-major, the last column-major (ds_cnn_weight's callers rely on it). */
enum {
  DS_LAYER_CONV = 0, DS_LAYER_RELU, DS_LAYER_AVGPOOL, DS_LAYER_MAXPOOL, DS_LAYER_GAP, DS_LAYER_FLATTEN,
  DS_LAYER_DENSE, DS_LAYER_RESBLOCK, DS_LAYER_DROPOUT, DS_LAYER_DAG, DS_LAYER_NKINDS
};
#define DS_CNN_MAX_LAYERS 256
typedef struct {
  int kind;
  int cout;    /* conv, resblock: output channels; dense: units; dag: units per layer m */
  int size;    /* conv, resblock: kernel s; pools: window */
  int stride;  /* conv, resblock, pools (0: the window) */
  int same;    /* conv, resblock: 1 "same", 0 "valid" padding */
  double p;    /* dropout probability, [0, 1); dag: edge drop probability, [0, 1) */
  int nobias;  /* dense: no bias (002's over-parameterising factors) */
  int depth;   /* dag: dense layers in the block, >= 1 */
  double rdrop; /* dag: the readout's edge drop probability, [0, 1) (0: unmasked) */
} ds_cnn_layer;

/* The layer kind's name ("conv", "relu", "avgpool", ...). */
const char *ds_cnn_kind_name(int kind);

/* ---- named nets (cnnnets.c; the sweep's model.net, docs/models.md) -------
 *   cnn       model.depth x [conv (width, kernel, stride, padding), relu, a
 *             pool after every pool_every-th], readout flatten|gap, then
 *             optionally dense(hidden) + relu, dropout(p); the default, and
 *             with no pool, hidden or dropout the net of ds_cnn_spec
 *   cnn5      cnn with 4 conv layers (003's "5-layer CNN")
 *   myrtle5   [conv3 C, relu] x 2, avg2, conv3 C, relu, avg2, conv3 C, relu,
 *             avg2 x 3, flatten (003's Myrtle-5; needs 32 x 32 inputs, or
 *             any H, W >= 32)
 *   tf_mnist  conv5 C, relu, max2, conv5 2C, relu, max2, flatten,
 *             dense 16C, relu, dropout(p) (002's TensorFlow MNIST CNN at
 *             C = 32, p = 0.5); overparam: 002's over-parameterisation,
 *             each dense layer W a + b becomes W2 W1 a + b: flatten,
 *             dense 16C (no bias), dense 16C, relu, dropout, dense dout (no
 *             bias), then the readout (+ (16C)^2 + dout^2 parameters)
 *   wrn       WRN-d-k without BatchNorm, d = model.depth = 6N + 4, k =
 *             model.width: conv3 16, 3 groups of N resblocks of 16k, 32k,
 *             64k channels (strides 1, 2, 2), relu, gap.
 *   dag       seed 003's DenseNet-DAG (Fig. 2.2): flatten, one DS_LAYER_DAG of
 *             model.depth layers of model.width units with edges dropped
 *             with probability dag_drop (model.dag_drop, 0.5), then the
 *             dense linear readout on [x; f_1; ...; f_depth]. model.depth 2
 *             is the paper's "3-layer DenseNet" (Eq. A.5-A.6, L = 3).
 *             dag_readout_drop > 0 (model.dag_readout_drop) masks the
 *             readout too (DS_LAYER_DAG's rdrop).
 * Named nets other than cnn fix their layers: off-default kernel, stride,
 * padding, readout, pool or hidden are refused, and so is a depth other than
 * the default 2 or the net's own (cnn5 4, myrtle5 4, tf_mnist 2). */
enum { DS_NET_CNN = 0, DS_NET_CNN5, DS_NET_MYRTLE5, DS_NET_TF_MNIST, DS_NET_WRN, DS_NET_DAG,
       DS_NET_NKINDS };
typedef struct {
  int net;                   /* DS_NET_* */
  int width, depth;          /* channels (wrn: k), conv layers (wrn: d) */
  int kernel, stride, same;  /* cnn, cnn5: every conv layer */
  int readout;               /* cnn, cnn5: DS_CNN_FLATTEN or DS_CNN_GAP */
  int pool;                  /* cnn, cnn5: 0 none, DS_LAYER_AVGPOOL, DS_LAYER_MAXPOOL */
  int pool_every, pool_size; /* a pool_size pool (stride = size) after every pool_every-th conv */
  int hidden;                /* cnn, cnn5: units of a dense + relu before the readout, 0 none */
  double dropout;            /* cnn, cnn5, tf_mnist: dropout before the readout */
  int overparam, dout;       /* tf_mnist: factored dense layers (dout: the readout's) */
  double dag_drop;           /* dag: edge drop probability (0.5) */
  double dag_readout_drop;   /* dag: the readout's edge drop probability (0: unmasked) */
} ds_cnn_net;
extern const char *const ds_cnn_net_names[DS_NET_NKINDS + 1]; /* NULL-terminated */
/* The layers of net (at most DS_CNN_MAX_LAYERS); returns their count, or -1
 * with a message in err. */
int ds_cnn_net_layers(const ds_cnn_net *net, ds_cnn_layer *layers, char *err, size_t errlen);

/* Pooling without padding (cnnlayers.c): B (c ho wo x n) from A (c h w x
 * n), windows size x size at stride; ho = floor((h - size)/stride) + 1.
 * Max pooling records the arg-max (first of ties, as PyTorch) in arg
 * (c ho wo x n) and routes the cotangent there; average spreads dB/size^2. */
typedef struct {
  int c, h, w, size, stride, ho, wo;
} ds_pool_geom;
int ds_pool_geom_set(ds_pool_geom *g, int c, int h, int w, int size, int stride);
void ds_avgpool_forward(double *B, const double *A, const ds_pool_geom *g, int n);
void ds_avgpool_backward(double *dA, const double *dB, const ds_pool_geom *g, int n);
void ds_maxpool_forward(double *B, int *arg, const double *A, const ds_pool_geom *g, int n);
void ds_maxpool_backward(double *dA, const double *dB, const int *arg, const ds_pool_geom *g,
                         int n);
/* Dropout scales (units x n): mask[j + i units] = 1/(1-p) if kept, else 0,
 * kept when u >= p, u = (w + 1/2)/2^32 for the first word w of Philox4x32
 * keyed by ds_rng_init(seed, step, id_i, DS_STREAM_DROPOUT) at counter
 * (j, layer, 0, 0): a pure function of (seed, step, id, layer, j). */
void ds_dropout_mask(double *mask, size_t units, int n, double p, uint64_t seed, uint64_t step,
                     const int *ids, int layer);

typedef struct ds_cnn ds_cnn;

/* A net from a layer list (above); NULL on a bad list (message in err, which
 * names the layer, e.g. "layer 3 (maxpool): window 4 larger than its 2 x 2
 * input"), or out of memory. param DS_PARAM_NTK or DS_PARAM_STANDARD; beta
 * the NTK bias scale (standard: 1). */
ds_cnn *ds_cnn_create_layers(const ds_cnn_layer *layers, int nlayers, int c0, int h0, int w0,
                             int dout, int param, double beta, int nmax, char *err,
                             size_t errlen);
/* Shapes only, nothing allocated (plan, cost.c): DS_OK and one sample's
 * costs, or DS_EINPUT with the message ds_cnn_create_layers would give.
 * params: theta's length; macs: forward multiply-adds; acts: doubles a
 * sample keeps (layer outputs but flatten's, gap's and the readout's; a
 * resblock's internals, and with resblocks two maps of backward scratch);
 * big: the largest layer output (not the readout's);
 * col: the largest conv scratch (ds_conv_col_size of a full block of
 * samples: up to 8 MB of patches, and a flipped kernel). */
typedef struct {
  double params, macs, acts, big, col;
  double outs; /* doubles of every layer's output per sample, the readout's and a
                  resblock's internals included (the R-operator keeps one of each) */
  double dag;  /* a DAG block's weights, masked ones included, and a masked
                  readout's (their masks and effective weights are two more
                  arrays of this size) */
} ds_cnn_cost;
int ds_cnn_layers_check(const ds_cnn_layer *layers, int nlayers, int c0, int h0, int w0,
                        int dout, ds_cnn_cost *cost, char *err, size_t errlen);
/* The layer list ds_cnn_create builds from a spec: nconv x [conv, relu],
 * then gap or flatten (returns the count, <= 2 nconv + 1). */
int ds_cnn_spec_layers(const ds_cnn_spec *spec, ds_cnn_layer *layers);
/* Dropout: on = 0 (the default) makes every dropout layer the identity (for
 * evaluation, spectra, the NTK); on = 1 draws the masks of step `step` for
 * the samples' ids (the column i of the next forward passes is sample
 * ids[i]; ids NULL: i itself). Keep = u >= p with u the first Philox word
 * of key (seed, step, id, DS_STREAM_DROPOUT) and counter (unit, layer). */
void ds_cnn_dropout(ds_cnn *m, int on, uint64_t seed, uint64_t step, const int *ids);
int ds_cnn_has_dropout(const ds_cnn *m);
/* Layers (the list's, then the readout: ds_cnn_nlayers of them) and the
 * shape of layer l's output map (*c x *h x *w; dense: units x 1 x 1). */
int ds_cnn_nlayers(const ds_cnn *m);
void ds_cnn_layer_shape(const ds_cnn *m, int l, int *c, int *h, int *w);

/* A net with work space for up to nmax samples; NULL on a bad spec (message
 * in err, may be NULL) or out of memory. */
ds_cnn *ds_cnn_create(const ds_cnn_spec *spec, int nmax, char *err, size_t errlen);
void ds_cnn_free(ds_cnn *m);
size_t ds_cnn_nparams(const ds_cnn *m);
int ds_cnn_din(const ds_cnn *m);        /* c0 h0 w0 */
int ds_cnn_readout_din(const ds_cnn *m); /* the dense readout's fan-in */
/* Initial weights from rng in theta order (see the top of this file). A DAG
 * layer first draws its masks (one uniform per weight, row-major, layer by
 * layer; kept when u >= p), stores them in m (its only state that init
 * writes: the masks and the in-degree scales) and then draws its weights,
 * setting the masked ones to 0. A masked readout (rdrop > 0) likewise draws
 * its mask (one uniform per weight in theta's column-major order) right
 * before its weights. */
void ds_cnn_init(const ds_cnn *m, ds_rng *rng, double *theta);
/* The same draws scaled (model.init_scale, model.init_std): every weight and
 * bias is scale x its ds_cnn_init draw, or, with std > 0, N(0, (scale std)^2)
 * (002's TensorFlow tutorial: truncated normal std 0.1, here untruncated). */
void ds_cnn_init_scaled(const ds_cnn *m, ds_rng *rng, double *theta, double scale, double std);
/* Forward over n <= nmax samples; returns F (dout x n, inside m). */
const double *ds_cnn_forward(ds_cnn *m, const double *theta, const double *X, int n);
/* After ds_cnn_forward on the same (theta, X, n): grad (nparams, overwritten)
 * = the gradient of sum F .* dF. */
void ds_cnn_backward(ds_cnn *m, const double *theta, const double *X, int n, const double *dF,
                     double *grad);
/* After ds_cnn_forward on the same (theta, X, n): dX (din x n, overwritten)
 * = the gradient of sum F .* dF in the inputs (AGOP, saliency); theta's
 * gradient is not formed. */
void ds_cnn_input_grad(ds_cnn *m, const double *theta, const double *X, int n,
                       const double *dF, double *dX);
/* The net's weight matrices, for layer spectra: i = 0 .. ds_cnn_nweights - 1
 * in theta order (each conv kernel as C_out x C_in s^2, each hidden dense
 * layer as units x d_in, all row-major; then the readout as dout x d_in,
 * column-major); *off: where it starts in theta. */
int ds_cnn_nweights(const ds_cnn *m);
/* (A DAG layer gives its depth matrices W_k, m x (d_in + (k-1) m) row-major,
 * masked zeros included, without the scale s_k; a masked readout likewise:
 * W with its zeros, without the per-unit scales.) */
void ds_cnn_weight(const ds_cnn *m, int i, size_t *off, int *rows, int *cols);
/* The net's ReLUs (cnnrelu.c), for activation spectra: in forward order,
 * each relu layer, the two of each resblock (relu(x) of its input, relu(z1)
 * after its first conv) and each depth k of a dag block (f_k = relu(pre_k)).
 * ds_cnn_relu_map: after ds_cnn_forward(m, theta, X, n), ReLU j's input Z and
 * output A = relu(Z), d = c h w features per sample, sample i's at Z + i ldz
 * and A + i lda (inside m: valid until the next pass); layer: its layer in
 * the list (0-based), part: which of the layer's ReLUs. DS_EINPUT for j out of
 * range. */
typedef struct {
  int layer, kind, part, c, h, w, d; /* kind: the layer's (DS_LAYER_RELU, _RESBLOCK, _DAG) */
  const double *Z, *A;
  size_t ldz, lda;
} ds_cnn_relu;
int ds_cnn_nrelus(const ds_cnn *m);
int ds_cnn_relu_map(const ds_cnn *m, int j, const double *X, ds_cnn_relu *r);
/* Forward, loss (ds_loss_eval) and gradient; returns the loss. */
double ds_cnn_loss_grad(ds_cnn *m, const double *theta, const double *X, const double *Y, int n,
                        const ds_loss *l, double *grad);
/* Hessian-vector product of the loss (cnnrop.c, Pearlmutter's R-operator
 * through every layer kind: ReLU masks, max pooling's arg-maxes and dropout
 * masks frozen): Hv (nparams, overwritten) = H v, H the Hessian of
 * ds_loss_eval(l, F(theta)) (squared error, lp, cross-entropy) over n <= nmax
 * samples. Dropout as set by ds_cnn_dropout (off for spectra). Returns the
 * loss; NaN (and Hv NaN) when n is out of range or out of memory. Leaves the
 * forward pass at theta in m. */
double ds_cnn_hvp(ds_cnn *m, const double *theta, const double *X, const double *Y, int n,
                  const ds_loss *l, const double *v, double *Hv);
/* Jacobian-vector product (cnnrop.c, the tangent forward alone): JV (dout x
 * n) = J(theta) v, the directional derivative of F along v, over n <= nmax
 * samples (dropout as set). DS_OK; DS_EINPUT (n out of range) or DS_ENOMEM
 * with JV NaN. Leaves the forward pass at theta in m. */
int ds_cnn_jvp(ds_cnn *m, const double *theta, const double *X, int n, const double *v,
               double *JV);
/* The linearised model f_lin(theta) = F(theta0) + J(theta0) (theta - theta0)
 * of a CNN around theta0 (cnnrop.c; seed 003's model.approx lin, as the MLPs'
 * ds_approx with order 1): forward = one forward pass at theta0 and a JVP;
 * the gradient of L(f_lin) is J(theta0)^T dL/dF (the backward pass at theta0).
 * Any X of n <= the net's nmax samples (nothing about X is cached). The net
 * is shared: its forward pass is left at theta0. Dropout as set on the net.
 * The sweep's model.approx lin of a CNN (src/worker/point.c). */
typedef struct {
  ds_cnn *m;
  double *theta0, *d, *F, *dF;
} ds_cnn_lin;
int ds_cnn_lin_init(ds_cnn_lin *a, ds_cnn *m, const double *theta0); /* copies theta0 */
void ds_cnn_lin_free(ds_cnn_lin *a);
/* f_lin's outputs (dout x n, inside a; NaN when n is out of range). */
const double *ds_cnn_lin_forward(ds_cnn_lin *a, const double *theta, const double *X, int n);
/* Loss of f_lin (ds_loss_eval) and its gradient in theta; returns the loss. */
double ds_cnn_lin_loss_grad(ds_cnn_lin *a, const double *theta, const double *X, const double *Y,
                            int n, const ds_loss *l, double *grad);

/* The neural quadratic model of a CNN around theta0 (cnnquad.c; seed 003's
 * model.approx quad, as the MLPs' ds_approx of order 2):
 *   f_quad(theta) = F(theta0) + J(theta0) d + 1/2 D2F(theta0)[d, d],
 * d = theta - theta0, by second-order forward mode through every layer kind
 * (ReLU masks, max pooling's arg-maxes and dropout masks of theta0's forward
 * frozen); the gradient of L(f_quad) is J(theta0)^T g + H_<g,F>(theta0) d, g =
 * dL/dF (one backward pass with R). Any X of n <= the net's nmax samples.
 * The net is shared: its forward pass is left at theta0. Dropout as set.
 * After a forward: RF = J d and QF = D2F[d, d] (dout x n, inside a). */
typedef struct {
  ds_cnn *m;
  double *theta0, *d, *F, *dF;
  const double *RF, *QF;
  void *buf;
} ds_cnn_quad;
/* Copies theta0. DS_EINPUT (message) when a layer kind has no rule. */
int ds_cnn_quad_init(ds_cnn_quad *a, ds_cnn *m, const double *theta0);
void ds_cnn_quad_free(ds_cnn_quad *a);
/* f_quad's outputs (dout x n, inside a; NaN when n is out of range). */
const double *ds_cnn_quad_forward(ds_cnn_quad *a, const double *theta, const double *X, int n);
/* Loss of f_quad (ds_loss_eval) and its gradient in theta; returns the loss. */
double ds_cnn_quad_loss_grad(ds_cnn_quad *a, const double *theta, const double *X,
                             const double *Y, int n, const ds_loss *l, double *grad);
#endif
