/* test_worker.c -- a point's trajectory survives checkpoint and resume
 * bitwise: for full-batch GD, minibatch Adam and the end-to-end model, a run
 * resumed from any checkpoint (or stopped by the stop flag and resumed) gives
 * exactly the series and result of an uninterrupted run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/util.h"
#include "dynsweep/store.h"
#include "dynsweep/worker.h"

typedef struct {
  int n;
  char *blob[256];
  size_t len[256];
  volatile int *stop;
  int stop_after; /* set *stop once this many checkpoints were saved */
} saver;

static int save(void *arg, int64_t id, const char *b, size_t len) {
  saver *s = arg;
  (void)id;
  if (s->n == 256) return DS_EINTERNAL;
  s->blob[s->n] = malloc(len);
  memcpy(s->blob[s->n], b, len);
  s->len[s->n++] = len;
  if (s->stop && s->stop_after && s->n == s->stop_after) *s->stop = 1;
  return DS_OK;
}

static int same_traj(const ds_traj *a, const ds_traj *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const ds_series *x = &a->s[i], *y = &b->s[i];
    if (strcmp(x->name, y->name) || x->n != y->n || x->ncols != y->ncols) return 0;
    if (memcmp(x->step, y->step, x->n * sizeof *x->step)) return 0;
    if (memcmp(x->val, y->val, x->n * x->ncols * sizeof *x->val)) return 0;
  }
  return 1;
}

static int same_result(const ds_point_result *a, const ds_point_result *b) {
  return a->status == b->status && a->steps == b->steps &&
         memcmp(&a->final_loss, &b->final_loss, sizeof(double)) == 0 &&
         memcmp(&a->min_loss, &b->min_loss, sizeof(double)) == 0 &&
         a->diverged_step == b->diverged_step && a->outcome == b->outcome &&
         a->event_step == b->event_step && a->plateaus == b->plateaus &&
         a->plateau_end == b->plateau_end &&
         memcmp(&a->peak_ratio, &b->peak_ratio, sizeof(double)) == 0;
}

static void run(const ds_sweep *sw, const ds_point *p, ds_team *team, const ds_ckpt *ck,
                ds_traj *tr, ds_point_result *res) {
  ds_traj_init(tr);
  int rc = ds_worker_run_point(sw, p, team, tr, res, ck);
  CHECK(rc == DS_OK, "%s", ds_errmsg());
}

static void check_config(const char *label, const char *yaml, ds_team *team) {
  ds_sweep sw;
  int rc = ds_sweep_parse(label, yaml, &sw);
  CHECK(rc == DS_OK, "%s", ds_errmsg());
  if (rc) return;
  ds_point p;
  ds_sweep_point(&sw, 0, &p);
  ds_traj ref, tr;
  ds_point_result rref, r;
  run(&sw, &p, team, NULL, &ref, &rref);
  CHECK(rref.status == DS_ST_DONE, "%s: reference run status %d", label, rref.status);

  /* checkpoints every 37 steps do not perturb the run */
  saver s = {0};
  ds_ckpt ck = {.every_steps = 37, .save = save, .arg = &s};
  run(&sw, &p, team, &ck, &tr, &r);
  CHECK(same_traj(&ref, &tr) && same_result(&rref, &r), "%s: checkpointing changed the run", label);
  CHECK(s.n >= 3, "%s: only %d checkpoints", label, s.n);
  ds_traj_free(&tr);

  /* resuming from the first, a middle and the last checkpoint */
  int picks[3] = {0, s.n / 2, s.n - 1};
  for (int k = 0; k < 3; k++) {
    ds_ckpt rk = {.resume = s.blob[picks[k]], .resume_len = s.len[picks[k]]};
    run(&sw, &p, team, &rk, &tr, &r);
    CHECK(same_traj(&ref, &tr), "%s: resume from checkpoint %d differs", label, picks[k]);
    CHECK(same_result(&rref, &r), "%s: result after resume from %d differs", label, picks[k]);
    CHECK(r.wall_s > 0, "%s: wall time carried", label);
    ds_traj_free(&tr);
  }

  /* the stop flag: save, return pending; resume finishes identically */
  volatile int stop = 0;
  saver s2 = {.stop = &stop, .stop_after = 2};
  ds_ckpt ck2 = {.every_steps = 50, .stop = (volatile int *)&stop, .save = save, .arg = &s2};
  run(&sw, &p, team, &ck2, &tr, &r);
  CHECK(r.status == DS_ST_PENDING, "%s: stopped run status %d (want pending)", label, r.status);
  CHECK(s2.n == 3, "%s: stop saved %d checkpoints (want 3)", label, s2.n);
  ds_traj_free(&tr);
  ds_ckpt rk = {.resume = s2.blob[s2.n - 1], .resume_len = s2.len[s2.n - 1]};
  run(&sw, &p, team, &rk, &tr, &r);
  CHECK(same_traj(&ref, &tr) && same_result(&rref, &r), "%s: stop + resume differs", label);
  ds_traj_free(&tr);

  /* a checkpoint of another configuration is refused */
  ds_point q;
  if (ds_sweep_npoints(&sw) > 1 && ds_sweep_point(&sw, 1, &q) == DS_OK) {
    ds_traj_init(&tr);
    rc = ds_worker_run_point(&sw, &q, team, &tr, &r, &rk);
    CHECK(rc != DS_OK, "%s: foreign checkpoint accepted", label);
    ds_traj_free(&tr);
  }
  /* a truncated or bit-flipped checkpoint (CRC-32 mismatch) is not resumed
   * from: the point restarts from step 0 (with a warning), same result */
  s.blob[0][s.len[0] / 3] ^= 0x08;
  for (int k = 0; k < 2; k++) {
    ds_ckpt bad = {.resume = s.blob[0], .resume_len = k ? s.len[0] : s.len[0] / 2};
    ds_traj_init(&tr);
    rc = ds_worker_run_point(&sw, &p, team, &tr, &r, &bad);
    CHECK(rc == DS_OK && same_traj(&ref, &tr) && same_result(&rref, &r),
          "%s: %s checkpoint: not a restart from step 0", label, k ? "bit-flipped" : "truncated");
    ds_traj_free(&tr);
  }

  for (int i = 0; i < s.n; i++) free(s.blob[i]);
  for (int i = 0; i < s2.n; i++) free(s2.blob[i]);
  ds_traj_free(&ref);
  ds_sweep_free(&sw);
}

static const char *common =
    "record: {every: 20, per_decade: 5, top_k: 2,\n"
    "  series: [loss, test_loss, grad_norm, param_norm, layer_fro, layer_sv, lr]}\n";

/* Outcome of a 2-layer linear net in NTK parameterisation (seed 003): with
 * eta = x * eta_crit (eta_crit = 2/lambda_0 for half_sum, from the recorded
 * NTK at step 0), x = 0.5 converges monotonically, x = 1.5 (eta lambda_0 = 3)
 * catapults, x = 2.5 (eta lambda_0 = 5) diverges.
 * Converged (issue 24, dynsweep/outcome.h) means train.tol reached or the
 * recorded loss settled. The x = 0.5 run has no label noise: its loss falls
 * geometrically to round-off (2.3 -> 2e-10 by step 20, ~1e-31 from step 100 on)
 * and then wanders at round-off by far more than 1% of itself, so the settled
 * test cannot call it converged; docs/store.md says to give train.tol for such
 * a run, and so does this test (tol 1e-20: it stops there, converged). The
 * same run cut at 20 steps, still falling by ~2.5x a step, must be unconverged. */
static void check_outcomes(ds_team *team) {
  const char *fmt =
      "name: cat\nseed: 2\n"
      "model: {type: linear, width: 512, depth: 2, param: ntk, init: ntk}\n"
      "data: {kind: teacher, d_in: 4, d_out: 1, rank: 1, n_train: 8, n_test: 0}\n"
      "loss: {type: mse, reduction: half_sum}\noptimizer: {type: gd, lr: %.17g}\n"
      "train: {steps: %d, diverge_above: 1e8%s}\n"
      "record: {every: 1, per_decade: 0, series: [loss], spectra: {ntk: {every: 1000}}}\n";
  char buf[1024];
  snprintf(buf, sizeof buf, fmt, 1e-3, 400, "");
  ds_sweep sw;
  ds_point p;
  ds_traj tr;
  ds_point_result r;
  if (ds_sweep_parse("cat", buf, &sw) != DS_OK) { CHECK(0, "%s", ds_errmsg()); return; }
  ds_sweep_point(&sw, 0, &p);
  run(&sw, &p, team, NULL, &tr, &r);
  int k = ds_traj_find(&tr, "ntk/critical_lr");
  CHECK(k >= 0 && tr.s[k].n > 0, "no ntk/critical_lr series");
  double crit = k >= 0 ? tr.s[k].val[0] : 1;
  ds_traj_free(&tr);
  ds_sweep_free(&sw);
  const double x[4] = {0.5, 1.5, 2.5, 0.5};
  const int steps[4] = {400, 400, 400, 20};
  const char *extra[4] = {", tol: 1e-20", "", "", ""};
  const int want[4] = {DS_OUT_CONVERGED_ROW, DS_OUT_CATAPULT, DS_OUT_DIVERGED, DS_OUT_UNCONVERGED};
  for (int i = 0; i < 4; i++) {
    snprintf(buf, sizeof buf, fmt, x[i] * crit, steps[i], extra[i]);
    if (ds_sweep_parse("cat", buf, &sw) != DS_OK) { CHECK(0, "%s", ds_errmsg()); return; }
    ds_sweep_point(&sw, 0, &p);
    run(&sw, &p, team, NULL, &tr, &r);
    CHECK(r.outcome == want[i], "eta = %g eta_crit, %d steps%s: outcome %s, want %s (peak ratio %g)",
          x[i], steps[i], extra[i], ds_outcome_name(r.outcome), ds_outcome_name(want[i]),
          r.peak_ratio);
    if (want[i] == DS_OUT_CATAPULT)
      CHECK(r.event_step > 0 && r.peak_ratio > 2 && r.final_loss < 1e-6,
            "catapult peak at step %lld, ratio %g, final loss %g", (long long)r.event_step,
            r.peak_ratio, r.final_loss);
    if (want[i] == DS_OUT_CONVERGED_ROW)
      CHECK(!(r.peak_ratio > 1) && r.final_loss < 1e-20 && r.steps < 400,
            "monotone run: peak ratio %g, final loss %g after %lld steps (want < 1e-20 before 400)",
            r.peak_ratio, r.final_loss, (long long)r.steps);
    if (want[i] == DS_OUT_UNCONVERGED)
      CHECK(r.steps == 20 && r.final_loss > 1e-12 && r.final_loss < 1e-6,
            "cut run: %lld steps, final loss %g (want 20 steps, 1e-12 < loss < 1e-6)",
            (long long)r.steps, r.final_loss);
    ds_traj_free(&tr);
    ds_sweep_free(&sw);
  }
  /* plateaus: a hand-made loss with two plateaus */
  int64_t st[] = {0, 1, 2, 5, 10, 20, 40, 60, 100, 200, 400, 500};
  double lo[] = {1, 1, 0.99, 0.98, 0.97, 0.5, 0.49, 0.49, 0.48, 0.2, 0.19, 0.19};
  int64_t end;
  int np = ds_worker_plateaus(st, lo, 12, &end);
  CHECK(np == 2 && end == 200, "plateaus %d (want 2), last ended at %lld (want 200)", np,
        (long long)end);
}

/* record.spectra.loss_rise_rel: on_loss_rise fires only when the step loss
 * rose by more than that fraction of the previous step's loss. Round-off
 * rises (2e-15 relative) must not fire at the default 1e-6; the catapult's
 * rise must. On a catapulting run, the NTK (on_loss_rise only) is computed at
 * exactly step 0, the last step and the steps whose recorded loss rose by
 * more than the threshold. */
static void check_loss_rise(ds_team *team) {
  CHECK(!ds_worker_loss_rose(1.0, 1.0 + 2e-15, 1e-6), "a round-off rise fired at 1e-6");
  CHECK(ds_worker_loss_rose(1.0, 1.0 + 2e-15, 0), "any rise fires at 0");
  CHECK(ds_worker_loss_rose(1.0, 1.0 + 2e-6, 1e-6), "a rise of 2e-6 did not fire at 1e-6");
  CHECK(!ds_worker_loss_rose(1.0, 1.0 + 1e-6, 1e-6), "a rise of exactly 1e-6 fired");
  CHECK(!ds_worker_loss_rose(1.0, 0.5, 0) && !ds_worker_loss_rose(1.0, NAN, 0) &&
            !ds_worker_loss_rose(NAN, 1.0, 0),
        "a fall or a NaN fired");
  CHECK(ds_worker_loss_rose(1e-30, 1.1e-30, 1e-6), "the threshold is relative");
  const char *fmt =
      "name: rise\nseed: 2\n"
      "model: {type: linear, width: 512, depth: 2, param: ntk, init: ntk}\n"
      "data: {kind: teacher, d_in: 4, d_out: 1, rank: 1, n_train: 8, n_test: 0}\n"
      "loss: {type: mse, reduction: half_sum}\noptimizer: {type: gd, lr: %.17g}\n"
      "train: {steps: 300, diverge_above: 1e8}\n"
      "record: {every: 1, per_decade: 0, series: [loss],\n"
      "  spectra: {ntk: {on_loss_rise: true}%s}}\n";
  /* eta_crit from step 0's NTK, then eta = 1.5 eta_crit: a catapult */
  char buf[1024];
  snprintf(buf, sizeof buf, fmt, 1e-3, "");
  ds_sweep sw;
  ds_point p;
  ds_traj tr;
  ds_point_result r;
  if (ds_sweep_parse("rise", buf, &sw) != DS_OK) { CHECK(0, "%s", ds_errmsg()); return; }
  CHECK(sw.base.record.spectra.loss_rise_rel == 1e-6, "default loss_rise_rel %g",
        sw.base.record.spectra.loss_rise_rel);
  ds_sweep_point(&sw, 0, &p);
  run(&sw, &p, team, NULL, &tr, &r);
  int k = ds_traj_find(&tr, "ntk/critical_lr");
  double crit = k >= 0 && tr.s[k].n > 0 ? tr.s[k].val[0] : 1;
  ds_traj_free(&tr);
  ds_sweep_free(&sw);
  /* the sweep hash: the default is not hashed (existing sweeps keep their hash and
   * their stores stay resumable); another value is */
  uint64_t h[3];
  const char *hx[3] = {"", ", loss_rise_rel: 1.0e-6", ", loss_rise_rel: 0"};
  for (int i = 0; i < 3; i++) {
    snprintf(buf, sizeof buf, fmt, 1e-3, hx[i]);
    if (ds_sweep_parse("rise", buf, &sw) != DS_OK) { CHECK(0, "%s", ds_errmsg()); return; }
    h[i] = sw.hash;
    ds_sweep_free(&sw);
  }
  CHECK(h[0] == h[1] && h[0] != h[2], "hashes %llx (no key), %llx (1e-6), %llx (0)",
        (unsigned long long)h[0], (unsigned long long)h[1], (unsigned long long)h[2]);
  const char *extra[3] = {"", ", loss_rise_rel: 0.05", ", loss_rise_rel: 1e9"};
  const double rel[3] = {1e-6, 0.05, 1e9};
  int64_t nfired[3] = {0};
  for (int i = 0; i < 3; i++) {
    snprintf(buf, sizeof buf, fmt, 1.5 * crit, extra[i]);
    if (ds_sweep_parse("rise", buf, &sw) != DS_OK) { CHECK(0, "%s", ds_errmsg()); return; }
    ds_sweep_point(&sw, 0, &p);
    run(&sw, &p, team, NULL, &tr, &r);
    int li = ds_traj_find(&tr, "loss"), ni = ds_traj_find(&tr, "ntk/critical_lr");
    CHECK(li >= 0 && ni >= 0, "rel %g: loss or ntk series missing", rel[i]);
    if (li >= 0 && ni >= 0) {
      const ds_series *L = &tr.s[li], *N = &tr.s[ni];
      int64_t j = 0, bad = 0;
      for (int64_t q = 0; q < L->n; q++) {
        int64_t t = L->step[q];
        int due = t == 0 || q == L->n - 1 ||
                  (q > 0 && ds_worker_loss_rose(L->val[q - 1], L->val[q], rel[i]));
        int have = j < N->n && N->step[j] == t;
        if (have) j++;
        if (due != have && bad++ < 3)
          CHECK(0, "rel %g: step %lld: ntk %s, loss %.17g -> %.17g", rel[i], (long long)t,
                have ? "computed but not due" : "due but not computed", q ? L->val[q - 1] : NAN,
                L->val[q]);
      }
      nfired[i] = N->n;
      CHECK(j == N->n, "rel %g: ntk records off the loss steps", rel[i]);
    }
    CHECK(r.outcome == DS_OUT_CATAPULT, "rel %g: outcome %d, want catapult", rel[i], r.outcome);
    ds_traj_free(&tr);
    ds_sweep_free(&sw);
  }
  printf("loss_rise_rel: ntk evaluations %lld at 1e-6, %lld at 0.05, %lld at 1e9\n",
         (long long)nfired[0], (long long)nfired[1], (long long)nfired[2]);
  CHECK(nfired[0] > 2 && nfired[2] == 2 && nfired[1] <= nfired[0],
        "ntk evaluations: %lld at 1e-6 (want > 2: the catapult), %lld at 0.05, %lld at 1e9 "
        "(want 2: first and last step)", (long long)nfired[0], (long long)nfired[1],
        (long long)nfired[2]);
}

/* The catapult count is the number of steps whose lr exceeded that step's
 * batch critical lr, and the batch critical lr varies from batch to batch. */
/* Parses yaml and runs its first point; 0 (checked) if the sweep is refused. */
static int run_first(const char *name, const char *yaml, ds_team *team, ds_sweep *sw, ds_point *p,
                     ds_traj *tr) {
  ds_point_result r;
  if (ds_sweep_parse(name, yaml, sw) != DS_OK) {
    CHECK(0, "%s", ds_errmsg());
    return 0;
  }
  ds_sweep_point(sw, 0, p);
  run(sw, p, team, NULL, tr, &r);
  return 1;
}

static void check_batch_ntk(const char *yaml, ds_team *team) {
  ds_sweep sw;
  ds_point p;
  ds_traj tr;
  if (!run_first("sgdntk", yaml, team, &sw, &p, &tr)) return;
  int kc = ds_traj_find(&tr, "ntk/batch_critical_lr"), kn = ds_traj_find(&tr, "ntk/batch_catapults");
  CHECK(kc >= 0 && kn >= 0, "batch NTK series missing");
  if (kc >= 0 && kn >= 0) {
    const ds_series *c = &tr.s[kc], *n = &tr.s[kn];
    int64_t count = 0;
    double lo = INFINITY, hi = 0;
    for (int64_t i = 0; i < c->n; i++) {
      count += p.cfg.optimizer.lr > c->val[i];
      lo = fmin(lo, c->val[i]);
      hi = fmax(hi, c->val[i]);
    }
    CHECK(c->n == 301 && n->n == 301, "one record per step (%lld)", (long long)c->n);
    CHECK(n->val[n->n - 1] == (double)count, "count %g, want %lld", n->val[n->n - 1],
          (long long)count);
    CHECK(count > 0 && count < c->n, "lr %g above the batch critical lr at %lld of %lld steps",
          p.cfg.optimizer.lr, (long long)count, (long long)c->n);
    CHECK(hi > 1.05 * lo && lo > 0, "batch critical lr varies: %g .. %g", lo, hi);
  }
  ds_traj_free(&tr);
  ds_sweep_free(&sw);
}

/* Full-batch GD: the "batch" NTK is the training-set NTK, so its critical lr
 * equals ntk/critical_lr at every step. */
static void check_batch_ntk_full(ds_team *team) {
  const char *yaml =
      "name: gdntk\nseed: 8\n"
      "model: {type: relu, width: 16, depth: 2, param: ntk, init: ntk}\n"
      "data: {kind: rank2, d_in: 6, n_train: 24, n_test: 0, noise: 0.1}\n"
      "loss: {type: mse, reduction: mean}\noptimizer: {type: gd, lr: 0.5}\ntrain: {steps: 40}\n"
      "record: {every: 20, series: [loss], spectra: {ntk: {every: 4}, batch_ntk: {every: 2}}}\n";
  ds_sweep sw;
  ds_point p;
  ds_traj tr;
  if (!run_first("gdntk", yaml, team, &sw, &p, &tr)) return;
  int kc = ds_traj_find(&tr, "ntk/batch_critical_lr"), kf = ds_traj_find(&tr, "ntk/critical_lr");
  CHECK(kc >= 0 && kf >= 0, "series missing");
  if (kc >= 0 && kf >= 0) {
    const ds_series *c = &tr.s[kc], *f = &tr.s[kf];
    CHECK(c->n == 21 && f->n == 11, "records: batch %lld (want 21), full %lld (want 11)",
          (long long)c->n, (long long)f->n);
    int matched = 0;
    for (int64_t i = 0; i < c->n; i++)
      for (int64_t j = 0; j < f->n; j++)
        if (c->step[i] == f->step[j]) {
          matched++;
          CHECK(ds_close_rel(c->val[i], f->val[j], 1e-12), "step %lld: batch %.17g, full %.17g",
                (long long)c->step[i], c->val[i], f->val[j]);
        }
    CHECK(matched == 11, "%d common steps", matched);
  }
  ds_traj_free(&tr);
  ds_sweep_free(&sw);
}

int main(void) {
  MPI_Init(NULL, NULL);
  ds_team team;
  CHECK(ds_team_init(&team, MPI_COMM_SELF) == DS_OK, "%s", ds_errmsg());
  char buf[4096];
  snprintf(buf, sizeof buf,
           "name: gd\nseed: 3\ngrid: {lr: [0.05, 0.02]}\n"
           "model: {type: linear, width: 12, depth: 3, bias: true}\n"
           "data: {kind: teacher, d_in: 6, d_out: 3, n_train: 40, n_test: 10, noise: 0.1}\n"
           "loss: {type: mse, reduction: half_mean}\ntrain: {steps: 300}\n%s", common);
  check_config("gd", buf, &team);
  snprintf(buf, sizeof buf,
           "name: adam\nseed: 4\ngrid: {lr: [0.01, 0.02]}\n"
           "model: {type: relu, width: 16, depth: 3, bias: true, init: he}\n"
           "data: {kind: rank2, d_in: 8, n_train: 64, n_test: 16, noise: 0.1}\n"
           "loss: {type: mse, reduction: mean}\n"
           "optimizer: {type: adam, batch_size: 12, weight_decay: 0.001}\n"
           "train: {steps: 300}\n%s", common);
  check_config("adam-sgd", buf, &team);
  snprintf(buf, sizeof buf,
           "name: e2e\nseed: 5\ngrid: {depth: [3, 2]}\n"
           "model: {type: e2e, width: 8, init: balanced, init_scale: 0.5}\n"
           "data: {kind: whitened, d_in: 5, d_out: 2, n_train: 20, n_test: 0}\n"
           "loss: {type: lp, p: 4, reduction: half_mean}\n"
           "optimizer: {type: gd, lr: 0.05}\ntrain: {steps: 300}\n%s", common);
  check_config("e2e", buf, &team);
  /* diagnostics with "loss rose" events and K_0 carried across a resume */
  snprintf(buf, sizeof buf,
           "name: diag\nseed: 6\ngrid: {lr: [6.0, 2.0]}\n"
           "model: {type: relu, width: 16, depth: 2, param: ntk, init: ntk}\n"
           "data: {kind: rank2, d_in: 6, n_train: 24, n_test: 8, noise: 0.1}\n"
           "loss: {type: mse, reduction: half_mean}\ntrain: {steps: 300}\n"
           "record: {every: 20, per_decade: 5, series: [loss],\n"
           "  spectra: {layers: {every: 30}, ntk: {every: 40, on_loss_rise: true},\n"
           "            hessian: {every: 60}, agop: {every: 45}, escape: {every: 25},\n"
           "            activations: {every: 50}, top_k: 3, lanczos_iters: 12, split: [1, 4]}}\n");
  check_config("diagnostics", buf, &team);
  /* SGD: the NTK of each step's batch (critical lr and catapult count) */
  /* ... with every full-set NTK record, and on its own cadence without the
   * full-set NTK: every step counted either way */
  const char *cadence[2][2] = {{"sgd-batch-ntk", "ntk"}, {"sgd-batch-ntk-own", "batch_ntk"}};
  for (int i = 0; i < 2; i++) {
    snprintf(buf, sizeof buf,
             "name: sgdntk\nseed: 7\ngrid: {lr: [1.5, 0.3]}\n"
             "model: {type: relu, width: 16, depth: 2, param: ntk, init: ntk}\n"
             "data: {kind: rank2, d_in: 6, n_train: 24, n_test: 0, noise: 0.1}\n"
             "loss: {type: mse, reduction: mean}\noptimizer: {type: sgd, batch_size: 6}\n"
             "train: {steps: 300, diverge_above: 1e30}\n"
             "record: {every: 20, per_decade: 0, series: [loss], spectra: {%s: {every: 1}}}\n",
             cadence[i][1]);
    check_config(cadence[i][0], buf, &team);
    check_batch_ntk(buf, &team);
  }
  check_batch_ntk_full(&team);
  check_outcomes(&team);
  check_loss_rise(&team);
  ds_team_free(&team);
  int code = ds_check_report("test_worker");
  MPI_Finalize();
  return code;
}
