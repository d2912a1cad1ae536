"""Which files a run checks: walk the given paths, skip what no one wants linted.

Walking a directory picks .py, .pyi and .ipynb files; a file named on the
command line is checked when it is one of those or a python `#!` script,
and is an error for that path otherwise (`gradlint data.csv`).

Directory symlinks are followed, but a link back into a directory already
on the way down is reported as a loop instead of being walked forever.

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
    seen: set = set()
    reported: set = set()

    def add(path: str) -> None:
        key = file_identity(path)
        if key not in seen:
            seen.add(key)
            found.files.append(path)

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
            _walk(path, excluded, add, error)
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


def _walk(top: str, excluded, add, error) -> None:
    # (directory, real paths of it and its ancestors) so that only a link back up is a loop
    stack = [(top, frozenset({os.path.realpath(top)}))]
    while stack:
        directory, ancestors = stack.pop()
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
                real = os.path.realpath(path)
                if real in ancestors:
                    error(FileError(path, READ_ERROR, f"symbolic link loop: points back to {real}"))
                    continue
                subdirs.append((path, ancestors | {real}))
            elif entry.name.endswith(SOURCE_SUFFIXES):
                if is_link and not os.path.exists(path):
                    error(FileError(path, READ_ERROR, link_problem(path)))
                    continue
                try:
                    regular = entry.is_file()  # follows links; FIFOs, sockets, devices: skipped
                except OSError:
                    regular = False
                if regular:
                    add(path)
        stack.extend(reversed(subdirs))
