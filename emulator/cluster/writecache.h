/* writecache.h — the write buffer's state (dm-writecache in SSD mode),
 * shared by its target (layer_writecache.c: reads, writes, writeback and
 * its pause), the bookkeeping of its slots (writecache_slots.c: the slot
 * words, their chunks, the oldest-first queue, the hash from origin block
 * to slot) and its warm start (writecache_warm.c).  The slot accessors are
 * here, inline: every block read or written goes through them. */
#ifndef STORLAB_CLUSTER_WRITECACHE_H
#define STORLAB_CLUSTER_WRITECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block_hash.h"
#include "cluster_internal.h"
#include "ranges.h"
#include "core/units.h"

#define NO_SLOT BLOCK_HASH_NONE
#define SLOT_CHUNK_BITS 16u
#define SLOT_CHUNK (UINT32_C (1) << SLOT_CHUNK_BITS)   /* slots a chunk of state holds */

enum slot_state {
  SLOT_FREE,
  SLOT_DIRTY,                          /* in the hash and the queue */
  SLOT_TRIMMED,                        /* dropped, still in the queue: freed when reached */
  SLOT_WRITEBACK,                      /* in the hash, being copied to the origin */
  SLOT_WRITEBACK_REDIRTIED,            /* ... and overwritten meanwhile: dirty again after */
  SLOT_WRITEBACK_DROPPED,              /* trimmed while being copied: freed after */
};

#define SLOT_STATE_BITS 3u              /* enum slot_state */

/* A slot's state packed in one 64-bit word, low bits first: its state
 * (SLOT_STATE_BITS), the next slot in the oldest-first queue (link_bits,
 * all ones: none), the origin block it holds (the rest).  The split
 * follows the sizes: a 600 GB buffer of 4 KiB blocks needs 28 bits of
 * link, which leaves 33 for blocks (32 TiB of origin).  Three separate
 * fields (8 + 4 + 1 bytes) would cost 13 bytes a slot, this 8. */
struct slot_word_layout {
  unsigned link_bits;
  unsigned block_shift;                /* SLOT_STATE_BITS + link_bits */
  uint64_t link_none;                  /* (1 << link_bits) - 1 */
};

struct writecache {
  struct cl_target *origin;
  struct cl_target *buffer;
  struct cluster *cluster;
  uint64_t block_bytes;
  uint32_t blocks;                     /* slots in the buffer */
  uint32_t high_blocks;                /* writeback starts at this many dirty */
  uint32_t low_blocks;                 /* ... and stops below this many */
  uint32_t writeback_jobs;             /* copies in flight at most, 0: no limit */
  uint32_t run_max_blocks;

  struct cl_ranges warm;               /* randomly written regions to start full, in blocks */
  uint64_t warm_start_blocks;          /* a probe's steady fill, 0: the high watermark */
  uint32_t probe_mark_used;            /* a probe run's fill at its half */
  uint64_t probe_mark_writeback;       /* ... and its writeback_blocks */
  uint64_t warm_region_blocks;         /* the warm regions' blocks (warm_finish) */
  bool warm_sequential_only;           /* ... all of them sequentially written */
  struct cl_ranges warm_sequential;    /* sequentially written ones, one range each */
  struct cl_ranges warm_filled;        /* regions read: written once when made (adopt_fill) */
  bool warm_from_fill;                 /* the warm blocks are what that fill left */
  /* That fill's end, held as ranges, not block by block (a study's buffer
   * holds tens of millions of its blocks): origin blocks, merged, each
   * range's start its first block's place in slots from fill_first_slot
   * on.  Only read, it never changes; the first write or trim places its
   * blocks one by one (wc_materialize_fill_end). */
  struct cl_ranges fill_end;
  uint64_t fill_end_blocks;
  uint32_t fill_first_slot;

  struct slot_word_layout layout;
  uint64_t **chunks;                   /* SLOT_CHUNK slots' words each (the last: fewer),
                                          blocks / SLOT_CHUNK + 1, NULL: all free */
  uint32_t *chunk_used;                /* slots not free, per chunk */
  uint32_t used;                       /* slots not free */
  uint32_t cursor;                     /* the log's head: where the next slot is looked for */
  uint32_t queue_head;                 /* dirty and trimmed slots, oldest first */
  uint32_t queue_tail;
  uint32_t queue_count;
  uint32_t trimmed;                    /* SLOT_TRIMMED slots in the queue */

  struct block_hash hash;              /* origin block -> slot, of the dirty blocks */

  bool writeback_active;
  uint32_t writeback_inflight;         /* copies in flight, from their read to their write */
  uint64_t pause_ns;                   /* writeback waits this long after a write around */
  uint32_t around_inflight;            /* origin writes of blocks sent around the buffer */
  uint64_t around_end_ns;              /* ... the last one ended then */
  bool pause_wake_pending;             /* a pump is scheduled for the pause's end */
  bool writeback_paused;

  struct cl_io_queue waiting;          /* writes waiting for a free slot, in order */

  uint64_t write_hits;                 /* blocks overwritten in place */
  uint64_t writes_buffered;            /* write I/Os with blocks in the buffer */
  uint64_t writes_around;              /* write I/Os with blocks sent around a full buffer */
  uint64_t writes_around_blocks;       /* ... those blocks (the kernel's writes_around) */
  uint64_t writes_bypassed;            /* write I/Os larger than the buffer */
  uint64_t read_hits_blocks;
  uint64_t read_misses_blocks;
  uint64_t writeback_blocks;
  uint64_t warmed_blocks;              /* dirty from the start (warm_finish) */
  uint64_t warmed_sequential_blocks;   /* ... of them, ends of sequentially written regions */
  uint64_t writeback_ios;              /* copies: origin writes */
  uint64_t writeback_reads;            /* buffer reads, a pass's adjacent slots merged */
  uint64_t room_waits;                 /* writes that waited for a free slot */
  uint64_t writeback_pauses;           /* times writeback stopped for a write around */
};

/* ------------------------------------------------------------ slots -- */

/* The slot's word. */
static inline uint64_t *
word_of (const struct writecache *wc, uint32_t slot)
{
  return &wc->chunks[slot >> SLOT_CHUNK_BITS][slot & (SLOT_CHUNK - 1)];
}

static inline uint64_t
slot_block (const struct writecache *wc, uint32_t slot)
{
  return *word_of (wc, slot) >> wc->layout.block_shift;
}

static inline uint32_t
slot_next (const struct writecache *wc, uint32_t slot)
{
  uint64_t link = (*word_of (wc, slot) >> SLOT_STATE_BITS) & wc->layout.link_none;
  return link == wc->layout.link_none ? NO_SLOT : (uint32_t) link;
}

static inline enum slot_state
slot_state (const struct writecache *wc, uint32_t slot)
{
  return (enum slot_state) (*word_of (wc, slot) & ((1u << SLOT_STATE_BITS) - 1));
}

/* Sets the word's field at shift, mask wide, keeping the others. */
static inline void
word_set (uint64_t *word, unsigned shift, uint64_t mask, uint64_t value)
{
  *word = (*word & ~(mask << shift)) | (value << shift);
}

static inline void
set_block (struct writecache *wc, uint32_t slot, uint64_t block)
{
  unsigned shift = wc->layout.block_shift;
  word_set (word_of (wc, slot), shift, UINT64_MAX >> shift, block);
}

static inline void
set_next (struct writecache *wc, uint32_t slot, uint32_t next)
{
  uint64_t none = wc->layout.link_none;
  word_set (word_of (wc, slot), SLOT_STATE_BITS, none, next == NO_SLOT ? none : next);
}

static inline void
set_state (struct writecache *wc, uint32_t slot, enum slot_state state)
{
  word_set (word_of (wc, slot), 0, (1u << SLOT_STATE_BITS) - 1, state);
}

/* The hash's key (block_hash.h): the block the slot holds. */
static inline uint64_t
block_of_slot (const void *owner, uint32_t slot)
{
  return slot_block (owner, slot);
}

/* Slots in chunk index (the last chunk holds fewer). */
static inline uint32_t
chunk_slots (const struct writecache *wc, uint32_t index)
{
  return (uint32_t) sl_min_u64 (SLOT_CHUNK, wc->blocks - (uint64_t) index * SLOT_CHUNK);
}

static inline uint32_t
free_slots (const struct writecache *wc)
{
  return wc->blocks - wc->used;
}

/* Slots a block could take now: free, or trimmed (reclaimed on the way). */
static inline uint32_t
room (const struct writecache *wc)
{
  return free_slots (wc) + wc->trimmed;
}

/* Dirty blocks waiting for writeback (the queue without trimmed slots). */
static inline uint32_t
queued_blocks (const struct writecache *wc)
{
  return wc->queue_count - wc->trimmed;
}

static inline uint32_t
hash_find (const struct writecache *wc, uint64_t block)
{
  return block_hash_find (&wc->hash, block);
}

/* writecache_slots.c: a slot freed (its block out of the hash already),
 * its chunk released with the chunk's last slot; the oldest-first queue
 * of dirty and trimmed slots: one pushed at the tail, the head popped
 * (there is one), the trimmed ones freed (compact); the buffered blocks
 * of [first, end) dropped; a block placed in the buffer, in its slot
 * (NO_SLOT: a free slot, there is one), which is returned; the slot
 * word's split for a buffer of `blocks` slots. */
void wc_slot_free (struct writecache *wc, uint32_t slot);
void wc_queue_push (struct writecache *wc, uint32_t slot);
uint32_t wc_queue_pop (struct writecache *wc);
void wc_queue_compact (struct writecache *wc);
void wc_drop_blocks (struct writecache *wc, uint64_t first, uint64_t end);
uint32_t wc_place_block (struct writecache *wc, uint64_t block, uint32_t slot);
struct slot_word_layout wc_slot_word_layout (uint64_t blocks);

/* writecache_warm.c: the target's warm-up ops (struct cl_target_ops in
 * layer.h), and the fill's end a warm start holds as ranges, placed block
 * by block before the buffer first changes (a write or a trim). */
void writecache_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes);
void writecache_warm_settle (struct cl_target *t);
void writecache_warm_probe_mark (struct cl_target *t);
uint64_t writecache_warm_probe_fill (const struct cl_target *t);
void writecache_warm_start_fill (struct cl_target *t, uint64_t blocks);
uint64_t writecache_warm_need_bytes (struct cl_target *t);
int writecache_warm_finish (struct cl_target *t, char *err, size_t err_bytes);
void wc_materialize_fill_end (struct writecache *wc);

#endif
