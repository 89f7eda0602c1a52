/* job_permutation.c — a keyed permutation of a job's blocks per pass
 * (job_permutation.h). */
#include "job_permutation.h"

#include <string.h>

#include "job_rng.h"

/* A round function: one multiply by an odd constant, its high half folded
 * onto the low (every input bit reaches the bits kept). */
static inline uint64_t
round_mix (uint64_t x)
{
  x *= UINT64_C (0x9E3779B97F4A7C15);
  return x ^ (x >> 32);
}

void
sl_job_permutation_init (struct sl_job_permutation *p, uint64_t blocks)
{
  memset (p, 0, sizeof *p);
  p->blocks = blocks;
  unsigned bits = 0;
  while (bits < 64 && (UINT64_C (1) << bits) < blocks)
    bits++;
  p->half_bits = (bits + 1) / 2;
  p->taken = blocks;                   /* the first call keys the first pass */
}

static uint64_t
feistel (const struct sl_job_permutation *p, uint64_t x)
{
  unsigned h = p->half_bits;
  uint64_t mask = (UINT64_C (1) << h) - 1;
  uint64_t left = x >> h, right = x & mask;
  for (int round = 0; round < 4; round++) {
    uint64_t next = left ^ (round_mix (right ^ p->keys[round]) & mask);
    left = right;
    right = next;
  }
  return (left << h) | right;
}

uint64_t
sl_job_permutation_next (struct sl_job_permutation *p, struct sl_job_rng *rng)
{
  if (p->blocks <= 1)
    return 0;
  if (p->taken == p->blocks) {
    for (int round = 0; round < 4; round++)
      p->keys[round] = sl_job_rng_next (rng);
    p->taken = 0;
  }
  /* a bijection on [0, 4^half_bits) walked until it lands in [0, blocks):
   * a bijection on [0, blocks) */
  uint64_t x = p->taken++;
  do
    x = feistel (p, x);
  while (x >= p->blocks);
  return x;
}
