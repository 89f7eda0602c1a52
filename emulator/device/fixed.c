/* fixed.c — a device with constant service time and no queueing limit.
 * With latency 0 it measures what the plugin and transport cost on their own. */
#include <stdlib.h>

#include "core/engine.h"
#include "core/model.h"

struct fixed_model {
  uint64_t latency_ns;
};

static void
fixed_submit (void *self, struct sl_engine *e, struct sl_request *r)
{
  const struct fixed_model *m = self;
  sl_engine_complete (e, r, sl_engine_now_ns (e) + m->latency_ns);
}

static void
fixed_write_json (void *self, FILE *out)
{
  const struct fixed_model *m = self;
  fprintf (out, "\"latency_ns\": %llu", (unsigned long long) m->latency_ns);
}

static const struct sl_model_ops fixed_ops = {
  .kind = "fixed",
  .submit = fixed_submit,
  .write_json = fixed_write_json,
  .destroy = free,
};

bool
sl_model_is_untimed (struct sl_model model)
{
  return model.ops == &fixed_ops && ((const struct fixed_model *) model.self)->latency_ns == 0;
}

struct sl_model
sl_fixed_model_new (uint64_t capacity_bytes, uint64_t latency_ns)
{
  struct fixed_model *m = malloc (sizeof *m);
  if (m == NULL)
    return (struct sl_model) { 0 };
  m->latency_ns = latency_ns;
  return (struct sl_model) { .ops = &fixed_ops, .self = m, .capacity_bytes = capacity_bytes };
}
