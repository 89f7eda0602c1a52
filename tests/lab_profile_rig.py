"""What the storage-profile lab tests share: the storlab CLI and a guest
command run from the host, a lab brought up from a topology file and always
taken down, fio verify, a short sweep, and md's state read from
`storlab status`. Each test_lab_profile_*.py file brings up its labs
(module-scoped: down when the file's tests are done)."""
import concurrent.futures
import contextlib
import csv
import json
import os
import subprocess
import time

import pytest

from storlab_cli import paths
from storlab_cli.lab import libvirt_conn, state as lab_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORLAB = os.path.join(ROOT, "scripts", "storlab")
TOPOLOGIES = os.path.join(ROOT, "topologies")
RUN_BASE = os.environ.get("STORLAB_RUN_DIR", "/run/storlab")


def storlab(*args, timeout=900):
    return subprocess.run(["/usr/bin/python3", STORLAB, *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


def guest(lab, node, *argv, timeout=600):
    result = storlab("exec", lab, node, "--", *argv, timeout=timeout)
    assert result.returncode == 0, f"{argv} on {node}: {result.stdout}{result.stderr}"
    return result.stdout


def status(lab):
    result = storlab("status", lab, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def storage(lab, node):
    return next(n for n in status(lab)["nodes"] if n["node"] == node)["storage"]


def fio_verify(lab, node, filename, size="8M", extra=()):
    """Random 4k writes with crc32c, every block read back and checked."""
    out = guest(lab, node, "fio", "--name=verify", f"--filename={filename}",
                "--ioengine=libaio", "--direct=1", "--rw=randwrite", "--bs=4k",
                f"--size={size}", "--iodepth=8", "--verify=crc32c", "--do_verify=1",
                "--verify_fatal=1", "--output-format=json", *extra)
    job = json.loads(out[out.index("{"):])["jobs"][0]
    blocks = int(size[:-1]) * 256
    assert job["error"] == 0
    assert job["write"]["total_ios"] == blocks and job["read"]["total_ios"] == blocks
    return job


def short_sweep(tmp_path, name, topology_file, workload):
    """Runs a two-point sweep (iodepth 1 and 4; 1 s ramp, 3 s measured; a
    node's few threads given 1 s to start, not 3) of workload (the
    [workload] table's lines) on the lab of topology_file, which is up and
    stays up; returns the results directory. The simulator's prediction
    runs the same sweep on the cluster model (storlab-sim cluster, on the
    lab's hosts: TCG) in out/sim. Prints each point's host_limit."""
    sweep_file = tmp_path / "sweep.toml"
    sweep_file.write_text(f'name = "{name}"\n'
                          f'topology = "{os.path.join(TOPOLOGIES, topology_file)}"\n'
                          f"[workload]\n{workload}\n"
                          "[phases]\nramp_s = 1\nduration_s = 3\nstart_skew_s = 1\n"
                          "[sweep]\niodepth = [1, 4]\n")
    out = tmp_path / "results"
    result = storlab("sweep", str(sweep_file), "--out", str(out), timeout=600)
    assert result.returncode == 0, result.stderr
    assert (out / "sim" / "points.csv").exists()
    assert (out / "index.html").exists()
    with open(out / "points.csv", encoding="utf-8") as f:
        print(f"\n{name}: host_limit " + ", ".join(
            repr(row["host_limit"]) for row in csv.DictReader(f)))
    return out


class Lab:
    """A lab brought up from a topology file, always torn down."""

    def __init__(self, path, name):
        self.path, self.name = path, name

    def __enter__(self):
        self.daemons = libvirt_conn.ensure_daemons()
        started = time.monotonic()
        result = storlab("up", self.path, "--accel", "tcg")
        self.up_s = time.monotonic() - started
        ready = [line.split("ready in ")[-1] for line in result.stdout.splitlines()
                 if " nodes ready in " in line]
        print(f"\n{self.name}: up with its profile in {self.up_s:.1f} s"
              + (f" (its guests ready in {ready[0]})" if ready else ""))
        if result.returncode != 0:
            self.__exit__()
            pytest.fail(f"up {self.name}: {result.stdout}{result.stderr}")
        return self

    def __exit__(self, *exc):
        down = storlab("down", self.name)
        libvirt_conn.stop_daemons(self.daemons)
        assert down.returncode == 0 or "no lab named" in down.stderr, down.stderr
        assert not os.path.exists(os.path.join(RUN_BASE, self.name))
        assert not os.path.exists(lab_state.data_dir(self.name))   # device_data = "disk"


def md_arrays(lab):
    """{(node, md name): md's state} of every running node, from one `status`."""
    return {(n["node"], m["name"]): m for n in status(lab)["nodes"]
            for m in (n.get("storage") or {}).get("md", [])}


def replica_md(lab, node, name):
    return md_arrays(lab)[(node, name)]


def at_once(*calls):
    """Runs the zero-argument calls in threads (each a guest command or a
    storlab call, so waiting on different guests overlaps); re-raises the
    first failure after all have finished."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        futures = [pool.submit(call) for call in calls]
    return [f.result() for f in futures]


@contextlib.contextmanager
def kernel_log_on_failure(lab, nodes):
    """A failure inside says what the nodes' kernels said about their
    storage (md, NVMe/TCP, dm-integrity): a CI run keeps only the failure's
    text, and a lab's flake is rarely reproduced by hand."""
    try:
        yield
    except AssertionError as failure:
        said = []
        for node in nodes:
            # a guest that no longer answers must not hide the failure itself
            try:
                log = storlab("exec", lab, node, "--", "sh", "-c",
                              "dmesg | grep -E 'md/|md:|nvme|integrity|I/O error|transport' "
                              "| tail -15", timeout=60)
                text = log.stdout + log.stderr
            except subprocess.TimeoutExpired:
                text = "(no answer in 60 s)\n"
            said.append(f"--- {node}'s kernel:\n{text}")
        raise AssertionError(f"{failure}\n" + "\n".join(said)) from None


def _wait_for(lab, arrays, done, deadline, what):
    while True:
        state = md_arrays(lab)
        mds = [state.get((node, name), {}) for node, name, _ in arrays]
        if all(done(md, copies) for md, (_, _, copies) in zip(mds, arrays)):
            return mds
        assert time.monotonic() < deadline, f"{what}: {arrays} {mds}"
        time.sleep(1)


def resynced_and_checked(lab, arrays, deadline):
    """arrays, each (node, md name, copies), all resynced (every member in
    sync), then md's check run on all at once: every leg compared block by
    block, parity recomputed; no mismatch. Returns each array's state once
    resynced."""
    # every member in sync, not only degraded 0 and idle: md clears those a
    # moment before a recovered member's state leaves "spare" (a CI run read
    # the two apart)
    synced = _wait_for(lab, arrays, lambda md, copies: md.get("degraded") == 0
                       and md["sync_action"] == "idle" and len(md["members"]) == copies
                       and all(m["state"].startswith("in sync") for m in md["members"]),
                       deadline, "no resync")
    at_once(*(lambda n=node, m=name: guest(lab, n, "sh", "-c",
                                           f"echo check > /sys/block/{m}/md/sync_action")
              for node, name, _ in arrays))
    checked = _wait_for(lab, arrays, lambda md, _: md["sync_action"] == "idle", deadline,
                        "md check did not finish")
    assert [md["mismatch_cnt"] for md in checked] == [0] * len(arrays), checked
    return synced


def verify_only(lab, node, path):
    guest(lab, node, "fio", "--name=reread", f"--filename={path}", "--rw=randwrite", "--bs=4k",
          "--size=8M", "--verify=crc32c", "--verify_only", "--verify_fatal=1",
          "--ioengine=libaio", "--direct=1", "--iodepth=8")


def device_writes(path):
    """Writes a device served in a point's measured window (storlab-stats)."""
    doc = json.loads(path.read_text())
    count = [snap["devices"][0]["ops"]["write"]["count"] for snap in (doc["before"], doc["after"])]
    return count[1] - count[0]


def disk_ops(lab, nodes=4):
    """Every node's disk0 reads and writes so far (the plugin's own counters)."""
    ops = {}
    for n in range(1, nodes + 1):
        stats = subprocess.run([paths.stats_tool(), os.path.join(RUN_BASE, lab,
                                                                 f"node{n}-disk0.stats")],
                               capture_output=True, text=True, timeout=60, check=True)
        device = json.loads(stats.stdout)["devices"][0]["ops"]
        ops[f"node{n}"] = (device["read"]["count"], device["write"]["count"])
    return ops

