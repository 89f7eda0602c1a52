"""pytest for scripts/storlab_cli/results/fio_merge.py: the cluster merge of fio
json+ results checked against fio's own merges, on real fio runs (~5 s).

1. Client mode: three `fio --server` on unix sockets, one client run; each
   client's entry is one "unit". Our sums and IO-weighted means must equal
   fio's "All clients" entry. fio 3.33 (Debian 12) leaves percentiles and
   bins out of that entry (its client copies no percentile settings into the
   summed stats); where a fio prints them, they are compared exactly too.
2. fio's merge of histograms in one process (group_reporting runs the same
   sum_thread_stats() the client uses for "All clients"): three jobs write
   per-IO completion-latency logs, we rebuild each job's bins from its log,
   merge them, and must equal fio's group bins and every group percentile,
   for reads, writes and both together (unified_rw_reporting=both).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

from storlab_cli.results import fio_merge, fio_results
from storlab_cli.results.fio_hist_log import PLAT_BITS, PLAT_NR, PLAT_VAL, bin_value_ns
from storlab_cli.errors import UserError

PERCENTILES = (1, 5, 10, 25, 30, 50, 60, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
FIO_JOB = """[global]
ioengine=psync
size=16m
bs=4k
rw=randrw
rwmixread=70
time_based=1
runtime=1
unified_rw_reporting=both
percentile_list={plist}
"""
CLIENTS = 3

pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")


def job_text(**sections):
    text = FIO_JOB.format(plist=":".join(str(p) for p in PERCENTILES))
    for name, options in sections.items():
        text += f"[{name}]\n" + "".join(f"{k}={v}\n" for k, v in options.items())
    return text


def fio_keys(percentiles):
    """fio's JSON keys of a percentile list, e.g. 99.9 -> '99.900000'."""
    return {p: f"{p:f}" for p in percentiles}


def ours_ns(bins, percentiles=PERCENTILES):
    return fio_merge.percentiles_ns(bins, percentiles)


def fio_percentiles(side):
    return {p: side["clat_ns"]["percentile"][key] for p, key in fio_keys(PERCENTILES).items()}


def int_bins(side):
    return {int(k): v for k, v in side["clat_ns"]["bins"].items()}


# --- fio's bucket of a latency (stat.c: 64 buckets per power of two) --------

def fio_bucket_index(value_ns):
    msb = value_ns.bit_length() - 1 if value_ns else 0
    if msb <= PLAT_BITS:
        return value_ns
    error_bits = msb - PLAT_BITS
    index = ((error_bits + 1) << PLAT_BITS) + ((PLAT_VAL - 1) & (value_ns >> error_bits))
    return min(index, PLAT_NR - 1)


# --- client mode: servers on unix sockets ------------------------------------

@pytest.fixture(scope="module")
def workdir():
    path = tempfile.mkdtemp(prefix="storlab-fio-", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def fio_servers(workdir):
    servers = []
    try:
        for i in range(CLIENTS):
            sock = os.path.join(workdir, f"s{i}.sock")
            log = open(os.path.join(workdir, f"server{i}.log"), "w")
            proc = subprocess.Popen(["fio", f"--server=sock:{sock}"], stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            log.close()
            servers.append((proc, sock))
        deadline = time.monotonic() + 10
        while not all(os.path.exists(sock) for _, sock in servers):
            assert time.monotonic() < deadline, "fio --server made no socket in 10 s"
            assert all(proc.poll() is None for proc, _ in servers), "fio --server exited"
            time.sleep(0.05)
        yield [sock for _, sock in servers]
    finally:
        for proc, sock in servers:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if os.path.exists(sock):
                os.unlink(sock)


@pytest.fixture(scope="module")
def client_run(workdir, fio_servers):
    """fio's client-mode JSON: client_stats holds one entry per client, then
    "All clients"."""
    args = ["fio", "--output-format=json+"]
    for i, sock in enumerate(fio_servers):
        job = os.path.join(workdir, f"client{i}.fio")
        with open(job, "w") as f:
            f.write(job_text(unit={"filename": os.path.join(workdir, f"data{i}")}))
        args += [f"--client=sock:{sock}", job]
    out = os.path.join(workdir, "client.json")
    with open(out, "w") as f:
        subprocess.run(args, stdout=f, stderr=subprocess.PIPE, check=True, timeout=120)
    doc = fio_results.load(out)     # the JSON follows "<host> ..." banner lines
    entries = doc["client_stats"]
    clients = [e for e in entries if e["jobname"] != "All clients"]
    everyone = [e for e in entries if e["jobname"] == "All clients"]
    assert len(clients) == CLIENTS and len(everyone) == 1
    return clients, everyone[0]


def test_each_client_percentiles_are_fios(client_run):
    """Our percentile method on one client's bins gives fio's own numbers."""
    clients, _ = client_run
    for entry in clients:
        for side in ("read", "write"):
            assert ours_ns(int_bins(entry[side])) == fio_percentiles(entry[side]), \
                f"{entry['hostname']} {side}"
        # A client's 'mixed' is summed on the client side of fio's network
        # protocol; in about one run in ten one of its percentiles sits one
        # bucket off its own bins (seen: p30 10688 vs 10560). The exact check
        # of reads+writes together is the group merge below.
        mixed = entry["mixed"]
        keys = sorted(int_bins(mixed))
        ours, fio = ours_ns(int_bins(mixed)), fio_percentiles(mixed)
        for p in PERCENTILES:
            assert abs(keys.index(ours[p]) - keys.index(fio[p])) <= 1, \
                f"{entry['hostname']} mixed p{p}: {ours[p]} vs fio {fio[p]}"


def test_clients_merge_like_fio_all_clients(client_run):
    clients, everyone = client_run
    summary = fio_merge.merge_docs([({"jobs": [e]}, e["hostname"]) for e in clients])
    assert summary.units == CLIENTS
    for side, ours in (("read", summary.read), ("write", summary.write)):
        fio = everyone[side]
        assert ours.ios == fio["total_ios"] == sum(e[side]["total_ios"] for e in clients)
        assert ours.io_bytes == fio["io_bytes"]
        assert ours.clat_samples == fio["clat_ns"]["N"]
        # fio merges means pairwise, weighted by samples; prints 6 decimals
        assert ours.lat_mean_us * 1000 == pytest.approx(fio["clat_ns"]["mean"], rel=1e-9, abs=1e-6)
        # IOPS: ours is the sum of each unit's IOPS (each over its own runtime);
        # fio's "All clients" divides all IOs by the longest runtime.
        assert ours.iops == pytest.approx(sum(e[side]["iops"] for e in clients), rel=1e-9)
        longest = max(e[side]["runtime"] for e in clients)
        shortest = min(e[side]["runtime"] for e in clients)
        assert fio["runtime"] == longest
        assert fio["iops"] == pytest.approx(ours.ios * 1000 / longest, rel=1e-9)
        assert fio["iops"] * (1 - 1e-9) <= ours.iops <= fio["iops"] * longest / shortest * (1 + 1e-9)
        assert fio["bw_bytes"] == ours.io_bytes * 1000 // longest
        assert ours.bytes_per_s == pytest.approx(
            sum(e[side]["io_bytes"] * 1000 / e[side]["runtime"] for e in clients), rel=1e-12)
        merged = {}
        for e in clients:
            for value, count in int_bins(e[side]).items():
                merged[value] = merged.get(value, 0) + count
        assert dict(ours.bins) == merged
        if "percentile" in fio["clat_ns"]:        # fio newer than 3.33
            assert ours_ns(ours.bins) == fio_percentiles(fio)
        if "bins" in fio["clat_ns"]:
            assert dict(ours.bins) == int_bins(fio)
    # reads and writes together: fio's 'mixed' of the summed stats
    mixed = everyone["mixed"]
    assert summary.total.ios == mixed["total_ios"]
    assert summary.total.lat_mean_us * 1000 == pytest.approx(mixed["clat_ns"]["mean"], rel=1e-9)
    if "percentile" in mixed["clat_ns"]:
        assert ours_ns(summary.total.bins) == fio_percentiles(mixed)


# --- fio's own histogram merge: group_reporting ------------------------------

@pytest.fixture(scope="module")
def group_run(workdir):
    """One fio, three jobs reported as one group, per-IO clat logs per job."""
    prefix = os.path.join(workdir, "g")
    job = os.path.join(workdir, "group.fio")
    with open(job, "w") as f:
        f.write(job_text(unit={"filename": os.path.join(workdir, "gdata"), "numjobs": 3,
                               "group_reporting": 1, "write_lat_log": prefix}))
    out = os.path.join(workdir, "group.json")
    with open(out, "w") as f:
        subprocess.run(["fio", "--output-format=json+", job], stdout=f,
                       stderr=subprocess.PIPE, check=True, timeout=120)
    group = fio_results.load(out)["jobs"]
    assert len(group) == 1
    per_job = []            # {ddir: Counter(bucket value -> count)} per job
    for n in (1, 2, 3):
        bins = {0: Counter(), 1: Counter()}
        with open(f"{prefix}_clat.{n}.log") as f:
            for line in f:
                fields = line.split(",")
                ddir = int(fields[2])
                bins[ddir][bin_value_ns(fio_bucket_index(int(fields[1])))] += 1
        per_job.append(bins)
    return group[0], per_job


def job_doc(bins):
    """A unit holding one job, only what the merge reads."""
    def side(counter):
        n = sum(counter.values())
        return {"total_ios": n, "io_bytes": 4096 * n, "runtime": 1000,
                "clat_ns": {"N": n, "mean": 0.0, "bins": {str(k): v for k, v in counter.items()}}}
    return {"jobs": [{"read": side(bins[0]), "write": side(bins[1])}]}


def test_merged_bins_and_percentiles_equal_fio_group(group_run):
    group, per_job = group_run
    summary = fio_merge.merge_docs([(job_doc(b), f"job {i}") for i, b in enumerate(per_job)])
    for side, ours in (("read", summary.read), ("write", summary.write),
                       ("mixed", summary.total)):
        fio = group[side]
        assert ours.clat_samples == fio["clat_ns"]["N"], side     # the logs hold every IO
        assert dict(ours.bins) == int_bins(fio), side
        assert ours_ns(ours.bins) == fio_percentiles(fio), side


def test_point_metrics_from_group(group_run, tmp_path):
    group, _ = group_run
    path = tmp_path / "unit.json"
    path.write_text("fio: a banner line\n" + json.dumps({"jobs": [group]}))
    metrics = fio_merge.point_metrics(fio_merge.merge_files([str(path)]))
    assert list(metrics) == list(fio_merge.METRIC_COLUMNS)
    mixed = group["mixed"]["clat_ns"]["percentile"]
    assert metrics["lat_p50_us"] == mixed["50.000000"] / 1000
    assert metrics["lat_p99_us"] == mixed["99.000000"] / 1000
    assert metrics["lat_p99_9_us"] == mixed["99.900000"] / 1000
    assert metrics["read_lat_p99_us"] == group["read"]["clat_ns"]["percentile"]["99.000000"] / 1000
    assert metrics["write_lat_p99_us"] == group["write"]["clat_ns"]["percentile"]["99.000000"] / 1000
    assert metrics["iops"] == pytest.approx(group["read"]["iops"] + group["write"]["iops"])
    assert metrics["read_mb_s"] == pytest.approx(group["read"]["bw_bytes"] / 1e6, rel=1e-6)
    assert metrics["read_lat_mean_us"] == pytest.approx(group["read"]["clat_ns"]["mean"] / 1000)
    assert metrics["units_run"] == 1


# --- no fio needed -------------------------------------------------------------

@pytest.mark.parametrize("p, total, rank", [
    # fio compares in x87 long double: 0.3 rounds up there, so p30 of 50
    # samples is the 16th (plain doubles or exact arithmetic say the 15th);
    # ranks checked against a C program using long double
    (30, 50, 16), (60, 25, 16), (99.95, 2000, 2000), (50, 50, 25), (99, 100, 99)])
def test_percentile_rank_follows_fio_long_double(p, total, rank):
    bins = [(value, 1) for value in range(1, total + 1)]
    assert fio_merge.percentiles_ns(bins, [p]) == {p: rank}


def test_plain_json_without_bins_names_the_file(tmp_path):
    path = tmp_path / "fio-node1-u0.json"
    job = os.path.join(tmp_path, "plain.fio")
    with open(job, "w") as f:
        f.write(f"[plain]\nioengine=psync\nfilename={tmp_path}/data\nsize=1m\nbs=64k\nrw=write\n")
    with open(path, "w") as f:
        subprocess.run(["fio", "--output-format=json", job], stdout=f, check=True, timeout=60)
    with pytest.raises(UserError, match=r"fio-node1-u0\.json: jobs\[0\]\.write\.clat_ns has no latency bins"):
        fio_merge.merge_files([str(path)])


@pytest.mark.parametrize("doc, expected", [
    ({"client_stats": []}, "no 'jobs' list"),
    ({"jobs": [{"read": {}}]}, r"jobs\[0\]\.read: no 'total_ios'"),
    ({"jobs": [{"read": {"total_ios": -1}}]}, r"jobs\[0\]\.read\.total_ios: negative"),
])
def test_bad_documents(tmp_path, doc, expected):
    path = tmp_path / "u.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError, match=f"u.json: {expected}"):
        fio_merge.merge_files([str(path)])


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="nope.json: cannot read"):
        fio_merge.merge_files([str(tmp_path / "nope.json")])
