/* presets.c — the device preset catalog: data only.
 *
 * Seek figures are checked against what the HDD seek curve can reach: with
 * seeks uniform over (start, end) cylinder pairs the mean distance is a
 * third of the stroke, so a linear curve averages t2t + (full - t2t)/3 and
 * a square-root curve t2t + 8/15 (full - t2t).  Every average below lies
 * between the two:
 *   sas10k-300g     0.3 + 7.5/3 = 2.80 <= 3.8  <= 0.3 + 0.533*7.5 = 4.30
 *   wd-xe-900g      0.3 + 7.2/3 = 2.70 <= 3.6  <= 0.3 + 0.533*7.2 = 4.14
 *   hgst-7k1000-1t  1.0 + 22/3  = 8.33 <= 12.0 <= 1.0 + 0.533*22  = 12.73
 *   sata7200-2t     1.0 + 17/3  = 6.67 <= 8.5  <= 1.0 + 0.533*17  = 10.07
 *
 * Capacities are the drives' LBA counts times 512 where known (IDEMA
 * LBA1-03: 97,696,368 + 1,953,504 x (GB - 50) sectors).
 */
#include "presets.h"

#include <string.h>

static const struct sl_preset catalog[] = {
  {
    .name = "sas10k-300g",
    .kind = "hdd",
    .summary = "300 GB 10,000 rpm 2.5-inch SAS 6 Gb/s drive (Seagate Savvio 10K class)",
    .params =
      "size=300000000000 rpm=10000 heads=4 zones=16 "
      "track-to-track-seek-ms=0.3 average-seek-ms=3.8 average-write-seek-ms=4.4 "
      "full-stroke-seek-ms=7.8 outer-mb-s=124 inner-mb-s=67 interface-mb-s=600 "
      "command-overhead-us=200 cache-size=16M cache-segments=16 read-ahead=512k "
      "write-cache=off ncq-depth=32 ncq-max-wait-ms=500 idle-destage-delay-ms=1",
    .source =
      "storlab reference devices.md (Savvio 10K class figures used by the seed "
      "studies): 10,000 rpm, average seek 3.8 read / 4.4 write ms, track-to-track "
      "0.30 ms, full stroke 7.8 ms (read), sustained 124 / 67 MB/s outer / inner, "
      "0.2 ms controller overhead, SAS 6 Gb/s; 120-150 random IOPS per disk",
    .fitted =
      "heads=4 and zones=16 assumed (not published); cache-size=16M not confirmed; "
      "cache-segments, read-ahead, ncq-depth, ncq-max-wait-ms and idle-destage-delay-ms "
      "are assumed firmware behaviour (the hdd model's defaults); write-cache=off is the "
      "usual enterprise SAS setting behind a RAID controller; size is 300 GB decimal",
  },
  {
    .name = "wd-xe-900g",
    .kind = "hdd",
    .summary = "WD Xe WD9001BKHG: 900 GB 10,000 rpm 2.5-inch SAS 6 Gb/s, 32 MB cache",
    .params =
      "size=900185481216 rpm=10000 heads=6 zones=16 "
      "track-to-track-seek-ms=0.3 average-seek-ms=3.6 average-write-seek-ms=4.2 "
      "full-stroke-seek-ms=7.5 outer-mb-s=204 inner-mb-s=110 interface-mb-s=600 "
      "command-overhead-us=200 cache-size=32M cache-segments=16 read-ahead=512k "
      "write-cache=off ncq-depth=32 ncq-max-wait-ms=500 idle-destage-delay-ms=1",
    .source =
      "StorageReview, \"WD Xe SAS Hard Drive Review\" (spec list): WD9001BKHG "
      "900 GB, SAS 6 Gb/s, 2.5-inch, 10,000 rpm, 32 MB cache, 204 MB/s maximum "
      "data transfer rate; storlab devices.md: average seek ~3.6-4 ms (unconfirmed)",
    .fitted =
      "seek figures not found in the sources searched: average 3.6 / 4.2 ms, "
      "track-to-track 0.3 ms and full stroke 7.5 ms are 10k 2.5-inch class values "
      "(cf. sas10k-300g), checked to fit the seek curve; inner-mb-s=110 assumed "
      "(~0.54 x outer, the Savvio 10K inner/outer ratio) since only the maximum "
      "rate is published; heads=6 and zones=16 assumed; command-overhead-us=200 "
      "as sas10k-300g; size from the IDEMA LBA count for 900 GB (1,758,174,768 "
      "sectors); cache-segments, read-ahead, ncq-*, idle-destage-delay-ms are the "
      "hdd model's assumed defaults; "
      "write-cache=off as for enterprise SAS",
  },
  {
    .name = "hgst-7k1000-1t",
    .kind = "hdd",
    .summary = "HGST Travelstar 7K1000 HTS721010A9E630: 1 TB 7,200 rpm 2.5-inch SATA 6 Gb/s, 4K physical sectors",
    .params =
      "size=1000204886016 rpm=7200 heads=4 zones=16 "
      "track-to-track-seek-ms=1 average-seek-ms=12 average-write-seek-ms=13 "
      "full-stroke-seek-ms=23 outer-mb-s=135 inner-mb-s=70 interface-mb-s=600 "
      "command-overhead-us=300 cache-size=32M cache-segments=16 read-ahead=512k "
      "write-cache=on ncq-depth=32 ncq-max-wait-ms=500 idle-destage-delay-ms=1",
    .source =
      "smartctl / CrystalDiskInfo reports of HGST HTS721010A9E630 (Travelstar "
      "7K1000): 1,000,204,886,016 bytes (1,953,525,168 sectors), 512 logical / "
      "4096 physical, 7200 rpm, 2.5-inch, SATA 6.0 Gb/s, NCQ depth 32, 32 MB "
      "buffer; storlab devices.md: average seek ~12 ms (weak source)",
    .fitted =
      "average seek 12 ms is the weak devices.md figure; write 13 ms, "
      "track-to-track 1 ms and full stroke 23 ms are 2.5-inch class values (the "
      "Travelstar 5K320 spec gives 12 / 13 ms average, 1.0 ms track-to-track, "
      "20 ms full stroke; full stroke raised to 23 ms so a 12 ms average fits the "
      "seek curve); outer-mb-s=135 and inner-mb-s=70 assumed for 500 GB 2.5-inch "
      "platters (no published rate found); heads=4 (two platters) and zones=16 "
      "assumed; command-overhead-us=300 assumed; write-cache=on is the ATA "
      "default; cache-segments, read-ahead, ncq-*, idle-destage-delay-ms: hdd model "
      "defaults (assumed)",
  },
  {
    .name = "sata7200-2t",
    .kind = "hdd",
    .summary = "2 TB 7,200 rpm 3.5-inch enterprise SATA 3 Gb/s drive (Seagate Constellation ES ST32000644NS class)",
    .params =
      "size=2000398934016 rpm=7200 heads=8 zones=16 "
      "track-to-track-seek-ms=1 average-seek-ms=8.5 average-write-seek-ms=9.5 "
      "full-stroke-seek-ms=18 outer-mb-s=140 inner-mb-s=70 interface-mb-s=300 "
      "command-overhead-us=300 cache-size=64M cache-segments=16 read-ahead=512k "
      "write-cache=on ncq-depth=32 ncq-max-wait-ms=500 idle-destage-delay-ms=1",
    .source =
      "Seagate Constellation ES Serial ATA Product Manual (100516232): "
      "ST32000644NS 3,907,029,168 sectors of 512 bytes, 7200 rpm, sustained data "
      "transfer rate 140 MB/s max, I/O data-transfer rate 300 MB/s; storlab "
      "devices.md: average seek 8.5 / 9.5 ms, track-to-track ~1.0 ms, full stroke "
      "~17-20 ms, inner ~70 MB/s",
    .fitted =
      "seek figures from devices.md, not re-confirmed (the manual's seek table was "
      "not retrievable); full stroke 18 ms chosen within 17-20; inner-mb-s=70 "
      "assumed (half the outer rate); cache-size=64M not confirmed; heads=8 (four "
      "500 GB platters) and zones=16 assumed; command-overhead-us=300 assumed; "
      "write-cache=on is the ATA default; cache-segments, read-ahead, "
      "ncq-*, idle-destage-delay-ms: hdd model defaults (assumed)",
  },
  {
    .name = "vsa-raid10-8x-sas10k",
    .kind = "raid",
    .summary = "VSA-like seed controller: RAID 10 of 8 x sas10k-300g behind a 512 MB battery-backed write cache",
    .params =
      "level=10 members=8 stripe-size=64k member-preset=sas10k-300g cache-size=512M "
      "cache-policy=write-back battery=ok destage-high-percent=80 destage-low-percent=16 "
      "destage-depth=64 idle-destage-delay-ms=100 read-ahead=0 queue-depth=256 "
      "command-overhead-us=10 rebuild-rate-mb-s=50 learn-period-ms=7776000000 "
      "learn-duration-ms=3600000",
    .source =
      "storlab reference devices.md (RAID controllers): MegaRAID 9200 class, 512 MB "
      "cache; write-back falls back to write-through when the battery is bad or "
      "learning; learn cycle about every 90 days; destage start 80 %, stop 16 %; "
      "the seed controller is RAID 1/0 of 8 x 300 GB 10k SAS",
    .fitted =
      "stripe-size=64k is MegaRAID's default strip; destage-depth, idle-destage-delay-ms, "
      "queue-depth, command-overhead-us (about 100k IOPS), rebuild-rate-mb-s and the "
      "1-hour learn duration are assumed firmware behaviour, not published figures",
  },
};

enum { catalog_count = sizeof catalog / sizeof catalog[0] };

size_t
sl_preset_count (void)
{
  return catalog_count;
}

const struct sl_preset *
sl_preset_at (size_t index)
{
  return index < catalog_count ? &catalog[index] : NULL;
}

const struct sl_preset *
sl_preset_find (const char *kind, const char *name)
{
  if (kind == NULL || name == NULL)
    return NULL;
  for (size_t i = 0; i < catalog_count; i++)
    if (strcmp (catalog[i].kind, kind) == 0 && strcmp (catalog[i].name, name) == 0)
      return &catalog[i];
  return NULL;
}

void
sl_preset_names (const char *kind, char *out, size_t out_bytes)
{
  if (out == NULL || out_bytes == 0)
    return;
  out[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < catalog_count; i++) {
    if (kind == NULL || strcmp (catalog[i].kind, kind) != 0)
      continue;
    const char *sep = used > 0 ? ", " : "";
    size_t need = strlen (sep) + strlen (catalog[i].name);
    if (used + need >= out_bytes)
      break;                   /* keep whole names only */
    memcpy (out + used, sep, strlen (sep));
    memcpy (out + used + strlen (sep), catalog[i].name, strlen (catalog[i].name));
    used += need;
    out[used] = '\0';
  }
}
