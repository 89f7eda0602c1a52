#!/bin/sh
# Stops exporting this node's copy of a replicated volume (subsystem NQN):
# the node now serves the volume itself, its copy becomes md's local leg,
# and no other node must write to it behind md's back.
#   replica-unexport.sh NQN
. /usr/lib/storlab/profiles/lib.sh
[ $# -eq 1 ] || die "usage: replica-unexport.sh NQN"
nqn=$1
nvmet=/sys/kernel/config/nvmet
subsystem=$nvmet/subsystems/$nqn
if [ -d "$subsystem" ]; then
    for link in "$nvmet"/ports/*/subsystems/"$nqn"; do
        [ -e "$link" ] || [ -L "$link" ] || continue
        rm "$link" || die "cannot unlink $nqn from its port"
    done
    echo 0 > "$subsystem/namespaces/1/enable" 2>/dev/null || true
    rmdir "$subsystem/namespaces/1" "$subsystem" || die "cannot remove nvmet subsystem $nqn"
fi
echo "unexported $nqn"
