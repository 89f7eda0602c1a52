/* ssd_ftl.c — the SSD's page-mapped FTL: exact map of the units written in
 * this run, statistical counts for the rest, per-block valid counts,
 * free blocks, greedy victims (ssd_ftl.h explains the memory design).
 *
 * Modelling choices the datasheets do not settle:
 *   - an FTL block is one erase block of every plane of a die (multi-plane
 *     operation), programmed a multi-plane page (program unit) at a time;
 *     host and GC data go to separate open blocks per die;
 *   - GC relocates within the die; a step moves at most one program unit;
 *     the victim's last step is padded rather than topped up from the next;
 *   - pages read to collect a step: with the victim's valid fraction u and
 *     k units per page, a page holds a valid unit with probability
 *     1 - (1 - u)^k, so n units cost n (1 - (1 - u)^k) / (k u) page reads.
 */
#define _GNU_SOURCE
#include "ssd_ftl.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sorted_starts.h"

#define INITIAL_ENTRIES 65536u
/* Eviction prefers entries whose loss costs no information: tries this
 * many random picks before taking any live entry. */
#define EVICTION_PICKS 8
/* Trims of more statistical units than this invalidate in bulk. */
#define BULK_INVALIDATE_UNITS 65536u

/* ------------------------------------------------------------------ rng -- */

static inline uint64_t
rng_next (uint64_t *s)
{
  /* splitmix64: statistically fine, one multiply chain, any seed */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__extension__ typedef unsigned __int128 u128;

static inline uint64_t
rng_below (uint64_t *s, uint64_t bound)
{
  return (uint64_t) (((u128) rng_next (s) * bound) >> 64);
}

uint64_t
ssd_ftl_random_below (uint64_t *state, uint64_t bound)
{
  return rng_below (state, bound);
}

/* -------------------------------------------------------------- helpers -- */

static inline uint32_t die_of (const struct ssd_ftl *f, uint32_t block)
{
  return block / f->blocks_per_die;
}

static inline uint32_t block_of_ppa (const struct ssd_ftl *f, uint32_t ppa)
{
  return ppa / f->units_per_block;
}

static inline uint64_t region_of (uint32_t lba)
{
  return lba >> SSD_REGION_SHIFT;
}

static inline uint32_t
region_size (const struct ssd_ftl *f, uint64_t r)
{
  uint64_t start = r << SSD_REGION_SHIFT;
  uint64_t end = start + SSD_REGION_UNITS;
  return (uint32_t) ((end > f->logical_units ? f->logical_units : end) - start);
}

/* -------------------------------------------------------------- fenwick -- */

/* The Fenwick tree counts the statistical units a random draw may take:
 * a block's valid_stat but the log's units there, held (their block known)
 * or anonymous (drawn from a tree of their own; ssd_ftl.h). */
static inline uint32_t
log_units_in (const struct ssd_ftl *f, uint32_t b)
{
  return f->log_held ? f->log_held[b] + f->log_anon[b] : 0;
}

static inline uint32_t
drawable_of (const struct ssd_ftl *f, uint32_t b)
{
  return f->valid_stat[b] - log_units_in (f, b);
}

static void
tree_add (struct ssd_ftl *f, uint64_t *tree, uint64_t *total, uint32_t block, int64_t delta)
{
  *total += (uint64_t) delta;
  for (uint32_t i = block + 1; i <= f->block_count; i += i & (~i + 1))
    tree[i] += (uint64_t) delta;
}

/* The block holding unit number r of tree (0 <= r < its total). */
static uint32_t
tree_find (const struct ssd_ftl *f, const uint64_t *tree, uint64_t r)
{
  uint32_t pos = 0;
  for (uint32_t step = f->fenwick_top; step > 0; step >>= 1) {
    uint32_t next = pos + step;
    if (next <= f->block_count && tree[next] <= r) {
      pos = next;
      r -= tree[next];
    }
  }
  return pos;                  /* 0-based block = 1-based pos + 1 - 1 */
}

static inline void
fenwick_add (struct ssd_ftl *f, uint32_t block, int64_t delta)
{
  tree_add (f, f->fenwick, &f->stat_drawable, block, delta);
}

static inline void
anon_add (struct ssd_ftl *f, uint32_t block, int64_t delta)
{
  f->log_anon[block] += (uint32_t) delta;
  tree_add (f, f->fenwick_anon, &f->anon_total, block, delta);
}

/* Builds tree[1..block_count] from count(b) per block; the sum. */
static uint64_t
tree_build (struct ssd_ftl *f, uint64_t *tree, uint32_t (*count) (const struct ssd_ftl *, uint32_t))
{
  uint64_t total = 0;
  for (uint32_t i = 1; i <= f->block_count; i++) {
    tree[i] = count (f, i - 1);
    total += tree[i];
  }
  for (uint32_t i = 1; i <= f->block_count; i++) {
    uint32_t parent = i + (i & (~i + 1));
    if (parent <= f->block_count)
      tree[parent] += tree[i];
  }
  return total;
}

static uint32_t
anon_of (const struct ssd_ftl *f, uint32_t b)
{
  return f->log_anon[b];
}

void
ssd_ftl_fenwick_rebuild (struct ssd_ftl *f)
{
  f->stat_total = 0;
  for (uint32_t b = 0; b < f->block_count; b++)
    f->stat_total += f->valid_stat[b];
  f->stat_drawable = tree_build (f, f->fenwick, drawable_of);
  f->anon_total = f->log_held ? tree_build (f, f->fenwick_anon, anon_of) : 0;
}

/* ------------------------------------------------------------- buckets -- */

static inline uint32_t *
bucket_slot (const struct ssd_ftl *f, uint32_t die, uint32_t valid)
{
  return &f->bucket_head[(uint64_t) die * (f->units_per_block + 1) + valid];
}

void
ssd_ftl_bucket_insert (struct ssd_ftl *f, uint32_t block)
{
  uint32_t die = die_of (f, block), valid = ssd_ftl_block_valid (f, block);
  uint32_t *head = bucket_slot (f, die, valid);
  f->bucket_prev[block] = SSD_NONE;
  f->bucket_next[block] = *head;
  if (*head != SSD_NONE)
    f->bucket_prev[*head] = block;
  *head = block;
  if (valid < f->min_bucket[die])
    f->min_bucket[die] = valid;
}

static void
bucket_remove (struct ssd_ftl *f, uint32_t block, uint32_t valid)
{
  uint32_t prev = f->bucket_prev[block], next = f->bucket_next[block];
  if (prev != SSD_NONE)
    f->bucket_next[prev] = next;
  else
    *bucket_slot (f, die_of (f, block), valid) = next;
  if (next != SSD_NONE)
    f->bucket_prev[next] = prev;
}

/* One unit of block b became invalid (explicit or statistical). */
static void
block_invalidate (struct ssd_ftl *f, uint32_t b, bool explicit_unit)
{
  uint32_t before = ssd_ftl_block_valid (f, b);
  if (f->state[b] == SSD_BLOCK_FULL)
    bucket_remove (f, b, before);
  if (explicit_unit)
    f->valid_explicit[b]--;
  else {
    f->valid_stat[b]--;
    f->stat_total--;
    fenwick_add (f, b, -1);
  }
  if (f->state[b] == SSD_BLOCK_FULL)
    ssd_ftl_bucket_insert (f, b);
}

/* The statistical units of a block, by what is known of them. */
enum stat_class {
  STAT_REST,                   /* not the log's: drawn from the main tree */
  STAT_LOG_HELD,               /* the log's, still in their laid-out block */
  STAT_LOG_ANON,               /* the log's, moved since: drawn from the log's tree */
};

/* A statistical unit of class in block b is no longer valid. */
static void
stat_unit_gone (struct ssd_ftl *f, uint32_t b, enum stat_class class)
{
  if (class == STAT_REST) {
    block_invalidate (f, b, false);
    return;
  }
  bool full = f->state[b] == SSD_BLOCK_FULL;
  if (full)
    bucket_remove (f, b, ssd_ftl_block_valid (f, b));
  f->valid_stat[b]--;
  f->stat_total--;
  if (class == STAT_LOG_HELD)
    f->log_held[b]--;
  else
    anon_add (f, b, -1);
  if (full)
    ssd_ftl_bucket_insert (f, b);
}

static void log_release_block (struct ssd_ftl *f, uint32_t b);

/* A mapped statistical unit of class (not held), somewhere, is no longer
 * valid: drawn in proportion to its class's counts (the other class's when
 * its own has none left: the region counts' ratio is approximate). */
static void
invalidate_random_stat_of (struct ssd_ftl *f, enum stat_class class)
{
  if (class == STAT_LOG_ANON && f->anon_total == 0)
    class = STAT_REST;
  if (class == STAT_REST && f->stat_drawable == 0)
    class = STAT_LOG_ANON;
  if (class == STAT_LOG_ANON && f->anon_total == 0 && f->log_held) {
    /* only held units left: a block of them lets its units go (rare) */
    uint32_t start = (uint32_t) rng_below (&f->rng, f->block_count);
    for (uint32_t i = 0; i < f->block_count && f->anon_total == 0; i++)
      log_release_block (f, (start + i) % f->block_count);
  }
  if (class == STAT_LOG_ANON && f->anon_total > 0)
    stat_unit_gone (f, tree_find (f, f->fenwick_anon, rng_below (&f->rng, f->anon_total)),
                    STAT_LOG_ANON);
  else if (class == STAT_REST)
    stat_unit_gone (f, tree_find (f, f->fenwick, rng_below (&f->rng, f->stat_drawable)),
                    STAT_REST);
}

static inline void
invalidate_random_stat (struct ssd_ftl *f)
{
  invalidate_random_stat_of (f, STAT_REST);
}

/* ---------------------------------------------------------- log layout -- */

/* A log unit's bit, in chunks of this many units (256 MiB of data, 8 KiB
 * of bits) made when one of theirs first leaves. */
#define LOG_CHUNK_SHIFT 16u
#define LOG_CHUNK_WORDS ((1u << LOG_CHUNK_SHIFT) / 64)
/* A chunk whose every unit has left (a whole-chunk trim, or out of
 * memory to make it): read as zeros, never written. */
static const uint64_t log_chunk_gone[LOG_CHUNK_WORDS];
#define LOG_CHUNK_GONE ((uint64_t *) log_chunk_gone)

int
ssd_ftl_log_new (struct ssd_ftl *f, uint64_t first, uint64_t count, uint64_t oldest,
                 uint32_t blocks, bool slot_starts)
{
  f->log_first = (uint32_t) first;
  f->log_units = (uint32_t) count;
  f->log_oldest = (uint32_t) oldest;
  f->log_block_count = blocks;
  f->log_chunk_count = ssd_ftl_log_chunks (count);
  f->log_block = malloc (blocks * sizeof *f->log_block);
  f->log_block_erases = malloc (blocks * sizeof *f->log_block_erases);
  f->log_placed = calloc (f->log_chunk_count, sizeof *f->log_placed);   /* every unit placed */
  f->log_held = calloc (f->block_count, sizeof *f->log_held);
  f->log_anon = calloc (f->block_count, sizeof *f->log_anon);
  f->fenwick_anon = calloc ((size_t) f->block_count + 1, sizeof *f->fenwick_anon);
  f->anon_total = 0;
  if (slot_starts)
    f->log_slot_start = malloc (((size_t) blocks + 1) * sizeof *f->log_slot_start);
  return f->log_block && f->log_block_erases && f->log_placed && f->log_held && f->log_anon
    && f->fenwick_anon && (!slot_starts || f->log_slot_start) ? 0 : -1;
}

uint32_t
ssd_ftl_log_chunks (uint64_t units)
{
  return (uint32_t) ((units + (1u << LOG_CHUNK_SHIFT) - 1) >> LOG_CHUNK_SHIFT);
}

/* Log unit i (counted from log_first) leaves the layout; whether it was
 * still placed. */
static bool
log_take (struct ssd_ftl *f, uint64_t i)
{
  uint64_t **chunk = &f->log_placed[i >> LOG_CHUNK_SHIFT];
  if (*chunk == LOG_CHUNK_GONE)
    return false;
  if (*chunk == NULL) {
    *chunk = malloc (LOG_CHUNK_WORDS * sizeof **chunk);
    if (*chunk == NULL) {
      *chunk = LOG_CHUNK_GONE;         /* its overwrites draw blocks in proportion */
      return false;
    }
    memset (*chunk, 0xff, LOG_CHUNK_WORDS * sizeof **chunk);
  }
  uint64_t word = (i >> 6) & (LOG_CHUNK_WORDS - 1), bit = UINT64_C (1) << (i & 63);
  bool placed = ((*chunk)[word] & bit) != 0;
  (*chunk)[word] &= ~bit;
  return placed;
}

/* lba's index in the log (from log_first); false when it is not one of
 * its units. */
static bool
log_index (const struct ssd_ftl *f, uint64_t lba, uint64_t *i)
{
  *i = lba - f->log_first;            /* below log_first: wraps past log_units */
  return f->log_placed != NULL && lba >= f->log_first && *i < f->log_units;
}

/* The block log unit i (from log_first) was laid out in while it still
 * holds it (not collected since), else SSD_NONE. */
static uint32_t
log_unit_block (const struct ssd_ftl *f, uint64_t i)
{
  uint64_t age = (i + f->log_units - f->log_oldest) % f->log_units;
  uint32_t k;
  if (f->log_slot_start == NULL)
    k = (uint32_t) (age / f->units_per_block);
  else                         /* the block holding the unit's slot */
    k = (uint32_t) sl_piece_at (f->log_slot_start, f->log_block_count,
                                age * f->log_scatter % f->log_units);
  uint32_t b = f->log_block[k];
  return f->erase_count[b] == f->log_block_erases[k] && f->log_held[b] > 0 ? b : SSD_NONE;
}

/* The class a statistical unit at lba is of. */
static inline enum stat_class
class_of (const struct ssd_ftl *f, uint32_t lba)
{
  uint64_t i;
  return log_index (f, lba, &i) ? STAT_LOG_ANON : STAT_REST;
}

/* lba's unit, now statistical, is one more valid in block b (in its
 * class's tree; the caller moves the block's bucket if need be). */
static void
stat_unit_added (struct ssd_ftl *f, uint32_t b, uint32_t lba)
{
  f->valid_stat[b]++;
  f->stat_total++;
  if (class_of (f, lba) == STAT_LOG_ANON)
    anon_add (f, b, 1);
  else
    fenwick_add (f, b, 1);
}

/* The mapped statistical unit at lba is no longer valid: in its own block
 * where the log layout knows it (it leaves the layout), else in one drawn
 * in proportion among its class. */
static void
invalidate_stat_of (struct ssd_ftl *f, uint32_t lba)
{
  uint64_t i;
  if (!log_index (f, lba, &i)) {
    invalidate_random_stat (f);
    return;
  }
  uint32_t b = log_take (f, i) ? log_unit_block (f, i) : SSD_NONE;
  if (b != SSD_NONE)
    stat_unit_gone (f, b, STAT_LOG_HELD);
  else
    invalidate_random_stat_of (f, STAT_LOG_ANON);
}

/* Block b's laid-out units are no longer known to be there (GC takes the
 * block): still the log's, drawn from its tree from now on. */
static void
log_release_block (struct ssd_ftl *f, uint32_t b)
{
  if (f->log_held == NULL || f->log_held[b] == 0)
    return;
  uint32_t held = f->log_held[b];
  f->log_held[b] = 0;
  anon_add (f, b, held);
}

/* Log unit i leaves the layout without being written (a trim): still
 * valid until the trim's count takes it, now an anonymous one of the
 * log's. */
static void
log_forget_unit (struct ssd_ftl *f, uint64_t i, bool placed)
{
  uint32_t b;
  if (placed && (b = log_unit_block (f, i)) != SSD_NONE) {
    f->log_held[b]--;
    anon_add (f, b, 1);
  }
}

/* The unit at lba leaves the layout without a write to it (the region's
 * count took it for unmapped). */
static void
log_leave (struct ssd_ftl *f, uint32_t lba)
{
  uint64_t i;
  if (log_index (f, lba, &i))
    log_forget_unit (f, i, log_take (f, i));
}

/* Log units [from, to) (indexes from log_first) leave the layout. */
static void
log_forget_indexes (struct ssd_ftl *f, uint64_t from, uint64_t to)
{
  const uint64_t chunk_units = UINT64_C (1) << LOG_CHUNK_SHIFT;
  while (from < to) {
    uint64_t c = from >> LOG_CHUNK_SHIFT, chunk_end = (c + 1) * chunk_units;
    if (from == c * chunk_units && to >= chunk_end && f->log_placed[c] == NULL) {
      /* a whole chunk never changed: every unit placed, no bits to make */
      for (; from < chunk_end; from++)
        log_forget_unit (f, from, true);
      f->log_placed[c] = LOG_CHUNK_GONE;
      continue;
    }
    log_forget_unit (f, from, log_take (f, from));
    from++;
  }
}

/* Units [first, end) of the drive leave the log layout (a trim of whole
 * regions). */
static void
log_forget_range (struct ssd_ftl *f, uint64_t first, uint64_t end)
{
  uint64_t log_end = (uint64_t) f->log_first + f->log_units;
  if (f->log_placed == NULL || end <= f->log_first || first >= log_end)
    return;
  log_forget_indexes (f, (first > f->log_first ? first : f->log_first) - f->log_first,
                      (end < log_end ? end : log_end) - f->log_first);
}

/* k statistical units of class (the rest's, or the log's not held) at
 * once (large trims): each block loses its share, the rounding remainder
 * by weighted draws. */
static void
invalidate_stat_bulk (struct ssd_ftl *f, uint64_t k, enum stat_class class)
{
  uint64_t total = class == STAT_REST ? f->stat_drawable : f->anon_total, removed = 0;
  if (k > total && total > 0) {
    /* more than the class holds (its share was an estimate): the others' */
    invalidate_stat_bulk (f, k - total, class == STAT_REST ? STAT_LOG_ANON : STAT_REST);
    k = total;
  }
  if (k <= BULK_INVALIDATE_UNITS || total == 0) {
    for (uint64_t i = 0; i < k; i++)
      invalidate_random_stat_of (f, class);
    return;
  }
  for (uint32_t b = 0; b < f->block_count; b++) {
    uint32_t of_class = class == STAT_REST ? drawable_of (f, b) : f->log_anon[b];
    uint64_t share = (uint64_t) ((u128) of_class * k / total);
    if (share == 0)
      continue;
    bool full = f->state[b] == SSD_BLOCK_FULL;
    if (full)
      bucket_remove (f, b, ssd_ftl_block_valid (f, b));
    f->valid_stat[b] -= (uint32_t) share;
    if (class == STAT_LOG_ANON)
      f->log_anon[b] -= (uint32_t) share;
    if (full)
      ssd_ftl_bucket_insert (f, b);
    removed += share;
  }
  ssd_ftl_fenwick_rebuild (f);
  for (; removed < k; removed++)
    invalidate_random_stat_of (f, class);
}

/* ---------------------------------------------------------- exact map -- */

static inline uint32_t
hash_home (const struct ssd_ftl *f, uint32_t lba)
{
  return (uint32_t) ((lba * 0x9e3779b97f4a7c15ull) >> 32) & f->hash_mask;
}

/* Hash slot holding lba's entry, or SSD_NONE. */
static uint32_t
hash_slot_of (const struct ssd_ftl *f, uint32_t lba)
{
  for (uint32_t i = hash_home (f, lba);; i = (i + 1) & f->hash_mask) {
    uint32_t v = f->hash[i];
    if (v == 0)
      return SSD_NONE;
    if (f->entries[v - 1].lba == lba)
      return i;
  }
}

static inline uint32_t
find_entry (const struct ssd_ftl *f, uint32_t lba)
{
  if (f->entry_live == 0)
    return SSD_NONE;
  uint32_t slot = hash_slot_of (f, lba);
  return slot == SSD_NONE ? SSD_NONE : f->hash[slot] - 1;
}

static void
hash_put (struct ssd_ftl *f, uint32_t index)
{
  uint32_t i = hash_home (f, f->entries[index].lba);
  while (f->hash[i] != 0)
    i = (i + 1) & f->hash_mask;
  f->hash[i] = index + 1;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void
hash_delete_slot (struct ssd_ftl *f, uint32_t hole)
{
  uint32_t i = hole;
  for (;;) {
    i = (i + 1) & f->hash_mask;
    uint32_t v = f->hash[i];
    if (v == 0)
      break;
    uint32_t home = hash_home (f, f->entries[v - 1].lba);
    /* v may move to the hole when its home is not in (hole, i] */
    bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (!stays) {
      f->hash[hole] = v;
      hole = i;
    }
  }
  f->hash[hole] = 0;
}

static int
hash_grow (struct ssd_ftl *f)
{
  uint32_t capacity = (f->hash_mask + 1) * 2;
  uint32_t *grown = calloc (capacity, sizeof *grown);
  if (grown == NULL)
    return -1;
  free (f->hash);
  f->hash = grown;
  f->hash_mask = capacity - 1;
  for (uint32_t i = 0; i < f->entry_used; i++)
    if (f->entries[i].lba != SSD_NONE)
      hash_put (f, i);
  return 0;
}

static void
list_link (struct ssd_ftl *f, uint32_t index, uint32_t block)
{
  struct ssd_entry *e = &f->entries[index];
  e->prev = SSD_NONE;
  e->next = f->list_head[block];
  if (e->next != SSD_NONE)
    f->entries[e->next].prev = index;
  f->list_head[block] = index;
}

static void
list_unlink (struct ssd_ftl *f, uint32_t index)
{
  struct ssd_entry *e = &f->entries[index];
  uint32_t block = block_of_ppa (f, e->ppa);
  if (e->prev != SSD_NONE)
    f->entries[e->prev].next = e->next;
  else
    f->list_head[block] = e->next;
  if (e->next != SSD_NONE)
    f->entries[e->next].prev = e->prev;
}

static void
entry_release (struct ssd_ftl *f, uint32_t index)
{
  hash_delete_slot (f, hash_slot_of (f, f->entries[index].lba));
  f->entries[index].lba = SSD_NONE;
  f->entries[index].next = f->entry_free;
  f->entry_free = index;
  f->entry_live--;
}

/* Forgets an entry: the unit becomes statistical in its region and block. */
static void
entry_forget (struct ssd_ftl *f, uint32_t index)
{
  struct ssd_entry *e = &f->entries[index];
  uint64_t r = region_of (e->lba);
  if (e->ppa != SSD_NONE) {
    uint32_t b = block_of_ppa (f, e->ppa);
    list_unlink (f, index);
    f->valid_explicit[b]--;
    stat_unit_added (f, b, e->lba);    /* total valid unchanged: no bucket move */
    f->region_mapped[r]++;
  }
  f->region_stat[r]++;
  f->evictions++;
  entry_release (f, index);
}

/* Losing a trimmed entry loses information unless its region's
 * statistical units are all unmapped anyway. */
static bool
forget_is_exact (const struct ssd_ftl *f, const struct ssd_entry *e)
{
  return e->ppa != SSD_NONE || f->region_mapped[region_of (e->lba)] == 0;
}

static void
evict_one (struct ssd_ftl *f)
{
  uint32_t chosen = SSD_NONE;
  for (int pick = 0; chosen == SSD_NONE || pick < EVICTION_PICKS; pick++) {
    uint32_t i = (uint32_t) rng_below (&f->rng, f->entry_used);
    if (f->entries[i].lba == SSD_NONE)
      continue;
    if (chosen == SSD_NONE || forget_is_exact (f, &f->entries[i]))
      chosen = i;
    if (forget_is_exact (f, &f->entries[chosen]))
      break;
  }
  entry_forget (f, chosen);
}

/* A new entry for lba (not in the map; its region count already moved).
 * Evicts another when the map is full.  SSD_NONE when out of memory. */
static uint32_t
entry_new (struct ssd_ftl *f, uint32_t lba, uint32_t ppa)
{
  if (f->entry_live >= f->entry_limit)
    evict_one (f);
  if (f->entry_free == SSD_NONE && f->entry_used == f->entry_capacity) {
    uint32_t capacity = f->entry_capacity * 2;
    if (capacity > f->entry_limit)
      capacity = f->entry_limit;
    struct ssd_entry *grown = realloc (f->entries, (size_t) capacity * sizeof *grown);
    if (grown == NULL)
      return SSD_NONE;
    f->entries = grown;
    f->entry_capacity = capacity;
  }
  if ((uint64_t) (f->entry_live + 1) * 2 > (uint64_t) f->hash_mask + 1 && hash_grow (f) < 0)
    return SSD_NONE;
  uint32_t index;
  if (f->entry_free != SSD_NONE) {
    index = f->entry_free;
    f->entry_free = f->entries[index].next;
  }
  else
    index = f->entry_used++;
  f->entries[index] = (struct ssd_entry) { lba, ppa, SSD_NONE, SSD_NONE };
  f->entry_live++;
  hash_put (f, index);
  return index;
}

/* Is statistical unit lba mapped?  Decides by its region's ratio. */
static bool
stat_unit_mapped (struct ssd_ftl *f, uint32_t lba)
{
  uint64_t r = region_of (lba);
  uint32_t mapped = f->region_mapped[r], stat = f->region_stat[r];
  if (mapped == 0)
    return false;
  return mapped == stat || rng_below (&f->rng, stat) < mapped;
}

/* The unit at lba is overwritten or trimmed: its old copy goes. */
static uint32_t
unmap_old (struct ssd_ftl *f, uint32_t lba, bool *was_stat)
{
  uint32_t index = find_entry (f, lba);
  *was_stat = index == SSD_NONE;
  if (index != SSD_NONE) {
    struct ssd_entry *e = &f->entries[index];
    if (e->ppa != SSD_NONE) {
      uint32_t b = block_of_ppa (f, e->ppa);
      list_unlink (f, index);
      block_invalidate (f, b, true);
      e->ppa = SSD_NONE;
    }
    return index;
  }
  uint64_t r = region_of (lba);
  if (stat_unit_mapped (f, lba)) {
    f->region_mapped[r]--;
    invalidate_stat_of (f, lba);
  }
  else
    log_leave (f, lba);        /* unmapped: it leaves the layout all the same */
  return SSD_NONE;
}

/* lba now lives at ppa (an open block's slot). */
static void
map_unit (struct ssd_ftl *f, uint32_t lba, uint32_t ppa)
{
  bool was_stat;
  uint32_t index = unmap_old (f, lba, &was_stat);
  uint32_t b = block_of_ppa (f, ppa);
  if (was_stat) {
    f->region_stat[region_of (lba)]--;
    index = entry_new (f, lba, ppa);
    if (index == SSD_NONE) {
      /* no memory for an entry: keep the unit statistical */
      f->region_stat[region_of (lba)]++;
      f->region_mapped[region_of (lba)]++;
      stat_unit_added (f, b, lba);
      return;
    }
  }
  f->entries[index].ppa = ppa;
  list_link (f, index, b);
  f->valid_explicit[b]++;
}

/* ------------------------------------------------------------- lifecycle -- */

struct ssd_ftl *
ssd_ftl_new (const struct sl_ssd_geometry *g, uint64_t max_exact_units, uint64_t seed)
{
  struct ssd_ftl *f = calloc (1, sizeof *f);
  if (f == NULL)
    return NULL;
  f->dies = g->dies;
  f->blocks_per_die = g->blocks_per_die;
  f->block_count = g->dies * g->blocks_per_die;
  f->units_per_block = g->units_per_block;
  f->program_units = g->program_units;
  f->units_per_page = g->units_per_page;
  f->gc_low_blocks = g->gc_low_blocks;
  f->gc_high_blocks = g->gc_high_blocks;
  f->logical_units = g->logical_units;
  f->rng = seed;

  uint32_t n = f->block_count, dies = f->dies;
  f->state = calloc (n, sizeof *f->state);
  f->write_ptr = calloc (n, sizeof *f->write_ptr);
  f->valid_explicit = calloc (n, sizeof *f->valid_explicit);
  f->valid_stat = calloc (n, sizeof *f->valid_stat);
  f->list_head = malloc (n * sizeof *f->list_head);
  f->bucket_prev = malloc (n * sizeof *f->bucket_prev);
  f->bucket_next = malloc (n * sizeof *f->bucket_next);
  f->erase_count = calloc (n, sizeof *f->erase_count);
  f->fenwick = calloc ((size_t) n + 1, sizeof *f->fenwick);
  f->bucket_head = malloc ((size_t) dies * (f->units_per_block + 1) * sizeof *f->bucket_head);
  f->min_bucket = malloc (dies * sizeof *f->min_bucket);
  f->free_stack = malloc (n * sizeof *f->free_stack);
  f->free_count = calloc (dies, sizeof *f->free_count);
  f->open_block = malloc (2 * dies * sizeof *f->open_block);
  f->victim = malloc (dies * sizeof *f->victim);
  f->victim_valid_fraction = calloc (dies, sizeof *f->victim_valid_fraction);
  f->read_carry = calloc (dies, sizeof *f->read_carry);
  f->region_count = (f->logical_units + SSD_REGION_UNITS - 1) >> SSD_REGION_SHIFT;
  f->region_stat = malloc (f->region_count * sizeof *f->region_stat);
  f->region_mapped = calloc (f->region_count, sizeof *f->region_mapped);
  f->entry_limit = (uint32_t) (max_exact_units < 1 ? 1
                               : max_exact_units > f->logical_units ? f->logical_units
                               : max_exact_units);
  f->entry_capacity = f->entry_limit < INITIAL_ENTRIES ? f->entry_limit : INITIAL_ENTRIES;
  f->entries = malloc ((size_t) f->entry_capacity * sizeof *f->entries);
  f->hash_mask = 2 * INITIAL_ENTRIES - 1;
  f->hash = calloc ((size_t) f->hash_mask + 1, sizeof *f->hash);
  if (!f->state || !f->write_ptr || !f->valid_explicit || !f->valid_stat || !f->list_head
      || !f->bucket_prev || !f->bucket_next || !f->erase_count || !f->fenwick
      || !f->bucket_head || !f->min_bucket || !f->free_stack || !f->free_count
      || !f->open_block || !f->victim || !f->victim_valid_fraction || !f->read_carry
      || !f->region_stat || !f->region_mapped || !f->entries || !f->hash) {
    ssd_ftl_free (f);
    return NULL;
  }
  for (f->fenwick_top = 1; f->fenwick_top * 2 <= n; f->fenwick_top *= 2)
    ;
  memset (f->list_head, 0xff, n * sizeof *f->list_head);
  memset (f->bucket_head, 0xff, (size_t) dies * (f->units_per_block + 1) * sizeof *f->bucket_head);
  memset (f->open_block, 0xff, 2 * dies * sizeof *f->open_block);
  memset (f->victim, 0xff, dies * sizeof *f->victim);
  for (uint32_t d = 0; d < dies; d++) {
    f->min_bucket[d] = f->units_per_block;
    /* popped from the top: a die's blocks are used in order */
    for (uint32_t i = 0; i < f->blocks_per_die; i++)
      f->free_stack[(uint64_t) d * f->blocks_per_die + i] =
        d * f->blocks_per_die + (f->blocks_per_die - 1 - i);
    f->free_count[d] = f->blocks_per_die;
  }
  for (uint64_t r = 0; r < f->region_count; r++)
    f->region_stat[r] = (uint16_t) region_size (f, r);
  f->entry_free = SSD_NONE;
  return f;
}

void
ssd_ftl_free (struct ssd_ftl *f)
{
  if (f == NULL)
    return;
  free (f->state);
  free (f->write_ptr);
  free (f->valid_explicit);
  free (f->valid_stat);
  free (f->list_head);
  free (f->bucket_prev);
  free (f->bucket_next);
  free (f->erase_count);
  free (f->fenwick);
  free (f->bucket_head);
  free (f->min_bucket);
  free (f->free_stack);
  free (f->free_count);
  free (f->open_block);
  free (f->victim);
  free (f->victim_valid_fraction);
  free (f->read_carry);
  free (f->region_stat);
  free (f->region_mapped);
  free (f->entries);
  free (f->hash);
  free (f->log_block);
  free (f->log_block_erases);
  free (f->log_held);
  free (f->log_anon);
  free (f->fenwick_anon);
  free (f->log_slot_start);
  for (uint32_t c = 0; f->log_placed != NULL && c < f->log_chunk_count; c++)
    if (f->log_placed[c] != LOG_CHUNK_GONE)
      free (f->log_placed[c]);
  free (f->log_placed);
  free (f);
}

/* ------------------------------------------------------------------ I/O -- */

bool
ssd_ftl_locate (struct ssd_ftl *f, uint32_t lba, uint32_t *die, uint64_t *group)
{
  uint32_t index = find_entry (f, lba);
  if (index != SSD_NONE) {
    uint32_t ppa = f->entries[index].ppa;
    if (ppa == SSD_NONE)
      return false;
    *die = die_of (f, block_of_ppa (f, ppa));
    *group = ppa / f->program_units;
    return true;
  }
  if (!stat_unit_mapped (f, lba))
    return false;
  uint64_t stripe = lba / f->program_units;
  *die = (uint32_t) (stripe % f->dies);
  /* statistical groups numbered apart from physical ones */
  *group = (UINT64_C (1) << 40) + stripe;
  return true;
}

uint64_t
ssd_ftl_free_blocks_total (const struct ssd_ftl *f)
{
  uint64_t total = 0;
  for (uint32_t d = 0; d < f->dies; d++)
    total += f->free_count[d];
  return total;
}

static uint32_t
pop_free (struct ssd_ftl *f, uint32_t die)
{
  uint32_t b = f->free_stack[(uint64_t) die * f->blocks_per_die + --f->free_count[die]];
  f->state[b] = SSD_BLOCK_OPEN;
  f->write_ptr[b] = 0;
  return b;
}

static inline bool
open_block_has_room (const struct ssd_ftl *f, uint32_t b)
{
  return b != SSD_NONE && f->write_ptr[b] < f->units_per_block;
}

bool
ssd_ftl_host_can_program (const struct ssd_ftl *f, uint32_t die)
{
  return open_block_has_room (f, f->open_block[die * 2 + SSD_STREAM_HOST])
    || f->free_count[die] > SSD_GC_RESERVE_BLOCKS;
}

/* The first slot of the next program unit of die's stream; SSD_NONE when
 * a new block is needed and the stream may not take one. */
static uint32_t
reserve_program_unit (struct ssd_ftl *f, uint32_t die, enum ssd_stream stream)
{
  uint32_t *open = &f->open_block[die * 2 + stream];
  if (!open_block_has_room (f, *open)) {
    uint32_t keep = stream == SSD_STREAM_HOST ? SSD_GC_RESERVE_BLOCKS : 0;
    if (f->free_count[die] <= keep)
      return SSD_NONE;
    *open = pop_free (f, die);
  }
  uint32_t b = *open;
  uint32_t slot = f->write_ptr[b];
  f->write_ptr[b] += f->program_units;
  return b * f->units_per_block + slot;
}

/* After a program unit's units are in: a block with no room left is full. */
static void
close_if_full (struct ssd_ftl *f, uint32_t die, enum ssd_stream stream)
{
  uint32_t *open = &f->open_block[die * 2 + stream];
  if (*open != SSD_NONE && f->write_ptr[*open] >= f->units_per_block) {
    f->state[*open] = SSD_BLOCK_FULL;
    ssd_ftl_bucket_insert (f, *open);
    *open = SSD_NONE;
  }
}

int
ssd_ftl_program_host (struct ssd_ftl *f, uint32_t die, const uint32_t *lbas, uint32_t n)
{
  uint32_t base = reserve_program_unit (f, die, SSD_STREAM_HOST);
  if (base == SSD_NONE)
    return -1;
  for (uint32_t i = 0; i < n && i < f->program_units; i++)
    map_unit (f, lbas[i], base + i);
  close_if_full (f, die, SSD_STREAM_HOST);
  return 0;
}

/* ------------------------------------------------------------------- GC -- */

/* Lowest non-empty bucket below units_per_block, or SSD_NONE. */
static uint32_t
lowest_bucket (struct ssd_ftl *f, uint32_t die)
{
  uint32_t v = f->min_bucket[die];
  while (v < f->units_per_block && *bucket_slot (f, die, v) == SSD_NONE)
    v++;
  f->min_bucket[die] = v;
  return v < f->units_per_block ? v : SSD_NONE;
}

double
ssd_ftl_next_victim_valid_fraction (struct ssd_ftl *f, uint32_t die)
{
  /* a victim in progress: what it held when chosen is what reclaiming it
   * costs per unit of space gained */
  if (f->victim[die] != SSD_NONE)
    return f->victim_valid_fraction[die];
  uint32_t lowest = lowest_bucket (f, die);
  return lowest == SSD_NONE ? 1.0 : (double) lowest / f->units_per_block;
}

static uint32_t
choose_victim (struct ssd_ftl *f, uint32_t die)
{
  uint32_t valid = lowest_bucket (f, die);
  if (valid == SSD_NONE)
    return SSD_NONE;
  uint32_t b = *bucket_slot (f, die, valid);
  bucket_remove (f, b, valid);
  f->state[b] = SSD_BLOCK_VICTIM;
  f->victim[die] = b;
  log_release_block (f, b);
  f->victim_valid_fraction[die] = (double) valid / f->units_per_block;
  return b;
}

static uint32_t
estimate_page_reads (struct ssd_ftl *f, uint32_t die, uint32_t moved)
{
  double u = f->victim_valid_fraction[die], k = f->units_per_page;
  double per_unit = u > 0 ? (1 - pow (1 - u, k)) / (k * u) : 1 / k;
  f->read_carry[die] += moved * per_unit;
  uint32_t reads = (uint32_t) f->read_carry[die];
  f->read_carry[die] -= reads;
  return reads;
}

int
ssd_ftl_gc_step (struct ssd_ftl *f, uint32_t die, struct ssd_gc_step *out)
{
  *out = (struct ssd_gc_step) { 0 };
  uint32_t v = f->victim[die];
  if (v == SSD_NONE && (v = choose_victim (f, die)) == SSD_NONE)
    return 0;
  uint32_t valid = ssd_ftl_block_valid (f, v);
  if (valid == 0) {
    f->state[v] = SSD_BLOCK_FREE;
    f->write_ptr[v] = 0;
    f->erase_count[v]++;
    f->free_stack[(uint64_t) die * f->blocks_per_die + f->free_count[die]++] = v;
    f->victim[die] = SSD_NONE;
    out->erased = true;
    return 1;
  }
  uint32_t base = reserve_program_unit (f, die, SSD_STREAM_GC);
  if (base == SSD_NONE)
    return -1;
  uint32_t n = valid < f->program_units ? valid : f->program_units;
  uint32_t dest = block_of_ppa (f, base), moved = 0;
  while (moved < n && f->list_head[v] != SSD_NONE) {
    uint32_t index = f->list_head[v];
    list_unlink (f, index);
    f->valid_explicit[v]--;
    f->entries[index].ppa = base + moved;
    list_link (f, index, dest);
    f->valid_explicit[dest]++;
    moved++;
  }
  uint32_t stat = n - moved;
  if (stat > 0) {
    /* the log's units first (none held: the victim let them go) */
    uint32_t of_log = f->log_anon && f->log_anon[v] < stat ? f->log_anon[v]
      : f->log_anon ? stat : 0;
    f->valid_stat[v] -= stat;
    f->valid_stat[dest] += stat;
    if (of_log > 0) {
      anon_add (f, v, -(int64_t) of_log);
      anon_add (f, dest, of_log);
    }
    if (stat > of_log) {
      fenwick_add (f, v, -(int64_t) (stat - of_log));
      fenwick_add (f, dest, stat - of_log);
    }
  }
  close_if_full (f, die, SSD_STREAM_GC);
  out->moved = n;
  out->pages_read = estimate_page_reads (f, die, n);
  return 1;
}

/* ----------------------------------------------------------------- trim -- */

static void
trim_unit (struct ssd_ftl *f, uint32_t lba)
{
  bool was_stat;
  uint32_t index = unmap_old (f, lba, &was_stat);
  uint64_t r = region_of (lba);
  if (!was_stat) {
    if (f->region_mapped[r] == 0) {
      /* statistical units here are unmapped: the entry says nothing more */
      entry_release (f, index);
      f->region_stat[r]++;
    }
    return;
  }
  if (f->region_mapped[r] == 0)
    return;
  f->region_stat[r]--;
  if (entry_new (f, lba, SSD_NONE) == SSD_NONE)
    f->region_stat[r]++;      /* no memory: stays statistical */
}

/* Whole regions [r0, r1): every unit unmapped; counts cleared at once. */
static void
trim_regions (struct ssd_ftl *f, uint64_t r0, uint64_t r1)
{
  uint64_t first = r0 << SSD_REGION_SHIFT;
  uint64_t end = r1 << SSD_REGION_SHIFT;
  if (end > f->logical_units)
    end = f->logical_units;
  bool scan_pool = end - first > 4 * (uint64_t) f->entry_live;
  if (scan_pool) {
    for (uint32_t i = 0; i < f->entry_used; i++) {
      struct ssd_entry *e = &f->entries[i];
      if (e->lba == SSD_NONE || e->lba < first || e->lba >= end)
        continue;
      if (e->ppa != SSD_NONE) {
        list_unlink (f, i);
        block_invalidate (f, block_of_ppa (f, e->ppa), true);
      }
      entry_release (f, i);
    }
  }
  else if (f->entry_live > 0) {
    for (uint64_t lba = first; lba < end; lba++) {
      uint32_t i = find_entry (f, (uint32_t) lba);
      if (i == SSD_NONE)
        continue;
      if (f->entries[i].ppa != SSD_NONE) {
        list_unlink (f, i);
        block_invalidate (f, block_of_ppa (f, f->entries[i].ppa), true);
      }
      entry_release (f, i);
    }
  }
  log_forget_range (f, first, end);
  uint64_t stat_mapped = 0, of_log = 0;
  for (uint64_t r = r0; r < r1; r++) {
    uint64_t lo = r << SSD_REGION_SHIFT, hi = lo + region_size (f, r);
    uint64_t log_lo = f->log_placed ? f->log_first : 0;
    uint64_t log_hi = f->log_placed ? log_lo + f->log_units : 0;
    uint64_t a = lo > log_lo ? lo : log_lo, b = hi < log_hi ? hi : log_hi;
    /* the region's mapped units, the log's share of them by its overlap */
    of_log += a < b ? f->region_mapped[r] * (b - a) / (hi - lo) : 0;
    stat_mapped += f->region_mapped[r];
    f->region_mapped[r] = 0;
    f->region_stat[r] = (uint16_t) region_size (f, r);
  }
  invalidate_stat_bulk (f, of_log, STAT_LOG_ANON);
  invalidate_stat_bulk (f, stat_mapped - of_log, STAT_REST);
}

void
ssd_ftl_trim (struct ssd_ftl *f, uint64_t first, uint64_t count)
{
  uint64_t end = first + count;
  if (end > f->logical_units)
    end = f->logical_units;
  while (first < end) {
    uint64_t r = first >> SSD_REGION_SHIFT;
    uint64_t region_start = r << SSD_REGION_SHIFT;
    uint64_t region_end = region_start + region_size (f, r);
    if (first == region_start && end >= region_end) {
      uint64_t r1 = r + 1;
      while (r1 < f->region_count
             && (r1 << SSD_REGION_SHIFT) + region_size (f, r1) <= end)
        r1++;
      trim_regions (f, r, r1);
      first = r1 << SSD_REGION_SHIFT;
      continue;
    }
    uint64_t stop = end < region_end ? end : region_end;
    for (; first < stop; first++)
      trim_unit (f, (uint32_t) first);
  }
}

/* ---------------------------------------------------------------- state -- */

/* The log layout's memory as it stands: its blocks, its chunk table and
 * the chunks made so far. */
static uint64_t
log_state_bytes (const struct ssd_ftl *f)
{
  if (f->log_placed == NULL)
    return 0;
  uint64_t made = 0;
  for (uint32_t c = 0; c < f->log_chunk_count; c++)
    made += f->log_placed[c] != NULL && f->log_placed[c] != LOG_CHUNK_GONE;
  return (uint64_t) f->log_block_count * (sizeof *f->log_block + sizeof *f->log_block_erases
                                          + (f->log_slot_start ? sizeof *f->log_slot_start : 0))
    + (uint64_t) f->block_count * (sizeof *f->log_held + sizeof *f->log_anon)
    + ((uint64_t) f->block_count + 1) * sizeof *f->fenwick_anon
    + f->log_chunk_count * sizeof *f->log_placed
    + made * LOG_CHUNK_WORDS * sizeof **f->log_placed;
}

static uint64_t
fixed_state_bytes (const struct ssd_ftl *f)
{
  uint64_t n = f->block_count, dies = f->dies;
  return sizeof *f
    + n * (sizeof *f->state + 8 * sizeof (uint32_t)) + (n + 1) * sizeof *f->fenwick
    + dies * (uint64_t) (f->units_per_block + 1) * sizeof *f->bucket_head
    + dies * (5 * sizeof (uint32_t) + 2 * sizeof (double))
    + f->region_count * (sizeof *f->region_stat + sizeof *f->region_mapped);
}

uint64_t
ssd_ftl_log_bytes (const struct ssd_ftl *f, uint64_t units)
{
  uint64_t blocks = (units + f->units_per_block - 1) / f->units_per_block;
  uint64_t chunks = ssd_ftl_log_chunks (units);
  if (units == 0)
    return 0;
  return blocks * (sizeof *f->log_block + sizeof *f->log_block_erases)
    + (uint64_t) f->block_count * (sizeof *f->log_held + sizeof *f->log_anon)
    + ((uint64_t) f->block_count + 1) * sizeof *f->fenwick_anon
    + chunks * (sizeof *f->log_placed + LOG_CHUNK_WORDS * sizeof **f->log_placed);
}

uint64_t
ssd_ftl_state_bytes (const struct ssd_ftl *f)
{
  return fixed_state_bytes (f) + log_state_bytes (f)
    + (uint64_t) f->entry_capacity * sizeof *f->entries
    + ((uint64_t) f->hash_mask + 1) * sizeof *f->hash;
}

uint64_t
ssd_ftl_state_bytes_limit (const struct ssd_ftl *f)
{
  uint64_t hash = 2 * INITIAL_ENTRIES;
  while (hash < 2 * (uint64_t) f->entry_limit)
    hash *= 2;
  return fixed_state_bytes (f) + ssd_ftl_log_bytes (f, f->log_units)
    + (uint64_t) f->entry_limit * sizeof *f->entries + hash * sizeof *f->hash;
}

/* ---------------------------------------------------------------- check -- */

#define CHECK(cond, ...)                        \
  do {                                          \
    if (!(cond)) {                              \
      snprintf (err, err_bytes, __VA_ARGS__);   \
      goto fail;                                \
    }                                           \
  } while (0)

int
ssd_ftl_check (const struct ssd_ftl *f, char *err, size_t err_bytes)
{
  uint64_t physical = (uint64_t) f->block_count * f->units_per_block;
  uint8_t *slot_used = calloc (physical / 8 + 1, 1);
  uint32_t *region_explicit = calloc (f->region_count, sizeof *region_explicit);
  uint32_t *seen_free = calloc (f->block_count, sizeof *seen_free);
  if (slot_used == NULL || region_explicit == NULL || seen_free == NULL) {
    snprintf (err, err_bytes, "check: out of memory");
    free (slot_used);
    free (region_explicit);
    free (seen_free);
    return -1;
  }
  uint64_t explicit_mapped = 0, live = 0, stat_sum = 0;

  /* every live entry: in the hash; mapped ones in their block's list */
  for (uint32_t i = 0; i < f->entry_used; i++) {
    const struct ssd_entry *e = &f->entries[i];
    if (e->lba == SSD_NONE)
      continue;
    live++;
    CHECK (e->lba < f->logical_units, "entry %" PRIu32 ": lba %" PRIu32 " beyond the drive", i, e->lba);
    CHECK (find_entry (f, e->lba) == i, "lba %" PRIu32 ": hash does not find its entry", e->lba);
    region_explicit[region_of (e->lba)]++;
    if (e->ppa == SSD_NONE)
      continue;
    explicit_mapped++;
    uint32_t b = block_of_ppa (f, e->ppa), slot = e->ppa % f->units_per_block;
    CHECK (b < f->block_count, "lba %" PRIu32 ": ppa %" PRIu32 " beyond the flash", e->lba, e->ppa);
    CHECK (f->state[b] != SSD_BLOCK_FREE, "lba %" PRIu32 " mapped to free block %" PRIu32, e->lba, b);
    CHECK (slot < f->write_ptr[b], "lba %" PRIu32 ": slot %" PRIu32 " past block %" PRIu32
           "'s write pointer %" PRIu32, e->lba, slot, b, f->write_ptr[b]);
    CHECK (!(slot_used[e->ppa / 8] & (1u << (e->ppa % 8))), "ppa %" PRIu32 " holds two units", e->ppa);
    slot_used[e->ppa / 8] |= (uint8_t) (1u << (e->ppa % 8));
  }
  CHECK (live == f->entry_live, "%" PRIu64 " live entries, counter says %" PRIu32, live, f->entry_live);

  /* every block: its list is its explicit count, pointing back at it */
  uint64_t listed = 0, stat_prefix = 0, anon_sum = 0;
  for (uint32_t b = 0; b < f->block_count; b++) {
    uint64_t n = 0;
    for (uint32_t i = f->list_head[b]; i != SSD_NONE; i = f->entries[i].next) {
      CHECK (f->entries[i].lba != SSD_NONE && f->entries[i].ppa != SSD_NONE
             && block_of_ppa (f, f->entries[i].ppa) == b,
             "block %" PRIu32 ": list holds entry %" PRIu32 " of another block", b, i);
      CHECK (++n <= f->units_per_block, "block %" PRIu32 ": list loops", b);
    }
    listed += n;
    CHECK (n == f->valid_explicit[b], "block %" PRIu32 ": %" PRIu64 " listed, valid_explicit %"
           PRIu32, b, n, f->valid_explicit[b]);
    CHECK (ssd_ftl_block_valid (f, b) <= f->write_ptr[b], "block %" PRIu32 ": %" PRIu32
           " valid units in %" PRIu32 " written slots", b, ssd_ftl_block_valid (f, b), f->write_ptr[b]);
    if (f->state[b] == SSD_BLOCK_FREE)
      CHECK (f->write_ptr[b] == 0 && ssd_ftl_block_valid (f, b) == 0,
             "free block %" PRIu32 " holds data", b);
    if (f->state[b] == SSD_BLOCK_FULL)
      CHECK (f->write_ptr[b] == f->units_per_block, "full block %" PRIu32 " not full", b);
    stat_sum += f->valid_stat[b];
    /* Fenwick prefix sums agree with the drawable units */
    CHECK (f->log_held == NULL || log_units_in (f, b) <= f->valid_stat[b],
           "block %" PRIu32 ": %" PRIu32 " of the log's units, %" PRIu32 " statistical", b,
           log_units_in (f, b), f->valid_stat[b]);
    if (f->log_held) {
      anon_sum += f->log_anon[b];
      uint64_t prefix = 0;
      for (uint32_t i = b + 1; i > 0; i -= i & (~i + 1))
        prefix += f->fenwick_anon[i];
      CHECK (prefix == anon_sum, "log tree prefix %" PRIu32 " is %" PRIu64 ", want %" PRIu64,
             b, prefix, anon_sum);
    }
    stat_prefix += drawable_of (f, b);
    uint64_t prefix = 0;
    for (uint32_t i = b + 1; i > 0; i -= i & (~i + 1))
      prefix += f->fenwick[i];
    CHECK (prefix == stat_prefix, "fenwick prefix %" PRIu32 " is %" PRIu64 ", want %" PRIu64,
           b, prefix, stat_prefix);
  }
  CHECK (listed == explicit_mapped, "%" PRIu64 " units in block lists, %" PRIu64 " mapped entries",
         listed, explicit_mapped);
  CHECK (stat_sum == f->stat_total, "valid_stat sums to %" PRIu64 ", stat_total %" PRIu64,
         stat_sum, f->stat_total);
  {
    uint64_t prefix = 0;
    for (uint32_t i = f->block_count; i > 0; i -= i & (~i + 1))
      prefix += f->fenwick[i];
    CHECK (prefix == stat_prefix && prefix == f->stat_drawable, "fenwick total %" PRIu64
           ", drawable %" PRIu64 ", want %" PRIu64, prefix, f->stat_drawable, stat_prefix);
    CHECK (anon_sum == f->anon_total, "log tree total %" PRIu64 ", want %" PRIu64,
           f->anon_total, anon_sum);
  }

  /* regions: statistical units and their mapped share */
  uint64_t region_mapped_sum = 0;
  for (uint64_t r = 0; r < f->region_count; r++) {
    CHECK (f->region_stat[r] + region_explicit[r] == region_size (f, r),
           "region %" PRIu64 ": %" PRIu32 " statistical + %" PRIu32 " exact != %" PRIu32,
           r, (uint32_t) f->region_stat[r], region_explicit[r], region_size (f, r));
    CHECK (f->region_mapped[r] <= f->region_stat[r], "region %" PRIu64 ": more mapped than units", r);
    region_mapped_sum += f->region_mapped[r];
  }
  CHECK (region_mapped_sum == f->stat_total, "regions hold %" PRIu64 " mapped statistical units, "
         "blocks %" PRIu64, region_mapped_sum, f->stat_total);
  CHECK (explicit_mapped + f->stat_total <= f->logical_units, "more valid units than LBAs");

  /* free stacks, buckets, open blocks, victims */
  for (uint32_t d = 0; d < f->dies; d++) {
    uint32_t free_blocks = 0;
    for (uint32_t i = 0; i < f->free_count[d]; i++) {
      uint32_t b = f->free_stack[(uint64_t) d * f->blocks_per_die + i];
      CHECK (die_of (f, b) == d && f->state[b] == SSD_BLOCK_FREE && !seen_free[b]++,
             "die %" PRIu32 ": free stack entry %" PRIu32 " (block %" PRIu32 ") is wrong", d, i, b);
      free_blocks++;
    }
    uint32_t bucketed = 0;
    for (uint32_t v = 0; v <= f->units_per_block; v++)
      for (uint32_t b = *bucket_slot (f, d, v); b != SSD_NONE; b = f->bucket_next[b]) {
        CHECK (f->state[b] == SSD_BLOCK_FULL && ssd_ftl_block_valid (f, b) == v && die_of (f, b) == d,
               "die %" PRIu32 " bucket %" PRIu32 ": block %" PRIu32 " does not belong", d, v, b);
        CHECK (v >= f->min_bucket[d], "die %" PRIu32 ": block in bucket %" PRIu32 " below hint", d, v);
        CHECK (++bucketed <= f->blocks_per_die, "die %" PRIu32 ": bucket list loops", d);
      }
    uint32_t full = 0, free_state = 0;
    for (uint32_t i = 0; i < f->blocks_per_die; i++) {
      uint32_t b = d * f->blocks_per_die + i;
      full += f->state[b] == SSD_BLOCK_FULL;
      free_state += f->state[b] == SSD_BLOCK_FREE;
    }
    CHECK (free_state == free_blocks, "die %" PRIu32 ": %" PRIu32 " free blocks, %" PRIu32
           " on the free stack", d, free_state, free_blocks);
    CHECK (full == bucketed, "die %" PRIu32 ": %" PRIu32 " full blocks, %" PRIu32 " in buckets",
           d, full, bucketed);
    if (f->victim[d] != SSD_NONE)
      CHECK (f->state[f->victim[d]] == SSD_BLOCK_VICTIM, "die %" PRIu32 ": victim state", d);
  }
  free (slot_used);
  free (region_explicit);
  free (seen_free);
  return 0;

fail:
  free (slot_used);
  free (region_explicit);
  free (seen_free);
  return -1;
}
