"""Which files a run checks: walk the given paths, skip what no one wants linted.

Walking a directory picks .py, .pyi and .ipynb files; a file named on the
command line is checked when it is one of those or a python `#!` script,
and is an error for that path otherwise (`gradlint data.csv`).

What a walk follows (a path named on the command line is always taken as
named, link or not, and its real location is the tree walked):

- a symbolic link to a directory, found while walking, only when the
  directory it leads to lies inside the tree (`lib -> src`); one that leads
  out of it (`ext -> ../elsewhere`, a link to a home directory, to `/`) is
  not followed, as ruff follows none;
- no directory twice in one run, however many links or named paths lead to
  it (a link back to a directory on the way down is reported as a loop);
- no directory on a virtual file system (`/proc`, `/sys`, `/dev`, cgroups...),
  mounted inside the tree or not;
- a symbolic link to a file, found while walking, is checked wherever its
  file is (ruff checks it too), but when that file lies outside the tree it
  is listed in `Discovery.outside`: --fix and --add-noqa do not write it
  unless it is also named on the command line.

A file is one file however many paths reach it (a link to a file, a linked
directory such as `lib -> src`, the same file named relative and absolute):
it is identified by its device and inode (its resolved path where the
platform gives no inode) and listed once, under the first path met, in the
order of the command line and then of the walk (a directory's files by name,
then its subdirectories by name, depth first).  So it is checked, reported
and written (`--fix`, `--add-noqa`) once per run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from gradlint.core.findings import NOT_PYTHON, READ_ERROR, FileError

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "__pycache__", "build", "dist", "node_modules",
        ".venv", "venv", ".tox", ".nox", ".eggs", ".mypy_cache", ".pytest_cache",
        ".ruff_cache", ".gradlint_cache", "site-packages", "__pypackages__", ".ipynb_checkpoints",
    }
)
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks too, as ruff does
NOT_PYTHON_MESSAGE = "not a Python file (gradlint checks .py, .pyi, .ipynb and scripts whose #! line names python)"


def is_python_file(path: str) -> bool:
    """Whether a file named on the command line is one to check: a Python source or stub, a
    notebook, or a script whose first line is a `#!` naming python (`train`, `run.sh`), as ruff
    checks those.  A FIFO or a device is not opened here (reading it could block): it goes on to
    be read, and refused, as a file that is not regular."""
    if path.lower().endswith(SOURCE_SUFFIXES):
        return True
    if not os.path.isfile(path):
        return True  # read_source says what it is
    try:
        with open(path, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return True  # read_source says why it cannot be read
    return first.startswith(b"#!") and b"python" in first


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    outside: set[str] = field(default_factory=set)  # files of `files` reached by a walked link out of the tree


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def discover(
    paths: Iterable[str],
    excluded: Optional[Callable[[str], bool]] = None,
    force_exclude: bool = False,
) -> Discovery:
    """Files to check, in a stable order.  `excluded(path)` applies to walked entries,
    and to explicitly named files only with `force_exclude` (ruff's rule)."""
    found = Discovery()
    seen: dict = {}  # file identity -> the path it is listed under
    outside: set = set()  # identities of files reached only by a walked link out of its tree
    visited: set = set()  # identities of the directories walked
    reported: set = set()

    def add(path: str, out_of_tree: bool = False) -> None:
        key = file_identity(path)
        if key not in seen:
            seen[key] = path
            found.files.append(path)
            if out_of_tree:
                outside.add(key)
        elif not out_of_tree:
            outside.discard(key)  # also named, or also inside a tree: the user's to write

    def error(problem: FileError) -> None:
        """A path met twice (through a linked directory) is one error, under the first path."""
        key = (_entry_identity(problem.path), problem.message)
        if key not in reported:
            reported.add(key)
            found.errors.append(problem)

    for path in paths:
        if os.path.isdir(path):
            if force_exclude and excluded is not None and excluded(path):
                continue
            _walk(path, excluded, add, error, visited)
        elif os.path.lexists(path):
            if force_exclude and excluded is not None and excluded(path):
                continue
            if os.path.islink(path) and not os.path.exists(path):
                error(FileError(path, READ_ERROR, link_problem(path)))
            elif not is_python_file(path):
                error(FileError(path, NOT_PYTHON, NOT_PYTHON_MESSAGE))
            else:
                add(path)
        else:
            error(FileError(path, READ_ERROR, "no such file or directory"))
    found.outside = {seen[key] for key in outside}
    return found


def file_identity(path: str) -> tuple:
    """What makes two paths one file: its device and inode (links followed), else its real path."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        info = None
    if info is not None and info.st_ino:
        return (info.st_dev, info.st_ino)
    return ("path", os.path.normcase(os.path.realpath(path)))


def _entry_identity(path: str) -> tuple:
    """The directory entry itself (a broken link is reported once however it was reached)."""
    try:
        info = os.lstat(path)
    except (OSError, ValueError):
        info = None
    if info is not None and info.st_ino:
        return (info.st_dev, info.st_ino)
    return ("path", os.path.normcase(os.path.abspath(path)))


def link_problem(path: str) -> str:
    """Why a symbolic link leads to no file, the same words whether it was named or walked."""
    import errno

    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop (too many levels of symbolic links)"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return "broken symbolic link"
        return f"cannot stat: {exc.strerror or exc}"
    return "broken symbolic link"  # it was: it was replaced meanwhile


def _walk(top: str, excluded, add, error, visited: set) -> None:
    tree = os.path.realpath(top)
    top_key = _directory_identity(top)
    if top_key in visited:
        return  # named twice, or inside a folder named before: its files are listed already
    visited.add(top_key)
    # (directory, its device, real paths of it and its ancestors) so that only a link back up is a loop
    stack = [(top, top_key[0] if top_key else None, frozenset({tree}))]
    while stack:
        directory, device, ancestors = stack.pop()
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            error(FileError(directory, READ_ERROR, f"cannot read directory: {exc.strerror or exc}"))
            continue
        subdirs = []
        for entry in entries:
            path = os.path.join(directory, entry.name)
            is_link = False
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir()  # follows links
            except OSError as exc:  # a link loop says so, as when it is named
                message = link_problem(path) if is_link else f"cannot stat: {exc.strerror or exc}"
                error(FileError(path, READ_ERROR, message))
                continue
            if excluded is not None and excluded(path):
                continue
            if is_dir:
                if entry.name in SKIP_DIRS or entry.name.endswith(".egg-info") or _is_virtualenv(path):
                    continue
                real = os.path.realpath(path) if is_link else None
                if real is not None and real in ancestors:
                    error(FileError(path, READ_ERROR, f"symbolic link loop: points back to {real}"))
                    continue
                if real is not None and not _inside(real, tree):
                    continue  # a link out of the tree: not followed (name it to check it)
                key = _directory_identity(path)
                if key is None or key in visited:
                    continue  # met before by another path (a link, a bind mount): walked once
                if key[0] != device and _virtual(path):
                    continue  # /proc, /sys, /dev mounted here: no source, and endless
                visited.add(key)
                subdirs.append((path, key[0], ancestors | {real or os.path.realpath(path)}))
            elif entry.name.endswith(SOURCE_SUFFIXES):
                if is_link and not os.path.exists(path):
                    error(FileError(path, READ_ERROR, link_problem(path)))
                    continue
                try:
                    regular = entry.is_file()  # follows links; FIFOs, sockets, devices: skipped
                except OSError:
                    regular = False
                if regular:
                    add(path, out_of_tree=is_link and not _inside(os.path.realpath(path), tree))
        stack.extend(reversed(subdirs))


def _directory_identity(path: str) -> Optional[tuple]:
    """(device, inode) of the directory `path` leads to; None when it cannot be asked."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    if info.st_ino:
        return (info.st_dev, info.st_ino)
    return (info.st_dev, os.path.normcase(os.path.realpath(path)))  # no inodes here (some Windows file systems)


def _inside(real: str, tree: str) -> bool:
    """Whether the real path `real` is `tree` or lies under it."""
    real, tree = os.path.normcase(real), os.path.normcase(tree)
    return real == tree or real.startswith(tree.rstrip(os.sep) + os.sep)


# File systems that hold no source and may never end or block when walked (kernel state, devices).
VIRTUAL_FILE_SYSTEMS = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "devfs", "cgroup", "cgroup2", "debugfs", "tracefs",
        "securityfs", "pstore", "bpf", "configfs", "fusectl", "mqueue", "hugetlbfs", "autofs",
        "binfmt_misc", "efivarfs", "rpc_pipefs", "nsfs", "selinuxfs",
    }
)
VIRTUAL_PLACES = ("/proc", "/sys", "/dev")  # where systems without /proc/self/mountinfo mount them


def _virtual(path: str) -> bool:
    """Whether the directory `path`, the root of a mount (its device differs from its parent's),
    is a virtual file system: by where it is, or by its type in the mount table (Linux)."""
    real = os.path.realpath(path)
    if real in VIRTUAL_PLACES:
        return True  # whatever is mounted there (a container's /dev is a tmpfs of device nodes)
    kinds = _mount_types()
    return kinds is not None and kinds.get(real) in VIRTUAL_FILE_SYSTEMS


def _mount_types() -> Optional[dict]:
    """Mount point -> file system type, from /proc/self/mountinfo; None where there is none.
    Read once per call: only a directory whose device differs from its parent's asks."""
    try:
        with open("/proc/self/mountinfo", "rb") as handle:
            table = handle.read(1 << 24)
    except OSError:
        return None
    kinds = {}
    for line in table.decode("utf-8", "surrogateescape").splitlines():
        fields, sep, rest = line.partition(" - ")
        parts = fields.split(" ")
        if sep and len(parts) >= 5 and rest:
            kinds[_unescape(parts[4])] = rest.split(" ", 1)[0]
    return kinds


def _unescape(field: str) -> str:
    """mountinfo writes a space, a tab, a newline and a backslash in a path as `\\ooo`."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)
