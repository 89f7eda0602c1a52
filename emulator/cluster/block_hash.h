/* block_hash.h — the write buffer's map from an origin block number to
 * the slot that holds it (the read cache indexes its chunks directly).  Open addressing with linear probing; a bucket
 * is 4 bytes (slot + 1, 0 empty): the key of an entry is read back
 * through its slot with the owner's key function, so the table costs 4
 * bytes a bucket whatever the keys' width.  Removal moves the entries
 * after the hole back (no tombstones), and the table doubles when an
 * insertion would fill it past 3/4. */
#ifndef STORLAB_CLUSTER_BLOCK_HASH_H
#define STORLAB_CLUSTER_BLOCK_HASH_H

#include <stdint.h>

#define BLOCK_HASH_NONE UINT32_MAX

/* The key the slot holds (the block or chunk number the owner stored). */
typedef uint64_t (*block_hash_key_fn) (const void *owner, uint32_t slot);

struct block_hash {
  uint32_t *buckets;                   /* slot + 1, 0 empty */
  unsigned bits;                       /* 1 << bits buckets */
  uint32_t count;                      /* entries */
  block_hash_key_fn key;
  const void *owner;
  uint64_t *memory_bytes;              /* the table's size is counted here */
};

/* An empty table of 1 << bits buckets (bits 1 to 31). */
void block_hash_init (struct block_hash *h, unsigned bits, block_hash_key_fn key,
                      const void *owner, uint64_t *memory_bytes);
void block_hash_free (struct block_hash *h);
/* The slot holding key, or BLOCK_HASH_NONE. */
uint32_t block_hash_find (const struct block_hash *h, uint64_t key);
/* Room for entries in all without growing on the way (a warm-up that
 * knows how many it will add). */
void block_hash_reserve (struct block_hash *h, uint64_t entries);
/* Adds slot under the key it holds, which is not in the table yet. */
void block_hash_insert (struct block_hash *h, uint32_t slot);
/* Removes slot, which is in the table and still holds its key. */
void block_hash_remove (struct block_hash *h, uint32_t slot);

#endif
