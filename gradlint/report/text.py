"""ruff-style text: `path:line:col: CODE message`, then a one-line summary."""

from __future__ import annotations

from gradlint.findings import SYNTAX_ERROR


def error_line(error) -> str:
    """A syntax error has a place in the file; the other kinds (a missing or
    unreadable path, a binary file, an internal error) concern the whole
    path: `error: PATH: no such file or directory`."""
    if error.kind == SYNTAX_ERROR:
        return f"{error.path}:{error.line}:{error.col}: error: {error.message}"
    return f"error: {error.path}: {error.message}"


def render(run, show_suppressed: bool = False) -> str:
    lines = [error_line(error) for error in run.errors()]
    findings = [(f, "") for f in run.findings()]
    suppressed = run.suppressed() if show_suppressed else []
    # One list in file, line and column order: a suppressed finding sits where it is in the file.
    rows = sorted(findings + [(f, " (suppressed)") for f in suppressed], key=lambda row: row[0].sort_key())
    for finding, mark in rows:
        lines.append(f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}{mark}")
    summary = run.summary()
    if suppressed:
        note = f"{len(suppressed)} finding{'s' if len(suppressed) != 1 else ''} suppressed by noqa comments."
        summary = f"{summary} {note}".strip()
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")
