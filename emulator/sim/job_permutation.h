/* job_permutation.h — fio's random map without its memory: each pass of a
 * random job takes every block of its region once, in a random order, and
 * the next pass another (jobfile.h, sl_job_stream). */
#ifndef STORLAB_JOB_PERMUTATION_H
#define STORLAB_JOB_PERMUTATION_H

#include <stdint.h>

struct sl_job_rng;

/* A random order of n blocks: a balanced Feistel network of 4 rounds over
 * the smallest even number of bits that holds n, walked until it lands
 * below n (at most 4 steps on average), keyed per pass from the stream's
 * generator. */
struct sl_job_permutation {
  uint64_t blocks;
  unsigned half_bits;
  uint64_t keys[4];
  uint64_t taken;                      /* blocks of this pass so far */
};

void sl_job_permutation_init (struct sl_job_permutation *p, uint64_t blocks);
/* The next block of the pass; a new pass, in a new order, after the last. */
uint64_t sl_job_permutation_next (struct sl_job_permutation *p, struct sl_job_rng *rng);

#endif
