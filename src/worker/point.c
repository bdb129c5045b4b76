/* point.c -- run one grid point: data, model, optimiser loop, records,
 * checkpoints.
 *
 * Random streams: the data stream and the init stream are keyed by (sweep
 * seed, replica, stream) and NOT by the point's grid position, so points that
 * differ only in, say, the learning rate start from the same weights on the
 * same data (common random numbers: a phase diagram over lr then shows the
 * effect of lr alone). A replica is an independent draw of both. Nothing
 * depends on which rank runs the point.
 *
 * One step t (0-based) evaluates the loss and gradient at theta_t (on the
 * whole training set, or on the step's minibatch for batch_size > 0), records
 * if step t is on the record schedule, checks for divergence and the stop
 * tolerance, then updates theta_t -> theta_{t+1}. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>
#include <zlib.h>

#include "dynsweep/data.h"
#include "dynsweep/dtrain.h"
#include "dynsweep/models.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/store.h"
#include "dynsweep/worker.h"
#include "dynsweep/outcome.h"
#include "cnnpoint.h"
#include "diagrec.h"
#include "series.h"

/* ---- state of a running point ---------------------------------------------- */

typedef struct {
  const ds_point_cfg *c;
  ds_point_cfg cfg;    /* optimizer.lr_units lambda0: the point with its rates divided by lambda0 */
  double lambda0;
  ds_mlp mlp;          /* the network (e2e: its depth-1 end-to-end matrix) */
  int e2e;             /* train W_e by Eq. 9 with depth c->model.depth */
  ds_cnn *cnn;         /* model.type cnn (cnnpoint.c): mlp is then a d_in -> d_out stand-in
                          whose nparams is the CNN's (theta's length for the optimiser,
                          records and checkpoints); plan refuses what reads its layers */
  uint64_t drop_seed;  /* cnn dropout: masks keyed by (drop_seed, step, sample, unit) */
  int drop_on;         /* dropout is on for this step's loss (step_loss_grad) */
  const int *drop_ids; /* ... for these training-set indices (NULL: 0, 1, ...) */
  int noisy;           /* dropout: even a full-batch step's loss carries masks, so
                          record() evaluates the training loss, as for a minibatch */
  /* train.distributed on a CNN (issue 26): each team member evaluates the
   * loss and gradient of its contiguous block of the samples, summed over
   * the team (cnn_split_loss); theta and the optimiser state stay replicated */
  int csplit;
  int *iota;           /* 0, 1, ..., nmax - 1 (the dropout ids of full-set blocks) */
  double *red;         /* nparams + 1 doubles: gradient and loss summed over the team */
  ds_approx approx;    /* f_lin / f_quad around theta0 */
  int use_approx;
  ds_cnn_lin cnnlin;   /* model.type cnn, model.approx lin: f_lin around theta0 (cnnrop.c) */
  int use_cnnlin;
  ds_cnn_quad cnnquad; /* model.type cnn, model.approx quad: f_quad around theta0 (cnnquad.c) */
  int use_cnnquad;
  ds_dataset train, test;
  ds_loss loss_train, loss_test, loss_batch;
  ds_mlp_work wtrain, wtest, wbatch;
  ds_optim opt;
  int batch;           /* minibatch size, 0 = full batch */
  ds_batcher bt;
  int *idx;
  double *Xb, *Yb;
  double *theta, *grad, *svbuf, *rowbuf, *Fbuf;
  double lstar;        /* optimal loss (loss.optimum) */
  ds_series_ix ix;
  ds_diagrec diag;     /* record.spectra */
  int64_t t;           /* next step */
  double min_loss, wall_before; /* carried across checkpoints */
  double prev_loss;    /* loss of step t-1 ("loss rose" events) */
  double loss0, peak;  /* step-0 loss and the largest later step loss (outcome) */
  int64_t peak_step;
  /* train.distributed: weights, gradient, optimiser state and activations
   * distributed over the team grid (dtrain.h); theta/grad above stay NULL */
  int dist;
  ds_team *team;
  ds_dtrain dt;
  ds_dtrain_work dwtrain, dwtest, dwbatch;
  size_t jbytes;       /* a CNN NTK's budget for J on each member (ds_point_cnn_jbytes) */
} point_state;

static void state_free(point_state *st) {
  ds_mlp_free(&st->mlp);
  ds_cnn_free(st->cnn);
  if (st->use_approx) ds_approx_free(&st->approx);
  if (st->use_cnnlin) ds_cnn_lin_free(&st->cnnlin);
  if (st->use_cnnquad) ds_cnn_quad_free(&st->cnnquad);
  ds_dataset_free(&st->train);
  ds_dataset_free(&st->test);
  ds_mlp_work_free(&st->wtrain);
  ds_mlp_work_free(&st->wtest);
  ds_mlp_work_free(&st->wbatch);
  ds_optim_free(&st->opt);
  if (st->batch) ds_batcher_free(&st->bt);
  free(st->idx);
  free(st->Xb);
  free(st->Yb);
  free(st->theta);
  free(st->grad);
  free(st->svbuf);
  free(st->rowbuf);
  free(st->Fbuf);
  free(st->iota);
  free(st->red);
  free(st->ix.sv);
  ds_diagrec_free(&st->diag);
  if (st->dist) {
    ds_dtrain_work_free(&st->dt, &st->dwtrain);
    ds_dtrain_work_free(&st->dt, &st->dwtest);
    ds_dtrain_work_free(&st->dt, &st->dwbatch);
    ds_dtrain_free(&st->dt);
  }
}

/* Loss and gradient (grad != NULL) of the CNN (or its f_lin) on the nb
 * samples from lo of X, Y; l normalises over the whole set. */
static double cnn_block_loss(point_state *st, const double *X, const double *Y, int lo, int nb,
                             const ds_loss *l, double *grad) {
  int d = st->train.d_in, k = st->train.d_out;
  X += (size_t)lo * d, Y += (size_t)lo * k;
  if (st->use_cnnlin) {
    if (grad) return ds_cnn_lin_loss_grad(&st->cnnlin, st->theta, X, Y, nb, l, grad);
    return ds_loss_eval(l, ds_cnn_lin_forward(&st->cnnlin, st->theta, X, nb), Y, k, nb, NULL);
  }
  if (st->use_cnnquad) {
    if (grad) return ds_cnn_quad_loss_grad(&st->cnnquad, st->theta, X, Y, nb, l, grad);
    return ds_loss_eval(l, ds_cnn_quad_forward(&st->cnnquad, st->theta, X, nb), Y, k, nb, NULL);
  }
  return ds_cnnpoint_loss(st->cnn, st->theta, X, Y, nb, k, l, grad);
}

/* The CNN's loss on a team (train.distributed, issue 26): member r of s
 * takes samples [floor(n r / s), floor(n (r+1) / s)) -- a contiguous block;
 * the loss is a sum over samples with the whole set's normalisation in l
 * (mse, lp: c sum over entries; cross-entropy: c sum over columns), so the
 * blocks' losses and gradients add up to the set's. Dropout masks are keyed
 * by the sample's index in the training set, not its column, so a block
 * draws the masks the whole set would. The sum is a reduce to the team root
 * then a broadcast (as dtrain.c's): every member gets bitwise the same
 * gradient, hence the same theta after the update; the summation order
 * depends on the team size only (not on mpirun -n). */
static double cnn_split_loss(point_state *st, const double *X, const double *Y, int n,
                             const ds_loss *l, double *grad) {
  ds_team *tm = st->team;
  int lo = (int)((int64_t)n * tm->rank / tm->size), hi = (int)((int64_t)n * (tm->rank + 1) / tm->size);
  size_t P = st->mlp.nparams;
  if (st->drop_on) /* this block's columns are samples drop_ids[lo..] (or lo..) */
    ds_cnn_dropout(st->cnn, 1, st->drop_seed, (uint64_t)st->opt.t,
                   (st->drop_ids ? st->drop_ids : st->iota) + lo);
  double loss = 0;
  if (hi > lo) loss = cnn_block_loss(st, X, Y, lo, hi - lo, l, grad);
  else if (grad) memset(grad, 0, P * sizeof *grad); /* more members than samples */
  size_t m = grad ? P + 1 : 1;
  if (grad) memcpy(st->red, grad, P * sizeof *grad);
  st->red[m - 1] = loss;
  int me = tm->rank;
  if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : st->red, me == 0 ? st->red : NULL, (int)m, MPI_DOUBLE,
                 MPI_SUM, 0, tm->comm) != MPI_SUCCESS ||
      MPI_Bcast(st->red, (int)m, MPI_DOUBLE, 0, tm->comm) != MPI_SUCCESS)
    return NAN; /* a NaN loss: the point stops as diverged, on every member */
  if (grad) memcpy(grad, st->red, P * sizeof *grad);
  return st->red[m - 1];
}

/* Loss (and gradient when grad != NULL) of the model being trained. */
static double model_loss(point_state *st, const double *X, const double *Y, const ds_loss *l,
                         ds_mlp_work *w, double *grad) {
  if (st->dist) { /* w names the data set: its distributed workspace */
    ds_dtrain_work *dw = w == &st->wtest ? &st->dwtest : w == &st->wbatch ? &st->dwbatch
                                                                          : &st->dwtrain;
    ds_dtrain_set_loss(&st->dt, l->type == DS_LOSS_LP ? DS_DT_LOSS_LP : DS_DT_LOSS_MSE, l->p, l->c);
    return ds_dtrain_loss_grad(&st->dt, X, Y, dw, grad != NULL);
  }
  if (st->cnn) {
    int n = w == &st->wtest ? st->test.n : w == &st->wbatch ? st->batch : st->train.n;
    if (st->csplit) return cnn_split_loss(st, X, Y, n, l, grad);
    if (st->use_cnnlin) {
      if (grad) return ds_cnn_lin_loss_grad(&st->cnnlin, st->theta, X, Y, n, l, grad);
      return ds_loss_eval(l, ds_cnn_lin_forward(&st->cnnlin, st->theta, X, n), Y,
                          st->train.d_out, n, NULL);
    }
    if (st->use_cnnquad) {
      if (grad) return ds_cnn_quad_loss_grad(&st->cnnquad, st->theta, X, Y, n, l, grad);
      return ds_loss_eval(l, ds_cnn_quad_forward(&st->cnnquad, st->theta, X, n), Y,
                          st->train.d_out, n, NULL);
    }
    return ds_cnnpoint_loss(st->cnn, st->theta, X, Y, n, st->train.d_out, l, grad);
  }
  if (st->use_approx) {
    if (grad) return ds_approx_loss_grad(&st->approx, st->theta, X, Y, l, grad, w);
    ds_approx_forward(&st->approx, st->theta, X, w, st->Fbuf);
    return ds_loss_eval(l, st->Fbuf, Y, st->mlp.dims[st->mlp.depth], w->n, NULL);
  }
  if (grad) return ds_mlp_loss_grad_l(&st->mlp, st->theta, X, Y, l, grad, w);
  return ds_mlp_loss_l(&st->mlp, st->theta, X, Y, l, w);
}

/* ---- set-up --------------------------------------------------------------- */

/* Weights from an HDF5 file: datasets W1..WL (d_l x d_{l-1}, row-major as
 * numpy writes them) and, with bias, b1..bL (required: never zero-filled;
 * ds_sweep_check_inputs refuses such a file before any work). */
static int init_from_file(const ds_mlp *m, const char *path, double *theta) {
  for (int l = 0; l < m->depth; l++) {
    char name[16];
    snprintf(name, sizeof name, "W%d", l + 1);
    DS_TRY(ds_h5_read_matrix(path, name, m->dims[l + 1], m->dims[l], theta + m->w_off[l]));
    snprintf(name, sizeof name, "b%d", l + 1);
    if (m->bias)
      DS_TRY(ds_h5_read_matrix(path, name, m->dims[l + 1], 1, theta + m->b_off[l]));
  }
  return DS_OK;
}

/* W_e(0) = W_L ... W_1 of the depth-L net initialised as the spec says, so
 * the end-to-end model starts where the deep net does. */
static int e2e_initial(const ds_point_cfg *c, const int *dims, ds_rng *ri, double *We) {
  int L = c->model.depth;
  ds_mlp deep;
  DS_TRY(ds_mlp_setup(&deep, DS_ACT_LINEAR, 0, L, dims, DS_PARAM_STANDARD, 1));
  double *th = ds_calloc(deep.nparams, sizeof *th);
  size_t maxd = 1;
  for (int l = 0; l <= L; l++) maxd = (size_t)dims[l] > maxd ? (size_t)dims[l] : maxd;
  double *P = ds_calloc(maxd * dims[0], sizeof *P), *Q = ds_calloc(maxd * dims[0], sizeof *Q);
  int rc = th && P && Q ? DS_OK : DS_ENOMEM;
  if (rc == DS_OK)
    rc = c->model.init == DS_INIT_FILE ? init_from_file(&deep, c->model.init_file, th)
                                       : ds_mlp_init_weights(&deep, &c->model, ri, th);
  if (rc == DS_OK) {
    memcpy(P, th + deep.w_off[0], sizeof *P * dims[1] * dims[0]); /* P = W_1 */
    for (int l = 1; l < L; l++) {                                   /* P <- W_{l+1} P */
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, dims[l + 1], dims[0], dims[l], 1.0,
                  th + deep.w_off[l], dims[l + 1], P, dims[l], 0.0, Q, dims[l + 1]);
      double *tmp = P; P = Q; Q = tmp;
    }
    memcpy(We, P, sizeof *We * dims[L] * dims[0]);
  }
  free(th);
  free(P);
  free(Q);
  ds_mlp_free(&deep);
  return rc;
}

/* ---- distributed training (train.distributed, dtrain.h) -------------------- */

/* What the distributed trainer does not do for point c ("FEATURE (REASON)",
 * models.h's one table; `plan` refuses these with train.distributed: on), or NULL. */
static const char *dist_unsupported(const ds_point_cfg *c, char *why, int whylen) {
  return ds_net_supported(c, DS_TRAINER_TEAM, why, whylen) ? NULL : why;
}

/* train.distributed: on; off; auto = a team of > 1 rank, a layer of at least
 * DS_DIST_AUTO_WIDTH units and nothing unsupported. */
static int dist_choose(const ds_point_cfg *c, const int *dims, const ds_team *team, int *dist) {
  char buf[200];
  const char *why = dist_unsupported(c, buf, sizeof buf);
  *dist = 0;
  if (c->train.distributed == DS_DIST_OFF || !team) return DS_OK;
  if (c->model.type == DS_MODEL_CNN) { /* on and auto: split the samples over a team > 1 */
    if (why) return ds_fail(DS_EINPUT, "train.distributed is not supported with %s", why);
    *dist = team->size > 1 ? 2 : 0;
    return DS_OK;
  }
  if (c->train.distributed == DS_DIST_ON) {
    if (why) return ds_fail(DS_EINPUT, "train.distributed: on is not supported with %s", why);
    *dist = 1;
    return DS_OK;
  }
  int widest = 0;
  for (int l = 0; l <= c->model.depth; l++) widest = dims[l] > widest ? dims[l] : widest;
  *dist = team->size > 1 && widest >= DS_DIST_AUTO_WIDTH && !why;
  return DS_OK;
}

/* The same outcome on every team member (the root's message if it failed). */
static int team_agree(ds_team *tm, int rc) {
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, tm->comm);
  if (rc == DS_OK && worst != DS_OK)
    return ds_fail(worst, "another member of the team failed (code %d)", worst);
  return rc;
}

/* The team root builds the flat theta exactly as one rank would (same rng
 * draws), and scatters it; only the root holds all of it, and only here. */
static int dist_setup_model(point_state *st, const ds_point_cfg *c, ds_rng *ri) {
  ds_team *tm = st->team;
  const ds_mlp *m = &st->mlp;
  ds_dtrain_spec spec = {m->depth, m->dims, m->act == DS_ACT_RELU, m->bias, m->train_output,
                         m->param == DS_PARAM_NTK, 0};
  DS_TRY(ds_dtrain_init(&st->dt, tm, &spec));
  int rc = DS_OK;
  double *full = NULL;
  if (tm->rank == 0) {
    full = ds_calloc(m->nparams, sizeof *full);
    rc = !full ? DS_ENOMEM
         : c->model.init == DS_INIT_FILE ? init_from_file(m, c->model.init_file, full)
                                         : ds_mlp_init_weights(m, &c->model, ri, full);
  }
  rc = team_agree(tm, rc);
  if (rc == DS_OK) rc = ds_dtrain_scatter(&st->dt, full, st->dt.theta);
  free(full);
  return rc;
}

static int setup_model(const ds_sweep *sw, const ds_point *p, point_state *st, const int *dims) {
  const ds_point_cfg *c = &p->cfg;
  int L = c->model.depth;
  ds_rng ri;
  ds_rng_init(&ri, sw->seed, 0, p->replica, DS_STREAM_INIT);
  if (c->model.type == DS_MODEL_E2E) {
    int d2[2] = {dims[0], dims[L]};
    st->e2e = 1;
    DS_TRY(ds_mlp_setup(&st->mlp, DS_ACT_LINEAR, 0, 1, d2, DS_PARAM_STANDARD, 1));
  } else if (c->model.type == DS_MODEL_CNN) { /* the net itself: setup_data, once n is known */
    int d2[2] = {dims[0], dims[L]};
    return ds_mlp_setup(&st->mlp, DS_ACT_LINEAR, 0, 1, d2, DS_PARAM_STANDARD, 1);
  } else {
    int act = ds_model_act(c->model.type);
    DS_TRY(ds_mlp_setup(&st->mlp, act, c->model.bias, L, dims, c->model.param,
                        c->model.train_output));
    st->mlp.gain = c->model.gain;
  }
  size_t P = st->mlp.nparams;
  if (st->dist) return dist_setup_model(st, c, &ri);
  st->theta = ds_calloc(P, sizeof(double));
  st->grad = ds_calloc(P, sizeof(double));
  if (!st->theta || !st->grad) return DS_ENOMEM;
  if (st->e2e) DS_TRY(e2e_initial(c, dims, &ri, st->theta));
  else if (c->model.init == DS_INIT_FILE) DS_TRY(init_from_file(&st->mlp, c->model.init_file, st->theta));
  else DS_TRY(ds_mlp_init_weights(&st->mlp, &c->model, &ri, st->theta));
  if (c->model.approx != DS_APPROX_NONE) {
    int maxn = c->data.n_train > c->data.n_test ? c->data.n_train : c->data.n_test;
    DS_TRY(ds_approx_init(&st->approx, &st->mlp, c->model.approx == DS_APPROX_LIN ? 1 : 2,
                          st->theta, maxn));
    st->use_approx = 1;
  }
  return DS_OK;
}

static int setup_data(const ds_sweep *sw, const ds_point *p, point_state *st) {
  const ds_point_cfg *c = &p->cfg;
  ds_rng rd;
  ds_rng_init(&rd, sw->seed, 0, p->replica, DS_STREAM_DATA);
  DS_TRY(ds_data_build(&c->data, &rd, &st->train, &st->test));
  int dout = st->mlp.dims[st->mlp.depth];
  if (st->train.d_in != st->mlp.dims[0] || st->train.d_out != dout)
    return ds_fail(DS_EINPUT, "data set is %d -> %d but the model is %d -> %d", st->train.d_in,
                   st->train.d_out, st->mlp.dims[0], dout);
  DS_TRY(ds_loss_setup(&st->loss_train, &c->loss, st->train.n));
  if (c->model.type == DS_MODEL_CNN) { /* the init stream as setup_model's */
    ds_rng ri;
    ds_rng_init(&ri, sw->seed, 0, p->replica, DS_STREAM_INIT);
    int nmax = st->train.n > st->test.n ? st->train.n : st->test.n;
    DS_TRY(ds_cnnpoint_create(c, st->train.d_in, dout, nmax, &ri, &st->cnn, &st->theta, &st->grad,
                              &st->mlp.nparams));
    if (c->model.approx == DS_APPROX_LIN) { /* f_lin around the initial weights */
      DS_TRY(ds_cnn_lin_init(&st->cnnlin, st->cnn, st->theta));
      st->use_cnnlin = 1;
    }
    if (c->model.approx == DS_APPROX_QUAD) { /* f_quad around the initial weights */
      DS_TRY(ds_cnn_quad_init(&st->cnnquad, st->cnn, st->theta));
      st->use_cnnquad = 1;
    }
    st->drop_seed = ds_cnnpoint_drop_seed(sw, p); /* off outside training steps */
    st->noisy = c->model.dropout > 0;
    if (st->test.n > 0) DS_TRY(ds_loss_setup(&st->loss_test, &c->loss, st->test.n));
    if (st->csplit) {
      st->iota = ds_calloc((size_t)nmax, sizeof *st->iota);
      st->red = ds_calloc(st->mlp.nparams + 1, sizeof *st->red);
      if (!st->iota || !st->red) return DS_ENOMEM;
      for (int i = 0; i < nmax; i++) st->iota[i] = i;
    }
  } else if (st->dist) {
    DS_TRY(ds_dtrain_work_init(&st->dt, st->train.n, 1, &st->dwtrain));
    if (st->test.n > 0) {
      DS_TRY(ds_loss_setup(&st->loss_test, &c->loss, st->test.n));
      DS_TRY(ds_dtrain_work_init(&st->dt, st->test.n, 0, &st->dwtest));
    }
  } else {
    DS_TRY(ds_mlp_work_init(&st->mlp, st->train.n, &st->wtrain));
    if (st->use_approx) DS_TRY(ds_mlp_work_products(&st->mlp, &st->wtrain));
    if (st->test.n > 0) {
      DS_TRY(ds_loss_setup(&st->loss_test, &c->loss, st->test.n));
      DS_TRY(ds_mlp_work_init(&st->mlp, st->test.n, &st->wtest));
      if (st->use_approx) DS_TRY(ds_mlp_work_products(&st->mlp, &st->wtest));
    }
  }
  int nmax = st->train.n > st->test.n ? st->train.n : st->test.n;
  st->Fbuf = ds_calloc((size_t)dout * nmax, sizeof(double));
  if (!st->Fbuf) return DS_ENOMEM;
  int b = c->optimizer.batch_size;
  if (b > 0 && b < st->train.n) {
    ds_rng rb;
    ds_rng_init(&rb, sw->seed, p->combo, p->replica, DS_STREAM_BATCH);
    st->batch = b;
    DS_TRY(ds_batcher_init(&st->bt, st->train.n, b, &rb));
    DS_TRY(ds_loss_setup(&st->loss_batch, &c->loss, b));
    if (st->dist) DS_TRY(ds_dtrain_work_init(&st->dt, b, 1, &st->dwbatch));
    else if (!st->cnn) DS_TRY(ds_mlp_work_init(&st->mlp, b, &st->wbatch));
    if (st->use_approx) DS_TRY(ds_mlp_work_products(&st->mlp, &st->wbatch));
    st->idx = ds_calloc(b, sizeof *st->idx);
    st->Xb = ds_calloc((size_t)st->train.d_in * b, sizeof(double));
    st->Yb = ds_calloc((size_t)st->train.d_out * b, sizeof(double));
    if (!st->idx || !st->Xb || !st->Yb) return DS_ENOMEM;
  }
  if (c->loss.optimum)
    DS_TRY(ds_linear_optimum(&st->loss_train, st->train.X, st->train.Y, st->train.d_in,
                             st->train.d_out, st->train.n, &st->lstar));
  return DS_OK;
}

/* optimizer.lr_units: lambda0 -- the rates given are eta * lambda_0: divide
 * them by the top NTK eigenvalue at initialisation (on the training set). */
static int lr_per_lambda0(point_state *st, ds_team *team) {
  if (st->dist || st->e2e)
    return ds_fail(DS_EINPUT, "optimizer.lr_units: lambda0 needs the NTK at initialisation: not "
                   "available for %s", st->dist ? "train.distributed" : "model.type e2e");
  double lam = NAN;
  if (st->cnn)
    DS_TRY(ds_diag_cnn_ntk(team, st->cnn, st->theta, st->train.X, st->train.n, st->train.d_out,
                           st->jbytes, 1, &lam, NULL, NULL));
  else
    DS_TRY(ds_diag_ntk(team, &st->mlp, st->theta, st->train.X, &st->wtrain, 1, &lam, NULL, NULL));
  if (!(lam > 0) || !isfinite(lam))
    return ds_fail(DS_EINPUT, "optimizer.lr_units: lambda0: the NTK's top eigenvalue at "
                   "initialisation is %g", lam);
  st->cfg = *st->c;
  ds_optim_spec *o = &st->cfg.optimizer;
  o->lr /= lam, o->lr_in /= lam, o->lr_out /= lam;
  for (int i = 0; i < o->nschedule; i++) o->schedule_lrs[i] /= lam;
  st->lambda0 = lam;
  st->c = &st->cfg;
  return DS_OK;
}

/* A CNN NTK's budget for J: from what every rank of the run has (rows.c sets
 * it on every rank alike, so a team's members agree on the split / blocked
 * path, a collective choice), the point and its team size; with --verbose
 * the team root says which path the training set's NTK (and a minibatch's)
 * takes. */
static double worker_rank_mem = 0;
static int worker_verbose = 0;
void ds_worker_set_rank_memory(double bytes, int verbose) {
  worker_rank_mem = bytes;
  worker_verbose = verbose;
}
static void cnn_jbudget(const ds_point *p, point_state *st, ds_team *team) {
  const ds_point_cfg *c = &p->cfg;
  int full, batch; /* the samples of the training set's and a minibatch's NTK (0: none) */
  st->jbytes = (size_t)ds_point_cnn_jbytes(c, team->size, worker_rank_mem);
  ds_point_cnn_ntks(c, &full, &batch);
  if (!worker_verbose || team->rank != 0 || !(full || batch)) return;
  size_t P = ds_cnn_nparams(st->cnn);
  int k = st->train.d_out;
  char jb[32], hb[32] = "not known";
  ds_fmt_bytes(jb, sizeof jb, (double)st->jbytes);
  if (worker_rank_mem > 0 && !isinf(worker_rank_mem)) ds_fmt_bytes(hb, sizeof hb, worker_rank_mem);
  const char *path_full = ds_diag_cnn_ntk_split_fits(team->size, P, full, k, st->jbytes)
                              ? "split" : "blocked";
  const char *path_b = ds_diag_cnn_ntk_split_fits(team->size, P, batch, k, st->jbytes) ? "split"
                                                                                       : "blocked";
  ds_log("point %lld: NTK J budget %s on each of %d team member(s) (a rank has %s): %s%s%s%s",
         (long long)p->id, jb, team->size, hb, full ? path_full : "", full ? " path" : "",
         batch ? (full ? ", minibatch NTK " : "minibatch NTK ") : "", batch ? path_b : "");
}

static int setup(const ds_sweep *sw, const ds_point *p, point_state *st, ds_traj *tr,
                 ds_team *team) {
  const ds_point_cfg *c = &p->cfg;
  int L = c->model.depth;
  int dims[DS_MAX_LIST + 2];
  if (L < 1 || L > DS_MAX_LIST) return ds_fail(DS_EINPUT, "depth %d out of range", L);
  ds_point_dims(c, dims);
  st->c = c;
  st->min_loss = INFINITY;
  st->team = team;
  DS_TRY(dist_choose(c, dims, team, &st->dist));
  if (st->dist == 2) st->dist = 0, st->csplit = 1; /* a CNN's sample split */
  DS_TRY(setup_model(sw, p, st, dims));
  DS_TRY(setup_data(sw, p, st));
  if (st->cnn) cnn_jbudget(p, st, team);
  if (c->optimizer.lr_units == DS_LR_LAMBDA0) DS_TRY(lr_per_lambda0(st, team));
  c = st->c;
  DS_TRY(ds_optim_init(&st->opt, &c->optimizer, st->dist ? st->dt.nloc : st->mlp.nparams));
  DS_TRY(ds_series_add(tr, c, st->mlp.dims, st->mlp.depth, st->cnn, &st->ix));
  DS_TRY(ds_diagrec_init(&st->diag, tr, c, &st->mlp, st->cnn, &st->train, sw->seed, p->replica));
  st->diag.jbytes = st->jbytes;
  int maxd = 1, nrow = st->mlp.depth + 1;
  for (int l = 0; l <= st->mlp.depth; l++) maxd = st->mlp.dims[l] > maxd ? st->mlp.dims[l] : maxd;
  if (st->cnn) { /* the weight matrices of cnn.h: conv kernels, then the readout */
    nrow = ds_cnn_nweights(st->cnn);
    for (int l = 0; l < nrow; l++) {
      size_t off;
      int rows, cols;
      ds_cnn_weight(st->cnn, l, &off, &rows, &cols);
      maxd = rows > maxd ? rows : cols > maxd ? cols : maxd;
    }
  }
  st->svbuf = ds_calloc(maxd, sizeof(double));
  st->rowbuf = ds_calloc(nrow, sizeof(double));
  return st->svbuf && st->rowbuf ? DS_OK : DS_ENOMEM;
}

/* ---- recording ------------------------------------------------------------ */

/* ||theta||_2 (an allreduce over the team when distributed). */
static double theta_norm(point_state *st) {
  if (st->dist) return sqrt(ds_dtrain_sumsq(&st->dt, st->dt.theta));
  return cblas_dnrm2((int)st->mlp.nparams, st->theta, 1);
}

/* *loss is the step's loss; with minibatches or dropout it becomes the full
 * training loss, dropout off (the same quantity whatever the batch size: a
 * full-batch step's own loss carries its dropout masks). */
static int record(point_state *st, ds_team *team, ds_traj *tr, int64_t t, double *loss_io,
                  double lr, double *test_loss) {
  const ds_mlp *m = &st->mlp;
  const ds_series_ix *ix = &st->ix;
  size_t P = m->nparams;
  if (st->batch || st->noisy) {
    *loss_io = model_loss(st, st->train.X, st->train.Y, &st->loss_train, &st->wtrain, NULL);
    if (isfinite(*loss_io) && *loss_io < st->min_loss) st->min_loss = *loss_io;
  }
  double loss = *loss_io;
  if (ix->loss >= 0) DS_TRY(ds_traj_append(tr, ix->loss, t, &loss));
  if (ix->loss_gap >= 0) {
    double gap = loss - st->lstar;
    DS_TRY(ds_traj_append(tr, ix->loss_gap, t, &gap));
  }
  if (ix->test_loss >= 0) {
    *test_loss = model_loss(st, st->test.X, st->test.Y, &st->loss_test, &st->wtest, NULL);
    DS_TRY(ds_traj_append(tr, ix->test_loss, t, test_loss));
  }
  if (ix->lr >= 0) DS_TRY(ds_traj_append(tr, ix->lr, t, &lr));
  if (ix->grad_norm >= 0) {
    double g = st->dist ? sqrt(ds_dtrain_sumsq(&st->dt, st->dt.grad))
                        : cblas_dnrm2((int)P, st->grad, 1);
    DS_TRY(ds_traj_append(tr, ix->grad_norm, t, &g));
  }
  if (ix->param_norm >= 0) {
    double g = theta_norm(st);
    DS_TRY(ds_traj_append(tr, ix->param_norm, t, &g));
  }
  int L = m->depth;
  if (st->cnn) { /* issue 26: the conv kernels (C_out x C_in s^2) and the readout */
    int nw = ds_cnn_nweights(st->cnn);
    for (int l = 0; l < nw; l++) {
      size_t off;
      int rows, cols;
      ds_cnn_weight(st->cnn, l, &off, &rows, &cols);
      st->rowbuf[l] = cblas_dnrm2(rows * cols, st->theta + off, 1);
      if (ix->sv[l] < 0) continue;
      DS_TRY(ds_diag_cnn_weight_sv(team, st->cnn, st->theta, l, st->svbuf));
      DS_TRY(ds_traj_append(tr, ix->sv[l], t, st->svbuf));
    }
    if (ix->layer_fro >= 0) DS_TRY(ds_traj_append(tr, ix->layer_fro, t, st->rowbuf));
    return DS_OK;
  }
  if (ix->layer_fro >= 0 && st->dist) {
    ds_dtrain_layer_fro(&st->dt, st->rowbuf);
    DS_TRY(ds_traj_append(tr, ix->layer_fro, t, st->rowbuf));
  } else if (ix->layer_fro >= 0) {
    for (int l = 0; l < L; l++)
      st->rowbuf[l] = cblas_dnrm2(m->dims[l + 1] * m->dims[l], st->theta + m->w_off[l], 1);
    DS_TRY(ds_traj_append(tr, ix->layer_fro, t, st->rowbuf));
  }
  for (int l = 0; l < L; l++) {
    if (ix->sv[l] < 0) continue;
    int rows = m->dims[l + 1], cols = m->dims[l];
    if (st->dist) /* pdgesvd on the distributed W_l itself, no gather */
      DS_TRY(ds_svd_values_dmat(team, &st->dt.W[l], st->svbuf));
    else
      DS_TRY(ds_svd_values(team, rows, cols, st->theta + m->w_off[l], rows, st->svbuf));
    DS_TRY(ds_traj_append(tr, ix->sv[l], t, st->svbuf));
  }
  return DS_OK;
}

/* ---- checkpoints ------------------------------------------------------------
 * Blob: header {magic, version, id, t, nparams, nstate, batch n, min_loss,
 * wall} then theta, optimiser state and step count, the batcher (its rng and
 * permutation), the trajectory recorded so far (ds_traj_pack), and (version
 * 5) the CRC-32 of all bytes before it (u32): a damaged blob is never
 * resumed from, the point restarts from step 0 with a warning. */
#define CKPT_VERSION 5
#define CKPT_MAGIC 0x44534b50u /* "DSKP" */
typedef struct {
  uint32_t magic, version;
  int64_t id, t, nparams, nstate, opt_t, batch_n, nk0; /* nk0: entries of K_0 kept (NTK) */
  double min_loss, wall, prev_loss, loss0, peak;
  int64_t peak_step, batch_catapults;
} ckpt_header;

/* Distributed: theta and the optimiser state (k vectors of nparams: the
 * single-rank layout) gathered on the team root; NULL elsewhere. Collective. */
static int dist_gather(point_state *st, double **theta, double **state, int64_t *nstate) {
  ds_team *tm = st->team;
  size_t P = st->mlp.nparams, k = ds_optim_nstate(st->c->optimizer.type, 1);
  *theta = *state = NULL;
  *nstate = (int64_t)(k * P);
  int rc = DS_OK;
  if (tm->rank == 0) {
    *theta = ds_calloc(P, sizeof(double));
    *state = ds_calloc(k * P, sizeof(double));
    if (!*theta || !*state) rc = DS_ENOMEM;
  }
  rc = team_agree(tm, rc);
  if (rc == DS_OK) rc = ds_dtrain_gather(&st->dt, st->dt.theta, *theta);
  for (size_t j = 0; j < k && rc == DS_OK; j++)
    rc = ds_dtrain_gather(&st->dt, st->opt.state + j * st->dt.nloc, *state ? *state + j * P : NULL);
  if (rc != DS_OK || tm->rank != 0) {
    free(*theta);
    free(*state);
    *theta = *state = NULL;
  }
  return rc;
}

/* Collective when distributed (every member gathers; the root saves). */
static int ckpt_save(point_state *st, const ds_point *p, const ds_traj *tr, const ds_ckpt *ck,
                     double wall) {
  const double *theta = st->theta, *ostate = st->opt.state;
  int64_t nstate = (int64_t)st->opt.nstate;
  double *gth = NULL, *gst = NULL;
  if (st->dist) {
    int grc = dist_gather(st, &gth, &gst, &nstate);
    if (grc != DS_OK || st->team->rank != 0) return grc;
    theta = gth, ostate = gst;
  }
  char *tb;
  size_t tl;
  int trc = ds_traj_pack(tr, &tb, &tl);
  if (trc != DS_OK) {
    free(gth);
    free(gst);
    return trc;
  }
  int64_t nk0 = st->diag.have_K0 ? (int64_t)st->diag.kn * st->diag.kn : 0;
  ckpt_header h = {CKPT_MAGIC, CKPT_VERSION, p->id, st->t, (int64_t)st->mlp.nparams,
                   nstate, st->opt.t, st->batch ? st->bt.n : 0, nk0,
                   st->min_loss, wall, st->prev_loss, st->loss0, st->peak, st->peak_step,
                   st->diag.batch_catapults};
  size_t n = sizeof h + (h.nparams + h.nstate + h.nk0) * sizeof(double) + tl + sizeof(uint32_t);
  if (st->batch) n += sizeof st->bt + (size_t)st->bt.n * sizeof(int);
  char *b = malloc(n), *q = b;
  if (!b) {
    free(tb);
    free(gth);
    free(gst);
    return ds_fail(DS_ENOMEM, "out of memory for a %zu-byte checkpoint", n);
  }
#define PUT(src, len) (((len) != 0) ? (memcpy(q, (src), (len)), q += (len)) : q)
  PUT(&h, sizeof h);
  PUT(theta, h.nparams * sizeof(double));
  PUT(ostate, h.nstate * sizeof(double));
  if (nk0) PUT(st->diag.K0, nk0 * sizeof(double));
  if (st->batch) {
    PUT(&st->bt, sizeof st->bt);
    PUT(st->bt.perm, (size_t)st->bt.n * sizeof(int));
  }
  PUT(tb, tl);
  uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)b, (uInt)(q - b));
  PUT(&crc, sizeof crc);
#undef PUT
  free(tb);
  free(gth);
  free(gst);
  int rc = ck->save(ck->arg, p->id, b, n);
  free(b);
  return rc ? ds_context(rc, "saving the checkpoint of point %lld", (long long)p->id) : DS_OK;
}

/* Is the blob whole (its CRC-32 trailer matches)? If not, warns naming the
 * point: the caller starts the point afresh instead. */
static int ckpt_intact(const ds_point *p, const char *b, size_t n) {
  ckpt_header h;
  uint32_t want = 0;
  const char *why = NULL;
  if (n < sizeof h + sizeof want) {
    why = "too short";
  } else {
    memcpy(&h, b, sizeof h);
    memcpy(&want, b + n - sizeof want, sizeof want);
    if (h.magic != CKPT_MAGIC || h.version != CKPT_VERSION)
      why = "not one of this dynsweep (no CRC-32)";
    else if ((uint32_t)crc32(0L, (const Bytef *)b, (uInt)(n - sizeof want)) != want)
      why = "damaged: its CRC-32 does not match (bit rot?)";
  }
  if (why) ds_warn("point %lld: its checkpoint (%zu bytes) is %s: not resuming from it, the point "
                   "restarts from step 0", (long long)p->id, n, why);
  return why == NULL;
}

/* theta (nparams) and the optimiser state (nstate) are written to theta_out,
 * state_out: st's own on one rank, the root's full-size buffers on a team. */
static int ckpt_restore(point_state *st, const ds_point *p, ds_traj *tr, const char *b, size_t n,
                        double *theta_out, double *state_out, int64_t nstate) {
  ckpt_header h;
  const char *q = b, *end = b + n;
  if (n < sizeof h) goto bad;
  memcpy(&h, q, sizeof h);
  q += sizeof h;
  int64_t nk0 = st->diag.ntk_on ? (int64_t)st->diag.kn * st->diag.kn : 0;
  if (h.magic != CKPT_MAGIC || h.version != CKPT_VERSION || h.id != p->id || (h.nk0 != 0 && h.nk0 != nk0) ||
      h.nparams != (int64_t)st->mlp.nparams || h.nstate != nstate ||
      h.batch_n != (st->batch ? st->bt.n : 0))
    return ds_fail(DS_EINPUT, "checkpoint of point %lld does not match its configuration",
                   (long long)p->id);
  size_t need = (h.nparams + h.nstate + h.nk0) * sizeof(double);
  if (st->batch) need += sizeof st->bt + (size_t)st->bt.n * sizeof(int);
  if ((size_t)(end - q) < need) goto bad;
  memcpy(theta_out, q, h.nparams * sizeof(double));
  q += h.nparams * sizeof(double);
  if (h.nstate) memcpy(state_out, q, h.nstate * sizeof(double)); /* gd keeps no state */
  q += h.nstate * sizeof(double);
  st->opt.t = h.opt_t;
  if (h.nk0) {
    memcpy(st->diag.K0, q, h.nk0 * sizeof(double));
    q += h.nk0 * sizeof(double);
    st->diag.have_K0 = 1;
  }
  if (st->batch) {
    int *perm = st->bt.perm;
    memcpy(&st->bt, q, sizeof st->bt);
    q += sizeof st->bt;
    st->bt.perm = perm;
    memcpy(perm, q, (size_t)st->bt.n * sizeof(int));
    q += (size_t)st->bt.n * sizeof(int);
  }
  ds_traj saved;
  DS_TRY(ds_traj_unpack(q, end - q, &saved));
  /* the series were set up afresh in the same order: copy the records in */
  int rc = DS_OK;
  for (int i = 0; i < saved.n && rc == DS_OK; i++) {
    int k = ds_traj_find(tr, saved.s[i].name);
    if (k < 0 || tr->s[k].ncols != saved.s[i].ncols) {
      rc = ds_fail(DS_EINPUT, "checkpoint series %s does not match", saved.s[i].name);
      break;
    }
    for (int64_t r = 0; r < saved.s[i].n && rc == DS_OK; r++)
      rc = ds_traj_append(tr, k, saved.s[i].step[r], saved.s[i].val + r * saved.s[i].ncols);
  }
  ds_traj_free(&saved);
  st->t = h.t;
  st->min_loss = h.min_loss;
  st->wall_before = h.wall;
  st->prev_loss = h.prev_loss;
  st->loss0 = h.loss0;
  st->peak = h.peak;
  st->peak_step = h.peak_step;
  st->diag.batch_catapults = h.batch_catapults;
  return rc;
bad:
  return ds_fail(DS_EINPUT, "checkpoint of point %lld is truncated", (long long)p->id);
}

/* Distributed resume (collective): the team root reads the blob (if it has
 * one) into full-size theta / state and scatters them; the step counters and
 * the batcher go to every member. The recorded series are restored on the
 * root only (the root reports the trajectory). */
typedef struct {
  int64_t t, opt_t, peak_step, batch_catapults;
  double min_loss, wall_before, prev_loss, loss0, peak;
} dist_scalars;

static int ckpt_restore_dist(point_state *st, const ds_point *p, ds_traj *tr, const ds_ckpt *ck) {
  ds_team *tm = st->team;
  int has = tm->rank == 0 && ck && ck->resume && ckpt_intact(p, ck->resume, ck->resume_len);
  MPI_Bcast(&has, 1, MPI_INT, 0, tm->comm);
  if (!has) return DS_OK;
  size_t P = st->mlp.nparams, k = ds_optim_nstate(st->c->optimizer.type, 1);
  double *th = NULL, *os = NULL;
  int rc = DS_OK;
  if (tm->rank == 0) {
    th = ds_calloc(P, sizeof *th);
    os = ds_calloc(k * P, sizeof *os);
    rc = th && os ? ckpt_restore(st, p, tr, ck->resume, ck->resume_len - sizeof(uint32_t), th, os,
                                 (int64_t)(k * P))
                  : DS_ENOMEM;
  }
  rc = team_agree(tm, rc);
  if (rc == DS_OK) rc = ds_dtrain_scatter(&st->dt, th, st->dt.theta);
  for (size_t j = 0; j < k && rc == DS_OK; j++)
    rc = ds_dtrain_scatter(&st->dt, os ? os + j * P : NULL, st->opt.state + j * st->dt.nloc);
  free(th);
  free(os);
  if (rc != DS_OK) return rc;
  dist_scalars v = {st->t, st->opt.t, st->peak_step, st->diag.batch_catapults, st->min_loss,
                    st->wall_before, st->prev_loss, st->loss0, st->peak};
  MPI_Bcast(&v, sizeof v, MPI_BYTE, 0, tm->comm);
  st->t = v.t, st->opt.t = v.opt_t, st->peak_step = v.peak_step;
  st->diag.batch_catapults = v.batch_catapults, st->min_loss = v.min_loss;
  st->wall_before = v.wall_before, st->prev_loss = v.prev_loss, st->loss0 = v.loss0;
  st->peak = v.peak;
  if (st->batch) {
    int *perm = st->bt.perm;
    MPI_Bcast(&st->bt, sizeof st->bt, MPI_BYTE, 0, tm->comm);
    st->bt.perm = perm;
    MPI_Bcast(perm, st->bt.n, MPI_INT, 0, tm->comm);
  }
  return DS_OK;
}

/* ---- the loop --------------------------------------------------------------- */

const char *ds_outcome_name(int o) {
  static const char *names[] = {"converged",  "diverged",    "catapult", "failed",
                                "unfinished", "unconverged", "converged"};
  return o >= 0 && o <= DS_OUT_CONVERGED_ROW ? names[o] : "unknown";
}

int ds_worker_loss_rose(double prev, double cur, double rel) {
  if (!isfinite(prev) || !isfinite(cur)) return 0;
  return cur > prev && cur - prev > rel * fabs(prev);
}

int ds_worker_plateaus(const int64_t *step, const double *loss, int64_t n, int64_t *last_end) {
  int count = 0;
  *last_end = -1;
  int64_t a = 0;
  for (int64_t i = 1; i < n; i++) {
    double La = loss[a];
    if (fabs(loss[i] - La) <= 0.05 * fabs(La)) continue; /* still on the plateau */
    int64_t sa = step[a], sb = step[i - 1];
    if (i - 1 > a && sb >= 2 * sa && sb >= sa + 10 && loss[i] < 0.8 * La) {
      count++;
      *last_end = step[i];
    }
    a = i;
  }
  return count;
}

static void outcome(point_state *st, const ds_traj *tr, const ds_point_cfg *c, ds_point_result *res) {
  double factor = c->record.spectra.catapult_factor > 0 ? c->record.spectra.catapult_factor : 2;
  res->peak_ratio = st->loss0 > 0 && st->peak_step > 0 ? st->peak / st->loss0 : NAN;
  res->event_step = -1;
  int li = ds_traj_find(tr, "loss");
  res->plateaus = li < 0 ? 0 : ds_worker_plateaus(tr->s[li].step, tr->s[li].val, tr->s[li].n,
                                                  &res->plateau_end);
  if (li < 0) res->plateau_end = -1;
  if (res->status == DS_ST_DIVERGED) {
    res->outcome = DS_OUT_DIVERGED;
    res->event_step = res->diverged_step;
  } else if (res->status == DS_ST_PENDING) {
    res->outcome = DS_OUT_UNFINISHED;
  } else if (res->peak_ratio > factor) {
    res->outcome = DS_OUT_CATAPULT;
    res->event_step = st->peak_step;
  } else { /* issue 24: converged only by train.tol or a settled loss (dynsweep/outcome.h) */
    int conv = ds_outcome_converged(li < 0 ? NULL : tr->s[li].step, li < 0 ? NULL : tr->s[li].val,
                                    li < 0 ? 0 : tr->s[li].n, c->train.steps, c->train.tol,
                                    res->final_loss);
    res->outcome = conv ? DS_OUT_CONVERGED_ROW : DS_OUT_UNCONVERGED;
  }
}

/* One update theta_t -> theta_{t+1} with the gradient in st->grad. */
static void update(point_state *st, double lr) {
  if (st->e2e) {
    const ds_mlp *m = &st->mlp;
    ds_e2e_step(st->theta, m->dims[1], m->dims[0], st->c->model.depth, st->grad, lr,
                st->c->optimizer.weight_decay);
  } else if (st->dist) { /* elementwise on the local parts */
    ds_optim_step(&st->opt, st->dt.theta, st->dt.grad, lr);
  } else if (st->c->optimizer.lr_in > 0 || st->c->optimizer.lr_out > 0) { /* gd/sgd only */
    ds_mlp_gd_step_layers(&st->mlp, st->theta, st->grad, lr, st->c->optimizer.lr_in,
                          st->c->optimizer.lr_out);
    st->opt.t++;
  } else {
    ds_optim_step(&st->opt, st->theta, st->grad, lr);
  }
}

/* Loss and gradient of step t: the whole training set or the step's batch. */
static double step_loss_grad(point_state *st) {
  double *grad = st->dist ? st->dt.grad : st->grad; /* dist: only a flag */
  double loss;
  if (st->batch) { /* every team member draws the same batch (replicated data and batcher) */
    ds_batcher_next(&st->bt, st->idx);
    ds_dataset_gather(&st->train, st->idx, st->batch, st->Xb, st->Yb);
  }
  /* CNN dropout: on for the step's loss and gradient only, masks of step t
   * for the samples' indices in the training set (cnn.h) */
  if (st->cnn) {
    st->drop_on = 1, st->drop_ids = st->batch ? st->idx : NULL;
    ds_cnn_dropout(st->cnn, 1, st->drop_seed, (uint64_t)st->opt.t, st->drop_ids);
  }
  if (!st->batch)
    loss = model_loss(st, st->train.X, st->train.Y, &st->loss_train, &st->wtrain, grad);
  else
    loss = model_loss(st, st->Xb, st->Yb, &st->loss_batch, &st->wbatch, grad);
  if (st->cnn) ds_cnn_dropout(st->cnn, 0, 0, 0, NULL);
  st->drop_on = 0;
  return loss;
}

int ds_worker_run_point(const ds_sweep *sw, const ds_point *p, ds_team *team, ds_traj *tr,
                        ds_point_result *res, const ds_ckpt *ck) {
  const ds_point_cfg *c = &p->cfg;
  double t0 = ds_now(), last_save = t0;
  point_state st;
  memset(&st, 0, sizeof st);
  memset(res, 0, sizeof *res);
  res->id = p->id;
  res->diverged_step = -1;
  res->final_test_loss = NAN;
  int rc = setup(sw, p, &st, tr, team);
  if (rc == DS_OK && st.dist) rc = ckpt_restore_dist(&st, p, tr, ck);
  else if (rc == DS_OK && ck && ck->resume && ckpt_intact(p, ck->resume, ck->resume_len))
    rc = ckpt_restore(&st, p, tr, ck->resume, ck->resume_len - sizeof(uint32_t), st.theta,
                      st.opt.state, (int64_t)st.opt.nstate);
  if (rc != DS_OK) {
    state_free(&st);
    return ds_context(rc, "point %lld", (long long)p->id);
  }
  c = st.c; /* optimizer.lr_units lambda0: the rates in effect */
  int64_t T = c->train.steps, t;
  double loss = NAN;
  res->status = DS_ST_DONE;
  int64_t start = st.t;
  for (t = start;; t++) {
    st.t = t;
    if (ck && ck->save && t > start) { /* state here is theta_t: a checkpoint resumes at step t */
      /* 0: go on, 1: checkpoint, 2: checkpoint and stop. On a team of more
       * than one rank the leader decides for all (the drain signal and the
       * clock differ between ranks); its members get a ck whose save does
       * nothing and no stop flag (src/sched/workloop.c). */
      int stop = ck->stop && *ck->stop;
      double now = ds_now();
      int act = stop ? 2
                : (ck->every_steps > 0 && t % ck->every_steps == 0) ||
                          (ck->every_s > 0 && now - last_save >= ck->every_s) ? 1 : 0;
      if (team->size > 1) MPI_Bcast(&act, 1, MPI_INT, 0, team->comm);
      if (act) {
        rc = ckpt_save(&st, p, tr, ck, st.wall_before + now - t0);
        last_save = now;
        if (team->size > 1) {
          int bad = rc != DS_OK, any = 0;
          MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, team->comm);
          if (any && rc == DS_OK) rc = ds_fail(DS_EMPI, "a team member could not checkpoint");
        }
        if (rc != DS_OK) break;
        if (act == 2) {
          res->status = DS_ST_PENDING;
          break;
        }
      }
    }
    double norm = c->optimizer.schedule == DS_SCHED_ADAPTIVE_NORM ? theta_norm(&st) : 0;
    double lr = ds_schedule_lr(&c->optimizer, t, norm, c->model.depth);
    if (t == 0 && st.ix.eta >= 0) { /* lr_units lambda0: the absolute rate (issue 24) */
      rc = ds_traj_append(tr, st.ix.eta, 0, &c->optimizer.lr);
      if (rc != DS_OK) break;
    }
    loss = step_loss_grad(&st);
    int diverged = !isfinite(loss) || loss > c->train.diverge_above;
    int last = diverged || t == T || (c->train.tol > 0 && loss < c->train.tol);
    if (!st.batch && !st.noisy && isfinite(loss) && loss < st.min_loss) st.min_loss = loss;
    double step_loss = loss; /* record() replaces a minibatch's (or dropout's) loss by the full one */
    if (!diverged && (last || ds_worker_record_step(&c->record, t, T))) {
      rc = record(&st, team, tr, t, &loss, lr, &res->final_test_loss);
      if (rc != DS_OK) break;
    } else if (diverged && st.ix.loss >= 0) {
      rc = ds_traj_append(tr, st.ix.loss, t, &loss); /* the blow-up itself, nothing else */
      if (rc != DS_OK) break;
    }
    if (!diverged) {
      int rose = t > 0 && ds_worker_loss_rose(st.prev_loss, step_loss, c->record.spectra.loss_rise_rel);
      ds_diag_batch db = {st.batch ? st.Xb : NULL, &st.wbatch, &st.loss_batch, lr, st.batch};
      rc = ds_diagrec_step(&st.diag, tr, team, c, t, last, rose, &st.mlp, st.theta, &st.train,
                           &st.loss_train, &st.wtrain, loss, &db);
      if (rc != DS_OK) break;
    }
    st.prev_loss = step_loss;
    if (t == 0) st.loss0 = step_loss;
    else if (isfinite(step_loss) && step_loss > st.peak) {
      st.peak = step_loss;
      st.peak_step = t;
    }
    if (diverged) {
      res->status = DS_ST_DIVERGED;
      res->diverged_step = t;
      snprintf(res->reason, sizeof res->reason, "loss %s at step %lld",
               isfinite(loss) ? "above train.diverge_above" : "not finite", (long long)t);
    }
    if (last) break;
    update(&st, lr);
  }
  res->steps = t;
  res->final_loss = loss;
  outcome(&st, tr, c, res);
  res->min_loss = isfinite(st.min_loss) ? st.min_loss : NAN;
  res->wall_s = st.wall_before + ds_now() - t0;
  state_free(&st);
  if (rc != DS_OK) return ds_context(rc, "point %lld at step %lld", (long long)p->id, (long long)t);
  return DS_OK;
}
