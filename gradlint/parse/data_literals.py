"""Big data literals emptied before any parse: a file of one loop and a 7.7 MB list of numbers.

Such a file took 25.8 s and 1.86 GB: CPython's `ast` of the list alone peaks
at 850 MB (a node per number) and libcst needs more.  Yet a list of numbers
assigned to a name can give the analysis nothing: bindings.py records the
value of `DATA = [...]` and reads only names and calls out of it (aliases,
kinds, parameter groups), and no number is a name or a call.  So before the
guard, the screen and both parsers see the file, a display of at least
MIN_CHARS characters made only of numbers (possibly nested lists and tuples
of them) has its inside removed: `DATA = [0.1, ...]` becomes `DATA = []`,
keeping the line ends inside it so that every later line keeps its number.

When is that exact?  The text before the display is unchanged, so where it
starts the tokenizer is in the same state in both texts.  The grammar below
is a strict subset of Python's (decimal numbers with their exact rules:
no `01`, no `1__0`; signs; commas; brackets), so if the emptied text parses
with an empty display at that place, the original parses too, with a display
of constants there, and the rest of both texts is the same code.  It is
emptied only when, in the emptied text's ast, it is the whole value of a
top-level assignment to plain names and nothing but a comment follows it on
its last line: then no node outside it moves, no call, condition or event
text holds it, no loop or helper contains it, no statement a fix moves or
inserts next to ends on its lines, and the only column that changes is the
assignment's own end.  Anything
else (a display inside a string or a call, a subscript, a file that does
not parse) keeps the original text.  Comments, and so `# noqa`, are read
from the original (suppressions), and fixes edit the original: positions
are the same.

Lists of strings are left alone (a vocabulary): only numbers are matched.
No regular expression here repeats a group over the whole literal (Python's
`re` keeps state per repetition: 900 MB for the 7.7 MB list): numbers are
replaced one by one with `0`, and what is left is checked as a string.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from gradlint.parse import python_ast

MIN_CHARS = 64 * 1024  # smaller literals cost the parsers little
MAX_DEPTH = 3  # numbers, rows of numbers, tables of rows


@lru_cache(maxsize=2)
def _runs(min_chars: int) -> re.Pattern:
    """A cheap first look: a run of at least min_chars of the characters a numeric display is made of."""
    return re.compile(r"[\[(][-+0-9.eE_,\[\]() \t\n\f]{%d,}" % (min_chars - 1))


_BRACKET = re.compile(r"[\[\]()]")
_DIGITS = r"\d+(?:_\d+)*"
_EXPONENT = r"(?:[eE][-+]?%s)" % _DIGITS
_FLOAT = r"(?:%s(?:\.(?:%s)?%s?|%s)|\.%s%s?)" % (_DIGITS, _DIGITS, _EXPONENT, _EXPONENT, _DIGITS, _EXPONENT)
_INT = r"(?:[1-9]\d*(?:_\d+)*|0+(?:_0+)*)"  # `01` is a syntax error, `00` is not
_NUMBER = re.compile(r"[-+]?(?:%s|%s)" % (_FLOAT, _INT))
_NO_GAPS = {ord(c): None for c in " \t\n\f"}
_NO_SKELETON = {ord(c): None for c in "0,[]()"}
# Two neighbours the grammar forbids: a comma first in a display or after a comma, and two
# items without a comma between them (`1 2`, `01`, `1.2.3`, a call `(1)(2)`, a subscript `[1][0]`).
_BAD_PAIRS = ("[,", "(,", ",,", "00", "0[", "0(", "]0", "][", "](", ")0", ")[", ")(")
_INNERMOST = re.compile(r"\[[0,]*\]|\([0,]*\)")
_AFTER = re.compile(r"[ \t\f]*(?:#[^\n]*)?(?:\n|$)")


def without_data(source: str, context=None) -> str:
    """`source` with the inside of its big numeric data literals removed, or `source` itself.
    `context`: the check's FileContext, which keeps the tree of the emptied text (usually the
    text every later stage parses)."""
    if len(source) < MIN_CHARS or "\r" in source:
        return source
    regions = list(_displays(source))
    if not regions:
        return source
    kept = _assigned(source, regions, context.tree if context is not None else python_ast.parse)
    return _emptied(source, kept)[0] if kept else source


def _displays(source: str):
    """(start, end) of each numeric display of at least MIN_CHARS characters, in order."""
    runs = _runs(MIN_CHARS)
    position = 0
    while True:
        run = runs.search(source, position)
        if run is None:
            return
        position = run.end()  # a run that is not one display is not looked into again
        depth = 0
        for bracket in _BRACKET.finditer(source, run.start(), run.end()):
            depth += 1 if bracket.group() in "[(" else -1
            if depth == 0 or depth > MAX_DEPTH:
                break
        if depth == 0 and bracket.end() - run.start() >= MIN_CHARS and _numbers_only(source[run.start() : bracket.end()]):
            yield run.start(), bracket.end()
            position = bracket.end()


def _numbers_only(display: str) -> bool:
    """Is `display` a list or tuple display of decimal numbers (nested MAX_DEPTH deep at most),
    written as Python's grammar allows?"""
    compact = _NUMBER.sub("0", display).translate(_NO_GAPS)
    if compact.translate(_NO_SKELETON) or any(pair in compact for pair in _BAD_PAIRS):
        return False
    for _ in range(MAX_DEPTH):  # brackets that match, innermost first
        compact = _INNERMOST.sub("0", compact)
    return compact == "0"


def _emptied(source: str, regions: list[tuple[int, int]]) -> tuple[str, list[int]]:
    """The text with each region's inside replaced by its line ends; where each region starts in it."""
    parts: list[str] = []
    starts: list[int] = []
    last = length = 0
    for start, end in regions:
        parts.append(source[last : start + 1])
        length += start - last
        starts.append(length)
        length += 1
        newlines = "\n" * source.count("\n", start, end)
        parts.append(newlines)
        length += len(newlines)
        last = end - 1
    parts.append(source[last:])
    return "".join(parts), starts


def _assigned(source: str, regions: list[tuple[int, int]], parse) -> list[tuple[int, int]]:
    """The regions that are the whole value of a top-level assignment to plain names, alone on their
    last line (judged in the text with every region emptied: emptying one changes no string, comment or
    bracket around another)."""
    emptied, starts = _emptied(source, regions)
    try:
        tree = parse(emptied)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return []
    values: dict[tuple[int, int], ast.AST] = {}
    for node in tree.body:  # top-level statements: none is inside a loop, a helper or a block a fix moves
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            value = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            value = node.value
        else:
            continue
        if isinstance(value, (ast.List, ast.Tuple)) and not value.elts:
            values[(value.lineno, value.col_offset)] = value
    kept = []
    for (start, end), at in zip(regions, starts):
        line = source.count("\n", 0, start) + 1
        column = len(emptied[emptied.rfind("\n", 0, at) + 1 : at].encode("utf-8"))
        value = values.get((line, column))
        last_line = line + source.count("\n", start, end)
        closing = at + 1 + source.count("\n", start, end)
        if value is not None and value.end_lineno == last_line and _AFTER.match(emptied, closing + 1):
            kept.append((start, end))
    return kept
