#!/bin/sh
# NFS server of replicated volume VOLUME: an ext4 file system on DEVICE (its
# md array) mounted at /export/VOLUME and exported over NFSv4 with fsid
# INDEX, and seen on this node too at MOUNT_POINT/VOLUME (a bind mount), the
# path where every other node mounts it, so a workload finds the share at
# the same path wherever it runs. After a failover the new server replaces
# its own stale NFS mount of the share by the bind mount.
#   nfs-export.sh VOLUME INDEX DEVICE MOUNT_POINT
# Short lease and grace times keep a restarted server from stalling clients.
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 4 ] || die "usage: nfs-export.sh VOLUME INDEX DEVICE MOUNT_POINT"
volume=$1 index=$2 device=$3 mount_point=$4
[ -b "$device" ] || die "$device is not a block device"
need_modules nfsd ext4
blkid -t TYPE=ext4 "$device" >/dev/null 2>&1 || run mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$device"
export_dir=/export/$volume
mkdir -p "$export_dir"
mounted "$export_dir" || run mount -t ext4 "$device" "$export_dir"
mounted /proc/fs/nfsd || run mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /etc/exports.d
[ -e /etc/exports ] || : > /etc/exports
echo "$export_dir *(rw,sync,no_root_squash,no_subtree_check,fsid=$index)" \
    > "/etc/exports.d/$volume.exports"
pidof rpcbind >/dev/null || run rpcbind -w
if [ "$(cat /proc/fs/nfsd/threads 2>/dev/null || echo 0)" = 0 ]; then
    echo 10 > /proc/fs/nfsd/nfsv4leasetime 2>/dev/null || true
    echo 10 > /proc/fs/nfsd/nfsv4gracetime 2>/dev/null || true
    run exportfs -ra
    pidof rpc.mountd >/dev/null || run rpc.mountd
    run rpc.nfsd 8
else
    run exportfs -ra
fi
local_view=$mount_point/$volume
unmount_unless "$local_view" "$device"
mkdir -p "$local_view"
mounted "$local_view" || run mount --bind "$export_dir" "$local_view"
echo "export $export_dir"
echo "mount $local_view"
