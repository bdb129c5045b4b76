/* dtrain.h -- training an MLP on a team: every weight matrix and every
 * activation / backprop buffer distributed block-cyclically over the team's
 * BLACS grid, forward and backward passes with PBLAS pdgemm (spectra room).
 *
 * The network is the one of nn.h (same shapes, same flat parameter order
 * W_1, b_1, W_2, b_2, ...), so a flat theta built for ds_mlp is scattered in
 * and gathered out unchanged:
 *   W_l    d_l x d_{l-1}   block-cyclic, square blocks nb, from process (0,0)
 *   Z_l, A_l, dZ_l  d_l x n  the same block size on the same grid, so the
 *                          rows of Z_l, A_l and dZ_l a process holds are the
 *                          same: ReLU, its mask and the bias add are local
 *   b_l    d_l             held by process column 0 with the row blocks of
 *                          Z_l (a d_l x 1 distributed matrix); broadcast along
 *                          each process row before a forward pass, its
 *                          gradient (row sums of dZ_l) reduced back to column 0
 *   X, Y   replicated      every team member has the data; each takes the
 *                          columns/rows its blocks need (no communication)
 * The local parts of all parameters live in ONE flat local vector theta
 * (nloc entries: W_1 local, b_1 local (column 0 only), W_2 local, ...), and
 * the gradient in grad with the same layout, so elementwise optimisers
 * (ds_optim_step) run on (theta, grad, nloc) unchanged. Norms over all
 * parameters need ds_dtrain_sumsq (an allreduce).
 * Losses: mse and lp (elementwise, local, then one team sum of the terms)
 * with the coefficient c of nn.h's ds_loss; cross-entropy (a softmax down
 * each column, across process rows) is not supported.
 * Memory per rank: about 1/P of the weights, gradient, optimiser state and
 * activations (plus the replicated data). Only ds_dtrain_scatter/gather move
 * a full-size vector, and only on the team root. */
#ifndef DYNSWEEP_DTRAIN_H
#define DYNSWEEP_DTRAIN_H
#include <stddef.h>
#include "dynsweep/spectra.h"

enum { DS_DT_LOSS_MSE = 0, DS_DT_LOSS_LP = 1 };

typedef struct {
  int depth;           /* L */
  const int *dims;     /* L+1 entries */
  int relu;            /* hidden layers ReLU (else linear); the output layer is linear */
  int bias;
  int train_output;    /* 0: gradient of W_L, b_L is 0 */
  int ntk;             /* NTK parameterisation: Z_l = W_l A_{l-1} / sqrt(d_{l-1}) + b_l */
  int nb;              /* block size; 0 = the team's nb (64) */
} ds_dtrain_spec;

typedef struct {
  int n;
  ds_dmat A0, Y;       /* inputs, targets (local parts) */
  ds_dmat *Z, *A, *D;  /* [l], l = 1..L: pre-activations, activations (A = Z when
                          linear or l = L), backprop cotangents dZ_l */
  double *rowsum;      /* max local rows, bias gradient scratch */
} ds_dtrain_work;

typedef struct {
  ds_team *team;
  ds_team grid;        /* the grid the matrices live on (a copy of the team's) */
  int L, *dims, relu, bias, train_output, nb;
  double *alpha;       /* L entries */
  MPI_Comm row_comm;   /* my process row, rank = process column */
  size_t nparams;      /* global count (as ds_mlp) */
  size_t *w_off, *b_off; /* global offsets (as ds_mlp) */
  size_t nloc;         /* local count */
  double *theta, *grad;  /* local parts, nloc each */
  ds_dmat *W, *dW, *B, *dB; /* [l-1]: views into theta / grad (B, dB: d_l x 1) */
  double **bfull;      /* [l-1]: this process row's bias rows (own copy off column 0) */
  int loss_type;       /* DS_DT_LOSS_* */
  double loss_p, loss_c;
} ds_dtrain;

/* Set up over team t (collective); parameters zero. */
int ds_dtrain_init(ds_dtrain *dt, ds_team *t, const ds_dtrain_spec *spec);
void ds_dtrain_free(ds_dtrain *dt);
/* Loss kind DS_DT_LOSS_*, exponent p (lp; 2 = mse), coefficient c. */
int ds_dtrain_set_loss(ds_dtrain *dt, int type, double p, double c);

/* Workspace for n samples (local parts only); grad = 0: forward and loss
 * only (no backprop buffers). */
int ds_dtrain_work_init(const ds_dtrain *dt, int n, int grad, ds_dtrain_work *w);
void ds_dtrain_work_free(const ds_dtrain *dt, ds_dtrain_work *w);

/* Full flat theta-layout vector v (nparams entries, on the team root only;
 * ignored elsewhere) <-> local parts loc (nloc entries). Collective. */
int ds_dtrain_scatter(ds_dtrain *dt, const double *v, double *loc);
int ds_dtrain_gather(ds_dtrain *dt, const double *loc, double *v);

/* Loss at dt->theta on (X, Y) (replicated, X d_0 x n, Y d_L x n,
 * n = w->n), the same on every member; with grad != 0 (w made with grad)
 * also the gradient into dt->grad. Collective. */
double ds_dtrain_loss_grad(ds_dtrain *dt, const double *X, const double *Y, ds_dtrain_work *w,
                           int grad);

/* Sum of squares over all parameters of the local vector loc (theta, grad,
 * ...), the same on every member. Collective. */
double ds_dtrain_sumsq(ds_dtrain *dt, const double *loc);
/* ||W_l||_F of every layer into fro[0..L). Collective. */
void ds_dtrain_layer_fro(ds_dtrain *dt, double *fro);

/* Singular values (descending, min(m,n) of them, on every member) of a
 * distributed matrix, computed in place on a copy with pdgesvd (no gather).
 * Collective over the team. (src/spectra/svd.c) */
int ds_svd_values_dmat(ds_team *t, const ds_dmat *A, double *s);
#endif
