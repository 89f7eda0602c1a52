/* job_rng.h — the random generator of a job's I/O stream (jobfile.h) and
 * of its passes (job_permutation.h). */
#ifndef STORLAB_JOB_RNG_H
#define STORLAB_JOB_RNG_H

#include <stdint.h>

struct sl_job_rng {
  uint64_t s[4];
};

/* xoshiro256** (Blackman & Vigna), state filled by splitmix64 so any seed,
 * 0 included, gives a good state. */
void sl_job_rng_seed (struct sl_job_rng *rng, uint64_t seed);

static inline uint64_t
sl_job_rng_rotl (uint64_t x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline uint64_t
sl_job_rng_next (struct sl_job_rng *rng)
{
  uint64_t *s = rng->s;
  uint64_t result = sl_job_rng_rotl (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = sl_job_rng_rotl (s[3], 45);
  return result;
}

/* Uniform in [0, bound) by Lemire's multiply-shift: bias below
 * bound / 2^64, far under anything a simulation can resolve. */
__extension__ typedef unsigned __int128 sl_job_u128;

static inline uint64_t
sl_job_rng_below (struct sl_job_rng *rng, uint64_t bound)
{
  return (uint64_t) (((sl_job_u128) sl_job_rng_next (rng) * bound) >> 64);
}

#endif
