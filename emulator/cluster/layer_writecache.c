/* layer_writecache.c — dm-writecache in SSD mode: the disk group's write
 * buffer.  Writes land in blocks of a buffer on the cache SSD and complete
 * there; the blocks go to the origin (the capacity stack) later, oldest
 * first, when the buffer fills past a watermark.  Behaviour from the
 * kernel's Documentation/admin-guide/device-mapper/writecache.rst and the
 * SSD paths of drivers/md/dm-writecache.c:
 *   - the buffer is cut in block_bytes blocks (4096); a block already in
 *     it is overwritten in place, a new one takes the first free slot at
 *     or after the one taken last, wrapping at the end (SSD mode keeps its
 *     free blocks in a tree sorted by position and walks it with
 *     current_free): the buffer fills like a log, so blocks written one
 *     after the other sit side by side.  The write goes to the buffer at
 *     its slots (runs of consecutive slots as one I/O each) and completes
 *     when they are done.  The buffer is persistent: a FUA write completes
 *     the same way (its buffer writes carry FUA to the SSD);
 *   - writeback starts when the used blocks reach high_watermark_percent
 *     and goes on until they drop below low_watermark_percent (the
 *     kernel's thresholds, rounded as it rounds them, with blocks being
 *     written back counted as free).  A writeback pass takes the oldest
 *     blocks, in age order, at most 64 (WRITEBACK_LATENCY: the kernel's
 *     pass walks that many, then queues itself again); each run of them
 *     adjacent both on the origin and in the buffer (at most 1 MiB, a
 *     bio's worth) is one copy, a buffer read then an origin write
 *     (kcopyd).  kcopyd submits a pass's reads under one block plug, so
 *     the reads of adjacent slots merge: a pass reads each run of
 *     consecutive slots with one I/O (in the lab, 4320 blocks written back
 *     in 75 reads of the cache device), and each copy goes to the origin
 *     when its read is done.  Passes go on while fewer than
 *     writeback_jobs copies are in flight.  A slot is free once its origin
 *     write completed;
 *   - a block overwritten while it is written back stays dirty: it goes
 *     back in the queue when that copy is done (the kernel takes a new
 *     slot instead; the data to write back later is the same);
 *   - a full buffer (no free slot) does not hold writes back: a block the
 *     write brings that the buffer does not hold goes straight to the
 *     origin (the kernel's write-around: its writes_around counts these
 *     blocks), runs of such blocks as one origin I/O each, while blocks
 *     the buffer holds are still overwritten there, so no buffered copy
 *     goes stale and none is dropped (the kernel cuts the origin I/O at
 *     the next buffered block).  A write that fills the last free slots
 *     goes partly to the buffer, partly around.  The one wait is the
 *     kernel's: a block being written back, overwritten while no slot is
 *     free, waits (with the rest of its write; the parts before it are
 *     issued) until writeback frees a slot, then the write goes on;
 *   - a write around the buffer pauses writeback: a pass starts only when
 *     no write around is in flight and the last one ended pause_ns ago
 *     (the kernel's pause_writeback, 3 s in SSD mode: writecache_writeback
 *     first waits for the origin's io tracker to be idle that long).  The
 *     copies in flight go on.  So a buffer that fills under a write load
 *     stays full while the load lasts: new blocks go around it, blocks it
 *     holds are overwritten there (the lab's profile-hybrid: 5100 of 5100
 *     blocks used through a 30 s randwrite, none written back, 38 % of the
 *     block writes around);
 *   - a write larger than the whole buffer goes to the origin, dropping
 *     what the buffer held of its range (the model's own rule);
 *   - reads come from the buffer for the blocks it holds and from the
 *     origin for the rest, split in runs;
 *   - FLUSH commits the buffer (a FLUSH to it); TRIM drops the buffered
 *     blocks it covers and goes on to the origin.
 * Not modelled: metadata commits (autocommit; in the lab 172 metadata
 * writes against 6005 data writes), max_age, the origin FLUSH the kernel
 * issues after a writeback pass.
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
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>

#include "block_hash.h"
#include "cluster_internal.h"
#include "ranges.h"
#include "core/units.h"

/* A warm-up places tens of millions of blocks in an order it knows, each
 * at a random bucket of a table far larger than the caches: it fetches
 * the bucket of the block this many places on, so that the memory's
 * latency overlaps the placing instead of adding up. */
#define WARM_AHEAD 16

#define NO_SLOT BLOCK_HASH_NONE
#define MAX_BLOCKS (UINT32_C (1) << 30)        /* the hash's buckets stay in 32 bits */
#define HASH_MIN_BUCKETS 1024u
#define SLOT_CHUNK_BITS 16u
#define SLOT_CHUNK (UINT32_C (1) << SLOT_CHUNK_BITS)   /* slots a chunk of state holds */
#define WRITEBACK_RUN_MAX_BYTES MIB            /* BIO_MAX_VECS pages: one copy at most */
#define WRITEBACK_PASS_BLOCKS 64u              /* the kernel's WRITEBACK_LATENCY */

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
 * (SLOT_STATE_BITS), the next slot in the queue or the free list
 * (link_bits, all ones: none), the origin block it holds (the rest).  The
 * split follows the sizes: a 600 GB buffer of 4 KiB blocks needs 28 bits
 * of link, which leaves 33 for blocks (32 TiB of origin).  Three separate
 * fields (8 + 4 + 1 bytes, as before) cost 13 bytes a slot, this 8. */
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
   * blocks one by one (materialize_fill_end). */
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
  bool around_seen;                    /* ... one was ever sent */
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

static void writeback_pump (struct writecache *wc);
static bool pause_holds (const struct writecache *wc);
static void wake_after_pause (struct writecache *wc);

/* ------------------------------------------------------------ slots -- */

/* The slot's word. */
static uint64_t *
word_of (const struct writecache *wc, uint32_t slot)
{
  return &wc->chunks[slot >> SLOT_CHUNK_BITS][slot & (SLOT_CHUNK - 1)];
}

static uint64_t
slot_block (const struct writecache *wc, uint32_t slot)
{
  return *word_of (wc, slot) >> wc->layout.block_shift;
}

static uint32_t
slot_next (const struct writecache *wc, uint32_t slot)
{
  uint64_t link = (*word_of (wc, slot) >> SLOT_STATE_BITS) & wc->layout.link_none;
  return link == wc->layout.link_none ? NO_SLOT : (uint32_t) link;
}

static enum slot_state
slot_state (const struct writecache *wc, uint32_t slot)
{
  return (enum slot_state) (*word_of (wc, slot) & ((1u << SLOT_STATE_BITS) - 1));
}

/* Sets the word's field at shift, mask wide, keeping the others. */
static void
word_set (uint64_t *word, unsigned shift, uint64_t mask, uint64_t value)
{
  *word = (*word & ~(mask << shift)) | (value << shift);
}

static void
set_block (struct writecache *wc, uint32_t slot, uint64_t block)
{
  unsigned shift = wc->layout.block_shift;
  word_set (word_of (wc, slot), shift, UINT64_MAX >> shift, block);
}

static void
set_next (struct writecache *wc, uint32_t slot, uint32_t next)
{
  uint64_t none = wc->layout.link_none;
  word_set (word_of (wc, slot), SLOT_STATE_BITS, none, next == NO_SLOT ? none : next);
}

static void
set_state (struct writecache *wc, uint32_t slot, enum slot_state state)
{
  word_set (word_of (wc, slot), 0, (1u << SLOT_STATE_BITS) - 1, state);
}

static uint64_t
block_of_slot (const void *owner, uint32_t slot)
{
  return slot_block (owner, slot);
}

/* Slots in chunk index (the last chunk holds fewer). */
static uint32_t
chunk_slots (const struct writecache *wc, uint32_t index)
{
  return (uint32_t) sl_min_u64 (SLOT_CHUNK, wc->blocks - (uint64_t) index * SLOT_CHUNK);
}

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

static uint32_t
free_slots (const struct writecache *wc)
{
  return wc->blocks - wc->used;
}

/* Slots a block could take now: free, or trimmed (reclaimed on the way). */
static uint32_t
room (const struct writecache *wc)
{
  return free_slots (wc) + wc->trimmed;
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

static void
slot_free (struct writecache *wc, uint32_t slot)
{
  uint32_t index = slot >> SLOT_CHUNK_BITS;
  set_state (wc, slot, SLOT_FREE);
  wc->used--;
  if (--wc->chunk_used[index] == 0)
    chunk_release (wc, index);
}

/* ------------------------------------------- the oldest-first queue -- */

static void
queue_push (struct writecache *wc, uint32_t slot)
{
  set_next (wc, slot, NO_SLOT);
  if (wc->queue_count == 0)
    wc->queue_head = slot;
  else
    set_next (wc, wc->queue_tail, slot);
  wc->queue_tail = slot;
  wc->queue_count++;
}

static uint32_t
queue_pop (struct writecache *wc)
{
  uint32_t slot = wc->queue_head;
  wc->queue_head = slot_next (wc, slot);
  wc->queue_count--;
  return slot;
}

/* Dirty blocks waiting for writeback (the queue without trimmed slots). */
static uint32_t
queued_blocks (const struct writecache *wc)
{
  return wc->queue_count - wc->trimmed;
}

/* Frees the trimmed slots still in the queue, keeping the others' order. */
static void
queue_compact (struct writecache *wc)
{
  uint32_t kept = 0, last = NO_SLOT, slot = wc->queue_head, count = wc->queue_count;
  for (uint32_t i = 0; i < count; i++) {
    uint32_t next = slot_next (wc, slot);
    if (slot_state (wc, slot) == SLOT_TRIMMED)
      slot_free (wc, slot);
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

static uint32_t
hash_find (const struct writecache *wc, uint64_t block)
{
  return block_hash_find (&wc->hash, block);
}

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
static void
drop_blocks (struct writecache *wc, uint64_t first, uint64_t end)
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
    queue_compact (wc);
}

/* ------------------------------------------------------------ parts -- */

/* One part of a read or write: [offset, end) of the buffer or of the
 * origin. */
struct part {
  bool open;
  bool in_buffer;
  uint32_t last_slot;
  uint64_t offset_bytes;
  uint64_t end_bytes;
};

static void around_done (struct cl_io *child);

static void
part_issue (struct writecache *wc, struct cl_io *io, struct part *p)
{
  if (!p->open)
    return;
  p->open = false;
  struct cl_target *below = p->in_buffer ? wc->buffer : wc->origin;
  uint64_t length = p->end_bytes - p->offset_bytes;
  if (io->op == SL_OP_WRITE && !p->in_buffer) {
    wc->around_inflight++;
    wc->around_seen = true;
    cl_submit_child (below, io, SL_OP_WRITE, io->flags, p->offset_bytes, length, around_done, wc);
  }
  else if (io->op == SL_OP_WRITE)
    cl_submit_child (below, io, SL_OP_WRITE, io->flags, p->offset_bytes, length, cl_part_done,
                     wc);
  else    /* a read does nothing after its parts: one that is all of it goes on itself */
    cl_submit_only (below, io, io->op, 0, p->offset_bytes, length, wc);
}

/* Adds bytes [lo, hi) of block b, at slot in the buffer or in place on
 * the origin, to the part, or issues the part and starts the next. */
static void
part_add (struct writecache *wc, struct cl_io *io, struct part *p, bool in_buffer,
          uint32_t slot, uint64_t b, uint64_t lo, uint64_t hi)
{
  uint64_t base = (in_buffer ? slot : b) * wc->block_bytes;
  bool extends = p->open && p->in_buffer == in_buffer && (!in_buffer || slot == p->last_slot + 1);
  if (!extends) {
    part_issue (wc, io, p);
    *p = (struct part) { .open = true, .in_buffer = in_buffer, .offset_bytes = base + lo };
  }
  p->last_slot = slot;
  p->end_bytes = base + hi;
}

/* ------------------------------------------------------------- reads -- */

/* The slot of a block of the fill's end held as ranges, else NO_SLOT. */
static uint32_t
fill_end_slot (const struct writecache *wc, uint64_t block)
{
  uint64_t index;
  if (wc->fill_end_blocks == 0 || !cl_ranges_index_of (&wc->fill_end, block, &index))
    return NO_SLOT;
  return wc->fill_first_slot + (uint32_t) index;
}

static void
writecache_read (struct writecache *wc, struct cl_io *io, uint64_t end_bytes)
{
  uint64_t bs = wc->block_bytes, first = io->offset_bytes / bs, last = (end_bytes - 1) / bs;
  struct part p = { .open = false };
  for (uint64_t b = first; b <= last; b++) {
    uint64_t lo = b == first ? io->offset_bytes - b * bs : 0;
    uint64_t hi = b == last ? end_bytes - b * bs : bs;
    uint32_t slot = hash_find (wc, b);
    if (slot == NO_SLOT)
      slot = fill_end_slot (wc, b);
    bool in_buffer = slot != NO_SLOT;
    if (in_buffer)
      wc->read_hits_blocks++;
    else
      wc->read_misses_blocks++;
    part_add (wc, io, &p, in_buffer, slot, b, lo, hi);
  }
  part_issue (wc, io, &p);
}

/* ------------------------------------------------------------ writes -- */

#define COUNTED_BUFFERED 1u            /* the write is in writes_buffered */
#define COUNTED_AROUND 2u              /* ... in writes_around */

static uint64_t
io_end_bytes (const struct writecache *wc, const struct cl_io *io)
{
  return sl_min_u64 (io->offset_bytes + io->length_bytes, wc->origin->capacity_bytes);
}

/* Blocks of [first, last] the buffer does not hold yet. */
static uint64_t
new_blocks (const struct writecache *wc, uint64_t first, uint64_t last)
{
  uint64_t count = 0;
  for (uint64_t b = first; b <= last; b++)
    if (hash_find (wc, b) == NO_SLOT)
      count++;
  return count;
}

static bool
under_writeback (const struct writecache *wc, uint32_t slot)
{
  enum slot_state s = slot_state (wc, slot);
  return s == SLOT_WRITEBACK || s == SLOT_WRITEBACK_REDIRTIED;
}

/* Block goes to the buffer: at slot if the buffer holds it (NO_SLOT: it
 * does not, and a free slot takes it). */
static uint32_t
place_block (struct writecache *wc, uint64_t block, uint32_t slot)
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
  queue_push (wc, slot);
  return slot;
}

/* The write waits at block for a free slot, first in line if it waited
 * before.  The place in line is a cl_io of the layer's own (parent: the
 * write, scratch: where it goes on and what it was counted in) that also
 * holds one of the write's pending counts, so that the parts already
 * issued cannot complete it meanwhile. */
static void
wait_for_room (struct writecache *wc, struct cl_io *io, uint64_t block, unsigned counted,
               bool first_in_line)
{
  struct cl_io *w = cl_io_new (wc->cluster);
  w->parent = io;
  w->scratch[0] = block;
  w->scratch[1] = counted;
  io->pending++;
  if (first_in_line)
    cl_io_queue_push_front (&wc->waiting, w);
  else
    cl_io_queue_push (&wc->waiting, w);
  wc->room_waits++;
}

/* The write's blocks from block `from` on, in order: a block the buffer
 * holds is overwritten in its slot, a new one takes a free slot, or goes
 * to the origin when there is none; runs of consecutive slots (or of
 * blocks on the origin) are one I/O each.  A block being written back
 * with no slot free stops the write there until one is (resumed: it
 * waited before, and goes back first in line). */
static void
write_blocks (struct writecache *wc, struct cl_io *io, uint64_t from, unsigned counted,
              bool resumed)
{
  uint64_t bs = wc->block_bytes, end = io_end_bytes (wc, io);
  uint64_t first = io->offset_bytes / bs, last = (end - 1) / bs;
  if (wc->trimmed > 0 && free_slots (wc) < new_blocks (wc, from, last))
    queue_compact (wc);
  struct part p = { .open = false };
  for (uint64_t b = from; b <= last; b++) {
    uint64_t lo = b == first ? io->offset_bytes - b * bs : 0;
    uint64_t hi = b == last ? end - b * bs : bs;
    uint32_t slot = hash_find (wc, b);
    if (slot != NO_SLOT && under_writeback (wc, slot) && room (wc) == 0) {
      part_issue (wc, io, &p);
      wait_for_room (wc, io, b, counted, resumed);
      return;
    }
    if (slot == NO_SLOT && free_slots (wc) == 0 && wc->trimmed > 0)
      queue_compact (wc);
    if (slot != NO_SLOT || free_slots (wc) > 0) {
      slot = place_block (wc, b, slot);
      part_add (wc, io, &p, true, slot, b, lo, hi);
      if (!(counted & COUNTED_BUFFERED))
        wc->writes_buffered++;
      counted |= COUNTED_BUFFERED;
    }
    else {
      part_add (wc, io, &p, false, NO_SLOT, b, lo, hi);
      wc->writes_around_blocks++;
      if (!(counted & COUNTED_AROUND))
        wc->writes_around++;
      counted |= COUNTED_AROUND;
    }
  }
  part_issue (wc, io, &p);
}

/* Writes waiting for a slot go on, in order, while there is room. */
static void
admit_waiters (struct writecache *wc)
{
  while (wc->waiting.head && room (wc) > 0) {
    struct cl_io *w = cl_io_queue_pop (&wc->waiting);
    struct cl_io *io = w->parent;
    uint64_t from = w->scratch[0];
    unsigned counted = (unsigned) w->scratch[1];
    cl_io_free (wc->cluster, w);
    write_blocks (wc, io, from, counted, true);
    io->pending--;                     /* the hold: what was just issued keeps it open */
  }
}

/* A write of more blocks than the buffer has goes to the origin, and the
 * buffer's older copies of its blocks are dropped. */
static void
write_bypass (struct writecache *wc, struct cl_io *io)
{
  uint64_t bs = wc->block_bytes, end = io_end_bytes (wc, io);
  drop_blocks (wc, io->offset_bytes / bs, (end - 1) / bs + 1);
  cl_submit_child (wc->origin, io, SL_OP_WRITE, io->flags, io->offset_bytes,
                   end - io->offset_bytes, cl_part_done, wc);
  wc->writes_bypassed++;
  admit_waiters (wc);
}

static void
writecache_write (struct writecache *wc, struct cl_io *io)
{
  uint64_t bs = wc->block_bytes, end = io_end_bytes (wc, io);
  uint64_t first = io->offset_bytes / bs, last = (end - 1) / bs;
  if (last - first + 1 > wc->blocks) {
    write_bypass (wc, io);
    return;
  }
  write_blocks (wc, io, first, 0, false);
  writeback_pump (wc);
}

/* --------------------------------------------------------- writeback -- */

/* Whether to take another pass: started at the high watermark, going on
 * down to the low one. */
static bool
writeback_wanted (struct writecache *wc)
{
  uint32_t queued = queued_blocks (wc);
  if (queued == 0)
    return false;
  return queued >= (wc->writeback_active ? wc->low_blocks : wc->high_blocks);
}

/* Slots from first on, at most left, whose blocks follow each other on
 * the origin: one copy (at most a bio's worth). */
static uint32_t
copy_length (const struct writecache *wc, uint32_t first, uint32_t left)
{
  uint32_t n = 1;
  uint64_t block = slot_block (wc, first);
  while (n < left && n < wc->run_max_blocks && slot_block (wc, first + n) == block + n)
    n++;
  return n;
}

static void writeback_read_done (struct cl_io *child);
static void writeback_write_done (struct cl_io *child);

/* One buffer read of n consecutive slots, the copies in them counted in
 * flight from now. */
static void
writeback_read (struct writecache *wc, uint32_t first, uint32_t n)
{
  for (uint32_t slot = first; slot < first + n; slot += copy_length (wc, slot, first + n - slot))
    wc->writeback_inflight++;
  wc->writeback_reads++;
  cl_submit_own (wc->buffer, SL_OP_READ, 0, first * wc->block_bytes, n * wc->block_bytes,
                 writeback_read_done, wc, first, n);
}

/* A pass: the oldest dirty blocks, as many as bring the queue under the
 * low watermark (at most WRITEBACK_PASS_BLOCKS), in age order, read in
 * runs of consecutive slots. */
static void
writeback_pass (struct writecache *wc)
{
  uint32_t queued = queued_blocks (wc);
  uint32_t want = queued >= wc->low_blocks ? queued - wc->low_blocks + 1 : 1;
  want = (uint32_t) sl_min_u64 (want, WRITEBACK_PASS_BLOCKS);
  uint32_t first = NO_SLOT, n = 0;
  for (uint32_t taken = 0; taken < want && wc->queue_count > 0;) {
    uint32_t slot = queue_pop (wc);
    if (slot_state (wc, slot) == SLOT_TRIMMED) {
      wc->trimmed--;
      slot_free (wc, slot);
      continue;
    }
    set_state (wc, slot, SLOT_WRITEBACK);
    wc->writeback_blocks++;
    taken++;
    if (n > 0 && slot == first + n) {
      n++;
      continue;
    }
    if (n > 0)
      writeback_read (wc, first, n);
    first = slot;
    n = 1;
  }
  if (n > 0)
    writeback_read (wc, first, n);
}

/* The read's copies go to the origin, in the buffer's order (the order
 * their bios complete in the merged request). */
static void
writeback_read_done (struct cl_io *child)
{
  struct writecache *wc = child->owner;
  uint32_t first = (uint32_t) child->scratch[0], end = first + (uint32_t) child->scratch[1];
  uint64_t bs = wc->block_bytes;
  cl_io_free (wc->cluster, child);
  for (uint32_t slot = first, n; slot < end; slot += n) {
    n = copy_length (wc, slot, end - slot);
    uint64_t offset = slot_block (wc, slot) * bs;
    uint64_t length = sl_min_u64 (n * bs, wc->origin->capacity_bytes - offset);
    wc->writeback_ios++;
    cl_submit_own (wc->origin, SL_OP_WRITE, 0, offset, length, writeback_write_done, wc, slot, n);
  }
}

/* The copy is on the origin: its slots are free, but for blocks written
 * meanwhile, which queue again. */
static void
writeback_write_done (struct cl_io *child)
{
  struct writecache *wc = child->owner;
  uint32_t first = (uint32_t) child->scratch[0], n = (uint32_t) child->scratch[1];
  cl_io_free (wc->cluster, child);
  for (uint32_t slot = first; slot < first + n; slot++) {
    switch (slot_state (wc, slot)) {
    case SLOT_WRITEBACK:
      block_hash_remove (&wc->hash, slot);
      slot_free (wc, slot);
      break;
    case SLOT_WRITEBACK_REDIRTIED:
      set_state (wc, slot, SLOT_DIRTY);
      queue_push (wc, slot);
      break;
    default:                           /* SLOT_WRITEBACK_DROPPED */
      slot_free (wc, slot);
      break;
    }
  }
  wc->writeback_inflight--;
  admit_waiters (wc);
  writeback_pump (wc);
}

/* Passes go on while writeback is wanted and fewer than writeback_jobs
 * copies are in flight (a pass may take the count past it). */
static void
writeback_pump (struct writecache *wc)
{
  while (wc->writeback_jobs == 0 || wc->writeback_inflight < wc->writeback_jobs) {
    if (!writeback_wanted (wc)) {
      wc->writeback_active = false;
      return;
    }
    if (pause_holds (wc)) {
      wc->writeback_pauses += !wc->writeback_paused;
      wc->writeback_paused = true;
      wake_after_pause (wc);
      return;
    }
    wc->writeback_paused = false;
    wc->writeback_active = true;
    writeback_pass (wc);
  }
}

/* ------------------------------------------------------------- pause -- */

/* Whether a write around keeps writeback from its next pass: one in
 * flight, or the last ended less than pause_ns ago. */
static bool
pause_holds (const struct writecache *wc)
{
  if (wc->pause_ns == 0 || !wc->around_seen)
    return false;
  return wc->around_inflight > 0 || cl_now_ns (wc->cluster) - wc->around_end_ns < wc->pause_ns;
}

static void
pause_over (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct writecache *wc = arg;
  wc->pause_wake_pending = false;
  writeback_pump (wc);
}

/* The pump goes on when the pause ends: pause_ns after the last write
 * around ended (one still in flight schedules it when it ends). */
static void
wake_after_pause (struct writecache *wc)
{
  if (wc->around_inflight > 0 || wc->pause_wake_pending)
    return;
  wc->pause_wake_pending = true;
  cl_schedule (wc->cluster, wc->around_end_ns + wc->pause_ns, pause_over, wc, 0);
}

/* A write around is on the origin: the pause counts from the last. */
static void
around_done (struct cl_io *child)
{
  struct writecache *wc = child->owner;
  wc->around_inflight--;
  wc->around_end_ns = cl_now_ns (wc->cluster);
  cl_part_done (child);
  if (wc->around_inflight == 0 && wc->writeback_paused)
    wake_after_pause (wc);
}

/* ----------------------------------------------------------- target -- */

/* Before the buffer changes: the fill's end placed block by block in the
 * slots it held, oldest first, as a warm-up would have placed it. */
static void
materialize_fill_end (struct writecache *wc)
{
  uint64_t n = wc->fill_end_blocks;
  if (n == 0)
    return;
  wc->fill_end_blocks = 0;
  wc->used -= (uint32_t) n;
  wc->cursor = wc->fill_first_slot;
  block_hash_reserve (&wc->hash, wc->hash.count + n);
  for (size_t i = 0; i < wc->fill_end.count; i++)
    for (uint64_t block = wc->fill_end.range[i].first; block < wc->fill_end.range[i].end; block++)
      place_block (wc, block, NO_SLOT);
  cl_ranges_free (&wc->fill_end);
}

static void
writecache_submit (struct cl_target *t, struct cl_io *io)
{
  struct writecache *wc = t->self;
  if (io->op == SL_OP_FLUSH) {
    cl_submit_child (wc->buffer, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, wc);
    return;
  }
  uint64_t end = io_end_bytes (wc, io);
  if (io->offset_bytes >= end) {
    cl_io_complete_at (io, cl_now_ns (t->cluster));
    return;
  }
  if (io->op != SL_OP_READ)
    materialize_fill_end (wc);
  switch (io->op) {
  case SL_OP_READ:
    writecache_read (wc, io, end);
    break;
  case SL_OP_WRITE:
    writecache_write (wc, io);
    break;
  default: {                           /* TRIM: blocks it covers whole */
    uint64_t bs = wc->block_bytes;
    drop_blocks (wc, (io->offset_bytes + bs - 1) / bs, end / bs);
    cl_submit_child (wc->origin, io, SL_OP_TRIM, 0, io->offset_bytes, end - io->offset_bytes,
                     cl_part_done, wc);
    admit_waiters (wc);
    writeback_pump (wc);
    break;
  }
  }
}

/* Regions are gathered, to fill the buffer once every one is known
 * (warm_finish): written ones by how they are written, read ones apart
 * (adopt_fill). */
static void
writecache_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct writecache *wc = t->self;
  uint64_t end = sl_min_u64 (offset_bytes + length_bytes, t->capacity_bytes);
  enum sl_warm_load load = cl_warm_load (t->cluster);
  if (offset_bytes < end)
    cl_ranges_add (load == SL_WARM_READS ? &wc->warm_filled
                   : load == SL_WARM_SEQUENTIAL_WRITES ? &wc->warm_sequential : &wc->warm,
                   offset_bytes / wc->block_bytes, (end - 1) / wc->block_bytes + 1);
  cl_warm (wc->origin, offset_bytes, length_bytes);
}

static uint64_t
ranges_blocks (const struct cl_ranges *r)
{
  uint64_t total = 0;
  for (size_t i = 0; i < r->count; i++)
    total += r->range[i].end - r->range[i].first;
  return total;
}

/* Whether the sequential regions overlap each other or the (merged)
 * random ones: then a block may be offered twice, and each must be looked
 * up before it is placed. */
static bool
warm_regions_overlap (const struct writecache *wc, uint64_t random_total,
                      uint64_t sequential_total)
{
  if (wc->warm_sequential.count == 0)
    return false;
  struct cl_ranges all = { 0 };
  for (size_t i = 0; i < wc->warm.count; i++)
    cl_ranges_add (&all, wc->warm.range[i].first, wc->warm.range[i].end);
  for (size_t i = 0; i < wc->warm_sequential.count; i++)
    cl_ranges_add (&all, wc->warm_sequential.range[i].first, wc->warm_sequential.range[i].end);
  bool overlap = cl_ranges_merge (&all) != random_total + sequential_total;
  cl_ranges_free (&all);
  return overlap;
}

static bool
warm_place (struct writecache *wc, uint64_t block, bool look_up)
{
  if (look_up && hash_find (wc, block) != NO_SLOT)
    return false;
  place_block (wc, block, NO_SLOT);
  wc->warmed_blocks++;
  return true;
}

/* A sequential writer about to start again at its region's start last
 * wrote the region's end, in order: the buffer holds each region's end
 * (its share of want), in consecutive slots, oldest first.  The writers
 * ran side by side, so the regions' ends are interleaved in the queue a
 * writeback run's worth at a time.  sequential_shares: each region's
 * share of want, its start becoming the first block of the region's end
 * that the buffer holds; the longest share. */
static uint64_t
sequential_shares (struct writecache *wc, uint64_t want, uint64_t sequential_total)
{
  struct cl_ranges *r = &wc->warm_sequential;
  uint64_t before = 0, longest = 0;
  for (size_t i = 0; i < r->count; i++) {
    /* the shares add up to want: each is the difference of rounded-down
     * running totals */
    uint64_t length = r->range[i].end - r->range[i].first;
    uint64_t share = (uint64_t) ((unsigned __int128) want * (before + length) / sequential_total)
      - (uint64_t) ((unsigned __int128) want * before / sequential_total);
    before += length;
    r->range[i].start = r->range[i].end - share;
    longest = sl_max_u64 (longest, share);
  }
  return longest;
}

static uint64_t
warm_sequential_ends (struct writecache *wc, uint64_t want, uint64_t sequential_total,
                      bool look_up)
{
  struct cl_ranges *r = &wc->warm_sequential;
  uint64_t placed = 0, longest = sequential_shares (wc, want, sequential_total);
  for (uint64_t step = 0; step < longest; step += wc->run_max_blocks)
    for (size_t i = 0; i < r->count; i++) {
      uint64_t from = r->range[i].start + step;
      uint64_t to = sl_min_u64 (from + wc->run_max_blocks, r->range[i].end);
      for (uint64_t block = from; block < to && room (wc) > 0; block++) {
        if (block + WARM_AHEAD < to)
          block_hash_prefetch (&wc->hash, block + WARM_AHEAD);
        if (warm_place (wc, block, look_up)) {
          wc->warmed_sequential_blocks++;
          placed++;
        }
      }
    }
  return placed;
}

/* The i-th block warm_scattered visits. */
static uint64_t
scattered_block (const struct writecache *wc, uint64_t i, uint64_t stride, uint64_t random_total)
{
  return cl_ranges_at (&wc->warm, (uint64_t) ((unsigned __int128) i * stride % random_total));
}

/* A random writer leaves blocks drawn evenly from every region it wrote
 * (all of them if they fit), oldest first in a scattered order: the first
 * writeback passes are not one sequential sweep. */
static void
warm_scattered (struct writecache *wc, uint64_t want, uint64_t random_total, bool look_up)
{
  /* i -> i * stride mod total visits every index once (stride prime to total) */
  uint64_t stride = UINT64_C (2654435761);
  while (random_total > 1 && random_total % stride == 0)
    stride += 2;
  /* the blocks WARM_AHEAD places on, their buckets fetched meanwhile */
  uint64_t ahead[WARM_AHEAD];
  for (uint64_t i = 0; i < WARM_AHEAD && i < random_total; i++)
    ahead[i] = scattered_block (wc, i, stride, random_total);
  for (uint64_t i = 0, placed = 0; i < random_total && placed < want && room (wc) > 0; i++) {
    uint64_t block = ahead[i % WARM_AHEAD];
    if (i + WARM_AHEAD < random_total) {
      ahead[i % WARM_AHEAD] = scattered_block (wc, i + WARM_AHEAD, stride, random_total);
      block_hash_prefetch (&wc->hash, ahead[i % WARM_AHEAD]);
    }
    placed += warm_place (wc, block, look_up);
  }
}

/* The blocks a warm buffer starts with (want: as many as its writeback
 * lets stay, or all that was written); the regions' block counts too.
 * Where writeback keeps up with the new blocks it holds the buffer
 * between its watermarks, and the buffer starts one short of the high
 * one; where it cannot, at the fill a probe run found steady (at most
 * full: then the blocks it does not hold go around it). */
static uint64_t
warm_want (struct writecache *wc, uint64_t *random_total, uint64_t *sequential_total)
{
  *random_total = cl_ranges_merge (&wc->warm);
  *sequential_total = ranges_blocks (&wc->warm_sequential);
  uint64_t steady = wc->warm_from_fill ? (wc->low_blocks > 0 ? wc->low_blocks - 1 : 0)
    : sl_max_u64 (wc->warm_start_blocks, wc->high_blocks > 0 ? wc->high_blocks - 1 : 0);
  return sl_min_u64 (*random_total + *sequential_total, sl_min_u64 (steady, wc->blocks));
}

/* A read load alone never moves the buffer: it holds what was written
 * before.  A volume is written whole once when it is made (a lab's
 * profile volumes are, by volumes.sh), in order, so the buffer holds the
 * end of that fill: writeback, which the fill started at the high
 * watermark, stopped under the low one (profile-hybrid's lab after `up`:
 * 2100 of its 5100 blocks, the low watermark at 45 % being 2295).  The
 * read regions are then taken as sequentially written ones; where a
 * writer shares the buffer, its steady state is the buffer's. */
static void
adopt_fill (struct writecache *wc)
{
  if (wc->warm_filled.count == 0)
    return;
  cl_ranges_merge (&wc->warm_filled);
  if (wc->warm.count == 0 && wc->warm_sequential.count == 0) {
    struct cl_ranges read = wc->warm_filled;
    wc->warm_filled = wc->warm_sequential;
    wc->warm_sequential = read;
    wc->warm_from_fill = true;
  }
  cl_ranges_free (&wc->warm_filled);
}

/* The first warm-up step (warm_settle runs before warm_need_bytes and
 * warm_finish): a read load's regions adopted as the fill's.  A buffer
 * holding a fill's end serves every read of it: the read cache
 * below keeps its slots for the rest (profile-hybrid's lab after `up`:
 * 391 of dm-cache's 448 chunks in use, reads of the buffer's 2100 blocks
 * never reaching it). */
static void
writecache_warm_settle (struct cl_target *t)
{
  struct writecache *wc = t->self;
  adopt_fill (wc);
  if (!wc->warm_from_fill)
    return;
  uint64_t random_total, sequential_total;
  uint64_t want = warm_want (wc, &random_total, &sequential_total);
  sequential_shares (wc, sl_min_u64 (want, room (wc)), sequential_total);
  for (size_t i = 0; i < wc->warm_sequential.count; i++) {
    const struct cl_range *end = &wc->warm_sequential.range[i];
    cl_warm_exclude (wc->origin, end->start * wc->block_bytes,
                     (end->end - end->start) * wc->block_bytes);
  }
}

static void
writecache_warm_probe_mark (struct cl_target *t)
{
  struct writecache *wc = t->self;
  wc->probe_mark_used = wc->used;
  wc->probe_mark_writeback = wc->writeback_blocks;
}

/* The fill where new blocks come in as fast as writeback takes them out,
 * from the probe's second half: new blocks N = its rise + the blocks
 * written back D.  Random writes over R blocks bring a new one with the
 * chance 1 - u/R at fill u (the buffer holds a uniform share, as the
 * warm state drew it), so the writes ran at N / (1 - u/R) blocks, and
 * the steady fill f has (1 - f/R) of those equal D.  A sequential writer
 * brings a new block with every one: full once N > D.  0 where writeback
 * kept up (N <= D, the fill never passed the high watermark, or its
 * steady fill is no higher), so warm_full says the start moved. */
static uint64_t
writecache_warm_probe_fill (const struct cl_target *t)
{
  const struct writecache *wc = t->self;
  double rise = (double) wc->used - (double) wc->probe_mark_used;
  double back = (double) (wc->writeback_blocks - wc->probe_mark_writeback);
  double in = rise + back, regions = (double) wc->warm_region_blocks;
  if (wc->used <= wc->high_blocks || in <= back || regions <= 0)
    return 0;
  if (wc->warm_sequential_only)
    return wc->blocks;
  double u = 0.5 * ((double) wc->used + (double) wc->probe_mark_used);
  double new_chance = 1.0 - u / regions;
  if (new_chance <= 0)
    return 0;
  double steady = regions * (1.0 - back * new_chance / in);
  if (steady <= (double) wc->high_blocks)
    return 0;
  return steady >= (double) wc->blocks ? wc->blocks : (uint64_t) steady;
}

static void
writecache_warm_start_fill (struct cl_target *t, uint64_t blocks)
{
  struct writecache *wc = t->self;
  wc->warm_start_blocks = blocks;
}

/* Bytes of the chunks not allocated yet among those the next `slots`
 * slots of the log, from the cursor on, fall in (at most: the log passes
 * slots in use). */
static uint64_t
chunk_bytes_ahead (const struct writecache *wc, uint64_t slots)
{
  uint64_t bytes = 0, chunks = ((uint64_t) wc->blocks + SLOT_CHUNK - 1) / SLOT_CHUNK;
  uint64_t first = wc->cursor / SLOT_CHUNK;
  uint64_t last = (wc->cursor + sl_max_u64 (slots, 1) - 1) / SLOT_CHUNK;
  for (uint64_t i = first; i <= last && i < first + chunks; i++)
    if (wc->chunks[i % chunks] == NULL)
      bytes += chunk_slots (wc, (uint32_t) (i % chunks)) * sizeof (uint64_t);
  return slots > 0 ? bytes : 0;
}

/* The chunks the warm blocks take, and the hash reserved for them (at
 * most: a block offered twice is placed once). */
static uint64_t
writecache_warm_need_bytes (struct cl_target *t)
{
  struct writecache *wc = t->self;
  uint64_t random_total, sequential_total;
  uint64_t placed = wc->warm_from_fill ? 0              /* held as ranges */
    : sl_min_u64 (warm_want (wc, &random_total, &sequential_total), room (wc));
  return chunk_bytes_ahead (wc, placed)
    + block_hash_reserve_bytes (&wc->hash, wc->hash.count + placed)
    + cl_device_log_bytes (wc->buffer, (uint64_t) wc->blocks * wc->block_bytes);
}

/* The cache device under the buffer seen written as a log, the oldest
 * slot at the cursor. */
static int
lay_out_buffer_as_log (struct writecache *wc, char *err, size_t err_bytes)
{
  return cl_device_written_as_log (wc->buffer, 0, (uint64_t) wc->blocks * wc->block_bytes,
                                   (uint64_t) wc->cursor * wc->block_bytes, err, err_bytes) < 0
    ? -1 : 0;
}

/* The fill's end as ranges (fill_end), in slots from the cursor on. */
static int
hold_fill_end (struct writecache *wc, uint64_t want, uint64_t sequential_total, char *err,
               size_t err_bytes)
{
  sequential_shares (wc, sl_min_u64 (want, room (wc)), sequential_total);
  for (size_t i = 0; i < wc->warm_sequential.count; i++)
    cl_ranges_add (&wc->fill_end, wc->warm_sequential.range[i].start,
                   wc->warm_sequential.range[i].end);
  uint64_t n = cl_ranges_merge (&wc->fill_end);
  wc->fill_end_blocks = n;
  wc->fill_first_slot = wc->cursor;
  wc->used += (uint32_t) n;
  wc->cursor += (uint32_t) n;
  wc->warmed_blocks += n;
  wc->warmed_sequential_blocks += n;
  cl_ranges_free (&wc->warm);
  cl_ranges_free (&wc->warm_sequential);
  return lay_out_buffer_as_log (wc, err, err_bytes);
}

/* A steady write load that writeback keeps up with holds the buffer
 * between its watermarks: writeback starts at the high one and stops
 * under the low one, and new writes fill it up again.  So it starts one
 * block short of the high watermark, or at the steadier fill a probe
 * found (warm_want), each region giving its share as its writer leaves
 * it.  Its slots are taken in order, so the cache device has seen them
 * written as a log, the oldest at the cursor: an SSD there starts in that
 * pattern's steady state, not in uniform random overwrite's (which its
 * exact map, a fraction of a full-size buffer, would take hours of
 * simulated writing to leave). */
static int
writecache_warm_finish (struct cl_target *t, char *err, size_t err_bytes)
{
  struct writecache *wc = t->self;
  uint64_t random_total, sequential_total;
  uint64_t want = warm_want (wc, &random_total, &sequential_total);
  uint64_t total = random_total + sequential_total;
  if (wc->warm_from_fill)
    return hold_fill_end (wc, want, sequential_total, err, err_bytes);
  wc->warm_region_blocks = total;
  wc->warm_sequential_only = random_total == 0 && sequential_total > 0;
  /* a buffer already holding blocks, or regions offering one block twice:
   * look each up (else every block offered is new to it) */
  bool look_up = wc->hash.count > 0
    || warm_regions_overlap (wc, random_total, sequential_total);
  block_hash_reserve (&wc->hash, wc->hash.count + sl_min_u64 (want, room (wc)));
  uint64_t placed = 0;
  if (sequential_total > 0)
    placed = warm_sequential_ends (wc, (uint64_t) ((unsigned __int128) want * sequential_total
                                                   / total), sequential_total, look_up);
  warm_scattered (wc, want - placed, random_total, look_up);
  cl_ranges_free (&wc->warm);
  cl_ranges_free (&wc->warm_sequential);
  return lay_out_buffer_as_log (wc, err, err_bytes);
}

static void
writecache_write_counters (struct cl_target *t, FILE *out)
{
  const struct writecache *wc = t->self;
  uint32_t used = wc->blocks - room (wc);
  fprintf (out, "\"block_bytes\": %" PRIu64 ", \"buffer_blocks\": %" PRIu32
           ", \"dirty_blocks\": %" PRIu32 ", \"write_hits\": %" PRIu64
           ", \"writes_buffered\": %" PRIu64 ", \"writes_around\": %" PRIu64
           ", \"writes_around_blocks\": %" PRIu64 ", \"writes_bypassed\": %" PRIu64
           ", \"read_hits_blocks\": %" PRIu64 ", \"read_misses_blocks\": %" PRIu64
           ", \"writeback_blocks\": %" PRIu64 ", \"writeback_ios\": %" PRIu64
           ", \"writeback_reads\": %" PRIu64 ", \"room_waits\": %" PRIu64
           ", \"writeback_pauses\": %" PRIu64 ", \"warmed_blocks\": %" PRIu64
           ", \"warmed_sequential_blocks\": %" PRIu64 ", \"warm_full\": %d"
           ", \"fill_pct\": %.2f",
           wc->block_bytes, wc->blocks, wc->hash.count + (uint32_t) wc->fill_end_blocks,
           wc->write_hits, wc->writes_buffered,
           wc->writes_around, wc->writes_around_blocks, wc->writes_bypassed,
           wc->read_hits_blocks, wc->read_misses_blocks, wc->writeback_blocks,
           wc->writeback_ios, wc->writeback_reads, wc->room_waits, wc->writeback_pauses,
           wc->warmed_blocks,
           wc->warmed_sequential_blocks, wc->warm_start_blocks > 0 ? 1 : 0,
           100.0 * (double) used / (double) wc->blocks);
}

static void
writecache_destroy (struct cl_target *t)
{
  struct writecache *wc = t->self;
  for (uint32_t i = 0; i <= wc->blocks >> SLOT_CHUNK_BITS; i++)
    free (wc->chunks[i]);
  free (wc->chunks);
  free (wc->chunk_used);
  block_hash_free (&wc->hash);
  cl_ranges_free (&wc->warm);
  cl_ranges_free (&wc->warm_sequential);
  cl_ranges_free (&wc->warm_filled);
  cl_ranges_free (&wc->fill_end);
  free (wc);
}

void
cl_writecache_defaults (struct cl_writecache_config *config)
{
  *config = (struct cl_writecache_config) {
    .block_bytes = 4096,
    .high_watermark_percent = 50,
    .low_watermark_percent = 45,
    /* The kernel bounds the blocks in flight (256 MiB worth); what bounds
     * the copies in practice is the origin's request queue: 64 for a SATA
     * disk (twice its NCQ depth of 32).  A pass starts below it and goes
     * whole (its reads merged), so up to a pass more can be in flight. */
    .writeback_jobs = 64,
    /* PAUSE_WRITEBACK, HZ * 3, in SSD mode (Linux 5.14 on; the lab's
     * Debian 12 guests run 6.1) */
    .pause_writeback_ns = UINT64_C (3000000000),
  };
}

/* The kernel's free-block thresholds, rounded as it rounds them, as
 * counts of used blocks. */
static uint32_t
used_threshold (uint32_t blocks, uint32_t percent)
{
  return blocks - (uint32_t) (((uint64_t) blocks * (100 - percent) + 50) / 100);
}

/* The slot word's split for a buffer of `blocks` slots: link values 0 to
 * blocks - 1 and all ones for none. */
static struct slot_word_layout
slot_word_layout (uint64_t blocks)
{
  unsigned link_bits = 1;
  while (((UINT64_C (1) << link_bits) - 1) < blocks)
    link_bits++;
  return (struct slot_word_layout) { .link_bits = link_bits,
                                     .block_shift = SLOT_STATE_BITS + link_bits,
                                     .link_none = (UINT64_C (1) << link_bits) - 1 };
}

/* Whether the slot word holds every origin block number: a refusal, not a
 * wider word, as the shipped topologies need 33 bits at most (7 x 3.84 TB
 * behind 600 GB, 4 KiB blocks) of the 33 left. */
static int
check_origin_fits (const char *name, uint64_t origin_blocks, uint64_t blocks, uint64_t bs,
                   char *err, size_t err_bytes)
{
  unsigned block_bits = 64 - slot_word_layout (blocks).block_shift;
  if (origin_blocks - 1 <= ((UINT64_C (1) << block_bits) - 1))
    return 0;
  snprintf (err, err_bytes, "%s: an origin of %" PRIu64 " blocks (%" PRIu64 " GiB) behind a"
            " buffer of %" PRIu64 " blocks: the slot map holds origin blocks below 2^%u"
            " (%" PRIu64 " GiB); a larger block size or a smaller buffer", name, origin_blocks,
            (uint64_t) ((unsigned __int128) origin_blocks * bs >> 30), blocks, block_bits,
            (uint64_t) (((unsigned __int128) bs << block_bits) >> 30));
  return -1;
}

static int
check_config (const char *name, const struct cl_target *origin, const struct cl_target *buffer,
              const struct cl_writecache_config *config, char *err, size_t err_bytes)
{
  uint64_t bs = config->block_bytes;
  if (bs < 512 || bs % 512 != 0 || bs > 64 * KIB) {
    snprintf (err, err_bytes, "%s: block size %" PRIu64 " (a multiple of 512 up to 64 KiB)",
              name, bs);
    return -1;
  }
  if (config->low_watermark_percent > config->high_watermark_percent
      || config->high_watermark_percent > 100) {
    snprintf (err, err_bytes, "%s: watermarks low %" PRIu32 "%% high %" PRIu32
              "%% (0 <= low <= high <= 100)", name, config->low_watermark_percent,
              config->high_watermark_percent);
    return -1;
  }
  uint64_t blocks = buffer->capacity_bytes / bs;
  if (blocks == 0 || blocks > MAX_BLOCKS) {
    snprintf (err, err_bytes, "%s: a buffer of %" PRIu64 " blocks on %s (1 to %" PRIu32 ")",
              name, blocks, buffer->name, MAX_BLOCKS);
    return -1;
  }
  if (origin->capacity_bytes == 0) {
    snprintf (err, err_bytes, "%s: empty origin %s", name, origin->name);
    return -1;
  }
  return check_origin_fits (name, (origin->capacity_bytes + bs - 1) / bs, blocks, bs, err,
                            err_bytes);
}

struct cl_target *
cl_writecache_new (struct cluster *c, const char *node, const char *name,
                   struct cl_target *origin, struct cl_target *buffer,
                   const struct cl_writecache_config *config, char *err, size_t err_bytes)
{
  if (check_config (name, origin, buffer, config, err, err_bytes) < 0)
    return NULL;
  struct writecache *wc = cl_xcalloc (1, sizeof *wc);
  wc->origin = origin;
  wc->buffer = buffer;
  wc->cluster = c;
  wc->block_bytes = config->block_bytes;
  wc->blocks = (uint32_t) (buffer->capacity_bytes / config->block_bytes);
  wc->layout = slot_word_layout (wc->blocks);
  wc->high_blocks = used_threshold (wc->blocks, config->high_watermark_percent);
  wc->low_blocks = used_threshold (wc->blocks, config->low_watermark_percent);
  wc->writeback_jobs = config->writeback_jobs;
  wc->pause_ns = config->pause_writeback_ns;
  wc->run_max_blocks = (uint32_t) sl_max_u64 (1, WRITEBACK_RUN_MAX_BYTES / config->block_bytes);
  wc->queue_head = wc->queue_tail = NO_SLOT;
  size_t chunks = (wc->blocks >> SLOT_CHUNK_BITS) + 1;
  wc->chunks = cl_xcalloc (chunks, sizeof *wc->chunks);
  wc->chunk_used = cl_xcalloc (chunks, sizeof *wc->chunk_used);
  c->memory_bytes += sizeof *wc + chunks * (sizeof *wc->chunks + sizeof *wc->chunk_used);
  block_hash_init (&wc->hash, HASH_MIN_BUCKETS, wc->blocks, block_of_slot, wc,
                   &c->memory_bytes);
  static const struct cl_target_ops ops = {
    .kind = "writecache", .submit = writecache_submit, .warm = writecache_warm,
    .warm_finish = writecache_warm_finish, .warm_need_bytes = writecache_warm_need_bytes,
    .warm_settle = writecache_warm_settle,
    .warm_probe_mark = writecache_warm_probe_mark, .warm_probe_fill = writecache_warm_probe_fill,
    .warm_start_fill = writecache_warm_start_fill,
    .write_counters = writecache_write_counters, .destroy = writecache_destroy,
  };
  return cl_target_new (c, &ops, wc, node, name, origin->capacity_bytes, true);
}
