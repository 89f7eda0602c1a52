#!/bin/sh
# Workload volumes with a storage policy on their home node, all of them in
# one call: for each SPEC (one argument, space-separated
#   "PATH INDEX LEVEL CHUNK_KIB SIZE_MIB DATA_OFFSET_KIB WRITTEN LOCAL|- [NQN@ADDR...]")
# /dev/md<INDEX>, md RAID-1 over the volume's copies or RAID-5/6 over its
# pieces, the first leg this node's own component when it holds one (LOCAL,
# or "-"), the others its peers' over NVMe/TCP; PATH links to it, where the
# workload finds it. md's data starts DATA_OFFSET_KIB into each leg (the
# layout the simulator assumes, and where a filled component has its data).
# Prints "volume PATH", "legs PATH LEG..." and "missing PATH
# NQN@[ADDR]:PORT" for each leg it could not reach.
#   policy-volumes.sh SPEC...
# A mirror's remote legs are write-mostly, so reads stay local. The write-
# intent bitmap makes a component that comes back resync only what it
# missed. Three cases, as replica-mirror.sh's:
# - new: every component reads as zeros (components.sh) or, WRITTEN
#   "components", was filled there with the same bytes: consistent already
#   (equal copies; RAID-5 3+1's parity, the XOR of three equal chunks, is
#   that chunk), so created clean (--assume-clean), every peer reachable;
#   WRITTEN "array" (RAID-6: its second parity is no plain XOR) then
#   written once end to end with fio like every workload volume (one fio
#   run for all the new ones, one volume after another);
# - the array is not running (the home came back): assembled from the
#   reachable legs, a stale one re-added below;
# - running: failed legs removed, returning ones re-added.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -ge 1 ] || die "usage: policy-volumes.sh 'PATH INDEX LEVEL CHUNK_KIB SIZE_MIB DATA_OFFSET_KIB WRITTEN LOCAL|- [NQN@ADDR...]'..."

jobs=
for spec in "$@"; do
    # shellcheck disable=SC2086
    set -- $spec
    [ $# -ge 8 ] ||
        die "volume '$spec': not 'PATH INDEX LEVEL CHUNK_KIB SIZE_MIB DATA_OFFSET_KIB WRITTEN LOCAL|- [NQN@ADDR...]'"
    path=$1 md=md$2 level=$3 chunk_kib=$4 size_mib=$5 offset_kib=$6 written=$7 local=$8
    shift 8
    case $written in
        components|array) ;;
        *) die "volume $path: WRITTEN '$written': not 'components' or 'array'" ;;
    esac
    case $level in
        1) need_modules raid1 ;;
        5|6) need_modules raid456 ;;
        *) die "RAID level $level: not a policy's (1, 5, 6)" ;;
    esac
    legs=
    count=0
    if [ "$local" != - ]; then
        legs=/dev/$(kernel_name "$local") || exit 1
        count=1
    fi
    missing=
    for peer in "$@"; do
        nqn=${peer%@*} addr=${peer#*@}
        count=$((count + 1))
        if leg=$(nvme_connect "$nqn" "$addr"); then
            legs="$legs $leg"
        else
            missing="$missing $nqn@[$addr]:$NVME_PORT"
        fi
    done
    legs=${legs# }
    first=${legs%% *}

    read_value state "/sys/block/$md/md/array_state"
    [ -n "$state" ] || state=absent
    if [ "$state" = absent ] || [ "$state" = clear ] || [ "$state" = inactive ]; then
        [ "$state" = inactive ] && mdadm --stop "/dev/$md" >/dev/null 2>&1
        if mdadm --examine "$first" >/dev/null 2>&1; then
            # shellcheck disable=SC2086
            run mdadm --assemble --run "/dev/$md" $legs
        else
            [ -z "$missing" ] || die "volume $path: cannot connect to${missing}"
            chunk=
            [ "$level" = 1 ] || chunk="--chunk=${chunk_kib}K"
            # shellcheck disable=SC2086
            run mdadm --create "/dev/$md" --run --metadata=1.2 --level="$level" $chunk \
                --raid-devices="$count" --bitmap=internal --data-offset="${offset_kib}K" \
                --assume-clean $legs
            [ "$written" = components ] ||
                jobs="$jobs --name=${path##*/} --filename=/dev/$md --size=${size_mib}M"
        fi
    fi
    # The array's members: exactly these legs (a component that went away
    # failed and removed, a returning one re-added).
    md_set_legs "$md" "$legs"
    if [ "$level" = 1 ] && [ "$local" != - ]; then
        for leg in $legs; do
            flag=writemostly
            [ "$leg" = "$first" ] && flag=-writemostly
            echo "$flag" > "/sys/block/$md/md/dev-${leg#/dev/}/state" 2>/dev/null || true
        done
    fi
    mkdir -p "${path%/*}"
    ln -sf "/dev/$md" "$path"
    echo "volume $path"
    echo "legs $path $legs"
    for leg in $missing; do
        echo "missing $path $leg"
    done
done
# shellcheck disable=SC2086
[ -z "$jobs" ] || write_once $jobs
