/* cost.c -- a point's network shape, its estimated cost in floating-point
 * operations (used to hand out the longest points first) and the estimated
 * size of its trajectory in the store (used to refuse oversized grids). */
#include <math.h>

#include "config_internal.h"

void ds_point_dims(const ds_point_cfg *c, int *dims) {
  dims[0] = c->data.d_in;
  for (int l = 1; l < c->model.depth; l++) dims[l] = c->model.width;
  dims[c->model.depth] = c->data.d_out;
}

/* sum_l d_l * d_{l-1}: multiply-adds of one sample through the network. */
static double cost_weights(const ds_point_cfg *c) {
  int dims[65];
  double w = 0;
  if (c->model.depth < 1 || c->model.depth > 64) return 0;
  ds_point_dims(c, dims);
  for (int l = 1; l <= c->model.depth; l++) w += (double)dims[l] * dims[l - 1];
  return w;
}

/* Records over a run: every-k records plus log-spaced ones (an upper bound;
 * the exact schedule is the worker's, ds_worker_record_step). */
static double cost_records(const ds_point_cfg *c) {
  double steps = (double)c->train.steps, r = 0;
  if (c->record.every > 0) r += floor(steps / (double)c->record.every) + 1;
  if (c->record.per_decade > 0) r += c->record.per_decade * log10(steps > 1 ? steps : 1) + 1;
  return r;
}

double ds_point_cost(const ds_point_cfg *c) {
  double w = cost_weights(c), rec = cost_records(c);
  double flops = (double)c->train.steps * 6.0 * c->data.n_train * w;
  double per_rec = 0;
  if (c->record.series & DS_REC_TEST_LOSS) per_rec += 2.0 * c->data.n_test * w;
  if (c->record.series & DS_REC_LAYER_SV) {
    int dims[65];
    if (c->model.depth >= 1 && c->model.depth <= 64) {
      ds_point_dims(c, dims);
      for (int l = 1; l <= c->model.depth; l++) {
        double m = dims[l], n = dims[l - 1];
        per_rec += 4.0 * m * n * (m < n ? m : n); /* dense SVD */
      }
    }
  }
  return flops + rec * per_rec;
}

double ds_point_store_bytes(const ds_point_cfg *c) {
  double rec = cost_records(c), per_rec = 0;
  unsigned s = c->record.series;
  int scalars = !!(s & DS_REC_LOSS) + !!(s & DS_REC_TEST_LOSS) + !!(s & DS_REC_GRAD_NORM) +
                !!(s & DS_REC_PARAM_NORM);
  per_rec += scalars * (8.0 + 8.0);                              /* step + value */
  if (s & DS_REC_LAYER_FRO) per_rec += 8.0 + 8.0 * c->model.depth; /* one row per layer set */
  if (s & DS_REC_LAYER_SV) per_rec += c->model.depth * (8.0 + 8.0 * c->record.top_k); /* sv/W<l> */
  return rec * per_rec;
}
