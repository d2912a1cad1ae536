"""Folders a module puts on `sys.path` before its imports.

`sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))`, then
`from trainer import train_epoch`: at run time Python finds src/trainer.py, so the checker
reads the import from there too (Index._bases).  Only what the module's own text states is
read: a path built from `__file__`, string literals, `os.getcwd()` and module-level names
bound once to such a path, through os.path and pathlib; anything else is not a folder we know
and adds nothing.  A relative literal is read from the module's own folder (the usual working
directory of a script run as `python train.py`).
"""

from __future__ import annotations

import ast
import os
from typing import Optional

_APPEND, _INSERT = "sys.path.append(", "sys.path.insert("
_SAME = {"abspath", "realpath", "normpath", "expanduser", "resolve", "absolute", "str", "Path", "PurePath", "fspath"}
_MAX_DEPTH = 4  # names bound to names bound to paths: a few levels are real code


def additions(text: str, key: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folders inserted at the front, folders appended) by the module `key`'s own
    `sys.path.insert(...)` and `sys.path.append(...)` lines, as absolute normalised paths."""
    if "sys.path" not in text:
        return (), ()
    lines = text.split("\n")
    names: Optional[dict] = None
    front: list[str] = []
    back: list[str] = []
    for line in lines:
        statement = line.strip()
        inserted = statement.startswith(_INSERT)
        if not inserted and not statement.startswith(_APPEND):
            continue
        call = _expression(statement)
        if not isinstance(call, ast.Call) or call.keywords or len(call.args) != (2 if inserted else 1):
            continue
        if names is None:
            names = _module_names(lines)
        folder = _path(call.args[-1], key, names, 0)
        if folder is not None:
            (front if inserted else back).append(os.path.normpath(folder))
    return tuple(front), tuple(back)


def _expression(statement: str) -> Optional[ast.expr]:
    try:
        body = ast.parse(statement).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return body[0].value if len(body) == 1 and isinstance(body[0], ast.Expr) else None


def _module_names(lines: list[str]) -> dict:
    """`NAME = <expression>` on one line at the module's top level: NAME -> its value, for the
    names bound exactly once so (a name bound twice is not one folder)."""
    found: dict = {}
    for line in lines:
        if not line[:1].isidentifier() or "=" not in line:
            continue
        head = line.split("=", 1)[0].strip()
        if not head.isidentifier():
            continue
        try:
            body = ast.parse(line).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if len(body) == 1 and isinstance(body[0], ast.Assign) and len(body[0].targets) == 1:
            found[head] = None if head in found else body[0].value
    return found


def _path(node: ast.expr, key: str, names: dict, depth: int) -> Optional[str]:
    """The path an expression builds, or None when it is not one we can read."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if os.path.isabs(node.value) else os.path.join(os.path.dirname(key), node.value)
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return key
        value = names.get(node.id)
        return _path(value, key, names, depth + 1) if value is not None else None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _path(node.value, key, names, depth)
        return os.path.dirname(inner) if inner is not None else None
    if isinstance(node, ast.Subscript):
        return _subscript(node, key, names, depth)
    if isinstance(node, ast.BinOp):
        left = _path(node.left, key, names, depth)
        right = node.right.value if isinstance(node.right, ast.Constant) and isinstance(node.right.value, str) else None
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Div):  # pathlib: `ROOT / "src"`
            return os.path.join(left, right)
        if isinstance(node.op, ast.Add):  # `os.path.dirname(__file__) + "/../src"`
            return os.path.normpath(left + right)
        return None
    if isinstance(node, ast.Call):
        return _call(node, key, names, depth)
    return None


def _call(node: ast.Call, key: str, names: dict, depth: int) -> Optional[str]:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name is None or node.keywords:
        return None
    if name == "getcwd" and not node.args:
        return os.path.dirname(key)
    if not node.args:  # `Path(__file__).resolve()`: the receiver is the path
        if name in ("resolve", "absolute") and isinstance(func, ast.Attribute):
            return _path(func.value, key, names, depth)
        return None
    first = _path(node.args[0], key, names, depth)
    if first is None:
        return None
    if name in _SAME and len(node.args) == 1:
        return first
    if name == "dirname" and len(node.args) == 1:
        return os.path.dirname(first)
    if name == "join":
        parts = [first]
        for arg in node.args[1:]:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                return None
            parts.append(arg.value)
        return os.path.join(*parts)
    return None


def _subscript(node: ast.Subscript, key: str, names: dict, depth: int) -> Optional[str]:
    """`Path(__file__).parents[1]`, `os.path.split(path)[0]`."""
    index = node.slice
    if not (isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 0):
        return None
    value = node.value
    if isinstance(value, ast.Attribute) and value.attr == "parents":
        inner = _path(value.value, key, names, depth)
        if inner is None:
            return None
        for _ in range(index.value + 1):
            inner = os.path.dirname(inner)
        return inner
    if (
        index.value == 0
        and isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "split"
        and len(value.args) == 1
    ):
        inner = _path(value.args[0], key, names, depth)
        return os.path.dirname(inner) if inner is not None else None
    return None
