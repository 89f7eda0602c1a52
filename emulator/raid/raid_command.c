/* raid_command.c — one-line raid control commands (see raid_command.h).
 * The reply texts are the raid plugin's control-socket protocol: scripts
 * match them, so they change only together with the plugin's docs. */
#define _GNU_SOURCE
#include "raid_command.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"

static const char known_commands[] =
  "battery ok|learning|failed|absent, policy write-back|write-through|"
  "forced-write-back, fail-member N, replace-member N, power-cut, status";

static int
parse_member (const char *word, unsigned *out)
{
  char *end;
  if (word == NULL || *word < '0' || *word > '9')
    return -1;
  errno = 0;
  unsigned long v = strtoul (word, &end, 10);
  if (errno || *end || v > 1000000)
    return -1;
  *out = (unsigned) v;
  return 0;
}

static bool
takes_argument (const char *name)
{
  return !strcmp (name, "battery") || !strcmp (name, "policy")
         || !strcmp (name, "fail-member") || !strcmp (name, "replace-member");
}

int
sl_raid_command_parse (const char *line, struct sl_raid_command *cmd,
                       char *reply, size_t reply_bytes)
{
  char copy[SL_RAID_COMMAND_LINE_BYTES];
  snprintf (copy, sizeof copy, "%s", line);
  char *save = NULL;
  char *name = strtok_r (copy, " \t\r\n", &save);
  char *arg = name ? strtok_r (NULL, " \t\r\n", &save) : NULL;
  char *extra = arg ? strtok_r (NULL, " \t\r\n", &save) : NULL;

  memset (cmd, 0, sizeof *cmd);
  /* the checks run in this order so each reply names the first problem */
  if (name == NULL) {
    snprintf (reply, reply_bytes, "error empty command (known: %s)", known_commands);
    return -1;
  }
  if (extra) {
    snprintf (reply, reply_bytes, "error %s: unexpected argument '%s'", name, extra);
    return -1;
  }
  bool wants_arg = takes_argument (name);
  if (wants_arg && arg == NULL) {
    snprintf (reply, reply_bytes, "error %s: missing argument (known: %s)", name,
              known_commands);
    return -1;
  }
  if (!wants_arg && arg) {
    snprintf (reply, reply_bytes, "error %s: takes no argument", name);
    return -1;
  }
  snprintf (cmd->name, sizeof cmd->name, "%s", name);
  snprintf (cmd->arg, sizeof cmd->arg, "%s", arg ? arg : "");

  if (!strcmp (name, "status"))
    cmd->kind = SL_RAID_COMMAND_STATUS;
  else if (!strcmp (name, "power-cut"))
    cmd->kind = SL_RAID_COMMAND_POWER_CUT;
  else if (!strcmp (name, "battery")) {
    cmd->kind = SL_RAID_COMMAND_BATTERY;
    if (sl_raid_battery_parse (arg, &cmd->battery) == -1) {
      snprintf (reply, reply_bytes, "error battery %s: unknown state (ok, learning, failed, absent)", arg);
      return -1;
    }
  }
  else if (!strcmp (name, "policy")) {
    cmd->kind = SL_RAID_COMMAND_POLICY;
    if (sl_raid_policy_parse (arg, &cmd->policy) == -1) {
      snprintf (reply, reply_bytes, "error policy %s: unknown policy (write-back, "
                "write-through, forced-write-back)", arg);
      return -1;
    }
  }
  else if (!strcmp (name, "fail-member") || !strcmp (name, "replace-member")) {
    cmd->kind = name[0] == 'f' ? SL_RAID_COMMAND_FAIL_MEMBER : SL_RAID_COMMAND_REPLACE_MEMBER;
    if (parse_member (arg, &cmd->member) == -1) {
      snprintf (reply, reply_bytes, "error %s %s: not a member number", name, arg);
      return -1;
    }
  }
  else {
    snprintf (reply, reply_bytes, "error unknown command '%s' (known: %s)", name,
              known_commands);
    return -1;
  }
  return 0;
}

int
sl_raid_command_execute (struct sl_engine *e, const struct sl_raid_command *cmd,
                         char *reply, size_t reply_bytes)
{
  char err[256] = "";
  int rc;
  switch (cmd->kind) {
  case SL_RAID_COMMAND_BATTERY:
    rc = sl_raid_control_battery (e, cmd->battery, err, sizeof err);
    break;
  case SL_RAID_COMMAND_POLICY:
    rc = sl_raid_control_policy (e, cmd->policy, err, sizeof err);
    break;
  case SL_RAID_COMMAND_FAIL_MEMBER:
    rc = sl_raid_control_fail_member (e, cmd->member, err, sizeof err);
    break;
  case SL_RAID_COMMAND_REPLACE_MEMBER:
    rc = sl_raid_control_replace_member (e, cmd->member, err, sizeof err);
    break;
  default:
    snprintf (reply, reply_bytes, "error %s: not available here", cmd->name);
    return -1;
  }
  if (rc == -1) {
    snprintf (reply, reply_bytes, "error %s %s: %s", cmd->name, cmd->arg, err);
    return -1;
  }
  struct sl_raid_status status;
  bool write_back = sl_raid_control_status (e, &status, err, sizeof err) == 0
                    && status.write_back_effective;
  snprintf (reply, reply_bytes, "ok %s %s; write-back %s", cmd->name, cmd->arg,
            write_back ? "on" : "off");
  return 0;
}

int
sl_raid_command_run (struct sl_engine *e, const char *line, char *reply, size_t reply_bytes)
{
  struct sl_raid_command cmd;
  if (sl_raid_command_parse (line, &cmd, reply, reply_bytes) == -1)
    return -1;
  return sl_raid_command_execute (e, &cmd, reply, reply_bytes);
}
