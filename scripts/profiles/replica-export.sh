#!/bin/sh
# Replica holder: this node's copy of the replicated volume VOLUME, the
# logical volume storlab/replica-VOLUME, exported as NVMe over TCP subsystem
# NQN to whichever node serves the volume. The target listens on every
# address of the node ([::]), so the node that serves the volume after a
# failover reaches this copy over its own link to this node.
#   replica-export.sh VOLUME SIZE_MIB NQN [PLACEMENT]   (lib.sh new_lv's, default -)
# An existing volume and export (a node that came back) are kept.
. /usr/lib/storlab/profiles/lib.sh
. /usr/lib/storlab/profiles/nvme.sh
[ $# -eq 3 ] || [ $# -eq 4 ] || die "usage: replica-export.sh VOLUME SIZE_MIB NQN [PLACEMENT]"
volume=$1 size_mib=$2 nqn=$3 placement=${4:--}
ensure_replica_lv "$volume" "$size_mib" "$placement"
nvmet_export "$nqn" "/dev/storlab/replica-$volume"
