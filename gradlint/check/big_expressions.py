"""Big expressions that hold no gradient event, blanked in the text libcst parses.

libcst needs about 2 KB of memory per character of a statement made of many
small tokens (parse_guard.py): four assignments of 500 KB of `x.y, ` inside a
training loop asked it for gigabytes, and its native parser cannot recover
from a failed allocation (the process aborts).  Such an expression gives the
analysis nothing a loop model reads: no event is spelled on its lines, so no
backward, clear or step sits in it, and a value that large is generated data.
So, like the screen's blanked functions, it is blanked in the text libcst
parses: its characters become spaces (its line ends kept), with an opening
and a closing parenthesis at its ends, an empty tuple.  Every other character
of the file keeps its line and column, so positions, comments and `# noqa`
are read as before.

An expression is blanked when its text is at least MIN_CHARS long, none of its
lines holds a mark of the screen (an event spelling, a call of a function that
holds one) and it is read, not assigned to (`a, b = ...` keeps its targets).
Inside a larger one that holds a mark, its big parts are looked at in turn.
Left alone: strings (one token each, cheap for libcst), f-strings (their
expressions cannot span lines on every Python), slices (`a[1:2]` is no
expression that parentheses can hold) and lines the screen rewrote.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from typing import Optional

# An expression this long is data: libcst would need about 128 MB for it alone.
MIN_CHARS = 64 * 1024

# (a walrus binds a name the analysis may read: its value is looked at instead)
_LEFT_ALONE = (ast.Constant, ast.JoinedStr, ast.Slice, ast.Starred, ast.FormattedValue, ast.NamedExpr)


def without_big_data(source: str, context, prefilter) -> str:
    """`source` with its big expressions that call nothing and spell no event blanked, before
    the guard and the screen read it: their walks over every node of `x.y, x.y, ...` cost more
    than the rest of the check (a minute for 2 MB).  `context`: the check's FileContext (its
    tree of `source` is read); `prefilter`: the spellings of events (gradlint/check/prefilter.py)."""
    if len(source) < MIN_CHARS or "\r" in source:
        return source
    from gradlint.parse.parse_guard import long_line

    if long_line(source, context.path) is not None:
        return source  # refused before any parse: CPython's ast of such a line takes gigabytes
    try:
        tree = context.tree(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return source  # the guard words it
    lines = source.split("\n")

    def holds(node: ast.expr, span: tuple) -> bool:
        segment = _segment(lines, span)
        return "(" in segment or prefilter.may_hold_events(segment)

    return _blanked(source, lines, tree, holds)


def blank_big_expressions(text: str, source_lines: list[str], tree: ast.Module, marks: list[int]) -> str:
    """`text` (the screen's output: `source_lines` joined, some lines blanked or rewritten) with
    its big expressions that hold no mark blanked; `tree`: the ast of the source; `marks`: the
    sorted lines holding a mark.  `text` itself when there is none."""

    def holds(node: ast.expr, span: tuple) -> bool:
        return _marked(marks, span[0], span[2])

    return _blanked(text, source_lines, tree, holds)


def _segment(lines: list[str], span: tuple) -> str:
    start_line, start_col, end_line, end_col = span
    if start_line == end_line:
        return lines[start_line - 1][start_col:end_col]
    return "\n".join([lines[start_line - 1][start_col:]] + lines[start_line:end_line - 1] + [lines[end_line - 1][:end_col]])


def _blanked(text: str, source_lines: list[str], tree: ast.Module, holds) -> str:
    if len(text) < MIN_CHARS:
        return text
    lines = text.split("\n")
    if len(lines) != len(source_lines):
        return text
    spans = []
    for statement in _big_statements(tree, source_lines):
        for node, span in _big_values(statement, source_lines, holds):
            if all(lines[n] is source_lines[n] or lines[n] == source_lines[n]
                                        for n in range(span[0] - 1, span[2])):
                spans.append(span)
    if not spans:
        return text
    for start_line, start_col, end_line, end_col in spans:
        _blank(lines, start_line, start_col, end_line, end_col)
    return "\n".join(lines)


def _big_statements(tree: ast.Module, source_lines: list[str]):
    """The simple statements (and the headers of compound ones) whose text is at least MIN_CHARS."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        if _size(node, source_lines) < MIN_CHARS:
            continue
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            body = getattr(node, name, None)
            if isinstance(body, list):
                stack.extend(reversed([child for child in body if isinstance(child, (ast.stmt, ast.excepthandler))]))


def _big_values(statement: ast.AST, source_lines: list[str], holds):
    """(node, span) of the outermost big expressions of the statement's own expressions (not of
    the statements in its body) that are read and that `holds(node, span)` finds nothing in."""
    stack = [child.value if isinstance(child, ast.keyword) else child for child in _own_children(statement)]
    while stack:
        node = stack.pop()
        if not isinstance(node, ast.expr) or _size(node, source_lines) < MIN_CHARS:
            continue
        if isinstance(node, (ast.JoinedStr, ast.Constant)):
            continue
        if not isinstance(node, _LEFT_ALONE) and _reads(node):
            span = _span(node, source_lines)
            if span is not None and not holds(node, span):
                yield node, span
                continue
        stack.extend(child.value if isinstance(child, ast.keyword) else child
                     for child in ast.iter_child_nodes(node) if isinstance(child, (ast.expr, ast.keyword)))


def _own_children(statement: ast.AST):
    for name, value in ast.iter_fields(statement):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield child


def _reads(node: ast.expr) -> bool:
    context = getattr(node, "ctx", None)
    return context is None or isinstance(context, ast.Load)


def _marked(marks: list[int], first: int, last: int) -> bool:
    at = bisect_left(marks, first)
    return at < len(marks) and marks[at] <= last


def _size(node: ast.AST, source_lines: list[str]) -> int:
    """About the node's length in characters (bytes on its first and last line): enough to
    tell a big one from a small one."""
    first, last = node.lineno, getattr(node, "end_lineno", None) or node.lineno
    if first == last:
        return (getattr(node, "end_col_offset", None) or 0) - node.col_offset
    inner = sum(len(source_lines[n]) + 1 for n in range(first, last - 1)) if last - first < 4096 else MIN_CHARS
    return len(source_lines[first - 1]) - node.col_offset + inner + (getattr(node, "end_col_offset", None) or 0)


def _span(node: ast.expr, source_lines: list[str]) -> Optional[tuple[int, int, int, int]]:
    """(first line, first column, last line, end column) in characters, or None."""
    end_line, end_col = node.end_lineno, node.end_col_offset
    if end_line is None or end_col is None:
        return None
    start_col = _characters(source_lines[node.lineno - 1], node.col_offset)
    end_col = _characters(source_lines[end_line - 1], end_col)
    if (node.lineno, start_col) >= (end_line, end_col - 1):
        return None
    return node.lineno, start_col, end_line, end_col


def _characters(line: str, byte_offset: int) -> int:
    """ast's UTF-8 byte column as a column in characters."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", "replace"))


def _blank(lines: list[str], start_line: int, start_col: int, end_line: int, end_col: int) -> None:
    """Spaces in place of the characters of the span, "(" at its start and ")" at its end."""
    if start_line == end_line:
        line = lines[start_line - 1]
        lines[start_line - 1] = line[:start_col] + "(" + " " * (end_col - start_col - 2) + ")" + line[end_col:]
        return
    first = lines[start_line - 1]
    lines[start_line - 1] = first[:start_col] + "(" + " " * (len(first) - start_col - 1)
    for n in range(start_line, end_line - 1):
        lines[n] = " " * len(lines[n])
    last = lines[end_line - 1]
    lines[end_line - 1] = " " * (end_col - 1) + ")" + last[end_col:]
