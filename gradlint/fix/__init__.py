"""Repairs for findings, as text edits that report formats and editors can apply.

Two kinds of repair: a statement in the wrong place is moved to where it
belongs (a clear after the step, a clip before the step, a scheduler after
the optimizer), or a missing call is inserted (a clear, an unscale).  The
unit is always a whole statement (statements.py): several lines, comments
on them and a trailing comment move together, re-indented for the block
they land in.  A statement never moves out of its block, and never into a
loop it was not in (that would change how often it runs): it then lands
before or after the statement of its own block that holds the anchor.

Each Fix says whether it is safe (the behaviour is surely what the rule
describes) or unsafe (a name had to be chosen; a human should look).
Edits never cross a line boundary needlessly: an insertion after a
statement is placed at the end of its last line, so that a notebook can
map every edit to one cell.
"""

from __future__ import annotations

from typing import Optional

from gradlint.core import source_lines
from gradlint.parse.file_context import NOT_INDEXED, FileContext
from gradlint.core.findings import SAFE, UNSAFE, Edit, Fix, Span
from gradlint.fix.statements import Statement, Statements
from gradlint.model.event import Event

__all__ = ["SAFE", "UNSAFE", "move", "insert", "apply", "apply_all", "statements_of"]


def statements_of(context: FileContext) -> Optional[Statements]:
    """The statements of the check's source (None when it does not parse), indexed once per
    check and kept in its FileContext: every finding of a file plans its fix on them, and
    indexing the whole text again per finding made the fixes of a file with thousands of
    findings quadratic."""
    if not isinstance(context, FileContext):
        raise TypeError(f"the check's FileContext (FileModel.context), not {type(context).__name__}")
    if context.statements is NOT_INDEXED:
        try:
            context.statements = Statements(context.source, context.fix_tree(), context.lines)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            context.statements = None
    return context.statements


def _statement(found: Statements, event: Event) -> Optional[Statement]:
    return found.at(event.span.line, event.span.col)


def _target(found: Statements, home: Statement, anchor: Statement) -> Optional[Statement]:
    """Where a statement of block `home.chain` lands next to `anchor`: the anchor itself when
    its block is `home`'s or inside it through ifs and withs only; else the statement of
    `home`'s block that holds the anchor (never into a loop, a def or an except)."""
    depth = len(home.chain)
    if anchor.chain[:depth] != home.chain:
        return None  # the anchor is outside the moved statement's block
    if all(kind == "block" for _, _, kind in anchor.chain[depth:]):
        return anchor
    return found.in_block(anchor, home.chain)


def _reindent(text: str, old: str, new: str) -> Optional[str]:
    if old == new:
        return text
    if '"""' in text or "'''" in text:
        return None  # a string spanning lines would change
    out = []
    for line in source_lines.lines(text, keepends=True):
        if line.strip() and not line.startswith(old):
            return None
        out.append(new + line[len(old) :] if line.strip() else line)
    return "".join(out)


def _insertion(found: Statements, target: Statement, text: str, after: bool) -> Edit:
    """Insert whole lines `text` (ending in a newline) before or after the target statement."""
    if not after:
        return Edit(Span(target.lead, 1, target.lead, 1), text)  # above the comments that lead it
    last = found.lines[target.last - 1]
    content = last.rstrip("\r\n")
    end = len(content) + 1
    return Edit(Span(target.last, end, target.last, end), _eol(found.lines, target.last) + text.rstrip("\r\n"))


def _eol(lines: list[str], number: int) -> str:
    """The line end of line `number`; for a last line without one, the first line's."""
    for line in (lines[number - 1], lines[0]):
        content = line.rstrip("\r\n")
        if line[len(content) :]:
            return line[len(content) :]
    return "\n"


def move(
    context: FileContext, moved: Event, anchor: Event, after: bool, description: str, applicability: str = SAFE
) -> Optional[Fix]:
    """Move `moved`'s statement to just after (or before) `anchor`'s, or None when unsafe.

    `context` is the check's FileContext (FileModel.context): the source and its statements."""
    if moved.via != anchor.via:  # one inside a helper the other calls: not one block
        return None
    found = statements_of(context)
    if found is None:
        return None
    # a rule plans the same move once per walk through the loop (two or more per finding)
    key = (moved.span, anchor.span, moved.via, after, description, applicability)
    if key not in found.moves:
        found.moves[key] = _move(found, moved, anchor, after, description, applicability)
    return found.moves[key]


def _move(found: Statements, moved: Event, anchor: Event, after: bool, description: str, applicability: str):
    home, there = _statement(found, moved), _statement(found, anchor)
    if home is None or there is None or home.node is there.node:
        return None
    target = _target(found, home, there)
    if target is None or target.node is home.node:
        return None
    if after and home.lead == target.last + 1 and target.indent == home.indent:
        return None  # already there
    if not after and target.lead == home.last + 1 and target.indent == home.indent:
        return None
    if target.first > home.last and found.read_between(
        home.last + 1, target.last if after else target.first - 1, found.assigned(home)
    ):
        return None  # `norm = clip(...)` moved below a line that reads norm
    text = _reindent(found.text(home), home.indent, target.indent)
    if text is None:
        return None
    delete = Edit(Span(home.lead, 1, home.last + 1, 1), "")
    return Fix(description, (delete, _insertion(found, target, text, after)), applicability)


def insert(
    context: FileContext, call: str, anchor: Event, after: bool, description: str, applicability: str
) -> Optional[Fix]:
    """Insert the statement `call` on its own line before or after `anchor`'s statement
    (`context`: the check's FileContext, FileModel.context)."""
    found = statements_of(context)
    if found is None:
        return None
    there = _statement(found, anchor)
    if there is None:
        return None
    line = f"{there.indent}{call}{_eol(found.lines, there.first)}"
    return Fix(description, (_insertion(found, there, line, after),), applicability)


def apply(source: str, fix: Fix) -> str:
    """Apply a Fix's edits (positions refer to the original source)."""
    lines = source_lines.lines(source, keepends=True)
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


def apply_all(source: str, fixes) -> str:
    """Apply the edits of several fixes at once (positions refer to the original source, and
    no two edits overlap: fix/session.py keeps them apart), in one pass over the text."""
    lines = source_lines.lines(source, keepends=True)  # as the positions count them
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(line: int, col: int) -> int:
        if line > len(lines):
            return len(source)
        return offsets[line - 1] + col - 1

    edits = sorted((edit for fix in fixes for edit in fix.edits), key=lambda e: (e.span.line, e.span.col))
    pieces, at = [], 0
    for edit in edits:
        start, end = offset(edit.span.line, edit.span.col), offset(edit.span.end_line, edit.span.end_col)
        pieces.append(source[at:start])
        pieces.append(edit.new_text)
        at = max(at, end)
    pieces.append(source[at:])
    return "".join(pieces)

