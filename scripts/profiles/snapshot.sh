#!/bin/sh
# A workload volume's snapshots, on its home node. The workload uses
# /dev/mapper/storlab-vol-NAME, a device-mapper device over the volume's
# BASE (its LV or its policy's md); BASE holds the volume's SIZE_MIB first
# and after it the room its snapshots may fill (schema/volumes.py base_mib).
#   snapshot.sh open   NAME MECHANISM BASE SIZE_MIB ROOM_MIB META_MIB [ID:SLOT...]
#   snapshot.sh create NAME MECHANISM BASE SIZE_MIB ROOM_MIB META_MIB ID SLOT
#   snapshot.sh delete NAME MECHANISM BASE SIZE_MIB ROOM_MIB META_MIB ID
#   snapshot.sh usage  NAME MECHANISM BASE SIZE_MIB ROOM_MIB META_MIB ID...
# open builds the volume's device (after a boot: with its live snapshots,
# oldest first); the host keeps the list of snapshots, this script none.
# Snapshot ID is readable at /dev/mapper/storlab-snap-NAME-ID (read-only).
#
# redo-log (MECHANISM): snapshot ID freezes what the volume's device maps to
# (BASE or the previous overlay) and puts a dm-snapshot overlay over it whose
# copy-on-write store, redo log SLOT (ROOM_MIB at BASE's SIZE_MIB + (SLOT-1) x
# ROOM_MIB), takes every later write; reads of a chunk it does not hold fall
# through the chain below. Deleting snapshot ID consolidates its redo log
# into the frozen device below it (dm-snapshot's merge: in the background,
# while the volume runs), as a redo-log snapshot's deletion does.
# redirect-on-write: a dm-thin pool on BASE (metadata in its first META_MIB,
# data after it), the volume thin device 0; snapshot ID shares every block,
# and a later write to a shared block goes to a new one. Deleting it drops
# its references.
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 7 ] || die "usage: snapshot.sh open|create|delete|usage NAME MECHANISM BASE SIZE_MIB ROOM_MIB META_MIB ..."
action=$1 name=$2 mechanism=$3 base=$4 size_mib=$5 room_mib=$6 meta_mib=$7
shift 7
SECTORS_PER_MIB=2048
size=$((size_mib * SECTORS_PER_MIB))
top=storlab-vol-$name
REDO_CHUNK_SECTORS=8
THIN_BLOCK_SECTORS=128
THIN_SUPERBLOCK_MAGIC=27022010
case $mechanism in
    redo-log) need_modules dm_snapshot ;;
    redirect-on-write) need_modules dm_thin_pool ;;
    *) die "snapshot mechanism '$mechanism': not redo-log or redirect-on-write" ;;
esac

exists() {
    dmsetup info "$1" >/dev/null 2>&1
}

# Without udev, dmsetup leaves the /dev/mapper node to us.
dm_create() {    # NAME TABLE [--readonly]
    run dmsetup create --noudevsync ${3:-} "$1" --table "$2"
    run dmsetup mknodes "$1"
}

dm_remove() {
    if exists "$1"; then
        run dmsetup remove --noudevsync "$1"
    fi
    rm -f "/dev/mapper/$1"
}

# A live table change: I/O in flight finishes, new I/O waits meanwhile.
dm_reload() {    # NAME TABLE
    run dmsetup suspend --noudevsync "$1"
    run dmsetup load "$1" --table "$2"
    run dmsetup resume --noudevsync "$1"
}

# What a linear device maps to (its first table line's device, MAJOR:MINOR).
linear_target() {
    set -- $(dmsetup table "$1")
    [ "$3" = linear ] || die "$1 is not a linear device"
    echo "$4"
}

# The /dev path of device MAJOR:MINOR.
dev_path() {
    _dp_name=$(readlink "/sys/dev/block/$1") || die "no block device $1"
    _dp_name=${_dp_name##*/}
    case $_dp_name in
        dm-*) echo "/dev/mapper/$(cat "/sys/block/$_dp_name/dm/name")" ;;
        *) echo "/dev/$_dp_name" ;;
    esac
}

# ---- redo-log ----

redo_log() {    # SLOT: the redo log device, made when missing
    _rl=storlab-log-$name-$1
    exists "$_rl" || dm_create "$_rl" \
        "0 $((room_mib * SECTORS_PER_MIB)) linear $base $(( (size_mib + ($1 - 1) * room_mib) * SECTORS_PER_MIB ))"
    echo "/dev/mapper/$_rl"
}

# Puts snapshot ID (redo log SLOT) over FROZEN, the device below it; prints the overlay.
redo_overlay() {    # ID SLOT FROZEN
    log=$(redo_log "$2")
    dm_create "storlab-redo-$name-$1" "0 $size snapshot $3 $log P $REDO_CHUNK_SECTORS"
    dm_create "storlab-snap-$name-$1" "0 $size linear $3 0" --readonly
    echo "/dev/mapper/storlab-redo-$name-$1"
}

redo_open() {
    frozen=$base
    for entry in "$@"; do
        frozen=$(redo_overlay "${entry%:*}" "${entry#*:}" "$frozen")
    done
    dm_create "$top" "0 $size linear $frozen 0"
}

redo_create() {    # ID SLOT
    frozen=$(linear_target "$top")
    # a new redo log starts empty: dm-snapshot reads a zeroed header as none
    run dd if=/dev/zero of="$base" bs=1M count=1 seek=$((size_mib + ($2 - 1) * room_mib)) \
        conv=notrunc oflag=direct
    overlay=$(redo_overlay "$1" "$2" "$frozen")
    dm_reload "$top" "0 $size linear $overlay 0"
}

redo_delete() {    # ID
    overlay=storlab-redo-$name-$1
    exists "$overlay" || die "snapshot $1 of $name has no overlay"
    id=$1
    # "0 SECTORS snapshot FROZEN LOG P CHUNK", devices as MAJOR:MINOR
    set -- $(dmsetup table "$overlay")
    [ "$3" = snapshot ] || die "snapshot $id of $name is not a redo-log overlay ($3)"
    frozen=$4 log=$(dev_path "$5")
    dm_remove "storlab-snap-$name-$id"
    dm_reload "$overlay" "0 $size snapshot-merge $frozen $log P $REDO_CHUNK_SECTORS"
    # merged when only the store's metadata is left: "<allocated>/<total> <metadata>"
    while :; do
        set -- $(dmsetup status "$overlay")
        case $4 in
            */*) [ "${4%/*}" = "$5" ] && break ;;
            *) die "merging snapshot $id of $name: $*" ;;
        esac
        sleep 0.2
    done
    dm_reload "$overlay" "0 $size linear $frozen 0"
    dm_remove "${log#/dev/mapper/}"
}

# ---- redirect-on-write ----

pool=storlab-pool-$name

thin_open() {
    meta=storlab-tmeta-$name data=storlab-tdata-$name
    base_sectors=$(blockdev --getsz "$base")
    exists "$meta" || dm_create "$meta" "0 $((meta_mib * SECTORS_PER_MIB)) linear $base 0"
    exists "$data" || dm_create "$data" \
        "0 $((base_sectors - meta_mib * SECTORS_PER_MIB)) linear $base $((meta_mib * SECTORS_PER_MIB))"
    fresh=0
    magic=$(od -An -t u8 -j 32 -N 8 "/dev/mapper/$meta" | tr -d ' ')
    if [ "$magic" != "$THIN_SUPERBLOCK_MAGIC" ]; then
        # no pool here yet: a zeroed superblock makes the kernel format one
        run dd if=/dev/zero of="/dev/mapper/$meta" bs=4k count=1 conv=notrunc oflag=direct
        fresh=1
    fi
    exists "$pool" || dm_create "$pool" "0 $((base_sectors - meta_mib * SECTORS_PER_MIB)) thin-pool /dev/mapper/$meta /dev/mapper/$data $THIN_BLOCK_SECTORS 0 1 skip_block_zeroing"
    [ "$fresh" = 0 ] || run dmsetup message "$pool" 0 "create_thin 0"
    dm_create "$top" "0 $size thin /dev/mapper/$pool 0"
    for entry in "$@"; do
        dm_create "storlab-snap-$name-${entry%:*}" "0 $size thin /dev/mapper/$pool ${entry%:*}" --readonly
    done
    if [ "$fresh" = 1 ]; then
        # every block provisioned once, as every workload volume is written once
        run fio --name=precondition --filename="/dev/mapper/$top" --rw=write --bs=1M \
            --ioengine=libaio --direct=1 --iodepth=4 --size="${size_mib}M" --output-format=terse
    fi
}

thin_create() {    # ID
    run dmsetup suspend --noudevsync "$top"
    out=$(dmsetup message "$pool" 0 "create_snap $1 0" 2>&1) || {
        dmsetup resume --noudevsync "$top"
        die "create_snap $1 on $pool failed: $out"
    }
    run dmsetup resume --noudevsync "$top"
    dm_create "storlab-snap-$name-$1" "0 $size thin /dev/mapper/$pool $1" --readonly
}

thin_delete() {    # ID
    dm_remove "storlab-snap-$name-$1"
    run dmsetup message "$pool" 0 "delete $1"
}

# ---- what a snapshot holds ----

usage() {
    if [ "$mechanism" = redo-log ]; then
        for id in "$@"; do
            # "<allocated>/<total> <metadata>" in sectors
            set -- $(dmsetup status "storlab-redo-$name-$id")
            echo "snapshot $id kind=redo-log used_bytes=$(( ${4%/*} * 512 )) room_bytes=$(( ${4#*/} * 512 ))"
        done
    else
        # <transaction> <used meta>/<total meta> <used data>/<total data> ...
        set -- $(dmsetup status "$pool")
        echo "pool $pool kind=redirect-on-write used_bytes=$(( ${6%/*} * THIN_BLOCK_SECTORS * 512 ))" \
            "room_bytes=$(( ${6#*/} * THIN_BLOCK_SECTORS * 512 ))"
    fi
}

case $action in
    open)
        if ! exists "$top"; then
            if [ "$mechanism" = redo-log ]; then redo_open "$@"; else thin_open "$@"; fi
        fi
        ;;
    create)
        [ $# -eq 2 ] || die "usage: snapshot.sh create ... ID SLOT"
        exists "storlab-snap-$name-$1" && die "$name already has a snapshot $1"
        if [ "$mechanism" = redo-log ]; then redo_create "$1" "$2"; else thin_create "$1"; fi
        ;;
    delete)
        [ $# -eq 1 ] || die "usage: snapshot.sh delete ... ID"
        if [ "$mechanism" = redo-log ]; then redo_delete "$1"; else thin_delete "$1"; fi
        ;;
    usage)
        usage "$@"
        ;;
    *) die "unknown action '$action' (open, create, delete, usage)" ;;
esac
echo "device /dev/mapper/$top"
