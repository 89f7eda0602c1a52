#!/bin/sh
# NFS client: mounts the primary's export (server address on the link
# between the two nodes) at MOUNT_POINT.
#   nfs-mount.sh SERVER_ADDR MOUNT_POINT
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 2 ] || die "usage: nfs-mount.sh SERVER_ADDR MOUNT_POINT"
server=$1 mount_point=$2
need_modules nfsv4
mkdir -p "$mount_point"
mounted "$mount_point" ||
    run /sbin/mount.nfs4 "[$server]:/export" "$mount_point" -o vers=4.2,hard,timeo=50
echo "mount $mount_point"
