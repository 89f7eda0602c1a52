/* block_hash.c — the caches' block-to-slot map (block_hash.h says what
 * it is). */
#include "block_hash.h"

#include <stdbool.h>
#include <stdlib.h>

#include "layer.h"

/* Buckets at most: bucket indices and slot + 1 stay in 32 bits. */
#define MAX_BUCKETS (UINT32_C (1) << 31)

/* The key's home bucket: a multiplicative mix of the key, its high bits
 * scaled to the bucket count (no power of two needed). */
static uint32_t
home_of (const struct block_hash *h, uint64_t key)
{
  uint64_t mixed = key * UINT64_C (0x9E3779B97F4A7C15);
  return (uint32_t) (((unsigned __int128) mixed * h->bucket_count) >> 64);
}

static uint32_t
next_bucket (const struct block_hash *h, uint32_t i)
{
  return i + 1 == h->bucket_count ? 0 : i + 1;
}

static uint64_t
key_at (const struct block_hash *h, uint32_t bucket)
{
  return h->key (h->owner, h->buckets[bucket] - 1);
}

/* The bucket holding key, or the empty one where it would go. */
static uint32_t
bucket_of (const struct block_hash *h, uint64_t key)
{
  uint32_t i = home_of (h, key);
  while (h->buckets[i] != 0 && key_at (h, i) != key)
    i = next_bucket (h, i);
  return i;
}

/* The first empty bucket from key's home on: where a key not in the table
 * goes.  No key is read back on the way (each would be a slot's, another
 * cache line), so an insert touches the buckets only. */
static uint32_t
free_bucket_of (const struct block_hash *h, uint64_t key)
{
  uint32_t i = home_of (h, key);
  while (h->buckets[i] != 0)
    i = next_bucket (h, i);
  return i;
}

static void
alloc_buckets (struct block_hash *h, uint32_t bucket_count)
{
  h->bucket_count = bucket_count;
  h->buckets = cl_xcalloc (bucket_count, sizeof *h->buckets);
  if (h->memory_bytes)
    *h->memory_bytes += (uint64_t) bucket_count * sizeof *h->buckets;
}

void
block_hash_init (struct block_hash *h, uint32_t min_buckets, uint32_t max_entries,
                 block_hash_key_fn key, const void *owner, uint64_t *memory_bytes)
{
  *h = (struct block_hash) { .key = key, .owner = owner, .memory_bytes = memory_bytes,
                             .max_entries = max_entries ? max_entries : UINT32_MAX };
  alloc_buckets (h, min_buckets < 2 ? 2 : min_buckets);
}

void
block_hash_free (struct block_hash *h)
{
  free (h->buckets);
  h->buckets = NULL;
}

uint32_t
block_hash_find (const struct block_hash *h, uint64_t key)
{
  if (h->count == 0)
    return BLOCK_HASH_NONE;            /* an empty buffer: no miss on the table */
  return h->buckets[bucket_of (h, key)] - 1;           /* 0 - 1: BLOCK_HASH_NONE */
}

void
block_hash_prefetch (const struct block_hash *h, uint64_t key)
{
  __builtin_prefetch (&h->buckets[home_of (h, key)], 1);
}

/* The table in bucket_count buckets, its entries moved over. */
static void
rehash (struct block_hash *h, uint32_t bucket_count)
{
  uint32_t old_count = h->bucket_count, *old = h->buckets;
  alloc_buckets (h, bucket_count);
  for (uint32_t i = 0; i < old_count; i++)
    if (old[i] != 0)
      h->buckets[free_bucket_of (h, h->key (h->owner, old[i] - 1))] = old[i];
  free (old);
  if (h->memory_bytes)
    *h->memory_bytes -= (uint64_t) old_count * sizeof *old;
}

/* Buckets that hold entries 3/4 full: linear probing's runs stay short
 * (about 8 probes for a key that is not there, 2.5 for one that is). */
static uint32_t
buckets_for (uint64_t entries)
{
  uint64_t buckets = (entries * 4 + 2) / 3 + 1;        /* + 1: never full */
  return (uint32_t) (buckets < MAX_BUCKETS ? buckets : MAX_BUCKETS);
}

uint64_t
block_hash_reserve_bytes (const struct block_hash *h, uint64_t entries)
{
  uint32_t want = buckets_for (entries);
  return want > h->bucket_count ? (uint64_t) want * sizeof *h->buckets : 0;
}

void
block_hash_reserve (struct block_hash *h, uint64_t entries)
{
  uint32_t want = buckets_for (entries);
  if (want > h->bucket_count)
    rehash (h, want);
}

/* Past 4/5 full the table grows to hold twice its entries at 3/4 (or the
 * most it will ever hold, if fewer): doubling keeps inserts O(1) over
 * time; the gap between 3/4 and 4/5 is a reserved table's room. */
static void
grow_for_one_more (struct block_hash *h)
{
  uint64_t entries = (uint64_t) h->count + 1;
  if (entries * 5 <= (uint64_t) h->bucket_count * 4)
    return;
  uint64_t target = entries * 2;
  if (target > h->max_entries)
    target = h->max_entries > entries ? h->max_entries : entries;
  uint32_t want = buckets_for (target);
  if (want > h->bucket_count)
    rehash (h, want);
}

void
block_hash_insert (struct block_hash *h, uint32_t slot)
{
  grow_for_one_more (h);
  h->buckets[free_bucket_of (h, h->key (h->owner, slot))] = slot + 1;
  h->count++;
}

/* Entries after the hole in its probe run move back into it, so that no
 * lookup stops short at an empty bucket. */
void
block_hash_remove (struct block_hash *h, uint32_t slot)
{
  uint32_t hole = bucket_of (h, h->key (h->owner, slot));
  h->buckets[hole] = 0;
  h->count--;
  for (uint32_t i = next_bucket (h, hole); h->buckets[i] != 0; i = next_bucket (h, i)) {
    uint32_t home = home_of (h, key_at (h, i));
    /* the entry may fill the hole unless its home lies in (hole, i] */
    bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!stays) {
      h->buckets[hole] = h->buckets[i];
      h->buckets[i] = 0;
      hole = i;
    }
  }
}
