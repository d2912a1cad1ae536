"""`--output-format github`: GitHub Actions workflow commands, one per line.

    ::error file=train.py,line=8,col=5,endLine=8,endColumn=20,title=GL002::message

(endColumn only when the finding is on one line, as GitHub requires.)

A notebook's annotation points at the line of the .ipynb file that holds
the finding's source line (no column: the JSON's columns are not the
code's), and its message starts with the cell, `cell 3, line 4, column 5:`.

Bug rules are `error` annotations, advice rules `warning`; a file that could
not be checked is an `error` titled with its kind (`syntax-error`).
"""

from __future__ import annotations

from gradlint.core.display import shown
from gradlint.report.meta import info


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, path: str, line: int, col, title: str, message: str, end=None) -> str:
    props = [f"file={_prop(shown(path))}", f"line={line}"] + ([f"col={col}"] if col is not None else [])
    if end is not None:
        props.append(f"endLine={end[0]}")
        if end[0] == line:
            props.append(f"endColumn={end[1]}")
    props.append(f"title={_prop(title)}")
    return f"::{level} {','.join(props)}::{_data(message)}"


def render(run, show_suppressed: bool = False) -> str:
    lines = []
    for error in run.errors():
        if error.cell is not None:
            lines.append(_command("error", error.path, error.cell.file_line, None, f"gradlint {error.kind}",
                                  f"{_in_cell(error.cell)}: {error.message}"))
            continue
        lines.append(_command("error", error.path, error.line, error.col, f"gradlint {error.kind}", error.message))
    for finding in run.findings():
        meta = info(finding.code)
        level = "error" if meta.default else "warning"
        related = "".join(f"\n  {r.label(finding.cell, finding.path)}: {r.message}" for r in finding.related)
        if finding.cell is not None:
            lines.append(_command(level, finding.path, finding.cell.file_line, None, finding.code,
                                  f"{_in_cell(finding.cell)}: {finding.message}{related}"))
            continue
        span = finding.span
        end = (span.end_line, span.end_col) if span.end_line >= span.line else None
        lines.append(
            _command(level, finding.path, span.line, span.col, finding.code,
                     finding.message + related, end)
        )
    return "\n".join(lines) + ("\n" if lines else "")


def _in_cell(cell) -> str:
    return f"cell {cell.cell}, line {cell.span.line}, column {cell.span.col}"
