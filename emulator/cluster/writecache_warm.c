/* writecache_warm.c — the write buffer's warm start (the target is
 * layer_writecache.c, its slots writecache_slots.c): the regions a
 * workload will write, or only read, are gathered; once all are known the
 * buffer starts with what that workload leaves in it (warm_finish): a
 * random writer's blocks drawn from all its regions, a sequential
 * writer's regions' ends, or, under a read load, the end of the fill that
 * wrote the volumes when they were made, held as ranges until the buffer
 * first changes.  The cache device beneath starts as the log those blocks
 * were written in.  A probe run finds the fill to start at where
 * writeback cannot keep up with a write load. */
#define _GNU_SOURCE
#include "writecache.h"

#include "layers.h"

/* A warm-up places tens of millions of blocks in an order it knows, each
 * at a random bucket of a table far larger than the caches: it fetches
 * the bucket of the block this many places on, so that the memory's
 * latency overlaps the placing instead of adding up. */
#define WARM_AHEAD 16

/* Regions are gathered, to fill the buffer once every one is known
 * (warm_finish): written ones by how they are written, read ones apart
 * (adopt_fill). */
void
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
  wc_place_block (wc, block, NO_SLOT);
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
void
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

void
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
uint64_t
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

void
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
  if (slots == 0)
    return 0;
  uint64_t bytes = 0, chunks = ((uint64_t) wc->blocks + SLOT_CHUNK - 1) / SLOT_CHUNK;
  uint64_t first = wc->cursor / SLOT_CHUNK;
  uint64_t last = (wc->cursor + slots - 1) / SLOT_CHUNK;
  for (uint64_t i = first; i <= last && i < first + chunks; i++)
    if (wc->chunks[i % chunks] == NULL)
      bytes += chunk_slots (wc, (uint32_t) (i % chunks)) * sizeof (uint64_t);
  return bytes;
}

/* The chunks the warm blocks take, and the hash reserved for them (at
 * most: a block offered twice is placed once). */
uint64_t
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
int
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

/* Before the buffer changes: the fill's end placed block by block in the
 * slots it held, oldest first, as a warm-up would have placed it. */
void
wc_materialize_fill_end (struct writecache *wc)
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
      wc_place_block (wc, block, NO_SLOT);
  cl_ranges_free (&wc->fill_end);
}
