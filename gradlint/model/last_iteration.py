"""Tests that are true (or false) on a loop's last iteration only.

`for i, batch in enumerate(batches): ... if i == len(batches) - 1: opt.step()` steps once,
after the whole loop has accumulated: nothing of the loop runs after that step, as if the
step stood after the loop.  The loop model marks such a side with a `Jump(LAST)`: the
iteration goes on to its end, and no next iteration follows it (flow.py).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradlint.model import conditions
from gradlint.model.names import dotted

LAST = "last"  # the kind of the Jump that ends a loop after the iteration that holds it


def loop_end(stmt: cst.For) -> Optional[tuple[str, str, bool]]:
    """(counter, bound, sized) of `for i, x in enumerate(xs):` (("i", "xs", True): the last
    iteration is `i == len(xs) - 1`), `for i in range(len(xs)):` (the same) or `for i in
    range(n):` (("i", "n", False): `i == n - 1`); None for any other loop."""
    iterable, target = stmt.iter, stmt.target
    if not isinstance(iterable, cst.Call) or len(iterable.args) != 1:
        return None
    arg = iterable.args[0]
    if arg.keyword or arg.star:
        return None
    func = dotted(iterable.func)
    if func == "enumerate":
        if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
            return None
        counter, bound, sized = target.elements[0].value, dotted(arg.value), True
    elif func == "range":
        counter = target
        sized_of = _len_of(arg.value)
        bound, sized = (sized_of, True) if sized_of is not None else (dotted(arg.value), False)
    else:
        return None
    if not isinstance(counter, cst.Name) or bound is None:
        return None
    return counter.value, bound, sized


def last_side(
    test: cst.BaseExpression, end: Optional[tuple[str, str, bool]], values: dict, resolve=lambda name: name
) -> Optional[bool]:
    """True when `test` holds on the loop's last iteration only (`i == len(xs) - 1`, `i + 1 ==
    len(xs)`, `i >= n - 1`), False when it fails there only (`i < len(xs) - 1`, `i + 1 !=
    len(xs)`), else None.  `values`: the one value of a name the test may be (`is_accumulating
    = i < len(xs) - 1` ... `if not is_accumulating:`).  `resolve`: the loop's name for a name
    the test reads (a helper's parameter: the caller's argument), None when it has none."""
    if end is None:
        return None
    test = conditions.bare(test)
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negated = conditions.bare(test.expression), not negated
    if isinstance(test, cst.Name) and test.value in values:
        test = conditions.bare(values[test.value])
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    counter, bound, sized = end
    left, op, right = conditions.bare(test.left), type(test.comparisons[0].operator), test.comparisons[0].comparator
    right = conditions.bare(right)
    if resolve(dotted(left)) == counter and _is_bound(right, bound, sized, True, resolve):
        pass  # `i == len(xs) - 1`
    elif _plus_one(left, counter, resolve) and _is_bound(right, bound, sized, False, resolve):
        pass  # `i + 1 == len(xs)`
    else:
        return None
    side = _ONLY_LAST.get(op)
    if side is None:
        return None
    return side != negated


# the comparison of the counter with the last index: `==`/`>=` hold on the last iteration
# only, `!=`/`<` fail there only (`>` and `<=` hold on none or on all of them)
_ONLY_LAST = {cst.Equal: True, cst.GreaterThanEqual: True, cst.NotEqual: False, cst.LessThan: False}


def _len_of(node: cst.BaseExpression) -> Optional[str]:
    node = conditions.bare(node)
    if isinstance(node, cst.Call) and dotted(node.func) == "len" and len(node.args) == 1 and not node.args[0].star:
        return dotted(node.args[0].value)
    return None


def _is_bound(node: cst.BaseExpression, bound: str, sized: bool, minus_one: bool, resolve) -> bool:
    if minus_one:
        if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Subtract)):
            return False
        if not _is_one(node.right):
            return False
        node = conditions.bare(node.left)
    return resolve(_len_of(node) if sized else dotted(node)) == bound


def _plus_one(node: cst.BaseExpression, counter: str, resolve) -> bool:
    return (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)
            and resolve(dotted(conditions.bare(node.left))) == counter and _is_one(node.right))


def _is_one(node: cst.BaseExpression) -> bool:
    node = conditions.bare(node)
    return isinstance(node, cst.Integer) and node.value == "1"
