/* cnnlayers.c -- the CNN's layers other than the convolution (cnn.h):
 * average and max pooling, dropout masks, the layer kinds' names and the
 * layer list of the fixed nets of ds_cnn_spec.
 *
 * Pooling has no padding and drops the windows that do not fit, as PyTorch's
 * avg_pool2d / max_pool2d (ceil_mode False): ho = floor((h - size)/stride) + 1.
 * Average pooling is linear: B = (1/size^2) sum over the window, so its
 * adjoint spreads dB/size^2 over the window (overlapping windows add).
 * Max pooling is piecewise linear: B = A[arg], the arg-max frozen (first
 * of ties, as PyTorch's CPU kernel), so its adjoint adds dB at arg.
 *
 * Dropout: inverted dropout, y = x m, m = 1/(1-p) with probability 1 - p
 * and 0 otherwise. The mask of (step, sample, unit) comes from one Philox
 * block whose key is (seed, step, sample id) and whose counter is (unit,
 * layer): it depends on nothing else (not on the batch, the rank, or the
 * order of the calls), so runs agree across rank counts. */
#include <string.h>

#include "dynsweep/cnn.h"

static const char *const kind_names[DS_LAYER_NKINDS] = {
    "conv", "relu", "avgpool", "maxpool", "gap", "flatten", "dense", "resblock", "dropout"};

const char *ds_cnn_kind_name(int kind) {
  return kind >= 0 && kind < DS_LAYER_NKINDS ? kind_names[kind] : "?";
}

int ds_cnn_spec_layers(const ds_cnn_spec *spec, ds_cnn_layer *layers) {
  int n = 0;
  for (int l = 0; l < spec->nconv; l++) {
    layers[n++] = (ds_cnn_layer){.kind = DS_LAYER_CONV, .cout = spec->channels,
                                 .size = spec->ksize, .stride = spec->stride, .same = spec->same};
    layers[n++] = (ds_cnn_layer){.kind = DS_LAYER_RELU};
  }
  layers[n++] = (ds_cnn_layer){.kind = spec->readout == DS_CNN_GAP ? DS_LAYER_GAP
                                                                   : DS_LAYER_FLATTEN};
  return n;
}

int ds_pool_geom_set(ds_pool_geom *g, int c, int h, int w, int size, int stride) {
  if (stride == 0) stride = size;
  if (c < 1 || h < 1 || w < 1 || size < 1 || stride < 1 || size > h || size > w)
    return DS_EINPUT;
  *g = (ds_pool_geom){.c = c, .h = h, .w = w, .size = size, .stride = stride,
                      .ho = (h - size) / stride + 1, .wo = (w - size) / stride + 1};
  return DS_OK;
}

void ds_avgpool_forward(double *B, const double *A, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  const double scale = 1.0 / ((double)g->size * g->size);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) { /* sample-major, then channel */
    const double *a = A + cc * din;
    double *b = B + cc * dout;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        double sum = 0.0;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++)
            sum += a[(size_t)(g->stride * i + p) * g->w + g->stride * j + q];
        b[(size_t)i * g->wo + j] = sum * scale;
      }
  }
}

void ds_avgpool_backward(double *dA, const double *dB, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  const double scale = 1.0 / ((double)g->size * g->size);
  memset(dA, 0, (size_t)n * g->c * din * sizeof *dA);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) {
    double *a = dA + cc * din;
    const double *b = dB + cc * dout;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        double v = b[(size_t)i * g->wo + j] * scale;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++)
            a[(size_t)(g->stride * i + p) * g->w + g->stride * j + q] += v;
      }
  }
}

void ds_maxpool_forward(double *B, int *arg, const double *A, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) {
    const double *a = A + cc * din;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        int best = (g->stride * i) * g->w + g->stride * j;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++) {
            int k = (g->stride * i + p) * g->w + g->stride * j + q;
            if (a[k] > a[best]) best = k;
          }
        B[cc * dout + (size_t)i * g->wo + j] = a[best];
        arg[cc * dout + (size_t)i * g->wo + j] = best;
      }
  }
}

void ds_maxpool_backward(double *dA, const double *dB, const int *arg, const ds_pool_geom *g,
                         int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  memset(dA, 0, (size_t)n * g->c * din * sizeof *dA);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++)
    for (size_t k = 0; k < dout; k++) dA[cc * din + arg[cc * dout + k]] += dB[cc * dout + k];
}

void ds_dropout_mask(double *mask, size_t units, int n, double p, uint64_t seed, uint64_t step,
                     const int *ids, int layer) {
  const double keep = 1.0 / (1.0 - p);
  for (int i = 0; i < n; i++) {
    ds_rng r;
    ds_rng_init(&r, seed, step, (uint32_t)(ids ? ids[i] : i), DS_STREAM_DROPOUT);
    for (size_t j = 0; j < units; j++) {
      uint32_t ctr[4] = {(uint32_t)j, (uint32_t)layer, 0, 0}, out[4];
      ds_philox4x32(r.key, ctr, out);
      double u = ((double)out[0] + 0.5) * (1.0 / 4294967296.0);
      mask[(size_t)i * units + j] = u >= p ? keep : 0.0;
    }
  }
}
