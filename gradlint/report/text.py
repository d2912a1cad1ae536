"""ruff-style text: `path:line:col: CODE message`, then a one-line summary."""

from __future__ import annotations


def render(run) -> str:
    lines = []
    for error in run.errors():
        lines.append(f"{error.path}:{error.line}:{error.col}: error: {error.message}")
    for finding in run.findings():
        lines.append(f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}")
    summary = run.summary()
    if summary:
        lines.append(summary)
    return "\n".join(lines) + ("\n" if lines else "")
