/* probe.h -- what this machine does per second, measured once and cached
 * (src/util/probe.c): the rates `dynsweep plan` and `submit --dry-run` turn
 * a point's shapes into seconds with (src/config/cost.c, ds_point_seconds). */
#ifndef DYNSWEEP_PROBE_H
#define DYNSWEEP_PROBE_H

#include <stddef.h>

#define DS_PROBE_NW 9 /* layer widths 2, 4, ..., 512 */
#define DS_PROBE_NB 4  /* samples 1, 8, 64, 512 */
#define DS_PROBE_NS 4  /* SVD / eigen sizes 4, 16, 64, 256 */

typedef struct {
  /* seconds per flop of a training step's three GEMMs (Z = W A, dW = dZ A^T,
   * dA = W^T dZ) of a w x w layer on b samples: gemm[iw][ib], w = 2^(iw+1),
   * b = 8^ib */
  double gemm[DS_PROBE_NW][DS_PROBE_NB];
  double vec;           /* seconds per element of a daxpy (elementwise passes) */
  double call;          /* seconds of one tiny BLAS call (2 x 2 x 1 GEMM) */
  double skinny;        /* seconds per element of the largest operand of a GEMM with a
                         * dimension of 1 (1 x 128 by 128 x 1024 and the like):
                         * memory-bound, where the flop rate says nothing */
  double svd[DS_PROBE_NS];  /* seconds of singular values of an s x s matrix (dgesdd), s = 4^(i+1) */
  double syev[DS_PROBE_NS]; /* seconds of eigenvalues + vectors of an s x s symmetric matrix (dsyevd) */
  double seconds;       /* how long the probe took */
  double load;          /* 1-minute load average when it ran */
  long long when;       /* Unix time it ran */
  int cached;           /* 1 read from the cache, 0 measured now */
  int nominal;          /* 1: no probe could run (note says why), nominal 5 GFLOP/s */
  char key[1024];       /* host, CPU, kernel, OpenBLAS core, version: a change re-probes */
  char path[1024];      /* the cache file ("" if none could be named) */
  char note[256];       /* why it was not cached, or "" */
} ds_probe;

/* The probe for this machine: read from the cache if its key matches, else
 * measured (< 1 s) and written to the cache ($XDG_CACHE_HOME/dynsweep or
 * ~/.cache/dynsweep; a cache that cannot be written is said in note, not an
 * error). recalibrate: measure even if cached. Returns 0 (always usable). */
int ds_probe_get(int recalibrate, ds_probe *p);

/* Seconds per flop of a training-step GEMM of a layer of w_eff = sqrt(d_l *
 * d_{l-1}) on b samples (log-log interpolation in the probed table). */
double ds_probe_gemm_spf(const ds_probe *p, double w, double b);
/* Seconds of one GEMM C (m x n) = A (m x k) B (k x n) of a layer of width
 * w_eff on b samples: its flops at that rate, or the time to stream its
 * largest operand (skinny shapes), whichever is longer, plus a call. */
double ds_probe_gemm_s(const ds_probe *p, double m, double n, double k, double w, double b);
/* Seconds of the singular values of an m x n matrix, the eigen of an s x s. */
double ds_probe_svd_s(const ds_probe *p, double m, double n);
double ds_probe_syev_s(const ds_probe *p, double s);

/* "DGEMM 64x64 on 64 samples 12.3 GFLOP/s, 512x512 45.1" for `plan`. */
void ds_probe_basis(const ds_probe *p, char *buf, size_t n);

#endif
