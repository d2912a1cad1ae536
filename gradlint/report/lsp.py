"""Findings as LSP `Diagnostic` objects (plain JSON-able dicts).

Shared by `--output-format lsp` and the language server, so an editor and
a CI log describe a finding identically.  LSP positions are 0-based; our
spans are 1-based lines and 1-based columns.  (Columns count code points;
LSP's default is UTF-16 units, equal for ASCII source.)  A notebook's
diagnostic has the range in its cell and names the cell in `data`,
`{"cell": 3}` (cells counted from 1 over every cell, as in the other formats).
"""

from __future__ import annotations

from pathlib import Path

from gradlint.core.findings import Finding, Span

SEVERITY_ERROR, SEVERITY_WARNING, SEVERITY_INFORMATION, SEVERITY_HINT = 1, 2, 3, 4


def lsp_range(span: Span) -> dict:
    return {
        "start": {"line": span.line - 1, "character": span.col - 1},
        "end": {"line": span.end_line - 1, "character": span.end_col - 1},
    }


def path_uri(path: str) -> str:
    return Path(path).resolve().as_uri() if path != "-" else "untitled:stdin"


def severity(code: str) -> int:
    """Bugs are warnings (the code runs, it trains badly); advice rules are hints."""
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code().get(code)
    return SEVERITY_WARNING if rule is None or rule.default else SEVERITY_INFORMATION


def to_diagnostic(finding: Finding, uri: str | None = None) -> dict:
    from gradlint.rules.registry import rules_by_code

    uri = uri or path_uri(finding.path)
    rule = rules_by_code().get(finding.code)
    diagnostic = {
        "range": lsp_range(_span(finding)),
        "severity": severity(finding.code),
        "code": finding.code,
        "source": "gradlint",
        "message": finding.message,
        "relatedInformation": [
            {"location": {"uri": path_uri(r.path) if r.path else uri, "range": lsp_range(_span(r))}, "message": r.message}
            for r in finding.related
        ],
    }
    if rule is not None:
        diagnostic["codeDescription"] = {"href": rule.docs_url}
    if finding.cell is not None:
        diagnostic["data"] = {"cell": finding.cell.cell}
    return diagnostic


def _span(item) -> Span:
    """The span to show: in a notebook, the one in the cell."""
    cell = getattr(item, "cell", None)
    return cell.span if cell is not None else item.span
