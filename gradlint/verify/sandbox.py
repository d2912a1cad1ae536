"""Runs a command in its own user, mount, pid, network, IPC and UTS namespaces (Linux), over a kernel overlay.

    python sandbox.py --base DIR --status FILE --bind PATH [--project DIR] [--network none|host] -- COMMAND...

The set-up follows bubblewrap's `--unshare-all --dev /dev --proc /proc --ro-bind`.  The command
sees the file system as it is, but every writable file system is mounted as an overlayfs whose
lower layer is the real folder and whose upper layer is a folder under DIR: whatever the command
and everything it starts write (Python, C extensions, sqlite, mmap, subprocesses, FIFOs) lands in
DIR/upper, by construction.  /dev is a minimal one (null, zero, full, random, urandom, tty, the
GPUs, a private shm and pts: no disk), /proc is the pid namespace's own with its kernel knobs
read-only, /sys is read-only, a read-only mount stays read-only; the --bind paths (verify's own
event log and scratch folder) are the real ones.  The network is a new one with loopback only,
unless --network host.  The root is built in one mount namespace and the command runs in a user
and mount namespace below it, where the kernel locks every mount: no remount makes a read-only
one writable, no unmount uncovers what is below one.  The process tree lives in a pid namespace:
when the command exits, or this process dies, the kernel kills every process left in it (a
`setsid` daemon included).

Only the standard library (ctypes for unshare, mount and pivot_root): this runs as a file, before
anything of the user's.  Root overlays a folder that holds mount points whole and each mount point
on top of it; a user's namespace cannot (the kernel keeps what is below its inherited mounts
hidden), nor can anyone overlay the folders above DIR, so such a folder is rebuilt in a skeleton
(DIR/root) and each of its entries is overlaid on its own; a file directly in it is bound
read-only, and when that would be the case in a --project folder (the script's folder, the working
directory) the set-up fails and says why.  The layout goes to --status (JSON) before the command
starts, or the reason it could not be built (exit 111: the caller then falls back to verify's
Python-level overlay, or, with --containment namespace, refuses to run).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000
CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS = 0x40000000, 0x08000000, 0x04000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
# statvfs's f_flag bits -> the mount flags a remount must repeat (a user namespace may not drop them)
_KEPT_FLAGS = ((getattr(os, "ST_NOSUID", 2), MS_NOSUID), (getattr(os, "ST_NODEV", 4), MS_NODEV),
               (getattr(os, "ST_NOEXEC", 8), MS_NOEXEC), (getattr(os, "ST_NOATIME", 1024), MS_NOATIME),
               (getattr(os, "ST_NODIRATIME", 2048), MS_NODIRATIME), (getattr(os, "ST_RELATIME", 4096), MS_RELATIME))
MNT_DETACH = 2
PR_SET_PDEATHSIG = 1
SETUP_FAILED = 111
_PIVOT_ROOT = {"x86_64": 155, "amd64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "loongarch64": 41,
               "ppc64le": 203, "ppc64": 203, "s390x": 217, "i686": 217, "i386": 217, "armv7l": 218}
# The devices a script gets in its own /dev (bubblewrap's --dev): no disk, no loop device, no tty of the host's.
_DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# Accelerators (character devices: the GPU, never a disk), bound as they are so that CUDA and ROCm work.
_ACCELERATORS = ("nvidia", "kfd", "dxg")
_DEV_LINKS = (("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
              ("fd", "/proc/self/fd"), ("core", "/proc/kcore"), ("ptmx", "pts/ptmx"))
# Parts of a fresh /proc that change the kernel, not the pid namespace: read-only (as bubblewrap's --proc).
_PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus")

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _enc(value):
    return None if value is None else os.fsencode(value)


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = _enc
    _check(_c().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {fstype or 'bind'} on {target}")


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def read_mounts(path="/proc/self/mountinfo") -> dict:
    """mount point -> (file system type, read-only), the last mount on a point winning."""
    mounts = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            fields = line.split()
            if "-" not in fields:
                continue
            cut = fields.index("-")
            point, options, fstype = _unescape(fields[4]), fields[5].split(","), fields[cut + 1]
            mounts[point] = (fstype, "ro" in options)
    return mounts


def _escape_option(path: str) -> str:
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


def _mount_flags(target: str) -> int:
    """The flags of the mount at target that a remount must keep (nosuid, nodev, noexec, atime)."""
    found = os.statvfs(target).f_flag
    return sum(flag for bit, flag in _KEPT_FLAGS if found & bit)


def _remount_readonly(target: str) -> None:
    """The mount at target made read-only, keeping its other flags; an error when it cannot be."""
    _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _mount_flags(target))


class Layout:
    """Builds the new root in `base`/root: overlays, a minimal /dev, read-only /sys, a skeleton where needed.

    Built in a mount namespace of its own; the command then runs in a further user and mount
    namespace (lock_mounts), where every mount made here is locked: the kernel lets no remount
    make a read-only one writable, and no unmount uncover what is below one.
    """

    def __init__(self, base: str, binds=(), projects=()):
        self.base = os.path.realpath(base)
        self.root = os.path.join(self.base, "root")
        self.binds = [os.path.realpath(b) for b in binds]
        self.projects = [os.path.realpath(p) for p in projects]  # the script's folders: never read-only
        self.mounts = {p: v for p, v in read_mounts().items() if not self._ours(p)}
        self.points = sorted(self.mounts)
        self.layers: list[list[str]] = []  # [real folder, its upper folder]
        self.skeleton: list[str] = []  # paths this made in the skeleton (not the script's writes)
        self.readonly: list[list[str]] = []  # [path, why it could not be overlaid]
        self.proc_fresh = False
        self.devices: list[str] = []

    def _ours(self, p: str) -> bool:
        return p == self.base or p.startswith(self.base + os.sep)

    def _holds_base(self, p: str) -> bool:
        """p is verify's folder or above it: overlayfs refuses an upper layer inside its lower one."""
        return p == os.sep or (self.base + os.sep).startswith(p.rstrip(os.sep) + os.sep)

    def _below(self, p: str) -> bool:
        prefix = p.rstrip(os.sep) + os.sep
        return self._holds_base(p) or any(m.startswith(prefix) for m in self.points)

    def _topmost_below(self, p: str) -> list:
        """The mount points under p that no other mount point under p holds, in order."""
        prefix, found = p.rstrip(os.sep) + os.sep, []
        for m in self.points:
            if m.startswith(prefix) and not any(m.startswith(f + os.sep) for f in found):
                found.append(m)
        return found

    def at(self, p: str) -> str:
        return self.root + p if p != os.sep else self.root

    def _make(self, p: str, like) -> str:
        """The new root's place for real path p: a folder, or an empty file to bind a file on.
        Inside an overlay the place is already there (the lower layer has it): nothing is made."""
        target = self.at(p)
        if os.path.lexists(target):
            return target
        if stat.S_ISDIR(like.st_mode):
            os.mkdir(target, stat.S_IMODE(like.st_mode) | 0o700)
        else:
            with open(target, "wb"):
                pass
        self.skeleton.append(p)
        return target

    def build(self) -> None:
        os.mkdir(self.root, 0o755)
        os.mkdir(os.path.join(self.base, "upper"))
        os.mkdir(os.path.join(self.base, "work"))
        _mount(self.root, self.root, None, MS_BIND)  # a mount point of its own, for pivot_root
        self.skeleton.append(os.sep)
        self._children(os.sep)
        for path in self.binds:
            _mount(path, self.at(path), None, MS_BIND | MS_REC)
        self._check_projects()

    def _children(self, folder: str) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            path = os.path.join(folder, name)
            if not self._ours(path):
                self._place(path)

    def _place(self, p: str) -> None:
        if p in ("/dev", "/proc", "/sys"):
            return self._system(p)
        if p in self.mounts:
            return self._place_mount(p)
        try:
            st = os.lstat(p)
        except OSError:
            return
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(p), self.at(p))
            self.skeleton.append(p)
        elif stat.S_ISDIR(st.st_mode) and self._below(p):
            self._tree(p, st)
        elif stat.S_ISDIR(st.st_mode):
            self._overlay(p, st)
        elif stat.S_ISSOCK(st.st_mode):
            return  # a host service's socket: left out (a read-only bind would still let connect() through)
        else:  # a file beside verify's own folder (/.dockerenv): the real one, read-only
            self._bind(p, st, readonly=True, why="a file in a folder that cannot be overlaid whole (it holds "
                       "verify's own folder or, in a user namespace, a mount point)")

    def _tree(self, p: str, st) -> None:
        """A folder with mount points below it: one overlay of the folder with each mount point's own
        overlay on top, where the kernel allows it (not in a user namespace, whose inherited mounts
        are locked); else a skeleton of its entries, each placed on its own."""
        if not self._holds_base(p) and self._overlay(p, st, fallback=False):
            for m in self._topmost_below(p):
                if m.startswith(("/dev/", "/proc/", "/sys/")):
                    continue
                self._place_mount(m)
            return
        self._make(p, st)
        self._children(p)

    def _system(self, p: str) -> None:
        try:
            st = os.stat(p)
        except OSError:
            return
        target = self._make(p, st)
        if p == "/dev":
            self._dev(target)
        elif p == "/proc":
            self._proc(target)
        else:  # /sys and every file system mounted below it (cgroups), read-only
            _mount(p, target, None, MS_BIND | MS_REC)
            for point in sorted(read_mounts()):
                if point == target or point.startswith(target + os.sep):
                    _remount_readonly(point)

    def _dev(self, target: str) -> None:
        """bubblewrap's --dev: a tmpfs with the harmless character devices, a private shm and pts."""
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        try:
            accelerators = sorted(n for n in os.listdir("/dev") if n.startswith(_ACCELERATORS))
        except OSError:
            accelerators = []
        for name in (*_DEVICES, *accelerators):
            real = os.path.join("/dev", name)
            if not os.path.exists(real) or not stat.S_ISCHR(os.stat(real).st_mode):
                continue
            place = os.path.join(target, name)
            with open(place, "wb"):
                pass
            try:
                _mount(real, place, None, MS_BIND)
            except OSError:  # the host's tty may be unreachable (no controlling terminal)
                os.unlink(place)
                continue
            self.devices.append(real)
        if os.path.isdir("/dev/dri"):  # render nodes of GPUs (ROCm, Intel)
            os.mkdir(os.path.join(target, "dri"))
            _mount("/dev/dri", os.path.join(target, "dri"), None, MS_BIND | MS_REC)
            self.devices.append("/dev/dri")
        os.mkdir(os.path.join(target, "shm"))
        _mount("tmpfs", os.path.join(target, "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        os.mkdir(os.path.join(target, "pts"))
        try:
            _mount("devpts", os.path.join(target, "pts"), "devpts", MS_NOSUID | MS_NOEXEC,
                   "newinstance,ptmxmode=0666,mode=620")
        except OSError:
            pass  # no pseudo-terminals: a training script does not need one
        for name, link in _DEV_LINKS:
            os.symlink(link, os.path.join(target, name))

    def _proc(self, target: str) -> None:
        """A procfs of the new pid namespace (the script sees its own processes only; never the host's
        /proc, whose /proc/PID/root leads to the real files), its kernel knobs read-only."""
        try:
            _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot mount a /proc of the script's own pid namespace ({exc.strerror})")
        self.proc_fresh = True
        for name in _PROC_READONLY:
            place = os.path.join(target, name)
            if os.path.exists(place):
                _mount(place, place, None, MS_BIND | MS_REC)
                _remount_readonly(place)

    def _place_mount(self, p: str) -> None:
        fstype, readonly = self.mounts[p]
        try:
            st = os.stat(p)
        except OSError:
            return
        if readonly:
            target = self._make(p, st)
            _mount(p, target, None, MS_BIND | MS_REC)
            _remount_readonly(target)  # read-only already; said again so that the lock holds it
        elif not stat.S_ISDIR(st.st_mode):
            self._bind(p, st, readonly=True, why="a file mounted on its own")
        elif self._below(p):
            self._tree(p, st)
        else:
            self._overlay(p, st)

    def _bind(self, p: str, st, readonly: bool, why: str) -> None:
        target = self._make(p, st)
        _mount(p, target, None, MS_BIND | MS_REC)
        if readonly:
            _remount_readonly(target)  # never left writable: the setup fails instead
            self.readonly.append([p, why])

    def _overlay(self, p: str, st, fallback: bool = True) -> bool:
        n = str(len(self.layers) + len(self.readonly))
        upper, work = os.path.join(self.base, "upper", n), os.path.join(self.base, "work", n)
        os.makedirs(upper, exist_ok=True)
        os.makedirs(work, exist_ok=True)
        created = not os.path.lexists(self.at(p))
        target = self._make(p, st)
        options = f"lowerdir={_escape_option(p)},upperdir={_escape_option(upper)},workdir={_escape_option(work)}"
        try:
            _mount("overlay", target, "overlay", 0, options)
        except OSError as exc:  # a file system overlayfs cannot stack on: the real one, read-only
            if not fallback:
                if created:
                    os.rmdir(target)
                    self.skeleton.remove(p)
                return False
            _mount(p, target, None, MS_BIND | MS_REC)
            _remount_readonly(target)
            self.readonly.append([p, f"overlayfs refused it ({exc.strerror})"])
            return True
        self.layers.append([p, upper])
        return True

    def _check_projects(self) -> None:
        """The script's own folder may not be read-only: a correct script's append would fail there.
        `/` or `/tmp` as the working directory (a container's WORKDIR) is let through: no mode could
        overlay the files beside verify's own folder, and they are listed as read-only."""
        for path, why in self.readonly:
            for project in self.projects:
                if self._holds_base(project):
                    continue
                if path == project or os.path.dirname(path) == project or project.startswith(path + os.sep):
                    points = self._topmost_below(project)
                    if points:
                        why = (f"it holds a mount point ({', '.join(points)}), and a user namespace cannot overlay "
                               f"the files beside one: {path} would be read-only")
                    raise OSError(0, f"{project} cannot be overlaid here: {why}")

    def pivot(self, cwd: str) -> None:
        number = _PIVOT_ROOT.get(platform.machine())
        os.chdir(self.root)
        if number is not None and _c().syscall(number, b".", b".") == 0:
            _check(_c().umount2(b".", MNT_DETACH), "umount the old root")
        else:
            os.chroot(".")
        os.chdir("/")
        try:
            os.chdir(cwd)
        except OSError:
            pass

    def describe(self) -> dict:
        return {"ok": True, "base": self.base, "root": self.root, "layers": self.layers,
                "skeleton": self.skeleton, "readonly": self.readonly, "binds": self.binds,
                "fresh_proc": self.proc_fresh, "devices": self.devices}


_OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")


def _whiteout(st) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(path: str) -> bool:
    for name in _OPAQUE:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except (OSError, AttributeError):
            continue
    return False


def written(status: dict) -> list:
    """What the command left in the overlays' upper folders (and the skeleton), one report entry per
    path: files with their size, links with their target, folders it made, FIFOs, and the real
    paths it removed.  Read in the parent, after the namespace is gone."""
    entries = []

    def walk(upper: str, real: str) -> None:
        with os.scandir(upper) as listing:
            found = sorted(listing, key=lambda entry: entry.name)
        for entry in found:
            path = os.path.join(real, entry.name)
            st = entry.stat(follow_symlinks=False)
            if _whiteout(st):
                if os.path.lexists(path):
                    entries.append({"action": "delete", "path": path})
            elif stat.S_ISDIR(st.st_mode):
                if not os.path.isdir(path) or os.path.islink(path):
                    entries.append({"action": "create directory", "path": path})
                elif _opaque(entry.path):
                    entries.append({"action": "replace directory", "path": path})
                walk(entry.path, path)
            elif stat.S_ISLNK(st.st_mode):
                entries.append({"action": "link", "path": path, "target": os.readlink(entry.path)})
            elif stat.S_ISFIFO(st.st_mode):
                entries.append({"action": "create FIFO", "path": path})
            else:
                entries.append({"action": "write", "path": path, "size": st.st_size})

    for real, upper in status.get("layers", ()):
        walk(upper, real)
    made = set(status.get("skeleton", ()))
    root = status["root"]
    for folder, dirs, files in os.walk(root):
        real_folder = folder[len(root):] or os.sep
        for name in sorted(dirs + files):
            real = os.path.join(real_folder, name)
            if real in made:
                continue
            full = os.path.join(folder, name)
            if os.path.isdir(full) and not os.path.islink(full):
                entries.append({"action": "create directory", "path": real})
            else:
                entries.append({"action": "write", "path": real, "size": os.lstat(full).st_size})
    return entries


def keep(status: dict, destination: str) -> None:
    """Copy what the command wrote to `destination`, each path under its absolute path (--keep-writes)."""
    import shutil

    destination = os.path.abspath(destination)
    os.makedirs(destination, exist_ok=True)

    def ignore(folder, names):
        return [n for n in names if _whiteout(os.lstat(os.path.join(folder, n)))
                or stat.S_ISFIFO(os.lstat(os.path.join(folder, n)).st_mode)]

    for real, upper in status.get("layers", ()):
        if os.listdir(upper):
            shutil.copytree(upper, destination + real, symlinks=True, dirs_exist_ok=True, ignore=ignore)
    for entry in written({"root": status["root"], "skeleton": status.get("skeleton", ())}):
        source = status["root"] + entry["path"]
        target = destination + entry["path"]
        if entry["action"] == "create directory":
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)


def _write_status(path: str, data: dict) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def _die_with_parent(signum: int) -> None:
    parent = os.getppid()
    _c().prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def _exit_like(status: int) -> None:
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
    if code < 0:  # killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def _map_ids(uid: int, gid: int) -> None:
    """This process's new user namespace maps its own ids (and nothing else) to the outer ones."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)


def lock_mounts(uid: int, gid: int) -> None:
    """Enter a user and mount namespace below the one that built the root: the kernel copies every
    mount into it locked (a read-only one stays read-only, none can be unmounted), as bubblewrap
    does.  The command keeps its user id and the capabilities of this new namespace only."""
    _check(_c().unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare the script's user namespace")
    _map_ids(uid, gid)


def _loopback_up() -> None:
    """The new network namespace's loopback, up: the script's own servers work, nothing else is there."""
    import fcntl
    import socket
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock.fileno(), siocgifflags, request + b"\0" * 22)[:18])[1]
        fcntl.ioctl(sock.fileno(), siocsifflags, struct.pack("16sH", b"lo", flags | iff_up) + b"\0" * 22)


def _init(layout: Layout, status: str, cwd: str, command: list, report: int, ids) -> None:
    """pid 1 of the new namespace: build the root, lock it, start the command, reap until it ends.
    The command's wait status goes to `report` (a pipe): pid 1 cannot end by its own signal."""
    told = open(status, "w", encoding="utf-8")  # opened here: after pivot_root its path is the new root's
    try:
        _die_with_parent(signal.SIGKILL)
        _check(_c().unshare(CLONE_NEWNS), "unshare the mount namespace")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        layout.build()
        layout.pivot(cwd)
        lock_mounts(*ids)
        json.dump(layout.describe(), told)
        told.close()
    except BaseException as exc:  # nothing of the user's ran: the caller falls back
        try:
            error = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            told.seek(0)
            told.truncate()
            json.dump({"ok": False, "error": error}, told)
            told.close()
        finally:
            os._exit(SETUP_FAILED)
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(command[0], command)
        finally:
            os._exit(127)
    while True:  # as an init: reap orphans; when the command ends, the namespace ends with us
        try:
            done, state = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if done == pid:
            os.write(report, str(state).encode())
            os._exit(0)


def _remove_temporary(base: str) -> None:
    import shutil

    temporary = os.path.dirname(os.path.abspath(base))
    if os.path.basename(temporary).startswith("gradlint-verify-"):
        def writable(function, path, info):  # overlayfs leaves its work folder without permissions
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)

        if sys.version_info >= (3, 12):
            shutil.rmtree(temporary, onexc=lambda f, p, e: writable(f, p, None))
        else:
            shutil.rmtree(temporary, onerror=writable)


def _enter_namespaces(uid: int, gid: int, share_net: bool) -> None:
    """New pid, IPC, UTS and (unless shared) network namespaces for the children of this process.
    Root builds the root in them directly: the real mounts are not locked for it, so a folder with a
    mount point below can be overlaid whole.  Anyone else (or root where that is refused) first
    enters a user namespace of its own."""
    flags = CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (0 if share_net else CLONE_NEWNET)
    if os.geteuid() != 0 or _c().unshare(flags) != 0:
        _check(_c().unshare(CLONE_NEWUSER | flags), "unshare the user, pid and network namespaces")
        _map_ids(uid, gid)
    if not share_net:
        _loopback_up()


def main(argv=None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    cut = argv.index("--")
    options, command = argv[:cut], argv[cut + 1:]
    base = status = None
    binds, projects, share_net = [], [], False
    for flag, value in zip(options[::2], options[1::2]):
        if flag == "--base":
            base = value
        elif flag == "--status":
            status = value
        elif flag == "--bind":
            binds.append(value)
        elif flag == "--project":
            projects.append(value)
        elif flag == "--network":
            share_net = value == "host"
    uid, gid, cwd = os.getuid(), os.getgid(), os.getcwd()
    try:
        if not sys.platform.startswith("linux"):
            raise OSError(0, "namespaces are Linux's")
        layout = Layout(base, binds, projects)
        _enter_namespaces(uid, gid, share_net)
    except OSError as exc:
        _write_status(status, {"ok": False, "error": exc.strerror or str(exc)})
        os._exit(SETUP_FAILED)
    # Our parent's death (verify killed, even by SIGKILL) ends the namespace and removes verify's
    # temporary folder; a SIGTERM or SIGINT ends the namespace.
    parent = os.getppid()
    _die_with_parent(signal.SIGTERM)
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reading)
        _init(layout, status, cwd, command, writing, (uid, gid))
    os.close(writing)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda s, f: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            _, state = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    told = os.read(reading, 64)
    if os.getppid() != parent:
        _remove_temporary(base)
    _exit_like(int(told) if told.strip().isdigit() else state)


if __name__ == "__main__":
    main()
