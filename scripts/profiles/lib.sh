# Shared helpers of the storlab profile scripts (sourced, not run).
# Every script prints its results as "key value" lines on stdout; messages
# for humans go to stderr; a failure is one line "storlab-profile: ..." and
# a non-zero exit, which the host shows as it is.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
set -u

die() {
    echo "storlab-profile: $(hostname): $*" >&2
    exit 1
}

# Sets variable $1 to the first line of file $2 (a sysfs value), empty when
# it cannot be read; the shell's own read, no command started (under TCG a
# `cat` costs a guest tens of ms, and a step reads hundreds). A value without
# a trailing newline (virtio-blk's serial) is kept: read returns 1 for it.
read_value() {
    eval "$1="
    [ -r "$2" ] || return 0
    read -r "$1" < "$2" || true
}

# Runs a command quietly; on failure shows its output and dies.
run() {
    out=$("$@" 2>&1) || die "$* failed: $(echo "$out" | tail -n 3 | tr '\n' ' ')"
}

# The block device whose serial is $1 (the topology's device name): without
# udev there is no /dev/disk/by-id, so sysfs is read directly. virtio-blk has
# block/serial; SCSI and SATA disks have VPD page 0x80 (4-byte header, then
# the serial).
disk_by_serial() {
    for dir in /sys/block/*; do
        serial=
        if [ -r "$dir/serial" ]; then
            read_value serial "$dir/serial"
        elif [ -r "$dir/device/vpd_pg80" ]; then
            serial=$(tail -c +5 "$dir/device/vpd_pg80" | tr -d '\000 ')
        fi
        if [ "$serial" = "$1" ]; then
            echo "/dev/${dir##*/}"
            return 0
        fi
    done
    return 1
}

# Resolves each device name in "$@" to its /dev path; prints them space-separated.
# Called as $(...), its die ends only that subshell (the message is out):
# the caller stops too, with `|| exit 1`.
disks_by_serial() {
    paths=
    for name in "$@"; do
        path=$(disk_by_serial "$name") || die "no disk with serial '$name' in this node"
        paths="$paths $path"
    done
    echo "${paths# }"
}

# Loads modules, dying with a clear message when one is missing.
# Those already loaded are left alone: under TCG a modprobe costs a guest
# most of a second, and a step building 64 volumes asks once a volume.
need_modules() {
    _nm_missing=
    for _nm_module in "$@"; do
        [ -d "/sys/module/$_nm_module" ] || _nm_missing="$_nm_missing $_nm_module"
    done
    [ -z "$_nm_missing" ] && return 0
    # shellcheck disable=SC2086
    modprobe -a $_nm_missing 2>/dev/null || die "cannot load kernel modules:$_nm_missing"
}

mounted() {
    grep -q " $1 " /proc/mounts
}

ensure_configfs() {
    mounted /sys/kernel/config || run mount -t configfs configfs /sys/kernel/config
}

# A new LV storlab/$1 of $2 MiB, zeroing its first 4 KiB when $3 is y.
# $4 PLACEMENT: "-" (LVM's choice) or, when the volume group lies on the
# capacity devices (volume-group.sh's regions), STRIPE_KIB:DEV[,DEV...]:
# on those devices' regions, striped when several (the host picked them:
# schema/capacity_layout.py).
new_lv() {
    if [ "$4" = - ]; then
        run lvcreate -y -Wy -Z"$3" -n "$1" -L "${2}m" storlab
        return
    fi
    _nl_kib=${4%%:*}
    _nl_pvs= _nl_count=0
    for _nl_dev in $(echo "${4#*:}" | tr ',' ' '); do
        _nl_pvs="$_nl_pvs /dev/mapper/storlab-pv-$_nl_dev"
        _nl_count=$((_nl_count + 1))
    done
    _nl_stripes=
    [ "$_nl_count" -gt 1 ] && _nl_stripes="-i $_nl_count -I ${_nl_kib}k"
    # shellcheck disable=SC2086
    run lvcreate -y -Wy -Z"$3" -n "$1" -L "${2}m" $_nl_stripes storlab $_nl_pvs
}

# Writes new workload volumes once end to end, with random data (fio's
# default buffers, not zeros), so a later read never returns never-written
# zeros; one fio run for all of them, one volume after another (stonewall).
# $@: "--name=N --filename=F [--size=S]" for each volume; options before
# the first --name (a common --size, fill_components' buffers) apply to all.
write_once() {
    _wo_out=$(fio --rw=write --bs=1M --ioengine=libaio --direct=1 --iodepth=4 --stonewall \
        --output-format=terse "$@" 2>&1) ||
        die "writing the new volumes once failed: $(echo "$_wo_out" | tail -n 3 | tr '\n' ' ')"
}

# fio's --buffer_pattern for the copies of a volume of seed $1: 512 bytes
# (fio's longest pattern) of a 64-bit linear congruential generator (Knuth's
# MMIX constants; shell arithmetic wraps at 64 bits as it does), in hex.
copy_pattern() {
    _cp_x=$1 _cp_n=0
    printf 0x
    while [ "$_cp_n" -lt 64 ]; do
        _cp_x=$((_cp_x * 6364136223846793005 + 1442695040888963407))
        printf %016x "$_cp_x"
        _cp_n=$((_cp_n + 1))
    done
}

# Writes new components' data where they lie (a mirror's copies, a RAID-5
# volume's pieces), one fio run for all of them, one after another: for
# each, from $2 KiB of device $1 (where md's data starts) $3 MiB, volume
# seed $4's pattern (copy_pattern) repeated. The bytes depend on the seed
# alone, not on the component's place in the run (as fio's random buffers
# would: a job's seeds depend on it), so every holder writes the same ones,
# and never over a link: what writing the volume once through md would have
# done, not its cost (its bytes over NVMe/TCP; under TCG a fio start a
# component cost seconds).
fill_components() {
    _fc_jobs=
    while [ $# -ge 4 ]; do
        _fc_jobs="$_fc_jobs --name=${1##*/} --filename=$1 --offset=${2}k --size=${3}M"
        _fc_jobs="$_fc_jobs --buffer_pattern=$(copy_pattern "$4")"
        shift 4
    done
    # shellcheck disable=SC2086
    [ -z "$_fc_jobs" ] || write_once --scramble_buffers=0 $_fc_jobs
}

# This node's copy of replicated volume $1: the LV storlab/replica-$1 of $2
# MiB, placed as $3 says (new_lv's PLACEMENT).
ensure_replica_lv() {
    lvs "storlab/replica-$1" >/dev/null 2>&1 || new_lv "replica-$1" "$2" y "$3"
}

# What is mounted at $1 now (the last mount there), or nothing.
# (POSIX sh has no local variables: the _ms_ names are this helper's own.)
mount_source() {
    _ms_source=
    while read -r _ms_dev _ms_target _; do
        [ "$_ms_target" = "$1" ] && _ms_source=$_ms_dev
    done < /proc/mounts
    echo "$_ms_source"
}

# Unmounts $1 when something other than $2 is mounted there: forced and
# lazy, without --canonicalize (realpath would stat a hung NFS mount). The
# detach is immediate, but releasing an NFS mount of a dead server waits for
# its goodbye RPCs (45 s seen), in the umount process itself: so umount
# runs in the background, its output detached (the guest agent waits for
# every holder of the pipes it reads), and only the detach is waited for.
unmount_unless() {
    _um_current=$(mount_source "$1")
    [ -n "$_um_current" ] && [ "$_um_current" != "$2" ] || return 0
    /bin/umount -f -l -c "$1" </dev/null >/dev/null 2>&1 &
    _um_tries=0
    while [ "$(mount_source "$1")" = "$_um_current" ]; do
        _um_tries=$((_um_tries + 1))
        [ "$_um_tries" -le 100 ] || die "cannot unmount $_um_current from $1"
        sleep 0.1
    done
}

# The kernel's name of block device $1 (dm-3 for /dev/mapper/storlab-x: md's
# sysfs names its members by it).
kernel_name() {
    _kn_numbers=$(stat -L -c '%t %T' "$1") || die "$1: no such block device"
    # shellcheck disable=SC2086
    set -- $_kn_numbers
    _kn_name=$(readlink "/sys/dev/block/$((0x$1)):$((0x$2))") ||
        die "no sysfs entry for block device $1:$2"
    echo "${_kn_name##*/}"
}

# Makes md array $1's members exactly the legs in "$2" (space-separated
# /dev paths): members that are none of them went away (a peer that failed;
# md notices only at its next write to them) and are failed and removed, so
# a returning leg takes their slot instead of adding one; legs not in the
# array are re-added (a bitmap resync of what they missed) or added.
# (POSIX sh has no local variables: the _ml_ names are this helper's own.)
md_set_legs() {
    _ml_md=$1 _ml_wanted=
    for _ml_leg in $2; do
        _ml_wanted="$_ml_wanted ${_ml_leg#/dev/}"
    done
    # mdadm removes only where a member is failed (or failed here) or its
    # device is gone: each call costs a TCG guest a few tenths of a second,
    # and a new array has none.
    _ml_stale=
    for _ml_dev in /sys/block/"$_ml_md"/md/dev-*; do
        [ -e "$_ml_dev" ] || continue
        case "$_ml_wanted " in
            *" ${_ml_dev##*/dev-} "*) ;;
            *) echo faulty > "$_ml_dev/state" 2>/dev/null || true
               _ml_stale=1 ;;
        esac
        read_value _ml_state "$_ml_dev/state"
        case ",$_ml_state," in *,faulty,*) _ml_stale=1 ;; esac
        [ -e "$_ml_dev/block" ] || _ml_stale=1
    done
    if [ -n "$_ml_stale" ]; then
        mdadm "/dev/$_ml_md" --remove failed >/dev/null 2>&1 || true
        mdadm "/dev/$_ml_md" --remove detached >/dev/null 2>&1 || true
    fi
    for _ml_leg in $2; do
        [ -e "/sys/block/$_ml_md/md/dev-${_ml_leg#/dev/}" ] && continue
        mdadm "/dev/$_ml_md" --re-add "$_ml_leg" >/dev/null 2>&1 ||
            run mdadm "/dev/$_ml_md" --add "$_ml_leg"
    done
}
