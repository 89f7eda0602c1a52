/* presets.h — the device preset catalog.
 *
 * A preset is data: a model kind, a list of KEY=VALUE parameters in the same
 * spelling the plugins and storlab-sim take, where the figures come from,
 * and which parameters were fitted rather than quoted.
 */
#ifndef STORLAB_PRESETS_H
#define STORLAB_PRESETS_H

#include <stddef.h>
#include <stdio.h>

struct sl_preset {
  const char *name;
  const char *kind;            /* "hdd", "ssd" */
  const char *summary;
  const char *params;          /* space-separated KEY=VALUE */
  const char *source;          /* datasheet / review the figures come from */
  const char *fitted;          /* which parameters are fitted, and why */
};

size_t sl_preset_count (void);
const struct sl_preset *sl_preset_at (size_t index);
/* NULL when no preset of that kind has that name. */
const struct sl_preset *sl_preset_find (const char *kind, const char *name);
/* "a, b, c": the known preset names of a kind, for error messages. */
void sl_preset_names (const char *kind, char *out, size_t out_bytes);

#endif
