/* models.h -- one network definition (issue 26, "One network definition";
 * src/config/models.c): the model kinds and their hidden activation, the
 * parameterisations, and ONE table that says, for each feature a point's
 * configuration can have, which of the three trainers takes it, and which
 * record.spectra diagnostics apply to which model. `plan` (src/config/
 * sweep_check.c), `run` (src/worker/point.c, tile.c) and the docs
 * (`dynsweep models --markdown` = docs/models.md, tests/models.sh) consult
 * only this table.
 *
 * The trainers:
 *   DS_TRAINER_POINT  one point on one rank (src/nn/mlp.c, layers.c, rop.c;
 *                     src/optim/e2e.c for model.type e2e): every row sweep
 *                     point, and a map pixel the tile trainer does not take
 *   DS_TRAINER_TILE   a map tile of points trained together (src/nn/tile.c);
 *                     a point it does not take is trained one at a time
 *                     (never an error)
 *   DS_TRAINER_TEAM   one point on a team's BLACS grid (src/spectra/dtrain.c):
 *                     train.distributed: on refuses at plan what it does not
 *                     take; auto quietly trains those on one rank. A CNN
 *                     on a team instead splits each step's samples over the
 *                     members (src/worker/point.c) and takes what the point
 *                     trainer takes: ds_net_refusal(c, TEAM) of a CNN is its
 *                     point trainer's
 * What the point trainer does not take is refused at plan, whatever the
 * trainer. */
#ifndef DYNSWEEP_MODELS_H
#define DYNSWEEP_MODELS_H
#include "dynsweep/cnn.h"
#include "dynsweep/config.h"

typedef enum { DS_TRAINER_POINT = 0, DS_TRAINER_TILE = 1, DS_TRAINER_TEAM = 2, DS_NTRAINERS = 3 } ds_trainer;
extern const char *const ds_trainer_names[DS_NTRAINERS]; /* "point", "tile", "team" */

/* A model kind: its sweep name, the hidden layers' activation (nn.h DS_ACT_*;
 * the output layer is linear) and what its layers are. */
typedef struct {
  ds_model_kind type;
  const char *name;
  int act;
  const char *layers;
} ds_model_row;
extern const ds_model_row ds_model_rows[];
extern const int ds_nmodel_rows;
/* The activation (DS_ACT_*) of model kind t's hidden layers: the one place
 * the model -> activation mapping is written. */
int ds_model_act(ds_model_kind t);
/* model.type cnn: the named net of c's model.net, width, depth and the
 * generic keys (kernel, stride, padding, readout, pool, hidden, dropout),
 * and the image (model.image, else the data kind's (cifar/svhn: 3 x 32 x
 * 32), else one square channel of data.d_in). */
void ds_model_cnn_net(const ds_point_cfg *c, ds_cnn_net *net);
void ds_model_cnn_image(const ds_point_cfg *c, int *C, int *H, int *W);

/* A parameterisation (model.param): its name and what layer l computes. */
typedef struct {
  ds_param_kind param;
  const char *name;
  const char *forward;
} ds_param_row;
extern const ds_param_row ds_param_rows[];
extern const int ds_nparam_rows;

/* A feature of a point configuration that some trainer does not take. */
typedef struct {
  const char *feature;          /* as messages name it: "model.type e2e" */
  const char *keys[6];          /* option paths a parse-time message points at, NULL-ended */
  int (*has)(const ds_point_cfg *c);
  const char *refuse[DS_NTRAINERS]; /* NULL: the trainer takes it; else why it does not */
  const char *example;          /* --set KEY=VALUE ... that give a base sweep the feature
                                   (docs/models.md, tests/models.sh) */
} ds_net_feature;
extern const ds_net_feature ds_net_features[];
extern const int ds_nnet_features;

/* Whether trainer t takes point c: 1, or 0 with why ("FEATURE (REASON)",
 * the first refusing row of the table) in why[whylen]. */
int ds_net_supported(const ds_point_cfg *c, ds_trainer t, char *why, int whylen);
/* The first row of the table that refuses c for trainer t, or NULL. */
const ds_net_feature *ds_net_refusal(const ds_point_cfg *c, ds_trainer t);

/* A record.spectra diagnostic and the models it applies to (the point
 * trainer; the tile and team trainers compute none: row "record.spectra
 * diagnostics" above). */
typedef struct {
  const char *name;             /* "hessian": record.spectra.hessian */
  const ds_cadence *(*cadence)(const ds_spectra_spec *sp);
  unsigned models;              /* bit 1 << ds_model_kind per model it applies to */
  int approx;                   /* 1: also to model.approx lin / quad */
  const char *wrong_model;      /* the message (after "record.spectra.NAME: ") for another model;
                                   one %s: the model.type */
  const char *wrong_cnn;        /* the same for model.type cnn where it differs (NULL: wrong_model) */
  const char *what;             /* what it computes (docs) */
} ds_diag_row;
extern const ds_diag_row ds_diag_rows[];
extern const int ds_ndiag_rows;

/* docs/models.md's tables (markdown) or a plain listing: `dynsweep models`. */
void ds_models_print(FILE *f, int markdown);
#endif
