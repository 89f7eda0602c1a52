#!/bin/sh
# A component of a workload volume's storage policy held on this node: the
# LV storlab/c-HOME-VOLUME (a copy, or a RAID-5/6 piece), under dm-integrity
# when the policy checksums, exported over NVMe/TCP as NQN unless the
# volume's home is this node ("-").
#   component.sh HOME VOLUME SIZE_MIB CHECKSUM NQN|- [PLACEMENT]   (CHECKSUM: 0 or 1;
#                PLACEMENT: lib.sh new_lv's, default -)
# dm-integrity runs in bitmap mode (no journal: the data is written once,
# as a hyperconverged cluster's checksums cost no second write) with crc32c
# per 4 KiB block; it is set up with dmsetup alone, as the kernel's
# dm-integrity.rst says: a zeroed superblock is formatted by the first
# load, whose status then gives the data sectors the device provides.
# A new component is written with zeros once, through dm-integrity when
# there, so every tag is valid and the copies (or data and parity) agree
# before md is created over them with --assume-clean. A node that came back
# keeps its component's data and reopens it.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -eq 5 ] || [ $# -eq 6 ] || die "usage: component.sh HOME VOLUME SIZE_MIB CHECKSUM NQN|- [PLACEMENT]"
home=$1 volume=$2 size_mib=$3 checksum=$4 nqn=$5 placement=${6:--}
name=c-$home-$volume
lv=/dev/storlab/$name
new=0
if ! lvs "storlab/$name" >/dev/null 2>&1; then
    # -Zy zeroes the first 4 KiB: dm-integrity's superblock, unformatted
    new_lv "$name" "$size_mib" y "$placement"
    new=1
fi
device=$lv
if [ "$checksum" = 1 ]; then
    need_modules dm_integrity crc32c_generic
    device=/dev/mapper/i-$name
    if [ ! -e "$device" ]; then
        options="2 block_size:4096 internal_hash:crc32c"
        run dmsetup create --noudevsync "i-$name" --table "0 8 integrity $lv 0 4 B $options"
        # status: mismatches, provided data sectors, recalculation point
        # shellcheck disable=SC2046
        set -- $(dmsetup status "i-$name")
        provided=$5
        run dmsetup remove --noudevsync "i-$name"
        run dmsetup create --noudevsync "i-$name" --table "0 $provided integrity $lv 0 4 B $options"
    fi
    # Without udev, dmsetup leaves the /dev/mapper node to us.
    [ -b "$device" ] || run dmsetup mknodes "i-$name"
fi
if [ "$new" = 1 ]; then
    bytes=$(blockdev --getsize64 "$device") || die "$device: no size"
    # whole MiBs, then the tail in 4 KiB blocks (a checksummed device's
    # size is whole blocks, not MiBs): a block never written reads as a
    # checksum error (mdadm and blkid probe a device's end)
    tail=$((bytes % 1048576))
    run fio --name=zero --filename="$device" --rw=write --bs=1M --zero_buffers \
        --size=$((bytes - tail)) --ioengine=libaio --direct=1 --iodepth=4 --output-format=terse
    [ "$tail" = 0 ] || run fio --name=zero-tail --filename="$device" --rw=write --bs=4k \
        --zero_buffers --offset=$((bytes - tail)) --size="$tail" --ioengine=libaio --direct=1 \
        --iodepth=4 --output-format=terse
fi
[ "$nqn" = - ] || nvmet_export "$nqn" "$device" >/dev/null
echo "device $device"
