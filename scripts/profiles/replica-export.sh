#!/bin/sh
# Replica holder: this node's copy of the replicated volume VOLUME, the
# logical volume storlab/replica-VOLUME, exported as NVMe over TCP subsystem
# NQN to whichever node serves the volume. The target listens on every
# address of the node ([::]), so the node that serves the volume after a
# failover reaches this copy over its own link to this node.
#   replica-export.sh VOLUME SIZE_MIB NQN
# An existing volume and export (a node that came back) are kept.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -eq 3 ] || die "usage: replica-export.sh VOLUME SIZE_MIB NQN"
volume=$1 size_mib=$2 nqn=$3
ensure_replica_lv "$volume" "$size_mib"
need_modules nvmet nvmet_tcp
ensure_configfs
subsystem=/sys/kernel/config/nvmet/subsystems/$nqn
if [ ! -d "$subsystem" ]; then
    mkdir "$subsystem" "$subsystem/namespaces/1" || die "cannot create nvmet subsystem $nqn"
    echo 1 > "$subsystem/attr_allow_any_host"
    echo "/dev/storlab/replica-$volume" > "$subsystem/namespaces/1/device_path"
    echo 1 > "$subsystem/namespaces/1/enable" || die "cannot enable the nvmet namespace"
fi
port=/sys/kernel/config/nvmet/ports/1
if [ ! -d "$port" ]; then
    mkdir "$port" || die "cannot create nvmet port"
    echo tcp > "$port/addr_trtype"
    echo ipv6 > "$port/addr_adrfam"
    echo :: > "$port/addr_traddr"
    echo "$NVME_PORT" > "$port/addr_trsvcid"
fi
[ -e "$port/subsystems/$nqn" ] || ln -s "$subsystem" "$port/subsystems/$nqn" ||
    die "cannot listen on [::]:$NVME_PORT"
echo "export $nqn [::]:$NVME_PORT"
