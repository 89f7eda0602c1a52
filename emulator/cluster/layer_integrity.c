/* layer_integrity.c — dm-integrity in bitmap mode: a checksum (crc32c,
 * 4 bytes) per 4 KiB block, kept in a tag area before each section of
 * data, so a leg that returns silently corrupted data fails the read and md
 * repairs it from another copy.  What it costs is the metadata I/O, which
 * is what this layer adds (the kernel's defaults, drivers/md/dm-integrity.c
 * and Documentation/admin-guide/device-mapper/dm-integrity.rst):
 *
 *   - sections of interleave_sectors = 32768 sectors (16 MiB) of data, each
 *     after its tag area (16 MiB / 4 KiB x 4 bytes = 16 KiB);
 *   - bitmap mode instead of the journal (no second copy of the data): a
 *     bit per 32768 sectors says "data and tags may disagree"; the first
 *     write to a region since the last bitmap flush writes the bitmap
 *     block before its data;
 *   - a write's new tags go into dm-bufio's buffers, not to the disk: the
 *     dirty tag blocks are written when the bitmap is flushed (every 10 s,
 *     which also clears it: one bitmap block write), when a FLUSH comes
 *     down, and for a FUA write its own at once.  (Measured in a lab:
 *     2000 random 4 KiB writes through RAID-5 over dm-integrity gave 4042
 *     device writes, md's 4000 and 42 of metadata, not 8000.)
 *   - a read reads its data and, the first time a section is touched, the
 *     section's tag area (dm-bufio's cache, 2 % of the guest's memory,
 *     keeps the tags of terabytes).
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

#define TAG_BLOCKS_PER_SECTION ((unsigned) (SECTION_TAG_BYTES / BLOCK_BYTES))

struct integrity {
  struct cl_target *below;
  uint64_t sections;
  uint8_t *tags_cached;                /* per section: its tag area is in dm-bufio */
  uint8_t *tags_dirty;                 /* per section: a bit per tag block not yet written */
  uint32_t *bitmap_epoch;              /* per section: flush epoch + 1 its bit was set in */
  uint64_t *dirty_sections;            /* the sections with dirty tags, in order dirtied */
  uint64_t dirty_count, dirty_capacity;
  bool flush_pending;                  /* a bitmap flush event is scheduled */
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
background_done (struct cl_io *io)
{
  cl_io_free (io->target->cluster, io);
}

/* Writes section's dirty tag blocks (runs of them as one write); as
 * children of parent finishing with done, or in the background when parent
 * is NULL. */
static void write_tags (struct cl_target *t, struct cl_io *parent, uint64_t section,
                        cl_done_fn done);

static void flush_event (struct sl_engine *e, void *arg, uint64_t unused);

static void
mark_dirty (struct cl_target *t, uint64_t section, uint64_t first_block, uint64_t last_block)
{
  struct integrity *g = t->self;
  if (g->tags_dirty[section] == 0) {
    if (g->dirty_count == g->dirty_capacity) {
      g->dirty_capacity = g->dirty_capacity ? 2 * g->dirty_capacity : 64;
      uint64_t *grown = realloc (g->dirty_sections, g->dirty_capacity * sizeof *grown);
      if (grown == NULL)
        abort ();
      t->cluster->memory_bytes += (g->dirty_capacity / 2) * sizeof *grown;
      g->dirty_sections = grown;
    }
    g->dirty_sections[g->dirty_count++] = section;
  }
  for (uint64_t b = first_block; b <= last_block; b++)
    g->tags_dirty[section] |= (uint8_t) (1u << b);
  if (!g->flush_pending) {
    /* the bitmap flush at the end of this 10 s epoch writes them */
    uint64_t now = cl_now_ns (t->cluster);
    g->flush_pending = true;
    cl_schedule (t->cluster, (now / BITMAP_FLUSH_INTERVAL_NS + 1) * BITMAP_FLUSH_INTERVAL_NS,
                 flush_event, t, 0);
  }
}

/* The data, split at section ends; a write's tag blocks marked dirty (a
 * FUA write's written with it); for a read, tag areas not yet cached. */
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
    cl_submit_child (g->below, io, io->op, io->flags, data_offset (offset), piece, cl_part_done,
                     NULL);
    uint64_t in_section = offset % SECTION_DATA_BYTES;
    if (io->op == SL_OP_WRITE) {
      /* the tag blocks (4 KiB of tags each) its blocks' tags are in */
      uint64_t first = in_section / BLOCK_BYTES * TAG_BYTES / BLOCK_BYTES;
      uint64_t last = (in_section + piece - 1) / BLOCK_BYTES * TAG_BYTES / BLOCK_BYTES;
      mark_dirty (t, section, first, last);
      if (io->flags & SL_REQUEST_FUA)
        write_tags (t, io, section, cl_part_done);
    }
    else if (!g->tags_cached[section]) {
      g->tags_cached[section] = 1;
      g->tag_reads++;
      cl_submit_child (g->below, io, SL_OP_READ, 0, tag_area (section), SECTION_TAG_BYTES,
                       cl_part_done, NULL);
    }
    offset += piece;
  }
  if (--io->pending == 0)
    cl_io_complete_at (io, cl_now_ns (t->cluster));
}

static void
write_tags (struct cl_target *t, struct cl_io *parent, uint64_t section, cl_done_fn done)
{
  struct integrity *g = t->self;
  uint8_t dirty = g->tags_dirty[section];
  g->tags_dirty[section] = 0;          /* stays in the dirty list: skipped there */
  for (unsigned b = 0; b < TAG_BLOCKS_PER_SECTION; b++) {
    if (!(dirty & (1u << b)))
      continue;
    unsigned run = 1;
    while (b + run < TAG_BLOCKS_PER_SECTION && (dirty & (1u << (b + run))))
      run++;
    g->tag_writes++;
    uint64_t offset = tag_area (section) + (uint64_t) b * BLOCK_BYTES;
    if (parent)
      cl_submit_child (g->below, parent, SL_OP_WRITE, parent->flags & SL_REQUEST_FUA, offset,
                       (uint64_t) run * BLOCK_BYTES, done, NULL);
    else
      cl_submit_own (g->below, SL_OP_WRITE, 0, offset, (uint64_t) run * BLOCK_BYTES,
                     background_done, NULL, 0, 0);
    b += run;
  }
}

/* Every dirty tag block: as children of parent (a FLUSH), or in the
 * background (the bitmap flush). */
static void
write_all_tags (struct cl_target *t, struct cl_io *parent, cl_done_fn done)
{
  struct integrity *g = t->self;
  for (uint64_t i = 0; i < g->dirty_count; i++)
    write_tags (t, parent, g->dirty_sections[i], done);
  g->dirty_count = 0;
}

/* The bitmap flush, every 10 s: the tags written, the bitmap cleared (the
 * next write to a region sets its bit again). */
static void
flush_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_target *t = arg;
  struct integrity *g = t->self;
  g->flush_pending = false;
  write_all_tags (t, NULL, NULL);
  g->bitmap_writes++;
  cl_submit_own (g->below, SL_OP_WRITE, SL_REQUEST_FUA, BLOCK_BYTES, BLOCK_BYTES,
                 background_done, NULL, 0, 0);
}

/* A FLUSH's tag writes: when the last is done, the FLUSH goes down. */
static void
flush_after_tags (struct cl_io *io)
{
  if (--io->pending == 0) {
    struct integrity *g = io->target->self;
    cl_submit_child (g->below, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, NULL);
  }
}

static void
flush_tags_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  flush_after_tags (io);
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
    /* the dirty tags first, then the FLUSH (below's cache to its media) */
    io->pending++;                     /* held while the tag writes go out */
    write_all_tags (t, io, flush_tags_done);
    flush_after_tags (io);
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
  cl_submit_child (g->below, io, SL_OP_WRITE, SL_REQUEST_FUA,
                   BLOCK_BYTES + bitmap_block * BLOCK_BYTES, BLOCK_BYTES, bitmap_done, NULL);
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
  free (g->tags_dirty);
  free (g->bitmap_epoch);
  free (g->dirty_sections);
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
  g->tags_dirty = cl_xcalloc (g->sections, sizeof *g->tags_dirty);
  g->bitmap_epoch = cl_xcalloc (g->sections, sizeof *g->bitmap_epoch);
  c->memory_bytes += sizeof *g + g->sections * (sizeof *g->tags_cached + sizeof *g->tags_dirty
                                                + sizeof *g->bitmap_epoch);
  return cl_target_new (c, &ops, g, node, name, whole * SECTION_DATA_BYTES + tail, false);
}
