#!/bin/sh
# Workload volumes: PER_UNIT logical volumes for each of UNITS workload units,
# storlab/[PREFIX]u<unit>v<n> (PREFIX: a volume set's "NAME-"), each preallocated and written once end to end, so a
# later read never returns never-written zeros (the studies precondition the
# same way) and every cache or RAID layer below has seen every block.
#   volumes.sh UNITS PER_UNIT SIZE_MIB [PREFIX [LV_MIB [PLACEMENT...]]]
# LV_MIB (default SIZE_MIB): the LV, with room for the volume's snapshots
# after its SIZE_MIB (snapshot.sh). PLACEMENT: one a volume, in order
# (lib.sh new_lv's; default -). Existing volumes (a node that came back)
# are kept, not rewritten.
. /usr/lib/storlab/profiles/lib.sh
[ $# -ge 3 ] || die "usage: volumes.sh UNITS PER_UNIT SIZE_MIB [PREFIX [LV_MIB [PLACEMENT...]]]"
units=$1 per_unit=$2 size_mib=$3 prefix=${4:-} lv_mib=${5:-$3}
shift $(($# < 5 ? $# : 5))
# One look at the volume group and one fio run for every new volume, one
# volume after another (stonewall: each written alone, in order, as one fio
# a volume did): under TCG a command's start costs a guest about a second,
# and a node of a study at lab scale holds 64 small volumes.
# shellcheck disable=SC2046
existing=" $(echo $(lvs --noheadings -o lv_name storlab 2>/dev/null)) "
jobs=
for unit in $(seq 1 "$units"); do
    for n in $(seq 1 "$per_unit"); do
        name=${prefix}u${unit}v${n}
        placement=${1:--}
        [ $# -gt 0 ] && shift
        case $existing in
            *" $name "*) ;;
            *)  new_lv "$name" "$lv_mib" n "$placement"
                jobs="$jobs --name=$name --filename=/dev/storlab/$name" ;;
        esac
        echo "volume /dev/storlab/$name"
    done
done
# shellcheck disable=SC2086
[ -z "$jobs" ] || write_once --size="${size_mib}M" $jobs
