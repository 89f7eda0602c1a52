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
 * The bookkeeping of the slots is writecache_slots.c, the warm start
 * writecache_warm.c; writecache.h holds the state the three share. */
#define _GNU_SOURCE
#include "writecache.h"

#include <inttypes.h>
#include <stdlib.h>

#include "layers.h"

#define MAX_BLOCKS (UINT32_C (1) << 30)        /* the hash's buckets stay in 32 bits */
#define HASH_MIN_BUCKETS 1024u
#define WRITEBACK_RUN_MAX_BYTES MIB            /* BIO_MAX_VECS pages: one copy at most */
#define WRITEBACK_PASS_BLOCKS 64u              /* the kernel's WRITEBACK_LATENCY */

static void writeback_pump (struct writecache *wc);
static bool pause_holds (const struct writecache *wc);
static void wake_after_pause (struct writecache *wc);

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
    wc_queue_compact (wc);
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
      wc_queue_compact (wc);
    if (slot != NO_SLOT || free_slots (wc) > 0) {
      slot = wc_place_block (wc, b, slot);
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
  wc_drop_blocks (wc, io->offset_bytes / bs, (end - 1) / bs + 1);
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
    uint32_t slot = wc_queue_pop (wc);
    if (slot_state (wc, slot) == SLOT_TRIMMED) {
      wc->trimmed--;
      wc_slot_free (wc, slot);
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
      wc_slot_free (wc, slot);
      break;
    case SLOT_WRITEBACK_REDIRTIED:
      set_state (wc, slot, SLOT_DIRTY);
      wc_queue_push (wc, slot);
      break;
    default:                           /* SLOT_WRITEBACK_DROPPED */
      wc_slot_free (wc, slot);
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
      /* not wanted is not paused: a later stop for a write around is a
       * new pause, and writes around meanwhile schedule no pump */
      wc->writeback_active = false;
      wc->writeback_paused = false;
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
  if (wc->pause_ns == 0 || wc->writes_around_blocks == 0)   /* none sent yet */
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
    wc_materialize_fill_end (wc);
  switch (io->op) {
  case SL_OP_READ:
    writecache_read (wc, io, end);
    break;
  case SL_OP_WRITE:
    writecache_write (wc, io);
    break;
  default: {                           /* TRIM: blocks it covers whole */
    uint64_t bs = wc->block_bytes;
    wc_drop_blocks (wc, (io->offset_bytes + bs - 1) / bs, end / bs);
    cl_submit_child (wc->origin, io, SL_OP_TRIM, 0, io->offset_bytes, end - io->offset_bytes,
                     cl_part_done, wc);
    admit_waiters (wc);
    writeback_pump (wc);
    break;
  }
  }
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

/* Whether the slot word holds every origin block number: a refusal, not a
 * wider word, as the shipped topologies need 33 bits at most (7 x 3.84 TB
 * behind 600 GB, 4 KiB blocks) of the 33 left. */
static int
check_origin_fits (const char *name, uint64_t origin_blocks, uint64_t blocks, uint64_t bs,
                   char *err, size_t err_bytes)
{
  unsigned block_bits = 64 - wc_slot_word_layout (blocks).block_shift;
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
  wc->layout = wc_slot_word_layout (wc->blocks);
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
