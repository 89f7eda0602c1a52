/* engine.c — request lifecycle and the two clocks over the event queue
 * (event_queue.c).
 *
 * Everything a model sees happens at a nominal engine time: events run in
 * (time, sequence) order and set the clock to their own time, whichever
 * thread runs them and however late.  Real time only decides when a waiting
 * nbdkit thread is released.
 */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "release.h"
#include "round_trip.h"

/* A real-time request thread parks here until the model has decided its
 * completion time. */
struct waiter {
  pthread_cond_t decided;
  uint64_t completion_ns;
  int is_decided;
};

/* A request's completion event only books statistics: the driver runs it
 * at most this late when no request thread passes by (a live stats reader
 * sees completions this late at worst), instead of waking per request. */
#define BOOKKEEPING_LAG_NS 1000000u

struct sl_engine {
  enum sl_clock_kind clock;
  char name[SL_STATS_NAME_BYTES];
  struct sl_model model;
  struct sl_device_stats *stats;

  uint64_t now_ns;
  uint64_t epoch_ns;           /* monotonic time of engine time 0 (real time) */

  struct sl_event_queue events;

  /* real time */
  pthread_mutex_t lock;
  pthread_cond_t driver_wake;
  pthread_condattr_t driver_wake_attr;
  pthread_t driver;
  int driver_started;
  int stopping;
  uint64_t driver_sleep_until_ns;      /* engine time the driver waits for */
  uint64_t model_events;               /* queued events that are not bookkeeping */
  struct sl_request *free_requests;    /* engine-owned requests for execute() */

  /* latency offset: with auto, the transport's round trip (round_trip.h) */
  uint64_t latency_offset_ns;
  int offset_auto;
  struct sl_round_trip round_trip;
};

/* ------------------------------------------------------------ lifecycle -- */

struct sl_engine *
sl_engine_new (enum sl_clock_kind clock, struct sl_model model,
               struct sl_device_stats *stats, const char *name)
{
  struct sl_engine *e = calloc (1, sizeof *e);
  if (e == NULL)
    return NULL;
  e->clock = clock;
  e->model = model;
  e->stats = stats;
  snprintf (e->name, sizeof e->name, "%s", name ? name : "device");
  e->epoch_ns = clock == SL_CLOCK_REAL ? sl_clock_monotonic_ns () : 0;
  pthread_mutex_init (&e->lock, NULL);
  pthread_condattr_init (&e->driver_wake_attr);
  pthread_condattr_setclock (&e->driver_wake_attr, CLOCK_MONOTONIC);
  pthread_cond_init (&e->driver_wake, &e->driver_wake_attr);
  sl_device_stats_init (stats, e->name, model.ops->kind, model.capacity_bytes, 0);
  if (model.ops->attach)
    model.ops->attach (model.self, e, stats);
  return e;
}

void
sl_engine_free (struct sl_engine *e)
{
  if (e == NULL)
    return;
  if (e->driver_started) {
    pthread_mutex_lock (&e->lock);
    e->stopping = 1;
    pthread_cond_signal (&e->driver_wake);
    pthread_mutex_unlock (&e->lock);
    pthread_join (e->driver, NULL);
  }
  if (e->model.ops && e->model.ops->destroy)
    e->model.ops->destroy (e->model.self);
  while (e->free_requests) {
    struct sl_request *r = e->free_requests;
    e->free_requests = r->model_next;
    free (r);
  }
  sl_event_queue_free (&e->events);
  pthread_cond_destroy (&e->driver_wake);
  pthread_condattr_destroy (&e->driver_wake_attr);
  pthread_mutex_destroy (&e->lock);
  free (e);
}

enum sl_clock_kind sl_engine_clock_kind (const struct sl_engine *e) { return e->clock; }
uint64_t sl_engine_now_ns (const struct sl_engine *e) { return e->now_ns; }
uint64_t sl_engine_epoch_ns (const struct sl_engine *e) { return e->epoch_ns; }
struct sl_device_stats *sl_engine_stats (struct sl_engine *e) { return e->stats; }
struct sl_model *sl_engine_model (struct sl_engine *e) { return &e->model; }
size_t sl_engine_pending_events (const struct sl_engine *e) { return sl_event_queue_len (&e->events); }

static uint64_t
wall_engine_ns (const struct sl_engine *e)
{
  return sl_clock_monotonic_ns () - e->epoch_ns;
}

/* --------------------------------------------------------- model calls -- */

static void finish_request (struct sl_engine *e, void *arg, uint64_t unused);

/* Whether an event only books statistics: a host request's completion.
 * An internal request's completion drives its model (a RAID member's I/O
 * done lets the controller answer the host), so it must run on time. */
static bool
bookkeeping_only (sl_event_fn fn, void *arg)
{
  return fn == finish_request && !(((struct sl_request *) arg)->flags & SL_REQUEST_INTERNAL);
}

void
sl_engine_schedule (struct sl_engine *e, uint64_t when_ns,
                    sl_event_fn fn, void *arg, uint64_t arg_u64)
{
  if (when_ns < e->now_ns)
    when_ns = e->now_ns;       /* the past is gone: run it now */
  sl_event_queue_push (&e->events, e->now_ns, when_ns, fn, arg, arg_u64);
  if (bookkeeping_only (fn, arg))
    return;                    /* see keep_driver_for_bookkeeping */
  e->model_events++;
  if (e->driver_started && when_ns < e->driver_sleep_until_ns)
    pthread_cond_signal (&e->driver_wake);
}

/* The completion event: statistics at the nominal completion time, then
 * the driver's callback (virtual time) or the request's return to the
 * engine's pool (real time).  Internal requests go back to their model. */
static void
finish_request (struct sl_engine *e, void *arg, uint64_t unused)
{
  (void) unused;
  struct sl_request *r = arg;
  if (r->flags & SL_REQUEST_INTERNAL) {
    if (r->on_complete)        /* the owning model, not a driver */
      r->on_complete (e, r);
    return;
  }
  sl_device_stats_completion (e->stats, r->op, r->length_bytes,
                              r->completion_ns - r->arrival_ns, e->now_ns);
  if (e->clock == SL_CLOCK_REAL) {
    r->model_next = e->free_requests;
    e->free_requests = r;
  }
  else if (r->on_complete)
    r->on_complete (e, r);
}

void
sl_engine_complete (struct sl_engine *e, struct sl_request *r, uint64_t when_ns)
{
  if (when_ns < e->now_ns)
    when_ns = e->now_ns;
  r->completion_ns = when_ns;
  r->completion_known = true;
  struct waiter *w = r->waiter_private;
  if (w) {
    w->completion_ns = when_ns;
    w->is_decided = 1;
    pthread_cond_signal (&w->decided);
    r->waiter_private = NULL;
  }
  sl_engine_schedule (e, when_ns, finish_request, r, 0);
}

/* ------------------------------------------------------- virtual time -- */

static void
submit_locked (struct sl_engine *e, struct sl_request *r)
{
  r->arrival_ns = e->now_ns;
  r->completion_known = false;
  sl_device_stats_arrival (e->stats, e->now_ns);
  e->model.ops->submit (e->model.self, e, r);
}

void
sl_engine_submit (struct sl_engine *e, struct sl_request *r)
{
  submit_locked (e, r);
}

bool
sl_engine_run_next (struct sl_engine *e)
{
  struct sl_event ev;
  if (!sl_event_queue_pop (&e->events, e->now_ns, &ev))
    return false;
  sl_event_queue_prefetch (&e->events);
  if (ev.when_ns > e->now_ns)
    e->now_ns = ev.when_ns;
  if (!bookkeeping_only (ev.fn, ev.arg))
    e->model_events--;
  ev.fn (e, ev.arg, ev.arg_u64);
  return true;
}

void
sl_engine_run_until (struct sl_engine *e, uint64_t until_ns)
{
  while (sl_event_queue_len (&e->events) > 0
         && sl_event_queue_next_ns (&e->events, e->now_ns) <= until_ns)
    sl_engine_run_next (e);
  if (until_ns > e->now_ns)
    e->now_ns = until_ns;
}

/* ---------------------------------------------------------- real time -- */

static void *
driver_main (void *arg)
{
  struct sl_engine *e = arg;
  sl_clock_prepare_thread ();
  pthread_mutex_lock (&e->lock);
  while (!e->stopping) {
    sl_engine_run_until (e, wall_engine_ns (e));
    if (sl_event_queue_len (&e->events) == 0) {
      e->driver_sleep_until_ns = UINT64_MAX;
      pthread_cond_wait (&e->driver_wake, &e->lock);
    }
    else {
      uint64_t wake = sl_event_queue_next_ns (&e->events, e->now_ns);
      if (e->model_events == 0)
        wake += BOOKKEEPING_LAG_NS;
      e->driver_sleep_until_ns = wake;
      uint64_t abs_ns = wake + e->epoch_ns;
      struct timespec ts = { .tv_sec = (time_t) (abs_ns / 1000000000u),
                             .tv_nsec = (long) (abs_ns % 1000000000u) };
      pthread_cond_timedwait (&e->driver_wake, &e->lock, &ts);
    }
  }
  pthread_mutex_unlock (&e->lock);
  return NULL;
}

int
sl_engine_start (struct sl_engine *e)
{
  if (e->clock != SL_CLOCK_REAL) {
    errno = EINVAL;
    return -1;
  }
  if (e->driver_started)
    return 0;
  e->driver_sleep_until_ns = 0;
  int err = pthread_create (&e->driver, NULL, driver_main, e);
  if (err) {
    errno = err;
    return -1;
  }
  e->driver_started = 1;
  return 0;
}

static struct sl_request *
take_request (struct sl_engine *e)
{
  struct sl_request *r = e->free_requests;
  if (r)
    e->free_requests = r->model_next;
  else if ((r = malloc (sizeof *r)) == NULL)
    abort ();
  memset (r, 0, sizeof *r);
  return r;
}

/* A request thread is about to leave the engine lock with completions
 * still queued: the driver must come for them within BOOKKEEPING_LAG_NS.
 * Asked here rather than per scheduled completion, so a request reaped at
 * once costs no driver wake-up. */
static void
keep_driver_for_bookkeeping (struct sl_engine *e)
{
  if (!e->driver_started || sl_event_queue_len (&e->events) == 0)
    return;
  uint64_t run_by = sl_event_queue_next_ns (&e->events, e->now_ns) + BOOKKEEPING_LAG_NS;
  if (run_by < e->driver_sleep_until_ns)
    pthread_cond_signal (&e->driver_wake);
}

/* A request thread leaves the engine: its reply is on its way. */
static void
leave_locked (struct sl_engine *e, uint64_t left_ns)
{
  if (e->offset_auto)
    sl_round_trip_reply (&e->round_trip, left_ns);
}

void
sl_engine_execute (struct sl_engine *e, struct sl_request *caller)
{
  sl_engine_execute_at_arrival (e, caller, NULL, NULL);
}

void
sl_engine_execute_at_arrival (struct sl_engine *e, struct sl_request *caller,
                              void (*at_arrival) (void *arg), void *arg)
{
  struct waiter w = { .is_decided = 0 };
  pthread_cond_init (&w.decided, NULL);

  pthread_mutex_lock (&e->lock);
  uint64_t now = wall_engine_ns (e);
  /* Catch up on due events first so the model sees the present. */
  sl_engine_run_until (e, now);
  if (e->offset_auto && sl_round_trip_request (&e->round_trip, now)) {
    e->latency_offset_ns = sl_round_trip_ns (&e->round_trip);
    sl_device_stats_latency_offset (e->stats, e->latency_offset_ns);
  }

  /* The engine owns the request it hands the model: the model may refer to
   * it until its completion event, which can be after this thread left. */
  struct sl_request *r = take_request (e);
  r->op = caller->op;
  r->flags = caller->flags & ~SL_REQUEST_INTERNAL;   /* only models issue those */
  r->offset_bytes = caller->offset_bytes;
  r->length_bytes = caller->length_bytes;
  r->waiter_private = &w;
  if (at_arrival)
    at_arrival (arg);
  submit_locked (e, r);
  /* A request the model finished at once can be reaped now. */
  sl_engine_run_until (e, now);
  while (!w.is_decided)
    pthread_cond_wait (&w.decided, &e->lock);
  uint64_t offset = e->latency_offset_ns;
  uint64_t release = w.completion_ns > offset ? w.completion_ns - offset : 0;
  caller->arrival_ns = now;
  caller->completion_ns = w.completion_ns;
  caller->completion_known = true;
  keep_driver_for_bookkeeping (e);

  if (release > now) {
    pthread_mutex_unlock (&e->lock);
    int64_t left_against_deadline = sl_release_wait_until (release + e->epoch_ns);
    uint64_t left = wall_engine_ns (e);
    pthread_mutex_lock (&e->lock);
    struct sl_release_path path;
    sl_release_get_path (&path);
    sl_device_stats_release (e->stats, left_against_deadline, &path);
    leave_locked (e, left);
  }
  else
    leave_locked (e, now);     /* nothing to wait for: no second lock round */
  pthread_mutex_unlock (&e->lock);
  pthread_cond_destroy (&w.decided);
}

void
sl_engine_set_latency_offset_ns (struct sl_engine *e, uint64_t offset_ns)
{
  pthread_mutex_lock (&e->lock);
  e->offset_auto = 0;
  e->latency_offset_ns = offset_ns;
  sl_device_stats_latency_offset (e->stats, offset_ns);
  pthread_mutex_unlock (&e->lock);
}

void
sl_engine_set_latency_offset_auto (struct sl_engine *e, bool on)
{
  pthread_mutex_lock (&e->lock);
  e->offset_auto = on;
  sl_round_trip_init (&e->round_trip);
  pthread_mutex_unlock (&e->lock);
}

uint64_t
sl_engine_latency_offset_ns (const struct sl_engine *e)
{
  return e->latency_offset_ns;
}

void
sl_engine_locked (struct sl_engine *e, void (*fn) (struct sl_engine *, void *), void *arg)
{
  pthread_mutex_lock (&e->lock);
  if (e->clock == SL_CLOCK_REAL)
    sl_engine_run_until (e, wall_engine_ns (e));
  fn (e, arg);
  pthread_mutex_unlock (&e->lock);
}

static void
write_json_locked (struct sl_engine *e, void *arg)
{
  FILE *out = arg;
  /* A record is ~240 KB of histograms: too big for a worker thread's stack. */
  struct sl_device_stats *copy = malloc (sizeof *copy);
  if (copy == NULL)
    return;
  sl_device_stats_snapshot (e->stats, copy);
  fprintf (out, "{\"name\": \"%s\", \"clock\": \"%s\", \"latency_offset_ns\": %llu, \"stats\": ",
           e->name, e->clock == SL_CLOCK_REAL ? "real" : "virtual",
           (unsigned long long) e->latency_offset_ns);
  sl_device_stats_write_json (copy, out);
  free (copy);
  fprintf (out, ", \"model\": {\"kind\": \"%s\"", e->model.ops->kind);
  if (e->model.ops->write_json) {
    fputs (", ", out);
    e->model.ops->write_json (e->model.self, out);
  }
  fputs ("}}", out);
}

void
sl_engine_write_json (struct sl_engine *e, FILE *out)
{
  sl_engine_locked (e, write_json_locked, out);
}
