#!/bin/sh
# NFS client of replicated volume VOLUME: mounts /export/VOLUME of the node
# serving it (SERVER_ADDR, its address on the link between the two nodes)
# at MOUNT_POINT/VOLUME. A mount of the same share from a server that failed
# is dropped first (lazily: a process still inside it keeps its old view).
#   nfs-mount.sh VOLUME SERVER_ADDR MOUNT_POINT
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 3 ] || die "usage: nfs-mount.sh VOLUME SERVER_ADDR MOUNT_POINT"
volume=$1 server=$2 mount_point=$3
source="[$server]:/export/$volume"
target=$mount_point/$volume
need_modules nfsv4
unmount_unless "$target" "$source"
mkdir -p "$target"
mounted "$target" ||
    run /sbin/mount.nfs4 "$source" "$target" -o vers=4.2,hard,timeo=50
echo "mount $target"
