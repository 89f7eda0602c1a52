/* sim_events.h — storlab-sim's live control events (--event AT:COMMAND):
 * raid control commands (raid_command.h) carried out at a virtual time,
 * AT after the start of the measured phase (the end of ramp_time), as an
 * operator would type them into the plugin's control socket during a lab
 * run.  status and power-cut are the live plugin's only: refused here.
 * A cluster takes its own events instead: "snapshot" takes one of every
 * volume that takes snapshots, "snapshot delete" deletes each one's oldest
 * (layer_snapshot.c), as `storlab snapshot` and a lab sweep's events do;
 * "node NODE down" and "node NODE up" fail a node's components and bring
 * them back (sl_cluster_node_event), as `storlab node` does. */
#ifndef STORLAB_SIM_EVENTS_H
#define STORLAB_SIM_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid/raid_command.h"

struct sl_engine;
struct cluster;

enum { SL_SIM_SNAPSHOT_TAKE = 1, SL_SIM_SNAPSHOT_DELETE = 2, SL_SIM_NODE_DOWN = 3,
       SL_SIM_NODE_UP = 4 };

struct sl_sim_event {
  char *spec;                          /* "AT:COMMAND" as given, for messages */
  char *command;                       /* COMMAND, trimmed */
  uint64_t at_ns;                      /* after the measured phase's start */
  struct sl_raid_command parsed;
  int cluster_event;                   /* 0: a raid command, SL_SIM_SNAPSHOT_*, SL_SIM_NODE_* */
  char *node;                          /* SL_SIM_NODE_*: its name */
  bool done;
  uint64_t done_ns;                    /* engine time it ran */
  char reply[SL_RAID_COMMAND_LINE_BYTES];
};

struct sl_sim_events {
  struct sl_sim_event *items;
  size_t count;
  struct cluster *cluster;             /* a cluster run's: where its events go */
  bool failed;                         /* a command was refused: stop the run */
  char error[SL_RAID_COMMAND_LINE_BYTES + 256];
};

/* Parses one --event value.  -1 with a line naming it in err. */
int sl_sim_events_add (struct sl_sim_events *evs, const char *spec, char *err,
                       size_t err_bytes);
/* measured_ns: how long the measured phase will last when every job is
 * time-limited, else UINT64_MAX.  -1 with err for an event beyond it. */
int sl_sim_events_check_length (const struct sl_sim_events *evs, uint64_t measured_ns,
                                char *err, size_t err_bytes);
/* Whether every event is a cluster's (snapshot, node), or none is (a raid
 * model's); -1 with err naming the first that does not fit. */
int sl_sim_events_check_kind (const struct sl_sim_events *evs, bool cluster, char *err,
                              size_t err_bytes);
/* Schedules every event on the engine (a raid model or a cluster), phase_start_ns
 * being the engine time of the measured phase's start. */
void sl_sim_events_schedule (struct sl_sim_events *evs, struct sl_engine *e,
                             uint64_t phase_start_ns);
/* After the run: -1 with err when a command was refused or an event did not
 * happen within the measured phase, which lasted measured_ns. */
int sl_sim_events_check_run (const struct sl_sim_events *evs, uint64_t phase_start_ns,
                             uint64_t measured_ns, char *err, size_t err_bytes);
void sl_sim_events_free (struct sl_sim_events *evs);

#endif
