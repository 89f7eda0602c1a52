/* kinds.c — see kinds.h. */
#include "kinds.h"

#include <stddef.h>
#include <string.h>

#include "hdd/hdd.h"
#include "raid/raid.h"
#include "ssd/ssd.h"

/* One list drives both the lookup table and the names string, so they
 * cannot disagree.  Add a kind here as X(name) with sl_<name>_kind. */
#define SL_DEVICE_KINDS(X) X (hdd) X (ssd) X (raid)

#define KIND_ENTRY(name) &sl_##name##_kind,
#define KIND_NAME(name) ", " #name

static const struct sl_device_kind *const kinds[] = { SL_DEVICE_KINDS (KIND_ENTRY) };
static const char kind_names_joined[] = SL_DEVICE_KINDS (KIND_NAME);

const struct sl_device_kind *
sl_device_kind_find (const char *kind)
{
  if (kind == NULL)
    return NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp (kinds[i]->kind, kind) == 0)
      return kinds[i];
  return NULL;
}

const char *
sl_device_kind_names (void)
{
  return kind_names_joined + 2;        /* skip the leading ", " */
}
