/* layer_data_reduction.c — deduplication and compression in an all-flash
 * disk group, as a hyperconverged cluster does them (VMware, "Virtual SAN
 * 6.2 – Deduplication and Compression Deep Dive", Virtual Blocks blog,
 * 2016-03-11; C. Hogan, "VSAN 6.2 Part 1 – Deduplication and
 * Compression", 2016-02-12):
 *
 *   - at destage: the layer sits between the write buffer and the capacity
 *     devices, so what the buffer absorbs (and overwrites in place) costs
 *     nothing until it goes down; reads the buffer does not hold pass it;
 *   - fixed 4 KiB blocks, deduplicated within the disk group by their
 *     SHA-1 fingerprint: a block whose fingerprint is known is not
 *     written, a reference to the stored one is;
 *   - a new block is compressed with LZ4 and stored compressed when that
 *     gives 2 KiB or less, else as it is;
 *   - compression alone (the later "compression only" setting) skips the
 *     fingerprints.
 *
 * What the data is like is the workload's (fio's dedupe_percentage and
 * buffer_compress_percentage): dedupe_percent of the blocks are
 * duplicates, which blocks fixed by a hash of their address; every block
 * shrinks by compress_percent, so it is stored in 2 KiB when that is 50 or
 * more.  A duplicate's data lies where its first copy was stored (a place
 * the same hash picks), so a read of it is an I/O of its own; a run of new
 * blocks is one I/O of the sectors (4 KiB) their stored bytes take,
 * compressed ones packed two to a sector across writes.
 *
 * Metadata (the model's, as the layout is not published): a translation
 * entry of 16 bytes per block written and, with deduplication, a hash
 * entry of 32 bytes (SHA-1's 20 and the block's place) per new block,
 * appended to a log in a metadata area at the end of the capacity (a 64th
 * of it: the entries' 1.2 %, rounded up) and written 4 KiB at a time with
 * the destage that filled it.  Lookups are served from memory.
 *
 * The CPU, on the node's host (cl_cpu_run): SHA-1 of a 4 KiB block 2.3 us
 * (`openssl speed -bytes 4096 sha1` on this project's host: 1.8 GB/s),
 * LZ4 compression 5.3 us and decompression 0.8 us (the LZ4 project's
 * published benchmark, lz4 README: 780 MB/s and 4970 MB/s). */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cluster_internal.h"
#include "fabric.h"
#include "core/units.h"

#define BLOCK_BYTES 4096u
#define COMPRESSED_BYTES 2048u
#define TRANSLATION_ENTRY_BYTES 16u
#define HASH_ENTRY_BYTES 32u
#define METADATA_AREA_FRACTION 64u
#define SHA1_BLOCK_NS 2300u
#define LZ4_COMPRESS_BLOCK_NS 5300u
#define LZ4_DECOMPRESS_BLOCK_NS 800u

struct reduction {
  struct cl_target *below;
  struct cl_cpu *cpu;
  bool dedup;
  unsigned dedupe_percent;
  bool compressible;                   /* blocks store in 2 KiB */
  uint64_t data_blocks;                /* the area before the metadata */
  uint64_t metadata_at_bytes, metadata_bytes, metadata_head_bytes;
  uint64_t entry_bytes;                /* logged, not yet written */
  uint64_t sector_carry_bytes;         /* stored data not yet filling a sector */
  uint64_t blocks_written, duplicates, blocks_stored, stored_bytes, metadata_writes, cpu_ns;
};

static uint64_t
mix (uint64_t x)
{
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static bool
duplicate (const struct reduction *r, uint64_t block)
{
  return r->dedup && mix (block) % 100u < r->dedupe_percent;
}

/* where a duplicate's first copy lies */
static uint64_t
stored_copy_offset (const struct reduction *r, uint64_t block)
{
  return mix (block ^ 0x9e3779b97f4a7c15ull) % r->data_blocks * BLOCK_BYTES;
}

static uint64_t
stored_block_bytes (const struct reduction *r)
{
  return r->compressible ? COMPRESSED_BYTES : BLOCK_BYTES;
}

/* The blocks [*first, *end) io touches. */
static void
block_span (const struct cl_io *io, uint64_t *first, uint64_t *end)
{
  *first = io->offset_bytes / BLOCK_BYTES;
  *end = (io->offset_bytes + io->length_bytes + BLOCK_BYTES - 1) / BLOCK_BYTES;
}

static uint64_t
sectors_bytes (uint64_t bytes)
{
  return (bytes + BLOCK_BYTES - 1) / BLOCK_BYTES * BLOCK_BYTES;
}

/* A run of new blocks [first, end) as one I/O of their stored bytes: a
 * read, the whole sectors they lie in; a write, the sectors they fill
 * after what earlier writes left of a sector (compressed blocks are
 * packed: a half-filled sector goes down with the next blocks). */
static void
submit_run (struct cl_target *t, struct cl_io *io, uint64_t first, uint64_t end, cl_done_fn done)
{
  struct reduction *r = t->self;
  if (end == first)
    return;
  uint64_t bytes = (end - first) * stored_block_bytes (r);
  if (io->op == SL_OP_READ) {
    cl_submit_child (r->below, io, io->op, io->flags, first * BLOCK_BYTES, sectors_bytes (bytes),
                     done, NULL);
    return;
  }
  r->blocks_stored += end - first;
  r->stored_bytes += bytes;
  uint64_t filled = (r->sector_carry_bytes + bytes) / BLOCK_BYTES * BLOCK_BYTES;
  r->sector_carry_bytes = r->sector_carry_bytes + bytes - filled;
  if (filled)
    cl_submit_child (r->below, io, io->op, io->flags, first * BLOCK_BYTES, filled, done, NULL);
}

/* The blocks of io as children finishing with done: new ones in runs; for
 * a read, each duplicate from its stored copy (a write only refers to it). */
static void
submit_blocks (struct cl_target *t, struct cl_io *io, cl_done_fn done)
{
  struct reduction *r = t->self;
  uint64_t first, end;
  block_span (io, &first, &end);
  uint64_t run = first;
  for (uint64_t b = first; b < end; b++) {
    if (!duplicate (r, b))
      continue;
    submit_run (t, io, run, b, done);
    run = b + 1;
    if (io->op == SL_OP_READ)
      cl_submit_child (r->below, io, SL_OP_READ, 0, stored_copy_offset (r, b),
                       sectors_bytes (stored_block_bytes (r)), done, NULL);
  }
  submit_run (t, io, run, end, done);
}

/* The log's full 4 KiB pages, written with io. */
static void
write_metadata (struct cl_target *t, struct cl_io *io)
{
  struct reduction *r = t->self;
  while (r->entry_bytes >= BLOCK_BYTES) {
    r->entry_bytes -= BLOCK_BYTES;
    r->metadata_writes++;
    cl_submit_child (r->below, io, SL_OP_WRITE, 0, r->metadata_at_bytes + r->metadata_head_bytes,
                     BLOCK_BYTES, cl_part_done, NULL);
    r->metadata_head_bytes = (r->metadata_head_bytes + BLOCK_BYTES) % r->metadata_bytes;
  }
}

/* A write once its blocks are fingerprinted and compressed. */
static void
write_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_io *io = arg;
  struct cl_target *t = io->target;
  io->pending++;                       /* held while the children go out */
  submit_blocks (t, io, cl_part_done);
  write_metadata (t, io);
  if (--io->pending == 0)
    cl_io_complete (io);
}

/* A read whose data has come: decompressed on the host's CPU. */
static void
finish_read (struct cl_target *t, struct cl_io *io)
{
  struct reduction *r = t->self;
  if (!r->compressible) {
    cl_io_complete (io);
    return;
  }
  uint64_t cost = (io->length_bytes + BLOCK_BYTES - 1) / BLOCK_BYTES * LZ4_DECOMPRESS_BLOCK_NS;
  r->cpu_ns += cost;
  cl_io_complete_at (io, cl_cpu_run (r->cpu, cl_now_ns (t->cluster), cost));
}

static void
read_part_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  cl_io_free (child->target->cluster, child);
  if (--io->pending == 0)
    finish_read (io->target, io);
}

static void
reduction_submit (struct cl_target *t, struct cl_io *io)
{
  struct reduction *r = t->self;
  if (io->op == SL_OP_READ) {
    io->pending++;                     /* held while the children go out */
    submit_blocks (t, io, read_part_done);
    if (--io->pending == 0)
      finish_read (t, io);
    return;
  }
  if (io->op != SL_OP_WRITE) {
    /* FLUSH and TRIM: the capacity devices' own */
    cl_submit_child (r->below, io, io->op, io->flags, io->offset_bytes, io->length_bytes,
                     cl_part_done, NULL);
    return;
  }
  uint64_t first, end;
  block_span (io, &first, &end);
  uint64_t fresh = 0;
  for (uint64_t b = first; b < end; b++)
    fresh += !duplicate (r, b);
  r->blocks_written += end - first;
  r->duplicates += (end - first) - fresh;
  r->entry_bytes += (end - first) * TRANSLATION_ENTRY_BYTES
    + (r->dedup ? fresh * HASH_ENTRY_BYTES : 0);
  uint64_t cost = (r->dedup ? (end - first) * SHA1_BLOCK_NS : 0) + fresh * LZ4_COMPRESS_BLOCK_NS;
  r->cpu_ns += cost;
  uint64_t now = cl_now_ns (t->cluster);
  cl_schedule (t->cluster, cost ? cl_cpu_run (r->cpu, now, cost) : now, write_event, io, 0);
}

static void
reduction_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct reduction *r = t->self;
  cl_warm (r->below, offset_bytes, length_bytes);
}

static void
reduction_write_counters (struct cl_target *t, FILE *out)
{
  struct reduction *r = t->self;
  fprintf (out, "\"blocks_written\": %" PRIu64 ", \"duplicates\": %" PRIu64
           ", \"blocks_stored\": %" PRIu64 ", \"stored_bytes\": %" PRIu64
           ", \"metadata_writes\": %" PRIu64 ", \"cpu_ns\": %" PRIu64, r->blocks_written,
           r->duplicates, r->blocks_stored, r->stored_bytes, r->metadata_writes, r->cpu_ns);
}

static void
reduction_destroy (struct cl_target *t)
{
  free (t->self);
}

struct cl_target *
cl_data_reduction_new (struct cluster *c, const char *node, const char *name,
                       struct cl_target *below, struct cl_cpu *cpu, bool dedup,
                       unsigned dedupe_percent, unsigned compress_percent, char *err,
                       size_t err_bytes)
{
  uint64_t metadata = below->capacity_bytes / METADATA_AREA_FRACTION / BLOCK_BYTES * BLOCK_BYTES;
  if (metadata < BLOCK_BYTES || dedupe_percent > 100 || compress_percent > 100) {
    snprintf (err, err_bytes, "%s: %" PRIu64 " bytes hold no metadata area, or a percentage "
              "over 100", name, below->capacity_bytes);
    return NULL;
  }
  static const struct cl_target_ops ops = {
    .kind = "data-reduction", .submit = reduction_submit, .warm = reduction_warm,
    .write_counters = reduction_write_counters, .destroy = reduction_destroy,
  };
  struct reduction *r = cl_xcalloc (1, sizeof *r);
  r->below = below;
  r->cpu = cpu;
  r->dedup = dedup;
  r->dedupe_percent = dedupe_percent;
  r->compressible = compress_percent >= 50;
  r->metadata_bytes = metadata;
  r->metadata_at_bytes = (below->capacity_bytes - metadata) / BLOCK_BYTES * BLOCK_BYTES;
  r->data_blocks = r->metadata_at_bytes / BLOCK_BYTES;
  c->memory_bytes += sizeof *r;
  return cl_target_new (c, &ops, r, node, name, r->metadata_at_bytes, true);
}
