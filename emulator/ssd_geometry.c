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
 */
#define _GNU_SOURCE
#include "ssd.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Blocks a die keeps open: one for host data, one for GC relocations. */
#define OPEN_BLOCKS_PER_DIE 2u
/* The GC low watermark is at least this many free blocks per die. */
#define MIN_GC_LOW_BLOCKS 2u

static void
format_block_bytes (uint64_t bytes, char *out, size_t out_bytes)
{
  if (bytes % (1024 * 1024) == 0)
    snprintf (out, out_bytes, "%" PRIu64 " MiB", bytes / (1024 * 1024));
  else
    snprintf (out, out_bytes, "%" PRIu64 " KiB", bytes / 1024);
}

int
sl_ssd_geometry_build (const struct sl_ssd_config *c, struct sl_ssd_geometry *g,
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

  /* The data needs its blocks; GC needs the high watermark's free blocks,
   * the open blocks and at least one more whose invalid units it can take. */
  uint64_t data_blocks_per_die = (g->logical_units + units_per_block * g->dies - 1)
    / (units_per_block * g->dies);
  uint64_t needed = data_blocks_per_die + high + OPEN_BLOCKS_PER_DIE + 1;
  if (per_die < needed) {
    char block_text[32];
    format_block_bytes (g->block_bytes, block_text, sizeof block_text);
    snprintf (err, err_bytes,
              "size=%" PRIu64 ", over-provisioning-pct=%g: the flash does not fit the "
              "geometry: %" PRIu32 " dies (channels x dies-per-channel) get %" PRIu64
              " blocks each of %s (planes-per-die x pages-per-block x page-size), the data "
              "takes %" PRIu64 " and garbage collection %" PRIu32 " more (gc-high-watermark-pct=%g"
              " -> %" PRIu32 " free, %u open, 1 to collect): raise over-provisioning-pct or "
              "use smaller blocks", c->capacity_bytes, c->over_provisioning_pct, g->dies,
              per_die, block_text, data_blocks_per_die, high + OPEN_BLOCKS_PER_DIE + 1,
              c->gc_high_watermark_pct, high, OPEN_BLOCKS_PER_DIE);
    return -1;
  }
  return 0;
}
