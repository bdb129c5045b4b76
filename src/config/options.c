/* options.c -- the one table of configuration options (dotted path, type,
 * offset into ds_point_cfg, range, default, doc) and everything driven by
 * it: defaults, typed get/set by path, scalar parsing with range checks,
 * canonical value text, and "did you mean" suggestions. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config_internal.h"
#include "dynsweep/util.h"

/* Choice names, indexed by the enum codes of include/dynsweep/config.h. */
static const char *const model_types[] = {"linear", "relu", "e2e", "tanh", "cnn", NULL};
static const char *const paddings[] = {"same", "valid", NULL};
static const char *const readouts[] = {"flatten", "gap", NULL};
/* model.net: ds_cnn_net_names' order (include/dynsweep/cnn.h); model.pool: none, avg, max */
static const char *const nets[] = {"cnn", "cnn5", "myrtle5", "tf_mnist", "wrn", "dag", NULL};
static const char *const pools[] = {"none", "avg", "max", NULL};
static const char *const param_kinds[] = {"standard", "ntk", "meanfield", NULL};
static const char *const lr_units[] = {"absolute", "lambda0", NULL};
static const char *const approx_kinds[] = {"none", "lin", "quad", NULL};
static const char *const init_kinds[] = {"gaussian", "glorot_uniform", "he",   "orthogonal",
                                         "def4",     "balanced",       "near_identity",
                                         "ntk",      "file",           NULL};
static const char *const data_kinds[] = {"teacher", "whitened",      "gaussian_spectrum",
                                         "relu_teacher", "rank2",    "rank3",
                                         "rank4",   "fullrank",      "two_gaussians",
                                         "circle",  "sphere",        "idx",
                                         "libsvm",  "csv",           "hdf5",
                                         "iid_gaussian", "cifar10",   "cifar100",
                                         "svhn",    "image_rank2", NULL};
static const char *const cifar100_label_sets[] = {"fine", "coarse", NULL};
static const char *const label_modes[] = {"value", "one_hot", "pm1", NULL};
static const char *const loss_types[] = {"mse", "lp", "cross_entropy", NULL};
/* Indexed by ds_reduction. */
static const char *const reductions[] = {"sum", "half_sum", "mean", "half_mean", NULL};
static const char *const opt_types[] = {"gd",      "sgd",      "momentum", "nesterov",
                                        "adagrad", "adadelta", "rmsprop",  "adam", NULL};
static const char *const sched_kinds[] = {"constant", "piecewise", "adaptive_norm", NULL};
static const char *const dist_kinds[] = {"auto", "on", "off", NULL};
const char *const ds_series_names[] = {"loss",      "test_loss", "grad_norm", "param_norm",
                                       "layer_fro", "layer_sv",  "loss_gap",  "lr", NULL};
const char *const ds_reduction_help =
    "half_sum (L = 1/2 * sum (f-y)^2), sum (L = sum (f-y)^2), "
    "mean (L = 1/n * sum (f-y)^2), half_mean (L = 1/(2n) * sum (f-y)^2), "
    "where the sum runs over the n training samples and all outputs";

#define ALL_SERIES 63.0 /* the first six: loss_gap and lr only when asked for */
#define OFF(f) offsetof(ds_point_cfg, f)
#define NOMAX INFINITY
/* Rows: path, alias, type, offset, min, max, min_excl, choices, default,
 * default as documented, doc [, count offset (lists), max_excl]. */
#define LIST(f) OFF(f)
/* The three rows of one diagnostic's cadence (ds_cadence): record.spectra.D.{every,per_decade,on_loss_rise}. */
#define CADENCE(d, what)                                                                            \
  {"record.spectra." #d ".every", NULL, DS_OT_INT64, OFF(record.spectra.d.every), 0, 1e18, 0, NULL,  \
   0, "0", what ": every k steps (0 = off)", 0, 0},                                                 \
  {"record.spectra." #d ".per_decade", NULL, DS_OT_INT, OFF(record.spectra.d.per_decade), 0,        \
   INT_MAX, 0, NULL, 0, "0", what ": this many log-spaced steps per decade (0 = off)", 0, 0},       \
  {"record.spectra." #d ".on_loss_rise", NULL, DS_OT_BOOL, OFF(record.spectra.d.on_loss_rise), 0,   \
   1, 0, NULL, 0, "false", what ": also at every step whose loss rose above the previous step's",   \
   0, 0}

const ds_option ds_options[] = {
    /* ---- model ---- */
    {"model.type", NULL, DS_OT_ENUM, OFF(model.type), 0, 0, 0, model_types, DS_MODEL_LINEAR,
     "linear", "linear (deep linear net), relu (ReLU MLP, linear output), tanh (tanh(gain z) "
     "hidden layers, linear output), e2e (end-to-end matrix of a depth-N linear net, seed 002 "
     "Eq. 9/11) or cnn (model.depth conv layers of model.width channels, ReLU, model.readout, "
     "dense readout: docs/models.md)", 0, 0},
    {"model.bias", NULL, DS_OT_BOOL, OFF(model.bias), 0, 1, 0, NULL, 0, "false",
     "add a bias vector to every layer", 0, 0},
    {"model.width", "width", DS_OT_INT, OFF(model.width), 1, INT_MAX, 0, NULL, 16, "16",
     "hidden layer width (every hidden layer, unless model.widths is given)", 0, 0},
    {"model.widths", NULL, DS_OT_INT_LIST, OFF(model.widths), 1, INT_MAX, 0, NULL, 0, "[]",
     "hidden widths d_1..d_{depth-1} one per layer (depth-1 entries); [] = all model.width",
     LIST(model.nwidths), 0},
    {"model.depth", "depth", DS_OT_INT, OFF(model.depth), 1, 64, 0, NULL, 2, "2",
     "number of weight matrices (layers)", 0, 0},
    {"model.param", NULL, DS_OT_ENUM, OFF(model.param), 0, 0, 0, param_kinds, DS_PARAM_STANDARD,
     "standard", "standard, ntk (layer l computes W_l a / sqrt(d_{l-1})) or meanfield (ntk, and "
     "the output layer W_L a / d_{L-1})", 0, 0},
    {"model.train_output", NULL, DS_OT_BOOL, OFF(model.train_output), 0, 1, 0, NULL, 1, "true",
     "train the last layer (false: it stays at its initial value)", 0, 0},
    {"model.symmetric", NULL, DS_OT_BOOL, OFF(model.symmetric), 0, 1, 0, NULL, 0, "false",
     "seed 000 symmetric init: w_2i = -w_2i-1, a_2i = -a_2i-1 (depth 2, even width)", 0, 0},
    {"model.approx", NULL, DS_OT_ENUM, OFF(model.approx), 0, 0, 0, approx_kinds, DS_APPROX_NONE,
     "none", "train the network (none), its linearisation (lin) or quadratic model (quad) at w0", 0, 0},
    {"model.init", NULL, DS_OT_ENUM, OFF(model.init), 0, 0, 0, init_kinds, DS_INIT_GAUSSIAN,
     "gaussian", "initialisation scheme (see the table of init kinds)", 0, 0},
    {"model.init_scale", "init_scale", DS_OT_DOUBLE, OFF(model.init_scale), 0, NOMAX, 1, NULL, 1.0,
     "1.0", "multiplies every initialisation (cnn: every weight and bias)", 0, 0},
    {"model.init_std", NULL, DS_OT_DOUBLE, OFF(model.init_std), 0, NOMAX, 0, NULL, 0, "0",
     "gaussian / near_identity standard deviation; 0 = 1/sqrt(fan_in) (cnn: > 0 draws every "
     "weight and bias from N(0, (init_scale init_std)^2); 0 = the param's own init)", 0, 0},
    {"model.balanced_identity", NULL, DS_OT_BOOL, OFF(model.balanced_identity), 0, 1, 0, NULL, 0,
     "false", "balanced init with A = init_scale * I (zero-padded) instead of a Gaussian A", 0, 0},
    {"model.init_file", NULL, DS_OT_PATH, OFF(model.init_file), 0, 0, 0, NULL, 0, "\"\"",
     "HDF5 file with W1..WL (and b1..bL) for init: file", 0, 0},
    {"model.gain", NULL, DS_OT_DOUBLE, OFF(model.gain), 0, NOMAX, 1, NULL, 1.0, "1",
     "tanh nets: hidden activation tanh(gain z); ReLU nets without biases: gain relu(z) "
     "(the trainability-fractal study: 1.4142135623730951 for both)", 0, 0},
    {"model.init_offset", NULL, DS_OT_DOUBLE, OFF(model.init_offset), -INFINITY, NOMAX, 0, NULL, 0,
     "0", "added to every entry of W_1 after the initialisation (not scaled by init_scale)", 0, 0},
    {"model.kernel", NULL, DS_OT_INT, OFF(model.kernel), 1, 64, 0, NULL, 3, "3",
     "cnn: kernel size s (s x s convolutions)", 0, 0},
    {"model.stride", NULL, DS_OT_INT, OFF(model.stride), 1, 64, 0, NULL, 1, "1",
     "cnn: stride of every conv layer", 0, 0},
    {"model.padding", NULL, DS_OT_ENUM, OFF(model.padding), 0, 0, 0, paddings, 0, "same",
     "cnn: same (zero padding floor((s-1)/2)) or valid (none)", 0, 0},
    {"model.readout", NULL, DS_OT_ENUM, OFF(model.readout), 0, 0, 0, readouts, 0, "flatten",
     "cnn: flatten (dense readout of all C H W features) or gap (global average pooling, then "
     "dense readout of C)", 0, 0},
    {"model.bias_scale", NULL, DS_OT_DOUBLE, OFF(model.bias_scale), 0, NOMAX, 0, NULL, 1.0, "1",
     "cnn with param ntk: bias scale beta (Z = W * A / sqrt(fan_in) + beta b); standard: 1", 0, 0},
    {"model.net", NULL, DS_OT_ENUM, OFF(model.net), 0, 0, 0, nets, 0, "cnn",
     "cnn: the net (docs/models.md): cnn (model.depth conv layers and the keys below), cnn5 "
     "(4 conv layers: 003's 5-layer CNN), myrtle5, tf_mnist (002's MNIST CNN), wrn (WRN-d-k "
     "without BatchNorm, d = model.depth, k = model.width), dag (003's DenseNet-DAG of Fig. 2.2: "
     "model.depth dense layers of model.width units, each seeing the input and all earlier "
     "layers, edges dropped once with probability model.dag_drop)", 0, 0},
    {"model.pool", NULL, DS_OT_ENUM, OFF(model.pool), 0, 0, 0, pools, 0, "none",
     "cnn, cnn5: none, avg or max pooling (model.pool_size windows, stride = window, no "
     "padding, PyTorch's floor) after every model.pool_every-th conv layer", 0, 0},
    {"model.pool_every", NULL, DS_OT_INT, OFF(model.pool_every), 1, 64, 0, NULL, 1, "1",
     "cnn, cnn5: a pool after conv layers pool_every, 2 pool_every, ...", 0, 0},
    {"model.pool_size", NULL, DS_OT_INT, OFF(model.pool_size), 1, 64, 0, NULL, 2, "2",
     "cnn, cnn5: the pooling window w (w x w, stride w)", 0, 0},
    {"model.hidden", NULL, DS_OT_INT, OFF(model.hidden), 0, INT_MAX, 0, NULL, 0, "0",
     "cnn, cnn5: units of a hidden dense layer + ReLU before the readout (0: none)", 0, 0},
    {"model.dropout", NULL, DS_OT_DOUBLE, OFF(model.dropout), 0, 1, 0, NULL, 0, "0",
     "cnn, cnn5, tf_mnist: dropout probability before the readout (training steps only; "
     "masks a pure function of seed, step, sample, unit; tf_mnist's original: 0.5)", 0, 1},
    {"model.overparam", NULL, DS_OT_BOOL, OFF(model.overparam), 0, 1, 0, NULL, 0, "false",
     "tf_mnist: seed 002's over-parameterisation (each dense layer W a + b becomes W2 W1 a + b, "
     "W1 without bias: + 16C x 16C + d_out x d_out parameters)", 0, 0},
    {"model.dag_drop", NULL, DS_OT_DOUBLE, OFF(model.dag_drop), 0, 1, 0, NULL, 0.5, "0.5",
     "dag: probability that an edge (weight) is dropped, once at init from the point's seed "
     "(a fixed mask; masked weights stay 0; each neuron scaled by 1/sqrt(its kept in-degree))",
     0, 1},
    {"model.dag_readout_drop", NULL, DS_OT_DOUBLE, OFF(model.dag_readout_drop), 0, 1, 0, NULL, 0,
     "0", "dag: probability that a weight of the readout is dropped, as model.dag_drop's edges "
     "(drawn after them; each output unit scaled by 1/sqrt(its kept in-degree) instead of "
     "1/sqrt(d_in)); 0: the readout is not masked", 0, 1},
    {"model.image", NULL, DS_OT_INT_LIST, OFF(model.image), 1, INT_MAX, 0, NULL, 0, "[]",
     "cnn: the input image [C, H, W] (a sample's d_in features in CHW order); [] = the "
     "data kind's (cifar10, cifar100, svhn: 3 x 32 x 32), else one square channel, H = W = "
     "sqrt(data.d_in)", LIST(model.nimage), 0},
    /* ---- data ---- */
    {"data.kind", NULL, DS_OT_ENUM, OFF(data.kind), 0, 0, 0, data_kinds, DS_DATA_TEACHER,
     "teacher", "data set kind (see the table of data kinds)", 0, 0},
    {"data.n_train", NULL, DS_OT_INT, OFF(data.n_train), 1, INT_MAX, 0, NULL, 256, "256",
     "number of training samples n (circle: always 8)", 0, 0},
    {"data.n_test", NULL, DS_OT_INT, OFF(data.n_test), 0, INT_MAX, 0, NULL, 256, "256",
     "number of test samples (0 = no test set)", 0, 0},
    {"data.d_in", NULL, DS_OT_INT, OFF(data.d_in), 1, INT_MAX, 0, NULL, 16, "16",
     "input dimension (set by the kind for fixed-shape and file data)", 0, 0},
    {"data.d_out", NULL, DS_OT_INT, OFF(data.d_out), 1, INT_MAX, 0, NULL, 4, "4",
     "output dimension (set by the kind for fixed-shape and file data)", 0, 0},
    {"data.rank", NULL, DS_OT_INT, OFF(data.rank), 1, INT_MAX, 0, NULL, 0, "min(d_in, d_out)",
     "teacher rank, 1..min(d_in, d_out)", 0, 0},
    {"data.noise", NULL, DS_OT_DOUBLE, OFF(data.noise), 0, NOMAX, 0, NULL, 0.0, "0.0",
     "standard deviation of Gaussian label noise", 0, 0},
    {"data.target_scale", NULL, DS_OT_DOUBLE, OFF(data.target_scale), 0, NOMAX, 1, NULL, 1.0, "1",
     "whitened: singular values of Phi", 0, 0},
    {"data.spectrum", NULL, DS_OT_DOUBLE_LIST, OFF(data.spectrum), 0, NOMAX, 1, NULL, 0, "[]",
     "gaussian_spectrum: covariance eigenvalues (padded with the last); [] = use spectrum_decay",
     LIST(data.nspectrum), 0},
    {"data.spectrum_decay", NULL, DS_OT_DOUBLE, OFF(data.spectrum_decay), 0, NOMAX, 0, NULL, 1.0,
     "1", "gaussian_spectrum without a list: lambda_i = i^-decay", 0, 0},
    {"data.teacher_width", NULL, DS_OT_INT, OFF(data.teacher_width), 1, INT_MAX, 0, NULL, 64, "64",
     "relu_teacher: hidden width of the teacher", 0, 0},
    {"data.sphere_scale", NULL, DS_OT_DOUBLE, OFF(data.sphere_scale), 0, NOMAX, 1, NULL, 1.0, "1",
     "sphere: factor on point 0", 0, 0},
    {"data.path", NULL, DS_OT_PATH, OFF(data.path), 0, 0, 0, NULL, 0, "\"\"",
     "file kinds: the data file (IDX images, libsvm, CSV, HDF5)", 0, 0},
    {"data.labels_path", NULL, DS_OT_PATH, OFF(data.labels_path), 0, 0, 0, NULL, 0, "\"\"",
     "idx: the IDX labels file", 0, 0},
    {"data.test_path", NULL, DS_OT_PATH, OFF(data.test_path), 0, 0, 0, NULL, 0, "\"\"",
     "file kinds: separate test file (\"\" = split off test_fraction)", 0, 0},
    {"data.test_labels_path", NULL, DS_OT_PATH, OFF(data.test_labels_path), 0, 0, 0, NULL, 0,
     "\"\"", "idx: labels of the separate test file", 0, 0},
    {"data.classes", NULL, DS_OT_INT_LIST, OFF(data.classes), 0, INT_MAX, 0, NULL, 0, "[]",
     "keep only these class labels, e.g. [0, 1]; [] = all", LIST(data.nclasses), 0},
    {"data.labels", NULL, DS_OT_ENUM, OFF(data.labels), 0, 0, 0, label_modes, DS_LABELS_VALUE,
     "value", "targets: value (as given), one_hot (class c -> e_c) or pm1 (two classes -> -1/+1)", 0, 0},
    {"data.random_subset", NULL, DS_OT_BOOL, OFF(data.random_subset), 0, 1, 0, NULL, 0, "false",
     "take n_train (n_test) samples at random instead of the first ones", 0, 0},
    {"data.standardize", NULL, DS_OT_BOOL, OFF(data.standardize), 0, 1, 0, NULL, 0, "false",
     "per-feature zero mean, unit variance (train statistics)", 0, 0},
    {"data.pixel_scale", NULL, DS_OT_DOUBLE, OFF(data.pixel_scale), 0, NOMAX, 1, NULL, 1.0, "1",
     "multiply inputs by this (e.g. 0.00392156862745098 = 1/255)", 0, 0},
    {"data.whiten", NULL, DS_OT_BOOL, OFF(data.whiten), 0, 1, 0, NULL, 0, "false",
     "whiten inputs so (1/n) X X^T = I (train statistics)", 0, 0},
    {"data.test_fraction", NULL, DS_OT_DOUBLE, OFF(data.test_fraction), 0, 1, 0, NULL, 0.2, "0.2",
     "file without a test file: the last fraction becomes the test set", 0, 1},
    {"data.libsvm_target_after_semicolon", NULL, DS_OT_BOOL,
     OFF(data.libsvm_target_after_semicolon), 0, 1, 0, NULL, 0, "false",
     "libsvm \"label;target\": use the value after ';' as the target", 0, 0},
    {"data.cifar100_labels", NULL, DS_OT_ENUM, OFF(data.cifar100_coarse), 0, 0, 0, cifar100_label_sets,
     0, "fine", "cifar100: fine (100 classes) or coarse (20 superclasses) labels", 0, 0},
    {"data.standardize_channels", NULL, DS_OT_BOOL, OFF(data.standardize_channels), 0, 1, 0, NULL, 0,
     "false", "per-channel zero mean, unit variance over samples and pixels (train statistics); "
     "images of cifar10/cifar100/svhn have 3 channels, other data 1", 0, 0},
    /* ---- loss ---- */
    {"loss.type", NULL, DS_OT_ENUM, OFF(loss.type), 0, 0, 0, loss_types, DS_LOSS_MSE, "mse",
     "mse (squared error), lp (|f-y|^p) or cross_entropy (softmax, one-hot labels)", 0, 0},
    {"loss.reduction", NULL, DS_OT_ENUM, OFF(loss.reduction), 0, 0, 0, reductions,
     DS_RED_HALF_MEAN, "(required)", "constant c in L = c * sum (f-y)^2", 0, 0},
    {"loss.p", NULL, DS_OT_DOUBLE, OFF(loss.p), 2, NOMAX, 0, NULL, 2.0, "2",
     "lp exponent (>= 2)", 0, 0},
    {"loss.optimum", NULL, DS_OT_BOOL, OFF(loss.optimum), 0, 1, 0, NULL, 0, "false",
     "compute the optimal loss L* (linear models) so loss_gap = L - L* can be recorded", 0, 0},
    /* ---- optimizer ---- */
    {"optimizer.type", NULL, DS_OT_ENUM, OFF(optimizer.type), 0, 0, 0, opt_types, DS_OPT_GD, "gd",
     "update rule (see the table of optimisers)", 0, 0},
    {"optimizer.lr", "lr", DS_OT_DOUBLE, OFF(optimizer.lr), 0, NOMAX, 1, NULL, 0.01, "0.01",
     "learning rate", 0, 0},
    {"optimizer.lr_in", NULL, DS_OT_DOUBLE, OFF(optimizer.lr_in), 0, NOMAX, 0, NULL, 0, "0",
     "gd/sgd: learning rate of the first layer (W_1, b_1); 0 = optimizer.lr", 0, 0},
    {"optimizer.lr_out", NULL, DS_OT_DOUBLE, OFF(optimizer.lr_out), 0, NOMAX, 0, NULL, 0, "0",
     "gd/sgd: learning rate of the last layer (W_L, b_L); 0 = optimizer.lr", 0, 0},
    {"optimizer.lr_units", NULL, DS_OT_ENUM, OFF(optimizer.lr_units), 0, 0, 0, lr_units,
     DS_LR_ABSOLUTE, "absolute",
     "absolute, or lambda0: every learning rate given (lr, lr_in, lr_out, schedule_lrs) is "
     "eta * lambda_0, lambda_0 the top NTK eigenvalue of the point at initialisation, so an lr "
     "axis reads as eta * lambda_0 (seed 003: catapults between 2 and 4 with half_sum)", 0, 0},
    {"optimizer.batch_size", NULL, DS_OT_INT, OFF(optimizer.batch_size), 0, INT_MAX, 0, NULL, 0, "0",
     "minibatch size, <= n_train; 0 = full batch", 0, 0},
    {"optimizer.momentum", NULL, DS_OT_DOUBLE, OFF(optimizer.momentum), 0, 1, 0, NULL, 0.9, "0.9",
     "momentum / nesterov mu", 0, 1},
    {"optimizer.beta1", NULL, DS_OT_DOUBLE, OFF(optimizer.beta1), 0, 1, 0, NULL, 0.9, "0.9",
     "adam first-moment decay", 0, 1},
    {"optimizer.beta2", NULL, DS_OT_DOUBLE, OFF(optimizer.beta2), 0, 1, 0, NULL, 0.999, "0.999",
     "adam second-moment decay", 0, 1},
    {"optimizer.eps", NULL, DS_OT_DOUBLE, OFF(optimizer.eps), 0, NOMAX, 1, NULL, 1e-8, "1e-8",
     "adam / adagrad / rmsprop / adadelta epsilon", 0, 0},
    {"optimizer.rho", NULL, DS_OT_DOUBLE, OFF(optimizer.rho), 0, 1, 0, NULL, 0.95, "0.95",
     "adadelta decay (TensorFlow default)", 0, 1},
    {"optimizer.alpha", NULL, DS_OT_DOUBLE, OFF(optimizer.alpha), 0, 1, 0, NULL, 0.99, "0.99",
     "rmsprop decay (PyTorch default)", 0, 1},
    {"optimizer.initial_accumulator", NULL, DS_OT_DOUBLE, OFF(optimizer.initial_accumulator), 0,
     NOMAX, 0, NULL, 0.1, "0.1", "adagrad initial accumulator s0 (TensorFlow default)", 0, 0},
    {"optimizer.weight_decay", NULL, DS_OT_DOUBLE, OFF(optimizer.weight_decay), 0, NOMAX, 0, NULL,
     0, "0", "L2 penalty, coupled: g += weight_decay * theta", 0, 0},
    {"optimizer.schedule", NULL, DS_OT_ENUM, OFF(optimizer.schedule), 0, 0, 0, sched_kinds,
     DS_SCHED_CONSTANT, "constant",
     "constant lr, piecewise (schedule_lrs from schedule_steps on) or adaptive_norm "
     "(lr * ||theta||^(2-depth))", 0, 0},
    {"optimizer.schedule_steps", NULL, DS_OT_INT64_LIST, OFF(optimizer.schedule_steps), 1, 1e9, 0,
     NULL, 0, "[]", "piecewise: steps (strictly increasing, >= 1) where schedule_lrs take effect",
     LIST(optimizer.nschedule), 0},
    {"optimizer.schedule_lrs", NULL, DS_OT_DOUBLE_LIST, OFF(optimizer.schedule_lrs), 0, NOMAX, 1,
     NULL, 0, "[]", "piecewise: learning rate from the matching schedule step on",
     LIST(optimizer.nschedule), 0},
    /* ---- train ---- */
    {"train.steps", NULL, DS_OT_INT64, OFF(train.steps), 1, 1e9, 0, NULL, 1000, "1000",
     "maximum number of optimiser steps", 0, 0},
    {"train.tol", NULL, DS_OT_DOUBLE, OFF(train.tol), 0, NOMAX, 0, NULL, 0.0, "0",
     "stop early once the train loss is below tol (0 = never)", 0, 0},
    {"train.diverge_above", NULL, DS_OT_DOUBLE, OFF(train.diverge_above), 0, NOMAX, 1, NULL, 1e6,
     "1e6", "declare divergence when the loss exceeds this or is not finite", 0, 0},
    {"train.ranks_per_point", "ranks_per_point", DS_OT_INT, OFF(train.ranks_per_point), 1, INT_MAX, 0,
     NULL, 1, "1", "ranks in the worker team that runs the point (its BLACS grid), or auto: the "
     "smallest power of two whose per-rank share of the point's estimated memory fits "
     "--rank-memory", 0, 0},
    {"train.distributed", NULL, DS_OT_ENUM, OFF(train.distributed), 0, 0, 0, dist_kinds,
     DS_DIST_AUTO, "auto", "train on the team's process grid (weights and activations block-cyclic, "
     "pdgemm): on, off, or auto = on when the team has > 1 rank and the widest layer has >= 512 "
     "units (and the point is supported: not e2e/approx/cross_entropy/record.spectra); a CNN "
     "(model.type cnn) instead splits each step's samples over the team, on or auto = on for a "
     "team of > 1 rank", 0, 0},
    /* ---- record ---- */
    {"record.series", NULL, DS_OT_SERIES, OFF(record.series), 0, 0, 0, ds_series_names,
     ALL_SERIES, "the first six", "series to record", 0, 0},
    {"record.every", NULL, DS_OT_INT64, OFF(record.every), 0, 1e18, 0, NULL, 10, "10",
     "record every k steps (0 = off)", 0, 0},
    {"record.per_decade", NULL, DS_OT_INT, OFF(record.per_decade), 0, INT_MAX, 0, NULL, 10, "10",
     "also record this many log-spaced steps per decade (0 = off)", 0, 0},
    {"record.top_k", NULL, DS_OT_INT, OFF(record.top_k), 1, INT_MAX, 0, NULL, 5, "5",
     "singular values recorded per layer (layer_sv)", 0, 0},
    /* ---- record.spectra (issue 4): a cadence per diagnostic, then parameters ---- */
    CADENCE(layers, "per-layer singular values and norms"),
    CADENCE(e2e, "end-to-end matrix of a linear net"),
    CADENCE(hessian, "top-k Hessian eigenvalues (Lanczos)"),
    CADENCE(hessian_full, "the whole Hessian spectrum"),
    CADENCE(ntk, "NTK eigenvalues, critical lr, loss split, kernel change"),
    CADENCE(agop, "AGOP alignment"),
    CADENCE(activations, "activation singular values (ReLU nets: relu MLPs, CNNs)"),
    CADENCE(escape, "escape-speed proxy"),
    CADENCE(batch_ntk, "SGD: NTK of the step's minibatch (batch critical lr, catapult count)"),
    {"record.spectra.top_k", NULL, DS_OT_INT, OFF(record.spectra.top_k), 1, 4096, 0, NULL, 5, "5",
     "top-k kept by the diagnostics: singular values (layers, activations), eigenvalues (hessian, ntk)",
     0, 0},
    {"record.spectra.lanczos_iters", NULL, DS_OT_INT, OFF(record.spectra.lanczos_iters), 1, 100000, 0,
     NULL, 40, "40", "Lanczos iterations for hessian (>= top_k)", 0, 0},
    {"record.spectra.hessian_full_max", NULL, DS_OT_INT, OFF(record.spectra.hessian_full_max), 1,
     100000, 0, NULL, 4000, "4000", "hessian_full: refuse networks with more parameters than this",
     0, 0},
    {"record.spectra.ntk_max", NULL, DS_OT_INT, OFF(record.spectra.ntk_max), 1, 100000, 0, NULL,
     4096, "4096", "ntk: refuse an NTK matrix with more than this many rows (d_out * n_train)", 0, 0},
    {"record.spectra.kernel_change_2", NULL, DS_OT_BOOL, OFF(record.spectra.kernel_change_2), 0, 1, 0,
     NULL, 0, "false", "ntk: also record ntk/kernel_change_2 = ||K_t - K_0||_2 / ||K_0||_2 (spectral "
     "norms, seed 003 Fig. 2.2; one more eigensolve of K per record)", 0, 0},
    {"record.spectra.split", NULL, DS_OT_INT_LIST, OFF(record.spectra.split), 1, 1e6, 0, NULL, 0,
     "[1, 5, 10]", "ntk loss split sizes s: L<=s / L>s on the top-s NTK eigenvectors (at most 8, "
     "strictly increasing)", LIST(record.spectra.nsplit), 0},
    {"record.spectra.agop_reference", NULL, DS_OT_PATH, OFF(record.spectra.agop_reference), 0, 0, 0,
     NULL, 0, "\"\"", "agop: HDF5 file with dataset G (d_in x d_in); \"\" = the analytic G* of image_rank2 / rank2 / "
     "rank4", 0, 0},
    {"record.spectra.catapult_factor", NULL, DS_OT_DOUBLE, OFF(record.spectra.catapult_factor), 1,
     NOMAX, 1, NULL, 2, "2", "outcome catapult: the loss rose above this factor times its start, then "
     "converged", 0, 0},
    {"record.spectra.loss_rise_rel", NULL, DS_OT_DOUBLE, OFF(record.spectra.loss_rise_rel), 0,
     NOMAX, 0, NULL, 1e-6, "1e-6", "on_loss_rise: a step counts as a rise when its loss exceeds the "
     "previous step's by more than this fraction of it (0 = any rise, even round-off)", 0, 0},
};
const int ds_noptions = (int)(sizeof ds_options / sizeof ds_options[0]);

const ds_option *ds_opt_find(const char *path) {
  for (int i = 0; i < ds_noptions; i++) {
    const ds_option *o = &ds_options[i];
    if (strcmp(o->path, path) == 0 || (o->alias && strcmp(o->alias, path) == 0)) return o;
  }
  return NULL;
}

int ds_opt_index(const ds_option *o) { return (int)(o - ds_options); }

int ds_opt_is_list(const ds_option *o) {
  return o->type == DS_OT_INT_LIST || o->type == DS_OT_INT64_LIST || o->type == DS_OT_DOUBLE_LIST;
}

int ds_opt_is_scalar(const ds_option *o) {
  return o->type != DS_OT_SERIES && o->type != DS_OT_PATH && !ds_opt_is_list(o);
}

/* A word that stands for the value 0 of an integer option, or NULL: "auto"
 * for train.ranks_per_point (0 itself is refused by the range check). */
static const char *opt_word0(const ds_option *o) {
  return o->off == OFF(train.ranks_per_point) && o->type == DS_OT_INT ? "auto" : NULL;
}

/* The scalar type of one element of a list option (the option's own type otherwise). */
static ds_opt_type opt_elem_type(const ds_option *o) {
  switch (o->type) {
  case DS_OT_INT_LIST: return DS_OT_INT;
  case DS_OT_INT64_LIST: return DS_OT_INT64;
  case DS_OT_DOUBLE_LIST: return DS_OT_DOUBLE;
  default: return o->type;
  }
}

int ds_opt_list_count(const ds_option *o, const ds_point_cfg *c) {
  if (!ds_opt_is_list(o)) return 0;
  return *(const int *)((const char *)c + o->cnt_off);
}

double ds_opt_get(const ds_option *o, const ds_point_cfg *c) {
  const char *p = (const char *)c + o->off;
  switch (o->type) {
  case DS_OT_INT:
  case DS_OT_BOOL: return *(const int *)p;
  case DS_OT_ENUM: return (double)*(const int *)p; /* C enums here are int-sized */
  case DS_OT_INT64: return (double)*(const int64_t *)p;
  case DS_OT_DOUBLE: return *(const double *)p;
  case DS_OT_SERIES: return *(const unsigned *)p;
  default: return 0; /* paths and lists have no single numeric value */
  }
}

void ds_opt_set(const ds_option *o, ds_point_cfg *c, double v) {
  char *p = (char *)c + o->off;
  switch (o->type) {
  case DS_OT_INT:
  case DS_OT_BOOL:
  case DS_OT_ENUM: *(int *)p = (int)v; break;
  case DS_OT_INT64: *(int64_t *)p = (int64_t)v; break;
  case DS_OT_DOUBLE: *(double *)p = v; break;
  case DS_OT_SERIES: *(unsigned *)p = (unsigned)v; break;
  default: break; /* paths and lists: written by their own parsers */
  }
}

void ds_opt_defaults(ds_point_cfg *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < ds_noptions; i++) ds_opt_set(&ds_options[i], c, ds_options[i].def);
  /* the one list with a non-empty default */
  static const int split[] = {1, 5, 10};
  c->record.spectra.nsplit = 3;
  memcpy(c->record.spectra.split, split, sizeof split);
}

int ds_opt_list_cap(const ds_option *o) {
  if (o->off == OFF(record.spectra.split))
    return (int)(sizeof ((ds_point_cfg *)0)->record.spectra.split / sizeof(int));
  return DS_MAX_LIST;
}

void ds_fmt_double(double v, char *buf, int n) {
  snprintf(buf, (size_t)n, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, (size_t)n, "%.17g", v);
}

static void opt_format_series(unsigned bits, char *buf, int n) {
  int used = 0;
  buf[0] = 0;
  for (int b = 0; ds_series_names[b]; b++) {
    if (!(bits & (1u << b))) continue;
    used += snprintf(buf + used, (size_t)(used < n ? n - used : 0), "%s%s", used ? "," : "",
                     ds_series_names[b]);
    if (used >= n) return;
  }
}

void ds_opt_format(const ds_option *o, double v, char *buf, int n) {
  switch (opt_elem_type(o)) {
  case DS_OT_INT:
  case DS_OT_INT64: /* a value outside long long (an out-of-range input) prints as a double */
    if (opt_word0(o) && v == 0) snprintf(buf, (size_t)n, "%s", opt_word0(o));
    else if (fabs(v) < 9.2e18) snprintf(buf, (size_t)n, "%lld", (long long)v);
    else ds_fmt_double(v, buf, n);
    break;
  case DS_OT_DOUBLE: ds_fmt_double(v, buf, n); break;
  case DS_OT_BOOL: snprintf(buf, (size_t)n, "%s", v != 0 ? "true" : "false"); break;
  case DS_OT_ENUM: {
    int k = (int)v, nc = 0;
    while (o->choices[nc]) nc++;
    snprintf(buf, (size_t)n, "%s", k >= 0 && k < nc ? o->choices[k] : "?");
    break;
  }
  case DS_OT_SERIES: opt_format_series((unsigned)v, buf, n); break;
  default: buf[0] = 0; break;
  }
}

void ds_opt_format_cfg(const ds_option *o, const ds_point_cfg *c, char *buf, int n) {
  const char *p = (const char *)c + o->off;
  if (o->type == DS_OT_PATH) {
    snprintf(buf, (size_t)n, "%s", p);
    return;
  }
  if (!ds_opt_is_list(o)) {
    ds_opt_format(o, ds_opt_get(o, c), buf, n);
    return;
  }
  int cnt = ds_opt_list_count(o, c), used = 1;
  snprintf(buf, (size_t)n, "[");
  for (int i = 0; i < cnt && used < n; i++) {
    double v = o->type == DS_OT_INT_LIST     ? ((const int *)p)[i]
               : o->type == DS_OT_INT64_LIST ? (double)((const int64_t *)p)[i]
                                             : ((const double *)p)[i];
    char e[64];
    ds_opt_format(o, v, e, sizeof e);
    used += snprintf(buf + used, (size_t)(n - used), "%s%s", i ? "," : "", e);
  }
  if (used < n) snprintf(buf + used, (size_t)(n - used), "]");
}

int ds_cfg_get_text(const ds_point_cfg *c, const char *path, char *buf, int n) {
  const ds_option *o = ds_opt_find(path);
  if (!o) return ds_fail(DS_EINPUT, "unknown configuration option '%s'", path);
  ds_opt_format_cfg(o, c, buf, n);
  return DS_OK;
}

/* ---- parsing scalars ----------------------------------------------------- */

static void opt_choices(const char *const *ch, char *buf, int n) {
  int used = 0;
  buf[0] = 0;
  for (int i = 0; ch[i] && used < n; i++)
    used += snprintf(buf + used, (size_t)(n - used), "%s%s", i ? ", " : "", ch[i]);
}

/* Strict number parse of a whole string; 0 if it is not a finite number. */
static int opt_strtod(const char *s, double *v) {
  if (!*s || isspace((unsigned char)*s)) return 0;
  /* refuse hex floats, nan and inf: the file is for people */
  for (const char *q = s; *q; q++)
    if (!strchr("0123456789+-.eE", *q)) return 0;
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  /* ERANGE with a nonzero finite result is a subnormal (5e-324): a valid double;
   * overflow (inf) and underflow to 0 are refused */
  return *end == 0 && isfinite(*v) && (errno != ERANGE || *v != 0);
}

static int opt_parse_bool(const char *s, double *v) {
  static const char *const t[] = {"true", "yes", "on"}, *const f[] = {"false", "no", "off"};
  for (int i = 0; i < 3; i++) {
    if (strcasecmp(s, t[i]) == 0) return *v = 1, 1;
    if (strcasecmp(s, f[i]) == 0) return *v = 0, 1;
  }
  return 0;
}

int ds_opt_check_range(const char *file, const ds_option *o, double v, int line, int col) {
  char got[64], lo[64], hi[64];
  if (o->type == DS_OT_BOOL || o->type == DS_OT_ENUM || o->type == DS_OT_SERIES) return DS_OK;
  int bad = o->min_excl ? !(v > o->min) : !(v >= o->min);
  bad = bad || v > o->max;
  ds_opt_type et = opt_elem_type(o);
  int hi_excl = o->max_excl && !(v < o->max);
  bad = bad || hi_excl;
  if (!bad) return DS_OK;
  ds_opt_format(o, v, got, sizeof got);
  ds_opt_format(o, o->min, lo, sizeof lo);
  ds_opt_format(o, o->max, hi, sizeof hi);
  if (o->max_excl)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be >= %s and < %s, got %s", file, line, col, o->path,
                   lo, hi, got);
  if (o->min_excl)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be > %s, got %s", file, line, col, o->path, lo, got);
  if (v > o->max && o->max >= (et == DS_OT_INT ? (double)INT_MAX : 1e18))
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: too large (max %s), got %s", file, line, col, o->path, hi,
                   got);
  if (o->max >= (et == DS_OT_INT ? (double)INT_MAX : 1e18))
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be >= %s%s, got %s", file, line, col, o->path, lo,
                   opt_word0(o) ? " or auto" : "", got);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s: must be in %s..%s, got %s", file, line, col, o->path, lo,
                 hi, got);
}

static int opt_type_error(const char *file, const ds_option *o, const ds_yn *v, const char *what) {
  if (ds_yaml_is_null(v) && v->str[0])
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got the null value '%s' (null values are not "
                   "allowed; give the value, or omit the key for the default)", file, v->line, v->col,
                   o->path, what, v->str);
  if (v->kind != DS_YN_SCALAR)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got %s", file, v->line, v->col, o->path,
                   what, ds_yaml_kind_name(v));
  if (!v->str[0] && !v->quoted)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got an empty value", file, v->line, v->col,
                   o->path, what);
  return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected %s, got '%s'", file, v->line, v->col, o->path,
                 what, v->str);
}

static int opt_parse_enum(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  int nc = 0;
  while (o->choices[nc]) nc++;
  if (v->kind == DS_YN_SCALAR && !ds_yaml_is_null(v)) {
    for (int i = 0; i < nc; i++)
      if (strcmp(v->str, o->choices[i]) == 0) return *val = i, DS_OK;
  }
  char list[512];
  opt_choices(o->choices, list, sizeof list);
  const char *sug = v->kind == DS_YN_SCALAR && !ds_yaml_is_null(v) ? ds_suggest(v->str, o->choices, nc) : NULL;
  if (sug)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected one of %s, got '%s' (did you mean '%s'?)", file,
                   v->line, v->col, o->path, list, v->str, sug);
  char what[600];
  snprintf(what, sizeof what, "one of %s", list);
  return opt_type_error(file, o, v, what);
}

int ds_opt_parse_scalar(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  double x = 0;
  if (o->type == DS_OT_SERIES) return ds_opt_parse_series(file, o, v, val);
  if (o->type == DS_OT_ENUM) return opt_parse_enum(file, o, v, val);
  if (v->kind != DS_YN_SCALAR) goto bad_type;
  if (opt_word0(o) && !strcmp(v->str, opt_word0(o))) return *val = 0, DS_OK; /* "auto" */
  ds_opt_type et = opt_elem_type(o);
  switch (et) {
  case DS_OT_BOOL:
    if (!opt_parse_bool(v->str, &x)) goto bad_type;
    break;
  case DS_OT_INT:
  case DS_OT_INT64:
    if (!opt_strtod(v->str, &x)) goto bad_type;
    if (x != floor(x)) goto bad_type;
    if (fabs(x) > 9.0e15) { /* beyond exact doubles: certainly out of range */
      return ds_opt_check_range(file, o, x, v->line, v->col);
    }
    break;
  case DS_OT_DOUBLE:
    if (!opt_strtod(v->str, &x)) goto bad_type;
    break;
  default: break;
  }
  DS_TRY(ds_opt_check_range(file, o, x, v->line, v->col));
  *val = x;
  return DS_OK;
bad_type:
  return opt_type_error(file, o, v,
                        opt_elem_type(o) == DS_OT_BOOL     ? "true or false"
                        : opt_elem_type(o) == DS_OT_DOUBLE ? "a number"
                        : opt_word0(o)                         ? "an integer or auto"
                                                           : "an integer");
}

int ds_opt_parse_list(const char *file, const ds_option *o, const ds_yn *v, ds_point_cfg *c) {
  const char *ex = o->type == DS_OT_DOUBLE_LIST ? "[0.5, 1.0]" : "[1, 2]";
  if (v->kind != DS_YN_SEQ)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected a list such as %s, got %s%s%s", file, v->line,
                   v->col, o->path, ex, v->kind == DS_YN_SCALAR ? "'" : "",
                   v->kind == DS_YN_SCALAR ? v->str : ds_yaml_kind_name(v),
                   v->kind == DS_YN_SCALAR ? "'" : "");
  int cap = ds_opt_list_cap(o);
  if (v->n > cap)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: too many values (%d, limit %d)", file, v->item[cap]->line,
                   v->item[cap]->col, o->path, v->n, cap);
  char *p = (char *)c + o->off;
  for (int i = 0; i < v->n; i++) {
    double x;
    DS_TRY(ds_opt_parse_scalar(file, o, v->item[i], &x));
    if (o->type == DS_OT_INT_LIST) ((int *)p)[i] = (int)x;
    else if (o->type == DS_OT_INT64_LIST) ((int64_t *)p)[i] = (int64_t)x;
    else ((double *)p)[i] = x;
  }
  *(int *)((char *)c + o->cnt_off) = v->n;
  return DS_OK;
}

int ds_opt_parse_series(const char *file, const ds_option *o, const ds_yn *v, double *val) {
  char list[256];
  opt_choices(ds_series_names, list, sizeof list);
  if (v->kind != DS_YN_SEQ)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: expected a list such as [loss, test_loss], got %s", file,
                   v->line, v->col, o->path, ds_yaml_kind_name(v));
  if (v->n == 0)
    return ds_fail(DS_EINPUT, "%s:%d:%d: %s: empty list; name at least one of %s", file, v->line,
                   v->col, o->path, list);
  unsigned bits = 0;
  for (int i = 0; i < v->n; i++) {
    const ds_yn *it = v->item[i];
    int b = -1;
    for (int k = 0; it->kind == DS_YN_SCALAR && ds_series_names[k]; k++)
      if (strcmp(it->str, ds_series_names[k]) == 0) b = k;
    if (b < 0) {
      int nnames = 0;
      while (ds_series_names[nnames]) nnames++;
      const char *sug = it->kind == DS_YN_SCALAR ? ds_suggest(it->str, ds_series_names, nnames) : NULL;
      if (sug)
        return ds_fail(DS_EINPUT, "%s:%d:%d: %s: unknown series '%s' (did you mean '%s'?)", file,
                       it->line, it->col, o->path, it->str, sug);
      return ds_fail(DS_EINPUT, "%s:%d:%d: %s: unknown series %s%s%s; valid: %s", file, it->line,
                     it->col, o->path, it->kind == DS_YN_SCALAR ? "'" : "",
                     it->kind == DS_YN_SCALAR ? it->str : ds_yaml_kind_name(it),
                     it->kind == DS_YN_SCALAR ? "'" : "", list);
    }
    if (bits & (1u << b))
      return ds_fail(DS_EINPUT, "%s:%d:%d: %s: series '%s' listed twice; list each once", file,
                     it->line, it->col, o->path, it->str);
    bits |= 1u << b;
  }
  *val = bits;
  return DS_OK;
}

/* ---- suggestions --------------------------------------------------------- */

int ds_edit_distance(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 63 || lb > 63) return 99;
  int d[64][64];
  for (int i = 0; i <= la; i++) d[i][0] = i;
  for (int j = 0; j <= lb; j++) d[0][j] = j;
  for (int i = 1; i <= la; i++) {
    for (int j = 1; j <= lb; j++) {
      int cost = a[i - 1] != b[j - 1];
      int m = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < m) m = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < m) m = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < m)
        m = d[i - 2][j - 2] + 1; /* transposition */
      d[i][j] = m;
    }
  }
  return d[la][lb];
}

const char *ds_opt_suggest(const char *path) {
  const char *best = NULL;
  int bd = 3, len = (int)strlen(path);
  for (int i = 0; i < ds_noptions; i++) {
    int d = ds_edit_distance(path, ds_options[i].path);
    if (d < bd && 2 * d < len + 1) bd = d, best = ds_options[i].path;
  }
  return best;
}

const char *ds_suggest(const char *key, const char *const *cands, int n) {
  const char *best = NULL;
  int bd = 3, len = (int)strlen(key);
  for (int i = 0; i < n; i++) {
    int d = ds_edit_distance(key, cands[i]);
    if (d < bd && 2 * d < len + 1) {
      bd = d;
      best = cands[i];
    }
  }
  return best;
}
