/* sim_progress.c — the progress line of sim_progress.h. */
#include "sim_progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "sim_run.h"

/* Progress on stderr (stdout carries the JSON): after 2 s of wall time,
 * once a second. */
#define SIM_PROGRESS_AFTER_NS UINT64_C (2000000000)
#define SIM_PROGRESS_EVERY_NS UINT64_C (1000000000)

/* "42.0 s", "12 min 5 s", "3 h 20 min", "2 d 4 h": simulated and wall times. */
static void
format_duration (uint64_t ns, char *out, size_t out_bytes)
{
  uint64_t s = ns / 1000000000u;
  if (s < 60)
    snprintf (out, out_bytes, "%.1f s", (double) ns / 1e9);
  else if (s < 3600)
    snprintf (out, out_bytes, "%llu min %llu s", (unsigned long long) (s / 60),
              (unsigned long long) (s % 60));
  else if (s < 86400)
    snprintf (out, out_bytes, "%llu h %llu min", (unsigned long long) (s / 3600),
              (unsigned long long) (s % 3600 / 60));
  else
    snprintf (out, out_bytes, "%llu d %llu h", (unsigned long long) (s / 86400),
              (unsigned long long) (s % 86400 / 3600));
}

static double
ratio (uint64_t done, uint64_t total)
{
  return total == 0 || done >= total ? 1.0 : (double) done / (double) total;
}

/* How far a clone is: it stops at whichever of its limits comes first. */
static double
clone_fraction (const struct sim_clone *c, uint64_t now_ns)
{
  if (c->finished)
    return 1.0;
  double f = 0.0, g;
  if (c->end_ns != UINT64_MAX && (g = ratio (now_ns, c->end_ns)) > f)
    f = g;
  if (c->io_limit_bytes != UINT64_MAX && (g = ratio (c->issued_bytes, c->io_limit_bytes)) > f)
    f = g;
  if (c->number_ios != 0 && (g = ratio (c->issued_ios, c->number_ios)) > f)
    f = g;
  return f;
}

/* The run ends with its slowest clone. */
static double
run_fraction (const struct sim *sim, uint64_t now_ns)
{
  double f = 1.0;
  for (size_t i = 0; i < sim->clone_count; i++) {
    double g = clone_fraction (&sim->clones[i], now_ns);
    if (g < f)
      f = g;
  }
  return f;
}

static void
progress_print (struct sim *sim, uint64_t wall_ns, bool last)
{
  struct sim_progress *p = &sim->progress;
  uint64_t now_ns = sl_engine_now_ns (sim->engine);
  double f = last ? 1.0 : run_fraction (sim, now_ns);
  char done[32], total[40] = "", wall[32], left[48] = "";
  format_duration (now_ns, done, sizeof done);
  if (p->planned_ns != UINT64_MAX) {
    strcpy (total, " of ");
    format_duration (p->planned_ns, total + 4, sizeof total - 4);
  }
  format_duration (wall_ns, wall, sizeof wall);
  if (!last && f > 0.0) {
    strcpy (left, ", about ");
    format_duration ((uint64_t) ((double) wall_ns * (1.0 - f) / f), left + 8, sizeof left - 8);
    strcat (left, " left");
  }
  unsigned percent = (unsigned) (100.0 * f);
  if (!last && percent > 99)
    percent = 99;               /* 100 % only once done */
  fprintf (stderr, "%sstorlab-sim: progress: %s%s simulated (%u%%), %s wall%s%s",
           p->tty ? "\r" : "", done, total, percent, wall, left, p->tty ? "\033[K" : "\n");
  fflush (stderr);
  p->shown = true;
}

void
sl_sim_progress_tick (struct sim *sim)
{
  struct sim_progress *p = &sim->progress;
  uint64_t wall_ns = sl_clock_monotonic_ns () - p->wall_start_ns;
  if (wall_ns < p->next_ns)
    return;
  progress_print (sim, wall_ns, false);
  p->next_ns = wall_ns + SIM_PROGRESS_EVERY_NS;
}

void
sl_sim_progress_end (struct sim *sim, bool succeeded)
{
  struct sim_progress *p = &sim->progress;
  if (!p->shown)
    return;
  if (p->tty)
    fputs ("\r\033[K", stderr);
  else if (succeeded)
    progress_print (sim, sl_clock_monotonic_ns () - p->wall_start_ns, true);
  fflush (stderr);
}


void
sl_sim_progress_init (struct sim_progress *p, bool forced, uint64_t planned_ns,
                      uint64_t wall_start_ns)
{
  bool tty = isatty (STDERR_FILENO) == 1;
  *p = (struct sim_progress) {
    .enabled = forced || tty,
    .tty = tty,
    .wall_start_ns = wall_start_ns,
    .next_ns = SIM_PROGRESS_AFTER_NS,
    .planned_ns = planned_ns,
  };
}

