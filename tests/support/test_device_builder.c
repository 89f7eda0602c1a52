/* test_device_builder.c — see test_device_builder.h. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/kinds.h"
#include "device/device.h"
#include "test_device_builder.h"

struct sl_engine *
test_engine_new (const char *kind_name, const char *params, struct sl_device_stats *stats)
{
  const struct sl_device_kind *kind = sl_device_kind_find (kind_name);
  assert_non_null (kind);
  struct sl_device_builder b;
  sl_device_builder_init (&b, kind);
  char err[512], *copy = strdup (params), *save = NULL;
  for (char *kv = strtok_r (copy, " ", &save); kv; kv = strtok_r (NULL, " ", &save)) {
    char *eq = strchr (kv, '=');
    assert_non_null (eq);
    *eq = '\0';
    if (sl_device_builder_add (&b, kv, eq + 1, err, sizeof err) != 0)
      fail_msg ("%s", err);
  }
  free (copy);
  void *config = calloc (1, kind->config_bytes);
  if (sl_device_builder_build (&b, config, err, sizeof err) != 0)
    fail_msg ("%s", err);
  struct sl_model model = kind->create (config, err, sizeof err);
  if (model.ops == NULL)
    fail_msg ("%s", err);
  sl_device_builder_free (&b);
  free (config);
  return sl_engine_new (SL_CLOCK_VIRTUAL, model, stats, kind_name);
}
