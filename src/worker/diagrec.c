/* diagrec.c -- the worker's side of record.spectra: decides when each
 * diagnostic is due (its own cadence), calls the diag room, and appends the
 * numbers to named series. Definitions of every quantity: docs/diagnostics.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diagrec.h"
#include "dynsweep/data.h"
#include "dynsweep/util.h"


/* Due at step t of T: the first and last step, every k, k per decade, or a
 * step whose loss rose above the previous step's. */
int ds_cadence_due(const ds_cadence *c, int64_t t, int64_t T, int last, int rose) {
  if (!ds_cadence_on(c)) return 0;
  if (t == 0 || t == T || last) return 1;
  if (c->on_loss_rise && rose) return 1;
  ds_record_spec r = {.every = c->every, .per_decade = c->per_decade};
  return (c->every > 0 || c->per_decade > 0) && ds_worker_record_step(&r, t, T);
}

static int add(ds_traj *tr, int *ix, const char *name, int ncols, const char *def) {
  *ix = ds_traj_add(tr, name, ncols, "1", def);
  return *ix < 0 ? -*ix : DS_OK;
}

static int min_i(int a, int b) { return a < b ? a : b; }

/* Weight matrix l (0-based) of the net: rows x cols, and what it is. */
static void wdims(const ds_diagrec *d, const ds_mlp *m, int l, int *rows, int *cols,
                  const char **what) {
  size_t off;
  if (d->cnn) {
    ds_cnn_weight(d->cnn, l, &off, rows, cols);
    *what = l < d->nlayers - 1 ? "conv kernel as C_out x C_in s^2" : "dense readout";
  } else {
    *rows = m->dims[l + 1], *cols = m->dims[l], *what = "";
  }
}

int ds_diagrec_init(ds_diagrec *d, ds_traj *tr, const ds_point_cfg *c, const ds_mlp *m,
                    ds_cnn *cnn, const ds_dataset *train, uint64_t seed, int replica) {
  const ds_spectra_spec *sp = &c->record.spectra;
  int L = m->depth, k = sp->top_k > 0 ? sp->top_k : 5;
  char name[64], def[256];
  memset(d, 0, sizeof *d);
  d->sp = sp;
  d->k = k;
  d->cnn = cnn;
  d->nlayers = cnn ? ds_cnn_nweights(cnn) : L;
  if (cnn) { /* plan refuses these for CNNs (models.c); a guard for callers that do not plan */
    if (ds_cadence_on(&sp->e2e))
      return ds_fail(DS_EINPUT, "record.spectra.e2e: not available for model.type cnn");
    if (ds_cadence_on(&sp->activations) && ds_cnn_nrelus(cnn) == 0) /* every model.net has one */
      return ds_fail(DS_EINPUT, "record.spectra.activations: the net has no ReLU layer (it records "
                     "each ReLU's output)");
  }
  int nact = cnn ? ds_cnn_nrelus(cnn) : L > 1 ? L - 1 : 0; /* activation maps recorded */
  d->nact = nact;
  ds_rng_init(&d->rng, seed, 0, replica, DS_STREAM_DIAG);
  size_t maxd = 1;
  for (int l = 0; l <= L; l++) maxd = (size_t)m->dims[l] > maxd ? (size_t)m->dims[l] : maxd;
  size_t kn = (size_t)m->dims[L] * train->n;
  d->kn = (int)kn;
  int Lw = d->nlayers;
  size_t need = (size_t)(L > Lw ? L : Lw) * (k + DS_DIAG_LAYER_EXTRA) + 4 * maxd + 16 +
                (size_t)L * (k + 1) + 64;
  if (ds_cadence_on(&sp->hessian_full)) need += cnn ? ds_cnn_nparams(cnn) : m->nparams;
  if (ds_cadence_on(&sp->ntk)) need += kn; /* eigenvalues, up to kn */
  d->buf = ds_calloc(need, sizeof *d->buf);
  d->col = ds_calloc(maxd + L + Lw + nact + 16, sizeof *d->col);
  if (!d->buf || !d->col) return DS_ENOMEM;

  if (ds_cadence_on(&sp->layers)) {
    d->layers_on = 1;
    d->ix_layer_sv = ds_calloc(Lw, sizeof(int));
    if (!d->ix_layer_sv) return DS_ENOMEM;
    for (int l = 0; l < Lw; l++) {
      int rows, cols;
      const char *what;
      wdims(d, m, l, &rows, &cols, &what);
      snprintf(name, sizeof name, "layers/sv/W%d", l + 1);
      snprintf(def, sizeof def, "top-%d singular values of W_%d (%d x %d%s%s), NaN-padded", k,
               l + 1, rows, cols, what[0] ? ", " : "", what);
      DS_TRY(add(tr, &d->ix_layer_sv[l], name, k, def));
    }
    static const char *stat[DS_DIAG_LAYER_EXTRA][2] = {
        {"layers/fro", "column l-1: ||W_l||_F"},
        {"layers/spectral", "column l-1: ||W_l||_2 (largest singular value)"},
        {"layers/s1_s2", "column l-1: s1/s2 of W_l (inf when s2 = 0)"},
        {"layers/stable_rank", "column l-1: ||W_l||_F^2 / ||W_l||_2^2"},
        {"layers/tail_ratio", "column l-1: sum_{i>=2} s_i^2 / sum_i s_i^2 of W_l"}};
    for (int j = 0; j < DS_DIAG_LAYER_EXTRA; j++)
      DS_TRY(add(tr, &d->ix_layer_stat[j], stat[j][0], Lw, stat[j][1]));
  }
  if (ds_cadence_on(&sp->e2e)) {
    int d0 = m->dims[0], dN = m->dims[L];
    d->e2e_on = 1;
    d->Phi = ds_calloc((size_t)dN * d0, sizeof(double));
    d->V = ds_calloc((size_t)d0 * d0, sizeof(double));
    d->lambda = ds_calloc(d0, sizeof(double));
    if (!d->Phi || !d->V || !d->lambda) return DS_ENOMEM;
    DS_TRY(ds_diag_data_maps(train->X, train->Y, d0, dN, train->n, d->Phi, d->V, d->lambda));
    DS_TRY(add(tr, &d->ix_e2e_sv, "e2e/sv", min_i(d0, dN),
               "singular values of the end-to-end matrix W_{1:N} = W_N ... W_1, descending"));
    if (L > 1)
      DS_TRY(add(tr, &d->ix_e2e_bal, "e2e/balancedness", L - 1,
                 "column j-1: ||W_{j+1}^T W_{j+1} - W_j W_j^T||_F"));
    else d->ix_e2e_bal = -1;
    DS_TRY(add(tr, &d->ix_e2e_margin, "e2e/margin", 1,
               "deficiency margin sigma_min(Phi) - ||W_{1:N} - Phi||_F, Phi = Y X^T (X X^T)^-1"));
    DS_TRY(add(tr, &d->ix_e2e_pc, "e2e/pc_residual", d0,
               "column j: ||(W_{1:N} - Phi) v_j||_2, v_j the j-th principal direction of X "
               "(descending variance)"));
  }
  if (ds_cadence_on(&sp->hessian)) {
    d->hess_on = 1;
    d->iters = sp->lanczos_iters > 0 ? sp->lanczos_iters : 40;
    size_t P = cnn ? ds_cnn_nparams(cnn) : m->nparams;
    if ((size_t)d->iters > P) d->iters = (int)P;
    d->hk = min_i(k, d->iters);
    snprintf(def, sizeof def, "top-%d eigenvalues of the loss Hessian (Lanczos, %d iterations, exact "
             "HVPs), descending", d->hk, d->iters);
    DS_TRY(add(tr, &d->ix_hess, "hessian/top", d->hk, def));
  }
  if (ds_cadence_on(&sp->hessian_full)) {
    d->hfull_on = 1;
    DS_TRY(add(tr, &d->ix_hfull, "hessian/spectrum",
               (int)(cnn ? ds_cnn_nparams(cnn) : m->nparams),
               "all eigenvalues of the loss Hessian, ascending (ScaLAPACK pdsyevd)"));
  }
  if (ds_cadence_on(&sp->ntk)) {
    d->ntk_on = 1;
    int smax = 0;
    for (int i = 0; i < sp->nsplit; i++) smax = sp->split[i] > smax ? sp->split[i] : smax;
    d->nk = min_i(k, d->kn);                     /* eigenvalues recorded */
    d->nvec = min_i(k > smax ? k : smax, d->kn); /* eigenvectors needed by the loss split */
    d->K = ds_calloc(kn * kn, sizeof(double));
    d->K0 = ds_calloc(kn * kn, sizeof(double));
    d->evecs = ds_calloc(kn * d->nvec, sizeof(double));
    d->r = ds_calloc(kn, sizeof(double));
    if (!d->K || !d->K0 || !d->evecs || !d->r) return DS_ENOMEM;
    snprintf(def, sizeof def, "top-%d eigenvalues of the NTK K = J J^T on the %d training points "
             "(%d x %d), descending", d->nk, train->n, d->kn, d->kn);
    DS_TRY(add(tr, &d->ix_ntk, "ntk/top", d->nk, def));
    DS_TRY(add(tr, &d->ix_ntk_crit, "ntk/critical_lr", 1,
               "eta_crit = 1/(c lambda_max(K)) for L = c sum (f-y)^2 (2/lambda_max for half_sum)"));
    DS_TRY(add(tr, &d->ix_ntk_change, "ntk/kernel_change", 1, "||K_t - K_0||_F / ||K_0||_F"));
    d->ix_ntk_change2 = -1; /* on request: stores of sweeps without it stay as they were */
    if (sp->kernel_change_2)
      DS_TRY(add(tr, &d->ix_ntk_change2, "ntk/kernel_change_2", 1,
                 "||K_t - K_0||_2 / ||K_0||_2 (spectral norms: max |eig(K_t - K_0)| / "
                 "lambda_max(K_0))"));
    int b = c->optimizer.batch_size;
    if (b > 0 && b < train->n) d->batch_on = 1; /* SGD: with every NTK record */
    int ns = sp->nsplit;
    if (ns > 0) {
      DS_TRY(add(tr, &d->ix_ntk_le, "ntk/loss_top", ns,
                 "column i: L<=s, s = record.spectra.split[i]: c ||P_s (f - y)||^2, P_s the "
                 "projector on the top-s NTK eigenvectors"));
      DS_TRY(add(tr, &d->ix_ntk_gt, "ntk/loss_rest", ns, "column i: L>s = L - L<=s"));
    } else {
      d->ix_ntk_le = d->ix_ntk_gt = -1;
    }
  }
  /* SGD: the NTK of the step's minibatch, on its own cadence (batch_ntk) or
   * with every ntk record */
  int b = c->optimizer.batch_size;
  if (b <= 0 || b > train->n) b = train->n; /* full batch: the step's batch is the training set */
  d->batch_own = ds_cadence_on(&sp->batch_ntk);
  if (d->batch_own) d->batch_on = 1;
  if (d->batch_on) {
    d->kb = m->dims[L] * b;
    d->Kb = ds_calloc((size_t)d->kb * d->kb, sizeof(double));
    if (!d->Kb) return DS_ENOMEM;
    DS_TRY(add(tr, &d->ix_bcrit, "ntk/batch_critical_lr", 1,
               "eta_crit(X_batch) = 1/(c_b lambda_max(K_batch)), K_batch the NTK of the step's "
               "minibatch, c_b the loss coefficient for b samples"));
    DS_TRY(add(tr, &d->ix_bcount, "ntk/batch_catapults", 1,
               "number of evaluated steps so far whose lr exceeded eta_crit(X_batch)"));
  }
  if (ds_cadence_on(&sp->agop)) {
    int d0 = m->dims[0];
    d->agop_on = 1;
    d->G = ds_calloc((size_t)d0 * d0, sizeof(double));
    d->Gref = ds_calloc((size_t)d0 * d0, sizeof(double));
    if (!d->G || !d->Gref) return DS_ENOMEM;
    if (sp->agop_reference[0])
      DS_TRY(ds_h5_read_matrix(sp->agop_reference, "G", d0, d0, d->Gref));
    else if (ds_diag_agop_reference(c->data.kind, d0, d->Gref) != DS_OK) {
      ds_clear_error(); /* no analytic G* for this data: record NaN alignment */
      free(d->Gref);
      d->Gref = NULL;
    }
    DS_TRY(add(tr, &d->ix_agop, "agop/alignment", 1,
               "cos(G, G*) = Tr(G^T G*)/(||G||_F ||G*||_F), G = (1/n) sum_i J_x(x_i)^T J_x(x_i)"));
  }
  if (ds_cadence_on(&sp->activations) && (cnn || m->act == DS_ACT_RELU) && nact > 0) {
    d->act_on = 1;
    d->ix_act_sv = ds_calloc(nact, sizeof(int));
    if (!d->ix_act_sv) return DS_ENOMEM;
    for (int l = 0; l < nact; l++) {
      snprintf(name, sizeof name, "activations/sv/A%d", l + 1);
      if (cnn) { /* ReLU l of the net (cnn.h's ds_cnn_relu_map): its output as n x C H W */
        ds_cnn_relu r;
        ds_cnn_relu_map(cnn, l, NULL, &r);
        int lk = r.kind;
        snprintf(def, sizeof def, "top-%d singular values of ReLU %d's output (layer %d, %s%s; "
                 "n x %d = %d x %d x %d, a row per sample), NaN-padded", k, l + 1, r.layer + 1,
                 ds_cnn_kind_name(lk), lk == DS_LAYER_RESBLOCK ? (r.part ? " relu(conv1)" :
                 " relu(input)") : lk == DS_LAYER_DAG ? " f_k" : "", r.d, r.c, r.h, r.w);
      } else {
        snprintf(def, sizeof def, "top-%d singular values of relu(Z_%d) (%d x n), NaN-padded", k,
                 l + 1, m->dims[l + 1]);
      }
      DS_TRY(add(tr, &d->ix_act_sv[l], name, k, def));
    }
    DS_TRY(add(tr, &d->ix_act_ratio, "activations/nonlinearity", nact,
               cnn ? "column j-1: ||relu(Z_j) - Z_j||_F^2 / ||Z_j||_F^2, Z_j the input of the "
                     "net's ReLU j (as activations/sv/Aj)"
                   : "column l-1: ||relu(Z_l) - Z_l||_F^2 / ||Z_l||_F^2"));
  }
  if (ds_cadence_on(&sp->escape)) {
    d->esc_on = 1;
    DS_TRY(add(tr, &d->ix_escape, "escape/speed", 1,
               "-Tr[G^T f_theta~(X)], G = dL/dF at F = 0, theta~ = sqrt(L) theta/||theta||"));
  }
  d->act_buf = ds_calloc((size_t)(nact > 1 ? nact : 1) * (k + 1), sizeof(double));
  return d->act_buf ? DS_OK : DS_ENOMEM;
}

void ds_diagrec_free(ds_diagrec *d) {
  free(d->buf);
  free(d->col);
  free(d->ix_layer_sv);
  free(d->ix_act_sv);
  free(d->Phi);
  free(d->V);
  free(d->lambda);
  free(d->K);
  free(d->K0);
  free(d->evecs);
  free(d->r);
  free(d->G);
  free(d->Gref);
  free(d->act_buf);
  free(d->Kb);
  memset(d, 0, sizeof *d);
}

static int rec_layers(ds_diagrec *d, ds_traj *tr, ds_team *team, int64_t t, const ds_mlp *m,
                      const double *theta) {
  int L = d->nlayers, k = d->k, w = k + DS_DIAG_LAYER_EXTRA;
  if (d->cnn) DS_TRY(ds_diag_cnn_layers(team, d->cnn, theta, k, d->buf));
  else DS_TRY(ds_diag_layers(team, m, theta, k, d->buf));
  for (int l = 0; l < L; l++) DS_TRY(ds_traj_append(tr, d->ix_layer_sv[l], t, d->buf + l * w));
  for (int j = 0; j < DS_DIAG_LAYER_EXTRA; j++) {
    for (int l = 0; l < L; l++) d->col[l] = d->buf[l * w + k + j];
    DS_TRY(ds_traj_append(tr, d->ix_layer_stat[j], t, d->col));
  }
  return DS_OK;
}

static int rec_e2e(ds_diagrec *d, ds_traj *tr, ds_team *team, int64_t t, const ds_mlp *m,
                   const double *theta) {
  int L = m->depth, d0 = m->dims[0], dN = m->dims[L];
  double *sv = d->buf, *bal = sv + min_i(d0, dN), *margin = bal + L, *pc = margin + 1;
  DS_TRY(ds_diag_e2e(team, m, theta, d->Phi, d->V, sv, bal, margin, pc));
  DS_TRY(ds_traj_append(tr, d->ix_e2e_sv, t, sv));
  if (d->ix_e2e_bal >= 0) DS_TRY(ds_traj_append(tr, d->ix_e2e_bal, t, bal));
  DS_TRY(ds_traj_append(tr, d->ix_e2e_margin, t, margin));
  return ds_traj_append(tr, d->ix_e2e_pc, t, pc);
}

static int rec_ntk(ds_diagrec *d, ds_traj *tr, ds_team *team, int64_t t, const ds_mlp *m,
                   const double *theta, const ds_dataset *train, const ds_loss *l,
                   ds_mlp_work *w, double loss) {
  if (d->cnn)
    DS_TRY(ds_diag_cnn_ntk(team, d->cnn, theta, train->X, train->n, train->d_out,
                           d->jbytes, d->nvec, d->buf, d->evecs, d->K));
  else
    DS_TRY(ds_diag_ntk(team, m, theta, train->X, w, d->nvec, d->buf, d->evecs, d->K));
  size_t kk = (size_t)d->kn * d->kn;
  if (!d->have_K0) {
    memcpy(d->K0, d->K, kk * sizeof(double));
    d->have_K0 = 1;
  }
  DS_TRY(ds_traj_append(tr, d->ix_ntk, t, d->buf));
  double crit = ds_diag_critical_lr(l, d->buf[0]);
  double change = ds_diag_kernel_change(d->K, d->K0, d->kn);
  DS_TRY(ds_traj_append(tr, d->ix_ntk_crit, t, &crit));
  DS_TRY(ds_traj_append(tr, d->ix_ntk_change, t, &change));
  if (d->ix_ntk_change2 >= 0) {
    double change2;
    DS_TRY(ds_diag_kernel_change_2(team, d->K, d->K0, d->kn, &d->lam0, &change2));
    DS_TRY(ds_traj_append(tr, d->ix_ntk_change2, t, &change2));
  }
  if (d->ix_ntk_le >= 0) {
    /* residual r = F - Y on the training set, (output, sample) order */
    const double *F = d->cnn ? ds_cnn_forward(d->cnn, theta, train->X, train->n)
                             : ds_mlp_forward(m, theta, train->X, w);
    for (int i = 0; i < d->kn; i++) d->r[i] = F[i] - train->Y[i];
    double *le = d->col, *gt = d->col + 8;
    ds_diag_loss_split(l, d->r, d->kn, d->evecs, d->nvec, d->sp->split, d->sp->nsplit, le, gt);
    (void)loss;
    DS_TRY(ds_traj_append(tr, d->ix_ntk_le, t, le));
    DS_TRY(ds_traj_append(tr, d->ix_ntk_gt, t, gt));
  }
  return DS_OK;
}

static int rec_batch_ntk(ds_diagrec *d, ds_traj *tr, ds_team *team, int64_t t, const ds_mlp *m,
                         const double *theta, const ds_diag_batch *b) {
  double ev;
  if (d->cnn)
    DS_TRY(ds_diag_cnn_ntk(team, d->cnn, theta, b->Xb, b->n, m->dims[m->depth],
                           d->jbytes, 1, &ev, NULL, d->Kb));
  else
    DS_TRY(ds_diag_ntk(team, m, theta, b->Xb, b->wb, 1, &ev, NULL, d->Kb));
  double crit = ds_diag_critical_lr(b->lb, ev);
  if (b->lr > crit) d->batch_catapults++;
  double count = (double)d->batch_catapults;
  DS_TRY(ds_traj_append(tr, d->ix_bcrit, t, &crit));
  return ds_traj_append(tr, d->ix_bcount, t, &count);
}

int ds_diagrec_step(ds_diagrec *d, ds_traj *tr, ds_team *team, const ds_point_cfg *c, int64_t t,
                    int last, int rose, const ds_mlp *m, const double *theta,
                    const ds_dataset *train, const ds_loss *l, ds_mlp_work *w, double loss,
                    const ds_diag_batch *batch) {
  const ds_spectra_spec *sp = d->sp;
  int64_t T = c->train.steps;
  if (d->layers_on && ds_cadence_due(&sp->layers, t, T, last, rose))
    DS_TRY(rec_layers(d, tr, team, t, m, theta));
  if (d->e2e_on && ds_cadence_due(&sp->e2e, t, T, last, rose))
    DS_TRY(rec_e2e(d, tr, team, t, m, theta));
  if (d->hess_on && ds_cadence_due(&sp->hessian, t, T, last, rose)) {
    ds_rng r = d->rng; /* the same start vector at every step: smooth series */
    if (d->cnn) /* dropout is off between steps (point.c) */
      DS_TRY(ds_diag_cnn_hessian_top(team, d->cnn, theta, train->X, train->Y, train->n,
                                     train->d_out, l, d->hk, d->iters, &r, d->buf));
    else
      DS_TRY(ds_diag_hessian_top(team, m, theta, train->X, train->Y, l, w, d->hk, d->iters, &r,
                                 d->buf));
    DS_TRY(ds_traj_append(tr, d->ix_hess, t, d->buf));
  }
  if (d->hfull_on && ds_cadence_due(&sp->hessian_full, t, T, last, rose)) {
    if (d->cnn) /* P R-operator HVPs (hessian.c), dropout off as for hessian/top */
      DS_TRY(ds_diag_cnn_hessian_full(team, d->cnn, theta, train->X, train->Y, train->n,
                                      train->d_out, l, d->buf));
    else
      DS_TRY(ds_diag_hessian_full(team, m, theta, train->X, train->Y, l, w, d->buf));
    DS_TRY(ds_traj_append(tr, d->ix_hfull, t, d->buf));
  }
  if (d->ntk_on && ds_cadence_due(&sp->ntk, t, T, last, rose)) {
    DS_TRY(rec_ntk(d, tr, team, t, m, theta, train, l, w, loss));
    if (d->batch_on && !d->batch_own && batch && batch->Xb)
      DS_TRY(rec_batch_ntk(d, tr, team, t, m, theta, batch));
  }
  if (d->batch_own && batch && ds_cadence_due(&sp->batch_ntk, t, T, last, rose)) {
    ds_diag_batch full = {train->X, w, l, batch->lr, train->n}; /* full-batch GD: the whole set */
    DS_TRY(rec_batch_ntk(d, tr, team, t, m, theta, batch->Xb ? batch : &full));
  }
  if (d->agop_on && ds_cadence_due(&sp->agop, t, T, last, rose)) {
    double align;
    if (d->cnn)
      DS_TRY(ds_diag_cnn_agop_team(team, d->cnn, theta, train->X, train->n, train->d_out,
                                   d->Gref, d->G, &align)); /* samples split over the team */
    else
      DS_TRY(ds_diag_agop(m, theta, train->X, w, d->Gref, d->G, &align));
    if (!d->Gref) align = NAN;
    DS_TRY(ds_traj_append(tr, d->ix_agop, t, &align));
  }
  if (d->act_on && ds_cadence_due(&sp->activations, t, T, last, rose)) {
    int k = d->k;
    if (d->cnn) /* samples split over the team; dropout is off between steps (point.c) */
      DS_TRY(ds_diag_cnn_activations(team, d->cnn, theta, train->X, train->n, k, d->act_buf));
    else
      DS_TRY(ds_diag_activations(team, m, theta, train->X, w, k, d->act_buf));
    for (int l = 0; l < d->nact; l++) {
      DS_TRY(ds_traj_append(tr, d->ix_act_sv[l], t, d->act_buf + l * (k + 1)));
      d->col[l] = d->act_buf[l * (k + 1) + k];
    }
    DS_TRY(ds_traj_append(tr, d->ix_act_ratio, t, d->col));
  }
  if (d->esc_on && ds_cadence_due(&sp->escape, t, T, last, rose)) {
    double s;
    if (d->cnn) /* L = the CNN's weight matrices (ds_cnn_nweights) */
      DS_TRY(ds_diag_cnn_escape(team, d->cnn, theta, train->X, train->Y, train->n, train->d_out,
                                l, &s));
    else
      s = ds_diag_escape(m, theta, train->X, train->Y, l, w);
    DS_TRY(ds_traj_append(tr, d->ix_escape, t, &s));
  }
  return DS_OK;
}
