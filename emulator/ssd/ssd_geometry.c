/* ssd_geometry.c — what an SSD config works out to: mapping units per page
 * and per block, blocks per die from the capacity and the spare area, the
 * GC watermarks in blocks; and the checks that the flash can hold the data
 * with room for garbage collection.
 *
 *   units per page    page-size / 4 KiB
 *   program unit      planes-per-die pages (multi-plane program)
 *   FTL block         planes-per-die x pages-per-block pages
 *   physical          size x (1 + over-provisioning-pct/100), rounded up
 *                     to whole blocks and to the same count on every die
 *
 * A preset asked for a smaller size (sl_ssd_geometry_scale) first just gets
 * fewer blocks per die: that keeps every die, and the datasheet's IOPS come
 * from the dies working in parallel.  But each die keeps a few blocks for
 * GC whatever its size (open blocks, the watermarks' floors), taken from
 * the spare area; once they would take more than 15 % of it, write
 * amplification would climb above the preset's, so the drive loses dies
 * instead: fewer dies per channel first (the channels' transfer parallelism
 * stays), then fewer channels, and only at one die halves the block length
 * (down to 32 pages).  Page size, planes, tR/tPROG/tBERS and
 * over-provisioning-pct never change; fewer dies do mean a lower peak IOPS
 * than the datasheet's.
 */
#define _GNU_SOURCE
#include "ssd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/units.h"

/* The GC low watermark is at least this many free blocks per die. */
#define MIN_GC_LOW_BLOCKS 2u

static void
format_block_bytes (uint64_t bytes, char *out, size_t out_bytes)
{
  if (bytes % MIB == 0)
    snprintf (out, out_bytes, "%" PRIu64 " MiB", bytes / MIB);
  else
    snprintf (out, out_bytes, "%" PRIu64 " KiB", bytes / 1024);
}

/* Everything but the fit: the units, the blocks each die gets, the GC
 * watermarks.  -1 with err for a config no geometry can be built from. */
static int
geometry_layout (const struct sl_ssd_config *c, struct sl_ssd_geometry *g,
                 char *err, size_t err_bytes)
{
  memset (g, 0, sizeof *g);
  if (c->page_bytes == 0 || c->page_bytes % SL_SSD_UNIT_BYTES != 0) {
    snprintf (err, err_bytes, "page-size=%" PRIu64 ": must be a multiple of 4096 "
              "(the FTL maps 4 KiB units)", c->page_bytes);
    return -1;
  }
  if (c->pages_per_block < 1) {
    snprintf (err, err_bytes, "pages-per-block=%" PRIu32 ": a block holds at least one page "
              "(page-size=%" PRIu64 " is larger than the block)", c->pages_per_block,
              c->page_bytes);
    return -1;
  }
  if (c->capacity_bytes == 0 || c->capacity_bytes % SL_SSD_UNIT_BYTES != 0) {
    snprintf (err, err_bytes, "size=%" PRIu64 ": must be a positive multiple of 4096",
              c->capacity_bytes);
    return -1;
  }
  if (!(c->over_provisioning_pct > 0)) {
    snprintf (err, err_bytes, "over-provisioning-pct=%g: must be > 0 (the physical spare "
              "beyond the logical capacity, which garbage collection needs)",
              c->over_provisioning_pct);
    return -1;
  }
  if (c->channels == 0 || c->dies_per_channel == 0 || c->planes_per_die == 0) {
    snprintf (err, err_bytes, "channels, dies-per-channel and planes-per-die must be > 0");
    return -1;
  }
  g->dies = c->channels * c->dies_per_channel;
  g->units_per_page = (uint32_t) (c->page_bytes / SL_SSD_UNIT_BYTES);
  g->program_units = g->units_per_page * c->planes_per_die;
  uint64_t units_per_block = (uint64_t) g->program_units * c->pages_per_block;
  if (units_per_block > (1u << 24)) {
    snprintf (err, err_bytes, "planes-per-die=%" PRIu32 " x pages-per-block=%" PRIu32
              " x page-size=%" PRIu64 ": blocks of more than 64 GiB", c->planes_per_die,
              c->pages_per_block, c->page_bytes);
    return -1;
  }
  g->units_per_block = (uint32_t) units_per_block;
  g->block_bytes = units_per_block * SL_SSD_UNIT_BYTES;
  g->logical_units = c->capacity_bytes / SL_SSD_UNIT_BYTES;

  double wanted_units = ceil ((double) g->logical_units * (1 + c->over_provisioning_pct / 100));
  uint64_t blocks = (uint64_t) ceil (wanted_units / (double) units_per_block);
  uint64_t per_die = (blocks + g->dies - 1) / g->dies;
  g->physical_units = per_die * g->dies * units_per_block;
  if (g->logical_units >= UINT32_MAX || g->physical_units >= UINT32_MAX) {
    snprintf (err, err_bytes, "size=%" PRIu64 ", over-provisioning-pct=%g: %" PRIu64
              " physical 4 KiB units; the model addresses fewer than 2^32 (16 TiB of flash)",
              c->capacity_bytes, c->over_provisioning_pct, g->physical_units);
    return -1;
  }
  g->blocks_per_die = (uint32_t) per_die;
  g->physical_bytes = g->physical_units * SL_SSD_UNIT_BYTES;
  g->effective_over_provisioning = (double) g->physical_units / g->logical_units - 1;

  uint32_t low = (uint32_t) ceil (per_die * c->gc_low_watermark_pct / 100);
  if (low < MIN_GC_LOW_BLOCKS)
    low = MIN_GC_LOW_BLOCKS;
  uint32_t high = (uint32_t) ceil (per_die * c->gc_high_watermark_pct / 100);
  if (high <= low)
    high = low + 1;
  g->gc_low_blocks = low;
  g->gc_high_blocks = high;
  return 0;
}

/* The blocks of a die the data takes. */
static uint64_t
data_blocks_per_die (const struct sl_ssd_geometry *g)
{
  uint64_t die_units = (uint64_t) g->units_per_block * g->dies;
  return (g->logical_units + die_units - 1) / die_units;
}

/* GC needs the high watermark's free blocks, the open blocks and at least
 * one more whose invalid units it can take. */
static uint64_t
gc_blocks_per_die (const struct sl_ssd_geometry *g)
{
  return (uint64_t) g->gc_high_blocks + SL_SSD_OPEN_BLOCKS_PER_DIE + 1;
}

static bool
geometry_fits (const struct sl_ssd_geometry *g)
{
  return g->blocks_per_die >= data_blocks_per_die (g) + gc_blocks_per_die (g);
}

int
sl_ssd_geometry_build (const struct sl_ssd_config *c, struct sl_ssd_geometry *g,
                       char *err, size_t err_bytes)
{
  if (geometry_layout (c, g, err, err_bytes) < 0)
    return -1;
  if (!geometry_fits (g)) {
    char block_text[32];
    format_block_bytes (g->block_bytes, block_text, sizeof block_text);
    snprintf (err, err_bytes,
              "size=%" PRIu64 ", over-provisioning-pct=%g: the flash does not fit the "
              "geometry: %" PRIu32 " dies (channels x dies-per-channel) get %" PRIu32
              " blocks each of %s (planes-per-die x pages-per-block x page-size), the data "
              "takes %" PRIu64 " and garbage collection %" PRIu64 " more (gc-high-watermark-pct=%g"
              " -> %" PRIu32 " free, %u open, 1 to collect): raise over-provisioning-pct or "
              "use smaller blocks", c->capacity_bytes, c->over_provisioning_pct, g->dies,
              g->blocks_per_die, block_text, data_blocks_per_die (g), gc_blocks_per_die (g),
              c->gc_high_watermark_pct, g->gc_high_blocks, SL_SSD_OPEN_BLOCKS_PER_DIE);
    return -1;
  }
  return 0;
}

/* ============================================== a preset at a smaller size == */

/* The smallest erase block scaling goes down to: small-block NAND's 32
 * pages.  Erase time per byte grows as blocks shrink; at 32 pages one
 * tBERS is still short against the block's 32 tPROG. */
#define MIN_SCALED_PAGES_PER_BLOCK 32u
/* Share of the spare area a scaled die must keep for garbage collection.
 * GC's fixed block counts (the low watermark's floor, the open blocks) eat
 * into the spare of a die with few blocks; with less spare, write
 * amplification would rise above the preset's at any size. */
#define MIN_SCALED_SPARE_SHARE 0.85

/* Spare the data blocks leave, over the logical capacity: what GC works
 * with in steady state (ssd_precondition.c's alpha - 1). */
static double
gc_spare (const struct sl_ssd_geometry *g)
{
  uint64_t full_blocks = (uint64_t) (g->blocks_per_die - g->gc_low_blocks - SL_SSD_OPEN_BLOCKS_PER_DIE)
    * g->dies;
  return (double) full_blocks * g->units_per_block / (double) g->logical_units - 1;
}

/* ... and at a size so large that only the percentages count. */
static double
gc_spare_at_any_size (const struct sl_ssd_config *c)
{
  return (1 + c->over_provisioning_pct / 100) * (1 - c->gc_low_watermark_pct / 100) - 1;
}

/* Fits, with GC keeping its share of the spare area. */
static bool
scaled_fits (const struct sl_ssd_config *c)
{
  struct sl_ssd_geometry g;
  char err[512];
  return geometry_layout (c, &g, err, sizeof err) == 0 && geometry_fits (&g)
    && gc_spare (&g) >= MIN_SCALED_SPARE_SHARE * gc_spare_at_any_size (c);
}

/* One step down the scaling order (dies on a channel, channels, block
 * length); false when every dimension is at its floor. */
static bool
shrink_one_step (struct sl_ssd_config *c)
{
  if (c->dies_per_channel > 1) {
    c->dies_per_channel--;
    return true;
  }
  if (c->channels > 1) {
    c->channels--;
    return true;
  }
  if (c->pages_per_block > MIN_SCALED_PAGES_PER_BLOCK) {
    c->pages_per_block /= 2;
    if (c->pages_per_block < MIN_SCALED_PAGES_PER_BLOCK)
      c->pages_per_block = MIN_SCALED_PAGES_PER_BLOCK;
    return true;
  }
  return false;
}

/* The first geometry down the scaling order that fits, into c; false
 * (c unchanged) when even the floor does not. */
static bool
scale_search (struct sl_ssd_config *c)
{
  struct sl_ssd_config trial = *c;
  while (shrink_one_step (&trial))
    if (scaled_fits (&trial)) {
      *c = trial;
      return true;
    }
  return false;
}

/* A size above c's, in whole MiB, that scaling fits; 0 if none up to the
 * model's 16 TiB (a spare area too thin for GC at any size).  Sizes grow
 * by 1 %: the block and watermark rounding make the fit not quite
 * monotonic, so this is a size that fits, not the least. */
static uint64_t
larger_size_that_fits (const struct sl_ssd_config *c)
{
  struct sl_ssd_config trial = *c;
  uint64_t mib = (c->capacity_bytes >> 20) + 1;
  for (; mib < (16ull << 20); mib += mib / 100 > 1 ? mib / 100 : 1) {
    trial = *c;
    trial.capacity_bytes = mib << 20;
    if (scaled_fits (&trial) || scale_search (&trial))
      return mib;
  }
  return 0;
}

static int
too_small (const struct sl_ssd_config *c, const struct sl_ssd_config *floor_config,
           char *err, size_t err_bytes)
{
  struct sl_ssd_geometry g;
  if (geometry_layout (floor_config, &g, err, err_bytes) < 0)
    return -1;
  char block_text[32];
  format_block_bytes (g.block_bytes, block_text, sizeof block_text);
  uint64_t fitting_mib = larger_size_that_fits (c);
  char hint[96] = "raise over-provisioning-pct";
  if (fitting_mib > 0)
    snprintf (hint, sizeof hint, "size=%" PRIu64 "M fits", fitting_mib);
  snprintf (err, err_bytes, "size=%" PRIu64 ": too small even scaled down to one die "
            "(channels=1 dies-per-channel=1 pages-per-block=%" PRIu32 ", %" PRIu32
            " blocks of %s): garbage collection's %" PRIu64 " blocks would not leave it "
            "%.0f%% of the spare area over-provisioning-pct=%g gives; %s",
            c->capacity_bytes, floor_config->pages_per_block, g.blocks_per_die,
            block_text, gc_blocks_per_die (&g), 100 * MIN_SCALED_SPARE_SHARE,
            c->over_provisioning_pct, hint);
  return -1;
}

int
sl_ssd_geometry_scale (struct sl_ssd_config *c, char *err, size_t err_bytes)
{
  struct sl_ssd_geometry g;
  if (geometry_layout (c, &g, err, err_bytes) < 0 || scaled_fits (c) || scale_search (c))
    return 0;                  /* fits, or validation says what is wrong */
  struct sl_ssd_config floor_config = *c;
  while (shrink_one_step (&floor_config))
    ;
  return too_small (c, &floor_config, err, err_bytes);
}
