/* layers.h -- the building blocks of an MLP (private to src/nn/): each layer
 * is a forward/backward pair of plain functions on column-major buffers, with
 * the shapes in the comments. No allocation; BLAS does the matrix products. */
#ifndef DS_NN_LAYERS_H
#define DS_NN_LAYERS_H
#include <stddef.h>

#include "dynsweep/nn.h"

/* Z = alpha W A + b 1^T   (alpha = 1 standard, 1/sqrt(din) NTK parameterisation)
 *   W (dout x din), A (din x n), b (dout, NULL = no bias) -> Z (dout x n) */
void ds_nn_linear_forward(double *Z, const double *W, const double *b, const double *A,
                          int dout, int din, int n, double alpha);

/* Where the bias is added after a beta = 0 GEMM instead of being its initial
 * C (ds_nn_linear_forward_relu): din <= this (one K block of the GEMM) and
 * alpha = 1. */
#define DS_NN_BIAS_AFTER_MAX_K 32
int ds_nn_bias_after(int din);

/* Z = alpha W Ain + b 1^T, then A = max(Z, 0) when A is not NULL (A != Z);
 * bitwise the same as ds_nn_linear_forward + ds_nn_relu_forward, faster for
 * small layers with a bias (see layers.c). */
void ds_nn_linear_forward_relu(double *Z, double *A, const double *W, const double *b,
                               const double *Ain, int dout, int din, int n, double alpha);

/* Z += b 1^T, and A = max(Z, 0) when A is not NULL, in one pass
 *   Z (d x n, in place), b (d) -> A (d x n) */
void ds_nn_bias_add_relu(double *Z, double *A, const double *b, int d, int n);

/* LIBXSMM for small GEMMs (layers.c): on unless DYNSWEEP_NN_GEMM=openblas or
 * built without libxsmm; the choice per product is by shape only. */
#define DS_NN_XSMM_NB 64 /* samples per kernel call */
int ds_nn_xsmm_enabled(void);
void ds_nn_set_xsmm(int on); /* benchmarks and tests: 0 = OpenBLAS as before */
int ds_nn_xsmm_nn(int m, int k); /* C (m x n) = A (m x k) B: LIBXSMM? */
int ds_nn_xsmm_nt(int m, int k); /* C (m x k) = A B^T summed over samples: LIBXSMM? */

/* dA = W^T dZ of small layers (dout <= 15, din <= 64) is an NN GEMM on a
 * transposed copy of W (see layers.c). */
#define DS_NN_TN_MAX_DOUT 15
#define DS_NN_TN_MAX_DIN 64

/* dW = alpha dZ A^T (skipped when dW is NULL); dA = alpha W^T dZ (skipped when dA is NULL)
 *   dZ (dout x n), W (dout x din), A (din x n) -> dW (dout x din), dA (din x n)
 * The bias gradient is done by ds_nn_bias_backward or fused in ds_nn_relu_backward. */
void ds_nn_linear_backward(double *dA, double *dW, const double *dZ, const double *W,
                           const double *A, int dout, int din, int n, double alpha);

/* ds_nn_linear_backward (dA not NULL) then ds_nn_relu_backward(dA, Zin, db):
 * the same bits; with LIBXSMM the mask and the bias row sums run on each block
 * of samples right after its dA (blocking over samples).
 *   Zin (din x n): the pre-activation of the layer below; db (din) or NULL */
void ds_nn_linear_backward_relu(double *dA, double *dW, const double *dZ, const double *W,
                                const double *A, const double *Zin, double *db, int dout,
                                int din, int n, double alpha);

/* Blocks of samples through the whole net (mlp.c): the LIBXSMM products of one
 * block, each returning 0 (nothing usable written) when LIBXSMM has no kernel.
 *   forward: Z = W Ain (+ b, A = relu(Z) when given), as ds_nn_linear_forward_relu;
 *   dw: dW = dZ A^T (first) or dW += dZ A^T in kernel calls of DS_NN_XSMM_NB
 *       samples, so a sum over blocks (of a multiple of DS_NN_XSMM_NB samples)
 *       makes the same calls, bitwise the sum over all samples;
 *   backward_act: dA = W^T dZ, then dA *= [Zin > 0] (Zin not NULL) and the row
 *       sums into db (not NULL), carried on from db unless first
 *       (dout din <= 4096). */
#define DS_NN_SAMPLE_BLOCK 256
void ds_mlp_set_sample_block(int on); /* mlp.c: 0 = off (tests, benchmarks) */
void ds_mlp_set_e2e(int on);          /* mlp.c: linear nets' product step, 0 = off */
int ds_mlp_e2e_taken(const ds_mlp *m, int n, int grad); /* would a step over n samples take it? */
int ds_nn_xsmm_forward(double *Z, double *A, const double *b, const double *W, const double *Ain,
                       int dout, int din, int n);
int ds_nn_xsmm_dw(double *dW, const double *dZ, const double *A, int dout, int din, int n,
                  int first);
int ds_nn_xsmm_backward_act(double *dA, const double *dZ, const double *W, const double *Zin,
                            double *db, int dout, int din, int n, int first);
/* ds_nn_bias_backward on a block; first = 0 carries on from db */
void ds_nn_bias_backward_blk(double *db, const double *dZ, int d, int n, int first);

/* Z = b 1^T
 *   b (d) -> Z (d x n) */
void ds_nn_bias_fill(double *Z, const double *b, int d, int n);

/* db (+)= dZ 1: like ds_nn_bias_backward, adding to db when accumulate != 0 */
void ds_nn_bias_backward_acc(double *db, const double *dZ, int d, int n, int accumulate);

/* Tangent of the ReLU (ReLU'' = 0 a.e.): RA = RZ * [Z > 0]
 *   RZ, Z (d x n) -> RA (d x n); RA may equal RZ (in place) */
void ds_nn_relu_tangent(double *RA, const double *RZ, const double *Z, int d, int n);

/* db = dZ 1 (row sums), summed over samples in order
 *   dZ (d x n) -> db (d) */
void ds_nn_bias_backward(double *db, const double *dZ, int d, int n);

/* A = max(Z, 0)
 *   Z (d x n) -> A (d x n) */
void ds_nn_relu_forward(double *A, const double *Z, int d, int n);

/* dZ = dA * [Z > 0], in place (dA becomes dZ); if db is not NULL also
 * db = dZ 1 in the same pass.
 *   dA (d x n, in: dL/dA, out: dL/dZ), Z (d x n), db (d) */
void ds_nn_relu_backward(double *dA, const double *Z, double *db, int d, int n);

/* ---- tanh (tanh.c): A = tanh(g Z), g = the gain, SLEEF kernels ---- */
/* out = tanh(gain * in), count entries (out may equal in) */
void ds_nn_tanh(double *out, const double *in, size_t count, double gain);
/* A = tanh(g Z):  Z (d x n) -> A (d x n) */
void ds_nn_tanh_forward(double *A, const double *Z, int d, int n, double gain);
/* RA = g (1 - A^2) * RZ (RA may equal RZ) */
void ds_nn_tanh_tangent(double *RA, const double *RZ, const double *A, int d, int n, double gain);
/* dZ = g (1 - A^2) * dA in place; db = dZ 1 when db is not NULL */
void ds_nn_tanh_backward(double *dA, const double *A, double *db, int d, int n, double gain);
/* S = s' S + s'' RZ^2 in place (second-order forward), s'' = -2 g^2 t (1 - t^2) */
void ds_nn_tanh_second(double *S, const double *RZ, const double *A, int d, int n, double gain);
/* Backward with R through the activation: RDout = s' RP + s'' RZ P (RP NULL = 0;
 * RP may equal RDout), then P = s' P in place. */
void ds_nn_tanh_backward_r(double *P, const double *RP, double *RDout, const double *RZ,
                           const double *A, int d, int n, double gain);
#endif
