"""Classes picked out of a table: `AGENTS[name](cfg)`, `AGENTS[name][0](cfg)`.

A training script often keeps its classes in a literal table at module level
(`AGENTS = {"sac": SAC, "td3": TD3}`, or `{"sac": (SAC, "sac_config"), ...}`) and builds the
object with a subscript of it.  Which entry runs is decided at run time, but every entry the
table can give is written in the file: the object is an instance of one of them.  Read only
when that is all it can be: the table is bound once, at module level, to a dict, list or
tuple literal, and nothing in the file writes an item of it or calls a method on it that can
change it (Bindings.tables_changed); each step of the subscript past the first is a constant
index into a tuple or list literal.  Otherwise None: the object's class is not told.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from gradlint.model.names import dotted

_MAX_ENTRIES = 64  # a bigger table is a data table, not a choice of classes


def listed_callees(func: cst.BaseExpression, bindings) -> Optional[list[str]]:
    """The dotted names `func` (`AGENTS[name]` or `AGENTS[name][0]`) may give, or None."""
    steps: list[cst.Subscript] = []
    node = func
    while isinstance(node, cst.Subscript):
        steps.append(node)
        node = node.value
    if not steps or not isinstance(node, cst.Name):
        return None
    name = node.value
    values = bindings.assigns.get(name, [])
    if len(values) != 1 or name in bindings.tables_changed or not bindings.bound_at_module_level(name, values[0]):
        return None
    entries = _entries(values[0])
    if entries is None:
        return None
    for step in reversed(steps[:-1]):  # the first subscript picks an entry, the others index into it
        index = _constant_index(step)
        if index is None:
            return None
        picked = []
        for entry in entries:
            if not isinstance(entry, (cst.Tuple, cst.List)) or not -len(entry.elements) <= index < len(entry.elements):
                return None
            picked.append(entry.elements[index].value)
        entries = picked
    names = [dotted(entry) for entry in entries]
    if not names or None in names:
        return None
    return list(dict.fromkeys(names))


def _entries(table: cst.BaseExpression) -> Optional[list[cst.BaseExpression]]:
    if isinstance(table, cst.Dict):
        elements = table.elements
        if any(not isinstance(e, cst.DictElement) for e in elements):
            return None  # `**other`: entries this file does not show
        values = [e.value for e in elements]
    elif isinstance(table, (cst.Tuple, cst.List)):
        if any(not isinstance(e, cst.Element) for e in table.elements):
            return None  # `*other`
        values = [e.value for e in table.elements]
    else:
        return None
    return values if 0 < len(values) <= _MAX_ENTRIES else None


def _constant_index(step: cst.Subscript) -> Optional[int]:
    if len(step.slice) != 1 or not isinstance(step.slice[0].slice, cst.Index):
        return None
    value = step.slice[0].slice.value
    sign = 1
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        sign, value = -1, value.expression
    if isinstance(value, cst.Integer):
        try:
            return sign * int(value.value, 0)
        except ValueError:  # `00`
            return None
    return None
