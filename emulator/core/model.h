/* model.h — the interface every device model implements.
 *
 * A model is a pure function of its own state and the engine's clock.  The
 * engine calls the model with its lock held, so a model needs no locking of
 * its own.  A model:
 *   - receives each request in submit() at the request's arrival time
 *     (sl_engine_now_ns() == r->arrival_ns);
 *   - schedules its own events (a head becoming free, destage, GC) with
 *     sl_engine_schedule();
 *   - says when a request completes with sl_engine_complete(e, r, when_ns),
 *     as soon as it knows (when_ns >= now), exactly once per request.
 */
#ifndef STORLAB_MODEL_H
#define STORLAB_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "request.h"

struct sl_engine;
struct sl_device_stats;

struct sl_model_ops {
  const char *kind;            /* "hdd", "ssd", "raid", "fixed" */
  /* Called once when the engine adopts the model, before any request:
   * a chance to name model counters in the stats record. */
  void (*attach) (void *self, struct sl_engine *e, struct sl_device_stats *stats);
  void (*submit) (void *self, struct sl_engine *e, struct sl_request *r);
  /* Model-specific state as JSON object members ("key": value, ...), or NULL. */
  void (*write_json) (void *self, FILE *out);
  void (*destroy) (void *self);
  /* Optional, for models with a volatile write cache (a RAID controller
   * asks its members): calls fn for every byte range whose acknowledged
   * writes are not yet on stable media (what a power cut would lose),
   * ascending.  NULL: the model cannot tell. */
  void (*volatile_ranges) (void *self,
                           void (*fn) (void *arg, uint64_t offset_bytes, uint64_t length_bytes),
                           void *arg);
  /* Optional: a power cut; the volatile write cache's contents are gone
   * (timing goes on as if power came back at once). */
  void (*power_cut) (void *self);
};

struct sl_model {
  const struct sl_model_ops *ops;
  void *self;
  uint64_t capacity_bytes;
  /* Writes acknowledged without FUA sit in a volatile cache until FLUSH:
   * the data store must keep them revocable (power loss). */
  bool volatile_write_cache;
};

/* fixed.c: constant service time, unlimited parallelism.  latency 0 is the
 * "no timing" model used to measure plugin and transport overhead. */
struct sl_model sl_fixed_model_new (uint64_t capacity_bytes, uint64_t latency_ns);
/* Whether model is that "no timing" model: its server replies at once,
 * with no release path to wait on (a lab's timing=off disk). */
bool sl_model_is_untimed (struct sl_model model);

#endif
