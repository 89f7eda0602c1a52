/* queues.h — the two small queues every device model keeps: a FIFO of
 * waiting requests (linked through model_next) and a min-heap of the
 * completion times of commands holding a queue slot (NCQ tag, NVMe slot,
 * controller queue entry) until they complete.  Inline: they sit on the
 * simulator's hot path. */
#ifndef STORLAB_QUEUES_H
#define STORLAB_QUEUES_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"

static inline void
sl_fifo_append (struct sl_request **head, struct sl_request **tail, struct sl_request *r)
{
  r->model_next = NULL;
  if (*tail)
    (*tail)->model_next = r;
  else
    *head = r;
  *tail = r;
}

static inline struct sl_request *
sl_fifo_pop (struct sl_request **head, struct sl_request **tail)
{
  struct sl_request *r = *head;
  *head = r->model_next;
  if (*head == NULL)
    *tail = NULL;
  r->model_next = NULL;
  return r;
}

/* heap holds *count times (capacity: the queue depth). */
static inline void
sl_release_push (uint64_t *heap, uint32_t *count, uint64_t when_ns)
{
  uint32_t i = (*count)++;
  while (i > 0 && heap[(i - 1) / 2] > when_ns) {
    heap[i] = heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  heap[i] = when_ns;
}

/* Frees every slot whose command completed by now_ns. */
static inline void
sl_release_prune (uint64_t *heap, uint32_t *count, uint64_t now_ns)
{
  while (*count > 0 && heap[0] <= now_ns) {
    uint64_t last = heap[--*count];
    uint32_t i = 0, n = *count;
    for (;;) {
      uint32_t child = 2 * i + 1;
      if (child >= n)
        break;
      if (child + 1 < n && heap[child + 1] < heap[child])
        child++;
      if (heap[child] >= last)
        break;
      heap[i] = heap[child];
      i = child;
    }
    if (n > 0)
      heap[i] = last;
  }
}

#endif
