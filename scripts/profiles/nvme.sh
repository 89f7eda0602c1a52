# NVMe over TCP helpers (sourced): the kernel's own target (nvmet, set up
# through configfs) and initiator (nvme-tcp, connected through
# /dev/nvme-fabrics), so no userspace daemon or tool is needed in the guest.
NVME_PORT=4420

# The initiator must not use native NVMe multipath: with it, I/O to a lost
# peer would queue instead of failing, and md would never drop the leg.
load_nvme_host() {
    if [ ! -d /sys/module/nvme_core ]; then
        modprobe nvme_core multipath=N || die "cannot load nvme_core"
    fi
    need_modules nvme_fabrics nvme_tcp
}

# The controller connected to subsystem $1 (e.g. nvme0), or nothing. Read
# with the shell's own read: a node of a study holds 64 controllers, and a
# cat each under TCG made a scan cost 1.5 s, several scans a volume.
nvme_controller_of() {
    for dir in /sys/class/nvme/nvme*; do
        read_value _nc_nqn "$dir/subsysnqn"
        if [ "$_nc_nqn" = "$1" ]; then
            echo "${dir##*/}"
            return 0
        fi
    done
    return 1
}

# The namespace block device of subsystem $1, waiting up to ~5 s for it.
nvme_namespace_of() {
    tries=0
    while [ "$tries" -lt 50 ]; do
        if ctrl=$(nvme_controller_of "$1"); then
            for ns in /sys/class/nvme/"$ctrl"/"$ctrl"n*; do
                [ -e "$ns" ] && { echo "/dev/${ns##*/}"; return 0; }
            done
        fi
        tries=$((tries + 1))
        sleep 0.1
    done
    return 1
}

# Connects to subsystem NQN at ADDR unless connected; prints the namespace.
# A lost peer fails I/O after fast_io_fail_tmo s and is given up after
# ctrl_loss_tmo s, so md sees the error quickly instead of hanging.
# A controller left from before is used only when live with its namespace:
# one still reconnecting, or one that reconnected to a restarted peer and
# dropped a namespace whose identity changed, is replaced by a fresh one
# (reconnects last longer than ctrl_loss_tmo when each attempt times out).
nvme_connect() {
    nqn=$1 addr=$2
    load_nvme_host
    if ctrl=$(nvme_controller_of "$nqn"); then
        read_value _nc_state /sys/class/nvme/"$ctrl"/state
        if [ "$_nc_state" = live ] &&
            nvme_namespace_of "$nqn"; then
            return 0
        fi
        echo 1 > /sys/class/nvme/"$ctrl"/delete_controller 2>/dev/null || true
    fi
    if ! nvme_controller_of "$nqn" >/dev/null; then
        echo "transport=tcp,traddr=$addr,trsvcid=$NVME_PORT,nqn=$nqn,ctrl_loss_tmo=5,reconnect_delay=1,fast_io_fail_tmo=2" \
            > /dev/nvme-fabrics 2>/dev/null || return 1
    fi
    nvme_namespace_of "$nqn"
}

# A UUID (8-4-4-4-12 hex digits) that is a function of string $1.
nvme_uuid_of() {
    printf %s "$1" | md5sum |
        sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\).*/\1-\2-\3-\4-\5/'
}

# Exports block device $2 as subsystem $1 on this node's NVMe/TCP target,
# listening on every address ([::]:NVME_PORT), so whichever node uses it
# reaches it over its own link. An existing export is kept.
nvmet_export() {
    _ne_nqn=$1 _ne_device=$2
    need_modules nvmet nvmet_tcp
    ensure_configfs
    _ne_subsystem=/sys/kernel/config/nvmet/subsystems/$_ne_nqn
    if [ ! -d "$_ne_subsystem" ]; then
        mkdir "$_ne_subsystem" "$_ne_subsystem/namespaces/1" ||
            die "cannot create nvmet subsystem $_ne_nqn"
        echo 1 > "$_ne_subsystem/attr_allow_any_host"
        echo "$_ne_device" > "$_ne_subsystem/namespaces/1/device_path"
        # The namespace's UUID from its NQN, not nvmet's random one: a peer
        # exporting the same copy again after a restart offers the same
        # namespace, which an initiator still reconnecting keeps instead of
        # dropping ("identifiers changed").
        nvme_uuid_of "$_ne_nqn" > "$_ne_subsystem/namespaces/1/device_uuid" ||
            die "cannot set the nvmet namespace's uuid"
        echo 1 > "$_ne_subsystem/namespaces/1/enable" || die "cannot enable the nvmet namespace"
    fi
    _ne_port=/sys/kernel/config/nvmet/ports/1
    if [ ! -d "$_ne_port" ]; then
        mkdir "$_ne_port" || die "cannot create nvmet port"
        echo tcp > "$_ne_port/addr_trtype"
        echo ipv6 > "$_ne_port/addr_adrfam"
        echo :: > "$_ne_port/addr_traddr"
        echo "$NVME_PORT" > "$_ne_port/addr_trsvcid"
    fi
    [ -e "$_ne_port/subsystems/$_ne_nqn" ] || ln -s "$_ne_subsystem" "$_ne_port/subsystems/$_ne_nqn" ||
        die "cannot listen on [::]:$NVME_PORT"
    echo "export $_ne_nqn [::]:$NVME_PORT"
}
