/* maprec.c -- the outcome record of one map point from its loss series
 * (definitions in include/dynsweep/map.h and docs/maps.md). */
#include <math.h>
#include <string.h>

#include "dynsweep/map.h"
#include "dynsweep/worker.h"

void ds_map_acc_start_rule(ds_map_acc *a, int early_stop) {
  memset(a, 0, sizeof *a);
  a->l0 = NAN;
  a->last_ge1 = -1;
  a->cap_step = -1;
  a->peak_step = 0;
  a->early_stop = early_stop ? 1 : 0;
}

void ds_map_acc_start(ds_map_acc *a) { ds_map_acc_start_rule(a, 0); }

int ds_map_acc_add(ds_map_acc *a, double loss) {
  if (a->early_stop && a->cap_step >= 0) return 1; /* map.early_stop: the rest is the cap */
  if (a->t == 0) a->l0 = loss;
  double v = loss / a->l0;
  if (a->t == 0) v = 1.0; /* exactly, whatever L_0 is (a non-finite L_0 caps below) */
  if (!isfinite(loss) || !isfinite(a->l0) || !(a->l0 > 0)) v = loss == 0 && a->l0 == 0 ? 0 : DS_MAP_CAP;
  if (!(v < DS_MAP_CAP)) v = DS_MAP_CAP; /* NaN too */
  a->sum_v += v;
  a->sum_inv += 1.0 / v;
  if (v > a->peak) {
    a->peak = v;
    a->peak_step = a->t;
  }
  if (v >= 1.0) a->last_ge1 = a->t;
  a->tail[a->t % DS_MAP_TAIL] = v;
  a->last = v;
  if (v >= DS_MAP_CAP && a->cap_step < 0) a->cap_step = a->t; /* the first time */
  a->t++;
  return a->early_stop && a->cap_step >= 0;
}

void ds_map_acc_finish(const ds_map_acc *a, int64_t T, double catapult_factor, ds_map_rec *out) {
  memset(out, 0, sizeof *out);
  if (a->t == 0 || T <= 0) {
    ds_map_rec_failed(out);
    return;
  }
  double sum_v = a->sum_v, sum_inv = a->sum_inv, tail = 0;
  int64_t rest = T > a->t ? T - a->t : 0, n = a->t < T ? a->t : T;
  /* fewer than T losses: the remaining steps repeat the last v (the cap when
   * the point was stopped there, by map.early_stop or a non-finite loss) */
  if (rest > 0) {
    sum_v += (double)rest * a->last;
    sum_inv += (double)rest / a->last;
  }
  /* mean of the last DS_MAP_TAIL values of the T-long series */
  int64_t ntail = T < DS_MAP_TAIL ? T : DS_MAP_TAIL, k = 0;
  for (; k < ntail && k < rest; k++) tail += a->last;
  for (int64_t i = n - 1; k < ntail && i >= 0; i--, k++) tail += a->tail[i % DS_MAP_TAIL];
  int converged = tail / (double)ntail < 1.0;
  out->measure = (float)(converged ? -sum_v : sum_inv);
  out->final_ratio = (float)a->last;
  out->peak_ratio = (float)a->peak;
  if (!converged) {
    out->outcome = DS_OUT_DIVERGED;
    out->step = (int32_t)(a->cap_step >= 0 ? a->cap_step : T);
  } else if (a->peak > catapult_factor) {
    out->outcome = DS_OUT_CATAPULT;
    out->step = (int32_t)a->peak_step;
  } else {
    out->outcome = DS_OUT_CONVERGED;
    out->step = (int32_t)(a->last_ge1 + 1);
  }
}

void ds_map_rec_failed(ds_map_rec *out) {
  memset(out, 0, sizeof *out);
  out->outcome = DS_OUT_FAILED;
  out->step = -1;
  out->measure = out->final_ratio = out->peak_ratio = NAN;
}
