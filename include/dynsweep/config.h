/* config.h -- the sweep file: YAML (libyaml) -> typed, validated sweep spec,
 * and the grid of points it expands to.
 *
 * Every option has a dotted path ("model.width", "optimizer.lr", ...). One
 * option table (src/config/options.c) drives parsing, validation, applying a
 * grid axis value to a point, hashing and documentation. The four named axes
 * width/depth/lr/init_scale are aliases of model.width, model.depth,
 * optimizer.lr and model.init_scale; any other scalar option may be an axis
 * by its dotted path. Errors are "file:line:col: message" with DS_EINPUT.
 */
#ifndef DYNSWEEP_CONFIG_H
#define DYNSWEEP_CONFIG_H
#include <stdint.h>
#include <stdio.h>

#include "dynsweep/probe.h"

/* Fixed capacities keep ds_point_cfg plain data (copied by value, sent as bytes). */
#define DS_MAX_LIST 64   /* entries of a list option (widths, schedule, spectrum) */
#define DS_MAX_PATH 256  /* file paths */

typedef enum {
  DS_MODEL_LINEAR = 0, /* deep linear MLP */
  DS_MODEL_RELU = 1,   /* deep ReLU MLP (linear output layer) */
  DS_MODEL_E2E = 2,    /* end-to-end matrix W_e of a depth-N linear net, updated by Eq. 9 /
                          Eq. 11 of seed 002 (N = model.depth) */
  DS_MODEL_TANH = 3,   /* deep tanh MLP: hidden A = tanh(model.gain Z), linear output layer */
  DS_MODEL_CNN = 4     /* convolutional net (include/dynsweep/cnn.h): model.depth conv layers of
                          model.width channels, ReLU, flatten or GAP, dense readout */
} ds_model_kind;
/* meanfield (issue 13, Sohl-Dickstein 2024): as ntk, but the output layer
 * computes W_L a / d_{L-1} (1/sqrt(fan_in) twice). */
/* optimizer.lr_units (issue 13, the catapult map): learning rates as given, or
 * in units of 1/lambda_0 (lambda_0: top NTK eigenvalue at initialisation). */
enum { DS_LR_ABSOLUTE = 0, DS_LR_LAMBDA0 = 1 };
typedef enum { DS_PARAM_STANDARD = 0, DS_PARAM_NTK = 1, DS_PARAM_MEANFIELD = 2 } ds_param_kind;
/* Train the network itself, or its linearisation / quadratic (NQM) model around
 * the initial weights w0 (seed 003): f_lin(w) = f(w0) + J(w0)(w-w0), f_quad adds
 * 1/2 (w-w0)^T H_f(w0) (w-w0). */
typedef enum { DS_APPROX_NONE = 0, DS_APPROX_LIN = 1, DS_APPROX_QUAD = 2 } ds_approx_kind;
typedef enum {
  DS_INIT_GAUSSIAN = 0,       /* N(0, (init_scale * std)^2), std = init_std or 1/sqrt(fan_in) */
  DS_INIT_GLOROT_UNIFORM = 1, /* U(-a, a), a = init_scale * sqrt(6 / (fan_in + fan_out)) */
  DS_INIT_HE = 2,             /* N(0, init_scale^2 * 2 / fan_in) */
  DS_INIT_ORTHOGONAL = 3,     /* init_scale * (semi-)orthogonal from QR of a Gaussian */
  DS_INIT_DEF4 = 4,           /* seed 000 Def. 4: var 2/(m_{l-1}+m_l) hidden, 1/m_1 first,
                                 1/m_{N-1} last; times init_scale^2 */
  DS_INIT_BALANCED = 5,       /* seed 001 Procedure 1: W_{1:N} = A exactly, balancedness 0;
                                 A = init_scale * G / sqrt(d_in), G Gaussian (or
                                 init_scale * I with balanced_identity) */
  DS_INIT_NEAR_IDENTITY = 6,  /* seed 002: N(0, (init_scale*init_std)^2) plus 1 on the diagonal */
  DS_INIT_NTK = 7,            /* N(0, init_scale^2) (use with model.param: ntk) */
  DS_INIT_FILE = 8            /* W1..WL (and b1..bL) from the HDF5 file model.init_file */
} ds_init_kind;
typedef enum {
  DS_DATA_TEACHER = 0,        /* x ~ N(0,I), y = T x + noise, T random of rank `rank` */
  DS_DATA_WHITENED = 1,       /* (1/n) X X^T = I exactly, Y = Phi X, Phi random rank `rank`,
                                 scaled by target_scale (seed 001) */
  DS_DATA_GAUSSIAN_SPECTRUM = 2, /* x ~ N(0, diag(spectrum)), y = T x + noise (seed 000) */
  DS_DATA_RELU_TEACHER = 3,   /* y = two-layer ReLU teacher of width teacher_width + noise */
  DS_DATA_RANK2 = 4,          /* seed 003: x ~ N(0,I_d), y = x1 x2 + noise */
  DS_DATA_RANK3 = 5,          /* y = x1 x2 sum_{i<=10} x_i + noise */
  DS_DATA_RANK4 = 6,          /* y = sum_{j<=4} prod_{i<=j} x_i + noise */
  DS_DATA_FULLRANK = 7,       /* y = ||x|| / sqrt(d) + noise */
  DS_DATA_TWO_GAUSSIANS = 8,  /* 1-D: x ~ N(+-2, 1), y = +-1 (seed 003) */
  DS_DATA_CIRCLE = 9,         /* seed 004: x_j = (sin 2 pi j/8, cos 2 pi j/8), y_j = (-1)^j */
  DS_DATA_SPHERE = 10,        /* points on the unit sphere, y = T x; point 0 scaled by
                                 sphere_scale (seed 003 Fig. 4.5) */
  DS_DATA_IDX = 11,           /* MNIST-format IDX files: path (images), labels_path */
  DS_DATA_LIBSVM = 12,        /* libsvm text "label[;target] i:v ..." (seed 002 gas data) */
  DS_DATA_CSV = 13,           /* CSV: last column target(s) given by target_cols */
  DS_DATA_HDF5 = 14,          /* HDF5 datasets X (n x d_in) and y (n or n x d_out) */
  DS_DATA_IID_GAUSSIAN = 15,  /* x ~ N(0, I), y ~ N(0, I) independent of x (the
                                 trainability study, Sohl-Dickstein 2024) */
  DS_DATA_CIFAR10 = 16,       /* CIFAR-10 binary batches (3073-byte records), 3 x 32 x 32 */
  DS_DATA_CIFAR100 = 17,      /* CIFAR-100 binary (3074-byte records), fine or coarse labels */
  DS_DATA_SVHN = 18,          /* SVHN .mat (MAT level 5, X [32,32,3,N] uint8, y 1..10) */
  DS_DATA_IMAGE_RANK2 = 19    /* seed 003's synthetic image task: x ~ N(0, I) on a 1 x s x s
                                 image (d_in = s^2), y = (u1.x)(u2.x) + noise, u1, u2 two
                                 orthonormal 3 x 3 edge filters at the centre: G* = u1u1' + u2u2' */
} ds_data_kind;
typedef enum {
  DS_LABELS_VALUE = 0,   /* regression targets as given */
  DS_LABELS_ONE_HOT = 1, /* class c -> e_c (d_out = number of classes) */
  DS_LABELS_PM1 = 2      /* two classes -> -1 / +1 (d_out = 1) */
} ds_label_mode;
typedef enum { DS_LOSS_MSE = 0, DS_LOSS_LP = 1, DS_LOSS_CE = 2 } ds_loss_kind;
/* mse: L = c * sum_{samples i, outputs k} (f_ki - y_ki)^2
 * lp:  L = c * sum |f_ki - y_ki|^p, where the "half" reductions mean 1/p
 * ce:  L = c * sum_i -log softmax(f_i)_{y_i}  (Y one-hot), sum or mean only */
typedef enum {
  DS_RED_SUM = 0,       /* c = 1        */
  DS_RED_HALF_SUM = 1,  /* c = 1/2  (lp: 1/p)      */
  DS_RED_MEAN = 2,      /* c = 1/n      */
  DS_RED_HALF_MEAN = 3  /* c = 1/(2n) (lp: 1/(p n)) */
} ds_reduction;
typedef enum {
  DS_OPT_GD = 0,       /* full batch: theta -= lr * g */
  DS_OPT_SGD = 1,      /* minibatch of batch_size, sampled without replacement per epoch */
  DS_OPT_MOMENTUM = 2, /* heavy ball (PyTorch form): v = mu v + g; theta -= lr v */
  DS_OPT_NESTEROV = 3, /* PyTorch nesterov: v = mu v + g; theta -= lr (g + mu v) */
  DS_OPT_ADAGRAD = 4,  /* s += g^2; theta -= lr g / (sqrt(s) + eps); s0 = initial_accumulator */
  DS_OPT_ADADELTA = 5, /* Zeiler: rho, eps; theta -= lr * delta */
  DS_OPT_RMSPROP = 6,  /* s = alpha s + (1-alpha) g^2; theta -= lr g / (sqrt(s) + eps) */
  DS_OPT_ADAM = 7      /* Kingma-Ba with bias correction, beta1, beta2, eps */
} ds_opt_kind;
typedef enum {
  DS_SCHED_CONSTANT = 0,
  DS_SCHED_PIECEWISE = 1,     /* lr = schedule_lrs[i] from step schedule_steps[i] on */
  DS_SCHED_ADAPTIVE_NORM = 2  /* seed 004: lr_t = lr * ||theta||^(2 - L), L = depth */
} ds_sched_kind;

/* record.series bit set */
enum {
  DS_REC_LOSS = 1 << 0,       /* train loss, "loss" */
  DS_REC_TEST_LOSS = 1 << 1,  /* "test_loss" */
  DS_REC_GRAD_NORM = 1 << 2,  /* ||grad||_2 over all parameters, "grad_norm" */
  DS_REC_PARAM_NORM = 1 << 3, /* ||theta||_2, "param_norm" */
  DS_REC_LAYER_FRO = 1 << 4,  /* ||W_l||_F per layer, "layer_fro" (ncols = depth) */
  DS_REC_LAYER_SV = 1 << 5,   /* top-k singular values of W_l, "sv/W<l>" (ncols = k) */
  DS_REC_LOSS_GAP = 1 << 6,   /* L - L*, "loss_gap" (linear models, loss.optimum) */
  DS_REC_LR = 1 << 7          /* learning rate in effect, "lr" */
};

typedef struct {
  ds_model_kind type;
  int bias;          /* 0/1 */
  int width;         /* hidden width (axis "width"), used when nwidths == 0 */
  int depth;         /* number of weight matrices (axis "depth") */
  ds_init_kind init;
  double init_scale; /* axis "init_scale": multiplies every initialisation */
  /* --- issue 3 --- */
  int nwidths;                  /* model.widths given: hidden widths per layer (depth-1) */
  int widths[DS_MAX_LIST];
  ds_param_kind param;          /* standard, or NTK: layer l computes W_l a / sqrt(d_{l-1}) */
  int train_output;             /* 0: the last layer stays at its initial value */
  int symmetric;                /* seed 000: rows/cols paired w_2i = -w_2i-1, a_2i = -a_2i-1 */
  ds_approx_kind approx;
  double init_std;              /* gaussian / near_identity std; 0 = 1/sqrt(fan_in) */
  int balanced_identity;        /* balanced init with A = init_scale * I (padded) */
  char init_file[DS_MAX_PATH];  /* init: file */
  /* --- issue 13 --- */
  double gain;                  /* tanh: hidden A = tanh(gain Z) (the study: sqrt 2) */
  double init_offset;           /* added to every entry of W_1 after the init draw */
  /* --- issue 26: model.type cnn (width = channels, depth = conv layers) --- */
  int kernel, stride;           /* s x s kernels, stride t */
  int padding;                  /* 0: same, 1: valid */
  int readout;                  /* DS_CNN_FLATTEN (0) or DS_CNN_GAP (1) */
  double bias_scale;            /* ntk: beta */
  int net;                      /* model.net: DS_NET_* (cnn.h) */
  int pool;                     /* 0 none, 1 avg, 2 max */
  int pool_every, pool_size, hidden;
  double dropout;
  int overparam;                /* tf_mnist: 002's factored dense layers */
  double dag_drop;              /* dag: edge drop probability (003 Fig. 2.2: 0.5) */
  double dag_readout_drop;      /* dag: the readout's edge drop probability (0: unmasked) */
  int nimage;                   /* model.image given: 3 entries C, H, W */
  int image[DS_MAX_LIST];       /* (list capacity; a cnn takes 3) */
} ds_model_spec;

typedef struct {
  ds_data_kind kind;
  int n_train, n_test, d_in, d_out;
  int rank;      /* teacher rank, 1..min(d_in, d_out) */
  double noise;  /* label noise std */
  /* --- issue 3 --- */
  double target_scale;           /* whitened: Phi's singular values (default 1) */
  int nspectrum;                 /* gaussian_spectrum: covariance eigenvalues ... */
  double spectrum[DS_MAX_LIST];  /* ... given as a list (padded with the last value) */
  double spectrum_decay;         /* ... or lambda_i = i^-decay when the list is empty */
  int teacher_width;             /* relu_teacher hidden width */
  double sphere_scale;           /* sphere: factor on point 0 */
  char path[DS_MAX_PATH];        /* file kinds: data file (IDX images, libsvm, CSV, HDF5) */
  char labels_path[DS_MAX_PATH]; /* IDX labels file */
  char test_path[DS_MAX_PATH];   /* optional separate test files (else test_fraction split) */
  char test_labels_path[DS_MAX_PATH];
  int nclasses;                  /* class subset (IDX/CSV/libsvm labels), e.g. [0, 1] */
  int classes[DS_MAX_LIST];
  ds_label_mode labels;
  int random_subset;             /* take n_train (n_test) samples at random, not the first */
  int standardize;               /* per-feature zero mean, unit variance (train statistics) */
  double pixel_scale;            /* multiply inputs (e.g. 1/255); 1 = none */
  int whiten;                    /* whiten inputs so (1/n) X X^T = I (train statistics) */
  double test_fraction;          /* files without a test file: last fraction becomes test */
  int libsvm_target_after_semicolon; /* "label;target": use the value after ';' */
  /* --- issue 26 --- */
  int cifar100_coarse;           /* cifar100: the 20 coarse labels instead of the 100 fine ones */
  int standardize_channels;      /* per-channel zero mean, unit variance (train statistics) */
} ds_data_spec;

typedef struct {
  ds_loss_kind type;
  ds_reduction reduction;
  double p;          /* lp exponent, >= 2 */
  int optimum;       /* compute L* (linear models) so L - L* can be recorded */
} ds_loss_spec;

typedef struct {
  ds_opt_kind type;
  double lr; /* axis "lr" */
  /* --- issue 3 --- */
  int batch_size;       /* sgd and others: 0 = full batch */
  double momentum;      /* momentum / nesterov mu (0.9) */
  double beta1, beta2;  /* adam (0.9, 0.999) */
  double eps;           /* adam/adagrad/rmsprop/adadelta epsilon (1e-8) */
  double rho;           /* adadelta decay (0.95, TensorFlow) */
  double alpha;         /* rmsprop decay (0.99, PyTorch) */
  double initial_accumulator; /* adagrad s0 (0.1, TensorFlow) */
  double weight_decay;  /* L2: g += weight_decay * theta (coupled) */
  ds_sched_kind schedule;
  int nschedule;
  int64_t schedule_steps[DS_MAX_LIST]; /* increasing, first >= 1 */
  double schedule_lrs[DS_MAX_LIST];
  /* --- issue 13 --- */
  double lr_in, lr_out; /* gd/sgd: learning rates of the first and last layer (0 = lr) */
  int lr_units;         /* DS_LR_ABSOLUTE, or DS_LR_LAMBDA0: the rates above are eta * lambda_0 */
} ds_optim_spec;

typedef struct {
  int64_t steps;        /* max steps */
  double tol;           /* stop (done) when train loss < tol; 0 = never */
  double diverge_above; /* diverged when loss > this or not finite */
  int ranks_per_point;  /* worker team size of the point (>= 1); 0 = auto (ds_point_team_size) */
  int distributed;      /* DS_DIST_AUTO/ON/OFF: train on the team's grid (dtrain.h) */
} ds_train_spec;
/* train.distributed: auto = on when the team has > 1 rank, the widest layer has
 * >= DS_DIST_AUTO_WIDTH units and the point is supported (docs/spectra.md). */
enum { DS_DIST_AUTO = 0, DS_DIST_ON = 1, DS_DIST_OFF = 2, DS_DIST_AUTO_WIDTH = 512 };

/* When a diagnostic is computed: step 0, the last step, every k steps, k
 * log-spaced steps per decade, and/or each step whose loss rose above the
 * previous step's (catapults). All zero = never. */
typedef struct {
  int64_t every;
  int per_decade;
  int on_loss_rise;
} ds_cadence;

/* record.spectra: the diagnostics of issue 4 (definitions in docs/store.md). */
typedef struct {
  ds_cadence layers;      /* per layer: top-k singular values, ||W||_F, ||W||_2, s1/s2,
                             stable rank ||W||_F^2/||W||_2^2, tail ratio sum_{i>=2} s_i^2 / sum s_i^2 */
  ds_cadence e2e;         /* linear nets: singular values of W_{1:N}, balancedness per layer pair,
                             deficiency margin sigma_min(Phi) - ||W_{1:N} - Phi||_F (Phi = Y X^T (X X^T)^-1),
                             residual projected on each principal component of X */
  ds_cadence hessian;     /* top-k Hessian eigenvalues (Lanczos on exact HVPs) */
  ds_cadence hessian_full;/* the whole Hessian spectrum (ScaLAPACK), when nparams <= hessian_full_max */
  ds_cadence ntk;         /* top-k eigenvalues of K = J J^T on the training set, critical lr,
                             loss split L<=s / L>s, ||K_t - K_0||_F / ||K_0||_F */
  ds_cadence agop;        /* AGOP (1/n) sum grad_x f grad_x f^T and its alignment with the reference */
  ds_cadence activations; /* ReLU nets (MLP, CNN: each ReLU): top-k singular values of each Z^sigma_l, nonlinearity ratio */
  ds_cadence escape;      /* escape-speed proxy -Tr[G^T f_theta~(X)], theta~ = sqrt(L) theta/||theta|| */
  ds_cadence batch_ntk;   /* SGD: NTK of the step's minibatch: batch critical lr, catapult count
                             (unset: evaluated with every ntk record) */
  int top_k;              /* eigenvalues kept for hessian / ntk (default 5) */
  int lanczos_iters;      /* Lanczos iterations (default 40) */
  int hessian_full_max;   /* parameter-count limit for hessian_full (default 4000) */
  int ntk_max;            /* limit on k*n for the NTK matrix (default 4096) */
  int kernel_change_2;    /* ntk: also record ||K_t - K_0||_2 / ||K_0||_2 (default 0) */
  int nsplit;             /* loss split sizes s (default [1, 5, 10]) */
  int split[8];
  char agop_reference[DS_MAX_PATH]; /* HDF5 file with dataset G (d_in x d_in); "" = the analytic
                                       G* of the rank2/rank4 tasks */
  double catapult_factor; /* outcome "catapult": loss rose above factor x its start, then converged (default 2) */
  double loss_rise_rel;   /* on_loss_rise fires when L_t > L_{t-1} (1 + loss_rise_rel) (default 1e-6) */
} ds_spectra_spec;

/* A cadence that ever fires (every, per_decade or on_loss_rise set). */
static inline int ds_cadence_on(const ds_cadence *c) {
  return c->every > 0 || c->per_decade > 0 || c->on_loss_rise;
}
/* Some record.spectra diagnostic is on. */
int ds_spectra_any_on(const ds_spectra_spec *sp);

typedef struct {
  unsigned series;   /* DS_REC_* bits */
  int64_t every;     /* record every k steps (0 = off) */
  int per_decade;    /* also log-spaced: this many records per decade of steps (0 = off) */
  int top_k;         /* singular values per layer */
  ds_spectra_spec spectra; /* issue 4 */
} ds_record_spec;

/* One fully resolved point configuration (base + axis values applied). */
typedef struct {
  ds_model_spec model;
  ds_data_spec data;
  ds_loss_spec loss;
  ds_optim_spec optimizer;
  ds_train_spec train;
  ds_record_spec record;
} ds_point_cfg;

typedef struct {
  char path[64];  /* canonical dotted path, e.g. "optimizer.lr" */
  char name[64];  /* as shown in tables: "lr", "width", or the path */
  int nvals;
  double *val;    /* numeric value of each entry (enum options: the enum code) */
  char **text;    /* canonical text of each entry ("0.001", "relu") */
  int line, col;  /* where it was declared, for messages */
} ds_axis;

/* The file-name options: "model.init_file", "data.path", "data.labels_path",
 * "data.test_path", "data.test_labels_path", "record.spectra.agop_reference". */
#define DS_NFILE_OPTS 6
extern const char *const ds_file_opts[DS_NFILE_OPTS];

typedef struct {
  char *path;     /* file name as given */
  char *text;     /* the file's text, stored verbatim in the store */
  char name[128];
  uint64_t seed;
  int replicas;
  ds_point_cfg base;
  int naxes;
  ds_axis *axes;
  uint64_t hash;  /* hash of the meaning: canonical values, not formatting */
  int rank_auto;  /* data.rank omitted: every point uses min(d_in, d_out) */
  /* where each file-name option (ds_file_opts order) was given; 0 = not given */
  int file_line[DS_NFILE_OPTS], file_col[DS_NFILE_OPTS];
  /* issue 13: map sweeps (include/dynsweep/map.h, docs/maps.md) */
  int map;              /* a map: section: points record their outcome only, as arrays */
  int64_t map_tile;     /* map.tile: points per tile (0 = auto: ds_map_tile_points) */
  int map_early_stop;   /* map.early_stop: a point stops once its loss reaches the cap
                           (map.h; default 0: the study's measure over every step) */
  int refine_levels;    /* grid.refine.levels: 0 = dense; else the refined axes hold the
                           full-resolution values ((num - 1) * 2^levels + 1 of them) */
  int refine_axes[2];   /* grid.refine.axes: the two refined axes (indices into axes) */
  double store_bytes;   /* issue 14: the store's estimated size (row sweeps; 0 for maps) */
} ds_sweep;

typedef struct {
  int64_t id;     /* combo * replicas + replica */
  int64_t combo;  /* index into the Cartesian product, last axis fastest */
  int replica;
  ds_point_cfg cfg;
  double cost;    /* estimated FLOPs, see ds_point_cost */
} ds_point;

/* Hard limits (a grid larger than this is refused before anything runs). */
#define DS_MAX_POINTS 1000000
/* Map sweeps (map:) are limited by the memory and disk estimates `plan` and
 * `run` print (ds_map_bytes), and by this sanity bound. */
#define DS_MAX_MAP_POINTS (1LL << 36)
#define DS_MAX_REFINE_LEVELS 16
/* Points per tile of a map sweep: map.tile, or by default the power of two
 * whose estimated FLOPs (ds_point_cost) take about DS_MAP_TILE_S seconds at a
 * nominal 10 GFLOP/s, in 64..16384: fixed by the sweep, not by the machine. */
#define DS_MAP_TILE_S 0.5
int64_t ds_map_tile_points(const ds_sweep *s);
#define DS_MAX_AXES 16

int ds_sweep_load(const char *path, ds_sweep *out);
/* The text of a sweep file: ds_read_file (a regular file of at most 16 MiB)
 * and no NUL bytes ("FILE:LINE: NUL byte ..."), DS_EINPUT otherwise. */
int ds_sweep_read(const char *path, char **text, size_t *len);
/* Opens and checks every file the sweep names against what its points need
 * (issue 11): each data file read in full with the workers' loaders (finite
 * values, IDX header vs size, CSV/libsvm syntax, HDF5 types), the init file's
 * W1..WL (and b1..bL with model.bias) in the shape of every depth/width of
 * the grid, finite; agop_reference G (d_in x d_in), finite. Each distinct
 * file/shape requirement is checked once, whatever the number of points.
 * DS_EINPUT "SWEEP:LINE:COL: OPTION: FILE: what was found, what was expected". */
int ds_sweep_check_inputs(const ds_sweep *sw);
/* The sweep's input files as text, one "PATH\tSIZE\tHASH" line each (HASH:
 * FNV-1a 64 of the file's bytes, 16 hex digits), and one hash over that text.
 * *list is malloc'ed. Files that cannot be read: DS_EINPUT. */
int ds_sweep_inputs_hash(const ds_sweep *sw, char **list, uint64_t *hash);
int ds_sweep_parse(const char *path, const char *text, ds_sweep *out);
/* issue 3 (config room): ds_sweep_parse with flags. DS_SWEEP_NO_FILES: do not
 * touch the files a sweep names (no existence checks, no ds_data_probe, so
 * data.d_in/d_out of file data keep their written or default values); for
 * re-reading a sweep kept in a store (ls/show) where the files may be gone.
 * Relative file names are resolved against the directory of `path` either way. */
#define DS_SWEEP_NO_FILES 1
int ds_sweep_parse_flags(const char *path, const char *text, int flags, ds_sweep *out);
/* issue 13: the sweep with command-line overrides, each "KEY=VALUE" (KEY an
 * option's dotted path or grid alias, name, seed, grid, grid.replicas or grid.AXIS;
 * VALUE a one-line YAML scalar or flow value). The text is the file's with
 * an "overrides:" map of them appended (out->text, what a store keeps), then
 * parsed and validated exactly as a file; errors about an override name it
 * ("--set KEY=VALUE: ..."). nset = 0 is ds_sweep_parse. A sweep that already
 * has an overrides: map takes no --set (DS_EINPUT). */
int ds_sweep_parse_set(const char *path, const char *text, int nset, char *const *sets,
                       ds_sweep *out);
int ds_sweep_load_set(const char *path, int nset, char *const *sets, ds_sweep *out);
void ds_sweep_free(ds_sweep *s);
int64_t ds_sweep_npoints(const ds_sweep *s);
int ds_sweep_point(const ds_sweep *s, int64_t id, ds_point *out);
/* Estimated floating-point operations of a whole point (training + records). */
double ds_point_cost(const ds_point_cfg *c);
/* Parameters of a point's model (a CNN's: ds_cnn_nparams of its net). */
double ds_point_nparams(const ds_point_cfg *c);
/* Estimated peak memory of one point on one rank (bytes): parameters,
 * gradient and optimiser state, data, activations, SVD workspaces and the
 * diagnostics' matrices (docs/sweep-spec.md, "Teams"); a CNN's J under the
 * budget of a rank whose memory is not known (ds_point_cnn_jbytes). */
double ds_point_mem_bytes(const ds_point_cfg *c);
/* Estimated peak memory of one member of a team of `team` ranks running the
 * point: ds_point_mem_bytes / team for an MLP (pooled); a CNN keeps theta,
 * its data and work space on every member and splits only the NTK's J and
 * the AGOP's input gradients (src/config/cost.c), J under the budget
 * ds_point_cnn_jbytes(c, team, rank_mem_bytes) (MLPs ignore rank_mem_bytes). */
double ds_point_rank_mem_bytes(const ds_point_cfg *c, int team, double rank_mem_bytes);
/* The CNN NTKs a point computes, in samples (0: none): on the training set
 * (record.spectra.ntk, or optimizer.lr_units lambda0 at step 0) and on a
 * minibatch (batch_ntk, or ntk under SGD; GD's batch is the training set).
 * plan's estimate and the worker's J budget (src/worker/point.c) both ask
 * this. */
void ds_point_cnn_ntks(const ds_point_cfg *c, int *n_full, int *n_batch);
/* A CNN NTK's budget for its Jacobian J on each member of a team of `team`
 * ranks that have rank_mem_bytes each (ds_rank_memory; plan and run use the
 * same figure, the same on every member: the split / blocked choice,
 * ds_diag_cnn_ntk_split_fits, is collective). The rule: what a rank has,
 * less DS_CNN_JBYTES_MARGIN of it (the process's own MPI, HDF5 and library
 * memory, which the estimate leaves out: a trivial CNN run's peak RSS is
 * 39 MB, tests/cnn_plan_mem.sh; the allocator's slack; the estimate's own
 * error -- 1/8 is 128 MB of a 1 GiB rank, 2 GB of a 16 GB one), less the
 * rest of the point (ds_point_rank_mem_bytes without J); at most what the
 * point's largest NTK can use (the split J when the team can split it, else
 * all of J: more would never be touched), at least two rows of J (the
 * blocked path's least; a point that cannot afford even that does not fit,
 * ds_point_misfit). rank_mem_bytes <= 0 or infinite (not known, no limit
 * found): DS_CNN_JBYTES_UNKNOWN, capped alike. The estimate of the point
 * (ds_point_rank_mem_bytes) counts the J this budget gives. */
double ds_point_cnn_jbytes(const ds_point_cfg *c, int team, double rank_mem_bytes);
#define DS_CNN_JBYTES_MARGIN 0.125
#define DS_CNN_JBYTES_UNKNOWN 1073741824.0 /* 1 GiB: the budget before it followed the rank */
/* Team size of a point: train.ranks_per_point, or for auto (0) the smallest
 * power of two t with ds_point_mem_bytes / t <= rank_mem_bytes (a CNN: with
 * ds_point_rank_mem_bytes(c, t) <= rank_mem_bytes, doubling t only while that
 * drops; its NTK's J takes what is left under ds_point_cnn_jbytes, so J alone
 * makes a team larger only when not even two rows of it fit). */
int ds_point_team_size(const ds_point_cfg *c, double rank_mem_bytes);
/* Estimated bytes the point's trajectory occupies in the store. */
double ds_point_store_bytes(const ds_point_cfg *c);
/* Estimated seconds of a whole point on one rank from the probed rates
 * (probe.h): its GEMMs at their shapes, passes, records, diagnostics. */
double ds_point_seconds(const ds_point_cfg *c, const ds_probe *pr);
/* A sweep's estimate (estimate.c): seconds, team and distributed training
 * of every point, their sum; wall seconds on R ranks (R - 1 workers, longest
 * first); the lines `plan` and `submit --dry-run` print. */
typedef struct {
  int64_t n;
  double *sec, core_s;
  int *team;
  char *dist;
} ds_estimate;
int ds_sweep_estimate(const ds_sweep *sw, const ds_probe *pr, double rank_mem_bytes, ds_estimate *e);
void ds_estimate_free(ds_estimate *e);
double ds_estimate_wall(const ds_estimate *e, int ranks);
void ds_estimate_fmt(double seconds, char *buf, size_t n);
void ds_estimate_basis(const ds_probe *pr, char *buf, size_t n);
void ds_estimate_print(FILE *f, const ds_estimate *e, const ds_probe *pr);
/* Map sweeps (issue 13): what a map costs. disk_bytes is the bound the map
 * store keeps (DS_MAP_DISK_BYTES per pixel, docs/store.md "Map stores");
 * trained_lo: pixels trained (a refined map: with a smooth boundary). */
#define DS_MAP_DISK_BYTES 16
typedef struct {
  int64_t pixels, tile;
  double coarse, trained_lo, trained_hi;
  double rank0_bytes, disk_bytes;
} ds_map_cost;
void ds_map_bytes(const ds_sweep *sw, ds_map_cost *mc);
/* A refined map's trained pixels per level so far, from a store of the same
 * map refined to fewer (or as many) levels: `plan --from STORE` extrapolates
 * the deeper levels from the last growth a level (issue 13). */
typedef struct {
  const char *path;      /* the store */
  int levels;            /* complete levels in trained[1..levels] (>= 2) */
  int running;           /* a level after them was still running (not used) */
  int64_t trained[33];   /* [0] the coarse grid */
} ds_map_levels;
/* `plan` of a map sweep: pixels, tiles, refinement, time, memory and disk;
 * DS_EINPUT when rank 0's memory (has) cannot hold the map. tile_sec: the
 * seconds a point takes in tiles, measured (ds_tile_seconds x steps), or 0:
 * then the one-at-a-time model's. */
int ds_map_plan_print(FILE *f, const ds_sweep *sw, const ds_probe *pr, double has, const char *has_why,
                      const ds_map_levels *from, double tile_sec);
void ds_estimate_print_submit(FILE *f, const ds_estimate *e, const ds_probe *pr, int ranks, const char *ranks_why,
                              const char *time, int time_given, long time_s, long signal_s, int signal_given,
                              long max_jobs);
/* Canonical text of a configuration option value, e.g. for "model.type". */
int ds_cfg_get_text(const ds_point_cfg *c, const char *path, char *buf, int n);
/* Layer dimensions of a point's network: dims[0]=d_in, dims[depth]=d_out. */
void ds_point_dims(const ds_point_cfg *c, int *dims);
/* "Did you mean": the candidate nearest to key (edit distance <= 2 and less
 * than half its length), or NULL; and the nearest option path. */
const char *ds_suggest(const char *key, const char *const *cands, int n);
const char *ds_opt_suggest(const char *path);
/* `dynsweep keys`: every key of a sweep file, from the option table and the
 * structural keys (config/keys.c); markdown = the table of docs/sweep-spec.md
 * ("Key index"). */
void ds_keys_print(FILE *f, int markdown);
/* "model.width 16 -> 32, ...": the options whose value differs between a and
 * b, in the table's order; returns how many (0: the same configuration). */
int ds_cfg_diff(const ds_point_cfg *a, const ds_point_cfg *b, char *buf, size_t n);
#endif
