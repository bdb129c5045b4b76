/* optim.c -- the optimisers of ds_opt_kind on a flat parameter vector and the
 * learning-rate schedules. Update rules (exactly as implemented; see
 * docs/optimizers.md), g = grad + weight_decay * theta (coupled L2, formed in
 * o->scratch so the caller's grad is untouched), t = o->t after increment:
 *   gd, sgd   theta -= lr g
 *   momentum  v = mu v + g;  theta -= lr v                     (PyTorch SGD)
 *   nesterov  v = mu v + g;  theta -= lr (g + mu v)            (PyTorch SGD)
 *   adagrad   s += g^2;  theta -= lr g / (sqrt(s) + eps), s0 = initial_accumulator
 *   adadelta  a = rho a + (1-rho) g^2;  d = sqrt(u + eps) / sqrt(a + eps) g;
 *             u = rho u + (1-rho) d^2;  theta -= lr d          (Zeiler; TF = PyTorch)
 *   rmsprop   s = alpha s + (1-alpha) g^2;  theta -= lr g / (sqrt(s) + eps)  (PyTorch)
 *   adam      m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *             theta -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps)       (PyTorch)
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/optim.h"
#include "dynsweep/util.h"

size_t ds_optim_nstate(ds_opt_kind type, size_t n) {
  switch (type) {
    case DS_OPT_GD:
    case DS_OPT_SGD:
      return 0;
    case DS_OPT_MOMENTUM:
    case DS_OPT_NESTEROV:
    case DS_OPT_ADAGRAD:
    case DS_OPT_RMSPROP:
      return n;
    case DS_OPT_ADADELTA:
    case DS_OPT_ADAM:
      return 2 * n;
  }
  return 0;
}

int ds_optim_init(ds_optim *o, const ds_optim_spec *spec, size_t n) {
  memset(o, 0, sizeof *o);
  if ((int)spec->type < (int)DS_OPT_GD || (int)spec->type > (int)DS_OPT_ADAM)
    return ds_fail(DS_EINPUT, "optimizer: unknown type %d", (int)spec->type);
  o->spec = *spec;
  o->n = n;
  o->nstate = ds_optim_nstate(spec->type, n);
  if (o->nstate > 0) {
    o->state = ds_calloc(o->nstate, sizeof *o->state);
    if (!o->state) return DS_ENOMEM;
  }
  if (spec->weight_decay != 0 && n > 0) {
    o->scratch = ds_calloc(n, sizeof *o->scratch);
    if (!o->scratch) {
      ds_optim_free(o);
      return DS_ENOMEM;
    }
  }
  ds_optim_reset(o);
  return DS_OK;
}

void ds_optim_reset(ds_optim *o) {
  o->t = 0;
  if (!o->state) return;
  memset(o->state, 0, o->nstate * sizeof *o->state);
  if (o->spec.type == DS_OPT_ADAGRAD)
    for (size_t i = 0; i < o->n; i++) o->state[i] = o->spec.initial_accumulator;
}

void ds_optim_free(ds_optim *o) {
  free(o->state);
  free(o->scratch);
  o->state = o->scratch = NULL;
  o->nstate = 0;
}

void ds_optim_step(ds_optim *o, double *theta, const double *grad, double lr) {
  const size_t n = o->n;
  const ds_optim_spec *s = &o->spec;
  const double *g = grad;
  o->t++;
  if (s->weight_decay != 0 && n > 0) {
    const double wd = s->weight_decay;
    for (size_t i = 0; i < n; i++) o->scratch[i] = grad[i] + wd * theta[i];
    g = o->scratch;
  }
  double *st = o->state;
  switch (s->type) {
    case DS_OPT_GD:
    case DS_OPT_SGD:
      ds_gd_step(theta, g, n, lr);
      break;
    case DS_OPT_MOMENTUM: {
      const double mu = s->momentum;
      for (size_t i = 0; i < n; i++) {
        st[i] = mu * st[i] + g[i];
        theta[i] -= lr * st[i];
      }
      break;
    }
    case DS_OPT_NESTEROV: {
      const double mu = s->momentum;
      for (size_t i = 0; i < n; i++) {
        st[i] = mu * st[i] + g[i];
        theta[i] -= lr * (g[i] + mu * st[i]);
      }
      break;
    }
    case DS_OPT_ADAGRAD: {
      const double eps = s->eps;
      for (size_t i = 0; i < n; i++) {
        st[i] += g[i] * g[i];
        theta[i] -= lr * g[i] / (sqrt(st[i]) + eps);
      }
      break;
    }
    case DS_OPT_ADADELTA: {
      const double rho = s->rho, eps = s->eps;
      double *acc = st, *accd = st + n;
      for (size_t i = 0; i < n; i++) {
        acc[i] = rho * acc[i] + (1 - rho) * g[i] * g[i];
        double d = sqrt(accd[i] + eps) / sqrt(acc[i] + eps) * g[i];
        accd[i] = rho * accd[i] + (1 - rho) * d * d;
        theta[i] -= lr * d;
      }
      break;
    }
    case DS_OPT_RMSPROP: {
      const double a = s->alpha, eps = s->eps;
      for (size_t i = 0; i < n; i++) {
        st[i] = a * st[i] + (1 - a) * g[i] * g[i];
        theta[i] -= lr * g[i] / (sqrt(st[i]) + eps);
      }
      break;
    }
    case DS_OPT_ADAM: {
      const double b1 = s->beta1, b2 = s->beta2, eps = s->eps;
      const double bc1 = 1 - pow(b1, (double)o->t), bc2s = sqrt(1 - pow(b2, (double)o->t));
      const double step = lr / bc1;
      double *m = st, *v = st + n;
      for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        theta[i] -= step * m[i] / (sqrt(v[i]) / bc2s + eps);
      }
      break;
    }
  }
}

double ds_schedule_lr(const ds_optim_spec *spec, int64_t t, double theta_norm, int depth) {
  switch (spec->schedule) {
    case DS_SCHED_CONSTANT:
      return spec->lr;
    case DS_SCHED_PIECEWISE: {
      double lr = spec->lr;
      for (int i = 0; i < spec->nschedule && i < DS_MAX_LIST; i++) {
        if (t < spec->schedule_steps[i]) break;
        lr = spec->schedule_lrs[i];
      }
      return lr;
    }
    case DS_SCHED_ADAPTIVE_NORM: {
      if (!(theta_norm > 0)) return spec->lr; /* ||theta|| = 0 (or NaN): no scaling */
      double e = 2.0 - (double)depth;
      if (e == 0) return spec->lr;
      return spec->lr * pow(theta_norm, e);
    }
  }
  return spec->lr;
}
