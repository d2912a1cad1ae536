"""Write a file so that a reader never sees half of it: a new file beside it, then one rename.
Shared by reports (--output-file), the cache and the writer of the user's files (rewrite.py).

A process killed with `kill -9` runs no cleanup, so a temporary file that has a
name while it is written stays behind.  On Linux the new content is written
into an unnamed file (O_TMPFILE) that the kernel frees if the process dies; it
gets a name only right before the rename that puts it in place, so a kill can
leave a stray file only between those two system calls.  Elsewhere (or on a
file system without O_TMPFILE) it is a named `.NAME.XXXXXXXX.tmp` from the
start, as before.
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
    """A new file in `directory` that will take the place of its entry `name` by one rename.

    Creating it raises OSError (PermissionError when the directory is not writable)."""

    def __init__(self, directory: str, name: str):
        self.directory = directory
        self.name = name
        self.temp: Optional[str] = None  # its name in `directory`, None while it has none
        self.dir_fd: Optional[int] = None
        self.fd = -1
        if _UNNAMED:
            import errno

            self.dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
            try:
                self.fd = os.open(".", os.O_TMPFILE | os.O_WRONLY | _OPEN, 0o600, dir_fd=self.dir_fd)
                return
            except OSError as exc:
                # A file system without O_TMPFILE answers EOPNOTSUPP (or EISDIR, EINVAL on old
                # kernels); anything else (EACCES: an unwritable directory) is the answer.
                if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                    self._close_dir()
                    raise
        import tempfile  # here, not at import: a run that writes nothing does not pay for it

        try:
            self.fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
        except BaseException:
            self._close_dir()
            raise
        self.temp = os.path.basename(temp)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def commit(self, name: str) -> None:
        """Name the file if it has no name yet, then rename it over `name` (in its directory):
        on Linux the name exists for those two system calls only."""
        if self.temp is None:
            import secrets

            while True:
                temp = f".{self.name}.{secrets.token_hex(4)}.tmp"
                try:
                    os.link(f"/proc/self/fd/{self.fd}", temp, dst_dir_fd=self.dir_fd, follow_symlinks=True)
                    break
                except FileExistsError:
                    continue
            self.temp = temp
            os.rename(temp, name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
            self.temp = None
        else:
            os.close(self.fd)  # before the rename: Windows renames no file that is open
            self.fd = -1
            os.replace(os.path.join(self.directory, self.temp), os.path.join(self.directory, name))
            self.temp = None
        self.discard()  # closes what is still open; nothing is left to remove

    def discard(self) -> None:
        """Leave nothing behind (after a failure, or when the file is written another way)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.temp is not None:
            try:
                if self.dir_fd is not None:
                    os.unlink(self.temp, dir_fd=self.dir_fd)
                else:
                    os.unlink(os.path.join(self.directory, self.temp))
            except OSError:
                pass
            self.temp = None
        self._close_dir()

    def _close_dir(self) -> None:
        if self.dir_fd is not None:
            os.close(self.dir_fd)
            self.dir_fd = None
