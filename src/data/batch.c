/* batch.c -- minibatches without replacement and column gathers.
 *
 * The batcher owns a copy of the rng it was given. Epoch e's order is a fresh
 * Fisher-Yates shuffle of the identity 0..n-1 (j = u64 mod (i+1), i = n-1..1),
 * drawn when the epoch starts: epoch 0 at ds_batcher_init, epoch e+1 when a
 * batch runs past the end of epoch e (that batch takes the rest of epoch e and
 * continues with the start of epoch e+1). So the index stream depends only on
 * the rng key and n, and each consecutive run of n indices starting at a
 * multiple of n is a permutation. bt->epoch is the epoch bt->perm belongs to;
 * bt->pos is the next unused position in it. */
#include <stdlib.h>
#include <string.h>

#include "dynsweep/data.h"

static void new_epoch(ds_batcher *bt) {
  int n = bt->n;
  for (int i = 0; i < n; i++) bt->perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(ds_rng_u64(&bt->rng) % (uint64_t)(i + 1));
    int t = bt->perm[i];
    bt->perm[i] = bt->perm[j];
    bt->perm[j] = t;
  }
  bt->pos = 0;
}

int ds_batcher_init(ds_batcher *bt, int n, int b, const ds_rng *rng) {
  memset(bt, 0, sizeof *bt);
  if (n < 1) return ds_fail(DS_EINPUT, "batcher: need at least one sample (n = %d)", n);
  if (b <= 0) b = n; /* full batch */
  if (b > n) return ds_fail(DS_EINPUT, "batcher: batch size %d exceeds the %d samples", b, n);
  bt->perm = ds_calloc((size_t)n, sizeof *bt->perm);
  if (!bt->perm) return DS_ENOMEM;
  bt->n = n;
  bt->b = b;
  bt->rng = *rng;
  bt->epoch = 0;
  new_epoch(bt);
  return DS_OK;
}

void ds_batcher_free(ds_batcher *bt) {
  if (!bt) return;
  free(bt->perm);
  memset(bt, 0, sizeof *bt);
}

const int *ds_batcher_next(ds_batcher *bt, int *idx_buf) {
  for (int k = 0; k < bt->b; k++) {
    if (bt->pos == bt->n) {
      new_epoch(bt);
      bt->epoch++;
    }
    idx_buf[k] = bt->perm[bt->pos++];
  }
  return idx_buf;
}

void ds_dataset_gather(const ds_dataset *d, const int *idx, int b, double *Xb, double *Yb) {
  for (int k = 0; k < b; k++) {
    size_t j = (size_t)idx[k];
    if (Xb) memcpy(Xb + (size_t)k * d->d_in, d->X + j * d->d_in, (size_t)d->d_in * sizeof *Xb);
    if (Yb) memcpy(Yb + (size_t)k * d->d_out, d->Y + j * d->d_out, (size_t)d->d_out * sizeof *Yb);
  }
}
