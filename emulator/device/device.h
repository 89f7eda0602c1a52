/* device.h — building a configured model from KEY=VALUE pairs.
 *
 * The one place where defaults, preset= and per-key overrides meet, so the
 * plugins and storlab-sim accept exactly the same keys: defaults first, then
 * the preset (wherever preset= stands on the command line), then every other
 * key in order.
 */
#ifndef STORLAB_DEVICE_H
#define STORLAB_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/model.h"

struct sl_device_builder;

struct sl_device_kind {
  const char *kind;                    /* "hdd" */
  const struct sl_param *params;
  size_t param_count;
  size_t config_bytes;
  void (*set_defaults) (void *config);
  /* Checks cross-key consistency; -1 with a reason naming the keys. */
  int (*validate) (const void *config, char *err, size_t err_bytes);
  /* Builds the model; capacity from the config. */
  struct sl_model (*create) (const void *config, char *err, size_t err_bytes);
  /* Fits a preset's device to the size= given with it (NULL: the kind has
   * nothing to fit).  preset_config holds defaults + preset alone, config
   * the user's keys too (b says which).  0, with what it changed as one
   * line in note (empty: nothing), or -1 with err. */
  int (*fit_preset_size) (void *config, const void *preset_config,
                          const struct sl_device_builder *b, char *note, size_t note_bytes,
                          char *err, size_t err_bytes);
};

/* Finding a kind by name: kinds.h (the catalog above the models). */

/* A note about a build (one line, no newline): what the builder chose for
 * the user, such as a preset's geometry scaled to size=. */
typedef void (*sl_device_note_fn) (void *arg, const char *line);

struct sl_device_builder {
  const struct sl_device_kind *kind;
  char preset[64];                     /* empty: none */
  size_t pair_count;
  char *keys[64];
  char *values[64];
  sl_device_note_fn note;              /* NULL: notes dropped */
  void *note_arg;
};

/* The default note sink: "PROGRAM: note: LINE" on stderr. */
void sl_device_note_stderr (void *arg, const char *line);
/* While muted, the default sink prints nothing: a program building the
 * same devices twice (storlab-sim's warm probe) says each note once. */
void sl_device_notes_mute (bool muted);

/* Sets the note sink to sl_device_note_stderr; a caller may replace it. */
void sl_device_builder_init (struct sl_device_builder *b, const struct sl_device_kind *kind);
/* Records a pair (preset= included).  Checks the key is known for this
 * kind (err: "unknown key 'X' for hdd; known keys: ...") and, except for
 * preset, that the value parses.  Returns 0 or -1. */
int sl_device_builder_add (struct sl_device_builder *b, const char *key,
                           const char *value, char *err, size_t err_bytes);
/* The value the user gave key (the last one), or NULL. */
const char *sl_device_builder_value (const struct sl_device_builder *b, const char *key);
/* Fills config (kind->config_bytes) from defaults + preset + pairs, fits
 * the preset to a size= given with it (the kind's fit_preset_size), then
 * validates; a note on what the fit changed goes to b->note once the
 * config is valid.  Returns 0 or -1 with err naming the key/value/preset. */
int sl_device_builder_build (const struct sl_device_builder *b, void *config,
                             char *err, size_t err_bytes);
void sl_device_builder_free (struct sl_device_builder *b);

#endif
