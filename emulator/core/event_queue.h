/* event_queue.h — the engine's pending events, earliest first.
 *
 * Events run in (time, sequence) order: sequence is the order they were
 * scheduled in, so runs are deterministic.  Two stores keep that order:
 * a 4-ary heap for future events, and a FIFO of the events scheduled for
 * the current time (a layer handing an I/O back at once: one in four
 * events of a cluster run), which skip the heap.  A heap event due now was
 * scheduled before the clock got here, so before any FIFO event: the heap
 * goes first at equal times.  The clock is the caller's (the engine's).
 */
#ifndef STORLAB_EVENT_QUEUE_H
#define STORLAB_EVENT_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_engine;

typedef void (*sl_event_fn) (struct sl_engine *e, void *arg, uint64_t arg_u64);

struct sl_event {
  uint64_t when_ns;
  uint64_t sequence;           /* FIFO among equal times: deterministic runs */
  sl_event_fn fn;
  void *arg;
  uint64_t arg_u64;
};

struct sl_event_queue {
  struct sl_event *heap;
  size_t heap_len, heap_cap;
  struct sl_event *due;        /* ring: the events scheduled for now_ns */
  size_t due_head, due_len, due_cap;   /* due_cap a power of two */
  uint64_t next_sequence;
};

/* Schedules fn(arg, arg_u64) at when_ns; a time before now_ns is now. */
void sl_event_queue_push (struct sl_event_queue *q, uint64_t now_ns, uint64_t when_ns,
                          sl_event_fn fn, void *arg, uint64_t arg_u64);
/* Takes the earliest event into *ev; false when none is pending. */
bool sl_event_queue_pop (struct sl_event_queue *q, uint64_t now_ns, struct sl_event *ev);
size_t sl_event_queue_len (const struct sl_event_queue *q);
/* The earliest event's time (the queue not empty). */
uint64_t sl_event_queue_next_ns (const struct sl_event_queue *q, uint64_t now_ns);
/* Starts fetching the subjects of the next few events: an I/O or request
 * last touched long ago, whose cache miss would otherwise stall the run. */
void sl_event_queue_prefetch (const struct sl_event_queue *q);
void sl_event_queue_free (struct sl_event_queue *q);

#endif
