#!/bin/sh
# The components of workload volumes' storage policies held on this node,
# all of them in one call: for each SPEC (one argument, space-separated
#   "HOME VOLUME SIZE_MIB CHECKSUM NQN|- PLACEMENT FILL"
# CHECKSUM 0 or 1, PLACEMENT lib.sh new_lv's) the LV storlab/c-HOME-VOLUME
# (a copy, or a RAID-5/6 piece), under dm-integrity when the policy
# checksums, exported over NVMe/TCP as NQN unless the volume's home is this
# node ("-"). FILL "OFFSET_KIB:MIB:SEED": a new component's data written
# here (lib.sh fill_components, all of them in one fio run at the end), the
# same in every component of the volume; "-": left for the array.
# Prints "device c-HOME-VOLUME PATH" for each.
#   components.sh SPEC...
# One call a node, not one a component: under TCG a command's start costs a
# guest about a second, and a node of a study at lab scale holds 128.
# dm-integrity runs in bitmap mode (no journal: the data is written once,
# as a hyperconverged cluster's checksums cost no second write) with crc32c
# per 4 KiB block; it is set up with dmsetup alone, as the kernel's
# dm-integrity.rst says: a zeroed superblock is formatted by the first
# load, whose status then gives the data sectors the device provides.
# A new component reads as zeros: the emulated disks start empty and no
# storlab script ever removes or shrinks an LV, so its extents were never
# written. So the copies (or data and parity) agree before md is created
# over them with --assume-clean, with nothing written. Under dm-integrity
# a block never written would read as a checksum error (its tag was never
# computed): a new component is discarded once through it, which
# dm-integrity (allow_discards) marks in the tags alone, as blocks read
# without a check until written, and passes to the disk as a TRIM (no
# write of the component's length). A node that came back keeps its
# components' data and reopens them. New components are filled before this
# step returns: no array is built over them before then.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -ge 1 ] || die "usage: components.sh 'HOME VOLUME SIZE_MIB CHECKSUM NQN|- PLACEMENT FILL'..."

# The device of component $1 on LV $2, under dm-integrity when $3 is 1
# (set up, or found from before).
integrity_device() {
    _id_name=$1 _id_lv=$2
    [ "$3" = 1 ] || { echo "$_id_lv"; return 0; }
    need_modules dm_integrity crc32c_generic
    _id_device=/dev/mapper/i-$_id_name
    if [ ! -e "$_id_device" ]; then
        _id_options="3 block_size:4096 internal_hash:crc32c allow_discards"
        run dmsetup create --noudevsync "i-$_id_name" \
            --table "0 8 integrity $_id_lv 0 4 B $_id_options"
        # status: mismatches, provided data sectors, recalculation point
        # shellcheck disable=SC2046
        set -- $(dmsetup status "i-$_id_name")
        run dmsetup remove --noudevsync "i-$_id_name"
        run dmsetup create --noudevsync "i-$_id_name" \
            --table "0 $5 integrity $_id_lv 0 4 B $_id_options"
    fi
    # Without udev, dmsetup leaves the /dev/mapper node to us.
    [ -b "$_id_device" ] || run dmsetup mknodes "i-$_id_name"
    echo "$_id_device"
}

# shellcheck disable=SC2046
existing=" $(echo $(lvs --noheadings -o lv_name storlab 2>/dev/null)) "
fills=
for spec in "$@"; do
    # shellcheck disable=SC2086
    set -- $spec
    [ $# -eq 7 ] || die "component '$spec': not 'HOME VOLUME SIZE_MIB CHECKSUM NQN|- PLACEMENT FILL'"
    name=c-$1-$2 size_mib=$3 checksum=$4 nqn=$5 placement=$6 fill=$7
    new=0
    case $existing in
        *" $name "*) ;;
        # -Zy zeroes the first 4 KiB: dm-integrity's superblock, unformatted
        *) new_lv "$name" "$size_mib" y "$placement"; new=1 ;;
    esac
    device=$(integrity_device "$name" "/dev/storlab/$name" "$checksum") || exit 1
    if [ "$new" = 1 ] && [ "$checksum" = 1 ]; then
        # The whole device, as mdadm and blkid probe a device's end (so
        # --force: blkdiscard's own safety probe for a filesystem would
        # read such blocks). Zeroing it instead (the kernel writing zero
        # pages through dm-integrity, as before) cost a study lab's node 5
        # of the 6 s a component took.
        run blkdiscard --force "$device"
    fi
    if [ "$new" = 1 ] && [ "$fill" != - ]; then
        offset_kib=${fill%%:*} mib=${fill#*:} seed=${fill##*:}
        fills="$fills $device $offset_kib ${mib%:*} $seed"
    fi
    [ "$nqn" = - ] || nvmet_export "$nqn" "$device" >/dev/null
    echo "device $name $device"
done
# shellcheck disable=SC2086
fill_components $fills
