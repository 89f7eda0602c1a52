/* device.c — the KEY=VALUE builder that turns defaults + preset +
 * per-key overrides into a kind's validated config. */
#define _GNU_SOURCE

#include "device.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "params.h"
#include "presets.h"

static bool notes_muted;

void
sl_device_notes_mute (bool muted)
{
  notes_muted = muted;
}

void
sl_device_note_stderr (void *arg, const char *line)
{
  (void) arg;
  if (!notes_muted)
    fprintf (stderr, "%s: note: %s\n", program_invocation_short_name, line);
}

void
sl_device_builder_init (struct sl_device_builder *b, const struct sl_device_kind *kind)
{
  memset (b, 0, sizeof *b);
  b->kind = kind;
  b->note = sl_device_note_stderr;
}

const char *
sl_device_builder_value (const struct sl_device_builder *b, const char *key)
{
  for (size_t i = b->pair_count; i-- > 0;)
    if (strcmp (b->keys[i], key) == 0)
      return b->values[i];
  return NULL;
}

static void
known_keys (const struct sl_device_kind *kind, char *out, size_t out_bytes)
{
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < kind->param_count; i++) {
    int n = snprintf (out + used, out_bytes - used, "%s%s", i ? ", " : "",
                      kind->params[i].key);
    if (n < 0 || (size_t) n >= out_bytes - used)
      break;
    used += (size_t) n;
  }
}

static int
add_preset (struct sl_device_builder *b, const char *value, char *err, size_t err_bytes)
{
  if (b->preset[0] != '\0') {
    snprintf (err, err_bytes, "preset=%s: preset already given (preset=%s)",
              value, b->preset);
    return -1;
  }
  if (strlen (value) >= sizeof b->preset
      || sl_preset_find (b->kind->kind, value) == NULL) {
    char names[512];
    sl_preset_names (b->kind->kind, names, sizeof names);
    snprintf (err, err_bytes, "preset=%s: unknown %s preset; known: %s",
              value, b->kind->kind, names);
    return -1;
  }
  strcpy (b->preset, value);
  return 0;
}

/* Parses the value into a throw-away config so a bad value is reported
 * when it is given, not later at build time. */
static int
check_value (const struct sl_device_kind *kind, const char *key, const char *value,
             char *err, size_t err_bytes)
{
  void *scratch = calloc (1, kind->config_bytes);
  if (scratch == NULL) {
    snprintf (err, err_bytes, "%s=%s: out of memory", key, value);
    return -1;
  }
  int r = sl_param_set (kind->params, kind->param_count, scratch, key, value,
                        err, err_bytes);
  free (scratch);
  return r == 0 ? 0 : -1;
}

int
sl_device_builder_add (struct sl_device_builder *b, const char *key,
                       const char *value, char *err, size_t err_bytes)
{
  if (key == NULL || value == NULL) {
    snprintf (err, err_bytes, "missing key or value");
    return -1;
  }
  if (strcmp (key, "preset") == 0)
    return add_preset (b, value, err, err_bytes);

  if (sl_param_find (b->kind->params, b->kind->param_count, key) == NULL) {
    char keys[1024];
    known_keys (b->kind, keys, sizeof keys);
    snprintf (err, err_bytes, "unknown key '%s' for %s (known: preset, %s)",
              key, b->kind->kind, keys);
    return -1;
  }
  if (check_value (b->kind, key, value, err, err_bytes) == -1)
    return -1;

  size_t max_pairs = sizeof b->keys / sizeof b->keys[0];
  if (b->pair_count >= max_pairs) {
    snprintf (err, err_bytes, "%s=%s: too many parameters (at most %zu)",
              key, value, max_pairs);
    return -1;
  }
  char *key_copy = strdup (key);
  char *value_copy = strdup (value);
  if (key_copy == NULL || value_copy == NULL) {
    free (key_copy);
    free (value_copy);
    snprintf (err, err_bytes, "%s=%s: out of memory", key, value);
    return -1;
  }
  b->keys[b->pair_count] = key_copy;
  b->values[b->pair_count] = value_copy;
  b->pair_count++;
  return 0;
}

/* A catalog entry is "KEY=VALUE KEY=VALUE ..."; any error here is a
 * broken entry, reported with the preset's name. */
static int
apply_preset (const struct sl_device_kind *kind, const char *name, void *config,
              char *err, size_t err_bytes)
{
  const struct sl_preset *preset = sl_preset_find (kind->kind, name);
  if (preset == NULL) {
    snprintf (err, err_bytes, "preset %s: unknown %s preset", name, kind->kind);
    return -1;
  }
  char *params = strdup (preset->params);
  if (params == NULL) {
    snprintf (err, err_bytes, "preset %s: out of memory", name);
    return -1;
  }
  int result = 0;
  char *save = NULL;
  for (char *item = strtok_r (params, " ", &save); item != NULL;
       item = strtok_r (NULL, " ", &save)) {
    char *equals = strchr (item, '=');
    if (equals == NULL) {
      snprintf (err, err_bytes, "preset %s: '%s' is not KEY=VALUE", name, item);
      result = -1;
      break;
    }
    *equals = '\0';
    char reason[256];
    if (sl_param_set (kind->params, kind->param_count, config, item, equals + 1,
                      reason, sizeof reason) != 0) {
      snprintf (err, err_bytes, "preset %s: %s", name, reason);
      result = -1;
      break;
    }
  }
  free (params);
  return result;
}

/* A preset with the user's size=: the kind fits the preset to it, from a
 * copy of the preset alone (config holds the user's keys already). */
static int
fit_preset_size (const struct sl_device_builder *b, const void *preset_config, void *config,
                 char *note, size_t note_bytes, char *err, size_t err_bytes)
{
  note[0] = '\0';
  if (preset_config == NULL)
    return 0;
  return b->kind->fit_preset_size (config, preset_config, b, note, note_bytes, err, err_bytes);
}

/* A copy of config when the kind fits presets to a size= given with one;
 * NULL otherwise (or out of memory: err set, *failed). */
static void *
preset_copy_to_fit (const struct sl_device_builder *b, const void *config, bool *failed,
                    char *err, size_t err_bytes)
{
  *failed = false;
  if (b->kind->fit_preset_size == NULL || b->preset[0] == '\0'
      || sl_device_builder_value (b, "size") == NULL)
    return NULL;
  void *copy = malloc (b->kind->config_bytes);
  if (copy == NULL) {
    snprintf (err, err_bytes, "preset=%s: out of memory", b->preset);
    *failed = true;
    return NULL;
  }
  memcpy (copy, config, b->kind->config_bytes);
  return copy;
}

int
sl_device_builder_build (const struct sl_device_builder *b, void *config,
                         char *err, size_t err_bytes)
{
  const struct sl_device_kind *kind = b->kind;
  memset (config, 0, kind->config_bytes);
  kind->set_defaults (config);

  if (b->preset[0] != '\0' && apply_preset (kind, b->preset, config, err, err_bytes) == -1)
    return -1;
  bool failed;
  void *preset_config = preset_copy_to_fit (b, config, &failed, err, err_bytes);
  if (failed)
    return -1;

  int result = 0;
  for (size_t i = 0; i < b->pair_count && result == 0; i++)
    if (sl_param_set (kind->params, kind->param_count, config, b->keys[i],
                      b->values[i], err, err_bytes) != 0)
      result = -1;
  char note[512] = "";
  if (result == 0)
    result = fit_preset_size (b, preset_config, config, note, sizeof note, err, err_bytes);
  free (preset_config);
  if (result == 0)
    result = kind->validate (config, err, err_bytes) == 0 ? 0 : -1;
  /* Only a device that will be built is worth a note. */
  if (result == 0 && note[0] != '\0' && b->note != NULL)
    b->note (b->note_arg, note);
  return result;
}

void
sl_device_builder_free (struct sl_device_builder *b)
{
  for (size_t i = 0; i < b->pair_count; i++) {
    free (b->keys[i]);
    free (b->values[i]);
    b->keys[i] = b->values[i] = NULL;
  }
  b->pair_count = 0;
  b->preset[0] = '\0';
}
