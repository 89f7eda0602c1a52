"""The lab backend of `storlab sweep`: fio in every active guest at once
(through the guest agent), the device knobs and live events sent to the
raid devices' control sockets, and the plugins' stats read at the start
and end of the measured window.

Timing: every node's job files are written first, then each node's
units are started together by one launcher (one agent command a node:
a guest whose vCPU already runs fio answers its agent late, so no command
waits on one). Every fio thread then waits at the node's start gate until
all threads of every node wait there, and the host opens the gates one
right after another: the units' I/O starts within the agents' round trips
of each other, where fio's own start-up under TCG spread a node's eight
units over 1-29 s of a 12 s run. From the gates' opening one loop on the
host clock takes the stats snapshots (window start and end) and sends the
events (window start + at_s); the window starts after the ramp and a
start skew allowance (fio_jobfile.window_start_s). Host and guests agree
on that clock to within the agent's round trip (milliseconds under TCG). A point's IOPS and mean
latency are what every thread did in that window, read from fio's
interval logs in the guests' clock (results.fio_window); fio runs a
little past it."""
import glob
import json
import os
import re
import threading
import time

from storlab_cli.lab import agent, hosts as lab_hosts, lifecycle, state as lab_state
from storlab_cli.lab import profile_status, snapshots as volume_snapshots
from storlab_cli.lab.each_node import each_node
from storlab_cli.live import ctl, stats_snapshot
from storlab_cli.schema.sweep import LIVE_KNOBS, TARGET_SHARE, TARGET_VOLUMES
from storlab_cli.schema.sizes import parse_size_bytes
from storlab_cli.sweep import fio_jobfile, plan as sweep_plan
from storlab_cli.sweep.fio_launcher import (GATE, GUEST_DIR, LAUNCHER, gate_go_script,
                                           gate_passes_script, gate_state_script,
                                           job_files_script, split_unit_logs,
                                           stuck_listing_script, unit_logs_script)
from storlab_cli.results import (device_window, fio_hist_log, fio_merge, fio_window,
                                 host_limit, stack_window, timeline)
from storlab_cli.sweep.raw_point import RawPoint
from storlab_cli.common.last_line import last_line
from storlab_cli.errors import UserError

PROFILE_LIB = "/usr/lib/storlab/profiles/lib.sh"
POLL_S = 0.1
# fio's own start-up and JSON output, on top of ramp + duration, under TCG.
FIO_SLACK_S = 300
FIO_RESULT_RE = re.compile(r"fio-(?P<node>.+)-u[0-9]+\.json")     # fio-NODE-uUNIT.json
PRECONDITION_TIMEOUT_S = 3600
GATE_POLL_S = 0.5
# fio's start-up under TCG, every thread at its gate: 29 s seen for 8 units
# on one vCPU
GATE_TIMEOUT_S = 300


class FioStuck(UserError):
    """A point's fio outlived its timeout (its threads' listing kept)."""


class LabBackend:
    name = "lab"

    def __init__(self, sweep, topo, plan, say, keep_lab=False):
        self.sweep, self.topo, self.plan, self.say = sweep, topo, plan, say
        self.keep_lab = keep_lab
        self.brought_up = False
        self.domains = {}
        self.running = []          # (domain, pid) of the fio launchers now in the guests
        self.point_snapshots = []  # (node, volume, id) the running point's events took
        self.state = None

    # ---- lab lifecycle -----------------------------------------------------------

    def __enter__(self):
        state = lifecycle.load_state(self.topo.name)
        if state is None:
            self.say(f"bringing lab '{self.topo.name}' up for the sweep")
            lifecycle.up(self.topo.path)
            self.brought_up = True
            state = lifecycle.load_state(self.topo.name)
        elif state.phase != "ready":
            raise UserError(f"lab '{self.topo.name}' is {state.phase}, not ready "
                            f"(`storlab down {self.topo.name}` and retry)")
        elif os.path.realpath(state.topology) != os.path.realpath(self.topo.path):
            raise UserError(f"lab '{self.topo.name}' is up from {state.topology}, not "
                            f"{self.topo.path}: take it down first")
        else:
            self.say(f"reusing lab '{self.topo.name}' (it stays up afterwards)")
        self.state = state
        self.hosts = lab_hosts.from_state(state)
        try:
            running = lifecycle.running_domains(state)
            # a sweep measures the whole lab: a node left down would skew every point
            for node in self.topo.nodes:
                if node.name not in running:
                    raise UserError(f"node {node.name} of lab '{self.topo.name}' is down "
                                    f"(`storlab node {self.topo.name} {node.name} up`)")
            self.domains = {node: running[node] for node in self.plan.nodes}
            self.paths = {node: self._resolve_target(node) for node in self.plan.nodes}
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self._kill_running()
        if self.brought_up and not self.keep_lab:
            self.say(f"taking lab '{self.topo.name}' down")
            lifecycle.down(self.topo.name)
        return False

    def _kill_running(self):
        for domain, pid in self.running:
            try:
                agent.run(domain, ["/bin/kill", str(pid)], timeout_s=10)
            except Exception:  # noqa: BLE001 - best effort: the guest may be gone
                pass
        self.running = []

    # ---- facts and paths ---------------------------------------------------------

    def _guest(self, node, argv, stdin_bytes=None, timeout_s=60):
        """A command that reads, or writes the same again: run once more when
        a busy guest's agent lost its result."""
        out = agent.run_checked(self.domains[node], argv, f"{node}: {' '.join(argv[:2])}",
                                timeout_s=timeout_s, stdin_bytes=stdin_bytes, again_if_lost=True)
        return out.decode(errors="replace")

    def _resolve_target(self, node):
        target = self.sweep.workload["target"]
        if target == TARGET_VOLUMES:
            return None
        if target == TARGET_SHARE:
            share = f"{self.topo.profile.nfs.mount_point}/{node}"
            self._guest(node, ["/bin/sh", "-c", f". {PROFILE_LIB}; mounted {share} || "
                               f"{{ echo 'share {share} is not mounted' >&2; exit 1; }}"])
            return share
        script = f". {PROFILE_LIB}; disk_by_serial {target}"
        try:
            return self._guest(node, ["/bin/sh", "-c", script]).strip()
        except UserError:
            raise UserError(f"{node}: the guest shows no disk with serial '{target}'") from None

    def facts(self):
        node = self.plan.nodes[0]
        kernel = self._guest(node, ["/bin/uname", "-r"]).strip()
        fio = self._guest(node, ["/usr/bin/fio", "--version"]).strip()
        return {"accelerator": self.state.accel,
                "versions": {"kernel": kernel, "fio_guest": fio}}

    # ---- stats and control -------------------------------------------------------

    def _stats_entry(self, node, device):
        for entry in self.state.devices:
            if entry.node == node and entry.device == device:
                return entry
        return None

    def _snapshot(self):
        """storlab-stats JSON of every device the point touches, on its host."""
        snaps = {}
        for node, name in self.plan.stats_devices:
            entry = self._stats_entry(node, name)
            if entry is not None and entry.stats is not None:
                try:
                    snaps[(node, name)] = stats_snapshot.take(entry.stats,
                                                              self.hosts.get(entry.host))
                except UserError:       # a device whose server is gone has no window
                    pass
        return snaps

    def _stack_nodes(self):
        """The nodes whose disk groups a point's window reads (stack_window.py)."""
        profile = self.topo.profile
        return sorted(self.domains) if profile is not None and profile.disk_group else []

    def _stack_status(self, node):
        """{"t_s", "caches"}: the node's read caches and write buffers now, or
        None where its guest did not say (the point then has no such figure)."""
        try:
            out = self._guest(node, ["/bin/sh", "-c", "dmsetup status"], timeout_s=30)
        except UserError:
            return None
        return {"t_s": time.monotonic(), "caches": profile_status.parse_dmsetup_status(out)}

    def _control(self, node, device, command):
        return ctl.send_to_device(self.topo.name, node, device, command)

    def _apply_knobs(self, point):
        for knob, value in point.device_knobs().items():
            for node in self.plan.nodes:
                self._control(node, self.sweep.workload["target"], f"{LIVE_KNOBS[knob]} {value}")

    def _snapshot_event(self, event, workload, sent_s):
        """A snapshot of every volume the point drives (or each one's oldest
        deleted), node by node; recorded in lab.json as `storlab snapshot`'s."""
        done = []
        try:
            for node, name in self._driven_volumes(workload):
                started_s = time.monotonic()
                if event.command == "snapshot":
                    made = volume_snapshots.create(self.topo, self.state.profile,
                                            self.domains[node], node, name)
                    self.point_snapshots.append((node, name, made["id"]))
                else:
                    made = volume_snapshots.delete(self.topo, self.state.profile,
                                            self.domains[node], node, name)
                done.append({"t_s": round(sent_s, 3), "node": node, "volume": name,
                             "command": event.command, "snapshot": made["id"],
                             "took_s": round(time.monotonic() - started_s, 3)})
        finally:
            lab_state.save(self.state)
        return done

    def _driven_volumes(self, workload):
        """(node, volume) of every workload volume a point's fio drives."""
        volumes = self.topo.profile.volume_set(workload["volume_set"])
        return [(node, name) for node in sweep_plan.point_nodes(self.plan, workload)
                for unit in range(1, workload["units"] + 1) for name in volumes.unit_names(unit)]

    def _drop_point_snapshots(self):
        """The snapshots a point's events took and left, deleted after its
        measured window (newest first), so every point starts from the chain
        the sweep started with."""
        try:
            while self.point_snapshots:
                node, name, snapshot_id = self.point_snapshots.pop()
                live = self.state.profile["snapshots"][f"{node}/{name}"]["live"]
                if any(s["id"] == snapshot_id for s in live):
                    volume_snapshots.delete(self.topo, self.state.profile, self.domains[node], node,
                                     name, snapshot_id)
        finally:
            lab_state.save(self.state)

    # ---- running fio -------------------------------------------------------------

    def _workers(self, node, unit, workload):
        if self.sweep.workload["target"] == TARGET_SHARE:
            return fio_jobfile.file_workers(node, unit, workload["workers"], self.paths[node])
        if self.paths[node] is not None:
            return fio_jobfile.region_workers(node, unit, workload, self.paths[node])
        volumes = self.topo.profile.volume_set(workload["volume_set"])
        names = [volumes.guest_path(name) for name in volumes.unit_names(unit)]
        return fio_jobfile.volume_workers(node, unit, names)

    def _start_all(self, jobs, gated=False):
        """jobs: {(node, unit): (stem, job text)}. Every node's job files are
        written (one agent command a node, before any fio runs), then each
        node's units started by one launcher; gated, their threads wait at
        the node's start gate (_open_gates). Returns {node: its pid}."""
        by_node = {}
        for (node, _), (stem, text) in sorted(jobs.items()):
            by_node.setdefault(node, {})[stem] = text
        for node, texts in by_node.items():
            script = job_files_script(GUEST_DIR, texts)
            if gated:                  # the last point's gate gone before anyone looks at it
                script = f"rm -rf {GATE}\n".encode() + script
            self._guest(node, ["/bin/sh"], stdin_bytes=script)
        started = {}
        for node, texts in by_node.items():
            pid = agent.start(self.domains[node], ["/bin/sh", "-c", LAUNCHER, "fio-launcher",
                                                   GATE if gated else "", *texts])
            self.running.append((self.domains[node], pid))
            started[node] = pid
        return started

    def _open_gates(self, jobs, stuck_dir):
        """Waits until every node's fio threads wait at its gate (a node
        one of whose units' fio has ended already is waited for no more:
        its error comes with the results), then opens every gate."""
        threads, units = {}, {}
        for (node, _), (_, text) in jobs.items():
            threads[node] = threads.get(node, 0) + fio_jobfile.threads_of(text)
            units[node] = units.get(node, 0) + 1
        deadline = time.monotonic() + GATE_TIMEOUT_S
        waiting = set(threads)
        while waiting:
            for node in sorted(waiting):
                state = self._guest(node, ["/bin/sh", "-c", gate_state_script(GATE)]).split()
                if len(state) == 2 and (int(state[0]) >= threads[node]
                                        or int(state[1]) < units[node]):
                    waiting.discard(node)
            if waiting and time.monotonic() > deadline:
                self._record_stuck(sorted(waiting), stuck_dir)
                self._kill_running()
                raise FioStuck(f"fio's threads not all at the start gate after "
                               f"{GATE_TIMEOUT_S} s in {', '.join(sorted(waiting))} "
                               f"(fio's threads: {stuck_dir}/stuck-NODE.txt)")
            if waiting:
                time.sleep(GATE_POLL_S)
        opened = {node: agent.start(self.domains[node], ["/bin/sh", "-c", gate_go_script(GATE)])
                  for node in sorted(threads)}
        for node, pid in opened.items():
            try:
                code, _, err = agent.wait(self.domains[node], pid, timeout_s=90,
                                          what=f"{node}'s start gate")
            except agent.StatusLost:
                # it ended; had no launcher taken the go, the point's timeout says so
                code, err = 0, b""
            if code != 0:
                # seen once in 20 points of hybrid-outstanding-io (4 x 64 threads): a
                # point like a hung one, run again
                self._record_stuck([node], stuck_dir)
                self._kill_running()
                raise FioStuck(f"{node}: its fio launcher took no go at the start gate "
                               f"({last_line(err, f'exit {code}')}; its state: "
                               f"{stuck_dir}/stuck-{node}.txt)")

    def _unit_results(self, jobs, point_label):
        """{(node, unit): fio's JSON (bytes)} once the launchers have exited;
        a unit whose fio failed raises its stderr's last line."""
        results = {}
        for key, (stem, _) in sorted(jobs.items()):
            read = (f'read rc < {stem}.rc || {{ echo "fio left no exit status" >&2; exit 125; }}; '
                    f'[ "$rc" = 0 ] || '
                    f'{{ cat {stem}.err >&2; exit "$rc"; }}; '
                    # from fio's JSON on: the lines a prerun's output makes fio print first are not it
                    f"sed -n '/^{{/,$p' {stem}.json")
            results[key] = self._check(key, agent.run(self.domains[key[0]], ["/bin/sh", "-c", read],
                                                      timeout_s=120, again_if_lost=True),
                                       point_label)
        return results

    def _record_stuck(self, nodes, where):
        """Each node's fio threads (stuck_listing_script) added to where/stuck-NODE.txt
        under the time, best effort: the guest may not answer."""
        for node in nodes:
            try:
                code, out, _ = agent.run(self.domains[node], ["/bin/sh", "-c", stuck_listing_script()],
                                         timeout_s=60)
                with open(os.path.join(where, f"stuck-{node}.txt"), "ab") as f:
                    f.write(time.strftime("# %H:%M:%S tid state wchan\n").encode())
                    f.write(out if code == 0 else b"(no listing)\n")
            except Exception:  # noqa: BLE001 - a diagnosis, never a second failure
                pass

    def _wait_all(self, started, timeout_s, timers=(), stuck_dir=None):
        """Polls every launcher ({node: pid}) until all exit, firing (due_s, fn) timers on the
        way; returns {node: the launcher's (exit code, stdout, stderr)}."""
        t0 = time.monotonic()
        pending = dict(started)
        timers = sorted(timers, key=lambda t: t[0])
        results = {}
        while pending:
            now_s = time.monotonic() - t0
            while timers and timers[0][0] <= now_s:
                timers.pop(0)[1]()
            for node, pid in list(pending.items()):
                try:
                    result = agent.poll(self.domains[node], pid)
                except agent.StatusLost:
                    # the launcher ended; its units' outcomes are in their files
                    result = (0, b"", b"")
                if result is not None:
                    results[node] = result
                    del pending[node]
                    self.running.remove((self.domains[node], pid))
            if now_s > timeout_s:
                stuck = sorted(pending)
                if stuck_dir:
                    self._record_stuck(stuck, stuck_dir)
                self._kill_running()
                where = f" (fio's threads: {stuck_dir}/stuck-NODE.txt)" if stuck_dir else ""
                raise FioStuck(f"fio still running after {timeout_s:.0f} s in "
                               f"{', '.join(stuck)}{where}")
            time.sleep(POLL_S)
        for due_s, fn in timers:          # fio ended early: fire what is left
            fn()
        return results

    def _check(self, key, result, point_label):
        code, out, err = result
        if code != 0:
            unit = f" unit {key[1]}" if key[1] else ""
            raise UserError(f"fio on {key[0]}{unit} ({point_label}): "
                            f"{last_line(err, f'exit {code}')}")
        return out

    def _launchers_done(self, launched, point_label):
        for node, result in sorted(launched.items()):
            self._check((node, 0), result, f"{point_label}: its launcher")

    def precondition(self):
        """Sequential 1M writes over the regions every point uses, all
        nodes at once. The profile's volumes were written when provisioned."""
        if self.sweep.workload["target"] == TARGET_VOLUMES:
            return "volumes written once when the profile was provisioned"
        workloads = [p.workload(self.sweep.workload) for p in self.sweep.points]
        jobs = {}
        for node in self.plan.nodes:
            if self.sweep.workload["target"] == TARGET_SHARE:
                # every file any point uses, each at the largest size
                workers = [worker for unit in range(1, max(w["units"] for w in workloads) + 1)
                           for worker in fio_jobfile.file_workers(
                               node, unit, max(w["workers"] for w in workloads), self.paths[node])]
                text = fio_jobfile.precondition(
                    max(parse_size_bytes(w["size"]) for w in workloads), workers)
            else:
                span_bytes = max(w["units"] * w["workers"] * parse_size_bytes(w["size"])
                                 for w in workloads)
                text = fio_jobfile.precondition(
                    span_bytes, [fio_jobfile.Worker(f"{node}-fill", self.paths[node], 0)])
            jobs[(node, 0)] = (f"{GUEST_DIR}/{node}-fill", text)
        self._launchers_done(self._wait_all(self._start_all(jobs), PRECONDITION_TIMEOUT_S),
                             "precondition")
        self._unit_results(jobs, "precondition")
        return "sequential fill of every worker's region"

    def run_point(self, point, point_dir):
        """The point measured; one whose fio hangs (2 points in about 30 of
        32 fio processes at once under TCG, cause not found) is run again
        once, its stuck threads listed."""
        try:
            self._measure(point, point_dir)
        except FioStuck as stuck:
            self.say(f"point {point.index}: {stuck}; running it again")
            self._measure(point, point_dir)

    def _measure(self, point, point_dir):
        workload = point.workload(self.sweep.workload)
        phases = self.sweep.phases
        self._apply_knobs(point)
        jobs = {}
        for node in sweep_plan.point_nodes(self.plan, workload):
            for unit in range(1, workload["units"] + 1):
                stem = f"{GUEST_DIR}/{node}-u{unit}"
                text = fio_jobfile.measured(workload, phases, self._workers(node, unit, workload),
                                            randseed=fio_jobfile.unit_randseed(unit, len(jobs)),
                                            log_prefix=stem, start_gate=f"{GATE}/wait")
                with open(os.path.join(point_dir, f"job-{node}-u{unit}.fio"), "w",
                          encoding="utf-8") as f:
                    f.write(text)
                jobs[(node, unit)] = (stem, text)
        started = self._start_all(jobs, gated=True)
        self._open_gates(jobs, point_dir)
        snapshots, events, stacks = {}, [], {}
        stack_nodes, stack_threads = self._stack_nodes(), []

        def take_stacks(when):
            # the guests answer in their own time: beside the timers, not in their way
            def take():
                stacks[when] = each_node(stack_nodes, self._stack_status)
            if stack_nodes:
                stack_threads.append(threading.Thread(target=take, daemon=True))
                stack_threads[-1].start()

        def snap_before():
            snapshots["before"] = self._snapshot()
            take_stacks("before")

        def snap_after():
            snapshots["after"] = self._snapshot()
            take_stacks("after")

        def fire(event):
            def send():
                sent_s = time.monotonic() - measured_t0[0]
                if event.is_snapshot:
                    events.extend(self._snapshot_event(event, workload, sent_s))
                    return
                for node in self.plan.nodes:
                    reply = self._control(node, event.device, event.command)
                    events.append({"t_s": round(sent_s, 3), "node": node,
                                   "device": event.device, "command": event.command,
                                   "reply": reply})
            return send

        # the devices' window and the events' clock are the guests' (fio_window): the window
        # starts after the ramp and the threads' start skew; fio runs on past its end
        window_s = fio_jobfile.window_start_s(phases)
        measured_t0 = [time.monotonic() + window_s]
        timers = [(window_s, snap_before), (window_s + phases["duration_s"], snap_after)]
        timers += [(window_s + e.at_s, fire(e)) for e in point.events]
        timeout_s = (window_s + phases["duration_s"] + fio_jobfile.logged_tail_s(phases)
                     + FIO_SLACK_S)
        try:
            launched = self._wait_all(started, timeout_s, timers, stuck_dir=point_dir)
        finally:
            self._drop_point_snapshots()
            for thread in stack_threads:
                thread.join()
        self._launchers_done(launched, f"point {point.index}")
        each_node(sorted({node for node, _ in jobs}),
                  lambda node: self._fetch_node(node, jobs, point, point_dir))
        for (node, device), after in snapshots["after"].items():
            before = snapshots.get("before", {}).get((node, device))
            with open(os.path.join(point_dir, f"device-{node}-{device}.json"), "w",
                      encoding="utf-8") as f:
                json.dump({"before": before, "after": after}, f)
        for node in stack_nodes:
            with open(stack_window.path(point_dir, node), "w", encoding="utf-8") as f:
                json.dump({when: stacks.get(when, {}).get(node) for when in ("before", "after")},
                          f)
        with open(os.path.join(point_dir, "events.json"), "w", encoding="utf-8") as f:
            json.dump(events, f, indent=1)

    def _fetch_node(self, node, jobs, point, point_dir):
        """One node's results: each unit's fio JSON and logs, and its gate
        passes (every node's at once: a busy guest's agent answers slowly)."""
        mine = {key: job for key, job in jobs.items() if key[0] == node}
        for (_, unit), out in self._unit_results(mine, f"point {point.index}").items():
            with open(os.path.join(point_dir, f"fio-{node}-u{unit}.json"), "wb") as f:
                f.write(out)
            self._fetch_logs(node, f"{GUEST_DIR}/{node}-u{unit}",
                             os.path.join(point_dir, f"fio-{node}-u{unit}-logs"))
        self._fetch_gate_passes(node, point_dir)

    def _fetch_gate_passes(self, node, point_dir):
        """When each of a node's fio threads went through the start gate
        (JOB.prerun.txt:UPTIME_S lines, the guest's uptime) into
        gate-NODE.txt: did a unit that ran late go through late, or start
        its I/O late after it."""
        out = self._guest(node, ["/bin/sh", "-c", gate_passes_script(GATE)], timeout_s=60)
        with open(fio_window.gate_file(point_dir, node), "w", encoding="utf-8") as f:
            f.write(out)

    def _fetch_logs(self, node, stem, local_dir):
        """fio's per-interval logs of one unit, copied next to its JSON."""
        logs = split_unit_logs(self._guest(node, ["/bin/sh", "-c", unit_logs_script(stem)],
                                           timeout_s=300))
        os.makedirs(local_dir, exist_ok=True)
        for name, text in logs.items():
            with open(os.path.join(local_dir, name), "w", encoding="utf-8") as f:
                f.write(text)


# ---- reading a point back ----

def _activity_span_s(doc):
    """From the first snapshot to the device's last activity (the engine's
    clock of each record's last update), or None when nothing moved. The
    runner's timers and the guests' fio do not start together: the span
    holds the I/Os counted, where duration_s overstated rates by 5-20 %
    (scripts/bench/cluster_validation.md)."""
    try:
        span_ns = doc["after"]["devices"][0]["now_ns"] - doc["before"]["devices"][0]["now_ns"]
    except (KeyError, IndexError, TypeError):
        return None
    return span_ns / 1e9 if isinstance(span_ns, int) and span_ns > 0 else None


def _lab_device_windows(directory, duration_s):
    """[(device name, DeviceWindow)] of the point's device-NODE-DEVICE.json files."""
    windows = []
    for path in sorted(glob.glob(os.path.join(directory, "device-*.json"))):
        doc = device_window.load(path)
        if doc.get("before") is None:
            continue          # fio ended before the ramp did: no window
        device = os.path.basename(path)[:-len(".json")].rsplit("-", 1)[-1]   # no '-' in device names
        window_s = _activity_span_s(doc) or duration_s
        windows.append((device, device_window.window_between(doc["before"], doc["after"], path,
                                                             window_s=window_s)))
    return windows


def _host_limit(sweep, workload, windows, late_start, long_io):
    """The point's host_limit (host_limit.REASONS codes joined by '+', "" for
    none): the target device gets units x workers x iodepth outstanding I/Os;
    devices under the guests' stack get what the stack makes of it (unknown);
    late_start: a fio thread started after the window began; long_io: fio's
    I/Os outlasted the time from the gate to the window."""
    offered = workload["units"] * workload["workers"] * workload["iodepth"]
    loads = [host_limit.DeviceLoad(
        offered_depth=offered if sweep.target_is_device and device == workload["target"] else None,
        mean_queue_depth=w.mean_queue_depth, mean_latency_us=w.dev_lat_mean_us,
        release_late_p99_us=w.release_late_p99_us) for device, w in windows]
    return host_limit.point_reasons(loads, late_start, long_io)


def _unit_logs(directory):
    """{(node, "NODE-uUNIT"): [(iops log, clat log)]} of the point's units
    whose fio logged (fio-NODE-uUNIT-logs/)."""
    logs = {}
    for path in sorted(glob.glob(os.path.join(directory, "fio-*-logs"))):
        unit = os.path.basename(path)[len("fio-"):-len("-logs")]
        node = FIO_RESULT_RE.fullmatch(f"fio-{unit}.json")["node"]
        logs[(node, unit)] = timeline.fio_log_pairs(os.path.join(path, unit))
    return logs


def _logged_in_window(directory):
    """Whether the point's fio logged in the gate's clock (results of an
    earlier storlab: each thread's logs count from its own start)."""
    jobs = sorted(glob.glob(os.path.join(directory, "job-*.fio")))
    if not jobs:
        return False
    with open(jobs[0], encoding="utf-8") as f:
        return fio_jobfile.logs_in_gate_clock(f.read())


def _node_windows(directory, phases, nodes):
    return {node: fio_window.node_window(fio_window.gate_file(directory, node), phases)
            for node in sorted(nodes)}


def _lab_timeline(unit_logs, interval_ms, windows, duration_s):
    """The point's timeline: in each node's window (0 at its start) when
    its fio logged in the gate's clock, from the histogram logs where every
    thread has one (results/fio_window.py says why), else from each
    thread's start."""
    if windows is None:
        pairs = [pair for pairs in unit_logs.values() for pair in pairs]
        return timeline.fio_samples(pairs, interval_ms) if pairs else []
    samples = []
    for node, window in windows.items():
        pairs = [pair for (n, _), pairs in unit_logs.items() if n == node for pair in pairs]
        hists = [fio_hist_log.path_beside(clat) for _, clat in pairs]
        if pairs and all(hists):
            samples += [s for hist in hists for s in fio_window.hist_samples(
                hist, interval_ms, window.start_ms, duration_s * 1000)]
        elif pairs:
            samples += timeline.fio_samples(pairs, interval_ms, start_ms=window.start_ms,
                                            end_ms=duration_s * 1000)
    return samples


def _lab_events(directory):
    path = os.path.join(directory, "events.json")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        sent = json.load(f)
    # one mark per event fired: its records (a node or volume each) share the
    # time it was sent; the same command fired again is another mark
    return sorted({(event["t_s"], event["command"]) for event in sent})


def _units_end_spread_s(docs):
    """How far apart the units' fio ended (each JSON's timestamp_ms; docs as
    fio_merge.load_files gives them), or None for one unit. The units start
    their I/O together at the gate and run the same time: a spread beyond
    fio's own ending says some thread started its I/O late (what it did
    after the window is not counted in the point's figures)."""
    ends_ms = [doc.get("timestamp_ms") for doc, _ in docs]
    ends_ms = [e for e in ends_ms if isinstance(e, int)]
    return round((max(ends_ms) - min(ends_ms)) / 1000, 1) if len(ends_ms) > 1 else None


def _nodes_of(sources):
    """How many nodes the fio-NODE-uUNIT.json files are of."""
    return len({m["node"] for m in (FIO_RESULT_RE.fullmatch(os.path.basename(s))
                                    for s in sources) if m})


def read_point(directory, sweep, point):
    """The point's figures from what run_point left: fio-NODE-uUNIT.json
    (fio json+) and its -logs/ (per-interval logs; with gate-NODE.txt, each
    thread's pass through the gate, they give IOPS, bandwidth, mean
    latency and, where fio logged histograms, percentiles over the window), device-NODE-DEV.json
    ({"before", "after"} storlab-stats snapshots of the measured window),
    events.json (what was sent when)."""
    sources = sorted(glob.glob(os.path.join(directory, "fio-*-u*.json")))
    docs = fio_merge.load_files(sources)
    phases = sweep.phases
    named = _lab_device_windows(directory, phases["duration_s"])
    summary = fio_merge.merge_docs(docs) if docs else {}
    # fio's own mean over each thread's run: the window's may have no I/O at all
    long_io = bool(docs) and host_limit.long_io(summary.total.lat_mean_us,
                                                fio_jobfile.window_start_s(phases))
    unit_logs = _unit_logs(directory)
    windows, late_start = None, False
    if unit_logs and docs and _logged_in_window(directory):
        windows = _node_windows(directory, phases, {node for node, _ in unit_logs})
        jobs = [(iops, clat, fio_hist_log.path_beside(clat), windows[node])
                for (node, _), pairs in unit_logs.items() for iops, clat in pairs]
        log_interval_ms = fio_jobfile.log_interval_s(phases) * 1000
        summary = fio_window.over_window(summary, jobs, log_interval_ms, phases["duration_s"])
        late_start = fio_window.late_starters(jobs, log_interval_ms) > 0
    interval_ms = phases["interval_s"] * 1000
    return RawPoint(
        sources=sources, summary=summary,
        windows=[w for _, w in named],
        host_limit=(_host_limit(sweep, point.workload(sweep.workload), named, late_start, long_io)
                    if named else host_limit.point_reasons([], late_start, long_io) or None),
        samples=(_lab_timeline(unit_logs, interval_ms, windows, phases["duration_s"])
                 if interval_ms else []),
        events=_lab_events(directory), nodes=_nodes_of(sources),
        extra={"units_end_spread_s": _units_end_spread_s(docs), **stack_window.metrics(directory)})
