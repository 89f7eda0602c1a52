/* nbdkit-hdd-plugin — a hard disk drive with datasheet timing.
 * The model lives in emulator/hdd/; this file only names the kind and
 * the NBD features a disk drive has (no trim: HDDs have nothing to unmap). */
#include "common/plugin_common.h"

#include "hdd_help.h"

static void hdd_load (void) { storlab_plugin_load ("hdd"); }

/* Tells the client (and through it a guest kernel) this is spinning media. */
static int hdd_is_rotational (void *handle) { (void) handle; return 1; }

static struct nbdkit_plugin plugin = {
  .name = "hdd",
  .longname = "storlab hard disk drive model",
  .version = "0.1.0",
  .description = "A hard disk drive: seeks, rotation, zones, drive cache and NCQ, in real time",
  .load = hdd_load,
  .unload = storlab_plugin_unload,
  .config = storlab_plugin_config,
  .config_complete = storlab_plugin_config_complete,
  .config_help = HDD_CONFIG_HELP,
  .magic_config_key = "preset",
  .dump_plugin = storlab_plugin_dump_plugin,
  .after_fork = storlab_plugin_after_fork,
  .open = storlab_plugin_open,
  .get_size = storlab_plugin_get_size,
  .block_size = storlab_plugin_block_size,
  .is_rotational = hdd_is_rotational,
  .can_multi_conn = storlab_plugin_can_multi_conn,
  .can_fua = storlab_plugin_can_fua,
  .can_flush = storlab_plugin_can_flush,
  .can_fast_zero = storlab_plugin_can_fast_zero,
  .pread = storlab_plugin_pread,
  .pwrite = storlab_plugin_pwrite,
  .flush = storlab_plugin_flush,
  .zero = storlab_plugin_zero,
};

/* Requests run concurrently: the drive queues and reorders them itself. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

NBDKIT_REGISTER_PLUGIN (plugin)
