/* ssd_written_region.c — the steady state of a drive in steady state
 * (ssd_precondition.c) whose workload writes only part of it: that part
 * filled in order once, as a lab's volumes are when made, then written at
 * random.  The fill's first overwrites put the part in blocks of its own
 * and GC compacts the rest; on a drive of few blocks that lowers the write
 * amplification for good (a 64 MiB md member of profile-raid: 2.8 from
 * the uniform state, 2.4 after a lab's fill and two minutes of history),
 * on a large one the halves stay about as mixed as uniform overwrite
 * leaves them.  Which, no formula says: the state is settled by writing
 * it, on the drive itself (ssd_ftl_settle_written_region) or, at any size,
 * on a miniature of it whose blocks' counts of the part's units and of the
 * rest are given to the drive's blocks as quantiles, the part's units held
 * in their blocks as a laid-out log's are (ssd_ftl_precondition_written_region). */
#define _GNU_SOURCE
#include "ssd_ftl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ssd_memo.h"

/* GC on die until its host stream can take a program with the free blocks
 * at the low watermark, as the drive does in the foreground.  -1 when GC
 * has nothing left to take. */
static int
collect_for_host (struct ssd_ftl *f, uint32_t die, uint64_t *moved)
{
  while (!ssd_ftl_host_can_program (f, die) || ssd_ftl_free_blocks (f, die) < f->gc_low_blocks) {
    struct ssd_gc_step step;
    if (ssd_ftl_gc_step (f, die, &step) != 1)
      return -1;
    if (moved)
      *moved += step.moved;
  }
  return 0;
}

/* Host units lbas[0..n) (n up to program_units) to the next die in turn;
 * what GC moved for them added to *moved (if any). */
static int
program_in_turn (struct ssd_ftl *f, const uint32_t *lbas, uint32_t n, uint32_t *die,
                 uint64_t *moved)
{
  uint32_t d = (*die)++ % f->dies;
  return collect_for_host (f, d, moved) < 0 || ssd_ftl_program_host (f, d, lbas, n) < 0 ? -1 : 0;
}

int
ssd_ftl_settle_written_region (struct ssd_ftl *f, uint64_t first, uint64_t count,
                               unsigned rounds, double *last_round_wa)
{
  if (count == 0 || first + count > f->logical_units)
    return -2;
  if (count > f->entry_limit)
    return -3;
  uint32_t lbas[64], n = f->program_units < 64 ? f->program_units : 64, die = 0;
  for (uint64_t done = 0; done < count; done += n) {
    uint32_t k = (uint32_t) (count - done < n ? count - done : n);
    for (uint32_t i = 0; i < k; i++)
      lbas[i] = (uint32_t) (first + done + i);
    if (program_in_turn (f, lbas, k, &die, NULL) < 0)
      return -1;
  }
  uint64_t rng = f->rng ^ 0xf111ull, moved = 0, written = 0;
  for (uint64_t done = 0; done < rounds * count; done += n) {
    bool last = done + count >= rounds * count;
    for (uint32_t i = 0; i < n; i++)
      lbas[i] = (uint32_t) (first + ssd_ftl_random_below (&rng, count));
    if (program_in_turn (f, lbas, n, &die, last ? &moved : NULL) < 0)
      return -1;
    written += last ? n : 0;
  }
  if (last_round_wa)
    *last_round_wa = written ? 1 + (double) moved / (double) written : 0;
  return 0;
}

/* A drive of this drive's kind, small enough to settle a written region
 * on by writing it (ssd_ftl_settle_written_region), large enough for its
 * blocks' spread: one die of about this many units. */
#define MINIATURE_UNITS (1u << 18)
#define MINIATURE_BLOCKS_MIN 256u
/* Random rounds of the region after its fill (test_ssd: settled within 1). */
#define SETTLE_ROUNDS 2u

struct region_block {
  uint32_t region, rest;       /* valid units of the written region, of the rest */
};

static int
compare_region_blocks (const void *a, const void *b)
{
  const struct region_block *x = a, *y = b;
  uint32_t vx = x->region + x->rest, vy = y->region + y->rest;
  if (vx != vy)
    return vx < vy ? -1 : 1;
  return x->region < y->region ? -1 : x->region > y->region;
}

/* The full blocks of a miniature of f (one die, f's units per block and
 * program, its data blocks' spare ratio and low watermark's share) in
 * steady state, its region of the same share of its units filled and
 * written at random: each block's region and rest units, sorted by valid
 * units, in *out (*count of them).  *u: the victims' valid fraction of the
 * last round.  -1 out of memory or when the miniature cannot be made. */
static int
settled_miniature (const struct ssd_ftl *f, uint64_t region_units, struct region_block **out,
                   uint32_t *count, double *u)
{
  uint32_t blocks = MINIATURE_UNITS / f->units_per_block;
  if (blocks < MINIATURE_BLOCKS_MIN)
    blocks = MINIATURE_BLOCKS_MIN;
  if (blocks > f->block_count)
    blocks = f->block_count;
  uint32_t real_full = ssd_ftl_full_blocks_per_die (f) * f->dies;
  struct sl_ssd_geometry g = {
    .dies = 1, .units_per_page = f->units_per_page, .program_units = f->program_units,
    .units_per_block = f->units_per_block, .blocks_per_die = blocks,
    .gc_low_blocks = (uint32_t) ceil ((double) f->gc_low_blocks * blocks / f->blocks_per_die),
  };
  if (g.gc_low_blocks < SSD_GC_RESERVE_BLOCKS + 1)
    g.gc_low_blocks = SSD_GC_RESERVE_BLOCKS + 1;
  g.gc_high_blocks = g.gc_low_blocks + 1;
  if (g.gc_low_blocks + SL_SSD_OPEN_BLOCKS_PER_DIE >= blocks)
    return -1;
  uint32_t mini_full = blocks - g.gc_low_blocks - SL_SSD_OPEN_BLOCKS_PER_DIE;
  /* the same units per data block as the drive: the same alpha */
  g.logical_units = (uint64_t) llround ((double) f->logical_units * mini_full / real_full);
  g.physical_units = (uint64_t) blocks * f->units_per_block;
  uint64_t mini_region = (uint64_t) llround ((double) region_units * g.logical_units
                                             / f->logical_units);
  /* at least a unit, and at least one left out (a region of nearly all of
   * the drive, rounded) */
  mini_region = mini_region < 1 ? 1
    : mini_region >= g.logical_units ? g.logical_units - 1 : mini_region;
  uint64_t key[SSD_MEMO_KEY_WORDS] = {
    SSD_MEMO_WRITTEN_REGION, f->units_per_block,
    (uint64_t) f->program_units << 32 | f->units_per_page, blocks, g.gc_low_blocks,
    g.logical_units, mini_region, f->rng,
  };
  size_t bytes;
  if (ssd_memo_get (key, (void **) out, &bytes, u)) {
    *count = (uint32_t) (bytes / sizeof **out);
    return 0;
  }
  struct ssd_ftl *m = ssd_ftl_new (&g, g.logical_units, f->rng ^ 0x3141ull);
  if (m == NULL)
    return -1;
  int rc = -1;
  double wa = 0;
  if (ssd_ftl_precondition_steady (m) > 0
      && ssd_ftl_settle_written_region (m, 0, mini_region, SETTLE_ROUNDS, &wa) == 0) {
    *u = wa > 1 ? 1 - 1 / wa : 0;
    *out = malloc (blocks * sizeof **out);
    if (*out != NULL) {
      uint32_t n = 0;
      for (uint32_t b = 0; b < blocks; b++)
        if (m->state[b] == SSD_BLOCK_FULL)
          (*out)[n++] = (struct region_block) { m->valid_explicit[b], m->valid_stat[b] };
      qsort (*out, n, sizeof **out, compare_region_blocks);
      *count = n;
      rc = n > 0 ? 0 : -1;
      if (rc == 0)
        ssd_memo_put (key, *out, n * sizeof **out, *u);
    }
  }
  ssd_ftl_free (m);
  return rc;
}

/* n blocks' counts from the miniature's sorted blocks (quantiles), scaled
 * to hold exactly region_total and rest_total units, no block above
 * units_per_block. */
static int
transplant (struct region_block *blocks, uint32_t n, const struct region_block *mini,
            uint32_t mini_count, uint32_t units_per_block, uint64_t region_total,
            uint64_t rest_total)
{
  uint64_t sum_region = 0, sum_rest = 0;
  for (uint32_t i = 0; i < n; i++) {
    blocks[i] = mini[(uint32_t) (((uint64_t) i * mini_count + mini_count / 2) / n)];
    sum_region += blocks[i].region;
    sum_rest += blocks[i].rest;
  }
  uint64_t have_region = 0, have_rest = 0;
  for (uint32_t i = 0; i < n; i++) {
    struct region_block *b = &blocks[i];
    b->region = sum_region ? (uint32_t) ((double) b->region * region_total / sum_region) : 0;
    b->rest = sum_rest ? (uint32_t) ((double) b->rest * rest_total / sum_rest) : 0;
    if (b->region > units_per_block)
      b->region = units_per_block;
    if (b->region + b->rest > units_per_block)
      b->rest = units_per_block - b->region;
    have_region += b->region;
    have_rest += b->rest;
  }
  /* the remainders a unit a block, the fullest first, then wherever there
   * is room; a surplus off the emptiest */
  for (uint32_t pass = 0; pass < 2 && (have_region < region_total || have_rest < rest_total);
       pass++)
    for (uint32_t i = n; i-- > 0;) {
      struct region_block *b = &blocks[i];
      uint32_t room = units_per_block - b->region - b->rest;
      uint32_t take = pass == 0 && room > 1 ? 1 : room;
      uint64_t want = region_total - have_region < take ? region_total - have_region : take;
      b->region += (uint32_t) want;
      have_region += want;
      room -= (uint32_t) want;
      take = pass == 0 && room > 1 ? 1 : room;
      want = rest_total - have_rest < take ? rest_total - have_rest : take;
      b->rest += (uint32_t) want;
      have_rest += want;
    }
  for (uint32_t i = 0; i < n && have_region > region_total; i++)
    while (blocks[i].region > 0 && have_region > region_total) {
      blocks[i].region--;
      have_region--;
    }
  for (uint32_t i = 0; i < n && have_rest > rest_total; i++)
    while (blocks[i].rest > 0 && have_rest > rest_total) {
      blocks[i].rest--;
      have_rest--;
    }
  return have_region == region_total && have_rest == rest_total ? 0 : -1;
}

static uint64_t
gcd_u64 (uint64_t a, uint64_t b)
{
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int
ssd_ftl_precondition_written_region (struct ssd_ftl *f, uint64_t first, uint64_t count,
                                     double *u)
{
  uint32_t full_per_die = ssd_ftl_full_blocks_per_die (f), full = full_per_die * f->dies;
  uint64_t upb = f->units_per_block;
  if (count == 0 || first + count > f->logical_units || count >= f->logical_units
      || (uint64_t) full * upb < f->logical_units)
    return -2;
  struct region_block *mini = NULL, *blocks = malloc (full * sizeof *blocks);
  uint32_t mini_count = 0;
  uint32_t *counts = malloc (full * sizeof *counts);
  int rc = blocks == NULL || counts == NULL ? -1
    : settled_miniature (f, count, &mini, &mini_count, u) < 0 ? -1
    : transplant (blocks, full, mini, mini_count, f->units_per_block, count,
                  f->logical_units - count) < 0 ? -2 : 0;
  free (mini);
  uint32_t log_blocks = 0;
  for (uint32_t i = 0; rc == 0 && i < full; i++)
    log_blocks += blocks[i].region > 0;
  if (rc == 0 && ssd_ftl_log_new (f, first, count, 0, log_blocks, true) < 0)
    rc = -1;                   /* the arrays go with the FTL */
  if (rc < 0) {
    free (blocks);
    free (counts);
    return rc;
  }
  /* the region's units hold their blocks' slots in a scattered order (they
   * were written at random), each block as many as the miniature's had */
  uint32_t k = 0;
  uint64_t slot = 0;
  for (uint32_t i = 0; i < full; i++) {
    counts[i] = blocks[i].region + blocks[i].rest;
    if (blocks[i].region == 0)
      continue;
    uint32_t b = ssd_ftl_installed_block (f, i);
    f->log_block[k] = b;
    f->log_block_erases[k] = 1;
    f->log_slot_start[k] = slot;
    f->log_held[b] = blocks[i].region;
    slot += blocks[i].region;
    k++;
  }
  f->log_slot_start[k] = slot;
  uint64_t a = (uint64_t) (0.6180339887 * (double) count) | 1;
  while (gcd_u64 (a, count) != 1)
    a += 2;
  f->log_scatter = a % count ? a % count : 1;
  ssd_ftl_install_blocks (f, counts, full_per_die);
  free (blocks);
  free (counts);
  return 0;
}

uint64_t
ssd_ftl_written_region_bytes (const struct ssd_ftl *f, uint64_t units)
{
  /* a log's bits and classes, and every block a log block with its first
   * slot (the region's units are spread over most of them) */
  return ssd_ftl_log_bytes (f, units)
    + (uint64_t) f->block_count * (sizeof *f->log_block + sizeof *f->log_block_erases
                                   + sizeof *f->log_slot_start);
}
