/* cnn.h -- convolutional nets (issue 26, first vertical slice): 2-D
 * convolutions as GEMMs on im2col patches of blocks of samples (OpenBLAS DGEMM),
 * ReLU, global average pooling or flatten, and a dense readout.
 *
 * Data layout: as the MLPs, one column per sample; an image column holds its
 * features in CHW order (c H W + r W + x). X (C0 H0 W0 x n), F (dout x n).
 *
 * Net: nconv x [conv s x s, stride t, C channels, ReLU], then global average
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
/* Doubles of the col scratch ds_conv_forward/backward need for calls of up
 * to n samples (the caller allocates it once, for its largest layer). */
size_t ds_conv_col_size(const ds_conv_geom *g, int n);
/* Global average pooling: G (c x n) = means of A (c p x n) over p positions;
 * backward dA = dG / p spread over the positions. */
void ds_gap_forward(double *G, const double *A, int c, int p, int n);
void ds_gap_backward(double *dA, const double *dG, int c, int p, int n);

typedef struct ds_cnn ds_cnn;

/* A net with work space for up to nmax samples; NULL on a bad spec (message
 * in err, may be NULL) or out of memory. */
ds_cnn *ds_cnn_create(const ds_cnn_spec *spec, int nmax, char *err, size_t errlen);
void ds_cnn_free(ds_cnn *m);
size_t ds_cnn_nparams(const ds_cnn *m);
int ds_cnn_din(const ds_cnn *m);        /* c0 h0 w0 */
int ds_cnn_readout_din(const ds_cnn *m); /* the dense readout's fan-in */
/* Initial weights from rng in theta order (see the top of this file). */
void ds_cnn_init(const ds_cnn *m, ds_rng *rng, double *theta);
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
 * in theta order (each conv kernel as C_out x C_in s^2, then the readout as
 * dout x d_in); *off: where it starts in theta. The singular values do not
 * depend on the storage order, so none is given. */
int ds_cnn_nweights(const ds_cnn *m);
void ds_cnn_weight(const ds_cnn *m, int i, size_t *off, int *rows, int *cols);
/* Forward, loss (ds_loss_eval) and gradient; returns the loss. */
double ds_cnn_loss_grad(ds_cnn *m, const double *theta, const double *X, const double *Y, int n,
                        const ds_loss *l, double *grad);
#endif
