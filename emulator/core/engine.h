/* engine.h — event-driven device engine, one code path for two clocks.
 *
 * Virtual time (simulator): single-threaded.  The driver submits requests
 * with sl_engine_submit() and advances with sl_engine_run_next() /
 * sl_engine_run_until(); the clock jumps from event to event and each
 * request's on_complete runs at its completion time.
 *
 * Real time (nbdkit): sl_engine_execute() is called concurrently from many
 * threads.  The calling thread submits under the engine lock (first running
 * every event that is already due, so the model's state is current), waits
 * until the model has decided the completion time, then sleeps to that
 * absolute deadline minus the latency offset.  A driver thread started with
 * sl_engine_start() runs events whose deadlines pass while no request
 * thread is inside the engine (a head freeing up, background work).
 * Events always run at their nominal time: lateness of a wakeup never
 * changes the model's timeline, only when a thread is released.
 */
#ifndef STORLAB_ENGINE_H
#define STORLAB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "event_queue.h"
#include "model.h"
#include "request.h"
#include "stats.h"

struct sl_engine;

/* stats: where the engine keeps this device's statistics (a record in a
 * shared stats file, or caller memory); the engine initialises it.
 * The engine owns the model from here on and destroys it. */
struct sl_engine *sl_engine_new (enum sl_clock_kind clock, struct sl_model model,
                                 struct sl_device_stats *stats, const char *name);
void sl_engine_free (struct sl_engine *e);

enum sl_clock_kind sl_engine_clock_kind (const struct sl_engine *e);
/* Engine time in ns since the engine was created (model time). */
uint64_t sl_engine_now_ns (const struct sl_engine *e);
/* For real time: the sl_clock_monotonic_ns() value of engine time 0. */
uint64_t sl_engine_epoch_ns (const struct sl_engine *e);
struct sl_device_stats *sl_engine_stats (struct sl_engine *e);
struct sl_model *sl_engine_model (struct sl_engine *e);

/* ---- called by models (engine lock held) ---- */
void sl_engine_schedule (struct sl_engine *e, uint64_t when_ns,
                         sl_event_fn fn, void *arg, uint64_t arg_u64);
void sl_engine_complete (struct sl_engine *e, struct sl_request *r, uint64_t when_ns);

/* ---- virtual-time drivers (single thread, no locking) ---- */
/* Stamps arrival = now and hands the request to the model. */
void sl_engine_submit (struct sl_engine *e, struct sl_request *r);
/* Runs the earliest pending event (advancing the clock to it).
 * Returns false when no event is pending. */
bool sl_engine_run_next (struct sl_engine *e);
/* Runs every event with time <= until_ns, then sets the clock to until_ns. */
void sl_engine_run_until (struct sl_engine *e, uint64_t until_ns);
size_t sl_engine_pending_events (const struct sl_engine *e);

/* ---- real-time drivers (thread safe) ---- */
/* Starts the driver thread.  Returns 0, or -1 with errno. */
int sl_engine_start (struct sl_engine *e);
/* Submit r now and return when it has completed in real time (at
 * completion_ns - latency offset).  Thread safe. */
void sl_engine_execute (struct sl_engine *e, struct sl_request *r);
/* The same, running at_arrival(arg) under the engine lock right before the
 * model sees the request: a write's data enters the store atomically with
 * the model's knowledge of it (what a cache holds dirty is exactly what the
 * store holds volatile). */
void sl_engine_execute_at_arrival (struct sl_engine *e, struct sl_request *r,
                                   void (*at_arrival) (void *arg), void *arg);

/* Latency offset subtracted from every real-time deadline, so that what a
 * client observes (model + transport) matches the model.  With auto on,
 * the offset tracks the client's round trip at whatever depth it runs
 * (round_trip.h): a reply leaving the plugin to the request it lets the
 * client send.  Only for a client that sends as soon as a reply comes: a
 * guest's own work between the two would count as transport. */
void sl_engine_set_latency_offset_ns (struct sl_engine *e, uint64_t offset_ns);
void sl_engine_set_latency_offset_auto (struct sl_engine *e, bool on);
uint64_t sl_engine_latency_offset_ns (const struct sl_engine *e);

/* Runs fn(arg) under the engine lock (for control operations and for
 * reading model state consistently in real time). */
void sl_engine_locked (struct sl_engine *e, void (*fn) (struct sl_engine *, void *), void *arg);

/* Writes {"name":..., "stats":{...}, "model":{...}} for this device. */
void sl_engine_write_json (struct sl_engine *e, FILE *out);

#endif
