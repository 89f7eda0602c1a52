/* cluster_run.h — a cluster built from spec text in a virtual-time engine,
 * for the cluster model's tests: bursts of I/O at once, run to the end,
 * and each target's figures by name. */
#ifndef STORLAB_TEST_CLUSTER_RUN_H
#define STORLAB_TEST_CLUSTER_RUN_H

#include <stdint.h>

#include "cluster/cluster.h"
#include "cluster/cluster_internal.h"
#include "core/engine.h"

struct run {
  struct sl_engine *engine;
  struct sl_device_stats *stats;
  struct cluster *c;
};

/* A disk of fixed latency (every figure exact). */
#define DISK(node, name) "device " node " " name " hdd preset=sas10k-300g size=256M fixed-latency-us=100\n"

struct run run_new (const char *spec);
void run_free (struct run *r);
/* count requests of op, length bytes each at offset + i * stride, all at
 * once; runs until every one completed; returns the last completion. */
uint64_t burst (struct run *r, enum sl_op op, unsigned count, uint64_t offset, uint64_t stride,
                uint64_t length);
const struct cl_target_stats *layer (struct run *r, const char *name);
uint64_t ops_of (struct run *r, const char *name, enum sl_op op);
uint64_t bytes_of (struct run *r, const char *name, enum sl_op op);
/* The spec is refused with one line containing expected. */
void assert_refused (const char *spec, const char *expected);

#endif
