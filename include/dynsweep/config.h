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

typedef enum { DS_MODEL_LINEAR = 0, DS_MODEL_RELU = 1 } ds_model_kind;
typedef enum { DS_INIT_GAUSSIAN = 0 } ds_init_kind;
typedef enum { DS_DATA_TEACHER = 0 } ds_data_kind;
typedef enum { DS_LOSS_MSE = 0 } ds_loss_kind;
/* L = c * sum_{samples i, outputs k} (f_ki - y_ki)^2 with c given by: */
typedef enum {
  DS_RED_SUM = 0,       /* c = 1        */
  DS_RED_HALF_SUM = 1,  /* c = 1/2      */
  DS_RED_MEAN = 2,      /* c = 1/n      */
  DS_RED_HALF_MEAN = 3  /* c = 1/(2n)   */
} ds_reduction;
typedef enum { DS_OPT_GD = 0 } ds_opt_kind;

/* record.series bit set */
enum {
  DS_REC_LOSS = 1 << 0,       /* train loss, "loss" */
  DS_REC_TEST_LOSS = 1 << 1,  /* "test_loss" */
  DS_REC_GRAD_NORM = 1 << 2,  /* ||grad||_2 over all parameters, "grad_norm" */
  DS_REC_PARAM_NORM = 1 << 3, /* ||theta||_2, "param_norm" */
  DS_REC_LAYER_FRO = 1 << 4,  /* ||W_l||_F per layer, "layer_fro" (ncols = depth) */
  DS_REC_LAYER_SV = 1 << 5    /* top-k singular values of W_l, "sv/W<l>" (ncols = k) */
};

typedef struct {
  ds_model_kind type;
  int bias;          /* 0/1 */
  int width;         /* hidden width (axis "width") */
  int depth;         /* number of weight matrices (axis "depth") */
  ds_init_kind init;
  double init_scale; /* axis "init_scale": W_ij ~ N(0, (init_scale^2)/fan_in) */
} ds_model_spec;

typedef struct {
  ds_data_kind kind;
  int n_train, n_test, d_in, d_out;
  int rank;      /* teacher rank, 1..min(d_in, d_out) */
  double noise;  /* label noise std */
} ds_data_spec;

typedef struct {
  ds_loss_kind type;
  ds_reduction reduction;
} ds_loss_spec;

typedef struct {
  ds_opt_kind type;
  double lr; /* axis "lr" */
} ds_optim_spec;

typedef struct {
  int64_t steps;        /* max steps */
  double tol;           /* stop (done) when train loss < tol; 0 = never */
  double diverge_above; /* diverged when loss > this or not finite */
} ds_train_spec;

typedef struct {
  unsigned series;   /* DS_REC_* bits */
  int64_t every;     /* record every k steps (0 = off) */
  int per_decade;    /* also log-spaced: this many records per decade of steps (0 = off) */
  int top_k;         /* singular values per layer */
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
#define DS_MAX_AXES 16

int ds_sweep_load(const char *path, ds_sweep *out);
int ds_sweep_parse(const char *path, const char *text, ds_sweep *out);
void ds_sweep_free(ds_sweep *s);
int64_t ds_sweep_npoints(const ds_sweep *s);
int ds_sweep_point(const ds_sweep *s, int64_t id, ds_point *out);
/* Estimated floating-point operations of a whole point (training + records). */
double ds_point_cost(const ds_point_cfg *c);
/* Estimated bytes the point's trajectory occupies in the store. */
double ds_point_store_bytes(const ds_point_cfg *c);
/* Canonical text of a configuration option value, e.g. for "model.type". */
int ds_cfg_get_text(const ds_point_cfg *c, const char *path, char *buf, int n);
/* Layer dimensions of a point's network: dims[0]=d_in, dims[depth]=d_out. */
void ds_point_dims(const ds_point_cfg *c, int *dims);
#endif
