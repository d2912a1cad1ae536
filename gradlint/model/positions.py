"""Source positions of the few nodes gradlint reports, without libcst's
PositionProvider (which re-generates the whole module and costs about
twice the parse).

CPython's `ast` already knows every node's position, and the C parser is
an order of magnitude faster than libcst's.  Both trees hold the same
calls, assignments, loops and defs in the same source order, so the k-th
libcst Call met in a pre-order walk is the k-th ast Call sorted by start
(an outer call before the inner one that starts at the same place).  The
bindings pass numbers libcst's nodes as it walks anyway.

Every span handed out is checked against the text of its node; on any
disagreement (or a count that differs) the whole file falls back to
PositionProvider, so a wrong position is never reported.
"""

from __future__ import annotations

import ast
import bisect
from typing import Optional

import libcst as cst

from gradlint.parse import python_ast
from gradlint.core import source_lines
from gradlint.parse.ast_nodes import ast_nodes
from gradlint.core.findings import Span
from gradlint.model.names import dotted

# libcst node type -> the ast node types it corresponds to
KINDS: dict[type, tuple[type, ...]] = {
    cst.Call: (ast.Call,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.Assign: (ast.Assign,),
    cst.AugAssign: (ast.AugAssign,),
    cst.AnnAssign: (ast.AnnAssign,),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
}


_KEYWORDS = {cst.For: "for", cst.While: "while", cst.FunctionDef: "def"}


class PositionsDisagree(Exception):
    """A node whose position the ast table cannot give (strict mode: the file is built in
    pieces, whose modules are gone when a fallback would need them; the caller parses whole)."""


class AstTable:
    """Per libcst kind, the ast nodes of the text as sorted (line, col, -end_line, -end_col).
    (A decorated def starts at `def` in both trees: PositionProvider leaves the decorators out.)

    Plain tuples rather than the ast itself: a 50,000-line file's ast is about 85 MB, its
    table a few."""

    def __init__(self, tree: ast.AST) -> None:
        lookup = {t: kind for kind, types in KINDS.items() for t in types}
        by_kind: dict[type, list] = {kind: [] for kind in KINDS}
        for node in ast_nodes(tree):
            kind = lookup.get(type(node))
            if kind is not None:
                by_kind[kind].append((node.lineno, node.col_offset, -node.end_lineno, -node.end_col_offset))
        for nodes in by_kind.values():
            nodes.sort()
        self.by_kind = by_kind

    @classmethod
    def of(cls, source: str, context=None) -> Optional["AstTable"]:
        """The table of `source`; `context`: the check's FileContext, whose tree of it is read (the
        screen's when nothing was blanked); None: parsed here."""
        try:
            return cls(context.tree(source) if context is not None else python_ast.parse(source))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None

    def count(self, kind: type, first_line: int, last_line: int) -> int:
        """How many nodes of `kind` start on lines first_line..last_line."""
        nodes = self.by_kind[kind]
        return bisect.bisect_left(nodes, (last_line + 1,)) - bisect.bisect_left(nodes, (first_line,))


class Numbering(cst.CSTVisitor):
    """Pre-order numbers of the nodes in KINDS, per kind (mixed into the bindings pass).

    `numbers` holds the nodes that live as long as the file's model (those of defs, which
    the bindings keep); `loose` the rest, which a file built in pieces forgets with each
    piece (ids of freed nodes are handed out again)."""

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self.loose: dict[int, int] = {}
        self.counts: dict[type, int] = {kind: 0 for kind in KINDS}

    def number(self, node: cst.CSTNode, keep: bool = True) -> None:
        kind = type(node)
        (self.numbers if keep else self.loose)[id(node)] = self.counts[kind]
        self.counts[kind] += 1

    def number_of(self, node: cst.CSTNode) -> Optional[int]:
        key = id(node)
        found = self.numbers.get(key)
        return found if found is not None else self.loose.get(key)


class Positions:
    """Spans of libcst nodes from the ast table.

    `strict` (a file built in pieces): a node the table cannot place raises
    PositionsDisagree instead of falling back to libcst's PositionProvider, and the
    node counts are checked piece by piece by the caller.  `extra` numbers the nodes of a
    piece parsed a second time (piecewise.py)."""

    def __init__(
        self,
        module: Optional[cst.Module],
        source: str,
        numbering: Numbering,
        code=None,
        table: Optional[AstTable] = None,
        strict: bool = False,
        context=None,
    ):
        self.module = module
        self.context = context  # the check's FileContext: the tree the table is made of, when asked
        self.code = code or module.code_for_node
        self.source = source
        self.numbering = numbering
        self.extra: Optional[Numbering] = None
        self.strict = strict
        self._lines = source_lines.lines(source, keepends=True)  # as the ast counts them
        self._table = table
        self._checked = False
        self._fallback = None

    def span(self, node: cst.CSTNode) -> Span:
        if self._fallback is None:
            span = self._from_ast(node)
            if span is not None:
                return span
            if self.strict:
                raise PositionsDisagree(type(node).__name__)
            self._use_provider()
        pos = self._fallback[node]
        return Span(pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)

    def _use_provider(self) -> None:
        from libcst.metadata import MetadataWrapper, PositionProvider

        self._fallback = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def _sorted_ast_nodes(self) -> Optional[dict[type, list]]:
        if not self._checked:
            self._checked = True
            if self._table is None:
                self._table = AstTable.of(self.source, self.context)
            if self._table is not None and not self.strict:
                counts = self.numbering.counts
                if any(len(nodes) != counts[kind] for kind, nodes in self._table.by_kind.items()):
                    self._table = None
        return self._table.by_kind if self._table is not None else None

    def _number(self, node: cst.CSTNode) -> Optional[int]:
        number = self.numbering.number_of(node)
        if number is None and self.extra is not None:
            number = self.extra.number_of(node)
        return number

    def _from_ast(self, node: cst.CSTNode) -> Optional[Span]:
        kind = type(node)
        number = self._number(node)
        table = self._sorted_ast_nodes() if number is not None and kind in KINDS else None
        if table is None or number >= len(table[kind]):
            return None
        line, byte_col, end_line, end_byte_col = table[kind][number]
        end_line, end_byte_col = -end_line, -end_byte_col
        col = self._chars(line, byte_col)
        if not self._starts_with(line, col, node):
            return None
        end_col = self._chars(end_line, end_byte_col)
        return Span(line, col + 1, end_line, end_col + 1)

    def call_source(self, node: cst.CSTNode, span: Span) -> Optional[str]:
        """The source of a call on one line, read from the text at its span (libcst's code
        generation gives the same, at a tenth of the cost); None for anything else."""
        if type(node) is not cst.Call or node.lpar or span.line != span.end_line:
            return None
        line = span.line
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return text[span.col - 1 : span.end_col - 1] or None

    def _chars(self, line: int, byte_col: int) -> int:
        """ast columns count UTF-8 bytes; ours count characters."""
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def _starts_with(self, line: int, col: int, node: cst.CSTNode) -> bool:
        """The source at (line, col) begins with the node's own first characters."""
        keyword = _KEYWORDS.get(type(node))
        if keyword is not None:  # a loop or def: its keyword is enough, and cheap
            head = ("async " if getattr(node, "asynchronous", None) else "") + keyword
            text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
            return text[col : col + len(head)] == head
        if type(node) is cst.Call and not node.lpar:
            # `opt.zero_grad(`: the callee's dotted name is enough, and needs no code
            # generation (which was half the model's time on loop-dense files).
            name = dotted(node.func)
            if name is not None:
                text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
                if text.startswith(name + "(", col):
                    return True
        code = self.code(node)
        for _ in getattr(node, "lpar", ()):  # positions exclude an expression's own parentheses
            code = code.lstrip()[1:]
        # a statement's code starts with its leading blank and comment lines: skip them
        lines = (ln.strip() for ln in code.split("\n"))
        head = next((ln for ln in lines if ln and not ln.startswith("#")), "")[:16]
        text = self._lines[line - 1] if 0 < line <= len(self._lines) else ""
        return bool(head) and text[col : col + len(head)] == head
