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
  /* ---- SSDs ---- */
  {
    .name = "intel-s3700-400g",
    .kind = "ssd",
    .summary = "Intel SSD DC S3700 400 GB: SATA 6 Gb/s, 25 nm HET-MLC, power-loss protection",
    .params =
      "size=400088457216 channels=8 dies-per-channel=8 planes-per-die=2 page-size=8k "
      "pages-per-block=256 read-latency-us=50 program-latency-us=1300 erase-latency-ms=3 "
      "channel-mb-s=200 over-provisioning-pct=32 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=16M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=sata pcie-lanes=4 queue-depth=32 "
      "read-overhead-us=5.3 write-overhead-us=19.6 controller-mb-s=500",
    .source =
      "Intel SSD DC S3700 product specification (storlab devices.md): 4 KiB random "
      "75,000 read / 36,000 write IOPS at QD32 (steady state), 500 / 460 MB/s sequential, "
      "latency 50 / 65 us typical, power-loss protection, 10 DWPD; Tom's Hardware S3500 "
      "review endurance table: S3700 raw NAND 264 GB for 200 GB user (32 % over-"
      "provisioning), Intel 25 nm HET-MLC; size from the IDEMA LBA count for 400 GB",
    .fitted =
      "read-overhead-us=5.3 and controller-mb-s=500 fitted to 75,000 IOPS and 500 MB/s "
      "(firmware time + data path, serialised); write-overhead-us=19.6 fitted to 36,000 "
      "IOPS (the 128 KiB writes then take 282 us: 465 MB/s vs 460); NAND assumed "
      "(25 nm 64 Gbit MLC class: 64 dies on 8 channels, 8 KiB pages, 2 planes, 256 pages "
      "per block, tR 50 us, tPROG 1.3 ms, tBERS 3 ms, ONFI 2 200 MB/s); buffer-size=16M "
      "and the GC watermarks assumed",
  },
  {
    .name = "intel-s3500-800g",
    .kind = "ssd",
    .summary = "Intel SSD DC S3500 800 GB: SATA 6 Gb/s, 20 nm MLC, read-optimised, power-loss protection",
    .params =
      "size=800166076416 channels=8 dies-per-channel=8 planes-per-die=2 page-size=16k "
      "pages-per-block=256 read-latency-us=50 program-latency-us=1600 erase-latency-ms=3 "
      "channel-mb-s=200 over-provisioning-pct=10 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=16M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=sata pcie-lanes=4 queue-depth=32 "
      "read-overhead-us=6.7 write-overhead-us=80.4 controller-mb-s=622",
    .source =
      "storlab devices.md: ~75,000 read / ~11,500 write IOPS, ~500 / ~450 MB/s "
      "(unconfirmed for the 800 GB model), 50 / 65 us typical latency, power-loss "
      "protection; Tom's Hardware S3500 review: Intel 20 nm MLC, raw 528 GB for 480 GB "
      "user (10 % spare, quoted as 9 %); size from the IDEMA LBA count for 800 GB",
    .fitted =
      "read-overhead-us=6.7, write-overhead-us=80.4 and controller-mb-s=622 fitted to "
      "75,000 / 11,500 IOPS and 450 MB/s writes (the S3500's random writes are a "
      "firmware limit in this model: its NAND could take more; sequential reads then "
      "run at the SATA link, ~543 MB/s); NAND assumed (20 nm 128 Gbit MLC class: 64 dies "
      "on 8 channels, 16 KiB pages, 2 planes, 256 pages per block, tR 50 us, tPROG 1.6 "
      "ms); over-provisioning-pct=10 from the 480 GB model; buffer and watermarks assumed",
  },
  {
    .name = "intel-p3700-400g",
    .kind = "ssd",
    .summary = "Intel SSD DC P3700 400 GB: NVMe PCIe 3.0 x4, 20 nm HET-MLC, 18 channels, power-loss protection",
    .params =
      "size=400088457216 channels=18 dies-per-channel=4 planes-per-die=2 page-size=16k "
      "pages-per-block=256 read-latency-us=50 program-latency-us=2100 erase-latency-ms=3 "
      "channel-mb-s=400 over-provisioning-pct=37 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=64M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=nvme pcie-lanes=4 queue-depth=1024 "
      "read-overhead-us=0.76 write-overhead-us=11.9 controller-mb-s=2800",
    .source =
      "Intel SSD DC P3700 product specification (330566): 20 nm MLC, PCIe 3.0 x4 NVMe, "
      "family up to 2,800 / 2,000 MB/s and 460,000 / 175,000 IOPS, 20 / 20 us latency, "
      "10 DWPD, enhanced power-loss protection; Tom's Hardware P3700 review: at least "
      "450,000 read IOPS at every capacity; 400 GB model: ~75,000 write IOPS "
      "(devices.md, unconfirmed) and 2,700 / 1,080 MB/s (Intel's capacity table as "
      "recalled, not confirmed); the controller has 18 channels (Tom's Hardware SSD 750 "
      "review, same controller: 18 on the 1.2 TB model, 9 on the 400 GB one)",
    .fitted =
      "read-overhead-us=0.76 and controller-mb-s=2800 fitted to 450,000 IOPS and "
      "2,700 MB/s; write-overhead-us=11.9 fitted to 75,000 write IOPS; "
      "program-latency-us=2100 fitted so 72 dies write 1,080 MB/s; all 18 channels "
      "populated, dies per channel, pages, blocks, tR, channel rate assumed (20 nm HET-MLC "
      "class); "
      "over-provisioning-pct=37 assumes 512 GiB of NAND; buffer and watermarks assumed",
  },
  {
    .name = "micron-5100max-960g",
    .kind = "ssd",
    .summary = "Micron 5100 MAX 960 GB: SATA 6 Gb/s, 3D TLC, mixed-use (5 DWPD), power-loss protection",
    .params =
      "size=960197124096 channels=8 dies-per-channel=6 planes-per-die=2 page-size=16k "
      "pages-per-block=1536 read-latency-us=90 program-latency-us=3000 erase-latency-ms=5 "
      "channel-mb-s=400 over-provisioning-pct=129 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=16M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=sata pcie-lanes=4 queue-depth=32 "
      "read-overhead-us=3 write-overhead-us=6.7 controller-mb-s=600",
    .source =
      "Micron 5100 product brief via thessdguy.com and pcper.com / thessdreview.com "
      "reviews: 93,000 read / 74,000 write IOPS (steady state, QD32), 540 / 520 MB/s at "
      "128 KiB, 5 DWPD, 8.8 PB TBW (devices.md seed), Micron 32-layer 3D TLC, "
      "power-loss protection; size from the IDEMA LBA count for 960 GB",
    .fitted =
      "over-provisioning-pct=129 assumes the MAX 960 GB carries the NAND of the ECO "
      "1920 GB (same dies; the MAX trades capacity for endurance), so its random writes "
      "are controller-bound: write-overhead-us=6.7 with controller-mb-s=600 fitted to "
      "74,000 IOPS; read-overhead-us=3 assumed (reads are SATA-link bound); NAND as "
      "micron-5100eco-1920g (fitted there); buffer and watermarks assumed",
  },
  {
    .name = "micron-5100eco-1920g",
    .kind = "ssd",
    .summary = "Micron 5100 ECO 1920 GB: SATA 6 Gb/s, 3D TLC, read-intensive, power-loss protection",
    .params =
      "size=1920383410176 channels=8 dies-per-channel=6 planes-per-die=2 page-size=16k "
      "pages-per-block=1536 read-latency-us=90 program-latency-us=3000 erase-latency-ms=5 "
      "channel-mb-s=400 over-provisioning-pct=14.5 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=16M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=sata pcie-lanes=4 queue-depth=32 "
      "read-overhead-us=3 write-overhead-us=6.7 controller-mb-s=600",
    .source =
      "Micron 5100 product brief via thessdguy.com and pcper.com / thessdreview.com "
      "reviews: 93,000 read / 24,000 write IOPS steady state (devices.md seed; the "
      "product brief lists up to 31,000 for the largest ECO), 540 / 520 MB/s at 128 KiB, "
      "6.4 PB TBW (seed), Micron 32-layer 3D TLC, power-loss protection; size from the "
      "IDEMA LBA count for 1920 GB",
    .fitted =
      "program-latency-us=3000 fitted so that garbage collection at this spare area "
      "(write amplification ~5) brings steady random writes to 24,000 IOPS; "
      "over-provisioning-pct=14.5 assumes 2 TiB of NAND; 48 dies (8 x 6), 16 KiB pages, "
      "2 planes, 1536 pages per block, tR 90 us, 400 MB/s channels assumed (32-layer "
      "384 Gbit TLC class); controller figures as micron-5100max-960g",
  },
  {
    .name = "micron-7300pro-3840g",
    .kind = "ssd",
    .summary = "Micron 7300 PRO 3.84 TB: NVMe PCIe 3.0 x4 U.2, 96-layer 3D TLC, read-intensive",
    .params =
      "size=3840755982336 channels=8 dies-per-channel=8 planes-per-die=4 page-size=16k "
      "pages-per-block=1536 read-latency-us=60 program-latency-us=2100 erase-latency-ms=5 "
      "channel-mb-s=800 over-provisioning-pct=14.5 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=64M plp=on slc-cache-size=0 "
      "slc-program-latency-us=300 interface=nvme pcie-lanes=4 queue-depth=1024 "
      "read-overhead-us=0.57 write-overhead-us=5 controller-mb-s=3040",
    .source =
      "storlab devices.md (seed): 520,000 random read IOPS, 3,000 / 1,900 MB/s at "
      "128 KiB, NVMe PCIe 3.0 x4 U.2; inpact-hardware.com (7400 launch): 7300 U.2 at "
      "3,000 / 1,900 MB/s, 96- or 64-layer 3D TLC; random write IOPS and power-loss "
      "protection not confirmed (Micron's data-center NVMe drives have it); size from "
      "the IDEMA LBA count for 3840 GB",
    .fitted =
      "read-overhead-us=0.57 and controller-mb-s=3040 fitted to 520,000 IOPS and "
      "3,000 MB/s; program-latency-us=2100 fitted so 64 dies write 1,900 MB/s; "
      "write-overhead-us=5 assumed (random writes are then NAND- and GC-bound); "
      "over-provisioning-pct=14.5 assumes 4 TiB of NAND; 64 dies, 4 planes, 16 KiB "
      "pages, 1536 pages per block, tR 60 us, 800 MB/s channels assumed (96-layer "
      "512 Gbit TLC class); buffer and watermarks assumed",
  },
  {
    .name = "samsung-840evo-120g",
    .kind = "ssd",
    .summary = "Samsung SSD 840 EVO 120 GB: SATA 6 Gb/s, 19 nm TLC, 3 GB TurboWrite SLC cache, consumer (no PLP)",
    .params =
      "size=120034123776 channels=4 dies-per-channel=2 planes-per-die=2 page-size=8k "
      "pages-per-block=384 read-latency-us=55 program-latency-us=900 erase-latency-ms=5 "
      "channel-mb-s=400 over-provisioning-pct=7 gc-low-watermark-pct=2 "
      "gc-high-watermark-pct=4 buffer-size=4M plp=off slc-cache-size=3G "
      "slc-program-latency-us=280 interface=sata pcie-lanes=4 queue-depth=32 "
      "read-overhead-us=3.7 write-overhead-us=21.8 controller-mb-s=600",
    .source =
      "Samsung 840 EVO specifications (ocaholic.ch, thessdreview.com, AnandTech 840 EVO "
      "review): 120 GB: 540 / 410 MB/s, 94,000 / 35,000 IOPS (writes in the TurboWrite "
      "buffer), < 0.1 ms access time, 19 nm TLC, 8 dies (Tom's Hardware), TurboWrite SLC "
      "buffer 3 GB; the 840 (no TurboWrite) 120 GB writes 130 MB/s (thessdreview.com); "
      "128 GiB of NAND; size from the IDEMA LBA count for 120 GB",
    .fitted =
      "slc-program-latency-us=280 fitted to 410 MB/s into the SLC cache; "
      "program-latency-us=900 fitted to ~140 MB/s once it is full (the 840's 130 MB/s); "
      "write-overhead-us=21.8 fitted to 35,000 IOPS; read-latency-us=55 fitted so 8 dies "
      "keep up with 94,000 reads at QD32; read-overhead-us=3.7 assumed (reads are "
      "SATA-link bound); over-provisioning-pct=7: 128 GiB less 9 GB of TLC holding the "
      "SLC cache less 120 GB; 2 planes, 8 KiB pages, 384 pages per block, "
      "400 MB/s Toggle channels, buffer-size=4M assumed",
  },
  /* ---- RAID controllers ---- */
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
