/* xsmm_shapes.c -- dynsweep-bench-xsmm: LIBXSMM against OpenBLAS on the small
 * GEMM shapes of a single point's training step (issue 13), one thread,
 * process CPU time, best of 5. The table behind ds_nn_xsmm_nn / ds_nn_xsmm_nt
 * (src/nn/layers.c; docs/performance.md, "Single points: LIBXSMM and
 * blocking over samples"):
 *   NN  C (m x n) = A (m x k) B (k x n)      (Z = W A; dA = W^T dZ on a copy)
 *   NT  C (m x k) = A (m x n) B^T, B k x n   (dW = dZ A^T, summed over n)
 * LIBXSMM runs in blocks of nb samples (NT: first block beta 0, then beta 1).
 *
 *   dynsweep-bench-xsmm [M K N NB]     (no arguments: the whole grid) */
#include <cblas.h>
#include <libxsmm.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static double *rnd(size_t count) {
  double *a = aligned_alloc(64, (count * sizeof *a + 63) & ~(size_t)63);
  for (size_t i = 0; i < count; i++) a[i] = (double)rand() / RAND_MAX - 0.5;
  return a;
}

#define BEST(out, stmt)                                                                         \
  do {                                                                                          \
    double best_ = 1e300;                                                                       \
    for (int r_ = 0; r_ < 5; r_++) {                                                            \
      double t0_ = cpu();                                                                       \
      for (int q_ = 0; q_ < reps; q_++) { stmt; }                                               \
      double t_ = (cpu() - t0_) / reps;                                                         \
      best_ = t_ < best_ ? t_ : best_;                                                          \
    }                                                                                           \
    out = fl / best_ * 1e-9;                                                                    \
  } while (0)

static void one(int M, int K, int n, int nb) {
  double *W = rnd((size_t)M * K), *A = rnd((size_t)K * n), *Z = rnd((size_t)M * n),
         *dW = rnd((size_t)M * K);
  const double one_ = 1.0, zero = 0.0;
  const libxsmm_blasint m = M, k = K, b = nb, lm = M, lk = K;
  const int tb = LIBXSMM_GEMM_FLAG_TRANS_B;
  libxsmm_dmmfunction knn = libxsmm_dmmdispatch(m, b, k, &lm, &lk, &lm, &one_, &zero, NULL, NULL);
  libxsmm_dmmfunction k0 = libxsmm_dmmdispatch(m, k, b, &lm, &lk, &lm, &one_, &zero, &tb, NULL);
  libxsmm_dmmfunction k1 = libxsmm_dmmdispatch(m, k, b, &lm, &lk, &lm, &one_, &one_, &tb, NULL);
  double fl = 2.0 * M * K * n, r[4] = {0, 0, 0, 0};
  int reps = (int)(1e8 / fl) + 1;
  BEST(r[0], cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, M, n, K, 1.0, W, M, A, K, 0.0,
                         Z, M));
  if (knn) BEST(r[1], for (int j = 0; j + nb <= n; j += nb) knn(W, A + (size_t)j * K, Z + (size_t)j * M));
  BEST(r[2], cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, M, K, n, 1.0, Z, M, A, K, 0.0,
                         dW, M));
  if (k0 && k1)
    BEST(r[3], k0(Z, A, dW); for (int j = nb; j + nb <= n; j += nb)
                                 k1(Z + (size_t)j * M, A + (size_t)j * K, dW));
  printf("%4d %4d %5d %4d | NN OpenBLAS %5.1f LIBXSMM %5.1f (%4.2fx) | NT OpenBLAS %5.1f LIBXSMM "
         "%5.1f (%4.2fx)\n", M, K, n, nb, r[0], r[1], r[1] / r[0], r[2], r[3], r[3] / r[2]);
  fflush(stdout);
  free(W), free(A), free(Z), free(dW);
}

int main(int argc, char **argv) {
  openblas_set_num_threads(1);
  printf("GFLOP/s, one thread, process CPU time, best of 5; m x k, n samples, LIBXSMM blocks of nb\n");
  if (argc == 5) {
    one(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    return 0;
  }
  static const int ms[] = {1, 4, 8, 16, 32, 64, 128, 256}, ks[] = {1, 4, 16, 64, 256};
  static const int ns[] = {256, 4096}, nbs[] = {64, 256};
  for (int a = 0; a < 2; a++)
    for (int c = 0; c < 2; c++)
      for (int i = 0; i < 8; i++)
        for (int j = 0; j < 5; j++) one(ms[i], ks[j], ns[a], nbs[c]);
  return 0;
}
