/* recent_median.c — the median of recent samples (recent_median.h). */
#include "recent_median.h"

#include <stdlib.h>

void
sl_recent_median_init (struct sl_recent_median *m, unsigned window, uint64_t start_ns)
{
  for (unsigned i = 0; i < SL_RECENT_MEDIAN_SAMPLES; i++)
    atomic_init (&m->sample_ns[i], 0);
  atomic_init (&m->pushed, 0);
  atomic_init (&m->median_ns, start_ns);
  atomic_init (&m->median_at, 0);
  m->start_ns = start_ns;
  m->window = window == 0 || window > SL_RECENT_MEDIAN_SAMPLES ? SL_RECENT_MEDIAN_SAMPLES
                                                                : window;
}

void
sl_recent_median_push (struct sl_recent_median *m, uint64_t sample_ns)
{
  unsigned at = atomic_fetch_add_explicit (&m->pushed, 1, memory_order_relaxed);
  atomic_store_explicit (&m->sample_ns[at % m->window], sample_ns, memory_order_relaxed);
}

unsigned
sl_recent_median_count (struct sl_recent_median *m)
{
  return atomic_load_explicit (&m->pushed, memory_order_relaxed);
}

uint64_t
sl_recent_median_last_ns (const struct sl_recent_median *m)
{
  return atomic_load_explicit (&m->median_ns, memory_order_relaxed);
}

static int
compare_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
  return x < y ? -1 : x > y;
}

uint64_t
sl_recent_median_ns (struct sl_recent_median *m)
{
  unsigned pushed = sl_recent_median_count (m);
  unsigned resort_every = m->window / 8 ? m->window / 8 : 1;
  if (pushed - atomic_load_explicit (&m->median_at, memory_order_relaxed) < resort_every)
    return sl_recent_median_last_ns (m);
  unsigned n = pushed < m->window ? pushed : m->window;
  uint64_t sorted[SL_RECENT_MEDIAN_SAMPLES];
  for (unsigned i = 0; i < n; i++)
    sorted[i] = atomic_load_explicit (&m->sample_ns[i], memory_order_relaxed);
  qsort (sorted, n, sizeof sorted[0], compare_u64);
  atomic_store_explicit (&m->median_ns, sorted[n / 2], memory_order_relaxed);
  atomic_store_explicit (&m->median_at, pushed, memory_order_relaxed);
  return sorted[n / 2];
}
