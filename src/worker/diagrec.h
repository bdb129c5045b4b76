/* diagrec.h -- private to the worker room: recording record.spectra. */
#ifndef DS_WORKER_DIAGREC_H
#define DS_WORKER_DIAGREC_H
#include "dynsweep/config.h"
#include "dynsweep/data.h"
#include "dynsweep/diag.h"
#include "dynsweep/traj.h"
#include "dynsweep/worker.h"

typedef struct {
  const ds_spectra_spec *sp;
  int k;
  ds_rng rng; /* Lanczos start vectors */
  int layers_on, e2e_on, hess_on, hfull_on, ntk_on, agop_on, act_on, esc_on;
  int nact; /* activation maps recorded: an MLP's hidden layers, a CNN's ReLUs */
  int *ix_layer_sv, ix_layer_stat[DS_DIAG_LAYER_EXTRA];
  int ix_e2e_sv, ix_e2e_bal, ix_e2e_margin, ix_e2e_pc;
  int ix_hess, iters, hk, ix_hfull;
  int ix_ntk, ix_ntk_crit, ix_ntk_change, ix_ntk_change2, ix_ntk_le, ix_ntk_gt, kn, nk, nvec, have_K0;
  int ix_agop, *ix_act_sv, ix_act_ratio, ix_escape;
  int batch_on, batch_own, kb, ix_bcrit, ix_bcount; /* SGD: the NTK of each step's minibatch */
  int64_t batch_catapults;                /* evaluated steps with lr > batch eta_crit */
  double *Kb;
  double lam0; /* lambda_max(K_0) = ||K_0||_2, 0 until computed */
  ds_cnn *cnn; /* model.type cnn: the net (point.c's); its weight matrices are the layers */
  size_t jbytes; /* cnn: the NTK's budget for J (point.c, ds_point_cnn_jbytes) */
  int nlayers; /* weight matrices: the MLP's depth, or ds_cnn_nweights */
  double *buf, *col, *Phi, *V, *lambda, *K, *K0, *evecs, *r, *G, *Gref, *act_buf;
} ds_diagrec;

int ds_cadence_due(const ds_cadence *c, int64_t t, int64_t T, int last, int rose);
/* cnn: model.type cnn's net (m is then point.c's d_in -> d_out stand-in), else NULL. */
int ds_diagrec_init(ds_diagrec *d, ds_traj *tr, const ds_point_cfg *c, const ds_mlp *m,
                    ds_cnn *cnn, const ds_dataset *train, uint64_t seed, int replica);
/* Records every diagnostic due at step t (theta = theta_t, loss its loss). */
/* The step's minibatch (SGD; NULL Xb for full batch) and the lr of its update. */
typedef struct {
  const double *Xb;
  ds_mlp_work *wb;
  const ds_loss *lb;
  double lr;
  int n; /* samples in Xb */
} ds_diag_batch;
int ds_diagrec_step(ds_diagrec *d, ds_traj *tr, ds_team *team, const ds_point_cfg *c, int64_t t,
                    int last, int rose, const ds_mlp *m, const double *theta,
                    const ds_dataset *train, const ds_loss *l, ds_mlp_work *w, double loss,
                    const ds_diag_batch *batch);
void ds_diagrec_free(ds_diagrec *d);
#endif
