"""Constant arguments of a call, bound to the parameters of the function it runs.

A helper's events can depend on how it is called: `forward_backward(batch)` runs the
`loss.backward()` under `if do_backward:` (the default is True), an evaluation method's
`forward_backward(batch, do_backward=False)` does not.  When a call of a function of the
file is modelled, the constants it passes (by position or keyword) and the constant
defaults of what it leaves out are bound to the parameters, and a test that reads only
those is decided: its other side never runs for that call.

Pure functions of libcst nodes, so that a summary of a function of another module (issue
27's project index) can bind the arguments of its calls the same way:

    constants = bound_constants(definition, call, skip_first=True, outer={})
    truth(test, constants)   # True, False, or None when it depends on something else
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping, Optional

import libcst as cst

from gradlint.model.names import AssignedNames
from gradlint.model.walk import walk

_UNKNOWN = object()


class _Built:
    """The value of a name the caller binds only to a new optimizer, scheduler or scaler
    (`Adam(...)`): not None and true, equal to nothing known."""

    def __repr__(self) -> str:
        return "BUILT"


BUILT = _Built()


def constant(node: Optional[cst.BaseExpression], outer: Mapping[str, object] = {}) -> object:
    """The value of a literal (`True`, `None`, `0.5`, `"fp16"`, `-1`), or of a name bound to
    a constant in the caller (`outer`); _UNKNOWN otherwise."""
    if node is None:
        return _UNKNOWN
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[node.value]
        return outer.get(node.value, _UNKNOWN)
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return node.evaluated_value
        except Exception:  # a literal libcst cannot evaluate: unknown, never a crash
            return _UNKNOWN
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        value = constant(node.expression, outer)
        return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else _UNKNOWN
    return _UNKNOWN


def bound_constants(
    definition: cst.FunctionDef,
    call: cst.Call,
    skip_first: bool,
    outer: Mapping[str, object] = {},
    reassigned: Optional[frozenset] = None,
) -> dict[str, object]:
    """The parameters of `definition` that `call` binds to constants, with their values.

    `skip_first`: the call passes the first parameter itself (`self.m(...)`, `obj.m(...)`).
    A parameter the body assigns again is left out (its test reads the new value), and so is
    every parameter a `*args` or `**kwargs` of the call may fill.  `reassigned`: what
    `assigned_in(definition)` returns, when the caller keeps it."""
    params = definition.params
    positional = list(params.posonly_params) + list(params.params)
    if skip_first and positional:
        positional = positional[1:]
    values: dict[str, object] = {}
    star = any(a.star == "*" for a in call.args)
    double_star = any(a.star == "**" for a in call.args)
    given = [a for a in call.args if a.keyword is None and not a.star]
    if not star:
        for param, arg in zip(positional, given):
            values[param.name.value] = constant(arg.value, outer)
    named = {p.name.value: p for p in positional + list(params.kwonly_params)}
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in named:
            values[arg.keyword.value] = constant(arg.value, outer)
    if not star and not double_star:
        skipped = positional[len(given):] + list(params.kwonly_params)
        for param in skipped:
            if param.name.value not in values and param.default is not None:
                values[param.name.value] = constant(param.default)
    if reassigned is None:
        reassigned = assigned_in(definition)
    return {name: value for name, value in values.items() if value is not _UNKNOWN and name not in reassigned}


def truth(test: cst.BaseExpression, constants: Mapping[str, object]) -> Optional[bool]:
    """Is `test` surely true (True) or surely false (False) with these names bound?"""
    value = _value(test, constants)
    return None if value is _UNKNOWN else bool(value)


def _value(node: cst.BaseExpression, constants: Mapping[str, object]) -> object:
    if isinstance(node, cst.Name):
        return constant(node, constants)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = _value(node.expression, constants)
        return _UNKNOWN if inner is _UNKNOWN else not inner
    if isinstance(node, cst.BooleanOperation):
        left = _value(node.left, constants)
        right = _value(node.right, constants)
        if isinstance(node.operator, cst.And):
            if left is not _UNKNOWN and not left or right is not _UNKNOWN and not right:
                return False
            return _UNKNOWN if _UNKNOWN in (left, right) else True
        if left is not _UNKNOWN and left or right is not _UNKNOWN and right:
            return True
        return _UNKNOWN if _UNKNOWN in (left, right) else False
    if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
        left = _value(node.left, constants)
        target = node.comparisons[0]
        right = _value(target.comparator, constants)
        if _UNKNOWN in (left, right):
            return _UNKNOWN
        operator = type(target.operator)
        if operator is cst.Is:
            return left is right if left is None or right is None else _UNKNOWN
        if operator is cst.IsNot:
            return left is not right if left is None or right is None else _UNKNOWN
        if BUILT in (left, right) and operator in (cst.Equal, cst.NotEqual):
            return _UNKNOWN
        if operator is cst.Equal:
            return left == right
        if operator is cst.NotEqual:
            return left != right
        return _UNKNOWN
    return constant(node)


def derivations(definition: cst.FunctionDef) -> tuple:
    """(name, value) of the body's top-level `name = value` statements whose name the body
    assigns nowhere else: `is_train = optimizer is not None` before the loop that tests
    `if is_train:`.  A name assigned again (or in a branch, a loop, a `with`) is left out: a
    test may read another value."""
    counter = AssignedNames(into_defs=False, with_targets=True)
    counter.names = Counter()  # type: ignore[assignment]  # update() counts each target
    walk(definition.body, counter)
    body = definition.body.body if isinstance(definition.body, cst.IndentedBlock) else ()
    out = []
    for line in body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for stmt in line.body:
            if (
                isinstance(stmt, cst.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0].target, cst.Name)
                and counter.names[stmt.targets[0].target.value] == 1
            ):
                out.append((stmt.targets[0].target.value, stmt.value))
    return tuple(out)


def derived_constants(derived: tuple, constants: Mapping[str, object]) -> dict[str, object]:
    """The constants plus the names of `derivations` whose value they decide, in order."""
    out = dict(constants)
    if not out:
        return out
    for name, value in derived:
        known = _value(value, out)
        if known is not _UNKNOWN:
            out[name] = known
    return out


def assigned_in(definition: cst.FunctionDef) -> frozenset:
    """The names a function's body assigns (not those of defs inside it)."""
    visitor = AssignedNames(into_defs=False, with_targets=False)
    walk(definition.body, visitor)
    return frozenset(visitor.names)


def switched_off(definition: cst.FunctionDef, constants: Mapping[str, object]) -> bool:
    """Does a call with these constants run none of the function's in-place tensor writes?

    A project's copy of `clip_grad_norm_` with a `clip_grad=True` parameter, called with
    `clip_grad=False`, only measures the norm: every `mul_` / `clamp_` / `_foreach_mul_` it
    holds sits on a side of an `if` that the constants decide against.  A body with no such
    write at all is not read as switched off: what it does is not known from here."""
    writes = _in_place_writes(definition.body, constants, dead=False)
    return bool(writes) and not any(live for live in writes)


def _in_place_writes(node: cst.CSTNode, constants: Mapping[str, object], dead: bool) -> list:
    """For each in-place method call under `node` (`x.mul_(c)`), whether it can run."""
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return []  # defined here, not run here
    if isinstance(node, cst.If):
        decided = truth(node.test, constants)
        out = _in_place_writes(node.test, constants, dead)
        out += _in_place_writes(node.body, constants, dead or decided is False)
        if node.orelse is not None:
            out += _in_place_writes(node.orelse, constants, dead or decided is True)
        return out
    out = []
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _is_in_place(node.func.attr.value):
        out.append(not dead)
    for child in node.children:
        out += _in_place_writes(child, constants, dead)
    return out


def _is_in_place(method: str) -> bool:
    """`mul_`, `clamp_`, `_foreach_mul_`: PyTorch's in-place spelling (not `__init__`)."""
    return len(method) > 1 and method.endswith("_") and not method.endswith("__")
