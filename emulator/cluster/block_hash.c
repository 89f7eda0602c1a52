/* block_hash.c — the caches' block-to-slot map (block_hash.h says what
 * it is). */
#include "block_hash.h"

#include <stdbool.h>
#include <stdlib.h>

#include "layer.h"

static uint32_t
home_of (const struct block_hash *h, uint64_t key)
{
  return (uint32_t) ((key * UINT64_C (0x9E3779B97F4A7C15)) >> (64 - h->bits));
}

static uint32_t
mask_of (const struct block_hash *h)
{
  return (UINT32_C (1) << h->bits) - 1;
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
  uint32_t i = home_of (h, key), mask = mask_of (h);
  while (h->buckets[i] != 0 && key_at (h, i) != key)
    i = (i + 1) & mask;
  return i;
}

static void
alloc_buckets (struct block_hash *h, unsigned bits)
{
  h->bits = bits;
  h->buckets = cl_xcalloc ((size_t) 1 << bits, sizeof *h->buckets);
  if (h->memory_bytes)
    *h->memory_bytes += ((uint64_t) 1 << bits) * sizeof *h->buckets;
}

void
block_hash_init (struct block_hash *h, unsigned bits, block_hash_key_fn key, const void *owner,
                 uint64_t *memory_bytes)
{
  *h = (struct block_hash) { .key = key, .owner = owner, .memory_bytes = memory_bytes };
  alloc_buckets (h, bits);
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

/* The table in 1 << bits buckets, its entries moved over. */
static void
rehash (struct block_hash *h, unsigned bits)
{
  uint64_t buckets = (uint64_t) 1 << h->bits;
  uint32_t *old = h->buckets;
  alloc_buckets (h, bits);
  for (uint64_t i = 0; i < buckets; i++)
    if (old[i] != 0)
      h->buckets[bucket_of (h, h->key (h->owner, old[i] - 1))] = old[i];
  free (old);
  if (h->memory_bytes)
    *h->memory_bytes -= buckets * sizeof *old;
}

/* At most 3/4 full: linear probing's runs stay short. */
static bool
fits (unsigned bits, uint64_t entries)
{
  return entries * 4 <= ((uint64_t) 1 << bits) * 3;
}

void
block_hash_reserve (struct block_hash *h, uint64_t entries)
{
  unsigned bits = h->bits;
  while (bits < 31 && !fits (bits, entries))
    bits++;
  if (bits != h->bits)
    rehash (h, bits);
}

void
block_hash_insert (struct block_hash *h, uint32_t slot)
{
  if (!fits (h->bits, (uint64_t) h->count + 1))
    rehash (h, h->bits + 1);
  h->buckets[bucket_of (h, h->key (h->owner, slot))] = slot + 1;
  h->count++;
}

/* Entries after the hole in its probe run move back into it, so that no
 * lookup stops short at an empty bucket. */
void
block_hash_remove (struct block_hash *h, uint32_t slot)
{
  uint32_t mask = mask_of (h), hole = bucket_of (h, h->key (h->owner, slot));
  h->buckets[hole] = 0;
  h->count--;
  for (uint32_t i = (hole + 1) & mask; h->buckets[i] != 0; i = (i + 1) & mask) {
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
