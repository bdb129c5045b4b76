/* models.c -- one network definition (include/dynsweep/models.h): the model
 * kinds, the parameterisations, and the one table of what each trainer
 * takes and which diagnostics apply. `plan` refuses from it (sweep_check.c),
 * the workers choose their trainer from it (src/worker/point.c, tile.c), and
 * docs/models.md is its printout (`dynsweep models --markdown`, checked by
 * tests/models.sh, which also plans every example below). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "dynsweep/data.h"
#include "dynsweep/models.h"
#include "dynsweep/nn.h"

const char *const ds_trainer_names[DS_NTRAINERS] = {"point", "tile", "team"};

const ds_model_row ds_model_rows[] = {
    {DS_MODEL_LINEAR, "linear", DS_ACT_LINEAR, "depth weight matrices, no activation"},
    {DS_MODEL_RELU, "relu", DS_ACT_RELU,
     "hidden A = relu(Z) (model.gain g: g relu(Z), no biases), linear output layer"},
    {DS_MODEL_E2E, "e2e", DS_ACT_LINEAR,
     "the end-to-end matrix W_e of a depth-N linear net, updated by seed 002's Eq. 9 / 11"},
    {DS_MODEL_TANH, "tanh", DS_ACT_TANH, "hidden A = tanh(model.gain Z), linear output layer"},
    {DS_MODEL_CNN, "cnn", DS_ACT_RELU,
     "model.net cnn: model.depth conv layers (model.width channels, model.kernel, model.stride, "
     "model.padding) each with biases and ReLU, optional model.pool, model.readout flatten or "
     "gap, optional model.hidden dense + ReLU and model.dropout, dense linear readout; or the "
     "named nets cnn5, myrtle5, tf_mnist, wrn, dag (docs/sweep-spec.md)"},
};
const int ds_nmodel_rows = (int)(sizeof ds_model_rows / sizeof ds_model_rows[0]);

int ds_model_act(ds_model_kind t) {
  for (int i = 0; i < ds_nmodel_rows; i++)
    if (ds_model_rows[i].type == t) return ds_model_rows[i].act;
  return DS_ACT_LINEAR;
}

/* A point's MLP layer sizes d_0 .. d_depth (model.widths or model.width). */
void ds_point_dims(const ds_point_cfg *c, int *dims) {
  int use_list = c->model.nwidths > 0 && c->model.nwidths == c->model.depth - 1;
  dims[0] = c->data.d_in;
  for (int l = 1; l < c->model.depth; l++) dims[l] = use_list ? c->model.widths[l - 1] : c->model.width;
  dims[c->model.depth] = c->data.d_out;
}

/* Whether any record.spectra diagnostic is on. */
int ds_spectra_any_on(const ds_spectra_spec *sp) {
  const ds_cadence *cad[] = {&sp->layers, &sp->e2e, &sp->hessian, &sp->hessian_full, &sp->ntk,
                             &sp->agop, &sp->activations, &sp->escape, &sp->batch_ntk};
  for (size_t i = 0; i < sizeof cad / sizeof cad[0]; i++)
    if (ds_cadence_on(cad[i])) return 1;
  return 0;
}

void ds_model_cnn_net(const ds_point_cfg *c, ds_cnn_net *n) {
  const ds_model_spec *m = &c->model;
  static const int pools[3] = {0, DS_LAYER_AVGPOOL, DS_LAYER_MAXPOOL};
  *n = (ds_cnn_net){.net = m->net, .width = m->width, .depth = m->depth, .kernel = m->kernel,
                    .stride = m->stride, .same = m->padding == 0,
                    .readout = m->readout == 1 ? DS_CNN_GAP : DS_CNN_FLATTEN,
                    .pool = m->pool >= 0 && m->pool < 3 ? pools[m->pool] : 0,
                    .pool_every = m->pool_every, .pool_size = m->pool_size, .hidden = m->hidden,
                    .dropout = m->dropout, .overparam = m->overparam, .dag_drop = m->dag_drop,
                    .dag_readout_drop = m->dag_readout_drop, .dout = c->data.d_out};
}

void ds_model_cnn_image(const ds_point_cfg *c, int *C, int *H, int *W) {
  const ds_model_spec *m = &c->model;
  if (m->nimage == 3) {
    *C = m->image[0], *H = m->image[1], *W = m->image[2];
  } else if (!ds_data_image_shape(&c->data, C, H, W)) { /* cifar/svhn 3 x 32 x 32, idx header */
    *C = 1;
    *H = *W = (int)lround(sqrt((double)c->data.d_in));
  }
}

const ds_param_row ds_param_rows[] = {
    {DS_PARAM_STANDARD, "standard", "Z_l = W_l A_{l-1} + b_l"},
    {DS_PARAM_NTK, "ntk", "Z_l = W_l A_{l-1} / sqrt(d_{l-1}) + b_l"},
    {DS_PARAM_MEANFIELD, "meanfield", "as ntk, but the output layer W_L A_{L-1} / d_{L-1}"},
};
const int ds_nparam_rows = (int)(sizeof ds_param_rows / sizeof ds_param_rows[0]);

/* ---- the features ---- */

static int has_lambda0_e2e(const ds_point_cfg *c) {
  return c->optimizer.lr_units == DS_LR_LAMBDA0 && c->model.type == DS_MODEL_E2E;
}
static int has_e2e(const ds_point_cfg *c) { return c->model.type == DS_MODEL_E2E; }
static int has_cnn(const ds_point_cfg *c) { return c->model.type == DS_MODEL_CNN; }
/* The MLP options a CNN does not read (its weights are drawn as cnn.h says). */
static int has_cnn_mlp_opts(const ds_point_cfg *c) {
  const ds_model_spec *m = &c->model;
  return has_cnn(c) && (m->nwidths > 0 || m->param == DS_PARAM_MEANFIELD || !m->train_output ||
                        m->symmetric || m->init != DS_INIT_GAUSSIAN || m->balanced_identity ||
                        m->gain != 1.0 || m->init_offset != 0 || m->bias);
}
static int has_cnn_opts(const ds_point_cfg *c) {
  const ds_model_spec *m = &c->model;
  return !has_cnn(c) && (m->kernel != 3 || m->stride != 1 || m->padding != 0 || m->readout != 0 ||
                         m->bias_scale != 1.0 || m->nimage > 0 || m->net != 0 || m->pool != 0 ||
                         m->pool_every != 1 || m->pool_size != 2 || m->hidden != 0 ||
                         m->dropout != 0 || m->overparam || m->dag_drop != 0.5 ||
                         m->dag_readout_drop != 0);
}
static int has_dag_drop_off(const ds_point_cfg *c) {
  return has_cnn(c) && c->model.net != DS_NET_DAG && c->model.dag_drop != 0.5;
}
static int has_dag_readout_drop_off(const ds_point_cfg *c) {
  return has_cnn(c) && c->model.net != DS_NET_DAG && c->model.dag_readout_drop != 0;
}
/* The MLP-only options of record.series and the optimiser (layer_fro and
 * sv/W<l> are a CNN's weight matrices: its conv kernels and readout). */
static int has_cnn_not_loss_series(const ds_point_cfg *c) {
  return has_cnn(c) && ((c->record.series & DS_REC_LOSS_GAP) || c->optimizer.lr_in > 0 ||
                        c->optimizer.lr_out > 0 || c->loss.optimum);
}
static int has_tanh(const ds_point_cfg *c) { return c->model.type == DS_MODEL_TANH; }
static int has_meanfield(const ds_point_cfg *c) { return c->model.param == DS_PARAM_MEANFIELD; }
static int has_gain(const ds_point_cfg *c) { return c->model.gain != 1.0; }
static int has_approx(const ds_point_cfg *c) { return c->model.approx != DS_APPROX_NONE; }
static int has_depth(const ds_point_cfg *c) { return c->model.depth != 2; }
static int has_bias(const ds_point_cfg *c) { return c->model.bias; }
static int has_init_file(const ds_point_cfg *c) { return c->model.init == DS_INIT_FILE; }
static int has_big(const ds_point_cfg *c) {
  int dims[DS_MAX_LIST + 2];
  if (c->model.depth < 1 || c->model.depth > DS_MAX_LIST) return 1;
  ds_point_dims(c, dims);
  for (int l = 1; l <= c->model.depth; l++)
    if (dims[l] > 64) return 1;
  return dims[0] > 4096;
}
static int has_not_gd(const ds_point_cfg *c) { return c->optimizer.type != DS_OPT_GD; }
static int has_batch(const ds_point_cfg *c) {
  return c->optimizer.batch_size > 0 && c->optimizer.batch_size < c->data.n_train;
}
static int has_schedule(const ds_point_cfg *c) { return c->optimizer.schedule != DS_SCHED_CONSTANT; }
static int has_wd(const ds_point_cfg *c) { return c->optimizer.weight_decay != 0; }
static int has_lambda0(const ds_point_cfg *c) { return c->optimizer.lr_units == DS_LR_LAMBDA0; }
static int has_lr_layers(const ds_point_cfg *c) {
  return c->optimizer.lr_in > 0 || c->optimizer.lr_out > 0;
}
static int has_ce(const ds_point_cfg *c) { return c->loss.type == DS_LOSS_CE; }
static int has_lp(const ds_point_cfg *c) { return c->loss.type == DS_LOSS_LP; }
static int has_tol(const ds_point_cfg *c) { return c->train.tol > 0; }
static int has_dist_on(const ds_point_cfg *c) { return c->train.distributed == DS_DIST_ON; }
static int has_spectra(const ds_point_cfg *c) { return ds_spectra_any_on(&c->record.spectra); }

#define TILE_NETS "tiles train linear, relu and tanh nets"
/* issue 26: what no trainer takes for CNNs yet (the point trainer's
 * refusal is plan's for all of them); IMG: the examples' 2-feature data as
 * an image */
#define CNN_ONLY "they are the convolutional net's; set model.type cnn"
#define CNN_INIT "a CNN has biases (model.bias_scale) and draws its weights as include/dynsweep/cnn.h says (model.init_scale and model.init_std apply)"
#define DAG_ONLY "it is the edge drop probability of model.net dag"
#define DAG_READOUT "it is the readout's edge drop probability of model.net dag"
#define MLP_ONLY "they are defined for an MLP's weight matrices"
#define IMG "model.image=[1,1,2]"
#define ONE_RANK "the end-to-end update is one-rank"
/* Order: the first row that refuses a point for a trainer is its reason, so
 * a combination stands before its parts. */
const ds_net_feature ds_net_features[] = {
    {"optimizer.lr_units lambda0 with model.type e2e", {"optimizer.lr_units", "model.type"},
     has_lambda0_e2e,
     {"lambda_0 is the top NTK eigenvalue of a network at initialisation; use model.type linear "
      "for the same net", TILE_NETS, ONE_RANK},
     "model.type=e2e optimizer.lr_units=lambda0"},
    {"model.kernel, stride, padding, readout, bias_scale, image, net, pool, hidden, dropout, "
     "overparam, dag_drop or dag_readout_drop without model.type cnn",
     {"model.kernel", "model.stride", "model.padding", "model.readout", "model.image"}, has_cnn_opts,
     {CNN_ONLY, CNN_ONLY, CNN_ONLY}, "model.kernel=5"},
    {"model.dag_drop without model.net dag", {"model.dag_drop", "model.net"}, has_dag_drop_off,
     {DAG_ONLY, DAG_ONLY, DAG_ONLY}, "model.type=cnn " IMG " model.dag_drop=0.25"},
    {"model.dag_readout_drop without model.net dag", {"model.dag_readout_drop", "model.net"},
     has_dag_readout_drop_off, {DAG_READOUT, DAG_READOUT, DAG_READOUT},
     "model.type=cnn " IMG " model.dag_readout_drop=0.5"},
    {"model.type cnn with widths, meanfield, bias, gain, train_output or an init kind other than "
     "gaussian", {"model.type", "model.init", "model.param", "model.bias"}, has_cnn_mlp_opts,
     {CNN_INIT, CNN_INIT, CNN_INIT}, "model.type=cnn " IMG " model.param=meanfield"},
    {"model.type cnn with series loss_gap, lr_in / lr_out or loss.optimum",
     {"record.series", "optimizer.lr_in", "optimizer.lr_out", "loss.optimum"},
     has_cnn_not_loss_series,
     {MLP_ONLY, MLP_ONLY, MLP_ONLY}, "model.type=cnn " IMG " optimizer.lr_in=0.2"},
    {"model.type cnn", {"model.type"}, has_cnn,
     {NULL, "tiles train linear, relu and tanh MLPs", NULL}, "model.type=cnn " IMG},
    {"model.type e2e", {"model.type"}, has_e2e, {NULL, TILE_NETS, ONE_RANK}, "model.type=e2e"},
    {"model.type tanh", {"model.type"}, has_tanh,
     {NULL, NULL, "the team trainer has linear and ReLU layers"}, "model.type=tanh"},
    {"model.param meanfield", {"model.param"}, has_meanfield,
     {NULL, NULL, "the team trainer has the standard and ntk scales"}, "model.param=meanfield"},
    {"model.gain", {"model.gain"}, has_gain,
     {NULL, NULL, "the team trainer's ReLU layers have no gain"}, "model.gain=2"},
    {"model.approx", {"model.approx"}, has_approx,
     {NULL, "tiles train the network itself", "the team trainer trains the network itself"},
     "model.approx=lin"},
    {"model.depth other than 2", {"model.depth"}, has_depth, {NULL, "tiles are two-layer nets", NULL},
     "model.depth=3"},
    {"model.bias", {"model.bias"}, has_bias, {NULL, "tiles have no biases", NULL}, "model.bias=true"},
    {"model.init file", {"model.init"}, has_init_file,
     {NULL, "tiles draw their initial weights", NULL}, ""},
    {"a layer wider than 64 or d_in > 4096", {"model.width", "model.widths", "data.d_out", "data.d_in"},
     has_big, {NULL, "the tile kernels are for small nets", NULL}, "model.width=65"},
    {"optimizer.type other than gd", {"optimizer.type"}, has_not_gd,
     {NULL, "tiles take full-batch gd", NULL}, "optimizer.type=adam"},
    {"optimizer.batch_size below data.n_train", {"optimizer.batch_size"}, has_batch,
     {NULL, "tiles take full-batch gd", NULL}, "optimizer.batch_size=2"},
    {"optimizer.schedule other than constant", {"optimizer.schedule"}, has_schedule,
     {NULL, "tiles take a constant rate", NULL}, "optimizer.schedule=adaptive_norm"},
    {"optimizer.weight_decay", {"optimizer.weight_decay"}, has_wd,
     {NULL, "tiles take plain gd", NULL}, "optimizer.weight_decay=0.01"},
    {"optimizer.lr_units lambda0", {"optimizer.lr_units"}, has_lambda0,
     {NULL, "each point would need its own NTK",
      "the NTK at initialisation needs the whole theta on one rank"},
     "optimizer.lr_units=lambda0"},
    {"optimizer.lr_in / lr_out", {"optimizer.lr_in", "optimizer.lr_out"}, has_lr_layers,
     {NULL, NULL, "the team trainer has one learning rate"}, "optimizer.lr_in=0.2"},
    {"loss.type cross_entropy", {"loss.type"}, has_ce,
     {NULL, "tiles take mse", "its softmax spans a whole output column"},
     "loss.type=cross_entropy data.labels=one_hot loss.reduction=mean"},
    {"loss.type lp", {"loss.type"}, has_lp, {NULL, "tiles take mse", NULL}, "loss.type=lp loss.p=3"},
    {"train.tol", {"train.tol"}, has_tol, {NULL, "tiles run every step", NULL}, "train.tol=1e-9"},
    {"train.distributed: on", {"train.distributed"}, has_dist_on,
     {NULL, "a tile is trained on one rank", NULL}, "train.distributed=on"},
    {"record.spectra diagnostics", {"record.spectra"}, has_spectra,
     {NULL, "tiles record outcomes only", "they need the whole theta on one rank"},
     "record.spectra.layers.every=10"},
};
const int ds_nnet_features = (int)(sizeof ds_net_features / sizeof ds_net_features[0]);

const ds_net_feature *ds_net_refusal(const ds_point_cfg *c, ds_trainer t) {
  /* a CNN on a team splits each step's samples over the members with theta
   * replicated (src/worker/point.c, cnn_split_loss): what the point trainer
   * takes (the team column's other rows are the MLPs' BLACS-grid trainer's) */
  if (t == DS_TRAINER_TEAM && c->model.type == DS_MODEL_CNN) t = DS_TRAINER_POINT;
  for (int i = 0; i < ds_nnet_features; i++)
    if (ds_net_features[i].refuse[t] && ds_net_features[i].has(c)) return &ds_net_features[i];
  return NULL;
}

int ds_net_supported(const ds_point_cfg *c, ds_trainer t, char *why, int whylen) {
  const ds_net_feature *f = ds_net_refusal(c, t);
  if (why && whylen > 0) {
    why[0] = 0;
    if (f) snprintf(why, (size_t)whylen, "%s (%s)", f->feature, f->refuse[t]);
  }
  return f == NULL;
}

/* ---- the diagnostics ---- */

#define CAD(d)                                                                                     \
  static const ds_cadence *cad_##d(const ds_spectra_spec *sp) { return &sp->d; }
CAD(layers)
CAD(e2e)
CAD(activations)
CAD(agop)
CAD(hessian)
CAD(hessian_full)
CAD(ntk)
CAD(batch_ntk)
CAD(escape)
#define M(k) (1u << (k))
#define ALL (M(DS_MODEL_LINEAR) | M(DS_MODEL_RELU) | M(DS_MODEL_E2E) | M(DS_MODEL_TANH))
#define NETS (M(DS_MODEL_LINEAR) | M(DS_MODEL_RELU) | M(DS_MODEL_TANH))
#define EXACT "not supported with model.type %s (yet); use model.type linear for the same network"
#define CNN(k) (M(DS_MODEL_CNN) | (k))

const ds_diag_row ds_diag_rows[] = {
    {"layers", cad_layers, CNN(ALL), 1, NULL, NULL,
     "singular values and norms of each W_l (a CNN: each conv kernel as C_out x C_in s^2, "
     "then the readout)"},
    {"e2e", cad_e2e, M(DS_MODEL_LINEAR) | M(DS_MODEL_E2E), 1,
     "needs a linear model (model.type linear or e2e), got %s", NULL,
     "W_{1:N}'s singular values, balancedness, deficiency margin"},
    {"activations", cad_activations, CNN(M(DS_MODEL_RELU)), 1,
     "needs model.type relu or cnn (activations of a ReLU net), got %s", NULL,
     "singular values of each hidden Z^sigma_l, nonlinearity ratio (a CNN: each ReLU's output "
     "as n x C H W, its rows gathered over a team)"},
    {"agop", cad_agop, CNN(ALL), 1, NULL, NULL,
     "the AGOP (a CNN: over the input pixels, d = C H W) and its alignment with a reference"},
    {"hessian", cad_hessian, CNN(NETS), 0, EXACT, NULL,
     "top-k Hessian eigenvalues (Lanczos on HVPs; a CNN: R-operator HVPs through every layer, "
     "ReLU masks and max-pool arg-maxes frozen, dropout off)"},
    {"hessian_full", cad_hessian_full, CNN(NETS), 0, EXACT, NULL,
     "the whole Hessian spectrum (a CNN: P R-operator HVPs with unit vectors, symmetrised, "
     "ScaLAPACK pdsyevd)"},
    {"ntk", cad_ntk, CNN(NETS), 0, EXACT, NULL,
     "top NTK eigenvalues, critical lr, loss split, kernel change (a CNN: K = J J^T from "
     "per-sample gradients)"},
    {"batch_ntk", cad_batch_ntk, CNN(NETS), 0, EXACT, NULL, "the NTK of each minibatch"},
    {"escape", cad_escape, CNN(ALL), 1, NULL, NULL,
     "the escape-speed proxy (a CNN: theta~ = sqrt(L) theta/||theta||, L its weight matrices "
     "as layers/sv)"},
};
const int ds_ndiag_rows = (int)(sizeof ds_diag_rows / sizeof ds_diag_rows[0]);

/* ---- docs/models.md ---- */

static void cell(FILE *f, const char *s) { fprintf(f, " %s |", s); }

void ds_models_print(FILE *f, int md) {
  fprintf(f, md ? "| model.type | hidden activation | layers |\n| --- | --- | --- |\n"
                : "model kinds (model.type):\n");
  static const char *const acts[] = {"linear", "relu", "tanh"};
  for (int i = 0; i < ds_nmodel_rows; i++)
    fprintf(f, md ? "| `%s` | %s | %s |\n" : "  %-10s %-7s %s\n", ds_model_rows[i].name,
            acts[ds_model_rows[i].act], ds_model_rows[i].layers);
  fprintf(f, md ? "\n| model.param | layer l computes |\n| --- | --- |\n"
                : "\nparameterisations (model.param):\n");
  for (int i = 0; i < ds_nparam_rows; i++)
    fprintf(f, md ? "| `%s` | %s |\n" : "  %-10s %s\n", ds_param_rows[i].name,
            ds_param_rows[i].forward);
  fprintf(f, md ? "\nteam: an MLP trains on the team's BLACS grid (train.distributed); a CNN "
                  "splits each step's samples over the team (theta replicated) and takes what "
                  "point takes, whatever the team column's other rows say.\n"
                  "\n| feature | point | tile | team | example (`--set`) |\n"
                  "| --- | --- | --- | --- | --- |\n"
                : "\nwhich trainer takes what (a reason: it does not; team: an MLP on the team's "
                  "BLACS grid;\n a CNN splits each step's samples over the team and takes what "
                  "point takes):\n");
  for (int i = 0; i < ds_nnet_features; i++) {
    const ds_net_feature *r = &ds_net_features[i];
    if (md) fprintf(f, "| %s |", r->feature);
    else fprintf(f, "  %s\n", r->feature);
    for (int t = 0; t < DS_NTRAINERS; t++) {
      if (md) cell(f, r->refuse[t] ? r->refuse[t] : "yes");
      else fprintf(f, "    %-6s %s\n", ds_trainer_names[t], r->refuse[t] ? r->refuse[t] : "yes");
    }
    if (md) fprintf(f, " %s%s%s |\n", r->example[0] ? "`" : "", r->example[0] ? r->example : "-",
                    r->example[0] ? "`" : "");
  }
  fprintf(f, md ? "\n| record.spectra | linear | relu | e2e | tanh | cnn | approx lin/quad | computes |\n"
                  "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
                : "\ndiagnostics (point trainer and CNN teams; tiles and MLP teams compute none):\n");
  for (int i = 0; i < ds_ndiag_rows; i++) {
    const ds_diag_row *d = &ds_diag_rows[i];
    if (md) {
      fprintf(f, "| `%s` |", d->name);
      for (int k = 0; k < ds_nmodel_rows; k++)
        cell(f, d->models & M(ds_model_rows[k].type) ? "yes" : "no");
      cell(f, d->approx ? "yes" : "no");
      fprintf(f, " %s |\n", d->what);
    } else {
      fprintf(f, "  %-13s", d->name);
      for (int k = 0; k < ds_nmodel_rows; k++)
        if (d->models & M(ds_model_rows[k].type)) fprintf(f, " %s", ds_model_rows[k].name);
      fprintf(f, "%s: %s\n", d->approx ? " (and approx)" : "", d->what);
    }
  }
}
