/* sweep_check.c -- the sweep file's cross-field checks: on the base
 * configuration and on every grid combination (shapes, file data, model,
 * labels, loss and optimizer, record.spectra, distributed training, map
 * sweeps, store size). Part of sweep.c's parser (sweep_internal.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dynsweep/data.h"
#include "dynsweep/models.h"
#include "dynsweep/util.h"
#include "sweep_internal.h"

/* Rank constraint for one combo; the message points at whatever made it fail. */
static int sw_check_rank(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  int m = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  if (c->data.rank <= m) return DS_OK;
  int ri = ds_opt_index(ds_opt_find("data.rank"));
  int ii = ds_opt_index(ds_opt_find("data.d_in")), oi = ds_opt_index(ds_opt_find("data.d_out"));
  int bm = x->s->base.data.d_in < x->s->base.data.d_out ? x->s->base.data.d_in : x->s->base.data.d_out;
  int line = x->sline[ri], col = x->scol[ri];
  if (x->axis_of[ri] >= 0) {
    int a = x->axis_of[ri];
    line = x->vline[a][idx[a]], col = x->vcol[a][idx[a]];
  } else if (x->s->base.data.rank <= bm) {
    /* the base was fine: an axis on d_in or d_out made min(d_in, d_out) smaller */
    int a = c->data.d_in == m && x->axis_of[ii] >= 0 ? x->axis_of[ii] : x->axis_of[oi];
    if (a >= 0) {
      return sw_err(x, x->vline[a][idx[a]], x->vcol[a][idx[a]],
                    "grid.%s: value %s makes min(data.d_in, data.d_out) = %d smaller than data.rank "
                    "= %d; data.rank must be <= min(d_in, d_out)", x->s->axes[a].name,
                    x->s->axes[a].text[idx[a]], m, c->data.rank);
    }
  }
  return sw_err(x, line, col, "data.rank: must be <= min(data.d_in, data.d_out) = %d, got %d", m,
                c->data.rank);
}

static int sw_check_record(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  if (c->record.every > 0 || c->record.per_decade > 0) return DS_OK;
  int ei = ds_opt_index(ds_opt_find("record.every"));
  int pi = ds_opt_index(ds_opt_find("record.per_decade"));
  int line = 1, col = 1;
  if (x->axis_of[pi] >= 0) line = x->vline[x->axis_of[pi]][idx[x->axis_of[pi]]], col = x->vcol[x->axis_of[pi]][idx[x->axis_of[pi]]];
  else if (x->axis_of[ei] >= 0) line = x->vline[x->axis_of[ei]][idx[x->axis_of[ei]]], col = x->vcol[x->axis_of[ei]][idx[x->axis_of[ei]]];
  else if (x->set[pi]) line = x->sline[pi], col = x->scol[pi];
  else if (x->set[ei]) line = x->sline[ei], col = x->scol[ei];
  return sw_err(x, line, col,
                "record: record.every and record.per_decade are both 0, so nothing would be "
                "recorded; set at least one > 0 (e.g. every: 10)");
}

/* ---- cross-field checks --------------------------------------------------- */

#define SW_AT(...) ((const char *const[]){__VA_ARGS__, NULL})

static int sw_opt_i(const char *path) { return ds_opt_index(ds_opt_find(path)); }

/* Option given in the file (section or grid axis). */
static int sw_explicit(const sw_ctx *x, const char *path) {
  int oi = sw_opt_i(path);
  return x->set[oi] || x->axis_of[oi] >= 0;
}

/* A cross-field message points at the first of the options involved (paths)
 * that is a grid axis (the value of this point), else at the first one given
 * in the file, else at its section; an axis value is named in the message. */
static int sw_xerr(const sw_ctx *x, const int *idx, const char *const *paths, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int sw_xerr(const sw_ctx *x, const int *idx, const char *const *paths, const char *fmt, ...) {
  char msg[1800], at[200] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int line = 0, col = 0;
  for (int i = 0; paths[i] && !line; i++) {
    int a = x->axis_of[sw_opt_i(paths[i])];
    if (a >= 0 && idx) {
      line = x->vline[a][idx[a]], col = x->vcol[a][idx[a]];
      snprintf(at, sizeof at, " (at grid.%s = %s)", x->s->axes[a].name, x->s->axes[a].text[idx[a]]);
    }
  }
  for (int i = 0; paths[i] && !line; i++) {
    int oi = sw_opt_i(paths[i]);
    if (x->set[oi]) line = x->sline[oi], col = x->scol[oi];
  }
  for (int i = 0; paths[i] && !line; i++) {
    for (int j = 0; j < 6; j++) {
      size_t l = strlen(sw_sections[j]);
      if (!strncmp(paths[i], sw_sections[j], l) && paths[i][l] == '.' && x->secline[j])
        line = x->secline[j], col = x->seccol[j];
    }
  }
  if (!line) line = 1, col = 1;
  return sw_err(x, line, col, "%s%s", msg, at);
}

static const char *sw_choice(const char *path, int v) {
  return ds_opt_find(path)->choices[v];
}

/* Explicit d_in/d_out against a fixed-shape kind (before sw_derive overrides them). */
static int sw_check_shape(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  int din, dout, dmin;
  const char *kind = sw_choice("data.kind", c->data.kind);
  sw_kind_shape(c->data.kind, &din, &dout, &dmin);
  if (din && sw_explicit(x, "data.d_in") && c->data.d_in != din)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind"),
                   "data.d_in: data.kind %s has d_in = %d, got %d; omit data.d_in (the kind sets it)",
                   kind, din, c->data.d_in);
  if (dout && sw_explicit(x, "data.d_out") && c->data.d_out != dout)
    return sw_xerr(x, idx, SW_AT("data.d_out", "data.kind"),
                   "data.d_out: data.kind %s has d_out = %d, got %d; omit data.d_out (the kind sets it)",
                   kind, dout, c->data.d_out);
  if (c->data.d_in < dmin)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind"),
                   "data.d_in: data.kind %s needs d_in >= %d, got %d", kind, dmin, c->data.d_in);
  if (c->data.kind == DS_DATA_IMAGE_RANK2 && ds_data_image_side(c->data.d_in) == 0) {
    int s = (int)floor(sqrt((double)c->data.d_in));
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind"),
                   "data.d_in: data.kind image_rank2 is a 1 x s x s image, so d_in must be a square "
                   "(%d, %d, ...), got %d", s * s, (s + 1) * (s + 1), c->data.d_in);
  }
  return DS_OK;
}

/* Fields of a data spec that ds_data_probe's answer depends on. */
static int sw_probe_same(const ds_data_spec *a, const ds_data_spec *b) {
  return a->kind == b->kind && !strcmp(a->path, b->path) && !strcmp(a->labels_path, b->labels_path) &&
         !strcmp(a->test_path, b->test_path) && !strcmp(a->test_labels_path, b->test_labels_path) &&
         a->nclasses == b->nclasses &&
         !memcmp(a->classes, b->classes, (size_t)a->nclasses * sizeof a->classes[0]) &&
         a->labels == b->labels && a->test_fraction == b->test_fraction &&
         a->libsvm_target_after_semicolon == b->libsvm_target_after_semicolon &&
         a->cifar100_coarse == b->cifar100_coarse;
}

/* ds_data_probe with a small cache (grid points mostly share one data set). */
static int sw_probe(sw_ctx *x, const int *idx, const ds_data_spec *d, int *din, int *dout, int *avail) {
  for (int i = 0; i < x->nprobe; i++) {
    if (sw_probe_same(&x->probe_key[i], d)) {
      *din = x->probe_din[i], *dout = x->probe_dout[i], *avail = x->probe_avail[i];
      return DS_OK;
    }
  }
  int rc = ds_data_probe(d, din, dout, avail);
  if (rc != DS_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ds_errmsg());
    sw_xerr(x, idx, SW_AT("data.path", "data.kind"), "data.path: %s", msg);
    return rc == DS_ENOMEM ? rc : DS_EINPUT;
  }
  int k = x->nprobe < SW_PROBE_CACHE ? x->nprobe++ : SW_PROBE_CACHE - 1;
  x->probe_key[k] = *d;
  x->probe_din[k] = *din, x->probe_dout[k] = *dout, x->probe_avail[k] = *avail;
  return DS_OK;
}

/* File data: the files named, and the shape and size the probe reports. */
static int sw_check_file_data(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  const char *kind = sw_choice("data.kind", d->kind);
  if (!sw_is_file_kind(d->kind)) return DS_OK;
  if (!d->path[0])
    return sw_xerr(x, idx, SW_AT("data.kind", "data.path"),
                   "data.kind: %s needs data.path (the data file)", kind);
  if (d->kind == DS_DATA_IDX && !d->labels_path[0])
    return sw_xerr(x, idx, SW_AT("data.kind", "data.labels_path"),
                   "data.kind: idx needs data.labels_path (the IDX labels file)");
  if (d->kind == DS_DATA_IDX && d->test_path[0] && !d->test_labels_path[0])
    return sw_xerr(x, idx, SW_AT("data.test_path", "data.kind"),
                   "data.test_path: idx test images need data.test_labels_path too");
  if (x->flags & DS_SWEEP_NO_FILES) return DS_OK;
  int din, dout, avail;
  DS_TRY(sw_probe(x, idx, d, &din, &dout, &avail));
  if (d->d_in != din)
    return sw_xerr(x, idx, SW_AT("data.d_in", "data.kind", "data.labels", "data.path"),
                   "data.d_in: the data file '%s' gives d_in = %d, got %d; omit data.d_in for file data "
                   "(and do not mix data sets of different shapes in one sweep)",
                   x->given[sw_opt_i("data.path")], din, d->d_in);
  if (d->d_out != dout)
    return sw_xerr(x, idx, SW_AT("data.d_out", "data.labels", "data.classes", "data.kind", "data.path"),
                   "data.d_out: the data file '%s' with data.labels %s gives d_out = %d, got %d; omit "
                   "data.d_out for file data (and do not sweep options that change it)",
                   x->given[sw_opt_i("data.path")], sw_choice("data.labels", d->labels), dout, d->d_out);
  if (d->n_train > avail)
    return sw_xerr(x, idx, SW_AT("data.n_train", "data.path"),
                   "data.n_train: %d training samples requested but '%s' has only %d available",
                   d->n_train, x->given[sw_opt_i("data.path")], avail);
  return DS_OK;
}

static int sw_check_model(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_model_spec *m = &c->model;
  if (m->nwidths > 0 && m->nwidths != m->depth - 1)
    return sw_xerr(x, idx, SW_AT("model.widths", "model.depth"),
                   "model.widths: has %d entries but model.depth = %d needs depth-1 = %d hidden widths",
                   m->nwidths, m->depth, m->depth - 1);
  if (m->type == DS_MODEL_E2E && m->bias)
    return sw_xerr(x, idx, SW_AT("model.type", "model.bias"),
                   "model.type: e2e has no biases; set model.bias: false");
  if (m->approx != DS_APPROX_NONE && m->type == DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT("model.approx", "model.type"),
                   "model.approx: %s needs model.type linear or relu, got e2e",
                   sw_choice("model.approx", m->approx));
  int dims[65], minw = INT32_MAX;
  ds_point_dims(c, dims);
  for (int l = 1; l < m->depth; l++)
    if (dims[l] < minw) minw = dims[l];
  int r = c->data.d_in < c->data.d_out ? c->data.d_in : c->data.d_out;
  /* data dims of a file kind are known only when the file was read */
  int dims_known = !((x->flags & DS_SWEEP_NO_FILES) && sw_is_file_kind(c->data.kind));
  if (m->init == DS_INIT_BALANCED && m->depth >= 2 && minw < r && dims_known)
    return sw_xerr(x, idx, SW_AT("model.init", "model.width", "model.widths", "model.depth", "data.d_in",
                                 "data.d_out"),
                   "model.init: balanced needs every hidden width >= min(data.d_in, data.d_out) = %d, "
                   "but the smallest is %d", r, minw);
  if (m->gain != 1.0 && m->type != DS_MODEL_TANH && m->type != DS_MODEL_RELU)
    return sw_xerr(x, idx, SW_AT("model.gain", "model.type"),
                   "model.gain: applies to tanh nets (tanh(gain z)) and ReLU nets (gain relu(z)), "
                   "got model.type %s; remove model.gain or use model.type tanh or relu",
                   sw_choice("model.type", m->type));
  if (m->gain != 1.0 && m->type == DS_MODEL_RELU && m->bias)
    return sw_xerr(x, idx, SW_AT("model.gain", "model.bias"),
                   "model.gain: a ReLU net's gain is applied as a factor of its hidden layers' "
                   "weights (gain relu(W a) = relu(gain W a)), which is not gain relu(W a + b) "
                   "once there are biases; use model.bias: false with model.gain, or gain 1");
  if (m->init_offset != 0.0 && (m->type == DS_MODEL_E2E || m->init == DS_INIT_FILE))
    return sw_xerr(x, idx, SW_AT("model.init_offset", "model.init", "model.type"),
                   "model.init_offset: not applied to %s; use a drawn initialisation of a "
                   "network (model.type linear, relu or tanh)",
                   m->type == DS_MODEL_E2E ? "model.type e2e" : "weights from a file (init: file)");
  if (m->symmetric && m->depth != 2)
    return sw_xerr(x, idx, SW_AT("model.symmetric", "model.depth"),
                   "model.symmetric: needs model.depth = 2, got %d", m->depth);
  if (m->symmetric && dims[1] % 2)
    return sw_xerr(x, idx, SW_AT("model.symmetric", "model.width", "model.widths"),
                   "model.symmetric: needs an even hidden width (units come in +/- pairs), got %d", dims[1]);
  if (m->init == DS_INIT_FILE && !m->init_file[0])
    return sw_xerr(x, idx, SW_AT("model.init", "model.init_file"),
                   "model.init: file needs model.init_file (an HDF5 file with W1..W%d)", m->depth);
  /* init_scale is not applied to weights from a file; refused unless model.init
   * is an axis, where it scales the other initialisations (docs/sweep-spec.md) */
  if (m->init == DS_INIT_FILE && m->init_scale != 1.0 && x->axis_of[sw_opt_i("model.init")] < 0) {
    char v[64];
    ds_fmt_double(m->init_scale, v, sizeof v);
    return sw_xerr(x, idx, SW_AT("model.init_scale", "model.init"),
                   "model.init_scale: not applied with model.init: file (the weights are used exactly as "
                   "stored), got %s; remove init_scale (or use 1) and scale the weights in the file", v);
  }
  return DS_OK;
}

/* Label mode against the data kind and class list (before any file is probed). */
/* model.type cnn: the image [C, H, W] holds data.d_in features (when known)
 * and every conv layer has an output (src/worker/cnnpoint.c builds the net). */
static int sw_check_cnn(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_model_spec *m = &c->model;
  if (m->type != DS_MODEL_CNN) return DS_OK;
  if (m->nimage != 0 && m->nimage != 3)
    return sw_xerr(x, idx, SW_AT("model.image"), "model.image: give [C, H, W] (3 entries), got %d",
                   m->nimage);
  if ((x->flags & DS_SWEEP_NO_FILES) && sw_is_file_kind(c->data.kind)) return DS_OK;
  long long d = c->data.d_in, C = 1, H = (long long)llround(sqrt((double)d)), W = H;
  int kc, kh, kw; /* issue 26: the data kind's image shape (cifar10/cifar100/svhn) */
  int kind_img = !m->nimage && ds_data_image_shape(&c->data, &kc, &kh, &kw);
  if (kind_img) C = kc, H = kh, W = kw;
  if (m->nimage) C = m->image[0], H = m->image[1], W = m->image[2];
  if (C * H * W != d)
    return sw_xerr(x, idx, SW_AT("model.image", "data.d_in"),
                   "model.image: %s%lld x %lld x %lld holds %lld features, but data.d_in is %lld%s",
                   m->nimage ? "" : kind_img ? "(default: the data kind's image) "
                   : "(default: one square channel) ", C, H, W, C * H * W, d,
                   m->nimage ? "" : "; give model.image: [C, H, W]");
  /* the layers of model.net on this image: a kernel or pooling window larger
   * than its input, a residual shortcut whose shape differs from its convs' */
  ds_cnn_net net;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  char err[300];
  ds_model_cnn_net(c, &net);
  int nl = ds_cnn_net_layers(&net, L, err, sizeof err);
  if (nl < 0)
    return sw_xerr(x, idx, SW_AT("model.net", "model.depth", "model.kernel", "model.pool",
                                 "model.dropout"), "%s", err);
  if (ds_cnn_layers_check(L, nl, (int)C, (int)H, (int)W, c->data.d_out, NULL, err, sizeof err)) {
    int l = 0;
    sscanf(err, "layer %d", &l);
    const char *kind = l > 0 && l <= nl ? ds_cnn_kind_name(L[l - 1].kind) : "";
    if (net.net == DS_NET_CNN && !net.pool && L[l > 0 ? l - 1 : 0].kind == DS_LAYER_CONV) {
      int conv = 0; /* the message plan gave before layer lists, for the plain stack */
      for (int i = 0; i < l; i++) conv += L[i].kind == DS_LAYER_CONV;
      long long h = H, w = W;
      int pad = m->padding == 0 ? (m->kernel - 1) / 2 : 0;
      for (int i = 1; i < conv; i++)
        h = (h + 2 * pad - m->kernel) / m->stride + 1, w = (w + 2 * pad - m->kernel) / m->stride + 1;
      return sw_xerr(x, idx, SW_AT("model.kernel", "model.stride", "model.padding", "model.depth",
                                   "model.image"),
                     "model.kernel: conv layer %d gets a %lld x %lld image: a %d x %d kernel (%s "
                     "padding) leaves no output; use fewer conv layers, a smaller kernel or stride",
                     conv, h, w, m->kernel, m->kernel, m->padding == 0 ? "same" : "valid");
    }
    return sw_xerr(x, idx, !strcmp(kind, "avgpool") || !strcmp(kind, "maxpool")
                               ? SW_AT("model.pool_size", "model.pool", "model.net", "model.image")
                               : SW_AT("model.net", "model.kernel", "model.depth", "model.image"),
                   "model.net %s on a %lld x %lld x %lld image: %s", ds_cnn_net_names[net.net], C,
                   H, W, err);
  }
  return DS_OK;
}

static int sw_check_labels(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  const char *kind = sw_choice("data.kind", d->kind);
  if (d->labels != DS_LABELS_VALUE && !sw_is_file_kind(d->kind))
    return sw_xerr(x, idx, SW_AT("data.labels", "data.kind"),
                   "data.labels: %s needs class labels from a file data set (data.kind idx, libsvm, "
                   "csv, hdf5, cifar10, cifar100 or svhn), got data.kind %s", sw_choice("data.labels", d->labels), kind);
  if (d->labels == DS_LABELS_PM1 && d->nclasses != 2)
    return sw_xerr(x, idx, SW_AT("data.labels", "data.classes"),
                   "data.labels: pm1 needs exactly two classes in data.classes (e.g. [0, 1]), got %d",
                   d->nclasses);
  return DS_OK;
}

static int sw_check_data(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_data_spec *d = &c->data;
  if (d->standardize && d->standardize_channels)
    return sw_xerr(x, idx, SW_AT("data.standardize_channels", "data.standardize"),
                   "data.standardize_channels: per-channel standardisation replaces data.standardize "
                   "(per feature); set only one of them");
  if (d->cifar100_coarse && d->kind != DS_DATA_CIFAR100)
    return sw_xerr(x, idx, SW_AT("data.cifar100_labels", "data.kind"),
                   "data.cifar100_labels: coarse applies to data.kind cifar100, got data.kind %s",
                   sw_choice("data.kind", d->kind));
  if (d->kind == DS_DATA_WHITENED && d->n_train < d->d_in)
    return sw_xerr(x, idx, SW_AT("data.n_train", "data.d_in", "data.kind"),
                   "data.n_train: whitened data needs n_train >= data.d_in = %d ((1/n) X X^T = I), got %d",
                   d->d_in, d->n_train);
  if (d->whiten && d->n_train < d->d_in)
    return sw_xerr(x, idx, SW_AT("data.whiten", "data.n_train", "data.d_in"),
                   "data.whiten: needs n_train >= data.d_in = %d to whiten the inputs, got n_train = %d",
                   d->d_in, d->n_train);
  if (d->kind == DS_DATA_GAUSSIAN_SPECTRUM && d->nspectrum > d->d_in)
    return sw_xerr(x, idx, SW_AT("data.spectrum", "data.d_in"),
                   "data.spectrum: has %d eigenvalues but data.d_in = %d; give at most d_in",
                   d->nspectrum, d->d_in);
  return DS_OK;
}

static int sw_check_loss_optim(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_loss_spec *l = &c->loss;
  const ds_optim_spec *o = &c->optimizer;
  if (l->type == DS_LOSS_CE) {
    if (c->data.labels != DS_LABELS_ONE_HOT)
      return sw_xerr(x, idx, SW_AT("loss.type", "data.labels"),
                     "loss.type: cross_entropy needs data.labels: one_hot, got %s",
                     sw_choice("data.labels", c->data.labels));
    if (l->reduction != DS_RED_SUM && l->reduction != DS_RED_MEAN)
      return sw_xerr(x, idx, SW_AT("loss.reduction", "loss.type"),
                     "loss.reduction: cross_entropy takes sum or mean, got %s",
                     sw_choice("loss.reduction", l->reduction));
    if (l->optimum)
      return sw_xerr(x, idx, SW_AT("loss.optimum", "loss.type"),
                     "loss.optimum: not available with loss.type cross_entropy (L* is computed for mse "
                     "and lp only)");
  }
  if (l->optimum && c->model.type != DS_MODEL_LINEAR && c->model.type != DS_MODEL_E2E)
    return sw_xerr(x, idx, SW_AT("loss.optimum", "model.type"),
                   "loss.optimum: needs a linear model (model.type linear or e2e), got %s",
                   sw_choice("model.type", c->model.type));
  if ((c->record.series & DS_REC_LOSS_GAP) && !l->optimum)
    return sw_xerr(x, idx, SW_AT("loss.optimum", "record.series"),
                   "record.series: loss_gap needs loss.optimum: true (L* of a linear model)");
  if (o->type == DS_OPT_SGD && o->batch_size == 0)
    return sw_xerr(x, idx, SW_AT("optimizer.type", "optimizer.batch_size"),
                   "optimizer.type: sgd needs optimizer.batch_size >= 1 (0 means full batch: use gd)");
  if (o->batch_size > c->data.n_train)
    return sw_xerr(x, idx, SW_AT("optimizer.batch_size", "data.n_train"),
                   "optimizer.batch_size: must be <= data.n_train = %d, got %d", c->data.n_train,
                   o->batch_size);
  if (o->lr_in > 0 || o->lr_out > 0) { /* issue 13: per-layer learning rates */
    const char *const *at = o->lr_in > 0 ? SW_AT("optimizer.lr_in", "optimizer.lr_out", "optimizer.type",
                                                 "optimizer.schedule", "optimizer.weight_decay",
                                                 "model.depth", "model.type")
                                         : SW_AT("optimizer.lr_out", "optimizer.type", "optimizer.schedule",
                                                 "optimizer.weight_decay", "model.depth", "model.type");
    const char *which = o->lr_in > 0 ? "optimizer.lr_in" : "optimizer.lr_out";
    if (o->type != DS_OPT_GD && o->type != DS_OPT_SGD)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates are supported for optimizer.type gd and "
                     "sgd only, got %s", which, sw_choice("optimizer.type", o->type));
    if (o->schedule != DS_SCHED_CONSTANT)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates need optimizer.schedule constant, got %s",
                     which, sw_choice("optimizer.schedule", o->schedule));
    if (o->weight_decay != 0)
      return sw_xerr(x, idx, at, "%s: per-layer learning rates do not take optimizer.weight_decay "
                     "(remove it or use optimizer.lr alone)", which);
    if (c->model.type == DS_MODEL_E2E || c->model.depth < 2)
      return sw_xerr(x, idx, at, "%s: needs a network of depth >= 2 (first and last layer distinct), "
                     "got model.type %s, depth %d", which, sw_choice("model.type", c->model.type),
                     c->model.depth);
  }
  if (o->schedule == DS_SCHED_PIECEWISE && o->nschedule == 0)
    return sw_xerr(x, idx, SW_AT("optimizer.schedule"),
                   "optimizer.schedule: piecewise needs optimizer.schedule_steps and "
                   "optimizer.schedule_lrs (lists of equal length, e.g. [100, 200] and [0.1, 0.01])");
  return DS_OK;
}

/* ---- record.spectra ---- */


#define SW_CAD(d) "record.spectra." d ".every", "record.spectra." d ".per_decade", \
                  "record.spectra." d ".on_loss_rise"

/* Each diagnostic on, against the models it applies to (models.h). */
static int sw_check_diag_models(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  const ds_model_spec *m = &c->model;
  for (int i = 0; i < ds_ndiag_rows; i++) {
    const ds_diag_row *d = &ds_diag_rows[i];
    if (!ds_cadence_on(d->cadence(sp))) continue;
    char cad[3][64], msg[256];
    snprintf(cad[0], sizeof cad[0], "record.spectra.%s.every", d->name);
    snprintf(cad[1], sizeof cad[1], "record.spectra.%s.per_decade", d->name);
    snprintf(cad[2], sizeof cad[2], "record.spectra.%s.on_loss_rise", d->name);
    const char *at[] = {cad[0], cad[1], cad[2], "model.type", "model.approx", NULL};
    if (!(d->models & 1u << m->type)) {
      at[4] = NULL;
      const char *why = m->type == DS_MODEL_CNN && d->wrong_cnn ? d->wrong_cnn : d->wrong_model;
      snprintf(msg, sizeof msg, why, sw_choice("model.type", m->type));
      return sw_xerr(x, idx, at, "record.spectra.%s: %s", d->name, msg);
    }
    if (!d->approx && m->approx != DS_APPROX_NONE)
      return sw_xerr(x, idx, at,
                     "record.spectra.%s: not supported with model.approx %s (yet); only the network "
                     "itself (approx: none)", d->name, sw_choice("model.approx", m->approx));
  }
  return DS_OK;
}

static int sw_check_spectra(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const ds_spectra_spec *sp = &c->record.spectra;
  DS_TRY(sw_check_diag_models(x, idx, c));
  if (ds_cadence_on(&sp->agop) && !sp->agop_reference[0] && c->data.kind != DS_DATA_RANK2 &&
      c->data.kind != DS_DATA_RANK4 && c->data.kind != DS_DATA_IMAGE_RANK2)
    return sw_xerr(x, idx, SW_AT(SW_CAD("agop"), "data.kind"),
                   "record.spectra.agop: the analytic reference G* exists for data.kind rank2, rank4 "
                   "and image_rank2 only, got %s; give record.spectra.agop_reference (an HDF5 file with dataset G, "
                   "d_in x d_in)", sw_choice("data.kind", c->data.kind));
  if (ds_cadence_on(&sp->hessian)) {
    if (sp->lanczos_iters < sp->top_k)
      return sw_xerr(x, idx, SW_AT("record.spectra.lanczos_iters", "record.spectra.top_k", SW_CAD("hessian")),
                     "record.spectra.lanczos_iters: must be >= record.spectra.top_k = %d (Lanczos gives "
                     "at most one eigenvalue per iteration), got %d", sp->top_k, sp->lanczos_iters);
  }
  if (ds_cadence_on(&sp->hessian_full)) {
    double np = ds_point_nparams(c);
    if (np > sp->hessian_full_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("hessian_full"), "record.spectra.hessian_full_max", "model.width",
                                   "model.widths", "model.depth", "model.bias", "data.d_in", "data.d_out"),
                     "record.spectra.hessian_full: the network has %.0f parameters, more than "
                     "record.spectra.hessian_full_max = %d; use a smaller network, raise hessian_full_max "
                     "(the Hessian is a %.0f x %.0f matrix) or use record.spectra.hessian (top-k by Lanczos)",
                     np, sp->hessian_full_max, np, np);
  }
  if (ds_cadence_on(&sp->ntk)) {
    double kn = (double)c->data.d_out * c->data.n_train;
    if (kn > sp->ntk_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("ntk"), "record.spectra.ntk_max", "data.n_train", "data.d_out"),
                     "record.spectra.ntk: the NTK has d_out * n_train = %d * %d = %.0f rows, more than "
                     "record.spectra.ntk_max = %d; use fewer training samples or raise ntk_max (K is a "
                     "%.0f x %.0f matrix)", c->data.d_out, c->data.n_train, kn, sp->ntk_max, kn, kn);
  }
  if (ds_cadence_on(&sp->batch_ntk)) {
    int b = c->optimizer.batch_size; /* full batch: the whole training set */
    if (b <= 0 || b > c->data.n_train) b = c->data.n_train;
    double kb = (double)c->data.d_out * b;
    if (kb > sp->ntk_max)
      return sw_xerr(x, idx, SW_AT(SW_CAD("batch_ntk"), "record.spectra.ntk_max", "optimizer.batch_size",
                                   "data.d_out"),
                     "record.spectra.batch_ntk: the batch NTK has d_out * batch_size = %d * %d = %.0f "
                     "rows, more than record.spectra.ntk_max = %d; use a smaller batch or raise ntk_max",
                     c->data.d_out, b, kb, sp->ntk_max);
  }
  return DS_OK;
}

/* What the trainers do not take (models.h, one table): the point trainer's
 * refusals always; the team trainer's with train.distributed: on (auto
 * quietly trains those points on one rank); the tile trainer's never (a map
 * trains those points one at a time). */
static int sw_check_trainers(sw_ctx *x, const int *idx, const ds_point_cfg *c) {
  const char *at[8] = {"train.distributed"};
  const ds_net_feature *f = ds_net_refusal(c, DS_TRAINER_POINT);
  if (f) {
    for (int i = 0; i < 6 && f->keys[i]; i++) at[i] = f->keys[i];
    return sw_xerr(x, idx, at, "%s is not supported (%s)", f->feature, f->refuse[DS_TRAINER_POINT]);
  }
  if (c->train.distributed != DS_DIST_ON || !(f = ds_net_refusal(c, DS_TRAINER_TEAM))) return DS_OK;
  for (int i = 0; i < 6 && f->keys[i] && strncmp(f->keys[i], "record.spectra", 14); i++)
    at[i + 1] = f->keys[i];
  return sw_xerr(x, idx, at, "train.distributed: on is not supported with %s (%s); use off or auto",
                 f->feature, f->refuse[DS_TRAINER_TEAM]);
}

/* Every constraint of one combo. */
static int sw_check_combo(sw_ctx *x, const int *idx, ds_point_cfg *c) {
  ds_point_cfg raw; /* the values as written, before anything is derived */
  sw_apply_axes(x->s, &x->raw_base, idx, &raw);
  DS_TRY(sw_check_shape(x, idx, &raw));
  sw_apply(x->s, idx, c);
  DS_TRY(sw_check_labels(x, idx, c));
  DS_TRY(sw_check_file_data(x, idx, c));
  DS_TRY(sw_check_rank(x, idx, c));
  DS_TRY(sw_check_record(x, idx, c));
  DS_TRY(sw_check_model(x, idx, c));
  DS_TRY(sw_check_cnn(x, idx, c));
  DS_TRY(sw_check_data(x, idx, c));
  DS_TRY(sw_check_loss_optim(x, idx, c));
  DS_TRY(sw_check_spectra(x, idx, c));
  DS_TRY(sw_check_trainers(x, idx, c));
  return DS_OK;
}

/* A map sweep: at most DS_MAX_MAP_POINTS points, one replica, no diagnostics.
 * Up to 2^14 combos every one is checked; beyond, every value of every axis
 * (the others at their first value) and every corner of the grid. */
static int sw_check_map(sw_ctx *x, double np, int line, int col) {
  ds_sweep *s = x->s;
  if (np > (double)DS_MAX_MAP_POINTS)
    return sw_err(x, line, col, "map too large: %.0f points (limit %lld); use fewer axis values",
                  np, (long long)DS_MAX_MAP_POINTS);
  if (s->replicas != 1)
    return sw_err(x, line, col, "grid.replicas: a map sweep has one point per pixel; make the seed "
                  "an axis instead, or drop map:");
  ds_point_cfg c;
  int idx[DS_MAX_AXES] = {0};
  if (ds_spectra_any_on(&s->base.record.spectra))
    return sw_err(x, x->secline[5] ? x->secline[5] : line, x->secline[5] ? x->seccol[5] : col,
                  "record.spectra: a map sweep records outcomes only (map:); drop record.spectra "
                  "or the map: section");
  if (np <= (double)(1 << 14)) {
    for (int64_t k = 0; k < (int64_t)np; k++) {
      sw_combo_index(s, k, idx);
      DS_TRY(sw_check_combo(x, idx, &c));
    }
    return DS_OK;
  }
  for (int a = 0; a < s->naxes; a++)
    for (int i = 0; i < s->axes[a].nvals; i++) {
      memset(idx, 0, sizeof idx);
      idx[a] = i;
      DS_TRY(sw_check_combo(x, idx, &c));
    }
  for (int m = 0; m < (1 << s->naxes); m++) {
    for (int a = 0; a < s->naxes; a++) idx[a] = m >> a & 1 ? s->axes[a].nvals - 1 : 0;
    DS_TRY(sw_check_combo(x, idx, &c));
  }
  return DS_OK;
}

int64_t ds_map_tile_points(const ds_sweep *s) {
  if (s->map_tile > 0) return s->map_tile;
  ds_point p;
  if (ds_sweep_point(s, 0, &p) != DS_OK) {
    ds_clear_error();
    return 1024;
  }
  /* from the FLOP estimate at a nominal 10 GFLOP/s, not from this machine's
   * speed: tiles are fixed by the sweep, whoever runs it */
  double t = p.cost > 0 ? DS_MAP_TILE_S * 1e10 / p.cost : 1024;
  int64_t n = 64;
  while (n < 16384 && n * 2 <= t) n *= 2;
  return n;
}

/* Size limits, then every combo: cross-field constraints and store estimate. */
int sw_check_points(sw_ctx *x) {
  ds_sweep *s = x->s;
  double np = s->replicas;
  for (int a = 0; a < s->naxes; a++) np *= s->axes[a].nvals;
  int line = x->have_grid ? x->gline : 1, col = x->have_grid ? x->gcol : 1;
  if (s->map) return sw_check_map(x, np, line, col);
  if (np > DS_MAX_POINTS)
    return sw_err(x, line, col, "grid too large: %.0f points (limit %d); use fewer axis values or "
                  "replicas, or make it a map sweep (map: true) that records outcomes only", np,
                  DS_MAX_POINTS);
  int64_t ncombo = ds_sweep_npoints(s) / s->replicas;
  double bytes = 0;
  for (int64_t k = 0; k < ncombo; k++) {
    int idx[DS_MAX_AXES];
    ds_point_cfg c;
    sw_combo_index(s, k, idx);
    DS_TRY(sw_check_combo(x, idx, &c));
    bytes += ds_point_store_bytes(&c) * s->replicas;
  }
  s->store_bytes = bytes;
  if (bytes > SW_STORE_LIMIT)
    return sw_err(x, line, col,
                  "grid too large for the store: estimated %.1f GiB (limit 64 GiB); record fewer "
                  "series or less often (record.every, record.per_decade), or use fewer points",
                  bytes / (1024.0 * 1024 * 1024));
  return DS_OK;
}

/* Lists given together must agree in length. */
int sw_check_lists(sw_ctx *x) {
  int si = sw_opt_i("optimizer.schedule_steps"), li = sw_opt_i("optimizer.schedule_lrs");
  if (x->listn[si] == x->listn[li]) return DS_OK;
  int at = x->set[li] ? li : si;
  return sw_err(x, x->sline[at], x->scol[at],
                "optimizer.schedule_lrs: has %d values but optimizer.schedule_steps has %d; give one "
                "learning rate per step", x->listn[li], x->listn[si]);
}

/* File data in the base: d_in and d_out come from the file (ds_data_probe). */
int sw_base_file_data(sw_ctx *x) {
  ds_data_spec *d = &x->s->base.data;
  if ((x->flags & DS_SWEEP_NO_FILES) || !sw_is_file_kind(d->kind) || !d->path[0]) return DS_OK;
  if (d->kind == DS_DATA_IDX && !d->labels_path[0]) return DS_OK; /* reported per point */
  DS_TRY(sw_check_labels(x, NULL, &x->s->base));
  int din, dout, avail;
  int ii = sw_opt_i("data.d_in"), oi = sw_opt_i("data.d_out");
  /* CSV with value labels: d_out is the number of trailing target columns,
   * one unless stated */
  if (d->kind == DS_DATA_CSV && d->labels == DS_LABELS_VALUE && !x->set[oi] && x->axis_of[oi] < 0)
    d->d_out = 1;
  DS_TRY(sw_probe(x, NULL, d, &din, &dout, &avail));
  if (x->set[ii] && d->d_in != din)
    return sw_err(x, x->sline[ii], x->scol[ii],
                  "data.d_in: the data file '%s' gives d_in = %d, got %d; omit data.d_in for file data",
                  x->given[sw_opt_i("data.path")], din, d->d_in);
  if (x->set[oi] && d->d_out != dout)
    return sw_err(x, x->sline[oi], x->scol[oi],
                  "data.d_out: the data file '%s' with data.labels %s gives d_out = %d, got %d; omit "
                  "data.d_out for file data", x->given[sw_opt_i("data.path")],
                  sw_choice("data.labels", d->labels), dout, d->d_out);
  d->d_in = din;
  d->d_out = dout;
  return DS_OK;
}
