/* raid_ctl.h — the raid plugin's live control: a unix socket taking
 * one-line commands (battery, policy, fail/replace member, power cut,
 * status, status LUN), served by one thread that also keeps the plugin's view of the
 * controller current (write-back on/off, destaged data durable) and appends
 * the controller's events, timestamped, to the event log. */
#ifndef STORLAB_RAID_CTL_H
#define STORLAB_RAID_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct sl_engine;
struct sl_store;
struct raid_ctl;
struct raid_lun_table;

/* The event log beside the stats file (PATH.events): an owned file
 * (owned_file.h), emptied.  Opened at configuration so a bad path stops
 * nbdkit before it serves.  NULL with a line in err. */
FILE *raid_ctl_open_event_log (const char *path, char *err, size_t err_bytes);

/* socket_path NULL: no socket, the thread still tracks the controller.
 * events NULL: no event log; else the controller owns it (closes it).  luns (NULL: none) are the exports
 * `status` lists and `status LUN` shows; they outlive the control thread.
 * NULL with a line in err on failure. */
struct raid_ctl *raid_ctl_start (const char *socket_path, FILE *events,
                                 struct sl_engine *engine, struct sl_store *store,
                                 const struct raid_lun_table *luns,
                                 char *err, size_t err_bytes);
/* Can a controller listen at path?  Refuses what is not a socket and a
 * socket another running device serves (a stale one is fine).  Called at
 * configuration, before nbdkit serves anything.  0, or -1 with a line in
 * err. */
int raid_ctl_check_path (const char *path, char *err, size_t err_bytes);
/* Stops the thread, removes the socket. */
void raid_ctl_stop (struct raid_ctl *ctl);
/* Are writes volatile now: cached by the controller (write-back in
 * effect), or by members whose own write cache is on? */
bool raid_ctl_write_back (const struct raid_ctl *ctl);

/* One command line -> one reply line ("ok ..." or "error ..."), no newline. */
void raid_ctl_command (struct raid_ctl *ctl, const char *line, char *reply, size_t reply_bytes);

#endif
