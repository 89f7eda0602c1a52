#!/bin/sh
# The node's storage stack as "KIND NAME key=value..." lines, one object a
# line, for `storlab status` (the host parses them):
#   md NAME level= array_state= degraded= sync_action= sync_completed= size_bytes= members=DEV:STATE,...
#   dm NAME target= status=<dmsetup status fields joined by '_'>
#   nvme NAME nqn= state=
#   mount PATH source= type=
#   volume PATH size_bytes=
. /usr/lib/storlab/profiles/lib.sh

attr() {
    cat "$1" 2>/dev/null | tr " " "_" | tr -d "\n" || true
}

for dir in /sys/block/md*; do
    [ -e "$dir/md/array_state" ] || continue
    md=$dir/md
    members=
    for dev in "$md"/dev-*; do
        [ -e "$dev" ] || continue
        members="$members${members:+;}${dev##*/dev-}:$(attr "$dev/state")"
    done
    echo "md ${dir##*/} level=$(attr "$md/level") array_state=$(attr "$md/array_state")" \
        "degraded=$(attr "$md/degraded")" "sync_action=$(attr "$md/sync_action")" \
        "sync_completed=$(attr "$md/sync_completed")" "mismatch_cnt=$(attr "$md/mismatch_cnt")" \
        "size_bytes=$(($(cat "$dir/size") * 512))" "members=${members:-none}"
done

if [ -d /sys/module/dm_mod ]; then
    dmsetup status 2>/dev/null | while read -r name _ _ target rest; do
        name=${name%:}
        case "$target" in
            cache|writecache) echo "dm $name target=$target status=$(echo "$rest" | tr ' ' '_')" ;;
        esac
    done
fi

for dir in /sys/class/nvme/nvme*; do
    [ -r "$dir/subsysnqn" ] || continue
    echo "nvme ${dir##*/} nqn=$(attr "$dir/subsysnqn") state=$(attr "$dir/state")"
done

while read -r source target type _; do
    case "$type" in
        nfs|nfs4|ext4) echo "mount $target source=$source type=$type" ;;
    esac
done < /proc/mounts
if [ -d /proc/fs/nfsd ] && [ "$(cat /proc/fs/nfsd/threads 2>/dev/null || echo 0)" != 0 ]; then
    echo "nfsd /export threads=$(cat /proc/fs/nfsd/threads)"
fi

if [ -d /dev/storlab ]; then
    for lv in /dev/storlab/*; do
        [ -b "$lv" ] || continue
        echo "volume $lv size_bytes=$(($(blockdev --getsz "$lv") * 512))"
    done
fi
exit 0
