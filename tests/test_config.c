/* test_config.c -- the sweep file: every field of a full example, grid
 * expansion (order, replicas, linear/log ranges), the meaning hash, cost
 * estimates, and one check per error class (code, file:line:col, words). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "dynsweep/config.h"
#include "dynsweep/data.h"
#include "dynsweep/util.h"

static const char *full_yaml =
    "# a full example: every option set\n"
    "name: full-test\n"
    "seed: 42\n"
    "model:\n"
    "  type: relu\n"
    "  bias: true\n"
    "  width: 32\n"
    "  depth: 3\n"
    "  init: gaussian\n"
    "  init_scale: 0.5\n"
    "data:\n"
    "  kind: teacher\n"
    "  n_train: 100\n"
    "  n_test: 50\n"
    "  d_in: 8\n"
    "  d_out: 6\n"
    "  rank: 3\n"
    "  noise: 0.1\n"
    "loss:\n"
    "  type: mse\n"
    "  reduction: half_sum\n"
    "optimizer:\n"
    "  type: gd\n"
    "  lr: 0.05\n"
    "train:\n"
    "  steps: 5000\n"
    "  tol: 1e-6\n"
    "  diverge_above: 1e8\n"
    "record:\n"
    "  series: [loss, layer_sv, grad_norm]\n"
    "  every: 25\n"
    "  per_decade: 5\n"
    "  top_k: 3\n"
    "grid:\n"
    "  width: [16, 32, 64]\n"
    "  lr: {start: 1e-3, stop: 1, num: 4, spacing: log}\n"
    "  model.type: [linear, relu]\n"
    "  replicas: 2\n";

/* The same meaning, reformatted: flow maps, comments, other key order. */
static const char *full_yaml_reformatted =
    "grid: {replicas: 2, width: [16,32,64],   # widths\n"
    "       lr: {num: 4, spacing: log, stop: 1.0, start: 0.001},\n"
    "       model.type: [linear, relu]}\n"
    "record: {top_k: 3, per_decade: 5, every: 25, series: [grad_norm, loss, layer_sv]}\n"
    "train: {diverge_above: 100000000, tol: 0.000001, steps: 5000}\n"
    "optimizer: {lr: 5e-2, type: gd}\n"
    "loss: {reduction: half_sum, type: mse}\n"
    "data: {noise: 0.10, rank: 3, d_out: 6, d_in: 8, n_test: 50, n_train: 100, kind: teacher}\n"
    "model: {init_scale: .5, init: gaussian, depth: 3, width: 32, bias: yes, type: relu}\n"
    "seed: 42\n"
    "name: 'full-test'\n";

static void test_full(void) {
  ds_sweep s;
  int rc = ds_sweep_parse("full.yaml", full_yaml, &s);
  CHECK(rc == DS_OK, "parse failed: %s", ds_errmsg());
  if (rc) return;
  CHECK(!strcmp(s.name, "full-test"), "name %s", s.name);
  CHECK(!strcmp(s.path, "full.yaml"), "path %s", s.path);
  CHECK(!strcmp(s.text, full_yaml), "text kept verbatim");
  CHECK(s.seed == 42, "seed");
  CHECK(s.replicas == 2, "replicas %d", s.replicas);
  const ds_point_cfg *b = &s.base;
  CHECK(b->model.type == DS_MODEL_RELU, "model.type");
  CHECK(b->model.bias == 1, "bias");
  CHECK(b->model.width == 32, "width");
  CHECK(b->model.depth == 3, "depth");
  CHECK(b->model.init == DS_INIT_GAUSSIAN, "init");
  CHECK(b->model.init_scale == 0.5, "init_scale");
  CHECK(b->data.kind == DS_DATA_TEACHER, "kind");
  CHECK(b->data.n_train == 100 && b->data.n_test == 50, "n_train/n_test");
  CHECK(b->data.d_in == 8 && b->data.d_out == 6 && b->data.rank == 3, "dims/rank");
  CHECK(b->data.noise == 0.1, "noise");
  CHECK(b->loss.type == DS_LOSS_MSE && b->loss.reduction == DS_RED_HALF_SUM, "loss");
  CHECK(b->optimizer.type == DS_OPT_GD && b->optimizer.lr == 0.05, "optimizer");
  CHECK(b->train.steps == 5000 && b->train.tol == 1e-6 && b->train.diverge_above == 1e8, "train");
  CHECK(b->record.series == (DS_REC_LOSS | DS_REC_LAYER_SV | DS_REC_GRAD_NORM), "series %u",
        b->record.series);
  CHECK(b->record.every == 25 && b->record.per_decade == 5 && b->record.top_k == 3, "record");
  CHECK(s.rank_auto == 0, "rank explicit");

  /* axes */
  CHECK(s.naxes == 3, "naxes %d", s.naxes);
  CHECK(!strcmp(s.axes[0].name, "width") && !strcmp(s.axes[0].path, "model.width"), "axis0");
  CHECK(s.axes[0].line == 35 && s.axes[0].col == 3, "axis0 at %d:%d", s.axes[0].line, s.axes[0].col);
  CHECK(!strcmp(s.axes[1].name, "lr") && !strcmp(s.axes[1].path, "optimizer.lr"), "axis1");
  CHECK(!strcmp(s.axes[2].name, "model.type") && !strcmp(s.axes[2].path, "model.type"), "axis2");
  CHECK(s.axes[2].nvals == 2 && s.axes[2].val[1] == DS_MODEL_RELU, "enum axis code");
  CHECK(!strcmp(s.axes[2].text[0], "linear") && !strcmp(s.axes[2].text[1], "relu"), "enum text");
  const double lr[4] = {1e-3, 1e-2, 1e-1, 1};
  CHECK(s.axes[1].nvals == 4, "lr nvals");
  for (int i = 0; i < 4 && i < s.axes[1].nvals; i++)
    CHECK(ds_close_rel(s.axes[1].val[i], lr[i], 1e-15), "logspace %d: %.17g", i, s.axes[1].val[i]);
  CHECK(!strcmp(s.axes[1].text[0], "0.001") && !strcmp(s.axes[1].text[3], "1"), "lr text %s %s",
        s.axes[1].text[0], s.axes[1].text[3]);

  /* expansion: combo * replicas + replica, last axis fastest */
  CHECK(ds_sweep_npoints(&s) == 3 * 4 * 2 * 2, "npoints %lld", (long long)ds_sweep_npoints(&s));
  ds_point p;
  CHECK(ds_sweep_point(&s, 0, &p) == DS_OK, "point 0");
  CHECK(p.id == 0 && p.combo == 0 && p.replica == 0, "ids");
  CHECK(p.cfg.model.width == 16 && p.cfg.optimizer.lr == 1e-3 && p.cfg.model.type == DS_MODEL_LINEAR,
        "point 0 values");
  CHECK(p.cfg.model.depth == 3 && p.cfg.data.rank == 3, "point 0 base values");
  CHECK(p.cost > 0, "cost");
  ds_sweep_point(&s, 1, &p);
  CHECK(p.combo == 0 && p.replica == 1 && p.cfg.model.type == DS_MODEL_LINEAR, "replica 1");
  ds_sweep_point(&s, 2, &p);
  CHECK(p.combo == 1 && p.replica == 0 && p.cfg.model.type == DS_MODEL_RELU &&
            p.cfg.optimizer.lr == 1e-3, "last axis fastest");
  ds_sweep_point(&s, 4, &p);
  CHECK(p.combo == 2 && p.cfg.model.type == DS_MODEL_LINEAR && ds_close_rel(p.cfg.optimizer.lr, 1e-2, 1e-15),
        "second axis next");
  ds_sweep_point(&s, 47, &p);
  CHECK(p.combo == 23 && p.replica == 1 && p.cfg.model.width == 64 && p.cfg.optimizer.lr == 1 &&
            p.cfg.model.type == DS_MODEL_RELU, "last point");
  ds_sweep_point(&s, 16, &p);
  CHECK(p.cfg.model.width == 32 && p.cfg.optimizer.lr == 1e-3, "width changes every 16 ids");
  CHECK(ds_sweep_point(&s, 48, &p) == DS_EINPUT, "id out of range");
  CHECK(ds_sweep_point(&s, -1, &p) == DS_EINPUT, "negative id");

  /* canonical text */
  char t[128];
  ds_sweep_point(&s, 3, &p);
  CHECK(ds_cfg_get_text(&p.cfg, "model.type", t, sizeof t) == DS_OK && !strcmp(t, "relu"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "optimizer.lr", t, sizeof t) == DS_OK && !strcmp(t, "0.001"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "lr", t, sizeof t) == DS_OK && !strcmp(t, "0.001"), "alias %s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "record.series", t, sizeof t) == DS_OK &&
            !strcmp(t, "loss,grad_norm,layer_sv"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "model.bias", t, sizeof t) == DS_OK && !strcmp(t, "true"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "loss.reduction", t, sizeof t) == DS_OK && !strcmp(t, "half_sum"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "train.steps", t, sizeof t) == DS_OK && !strcmp(t, "5000"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "model.nope", t, sizeof t) == DS_EINPUT, "unknown path");

  /* dims and cost of the base point */
  int dims[4];
  ds_point_dims(&s.base, dims);
  CHECK(dims[0] == 8 && dims[1] == 32 && dims[2] == 32 && dims[3] == 6, "dims");
  double w = 8 * 32 + 32 * 32 + 32 * 6;
  double recs = floor(5000.0 / 25) + 1 + 5 * log10(5000.0) + 1;
  double sv = 4.0 * (32 * 8 * 8) + 4.0 * (32 * 32 * 32) + 4.0 * (6 * 32 * 6);
  CHECK(ds_close_rel(ds_point_cost(&s.base), 5000.0 * 6 * 100 * w + recs * sv, 1e-12), "cost %g",
        ds_point_cost(&s.base));
  double per_rec = 2 * 16.0 + 3 * (8.0 + 8.0 * 3); /* loss, grad_norm; 3 layers of sv */
  CHECK(ds_close_rel(ds_point_store_bytes(&s.base), recs * per_rec, 1e-12), "store %g",
        ds_point_store_bytes(&s.base));

  /* hash: meaning, not formatting */
  ds_sweep r;
  rc = ds_sweep_parse("other.yaml", full_yaml_reformatted, &r);
  CHECK(rc == DS_OK, "reformatted parse: %s", ds_errmsg());
  if (rc == DS_OK) {
    CHECK(r.hash == s.hash, "hash changed by reformatting: %016llx vs %016llx",
          (unsigned long long)r.hash, (unsigned long long)s.hash);
    ds_sweep_free(&r);
  }
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", full_yaml);
  char *q = strstr(buf, "lr: 0.05");
  q[7] = '6';
  CHECK(ds_sweep_parse("full.yaml", buf, &r) == DS_OK && r.hash != s.hash, "value change -> hash");
  ds_sweep_free(&r);
  snprintf(buf, sizeof buf, "%s", full_yaml);
  q = strstr(buf, "[16, 32, 64]");
  q[9] = '5';
  CHECK(ds_sweep_parse("full.yaml", buf, &r) == DS_OK && r.hash != s.hash, "axis change -> hash");
  ds_sweep_free(&r);
  snprintf(buf, sizeof buf, "%s", full_yaml);
  q = strstr(buf, "seed: 42");
  q[7] = '3';
  CHECK(ds_sweep_parse("full.yaml", buf, &r) == DS_OK && r.hash != s.hash, "seed change -> hash");
  ds_sweep_free(&r);
  ds_sweep_free(&s);
  CHECK(s.axes == NULL && s.text == NULL, "free zeroes");
}

static void test_defaults_and_ranges(void) {
  ds_sweep s;
  const char *y = "name: d\nloss: {reduction: mean}\n";
  int rc = ds_sweep_parse("d.yaml", y, &s);
  CHECK(rc == DS_OK, "minimal: %s", ds_errmsg());
  if (rc) return;
  const ds_point_cfg *b = &s.base;
  CHECK(b->model.type == DS_MODEL_LINEAR && b->model.bias == 0 && b->model.width == 16 &&
            b->model.depth == 2 && b->model.init_scale == 1.0, "model defaults");
  CHECK(b->data.n_train == 256 && b->data.n_test == 256 && b->data.d_in == 16 && b->data.d_out == 4 &&
            b->data.rank == 4 && b->data.noise == 0, "data defaults");
  CHECK(b->loss.reduction == DS_RED_MEAN, "reduction");
  CHECK(b->optimizer.lr == 0.01 && b->train.steps == 1000 && b->train.tol == 0 &&
            b->train.diverge_above == 1e6, "optim/train defaults");
  CHECK(b->record.series == 63 && b->record.every == 10 && b->record.per_decade == 10 &&
            b->record.top_k == 5, "record defaults");
  CHECK(s.seed == 0 && s.replicas == 1 && s.naxes == 0 && ds_sweep_npoints(&s) == 1, "sweep defaults");
  ds_sweep_free(&s);

  /* rank omitted follows min(d_in, d_out) of every point */
  y = "name: r\nloss: {reduction: sum}\ndata: {d_in: 16, d_out: 4}\ngrid: {data.d_out: [2, 8, 32]}\n";
  rc = ds_sweep_parse("r.yaml", y, &s);
  CHECK(rc == DS_OK, "rank auto: %s", ds_errmsg());
  if (rc == DS_OK) {
    ds_point p;
    CHECK(s.rank_auto == 1, "rank_auto");
    ds_sweep_point(&s, 0, &p);
    CHECK(p.cfg.data.rank == 2, "rank %d", p.cfg.data.rank);
    ds_sweep_point(&s, 1, &p);
    CHECK(p.cfg.data.rank == 8, "rank %d", p.cfg.data.rank);
    ds_sweep_point(&s, 2, &p);
    CHECK(p.cfg.data.rank == 16, "rank %d", p.cfg.data.rank);
    ds_sweep_free(&s);
  }

  /* linear ranges (double and int), log range of an int option */
  y = "name: g\nloss: {reduction: half_mean}\ngrid:\n"
      "  data.noise: {start: 0, stop: 0.3, num: 4}\n"
      "  width: {start: 16, stop: 64, num: 4, spacing: linear}\n"
      "  depth: {start: 1, stop: 64, num: 7, spacing: log}\n"
      "  init_scale: {start: 2, stop: 2, num: 1}\n"
      "  model.bias: [false, true]\n";
  rc = ds_sweep_parse("g.yaml", y, &s);
  CHECK(rc == DS_OK, "ranges: %s", ds_errmsg());
  if (rc == DS_OK) {
    const double noise[4] = {0, 0.1, 0.2, 0.3}, width[4] = {16, 32, 48, 64};
    const double depth[7] = {1, 2, 4, 8, 16, 32, 64};
    for (int i = 0; i < 4; i++) {
      CHECK(fabs(s.axes[0].val[i] - noise[i]) <= 1e-15 * 0.3, "linspace %d %.17g", i, s.axes[0].val[i]);
      CHECK(s.axes[1].val[i] == width[i], "int linspace %d %g", i, s.axes[1].val[i]);
    }
    for (int i = 0; i < 7; i++) CHECK(s.axes[2].val[i] == depth[i], "int logspace %d %g", i, s.axes[2].val[i]);
    CHECK(!strcmp(s.axes[0].text[1], "0.1"), "text %s", s.axes[0].text[1]);
    CHECK(s.axes[3].nvals == 1 && s.axes[3].val[0] == 2, "num 1");
    CHECK(!strcmp(s.axes[4].text[1], "true") && s.axes[4].val[1] == 1, "bool axis");
    CHECK(ds_sweep_npoints(&s) == 4 * 4 * 7 * 1 * 2, "npoints");
    ds_sweep_free(&s);
  }
}

/* Parses text as "t.yaml" and expects DS_EINPUT, "t.yaml:LINE:COL: " and words. */
static void expect_err(const char *what, const char *text, int line, int col, const char *words) {
  ds_sweep s;
  ds_clear_error();
  int rc = ds_sweep_parse("t.yaml", text, &s);
  char pre[64];
  snprintf(pre, sizeof pre, "t.yaml:%d:%d: ", line, col);
  const char *m = ds_errmsg();
  CHECK(rc == DS_EINPUT, "%s: rc %d (%s)", what, rc, m);
  CHECK(!strncmp(m, pre, strlen(pre)), "%s: want prefix '%s', got '%s'", what, pre, m);
  CHECK(strstr(m, words) != NULL, "%s: want '%s' in '%s'", what, words, m);
  CHECK(strchr(m, '\n') == NULL, "%s: one line", what);
  CHECK(s.axes == NULL && s.text == NULL, "%s: nothing left allocated", what);
  if (rc == DS_OK) ds_sweep_free(&s);
}

#define HEAD "name: e\nloss: {reduction: mean}\n" /* lines 1-2 */

static void test_errors(void) {
  expect_err("unknown key + suggestion", HEAD "grid:\n  widht: [1, 2]\n", 4, 3,
             "unknown key 'widht' in grid (did you mean 'width'?)");
  expect_err("unknown dotted axis", HEAD "grid:\n  optimizer.lrr: [1]\n", 4, 3,
             "(did you mean 'optimizer.lr'?)");
  expect_err("unknown key, no suggestion", HEAD "model:\n  colour: blue\n", 4, 3,
             "unknown key 'colour' in model (valid keys: type, bias, width");
  expect_err("unknown top key", HEAD "optimiser:\n  lr: 1\n", 3, 1, "did you mean 'optimizer'?");
  expect_err("wrong type", HEAD "model:\n  depth: four\n", 4, 10,
             "model.depth: expected an integer, got 'four'");
  expect_err("wrong type double", HEAD "optimizer: {lr: fast}\n", 3, 17,
             "optimizer.lr: expected a number, got 'fast'");
  expect_err("wrong type in axis", HEAD "grid:\n  width: [16, 3.5]\n", 4, 15,
             "model.width: expected an integer, got '3.5'");
  expect_err("out of range", HEAD "optimizer:\n  lr: -0.1\n", 4, 7, "optimizer.lr: must be > 0, got -0.1");
  expect_err("out of range depth", HEAD "model:\n  depth: 65\n", 4, 10, "model.depth: must be in 1..64, got 65");
  expect_err("out of range in axis", HEAD "grid:\n  lr: [0.1, 0]\n", 4, 13, "optimizer.lr: must be > 0, got 0");
  expect_err("enum suggestion", HEAD "model:\n  type: relux\n", 4, 9,
             "model.type: expected one of linear, relu, e2e, tanh, cnn, got 'relux' (did you mean 'relu'?)");
  expect_err("empty axis", HEAD "grid:\n  width: []\n", 4, 10, "empty axis 'width'");
  expect_err("grid too large", HEAD "grid:\n  width: {start: 1, stop: 1000, num: 1000}\n"
                                    "  depth: {start: 1, stop: 64, num: 64}\n  replicas: 16\n",
             3, 1, "grid too large: 1024000 points (limit 1000000)");
  expect_err("store too large", HEAD "train: {steps: 1000000000}\nrecord: {every: 1}\n"
                                     "grid:\n  lr: {start: 0.001, stop: 1, num: 1000, spacing: log}\n",
             5, 1, "grid too large for the store: estimated");
  expect_err("missing reduction", "name: e\nloss:\n  type: mse\n", 2, 1,
             "loss.reduction is required");
  expect_err("missing reduction, formulas", "name: e\n", 1, 1, "half_mean (L = 1/(2n) * sum (f-y)^2)");
  expect_err("missing name", "loss: {reduction: sum}\n", 1, 1, "missing required key 'name'");
  expect_err("alias refused", HEAD "model: &m {width: 3}\ndata: *m\n", 3, 8, "aliases are not supported");
  expect_err("alias refused 2", HEAD "model: {width: 3}\ngrid: {width: [*x]}\n", 4, 16,
             "aliases are not supported");
  expect_err("duplicate key", HEAD "model:\n  width: 3\n  depth: 2\n  width: 4\n", 6, 3,
             "duplicate key 'width' (first given at line 4)");
  expect_err("duplicate axis", HEAD "grid:\n  width: [1]\n  model.width: [2]\n", 5, 3,
             "axis model.width is given twice");
  expect_err("syntax error", HEAD "model:\n  width: [1, 2\n  depth: 3\n", 5, 8, "YAML syntax error");
  expect_err("syntax error 2", HEAD "model:\n  width: 3\n    depth: 4\n", 5, 10, "YAML syntax error");
  expect_err("rank > min", HEAD "data:\n  d_in: 8\n  d_out: 2\n  rank: 3\n", 6, 9,
             "data.rank: must be <= min(data.d_in, data.d_out) = 2, got 3");
  expect_err("rank > min after axis", HEAD "data: {rank: 3}\ngrid:\n  data.d_out: [4, 2]\n", 5, 19,
             "grid.data.d_out: value 2 makes min(data.d_in, data.d_out) = 2 smaller than data.rank = 3");
  expect_err("rank axis > min", HEAD "data: {d_out: 3}\ngrid:\n  data.rank: [1, 4]\n", 5, 18,
             "data.rank: must be <= min(data.d_in, data.d_out) = 3, got 4");
  expect_err("nothing recorded", HEAD "record:\n  every: 0\n  per_decade: 0\n", 5, 15,
             "set at least one > 0");
  expect_err("log needs > 0", HEAD "grid:\n  data.noise: {start: 0, stop: 1, num: 3, spacing: log}\n",
             4, 23, "log spacing needs start > 0");
  expect_err("int linear non-integral", HEAD "grid:\n  width: {start: 1, stop: 10, num: 3}\n", 4, 10,
             "non-integer value 5.5");
  expect_err("log int duplicates", HEAD "grid:\n  width: {start: 1, stop: 4, num: 10, spacing: log}\n",
             4, 10, "rounds to the integer");
  expect_err("range key", HEAD "grid:\n  lr: {start: 1, stop: 2, nun: 3}\n", 4, 27, "did you mean 'num'?");
  expect_err("range on enum", HEAD "grid:\n  model.type: {start: 1, stop: 2, num: 2}\n", 4, 15,
             "needs a numeric option");
  expect_err("scalar axis", HEAD "grid:\n  width: 16\n", 4, 10, "expected a list of values");
  expect_err("series axis", HEAD "grid:\n  record.series: [loss]\n", 4, 3, "cannot be a grid axis");
  expect_err("series unknown", HEAD "record: {series: [loss, test_los]}\n", 3, 25,
             "unknown series 'test_los' (did you mean 'test_loss'?)");
  expect_err("duplicate axis value", HEAD "grid: {lr: [0.1, 0.10]}\n", 3, 18, "listed twice");
  expect_err("section not a map", HEAD "model: 3\n", 3, 8, "model: expected a map");
  expect_err("top not a map", "- a\n- b\n", 1, 1, "expected a map of sweep settings");
  expect_err("empty file", "# nothing\n", 1, 1, "empty sweep file");
  expect_err("bad name", "name: my sweep\nloss: {reduction: sum}\n", 1, 7, "name: use only letters");
  expect_err("bad seed", HEAD "seed: -1\n", 3, 7, "seed: expected an integer");
  expect_err("two documents", HEAD "---\nname: f\n", 3, 1, "only one YAML document");
  expect_err("steps too large", HEAD "train: {steps: 2e9}\n", 3, 16, "train.steps: must be in 1..1000000000");
  expect_err("control character", HEAD "model: {type: \"re\\nlu\"}\n", 3, 15, "control characters are not allowed");
  expect_err("block scalar", HEAD "name2: |\n  a\n  b\n", 3, 8, "control characters are not allowed");
  char deep[256] = HEAD "grid: {width: ";
  for (int i = 0; i < 40; i++) strcat(deep, "[");
  expect_err("nesting too deep", deep, 3, 45, "nesting too deep");

  /* missing file */
  ds_sweep s;
  int rc = ds_sweep_load("/nonexistent/sweep.yaml", &s);
  CHECK(rc == DS_EINPUT, "missing file rc %d", rc);
  CHECK(!strcmp(ds_errmsg(), "/nonexistent/sweep.yaml: cannot open: No such file or directory"), "%s",
        ds_errmsg());
}

static void test_load_demo(void) {
  /* the shipped demo must load (path relative to the source tree) */
  ds_sweep s;
  const char *path = DS_SRC_DIR "/sweeps/demo.yaml";
  int rc = ds_sweep_load(path, &s);
  CHECK(rc == DS_OK, "demo: %s", ds_errmsg());
  if (rc) return;
  CHECK(ds_sweep_npoints(&s) == 24, "demo points %lld", (long long)ds_sweep_npoints(&s));
  double total = 0;
  for (int64_t i = 0; i < ds_sweep_npoints(&s); i++) {
    ds_point p;
    ds_sweep_point(&s, i, &p);
    total += p.cost;
  }
  CHECK(total < 3e11, "demo estimated %g FLOP", total);
  ds_sweep_free(&s);
}

/* ======================= issue 3: new options ======================= */

static char tmpdir[256];

static void write_file(const char *name, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", tmpdir, name);
  FILE *f = fopen(p, "w");
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

/* A scratch directory with files the sweeps below name. */
static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_config_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    CHECK(0, "mkdtemp failed");
    return;
  }
  char sub[300];
  snprintf(sub, sizeof sub, "%s/sub", tmpdir);
  mkdir(sub, 0755);
  write_file("init.h5", "not really HDF5: only opened by the config room\n");
  /* libsvm: 10 samples, 3 features, classes 0/1/2 */
  write_file("train.svm", "0 1:0.5 2:1 3:0\n1 1:0.1 2:0.3\n2 1:1 3:2\n0 2:1\n1 1:0.2 3:0.1\n"
                          "2 1:0.3 2:0.2 3:0.1\n0 1:1\n1 2:1\n2 3:1\n0 1:0.1 2:0.1 3:0.1\n");
  write_file("bad.svm", "0 1:0.5 x:1\n");
  write_file("t.csv", "1,2,3,0.5\n4,5,6,0.25\n7,8,9,1\n1,1,1,0\n2,2,2,1\n");
}

static void rm_tmpdir(void) {
  const char *files[] = {"init.h5", "train.svm", "bad.svm", "t.csv", "sub/train.svm", "G.h5", NULL};
  char p[512];
  for (int i = 0; files[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", tmpdir, files[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s/sub", tmpdir);
  rmdir(p);
  rmdir(tmpdir);
}

static void test_issue3_defaults(void) {
  ds_sweep s;
  int rc = ds_sweep_parse("d.yaml", "name: d\nloss: {reduction: mean}\n", &s);
  CHECK(rc == DS_OK, "minimal: %s", ds_errmsg());
  if (rc) return;
  const ds_point_cfg *b = &s.base;
  CHECK(b->model.nwidths == 0 && b->model.param == DS_PARAM_STANDARD && b->model.train_output == 1 &&
            b->model.symmetric == 0 && b->model.approx == DS_APPROX_NONE && b->model.init_std == 0 &&
            b->model.balanced_identity == 0 && b->model.init_file[0] == 0, "model defaults");
  CHECK(b->data.target_scale == 1 && b->data.nspectrum == 0 && b->data.spectrum_decay == 1 &&
            b->data.teacher_width == 64 && b->data.sphere_scale == 1 && !b->data.path[0] &&
            !b->data.labels_path[0] && !b->data.test_path[0] && !b->data.test_labels_path[0] &&
            b->data.nclasses == 0 && b->data.labels == DS_LABELS_VALUE && !b->data.random_subset &&
            !b->data.standardize && b->data.pixel_scale == 1 && !b->data.whiten &&
            b->data.test_fraction == 0.2 && !b->data.libsvm_target_after_semicolon, "data defaults");
  CHECK(b->loss.type == DS_LOSS_MSE && b->loss.p == 2 && b->loss.optimum == 0, "loss defaults");
  const ds_optim_spec *o = &b->optimizer;
  CHECK(o->type == DS_OPT_GD && o->batch_size == 0 && o->momentum == 0.9 && o->beta1 == 0.9 &&
            o->beta2 == 0.999 && o->eps == 1e-8 && o->rho == 0.95 && o->alpha == 0.99 &&
            o->initial_accumulator == 0.1 && o->weight_decay == 0 &&
            o->schedule == DS_SCHED_CONSTANT && o->nschedule == 0, "optimizer defaults");
  CHECK(b->record.series == 63, "default series: the first six");
  char t[256];
  CHECK(ds_cfg_get_text(b, "model.widths", t, sizeof t) == DS_OK && !strcmp(t, "[]"), "%s", t);
  CHECK(ds_cfg_get_text(b, "data.path", t, sizeof t) == DS_OK && !strcmp(t, ""), "%s", t);
  ds_sweep_free(&s);
}

static const char *issue3_yaml =
    "name: issue3\n"
    "model:\n"
    "  type: linear\n"
    "  depth: 3\n"
    "  widths: [8, 6]\n"
    "  param: ntk\n"
    "  train_output: false\n"
    "  symmetric: false\n"
    "  approx: lin\n"
    "  init: near_identity\n"
    "  init_std: 0.01\n"
    "  balanced_identity: true\n"
    "  init_file: init.h5\n"
    "data:\n"
    "  kind: gaussian_spectrum\n"
    "  d_in: 4\n"
    "  d_out: 2\n"
    "  n_train: 64\n"
    "  n_test: 0\n"
    "  target_scale: 2\n"
    "  spectrum: [4, 2, 1.5]\n"
    "  spectrum_decay: 0.5\n"
    "  teacher_width: 32\n"
    "  sphere_scale: 3\n"
    "  path: ./train.svm\n"
    "  labels_path: sub/../train.svm\n"
    "  test_path: TMP/train.svm\n"
    "  test_labels_path: \"\"\n"
    "  classes: [3, 1]\n"
    "  labels: value\n"
    "  random_subset: true\n"
    "  standardize: true\n"
    "  pixel_scale: 0.5\n"
    "  whiten: true\n"
    "  test_fraction: 0.25\n"
    "  libsvm_target_after_semicolon: true\n"
    "loss:\n"
    "  type: lp\n"
    "  reduction: half_mean\n"
    "  p: 4\n"
    "  optimum: true\n"
    "optimizer:\n"
    "  type: adam\n"
    "  lr: 0.001\n"
    "  batch_size: 16\n"
    "  momentum: 0.8\n"
    "  beta1: 0.85\n"
    "  beta2: 0.99\n"
    "  eps: 1e-6\n"
    "  rho: 0.9\n"
    "  alpha: 0.95\n"
    "  initial_accumulator: 0.2\n"
    "  weight_decay: 0.001\n"
    "  schedule: piecewise\n"
    "  schedule_steps: [10, 20]\n"
    "  schedule_lrs: [0.01, 0.001]\n"
    "record:\n"
    "  series: [loss, loss_gap, lr]\n"
    "grid:\n"
    "  optimizer.batch_size: [8, 16]\n"
    "  optimizer.type: [sgd, adam]\n"
    "  loss.p: [2, 4]\n"
    "  model.param: [standard, ntk]\n";

/* issue3_yaml with TMP replaced by the scratch directory */
static void issue3_text(char *buf, size_t n, const char *src) {
  const char *q = strstr(src, "TMP");
  if (!q) {
    snprintf(buf, n, "%s", src);
    return;
  }
  snprintf(buf, n, "%.*s%s%s", (int)(q - src), src, tmpdir, q + 3);
}

static void test_issue3_options(void) {
  char text[8192], path[512], want[512], t[512];
  issue3_text(text, sizeof text, issue3_yaml);
  snprintf(path, sizeof path, "%s/s.yaml", tmpdir);
  ds_sweep s;
  int rc = ds_sweep_parse(path, text, &s);
  CHECK(rc == DS_OK, "issue3 parse: %s", ds_errmsg());
  if (rc) return;
  const ds_point_cfg *b = &s.base;
  CHECK(b->model.nwidths == 2 && b->model.widths[0] == 8 && b->model.widths[1] == 6, "widths");
  CHECK(b->model.param == DS_PARAM_NTK && b->model.train_output == 0 && b->model.symmetric == 0 &&
            b->model.approx == DS_APPROX_LIN && b->model.init == DS_INIT_NEAR_IDENTITY &&
            b->model.init_std == 0.01 && b->model.balanced_identity == 1, "model");
  snprintf(want, sizeof want, "%s/init.h5", tmpdir);
  CHECK(!strcmp(b->model.init_file, want), "init_file %s", b->model.init_file);
  snprintf(want, sizeof want, "%s/train.svm", tmpdir);
  CHECK(!strcmp(b->data.path, want), "./ resolved: %s", b->data.path);
  CHECK(!strcmp(b->data.test_path, want), "absolute kept: %s", b->data.test_path);
  snprintf(want, sizeof want, "%s/sub/../train.svm", tmpdir);
  CHECK(!strcmp(b->data.labels_path, want), ".. kept: %s", b->data.labels_path);
  CHECK(b->data.test_labels_path[0] == 0, "\"\" = unset");
  CHECK(b->data.kind == DS_DATA_GAUSSIAN_SPECTRUM && b->data.target_scale == 2 &&
            b->data.nspectrum == 3 && b->data.spectrum[2] == 1.5 && b->data.spectrum_decay == 0.5 &&
            b->data.teacher_width == 32 && b->data.sphere_scale == 3, "data synth");
  CHECK(b->data.nclasses == 2 && b->data.classes[0] == 3 && b->data.classes[1] == 1 &&
            b->data.labels == DS_LABELS_VALUE && b->data.random_subset && b->data.standardize &&
            b->data.pixel_scale == 0.5 && b->data.whiten && b->data.test_fraction == 0.25 &&
            b->data.libsvm_target_after_semicolon, "data preprocessing");
  CHECK(b->loss.type == DS_LOSS_LP && b->loss.p == 4 && b->loss.optimum == 1, "loss");
  const ds_optim_spec *o = &b->optimizer;
  CHECK(o->type == DS_OPT_ADAM && o->batch_size == 16 && o->momentum == 0.8 && o->beta1 == 0.85 &&
            o->beta2 == 0.99 && o->eps == 1e-6 && o->rho == 0.9 && o->alpha == 0.95 &&
            o->initial_accumulator == 0.2 && o->weight_decay == 0.001, "optimizer");
  CHECK(o->schedule == DS_SCHED_PIECEWISE && o->nschedule == 2 && o->schedule_steps[1] == 20 &&
            o->schedule_lrs[0] == 0.01, "schedule");
  CHECK(b->record.series == (DS_REC_LOSS | DS_REC_LOSS_GAP | DS_REC_LR), "series %u", b->record.series);

  /* axes of the new scalar options */
  CHECK(s.naxes == 4 && ds_sweep_npoints(&s) == 16, "axes %d", s.naxes);
  ds_point p;
  ds_sweep_point(&s, 15, &p);
  CHECK(p.cfg.optimizer.batch_size == 16 && p.cfg.optimizer.type == DS_OPT_ADAM && p.cfg.loss.p == 4 &&
            p.cfg.model.param == DS_PARAM_NTK, "last point");
  ds_sweep_point(&s, 0, &p);
  CHECK(p.cfg.optimizer.batch_size == 8 && p.cfg.optimizer.type == DS_OPT_SGD && p.cfg.loss.p == 2 &&
            p.cfg.model.param == DS_PARAM_STANDARD, "first point");
  CHECK(ds_cfg_get_text(&p.cfg, "optimizer.type", t, sizeof t) == DS_OK && !strcmp(t, "sgd"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "model.widths", t, sizeof t) == DS_OK && !strcmp(t, "[8,6]"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "data.spectrum", t, sizeof t) == DS_OK && !strcmp(t, "[4,2,1.5]"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "optimizer.schedule_steps", t, sizeof t) == DS_OK &&
            !strcmp(t, "[10,20]"), "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "record.series", t, sizeof t) == DS_OK && !strcmp(t, "loss,loss_gap,lr"),
        "%s", t);
  CHECK(ds_cfg_get_text(&p.cfg, "data.path", t, sizeof t) == DS_OK && !strcmp(t, b->data.path), "%s", t);

  /* dims from model.widths; cost and store follow batch size and series */
  int dims[4];
  ds_point_dims(b, dims);
  CHECK(dims[0] == 4 && dims[1] == 8 && dims[2] == 6 && dims[3] == 2, "dims %d %d %d %d", dims[0],
        dims[1], dims[2], dims[3]);
  ds_point_cfg c = p.cfg;
  c.model.approx = DS_APPROX_NONE;
  c.optimizer.type = DS_OPT_SGD;
  c.record.series = DS_REC_LR;
  double w = 4 * 8 + 8 * 6 + 6 * 2;
  /* a bias-free linear net steps through its end-to-end product when that is
   * cheaper (src/nn/mlp.c): the net over d_in = 4 columns of I, and F = P X,
   * M = G X^T over the batch (d_out = 2); a ReLU net keeps the layered cost */
  int bias = c.model.bias;
  c.model.bias = 0;
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * (6 * 4 * w + 4 * 8 * 4 * 2), 1e-12),
        "linear sgd cost (product step) %g", ds_point_cost(&c));
  int batch = c.optimizer.batch_size; /* 8 */
  c.optimizer.type = DS_OPT_GD;
  c.optimizer.batch_size = 0; /* full batch */
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * (6 * 4 * w + 4 * 64 * 4 * 2), 1e-12),
        "linear gd cost (product step, n = 64) %g", ds_point_cost(&c));
  c.model.bias = 1; /* biases: the layered step */
  CHECK(ds_point_cost(&c) >= 1000.0 * 6 * 64 * w, "linear + bias gd cost %g", ds_point_cost(&c));
  c.model.bias = bias;
  c.model.type = DS_MODEL_RELU;
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * 6 * 64 * w, 1e-12), "gd cost (n = 64) %g",
        ds_point_cost(&c));
  c.optimizer.batch_size = batch;
  c.optimizer.type = DS_OPT_SGD;
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * 6 * 8 * w, 1e-12), "sgd cost %g", ds_point_cost(&c));
  /* gd with a batch_size minibatches, as the worker does (point.c: any update rule) */
  c.optimizer.type = DS_OPT_GD;
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * 6 * 8 * w, 1e-12), "gd with batch_size 8 %g",
        ds_point_cost(&c));
  c.optimizer.type = DS_OPT_ADAM;
  CHECK(ds_close_rel(ds_point_cost(&c), 1000.0 * (6 * 8 * w + 8 * w), 1e-12), "adam cost %g",
        ds_point_cost(&c));
  double recs = floor(1000.0 / 10) + 1 + 10 * 3 + 1;
  CHECK(ds_close_rel(ds_point_store_bytes(&c), recs * 16, 1e-12), "lr store %g", ds_point_store_bytes(&c));
  c.record.series = DS_REC_LR | DS_REC_LOSS_GAP;
  CHECK(ds_close_rel(ds_point_store_bytes(&c), recs * 32, 1e-12), "loss_gap store");
  c.model.type = DS_MODEL_E2E;
  CHECK(ds_point_cost(&c) > 1000.0 * 6 * 8 * 4 * 2, "e2e cost");

  /* hash: list and path options count; formatting does not */
  ds_sweep r;
  char text2[8192];
  snprintf(text2, sizeof text2, "%s", text);
  char *q = strstr(text2, "widths: [8, 6]");
  memcpy(q, "widths: [8,6] ", 14);
  q = strstr(text2, "./train.svm");
  memcpy(q, "'train.svm'", 11);
  rc = ds_sweep_parse(path, text2, &r);
  CHECK(rc == DS_OK && r.hash == s.hash, "reformatted list/path keeps the hash: %s", ds_errmsg());
  ds_sweep_free(&r);
  snprintf(text2, sizeof text2, "%s", text);
  q = strstr(text2, "widths: [8, 6]");
  q[12] = '7';
  rc = ds_sweep_parse(path, text2, &r);
  CHECK(rc == DS_OK && r.hash != s.hash, "list element -> hash: %s", ds_errmsg());
  ds_sweep_free(&r);
  snprintf(text2, sizeof text2, "%s", text);
  q = strstr(text2, "beta2: 0.99");
  q[10] = '8';
  rc = ds_sweep_parse(path, text2, &r);
  CHECK(rc == DS_OK && r.hash != s.hash, "beta2 -> hash: %s", ds_errmsg());
  ds_sweep_free(&r);
  snprintf(text2, sizeof text2, "%s", text);
  q = strstr(text2, "labels_path: sub/../train.svm");
  memcpy(q, "labels_path: sub//./train.svm", 29); /* a different file name */
  write_file("sub/train.svm", "0 1:1\n");
  rc = ds_sweep_parse(path, text2, &r);
  CHECK(rc == DS_OK && r.hash != s.hash, "path -> hash: %s", ds_errmsg());
  ds_sweep_free(&r);
  ds_sweep_free(&s);

  /* relative sweep path: names resolve against cwd + the sweep's directory */
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) && chdir(tmpdir) == 0) {
    char here[PATH_MAX];
    if (!getcwd(here, sizeof here)) here[0] = 0;
    const char *y = "name: rel\nloss: {reduction: mean}\nmodel: {init_file: ../init.h5}\n";
    rc = ds_sweep_parse("sub/s.yaml", y, &r);
    CHECK(rc == DS_OK, "relative sweep path: %s", ds_errmsg());
    snprintf(want, sizeof want, "%s/sub/../init.h5", here);
    if (rc == DS_OK) CHECK(!strcmp(r.base.model.init_file, want), "%s vs %s", r.base.model.init_file, want);
    ds_sweep_free(&r);
    rc = ds_sweep_parse("s.yaml", "name: rel\nloss: {reduction: mean}\nmodel: {init_file: init.h5}\n", &r);
    snprintf(want, sizeof want, "%s/init.h5", here);
    CHECK(rc == DS_OK && !strcmp(r.base.model.init_file, want), "bare sweep name: %s",
          rc ? ds_errmsg() : r.base.model.init_file);
    ds_sweep_free(&r);
    CHECK(chdir(cwd) == 0, "chdir back");
  }

  /* fixed-shape kinds set d_in/d_out; circle has 8 points */
  rc = ds_sweep_parse("c.yaml", "name: c\nloss: {reduction: mean}\ndata: {kind: circle}\n"
                      "grid: {depth: [2, 3]}\n", &r);
  CHECK(rc == DS_OK, "circle: %s", ds_errmsg());
  if (rc == DS_OK) {
    ds_sweep_point(&r, 1, &p);
    CHECK(p.cfg.data.d_in == 2 && p.cfg.data.d_out == 1 && p.cfg.data.n_train == 8 &&
              p.cfg.data.rank == 1 && p.cfg.model.depth == 3, "circle point %d %d %d",
          p.cfg.data.d_in, p.cfg.data.d_out, p.cfg.data.n_train);
    CHECK(r.base.data.d_in == 2 && r.base.data.n_train == 8, "circle base");
    ds_sweep_free(&r);
  }
  rc = ds_sweep_parse("c.yaml", "name: c\nloss: {reduction: mean}\ndata: {kind: rank3, d_in: 100}\n", &r);
  CHECK(rc == DS_OK && r.base.data.d_in == 100 && r.base.data.d_out == 1, "rank3: %s", ds_errmsg());
  ds_sweep_free(&r);
  /* e2e, balanced and symmetric that are fine */
  rc = ds_sweep_parse("e.yaml", "name: e\nloss: {reduction: half_mean, optimum: true}\n"
                      "model: {type: e2e, depth: 4, init: balanced, width: 4}\n"
                      "record: {series: [loss, loss_gap]}\n", &r);
  CHECK(rc == DS_OK, "e2e: %s", ds_errmsg());
  ds_sweep_free(&r);
  rc = ds_sweep_parse("e.yaml", "name: e\nloss: {reduction: half_sum}\n"
                      "model: {type: relu, depth: 2, width: 6, symmetric: true, train_output: false}\n", &r);
  CHECK(rc == DS_OK, "symmetric: %s", ds_errmsg());
  ds_sweep_free(&r);
}

/* File data: ds_data_probe fills d_in/d_out and bounds n_train. */
static void test_issue3_files(void) {
  char path[512], y[1024];
  snprintf(path, sizeof path, "%s/f.yaml", tmpdir);
  ds_sweep s;
  int rc = ds_sweep_parse(path, "name: f\nloss: {reduction: mean}\n"
                          "data: {kind: libsvm, path: train.svm, n_train: 5, n_test: 2}\n", &s);
  CHECK(rc == DS_OK, "libsvm: %s", ds_errmsg());
  if (rc == DS_OK) {
    int din = 0, dout = 0, avail = 0;
    CHECK(ds_data_probe(&s.base.data, &din, &dout, &avail) == DS_OK, "probe: %s", ds_errmsg());
    CHECK(s.base.data.d_in == din && s.base.data.d_out == dout && din == 3 && dout == 1,
          "dims from the file: %d %d (probe %d %d)", s.base.data.d_in, s.base.data.d_out, din, dout);
    CHECK(s.base.data.rank == 1, "rank auto %d", s.base.data.rank);
    ds_point p;
    ds_sweep_point(&s, 0, &p);
    CHECK(p.cfg.data.d_in == din, "point dims");
    ds_sweep_free(&s);
  }
  /* one_hot: d_out = number of classes (3), and with a class subset 2 */
  rc = ds_sweep_parse(path, "name: f\nloss: {reduction: mean, type: cross_entropy}\n"
                      "data: {kind: libsvm, path: train.svm, n_train: 5, n_test: 2, labels: one_hot}\n", &s);
  CHECK(rc == DS_OK && s.base.data.d_out == 3, "one_hot: %s", rc ? ds_errmsg() : "");
  if (rc == DS_OK) ds_sweep_free(&s);
  rc = ds_sweep_parse(path, "name: f\nloss: {reduction: mean}\n"
                      "data: {kind: libsvm, path: train.svm, n_train: 4, n_test: 1, labels: pm1,"
                      " classes: [0, 2]}\n", &s);
  CHECK(rc == DS_OK && s.base.data.d_out == 1, "pm1: %s", rc ? ds_errmsg() : "");
  if (rc == DS_OK) ds_sweep_free(&s);
  /* CSV: the last column is the target unless d_out says more */
  rc = ds_sweep_parse(path, "name: f\nloss: {reduction: mean}\n"
                      "data: {kind: csv, path: t.csv, n_train: 3, n_test: 1}\n", &s);
  CHECK(rc == DS_OK && s.base.data.d_in == 3 && s.base.data.d_out == 1, "csv: %s", rc ? ds_errmsg() : "");
  if (rc == DS_OK) ds_sweep_free(&s);
  /* no file checks for re-reading a stored sweep */
  rc = ds_sweep_parse_flags(path, "name: f\nloss: {reduction: mean}\n"
                            "data: {kind: idx, path: gone.idx, labels_path: gone-labels.idx}\n",
                            DS_SWEEP_NO_FILES, &s);
  CHECK(rc == DS_OK, "NO_FILES: %s", ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);

  /* errors that need the scratch files */
  struct {
    const char *what, *yaml;
    int line, col;
    const char *words;
  } e[] = {
      {"n_train > available", "data: {kind: libsvm, path: train.svm, n_train: 100}\n", 3, 48,
       "data.n_train: 100 training samples requested but 'train.svm' has only "},
      {"n_train axis > available", "data: {kind: libsvm, path: train.svm}\ngrid: {data.n_train: [2, 50]}\n",
       4, 26, "(at grid.data.n_train = 50)"},
      {"probe failure", "data: {kind: libsvm, path: bad.svm}\n", 3, 28, "data.path: "},
      {"d_in given for file data", "data: {kind: libsvm, path: train.svm, n_train: 5, d_in: 7}\n", 3, 57,
       "data.d_in: the data file 'train.svm' gives d_in = 3, got 7; omit data.d_in for file data"},
      {"pm1 without two classes", "data: {kind: libsvm, path: train.svm, n_train: 5, labels: pm1}\n", 3, 59,
       "data.labels: pm1 needs exactly two classes in data.classes (e.g. [0, 1]), got 0"},
      {"idx without labels_path", "data: {kind: idx, path: train.svm}\n", 3, 14,
       "data.kind: idx needs data.labels_path (the IDX labels file)"},
  };
  for (size_t i = 0; i < sizeof e / sizeof e[0] + 2; i++) {
    const char *what, *words;
    int line, col;
    if (i < sizeof e / sizeof e[0]) {
      snprintf(y, sizeof y, "name: e\nloss: {reduction: mean}\n%s", e[i].yaml);
      what = e[i].what, words = e[i].words, line = e[i].line, col = e[i].col;
    } else if (i == sizeof e / sizeof e[0]) {
      snprintf(y, sizeof y, "name: e\nloss: {reduction: mean, type: cross_entropy, optimum: true}\n"
                            "data: {kind: libsvm, path: train.svm, n_train: 5, labels: one_hot}\n");
      what = "cross_entropy + optimum", line = 2, col = 55;
      words = "loss.optimum: not available with loss.type cross_entropy (L* is computed for mse and lp only)";
    } else {
      snprintf(y, sizeof y, "name: e\nloss: {reduction: half_mean, type: cross_entropy}\n"
                            "data: {kind: libsvm, path: train.svm, n_train: 5, labels: one_hot}\n");
      what = "cross_entropy half_mean", line = 2, col = 19;
      words = "loss.reduction: cross_entropy takes sum or mean, got half_mean";
    }
    ds_clear_error();
    rc = ds_sweep_parse(path, y, &s);
    char pre[600];
    snprintf(pre, sizeof pre, "%s:%d:%d: ", path, line, col);
    const char *m = ds_errmsg();
    CHECK(rc == DS_EINPUT, "%s: rc %d (%s)", what, rc, m);
    CHECK(!strncmp(m, pre, strlen(pre)), "%s: want prefix '%s', got '%s'", what, pre, m);
    CHECK(strstr(m, words) != NULL, "%s: want '%s' in '%s'", what, words, m);
    if (rc == DS_OK) ds_sweep_free(&s);
  }
}

static void test_issue3_errors(void) {
  /* lists */
  expect_err("list element range", HEAD "model: {depth: 3, widths: [8, 0]}\n", 3, 31,
             "model.widths: must be >= 1, got 0");
  expect_err("list element type", HEAD "model:\n  depth: 3\n  widths:\n    - 8\n    - eight\n", 7, 7,
             "model.widths: expected an integer, got 'eight'");
  expect_err("list element not scalar", HEAD "data: {spectrum: [1, [2]]}\n", 3, 22,
             "data.spectrum: expected a number, got a list");
  expect_err("list given a scalar", HEAD "model: {widths: 8}\n", 3, 17,
             "model.widths: expected a list such as [1, 2], got '8'");
  char big[1024] = HEAD "data: {classes: [";
  for (int i = 0; i < 65; i++) snprintf(big + strlen(big), sizeof big - strlen(big), "%s%d", i ? "," : "", i);
  strcat(big, "]}\n");
  expect_err("list too long words", big, 3, (int)(strstr(big, ",64]") - strstr(big, "data:")) + 2,
             "data.classes: too many values (65, limit 64)");
  expect_err("steps not increasing", HEAD "optimizer: {schedule: piecewise, schedule_steps: [10, 10],"
                                          " schedule_lrs: [1, 2]}\n", 3, 55,
             "optimizer.schedule_steps: steps must be strictly increasing, got 10 after 10");
  expect_err("steps >= 1", HEAD "optimizer: {schedule_steps: [0]}\n", 3, 30,
             "optimizer.schedule_steps: must be in 1..1000000000, got 0");
  expect_err("schedule lengths", HEAD "optimizer:\n  schedule: piecewise\n  schedule_steps: [10, 20]\n"
                                      "  schedule_lrs: [0.1]\n", 6, 17,
             "optimizer.schedule_lrs: has 1 values but optimizer.schedule_steps has 2; give one learning "
             "rate per step");
  expect_err("piecewise needs lists", HEAD "optimizer: {schedule: piecewise}\n", 3, 23,
             "optimizer.schedule: piecewise needs optimizer.schedule_steps and optimizer.schedule_lrs");
  expect_err("class twice", HEAD "data: {classes: [1, 2, 1]}\n", 3, 24,
             "data.classes: class 1 is listed twice; list each class once");
  expect_err("list axis", HEAD "grid:\n  model.widths: [8, 16]\n", 4, 3,
             "model.widths cannot be a grid axis: only single-valued options can be swept (lists are "
             "not); set it under model: instead");
  expect_err("path axis", HEAD "grid:\n  data.path: [a.csv, b.csv]\n", 4, 3,
             "data.path cannot be a grid axis: only single-valued options can be swept (file names are "
             "not); set it under data: instead");
  /* strings */
  expect_err("path not a string", HEAD "data: {path: [a, b]}\n", 3, 14, "data.path: expected a file name, got a list");
  expect_err("missing init file", HEAD "model:\n  init: file\n  init_file: x.h5\n", 5, 14,
             "model.init_file: cannot open 'x.h5': No such file or directory (relative names are "
             "resolved against the sweep file's directory: looked for '");
  expect_err("missing absolute file", HEAD "data: {path: /nonexistent/a.csv}\n", 3, 14,
             "data.path: cannot open '/nonexistent/a.csv': No such file or directory");
  char longp[400] = HEAD "data: {path: ";
  for (int i = 0; i < 300; i++) strcat(longp, "a");
  strcat(longp, "}\n");
  expect_err("path too long", longp, 3, 14, "data.path: file name too long (300 characters, limit 255)");
  /* ranges of new scalars */
  expect_err("p < 2", "name: e\nloss: {reduction: mean, type: lp, p: 1.5}\n", 2, 38,
             "loss.p: must be >= 2, got 1.5");
  expect_err("test_fraction 1", HEAD "data: {test_fraction: 1}\n", 3, 23,
             "data.test_fraction: must be >= 0 and < 1, got 1");
  expect_err("momentum 1", HEAD "optimizer: {momentum: 1.0}\n", 3, 23,
             "optimizer.momentum: must be >= 0 and < 1, got 1");
  expect_err("eps 0", HEAD "optimizer: {eps: 0}\n", 3, 18, "optimizer.eps: must be > 0, got 0");
  expect_err("new enum", HEAD "optimizer: {type: adamw}\n", 3, 19,
             "optimizer.type: expected one of gd, sgd, momentum, nesterov, adagrad, adadelta, rmsprop, adam, "
             "got 'adamw' (did you mean 'adam'?)");
  expect_err("new series", HEAD "record: {series: [loss, loss_gapp]}\n", 3, 25,
             "unknown series 'loss_gapp' (did you mean 'loss_gap'?)");
  /* cross-field */
  expect_err("widths vs depth", HEAD "model: {depth: 3, widths: [8]}\n", 3, 27,
             "model.widths: has 1 entries but model.depth = 3 needs depth-1 = 2 hidden widths");
  expect_err("widths vs depth axis", HEAD "model: {widths: [8]}\ngrid: {depth: [2, 3]}\n", 4, 19,
             "model.widths: has 1 entries but model.depth = 3 needs depth-1 = 2 hidden widths (at "
             "grid.depth = 3)");
  expect_err("balanced too narrow", HEAD "model: {init: balanced, width: 2, depth: 3}\ndata: {d_in: 8, d_out: 4}\n",
             3, 15, "model.init: balanced needs every hidden width >= min(data.d_in, data.d_out) = 4, but the "
                    "smallest is 2");
  expect_err("balanced width axis", HEAD "model: {init: balanced, depth: 3}\ngrid: {width: [16, 3]}\n", 4, 20,
             "(at grid.width = 3)");
  expect_err("symmetric depth", HEAD "model: {symmetric: true, depth: 3}\n", 3, 20,
             "model.symmetric: needs model.depth = 2, got 3");
  expect_err("symmetric odd", HEAD "model: {symmetric: true, width: 7}\n", 3, 20,
             "model.symmetric: needs an even hidden width (units come in +/- pairs), got 7");
  expect_err("init file unset", HEAD "model: {init: file}\n", 3, 15,
             "model.init: file needs model.init_file (an HDF5 file with W1..W2)");
  expect_err("file kind without path", HEAD "data: {kind: csv}\n", 3, 14,
             "data.kind: csv needs data.path (the data file)");
  expect_err("cross_entropy labels 2", "name: e\nloss: {reduction: mean, type: cross_entropy}\n", 2, 31,
             "loss.type: cross_entropy needs data.labels: one_hot, got value");
  expect_err("labels on synthetic data", HEAD "data: {labels: one_hot}\n", 3, 16,
             "data.labels: one_hot needs class labels from a file data set (data.kind idx, libsvm, csv, "
             "hdf5, cifar10, cifar100 or svhn), got data.kind teacher");
  expect_err("optimum relu", "name: e\nloss: {reduction: mean, optimum: true}\nmodel: {type: relu}\n", 2, 34,
             "loss.optimum: needs a linear model (model.type linear or e2e), got relu");
  expect_err("optimum relu axis", "name: e\nloss: {reduction: mean, optimum: true}\n"
                                  "grid: {model.type: [linear, relu]}\n", 3, 29,
             "loss.optimum: needs a linear model (model.type linear or e2e), got relu (at grid.model.type = relu)");
  expect_err("loss_gap without optimum", HEAD "record: {series: [loss, loss_gap]}\n", 3, 18,
             "record.series: loss_gap needs loss.optimum: true");
  expect_err("e2e bias", HEAD "model: {type: e2e, bias: true}\n", 3, 15,
             "model.type: e2e has no biases; set model.bias: false");
  expect_err("e2e approx", HEAD "model: {type: e2e, approx: quad}\n", 3, 28,
             "model.approx: quad needs model.type linear or relu, got e2e");
  expect_err("sgd batch 0", HEAD "optimizer: {type: sgd}\n", 3, 19,
             "optimizer.type: sgd needs optimizer.batch_size >= 1 (0 means full batch: use gd)");
  expect_err("batch > n_train", HEAD "optimizer: {type: sgd, batch_size: 300}\n", 3, 36,
             "optimizer.batch_size: must be <= data.n_train = 256, got 300");
  expect_err("batch axis > n_train", HEAD "data: {n_train: 100}\noptimizer: {type: sgd}\n"
                                          "grid: {optimizer.batch_size: [10, 200]}\n", 5, 35,
             "optimizer.batch_size: must be <= data.n_train = 100, got 200 (at grid.optimizer.batch_size = 200)");
  expect_err("batch vs n_train axis", HEAD "optimizer: {type: sgd, batch_size: 50}\n"
                                           "grid: {data.n_train: [100, 20]}\n", 4, 28,
             "(at grid.data.n_train = 20)");
  expect_err("circle d_in", HEAD "data: {kind: circle, d_in: 3}\n", 3, 28,
             "data.d_in: data.kind circle has d_in = 2, got 3; omit data.d_in (the kind sets it)");
  expect_err("rank3 d_in", HEAD "data: {kind: rank3, d_in: 4}\n", 3, 27,
             "data.d_in: data.kind rank3 needs d_in >= 10, got 4");
  expect_err("image_rank2 d_in", HEAD "data: {kind: image_rank2, d_in: 50}\n", 3, 33,
             "data.d_in: data.kind image_rank2 is a 1 x s x s image, so d_in must be a square (49, "
             "64, ...), got 50");
  expect_err("rank2 d_out axis", HEAD "data: {kind: rank2}\ngrid: {data.d_out: [1, 2]}\n", 4, 24,
             "data.d_out: data.kind rank2 has d_out = 1, got 2; omit data.d_out (the kind sets it) (at "
             "grid.data.d_out = 2)");
  expect_err("whitened n < d", HEAD "data: {kind: whitened, n_train: 8, d_in: 16}\n", 3, 33,
             "data.n_train: whitened data needs n_train >= data.d_in = 16 ((1/n) X X^T = I), got 8");
  expect_err("whiten n < d", HEAD "data: {whiten: true, n_train: 8}\n", 3, 16,
             "data.whiten: needs n_train >= data.d_in = 16 to whiten the inputs, got n_train = 8");
  expect_err("spectrum too long", HEAD "data: {kind: gaussian_spectrum, d_in: 2, spectrum: [3, 2, 1]}\n", 3, 52,
             "data.spectrum: has 3 eigenvalues but data.d_in = 2; give at most d_in");
}

/* ======================= issue 4: record.spectra ======================= */

static const char *spectra_yaml =
    "name: spectra\n"
    "model: {type: linear, width: 8, depth: 3}\n"
    "data: {kind: rank2, d_in: 6, n_train: 32, n_test: 8}\n"
    "loss: {reduction: half_mean}\n"
    "train: {steps: 1000}\n"
    "record:\n"
    "  series: [loss]\n"
    "  every: 10\n"
    "  per_decade: 10\n"
    "  top_k: 5\n"
    "  spectra:\n"
    "    layers: {every: 10, per_decade: 5}\n"
    "    e2e: {every: 50}\n"
    "    hessian: {every: 100, on_loss_rise: true}\n"
    "    hessian_full: {every: 1000}\n"
    "    ntk:\n"
    "      every: 20\n"
    "      per_decade: 5\n"
    "      on_loss_rise: yes\n"
    "    agop: {every: 100}\n"
    "    escape: {every: 10}\n"
    "    top_k: 4\n"
    "    lanczos_iters: 30\n"
    "    hessian_full_max: 500\n"
    "    ntk_max: 64\n"
    "    split: [1, 2, 8]\n"
    "    agop_reference: sub/../G.h5\n"
    "    catapult_factor: 3\n";

/* The same meaning: flow style, other key order, explicit defaults. */
static const char *spectra_yaml_reformatted =
    "record: {top_k: 5, per_decade: 10, every: 10, series: [loss], spectra: {\n"
    "  catapult_factor: 3.0, agop_reference: G.h5, split: [1,2,8], ntk_max: 64,\n"
    "  hessian_full_max: 500, lanczos_iters: 30, top_k: 4, escape: {every: 10},\n"
    "  agop: {every: 100, on_loss_rise: false}, ntk: {on_loss_rise: true, per_decade: 5, every: 20},\n"
    "  hessian_full: {every: 1e3}, hessian: {on_loss_rise: on, every: 100},\n"
    "  e2e: {every: 50, per_decade: 0}, layers: {per_decade: 5, every: 10}, activations: {every: 0}}}\n"
    "train: {steps: 1000}\n"
    "loss: {reduction: half_mean}\n"
    "data: {n_test: 8, n_train: 32, d_in: 6, kind: rank2}\n"
    "model: {depth: 3, width: 8, type: linear}\n"
    "name: spectra\n";

static void test_spectra_defaults(void) {
  ds_sweep s;
  int rc = ds_sweep_parse("d.yaml", "name: d\nloss: {reduction: mean}\n", &s);
  CHECK(rc == DS_OK, "minimal: %s", ds_errmsg());
  if (rc) return;
  const ds_spectra_spec *sp = &s.base.record.spectra;
  const ds_cadence *cads[] = {&sp->layers, &sp->e2e, &sp->hessian, &sp->hessian_full,
                              &sp->ntk, &sp->agop, &sp->activations, &sp->escape};
  for (int i = 0; i < 8; i++)
    CHECK(cads[i]->every == 0 && cads[i]->per_decade == 0 && cads[i]->on_loss_rise == 0,
          "cadence %d off by default", i);
  CHECK(sp->top_k == 5 && sp->lanczos_iters == 40 && sp->hessian_full_max == 4000 &&
            sp->ntk_max == 4096 && sp->agop_reference[0] == 0 && sp->catapult_factor == 2,
        "spectra defaults");
  CHECK(sp->nsplit == 3 && sp->split[0] == 1 && sp->split[1] == 5 && sp->split[2] == 10, "split default");
  char t[256];
  CHECK(ds_cfg_get_text(&s.base, "record.spectra.split", t, sizeof t) == DS_OK && !strcmp(t, "[1,5,10]"),
        "%s", t);
  CHECK(ds_cfg_get_text(&s.base, "record.spectra.ntk.on_loss_rise", t, sizeof t) == DS_OK &&
            !strcmp(t, "false"), "%s", t);
  /* no diagnostics: nothing added to the cost or the store */
  double c0 = ds_point_cost(&s.base), b0 = ds_point_store_bytes(&s.base);
  ds_point_cfg c = s.base;
  c.record.spectra.top_k = 50;
  CHECK(ds_point_cost(&c) == c0 && ds_point_store_bytes(&c) == b0, "parameters alone cost nothing");
  ds_sweep_free(&s);
  /* sweeps without record.spectra keep the hash they had before issue 4 */
  rc = ds_sweep_load(DS_SRC_DIR "/sweeps/demo.yaml", &s);
  CHECK(rc == DS_OK && s.hash == 0xc645937e48eb0d89ULL, "demo hash %016llx (pre-issue-4 c645937e48eb0d89)",
        rc == DS_OK ? (unsigned long long)s.hash : 0ULL);
  if (rc == DS_OK) ds_sweep_free(&s);
}

static void test_spectra_options(void) {
  char path[512], buf[4096];
  snprintf(path, sizeof path, "%s/spectra.yaml", tmpdir);
  ds_sweep s, r;
  int rc = ds_sweep_parse(path, spectra_yaml, &s);
  CHECK(rc == DS_OK, "spectra: %s", ds_errmsg());
  if (rc) return;
  const ds_spectra_spec *sp = &s.base.record.spectra;
  CHECK(sp->layers.every == 10 && sp->layers.per_decade == 5 && !sp->layers.on_loss_rise, "layers");
  CHECK(sp->e2e.every == 50 && !sp->e2e.per_decade && !sp->e2e.on_loss_rise, "e2e");
  CHECK(sp->hessian.every == 100 && sp->hessian.on_loss_rise == 1, "hessian");
  CHECK(sp->hessian_full.every == 1000, "hessian_full");
  CHECK(sp->ntk.every == 20 && sp->ntk.per_decade == 5 && sp->ntk.on_loss_rise == 1, "ntk");
  CHECK(sp->agop.every == 100 && sp->escape.every == 10, "agop, escape");
  CHECK(sp->activations.every == 0 && !sp->activations.per_decade && !sp->activations.on_loss_rise,
        "activations off");
  CHECK(sp->top_k == 4 && sp->lanczos_iters == 30 && sp->hessian_full_max == 500 && sp->ntk_max == 64 &&
            sp->catapult_factor == 3, "parameters");
  CHECK(sp->nsplit == 3 && sp->split[0] == 1 && sp->split[1] == 2 && sp->split[2] == 8, "split");
  char want[600];
  snprintf(want, sizeof want, "%s/sub/../G.h5", tmpdir);
  CHECK(!strcmp(sp->agop_reference, want), "agop_reference resolved: %s", sp->agop_reference);
  CHECK(s.base.record.top_k == 5 && s.base.record.every == 10, "record.top_k / every untouched");

  /* hash: reformatting and explicit defaults keep it; any spectra value changes it
   * (the reformatted text names G.h5 without sub/..: hashed as resolved, so compare
   * against a copy of the original with the same spelling) */
  snprintf(buf, sizeof buf, "%s", spectra_yaml);
  char *q = strstr(buf, "sub/../");
  memmove(q, q + 7, strlen(q + 7) + 1);
  rc = ds_sweep_parse(path, buf, &r);
  CHECK(rc == DS_OK, "plain G.h5: %s", ds_errmsg());
  uint64_t h = rc == DS_OK ? r.hash : 0;
  if (rc == DS_OK) ds_sweep_free(&r);
  rc = ds_sweep_parse(path, spectra_yaml_reformatted, &r);
  CHECK(rc == DS_OK, "reformatted: %s", ds_errmsg());
  if (rc == DS_OK) {
    CHECK(r.hash == h, "reformatted spectra keep the hash: %016llx vs %016llx",
          (unsigned long long)r.hash, (unsigned long long)h);
    ds_sweep_free(&r);
  }
  static const char *const edits[][2] = {
      {"ntk:\n      every: 20", "ntk:\n      every: 25"}, {"on_loss_rise: yes", "on_loss_rise: no"},
      {"e2e: {every: 50}", "e2e: {per_decade: 50}"},      {"top_k: 4", "top_k: 3"},
      {"lanczos_iters: 30", "lanczos_iters: 31"},          {"ntk_max: 64", "ntk_max: 65"},
      {"split: [1, 2, 8]", "split: [1, 2, 7]"},            {"catapult_factor: 3", "catapult_factor: 4"},
      {"hessian_full_max: 500", "hessian_full_max: 501"},  {"escape: {every: 10}", "escape: {every: 11}"},
      {"sub/../G.h5", "sub/../H.h5"}};
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    char e[4096];
    const char *at = strstr(spectra_yaml, edits[i][0]);
    snprintf(e, sizeof e, "%.*s%s%s", (int)(at - spectra_yaml), spectra_yaml, edits[i][1],
             at + strlen(edits[i][0]));
    rc = ds_sweep_parse_flags(path, e, DS_SWEEP_NO_FILES, &r);
    CHECK(rc == DS_OK && r.hash != s.hash, "%s -> hash: %s", edits[i][1], rc ? ds_errmsg() : "same hash");
    if (rc == DS_OK) ds_sweep_free(&r);
  }

  /* cost and store of the diagnostics (steps 1000, dims 6-8-8-1, n 32) */
  ds_point_cfg c = s.base;
  memset(&c.record.spectra, 0, sizeof c.record.spectra);
  c.record.spectra.top_k = 4;
  c.record.spectra.lanczos_iters = 30;
  double c0 = ds_point_cost(&c), b0 = ds_point_store_bytes(&c);
  double W = 6 * 8 + 8 * 8 + 8 * 1, P = W, n = 32, G = 6 * n * W;
  c.record.spectra.escape.every = 10; /* steps 0, 10, ..., 1000 */
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 101 * (2 * n * W + 4 * P), 1e-9), "escape cost %g",
        ds_point_cost(&c) - c0);
  CHECK(ds_close_rel(ds_point_store_bytes(&c) - b0, 101 * 16.0, 1e-12), "escape store");
  c.record.spectra.escape.every = 0;
  c.record.spectra.hessian.per_decade = 5; /* 2 + 5 * log10(1000) = 17 evaluations */
  double hc = 30 * 3.0 * G + 2.0 * 30 * 30 * P;
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 17 * hc, 1e-9), "hessian cost %g", ds_point_cost(&c) - c0);
  CHECK(ds_close_rel(ds_point_store_bytes(&c) - b0, 17 * (8 + 8 * 4.0), 1e-12), "hessian store");
  c.record.spectra.hessian.per_decade = 0;
  c.record.spectra.hessian.on_loss_rise = 1; /* counted as every 10 steps: 101 */
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 101 * hc, 1e-9), "on_loss_rise cost");
  c.record.spectra.hessian.on_loss_rise = 0;
  c.record.spectra.ntk.every = 1; /* at most every step: 1001 */
  c.record.spectra.ntk.on_loss_rise = 1;
  double kn = 32, nc = 2 * n * W + kn * 4 * W + 2 * kn * kn * P + 9 * kn * kn * kn;
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 1001 * nc, 1e-9), "ntk cost %g vs %g",
        ds_point_cost(&c) - c0, 1001 * nc);
  CHECK(ds_close_rel(ds_point_store_bytes(&c) - b0, 1001 * (40 + 16 + 16.0), 1e-12),
        "ntk store %g", ds_point_store_bytes(&c) - b0);
  c.record.spectra.ntk.every = 0;
  c.record.spectra.ntk.on_loss_rise = 0;
  c.record.spectra.hessian_full.every = 1000; /* steps 0 and 1000 */
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 2 * (P * 3 * G + 9 * P * P * P), 1e-9), "hessian_full cost");
  CHECK(ds_close_rel(ds_point_store_bytes(&c) - b0, 2 * (8 + 8 * P), 1e-12), "hessian_full store");
  c.record.spectra.hessian_full.every = 0;
  c.record.spectra.layers.every = 500; /* 0, 500, 1000 */
  double lc = 4.0 * 8 * 6 * 6 + 4.0 * 8 * 8 * 8 + 4.0 * 1 * 8 * 1;
  CHECK(ds_close_rel(ds_point_cost(&c) - c0, 3 * lc, 1e-9), "layers cost");
  CHECK(ds_close_rel(ds_point_store_bytes(&c) - b0, 3 * (3 * (8 + 8 * 4.0) + 5 * (8 + 8 * 3.0)), 1e-12),
        "layers store %g", ds_point_store_bytes(&c) - b0);
  ds_point p;
  CHECK(ds_sweep_point(&s, 0, &p) == DS_OK && p.cost > ds_point_cost(&c), "point cost counts spectra");
  ds_sweep_free(&s);

  /* every scalar of record.spectra is an axis by its dotted path */
  rc = ds_sweep_parse("a.yaml", "name: a\nloss: {reduction: mean}\n"
                      "grid:\n  record.spectra.ntk.every: [10, 20]\n"
                      "  record.spectra.hessian.on_loss_rise: [false, true]\n"
                      "  record.spectra.top_k: {start: 1, stop: 4, num: 4}\n"
                      "  record.spectra.catapult_factor: [1.5, 3]\n", &s);
  CHECK(rc == DS_OK, "spectra axes: %s", ds_errmsg());
  if (rc == DS_OK) {
    CHECK(s.naxes == 4 && ds_sweep_npoints(&s) == 2 * 2 * 4 * 2, "npoints %lld",
          (long long)ds_sweep_npoints(&s));
    CHECK(!strcmp(s.axes[0].name, "record.spectra.ntk.every") && !strcmp(s.axes[0].text[1], "20"),
          "axis name %s", s.axes[0].name);
    ds_sweep_point(&s, 0, &p);
    CHECK(p.cfg.record.spectra.ntk.every == 10 && p.cfg.record.spectra.hessian.on_loss_rise == 0 &&
              p.cfg.record.spectra.top_k == 1 && p.cfg.record.spectra.catapult_factor == 1.5, "point 0");
    ds_sweep_point(&s, 31, &p);
    CHECK(p.cfg.record.spectra.ntk.every == 20 && p.cfg.record.spectra.hessian.on_loss_rise == 1 &&
              p.cfg.record.spectra.top_k == 4 && p.cfg.record.spectra.catapult_factor == 3, "point 31");
    CHECK(p.cost > 0, "cost");
    uint64_t h1 = s.hash;
    ds_sweep_free(&s);
    rc = ds_sweep_parse("a.yaml", "name: a\nloss: {reduction: mean}\n"
                        "grid:\n  record.spectra.ntk.every: [10, 30]\n"
                        "  record.spectra.hessian.on_loss_rise: [false, true]\n"
                        "  record.spectra.top_k: {start: 1, stop: 4, num: 4}\n"
                        "  record.spectra.catapult_factor: [1.5, 3]\n", &s);
    CHECK(rc == DS_OK && s.hash != h1, "spectra axis value -> hash");
    if (rc == DS_OK) ds_sweep_free(&s);
  }

  /* allowed combinations: e2e diagnostics on an e2e model, hessian/ntk with
   * cross-entropy, agop with a reference file on any data, activations on relu */
  rc = ds_sweep_parse(path, "name: ok\nloss: {reduction: mean}\nmodel: {type: e2e, depth: 3}\n"
                      "record: {spectra: {e2e: {every: 10}, layers: {every: 10}, agop: {every: 5},"
                      " agop_reference: G.h5, escape: {on_loss_rise: true}}}\n", &s);
  CHECK(rc == DS_OK, "e2e model: %s", ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);
  rc = ds_sweep_parse(path, "name: ok\nloss: {reduction: mean, type: cross_entropy}\n"
                      "model: {type: relu, width: 4}\n"
                      "data: {kind: libsvm, path: train.svm, n_train: 8, n_test: 2, labels: one_hot}\n"
                      "record:\n  spectra:\n    hessian: {every: 10}\n    hessian_full: {every: 10}\n"
                      "    ntk: {every: 10}\n    activations: {every: 10}\n", &s);
  CHECK(rc == DS_OK, "cross-entropy hessian/ntk: %s", ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);
  /* a section left empty is a null, refused like every null (issue 24): {} is the empty map */
  rc = ds_sweep_parse(path, "name: ok\nloss: {reduction: mean}\nrecord:\n  spectra:\n", &s);
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), "record.spectra: expected a map of record.spectra "
                                  "options, got an empty value (null values are not allowed"),
        "empty spectra refused: %s", ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);
  rc = ds_sweep_parse(path, "name: ok\nloss: {reduction: mean}\nrecord: {spectra: {}}\n", &s);
  CHECK(rc == DS_OK, "spectra: {}: %s", ds_errmsg());
  if (rc == DS_OK) ds_sweep_free(&s);
  rc = ds_sweep_parse(path, "name: ok\nloss: {reduction: mean}\ndata: {kind: rank4, d_in: 5}\n"
                      "record: {spectra: {agop: {every: 10}, split: [], hessian: {every: 1}, top_k: 40}}\n", &s);
  CHECK(rc == DS_OK && s.base.record.spectra.nsplit == 0, "rank4 analytic agop, empty split: %s",
        rc ? ds_errmsg() : "");
  if (rc == DS_OK) ds_sweep_free(&s);
}

#define SP HEAD "record:\n  spectra:\n" /* lines 3-4; diagnostics from line 5 */

static void test_spectra_errors(void) {
  expect_err("unknown cadence key", SP "    ntk: {evry: 10}\n", 5, 11,
             "unknown key 'evry' in record.spectra.ntk (did you mean 'every'?)");
  expect_err("unknown diagnostic", SP "    hesian: {every: 10}\n", 5, 5,
             "unknown key 'hesian' in record.spectra (did you mean 'hessian'?)");
  expect_err("unknown spectra key list", SP "    colour: 1\n", 5, 5,
             "unknown key 'colour' in record.spectra (valid keys: layers, e2e, hessian, hessian_full, ntk, "
             "agop, activations, escape, batch_ntk, top_k, lanczos_iters, hessian_full_max, ntk_max, "
             "kernel_change_2, split, agop_reference, catapult_factor, loss_rise_rel)");
  expect_err("spectra misspelt", HEAD "record:\n  spectrum: {}\n", 4, 3,
             "unknown key 'spectrum' in record (did you mean 'spectra'?)");
  expect_err("cadence scalar", SP "    ntk: 10\n", 5, 10,
             "record.spectra.ntk: expected a map of when to compute it, such as {every: 10, per_decade: 5, "
             "on_loss_rise: true}, got '10'");
  expect_err("spectra a list", HEAD "record:\n  spectra: [ntk]\n", 4, 12,
             "record.spectra: expected a map of record.spectra options");
  expect_err("empty cadence", SP "    hessian: {}\n", 5, 14,
             "record.spectra.hessian: empty; give at least one of every, per_decade, on_loss_rise");
  expect_err("empty cadence null", SP "    hessian:\n    top_k: 3\n", 5, 13, "record.spectra.hessian: empty");
  expect_err("dotted key", HEAD "record:\n  spectra.ntk.every: 10\n", 4, 3,
             "unknown key 'spectra.ntk.every' in record: keys cannot contain '.'");
  expect_err("dotted top key", HEAD "record.spectra.ntk.every: 10\n", 3, 1,
             "unknown key 'record.spectra.ntk.every' at top level: write options as nested maps");
  expect_err("cadence type", SP "    ntk: {on_loss_rise: maybe}\n", 5, 25,
             "record.spectra.ntk.on_loss_rise: expected true or false, got 'maybe'");
  expect_err("cadence range", SP "    ntk: {every: -1}\n", 5, 18, "record.spectra.ntk.every: must be >= 0, got -1");
  expect_err("top_k range", SP "    top_k: 0\n", 5, 12, "record.spectra.top_k: must be in 1..4096, got 0");
  expect_err("catapult factor", SP "    catapult_factor: 1\n", 5, 22,
             "record.spectra.catapult_factor: must be > 1, got 1");
  expect_err("split too long", SP "    split: [1, 2, 3, 4, 5, 6, 7, 8, 9]\n", 5, 37,
             "record.spectra.split: too many values (9, limit 8)");
  expect_err("split increasing", SP "    split: [1, 5, 5]\n", 5, 19,
             "record.spectra.split: sizes must be strictly increasing, got 5 after 5");
  expect_err("split element", SP "    split: [0]\n", 5, 13, "record.spectra.split: must be in 1..1000000, got 0");
  expect_err("split axis", HEAD "grid:\n  record.spectra.split: [1, 2]\n", 4, 3,
             "record.spectra.split cannot be a grid axis: only single-valued options can be swept (lists are "
             "not); set it under record.spectra: instead");
  expect_err("reference axis", HEAD "grid:\n  record.spectra.agop_reference: [a.h5]\n", 4, 3,
             "(file names are not); set it under record.spectra: instead");
  expect_err("cadence axis suggestion", HEAD "grid:\n  record.spectra.ntk.evry: [1]\n", 4, 3,
             "unknown key 'record.spectra.ntk.evry' in grid (did you mean 'record.spectra.ntk.every'?)");
  expect_err("cadence axis value", HEAD "grid:\n  record.spectra.ntk.every: [10, -10]\n", 4, 34,
             "record.spectra.ntk.every: must be >= 0, got -10");
  expect_err("reference missing", SP "    agop: {every: 10}\n    agop_reference: no-G.h5\n", 6, 21,
             "record.spectra.agop_reference: cannot open 'no-G.h5': No such file or directory");
  /* cross-field */
  expect_err("e2e on relu", HEAD "model: {type: relu}\nrecord: {spectra: {e2e: {every: 10}}}\n", 4, 33,
             "record.spectra.e2e: needs a linear model (model.type linear or e2e), got relu");
  expect_err("e2e on relu axis", SP "    e2e: {every: 10}\ngrid: {model.type: [linear, e2e, relu]}\n", 6, 34,
             "record.spectra.e2e: needs a linear model (model.type linear or e2e), got relu (at "
             "grid.model.type = relu)");
  expect_err("activations on linear", SP "    activations: {per_decade: 3}\n", 5, 31,
             "record.spectra.activations: needs model.type relu or cnn (activations of a ReLU net), got linear");
  expect_err("activations on e2e", HEAD "model: {type: e2e}\nrecord: {spectra: {activations: {every: 1}}}\n",
             4, 41, "record.spectra.activations: needs model.type relu or cnn (activations of a ReLU net), got e2e");
  expect_err("agop analytic", SP "    agop: {every: 10}\n", 5, 19,
             "record.spectra.agop: the analytic reference G* exists for data.kind rank2, rank4 and "
             "image_rank2 only, got teacher; give record.spectra.agop_reference (an HDF5 file with dataset G, d_in x d_in)");
  expect_err("agop analytic axis", SP "    agop: {every: 10}\ngrid:\n  data.kind: [rank2, rank3]\n", 7, 22,
             "got rank3; give record.spectra.agop_reference (an HDF5 file with dataset G, d_in x d_in) (at "
             "grid.data.kind = rank3)");
  expect_err("hessian_full too large", SP "    hessian_full: {every: 10}\ngrid:\n  width: [16, 256]\n", 7, 15,
             "record.spectra.hessian_full: the network has 5120 parameters, more than "
             "record.spectra.hessian_full_max = 4000; use a smaller network, raise hessian_full_max (the "
             "Hessian is a 5120 x 5120 matrix) or use record.spectra.hessian (top-k by Lanczos) (at "
             "grid.width = 256)");
  expect_err("hessian_full max", SP "    hessian_full: {every: 10}\n    hessian_full_max: 100\n", 5, 27,
             "the network has 320 parameters, more than record.spectra.hessian_full_max = 100");
  expect_err("hessian_full bias", HEAD "model: {bias: true}\nrecord:\n  spectra:\n"
                                       "    hessian_full: {every: 10}\n    hessian_full_max: 320\n", 6, 27,
             "the network has 340 parameters, more than record.spectra.hessian_full_max = 320");
  expect_err("ntk too large", HEAD "data: {n_train: 2000}\nrecord:\n  spectra:\n    ntk: {on_loss_rise: true}\n",
             6, 25, "record.spectra.ntk: the NTK has d_out * n_train = 4 * 2000 = 8000 rows, more than "
                    "record.spectra.ntk_max = 4096; use fewer training samples or raise ntk_max (K is a 8000 "
                    "x 8000 matrix)");
  expect_err("ntk too large axis", SP "    ntk: {every: 5}\n    ntk_max: 1024\ngrid: {data.n_train: [256, 512]}\n",
             7, 28, "d_out * n_train = 4 * 512 = 2048 rows, more than record.spectra.ntk_max = 1024; use "
                    "fewer training samples or raise ntk_max (K is a 2048 x 2048 matrix) (at "
                    "grid.data.n_train = 512)");
  expect_err("hessian approx", HEAD "model: {approx: lin}\nrecord:\n  spectra:\n    hessian: {every: 10}\n",
             6, 22, "record.spectra.hessian: not supported with model.approx lin (yet); only the network "
                    "itself (approx: none)");
  expect_err("ntk approx axis", SP "    ntk: {every: 10}\ngrid: {model.approx: [none, quad]}\n", 6, 29,
             "record.spectra.ntk: not supported with model.approx quad (yet); only the network itself "
             "(approx: none) (at grid.model.approx = quad)");
  expect_err("hessian_full e2e", HEAD "model: {type: e2e}\nrecord: {spectra: {hessian_full: {every: 10}}}\n",
             4, 42, "record.spectra.hessian_full: not supported with model.type e2e (yet); use model.type "
                    "linear for the same network");
  expect_err("ntk e2e", HEAD "model: {type: e2e}\nrecord:\n  spectra:\n    ntk: {every: 10}\n", 6, 18,
             "record.spectra.ntk: not supported with model.type e2e (yet)");
  expect_err("lanczos iters", SP "    hessian: {every: 10}\n    top_k: 50\n    lanczos_iters: 20\n", 7, 20,
             "record.spectra.lanczos_iters: must be >= record.spectra.top_k = 50 (Lanczos gives at most one "
             "eigenvalue per iteration), got 20");
  expect_err("lanczos iters top_k axis", SP "    hessian: {every: 10}\ngrid: {record.spectra.top_k: [5, 41]}\n",
             6, 34, "got 40 (at grid.record.spectra.top_k = 41)");
  expect_err("store too large", HEAD "train: {steps: 1000000}\nmodel: {width: 64}\nrecord:\n  spectra:\n"
                                     "    hessian_full: {every: 1}\n    hessian_full_max: 100000\n"
                                     "grid: {lr: {start: 0.001, stop: 1, num: 10, spacing: log}}\n",
             9, 1, "grid too large for the store");
}

/* Every yaml block of docs/sweep-spec.md parses (fragments get a name and
 * a loss reduction), and every sweeps/examples/NAME.yaml loads. */
static void test_docs_and_examples(void) {
  char *doc = NULL;
  int rc = ds_read_file(DS_SRC_DIR "/docs/sweep-spec.md", &doc, NULL);
  CHECK(rc == DS_OK, "read docs: %s", ds_errmsg());
  if (rc) return;
  int nblocks = 0;
  for (char *p = strstr(doc, "```yaml\n"); p; p = strstr(p, "```yaml\n")) {
    p += 8;
    char *end = strstr(p, "```");
    if (!end) break;
    char text[8192];
    int len = (int)(end - p), line = 1;
    for (char *q = doc; q < p; q++) line += *q == '\n';
    int has_name = !strncmp(p, "name:", 5) || (strstr(p, "\nname:") && strstr(p, "\nname:") < end);
    int has_loss = !strncmp(p, "loss:", 5) || (strstr(p, "\nloss:") && strstr(p, "\nloss:") < end);
    snprintf(text, sizeof text, "%s%.*s%s", has_name ? "" : "name: doc\n", len, p,
             has_loss ? "" : "loss: {reduction: mean}\n");
    ds_sweep s;
    rc = ds_sweep_parse_flags(DS_SRC_DIR "/docs/sweep-spec.md", text, DS_SWEEP_NO_FILES, &s);
    CHECK(rc == DS_OK, "docs/sweep-spec.md block at line %d: %s", line, ds_errmsg());
    if (rc == DS_OK) ds_sweep_free(&s);
    nblocks++;
    p = end + 3;
  }
  CHECK(nblocks >= 20, "only %d yaml blocks in the docs", nblocks);
  free(doc);

  const char *examples[] = {"e2e_vs_deep.yaml", "catapult.yaml", "saddles.yaml", "gas_libsvm.yaml",
                            "optimizers.yaml", "spectra.yaml", "tanh_map.yaml", "tanh_init_map.yaml", NULL};
  for (int i = 0; examples[i]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/sweeps/examples/%s", DS_SRC_DIR, examples[i]);
    ds_sweep s;
    rc = ds_sweep_load(path, &s);
    CHECK(rc == DS_OK, "%s: %s", examples[i], ds_errmsg());
    if (rc == DS_OK) ds_sweep_free(&s);
  }
}

/* issue 13: overrides (--set): the same meaning as the file edited by hand,
 * grid replacement by alias, groups, sections made from nothing, an option
 * leaving the grid; errors name the --set; nothing left allocated. */
static void test_overrides(void) {
  char *set1[] = {"optimizer.lr=0.3", "grid.lr=[0.1, 0.2]", "grid.model.depth=[2, 3]",
                  "model={type: tanh, gain: 2}", "record.spectra.ntk={every: 5}", "seed=7",
                  "width=8"};
  const char *base = HEAD "model: {type: relu, width: 4}\ngrid:\n  width: [16, 32]\n"
                          "  optimizer.lr: [0.5, 0.6, 0.7]\n";
  const char *edited = "name: e\nseed: 7\nloss: {reduction: mean}\nmodel: {type: tanh, gain: 2, width: 8}\n"
                       "optimizer: {lr: 0.3}\nrecord: {spectra: {ntk: {every: 5}}}\n"
                       "grid: {lr: [0.1, 0.2], model.depth: [2, 3]}\n";
  ds_sweep a, b;
  int rc = ds_sweep_parse_set("t.yaml", base, 7, set1, &a);
  CHECK(rc == DS_OK, "overrides: %s", ds_errmsg());
  CHECK(ds_sweep_parse("e.yaml", edited, &b) == DS_OK, "edited: %s", ds_errmsg());
  if (rc == DS_OK) {
    CHECK(a.hash == b.hash, "--set == the file edited by hand (%016llx vs %016llx)",
          (unsigned long long)a.hash, (unsigned long long)b.hash);
    CHECK(a.naxes == 2 && !strcmp(a.axes[0].path, "optimizer.lr") && a.axes[0].nvals == 2 &&
              !strcmp(a.axes[1].path, "model.depth"),
          "width left the grid, lr replaced in place, depth added last (%d axes)", a.naxes);
    CHECK(a.base.model.type == DS_MODEL_TANH && a.base.model.gain == 2 && a.base.model.width == 8 &&
              a.base.record.spectra.ntk.every == 5 && a.seed == 7,
          "values");
    CHECK(strstr(a.text, "\noverrides:  # dynsweep --set\n  optimizer.lr: 0.3\n") != NULL,
          "text keeps the overrides");
    ds_sweep c; /* the stored text is a sweep of the same meaning */
    CHECK(ds_sweep_parse("t.yaml", a.text, &c) == DS_OK && c.hash == a.hash, "stored text re-parses");
    ds_sweep_free(&c);
    ds_sweep_free(&a);
  }
  ds_sweep_free(&b);
  struct { char *set; const char *words; } bad[] = {
      {"model.wdth=3", "--set model.wdth=3: unknown option 'model.wdth' (did you mean 'model.width'?)"},
      {"grid.lrr=[1]", "--set grid.lrr=[1]: unknown grid axis 'lrr' (did you mean 'grid.lr'?)"},
      {"model.gain=0", "--set model.gain=0: model.gain: must be > 0, got 0 (at character 1 of the value)"},
      {"grid.width=[4, x]", "--set grid.width=[4, x]: model.width: expected an integer, got 'x' (at character 5"},
      {"loss.reduction.x=1", "--set loss.reduction.x=1: unknown option 'loss.reduction.x'"},
      {"width", "--set width: expected KEY=VALUE"},
      {"a b=1", "--set a b=1: KEY 'a b' is not an option path"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ds_clear_error();
    rc = ds_sweep_parse_set("t.yaml", base, 1, &bad[i].set, &a);
    CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), bad[i].words) == ds_errmsg(), "%s: rc %d, '%s'",
          bad[i].set, rc, ds_errmsg());
    CHECK(a.text == NULL && a.axes == NULL, "%s: nothing left allocated", bad[i].set);
  }
  char *one[] = {"seed=1"};
  rc = ds_sweep_parse_set("t.yaml", HEAD "overrides: {seed: 2}\n", 1, one, &a);
  CHECK(rc == DS_EINPUT && strstr(ds_errmsg(), "t.yaml:3: the sweep already has an overrides: map"),
        "a file with overrides: takes no --set: %s", ds_errmsg());
  expect_err("overrides: not a map", HEAD "overrides: [1]\n", 3, 12,
             "overrides: expected a map of option paths to values");
  expect_err("overrides: into a scalar", HEAD "record: 3\noverrides: {record.every: 2}\n", 4, 13,
             "overrides: record.every: 'record' in the file is not a map of options");
}

/* issue 11: numbers at the edges, tags and nulls, sweep files that are not
 * regular files, and ds_sweep_check_inputs on a sweep without files */
static void test_issue11(void) {
  ds_sweep s;
  int rc = ds_sweep_parse("t.yaml", HEAD "model: {init_std: 5e-324}\n", &s);
  CHECK(rc == DS_OK && s.base.model.init_std == 4.9406564584124654e-324, "subnormal 5e-324: %s",
        rc ? ds_errmsg() : "wrong value");
  if (rc == DS_OK) {
    CHECK(ds_sweep_check_inputs(&s) == DS_OK, "no files: check_inputs ok: %s", ds_errmsg());
    char *list = NULL;
    uint64_t h = 0;
    CHECK(ds_sweep_inputs_hash(&s, &list, &h) == DS_OK && list && !list[0] && h != 0,
          "no files: empty inputs list");
    free(list);
    ds_sweep_free(&s);
  }
  static const struct {
    const char *what, *body;
    int line, col;
    const char *words;
  } bad[] = {
      {"underflow to 0", "model: {init_std: 1e-400}\n", 3, 19, "model.init_std: expected a number, got '1e-400'"},
      {"int overflow", "model: {depth: 2, width: 2147483648}\n", 3, 26,
       "model.width: too large (max 2147483647), got 2147483648"},
      {"int64 overflow", "train: {steps: 1e19}\n", 3, 16, "train.steps: must be in"},
      {"tag on a value", "model: {type: !!str relu}\n", 3, 15,
       "YAML tags are not supported (found '!!str'); remove the tag and write the plain value"},
      {"tag on a list", "grid: {width: !w [1, 2]}\n", 3, 15, "(found '!w')"},
      {"null list item", "grid: {width: [1, null]}\n", 3, 19, "model.width: expected an integer, got the null value 'null'"},
      {"null file name", "model: {init_file: ~}\n", 3, 20, "model.init_file: expected a file name, got the null value '~'"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char text[256];
    snprintf(text, sizeof text, HEAD "%s", bad[k].body);
    expect_err(bad[k].what, text, bad[k].line, bad[k].col, bad[k].words);
  }
  expect_err("null name", "name: NULL\nloss: {reduction: mean}\n", 1, 7,
             "name: expected a short name such as 'width-sweep', got the null value 'NULL'");
  /* sweep files: a FIFO is refused at once (no open, no block), a directory too */
  char fifo[300], *text = NULL;
  snprintf(fifo, sizeof fifo, "%s/f.yaml", tmpdir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
  ds_clear_error();
  CHECK(ds_sweep_read(fifo, &text, NULL) == DS_EINPUT && strstr(ds_errmsg(), "is a FIFO (named pipe), not a regular file"),
        "FIFO: %s", ds_errmsg());
  CHECK(ds_sweep_load(tmpdir, &s) == DS_EINPUT && strstr(ds_errmsg(), "is a directory, not a regular file"),
        "directory: %s", ds_errmsg());
  CHECK(ds_sweep_read("/dev/zero", &text, NULL) == DS_EINPUT &&
            !strcmp(ds_errmsg(), "/dev/zero: is a character device, not a regular file"), "device: %s", ds_errmsg());
  unlink(fifo);
}

int main(void) {
  test_full();
  test_defaults_and_ranges();
  test_errors();
  test_load_demo();
  make_tmpdir();
  test_issue3_defaults();
  test_issue3_options();
  test_issue3_files();
  test_issue3_errors();
  test_issue11();
  write_file("G.h5", "not really HDF5: only opened by the config room\n");
  test_spectra_defaults();
  test_spectra_options();
  test_spectra_errors();
  rm_tmpdir();
  test_docs_and_examples();
  test_overrides();
  return ds_check_report("test_config");
}
