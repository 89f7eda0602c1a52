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
#include <stdlib.h>
#include <string.h>

#include "ssd_memo.h"

#define POPULATION_BLOCKS 512u
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

/* population_greedy's result for these arguments, computed once a process
 * (ssd_memo.h). */
static double
population_greedy_memo (uint32_t b, double alpha, uint32_t n, double *sorted, uint64_t seed)
{
  uint64_t key[SSD_MEMO_KEY_WORDS] = { SSD_MEMO_POPULATION, b, n, 0, seed };
  memcpy (&key[3], &alpha, sizeof alpha);
  void *kept;
  size_t bytes;
  double u;
  if (ssd_memo_get (key, &kept, &bytes, &u)) {
    memcpy (sorted, kept, n * sizeof *sorted);
    free (kept);
    return u;
  }
  u = population_greedy (b, alpha, n, sorted, seed);
  if (u >= 0)
    ssd_memo_put (key, sorted, n * sizeof *sorted, u);
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

/* The state's blocks (ssd_ftl.h): quantiles interleaved over the dies, so
 * each die holds the same spread. */
void
ssd_ftl_install_blocks (struct ssd_ftl *f, const uint32_t *counts, uint32_t full_per_die)
{
  uint32_t full = full_per_die * f->dies;
  for (uint32_t i = 0; i < full; i++) {
    uint32_t b = ssd_ftl_installed_block (f, i);
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

uint32_t
ssd_ftl_full_blocks_per_die (const struct ssd_ftl *f)
{
  return f->blocks_per_die - f->gc_low_blocks - SL_SSD_OPEN_BLOCKS_PER_DIE;
}

double
ssd_ftl_precondition_steady (struct ssd_ftl *f)
{
  uint32_t full_per_die = ssd_ftl_full_blocks_per_die (f), full = full_per_die * f->dies;
  if ((uint64_t) full * f->units_per_block < f->logical_units)
    return 0;
  uint32_t *counts = malloc (full * sizeof *counts);
  double u = -1;
  if (counts == NULL || uniform_counts (f, counts, full, f->logical_units, &u) < 0) {
    free (counts);
    return -1;
  }
  ssd_ftl_install_blocks (f, counts, full_per_die);
  free (counts);
  return u;
}

int
ssd_ftl_precondition_log (struct ssd_ftl *f, uint64_t first, uint64_t count, uint64_t oldest,
                          double *u)
{
  uint32_t full_per_die = ssd_ftl_full_blocks_per_die (f), full = full_per_die * f->dies;
  uint64_t upb = f->units_per_block;
  uint64_t log_blocks = (count + upb - 1) / upb;
  if (count == 0 || first + count > f->logical_units || oldest >= count
      || (uint64_t) full * upb < f->logical_units || log_blocks > full)
    return -2;
  uint64_t rest_units = f->logical_units - count;
  uint32_t rest_blocks = full - (uint32_t) log_blocks;
  if ((uint64_t) rest_blocks * upb < rest_units)
    return -2;
  uint32_t *counts = malloc (full * sizeof *counts);
  if (counts == NULL || ssd_ftl_log_new (f, first, count, oldest, (uint32_t) log_blocks, false) < 0
      || uniform_counts (f, counts + log_blocks, rest_blocks, rest_units, u) < 0) {
    free (counts);
    return -1;                 /* the log arrays go with the FTL */
  }
  /* the log's blocks first, oldest first, each holding upb units of the
   * log in the order they were written (the last one what is left) */
  for (uint64_t k = 0; k < log_blocks; k++) {
    counts[k] = (uint32_t) (k + 1 < log_blocks ? upb : count - k * upb);
    f->log_block[k] = ssd_ftl_installed_block (f, (uint32_t) k);
    f->log_block_erases[k] = 1;
    f->log_held[f->log_block[k]] = counts[k];
  }
  ssd_ftl_install_blocks (f, counts, full_per_die);     /* the tree over the rest, log_held set */
  free (counts);
  return 0;
}
