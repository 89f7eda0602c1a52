"""Subcommand dispatch; user errors become one line and exit status 1."""
import sys

from storlab_cli.commands import check, compare, demo, lab, plot, studies, sweep
from storlab_cli.live import ctl, top
from storlab_cli.errors import UserError

COMMANDS = {
    "demo": (demo.run, "the main job: bring the default 3-node lab up, sweep outstanding I/O "
             "1..16 on every node's RAID LUN with the controller cache on and off, plot it "
             "beside the simulator's prediction in an HTML report, take the lab down"),
    "check": (check.run, "install what is missing, build, and run every test"),
    "up": (lab.up, "bring a lab up: up TOPOLOGY.toml [--accel auto|kvm|tcg]"),
    "down": (lab.down, "stop everything a lab started: down LAB"),
    "status": (lab.status, "show labs: status [LAB] [--json]"),
    "exec": (lab.exec_, "run a command in a node: exec LAB NODE [--timeout S] -- CMD [ARGS...]"),
    "node": (lab.node, "fail or restore nodes: node LAB NODE... down|up"),
    "snapshot": (lab.snapshot, "snapshots of a workload volume: snapshot LAB NODE VOLUME "
                 "create|delete [ID]|list [--json]"),
    "console": (lab.console, "attach to a node's serial console: console LAB NODE"),
    "sweep": (sweep.run, "run a sweep on a lab or the simulator: sweep FILE [--out DIR] "
              "[--backend lab|sim]"),
    "studies": (studies.run, "list the shipped studies (topologies/studies/): the scenario and "
                "figure each reproduces, its wall time: studies [--json]"),
    "plot": (plot.run, "redraw a results directory's figures and report: plot DIR"),
    "compare": (compare.run, "results directories side by side, the first the baseline: "
                "compare DIR DIR... [--out DIR]"),
    "top": (top.run, "live per-layer view of a running device: top STATS|LAB NODE DEVICE "
                     "[--interval S] [--once] [--count N]"),
    "ctl": (ctl.run, "control a running raid plugin: ctl SOCKET COMMAND... or "
                     "ctl LAB NODE DEVICE COMMAND... (status, battery failed, ...)"),
}


def usage():
    lines = ["usage: storlab COMMAND [ARGS...]", "", "commands:"]
    lines += [f"  {name:8} {help_text}" for name, (_, help_text) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    command = COMMANDS.get(argv[0])
    if command is None:
        print(f"storlab: unknown command '{argv[0]}' (known: {', '.join(COMMANDS)})",
              file=sys.stderr)
        return 2
    try:
        return command[0](argv[1:])
    except UserError as e:
        print(f"storlab {argv[0]}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"storlab {argv[0]}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:
        # libvirt failing where storlab did not look for it: still one line
        if type(e).__module__ != "libvirt":
            raise
        print(f"storlab {argv[0]}: libvirt: {e}", file=sys.stderr)
        return 1
