/* init.c -- ds_mlp_init_weights: every initialisation of the studies
 * (config.h ds_init_kind; fan_in = d_{l-1}, fan_out = d_l for W_l, s = init_scale):
 *
 *   gaussian       N(0, (s std)^2), std = init_std, or 1/sqrt(fan_in) when
 *                  init_std = 0 (then the entries equal ds_mlp_init_gaussian(s))
 *   glorot_uniform U(-a, a), a = s sqrt(6 / (fan_in + fan_out))
 *   he             N(0, s^2 2 / fan_in)
 *   orthogonal     s Q: Q from the QR of a Gaussian max x min matrix, columns
 *                  signed so diag(R) > 0 (Haar); W = Q if fan_out >= fan_in
 *                  (W^T W = I) else Q^T (W W^T = I)
 *   def4           seed 000 Def. 4: variance s^2 sigma_l^2, sigma_1^2 = 1/d_1,
 *                  sigma_L^2 = 1/d_{L-1}, 2/(d_{l-1} + d_l) in between
 *                  (depth 1: the first-layer rule, 1/d_1); Gaussian entries
 *   balanced       seed 001 Procedure 1: A = s G / sqrt(d_0) (G Gaussian d_L x d_0)
 *                  or s I (balanced_identity); thin SVD A = U S V^T, r =
 *                  min(d_0, d_L); W_L ~ U S^{1/L}, W_j ~ S^{1/L} (hidden),
 *                  W_1 ~ S^{1/L} V^T, "~" = top-left block, zeros elsewhere.
 *                  W_L ... W_1 = A and W_{j+1}^T W_{j+1} = W_j W_j^T. Needs
 *                  every hidden width >= r (DS_EINPUT otherwise); depth 1 is
 *                  W_1 = A. The identity case is built directly (W_j =
 *                  s^{1/L} I padded, sign of s on W_L), without an SVD.
 *   near_identity  seed 002: N(0, (s std)^2) plus 1 on the diagonal (i, i),
 *                  i < min(fan_in, fan_out), of every matrix; std as for
 *                  gaussian (init_std = 0 means 1/sqrt(fan_in): seed 002 itself
 *                  uses init_std 0.01, init_scale 1). The 1 is not scaled.
 *   ntk            N(0, s^2) (for param: ntk)
 * Biases start at 0. symmetric (seed 000, depth 2, even hidden width m): after
 * the kind's draw, row 2i of W_1 = -(row 2i-1) and column 2i of W_2 =
 * -(column 2i-1) (1-based; i = 1..m/2). As in the paper (w_{2i} = -w_{2i-1},
 * a_{2i} = -a_{2i-1}) this makes a ReLU net exactly linear at init,
 * f(x) = 1/2 a^T W x (alpha-scaled under NTK): relu(z) - relu(-z) = z. It
 * does NOT make f = 0 (that would need w_{2i} = +w_{2i-1}).
 *
 * init_offset (issue 13): added to every entry of W_1 last (after the
 * kind's draw and the symmetric pairing); unscaled by init_scale.
 *
 * rng draw order (fixed, so a seed reproduces theta): for l = 1..L, the
 * entries of W_l in column-major order, one draw each (normal, or uniform for
 * glorot); orthogonal: per layer the max(d_l, d_{l-1}) x min(...) Gaussian
 * matrix, column-major; balanced: only the d_L x d_0 Gaussian G,
 * column-major (no draws with balanced_identity). symmetric draws every entry
 * first, then overwrites the paired ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynsweep/nn.h"
#include "nn_internal.h"

/* Q (M x k, M >= k) in place over the Gaussian matrix A, diag(R) > 0 */
static int orthonormalise(double *A, int M, int k) {
  int info = 0, lwork = -1;
  double q1 = 0.0, q2 = 0.0;
  double *tau = ds_calloc((size_t)k, sizeof *tau), *sign = ds_calloc((size_t)k, sizeof *sign);
  double *work = NULL;
  int rc = DS_OK;
  if (!tau || !sign) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgeqrf_(&M, &k, A, &M, tau, &q1, &lwork, &info);
  dorgqr_(&M, &k, &k, A, &M, tau, &q2, &lwork, &info);
  lwork = (int)fmax(fmax(q1, q2), (double)k);
  work = ds_calloc((size_t)lwork, sizeof *work);
  if (!work) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgeqrf_(&M, &k, A, &M, tau, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "init orthogonal: dgeqrf failed (info = %d)", info);
    goto done;
  }
  for (int j = 0; j < k; j++) sign[j] = A[(size_t)j * M + j] < 0.0 ? -1.0 : 1.0;
  dorgqr_(&M, &k, &k, A, &M, tau, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "init orthogonal: dorgqr failed (info = %d)", info);
    goto done;
  }
  for (int j = 0; j < k; j++)
    for (int i = 0; i < M; i++) A[(size_t)j * M + i] *= sign[j];
done:
  free(tau);
  free(sign);
  free(work);
  return rc;
}

static int init_orthogonal(const ds_mlp *m, double s, ds_rng *rng, double *theta) {
  for (int l = 1; l <= m->depth; l++) {
    int dout = m->dims[l], din = m->dims[l - 1];
    int M = dout > din ? dout : din, k = dout > din ? din : dout;
    double *Q = ds_calloc((size_t)M * k, sizeof *Q);
    if (!Q) return DS_ENOMEM;
    for (size_t q = 0; q < (size_t)M * k; q++) Q[q] = ds_rng_normal(rng);
    int rc = orthonormalise(Q, M, k);
    if (rc != DS_OK) {
      free(Q);
      return rc;
    }
    double *W = theta + m->w_off[l - 1];
    if (dout >= din) /* W = s Q (dout x din) */
      for (size_t q = 0; q < (size_t)M * k; q++) W[q] = s * Q[q];
    else /* W = s Q^T: W(i, j) = Q(j, i), Q is din x dout */
      for (int j = 0; j < din; j++)
        for (int i = 0; i < dout; i++) W[(size_t)j * dout + i] = s * Q[(size_t)i * din + j];
    free(Q);
  }
  return DS_OK;
}

static int init_balanced(const ds_mlp *m, const ds_model_spec *spec, ds_rng *rng,
                         double *theta) {
  int L = m->depth, d0 = m->dims[0], dL = m->dims[L];
  int r = d0 < dL ? d0 : dL;
  double s = spec->init_scale;
  for (int l = 1; l < L; l++)
    if (m->dims[l] < r)
      return ds_fail(DS_EINPUT,
                     "init balanced: hidden width d_%d = %d is smaller than rank "
                     "min(d_in, d_out) = %d (seed 001 Procedure 1 needs min hidden width >= r)",
                     l, m->dims[l], r);
  if (spec->balanced_identity) { /* A = s I: W_j = |s|^{1/L} I padded, sign on W_L */
    double root = pow(fabs(s), 1.0 / L);
    for (int l = 1; l <= L; l++) {
      double *W = theta + m->w_off[l - 1];
      double val = l == L && s < 0 ? -root : root;
      if (L == 1) val = s;
      for (int i = 0; i < r; i++) W[(size_t)i * m->dims[l] + i] = val;
    }
    return DS_OK;
  }
  /* A (dL x d0) = s G / sqrt(d0) */
  size_t na = (size_t)dL * d0;
  double *A = ds_calloc(na, sizeof *A);
  if (!A) return DS_ENOMEM;
  double sd = s / sqrt((double)d0);
  for (size_t q = 0; q < na; q++) A[q] = sd * ds_rng_normal(rng);
  if (L == 1) {
    memcpy(theta + m->w_off[0], A, na * sizeof *A);
    free(A);
    return DS_OK;
  }
  double *U = ds_calloc((size_t)dL * r, sizeof *U), *VT = ds_calloc((size_t)r * d0, sizeof *VT);
  double *S = ds_calloc((size_t)r, sizeof *S), *work = NULL, q = 0.0;
  int rc = DS_OK, info = 0, lwork = -1;
  if (!U || !VT || !S) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgesvd_("S", "S", &dL, &d0, A, &dL, S, U, &dL, VT, &r, &q, &lwork, &info);
  lwork = (int)fmax(q, 1.0);
  work = ds_calloc((size_t)lwork, sizeof *work);
  if (!work) {
    rc = DS_ENOMEM;
    goto done;
  }
  dgesvd_("S", "S", &dL, &d0, A, &dL, S, U, &dL, VT, &r, work, &lwork, &info);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "init balanced: dgesvd failed (info = %d)", info);
    goto done;
  }
  for (int i = 0; i < r; i++) S[i] = pow(S[i], 1.0 / L); /* S^{1/L} */
  /* W_1 (d1 x d0): rows 0..r-1 = S^{1/L} V^T */
  double *W = theta + m->w_off[0];
  int d1 = m->dims[1];
  for (int j = 0; j < d0; j++)
    for (int i = 0; i < r; i++) W[(size_t)j * d1 + i] = S[i] * VT[(size_t)j * r + i];
  /* hidden W_l (d_l x d_{l-1}), 1 < l < L: S^{1/L} in the top-left r x r */
  for (int l = 2; l < L; l++) {
    W = theta + m->w_off[l - 1];
    for (int i = 0; i < r; i++) W[(size_t)i * m->dims[l] + i] = S[i];
  }
  /* W_L (dL x d_{L-1}): columns 0..r-1 = U S^{1/L} */
  W = theta + m->w_off[L - 1];
  for (int j = 0; j < r; j++)
    for (int i = 0; i < dL; i++) W[(size_t)j * dL + i] = U[(size_t)j * dL + i] * S[j];
done:
  free(A);
  free(U);
  free(VT);
  free(S);
  free(work);
  return rc;
}

/* seed 000 pairing: row 2i of W_1 = -row 2i-1, column 2i of W_2 = -column 2i-1 */
static void symmetrise(const ds_mlp *m, double *theta) {
  int d0 = m->dims[0], h = m->dims[1], d2 = m->dims[2];
  double *W1 = theta + m->w_off[0], *W2 = theta + m->w_off[1];
  for (int i = 0; i + 1 < h; i += 2) { /* 0-based rows i (odd, 1-based) and i+1 */
    for (int j = 0; j < d0; j++) W1[(size_t)j * h + i + 1] = -W1[(size_t)j * h + i];
    for (int k = 0; k < d2; k++) W2[(size_t)(i + 1) * d2 + k] = -W2[(size_t)i * d2 + k];
  }
}

int ds_mlp_init_weights(const ds_mlp *m, const ds_model_spec *spec, ds_rng *rng,
                        double *theta) {
  int L = m->depth;
  double s = spec->init_scale;
  if (!isfinite(s)) return ds_fail(DS_EINPUT, "init: init_scale must be finite (got %g)", s);
  if (!isfinite(spec->init_offset))
    return ds_fail(DS_EINPUT, "init: init_offset must be finite (got %g)", spec->init_offset);
  if (spec->init_std < 0 || !isfinite(spec->init_std))
    return ds_fail(DS_EINPUT, "init: init_std must be finite and >= 0 (got %g)", spec->init_std);
  if (spec->symmetric && (L != 2 || m->dims[1] % 2 != 0))
    return ds_fail(DS_EINPUT,
                   "init: symmetric (seed 000 pairing) needs a depth-2 net with an even "
                   "hidden width (got depth %d, width %d)",
                   L, L >= 2 ? m->dims[1] : 0);
  memset(theta, 0, m->nparams * sizeof *theta);
  int rc = DS_OK;
  switch (spec->init) {
  case DS_INIT_ORTHOGONAL: rc = init_orthogonal(m, s, rng, theta); break;
  case DS_INIT_BALANCED: rc = init_balanced(m, spec, rng, theta); break;
  case DS_INIT_FILE:
    return ds_fail(DS_EINPUT, "init: 'file' initialisation is loaded by the caller, not by "
                              "ds_mlp_init_weights");
  case DS_INIT_GAUSSIAN:
  case DS_INIT_GLOROT_UNIFORM:
  case DS_INIT_HE:
  case DS_INIT_DEF4:
  case DS_INIT_NEAR_IDENTITY:
  case DS_INIT_NTK:
    for (int l = 1; l <= L; l++) {
      int dout = m->dims[l], din = m->dims[l - 1];
      double *W = theta + m->w_off[l - 1];
      size_t count = (size_t)dout * din;
      if (spec->init == DS_INIT_GLOROT_UNIFORM) {
        double a = s * sqrt(6.0 / (din + dout));
        for (size_t q = 0; q < count; q++) W[q] = a * (2.0 * ds_rng_uniform(rng) - 1.0);
        continue;
      }
      double sd;
      switch (spec->init) {
      case DS_INIT_HE: sd = s * sqrt(2.0 / din); break;
      case DS_INIT_NTK: sd = s; break;
      case DS_INIT_DEF4: {
        double var = l == 1 ? 1.0 / m->dims[1]
                     : l == L ? 1.0 / m->dims[L - 1]
                              : 2.0 / (m->dims[l - 1] + m->dims[l]);
        sd = s * sqrt(var);
        break;
      }
      default: /* gaussian, near_identity; s / sqrt(fan_in) = ds_mlp_init_gaussian */
        sd = spec->init_std > 0 ? s * spec->init_std : s / sqrt((double)din);
      }
      for (size_t q = 0; q < count; q++) W[q] = sd * ds_rng_normal(rng);
      if (spec->init == DS_INIT_NEAR_IDENTITY)
        for (int i = 0; i < dout && i < din; i++) W[(size_t)i * dout + i] += 1.0;
    }
    break;
  default: return ds_fail(DS_EINPUT, "init: unknown initialisation kind %d", (int)spec->init);
  }
  if (rc != DS_OK) return rc;
  if (spec->symmetric) symmetrise(m, theta);
  if (spec->init_offset != 0.0) { /* issue 13: the study's "init vs lr" axis */
    double *W1 = theta + m->w_off[0];
    size_t count = (size_t)m->dims[1] * m->dims[0];
    for (size_t q = 0; q < count; q++) W1[q] += spec->init_offset;
  }
  return DS_OK;
}
