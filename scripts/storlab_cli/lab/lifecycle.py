"""Lab lifecycle: up, down, status, exec, console.

One topology file gives one lab.  Everything a lab starts is recorded in its
run directory as it is started (lab.json, nbdkit pidfiles, sockets, console
logs), so `down` can stop all of it even after an `up` that failed half-way;
`down` acts only on what that state file lists (lab/state.py owns it, the
lab's names and its domains' names).  Guests are transient libvirt domains:
destroying one leaves no definition.
`storlab ctl LAB NODE DEVICE COMMAND` (ctl.send_to_device) finds a device's
control socket in the state's device entries.
"""
import grp
import json
import os
import sys
import time

from storlab_cli import build, deps
from storlab_cli.lab import (accel, agent, appliance, hosts as lab_hosts, libvirt_conn, host_fit,
                             nbdkit, profile_status, profiles, render, snapshots,
                             state as lab_state)
from storlab_cli.lab.each_node import each_node
from storlab_cli.schema import device_check, topology
from storlab_cli.errors import UserError

QEMU_GROUP = "libvirt-qemu"
# openssh-client: a lab's remote hosts (qemu+ssh) are reached through ssh.
LAB_PACKAGES = ["qemu-system-x86", "libvirt-daemon-system", "libvirt-clients",
                "python3-libvirt", "python3-jinja2", "openssh-client"]
# A lab's device is released at its model's time (0), not early by the
# plugin's learnt transport gap (auto): a guest's next request follows its
# own kernel's work, so auto counts that work as transport and releases
# every I/O shorter than it at once (an SSD read under TCG: 99 % of them).
# What the NBD path adds on top is the hypervisor's, as the simulator's
# tcg preset charges it; a device's params may still set the key.
LATENCY_OFFSET_KEY = "latency-offset-us"
CONSOLE_TAIL_LINES = 25
CONSOLE_LOG_MAX_BYTES = 1 << 16        # of a remote log, the end is read
# Everything `up` needs on the host: building, libvirt and QEMU, the appliance's contents.
UP_PACKAGES = deps.BUILD_PACKAGES + LAB_PACKAGES + appliance.APPLIANCE_PACKAGES

run_dir = lab_state.run_dir
load_state = lab_state.load
_save_state = lab_state.save
known_labs = lab_state.known_labs


def _qemu_gid():
    try:
        return grp.getgrnam(QEMU_GROUP).gr_gid
    except KeyError:
        raise UserError(f"group {QEMU_GROUP} does not exist (is libvirt-daemon-system installed?)") from None


def _existing_domains(conn, names):
    """The domains of these exact names that libvirt knows (running or not)."""
    wanted = set(names)
    return [d for d in conn.listAllDomains() if d.name() in wanted]


def _domain_names(topo):
    return [lab_state.domain_name(topo.name, node.name) for node in topo.nodes]


def _check_ports_free(topo, hosts):
    """The udp ports each host's nodes listen on are free there
    (LabHost.udp_ports_in_use), the first taken one named with its link."""
    for host in hosts.values():
        links = {port: link for link in topo.links
                 for node, port in ((link.a, link.port_a), (link.b, link.port_b))
                 if topo.node(node).host.name == host.name}
        taken = host.udp_ports_in_use(list(links))
        if taken:
            link = links[taken[0]]
            if host.local:
                raise UserError(f"udp port 127.0.0.1:{taken[0]} (link {link.a}-{link.b}) "
                                "is in use")
            raise UserError(f"udp port {taken[0]} (link {link.a}-{link.b}) is in use on "
                            f"{host.describe()}")


def _say(message):
    print(f"storlab: {message}", flush=True)


def _console_tail(host, node):
    """The last lines of node's console log, in its run directory on host."""
    path = os.path.join(host.run_dir, f"{node}.console.log")
    try:
        if host.local:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        else:
            text = host.read_text(path, CONSOLE_LOG_MAX_BYTES, from_end=True)
    except (OSError, UserError):
        text = None
    if text is None:
        return f"(no console log at {path} on {host.describe()})"
    lines = text.splitlines()[-CONSOLE_TAIL_LINES:]
    return "\n".join("    " + line for line in lines) or "(console log is empty)"


def _make_data_dirs(topo, state, hosts):
    """Each host's device data directory (device_data = "disk"), listed in
    lab.json before it is made (a rollback or `down` removes it), and
    checked for room."""
    for host in hosts.values():
        if any(n.host.name == host.name for n in topo.nodes):
            state.data_dirs[host.name] = host.data_dir
            _save_state(state)
            host_fit.check_disk(topo, hosts, host, host.make_data_dir())


def _start_devices(topo, state, hosts, gids):
    for node in topo.nodes:
        host = hosts[node.host.name]
        for device in node.devices:
            stem = os.path.join(host.run_dir, f"{node.name}-{device.name}")
            params = [f"{k}={v}" for k, v in device.params.items()]
            if "file" not in device.params and host_fit.on_disk(topo, device):
                # the lab's scratch data: a flush need not wait for the host's disk
                data = os.path.join(host.data_dir, f"{node.name}-{device.name}.data")
                params += [f"file={data}", "file-sync=off"]
            if device.plugin in nbdkit.STORLAB_PLUGINS:
                params.append(f"stats={stem}.stats")
                if LATENCY_OFFSET_KEY not in device.params:
                    params.append(f"{LATENCY_OFFSET_KEY}=0")
            # ctl: the raid plugin's control socket (it makes it 0600, root's:
            # only root, `storlab ctl`, talks to it; the run dir is 0750).
            ctl = stem + ".ctl" if device.plugin in nbdkit.CONTROL_PLUGINS else None
            if ctl is not None:
                params.append(f"ctl={ctl}")
            entry = lab_state.DeviceEntry(
                node=node.name, device=device.name, plugin=device.plugin,
                socket=stem + ".sock", pidfile=stem + ".pid",
                stats=stem + ".stats" if device.plugin in nbdkit.STORLAB_PLUGINS else None,
                ctl=ctl, host=host.name)
            state.devices.append(entry)
            _save_state(state)
            nbdkit.start_on(host, device.plugin, host.plugin_argument(device.plugin), params,
                            entry.socket, entry.pidfile, gids[host.name],
                            wait_for=[ctl] if ctl else [])


def _prepare_hosts(state, hosts, image, local_gid):
    """Each remote host's run directory, plugin bundle and appliance (the
    local run directory is made already); returns host -> libvirt's qemu
    group id there. Every host is in lab.json before anything is made on
    it, so a rollback or `down` finds it."""
    gids = {}
    for host in hosts.values():
        if host.local:
            gids[host.name] = local_gid
            continue
        _say(f"  {host.name}: preparing {host.uri}")
        gids[host.name] = host.prepare()
        state.bundles[host.name] = ""         # its run directory is the lab's from now on
        _save_state(state)
        state.bundles[host.name] = host.bundle = host.ensure_bundle()
        _save_state(state)
        host.ensure_appliance(image)
    return gids


def _choose_accels(state, hosts, image, requested):
    """Each host's accelerator (accel.choose on that host, with the
    appliance's kernel as it holds it), recorded in lab.json with the lab's
    (lab_state.lab_accel). A reason names its host unless the lab runs here
    only, as labs did before hosts."""
    for host in hosts.values():
        chosen, reason = accel.choose(requested, host, host.appliance_there(image).kernel_path,
                                      os.path.join(lab_state.RUN_BASE, accel.CACHE_NAME))
        if not (host.local and len(hosts) == 1):
            reason = f"host '{host.name}': {reason}"
        state.accels[host.name] = {"accel": chosen, "reason": reason}
        _say(f"accelerator: {chosen} ({reason})")
    state.accel = lab_state.lab_accel(state.accels)
    _save_state(state)


def _domain_xml(state, topo, node, host, image):
    """node's domain as host runs it: the appliance where host holds it, the
    lab's run directory there, host's own accelerator."""
    return render.domain_xml(topo, node, host.appliance_there(image), host.run_dir,
                             lab_state.accel_of(state, host.name))


def _wait_for_agents(topo, where, started_s):
    """where: node -> the LabHost its domain runs on."""
    pending = {node: _host_domain(topo.name, host, node) for node, host in where.items()}
    deadline = started_s + topo.boot_timeout_s
    last_report = time.monotonic()
    while pending:
        for name in [n for n, dom in pending.items() if agent.answers(dom)]:
            del pending[name]
            _say(f"  {name}: guest agent answers ({time.monotonic() - started_s:.1f} s)")
        if not pending:
            return
        now = time.monotonic()
        if now > deadline:
            name = sorted(pending)[0]
            raise UserError(
                f"gate 'guest agent answers' failed for {', '.join(sorted(pending))} after "
                f"{topo.boot_timeout_s} s (boot_timeout_s); console of {name}:\n"
                + _console_tail(where[name], name))
        if now - last_report > 10:
            _say(f"  waiting for guest agents: {', '.join(sorted(pending))} "
                 f"({now - started_s:.0f}/{topo.boot_timeout_s} s)")
            last_report = now
        time.sleep(0.25)


def _check_not_up(topo, hosts):
    """A UserError when a lab of this name is up here or has a domain on any host."""
    if (load_state(topo.name) is not None or os.path.isdir(run_dir(topo.name))
            or any(_existing_domains(host.libvirt(), _domain_names(topo))
                   for host in hosts.values())):
        raise UserError(f"lab '{topo.name}' is already up (see `storlab status {topo.name}`; "
                        f"`storlab down {topo.name}` first)")


def up(topology_path, requested_accel=None):
    topo = topology.load(topology_path)             # every validation error before anything runs
    if topo.lab_refusal():
        raise UserError(topo.lab_refusal())
    requested = accel.check_requested(requested_accel or topo.accel)
    deps.ensure_packages(UP_PACKAGES)
    build.build()
    device_check.check([(topo, topo.path)])         # as the plugins will build them
    hosts = lab_hosts.from_topology(topo)
    _check_not_up(topo, hosts)
    _check_ports_free(topo, hosts)
    image = appliance.ensure()

    gid = _qemu_gid()
    directory = run_dir(topo.name)
    os.makedirs(lab_state.RUN_BASE, mode=0o755, exist_ok=True)
    os.makedirs(directory, mode=0o750)
    os.chown(directory, 0, gid)
    started_s = time.monotonic()
    state = lab_state.LabState(name=topo.name, topology=os.path.abspath(topology_path),
                               accel=requested, appliance=image.content_hash,
                               created=time.time(),
                               hosts=lab_hosts.state_entries(hosts),
                               placement={n.name: n.host.name for n in topo.nodes})
    _save_state(state)
    try:
        if len(hosts) > 1:
            _say("hosts: " + ", ".join(
                f"{h.name} ({', '.join(n.name for n in topo.nodes if n.host.name == h.name)})"
                for h in hosts.values()))
        gids = _prepare_hosts(state, hosts, image, gid)
        _choose_accels(state, hosts, image, requested)     # each host's, its appliance there
        host_fit.check(topo, hosts, {h: a["accel"] for h, a in state.accels.items()})
        if topo.device_data == "disk":
            _make_data_dirs(topo, state, hosts)
        _say(f"starting {sum(len(n.devices) for n in topo.nodes)} emulated devices")
        _start_devices(topo, state, hosts, gids)
        for node in topo.nodes:
            host = hosts[node.host.name]
            xml = _domain_xml(state, topo, node, host, image)
            name = lab_state.domain_name(topo.name, node.name)
            state.domains.append(name)
            _save_state(state)
            host.libvirt().createXML(xml, 0)
            _say(f"  {node.name}: domain {name} started" +
                 (f" on {host.name}" if len(hosts) > 1 else ""))
        _wait_for_agents(topo, {n.name: hosts[n.host.name] for n in topo.nodes}, started_s)
        if topo.profile is not None:
            state.phase = "provisioning"
            _save_state(state)
            state.profile = profiles.provision(topo, _domains_of(topo, hosts), _say)
            state.provisioned_after_s = round(time.monotonic() - started_s, 1)
    except BaseException as failure:
        _say(f"up failed; rolling back lab '{topo.name}'")
        try:
            _teardown(state)
        except Exception as cleanup_error:  # noqa: BLE001 - report both, keep the first
            _say(f"rollback incomplete: {cleanup_error}")
        if isinstance(failure, libvirt_conn.error_type()):
            raise UserError(f"libvirt: {failure.get_error_message()}") from None
        raise
    state.phase = "ready"
    state.ready_after_s = round(time.monotonic() - started_s, 1)
    _save_state(state)
    _say(f"lab '{topo.name}' is up: {len(topo.nodes)} nodes ready in {state.ready_after_s} s")
    return state


def _host_domain(lab, host, node):
    """The domain of lab's node on host (a libvirt error when it has none)."""
    return host.libvirt().lookupByName(lab_state.domain_name(lab, node))


def _domains_of(topo, hosts):
    return {node.name: _host_domain(topo.name, hosts[node.host.name], node.name)
            for node in topo.nodes}


def running_domains(state, hosts=None):
    """node -> domain of the lab's nodes that are running now, wherever they run."""
    hosts = hosts or lab_hosts.from_state(state)
    running = {}
    for node in lab_state.nodes_of(state):
        try:
            dom = _host_domain(state.name, lab_hosts.host_of_node(state, hosts, node), node)
        except libvirt_conn.error_type():
            continue
        if dom.isActive():
            running[node] = dom
    return running


def _lab_topology(lab, *nodes):
    """(state, topology) of a lab that is up and has every one of nodes."""
    state = lab_state.require(lab)
    for node in nodes:
        lab_state.require_node(state, node)
    topo = topology.load(state.topology)
    names = [n.name for n in topo.nodes]
    missing = [n for n in nodes if topo.name != lab or n not in names]
    if missing:
        raise UserError(f"lab '{lab}' has no node '{missing[0]}' in {state.topology}")
    return state, topo


def _distinct(lab, nodes):
    if len(set(nodes)) != len(nodes):
        twice = next(n for n in nodes if nodes.count(n) > 1)
        raise UserError(f"node {twice} of lab '{lab}' is named twice")
    return list(nodes)


def node_down(lab, *nodes):
    """Destroys the nodes' domains at once (a node failure, or a rack's); their
    disks keep running. The replicated volumes each served fail over to a
    running peer, also when the domain was already gone (a guest that crashed
    or was destroyed behind storlab's back): this is how its volumes move."""
    nodes = _distinct(lab, nodes)
    state, topo = _lab_topology(lab, *nodes)
    running = running_domains(state)
    # every one down before any failover (none moves there), together (about 2 s each)
    each_node([n for n in nodes if n in running], lambda n: running[n].destroy())
    for node in nodes:
        if node in running:
            running.pop(node)
            _say(f"node {node} of lab '{lab}' is down (its disks stay up)")
        else:
            _say(f"node {node} of lab '{lab}' was already down (its disks stay up)")
    if state.profile and state.profile.get("replicas"):
        try:
            for node in nodes:
                profiles.failover(topo, state.profile, running, node, _say)
        finally:
            _save_state(state)      # what moved is recorded even when a later step failed


def node_up(lab, *nodes):
    """Boots nodes that went down again, at once, on the same disks, and brings
    their storage profile back: each one's stack reassembled, replicas
    resyncing."""
    nodes = _distinct(lab, nodes)
    state, topo = _lab_topology(lab, *nodes)
    hosts = lab_hosts.from_state(state)
    where = {node: lab_hosts.host_of_node(state, hosts, node) for node in nodes}
    for node in nodes:
        name = lab_state.domain_name(lab, node)
        if any(d.isActive() for d in _existing_domains(where[node].libvirt(), [name])):
            raise UserError(f"node {node} of lab '{lab}' is already running")
    image = appliance.ensure()
    started_s = time.monotonic()
    booted = []
    try:
        for node in nodes:
            try:
                # on the host it ran on (lab.json), from its run directory there
                booted.append(where[node].libvirt().createXML(
                    _domain_xml(state, topo, topo.node(node), where[node], image), 0))
            except libvirt_conn.error_type() as e:
                raise UserError(f"libvirt on {where[node].name}: {e.get_error_message()}") from None
        _wait_for_agents(topo, where, started_s)
    except UserError:
        for dom in booted:             # all come up or none: no node left half back
            dom.destroy()
        raise
    if topo.profile is not None:
        try:
            for node in nodes:   # in order: a node's copies re-added before the next rejoins
                profiles.rejoin(topo, state.profile, running_domains(state, hosts), node, _say)
        finally:
            _save_state(state)
    for node in nodes:
        _say(f"node {node} of lab '{lab}' is up again ({time.monotonic() - started_s:.1f} s)")


def snapshot(lab, node, volume, action, snapshot_id=None, as_json=False):
    """`storlab snapshot`: create, delete or list the snapshots of node's
    workload volume (lab/snapshots.py); what changed is recorded in lab.json."""
    state, topo = _lab_topology(lab, node)
    if state.phase != "ready" or not state.profile:
        raise UserError(f"lab '{lab}' has no storage profile ready (phase {state.phase})")
    snapshots.volume_set(topo, node, volume)          # a volume node has, before libvirt
    domain = running_domains(state).get(node)
    if domain is None:
        raise UserError(f"node {node} of lab '{lab}' is down (`storlab node {lab} {node} up`)")
    if action == "list":
        report = snapshots.listing(topo, state.profile, domain, node, volume)
        print(json.dumps(report, indent=1) if as_json else snapshots.format_listing(report))
        return report
    try:
        if action == "create":
            made = snapshots.create(topo, state.profile, domain, node, volume)
            _say(f"snapshot {made['id']} of {node}/{volume} taken")
            return made
        gone = snapshots.delete(topo, state.profile, domain, node, volume, snapshot_id)
        _say(f"snapshot {gone['id']} of {node}/{volume} deleted")
        return gone
    finally:
        _save_state(state)


def _teardown_host(state, host, stopped):
    """Stops what the lab's state lists on host: its nodes' domains, its
    nbdkit servers; removes a remote host's run directory."""
    listed = set(state.domains)
    names = [lab_state.domain_name(state.name, node) for node in lab_state.nodes_of(state)
             if state.placement.get(node, host.name) == host.name]

    def stop_domain(dom):
        name = dom.name()
        try:
            persistent = dom.isPersistent()      # ask first: a destroyed transient domain is gone
            if dom.isActive():
                dom.destroy()
            if persistent:
                dom.undefine()
        except libvirt_conn.error_type() as e:
            if "not found" not in e.get_error_message().lower():
                raise UserError(f"cannot stop domain {name}: {e.get_error_message()}") from None
        return name

    # all at once: libvirt takes about 2 s to destroy a TCG guest, 12 s for six in a row
    domains = _existing_domains(host.libvirt(), [n for n in names if n in listed])
    stopped["domains"] += list(each_node(domains, stop_domain).values())
    for pidfile in nbdkit.stop_all_on(host, lab_state.own_files(state, "pidfile", host.name,
                                                                host.run_dir)):
        stopped["devices"].append(os.path.basename(pidfile)[:-len(".pid")])
    if host.name in state.data_dirs:                    # its servers are gone: their data too
        host.remove_data_dir()
    if not host.local and host.name in state.bundles:   # made by this lab's `up`
        host.remove_run_dir()


def _teardown(state):
    """Stops the domains and nbdkit servers the lab's state lists, on every
    host, and removes its run directories.  A host that cannot be reached
    does not stop the others; the local run directory (lab.json) then stays,
    so `down` can be run again.  Every host's shared ssh connection is
    closed, done or not (the next command opens another): none outlives the
    lab or its run directory.  Returns what it stopped."""
    stopped = {"domains": [], "devices": []}
    failures = []
    for host in lab_hosts.from_state(state).values():
        try:
            _teardown_host(state, host, stopped)
        except UserError as e:
            text = str(e)
            failures.append(text if text.startswith(f"host '{host.name}'")
                            else f"host '{host.name}': {text}")
        finally:
            host.close_connection()
    if failures:
        raise UserError(f"lab '{state.name}' is not all down ({'; '.join(failures)}); "
                        f"run `storlab down {state.name}` again once that is mended")
    _remove_run_dir(state.name)
    return stopped


_RUN_DIR = "a lab's run directory"


def _remove_run_dir(lab):
    lab_hosts.remove_local_dir(run_dir(lab), _RUN_DIR)   # the name was checked: RUN_BASE/<lab>


def down(lab):
    lab_hosts.check_not_a_link(run_dir(lab), _RUN_DIR)
    state = load_state(lab)
    if state is None:
        if os.path.isdir(run_dir(lab)):
            # an `up` that died before its first state write started nothing
            _remove_run_dir(lab)
            _say(f"lab '{lab}' had a run directory and no state: removed it")
            return {"domains": [], "devices": []}
        raise lab_state.no_such_lab(lab)
    stopped = _teardown(state)
    _say(f"lab '{lab}' is down: stopped {len(stopped['domains'])} domains and "
         f"{len(stopped['devices'])} device servers")
    return stopped


_DOMAIN_STATES = {0: "nostate", 1: "running", 2: "blocked", 3: "paused", 4: "shutdown",
                  5: "shutoff", 6: "crashed", 7: "pmsuspended"}


def lab_status(lab):
    state = lab_state.require(lab)
    hosts = lab_hosts.from_state(state)
    running, unreachable = {}, {}
    for host in hosts.values():             # one look a host at every server
        try:
            running.update(nbdkit.running_on(host, [d.pidfile for d in state.devices
                                                    if d.host == host.name and d.pidfile]))
        except UserError as e:
            unreachable[host.name] = str(e)
    # every node looked at at once: a guest answers its agent in about a
    # second under TCG, and a 16-node lab's status should not take 16
    nodes = list(each_node(lab_state.nodes_of(state), lambda node: _node_status(
        state, hosts, node, running, unreachable)).values())
    return {"name": lab, "phase": state.phase, "accel": state.accel,
            "topology": state.topology, "hosts": _host_reports(state, hosts),
            "ready_after_s": state.ready_after_s,
            "provisioned_after_s": state.provisioned_after_s,
            "profile": state.profile, "nodes": nodes}


def _node_status(state, hosts, node, running, unreachable):
    """node's entry of lab_status: its domain's state, whether its agent
    answers, its devices' servers, its storage stack. unreachable (host ->
    error) is shared by the nodes looked at at once."""
    lab = state.name
    host = lab_hosts.host_of_node(state, hosts, node)
    entry = {"node": node, "domain": lab_state.domain_name(lab, node), "host": host.name,
             "state": "absent", "agent": False}
    dom = None
    if host.name not in unreachable:
        try:
            dom = _host_domain(lab, host, node)
            entry["state"] = _DOMAIN_STATES.get(dom.state()[0], "unknown")
            entry["agent"] = entry["state"] == "running" and agent.answers(dom)
        except libvirt_conn.error_type():
            pass
        except UserError as e:        # its libvirt cannot be reached
            unreachable[host.name] = str(e)
    if host.name in unreachable:      # say so, and show the other hosts' nodes
        entry["state"], entry["error"] = "unreachable", unreachable[host.name]
    entry["devices"] = [
        {"device": d.device, "plugin": d.plugin, "socket": d.socket, "stats": d.stats,
         "ctl": d.ctl, "server": "running" if running.get(d.pidfile) else "stopped"}
        for d in state.devices if d.node == node]
    if state.profile is not None:
        entry["storage"] = profile_status.node_status(dom, node) if entry["agent"] else \
            {"error": f"node is {entry['state']}"}
    return entry


def _host_reports(state, hosts):
    """The lab's hosts as lab.json lists them, each with its accelerator and why."""
    return [{**entry, "accel": lab_state.accel_of(state, entry["name"]),
             "accel_reason": state.accels.get(entry["name"], {}).get("reason")}
            for entry in lab_hosts.state_entries(hosts)]


def format_status(report):
    several = len(report.get("hosts", [])) > 1       # a host column only when there is a choice
    lines = [f"lab {report['name']}: {report['phase']}, accel {report['accel']}, "
             f"topology {report['topology']}"]
    if several:
        lines += [f"  host {h['name']}: {h['uri']} (links: {h['address']}), accel {h['accel']}"
                  for h in report["hosts"]]

    def host_column(text):
        return f"{text:10} " if several else ""
    lines.append(f"  {'node':10} {host_column('host')}{'domain state':13} {'agent':6} devices")
    for n in report["nodes"]:
        devices = ", ".join(f"{d['device']}({d['plugin']}, {d['server']})" for d in n["devices"])
        lines.append(f"  {n['node']:10} {host_column(n.get('host', ''))}{n['state']:13} "
                     f"{'yes' if n['agent'] else 'no':6} {devices}")
        if n.get("error"):
            lines.append(f"  {'':10} {n['error']}")
        for d in n["devices"]:
            if d.get("ctl"):
                lines.append(f"  {'':10} {d['device']} control socket {d['ctl']} "
                             f"(storlab ctl {report['name']} {n['node']} {d['device']} COMMAND)")
        if "storage" in n:
            lines.append(f"  {'':10} {profile_status.summary(n['storage'])}")
    profile = report.get("profile")
    if profile:
        for node, entry in profile["nodes"].items():
            if entry["local"]:
                lines.append(f"  volumes of {node}: local {entry['local']}"
                             + (f", workload {' '.join(entry['volumes'])}" if entry["volumes"] else ""))
        running = {n["node"] for n in report["nodes"] if n["state"] == "running"}
        for r in profile.get("replicas", []):
            lines.append(f"  {profile_status.volume_summary(r)}")
            if r["serving"] and r["primary"] not in running:
                lines.append(f"    {r['primary']} is not running: `storlab node {report['name']} "
                             f"{r['primary']} down` fails volume {r['volume']} over")
        for volume, record in sorted(profile.get("snapshots", {}).items()):
            if record["live"]:
                lines.append(f"  snapshots of {volume}: "
                             f"{', '.join(str(s['id']) for s in record['live'])} "
                             f"(`storlab snapshot {report['name']} {volume.replace('/', ' ')} list`)")
    return "\n".join(lines)


def status(lab=None, as_json=False):
    labs = [lab] if lab else known_labs()
    if not labs:
        if as_json:
            print("[]")
        else:
            print("no labs are up")
        return 0
    for name in labs:                # an unknown lab is an error before touching libvirt
        lab_state.require(name)
    reports = [lab_status(name) for name in labs]
    if as_json:
        print(json.dumps(reports if lab is None else reports[0], indent=2))
    else:
        print("\n".join(format_status(r) for r in reports))
    return 0


def _domain_for(lab, node):
    """(domain, host) of a lab's node."""
    state = lab_state.require(lab)
    lab_state.require_node(state, node)
    host = lab_hosts.host_of_node(state, lab_hosts.from_state(state), node)
    try:
        return _host_domain(lab, host, node), host
    except libvirt_conn.error_type():
        raise UserError(f"domain {lab_state.domain_name(lab, node)} of lab '{lab}' is not "
                        f"running (on {host.describe()})") from None


def exec_in(lab, node, argv, timeout_s=3600):
    """Runs argv in the node; relays its output; returns its exit code."""
    code, out, err = agent.run(_domain_for(lab, node)[0], argv, timeout_s=timeout_s)
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    sys.stderr.flush()
    return code


def console(lab, node):
    dom, host = _domain_for(lab, node)
    os.execvp("virsh", ["virsh", "-c", host.uri, "console", dom.name()])
