/* tile.c -- a tile of map points trained together (include/dynsweep/tile.h):
 * the data and the initial weights are built once, exactly as
 * ds_worker_run_point builds them for the tile's first point (src/worker/
 * point.c: streams keyed by sweep seed and replica, not by grid position), and
 * ds_tile_gd (src/nn/tile.c) trains every point, feeding one ds_map_acc each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"
#include "dynsweep/map.h"
#include "dynsweep/models.h"
#include "dynsweep/nn.h"
#include "dynsweep/tile.h"
#include "dynsweep/util.h"
#include "dynsweep/worker.h"

/* What the tile trainer takes: the one table (include/dynsweep/models.h). */
int ds_tile_supported(const ds_point_cfg *c, char *why, int whylen) {
  return ds_net_supported(c, DS_TRAINER_TILE, why, whylen);
}

/* The configuration with the four per-point fields set to those of ref. */
static ds_point_cfg shared_part(const ds_point_cfg *c, const ds_point_cfg *ref) {
  ds_point_cfg s = *c;
  s.optimizer.lr = ref->optimizer.lr;
  s.optimizer.lr_in = ref->optimizer.lr_in;
  s.optimizer.lr_out = ref->optimizer.lr_out;
  s.model.init_offset = ref->model.init_offset;
  return s;
}

typedef struct {
  ds_map_acc *acc;
} acc_arg;

static int feed(void *arg, int p, int64_t t, double loss) {
  acc_arg *a = arg;
  return ds_map_acc_add(&a->acc[p], loss);
}

int ds_tile_train(const ds_sweep *sw, const ds_point *pts, int npts, ds_map_rec *out) {
  if (npts < 1) return ds_fail(DS_EINPUT, "tile: no points");
  const ds_point_cfg *c = &pts[0].cfg;
  char why[160];
  if (!ds_tile_supported(c, why, sizeof why))
    return ds_fail(DS_EINPUT, "tile: point %lld: not supported by tiles: %s", (long long)pts[0].id,
                   why);
  for (int i = 1; i < npts; i++) {
    ds_point_cfg a = shared_part(&pts[i].cfg, c);
    if (pts[i].replica != pts[0].replica || memcmp(&a, c, sizeof a) != 0)
      return ds_fail(DS_EINPUT,
                     "tile: point %lld differs from point %lld in more than lr, lr_in, lr_out, "
                     "init_offset (or in its replica): it cannot share the tile",
                     (long long)pts[i].id, (long long)pts[0].id);
  }
  int dims[DS_MAX_LIST + 2];
  ds_point_dims(c, dims);
  int act = ds_model_act(c->model.type);
  ds_mlp mlp;
  DS_TRY(ds_mlp_setup(&mlp, act, 0, 2, dims, c->model.param, c->model.train_output));
  ds_dataset train = {0}, test = {0};
  ds_loss loss;
  double *theta = ds_calloc(mlp.nparams, sizeof *theta);
  double *lr = ds_calloc(3 * (size_t)npts, sizeof *lr);
  ds_map_acc *acc = ds_calloc((size_t)npts, sizeof *acc);
  int rc = theta && lr && acc ? DS_OK : DS_ENOMEM;
  if (rc == DS_OK) { /* the weights as setup_model draws them, the offset per point below */
    ds_model_spec spec = c->model;
    spec.init_offset = 0.0;
    ds_rng ri;
    ds_rng_init(&ri, sw->seed, 0, pts[0].replica, DS_STREAM_INIT);
    rc = ds_mlp_init_weights(&mlp, &spec, &ri, theta);
  }
  if (rc == DS_OK) { /* the data as setup_data builds it */
    ds_rng rd;
    ds_rng_init(&rd, sw->seed, 0, pts[0].replica, DS_STREAM_DATA);
    rc = ds_data_build(&c->data, &rd, &train, &test);
  }
  if (rc == DS_OK && (train.d_in != dims[0] || train.d_out != dims[2]))
    rc = ds_fail(DS_EINPUT, "data set is %d -> %d but the model is %d -> %d", train.d_in,
                 train.d_out, dims[0], dims[2]);
  if (rc == DS_OK) rc = ds_loss_setup(&loss, &c->loss, train.n);
  if (rc == DS_OK) {
    double *lr_in = lr, *lr_out = lr + npts, *off = lr + 2 * (size_t)npts;
    for (int i = 0; i < npts; i++) { /* ds_mlp_gd_step_layers' choice, depth 2 */
      const ds_optim_spec *o = &pts[i].cfg.optimizer;
      lr_in[i] = o->lr_in > 0 ? o->lr_in : o->lr;
      lr_out[i] = o->lr_out > 0 ? o->lr_out : o->lr;
      off[i] = pts[i].cfg.model.init_offset;
      ds_map_acc_start_rule(&acc[i], sw->map_early_stop);
    }
    ds_tile_net net = {act, c->model.param, c->model.train_output, dims[0], dims[1], dims[2],
                       train.n, c->model.gain, loss.c};
    acc_arg a = {acc};
    rc = ds_tile_gd(&net, train.X, train.Y, theta, npts, lr_in, lr_out, off, c->train.steps,
                    feed, &a);
  }
  if (rc == DS_OK)
    for (int i = 0; i < npts; i++)
      ds_map_acc_finish(&acc[i], c->train.steps, c->record.spectra.catapult_factor, &out[i]);
  ds_dataset_free(&train);
  ds_dataset_free(&test);
  ds_mlp_free(&mlp);
  free(theta);
  free(lr);
  free(acc);
  return rc;
}

double ds_tile_seconds(const ds_sweep *sw, const ds_point *p, int npts, int64_t steps) {
  char why[160];
  if (npts < 1 || steps < 1 || !ds_tile_supported(&p->cfg, why, sizeof why)) return 0.0;
  ds_point *pts = ds_calloc((size_t)npts, sizeof *pts);
  ds_map_rec *rec = ds_calloc((size_t)npts, sizeof *rec);
  double best = 0.0;
  if (pts && rec) {
    for (int i = 0; i < npts; i++) { /* lr 0: the loss stays put, every step runs */
      pts[i] = *p;
      pts[i].cfg.optimizer.lr = pts[i].cfg.optimizer.lr_in = pts[i].cfg.optimizer.lr_out = 0.0;
      pts[i].cfg.train.steps = 2;
    }
    int rc = ds_tile_train(sw, pts, 1, rec); /* warm-up: LIBXSMM's JIT, the caches */
    for (int i = 0; i < npts; i++) pts[i].cfg.train.steps = steps;
    for (int r = 0; r < 3 && rc == DS_OK; r++) {
      double t0 = ds_cpu_time();
      rc = ds_tile_train(sw, pts, npts, rec);
      double s = ds_cpu_time() - t0;
      if (rc == DS_OK && (best == 0.0 || s < best)) best = s;
    }
    if (rc != DS_OK) best = 0.0;
  }
  free(pts);
  free(rec);
  return best / ((double)npts * (double)steps);
}
