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
