/* test_raid_command.c — the raid control command language shared by the
 * plugin's control socket and storlab-sim --event: every parse error reply,
 * and commands carried out on a virtual-time raid engine. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/engine.h"
#include "device/device.h"
#include "raid/raid.h"
#include "raid/raid_command.h"
#include "test_device_builder.h"

#define REPLY_BYTES 512

static void
expect_parse_error (const char *line, const char *reply_prefix)
{
  struct sl_raid_command cmd;
  char reply[REPLY_BYTES] = "";
  assert_int_equal (sl_raid_command_parse (line, &cmd, reply, sizeof reply), -1);
  if (strncmp (reply, reply_prefix, strlen (reply_prefix)) != 0)
    fail_msg ("'%s' -> '%s', want a reply starting '%s'", line, reply, reply_prefix);
}

static void
test_parse_errors (void **state)
{
  (void) state;
  expect_parse_error ("", "error empty command (known: battery ok|");
  expect_parse_error ("  \t", "error empty command");
  expect_parse_error ("battery ok now", "error battery: unexpected argument 'now'");
  expect_parse_error ("battery", "error battery: missing argument (known: ");
  expect_parse_error ("status now", "error status: takes no argument");
  expect_parse_error ("frob 1", "error frob: takes no argument");
  expect_parse_error ("frob", "error unknown command 'frob' (known: ");
  expect_parse_error ("battery dead", "error battery dead: unknown state (ok, learning, failed, absent)");
  expect_parse_error ("policy fast", "error policy fast: unknown policy (write-back, write-through, forced-write-back)");
  expect_parse_error ("fail-member x", "error fail-member x: not a member number");
  expect_parse_error ("replace-member -1", "error replace-member -1: not a member number");
  expect_parse_error ("fail-member 3x", "error fail-member 3x: not a member number");
}

static void
test_parse_values (void **state)
{
  (void) state;
  struct sl_raid_command cmd;
  char reply[REPLY_BYTES];
  assert_int_equal (sl_raid_command_parse (" battery  learning\n", &cmd, reply, sizeof reply), 0);
  assert_int_equal (cmd.kind, SL_RAID_COMMAND_BATTERY);
  assert_int_equal (cmd.battery, SL_RAID_BATTERY_LEARNING);
  assert_string_equal (cmd.arg, "learning");
  assert_int_equal (sl_raid_command_parse ("policy forced-write-back", &cmd, reply, sizeof reply), 0);
  assert_int_equal (cmd.kind, SL_RAID_COMMAND_POLICY);
  assert_int_equal (cmd.policy, SL_RAID_FORCED_WRITE_BACK);
  assert_int_equal (sl_raid_command_parse ("replace-member 12", &cmd, reply, sizeof reply), 0);
  assert_int_equal (cmd.kind, SL_RAID_COMMAND_REPLACE_MEMBER);
  assert_int_equal (cmd.member, 12);
  assert_int_equal (sl_raid_command_parse ("power-cut", &cmd, reply, sizeof reply), 0);
  assert_int_equal (cmd.kind, SL_RAID_COMMAND_POWER_CUT);
  assert_string_equal (cmd.arg, "");
  assert_int_equal (sl_raid_command_parse ("status", &cmd, reply, sizeof reply), 0);
  assert_int_equal (cmd.kind, SL_RAID_COMMAND_STATUS);
}

static struct sl_engine *
raid_engine (struct sl_device_stats *stats)
{
  return test_engine_new ("raid", "level=10 members=4 member-size=1G", stats);
}

static void
expect_run (struct sl_engine *e, const char *line, int rc, const char *reply_want)
{
  char reply[REPLY_BYTES] = "";
  int got = sl_raid_command_run (e, line, reply, sizeof reply);
  if (got != rc || strncmp (reply, reply_want, strlen (reply_want)) != 0)
    fail_msg ("'%s' -> %d '%s', want %d '%s...'", line, got, reply, rc, reply_want);
}

static void
test_execute (void **state)
{
  (void) state;
  struct sl_device_stats *stats = calloc (1, sizeof *stats);
  struct sl_engine *e = raid_engine (stats);
  struct sl_raid_status s;
  char err[256];

  expect_run (e, "battery failed", 0, "ok battery failed; write-back off");
  assert_int_equal (sl_raid_control_status (e, &s, err, sizeof err), 0);
  assert_int_equal (s.battery, SL_RAID_BATTERY_FAILED);
  assert_false (s.write_back_effective);
  expect_run (e, "policy forced-write-back", 0, "ok policy forced-write-back; write-back on");
  expect_run (e, "policy write-through", 0, "ok policy write-through; write-back off");
  expect_run (e, "fail-member 2", 0, "ok fail-member 2; write-back off");
  assert_int_equal (sl_raid_control_status (e, &s, err, sizeof err), 0);
  assert_int_equal (s.member_state[2], SL_RAID_MEMBER_FAILED);
  expect_run (e, "replace-member 2", 0, "ok replace-member 2; write-back off");
  expect_run (e, "fail-member 9", -1, "error fail-member 9: ");
  /* the plugin's commands: parsed, but not carried out here */
  expect_run (e, "status", -1, "error status: ");
  expect_run (e, "power-cut", -1, "error power-cut: ");
  sl_engine_free (e);

  /* a device that is not a raid */
  e = sl_engine_new (SL_CLOCK_VIRTUAL, sl_fixed_model_new (1 << 20, 1000), stats, "plain");
  expect_run (e, "battery ok", -1, "error battery ok: not a raid device");
  sl_engine_free (e);
  free (stats);
}

int
main (void)
{
  const struct CMUnitTest tests[] = {
    cmocka_unit_test (test_parse_errors),
    cmocka_unit_test (test_parse_values),
    cmocka_unit_test (test_execute),
  };
  return cmocka_run_group_tests (tests, NULL, NULL);
}
