/* test_nn_products.c -- issue 3 derivatives against central finite
 * differences: gradients of the new paths (NTK parameterisation, fixed output
 * layer, lp and cross-entropy losses), Jacobian-vector products,
 * Hessian-vector products of the outputs and of the loss for every model
 * variant, and the linearised / quadratic (NQM) models. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynsweep/nn.h"

typedef struct {
  int act, bias, param, train_output, depth;
  int dims[8];
  int loss; /* DS_LOSS_* */
  double p;
} variant;

typedef struct {
  variant v;
  ds_mlp m;
  ds_mlp_work w;
  ds_loss l;
  int n;
  size_t P;
  double *th, *X, *Y;
} net;

static double *vec(size_t n) { return calloc(n ? n : 1, sizeof(double)); }

static double norm2(const double *a, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++) s += a[k] * a[k];
  return sqrt(s);
}

static double rel_err(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t k = 0; k < n; k++) {
    num += (a[k] - b[k]) * (a[k] - b[k]);
    den += b[k] * b[k] + a[k] * a[k];
  }
  return den > 0 ? sqrt(num / (0.5 * den)) : sqrt(num);
}

static const char *vname(const variant *v) {
  static char buf[128];
  static const char *const acts[] = {"linear", "relu", "tanh"}, *const params[] = {"std", "ntk", "mf"};
  snprintf(buf, sizeof buf, "%s bias %d %s train_out %d depth %d loss %d", acts[v->act], v->bias,
           params[v->param], v->train_output, v->depth, v->loss);
  return buf;
}

/* smallest |Z| over hidden pre-activations of the last forward */
static double zmin_hidden(const net *t) {
  double zmin = INFINITY;
  for (int l = 1; l < t->m.depth; l++)
    for (long i = 0; i < (long)t->m.dims[l] * t->n; i++) zmin = fmin(zmin, fabs(t->w.Z[l][i]));
  return zmin;
}

static void net_make(net *t, const variant *v, int n, unsigned seed) {
  memset(t, 0, sizeof *t);
  t->v = *v;
  t->n = n;
  CHECK(ds_mlp_setup(&t->m, v->act, v->bias, v->depth, v->dims, v->param, v->train_output) ==
            DS_OK,
        "setup");
  t->m.gain = v->act == DS_ACT_TANH ? 1.4142135623730951 : 1.0; /* the study's tanh(sqrt(2) z) */
  ds_mlp_work_init(&t->m, n, &t->w);
  ds_loss_spec ls = {(ds_loss_kind)v->loss, DS_RED_MEAN, v->p > 0 ? v->p : 2.0, 0};
  CHECK(ds_loss_setup(&t->l, &ls, n) == DS_OK, "loss setup");
  t->P = t->m.nparams;
  int d0 = v->dims[0], dL = v->dims[v->depth];
  t->th = vec(t->P);
  t->X = vec((size_t)d0 * n);
  t->Y = vec((size_t)dL * n);
  ds_rng r;
  ds_rng_init(&r, seed, (uint64_t)(v->act + 2 * v->bias + 4 * v->param + 8 * v->train_output),
              (uint32_t)v->depth, DS_STREAM_TEST);
  for (int tries = 0; tries < 2000; tries++) {
    double sc = v->param != DS_PARAM_STANDARD ? 1.0 : 0.0;
    for (int l = 1; l <= v->depth; l++) {
      double sd = sc ? 1.0 : 1.0 / sqrt(v->dims[l - 1]);
      for (int k = 0; k < v->dims[l] * v->dims[l - 1]; k++)
        t->th[t->m.w_off[l - 1] + k] = sd * ds_rng_normal(&r);
      if (v->bias)
        for (int i = 0; i < v->dims[l]; i++) t->th[t->m.b_off[l - 1] + i] = 0.3 * ds_rng_normal(&r);
    }
    for (int k = 0; k < d0 * n; k++) t->X[k] = ds_rng_normal(&r);
    if (v->loss == DS_LOSS_CE) {
      memset(t->Y, 0, (size_t)dL * n * sizeof *t->Y);
      for (int i = 0; i < n; i++) t->Y[(size_t)i * dL + ds_rng_u32(&r) % dL] = 1.0;
    } else {
      for (int k = 0; k < dL * n; k++) t->Y[k] = ds_rng_normal(&r);
    }
    ds_mlp_forward(&t->m, t->th, t->X, &t->w);
    if (v->act != DS_ACT_RELU || zmin_hidden(t) > 2e-2) break;
  }
  CHECK(v->act != DS_ACT_RELU || zmin_hidden(t) > 2e-2, "ReLU pre-activations off the kink");
}

static void net_free(net *t) {
  free(t->th);
  free(t->X);
  free(t->Y);
  ds_mlp_work_free(&t->w);
  ds_mlp_free(&t->m);
}

/* is parameter index k in the (fixed) output layer? */
static int in_fixed(const ds_mlp *m, size_t k) { return !m->train_output && k >= m->w_off[m->depth - 1]; }

/* gradient J^T G of <G, F> at theta (d_L x n cotangent G) */
static void grad_output(net *t, const double *th, const double *G, double *g) {
  ds_mlp_forward(&t->m, th, t->X, &t->w);
  memcpy(t->w.dF, G, (size_t)t->m.dims[t->m.depth] * t->n * sizeof *G);
  ds_mlp_backward(&t->m, th, &t->w, g);
}

/* ---- 1. gradients of the new paths ------------------------------------------------- */

static void check_grad(const variant *v) {
  net t;
  net_make(&t, v, 5, 11);
  double *g = vec(t.P), *gfd = vec(t.P);
  double loss = ds_mlp_loss_grad_l(&t.m, t.th, t.X, t.Y, &t.l, g, &t.w);
  CHECK(loss == ds_mlp_loss_l(&t.m, t.th, t.X, t.Y, &t.l, &t.w), "loss_grad_l == loss_l");
  const double h = 1e-6;
  for (size_t k = 0; k < t.P; k++) {
    double t0 = t.th[k];
    t.th[k] = t0 + h;
    double lp = ds_mlp_loss_l(&t.m, t.th, t.X, t.Y, &t.l, &t.w);
    t.th[k] = t0 - h;
    double lm = ds_mlp_loss_l(&t.m, t.th, t.X, t.Y, &t.l, &t.w);
    t.th[k] = t0;
    gfd[k] = in_fixed(&t.m, k) ? 0.0 : (lp - lm) / (2 * h);
  }
  int zero = 1;
  for (size_t k = 0; k < t.P; k++)
    if (in_fixed(&t.m, k)) zero &= g[k] == 0.0;
  CHECK(zero, "%s: fixed output layer has zero gradient", vname(v));
  double e = rel_err(g, gfd, t.P);
  CHECK(e < 1e-6, "%s: gradient vs FD rel err %.3g", vname(v), e);
  free(g);
  free(gfd);
  net_free(&t);
}

/* ---- 2. JVP, output HVP, loss HVP ----------------------------------------------------- */

static void check_products(const variant *v) {
  net t;
  net_make(&t, v, 4, 23);
  size_t P = t.P, nout = (size_t)t.m.dims[t.m.depth] * t.n;
  ds_rng r;
  ds_rng_init(&r, 5, 0, 0, DS_STREAM_TEST);
  double *dir = vec(P), *dir0 = vec(P), *u = vec(P), *JV = vec(nout), *JV2 = vec(nout),
         *Fp = vec(nout), *Fm = vec(nout), *fd = vec(nout > P ? nout : P), *G = vec(nout),
         *Hv = vec(P), *Hu = vec(P), *gp = vec(P), *gm = vec(P), *fdP = vec(P);
  for (size_t k = 0; k < P; k++) dir[k] = ds_rng_normal(&r), u[k] = ds_rng_normal(&r);
  for (size_t k = 0; k < nout; k++) G[k] = ds_rng_normal(&r);
  memcpy(dir0, dir, P * sizeof *dir);
  for (size_t k = 0; k < P; k++)
    if (in_fixed(&t.m, k)) dir0[k] = 0.0; /* what a fixed layer sees */
  CHECK(ds_mlp_work_products(&t.m, &t.w) == DS_OK, "products workspace");

  /* JVP vs FD of F */
  ds_mlp_jvp(&t.m, t.th, t.X, dir, &t.w, JV);
  const double h = 1e-5;
  double *th2 = vec(P);
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] + h * dir0[k];
  memcpy(Fp, ds_mlp_forward(&t.m, th2, t.X, &t.w), nout * sizeof *Fp);
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] - h * dir0[k];
  memcpy(Fm, ds_mlp_forward(&t.m, th2, t.X, &t.w), nout * sizeof *Fm);
  for (size_t k = 0; k < nout; k++) fd[k] = (Fp[k] - Fm[k]) / (2 * h);
  double e = rel_err(JV, fd, nout);
  CHECK(e < 1e-7, "%s: JVP vs FD rel err %.3g", vname(v), e);
  ds_mlp_jvp(&t.m, t.th, t.X, dir0, &t.w, JV2);
  CHECK(memcmp(JV, JV2, nout * sizeof *JV) == 0, "%s: JVP ignores a fixed layer's direction",
        vname(v));

  /* output HVP vs FD of J^T G */
  ds_mlp_hvp_output(&t.m, t.th, t.X, G, dir, &t.w, Hv);
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] + h * dir0[k];
  grad_output(&t, th2, G, gp);
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] - h * dir0[k];
  grad_output(&t, th2, G, gm);
  for (size_t k = 0; k < P; k++) fdP[k] = (gp[k] - gm[k]) / (2 * h);
  e = rel_err(Hv, fdP, P);
  CHECK(e < 1e-6, "%s: output HVP vs FD rel err %.3g (|Hv| %.3g)", vname(v), e, norm2(Hv, P));
  /* symmetry u^T H v = v^T H u (on the trained part) */
  double *u0 = vec(P);
  memcpy(u0, u, P * sizeof *u);
  for (size_t k = 0; k < P; k++)
    if (in_fixed(&t.m, k)) u0[k] = 0.0;
  ds_mlp_hvp_output(&t.m, t.th, t.X, G, u0, &t.w, Hu);
  double a = 0, b = 0, sc = 0;
  for (size_t k = 0; k < P; k++) a += u0[k] * Hv[k], b += dir0[k] * Hu[k], sc += fabs(u0[k] * Hv[k]);
  CHECK(fabs(a - b) <= 1e-12 * sc + 1e-300, "%s: output Hessian symmetric (%.17g vs %.17g)",
        vname(v), a, b);
  int zero = 1;
  for (size_t k = 0; k < P; k++)
    if (in_fixed(&t.m, k)) zero &= Hv[k] == 0.0;
  CHECK(zero, "%s: fixed layer part of the output HVP is 0", vname(v));

  /* loss HVP vs FD of the loss gradient */
  double L0 = ds_mlp_loss_hvp(&t.m, t.th, t.X, t.Y, &t.l, dir, &t.w, Hv);
  CHECK(L0 == ds_mlp_loss_l(&t.m, t.th, t.X, t.Y, &t.l, &t.w), "%s: loss_hvp returns the loss",
        vname(v));
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] + h * dir0[k];
  ds_mlp_loss_grad_l(&t.m, th2, t.X, t.Y, &t.l, gp, &t.w);
  for (size_t k = 0; k < P; k++) th2[k] = t.th[k] - h * dir0[k];
  ds_mlp_loss_grad_l(&t.m, th2, t.X, t.Y, &t.l, gm, &t.w);
  for (size_t k = 0; k < P; k++) fdP[k] = (gp[k] - gm[k]) / (2 * h);
  e = rel_err(Hv, fdP, P);
  CHECK(e < 1e-6, "%s: loss HVP vs FD rel err %.3g", vname(v), e);
  ds_mlp_loss_hvp(&t.m, t.th, t.X, t.Y, &t.l, u0, &t.w, Hu);
  a = b = sc = 0;
  for (size_t k = 0; k < P; k++) a += u0[k] * Hv[k], b += dir0[k] * Hu[k], sc += fabs(u0[k] * Hv[k]);
  CHECK(fabs(a - b) <= 1e-12 * sc + 1e-300, "%s: loss Hessian symmetric (%.17g vs %.17g)",
        vname(v), a, b);

  free(th2);
  free(u0);
  free(dir), free(dir0), free(u), free(JV), free(JV2), free(Fp), free(Fm), free(fd), free(G);
  free(Hv), free(Hu), free(gp), free(gm), free(fdP);
  net_free(&t);
}

/* ---- 3. f_lin / f_quad -------------------------------------------------------------- */

static void check_approx(const variant *v, int order) {
  net t;
  net_make(&t, v, 4, 31);
  size_t P = t.P, nout = (size_t)t.m.dims[t.m.depth] * t.n;
  ds_approx a;
  CHECK(ds_approx_init(&a, &t.m, order, t.th, t.n) == DS_OK, "approx init");
  double *F = vec(nout), *g = vec(P), *gref = vec(P), *gfd = vec(P), *th = vec(P);
  /* at theta0: exactly f, and the gradient is the network's */
  ds_approx_forward(&a, t.th, t.X, &t.w, F);
  const double *F0 = ds_mlp_forward(&t.m, t.th, t.X, &t.w);
  CHECK(memcmp(F, F0, nout * sizeof *F) == 0, "%s order %d: f_approx(theta0) == f bitwise",
        vname(v), order);
  double la = ds_approx_loss_grad(&a, t.th, t.X, t.Y, &t.l, g, &t.w);
  double lf = ds_mlp_loss_grad_l(&t.m, t.th, t.X, t.Y, &t.l, gref, &t.w);
  CHECK(la == lf, "%s order %d: loss at theta0", vname(v), order);
  double e = rel_err(g, gref, P);
  CHECK(e < 1e-14, "%s order %d: gradient at theta0 = network gradient (rel %.3g)", vname(v),
        order, e);
  /* away from theta0: gradient vs FD of the approximate model's own loss */
  ds_rng r;
  ds_rng_init(&r, 9, (uint64_t)order, 0, DS_STREAM_TEST);
  for (size_t k = 0; k < P; k++) th[k] = t.th[k] + (in_fixed(&t.m, k) ? 0.0 : 0.3 * ds_rng_normal(&r));
  ds_approx_loss_grad(&a, th, t.X, t.Y, &t.l, g, &t.w);
  const double h = 1e-6;
  for (size_t k = 0; k < P; k++) {
    if (in_fixed(&t.m, k)) {
      gfd[k] = 0.0;
      continue;
    }
    double t0 = th[k];
    th[k] = t0 + h;
    ds_approx_forward(&a, th, t.X, &t.w, F);
    double lp = ds_loss_eval(&t.l, F, t.Y, t.m.dims[t.m.depth], t.n, NULL);
    th[k] = t0 - h;
    ds_approx_forward(&a, th, t.X, &t.w, F);
    double lm = ds_loss_eval(&t.l, F, t.Y, t.m.dims[t.m.depth], t.n, NULL);
    th[k] = t0;
    gfd[k] = (lp - lm) / (2 * h);
  }
  e = rel_err(g, gfd, P);
  CHECK(e < 1e-6, "%s order %d: approx gradient vs FD rel err %.3g", vname(v), order, e);
  free(F), free(g), free(gref), free(gfd), free(th);
  ds_approx_free(&a);
  net_free(&t);
}

/* depth-2 linear net: f is quadratic in theta, so f_quad == f everywhere
 * (and its gradient is the network's); a depth-1 linear net is linear in
 * theta, so f_lin == f. */
static void check_exactness(int depth, int order, int bias, int param) {
  variant v = {DS_ACT_LINEAR, bias, param, 1, depth, {5, 7, 3}, DS_LOSS_MSE, 0};
  if (depth == 1) v.dims[1] = 3;
  net t;
  net_make(&t, &v, 6, 41);
  size_t P = t.P, nout = (size_t)t.m.dims[depth] * t.n;
  ds_approx a;
  ds_approx_init(&a, &t.m, order, t.th, t.n);
  double *th = vec(P), *F = vec(nout), *g = vec(P), *gref = vec(P);
  ds_rng r;
  ds_rng_init(&r, 77, (uint64_t)depth, 0, DS_STREAM_TEST);
  for (size_t k = 0; k < P; k++) th[k] = t.th[k] + 2.0 * ds_rng_normal(&r); /* far away */
  ds_approx_forward(&a, th, t.X, &t.w, F);
  const double *Ff = ds_mlp_forward(&t.m, th, t.X, &t.w);
  double e = rel_err(F, Ff, nout);
  CHECK(e < 1e-14, "depth %d linear bias %d param %d: f_%s == f everywhere (rel %.3g)", depth,
        bias, param, order == 2 ? "quad" : "lin", e);
  ds_approx_loss_grad(&a, th, t.X, t.Y, &t.l, g, &t.w);
  ds_mlp_loss_grad_l(&t.m, th, t.X, t.Y, &t.l, gref, &t.w);
  e = rel_err(g, gref, P);
  CHECK(e < 1e-13, "depth %d linear: approx gradient == network gradient (rel %.3g)", depth, e);
  free(th), free(F), free(g), free(gref);
  ds_approx_free(&a);
  net_free(&t);
}

/* ---- driver -------------------------------------------------------------------------- */

static void all_variants(void) {
  static const int dims3[] = {4, 6, 5, 3};
  for (int act = 0; act <= 1; act++)
    for (int bias = 0; bias <= 1; bias++)
      for (int param = 0; param <= 1; param++)
        for (int tout = 0; tout <= 1; tout++)
          for (int loss = 0; loss <= 2; loss++) {
            variant v = {act, bias, param, tout, 3, {0}, loss, loss == DS_LOSS_LP ? 4.0 : 0};
            memcpy(v.dims, dims3, sizeof dims3);
            check_grad(&v);
            check_products(&v);
            if (loss == DS_LOSS_MSE || (act == 1 && bias == 1)) {
              check_approx(&v, 1);
              check_approx(&v, 2);
            }
          }
  /* shallow and deeper nets, other losses */
  static const int d1[] = {4, 3}, d2[] = {3, 8, 2}, d5[] = {3, 6, 4, 5, 7, 2};
  for (int act = 0; act <= 1; act++)
    for (int tout = 0; tout <= 1; tout++) {
      variant v1 = {act, 1, 1, tout, 1, {0}, DS_LOSS_LP, 4.0};
      memcpy(v1.dims, d1, sizeof d1);
      variant v2 = {act, 0, 1, tout, 2, {0}, DS_LOSS_CE, 0};
      memcpy(v2.dims, d2, sizeof d2);
      variant v5 = {act, 1, act, tout, 5, {0}, DS_LOSS_MSE, 0};
      memcpy(v5.dims, d5, sizeof d5);
      const variant *vs[] = {&v1, &v2, &v5};
      for (int i = 0; i < 3; i++) {
        check_grad(vs[i]);
        check_products(vs[i]);
        check_approx(vs[i], 2);
      }
    }
  variant lp3 = {1, 1, 0, 1, 3, {4, 6, 5, 3}, DS_LOSS_LP, 3.0}; /* non-integer path of pow */
  check_grad(&lp3);
  check_products(&lp3);
  for (int bias = 0; bias <= 1; bias++)
    for (int param = 0; param <= 1; param++) {
      check_exactness(2, 2, bias, param);
      check_exactness(1, 1, bias, param);
    }
}

/* issue 13: tanh nets (gain sqrt 2) of depth 2..4, with and without bias,
 * under every parameterisation (standard, ntk, meanfield): gradients, JVP,
 * output and loss HVPs (with the tanh'' terms) and f_lin / f_quad against
 * finite differences. */
static void tanh_variants(void) {
  static const int dims[3][5] = {{5, 7, 1}, {4, 6, 5, 2}, {3, 5, 4, 6, 2}};
  for (int depth = 2; depth <= 4; depth++)
    for (int bias = 0; bias <= 1; bias++)
      for (int param = 0; param <= 2; param++)
        for (int loss = 0; loss <= 2; loss += 2) {
          variant v = {DS_ACT_TANH, bias, param, 1, depth, {0}, loss, 0};
          memcpy(v.dims, dims[depth - 2], sizeof dims[0]);
          if (loss == DS_LOSS_CE && depth == 2) continue; /* one output */
          check_grad(&v);
          check_products(&v);
          check_approx(&v, 1);
          check_approx(&v, 2);
        }
  variant fixed = {DS_ACT_TANH, 1, DS_PARAM_MEANFIELD, 0, 3, {4, 6, 5, 2}, DS_LOSS_MSE, 0};
  check_grad(&fixed);
  check_products(&fixed);
}

/* Mean field scales: hidden W a / sqrt(fan_in), output W a / fan_in; the tanh
 * forward is the SLEEF kernel, within 1 ulp-ish of libm, and a column's value
 * does not depend on how many samples are evaluated with it (bitwise). */
static void check_meanfield_tanh_forward(void) {
  int dims[] = {3, 4, 1}, n = 7;
  ds_mlp m;
  CHECK(ds_mlp_setup(&m, DS_ACT_TANH, 0, 2, dims, DS_PARAM_MEANFIELD, 1) == DS_OK, "setup");
  m.gain = sqrt(2.0);
  double th[16], X[21];
  ds_rng r;
  ds_rng_init(&r, 4, 0, 0, DS_STREAM_TEST);
  for (int k = 0; k < 16; k++) th[k] = ds_rng_normal(&r);
  for (int k = 0; k < 21; k++) X[k] = 2.0 * ds_rng_normal(&r);
  ds_mlp_work w, w1;
  ds_mlp_work_init(&m, n, &w);
  ds_mlp_work_init(&m, 1, &w1);
  const double *F = ds_mlp_forward(&m, th, X, &w);
  double emax = 0;
  int same = 1;
  for (int i = 0; i < n; i++) {
    double f = 0;
    for (int j = 0; j < 4; j++) {
      double z = 0;
      for (int q = 0; q < 3; q++) z += th[j + 4 * q] * X[q + 3 * i];
      f += th[12 + j] * tanh(sqrt(2.0) * z / sqrt(3.0));
    }
    f /= 4.0; /* 1/sqrt(4) twice */
    emax = fmax(emax, fabs(F[i] - f) / fmax(fabs(f), 1e-300));
    same &= ds_mlp_forward(&m, th, X + 3 * i, &w1)[0] == F[i];
  }
  CHECK(emax < 1e-14, "meanfield tanh forward vs libm by hand: rel %.3g", emax);
  CHECK(same, "a sample's output is bitwise the same evaluated alone or among %d", n);
  CHECK(ds_mlp_alpha(&m, 1) == 1.0 / sqrt(3.0) && ds_mlp_alpha(&m, 2) == 0.25, "alphas %g %g",
        ds_mlp_alpha(&m, 1), ds_mlp_alpha(&m, 2));
  printf("tanh kernel: %s\n", ds_nn_tanh_kernel());
  ds_mlp_work_free(&w);
  ds_mlp_work_free(&w1);
  ds_mlp_free(&m);
}

/* the old mse entry points are wrappers: bitwise the generic path */
static void check_wrappers(void) {
  variant v = {1, 1, 0, 1, 3, {4, 6, 5, 3}, DS_LOSS_MSE, 0};
  net t;
  net_make(&t, &v, 7, 3);
  double *g1 = vec(t.P), *g2 = vec(t.P);
  const double cs[] = {1.0, 0.5, 1.0 / 7, 0.5 / 7};
  for (int i = 0; i < 4; i++) {
    ds_loss l = {DS_LOSS_MSE, 2.0, cs[i]};
    double a = ds_mlp_loss_grad(&t.m, t.th, t.X, t.Y, cs[i], g1, &t.w);
    double b = ds_mlp_loss_grad_l(&t.m, t.th, t.X, t.Y, &l, g2, &t.w);
    CHECK(a == b && memcmp(g1, g2, t.P * sizeof *g1) == 0, "mse wrapper bitwise (c = %g)", cs[i]);
    CHECK(ds_mlp_loss(&t.m, t.th, t.X, t.Y, cs[i], &t.w) == a, "loss wrapper");
    /* lp with p = 2 is mse */
    ds_loss l2 = {DS_LOSS_LP, 2.0, cs[i]};
    CHECK(ds_mlp_loss_grad_l(&t.m, t.th, t.X, t.Y, &l2, g2, &t.w) == a &&
              memcmp(g1, g2, t.P * sizeof *g1) == 0,
          "lp p=2 == mse");
  }
  /* NTK with dims all 1 is the standard net */
  free(g1), free(g2);
  net_free(&t);
}

int main(void) {
  all_variants();
  check_wrappers();
  tanh_variants();
  check_meanfield_tanh_forward();
  return ds_check_report("test_nn_products");
}
