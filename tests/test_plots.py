"""pytest for storlab plot: figures (gnuplot) and the HTML report drawn from a
results directory's CSVs and manifest alone (scripts/storlab_cli/report/plots.py,
report/html.py, commands/plot.py). Small results directories are built in tmp_path;
no lab, no simulator. The last test loads the report in headless Chromium."""
import csv
import json
import math
import os
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

from storlab_cli.commands import plot
from storlab_cli.report import check as report_check, html, plot_data, plots
from storlab_cli.errors import UserError

METRICS = ["units_run", "iops", "read_iops", "write_iops", "mb_s", "read_mb_s", "write_mb_s",
           "lat_mean_us", "lat_p50_us", "lat_p99_us", "lat_p99_9_us",
           "read_lat_mean_us", "read_lat_p99_us", "write_lat_mean_us", "write_lat_p99_us",
           "dev_iops", "dev_lat_mean_us", "member_iops", "cache_hit_pct", "dirty_mb"]
# points.csv since the host columns (the files above are as earlier sweeps wrote them)
HOST_METRICS = METRICS + ["dev_qd_mean", "release_late_p99_us", "host_limit"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG_NS = "{http://www.w3.org/2000/svg}"


def measured(iodepth, battery="ok", scale=1.0, bs_bytes=8192):
    """A plausible RAID 10 behind a write-back cache: IOPS saturate with queue
    depth, ~5x lower with the battery failed (write-through)."""
    iops = scale * (3000.0 if battery == "ok" else 600.0) * (1 - math.exp(-iodepth / 6))
    mean_us = iodepth * 2 / iops * 1e6
    return {"units_run": 2, "iops": round(iops, 1), "read_iops": round(iops / 2, 1),
            "write_iops": round(iops / 2, 1), "mb_s": round(iops * bs_bytes / 1e6, 3),
            "read_mb_s": "", "write_mb_s": "", "lat_mean_us": round(mean_us, 1),
            "lat_p50_us": round(mean_us * 0.9, 1), "lat_p99_us": round(mean_us * 2.5, 1),
            "lat_p99_9_us": round(mean_us * 4, 1), "read_lat_mean_us": "",
            "read_lat_p99_us": "", "write_lat_mean_us": "", "write_lat_p99_us": "",
            "dev_iops": round(iops, 1), "dev_lat_mean_us": round(mean_us * 0.8, 1),
            "member_iops": "" if battery == "failed" else round(iops * 1.5, 1),
            "cache_hit_pct": 55.5, "dirty_mb": ""}


def write_points(path, swept, rows, metrics=METRICS):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["point"] + swept + metrics)
        for index, row in enumerate(rows):
            writer.writerow([index] + [row[k] for k in swept] + [row.get(m, "") for m in metrics])


def make_results(directory, swept, rows, x=None, series=None, sim_rows=None, name="test-sweep",
                 metrics=METRICS, plot_settings=None, workload=None):
    """A results directory as storlab sweep writes it; rows are dicts holding
    the swept values and the metrics; plot_settings go in the manifest's plot
    beside x and series, workload over its workload. Returns the directory (str)."""
    directory = str(directory)
    os.makedirs(directory, exist_ok=True)
    manifest = {
        "name": name, "backend": "lab", "created_utc": "2024-11-22T13:00:00Z",
        "revision": "72923cd-dirty", "sweep_file": "topologies/sweeps/cache-disabled.toml",
        "topology": {"path": "topologies/vsa.toml", "name": "vsa"}, "swept": swept,
        "plot": {"x": x if x is not None else (swept[0] if swept else None), "series": series,
                 **(plot_settings or {})},
        "workload": {"rw": "randrw", "rwmixread": 50, "bs": "8k", **(workload or {})},
        "phases": {"precondition": True, "ramp_s": 5, "measure_s": 30},
        "versions": {"qemu": "7.2.11", "nbdkit": "1.32.5", "fio": "3.33", "kernel": "6.1.0-26",
                     "host_kernel": "6.1.0-26", "storlab_sim": "0.1"},
        "accelerator": "tcg", "host": {"cpus": 2, "memory_bytes": 8 << 30, "os": "Debian 12"},
        "points_total": len(rows), "points_done": len(rows)}
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    write_points(os.path.join(directory, "points.csv"), swept, rows, metrics)
    if sim_rows is not None:
        write_points(os.path.join(directory, "sim", "points.csv"), swept, sim_rows, metrics)
    for index, row in enumerate(rows):
        point_dir = os.path.join(directory, "points", f"{index:03d}")
        os.makedirs(point_dir, exist_ok=True)
        with open(os.path.join(point_dir, "params.json"), "w", encoding="utf-8") as f:
            json.dump({k: row[k] for k in swept}, f)
        with open(os.path.join(point_dir, "fio-node1-u0.json"), "w", encoding="utf-8") as f:
            f.write("{}\n")
        open(os.path.join(point_dir, "done"), "w", encoding="utf-8").close()
    return directory


def add_timeline(directory, point, events):
    point_dir = os.path.join(directory, "points", f"{point:03d}")
    os.makedirs(point_dir, exist_ok=True)
    with open(os.path.join(point_dir, "timeline.csv"), "w", encoding="utf-8") as f:
        f.write("t_s,iops,read_iops,write_iops,lat_mean_us,read_lat_mean_us,write_lat_mean_us\n")
        for t_s in range(1, 31):
            iops = 2800.0 if t_s <= 10 else 610.0
            f.write(f"{t_s}.0,{iops},{iops / 2},{iops / 2},{16 / iops * 1e6:.1f},,\n")
        f.write("31.0,,,,,,\n")                       # an interval with nothing measured
    with open(os.path.join(point_dir, "events.csv"), "w", encoding="utf-8") as f:
        f.write("t_s,what\n" + "".join(f'{t},"{what}"\n' for t, what in events))


def battery_sweep(directory, sim=True):
    """iodepth 1..32 x battery ok/failed (strings), simulator prediction,
    a timeline with the battery failing mid-run on point 3."""
    grid = [(qd, battery) for qd in (1, 4, 16, 32) for battery in ("ok", "failed")]
    rows = [dict(measured(qd, battery), iodepth=qd, **{"device.battery": battery})
            for qd, battery in grid]
    sim_rows = [dict(measured(qd, battery, scale=1.1), iodepth=qd, **{"device.battery": battery})
                for qd, battery in grid] if sim else None
    directory = make_results(directory, ["iodepth", "device.battery"], rows,
                             x="iodepth", series="device.battery", sim_rows=sim_rows,
                             name="cache-disabled")
    add_timeline(directory, 3, [(10.0, "battery failed"), (25.5, "battery ok, cache on")])
    return directory


def assert_png(path):
    with open(path, "rb") as f:
        head = f.read(8)
    assert head == PNG_MAGIC, path
    assert os.path.getsize(path) > 1000, path


def svg_texts(path):
    """Parses the SVG; asserts it draws paths; returns its text content."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG_NS + "svg"
    assert len(root.findall(f".//{SVG_NS}path")) > 10, path
    return " ".join("".join(t.itertext()) for t in root.iter(SVG_NS + "text"))


def figure_files(directory):
    return sorted(os.listdir(os.path.join(directory, "plots")))


def gp(directory, name):
    with open(os.path.join(directory, "plots", f"{name}.gp"), encoding="utf-8") as f:
        return f.read()


def test_battery_sweep_draws_every_figure_with_simulator_and_events(tmp_path, capsys):
    directory = battery_sweep(tmp_path / "run")
    assert plot.run([directory]) == 0
    assert "3 figures" in capsys.readouterr().out
    names = ["hockey", "iops-latency", "timeline-003"]
    expected = sorted(f"{n}.{suffix}" for n in names for suffix in ("gp", "png", "svg"))
    assert figure_files(directory) == expected
    for name in names:
        assert_png(os.path.join(directory, "plots", f"{name}.png"))
    bars = svg_texts(os.path.join(directory, "plots", "iops-latency.svg"))
    for text in ("IOPS · battery=ok", "IOPS · battery=failed", "simulator IOPS · battery=ok",
                 "p99 latency · battery=failed", "simulator mean latency · battery=failed",
                 "iodepth", "latency (ms)"):
        assert text in bars
    hockey = svg_texts(os.path.join(directory, "plots", "hockey.svg"))
    assert "simulator p99 latency · battery=ok" in hockey and "IOPS" in hockey
    timeline = svg_texts(os.path.join(directory, "plots", "timeline-003.svg"))
    assert "battery failed" in timeline and "battery ok, cache on" in timeline
    assert "time (s)" in timeline and "iodepth=4, device.battery=failed" in timeline
    # Categories stay in sweep order (not sorted as text), series side by side.
    assert "set xtics ('1' 0, '4' 1, '16' 2, '32' 3)" in gp(directory, "iops-latency")
    assert os.path.isfile(os.path.join(directory, "index.html"))


def test_bandwidth_versus_block_size_and_microseconds(tmp_path):
    sizes = [("4k", 4096), ("64k", 65536), ("1m", 1 << 20)]
    rows = [dict(measured(8, scale=1.0 / (1 + i), bs_bytes=size), bs=label, iodepth=8)
            for i, (label, size) in enumerate(sizes)]
    for row in rows:             # fast device: latencies well under 1 ms
        row.update(lat_mean_us=120.5, lat_p99_us=480.0)
    directory = make_results(tmp_path / "bs", ["bs", "iodepth"], rows, x="bs")
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "bandwidth", "hockey", "layers"]
    assert_png(os.path.join(directory, "plots", "bandwidth.png"))
    texts = svg_texts(os.path.join(directory, "plots", "bandwidth.svg"))
    assert "bandwidth (MB/s)" in texts and "iodepth" not in texts   # one value: no series
    assert "set xtics ('4k' 0, '64k' 1, '1m' 2)" in gp(directory, "bandwidth")
    assert "latency (µs)" in svg_texts(os.path.join(directory, "plots", "iops-latency.svg"))
    # Block size swept but plotted by queue depth: bandwidth has a series per depth.
    rows = [dict(measured(qd, bs_bytes=size), bs=label, iodepth=qd)
            for label, size in sizes[:2] for qd in (1, 32)]
    directory = make_results(tmp_path / "qd", ["bs", "iodepth"], rows, x="iodepth")
    plot.render(directory)
    texts = svg_texts(os.path.join(directory, "plots", "bandwidth.svg"))
    assert "MB/s · iodepth=1" in texts and "MB/s · iodepth=32" in texts


def test_layers_side_by_side_for_a_stack(tmp_path):
    """A profile target's VM, device and member IOPS side by side at each x,
    the latencies on the second axis; not for a plain device (one layer
    only), nor with two series (the bars would mix)."""
    rows = [dict(measured(qd), active_nodes=qd) for qd in (1, 2, 3)]
    for row in rows:
        row.update(dev_iops=row["iops"] * 1.5, member_iops=row["iops"] * 3)
    directory = make_results(tmp_path / "vsa", ["active_nodes"], rows,
                             workload={"target": "share"})
    figures, _ = plot.render(directory)
    assert "layers" in [f.name for f in figures]
    texts = svg_texts(os.path.join(directory, "plots", "layers.svg"))
    for text in ("IOPS, VMs (fio)", "IOPS, devices", "IOPS, member disks",
                 "mean latency, VMs (fio)", "mean latency, devices", "IOPS (all nodes)"):
        assert text in texts
    blocks = datablocks(gp(directory, "layers"))
    # three bars a category, the member disks' at 3x the VMs'
    assert [len(blocks[b]) for b in ("$d0", "$d1", "$d2")] == [3, 3, 3]
    assert blocks["$d2"][0][1] == pytest.approx(3 * blocks["$d0"][0][1])
    assert all(math.isnan(row[2]) for row in blocks["$d2"])    # members: no latency
    # a plain device: the VM and its front end are one layer
    for row in rows:
        row["member_iops"] = ""
    directory = make_results(tmp_path / "device", ["active_nodes"], rows)
    assert "layers" not in [f.name for f in plot.render(directory)[0]]
    # two series: not drawn
    rows = [dict(measured(qd, battery), iodepth=qd, **{"device.battery": battery})
            for qd in (1, 8) for battery in ("ok", "failed")]
    directory = make_results(tmp_path / "two", ["iodepth", "device.battery"], rows,
                             x="iodepth", series="device.battery")
    assert "layers" not in [f.name for f in plot.render(directory)[0]]


def test_plot_names_on_axes_titles_and_legends(tmp_path):
    """plot.names: the figures say "queue depth" and "BBU", not the keys."""
    rows = [dict(measured(qd, battery), iodepth=qd, **{"device.battery": battery})
            for qd in (1, 8) for battery in ("ok", "failed")]
    directory = make_results(tmp_path / "named", ["iodepth", "device.battery"], rows,
                             x="iodepth", series="device.battery",
                             plot_settings={"names": {"iodepth": "queue depth",
                                                      "device.battery": "BBU"}})
    plot.render(directory)
    script = gp(directory, "iops-latency")
    assert "set xlabel 'queue depth'" in script
    assert "IOPS and latency vs queue depth by BBU'" in script
    assert "title 'IOPS · BBU=ok'" in script and "iodepth" not in script
    with open(os.path.join(directory, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    manifest["plot"]["names"] = {"iodepth": 4}
    with open(os.path.join(directory, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f)
    with pytest.raises(UserError, match="plot.names must map column names to names"):
        plot.render(directory)


def test_one_point_one_series_value_still_plots(tmp_path):
    rows = [dict(measured(4, "failed"), iodepth=4, **{"device.battery": "failed"})]
    directory = make_results(tmp_path / "one", ["iodepth", "device.battery"], rows,
                             x="iodepth", series="device.battery")
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "hockey"]
    for name in ("iops-latency", "hockey"):
        assert_png(os.path.join(directory, "plots", f"{name}.png"))
        svg_texts(os.path.join(directory, "plots", f"{name}.svg"))


def test_string_x_without_series_and_nothing_swept(tmp_path):
    rows = [dict(measured(8, battery), **{"device.battery": battery})
            for battery in ("ok", "learning", "failed")]
    directory = make_results(tmp_path / "strings", ["device.battery"], rows)
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "hockey", "layers"]
    assert "set xtics ('ok' 0, 'learning' 1, 'failed' 2)" in gp(directory, "iops-latency")
    assert "IOPS" in svg_texts(os.path.join(directory, "plots", "iops-latency.svg"))
    # No swept key at all: the points themselves are the x axis.
    directory = make_results(tmp_path / "none", [], [measured(1), measured(2)])
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "hockey", "layers"]


def test_empty_cells_are_not_available_not_errors(tmp_path):
    rows = [dict(measured(qd), iodepth=qd) for qd in (1, 2, 4, 8)]
    for row in rows:
        row.update(lat_mean_us="", lat_p99_us="")     # no latency measured at all
    rows[1]["iops"] = ""                                # and one point without IOPS
    directory = make_results(tmp_path / "gaps", ["iodepth"], rows)
    figures, report_path = plot.render(directory)
    # hockey needs latency; the layers have IOPS
    assert [f.name for f in figures] == ["iops-latency", "layers"]
    script = gp(directory, "iops-latency")
    assert "NaN" in script and "y2" not in script
    with open(report_path, encoding="utf-8") as f:
        assert '<td class="na">n/a</td>' in f.read()
    # Nothing measured yet: no figures, still a report.
    directory = make_results(tmp_path / "empty", ["iodepth"], [])
    figures, report_path = plot.render(directory)
    assert figures == [] and os.path.isfile(report_path)


def test_rerender_removes_stale_figures(tmp_path):
    directory = battery_sweep(tmp_path / "run", sim=False)
    plot.render(directory)
    shutil.rmtree(os.path.join(directory, "points", "003"))
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "hockey"]
    assert not any(n.startswith("timeline-") for n in figure_files(directory))
    assert "simulator" not in svg_texts(os.path.join(directory, "plots", "hockey.svg"))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def break_points(directory, text):
    write(os.path.join(directory, "points.csv"), text)


BAD_INPUTS = [
    ("no dir", lambda d: shutil.rmtree(d), r"run: no such results directory"),
    ("no manifest", lambda d: os.remove(os.path.join(d, "manifest.json")),
     r"manifest.json: no such file"),
    ("manifest not JSON", lambda d: write(os.path.join(d, "manifest.json"), "{ nope"),
     r"manifest.json: not valid JSON"),
    ("manifest a list", lambda d: write(os.path.join(d, "manifest.json"), "[]"),
     r"manifest.json: expected a JSON object"),
    ("plot.x unknown", lambda d: write(os.path.join(d, "manifest.json"), json.dumps(
        {"swept": ["iodepth"], "plot": {"x": "qd", "series": None}})),
     r"manifest.json: plot.x 'qd' is not a column of .*points.csv"),
    ("no points.csv", lambda d: os.remove(os.path.join(d, "points.csv")),
     r"points.csv: no such file"),
    ("empty points.csv", lambda d: break_points(d, ""), r"points.csv: empty"),
    ("no point column", lambda d: break_points(d, "iodepth,iops\n1,5\n"),
     r"points.csv: no 'point' column"),
    ("swept key missing", lambda d: break_points(d, "point,iops\n0,5\n"),
     r"points.csv: no 'iodepth' column"),
    ("not a number", lambda d: break_points(d, "point,iodepth,iops\n0,1,12.5\n1,2,fast\n"),
     r"points.csv line 3: iops 'fast' is not a number"),
    ("short row", lambda d: break_points(d, "point,iodepth,iops\n0,1\n"),
     r"points.csv line 2: 2 fields, the header has 3"),
    ("bad point", lambda d: break_points(d, "point,iodepth,iops\nx,1,5\n"),
     r"points.csv line 2: point 'x' is not a point index"),
    ("bad sim", lambda d: write(os.path.join(d, "sim", "points.csv"), "point,iodepth\n0,1,2\n"),
     r"sim/points.csv line 2: 3 fields"),
    ("bad timeline", lambda d: write(os.path.join(d, "points", "000", "timeline.csv"),
                                     "t_s,iops\nsoon,5\n"),
     r"000/timeline.csv line 2: t_s 'soon' is not a number"),
    ("bad events", lambda d: (add_timeline(d, 0, []),
                              write(os.path.join(d, "points", "000", "events.csv"), "what\nx\n")),
     r"000/events.csv: no 't_s' column"),
]


@pytest.mark.parametrize("breakage,expected", [(b, e) for _, b, e in BAD_INPUTS],
                         ids=[name for name, _, _ in BAD_INPUTS])
def test_bad_results_are_one_line_errors_naming_the_file(tmp_path, breakage, expected):
    directory = make_results(tmp_path / "run", ["iodepth"],
                             [dict(measured(qd), iodepth=qd) for qd in (1, 2)])
    breakage(directory)
    with pytest.raises(UserError, match=expected) as error:
        plot.run([directory])
    assert "\n" not in str(error.value)


def test_usage_error_is_a_user_error():
    with pytest.raises(UserError, match="usage: storlab plot"):
        plot.run([])


def test_gnuplot_failure_names_the_plot(tmp_path):
    with pytest.raises(UserError, match=r"plot broken: gnuplot failed: .*nosuchfunction"):
        plots.run_gnuplot(str(tmp_path), "broken", "plot nosuchfunction(x)\n")


def test_gnuplot_quoting_survives_any_label(tmp_path):
    script = plots.Script("it's 100% \"quoted\" \\n $x {y} @z")
    block = script.data([[0, 1.0], [1, None], [2, 3.0]])
    script.element(f"{block} using 1:2 with linespoints title {plots.quote('a''b')}")
    plots.run_gnuplot(str(tmp_path), "quoting", script.text("quoting"))
    texts = svg_texts(str(tmp_path / "quoting.svg"))
    assert "it's 100% \"quoted\" \\n $x {y} @z" in texts


def test_a_long_title_wraps_at_words_within_the_figure(tmp_path):
    """A study's name and its axes make titles of 120 characters and more:
    drawn on lines of at most TITLE_MAX_CHARS, every word kept."""
    title = ("allflash-policies — IOPS per node and latency vs workload.rwmixread "
             "by volumes.method, volumes.checksum, and what else a study's axes add")
    script = plots.Script(title)
    block = script.data([[0, 1.0], [1, 2.0]])
    script.element(f"{block} using 1:2 with lines title 'x'")
    plots.run_gnuplot(str(tmp_path), "long", script.text("long"))
    svg_texts(str(tmp_path / "long.svg"))
    texts = ["".join(t.itertext()).strip()
             for t in ET.parse(str(tmp_path / "long.svg")).getroot().iter(SVG_NS + "text")]
    lines = [t for t in texts if len(t) > 10 and t in title]
    assert len(lines) >= 2 and " ".join(lines) == title, lines
    assert all(len(line) <= plots.TITLE_MAX_CHARS for line in lines)


def test_report_is_escaped_self_contained_and_links_raw_files(tmp_path):
    rows = [dict(measured(qd, battery), iodepth=qd, **{"device.battery": battery})
            for qd in (1, 4) for battery in ("ok", "<b>failed & gone</b>")]
    directory = make_results(tmp_path / "run", ["iodepth", "device.battery"], rows,
                             x="iodepth", series="device.battery", name="<script>x</script>")
    figures, report_path = plot.render(directory)
    with open(report_path, encoding="utf-8") as f:
        page = f.read()
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "&lt;b&gt;failed &amp; gone&lt;/b&gt;" in page
    assert not re.search(r"https?://|(src|href)=\"//", page)
    for figure in figures:
        assert f'<img src="{figure.svg}"' in page and f'href="{figure.png}"' in page
    for label in ("Backend", "Topology", "Revision", "Version: qemu", "Accelerator", "Host"):
        assert f"<th>{label}</th>" in page
    assert "2 CPUs, 8.0 GiB memory, Debian 12" in page and "72923cd-dirty" in page
    assert html.rounded("253.3051539304867") == "253.3" and html.rounded("55.5") == "55.5"
    assert html.rounded("0.0123456") == "0.0123" and html.rounded("12") == "12"
    for link in ("points/000/params.json", "points/003/fio-node1-u0.json", "points/003/done"):
        assert f'href="{link}"' in page
        assert os.path.isfile(os.path.join(directory, link))


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not installed (Debian package 'chromium')")
def test_report_renders_in_headless_chromium(tmp_path):
    directory = battery_sweep(tmp_path / "run")
    figures, report_path = plot.render(directory)
    result = report_check.check(report_path, timeout_s=60)
    assert result.checked
    assert result.images_total == len(figures) == 3
    assert result.images_loaded == 3 and result.images_failed == []
    assert result.point_rows == 8
    # The page notices an image that does not load.
    os.remove(os.path.join(directory, "plots", "hockey.svg"))
    result = report_check.check(report_path, timeout_s=60)
    assert result.images_loaded == 2 and result.images_failed == ["plots/hockey.svg"]


def test_big_sweeps_draw_only_the_timelines_with_events():
    few = [plot_data.PointTimeline(i, None, []) for i in range(12)]
    assert plots.timelines_worth_drawing(few) == few
    many = [plot_data.PointTimeline(i, None, ["e"] if i == 7 else []) for i in range(13)]
    assert [t.point for t in plots.timelines_worth_drawing(many)] == [7]


def test_report_says_which_lab_points_the_host_limited(tmp_path):
    """host_limit (points.csv) becomes a section naming each flagged point and why."""
    rows = [dict(measured(qd), iodepth=qd, dev_qd_mean=qd * 0.9, release_late_p99_us=3.0,
                 host_limit=flag)
            for qd, flag in ((1, ""), (16, "host-queue"), (32, "nbd-16+host-queue+release-late"))]
    directory = make_results(tmp_path / "run", ["iodepth"], rows, x="iodepth",
                             metrics=HOST_METRICS)
    _, report_path = plot.render(directory)
    with open(report_path, encoding="utf-8") as f:
        page = f.read()
    assert "Where the host was the limit" in page and "2 of 3 lab points" in page
    assert 'id="host-limit-0"' not in page
    flagged = page[page.index('id="host-limit-2"'):]
    flagged = flagged[:flagged.index("</li>")]
    assert "iodepth 32" in flagged
    for needle in ("QEMU&#39;s NBD client keeps in flight (16)", "mean queue depth stayed below 50%",
                   "released replies late"):
        assert needle in flagged, flagged
    assert "<th>host_limit</th>" in page



def test_report_names_the_windows_that_were_not_steady(tmp_path):
    """iops_range_pct and iops_slope_pct (points.csv, lab and simulator)
    become a section naming each side's points outside SNIA PTS's bounds."""
    from storlab_cli.results import points_csv
    columns = list(points_csv.METRIC_COLUMNS)
    rows = [dict(measured(qd), iodepth=qd, iops_range_pct=spread, iops_slope_pct=slope)
            for qd, spread, slope in ((1, 4.0, -2.0), (8, 31.0, 28.0))]
    sim_rows = [dict(measured(qd), iodepth=qd, iops_range_pct=spread, iops_slope_pct=slope)
                for qd, spread, slope in ((1, 19.0, -12.5), (8, 3.0, 1.0))]
    directory = make_results(tmp_path / "run", ["iodepth"], rows, x="iodepth",
                             sim_rows=sim_rows, metrics=columns)
    _, report_path = plot.render(directory)
    with open(report_path, encoding="utf-8") as f:
        page = f.read()
    assert "Windows that were not steady" in page and "2 points measured a" in page
    assert 'id="unsteady-lab-0"' not in page and 'id="unsteady-simulator-1"' not in page
    lab = page[page.index('id="unsteady-lab-1"'):]
    lab = lab[:lab.index("</li>")]
    assert "iodepth 8" in lab and "span 31 %" in lab and "rose 28 %" in lab
    sim = page[page.index('id="unsteady-simulator-0"'):]
    sim = sim[:sim.index("</li>")]
    assert "fell 12 %" in sim and "span" not in sim
    # steady everywhere: no section
    quiet = make_results(tmp_path / "quiet", ["iodepth"], rows[:1], x="iodepth", metrics=columns)
    _, report_path = plot.render(quiet)
    with open(report_path, encoding="utf-8") as f:
        assert "not steady" not in f.read()

# ---- the manifest's plot settings: per node, working set per host, a cache marked ----

NODE_METRICS = METRICS + ["nodes"]
READ_CACHE_BYTES = 280054516940     # hybrid-4node-full's read cache per node: 260.82 GiB


def datablocks(script):
    """{"$d0": [[numbers]]} of a gnuplot script's inline data."""
    blocks = {}
    for match in re.finditer(r"^(\$d\d+) << EOD\n(.*?)^EOD$", script, re.M | re.S):
        blocks[match.group(1)] = [[float(v) for v in line.split()]
                                  for line in match.group(2).splitlines()]
    return blocks


def nodes_sweep(directory, per_node=True, metrics=NODE_METRICS):
    """topology.nodes.count 4, 8 x bs 4k, 64k: every node adds 50000 IOPS, the
    simulator's 55000; points.csv's nodes says how many ran."""
    rows, sim_rows = [], []
    for count in (4, 8):
        for bs, bs_bytes in (("4k", 4096), ("64k", 65536)):
            for per_node_iops, into in ((50000.0, rows), (55000.0, sim_rows)):
                iops = per_node_iops * count
                into.append(dict(measured(8), iops=iops, mb_s=iops * bs_bytes / 1e6, nodes=count,
                                 units=8 * count, bs=bs, **{"topology.nodes.count": count}))
    return make_results(directory, ["topology.nodes.count", "bs"], rows,
                        x="topology.nodes.count", series="bs", sim_rows=sim_rows,
                        metrics=metrics, plot_settings={"per_node": per_node})


def test_per_node_divides_iops_and_bandwidth_by_each_points_nodes(tmp_path):
    directory = nodes_sweep(tmp_path / "run")
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "bandwidth", "hockey"]
    script = gp(directory, "iops-latency")
    assert "set ylabel 'IOPS per node'" in script
    assert "title 'IOPS per node · bs=4k'" in script
    assert "title 'simulator IOPS per node · bs=64k'" in script
    assert "IOPS per node and latency vs topology.nodes.count by bs" in script
    # 4 and 8 nodes: the same IOPS per node, the lab's bars and the simulator's points
    per_node = {tuple(row[1] for row in block) for block in datablocks(script).values()}
    assert per_node == {(50000.0, 50000.0), (55000.0, 55000.0)}
    bandwidth = gp(directory, "bandwidth")
    assert "set ylabel 'bandwidth (MB/s per node)'" in bandwidth
    assert "title 'MB/s per node · count=4'" in bandwidth
    mb_s = sorted(row[1] for block in datablocks(bandwidth).values() for row in block)
    assert mb_s == pytest.approx([204.8, 204.8, 3276.8, 3276.8])
    hockey = gp(directory, "hockey")
    assert "set xlabel 'IOPS per node'" in hockey and "Latency vs IOPS per node" in hockey
    assert {row[0] for block in datablocks(hockey).values() for row in block} == \
        {50000.0, 55000.0}
    assert "IOPS per node" in svg_texts(os.path.join(directory, "plots", "iops-latency.svg"))
    # per_node false: the cluster's totals, as before
    directory = nodes_sweep(tmp_path / "totals", per_node=False)
    plot.render(directory)
    script = gp(directory, "iops-latency")
    assert "set ylabel 'IOPS'" in script and "per node" not in script
    assert {row[1] for block in datablocks(script).values() for row in block} == \
        {200000.0, 400000.0, 220000.0, 440000.0}


def test_per_node_needs_the_nodes_column(tmp_path):
    directory = nodes_sweep(tmp_path / "run", metrics=METRICS)
    with pytest.raises(UserError, match=r"points.csv: no 'nodes' column, which "
                       r"plot.per_node divides by") as error:
        plot.run([directory])
    assert "\n" not in str(error.value)


def working_set_sweep(directory, sizes=("1G", "2G", "4G", "8G"), workers=(8,),
                      plot_settings=None):
    """x = size with 8 units of 8 workers a host (the study's hybrid-read-cache);
    workers swept too when more than one; IOPS fall off beyond 256 GiB per host."""
    rows = []
    for size in sizes:
        for count in workers:
            per_host = int(size[:-1]) * 8 * count
            rows.append(dict(measured(16, scale=1.0 if per_host <= 256 else 0.2), size=size,
                             workers=count))
    swept = ["size"] + (["workers"] if len(workers) > 1 else [])
    return make_results(directory, swept, rows, x="size", series=swept[1] if len(workers) > 1
                        else None, sim_rows=rows, workload={"units": 8, "workers": workers[0]},
                        plot_settings={"x_per_host": True, **(plot_settings or {})})


def test_x_per_host_shows_each_points_working_set_per_host(tmp_path):
    # listed largest first: the axis still goes from the smallest
    directory = working_set_sweep(tmp_path / "run", sizes=("8G", "1G", "4G", "2G"))
    figures, _ = plot.render(directory)
    assert [f.name for f in figures] == ["iops-latency", "hockey", "layers"]
    assert "set xtics ('64 GiB' 0, '128 GiB' 1, '256 GiB' 2, '512 GiB' 3)" in \
        gp(directory, "layers")
    script = gp(directory, "iops-latency")
    assert "set xtics ('64 GiB' 0, '128 GiB' 1, '256 GiB' 2, '512 GiB' 3)" in script
    assert "set xlabel 'working set per host'" in script
    assert "IOPS and latency vs working set per host'" in script
    assert "set arrow" not in script                        # no mark asked for
    bars = datablocks(script)["$d0"]
    assert [row[0] for row in bars] == [0, 1, 2, 3] and bars[3][1] < bars[2][1] / 4
    hockey = gp(directory, "hockey")
    for text in ("64 GiB", "512 GiB"):
        assert f"set label '{text}' at first" in hockey
    assert "working set per host" in svg_texts(os.path.join(directory, "plots",
                                                            "iops-latency.svg"))
    # workers swept as the series: each point's own workers, so one category
    # holds 1G x 8 workers and 2G x 4 workers
    directory = working_set_sweep(tmp_path / "workers", sizes=("1G", "2G"), workers=(4, 8))
    plot.render(directory)
    script = gp(directory, "iops-latency")
    assert "set xtics ('32 GiB' 0, '64 GiB' 1, '128 GiB' 2)" in script
    blocks = datablocks(script)
    assert [row[1] is not None and not math.isnan(row[1]) for row in blocks["$d0"]] == \
        [True, True, False]                                  # workers=4: 32 and 64 GiB


@pytest.mark.parametrize("mark_bytes, x, label", [
    # between 256 GiB (category 2) and 512 GiB (3), in proportion
    (READ_CACHE_BYTES, 2.0188, "read cache 260.82 GiB per host"),
    (128 << 30, 1.0, "read cache 128 GiB per host"),
    (32 << 30, -0.5, "read cache 32 GiB per host (beyond: below every working set)"),
    (1 << 40, 3.5, "read cache 1 TiB per host (beyond: above every working set)"),
])
def test_a_cache_is_marked_where_it_falls_between_the_working_sets(tmp_path, mark_bytes, x,
                                                                   label):
    directory = working_set_sweep(tmp_path / "run", plot_settings={
        "mark": "read-cache", "mark_bytes": mark_bytes})
    plot.render(directory)
    script = gp(directory, "iops-latency")
    assert f"set arrow from first {x}, graph 0 to first {x}, graph 1 nohead dt 2" in script
    place = "right offset char -0.6" if (x + 0.6) / 4 > 0.67 else "left offset char 0.6"
    assert f"set label '{label}' at first {x}, graph 0.96 {place}" in script
    assert label in svg_texts(os.path.join(directory, "plots", "iops-latency.svg"))
    assert "set arrow" not in gp(directory, "hockey")     # its x is IOPS
    # the write buffer's words
    directory = working_set_sweep(tmp_path / "buffer", plot_settings={
        "mark": "write-buffer", "mark_bytes": 120023364404})
    plot.render(directory)
    assert "set label 'write buffer 111.78 GiB per host' at first 0.7466," in \
        gp(directory, "iops-latency")


def test_a_mark_between_categories_is_interpolated():
    from storlab_cli.report import axes
    known = [(0, 64), (1, 128), (2, 256)]
    assert axes.position(96, known) == (0.5, None)
    assert axes.position(256, known) == (2, None)
    assert axes.position(64, known) == (0, None)
    assert axes.position(8, known) == (-0.5, "below")
    assert axes.position(300, known) == (2.5, "above")
    assert axes.position(5, [(0, 5)]) == (0, None)


BAD_PLOT_SETTINGS = [
    ({"per_node": "yes"}, r"plot.per_node must be true, false or null"),
    ({"x_per_host": 1}, r"plot.x_per_host must be true, false or null"),
    ({"mark": "l2-cache", "mark_bytes": 1}, r"plot.mark must be read-cache, write-buffer or null"),
    ({"mark": "read-cache"}, r"plot.mark_bytes must be the bytes per host plot.mark marks"),
    ({"mark": "read-cache", "mark_bytes": -5}, r"plot.mark_bytes must be the bytes"),
]


@pytest.mark.parametrize("settings, expected", BAD_PLOT_SETTINGS)
def test_bad_plot_settings_are_one_line_naming_the_manifest(tmp_path, settings, expected):
    directory = working_set_sweep(tmp_path / "run", plot_settings=settings)
    with pytest.raises(UserError, match=r"manifest.json: " + expected) as error:
        plot.run([directory])
    assert "\n" not in str(error.value)
