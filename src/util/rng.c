/* rng.c -- Philox4x32-10 counter-based generator (Salmon et al., SC'11),
 * from Random123.
 * The key is derived from (seed, combo, replica, stream); the counter runs
 * from 0. Same key -> same numbers, on any rank, in any order of points. */
#include <math.h>

#include <Random123/philox.h>

#include "dynsweep/util.h"

/* Philox4x32 with 10 rounds from Random123 (Debian's librandom123-dev, the
 * reference implementation by its authors; header-only). The hand-written
 * rounds it replaced gave the same words (tests/test_data.c known answers,
 * Random123's own kat_vectors, and every determinism test). */
void ds_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) {
  philox4x32_ctr_t c = {{ctr[0], ctr[1], ctr[2], ctr[3]}};
  philox4x32_key_t k = {{key[0], key[1]}};
  philox4x32_ctr_t r = philox4x32_R(10, c, k);
  for (int i = 0; i < 4; i++) out[i] = r.v[i];
}

static uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

void ds_rng_init(ds_rng *r, uint64_t seed, uint64_t combo, uint32_t replica, uint32_t stream) {
  uint64_t k = splitmix64(seed);
  k = splitmix64(k ^ combo);
  k = splitmix64(k ^ (((uint64_t)replica << 32) | stream));
  r->key[0] = (uint32_t)k;
  r->key[1] = (uint32_t)(k >> 32);
  r->ctr[0] = r->ctr[1] = r->ctr[2] = r->ctr[3] = 0;
  r->idx = 4;
  r->have_spare = 0;
  r->spare = 0;
}

uint32_t ds_rng_u32(ds_rng *r) {
  if (r->idx == 4) {
    ds_philox4x32(r->key, r->ctr, r->buf);
    if (++r->ctr[0] == 0 && ++r->ctr[1] == 0 && ++r->ctr[2] == 0) ++r->ctr[3];
    r->idx = 0;
  }
  return r->buf[r->idx++];
}

uint64_t ds_rng_u64(ds_rng *r) {
  uint64_t hi = ds_rng_u32(r);
  return (hi << 32) | ds_rng_u32(r);
}

double ds_rng_uniform(ds_rng *r) {
  /* (k + 0.5) / 2^53: never 0, never 1 */
  return ((double)(ds_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

double ds_rng_normal(ds_rng *r) {
  if (r->have_spare) {
    r->have_spare = 0;
    return r->spare;
  }
  double u1 = ds_rng_uniform(r), u2 = ds_rng_uniform(r);
  double rad = sqrt(-2.0 * log(u1)), th = 2.0 * M_PI * u2;
  r->spare = rad * sin(th);
  r->have_spare = 1;
  return rad * cos(th);
}

uint64_t ds_fnv1a(const void *data, size_t len, uint64_t h) {
  const unsigned char *p = data;
  if (h == 0) h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
