#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
int ds_checks_passed, ds_checks_failed;
int ds_close_rel(double a, double b, double tol) {
  double s = fmax(fmax(fabs(a), fabs(b)), 1e-300);
  return fabs(a - b) <= tol * s;
}
int ds_check_report(const char *name) {
  printf("%s: %d passed, %d failed\n", name, ds_checks_passed, ds_checks_failed);
  return ds_checks_failed ? 1 : 0;
}

/* Reference singular values (LAPACK dgesdd on a copy), descending, into s
 * (min(m, n) values); returns LAPACK's info. */
void dgesdd_(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s,
             double *u, const int *ldu, double *vt, const int *ldvt, double *work,
             const int *lwork, int *iwork, int *info);
int ds_ref_singular_values(const double *A, int m, int n, double *s) {
  double *a = malloc((size_t)m * n * sizeof *a);
  memcpy(a, A, (size_t)m * n * sizeof *a);
  int k = m < n ? m : n, lwork = -1, info = 0, one = 1;
  int *iwork = malloc(8 * (size_t)k * sizeof *iwork);
  double q;
  dgesdd_("N", &m, &n, a, &m, s, NULL, &one, NULL, &one, &q, &lwork, iwork, &info);
  lwork = (int)q + 1;
  double *work = malloc((size_t)lwork * sizeof *work);
  dgesdd_("N", &m, &n, a, &m, s, NULL, &one, NULL, &one, work, &lwork, iwork, &info);
  free(work);
  free(iwork);
  free(a);
  return info;
}
