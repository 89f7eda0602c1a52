/* sim_timeline.c — per-interval completion sums (see sim_timeline.h). */
#include "sim_timeline.h"

#include <stdlib.h>
#include <string.h>

void
sl_sim_timeline_init (struct sl_sim_timeline *t, uint64_t interval_ns, uint64_t phase_start_ns)
{
  memset (t, 0, sizeof *t);
  t->interval_ns = interval_ns;
  t->phase_start_ns = phase_start_ns;
}

/* Makes intervals[0..count-1] exist, zeroed where new. */
static int
grow_to (struct sl_sim_timeline *t, size_t count)
{
  if (count <= t->count)
    return 0;
  if (count > t->capacity) {
    size_t capacity = t->capacity ? t->capacity : 64;
    while (capacity < count)
      capacity *= 2;
    struct sl_sim_interval *bigger = realloc (t->intervals, capacity * sizeof *bigger);
    if (bigger == NULL) {
      t->out_of_memory = 1;
      return -1;
    }
    t->intervals = bigger;
    t->capacity = capacity;
  }
  memset (t->intervals + t->count, 0, (count - t->count) * sizeof *t->intervals);
  t->count = count;
  return 0;
}

/* Intervals are closed at their end: (k*I, (k+1)*I]. */
static size_t
intervals_up_to (const struct sl_sim_timeline *t, uint64_t now_ns)
{
  uint64_t since_ns = now_ns > t->phase_start_ns ? now_ns - t->phase_start_ns : 0;
  return since_ns == 0 ? 0 : (size_t) ((since_ns - 1) / t->interval_ns + 1);
}

void
sl_sim_timeline_record (struct sl_sim_timeline *t, uint64_t now_ns, int dir,
                        uint64_t bytes, uint64_t latency_ns)
{
  if (t->interval_ns == 0)
    return;
  size_t needed = intervals_up_to (t, now_ns);
  if (needed == 0)
    needed = 1;                 /* the phase's first instant */
  if (grow_to (t, needed) != 0)
    return;
  struct sl_sim_interval_dir *d = &t->intervals[needed - 1].dir[dir];
  d->ios++;
  d->bytes += bytes;
  d->lat_sum_ns += latency_ns;
}

int
sl_sim_timeline_finish (struct sl_sim_timeline *t, uint64_t phase_end_ns)
{
  t->phase_end_ns = phase_end_ns < t->phase_start_ns ? t->phase_start_ns : phase_end_ns;
  if (t->interval_ns == 0)
    return 0;
  if (grow_to (t, intervals_up_to (t, t->phase_end_ns)) != 0 || t->out_of_memory)
    return -1;
  return 0;
}

void
sl_sim_timeline_free (struct sl_sim_timeline *t)
{
  free (t->intervals);
  t->intervals = NULL;
  t->count = t->capacity = 0;
}
