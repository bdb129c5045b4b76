/* diag.h -- the diagnostics a worker records (issue 4): per-layer spectra,
 * end-to-end matrix of linear nets, Hessian (Lanczos on exact HVPs, or the full
 * spectrum with ScaLAPACK), NTK (K = J J^T with ScaLAPACK), AGOP, activation
 * spectra of ReLU nets, the escape-speed proxy, and the outcome of a point.
 *
 * Every function computes on the calling team (ds_team, see spectra.h): the
 * inputs (theta, X, Y) are the same on every team member; results come back on
 * every member. Each function writes plain numbers into caller buffers whose
 * sizes are stated; the worker turns them into series. */
#ifndef DYNSWEEP_DIAG_H
#define DYNSWEEP_DIAG_H
#include "dynsweep/cnn.h"
#include "dynsweep/config.h"
#include "dynsweep/nn.h"
#include "dynsweep/spectra.h"

/* Per layer l (W_l is d_l x d_{l-1}): out[0..k) top-k singular values (padded
 * with NaN when min(d_l, d_{l-1}) < k), then ||W||_F, ||W||_2, s1/s2 (inf if
 * s2 = 0), stable rank ||W||_F^2/||W||_2^2, tail ratio sum_{i>=2} s_i^2 / sum
 * s_i^2. So out has k + 5 entries per layer, layers in order (L*(k+5)). */
#define DS_DIAG_LAYER_EXTRA 5
int ds_diag_layers(ds_team *t, const ds_mlp *m, const double *theta, int k, double *out);

/* Linear nets (no bias or bias ignored): W_{1:N} = W_N...W_1.
 * sv: min(d_N, d_0) singular values of W_{1:N};
 * bal: N-1 values ||W_{j+1}^T W_{j+1} - W_j W_j^T||_F;
 * margin: sigma_min(Phi) - ||W_{1:N} - Phi||_F with Phi given (d_N x d_0), NaN if Phi NULL;
 * pc: d_0 values: the residual (W_{1:N} - Phi) projected on each principal
 * direction of the data (columns of V, X X^T/n = V diag(lambda) V^T, descending
 * lambda): ||(W_{1:N} - Phi) v_j||_2; V given (d_0 x d_0) or NULL (skip). */
int ds_diag_e2e(ds_team *t, const ds_mlp *m, const double *theta, const double *Phi,
                const double *V, double *sv, double *bal, double *margin, double *pc);
/* Phi = Y X^T (X X^T)^{-1} (least-squares target map, d_out x d_in) and the
 * principal directions V of X (d_in x d_in, descending variance), once per point. */
int ds_diag_data_maps(const double *X, const double *Y, int d_in, int d_out, int n, double *Phi,
                      double *V, double *lambda);

/* Top-k eigenvalues (descending, largest algebraic) of the loss Hessian at
 * theta by Lanczos with full reorthogonalisation on exact HVPs
 * (ds_mlp_loss_hvp), iters iterations, start vector from rng. On a team of
 * more than one rank (t non-NULL) each member takes the HVP of its share of
 * the n samples (columns of X, Y; l keeps the whole set's coefficient), the
 * shares are summed on the team root and broadcast, so every member runs
 * the same recurrence; t NULL or of size 1: one rank, all samples. */
int ds_diag_hessian_top(ds_team *t, const ds_mlp *m, const double *theta, const double *X, const double *Y,
                        const ds_loss *l, ds_mlp_work *w, int k, int iters, ds_rng *rng,
                        double *evals);
/* The whole Hessian spectrum (ascending, nparams values): H formed column by
 * column from HVPs, symmetrised, eigenvalues with ScaLAPACK pdsyevd on the
 * team grid. */
int ds_diag_hessian_full(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                         const double *Y, const ds_loss *l, ds_mlp_work *w, double *evals);
/* (added) The Hessian itself as formed for ds_diag_hessian_full, before
 * symmetrisation: column p = H e_p (one HVP each; team member r computes the
 * columns [r P/size, (r+1) P/size) and the root gathers them). H (P x P) is
 * written on the team root only (ignored elsewhere, may be NULL there);
 * asym (may be NULL) receives max|H - H^T| / max|H| on every member. */
int ds_diag_hessian_matrix(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                           const double *Y, const ds_loss *l, ds_mlp_work *w, double *H,
                           double *asym);

/* NTK on the n training points with k outputs: K = J J^T (kn x kn, index
 * (output, sample) with output fastest), J = dF/dtheta by backprop of unit
 * cotangents. Returns top eigenvalues evals[0..topk) descending and, if evecs
 * != NULL, their eigenvectors (kn x topk). K itself is written to K if not
 * NULL (kn x kn) so the caller can keep K_0. Uses ds_syev on the team. */
int ds_diag_ntk(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                ds_mlp_work *w, int topk, double *evals, double *evecs, double *K);
/* Derived NTK quantities. Critical lr of the configured loss L = c sum r^2 (mse):
 * eta_crit = 1 / (c * lambda_max) (= 2/lambda_max for half_sum, n/lambda_max
 * for mean). Loss split: for s in split[], L<=s = c ||P_s r||^2 with P_s the
 * projector on the top-s eigenvectors and r = F - Y (kn); L>s = L - L<=s. */
double ds_diag_critical_lr(const ds_loss *l, double lambda_max);
void ds_diag_loss_split(const ds_loss *l, const double *r, int kn, const double *evecs, int topk,
                        const int *split, int nsplit, double *le, double *gt);
/* ||K - K0||_F / ||K0||_F */
double ds_diag_kernel_change(const double *K, const double *K0, int kn);
/* ||K - K0||_2 / ||K0||_2 (spectral norms; K, K0 symmetric, K0 PSD) into *out:
 * max |eigenvalue| of K - K0 over lambda_max(K0). *lam0 caches lambda_max(K0):
 * pass 0 to have it computed (then kept). K and K0 on the team root; *out on
 * every member. Collective over the team. */
int ds_diag_kernel_change_2(ds_team *t, const double *K, const double *K0, int kn, double *lam0,
                            double *out);

/* AGOP G = (1/n) sum_i J_x(x_i)^T J_x(x_i) (d_in x d_in; J_x = dF/dx, k x d_in)
 * and, if Gref != NULL, alignment cos(G, Gref) = Tr(G^T Gref)/(||G||_F ||Gref||_F). */
int ds_diag_agop(const ds_mlp *m, const double *theta, const double *X, ds_mlp_work *w,
                 const double *Gref, double *G, double *align);
/* The analytic G* = E_x[grad f*(x) grad f*(x)^T], x ~ N(0, I), of the
 * synthetic tasks of seed 003 (rank2: diag(1,1,0..), rank4: diag(4,3,2,1,0..);
 * added: rank3 (f* = x1 x2 sum_{i<=10} x_i, needs d_in >= 10): entries
 * (1,1) = (2,2) = 15, (1,2) = 5, (1,i) = (2,i) = 2, (i,j) = 1 for 3 <= i,j <= 10;
 * fullrank: I/d_in^2); DS_EINPUT for other kinds. */
int ds_diag_agop_reference(ds_data_kind kind, int d_in, double *Gref);
/* (added) Input Jacobians: Jx (d_in x kn), column o + k*i = grad_x f_o(x_i)
 * (the unit-cotangent backprop ds_diag_agop uses). Runs the forward pass. */
int ds_diag_input_jacobian(const ds_mlp *m, const double *theta, const double *X,
                           ds_mlp_work *w, double *Jx);

/* ReLU nets: per hidden layer l < L: top-k singular values of A_l = relu(Z_l)
 * (d_l x n; NaN-padded), then the nonlinearity ratio ||A_l - Z_l||_F^2 /
 * ||Z_l||_F^2: out has (L-1)*(k+1) entries. */
int ds_diag_activations(ds_team *t, const ds_mlp *m, const double *theta, const double *X,
                        ds_mlp_work *w, int k, double *out);

/* Escape-speed proxy of seed 004: -Tr[G^T f_theta~(X)], G = dL/dF at F = 0
 * (the loss gradient at the zero output), theta~ = sqrt(L) theta / ||theta||. */
double ds_diag_escape(const ds_mlp *m, const double *theta, const double *X, const double *Y,
                      const ds_loss *l, ds_mlp_work *w);
/* ---- convolutional nets (issue 26; model.type cnn), through cnn.h only ----
 * The same quantities as above for a ds_cnn (k = its outputs, n samples,
 * the net's work space must hold n samples); each call runs the forward
 * passes it needs, so the net's stored activations change.
 *
 * Layer spectra: the weight matrices of ds_cnn_weight (conv kernels as C_out x
 * C_in s^2, then the readout d_out x d_in): out as ds_diag_layers' with
 * ds_cnn_nweights layers; ds_diag_cnn_weight_sv: min(rows, cols) singular
 * values of matrix i, descending (ds_svd_values on the team). */
int ds_diag_cnn_layers(ds_team *t, const ds_cnn *net, const double *theta, int k, double *out);
int ds_diag_cnn_weight_sv(ds_team *t, const ds_cnn *net, const double *theta, int i, double *s);
/* Rows [r0, r0 + nr) of the Jacobian J = dF/dtheta (kn x P, row o + k i =
 * grad_theta f_o(x_i)), as the columns of J (P x nr, column-major), from
 * per-sample gradients (a 1-sample forward, k unit-cotangent backwards). */
int ds_diag_cnn_jacobian(ds_cnn *net, const double *theta, const double *X, int n, int k, int r0,
                         int nr, double *J);
/* K = J J^T (kn x kn, full) with at most jbytes of J held at a time (blocks
 * of rows recomputed when J does not fit; src/diag/cnn.c says why not
 * Lanczos). One rank; no team. */
int ds_diag_cnn_ntk_matrix(ds_cnn *net, const double *theta, const double *X, int n, int k,
                           size_t jbytes, double *K);
/* K (kn x kn, full) on every member of team t (collective): the members
 * form their own samples' rows of J, an MPI_Alltoallv turns them into
 * parameter-column slices, and the slices' DSYRKs are summed (reduce and
 * broadcast: bitwise the same K everywhere); a team of 1, or a split whose
 * 2 kn P / size doubles per member exceed jbytes (ds_diag_cnn_ntk_split_fits), uses
 * ds_diag_cnn_ntk_matrix on every member instead (src/diag/cnn.c). */
int ds_diag_cnn_ntk_team(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                         int k, size_t jbytes, double *K);
/* As ds_diag_ntk: top eigenvalues (and eigenvectors), K written to K if
 * not NULL; K as ds_diag_cnn_ntk_team. */
int ds_diag_cnn_ntk(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n, int k,
                    size_t jbytes, int topk, double *evals, double *evecs, double *K);
/* Whether a team of s ranks forms the K of n samples (k outputs, P
 * parameters) by the split path under the budget jbytes (1), or every member
 * by the blocked row path (0): the test ds_diag_cnn_ntk_team makes. The
 * worker's budget is ds_point_cnn_jbytes (config.h), the same on every
 * member of a team. */
int ds_diag_cnn_ntk_split_fits(int s, size_t P, int n, int k, size_t jbytes);
/* The bytes of J one member of that team holds on the split path (its
 * samples' rows packed, its column slice, a sample's rows of scratch: the
 * most rows and columns a member has), the figure ds_diag_cnn_ntk_split_fits
 * tests against jbytes and plan's estimate counts (src/config/cost.c); 0 when
 * the split cannot be taken (s < 2, or MPI counts past INT_MAX). */
double ds_diag_cnn_ntk_split_bytes(int s, size_t P, int n, int k);
/* As ds_diag_agop over the input pixels (d = C H W, CHW order), through
 * ds_cnn_input_grad. */
/* Top-k loss Hessian eigenvalues of a CNN (Lanczos with full
 * reorthogonalisation on ds_cnn_hvp, as ds_diag_hessian_top): n samples
 * (columns of X, Y with kout outputs; l keeps the whole set's coefficient),
 * shared among the team's members as for the MLPs. Dropout as the net is set
 * (off for spectra). */
/* Every eigenvalue of a CNN's loss Hessian, ascending, into evals (P =
 * ds_cnn_nparams) on every member: P columns H e_p by ds_cnn_hvp (samples as
 * ds_diag_cnn_hessian_top), symmetrised, ScaLAPACK pdsyevd as
 * ds_diag_hessian_full. t must not be NULL (a team of 1 is fine). */
/* Seed 004's escape-speed proxy of a CNN into *out (every member): as
 * ds_diag_escape with L = ds_cnn_nweights (its weight matrices: conv
 * kernels, hidden dense layers, DAG depths, the readout); n samples of X, Y
 * (k outputs), one forward each, split over the team (t may be NULL). The
 * net is left at theta~'s forward pass. */
int ds_diag_cnn_escape(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                       const double *Y, int n, int k, const ds_loss *l, double *out);
/* Activation spectra of a CNN (cnnact.c; record.spectra.activations): for
 * each ReLU j of the net (ds_cnn_nrelus, cnn.h) its output on the n samples
 * of X as an n x d matrix (d = C H W of the map): top-k singular values
 * (through the min(n, d)-sized Gram matrix; NaN-padded past min(n, d)), then
 * the nonlinearity ratio ||relu(Z) - Z||_F^2 / ||Z||_F^2, Z the ReLU's input:
 * out has ds_cnn_nrelus * (k+1) entries, on every member. Samples split over
 * the team as the NTK's (t may be NULL: one rank). Dropout as the net is set
 * (off for spectra). The net is left at (a share of) X's forward pass. */
int ds_diag_cnn_activations(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                            int k, double *out);
int ds_diag_cnn_hessian_full(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                             const double *Y, int n, int kout, const ds_loss *l, double *evals);
int ds_diag_cnn_hessian_top(ds_team *t, ds_cnn *net, const double *theta, const double *X,
                            const double *Y, int n, int kout, const ds_loss *l, int k, int iters,
                            ds_rng *rng, double *evals);
/* The same on team t (collective): each member's block of the samples
 * ([floor(n r / s), floor(n (r+1) / s))), its share of G summed by reduce +
 * broadcast (every member holds bitwise the same G). */
int ds_diag_cnn_agop_team(ds_team *t, ds_cnn *net, const double *theta, const double *X, int n,
                          int k, const double *Gref, double *G, double *align);
int ds_diag_cnn_agop(ds_cnn *net, const double *theta, const double *X, int n, int k,
                     const double *Gref, double *G, double *align);
#endif
