/* hessian.c -- the loss Hessian: top-k eigenvalues by Lanczos with full
 * reorthogonalisation on exact HVPs (ds_mlp_loss_hvp, and ds_cnn_hvp for
 * CNNs: Pearlmutter's R-operator), and the whole spectrum from the P x P matrix of HVP columns
 * (computed by the team members in column blocks) with ScaLAPACK pdsyevd.
 * A CNN's P x P matrix is P HVPs with unit vectors e_p (column p = H e_p),
 * the team's members summing sample shares of each column as for Lanczos;
 * it is symmetrised ((H + H^T)/2, exact arithmetic gives H = H^T) and goes
 * to the same eigensolver. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

/* v -= Q c with c = Q^T v (classical Gram-Schmidt), repeated while the pass
 * removed much of v (the DGKS criterion: again if ||v_after|| < 0.7
 * ||v_before||, at most 3 passes), so v ends orthogonal to Q to rounding;
 * Q is P x j, c scratch (j). Returns ||v||. */
static double orthogonalise(const double *Q, int P, int j, double *v, double *c) {
  double before = cblas_dnrm2(P, v, 1), after = before;
  for (int pass = 0; pass < 3 && j > 0; pass++) {
    cblas_dgemv(CblasColMajor, CblasTrans, P, j, 1.0, Q, P, v, 1, 0.0, c, 1);
    cblas_dgemv(CblasColMajor, CblasNoTrans, P, j, -1.0, Q, P, c, 1, 1.0, v, 1);
    after = cblas_dnrm2(P, v, 1);
    if (after >= 0.7 * before) break;
    before = after;
  }
  return after;
}

/* A unit vector of N(0,1) draws orthogonalised against Q (P x j); returns its
 * norm before normalisation relative to the draw (0 when Q spans it). */
static double random_start(ds_rng *rng, const double *Q, int P, int j, double *v, double *c) {
  for (int p = 0; p < P; p++) v[p] = ds_rng_normal(rng);
  double n0 = cblas_dnrm2(P, v, 1);
  if (!(n0 > 0.0)) return 0.0;
  cblas_dscal(P, 1.0 / n0, v, 1);
  double n1 = orthogonalise(Q, P, j, v, c);
  if (n1 > 1e-8) cblas_dscal(P, 1.0 / n1, v, 1);
  return n1;
}

/* The team's HVP: the members' sample shares (hv->wl over columns lo..hi),
 * summed on the root and broadcast (not MPI_Allreduce: every member must get
 * bitwise the same vector). */
typedef struct {
  ds_team *t;
  int lo, hi;      /* this member's samples */
  ds_mlp_work wl;  /* workspace for hi - lo samples */
  double *part;    /* P */
} team_hvp;

static int hvp(team_hvp *hv, const ds_mlp *m, const double *theta, const double *X,
               const double *Y, const ds_loss *l, const double *v, ds_mlp_work *w, double *z) {
  if (!hv->t) {
    ds_mlp_loss_hvp(m, theta, X, Y, l, v, w, z);
    return DS_OK;
  }
  int P = (int)m->nparams, d0 = m->dims[0], dL = m->dims[m->depth];
  if (hv->hi > hv->lo)
    ds_mlp_loss_hvp(m, theta, X + (size_t)hv->lo * d0, Y + (size_t)hv->lo * dL, l, v, &hv->wl,
                    hv->part);
  else memset(hv->part, 0, (size_t)P * sizeof *hv->part);
  int me = hv->t->rank;
  if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : hv->part, me == 0 ? hv->part : NULL, P, MPI_DOUBLE,
                 MPI_SUM, 0, hv->t->comm) != MPI_SUCCESS ||
      MPI_Bcast(hv->part, P, MPI_DOUBLE, 0, hv->t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "diag hessian: MPI_Reduce/MPI_Bcast of the HVP failed");
  memcpy(z, hv->part, (size_t)P * sizeof *z);
  return DS_OK;
}

static int team_hvp_init(team_hvp *hv, ds_team *t, const ds_mlp *m, int n) {
  memset(hv, 0, sizeof *hv);
  if (!t || t->size < 2) return DS_OK;
  hv->t = t;
  hv->lo = (int)((int64_t)n * t->rank / t->size);
  hv->hi = (int)((int64_t)n * (t->rank + 1) / t->size);
  int rc = DS_OK;
  hv->part = ds_calloc(m->nparams, sizeof *hv->part);
  if (!hv->part) rc = DS_ENOMEM;
  if (rc == DS_OK && hv->hi > hv->lo) rc = ds_mlp_work_init(m, hv->hi - hv->lo, &hv->wl);
  if (rc == DS_OK && hv->hi > hv->lo) rc = ds_mlp_work_products(m, &hv->wl);
  return ds_diag_agree(t, rc);
}

static void team_hvp_free(team_hvp *hv) {
  if (hv->t && hv->hi > hv->lo) ds_mlp_work_free(&hv->wl);
  free(hv->part);
}

/* The team's HVP behind a callback: op(ctx, v, z) sets z = H v (the same on
 * every member), returns DS_OK or an error. */
typedef int (*hvp_fn)(void *ctx, const double *v, double *z);

/* Lanczos with full reorthogonalisation on op: the top k Ritz values after
 * iters iterations (P parameters), start vector from rng. */
static int lanczos_top(ds_team *t, int P, hvp_fn op, void *ctx, int k, int iters, ds_rng *rng,
                       double *evals) {
  if (iters < k) iters = k;
  if (iters > P) iters = P;
  double *Q = ds_calloc((size_t)P * iters, sizeof *Q), *z = ds_calloc((size_t)P, sizeof *z);
  double *a = ds_calloc((size_t)iters, sizeof *a), *b = ds_calloc((size_t)iters, sizeof *b);
  double *c = ds_calloc((size_t)iters, sizeof *c);
  int rc = DS_OK, nt = 0;
  if (!Q || !z || !a || !b || !c) rc = DS_ENOMEM;
  if (t && t->size > 1) rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  if (!(random_start(rng, Q, P, 0, Q, c) > 0.0)) {
    rc = ds_fail(DS_ENUM, "diag hessian: zero start vector");
    goto done;
  }
  double scale = 0.0; /* running estimate of ||H|| for the breakdown test */
  for (int j = 0; j < iters; j++) {
    double *q = Q + (size_t)j * P;
    if ((rc = op(ctx, q, z)) != DS_OK) goto done;
    a[j] = cblas_ddot(P, q, 1, z, 1);
    if (!isfinite(a[j])) {
      rc = ds_fail(DS_ENUM, "diag hessian: non-finite Hessian-vector product");
      goto done;
    }
    /* three-term recurrence, then full reorthogonalisation against q_0..q_j */
    cblas_daxpy(P, -a[j], q, 1, z, 1);
    if (j > 0) cblas_daxpy(P, -b[j - 1], q - P, 1, z, 1);
    b[j] = orthogonalise(Q, P, j + 1, z, c);
    nt = j + 1;
    scale = fmax(scale, fabs(a[j]) + b[j] + (j > 0 ? b[j - 1] : 0.0));
    if (j == iters - 1) break;
    double *qn = Q + (size_t)(j + 1) * P;
    if (b[j] > 1e-10 * scale) {
      for (int p = 0; p < P; p++) qn[p] = z[p] / b[j];
    } else { /* invariant subspace found: restart orthogonally, T decouples */
      b[j] = 0.0;
      if (!(random_start(rng, Q, P, j + 1, qn, c) > 1e-8)) break;
    }
  }
  /* Ritz values: eigenvalues of the nt x nt tridiagonal T (ascending) */
  int info = 0;
  dstev_("N", &nt, a, b, NULL, &nt, NULL, &info, 1);
  if (info != 0) {
    rc = ds_fail(DS_ENUM, "diag hessian: dstev failed (info = %d)", info);
    goto done;
  }
  for (int i = 0; i < k; i++) evals[i] = i < nt ? a[nt - 1 - i] : NAN;
done:
  free(Q);
  free(z);
  free(a);
  free(b);
  free(c);
  return rc;
}

typedef struct {
  team_hvp *hv;
  const ds_mlp *m;
  const double *theta, *X, *Y;
  const ds_loss *l;
  ds_mlp_work *w;
} mlp_ctx;

static int mlp_op(void *ctx, const double *v, double *z) {
  mlp_ctx *c = ctx;
  return hvp(c->hv, c->m, c->theta, c->X, c->Y, c->l, v, c->w, z);
}

int ds_diag_hessian_top(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                        const double *Y, const ds_loss *l, ds_mlp_work *w, int k, int iters,
                        ds_rng *rng, double *evals) {
  if (k < 1 || iters < 1)
    return ds_fail(DS_EINPUT, "diag hessian: need k >= 1 and iters >= 1 (got %d, %d)", k, iters);
  if (m->nparams > INT_MAX) return ds_fail(DS_EINPUT, "diag hessian: too many parameters");
  DS_TRY(ds_mlp_work_products(m, w));
  team_hvp hv;
  int rc = team_hvp_init(&hv, t, m, w->n);
  if (rc == DS_OK) {
    mlp_ctx c = {&hv, m, theta, X, Y, l, w};
    rc = lanczos_top(hv.t, (int)m->nparams, mlp_op, &c, k, iters, rng, evals);
  }
  team_hvp_free(&hv);
  return rc;
}

/* ---- CNNs (ds_cnn_hvp, src/nn/cnnrop.c) ----
 * Team members take sample shares [lo, hi) of the n columns as for the MLPs
 * (l keeps the whole set's coefficient), summed on the root and broadcast. */
typedef struct {
  ds_team *t;
  ds_cnn *net;
  const double *theta, *X, *Y;
  const ds_loss *l;
  int lo, hi, k, P;
  double *part;
} cnn_ctx;

static int cnn_op(void *ctx, const double *v, double *z) {
  cnn_ctx *c = ctx;
  int d = ds_cnn_din(c->net);
  double *dst = c->t ? c->part : z;
  if (c->hi > c->lo) {
    ds_cnn_hvp(c->net, c->theta, c->X + (size_t)c->lo * d, c->Y + (size_t)c->lo * c->k,
               c->hi - c->lo, c->l, v, dst);
  } else {
    memset(dst, 0, (size_t)c->P * sizeof *dst);
  }
  if (!c->t) return DS_OK;
  int me = c->t->rank;
  if (MPI_Reduce(me == 0 ? MPI_IN_PLACE : c->part, me == 0 ? c->part : NULL, c->P, MPI_DOUBLE,
                 MPI_SUM, 0, c->t->comm) != MPI_SUCCESS ||
      MPI_Bcast(c->part, c->P, MPI_DOUBLE, 0, c->t->comm) != MPI_SUCCESS)
    return ds_fail(DS_EMPI, "diag hessian: MPI_Reduce/MPI_Bcast of the HVP failed");
  memcpy(z, c->part, (size_t)c->P * sizeof *z);
  return DS_OK;
}

int ds_diag_cnn_hessian_top(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                            const double *Y, int n, int kout, const ds_loss *l, int k, int iters,
                            ds_rng *rng, double *evals) {
  if (k < 1 || iters < 1 || n < 1)
    return ds_fail(DS_EINPUT, "diag hessian: need k, iters, n >= 1 (got %d, %d, %d)", k, iters,
                   n);
  if (ds_cnn_nparams(net) > INT_MAX) return ds_fail(DS_EINPUT, "diag hessian: too many parameters");
  cnn_ctx c = {NULL, net, theta, X, Y, l, 0, n, kout, (int)ds_cnn_nparams(net), NULL};
  if (t && t->size > 1) {
    c.t = t;
    c.lo = (int)((int64_t)n * t->rank / t->size);
    c.hi = (int)((int64_t)n * (t->rank + 1) / t->size);
    c.part = ds_calloc((size_t)c.P, sizeof *c.part);
    int rc = ds_diag_agree(t, c.part ? DS_OK : DS_ENOMEM);
    if (rc != DS_OK) {
      free(c.part);
      return rc;
    }
  }
  int rc = lanczos_top(c.t, c.P, cnn_op, &c, k, iters, rng, evals);
  free(c.part);
  return rc;
}

int ds_diag_hessian_matrix(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                           const double *Y, const ds_loss *l, ds_mlp_work *w, double *H,
                           double *asym) {
  int rc = DS_OK;
  size_t P = m->nparams;
  if (P * P > (size_t)INT_MAX || P < 1)
    rc = ds_fail(DS_EINPUT, "diag hessian: %zu parameters is too many for the full Hessian", P);
  int Pi = (int)P, sz = t->size, me = t->rank;
  int lo = (int)((size_t)Pi * me / sz), hi = (int)((size_t)Pi * (me + 1) / sz);
  double *mine = NULL;
  if (rc == DS_OK) rc = ds_mlp_work_products(m, w);
  if (rc == DS_OK && me == 0 && !H) rc = ds_fail(DS_EINTERNAL, "diag hessian: H is NULL");
  double *v = rc == DS_OK ? ds_calloc(P, sizeof *v) : NULL;
  if (rc == DS_OK && !v) rc = DS_ENOMEM;
  if (rc == DS_OK && me != 0 && hi > lo) {
    mine = ds_calloc(P * (size_t)(hi - lo), sizeof *mine);
    if (!mine) rc = DS_ENOMEM;
  }
  int *cnt = NULL, *dsp = NULL;
  if (rc == DS_OK && me == 0) {
    cnt = ds_calloc((size_t)sz, sizeof *cnt);
    dsp = ds_calloc((size_t)sz, sizeof *dsp);
    if (!cnt || !dsp) rc = DS_ENOMEM;
  }
  rc = ds_diag_agree(t, rc);
  if (rc != DS_OK) goto done;
  double *dst = me == 0 ? H + (size_t)lo * P : mine;
  for (int p = lo; p < hi; p++) { /* column p = H e_p */
    v[p] = 1.0;
    ds_mlp_loss_hvp(m, theta, X, Y, l, v, w, dst + (size_t)(p - lo) * P);
    v[p] = 0.0;
  }
  if (me == 0)
    for (int r = 0; r < sz; r++) {
      int a = (int)((size_t)Pi * r / sz), b = (int)((size_t)Pi * (r + 1) / sz);
      cnt[r] = (b - a) * Pi;
      dsp[r] = a * Pi;
    }
  if (MPI_Gatherv(me == 0 ? MPI_IN_PLACE : mine, (hi - lo) * Pi, MPI_DOUBLE, H, cnt, dsp,
                  MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS) {
    rc = ds_fail(DS_EMPI, "diag hessian: MPI_Gatherv failed");
    goto done;
  }
  double as[2] = {0.0, 0.0}; /* max |H - H^T|, max |H| */
  if (me == 0) {
    int finite = 1;
    for (size_t j = 0; j < P; j++)
      for (size_t i = 0; i < P; i++) {
        finite &= isfinite(H[j * P + i]) != 0;
        as[0] = fmax(as[0], fabs(H[j * P + i] - H[i * P + j]));
        as[1] = fmax(as[1], fabs(H[j * P + i]));
      }
    if (!finite)
      rc = ds_fail(DS_ENUM, "diag hessian: non-finite Hessian-vector product");
  }
  if (MPI_Bcast(as, 2, MPI_DOUBLE, 0, t->comm) != MPI_SUCCESS) {
    rc = ds_fail(DS_EMPI, "diag hessian: MPI_Bcast failed");
    goto done;
  }
  if (asym) *asym = as[1] > 0.0 ? as[0] / as[1] : 0.0;
  rc = ds_diag_agree(t, rc);
done:
  free(v);
  free(mine);
  free(cnt);
  free(dsp);
  return rc;
}

/* H (P x P on the root, columns of HVPs) symmetrised (the lower triangle is
 * what pdsyevd reads), checked finite, and its eigenvalues, ascending, into
 * evals on every member (ds_syev_values). */
static int full_spectrum(ds_team *t, double *H, size_t P, double *evals) {
  if (t->rank == 0)
    for (size_t j = 0; j < P; j++)
      for (size_t i = j + 1; i < P; i++) {
        double s = 0.5 * (H[j * P + i] + H[i * P + j]);
        H[j * P + i] = H[i * P + j] = s;
      }
  int rc = ds_diag_root_finite(t, H, P * P, "the Hessian");
  if (rc == DS_OK) rc = ds_syev_values(t, (int)P, H, (int)P, evals);
  return rc;
}

int ds_diag_hessian_full(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                         const double *Y, const ds_loss *l, ds_mlp_work *w, double *evals) {
  size_t P = m->nparams;
  int rc = DS_OK;
  double *H = NULL;
  if (t->rank == 0 && P * P <= (size_t)INT_MAX) {
    H = ds_calloc(P * P, sizeof *H);
    if (!H) rc = DS_ENOMEM;
  }
  rc = ds_diag_agree(t, rc);
  if (rc == DS_OK) rc = ds_diag_hessian_matrix(t, m, theta, X, Y, l, w, H, NULL);
  if (rc == DS_OK) rc = full_spectrum(t, H, P, evals);
  free(H);
  return rc;
}

/* A CNN's whole spectrum: column p of H is H e_p by ds_cnn_hvp (cnn_op: on
 * a team every member takes its sample share of each column, summed on the
 * root and broadcast, as for the Lanczos HVPs, so a member's net only ever
 * sees its own samples); the root keeps the columns, then as the MLPs'. */
int ds_diag_cnn_hessian_full(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                             const double *Y, int n, int kout, const ds_loss *l, double *evals) {
  size_t P = ds_cnn_nparams(net);
  if (n < 1 || P < 1 || P * P > (size_t)INT_MAX)
    return ds_fail(DS_EINPUT, "diag hessian: %zu parameters, %d samples: no full Hessian", P, n);
  int me = t ? t->rank : 0, rc = DS_OK;
  cnn_ctx c = {NULL, net, theta, X, Y, l, 0, n, kout, (int)P, NULL};
  double *H = me == 0 ? ds_calloc(P * P, sizeof *H) : NULL;
  double *v = ds_calloc(P, sizeof *v), *z = ds_calloc(P, sizeof *z);
  if ((me == 0 && !H) || !v || !z) rc = DS_ENOMEM;
  if (t && t->size > 1) {
    c.t = t;
    c.lo = (int)((int64_t)n * t->rank / t->size);
    c.hi = (int)((int64_t)n * (t->rank + 1) / t->size);
    c.part = ds_calloc(P, sizeof *c.part);
    if (!c.part) rc = DS_ENOMEM;
  }
  if (t) rc = ds_diag_agree(t, rc);
  for (size_t p = 0; p < P && rc == DS_OK; p++) { /* column p = H e_p */
    v[p] = 1.0;
    rc = cnn_op(&c, v, z);
    v[p] = 0.0;
    if (rc == DS_OK && me == 0) memcpy(H + p * P, z, P * sizeof *z);
  }
  if (rc == DS_OK) {
    if (t) rc = full_spectrum(t, H, P, evals);
    else rc = ds_fail(DS_EINTERNAL, "diag hessian: the full spectrum needs a team");
  }
  free(H), free(v), free(z), free(c.part);
  return rc;
}
