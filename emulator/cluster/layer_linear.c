/* layer_linear.c — LVM's address arithmetic: a linear volume over parts
 * one after another (the disk group's striped segments, in order), and a
 * window of one target (a logical volume on its volume group, a cache
 * device's read-cache or write-buffer region).  Pure remapping: an I/O
 * crossing a part's end is split, each piece goes down as it is. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "core/sorted_starts.h"

struct linear {
  unsigned count;
  struct cl_target **part;
  uint64_t *start_bytes;               /* part i's first byte in the volume */
};

static unsigned
part_at (const struct linear *l, uint64_t offset_bytes)
{
  return (unsigned) sl_piece_at (l->start_bytes, l->count, offset_bytes);
}

static void
linear_submit (struct cl_target *t, struct cl_io *io)
{
  struct linear *l = t->self;
  if (io->op == SL_OP_FLUSH) {
    for (unsigned i = 0; i < l->count; i++)
      cl_submit_child (l->part[i], io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, NULL);
    return;
  }
  uint64_t offset = io->offset_bytes, end = sl_min_u64 (io->offset_bytes + io->length_bytes,
                                                        t->capacity_bytes);
  if (offset >= end) {
    cl_io_complete_at (io, cl_now_ns (t->cluster));
    return;
  }
  for (unsigned i = part_at (l, offset); offset < end; i++) {
    uint64_t part_end = l->start_bytes[i] + l->part[i]->capacity_bytes;
    uint64_t piece = sl_min_u64 (end, part_end) - offset;
    cl_submit_child (l->part[i], io, io->op, io->flags, offset - l->start_bytes[i], piece,
                     cl_part_done, NULL);
    offset += piece;
  }
}

static void
linear_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct linear *l = t->self;
  uint64_t offset = offset_bytes, end = sl_min_u64 (offset_bytes + length_bytes,
                                                    t->capacity_bytes);
  for (unsigned i = offset < end ? part_at (l, offset) : l->count; offset < end; i++) {
    uint64_t piece = sl_min_u64 (end, l->start_bytes[i] + l->part[i]->capacity_bytes) - offset;
    cl_warm (l->part[i], offset - l->start_bytes[i], piece);
    offset += piece;
  }
}

static void
linear_destroy (struct cl_target *t)
{
  struct linear *l = t->self;
  free (l->part);
  free (l->start_bytes);
  free (l);
}

struct cl_target *
cl_linear_new (struct cluster *c, const char *node, const char *name,
               struct cl_target *const *parts, unsigned count, char *err, size_t err_bytes)
{
  if (count == 0) {
    snprintf (err, err_bytes, "%s: a linear volume of no parts", name);
    return NULL;
  }
  static const struct cl_target_ops ops = {
    .kind = "linear", .submit = linear_submit, .warm = linear_warm, .destroy = linear_destroy,
  };
  struct linear *l = cl_xcalloc (1, sizeof *l);
  l->count = count;
  l->part = cl_xcalloc (count, sizeof *l->part);
  l->start_bytes = cl_xcalloc (count, sizeof *l->start_bytes);
  uint64_t total = 0;
  for (unsigned i = 0; i < count; i++) {
    l->part[i] = parts[i];
    l->start_bytes[i] = total;
    total += parts[i]->capacity_bytes;
  }
  return cl_target_new (c, &ops, l, node, name, total, false);
}

/* ------------------------------------------------------------ slices -- */

/* A listed slice (a record of its own): an offset into t->slice_of, its
 * I/O passed on; an unlisted one cl_submit goes straight through. */
static void
slice_submit (struct cl_target *t, struct cl_io *io)
{
  uint64_t offset, length;
  cl_slice_range (t, io, &offset, &length);
  cl_submit_only (t->slice_of, io, io->op, io->flags, offset, length, NULL);
}

static void
slice_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  if (offset_bytes < t->capacity_bytes)
    cl_warm (t->slice_of, t->slice_offset_bytes + offset_bytes,
             sl_min_u64 (length_bytes, t->capacity_bytes - offset_bytes));
}

struct cl_target *
cl_slice_new (struct cluster *c, const char *node, const char *name, struct cl_target *below,
              uint64_t offset_bytes, uint64_t length_bytes, bool listed, char *err,
              size_t err_bytes)
{
  if (length_bytes == 0 || offset_bytes > below->capacity_bytes
      || length_bytes > below->capacity_bytes - offset_bytes) {
    snprintf (err, err_bytes, "%s: %" PRIu64 " bytes at %" PRIu64 " do not fit %s (%" PRIu64
              " bytes)", name, length_bytes, offset_bytes, below->name, below->capacity_bytes);
    return NULL;
  }
  static const struct cl_target_ops ops = {
    .kind = "volume", .submit = slice_submit, .warm = slice_warm,
  };
  struct cl_target *t = cl_target_new (c, &ops, NULL, node, name, length_bytes, listed);
  t->slice_of = below;
  t->slice_offset_bytes = offset_bytes;
  return t;
}
