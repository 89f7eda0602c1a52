#!/bin/sh
# Local RAID: md RAID LEVEL over the named disks as /dev/md0.
#   raid.sh LEVEL CHUNK_KIB DISK...
# Assembles the array when its members already carry it (a node that came
# back), else creates it. Fresh members are all zeros, and zeros are a
# consistent RAID 1/10/5/6 (mirrors equal, parity of zeros is zero), so the
# array is created clean instead of spending minutes on an initial resync.
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 3 ] || die "usage: raid.sh LEVEL CHUNK_KIB DISK..."
level=$1
chunk_kib=$2
shift 2
disks=$(disks_by_serial "$@") || exit 1
need_modules raid0 raid1 raid10 raid456

state=$(cat /sys/block/md0/md/array_state 2>/dev/null || echo absent)
if [ "$state" = absent ] || [ "$state" = clear ] || [ "$state" = inactive ]; then
    # shellcheck disable=SC2086
    if mdadm --examine $disks >/dev/null 2>&1; then
        run mdadm --assemble --run /dev/md0 $disks
    else
        set -- --create /dev/md0 --run --metadata=1.2 --level="$level" --raid-devices=$#
        [ "$level" = 1 ] || set -- "$@" --chunk="$chunk_kib"
        [ "$level" = 0 ] || set -- "$@" --assume-clean
        run mdadm "$@" $disks
    fi
fi
echo "device /dev/md0"
echo "level $(cat /sys/block/md0/md/level)"
echo "size_bytes $(($(cat /sys/block/md0/size) * 512))"
