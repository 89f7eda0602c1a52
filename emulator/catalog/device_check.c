/* storlab-catalog --check: device parameter sets checked by the library as
 * a plugin or the simulator would build them, without building a device,
 * so that a sweep refuses every combination it cannot run before anything
 * starts (a scaled topology can pass every range and still break a rule
 * across keys, such as read-ahead <= cache-size). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/device_check.h"
#include "catalog/kinds.h"
#include "device/device.h"

enum { LINE_BYTES = 8192, ERR_BYTES = 512 };

/* "ok", or the library's reason, for one "KIND KEY=VALUE ..." line. */
static void
check_line (char *line, char *verdict, size_t verdict_bytes)
{
  char *save = NULL;
  const char *name = strtok_r (line, " \t\n", &save);
  const struct sl_device_kind *kind = name ? sl_device_kind_find (name) : NULL;
  if (kind == NULL) {
    snprintf (verdict, verdict_bytes, "unknown kind '%s' (known: %s)", name ? name : "",
              sl_device_kind_names ());
    return;
  }
  struct sl_device_builder b;
  sl_device_builder_init (&b, kind);
  b.note = NULL;                       /* what a fit changed is not a verdict */
  char err[ERR_BYTES] = "";
  int rc = 0;
  for (char *pair = strtok_r (NULL, " \t\n", &save); pair && rc == 0;
       pair = strtok_r (NULL, " \t\n", &save)) {
    char *eq = strchr (pair, '=');
    if (eq == NULL) {
      snprintf (err, sizeof err, "'%s': not KEY=VALUE", pair);
      rc = -1;
      break;
    }
    *eq = '\0';
    rc = sl_device_builder_add (&b, pair, eq + 1, err, sizeof err);
  }
  void *config = rc == 0 ? calloc (1, kind->config_bytes) : NULL;
  if (rc == 0 && config == NULL) {
    snprintf (err, sizeof err, "out of memory");
    rc = -1;
  }
  if (rc == 0)
    rc = sl_device_builder_build (&b, config, err, sizeof err);
  free (config);
  sl_device_builder_free (&b);
  snprintf (verdict, verdict_bytes, "%s", rc == 0 ? "ok" : err);
}

int
sl_catalog_check_devices (FILE *in, FILE *out)
{
  char line[LINE_BYTES];
  char verdict[ERR_BYTES];
  while (fgets (line, sizeof line, in)) {
    if (strchr (line, '\n') == NULL && !feof (in)) {
      fprintf (out, "line longer than %d bytes\n", LINE_BYTES - 1);
      return -1;
    }
    check_line (line, verdict, sizeof verdict);
    fprintf (out, "%s\n", verdict);
  }
  return ferror (in) || ferror (out) ? -1 : 0;
}
