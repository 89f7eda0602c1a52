/* ssd_ftl.h — the SSD's flash translation layer (internal to the ssd model
 * and its tests): where every 4 KiB mapping unit lives, block valid counts,
 * free blocks, greedy victim choice.  No timing here: ssd.c decides when
 * the dies do what; this says what they do.
 *
 * Memory.  An exact page map of a 3.84 TB drive (937 M units) would take
 * ~4 GB, so the map is exact only where it matters:
 *   - per block (exact): valid units, write pointer, state, and the list of
 *     the explicitly mapped units it holds (the reverse map);
 *   - per unit, explicitly, only the units written or trimmed during this
 *     run: an entry (lba, physical slot, block-list links) in a pool with
 *     an open-addressing hash on the lba.  The pool holds at most
 *     exact-map-size / 4 KiB entries; beyond that a randomly chosen entry
 *     is "forgotten" (made statistical, below), so memory has a hard bound;
 *   - every other unit is statistical.  Per region of 4096 units (16 MiB)
 *     the FTL counts the statistical units and how many of them are mapped:
 *     fresh out of box none, after precondition=steady all.  A statistical
 *     unit counts as mapped with that ratio; where it lives is not known,
 *     only that the statistical units of each block number valid_stat.
 *     Overwriting (or trimming) a mapped statistical unit invalidates one
 *     statistical unit of a block drawn in proportion to those counts (a
 *     Fenwick tree) -- under uniform random traffic exactly the law an
 *     exact map would follow.  A region laid out as a log
 *     (ssd_ftl_precondition_log, _written_region) keeps its units apart: one
 *     that has not moved since is in the block its place puts it in (held),
 *     one GC moved is drawn among the log's moved units (a tree of their
 *     own), and the rest's draws never take the log's.  Whole-region trims
 *     (mkfs, discard of large files) clear a region's count at once.
 * Reads of a statistical unit go to die (lba / program_units) mod dies, as
 * if the drive had been filled sequentially, striped over the dies.
 *
 * State bytes: ~45 per block + 4 per (die, valid count) bucket head + 4 per
 * region + 24-32 per exact entry (pool 16, hash 8-16); ssd_ftl_state_bytes().
 */
#ifndef STORLAB_SSD_FTL_H
#define STORLAB_SSD_FTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ssd.h"

#define SSD_NONE UINT32_MAX            /* no block / entry / unit */
#define SSD_REGION_SHIFT 12u           /* 4096 units = 16 MiB per region */
#define SSD_REGION_UNITS (1u << SSD_REGION_SHIFT)
#define SSD_GC_RESERVE_BLOCKS 1u       /* free blocks per die only GC may take */

enum ssd_block_state { SSD_BLOCK_FREE, SSD_BLOCK_OPEN, SSD_BLOCK_FULL, SSD_BLOCK_VICTIM };
enum ssd_stream { SSD_STREAM_HOST, SSD_STREAM_GC };

struct ssd_entry {
  uint32_t lba;                /* SSD_NONE: free pool slot */
  uint32_t ppa;                /* block * units_per_block + slot, SSD_NONE: trimmed */
  uint32_t prev, next;         /* the block's list; next doubles as free-list link */
};

struct ssd_ftl {
  /* geometry */
  uint32_t dies, blocks_per_die, block_count;
  uint32_t units_per_block, program_units, units_per_page;
  uint32_t gc_low_blocks, gc_high_blocks;
  uint64_t logical_units;

  /* per block */
  uint8_t *state;
  uint32_t *write_ptr;         /* slots used (programmed or reserved) */
  uint32_t *valid_explicit;
  uint32_t *valid_stat;
  uint32_t *list_head;         /* explicit entries in the block */
  uint32_t *bucket_prev, *bucket_next;
  uint32_t *erase_count;
  uint64_t *fenwick;           /* over valid_stat less the log's units (drawable), 1-based */
  uint32_t fenwick_top;        /* highest power of two <= block_count */
  uint64_t stat_total;         /* sum of valid_stat = mapped statistical units */
  uint64_t stat_drawable;      /* ... of which not a log layout's (held or moved) */

  /* per die */
  uint32_t *bucket_head;       /* [die * (units_per_block + 1) + valid] */
  uint32_t *min_bucket;        /* lowest bucket that may be non-empty */
  uint32_t *free_stack;        /* [die * blocks_per_die + i] */
  uint32_t *free_count;
  uint32_t *open_block;        /* [die * 2 + stream] */
  uint32_t *victim;
  double *victim_valid_fraction;       /* when chosen: GC page-read estimate */
  double *read_carry;                  /* fractional page reads owed */

  /* statistical units, per region */
  uint64_t region_count;
  uint16_t *region_stat;       /* units of the region not in the exact map */
  uint16_t *region_mapped;     /* ... of which mapped */

  /* exact map: pool + hash on lba */
  struct ssd_entry *entries;
  uint32_t entry_capacity, entry_used, entry_live, entry_free;
  uint32_t entry_limit;
  uint32_t *hash;              /* entry index + 1, 0 = empty */
  uint32_t hash_mask;
  uint64_t evictions;

  /* A log laid out by ssd_ftl_precondition_log: the statistical units of
   * [log_first, log_first + log_units) fill blocks in the order the log
   * wrote them, so an overwrite of one invalidates its own block, as the
   * exact map would, at a bit a unit instead of 24-32 bytes.  The bits
   * come in chunks made on a chunk's first change (NULL: every unit of it
   * still placed): a log not yet come round costs its blocks alone. */
  uint32_t log_first, log_units;
  uint32_t log_oldest;         /* the unit (from log_first) the log writes next */
  uint32_t log_block_count;
  uint32_t *log_block;         /* [age / units_per_block]: the block holding those units */
  uint32_t *log_block_erases;  /* its erase count then: another means it was collected */
  uint64_t **log_placed;       /* [chunk]: a bit a log unit, still in its laid-out block */
  uint32_t log_chunk_count;
  /* [block]: of its statistical units, the log units still placed there.
   * An overwrite of another unit draws among the rest only, so the
   * layout's blocks lose units to their own units' writes alone; GC
   * taking such a block lets them go (they move, unplaced). */
  uint32_t *log_held;
  /* [block]: of its statistical units, the log's that GC moved or a trim
   * let go (the block no longer known per unit); a tree over them, so an
   * overwrite of such a unit draws among the log's own, never the rest. */
  uint32_t *log_anon;
  uint64_t *fenwick_anon;
  uint64_t anon_total;
  /* A written region's layout (ssd_ftl_precondition_written_region) puts
   * log unit i at slot (i * log_scatter) mod log_units, and log block k
   * holds slots [log_slot_start[k], log_slot_start[k + 1]); NULL: a log,
   * unit i (from the oldest) at slot i, units_per_block slots a block. */
  uint64_t *log_slot_start;
  uint64_t log_scatter;

  uint64_t rng;
};

/* max_exact_units: the exact map's bound.  NULL when out of memory. */
struct ssd_ftl *ssd_ftl_new (const struct sl_ssd_geometry *g, uint64_t max_exact_units,
                             uint64_t seed);
void ssd_ftl_free (struct ssd_ftl *f);

/* Synthesised steady state after long uniform random overwrite (greedy GC):
 * every logical unit mapped, free blocks at the low watermark, the other
 * blocks' valid counts spread as in ssd_precondition.c.  Only on a fresh
 * FTL.  Returns the victim valid fraction u of the state; 0 when the full
 * blocks cannot hold every logical unit, -1 out of memory. */
double ssd_ftl_precondition_steady (struct ssd_ftl *f);

/* The steady state of a drive whose units [first, first + count) are
 * written as a circular log (a write buffer's data area) and the rest by
 * long uniform random overwrite: the log's units fill whole blocks, oldest
 * first from `oldest` (the unit the log writes next, 0 <= oldest < count),
 * every one valid, the blocks left hold the rest in the spread of
 * ssd_ftl_precondition_steady (all of the spare area theirs: the log's
 * blocks die whole when it comes round, so greedy collection reclaims them
 * without copying).  Only on a fresh FTL.  Returns 0 with *u the rest's
 * victim valid fraction (0 when there is no rest), -1 out of memory, -2
 * when the full blocks cannot hold every logical unit or the log is not
 * within the drive. */
int ssd_ftl_precondition_log (struct ssd_ftl *f, uint64_t first, uint64_t count,
                              uint64_t oldest, double *u);
/* On a drive in steady state (ssd_ftl_precondition_steady): the workload
 * fills [first, first + count) in order once (a lab's volumes written when
 * made) and then writes it at random for `rounds` times its size, garbage
 * collected in the foreground as it goes, every written unit exact.  Its
 * first overwrites put the region in blocks of its own and GC compacts the
 * rest: the state the drive settles at under that region's writes, which
 * neither the uniform state nor the region's own circular log is.  0; -1
 * when GC runs out of blocks; -2 for a region beyond the drive; -3 when
 * the region is larger than the exact map holds. */
int ssd_ftl_settle_written_region (struct ssd_ftl *f, uint64_t first, uint64_t count,
                                   unsigned rounds, double *last_round_wa);
/* The state ssd_ftl_settle_written_region reaches, at any size: settled on
 * a miniature of the drive (one die of ~256 Ki units, the same units per
 * block and spare ratio), whose blocks' valid units of the region and of
 * the rest are given, as quantiles, to the drive's full blocks.  The
 * region's units are held in their blocks as a log's are (an overwrite
 * invalidates its own block), in a scattered order; the rest statistical.
 * Only on a fresh FTL.  0 with *u the victims' valid fraction of the
 * miniature's last round; -1 out of memory; -2 when the region is not
 * within the drive, is all of it, or the blocks cannot hold the data. */
int ssd_ftl_precondition_written_region (struct ssd_ftl *f, uint64_t first, uint64_t count,
                                         double *u);
/* The memory that layout of `units` units takes at most. */
uint64_t ssd_ftl_written_region_bytes (const struct ssd_ftl *f, uint64_t units);
/* The memory a log layout of `units` units takes once every unit of it has
 * been written (0 for none); it starts at its blocks' and chunks' share. */
uint64_t ssd_ftl_log_bytes (const struct ssd_ftl *f, uint64_t units);
/* Chunks of bits a log of `units` units has (ssd_ftl.c, log_take). */
uint32_t ssd_ftl_log_chunks (uint64_t units);
/* A layout's arrays (ssd_ftl_precondition_log, _written_region) for
 * units [first, first + count), next at oldest, in `blocks` log blocks
 * (with their first slots when slot_starts): every unit placed, none held
 * yet.  0, or -1 out of memory (what was made goes with the FTL). */
int ssd_ftl_log_new (struct ssd_ftl *f, uint64_t first, uint64_t count, uint64_t oldest,
                     uint32_t blocks, bool slot_starts);
/* The block install_blocks gives the i-th count: interleaved over the dies. */
static inline uint32_t
ssd_ftl_installed_block (const struct ssd_ftl *f, uint32_t i)
{
  return (i % f->dies) * f->blocks_per_die + i / f->dies;
}

/* Where a unit's data is for a read: false when unmapped; else its die and
 * its program-unit group (units in one group are read by one tR). */
bool ssd_ftl_locate (struct ssd_ftl *f, uint32_t lba, uint32_t *die, uint64_t *group);

static inline uint32_t ssd_ftl_free_blocks (const struct ssd_ftl *f, uint32_t die)
{
  return f->free_count[die];
}
uint64_t ssd_ftl_free_blocks_total (const struct ssd_ftl *f);
/* The host stream of die can take one more program. */
bool ssd_ftl_host_can_program (const struct ssd_ftl *f, uint32_t die);
/* Maps n (1..program_units) host units to the next program unit of die's
 * host stream (program_units slots, the rest padding).  -1: no block. */
int ssd_ftl_program_host (struct ssd_ftl *f, uint32_t die, const uint32_t *lbas, uint32_t n);

struct ssd_gc_step {
  uint32_t moved;              /* units relocated (one program unit at most) */
  uint32_t pages_read;         /* pages read to collect them */
  bool erased;                 /* the victim was empty and was erased instead */
};
/* One step of garbage collection on die: relocate up to a program unit of
 * the victim's valid units, or erase it once empty.  Chooses a victim (the
 * full block with the fewest valid units, some invalid) when none is in
 * progress.  Returns 1 with *out filled, 0 when no block has anything to
 * reclaim, -1 when there is no free block to relocate into. */
int ssd_ftl_gc_step (struct ssd_ftl *f, uint32_t die, struct ssd_gc_step *out);
/* Valid fraction of the block GC takes next on die (the one in progress,
 * as it was when chosen, or the current minimum); 1 when nothing is
 * reclaimable. */
double ssd_ftl_next_victim_valid_fraction (struct ssd_ftl *f, uint32_t die);

void ssd_ftl_trim (struct ssd_ftl *f, uint64_t first_lba, uint64_t count);

uint64_t ssd_ftl_state_bytes (const struct ssd_ftl *f);
uint64_t ssd_ftl_state_bytes_limit (const struct ssd_ftl *f);
int ssd_ftl_check (const struct ssd_ftl *f, char *err, size_t err_bytes);

/* ---- shared with ssd_precondition.c and ssd_written_region.c ---- */
void ssd_ftl_fenwick_rebuild (struct ssd_ftl *f);
/* A uniform draw below bound from *state (the FTL's generator). */
uint64_t ssd_ftl_random_below (uint64_t *state, uint64_t bound);
/* Full blocks a die keeps in steady state: all but the free ones at the
 * GC low watermark and the open ones. */
uint32_t ssd_ftl_full_blocks_per_die (const struct ssd_ftl *f);
/* A steady state's blocks: per die its full blocks (counts[], interleaved
 * over the dies: count i on die i mod dies), then the open blocks (empty),
 * then the free ones at the low watermark; every logical unit mapped and
 * statistical.  A log's log_held set before, so the trees leave it out. */
void ssd_ftl_install_blocks (struct ssd_ftl *f, const uint32_t *counts, uint32_t full_per_die);
void ssd_ftl_bucket_insert (struct ssd_ftl *f, uint32_t block);
static inline uint32_t ssd_ftl_block_valid (const struct ssd_ftl *f, uint32_t b)
{
  return f->valid_explicit[b] + f->valid_stat[b];
}

#endif
