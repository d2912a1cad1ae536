"""A content-hash cache of one file's result.

An entry's key digests everything that can change a file's result: the
file's bytes, its path (findings carry it), the effective settings
(``Settings.fingerprint()``) and the code of gradlint itself (its version
plus the size and mtime of its modules, so an edited checkout does not
serve stale results).  Change any of them and the key changes: the old
entry is simply never read again.

Entries are small JSON files under ``<cache dir>/v1/<2 hex>/<key>.json``,
written to a temporary file in the same directory and moved into place
with ``os.replace``: a reader sees the old entry, the new one or none,
never half of one, so two runs may share the directory.  An entry that
cannot be read or does not hold what its name promises is ignored (and
rewritten).  Nothing here imports libcst: a cache hit costs a read and a
JSON decode.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Optional

from gradlint.atomic import write_atomically
from gradlint.digest import hex_digest
from gradlint.findings import INTERNAL_ERROR, READ_ERROR, TIMEOUT, FileResult
from gradlint.settings import Settings

CACHE_DIR_NAME = ".gradlint_cache"
LAYOUT = "v1"  # bump when the entry format changes
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


def project_root(paths: list[str]) -> str:
    """The directory of the nearest pyproject.toml or .git above the first path, else the cwd."""
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
            return cwd
        here = parent


def default_cache_dir(paths: list[str]) -> str:
    return os.path.join(project_root(paths), CACHE_DIR_NAME)


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

    def _entry(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> Optional[FileResult]:
        try:
            with open(self._entry(key), "rb") as handle:
                data = json.loads(handle.read())
            if data.get("key") != key:
                return None
            result = FileResult.from_dict(data["result"])
            return result if result.path == path else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # missing or corrupt: recompute and overwrite

    def put(self, key: str, result: FileResult) -> None:
        if not self.writable or not cacheable(result):
            return
        entry = self._entry(key)
        folder = os.path.dirname(entry)
        try:
            if not os.path.isdir(folder):
                self._prepare()
                os.makedirs(folder, exist_ok=True)
            payload = json.dumps({"key": key, "result": result.to_dict()}, separators=(",", ":"))
            write_atomically(entry, payload)
        except OSError:
            self.writable = False  # read-only or full disk: run on without a cache

    # Files the prefilter passes over need only CPython's parse (gradlint/syntax.py); the digests
    # of the bytes that parsed are one set in one file per gradlint code and Python version (a
    # newer Python parses more), read once per run and written once if it grew: a warm run of a
    # tree of such files reads one file instead of parsing them all.
    def _parsed_path(self) -> str:
        import sys

        return os.path.join(self.root, f"parsed-{sys.version_info[0]}.{sys.version_info[1]}-{self.code[:16]}.txt")

    def _parsed_set(self) -> set:
        if getattr(self, "_parsed", None) is None:
            self._parsed, self._parsed_new = set(), False
            try:
                with open(self._parsed_path(), encoding="ascii") as handle:
                    self._parsed = set(handle.read().split())
            except (OSError, ValueError):
                pass
        return self._parsed

    def known_to_parse(self, digest: str) -> bool:
        return digest in self._parsed_set()

    def parsed(self, digest: str) -> None:
        known = self._parsed_set()
        if digest not in known:
            known.add(digest)
            self._parsed_new = True

    def save_parsed(self) -> None:
        if not getattr(self, "_parsed_new", False) or not self.writable:
            return
        self._parsed_new = False
        try:
            self._prepare()
            write_atomically(self._parsed_path(), "\n".join(sorted(self._parsed)) + "\n")
        except OSError:
            self.writable = False

    def _prepare(self) -> None:
        """Create the directory and tell git and backup tools to leave it alone."""
        os.makedirs(self.root, exist_ok=True)
        for name, text in (
            (".gitignore", "# created by gradlint\n*\n"),
            ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n# gradlint's result cache\n"),
        ):
            target = os.path.join(self.directory, name)
            if not os.path.exists(target):
                try:
                    with open(target, "w", encoding="utf-8") as handle:
                        handle.write(text)
                except OSError:
                    pass
