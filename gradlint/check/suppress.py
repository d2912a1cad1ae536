"""Inline suppressions: `# noqa`, `# noqa: GL001, GL004`, `# gradlint: ignore[GL001]`.

A directive silences findings reported on its own line.  Findings are
reported on the first line of the call that is the wrong event, so a call
spread over several lines is silenced by a comment on its first line.

Only real comments count (a "# noqa" inside a string does not): the source
is tokenized when it mentions a directive at all, with a line scan as the
fallback for source the tokenizer rejects.  A bare `# noqa` silences every
gradlint finding on the line; `# noqa: E501` (other tools' codes only)
silences none of ours.
"""

from __future__ import annotations

import os
import re
import tokenize
from dataclasses import dataclass
from typing import Iterable, Optional

from gradlint.core import source_lines
from gradlint.core.findings import Finding, Span

_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+|\s+[A-Z]+[0-9]+)*))?(?![\w-])", re.I
)
_IGNORE = re.compile(r"#\s*gradlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?(?![\w-])", re.I)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.I)

ALL = "*"
OUR_PREFIX = "GL"

# Reported by --report-unused-noqa; not a rule of the registry (it is about
# the comments, not the training loop), so --select does not reach it.
UNUSED_CODE = "GL900"
UNUSED_NAME = "unused-noqa"
UNUSED_SUMMARY = "a `# noqa: GLxxx` or `# gradlint: ignore[GLxxx]` comment that silences nothing"


@dataclass(frozen=True)
class Directive:
    line: int
    col: int  # 1-based column of the `#`
    end_col: int  # 1-based, exclusive
    codes: Optional[frozenset[str]]  # None: every code (a bare noqa comment)
    text: str

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def _comments(source: str) -> Iterable[tuple[int, int, str]]:
    """(line, 0-based column, text) of each comment."""
    try:
        for token in tokenize.generate_tokens(source_lines.reader(source)):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.start[1], token.string
        return
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for number, line in enumerate(source_lines.lines(source), start=1):  # rough but never raises
        index = line.find("#")
        if index >= 0:
            yield number, index, line[index:]


def directives(source: str) -> list[Directive]:
    if "noqa" not in source.lower() and "gradlint:" not in source.lower():
        return []
    found = []
    for line, col, comment in _comments(source):
        # a comment may hold several directives (a noqa for another tool, then a gradlint: ignore)
        for regex in (_NOQA, _IGNORE):
            for match in regex.finditer(comment):
                raw = match.group("codes")
                codes = None if raw is None else frozenset(c.upper() for c in _CODE.findall(raw))
                if codes is not None and not codes:  # `# gradlint: ignore[]`
                    codes = None
                found.append(
                    Directive(line, col + match.start() + 1, col + match.end() + 1, codes, match.group(0))
                )
    return found


def line_suppressions(source: str) -> dict[int, set[str]]:
    """Line number -> suppressed codes (ALL for a bare `# noqa`)."""
    out: dict[int, set[str]] = {}
    for directive in directives(source):
        out.setdefault(directive.line, set()).update({ALL} if directive.codes is None else directive.codes)
    return out


def apply_suppressions(findings: list[Finding], source: str) -> tuple[list[Finding], list[Finding]]:
    """(kept, suppressed)."""
    if not findings:
        return findings, []
    table = line_suppressions(source)
    if not table:
        return findings, []
    kept, suppressed = [], []
    for finding in findings:
        codes = table.get(finding.span.line, set())
        (suppressed if ALL in codes or finding.code in codes else kept).append(finding)
    return kept, suppressed


def unused_directives(
    source: str, path: str, suppressed: Iterable[Finding], enabled: frozenset[str]
) -> list[Finding]:
    """GL900 findings for gradlint codes in directives that silenced nothing.

    Only codes that are enabled for this file count (a `# noqa: GL101` in a
    run without GL101 may serve a run with it), and only gradlint's own codes
    (`E501` belongs to another tool).  A bare `# noqa` is never reported: it
    may be meant for any linter.
    """
    from gradlint.rules.registry import rules_by_code

    # (a finding that another file's loop made of a call here is suppressed here too; one of
    # another file that stayed with this file's result silenced nothing of this file)
    used = {(f.span.line, f.code) for f in suppressed if f.path == path or os.path.abspath(f.path) == os.path.abspath(path)}
    known = rules_by_code()
    out = []
    for directive in directives(source):
        if directive.codes is None:
            continue
        ours = sorted(c for c in directive.codes if c.startswith(OUR_PREFIX))
        unknown = [c for c in ours if c not in known and c != UNUSED_CODE]
        unused = [c for c in ours if c in enabled and (directive.line, c) not in used]
        if not unknown and not unused:
            continue
        parts = []
        if unused:
            parts.append(f"unused suppression of {', '.join(unused)} (nothing on this line is reported for it)")
        if unknown:
            parts.append(f"unknown rule code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        out.append(
            Finding(
                path=path,
                code=UNUSED_CODE,
                message=f"{'; '.join(parts)} in `{directive.text.strip()}`",
                span=Span(directive.line, directive.col, directive.line, directive.end_col),
            )
        )
    return out
