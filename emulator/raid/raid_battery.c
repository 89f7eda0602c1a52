/* raid_battery.c — the cache battery (BBU / CacheVault) and the names of
 * the controller's states.
 *
 * A battery set ok runs a learn cycle every learn period (MegaRAID: about
 * every 90 days) lasting the learn duration; the controller treats a
 * learning battery as not ok.  Failed and absent stay until set again.
 */
#define _GNU_SOURCE
#include "raid_internal.h"

#include <string.h>

static uint64_t
first_learn (const struct raid_battery *b, uint64_t now_ns)
{
  return b->period_ns ? now_ns + b->period_ns : UINT64_MAX;
}

void
raid_battery_init (struct raid_battery *b, enum sl_raid_battery state,
                   uint64_t period_ns, uint64_t duration_ns, uint64_t now_ns)
{
  *b = (struct raid_battery) { .period_ns = period_ns, .duration_ns = duration_ns };
  raid_battery_set (b, state, now_ns);
}

void
raid_battery_set (struct raid_battery *b, enum sl_raid_battery state, uint64_t now_ns)
{
  b->state = state;
  if (state == SL_RAID_BATTERY_LEARNING) {
    b->set_state = SL_RAID_BATTERY_OK;
    b->origin_ns = now_ns;             /* this learn cycle started now */
  }
  else {
    b->set_state = state;
    b->origin_ns = first_learn (b, now_ns);
  }
}

/* origin_ns: start of the current (learning) or next (ok) learn cycle. */
bool
raid_battery_next_change (struct raid_battery *b, uint64_t now_ns,
                          uint64_t *when_ns, enum sl_raid_battery *state)
{
  if (b->set_state != SL_RAID_BATTERY_OK || b->origin_ns == UINT64_MAX)
    return false;
  if (b->state == SL_RAID_BATTERY_OK && b->origin_ns <= now_ns) {
    b->state = SL_RAID_BATTERY_LEARNING;
    *when_ns = b->origin_ns;
    *state = b->state;
    return true;
  }
  uint64_t learn_end = b->origin_ns + b->duration_ns;
  if (b->state == SL_RAID_BATTERY_LEARNING && learn_end <= now_ns) {
    b->state = SL_RAID_BATTERY_OK;
    b->origin_ns = b->period_ns ? b->origin_ns + b->period_ns : UINT64_MAX;
    *when_ns = learn_end;
    *state = b->state;
    return true;
  }
  return false;
}

/* ------------------------------------------------------------- names -- */

static const char *const battery_names[] = { "ok", "learning", "failed", "absent" };
static const char *const policy_names[] = { "write-through", "write-back", "forced-write-back" };
static const char *const member_state_names[] = { "ok", "failed", "rebuilding" };

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

const char *
sl_raid_battery_name (enum sl_raid_battery b)
{
  return (unsigned) b < COUNT (battery_names) ? battery_names[b] : "?";
}

int
sl_raid_battery_parse (const char *name, enum sl_raid_battery *out)
{
  for (unsigned i = 0; name && i < COUNT (battery_names); i++)
    if (strcmp (name, battery_names[i]) == 0) {
      *out = (enum sl_raid_battery) i;
      return 0;
    }
  return -1;
}

const char *
sl_raid_policy_name (enum sl_raid_cache_policy p)
{
  return (unsigned) p < COUNT (policy_names) ? policy_names[p] : "?";
}

int
sl_raid_policy_parse (const char *name, enum sl_raid_cache_policy *out)
{
  for (unsigned i = 0; name && i < COUNT (policy_names); i++)
    if (strcmp (name, policy_names[i]) == 0) {
      *out = (enum sl_raid_cache_policy) i;
      return 0;
    }
  return -1;
}

const char *
sl_raid_member_state_name (enum sl_raid_member_state s)
{
  return (unsigned) s < COUNT (member_state_names) ? member_state_names[s] : "?";
}
