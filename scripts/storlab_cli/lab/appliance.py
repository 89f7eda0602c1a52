"""The guest appliance storlab labs boot: an uncompressed kernel that QEMU
starts through PVH, and an uncompressed initramfs built from the host's own
Debian packages (busybox init, the storage tools, qemu-ga, kernel modules).

ensure() reuses the cached build whose inputs hash matches, else builds it.
The guest-side files (init set-up, agent launcher, LVM config...) are real
files in scripts/appliance/; this module only collects, packs and caches."""
import dataclasses
import fcntl
import hashlib
import json
import lzma
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time

from storlab_cli.paths import DEFAULT_CACHE_DIR, SOURCE_DIR
from storlab_cli.errors import UserError

GUEST_DIR = os.path.join(SOURCE_DIR, "scripts", "appliance")
# The storage profile scripts (scripts/profiles/*), run by the host through
# the guest agent; all of them go in, here.
PROFILES_DIR = os.path.join(SOURCE_DIR, "scripts", "profiles")
GUEST_PROFILES_DIR = "/usr/lib/storlab/profiles"
CACHE_SUBDIR = "appliance"             # of a cache directory: appliances, by hash
# quiet, no crypto self-tests, no probing of absent UARTs and PS/2 mouse: ~0.3 s under TCG.
# no_timer_check: the boot's IO-APIC timer test counts ticks over a busy
# wait, which a TCG vCPU starved by other guests can miss; the kernel then
# panics ("IO-APIC + timer doesn't work!", a profile-raid6 node in CI on
# 2026-11-29) though the timer works (libguestfs's appliance skips it too).
CMDLINE = ("console=ttyS0 quiet cryptomgr.notests 8250.nr_uarts=1 i8042.noaux i8042.nokbd"
           " no_timer_check")
KERNEL_NAME = "vmlinux"
INITRD_NAME = "initramfs.cpio"
MANIFEST_NAME = "manifest.json"
# Bump when the layout of the result changes in a way the inputs do not show.
FORMAT_VERSION = 1

# What ensure() needs installed; storlab's deps module installs them.
APPLIANCE_PACKAGES = [
    "linux-image-amd64", "kmod", "busybox-static", "dash", "fio", "mdadm", "lvm2",
    "dmsetup", "thin-provisioning-tools", "bcache-tools", "drbd-utils",
    "nfs-kernel-server", "nfs-common", "rpcbind", "iproute2", "e2fsprogs",
    "qemu-guest-agent", "util-linux", "mount",
]

# The tools the guest gets, at the paths they have on the host (with every
# symlink on the way), plus the libraries ldd lists for them.
TOOLS = (
    ("busybox-static", ("/bin/busybox",)),
    ("dash", ("/bin/dash",)),
    ("kmod", ("/sbin/modprobe", "/sbin/insmod", "/sbin/rmmod", "/sbin/modinfo",
              "/sbin/depmod", "/bin/lsmod")),
    ("fio", ("/usr/bin/fio",)),
    ("mdadm", ("/sbin/mdadm",)),
    ("lvm2", ("/sbin/lvm",)),
    ("dmsetup", ("/sbin/dmsetup",)),
    ("thin-provisioning-tools", ("/usr/sbin/pdata_tools",)),
    ("bcache-tools", ("/usr/sbin/make-bcache", "/usr/sbin/bcache-super-show")),
    ("drbd-utils", ("/sbin/drbdadm", "/sbin/drbdsetup", "/sbin/drbdmeta",
                    "/lib/drbd/drbdadm-84", "/lib/drbd/drbdsetup-84")),
    ("nfs-kernel-server", ("/usr/sbin/rpc.nfsd", "/usr/sbin/rpc.mountd", "/usr/sbin/exportfs")),
    ("nfs-common", ("/sbin/mount.nfs", "/sbin/mount.nfs4", "/sbin/umount.nfs",
                    "/sbin/umount.nfs4", "/sbin/showmount", "/sbin/rpc.statd",
                    "/sbin/sm-notify")),
    ("rpcbind", ("/sbin/rpcbind", "/usr/sbin/rpcinfo")),
    ("iproute2", ("/sbin/ip", "/bin/ss")),
    ("e2fsprogs", ("/sbin/mkfs.ext4", "/sbin/fsck.ext4", "/sbin/tune2fs",
                   "/sbin/resize2fs", "/sbin/dumpe2fs")),
    ("qemu-guest-agent", ("/usr/sbin/qemu-ga",)),
    ("mount", ("/bin/mount", "/bin/umount", "/sbin/losetup")),
    ("util-linux", ("/sbin/blkid", "/bin/lsblk", "/bin/findmnt", "/sbin/wipefs",
                    "/sbin/blockdev", "/sbin/blkdiscard")),
)
# Multi-call binaries: every symlink next to them that points at them comes too
# (lvcreate, pvs... -> lvm; thin_check, cache_check... -> pdata_tools).
MULTI_CALL = ("/sbin/lvm", "/usr/sbin/pdata_tools")
# glibc dlopens it for thread cancellation and unwinding; ldd does not list it.
EXTRA_LIBRARIES = ("/lib/x86_64-linux-gnu/libgcc_s.so.1",)
# Host configuration the tools read, copied when present.
HOST_CONFIG = (
    "/etc/netconfig", "/etc/services", "/etc/protocols", "/etc/rpc", "/etc/mke2fs.conf",
    "/etc/nfs.conf", "/etc/iproute2", "/etc/drbd.conf", "/etc/drbd.d",
)
# scripts/appliance/NAME -> (guest path, mode).
GUEST_FILES = {
    "inittab": ("/etc/inittab", 0o644),
    "rcS": ("/etc/init.d/rcS", 0o755),
    "start-qemu-ga": ("/usr/lib/storlab/start-qemu-ga", 0o755),
    "shutdown": ("/usr/sbin/shutdown", 0o755),
    "lvm.conf": ("/etc/lvm/lvm.conf", 0o644),
    "passwd": ("/etc/passwd", 0o644),
    "group": ("/etc/group", 0o644),
    "nsswitch.conf": ("/etc/nsswitch.conf", 0o644),
}
# Kernel modules whose modprobe closures go in (softdeps included).
MODULES = (
    "virtio_pci", "virtio_blk", "virtio_scsi", "ahci", "sd_mod", "virtio_net", "virtio_console",
    "raid0", "raid1", "raid10", "raid456", "dm_cache", "dm_cache_smq", "dm_writecache",
    "dm_thin_pool", "dm_mod", "bcache", "drbd", "nfsd", "nfsv4", "nfsv3", "ext4", "nbd",
    "crc32c_generic", "nvmet", "nvmet_tcp", "nvme_tcp", "nvme_fabrics", "dm_integrity",
    "dm_snapshot",
)
# The root is merged-/usr like Debian 12's: these are links into usr/.
MERGED_DIRS = ("/bin", "/sbin", "/lib", "/lib64")
SKELETON_DIRS = {
    "/proc": 0o755, "/sys": 0o755, "/dev": 0o755, "/run": 0o755, "/tmp": 0o1777,
    "/root": 0o700, "/mnt": 0o755, "/var/tmp": 0o1777, "/var/log": 0o755,
    "/var/lib/nfs/rpc_pipefs": 0o755, "/var/lib/nfs/v4recovery": 0o755,
    "/var/lib/nfs/sm": 0o755, "/var/lib/nfs/sm.bak": 0o755, "/var/lib/drbd": 0o755,
    "/etc/lvm/backup": 0o700, "/etc/lvm/archive": 0o700,
}
SKELETON_LINKS = {
    "/var/run": "../run", "/var/lock": "../run/lock", "/etc/mtab": "../proc/self/mounts",
    "/usr/bin/sh": "dash",
    # The kernel runs /init; busybox picks its init applet from the name.
    "/init": "usr/bin/busybox",
}
XZ_MAGIC = b"\xfd7zXZ\x00"


@dataclasses.dataclass(frozen=True)
class Appliance:
    kernel_path: str
    initrd_path: str
    kernel_version: str
    content_hash: str
    cmdline: str


def default_cache_dir():
    return os.path.join(os.environ.get("STORLAB_CACHE_DIR", DEFAULT_CACHE_DIR), CACHE_SUBDIR)


def under(image, cache_base):
    """The same appliance as another cache directory holds it (a copy on a
    lab's other host): cache_base/appliance/<hash>/."""
    directory = os.path.join(cache_base, CACHE_SUBDIR, image.content_hash)
    return dataclasses.replace(image, kernel_path=os.path.join(directory, KERNEL_NAME),
                               initrd_path=os.path.join(directory, INITRD_NAME))


def ensure(cache_dir=None, progress=print):
    """The appliance for the installed packages and this source tree: reused
    from cache_dir/<hash>/ when complete, else built there first."""
    plan = make_plan()
    cache_dir = cache_dir or default_cache_dir()
    final_dir = os.path.join(cache_dir, plan.content_hash)
    appliance = _load(final_dir, plan)
    if appliance:
        return appliance
    _make_dirs(cache_dir)
    with _locked(cache_dir):
        # Another storlab may have built it while we waited for the lock.
        appliance = _load(final_dir, plan)
        if appliance:
            return appliance
        return _build(plan, cache_dir, final_dir, progress)


# ---------------------------------------------------------------- the plan

@dataclasses.dataclass
class Plan:
    kernel_version: str
    kernel_image: str
    module_files: list      # host paths of the module closure
    entries: dict           # guest path -> entry tuple (see _Entries)
    packages: dict          # package -> version, of everything that goes in
    content_hash: str


class _Entries:
    """Guest paths (canonical: no symlinks on the way) to what they hold:
    ("dir", mode) | ("file", host_path, mode) | ("data", bytes, mode) |
    ("symlink", target) | ("chardev", mode, major, minor)."""

    def __init__(self):
        self.entries = {}
        self.host_files = set()   # host paths read, for package ownership

    def add(self, guest_path, entry):
        self.entries.setdefault(guest_path, entry)

    def add_host(self, host_path, depth=0):
        """host_path at its own place in the guest, following its symlinks."""
        if depth > 40:
            raise UserError(f"{host_path}: too many levels of symbolic links")
        guest_path = _guest_path(host_path)
        if guest_path in self.entries:
            return
        if not os.path.lexists(host_path):
            raise FileNotFoundError(host_path)
        self.host_files.add(host_path)
        if os.path.islink(host_path):
            target = os.readlink(host_path)
            self.entries[guest_path] = ("symlink", target)
            real_dir = os.path.realpath(os.path.dirname(host_path))
            self.add_host(os.path.normpath(os.path.join(real_dir, target)), depth + 1)
        elif os.path.isdir(host_path):
            self.entries[guest_path] = ("dir", 0o755)
            for name in sorted(os.listdir(host_path)):
                self.add_host(os.path.join(host_path, name), depth)
        else:
            mode = 0o755 if os.stat(host_path).st_mode & 0o111 else 0o644
            self.entries[guest_path] = ("file", host_path, mode)


def _guest_path(host_path):
    parent = os.path.realpath(os.path.dirname(os.path.abspath(host_path)))
    path = os.path.join(parent, os.path.basename(host_path))
    for top in MERGED_DIRS:
        if path == top or path.startswith(top + "/"):
            return "/usr" + path
    return path


def _run(cmd, what):
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise UserError(f"{what}: '{cmd[0]}' is not installed") from None
    return result


def make_plan(guest_dir=GUEST_DIR):
    """Everything that goes into the appliance and the hash of it, without
    building anything (a second or so: dpkg-query, ldd, modprobe -D)."""
    installed = _installed_versions(APPLIANCE_PACKAGES)
    missing = [p for p in APPLIANCE_PACKAGES if p not in installed]
    if missing:
        raise UserError("the appliance needs Debian packages that are not installed: "
                        + " ".join(missing))
    kernel_version, kernel_package = _kernel_version()
    kernel_image = f"/boot/vmlinuz-{kernel_version}"
    if not os.path.isfile(kernel_image):
        raise UserError(f"{kernel_image} is missing: reinstall Debian package {kernel_package}")

    tree = _Entries()
    for package, paths in TOOLS:
        for path in paths:
            try:
                tree.add_host(path)
            except FileNotFoundError as e:
                raise UserError(f"{e.filename} is missing: reinstall Debian package "
                                f"{package}") from None
    for binary in MULTI_CALL:
        _add_multi_call_links(tree, binary)
    for library in _libraries(tree) + list(EXTRA_LIBRARIES):
        tree.add_host(library)
    for path in HOST_CONFIG:
        if os.path.exists(path):
            tree.add_host(path)
    _add_busybox_applets(tree)
    guest_digests = _add_guest_files(tree, guest_dir)
    guest_digests.update(_add_profile_scripts(tree, PROFILES_DIR))
    _add_skeleton(tree)
    module_files = _module_closure(kernel_version)

    owners, unowned = _owners(tree.host_files)
    packages = _installed_versions(sorted(owners | set(APPLIANCE_PACKAGES) | {kernel_package}))
    inputs = {
        "format": FORMAT_VERSION,
        "kernel_version": kernel_version,
        "cmdline": CMDLINE,
        "packages": packages,
        "unowned_files": {path: _digest_host(path) for path in sorted(unowned)},
        "guest_files": guest_digests,
        "appliance_py": _digest_file(os.path.realpath(__file__)),
    }
    content_hash = hashlib.sha256(
        json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:16]
    return Plan(kernel_version, kernel_image, module_files, tree.entries, packages,
                content_hash)


def _installed_versions(packages):
    """package -> version for those of `packages` that are installed."""
    result = _run(["dpkg-query", "-W", "-f=${Package}\t${db:Status-Abbrev}\t${Version}\n"]
                  + list(packages), "listing installed packages")
    versions = {}
    for line in result.stdout.splitlines():
        name, status, version = (line.split("\t") + ["", ""])[:3]
        if status.startswith("ii"):
            versions[name] = (versions[name] + "," + version) if name in versions else version
    return versions


def _kernel_version():
    """The version of the kernel linux-image-amd64 currently points at."""
    result = _run(["dpkg-query", "-W", "-f=${Depends}", "linux-image-amd64"],
                  "reading linux-image-amd64")
    match = re.search(r"linux-image-(\d\S*-amd64)", result.stdout)
    if not match:
        raise UserError("linux-image-amd64 depends on no linux-image-*-amd64 "
                        f"(Depends: '{result.stdout.strip()}')")
    version = match.group(1)
    package = f"linux-image-{version}"
    if package not in _installed_versions([package]):
        raise UserError(f"the appliance needs Debian package {package} "
                        "(reinstall linux-image-amd64)")
    return version, package


def _add_multi_call_links(tree, binary):
    directory = os.path.realpath(os.path.dirname(binary))
    name = os.path.basename(binary)
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        if os.path.islink(path) and os.path.basename(os.readlink(path)) == name:
            tree.add_host(path)


def _is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _libraries(tree):
    """The shared libraries (and loader) the ELF files in the tree need."""
    binaries = [e[1] for e in tree.entries.values() if e[0] == "file" and e[2] == 0o755
                and _is_elf(e[1])]
    result = _run(["ldd"] + binaries, "listing libraries")
    libraries = []
    current = None
    for line in result.stdout.splitlines():
        if not line.startswith(("\t", " ")):
            current = line.rstrip(":")
            continue
        if "not found" in line:
            raise UserError(f"{current} needs {line.split()[0]}, which is not installed")
        match = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)\s+\(", line)
        if match and match.group(1) not in libraries:
            libraries.append(match.group(1))
    if not libraries:
        raise UserError(f"ldd found no libraries: {result.stderr.strip()[:200]}")
    return libraries


def _add_busybox_applets(tree):
    """busybox applet links, except where a real tool of that name goes in
    (PATH order would otherwise pick busybox's ip, mount, modprobe...)."""
    result = _run(["/bin/busybox", "--list-full"], "listing busybox applets")
    real_names = {os.path.basename(p) for p in tree.entries
                  if p.startswith(("/usr/bin/", "/usr/sbin/"))}
    real_names.add("sh")   # dash
    for relative in result.stdout.split():
        name = os.path.basename(relative)
        if name in real_names or name == "linuxrc":
            continue
        tree.add(_guest_path("/" + relative), ("symlink", "/usr/bin/busybox"))


def _add_guest_files(tree, guest_dir):
    """scripts/appliance/* into the tree; returns name -> sha256 of every file
    there (all of them count for the hash, listed or not)."""
    digests = {}
    for name in sorted(os.listdir(guest_dir)):
        path = os.path.join(guest_dir, name)
        if os.path.isfile(path):
            digests[name] = _digest_file(path)
    for name, (guest_path, mode) in GUEST_FILES.items():
        path = os.path.join(guest_dir, name)
        if name not in digests:
            raise UserError(f"{path} is missing (it belongs to the storlab source tree)")
        with open(path, "rb") as f:
            # Replaces whatever the host tree put there (busybox links, /etc files).
            tree.entries[guest_path] = ("data", f.read(), mode)
    return digests


def _add_profile_scripts(tree, profiles_dir):
    """scripts/profiles/* into GUEST_PROFILES_DIR; returns "profiles/NAME" ->
    sha256 of each (they count for the hash)."""
    digests = {}
    for name in sorted(os.listdir(profiles_dir)):
        path = os.path.join(profiles_dir, name)
        if not os.path.isfile(path):
            continue
        digests["profiles/" + name] = _digest_file(path)
        with open(path, "rb") as f:
            data = f.read()
        mode = 0o755 if data.startswith(b"#!") else 0o644
        tree.entries[f"{GUEST_PROFILES_DIR}/{name}"] = ("data", data, mode)
    return digests


def _add_skeleton(tree):
    for top in MERGED_DIRS:
        tree.add(top, ("symlink", "usr" + top))
    for path, mode in SKELETON_DIRS.items():
        tree.add(path, ("dir", mode))
    for path, target in SKELETON_LINKS.items():
        tree.add(path, ("symlink", target))
    tree.add("/etc/exports", ("data", b"", 0o644))
    # The kernel opens it for init's stdin/stdout before devtmpfs is mounted.
    tree.add("/dev/console", ("chardev", 0o600, 5, 1))


def _module_closure(kernel_version):
    files = []
    for module in MODULES:
        result = _run(["modprobe", "-S", kernel_version, "-D", module], "listing module "
                      "dependencies")
        if result.returncode != 0:
            raise UserError(f"kernel {kernel_version} has no module {module}: "
                            f"{result.stderr.strip()}")
        for line in result.stdout.splitlines():
            words = line.split()
            if words[:1] == ["insmod"] and words[1] not in files:
                files.append(words[1])
    return files


def _owners(host_files):
    """(packages owning the files, files no package owns). dpkg knows a file
    by the path its package ships, /lib/... or /usr/lib/..., so both are asked."""
    aliases = {}
    for path in host_files:
        real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        names = {path, real}
        for top in MERGED_DIRS:
            if real.startswith("/usr" + top + "/"):
                names.add(real[len("/usr"):])
        aliases[path] = names
    queries = sorted(set().union(*aliases.values())) if aliases else []
    result = _run(["dpkg-query", "-S"] + queries, "finding package owners")
    owner_of = {}
    for line in result.stdout.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        packages, path = line.split(": ", 1)
        owner_of[path] = [p.strip().split(":")[0] for p in packages.split(",")]
    owners, unowned = set(), []
    for path, names in aliases.items():
        found = [p for name in names for p in owner_of.get(name, [])]
        if found:
            owners.update(found)
        else:
            unowned.append(path)
    return owners, unowned


def _digest_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _digest_host(path):
    if os.path.islink(path):
        return "symlink:" + os.readlink(path)
    return _digest_file(path)


# --------------------------------------------------------------- the cache

def _load(final_dir, plan):
    """The cached appliance in final_dir if its manifest says it is complete."""
    try:
        with open(os.path.join(final_dir, MANIFEST_NAME), encoding="utf-8") as f:
            manifest = json.load(f)
        kernel_path = os.path.join(final_dir, KERNEL_NAME)
        initrd_path = os.path.join(final_dir, INITRD_NAME)
        if (manifest.get("content_hash") != plan.content_hash
                or os.path.getsize(kernel_path) != manifest["kernel_bytes"]
                or os.path.getsize(initrd_path) != manifest["initramfs_bytes"]):
            return None
    except (OSError, ValueError, KeyError):
        return None
    return Appliance(kernel_path, initrd_path, plan.kernel_version, plan.content_hash,
                     manifest.get("cmdline", CMDLINE))


def _make_dirs(cache_dir):
    """cache_dir and missing parents, 0755 so libvirt's qemu user gets through."""
    missing = []
    path = os.path.abspath(cache_dir)
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    try:
        for path in reversed(missing):
            os.mkdir(path)
            os.chmod(path, 0o755)
        if not os.access(cache_dir, os.W_OK):
            raise PermissionError(13, "not writable", cache_dir)
    except OSError as e:
        raise UserError(f"cannot write the appliance cache {cache_dir}: {e.strerror} "
                        "(run as root, or set STORLAB_CACHE_DIR)") from None


class _locked:
    """An exclusive lock on cache_dir, so two storlabs do not build at once."""

    def __init__(self, cache_dir):
        self.path = os.path.join(cache_dir, ".lock")

    def __enter__(self):
        self.file = open(self.path, "a", encoding="utf-8")
        os.chmod(self.path, 0o644)
        fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def _build(plan, cache_dir, final_dir, progress):
    started = time.monotonic()
    progress(f"appliance: building {plan.content_hash} (kernel {plan.kernel_version}) "
             f"in {cache_dir}")
    _remove_leftovers(cache_dir, final_dir)
    work_dir = tempfile.mkdtemp(prefix=f".build-{plan.content_hash}-", dir=cache_dir)
    renamed = False
    try:
        os.chmod(work_dir, 0o755)
        kernel_path = os.path.join(work_dir, KERNEL_NAME)
        initrd_path = os.path.join(work_dir, INITRD_NAME)
        progress(f"appliance: extracting the uncompressed kernel from {plan.kernel_image} ...")
        _extract_kernel(plan.kernel_image, kernel_path)
        progress(f"appliance: collecting kernel modules ({len(plan.module_files)} files) "
                 "and running depmod ...")
        entries = dict(plan.entries)
        entries.update(_stage_modules(plan, os.path.join(work_dir, "modules")))
        files = sum(1 for e in entries.values() if e[0] in ("file", "data"))
        progress(f"appliance: collecting binaries and libraries, writing the initramfs "
                 f"({files} files) ...")
        _write_cpio(entries, initrd_path)
        shutil.rmtree(os.path.join(work_dir, "modules"))
        for path in (kernel_path, initrd_path):
            os.chmod(path, 0o644)
        os.rename(work_dir, final_dir)
        renamed = True
        manifest = {
            "content_hash": plan.content_hash,
            "kernel_version": plan.kernel_version,
            "cmdline": CMDLINE,
            "kernel_bytes": os.path.getsize(os.path.join(final_dir, KERNEL_NAME)),
            "initramfs_bytes": os.path.getsize(os.path.join(final_dir, INITRD_NAME)),
            "files": files,
            "packages": plan.packages,
            "build_seconds": round(time.monotonic() - started, 1),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        _write_json_atomically(os.path.join(final_dir, MANIFEST_NAME), manifest)
    except BaseException as e:
        shutil.rmtree(final_dir if renamed else work_dir, ignore_errors=True)
        if isinstance(e, OSError):
            raise UserError(f"building the appliance in {cache_dir} failed: {e}") from None
        raise
    progress(f"appliance: built in {manifest['build_seconds']} s: "
             f"{KERNEL_NAME} {manifest['kernel_bytes'] / 2**20:.1f} MiB, "
             f"{INITRD_NAME} {manifest['initramfs_bytes'] / 2**20:.1f} MiB")
    return _load(final_dir, plan)


def _remove_leftovers(cache_dir, final_dir):
    """Work dirs of interrupted builds and a result without its manifest."""
    for name in os.listdir(cache_dir):
        if name.startswith(".build-"):
            shutil.rmtree(os.path.join(cache_dir, name), ignore_errors=True)
    if os.path.lexists(final_dir):
        shutil.rmtree(final_dir)


def _write_json_atomically(path, data):
    temp_path = path + ".tmp"
    with open(temp_path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.chmod(temp_path, 0o644)
    os.rename(temp_path, path)


# --------------------------------------------------------------- the build

def _extract_kernel(bzimage, dest):
    """The ELF vmlinux inside Debian's bzImage: its XZ stream, decompressed.
    QEMU boots it directly through PVH, skipping the in-guest decompression."""
    with open(bzimage, "rb") as f:
        data = f.read()
    start = data.find(XZ_MAGIC)
    while start != -1:
        decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        try:
            kernel = decompressor.decompress(data[start:])
        except lzma.LZMAError:
            kernel = b""
        if decompressor.eof and kernel[:4] == b"\x7fELF":
            with open(dest, "wb") as f:
                f.write(kernel)
            return
        start = data.find(XZ_MAGIC, start + 1)
    raise UserError(f"{bzimage}: found no XZ-compressed ELF kernel in it "
                    "(the appliance needs Debian's linux-image-amd64)")


def _stage_modules(plan, stage_dir):
    """Copies the module closure under stage_dir, runs depmod there and
    returns the guest entries for the result."""
    version = plan.kernel_version
    host_root = os.path.realpath(f"/lib/modules/{version}")
    stage_root = os.path.join(stage_dir, "lib", "modules", version)
    wanted = [os.path.realpath(p) for p in plan.module_files]
    for name in os.listdir(host_root):
        if name.startswith("modules.builtin") or name == "modules.order":
            wanted.append(os.path.join(host_root, name))
    for path in wanted:
        relative = os.path.relpath(path, host_root)
        if relative.startswith(".."):
            raise UserError(f"module {path} is outside {host_root}")
        dest = os.path.join(stage_root, relative)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(path, dest)
    result = _run(["depmod", "-b", stage_dir, version], "running depmod")
    if result.returncode != 0:
        raise UserError(f"depmod -b {stage_dir} {version} failed: {result.stderr.strip()}")
    entries = {}
    for directory, _, names in os.walk(stage_root):
        for name in names:
            path = os.path.join(directory, name)
            guest = f"/usr/lib/modules/{version}/" + os.path.relpath(path, stage_root)
            entries[guest] = ("file", path, 0o644)
    return entries


def _with_parents(entries):
    complete = dict(entries)
    for path in entries:
        parent = os.path.dirname(path)
        while parent != "/" and parent not in complete:
            complete[parent] = ("dir", 0o755)
            parent = os.path.dirname(parent)
        if parent != "/" and complete[parent][0] != "dir":
            raise UserError(f"appliance layout: {path} is under {parent}, "
                            f"which is a {complete[parent][0]}")
    return complete


def _write_cpio(entries, dest):
    """An uncompressed newc archive (the kernel unpacks it fastest), owned by
    root, with fixed times so equal inputs give equal bytes."""
    with open(dest, "wb") as out:
        writer = _CpioWriter(out)
        for path, entry in sorted(_with_parents(entries).items()):
            name = path.lstrip("/")
            kind = entry[0]
            if kind == "dir":
                writer.add(name, stat.S_IFDIR | entry[1], b"", nlink=2)
            elif kind == "symlink":
                writer.add(name, stat.S_IFLNK | 0o777, entry[1].encode())
            elif kind == "data":
                writer.add(name, stat.S_IFREG | entry[2], entry[1])
            elif kind == "chardev":
                writer.add(name, stat.S_IFCHR | entry[1], b"", rdev=(entry[2], entry[3]))
            else:
                writer.add_file(name, stat.S_IFREG | entry[2], entry[1])
        writer.finish()


class _CpioWriter:
    def __init__(self, out):
        self.out = out
        self.inode = 0
        self.offset = 0

    def _header(self, name, mode, size, nlink=1, rdev=(0, 0)):
        self.inode += 1
        encoded = name.encode() + b"\0"
        fields = (self.inode, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1],
                  len(encoded), 0)
        self._write(b"070701" + "".join(f"{v:08X}" for v in fields).encode() + encoded)
        self._pad()

    def _write(self, data):
        self.out.write(data)
        self.offset += len(data)

    def _pad(self):
        self._write(b"\0" * (-self.offset % 4))

    def add(self, name, mode, data, nlink=1, rdev=(0, 0)):
        self._header(name, mode, len(data), nlink, rdev)
        self._write(data)
        self._pad()

    def add_file(self, name, mode, source):
        with open(source, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self._header(name, mode, size)
            copied = 0
            for chunk in iter(lambda: f.read(1 << 20), b""):
                self._write(chunk)
                copied += len(chunk)
        if copied != size:
            raise UserError(f"{source} changed while the appliance was being built")
        self._pad()

    def finish(self):
        self.add("TRAILER!!!", 0, b"")
