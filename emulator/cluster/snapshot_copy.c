/* snapshot_copy.c — what both snapshot mechanisms (snapshot_redo_log.c,
 * snapshot_thin.c) write through: a write's piece to a unit's new place,
 * the unit copied there first when the write does not cover it (a read,
 * then a write), and the layer's own background I/O.  The target itself
 * is layer_snapshot.c. */
#define _GNU_SOURCE
#include "snapshot_layer.h"

#include "layers.h"

void
cl_snapshot_io_free (struct cl_io *io)
{
  cl_io_free (io->target->cluster, io);
}

void
cl_snapshot_write_back (struct cl_io *io, uint64_t offset, cl_done_fn done)
{
  /* to the layer below by name: io->target is where the read ended up,
   * which is not the same address space when below is a bare slice */
  struct snapshot_layer *s = ((struct cl_target *) io->owner)->self;
  io->op = SL_OP_WRITE;
  io->offset_bytes = offset;
  io->done = done;
  cl_submit (s->below, io);
}

/* A copy's write is done: the piece goes to the new place (scratch[1]) at
 * its offset in the unit (scratch[0] >> 32), its length the low half. */
static void
copy_written (struct cl_io *io)
{
  struct cl_io *parent = io->parent;
  struct cl_target *t = io->owner;
  struct snapshot_layer *s = t->self;
  uint64_t at = io->scratch[1] + (io->scratch[0] >> 32);
  uint64_t length = io->scratch[0] & 0xffffffffu;
  cl_io_free (t->cluster, io);
  parent->pending--;                   /* the copy's part, replaced by the write's */
  cl_submit_child (s->below, parent, SL_OP_WRITE, parent->flags, at, length, s->fresh_done, t);
}

static void
copy_read (struct cl_io *io)
{
  struct snapshot_layer *s = ((struct cl_target *) io->owner)->self;
  s->copy_writes++;
  cl_snapshot_write_back (io, io->scratch[1], copy_written);
}

void
cl_snapshot_write_fresh (struct cl_target *t, struct cl_io *io, bool copy, uint64_t from,
                         uint64_t to, uint64_t within, uint64_t length)
{
  struct snapshot_layer *s = t->self;
  if (!copy || length == s->unit_bytes) {
    cl_submit_child (s->below, io, SL_OP_WRITE, io->flags, to + within, length, s->fresh_done,
                     t);
    return;
  }
  s->copy_reads++;
  io->pending++;                       /* the copy's part until its write goes out */
  struct cl_io *c = cl_io_new (t->cluster);
  c->op = SL_OP_READ;
  c->offset_bytes = from;
  c->length_bytes = s->unit_bytes;
  c->done = copy_read;
  c->owner = t;
  c->parent = io;
  c->scratch[0] = within << 32 | length;
  c->scratch[1] = to;
  cl_submit (s->below, c);
}
