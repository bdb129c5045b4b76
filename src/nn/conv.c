/* conv.c -- the 2-D convolution layer and global average pooling (cnn.h).
 *
 * Where C_in and C_out are multiples of 8 and LIBXSMM is on, the forward
 * pass, the weight gradient and the stride-1 input gradient are implicit
 * GEMMs (see "implicit GEMM" below: no im2col); the rest is the im2col path:
 *
 * Samples in blocks of nb (issue 26): im2col writes the patches of a block
 * as U ((nb P) x K, column-major, ld nb P; row i P + pos is sample i's output
 * position pos = (r, c) of P = ho wo, column k = (o s + p) s + q one of
 * K = cin s s patch entries in PyTorch's (o, p, q) order). With W (cout x K
 * row-major) viewed as a column-major K x cout matrix, the block's output is
 * one DGEMM, Zb = alpha U W ((nb P) x cout), scattered to each sample's CHW
 * column (Z_i[k P + pos] = Zb[k nb P + i P + pos] + beta b[k]). Backward:
 * the block's dZ gathered the same way into dZb, dW += alpha U^T dZb (one
 * DGEMM, inner dimension nb P) and, at stride 1 (cout not much above cin),
 * dA as the convolution of
 * dZ with the flipped kernel (one DGEMM on im2col of dZ, see flipped()); at
 * larger strides dU = alpha dZb W^T (one DGEMM, into U's space) and
 * col2im(dU) -> dA per sample. U is recomputed in the backward pass (storing
 * it for all samples would take n P K doubles).
 *
 * nb depends on the layer's shape only (a block of U and dZb within
 * CONV_BUDGET doubles), never on n: the blocks, hence dW's sums over
 * samples, are the same for every call of the same n, and every per-sample
 * output (Z, dA) does not depend on the block at all. db is summed per
 * sample in sample order as before.
 *
 * A ReLU after the layer can run inside it (ds_conv_forward_relu: R =
 * max(Z, 0) in the loop that adds the bias, per block after its GEMM), and
 * the mask of a ReLU before it inside its backward (ds_conv_backward_mask:
 * dA [M > 0], M the ReLU's input, in the copy out of the block): elementwise,
 * so the same bits as the separate passes, while the block is in cache. */
#include <cblas.h>
#include <string.h>
#ifdef DS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

#include "dynsweep/cnn.h"
#include "layers.h"

/* doubles of one block's regions 1 and 2 (below): 2^20 (8 MB, within the
 * last-level cache; one sample if a sample alone is larger) */
#define CONV_BUDGET ((size_t)1 << 20)

int ds_conv_geom_set(ds_conv_geom *g, int cin, int h, int w, int cout, int s, int stride,
                     int same) {
  if (cin < 1 || h < 1 || w < 1 || cout < 1 || s < 1 || stride < 1) return DS_EINPUT;
  int pad = same ? (s - 1) / 2 : 0;
  if (h + 2 * pad < s || w + 2 * pad < s) return DS_EINPUT;
  *g = (ds_conv_geom){.cin = cin, .h = h, .w = w, .cout = cout, .s = s, .stride = stride,
                      .pad = pad, .ho = (h + 2 * pad - s) / stride + 1,
                      .wo = (w + 2 * pad - s) / stride + 1};
  return DS_OK;
}

/* Scratch per sample: region 1 holds U (P K) or, for the input gradient at
 * stride 1, U' (h w cout s s: im2col of dZ for the flipped kernel, below);
 * region 2 (blocks of more than one sample) the gathered dZ (P cout) or the
 * block's Z or dA before the scatter (P cout or h w cin). */
static int use_flip(const ds_conv_geom *g);
static size_t region1(const ds_conv_geom *g) {
  size_t a = (size_t)g->ho * g->wo * g->cin * g->s * g->s;
  size_t b = use_flip(g) ? (size_t)g->h * g->w * g->cout * g->s * g->s : 0;
  return a > b ? a : b;
}
static size_t region2(const ds_conv_geom *g) {
  size_t a = (size_t)g->ho * g->wo * g->cout, b = (size_t)g->h * g->w * g->cin;
  return a > b ? a : b;
}

/* samples per block (from the shape alone) */
static int conv_block(const ds_conv_geom *g) {
  size_t nb = CONV_BUDGET / (region1(g) + region2(g));
  return nb < 1 ? 1 : nb > 4096 ? 4096 : (int)nb;
}

static size_t implicit_size(const ds_conv_geom *g);

/* nb samples' regions 1 and 2, then the flipped kernel (K cout) if used; at
 * least the implicit GEMM's scratch (below) */
size_t ds_conv_col_size(const ds_conv_geom *g, int n) {
  int nb = conv_block(g);
  if (n < 1) n = 1;
  if (n < nb) nb = n;
  size_t a = (size_t)nb * region1(g) + (nb > 1 ? (size_t)nb * region2(g) : 0) +
             (use_flip(g) ? (size_t)g->cin * g->s * g->s * g->cout : 0);
  size_t b = implicit_size(g);
  return a > b ? a : b;
}

/* output columns j with t j + q - pad in [0, w): [*lo, *hi) */
static void valid_range(int t, int q, int pad, int w, int wo, int *lo, int *hi) {
  int d = pad - q; /* need t j >= d and t j <= w - 1 + d */
  int a = d <= 0 ? 0 : (d + t - 1) / t;
  int b = w - 1 + d < 0 ? -1 : (w - 1 + d) / t;
  if (a > wo) a = wo;
  if (b + 1 < a) b = a - 1;
  if (b + 1 > wo) b = wo - 1;
  *lo = a, *hi = b + 1;
}

/* U[i P + pos + k ld] = A_i[o, t r + p - pad, t c + q - pad] (0 outside), k = (o s + p) s + q,
 * pos = r wo + c, for the nb samples of A (one column of din each) */
static void im2col(double *U, size_t ld, const double *A, int nb, const ds_conv_geom *g) {
  const int P = g->ho * g->wo, s = g->s, t = g->stride, wo = g->wo, w = g->w;
  const size_t din = (size_t)g->cin * g->h * g->w, plane = (size_t)g->h * g->w;
  for (int o = 0; o < g->cin; o++)
    for (int p = 0; p < s; p++) {
      int rlo, rhi; /* rows r with t r + p - pad in [0, h) */
      valid_range(t, p, g->pad, g->h, g->ho, &rlo, &rhi);
      for (int q = 0; q < s; q++) {
        int clo, chi;
        valid_range(t, q, g->pad, w, wo, &clo, &chi);
        double *u0 = U + (size_t)((o * s + p) * s + q) * ld;
        for (int i = 0; i < nb; i++) {
          double *u = u0 + (size_t)i * P;
          const double *a = A + i * din + o * plane;
          if (rlo > 0) memset(u, 0, (size_t)rlo * wo * sizeof *u);
          for (int r = rlo; r < rhi; r++) {
            double *ur = u + (size_t)r * wo;
            const double *ar = a + (size_t)(t * r + p - g->pad) * w + (q - g->pad);
            for (int c = 0; c < clo; c++) ur[c] = 0.0;
            if (t == 1)
              memcpy(ur + clo, ar + clo, (size_t)(chi - clo) * sizeof *ur);
            else
              for (int c = clo; c < chi; c++) ur[c] = ar[(size_t)t * c];
            for (int c = chi; c < wo; c++) ur[c] = 0.0;
          }
          if (rhi < g->ho) memset(u + (size_t)rhi * wo, 0, (size_t)(g->ho - rhi) * wo * sizeof *u);
        }
      }
    }
}

/* dA_i[o, y, x] += dU[i P + pos + k ld] (the adjoint of im2col), for nb samples; each dA
 * entry adds its terms in (p, q) order */
static void col2im(double *dA, const double *dU, size_t ld, int nb, const ds_conv_geom *g) {
  const int P = g->ho * g->wo, s = g->s, t = g->stride, wo = g->wo, w = g->w;
  const size_t din = (size_t)g->cin * g->h * g->w, plane = (size_t)g->h * g->w;
  for (int i = 0; i < nb; i++) {
    memset(dA + i * din, 0, din * sizeof *dA);
    for (int o = 0; o < g->cin; o++)
      for (int p = 0; p < s; p++) {
        int rlo, rhi;
        valid_range(t, p, g->pad, g->h, g->ho, &rlo, &rhi);
        for (int q = 0; q < s; q++) {
          int clo, chi;
          valid_range(t, q, g->pad, w, wo, &clo, &chi);
          const double *u = dU + (size_t)((o * s + p) * s + q) * ld + (size_t)i * P;
          double *a = dA + i * din + o * plane;
          for (int r = rlo; r < rhi; r++) {
            const double *ur = u + (size_t)r * wo;
            double *ar = a + (size_t)(t * r + p - g->pad) * w + (q - g->pad);
            if (t == 1)
              for (int c = clo; c < chi; c++) ar[c] += ur[c];
            else
              for (int c = clo; c < chi; c++) ar[(size_t)t * c] += ur[c];
          }
        }
      }
  }
}

/* ---- implicit GEMM (LIBXSMM) ----------------------------------------------
 * Without im2col: the sample's input is copied once, zero-padded, into
 * channel blocks of kb (X[c][y][x][j] = A[c kb + j, y - pad, x - pad], hp x wp
 * = (h + 2 pad) x (w + 2 pad) positions: a copy s^2 times smaller than U), and
 * for each block of mb output channels (mc) and output row r
 *   Y_{mc, r} (mb x wo) = sum_c sum_{p, q} W_{mc, c, p, q} (mb x kb) X_{c, r, p, q} (kb x wo),
 * X_{c, r, p, q} the columns ((t r + p) wp + q + t j) kb, j < wo, of block c
 * (ld t kb), W_{mc, c, p, q}[i + mb jj] = W[mc mb + i, c kb + jj, p, q]: one
 * LIBXSMM batch-reduce kernel over the s^2 taps per (mc, r, c), beta = 0 for
 * c = 0 and 1 after. The blocks (mb = kb = 16, else 8) keep every operand of
 * a kernel contiguous and within L1 (unblocked channels-last rows, ld cin a
 * power of two, ran at 55-65 % of DGEMM: cache-set conflicts). Y (blocks of
 * mb channels, positions, ld mb) goes back to the net's CHW column in the
 * pass that scales by alpha, adds beta b and applies a fused ReLU or a ReLU
 * mask. Every output depends on its own sample only, summed in a fixed order
 * (channel blocks, taps, channels): the same bits for any n, block or team.
 * The input gradient at stride 1 is the same pass on dZ with the flipped
 * kernel (flip_geom; see use_flip below). Used where the shape alone says so
 * (implicit_shape: cin, cout multiples of 8; the first layer's 1 or 3
 * channels stay on im2col) and LIBXSMM is on (DYNSWEEP_NN_GEMM=openblas: the
 * im2col + OpenBLAS path of before, bit for bit). The weight gradient too
 * (implicit_wgrad below), for the same shapes. */
#define IMPL_MAXTAPS 49

static int implicit_shape(const ds_conv_geom *g) {
  return g->cin % 8 == 0 && g->cout % 8 == 0 && g->s * g->s <= IMPL_MAXTAPS;
}
static int chan_block(int c) { return c % 16 == 0 ? 16 : 8; }

static void flip_geom(ds_conv_geom *f, const ds_conv_geom *g) {
  *f = (ds_conv_geom){.cin = g->cout, .h = g->ho, .w = g->wo, .cout = g->cin, .s = g->s,
                      .stride = 1, .pad = g->s - 1 - g->pad, .ho = g->h, .wo = g->w};
}

/* packed taps, padded blocked input, blocked output */
static size_t impl_need(const ds_conv_geom *g) {
  const size_t hp = (size_t)g->h + 2 * g->pad, wp = (size_t)g->w + 2 * g->pad;
  return (size_t)g->s * g->s * g->cin * g->cout + hp * wp * g->cin +
         (size_t)g->ho * g->wo * g->cout;
}

static size_t implicit_size(const ds_conv_geom *g) {
  size_t a = implicit_shape(g) ? impl_need(g) : 0;
  if (g->stride == 1) {
    ds_conv_geom f;
    flip_geom(&f, g);
    if (implicit_shape(&f) && impl_need(&f) > a) a = impl_need(&f);
  }
  return a;
}

#ifdef DS_HAVE_LIBXSMM
static libxsmm_dmmfunction_reducebatch_addr impl_kernel(const ds_conv_geom *g, double beta) {
  const int mb = chan_block(g->cout), kb = chan_block(g->cin);
  const libxsmm_blasint lda = mb, ldb = (libxsmm_blasint)g->stride * kb, ldc = mb;
  const double one = 1.0;
  return libxsmm_dmmdispatch_reducebatch_addr(mb, g->wo, kb, &lda, &ldb, &ldc, &one, &beta, NULL,
                                              NULL);
}
#endif

/* the implicit GEMM for this shape (and LIBXSMM makes its kernels)? */
static int use_implicit(const ds_conv_geom *g) {
#ifdef DS_HAVE_LIBXSMM
  return ds_nn_xsmm_enabled() && implicit_shape(g) && impl_kernel(g, 0.0) &&
         impl_kernel(g, 1.0);
#else
  (void)g;
  return 0;
#endif
}

/* Wk[((mc nk + c) s^2 + tap) kb mb + jj mb + i] = the weight from input
 * channel c kb + jj to output channel mc mb + i at tap (p, q) = W[o, k, p, q]
 * (flip 0; o = mc mb + i, k = c kb + jj) or, for the flipped layer (cin' =
 * cout, cout' = cin), W[k, o, s-1-p, s-1-q] */
static void pack_taps(double *Wk, const double *W, const ds_conv_geom *g, int flip) {
  const int ss = g->s * g->s, K = g->cin * ss;
  const int ci = flip ? g->cout : g->cin, co = flip ? g->cin : g->cout; /* of the pass */
  const int mb = chan_block(co), kb = chan_block(ci), nk = ci / kb;
  for (int o = 0; o < co; o++)
    for (int k = 0; k < ci; k++)
      for (int tp = 0; tp < ss; tp++) {
        double v = flip ? W[(size_t)k * K + (size_t)o * ss + ss - 1 - tp]
                        : W[(size_t)o * K + (size_t)k * ss + tp];
        Wk[(((size_t)(o / mb) * nk + k / kb) * ss + tp) * kb * mb + (size_t)(k % kb) * mb +
           o % mb] = v;
      }
}

/* X's zero border (once; pad_copy rewrites the interior per sample) */
static void pad_border(double *X, const ds_conv_geom *g) {
  const int pad = g->pad, h = g->h, w = g->w, hp = h + 2 * pad, wp = w + 2 * pad;
  const int kb = chan_block(g->cin), nk = g->cin / kb;
  const size_t xblk = (size_t)hp * wp * kb;
  for (int c = 0; c < nk; c++)
    for (int y = 0; y < hp; y++)
      for (int x = 0; x < wp; x++)
        if (y < pad || y >= pad + h || x < pad || x >= pad + w)
          memset(X + c * xblk + ((size_t)y * wp + x) * kb, 0, (size_t)kb * sizeof *X);
}

/* X[c][y + pad][x + pad][j] = a[c kb + j, y, x] (one sample, CHW) */
static void pad_copy(double *X, const double *a, const ds_conv_geom *g) {
  const int pad = g->pad, h = g->h, w = g->w, wp = w + 2 * pad;
  const int kb = chan_block(g->cin), nk = g->cin / kb;
  const size_t xblk = (size_t)(h + 2 * pad) * wp * kb, hw = (size_t)h * w;
  for (int c = 0; c < nk; c++)
    for (int y = 0; y < h; y++) {
      double *xr = X + c * xblk + ((size_t)(y + pad) * wp + pad) * kb;
      for (int j = 0; j < kb; j++) {
        const double *ar = a + (size_t)(c * kb + j) * hw + (size_t)y * w;
        for (int x = 0; x < w; x++) xr[(size_t)x * kb + j] = ar[x];
      }
    }
}

/* Z_i = alpha conv(Wk, A_i) + beta b for n samples (CHW columns), with
 * R = relu(Z) (R not NULL) or Z = [M > 0] Z (M not NULL). col: impl_need(g)
 * doubles, Wk (packed) first. 0: LIBXSMM made no kernel (nothing written). */
static int implicit_run(double *Z, double *R, const double *M, const double *b, double alpha,
                        double beta, const double *A, const ds_conv_geom *g, int n,
                        double *col) {
#ifdef DS_HAVE_LIBXSMM
  const int s = g->s, ss = s * s, cin = g->cin, cout = g->cout, t = g->stride, pad = g->pad;
  const int h = g->h, w = g->w, ho = g->ho, wo = g->wo, P = ho * wo;
  const int hp = h + 2 * pad, wp = w + 2 * pad, mb = chan_block(cout), kb = chan_block(cin);
  const int nk = cin / kb, nm = cout / mb;
  const size_t din = (size_t)cin * h * w, dout = (size_t)cout * P;
  const size_t xblk = (size_t)hp * wp * kb;
  libxsmm_dmmfunction_reducebatch_addr k0 = impl_kernel(g, 0.0), k1 = impl_kernel(g, 1.0);
  if (!k0 || !k1) return 0;
  const double *Wk = col;
  double *X = col + (size_t)ss * cin * cout, *Y = X + (size_t)hp * wp * cin;
  const double *ap[IMPL_MAXTAPS], *bp[IMPL_MAXTAPS];
  const unsigned long long cnt = (unsigned long long)ss;
  pad_border(X, g);
  for (int i = 0; i < n; i++) {
    const double *a = A + i * din;
    pad_copy(X, a, g);
    for (int mc = 0; mc < nm; mc++)
      for (int r = 0; r < ho; r++) {
        double *yr = Y + (size_t)mc * P * mb + (size_t)r * wo * mb;
        for (int c = 0; c < nk; c++) {
          for (int p = 0; p < s; p++)
            for (int q = 0; q < s; q++) {
              ap[p * s + q] = Wk + (((size_t)mc * nk + c) * ss + p * s + q) * kb * mb;
              bp[p * s + q] = X + c * xblk + ((size_t)(t * r + p) * wp + q) * kb;
            }
          (c ? k1 : k0)(ap, bp, yr, &cnt);
        }
      }
    double *z = Z + i * dout, *rr = R ? R + i * dout : NULL;
    const double *m = M ? M + i * dout : NULL;
    for (int mc = 0; mc < nm; mc++) /* Y[mc][pos][i] -> Z[mc mb + i][pos] */
      for (int p0 = 0; p0 < P; p0 += 32) {
        const int p1 = p0 + 32 < P ? p0 + 32 : P;
        for (int ii = 0; ii < mb; ii++) {
          const int k = mc * mb + ii;
          const double bk = b ? beta * b[k] : 0.0;
          double *zk = z + (size_t)k * P;
          const double *yk = Y + (size_t)mc * P * mb + ii;
          for (int j = p0; j < p1; j++) {
            double v = alpha * yk[(size_t)j * mb];
            zk[j] = b ? v + bk : v;
          }
          if (rr)
            for (int j = p0; j < p1; j++) rr[(size_t)k * P + j] = zk[j] > 0.0 ? zk[j] : 0.0;
          if (m)
            for (int j = p0; j < p1; j++) zk[j] = m[(size_t)k * P + j] > 0.0 ? zk[j] : 0.0;
        }
      }
  }
  return 1;
#else
  (void)Z, (void)R, (void)M, (void)b, (void)alpha, (void)beta, (void)A, (void)g, (void)n,
      (void)col;
  return 0;
#endif
}

/* The weight gradient the same way: with dY_i (dZ_i in blocks of mb
 * channels, positions, ld mb) and X_i (pad_copy of A_i),
 *   dW_{mc, c, p, q} (mb x kb) += sum_r dY_{mc, r} (mb x wo) X_{c, r, p, q}^T (wo x kb),
 * one batch-reduce kernel (B transposed) over a chunk of R output rows per
 * (chunk, mc, c, tap), into a packed copy (pack_taps' layout) summed over the
 * samples and chunks in order, then dW += alpha (the copy). R from the shape:
 * the chunk's operands within L1 (over all H_o rows at once, operands of
 * ~100 KB, it ran no faster than im2col + DGEMM; in chunks of 2-4 rows
 * 30-38 GFLOP/s against im2col's 23-33 on C = 64 and 128 layers). The sum
 * over samples is in sample order whatever n: the same bits for the same
 * samples in any call split (test_cnn). */
#define IMPL_MAXROWS 512

#ifdef DS_HAVE_LIBXSMM
static libxsmm_dmmfunction_reducebatch_addr implw_kernel(const ds_conv_geom *g) {
  const int mb = chan_block(g->cout), kb = chan_block(g->cin), flags = LIBXSMM_GEMM_FLAG_TRANS_B;
  const libxsmm_blasint lda = mb, ldb = (libxsmm_blasint)g->stride * kb, ldc = mb;
  const double one = 1.0;
  return libxsmm_dmmdispatch_reducebatch_addr(mb, kb, g->wo, &lda, &ldb, &ldc, &one, &one,
                                              &flags, NULL);
}
#endif

static int use_implicit_w(const ds_conv_geom *g) {
#ifdef DS_HAVE_LIBXSMM
  return ds_nn_xsmm_enabled() && implicit_shape(g) && g->ho <= IMPL_MAXROWS && implw_kernel(g);
#else
  (void)g;
  return 0;
#endif
}

static void implicit_wgrad(double *dW, const double *dZ, const double *A, const ds_conv_geom *g,
                           int n, double alpha, double *col) {
#ifdef DS_HAVE_LIBXSMM
  const int s = g->s, ss = s * s, cin = g->cin, cout = g->cout, t = g->stride, pad = g->pad;
  const int ho = g->ho, wo = g->wo, P = ho * wo, K = cin * ss;
  const int wp = g->w + 2 * pad, mb = chan_block(cout), kb = chan_block(cin);
  const int nk = cin / kb, nm = cout / mb;
  const size_t din = (size_t)cin * g->h * g->w, dout = (size_t)cout * P;
  const size_t xblk = (size_t)(g->h + 2 * pad) * wp * kb;
  libxsmm_dmmfunction_reducebatch_addr kern = implw_kernel(g);
  double *Wb = col, *X = col + (size_t)ss * cin * cout, *Y = X + xblk * nk;
  const double *ap[IMPL_MAXROWS], *bp[IMPL_MAXROWS];
  /* rows a kernel: the most whose operands (R rows of dY, R t + s - 1 rows of
   * X) fit in 32 KB (L1), at least 1 */
  int R = 1;
  while (R < ho && ((size_t)(R + 1) * wo * mb + ((size_t)(R + 1) * t + s - 1) * wp * kb) * 8 <=
                       32768)
    R++;
  memset(Wb, 0, (size_t)ss * cin * cout * sizeof *Wb);
  pad_border(X, g);
  for (int i = 0; i < n; i++) {
    pad_copy(X, A + i * din, g);
    const double *dz = dZ + i * dout;
    for (int mc = 0; mc < nm; mc++) /* Y[mc][pos][ii] = dZ_i[mc mb + ii][pos] */
      for (int p0 = 0; p0 < P; p0 += 32) {
        const int p1 = p0 + 32 < P ? p0 + 32 : P;
        for (int ii = 0; ii < mb; ii++) {
          const double *zk = dz + (size_t)(mc * mb + ii) * P;
          double *yk = Y + (size_t)mc * P * mb + ii;
          for (int j = p0; j < p1; j++) yk[(size_t)j * mb] = zk[j];
        }
      }
    for (int r0 = 0; r0 < ho; r0 += R) {
      const int r1 = r0 + R < ho ? r0 + R : ho;
      const unsigned long long cnt = (unsigned long long)(r1 - r0);
      for (int mc = 0; mc < nm; mc++) {
        for (int r = r0; r < r1; r++) ap[r - r0] = Y + (size_t)mc * P * mb + (size_t)r * wo * mb;
        for (int c = 0; c < nk; c++)
          for (int p = 0; p < s; p++)
            for (int q = 0; q < s; q++) {
              for (int r = r0; r < r1; r++)
                bp[r - r0] = X + c * xblk + ((size_t)(t * r + p) * wp + q) * kb;
              kern(ap, bp, Wb + (((size_t)mc * nk + c) * ss + p * s + q) * kb * mb, &cnt);
            }
      }
    }
  }
  for (int o = 0; o < cout; o++)
    for (int k = 0; k < cin; k++)
      for (int tp = 0; tp < ss; tp++)
        dW[(size_t)o * K + (size_t)k * ss + tp] +=
            alpha * Wb[(((size_t)(o / mb) * nk + k / kb) * ss + tp) * kb * mb +
                       (size_t)(k % kb) * mb + o % mb];
#else
  (void)dW, (void)dZ, (void)A, (void)g, (void)n, (void)alpha, (void)col;
#endif
}

/* R NULL: the plain layer; else also R = relu(Z), written per block right
 * after the block's GEMM and scatter while Z is still in cache (one pass over
 * Z from memory fewer than a separate ReLU layer; the same bits) */
void ds_conv_forward_relu(double *Z, double *R, const double *W, const double *b,
                          const double *A, const ds_conv_geom *g, int n, double alpha,
                          double beta, double *col) {
  const int P = g->ho * g->wo, K = g->cin * g->s * g->s, cout = g->cout;
  const size_t din = (size_t)g->cin * g->h * g->w, dout = (size_t)cout * P;
  if (use_implicit(g)) {
    pack_taps(col, W, g, 0);
    if (implicit_run(Z, R, NULL, b, alpha, beta, A, g, n, col)) return;
  }
  const int nbmax = conv_block(g);
  for (int i0 = 0; i0 < n; i0 += nbmax) {
    const int nb = n - i0 < nbmax ? n - i0 : nbmax;
    const size_t ld = (size_t)nb * P;
    double *U = col, *Zb = nb == 1 ? Z + i0 * dout : col + ld * K;
    im2col(U, ld, A + i0 * din, nb, g);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ld, cout, K, alpha, U, (int)ld,
                W, K, 0.0, Zb, (int)ld);
    for (int i = 0; i < nb; i++) {
      double *z = Z + (i0 + i) * dout;
      for (int k = 0; k < cout; k++) {
        const double *zb = Zb + (size_t)k * ld + (size_t)i * P;
        double *zk = z + (size_t)k * P, bk = b ? beta * b[k] : 0.0;
        double *rk = R ? R + (i0 + i) * dout + (size_t)k * P : NULL;
        if (rk) { /* one pass: z = zb + beta b, r = relu(z) */
          for (int p = 0; p < P; p++) {
            double v = b ? zb[p] + bk : zb[p];
            zk[p] = v;
            rk[p] = v > 0.0 ? v : 0.0;
          }
        } else if (nb == 1) {
          if (b)
            for (int p = 0; p < P; p++) zk[p] += bk;
        } else if (b) {
          for (int p = 0; p < P; p++) zk[p] = zb[p] + bk;
        } else {
          memcpy(zk, zb, (size_t)P * sizeof *zk);
        }
      }
    }
  }
}

void ds_conv_forward(double *Z, const double *W, const double *b, const double *A,
                     const ds_conv_geom *g, int n, double alpha, double beta, double *col) {
  ds_conv_forward_relu(Z, NULL, W, b, A, g, n, alpha, beta, col);
}

/* The input gradient at stride 1 is a convolution too: dA_i[o, y, x] = alpha
 * sum_{k, p, q} W[k, o, p, q] dZ_i[k, y + pad - p, x + pad - q] is the layer
 * of this file with cout -> cin channels on the ho x wo maps dZ_i, the kernel
 * Wf[o, k, s-1-p, s-1-q] = W[k, o, p, q] and padding s - 1 - pad (its output
 * is h x w). One DGEMM with inner dimension cout s s writes it, where
 * dZ W^T and col2im would write P K doubles and add them back. Used where its
 * patches (h w cout s s) are at most twice U (P cin s s): not for a first
 * layer of 1 or 3 channels, where dZ W^T (inner dimension cout) and col2im
 * are cheaper and the flipped GEMM would have cin columns only. */
static int use_flip(const ds_conv_geom *g) {
  return g->stride == 1 &&
         (size_t)g->h * g->w * g->cout <= 2 * (size_t)g->ho * g->wo * g->cin;
}

static void flipped(ds_conv_geom *f, double *Wf, const double *W, const ds_conv_geom *g) {
  const int s = g->s, K = g->cin * s * s, Kf = g->cout * s * s;
  *f = (ds_conv_geom){.cin = g->cout, .h = g->ho, .w = g->wo, .cout = g->cin, .s = s,
                      .stride = 1, .pad = s - 1 - g->pad, .ho = g->h, .wo = g->w};
  /* Wf as the column-major Kf x cin matrix of the forward pass: Wf[(k s + p') s + q' + Kf o] */
  for (int k = 0; k < g->cout; k++)
    for (int o = 0; o < g->cin; o++)
      for (int p = 0; p < s; p++)
        for (int q = 0; q < s; q++)
          Wf[(size_t)o * Kf + (k * s + s - 1 - p) * s + s - 1 - q] =
              W[(size_t)k * K + (o * s + p) * s + q];
}

/* dA[j] = M[j] > 0 ? dA[j] : 0 for count entries (the backward of a ReLU
 * whose input was M) */
static void relu_mask(double *dA, const double *M, size_t count) {
  for (size_t j = 0; j < count; j++) dA[j] = M[j] > 0.0 ? dA[j] : 0.0;
}

/* M NULL: the plain layer; else dA is masked by [M > 0] (M: din x n, the
 * input of a ReLU whose output is A), block by block right after the block's
 * dA is written, while it is in cache: the backward of ReLU then conv in one
 * pass, the same bits as the two layers' */
void ds_conv_backward_mask(double *dA, double *dW, double *db, const double *dZ,
                           const double *W, const double *A, const double *M,
                           const ds_conv_geom *g, int n, double alpha, double beta,
                           int accumulate, double *col) {
  const int P = g->ho * g->wo, K = g->cin * g->s * g->s, cout = g->cout, cin = g->cin;
  const int HW = g->h * g->w, Kf = cout * g->s * g->s;
  const size_t din = (size_t)cin * HW, dout = (size_t)cout * P;
  if (!accumulate) {
    if (dW) memset(dW, 0, (size_t)K * cout * sizeof *dW);
    if (db) memset(db, 0, (size_t)cout * sizeof *db);
  }
  if (n < 1) return;
  ds_conv_geom gi;
  flip_geom(&gi, g);
  /* the input gradient by the implicit GEMM after the loop below (which then
   * does db and dW only) */
  double *dAi = dA && g->stride == 1 && use_implicit(&gi) ? dA : NULL;
  if (dAi) dA = NULL;
  if (dW && use_implicit_w(g)) { /* dW first, then the loop below without it */
    implicit_wgrad(dW, dZ, A, g, n, alpha, col);
    dW = NULL;
  }
  const int nbmax = conv_block(g), flip = dA && use_flip(g);
  const int nball = n < nbmax ? n : nbmax;
  double *Wf = col + (size_t)nball * region1(g) + (nball > 1 ? (size_t)nball * region2(g) : 0);
  ds_conv_geom gf;
  if (flip) flipped(&gf, Wf, W, g);
  for (int i0 = 0; i0 < n; i0 += nbmax) {
    const int nb = n - i0 < nbmax ? n - i0 : nbmax;
    const size_t ld = (size_t)nb * P;
    double *U = col, *R2 = col + (size_t)nb * region1(g);
    const double *dZb = dZ + i0 * dout;
    if (db) /* per sample, in sample order: the sums of one sample a call */
      for (int i = i0; i < i0 + nb; i++) {
        const double *dz = dZ + i * dout;
        for (int k = 0; k < cout; k++) {
          double sum = 0.0;
          for (int p = 0; p < P; p++) sum += dz[(size_t)k * P + p];
          db[k] += beta * sum;
        }
      }
    if (nb > 1 && (dW || (dA && !flip))) { /* gather: dZb[k ld + i P + pos] = dZ_i[k P + pos] */
      for (int i = 0; i < nb; i++)
        for (int k = 0; k < cout; k++)
          memcpy(R2 + (size_t)k * ld + (size_t)i * P, dZb + i * dout + (size_t)k * P,
                 (size_t)P * sizeof *R2);
      dZb = R2;
    }
    if (dW) {
      im2col(U, ld, A + i0 * din, nb, g);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, K, cout, (int)ld, alpha, U, (int)ld,
                  dZb, (int)ld, 1.0, dW, K);
    }
    if (dA && flip) {
      const size_t ldf = (size_t)nb * HW;
      double *dAb = nb == 1 ? dA + i0 * din : R2;
      im2col(U, ldf, dZ + i0 * dout, nb, &gf);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ldf, cin, Kf, alpha, U,
                  (int)ldf, Wf, Kf, 0.0, dAb, (int)ldf);
      if (nb > 1)
        for (int i = 0; i < nb; i++)
          for (int o = 0; o < cin; o++) {
            double *d = dA + (i0 + i) * din + (size_t)o * HW;
            const double *e = dAb + (size_t)o * ldf + (size_t)i * HW;
            if (M) {
              const double *mk = M + (i0 + i) * din + (size_t)o * HW;
              for (int j = 0; j < HW; j++) d[j] = mk[j] > 0.0 ? e[j] : 0.0;
            } else {
              memcpy(d, e, (size_t)HW * sizeof *dAb);
            }
          }
      else if (M)
        relu_mask(dA + i0 * din, M + i0 * din, din);
    } else if (dA) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)ld, K, cout, alpha, dZb,
                  (int)ld, W, K, 0.0, U, (int)ld);
      col2im(dA + i0 * din, U, ld, nb, g);
      if (M) relu_mask(dA + i0 * din, M + i0 * din, (size_t)nb * din);
    }
  }
  if (dAi) {
    pack_taps(col, W, g, 1);
    implicit_run(dAi, NULL, M, NULL, alpha, beta, dZ, &gi, n, col); /* its kernel exists */
  }
}

void ds_conv_backward(double *dA, double *dW, double *db, const double *dZ, const double *W,
                      const double *A, const ds_conv_geom *g, int n, double alpha, double beta,
                      int accumulate, double *col) {
  ds_conv_backward_mask(dA, dW, db, dZ, W, A, NULL, g, n, alpha, beta, accumulate, col);
}

void ds_gap_forward(double *G, const double *A, int c, int p, int n) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c; k++) {
      const double *a = A + ((size_t)i * c + k) * p;
      double sum = 0.0;
      for (int j = 0; j < p; j++) sum += a[j];
      G[(size_t)i * c + k] = sum / p;
    }
}

void ds_gap_backward(double *dA, const double *dG, int c, int p, int n) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < c; k++) {
      double v = dG[(size_t)i * c + k] / p;
      double *a = dA + ((size_t)i * c + k) * p;
      for (int j = 0; j < p; j++) a[j] = v;
    }
}
