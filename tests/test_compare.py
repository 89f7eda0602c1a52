"""pytest for storlab compare (commands/compare.py, the compare/ package): real
results directories from short simulator sweeps of the VSA-like RAID LUN
(topologies/vsa-raid.toml), built once for the module — the battery ok and
failed, a shifted queue-depth grid, a sweep of the queue depth alone, a full
depth x battery grid, and a lab-like directory holding a prediction in sim/.
Then the table and its ratios, compare.csv, the figures, the page in headless
Chromium, and every bad input refused in one line with --out left alone.
Needs the build (storlab-sim) and gnuplot; no VMs."""
import csv
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from storlab_cli.errors import UserError
from storlab_cli.compare import matching, output
from storlab_cli.compare.runs import load_runs
from storlab_cli.report import check as report_check, plots
from storlab_cli.results import points_csv

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)
STORLAB = os.path.join(SOURCE, "scripts", "storlab")
TOPOLOGY = os.path.join(SOURCE, "topologies", "vsa-raid.toml")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG_ROOT = "{http://www.w3.org/2000/svg}svg"
RATIO_RE = re.compile(r"^\d+(\.\d+)?x$")

# After topologies/sweeps/cache-disabled.toml, seconds long.
SWEEP = '''
name = "{name}"
backend = "sim"
topology = "{topology}"
[workload]
target = "lun0"
rw = "randrw"
rwmixread = 50
bs = "8k"
iodepth = 8
size = "2G"
[phases]
ramp_s = 1
duration_s = 3
interval_s = 1
[sweep]
iodepth = {depths}
{battery}
[plot]
x = "iodepth"
'''
SWEEPS = {   # name: (iodepths, the battery line of [sweep])
    "battery-ok": ("[4, 16]", '"device.battery" = ["ok"]'),
    "battery-failed": ("[4, 16]", '"device.battery" = ["failed"]'),
    "deeper": ("[16, 32]", '"device.battery" = ["ok"]'),
    "depth-only": ("[4, 16]", ""),
    "grid": ("[4, 16]", '"device.battery" = ["ok", "failed"]'),
}


def storlab(*args):
    return subprocess.run(["/usr/bin/python3", STORLAB, *map(str, args)], capture_output=True,
                          text=True, check=False, timeout=300)


def sim_sweep(directory, name, depths, battery):
    sweep_file = directory / f"{name}.toml"
    sweep_file.write_text(SWEEP.format(name=name, topology=TOPOLOGY, depths=depths,
                                       battery=battery))
    out = directory / name
    result = storlab("sweep", sweep_file, "--out", out, "--backend", "sim")
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> results directory; "lab" is battery-ok's copy with
    battery-failed's as its prediction in lab/sim (named like the lab's)."""
    directory = tmp_path_factory.mktemp("runs")
    made = {name: sim_sweep(directory, name, *spec) for name, spec in SWEEPS.items()}
    lab = directory / "lab"
    shutil.copytree(made["battery-ok"], lab)
    shutil.copytree(made["battery-failed"], lab / "sim")
    manifest = json.loads((lab / "sim" / "manifest.json").read_text())
    manifest["name"] = "battery-ok"
    (lab / "sim" / "manifest.json").write_text(json.dumps(manifest))
    made["lab"] = lab
    return made


def points(directory):
    with open(directory / "points.csv", newline="", encoding="utf-8") as f:
        return {float(row["iodepth"]): row for row in csv.DictReader(f)}


def table_rows(stdout, metric):
    """{iodepth: [cells after the metric's name]} of the stdout table."""
    found, depth = {}, None
    for line in stdout.splitlines():
        tokens = line.split()
        if tokens and re.fullmatch(r"\d+", tokens[0]):
            depth = int(tokens[0])
        if metric in tokens and depth is not None:
            found[depth] = tokens[tokens.index(metric) + 1:]
    return found


def ratio(text):
    assert RATIO_RE.match(text), text
    return float(text[:-1])


def summary(stdout, label):
    lines = [line for line in stdout.splitlines() if line.startswith(f"{label}: ")]
    assert len(lines) == 1, stdout
    return lines[0]


def assert_one_line_error(result, *culprits):
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("storlab compare: "), result.stderr
    assert "Traceback" not in result.stderr
    for culprit in culprits:
        assert str(culprit) in lines[0], (culprit, lines[0])


def listing(directory):
    """(path, size) of every file under directory."""
    return sorted((os.path.relpath(os.path.join(d, n), directory),
                   os.path.getsize(os.path.join(d, n)))
                  for d, _, names in os.walk(directory) for n in names)


def staging_left(out):
    return [n for n in os.listdir(os.path.dirname(out))
            if n.startswith(f".{os.path.basename(out)}.")]


# --- the table ----------------------------------------------------------------------

def test_battery_failed_against_ok_ratios_and_summary(runs):
    result = storlab("compare", runs["battery-ok"], runs["battery-failed"])
    assert result.returncode == 0, result.stderr
    # the battery holds one value in each: what is compared, not matched on
    assert result.stderr == ("storlab compare: note: matching points on iodepth only: "
                             "device.battery holds one value per directory (ok/failed)\n")
    header = result.stdout.splitlines()[0].split()
    assert header == ["iodepth", "metric", "battery-ok", "battery-failed"]
    ok, failed = points(runs["battery-ok"]), points(runs["battery-failed"])
    for metric in ("iops", "read_iops", "write_iops", "lat_mean_us", "read_lat_mean_us",
                   "write_lat_mean_us", "lat_p99_us", "read_lat_p99_us", "write_lat_p99_us"):
        assert sorted(table_rows(result.stdout, metric)) == [4, 16], metric
    for depth in (4, 16):
        base, value, shown = table_rows(result.stdout, "iops")[depth]
        expected = float(failed[depth]["iops"]) / float(ok[depth]["iops"])
        assert ratio(shown) == pytest.approx(expected, abs=0.006)
        assert ratio(shown) < 1                       # write-through: fewer IOPS
        assert float(base) == pytest.approx(float(ok[depth]["iops"]), rel=0.01)
        assert float(value) == pytest.approx(float(failed[depth]["iops"]), rel=0.01)
        assert ratio(table_rows(result.stdout, "write_lat_mean_us")[depth][2]) > 5
        assert ratio(table_rows(result.stdout, "lat_mean_us")[depth][2]) > 1
    assert summary(result.stdout, "battery-ok") == "battery-ok: the baseline, 2 points"
    line = summary(result.stdout, "battery-failed")
    match = re.fullmatch(r"battery-failed: IOPS (\S+), mean latency (\S+) vs battery-ok "
                         r"\(geometric mean over 2 matched points\)", line)
    assert match, line
    assert ratio(match.group(1)) < 1 < ratio(match.group(2))


def test_partly_overlapping_grids_leave_blanks(runs):
    result = storlab("compare", runs["battery-ok"], runs["deeper"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""                        # both sweep both keys: all matched
    assert result.stdout.splitlines()[0].split() == ["iodepth", "device.battery", "metric",
                                                     "battery-ok", "deeper"]
    iops = table_rows(result.stdout, "iops")
    assert sorted(iops) == [4, 16, 32]
    assert len(iops[4]) == 1                          # in the baseline only
    assert len(iops[32]) == 1                         # in deeper only: no ratio
    assert 0.5 < ratio(iops[16][2]) < 2               # the same point, the same model
    assert re.search(r"^deeper: IOPS \S+, mean latency \S+ vs battery-ok \(geometric mean "
                     r"over 1 matched point\)$", result.stdout, re.M)


def test_a_key_not_swept_everywhere_is_left_out_and_said(runs):
    result = storlab("compare", runs["battery-ok"], runs["depth-only"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("storlab compare: note: matching points on iodepth only: "
                             "device.battery is not swept in depth-only\n")
    assert sorted(table_rows(result.stdout, "iops")) == [4, 16]


def test_a_lab_against_its_own_prediction(runs):
    result = storlab("compare", runs["lab"], runs["lab"] / "sim")
    assert result.returncode == 0, result.stderr
    assert "battery-ok (sim)" in result.stdout.splitlines()[0]
    assert summary(result.stdout, "battery-ok (sim)").startswith("battery-ok (sim): IOPS 0.")


def test_labels_are_made_unique(runs, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(runs["battery-ok"], again)
    result = storlab("compare", runs["battery-ok"], again)
    assert result.returncode == 0, result.stderr
    # the same sweep name twice: the directories' names instead
    assert result.stdout.splitlines()[0].split()[-2:] == ["battery-ok", "again"]


# --- --out -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def written(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("written") / "comparison"
    result = storlab("compare", runs["battery-ok"], runs["battery-failed"], runs["deeper"],
                     "--out", out)
    assert result.returncode == 0, result.stderr
    return out, result


def test_out_writes_the_csv_figures_and_page(runs, written):
    out, result = written
    assert f"comparison: {out}" in result.stdout
    assert sorted(os.listdir(out)) == ["compare.csv", "compare.json", "index.html", "plots"]
    assert staging_left(str(out)) == []
    with open(out / "compare.csv", newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        rows = [dict(zip(header, r)) for r in reader]
    ratios = [c + "_ratio" for c in points_csv.METRIC_COLUMNS if c not in points_csv.TEXT_COLUMNS]
    assert header == ["iodepth", "directory", "point", *points_csv.METRIC_COLUMNS, *ratios]
    # every point (4, 16, 32) of every directory, blank where it lacks the point
    assert [(r["iodepth"], r["directory"]) for r in rows] == [
        (d, name) for d in ("4", "16", "32") for name in ("battery-ok", "battery-failed", "deeper")]
    by = {(r["iodepth"], r["directory"]): r for r in rows}
    assert by[("32", "battery-ok")]["iops"] == "" and by[("32", "battery-ok")]["point"] == ""
    assert by[("4", "deeper")]["iops"] == "" and by[("32", "deeper")]["iops_ratio"] == ""
    for depth in ("4", "16"):
        base, failed = by[(depth, "battery-ok")], by[(depth, "battery-failed")]
        assert float(base["iops_ratio"]) == 1
        assert float(failed["write_lat_mean_us_ratio"]) == pytest.approx(
            float(failed["write_lat_mean_us"]) / float(base["write_lat_mean_us"]))
        assert float(failed["write_lat_mean_us_ratio"]) > 5
        assert float(failed["iops_ratio"]) < 1
    marker = json.loads((out / "compare.json").read_text())
    assert marker["kind"] == "storlab compare" and marker["matched_on"] == ["iodepth"]
    assert [d["label"] for d in marker["directories"]] == ["battery-ok", "battery-failed",
                                                           "deeper"]
    for name in ("iops", "latency"):
        assert (out / "plots" / f"{name}.gp").is_file()
        assert (out / "plots" / f"{name}.png").read_bytes()[:8] == PNG_MAGIC
        root = ET.parse(out / "plots" / f"{name}.svg").getroot()
        assert root.tag == SVG_ROOT
        texts = " ".join(t for t in root.itertext())
        for label in ("battery-ok", "battery-failed", "deeper"):
            assert label in texts, (name, label)
    page = (out / "index.html").read_text()
    assert "://" not in page                         # self-contained: no external URL
    for text in ("battery-failed", "vsa-raid", 'src="plots/iops.svg"', 'href="compare.csv"',
                 'id="points"', "geometric mean over 2 matched points"):
        assert text in page, text


def test_a_series_key_gives_a_line_per_directory_and_value(runs, tmp_path):
    out = tmp_path / "out"
    result = storlab("compare", runs["grid"], runs["grid"], "--out", out)
    assert_one_line_error(result, "given twice")
    again = tmp_path / "grid-again"
    shutil.copytree(runs["grid"], again)
    result = storlab("compare", runs["grid"], again, "--out", out)
    assert result.returncode == 0, result.stderr
    script = (out / "plots" / "iops.gp").read_text()
    for legend in ("grid · battery=ok", "grid · battery=failed",
                   "grid-again · battery=ok", "grid-again · battery=failed"):
        assert f"title '{legend}'" in script, legend


def test_labels_are_escaped_in_the_page(runs, tmp_path):
    odd = tmp_path / "odd<b>&name"
    shutil.copytree(runs["battery-ok"], odd)
    out = tmp_path / "out"
    result = storlab("compare", runs["battery-ok"], odd, "--out", out)
    assert result.returncode == 0, result.stderr
    page = (out / "index.html").read_text()
    assert "odd&lt;b&gt;&amp;name" in page and "odd<b>" not in page


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not installed (Debian package 'chromium')")
def test_page_renders_in_headless_chromium(written, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(written[0], out)
    result = report_check.check(out / "index.html", timeout_s=60)
    assert result.checked
    assert result.images_total == result.images_loaded == 2 and result.images_failed == []
    assert result.point_rows == 3                    # iodepth 4, 16 and 32
    os.remove(out / "plots" / "latency.svg")
    result = report_check.check(out / "index.html", timeout_s=60)
    assert result.images_loaded == 1 and result.images_failed == ["plots/latency.svg"]


def test_an_earlier_comparison_is_replaced_whole(runs, tmp_path):
    out = tmp_path / "out"
    assert storlab("compare", runs["battery-ok"], runs["deeper"], "--out", out).returncode == 0
    (out / "plots" / "stale.svg").write_text("<svg/>")
    result = storlab("compare", runs["battery-ok"], runs["battery-failed"], "--out", out)
    assert result.returncode == 0, result.stderr
    assert not (out / "plots" / "stale.svg").exists()
    labels = [d["label"] for d in json.loads((out / "compare.json").read_text())["directories"]]
    assert labels == ["battery-ok", "battery-failed"]
    assert staging_left(str(out)) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert storlab("compare", runs["battery-ok"], runs["deeper"], "--out", empty).returncode == 0
    assert (empty / "index.html").is_file()


def test_a_failure_while_writing_leaves_out_as_it_was(runs, tmp_path, monkeypatch):
    out = tmp_path / "out"
    comparison = matching.compare(load_runs([str(runs["battery-ok"]), str(runs["deeper"])]))
    output.write(str(out), comparison)
    before = listing(out)

    def broken(plots_dir, name, script_text):
        raise UserError(f"plot {name}: gnuplot failed: broken on purpose")
    monkeypatch.setattr(plots, "run_gnuplot", broken)
    with pytest.raises(UserError, match="broken on purpose"):
        output.write(str(out), comparison)
    assert listing(out) == before and staging_left(str(out)) == []
    fresh = tmp_path / "fresh"
    with pytest.raises(UserError):
        output.write(str(fresh), comparison)
    assert not fresh.exists() and staging_left(str(fresh)) == []


# --- bad input ---------------------------------------------------------------------

def broken_copy(runs, tmp_path, name, damage):
    directory = tmp_path / name
    shutil.copytree(runs["battery-ok"], directory)
    damage(directory)
    return directory


def _truncate(name):
    return lambda d: (d / name).write_text("")


def _header_only(d):
    (d / "points.csv").write_text((d / "points.csv").read_text().splitlines()[0] + "\n")


def renamed_key_copy(source, directory):
    """source with its iodepth column called rwmixread."""
    shutil.copytree(source, directory)
    text = (directory / "points.csv").read_text()
    (directory / "points.csv").write_text(text.replace("point,iodepth,", "point,rwmixread,", 1))
    return directory


BAD_DIRS = [   # (id, damage to a copy of battery-ok, what the message names)
    ("empty-points-csv", _truncate("points.csv"), "points.csv: empty"),
    ("header-only", _header_only, "points.csv: no points"),
    ("bad-manifest", lambda d: (d / "manifest.json").write_text("{\"name\": "),
     "manifest.json: not valid JSON"),
    ("no-manifest", lambda d: os.remove(d / "manifest.json"), "manifest.json: no such file"),
    ("no-points-csv", lambda d: os.remove(d / "points.csv"),
     "not a sweep results directory (no points.csv)"),
]


@pytest.mark.parametrize("damage, expected", [(d, e) for _, d, e in BAD_DIRS],
                         ids=[i for i, _, _ in BAD_DIRS])
def test_a_bad_directory_is_one_line_naming_it(runs, tmp_path, damage, expected):
    bad = broken_copy(runs, tmp_path, "bad", damage)
    out = tmp_path / "out"
    result = storlab("compare", runs["battery-ok"], bad, "--out", out)
    assert_one_line_error(result, bad, expected)
    assert not out.exists() and staging_left(str(out)) == []


def test_bad_arguments_are_one_line_and_touch_nothing(runs, tmp_path):
    ok, failed = runs["battery-ok"], runs["battery-failed"]
    untouched = listing(ok)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    plain = tmp_path / "plain"
    plain.mkdir()
    # in common only the battery, which tells the two apart: nothing to match on
    other_keys = renamed_key_copy(failed, tmp_path / "other-keys")
    cases = [
        ((ok,), ("at least two", ok)),
        ((ok, tmp_path / "missing"), (tmp_path / "missing", "no such directory")),
        ((ok, plain), (plain, "no points.csv")),
        ((ok, failed, "--out", ok / "comparison"), (ok / "comparison", "inside the input "
                                                    f"directory {ok}")),
        ((ok, failed, "--out", ok), (f"--out {ok}", "inside the input")),
        ((ok, failed, "--out", foreign), (foreign, "not empty")),
        ((ok, runs["lab"] / "sim", "--out", runs["lab"]), ("holds the input directory",)),
        ((ok, other_keys), ("no swept key in common", ok, other_keys)),
        ((runs["grid"], runs["depth-only"]), (runs["grid"], "points 0 and 1 both have "
                                              "iodepth=4")),
        ((ok, failed, "--bogus"), ("unrecognized arguments: --bogus",)),
    ]
    for args, culprits in cases:
        assert_one_line_error(storlab("compare", *args), *culprits)
    assert listing(ok) == untouched and not (ok / "comparison").exists()
    assert sorted(os.listdir(foreign)) == ["notes.txt"]
    assert staging_left(str(foreign)) == []


def test_help_names_the_options():
    result = storlab("compare", "--help")
    assert result.returncode == 0 and "--out DIR" in result.stdout
