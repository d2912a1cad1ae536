"""`--output-format sarif`: SARIF 2.1.0 (one run), for GitHub code scanning and other viewers.

- tool.driver.rules: every gradlint code with its summary, rationale and
  documentation link; results point at them by ruleId and ruleIndex.
- results: level `warning` for bug rules, `note` for advice; the related
  events (the backward, the step) as relatedLocations, the message's
  `(line N)` for each made a link to it, `([line N](id))`; a Finding's Fix as a SARIF fix.
- Files that could not be checked are not results (they are no finding on
  the code) but toolExecutionNotifications of the invocation, level error,
  with the kind (`syntax-error`, `read-error`, `internal-error`) as
  descriptor id; an internal error or a timeout sets executionSuccessful to false.
- a gradient call the analysis does not follow is a toolExecutionNotification
  too, level `note`, descriptor id `not-followed`, its reason as the message:
  where the checker is blind, never a result, never a change to the exit code.
- with --show-suppressed, suppressed findings are results carrying an
  `inSource` suppression (viewers show them as dismissed).

Paths given relative on the command line stay relative URIs against
%SRCROOT% (the working directory), which is what code scanning expects.

In a notebook a region is the line of the .ipynb file that holds the source
line (no columns: the JSON's are not the code's); the location's
`properties` hold the cell, line and column in the cell, and the message
starts with them (`cell 3, line 4, column 5: ...`), which viewers show.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gradlint import REPOSITORY_URL
from gradlint.core.findings import TOOL_FAILURES
from gradlint.report.meta import all_infos, info, path_uri

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = REPOSITORY_URL


def _region(span) -> dict:
    return {"startLine": span.line, "startColumn": span.col, "endLine": span.end_line, "endColumn": span.end_col}


def _location(path: str, span, cell=None, **extra) -> dict:
    if cell is None:
        location = {"physicalLocation": {"artifactLocation": _artifact(path), "region": _region(span)}}
    else:
        location = {
            "physicalLocation": {"artifactLocation": _artifact(path), "region": {"startLine": cell.file_line}},
            "properties": {"cell": cell.cell, **_region(cell.span)},
        }
    location.update(extra)
    return location


def _in_cell(cell) -> str:
    return f"cell {cell.cell}, line {cell.span.line}, column {cell.span.col}: " if cell is not None else ""


def _artifact(path: str) -> dict:
    uri = path_uri(path)
    artifact = {"uri": uri}
    if not Path(path).is_absolute() and path != "-":
        artifact["uriBaseId"] = "%SRCROOT%"
    return artifact


def _rule_descriptor(meta) -> dict:
    descriptor = {
        "id": meta.code,
        "name": meta.name,
        "shortDescription": {"text": meta.summary},
        "helpUri": meta.docs_url,
        "help": {
            "text": f"{meta.summary}\n\n{meta.rationale}\n\nSee {meta.docs_url}".strip(),
            "markdown": f"**{meta.code} {meta.name}**: {meta.summary}\n\n{meta.rationale}\n\n[Documentation]({meta.docs_url})",
        },
        "defaultConfiguration": {"level": "warning" if meta.default else "note"},
        "properties": {"tags": ["pytorch", "training-loop", "correctness" if meta.default else "advice"]},
    }
    if meta.rationale:
        descriptor["fullDescription"] = {"text": meta.rationale}
    return descriptor


def _fix(finding) -> dict:
    fix = finding.fix
    changes: dict[str, list] = {}
    for edit in fix.edits:
        changes.setdefault(finding.path, []).append(
            {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.new_text}}
        )
    return {
        "description": {"text": fix.description},
        "properties": {"applicability": fix.applicability},
        "artifactChanges": [
            {"artifactLocation": _artifact(path), "replacements": replacements} for path, replacements in changes.items()
        ],
    }


def _linked_message(finding) -> str:
    """The message with each related event's `(line N)` made a link to its relatedLocation,
    `([line N](id))`; the events the message does not name are linked at its end."""
    text, unnamed = finding.message, []
    for number, related in enumerate(finding.related, start=1):
        label = related.label(finding.cell, finding.path)  # `line 7`; in a notebook `cell 2, line 3` for another cell
        named = f"({label})"
        if named in text:
            text = text.replace(named, f"([{label}]({number}))", 1)
        else:
            unnamed.append(f"[{label}]({number})")
    text = _in_cell(finding.cell) + text
    return f"{text} ({'; '.join(unnamed)})" if unnamed else text


def _result(finding, index: dict[str, int], suppressed: bool = False) -> dict:
    meta = info(finding.code)
    related = [
        _location(r.path or finding.path, r.span, r.cell, id=number, message={"text": r.message})
        for number, r in enumerate(finding.related, start=1)
    ]
    result = {
        "ruleId": finding.code,
        "level": "warning" if meta.default else "note",
        "message": {"text": _linked_message(finding)},
        "locations": [_location(finding.path, finding.span, finding.cell)],
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    if related:
        result["relatedLocations"] = related
    if finding.fix is not None:
        result["fixes"] = [_fix(finding)]
    if suppressed:
        result["suppressions"] = [{"kind": "inSource"}]
    return result


def _notification(error) -> dict:
    from gradlint.core.findings import Span

    return {
        "level": "error",
        "message": {"text": _in_cell(error.cell) + error.message},
        "descriptor": {"id": error.kind},
        "locations": [_location(error.path, Span(error.line, error.col, error.line, error.col), error.cell)],
    }


NOT_FOLLOWED_ID = "not-followed"


def _blind_note(verdict) -> dict:
    from gradlint.core.findings import Span

    line, col = verdict.call.line, verdict.call.col
    return {
        "level": "note",
        "message": {"text": f"gradient call not followed: {verdict.reason}"},
        "descriptor": {"id": NOT_FOLLOWED_ID},
        "locations": [_location(verdict.path, Span(line, col, line, col), None)],
    }


def build(run, show_suppressed: bool = False) -> dict:
    from gradlint import __version__

    infos = all_infos()
    index = {meta.code: number for number, meta in enumerate(infos)}
    rows = [(f, False) for f in run.findings()]
    if show_suppressed:  # in file and line order with the others, not after them
        rows = sorted(rows + [(f, True) for f in run.suppressed()], key=lambda row: row[0].sort_key())
    results = [_result(f, index, suppressed=hidden) for f, hidden in rows]
    errors = run.errors()
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gradlint",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": [_rule_descriptor(meta) for meta in infos],
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not any(e.kind in TOOL_FAILURES for e in errors),
                        "toolExecutionNotifications": [_notification(e) for e in errors]
                        + [_blind_note(v) for v in run.not_followed()],
                    }
                ],
                "results": results,
            }
        ],
    }


def render(run, show_suppressed: bool = False) -> str:
    return json.dumps(build(run, show_suppressed), indent=2) + "\n"
