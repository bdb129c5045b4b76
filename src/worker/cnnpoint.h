/* cnnpoint.h -- the point trainer's convolutional nets (model.type cnn,
 * issue 26): the net from a point's options, its initial theta, its loss. */
#ifndef DS_WORKER_CNNPOINT_H
#define DS_WORKER_CNNPOINT_H
#include "dynsweep/cnn.h"
#include "dynsweep/config.h"
#include "dynsweep/nn.h"

/* The net's spec for point c with d_in input features (model.image, or one
 * square channel) and d_out outputs; DS_EINPUT with a message when the image
 * does not hold d_in features. */
int ds_cnnpoint_spec(const ds_point_cfg *c, int d_in, int d_out, ds_cnn_spec *spec);
/* The net for up to nmax samples (*net) and its initial weights in a fresh
 * theta and grad (nparams each, *np); draws from rng. */
int ds_cnnpoint_create(const ds_point_cfg *c, int d_in, int d_out, int nmax, ds_rng *rng,
                       ds_cnn **net, double **theta, double **grad, size_t *np);
/* The seed of point p's dropout masks (ds_cnn_dropout's seed; the step's
 * index t and the training-set index of the sample complete the key): the
 * first word of the stream (sw seed, p combo, p replica, DS_STREAM_DROPOUT),
 * so each combo and replica has its own masks. */
uint64_t ds_cnnpoint_drop_seed(const ds_sweep *sw, const ds_point *p);
/* The loss of theta on (X, Y) (n samples, dout outputs), and its gradient when grad != NULL. */
double ds_cnnpoint_loss(ds_cnn *net, const double *theta, const double *X, const double *Y, int n,
                        int dout, const ds_loss *l, double *grad);
#endif
