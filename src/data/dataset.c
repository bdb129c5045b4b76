/* dataset.c -- ownership of ds_dataset buffers. */
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"

int ds_dataset_alloc(ds_dataset *d, int n, int d_in, int d_out) {
  memset(d, 0, sizeof *d);
  d->X = ds_calloc((size_t)d_in * n, sizeof *d->X);
  d->Y = ds_calloc((size_t)d_out * n, sizeof *d->Y);
  if (!d->X || !d->Y) {
    ds_dataset_free(d);
    return DS_ENOMEM;
  }
  d->n = n;
  d->d_in = d_in;
  d->d_out = d_out;
  return DS_OK;
}

void ds_dataset_free(ds_dataset *d) {
  if (!d) return;
  free(d->X);
  free(d->Y);
  memset(d, 0, sizeof *d);
}
