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


# Per visitor class, per node type: (visit_X, leave_X, child fields), the methods as plain
# functions of the class.  Looked up once per class, not per walk: the model walks each
# expression with a fresh visitor (20,000 walks on a loop-dense file).  A method the class
# inherits from libcst's CSTVisitor unchanged does nothing and is None here, so a node whose
# type the visitor ignores costs no call.
_PLANS: dict[type, dict[type, tuple]] = {}


def _plan(visitor: cst.CSTVisitor, plans: dict, kind: type) -> tuple:
    name = kind.__name__
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _fields(kind)
    methods = []
    for prefix in ("visit_", "leave_"):
        if plans is _PLANS.get(type(visitor)):  # a CSTVisitor: its class's functions
            method = getattr(type(visitor), prefix + name, None)
            if method is not None and method is getattr(cst.CSTVisitor, prefix + name, None):
                method = None  # libcst's own: returns None, does nothing
        else:  # any other object with visit_X / leave_X (the instance decides, as libcst's visit)
            bound = getattr(visitor, prefix + name, None)
            method = None if bound is None else (lambda _visitor, node, bound=bound: bound(node))
        methods.append(method)
    plans[kind] = plan = (methods[0], methods[1], fields)
    return plan


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a read-only visitor, without rebuilding the tree."""
    kind = type(visitor)
    plans = _PLANS.get(kind)
    if plans is None:
        if not isinstance(visitor, cst.CSTVisitor):
            plans = {}  # looked up on this instance, for this walk
        else:
            plans = _PLANS[kind] = {}
    _walk(node, visitor, plans)


# What a value of this type is to the walk: 1 a libcst node, 2 a sequence of them (a tuple or
# a list), 0 anything else (a string, None, a sentinel).  `isinstance(x, cst.CSTNode)` goes
# through ABCMeta.__instancecheck__ (about a microsecond); a dict lookup by type does not,
# and the walk asks once per field of every node (a third of the model's time on loop-dense files).
_SHAPES: dict[type, int] = {}
_NODE, _SEQUENCE = 1, 2


def _shape(kind: type) -> int:
    shape = _SHAPES[kind] = _NODE if issubclass(kind, cst.CSTNode) else _SEQUENCE if issubclass(kind, (tuple, list)) else 0
    return shape


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor, plans: dict) -> None:
    kind = type(node)
    plan = plans.get(kind)
    if plan is None:
        plan = _plan(visitor, plans, kind)
    visit, leave, fields = plan
    if visit is None or visit(visitor, node) is not False:
        shapes = _SHAPES.get
        for name in fields:
            value = getattr(node, name)
            shape = shapes(value.__class__)
            if shape is None:
                shape = _shape(value.__class__)
            if shape == _NODE:
                _walk(value, visitor, plans)
            elif shape:
                for item in value:
                    shape = shapes(item.__class__)
                    if shape is None:
                        shape = _shape(item.__class__)
                    if shape == _NODE:
                        _walk(item, visitor, plans)
    if leave is not None:
        leave(visitor, node)
