#!/bin/sh
# Serving a replicated volume: /dev/md<INDEX>, an md RAID-1 of this node's
# copy (storlab/replica-VOLUME) and every peer's copy (NVMe over TCP). md
# acknowledges a write only when every working leg has it: synchronous
# replication. Remote legs are write-mostly, so reads are served locally;
# the write-intent bitmap makes a copy that comes back resync only what it
# missed.
#   replica-mirror.sh VOLUME INDEX SIZE_MIB PLACEMENT [NQN@ADDR...]
# PLACEMENT: where this node's copy goes when new (lib.sh new_lv's).
# Three cases, told apart by the array and this node's copy:
# - a new volume: every copy is a fresh zeroed LV, equal already: created
#   clean, and every peer must be reachable;
# - taking over (the node that served it failed) or restarting: the copies
#   carry md superblocks; md assembles from those reachable, picks the
#   freshest, and a copy it finds stale is re-added below (resync);
# - running: failed legs are removed, returning copies re-added.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -ge 4 ] || die "usage: replica-mirror.sh VOLUME INDEX SIZE_MIB PLACEMENT [NQN@ADDR...]"
volume=$1 index=$2 size_mib=$3 placement=$4
shift 4
md=md$index
need_modules raid1
ensure_replica_lv "$volume" "$size_mib" "$placement"
local_leg=/dev/$(kernel_name "/dev/storlab/replica-$volume")
remote_legs=
missing=
for peer in "$@"; do
    nqn=${peer%@*} addr=${peer#*@}
    if leg=$(nvme_connect "$nqn" "$addr"); then
        remote_legs="$remote_legs $leg"
    else
        missing="$missing $nqn@[$addr]:$NVME_PORT"
    fi
done

read_value state "/sys/block/$md/md/array_state"
[ -n "$state" ] || state=absent
if [ "$state" = absent ] || [ "$state" = clear ] || [ "$state" = inactive ]; then
    [ "$state" = inactive ] && mdadm --stop "/dev/$md" >/dev/null 2>&1
    # shellcheck disable=SC2086
    if mdadm --examine "$local_leg" >/dev/null 2>&1; then
        run mdadm --assemble --run "/dev/$md" "$local_leg" $remote_legs
    else
        [ -z "$missing" ] || die "cannot connect to${missing}"
        run mdadm --create "/dev/$md" --run --metadata=1.2 --level=1 \
            --raid-devices=$(($# + 1)) --bitmap=internal --assume-clean \
            "$local_leg" $remote_legs
    fi
fi
# The array's members: exactly these legs (a copy that went away failed and
# removed, a returning one re-added).
md_set_legs "$md" "$local_leg $remote_legs"
# Reads stay local: only this node's copy is read (a copy that moved from
# remote to local, or back, after a failover gets its flag changed here).
for leg in $local_leg $remote_legs; do
    flag=writemostly
    [ "$leg" = "$local_leg" ] && flag=-writemostly
    echo "$flag" > "/sys/block/$md/md/dev-${leg#/dev/}/state" 2>/dev/null || true
done
echo "device /dev/$md"
echo "legs $local_leg$remote_legs"
for leg in $missing; do
    echo "missing $leg"
done
