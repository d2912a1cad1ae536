"""Where a call's whole statement sits, and in which block: the unit a fix moves.

An event's span covers only its call (`opt.step()`); a fix moves or anchors
on the statement around it, whatever its shape: several lines, comments on
them, a trailing comment.  `ast` (the C parser) gives statement extents and
their blocks cheaply; it runs only for files that have a fixable finding.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Optional

from gradlint.parse import python_ast
from gradlint.core import source_lines

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass(frozen=True)
class Statement:
    first: int  # first physical line (1-based)
    last: int  # last physical line, its trailing comment included
    indent: str  # the whitespace before it on its first line
    chain: tuple  # the blocks around it, outermost first: (owner node id, field, kind)
    node: ast.stmt
    # first line of the comment lines right above it at its indentation (no blank line
    # between): they describe it and move with it; `first` when there are none
    lead: int = 0


class Statements:
    """The simple statements of one source that a fix may move or anchor on."""

    def __init__(self, source: str, tree: Optional[ast.Module] = None, lines: Optional[list[str]] = None):
        """`tree`, `lines`: the check's tree of `source` and its lines with their ends (read, never
        changed; None: made here)."""
        self.lines = lines if lines is not None else source_lines.lines(source, keepends=True)
        # the file's tree (also code for a newer Python)
        self.tree = tree if tree is not None else python_ast.parse(source)
        # Top-level statements are indexed when a fix first asks about their lines: a fix looks
        # at one loop's statements, and indexing the whole file per check grew with the file
        # (the language server re-checks a long buffer on every edit).
        self._tops = self.tree.body
        self._top_starts = [_start(stmt) for stmt in self._tops]
        self._top_ends = [stmt.end_lineno or stmt.lineno for stmt in self._tops]
        self._indexed: set[int] = set()
        self._by_line: dict[int, list[tuple[ast.stmt, tuple]]] = {}
        self._reads: dict[int, dict[str, list[int]]] = {}  # per top-level statement: name -> lines that read it
        # per top-level statement: the first lines of the statements inside it that bind names
        # (sorted), and the names each binds
        self._binds: dict[int, tuple[list[int], list[frozenset]]] = {}
        self._at: dict[tuple[int, int], Optional[Statement]] = {}
        # gradlint.fix.move's answers by what they depend on (its moved and anchor spans, ...)
        self.moves: dict[tuple, object] = {}

    def _tops_on(self, first: int, last: int) -> range:
        """Indices of the top-level statements with a line in first..last (decorators included)."""
        return range(bisect_left(self._top_ends, first), bisect_right(self._top_starts, last))

    def _on_line(self, line: int) -> list[tuple[ast.stmt, tuple]]:
        for i in self._tops_on(line, line):
            self._index_top(i)
        return self._by_line.get(line, [])

    def _index_top(self, i: int) -> None:
        """Index top-level statement i with every statement sharing a line with it (`a = 1; for ...`),
        in source order: the order of each line's entries is that of one walk of the whole file."""
        if i in self._indexed:
            return
        first = last = i
        while first > 0 and self._top_ends[first - 1] >= self._top_starts[first]:
            first -= 1
        while last + 1 < len(self._tops) and self._top_starts[last + 1] <= self._top_ends[last]:
            last += 1
        chain = ((id(self.tree), "body", "module"),)
        for j in range(first, last + 1):
            self._indexed.add(j)
            stmt = self._tops[j]
            for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                self._by_line.setdefault(line, []).append((stmt, chain))
            self._index(stmt, chain)

    def _index(self, node: ast.AST, chain: tuple) -> None:
        for name, value in ast.iter_fields(node):
            if not (isinstance(value, list) and value and isinstance(value[0], ast.stmt)):
                continue
            inner = chain + ((id(node), name, _kind(node, name)),)
            for stmt in value:
                for line in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                    self._by_line.setdefault(line, []).append((stmt, inner))
                self._index(stmt, inner)
        if isinstance(node, (ast.If, ast.Try)) or hasattr(node, "handlers"):
            for handler in getattr(node, "handlers", ()):
                self._index(handler, chain + ((id(node), "handlers", "except"),))

    def at(self, line: int, col: int) -> Optional[Statement]:
        """The innermost simple statement containing (line, col), if it owns its lines alone."""
        key = (line, col)
        if key not in self._at:  # a rule plans the same move once per path through the loop
            self._at[key] = self._find(line, col)
        return self._at[key]

    def _find(self, line: int, col: int) -> Optional[Statement]:
        candidates = [
            (stmt, chain)
            for stmt, chain in self._on_line(line)
            if not _compound(stmt) and _contains(stmt, line, col)
        ]
        if not candidates:
            return None
        stmt, chain = max(candidates, key=lambda pair: len(pair[1]))
        if not self._is_the_value(stmt, line, col):
            return None  # the call is part of a larger expression: moving it moves more
        return self.whole(stmt, chain)

    def _is_the_value(self, stmt: ast.stmt, line: int, col: int) -> bool:
        """The event at (line, col) is the statement's whole expression (`x = call` counts)."""
        if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) or stmt.value is None:
            return False
        value = stmt.value
        if isinstance(value, ast.Await):
            value = value.value
        return value.lineno == line and _byte_to_char(self.lines[line - 1], value.col_offset) == col - 1

    def assigned(self, stmt: "Statement") -> set[str]:
        """Names the statement binds (`norm = clip_grad_norm_(...)`)."""
        targets = stmt.node.targets if isinstance(stmt.node, ast.Assign) else [getattr(stmt.node, "target", None)]
        return {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}

    def read_between(self, first: int, last: int, names: set[str]) -> bool:
        """Is any of `names` read on lines first..last?"""
        if not names:
            return False
        for i in self._tops_on(first, last):
            reads = self._reads.get(i)
            if reads is None:  # once per statement: a walk per fix made many fixes quadratic
                reads = self._reads[i] = {}
                for n in ast.walk(self._tops[i]):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        reads.setdefault(n.id, []).append(n.lineno)
                for numbers in reads.values():
                    numbers.sort()
            for name in names:
                numbers = reads.get(name, ())
                k = bisect_left(numbers, first)
                if k < len(numbers) and numbers[k] <= last:
                    return True
        return False

    def binds_between(self, first: int, last: int, names: set[str]) -> bool:
        """Does a statement starting on lines first..last bind one of `names` (anywhere inside it)?"""
        if not names:
            return False
        for i in self._tops_on(first, last):
            binds = self._binds.get(i)
            if binds is None:  # once per statement, as _reads
                starts: list[tuple[int, frozenset]] = []
                for node in ast.walk(self._tops[i]):
                    if isinstance(node, ast.stmt):
                        bound = frozenset(
                            n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                        )
                        if bound:
                            starts.append((node.lineno, bound))
                starts.sort(key=lambda pair: pair[0])
                binds = self._binds[i] = ([line for line, _ in starts], [bound for _, bound in starts])
            lines, bound = binds
            k = bisect_left(lines, first)  # only the statements starting in first..last: one function may hold thousands
            while k < len(lines) and lines[k] <= last:
                if not names.isdisjoint(bound[k]):
                    return True
                k += 1
        return False

    def whole(self, stmt: ast.stmt, chain: tuple) -> Optional[Statement]:
        first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        # Alone on its lines: nothing before it on the first line, nothing but a
        # comment after it on the last, no other statement (`a; b`) on any of them.
        head = self.lines[first - 1][: _byte_to_char(self.lines[first - 1], stmt.col_offset)]
        if head.strip():
            return None
        tail_line = self.lines[last - 1]
        tail = tail_line[_byte_to_char(tail_line, stmt.end_col_offset or 0) :].strip()
        if tail and not tail.startswith("#"):
            return None
        for line in range(first, last + 1):
            if any(other is not stmt and not _compound(other) for other, _ in self._on_line(line)):
                return None
        return Statement(first, last, head, chain, stmt, self._lead(first, head))

    def _lead(self, first: int, indent: str) -> int:
        lead = first
        while lead > 1:
            line = self.lines[lead - 2]
            if not (line.startswith(indent + "#") and line[: len(indent)].strip() == ""):
                break
            if any(not _compound(other) for other, _ in self._on_line(lead - 1)):
                break  # a comment inside another statement's brackets
            lead -= 1
        return lead

    def in_block(self, inner: Statement, chain: tuple) -> Optional[Statement]:
        """The statement of the block `chain` that holds `inner` (itself, or a compound around it)."""
        for node, node_chain in self._on_line(inner.first):
            if node_chain == chain and (node is inner.node or _encloses(node, inner.node)):
                first, last = node.lineno, node.end_lineno or node.lineno
                head = self.lines[first - 1][: _byte_to_char(self.lines[first - 1], node.col_offset)]
                return None if head.strip() else Statement(first, last, head, chain, node, self._lead(first, head))
        return None

    def text(self, stmt: Statement) -> str:
        """The statement's lines with the comment lines that lead it."""
        text = "".join(self.lines[stmt.lead - 1 : stmt.last])
        return text if text.endswith("\n") else text + "\n"


def _kind(node: ast.AST, field: str) -> str:
    if isinstance(node, _SCOPES):
        return "scope"
    if isinstance(node, _LOOPS) and field == "body":
        return "loop"
    if isinstance(node, ast.Module):
        return "module"
    return "block"  # if/else, with, try bodies, a loop's else


def _compound(stmt: ast.stmt) -> bool:
    """Does the statement hold statements (a def, a loop, an if, ...)?  A matter of its type: in
    a parsed tree, every statement that has a block has a non-empty body.  Asked of every
    statement on a line a fix looks at (the def and loops around it too): known per type."""
    kind = type(stmt)
    found = _COMPOUND.get(kind)
    if found is None:
        found = _COMPOUND[kind] = any(
            isinstance(value, list) and value and isinstance(value[0], ast.stmt) for _, value in ast.iter_fields(stmt)
        ) or isinstance(stmt, ast.Try)
    return found


_COMPOUND: dict[type, bool] = {}


def _start(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None)
    return min([stmt.lineno] + [d.lineno for d in decorators]) if decorators else stmt.lineno


def _contains(stmt: ast.stmt, line: int, col: int) -> bool:
    end = stmt.end_lineno or stmt.lineno
    return stmt.lineno <= line <= end


def _encloses(outer: ast.stmt, inner: ast.stmt) -> bool:
    return outer is not inner and any(node is inner for node in ast.walk(outer))


def _byte_to_char(line: str, offset: int) -> int:
    """ast columns are UTF-8 byte offsets."""
    return len(line.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))
