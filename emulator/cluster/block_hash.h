/* block_hash.h — the write buffer's map from an origin block number to
 * the slot that holds it (the snapshot redo log's from a chunk to its
 * exception).  Open addressing with linear probing; a bucket is 4 bytes
 * (slot + 1, 0 empty): the key of an entry is read back through its slot
 * with the owner's key function, so the table costs 4 bytes a bucket
 * whatever the keys' width.  Removal moves the entries after the hole
 * back (no tombstones).
 *
 * The bucket count is any number (a key's home is scaled into it), not a
 * power of two, so a table reserved for a known count is 3/4 full rather
 * than anywhere from 3/8 to 3/4: at the write buffer's tens of millions
 * of blocks that is 5.3 bytes a block instead of up to 10.7.  It grows
 * (to twice its entries, at most max_entries, at 3/4) only past 4/5, so
 * a table reserved for a warm buffer takes the few more blocks a run
 * adds without doubling. */
#ifndef STORLAB_CLUSTER_BLOCK_HASH_H
#define STORLAB_CLUSTER_BLOCK_HASH_H

#include <stdint.h>

#define BLOCK_HASH_NONE UINT32_MAX

/* The key the slot holds (the block or chunk number the owner stored). */
typedef uint64_t (*block_hash_key_fn) (const void *owner, uint32_t slot);

struct block_hash {
  uint32_t *buckets;                   /* slot + 1, 0 empty */
  uint32_t bucket_count;
  uint32_t count;                      /* entries */
  uint32_t max_entries;                /* the most it will hold, UINT32_MAX: no bound */
  block_hash_key_fn key;
  const void *owner;
  uint64_t *memory_bytes;              /* the table's size is counted here */
};

/* An empty table of min_buckets buckets (at least 2), for at most
 * max_entries entries (0: no bound below the 32-bit slots'). */
void block_hash_init (struct block_hash *h, uint32_t min_buckets, uint32_t max_entries,
                      block_hash_key_fn key, const void *owner, uint64_t *memory_bytes);
void block_hash_free (struct block_hash *h);
/* The slot holding key, or BLOCK_HASH_NONE. */
uint32_t block_hash_find (const struct block_hash *h, uint64_t key);
/* Room for entries in all without growing on the way (a warm-up that
 * knows how many it will add): the table 3/4 full with them. */
void block_hash_reserve (struct block_hash *h, uint64_t entries);
/* The bytes block_hash_reserve (h, entries) allocates (0: the table holds
 * them already); the old table is freed only after the new one is full. */
uint64_t block_hash_reserve_bytes (const struct block_hash *h, uint64_t entries);
/* A hint that key will be looked up or inserted soon: its home bucket is
 * fetched into the cache meanwhile. */
void block_hash_prefetch (const struct block_hash *h, uint64_t key);
/* Adds slot under the key it holds, which is not in the table yet. */
void block_hash_insert (struct block_hash *h, uint32_t slot);
/* Removes slot, which is in the table and still holds its key. */
void block_hash_remove (struct block_hash *h, uint32_t slot);

#endif
