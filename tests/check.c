#include <math.h>
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
