/* layer_md.c — Linux md RAID 0/1/10/5/6 over member targets, planned with
 * the RAID controller's own layout code (raid/raid_map.h) but without its
 * cache: md writes through (a RAID 5/6 partial-stripe write reads old data
 * and parity first, then writes), and each member's data starts
 * data_offset_bytes in, after md's superblock and bitmap.
 *
 * Mirrored reads go to the copy with the fewest I/Os in flight (md's
 * read_balance prefers an idle or nearest copy); a replicated volume's
 * remote legs are write-mostly in the lab (replica-mirror.sh), so
 * cl_mirror_new's reads always go to its first, local leg.
 *
 * A member on a node that goes down (cl_md_node_event) fails: md plans
 * around it (a mirror writes the others, RAID-5/6 reconstructs from the
 * rest), and its write-intent bitmap (mdadm's internal bitmap, chunks of
 * 64 MiB of each member) marks what it misses.  When the node comes back
 * the member is re-added and md resyncs the marked chunks only, the way
 * its resync does (drivers/md/raid1.c: RESYNC_BLOCK_SIZE 64 KiB, at most
 * RESYNC_DEPTH 32 in flight; raid5's stripe-by-stripe resync is taken the
 * same), no faster than sync_speed_max (200000 KiB/s, md's default); the
 * member is written but not read until it is done.  md's slowing of a
 * resync while the array is busy (sync_speed_min) is not modelled. */
#define _GNU_SOURCE
#include "layers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_internal.h"
#include "raid/raid_map.h"

#define BITMAP_CHUNK_BYTES (64ull * 1024 * 1024)
#define RESYNC_BLOCK_BYTES (64u * 1024u)
#define RESYNC_DEPTH 32u
#define SYNC_SPEED_MAX_BYTES_PER_S (200000ull * 1024)

struct md {
  struct sl_raid_layout layout;
  struct raid_member_view view;        /* failed members, the one being resynced */
  uint64_t data_offset_bytes;
  bool read_first;                     /* write-mostly legs after the first */
  uint32_t turn;
  uint32_t member_count;
  struct cl_target **member;
  uint32_t *in_flight;
  unsigned *member_node;               /* node holding each, or NULL: not set */
  uint8_t **stale;                     /* per member: bitmap chunks it missed (NULL: none) */
  uint64_t bitmap_chunks;
  uint32_t resync_waiting_mask;        /* back, waiting for the resync in progress */
  uint64_t resync_chunk, resync_offset_bytes;   /* where the resync is */
  uint32_t resync_in_flight;
  uint64_t resync_next_ns;             /* sync_speed_max: the next block's earliest start */
  bool resync_timer;
  uint64_t member_reads, member_writes, rmw_reads, degraded_writes, resync_bytes;
};

/* One logical I/O under way: its plan and the phase it is in. */
struct md_op {
  struct raid_plan plan;
  size_t phase1_start;
  uint32_t phase;
  bool resync;                         /* a resync block's, not a submitter's */
  void *submitters_owner;              /* io->owner holds the op meanwhile */
};

static void resync_block_done (struct cl_target *t, struct cl_io *io);
static void mark_stale (struct md *m, uint64_t offset, uint64_t length);

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
  bool resync = op->resync;
  raid_plan_free (&op->plan);
  free (op);
  if (resync)
    resync_block_done (t, io);
  else
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

/* The bitmap chunks a write of [offset, +length) of the array touches on
 * every member: its rows' span of each member. */
static void
chunk_span (const struct md *m, uint64_t offset, uint64_t length, uint64_t *first,
            uint64_t *last)
{
  uint64_t from = offset, to = offset + length;     /* a mirror's member is the array */
  if (m->layout.level != 1) {
    uint64_t row_bytes = (uint64_t) sl_raid_data_members (m->layout.level, m->layout.members)
      * m->layout.stripe_bytes;
    from = offset / row_bytes * m->layout.stripe_bytes;
    to = (offset + length + row_bytes - 1) / row_bytes * m->layout.stripe_bytes;
  }
  *first = from / BITMAP_CHUNK_BYTES;
  *last = (to - 1) / BITMAP_CHUNK_BYTES;
}

static void
mark_stale (struct md *m, uint64_t offset, uint64_t length)
{
  if (length == 0)
    return;
  uint64_t first, last;
  chunk_span (m, offset, length, &first, &last);
  m->degraded_writes++;
  for (uint32_t i = 0; i < m->member_count; i++)
    if (m->view.failed_mask & (1u << i))
      for (uint64_t k = first; k <= last && k < m->bitmap_chunks; k++)
        m->stale[i][k] = 1;
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
    if (m->view.failed_mask)
      mark_stale (m, io->offset_bytes, io->length_bytes);
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

/* A warm region of the array warms every member's share of it: a
 * mirror's member holds the region itself (its one "chunk" is the whole
 * leg: rounding to it would warm the whole volume), a striped array's
 * members the rows it spans. */
static void
md_warm (struct cl_target *t, uint64_t offset_bytes, uint64_t length_bytes)
{
  struct md *m = t->self;
  uint64_t from = offset_bytes, length = length_bytes;
  if (m->layout.level != 1) {
    uint32_t data = sl_raid_data_members (m->layout.level, m->layout.members);
    uint64_t row_bytes = (uint64_t) data * m->layout.stripe_bytes;
    uint64_t first_row = offset_bytes / row_bytes;
    uint64_t last_row = (offset_bytes + length_bytes + row_bytes - 1) / row_bytes;
    from = first_row * m->layout.stripe_bytes;
    length = (last_row - first_row) * m->layout.stripe_bytes;
  }
  from += m->data_offset_bytes;
  for (uint32_t i = 0; i < m->member_count; i++)
    cl_warm (m->member[i], from, sl_min_u64 (length, m->member[i]->capacity_bytes - from));
}

static void
md_write_counters (struct cl_target *t, FILE *out)
{
  struct md *m = t->self;
  fprintf (out, "\"level\": %" PRIu32 ", \"members\": %" PRIu32 ", \"chunk_bytes\": %" PRIu64
           ", \"member_reads\": %" PRIu64 ", \"member_writes\": %" PRIu64
           ", \"rmw_reads\": %" PRIu64 ", \"failed_members\": %d, \"degraded_writes\": %" PRIu64
           ", \"resync_bytes\": %" PRIu64, m->layout.level, m->layout.members,
           m->layout.stripe_bytes, m->member_reads, m->member_writes, m->rmw_reads,
           __builtin_popcount (m->view.failed_mask), m->degraded_writes, m->resync_bytes);
}

static void
md_destroy (struct cl_target *t)
{
  struct md *m = t->self;
  if (m->stale)
    for (uint32_t i = 0; i < m->member_count; i++)
      free (m->stale[i]);
  free (m->stale);
  free (m->member_node);
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

/* ------------------------------------------------- failure and resync -- */

static bool is_md (const struct cl_target *t);

void
cl_md_runs_on (struct cl_target *t, struct cl_cpu *cpu)
{
  if (is_md (t))                       /* a one-leg mirror is its leg: no md */
    cl_layer_runs_on (t, cpu, cpu->config.per_md_io_ns);
}

void
cl_md_set_member_nodes (struct cl_target *t, const unsigned *nodes)
{
  if (!is_md (t))
    return;                            /* one copy: no md */
  struct md *m = t->self;
  m->member_node = cl_xcalloc (m->member_count, sizeof *m->member_node);
  memcpy (m->member_node, nodes, m->member_count * sizeof *nodes);
  m->bitmap_chunks = (m->layout.member_bytes + BITMAP_CHUNK_BYTES - 1) / BITMAP_CHUNK_BYTES;
}

static void resync_pump (struct cl_target *t);

static void
resync_timer_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct cl_target *t = arg;
  struct md *m = t->self;
  m->resync_timer = false;
  resync_pump (t);
}

/* The next stale chunk of the member being resynced at or after the
 * resync's place; false when there is none. */
static bool
next_stale (struct md *m)
{
  uint32_t member = (uint32_t) m->view.rebuilding;
  while (m->resync_chunk < m->bitmap_chunks && !m->stale[member][m->resync_chunk]) {
    m->resync_chunk++;
    m->resync_offset_bytes = m->resync_chunk * BITMAP_CHUNK_BYTES;
  }
  return m->resync_chunk < m->bitmap_chunks;
}

/* The member's resync is done: it is read again; the next member back
 * starts its own. */
static void
resync_finish (struct cl_target *t)
{
  struct md *m = t->self;
  m->view.rebuilding = -1;
  for (uint32_t i = 0; i < m->member_count; i++)
    if (m->resync_waiting_mask & (1u << i)) {
      m->resync_waiting_mask &= ~(1u << i);
      m->view.rebuilding = (int) i;
      m->resync_chunk = 0;
      m->resync_offset_bytes = 0;
      resync_pump (t);
      return;
    }
}

/* Issues resync blocks of the stale chunks, up to RESYNC_DEPTH in flight,
 * paced to sync_speed_max. */
static void
resync_pump (struct cl_target *t)
{
  struct md *m = t->self;
  if (m->view.rebuilding < 0 || m->resync_timer)
    return;
  uint32_t member = (uint32_t) m->view.rebuilding;
  while (m->resync_in_flight < RESYNC_DEPTH) {
    if (!next_stale (m)) {
      if (m->resync_in_flight == 0)
        resync_finish (t);
      return;
    }
    uint64_t now = cl_now_ns (t->cluster);
    if (m->resync_next_ns > now) {
      m->resync_timer = true;
      cl_schedule (t->cluster, m->resync_next_ns, resync_timer_event, t, 0);
      return;
    }
    uint64_t chunk_end = sl_min_u64 ((m->resync_chunk + 1) * BITMAP_CHUNK_BYTES,
                                     m->layout.member_bytes);
    uint64_t length = sl_min_u64 (RESYNC_BLOCK_BYTES, chunk_end - m->resync_offset_bytes);
    struct md_op *op = cl_xcalloc (1, sizeof *op);
    op->resync = true;
    if (raid_plan_rebuild (&op->plan, &m->layout, &m->view, pick_copy, m, member,
                           m->resync_offset_bytes, length) < 0)
      abort ();
    raid_plan_finish (&op->plan);
    m->resync_offset_bytes += length;
    if (m->resync_offset_bytes >= chunk_end) {
      m->stale[member][m->resync_chunk] = 0;
      m->resync_chunk++;
      m->resync_offset_bytes = m->resync_chunk * BITMAP_CHUNK_BYTES;
    }
    m->resync_bytes += length;
    m->resync_next_ns = sl_max_u64 (now, m->resync_next_ns)
      + length * NS_PER_S / SYNC_SPEED_MAX_BYTES_PER_S;
    if (op->plan.count == 0) {
      raid_plan_free (&op->plan);
      free (op);
      continue;
    }
    struct cl_io *io = cl_io_new (t->cluster);
    io->op = SL_OP_WRITE;
    io->target = t;
    io->start_ns = now;
    io->owner = op;
    op->phase1_start = raid_plan_phase1_start (&op->plan);
    op->phase = op->phase1_start > 0 ? 0 : 1;
    m->resync_in_flight++;
    start_phase (t, io);
  }
}

static void
resync_block_done (struct cl_target *t, struct cl_io *io)
{
  struct md *m = t->self;
  cl_io_free (t->cluster, io);
  m->resync_in_flight--;
  resync_pump (t);
}

/* Members on node: a mask. */
static uint32_t
members_on (const struct md *m, unsigned node)
{
  uint32_t mask = 0;
  for (uint32_t i = 0; m->member_node && i < m->member_count; i++)
    if (m->member_node[i] == node)
      mask |= 1u << i;
  return mask;
}

/* The members it may lose: those beyond its data's (for the levels that
 * hold a node's components, 1, 5 and 6, what each tolerates). */
static uint32_t
tolerated (const struct md *m)
{
  return m->member_count - sl_raid_data_members (m->layout.level, m->layout.members);
}

int
cl_md_node_check (const struct cl_target *t, unsigned node, char *err, size_t err_bytes)
{
  if (!is_md (t))
    return 0;
  const struct md *m = t->self;
  uint32_t mask = members_on (m, node);
  if (mask == 0)
    return 0;
  uint32_t failed = (uint32_t) __builtin_popcount (m->view.failed_mask | mask);
  if (failed > tolerated (m)) {
    snprintf (err, err_bytes, "%s would lose %u of its %u components (it tolerates %u)",
              t->name, failed, m->member_count, tolerated (m));
    return -1;
  }
  return 0;
}

void
cl_md_node_event (struct cl_target *t, unsigned node, bool down)
{
  if (!is_md (t))
    return;
  struct md *m = t->self;
  uint32_t mask = members_on (m, node);
  if (mask == 0)
    return;
  if (down) {
    if (m->stale == NULL)
      m->stale = cl_xcalloc (m->member_count, sizeof *m->stale);
    for (uint32_t i = 0; i < m->member_count; i++)
      if ((mask & (1u << i)) && m->stale[i] == NULL) {
        m->stale[i] = cl_xcalloc (m->bitmap_chunks ? m->bitmap_chunks : 1, 1);
        t->cluster->memory_bytes += m->bitmap_chunks;
      }
    m->view.failed_mask |= mask;
    m->resync_waiting_mask &= ~mask;
    /* a member failing while it was being resynced starts over when back */
    if (m->view.rebuilding >= 0 && (mask & (1u << m->view.rebuilding)))
      resync_finish (t);
    return;
  }
  m->view.failed_mask &= ~mask;
  m->resync_waiting_mask |= mask;
  if (m->view.rebuilding < 0)
    resync_finish (t);
}

static bool
is_md (const struct cl_target *t)
{
  return t->ops == &md_ops;
}
