"""Conditions read as sets of iterations: a test and its negation are one condition.

`if scaler is None:` and `if scaler is not None:`, `if x == y:` and `if x != y:`, `if
cfg.fp16:` and `if not cfg.fp16:` test one thing and take opposite sides, so the loop
model keys each branch by the positive form of its test and swaps the sides of a negated
one.  Two branches with one key take consistent sides within an iteration, as long as
nothing between them rebinds a name the condition reads (loops.py emits a Rebind node for
each assignment that does; flow.py forgets the decision there).
"""

from __future__ import annotations

import operator
from typing import Optional

import libcst as cst

from gradlint.model.names import ExpressionNames, dotted, is_under, root
from gradlint.model.walk import walk

# a comparison operator -> its positive twin: `a is not b` is `not (a is b)`
_NEGATED = {cst.IsNot: cst.Is, cst.NotEqual: cst.Equal, cst.NotIn: cst.In}


def _bare(test: cst.BaseExpression) -> cst.BaseExpression:
    """The expression without the parentheses around it (they change nothing it means)."""
    if isinstance(test, cst.Tuple) and not test.elements:
        return test  # `()`: its parentheses are the tuple
    if getattr(test, "lpar", None) or getattr(test, "rpar", None):
        return test.with_changes(lpar=(), rpar=())
    return test


bare = _bare


def operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The tests an `and`/`or` chain is made of, at any nesting and under any `not`."""
    test = _bare(test)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return operands(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return operands(test.left) + operands(test.right)
    return [test]


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


_ORDER = {
    cst.LessThan: operator.lt, cst.GreaterThan: operator.gt, cst.LessThanEqual: operator.le,
    cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}
_QUANTITY_COMPARISONS = tuple(_ORDER)


def compares_with_number(test: cst.BaseExpression) -> bool:
    """`cfg.accum_steps > 1`, `grad_accum == 1`: a quantity compared with a number, as a setting
    is tested (a flag such as `accelerator.sync_gradients` or `x is True` is no such test)."""
    test = _bare(test)
    if not isinstance(test, cst.Comparison):
        return False
    if not all(isinstance(target.operator, _QUANTITY_COMPARISONS) for target in test.comparisons):
        return False
    return any(_number(operand) for operand in [test.left, *(target.comparator for target in test.comparisons)])


def _number(node: cst.BaseExpression) -> bool:
    node = _bare(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = _bare(node.expression)
    return isinstance(node, (cst.Integer, cst.Float))


def single_step_side(test: cst.BaseExpression) -> Optional[tuple[str, bool]]:
    """(the count, the side) when one side of a setting test means the count is 1: `accum > 1`
    is False only for 1 (a count is at least 1), `accum == 1` True only for it.  On that side
    there is no accumulation: every `x % accum == 0` holds."""
    test = _bare(test)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    operator = type(target.operator)
    if operator not in _ORDER:
        return None
    left, right = _bare(test.left), _bare(target.comparator)
    if isinstance(right, cst.Integer) and not _number(left):
        count, limit, flip = left, right, False
    elif isinstance(left, cst.Integer) and not _number(right):
        count, limit, flip = right, left, True
    else:
        return None
    name = dotted(count)
    try:
        bound = int(limit.evaluated_value)
    except (ValueError, TypeError):
        return None
    if name is None or not 0 <= bound <= 64:
        return None
    compare = _ORDER[operator]

    def holds(n: int) -> bool:
        return compare(bound, n) if flip else compare(n, bound)

    # counts past bound + 1 all answer as bound + 2 does
    at_one, others = holds(1), {holds(n) for n in range(2, bound + 3)}
    return (name, at_one) if others == {not at_one} else None


def modulo_divisor(test: cst.BaseExpression) -> Optional[str]:
    """`accum` of `(i + 1) % accum == 0`: a window's boundary on that count."""
    test = _bare(test)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    if not isinstance(target.operator, cst.Equal):
        return None
    for side, other in ((test.left, target.comparator), (target.comparator, test.left)):
        side, other = _bare(side), _bare(other)
        if (
            isinstance(side, cst.BinaryOperation)
            and isinstance(side.operator, cst.Modulo)
            and isinstance(other, cst.Integer)
            and other.value == "0"
        ):
            return dotted(_bare(side.right))
    return None


def incremented(name: str, updated: set) -> bool:
    """Is `name`, or what it is an attribute of, updated in place (`+=`) somewhere?"""
    parts = name.split(".")
    return any(".".join(parts[:end]) in updated for end in range(1, len(parts) + 1))


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
