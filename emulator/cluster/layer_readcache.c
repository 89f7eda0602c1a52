/* layer_readcache.c — dm-cache in writethrough mode: the disk group's read
 * cache.  Chunks of the origin read often enough are copied (promoted) to
 * a cache region on the SSD and read from there afterwards.  Behaviour
 * from the kernel's Documentation/admin-guide/device-mapper/cache.rst and
 * cache-policies.rst, and lvmcache(7) for the sizes lvm picks:
 *   - the chunk (dm-cache's block) is chunk_bytes, or as lvm picks it:
 *     64 KiB, grown in multiples of 32 KiB until the cache has at most
 *     1,000,000 chunks (allocation/cache_pool_max_chunks);
 *   - I/O is split at chunk boundaries (the target's max_io_len);
 *   - a read of a cached chunk comes from the cache (a hit); any other
 *     read comes from the origin (a miss) and counts against its chunk;
 *   - promotion, in the spirit of smq (which promotes chunks seen again,
 *     not one-hit wonders): at the promote_after_misses-th miss a chunk is
 *     copied in the background (a read of the whole chunk from the origin,
 *     a write to its slot in the cache; cached once both are done).  The
 *     read that triggered it completes on its own origin read.  A
 *     promotion starts only while the copies in flight are below
 *     migration_threshold_bytes (dm-cache's migration_threshold, 2048
 *     sectors); one refused is tried again at the chunk's next miss;
 *   - the slot comes from the free ones, else from CLOCK: a hand sweeps
 *     the slots, clearing reference bits (set by hits), and evicts the
 *     first chunk found unreferenced.  A chunk is cached unreferenced;
 *   - writethrough: a write goes to the origin, and to the cache as well
 *     when its chunk is cached; it completes when every part is done.  A
 *     write to a chunk being promoted cancels the promotion (its copy
 *     would be stale): the slot is freed when the copy completes;
 *   - FLUSH goes to the origin and the cache; TRIM goes to the origin and
 *     drops the cached chunks it covers whole.
 * Not modelled: smq's hotspot queues and its demotion of clean blocks by
 * level (CLOCK stands in), dm-cache's metadata writes.
 *
 * Memory: per slot its chunk (4 bytes), state (1) and the free-slot
 * stack (4); per origin chunk its slot (4: a lookup is one memory access,
 * where a hash took three on every hit of a cluster run, a fifth of its
 * time; the pages of chunks never touched are never made resident) and a
 * 2-bit miss counter. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cluster_internal.h"
#include "ranges.h"
#include "core/units.h"

#define NO_SLOT UINT32_MAX
#define LVM_CHUNK_MIN_BYTES (64 * KIB)         /* lvm's default cache chunk */
#define LVM_CHUNK_STEP_BYTES (32 * KIB)        /* dm-cache's block size granularity */
#define LVM_MAX_CHUNKS UINT64_C (1000000)      /* allocation/cache_pool_max_chunks */
#define MAX_SLOTS ((UINT32_C (1) << 30) - 1)    /* slot + 1 below CHUNK_REFERENCED */
#define MISS_COUNT_MAX 3u                      /* 2-bit counters */
#define LVM_CACHE_TRANSACTION_BYTES (4 * MIB)  /* cache metadata's fixed part */
#define LVM_CACHE_BYTES_PER_CHUNK 44           /* mapping 16 + hint 20 + hint overhead 8 */

enum slot_state {
  SLOT_FREE,
  SLOT_PROMOTING,                      /* being copied in, in chunk_slot */
  SLOT_CANCELLED,                      /* ... written meanwhile: freed when copied */
  SLOT_CACHED,
};
#define SLOT_STATE_MASK 0x7fu

struct readcache {
  struct cl_target *origin;
  struct cl_target *cache;
  struct cluster *cluster;
  uint64_t chunk_bytes;
  uint64_t origin_chunks;
  uint32_t slots;
  uint64_t migration_threshold_bytes;
  uint32_t promote_after_misses;

  uint32_t *slot_chunk;                /* the chunk a slot holds or is getting */
  uint8_t *slot_state;                 /* enum slot_state */
  uint32_t *free_stack;                /* freed slots; never used ones from next_fresh */
  uint32_t free_count;
  uint32_t next_fresh;
  uint32_t hand;                       /* CLOCK */
  uint32_t *chunk_slot;                /* per origin chunk: its slot + 1, 0 for none */
  uint8_t *misses;                     /* 2 bits per origin chunk */

  struct cl_ranges warm;               /* regions to start warm, in chunks */
  struct cl_ranges warm_served_above;  /* ... less these, in chunks (readcache_warm_exclude) */

  uint64_t promoting_bytes;            /* copies in flight */
  uint32_t cached_chunks;

  uint64_t read_hits;
  uint64_t read_misses;
  uint64_t promotions;                 /* started (cancelled ones too) */
  uint64_t promotions_skipped;         /* refused: threshold, or no slot to take */
  uint64_t promotions_cancelled;
  uint64_t evictions;
  uint64_t write_hits;
};

/* ---------------------------------------------------- chunk -> slot -- */

/* chunk_slot holds slot + 1 (0: none), and beside it what a hit needs, so
 * a hit reads one word: whether the chunk is cached (not on its way in)
 * and CLOCK's reference bit. */
#define CHUNK_CACHED (UINT32_C (1) << 31)
#define CHUNK_REFERENCED (UINT32_C (1) << 30)
#define CHUNK_SLOT_MASK (CHUNK_REFERENCED - 1)

/* The slot holding (or getting) chunk, or NO_SLOT. */
static uint32_t
slot_of_chunk (const struct readcache *rc, uint64_t chunk)
{
  uint32_t v = rc->chunk_slot[chunk] & CHUNK_SLOT_MASK;
  return v ? v - 1 : NO_SLOT;
}

/* ------------------------------------------------------------- slots -- */

static enum slot_state
state_of (const struct readcache *rc, uint32_t slot)
{
  return (enum slot_state) (rc->slot_state[slot] & SLOT_STATE_MASK);
}

static uint32_t
free_slots (const struct readcache *rc)
{
  return rc->free_count + (rc->slots - rc->next_fresh);
}

static uint32_t
slot_take_free (struct readcache *rc)
{
  if (rc->free_count > 0)
    return rc->free_stack[--rc->free_count];
  return rc->next_fresh < rc->slots ? rc->next_fresh++ : NO_SLOT;
}

static void
slot_release (struct readcache *rc, uint32_t slot)
{
  if (state_of (rc, slot) == SLOT_CACHED)
    rc->cached_chunks--;
  rc->chunk_slot[rc->slot_chunk[slot]] = 0;
  rc->slot_state[slot] = SLOT_FREE;
  rc->free_stack[rc->free_count++] = slot;
}

/* CLOCK: the first cached chunk the hand finds unreferenced goes; the
 * ones it passes lose their reference.  Slots being filled are passed
 * over.  NO_SLOT when two turns find none (all being filled). */
static uint32_t
slot_evict (struct readcache *rc)
{
  for (uint64_t step = 0; step < 2 * (uint64_t) rc->slots; step++) {
    uint32_t slot = rc->hand;
    rc->hand = (rc->hand + 1) % rc->slots;
    if (state_of (rc, slot) != SLOT_CACHED)
      continue;
    uint32_t *entry = &rc->chunk_slot[rc->slot_chunk[slot]];
    if (*entry & CHUNK_REFERENCED) {
      *entry &= ~CHUNK_REFERENCED;
      continue;
    }
    slot_release (rc, slot);
    rc->evictions++;
    return slot_take_free (rc);
  }
  return NO_SLOT;
}

static void
slot_fill (struct readcache *rc, uint32_t slot, uint64_t chunk, enum slot_state state)
{
  rc->slot_chunk[slot] = (uint32_t) chunk;
  rc->slot_state[slot] = (uint8_t) state;
  rc->chunk_slot[chunk] = (slot + 1) | (state == SLOT_CACHED ? CHUNK_CACHED : 0);
  if (state == SLOT_CACHED)
    rc->cached_chunks++;
}

/* ------------------------------------------------------ miss counters -- */

static unsigned
misses_of (const struct readcache *rc, uint64_t chunk)
{
  return (rc->misses[chunk / 4] >> (2 * (chunk % 4))) & 3u;
}

static void
misses_set (struct readcache *rc, uint64_t chunk, unsigned count)
{
  unsigned shift = 2 * (unsigned) (chunk % 4);
  rc->misses[chunk / 4] = (uint8_t) ((rc->misses[chunk / 4] & ~(3u << shift)) | (count << shift));
}

/* --------------------------------------------------------- promotion -- */

static uint64_t
chunk_length (const struct readcache *rc, uint64_t chunk)
{
  return sl_min_u64 (rc->chunk_bytes, rc->origin->capacity_bytes - chunk * rc->chunk_bytes);
}

static void promote_read_done (struct cl_io *child);
static void promote_write_done (struct cl_io *child);

/* Starts copying chunk in; false when the migration threshold (or a cache
 * whose every slot is being filled) says not now. */
static bool
promote (struct readcache *rc, uint64_t chunk)
{
  if (rc->promoting_bytes >= rc->migration_threshold_bytes)
    return false;
  uint32_t slot = slot_take_free (rc);
  if (slot == NO_SLOT)
    slot = slot_evict (rc);
  if (slot == NO_SLOT)
    return false;
  slot_fill (rc, slot, chunk, SLOT_PROMOTING);
  rc->promoting_bytes += chunk_length (rc, chunk);
  rc->promotions++;
  cl_submit_own (rc->origin, SL_OP_READ, 0, chunk * rc->chunk_bytes, chunk_length (rc, chunk),
                 promote_read_done, rc, slot, 0);
  return true;
}

static void
promote_read_done (struct cl_io *child)
{
  struct readcache *rc = child->owner;
  uint32_t slot = (uint32_t) child->scratch[0];
  uint64_t length = child->length_bytes;
  cl_io_free (rc->cluster, child);
  cl_submit_own (rc->cache, SL_OP_WRITE, 0, (uint64_t) slot * rc->chunk_bytes, length,
                 promote_write_done, rc, slot, 0);
}

static void
promote_write_done (struct cl_io *child)
{
  struct readcache *rc = child->owner;
  uint32_t slot = (uint32_t) child->scratch[0];
  rc->promoting_bytes -= child->length_bytes;
  cl_io_free (rc->cluster, child);
  if (state_of (rc, slot) == SLOT_PROMOTING) {
    rc->slot_state[slot] = SLOT_CACHED;
    rc->chunk_slot[rc->slot_chunk[slot]] |= CHUNK_CACHED;
    rc->cached_chunks++;
  }
  else                                 /* SLOT_CANCELLED: written meanwhile */
    slot_release (rc, slot);
}

/* A miss on chunk: counted, and the chunk promoted at the configured
 * miss (a refused promotion keeps the count, so the next miss retries). */
static void
count_miss (struct readcache *rc, uint64_t chunk)
{
  unsigned seen = misses_of (rc, chunk) + 1;
  if (seen < rc->promote_after_misses) {
    misses_set (rc, chunk, seen);
    return;
  }
  if (promote (rc, chunk))
    misses_set (rc, chunk, 0);
  else {
    rc->promotions_skipped++;
    misses_set (rc, chunk, rc->promote_after_misses - 1);
  }
}

/* ------------------------------------------------------------- I/O -- */

/* The chunk being copied in changed under the copy: the slot is freed
 * when the copy completes instead of holding a stale chunk. */
static void
cancel_promotion (struct readcache *rc, uint32_t slot)
{
  if (state_of (rc, slot) == SLOT_PROMOTING) {
    rc->slot_state[slot] = SLOT_CANCELLED;
    rc->promotions_cancelled++;
  }
}

/* Drops chunk's slot, or cancels its promotion. */
static void
drop_slot (struct readcache *rc, uint32_t slot)
{
  if (state_of (rc, slot) == SLOT_CACHED)
    slot_release (rc, slot);
  else
    cancel_promotion (rc, slot);
}

static void
read_piece (struct readcache *rc, struct cl_io *io, uint64_t chunk, uint64_t offset_bytes,
            uint64_t length_bytes)
{
  uint32_t *entry = &rc->chunk_slot[chunk];
  uint32_t slot = slot_of_chunk (rc, chunk);
  if (*entry & CHUNK_CACHED) {
    rc->read_hits++;
    *entry |= CHUNK_REFERENCED;
    cl_submit_only (rc->cache, io, SL_OP_READ, 0,
                    (uint64_t) slot * rc->chunk_bytes + offset_bytes % rc->chunk_bytes,
                    length_bytes, rc);
    return;
  }
  rc->read_misses++;
  cl_submit_only (rc->origin, io, SL_OP_READ, 0, offset_bytes, length_bytes, rc);
  if (slot == NO_SLOT)                 /* not already on its way in */
    count_miss (rc, chunk);
}

static void
write_piece (struct readcache *rc, struct cl_io *io, uint64_t chunk, uint64_t offset_bytes,
             uint64_t length_bytes)
{
  cl_submit_child (rc->origin, io, SL_OP_WRITE, io->flags, offset_bytes, length_bytes,
                   cl_part_done, rc);
  uint32_t slot = slot_of_chunk (rc, chunk);
  if (slot == NO_SLOT)
    return;
  if (state_of (rc, slot) != SLOT_CACHED) {
    cancel_promotion (rc, slot);
    return;
  }
  rc->write_hits++;
  cl_submit_child (rc->cache, io, SL_OP_WRITE, io->flags,
                   (uint64_t) slot * rc->chunk_bytes + offset_bytes % rc->chunk_bytes,
                   length_bytes, cl_part_done, rc);
}

/* Drops the cached chunks in [first, end): chunk by chunk for a short
 * range, over the slots for one longer than the cache (a whole-device
 * discard). */
static void
drop_chunks (struct readcache *rc, uint64_t first, uint64_t end)
{
  if (end <= first)
    return;
  if (end - first <= rc->slots) {
    for (uint64_t chunk = first; chunk < end; chunk++) {
      uint32_t slot = slot_of_chunk (rc, chunk);
      if (slot != NO_SLOT)
        drop_slot (rc, slot);
    }
    return;
  }
  for (uint32_t slot = 0; slot < rc->next_fresh; slot++)
    if (state_of (rc, slot) != SLOT_FREE && rc->slot_chunk[slot] >= first
        && rc->slot_chunk[slot] < end)
      drop_slot (rc, slot);
}

static void
readcache_submit (struct cl_target *t, struct cl_io *io)
{
  struct readcache *rc = t->self;
  if (io->op == SL_OP_FLUSH) {
    cl_submit_child (rc->origin, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, rc);
    cl_submit_child (rc->cache, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, rc);
    return;
  }
  uint64_t cb = rc->chunk_bytes;
  uint64_t end = sl_min_u64 (io->offset_bytes + io->length_bytes, t->capacity_bytes);
  if (io->offset_bytes >= end) {
    cl_io_complete_at (io, cl_now_ns (t->cluster));
    return;
  }
  if (io->op == SL_OP_TRIM) {
    drop_chunks (rc, (io->offset_bytes + cb - 1) / cb, end == t->capacity_bytes
                 ? rc->origin_chunks : end / cb);
    cl_submit_child (rc->origin, io, SL_OP_TRIM, 0, io->offset_bytes, end - io->offset_bytes,
                     cl_part_done, rc);
    return;
  }
  for (uint64_t offset = io->offset_bytes; offset < end;) {
    uint64_t chunk = offset / cb, piece = sl_min_u64 (end, (chunk + 1) * cb) - offset;
    if (io->op == SL_OP_READ)
      read_piece (rc, io, chunk, offset, piece);
    else
      write_piece (rc, io, chunk, offset, piece);
    offset += piece;
  }
}

/* ---------------------------------------------------------- warm-up -- */

/* A fixed mix of the chunk number (splitmix64's finaliser): the same
 * chunks are chosen every run, with no generator state. */
static uint64_t
chunk_mix (uint64_t x)
{
  x += UINT64_C (0x9E3779B97F4A7C15);
  x = (x ^ (x >> 30)) * UINT64_C (0xBF58476D1CE4E5B9);
  x = (x ^ (x >> 27)) * UINT64_C (0x94D049BB133111EB);
  return x ^ (x >> 31);
}

/* Warm regions are gathered first (every worker's, from every export
 * over this cache) and filled together at the end: a uniform workload
 * over all of them leaves each chunk cached with the same chance, so the
 * first region must not take every slot. */
static void
readcache_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct readcache *rc = t->self;
  uint64_t end = sl_min_u64 (offset_bytes + length_bytes, t->capacity_bytes);
  if (offset_bytes < end)
    cl_ranges_add (&rc->warm, offset_bytes / rc->chunk_bytes, (end - 1) / rc->chunk_bytes + 1);
  cl_warm (rc->origin, offset_bytes, length_bytes);
}

/* The chunks wholly in a region the layer above serves: no read of them
 * comes down, so none takes a slot. */
static void
readcache_warm_exclude (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct readcache *rc = t->self;
  uint64_t first = (offset_bytes + rc->chunk_bytes - 1) / rc->chunk_bytes;
  uint64_t end = sl_min_u64 (offset_bytes + length_bytes, t->capacity_bytes) / rc->chunk_bytes;
  cl_ranges_add (&rc->warm_served_above, first, end);
}

/* The steady state of a uniform workload over the warm regions: all of
 * their chunks if the free slots hold them, else each with probability
 * free slots / their chunks (a hash of the chunk: no shared random
 * stream), until the slots are full. */
static int
readcache_warm_finish (struct cl_target *t, char *err, size_t err_bytes)
{
  (void) err;
  (void) err_bytes;
  struct readcache *rc = t->self;
  for (size_t i = 0; i < rc->warm_served_above.count; i++)
    cl_ranges_remove (&rc->warm, rc->warm_served_above.range[i].first,
                      rc->warm_served_above.range[i].end);
  cl_ranges_free (&rc->warm_served_above);
  uint64_t chunks = cl_ranges_merge (&rc->warm), room = free_slots (rc);
  /* chance = room / chunks as a fraction of 2^32 */
  uint64_t chance = chunks <= room ? UINT64_C (1) << 32 : (room << 32) / chunks;
  for (size_t i = 0; i < rc->warm.count; i++)
    for (uint64_t chunk = rc->warm.range[i].first;
         chunk < rc->warm.range[i].end && free_slots (rc) > 0; chunk++) {
      if ((chunk_mix (chunk) >> 32) >= chance || slot_of_chunk (rc, chunk) != NO_SLOT)
        continue;
      slot_fill (rc, slot_take_free (rc), chunk, SLOT_CACHED);
    }
  cl_ranges_free (&rc->warm);
  return 0;
}

/* ----------------------------------------------------------- target -- */

static void
readcache_write_counters (struct cl_target *t, FILE *out)
{
  const struct readcache *rc = t->self;
  uint64_t reads = rc->read_hits + rc->read_misses;
  fprintf (out, "\"chunk_bytes\": %" PRIu64 ", \"slots\": %" PRIu32 ", \"cached_chunks\": %"
           PRIu32 ", \"read_hits\": %" PRIu64 ", \"read_misses\": %" PRIu64
           ", \"promotions\": %" PRIu64 ", \"evictions\": %" PRIu64
           ", \"promotions_skipped\": %" PRIu64 ", \"promotions_cancelled\": %" PRIu64
           ", \"write_hits\": %" PRIu64 ", \"hit_pct\": %.2f",
           rc->chunk_bytes, rc->slots, rc->cached_chunks, rc->read_hits, rc->read_misses,
           rc->promotions, rc->evictions, rc->promotions_skipped, rc->promotions_cancelled,
           rc->write_hits, reads ? 100.0 * (double) rc->read_hits / (double) reads : 0.0);
}

static void
readcache_destroy (struct cl_target *t)
{
  struct readcache *rc = t->self;
  free (rc->slot_chunk);
  free (rc->slot_state);
  free (rc->free_stack);
  free (rc->chunk_slot);
  free (rc->misses);
  cl_ranges_free (&rc->warm);
  cl_ranges_free (&rc->warm_served_above);
  free (rc);
}

void
cl_readcache_defaults (struct cl_readcache_config *config)
{
  *config = (struct cl_readcache_config) {
    .chunk_bytes = 0,
    .migration_threshold_bytes = 2048 * 512,
    .promote_after_misses = 2,
  };
}

/* lvm's choice: the default chunk, or the smallest multiple of 32 KiB
 * that keeps the cache within its chunk limit. */
static uint64_t
lvm_chunk_bytes (uint64_t cache_bytes)
{
  uint64_t least = (cache_bytes + LVM_MAX_CHUNKS - 1) / LVM_MAX_CHUNKS;
  uint64_t chunk = (least + LVM_CHUNK_STEP_BYTES - 1) / LVM_CHUNK_STEP_BYTES * LVM_CHUNK_STEP_BYTES;
  return sl_max_u64 (chunk, LVM_CHUNK_MIN_BYTES);
}

/* What of a cache volume of cachevol_bytes holds data: lvm puts dm-cache's
 * metadata first (lvm2's cache_vol_set_params and _cache_min_metadata_size,
 * lib/metadata/cache_manip.c): 4 MiB of transaction overhead and, for every
 * chunk of the volume, its mapping (16 bytes), hint (20) and the hint's
 * overhead (8), rounded up to whole extents.  A lab-sized read cache loses
 * a good part of itself to it (8 of 36 MiB), a study's a few thousandths. */
uint64_t
cl_readcache_data_bytes (uint64_t cachevol_bytes, const struct cl_readcache_config *config,
                         uint64_t extent_bytes)
{
  uint64_t chunk_bytes = config->chunk_bytes ? config->chunk_bytes : lvm_chunk_bytes (cachevol_bytes);
  uint64_t metadata_bytes = LVM_CACHE_TRANSACTION_BYTES
    + cachevol_bytes / chunk_bytes * LVM_CACHE_BYTES_PER_CHUNK;
  metadata_bytes = (metadata_bytes + extent_bytes - 1) / extent_bytes * extent_bytes;
  return cachevol_bytes > metadata_bytes ? cachevol_bytes - metadata_bytes : 0;
}

static int
check_config (const char *name, const struct cl_target *origin, const struct cl_target *cache,
              const struct cl_readcache_config *config, uint64_t chunk_bytes, char *err,
              size_t err_bytes)
{
  if (chunk_bytes == 0 || chunk_bytes % LVM_CHUNK_STEP_BYTES != 0) {
    snprintf (err, err_bytes, "%s: chunk of %" PRIu64 " bytes (dm-cache: a multiple of 32 KiB)",
              name, chunk_bytes);
    return -1;
  }
  uint64_t slots = cache->capacity_bytes / chunk_bytes;
  if (slots == 0 || slots > MAX_SLOTS) {
    snprintf (err, err_bytes, "%s: a cache of %" PRIu64 " chunks on %s (1 to %" PRIu32 ")",
              name, slots, cache->name, MAX_SLOTS);
    return -1;
  }
  uint64_t chunks = (origin->capacity_bytes + chunk_bytes - 1) / chunk_bytes;
  if (chunks == 0 || chunks >= UINT32_MAX) {
    snprintf (err, err_bytes, "%s: an origin of %" PRIu64 " chunks on %s (1 to %" PRIu32 ")",
              name, chunks, origin->name, UINT32_MAX - 1);
    return -1;
  }
  if (config->promote_after_misses < 1 || config->promote_after_misses > MISS_COUNT_MAX + 1) {
    snprintf (err, err_bytes, "%s: promote after %" PRIu32 " misses (1 to %u)", name,
              config->promote_after_misses, MISS_COUNT_MAX + 1);
    return -1;
  }
  if (config->migration_threshold_bytes == 0) {
    snprintf (err, err_bytes, "%s: a migration threshold of 0 bytes never promotes", name);
    return -1;
  }
  return 0;
}

struct cl_target *
cl_readcache_new (struct cluster *c, const char *node, const char *name,
                  struct cl_target *origin, struct cl_target *cache,
                  const struct cl_readcache_config *config, char *err, size_t err_bytes)
{
  uint64_t chunk_bytes = config->chunk_bytes ? config->chunk_bytes
    : lvm_chunk_bytes (cache->capacity_bytes);
  if (check_config (name, origin, cache, config, chunk_bytes, err, err_bytes) < 0)
    return NULL;
  struct readcache *rc = cl_xcalloc (1, sizeof *rc);
  rc->origin = origin;
  rc->cache = cache;
  rc->cluster = c;
  rc->chunk_bytes = chunk_bytes;
  rc->origin_chunks = (origin->capacity_bytes + chunk_bytes - 1) / chunk_bytes;
  rc->slots = (uint32_t) (cache->capacity_bytes / chunk_bytes);
  rc->migration_threshold_bytes = config->migration_threshold_bytes;
  rc->promote_after_misses = config->promote_after_misses;
  rc->slot_chunk = cl_xcalloc (rc->slots, sizeof *rc->slot_chunk);
  rc->slot_state = cl_xcalloc (rc->slots, sizeof *rc->slot_state);
  rc->free_stack = cl_xcalloc (rc->slots, sizeof *rc->free_stack);
  rc->chunk_slot = cl_xcalloc (rc->origin_chunks, sizeof *rc->chunk_slot);
  rc->misses = cl_xcalloc ((size_t) (rc->origin_chunks + 3) / 4, 1);
  c->memory_bytes += sizeof *rc + (uint64_t) rc->slots
    * (sizeof *rc->slot_chunk + sizeof *rc->slot_state + sizeof *rc->free_stack)
    + rc->origin_chunks * sizeof *rc->chunk_slot + (rc->origin_chunks + 3) / 4;
  static const struct cl_target_ops ops = {
    .kind = "readcache", .submit = readcache_submit, .warm = readcache_warm,
    .warm_finish = readcache_warm_finish, .warm_exclude = readcache_warm_exclude,
    .write_counters = readcache_write_counters, .destroy = readcache_destroy,
  };
  return cl_target_new (c, &ops, rc, node, name, origin->capacity_bytes, true);
}
