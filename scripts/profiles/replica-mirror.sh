#!/bin/sh
# Replica primary: /dev/md1, an md RAID-1 of the local volume storlab/replica
# and every peer's exported volume (NVMe over TCP). md acknowledges a write
# only when every working leg has it: synchronous replication. Remote legs
# are write-mostly, so reads are served locally; the write-intent bitmap
# makes a peer that comes back resync only what it missed.
#   replica-mirror.sh SIZE_MIB NQN@ADDR...
# Run again after a peer came back: it reconnects and re-adds the peer.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -ge 1 ] || die "usage: replica-mirror.sh SIZE_MIB [NQN@ADDR...]"
size_mib=$1
shift
need_modules raid1
lvs storlab/replica >/dev/null 2>&1 || run lvcreate -y -Wy -Zy -n replica -L "${size_mib}m" storlab
local_leg=$(readlink -f /dev/storlab/replica)
remote_legs=
for peer in "$@"; do
    nqn=${peer%@*} addr=${peer#*@}
    leg=$(nvme_connect "$nqn" "$addr") || die "cannot connect to $nqn at [$addr]:$NVME_PORT"
    remote_legs="$remote_legs $leg"
done

state=$(cat /sys/block/md1/md/array_state 2>/dev/null || echo absent)
if [ "$state" = absent ] || [ "$state" = clear ] || [ "$state" = inactive ]; then
    # Every leg is a fresh zeroed volume: equal already, no initial resync.
    # shellcheck disable=SC2086
    run mdadm --create /dev/md1 --run --metadata=1.2 --level=1 --raid-devices=$(($# + 1)) \
        --bitmap=internal --assume-clean "$local_leg" --write-mostly $remote_legs
else
    # Drop legs whose device went away, then re-add the peers' legs that are
    # not members (bitmap-based resync), or add them whole if that fails.
    mdadm /dev/md1 --remove failed >/dev/null 2>&1 || true
    mdadm /dev/md1 --remove detached >/dev/null 2>&1 || true
    for leg in $remote_legs; do
        name=${leg#/dev/}
        [ -e "/sys/block/md1/md/dev-$name" ] && continue
        mdadm /dev/md1 --re-add "$leg" >/dev/null 2>&1 ||
            run mdadm /dev/md1 --add --write-mostly "$leg"
    done
fi
echo "device /dev/md1"
echo "legs $local_leg$remote_legs"
