/* driver_keys.h — keys every driver (nbdkit plugin, storlab-sim) takes in
 * addition to a model's own parameters.  One list, so both accept the same
 * command line. */
#ifndef STORLAB_DRIVER_KEYS_H
#define STORLAB_DRIVER_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/model.h"

struct sl_driver_key {
  const char *key;
  const char *value_syntax;
  const char *help;
  bool simulator_uses;         /* false: accepted and ignored by storlab-sim */
};

extern const struct sl_driver_key sl_driver_keys[];
extern const size_t sl_driver_key_count;

const struct sl_driver_key *sl_driver_key_find (const char *key);

/* Driver settings parsed from those keys. */
struct sl_driver_settings {
  const char *file_path;       /* NULL: sparse memory */
  /* false: a flush does not fdatasync file_path.  For data nobody keeps
   * (a lab's devices): the host disk's own latency would otherwise be
   * added to every flush the model times. */
  bool file_sync;
  const char *stats_path;      /* NULL: no stats file */
  bool latency_offset_auto;
  uint64_t latency_offset_ns;
  /* false: the model is replaced by a constant latency (fixed_latency_ns;
   * 0 with timing=off) — overhead studies and calibration */
  bool timing;
  uint64_t fixed_latency_ns;
  unsigned release_cores;      /* release.h: sl_release_set_spin_cores */
};

void sl_driver_settings_defaults (struct sl_driver_settings *s);
/* Returns 0, or -1 with "KEY=VALUE: reason" in err.  Keeps value pointers:
 * the caller keeps the strings alive. */
int sl_driver_settings_set (struct sl_driver_settings *s, const char *key,
                            const char *value, char *err, size_t err_bytes);
/* The model a driver serves: the configured one, or — when the settings
 * replace timing — a fixed-latency model of the same capacity (the
 * configured model is destroyed).  ops == NULL when out of memory. */
struct sl_model sl_driver_settings_model (const struct sl_driver_settings *s,
                                          struct sl_model configured);

/* "  key=SYNTAX   help" lines. */
void sl_driver_keys_help (FILE *out);

#endif
