"""Writing the user's own files: `--fix`, `--add-noqa` and notebooks write through here only.

- **Through symbolic links**: the file a link names (followed to its end) gets
  the new text; the link stays a link.
- **Only over the bytes that were analysed**: an edit is computed from the bytes
  the check read (`FileResult.source_digest`); the file is read again before the
  edit and once more, through the descriptor that is written, right before the
  write, and nothing is written when it holds anything else (ChangedOnDisk).
- **No racing writer's bytes lost**: where there are leases (lease.py, Linux),
  the kernel proves that no other program writes the file from before the last
  look until the new text is in place; a file another program has open for
  writing is refused (OpenElsewhere), and one that opens it meanwhile waits, is
  let go after the rename, waited for until it closes, and its bytes are put
  back (_put_back).  Elsewhere the old file stays open across the rename and is
  read once more after it: bytes appended in between (an editor, a logger) are
  put back with the user's text and the file is refused, as ChangedOnDisk.
- **Permissions as the system has them**: the file is opened for writing first,
  so a file the user cannot write (a read-only 0444 file, a read-only file
  system, an immutable file) is refused with the system's words (`Permission
  denied`), as ruff refuses it, and never replaced by a rename.  As for ruff, a
  mode does not stop root.
- **The file's identity**: the new text goes into a new file that is
  given the file's owner, mode and extended attributes (ACLs, security labels;
  where Python can read them: Linux),
  then takes its place by one rename, so no reader and no crash sees half of it.
  That new file is made in gradlint's own staging directory (in the cache, when
  it is on the same file system; atomic.py), so a `kill -9` at any moment
  leaves no temporary file in the user's tree; beside the file otherwise, where
  on Linux it has a name only for the two system calls that put it in place.  When that new file
  cannot be made identical (the file has several hard links, which a rename
  would split; an owner the user cannot give a new file; an attribute it cannot
  copy) or cannot be made at all (a directory the user cannot write in, while
  the file itself is writable), the file is written in place instead: the same
  inode, so its links, owner and attributes stay, at the price of one moment (a
  write and a truncate) in which a crash could leave it half written.

One failed write is one `write-error` for that file (its findings stay
reported, it counts as checked); the run goes on.
"""

from __future__ import annotations

import os
import stat
from typing import Optional

from gradlint.run.atomic import ChangedOnDisk, Staged
from gradlint.core.findings import WRITE_ERROR, FileError, FileResult

CHANGED = "changed on disk since it was checked: not written (run again)"
OPEN_ELSEWHERE = "open for writing in another program: not written (run again)"
OPEN = "open in another program: not written (run again)"
# O_NONBLOCK: a FIFO put where the file was cannot make the open wait.
_OPEN = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)


def read_analysed(result: FileResult) -> tuple[Optional[bytes], Optional[FileResult]]:
    """The file's bytes when they are those `result` was computed from, else (None, the result
    with the reason): an edit computed from other bytes would land on the wrong lines."""
    from gradlint.core.digest import hex_digest
    from gradlint.check.engine import read_source

    data, error = read_source(result.path)
    if error is not None:
        return None, unwritten(result, f"not written: {error.message}")
    if result.source_digest is not None and hex_digest(data) != result.source_digest:
        return None, unwritten(result, CHANGED)
    return data, None


def write_edit(
    result: FileResult, data: bytes, expected: bytes, what: str, staging: Optional[str] = None
) -> Optional[FileResult]:
    """Write `data` over the file of `result`, which must still hold `expected`; None when written,
    else `result` with the reason (`what` names the new content: "the fixed file").  `staging`:
    gradlint's own directory to make the new file in (cache.staging_dir), None: beside the file."""
    try:
        rewrite_file(result.path, data, expected, staging)
    except OpenElsewhere as exc:
        return unwritten(result, exc.message)
    except ChangedOnDisk:
        return unwritten(result, CHANGED)
    except OSError as exc:
        return unwritten(result, f"cannot write {what}: {exc.strerror or exc}")
    return None


def unwritten(result: FileResult, message: str) -> FileResult:
    """`result` as checked, plus one error saying why the edit was not written."""
    error = FileError(result.path, WRITE_ERROR, message, whole_file=False)
    return FileResult(result.path, result.findings, [*result.errors, error], result.suppressed, result.source_digest)


class OpenElsewhere(ChangedOnDisk):
    """Another program has the file open for writing: it may write at any moment, after a rename
    into the replaced file, so the file is not written.  (A file written in place is refused
    when another program has it open at all: `message`.)"""

    def __init__(self, path: str, message: str = OPEN_ELSEWHERE):
        super().__init__(path)
        self.message = message


def rewrite_file(path: str, data: bytes, expected: bytes, staging: Optional[str] = None) -> None:
    """Put `data` in the file `path` names (see the module docstring); raises ChangedOnDisk
    when the file does not hold `expected` (OpenElsewhere when another program has it open
    for writing), OSError when it cannot be written."""
    target = os.path.realpath(path)
    fd = os.open(target, os.O_RDWR | _OPEN)  # the system's answer to "may this user write it?"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file: {path}")
        if _contents(fd) != expected:
            raise ChangedOnDisk(path)
        staged = _staged_copy(fd, info, target, staging) if info.st_nlink == 1 else None
        if staged is None:
            _write_in_place_held(fd, data, expected, path)
    except BaseException:
        os.close(fd)
        raise
    if staged is None:
        os.close(fd)
    else:
        _replace(fd, info, target, staged, data, expected, path, staging)  # closes fd


def _replace(
    fd: int, info: os.stat_result, target: str, staged: Staged, data: bytes, expected: bytes, path: str,
    staging: Optional[str],
) -> None:
    """Rename the new file `staged` (holding nothing yet) over `target`, the file open as `fd`
    (closed here, whatever happens).

    Where leases exist the old file is read through a read-only descriptor holding a read
    lease from before the last look until after the rename (lease.py): intact, it proves no
    program had the file open for writing or opened it meanwhile, so every byte it holds is one
    the last look saw.  Broken, a writer opened it (and waits in the kernel until the lease is
    released): it is let go, waited for until it closes the file, and its bytes are put back."""
    from gradlint.edit import lease

    held: Optional[bool] = None
    mine = -1
    try:
        try:
            reader = lease.reopen_read_only(fd) if lease.AVAILABLE else None
            if reader is not None:
                os.close(fd)  # a read lease is refused while any descriptor has the file open for writing
                fd = reader
                held = lease.take(fd, write=False)
                if held is False:
                    raise OpenElsewhere(path)
            staged.write(data)
            if not _still(target, info, fd, expected):  # the last look, right before the rename
                raise ChangedOnDisk(path)
            if os.name == "nt":  # Windows renames no file that is open, and keeps no unlinked one
                os.close(fd)
                fd = -1
            else:
                mine = os.dup(staged.fd)  # the new file, still ours to read after the rename
            staged.commit(os.path.basename(target))
        except BaseException:
            staged.discard()
            raise
        if held:
            if lease.intact(fd, write=False):
                return  # no one wrote the old file after the last look: nothing to put back
            lease.release(fd)  # the writer that opened the old file goes on, into the old file
            held = False
            if not lease.writers_closed(fd):
                # It keeps the file open: whatever it writes later goes to the old file, so the
                # user's file must be the old one's bytes, not the fix.
                _put_back(_contents(fd), mine, data, target, staging)
                raise OpenElsewhere(path)
        if fd >= 0 and _contents(fd) != expected:
            # Bytes written to the old file between the last look and the rename (an
            # editor's append): they are not lost with it, they are put back.
            _put_back(_contents(fd), mine, data, target, staging)
            raise ChangedOnDisk(path)
    finally:
        if held:
            lease.release(fd)
        for still_open in (mine, fd):
            if still_open >= 0:
                os.close(still_open)


PUT_BACK_ROUNDS = 32


def _put_back(owed: bytes, mine: int, put: bytes, target: str, staging: Optional[str]) -> None:
    """The file at `target` is ours (open as `mine`, we wrote `put` in it) but the user's text is
    `owed`: put `owed` there, followed by whatever was appended to our file since it took the
    file's place (a writer that opens the file by its name after the rename writes there).
    Where a write lease on our file can be had, in one write in place (_put_back_in_place);
    else in rounds: each round is one more new file and rename; bytes appended to the file being replaced
    between a round's last look and its rename are carried into the next round.  A file
    replaced or rewritten by someone else meanwhile is theirs, newer than both: left as it is."""
    if _put_back_in_place(owed, mine, put, target):
        return
    opened: list[int] = []  # the new files of the rounds (not `mine` as given: the caller's)
    try:
        for rounds in range(1, PUT_BACK_ROUNDS + 2):
            info = os.fstat(mine)
            current = _contents(mine)
            try:
                now = os.lstat(target)
            except OSError:
                return  # removed meanwhile: not ours to bring back
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or not current.startswith(put):
                return
            wanted = owed + current[len(put):]
            staged = _staged_copy(mine, info, target, staging)
            if staged is None or rounds > PUT_BACK_ROUNDS:
                # No new file can be made here (or a writer that never pauses): ours is rewritten
                # in place, where a later append lands after the user's bytes.
                if staged is not None:
                    staged.discard()
                _overwrite(mine, wanted + _contents(mine)[len(current):])
                return
            try:
                staged.write(wanted)
                if _contents(mine) != current:
                    staged.discard()
                    continue  # appended to while the copy was made: the round again
                opened.append(os.dup(staged.fd))
                staged.commit(os.path.basename(target))
            except BaseException:
                staged.discard()
                raise
            late = _contents(mine)
            if late == current:
                return
            # Written to the file just replaced, after the round's last look: owed next round.
            owed = wanted + late[len(current):] if late.startswith(current) else late
            mine, put = opened[-1], wanted
    finally:
        for fd in opened:
            os.close(fd)


def _put_back_in_place(owed: bytes, mine: int, put: bytes, target: str) -> bool:
    """_put_back in one write in place under a write lease on our file (lease.py): no other program
    has it open and one that opens it meanwhile waits, then writes after the user's bytes.
    False when no such lease can be had (then the rounds of renames)."""
    from gradlint.edit import lease

    if lease.take(mine, write=True) is not True:
        return False
    try:
        info = os.fstat(mine)
        try:
            now = os.lstat(target)
        except OSError:
            return True  # removed meanwhile: not ours to bring back
        current = _contents(mine)
        if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino) and current.startswith(put):
            _write_in_place(mine, owed + current[len(put):], current)
        return True  # else replaced or rewritten by someone else meanwhile: theirs, left as it is
    finally:
        lease.release(mine)


def _write_in_place_held(fd: int, data: bytes, expected: bytes, path: str) -> None:
    """_write_in_place under a write lease where there is one (lease.py): refused when another
    program has the file open; a program that opens it meanwhile waits and then writes after
    the new text, so no byte of it is overwritten or truncated away."""
    from gradlint.edit import lease

    held = lease.take(fd, write=True)
    if held is False:
        raise OpenElsewhere(path, OPEN)
    try:
        if held and _contents(fd) != expected:  # the last look, under the lease
            raise ChangedOnDisk(path)
        _write_in_place(fd, data, expected)
    finally:
        if held:
            lease.release(fd)


def _still(target: str, info: os.stat_result, fd: int, expected: bytes) -> bool:
    """The path still names the file open as `fd` (an editor that saves by renaming a new file
    over it has not) and that file still holds `expected`."""
    try:
        now = os.lstat(target)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino) and _contents(fd) == expected


def _contents(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _write_in_place(fd: int, data: bytes, old: bytes) -> None:
    try:
        _overwrite(fd, data)
    except OSError:
        # A full disk stops a file that grows part way: put the old bytes back (the blocks they
        # held are still the file's), so a failed write leaves the file as it was.
        try:
            _overwrite(fd, old)
        except OSError:
            pass
        raise
    except BaseException:
        _overwrite(fd, data)  # SIGTERM or Ctrl-C in the middle: the file is finished, then the run stops
        raise


def _overwrite(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.ftruncate(fd, len(data))


def _staged_copy(fd: int, info: os.stat_result, target: str, staging: Optional[str]) -> Optional[Staged]:
    """An empty new file to take the place of `target` (atomic.Staged), with its owner, mode and extended attributes, or None
    when such a file cannot be made (then the file is written in place)."""
    import errno

    directory, name = os.path.split(target)
    try:
        staged = Staged(directory, name, staging)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return None  # no new entry can be made here; the file itself can be written
        raise
    try:
        if _same_identity(fd, info, staged.fd):
            return staged
    except OSError:
        pass
    except BaseException:
        staged.discard()
        raise
    staged.discard()
    return None


def _same_identity(fd: int, info: os.stat_result, new: int) -> bool:
    """Give the new file (descriptor `new`) the owner, mode and extended attributes of the file
    open as `fd`; False when one of them cannot be given."""
    if not hasattr(os, "fchown"):  # Windows: a mode is all a file has here
        return True
    mine = os.fstat(new)
    if (mine.st_uid, mine.st_gid) != (info.st_uid, info.st_gid):
        os.fchown(new, info.st_uid, info.st_gid)  # PermissionError unless root, or a group of ours
    mode = stat.S_IMODE(info.st_mode)
    os.fchmod(new, mode)  # after fchown, which clears set-user-ID bits
    if hasattr(os, "listxattr"):
        names = _xattr_names(fd)
        for name in names:
            os.setxattr(new, name, os.getxattr(fd, name))
        for name in set(_xattr_names(new)) - set(names):  # inherited: a default ACL, a label
            os.removexattr(new, name)
    now = os.fstat(new)
    if stat.S_IMODE(now.st_mode) != mode:  # an ACL written above sets the mode bits too
        os.fchmod(new, mode)
        now = os.fstat(new)
    return (now.st_uid, now.st_gid, stat.S_IMODE(now.st_mode)) == (info.st_uid, info.st_gid, mode)


def _xattr_names(fd: int) -> list[str]:
    import errno

    try:
        return os.listxattr(fd)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return []  # a file system without extended attributes: nothing to keep
        raise
