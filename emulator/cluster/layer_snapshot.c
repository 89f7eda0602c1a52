/* layer_snapshot.c — a workload volume's snapshots, taken while it runs, as
 * the lab takes them (scripts/profiles/snapshot.sh).  The volume's base (its
 * LV or its policy's md) holds the volume, then the room its snapshots may
 * fill; every I/O of this layer goes to the base.  This file is the target
 * (dispatch, figures, events); the mechanisms are snapshot_redo_log.c
 * (dm-snapshot chains) and snapshot_thin.c (dm-thin), over the copy path
 * they share (snapshot_copy.c).
 * Neither mechanism has snapshots at the start: the layer passes I/O to the
 * volume's place in the base until the first is taken (an event). */
#define _GNU_SOURCE
#include "snapshot_layer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"

/* A read, unit by unit from where each is now; runs of places that follow
 * each other go down as one, units never written need no I/O. */
static void
snapshot_read (struct cl_target *t, struct cl_io *io, uint64_t offset, uint64_t end)
{
  struct snapshot_layer *s = t->self;
  uint64_t run_at = 0, run_length = 0;
  while (offset < end) {
    uint64_t unit = offset / s->unit_bytes;
    uint64_t piece = sl_min_u64 (end, (unit + 1) * s->unit_bytes) - offset;
    uint64_t place = s->place (s, unit);
    uint64_t at = place + offset % s->unit_bytes;
    offset += piece;
    if (place == SNAPSHOT_NOWHERE)
      continue;
    if (run_length && at == run_at + run_length)
      run_length += piece;
    else {
      if (run_length)
        cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done,
                         NULL);
      run_at = at;
      run_length = piece;
    }
  }
  if (run_length)
    cl_submit_child (s->below, io, SL_OP_READ, io->flags, run_at, run_length, cl_part_done, NULL);
}

static void
snapshot_submit (struct cl_target *t, struct cl_io *io)
{
  struct snapshot_layer *s = t->self;
  if (io->op == SL_OP_FLUSH) {
    if (s->mechanism == REDIRECT_ON_WRITE && s->dirty_leaves)
      cl_thin_commit (t, io);
    cl_submit_child (s->below, io, SL_OP_FLUSH, 0, 0, 0, cl_part_done, NULL);
    return;
  }
  uint64_t offset = io->offset_bytes, end = sl_min_u64 (io->offset_bytes + io->length_bytes,
                                                        t->capacity_bytes);
  if (offset >= end) {
    cl_io_complete_at (io, cl_now_ns (t->cluster));
    return;
  }
  io->pending++;                       /* held while the pieces go out */
  if (io->op != SL_OP_WRITE)
    snapshot_read (t, io, offset, end);
  else if (s->mechanism == REDO_LOG && s->live == 0)
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, offset, end - offset, cl_part_done,
                     NULL);
  else {
    while (offset < end) {
      uint64_t piece = sl_min_u64 (end, (offset / s->unit_bytes + 1) * s->unit_bytes) - offset;
      if (s->mechanism == REDO_LOG)
        cl_redo_write_chunk (t, io, offset, piece);
      else
        cl_thin_write_block (t, io, offset, piece);
      offset += piece;
    }
    if (s->mechanism == REDIRECT_ON_WRITE && (io->flags & SL_REQUEST_FUA) && s->dirty_leaves)
      cl_thin_commit (t, io);
  }
  if (--io->pending == 0)
    cl_io_complete_at (io, cl_now_ns (t->cluster));
}

static void
snapshot_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct snapshot_layer *s = t->self;
  if (s->mechanism == REDO_LOG) {
    cl_warm (s->below, offset_bytes, length_bytes);
    return;
  }
  uint64_t first = offset_bytes / THIN_BLOCK_BYTES;
  uint64_t last = (sl_min_u64 (offset_bytes + length_bytes, s->volume_bytes) - 1)
    / THIN_BLOCK_BYTES;
  cl_warm (s->below, cl_thin_block_offset (s, s->block_at[first]),
           (last - first + 1) * THIN_BLOCK_BYTES);
}

static void
snapshot_write_counters (struct cl_target *t, FILE *out)
{
  struct snapshot_layer *s = t->self;
  fprintf (out, "\"snapshots\": %u, \"snapshots_taken\": %" PRIu64 ", \"snapshots_deleted\": %"
           PRIu64 ", \"copy_reads\": %" PRIu64 ", \"copy_writes\": %" PRIu64
           ", \"metadata_writes\": %" PRIu64 ", \"exceptions\": %" PRIu64
           ", \"merge_reads\": %" PRIu64 ", \"merge_writes\": %" PRIu64, s->live,
           s->snapshots_taken, s->snapshots_deleted, s->copy_reads, s->copy_writes,
           s->metadata_writes, s->exceptions, s->merge_reads, s->merge_writes);
}

static void
snapshot_destroy (struct cl_target *t)
{
  struct snapshot_layer *s = t->self;
  for (unsigned k = 0; k < s->live && s->mechanism == REDO_LOG; k++)
    cl_redo_log_free (s->chain[k]);
  free (s->block_at);
  free (s->written_in);
  free (s->leaf_dirty);
  free (s);
}

static const struct cl_target_ops redo_ops = {
  .kind = "redo-log", .submit = snapshot_submit, .warm = snapshot_warm,
  .write_counters = snapshot_write_counters, .destroy = snapshot_destroy,
};
static const struct cl_target_ops thin_ops = {
  .kind = "redirect-on-write", .submit = snapshot_submit, .warm = snapshot_warm,
  .write_counters = snapshot_write_counters, .destroy = snapshot_destroy,
};

bool
cl_is_snapshot_layer (const struct cl_target *t)
{
  return t->ops == &redo_ops || t->ops == &thin_ops;
}

int
cl_snapshot_event (struct cl_target *t, bool take, char *err, size_t err_bytes)
{
  struct snapshot_layer *s = t->self;
  int rc = s->mechanism == REDO_LOG
    ? (take ? cl_redo_take (t, err, err_bytes) : cl_redo_delete (t, err, err_bytes))
    : (take ? cl_thin_take (t, err, err_bytes) : cl_thin_delete (t, err, err_bytes));
  if (rc == 0) {
    if (take)
      s->snapshots_taken++;
    else
      s->snapshots_deleted++;
  }
  return rc;
}

uint64_t
cl_snapshot_base_bytes (bool redo_log, uint64_t volume_bytes, unsigned depth, uint64_t room_bytes)
{
  return redo_log ? volume_bytes + depth * room_bytes
    : room_bytes + volume_bytes * (1 + depth);
}

struct cl_target *
cl_snapshot_new (struct cluster *c, const char *node, const char *name, struct cl_target *base,
                 bool redo_log, uint64_t volume_bytes, unsigned depth, uint64_t room_bytes,
                 char *err, size_t err_bytes)
{
  if (depth < 1 || depth > MAX_DEPTH) {
    snprintf (err, err_bytes, "%s: depth %u (1 to %u snapshots)", name, depth, MAX_DEPTH);
    return NULL;
  }
  if (base->capacity_bytes < cl_snapshot_base_bytes (redo_log, volume_bytes, depth, room_bytes)) {
    snprintf (err, err_bytes, "%s: its base holds %" PRIu64 " bytes, not the %" PRIu64
              " the volume and its snapshots' room need", name, base->capacity_bytes,
              cl_snapshot_base_bytes (redo_log, volume_bytes, depth, room_bytes));
    return NULL;
  }
  if (redo_log && room_bytes < volume_bytes + volume_bytes / 128) {
    snprintf (err, err_bytes, "%s: a redo log of %" PRIu64 " bytes cannot take a rewrite of "
              "the %" PRIu64 "-byte volume", name, room_bytes, volume_bytes);
    return NULL;
  }
  if (!redo_log && room_bytes < 2 * METADATA_BLOCK_BYTES) {
    snprintf (err, err_bytes, "%s: %" PRIu64 " bytes of thin-pool metadata", name, room_bytes);
    return NULL;
  }
  struct snapshot_layer *s = cl_xcalloc (1, sizeof *s);
  s->below = base;
  s->mechanism = redo_log ? REDO_LOG : REDIRECT_ON_WRITE;
  s->depth = depth;
  s->volume_bytes = volume_bytes;
  s->room_bytes = room_bytes;
  s->unit_bytes = redo_log ? REDO_CHUNK_BYTES : THIN_BLOCK_BYTES;
  s->place = redo_log ? cl_redo_place : cl_thin_place;
  s->fresh_done = redo_log ? cl_redo_exception_written : cl_part_done;
  c->memory_bytes += sizeof *s;
  if (!redo_log)
    cl_thin_init (c, s);
  return cl_target_new (c, redo_log ? &redo_ops : &thin_ops, s, node, name, volume_bytes, true);
}
