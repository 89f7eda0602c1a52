/* nbdkit-raid-plugin — a hardware RAID controller with a battery-backed
 * write cache over member drives.  The model lives in emulator/raid*.c;
 * this file names the kind, gives every member its stats record and runs
 * the live control socket (raid_ctl.c). */
#define _GNU_SOURCE
#include "plugin_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raid.h"
#include "raid_ctl.h"
#include "raid_help.h"
#include "stats.h"

/* ctl= and the running control thread (the plugin's own state). */
static struct {
  char *ctl_path;
  char *events_path;
  struct raid_ctl *ctl;
} raid;

static unsigned
raid_extra_stats_records (const struct sl_model *model)
{
  return sl_raid_model_is (model) ? sl_raid_member_count (model) : 0;
}

static int
raid_use_stats_records (struct sl_model *model, struct sl_stats_file *file,
                        char *err, size_t err_bytes)
{
  if (!sl_raid_model_is (model))
    return 0;
  for (unsigned i = 0; i < sl_raid_member_count (model); i++)
    if (sl_raid_use_member_stats (model, i, sl_stats_file_record (file, 1 + i)) == -1) {
      snprintf (err, err_bytes, "member %u: cannot use stats record %u", i, 1 + i);
      return -1;
    }
  return 0;
}

/* A write is volatile while the controller caches it: lost by a power cut
 * unless the battery is ok (the control thread applies that to the store). */
static bool
raid_write_is_volatile (void)
{
  return raid.ctl && raid_ctl_write_back (raid.ctl);
}

static const struct storlab_plugin_hooks raid_hooks = {
  .extra_stats_records = raid_extra_stats_records,
  .use_stats_records = raid_use_stats_records,
  .write_is_volatile = raid_write_is_volatile,
};

static void
raid_load (void)
{
  storlab_plugin_load ("raid");
  storlab_plugin_set_hooks (&raid_hooks);
}

static void
raid_unload (void)
{
  /* The control thread uses the engine: stop it first. */
  raid_ctl_stop (raid.ctl);
  raid.ctl = NULL;
  storlab_plugin_unload ();
  free (raid.ctl_path);
  free (raid.events_path);
}

static int
raid_config (const char *key, const char *value)
{
  if (strcmp (key, "ctl") == 0) {
    free (raid.ctl_path);
    if ((raid.ctl_path = strdup (value)) == NULL) {
      nbdkit_error ("ctl=%s: out of memory", value);
      return -1;
    }
    return 0;
  }
  return storlab_plugin_config (key, value);
}

static int
raid_config_complete (void)
{
  if (storlab_plugin_config_complete () == -1)
    return -1;
  const char *stats = storlab_plugin_stats_path ();
  if (stats && asprintf (&raid.events_path, "%s.events", stats) < 0) {
    raid.events_path = NULL;
    nbdkit_error ("out of memory");
    return -1;
  }
  return 0;
}

static void
raid_dump_plugin (void)
{
  storlab_plugin_dump_plugin ();
  printf ("storlab_key_ctl=PATH\n");
  printf ("storlab_ctl_commands=battery ok|learning|failed|absent; policy write-back|"
          "write-through|forced-write-back; fail-member N; replace-member N; power-cut; status\n");
}

static int
raid_after_fork (void)
{
  if (storlab_plugin_after_fork () == -1)
    return -1;
  char err[512];
  raid.ctl = raid_ctl_start (raid.ctl_path, raid.events_path, storlab_plugin_engine (),
                             storlab_plugin_store (), err, sizeof err);
  if (raid.ctl == NULL) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

/* Member drives are disks (hdd presets): tell the client it is rotational. */
static int raid_is_rotational (void *handle) { (void) handle; return 1; }

static struct nbdkit_plugin plugin = {
  .name = "raid",
  .longname = "storlab RAID controller model",
  .version = "0.1.0",
  .description = "A RAID controller with a battery-backed write cache over modelled "
                 "member drives, in real time, with live control",
  .load = raid_load,
  .unload = raid_unload,
  .config = raid_config,
  .config_complete = raid_config_complete,
  .config_help = RAID_CONFIG_HELP
                 "\nctl=PATH             control socket (mode 0600): storlab ctl PATH COMMAND",
  .magic_config_key = "preset",
  .dump_plugin = raid_dump_plugin,
  .after_fork = raid_after_fork,
  .open = storlab_plugin_open,
  .get_size = storlab_plugin_get_size,
  .block_size = storlab_plugin_block_size,
  .is_rotational = raid_is_rotational,
  .can_multi_conn = storlab_plugin_can_multi_conn,
  .can_fua = storlab_plugin_can_fua,
  .can_flush = storlab_plugin_can_flush,
  .can_fast_zero = storlab_plugin_can_fast_zero,
  .pread = storlab_plugin_pread,
  .pwrite = storlab_plugin_pwrite,
  .flush = storlab_plugin_flush,
  .zero = storlab_plugin_zero,
};

/* Requests run concurrently: the controller queues them itself. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

NBDKIT_REGISTER_PLUGIN (plugin)
