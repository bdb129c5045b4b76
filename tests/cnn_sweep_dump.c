/* cnn_sweep_dump.c -- for tests/cnn_sweep.py: a CNN sweep point's net, initial
 * weights and data, drawn the way the point trainer says it draws them (data
 * stream (seed, replica, DS_STREAM_DATA), init stream (seed, replica,
 * DS_STREAM_INIT), src/worker/cnnpoint.c), so that PyTorch can replay the
 * point's GD from them and compare with the loss trajectory in the store.
 *
 *   cnn_sweep_dump SWEEP POINT FILE
 * FILE: int32 c0 h0 w0 nconv channels kernel stride same readout dout param
 * n_train n_test; float64 beta lr; theta0; X train (CHW columns); Y train;
 * X test; Y test. */
#include <stdio.h>
#include <stdlib.h>

#include "dynsweep/config.h"
#include "dynsweep/data.h"
#include "dynsweep/util.h"
#include "../src/worker/cnnpoint.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: cnn_sweep_dump SWEEP POINT FILE\n");
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
  FILE *f = fopen(argv[3], "wb");
  if (!f) return 1;
  int h[13] = {s.c0, s.h0, s.w0, s.nconv, s.channels, s.ksize, s.stride, s.same, s.readout,
               s.dout, s.param, tr.n, te.n};
  double d[2] = {s.beta, c->optimizer.lr};
  fwrite(h, sizeof h, 1, f);
  fwrite(d, sizeof d, 1, f);
  fwrite(theta, sizeof *theta, np, f);
  fwrite(tr.X, sizeof(double), (size_t)tr.d_in * tr.n, f);
  fwrite(tr.Y, sizeof(double), (size_t)tr.d_out * tr.n, f);
  if (te.n > 0) {
    fwrite(te.X, sizeof(double), (size_t)te.d_in * te.n, f);
    fwrite(te.Y, sizeof(double), (size_t)te.d_out * te.n, f);
  }
  int bad = fclose(f) != 0;
  ds_cnn_free(net);
  free(theta);
  free(grad);
  ds_dataset_free(&tr);
  ds_dataset_free(&te);
  ds_sweep_free(&sw);
  return bad;
}
