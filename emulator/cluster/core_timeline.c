/* core_timeline.c — spans of booked work on one core (core_timeline.h). */
#include "core_timeline.h"

#include <stdlib.h>
#include <string.h>

uint64_t
cl_timeline_fit (const struct cl_core_timeline *t, uint64_t from_ns, uint64_t cost_ns)
{
  uint64_t at = from_ns;
  for (uint32_t k = 0; k < t->count; k++) {
    const struct cl_span *s = &t->spans[k];
    if (s->end_ns <= at)
      continue;
    if (s->start_ns >= at + cost_ns)
      break;                   /* the hole before s holds it */
    at = s->end_ns;
  }
  return at;
}

/* Spans that ended by floor_ns are of no more use: no work is runnable
 * before the floor. */
static void
drop_ended (struct cl_core_timeline *t, uint64_t floor_ns)
{
  uint32_t ended = 0;
  while (ended < t->count && t->spans[ended].end_ns <= floor_ns)
    ended++;
  if (ended > 0) {
    memmove (t->spans, t->spans + ended, (t->count - ended) * sizeof *t->spans);
    t->count -= ended;
  }
}

void
cl_timeline_book (struct cl_core_timeline *t, uint64_t start_ns, uint64_t cost_ns,
                  uint64_t floor_ns)
{
  drop_ended (t, floor_ns);
  if (t->count == t->room) {
    uint32_t room = t->room ? 2 * t->room : 64;
    struct cl_span *spans = realloc (t->spans, room * sizeof *spans);
    if (spans == NULL)
      abort ();                /* out of memory mid-run: nothing sane to do */
    t->spans = spans;
    t->room = room;
  }
  uint32_t at = t->count;
  while (at > 0 && t->spans[at - 1].start_ns > start_ns)
    at--;
  memmove (t->spans + at + 1, t->spans + at, (t->count - at) * sizeof *t->spans);
  t->spans[at] = (struct cl_span) { start_ns, start_ns + cost_ns };
  t->count++;
}

void
cl_timeline_free (struct cl_core_timeline *t)
{
  free (t->spans);
  *t = (struct cl_core_timeline) { 0 };
}
