/* test_plan.c -- the time model behind `plan` (issue 12) on a made-up probe,
 * so the figures are exact: the probe table's interpolation, the GEMM time
 * (flops or streaming, whichever is longer), a point's seconds growing with
 * its steps, width and diagnostics, and the wall time per rank count
 * (longest first onto ranks - 1 workers, teams, 1 rank = the sum). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/config.h"
#include "dynsweep/probe.h"
#include "dynsweep/util.h"

/* A probe: the GEMM table slower by 2x per halving of w and b from the
 * largest cell (1e-11 s/flop at w = 512, b = 512). */
static void fake_probe(ds_probe *p) {
  memset(p, 0, sizeof *p);
  for (int iw = 0; iw < DS_PROBE_NW; iw++)
    for (int ib = 0; ib < DS_PROBE_NB; ib++)
      p->gemm[iw][ib] = 1e-11 * pow(2, DS_PROBE_NW - 1 - iw) * pow(2, 3 * (DS_PROBE_NB - 1 - ib));
  p->call = 1e-7, p->vec = 1e-9, p->skinny = 2e-9;
  for (int i = 0; i < DS_PROBE_NS; i++) {
    double s = pow(4, i + 1);
    p->svd[i] = 1e-9 * s * s * s, p->syev[i] = 2e-9 * s * s * s;
  }
}

static double point_s(const char *yaml, const ds_probe *pr) {
  ds_sweep sw;
  ds_point pt;
  if (ds_sweep_parse("t.yaml", yaml, &sw) != DS_OK) {
    fprintf(stderr, "%s\n", ds_errmsg());
    return -1;
  }
  double s = ds_sweep_point(&sw, 0, &pt) == DS_OK ? ds_point_seconds(&pt.cfg, pr) : -1;
  ds_sweep_free(&sw);
  return s;
}

static const char *base =
    "name: t\nseed: 1\nloss: {reduction: half_mean}\n"
    "data: {kind: teacher, d_in: 16, d_out: 4, n_train: 256, n_test: 0}\n";
#define REC "record: {series: [loss], every: 100, per_decade: 0}\n"

static double with(const ds_probe *pr, const char *extra) {
  char y[2048];
  snprintf(y, sizeof y, "%s%s", base, extra);
  return point_s(y, pr);
}

int main(void) {
  ds_probe p;
  fake_probe(&p);

  /* the table: exact at its points, log-linear between, clamped outside */
  CHECK(ds_close_rel(ds_probe_gemm_spf(&p, 64, 64), p.gemm[5][2], 1e-12), "spf(64, 64) %g", ds_probe_gemm_spf(&p, 64, 64));
  CHECK(ds_close_rel(ds_probe_gemm_spf(&p, 32 * sqrt(2.0), 64), sqrt(p.gemm[4][2] * p.gemm[5][2]), 1e-12),
        "spf between widths: the geometric mean");
  CHECK(ds_close_rel(ds_probe_gemm_spf(&p, 4096, 4096), p.gemm[8][3], 1e-12), "beyond the table: its largest cell");
  CHECK(ds_close_rel(ds_probe_gemm_spf(&p, 1, 1), p.gemm[0][0], 1e-12), "below the table: its smallest cell");
  /* a GEMM: flops at the rate, or streaming the largest operand */
  double sq = ds_probe_gemm_s(&p, 64, 64, 64, 64, 64);
  CHECK(ds_close_rel(sq, 2.0 * 64 * 64 * 64 * p.gemm[5][2] + p.call, 1e-12), "square GEMM: flops %g", sq);
  double sk = ds_probe_gemm_s(&p, 4096, 128, 1, 64, 128);
  CHECK(ds_close_rel(sk, 4096.0 * 128 * p.skinny + p.call, 1e-12), "4096 x 1 by 1 x 128: streams C %g", sk);
  CHECK(ds_probe_svd_s(&p, 64, 64) > ds_probe_svd_s(&p, 16, 16) && ds_probe_svd_s(&p, 16, 64) > ds_probe_svd_s(&p, 16, 16),
        "SVD time grows with either side");

  /* a point: linear in steps (past its fixed cost), more for wider layers, diagnostics add */
  double s1 = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 1000}\n" REC);
  double s2 = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 2000}\n" REC);
  double s4 = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 4000}\n" REC);
  CHECK(s1 > 0 && ds_close_rel(s4 - s2, 2 * (s2 - s1), 1e-9), "steps: %g %g %g", s1, s2, s4);
  double w = with(&p, "model: {depth: 2, width: 256, bias: false}\ntrain: {steps: 1000}\n" REC);
  CHECK(w > 2 * s1, "width 256 (%g s) costs more than twice width 64 (%g s)", w, s1);
  double ntk = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 1000}\nrecord: {series: [loss], every: 100, "
                        "spectra: {ntk: {every: 100}}}\n");
  CHECK(ntk > s1, "the NTK every 100 steps adds time (%g vs %g)", ntk, s1);
  /* a batch_size minibatches whatever the update rule (the worker's rule, point.c): gd with
   * batch_size 32 is sgd's cost, under the full batch's */
  double gdb = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 1000}\n"
                        "optimizer: {type: gd, batch_size: 32}\n" REC);
  double sgdb = with(&p, "model: {depth: 2, width: 64, bias: false}\ntrain: {steps: 1000}\n"
                         "optimizer: {type: sgd, batch_size: 32}\n" REC);
  CHECK(gdb > 0 && ds_close_rel(gdb, sgdb, 1e-12) && gdb < s1,
        "gd with batch_size 32: %g s, sgd: %g s, full batch %g s", gdb, sgdb, s1);
  /* a step of depth 2, width 64, 256 samples: forward, dW on both layers, dA on the second */
  double st = ds_probe_gemm_s(&p, 64, 256, 16, 32, 256) + ds_probe_gemm_s(&p, 64, 16, 256, 32, 256) +
              ds_probe_gemm_s(&p, 4, 256, 64, 16, 256) + ds_probe_gemm_s(&p, 4, 64, 256, 16, 256) +
              ds_probe_gemm_s(&p, 64, 256, 4, 16, 256);
  /* + a record every 100 steps: 16 calls' worth (series appends) */
  double want = st + 4.0 * 256 * 68 * p.vec + 2.0 * (16 * 64 + 64 * 4) * p.vec + 8 * p.call + 16 * p.call / 100;
  CHECK(ds_close_rel((s2 - s1) / 1000, want, 1e-9), "one step: its five GEMMs, elementwise passes, update, "
        "checks (%.9g s, want %.9g)", (s2 - s1) / 1000, want);

  /* wall per rank count */
  double sec[5] = {4, 3, 3, 2, 2};
  int team[5] = {1, 1, 1, 1, 1};
  char dist[5] = {0};
  ds_estimate e = {5, sec, 14, team, dist};
  double st0 = ds_estimate_wall(&e, 1) - 14; /* the start */
  CHECK(st0 > 0 && st0 < 2, "1 rank: the sum plus the start (%g)", st0);
  CHECK(ds_close_rel(ds_estimate_wall(&e, 2) - st0, 14, 1e-12), "2 ranks: one worker, the sum");
  /* 2 workers, longest first: A 4, B 3, B 3+3, A 4+2, A/B +2 -> 8 */
  CHECK(ds_close_rel(ds_estimate_wall(&e, 3) - st0, 8, 1e-12), "3 ranks: 8 s (%g)", ds_estimate_wall(&e, 3) - st0);
  CHECK(ds_close_rel(ds_estimate_wall(&e, 6) - st0, 4, 1e-12), "6 ranks: the longest point");
  CHECK(ds_close_rel(ds_estimate_wall(&e, 100) - st0, 4, 1e-12), "100 ranks: the longest point");
  /* a team of 2 holds two workers at once: with 2 workers it waits for both */
  team[0] = 2;
  CHECK(ds_close_rel(ds_estimate_wall(&e, 3) - st0, 4 + 5, 1e-12), "team of 2 first, then 3+3+2+2 on two: %g",
        ds_estimate_wall(&e, 3) - st0);
  sec[0] = 8, dist[0] = 1; /* distributed training: the team splits the point */
  CHECK(ds_close_rel(ds_estimate_wall(&e, 3) - st0, 4 + 5, 1e-12), "distributed on 2: 8/2 then 5 (%g)",
        ds_estimate_wall(&e, 3) - st0);
  CHECK(ds_close_rel(ds_estimate_wall(&e, 2) - st0, 18, 1e-12), "one worker: the team capped to 1, the sum (%g)",
        ds_estimate_wall(&e, 2) - st0);
  char b[32];
  ds_estimate_fmt(42, b, sizeof b);
  CHECK(!strcmp(b, "42 s"), "fmt 42: %s", b);
  ds_estimate_fmt(150, b, sizeof b);
  CHECK(!strcmp(b, "2.5 min"), "fmt 150: %s", b);
  ds_estimate_fmt(7200, b, sizeof b);
  CHECK(!strcmp(b, "2.0 h"), "fmt 7200: %s", b);
  return ds_check_report("test_plan");
}
