"""A lab's device by name: its DeviceEntry in the lab state (node, device,
plugin, socket, stats, ctl), or a UserError naming what is
missing and what there is.  `storlab ctl LAB NODE DEVICE` (its "ctl") and
`storlab top LAB NODE DEVICE` (its "stats") both look devices up here.
"""
from storlab_cli.lab import hosts as lab_hosts, state as lab_state
from storlab_cli.errors import UserError


def _state_and_entry(lab, node, device):
    state = lab_state.require(lab)
    lab_state.require_node(state, node)
    devices = [d for d in state.devices if d.node == node]
    entry = next((d for d in devices if d.device == device), None)
    if entry is None:
        names = ", ".join(d.device for d in devices) or "none"
        raise UserError(f"lab '{lab}' node '{node}' has no device '{device}' (devices: {names})")
    return state, entry


def path_of(lab, node, device, key, what, who_has):
    """The device entry's key (a path: "ctl", "stats"); when it has none, a
    UserError "... has no WHAT (WHO_HAS: the lab's devices that have one)"."""
    return located(lab, node, device, key, what, who_has)[0]


def located(lab, node, device, key, what, who_has):
    """(path, host): path_of's path and the LabHost it is on (lab/hosts.py;
    the local one has .local)."""
    state, entry = _state_and_entry(lab, node, device)
    host = lab_hosts.from_state(state).get(entry.host)
    if host is None:
        raise UserError(f"lab '{lab}' node '{node}' device '{device}': its host "
                        f"'{entry.host}' is not in the lab's state")
    if not getattr(entry, key):
        having = ", ".join(f"{d.node} {d.device}" for d in state.devices
                           if getattr(d, key)) or "none in this lab"
        raise UserError(f"lab '{lab}' node '{node}' device '{device}' ({entry.plugin}) has "
                        f"no {what} ({who_has}: {having})")
    return getattr(entry, key), host
