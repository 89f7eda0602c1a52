/* request.h — one I/O request as the engine and models see it. */
#ifndef STORLAB_REQUEST_H
#define STORLAB_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

enum sl_op { SL_OP_READ, SL_OP_WRITE, SL_OP_FLUSH, SL_OP_TRIM, SL_OP_COUNT };

#define SL_REQUEST_FUA 1u      /* write must be on stable media before completing */
/* A model's own request to a sub-model in the same engine (a RAID
 * controller's member I/O): the engine keeps no front-end statistics for
 * it and calls on_complete at its completion time in both clocks. */
#define SL_REQUEST_INTERNAL 2u

struct sl_engine;
struct sl_request;

/* Called by the engine at the request's completion time (virtual-time
 * drivers use it to issue the next I/O). */
typedef void (*sl_completion_fn) (struct sl_engine *e, struct sl_request *r);

struct sl_request {
  enum sl_op op;
  uint32_t flags;              /* SL_REQUEST_* */
  uint64_t offset_bytes;
  uint64_t length_bytes;

  /* set by the engine */
  uint64_t arrival_ns;
  uint64_t completion_ns;      /* valid once completion_known */
  bool completion_known;

  /* driver side */
  sl_completion_fn on_complete;        /* may be NULL */
  void *driver_data;

  /* model side: free for the model's use while the request is in flight */
  struct sl_request *model_next;
  uint64_t model_scratch[4];
  double model_scratch_f[2];

  /* engine private (real-time waiting) */
  void *waiter_private;
};

static inline const char *
sl_op_name (enum sl_op op)
{
  static const char *const names[SL_OP_COUNT] = { "read", "write", "flush", "trim" };
  return (unsigned) op < SL_OP_COUNT ? names[op] : "?";
}

#endif
