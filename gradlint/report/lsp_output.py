"""`--output-format lsp`: {file URI: [LSP Diagnostic, ...]} as one JSON object.

The diagnostics are exactly what the language server publishes
(gradlint.report.lsp.to_diagnostic).  Every checked file has an entry, an
empty list when clean (what publishDiagnostics sends to clear a file).  A
file that could not be checked gets an Error diagnostic whose code is the
kind (`syntax-error`).
"""

from __future__ import annotations

import json

from gradlint.core.findings import Span
from gradlint.report.lsp import SEVERITY_ERROR, lsp_range, path_uri, to_diagnostic


def error_diagnostic(error) -> dict:
    line, col = (error.cell.span.line, error.cell.span.col) if error.cell is not None else (error.line, error.col)
    diagnostic = {
        "range": lsp_range(Span(line, col, line, col)),
        "severity": SEVERITY_ERROR,
        "code": error.kind,
        "source": "gradlint",
        "message": error.message,
    }
    if error.cell is not None:
        diagnostic["data"] = {"cell": error.cell.cell}
    return diagnostic


def render(run, show_suppressed: bool = False) -> str:
    out: dict[str, list] = {}
    for result in run.results:
        out.setdefault(path_uri(result.path), [])
    for error in run.errors():
        out.setdefault(path_uri(error.path), []).append(error_diagnostic(error))
    for finding in run.findings():
        uri = path_uri(finding.path)
        out.setdefault(uri, []).append(to_diagnostic(finding, uri))
    return json.dumps(out, indent=2, sort_keys=True) + "\n"
