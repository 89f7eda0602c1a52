#!/bin/sh
# The node's volume group "storlab" on its local volume (the RAID, the disk
# group, or a plain disk given by serial as serial:NAME).
#   volume-group.sh DEVICE|serial:NAME
# Workload volumes and the replica volume are its logical volumes.
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 1 ] || die "usage: volume-group.sh DEVICE|serial:NAME"
case "$1" in
    serial:*) device=$(disks_by_serial "${1#serial:}") ;;
    *) device=$1 ;;
esac
[ -b "$device" ] || die "$device is not a block device"
need_modules dm_mod
if ! vgs storlab >/dev/null 2>&1; then
    run pvcreate -ff -y "$device"
    run vgcreate -s 4m storlab "$device"
fi
run vgchange -ay storlab
echo "device $device"
echo "free_bytes $(vgs --noheadings --units b --nosuffix -o vg_free storlab | tr -d ' ')"
