/* writecache_slots.c — the write buffer's bookkeeping (the target is
 * layer_writecache.c, its warm start writecache_warm.c): which origin
 * block each slot of the buffer holds and in what state, the chunks that
 * state is kept in, the oldest-first queue writeback takes its blocks
 * from, and the blocks placed in the buffer and dropped from it.
 *
 * Memory grows with the blocks used, not with the buffer: a slot's state
 * is one 64-bit word (origin block, next slot in the oldest-first queue,
 * state: see struct slot_word_layout), in chunks of 65536 slots, each
 * allocated when the log reaches it and released when its last slot is
 * freed.  Blocks leave the buffer oldest first, so the slots in use are
 * one stretch of the log and the chunks cover it (and the odd block
 * written again while it was copied, which keeps its slot).  The hash
 * from origin block to slot (block_hash.h: 4 bytes a bucket, keys read
 * through the slots) is reserved 3/4 full for a warm start's blocks and
 * grows with them past that.  A full-size buffer holds ~10^8 dirty
 * blocks, so these ~13 bytes a block (8 + 4 / 0.75) are most of a cluster
 * model's memory. */
#define _GNU_SOURCE
#include "writecache.h"

#include <stdlib.h>

#include "layer.h"

/* ------------------------------------------------------------ slots -- */

/* All free: SLOT_FREE is 0. */
static void
chunk_alloc (struct writecache *wc, uint32_t index)
{
  size_t bytes = chunk_slots (wc, index) * sizeof (uint64_t);
  wc->chunks[index] = cl_xcalloc (1, bytes);
  wc->cluster->memory_bytes += bytes;
}

static void
chunk_release (struct writecache *wc, uint32_t index)
{
  free (wc->chunks[index]);
  wc->chunks[index] = NULL;
  wc->cluster->memory_bytes -= chunk_slots (wc, index) * sizeof (uint64_t);
}

/* The first free slot at or after the cursor, wrapping (there is one:
 * free_slots > 0).  A chunk not allocated is all free, a full one is
 * passed whole; in a chunk in use the log's head usually finds the next
 * slot free. */
static uint32_t
slot_take (struct writecache *wc)
{
  uint32_t slot = wc->cursor;
  for (;;) {
    if (slot >= wc->blocks)
      slot = 0;
    uint32_t index = slot >> SLOT_CHUNK_BITS;
    uint32_t end = index * SLOT_CHUNK + chunk_slots (wc, index);
    if (wc->chunks[index] == NULL) {
      chunk_alloc (wc, index);
      break;
    }
    if (wc->chunk_used[index] < chunk_slots (wc, index)) {
      while (slot < end && slot_state (wc, slot) != SLOT_FREE)
        slot++;
      if (slot < end)
        break;
    }
    slot = end;
  }
  wc->chunk_used[slot >> SLOT_CHUNK_BITS]++;
  wc->used++;
  wc->cursor = slot + 1;
  return slot;
}

void
wc_slot_free (struct writecache *wc, uint32_t slot)
{
  uint32_t index = slot >> SLOT_CHUNK_BITS;
  set_state (wc, slot, SLOT_FREE);
  wc->used--;
  if (--wc->chunk_used[index] == 0)
    chunk_release (wc, index);
}

/* ------------------------------------------- the oldest-first queue -- */

void
wc_queue_push (struct writecache *wc, uint32_t slot)
{
  set_next (wc, slot, NO_SLOT);
  if (wc->queue_count == 0)
    wc->queue_head = slot;
  else
    set_next (wc, wc->queue_tail, slot);
  wc->queue_tail = slot;
  wc->queue_count++;
}

uint32_t
wc_queue_pop (struct writecache *wc)
{
  uint32_t slot = wc->queue_head;
  wc->queue_head = slot_next (wc, slot);
  wc->queue_count--;
  return slot;
}

/* Frees the trimmed slots still in the queue, keeping the others' order. */
void
wc_queue_compact (struct writecache *wc)
{
  uint32_t kept = 0, last = NO_SLOT, slot = wc->queue_head, count = wc->queue_count;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t next = slot_next (wc, slot);
    if (slot_state (wc, slot) == SLOT_TRIMMED)
      wc_slot_free (wc, slot);
    else {
      if (kept++ == 0)
        wc->queue_head = slot;
      else
        set_next (wc, last, slot);
      last = slot;
    }
    slot = next;
  }
  if (kept > 0)
    set_next (wc, last, NO_SLOT);
  wc->queue_tail = last;
  wc->queue_count = kept;
  wc->trimmed = 0;
}

/* ----------------------------------------------------------- blocks -- */

/* Drops slot's block from the buffer: its data is no longer wanted. */
static void
drop_slot (struct writecache *wc, uint32_t slot)
{
  block_hash_remove (&wc->hash, slot);
  if (slot_state (wc, slot) == SLOT_DIRTY) {
    set_state (wc, slot, SLOT_TRIMMED);
    wc->trimmed++;
  }
  else
    set_state (wc, slot, SLOT_WRITEBACK_DROPPED);
}

/* Drops the buffered blocks in [first, end): block by block for a short
 * range, over the slots for one longer than the buffer (a whole-device
 * discard). */
void
wc_drop_blocks (struct writecache *wc, uint64_t first, uint64_t end)
{
  if (end <= first || wc->hash.count == 0)
    return;
  if (end - first <= wc->blocks) {
    for (uint64_t b = first; b < end; b++) {
      uint32_t slot = hash_find (wc, b);
      if (slot != NO_SLOT)
        drop_slot (wc, slot);
    }
  }
  else {
    for (uint32_t slot = 0; slot < wc->blocks; slot++) {
      if (wc->chunks[slot >> SLOT_CHUNK_BITS] == NULL) {
        slot |= SLOT_CHUNK - 1;        /* all free: on to the next chunk */
        continue;
      }
      enum slot_state s = slot_state (wc, slot);
      uint64_t block = slot_block (wc, slot);
      bool hashed = s == SLOT_DIRTY || s == SLOT_WRITEBACK || s == SLOT_WRITEBACK_REDIRTIED;
      if (hashed && block >= first && block < end)
        drop_slot (wc, slot);
    }
  }
  if (wc->trimmed > 0 && (uint64_t) wc->trimmed * 4 > wc->queue_count)
    wc_queue_compact (wc);
}

/* Block goes to the buffer: at slot if the buffer holds it (NO_SLOT: it
 * does not, and a free slot takes it). */
uint32_t
wc_place_block (struct writecache *wc, uint64_t block, uint32_t slot)
{
  if (slot != NO_SLOT) {
    wc->write_hits++;
    if (slot_state (wc, slot) == SLOT_WRITEBACK)
      set_state (wc, slot, SLOT_WRITEBACK_REDIRTIED);
    return slot;
  }
  slot = slot_take (wc);
  set_block (wc, slot, block);
  set_state (wc, slot, SLOT_DIRTY);
  block_hash_insert (&wc->hash, slot);
  wc_queue_push (wc, slot);
  return slot;
}

/* ----------------------------------------------------------- layout -- */

/* The slot word's split for a buffer of `blocks` slots: link values 0 to
 * blocks - 1 and all ones for none. */
struct slot_word_layout
wc_slot_word_layout (uint64_t blocks)
{
  unsigned link_bits = 1;
  while (((UINT64_C (1) << link_bits) - 1) < blocks)
    link_bits++;
  return (struct slot_word_layout) { .link_bits = link_bits,
                                     .block_shift = SLOT_STATE_BITS + link_bits,
                                     .link_none = (UINT64_C (1) << link_bits) - 1 };
}
