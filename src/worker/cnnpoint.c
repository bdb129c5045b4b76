/* cnnpoint.c -- model.type cnn in the point trainer (cnnpoint.h): the
 * options become a layer list (model.net with model.width channels,
 * model.depth conv layers, model.kernel, stride, padding, readout, pool,
 * hidden, dropout: ds_cnn_net_layers; bias_scale, param, image),
 * the weights come from the point's init stream (ds_cnn_init_scaled: the
 * order cnn.h gives, times model.init_scale, or N(0, (init_scale init_std)^2)),
 * and the loss is ds_loss_eval on the net's output, so the optimiser,
 * records, divergence test and checkpoints of point.c see a flat theta as
 * for an MLP. */
#include <math.h>
#include <stdlib.h>

#include "dynsweep/data.h"
#include "dynsweep/models.h"
#include "dynsweep/util.h"
#include "cnnpoint.h"

int ds_cnnpoint_spec(const ds_point_cfg *c, int d_in, int d_out, ds_cnn_spec *s) {
  const ds_model_spec *m = &c->model;
  int C = 1, H, W;
  if (m->nimage > 0) {
    if (m->nimage != 3)
      return ds_fail(DS_EINPUT, "model.image: give [C, H, W] (3 entries), got %d", m->nimage);
    C = m->image[0], H = m->image[1], W = m->image[2];
  } else if (!ds_data_image_shape(&c->data, &C, &H, &W)) { /* cifar/svhn 3 x 32 x 32, idx header */
    C = 1;
    H = W = (int)lround(sqrt((double)d_in));
  }
  if ((long long)C * H * W != d_in)
    return ds_fail(DS_EINPUT, "model.image %s%d x %d x %d holds %lld features but the data have "
                   "d_in = %d%s", m->nimage ? "" : "(default: one square channel) ", C, H, W,
                   (long long)C * H * W, d_in, m->nimage ? "" : "; give model.image: [C, H, W]");
  s->c0 = C, s->h0 = H, s->w0 = W;
  s->nconv = m->depth;
  s->channels = m->width;
  s->ksize = m->kernel;
  s->stride = m->stride;
  s->same = m->padding == 0;
  s->readout = m->readout == 1 ? DS_CNN_GAP : DS_CNN_FLATTEN;
  s->dout = d_out;
  s->param = m->param == DS_PARAM_NTK ? DS_PARAM_NTK : DS_PARAM_STANDARD;
  s->beta = m->bias_scale;
  return DS_OK;
}

int ds_cnnpoint_create(const ds_point_cfg *c, int d_in, int d_out, int nmax, ds_rng *rng,
                       ds_cnn **net, double **theta, double **grad, size_t *np) {
  ds_cnn_spec s;
  ds_cnn_net nt;
  ds_cnn_layer L[DS_CNN_MAX_LAYERS];
  char err[300];
  DS_TRY(ds_cnnpoint_spec(c, d_in, d_out, &s));
  ds_model_cnn_net(c, &nt);
  int nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
  if (nl < 0) return ds_fail(DS_EINPUT, "%s", err);
  *net = ds_cnn_create_layers(L, nl, s.c0, s.h0, s.w0, s.dout, s.param, s.beta, nmax, err,
                              sizeof err);
  if (!*net) return ds_fail(DS_EINPUT, "model.type cnn: %s", err);
  *np = ds_cnn_nparams(*net);
  *theta = ds_calloc(*np, sizeof **theta);
  *grad = ds_calloc(*np, sizeof **grad);
  if (!*theta || !*grad) return ds_fail(DS_ENOMEM, "out of memory for %zu CNN parameters", *np);
  ds_cnn_init_scaled(*net, rng, *theta, c->model.init_scale, c->model.init_std);
  return DS_OK;
}

uint64_t ds_cnnpoint_drop_seed(const ds_sweep *sw, const ds_point *p) {
  ds_rng r;
  ds_rng_init(&r, sw->seed, p->combo, p->replica, DS_STREAM_DROPOUT);
  return ds_rng_u64(&r);
}

double ds_cnnpoint_loss(ds_cnn *net, const double *theta, const double *X, const double *Y, int n,
                        int dout, const ds_loss *l, double *grad) {
  if (grad) return ds_cnn_loss_grad(net, theta, X, Y, n, l, grad);
  const double *F = ds_cnn_forward(net, theta, X, n);
  return ds_loss_eval(l, F, Y, dout, n, NULL);
}
