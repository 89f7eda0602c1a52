/* ssd_precondition.c — the steady state of an SSD after long uniform random
 * overwrite, synthesised at once instead of by writing the drive.
 *
 * Large blocks (Desnoyers, "Analytic models of SSD write performance", ACM
 * TOS 2014, the LRU/FIFO cleaning result): a unit survives h host writes
 * with probability ~ e^(-h/L); a block is written full, ages while the drive
 * writes its whole data area once (T units, T/L = alpha) and is collected
 * with valid fraction u; per host write the drive programs 1/(1-u) units, so
 * h = T (1 - u) and u = e^(-alpha (1 - u)):
 *     alpha = ln(u) / (u - 1),   write amplification = 1 / (1 - u),
 * and the block of relative age x (0 = new, 1 = next victim) holds u^x.
 * Greedy collection converges to this as blocks grow (a block's valid count
 * then falls almost deterministically with age, so the emptiest block is the
 * oldest).  With smaller blocks greedy does better: valid counts scatter
 * around their age's mean and greedy takes the lucky ones.
 *
 * So the state is synthesised by a small simulation of greedy on a
 * population of blocks rather than units: POPULATION_BLOCKS blocks of the
 * drive's units per block and the drive's alpha, started from the formula's
 * spread; per cycle the emptiest block is collected and rewritten full (its
 * valid units plus as many new host units), and the host units invalidate
 * units of every other block, a binomial draw per block.  Eight drive
 * fills of host writes settle the spread of valid fractions; its quantiles
 * are given to the drive's full blocks (interleaved over the dies) and the
 * victims' mean valid fraction over the last fill is the state's u.  Cost:
 * ~8 blocks^2 / (alpha (1 - u)) draws (0.1 s at write amplification 10),
 * independent of the drive's size.
 *
 * A drive whose region is written as a circular log (a write buffer's
 * data area, its slots taken in order) reaches another steady state: the
 * log's units fill blocks in the order it wrote them and each block dies
 * whole when the log comes round, so greedy collection takes those at no
 * copy and the rest of the drive has all of the spare area.
 * ssd_ftl_precondition_log lays that out: the log's blocks full, oldest
 * first, and the other units in the spread above over the blocks left; a
 * log unit's block follows from its age (no per-unit map, a bit a unit
 * says it is still there), so its first overwrite invalidates that block.
 *
 * Here T is the capacity of the blocks that hold data: every block but the
 * free ones (at the GC low watermark, where a busy drive sits) and the two
 * each die keeps open for host and GC writes.  All units are statistical
 * (ssd_ftl.h): mapped, their location known per block.
 */
#define _GNU_SOURCE
#include "ssd_ftl.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define POPULATION_BLOCKS 512u
/* Populations remembered: a cluster builds dozens of drives of a few
 * kinds, each the same population (same units per block, alpha and seed),
 * and builds them all twice when it probes its warm state first. */
#define POPULATION_MEMO_ENTRIES 16u
/* Host writes, in drive fills, until the spread has settled (a fresh drive
 * takes ~6); the victims of the last fill give u. */
#define POPULATION_FILLS 8u

double
sl_ssd_greedy_victim_valid_fraction (double alpha)
{
  if (!(alpha > 1))
    return 1;
  /* ln(u)/(u-1) falls from +inf (u -> 0) to 1 (u -> 1) */
  double lo = 1e-12, hi = 1 - 1e-12;
  for (int i = 0; i < 200; i++) {
    double mid = (lo + hi) / 2;
    if (log (mid) / (mid - 1) > alpha)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

/* ------------------------------------------------- population of blocks -- */

static inline double
uniform01 (uint64_t *s)
{
  /* splitmix64, 53 random bits */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return ((z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Units of k that a write burst hitting each unit with probability p
 * invalidates: Poisson below a mean of 30, normal above (p is small). */
static uint32_t
binomial (uint64_t *rng, uint32_t k, double p)
{
  double mean = k * p;
  if (k == 0 || mean <= 0)
    return 0;
  double draw;
  if (mean < 30) {
    double limit = exp (-mean), product = uniform01 (rng);
    uint32_t n = 0;
    while (product > limit) {
      product *= uniform01 (rng);
      n++;
    }
    draw = n;
  }
  else {
    double gauss = sqrt (-2 * log (uniform01 (rng))) * cos (2 * M_PI * uniform01 (rng));
    draw = round (mean + sqrt (mean * (1 - p)) * gauss);
  }
  return draw < 0 ? 0 : draw > k ? k : (uint32_t) draw;
}

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Greedy in steady state on n blocks of b units holding n b / alpha units:
 * fills sorted[] with the blocks' valid fractions, ascending; returns the
 * victims' mean valid fraction over the last pass. */
static double
population_greedy (uint32_t b, double alpha, uint32_t n, double *sorted, uint64_t seed)
{
  uint32_t *valid = malloc (n * sizeof *valid);
  if (valid == NULL)
    return -1;
  double u = sl_ssd_greedy_victim_valid_fraction (alpha);
  double total = 0;
  for (uint32_t i = 0; i < n; i++) {
    valid[i] = (uint32_t) llround (b * pow (u, (i + 0.5) / n));
    total += valid[i];
  }
  uint64_t rng = seed;
  double data = total, host_written = 0, victim_sum = 0, victims = 0;
  while (host_written < POPULATION_FILLS * data) {
    uint32_t victim = 0;
    for (uint32_t i = 1; i < n; i++)
      if (valid[i] < valid[victim])
        victim = i;
    uint32_t v = valid[victim];
    host_written += b - v;
    if (host_written >= (POPULATION_FILLS - 1) * data) {
      victim_sum += (double) v / b;
      victims++;
    }
    /* b - v new host units overwrite as many of the valid units around */
    double p = (double) (b - v) / (total - v);
    total -= v;
    for (uint32_t i = 0; i < n; i++) {
      if (i == victim)
        continue;
      uint32_t lost = binomial (&rng, valid[i], p);
      valid[i] -= lost;
      total -= lost;
    }
    valid[victim] = b;
    total += b;
  }
  for (uint32_t i = 0; i < n; i++)
    sorted[i] = (double) valid[i] / b;
  qsort (sorted, n, sizeof *sorted, compare_double);
  free (valid);
  return victims ? victim_sum / victims : u;
}

/* ------------------------------------------------------- the drive's state -- */

/* exact[] times scale, no block above units_per_block: what the cap cuts
 * from the fullest goes to the blocks below it, in proportion (a drive of
 * a few dozen blocks has its freshest blocks full, and growing them to hold
 * the data would cut a good part of it). Each pass caps at least one more
 * block or is the last. */
static void
scale_capped (double *exact, uint32_t n, uint32_t units_per_block, double scale, uint64_t total)
{
  for (uint32_t i = 0; i < n; i++)
    exact[i] *= scale;
  for (uint32_t pass = 0; pass < n; pass++) {
    double capped = 0, below = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (exact[i] >= units_per_block) {
        exact[i] = units_per_block;
        capped += units_per_block;
      }
      else
        below += exact[i];
    }
    double grow = below > 0 ? ((double) total - capped) / below : 1;
    if (grow <= 1 + 1e-12)
      return;
    for (uint32_t i = 0; i < n; i++)
      if (exact[i] < units_per_block)
        exact[i] *= grow;
  }
}

/* Integer valid counts for the drive's n full blocks from the population's
 * sorted fractions (quantiles), scaled to sum to exactly total units (which
 * the n blocks can hold). */
static int
spread_valid_counts (uint32_t *counts, uint32_t n, uint32_t units_per_block,
                     const double *sorted, uint32_t population, uint64_t total)
{
  double *exact = malloc (n * sizeof *exact);
  if (exact == NULL)
    return -1;
  double sum = 0;
  for (uint32_t i = 0; i < n; i++) {
    double q = ((i + 0.5) / n) * population - 0.5;
    uint32_t lo = q <= 0 ? 0 : (uint32_t) q;
    uint32_t hi = lo + 1 < population ? lo + 1 : lo;
    double w = q <= 0 ? 0 : q - lo;
    exact[i] = units_per_block * (sorted[lo] * (1 - w) + sorted[hi] * w);
    sum += exact[i];
  }
  scale_capped (exact, n, units_per_block, (double) total / sum, total);
  uint64_t assigned = 0;
  for (uint32_t i = 0; i < n; i++) {
    counts[i] = (uint32_t) exact[i];
    assigned += counts[i];
  }
  /* the rounding remainder, one unit per block from the fullest down (all
   * remainders are below one: the order does not change the shape) */
  for (uint32_t pass = 0; assigned < total && pass < 2; pass++)
    for (uint32_t i = n; i-- > 0 && assigned < total;)
      if (counts[i] < units_per_block && (pass == 1 || exact[i] > counts[i])) {
        counts[i]++;
        assigned++;
      }
  for (uint32_t i = 0; i < n && assigned > total; i++)
    if (counts[i] > 0) {
      counts[i]--;
      assigned--;
    }
  free (exact);
  return assigned == total ? 0 : -1;
}

struct population_memo {
  uint32_t b, n;
  double alpha;
  uint64_t seed;
  double u;
  double sorted[POPULATION_BLOCKS];
};

static struct {
  pthread_mutex_t lock;
  struct population_memo *entry[POPULATION_MEMO_ENTRIES];
  unsigned count;
} memo = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* population_greedy's result for these arguments, computed once: the
 * simulation is deterministic in them (0.1-1 s a drive), so a drive of a
 * kind already built gets the same spread without running it again. */
static double
population_greedy_memo (uint32_t b, double alpha, uint32_t n, double *sorted, uint64_t seed)
{
  pthread_mutex_lock (&memo.lock);
  for (unsigned i = 0; i < memo.count; i++) {
    const struct population_memo *e = memo.entry[i];
    if (e->b == b && e->n == n && e->alpha == alpha && e->seed == seed) {
      memcpy (sorted, e->sorted, n * sizeof *sorted);
      double u = e->u;
      pthread_mutex_unlock (&memo.lock);
      return u;
    }
  }
  pthread_mutex_unlock (&memo.lock);
  double u = population_greedy (b, alpha, n, sorted, seed);
  struct population_memo *e;
  if (u < 0 || (e = malloc (sizeof *e)) == NULL)
    return u;
  *e = (struct population_memo) { .b = b, .n = n, .alpha = alpha, .seed = seed, .u = u };
  memcpy (e->sorted, sorted, n * sizeof *sorted);
  pthread_mutex_lock (&memo.lock);
  if (memo.count < POPULATION_MEMO_ENTRIES)
    memo.entry[memo.count++] = e;
  else
    free (e);
  pthread_mutex_unlock (&memo.lock);
  return u;
}

/* Valid counts for n full blocks holding `units` units after long uniform
 * random overwrite; *u the victims' valid fraction.  -1 out of memory. */
static int
uniform_counts (struct ssd_ftl *f, uint32_t *counts, uint32_t n, uint64_t units, double *u)
{
  *u = 0;
  if (units == 0) {
    memset (counts, 0, n * sizeof *counts);
    return 0;
  }
  double alpha = (double) n * f->units_per_block / (double) units;
  uint32_t population = n < POPULATION_BLOCKS ? n : POPULATION_BLOCKS;
  double *sorted = malloc (population * sizeof *sorted);
  if (sorted == NULL)
    return -1;
  *u = population_greedy_memo (f->units_per_block, alpha, population, sorted,
                               f->rng ^ 0x5eedull);
  int rc = *u < 0 ? -1
    : spread_valid_counts (counts, n, f->units_per_block, sorted, population, units);
  free (sorted);
  return rc;
}

/* The state's blocks: per die its full blocks (counts[], quantiles
 * interleaved over the dies, so each die holds the same spread), then the
 * host's and GC's open blocks (empty), then the free blocks at the low
 * watermark; every logical unit mapped and statistical. */
static void
install_blocks (struct ssd_ftl *f, const uint32_t *counts, uint32_t full_per_die)
{
  uint32_t full = full_per_die * f->dies;
  for (uint32_t i = 0; i < full; i++) {
    uint32_t die = i % f->dies, j = i / f->dies;
    uint32_t b = die * f->blocks_per_die + j;
    f->state[b] = SSD_BLOCK_FULL;
    f->write_ptr[b] = f->units_per_block;
    f->valid_stat[b] = counts[i];
    f->erase_count[b] = 1;
  }
  for (uint32_t d = 0; d < f->dies; d++) {
    uint32_t *stack = &f->free_stack[(uint64_t) d * f->blocks_per_die];
    f->free_count[d] = 0;
    for (uint32_t i = f->blocks_per_die; i-- > full_per_die + SL_SSD_OPEN_BLOCKS_PER_DIE;)
      stack[f->free_count[d]++] = d * f->blocks_per_die + i;
    for (uint32_t stream = 0; stream < SL_SSD_OPEN_BLOCKS_PER_DIE; stream++) {
      uint32_t b = d * f->blocks_per_die + full_per_die + stream;
      f->state[b] = SSD_BLOCK_OPEN;
      f->open_block[d * 2 + stream] = b;
    }
    for (uint32_t j = 0; j < full_per_die; j++)
      ssd_ftl_bucket_insert (f, d * f->blocks_per_die + j);
  }
  ssd_ftl_fenwick_rebuild (f);
  for (uint64_t r = 0; r < f->region_count; r++)
    f->region_mapped[r] = f->region_stat[r];
}

/* Full blocks a die keeps in steady state: all but the free ones at the
 * GC low watermark and the two open ones. */
static uint32_t
full_blocks_per_die (const struct ssd_ftl *f)
{
  return f->blocks_per_die - f->gc_low_blocks - SL_SSD_OPEN_BLOCKS_PER_DIE;
}

double
ssd_ftl_precondition_steady (struct ssd_ftl *f)
{
  uint32_t full_per_die = full_blocks_per_die (f), full = full_per_die * f->dies;
  if ((uint64_t) full * f->units_per_block < f->logical_units)
    return 0;
  uint32_t *counts = malloc (full * sizeof *counts);
  double u = -1;
  if (counts == NULL || uniform_counts (f, counts, full, f->logical_units, &u) < 0) {
    free (counts);
    return -1;
  }
  install_blocks (f, counts, full_per_die);
  free (counts);
  return u;
}

int
ssd_ftl_precondition_log (struct ssd_ftl *f, uint64_t first, uint64_t count, uint64_t oldest,
                          double *u)
{
  uint32_t full_per_die = full_blocks_per_die (f), full = full_per_die * f->dies;
  uint64_t upb = f->units_per_block;
  uint64_t log_blocks = (count + upb - 1) / upb;
  if (count == 0 || first + count > f->logical_units || oldest >= count
      || (uint64_t) full * upb < f->logical_units || log_blocks > full)
    return -2;
  uint64_t rest_units = f->logical_units - count;
  uint32_t rest_blocks = full - (uint32_t) log_blocks;
  if ((uint64_t) rest_blocks * upb < rest_units)
    return -2;
  uint32_t chunks = ssd_ftl_log_chunks (count);
  uint32_t *counts = malloc (full * sizeof *counts);
  f->log_block = malloc (log_blocks * sizeof *f->log_block);
  f->log_block_erases = malloc (log_blocks * sizeof *f->log_block_erases);
  f->log_placed = calloc (chunks, sizeof *f->log_placed);     /* every unit placed */
  f->log_chunk_count = chunks;
  if (counts == NULL || f->log_block == NULL || f->log_block_erases == NULL
      || f->log_placed == NULL || ssd_ftl_log_classes_new (f) < 0
      || uniform_counts (f, counts + log_blocks, rest_blocks, rest_units, u) < 0) {
    free (counts);
    return -1;                 /* the log arrays go with the FTL */
  }
  /* the log's blocks first, oldest first, each holding upb units of the
   * log in the order they were written (the last one what is left) */
  for (uint64_t k = 0; k < log_blocks; k++) {
    counts[k] = (uint32_t) (k + 1 < log_blocks ? upb : count - k * upb);
    f->log_block[k] = (uint32_t) (k % f->dies) * f->blocks_per_die + (uint32_t) (k / f->dies);
    f->log_block_erases[k] = 1;
    f->log_held[f->log_block[k]] = counts[k];
  }
  install_blocks (f, counts, full_per_die);     /* the tree over the rest, log_held set */
  free (counts);
  f->log_first = (uint32_t) first;
  f->log_units = (uint32_t) count;
  f->log_oldest = (uint32_t) oldest;
  f->log_block_count = (uint32_t) log_blocks;
  return 0;
}

/* ------------------------------------------------ a region written since -- */

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
      lbas[i] = (uint32_t) (first + (uint64_t) (uniform01 (&rng) * (double) count));
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
  uint32_t real_full = full_blocks_per_die (f) * f->dies;
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
  if (mini_region == 0)
    mini_region = 1;
  if (mini_region >= g.logical_units)
    return -1;
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
  uint32_t full_per_die = full_blocks_per_die (f), full = full_per_die * f->dies;
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
  if (rc == 0) {
    f->log_block = malloc (log_blocks * sizeof *f->log_block);
    f->log_block_erases = malloc (log_blocks * sizeof *f->log_block_erases);
    f->log_slot_start = malloc (((size_t) log_blocks + 1) * sizeof *f->log_slot_start);
    f->log_chunk_count = ssd_ftl_log_chunks (count);
    f->log_placed = calloc (f->log_chunk_count, sizeof *f->log_placed);
    if (f->log_block == NULL || f->log_block_erases == NULL || f->log_slot_start == NULL
        || f->log_placed == NULL || ssd_ftl_log_classes_new (f) < 0)
      rc = -1;                 /* the arrays go with the FTL */
  }
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
    uint32_t b = (i % f->dies) * f->blocks_per_die + i / f->dies;   /* as install_blocks */
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
  install_blocks (f, counts, full_per_die);
  free (blocks);
  free (counts);
  f->log_first = (uint32_t) first;
  f->log_units = (uint32_t) count;
  f->log_oldest = 0;
  f->log_block_count = log_blocks;
  return 0;
}
