"""Argument parsing for the lab subcommands; the work is in lab/lifecycle.py."""

from storlab_cli.common import cli_args
from storlab_cli.lab import lifecycle
from storlab_cli.errors import UserError


def up(args):
    p = cli_args.Parser(prog="storlab up", description="bring a lab up from a topology file")
    p.add_argument("topology", help="topology TOML file (the lab is named by its name key)")
    p.add_argument("--accel", choices=("auto", "kvm", "tcg"), help="override the topology's accel")
    a = p.parse_args(args)
    lifecycle.up(a.topology, a.accel)
    return 0


def down(args):
    p = cli_args.Parser(prog="storlab down", description="stop everything a lab started")
    p.add_argument("lab")
    a = p.parse_args(args)
    lifecycle.down(a.lab)
    return 0


def status(args):
    p = cli_args.Parser(prog="storlab status", description="labs, nodes, domains, agents, devices")
    p.add_argument("lab", nargs="?")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(args)
    return lifecycle.status(a.lab, a.json)


def exec_(args):
    p = cli_args.Parser(prog="storlab exec", description="run a command in a node (argv, no shell)",
                        usage="storlab exec [-h] [--timeout S] LAB NODE -- COMMAND [ARGS...]")
    p.add_argument("lab")
    p.add_argument("node")
    p.add_argument("--timeout", type=int, default=3600, metavar="S",
                   help="seconds the command may run (default 3600)")
    if "--" not in args:
        if "-h" in args or "--help" in args:
            p.parse_args(["-h"])
        raise UserError("usage: storlab exec [--timeout S] LAB NODE -- COMMAND [ARGS...]")
    split = args.index("--")
    a = p.parse_args(args[:split])
    command = args[split + 1:]
    if not command:
        raise UserError("storlab exec: no command after --")
    return lifecycle.exec_in(a.lab, a.node, command, a.timeout)


def console(args):
    p = cli_args.Parser(prog="storlab console", description="attach to a node's serial console")
    p.add_argument("lab")
    p.add_argument("node")
    a = p.parse_args(args)
    lifecycle.console(a.lab, a.node)
    return 0


def node(args):
    p = cli_args.Parser(prog="storlab node", description="take nodes down (destroy their domains, "
                "all at once) or bring them back (boot them on the same disks, all at once, "
                "and rejoin their storage profile)")
    p.add_argument("lab")
    p.add_argument("node", nargs="+")
    p.add_argument("action", choices=("down", "up"))
    a = p.parse_args(args)
    (lifecycle.node_down if a.action == "down" else lifecycle.node_up)(a.lab, *a.node)
    return 0


def snapshot(args):
    p = cli_args.Parser(prog="storlab snapshot", description="take, delete or list the "
                        "snapshots of a workload volume whose set has `snapshots` (delete "
                        "without an ID deletes the oldest)")
    p.add_argument("lab")
    p.add_argument("node")
    p.add_argument("volume")
    p.add_argument("action", choices=("create", "delete", "list"))
    p.add_argument("id", nargs="?", type=int, help="the snapshot to delete")
    p.add_argument("--json", action="store_true", help="list as JSON")
    a = p.parse_args(args)
    if a.id is not None and a.action != "delete":
        p.error(f"{a.action} takes no snapshot ID")
    lifecycle.snapshot(a.lab, a.node, a.volume, a.action, a.id, a.json)
    return 0
