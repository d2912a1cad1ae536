"""Conditions read as sets of iterations: a test and its negation are one condition.

`if scaler is None:` and `if scaler is not None:`, `if x == y:` and `if x != y:`, `if
cfg.fp16:` and `if not cfg.fp16:` test one thing and take opposite sides, so the loop
model keys each branch by the positive form of its test and swaps the sides of a negated
one.  Two branches with one key take consistent sides within an iteration, as long as
nothing between them rebinds a name the condition reads (loops.py emits a Rebind node for
each assignment that does; flow.py forgets the decision there).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradlint.model.names import ExpressionNames, is_under, root
from gradlint.model.walk import walk

# a comparison operator -> its positive twin: `a is not b` is `not (a is b)`
_NEGATED = {cst.IsNot: cst.Is, cst.NotEqual: cst.Equal, cst.NotIn: cst.In}


def _bare(test: cst.BaseExpression) -> cst.BaseExpression:
    """The expression without the parentheses around it (they change nothing it means)."""
    if getattr(test, "lpar", None) or getattr(test, "rpar", None):
        return test.with_changes(lpar=(), rpar=())
    return test


def positive(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool]:
    """(the test with its outer negations taken off, whether that swapped its sides).

    `not x` -> (x, True); `a is not None` -> (`a is None`, True); `not a != b` -> (`a == b`,
    False).  Only a comparison of two operands is rewritten (`a < b != c` is left as is)."""
    swapped = False
    while True:
        test = _bare(test)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, swapped = test.expression, not swapped
            continue
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            target = test.comparisons[0]
            twin = _NEGATED.get(type(target.operator))
            if twin is not None:
                test = test.with_changes(comparisons=[target.with_changes(operator=twin())])
                swapped = not swapped
        return test, swapped


def read_names(test: cst.BaseExpression) -> frozenset:
    """The dotted names a condition reads."""
    names = ExpressionNames()
    walk(test, names)
    return frozenset(names.names)


def calls_something(test: cst.BaseExpression) -> bool:
    names = ExpressionNames()
    walk(test, names)
    return names.has_call


def rebinds(assigned: frozenset, read: frozenset) -> bool:
    """Does assigning these dotted names change what a condition reading `read` sees?
    (`x = ...` changes `x.y`; `x.y = ...` leaves `x is None` alone.)"""
    return any(is_under(name, target) for name in read for target in assigned)


def by_root(conditions: dict) -> dict:
    """root name -> the keys of `conditions` (key -> names it reads) that read a name under it:
    an assignment is compared only with the conditions that share a root with it."""
    index: dict = {}
    for key, read in conditions.items():
        for name in read:
            index.setdefault(root(name), set()).add(key)
    return index


def rebound_keys(assigned: frozenset, conditions: dict, index: dict) -> Optional[frozenset]:
    """The keys of `conditions` that assigning `assigned` outdates (`index`: by_root(conditions))."""
    candidates = {key for name in assigned for key in index.get(root(name), ())}
    keys = frozenset(key for key in candidates if rebinds(assigned, conditions[key]))
    return keys or None
