"""`--output-format json`: one JSON object.

    {"version": 1, "files_checked": N,
     "findings": [{path, line, column, end_line, end_column, cell, code, name, message,
                   severity, url, related: [{path, line, column, end_line, end_column, cell, message}],
                   fix: null | {description, applicability: "safe"|"unsafe",
                                edits: [{line, column, end_line, end_column, new_text}]}}],
     "errors": [{path, kind, message, line, column, cell}],
     "suppressed": [...],          (only with --show-suppressed)
     "not_followed": [{path, line, column, reason}]}

"not_followed" notes the calls that can be gradient events (a backward, a step, a clear, a
clip, an unscale) which the analysis does not follow, with the reason in a few fixed words
(docs/what-it-understands.md): no finding, and no change to the exit code.

Lines and columns are 1-based (as in the text format); end_column is the
column just after the last character.  `cell` is null except in a notebook,
where it is the cell (counted from 1 over every cell, markdown included) and
the lines and columns are those in the cell, as in ruff's JSON.  A notebook's
findings carry no fix (`fix: null`): their edits count lines of the joined
code cells, which no tool could apply to the .ipynb JSON; `gradlint --fix
nb.ipynb` edits the cells.  A related location's `path` is the finding's own,
or another file of the project whose function the loop calls.
"""

from __future__ import annotations

import json

from gradlint.report.meta import brief

FORMAT_VERSION = 1


def _span(span) -> dict:
    return {"line": span.line, "column": span.col, "end_line": span.end_line, "end_column": span.end_col}


def _place(item) -> dict:
    """Line and column, in a notebook those in the cell, and the cell (null outside notebooks)."""
    cell = item.cell
    return {**_span(cell.span), "cell": cell.cell} if cell is not None else {**_span(item.span), "cell": None}


def finding_dict(finding) -> dict:
    meta = brief(finding.code)
    out = {
        "path": finding.path,
        **_place(finding),
        "code": finding.code,
        "name": meta.name,
        "message": finding.message,
        "severity": meta.severity,
        "url": meta.docs_url,
        "related": [{"path": r.path or finding.path, **_place(r), "message": r.message} for r in finding.related],
        "fix": None,
    }
    if finding.fix is not None:
        out["fix"] = {
            "description": finding.fix.description,
            "applicability": finding.fix.applicability,
            "edits": [{**_span(e.span), "new_text": e.new_text} for e in finding.fix.edits],
        }
    return out


def error_dict(error) -> dict:
    cell = error.cell
    line, column = (cell.span.line, cell.span.col) if cell is not None else (error.line, error.col)
    return {
        "path": error.path, "kind": error.kind, "message": error.message, "line": line, "column": column,
        "cell": cell.cell if cell is not None else None,
    }


def render(run, show_suppressed: bool = False) -> str:
    data = {
        "version": FORMAT_VERSION,
        "files_checked": run.files_checked,
        "files_not_checked": run.files_not_checked,  # the paths in "errors"
        "findings": [finding_dict(f) for f in run.findings()],
        "errors": [error_dict(e) for e in run.errors()],
    }
    if show_suppressed:
        data["suppressed"] = [finding_dict(f) for f in run.suppressed()]
    data["not_followed"] = [
        {"path": v.path, "line": v.call.line, "column": v.call.col, "reason": v.reason} for v in run.not_followed()
    ]
    return json.dumps(data, indent=2) + "\n"
