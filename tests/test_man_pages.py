"""pytest: the manual pages. Every page renders (pod2man, man) with its
NAME; storlab(1) has a section for every subcommand naming exactly the
options that subcommand's --help names; the plugins' pages list the
catalog's presets."""
import json
import os
import re
import subprocess

import pytest

from storlab_cli import main, paths

TESTS = os.path.dirname(os.path.abspath(__file__))
STORLAB = os.path.join(os.path.dirname(TESTS), "scripts", "storlab")
STORLAB_POD = os.path.join(os.path.dirname(TESTS), "scripts", "man", "storlab.pod")
PAGES = ["storlab.1", "storlab-topology.5", "storlab-sweep.5", "storlab-sim.1",
         "storlab-stats.1", "storlab-catalog.1", "nbdkit-hdd-plugin.1",
         "nbdkit-ssd-plugin.1", "nbdkit-raid-plugin.1"]
OPTION_RE = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def subcommand_blocks():
    """subcommand -> the text of its =head2 block in storlab.pod."""
    with open(STORLAB_POD, encoding="utf-8") as f:
        text = f.read()
    blocks = {}
    for match in re.finditer(r"^=head2 storlab (\S+)(.*?)(?=^=head[12] |\Z)", text, re.M | re.S):
        blocks[match.group(1)] = match.group(0)
    return blocks


def help_options(subcommand):
    result = subprocess.run(["/usr/bin/python3", STORLAB, subcommand, "--help"],
                            capture_output=True, text=True, timeout=60, check=False)
    return set(OPTION_RE.findall(result.stdout + result.stderr)) - {"--help"}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_with_its_name(page):
    path = paths.built(page)
    if not os.path.exists(path):
        pytest.skip(f"{path}: not built (pod2man missing?)")
    result = subprocess.run(["man", "-l", "-Tutf8", path], capture_output=True, text=True,
                            timeout=60, check=False, env={**os.environ, "MANWIDTH": "80"})
    assert result.returncode == 0, result.stderr
    text = re.sub(".\x08", "", result.stdout)          # man's overstrike bold
    name = page.rsplit(".", 1)[0]
    assert re.search(r"^NAME\s*\n\s+" + re.escape(name) + r" - ", text, re.M), text[:400]
    assert "POD ERRORS" not in text


def test_storlab_page_has_a_section_for_every_subcommand():
    assert list(subcommand_blocks()) == list(main.COMMANDS)


# check passes its arguments to meson test: its --help is meson's
@pytest.mark.parametrize("subcommand", [c for c in main.COMMANDS if c != "check"])
def test_a_subcommands_page_section_names_its_options(subcommand):
    block = subcommand_blocks()[subcommand]
    documented = set(OPTION_RE.findall(block)) - {"--help"}
    assert documented == help_options(subcommand), \
        f"storlab {subcommand}: page {sorted(documented)}, --help {sorted(help_options(subcommand))}"
    for option in documented:
        assert re.search(r"^=item B<" + re.escape(option) + ">", block, re.M), \
            f"storlab {subcommand}: {option} has no =item of its own"


@pytest.mark.parametrize("kind", ["hdd", "ssd", "raid"])
def test_a_plugins_page_lists_the_catalogs_presets(kind):
    page = paths.built(f"nbdkit-{kind}-plugin.1")
    if not os.path.exists(page):
        pytest.skip(f"{page}: not built")
    with open(paths.catalog(), encoding="utf-8") as f:
        presets = [p["name"] for p in json.load(f)["presets"] if p["kind"] == kind]
    with open(page, encoding="utf-8") as f:
        text = f.read()
    assert presets and all(name in text for name in presets)
