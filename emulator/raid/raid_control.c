/* raid_control.c — live control of a running controller: battery, cache
 * policy, member failure and replacement, power cut, status and events.
 * Every call runs under the engine lock (sl_engine_locked), so a plugin's
 * control thread can change the model while requests run; each change is
 * stamped with the engine time into the event list. */
#define _GNU_SOURCE
#include "raid_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

struct raid_model *
raid_from_engine (struct sl_engine *e, char *err, size_t err_bytes)
{
  struct sl_model *model = e ? sl_engine_model (e) : NULL;
  if (!sl_raid_model_is (model)) {
    snprintf (err, err_bytes, "not a raid device (kind %s)",
              model && model->ops ? model->ops->kind : "none");
    return NULL;
  }
  return model->self;
}

struct control {
  int (*fn) (struct raid_model *m, struct control *c);
  unsigned member;
  enum sl_raid_battery battery;
  enum sl_raid_cache_policy policy;
  struct sl_raid_power_loss *loss;
  struct sl_raid_status *status;
  char *err;
  size_t err_bytes;
  int result;
};

static void
run_locked (struct sl_engine *e, void *arg)
{
  struct control *c = arg;
  struct raid_model *m = sl_engine_model (e)->self;
  raid_update_policy (m);              /* learn cycles up to now first */
  c->result = c->fn (m, c);
}

static int
run_control (struct sl_engine *e, struct control *c)
{
  if (raid_from_engine (e, c->err, c->err_bytes) == NULL)
    return -1;
  sl_engine_locked (e, run_locked, c);
  return c->result;
}

static uint64_t
now (struct raid_model *m)
{
  return sl_engine_now_ns (m->engine);
}

/* ------------------------------------------------------------ battery -- */

static int
do_battery (struct raid_model *m, struct control *c)
{
  raid_battery_set (&m->battery, c->battery, now (m));
  raid_event (m, now (m), "battery set %s", sl_raid_battery_name (c->battery));
  raid_update_policy (m);
  return 0;
}

int
sl_raid_control_battery (struct sl_engine *e, enum sl_raid_battery state,
                         char *err, size_t err_bytes)
{
  if (sl_raid_battery_name (state)[0] == '?') {
    snprintf (err, err_bytes, "battery=%d: unknown battery state", (int) state);
    return -1;
  }
  struct control c = { .fn = do_battery, .battery = state, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

static int
do_policy (struct raid_model *m, struct control *c)
{
  if (c->policy != SL_RAID_WRITE_THROUGH && m->config.cache_bytes == 0) {
    snprintf (c->err, c->err_bytes, "cache-policy=%s: the controller has no cache",
              sl_raid_policy_name (c->policy));
    return -1;
  }
  m->policy = c->policy;
  raid_event (m, now (m), "cache policy set %s", sl_raid_policy_name (c->policy));
  raid_update_policy (m);
  return 0;
}

int
sl_raid_control_policy (struct sl_engine *e, enum sl_raid_cache_policy policy,
                        char *err, size_t err_bytes)
{
  if (sl_raid_policy_name (policy)[0] == '?') {
    snprintf (err, err_bytes, "cache-policy=%d: unknown policy", (int) policy);
    return -1;
  }
  struct control c = { .fn = do_policy, .policy = policy, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

/* ------------------------------------------------------------ members -- */

static bool
usable (const struct raid_model *m, uint32_t i)
{
  return m->member[i].state == SL_RAID_MEMBER_OK;
}

/* Would the array still hold all its data without member `lost`? */
static bool
survives_without (const struct raid_model *m, uint32_t lost)
{
  uint32_t n = m->config.members, others_down = 0;
  for (uint32_t i = 0; i < n; i++)
    if (i != lost && !usable (m, i))
      others_down++;
  switch (m->config.level) {
  case 1: return others_down < n - 1;
  case 10: return usable (m, lost ^ 1u);
  case 5: return others_down == 0;
  case 6: return others_down <= 1;
  default: return false;
  }
}

static int
do_fail (struct raid_model *m, struct control *c)
{
  uint32_t i = c->member;
  if (m->member[i].state == SL_RAID_MEMBER_FAILED) {
    snprintf (c->err, c->err_bytes, "member %u: already failed", i);
    return -1;
  }
  if (!survives_without (m, i)) {
    snprintf (c->err, c->err_bytes, "member %u: RAID %u would lose data without it "
              "(no redundancy left)", i, m->config.level);
    return -1;
  }
  m->member[i].state = SL_RAID_MEMBER_FAILED;
  m->view.failed_mask |= 1u << i;
  if (m->view.rebuilding == (int) i)
    m->view.rebuilding = -1;
  raid_event (m, now (m), "member %u failed", i);
  return 0;
}

static int
check_member (struct sl_engine *e, unsigned member, char *err, size_t err_bytes)
{
  struct raid_model *m = raid_from_engine (e, err, err_bytes);
  if (m == NULL)
    return -1;
  if (member >= m->config.members) {
    snprintf (err, err_bytes, "member %u: no such member (the array has %u)", member,
              m->config.members);
    return -1;
  }
  return 0;
}

int
sl_raid_control_fail_member (struct sl_engine *e, unsigned member, char *err, size_t err_bytes)
{
  if (check_member (e, member, err, err_bytes) < 0)
    return -1;
  struct control c = { .fn = do_fail, .member = member, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

static int
do_replace (struct raid_model *m, struct control *c)
{
  uint32_t i = c->member;
  if (m->member[i].state != SL_RAID_MEMBER_FAILED) {
    snprintf (c->err, c->err_bytes, "member %u: not failed (%s), nothing to replace", i,
              sl_raid_member_state_name (m->member[i].state));
    return -1;
  }
  if (m->view.rebuilding >= 0) {
    snprintf (c->err, c->err_bytes, "member %u: member %d is still rebuilding; one rebuild "
              "at a time", i, m->view.rebuilding);
    return -1;
  }
  m->member[i].state = SL_RAID_MEMBER_REBUILDING;
  m->view.failed_mask &= ~(1u << i);
  m->view.rebuilding = (int) i;
  m->view.rebuild_frontier_bytes = 0;
  raid_event (m, now (m), "member %u replaced, rebuilding", i);
  raid_start_rebuild (m);
  return 0;
}

int
sl_raid_control_replace_member (struct sl_engine *e, unsigned member,
                                char *err, size_t err_bytes)
{
  if (check_member (e, member, err, err_bytes) < 0)
    return -1;
  struct control c = { .fn = do_replace, .member = member, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

/* ---------------------------------------------------------- power cut -- */

/* What the controller still holds (dirty, and batches on their way to the
 * members): with the battery ok it survives and is written again, so a
 * member cache losing a copy of it loses nothing. */
static int
remove_held (const struct raid_model *m, struct sl_extents *x)
{
  int result = 0;
  for (size_t i = 0; i < m->dirty.count && result == 0; i++)
    result = sl_extents_remove (x, m->dirty.e[i].offset_bytes,
                                  m->dirty.e[i].offset_bytes + m->dirty.e[i].length_bytes);
  for (const struct raid_op *op = m->destaging; op && result == 0; op = op->next_in_flight)
    for (size_t i = 0; i < op->batch.count && result == 0 && !op->lost; i++)
      result = sl_extents_remove (x, op->batch.e[i].offset_bytes,
                                    op->batch.e[i].offset_bytes + op->batch.e[i].length_bytes);
  return result;
}

static int
do_power_cut (struct raid_model *m, struct control *c)
{
  struct sl_raid_power_loss *loss = c->loss;
  *loss = (struct sl_raid_power_loss) { 0 };
  loss->cache_preserved = m->battery.state == SL_RAID_BATTERY_OK;
  for (uint32_t i = 0; i < m->config.members; i++)
    if (m->member[i].model.volatile_write_cache)
      loss->volatile_member_caches++;
  /* read-ahead data is gone either way: it was never protected */
  m->ra_start = m->ra_end = 0;
  /* the members' caches go first: only then is the controller's loss known */
  struct sl_extents member_lost = { 0 };
  int result = raid_member_power_cut (m, &member_lost, &loss->member_dropped_bytes);
  if (loss->cache_preserved) {
    if (result == 0)
      result = remove_held (m, &member_lost);
    if (result < 0) {
      sl_extents_free (&member_lost);
      snprintf (c->err, c->err_bytes, "power cut: out of memory");
      return -1;
    }
    loss->lost_bytes = loss->member_lost_bytes = member_lost.bytes;
    loss->extent_count = member_lost.count;
    loss->extents = member_lost.e;     /* handed over */
    raid_event (m, now (m), "power cut: battery ok, %llu dirty kept, members lost %llu", (unsigned long long) (m->dirty.bytes + m->destaging_bytes),
                (unsigned long long) member_lost.bytes);
    return 0;
  }
  struct sl_extents lost = { 0 };
  for (size_t i = 0; i < m->dirty.count && result == 0; i++)
    result = sl_extents_add (&lost, m->dirty.e[i].offset_bytes,
                               m->dirty.e[i].offset_bytes + m->dirty.e[i].length_bytes);
  for (struct raid_op *op = m->destaging; op && result == 0; op = op->next_in_flight) {
    if (op->lost)
      continue;
    /* a batch on its way to the members may be torn: count it lost */
    for (size_t i = 0; i < op->batch.count && result == 0; i++)
      result = sl_extents_add (&lost, op->batch.e[i].offset_bytes,
                                 op->batch.e[i].offset_bytes + op->batch.e[i].length_bytes);
    op->lost = true;
    m->destaging_bytes -= op->batch.bytes;
  }
  uint64_t cache_lost_bytes = lost.bytes;
  for (size_t i = 0; i < member_lost.count && result == 0; i++)
    result = sl_extents_add (&lost, member_lost.e[i].offset_bytes,
                               member_lost.e[i].offset_bytes + member_lost.e[i].length_bytes);
  sl_extents_free (&member_lost);
  if (result < 0) {
    sl_extents_free (&lost);
    snprintf (c->err, c->err_bytes, "power cut: out of memory");
    return -1;
  }
  sl_extents_clear (&m->dirty);
  m->counter[RC_DIRTY_BYTES] = m->destaging_bytes;
  loss->lost_bytes = lost.bytes;
  loss->member_lost_bytes = lost.bytes - cache_lost_bytes;
  loss->extent_count = lost.count;
  loss->extents = lost.e;              /* handed over */
  raid_event (m, now (m), "power cut: battery %s, %llu dirty lost, members %llu more",
              sl_raid_battery_name (m->battery.state), (unsigned long long) cache_lost_bytes,
              (unsigned long long) loss->member_lost_bytes);
  return 0;
}

int
sl_raid_control_power_cut (struct sl_engine *e, struct sl_raid_power_loss *loss,
                           char *err, size_t err_bytes)
{
  struct control c = { .fn = do_power_cut, .loss = loss, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

void
sl_raid_power_loss_free (struct sl_raid_power_loss *loss)
{
  free (loss->extents);
  loss->extents = NULL;
  loss->extent_count = 0;
}

/* ------------------------------------------------------ status, events -- */

static int
do_status (struct raid_model *m, struct control *c)
{
  struct sl_raid_status *s = c->status;
  *s = (struct sl_raid_status) {
    .battery = m->battery.state,
    .policy = m->policy,
    .write_back_effective = m->write_back,
    .cache_bytes = m->config.cache_bytes,
    .dirty_bytes = m->dirty.bytes + m->destaging_bytes,
    .destaged_bytes = m->counter[RC_DESTAGED_BYTES],
    .cache_read_hits = m->counter[RC_CACHE_READ_HITS],
    .cache_read_misses = m->counter[RC_CACHE_READ_MISSES],
    .members = m->config.members,
    .rebuild_done_bytes = m->view.rebuilding >= 0 ? m->view.rebuild_frontier_bytes : 0,
    .member_bytes = m->layout.member_bytes,
    .event_count = m->event_total,
    .member_volatile_bytes = raid_member_volatile_bytes (m),
  };
  for (uint32_t i = 0; i < m->config.members; i++) {
    s->member_state[i] = m->member[i].state;
    s->volatile_member_caches += m->member[i].model.volatile_write_cache;
  }
  return 0;
}

int
sl_raid_control_status (struct sl_engine *e, struct sl_raid_status *status,
                        char *err, size_t err_bytes)
{
  struct control c = { .fn = do_status, .status = status, .err = err, .err_bytes = err_bytes };
  return run_control (e, &c);
}

struct when_clean {
  void (*fn) (void *arg);
  void *arg;
  bool ran;
};

static void
run_when_clean (struct sl_engine *e, void *arg)
{
  struct when_clean *w = arg;
  struct raid_model *m = sl_engine_model (e)->self;
  /* A write between arrival and completion is in no cache yet, but its data
   * is already in the caller's volatile store: not clean until it lands. */
  if (m->front_writes == 0 && m->dirty.bytes + m->destaging_bytes == 0
      && raid_member_volatile_bytes (m) == 0) {
    w->fn (w->arg);
    w->ran = true;
  }
}

bool
sl_raid_control_when_clean (struct sl_engine *e, void (*fn) (void *arg), void *arg)
{
  char err[128];
  if (raid_from_engine (e, err, sizeof err) == NULL)
    return false;
  struct when_clean w = { .fn = fn, .arg = arg };
  sl_engine_locked (e, run_when_clean, &w);
  return w.ran;
}

struct events_copy {
  size_t first, max, copied;
  struct sl_raid_event *out;
};

static void
copy_events (struct sl_engine *e, void *arg)
{
  struct events_copy *c = arg;
  struct raid_model *m = sl_engine_model (e)->self;
  raid_update_policy (m);
  uint64_t oldest = m->event_total > RAID_EVENTS_KEPT ? m->event_total - RAID_EVENTS_KEPT : 0;
  for (uint64_t i = oldest + c->first; i < m->event_total && c->copied < c->max; i++)
    c->out[c->copied++] = m->events[i % RAID_EVENTS_KEPT];
}

size_t
sl_raid_control_events (struct sl_engine *e, size_t first, struct sl_raid_event *out, size_t max)
{
  char err[128];
  if (raid_from_engine (e, err, sizeof err) == NULL)
    return 0;
  struct events_copy c = { .first = first, .max = max, .out = out };
  sl_engine_locked (e, copy_events, &c);
  return c.copied;
}
