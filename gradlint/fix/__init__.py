"""Repairs for findings, as text edits that report formats and editors can apply.

The repairs gradlint offers are all one kind: a statement in the wrong
place is moved to where it belongs (a clear after the step, a clip before
the step, a scheduler after the optimizer).  A move is offered only when
both statements sit alone on their lines at the same indentation, so the
edit cannot change anything else.
"""

from __future__ import annotations

from typing import Optional

from gradlint.findings import Edit, Fix, Span
from gradlint.model.event import Event


def _lone_statement(lines: list[str], event: Event) -> bool:
    """The event is a whole single-line statement (a trailing comment is fine)."""
    span = event.span
    if span.line != span.end_line or not (1 <= span.line <= len(lines)):
        return False
    line = lines[span.line - 1]
    indent = len(line) - len(line.lstrip())
    if span.col - 1 != indent:
        return False
    rest = line[span.end_col - 1 :].strip()
    return rest == "" or rest.startswith("#")


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def move(lines: list[str], moved: Event, anchor: Event, after: bool, description: str) -> Optional[Fix]:
    """Move `moved`'s line to just after (or before) `anchor`'s line, or None when unsafe.

    `lines` is the file's source split with line ends kept (FileModel.lines)."""
    if moved.via or anchor.via:  # inside a helper: the two may not share a block
        return None
    if not (_lone_statement(lines, moved) and _lone_statement(lines, anchor)):
        return None
    m, a = moved.span.line, anchor.span.line
    if m == a or _indent(lines[m - 1]) != _indent(lines[a - 1]):
        return None
    low, high = sorted((m, a))
    if any(_indent(lines[i - 1]) != _indent(lines[m - 1]) and lines[i - 1].strip() for i in range(low + 1, high)):
        return None  # something in between opens or closes a block
    text = lines[m - 1] if lines[m - 1].endswith("\n") else lines[m - 1] + "\n"
    delete = Edit(Span(m, 1, m + 1, 1), "")
    target = a + 1 if after else a
    insert = Edit(Span(target, 1, target, 1), text)
    if target in (m, m + 1):
        return None  # already there
    return Fix(description, (delete, insert) if m > target else (insert, delete))


def apply(source: str, fix: Fix) -> str:
    """Apply a Fix's edits (positions refer to the original source)."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(line: int, col: int) -> int:
        if line > len(lines):
            return len(source)
        return offsets[line - 1] + col - 1

    out = source
    for edit in sorted(fix.edits, key=lambda e: (e.span.line, e.span.col), reverse=True):
        start, end = offset(edit.span.line, edit.span.col), offset(edit.span.end_line, edit.span.end_col)
        out = out[:start] + edit.new_text + out[end:]
    return out
