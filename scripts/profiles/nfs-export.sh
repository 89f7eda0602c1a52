#!/bin/sh
# NFS server: an ext4 file system on DEVICE (the replicated volume) mounted
# at /export and exported read-write over NFSv4 to the lab links.
#   nfs-export.sh DEVICE
# Short lease and grace times keep a restarted server from stalling clients.
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 1 ] || die "usage: nfs-export.sh DEVICE"
device=$1
[ -b "$device" ] || die "$device is not a block device"
need_modules nfsd ext4
blkid -t TYPE=ext4 "$device" >/dev/null 2>&1 || run mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$device"
mkdir -p /export
mounted /export || run mount -t ext4 "$device" /export
mounted /proc/fs/nfsd || run mount -t nfsd nfsd /proc/fs/nfsd
echo "/export *(rw,sync,no_root_squash,no_subtree_check,fsid=1)" > /etc/exports
pidof rpcbind >/dev/null || run rpcbind -w
if [ "$(cat /proc/fs/nfsd/threads 2>/dev/null || echo 0)" = 0 ]; then
    echo 10 > /proc/fs/nfsd/nfsv4leasetime 2>/dev/null || true
    echo 10 > /proc/fs/nfsd/nfsv4gracetime 2>/dev/null || true
    run exportfs -ra
    pidof rpc.mountd >/dev/null || run rpc.mountd
    run rpc.nfsd 4
else
    run exportfs -ra
fi
echo "export /export"
