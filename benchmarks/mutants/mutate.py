"""Mutation engine for training loops, independent of gradlint.

Given the source of a correct training script, `mutants(source)` finds its
training loops and returns single-bug variants of it, each labelled with the
rule code that docs/rules.md (../shared/design/rules.md) says must fire.

It deliberately shares no code with gradlint: it reads the file with `ast`,
recognises events by their spelling (zero_grad, backward, step, clip,
unscale_) plus a little name resolution of its own, and edits whole lines.
A mutation that the contract does not clearly call a bug is not produced:
`skips(source)` says which were left out and why (see README.md, "Edge
cases").
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

# --- what the events look like -------------------------------------------------

CLIP_NAMES = {"clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_gradients"}
# Clips that unscale a GradScaler's gradients themselves (rules.md, GL006).
SELF_UNSCALING_CLIP = re.compile(r"accelerat|fabric|self\b")
OPTIMIZER_CTORS = re.compile(
    r"\b(SGD|Adam|AdamW|Adamax|NAdam|RAdam|RMSprop|Adagrad|Adadelta|ASGD|Rprop|SparseAdam|Adafactor|LARS|LAMB|Lamb|"
    r"FusedAdam|DeepSpeedCPUAdam|ZeroRedundancyOptimizer)\s*\("
)
SCHEDULER_CTORS = re.compile(
    r"lr_scheduler\.|\b(StepLR|MultiStepLR|ExponentialLR|CosineAnnealingLR|CosineAnnealingWarmRestarts|OneCycleLR|CyclicLR|"
    r"LambdaLR|MultiplicativeLR|LinearLR|ConstantLR|SequentialLR|PolynomialLR|ChainedScheduler|get_scheduler|"
    r"get_\w*schedule\w*)\s*\("
)
PLATEAU = re.compile(r"ReduceLROnPlateau")
OPTIMIZER_NAME = re.compile(r"opt", re.I)
SCHEDULER_NAME = re.compile(r"sched|lr_s", re.I)
NOT_AN_OPTIMIZER_NAME = re.compile(r"sched|env|prof|ema|swa_|pipe|lr\b", re.I)
SCALER_NAME = re.compile(r"scaler", re.I)
OTHER_FRAMEWORK = re.compile(r"^\s*(import|from)\s+(mxnet|tensorflow|keras|jax)\b", re.M)
TORCH_IMPORT = re.compile(r"^\s*(import|from)\s+torch\b", re.M)
# accelerate/DeepSpeed/Megatron scripts may run under an engine that steps, clears and schedules
# by itself (accelerate's DeepSpeed wrappers make optimizer.step/zero_grad no-ops): no bug to plant.
ENGINE_OWNED = re.compile(r"deepspeed|megatron", re.I)


@dataclass
class Event:
    kind: str  # Z B U C S L
    stmt: ast.stmt  # the statement to move or delete (a whole `for p ...: p.grad = None` for such a clear)
    block: list  # the list of statements holding it
    receiver: str = ""  # opt for S/Z, scaler for U, module/opt text for Z
    order: int = 0  # textual position


@dataclass
class Loop:
    node: ast.stmt
    function: ast.AST | None  # enclosing def, None at module level
    cls: ast.ClassDef | None
    events: list[Event] = field(default_factory=list)

    def of(self, kind):
        return [e for e in self.events if e.kind == kind]


@dataclass
class Mutant:
    code: str  # the rule that must fire
    operator: str  # what was done, e.g. "delete-clear"
    source: str
    loop_start: int  # 1-based line span of the mutated loop in the mutant
    loop_end: int
    description: str
    original_loop_start: int = 0  # the same loop in the clean file
    original_loop_end: int = 0
    # The cross-file operator (to_module.py): the other files of the mutant (name -> text),
    # and the clean baseline it is judged against (the original with the same loop moved):
    # (source, files, loop start, loop end).
    files: dict = field(default_factory=dict)
    baseline: tuple | None = None


# --- reading the file -------------------------------------------------------------


def _text(node) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes: treat as unnamed
        return ""


def _calls(stmt):
    """Calls in a simple statement (nested defs and lambdas excluded)."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(ast.iter_child_nodes(node))


def _call_name(call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _receiver(call) -> str:
    return _text(call.func.value) if isinstance(call.func, ast.Attribute) else ""


COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.Match)
if hasattr(ast, "TryStar"):
    COMPOUND = COMPOUND + (ast.TryStar,)


def _blocks(stmt):
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if block:
            yield block
    for handler in getattr(stmt, "handlers", []) or []:
        yield handler.body
    for case in getattr(stmt, "cases", []) or []:
        yield case.body


def _walk_statements(block):
    """(statement, its block) in textual order, not entering defs or classes."""
    for stmt in block:
        yield stmt, block
        if isinstance(stmt, COMPOUND):
            for inner in _blocks(stmt):
                yield from _walk_statements(inner)


def _is_grad_clear_only(stmt) -> bool:
    """`p.grad = None`, `p.grad.zero_()`, `p.grad.detach_()` and ifs of those."""
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Attribute) and t.attr == "grad" for t in stmt.targets) and _text(stmt.value) == "None"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        func = stmt.value.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in {"zero_", "detach_", "requires_grad_"}
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "grad"
        )
    if isinstance(stmt, ast.If) and not stmt.orelse:
        return all(_is_grad_clear_only(s) for s in stmt.body)
    return False


class FileFacts:
    """Names the file binds, for resolving receivers (our own, small resolution)."""

    def __init__(self, tree: ast.Module, source: str):
        self.source = source
        self.bindings: dict[str, list[tuple[ast.AST, ast.AST | None]]] = {}  # text -> [(value, scope)]
        self.lr_classes = set()
        self.defs: dict[str, list[ast.AST]] = {}
        self._scan(tree, None)

    def _scan(self, node, scope):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(child.name, []).append(child)
                self._scan(child, child)
                continue
            if isinstance(child, ast.ClassDef):
                if any(re.search(r"LRScheduler|_LRScheduler", _text(b)) for b in child.bases):
                    self.lr_classes.add(child.name)
                self._scan(child, scope)
                continue
            if isinstance(child, (ast.Assign, ast.AnnAssign)) and child.value is not None:
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    for name in self._target_names(target):
                        self.bindings.setdefault(name, []).append((child.value, scope))
            self._scan(child, scope)

    @staticmethod
    def _target_names(target):
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                yield from FileFacts._target_names(elt)
        elif isinstance(target, ast.Starred):
            yield from FileFacts._target_names(target.value)
        elif isinstance(target, (ast.Name, ast.Attribute)):
            yield _text(target)

    def values(self, name):
        return [value for value, _ in self.bindings.get(name, [])]

    def is_optimizer(self, name) -> bool:
        if any(OPTIMIZER_CTORS.search(_text(v)) or re.search(r"optim\.\w+\(|optimizers\(\)", _text(v)) for v in self.values(name)):
            return True
        return bool(OPTIMIZER_NAME.search(name.split(".")[-1])) and not NOT_AN_OPTIMIZER_NAME.search(name.split(".")[-1])

    def scheduler_kind(self, name) -> str:
        """'torch' (a known LR scheduler), 'plateau', or '' (unknown)."""
        texts = [_text(v) for v in self.values(name)]
        if any(PLATEAU.search(t) for t in texts):
            return "plateau"
        if any(SCHEDULER_CTORS.search(t) for t in texts):
            return "torch"
        if any(re.match(rf"{re.escape(c)}\s*\(", t) for c in self.lr_classes for t in texts):
            return "torch"
        return ""

    def is_scheduler_name(self, name) -> bool:
        return bool(self.scheduler_kind(name)) or bool(SCHEDULER_NAME.search(name.split(".")[-1]))

    def modules_of_optimizer(self, name, depth=0) -> set[str] | None:
        """Module texts whose .parameters() an optimizer holds; None if unknown."""
        found = set()
        for value in self.values(name):
            if not isinstance(value, ast.Call):
                continue
            found |= self._parameter_owners(value, depth)
        return found or None

    def _parameter_owners(self, node, depth) -> set[str]:
        owners = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and _call_name(sub) in {"parameters", "named_parameters"}:
                owner = _receiver(sub)
                if owner:
                    owners.add(owner)
            elif isinstance(sub, ast.Name) and depth < 2 and sub.id in self.bindings and sub is not node:
                # `params = list(a.parameters()) + ...; opt = Adam(params)`: follow one level
                for value in self.values(sub.id):
                    if isinstance(value, (ast.Call, ast.BinOp, ast.List, ast.ListComp)):
                        owners |= self._parameter_owners(value, depth + 1)
        return owners


def _classify(stmt, facts: FileFacts) -> Event | None:
    if isinstance(stmt, (ast.For, ast.AsyncFor)) and not stmt.orelse and stmt.body and all(
        _is_grad_clear_only(s) for s in stmt.body
    ):
        owner = ""
        if isinstance(stmt.iter, ast.Call) and _call_name(stmt.iter) == "parameters":
            owner = _receiver(stmt.iter)
        return Event("Z", stmt, [], receiver=owner)
    if isinstance(stmt, COMPOUND) or isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None
    kinds = []
    for call in _calls(stmt):
        name = _call_name(call)
        receiver = _receiver(call)
        if name == "zero_grad":
            kinds.append(("Z", receiver))
        elif name in {"backward", "manual_backward"} and "distributed" not in receiver:
            kinds.append(("B", receiver))
        elif name == "unscale_":
            kinds.append(("U", receiver))
        elif name in CLIP_NAMES:
            kinds.append(("C", receiver))
        elif name == "step":
            if SCALER_NAME.search(receiver) and call.args:
                kinds.append(("S", _text(call.args[0])))
            elif facts.is_scheduler_name(receiver):
                kinds.append(("L", receiver))
            elif facts.is_optimizer(receiver):
                kinds.append(("S*" if call.args or call.keywords else "S", receiver))
    if len(kinds) != 1:
        return None  # none, or two events in one statement: not ours to move
    kind, receiver = kinds[0]
    return Event(kind, stmt, [], receiver=receiver)


def _has(block, kind, facts) -> bool:
    for stmt, _ in _walk_statements(block):
        event = _classify(stmt, facts)
        if event and event.kind == kind:
            return True
    return False


def find_loops(tree: ast.Module, facts: FileFacts) -> list[Loop]:
    """Innermost loops whose iterations hold a backward and an optimizer step."""
    loops = []

    def visit(node, function, cls):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child, cls)
            elif isinstance(child, ast.ClassDef):
                visit(child, None, child)
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                if _has(child.body, "B", facts) and (_has(child.body, "S", facts) or _has(child.body, "S*", facts)):
                    inner = [
                        s
                        for s, _ in _walk_statements(child.body)
                        if isinstance(s, (ast.For, ast.AsyncFor, ast.While))
                        and _has(s.body, "B", facts)
                        and (_has(s.body, "S", facts) or _has(s.body, "S*", facts))
                    ]
                    if not inner:
                        loops.append(Loop(child, function, cls))
                        continue
                visit(child, function, cls)
            else:
                visit(child, function, cls)

    visit(tree, None, None)
    for loop in loops:
        order = 0
        for stmt, block in _walk_statements(loop.node.body):
            event = _classify(stmt, facts)
            if event:
                event.block, event.order = block, order
                loop.events.append(event)
                order += 1
    return loops


# --- editing whole lines -----------------------------------------------------------


class Lines:
    def __init__(self, source: str):
        self.lines = source.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"

    def alone(self, stmt) -> bool:
        """The statement owns its lines (no `a; b`, no `if x: stmt`)."""
        first = self.lines[stmt.lineno - 1]
        last = self.lines[stmt.end_lineno - 1]
        before = first.encode()[: stmt.col_offset].decode(errors="replace")
        after = last.encode()[stmt.end_col_offset :].decode(errors="replace").strip()
        return before.strip() == "" and (after == "" or after.startswith("#"))

    def indent_of(self, stmt) -> str:
        line = self.lines[stmt.lineno - 1]
        return line[: len(line) - len(line.lstrip())]

    def piece(self, stmt, indent: str) -> list[str]:
        own = self.indent_of(stmt)
        out = []
        for line in self.lines[stmt.lineno - 1 : stmt.end_lineno]:
            if line.startswith(own):
                out.append(indent + line[len(own) :])
            else:
                out.append(indent + line.lstrip())
        return out


def _edit(source: str, delete=None, insert=None, replace=None) -> str | None:
    """Delete a statement and/or insert lines before a 0-based line index.

    `delete` is (stmt, block); `insert` is (line_index, lines).  Edits are
    applied bottom-up so that line numbers stay valid.  A block emptied by
    the delete gets a `pass`.  Returns None when the result does not parse.
    """
    lines = Lines(source)
    ops = []
    if delete is not None:
        stmt, block = delete
        start, end = stmt.lineno - 1, stmt.end_lineno
        filler = [lines.indent_of(stmt) + "pass\n"] if len(block) == 1 else []
        ops.append((start, end, filler))
    if insert is not None:
        index, new = insert
        ops.append((index, index, new))
    if replace is not None:
        index, new_line = replace
        ops.append((index, index + 1, [new_line]))
    # bottom-up; an insert at the very start of a deleted range goes after the delete is done
    for start, end, new in sorted(ops, key=lambda op: (op[0], op[1]), reverse=True):
        lines.lines[start:end] = new
    text = "".join(lines.lines)
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    return text


# --- the mutation operators ----------------------------------------------------------


@dataclass
class Skip:
    code: str
    line: int
    reason: str


class Mutator:
    def __init__(self, source: str):
        self.source = source
        self.tree = ast.parse(source)
        self.facts = FileFacts(self.tree, source)
        self.lines = Lines(source)
        self.loops = find_loops(self.tree, self.facts)
        self.skips: list[Skip] = []
        self.out: list[Mutant] = []

    # helpers
    def _skip(self, code, node, reason):
        self.skips.append(Skip(code, getattr(node, "lineno", 0), reason))

    def _add(self, loop, code, operator, text, description):
        if text is None:
            self._skip(code, loop.node, f"{operator}: result does not parse")
            return
        delta = len(text.splitlines()) - len(self.source.splitlines())
        node = loop.node
        self.out.append(
            Mutant(code, operator, text, node.lineno, node.end_lineno + delta, description, node.lineno, node.end_lineno)
        )

    def _steps(self, loop):
        return [e for e in loop.events if e.kind == "S"]

    def _optimizers(self, loop):
        return sorted({e.receiver for e in self._steps(loop)})

    def _engine_loop(self, loop) -> bool:
        """DeepSpeed-style: backward and step on the same receiver (the engine clears and clips)."""
        backs = {e.receiver for e in loop.of("B")}
        return any(e.receiver in backs for e in self._steps(loop) if e.receiver)

    def _covers(self, clear_receiver, optimizer) -> bool | None:
        """Does a clear on `clear_receiver` cover every parameter `optimizer` steps? None: unknown."""
        if not clear_receiver:
            return None
        if clear_receiver == optimizer:
            return True
        modules = self.facts.modules_of_optimizer(optimizer)
        if modules is None:
            return None
        if self.facts.is_optimizer(clear_receiver) and not self.facts.values(clear_receiver):
            return None
        clear_modules = self.facts.modules_of_optimizer(clear_receiver) if self.facts.is_optimizer(clear_receiver) else None
        if clear_modules is None:
            clear_modules = {clear_receiver}
        return all(any(m == c or m.startswith(c + ".") for c in clear_modules) for m in modules)

    def _covered_by_union(self, receivers, optimizer) -> bool | None:
        """Do the clears together cover every module the optimizer steps? None: unknown."""
        if optimizer in receivers:
            return True
        modules = self.facts.modules_of_optimizer(optimizer)
        if modules is None:
            return None
        cleared = set()
        for receiver in receivers:
            if self.facts.is_optimizer(receiver):
                owned = self.facts.modules_of_optimizer(receiver)
                if owned is None:
                    return None
                cleared |= owned
            elif receiver:
                cleared.add(receiver)
        return all(any(m == c or m.startswith(c + ".") for c in cleared) for m in modules)

    def _movable(self, event) -> bool:
        return self.lines.alone(event.stmt)

    def _piece_of(self, event, allowed=("C", "U")):
        """The statement, or its enclosing `if` when that if holds nothing else (`if clip: clip(...)`)."""
        return event.stmt, event.block

    def _line_before(self, stmt):
        return stmt.lineno - 1

    def _line_after(self, stmt):
        return stmt.end_lineno

    def _move(self, event_stmt, block, anchor, before: bool):
        piece = self.lines.piece(event_stmt, self.lines.indent_of(anchor))
        index = self._line_before(anchor) if before else self._line_after(anchor)
        return _edit(self.source, delete=(event_stmt, block), insert=(index, piece))

    def _clears_in_helpers(self, loop) -> bool:
        """The loop calls a function or method of this file that clears gradients."""
        called = set()
        for stmt, _ in _walk_statements(loop.node.body):
            if isinstance(stmt, COMPOUND):
                continue
            for call in _calls(stmt):
                called.add(_call_name(call))
        for name in called:
            for definition in self.facts.defs.get(name, []):
                if any(
                    (ev := _classify(s, self.facts)) is not None and ev.kind == "Z"
                    for s, _ in _walk_statements(definition.body)
                ):
                    return True
        return False

    def _rebuilt_in_loop(self, loop) -> bool:
        """The optimizer or its model is built inside the loop: fresh gradients each time."""
        for stmt, _ in _walk_statements(loop.node.body):
            if isinstance(stmt, ast.Assign) and OPTIMIZER_CTORS.search(_text(stmt.value)):
                return True
        return False

    # operators
    def run(self):
        if OTHER_FRAMEWORK.search(self.source) and not TORCH_IMPORT.search(self.source):
            self._skip("*", self.tree, "another framework's file")
            return self
        if ENGINE_OWNED.search(self.source):
            self._skip("*", self.tree, "DeepSpeed/Megatron may own the step and the clear")
            return self
        for loop in self.loops:
            if self._engine_loop(loop):
                self._skip("*", loop.node, "engine loop (backward and step on one receiver: DeepSpeed-style)")
                continue
            if loop.of("S*"):
                self._skip("*", loop.node, "step with arguments (closure): not a plain step")
                continue
            self.delete_clears(loop)
            self.clear_between(loop)
            self.swap_clear(loop)
            self.clip_after_step(loop)
            self.clip_before_backward(loop)
            self.drop_unscale(loop)
            self.step_first(loop)
            self.scheduler_first(loop)
        self.epoch_scheduler_first()
        return self

    def delete_clears(self, loop):
        clears = loop.of("Z")
        if not clears:
            self._skip("GL001", loop.node, "no clear inside the loop to delete")
            return
        if "register_step_post_hook" in self.source:
            self._skip("GL001", loop.node, "an optimizer hook may clear")
            return
        if self._clears_in_helpers(loop):
            self._skip("GL001", loop.node, "a helper the loop calls clears too")
            return
        if self._rebuilt_in_loop(loop):
            self._skip("GL001", loop.node, "optimizer built inside the loop")
            return
        if not all(self._movable(z) for z in clears):
            self._skip("GL001", loop.node, "a clear shares its line")
            return
        text = self.source
        # delete bottom-up, re-parsing between deletes so that positions stay right
        for z in sorted(clears, key=lambda e: e.stmt.lineno, reverse=True):
            tree = ast.parse(text)
            target = _find_same(tree, z.stmt)
            block = _block_of(tree, target)
            text = _edit(text, delete=(target, block))
            if text is None:
                self._skip("GL001", loop.node, "deleting the clears does not parse")
                return
        self._add(loop, "GL001", "delete-clears", text, f"deleted {len(clears)} clear(s) of the loop at line {loop.node.lineno}")

    def _paired_step(self, loop, event, covering=None):
        """The step an event precedes: the first S after it, wrapping round the back edge."""
        steps = self._steps(loop)
        if covering is not None:
            steps = [s for s in steps if covering(s)]
        after = [s for s in steps if s.order > event.order]
        return (after or steps or [None])[0]

    def clear_between(self, loop):
        optimizers = self._optimizers(loop)
        for z in loop.of("Z"):
            if not self._movable(z):
                self._skip("GL002", z.stmt, "clear shares its line")
                continue
            if len(optimizers) == 1:
                step = self._paired_step(loop, z)
            else:
                step = self._paired_step(loop, z, covering=lambda s: self._covers(z.receiver, s.receiver))
            if step is None:
                self._skip("GL002", z.stmt, "cannot pair the clear with a step (several optimizers, unresolved)")
                continue
            backs = [b for b in loop.of("B") if b.order < step.order]
            if not backs:
                self._skip("GL002", z.stmt, "no backward before the step in the iteration")
                continue
            if _contains(z.stmt, step.stmt):
                continue
            text = self._move(z.stmt, z.block, step.stmt, before=True)
            self._add(loop, "GL002", "clear-before-step", text, f"moved {_text(z.stmt).splitlines()[0]} (line {z.stmt.lineno}) right before line {step.stmt.lineno}")

    def _swap_candidates(self, loop, z):
        names = set()
        for name, values in self.facts.bindings.items():
            if not self.facts.is_optimizer(name) or self.facts.is_scheduler_name(name):
                continue
            modules = self.facts.modules_of_optimizer(name)
            if not modules:
                continue
            names.add(name)
            names |= modules
        visible = set()
        for name in names:
            if name.startswith("self.") != z.receiver.startswith("self."):
                continue
            if "(" in name or "[" in name:
                continue
            root = name.split(".")[0]
            scopes = [scope for _, scope in self.facts.bindings.get(root, [])] if root != "self" else [loop.function]
            if root != "self" and not any(scope is None or scope is loop.function for scope in scopes):
                continue
            visible.add(name)
        return sorted(visible - {z.receiver})

    def swap_clear(self, loop):
        optimizers = self._optimizers(loop)
        if any(self.facts.modules_of_optimizer(o) is None for o in optimizers):
            self._skip("GL003", loop.node, "an optimizer's parameters are not resolved")
            return
        for z in loop.of("Z"):
            if not z.receiver or isinstance(z.stmt, (ast.For, ast.AsyncFor)):
                continue
            made = 0
            for other in self._swap_candidates(loop, z):
                receivers = [other if c is z else c.receiver for c in loop.of("Z")]
                uncovered = [o for o in optimizers if not self._covered_by_union(receivers, o)]
                if None in [self._covered_by_union(receivers, o) for o in optimizers]:
                    continue
                if not uncovered:
                    # every module is still cleared by some clear of the loop, only not between one
                    # optimizer's step and another's backward: not GL003's set question, left out
                    self._skip("GL003", z.stmt, "the loop's clears still cover every stepped module together")
                    continue
                line = self.lines.lines[z.stmt.lineno - 1]
                old = z.receiver + ".zero_grad("
                if line.count(old) != 1:
                    continue
                text = _edit(self.source, replace=(z.stmt.lineno - 1, line.replace(old, other + ".zero_grad(")))
                self._add(loop, "GL003", "swap-clear-target", text, f"{z.receiver}.zero_grad() -> {other}.zero_grad() (line {z.stmt.lineno}); uncovered: {', '.join(uncovered)}")
                made += 1
                if made == 2:
                    break

    def _clip_events(self, loop):
        for c in loop.of("C"):
            step = self._paired_step(loop, c)
            if step is None or step.order < c.order:
                continue
            backs = [b for b in loop.of("B") if b.order < c.order]
            if not backs:
                continue
            yield c, step, backs[-1]

    def clip_after_step(self, loop):
        for c, step, _ in self._clip_events(loop):
            if not self._movable(c):
                continue
            anchor = step.stmt
            # past the steps and scaler.update() that directly follow (several optimizers stepped together)
            index = step.block.index(anchor)
            while index + 1 < len(step.block):
                nxt = step.block[index + 1]
                ev = _classify(nxt, self.facts)
                if ev and ev.kind == "S" or re.match(r".*scaler.*\.update\(", _text(nxt)):
                    anchor, index = nxt, index + 1
                else:
                    break
            text = self._move(c.stmt, c.block, anchor, before=False)
            self._add(loop, "GL004", "clip-after-step", text, f"moved the clip of line {c.stmt.lineno} after line {anchor.lineno}")

    def clip_before_backward(self, loop):
        for c, _, back in self._clip_events(loop):
            if not self._movable(c) or _contains(c.stmt, back.stmt):
                continue
            text = self._move(c.stmt, c.block, back.stmt, before=True)
            self._add(loop, "GL005", "clip-before-backward", text, f"moved the clip of line {c.stmt.lineno} before the backward of line {back.stmt.lineno}")

    def drop_unscale(self, loop):
        if "GradScaler" not in self.source:
            return
        for u in loop.of("U"):
            clips = [c for c in loop.of("C") if c.order > u.order]
            if not clips:
                continue
            clip = clips[0]
            if SELF_UNSCALING_CLIP.search(clip.receiver):
                self._skip("GL006", u.stmt, "the clip unscales for itself (accelerator/fabric)")
                continue
            if not self._movable(u):
                continue
            text = _edit(self.source, delete=(u.stmt, u.block))
            self._add(loop, "GL006", "delete-unscale", text, f"deleted {_text(u.stmt)} (line {u.stmt.lineno})")

    def step_first(self, loop):
        first = loop.node.body[0]
        for s in self._steps(loop):
            if not self._movable(s) or s.stmt is first or _contains(s.stmt, first):
                continue
            if not [b for b in loop.of("B") if b.order < s.order]:
                continue
            text = self._move(s.stmt, s.block, first, before=True)
            self._add(loop, "GL007", "step-at-top", text, f"moved {_text(s.stmt)} (line {s.stmt.lineno}) to the top of the loop (line {first.lineno})")

    def scheduler_first(self, loop):
        for sched in loop.of("L"):
            call = next(c for c in _calls(sched.stmt) if _call_name(c) == "step")
            kind = self.facts.scheduler_kind(sched.receiver)
            if kind != "torch":
                self._skip("GL008", sched.stmt, f"scheduler {sched.receiver} not resolved to a torch LR scheduler ({kind or 'unknown'})")
                continue
            if call.args or call.keywords:
                self._skip("GL008", sched.stmt, "scheduler stepped with an argument (plateau/epoch style)")
                continue
            before = [s for s in self._steps(loop) if s.order < sched.order]
            if not before or not self._movable(sched):
                continue
            step = before[-1]
            text = self._move(sched.stmt, sched.block, step.stmt, before=True)
            self._add(loop, "GL008", "scheduler-before-step", text, f"moved {_text(sched.stmt)} (line {sched.stmt.lineno}) before line {step.stmt.lineno}")


    def epoch_scheduler_first(self):
        """GL008, per-epoch: a scheduler stepped after the inner training loop moves to the top of the
        epoch loop (the pre-1.1 convention the contract names)."""
        trained = [loop for loop in self.loops if not self._engine_loop(loop) and not loop.of("S*")]
        for outer in ast.walk(self.tree):
            if not isinstance(outer, (ast.For, ast.AsyncFor, ast.While)) or any(l.node is outer for l in self.loops):
                continue
            # where an iteration trains: an inner training loop, or a call of a function of this
            # file that holds one (`train_one_epoch(...)`, the vision reference scripts' shape)
            trains_at = [l.node.end_lineno for l in trained if _contains(outer, l.node)]
            training_defs = {
                name
                for name, defs in self.facts.defs.items()
                for d in defs
                if any(_contains(d, l.node) for l in trained)
            }
            for stmt, _ in _walk_statements(outer.body):
                if not isinstance(stmt, COMPOUND) and any(_call_name(c) in training_defs for c in _calls(stmt)):
                    trains_at.append(stmt.end_lineno)
            if not trains_at:
                continue
            first = outer.body[0]
            for stmt, block in _walk_statements(outer.body):
                event = _classify(stmt, self.facts)
                if not event or event.kind != "L" or any(_contains(l.node, stmt) for l in self.loops):
                    continue
                if not any(end < stmt.lineno for end in trains_at):
                    continue  # not after the training
                call = next(c for c in _calls(stmt) if _call_name(c) == "step")
                if self.facts.scheduler_kind(event.receiver) != "torch" or call.args or call.keywords:
                    self._skip("GL008", stmt, "epoch scheduler not a resolved torch LR scheduler, or stepped with an argument")
                    continue
                if not self.lines.alone(stmt) or stmt is first:
                    continue
                text = self._move(stmt, block, first, before=True)
                node = outer
                if text is None:
                    continue
                delta = len(text.splitlines()) - len(self.source.splitlines())
                self.out.append(
                    Mutant(
                        "GL008",
                        "epoch-scheduler-at-top",
                        text,
                        node.lineno,
                        node.end_lineno + delta,
                        f"moved {_text(stmt)} (line {stmt.lineno}) to the top of the epoch loop (line {first.lineno})",
                        node.lineno,
                        node.end_lineno,
                    )
                )


def _contains(outer, inner) -> bool:
    return any(node is inner for node in ast.walk(outer))


def _find_same(tree, stmt):
    for node in ast.walk(tree):
        if type(node) is type(stmt) and getattr(node, "lineno", None) == stmt.lineno and node.col_offset == stmt.col_offset:
            return node
    raise LookupError(stmt.lineno)


def _block_of(tree, stmt):
    for node in ast.walk(tree):
        for block in _blocks(node):
            if isinstance(block, list) and any(s is stmt for s in block):
                return block
    raise LookupError(stmt.lineno)


def cross_file(found: list[Mutant], source: str) -> tuple[list[Mutant], list[Skip]]:
    """Each mutant again with its loop's body moved into a function of a second module that
    the file imports and calls (to_module.py); the same label, judged against the original
    with the same loop moved."""
    from to_module import MODULE, move

    out, skips, baselines = [], [], {}
    for m in found:
        if m.original_loop_start not in baselines:
            baselines[m.original_loop_start] = move(source, m.original_loop_start)
        clean = baselines[m.original_loop_start]
        moved = move(m.source, m.loop_start) if clean is not None else None
        if moved is None:
            skips.append(Skip(m.code, m.loop_start, "to-module: the body cannot move (a jump, a counter of the enclosing code)"))
            continue
        out.append(
            Mutant(
                m.code, m.operator + "+to-module", moved.source, moved.loop_start, moved.loop_end,
                m.description + ", then the loop's body moved into another module",
                clean.loop_start, clean.loop_end,
                files={MODULE + ".py": moved.module},
                baseline=(clean.source, {MODULE + ".py": clean.module}, clean.loop_start, clean.loop_end),
            )
        )
    return out, skips


def mutants(source: str, across_files: bool = False) -> tuple[list[Mutant], list[Skip]]:
    """All labelled mutants of a source file, and the mutations left out with why.
    `across_files`: the cross-file operator's mutants instead (see cross_file)."""
    try:
        mutator = Mutator(source).run()
    except (SyntaxError, ValueError):
        return [], [Skip("*", 0, "does not parse")]
    except (LookupError, RecursionError) as error:  # one odd file must not stop a study of hundreds
        return [], [Skip("*", 0, f"mutator failed: {error!r}")]
    seen, unique = set(), []
    for m in mutator.out:
        if m.source not in seen and m.source != source:
            seen.add(m.source)
            unique.append(m)
    if across_files:
        moved, skips = cross_file(unique, source)
        return moved, mutator.skips + skips
    return unique, mutator.skips


if __name__ == "__main__":
    import difflib
    import sys

    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as handle:
            original = handle.read()
        found, skipped = mutants(original)
        for m in found:
            print(f"== {path} {m.code} {m.operator}: {m.description}")
            diff = difflib.unified_diff(original.splitlines(), m.source.splitlines(), lineterm="", n=1)
            print("\n".join(list(diff)[2:]))
        for s in skipped:
            print(f"-- {path}:{s.line} skip {s.code}: {s.reason}")
