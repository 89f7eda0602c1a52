"""pytest: every test imports storlab_cli from this checkout's scripts/;
fixtures more than one test file uses."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "scripts"))


@pytest.fixture
def busybox_path(tmp_path_factory):
    """A PATH whose sh, awk and cat are busybox's, as in a lab's guest."""
    tools = tmp_path_factory.mktemp("busybox-bin")
    for applet in ("sh", "awk", "cat"):
        os.symlink("/bin/busybox", tools / applet)
    return str(tools)
