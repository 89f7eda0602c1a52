/* huge_pages.c — see huge_pages.h. */
#define _GNU_SOURCE
#include "huge_pages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TUNABLE "glibc.malloc.hugetlb"

void
sl_sim_use_huge_pages (char **argv)
{
  const char *off = getenv ("STORLAB_SIM_HUGE_PAGES");
  if (off && strcmp (off, "0") == 0)
    return;
  const char *tunables = getenv ("GLIBC_TUNABLES");
  if (tunables && strstr (tunables, TUNABLE))
    return;                    /* set (by us, or by the user: theirs wins) */
  char value[4096];
  int n = snprintf (value, sizeof value, "%s%s" TUNABLE "=1", tunables ? tunables : "",
                    tunables && *tunables ? ":" : "");
  if (n < 0 || (size_t) n >= sizeof value || setenv ("GLIBC_TUNABLES", value, 1) != 0)
    return;
  execv ("/proc/self/exe", argv);
  /* no exec (no /proc): ordinary pages, same results, slower at full size */
}
