/* sim_events.c — live control events in virtual time (see sim_events.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sim_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "core/engine.h"
#include "jobfile.h"

static const char sim_commands[] =
  "battery ok|learning|failed|absent, policy write-back|write-through|"
  "forced-write-back, fail-member N, replace-member N";

static bool
sim_takes (const char *word, size_t length)
{
  static const char *const names[] = { "battery", "policy", "fail-member", "replace-member" };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strlen (names[i]) == length && strncmp (word, names[i], length) == 0)
      return true;
  return false;
}

static char *
trimmed_copy (const char *start, size_t length)
{
  while (length > 0 && strchr (" \t", *start)) {
    start++;
    length--;
  }
  while (length > 0 && strchr (" \t\r\n", start[length - 1]))
    length--;
  return strndup (start, length);
}

/* The command's text: its checks first (what the simulator cannot do),
 * then the shared parser's, its "error " prefix dropped. */
static int
parse_command (struct sl_sim_event *ev, char *err, size_t err_bytes)
{
  const char *word = ev->command;
  if (strcmp (word, "snapshot") == 0 || strcmp (word, "snapshot delete") == 0) {
    ev->cluster_event = word[8] ? SL_SIM_SNAPSHOT_DELETE : SL_SIM_SNAPSHOT_TAKE;
    return 0;
  }
  if (strncmp (word, "node", 4) == 0 && strchr (" \t", word[4]) && word[4]) {
    char name[64], state[8], extra;
    if (sscanf (word + 4, " %63s %7s %c", name, state, &extra) != 2
        || (strcmp (state, "down") != 0 && strcmp (state, "up") != 0)) {
      snprintf (err, err_bytes, "--event '%s': node NODE down|up", ev->spec);
      return -1;
    }
    ev->cluster_event = strcmp (state, "down") == 0 ? SL_SIM_NODE_DOWN : SL_SIM_NODE_UP;
    ev->node = strdup (name);
    if (ev->node == NULL) {
      snprintf (err, err_bytes, "--event '%s': out of memory", ev->spec);
      return -1;
    }
    return 0;
  }
  size_t length = strcspn (word, " \t");
  if (length == 0) {
    snprintf (err, err_bytes, "--event '%s': missing COMMAND after AT: (storlab-sim takes:"
              " %s)", ev->spec, sim_commands);
    return -1;
  }
  if ((length == 6 && strncmp (word, "status", 6) == 0)
      || (length == 9 && strncmp (word, "power-cut", 9) == 0)) {
    snprintf (err, err_bytes, "--event '%s': '%.*s' is for the raid plugin's live control"
              " socket only; storlab-sim takes: %s", ev->spec, (int) length, word, sim_commands);
    return -1;
  }
  if (!sim_takes (word, length)) {
    snprintf (err, err_bytes, "--event '%s': unknown command '%.*s' (storlab-sim takes: %s;"
              " a cluster: snapshot, snapshot delete, node NODE down|up)", ev->spec,
              (int) length, word, sim_commands);
    return -1;
  }
  char reply[SL_RAID_COMMAND_LINE_BYTES];
  if (sl_raid_command_parse (word, &ev->parsed, reply, sizeof reply) != 0) {
    const char *why = strncmp (reply, "error ", 6) == 0 ? reply + 6 : reply;
    char *known = strstr (reply, " (known: ");
    if (known != NULL)
      *known = '\0';           /* the plugin's list names status and power-cut */
    snprintf (err, err_bytes, "--event '%s': %s%s%s%s", ev->spec, why,
              known ? " (storlab-sim takes: " : "", known ? sim_commands : "", known ? ")" : "");
    return -1;
  }
  return 0;
}

int
sl_sim_events_add (struct sl_sim_events *evs, const char *spec, char *err, size_t err_bytes)
{
  const char *colon = strchr (spec, ':');
  if (colon == NULL) {
    snprintf (err, err_bytes, "--event '%s': expected AT:COMMAND, e.g. 10s:battery failed",
              spec);
    return -1;
  }
  struct sl_sim_event *bigger = realloc (evs->items, (evs->count + 1) * sizeof *bigger);
  if (bigger == NULL) {
    snprintf (err, err_bytes, "--event '%s': out of memory", spec);
    return -1;
  }
  evs->items = bigger;
  struct sl_sim_event *ev = &evs->items[evs->count];
  memset (ev, 0, sizeof *ev);
  ev->spec = strdup (spec);
  ev->command = trimmed_copy (colon + 1, strlen (colon + 1));
  char *at = trimmed_copy (spec, (size_t) (colon - spec));
  evs->count++;                 /* owned from here, freed with the rest */
  if (ev->spec == NULL || ev->command == NULL || at == NULL) {
    free (at);
    snprintf (err, err_bytes, "--event '%s': out of memory", spec);
    return -1;
  }
  const char *why;
  int rc = sl_job_parse_time_ns (at, &ev->at_ns, &why);
  if (rc != 0)
    snprintf (err, err_bytes, "--event '%s': AT '%s': %s", spec, at, why);
  free (at);
  if (rc != 0)
    return -1;
  return parse_command (ev, err, err_bytes);
}

static double
seconds (uint64_t ns)
{
  return (double) ns / 1e9;
}

int
sl_sim_events_check_length (const struct sl_sim_events *evs, uint64_t measured_ns,
                            char *err, size_t err_bytes)
{
  for (size_t i = 0; i < evs->count; i++)
    if (evs->items[i].at_ns > measured_ns) {
      snprintf (err, err_bytes, "--event '%s': at %.9g s, beyond the end of the run (the"
                " measured phase lasts %.9g s)", evs->items[i].spec,
                seconds (evs->items[i].at_ns), seconds (measured_ns));
      return -1;
    }
  return 0;
}

static void
run_event (struct sl_engine *e, void *arg, uint64_t index)
{
  struct sl_sim_events *evs = arg;
  struct sl_sim_event *ev = &evs->items[index];
  if (evs->failed)
    return;
  ev->done = true;
  ev->done_ns = sl_engine_now_ns (e);
  if (ev->cluster_event) {
    char why[256];
    int rc = ev->node
      ? sl_cluster_node_event (evs->cluster, ev->node, ev->cluster_event == SL_SIM_NODE_DOWN,
                               why, sizeof why)
      : sl_cluster_snapshot_event (evs->cluster, ev->cluster_event == SL_SIM_SNAPSHOT_TAKE, why,
                                   sizeof why);
    if (rc != 0) {
      snprintf (evs->error, sizeof evs->error, "--event '%s': refused at %.9g s: %s", ev->spec,
                seconds (ev->at_ns), why);
      evs->failed = true;
      return;
    }
    snprintf (ev->reply, sizeof ev->reply, "ok");
    return;
  }
  if (sl_raid_command_execute (e, &ev->parsed, ev->reply, sizeof ev->reply) != 0) {
    /* a scenario the model refuses (no such member, nothing to replace)
     * would make every later figure meaningless: stop the run */
    const char *why = strncmp (ev->reply, "error ", 6) == 0 ? ev->reply + 6 : ev->reply;
    snprintf (evs->error, sizeof evs->error, "--event '%s': refused at %.9g s: %s",
              ev->spec, seconds (ev->at_ns), why);
    evs->failed = true;
  }
}

int
sl_sim_events_check_kind (const struct sl_sim_events *evs, bool cluster, char *err,
                          size_t err_bytes)
{
  for (size_t i = 0; i < evs->count; i++)
    if ((evs->items[i].cluster_event != 0) != cluster) {
      snprintf (err, err_bytes, cluster
                ? "--event '%s': a cluster takes its own events only (snapshot, snapshot "
                "delete, node NODE down|up)"
                : "--event '%s': snapshot and node events are a cluster's (storlab-sim cluster)",
                evs->items[i].spec);
      return -1;
    }
  return 0;
}

void
sl_sim_events_schedule (struct sl_sim_events *evs, struct sl_engine *e, uint64_t phase_start_ns)
{
  /* scheduled before any I/O, so an event runs before completions due at
   * the same instant (the engine keeps same-time events in order) */
  for (size_t i = 0; i < evs->count; i++)
    sl_engine_schedule (e, phase_start_ns + evs->items[i].at_ns, run_event, evs, i);
}

int
sl_sim_events_check_run (const struct sl_sim_events *evs, uint64_t phase_start_ns,
                         uint64_t measured_ns, char *err, size_t err_bytes)
{
  if (evs->failed) {
    snprintf (err, err_bytes, "%s", evs->error);
    return -1;
  }
  for (size_t i = 0; i < evs->count; i++) {
    const struct sl_sim_event *ev = &evs->items[i];
    if (!ev->done || ev->done_ns > phase_start_ns + measured_ns) {
      snprintf (err, err_bytes, "--event '%s': at %.9g s, beyond the end of the run (the"
                " measured phase lasted %.9g s)", ev->spec, seconds (ev->at_ns),
                seconds (measured_ns));
      return -1;
    }
  }
  return 0;
}

void
sl_sim_events_free (struct sl_sim_events *evs)
{
  for (size_t i = 0; i < evs->count; i++) {
    free (evs->items[i].spec);
    free (evs->items[i].command);
    free (evs->items[i].node);
  }
  free (evs->items);
  evs->items = NULL;
  evs->count = 0;
}
