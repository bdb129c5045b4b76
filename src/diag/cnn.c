/* cnn.c -- the NTK of a convolutional net (issue 26) through the public CNN
 * API only (include/dynsweep/cnn.h: forward, backward, nparams), so it does
 * not depend on how the conv layers are computed.
 *
 * Weight sharing makes the MLP's layer-wise trick K_l = (D^T D) o (A^T A)
 * (ntk.c) a sum over spatial positions that needs the layers' internal
 * cotangents; cnn.h does not expose them. So the Jacobian J (kn x P, row
 * o + k i = grad_theta f_o(x_i)) is formed explicitly from per-sample
 * gradients: one forward pass of sample i alone, then k backward passes with
 * the unit cotangents e_o (ds_cnn_backward of a 1-sample forward is exactly
 * that sample's gradient; an n-sample backward would sum over samples). Then
 * K = J J^T by one DSYRK (kn^2 P flops) and the eigenpairs as for the MLPs
 * (ds_diag_ntk_eig).
 *
 * Memory: J holds kn P doubles. When that exceeds the budget jbytes (R rows
 * of J), the rows go in blocks a of Ba = R - Bb rows, Bb = R/8 (at least one
 * row each): J_a is formed once, K_aa = J_a J_a^T (DSYRK), and every later
 * row is recomputed Bb rows at a time to give K_ba = J_b J_a^T (DGEMM):
 * about nb/2 extra sweeps of per-sample gradients for nb = kn/Ba blocks, and
 * K is exact.
 * Why not a matrix-free Lanczos on K v = J (J^T v)? J^T v is one n-sample
 * backward with cotangent v, and J u is now one ds_cnn_jvp (cnnrop.c; it was
 * missing when this was written, when each product cost a full sweep of
 * per-sample gradients) -- but K itself (kn^2, bounded by
 * record.spectra.ntk_max) is needed anyway for the kernel change ||K_t -
 * K_0|| and the eigenvectors of the loss split, so the blocked exact K stays
 * (a JVP-based Lanczos for the top eigenvalues alone is not built).
 *
 * Teams (issue 26, "Big CNNs run on teams"): member r of s forms the rows of
 * J of its samples only, [floor(n r / s), floor(n (r+1) / s)) (k rows each),
 * then one MPI_Alltoallv transposes the rows into parameter-column slices:
 * member q gets J[:, P_q] (all kn rows, its P/s columns), and K = sum_q
 * J[:, P_q] J[:, P_q]^T -- a local DSYRK of kn^2 P/s flops each, summed by a
 * reduce to the team root and a broadcast (every member holds bitwise the
 * same K; the order of the sum depends on the team size only). Per member:
 * its rows packed for the send (kn P / s doubles; formed a sample at a time
 * in k P of scratch) and its column slice (kn P / s): 2 kn P / s doubles,
 * as much as one rank's whole J on a team of 2. When that exceeds jbytes the
 * members fall back to the blocked row path above, each forming all of K
 * (ds_diag_cnn_ntk_split_fits; every member must be given the same jbytes:
 * the worker's is ds_point_cnn_jbytes of what every rank has, src/config/
 * cost.c, which follows the rank's memory rather than a fixed 1 GiB).
 * The AGOP (agop.c's ds_diag_cnn_agop) is split by samples the same way
 * (ds_diag_cnn_agop_team, below). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

int ds_diag_cnn_jacobian(ds_cnn *net, const double *theta, const double *X, int n, int k, int r0,
                         int nr, double *J) {
  size_t P = ds_cnn_nparams(net);
  int d = ds_cnn_din(net);
  if (k < 1 || r0 < 0 || nr < 0 || r0 + nr > k * n)
    return ds_fail(DS_EINPUT, "diag cnn jacobian: rows [%d, %d) of k n = %d x %d", r0, r0 + nr, k, n);
  double *e = ds_calloc((size_t)k, sizeof *e);
  if (!e) return DS_ENOMEM;
  int cur = -1; /* the sample whose forward pass the net holds */
  for (int r = r0; r < r0 + nr; r++) {
    int i = r / k, o = r % k;
    const double *x = X + (size_t)i * d;
    if (i != cur) {
      ds_cnn_forward(net, theta, x, 1);
      cur = i;
    }
    e[o] = 1.0;
    ds_cnn_backward(net, theta, x, 1, e, J + (size_t)(r - r0) * P);
    e[o] = 0.0;
  }
  free(e);
  return DS_OK;
}

int ds_diag_cnn_ntk_matrix(ds_cnn *net, const double *theta, const double *X, int n, int k,
                           size_t jbytes, double *K) {
  size_t P = ds_cnn_nparams(net), kn = (size_t)k * n;
  if (kn * kn > (size_t)INT_MAX)
    return ds_fail(DS_EINPUT, "diag cnn ntk: k*n = %zu is too large for the NTK matrix", kn);
  size_t rows = jbytes / (sizeof(double) * P); /* rows of J the budget holds */
  int one = rows >= kn;
  /* blocks: Ba rows held (the more, the fewer recomputations), Bb recomputed at a time */
  size_t Bb = one ? 0 : rows / 8 > 0 ? rows / 8 : 1;
  size_t Ba = one ? kn : rows > Bb ? rows - Bb : 1;
  double *Ja = ds_calloc(P * Ba, sizeof *Ja), *Jb = one ? NULL : ds_calloc(P * Bb, sizeof *Jb);
  if (!Ja || (!one && !Jb)) {
    free(Ja);
    free(Jb);
    return ds_fail(DS_ENOMEM, "diag cnn ntk: out of memory for %zu rows of the Jacobian (%zu "
                   "parameters)", Ba + Bb, P);
  }
  int rc = DS_OK;
  for (size_t a0 = 0; a0 < kn && rc == DS_OK; a0 += Ba) {
    int na = (int)(kn - a0 < Ba ? kn - a0 : Ba);
    rc = ds_diag_cnn_jacobian(net, theta, X, n, k, (int)a0, na, Ja);
    if (rc != DS_OK) break;
    /* K_aa (lower) = J_a J_a^T; J_a is P x na column-major (a column per row of J) */
    cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, na, (int)P, 1.0, Ja, (int)P, 0.0,
                K + a0 * kn + a0, (int)kn);
    for (size_t b0 = a0 + Ba; b0 < kn && rc == DS_OK; b0 += Bb) {
      int nb = (int)(kn - b0 < Bb ? kn - b0 : Bb);
      rc = ds_diag_cnn_jacobian(net, theta, X, n, k, (int)b0, nb, Jb);
      if (rc == DS_OK) /* K_ba = J_b J_a^T (rows b0.., columns a0..: below the diagonal) */
        cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, nb, na, (int)P, 1.0, Jb, (int)P, Ja,
                    (int)P, 0.0, K + a0 * kn + b0, (int)kn);
    }
  }
  free(Ja);
  free(Jb);
  if (rc != DS_OK) return rc;
  for (size_t c = 0; c < kn; c++) /* mirror to full */
    for (size_t r = c + 1; r < kn; r++) K[r * kn + c] = K[c * kn + r];
  return DS_OK;
}

double ds_diag_cnn_ntk_split_bytes(int s, size_t P, int n, int k) {
  if (s < 2) return 0;
  size_t kn = (size_t)k * n, rmax = kn / s + (size_t)k, cmax = P / s + 1; /* the most rows,
                                                                            columns a member has */
  if (rmax * P > INT_MAX || kn * cmax > INT_MAX) return 0;
  return (double)(rmax * P + kn * cmax + (size_t)k * P) * sizeof(double);
}

int ds_diag_cnn_ntk_split_fits(int s, size_t P, int n, int k, size_t jbytes) {
  double b = ds_diag_cnn_ntk_split_bytes(s, P, n, k);
  return b > 0 && b <= (double)jbytes;
}

/* The team's K (above): 1 and K (kn x kn, full) on every member when the
 * split fits jbytes; 0 (nothing done, nothing communicated) when it does not
 * -- every member decides alike (same sizes). Collective. */
static int ntk_split(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n, int k,
                     size_t jbytes, double *K, int *done) {
  int s = t->size, me = t->rank;
  size_t P = ds_cnn_nparams(net), kn = (size_t)k * n;
  *done = 0;
  if (!ds_diag_cnn_ntk_split_fits(s, P, n, k, jbytes)) return DS_OK;
  int *cnt = ds_calloc(4 * (size_t)s, sizeof *cnt), *sdsp = cnt + s, *rcnt = cnt + 2 * s,
      *rdsp = cnt + 3 * s;
  int lo = (int)((int64_t)n * me / s), hi = (int)((int64_t)n * (me + 1) / s), nr = k * (hi - lo);
  size_t c0 = P * me / s, nc = P * (me + 1) / s - c0;
  double *Jr = ds_calloc(P * (size_t)k, sizeof *Jr); /* one sample's k rows */
  double *pk = ds_calloc(P * (nr > 0 ? nr : 1), sizeof *pk);
  double *Jc = ds_calloc(kn * (nc > 0 ? nc : 1), sizeof *Jc);
  double *Kp = ds_calloc(kn * kn, sizeof *Kp);
  int rc = cnt && Jr && pk && Jc && Kp ? DS_OK
           : ds_fail(DS_ENOMEM, "diag cnn ntk: out of memory for the team's Jacobian (%d of %zu "
                     "rows, %zu of %zu columns)", nr, kn, nc, P);
  if (rc == DS_OK) {
    /* to member q: each of my rows' columns [P q / s, P (q+1) / s), row after
     * row (pk); from member q: its k (qhi - qlo) rows of my nc columns -- in
     * q's order they are rows k qlo .. of J, so Jc is nc x kn column-major */
    size_t off = 0;
    for (int q = 0; q < s; q++) {
      size_t ql = P * (q + 1) / s - P * q / s;
      int qlo = (int)((int64_t)n * q / s), qhi = (int)((int64_t)n * (q + 1) / s);
      cnt[q] = (int)(ql * nr), sdsp[q] = (int)off, off += ql * nr;
      rcnt[q] = (int)(nc * k * (qhi - qlo)), rdsp[q] = (int)(nc * k * qlo);
    }
    /* my rows, a sample (k rows) at a time, scattered straight into pk */
    for (int i = lo; i < hi && rc == DS_OK; i++) {
      rc = ds_diag_cnn_jacobian(net, theta, X, n, k, k * i, k, Jr);
      for (int o = 0; o < k && rc == DS_OK; o++) {
        size_t j = (size_t)k * (i - lo) + o;
        for (int q = 0; q < s; q++) {
          size_t q0 = P * q / s, ql = P * (q + 1) / s - q0;
          memcpy(pk + sdsp[q] + j * ql, Jr + (size_t)o * P + q0, ql * sizeof *pk);
        }
      }
    }
  }
  rc = ds_diag_agree(t, rc);
  if (rc == DS_OK) {
    if (MPI_Alltoallv(pk, cnt, sdsp, MPI_DOUBLE, Jc, rcnt, rdsp, MPI_DOUBLE, t->comm) != MPI_SUCCESS)
      rc = ds_fail(DS_EMPI, "diag cnn ntk: MPI_Alltoallv of the Jacobian failed");
  }
  if (rc == DS_OK) {
    if (nc > 0) /* my part of K (lower) = J[:, mine] J[:, mine]^T */
      cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, (int)kn, (int)nc, 1.0, Jc, (int)nc, 0.0,
                  Kp, (int)kn);
    if (MPI_Reduce(Kp, K, (int)(kn * kn), MPI_DOUBLE, MPI_SUM, 0, t->comm) != MPI_SUCCESS ||
        MPI_Bcast(K, (int)(kn * kn), MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
      rc = ds_fail(DS_EMPI, "diag cnn ntk: MPI_Reduce/MPI_Bcast of K failed");
  }
  free(cnt);
  free(Jr);
  free(pk);
  free(Jc);
  free(Kp);
  if (rc != DS_OK) return rc;
  for (size_t c = 0; c < kn; c++) /* mirror to full */
    for (size_t r = c + 1; r < kn; r++) K[r * kn + c] = K[c * kn + r];
  *done = 1;
  return DS_OK;
}

int ds_diag_cnn_ntk_team(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                         int k, size_t jbytes, double *K) {
  size_t kn = (size_t)k * n;
  if (kn * kn > (size_t)INT_MAX)
    return ds_diag_agree(t, ds_fail(DS_EINPUT, "diag cnn ntk: k*n = %zu is too large for the NTK "
                                    "matrix", kn));
  int done = 0;
  DS_TRY(ntk_split(t, net, theta, X, n, k, jbytes, K, &done));
  if (done) return DS_OK;
  /* one rank, or the split does not fit: every member forms the same K (same
   * theta, X; deterministic BLAS on one thread) by the blocked row path */
  return ds_diag_agree(t, ds_diag_cnn_ntk_matrix(net, theta, X, n, k, jbytes, K));
}

/* The AGOP on a team: G = (1/n) sum_i sum_o g_oi g_oi^T is a sum over
 * samples, so member r takes its block of nb samples (ds_diag_cnn_agop
 * normalises by 1/nb: rescaled by nb/n) and the d x d shares are summed by a
 * reduce to the root and a broadcast. */
int ds_diag_cnn_agop_team(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                          int k, const double *Gref, double *G, double *align) {
  if (t->size < 2) return ds_diag_cnn_agop(net, theta, X, n, k, Gref, G, align);
  int d = ds_cnn_din(net), s = t->size, me = t->rank;
  int lo = (int)((int64_t)n * me / s), hi = (int)((int64_t)n * (me + 1) / s);
  size_t dd = (size_t)d * d;
  int rc = DS_OK;
  if (dd > INT_MAX) rc = ds_fail(DS_EINPUT, "diag cnn agop: d = %d is too large to sum over a team", d);
  else if (hi > lo) rc = ds_diag_cnn_agop(net, theta, X + (size_t)lo * d, hi - lo, k, NULL, G, NULL);
  else memset(G, 0, dd * sizeof *G);
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) return rc;
  cblas_dscal((int)dd, (double)(hi - lo) / n, G, 1);
  if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : G, me == 0 ? G : NULL, (int)dd, MPI_DOUBLE, MPI_SUM, 0,
                 t->comm) != MPI_SUCCESS ||
      MPI_Bcast(G, (int)dd, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "diag cnn agop: MPI_Reduce/MPI_Bcast of G failed");
  if (align) *align = ds_diag_agop_align(G, Gref, d);
  return DS_OK;
}

int ds_diag_cnn_ntk(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n, int k,
                    size_t jbytes, int topk, double *evals, double *evecs, double *K) {
  size_t kn = (size_t)k * n;
  int rc = DS_OK;
  if (topk < 0) rc = ds_fail(DS_EINPUT, "diag cnn ntk: topk = %d must be >= 0", topk);
  if (kn * kn > (size_t)INT_MAX)
    rc = ds_fail(DS_EINPUT, "diag cnn ntk: k*n = %zu is too large for the NTK matrix", kn);
  double *Kb = NULL;
  if (rc == DS_OK) {
    Kb = K ? K : ds_calloc(kn * kn, sizeof *Kb);
    if (!Kb) rc = DS_ENOMEM;
  }
  /* K on every member (split over the team when it fits: ds_diag_cnn_ntk_team),
   * then the eigenproblem is the team's */
  rc = ds_diag_agree(t, rc);
  if (rc == DS_OK) rc = ds_diag_cnn_ntk_team(t, net, theta, X, n, k, jbytes, Kb);
  if (rc == DS_OK) rc = ds_diag_ntk_eig(t, (int)kn, Kb, topk, evals, evecs);
  if (Kb != K) free(Kb);
  return rc;
}

/* Seed 004's escape-speed proxy for a CNN, as ds_diag_escape:
 *   -Tr[G^T f_theta~(X)] = -sum_i G_i . f_theta~(x_i),
 * G = dL/dF at F = 0 (per sample: l keeps the whole set's coefficient, so a
 * sample's column does not depend on the others), theta~ = sqrt(L) theta /
 * ||theta|| over every parameter (biases included, as an MLP's theta), with
 * L = ds_cnn_nweights (the weight matrices layers/sv reports: conv kernels,
 * hidden dense layers and DAG depths, the readout), an MLP's depth for a
 * stack of dense layers. One forward per sample (no assumption on the net's
 * nmax); on a team each member takes its sample share, the shares summed on
 * the root in rank order and broadcast (the same value on every member). */
int ds_diag_cnn_escape(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                       const double *Y, int n, int k, const ds_loss *l, double *out) {
  size_t P = ds_cnn_nparams(net);
  int d = ds_cnn_din(net), s = t ? t->size : 1, me = t ? t->rank : 0;
  int lo = (int)((int64_t)n * me / s), hi = (int)((int64_t)n * (me + 1) / s);
  double *tt = ds_calloc(P, sizeof *tt), *G = ds_calloc((size_t)k * 2, sizeof *G);
  int rc = tt && G ? DS_OK : DS_ENOMEM;
  double nrm = cblas_dnrm2((int)P, theta, 1), part = 0.0;
  if (rc == DS_OK && !(nrm > 0.0)) part = NAN;
  if (rc == DS_OK && nrm > 0.0) {
    double sc = sqrt((double)ds_cnn_nweights(net)) / nrm;
    for (size_t p = 0; p < P; p++) tt[p] = sc * theta[p];
    for (int i = lo; i < hi; i++) {
      memset(G + k, 0, (size_t)k * sizeof *G); /* F = 0 */
      ds_loss_eval(l, G + k, Y + (size_t)i * k, k, 1, G);
      const double *F = ds_cnn_forward(net, tt, X + (size_t)i * d, 1);
      for (int o = 0; o < k; o++) part -= G[o] * F[o];
    }
  }
  free(tt), free(G);
  if (t && t->size > 1) {
    rc = ds_diag_agree(t, rc);
    if (rc != DS_OK) return rc;
    if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : &part, me == 0 ? &part : NULL, 1, MPI_DOUBLE,
                   MPI_SUM, 0, t->comm) != MPI_SUCCESS ||
        MPI_Bcast(&part, 1, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS)
      return ds_fail(DS_EMPI, "diag cnn escape: MPI_Reduce/MPI_Bcast failed");
  }
  *out = part;
  return rc;
}
