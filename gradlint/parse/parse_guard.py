"""Keep libcst's native parser away from input that would crash or stall it.

libcst parses in Rust and recurses once per level of nesting: a few thousand
levels overflow the thread's stack and kill the whole process with SIGSEGV
(Instagram/LibCST #619, #980, #1000), and long trailer chains
(`f()()()...`, `a[0][0]...`) cost it cubic time.  CPython's own parser
rejects the worst of this ("too many nested parentheses", a RecursionError
while building the tree), so before libcst sees a file:

1. ``ast.parse`` it.  A rejection for nesting or size is final: a one-line
   error.  Any other syntax error is left to libcst (it reads grammar newer
   than the running Python, and the engine words its error from CPython's
   anyway), unless a plain bracket count says the text nests deeper than
   CPython would ever accept.
2. Bound the depth libcst would recurse to: the depth of the ast, counting
   each extra operand of ``a and b and ...`` as a level (flat in `ast`,
   nested in libcst, which crashes near 7,000 of them).  Only subtrees
   whose source span could hold more levels than are left are walked: a
   level of nesting costs at least one character of source, so the walk
   stays near the top of ordinary code and costs little.

``check`` returns the error, or None; its ast is shared with the screen and
the position table through the check's FileContext (gradlint/parse/file_context.py).
"""

from __future__ import annotations

import ast
from itertools import accumulate
from typing import Optional

from gradlint.core.findings import SYNTAX_ERROR, FileError

# libcst's native parser handles 6,000 levels on an 8 MiB stack and trailer chains of
# 1,000 in a few seconds; no real file is refused (benchmarks/zero_crashes.py: 8,400 files).
MAX_DEPTH = 1000
# CPython's tokenizer refuses more than 200 open brackets (MAXLEVEL).
MAX_BRACKETS = 200

_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
# Nodes with no node below them: nothing to walk into (a data table's keys and values are most
# of a generated module's nodes).
_NO_CHILDREN = _LEAVES + (ast.Constant,)


def check(source: str, path: str, memo=None, context=None) -> Optional[FileError]:
    """Why libcst must not see `source`, or None (also when CPython rejects it for other reasons:
    libcst decides then).  `memo`: a gradlint.incremental.ByIdentity (the language server's);
    `context`: the check's FileContext, whose tree of `source` is read (None: parsed here)."""
    from gradlint.parse import python_ast

    try:
        tree = context.tree(source) if context is not None else python_ast.parse(source)
    except SyntaxError as exc:
        if rejected_for_nesting(source, exc):
            return FileError(path, SYNTAX_ERROR, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
        return None
    except (RecursionError, MemoryError, OverflowError):
        return too_deep(path, 1)
    except ValueError:  # source with NUL bytes and the like: libcst words it
        return None
    deep = deepest_line(tree, source, memo)
    return too_deep(path, deep) if deep is not None else None


# libcst's native parser needs about 2 KB of memory per character of one statement made of
# many small tokens (`z = [x.y, x.y, ...]`: 470 MB for 200 KB, so 7 MB on one line took 13 GB
# and more; ordinary code needs about 0.5 KB per character).  A simple statement larger than
# this in the text libcst would parse is refused instead: its parse alone could need about a
# gigabyte.  Numeric data is emptied before (data_literals.py); a display of strings this size
# is generated data: exclude its file.
MAX_STATEMENT_CHARS = 512 * 1024


def long_line(text: str, path: str) -> Optional[FileError]:
    """A line of code longer than MAX_STATEMENT_CHARS, found before any parse: CPython's own ast
    of such a line takes gigabytes (7 MB of `x.y, `: 3 GB).  A comment line that long is left
    to the parsers, which skip it."""
    if len(text) <= MAX_STATEMENT_CHARS:
        return None
    start = 0
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > MAX_STATEMENT_CHARS and not text[start:stop].lstrip().startswith("#"):
            line = text.count("\n", 0, start) + 1
            return _too_large(path, stop - start, line, 1)
        if end < 0:
            return None
        start = end + 1


def _too_large(path: str, size: int, line: int, col: int) -> FileError:
    return FileError(
        path, SYNTAX_ERROR,
        f"statement too large to check ({size // 1024:,} KiB; at most {MAX_STATEMENT_CHARS // 1024} KiB): "
        "exclude the file if it is generated", line, col,
    )


# A statement of this size or more counts towards the file's bound below: libcst's memory for
# one big statement of small tokens is about 2 KB per character, and several of them each under
# MAX_STATEMENT_CHARS add up (four of 500 KB: past the per-file memory limit, and libcst's native
# parser aborts the process when an allocation fails).  Ordinary statements are far smaller.
BIG_STATEMENT_CHARS = 16 * 1024
# What all the big statements of the text libcst parses may hold together: about a gigabyte.
MAX_BIG_STATEMENTS_CHARS = MAX_STATEMENT_CHARS


def oversized_statement(text: str, path: str, context=None) -> Optional[FileError]:
    """The error for the first simple statement of `text` longer than MAX_STATEMENT_CHARS, or for
    the text when its statements of BIG_STATEMENT_CHARS or more hold more than
    MAX_BIG_STATEMENTS_CHARS together; else None.  Cheap: only a text that long is looked at,
    and then only its statements (not expressions).  `context`: the check's FileContext, whose
    tree of `text` is read (None: parsed here)."""
    if len(text) <= MAX_STATEMENT_CHARS:
        return None
    from gradlint.parse import python_ast

    try:
        tree = context.tree(text) if context is not None else python_ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None  # libcst words the error, as before
    lines = text.split("\n")
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))
    stack = list(reversed(tree.body))
    big: list[tuple[int, int, int]] = []  # (size, line, column) of each statement of BIG_STATEMENT_CHARS or more
    while stack:
        node = stack.pop()
        bodies = [getattr(node, name, None) for name in ("body", "orelse", "finalbody", "handlers", "cases")]
        children = [child for body in bodies if isinstance(body, list) for child in body]
        if children:
            stack.extend(reversed(children))  # a compound statement: its own lines are short
            continue
        end = node.end_lineno or node.lineno
        first = starts[node.lineno - 1] + node.col_offset
        size = starts[min(end, len(lines)) - 1] + (node.end_col_offset or 0) - first
        if size >= BIG_STATEMENT_CHARS:
            # spaces cost libcst next to nothing: a blanked expression (check/big_expressions.py) is free
            size -= text.count(" ", first, first + size)
        if size > MAX_STATEMENT_CHARS:
            return _too_large(path, size, node.lineno, node.col_offset + 1)
        if size >= BIG_STATEMENT_CHARS:
            big.append((size, node.lineno, node.col_offset + 1))
    total = sum(size for size, _, _ in big)
    if total > MAX_BIG_STATEMENTS_CHARS:
        _, line, col = big[0]  # the first of them
        return FileError(
            path, SYNTAX_ERROR,
            f"statements too large to check ({total // 1024:,} KiB in {len(big)} statements of "
            f"{BIG_STATEMENT_CHARS // 1024} KiB or more; at most {MAX_BIG_STATEMENTS_CHARS // 1024} KiB in all): "
            "exclude the file if it is generated", line, col,
        )
    return None


def rejected_for_nesting(source: str, error: SyntaxError) -> bool:
    """CPython refused `source` (`error`) for nesting that could crash libcst: libcst must not
    see it either (every caller of libcst on raw text asks this first: the engine, notebook cells)."""
    return "too many nested" in str(error.msg) or _bracket_depth(source) > MAX_BRACKETS


def too_deep(path: str, line: int) -> FileError:
    return FileError(path, SYNTAX_ERROR, f"too deeply nested to check (more than {MAX_DEPTH} levels)", line, 1)


def _bracket_depth(source: str) -> int:
    """The deepest run of open brackets, strings and comments included (an over-count is harmless:
    it only decides between two wordings of a syntax error CPython already found)."""
    depth = deepest = 0
    for char in source:
        if char in "([{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif char in ")]}" and depth:
            depth -= 1
    return deepest


def deepest_line(tree: ast.Module, source: str, memo=None) -> Optional[int]:
    """The line of a node nested deeper than MAX_DEPTH in libcst's terms, None when none is."""
    # ast counts "\r\n", "\r" and "\n" as line ends; dropping the "\r"s only shortens spans
    # by characters that hold no level of nesting.
    lines = source.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    starts = list(accumulate((len(line) + 1 for line in lines), initial=0))
    last = len(starts) - 1

    def span(node) -> int:
        lineno = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None)
        if lineno is None or end is None:
            return MAX_DEPTH  # arguments, comprehension, withitem...: hold expressions, always look in
        # col_offset counts UTF-8 bytes: an over-estimate of characters, which only walks more
        return starts[min(end, last) - 1] + node.end_col_offset - starts[min(lineno, last) - 1] - node.col_offset

    def within(stmt: ast.stmt) -> Optional[int]:
        stack = [(stmt, 1, stmt.lineno)]
        while stack:
            node, depth, line = stack.pop()
            line = getattr(node, "lineno", line)
            if isinstance(node, ast.BoolOp):
                depth += len(node.values) - 1
            if depth > MAX_DEPTH:
                return line
            # Every level below costs at least one character of this node's span (plus a
            # context or operator leaf): a node shorter than what is left cannot reach the bound.
            if isinstance(node, _NO_CHILDREN) or span(node) + 2 < MAX_DEPTH - depth:
                continue
            stack.extend((child, depth + 1, line) for child in ast.iter_child_nodes(node))
        return None

    # The last statement first, as one walk of the module's stack would.  A statement the memo
    # knows is the same text at the same place: the same answer (gradlint/incremental).
    for stmt in reversed(tree.body):
        found = within(stmt) if memo is None else memo.get(stmt, "deepest", lambda stmt=stmt: within(stmt))
        if found is not None:
            return found
    return None
