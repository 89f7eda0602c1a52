/* sim_progress.h — storlab-sim's progress on stderr (stdout carries the
 * JSON): on a terminal, or anywhere with --progress, after 2 s of wall time
 * and once a second, how much simulated time is done and how much wall
 * time is left. */
#ifndef STORLAB_SIM_PROGRESS_H
#define STORLAB_SIM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct sim;

/* The run reads the wall clock (a few ns) every 4096 events, and ticks. */
#define SIM_PROGRESS_CHECK_MASK UINT64_C (4095)

struct sim_progress {
  bool enabled;                        /* stderr is a terminal, or --progress */
  bool tty;                            /* rewrite one line; cleared at the end */
  bool shown;                          /* a line was printed */
  uint64_t events;
  uint64_t wall_start_ns;
  uint64_t next_ns;                    /* wall time of the next line */
  uint64_t planned_ns;                 /* simulated end if every job is time-limited */
};

/* Shown on a terminal, or anywhere with --progress; never on stdout.
 * planned_ns: the simulated end if every job is time-limited, else
 * UINT64_MAX. */
void sl_sim_progress_init (struct sim_progress *p, bool forced, uint64_t planned_ns,
                           uint64_t wall_start_ns);
/* A line when the next one is due. */
void sl_sim_progress_tick (struct sim *sim);
/* After the run: a terminal's line is erased (the JSON or an error
 * follows), a log gets a last line at 100 %. */
void sl_sim_progress_end (struct sim *sim, bool succeeded);

#endif
