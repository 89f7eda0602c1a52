/* event_queue.c — see event_queue.h.  The heap is 4-ary: half the levels
 * of a binary heap, and the four children of a node lie side by side, so a
 * pop from thousands of pending events misses the cache half as often. */
#define _GNU_SOURCE
#include "event_queue.h"

#include <stdlib.h>
#include <string.h>

#define HEAP_ARITY 4u

static void *
grown (void *p, size_t count, size_t size)
{
  void *q = realloc (p, count * size);
  if (q == NULL)
    abort ();                  /* out of memory mid-model: nothing sane to do */
  return q;
}

static bool
before (const struct sl_event *a, const struct sl_event *b)
{
  return a->when_ns < b->when_ns
    || (a->when_ns == b->when_ns && a->sequence < b->sequence);
}

static void
heap_push (struct sl_event_queue *q, struct sl_event ev)
{
  if (q->heap_len == q->heap_cap) {
    q->heap_cap = q->heap_cap ? q->heap_cap * 2 : 256;
    q->heap = grown (q->heap, q->heap_cap, sizeof *q->heap);
  }
  size_t i = q->heap_len++;
  while (i > 0) {
    size_t parent = (i - 1) / HEAP_ARITY;
    if (!before (&ev, &q->heap[parent]))
      break;
    q->heap[i] = q->heap[parent];
    i = parent;
  }
  q->heap[i] = ev;
}

static struct sl_event
heap_pop (struct sl_event_queue *q)
{
  struct sl_event top = q->heap[0];
  struct sl_event last = q->heap[--q->heap_len];
  size_t i = 0, n = q->heap_len;
  for (;;) {
    size_t first = HEAP_ARITY * i + 1;
    if (first >= n)
      break;
    size_t end = first + HEAP_ARITY < n ? first + HEAP_ARITY : n, least = first;
    for (size_t k = first + 1; k < end; k++)
      if (before (&q->heap[k], &q->heap[least]))
        least = k;
    if (!before (&q->heap[least], &last))
      break;
    q->heap[i] = q->heap[least];
    i = least;
  }
  if (n > 0)
    q->heap[i] = last;
  return top;
}

static void
due_push (struct sl_event_queue *q, struct sl_event ev)
{
  if (q->due_len == q->due_cap) {
    size_t cap = q->due_cap ? q->due_cap * 2 : 64;
    struct sl_event *ring = grown (NULL, cap, sizeof *ring);
    for (size_t k = 0; k < q->due_len; k++)
      ring[k] = q->due[(q->due_head + k) & (q->due_cap - 1)];
    free (q->due);
    q->due = ring;
    q->due_cap = cap;
    q->due_head = 0;
  }
  q->due[(q->due_head + q->due_len++) & (q->due_cap - 1)] = ev;
}

void
sl_event_queue_push (struct sl_event_queue *q, uint64_t now_ns, uint64_t when_ns,
                     sl_event_fn fn, void *arg, uint64_t arg_u64)
{
  struct sl_event ev = { when_ns < now_ns ? now_ns : when_ns, q->next_sequence++, fn, arg,
                         arg_u64 };
  if (ev.when_ns == now_ns)
    due_push (q, ev);
  else
    heap_push (q, ev);
}

bool
sl_event_queue_pop (struct sl_event_queue *q, uint64_t now_ns, struct sl_event *ev)
{
  if (q->due_len > 0 && (q->heap_len == 0 || q->heap[0].when_ns > now_ns)) {
    *ev = q->due[q->due_head];
    q->due_head = (q->due_head + 1) & (q->due_cap - 1);
    q->due_len--;
    return true;
  }
  if (q->heap_len == 0)
    return false;
  *ev = heap_pop (q);
  return true;
}

size_t
sl_event_queue_len (const struct sl_event_queue *q)
{
  return q->heap_len + q->due_len;
}

uint64_t
sl_event_queue_next_ns (const struct sl_event_queue *q, uint64_t now_ns)
{
  return q->due_len > 0 ? now_ns : q->heap[0].when_ns;
}

void
sl_event_queue_prefetch (const struct sl_event_queue *q)
{
  for (size_t k = 0; k < 2 && k < q->due_len; k++)
    __builtin_prefetch (q->due[(q->due_head + k) & (q->due_cap - 1)].arg);
  /* the heap's next is the root or one of its children */
  for (size_t k = 0; k <= HEAP_ARITY && k < q->heap_len; k++)
    __builtin_prefetch (q->heap[k].arg);
}

void
sl_event_queue_free (struct sl_event_queue *q)
{
  free (q->heap);
  free (q->due);
  memset (q, 0, sizeof *q);
}
