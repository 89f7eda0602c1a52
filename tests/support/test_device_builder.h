/* test_device_builder.h — a virtual-clock engine over a device model built
 * from "KEY=VALUE KEY=VALUE" text, for the cmocka tests (fails the test on
 * any refusal, with the model's own message). */
#ifndef STORLAB_TEST_DEVICE_BUILDER_H
#define STORLAB_TEST_DEVICE_BUILDER_H

#include "core/engine.h"
#include "core/stats.h"

struct sl_engine *test_engine_new (const char *kind_name, const char *params,
                                   struct sl_device_stats *stats);

#endif
