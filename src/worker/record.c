/* record.c -- the record schedule: which steps of a point are recorded.
 * Used by the point loop (point.c) and by the record.spectra side
 * (diagrec.c). */
#include <math.h>
#include <stdint.h>

#include "dynsweep/worker.h"

int ds_worker_record_step(const ds_record_spec *r, int64_t t, int64_t steps) {
  if (t == 0 || t == steps) return 1;
  if (r->every > 0 && t % r->every == 0) return 1;
  if (r->per_decade > 0) {
    /* t is on the log grid if it is the rounding of 10^(k/per_decade) for some k */
    double k = floor(log10((double)t) * r->per_decade);
    for (int d = 0; d <= 1; d++) {
      double v = floor(pow(10.0, (k + d) / r->per_decade) + 0.5);
      if ((int64_t)v == t) return 1;
    }
  }
  return 0;
}
