/* raid_command.h — the raid controller's one-line control commands, shared
 * by the raid plugin's control socket (plugins/raid_ctl.c) and
 * storlab-sim's --event, so both speak exactly the same language:
 *
 *   battery ok|learning|failed|absent
 *   policy write-back|write-through|forced-write-back
 *   fail-member N
 *   replace-member N
 *   power-cut, status     parsed here, carried out by the plugin (which owns
 *                         the data store and formats the status line)
 *
 * Replies are one line, "ok ..." or "error ...", without a newline.
 */
#ifndef STORLAB_RAID_COMMAND_H
#define STORLAB_RAID_COMMAND_H

#include <stddef.h>

#include "raid.h"

#define SL_RAID_COMMAND_LINE_BYTES 512u

enum sl_raid_command_kind {
  SL_RAID_COMMAND_BATTERY,
  SL_RAID_COMMAND_POLICY,
  SL_RAID_COMMAND_FAIL_MEMBER,
  SL_RAID_COMMAND_REPLACE_MEMBER,
  SL_RAID_COMMAND_POWER_CUT,
  SL_RAID_COMMAND_STATUS,
};

struct sl_raid_command {
  enum sl_raid_command_kind kind;
  char name[SL_RAID_COMMAND_LINE_BYTES];       /* the command word */
  char arg[SL_RAID_COMMAND_LINE_BYTES];        /* "" when it takes none */
  enum sl_raid_battery battery;                /* SL_RAID_COMMAND_BATTERY */
  enum sl_raid_cache_policy policy;            /* SL_RAID_COMMAND_POLICY */
  unsigned member;                             /* fail-/replace-member */
};

/* Parses one command line (whitespace-separated words; the line is cut at
 * SL_RAID_COMMAND_LINE_BYTES - 1).  0, or -1 with the "error ..." reply. */
int sl_raid_command_parse (const char *line, struct sl_raid_command *cmd,
                           char *reply, size_t reply_bytes);

/* Carries out a parsed battery, policy, fail-member or replace-member
 * command on the engine's raid controller.  0 with "ok CMD ARG; write-back
 * on|off" (whether writes are cached right after), or -1 with "error ...".
 * power-cut and status are the caller's: -1 with an error reply. */
int sl_raid_command_execute (struct sl_engine *e, const struct sl_raid_command *cmd,
                             char *reply, size_t reply_bytes);

/* Parse and execute in one call. */
int sl_raid_command_run (struct sl_engine *e, const char *line, char *reply,
                         size_t reply_bytes);

#endif
