"""One open buffer in, LSP diagnostics out (plain dicts, no pygls).

The checker does all the work: ``check_source`` on the unsaved text, and
``report.lsp.to_diagnostic`` for each finding, so the editor and
``--output-format lsp`` describe a finding identically.

The rule for a buffer that does not parse (documented in docs/editors.md):
its previous findings are cleared, because their positions
refer to text that no longer exists, and one diagnostic with code
``syntax-error`` marks where parsing stopped.  Findings come back with
the first check after the buffer parses again.

Ranges here are 0-based lines and code-point columns; the server converts
columns to the client's position encoding (UTF-16 by default).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from gradlint.core import source_lines
from gradlint.core.findings import INTERNAL_ERROR, READ_ERROR, SYNTAX_ERROR, FileError, Finding
from gradlint.options.settings import Settings

SOURCE = "gradlint"
SEVERITY_ERROR = 1


@dataclass
class DocumentCheck:
    """What one check of one buffer produced."""

    findings: list[Finding] = field(default_factory=list)
    diagnostics: list[dict] = field(default_factory=list)  # findings first, then file errors
    # gradlint's own failures (a rule that raised): logged to the client, never shown as a finding
    internal_errors: list[str] = field(default_factory=list)
    # findings on misplaced calls of other files that this buffer's loops run (not suppressed yet)
    elsewhere: list[Finding] = field(default_factory=list)


def check_document(
    text: str, path: str, uri: str, settings: Settings, memo=None, project=None, context=None
) -> DocumentCheck:
    """`memo` (a gradlint.incremental.DocumentMemo kept per open buffer): what the last checks
    of this buffer parsed, so that an edit re-parses only what it touched; the same result.
    A buffer over the command line's size limit is not analysed, as a file on disk is not.
    `project`: the workspace's index as it is now (gradlint/lsp/workspace.py), or None.
    `context`: the check's FileContext of `text` with `memo` (gradlint/parse/file_context.py), if
    the caller made it (None: the check makes it)."""
    from gradlint.check.elsewhere import is_elsewhere
    from gradlint.check.engine import check_source
    from gradlint.report.lsp import to_diagnostic

    too_large = _too_large(text, path)
    if too_large is not None:
        return DocumentCheck(diagnostics=[error_diagnostic(too_large, text)])
    result = check_source(text, path, settings, memo, project, context)
    # A finding that stands in another module (the misplaced call a loop of this buffer runs,
    # gradlint/check/elsewhere.py) is that file's diagnostic, never one of this buffer's lines.
    own = [f for f in result.findings if not is_elsewhere(f, path)]
    check = DocumentCheck(findings=own, elsewhere=[f for f in result.findings if is_elsewhere(f, path)])
    check.diagnostics = [to_diagnostic(finding, uri) for finding in own]
    for error in result.errors:
        if error.kind == INTERNAL_ERROR:
            check.internal_errors.append(error.message)
        else:  # a syntax error (or undecodable text): the one thing to show for this buffer
            check.diagnostics.append(error_diagnostic(_locate(error, text), text))
    return check


def check_document_apart(text: str, path: str, uri: str, settings: Settings, project_for) -> DocumentCheck:
    """check_document of a big buffer (gradlint/run/pool.py ISOLATED_FROM_BYTES or more), run as the
    command line runs a big file's check: in a child process whose memory is bounded as a
    worker's, without a memo (its trees would stay in the child).  libcst's native parser aborts
    its process when an allocation fails: the child's death is the command line's error for the
    file, shown on the buffer, and the server goes on.  `project_for`: the workspace index's."""
    from gradlint.run.pool import ChildDied, apart, crashed

    if _too_large(text, path) is not None:
        return check_document(text, path, uri, settings)  # the size limit's diagnostic: no analysis

    def check() -> DocumentCheck:
        return check_document(text, path, uri, settings, project=project_for(path, text, None))

    try:
        return apart(len(text), check)
    except ChildDied:
        (error,) = crashed(path, "the worker process checking this file died").errors
        return DocumentCheck(diagnostics=[error_diagnostic(error, text)])


def _too_large(text: str, path: str) -> FileError | None:
    """The command line's error for a file over its size limit (engine.MAX_FILE_BYTES), or None."""
    from gradlint.check import engine

    limit = engine.MAX_FILE_BYTES
    size = len(text)
    if size <= limit and size * 4 > limit:  # only then can the encoded size differ in the verdict
        size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return FileError(path, READ_ERROR, f"file too large to check ({size // 1024} KiB > {limit // 1024} KiB)")


def stopped_check(text: str, path: str, seconds: float) -> DocumentCheck:
    """What a check stopped at its time limit shows: the command line's timeout error."""
    from gradlint.run.pool import stopped

    (error,) = stopped(path, seconds).errors
    return DocumentCheck(diagnostics=[error_diagnostic(error, text)])


def _locate(error: FileError, text: str) -> FileError:
    """Python's own position and message for a syntax error.

    libcst's error positions can be a line or a few columns off (and its
    message lists every expected token); the editor puts a squiggle there,
    so ask CPython's parser, which only runs on a buffer that failed.
    """
    if error.kind != SYNTAX_ERROR:
        return error
    try:
        compile(text, error.path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        if exc.lineno:
            return replace(error, message=f"syntax error: {exc.msg}", line=exc.lineno, col=exc.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    return error  # CPython parses it (libcst lacks some newer syntax): keep libcst's word


def error_diagnostic(error: FileError, text: str) -> dict:
    """A diagnostic at the place where the buffer stopped parsing (one character wide)."""
    line, text_of_line = source_lines.line_at(text, max(error.line, 1))
    length = len(text_of_line)
    start = min(max(error.col - 1, 0), length)
    end = min(start + 1, length)
    return {
        "range": {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}},
        "severity": SEVERITY_ERROR,
        "code": error.kind,
        "source": SOURCE,
        "message": f"gradlint cannot check this file until it parses: {error.message}"
        if error.kind == SYNTAX_ERROR
        else f"gradlint could not check this file: {error.message}",
    }


def finding_at(findings: list[Finding], line: int, character: int) -> Finding | None:
    """The finding whose span holds a 0-based (line, code-point column) position."""
    here = (line + 1, character + 1)
    for finding in findings:
        span = finding.span
        if (span.line, span.col) <= here <= (span.end_line, span.end_col):
            return finding
    return None


def findings_on_lines(findings: list[Finding], first: int, last: int) -> list[Finding]:
    """Findings whose span touches 0-based lines first..last (what a code-action range covers)."""
    return [f for f in findings if f.span.line - 1 <= last and f.span.end_line - 1 >= first]
