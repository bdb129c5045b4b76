/* test_optimizers.c -- every ds_opt_kind against a 3-step trajectory on a
 * tiny separable quadratic, grad = a o (theta - b), with the reference numbers
 * as literal constants (derived independently with PyTorch 1.13 in float64,
 * torch.optim.{SGD, Adagrad, Adadelta, RMSprop, Adam}; see
 * docs/optimizers.md for the generating script), plus state layout, t, reset,
 * the caller's grad left untouched, and the learning-rate schedules. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/optim.h"
#include "dynsweep/util.h"

#define NP 4
static const double A_[NP] = {1.0, 2.0, 0.5, 3.0}, B_[NP] = {0.0, 0.5, -1.0, 0.0};
static const double TH0[NP] = {0.5, -1.0, 2.0, 0.0};

static ds_optim_spec base_spec(ds_opt_kind type, double lr) {
  ds_optim_spec s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.lr = lr;
  s.momentum = 0.9;
  s.beta1 = 0.9;
  s.beta2 = 0.999;
  s.eps = 1e-8;
  s.rho = 0.95;
  s.alpha = 0.99;
  s.initial_accumulator = 0.1;
  return s;
}

/* run 3 steps, compare with want[3][NP] (relative 1e-13, absolute for 0) */
static void run3(const char *name, const ds_optim_spec *spec, const double want[3][NP]) {
  ds_optim o;
  CHECK(ds_optim_init(&o, spec, NP) == DS_OK, "%s: init", name);
  double th[NP], g[NP], gcopy[NP];
  memcpy(th, TH0, sizeof th);
  for (int t = 0; t < 3; t++) {
    for (int i = 0; i < NP; i++) g[i] = A_[i] * (th[i] - B_[i]);
    memcpy(gcopy, g, sizeof g);
    ds_optim_step(&o, th, g, ds_schedule_lr(spec, t, 0, 2));
    CHECK(memcmp(g, gcopy, sizeof g) == 0, "%s: grad modified", name);
    CHECK(o.t == t + 1, "%s: t = %lld after %d steps", name, (long long)o.t, t + 1);
    for (int i = 0; i < NP; i++) {
      int ok = want[t][i] == 0 ? fabs(th[i]) < 1e-300 : ds_close_rel(th[i], want[t][i], 1e-13);
      CHECK(ok, "%s: step %d theta[%d] = %.17g, want %.17g", name, t + 1, i, th[i], want[t][i]);
    }
  }
  ds_optim_free(&o);
}

static void test_trajectories(void) {
  ds_optim_spec s;
  {
    static const double w[3][NP] = {
        {0.45000000000000001, -0.69999999999999996, 1.8500000000000001, 0},
        {0.40500000000000003, -0.45999999999999996, 1.7075, 0},
        {0.36450000000000005, -0.26799999999999996, 1.572125, 0}};
    s = base_spec(DS_OPT_GD, 0.1);
    run3("gd", &s, w);
    s = base_spec(DS_OPT_SGD, 0.1);
    run3("sgd", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.44750000000000001, -0.69499999999999995, 1.8400000000000001, 0},
        {0.40051249999999999, -0.45252500000000001, 1.6888000000000001, 0},
        {0.35845868749999998, -0.25975737499999996, 1.5459160000000001, 0}};
    s = base_spec(DS_OPT_SGD, 0.1);
    s.weight_decay = 0.05;
    run3("sgd wd", &s, w);
    s.type = DS_OPT_GD;
    run3("gd wd", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.44950000000000001, -0.69899999999999995, 1.8480000000000001, 0},
        {0.35865049999999998, -0.18760099999999999, 1.5669520000000001, 0},
        {0.24066224949999995, 0.41036590099999998, 1.1840942480000001, 0}};
    s = base_spec(DS_OPT_MOMENTUM, 0.1);
    s.momentum = 0.9;
    s.weight_decay = 0.01;
    run3("momentum wd", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.40999999999999998, -0.45999999999999991, 1.73, 0},
        {0.30419999999999997, 0.077600000000000155, 1.3882999999999999, 0},
        {0.19760399999999995, 0.50614400000000015, 1.0091929999999998, 0}};
    s = base_spec(DS_OPT_NESTEROV, 0.1);
    s.momentum = 0.8;
    run3("nesterov", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.24645376643858063, -0.70165291503080152, 1.7064523862748859, 0},
        {0.13108893569262728, -0.51471862790383793, 1.5079160237572946, 0},
        {0.070971005297786355, -0.37502293905085515, 1.3510845595055898, 0}};
    s = base_spec(DS_OPT_ADAGRAD, 0.3);
    s.initial_accumulator = 0.1;
    s.eps = 1e-7;
    run3("adagrad", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.36292768377321261, -0.84270240475249203, 1.8445526468586158, 0},
        {0.24835241086218096, -0.69026032263500026, 1.6895485771871128, 0},
        {0.1629443204574996, -0.54760393381290573, 1.5379433693395761, 0}};
    s = base_spec(DS_OPT_ADADELTA, 0.5);
    s.rho = 0.9;
    s.eps = 1e-2;
    s.weight_decay = 0.1;
    run3("adadelta wd", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.40000001999999601, -0.9000000033333333, 1.9000000066666662, 0},
        {0.33733919191401895, -0.83158511607879504, 1.830317456889818, 0},
        {0.290433242384113, -0.77685149922491725, 1.7738885784599348, 0}};
    s = base_spec(DS_OPT_RMSPROP, 0.01);
    s.alpha = 0.99;
    s.eps = 1e-8;
    run3("rmsprop", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.40000000199999997, -0.90000000033333327, 1.9000000006666666, 0},
        {0.30118742373064028, -0.80023906229228015, 1.8001027084220775, 0},
        {0.20487125573945103, -0.70090287051809974, 1.7003815249719783, 0}};
    s = base_spec(DS_OPT_ADAM, 0.1);
    run3("adam", &s, w);
  }
  {
    static const double w[3][NP] = {
        {0.40018148820326677, -0.90003224766204448, 1.9000587889476779, 0},
        {0.30215805559122877, -0.80049847717411537, 1.8003250656342744, 0},
        {0.20775730753599414, -0.7017267431420694, 1.7009443918414164, 0}};
    s = base_spec(DS_OPT_ADAM, 0.1);
    s.beta1 = 0.8;
    s.beta2 = 0.99;
    s.eps = 1e-3;
    s.weight_decay = 0.1;
    run3("adam wd", &s, w);
  }
}

/* hand-derived single steps on one scalar, g = 2 at theta = 1 */
static void test_hand_steps(void) {
  double th, g = 2.0;
  ds_optim o;
  ds_optim_spec s;
  /* adagrad, TF1 form (eps = 0): s = 0.1 + 4 = 4.1; theta = 1 - 0.5 * 2 / sqrt(4.1) */
  s = base_spec(DS_OPT_ADAGRAD, 0.5);
  s.eps = 0;
  ds_optim_init(&o, &s, 1);
  CHECK(o.nstate == 1 && o.state[0] == 0.1, "adagrad s0 %g", o.state[0]);
  th = 1;
  ds_optim_step(&o, &th, &g, 0.5);
  CHECK(ds_close_rel(th, 1 - 1.0 / sqrt(4.1), 1e-15), "adagrad TF1 step %.17g", th);
  CHECK(o.state[0] == 4.1, "adagrad accumulator %.17g", o.state[0]);
  ds_optim_free(&o);
  /* the sweep file needs eps > 0: eps = 1e-30 reproduces eps = 0 bit for bit */
  {
    double th0 = 1, th1 = 1, gg = 2;
    ds_optim o0, o1;
    ds_optim_init(&o0, &s, 1);
    s.eps = 1e-30;
    ds_optim_init(&o1, &s, 1);
    for (int t = 0; t < 5; t++) {
      gg = 2 * th0 - 0.3;
      ds_optim_step(&o0, &th0, &gg, 0.5);
      ds_optim_step(&o1, &th1, &gg, 0.5);
    }
    CHECK(th0 == th1, "adagrad eps 1e-30 == eps 0: %.17g %.17g", th0, th1);
    ds_optim_free(&o0);
    ds_optim_free(&o1);
  }
  /* adam first step: m = 0.2, v = 0.004, mhat = 2, vhat = 4 -> theta = 1 - lr * 2 / (2 + eps) */
  s = base_spec(DS_OPT_ADAM, 0.01);
  ds_optim_init(&o, &s, 1);
  th = 1;
  ds_optim_step(&o, &th, &g, 0.01);
  CHECK(ds_close_rel(th, 1 - 0.01 * 2 / (2 + 1e-8), 1e-15), "adam step 1 %.17g", th);
  CHECK(ds_close_rel(o.state[0], 0.2, 1e-15) && ds_close_rel(o.state[1], 0.004, 1e-13),
        "adam m %g v %g", o.state[0], o.state[1]);
  ds_optim_free(&o);
  /* adadelta first step from zero state: a = (1-rho) 4, d = sqrt(eps)/sqrt(a+eps) * 2 */
  s = base_spec(DS_OPT_ADADELTA, 1.0);
  s.rho = 0.95;
  s.eps = 1e-6;
  ds_optim_init(&o, &s, 1);
  th = 1;
  ds_optim_step(&o, &th, &g, 1.0);
  double d = sqrt(1e-6) / sqrt(0.05 * 4 + 1e-6) * 2;
  CHECK(ds_close_rel(th, 1 - d, 1e-14), "adadelta step 1 %.17g want %.17g", th, 1 - d);
  CHECK(ds_close_rel(o.state[1], 0.05 * d * d, 1e-13), "adadelta u %g", o.state[1]);
  ds_optim_free(&o);
}

static void test_layout(void) {
  const size_t n = 7;
  struct {
    ds_opt_kind k;
    size_t ns;
  } tab[] = {{DS_OPT_GD, 0},       {DS_OPT_SGD, 0},     {DS_OPT_MOMENTUM, n}, {DS_OPT_NESTEROV, n},
             {DS_OPT_ADAGRAD, n},  {DS_OPT_ADADELTA, 2 * n}, {DS_OPT_RMSPROP, n}, {DS_OPT_ADAM, 2 * n}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
    ds_optim_spec s = base_spec(tab[i].k, 0.1);
    ds_optim o;
    CHECK(ds_optim_init(&o, &s, n) == DS_OK, "init %d", (int)tab[i].k);
    CHECK(o.nstate == tab[i].ns && ds_optim_nstate(tab[i].k, n) == tab[i].ns,
          "kind %d: nstate %zu want %zu", (int)tab[i].k, o.nstate, tab[i].ns);
    CHECK(o.t == 0 && o.n == n && o.scratch == NULL, "kind %d: fresh", (int)tab[i].k);
    CHECK((o.nstate == 0) == (o.state == NULL), "kind %d: state", (int)tab[i].k);
    int zero = 1;
    for (size_t j = 0; j < o.nstate; j++)
      if (o.state[j] != (tab[i].k == DS_OPT_ADAGRAD ? 0.1 : 0.0)) zero = 0;
    CHECK(zero, "kind %d: initial state", (int)tab[i].k);
    /* a few steps, then reset reproduces the fresh trajectory exactly */
    double th1[7], th2[7], g[7];
    for (size_t j = 0; j < n; j++) th1[j] = th2[j] = 0.3 * (double)j - 1;
    for (int t = 0; t < 4; t++) {
      for (size_t j = 0; j < n; j++) g[j] = th1[j] * th1[j] - 0.5;
      ds_optim_step(&o, th1, g, 0.05);
    }
    CHECK(o.t == 4, "t = %lld", (long long)o.t);
    ds_optim_reset(&o);
    CHECK(o.t == 0, "reset t");
    for (int t = 0; t < 4; t++) {
      for (size_t j = 0; j < n; j++) g[j] = th2[j] * th2[j] - 0.5;
      ds_optim_step(&o, th2, g, 0.05);
    }
    CHECK(memcmp(th1, th2, sizeof th1) == 0, "kind %d: reset reproduces", (int)tab[i].k);
    ds_optim_free(&o);
    ds_optim_free(&o); /* idempotent */
  }
  /* weight decay allocates scratch; a bad type is refused */
  ds_optim_spec s = base_spec(DS_OPT_ADAM, 0.1);
  s.weight_decay = 1e-4;
  ds_optim o;
  CHECK(ds_optim_init(&o, &s, n) == DS_OK && o.scratch != NULL, "wd scratch");
  ds_optim_free(&o);
  s.type = (ds_opt_kind)42;
  CHECK(ds_optim_init(&o, &s, n) == DS_EINPUT, "bad type refused");
  ds_clear_error();
  /* momentum state after two steps: v = mu g1 + g2 */
  s = base_spec(DS_OPT_MOMENTUM, 0.1);
  s.momentum = 0.5;
  ds_optim_init(&o, &s, 1);
  double th = 0, g1 = 1, g2 = 3;
  ds_optim_step(&o, &th, &g1, 0.1);
  ds_optim_step(&o, &th, &g2, 0.1);
  CHECK(o.state[0] == 3.5 && ds_close_rel(th, -0.1 - 0.35, 1e-15), "momentum v %g th %g", o.state[0], th);
  ds_optim_free(&o);
  /* empty vector */
  s = base_spec(DS_OPT_ADAM, 0.1);
  CHECK(ds_optim_init(&o, &s, 0) == DS_OK, "n = 0");
  ds_optim_step(&o, NULL, NULL, 0.1);
  CHECK(o.t == 1, "n = 0 step");
  ds_optim_free(&o);
}

static void test_schedules(void) {
  ds_optim_spec s = base_spec(DS_OPT_GD, 0.5);
  s.schedule = DS_SCHED_CONSTANT;
  CHECK(ds_schedule_lr(&s, 0, 1, 2) == 0.5 && ds_schedule_lr(&s, 123456789, 7, 6) == 0.5, "constant");

  /* seed 003: lrs [8,16,30,50,75,80] at steps [50,150,220,280,350,400], lr 4 before */
  static const int64_t steps[] = {50, 150, 220, 280, 350, 400};
  static const double lrs[] = {8, 16, 30, 50, 75, 80};
  s.schedule = DS_SCHED_PIECEWISE;
  s.lr = 4;
  s.nschedule = 6;
  for (int i = 0; i < 6; i++) {
    s.schedule_steps[i] = steps[i];
    s.schedule_lrs[i] = lrs[i];
  }
  CHECK(ds_schedule_lr(&s, 0, 1, 2) == 4, "piecewise t=0");
  for (int i = 0; i < 6; i++) {
    double before = i == 0 ? 4 : lrs[i - 1];
    CHECK(ds_schedule_lr(&s, steps[i] - 1, 1, 2) == before, "piecewise t=%lld",
          (long long)steps[i] - 1);
    CHECK(ds_schedule_lr(&s, steps[i], 1, 2) == lrs[i], "piecewise t=%lld", (long long)steps[i]);
    CHECK(ds_schedule_lr(&s, steps[i] + 1, 1, 2) == lrs[i], "piecewise t=%lld",
          (long long)steps[i] + 1);
  }
  CHECK(ds_schedule_lr(&s, 1000000, 1, 2) == 80, "piecewise tail");
  /* whole-range sweep against a direct definition */
  int bad = 0;
  for (int64_t t = 0; t < 500; t++) {
    double want = t < 50 ? 4 : t < 150 ? 8 : t < 220 ? 16 : t < 280 ? 30 : t < 350 ? 50 : t < 400 ? 75 : 80;
    if (ds_schedule_lr(&s, t, 1, 2) != want) bad++;
  }
  CHECK(bad == 0, "piecewise sweep: %d wrong", bad);
  s.nschedule = 0;
  CHECK(ds_schedule_lr(&s, 999, 1, 2) == 4, "piecewise empty");

  /* seed 004: eta_t = eta0 ||theta||^(2-L) */
  s.schedule = DS_SCHED_ADAPTIVE_NORM;
  s.lr = 10;
  CHECK(ds_close_rel(ds_schedule_lr(&s, 5, 2.0, 6), 10.0 / 16.0, 1e-15), "adaptive L=6: %g",
        ds_schedule_lr(&s, 5, 2.0, 6));
  CHECK(ds_close_rel(ds_schedule_lr(&s, 5, 0.1, 4), 10.0 / 0.01, 1e-14), "adaptive L=4");
  CHECK(ds_close_rel(ds_schedule_lr(&s, 5, 3.0, 3), 10.0 / 3.0, 1e-15), "adaptive L=3");
  CHECK(ds_schedule_lr(&s, 5, 3.0, 2) == 10, "adaptive L=2");
  CHECK(ds_close_rel(ds_schedule_lr(&s, 5, 3.0, 1), 30.0, 1e-15), "adaptive L=1");
  CHECK(ds_close_rel(ds_schedule_lr(&s, 5, sqrt(2.0), 6), 2.5, 1e-14), "adaptive sqrt2");
  CHECK(ds_schedule_lr(&s, 5, 0.0, 6) == 10 && ds_schedule_lr(&s, 5, 0.0, 2) == 10 &&
            ds_schedule_lr(&s, 5, 0.0, 1) == 10,
        "adaptive ||theta|| = 0 -> lr");
  CHECK(ds_schedule_lr(&s, 5, NAN, 6) == 10, "adaptive NaN -> lr");
  double tiny = ds_schedule_lr(&s, 5, 1e-3, 6); /* 10 * 1e12: large but finite */
  CHECK(isfinite(tiny) && ds_close_rel(tiny, 1e13, 1e-12), "adaptive small norm %g", tiny);
}

int main(void) {
  test_trajectories();
  test_hand_steps();
  test_layout();
  test_schedules();
  return ds_check_report("test_optimizers");
}
