/* cost.c -- a point's estimated cost in floating-point operations (used to
 * hand out the longest points first) and the estimated size of its
 * trajectory in the store (used to refuse oversized grids); its shape is
 * models.c's (ds_point_dims, the CNN's layer list). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_internal.h"
#include "dynsweep/data.h"
#include "dynsweep/diag.h" /* ds_diag_cnn_ntk_split_bytes */
#include "dynsweep/models.h"

#define DS_SPECTRA_LAYER_STATS 5 /* ||W||_F, ||W||_2, s1/s2, stable rank, tail ratio (diag.h) */

/* model.type cnn (include/dynsweep/cnn.h): parameters, multiply-adds of one
 * sample's forward pass (per conv C_out H_o W_o C_in s^2, per dense layer
 * rows cols), the activations a sample keeps (every layer's output but
 * flatten's, gap's and the readout's: 2 C H W a [conv, relu] pair), the
 * largest layer output and im2col patch (ds_cnn_layers_check on the layers
 * of model.net); 0 for a net plan refuses (sweep_check.c). */
typedef struct {
  double P, macs, act, big, col, outs, dag;
} cnn_shape;
static int cnn_shape_of(const ds_point_cfg *c, cnn_shape *s) {
  ds_cnn_net net;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  ds_cnn_cost k;
  int C, H, W;
  memset(s, 0, sizeof *s);
  ds_model_cnn_net(c, &net);
  ds_model_cnn_image(c, &C, &H, &W);
  int nl = ds_cnn_net_layers(&net, L, NULL, 0);
  if (nl < 0 || ds_cnn_layers_check(L, nl, C, H, W, c->data.d_out, &k, NULL, 0)) return 0;
  *s = (cnn_shape){k.params, k.macs, k.acts, k.big, k.col, k.outs, k.dag};
  return 1;
}

/* sum_l d_l * d_{l-1}: multiply-adds of one sample through the network (e2e:
 * the single d_out x d_in matrix; cnn: cnn_shape_of). */
static double cost_weights(const ds_point_cfg *c) {
  int dims[65];
  double w = 0;
  cnn_shape cs;
  if (c->model.type == DS_MODEL_CNN) return cnn_shape_of(c, &cs) ? cs.macs : 0;
  if (c->model.type == DS_MODEL_E2E) return (double)c->data.d_in * c->data.d_out;
  if (c->model.depth < 1 || c->model.depth > 64) return 0;
  ds_point_dims(c, dims);
  for (int l = 1; l <= c->model.depth; l++) w += (double)dims[l] * dims[l - 1];
  return w;
}

/* Records over a run: every-k records plus log-spaced ones (an upper bound;
 * the exact schedule is the worker's, ds_worker_record_step). */
static double cost_records(const ds_point_cfg *c) {
  double steps = (double)c->train.steps, r = 0;
  if (c->record.every > 0) r += floor(steps / (double)c->record.every) + 1;
  if (c->record.per_decade > 0) r += c->record.per_decade * log10(steps > 1 ? steps : 1) + 1;
  return r;
}

/* Samples per step: the minibatch when batch_size > 0, for every optimiser
 * (gd included: the worker minibatches whatever the update rule, point.c),
 * else the training set. */
static double cost_batch(const ds_point_cfg *c) {
  int b = c->optimizer.batch_size;
  if (b <= 0 || b > c->data.n_train) return c->data.n_train;
  return b;
}

/* Parameters: weights plus biases. */
double ds_point_nparams(const ds_point_cfg *c) {
  int dims[65];
  cnn_shape cs;
  if (c->model.type == DS_MODEL_CNN) return cnn_shape_of(c, &cs) ? cs.P : 0;
  double p = cost_weights(c);
  if (c->model.bias && c->model.type != DS_MODEL_E2E && c->model.depth >= 1 && c->model.depth <= 64) {
    ds_point_dims(c, dims);
    for (int l = 1; l <= c->model.depth; l++) p += dims[l];
  }
  return p;
}

/* Flops per parameter of the update beyond theta -= lr g. */
static double cost_update(ds_opt_kind k) {
  switch (k) {
  case DS_OPT_MOMENTUM:
  case DS_OPT_NESTEROV: return 2;
  case DS_OPT_ADAGRAD:
  case DS_OPT_RMSPROP: return 4;
  case DS_OPT_ADADELTA: return 6;
  case DS_OPT_ADAM: return 8;
  default: return 0;
  }
}

/* ---- record.spectra ---- */


/* Step 0 and the last step, the multiples of every in between, per_decade
 * log-spaced steps per decade, and on_loss_rise (not known in advance)
 * counted as one step in ten; at most steps + 1. */
double ds_cadence_evals(const ds_cadence *cad, int64_t steps) {
  if (!ds_cadence_on(cad)) return 0;
  double t = (double)steps, n = 2;
  if (cad->every > 0) n += floor((t - 1) / (double)cad->every);
  if (cad->per_decade > 0) n += cad->per_decade * log10(t > 1 ? t : 1);
  if (cad->on_loss_rise) n += floor((t - 1) / 10.0);
  return n < t + 1 ? n : t + 1;
}

/* Network shape for the diagnostics: e2e is the single d_out x d_in matrix. */
static int spec_dims(const ds_point_cfg *c, int *dims) {
  if (c->model.type == DS_MODEL_E2E) {
    dims[0] = c->data.d_in, dims[1] = c->data.d_out;
    return 1;
  }
  if (c->model.depth < 1 || c->model.depth > 64) return 0;
  ds_point_dims(c, dims);
  return c->model.depth;
}

static double dmin(double a, double b) { return a < b ? a : b; }

/* Flops of one evaluation of each diagnostic; G = one full-batch gradient. */
static double spectra_cost(const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  int dims[65], L = spec_dims(c, dims);
  if (L == 0) return 0;
  double n = c->data.n_train, W = cost_weights(c), P = ds_point_nparams(c);
  double G = 6.0 * n * W, total = 0;
  double d0 = dims[0], dL = dims[L], kn = dL * n;
  if (ds_cadence_on(&sp->layers)) { /* a dense SVD per layer */
    double f = 0;
    for (int l = 1; l <= L; l++) f += 4.0 * dims[l] * dims[l - 1] * dmin(dims[l], dims[l - 1]);
    total += ds_cadence_evals(&sp->layers, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->e2e)) { /* product W_N..W_1, its SVD, balancedness, residual on the PCs */
    double f = 4.0 * dL * d0 * dmin(dL, d0) + 2.0 * dL * d0 * d0;
    for (int l = 2; l <= L; l++) f += 2.0 * dims[l] * dims[l - 1] * d0;
    for (int j = 1; j < L; j++) f += 2.0 * dims[j] * dims[j] * (dims[j + 1] + dims[j - 1]);
    total += ds_cadence_evals(&sp->e2e, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->hessian)) /* iters HVPs (~3 gradients each) + full reorthogonalisation */
    total += ds_cadence_evals(&sp->hessian, c->train.steps) *
             (sp->lanczos_iters * 3.0 * G + 2.0 * sp->lanczos_iters * sp->lanczos_iters * P);
  if (ds_cadence_on(&sp->hessian_full)) /* P HVPs for the columns, then pdsyevd (~9 P^3) */
    total += ds_cadence_evals(&sp->hessian_full, c->train.steps) * (P * 3.0 * G + 9.0 * P * P * P);
  if (ds_cadence_on(&sp->ntk)) /* kn backward passes for J, K = J J^T, pdsyevd of K */
    total += ds_cadence_evals(&sp->ntk, c->train.steps) *
             (2.0 * n * W + kn * 4.0 * W + 2.0 * kn * kn * P + 9.0 * kn * kn * kn);
  if (ds_cadence_on(&sp->agop)) /* d_out input-gradient passes per sample, G accumulated */
    total += ds_cadence_evals(&sp->agop, c->train.steps) * (2.0 * n * W + kn * 4.0 * W + 2.0 * kn * d0 * d0);
  if (ds_cadence_on(&sp->activations)) { /* a forward pass, an SVD of each d_l x n activation matrix */
    double f = 2.0 * n * W;
    for (int l = 1; l < L; l++) f += 4.0 * dims[l] * n * dmin(dims[l], n);
    total += ds_cadence_evals(&sp->activations, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->escape)) /* a forward pass at the rescaled parameters */
    total += ds_cadence_evals(&sp->escape, c->train.steps) * (2.0 * n * W + 4.0 * P);
  if (ds_cadence_on(&sp->batch_ntk)) { /* the NTK of a b-sample batch: kb backward passes, K_b, its eigen */
    double b = c->optimizer.batch_size > 0 ? c->optimizer.batch_size : n, kb = dL * b;
    total += ds_cadence_evals(&sp->batch_ntk, c->train.steps) *
             (2.0 * b * W + kb * 4.0 * W + 2.0 * kb * kb * P + 9.0 * kb * kb * kb);
  }
  return total;
}

/* Bytes of one row of a series with ncols columns: step + values. */
static double row(double ncols) { return 8.0 + 8.0 * ncols; }

/* Store bytes of the diagnostics' series (as the worker names them). */
static double spectra_bytes(const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  int dims[65], L = spec_dims(c, dims);
  if (L == 0) return 0;
  double k = sp->top_k, d0 = dims[0], dL = dims[L];
  double kn = dL * c->data.n_train, total = 0;
  /* sv/W<l> (k each) and five per-layer statistics (L columns each) */
  total += ds_cadence_evals(&sp->layers, c->train.steps) * (L * row(k) + DS_SPECTRA_LAYER_STATS * row(L));
  total += ds_cadence_evals(&sp->e2e, c->train.steps) *
           (row(dmin(d0, dL)) + (L > 1 ? row(L - 1) : 0) + row(1) + row(d0));
  total += ds_cadence_evals(&sp->hessian, c->train.steps) * row(dmin(k, sp->lanczos_iters));
  total += ds_cadence_evals(&sp->hessian_full, c->train.steps) * row(ds_point_nparams(c));
  total += ds_cadence_evals(&sp->ntk, c->train.steps) *
           (row(dmin(k, kn)) + 2 * row(1) + (sp->nsplit ? 2 * row(sp->nsplit) : 0));
  total += ds_cadence_evals(&sp->agop, c->train.steps) * row(1);
  if (L > 1) total += ds_cadence_evals(&sp->activations, c->train.steps) * ((L - 1) * row(k) + row(L - 1));
  total += ds_cadence_evals(&sp->escape, c->train.steps) * row(1);
  total += ds_cadence_evals(&sp->batch_ntk, c->train.steps) * 2 * row(1);
  return total;
}

double ds_point_cost(const ds_point_cfg *c) {
  double w = cost_weights(c), rec = cost_records(c), steps = (double)c->train.steps;
  /* forward + backward ~ 6 flops per weight and sample; the linearised model
   * adds a Jacobian-vector product (x2), the quadratic model a second-order
   * term (x4); e2e adds an SVD of W_e per step */
  double approx = c->model.approx == DS_APPROX_LIN ? 2.0 : c->model.approx == DS_APPROX_QUAD ? 4.0 : 1.0;
  double step = 6.0 * cost_batch(c) * w;
  if (c->model.type == DS_MODEL_LINEAR && !c->model.bias && c->model.depth >= 2 &&
      c->model.depth <= 64 && approx == 1.0 && c->train.distributed != DS_DIST_ON) {
    /* issue 13: a bias-free linear net's step through its end-to-end product
     * when that is cheaper (ds_mlp_e2e_taken, src/nn/mlp.c): the net over the
     * d_0 columns of I, and F = P X, M = G X^T over the samples */
    double d0 = c->data.d_in, dL = c->data.d_out, e2e = 6.0 * d0 * w + 4.0 * cost_batch(c) * d0 * dL;
    if (e2e <= 0.75 * step) step = e2e;
  }
  double flops = steps * step * approx;
  flops += steps * cost_update(c->optimizer.type) * ds_point_nparams(c);
  if (c->model.type == DS_MODEL_E2E) {
    double m = c->data.d_out, n = c->data.d_in;
    flops += steps * 4.0 * m * n * (m < n ? m : n);
  }
  if (c->model.type == DS_MODEL_TANH && c->model.depth >= 2 && c->model.depth <= 64) {
    /* issue 13: a SLEEF tanh costs about 30 flops of time at the planning
     * rate (6 ns/value, docs/performance.md), its derivative a few more */
    int dims[65];
    double units = 0;
    ds_point_dims(c, dims);
    for (int l = 1; l < c->model.depth; l++) units += dims[l];
    flops += steps * 35.0 * cost_batch(c) * units * approx;
  }
  double per_rec = 0;
  if (c->record.series & DS_REC_TEST_LOSS) per_rec += 2.0 * c->data.n_test * w;
  /* a record of the train loss under minibatches needs a full-batch forward pass */
  if ((c->record.series & (DS_REC_LOSS | DS_REC_LOSS_GAP)) && cost_batch(c) < c->data.n_train)
    per_rec += 2.0 * c->data.n_train * w;
  if (c->record.series & DS_REC_LAYER_SV) {
    int dims[65];
    if (c->model.depth >= 1 && c->model.depth <= 64) {
      ds_point_dims(c, dims);
      for (int l = 1; l <= c->model.depth; l++) {
        double m = dims[l], n = dims[l - 1];
        per_rec += 4.0 * m * n * (m < n ? m : n); /* dense SVD */
      }
    }
  }
  return flops + rec * per_rec + spectra_cost(c);
}

double ds_point_store_bytes(const ds_point_cfg *c) {
  double rec = cost_records(c), per_rec = 0;
  unsigned s = c->record.series;
  int scalars = !!(s & DS_REC_LOSS) + !!(s & DS_REC_TEST_LOSS) + !!(s & DS_REC_GRAD_NORM) +
                !!(s & DS_REC_PARAM_NORM) + !!(s & DS_REC_LOSS_GAP) + !!(s & DS_REC_LR);
  per_rec += scalars * (8.0 + 8.0);                              /* step + value */
  if (s & DS_REC_LAYER_FRO) per_rec += 8.0 + 8.0 * c->model.depth; /* one row per layer set */
  if (s & DS_REC_LAYER_SV) per_rec += c->model.depth * (8.0 + 8.0 * c->record.top_k); /* sv/W<l> */
  return rec * per_rec + spectra_bytes(c);
}

/* ---- memory and team size (train.ranks_per_point: auto) ---- */

/* Optimiser state vectors of nparams each. */
static double mem_opt_state(ds_opt_kind k) {
  switch (k) {
  case DS_OPT_MOMENTUM:
  case DS_OPT_NESTEROV:
  case DS_OPT_ADAGRAD:
  case DS_OPT_RMSPROP: return 1;
  case DS_OPT_ADADELTA:
  case DS_OPT_ADAM: return 2;
  default: return 0;
  }
}

/* In doubles: theta, gradient and optimiser state (plus w0 for lin/quad);
 * the data; three buffers per layer of d_l x batch (pre-activation,
 * activation, backward) and the test forward pass; the SVD copy and
 * workspace of the largest layer; and for the diagnostics: the NTK Jacobian
 * (kn x P) and three kn x kn matrices (K, K0, eigenvectors), iters Lanczos
 * vectors of P, the full Hessian (two P x P), the AGOP (d_in x d_in). */
/* The NTK's J (src/diag/cnn.c) for kn = k n rows on one member of a team of
 * t on the split path: the figure the split tests against its budget
 * (ds_diag_cnn_ntk_split_bytes; 0: the split cannot be taken). */
static double cnn_split_bytes(double k, double n, double P, int t) {
  return ds_diag_cnn_ntk_split_bytes(t, (size_t)P, (int)n, (int)k);
}
/* What the NTK holds of J under the budget jbytes: the split (and its
 * partial K, kn^2) when it fits, else the blocked row path's rows
 * (ds_diag_cnn_ntk_matrix: all kn at once, or Ba + Bb >= 2 rows). */
static double cnn_j_bytes(double k, double n, double P, int t, double jbytes) {
  double kn = k * n, split = cnn_split_bytes(k, n, P, t);
  if (split > 0 && split <= jbytes) return split + 8.0 * kn * kn;
  double rows = floor(jbytes / (8.0 * P));
  if (rows < kn && rows < 2) rows = 2;
  return 8.0 * P * (rows < kn ? rows : kn);
}
/* The most an NTK of k n rows can use: the split when it can be taken, else
 * all of J (one block, nothing recomputed). */
static double cnn_j_need(double k, double n, double P, int t) {
  double split = cnn_split_bytes(k, n, P, t);
  return split > 0 ? split : 8.0 * k * n * P;
}

void ds_point_cnn_ntks(const ds_point_cfg *c, int *n_full, int *n_batch) {
  const ds_spectra_spec *sp = &c->record.spectra;
  int n = c->data.n_train, b = (int)cost_batch(c);
  *n_full = ds_cadence_on(&sp->ntk) || c->optimizer.lr_units == DS_LR_LAMBDA0 ? n : 0;
  *n_batch = ds_cadence_on(&sp->batch_ntk) || (ds_cadence_on(&sp->ntk) && b < n) ? b : 0;
}
static void cnn_ntks(const ds_point_cfg *c, double *n_full, double *n_batch) {
  int nf, nb;
  ds_point_cnn_ntks(c, &nf, &nb);
  *n_full = nf, *n_batch = nb;
}

/* A CNN point on one member of a team of t, in doubles, all but the NTK's J:
 * theta, gradient, optimiser state, the data and the net's work space (for
 * max(n_train, n_test) samples: cnnpoint.c) are on every member; only the
 * NTK's J and the AGOP's input gradients are split (src/worker/point.c,
 * src/diag/cnn.c). */
static double cnn_words_but_j(const ds_point_cfg *c, const cnn_shape *cs, int t) {
  const ds_spectra_spec *sp = &c->record.spectra;
  double n = c->data.n_train, nt = c->data.n_test, nmax = n > nt ? n : nt;
  double words = cs->P * (2.0 + mem_opt_state(c->optimizer.type)) +
                 (n + nt) * (c->data.d_in + c->data.d_out);
  /* diagnostics (src/diag/cnn.c): K, K_0, the eigenvectors; the AGOP and the
   * input gradients; a batch NTK's K */
  double kn = (double)c->data.d_out * n, d0 = c->data.d_in, b = cost_batch(c), bk = c->data.d_out * b;
  if (ds_cadence_on(&sp->ntk)) words += 3.0 * kn * kn;
  if (ds_cadence_on(&sp->agop)) words += 2.0 * d0 * d0 + d0 * (n / t + 1.0);
  if (ds_cadence_on(&sp->batch_ntk) || (ds_cadence_on(&sp->ntk) && b < n)) words += bk * bk;
  /* activations (src/diag/cnnact.c): the largest ReLU map of all n samples
   * (d x n, gathered on the team root) and the SVD's copy of it */
  if (ds_cadence_on(&sp->activations)) words += 2.0 * cs->big * n;
  /* a DAG block's edge mask and effective weights (cnn.c) */
  words += 2.0 * cs->dag;
  /* the R-operator's buffers, allocated for nmax samples: f_lin's and the
   * HVPs' (cnnrop.c rop_get: every layer's output, the input and 8 of the
   * largest map per sample; theta0 and the direction), f_quad's (cnnquad.c
   * quad_buf_new: two of every output and 10 of the largest map, a DAG's
   * gradient); the Hessian's Lanczos vectors or its P x P matrices, as for
   * an MLP (ds_point_mem_bytes) */
  double big = cs->big > d0 ? cs->big : d0;
  int hvp = ds_cadence_on(&sp->hessian) || ds_cadence_on(&sp->hessian_full);
  if (hvp || c->model.approx == DS_APPROX_LIN)
    words += nmax * (cs->outs + d0 + 8.0 * big) + 2.0 * cs->P;
  if (c->model.approx == DS_APPROX_QUAD)
    words += nmax * (2.0 * cs->outs + d0 + 10.0 * big) + 2.0 * cs->P + cs->dag;
  if (ds_cadence_on(&sp->hessian)) words += (sp->lanczos_iters + 2.0) * cs->P;
  if (ds_cadence_on(&sp->hessian_full)) words += 4.5 * cs->P * cs->P;
  return words + nmax * (cs->act + 2.0 * cs->big + 2.0 * c->data.d_out) + cs->col;
}

/* The rule (config.h): what a rank has less 1/8 of it (DS_CNN_JBYTES_MARGIN)
 * and less the rest of the point, at most what the largest of the point's
 * NTKs can use, at least two rows of J; 1 GiB when the rank's memory is not
 * known. */
static double cnn_jbytes(const ds_point_cfg *c, const cnn_shape *cs, int t, double has) {
  double k = c->data.d_out, nf, nb, b;
  cnn_ntks(c, &nf, &nb);
  if (nf == 0 && nb == 0) nf = c->data.n_train; /* none recorded: as for the full NTK */
  double need = nf > 0 ? cnn_j_need(k, nf, cs->P, t) : 0, need_b = nb > 0 ? cnn_j_need(k, nb, cs->P, t) : 0;
  if (need_b > need) need = need_b;
  if (!(has > 0) || isinf(has)) b = DS_CNN_JBYTES_UNKNOWN;
  else b = has * (1.0 - DS_CNN_JBYTES_MARGIN) - 8.0 * cnn_words_but_j(c, cs, t);
  if (b > need) b = need;
  if (b < 16.0 * cs->P) b = 16.0 * cs->P;
  return floor(b);
}

double ds_point_cnn_jbytes(const ds_point_cfg *c, int team, double rank_mem_bytes) {
  cnn_shape cs;
  if (c->model.type != DS_MODEL_CNN || !cnn_shape_of(c, &cs)) return DS_CNN_JBYTES_UNKNOWN;
  return cnn_jbytes(c, &cs, team < 1 ? 1 : team, rank_mem_bytes);
}

/* A CNN point on one member of a team of t whose ranks have `has` bytes:
 * the rest (cnn_words_but_j) and the J its NTKs hold under the budget
 * cnn_jbytes -- the larger of the two NTKs' J, which are never held at once
 * (ds_diag_cnn_ntk allocates J and frees it before it returns). */
static double cnn_mem_bytes(const ds_point_cfg *c, int t, double has) {
  cnn_shape cs;
  if (!cnn_shape_of(c, &cs)) return 0;
  double k = c->data.d_out, nf, nb, jb = cnn_jbytes(c, &cs, t, has), j = 0;
  cnn_ntks(c, &nf, &nb);
  if (nf > 0) j = cnn_j_bytes(k, nf, cs.P, t, jb);
  if (nb > 0 && cnn_j_bytes(k, nb, cs.P, t, jb) > j) j = cnn_j_bytes(k, nb, cs.P, t, jb);
  return 8.0 * cnn_words_but_j(c, &cs, t) + j;
}

double ds_point_rank_mem_bytes(const ds_point_cfg *c, int team, double rank_mem_bytes) {
  if (team < 1) team = 1;
  if (c->model.type == DS_MODEL_CNN) return cnn_mem_bytes(c, team, rank_mem_bytes);
  return ds_point_mem_bytes(c) / team;
}

double ds_point_mem_bytes(const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  if (c->model.type == DS_MODEL_CNN) return cnn_mem_bytes(c, 1, 0);
  int dims[65], L = spec_dims(c, dims);
  if (L == 0) return 0;
  double P = ds_point_nparams(c), n = c->data.n_train, nt = c->data.n_test;
  double d0 = dims[0], dL = dims[L], kn = dL * n, b = cost_batch(c);
  double words = P * (2.0 + mem_opt_state(c->optimizer.type) + (c->model.approx != DS_APPROX_NONE));
  words += (n + nt) * (d0 + dL);
  double act = 0, big = 0;
  for (int l = 0; l <= L; l++) act += dims[l];
  words += 3.0 * act * (b > nt ? b : nt);
  for (int l = 1; l <= L; l++) {
    double sz = (double)dims[l] * dims[l - 1];
    big = sz > big ? sz : big;
  }
  if ((c->record.series & DS_REC_LAYER_SV) || ds_cadence_on(&sp->layers)) words += 2.0 * big;
  if (ds_cadence_on(&sp->ntk)) words += kn * P + 3.0 * kn * kn;
  if (ds_cadence_on(&sp->hessian)) words += (sp->lanczos_iters + 2.0) * P;
  /* the full Hessian: the root's P x P, its distributed copy, pdsyevd's
   * eigenvectors (ScaLAPACK has no JOBZ='N') and its workspace (spectra/syev.c;
   * 4.0-4.2 P^2 above the process's own measured: tests/cnn_plan_mem.sh) */
  if (ds_cadence_on(&sp->hessian_full)) words += 4.5 * P * P;
  if (ds_cadence_on(&sp->agop)) words += 2.0 * d0 * d0;
  if (ds_cadence_on(&sp->batch_ntk) || (ds_cadence_on(&sp->ntk) && b < n)) words += dL * b * (P + dL * b);
  return 8.0 * words;
}

int ds_point_team_size(const ds_point_cfg *c, double rank_mem_bytes) {
  if (c->train.ranks_per_point > 0) return c->train.ranks_per_point;
  int t = 1;
  if (c->model.type == DS_MODEL_CNN) { /* most of it is on every member: a larger team only
                                          while it lowers the share */
    double m = cnn_mem_bytes(c, 1, rank_mem_bytes);
    while (rank_mem_bytes > 0 && m > rank_mem_bytes && t < (1 << 20)) {
      double next = cnn_mem_bytes(c, 2 * t, rank_mem_bytes);
      if (!(next < m)) break;
      t *= 2, m = next;
    }
    return t;
  }
  double m = ds_point_mem_bytes(c);
  while (rank_mem_bytes > 0 && m / t > rank_mem_bytes && t < (1 << 20)) t *= 2;
  return t;
}

/* ---- seconds: the shapes above with the probed rates (plan, submit --dry-run) ---- */

static double mem_opt_state(ds_opt_kind k);

/* Seconds to read a data file every point reads in full (and hashes):
 * measured ~19 ns per byte of gzip (Fashion-MNIST's 26 MB images: 0.5 s of
 * CPU per point, against a point of teacher data), ~3 ns per byte otherwise.
 * A directory (cifar10 / cifar100) counts the batch files it stands for
 * (ds_data_files; test: its test batch). */
static double t_file1(const char *path) {
  struct stat st;
  if (!path[0] || stat(path, &st)) return 0;
  size_t n = strlen(path);
  int gz = n > 3 && !strcmp(path + n - 3, ".gz");
  return (double)st.st_size * (gz ? 19e-9 : 3e-9);
}
static double t_file(const ds_data_spec *d, const char *path, int test) {
  struct stat st;
  if (!path[0] || stat(path, &st)) return 0;
  if (!S_ISDIR(st.st_mode)) return t_file1(path);
  char (*f)[DS_MAX_PATH] = NULL;
  int nf = 0;
  double t = 0;
  if (ds_data_files(d->kind, path, test, &f, &nf) == DS_OK)
    for (int i = 0; i < nf; i++) t += t_file1(f[i]);
  else
    ds_clear_error();
  free(f);
  return t;
}
static double t_data(const ds_data_spec *d) {
  return t_file(d, d->path, 0) + t_file(d, d->labels_path, 0) + t_file(d, d->test_path, 1) +
         t_file(d, d->test_labels_path, 1);
}

/* Seconds of the forward pass (fw = 1) or a whole step's GEMMs and passes
 * (fw = 0) on bb samples: per layer the forward GEMM, dW and dA (not on the
 * first layer) at the probed rate of the layer's shape (ds_probe_gemm_s),
 * and elementwise passes over the activations. */
static double t_pass(const ds_probe *pr, const int *dims, int L, double th, double bb, int fw) {
  double t = 0, act = 0;
  for (int l = 1; l <= L; l++) {
    double m = dims[l], k = dims[l - 1], w = sqrt(m * k);
    t += ds_probe_gemm_s(pr, m, bb, k, w, bb); /* Z = W A */
    if (!fw) t += ds_probe_gemm_s(pr, m, k, bb, w, bb) + (l > 1 ? ds_probe_gemm_s(pr, k, bb, m, w, bb) : 0);
    act += m;
  }
  /* tanh nets: SLEEF's tanh on every hidden activation, ~12 daxpy elements'
   * time each (6 ns against 0.3-0.5 ns: docs/performance.md, "tanh nets"),
   * and its derivative backward */
  double hid = act - dims[L];
  return t + (fw ? 2.0 : 4.0) * bb * act * pr->vec + th * (fw ? 12.0 : 14.0) * bb * hid * pr->vec;
}

/* Seconds of a diagnostic's GEMM of flops on an (a x a) by (a x k) shape. */
static double t_gemm(const ds_probe *pr, double flops, double a, double k) {
  return flops * ds_probe_gemm_spf(pr, a, k) + pr->call;
}

/* The NTK on ns samples (ntk.c): the cotangent sweep, per layer two dsyrk
 * (d_l (kn)^2 and d_{l-1} ns^2) and the kn x kn combination, then its
 * eigenpairs; plus the forward pass. */
static double t_ntk(const ds_probe *pr, const int *dims, int L, double th, double ns) {
  double kn = dims[L] * ns, t = t_pass(pr, dims, L, th, ns, 1) + ds_probe_syev_s(pr, kn);
  for (int l = 1; l <= L; l++) {
    double m = dims[l], k = dims[l - 1];
    t += t_gemm(pr, 2 * m * k * kn, sqrt(m * k), kn) + t_gemm(pr, m * kn * kn, kn, m) +
         t_gemm(pr, k * ns * ns, ns, k) + 2 * kn * kn * pr->vec;
  }
  return t;
}

static double t_spectra(const ds_point_cfg *c, const ds_probe *pr, const int *dims, int L, double th) {
  const ds_spectra_spec *sp = &c->record.spectra;
  double n = c->data.n_train, P = ds_point_nparams(c), total = 0;
  double d0 = dims[0], dL = dims[L], kn = dL * n, grad = t_pass(pr, dims, L, th, n, 0);
  if (ds_cadence_on(&sp->layers)) {
    double f = 0;
    for (int l = 1; l <= L; l++) f += ds_probe_svd_s(pr, dims[l], dims[l - 1]) + 2 * dims[l] * dims[l - 1] * pr->vec;
    total += ds_cadence_evals(&sp->layers, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->e2e)) {
    double f = ds_probe_svd_s(pr, dL, d0) + t_gemm(pr, 2 * dL * d0 * d0, d0, dL);
    for (int l = 2; l <= L; l++) f += t_gemm(pr, 2.0 * dims[l] * dims[l - 1] * d0, sqrt((double)dims[l] * dims[l - 1]), d0);
    for (int j = 1; j < L; j++)
      f += t_gemm(pr, 2.0 * dims[j] * dims[j] * dims[j + 1], dims[j], dims[j + 1]) +
           t_gemm(pr, 2.0 * dims[j] * dims[j] * dims[j - 1], dims[j], dims[j - 1]) + 2.0 * dims[j] * dims[j] * pr->vec;
    total += ds_cadence_evals(&sp->e2e, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->hessian))
    total += ds_cadence_evals(&sp->hessian, c->train.steps) *
             (sp->lanczos_iters * 3.0 * grad + (double)sp->lanczos_iters * sp->lanczos_iters * P * pr->vec);
  if (ds_cadence_on(&sp->hessian_full))
    total += ds_cadence_evals(&sp->hessian_full, c->train.steps) * (P * 3.0 * grad + ds_probe_syev_s(pr, P));
  if (ds_cadence_on(&sp->ntk)) total += ds_cadence_evals(&sp->ntk, c->train.steps) * t_ntk(pr, dims, L, th, n);
  if (ds_cadence_on(&sp->agop))
    total += ds_cadence_evals(&sp->agop, c->train.steps) *
             (t_pass(pr, dims, L, th, n, 1) + 2 * t_pass(pr, dims, L, th, kn, 1) + t_gemm(pr, 2 * kn * d0 * d0, d0, kn));
  if (ds_cadence_on(&sp->activations)) {
    double f = t_pass(pr, dims, L, th, n, 1);
    for (int l = 1; l < L; l++) f += ds_probe_svd_s(pr, dims[l], n);
    total += ds_cadence_evals(&sp->activations, c->train.steps) * f;
  }
  if (ds_cadence_on(&sp->escape))
    total += ds_cadence_evals(&sp->escape, c->train.steps) * (t_pass(pr, dims, L, th, n, 1) + 4 * P * pr->vec);
  if (ds_cadence_on(&sp->batch_ntk)) {
    double b = c->optimizer.batch_size > 0 ? c->optimizer.batch_size : n;
    total += ds_cadence_evals(&sp->batch_ntk, c->train.steps) * t_ntk(pr, dims, L, th, b);
  }
  return total;
}

/* A CNN point: the conv GEMMs of the forward (x1) and backward (x2) passes
 * at the probed rate of a (C_out x s^2 C_in) by patches shape, the update,
 * and the test passes of the records. */
static double cnn_seconds(const ds_point_cfg *c, const ds_probe *pr) {
  cnn_shape cs;
  if (!cnn_shape_of(c, &cs)) return 0;
  double steps = (double)c->train.steps, b = cost_batch(c), a = c->model.width;
  double k = (double)c->model.width * c->model.kernel * c->model.kernel;
  double step = t_gemm(pr, 6.0 * b * cs.macs, a, k) + 4.0 * b * cs.act * pr->vec +
                (2.0 + cost_update(c->optimizer.type) / 2) * cs.P * pr->vec + 8 * pr->call;
  double per_rec = 16 * pr->call;
  if (c->record.series & DS_REC_TEST_LOSS) per_rec += t_gemm(pr, 2.0 * c->data.n_test * cs.macs, a, k);
  if ((c->record.series & DS_REC_LOSS) && b < c->data.n_train)
    per_rec += t_gemm(pr, 2.0 * c->data.n_train * cs.macs, a, k);
  double fixed = 2e-3 + (c->data.n_train + c->data.n_test) * (c->data.d_in + c->data.d_out) * 4 * pr->vec +
                 4 * cs.P * pr->vec + t_data(&c->data);
  /* diagnostics (src/diag/cnn.c): the NTK from per-sample gradients (n
   * one-sample forwards, kn backwards; the backward ~2 forwards) and K = J J^T,
   * then its eigenpairs; the AGOP (one forward, k input-gradient passes, a
   * d x d DSYRK per output); the layer spectra (an SVD per weight matrix) */
  const ds_spectra_spec *sp = &c->record.spectra;
  double n = c->data.n_train, kn = (double)c->data.d_out * n, d0 = c->data.d_in, diag = 0;
  if (ds_cadence_on(&sp->ntk))
    diag += ds_cadence_evals(&sp->ntk, c->train.steps) *
            (t_gemm(pr, 2.0 * (n + 2.0 * kn) * cs.macs, a, k) + t_gemm(pr, kn * kn * cs.P, kn, cs.P) +
             ds_probe_syev_s(pr, kn));
  if (ds_cadence_on(&sp->batch_ntk)) {
    double bb = c->data.d_out * b;
    diag += ds_cadence_evals(&sp->batch_ntk, c->train.steps) *
            (t_gemm(pr, 2.0 * (b + 2.0 * bb) * cs.macs, a, k) + t_gemm(pr, bb * bb * cs.P, bb, cs.P) +
             ds_probe_syev_s(pr, bb));
  }
  if (ds_cadence_on(&sp->agop))
    diag += ds_cadence_evals(&sp->agop, c->train.steps) *
            (t_gemm(pr, 2.0 * (n + 2.0 * kn) * cs.macs, a, k) + t_gemm(pr, kn * d0 * d0, d0, n));
  if (ds_cadence_on(&sp->activations)) /* a forward pass, an SVD of each ReLU's d x n map (about
                                          * the net's activations: cs.act features in all) */
    diag += ds_cadence_evals(&sp->activations, c->train.steps) *
            (t_gemm(pr, 2.0 * n * cs.macs, a, k) + ds_probe_svd_s(pr, cs.act, n));
  if (ds_cadence_on(&sp->layers) || (c->record.series & DS_REC_LAYER_SV)) {
    double f = ds_probe_svd_s(pr, k, a) * c->model.depth + ds_probe_svd_s(pr, c->data.d_out, cs.P / c->data.d_out);
    diag += (ds_cadence_evals(&sp->layers, c->train.steps) +
             ((c->record.series & DS_REC_LAYER_SV) ? cost_records(c) : 0)) * f;
  }
  return fixed + steps * step + cost_records(c) * per_rec + diag;
}

double ds_point_seconds(const ds_point_cfg *c, const ds_probe *pr) {
  if (c->model.type == DS_MODEL_CNN) return cnn_seconds(c, pr);
  int dims[65], L = spec_dims(c, dims);
  if (L == 0) return 0;
  double steps = (double)c->train.steps, b = cost_batch(c), P = ds_point_nparams(c);
  double th = c->model.type == DS_MODEL_TANH;
  double approx = c->model.approx == DS_APPROX_LIN ? 2.0 : c->model.approx == DS_APPROX_QUAD ? 4.0 : 1.0;
  /* a step: its GEMMs and passes, the update (a daxpy-like pass over the
   * parameters per 2 flops of the optimiser, and the gradient's norm), and
   * the loop's own checks (a few calls' worth) */
  double step = t_pass(pr, dims, L, th, b, 0) * approx + (2.0 + cost_update(c->optimizer.type) / 2) * P * pr->vec +
                8 * pr->call;
  if (c->model.type == DS_MODEL_E2E) step += ds_probe_svd_s(pr, c->data.d_out, c->data.d_in);
  double per_rec = 16 * pr->call;
  if (c->record.series & DS_REC_TEST_LOSS) per_rec += t_pass(pr, dims, L, th, c->data.n_test, 1);
  if ((c->record.series & (DS_REC_LOSS | DS_REC_LOSS_GAP)) && b < c->data.n_train)
    per_rec += t_pass(pr, dims, L, th, c->data.n_train, 1);
  if ((c->record.series & DS_REC_LAYER_SV) && c->model.type != DS_MODEL_E2E)
    for (int l = 1; l <= L; l++) per_rec += ds_probe_svd_s(pr, dims[l], dims[l - 1]);
  /* per point: data (files read in full), initialisation, its results sent to rank 0 */
  double fixed = 2e-3 + (c->data.n_train + c->data.n_test) * (dims[0] + dims[L]) * 4 * pr->vec + 4 * P * pr->vec;
  fixed += t_data(&c->data);
  double t = fixed + steps * step + cost_records(c) * per_rec + t_spectra(c, pr, dims, L, th);
  /* checkpoints (`run --checkpoint-every`, 300 s by default): the state and
   * the series so far copied and sent to rank 0, ~10 ms of journal fsync */
  double state = P * (3.0 + mem_opt_state(c->optimizer.type)) + ds_point_store_bytes(c) / 8;
  return t + floor(t / 300) * (1e-2 + 4 * state * pr->vec);
}
