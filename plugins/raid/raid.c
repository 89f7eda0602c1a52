/* nbdkit-raid-plugin — a hardware RAID controller with a battery-backed
 * write cache over member drives.  The model lives in emulator/raid/;
 * this file names the kind, gives every member and LUN its stats record,
 * serves the LUNs as export names (raid_lun.c) and runs the live control
 * socket (raid_ctl.c). */
#define _GNU_SOURCE
#include "common/plugin_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "core/store.h"
#include "raid/raid.h"
#include "raid_ctl.h"
#include "raid_help.h"
#include "raid_lun.h"

/* ctl=, lun= and the running control thread (the plugin's own state). */
static struct {
  char *ctl_path;
  FILE *events;                /* the event log, until the control thread takes it */
  struct raid_ctl *ctl;
  /* No LUNs: one export, the whole array, under any name (as ever). */
  struct raid_lun_table luns;
  struct storlab_plugin_window lun_window[RAID_LUN_MAX];
  unsigned lun_windows_initialised;
  struct sl_device_stats *private_lun_stats;   /* without stats= */
} raid;

static unsigned
member_count (const struct sl_model *model)
{
  return sl_raid_model_is (model) ? sl_raid_member_count (model) : 0;
}

/* Records: the controller (front end), its members, then one per LUN. */
static unsigned
raid_extra_stats_records (const struct sl_model *model)
{
  return member_count (model) + raid.luns.count;
}

static void
init_lun_record (struct raid_lun *lun, struct sl_device_stats *record)
{
  char name[SL_STATS_NAME_BYTES];
  snprintf (name, sizeof name, "lun:%s", lun->name);
  sl_device_stats_init (record, name, "lun", lun->size_bytes, 0);
  lun->stats = record;
}

static int
raid_use_stats_records (struct sl_model *model, struct sl_stats_file *file,
                        char *err, size_t err_bytes)
{
  for (unsigned i = 0; i < member_count (model); i++)
    if (sl_raid_use_member_stats (model, i, sl_stats_file_record (file, 1 + i)) == -1) {
      snprintf (err, err_bytes, "member %u: cannot use stats record %u", i, 1 + i);
      return -1;
    }
  unsigned first_lun_record = 1 + member_count (model);
  for (unsigned i = 0; i < raid.luns.count; i++)
    init_lun_record (&raid.luns.lun[i], sl_stats_file_record (file, first_lun_record + i));
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
  for (unsigned i = 0; i < raid.lun_windows_initialised; i++)
    storlab_plugin_window_destroy (&raid.lun_window[i]);
  free (raid.private_lun_stats);
  free (raid.ctl_path);
  if (raid.events)
    fclose (raid.events);
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
  if (strcmp (key, "lun") == 0) {
    char err[512];
    if (raid_lun_table_add (&raid.luns, value, err, sizeof err) == -1) {
      nbdkit_error ("%s", err);
      return -1;
    }
    return 0;
  }
  return storlab_plugin_config (key, value);
}

/* Lays the LUNs out in the array and gives each its window (and a stats
 * record of its own when there is no stats file to hold one). */
static int
set_up_luns (void)
{
  if (raid.luns.count == 0)
    return 0;
  char err[512];
  const struct sl_raid_config *config = storlab_plugin_device_config ();
  uint64_t capacity_bytes = sl_store_size_bytes (storlab_plugin_store ());
  if (raid_lun_table_carve (&raid.luns, capacity_bytes, config->stripe_bytes,
                            err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  if (storlab_plugin_stats_path () == NULL) {
    raid.private_lun_stats = calloc (raid.luns.count, sizeof *raid.private_lun_stats);
    if (raid.private_lun_stats == NULL) {
      nbdkit_error ("out of memory");
      return -1;
    }
    for (unsigned i = 0; i < raid.luns.count; i++)
      init_lun_record (&raid.luns.lun[i], &raid.private_lun_stats[i]);
  }
  for (unsigned i = 0; i < raid.luns.count; i++) {
    const struct raid_lun *lun = &raid.luns.lun[i];
    if (storlab_plugin_window_init (&raid.lun_window[i], lun->offset_bytes, lun->size_bytes,
                                    lun->stats) == -1) {
      nbdkit_error ("lun=%s: %m", lun->name);
      return -1;
    }
    raid.lun_windows_initialised++;
  }
  return 0;
}

/* False when a timing key replaced the controller by a fixed latency. */
static bool
serves_the_controller_model (void)
{
  struct sl_raid_status status;
  char err[256];
  return sl_raid_control_status (storlab_plugin_engine (), &status, err, sizeof err) == 0;
}

static int
raid_config_complete (void)
{
  if (storlab_plugin_config_complete () == -1 || set_up_luns () == -1)
    return -1;
  if (raid.ctl_path && !serves_the_controller_model ()) {
    nbdkit_error ("ctl=%s: timing=off and fixed-latency-us= replace the controller by a"
                  " fixed latency: no battery, cache or members to control (drop ctl= or"
                  " the timing key)", raid.ctl_path);
    return -1;
  }
  char err[512];
  if (raid.ctl_path && raid_ctl_check_path (raid.ctl_path, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  const char *stats = storlab_plugin_stats_path ();
  if (stats) {
    char *events_path;
    if (asprintf (&events_path, "%s.events", stats) < 0) {
      nbdkit_error ("out of memory");
      return -1;
    }
    raid.events = raid_ctl_open_event_log (events_path, err, sizeof err);
    free (events_path);
    if (raid.events == NULL) {
      nbdkit_error ("stats=%s: %s", stats, err);
      return -1;
    }
  }
  return 0;
}

static void
raid_dump_plugin (void)
{
  storlab_plugin_dump_plugin ();
  printf ("storlab_key_ctl=PATH\n");
  printf ("storlab_key_lun=NAME:SIZE\n");
  printf ("storlab_ctl_commands=battery ok|learning|failed|absent; policy write-back|"
          "write-through|forced-write-back; fail-member N; replace-member N; power-cut; "
          "status [LUN]\n");
}

static int
raid_after_fork (void)
{
  if (storlab_plugin_after_fork () == -1)
    return -1;
  char err[512];
  raid.ctl = raid_ctl_start (raid.ctl_path, raid.events, storlab_plugin_engine (),
                             storlab_plugin_store (), &raid.luns, err, sizeof err);
  raid.events = NULL;          /* the controller's now (closed even on failure) */
  if (raid.ctl == NULL) {
    nbdkit_error ("%s", err);
    return -1;
  }
  return 0;
}

/* With LUNs the export list is theirs and the first is the default. */
static int
raid_list_exports (int readonly, int is_tls, struct nbdkit_exports *exports)
{
  (void) readonly;
  (void) is_tls;
  if (raid.luns.count == 0)
    return nbdkit_use_default_export (exports);
  for (unsigned i = 0; i < raid.luns.count; i++) {
    char description[96];
    snprintf (description, sizeof description, "raid LUN %s: %llu bytes",
              raid.luns.lun[i].name, (unsigned long long) raid.luns.lun[i].size_bytes);
    if (nbdkit_add_export (exports, raid.luns.lun[i].name, description) == -1)
      return -1;
  }
  return 0;
}

static const char *
raid_default_export (int readonly, int is_tls)
{
  (void) readonly;
  (void) is_tls;
  return raid.luns.count ? raid.luns.lun[0].name : "";
}

static void *
raid_open (int readonly)
{
  if (raid.luns.count == 0)
    return storlab_plugin_open (readonly);
  const char *name = nbdkit_export_name ();
  if (name == NULL)
    return NULL;
  if (name[0] == '\0')
    name = raid.luns.lun[0].name;
  struct raid_lun *lun = raid_lun_find (&raid.luns, name);
  if (lun == NULL) {
    /* The name is the client's: quote a printable prefix of it only. */
    char shown[65];
    size_t n = 0;
    for (; name[n] && n < sizeof shown - 1; n++)
      shown[n] = (name[n] >= 0x20 && name[n] < 0x7f) ? name[n] : '?';
    shown[n] = '\0';
    char known[RAID_LUN_MAX * (RAID_LUN_NAME_MAX + 2) + 8];
    raid_lun_names (&raid.luns, known, sizeof known);
    nbdkit_error ("export '%s%s': no such LUN (known: %s)", shown, name[n] ? "..." : "",
                  known);
    return NULL;
  }
  return storlab_plugin_open_window (&raid.lun_window[lun - raid.luns.lun]);
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
                 "\nctl=PATH             control socket (mode 0600): storlab ctl PATH COMMAND"
                 "\nlun=NAME:SIZE        a LUN (export NAME) of SIZE bytes; repeat, in order",
  .magic_config_key = "preset",
  .dump_plugin = raid_dump_plugin,
  .after_fork = raid_after_fork,
  .list_exports = raid_list_exports,
  .default_export = raid_default_export,
  .open = raid_open,
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
