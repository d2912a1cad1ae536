"""One file in, findings out.

`check_source` is the single entry point every side uses (CLI, language
server, verifier): text and a path in, a FileResult out.  It never raises
for bad input: a file that does not parse becomes a FileError.
"""

from __future__ import annotations

import traceback

from gradlint.findings import (
    INTERNAL_ERROR,
    READ_ERROR,
    SYNTAX_ERROR,
    FileError,
    FileResult,
    Finding,
    Related,
)
from gradlint.settings import Settings


def decode(data: bytes, path: str) -> tuple[str | None, FileError | None]:
    """Source bytes -> text, honouring a PEP 263 coding line; a FileError when it is not text."""
    if b"\x00" in data:
        return None, FileError(path, READ_ERROR, "binary file (contains NUL bytes), not Python source")
    try:
        import io
        import tokenize

        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), None
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        return None, FileError(path, READ_ERROR, f"not valid UTF-8 or declared encoding: {reason}")


def check_source(source: str | bytes, path: str, settings: Settings | None = None) -> FileResult:
    settings = settings or Settings.default()
    if isinstance(source, bytes):
        text, error = decode(source, path)
        if error is not None:
            return FileResult(path, errors=[error])
        source = text
    try:
        findings = _analyse(source, path, settings)
    except _ParseFailure as failure:
        return FileResult(path, errors=[failure.error])
    except RecursionError:
        return FileResult(path, errors=[FileError(path, SYNTAX_ERROR, "too deeply nested to analyse")])
    except Exception as exc:  # a bug in gradlint: name the file and the crash, keep going
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = f"internal error: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        return FileResult(path, errors=[FileError(path, INTERNAL_ERROR, message)])
    from gradlint.suppress import apply_suppressions

    kept, suppressed = apply_suppressions(findings, source)
    return FileResult(path, findings=kept, suppressed=suppressed)


class _ParseFailure(Exception):
    def __init__(self, error: FileError):
        self.error = error


def _parse(source: str, path: str):
    import libcst as cst

    try:
        return cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        message = f"syntax error: {exc.message}"
        raise _ParseFailure(FileError(path, SYNTAX_ERROR, message, exc.raw_line, exc.raw_column + 1))


def _analyse(source: str, path: str, settings: Settings) -> list[Finding]:
    if not source.strip():
        return []
    from gradlint.model.loops import build
    from gradlint.rules.registry import all_rules

    module = _parse(source, path)
    model = build(module, path, source, settings.wrappers)
    if not model.loops and not model.lightning_clips:
        return []
    found: dict[tuple, Finding] = {}
    for rule in all_rules():
        if rule.code not in settings.select:
            continue
        for raw in rule.check(model):
            if raw.loop is not None and raw.event.key in raw.loop.foreign:
                continue  # an inner loop reports its own events
            finding = Finding(
                path=path,
                code=raw.code,
                message=raw.message,
                span=raw.event.span,
                related=tuple(Related(e.span, why) for e, why in raw.related),
            )
            found.setdefault((finding.code, finding.span), finding)
    return sorted(found.values(), key=Finding.sort_key)


# --- many files ------------------------------------------------------------------

import os  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

MAX_FILE_BYTES = 8 * 1024 * 1024  # a generated or vendored monster: say so, do not stall the run


def read_source(path: str) -> tuple[bytes | None, FileError | None]:
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            return None, FileError(path, READ_ERROR, f"file too large to check ({size // 1024} KiB > {MAX_FILE_BYTES // 1024} KiB)")
        with open(path, "rb") as handle:
            return handle.read(), None
    except OSError as exc:
        return None, FileError(path, READ_ERROR, f"cannot read file: {exc.strerror or exc}")


def check_file(path: str, settings: Settings) -> FileResult:
    data, error = read_source(path)
    if error is not None:
        return FileResult(path, errors=[error])
    return check_source(data, path, settings)


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    discovery_errors: list[FileError] = field(default_factory=list)

    def findings(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.findings), key=Finding.sort_key)

    def suppressed(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.suppressed), key=Finding.sort_key)

    def errors(self) -> list[FileError]:
        errors = self.discovery_errors + [e for r in self.results for e in r.errors]
        return sorted(errors, key=lambda e: (e.path, e.line, e.col))

    @property
    def files_checked(self) -> int:
        return len(self.results)

    def summary(self) -> str:
        findings, errors = self.findings(), self.errors()
        if not findings and not errors:
            return ""
        files = len({f.path for f in findings})
        text = (
            f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} in {files} "
            f"file{'s' if files != 1 else ''} ({self.files_checked} file{'s' if self.files_checked != 1 else ''} checked)."
        )
        if errors:
            text += f" {len(errors)} could not be checked."
        return text

    def exit_code(self) -> int:
        """0 clean, 1 findings or unreadable/unparsable input, 2 an internal error."""
        if any(e.kind == INTERNAL_ERROR for e in self.errors()):
            return 2
        return 1 if self.findings() or self.errors() else 0


@dataclass(frozen=True)
class RunOptions:
    jobs: int | None = None  # None: the core count (one process for a handful of files)
    cache_dir: str | None = None  # None: no cache
    

def check_files(tasks: list[tuple[str, Settings]], options: RunOptions = RunOptions()) -> list[FileResult]:
    """Check each (path, settings) pair; results in the order given.

    This is the seam for speed work (prefilter, process pool, cache): callers
    only see FileResults.
    """
    return [check_file(path, settings) for path, settings in tasks]


def check_paths(paths: list[str], settings: Settings, options: RunOptions = RunOptions()) -> RunResult:
    """Discover and check with one Settings for every file (tests and simple callers)."""
    from gradlint.discover import discover

    found = discover(paths)
    results = check_files([(path, settings) for path in found.files], options)
    return RunResult(sorted(results, key=lambda r: r.path), found.errors)
