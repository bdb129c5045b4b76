/* loss.c -- the losses: squared error L = c * sum (F - Y)^2 (the training
 * hot path, with its gradient dL/dF = 2 c (F - Y) in one pass), and (issue 3)
 * the generic ds_loss: mse, lp and softmax cross-entropy, their gradients and
 * Hessian actions.
 *
 * The mse sum uses 8 fixed partial sums (entry k goes to partial k mod 8, the
 * partials are added in order at the end), so the loop vectorises and yet the
 * rounding is the same for every vector width: bitwise identical results on
 * any x86-64 clone, run to run. FMA contraction is off for the same reason. */
#include <math.h>
#include <string.h>

#include "dynsweep/nn.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DS_LOSS_FN                                                                               \
  __attribute__((optimize("O3", "fp-contract=off"), target_clones("avx512f", "avx2", "default")))
#else
#define DS_LOSS_FN
#endif

/* part[q] = (carry ? part[q] : 0) + sum over blocks of (F - Y)^2 at q mod 8;
 * dF = c2 (F - Y) if asked */
DS_LOSS_FN
static void mse_blocks(const double *F, const double *Y, size_t nblk, double c2, double *dF,
                       double *restrict part, int carry) {
  double p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  if (carry)
    for (int q = 0; q < 8; q++) p[q] = part[q];
  if (dF) {
    for (size_t b = 0; b < nblk; b++)
      for (int q = 0; q < 8; q++) {
        double r = F[8 * b + q] - Y[8 * b + q];
        p[q] += r * r;
        dF[8 * b + q] = c2 * r;
      }
  } else {
    for (size_t b = 0; b < nblk; b++)
      for (int q = 0; q < 8; q++) {
        double r = F[8 * b + q] - Y[8 * b + q];
        p[q] += r * r;
      }
  }
  for (int q = 0; q < 8; q++) part[q] = p[q];
}

/* the 8 lanes over count entries, carried on from part unless first */
static void mse_part(const double *F, const double *Y, size_t count, double c, double *dF,
                     double *part, int first) {
  double c2 = 2.0 * c;
  size_t nblk = count / 8;
  mse_blocks(F, Y, nblk, c2, dF, part, !first);
  for (size_t k = 8 * nblk; k < count; k++) {
    double r = F[k] - Y[k];
    part[k % 8] += r * r;
    if (dF) dF[k] = c2 * r;
  }
}

static double mse_sum(const double *part, double c) {
  double sum = 0.0;
  for (int q = 0; q < 8; q++) sum += part[q];
  return c * sum;
}

double ds_loss_mse(const double *F, const double *Y, size_t count, double c, double *dF) {
  double part[8];
  mse_part(F, Y, count, c, dF, part, 1);
  return mse_sum(part, c);
}

int ds_loss_eval_blk(const ds_loss *l, const double *F, const double *Y, int k, int n, double *dF,
                     double *part, int first, int last, double *loss) {
  if (l->type != DS_LOSS_MSE && !(l->type == DS_LOSS_LP && l->p == 2.0)) {
    ds_loss_eval(l, F, Y, k, n, dF);
    return 0;
  }
  size_t count = (size_t)k * n;
  if (!last && count % 8) { /* a lane would shift: not the sums of one pass */
    ds_loss_eval(l, F, Y, k, n, dF);
    return 0;
  }
  mse_part(F, Y, count, l->c, dF, part, first);
  if (last) *loss = mse_sum(part, l->c);
  return 1;
}

/* ---- the loss kinds (issue 3) ----------------------------------------------
 * mse: L = c sum r^2,              r = F - Y,  dL/dF = 2c r,               d2L = 2c I
 * lp:  L = c sum |r|^p  (p >= 2),  dL/dF = c p |r|^{p-2} r,  d2L = c p (p-1) diag(|r|^{p-2})
 * ce:  L = c sum_i sum_k y_ki (lse(f_i) - f_ki),   lse(f) = log sum_k exp(f_k)
 *      = c sum_i -log softmax(f_i)_{y_i} for one-hot columns; for general
 *      non-negative columns with sum t_i = sum_k y_ki:
 *      dL/df_i = c (t_i s_i - y_i),  d2L/df_i^2 = c t_i (diag(s_i) - s_i s_i^T),
 *      s_i = softmax(f_i), computed as exp(f - lse) with lse = max + log sum
 *      exp(f - max) (no overflow).
 * The "half" reductions: mse 1/2, lp 1/p (so dL/dF = |r|^{p-2} r per sample);
 * cross-entropy has no natural half and refuses them (DS_EINPUT), as
 * config.h documents ("sum or mean only"). */

int ds_loss_setup(ds_loss *l, const ds_loss_spec *spec, int n) {
  memset(l, 0, sizeof *l);
  if (n < 1) return ds_fail(DS_EINPUT, "loss: needs n >= 1 samples (got %d)", n);
  int half = spec->reduction == DS_RED_HALF_SUM || spec->reduction == DS_RED_HALF_MEAN;
  int mean = spec->reduction == DS_RED_MEAN || spec->reduction == DS_RED_HALF_MEAN;
  if (spec->reduction < DS_RED_SUM || spec->reduction > DS_RED_HALF_MEAN)
    return ds_fail(DS_EINPUT, "loss: unknown reduction %d", (int)spec->reduction);
  double c = mean ? 1.0 / n : 1.0;
  switch (spec->type) {
  case DS_LOSS_MSE:
    l->p = 2.0;
    if (half) c *= 0.5;
    break;
  case DS_LOSS_LP:
    if (!(spec->p >= 2.0) || !isfinite(spec->p))
      return ds_fail(DS_EINPUT, "loss: lp needs a finite exponent p >= 2 (got %g)", spec->p);
    l->p = spec->p;
    if (half) c /= spec->p;
    break;
  case DS_LOSS_CE:
    if (half)
      return ds_fail(DS_EINPUT, "loss: cross-entropy takes reduction sum or mean, not a half "
                                "reduction");
    l->p = 0.0;
    break;
  default:
    return ds_fail(DS_EINPUT, "loss: unknown loss type %d", (int)spec->type);
  }
  l->type = spec->type;
  l->c = c;
  return DS_OK;
}

/* lp: entries in order into 8 partial sums (as mse) */
static double lp_eval(const double *F, const double *Y, size_t count, double p, double c,
                      double *dF) {
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  double cp = c * p;
  int p4 = p == 4.0;
  for (size_t k = 0; k < count; k++) {
    double r = F[k] - Y[k], a = fabs(r);
    double a2 = p4 ? a * a : pow(a, p - 2.0); /* |r|^{p-2} */
    part[k % 8] += a2 * a * a;
    if (dF) dF[k] = cp * a2 * r;
  }
  double sum = 0.0;
  for (int q = 0; q < 8; q++) sum += part[q];
  return c * sum;
}

/* softmax of column f (k entries) into s; returns lse(f) */
static double softmax_col(const double *f, int k, double *s) {
  double mx = f[0];
  for (int j = 1; j < k; j++) mx = f[j] > mx ? f[j] : mx;
  double sum = 0.0;
  for (int j = 0; j < k; j++) sum += exp(f[j] - mx);
  double lse = mx + log(sum);
  if (s)
    for (int j = 0; j < k; j++) s[j] = exp(f[j] - lse);
  return lse;
}

static double ce_eval(const double *F, const double *Y, int k, int n, double c, double *dF) {
  double sum = 0.0;
  for (int i = 0; i < n; i++) {
    const double *f = F + (size_t)i * k, *y = Y + (size_t)i * k;
    double *g = dF ? dF + (size_t)i * k : NULL;
    double lse = softmax_col(f, k, g); /* g = s */
    double li = 0.0, t = 0.0;
    for (int j = 0; j < k; j++) {
      if (y[j] != 0.0) li += y[j] * (lse - f[j]);
      t += y[j];
    }
    sum += li;
    if (g)
      for (int j = 0; j < k; j++) g[j] = c * (t * g[j] - y[j]);
  }
  return c * sum;
}

double ds_loss_eval(const ds_loss *l, const double *F, const double *Y, int k, int n,
                    double *dF) {
  size_t count = (size_t)k * n;
  switch (l->type) {
  case DS_LOSS_MSE: return ds_loss_mse(F, Y, count, l->c, dF);
  case DS_LOSS_LP:
    if (l->p == 2.0) return ds_loss_mse(F, Y, count, l->c, dF);
    return lp_eval(F, Y, count, l->p, l->c, dF);
  case DS_LOSS_CE: return ce_eval(F, Y, k, n, l->c, dF);
  default: return NAN;
  }
}

void ds_loss_hess_apply(const ds_loss *l, const double *F, const double *Y, int k, int n,
                        const double *V, double *out) {
  size_t count = (size_t)k * n;
  if (l->type == DS_LOSS_MSE || (l->type == DS_LOSS_LP && l->p == 2.0)) {
    double c2 = 2.0 * l->c;
    for (size_t q = 0; q < count; q++) out[q] = c2 * V[q];
  } else if (l->type == DS_LOSS_LP) {
    double cpp = l->c * l->p * (l->p - 1.0);
    int p4 = l->p == 4.0;
    for (size_t q = 0; q < count; q++) {
      double a = fabs(F[q] - Y[q]);
      out[q] = cpp * (p4 ? a * a : pow(a, l->p - 2.0)) * V[q];
    }
  } else if (l->type == DS_LOSS_CE) {
    for (int i = 0; i < n; i++) {
      const double *f = F + (size_t)i * k, *y = Y + (size_t)i * k, *v = V + (size_t)i * k;
      double *o = out + (size_t)i * k; /* holds s first */
      softmax_col(f, k, o);
      double t = 0.0, sv = 0.0;
      for (int j = 0; j < k; j++) t += y[j], sv += o[j] * v[j];
      double ct = l->c * t;
      for (int j = 0; j < k; j++) o[j] = ct * o[j] * (v[j] - sv);
    }
  } else {
    for (size_t q = 0; q < count; q++) out[q] = NAN;
  }
}
