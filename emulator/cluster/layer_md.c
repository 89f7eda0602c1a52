/* layer_md.c — Linux md RAID 0/1/10/5/6 over member targets, planned with
 * the RAID controller's own layout code (raid/raid_map.h) but without its
 * cache: md writes through (a RAID 5/6 partial-stripe write reads old data
 * and parity first, then writes), and each member's data starts
 * data_offset_bytes in, after md's superblock and bitmap.
 *
 * Mirrored reads go to the copy with the fewest I/Os in flight (md's
 * read_balance prefers an idle or nearest copy); a replicated volume's
 * remote legs are write-mostly in the lab (replica-mirror.sh), so
 * cl_mirror_new's reads always go to its first, local leg. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "raid/raid_map.h"

struct md {
  struct sl_raid_layout layout;
  struct raid_member_view view;        /* no member fails in the simulator yet */
  uint64_t data_offset_bytes;
  bool read_first;                     /* write-mostly legs after the first */
  uint32_t turn;
  uint32_t member_count;
  struct cl_target **member;
  uint32_t *in_flight;
  uint64_t member_reads, member_writes, rmw_reads;
};

/* One logical I/O under way: its plan and the phase it is in. */
struct md_op {
  struct raid_plan plan;
  size_t phase1_start;
  uint32_t phase;
  void *submitters_owner;              /* io->owner holds the op meanwhile */
};

static uint32_t
pick_copy (void *arg, uint32_t first, uint32_t copies, uint32_t readable_mask)
{
  struct md *m = arg;
  if (m->read_first && (readable_mask & (1u << first)))
    return first;
  int best = -1;
  for (uint32_t i = 0; i < copies; i++) {
    uint32_t k = first + (i + m->turn) % copies;
    if (!(readable_mask & (1u << k)))
      continue;
    if (best < 0 || m->in_flight[k] < m->in_flight[best])
      best = (int) k;
  }
  m->turn++;
  return best < 0 ? first : (uint32_t) best;
}

static void start_phase (struct cl_target *t, struct cl_io *io);

static void
member_done (struct cl_io *child)
{
  struct cl_io *io = child->parent;
  struct cl_target *t = io->target;
  struct md *m = t->self;
  m->in_flight[child->scratch[0]]--;
  cl_io_free (t->cluster, child);
  if (--io->pending > 0)
    return;
  struct md_op *op = io->owner;
  if (op->phase == 0 && op->phase1_start < op->plan.count) {
    op->phase = 1;
    start_phase (t, io);
    return;
  }
  io->owner = op->submitters_owner;
  raid_plan_free (&op->plan);
  free (op);
  cl_io_complete (io);
}

/* Every I/O of the phase is submitted before any can complete (completions
 * come from engine events), so pending counts the whole phase. */
static void
start_phase (struct cl_target *t, struct cl_io *io)
{
  struct md *m = t->self;
  struct md_op *op = io->owner;
  size_t from = op->phase == 0 ? 0 : op->phase1_start;
  size_t to = op->phase == 0 ? op->phase1_start : op->plan.count;
  for (size_t i = from; i < to; i++) {
    const struct raid_io *r = &op->plan.io[i];
    if (r->op == SL_OP_READ)
      m->member_reads++;
    else if (r->op == SL_OP_WRITE)
      m->member_writes++;
    if (r->op == SL_OP_READ && io->op == SL_OP_WRITE)
      m->rmw_reads++;
    m->in_flight[r->member]++;
    struct cl_io *child = cl_io_new (t->cluster);
    child->op = r->op;
    child->flags = r->op == SL_OP_WRITE ? (io->flags & SL_REQUEST_FUA) : 0;
    child->offset_bytes = r->offset_bytes + (r->op == SL_OP_FLUSH ? 0 : m->data_offset_bytes);
    child->length_bytes = r->length_bytes;
    child->parent = io;
    child->done = member_done;
    child->scratch[0] = r->member;
    io->pending++;
    cl_submit (m->member[r->member], child);
  }
}

static void
done_now (struct cl_io *io)
{
  cl_io_complete_at (io, cl_now_ns (io->target->cluster));
}

static void
md_submit (struct cl_target *t, struct cl_io *io)
{
  struct md *m = t->self;
  struct md_op *op = cl_xcalloc (1, sizeof *op);
  int rc = 0;
  switch (io->op) {
  case SL_OP_READ:
    rc = raid_plan_read (&op->plan, &m->layout, &m->view, pick_copy, m, io->offset_bytes,
                         io->length_bytes);
    break;
  case SL_OP_WRITE:
    rc = raid_plan_write (&op->plan, &m->layout, &m->view, io->offset_bytes, io->length_bytes);
    break;
  case SL_OP_FLUSH:
    for (uint32_t i = 0; i < m->member_count && rc == 0; i++)
      rc = raid_plan_add (&op->plan, i, SL_OP_FLUSH, 1, 0, 0);
    break;
  default:                             /* TRIM: md passes discards; not modelled below */
    break;
  }
  if (rc < 0)
    abort ();
  raid_plan_finish (&op->plan);
  if (op->plan.count == 0) {
    raid_plan_free (&op->plan);
    free (op);
    done_now (io);
    return;
  }
  op->phase1_start = raid_plan_phase1_start (&op->plan);
  op->phase = op->phase1_start > 0 ? 0 : 1;
  op->submitters_owner = io->owner;
  io->owner = op;
  start_phase (t, io);
}

/* A warm region of the array warms every member's share of it. */
static void
md_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct md *m = t->self;
  uint32_t data = sl_raid_data_members (m->layout.level, m->layout.members);
  uint64_t row_bytes = (uint64_t) data * m->layout.stripe_bytes;
  uint64_t first_row = offset_bytes / row_bytes;
  uint64_t last_row = (offset_bytes + length_bytes + row_bytes - 1) / row_bytes;
  uint64_t from = m->data_offset_bytes + first_row * m->layout.stripe_bytes;
  uint64_t length = (last_row - first_row) * m->layout.stripe_bytes;
  for (uint32_t i = 0; i < m->member_count; i++)
    cl_warm (m->member[i], from, sl_min_u64 (length, m->member[i]->capacity_bytes - from));
}

static void
md_write_counters (struct cl_target *t, FILE *out)
{
  struct md *m = t->self;
  fprintf (out, "\"level\": %" PRIu32 ", \"members\": %" PRIu32 ", \"chunk_bytes\": %" PRIu64
           ", \"member_reads\": %" PRIu64 ", \"member_writes\": %" PRIu64
           ", \"rmw_reads\": %" PRIu64, m->layout.level, m->layout.members,
           m->layout.stripe_bytes, m->member_reads, m->member_writes, m->rmw_reads);
}

static void
md_destroy (struct cl_target *t)
{
  struct md *m = t->self;
  free (m->member);
  free (m->in_flight);
  free (m);
}

static const struct cl_target_ops md_ops = {
  .kind = "md", .submit = md_submit, .warm = md_warm, .write_counters = md_write_counters,
  .destroy = md_destroy,
};

static const struct cl_target_ops stripe_ops = {
  .kind = "stripe", .submit = md_submit, .warm = md_warm, .write_counters = md_write_counters,
  .destroy = md_destroy,
};

static struct cl_target *
md_new (struct cluster *c, const struct cl_target_ops *ops, const char *node, const char *name,
        unsigned level, uint64_t chunk_bytes, uint64_t data_offset_bytes,
        struct cl_target *const *members, unsigned count, bool read_first, bool listed,
        char *err, size_t err_bytes)
{
  if (level != 0 && level != 1 && level != 10 && level != 5 && level != 6) {
    snprintf (err, err_bytes, "%s: RAID level %u (known: 0, 1, 10, 5, 6)", name, level);
    return NULL;
  }
  if (count < sl_raid_min_members (level) || count > SL_RAID_MAX_MEMBERS
      || (level == 10 && count % 2)) {
    snprintf (err, err_bytes, "%s: RAID %u of %u members (at least %u, at most %u%s)", name,
              level, count, sl_raid_min_members (level), SL_RAID_MAX_MEMBERS,
              level == 10 ? ", an even number" : "");
    return NULL;
  }
  if (chunk_bytes == 0 || chunk_bytes % 512) {
    snprintf (err, err_bytes, "%s: chunk of %" PRIu64 " bytes (a multiple of 512)", name,
              chunk_bytes);
    return NULL;
  }
  uint64_t member_bytes = UINT64_MAX;
  for (unsigned i = 0; i < count; i++)
    member_bytes = sl_min_u64 (member_bytes, members[i]->capacity_bytes);
  if (member_bytes < data_offset_bytes + chunk_bytes) {
    snprintf (err, err_bytes, "%s: members of %" PRIu64 " bytes hold no chunk of %" PRIu64
              " after md's %" PRIu64 " bytes", name, member_bytes, chunk_bytes,
              data_offset_bytes);
    return NULL;
  }
  member_bytes -= data_offset_bytes;
  struct md *m = cl_xcalloc (1, sizeof *m);
  m->layout = (struct sl_raid_layout) { .level = level, .members = count,
                                        .stripe_bytes = chunk_bytes,
                                        .member_bytes = member_bytes - member_bytes % chunk_bytes };
  m->view.rebuilding = -1;
  m->data_offset_bytes = data_offset_bytes;
  m->read_first = read_first;
  m->member_count = count;
  m->member = cl_xcalloc (count, sizeof *m->member);
  m->in_flight = cl_xcalloc (count, sizeof *m->in_flight);
  memcpy (m->member, members, count * sizeof *members);
  return cl_target_new (c, ops, m, node, name, sl_raid_capacity_bytes (&m->layout), listed);
}

struct cl_target *
cl_md_new (struct cluster *c, const char *node, const char *name, unsigned level,
           uint64_t chunk_bytes, uint64_t data_offset_bytes, struct cl_target *const *members,
           unsigned count, char *err, size_t err_bytes)
{
  return md_new (c, &md_ops, node, name, level, chunk_bytes, data_offset_bytes, members, count,
                 false, true, err, err_bytes);
}

struct cl_target *
cl_stripe_new (struct cluster *c, const char *node, const char *name, uint64_t stripe_bytes,
               struct cl_target *const *members, unsigned count, char *err, size_t err_bytes)
{
  if (count == 1) {
    /* one device: LVM's linear segment, the device itself */
    return cl_slice_new (c, node, name, members[0], 0, members[0]->capacity_bytes, false, err,
                         err_bytes);
  }
  return md_new (c, &stripe_ops, node, name, 0, stripe_bytes, 0, members, count, false, false,
                 err, err_bytes);
}

/* md RAID-1 over legs: a chunk is meaningless, the whole leg is one
 * "chunk" row; read_first: reads from the first leg only (the others
 * write-mostly). */
static struct cl_target *
mirror_new (struct cluster *c, const char *node, const char *name, uint64_t data_offset_bytes,
            struct cl_target *const *legs, unsigned count, bool read_first, bool listed,
            char *err, size_t err_bytes)
{
  uint64_t leg_bytes = UINT64_MAX;
  for (unsigned i = 0; i < count; i++)
    leg_bytes = sl_min_u64 (leg_bytes, legs[i]->capacity_bytes);
  if (count == 1)
    return cl_slice_new (c, node, name, legs[0], data_offset_bytes,
                         leg_bytes - data_offset_bytes, listed, err, err_bytes);
  uint64_t chunk = leg_bytes > data_offset_bytes ? (leg_bytes - data_offset_bytes) / 512 * 512 : 0;
  if (chunk == 0) {
    snprintf (err, err_bytes, "%s: legs of %" PRIu64 " bytes hold nothing after md's %" PRIu64
              " bytes", name, leg_bytes, data_offset_bytes);
    return NULL;
  }
  return md_new (c, &md_ops, node, name, 1, chunk, data_offset_bytes, legs, count, read_first,
                 listed, err, err_bytes);
}

struct cl_target *
cl_mirror_new (struct cluster *c, const char *node, const char *name, uint64_t data_offset_bytes,
               struct cl_target *const *legs, unsigned count, char *err, size_t err_bytes)
{
  return mirror_new (c, node, name, data_offset_bytes, legs, count, true, true, err, err_bytes);
}

/* A workload volume's policy: the same md, one per volume, so not listed
 * (a cluster has thousands; their devices and links are). */
struct cl_target *
cl_volume_mirror_new (struct cluster *c, const char *node, const char *name,
                      struct cl_target *const *legs, unsigned count, bool first_is_local,
                      char *err, size_t err_bytes)
{
  return mirror_new (c, node, name, 0, legs, count, first_is_local, false, err, err_bytes);
}

struct cl_target *
cl_volume_md_new (struct cluster *c, const char *node, const char *name, unsigned level,
                  uint64_t chunk_bytes, struct cl_target *const *members, unsigned count,
                  char *err, size_t err_bytes)
{
  return md_new (c, &md_ops, node, name, level, chunk_bytes, 0, members, count, false, false,
                 err, err_bytes);
}
