"""`# expect: GL004` marks in fixtures and rule samples."""

from __future__ import annotations

import re

_MARK = re.compile(r"#\s*expect:\s*(?P<codes>GL\d+(?:\s*,\s*GL\d+)*)")


def expected_marks(source: str) -> list[tuple[int, str]]:
    marks = []
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARK.search(line)
        if match:
            for code in match.group("codes").split(","):
                marks.append((number, code.strip()))
    return sorted(marks)


def found_marks(findings) -> list[tuple[int, str]]:
    return sorted((f.span.line, f.code) for f in findings)
