#!/bin/sh
# Disk group: one cache device in front of capacity devices, as
# /dev/mapper/NAME (diskgroup, diskgroup2, ...: a node may have several).
#   disk-group.sh NAME MODE CACHE_DISK CACHE_MIB READ_PERCENT STRIPE_WIDTH STRIPE_KIB CAPACITY_DISK...
# MODE hybrid:    LVM VG "dg" (diskgroup2: "dg2", ...): capacity LV "data"
#                 striped over STRIPE_WIDTH devices, with READ_PERCENT of
#                 the cache as a dm-cache (lvmcache, writethrough: it serves
#                 and keeps reads) and the rest as a dm-writecache on top (it
#                 absorbs writes).
# MODE all-flash: the whole cache as a dm-writecache: a write buffer only,
#                 reads go to the capacity devices.
# A node that comes back finds the VG and the writecache's own metadata on
# its disks and reactivates them (dirty data in the write buffer survives).
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 8 ] || die "usage: disk-group.sh NAME MODE CACHE_DISK CACHE_MIB READ_PERCENT STRIPE_WIDTH STRIPE_KIB CAPACITY_DISK..."
name=$1 mode=$2 cache_name=$3 cache_mib=$4 read_percent=$5 stripe_width=$6 stripe_kib=$7
shift 7
case "$name" in diskgroup|diskgroup[2-9]) ;; *) die "unknown disk group name '$name'" ;; esac
vg=dg${name#diskgroup}
case "$mode" in hybrid|all-flash) ;; *) die "unknown disk group mode '$mode'" ;; esac
cache=$(disks_by_serial "$cache_name") || exit 1
capacity=$(disks_by_serial "$@") || exit 1
capacity_count=$#
need_modules dm_mod dm_cache dm_cache_smq dm_writecache

# lvm warns about missing lvmetad/udev on stderr; only failures matter.
if ! vgs "$vg" >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    run pvcreate -ff -y $cache $capacity
    # shellcheck disable=SC2086
    run vgcreate -s 4m "$vg" $cache $capacity
    # Capacity: as many whole stripe sets as the devices give, on them only.
    extents_per_device=$(pvs --noheadings -o pv_pe_count $capacity | sort -n | head -n 1 | tr -d ' ')
    sets=$((capacity_count / stripe_width))
    data_extents=$((extents_per_device * sets * stripe_width))
    if [ "$stripe_width" -gt 1 ]; then
        # shellcheck disable=SC2086
        run lvcreate -y -Wy -Zy -n data -l "$data_extents" -i "$stripe_width" -I "${stripe_kib}k" "$vg" $capacity
    else
        # shellcheck disable=SC2086
        run lvcreate -y -Wy -Zy -n data -l "$data_extents" "$vg" $capacity
    fi
    write_mib=$cache_mib
    if [ "$mode" = hybrid ]; then
        read_mib=$((cache_mib * read_percent / 100 / 4 * 4))
        write_mib=$((cache_mib - read_mib))
        run lvcreate -y -Wy -Zy -n readcache -L "${read_mib}m" "$vg" "$cache"
        run lvconvert -y --type cache --cachevol readcache --cachemode writethrough \
            --cachepolicy smq "$vg/data"
    fi
    write_mib=$((write_mib / 4 * 4))
    run lvcreate -y -Wy -Zy -n writebuf -L "${write_mib}m" "$vg" "$cache"
    # A fresh dm-writecache needs a zeroed first block (lvcreate -Zy did it).
fi
run vgchange -ay "$vg"
if ! dmsetup info "$name" >/dev/null 2>&1; then
    sectors=$(blockdev --getsz "/dev/$vg/data")
    run dmsetup create --noudevsync "$name" \
        --table "0 $sectors writecache s /dev/$vg/data /dev/$vg/writebuf 4096 0"
fi
# Without udev, dmsetup leaves the /dev/mapper node to us.
[ -b "/dev/mapper/$name" ] || run dmsetup mknodes "$name"
echo "device /dev/mapper/$name"
echo "mode $mode"
echo "size_bytes $(($(blockdev --getsz "/dev/mapper/$name") * 512))"
