#!/bin/sh
# Replica peer: the logical volume storlab/replica, exported to the primary
# as NVMe over TCP subsystem NQN on ADDR (this node's end of their link).
#   replica-export.sh SIZE_MIB NQN ADDR
# Existing volume and export (a node that came back) are kept.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -eq 3 ] || die "usage: replica-export.sh SIZE_MIB NQN ADDR"
size_mib=$1 nqn=$2 addr=$3
lvs storlab/replica >/dev/null 2>&1 || run lvcreate -y -Wy -Zy -n replica -L "${size_mib}m" storlab
need_modules nvmet nvmet_tcp
ensure_configfs
subsystem=/sys/kernel/config/nvmet/subsystems/$nqn
if [ ! -d "$subsystem" ]; then
    mkdir "$subsystem" "$subsystem/namespaces/1" || die "cannot create nvmet subsystem $nqn"
    echo 1 > "$subsystem/attr_allow_any_host"
    echo /dev/storlab/replica > "$subsystem/namespaces/1/device_path"
    echo 1 > "$subsystem/namespaces/1/enable" || die "cannot enable the nvmet namespace"
fi
port=/sys/kernel/config/nvmet/ports/1
if [ ! -d "$port" ]; then
    mkdir "$port" || die "cannot create nvmet port"
    echo tcp > "$port/addr_trtype"
    echo ipv6 > "$port/addr_adrfam"
    echo "$addr" > "$port/addr_traddr"
    echo "$NVME_PORT" > "$port/addr_trsvcid"
fi
[ -e "$port/subsystems/$nqn" ] || ln -s "$subsystem" "$port/subsystems/$nqn" ||
    die "cannot listen on [$addr]:$NVME_PORT"
echo "export $nqn [$addr]:$NVME_PORT"
