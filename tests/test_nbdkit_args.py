"""pytest: nothing a topology or a sweep passes to nbdkit as a plugin
parameter can be read as one of nbdkit's own options. A key "--run" once
reached nbdkit as `--run=touch /tmp/x` and ran the command as root."""
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(TESTS)

from storlab_cli import paths
from storlab_cli.lab import nbdkit
from storlab_cli.errors import UserError


@pytest.fixture
def hdd_plugin():
    plugin = paths.plugin("hdd")
    if not os.path.exists(plugin):
        pytest.skip(f"{plugin}: not built")
    return plugin


@pytest.mark.parametrize("option", ["--run=touch {canary}", "--run", "-U", "--filter=log",
                                    "--exit-with-parent", "-f"])
def test_a_parameter_that_looks_like_an_option_is_never_one(tmp_path, hdd_plugin, option):
    canary = tmp_path / "canary"
    sock, pidfile = str(tmp_path / "d.sock"), str(tmp_path / "d.pid")
    params = ["size=64M", option.format(canary=canary)]
    with pytest.raises(UserError) as refused:
        nbdkit.start_daemon("hdd", params, sock, pidfile, os.getgid(), timeout_s=5)
    try:
        assert not canary.exists(), "nbdkit ran a parameter as its --run option"
        message = str(refused.value)
        assert "\n" not in message and message.startswith("nbdkit hdd size=64M"), message
    finally:
        nbdkit.stop_daemons([pidfile])   # nothing should be running; stop it if it is


def test_the_foreground_server_ends_options_too(tmp_path, hdd_plugin):
    canary = tmp_path / "canary"
    with pytest.raises(UserError, match="did not start"):
        nbdkit.Nbdkit(str(tmp_path), "hdd", ["size=64M", f"--run=touch {canary}"]).stop()
    assert not canary.exists()
