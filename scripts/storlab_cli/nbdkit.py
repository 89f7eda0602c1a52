"""One nbdkit process serving on a private unix socket, stopped by its PID."""
import os
import signal
import subprocess
import time

from . import paths
from .errors import UserError

STORLAB_PLUGINS = ("hdd",)


class Nbdkit:
    def __init__(self, workdir, plugin, params, options=(), threads=64):
        """plugin: a storlab kind ("hdd") or any installed nbdkit plugin name."""
        name = plugin
        self.socket = os.path.join(workdir, f"{name}.sock")
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        target = paths.plugin(plugin) if plugin in STORLAB_PLUGINS else plugin
        cmd = (["nbdkit", "--foreground", "--exit-with-parent", f"--threads={threads}",
                "-U", self.socket] + list(options) + [target] + list(params))
        self._stderr = open(self.stderr_path, "w", encoding="utf-8")
        self.process = subprocess.Popen(cmd, stderr=self._stderr)
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                with open(self.stderr_path, encoding="utf-8") as err:
                    raise UserError(f"nbdkit {plugin} did not start: {err.read().strip()}")
            time.sleep(0.05)

    @property
    def uri(self):
        return f"nbd+unix:///?socket={self.socket}"

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._stderr.close()
        if os.path.exists(self.socket):
            os.unlink(self.socket)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
