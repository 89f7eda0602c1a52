#!/bin/sh
# The node's volume group "storlab" on its local volume (the RAID, the disk
# group, or a plain disk given by serial as serial:NAME).
#   volume-group.sh DEVICE|serial:NAME [CAPACITY_DISK...]
# Workload volumes and the replica volume are its logical volumes.
# With CAPACITY_DISKs (the disk group's, when volumes are striped over
# them: schema/capacity_layout.py), the group is made of each capacity
# disk's region of the disk group instead, one physical volume each:
# /dev/mapper/storlab-pv-NAME, a dm-linear map of the disk group's sectors
# that the capacity LV (dg/data, or dg/data_corig under the read cache)
# maps to that disk, less its first MiB: the disk group's own first
# sectors never carry the first region's PV label (LVM, which scans the
# disk group too, would see one PV twice). The cache tier stays in front of
# every region, so an LV's placement on them is its placement on the disks.
# The maps are rebuilt the same way when the node comes back.
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 1 ] || die "usage: volume-group.sh DEVICE|serial:NAME [CAPACITY_DISK...]"
case "$1" in
    serial:*) device=$(disks_by_serial "${1#serial:}") ;;
    *) device=$1 ;;
esac
shift
[ -b "$device" ] || die "$device is not a block device"
need_modules dm_mod
pvs=$device
if [ $# -gt 0 ]; then
    origin=dg-data
    dmsetup info dg-data_corig >/dev/null 2>&1 && origin=dg-data_corig
    segments=$(dmsetup table "$origin") || die "no capacity LV $origin under $device"
    pvs=
    for name in "$@"; do
        disk=$(disks_by_serial "$name")
        number=$(cat "/sys/class/block/${disk#/dev/}/dev")
        # each "START LENGTH linear MAJOR:MINOR OFFSET" segment on this
        # disk: the disk group's sectors START.. are the region's next
        # ones, the first MiB (2048 sectors) of the first left out
        table= at=0 skip=2048
        while read -r start length target source _; do
            [ "$target" = linear ] || die "$origin: a $target segment (a striped capacity LV?)"
            [ "$source" = "$number" ] || continue
            [ "$length" -gt "$skip" ] || die "$origin: a segment of $length sectors on $name"
            table="$table$at $((length - skip)) linear $device $((start + skip))\n"
            at=$((at + length - skip)) skip=0
        done <<EOF
$segments
EOF
        [ "$at" -gt 0 ] || die "capacity disk $name ($disk) holds none of $origin"
        pv=storlab-pv-$name
        if ! dmsetup info "$pv" >/dev/null 2>&1; then
            # shellcheck disable=SC2059
            printf "$table" | dmsetup create --noudevsync "$pv" >/dev/null 2>&1 ||
                die "dmsetup create $pv failed"
        fi
        [ -b "/dev/mapper/$pv" ] || run dmsetup mknodes "$pv"
        pvs="$pvs /dev/mapper/$pv"
    done
    pvs=${pvs# }
fi
if ! vgs storlab >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    run pvcreate -ff -y $pvs
    # shellcheck disable=SC2086
    run vgcreate -s 4m storlab $pvs
fi
run vgchange -ay storlab
echo "device $device"
for pv in $pvs; do
    [ "$pv" = "$device" ] || echo "region $pv"
done
echo "free_bytes $(vgs --noheadings --units b --nosuffix -o vg_free storlab | tr -d ' ')"
