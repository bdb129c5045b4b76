/* point.c -- run one grid point: data, network, optimiser loop, records.
 *
 * Random streams: the data stream and the init stream are keyed by (sweep
 * seed, replica, stream) and NOT by the point's grid position, so points that
 * differ only in, say, the learning rate start from the same weights on the
 * same data (common random numbers: a phase diagram over lr then shows the
 * effect of lr alone). A replica is an independent draw of both. Nothing
 * depends on which rank runs the point. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "dynsweep/data.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/store.h"
#include "dynsweep/worker.h"

int ds_worker_record_step(const ds_record_spec *r, int64_t t, int64_t steps) {
  if (t == 0 || t == steps) return 1;
  if (r->every > 0 && t % r->every == 0) return 1;
  if (r->per_decade > 0) {
    /* t is on the log grid if it is the rounding of 10^(k/per_decade) for some k */
    double k = floor(log10((double)t) * r->per_decade);
    for (int d = 0; d <= 1; d++) {
      double v = floor(pow(10.0, (k + d) / r->per_decade) + 0.5);
      if ((int64_t)v == t) return 1;
    }
  }
  return 0;
}

static double loss_coef(ds_reduction red, int n) {
  switch (red) {
  case DS_RED_SUM: return 1.0;
  case DS_RED_HALF_SUM: return 0.5;
  case DS_RED_MEAN: return 1.0 / n;
  case DS_RED_HALF_MEAN: return 0.5 / n;
  }
  return 0.5;
}

/* Indices of the series this point records (-1 where not recorded). */
typedef struct {
  int loss, test_loss, grad_norm, param_norm, layer_fro;
  int *sv; /* per layer */
  int svk; /* top-k requested */
} series_ix;

static int add_series(ds_traj *tr, const ds_point_cfg *c, const int *dims, series_ix *ix) {
  unsigned s = c->record.series;
  int L = c->model.depth;
  char def[256];
  static const char *red_txt[] = {"sum", "(1/2) sum", "(1/n) sum", "(1/(2n)) sum"};
  snprintf(def, sizeof def, "L = %s over samples and outputs of (f - y)^2, training set (n = %d)",
           red_txt[c->loss.reduction], c->data.n_train);
  ix->loss = (s & DS_REC_LOSS) ? ds_traj_add(tr, "loss", 1, "1", def) : -1;
  snprintf(def, sizeof def, "L = %s over samples and outputs of (f - y)^2, test set (n = %d)",
           red_txt[c->loss.reduction], c->data.n_test);
  ix->test_loss = (s & DS_REC_TEST_LOSS) && c->data.n_test > 0
                      ? ds_traj_add(tr, "test_loss", 1, "1", def) : -1;
  ix->grad_norm = (s & DS_REC_GRAD_NORM)
                      ? ds_traj_add(tr, "grad_norm", 1, "1", "||dL/dtheta||_2 over all parameters")
                      : -1;
  ix->param_norm = (s & DS_REC_PARAM_NORM)
                       ? ds_traj_add(tr, "param_norm", 1, "1", "||theta||_2 over all parameters")
                       : -1;
  ix->layer_fro = (s & DS_REC_LAYER_FRO)
                      ? ds_traj_add(tr, "layer_fro", L, "1",
                                    "column l-1: ||W_l||_F, Frobenius norm of layer l's weights")
                      : -1;
  ix->sv = calloc(L, sizeof *ix->sv);
  if (!ix->sv) return ds_fail(DS_ENOMEM, "out of memory");
  ix->svk = c->record.top_k;
  for (int l = 0; l < L; l++) {
    ix->sv[l] = -1;
    if (!(s & DS_REC_LAYER_SV)) continue;
    int mn = dims[l + 1] < dims[l] ? dims[l + 1] : dims[l];
    int k = ix->svk < mn ? ix->svk : mn;
    char name[32];
    snprintf(name, sizeof name, "sv/W%d", l + 1);
    snprintf(def, sizeof def, "top-%d singular values of W_%d (%d x %d), descending, ScaLAPACK pdgesvd",
             k, l + 1, dims[l + 1], dims[l]);
    ix->sv[l] = ds_traj_add(tr, name, k, "1", def);
  }
  /* ds_traj_add returns -code on failure; -1 means "not recorded" */
  int worst = ix->loss < ix->test_loss ? ix->loss : ix->test_loss;
  if (ix->grad_norm < worst) worst = ix->grad_norm;
  if (ix->param_norm < worst) worst = ix->param_norm;
  if (ix->layer_fro < worst) worst = ix->layer_fro;
  for (int l = 0; l < L; l++)
    if (ix->sv[l] < worst) worst = ix->sv[l];
  return worst < -1 ? -worst : DS_OK;
}

typedef struct {
  ds_mlp mlp;
  ds_dataset train, test;
  ds_mlp_work wtrain, wtest;
  double *theta, *grad, *svbuf, *rowbuf;
  series_ix ix;
} point_state;

static void state_free(point_state *st) {
  ds_mlp_free(&st->mlp);
  ds_dataset_free(&st->train);
  ds_dataset_free(&st->test);
  ds_mlp_work_free(&st->wtrain);
  ds_mlp_work_free(&st->wtest);
  free(st->theta);
  free(st->grad);
  free(st->svbuf);
  free(st->rowbuf);
  free(st->ix.sv);
}

static int record(const ds_point_cfg *c, point_state *st, ds_team *team, ds_traj *tr, int64_t t,
                  double loss, double *test_loss) {
  const ds_mlp *m = &st->mlp;
  size_t P = m->nparams;
  if (st->ix.loss >= 0) DS_TRY(ds_traj_append(tr, st->ix.loss, t, &loss));
  if (st->ix.test_loss >= 0) {
    double cte = loss_coef(c->loss.reduction, c->data.n_test);
    *test_loss = ds_mlp_loss(m, st->theta, st->test.X, st->test.Y, cte, &st->wtest);
    DS_TRY(ds_traj_append(tr, st->ix.test_loss, t, test_loss));
  }
  if (st->ix.grad_norm >= 0) {
    double g = cblas_dnrm2((int)P, st->grad, 1);
    DS_TRY(ds_traj_append(tr, st->ix.grad_norm, t, &g));
  }
  if (st->ix.param_norm >= 0) {
    double g = cblas_dnrm2((int)P, st->theta, 1);
    DS_TRY(ds_traj_append(tr, st->ix.param_norm, t, &g));
  }
  int L = m->depth;
  if (st->ix.layer_fro >= 0) {
    for (int l = 0; l < L; l++)
      st->rowbuf[l] = cblas_dnrm2(m->dims[l + 1] * m->dims[l], st->theta + m->w_off[l], 1);
    DS_TRY(ds_traj_append(tr, st->ix.layer_fro, t, st->rowbuf));
  }
  for (int l = 0; l < L; l++) {
    if (st->ix.sv[l] < 0) continue;
    int rows = m->dims[l + 1], cols = m->dims[l];
    DS_TRY(ds_svd_values(team, rows, cols, st->theta + m->w_off[l], rows, st->svbuf));
    DS_TRY(ds_traj_append(tr, st->ix.sv[l], t, st->svbuf));
  }
  return DS_OK;
}

static int setup(const ds_sweep *sw, const ds_point *p, point_state *st, ds_traj *tr) {
  const ds_point_cfg *c = &p->cfg;
  int L = c->model.depth;
  int *dims = calloc(L + 1, sizeof *dims);
  if (!dims) return ds_fail(DS_ENOMEM, "out of memory");
  ds_point_dims(c, dims);
  int rc = ds_mlp_init(&st->mlp, c->model.type == DS_MODEL_RELU ? DS_ACT_RELU : DS_ACT_LINEAR,
                       c->model.bias, L, dims);
  if (rc == DS_OK) rc = add_series(tr, c, dims, &st->ix);
  free(dims);
  DS_TRY(rc);
  ds_rng rd, ri;
  ds_rng_init(&rd, sw->seed, 0, p->replica, DS_STREAM_DATA);
  DS_TRY(ds_data_teacher(c->data.d_in, c->data.d_out, c->data.rank, c->data.noise,
                         c->data.n_train, c->data.n_test, &rd, &st->train, &st->test));
  DS_TRY(ds_mlp_work_init(&st->mlp, c->data.n_train, &st->wtrain));
  if (c->data.n_test > 0) DS_TRY(ds_mlp_work_init(&st->mlp, c->data.n_test, &st->wtest));
  size_t P = st->mlp.nparams;
  int maxd = 1;
  for (int l = 0; l <= L; l++) maxd = st->mlp.dims[l] > maxd ? st->mlp.dims[l] : maxd;
  st->theta = ds_calloc(P, sizeof(double));
  st->grad = ds_calloc(P, sizeof(double));
  st->svbuf = ds_calloc(maxd, sizeof(double));
  st->rowbuf = ds_calloc(L, sizeof(double));
  if (!st->theta || !st->grad || !st->svbuf || !st->rowbuf) return DS_ENOMEM;
  ds_rng_init(&ri, sw->seed, 0, p->replica, DS_STREAM_INIT);
  ds_mlp_init_gaussian(&st->mlp, c->model.init_scale, &ri, st->theta);
  return DS_OK;
}

int ds_worker_run_point(const ds_sweep *sw, const ds_point *p, ds_team *team, ds_traj *tr,
                        ds_point_result *res, const ds_ckpt *ck) {
  (void)ck; /* checkpoints: issue 5 */
  const ds_point_cfg *c = &p->cfg;
  double t0 = ds_now();
  point_state st;
  memset(&st, 0, sizeof st);
  memset(res, 0, sizeof *res);
  res->id = p->id;
  res->diverged_step = -1;
  res->min_loss = INFINITY;
  res->final_test_loss = NAN;
  int rc = setup(sw, p, &st, tr);
  if (rc != DS_OK) {
    state_free(&st);
    return ds_context(rc, "point %lld", (long long)p->id);
  }
  double cl = loss_coef(c->loss.reduction, c->data.n_train);
  int64_t T = c->train.steps, t;
  double loss = NAN;
  res->status = DS_ST_DONE;
  for (t = 0;; t++) {
    loss = ds_mlp_loss_grad(&st.mlp, st.theta, st.train.X, st.train.Y, cl, st.grad, &st.wtrain);
    int diverged = !isfinite(loss) || loss > c->train.diverge_above;
    int last = diverged || t == T || (c->train.tol > 0 && loss < c->train.tol);
    if (isfinite(loss) && loss < res->min_loss) res->min_loss = loss;
    if (!diverged && (last || ds_worker_record_step(&c->record, t, T))) {
      rc = record(c, &st, team, tr, t, loss, &res->final_test_loss);
      if (rc != DS_OK) break;
    } else if (diverged && st.ix.loss >= 0) {
      rc = ds_traj_append(tr, st.ix.loss, t, &loss); /* the blow-up itself, nothing else */
      if (rc != DS_OK) break;
    }
    if (diverged) {
      res->status = DS_ST_DIVERGED;
      res->diverged_step = t;
      snprintf(res->reason, sizeof res->reason, "loss %s at step %lld",
               isfinite(loss) ? "above train.diverge_above" : "not finite", (long long)t);
    }
    if (last) break;
    ds_gd_step(st.theta, st.grad, st.mlp.nparams, c->optimizer.lr);
  }
  res->steps = t;
  res->final_loss = loss;
  if (!isfinite(res->min_loss)) res->min_loss = NAN;
  res->wall_s = ds_now() - t0;
  state_free(&st);
  if (rc != DS_OK) return ds_context(rc, "point %lld at step %lld", (long long)p->id, (long long)t);
  return DS_OK;
}
