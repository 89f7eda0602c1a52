#!/bin/sh
# The node's volume group "storlab" on its local volume (the RAID, the disk
# group, or a plain disk given by serial as serial:NAME).
#   volume-group.sh DEVICE|serial:NAME [CAPACITY_DISK...] [DEVICE CAPACITY_DISK...]...
# Workload volumes and the replica volume are its logical volumes.
# With CAPACITY_DISKs (a disk group's, when volumes are striped over them
# or the node has several disk groups: schema/capacity_layout.py), the
# group is made of each capacity disk's region of its disk group instead,
# one physical volume each: /dev/mapper/storlab-pv-NAME, a dm-linear map of
# the disk group's sectors that its capacity LV (dg/data, or dg/data_corig
# under the read cache; dg2/... under diskgroup2) maps to that disk, less
# its first MiB: the disk group's own first sectors never carry the first
# region's PV label (LVM, which scans the disk group too, would see one PV
# twice). The cache tier stays in front of every region, so an LV's
# placement on them is its placement on the disks. A node's further disk
# groups (each a word starting with /) come each with its own capacity
# disks. The maps are rebuilt the same way when the node comes back.
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 1 ] || die "usage: volume-group.sh DEVICE|serial:NAME [CAPACITY_DISK...] [DEVICE CAPACITY_DISK...]..."
need_modules dm_mod

# region GROUP NAME: capacity disk NAME's region of disk group GROUP
# (/dev/mapper/diskgroupN, whose capacity LV is dgN-data) as its own PV
region() {
    vg=dg${1#/dev/mapper/diskgroup}
    origin=$vg-data
    dmsetup info "$vg-data_corig" >/dev/null 2>&1 && origin=$vg-data_corig
    segments=$(dmsetup table "$origin") || die "no capacity LV $origin under $1"
    disk=$(disks_by_serial "$2") || exit 1
    number=$(cat "/sys/class/block/${disk#/dev/}/dev")
    # each "START LENGTH linear MAJOR:MINOR OFFSET" segment on this
    # disk: the disk group's sectors START.. are the region's next
    # ones, the first MiB (2048 sectors) of the first left out
    table= at=0 skip=2048
    while read -r start length target source _; do
        [ "$target" = linear ] || die "$origin: a $target segment (a striped capacity LV?)"
        [ "$source" = "$number" ] || continue
        [ "$length" -gt "$skip" ] || die "$origin: a segment of $length sectors on $2"
        table="$table$at $((length - skip)) linear $1 $((start + skip))\n"
        at=$((at + length - skip)) skip=0
    done <<EOF
$segments
EOF
    [ "$at" -gt 0 ] || die "capacity disk $2 ($disk) holds none of $origin"
    name=storlab-pv-$2
    if ! dmsetup info "$name" >/dev/null 2>&1; then
        # shellcheck disable=SC2059
        printf "$table" | dmsetup create --noudevsync "$name" >/dev/null 2>&1 ||
            die "dmsetup create $name failed"
    fi
    [ -b "/dev/mapper/$name" ] || run dmsetup mknodes "$name"
}

# The PVs: each local volume given, or its regions when it has some.
first= device= regions= pvs=
group_done() {
    [ -z "$device" ] || pvs="$pvs ${regions:-$device}"
}
for word in "$@"; do
    case "$word" in
        serial:*|/*)
            group_done
            case "$word" in
                serial:*) device=$(disks_by_serial "${word#serial:}") || exit 1 ;;
                *) device=$word ;;
            esac
            [ -b "$device" ] || die "$device is not a block device"
            first=${first:-$device} regions=
            ;;
        *)
            region "$device" "$word"
            regions="$regions /dev/mapper/storlab-pv-$word"
            ;;
    esac
done
group_done
pvs=${pvs# }
if ! vgs storlab >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    run pvcreate -ff -y $pvs
    # shellcheck disable=SC2086
    run vgcreate -s 4m storlab $pvs
fi
run vgchange -ay storlab
echo "device $first"
for pv in $pvs; do
    case "$pv" in /dev/mapper/storlab-pv-*) echo "region $pv" ;; esac
done
echo "free_bytes $(vgs --noheadings --units b --nosuffix -o vg_free storlab | tr -d ' ')"
