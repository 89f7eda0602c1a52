"""A lab's names and state file: the one owner of what a lab is called, where
its run directory is, what its domains are named and what lab.json holds.

Every name a user types (a lab, a node) is checked here against the
topology's own rules before it becomes a path or a libvirt lookup, and a lab
is acted on only through what its state file lists: a lab named "hw" never
touches the domains of a lab named "hw-wss", and "../x" or "/" is an error,
not a directory to remove.

Lab state (<run dir>/lab.json) is a LabState: what `up` started, written as
it is started, and read back checked (a file of another shape is refused).
"""
import dataclasses
import json
import os
from dataclasses import dataclass, field

from storlab_cli.schema.topology import LAB_NAME_RE, LAB_NAME_RULE, NODE_NAME_RE, NODE_NAME_RULE
from storlab_cli.errors import UserError

RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")
# A lab's device data files (device_data = "disk"): DATA_BASE/<lab>, on a
# remote host DATA_BASE/<lab>.<host> (lab/hosts.py). On disk, not under
# RUN_BASE: /run is usually a tmpfs, memory again.
DATA_BASE = os.environ.get("STORLAB_DATA_DIR", "/var/lib/storlab/labs")
DOMAIN_PREFIX = "storlab-"
STATE_FILE = "lab.json"


@dataclass
class DeviceEntry:
    """One emulated device, in start order."""
    node: str
    device: str
    plugin: str
    socket: str | None = None          # its NBD unix socket
    pidfile: str | None = None
    stats: str | None = None           # its stats file (storlab plugins)
    ctl: str | None = None             # its control socket (raid: <run dir>/<node>-<device>.ctl)
    host: str = "local"                # the host it runs on (lab/hosts.py); paths are there


@dataclass
class LabState:
    name: str
    topology: str                      # the topology file, absolute
    accel: str                         # the lab's: tcg when any host runs TCG (lab_accel)
    appliance: str                     # the guest appliance's content hash
    created: float
    phase: str = "starting"            # starting, provisioning, ready
    domains: list = field(default_factory=list)          # libvirt domain names
    devices: list = field(default_factory=list)          # DeviceEntry
    profile: dict | None = None        # the storage profile's state (lab/profiles.py)
    hosts: list = field(default_factory=list)            # hosts.state_entries; []: local only
    placement: dict = field(default_factory=dict)        # node -> host name
    bundles: dict = field(default_factory=dict)          # remote host -> its plugin bundle dir
    accels: dict = field(default_factory=dict)           # host -> {accel, reason}; {}: all accel
    data_dirs: dict = field(default_factory=dict)        # host -> its device data directory
    ready_after_s: float | None = None
    provisioned_after_s: float | None = None

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data, path, lab):
        """The state in data (lab.json of lab), or a UserError naming path."""
        def refuse(why):
            return UserError(f"{path}: not a lab state of lab '{lab}' ({why})")
        if not isinstance(data, dict) or data.get("name") != lab:
            raise refuse("another name")
        known = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(data.get("domains"), list) or not isinstance(data.get("devices"), list):
            raise refuse("no domains or devices list")
        device_keys = {f.name for f in dataclasses.fields(DeviceEntry)}
        try:
            devices = [DeviceEntry(**{k: v for k, v in d.items() if k in device_keys})
                       for d in data["devices"]]
            return cls(**{**{k: v for k, v in data.items() if k in known}, "devices": devices})
        except (TypeError, AttributeError) as e:
            raise refuse(str(e)) from None


def _show(name):
    return repr(name) if isinstance(name, str) else repr(str(name))


def check_lab_name(lab):
    """lab, or a UserError when it is not a name a topology can give."""
    if not isinstance(lab, str) or not LAB_NAME_RE.fullmatch(lab):
        raise UserError(f"lab name {_show(lab)}: not a lab name (a topology's name: "
                        f"{LAB_NAME_RULE})")
    return lab


def check_node_name(node):
    if not isinstance(node, str) or not NODE_NAME_RE.fullmatch(node):
        raise UserError(f"node name {_show(node)}: not a node name ({NODE_NAME_RULE})")
    return node


def lab_dir(base, lab, host=None):
    """The lab's directory under base: <lab> on the local host, <lab>.<host>
    on a remote one (lab/hosts.py)."""
    lab = check_lab_name(lab)
    return os.path.join(base, lab if host is None else f"{lab}.{host}")


def run_dir(lab):
    return lab_dir(RUN_BASE, lab)


def data_dir(lab):
    return lab_dir(DATA_BASE, lab)


def state_path(lab):
    return os.path.join(run_dir(lab), STATE_FILE)


def domain_name(lab, node):
    return f"{DOMAIN_PREFIX}{check_lab_name(lab)}-{check_node_name(node)}"


def load(lab):
    """The lab's state, or None when no lab of that name is up."""
    path = state_path(lab)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: unreadable lab state ({e})") from None
    return LabState.from_json(data, path, lab)


def save(state):
    """Writes the state whole (a new file renamed over the old one)."""
    path = state_path(state.name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state.to_json(), f, indent=2)
    os.replace(tmp, path)


def known_labs():
    try:
        entries = os.listdir(RUN_BASE)
    except FileNotFoundError:
        return []
    return sorted(e for e in entries if LAB_NAME_RE.fullmatch(e)
                  and os.path.exists(os.path.join(RUN_BASE, e, STATE_FILE)))


def no_such_lab(lab):
    return UserError(f"no lab named '{lab}' is up (known: {', '.join(known_labs()) or 'none'})")


def require(lab):
    """The state of a lab that is up, or a UserError naming the labs that are."""
    state = load(lab)
    if state is None:
        raise no_such_lab(lab)
    return state


def nodes_of(state):
    """The lab's node names, in topology order (its domains', then any node
    that has devices and no domain yet: an `up` that failed half-way)."""
    prefix = f"{DOMAIN_PREFIX}{state.name}-"
    nodes = [d[len(prefix):] for d in state.domains if d.startswith(prefix)]
    nodes += [n for n in dict.fromkeys(d.node for d in state.devices) if n not in nodes]
    return nodes


def require_node(state, node):
    """node, when the lab has it; else a UserError listing the lab's nodes."""
    check_node_name(node)
    nodes = nodes_of(state)
    if node not in nodes:
        raise UserError(f"lab '{state.name}' has no node '{node}' "
                        f"(nodes: {', '.join(nodes) or 'none'})")
    return node


def accel_of(state, host):
    """The accelerator host's nodes run under (a lab from before hosts: the lab's)."""
    return state.accels.get(host, {}).get("accel", state.accel)


def lab_accel(accels):
    """The lab's accelerator of its hosts' ({host: {accel, reason}}): a
    lab with a node under TCG is as slow as TCG makes it."""
    return "tcg" if any(a["accel"] == "tcg" for a in accels.values()) else "kvm"


def own_files(state, key, host="local", directory=None):
    """The paths in the lab's device entries on host under key ("pidfile",
    "socket") that lie in its run directory there (directory; the local
    one by default): nothing outside it is ever touched."""
    directory = directory or run_dir(state.name)
    paths = []
    for entry in state.devices:
        path = getattr(entry, key)
        if entry.host == host and isinstance(path, str) \
                and os.path.dirname(os.path.abspath(path)) == directory:
            paths.append(path)
    return paths
