/* cnnlayers.c -- the CNN's layers other than the convolution (cnn.h):
 * average and max pooling, dropout masks, the layer kinds' names and the
 * layer list of the fixed nets of ds_cnn_spec.
 *
 * Pooling has no padding and drops the windows that do not fit, as PyTorch's
 * avg_pool2d / max_pool2d (ceil_mode False): ho = floor((h - size)/stride) + 1.
 * Average pooling is linear: B = (1/size^2) sum over the window, so its
 * adjoint spreads dB/size^2 over the window (overlapping windows add).
 * Max pooling is piecewise linear: B = A[arg], the arg-max frozen (first
 * of ties, as PyTorch's CPU kernel), so its adjoint adds dB at arg.
 *
 * Dropout: inverted dropout, y = x m, m = 1/(1-p) with probability 1 - p
 * and 0 otherwise. The mask of (step, sample, unit) comes from one Philox
 * block whose key is (seed, step, sample id) and whose counter is (unit,
 * layer): it depends on nothing else (not on the batch, the rank, or the
 * order of the calls), so runs agree across rank counts.
 *
 * DAG block (seed 003 Eq. A.5 with App. A.1's randomly dropped edges, Fig.
 * 2.2): with c_1 = a (the input, d_in x 1) and c_{k+1} = [c_k; f_k],
 *   z_k = E_k c_k,  E_k = diag(s_k) (M_k .* W_k),  f_k = relu(z_k),
 * and the block's output is c_{depth+1} = [a; f_1; ...; f_depth]. Each neuron
 * v of layer k is the seed's f_v = sigma(sum_{u in S_in(v)} w_uv f_u /
 * sqrt(in(v))) on the DAG left after dropping: S_in(v) = the kept edges of
 * row v of M_k, so s_k[v] = 1/sqrt(in(v)) with in(v) the mask's in-degree
 * (Def. 2.2.2 and App. A.1, "simply remove the edges ... the new DAG").
 * Backward (cotangent g of the output, the running sum of what reaches each
 * concatenated neuron: g starts as dy and, top down over k,
 *   dz_k = g[f_k] .* [z_k > 0],  dW_k = s_k .* M_k .* (dz_k c_k^T),
 *   g[c_k] += E_k^T dz_k,
 * so dx = g[a] at the end. The tangent forward and the R-backward are the
 * same chain with R{E_k} = diag(s_k)(M_k .* V_k):
 *   R{z_k} = R{E_k} c_k + E_k R{c_k},  R{f_k} = [z_k > 0] R{z_k};
 *   R{dz_k} = R{g[f_k]} .* [z_k > 0],
 *   R{dW_k} = s_k .* M_k .* (R{dz_k} c_k^T + dz_k R{c_k}^T),
 *   R{g[c_k]} += E_k^T R{dz_k} + R{E_k}^T dz_k.
 * The mask multiplies W in the forward pass and the gradient, so F does not
 * depend on masked entries and their gradient (and Hv) is exactly 0.
 *
 * Masked readout (model.dag_readout_drop, cnn.h's rdrop): the dense readout
 * after the block, F = E a + beta b with E = diag(s) (M .* W) (W column-major
 * dout x d_in), s[o] = 1/sqrt(kept in-degree of unit o) (NTK): the same
 * rule as the block's, so every product of the dense layer (forward,
 * backward, tangent, R-backward, f_quad's second order) runs unchanged on E
 * (and E(V) = diag(s) (M .* V)) with scale 1 instead of W with alpha, and
 * its weight gradient is masked by s .* M: dW = s .* M .* (dy a^T). */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "dynsweep/cnn.h"

#include "cnn_internal.h"

static const char *const kind_names[DS_LAYER_NKINDS] = {
    "conv", "relu", "avgpool", "maxpool", "gap", "flatten", "dense", "resblock", "dropout",
    "dag"};

const char *ds_cnn_kind_name(int kind) {
  return kind >= 0 && kind < DS_LAYER_NKINDS ? kind_names[kind] : "?";
}

int ds_cnn_spec_layers(const ds_cnn_spec *spec, ds_cnn_layer *layers) {
  int n = 0;
  for (int l = 0; l < spec->nconv; l++) {
    layers[n++] = (ds_cnn_layer){.kind = DS_LAYER_CONV, .cout = spec->channels,
                                 .size = spec->ksize, .stride = spec->stride, .same = spec->same};
    layers[n++] = (ds_cnn_layer){.kind = DS_LAYER_RELU};
  }
  layers[n++] = (ds_cnn_layer){.kind = spec->readout == DS_CNN_GAP ? DS_LAYER_GAP
                                                                   : DS_LAYER_FLATTEN};
  return n;
}

int ds_pool_geom_set(ds_pool_geom *g, int c, int h, int w, int size, int stride) {
  if (stride == 0) stride = size;
  if (c < 1 || h < 1 || w < 1 || size < 1 || stride < 1 || size > h || size > w)
    return DS_EINPUT;
  *g = (ds_pool_geom){.c = c, .h = h, .w = w, .size = size, .stride = stride,
                      .ho = (h - size) / stride + 1, .wo = (w - size) / stride + 1};
  return DS_OK;
}

void ds_avgpool_forward(double *B, const double *A, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  const double scale = 1.0 / ((double)g->size * g->size);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) { /* sample-major, then channel */
    const double *a = A + cc * din;
    double *b = B + cc * dout;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        double sum = 0.0;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++)
            sum += a[(size_t)(g->stride * i + p) * g->w + g->stride * j + q];
        b[(size_t)i * g->wo + j] = sum * scale;
      }
  }
}

void ds_avgpool_backward(double *dA, const double *dB, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  const double scale = 1.0 / ((double)g->size * g->size);
  memset(dA, 0, (size_t)n * g->c * din * sizeof *dA);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) {
    double *a = dA + cc * din;
    const double *b = dB + cc * dout;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        double v = b[(size_t)i * g->wo + j] * scale;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++)
            a[(size_t)(g->stride * i + p) * g->w + g->stride * j + q] += v;
      }
  }
}

void ds_maxpool_forward(double *B, int *arg, const double *A, const ds_pool_geom *g, int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++) {
    const double *a = A + cc * din;
    for (int i = 0; i < g->ho; i++)
      for (int j = 0; j < g->wo; j++) {
        int best = (g->stride * i) * g->w + g->stride * j;
        for (int p = 0; p < g->size; p++)
          for (int q = 0; q < g->size; q++) {
            int k = (g->stride * i + p) * g->w + g->stride * j + q;
            if (a[k] > a[best]) best = k;
          }
        B[cc * dout + (size_t)i * g->wo + j] = a[best];
        arg[cc * dout + (size_t)i * g->wo + j] = best;
      }
  }
}

void ds_maxpool_backward(double *dA, const double *dB, const int *arg, const ds_pool_geom *g,
                         int n) {
  const size_t din = (size_t)g->h * g->w, dout = (size_t)g->ho * g->wo;
  memset(dA, 0, (size_t)n * g->c * din * sizeof *dA);
  for (size_t cc = 0; cc < (size_t)n * g->c; cc++)
    for (size_t k = 0; k < dout; k++) dA[cc * din + arg[cc * dout + k]] += dB[cc * dout + k];
}

void ds_dropout_mask(double *mask, size_t units, int n, double p, uint64_t seed, uint64_t step,
                     const int *ids, int layer) {
  const double keep = 1.0 / (1.0 - p);
  for (int i = 0; i < n; i++) {
    ds_rng r;
    ds_rng_init(&r, seed, step, (uint32_t)(ids ? ids[i] : i), DS_STREAM_DROPOUT);
    for (size_t j = 0; j < units; j++) {
      uint32_t ctr[4] = {(uint32_t)j, (uint32_t)layer, 0, 0}, out[4];
      ds_philox4x32(r.key, ctr, out);
      double u = ((double)out[0] + 0.5) * (1.0 / 4294967296.0);
      mask[(size_t)i * units + j] = u >= p ? keep : 0.0;
    }
  }
}

/* ---- the DAG block ---- */

size_t ds_dag_woff(const ds_cnn_ly *y, int k) {
  const size_t m = (size_t)y->L.cout;
  return m * ((size_t)k * y->din + m * (size_t)k * (k - 1) / 2);
}

static size_t dag_in(const ds_cnn_ly *y, int k) { return y->din + (size_t)k * y->L.cout; }

void ds_dag_reset(ds_cnn_ly *y, int ntk) {
  for (size_t i = 0; i < y->dagP; i++) y->dmask[i] = 1.0;
  for (int k = 0; k < y->ndag; k++)
    for (int r = 0; r < y->L.cout; r++)
      y->dscale[(size_t)k * y->L.cout + r] = ntk ? 1.0 / sqrt((double)dag_in(y, k)) : 1.0;
}

void ds_dag_init(const ds_cnn_ly *y, ds_rng *rng, double *W, int ntk, double scale, double std) {
  const int m = y->L.cout;
  for (int k = 0; k < y->ndag; k++) {
    const size_t in = dag_in(y, k), o = ds_dag_woff(y, k);
    double *M = y->dmask + o;
    for (size_t i = 0; i < (size_t)m * in; i++) M[i] = ds_rng_uniform(rng) >= y->L.p ? 1.0 : 0.0;
    for (int r = 0; r < m; r++) {
      double deg = 0.0;
      for (size_t c = 0; c < in; c++) deg += M[(size_t)r * in + c];
      y->dscale[(size_t)k * m + r] = ntk ? (deg > 0.0 ? 1.0 / sqrt(deg) : 0.0) : 1.0;
      double bound = 1.0 / sqrt(deg > 0.0 ? deg : 1.0);
      for (size_t c = 0; c < in; c++) {
        size_t i = (size_t)r * in + c;
        double w = std > 0 ? scale * std * ds_rng_normal(rng)
                   : ntk   ? scale * ds_rng_normal(rng)
                           : scale * (bound * (2.0 * ds_rng_uniform(rng) - 1.0));
        W[o + i] = M[i] != 0.0 ? w : 0.0;
      }
    }
  }
}

/* E = s .* M .* W over the whole block */
static void dag_eff(const ds_cnn_ly *y, const double *W, double *E) {
  const int m = y->L.cout;
  for (int k = 0; k < y->ndag; k++) {
    const size_t in = dag_in(y, k), o = ds_dag_woff(y, k);
    for (int r = 0; r < m; r++) {
      double s = y->dscale[(size_t)k * m + r];
      for (size_t c = 0; c < in; c++) {
        size_t i = o + (size_t)r * in + c;
        E[i] = s * y->dmask[i] * W[i];
      }
    }
  }
}

/* G (row-major m x in at o) .*= s .* M */
static void dag_gmask(const ds_cnn_ly *y, int k, double *G) {
  const int m = y->L.cout;
  const size_t in = dag_in(y, k), o = ds_dag_woff(y, k);
  for (int r = 0; r < m; r++) {
    double s = y->dscale[(size_t)k * m + r];
    for (size_t c = 0; c < in; c++) {
      size_t i = o + (size_t)r * in + c;
      G[i] *= s * y->dmask[i];
    }
  }
}

void ds_dag_forward(ds_cnn_ly *y, const double *W, const double *x, int n) {
  const int m = y->L.cout;
  const size_t din = y->din, T = y->dout, Dm = (size_t)y->ndag * m;
  dag_eff(y, W, y->weff);
  for (int i = 0; i < n; i++) memcpy(y->out + i * T, x + i * din, din * sizeof *x);
  for (int k = 0; k < y->ndag; k++) {
    const size_t in = dag_in(y, k);
    double *z = y->pre + (size_t)k * m;
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, m, n, (int)in, 1.0,
                y->weff + ds_dag_woff(y, k), (int)in, y->out, (int)T, 0.0, z, (int)Dm);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++) {
        double v = z[i * Dm + j];
        y->out[i * T + in + j] = v > 0.0 ? v : 0.0;
      }
  }
}

/* d (m x n) = g[f_k] .* [z_k > 0] */
static void dag_gate(const ds_cnn_ly *y, int k, const double *g, double *d, int n) {
  const int m = y->L.cout;
  const size_t T = y->dout, Dm = (size_t)y->ndag * m, in = dag_in(y, k);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      d[(size_t)i * m + j] = y->pre[i * Dm + (size_t)k * m + j] > 0.0 ? g[i * T + in + j] : 0.0;
}

static void copy_rows(double *dst, const double *src, size_t rows, size_t ld, int n) {
  for (int i = 0; i < n; i++) memcpy(dst + i * rows, src + i * ld, rows * sizeof *dst);
}

void ds_dag_backward(ds_cnn_ly *y, const double *dy, double *dx, double *gW, int n) {
  const int m = y->L.cout;
  const size_t T = y->dout;
  memcpy(y->acc, dy, T * n * sizeof *dy);
  for (int k = y->ndag - 1; k >= 0; k--) {
    const int in = (int)dag_in(y, k);
    const size_t o = ds_dag_woff(y, k);
    dag_gate(y, k, y->acc, y->dz, n);
    if (gW) { /* (dz c^T) row-major m x in = column-major in x m */
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, in, m, n, 1.0, y->out, (int)T, y->dz,
                  m, 0.0, gW + o, in);
      dag_gmask(y, k, gW);
    }
    if (k > 0 || dx)
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, in, n, m, 1.0, y->weff + o, in,
                  y->dz, m, 1.0, y->acc, (int)T);
  }
  if (dx) copy_rows(dx, y->acc, y->din, T, n);
}

void ds_dag_tangent(ds_cnn_ly *y, const double *V, const double *Rx, double *Ry, int n) {
  const int m = y->L.cout;
  const size_t din = y->din, T = y->dout;
  dag_eff(y, V, y->veff);
  for (int i = 0; i < n; i++) memcpy(Ry + i * T, Rx + i * din, din * sizeof *Rx);
  const size_t Dm = (size_t)y->ndag * m;
  for (int k = 0; k < y->ndag; k++) {
    const int in = (int)dag_in(y, k);
    const size_t o = ds_dag_woff(y, k);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, m, n, in, 1.0, y->veff + o, in, y->out,
                (int)T, 0.0, y->rdz, m);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, m, n, in, 1.0, y->weff + o, in, Ry,
                (int)T, 1.0, y->rdz, m);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < m; j++)
        Ry[i * T + in + j] =
            y->pre[i * Dm + (size_t)k * m + j] > 0.0 ? y->rdz[(size_t)i * m + j] : 0.0;
  }
}

void ds_dag_rbackward(ds_cnn_ly *y, const double *dy, const double *Rdy, const double *Ry,
                      double *dx, double *Rdx, double *RgW, int n) {
  const int m = y->L.cout;
  const size_t T = y->dout;
  memcpy(y->acc, dy, T * n * sizeof *dy);
  memcpy(y->racc, Rdy, T * n * sizeof *Rdy);
  for (int k = y->ndag - 1; k >= 0; k--) {
    const int in = (int)dag_in(y, k);
    const size_t o = ds_dag_woff(y, k);
    dag_gate(y, k, y->acc, y->dz, n);
    dag_gate(y, k, y->racc, y->rdz, n);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, in, m, n, 1.0, y->out, (int)T, y->rdz,
                m, 0.0, RgW + o, in);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, in, m, n, 1.0, Ry, (int)T, y->dz, m,
                1.0, RgW + o, in);
    dag_gmask(y, k, RgW);
    if (k > 0 || dx) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, in, n, m, 1.0, y->weff + o, in,
                  y->rdz, m, 1.0, y->racc, (int)T);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, in, n, m, 1.0, y->veff + o, in,
                  y->dz, m, 1.0, y->racc, (int)T);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, in, n, m, 1.0, y->weff + o, in,
                  y->dz, m, 1.0, y->acc, (int)T);
    }
  }
  if (dx) copy_rows(dx, y->acc, y->din, T, n), copy_rows(Rdx, y->racc, y->din, T, n);
}

/* ---- the masked readout ---- */

void ds_mdense_reset(ds_cnn_ly *y, double alpha) {
  for (size_t i = 0; i < y->din * (size_t)y->cout; i++) y->dmask[i] = 1.0;
  for (int r = 0; r < y->cout; r++) y->dscale[r] = alpha;
}

void ds_mdense_init(const ds_cnn_ly *y, ds_rng *rng, double *W, int ntk, double scale, double std) {
  const size_t rows = (size_t)y->cout, cols = y->din;
  double *M = y->dmask, *deg = y->dscale; /* the kept in-degrees first, the scales at the end */
  for (size_t i = 0; i < rows * cols; i++) M[i] = ds_rng_uniform(rng) >= y->L.p ? 1.0 : 0.0;
  for (size_t r = 0; r < rows; r++) {
    deg[r] = 0.0;
    for (size_t c = 0; c < cols; c++) deg[r] += M[r + c * rows];
  }
  for (size_t i = 0; i < rows * cols; i++) { /* theta order: column-major */
    double bound = 1.0 / sqrt(deg[i % rows] > 0.0 ? deg[i % rows] : 1.0);
    double w = std > 0 ? scale * std * ds_rng_normal(rng)
               : ntk   ? scale * ds_rng_normal(rng)
                       : scale * (bound * (2.0 * ds_rng_uniform(rng) - 1.0));
    W[i] = M[i] != 0.0 ? w : 0.0;
  }
  for (size_t r = 0; r < rows; r++) deg[r] = ntk ? (deg[r] > 0.0 ? 1.0 / sqrt(deg[r]) : 0.0) : 1.0;
}

void ds_mdense_eff(const ds_cnn_ly *y, const double *W, double *E) {
  const size_t rows = (size_t)y->cout, cols = y->din;
  for (size_t c = 0; c < cols; c++)
    for (size_t r = 0; r < rows; r++) {
      size_t i = r + c * rows;
      E[i] = y->dscale[r] * y->dmask[i] * W[i];
    }
}

void ds_mdense_gmask(const ds_cnn_ly *y, double *G) {
  const size_t rows = (size_t)y->cout, cols = y->din;
  for (size_t c = 0; c < cols; c++)
    for (size_t r = 0; r < rows; r++) G[r + c * rows] *= y->dscale[r] * y->dmask[r + c * rows];
}
