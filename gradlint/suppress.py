"""Inline suppressions: `# noqa`, `# noqa: GL001, GL004`, `# gradlint: ignore[GL001]`."""

from __future__ import annotations

import re

from gradlint.findings import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.I)
_IGNORE = re.compile(r"#\s*gradlint:\s*ignore\[(?P<codes>[^\]]*)\]", re.I)

ALL = "*"


def line_suppressions(source: str) -> dict[int, set[str]]:
    """Line number -> suppressed codes (ALL for a bare `# noqa`)."""
    out: dict[int, set[str]] = {}
    if "noqa" not in source and "gradlint:" not in source:
        return out
    for number, line in enumerate(source.splitlines(), start=1):
        if "#" not in line:
            continue
        for match in _NOQA.finditer(line):
            codes = match.group("codes")
            out.setdefault(number, set()).update(
                {c.upper() for c in re.split(r"[\s,]+", codes) if c} if codes else {ALL}
            )
        for match in _IGNORE.finditer(line):
            codes = {c.strip().upper() for c in match.group("codes").split(",") if c.strip()}
            out.setdefault(number, set()).update(codes or {ALL})
    return out


def apply_suppressions(findings: list[Finding], source: str) -> tuple[list[Finding], list[Finding]]:
    table = line_suppressions(source)
    if not table:
        return findings, []
    kept, suppressed = [], []
    for finding in findings:
        codes = table.get(finding.span.line, set())
        (suppressed if ALL in codes or finding.code in codes else kept).append(finding)
    return kept, suppressed
