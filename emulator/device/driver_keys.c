/* driver_keys.c — the keys shared by every plugin and storlab-sim. */
#include "driver_keys.h"

#include <string.h>

#include "params.h"

const struct sl_driver_key sl_driver_keys[] = {
  { "preset", "NAME", "device preset from the catalog (storlab-sim --list-presets)", true },
  { "file", "PATH", "keep the data in PATH (sparse file) instead of host memory", false },
  { "file-sync", "on|off",
    "off: a flush does not wait for file= data to reach the host's disk (scratch data)", false },
  { "stats", "PATH", "live statistics file (read it with storlab-stats PATH)", true },
  { "latency-offset-us", "auto|US",
    "subtract the NBD transport floor from every delay (auto: measured from idle gaps)", false },
  { "timing", "on|off", "off: serve with zero latency (measures plugin overhead)", true },
  { "fixed-latency-us", "US",
    "serve every request in exactly US instead of the model (calibration)", true },
  { "release-cores", "N",
    "released threads that may spin to their deadline at once (default 0: none)", false },
};
const size_t sl_driver_key_count = sizeof sl_driver_keys / sizeof sl_driver_keys[0];

const struct sl_driver_key *
sl_driver_key_find (const char *key)
{
  for (size_t i = 0; i < sl_driver_key_count; i++)
    if (strcmp (sl_driver_keys[i].key, key) == 0)
      return &sl_driver_keys[i];
  return NULL;
}

void
sl_driver_settings_defaults (struct sl_driver_settings *s)
{
  *s = (struct sl_driver_settings) { .latency_offset_auto = true, .timing = true,
                                     .file_sync = true };
}

static int
parse_on_off (const char *value, bool *out)
{
  if (strcmp (value, "on") == 0 || strcmp (value, "true") == 0
      || strcmp (value, "yes") == 0 || strcmp (value, "1") == 0)
    *out = true;
  else if (strcmp (value, "off") == 0 || strcmp (value, "false") == 0
           || strcmp (value, "no") == 0 || strcmp (value, "0") == 0)
    *out = false;
  else
    return -1;
  return 0;
}

int
sl_driver_settings_set (struct sl_driver_settings *s, const char *key,
                        const char *value, char *err, size_t err_bytes)
{
  if (strcmp (key, "file") == 0 || strcmp (key, "stats") == 0) {
    if (value[0] == '\0') {
      snprintf (err, err_bytes, "%s=: empty path", key);
      return -1;
    }
    if (key[0] == 'f')
      s->file_path = value;
    else
      s->stats_path = value;
    return 0;
  }
  if (strcmp (key, "file-sync") == 0) {
    if (parse_on_off (value, &s->file_sync) == -1) {
      snprintf (err, err_bytes, "file-sync=%s: expected on or off", value);
      return -1;
    }
    return 0;
  }
  if (strcmp (key, "latency-offset-us") == 0) {
    double us;
    if (strcmp (value, "auto") == 0) {
      s->latency_offset_auto = true;
      return 0;
    }
    if (sl_parse_decimal (value, &us) == -1 || us < 0 || us > 100000) {
      snprintf (err, err_bytes, "latency-offset-us=%s: expected auto or microseconds 0..100000",
                value);
      return -1;
    }
    s->latency_offset_auto = false;
    s->latency_offset_ns = (uint64_t) (us * 1000.0 + 0.5);
    return 0;
  }
  if (strcmp (key, "timing") == 0) {
    if (parse_on_off (value, &s->timing) == -1) {
      snprintf (err, err_bytes, "timing=%s: expected on or off", value);
      return -1;
    }
    s->fixed_latency_ns = 0;
    return 0;
  }
  if (strcmp (key, "fixed-latency-us") == 0) {
    double us;
    if (sl_parse_decimal (value, &us) == -1 || us < 0 || us > 10000000) {
      snprintf (err, err_bytes, "fixed-latency-us=%s: expected microseconds 0..10000000", value);
      return -1;
    }
    s->timing = false;
    s->fixed_latency_ns = (uint64_t) (us * 1000.0 + 0.5);
    return 0;
  }
  if (strcmp (key, "release-cores") == 0) {
    double cores;
    if (sl_parse_decimal (value, &cores) == -1 || cores < 0 || cores > 64
        || cores != (unsigned) cores) {
      snprintf (err, err_bytes, "release-cores=%s: expected a whole number 0..64", value);
      return -1;
    }
    s->release_cores = (unsigned) cores;
    return 0;
  }
  snprintf (err, err_bytes, "unknown driver key '%s'", key);
  return -1;
}

struct sl_model
sl_driver_settings_model (const struct sl_driver_settings *s, struct sl_model configured)
{
  if (s->timing || configured.ops == NULL)
    return configured;
  /* The configured model only lends its capacity. */
  uint64_t capacity_bytes = configured.capacity_bytes;
  if (configured.ops->destroy)
    configured.ops->destroy (configured.self);
  return sl_fixed_model_new (capacity_bytes, s->fixed_latency_ns);
}

void
sl_driver_keys_help (FILE *out)
{
  for (size_t i = 0; i < sl_driver_key_count; i++) {
    char left[64];
    snprintf (left, sizeof left, "%s=%s", sl_driver_keys[i].key, sl_driver_keys[i].value_syntax);
    fprintf (out, "  %-28s %s\n", left, sl_driver_keys[i].help);
  }
}
