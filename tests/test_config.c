/* test_config.c -- the sweep file: every field of a full example, grid
 * expansion (order, replicas, linear/log ranges), the meaning hash, cost
 * estimates, and one check per error class (code, file:line:col, words). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "dynsweep/config.h"
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
             "model.type: expected one of linear, relu, got 'relux' (did you mean 'relu'?)");
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

int main(void) {
  test_full();
  test_defaults_and_ranges();
  test_errors();
  test_load_demo();
  return ds_check_report("test_config");
}
