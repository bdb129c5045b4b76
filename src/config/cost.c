/* cost.c -- a point's network shape, its estimated cost in floating-point
 * operations (used to hand out the longest points first) and the estimated
 * size of its trajectory in the store (used to refuse oversized grids). */
#include <math.h>

#include "config_internal.h"

void ds_point_dims(const ds_point_cfg *c, int *dims) {
  int use_list = c->model.nwidths > 0 && c->model.nwidths == c->model.depth - 1;
  dims[0] = c->data.d_in;
  for (int l = 1; l < c->model.depth; l++) dims[l] = use_list ? c->model.widths[l - 1] : c->model.width;
  dims[c->model.depth] = c->data.d_out;
}

/* sum_l d_l * d_{l-1}: multiply-adds of one sample through the network (e2e:
 * the single d_out x d_in matrix). */
static double cost_weights(const ds_point_cfg *c) {
  int dims[65];
  double w = 0;
  if (c->model.type == DS_MODEL_E2E) return (double)c->data.d_in * c->data.d_out;
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

/* Samples per step: the minibatch, except for gd (always full batch). */
static double cost_batch(const ds_point_cfg *c) {
  int b = c->optimizer.batch_size;
  if (c->optimizer.type == DS_OPT_GD || b <= 0 || b > c->data.n_train) return c->data.n_train;
  return b;
}

/* Parameters: weights plus biases. */
static double cost_params(const ds_point_cfg *c) {
  int dims[65];
  double p = cost_weights(c);
  if (c->model.bias && c->model.type != DS_MODEL_E2E && c->model.depth >= 1 && c->model.depth <= 64) {
    ds_point_dims(c, dims);
    for (int l = 1; l <= c->model.depth; l++) p += dims[l];
  }
  return p;
}

/* Flops per parameter of the update beyond theta -= lr g. */
static double cost_update(ds_opt_kind k) {
  switch (k) {
  case DS_OPT_MOMENTUM:
  case DS_OPT_NESTEROV: return 2;
  case DS_OPT_ADAGRAD:
  case DS_OPT_RMSPROP: return 4;
  case DS_OPT_ADADELTA: return 6;
  case DS_OPT_ADAM: return 8;
  default: return 0;
  }
}

double ds_point_cost(const ds_point_cfg *c) {
  double w = cost_weights(c), rec = cost_records(c), steps = (double)c->train.steps;
  /* forward + backward ~ 6 flops per weight and sample; the linearised model
   * adds a Jacobian-vector product (x2), the quadratic model a second-order
   * term (x4); e2e adds an SVD of W_e per step */
  double approx = c->model.approx == DS_APPROX_LIN ? 2.0 : c->model.approx == DS_APPROX_QUAD ? 4.0 : 1.0;
  double flops = steps * 6.0 * cost_batch(c) * w * approx;
  flops += steps * cost_update(c->optimizer.type) * cost_params(c);
  if (c->model.type == DS_MODEL_E2E) {
    double m = c->data.d_out, n = c->data.d_in;
    flops += steps * 4.0 * m * n * (m < n ? m : n);
  }
  double per_rec = 0;
  if (c->record.series & DS_REC_TEST_LOSS) per_rec += 2.0 * c->data.n_test * w;
  /* a record of the train loss under minibatches needs a full-batch forward pass */
  if ((c->record.series & (DS_REC_LOSS | DS_REC_LOSS_GAP)) && cost_batch(c) < c->data.n_train)
    per_rec += 2.0 * c->data.n_train * w;
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
                !!(s & DS_REC_PARAM_NORM) + !!(s & DS_REC_LOSS_GAP) + !!(s & DS_REC_LR);
  per_rec += scalars * (8.0 + 8.0);                              /* step + value */
  if (s & DS_REC_LAYER_FRO) per_rec += 8.0 + 8.0 * c->model.depth; /* one row per layer set */
  if (s & DS_REC_LAYER_SV) per_rec += c->model.depth * (8.0 + 8.0 * c->record.top_k); /* sv/W<l> */
  return rec * per_rec;
}
