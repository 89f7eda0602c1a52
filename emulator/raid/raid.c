/* raid.c — the RAID controller: front-end commands, write cache and
 * destage, read-ahead, rebuild, and the members it drives.
 *
 * Members are device models in the controller's own engine.  The
 * controller hands each member I/O (an sl_request flagged
 * SL_REQUEST_INTERNAL) to the member's submit() at the current engine
 * time; the member schedules its work and calls sl_engine_complete as any
 * model does; at the completion time the engine calls the request's
 * on_complete (member_io_done) instead of counting it as a front-end
 * completion.  So every layer lives on one timeline in both clocks, and
 * each member keeps its own stats record.
 *
 * Modelling choices:
 *   - one controller CPU: each command costs command-overhead-us of it, in
 *     arrival order; cache hits and cached writes complete when it is done;
 *   - a write is cached when dirty + its length fits in the cache; else it
 *     waits (FIFO) for destage to make room;
 *   - destage starts at the high watermark and runs down to the low one,
 *     also when the front end is idle, when writes wait for room, and when
 *     the cache is write-through (drain); at most destage-depth destage
 *     member writes are in flight;
 *   - FLUSH completes from a protected (or forced) cache; write-through
 *     waits for the drain; either way members with volatile write caches
 *     get a FLUSH, so what the controller wrote to them is on their media
 *     before the FLUSH completes;
 *   - a write-through FUA write goes to the members with FUA (past their
 *     write caches); a cached FUA write is as safe as the cache (kept with
 *     the battery ok; forced write-back without it is the user's risk);
 *   - a write-through write drops any cached copy of its range (it is
 *     newer) and completes when its member writes are done.
 */
#define _GNU_SOURCE
#include "raid_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "core/queues.h"
#include "core/units.h"

#define REBUILD_STEP_BYTES (1024u * 1024u)
#define DESTAGE_WINDOW_BYTES (1024u * 1024u)

static const char *const counter_names[RC_COUNT] = {
  "cache_read_hits", "cache_read_misses", "writes_cached", "writes_through",
  "dirty_bytes", "destaged_bytes", "destage_batches", "member_reads",
  "member_writes", "degraded_reads", "rebuilt_bytes", "battery_state",
  "write_back_effective", "room_waits", "readahead_hits", "events",
};

static void op_start (struct raid_model *m, struct raid_op *op);
static void complete_front (struct raid_model *m, struct sl_request *r);
static void write_through (struct raid_model *m, struct sl_request *r);

static inline uint64_t
now_ns (const struct raid_model *m)
{
  return sl_engine_now_ns (m->engine);
}

static inline uint64_t
dirty_total (const struct raid_model *m)
{
  return m->dirty.bytes + m->destaging_bytes;
}

static void
update_dirty_counter (struct raid_model *m)
{
  m->counter[RC_DIRTY_BYTES] = dirty_total (m);
}

void
raid_event (struct raid_model *m, uint64_t when_ns, const char *fmt, ...)
{
  struct sl_raid_event *ev = &m->events[m->event_total % RAID_EVENTS_KEPT];
  ev->time_ns = when_ns;
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (ev->what, sizeof ev->what, fmt, ap);
  va_end (ap);
  m->event_total++;
  m->counter[RC_EVENTS] = m->event_total;
}

/* ------------------------------------------------------------- ops -- */

static struct raid_op *
op_new (struct raid_model *m, enum raid_op_kind kind, struct sl_request *front)
{
  struct raid_op *op = calloc (1, sizeof *op);
  if (op == NULL)
    abort ();                  /* out of memory mid-model: nothing sane to do */
  op->kind = kind;
  op->front = front;
  op->next_live = m->live_ops;
  if (m->live_ops)
    m->live_ops->prev_live = op;
  m->live_ops = op;
  return op;
}

static void
op_free (struct raid_model *m, struct raid_op *op)
{
  if (op->prev_live)
    op->prev_live->next_live = op->next_live;
  else
    m->live_ops = op->next_live;
  if (op->next_live)
    op->next_live->prev_live = op->prev_live;
  raid_plan_free (&op->plan);
  sl_extents_free (&op->batch);
  free (op);
}

static void
check_oom (int result)
{
  if (result < 0)
    abort ();                  /* out of memory mid-model */
}

/* Mirrored reads go to the copy with the fewest member I/Os in flight;
 * ties rotate so a quiet array still spreads its reads. */
static uint32_t
pick_mirror (void *arg, uint32_t first, uint32_t copies, uint32_t readable_mask)
{
  struct raid_model *m = arg;
  int best = -1;
  for (uint32_t i = 0; i < copies; i++) {
    uint32_t k = first + (i + m->mirror_turn) % copies;
    if (!(readable_mask & (1u << k)))
      continue;
    if (best < 0 || m->member[k].in_flight < m->member[best].in_flight)
      best = (int) k;
  }
  m->mirror_turn++;
  return best < 0 ? first : (uint32_t) best;
}

/* -------------------------------------------------------- member I/O -- */

static struct member_io *
take_io (struct raid_model *m)
{
  if (m->free_ios == NULL) {
    struct raid_io_block *b = calloc (1, sizeof *b);
    if (b == NULL)
      abort ();
    b->next = m->io_blocks;
    m->io_blocks = b;
    for (uint32_t i = 0; i < RAID_IOS_PER_BLOCK; i++) {
      b->ios[i].next_free = m->free_ios;
      m->free_ios = &b->ios[i];
    }
  }
  struct member_io *mio = m->free_ios;
  m->free_ios = mio->next_free;
  memset (mio, 0, sizeof *mio);
  return mio;
}

static void start_phase (struct raid_model *m, struct raid_op *op);
static void op_done (struct raid_model *m, struct raid_op *op);

static void
member_io_done (struct sl_engine *e, struct sl_request *r)
{
  struct member_io *mio = r->driver_data;
  struct raid_model *m = mio->m;
  struct raid_member *member = &m->member[mio->member];
  sl_device_stats_completion (member->stats, r->op, r->length_bytes,
                              r->completion_ns - r->arrival_ns, sl_engine_now_ns (e));
  member->in_flight--;
  struct raid_op *op = mio->op;
  if (op->kind == OP_DESTAGE)
    m->destage_ios_in_flight--;
  mio->next_free = m->free_ios;
  m->free_ios = mio;
  if (--op->pending > 0)
    return;
  if (op->phase == 0 && op->phase1_start < op->plan.count) {
    op->phase = 1;
    start_phase (m, op);
  }
  else
    op_done (m, op);
}

static void
issue_io (struct raid_model *m, struct raid_op *op, const struct raid_io *io)
{
  struct member_io *mio = take_io (m);
  mio->m = m;
  mio->op = op;
  mio->member = io->member;
  struct sl_request *r = &mio->req;
  r->op = io->op;
  r->flags = SL_REQUEST_INTERNAL;
  if (op->fua && io->op == SL_OP_WRITE)
    r->flags |= SL_REQUEST_FUA;        /* past the members' write caches */
  r->offset_bytes = io->offset_bytes;
  r->length_bytes = io->length_bytes;
  r->on_complete = member_io_done;
  r->driver_data = mio;
  uint64_t now = now_ns (m);
  r->arrival_ns = now;
  struct raid_member *member = &m->member[io->member];
  member->in_flight++;
  sl_device_stats_arrival (member->stats, now);
  if (io->op == SL_OP_READ)
    m->counter[RC_MEMBER_READS]++;
  else if (io->op == SL_OP_WRITE)
    m->counter[RC_MEMBER_WRITES]++;
  if (op->kind == OP_DESTAGE)
    m->destage_ios_in_flight++;
  op->pending++;
  if (m->trace)
    m->trace (m->trace_arg, now, io->member, io->op, io->offset_bytes, io->length_bytes);
  member->model.ops->submit (member->model.self, m->engine, r);
}

/* Completions come through engine events, never from inside submit, so
 * pending counts the whole phase before any of it completes. */
static void
start_phase (struct raid_model *m, struct raid_op *op)
{
  size_t from = op->phase == 0 ? 0 : op->phase1_start;
  size_t to = op->phase == 0 ? op->phase1_start : op->plan.count;
  for (size_t i = from; i < to; i++)
    issue_io (m, op, &op->plan.io[i]);
}

static void
op_start (struct raid_model *m, struct raid_op *op)
{
  raid_plan_finish (&op->plan);
  op->phase1_start = raid_plan_phase1_start (&op->plan);
  op->phase = op->phase1_start > 0 ? 0 : 1;
  if (op->plan.count == 0) {
    op_done (m, op);
    return;
  }
  start_phase (m, op);
}

/* ------------------------------------------------------------- cache -- */

static void
flush_members (struct raid_model *m, struct sl_request *r)
{
  struct raid_op *op = op_new (m, OP_MEMBER_FLUSH, r);
  for (uint32_t i = 0; i < m->config.members; i++)
    if (m->member[i].model.volatile_write_cache && raid_member_writable (&m->view, i))
      check_oom (raid_plan_add (&op->plan, i, SL_OP_FLUSH, 1, 0, 0));
  op_start (m, op);
}

static void
release_flush_waiters (struct raid_model *m)
{
  while (m->flush_head && dirty_total (m) == 0)
    flush_members (m, sl_fifo_pop (&m->flush_head, &m->flush_tail));
}

static void
cache_write (struct raid_model *m, struct sl_request *r)
{
  check_oom (sl_extents_add (&m->dirty, r->offset_bytes, r->offset_bytes + r->length_bytes));
  m->counter[RC_WRITES_CACHED]++;
  update_dirty_counter (m);
  complete_front (m, r);
  raid_kick_destage (m);
}

static void
admit_room_waiters (struct raid_model *m)
{
  while (m->room_head) {
    struct sl_request *r = m->room_head;
    if (!m->write_back)
      write_through (m, sl_fifo_pop (&m->room_head, &m->room_tail));
    else if (dirty_total (m) + r->length_bytes <= m->config.cache_bytes)
      cache_write (m, sl_fifo_pop (&m->room_head, &m->room_tail));
    else
      break;
  }
}

/* One destage batch: every dirty byte in the row-aligned window holding
 * the first dirty extent at or after the cursor (C-SCAN). */
static void
issue_batch (struct raid_model *m)
{
  size_t i = sl_extents_lower_bound (&m->dirty, m->destage_cursor);
  if (i == m->dirty.count)
    i = 0;                     /* wrap: the scan starts over at LBA 0 */
  uint64_t start = m->dirty.e[i].offset_bytes;
  uint64_t row_bytes = (uint64_t) sl_raid_data_members (m->layout.level, m->layout.members)
    * m->layout.stripe_bytes;
  uint64_t rows = sl_max_u64 (1, DESTAGE_WINDOW_BYTES / row_bytes);
  uint64_t window_start = start - start % row_bytes;
  uint64_t window_end = sl_min_u64 (m->capacity_bytes, window_start + rows * row_bytes);

  struct raid_op *op = op_new (m, OP_DESTAGE, NULL);
  check_oom (sl_extents_take (&m->dirty, window_start, window_end, &op->batch));
  m->destaging_bytes += op->batch.bytes;
  m->destage_cursor = window_end >= m->capacity_bytes ? 0 : window_end;
  for (size_t k = 0; k < op->batch.count; k++)
    check_oom (raid_plan_write (&op->plan, &m->layout, &m->view,
                                op->batch.e[k].offset_bytes, op->batch.e[k].length_bytes));
  op->next_in_flight = m->destaging;
  m->destaging = op;
  m->counter[RC_DESTAGE_BATCHES]++;
  op_start (m, op);
}

void
raid_kick_destage (struct raid_model *m)
{
  uint64_t cache = m->config.cache_bytes;
  uint64_t high = cache / 100 * m->config.destage_high_percent;
  uint64_t low = cache / 100 * m->config.destage_low_percent;
  if (dirty_total (m) >= high && cache > 0)
    m->destage_active = true;
  for (;;) {
    if (m->destage_active && dirty_total (m) <= low)
      m->destage_active = false;
    bool drain = !m->write_back || m->flush_head || m->room_head;
    bool idle = m->in_controller == 0
      && now_ns (m) >= m->last_front_ns + m->config.idle_destage_delay_ns;
    if (!(drain || m->destage_active || idle) || m->dirty.count == 0
        || m->destage_ios_in_flight >= m->config.destage_depth)
      break;
    issue_batch (m);
  }
  update_dirty_counter (m);
}

static void
destage_done (struct raid_model *m, struct raid_op *op)
{
  for (struct raid_op **p = &m->destaging; *p; p = &(*p)->next_in_flight)
    if (*p == op) {
      *p = op->next_in_flight;
      break;
    }
  if (!op->lost) {
    m->destaging_bytes -= op->batch.bytes;
    m->counter[RC_DESTAGED_BYTES] += op->batch.bytes;
  }
  op_free (m, op);
  update_dirty_counter (m);
  admit_room_waiters (m);
  release_flush_waiters (m);
  raid_kick_destage (m);
}

static void
idle_event (struct sl_engine *e, void *arg, uint64_t token)
{
  (void) e;
  struct raid_model *m = arg;
  if (token == m->idle_token && m->in_controller == 0)
    raid_kick_destage (m);
}

/* -------------------------------------------------------- read-ahead -- */

static void
start_read_ahead (struct raid_model *m, uint64_t from)
{
  if (m->ra_op || m->config.read_ahead_bytes == 0 || from >= m->capacity_bytes)
    return;
  uint64_t to = sl_min_u64 (m->capacity_bytes, from + m->config.read_ahead_bytes);
  struct raid_op *op = op_new (m, OP_READ_AHEAD, NULL);
  check_oom (raid_plan_read (&op->plan, &m->layout, &m->view, pick_mirror, m, from, to - from));
  m->ra_next_start = from;
  m->ra_next_end = to;
  m->ra_op = op;
  op_start (m, op);
}

static void
read_ahead_done (struct raid_model *m, struct raid_op *op)
{
  if (op == m->ra_op) {
    m->ra_start = m->ra_next_start;
    m->ra_end = m->ra_next_end;
    m->ra_op = NULL;
  }
  op_free (m, op);
  while (m->ra_wait_head) {
    m->counter[RC_READAHEAD_HITS]++;
    complete_front (m, sl_fifo_pop (&m->ra_wait_head, &m->ra_wait_tail));
  }
}

/* ---------------------------------------------------------- front end -- */

static void
arm_idle_timer (struct raid_model *m)
{
  if (m->dirty.count == 0)
    return;
  m->idle_token++;
  sl_engine_schedule (m->engine, now_ns (m) + m->config.idle_destage_delay_ns,
                      idle_event, m, m->idle_token);
}

static void
dispatch_event (struct sl_engine *e, void *arg, uint64_t request);

static void
admit (struct raid_model *m, struct sl_request *r)
{
  m->in_controller++;
  uint64_t start = sl_max_u64 (now_ns (m), m->cpu_free_ns);
  m->cpu_free_ns = start + m->config.command_overhead_ns;
  sl_engine_schedule (m->engine, m->cpu_free_ns, dispatch_event, m, (uint64_t) (uintptr_t) r);
}

static bool
changes_data (const struct sl_request *r)
{
  return r->op == SL_OP_WRITE || r->op == SL_OP_TRIM;
}

static void
complete_front (struct raid_model *m, struct sl_request *r)
{
  sl_engine_complete (m->engine, r, now_ns (m));
  m->in_controller--;
  if (changes_data (r))
    m->front_writes--;
  m->last_front_ns = now_ns (m);
  if (m->wait_head)
    admit (m, sl_fifo_pop (&m->wait_head, &m->wait_tail));
  if (m->in_controller == 0)
    arm_idle_timer (m);
}

static void
write_through (struct raid_model *m, struct sl_request *r)
{
  check_oom (sl_extents_remove (&m->dirty, r->offset_bytes, r->offset_bytes + r->length_bytes));
  update_dirty_counter (m);
  m->counter[RC_WRITES_THROUGH]++;
  struct raid_op *op = op_new (m, OP_FRONT, r);
  op->fua = (r->flags & SL_REQUEST_FUA) != 0;
  check_oom (raid_plan_write (&op->plan, &m->layout, &m->view, r->offset_bytes, r->length_bytes));
  op_start (m, op);
  release_flush_waiters (m);
}

static bool
in_destage (const struct raid_model *m, uint64_t start, uint64_t end)
{
  for (const struct raid_op *op = m->destaging; op; op = op->next_in_flight)
    if (!op->lost && sl_extents_covers (&op->batch, start, end))
      return true;
  return false;
}

static void
dispatch_read (struct raid_model *m, struct sl_request *r)
{
  uint64_t start = r->offset_bytes, end = start + r->length_bytes;
  bool sequential = start == m->last_read_end;
  m->last_read_end = end;
  if (sl_extents_covers (&m->dirty, start, end) || in_destage (m, start, end)) {
    m->counter[RC_CACHE_READ_HITS]++;
    complete_front (m, r);
    return;
  }
  if (m->ra_end > m->ra_start && start >= m->ra_start && end <= m->ra_end) {
    m->counter[RC_CACHE_READ_HITS]++;
    m->counter[RC_READAHEAD_HITS]++;
    if (end > m->ra_start + (m->ra_end - m->ra_start) / 2)
      start_read_ahead (m, m->ra_end);
    complete_front (m, r);
    return;
  }
  if (m->ra_op && start >= m->ra_next_start && end <= m->ra_next_end) {
    m->counter[RC_CACHE_READ_HITS]++;
    sl_fifo_append (&m->ra_wait_head, &m->ra_wait_tail, r);
    return;
  }
  m->counter[RC_CACHE_READ_MISSES]++;
  struct raid_op *op = op_new (m, OP_FRONT, r);
  check_oom (raid_plan_read (&op->plan, &m->layout, &m->view, pick_mirror, m,
                             start, r->length_bytes));
  m->counter[RC_DEGRADED_READS] += op->plan.degraded_pieces;
  op_start (m, op);
  if (sequential)
    start_read_ahead (m, end);
}

static void
dispatch_write (struct raid_model *m, struct sl_request *r)
{
  uint64_t start = r->offset_bytes, end = start + r->length_bytes;
  if (start < m->ra_end && end > m->ra_start)
    m->ra_start = m->ra_end = 0;       /* read-ahead data is stale now */
  if (!m->write_back || r->length_bytes > m->config.cache_bytes) {
    write_through (m, r);
    return;
  }
  if (m->room_head || dirty_total (m) + r->length_bytes > m->config.cache_bytes) {
    m->counter[RC_ROOM_WAITS]++;
    sl_fifo_append (&m->room_head, &m->room_tail, r);
    raid_kick_destage (m);
    return;
  }
  cache_write (m, r);
}

static void
dispatch_event (struct sl_engine *e, void *arg, uint64_t request)
{
  (void) e;
  struct raid_model *m = arg;
  struct sl_request *r = (struct sl_request *) (uintptr_t) request;
  if (r->length_bytes == 0 && r->op != SL_OP_FLUSH) {
    complete_front (m, r);
    return;
  }
  switch (r->op) {
  case SL_OP_READ:
    dispatch_read (m, r);
    break;
  case SL_OP_WRITE:
    dispatch_write (m, r);
    break;
  case SL_OP_FLUSH:
    if (m->write_back || dirty_total (m) == 0)
      flush_members (m, r);
    else {
      sl_fifo_append (&m->flush_head, &m->flush_tail, r);
      raid_kick_destage (m);
    }
    break;
  case SL_OP_TRIM:
  default:
    check_oom (sl_extents_remove (&m->dirty, r->offset_bytes,
                                    r->offset_bytes + r->length_bytes));
    update_dirty_counter (m);
    complete_front (m, r);
    break;
  }
}

static void
raid_submit (void *self, struct sl_engine *e, struct sl_request *r)
{
  (void) e;
  struct raid_model *m = self;
  m->last_front_ns = now_ns (m);
  m->idle_token++;             /* not idle any more */
  raid_update_policy (m);
  if (changes_data (r))
    m->front_writes++;
  if (m->in_controller >= m->config.queue_depth)
    sl_fifo_append (&m->wait_head, &m->wait_tail, r);
  else
    admit (m, r);
}

/* ------------------------------------------------------------ rebuild -- */

static void rebuild_step (struct raid_model *m);

static void
rebuild_event (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) e;
  (void) unused;
  struct raid_model *m = arg;
  m->rebuild_timer = false;
  rebuild_step (m);
}

static void
rebuild_step (struct raid_model *m)
{
  if (m->view.rebuilding < 0 || m->rebuild_op || m->rebuild_timer)
    return;
  uint32_t member = (uint32_t) m->view.rebuilding;
  uint64_t frontier = m->view.rebuild_frontier_bytes;
  uint64_t step = sl_max_u64 (m->layout.stripe_bytes,
                                REBUILD_STEP_BYTES - REBUILD_STEP_BYTES % m->layout.stripe_bytes);
  step = sl_min_u64 (step, m->layout.member_bytes - frontier);
  struct raid_op *op = op_new (m, OP_REBUILD, NULL);
  op->rebuild_member = member;
  op->rebuild_bytes = step;
  check_oom (raid_plan_rebuild (&op->plan, &m->layout, &m->view, pick_mirror, m,
                                member, frontier, step));
  m->rebuild_op = op;
  m->rebuild_step_start_ns = now_ns (m);
  op_start (m, op);
}

void
raid_start_rebuild (struct raid_model *m)
{
  rebuild_step (m);
}

static void
rebuild_done (struct raid_model *m, struct raid_op *op)
{
  bool current = op == m->rebuild_op && m->view.rebuilding == (int) op->rebuild_member;
  uint64_t bytes = op->rebuild_bytes;
  if (op == m->rebuild_op)
    m->rebuild_op = NULL;
  op_free (m, op);
  if (!current) {
    rebuild_step (m);          /* the member failed again, or another one started */
    return;
  }
  m->view.rebuild_frontier_bytes += bytes;
  m->counter[RC_REBUILT_BYTES] += bytes;
  uint32_t member = (uint32_t) m->view.rebuilding;
  if (m->view.rebuild_frontier_bytes >= m->layout.member_bytes) {
    m->member[member].state = SL_RAID_MEMBER_OK;
    m->view.rebuilding = -1;
    raid_event (m, now_ns (m), "member %u rebuilt", member);
    return;
  }
  /* pace to the rebuild rate: this step may not end before its share */
  uint64_t share_ns = (uint64_t) ((double) bytes * 1e9
                                  / (double) m->config.rebuild_rate_bytes_per_s);
  uint64_t next = m->rebuild_step_start_ns + share_ns;
  if (next <= now_ns (m))
    rebuild_step (m);
  else {
    m->rebuild_timer = true;
    sl_engine_schedule (m->engine, next, rebuild_event, m, 0);
  }
}

static void
op_done (struct raid_model *m, struct raid_op *op)
{
  switch (op->kind) {
  case OP_FRONT:
  case OP_MEMBER_FLUSH: {
    struct sl_request *r = op->front;
    op_free (m, op);
    complete_front (m, r);
    break;
  }
  case OP_DESTAGE:
    destage_done (m, op);
    break;
  case OP_REBUILD:
    rebuild_done (m, op);
    break;
  case OP_READ_AHEAD:
    read_ahead_done (m, op);
    break;
  }
}

/* ------------------------------------------------------------- policy -- */

void
raid_update_policy (struct raid_model *m)
{
  uint64_t when;
  enum sl_raid_battery state;
  while (raid_battery_next_change (&m->battery, now_ns (m), &when, &state))
    raid_event (m, when, "battery %s (learn cycle)", sl_raid_battery_name (state));
  m->counter[RC_BATTERY_STATE] = m->battery.state;
  bool write_back = m->policy == SL_RAID_FORCED_WRITE_BACK
    || (m->policy == SL_RAID_WRITE_BACK && m->battery.state == SL_RAID_BATTERY_OK);
  if (write_back == m->write_back)
    return;
  m->write_back = write_back;
  m->counter[RC_WRITE_BACK_EFFECTIVE] = write_back;
  raid_event (m, now_ns (m), "cache now %s", write_back ? "write-back" : "write-through");
  if (!write_back) {
    admit_room_waiters (m);    /* they go straight to the members now */
    raid_kick_destage (m);     /* drain */
  }
}

/* -------------------------------------------------------------- model -- */

/* "64 KiB", "512 MiB", "1000 B": the largest binary unit that divides bytes
 * (the array event names the layout so readers of the log need no config). */
static const char *
exact_size (char *buf, size_t buf_bytes, uint64_t bytes)
{
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  unsigned u = 0;
  while (u + 1 < sizeof units / sizeof units[0] && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    u++;
  }
  snprintf (buf, buf_bytes, "%" PRIu64 " %s", bytes, units[u]);
  return buf;
}

static void
raid_attach (void *self, struct sl_engine *e, struct sl_device_stats *stats)
{
  struct raid_model *m = self;
  m->engine = e;
  if (stats)
    m->counter = sl_device_stats_adopt_counters (stats, counter_names, m->own_counters, RC_COUNT);
  for (uint32_t i = 0; i < m->config.members; i++) {
    struct raid_member *member = &m->member[i];
    char name[SL_STATS_NAME_BYTES];
    snprintf (name, sizeof name, "member%u", i);
    sl_device_stats_init (member->stats, name, member->model.ops->kind,
                          member->model.capacity_bytes, sl_engine_now_ns (e));
    if (member->model.ops->attach)
      member->model.ops->attach (member->model.self, e, member->stats);
  }
  char stripe[24], cache[24];
  raid_event (m, sl_engine_now_ns (e), "array: raid %" PRIu32 ", %" PRIu32 " members, stripe %s, cache %s",
              m->layout.level, m->layout.members, exact_size (stripe, sizeof stripe, m->layout.stripe_bytes),
              exact_size (cache, sizeof cache, m->config.cache_bytes));
  raid_event (m, sl_engine_now_ns (e), "start: policy %s, battery %s",
              sl_raid_policy_name (m->policy), sl_raid_battery_name (m->battery.state));
  raid_update_policy (m);
}

static void
raid_write_json (void *self, FILE *out)
{
  struct raid_model *m = self;
  fprintf (out, "\"level\": %" PRIu32 ", \"members\": %" PRIu32 ", \"stripe_bytes\": %" PRIu64
           ", \"member_bytes\": %" PRIu64 ", \"cache_bytes\": %" PRIu64
           ", \"policy\": \"%s\", \"battery\": \"%s\", \"write_back\": %s"
           ", \"dirty_bytes\": %" PRIu64 ", \"destaging_bytes\": %" PRIu64,
           m->layout.level, m->layout.members, m->layout.stripe_bytes, m->layout.member_bytes,
           m->config.cache_bytes, sl_raid_policy_name (m->policy),
           sl_raid_battery_name (m->battery.state), m->write_back ? "true" : "false",
           dirty_total (m), m->destaging_bytes);
  fputs (", \"counters\": {", out);
  for (unsigned i = 0; i < RC_COUNT; i++)
    fprintf (out, "%s\"%s\": %" PRIu64, i ? ", " : "", counter_names[i], m->counter[i]);
  fputs ("}, \"member_layer\": [", out);
  for (uint32_t i = 0; i < m->config.members; i++) {
    const struct raid_member *member = &m->member[i];
    fprintf (out, "%s{\"member\": %u, \"state\": \"%s\", \"in_flight\": %" PRIu32
             ", \"stats\": ", i ? ", " : "", i, sl_raid_member_state_name (member->state),
             member->in_flight);
    sl_device_stats_write_json (member->stats, out);
    fprintf (out, ", \"model\": {\"kind\": \"%s\"", member->model.ops->kind);
    if (member->model.ops->write_json) {
      fputs (", ", out);
      member->model.ops->write_json (member->model.self, out);
    }
    fputs ("}}", out);
  }
  fprintf (out, "], \"rebuild\": {\"member\": %d, \"done_bytes\": %" PRIu64 "}",
           m->view.rebuilding, m->view.rebuilding >= 0 ? m->view.rebuild_frontier_bytes : 0);
  fputs (", \"events\": [", out);
  uint64_t first = m->event_total > RAID_EVENTS_KEPT ? m->event_total - RAID_EVENTS_KEPT : 0;
  for (uint64_t i = first; i < m->event_total; i++) {
    const struct sl_raid_event *ev = &m->events[i % RAID_EVENTS_KEPT];
    fprintf (out, "%s{\"time_ns\": %" PRIu64 ", \"what\": \"%s\"}", i > first ? ", " : "",
             ev->time_ns, ev->what);
  }
  fputs ("]", out);
}

static void
raid_destroy (void *self)
{
  struct raid_model *m = self;
  if (m == NULL)
    return;
  while (m->live_ops)
    op_free (m, m->live_ops);
  while (m->io_blocks) {
    struct raid_io_block *b = m->io_blocks;
    m->io_blocks = b->next;
    free (b);
  }
  for (uint32_t i = 0; i < SL_RAID_MAX_MEMBERS; i++) {
    struct raid_member *member = &m->member[i];
    if (member->model.ops && member->model.ops->destroy)
      member->model.ops->destroy (member->model.self);
    free (member->own_stats);
  }
  sl_extents_free (&m->dirty);
  free (m);
}

static const struct sl_model_ops raid_ops = {
  .kind = "raid",
  .attach = raid_attach,
  .submit = raid_submit,
  .write_json = raid_write_json,
  .destroy = raid_destroy,
};

bool
sl_raid_model_is (const struct sl_model *m)
{
  return m != NULL && m->ops == &raid_ops;
}

unsigned
sl_raid_member_count (const struct sl_model *m)
{
  return sl_raid_model_is (m) ? ((const struct raid_model *) m->self)->config.members : 0;
}

int
sl_raid_use_member_stats (struct sl_model *m, unsigned member, struct sl_device_stats *record)
{
  if (!sl_raid_model_is (m) || member >= sl_raid_member_count (m) || record == NULL)
    return -1;
  ((struct raid_model *) m->self)->member[member].stats = record;
  return 0;
}

struct sl_device_stats *
sl_raid_member_stats (const struct sl_model *m, unsigned member)
{
  if (!sl_raid_model_is (m) || member >= sl_raid_member_count (m))
    return NULL;
  return ((struct raid_model *) m->self)->member[member].stats;
}

void
sl_raid_set_trace (struct sl_model *m, sl_raid_trace_fn fn, void *arg)
{
  if (!sl_raid_model_is (m))
    return;
  struct raid_model *raid = m->self;
  raid->trace = fn;
  raid->trace_arg = arg;
}

/* raid_params.c */
struct sl_model raid_member_model_new (const struct sl_raid_config *c, char *err,
                                       size_t err_bytes);

struct sl_model
sl_raid_model_new (const struct sl_raid_config *c, char *err, size_t err_bytes)
{
  struct sl_model none = { 0 };
  if (sl_raid_config_validate (c, err, err_bytes) < 0)
    return none;
  struct raid_model *m = calloc (1, sizeof *m);
  if (m == NULL) {
    snprintf (err, err_bytes, "raid: out of memory");
    return none;
  }
  m->config = *c;
  uint64_t member_bytes = UINT64_MAX;
  for (uint32_t i = 0; i < c->members; i++) {
    struct raid_member *member = &m->member[i];
    member->model = raid_member_model_new (c, err, err_bytes);
    member->own_stats = calloc (1, sizeof *member->own_stats);
    if (member->model.ops == NULL || member->own_stats == NULL) {
      if (member->own_stats == NULL)
        snprintf (err, err_bytes, "raid: out of memory");
      raid_destroy (m);
      return none;
    }
    member->stats = member->own_stats;
    member_bytes = sl_min_u64 (member_bytes, member->model.capacity_bytes);
  }
  m->layout = (struct sl_raid_layout) {
    .level = c->level, .members = c->members, .stripe_bytes = c->stripe_bytes,
    .member_bytes = member_bytes - member_bytes % c->stripe_bytes,
  };
  m->capacity_bytes = sl_raid_capacity_bytes (&m->layout);
  if (m->capacity_bytes == 0) {
    snprintf (err, err_bytes, "stripe-size=%" PRIu64 ": larger than a member (%" PRIu64 " bytes)",
              c->stripe_bytes, member_bytes);
    raid_destroy (m);
    return none;
  }
  m->view.rebuilding = -1;
  enum sl_raid_battery battery = SL_RAID_BATTERY_OK;
  sl_raid_battery_parse (c->battery, &battery);
  sl_raid_policy_parse (c->cache_policy, &m->policy);
  raid_battery_init (&m->battery, battery, c->learn_period_ns, c->learn_duration_ns, 0);
  m->counter = m->own_counters;
  m->last_read_end = UINT64_MAX;
  return (struct sl_model) { .ops = &raid_ops, .self = m, .capacity_bytes = m->capacity_bytes,
                             .volatile_write_cache = false };
}
