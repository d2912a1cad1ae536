"""Which gradient calls of a file the analysis follows, and why not the others.

Every call that can be a gradient event (a backward, an optimizer's step or clear, a clip, an
unscale, a scheduler's step) ends in one of three verdicts:

* **followed**: the loop model holds it (gradlint/model/loops.py put it in a loop, a
  framework's per-batch method or a function reached from one); the rules read it;
* **not training**: the model can say why no rule should read it (under `no_grad`, in a test,
  inside a `step` or `backward` method of its own (an optimizer's, an autograd function's), in another framework's code, in code that runs once:
  no loop holds it and nothing calls its function, or only code no loop reaches);
* **not followed**: training code the model did not reach, with the reason in a few fixed
  words (REASONS).

The verdict is read off what the analysis already decided, never guessed again: the model's
events say what was followed; the file's CPython tree (parsed for every checked file) places
the rest in their functions, loops and `with` blocks.  Whether a function has a caller
elsewhere in the project is the run's to say (gradlint/check/coverage_run.py): a file alone
leaves such a call UNREACHED, with the name its function is called by.
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Optional

from gradlint.core import events as api
from gradlint.core.api_names import BACKWARD, MODULE_FORWARD, SCALER_UNSCALE, STEP

from gradlint.core.findings import FOLLOWED, NOT_FOLLOWED, NOT_TRAINING, UNREACHED, GradientCall

# Reasons a call is not training code.
UNDER_NO_GRAD = "under no_grad"
IN_A_TEST = "in a test"
OWN_METHOD = "inside a step, backward or forward of its own"
OTHER_FRAMEWORK = "another framework's code"
NO_CALLER = "no loop reaches it"  # nothing calls its function, or only code that runs once
# Reasons a call in training code is not followed.
LOOP_NOT_MODELLED = "loop not modelled"
FRAMEWORK_METHOD = "framework method with unknown mode"
CALLER_NOT_FOLLOWED = "caller not followed"
SEVERAL_CLASSES = "receiver may be several classes"
DYNAMIC_NAME = "call through a dynamic name"

NOT_TRAINING_REASONS = (UNDER_NO_GRAD, IN_A_TEST, OWN_METHOD, OTHER_FRAMEWORK, NO_CALLER)
NOT_FOLLOWED_REASONS = (LOOP_NOT_MODELLED, FRAMEWORK_METHOD, CALLER_NOT_FOLLOWED, SEVERAL_CLASSES, DYNAMIC_NAME)

_CLEARS = api.ZERO_GRAD_METHODS
_CLIPS = api.CLIP_FUNCTIONS | api.SELF_UNSCALING_CLIPS
_STEPS = api.STEP_FUNCTIONS  # `xm.optimizer_step(opt)`: a step whatever its receiver
_GRAD_DISABLING = frozenset(name.rsplit(".", 1)[-1] for name in api.GRAD_DISABLING)
# Methods whose body is an optimizer's or an autograd function's own machinery, not a training
# step: `def step(self)` of an optimizer wrapper calls `self.base.step()`, the `backward` of a
# `torch.autograd.Function` calls its kernel's `backward(...)`.  A subclass's `forward` is
# its own computation too (below).
_OWN_METHODS = frozenset({STEP, BACKWARD, *api.ZERO_GRAD_METHODS, SCALER_UNSCALE})
# Bases that make a class no framework's: a method of such a class runs when its caller says so.
_PLAIN_BASES = frozenset(base.rsplit(".", 1)[-1] for base in api.PROTOCOL_FREE_BASES)  # by last name


def _last_name(func: ast.expr) -> Optional[str]:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _receiver(func: ast.expr) -> str:
    """`self.opt` of `self.opt.step`: the dotted text of what the method is called on."""
    if not isinstance(func, ast.Attribute):
        return ""
    parts = []
    node = func.value
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        name = _last_name(node.func)  # `self.optimizers().step()`, `get_opt().step()`
        if name:
            parts.append(name)
    return ".".join(reversed(parts))


def is_gradient_call(call: ast.Call) -> bool:
    """Can this call be a gradient event?  By its name, as the prefilter and the project scan
    read them: a backward, a clear, a clip, an unscale, `xm.optimizer_step(...)`, and a
    `.step()` of something named like an optimizer, a scaler or a scheduler (a sampler's or an
    environment's `step` is none)."""
    name = _last_name(call.func)
    if name is None:
        return False
    if name in api.BACKWARD_NAMES:
        return isinstance(call.func, ast.Attribute) or name != BACKWARD or bool(call.args)
    if name in _CLEARS or name in _CLIPS or name in _STEPS or name == SCALER_UNSCALE:
        return True
    if name != STEP or not isinstance(call.func, ast.Attribute):
        return False
    receiver = _receiver(call.func)
    if not receiver:
        return False
    if api.named_like_optimizer(receiver) or api.named_like_scaler(receiver):
        return True
    # a learning-rate scheduler steps with nothing, an epoch or a metric; a diffusion
    # scheduler's `step(noise, t, sample)` samples
    return api.named_like_scheduler(receiver) and len(call.args) + len(call.keywords) <= 1


def _char_col(lines: list[str], line: int, byte_col: int) -> int:
    """CPython counts columns in UTF-8 bytes; findings count characters (1-based)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    if text.isascii():
        return byte_col + 1
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1


def _no_grad_item(item: ast.withitem) -> bool:
    expr = item.context_expr
    if isinstance(expr, ast.Call):
        expr = expr.func
    name = _last_name(expr)
    return name in _GRAD_DISABLING


def _test_path(path: str) -> bool:
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
        or any(part in ("tests", "test") for part in parts[:-1])
    )


@dataclass
class _Place:
    """Where the walk is: the innermost def (and its class), inside a loop of it, under no_grad."""

    function: Optional[str] = None
    class_bases: Optional[tuple] = None  # bases of the class the def is a method of
    owner: str = ""  # that class's name
    in_loop: bool = False
    no_grad: bool = False
    in_test: bool = False
    methods: frozenset = frozenset()  # the methods that class defines (`self.backward()` may call one)


def _bases(node: ast.ClassDef) -> tuple:
    out = []
    for base in node.bases:
        parts = []
        while isinstance(base, ast.Attribute):
            parts.append(base.attr)
            base = base.value
        if isinstance(base, ast.Name):
            parts.append(base.id)
        if parts:
            out.append(".".join(reversed(parts)))
    return tuple(out)


def gradient_calls(
    tree: ast.Module, path: str, lines: list[str], followed: frozenset, other_framework: bool = False, marked=None
) -> list[GradientCall]:
    """The GradientCall of every call in `tree` that can be a gradient event: judged(placed_calls(...))."""
    return judged(placed_calls(tree, path, lines, marked), followed, other_framework)


def placed_calls(tree: ast.Module, path: str, lines: list[str], marked=None) -> list:
    """(line, col, end, place) of every call in `tree` that can be a gradient event, in order:
    where it stands (def, class, loop, no_grad, test), read before the model is built, while the
    file's tree is at hand (a huge file's trees are let go while it is built in pieces).
    `marked`: the lines where the prefilter saw a spelling (ascending); only the top-level
    statements holding one are walked (None: all)."""
    out: list = []
    top = _Place(in_test=_test_path(path))
    statements = tree.body if marked is None else _holding(tree.body, marked)
    stack = [(statement, top) for statement in statements]
    statement, node_type = ast.stmt, ast.AST
    while stack:
        node, place = stack.pop()
        if isinstance(node, ast.Call) and is_gradient_call(node) and not _own_method_call(node, place):
            col = _char_col(lines, node.lineno, node.col_offset)
            end = ("end", node.end_lineno, _char_col(lines, node.end_lineno, node.end_col_offset))
            out.append((node.lineno, col, end, place))
        if not isinstance(node, statement):
            # an expression (or an argument, a handler, ...) runs where its statement runs: its
            # children, in iter_child_nodes' order, without its places' type tests or the `ctx`
            # markers (no call below them); most of the nodes walked are these
            for name in node._fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    stack.extend([(item, place) for item in value if isinstance(item, node_type) and (
                        marked is None or not isinstance(item, statement) or _holds(item, marked))])
                elif isinstance(value, node_type) and name != "ctx":
                    stack.append((value, place))
            continue
        for child, inner in _children(node, place):
            # a statement without a marked line holds no gradient call: not walked (most of a file)
            if marked is None or not isinstance(child, ast.stmt) or _holds(child, marked):
                stack.append((child, inner))
    out.sort(key=lambda call: (call[0], call[1]))
    return out


def judged(placed: list, followed: frozenset, other_framework: bool = False) -> list[GradientCall]:
    """The verdict of each placed call.  `followed`: the (line, col) where an event the file's
    loop model holds starts, and ("end", line, col) where one ends (a parenthesized receiver may
    start the two parses' spans at different places)."""
    return [
        _verdict(line, col, place, (line, col) in followed or end in followed, other_framework)
        for line, col, end, place in placed
    ]


def _holding(statements: list, marked: list) -> list:
    """The statements whose lines hold one of `marked` (ascending line numbers)."""
    return [statement for statement in statements if _holds(statement, marked)]


def _holds(statement: ast.stmt, marked: list) -> bool:
    at = bisect_left(marked, statement.lineno)
    return at < len(marked) and marked[at] <= (statement.end_lineno or statement.lineno)


# The names of the calls that can be gradient events besides the prefilter's spellings
# (a backward, a step): a clear, a clip, an unscale.  Found as text, like the prefilter's.
_OTHER_WORDS = tuple(sorted(_CLEARS | _CLIPS | {SCALER_UNSCALE}))


def marked_lines(text: str, spelled: list) -> list:
    """The prefilter's lines (`spelled`, ascending) and those where a clear, a clip or an
    unscale is written: the lines a gradient call can start or end on."""
    found = []
    for word in _OTHER_WORDS:
        at = text.find(word)
        while at >= 0:
            found.append(at)
            at = text.find(word, at + len(word))
    lines = set(spelled)
    line, last = 1, 0
    for at in sorted(found):  # each newline counted once, however many words
        line += text.count("\n", last, at)
        last = at
        lines.add(line)
    return sorted(lines)


# A call read backwards, as gradlint/project/scan.py reads calls (`(`, blanks, the name
# reversed), but not a definition's name (`def train(`, `class Net(`).  Linear: the name is
# one run of word characters, which the lookaheads only look past.
_CALLED_REVERSED = re.compile(r"\([ \t]*(\w+)(?!\w)(?![ \t]+(?:fed|ssalc)(?!\w))")


def called_names(text: str) -> frozenset:
    """The names `text` calls (`train(`, `x.update(`), not those it defines, nor those a
    triple-quoted string writes (a docstring's example, a loop switched off by quoting it)."""
    code = _outside_triple_strings(text)
    return frozenset(name[::-1] for name in _CALLED_REVERSED.findall(code[::-1]))


_TRIPLE = re.compile(r"\"\"\"|\'\'\'")


def _outside_triple_strings(text: str) -> str:
    """The text with each triple-quoted string cut out.  Quotes are paired in order, as
    gradlint/project/scan.py pairs them: escapes and a triple quote inside a one-line string
    are not read (an unpaired quote leaves the rest of the text out: fewer callers, never a
    call that is no code)."""
    pieces = []
    kept_from = 0
    opened = None
    for match in _TRIPLE.finditer(text):
        if opened is None:
            opened = match.group()
            pieces.append(text[kept_from : match.start()])
        elif match.group() == opened:
            opened = None
            kept_from = match.end()
    if opened is None:
        pieces.append(text[kept_from:])
    return " ".join(pieces)


# An UNREACHED call's function that its own file names without calling it (`STEPS = {"sgd":
# update}`, `callbacks=[self.update]`, `getattr(self, "update")`): called through that name.
REFERENCED = "ref:"


def referenced_by_name(calls: list[GradientCall], text: str) -> list[GradientCall]:
    """`calls` with REFERENCED before the function of each UNREACHED one that `text` names
    other than where it defines or calls it."""
    names = {call.reason.rsplit(".", 1)[-1] for call in calls if call.verdict == UNREACHED}
    if not names:
        return calls
    named = {name for name in names if _named_not_called(text, name)}
    if not named:
        return calls
    return [
        GradientCall(c.line, c.col, c.verdict, REFERENCED + c.reason)
        if c.verdict == UNREACHED and c.reason.rsplit(".", 1)[-1] in named else c
        for c in calls
    ]


def _named_not_called(text: str, name: str) -> bool:
    """Does `text` hold `name` as a word that is neither a definition (`def name`) nor a call
    (`name(`)?  A string holding exactly the name counts (`getattr(self, "name")`)."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        whole = (start == 0 or not (text[start - 1].isalnum() or text[start - 1] == "_")) and not (
            end < len(text) and (text[end].isalnum() or text[end] == "_")
        )
        if whole:
            before = text[max(0, start - 16) : start].rstrip()
            after = text[end : end + 16].lstrip(" \t")
            if not before.endswith(("def", "class")) and not after.startswith("("):
                return True
        start = text.find(name, end)
    return False


def _outer_fields(node: ast.AST, inner_fields: tuple, outer: _Place, inner: _Place):
    """Each child of `node` with the place it runs in: `inner` for the statements of
    `inner_fields` (a body), `outer` for the rest (a loop's iterable, a def's defaults)."""
    for name, value in ast.iter_fields(node):
        here = inner if name in inner_fields else outer
        if isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    yield item, here
        elif isinstance(value, ast.AST):
            yield value, here


def _def_children(node, place: _Place, bases: Optional[tuple], owner: str = "", methods: frozenset = frozenset()):
    """A def's body runs when the def is called: a place of its own (a method's knows its
    class's name, bases and methods); `test_*` functions are tests."""
    inner = _Place(node.name, bases, owner, False, False, place.in_test or node.name.startswith("test"), methods)
    return _outer_fields(node, ("body",), place, inner)


def _children(node: ast.AST, place: _Place):
    if isinstance(node, ast.ClassDef):
        bases = _bases(node)
        methods = frozenset(n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        out = []
        for child, here in _outer_fields(node, (), place, place):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.extend(_def_children(child, place, bases, node.name, methods))
            else:
                out.append((child, here))
        return out
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _def_children(node, place, None)
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        looped = _Place(place.function, place.class_bases, place.owner, True, place.no_grad, place.in_test, place.methods)
        return _outer_fields(node, ("body", "orelse"), place, looped)
    if isinstance(node, (ast.With, ast.AsyncWith)) and any(_no_grad_item(item) for item in node.items):
        quiet = _Place(place.function, place.class_bases, place.owner, place.in_loop, True, place.in_test, place.methods)
        return _outer_fields(node, ("body",), place, quiet)
    return ((child, place) for child in ast.iter_child_nodes(node))


def _own_method_call(call: ast.Call, place: _Place) -> bool:
    """`self.backward()` in a class that defines `backward`: a call of its own method, whose
    body's gradient calls are judged themselves, not autograd's or an optimizer's event."""
    func = call.func
    return (
        isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
        and func.attr in place.methods
    )


def _verdict(line: int, col: int, place: _Place, followed: bool, other_framework: bool) -> GradientCall:
    if followed:
        return GradientCall(line, col, FOLLOWED)
    if place.no_grad:
        return GradientCall(line, col, NOT_TRAINING, UNDER_NO_GRAD)
    if place.in_test:
        return GradientCall(line, col, NOT_TRAINING, IN_A_TEST)
    if other_framework:
        return GradientCall(line, col, NOT_TRAINING, OTHER_FRAMEWORK)
    if place.class_bases is not None and place.function in _OWN_METHODS:
        return GradientCall(line, col, NOT_TRAINING, OWN_METHOD)
    if place.class_bases and place.function == MODULE_FORWARD:
        # a module's forward computes; a `backward` or `step` it calls is its own layers'
        # (a normalizing flow's inverse `layer.backward(z)`), not a training step
        return GradientCall(line, col, NOT_TRAINING, OWN_METHOD)
    if place.in_loop:
        return GradientCall(line, col, NOT_FOLLOWED, LOOP_NOT_MODELLED)
    if place.class_bases is not None and place.function in api.PER_BATCH_METHODS and _framework_class(place.class_bases):
        return GradientCall(line, col, NOT_FOLLOWED, FRAMEWORK_METHOD)
    if place.function is None:
        return GradientCall(line, col, NOT_TRAINING, NO_CALLER)  # module level, outside any loop: runs once
    prefix = place.owner + "." if place.class_bases is not None else ""
    return GradientCall(line, col, UNREACHED, prefix + place.function)


def _framework_class(bases: tuple) -> bool:
    return any(base.rsplit(".", 1)[-1] not in _PLAIN_BASES for base in bases)


def followed_places(model) -> tuple[frozenset, frozenset]:
    """(this file's followed (line, col), other files' followed (path, line, col)) of a FileModel."""
    here: set = set()
    elsewhere: set = set()
    groups = [loop.events for loop in model.loops] + [f.events for f in model.functions] + [model.lightning_clips]
    for events in groups:
        for event in events:
            span = event.span
            if event.path is None:
                here.add((span.line, span.col))
                here.add(("end", span.end_line, span.end_col))
            else:
                elsewhere.add((event.path, span.line, span.col))
    return frozenset(here), frozenset(elsewhere)
