"""ruff-style text: `path:line:col: CODE message`, then a one-line summary."""

from __future__ import annotations


def render(run, show_suppressed: bool = False) -> str:
    lines = []
    for error in run.errors():
        lines.append(f"{error.path}:{error.line}:{error.col}: error: {error.message}")
    for finding in run.findings():
        lines.append(f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}")
    summary = run.summary()
    if show_suppressed:
        suppressed = run.suppressed()
        for finding in suppressed:
            lines.append(
                f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message} (suppressed)"
            )
        if suppressed:
            note = f"{len(suppressed)} finding{'s' if len(suppressed) != 1 else ''} suppressed by noqa comments."
            summary = f"{summary} {note}".strip()
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")
