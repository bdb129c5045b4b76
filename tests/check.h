/* check.h -- minimal assertion helpers for the C tests. A test binary exits
 * non-zero if any check failed and prints "N passed, N failed". */
#ifndef DS_CHECK_H
#define DS_CHECK_H
#include <stdio.h>
extern int ds_checks_passed, ds_checks_failed;
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) ds_checks_passed++;                                              \
    else {                                                                     \
      ds_checks_failed++;                                                      \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)
/* |a-b| <= tol * max(|a|,|b|,tiny) */
int ds_close_rel(double a, double b, double tol);
int ds_check_report(const char *name); /* prints summary, returns exit code */
/* Singular values of A (m x n, column-major) by LAPACK dgesdd on a copy,
 * descending, into s (min(m, n) values); returns LAPACK's info. */
int ds_ref_singular_values(const double *A, int m, int n, double *s);
#endif
