"""Holding other writers off a file while gradlint writes it: a lease (Linux, fcntl(2) F_SETLEASE).

Comparing bytes before and after a write cannot prove that no one else writes
the file: a program that opened it earlier may write at any later moment, and
after a rename its bytes go to the replaced file.  The kernel can prove it:

- a *read* lease is granted only when no process has the file open for
  writing, and while it is held every open of the file for writing (and every
  truncate) waits in the kernel and marks the lease as being broken, which
  `intact` sees.  A file replaced by a rename under a read lease that is still
  intact afterwards was written by no one from the grant to the rename;
- a *write* lease is granted only when no other process has the file open at
  all, and while it is held every open waits: a file written in place under it
  is written by no one else meanwhile, and a writer that opened it meanwhile
  writes after the new text once the lease is released.

The holder of a lease that is broken gets a signal (SIGIO by default, which
would end the process): the lease is asked to signal SIGURG instead, which a
process ignores unless it asked for it.  Where there are no leases (macOS,
Windows, NFS and other file systems without them, a file of another owner
without CAP_LEASE, leases switched off), `take` answers None and the caller
does without the proof.
"""

from __future__ import annotations

import errno
import os
import sys
import time
from typing import Optional

# How long a writer that has the file open is waited for before the write is refused: a logger's
# or an editor's open-write-close takes milliseconds.
BUSY_WAIT = 0.5
# How long a writer that opened the file during a write (and waited for it) is waited for to close.
CLOSE_WAIT = 10.0
_STEP = 0.01

AVAILABLE = sys.platform.startswith("linux")


def take(fd: int, write: bool, wait: float = BUSY_WAIT) -> Optional[bool]:
    """Take a read lease (`write` False; `fd` must not be open for writing) or a write lease
    (`write` True) on the file open as `fd`.  True: held.  False: another process has the file
    open for writing (for a write lease: open at all) and did not close it within `wait`
    seconds.  None: no lease can be had here (see the module docstring)."""
    if not AVAILABLE:
        return None
    import fcntl
    import signal

    try:
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
    except OSError:
        return None
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK if write else fcntl.F_RDLCK)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                return None  # EINVAL (no leases on this file system), EACCES (not the owner), ENOLCK
        if time.monotonic() >= deadline:
            return False
        time.sleep(_STEP)


def intact(fd: int, write: bool) -> bool:
    """The lease taken on `fd` is unbroken: no process has opened the file (for writing, for a
    read lease) since it was granted.  A broken lease answers the type it is broken to."""
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_GETLEASE) == (fcntl.F_WRLCK if write else fcntl.F_RDLCK)


def release(fd: int) -> None:
    """Let the writers that wait on the file go on."""
    import fcntl

    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    except OSError:
        pass


def writers_closed(fd: int, wait: Optional[float] = None) -> bool:
    """After `release`: True once no process has the file (open as read-only `fd`) open for
    writing, False when one still has after `wait` seconds (None: CLOSE_WAIT).  A read lease is granted exactly
    when none has; it is given back at once."""
    import fcntl

    deadline = time.monotonic() + (CLOSE_WAIT if wait is None else wait)
    while True:
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
            release(fd)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK):
                return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(_STEP)


def reopen_read_only(fd: int) -> Optional[int]:
    """A read-only descriptor of the file open as `fd` (the same file, whatever its name names
    now), for a read lease, which no descriptor open for writing may hold; None when it cannot be had."""
    try:
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK)
    except OSError:
        return None
