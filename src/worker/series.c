/* series.c -- the series a point records, with their exact definitions. */
#include <stdlib.h>

#include "dynsweep/util.h"
#include "series.h"

static const char *loss_text(const ds_point_cfg *c, const char *set, int n, char *buf, size_t len) {
  static const char *red[] = {"sum", "(1/2) sum", "(1/n) sum", "(1/(2n)) sum"};
  static const char *red_p[] = {"sum", "(1/p) sum", "(1/n) sum", "(1/(p n)) sum"};
  switch (c->loss.type) {
  case DS_LOSS_LP:
    snprintf(buf, len, "L = %s over samples and outputs of |f - y|^p, p = %g, %s set (n = %d)",
             red_p[c->loss.reduction], c->loss.p, set, n);
    break;
  case DS_LOSS_CE:
    snprintf(buf, len, "L = %s over samples of -log softmax(f)_y (cross-entropy), %s set (n = %d)",
             red[c->loss.reduction], set, n);
    break;
  default:
    snprintf(buf, len, "L = %s over samples and outputs of (f - y)^2, %s set (n = %d)",
             red[c->loss.reduction], set, n);
  }
  return buf;
}

static int want(const ds_point_cfg *c, unsigned bit) { return (c->record.series & bit) != 0; }

int ds_series_add(ds_traj *tr, const ds_point_cfg *c, const int *dims, int L, const ds_cnn *cnn,
                  ds_series_ix *ix) {
  char def[256];
  if (cnn) L = ds_cnn_nweights(cnn);
  int linear = c->model.type != DS_MODEL_RELU;
  ix->loss = want(c, DS_REC_LOSS)
                 ? ds_traj_add(tr, "loss", 1, "1", loss_text(c, "training", c->data.n_train, def, sizeof def))
                 : -1;
  ix->test_loss = want(c, DS_REC_TEST_LOSS) && c->data.n_test > 0
                      ? ds_traj_add(tr, "test_loss", 1, "1", loss_text(c, "test", c->data.n_test, def, sizeof def))
                      : -1;
  ix->loss_gap = want(c, DS_REC_LOSS_GAP) && c->loss.optimum && linear
                     ? ds_traj_add(tr, "loss_gap", 1, "1",
                                   "L - L*, L* = optimal training loss of a single linear map "
                                   "(closed form for mse, numerical for lp)")
                     : -1;
  ix->lr = want(c, DS_REC_LR) ? ds_traj_add(tr, "lr", 1, "1", "learning rate used for the update "
                                                                "from this step") : -1;
  /* issue 24: under optimizer.lr_units: lambda0 the grid's rates are eta * lambda_0;
   * the absolute eta in effect is stored with the point (c: the rates divided) */
  ix->eta = c->optimizer.lr_units == DS_LR_LAMBDA0
                ? ds_traj_add(tr, "eta", 1, "1",
                              "absolute learning rate in effect: optimizer.lr / lambda_0, lambda_0 = "
                              "top NTK eigenvalue at initialisation on the training set "
                              "(optimizer.lr_units: lambda0); one record, at step 0")
                : -1;
  ix->grad_norm = want(c, DS_REC_GRAD_NORM)
                      ? ds_traj_add(tr, "grad_norm", 1, "1",
                                    c->optimizer.batch_size > 0
                                        ? "||dL/dtheta||_2 of the step's minibatch loss"
                                        : "||dL/dtheta||_2 over all parameters")
                      : -1;
  ix->param_norm = want(c, DS_REC_PARAM_NORM)
                       ? ds_traj_add(tr, "param_norm", 1, "1", "||theta||_2 over all parameters")
                       : -1;
  ix->layer_fro = want(c, DS_REC_LAYER_FRO)
                      ? ds_traj_add(tr, "layer_fro", L, "1",
                                    cnn ? "column l-1: ||W_l||_F, Frobenius norm of weight matrix "
                                          "l (the conv kernels, then the dense readout)"
                                        : "column l-1: ||W_l||_F, Frobenius norm of layer l's weights")
                      : -1;
  ix->sv = calloc(L, sizeof *ix->sv);
  if (!ix->sv) return ds_fail(DS_ENOMEM, "out of memory");
  for (int l = 0; l < L; l++) {
    ix->sv[l] = -1;
    if (!want(c, DS_REC_LAYER_SV)) continue;
    int rows, cols;
    if (cnn) { /* dims is the d_in -> d_out stand-in's: two entries */
      size_t off;
      ds_cnn_weight(cnn, l, &off, &rows, &cols);
    } else {
      rows = dims[l + 1], cols = dims[l];
    }
    int mn = rows < cols ? rows : cols;
    int k = c->record.top_k < mn ? c->record.top_k : mn;
    char name[32];
    snprintf(name, sizeof name, "sv/W%d", l + 1);
    snprintf(def, sizeof def, "top-%d singular values of W_%d (%d x %d%s), descending, ScaLAPACK pdgesvd",
             k, l + 1, rows, cols,
             !cnn ? "" : l < L - 1 ? ", conv kernel as C_out x C_in s^2" : ", dense readout");
    ix->sv[l] = ds_traj_add(tr, name, k, "1", def);
  }
  /* ds_traj_add returns -code on failure; -1 means "not recorded" */
  int worst = -1, all[] = {ix->loss, ix->test_loss, ix->loss_gap, ix->lr, ix->eta, ix->grad_norm,
                           ix->param_norm, ix->layer_fro};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) worst = all[i] < worst ? all[i] : worst;
  for (int l = 0; l < L; l++) worst = ix->sv[l] < worst ? ix->sv[l] : worst;
  return worst < -1 ? -worst : DS_OK;
}
