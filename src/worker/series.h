/* series.h -- private to the worker room: which series a point records and
 * their definitions (the text stored with each series in the store). */
#ifndef DS_WORKER_SERIES_H
#define DS_WORKER_SERIES_H
#include "dynsweep/cnn.h"
#include "dynsweep/config.h"
#include "dynsweep/traj.h"

/* Index of each series in the trajectory, -1 where not recorded. */
typedef struct {
  int loss, test_loss, loss_gap, lr, grad_norm, param_norm, layer_fro;
  int eta; /* optimizer.lr_units lambda0: the absolute rate, one record at step 0 */
  int *sv; /* per layer */
} ds_series_ix;

/* Adds the series that c->record asks for to tr; dims are the layer widths of
 * the trained model (depth L); cnn (model.type cnn, else NULL): its weight
 * matrices (ds_cnn_weight, ds_cnn_nweights of them) are the layers instead. */
int ds_series_add(ds_traj *tr, const ds_point_cfg *c, const int *dims, int L, const ds_cnn *cnn,
                  ds_series_ix *ix);
#endif
