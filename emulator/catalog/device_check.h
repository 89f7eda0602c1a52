#ifndef STORLAB_DEVICE_CHECK_H
#define STORLAB_DEVICE_CHECK_H

#include <stdio.h>

/* Reads lines "KIND KEY=VALUE ..." (the model's keys and preset=, as a
 * plugin takes them) and writes one line each: "ok", or why the library
 * refuses the set (the same words a plugin would start with).  Returns 0,
 * or -1 on a read/write error or an over-long line. */
int sl_catalog_check_devices (FILE *in, FILE *out);

#endif
