/* storlab-catalog — the library's facts as JSON, generated at build time
 * (build/emulator/catalog.json) for the Python CLI and the man pages, so no
 * fact of the library is typed a second time:
 *
 *   kinds    every kind: its parameter table (key, syntax, unit type,
 *            range, default, help) and the driver keys every kind takes
 *   presets  name, kind, summary, parameters (as KEY=VALUE), source, fitted
 *   raid     the levels: smallest member count, data members for every
 *            member count the controller takes; the largest member count
 *   cluster  the cluster simulator's host presets (each with its links'
 *            preset) and link presets, and the defaults
 *
 * With --check it checks device parameter sets instead (device_check.c).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/device_check.h"
#include "catalog/kinds.h"
#include "cluster/fabric.h"
#include "core/json_string.h"
#include "device/device.h"
#include "device/driver_keys.h"
#include "device/params.h"
#include "device/presets.h"
#include "raid/raid.h"

static const uint32_t raid_levels[] = { 0, 1, 5, 6, 10 };

static const char *const param_type_names[] = {
  [SL_PARAM_COUNT] = "count",
  [SL_PARAM_SIZE_BYTES] = "size_bytes",
  [SL_PARAM_CAPACITY_BYTES] = "capacity_bytes",
  [SL_PARAM_TIME_MS] = "time_ms",
  [SL_PARAM_TIME_US] = "time_us",
  [SL_PARAM_RATE_MB_S] = "rate_mb_s",
  [SL_PARAM_ON_OFF] = "on_off",
  [SL_PARAM_STRING] = "string",
  [SL_PARAM_PERCENT] = "percent",
  [SL_PARAM_CHOICE] = "choice",
};

/* Catalog texts are the library's own, NUL-terminated. */
static void
json_string (const char *s)
{
  const char *text = s ? s : "";
  sl_json_write_string (stdout, text, strlen (text));
}

static void
json_bound (double value)
{
  printf ("%.17g", value);
}

static int
print_params (const struct sl_device_kind *kind)
{
  void *defaults = calloc (1, kind->config_bytes);
  if (defaults == NULL)
    return -1;
  kind->set_defaults (defaults);
  fputs ("\"params\": [", stdout);
  for (size_t i = 0; i < kind->param_count; i++) {
    const struct sl_param *p = &kind->params[i];
    char syntax[128], value[128];
    sl_param_syntax (p, syntax, sizeof syntax);
    sl_param_value_text (p, defaults, value, sizeof value);
    printf ("%s\n    {\"key\": ", i ? "," : "");
    json_string (p->key);
    fputs (", \"syntax\": ", stdout);
    json_string (syntax);
    fputs (", \"type\": ", stdout);
    json_string (param_type_names[p->type]);
    fputs (", \"min\": ", stdout);
    json_bound (p->min);
    fputs (", \"max\": ", stdout);
    json_bound (p->max);
    fputs (", \"default\": ", stdout);
    json_string (value);
    fputs (", \"help\": ", stdout);
    json_string (sl_param_help_text (p));
    putchar ('}');
  }
  fputs ("]", stdout);
  free (defaults);
  return 0;
}

static void
print_driver_keys (void)
{
  fputs ("\"driver_keys\": [", stdout);
  for (size_t i = 0; i < sl_driver_key_count; i++) {
    const struct sl_driver_key *k = &sl_driver_keys[i];
    printf ("%s\n  {\"key\": ", i ? "," : "");
    json_string (k->key);
    fputs (", \"syntax\": ", stdout);
    json_string (k->value_syntax);
    fputs (", \"help\": ", stdout);
    json_string (k->help);
    printf (", \"simulator_uses\": %s}", k->simulator_uses ? "true" : "false");
  }
  fputs ("]", stdout);
}

/* "k=v k=v" as a JSON object. */
static int
print_preset_params (const char *text)
{
  char *copy = strdup (text ? text : "");
  if (copy == NULL)
    return -1;
  char *save = NULL;
  bool first = true;
  putchar ('{');
  for (char *pair = strtok_r (copy, " \t\n", &save); pair; pair = strtok_r (NULL, " \t\n", &save)) {
    char *eq = strchr (pair, '=');
    if (eq == NULL)
      continue;
    *eq = '\0';
    printf ("%s", first ? "" : ", ");
    json_string (pair);
    fputs (": ", stdout);
    json_string (eq + 1);
    first = false;
  }
  putchar ('}');
  free (copy);
  return 0;
}

static int
print_presets (void)
{
  fputs ("\"presets\": [", stdout);
  for (size_t i = 0; i < sl_preset_count (); i++) {
    const struct sl_preset *p = sl_preset_at (i);
    printf ("%s\n  {\"name\": ", i ? "," : "");
    json_string (p->name);
    fputs (", \"kind\": ", stdout);
    json_string (p->kind);
    fputs (", \"summary\": ", stdout);
    json_string (p->summary);
    fputs (", \"params\": ", stdout);
    if (print_preset_params (p->params) == -1)
      return -1;
    fputs (", \"source\": ", stdout);
    json_string (p->source);
    fputs (", \"fitted\": ", stdout);
    json_string (p->fitted);
    putchar ('}');
  }
  fputs ("]", stdout);
  return 0;
}

/* A host preset's figures: its cores, its batch, and every cost by the
 * key that names that one figure (the pairs' and per-io-us's are these). */
static void
print_host_figures (const char *name)
{
  struct cl_host_config config;
  char why[256];
  cl_host_preset (name, &config, why, sizeof why);
  printf (", \"cores\": %u", config.cores);
  const char *ratio;
  double lo, hi;
  for (size_t i = 0; (ratio = cl_host_ratio_at (i, &lo, &hi)) != NULL; i++)
    printf (", \"%s\": %g", ratio, cl_host_ratio_get (&config, ratio));
  fputs (", \"costs_us\": {", stdout);
  const char *key;
  bool one_figure;
  for (size_t i = 0, n = 0; (key = cl_host_cost_at (i, &one_figure)) != NULL; i++)
    if (one_figure)
      printf ("%s\"%s\": %g", n++ ? ", " : "", key,
              (double) cl_host_cost_get (&config, cl_host_cost_find (key)) / 1000.0);
  putchar ('}');
}

/* The cluster simulator's host and link presets, by name (their figures
 * and sources: cluster/host_cpu.c, cluster/fabric.c), and the cost keys a
 * node line or a host file may give. */
static void
print_cluster (void)
{
  printf ("\"cluster\": {\"default_host\": \"%s\", \"hosts\": {", CL_HOST_PRESET_DEFAULT);
  const char *name, *link;
  for (size_t i = 0; (name = cl_host_preset_at (i, &link)) != NULL; i++) {
    printf ("%s\"%s\": {\"link\": \"%s\"", i ? ", " : "", name, link);
    print_host_figures (name);
    putchar ('}');
  }
  fputs ("}, \"host_cost_keys\": [", stdout);
  bool one_figure;
  for (size_t i = 0; (name = cl_host_cost_at (i, &one_figure)) != NULL; i++)
    printf ("%s\"%s\"", i ? ", " : "", name);
  fputs ("], \"host_ratio_keys\": {", stdout);
  double lo, hi;
  for (size_t i = 0; (name = cl_host_ratio_at (i, &lo, &hi)) != NULL; i++)
    printf ("%s\"%s\": [%g, %g]", i ? ", " : "", name, lo, hi);
  fputs ("}, \"host_count_keys\": [", stdout);
  for (size_t i = 0, n = 0; (name = cl_host_ratio_at (i, &lo, &hi)) != NULL; i++)
    if (cl_host_ratio_is_count (i))
      printf ("%s\"%s\"", n++ ? ", " : "", name);
  printf ("], \"default_link\": \"%s\", \"links\": [", CL_LINK_PRESET_DEFAULT);
  for (size_t i = 0; (name = cl_link_preset_at (i)) != NULL; i++)
    printf ("%s\"%s\"", i ? ", " : "", name);
  fputs ("]}", stdout);
}

static void
print_raid (void)
{
  printf ("\"raid\": {\"max_members\": %u, \"levels\": {", SL_RAID_MAX_MEMBERS);
  for (size_t i = 0; i < sizeof raid_levels / sizeof raid_levels[0]; i++) {
    uint32_t level = raid_levels[i];
    uint32_t min = sl_raid_min_members (level);
    printf ("%s\n  \"%u\": {\"min_members\": %u, \"data_members\": {", i ? "," : "", level, min);
    for (uint32_t n = min; n <= SL_RAID_MAX_MEMBERS; n++)
      printf ("%s\"%u\": %u", n > min ? ", " : "", n, sl_raid_data_members (level, n));
    fputs ("}}", stdout);
  }
  fputs ("}}", stdout);
}

int
main (int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--check") == 0)
    return sl_catalog_check_devices (stdin, stdout) == 0 ? 0 : 1;
  if (argc != 1) {
    fprintf (stderr, "usage: storlab-catalog  (prints the library's catalog as JSON)\n"
             "       storlab-catalog --check  (KIND KEY=VALUE... lines on stdin: ok or why not)\n");
    return 2;
  }
  fputs ("{\"kinds\": {", stdout);
  const char *names = sl_device_kind_names ();
  char *copy = strdup (names);
  if (copy == NULL)
    return 1;
  char *save = NULL;
  bool first = true;
  for (char *name = strtok_r (copy, ", ", &save); name; name = strtok_r (NULL, ", ", &save)) {
    const struct sl_device_kind *kind = sl_device_kind_find (name);
    printf ("%s\n \"%s\": {", first ? "" : ",", name);
    if (print_params (kind) == -1)
      return 1;
    putchar ('}');
    first = false;
  }
  free (copy);
  fputs ("},\n", stdout);
  print_driver_keys ();
  fputs (",\n", stdout);
  if (print_presets () == -1)
    return 1;
  fputs (",\n", stdout);
  print_raid ();
  fputs (",\n", stdout);
  print_cluster ();
  fputs ("}\n", stdout);
  return ferror (stdout) ? 1 : 0;
}
