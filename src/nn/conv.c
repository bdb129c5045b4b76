/* conv.c -- the 2-D convolution layer and global average pooling (cnn.h).
 *
 * One sample at a time: im2col writes the sample's patches as U (P x K,
 * column-major, P = ho wo output positions, K = cin s s patch entries in
 * PyTorch's (o, p, q) order), so that with W (cout x K row-major) viewed as a
 * column-major K x cout matrix the output Z_i (cout x P in CHW order) is the
 * column-major P x cout matrix alpha U W: one DGEMM. Backward: dW = alpha
 * U^T dZ_i (accumulated over samples), dU = alpha dZ_i W^T, col2im(dU) -> dA.
 * U is recomputed in the backward pass (storing it for all samples would take
 * n P K doubles). */
#include <cblas.h>
#include <string.h>

#include "dynsweep/cnn.h"

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

size_t ds_conv_col_size(const ds_conv_geom *g, int n) {
  (void)n; /* one sample at a time */
  return (size_t)g->ho * g->wo * g->cin * g->s * g->s;
}

/* U[pos + k P] = A[o, t i + p - pi, t j + q - pi] (0 outside), k = (o s + p) s + q */
static void im2col(double *U, const double *A, const ds_conv_geom *g) {
  const int P = g->ho * g->wo, s = g->s, t = g->stride;
  for (int o = 0; o < g->cin; o++)
    for (int p = 0; p < s; p++)
      for (int q = 0; q < s; q++) {
        double *u = U + (size_t)((o * s + p) * s + q) * P;
        const double *a = A + (size_t)o * g->h * g->w;
        for (int i = 0; i < g->ho; i++) {
          int y = t * i + p - g->pad;
          double *ui = u + (size_t)i * g->wo;
          if (y < 0 || y >= g->h) {
            memset(ui, 0, (size_t)g->wo * sizeof *ui);
            continue;
          }
          for (int j = 0; j < g->wo; j++) {
            int x = t * j + q - g->pad;
            ui[j] = (x >= 0 && x < g->w) ? a[(size_t)y * g->w + x] : 0.0;
          }
        }
      }
}

/* dA[o, y, x] += dU[pos + k P] (the adjoint of im2col) */
static void col2im(double *dA, const double *dU, const ds_conv_geom *g) {
  const int P = g->ho * g->wo, s = g->s, t = g->stride;
  for (int o = 0; o < g->cin; o++)
    for (int p = 0; p < s; p++)
      for (int q = 0; q < s; q++) {
        const double *u = dU + (size_t)((o * s + p) * s + q) * P;
        double *a = dA + (size_t)o * g->h * g->w;
        for (int i = 0; i < g->ho; i++) {
          int y = t * i + p - g->pad;
          if (y < 0 || y >= g->h) continue;
          for (int j = 0; j < g->wo; j++) {
            int x = t * j + q - g->pad;
            if (x >= 0 && x < g->w) a[(size_t)y * g->w + x] += u[(size_t)i * g->wo + j];
          }
        }
      }
}

void ds_conv_forward(double *Z, const double *W, const double *b, const double *A,
                     const ds_conv_geom *g, int n, double alpha, double beta, double *col) {
  const int P = g->ho * g->wo, K = g->cin * g->s * g->s;
  const size_t din = (size_t)g->cin * g->h * g->w, dout = (size_t)g->cout * P;
  for (int i = 0; i < n; i++) {
    double *z = Z + i * dout;
    im2col(col, A + i * din, g);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, P, g->cout, K, alpha, col, P, W, K,
                0.0, z, P);
    if (b)
      for (int k = 0; k < g->cout; k++) {
        double bk = beta * b[k];
        for (int p = 0; p < P; p++) z[(size_t)k * P + p] += bk;
      }
  }
}

void ds_conv_backward(double *dA, double *dW, double *db, const double *dZ, const double *W,
                      const double *A, const ds_conv_geom *g, int n, double alpha, double beta,
                      int accumulate, double *col) {
  const int P = g->ho * g->wo, K = g->cin * g->s * g->s;
  const size_t din = (size_t)g->cin * g->h * g->w, dout = (size_t)g->cout * P;
  if (!accumulate) {
    if (dW) memset(dW, 0, (size_t)K * g->cout * sizeof *dW);
    if (db) memset(db, 0, (size_t)g->cout * sizeof *db);
  }
  for (int i = 0; i < n; i++) {
    const double *dz = dZ + i * dout;
    if (dW) {
      im2col(col, A + i * din, g);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, K, g->cout, P, alpha, col, P, dz, P,
                  1.0, dW, K);
    }
    if (db)
      for (int k = 0; k < g->cout; k++) {
        double sum = 0.0;
        for (int p = 0; p < P; p++) sum += dz[(size_t)k * P + p];
        db[k] += beta * sum;
      }
    if (dA) {
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, P, K, g->cout, alpha, dz, P, W, K,
                  0.0, col, P);
      double *da = dA + i * din;
      memset(da, 0, din * sizeof *da);
      col2im(da, col, g);
    }
  }
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
