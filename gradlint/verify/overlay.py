"""A copy-on-write view of the file system for the script being verified.

The script sees every folder as it is; what it writes lands under `root`, at
the file's absolute path (the root's `home/me/proj/ckpt.pt` stands for
`/home/me/proj/ckpt.pt`), and later reads of that path see the copy.  A folder
present on both sides is the union of the two.  Removing a real file or folder
records a whiteout (kept in memory, so a forked worker's removals stay its
own): the view hides that path and everything under it; a removed folder the
script makes again is opaque, it shows only what the script put in it.

The methods take what the os functions take (str, bytes or os.PathLike,
relative to the working directory) and call the real functions, captured here
before redirect.py replaces them, on real or overlay paths.  Paths in verify's
own folders, /dev, /proc and /sys are passed through untouched.

Symbolic links the script makes in the overlay point into the overlay (an
absolute target is stored as the overlay's copy of it), so nothing the kernel
follows under `root` leads out of it; protect.py relies on that.
"""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import threading

# The real functions, taken before redirect.install replaces them in os and builtins.
_open, _os_open = io.open, os.open
_stat, _lstat, _access = os.stat, os.lstat, os.access
_listdir, _scandir = os.listdir, os.scandir
_mkdir, _unlink, _rmdir, _rename = os.mkdir, os.unlink, os.rmdir, os.rename
_truncate, _chmod, _utime = os.truncate, os.chmod, os.utime
_chown = getattr(os, "chown", None)  # POSIX only
_symlink, _readlink = os.symlink, os.readlink
os_mkfifo, os_mknod = getattr(os, "mkfifo", None), getattr(os, "mknod", None)
_getcwd, _chdir = os.getcwd, os.chdir
_listxattr, _getxattr = getattr(os, "listxattr", None), getattr(os, "getxattr", None)  # Linux only
_setxattr, _removexattr = getattr(os, "setxattr", None), getattr(os, "removexattr", None)

_ALWAYS_REAL = ("/dev/", "/proc/", "/sys/")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)  # Linux: an unnamed file in a folder (tempfile.TemporaryFile)
_OPENERS = threading.local()  # open(path, opener=f) in progress: f opens through os.open, not io


def opener_active() -> bool:
    """An open() with an opener is running: its audit event names a path the opener may not open
    (tempfile passes the folder); the opener's own os.open goes through the overlay."""
    return getattr(_OPENERS, "depth", 0) > 0
_MAX_LINKS = 40  # as the kernel's ELOOP limit


def _error(code: int, path) -> OSError:
    return OSError(code, os.strerror(code), path)  # OSError picks the subclass (FileNotFoundError...)


def _lstat_or_none(path: str):
    try:
        return _lstat(path)
    except (OSError, ValueError):
        return None


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(_stat(path).st_mode)
    except (OSError, ValueError):
        return False


class Overlay:
    def __init__(self, root: str, own=(), on_remove=None):
        self.root = os.path.realpath(root)
        self.own = tuple(os.path.join(os.path.realpath(folder), "") for folder in own) + _ALWAYS_REAL
        self.on_remove = on_remove or (lambda path: None)  # told each real path the script removes
        self.removed: set[str] = set()
        self.removed_in: dict[str, set[str]] = {}  # folder -> names removed from it

    # --- paths ------------------------------------------------------------------------------

    def virtual(self, path):
        """The absolute path the script means, or None for one it may touch for real (verify's own)."""
        if isinstance(path, int):
            return None
        p = os.path.abspath(os.fsdecode(path))
        if p.startswith(self.root) and p[len(self.root):len(self.root) + 1] in ("", os.sep):
            p = p[len(self.root):] or os.sep  # an overlay path that leaked (a link's target): what it stands for
        if (p + os.sep).startswith(self.own):
            return None
        return p

    def _redirected(self, path, dir_fd):
        """virtual(path), or None for a path relative to a folder descriptor (left to the audit hook)."""
        return None if dir_fd is not None else self.virtual(path)

    def upper(self, p: str) -> str:
        return self.root if p == os.sep else self.root + p

    def hidden(self, p: str) -> bool:
        if not self.removed:
            return False
        while True:
            if p in self.removed:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                return False
            p = parent

    def find(self, p: str):
        """The path that holds p in the view (its overlay copy or the real one), or None when removed.
        A folder on both sides answers with the real one (its own metadata; listing merges them)."""
        up = self.upper(p)
        # access() answers "no such file" without raising: most paths the script reads were never written
        st = _lstat_or_none(up) if _access(up, os.F_OK, follow_symlinks=False) else None
        if st is None:
            return None if self.hidden(p) else p
        if stat.S_ISDIR(st.st_mode) and not self.hidden(p) and _is_dir(p):
            return p
        return up

    def follow(self, p: str):
        """(p with the symbolic links of its last part followed through the view, the path holding it)."""
        for _ in range(_MAX_LINKS):
            held = self.find(p)
            if held is None:
                return p, None
            st = _lstat_or_none(held)
            if st is None or not stat.S_ISLNK(st.st_mode):
                return p, held
            p = os.path.normpath(os.path.join(os.path.dirname(p), self._link_target(held)))
        raise _error(errno.ELOOP, p)

    def _link_target(self, link: str) -> str:
        target = _readlink(link)
        if target.startswith(self.root) and target[len(self.root):len(self.root) + 1] in ("", os.sep):
            return target[len(self.root):] or os.sep
        return target

    def held(self, p: str, given, follow: bool = True) -> str:
        """The path holding p (see find), following its links; FileNotFoundError when the view has none."""
        held = self._locate(p, follow)
        if held is None:
            raise _error(errno.ENOENT, given)
        return held

    def _locate(self, p: str, follow: bool):
        return self.follow(p)[1] if follow else self.find(p)

    def view_stat(self, p: str, follow: bool = True):
        held = self._locate(p, follow)
        if held is None:
            return None
        try:
            return _stat(held) if follow else _lstat(held)
        except (OSError, ValueError):
            return None

    def _existing(self, p: str, given, follow: bool = False):
        """p's stat in the view; FileNotFoundError (naming the script's path) when it has none."""
        st = self.view_stat(p, follow)
        if st is None:
            raise _error(errno.ENOENT, given)
        return st

    def real_visible(self, p: str) -> bool:
        return not self.hidden(p) and _lstat_or_none(p) is not None

    # --- making room in the overlay --------------------------------------------------------------

    def _folders(self, up: str) -> None:
        """Make the overlay folder up and its parents (mirrors of real folders, or the script's)."""
        try:
            _mkdir(up)
        except FileExistsError:
            pass
        except FileNotFoundError:
            self._folders(os.path.dirname(up))
            try:
                _mkdir(up)
            except FileExistsError:
                pass

    def _parent_ready(self, p: str, given) -> None:
        """p's folder exists in the view (else the error the OS would give); mirror it in the overlay."""
        parent = os.path.dirname(p)
        st = self.view_stat(parent)
        if st is None:
            raise _error(errno.ENOENT, given)
        if not stat.S_ISDIR(st.st_mode):
            raise _error(errno.ENOTDIR, given)
        self._folders(self.upper(parent))

    def _copy_up(self, p: str, up: str) -> None:
        """The real file p (or link) copied to its overlay place, so the script can change it."""
        st = _lstat(p)
        if stat.S_ISLNK(st.st_mode):
            self._make_link(_readlink(p), up)
            return
        with _open(p, "rb") as source, _open(up, "wb") as copy:
            shutil.copyfileobj(source, copy, 1 << 20)
        _chmod(up, stat.S_IMODE(st.st_mode))

    def _make_link(self, target: str, up: str) -> None:
        # an absolute target becomes the overlay's copy of it: the kernel never leaves the overlay
        _symlink(self.upper(os.path.normpath(target)) if os.path.isabs(target) else target, up)

    def _materialize(self, p: str) -> None:
        """Make p's overlay place hold the whole of what the view shows at p (before a rename)."""
        up = self.upper(p)
        st = self.view_stat(p, follow=False)
        if stat.S_ISDIR(st.st_mode):
            self._folders(up)
            for name in self._names(p):
                self._materialize(os.path.join(p, name))
        elif _lstat_or_none(up) is None:
            self._copy_up(p, up)

    def _remove_real(self, p: str, report: bool = True) -> None:
        if self.real_visible(p):
            self.removed.add(p)
            self.removed_in.setdefault(os.path.dirname(p), set()).add(os.path.basename(p))
            if report:
                self.on_remove(p)

    def writable(self, given, create: bool = True, truncate: bool = False, exclusive: bool = False) -> str:
        """The overlay path to write for `given`; an update of a real file works on a copy of it."""
        p, held = self.follow(self.virtual(given))
        st = None
        if held is not None:
            try:
                st = _stat(held)
            except OSError:
                st = None
        if st is None:
            if not create:
                raise _error(errno.ENOENT, given)
        elif exclusive:
            raise _error(errno.EEXIST, given)
        elif stat.S_ISDIR(st.st_mode):
            raise _error(errno.EISDIR, given)
        self._parent_ready(p, given)
        up = self.upper(p)
        if st is not None and not truncate and held == p:
            self._copy_up(p, up)
        return up

    # --- the os functions ------------------------------------------------------------------------

    def open(self, file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True,
             opener=None):
        p = self.virtual(file)
        if p is None:
            return _open(file, mode, buffering, encoding, errors, newline, closefd, opener)
        if opener is not None:  # an opener gets the path and opens it itself (through os.open)
            _OPENERS.depth = getattr(_OPENERS, "depth", 0) + 1
            try:
                return _open(file, mode, buffering, encoding, errors, newline, closefd, opener)
            finally:
                _OPENERS.depth -= 1
        if any(c in mode for c in "wax+"):
            target = self.writable(file, create="r" not in mode, truncate="w" in mode, exclusive="x" in mode)
        else:
            target = self.held(p, file)
        handle = _open(target, mode, buffering, encoding, errors, newline, closefd, opener)
        if target != file:
            _rename_handle(handle, file)
        return handle

    def os_open(self, path, flags, mode=0o777, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _os_open(path, flags, mode, dir_fd=dir_fd)
        if _O_TMPFILE and flags & _O_TMPFILE == _O_TMPFILE:  # an unnamed file in the overlay's copy of the folder
            self._check_folder(p, path)
            folder = self.upper(self.follow(p)[0])
            self._folders(folder)
            return _os_open(folder, flags, mode)
        if flags & _WRITE_FLAGS:
            target = self.writable(path, create=bool(flags & os.O_CREAT), truncate=bool(flags & os.O_TRUNC),
                                   exclusive=bool(flags & os.O_CREAT and flags & os.O_EXCL))
            if not flags & os.O_CREAT and _lstat_or_none(target) is None:
                # O_TRUNC of a real file: the view has it, its copy is made empty here
                flags, mode = flags | os.O_CREAT, stat.S_IMODE(self.view_stat(p).st_mode)
        else:
            target = self.held(p, path, follow=not flags & getattr(os, "O_NOFOLLOW", 0))
        return _os_open(target, flags, mode)

    def stat(self, path, *, dir_fd=None, follow_symlinks=True):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        return _stat(self.held(p, path, follow_symlinks), follow_symlinks=follow_symlinks)

    def lstat(self, path, *, dir_fd=None):
        return self.stat(path, dir_fd=dir_fd, follow_symlinks=False)

    def access(self, path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _access(path, mode, dir_fd=dir_fd, effective_ids=effective_ids, follow_symlinks=follow_symlinks)
        held = self._locate(p, follow_symlinks)
        return held is not None and _access(held, mode, effective_ids=effective_ids, follow_symlinks=follow_symlinks)

    def readlink(self, path, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _readlink(path, dir_fd=dir_fd)
        target = self._link_target(self.held(p, path, follow=False))
        return os.fsencode(target) if isinstance(path, bytes) else target

    def _check_folder(self, p: str, given) -> None:
        st = self.view_stat(p)
        if st is None:
            raise _error(errno.ENOENT, given)
        if not stat.S_ISDIR(st.st_mode):
            raise _error(errno.ENOTDIR, given)

    def _real_names(self, p: str) -> list:
        if self.hidden(p) or not _is_dir(p):
            return []
        gone = self.removed_in.get(p, ())
        return [name for name in _listdir(p) if name not in gone]

    def _names(self, p: str) -> list:
        """The names in folder p of the view: the real ones not removed, then the overlay's."""
        real = self._real_names(p)
        up = self.upper(p)
        if not _is_dir(up):
            return real
        seen = set(real)
        return real + [name for name in _listdir(up) if name not in seen]

    def _untouched(self, p: str) -> bool:
        """Nothing written or removed in folder p: the real folder as it is."""
        return _lstat_or_none(self.upper(p)) is None and not self.removed_in.get(p) and not self.hidden(p)

    def listdir(self, path="."):
        p = self.virtual(path)
        if p is None or self._untouched(p):
            return _listdir(path)
        self._check_folder(p, path)
        names = self._names(p)
        return [os.fsencode(name) for name in names] if isinstance(path, bytes) else names

    def scandir(self, path="."):
        p = self.virtual(path)
        if p is None or self._untouched(p):
            return _scandir(path)
        self._check_folder(p, path)
        as_bytes, given = isinstance(path, bytes), os.fspath(path)
        real = {}
        if not self.hidden(p) and _is_dir(p):
            gone = self.removed_in.get(p, ())
            with _scandir(path) as listing:
                real = {os.fsdecode(e.name): e for e in listing if os.fsdecode(e.name) not in gone}
        ours = {}
        up = self.upper(p)
        if _is_dir(up):
            with _scandir(os.fsencode(up) if as_bytes else up) as listing:
                ours = {os.fsdecode(e.name): _Entry(e, os.path.join(given, e.name)) for e in listing}
        entries = []
        for name, entry in real.items():
            copy = ours.pop(name, None)
            # a real folder the script wrote into is shown as itself; anything else the script wrote wins
            mirror = copy is not None and copy.is_dir(follow_symlinks=False) and entry.is_dir()
            entries.append(entry if copy is None or mirror else copy)
        entries.extend(ours.values())
        return _Listing(entries)

    def chdir(self, path):
        p = self.virtual(path)
        if p is None:
            return _chdir(path)
        return _chdir(self.held(p, path))

    def getcwd(self):
        cwd = _getcwd()
        if cwd.startswith(self.root) and cwd[len(self.root):len(self.root) + 1] in ("", os.sep):
            return cwd[len(self.root):] or os.sep
        return cwd

    def mkfifo(self, path, mode=0o666, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return os_mkfifo(path, mode, dir_fd=dir_fd)
        if self.view_stat(p, follow=False) is not None:
            raise _error(errno.EEXIST, path)
        self._parent_ready(p, path)
        os_mkfifo(self.upper(p), mode)

    def mknod(self, path, mode=0o600, device=0, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return os_mknod(path, mode, device, dir_fd=dir_fd)
        if self.view_stat(p, follow=False) is not None:
            raise _error(errno.EEXIST, path)
        self._parent_ready(p, path)
        os_mknod(self.upper(p), mode, device)

    def mkdir(self, path, mode=0o777, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _mkdir(path, mode, dir_fd=dir_fd)
        if self.view_stat(p, follow=False) is not None:
            raise _error(errno.EEXIST, path)
        self._parent_ready(p, path)
        _mkdir(self.upper(p), mode)

    def remove(self, path, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _unlink(path, dir_fd=dir_fd)
        if stat.S_ISDIR(self._existing(p, path).st_mode):
            raise _error(errno.EISDIR, path)
        up = self.upper(p)
        if _lstat_or_none(up) is not None:
            _unlink(up)
        self._remove_real(p)

    unlink = remove

    def rmdir(self, path, *, dir_fd=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _rmdir(path, dir_fd=dir_fd)
        if not stat.S_ISDIR(self._existing(p, path).st_mode):
            raise _error(errno.ENOTDIR, path)
        if self._names(p):
            raise _error(errno.ENOTEMPTY, path)
        up = self.upper(p)
        if _is_dir(up):
            _rmdir(up)
        self._remove_real(p)

    def rename(self, src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        s = self._redirected(src, src_dir_fd)
        d = self._redirected(dst, dst_dir_fd)
        if (s is None and d is None) or src_dir_fd is not None or dst_dir_fd is not None:
            return _rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        # one side may be verify's own folder (a temporary file moved into place): it is renamed for real
        source = _lstat(src) if s is None else self._existing(s, src)
        if s == d:
            return None
        target = _lstat_or_none(dst) if d is None else self.view_stat(d, follow=False)
        if stat.S_ISDIR(source.st_mode):
            if s is not None and d is not None and (d + os.sep).startswith(s + os.sep):
                raise _error(errno.EINVAL, src)
            if target is not None and not stat.S_ISDIR(target.st_mode):
                raise _error(errno.ENOTDIR, dst)
            if target is not None and d is not None and self._names(d):
                raise _error(errno.ENOTEMPTY, dst)
        elif target is not None and stat.S_ISDIR(target.st_mode):
            raise _error(errno.EISDIR, dst)
        if d is not None:
            self._parent_ready(d, dst)
        if s is not None:
            self._materialize(s)
        if d is not None and target is not None and stat.S_ISDIR(target.st_mode):
            if _is_dir(self.upper(d)):
                _rmdir(self.upper(d))
            self._remove_real(d, report=False)  # replaced by the source: the new folder shows only its entries
        _rename(src if s is None else self.upper(s), dst if d is None else self.upper(d))
        if s is not None:
            self._remove_real(s)

    replace = rename

    def truncate(self, path, length):
        if self.virtual(path) is None:
            return _truncate(path, length)
        return _truncate(self.writable(path, create=False), length)

    def chmod(self, path, mode, *, dir_fd=None, follow_symlinks=True):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _chmod(path, mode, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        return _chmod(self._metadata_target(path, p), mode)

    def chown(self, path, uid, gid, *, dir_fd=None, follow_symlinks=True):
        p = self._redirected(path, dir_fd)
        if p is None:
            return _chown(path, uid, gid, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        return _chown(self._metadata_target(path, p), uid, gid)

    def lchown(self, path, uid, gid):
        return self.chown(path, uid, gid, follow_symlinks=False)

    def utime(self, path, times=None, *, ns=None, dir_fd=None, follow_symlinks=True):
        p = self._redirected(path, dir_fd)
        keywords = {} if ns is None else {"ns": ns}
        if p is None:
            return _utime(path, times, dir_fd=dir_fd, follow_symlinks=follow_symlinks, **keywords)
        return _utime(self._metadata_target(path, p), times, **keywords)

    def _metadata_target(self, given, p: str) -> str:
        if stat.S_ISDIR(self._existing(p, given, follow=True).st_mode):
            up = self.upper(self.follow(p)[0])
            self._folders(up)
            return up
        return self.writable(given, create=False)

    def listxattr(self, path=None, *, follow_symlinks=True):
        p = None if path is None else self.virtual(path)
        if p is None:
            return _listxattr(path, follow_symlinks=follow_symlinks)
        return _listxattr(self.held(p, path, follow_symlinks), follow_symlinks=follow_symlinks)

    def getxattr(self, path, attribute, *, follow_symlinks=True):
        p = self.virtual(path)
        if p is None:
            return _getxattr(path, attribute, follow_symlinks=follow_symlinks)
        return _getxattr(self.held(p, path, follow_symlinks), attribute, follow_symlinks=follow_symlinks)

    def setxattr(self, path, attribute, value, flags=0, *, follow_symlinks=True):
        p = self.virtual(path)
        if p is None:
            return _setxattr(path, attribute, value, flags, follow_symlinks=follow_symlinks)
        return _setxattr(self._metadata_target(path, p), attribute, value, flags)

    def removexattr(self, path, attribute, *, follow_symlinks=True):
        p = self.virtual(path)
        if p is None:
            return _removexattr(path, attribute, follow_symlinks=follow_symlinks)
        return _removexattr(self._metadata_target(path, p), attribute)

    def symlink(self, src, dst, target_is_directory=False, *, dir_fd=None):
        d = self._redirected(dst, dir_fd)
        if d is None:
            return _symlink(src, dst, target_is_directory, dir_fd=dir_fd)
        if self.view_stat(d, follow=False) is not None:
            raise _error(errno.EEXIST, dst)
        self._parent_ready(d, dst)
        self._make_link(os.fsdecode(src), self.upper(d))

    def rmtree(self, path, ignore_errors=False, onerror=None, *, onexc=None, dir_fd=None, original=None):
        p = self._redirected(path, dir_fd)
        if p is None:
            keywords = {} if onexc is None else {"onexc": onexc}
            if dir_fd is not None:
                keywords["dir_fd"] = dir_fd
            return original(path, ignore_errors, onerror, **keywords)

        def failed(function, where, exc):
            if ignore_errors:
                return
            if onexc is not None:
                onexc(function, where, exc)
            elif onerror is not None:
                onerror(function, where, (type(exc), exc, exc.__traceback__))
            else:
                raise exc

        st = self.view_stat(p, follow=False)
        if st is not None and stat.S_ISLNK(st.st_mode):
            failed(os.path.islink, path, OSError("Cannot call rmtree on a symbolic link"))
            return None
        self._rmtree(path, failed)

    def _rmtree(self, path, failed) -> None:
        try:
            entries = list(self.scandir(path))
        except OSError as exc:
            failed(os.scandir, path, exc)
            entries = []
        for entry in entries:
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder:
                self._rmtree(entry.path, failed)
            else:
                try:
                    self.remove(entry.path)
                except OSError as exc:
                    failed(os.unlink, entry.path, exc)
        try:
            self.rmdir(path)
        except OSError as exc:
            failed(os.rmdir, path, exc)


def _rename_handle(handle, name) -> None:
    """The file object the script gets carries the name it asked for, not the overlay's path."""
    raw = getattr(getattr(handle, "buffer", handle), "raw", getattr(handle, "buffer", handle))
    try:
        raw.name = name
    except (AttributeError, TypeError):
        pass


class _Entry:
    """An os.DirEntry of the overlay, whose path is spelled as the script spelled the folder."""

    __slots__ = ("name", "path", "_entry")

    def __init__(self, entry, path):
        self.name, self.path, self._entry = entry.name, path, entry

    def is_dir(self, *, follow_symlinks=True):
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks=True):
        return self._entry.is_file(follow_symlinks=follow_symlinks)

    def is_symlink(self):
        return self._entry.is_symlink()

    def is_junction(self):
        return False

    def stat(self, *, follow_symlinks=True):
        return self._entry.stat(follow_symlinks=follow_symlinks)

    def inode(self):
        return self._entry.inode()

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"<DirEntry {self.name!r}>"


class _Listing:
    """What os.scandir returns: an iterator that is also a context manager."""

    def __init__(self, entries):
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._entries = iter(())


def written(root: str, removed=()) -> list[dict]:
    """What the script left in the overlay at `root`, one report entry per path: files with their
    size, links with their target, folders it made, and the real paths it removed that stayed removed.  Reads
    the real file system (the parent calls it after the run; the tests, in a redirected process)."""
    root = os.path.realpath(root)
    entries = []

    def walk(folder: str) -> None:
        with _scandir(folder) as listing:
            found = sorted(listing, key=lambda entry: entry.name)
        for entry in found:
            p = entry.path[len(root):]
            if entry.is_dir(follow_symlinks=False):
                if not _is_dir(p):
                    entries.append({"action": "create directory", "path": p})
                walk(entry.path)
            elif entry.is_symlink():
                target = os.readlink(entry.path)
                entries.append({"action": "link", "path": p, "target": target[len(root):]
                                if target.startswith(root + os.sep) else target})
            elif stat.S_ISFIFO(entry.stat(follow_symlinks=False).st_mode):
                entries.append({"action": "create FIFO", "path": p})
            else:
                entries.append({"action": "write", "path": p, "size": entry.stat(follow_symlinks=False).st_size})

    if _is_dir(root):
        walk(root)
    for p in dict.fromkeys(removed):
        if _lstat_or_none(root + p) is None:
            entries.append({"action": "delete", "path": p})
    return entries


def keep(root: str, destination: str) -> None:
    """Copy the overlay to `destination` (--keep-writes), its links re-pointed to their copies there."""
    root, destination = os.path.realpath(root), os.path.abspath(destination)
    shutil.copytree(root, destination, symlinks=True, dirs_exist_ok=True)
    for folder, dirs, files in os.walk(destination):
        for name in dirs + files:
            link = os.path.join(folder, name)
            target = os.readlink(link) if os.path.islink(link) else ""
            if target.startswith(root + os.sep):
                os.unlink(link)
                os.symlink(destination + target[len(root):], link)
