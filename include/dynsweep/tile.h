/* tile.h -- training a tile of map points together (issue 13, "Map sweeps").
 *
 * The points of a map tile share their data and their initial weights and
 * differ only in optimizer.lr, lr_in, lr_out and model.init_offset. One call
 * builds the data and the initial weights once and trains every point of the
 * tile by full-batch GD, feeding each point's losses into its own map
 * accumulator (map.h).
 *
 * Two levels:
 *   ds_tile_supported / ds_tile_train (src/worker/tile.c): points of a sweep;
 *   ds_tile_gd (src/nn/tile.c): the batched trainer on given X, Y, theta_0,
 *     a callback per (point, step) loss (tests and bench/tile_bench.c).
 *
 * The network: depth 2, no bias, Z = alpha_1 W_1 X, A = act(Z) (linear, relu,
 * tanh(gain z)), F = alpha_2 W_2 A (alpha_l of ds_mlp_alpha: standard, ntk,
 * meanfield), loss c sum (F - Y)^2. Per point p: W_1 = W_1(0) + offset_p
 * (every entry), W_1 moves by lr_in_p, W_2 by lr_out_p (not at all with a
 * fixed output layer).
 *
 * How (docs/performance.md, "Map tiles"): per point and step two small GEMMs
 * against the shared data, Z^T = X^T W_1^T (n x m, K = d_in) and
 * W_1^T += X D (d_in x m, K = n: the W_1 update itself, D = -lr_in alpha_1 dZ^T),
 * as LIBXSMM JIT kernels (OpenBLAS when LIBXSMM is absent or cannot JIT the
 * shape, or with DYNSWEEP_TILE_GEMM=openblas), and one fused, vectorised pass between them (activation, output,
 * loss, dL/dF, the W_2 gradient, dZ); tanh nets use the tiles' own inlined
 * tanh (ds_tile_tanh, a few ulp, 2x SLEEF's speed; the per-point path uses
 * SLEEF's 1-ulp one, which DYNSWEEP_TILE_TANH=sleef selects here too). Every number of a point is computed by
 * the same kernels in the same order whatever the other points of the tile
 * are: a point's losses (so its record) are bitwise independent of npts and
 * of its neighbours (tests/test_tile.c); the pass and the tanh have AVX-512
 * and AVX2 intrinsics versions (d_out 1; DYNSWEEP_TILE_ISA=avx2 picks AVX2 on
 * an AVX-512 CPU) and a plain C one (DYNSWEEP_TILE_GENERIC=1 forces it), all
 * giving the same bits. They agree with ds_worker_run_point
 * to rounding (the order of a few products differs), not bitwise. */
#ifndef DYNSWEEP_TILE_H
#define DYNSWEEP_TILE_H
#include <stddef.h>
#include <stdint.h>

#include "dynsweep/config.h"
#include "dynsweep/map.h"

/* ---- points of a sweep (src/worker/tile.c) ---- */
/* 1 if points of config c can go through ds_tile_train; else 0 and why (one line):
 * the tile column of the one table, ds_net_supported (models.h). */
int ds_tile_supported(const ds_point_cfg *c, char *why, int whylen);
/* Trains the npts points pts[] of sweep sw together: builds the data and the initial
 * weights ONCE exactly as ds_worker_run_point does for pts[0] (same seeds, same
 * values bit for bit), checks that the points differ only in lr, lr_in, lr_out,
 * init_offset (DS_EINPUT otherwise), runs train.steps full-batch GD steps, feeds
 * each point's loss L_0..L_{T-1} (the loss before each update) into its own ds_map_acc,
 * stops a point once the accumulator says it is decided (only with map.early_stop:
 * map.h) or its loss is known to stay non-finite, and fills
 * out[i] with ds_map_acc_finish(..., train.steps, record.spectra.catapult_factor, ...).
 * train.tol and train.diverge_above do not apply (the map measure decides). */
int ds_tile_train(const ds_sweep *sw, const ds_point *pts, int npts, ds_map_rec *out);
/* CPU seconds per point and step of point p's net in tiles on this host, for
 * `plan`: npts copies of p at learning rate 0 (the loss stays put, so every
 * step runs), steps steps, the best of 3 after a warm-up (LIBXSMM's JIT);
 * 0 when p's net does not go through tiles. */
double ds_tile_seconds(const ds_sweep *sw, const ds_point *p, int npts, int64_t steps);

/* ---- the batched trainer (src/nn/tile.c) ---- */
typedef struct {
  int act;          /* DS_ACT_LINEAR / RELU / TANH (nn.h) */
  int param;        /* DS_PARAM_STANDARD / NTK / MEANFIELD */
  int train_output; /* 0: W_2 stays at its initial value */
  int d_in, width, d_out, n;
  double gain;      /* tanh: A = tanh(gain Z) */
  double c;         /* loss coefficient (ds_loss_setup: 1, 1/2, 1/n, 1/(2n)) */
} ds_tile_net;

/* Called with the loss L_t of point p (before its update t); return nonzero to
 * stop training p (it is decided). */
typedef int (*ds_tile_loss_fn)(void *arg, int p, int64_t t, double loss);

/* Trains npts points from theta0 (ds_mlp layout without bias: W_1 (width x d_in)
 * then W_2 (d_out x width), column-major) on X (d_in x n), Y (d_out x n):
 * point p starts from W_1 + init_offset[p] (init_offset may be NULL: 0) and
 * takes `steps` GD steps with lr_in[p] (W_1) and lr_out[p] (W_2). fn gets
 * L_0 .. L_{steps-1} of each point (points one after the other, in order),
 * until it returns nonzero. A point whose W_2 holds a non-finite entry after a
 * non-finite loss is not trained further: every later loss is non-finite
 * (src/nn/tile.c, w2_nonfinite), and fn gets NaN for each of them
 * (DYNSWEEP_TILE_NOSTOP=1 trains them instead: tests check the records agree).
 * DS_EINPUT: unsupported net (width or d_out > 64, d_in > 4096, n < 1). */
int ds_tile_gd(const ds_tile_net *net, const double *X, const double *Y, const double *theta0,
               int npts, const double *lr_in, const double *lr_out, const double *init_offset,
               int64_t steps, ds_tile_loss_fn fn, void *arg);
/* Model FLOPs of one step of one point (ds_mlp_step_flops of the net). */
double ds_tile_step_flops(const ds_tile_net *net);
/* The tiles' tanh: out = tanh(gain in), count values (out may equal in);
 * within a few ulp of tanh, the same bits on every x86-64 (src/nn/tile.c). */
void ds_tile_tanh(double *out, const double *in, size_t count, double gain);
/* Which kernels ds_tile_gd runs for this net ("libxsmm JIT ..." or "OpenBLAS ..."). */
const char *ds_tile_kernels(const ds_tile_net *net);
#endif
