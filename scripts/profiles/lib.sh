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
            serial=$(cat "$dir/serial")
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
disks_by_serial() {
    paths=
    for name in "$@"; do
        path=$(disk_by_serial "$name") || die "no disk with serial '$name' in this node"
        paths="$paths $path"
    done
    echo "${paths# }"
}

# Loads modules, dying with a clear message when one is missing.
need_modules() {
    modprobe -a "$@" 2>/dev/null || die "cannot load kernel modules: $*"
}

mounted() {
    grep -q " $1 " /proc/mounts
}

ensure_configfs() {
    mounted /sys/kernel/config || run mount -t configfs configfs /sys/kernel/config
}
