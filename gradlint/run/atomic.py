"""Write a file so that a reader never sees half of it: a new file, then one rename over it.
Shared by reports (--output-file), the cache and the writer of the user's files (rewrite.py).

A process killed with `kill -9` runs no cleanup, so a temporary file that has a
name while it is written stays behind.  On Linux the new content is written
into an unnamed file (O_TMPFILE) that the kernel frees if the process dies; it
gets a name only right before the rename that puts it in place, so a kill can
leave a stray file only between those two system calls.  Elsewhere (or on a
file system without O_TMPFILE) it is a named `.gradlint-XXXXXXXXXXXX.tmp` from
the start.  That name has a fixed length of 26 bytes, so it is legal beside any file whose
own name is (a name of 255 bytes, the usual limit, left no room for a name built from it).  With a staging directory (Staged), both happen there instead of
beside the file, and nothing is ever left in the user's tree.
"""

from __future__ import annotations

import os
import sys
from typing import Optional, Union


class ChangedOnDisk(Exception):
    """The file no longer holds the bytes its new content was computed from."""


def write_atomically(
    path: str,
    text: Union[str, bytes],
    mode: Optional[int] = None,
    fsync: bool = False,
) -> None:
    """Replace `path` with `text` (str: written as UTF-8; bytes: as given).

    `mode` None: what a newly created file would get.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    directory, name = os.path.split(os.path.abspath(path))
    staged = Staged(directory, name)
    try:
        staged.write(data)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # a new file's mode; the staged file was made 0600
        if hasattr(os, "fchmod"):
            os.fchmod(staged.fd, mode)
        else:  # Windows before 3.13: the staged file is a named one there
            os.chmod(os.path.join(directory, staged.temp or name), mode)
        if fsync:
            os.fsync(staged.fd)
        staged.commit(name)
    except BaseException:
        staged.discard()
        raise


_OPEN = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
# O_TMPFILE's file is named through /proc (linkat of /proc/self/fd/N, as open(2) describes it).
_UNNAMED = sys.platform.startswith("linux") and hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


class Staged:
    """A new file that will take the place of the entry `name` of `directory` by one rename.

    It is made in `staging` (a directory of gradlint's own, the cache's, gradlint/run/cache.py)
    when that is on the same file system, else in `directory` itself: then the moment in
    which it has a name (above) is the only one in which a `kill -9` can leave a file in
    the user's tree, and with a staging directory there is none.  Creating it raises
    OSError (PermissionError when `directory` is not writable)."""

    def __init__(self, directory: str, name: str, staging: Optional[str] = None):
        self.directory = directory
        self.name = name
        self.temp: Optional[str] = None  # its name in `self.home`, None while it has none
        self.dir_fd: Optional[int] = None  # `directory`, open (Linux)
        self.home_fd: Optional[int] = None  # where it is made and named, open (Linux)
        self.fd = -1
        if staging is not None and _same_device(staging, directory):
            try:
                self._make(staging)
                return
            except OSError:
                self._close_dirs()  # gradlint's own directory failed: beside the file then
        self._make(directory)

    def _make(self, home: str) -> None:
        self.home = home
        if _UNNAMED:
            import errno

            self.dir_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
            self.home_fd = self.dir_fd if home == self.directory else os.open(home, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
            try:
                self.fd = os.open(".", os.O_TMPFILE | os.O_RDWR | _OPEN, 0o600, dir_fd=self.home_fd)
                return
            except OSError as exc:
                # A file system without O_TMPFILE answers EOPNOTSUPP (or EISDIR, EINVAL on old
                # kernels); anything else (EACCES: an unwritable directory) is the answer.
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    self._close_dirs()
                    raise
        # A named file.  Its name is recorded before it exists: an exception raised at any moment
        # (SIGTERM and Ctrl-C raise where the run is) leaves discard() a name to remove.
        try:
            while True:
                self.temp = self._new_name()
                try:
                    self.fd = os.open(
                        os.path.join(home, self.temp), os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN, 0o600
                    )
                    return
                except FileExistsError:
                    self.temp = None
        except BaseException:
            self.discard()
            raise

    def _new_name(self) -> str:
        import secrets

        return f"{self._prefix()}{secrets.token_hex(6)}.tmp"

    def _prefix(self) -> str:
        """Beside the file a fixed `.gradlint-` (never longer than the longest legal name);
        in a staging directory the process id, which sweep() reads."""
        return TEMP_PREFIX if self.home == self.directory else f"{STAGED_PREFIX}{os.getpid()}-"

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def commit(self, name: str) -> None:
        """Name the file if it has no name yet, then rename it over `name` (in `directory`):
        on Linux the name exists for those two system calls only."""
        if self.temp is None:
            while True:
                self.temp = self._new_name()  # recorded first: see _make
                try:
                    os.link(f"/proc/self/fd/{self.fd}", self.temp, dst_dir_fd=self.home_fd, follow_symlinks=True)
                    break
                except FileExistsError:
                    self.temp = None
            os.rename(self.temp, name, src_dir_fd=self.home_fd, dst_dir_fd=self.dir_fd)
            self.temp = None
        else:
            os.close(self.fd)  # before the rename: Windows renames no file that is open
            self.fd = -1
            os.replace(os.path.join(self.home, self.temp), os.path.join(self.directory, name))
            self.temp = None
        self.discard()  # closes what is still open; nothing is left to remove

    def discard(self) -> None:
        """Leave nothing behind (after a failure, or when the file is written another way)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.temp is not None:
            try:
                if self.home_fd is not None:
                    os.unlink(self.temp, dir_fd=self.home_fd)
                else:
                    os.unlink(os.path.join(self.home, self.temp))
            except OSError:
                pass
            self.temp = None
        self._close_dirs()

    def _close_dirs(self) -> None:
        for fd in {self.home_fd, self.dir_fd} - {None}:
            os.close(fd)
        self.home_fd = self.dir_fd = None


STAGED_PREFIX = "gradlint-staged-"
TEMP_PREFIX = ".gradlint-"  # beside the user's file


def _same_device(one: str, other: str) -> bool:
    """A rename moves a file between two directories only within one file system."""
    try:
        return os.stat(one).st_dev == os.stat(other).st_dev
    except OSError:
        return False


def sweep(staging: str) -> None:
    """Remove what a killed run left in a staging directory: files of processes that are gone
    (POSIX; elsewhere, files older than a day).  A file of a live run is left to it."""
    import time

    try:
        names = os.listdir(staging)
    except OSError:
        return
    for name in names:
        if not (name.startswith(STAGED_PREFIX) and name.endswith(".tmp")):
            continue
        path = os.path.join(staging, name)
        try:
            if os.name == "posix":
                pid = int(name[len(STAGED_PREFIX):].split("-", 1)[0])
                if pid == os.getpid() or _alive(pid):
                    continue
            elif time.time() - os.stat(path).st_mtime < 24 * 3600:
                continue
            os.unlink(path)
        except (OSError, ValueError):
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # POSIX only: on Windows this would end the process
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive
    return True
