"""storlab demo: the README's main job. Brings the default lab up (3 nodes,
each with a RAID controller LUN), runs the demo sweep — outstanding I/O 1 to
16, the controller's write cache on vs off, with the simulator's prediction
beside it — writes the plots and the report, prints where they are, and
takes the lab down (a default lab that was already up is reused and left up)."""
import os

from storlab_cli import paths
from storlab_cli.commands import sweep
from storlab_cli.common import cli_args
from storlab_cli.results import directory
from storlab_cli.schema import sweep as sweep_schema

DEMO_SWEEP = os.path.join(paths.SOURCE_DIR, "topologies", "sweeps", "demo.toml")


def run(args):
    parser = cli_args.Parser(prog="storlab demo")
    parser.add_argument("--out", help="results directory (default results/demo-UTCSTAMP)")
    parsed = parser.parse_args(args)
    out = parsed.out or directory.default_dir(sweep_schema.load(DEMO_SWEEP))
    print(f"storlab demo: sweep {os.path.relpath(DEMO_SWEEP, paths.SOURCE_DIR)} on the default "
          "lab (takes a few minutes under TCG)")
    return sweep.run([DEMO_SWEEP, "--out", out])
