/* cnn_testlib.h -- what the C tests of CNN layer lists share (test_cnn.c,
 * test_cnn_quad.c; tests/cnn.cmake links cnn_testlib.c into both): the
 * layer-list macros, a spec of a layer list or a named net and the net it
 * makes, random normals and one-hot targets, and the parts of the dumps that
 * tests/cnn_layers_torch.py's read_dump reads (header and layers, dropout
 * masks). */
#ifndef DS_CNN_TESTLIB_H
#define DS_CNN_TESTLIB_H
#include <stdint.h>
#include <stdio.h>

#include "dynsweep/cnn.h"

#define LCONV(c, s, t, same) {DS_LAYER_CONV, c, s, t, same, 0.0, 0, 0, 0.0}
#define LK(k) {k, 0, 0, 0, 0, 0.0, 0, 0, 0.0}
#define LPOOL(k, w, t) {k, 0, w, t, 0, 0.0, 0, 0, 0.0}
#define LRES(c, s, t) {DS_LAYER_RESBLOCK, c, s, t, 1, 0.0, 0, 0, 0.0}

typedef struct {
  const char *name;
  int c0, h0, w0, dout, param;
  double beta;
  int nl;
  ds_cnn_layer L[24];
  int net; /* >= 0: the layers are ds_cnn_net_layers of this named net */
  int width, depth;
  double p; /* named nets' dropout */
  int over; /* tf_mnist: overparam */
} lspec;

/* The small layer lists both tests run (test_cnn.c's lspecs[0..4], also
 * against finite differences; test_cnn_quad.c's qspecs[1..5]): avg pooling
 * (floor), max pooling with stride and gap, resblocks with both shortcuts,
 * hidden dense with dropout on. */
#define LSPECS_SMALL \
    {"avgpool 2 (7x6: floor)", 2, 7, 6, 2, DS_PARAM_NTK, 0.5, 6, \
     {LCONV(3, 3, 1, 1), LK(DS_LAYER_RELU), LPOOL(DS_LAYER_AVGPOOL, 2, 0), LCONV(2, 3, 1, 1), \
      LK(DS_LAYER_RELU), LK(DS_LAYER_FLATTEN)}, -1, 0, 0, 0, 0}, \
    {"maxpool 3 stride 2, gap", 1, 8, 8, 1, DS_PARAM_STANDARD, 1.0, 6, \
     {LCONV(3, 3, 1, 1), LK(DS_LAYER_RELU), LPOOL(DS_LAYER_MAXPOOL, 3, 2), LCONV(2, 2, 1, 0), \
      LK(DS_LAYER_RELU), LK(DS_LAYER_GAP)}, -1, 0, 0, 0, 0}, \
    {"resblock, identity shortcut", 1, 6, 6, 2, DS_PARAM_NTK, 1.0, 4, \
     {LCONV(3, 3, 1, 1), LRES(3, 3, 1), LK(DS_LAYER_RELU), LK(DS_LAYER_GAP)}, -1, 0, 0, 0, 0}, \
    {"resblocks, 1x1 conv shortcut (stride 2, channels)", 2, 7, 7, 1, DS_PARAM_NTK, 0.3, 5, \
     {LCONV(2, 3, 1, 1), LRES(4, 3, 2), LRES(4, 3, 1), LK(DS_LAYER_RELU), LK(DS_LAYER_FLATTEN)}, \
     -1, 0, 0, 0, 0}, \
    {"hidden dense, dropout 0.5 on", 1, 6, 6, 3, DS_PARAM_NTK, 1.0, 7, \
     {LCONV(2, 3, 1, 1), LK(DS_LAYER_RELU), LPOOL(DS_LAYER_MAXPOOL, 2, 0), LK(DS_LAYER_FLATTEN), \
      {DS_LAYER_DENSE, 5, 0, 0, 0, 0.0, 0, 0, 0.0}, LK(DS_LAYER_RELU), \
      {DS_LAYER_DROPOUT, 0, 0, 0, 0, 0.5, 0, 0, 0.0}}, \
     -1, 0, 0, 0, 0}

/* The named net of a spec (kernel 3, stride 1, same, flatten readout, pool
 * 2 every layer, DAG edge drop 0.5). */
ds_cnn_net net_of(const lspec *sp);
/* The spec's layer list (named nets through ds_cnn_net_layers) into L, nl,
 * and the net for n samples; NULL (a failed CHECK) when refused. */
ds_cnn *lcreate(const lspec *sp, int n, ds_cnn_layer *L, int *nl);
void randn(double *x, size_t n, ds_rng *r);
/* One-hot targets of n samples (class (i + k) mod dout). */
void onehot(double *Y, int dout, int n, int k);
/* A dump's head: int32 nl c0 h0 w0 dout param n steps ntest rmask, float64
 * beta lr, then per layer int32 kind cout size (dag: its depth) stride same
 * nobias and float64 p. ntest: test samples in the body (cnn_sweep_dump),
 * else 0; rmask: 1 when the readout is masked (the list ending in a dag with
 * rdrop > 0). */
void dump_head(FILE *f, const lspec *sp, const ds_cnn_layer *L, int nl, int n, int steps,
               int ntest, double lr);
/* The dropout masks of steps 0..steps for samples 0..n-1, as
 * ds_cnn_dropout(m, 1, seed, s, NULL) draws them (the C tests' seed 17, a
 * sweep point's ds_cnnpoint_drop_seed), every dropout layer of each step in
 * turn. */
void dump_masks(FILE *f, ds_cnn *m, const ds_cnn_layer *L, int nl, int n, int steps,
                uint64_t seed);
#endif
