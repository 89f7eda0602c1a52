/* kinds.h — the catalog of device kinds: every model storlab serves
 * (hdd, ssd, raid), found by name.  It sits above the models, so a model
 * never needs it (a RAID controller names its member kinds itself). */
#ifndef STORLAB_KINDS_H
#define STORLAB_KINDS_H

#include "device/device.h"

const struct sl_device_kind *sl_device_kind_find (const char *kind);
/* "hdd, ssd, raid" */
const char *sl_device_kind_names (void);

#endif
