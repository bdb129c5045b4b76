/* dtrain.c -- a distributed MLP on a team grid (include/dynsweep/dtrain.h):
 * forward and backward with PBLAS pdgemm (transposes as flags), elementwise
 * work (bias add, ReLU and its mask, the loss) on the local blocks, the bias
 * rows broadcast / reduced along each process row, one reduction (reduce +
 * broadcast, so bitwise the same everywhere) for the loss. Same algebra as src/nn/mlp.c; only the summation order of the
 * products and sums differs (results agree with ds_mlp to rounding). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "dynsweep/dtrain.h"
#include "dynsweep/util.h"
#include "spectra_priv.h"

void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
             const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
             double *c, const int *ic, const int *jc, const int *descc);

static const int ONE = 1, ZERO = 0;

/* A view (or, with storage NULL, a fresh zeroed allocation) of an m x n
 * matrix with square blocks nb on the team grid. Local size mloc*nloc. */
static int dt_desc(const ds_team *t, int m, int n, int nb, double *storage, ds_dmat *D) {
  memset(D, 0, sizeof *D);
  D->m = m;
  D->n = n;
  D->nb = nb;
  D->mloc = numroc_(&m, &nb, &t->myrow, &ZERO, &t->nprow);
  D->nloc = numroc_(&n, &nb, &t->mycol, &ZERO, &t->npcol);
  int lld = D->mloc > 1 ? D->mloc : 1, info = 0;
  descinit_(D->desc, &m, &n, &nb, &nb, &ZERO, &ZERO, &t->ctxt, &lld, &info);
  if (info != 0)
    return ds_fail(DS_EINTERNAL, "dtrain: descinit info %d (%d x %d, nb %d)", info, m, n, nb);
  if (storage) {
    D->a = storage;
    return DS_OK;
  }
  D->a = ds_calloc((size_t)D->mloc * (size_t)D->nloc + 1, sizeof(double));
  return D->a ? DS_OK : ds_context(DS_ENOMEM, "dtrain: %d x %d local part", m, n);
}

static size_t dt_size(const ds_dmat *D) { return (size_t)D->mloc * (size_t)D->nloc; }

/* global index of local index li (block-cyclic, source process 0) */
static int dt_g(int li, int nb, int me, int np) { return ((li / nb) * np + me) * nb + li % nb; }

/* local part of D <- replicated full M (D->m x D->n, leading dimension ld) */
static void dt_fill(const ds_team *t, ds_dmat *D, const double *M, int ld) {
  int lld = D->desc[DS_DESC_LLD];
  for (int j = 0; j < D->nloc; j++) {
    const double *col = M + (size_t)dt_g(j, D->nb, t->mycol, t->npcol) * ld;
    double *out = D->a + (size_t)j * lld;
    for (int i = 0; i < D->mloc; i++) out[i] = col[dt_g(i, D->nb, t->myrow, t->nprow)];
  }
}

int ds_dtrain_init(ds_dtrain *dt, ds_team *t, const ds_dtrain_spec *spec) {
  memset(dt, 0, sizeof *dt);
  dt->row_comm = MPI_COMM_NULL;
  int L = spec->depth;
  if (L < 1) return ds_fail(DS_EINPUT, "dtrain: depth must be >= 1 (got %d)", L);
  for (int l = 0; l <= L; l++)
    if (spec->dims[l] < 1) return ds_fail(DS_EINPUT, "dtrain: dims[%d] = %d", l, spec->dims[l]);
  dt->team = t;
  dt->grid = *t; /* the team's grid (a 2 x 1 grid instead measured the same speed on 2 ranks) */
  ds_team *g = &dt->grid;
  dt->L = L;
  dt->relu = spec->relu ? 1 : 0;
  dt->bias = spec->bias ? 1 : 0;
  dt->train_output = spec->train_output ? 1 : 0;
  dt->nb = spec->nb > 0 ? spec->nb : (t->nb > 0 ? t->nb : 64);
  dt->loss_type = DS_DT_LOSS_MSE;
  dt->loss_p = 2.0;
  dt->loss_c = 1.0;
  dt->dims = ds_calloc((size_t)L + 1, sizeof *dt->dims);
  dt->alpha = ds_calloc((size_t)L, sizeof *dt->alpha);
  dt->w_off = ds_calloc((size_t)L, sizeof *dt->w_off);
  dt->b_off = ds_calloc((size_t)L, sizeof *dt->b_off);
  dt->W = ds_calloc((size_t)L, sizeof *dt->W);
  dt->dW = ds_calloc((size_t)L, sizeof *dt->dW);
  dt->B = ds_calloc((size_t)L, sizeof *dt->B);
  dt->dB = ds_calloc((size_t)L, sizeof *dt->dB);
  dt->bfull = ds_calloc((size_t)L, sizeof *dt->bfull);
  if (!dt->dims || !dt->alpha || !dt->w_off || !dt->b_off || !dt->W || !dt->dW || !dt->B ||
      !dt->dB || !dt->bfull) {
    ds_dtrain_free(dt);
    return DS_ENOMEM;
  }
  memcpy(dt->dims, spec->dims, ((size_t)L + 1) * sizeof *dt->dims);
  /* global layout (as ds_mlp_init) and local sizes */
  size_t off = 0, loc = 0;
  size_t *wl = ds_calloc((size_t)L, sizeof *wl), *bl = ds_calloc((size_t)L, sizeof *bl);
  int rc = wl && bl ? DS_OK : DS_ENOMEM;
  for (int l = 1; l <= L && rc == DS_OK; l++) {
    dt->alpha[l - 1] = spec->ntk ? 1.0 / sqrt((double)dt->dims[l - 1]) : 1.0;
    dt->w_off[l - 1] = off;
    off += (size_t)dt->dims[l] * dt->dims[l - 1];
    dt->b_off[l - 1] = off;
    if (dt->bias) off += (size_t)dt->dims[l];
    ds_dmat D;
    rc = dt_desc(g, dt->dims[l], dt->dims[l - 1], dt->nb, (double *)&dt->nb, &D);
    wl[l - 1] = loc;
    loc += dt_size(&D);
    if (rc == DS_OK && dt->bias) {
      rc = dt_desc(g, dt->dims[l], 1, dt->nb, (double *)&dt->nb, &D);
      bl[l - 1] = loc;
      loc += dt_size(&D);
    }
  }
  dt->nparams = off;
  dt->nloc = loc;
  if (rc == DS_OK) {
    dt->theta = ds_calloc(loc + 1, sizeof(double));
    dt->grad = ds_calloc(loc + 1, sizeof(double));
    if (!dt->theta || !dt->grad) rc = DS_ENOMEM;
  }
  for (int l = 1; l <= L && rc == DS_OK; l++) {
    rc = dt_desc(g, dt->dims[l], dt->dims[l - 1], dt->nb, dt->theta + wl[l - 1], &dt->W[l - 1]);
    if (rc == DS_OK)
      rc = dt_desc(g, dt->dims[l], dt->dims[l - 1], dt->nb, dt->grad + wl[l - 1], &dt->dW[l - 1]);
    if (rc == DS_OK && dt->bias) {
      rc = dt_desc(g, dt->dims[l], 1, dt->nb, dt->theta + bl[l - 1], &dt->B[l - 1]);
      if (rc == DS_OK) rc = dt_desc(g, dt->dims[l], 1, dt->nb, dt->grad + bl[l - 1], &dt->dB[l - 1]);
      if (rc == DS_OK) {
        dt->bfull[l - 1] = ds_calloc((size_t)dt->B[l - 1].mloc + 1, sizeof(double));
        if (!dt->bfull[l - 1]) rc = DS_ENOMEM;
      }
    }
  }
  free(wl);
  free(bl);
  if (rc == DS_OK && MPI_Comm_split(t->comm, g->myrow, g->mycol, &dt->row_comm) != MPI_SUCCESS) {
    dt->row_comm = MPI_COMM_NULL;
    rc = ds_fail(DS_EMPI, "dtrain: MPI_Comm_split of the process rows failed");
  }
  rc = ds_team_agree(t, rc, (int)(off & 0x3fffffff), L);
  if (rc != DS_OK) ds_dtrain_free(dt);
  return rc;
}

void ds_dtrain_free(ds_dtrain *dt) {
  if (dt->bfull)
    for (int l = 0; l < dt->L; l++) free(dt->bfull[l]);
  free(dt->bfull);
  free(dt->dims);
  free(dt->alpha);
  free(dt->w_off);
  free(dt->b_off);
  free(dt->W);
  free(dt->dW);
  free(dt->B);
  free(dt->dB);
  free(dt->theta);
  free(dt->grad);
  if (dt->row_comm != MPI_COMM_NULL) MPI_Comm_free(&dt->row_comm);
  memset(dt, 0, sizeof *dt);
  dt->row_comm = MPI_COMM_NULL;
}

int ds_dtrain_set_loss(ds_dtrain *dt, int type, double p, double c) {
  if (type == DS_DT_LOSS_LP && !(p >= 2.0 && isfinite(p)))
    return ds_fail(DS_EINPUT, "dtrain: lp needs a finite exponent p >= 2 (got %g)", p);
  if (type != DS_DT_LOSS_MSE && type != DS_DT_LOSS_LP)
    return ds_fail(DS_EINPUT, "dtrain: loss kind %d is not supported on a team (mse and lp "
                              "only; cross-entropy needs whole columns)", type);
  dt->loss_type = type == DS_DT_LOSS_LP && p == 2.0 ? DS_DT_LOSS_MSE : type;
  dt->loss_p = type == DS_DT_LOSS_MSE ? 2.0 : p;
  dt->loss_c = c;
  return DS_OK;
}

/* ---- workspace ------------------------------------------------------------ */

int ds_dtrain_work_init(const ds_dtrain *dt, int n, int grad, ds_dtrain_work *w) {
  memset(w, 0, sizeof *w);
  if (n < 1) return ds_fail(DS_EINPUT, "dtrain: workspace needs n >= 1 samples (got %d)", n);
  const ds_team *g = &dt->grid;
  int L = dt->L, nb = dt->nb;
  w->n = n;
  w->Z = ds_calloc((size_t)L + 1, sizeof *w->Z);
  w->A = ds_calloc((size_t)L + 1, sizeof *w->A);
  w->D = ds_calloc((size_t)L + 1, sizeof *w->D);
  int rc = w->Z && w->A && w->D ? DS_OK : DS_ENOMEM;
  if (rc == DS_OK) rc = dt_desc(g, dt->dims[0], n, nb, NULL, &w->A0);
  if (rc == DS_OK) rc = dt_desc(g, dt->dims[L], n, nb, NULL, &w->Y);
  int maxloc = 1;
  for (int l = 1; l <= L && rc == DS_OK; l++) {
    rc = dt_desc(g, dt->dims[l], n, nb, NULL, &w->Z[l]);
    if (rc == DS_OK) {
      if (dt->relu && l < L) rc = dt_desc(g, dt->dims[l], n, nb, NULL, &w->A[l]);
      else w->A[l] = w->Z[l]; /* same storage */
    }
    if (rc == DS_OK && grad) rc = dt_desc(g, dt->dims[l], n, nb, NULL, &w->D[l]);
    if (rc == DS_OK && w->Z[l].mloc > maxloc) maxloc = w->Z[l].mloc;
  }
  if (rc == DS_OK) {
    w->rowsum = ds_calloc((size_t)maxloc, sizeof(double));
    if (!w->rowsum) rc = DS_ENOMEM;
  }
  rc = ds_team_agree(dt->team, rc, n, L);
  if (rc != DS_OK) ds_dtrain_work_free(dt, w);
  return rc;
}

void ds_dtrain_work_free(const ds_dtrain *dt, ds_dtrain_work *w) {
  if (w->Z)
    for (int l = 1; l <= dt->L; l++) {
      if (w->A && w->A[l].a != w->Z[l].a) free(w->A[l].a);
      free(w->Z[l].a);
      if (w->D) free(w->D[l].a);
    }
  free(w->A0.a);
  free(w->Y.a);
  free(w->Z);
  free(w->A);
  free(w->D);
  free(w->rowsum);
  memset(w, 0, sizeof *w);
}

/* ---- root <-> distributed vectors ----------------------------------------- */

/* descriptor of a root-held m x n array (lda) on the team's 1x1 root grid;
 * context -1 elsewhere (as dist.c) */
static void dt_root_desc(ds_team *t, int m, int n, int nb, int lda, int desc[9]) {
  if (t->root_ctxt < 0) {
    int off[9] = {1, -1, m, n, nb, nb, 0, 0, 1};
    memcpy(desc, off, sizeof off);
    return;
  }
  int info = 0;
  descinit_(desc, &m, &n, &nb, &nb, &ZERO, &ZERO, &t->root_ctxt, &lda, &info);
}

/* dir 0: full v (root) -> local loc; dir 1: local loc -> full v (root) */
static int dt_move(ds_dtrain *dt, double *v, double *loc, int dir) {
  ds_team *t = dt->team;
  int rc = t->rank == 0 && !v ? ds_fail(DS_EINTERNAL, "dtrain: NULL full vector on the root")
                              : DS_OK;
  DS_TRY(ds_team_agree(t, rc, dt->L, 0));
  double dummy = 0;
  for (int l = 1; l <= dt->L; l++) {
    int m = dt->dims[l], k = dt->dims[l - 1], rd[9];
    ds_dmat D = dt->W[l - 1];
    D.a = loc + (dt->W[l - 1].a - dt->theta);
    double *full = t->root_ctxt >= 0 ? v + dt->w_off[l - 1] : &dummy;
    dt_root_desc(t, m, k, dt->nb, m, rd);
    if (dir == 0) pdgemr2d_(&m, &k, full, &ONE, &ONE, rd, D.a, &ONE, &ONE, D.desc, &t->ctxt);
    else pdgemr2d_(&m, &k, D.a, &ONE, &ONE, D.desc, full, &ONE, &ONE, rd, &t->ctxt);
    if (!dt->bias) continue;
    D = dt->B[l - 1];
    D.a = loc + (dt->B[l - 1].a - dt->theta);
    full = t->root_ctxt >= 0 ? v + dt->b_off[l - 1] : &dummy;
    dt_root_desc(t, m, 1, dt->nb, m, rd);
    if (dir == 0) pdgemr2d_(&m, &ONE, full, &ONE, &ONE, rd, D.a, &ONE, &ONE, D.desc, &t->ctxt);
    else pdgemr2d_(&m, &ONE, D.a, &ONE, &ONE, D.desc, full, &ONE, &ONE, rd, &t->ctxt);
  }
  return DS_OK;
}

int ds_dtrain_scatter(ds_dtrain *dt, const double *v, double *loc) {
  return dt_move(dt, (double *)v, loc, 0);
}
int ds_dtrain_gather(ds_dtrain *dt, const double *loc, double *v) {
  return dt_move(dt, v, (double *)loc, 1);
}

/* ---- passes --------------------------------------------------------------- */

/* out = sum over the team of in (k values), bitwise the same on every member
 * (reduce to the root, then broadcast: the loop decisions taken from these
 * numbers -- divergence, tolerance, the lr schedule -- must agree). */
static void dt_sum(ds_dtrain *dt, const double *in, double *out, int k) {
  MPI_Reduce(in, out, k, MPI_DOUBLE, MPI_SUM, 0, dt->team->comm);
  MPI_Bcast(out, k, MPI_DOUBLE, 0, dt->team->comm);
}

/* C = alpha op(A) op(B) + beta C. A 1x1 grid holds whole matrices (lld =
 * rows): plain dgemm there, which PBLAS's panel-by-panel pdgemm is ~1.5x
 * slower than at these sizes. */
static void dt_gemm(const char *ta, const char *tb, int m, int n, int k, double alpha,
                    const ds_dmat *A, const ds_dmat *B, double beta, ds_dmat *C, int one_rank) {
  if (one_rank) {
    cblas_dgemm(CblasColMajor, *ta == 'T' ? CblasTrans : CblasNoTrans,
                *tb == 'T' ? CblasTrans : CblasNoTrans, m, n, k, alpha, A->a,
                A->desc[DS_DESC_LLD], B->a, B->desc[DS_DESC_LLD], beta, C->a,
                C->desc[DS_DESC_LLD]);
    return;
  }
  pdgemm_(ta, tb, &m, &n, &k, &alpha, A->a, &ONE, &ONE, A->desc, B->a, &ONE, &ONE, B->desc,
          &beta, C->a, &ONE, &ONE, C->desc);
}

/* this process row's bias rows of layer l (1-based) into bfull[l-1] */
static void dt_bias_bcast(ds_dtrain *dt, int l) {
  const ds_dmat *B = &dt->B[l - 1];
  double *bf = dt->bfull[l - 1];
  if (B->mloc == 0) return;
  if (dt->grid.mycol == 0) memcpy(bf, B->a, (size_t)B->mloc * sizeof *bf);
  MPI_Bcast(bf, B->mloc, MPI_DOUBLE, 0, dt->row_comm);
}

/* db (column 0 only) = row sums of dZ (d_l x n), or 0 when zero_it */
static void dt_bias_grad(ds_dtrain *dt, int l, const ds_dmat *dZ, double *rowsum, int zero_it) {
  ds_dmat *dB = &dt->dB[l - 1];
  int mloc = dZ->mloc, lld = dZ->desc[DS_DESC_LLD];
  if (mloc == 0) return;
  for (int i = 0; i < mloc; i++) rowsum[i] = 0.0;
  if (!zero_it)
    for (int j = 0; j < dZ->nloc; j++) {
      const double *c = dZ->a + (size_t)j * lld;
      for (int i = 0; i < mloc; i++) rowsum[i] += c[i];
    }
  MPI_Reduce(rowsum, dt->grid.mycol == 0 ? dB->a : NULL, mloc, MPI_DOUBLE, MPI_SUM, 0,
             dt->row_comm);
}

double ds_dtrain_loss_grad(ds_dtrain *dt, const double *X, const double *Y, ds_dtrain_work *w,
                           int grad) {
  ds_team *t = dt->team;
  int L = dt->L, n = w->n, one = t->size == 1;
  dt_fill(&dt->grid, &w->A0, X, dt->dims[0]);
  dt_fill(&dt->grid, &w->Y, Y, dt->dims[L]);
  /* forward */
  for (int l = 1; l <= L; l++) {
    ds_dmat *Z = &w->Z[l];
    const ds_dmat *Ain = l == 1 ? &w->A0 : &w->A[l - 1];
    int lld = Z->desc[DS_DESC_LLD];
    double beta = 0.0;
    if (dt->bias) {
      dt_bias_bcast(dt, l);
      const double *bf = dt->bfull[l - 1];
      for (int j = 0; j < Z->nloc; j++)
        for (int i = 0; i < Z->mloc; i++) Z->a[(size_t)j * lld + i] = bf[i];
      beta = 1.0;
    }
    dt_gemm("N", "N", dt->dims[l], n, dt->dims[l - 1], dt->alpha[l - 1], &dt->W[l - 1], Ain, beta,
            Z, one);
    if (dt->relu && l < L) {
      size_t cnt = (size_t)lld * Z->nloc;
      if (Z->mloc == 0) cnt = 0;
      for (size_t k = 0; k < cnt; k++) w->A[l].a[k] = Z->a[k] > 0.0 ? Z->a[k] : 0.0;
    }
  }
  /* loss (local sum, then one allreduce) and dL/dF */
  const ds_dmat *F = &w->Z[L];
  double *dF = grad ? w->D[L].a : NULL;
  double c = dt->loss_c, p = dt->loss_p, part = 0.0;
  int lld = F->desc[DS_DESC_LLD];
  for (int j = 0; j < F->nloc; j++)
    for (int i = 0; i < F->mloc; i++) {
      size_t k = (size_t)j * lld + i;
      double r = F->a[k] - w->Y.a[k];
      if (dt->loss_type == DS_DT_LOSS_MSE) {
        part += r * r;
        if (dF) dF[k] = 2.0 * c * r;
      } else {
        double a = fabs(r), a2 = p == 4.0 ? a * a : pow(a, p - 2.0);
        part += a2 * a * a;
        if (dF) dF[k] = c * p * a2 * r;
      }
    }
  double sum = 0.0;
  dt_sum(dt, &part, &sum, 1);
  double loss = c * sum;
  if (!grad) return loss;
  /* backward */
  if (dt->bias) dt_bias_grad(dt, L, &w->D[L], w->rowsum, !dt->train_output);
  for (int l = L; l >= 1; l--) {
    const ds_dmat *Ain = l == 1 ? &w->A0 : &w->A[l - 1];
    ds_dmat *dW = &dt->dW[l - 1];
    if (l == L && !dt->train_output) {
      memset(dW->a, 0, dt_size(dW) * sizeof(double));
    } else {
      dt_gemm("N", "T", dt->dims[l], dt->dims[l - 1], n, dt->alpha[l - 1], &w->D[l], Ain, 0.0,
              dW, one);
    }
    if (l == 1) break;
    ds_dmat *dA = &w->D[l - 1];
    dt_gemm("T", "N", dt->dims[l - 1], n, dt->dims[l], dt->alpha[l - 1], &dt->W[l - 1], &w->D[l],
            0.0, dA, one);
    if (dt->relu) {
      const ds_dmat *Z = &w->Z[l - 1];
      size_t cnt = Z->mloc ? (size_t)Z->desc[DS_DESC_LLD] * Z->nloc : 0;
      for (size_t k = 0; k < cnt; k++) dA->a[k] = Z->a[k] > 0.0 ? dA->a[k] : 0.0;
    }
    if (dt->bias) dt_bias_grad(dt, l - 1, dA, w->rowsum, 0);
  }
  return loss;
}

double ds_dtrain_sumsq(ds_dtrain *dt, const double *loc) {
  double s = 0.0, all = 0.0;
  for (size_t k = 0; k < dt->nloc; k++) s += loc[k] * loc[k];
  dt_sum(dt, &s, &all, 1);
  return all;
}

void ds_dtrain_layer_fro(ds_dtrain *dt, double *fro) {
  double *s = ds_calloc((size_t)dt->L, sizeof *s);
  if (!s) {
    for (int l = 0; l < dt->L; l++) fro[l] = NAN;
    return;
  }
  for (int l = 0; l < dt->L; l++) {
    size_t cnt = dt_size(&dt->W[l]);
    for (size_t k = 0; k < cnt; k++) s[l] += dt->W[l].a[k] * dt->W[l].a[k];
  }
  dt_sum(dt, s, fro, dt->L);
  for (int l = 0; l < dt->L; l++) fro[l] = sqrt(fro[l]);
  free(s);
}
