/* test_dtrain.c -- distributed training on a team (dtrain.h) against the
 * single-rank ds_mlp path, run on 1, 2 (1x2 grid) and 4 (2x2) ranks:
 *  - scatter/gather of a flat theta is exact;
 *  - the gradient at the same theta agrees to 1e-12 (relative, max norm),
 *    for linear, ReLU+bias, and NTK-parameterised ReLU+bias with a fixed
 *    output layer and the lp (p = 4) loss, on shapes that do not divide the
 *    block size (nb = 8, 5);
 *  - 20 steps of GD and of momentum: every step's loss and the final theta
 *    agree to 1e-10;
 *  - singular values of a distributed W (pdgesvd, no gather) against LAPACK;
 *  - ds_worker_run_point with train.distributed on vs off: every recorded
 *    series (loss, test loss, norms, layer_fro, layer_sv) and the result
 *    agree to 1e-10 (full batch GD and minibatch momentum);
 *  - a checkpoint written by the team resumes on one rank and vice versa,
 *    and ends where the uninterrupted run does;
 *  - train.distributed: auto is bitwise "on" at width 512 on a team of > 1
 *    rank and bitwise "off" at width 511 (and on one rank);
 *  - train.distributed: on with an unsupported setting is a file:line:col error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/dtrain.h"
#include "dynsweep/nn.h"
#include "dynsweep/optim.h"
#include "dynsweep/store.h"
#include "dynsweep/util.h"
#include "dynsweep/worker.h"

static int rank_, size_;

static double rel_inf(const double *a, const double *b, size_t n) {
  double d = 0, m = 1e-300;
  for (size_t i = 0; i < n; i++) {
    d = fmax(d, fabs(a[i] - b[i]));
    m = fmax(m, fmax(fabs(a[i]), fabs(b[i])));
  }
  return d / m;
}

typedef struct {
  const char *name;
  int relu, bias, ntk, train_output, nb, lp;
} net_case;

static void check_net(ds_team *team, const net_case *nc) {
  enum { L = 3, N = 21 };
  int dims[L + 1] = {13, 37, 29, 7};
  ds_mlp m;
  CHECK(ds_mlp_setup(&m, nc->relu ? DS_ACT_RELU : DS_ACT_LINEAR, nc->bias, L, dims,
                     nc->ntk ? DS_PARAM_NTK : DS_PARAM_STANDARD, nc->train_output) == DS_OK,
        "%s", ds_errmsg());
  size_t P = m.nparams;
  double *theta0 = calloc(P, sizeof(double)), *theta = calloc(P, sizeof(double));
  double *grad = calloc(P, sizeof(double)), *full = calloc(P, sizeof(double));
  double *X = calloc((size_t)dims[0] * N, sizeof(double));
  double *Y = calloc((size_t)dims[L] * N, sizeof(double));
  ds_rng rng;
  ds_rng_init(&rng, 11, 0, 0, 0); /* the same draws on every rank */
  ds_mlp_init_gaussian(&m, 1.0, &rng, theta0);
  if (nc->bias)
    for (int l = 0; l < L; l++)
      for (int i = 0; i < dims[l + 1]; i++) theta0[m.b_off[l] + i] = 0.1 * ds_rng_normal(&rng);
  for (int i = 0; i < dims[0] * N; i++) X[i] = ds_rng_normal(&rng);
  for (int i = 0; i < dims[L] * N; i++) Y[i] = ds_rng_normal(&rng);
  ds_loss loss = {nc->lp ? DS_LOSS_LP : DS_LOSS_MSE, nc->lp ? 4.0 : 2.0, 1.0 / (2.0 * N)};

  ds_dtrain dt;
  ds_dtrain_spec spec = {L, dims, nc->relu, nc->bias, nc->train_output, nc->ntk, nc->nb};
  int rc = ds_dtrain_init(&dt, team, &spec);
  CHECK(rc == DS_OK, "%s: %s", nc->name, ds_errmsg());
  if (rc) return;
  CHECK(dt.nparams == P, "%s: %zu parameters, ds_mlp has %zu", nc->name, dt.nparams, P);
  ds_dtrain_set_loss(&dt, nc->lp ? DS_DT_LOSS_LP : DS_DT_LOSS_MSE, loss.p, loss.c);
  ds_dtrain_work dw;
  CHECK(ds_dtrain_work_init(&dt, N, 1, &dw) == DS_OK, "%s", ds_errmsg());
  ds_mlp_work w;
  CHECK(ds_mlp_work_init(&m, N, &w) == DS_OK, "%s", ds_errmsg());

  /* scatter / gather round trip is exact */
  CHECK(ds_dtrain_scatter(&dt, theta0, dt.theta) == DS_OK, "%s", ds_errmsg());
  CHECK(ds_dtrain_gather(&dt, dt.theta, full) == DS_OK, "%s", ds_errmsg());
  if (rank_ == 0)
    CHECK(memcmp(full, theta0, P * sizeof(double)) == 0, "%s: scatter/gather not exact", nc->name);
  /* the distributed sums of squares */
  double ss = 0;
  for (size_t i = 0; i < P; i++) ss += theta0[i] * theta0[i];
  CHECK(ds_close_rel(ds_dtrain_sumsq(&dt, dt.theta), ss, 1e-13), "%s: sumsq", nc->name);

  /* gradient at theta0 */
  double l1 = ds_mlp_loss_grad_l(&m, theta0, X, Y, &loss, grad, &w);
  double l2 = ds_dtrain_loss_grad(&dt, X, Y, &dw, 1);
  CHECK(ds_close_rel(l1, l2, 1e-12), "%s: loss %.17g vs %.17g", nc->name, l1, l2);
  ds_dtrain_gather(&dt, dt.grad, full);
  if (rank_ == 0) {
    double e = rel_inf(full, grad, P);
    CHECK(e <= 1e-12, "%s: gradient differs by %g (relative)", nc->name, e);
    if (!nc->train_output) {
      double z = 0;
      for (size_t i = m.w_off[L - 1]; i < P; i++) z = fmax(z, fabs(full[i]));
      CHECK(z == 0.0, "%s: fixed output layer has gradient %g", nc->name, z);
    }
  }
  double le = ds_dtrain_loss_grad(&dt, X, Y, &dw, 0); /* loss only */
  CHECK(le == l2, "%s: loss-only pass %.17g vs %.17g", nc->name, le, l2);

  /* singular values of W_2 from the distributed matrix */
  double s1[64], s2[64];
  CHECK(ds_svd_values_dmat(team, &dt.W[1], s1) == DS_OK, "%s", ds_errmsg());
  ds_ref_singular_values(theta0 + m.w_off[1], dims[2], dims[1], s2);
  CHECK(rel_inf(s1, s2, dims[2] < dims[1] ? dims[2] : dims[1]) <= 1e-12, "%s: singular values",
        nc->name);

  /* 20 steps of GD and of momentum on both paths */
  for (int k = 0; k < 2; k++) {
    ds_optim_spec os;
    memset(&os, 0, sizeof os);
    os.type = k ? DS_OPT_MOMENTUM : DS_OPT_GD;
    os.lr = 0.02;
    os.momentum = 0.9;
    ds_optim o1, o2;
    ds_optim_init(&o1, &os, P);
    ds_optim_init(&o2, &os, dt.nloc);
    memcpy(theta, theta0, P * sizeof(double));
    ds_dtrain_scatter(&dt, theta0, dt.theta);
    double worst = 0;
    for (int t = 0; t < 20; t++) {
      double a = ds_mlp_loss_grad_l(&m, theta, X, Y, &loss, grad, &w);
      double b = ds_dtrain_loss_grad(&dt, X, Y, &dw, 1);
      worst = fmax(worst, fabs(a - b) / fabs(a));
      ds_optim_step(&o1, theta, grad, os.lr);
      ds_optim_step(&o2, dt.theta, dt.grad, os.lr);
    }
    CHECK(worst <= 1e-10, "%s/%s: step losses differ by %g", nc->name, k ? "momentum" : "gd",
          worst);
    ds_dtrain_gather(&dt, dt.theta, full);
    if (rank_ == 0) {
      double e = rel_inf(full, theta, P), moved = rel_inf(theta, theta0, P);
      CHECK(e <= 1e-10, "%s/%s: final theta differs by %g", nc->name, k ? "momentum" : "gd", e);
      CHECK(moved > 1e-3, "%s: theta hardly moved (%g): the test would be vacuous", nc->name,
            moved);
    }
    ds_optim_free(&o1);
    ds_optim_free(&o2);
  }
  ds_mlp_work_free(&w);
  ds_dtrain_work_free(&dt, &dw);
  ds_dtrain_free(&dt);
  ds_mlp_free(&m);
  free(theta0), free(theta), free(grad), free(full), free(X), free(Y);
}

/* ---- the worker ------------------------------------------------------------ */

typedef struct {
  int n;
  char *blob[64];
  size_t len[64];
} saver;

static int save(void *arg, int64_t id, const char *b, size_t len) {
  saver *s = arg;
  (void)id;
  if (s->n == 64) return DS_EINTERNAL;
  s->blob[s->n] = malloc(len);
  memcpy(s->blob[s->n], b, len);
  s->len[s->n++] = len;
  return DS_OK;
}
static int save_nothing(void *arg, int64_t id, const char *b, size_t len) {
  (void)arg, (void)id, (void)b, (void)len;
  return DS_OK;
}

static int run(const ds_sweep *sw, const ds_point *p, ds_team *team, const ds_ckpt *ck,
               ds_traj *tr, ds_point_result *res) {
  ds_traj_init(tr);
  int rc = ds_worker_run_point(sw, p, team, tr, res, ck);
  CHECK(rc == DS_OK, "%s", ds_errmsg());
  return rc;
}

/* every series and the result agree to tol (relative, per series max norm) */
static void same_run(const char *what, const ds_traj *a, const ds_point_result *ra,
                     const ds_traj *b, const ds_point_result *rb, double tol) {
  CHECK(a->n == b->n, "%s: %d vs %d series", what, a->n, b->n);
  for (int i = 0; i < a->n && i < b->n; i++) {
    const ds_series *x = &a->s[i], *y = &b->s[i];
    int ok = !strcmp(x->name, y->name) && x->n == y->n && x->ncols == y->ncols &&
             !memcmp(x->step, y->step, x->n * sizeof *x->step);
    CHECK(ok, "%s: series %s / %s differ in shape", what, x->name, y->name);
    if (!ok) continue;
    double e = rel_inf(x->val, y->val, (size_t)x->n * x->ncols);
    CHECK(e <= tol, "%s: series %s differs by %g", what, x->name, e);
  }
  CHECK(ra->status == rb->status && ra->steps == rb->steps, "%s: status/steps", what);
  CHECK(ds_close_rel(ra->final_loss, rb->final_loss, tol), "%s: final loss %.17g vs %.17g", what,
        ra->final_loss, rb->final_loss);
  CHECK((isnan(ra->final_test_loss) && isnan(rb->final_test_loss)) ||
            ds_close_rel(ra->final_test_loss, rb->final_test_loss, tol),
        "%s: test loss %.17g vs %.17g", what, ra->final_test_loss, rb->final_test_loss);
}

static void check_worker(ds_team *team, ds_team *self, const char *name, const char *body) {
  char on[4096], off[4096];
  snprintf(on, sizeof on, "name: %s\nseed: 9\n%strain: {steps: 40, distributed: on}\n", name, body);
  snprintf(off, sizeof off, "name: %s\nseed: 9\n%strain: {steps: 40, distributed: off}\n", name,
           body);
  ds_sweep s_on, s_off;
  int rc = ds_sweep_parse("on.yaml", on, &s_on);
  CHECK(rc == DS_OK, "%s", ds_errmsg());
  rc |= ds_sweep_parse("off.yaml", off, &s_off);
  CHECK(rc == DS_OK, "%s", ds_errmsg());
  if (rc) return;
  ds_point p_on, p_off;
  ds_sweep_point(&s_on, 0, &p_on);
  ds_sweep_point(&s_off, 0, &p_off);
  ds_traj ta, tb, tc;
  ds_point_result ra, rb, rcr;
  run(&s_off, &p_off, self, NULL, &ta, &ra); /* one rank, ds_mlp */
  saver sv = {0};
  ds_ckpt ck = {.every_steps = 15, .save = rank_ == 0 ? save : save_nothing, .arg = &sv};
  run(&s_on, &p_on, team, &ck, &tb, &rb); /* the team, dtrain, with checkpoints */
  if (rank_ == 0) {
    same_run(name, &ta, &ra, &tb, &rb, 1e-10);
    CHECK(sv.n == 2, "%s: %d checkpoints, want 2 (steps 15, 30)", name, sv.n);
    CHECK(ta.n >= 4 && ta.s[0].n >= 5, "%s: too few records to compare", name);
  }
  /* the team's checkpoint at step 15 resumes on one rank (ds_mlp) ... */
  int n = sv.n;
  MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (n >= 1) {
    size_t len = rank_ == 0 ? sv.len[0] : 0;
    MPI_Bcast(&len, sizeof len, MPI_BYTE, 0, MPI_COMM_WORLD);
    char *blob = rank_ == 0 ? sv.blob[0] : malloc(len);
    MPI_Bcast(blob, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
    ds_ckpt r1 = {.resume = blob, .resume_len = len};
    run(&s_off, &p_off, self, &r1, &tc, &rcr);
    same_run("team checkpoint resumed on one rank", &ta, &ra, &tc, &rcr, 1e-10);
    ds_traj_free(&tc);
    /* ... and on the team again (only the root gets the blob) */
    ds_ckpt r2 = {.resume = rank_ == 0 ? blob : NULL, .resume_len = len};
    run(&s_on, &p_on, team, &r2, &tc, &rcr);
    if (rank_ == 0) same_run("team checkpoint resumed on the team", &ta, &ra, &tc, &rcr, 1e-10);
    ds_traj_free(&tc);
    if (rank_ != 0) free(blob);
  }
  /* a one-rank checkpoint resumes on the team */
  saver s1 = {0};
  ds_ckpt c1 = {.every_steps = 20, .save = save, .arg = &s1};
  run(&s_off, &p_off, self, &c1, &tc, &rcr);
  ds_traj_free(&tc);
  CHECK(s1.n == 2, "%s: one-rank run made %d checkpoints (want steps 20, 40)", name, s1.n);
  if (s1.n >= 1) {
    ds_ckpt r3 = {.resume = rank_ == 0 ? s1.blob[0] : NULL, .resume_len = s1.len[0]};
    run(&s_on, &p_on, team, &r3, &tc, &rcr);
    if (rank_ == 0) same_run("one-rank checkpoint resumed on the team", &ta, &ra, &tc, &rcr, 1e-10);
    ds_traj_free(&tc);
  }
  for (int i = 0; i < sv.n; i++) free(sv.blob[i]);
  for (int i = 0; i < s1.n; i++) free(s1.blob[i]);
  ds_traj_free(&ta);
  ds_traj_free(&tb);
  ds_sweep_free(&s_on);
  ds_sweep_free(&s_off);
}

/* train.distributed: auto picks the team's grid from width 512 on (on a team
 * of > 1 rank): its run is bitwise the one of "on" below that, of "off". */
static int run_mode(ds_team *team, int width, const char *mode, ds_traj *tr,
                    ds_point_result *r) {
  char y[1024];
  snprintf(y, sizeof y, "name: auto\nseed: 4\nmodel: {type: relu, width: %d, depth: 2, bias: true}\n"
           "data: {kind: teacher, d_in: 8, d_out: 4, n_train: 40, n_test: 0}\n"
           "loss: {type: mse, reduction: mean}\noptimizer: {type: gd, lr: 0.01}\n"
           "train: {steps: 8, distributed: %s}\nrecord: {every: 1, series: [loss]}\n", width, mode);
  ds_sweep s;
  ds_point p;
  if (ds_sweep_parse("auto.yaml", y, &s) != DS_OK) {
    CHECK(0, "%s", ds_errmsg());
    return 1;
  }
  ds_sweep_point(&s, 0, &p);
  int rc = run(&s, &p, team, NULL, tr, r);
  ds_sweep_free(&s);
  return rc;
}

static void check_auto(ds_team *team) {
  const int widths[2] = {512, 511};
  for (int i = 0; i < 2; i++) {
    ds_traj ta, tb;
    ds_point_result ra, rb;
    const char *same = team->size > 1 && widths[i] >= 512 ? "on" : "off";
    if (run_mode(team, widths[i], "auto", &ta, &ra) == DS_OK &&
        run_mode(team, widths[i], same, &tb, &rb) == DS_OK) {
      int k = ds_traj_find(&ta, "loss"), q = ds_traj_find(&tb, "loss");
      int ok = k >= 0 && q >= 0 && ta.s[k].n == 9 && tb.s[q].n == 9 &&
               !memcmp(ta.s[k].val, tb.s[q].val, 9 * sizeof(double));
      CHECK(ok, "width %d on %d ranks: auto is not bitwise the run of %s", widths[i], team->size,
            same);
    }
    ds_traj_free(&ta);
    ds_traj_free(&tb);
  }
}

static void check_refused(const char *body, const char *want) {
  char y[2048];
  snprintf(y, sizeof y, "name: bad\nseed: 1\n%s", body);
  ds_sweep s;
  int rc = ds_sweep_parse("bad.yaml", y, &s);
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), want) && strstr(ds_errmsg(), "bad.yaml:"),
        "want an error with '%s', got rc %d: %s", want, rc, ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);
}

int main(void) {
  MPI_Init(NULL, NULL);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  ds_team team, self;
  CHECK(ds_team_init(&team, MPI_COMM_WORLD) == DS_OK, "%s", ds_errmsg());
  CHECK(ds_team_init(&self, MPI_COMM_SELF) == DS_OK, "%s", ds_errmsg());
  const net_case cases[] = {
      {"linear", 0, 0, 0, 1, 8, 0},
      {"relu+bias", 1, 1, 0, 1, 8, 0},
      {"relu+bias ntk, fixed output, lp4", 1, 1, 1, 0, 5, 1},
      {"linear+bias nb 64", 0, 1, 0, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_net(&team, &cases[i]);

  team.nb = 8; /* spread the worker's small test nets over the whole grid */
  check_worker(&team, &self, "gd",
               "model: {type: relu, width: 27, depth: 3, bias: true}\n"
               "data: {kind: teacher, d_in: 10, d_out: 3, n_train: 30, n_test: 11, noise: 0.1}\n"
               "loss: {type: mse, reduction: half_mean}\noptimizer: {type: gd, lr: 0.05}\n"
               "record: {every: 5, series: [loss, test_loss, grad_norm, param_norm, layer_fro, "
               "layer_sv], top_k: 4}\n");
  check_worker(&team, &self, "sgd-momentum",
               "model: {type: linear, width: 19, depth: 2}\n"
               "data: {kind: teacher, d_in: 9, d_out: 4, n_train: 33, n_test: 0, noise: 0.1}\n"
               "loss: {type: mse, reduction: mean}\n"
               "optimizer: {type: momentum, lr: 0.02, batch_size: 10, schedule: adaptive_norm}\n"
               "record: {every: 3, series: [loss, grad_norm, param_norm, layer_fro]}\n");

  team.nb = 64;
  check_auto(&team);
  check_refused("model: {type: e2e, width: 8, depth: 2}\ndata: {kind: teacher, d_in: 4, d_out: 2}\n"
                "loss: {type: mse, reduction: sum}\ntrain: {distributed: on}\n",
                "train.distributed: on is not supported with model.type e2e");
  check_refused("model: {type: relu, width: 8, depth: 2}\n"
                "data: {kind: teacher, d_in: 4, d_out: 2}\n"
                "loss: {type: mse, reduction: sum}\ntrain: {distributed: on}\n"
                "record: {spectra: {hessian: {every: 5}}}\n",
                "record.spectra");
  check_refused("model: {type: relu, width: 8, depth: 2}\n"
                "data: {kind: teacher, d_in: 4, d_out: 2}\n"
                "loss: {type: mse, reduction: sum}\ntrain: {distributed: maybe}\n",
                "train.distributed");
  ds_team_free(&self);
  ds_team_free(&team);
  int code = ds_check_report("test_dtrain");
  int worst = 0;
  MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
