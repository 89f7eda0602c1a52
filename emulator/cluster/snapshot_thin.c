/* snapshot_thin.c — redirect-on-write snapshots: dm-thin
 * (drivers/md/dm-thin.c).  The volume is thin device 0 of a pool on the base (metadata first, then 64 KiB data blocks);
 * a snapshot shares every block; the first write to a shared block goes to
 * a newly allocated block, the old one copied there first (kcopyd, the whole
 * block) unless the write covers it; other writes land in place.  Mapping
 * changes are committed every second, on a FLUSH and for a FUA write: a
 * metadata block per b-tree leaf changed (126 mappings a leaf), twice
 * (mapping and space map), and the superblock.  Deleting a snapshot drops
 * its references in the metadata: one commit.  New blocks are taken in
 * order from the pool's data, wrapping (freed blocks are not tracked). */
#define _GNU_SOURCE
#include "snapshot_layer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

uint64_t
cl_thin_block_offset (const struct snapshot_layer *s, uint32_t block_plus_one)
{
  return s->room_bytes + (uint64_t) (block_plus_one - 1) * THIN_BLOCK_BYTES;
}

static bool
thin_shared (const struct snapshot_layer *s, uint64_t block)
{
  /* written before the newest live snapshot was taken: that snapshot has it */
  if (s->live == 0)
    return false;
  return (uint8_t) (s->snap_generation[s->live - 1] - s->written_in[block] - 1) < 128;
}

static void
thin_touch (struct cl_target *t, uint64_t block)
{
  struct snapshot_layer *s = t->self;
  uint64_t leaf = block / THIN_MAPPINGS_PER_LEAF;
  if (!(s->leaf_dirty[leaf / 8] & (1u << (leaf % 8)))) {
    s->leaf_dirty[leaf / 8] |= (uint8_t) (1u << (leaf % 8));
    s->dirty_leaves++;
  }
}

/* A commit's metadata writes: every changed leaf of the mapping and of the
 * space map, and the superblock; children of parent, or in the background. */
void
cl_thin_commit (struct cl_target *t, struct cl_io *parent)
{
  struct snapshot_layer *s = t->self;
  uint64_t meta_blocks = s->room_bytes / METADATA_BLOCK_BYTES;
  uint64_t leaves = (s->volume_bytes / THIN_BLOCK_BYTES + THIN_MAPPINGS_PER_LEAF - 1)
    / THIN_MAPPINGS_PER_LEAF;
  uint64_t writes = 0;
  for (uint64_t leaf = 0; leaf < leaves && s->dirty_leaves; leaf++) {
    if (!(s->leaf_dirty[leaf / 8] & (1u << (leaf % 8))))
      continue;
    s->leaf_dirty[leaf / 8] &= (uint8_t) ~(1u << (leaf % 8));
    s->dirty_leaves--;
    for (unsigned tree = 0; tree < 2; tree++) {
      uint64_t at = (1 + (2 * leaf + tree) % (meta_blocks - 1)) * METADATA_BLOCK_BYTES;
      if (parent)
        cl_submit_child (s->below, parent, SL_OP_WRITE, 0, at, METADATA_BLOCK_BYTES,
                         cl_part_done, NULL);
      else
        cl_submit_own (s->below, SL_OP_WRITE, 0, at, METADATA_BLOCK_BYTES, cl_snapshot_io_free,
                       NULL, 0, 0);
      writes++;
    }
  }
  s->metadata_writes += writes + 1;
  if (parent)
    cl_submit_child (s->below, parent, SL_OP_WRITE, SL_REQUEST_FUA, 0, METADATA_BLOCK_BYTES,
                     cl_part_done, NULL);
  else
    cl_submit_own (s->below, SL_OP_WRITE, SL_REQUEST_FUA, 0, METADATA_BLOCK_BYTES,
                   cl_snapshot_io_free, NULL, 0, 0);
}

static void
thin_commit_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_target *t = arg;
  struct snapshot_layer *s = t->self;
  s->commit_scheduled = false;
  if (s->dirty_leaves)
    cl_thin_commit (t, NULL);
}

static void
thin_changed (struct cl_target *t, uint64_t block)
{
  struct snapshot_layer *s = t->self;
  thin_touch (t, block);
  if (!s->commit_scheduled) {
    s->commit_scheduled = true;
    cl_schedule (t->cluster, cl_now_ns (t->cluster) + THIN_COMMIT_PERIOD_NS, thin_commit_event,
                 t, 0);
  }
}

static uint32_t
thin_allocate (struct snapshot_layer *s)
{
  uint32_t block = (uint32_t) (s->next_block + 1);
  s->next_block = (s->next_block + 1) % s->data_blocks;
  return block;
}

void
cl_thin_write_block (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t length)
{
  struct snapshot_layer *s = t->self;
  uint64_t block = offset / THIN_BLOCK_BYTES, within = offset % THIN_BLOCK_BYTES;
  uint32_t old = s->block_at[block];
  if (old && !thin_shared (s, block)) {
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, cl_thin_block_offset (s, old) + within,
                     length, cl_part_done, NULL);
    return;
  }
  /* a new block: provisioned, or sharing broken (the old block copied
   * there first unless the write covers it) */
  uint32_t fresh = thin_allocate (s);
  s->block_at[block] = fresh;
  s->written_in[block] = s->generation;
  thin_changed (t, block);
  cl_snapshot_write_fresh (t, io, old != 0, old ? cl_thin_block_offset (s, old) : 0,
                           cl_thin_block_offset (s, fresh), within, length);
}

uint64_t
cl_thin_place (const struct snapshot_layer *s, uint64_t block)
{
  return s->block_at[block] ? cl_thin_block_offset (s, s->block_at[block]) : SNAPSHOT_NOWHERE;
}

int
cl_thin_take (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->live == s->depth) {
    snprintf (err, err_bytes, "%s has %u snapshots, its depth", t->name, s->live);
    return -1;
  }
  /* every block written so far is the snapshot's too */
  s->generation++;
  s->snap_generation[s->live++] = s->generation;
  thin_changed (t, 0);
  return 0;
}

int
cl_thin_delete (struct cl_target *t, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->live == 0) {
    snprintf (err, err_bytes, "%s has no snapshot to delete", t->name);
    return -1;
  }
  memmove (&s->snap_generation[0], &s->snap_generation[1], (s->live - 1));
  s->live--;
  thin_changed (t, 0);
  return 0;
}

/* The pool as the lab's precondition leaves it: every block provisioned in
 * order by the volume's first write, block b in data block b. */
void
cl_thin_init (struct cluster *c, struct snapshot_layer *s)
{
  uint64_t blocks = (s->volume_bytes + THIN_BLOCK_BYTES - 1) / THIN_BLOCK_BYTES;
  uint64_t leaves = (blocks + THIN_MAPPINGS_PER_LEAF - 1) / THIN_MAPPINGS_PER_LEAF;
  s->block_at = cl_xcalloc (blocks, sizeof *s->block_at);
  s->written_in = cl_xcalloc (blocks, sizeof *s->written_in);
  s->leaf_dirty = cl_xcalloc ((leaves + 7) / 8, 1);
  for (uint64_t b = 0; b < blocks; b++)
    s->block_at[b] = (uint32_t) (b + 1);
  s->data_blocks = (s->below->capacity_bytes - s->room_bytes) / THIN_BLOCK_BYTES;
  s->next_block = blocks % s->data_blocks;
  c->memory_bytes += blocks * (sizeof *s->block_at + sizeof *s->written_in) + (leaves + 7) / 8;
}
