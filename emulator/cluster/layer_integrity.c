/* layer_integrity.c — dm-integrity in bitmap mode: a checksum (crc32c,
 * 4 bytes) per 4 KiB block, kept in a tag area before each section of
 * data, so a leg that returns silently corrupted data fails the read and md
 * repairs it from another copy.  What it costs is the metadata I/O, which
 * is what this layer adds (the kernel's defaults, drivers/md/dm-integrity.c
 * and Documentation/admin-guide/device-mapper/dm-integrity.rst):
 *
 *   - sections of interleave_sectors = 32768 sectors (16 MiB) of data, each
 *     after its tag area (16 MiB / 4 KiB x 4 bytes = 16 KiB);
 *   - a write writes its data and, beside it, the tag blocks it changed
 *     (4 KiB-aligned: the device's block);
 *   - bitmap mode instead of the journal (no second copy of the data): a
 *     bit per 32768 sectors says "data and tags may disagree"; the first
 *     write to a region since the last bitmap flush writes the bitmap
 *     block before its data; the bitmap is flushed (cleared) every 10 s;
 *   - a read reads its data and, the first time a section is touched, the
 *     section's tag area (dm-bufio keeps tag buffers: its cache, 2 % of the
 *     guest's memory, holds the tags of terabytes).
 * The checksum's CPU time (crc32c in hardware: GB/s) is not modelled. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"

#define SECTOR_BYTES 512u
#define BLOCK_BYTES 4096u
#define TAG_BYTES 4u                   /* crc32c */
#define INTERLEAVE_SECTORS 32768u      /* DEFAULT_INTERLEAVE_SECTORS */
#define SECTION_DATA_BYTES ((uint64_t) INTERLEAVE_SECTORS * SECTOR_BYTES)
#define SECTION_TAG_BYTES (SECTION_DATA_BYTES / BLOCK_BYTES * TAG_BYTES)
#define SECTION_BYTES (SECTION_DATA_BYTES + SECTION_TAG_BYTES)
#define BITMAP_FLUSH_INTERVAL_NS (10ull * NS_PER_S)     /* BITMAP_FLUSH_INTERVAL */
/* superblock and the bitmap's own area ahead of the first section */
#define METADATA_START_BYTES (1024u * 1024u)

struct integrity {
  struct cl_target *below;
  uint64_t sections;
  uint8_t *tags_cached;                /* per section: its tag area is in dm-bufio */
  uint32_t *bitmap_epoch;              /* per section: flush epoch + 1 its bit was set in */
  uint64_t tag_reads, tag_writes, bitmap_writes;
};

static uint64_t
data_offset (uint64_t logical_bytes)
{
  uint64_t section = logical_bytes / SECTION_DATA_BYTES;
  return METADATA_START_BYTES + section * SECTION_BYTES + SECTION_TAG_BYTES
    + logical_bytes % SECTION_DATA_BYTES;
}

static uint64_t
tag_area (uint64_t section)
{
  return METADATA_START_BYTES + section * SECTION_BYTES;
}

static void
part_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  if (--io->pending == 0)
    cl_io_complete (io);
}

/* The data, split at section ends, and for a write each section's changed
 * tag blocks; for a read, tag areas not yet cached. */
static void
submit_data_and_tags (struct cl_target *t, struct cl_io *io)
{
  struct integrity *g = t->self;
  uint64_t offset = io->offset_bytes;
  uint64_t end = sl_min_u64 (io->offset_bytes + io->length_bytes, t->capacity_bytes);
  io->pending++;                       /* held while the children go out */
  while (offset < end) {
    uint64_t section = offset / SECTION_DATA_BYTES;
    uint64_t piece = sl_min_u64 (end, (section + 1) * SECTION_DATA_BYTES) - offset;
    cl_submit_child (g->below, io, io->op, io->flags, data_offset (offset), piece, part_done,
                     NULL);
    uint64_t in_section = offset % SECTION_DATA_BYTES;
    if (io->op == SL_OP_WRITE) {
      uint64_t first = in_section / BLOCK_BYTES * TAG_BYTES / BLOCK_BYTES * BLOCK_BYTES;
      uint64_t last = ((in_section + piece - 1) / BLOCK_BYTES * TAG_BYTES) / BLOCK_BYTES
        * BLOCK_BYTES + BLOCK_BYTES;
      g->tag_writes++;
      cl_submit_child (g->below, io, SL_OP_WRITE, io->flags, tag_area (section) + first,
                       last - first, part_done, NULL);
    }
    else if (!g->tags_cached[section]) {
      g->tags_cached[section] = 1;
      g->tag_reads++;
      cl_submit_child (g->below, io, SL_OP_READ, 0, tag_area (section), SECTION_TAG_BYTES,
                       part_done, NULL);
    }
    offset += piece;
  }
  if (--io->pending == 0)
    cl_io_complete_at (io, cl_now_ns (t->cluster));
}

static void
bitmap_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  if (--io->pending == 0)
    submit_data_and_tags (io->target, io);
}

static void
integrity_submit (struct cl_target *t, struct cl_io *io)
{
  struct integrity *g = t->self;
  if (io->op == SL_OP_FLUSH) {
    cl_submit_child (g->below, io, SL_OP_FLUSH, 0, 0, 0, part_done, NULL);
    return;
  }
  if (io->op != SL_OP_WRITE) {
    submit_data_and_tags (t, io);
    return;
  }
  /* regions whose bit is clear in this flush epoch: the bitmap block goes
   * to disk (one 4 KiB block holds 32768 bits) before the data may */
  uint32_t epoch = (uint32_t) (cl_now_ns (t->cluster) / BITMAP_FLUSH_INTERVAL_NS) + 1;
  uint64_t end = sl_min_u64 (io->offset_bytes + io->length_bytes, t->capacity_bytes);
  bool mark = false;
  for (uint64_t s = io->offset_bytes / SECTION_DATA_BYTES; s * SECTION_DATA_BYTES < end; s++)
    if (g->bitmap_epoch[s] != epoch) {
      g->bitmap_epoch[s] = epoch;
      mark = true;
    }
  if (!mark) {
    submit_data_and_tags (t, io);
    return;
  }
  g->bitmap_writes++;
  uint64_t bitmap_block = io->offset_bytes / SECTION_DATA_BYTES / (BLOCK_BYTES * 8u);
  cl_submit_child (g->below, io, SL_OP_WRITE, SL_REQUEST_FUA, BLOCK_BYTES + bitmap_block * BLOCK_BYTES,
                   BLOCK_BYTES, bitmap_done, NULL);
}

/* A warm start: the tags of the region are in dm-bufio already. */
static void
integrity_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct integrity *g = t->self;
  uint64_t end = sl_min_u64 (offset_bytes + length_bytes, t->capacity_bytes);
  for (uint64_t s = offset_bytes / SECTION_DATA_BYTES; s * SECTION_DATA_BYTES < end; s++)
    g->tags_cached[s] = 1;
  cl_warm (g->below, data_offset (offset_bytes), end - offset_bytes);
}

static void
integrity_write_counters (struct cl_target *t, FILE *out)
{
  struct integrity *g = t->self;
  fprintf (out, "\"tag_reads\": %" PRIu64 ", \"tag_writes\": %" PRIu64
           ", \"bitmap_writes\": %" PRIu64, g->tag_reads, g->tag_writes, g->bitmap_writes);
}

static void
integrity_destroy (struct cl_target *t)
{
  struct integrity *g = t->self;
  free (g->tags_cached);
  free (g->bitmap_epoch);
  free (g);
}

uint64_t
cl_integrity_backing_bytes (uint64_t data_bytes)
{
  uint64_t sections = (data_bytes + SECTION_DATA_BYTES - 1) / SECTION_DATA_BYTES;
  return METADATA_START_BYTES + sections * SECTION_TAG_BYTES + data_bytes;
}

struct cl_target *
cl_integrity_new (struct cluster *c, const char *node, const char *name, struct cl_target *below,
                  char *err, size_t err_bytes)
{
  if (below->capacity_bytes < METADATA_START_BYTES + SECTION_TAG_BYTES + BLOCK_BYTES) {
    snprintf (err, err_bytes, "%s: %" PRIu64 " bytes hold no data after dm-integrity's metadata",
              name, below->capacity_bytes);
    return NULL;
  }
  static const struct cl_target_ops ops = {
    .kind = "integrity", .submit = integrity_submit, .warm = integrity_warm,
    .write_counters = integrity_write_counters, .destroy = integrity_destroy,
  };
  struct integrity *g = cl_xcalloc (1, sizeof *g);
  g->below = below;
  uint64_t room = below->capacity_bytes - METADATA_START_BYTES;
  uint64_t whole = room / SECTION_BYTES, rest = room % SECTION_BYTES;
  /* a last partial section: its tag area, then what data fits */
  uint64_t tail = rest > SECTION_TAG_BYTES ? (rest - SECTION_TAG_BYTES) / BLOCK_BYTES * BLOCK_BYTES : 0;
  g->sections = whole + (tail ? 1 : 0);
  g->tags_cached = cl_xcalloc (g->sections, sizeof *g->tags_cached);
  g->bitmap_epoch = cl_xcalloc (g->sections, sizeof *g->bitmap_epoch);
  c->memory_bytes += sizeof *g + g->sections * (sizeof *g->tags_cached + sizeof *g->bitmap_epoch);
  return cl_target_new (c, &ops, g, node, name, whole * SECTION_DATA_BYTES + tail, false);
}
