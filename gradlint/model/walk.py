"""A read-only walk of a libcst tree, calling a visitor's ``visit_X`` and
``leave_X`` methods exactly as ``node.visit(visitor)`` would, in the same
order, but without building a new tree.

libcst's ``visit`` is a visit-and-replace: every node it passes is
rebuilt (and validated) from its visited children, even for a read-only
``CSTVisitor``.  On torch's larger modules that costs more than twice the
parse.  This walk reads each node type's children in the order libcst's
own ``_visit_and_replace_children`` visits them (the order of the field
names in that method's code, read once per type), and skips the fields
that hold only whitespace and punctuation, which no visitor here handles.
tests/test_walk.py checks the order against ``node.visit`` on real code.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

# Fields that hold only whitespace, comments and punctuation tokens.
_PUNCTUATION = frozenset(
    {
        "leading_lines", "lines_after_decorators", "header", "footer", "lpar", "rpar", "comma", "semicolon",
        "colon", "equal", "dot", "lbracket", "rbracket", "lbrace", "rbrace", "star", "newline",
        "trailing_whitespace", "asynchronous", "lbrack", "rbrack",
    }
)

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(kind: type) -> tuple[str, ...]:
    """The child fields of a node type, in libcst's visiting order."""
    names = {f.name for f in dataclasses.fields(kind)}
    method = getattr(kind, "_visit_and_replace_children", None)
    consts = method.__code__.co_consts if method is not None and hasattr(method, "__code__") else ()
    ordered = [c for c in consts if isinstance(c, str) and c in names]
    ordered += sorted(names - set(ordered))  # never drop a field libcst would visit
    keep = [n for n in dict.fromkeys(ordered) if n not in _PUNCTUATION and not n.startswith("whitespace")]
    _FIELDS[kind] = fields = tuple(keep)
    return fields


class _Dispatch:
    """A visitor's visit_X / leave_X methods by node type, looked up once per type."""

    __slots__ = ("visitor", "visits", "leaves")

    def __init__(self, visitor: cst.CSTVisitor):
        self.visitor = visitor
        self.visits: dict[type, object] = {}
        self.leaves: dict[type, object] = {}

    def methods(self, kind: type):
        if kind not in self.visits:
            name = kind.__name__
            self.visits[kind] = getattr(self.visitor, "visit_" + name, None)
            self.leaves[kind] = getattr(self.visitor, "leave_" + name, None)
        return self.visits[kind], self.leaves[kind]


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only visitor, without rebuilding the tree."""
    _walk(node, _Dispatch(visitor))


# Whether a value of this type is a libcst node.  `isinstance(x, cst.CSTNode)` goes through
# ABCMeta.__instancecheck__ (about a microsecond); a dict lookup by type does not, and the
# walk asks once per field of every node (a third of the model's time on loop-dense files).
_IS_NODE: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    known = _IS_NODE.get(kind)
    if known is None:
        known = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
    return known


def _walk(node: cst.CSTNode, dispatch: _Dispatch) -> None:
    kind = type(node)
    visit, leave = dispatch.methods(kind)
    if visit is None or visit(node) is not False:
        fields = _FIELDS.get(kind)
        if fields is None:
            fields = _fields(kind)
        known = _IS_NODE.get
        for name in fields:
            value = getattr(node, name)
            is_node = known(value.__class__)
            if is_node is None:
                is_node = _is_node(value.__class__)
            if is_node:
                _walk(value, dispatch)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    is_node = known(item.__class__)
                    if is_node is None:
                        is_node = _is_node(item.__class__)
                    if is_node:
                        _walk(item, dispatch)
    if leave is not None:
        leave(node)
