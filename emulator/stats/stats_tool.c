/* storlab-stats — prints a live stats file as JSON, once or every interval.
 * Usage: storlab-stats PATH [--watch SECONDS]
 * Prints {"devices": [record...], "clock_epoch_ns": E[, "uptime_ns": U]}:
 * uptime only for a live file (E != 0, the host's CLOCK_MONOTONIC). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/stats.h"
#include "device/params.h"

static int
print_once (struct sl_stats_file *f)
{
  unsigned n = sl_stats_file_record_count (f);
  struct sl_device_stats *copy = malloc (sizeof *copy);
  if (copy == NULL)
    return -1;
  printf ("{\"devices\": [");
  for (unsigned i = 0; i < n; i++) {
    sl_device_stats_snapshot (sl_stats_file_record (f, i), copy);
    if (i)
      printf (", ");
    sl_device_stats_write_json (copy, stdout);
  }
  /* a live (real-time) file: its engine started at clock_epoch_ns on this
   * host's CLOCK_MONOTONIC; a simulator's file (virtual time) has epoch 0 */
  uint64_t epoch_ns = sl_stats_file_header (f)->clock_epoch_ns;
  printf ("], \"clock_epoch_ns\": %" PRIu64, epoch_ns);
  if (epoch_ns) {
    uint64_t now_ns = sl_clock_monotonic_ns ();
    printf (", \"uptime_ns\": %" PRIu64, now_ns > epoch_ns ? now_ns - epoch_ns : 0);
  }
  printf ("}\n");
  fflush (stdout);
  free (copy);
  return 0;
}

int
main (int argc, char **argv)
{
  double watch_s = 0;
  if (argc == 4 && strcmp (argv[2], "--watch") == 0) {
    if (sl_parse_decimal (argv[3], &watch_s) == -1 || watch_s <= 0) {
      fprintf (stderr, "storlab-stats: --watch %s: expected seconds > 0\n", argv[3]);
      return 1;
    }
  }
  else if (argc != 2 || argv[1][0] == '-') {
    fprintf (stderr, "usage: storlab-stats PATH [--watch SECONDS]\n");
    return argc == 2 && strcmp (argv[1], "--help") == 0 ? 0 : 1;
  }
  char err[512];
  struct sl_stats_file *f = sl_stats_file_open (argv[1], err, sizeof err);
  if (f == NULL) {
    fprintf (stderr, "storlab-stats: %s\n", err);
    return 1;
  }
  int rc = print_once (f);
  while (rc == 0 && watch_s > 0) {
    struct timespec ts = { (time_t) watch_s, (long) ((watch_s - (time_t) watch_s) * 1e9) };
    nanosleep (&ts, NULL);
    rc = print_once (f);
  }
  sl_stats_file_close (f);
  return rc == 0 ? 0 : 1;
}
