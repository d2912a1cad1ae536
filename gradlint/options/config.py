"""`[tool.gradlint]` in pyproject.toml, turned into per-file Settings.

Each checked file takes the nearest pyproject.toml *that has a
[tool.gradlint] table*, searched upward from the file's directory (ruff's
rule).  There is no inheritance: the nearest table wins entirely, and a
pyproject.toml without the table is passed over.  Command-line flags are
one more layer on top (`Overrides`).

    [tool.gradlint]
    select = ["GL0"]                 # replaces the default rule set
    extend-select = ["GL101"]        # added on top
    ignore = ["GL003"]               # removed last
    exclude = ["legacy/", "*_old.py"]
    extend-exclude = ["scratch/"]
    per-file-ignores = { "tests/*" = ["GL001"] }
    backward-functions = ["utils.backward_scaled"]
    step-functions = ["optimizer_step"]
    zero-grad-functions = ["clear_grads"]
    clip-functions = ["clip_all"]
    file-timeout = 60                # seconds one file's analysis may take (default 30)

Globs are relative to the directory of the file that declares them (the
command line's are relative to the working directory).  A glob without a
slash matches any single path component (`legacy` skips every directory or
file named legacy); a glob with a slash matches the relative path or one of
its parent directories; `*` may cross slashes.

Bad configuration is a ConfigError whose message names the file, the key
and what was expected; the CLI turns it into exit 2.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from gradlint.options.settings import DEFAULT_FILE_TIMEOUT, Settings, Wrappers


def _toml():
    """The TOML reader, imported when a configuration file is read (an `--isolated` run, or
    one that finds no configuration file, never pays for its import)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


CODE_LIST_KEYS = ("select", "ignore", "extend-select")
GLOB_LIST_KEYS = ("exclude", "extend-exclude")
WRAPPER_KEYS = {
    "backward-functions": "backward_functions",
    "step-functions": "step_functions",
    "zero-grad-functions": "zero_grad_functions",
    "clip-functions": "clip_functions",
}
KNOWN_KEYS = CODE_LIST_KEYS + GLOB_LIST_KEYS + ("per-file-ignores",) + tuple(WRAPPER_KEYS) + ("file-timeout",)


class ConfigError(Exception):
    """Configuration that cannot be used; str() is a one-line message for the user."""


@dataclass(frozen=True)
class Layer:
    """One source of rule selection: a config file or the command line."""

    select: Optional[tuple[str, ...]] = None  # None: keep what the layer below chose
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileConfig:
    """The [tool.gradlint] table of one file, validated."""

    path: Optional[str]  # None: no configuration file at all (the defaults)
    root: str  # directory the globs are relative to
    layer: Layer = field(default_factory=Layer)
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    wrappers: Wrappers = field(default_factory=Wrappers)
    file_timeout: Optional[float] = None  # None: the default


@dataclass(frozen=True)
class Overrides:
    """What the command line says; it wins over every file."""

    layer: Layer = field(default_factory=Layer)
    exclude: Optional[tuple[str, ...]] = None  # None: the file's exclude stands
    extend_exclude: tuple[str, ...] = ()
    file_timeout: Optional[float] = None  # None: the file's (or the default) stands


# --- reading one file -------------------------------------------------------------


def _type_name(value: Any) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _string_list(value: Any, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        got = _type_name(value)
        if isinstance(value, list):
            bad = next(item for item in value if not isinstance(item, str))
            got = f"a list containing {_type_name(bad)} ({_shown(bad)})"
        raise ConfigError(f"{where}: expected a list of {what}, got {got}")
    return tuple(item.strip() for item in value if item.strip())


def _codes(value: Any, where: str) -> tuple[str, ...]:
    from gradlint.rules.registry import UnknownCode, expand

    codes = _string_list(value, where, 'rule codes or prefixes (e.g. ["GL001", "GL1"])')
    try:
        expand(codes)
    except UnknownCode:
        bad = next(code for code in codes if _unknown(code))
        raise ConfigError(f"{where}: unknown rule code or prefix: {_shown(bad)} (see `gradlint rules`)") from None
    return codes


def _unknown(code: str) -> bool:
    from gradlint.rules.registry import UnknownCode, expand

    try:
        expand([code])
    except UnknownCode:
        return True
    return False


def parse_table(table: Any, path: str, root: str) -> FileConfig:
    """Validate a [tool.gradlint] table (already parsed TOML)."""
    prefix = f"{path}: [tool.gradlint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{prefix}: expected a table, got {_type_name(table)}")
    for key in table:
        if key not in KNOWN_KEYS:
            import difflib

            hint = difflib.get_close_matches(key.replace("_", "-"), KNOWN_KEYS, n=1)
            suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
            raise ConfigError(f"{prefix}: unknown key {_shown(key)} (known keys: {', '.join(KNOWN_KEYS)}){suggestion}")

    def where(key: str) -> str:
        return f"{prefix} {key}"

    select = _codes(table["select"], where("select")) if "select" in table else None
    layer = Layer(
        select=select,
        extend_select=_codes(table.get("extend-select", []), where("extend-select")),
        ignore=_codes(table.get("ignore", []), where("ignore")),
    )
    globs = {
        key: _string_list(table.get(key, []), where(key), 'glob patterns (e.g. ["legacy/", "*_old.py"])')
        for key in GLOB_LIST_KEYS
    }
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(
            f"{where('per-file-ignores')}: expected a table of glob = [codes] "
            f'(e.g. {{ "tests/*" = ["GL001"] }}), got {_type_name(per_file)}'
        )
    per_file_ignores = tuple(
        (glob, _codes(codes, f"{where('per-file-ignores')} {glob!r}")) for glob, codes in per_file.items()
    )
    wrappers = Wrappers(
        **{
            attribute: _string_list(table.get(key, []), where(key), 'dotted or bare function names (e.g. ["utils.train_step"])')
            for key, attribute in WRAPPER_KEYS.items()
        }
    )
    return FileConfig(
        path=path,
        root=root,
        layer=layer,
        exclude=globs["exclude"],
        extend_exclude=globs["extend-exclude"],
        per_file_ignores=per_file_ignores,
        wrappers=wrappers,
        file_timeout=_seconds(table["file-timeout"], where("file-timeout")) if "file-timeout" in table else None,
    )


def _seconds(value: Any, where: str) -> float:
    """A number of seconds in FILE_TIMEOUT_RANGE (a time limit)."""
    from gradlint.options.settings import FILE_TIMEOUT_RANGE, valid_file_timeout

    if not valid_file_timeout(value):
        shown = _type_name(value) if isinstance(value, bool) or not isinstance(value, (int, float)) else _shown(value)
        low, high = FILE_TIMEOUT_RANGE
        raise ConfigError(f"{where}: expected a number of seconds from {low:g} to {high:g} (e.g. 60), got {shown}")
    return float(value)


def _shown(value: Any, width: int = 60) -> str:
    """repr(value), shortened: a message quotes a value, it does not reprint a 100 KB one."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * width:
        return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
    text = repr(value)
    return text if len(text) <= width else f"{text[:width]}... ({len(text)} characters)"


def _read_toml(path: str) -> tuple[dict, str]:
    """The parsed table and the text (to place a bad key's message on its line)."""
    text = ""
    tomllib = _toml()
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        from gradlint.options.config_position import toml_error_position

        line, col, reason = toml_error_position(exc, text)
        where = f"{path}:{line}:{col}" if line else path
        raise ConfigError(f"{where}: invalid TOML: {reason}") from None
    except (RecursionError, ValueError, MemoryError) as exc:
        # tomllib recurses per level of nesting (a 1,000-deep array) and converts integers
        # with Python's digit limit: valid TOML it cannot read is still a configuration error
        from gradlint.options.config_position import unreadable_toml

        raise ConfigError(unreadable_toml(path, text, exc)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from None


def _gradlint_table(data: dict, path: str):
    tool = data.get("tool")
    if tool is None:
        return None
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: [tool]: expected a table, got {_type_name(tool)}")
    return tool.get("gradlint")


def load_file(path: str, explicit: bool = False) -> Optional[FileConfig]:
    """A pyproject.toml's [tool.gradlint] (None when it has none).

    With `explicit` (--config PATH) a file not named pyproject.toml is a
    gradlint.toml-style file whose top level is the table, and a pyproject
    without the table is an empty configuration rather than "look further".
    """
    path = os.path.abspath(path)
    key = _stat_key(path)
    cached = _FILE_CACHE.get((path, explicit))
    if cached is not None and cached[0] == key:
        return cached[1]
    data, text = _read_toml(path)
    root = os.path.dirname(path)
    top_level = explicit and os.path.basename(path) != "pyproject.toml"
    if top_level:
        table = data
    else:
        table = _gradlint_table(data, path)
        if table is None:
            table = {} if explicit else None
    try:
        config = None if table is None else parse_table(table, path, root)
    except ConfigError as exc:  # name the line and column of the bad key, as for invalid TOML
        from gradlint.options.config_position import with_key_position

        raise ConfigError(with_key_position(str(exc), path, text, top_level)) from None
    _FILE_CACHE[(path, explicit)] = (key, config)
    return config


def _stat_key(path: str):
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration: {exc.strerror or exc}") from None
    return (st.st_mtime_ns, st.st_size)


# Parsed files, keyed by path and revalidated by mtime and size: the language
# server asks for every keystroke, and the user may edit pyproject.toml meanwhile.
_FILE_CACHE: dict[tuple[str, bool], tuple[Any, Optional[FileConfig]]] = {}


# --- globs ------------------------------------------------------------------------


def glob_matches(pattern: str, relpath: str) -> bool:
    """See the module docstring.  `relpath` uses forward slashes."""
    pattern = pattern.replace(os.sep, "/").strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern:
        return False
    parts = [part for part in relpath.split("/") if part not in ("", ".")]
    if "/" not in pattern.rstrip("/"):
        name = pattern.rstrip("/")
        return any(fnmatch.fnmatchcase(part, name) for part in parts)
    pattern = pattern.rstrip("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:n]), pattern) for n in range(1, len(parts) + 1))


def _relative(path: str, root: str) -> str:
    return os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")


# --- many files -------------------------------------------------------------------


class Resolver:
    """Settings and exclusion for every path of one run, with lookups cached per directory."""

    def __init__(
        self,
        overrides: Overrides = Overrides(),
        config_path: Optional[str] = None,
        isolated: bool = False,
        cwd: Optional[str] = None,
    ):
        self.overrides = overrides
        self.isolated = isolated
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._by_dir: dict[str, FileConfig] = {}
        self._fixed: Optional[FileConfig] = None
        self._default = FileConfig(path=None, root=self.cwd)
        self._settings: dict[tuple, Settings] = {}
        if config_path is not None:
            if not os.path.isfile(config_path):
                raise ConfigError(f"{config_path}: --config file does not exist")
            self._fixed = load_file(config_path, explicit=True)

    def config_for_dir(self, directory: str) -> FileConfig:
        if self._fixed is not None:
            return self._fixed
        if self.isolated:
            return self._default
        directory = os.path.abspath(directory)
        visited = []
        current = directory
        found = self._default
        while True:
            if current in self._by_dir:
                found = self._by_dir[current]
                break
            visited.append(current)
            candidate = os.path.join(current, "pyproject.toml")
            if os.path.isfile(candidate):
                config = load_file(candidate)
                if config is not None:
                    found = config
                    break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for seen in visited:
            self._by_dir[seen] = found
        return found

    def config_for(self, path: str) -> FileConfig:
        return self.config_for_dir(os.path.dirname(os.path.abspath(path)))

    def is_excluded(self, path: str) -> bool:
        config = self.config_for(path)
        # --exclude replaces the file's `exclude`; the file's `extend-exclude` always applies
        file_globs = config.extend_exclude if self.overrides.exclude is not None else config.exclude + config.extend_exclude
        rel = _relative(path, config.root)
        if any(glob_matches(g, rel) for g in file_globs):
            return True
        cli_globs = (self.overrides.exclude or ()) + self.overrides.extend_exclude
        if cli_globs:
            rel_cwd = _relative(path, self.cwd)
            return any(glob_matches(g, rel_cwd) for g in cli_globs)
        return False

    def settings_for(self, path: str) -> Settings:
        from gradlint.rules.registry import expand

        config = self.config_for(path)
        rel = _relative(path, config.root)
        ignored = tuple(code for glob, codes in config.per_file_ignores if glob_matches(glob, rel) for code in codes)
        key = (config.path, ignored)
        settings = self._settings.get(key)
        if settings is None:
            select = _apply_layer(_apply_layer(None, config.layer), self.overrides.layer)
            timeout = self.overrides.file_timeout or config.file_timeout or DEFAULT_FILE_TIMEOUT
            settings = Settings(select=frozenset(select - expand(ignored)), wrappers=config.wrappers, file_timeout=timeout)
            self._settings[key] = settings
        return settings


def _apply_layer(base: Optional[set[str]], layer: Layer) -> set[str]:
    """ruff's layering: a layer with `select` starts afresh; extend-select adds; ignore removes."""
    from gradlint.rules.registry import default_codes, expand

    if layer.select is not None:
        chosen = expand(layer.select)
    else:
        chosen = set(default_codes()) if base is None else set(base)
    return (chosen | expand(layer.extend_select)) - expand(layer.ignore)


def settings_for_file(path: str) -> Settings:
    """Settings of one file from its nearest pyproject.toml, no command-line overrides.

    For the language server; raises ConfigError on bad configuration.
    """
    return Resolver().settings_for(path)
