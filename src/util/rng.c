/* rng.c -- Philox4x32-10 counter-based generator (Salmon et al., SC'11).
 * The key is derived from (seed, combo, replica, stream); the counter runs
 * from 0. Same key -> same numbers, on any rank, in any order of points. */
#include <math.h>

#include "dynsweep/util.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void ds_philox4x32(const uint32_t key[2], const uint32_t ctr[4], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
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
