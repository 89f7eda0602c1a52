"""Where things are: the source tree, the build directory, built binaries."""
import os

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD_DIR = os.environ.get("STORLAB_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))


def built(*parts):
    return os.path.join(BUILD_DIR, *parts)


def simulator():
    return built("emulator", "storlab-sim")


def stats_tool():
    return built("emulator", "storlab-stats")


def plugin(kind):
    return built("plugins", f"nbdkit-{kind}-plugin.so")


def job_file(name):
    return os.path.join(SOURCE_DIR, "scripts", "jobs", name)
