"""The cross-file operator: a loop's body (its whole training step) moved into a function of
a second module that the loop's file imports and calls.

Applied on top of every single-file mutant (the bug is already planted in the body) and on
the clean original (the baseline), so a rule must now see the bug through another module:
what project-wide analysis (gradlint/project) is for.  Like mutate.py it reads files with
`ast` only and shares no code with gradlint.

    loop header                      loop header
        stmt 1           ->              moved_step(a, b, self)      # train.py
        stmt 2
                                     def moved_step(a, b, self_):    # _moved_step.py
                                         stmt 1
                                         stmt 2

A body is left alone (None) when moving it would change what it does to the loop: a
`break`, `continue`, `return`, `yield`, `await`, `global` or `nonlocal` at its own level;
a name it both reads and writes that is bound outside it (a counter such as `step += 1`,
which would stop counting); a body on its header's line.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

MODULE = "_moved_step"
FUNCTION = "moved_step"
_BUILTINS = frozenset(dir(builtins))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class Moved:
    source: str  # the loop's file, now calling the function
    module: str  # the second module's text
    loop_start: int  # the loop's span in the new source
    loop_end: int


class _Order(ast.NodeVisitor):
    """Names of a body in evaluation order: (name, is a store), values before targets."""

    def __init__(self) -> None:
        self.events: list[tuple[str, bool]] = []
        self.nested_bound: set[str] = set()

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        if isinstance(node.target, ast.Name):
            self.events.append((node.target.id, False))  # read, then written
            self.events.append((node.target.id, True))
        else:
            self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.visit(node.target)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_Name(self, node: ast.Name) -> None:
        self.events.append((node.id, isinstance(node.ctx, (ast.Store, ast.Del))))

    def visit_FunctionDef(self, node) -> None:
        self.events.append((node.name, True))
        for default in node.args.defaults + node.args.kw_defaults:
            if default is not None:
                self.visit(default)
        inner = _Order()
        for stmt in node.body:
            inner.visit(stmt)
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
        bound = {name for name, store in inner.events if store} | params
        self.events += [(name, False) for name, store in inner.events if not store and name not in bound]

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        inner = _Order()
        inner.visit(node.body)
        self.events += [(name, False) for name, store in inner.events if not store and name not in params]

    def _comprehension(self, node) -> None:
        inner = _Order()
        bound = set()
        for generator in node.generators:
            inner.visit(generator.iter)
            target = _Order()
            target.visit(generator.target)
            bound |= {name for name, _ in target.events}
            for condition in generator.ifs:
                inner.visit(condition)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                inner.visit(getattr(node, part))
        self.events += [(name, False) for name, store in inner.events if not store and name not in bound]

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def _jumps(body: list[ast.stmt]) -> bool:
    """A jump that leaves the body itself (not a `break` of a loop nested in it)."""
    def walk(nodes, in_loop: bool) -> bool:
        for node in nodes:
            if isinstance(node, _SCOPES):
                continue
            if isinstance(node, (ast.Return, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)):
                return True
            if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
                return True
            nested = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
            if walk(list(ast.iter_child_nodes(node)), nested):
                return True
        return False

    return walk(body, False)


def _bound_outside(tree: ast.Module, loop: ast.AST) -> set[str]:
    """Names bound anywhere in the file outside the loop's body (flow-insensitively)."""
    inside = {id(n) for stmt in loop.body for n in ast.walk(stmt)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


class _Rename(ast.NodeTransformer):
    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id == "self":
            return ast.copy_location(ast.Name("self_", node.ctx), node)
        return node


def move(source: str, loop_line: int) -> Moved | None:
    """The loop at `loop_line` with its body moved into `moved_step` of `_moved_step.py`."""
    tree = ast.parse(source)
    loop = next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and n.lineno == loop_line), None
    )
    if loop is None or not loop.body or loop.body[0].lineno == loop.lineno or _jumps(loop.body):
        return None
    order = _Order()
    for stmt in loop.body:
        order.visit(stmt)
    first_use: dict[str, bool] = {}
    written: set[str] = set()
    read: set[str] = set()
    for name, store in order.events:
        first_use.setdefault(name, store)
        (written if store else read).add(name)
    outside = _bound_outside(tree, loop)
    header_names = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} if isinstance(loop, (ast.For, ast.AsyncFor)) else set()
    if (written & read & outside) - header_names:
        return None  # a counter or an accumulator of the enclosing code
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    imported = {(a.asname or a.name).split(".")[0] for n in imports for a in n.names}
    params = sorted(
        name for name, store in first_use.items()
        if not store and name not in imported and name not in _BUILTINS
    )
    body = [_Rename().visit(stmt) for stmt in ast.parse(ast.unparse(ast.Module(body=loop.body, type_ignores=[]))).body]
    arguments = ["self_" if name == "self" else name for name in params]
    lines_of_module = [ast.unparse(n) for n in imports if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    lines_of_module += [ast.unparse(n) for n in imports if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
    module = "\n".join(lines_of_module) + "\n\n\n" + f"def {FUNCTION}({', '.join(arguments)}):\n"
    module += "".join("    " + line + "\n" for stmt in body for line in ast.unparse(stmt).splitlines())

    lines = source.splitlines(keepends=True)
    first, last = loop.body[0], loop.body[-1]
    indent = lines[first.lineno - 1][: len(lines[first.lineno - 1]) - len(lines[first.lineno - 1].lstrip())]
    call = f"{indent}{FUNCTION}({', '.join(params)})\n"
    lines[first.lineno - 1 : last.end_lineno] = [call]
    after = max((n.end_lineno for n in imports if n.col_offset == 0), default=0)
    if after == 0 and tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(getattr(tree.body[0], "value", None), ast.Constant):
        after = tree.body[0].end_lineno  # after the docstring
    lines[after:after] = [f"from {MODULE} import {FUNCTION}\n"]
    text = "".join(lines)
    try:
        new_tree = ast.parse(text)
        ast.parse(module)
    except SyntaxError:
        return None
    shift = 1 if after < loop.lineno else 0
    moved = next(
        (n for n in ast.walk(new_tree) if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and n.lineno == loop.lineno + shift),
        None,
    )
    if moved is None:
        return None
    return Moved(text, module, moved.lineno, moved.end_lineno)
