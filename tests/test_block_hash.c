/* test_block_hash.c — the caches' block-to-slot map (block_hash.h): its
 * sizes (3/4 full when reserved, grown past 4/5, never past what it can
 * hold) and its answers against a plain array, across the wrap of a
 * bucket count that is not a power of two. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>

#include "cluster/block_hash.h"

#define SLOTS 20000u

/* The owner: the key each slot holds. */
struct keys {
  uint64_t key[SLOTS];
};

static uint64_t
key_of (const void *owner, uint32_t slot)
{
  return ((const struct keys *) owner)->key[slot];
}

/* xorshift64: keys spread over 64 bits, reproducible. */
static uint64_t
next_random (uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void
test_reserve_is_three_quarters_full (void **state)
{
  (void) state;
  static struct keys k;
  uint64_t memory_bytes = 0;
  struct block_hash h;
  block_hash_init (&h, 1024, 0, key_of, &k, &memory_bytes);
  assert_int_equal (h.bucket_count, 1024);
  assert_int_equal (memory_bytes, 1024 * 4);
  block_hash_reserve (&h, 3000);                 /* 4000 buckets + 1: 3/4, never full */
  assert_int_equal (h.bucket_count, 4001);
  assert_int_equal (memory_bytes, 4001 * 4);     /* the old table given back */
  block_hash_reserve (&h, 10);                   /* never shrinks */
  assert_int_equal (h.bucket_count, 4001);
  block_hash_free (&h);
}

/* A reserved table takes entries up to 4/5 in place, then holds twice its
 * entries at 3/4; with max_entries it stops at what that many need. */
static void
test_growth_past_four_fifths (void **state)
{
  (void) state;
  static struct keys k;
  uint64_t memory_bytes = 0;
  struct block_hash h;
  block_hash_init (&h, 2, 0, key_of, &k, &memory_bytes);
  block_hash_reserve (&h, 3000);
  uint32_t slot = 0;
  for (; slot < 3200; slot++) {                  /* 3200 = 4/5 of 4001 (rounded down) */
    k.key[slot] = slot * 7919u;
    block_hash_insert (&h, slot);
  }
  assert_int_equal (h.bucket_count, 4001);
  k.key[slot] = slot * 7919u;
  block_hash_insert (&h, slot++);                /* 3201: twice that at 3/4 */
  assert_int_equal (h.bucket_count, (6402 * 4 + 2) / 3 + 1);
  assert_int_equal (memory_bytes, (uint64_t) h.bucket_count * 4);
  block_hash_free (&h);

  memory_bytes = 0;
  block_hash_init (&h, 2, 3300, key_of, &k, &memory_bytes);
  block_hash_reserve (&h, 3000);
  for (slot = 0; slot < 3300; slot++) {
    k.key[slot] = slot * 7919u;
    block_hash_insert (&h, slot);
  }
  assert_int_equal (h.bucket_count, (3300 * 4 + 2) / 3 + 1);     /* capped: 3300 at 3/4 */
  for (slot = 0; slot < 3300; slot++)
    assert_int_equal (block_hash_find (&h, k.key[slot]), slot);
  block_hash_free (&h);
}

/* Random inserts, finds and removes agree with a plain array at every
 * step, in tables grown from 2 buckets (odd counts on the way, probe runs
 * wrapping at their end) and in one reserved at once. */
static void
test_matches_a_plain_map (void **state)
{
  (void) state;
  static struct keys k;
  static bool present[SLOTS];
  for (int reserved = 0; reserved < 2; reserved++) {
    uint64_t seed = 88172645463325252u, memory_bytes = 0;
    struct block_hash h;
    block_hash_init (&h, 2, SLOTS, key_of, &k, &memory_bytes);
    if (reserved)
      block_hash_reserve (&h, SLOTS);
    for (uint32_t s = 0; s < SLOTS; s++) {
      /* a few narrow keys collide on purpose with each other's homes */
      k.key[s] = s % 5 == 0 ? s / 5 : next_random (&seed);
      present[s] = false;
    }
    uint32_t count = 0;
    for (int step = 0; step < 200000; step++) {
      uint32_t s = (uint32_t) (next_random (&seed) % SLOTS);
      if (present[s] && next_random (&seed) % 3 == 0) {
        block_hash_remove (&h, s);
        present[s] = false;
        count--;
      }
      else if (!present[s]) {
        assert_int_equal (block_hash_find (&h, k.key[s]), BLOCK_HASH_NONE);
        block_hash_insert (&h, s);
        present[s] = true;
        count++;
      }
      assert_int_equal (h.count, count);
      uint32_t probe = (uint32_t) (next_random (&seed) % SLOTS);
      assert_int_equal (block_hash_find (&h, k.key[probe]), present[probe] ? probe
                        : BLOCK_HASH_NONE);
      assert_true ((uint64_t) h.count * 5 <= (uint64_t) h.bucket_count * 4);
    }
    for (uint32_t s = 0; s < SLOTS; s++)
      assert_int_equal (block_hash_find (&h, k.key[s]), present[s] ? s : BLOCK_HASH_NONE);
    assert_int_equal (memory_bytes, (uint64_t) h.bucket_count * 4);
    block_hash_free (&h);
  }
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_reserve_is_three_quarters_full),
    cmocka_unit_test (test_growth_past_four_fifths),
    cmocka_unit_test (test_matches_a_plain_map),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
