"""The answer to a clean `check` run, before the full command line is imported.

A pre-commit hook hands gradlint a few file names on every commit, and most
of them hold no training loop.  For such a run the full CLI would import
argparse, the configuration loader, the engine and the reporters (tens of
milliseconds) only to print `All checks passed!` and exit 0.  This module gives that same
answer with nothing but os, sys, re and gradlint/check/prefilter.py (and the API-name
table gradlint/core/api_names.py it reads), when it is sure:

* the arguments are `[check] FILE...` with flags that cannot change a clean
  answer (``--no-cache``, ``--cache-dir DIR``, ``--jobs N``, ``--exit-zero``,
  ``--force-exclude``, ``--isolated``, ``--show-suppressed``, ``-q``), and with
  ``--force-exclude`` no FILE lies under a directory a walk would skip;
* every FILE is a regular .py or .pyi file of at most
  engine.MAX_FILE_BYTES, plain UTF-8 (no BOM, no coding line, no NUL), in
  which the prefilter finds no spelling of a gradient event: such a file has
  no finding, and is not parsed (the full CLI does not parse it either, so a
  syntax error in it is Python's and ruff's to report);
* no FILE imports a module that may be the project's (a relative import, or a
  name that is a module or folder beside it or beside its package): a loop
  may call a training step there, which the full CLI's project index follows;
* no pyproject.toml on the way up from a FILE could change that: one that
  mentions gradlint (its table can name wrappers, or be invalid) sends the
  run to the full CLI, and one that does not must still be valid TOML, as
  the full CLI checks.

Anything else returns None and the full CLI decides.  A file passed over
here is exactly one the full run counts as checked and clean (it is not parsed,
and nothing is cached for it); tests/test_quick.py runs both paths.
"""

from __future__ import annotations

import os

# Flags that change neither which findings a clean file has nor the output of a clean run.
_SWITCHES = frozenset(
    {"--no-cache", "--exit-zero", "--force-exclude", "--isolated", "--show-suppressed", "-q", "--quiet"}
)
_WITH_VALUE = frozenset({"--cache-dir", "--jobs", "-j"})
MAX_FILE_BYTES = 8 * 1024 * 1024  # engine.MAX_FILE_BYTES (a test keeps them equal)


def clean_run(argv: list[str]) -> int:
    """The number of files checked when `gradlint argv` surely finds nothing and exits 0,
    else 0 (see the module docstring)."""
    paths = _paths(argv[1:] if argv[:1] == ["check"] else argv)
    if not paths:
        return 0
    isolated = "--isolated" in argv
    if "--force-exclude" in argv and any(_maybe_skipped(path) for path in paths):
        return 0
    seen_dirs: set[str] = set()
    for path in paths:
        if not _clean_file(path):
            return 0
        if not isolated and not _no_configuration(os.path.dirname(os.path.abspath(path)), seen_dirs):
            return 0
    return len({os.path.normpath(path) for path in paths})  # a file named twice is checked once


def answer(argv: list[str]) -> bool:
    """Print what the full CLI prints for a clean run and return True, or return False."""
    import sys

    checked = clean_run(argv)
    if checked and "-q" not in argv and "--quiet" not in argv:
        sys.stdout.write(clean_summary(checked) + "\n")
        sys.stdout.flush()
    return bool(checked)


def clean_summary(checked: int) -> str:
    """ruff's words for a run with nothing to report, and the files checked (report/text.py)."""
    return f"All checks passed! ({checked} file{'s' if checked != 1 else ''} checked)"


def _maybe_skipped(path: str) -> bool:
    """A directory on the way to `path` that --force-exclude might skip (discover.SKIP_DIRS,
    `*.egg-info`): a superset, so the full CLI decides."""
    parts = os.path.normpath(os.path.relpath(os.path.abspath(path))).split(os.sep)[:-1]
    return any(
        part.startswith((".", "_")) or part.endswith(".egg-info")
        or part in ("build", "dist", "node_modules", "venv", "site-packages")
        for part in parts
        if part != ".."
    )


def _paths(args: list[str]) -> list[str]:
    """The file names, or [] when an argument is one this module does not answer for."""
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in _WITH_VALUE:
            if i + 1 == len(args):
                return []
            value = args[i + 1]
            if arg != "--cache-dir" and not (value.isdigit() and int(value) >= 1):
                return []
            i += 2
            continue
        if arg.startswith("-"):  # `-` (stdin), --config, --select, --fix, abbreviations, `--x=y`...
            if arg not in _SWITCHES:
                return []
        else:
            paths.append(arg)
        i += 1
    return paths


def _clean_file(path: str) -> bool:
    if not path.lower().endswith((".py", ".pyi")):
        return False  # a notebook, a #! script, or no Python at all: the full CLI says which
    data = _regular_file_bytes(path)
    if data is None:
        return False
    if b"\x00" in data or data.startswith(b"\xef\xbb\xbf"):
        return False
    first_two = data.split(b"\n", 2)[:2]
    if any(b"coding" in line for line in first_two):  # PEP 263: the full decoder decides
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    from gradlint.check.prefilter import may_hold_events

    if may_hold_events(text):
        return False
    return not _imports_a_neighbour(path, text)  # not parsed: the full CLI does not parse it either


def _imports_a_neighbour(path: str, text: str) -> bool:
    """Does the file import a module that may be the project's (a relative import, or one whose
    first name is a module or folder beside it, or beside the package that holds it)?  Its
    loops may call a training step there, which the full CLI's project index follows.  Read
    from the lines' first words, without a parse: a line of a string that reads like an import
    only sends the run to the full CLI."""
    names = set()
    for line in text.splitlines():
        words = line.split(None, 2)
        if len(words) < 2 or words[0] not in ("from", "import"):
            continue
        if words[0] == "from":
            if words[1].startswith("."):
                return True
            names.add(words[1].split(".")[0])
        else:
            for part in line.split("import", 1)[1].split(","):
                first = part.split(None, 1)
                if first:
                    names.add(first[0].strip("()\\").split(".")[0])
    if not names:
        return False
    folder = os.path.dirname(os.path.abspath(path))
    while True:  # its folder, then each folder of the package that holds it, and the one above
        try:
            listing = set(os.listdir(folder))
        except OSError:
            return True
        if any(name + ".py" in listing or name in listing for name in names if name):
            return True
        if "__init__.py" not in listing or os.path.dirname(folder) == folder:
            return False
        folder = os.path.dirname(folder)


def _regular_file_bytes(path: str):
    """The bytes of a regular file of at most MAX_FILE_BYTES, else None.  Opened non-blocking and
    tested on the descriptor: a FIFO named on the command line must not hang this path either."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            os.close(fd)
            return None
    except OSError:
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            return handle.read()
        except OSError:
            return None


def _no_configuration(directory: str, seen: set[str]) -> bool:
    """No pyproject.toml from `directory` up can configure gradlint, and each one found is valid."""
    current = directory
    while current not in seen:
        seen.add(current)
        candidate = os.path.join(current, "pyproject.toml")
        if os.path.isfile(candidate) and not _passed_over(candidate):
            return False
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return True


def _passed_over(pyproject: str) -> bool:
    """A pyproject.toml the full CLI reads and passes over: valid TOML, no gradlint in it."""
    try:
        with open(pyproject, "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    if b"gradlint" in data:
        return False
    try:  # only here: a run in a project meets one pyproject.toml or two
        import tomllib
    except ImportError:  # Python < 3.11: tomli, as the full CLI reads it (a dependency there)
        import tomli as tomllib

    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(table.get("tool", {}), dict)
