"""A content-hash cache of one file's result.

An entry's key digests everything that can change a file's result: the
file's bytes, its path (findings carry it), the effective settings
(``Settings.fingerprint()``) and the code of gradlint itself (its version
plus the size and mtime of its modules, so an edited checkout does not
serve stale results).  Change any of them and the key changes: the old
entry is simply never read again.

Entries are small files under ``<cache dir>/v2/<2 hex>/<key>.json``: a
line with the key, a line with a digest of the key and the body, then the
body (the result as JSON).  Each is written to a temporary file in the same
directory and moved into place with ``os.replace``: a reader sees the old
entry, the new one or none, never half of one, so two runs may share the
directory.

The cache is a directory anyone may have damaged, so an entry is read
like hostile input: every read of it takes only a regular file (opened
non-blocking, without following a link: a FIFO or a link to /dev/zero is
never read), at most MAX_ENTRY_BYTES of it, used only when the digest its
first line holds matches its body (an entry also names its key, which must be the
one asked for: an entry rewritten with well-formed but other content is
not a result), decoded without letting deep nesting crash the run, and
checked for the types a result holds.
Anything else is ignored (and rewritten).  Nothing here imports libcst: a
cache hit costs a read, a digest and a JSON decode.

Where: `.gradlint_cache/` in the project root (the nearest pyproject.toml
or .git), or, when there is none, gradlint's directory in the user's cache
(XDG_CACHE_HOME or ~/.cache on Linux and other Unix, ~/Library/Caches on
macOS, %LOCALAPPDATA% on Windows), never the current directory.
"""

from __future__ import annotations

import json
import os
import sys
from functools import lru_cache
from typing import Optional

from gradlint.run.atomic import write_atomically
from gradlint.core.digest import hex_digest
from gradlint.core.findings import INTERNAL_ERROR, READ_ERROR, TIMEOUT, FileResult
from gradlint.options.settings import Settings

CACHE_DIR_NAME = ".gradlint_cache"
LAYOUT = "v2"  # bump when the entry format changes
# No real result comes near this (a finding is about 1 KB); a bigger entry is never written.
MAX_ENTRY_BYTES = 16 * 1024 * 1024
_ROOT_MARKERS = ("pyproject.toml", ".git")


def content_digest(data: bytes) -> str:
    return hex_digest(data)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """gradlint's version and the state of its own modules."""
    import gradlint

    package = os.path.dirname(os.path.abspath(gradlint.__file__))
    parts = [gradlint.__version__]
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                parts.append(f"{os.path.relpath(os.path.join(folder, name), package)}:{st.st_size}:{st.st_mtime_ns}")
    return hex_digest("\n".join(parts).encode())


def project_root(paths: list[str]) -> Optional[str]:
    """The directory of the nearest pyproject.toml or .git above the first path, else None."""
    cwd = os.getcwd()
    first = paths[0] if paths and paths[0] != "-" else cwd
    here = os.path.abspath(first)
    if not os.path.isdir(here):
        here = os.path.dirname(here)
    while True:
        if any(os.path.exists(os.path.join(here, marker)) for marker in _ROOT_MARKERS):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def default_cache_dir(paths: list[str]) -> str:
    """`.gradlint_cache` in the project root; outside any project, the user's cache directory
    (a cache dropped into whatever directory a run happened to start in is litter)."""
    root = project_root(paths)
    return os.path.join(root, CACHE_DIR_NAME) if root is not None else user_cache_dir()


def user_cache_dir() -> str:
    """gradlint's directory in the platform's per-user cache."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
        return os.path.join(base, "gradlint", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~"), "Library", "Caches", "gradlint")
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # unset, empty or relative: ignored, as the XDG specification says
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "gradlint")


STAGING_DIR_NAME = "staging"


def staging_dir(directory: str) -> Optional[str]:
    """`directory/staging`, made if needed: where --fix and --add-noqa make a file's new text
    before it takes the old one's place (gradlint/run/atomic.py), so that a run killed at any
    moment leaves nothing in the user's tree; what killed runs left there is swept here.
    None when it cannot be made (then the new text is made beside each file)."""
    from gradlint.run.atomic import sweep

    path = os.path.join(directory, STAGING_DIR_NAME)
    try:
        if not os.path.isdir(path):
            Cache(directory, code="")._prepare()  # the .gitignore and CACHEDIR.TAG first
            os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    sweep(path)
    return path


def cacheable(result: FileResult) -> bool:
    """An internal error may be a passing crash, a read error depends on more than the bytes,
    a timeout on the machine's load and the limit."""
    return not any(e.kind in (INTERNAL_ERROR, READ_ERROR, TIMEOUT) for e in result.errors)


class Cache:
    def __init__(self, directory: str, code: Optional[str] = None):
        self.directory = directory
        self.root = os.path.join(directory, LAYOUT)
        self.code = code if code is not None else code_fingerprint()
        self._settings: dict[Settings, str] = {}
        self.writable = True

    def key(self, path: str, digest: str, settings: Settings) -> str:
        fingerprint = self._settings.get(settings)
        if fingerprint is None:
            fingerprint = self._settings[settings] = settings.fingerprint()
        text = "\0".join((self.code, fingerprint, path, digest))
        return hex_digest(text.encode("utf-8", "surrogateescape"), size=20)

    def _entry(self, key: str, area: str = "") -> str:
        """`area`: a folder of its own for entries that are not a file's result."""
        return os.path.join(self.root, area, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str, variant: str = "") -> Optional[FileResult]:
        """The result stored under `key` for `path`, None when there is none worth trusting.
        `variant`: the result as a report wants it (see `put`); None when the entry lacks it."""
        data = self.get_json(key)
        if not isinstance(data, dict) or not isinstance(data.get(""), dict):
            return None
        try:
            result = FileResult.from_dict(data[""])
            if variant and variant in data:
                result = FileResult.from_dict(data[variant])
            elif variant and any(f.fix for f in result.findings):
                return None  # the variant would offer other fixes than these: not known
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None  # corrupt: recompute and overwrite
        return result if result.path == path and _well_typed(result) else None

    def get_json(self, key: str, area: str = ""):
        """The JSON value stored under `key`, None when there is none worth trusting (the
        caller still checks its types: a sealed entry may come from an older layout)."""
        data = _read_entry(self._entry(key, area))
        if data is None:
            return None
        head, sep, body = data.partition(b"\n")
        claimed, sep2, body = body.partition(b"\n")
        if not sep or not sep2 or head != key.encode() or claimed != _seal(key, body).encode():
            return None  # another key's entry, truncated, or rewritten: not this file's result
        try:
            return json.loads(body)
        except (ValueError, RecursionError, MemoryError):
            return None  # corrupt: recompute and overwrite

    def put(self, key: str, result: FileResult, variants: Optional[dict] = None) -> None:
        """One entry per file, for every report: `result`, and `variants` ({"proven": ..., "marked":
        ...}: the same findings with the fixes that JSON and SARIF offer, or with the text report's
        marks), needed only when `result` has a fix (without one, every report shows `result`).
        A run in one format thus warms the cache for a run in any other."""
        every = (result, *(variants or {}).values())
        if all(cacheable(r) for r in every):
            self.put_json(key, {"": result.to_dict(), **{name: r.to_dict() for name, r in (variants or {}).items()}})

    def put_json(self, key: str, value, area: str = "") -> None:
        if not self.writable:
            return
        entry = self._entry(key, area)
        folder = os.path.dirname(entry)
        body = json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogateescape")
        if len(body) + 200 > MAX_ENTRY_BYTES:
            return  # a reader would refuse it
        try:
            if not os.path.isdir(folder):
                self._prepare()
                os.makedirs(folder, exist_ok=True)
            write_atomically(entry, b"%s\n%s\n%s" % (key.encode(), _seal(key, body).encode(), body))
        except IsADirectoryError:
            pass  # this entry's name is taken by a directory: only this entry is lost
        except OSError:
            self.writable = False  # read-only or full disk: run on without a cache

    def _prepare(self) -> None:
        """Create the directory and tell git and backup tools to leave it alone."""
        os.makedirs(self.root, exist_ok=True)
        for name, text in (
            (".gitignore", "# created by gradlint\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# gradlint's result cache\n"),
        ):
            target = os.path.join(self.directory, name)
            if not os.path.lexists(target):
                _create(target, text.encode("utf-8"))


def _seal(key: str, body: bytes) -> str:
    """What ties an entry's body to its key: an entry copied under another name, or edited in
    place without this digest (a repair, a tool, damage), is not served."""
    return hex_digest(key.encode() + b"\0" + body, size=16)


def _create(path: str, data: bytes) -> None:
    """A new small file `path`, never written through whatever took that name meanwhile (a
    link, a FIFO: O_EXCL and O_NOFOLLOW refuse them); nothing when it cannot be made."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError:
        return
    try:
        os.write(fd, data)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_entry(path: str, limit: int = MAX_ENTRY_BYTES) -> Optional[bytes]:
    """The bytes of an entry that is a regular file of at most `limit` bytes, else None.
    Opened non-blocking (a FIFO without a writer must not hang the run) and not through a
    symbolic link (a link to /dev/zero must not fill the memory); the type and the size are
    asked of the open descriptor."""
    import stat

    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        chunks, size = [], 0
        while size <= limit:  # bounded however much the file grows meanwhile
            chunk = os.read(fd, limit + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks) if size <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _well_typed(result: FileResult) -> bool:
    """The fields the reports read have the types they expect (a forged body that passes the
    digest still must not crash a report)."""
    def span_ok(span) -> bool:
        return all(type(v) is int for v in (span.line, span.col, span.end_line, span.end_col))

    def cell_ok(cell) -> bool:  # a notebook's place in a cell (findings.CellSpan), or None
        return cell is None or (type(cell.cell) is int and type(cell.file_line) is int and span_ok(cell.span))

    def finding_ok(f) -> bool:
        if not (isinstance(f.path, str) and isinstance(f.code, str) and isinstance(f.message, str) and span_ok(f.span)):
            return False
        if not cell_ok(f.cell) or not all(span_ok(r.span) and isinstance(r.message, str) and cell_ok(r.cell) for r in f.related):
            return False
        return f.fix is None or all(span_ok(e.span) and isinstance(e.new_text, str) for e in f.fix.edits)

    return (
        all(finding_ok(f) for f in result.findings)
        and all(finding_ok(f) for f in result.suppressed)
        and all(isinstance(e.kind, str) and isinstance(e.message, str) and type(e.line) is int and type(e.col) is int
                and cell_ok(e.cell) for e in result.errors)
    )
