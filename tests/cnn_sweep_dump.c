/* cnn_sweep_dump.c -- for tests/cnn_sweep.py: a CNN sweep point's net, initial
 * weights and data, drawn the way the point trainer says it draws them (data
 * stream (seed, replica, DS_STREAM_DATA), init stream (seed, replica,
 * DS_STREAM_INIT), src/worker/cnnpoint.c), so that PyTorch can replay the
 * point's GD from them and compare with the loss trajectory in the store.
 *
 *   cnn_sweep_dump SWEEP POINT FILE [STEPS]
 * FILE: int32 c0 h0 w0 nconv channels kernel stride same readout dout param
 * n_train n_test; float64 beta lr; theta0; X train (CHW columns); Y train;
 * X test; Y test.
 * With STEPS (tests/cnn_dropout_sweep.py: nets with dropout, whose GD needs
 * every step's masks to be replayed) FILE is instead a layer-list dump as
 * tests/cnn_layers_torch.py's read_dump reads it (cnn_testlib.h's dump_head:
 * the net's layers from model.net, ds_cnn_net_layers, as the point trainer
 * builds them; steps STEPS, ntest n_test), body theta0, X train, Y train,
 * X test, Y test, then the dropout masks of steps 0..STEPS of the training
 * set (dump_masks: ds_dropout_mask with the point's ds_cnnpoint_drop_seed,
 * the GD step t as the step, the sample's training-set index, the layer's
 * index in the list -- the keys point.c's step_loss_grad gives
 * ds_cnn_dropout for a full-batch step). */
#include <stdio.h>
#include <stdlib.h>

#include "dynsweep/config.h"
#include "dynsweep/data.h"
#include "dynsweep/models.h"
#include "dynsweep/util.h"
#include "../src/worker/cnnpoint.h"
#include "cnn_testlib.h"

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: cnn_sweep_dump SWEEP POINT FILE [STEPS]\n");
    return 2;
  }
  ds_sweep sw;
  ds_point p;
  ds_dataset tr = {0}, te = {0};
  if (ds_sweep_load(argv[1], &sw) || ds_sweep_point(&sw, atoll(argv[2]), &p)) {
    fprintf(stderr, "cnn_sweep_dump: %s\n", ds_errmsg());
    return 1;
  }
  const ds_point_cfg *c = &p.cfg;
  ds_rng rd, ri;
  ds_rng_init(&rd, sw.seed, 0, p.replica, DS_STREAM_DATA);
  ds_rng_init(&ri, sw.seed, 0, p.replica, DS_STREAM_INIT);
  ds_cnn_spec s;
  ds_cnn *net = NULL;
  double *theta = NULL, *grad = NULL;
  size_t np = 0;
  if (ds_data_build(&c->data, &rd, &tr, &te) || ds_cnnpoint_spec(c, tr.d_in, tr.d_out, &s) ||
      ds_cnnpoint_create(c, tr.d_in, tr.d_out, tr.n, &ri, &net, &theta, &grad, &np)) {
    fprintf(stderr, "cnn_sweep_dump: %s\n", ds_errmsg());
    return 1;
  }
  /* with STEPS: the layers as the point trainer builds them (ds_cnnpoint_create) */
  ds_cnn_net nt;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  char err[300] = "";
  int nl = 0, steps = argc == 5 ? atoi(argv[4]) : 0;
  if (argc == 5) {
    ds_model_cnn_net(c, &nt);
    nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
    if (nl < 0 || steps < 0) {
      fprintf(stderr, "cnn_sweep_dump: %s\n", nl < 0 ? err : "STEPS must be >= 0");
      return 1;
    }
  }
  FILE *f = fopen(argv[3], "wb");
  if (!f) return 1;
  if (argc == 5) {
    lspec sp = {.c0 = s.c0, .h0 = s.h0, .w0 = s.w0, .dout = s.dout, .param = s.param,
                .beta = s.beta};
    dump_head(f, &sp, L, nl, tr.n, steps, te.n, c->optimizer.lr);
  } else {
    int h[13] = {s.c0, s.h0, s.w0, s.nconv, s.channels, s.ksize, s.stride, s.same, s.readout,
                 s.dout, s.param, tr.n, te.n};
    double d[2] = {s.beta, c->optimizer.lr};
    fwrite(h, sizeof h, 1, f);
    fwrite(d, sizeof d, 1, f);
  }
  fwrite(theta, sizeof *theta, np, f);
  fwrite(tr.X, sizeof(double), (size_t)tr.d_in * tr.n, f);
  fwrite(tr.Y, sizeof(double), (size_t)tr.d_out * tr.n, f);
  if (te.n > 0) {
    fwrite(te.X, sizeof(double), (size_t)te.d_in * te.n, f);
    fwrite(te.Y, sizeof(double), (size_t)te.d_out * te.n, f);
  }
  if (argc == 5) dump_masks(f, net, L, nl, tr.n, steps, ds_cnnpoint_drop_seed(&sw, &p));
  int bad = fclose(f) != 0;
  ds_cnn_free(net);
  free(theta);
  free(grad);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  ds_sweep_free(&sw);
  return bad;
}
