"""Dotted names of libcst expressions and the file's import aliases.

TorchFix's lesson: compare torch APIs by qualified name, so that
`import torch.nn as nn`, `from torch.nn.utils import clip_grad_norm_ as
clip` and `torch.nn.utils.clip_grad.clip_grad_norm_` all name one thing.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst


def dotted(node: cst.BaseExpression) -> Optional[str]:
    """`self.model.head` for Name/Attribute chains, else None."""
    # (by exact type: libcst's node classes have no subclasses, and isinstance goes through
    # ABCMeta's check, a microsecond; the model asks this about every call and name it reads)
    parts = []
    while type(node) is cst.Attribute:
        parts.append(node.attr.value)
        node = node.value
    if type(node) is cst.Name:
        if not parts:
            return node.value
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def target_names(target: cst.BaseExpression) -> list[str]:
    """The dotted names an assignment target binds: `a`, `self.b` and those of `(a, [b, *c])`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for el in target.elements for name in target_names(el.value)]
    name = dotted(target)
    return [name] if name else []


def keyword_argument(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    """The value of `name=` in the call, or None."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def root(name: str) -> str:
    return name.split(".", 1)[0]


def last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def is_under(name: str, prefix: str) -> bool:
    """True when `name` is `prefix` or an attribute path below it."""
    return name == prefix or name.startswith(prefix + ".")


def _module_name(node: cst.BaseExpression) -> str:
    if isinstance(node, (cst.Name, cst.Attribute)):
        return dotted(node) or ""
    return ""


class Imports:
    """Maps a local name to the qualified name it was imported as."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.packages: set[str] = set()  # top-level packages imported (absolute imports only)

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                self.packages.add(root(full))
                if alias.asname is not None:
                    local = _module_name(alias.asname.name)
                    self.aliases[local] = full
                else:
                    # `import torch.nn` binds `torch`, which qualifies as itself.
                    self.aliases[root(full)] = root(full)
            return
        if node.relative or node.module is None:
            base = "." * len(node.relative) + (_module_name(node.module) if node.module else "")
        else:
            base = _module_name(node.module)
            self.packages.add(root(base))
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _module_name(alias.name)
            local = _module_name(alias.asname.name) if alias.asname is not None else name
            # `from . import n` is `.n` (not `..n`, which is `from .. import n`): the leading dots
            # are the import's level, as gradlint/project resolves them
            self.aliases[local] = f"{base}{name}" if base.endswith(".") else f"{base}.{name}" if base else name

    def qualify(self, name: Optional[str]) -> Optional[str]:
        """`nn.utils.clip_grad_norm_` -> `torch.nn.utils.clip_grad_norm_`."""
        if name is None:
            return None
        head, _, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return name
        return f"{target}.{rest}" if rest else target

    def is_imported(self, name: str) -> bool:
        return root(name) in self.aliases


class ExpressionNames(cst.CSTVisitor):
    """The dotted names an expression reads, and whether it calls or takes a modulo."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.has_call = False
        self.has_modulo = False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = dotted(node)
        if name:
            self.names.add(name)
            return False
        return True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.has_call = True

    def visit_Modulo(self, node: cst.Modulo) -> None:
        self.has_modulo = True


class AssignedNames(cst.CSTVisitor):
    """The names a piece of code assigns: assignment, augmented and annotated targets, walrus
    and `for` targets.  `into_defs`: also those of the defs inside it; `with_targets`: also
    `with ... as name`."""

    def __init__(self, into_defs: bool = True, with_targets: bool = True) -> None:
        self.names: set[str] = set()
        self.into_defs = into_defs
        self.with_targets = with_targets

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self.into_defs

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self.names.update(target_names(t.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.names.update(target_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.names.update(target_names(node.target))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.names.update(target_names(node.target))

    def visit_For(self, node: cst.For) -> None:
        self.names.update(target_names(node.target))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self.with_targets and node.asname is not None:
            self.names.update(target_names(node.asname.name))
