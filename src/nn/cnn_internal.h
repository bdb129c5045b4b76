/* cnn_internal.h -- the layers of a ds_cnn (private to src/nn/): shapes,
 * theta offsets and the buffers of the forward pass, shared by cnn.c
 * (forward, backward) and cnnrop.c (the R-operator). */
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
} ds_cnn_ly;

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
