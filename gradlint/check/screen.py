"""A cheap `ast` screen that hands libcst only the code a loop model can use.

libcst parses about 12 times slower than CPython's `ast` (architecture.md),
and most of a long file has nothing to do with a training loop.  So before
libcst sees a file:

1. `ast.parse` it and list its loops, functions, classes, imports and
   assignments, statement by statement (no expression walk).
2. Mark the lines that can hold a backward or step event (the prefilter's
   spellings), then the calls of functions in the file that hold such lines
   (a loop inlines them), until nothing changes.  A loop that contains no
   mark can never become a loop model (loops.py keeps only loops with a B
   or S event), nor can a class without ``training_step``: when no loop
   and no such class is left, the file has no finding and libcst is never
   imported (``screen`` returns None).  A function an engine runs (its
   process function, a handler registered on it) is a candidate when it
   holds a mark, and then so is every other one, marked or not: a handler
   that only clears or only clips is read against the process function's
   events (model/engines.py).
3. Otherwise keep every top-level statement except the functions and
   classes that nothing of the analysis can reach, and blank those out line
   by line, so every kept node keeps its line and column.  What the
   analysis can reach is a worklist over names: the words of the candidate
   loops and of the marked functions; then every function or class whose
   name is one of them, every import that binds one, and every assignment
   whose target or alias source (as bindings.py reads them:
   ``a = b``, ``a = b.to(dev)``, ``a = DDP(b)``) ends in one, adding their
   words in turn.  Bindings are flow-insensitive, so an assignment in an
   unrelated function can still name the optimizer a loop steps: that is
   why assignments are followed, not only calls.

Any doubt (a syntax error, odd line endings, deep nesting) returns the
source unchanged: libcst then decides, exactly as without the screen.
tests/test_screen.py checks that findings with and without it are equal.
"""

from __future__ import annotations

import ast
import heapq
import re
from bisect import bisect_left
from itertools import accumulate
from typing import Optional

from gradlint.parse import python_ast
from gradlint.core.api_names import (
    AUTOMATIC_OPTIMIZATION,
    BACKWARD,
    CLIP_FUNCTIONS,
    DOCUMENTED_RUNNERS,
    EVENT_WORDS,
    GLOBAL_STEP_HOOK_FUNCTIONS,
    GRAD,
    GRAD_SCALERS,
    HANDLER_REGISTRATION_METHODS,
    ITERATION_HANDLER_DECORATORS,
    ITERATION_RUNNERS,
    OBJECT_CALL,
    OPTIMIZER_CLASSES,
    OPTIMIZER_FACTORIES,
    STEP,
    STEP_FUNCTIONS,
    STEP_HOOK_METHODS,
    TRAINING_STEP,
    WRAPPER_METHODS,
)
from gradlint.parse.ast_nodes import ast_nodes
from gradlint.check.big_expressions import blank_big_expressions
from gradlint.core.events import (
    CONTAINER_READ_METHODS,
    FRAMEWORK_TRAINERS,
    arguments_read_pattern,
    named_like_optimizer,
    named_like_scaler,
)
from gradlint.check.prefilter import for_wrappers
from gradlint.options.settings import Wrappers

_WORD = re.compile(r"(?!\d)\w+")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Top-level blocks a script's training code sits in (`if __name__ == "__main__":`, `with run:`,
# `try:`): cut down to a skeleton around their loops like a def's body (see _loop_holders).
_ROOT_BLOCKS = (ast.If, ast.With, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_ASSIGNS = (ast.Assign, ast.AnnAssign)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
# A class defining one of these may be a framework's per-batch method (Lightning's training_step,
# an override of a framework trainer's): kept whole, like a Lightning module.
_PER_BATCH_METHODS = frozenset({TRAINING_STEP}) | frozenset(
    method for _, _, methods in FRAMEWORK_TRAINERS for method in methods
)


class _Unit:
    """A function, class, import or assignment: what can make a dropped statement needed."""

    __slots__ = ("top", "start", "end", "needed", "node")

    def __init__(self, top: int, start: int, end: int, node: Optional[ast.stmt] = None):
        self.top, self.start, self.end, self.needed, self.node = top, start, end, False, node


class _Walk:
    """One pass over the statements (not the expressions) of a module."""

    def __init__(self, tree: ast.Module, memo=None):
        self.tree = tree
        # Pieces that can be blanked: top-level statements, and the methods of
        # top-level classes.  (start, end, droppable, parent piece or -1)
        self.pieces: list[tuple[int, int, bool, int]] = []
        self.loops: list[tuple[int, int, int, ast.stmt]] = []  # (start, end, piece, node)
        self.functions: list[tuple[str, _Unit, ast.stmt]] = []
        self.classes: list[tuple[str, _Unit, int]] = []  # with the last line of its header
        self.imports: list[tuple[list[str], _Unit]] = []
        self.assigns: list[ast.stmt] = []  # and the statements that change a table (_changes_a_table)
        self.assign_tops: list[int] = []
        # The compound statements between a function piece and each statement in it, by the
        # statement's id (None when one of them cannot be cut down to its header: try, match,
        # else...): what a skeleton of the function keeps around the statements it needs.
        self.paths: dict[int, Optional[tuple]] = {}
        # The `return` statements of each function (by the def's id), not those of defs inside it
        self.returns: dict[int, list[ast.Return]] = {}
        self.piece_nodes: list[ast.stmt] = []
        self.training_step_tops: set[int] = set()
        # The `global` and `nonlocal` statements of each piece: a skeleton keeps them with its
        # assignments, or `global agent; agent = Agent()` would read as a local of its def
        self.declarations: dict[int, list[ast.stmt]] = {}
        # With a memo: per assignment, the words that reach it (_bound_words), kept with the walk
        self.assign_words: Optional[list[list[str]]] = None
        if memo is not None:
            self.assign_words = []
            for stmt in tree.body:  # the walk of an unchanged statement, from an earlier check
                self._add(memo.get(stmt, "walk", lambda stmt=stmt: _Walk.of_statement(stmt)))
            return
        for stmt in tree.body:
            index = self._piece(stmt, -1)
            if isinstance(stmt, ast.ClassDef):
                self._class_piece(stmt, index)
            else:
                self._statement(stmt, index, root=True)

    @classmethod
    def of_statement(cls, stmt: ast.stmt) -> "_Walk":
        part = cls(ast.Module(body=[stmt], type_ignores=[]))
        part.assign_words = [_bound_words(node) for node in part.assigns]
        return part

    def _add(self, part: "_Walk") -> None:
        """Append the walk of the next top-level statement: the same entries, pieces renumbered,
        fresh units (their `needed` marks are this screen's)."""
        offset = len(self.pieces)
        if len(part.pieces) == 1:  # most statements: one piece, a top-level one (parent -1)
            self.pieces += part.pieces
        else:
            self.pieces += [(start, end, droppable, parent + offset if parent >= 0 else -1)
                            for start, end, droppable, parent in part.pieces]
        if part.loops:
            self.loops += [(start, end, top + offset, node) for start, end, top, node in part.loops]
        if part.functions:
            self.functions += [(name, _Unit(u.top + offset, u.start, u.end, u.node), node, method)
                               for name, u, node, method in part.functions]
        if part.classes:
            self.classes += [(name, _Unit(u.top + offset, u.start, u.end, u.node), header_end)
                             for name, u, header_end in part.classes]
        if part.imports:
            self.imports += [(names, _Unit(u.top + offset, u.start, u.end, u.node)) for names, u in part.imports]
        if part.assigns:
            self.assigns += part.assigns
            self.assign_words += part.assign_words
            self.assign_tops += [top + offset for top in part.assign_tops]
        self.paths.update(part.paths)
        self.returns.update(part.returns)
        if part.declarations:
            self.declarations.update((top + offset, nodes) for top, nodes in part.declarations.items())
        self.piece_nodes += part.piece_nodes
        if part.training_step_tops:
            self.training_step_tops |= {top + offset for top in part.training_step_tops}

    def _class_piece(self, node: ast.ClassDef, index: int) -> None:
        """A class of the module or of a class body: its methods and nested classes are pieces
        of their own (a Lightning module is kept whole)."""
        lightning = any(isinstance(m, _FUNCS) and m.name in _PER_BATCH_METHODS for m in node.body)
        self._class(node, index)
        if lightning:
            self.training_step_tops.add(index)
        for member in node.body:
            if isinstance(member, _FUNCS) and not lightning:
                self._statement(member, self._piece(member, index), in_class=True)
            elif isinstance(member, ast.ClassDef) and not lightning:
                self._class_piece(member, self._piece(member, index))
            else:
                self._statement(member, index, in_class=True)

    def _piece(self, stmt: ast.stmt, parent: int) -> int:
        start = _start(stmt)
        # A top-level assignment too: bindings.py reads it only by the names it binds, which the
        # reach below follows (a generated module's data tables are most of its text).
        droppable = isinstance(stmt, _FUNCS + (ast.ClassDef,)) or (parent < 0 and isinstance(stmt, _ASSIGNS))
        self.pieces.append((start, stmt.end_lineno or start, droppable, parent))
        self.piece_nodes.append(stmt)
        return len(self.pieces) - 1

    def _class(self, node: ast.ClassDef, top: int) -> None:
        header_end = node.body[0].lineno - 1 if node.body[0].lineno > node.lineno else node.lineno
        self.classes.append((node.name, _Unit(top, _start(node), node.end_lineno, node), header_end))

    def _statement(self, stmt: ast.stmt, top: int, in_class: bool = False, root: bool = False) -> None:
        # The paths of a def's statements start inside its body; those of a top-level block's
        # at the block itself (its `else:` or `except` holds statements too).
        def_body = isinstance(stmt, _FUNCS)
        root_path: Optional[tuple] = () if def_body or (root and isinstance(stmt, _ROOT_BLOCKS)) else None
        stack = [(stmt, root_path, in_class, None)]
        while stack:
            node, path, method, owner = stack.pop()
            if node is not stmt:
                self.paths[id(node)] = path
            if isinstance(node, _FUNCS):
                # A method (a def right in a class body) is inlined as `self.m()` or `obj.m()` only, any
                # other def as a bare call `f()` only (loops.py, helper_for).
                self.functions.append((node.name, _Unit(top, _start(node), node.end_lineno, node), node, method))
                owner = node
            elif isinstance(node, ast.ClassDef):
                self._class(node, top)
                if any(isinstance(m, _FUNCS) and m.name in _PER_BATCH_METHODS for m in node.body):
                    self.training_step_tops.add(top)
                owner = None
            elif isinstance(node, _LOOPS):
                self.loops.append((node.lineno, node.end_lineno, top, node))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [(a.asname or a.name).split(".", 1)[0] for a in node.names if a.name != "*"]
                self.imports.append((names, _Unit(top, node.lineno, node.end_lineno, node)))
                continue
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) or _changes_a_table(node):
                # (`AGENTS[k] = cls`, `AGENTS.update(...)`, `AGENTS += [cls]` anywhere: reached
                # with the table, so bindings.py sees that its entries are not all written in it)
                self.assigns.append(node)
                self.assign_tops.append(top)
                continue
            elif isinstance(node, ast.Return):
                if owner is not None:
                    self.returns.setdefault(id(owner), []).append(node)
                continue
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.declarations.setdefault(top, []).append(node)
                continue
            for field in _BODIES:  # statements, except handlers, match cases
                children = getattr(node, field, None)
                if children:
                    # Every block can be cut down to a header (see _block_header) but a match's.
                    cut = path is not None and field != "cases" and not isinstance(node, ast.match_case)
                    child_path = (path if node is stmt and def_body else path + ((node, field),)) if cut else None
                    in_body = isinstance(node, ast.ClassDef)
                    stack.extend((child, child_path, in_body, owner) for child in reversed(children))


# These patterns start with the names they look for, not with `\b`: a leading `\b` stops re's
# fast search for the literal after it (2 ms instead of 0.05 on a 3,000-line file, on every
# keystroke in the language server).  _at_words keeps the matches a `\b` would have allowed.
_RUNNER_ARGUMENT = re.compile(r"(?:%s)\s*\(\s*(?:self\s*\.\s*)?(\w+)" % "|".join(map(re.escape, ITERATION_RUNNERS)))


# `trainer.add_event_handler(Events.X, handler, ...)`: the handler runs around the engine's process
# function (model/engines.py); `create_supervised_trainer(...)`: an engine whose process it documents.
_REGISTRATION = re.compile(
    r"(?:%s)\s*\(\s*[\w.]+(?:\([^()]*\))?\s*,\s*(?:self\s*\.\s*)?(\w+)" % "|".join(sorted(HANDLER_REGISTRATION_METHODS))
)
_DOCUMENTED_RUNNER = re.compile(r"(?:%s)\s*\(" % "|".join(sorted(DOCUMENTED_RUNNERS)))


_STEP_HOOK_CALL = re.compile(
    r"(?:%s)\s*\(\s*(?:self\s*\.\s*)?(\w*)" % "|".join(sorted(STEP_HOOK_METHODS | GLOBAL_STEP_HOOK_FUNCTIONS))
)


# `x.backward(` and `x.step(`: a function holding both on its lines may be a step of its own
# (model/loops.py's OWN_STEP), modelled whoever calls it.  (They start with their names: see above.)
_BACKWARD_CALL = re.compile(r"backward\s*\(")
_STEP_CALL = re.compile(r"step\s*\(")

# The names a clip is called by (_clips_and_steps's test), longest first: an alternation of words.
_CLIP_NAMES = re.compile("|".join(map(re.escape, sorted(CLIP_FUNCTIONS, key=lambda name: (-len(name), name)))))


def _handler(node: ast.stmt) -> bool:
    """`@trainer.on(Events.EPOCH_COMPLETED)`: a function a framework may run once per iteration."""
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in ITERATION_HANDLER_DECORATORS
        for d in node.decorator_list
    )


def _clips_and_steps(node: ast.stmt) -> bool:
    """A function that clips and steps through something named like a GradScaler
    (`grad_scaler.step(opt)`): the model reads it on its own (bindings.py's outline, GL006),
    whatever calls it.  (Only the scaler's name: this keeps files whose functions merely clip
    and step an optimizer with a closure away from libcst.)"""
    clips = steps = False
    for sub in ast_nodes(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            clips = clips or name in CLIP_FUNCTIONS
            if name == STEP and sub.args and isinstance(func, ast.Attribute):
                receiver = func.value.attr if isinstance(func.value, ast.Attribute) else getattr(func.value, "id", "")
                steps = steps or named_like_scaler(receiver)
            if clips and steps:
                return True
    return False


def _own_steps(walk: "_Walk", source: str, marked: list[int], held: set) -> list:
    """Candidates for the functions that call a method `backward` and a method `step` on their
    own lines (bindings.py's outline: OWN_STEP), read by lines: a function is asked two
    bisections, never walked."""
    backward_lines = sorted(_method_lines(_BACKWARD_CALL, source))
    if not backward_lines:
        return []
    step_lines = sorted(_method_lines(_STEP_CALL, source))
    return [
        (unit.start, unit.end, unit.top, node)
        for _, unit, node, _ in walk.functions
        if id(node) not in held and _contains(marked, unit.start, unit.end)
        and _contains(backward_lines, unit.start, unit.end) and _contains(step_lines, unit.start, unit.end)
    ]


def _method_lines(pattern: re.Pattern, text: str) -> set[int]:
    """Lines where a match of `pattern` is a method's name (`.name`, spaces allowed between)."""
    found: set[int] = set()
    line, last = 1, 0
    for match in _at_words(pattern, text):
        before = match.start() - 1
        while before >= 0 and text[before] in " \t":
            before -= 1
        if before >= 0 and text[before] == ".":
            line += text.count("\n", last, match.start())
            last = match.start()
            found.add(line)
    return found


def _start(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min([node.lineno] + [d.lineno for d in decorators]) if decorators else node.lineno


def _contains(marks: list[int], start: int, end: int) -> bool:
    i = bisect_left(marks, start)
    return i < len(marks) and marks[i] <= end


def screen(
    source: str, wrappers: Wrappers = Wrappers(), memo: Optional[dict] = None, project_words: tuple = (),
    callbacks: tuple = (), context=None,
) -> Optional[str]:
    """The text libcst should parse; None when no loop in `source` can hold a gradient event.
    `project_words`: names of functions of other modules that touch gradients (gradlint/project);
    `callbacks`: names those functions call, which may be defs of this file handed to them;
    `context`: the check's FileContext, whose tree of `source` is read (None: parsed here)."""
    if "\r" in source:  # line numbers of `ast` and of a "\n" split could disagree: do not touch it
        return source
    try:
        # the parse guard's tree, not parsed again
        tree = context.tree(source) if context is not None else python_ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return source
    walk = _Walk(tree, memo)
    prefilter = for_wrappers(wrappers, project_words)
    kept = _sampler_steps_dropped(source, walk, prefilter)
    token_lines = set(prefilter.event_lines(source, kept))
    if context is not None:  # the lines gradlint/model/coverage.py looks for gradient calls on:
        # every spelling (a scheduler's step in a file of samplers' steps is one too)
        context.event_lines = sorted(token_lines) if kept is None else prefilter.event_lines(source)
    marks = set(token_lines)
    lines = source.split("\n")

    # Functions holding a mark, then the functions that call those, and so on:
    # a loop that calls one of them inlines its events.  Names bound by an import
    # whose line is marked (`from torch.autograd import backward as bw`) count too.
    marked = sorted(marks)
    callees = {name for names, unit in walk.imports if _contains(marked, unit.start, unit.end) for name in names}
    callees |= {name for name, unit, _, _ in walk.functions if _contains(marked, unit.start, unit.end)}
    if OBJECT_CALL in callees or OBJECT_CALL in project_words:
        callees |= _object_names(walk)
    searched: set[str] = set()
    while callees - searched:
        fresh = sorted(callees - searched)
        searched |= set(fresh)
        new_lines = _call_lines(set(fresh), source)
        if not new_lines - marks:
            break
        marks |= new_lines
        marked = sorted(marks)
        callees |= {name for name, unit, _, _ in walk.functions if _contains(marked, unit.start, unit.end)}
        if OBJECT_CALL in callees and OBJECT_CALL not in searched:
            callees |= _object_names(walk)

    candidates = [loop for loop in walk.loops if _contains(marked, loop[0], loop[1])]
    # A function a framework runs once per iteration (`Engine(update)`) is a loop body too.
    run = {match.group(1) for match in _at_words(_RUNNER_ARGUMENT, source)}
    run |= {match.group(1) for match in _at_words(_REGISTRATION, source)}
    clip_lines: list[int] = []  # (read when a function with a mark is asked about)

    def clips_and_steps(unit: "_Unit", node: ast.stmt) -> bool:
        # a clip is called by its name: a function without the word on its lines clips nothing,
        # and its nodes are not read (a loop-dense file's one function is the whole file)
        if not clip_lines:
            clip_lines.extend(sorted(_lines_of(_CLIP_NAMES, source)) or [0])
        return _contains(clip_lines, unit.start, unit.end) and _clips_and_steps(node)

    handlers = [
        (unit.start, unit.end, unit.top, node)
        for name, unit, node, _ in walk.functions
        # the cheap tests first: a function holding no mark is no candidate
        if _contains(marked, unit.start, unit.end) and (name in run or _handler(node) or clips_and_steps(unit, node))
    ]
    # An engine's handlers and process function are one model (model/engines.py): once the file
    # builds an engine and something an engine runs holds a mark (or the engine's process is one
    # the framework documents: it clears, backpropagates and steps), every function registered on
    # an engine is kept whatever its body holds, since a handler that only clears or only clips
    # changes what the process function's events mean (a clear before it, a clip after its step).
    documented = next(_at_words(_DOCUMENTED_RUNNER, source), None) is not None
    if (handlers or documented) and (documented or next(_at_words(_RUNNER_ARGUMENT, source), None) is not None):
        held = {id(node) for _, _, _, node in handlers}
        handlers += [
            (unit.start, unit.end, unit.top, node)
            for name, unit, node, _ in walk.functions
            if id(node) not in held and (name in run or _handler(node))
        ]
    candidates += handlers
    candidates += _own_steps(walk, source, marked, {id(node) for _, _, _, node in handlers})
    if handlers:
        # The statements that register a handler or build an engine a framework documents: the
        # model reads the engine they name and the arguments they hand over (model/engines.py).
        engine_lines = sorted(_lines_of(_REGISTRATION, source) | _lines_of(_DOCUMENTED_RUNNER, source))
        candidates += [
            (start, end, index, walk.piece_nodes[index])
            for index, (start, end, _, parent) in enumerate(walk.pieces)
            if parent < 0 and _contains(engine_lines, start, end)
        ]
    if not candidates and not walk.training_step_tops:
        return None

    # Kept: what is not a def or class, what holds a candidate loop or a backward/step
    # spelling (bindings.py collects engines from every such call), Lightning modules,
    # and what the analysis can reach by name.
    pieces = walk.pieces
    token_marks = sorted(token_lines)
    # A function whose marks all lie in its candidate loops (or in defs inside it, which are
    # reached on their own) is needed for those loops only: it keeps them and what the
    # analysis reaches in it (a skeleton, as for assignments), not its whole body; the words
    # of the rest of it reach nothing (holders: not read as a whole by _needed_tops).  Its calls
    # of functions holding marks do not count: only a loop inlines them.  So is a script's
    # top-level block (`if __name__ == "__main__":`) whose marks all lie in its loops.
    holders = _loop_holders(walk, token_marks, candidates)
    roots = {i for i in _root_blocks(walk) if id(walk.piece_nodes[i]) in holders}
    keep = {i for i, (_, _, droppable, _) in enumerate(pieces) if not droppable and i not in roots}
    in_skeleton = _outermost([loop for loop in candidates if _in_holder(walk, loop, holders)])
    keep |= {loop[2] for loop in candidates if not _in_holder(walk, loop, holders)} | walk.training_step_tops
    # `X.backward(loss)` and `X.step()` are spelled with a mark: only statements holding one can hold them.
    engine_marks = _engine_call_lines(
        [walk.piece_nodes[i] for i, (s, e, _, parent) in enumerate(pieces) if parent < 0 and _contains(token_marks, s, e)],
        memo,
    ) if _backward_with_argument(source) else []
    engine_marks = sorted(set(engine_marks) | _lines_of(_STEP_HOOK_CALL, source)  # bindings reads them anywhere
                          | _lines_of(_RUNNER_ARGUMENT, source))  # `trainer = Engine(update)`: its handlers
    keep |= {i for i, (s, e, droppable, _) in enumerate(pieces)
             if (droppable or i in roots) and _contains(engine_marks, s, e)}
    keep |= _sharing_lines(walk)
    hooks = {match.group(1) for match in _at_words(_STEP_HOOK_CALL, source)}  # a hook function bindings looks into
    keep |= {unit.top for name, unit, _, _ in walk.functions if name in hooks}
    if len(keep) < len(pieces):
        whole, partial = _needed_tops(
            walk, lines, candidates, token_marks, callees, prefilter.wrapper_words, memo, holders, callbacks
        )
        keep |= whole
        for loop in in_skeleton:
            partial.setdefault(loop[2], []).append(loop[3])
        skeletons = _skeletons(walk, partial, keep, lines)
        keep |= set(skeletons)
    else:
        skeletons = {}
    for i in list(keep):  # a kept method keeps its class
        parent = pieces[i][3]
        while parent >= 0 and parent not in keep:
            keep.add(parent)
            parent = pieces[parent][3]
    if len(keep) == len(pieces) and not skeletons:
        return blank_big_expressions(source, lines, tree, marked)
    out = list(lines)
    for i, (start, end, _, parent) in enumerate(pieces):
        if i in keep or (parent >= 0 and parent not in keep):
            continue
        indent = re.match(r"[ \t]*", lines[start - 1]).group()
        for n in range(start - 1, end):
            out[n] = ""
        if parent >= 0:
            out[start - 1] = indent + "pass"  # the class body stays a body
    for i, kept in skeletons.items():
        start, end, _, parent = pieces[i]
        if parent >= 0 and parent not in keep:
            continue  # blanked with its class
        for n in range(start, end + 1):
            out[n - 1] = kept.get(n, "")
    return blank_big_expressions("\n".join(out), lines, tree, marked)


def _loop_holders(walk: "_Walk", marked: list[int], candidates) -> set[int]:
    """The ids of the defs that hold a mark, every one of them inside a candidate (a loop or a
    framework-run function) or inside a def nested in it."""
    if not marked:
        return set()
    # Marks inside a candidate: one sweep, spans by their start, the farthest end so far.
    spans = sorted((start, end) for start, end, _, _ in candidates)
    covered: set[int] = set()
    i, reach = 0, 0
    for line in marked:
        while i < len(spans) and spans[i][0] <= line:
            reach = max(reach, spans[i][1])
            i += 1
        if reach >= line:
            covered.add(line)
    # The innermost def around each other mark (defs nest or are disjoint; a top-level block
    # holds defs, none holds it): a stack sweep.
    defs = [(unit.start, -unit.end, id(node)) for _, unit, node, _ in walk.functions]
    defs += [(walk.pieces[i][0], -walk.pieces[i][1], id(walk.piece_nodes[i])) for i in _root_blocks(walk)]
    defs.sort()
    holding: set[int] = set()
    open_defs: list[tuple[int, int]] = []  # (end, id)
    j = 0
    for line in marked:
        while j < len(defs) and defs[j][0] <= line:
            while open_defs and open_defs[-1][0] < defs[j][0]:
                open_defs.pop()
            open_defs.append((-defs[j][1], defs[j][2]))
            j += 1
        while open_defs and open_defs[-1][0] < line:
            open_defs.pop()
        if open_defs:
            holding.add(open_defs[-1][1])
            if line not in covered:
                holding.add(-1 - open_defs[-1][1])  # a mark of its own outside its candidates
    return {key for key in holding if key >= 0 and -1 - key not in holding}


def _root_blocks(walk: "_Walk") -> list[int]:
    """The pieces that are top-level blocks a skeleton can be cut from (_ROOT_BLOCKS)."""
    return [i for i, node in enumerate(walk.piece_nodes) if isinstance(node, _ROOT_BLOCKS) and walk.pieces[i][3] < 0]


def _in_holder(walk: "_Walk", loop, holders: set[int]) -> bool:
    """Is this candidate inside a def or a top-level block (a piece of its own) that needs only a
    skeleton around it?"""
    piece = walk.piece_nodes[loop[2]]
    return loop[3] is not piece and isinstance(piece, _FUNCS + _ROOT_BLOCKS) and id(piece) in holders


def _outermost(loops: list) -> list:
    """The candidates not inside another one (an inner loop is kept with its outer loop)."""
    out: list = []
    for loop in sorted(loops, key=lambda loop: (loop[0], -loop[1])):
        if not out or loop[0] > out[-1][1]:
            out.append(loop)
    return out


def _sharing_lines(walk: "_Walk") -> set[int]:
    """Top-level assignments that share a line with another statement (`a = 1; b = 2`): blanking
    works by lines, so they stay."""
    tops = [i for i, piece in enumerate(walk.pieces) if piece[3] < 0]
    out = set()
    for before, after in zip(tops, tops[1:]):
        if walk.pieces[before][1] >= walk.pieces[after][0]:
            out |= {i for i in (before, after) if isinstance(walk.piece_nodes[i], _ASSIGNS)}
    return out


def _skeletons(walk: "_Walk", partial: dict, keep: set, lines: list[str]) -> dict[int, dict[int, str]]:
    """Function pieces needed only for some statements in them (assignments, candidate loops,
    a factory's returns, defs, classes and imports): the lines to keep of each, with their text.

    The def's header, a header for every block around each statement, and
    the statement itself, whole: still valid Python, every kept node on its own
    line and column, and nothing else for libcst to parse.  A block that
    cannot stand alone (`else:`, `elif`, `try:`, `except`, `finally:`) gets
    a header of the same indentation that can (`if 1:`, `if  cond:`).  Where
    that is not possible (a match case, a body on its header's line) the
    piece is kept whole.
    """
    out: dict[int, dict[int, str]] = {}
    for top, statements in partial.items():
        if top in keep:
            continue
        node = walk.piece_nodes[top]
        if isinstance(node, _FUNCS):
            kept: Optional[dict[int, str]] = _block_header(node, "body", lines)
        elif isinstance(node, _ROOT_BLOCKS) and walk.pieces[top][3] < 0:
            kept = {}  # (its statements' paths start at the block: its headers come with them)
        else:
            keep.add(top)
            continue
        first = walk.pieces[top][0]
        statements = statements + walk.declarations.get(top, [])
        # How many of the statements kept whole span each line of the piece: a block inside one
        # of them keeps its own header line as written, never rewritten for another statement.
        spans = [(_start(node), node.end_lineno or node.lineno) for node in statements]
        cover = [0] * (walk.pieces[top][1] - first + 2)
        for start, end in spans:
            cover[start - first] += 1
            cover[end - first + 1] -= 1
        cover = list(accumulate(cover))
        for node, (start, end) in zip(statements, spans):
            path = walk.paths.get(id(node))
            if path is None or kept is None:
                kept = None
                break
            for ancestor, field in path:
                header = _block_header(ancestor, field, lines)
                if header is None:
                    kept = None
                    break
                kept.update((n, text) for n, text in header.items() if cover[n - first] == (start <= n <= end))
            if kept is None:
                break
            for n in range(start, end + 1):
                kept.setdefault(n, lines[n - 1])
        if kept is None:
            keep.add(top)
        else:
            out[top] = kept
    return out


_ELSE = re.compile(r"(else|finally)\s*:")
_TRY_STAR = (ast.TryStar,) if hasattr(ast, "TryStar") else ()  # Python 3.11's `except*`


def _block_header(node: ast.stmt, field: str, lines: list[str]) -> Optional[dict[int, str]]:
    """The header lines (number -> text) under which the `field` block of `node` stays valid
    Python on its own; None when there is none."""
    body = getattr(node, field)
    first = body[0].lineno
    if field == "body" and not isinstance(node, (ast.Try, ast.ExceptHandler) + _TRY_STAR):
        start, end = _start(node), max(node.lineno, first - 1)
        header = {n: lines[n - 1] for n in range(start, end + 1)}
        text, col = lines[node.lineno - 1], node.col_offset
        if isinstance(node, ast.If) and text.startswith("elif", col):
            header[node.lineno] = text[:col] + "if  " + text[col + 4 :]  # same columns after it
        return header
    if field == "orelse" and isinstance(node, ast.If) and isinstance(body[0], ast.If) and len(body) == 1:
        if lines[body[0].lineno - 1].startswith("elif", body[0].col_offset):
            return {}  # the elif's own header is rewritten as an `if`
    if field == "handlers":
        return {}  # each `except` header is rewritten as an `if`
    if field == "body" or isinstance(node, ast.ExceptHandler):  # `try:`, `except ...:`
        if first == node.lineno:
            return None
        indent = lines[node.lineno - 1][: node.col_offset]
        return {node.lineno: indent + "if 1:"}
    # `else:` or `finally:`: the line that opens the block, found above its first statement
    col = node.col_offset
    for n in range(first, 0, -1):
        text = lines[n - 1]
        if _ELSE.match(text, col) and not text[:col].strip():
            if n == first:  # `else: x = 1`: the keyword becomes `if 1` of the same width
                return {n: text[:col] + "if 1" + text[col + 4 :]} if text.startswith("else", col) else None
            return {n: text[:col] + "if 1:"}
        if n < first and text.strip() and not text.lstrip().startswith("#"):
            return None
    return None


# Words without which no `x.step(...)` of the file can be an optimizer's (or a scaler's)
# step, whatever x is (gradlint/model/classify.py, _step_event): bindings.py gives a name the
# kind optimizer or scaler only from a value built by one of these classes or factories, or
# from torch.optim, and a manual update (`p -= lr * p.grad`) reads a `.grad`.
_STEP_VOCABULARY = frozenset(OPTIMIZER_CLASSES | OPTIMIZER_FACTORIES | GRAD_SCALERS | {"optim", GRAD})
# The words of the vocabulary that hold no other one: every word of it holds one of these.
_VOCABULARY_CORES = tuple(sorted(w for w in _STEP_VOCABULARY if not any(o != w and o in w for o in _STEP_VOCABULARY)))


def _has_vocabulary_word(text: str) -> bool:
    """Is one of the words of `text` (as _WORD.findall cuts them) in _STEP_VOCABULARY?  Found
    from the occurrences of each core by str.find, each run of word characters read once: the
    same answer as a set of every word of the file, for a fraction of its cost."""
    for core in _VOCABULARY_CORES:
        i = text.find(core)
        while i >= 0:
            start = i
            while start > 0 and _is_word(text[start - 1]):
                start -= 1
            end = i + len(core)
            while end < len(text) and _is_word(text[end]):
                end += 1
            word = _WORD.search(text, start, end)  # a run's word starts after its leading digits
            if word is not None and word.group() in _STEP_VOCABULARY:
                return True
            i = text.find(core, end)
    return False


def _steps_by_name(word: str) -> bool:
    """A name of unknown kind whose `.step(...)` is a step: an optimizer's, or a scaler's
    (`scaler.step(opt)`), as bindings.is_optimizer and is_scaler read names."""
    return named_like_optimizer(word) or named_like_scaler(word)


def no_loop_by_text(source: str, wrappers: Wrappers = Wrappers(), project_words: tuple = ()) -> bool:
    """True when `screen` would return None, decided from the text alone (no parse): a file
    whose only spellings are calls of a method named `step` written without any word of an
    optimizer, each on a receiver that cannot be an optimizer or a scaler by its name (a
    diffusion pipeline's `self.scheduler.step(...)`), and no name of a framework's per-batch
    method (`training_step`, `compute_loss`, `fit_batch`: _PER_BATCH_METHODS).  False when
    only the statements can tell (a bare name's step may be a helper's parameter).
    `project_words`: as screen's (a call of another module's gradient code counts)."""
    if "\r" in source or any(method in source for method in _PER_BATCH_METHODS):
        return False  # a framework runs the optimizer step around such a method: screen decides
    prefilter = for_wrappers(wrappers, project_words)
    steps = prefilter.plain_steps(source)
    if steps is None:
        return False
    kept = _sampler_steps_dropped(source, None, prefilter, steps_only=True)
    return kept is not None and not any(kept(source, where) for where in steps)


def _sampler_steps_dropped(source: str, walk: "Optional[_Walk]", prefilter, steps_only: bool = False):
    """For a file whose only spellings are calls of a method named `step`, written without any
    word of an optimizer: a test that keeps the `x.step(` whose x could still be an optimizer
    or a scaler by its name (the `self.scheduler.step(noise, t, latents)` of a diffusion
    sampler cannot).  None (every spelling counts) for any other file.  Without the walk
    (no_loop_by_text), a bare name's step counts.  `steps_only`: the caller knows every
    spelling is a plain step."""
    if not steps_only and not prefilter.only_plain_steps(source):
        return None
    if _has_vocabulary_word(source):
        return None
    # A bare `x.step(` where x is a parameter of some def steps whatever a call hands that
    # parameter (loops.py substitutes the argument's name, along the whole chain of inlined
    # calls): such a name counts when some argument is named like an optimizer or a scaler.
    parameters = None if walk is None else {
        arg.arg
        for _, _, node, _ in walk.functions
        for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    }

    def kept(text: str, where: int) -> bool:
        i = _skip_back(text, where - 1)
        if i < 0 or text[i] != "." or "\n" in text[i:where]:
            return True  # not `x.step(` on one line as far as a cheap look tells: counts
        dot = i
        i = _skip_back(text, i - 1)
        if "\n" in text[i:dot]:
            return True  # a comment may stand between the name and its dot: counts
        end = i + 1
        while i >= 0 and _is_word(text[i]):
            i -= 1
        word = text[i + 1 : end]
        if not word:
            # `xs[0].step(`, `"s".step(`: no dotted name, no event (classify.py); a `)` may
            # close a parenthesised name (`(opt).step(`): it counts
            return end == 0 or text[end - 1] not in "]\"'"
        if word[0].isdigit():
            return False  # a number's attribute
        if _steps_by_name(word):
            return True  # an optimizer or a scaler by its name
        before = _skip_back(text, i)
        if before >= 0 and text[before] == "." and "\n" not in text[before:i]:
            return False  # `a.b.step(`: the name's last part is b, whatever a stands for
        if parameters is None:
            return True  # no statements read: it may be a parameter
        return word in parameters and handed_an_optimizer()

    handed: list[bool] = []

    def handed_an_optimizer() -> bool:
        """Does some call of the file hand a name that steps by its name (loops.py,
        _argument_map: the dotted name of a positional or keyword argument)?  Asked only for
        a bare parameter's step, so the walk of the tree is rare."""
        if not handed:
            handed.append(any(_steps_by_name(word) for word in _argument_names(walk.tree)))
        return handed[0]

    return kept


def _argument_names(tree: ast.AST):
    """The last part of every dotted name handed to a call of `tree` (not `*args`)."""
    for node in ast_nodes(tree):
        if isinstance(node, ast.Call):
            values = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
            values += [keyword.value for keyword in node.keywords if keyword.arg is not None]
            for value in values:
                parts = _dotted_parts(value)
                if parts:
                    yield parts[-1]


def _skip_back(text: str, i: int) -> int:
    """The index of the last character at or before `i` that is not a blank or a backslash."""
    while i >= 0 and text[i] in " \t\r\n\\":
        i -= 1
    return i


def _backward_with_argument(source: str) -> bool:
    """Can the text hold a call `X.backward(arg)`?  Its name is followed by something other
    than `()` (an argument, a space, a line break), so not when every `backward` of the text,
    comments and strings included, is `backward()`.  False spares _engine_call_lines a walk of
    every statement with a mark: it finds engines by their backward with an argument."""
    return source.count(BACKWARD) != source.count(BACKWARD + "()")


def _engine_call_lines(statements, memo=None) -> list[int]:
    """Lines of `X.backward(loss)` and `X.step()` on a receiver that has both: bindings.py
    finds DeepSpeed-style engines from these calls wherever they are, so they stay."""
    backward: dict[str, list[int]] = {}
    step: dict[str, list[int]] = {}
    for statement in statements:
        calls = _receiver_calls(statement) if memo is None else memo.get(
            statement, "receiver calls", lambda statement=statement: _receiver_calls(statement)
        )
        for receiver, kind, line in calls:
            (backward if kind == BACKWARD else step).setdefault(receiver, []).append(line)
    lines = [n for r in backward.keys() & step.keys() for n in backward[r] + step[r]]
    return sorted(lines)


def _receiver_calls(statement: ast.stmt) -> list[tuple[str, str, int]]:
    """(receiver, "backward" or "step", line) of the statement's `X.backward(arg)` and `X.step()`."""
    out = []
    for node in ast_nodes(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            parts = _dotted_parts(node.func.value)
            if parts is None:
                continue
            if node.func.attr == BACKWARD and node.args:
                out.append((".".join(parts), BACKWARD, node.lineno))
            elif node.func.attr == STEP and not node.args:
                out.append((".".join(parts), STEP, node.lineno))
            elif node.func.attr in STEP_FUNCTIONS and node.args:
                out.append((".".join(parts), STEP, node.lineno))
    return out


def _at_words(pattern: re.Pattern, text: str):
    """The matches of `pattern` (which begins with a name) that begin a word: exactly those of
    the pattern with a leading `\b`.  After a match inside a word the search goes on from the
    next character, not from the match's end, as `\b`'s failed attempt would."""
    pos = 0
    while True:
        match = pattern.search(text, pos)
        if match is None:
            return
        start = match.start()
        if start == 0 or not _is_word(text[start - 1]):
            yield match
            pos = max(match.end(), start + 1)
        else:
            pos = start + 1


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"  # what re's `\w` matches in a str pattern


# A word followed by a call's parenthesis: one scan of the text finds the calls of any number of
# names (an alternation of 23,000 generated function names cost seconds per search).
_CALLED_WORD = re.compile(r"(?<!\w)(\w+)\s*\(")


def _object_names(walk: "_Walk") -> set[str]:
    """The names a call of an object may use when a class of the file has a `__call__` that
    holds a mark (`loss_scaler(loss, opt)`, loops.py's object_call): every parameter of a
    def (what a caller hands it) and every name or `self` attribute a call is assigned to.
    Broad by design: it only keeps more of the file for libcst."""
    names: set[str] = set()
    for _, _, node, _ in walk.functions:
        args = node.args
        names.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs)
    for node in walk.assigns:
        if isinstance(node, _ASSIGNS) and isinstance(node.value, ast.Call):  # (not a table's change)
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                elif isinstance(target, ast.Attribute):
                    names.add(target.attr)
    names.discard("self")
    return names


def _call_lines(names: set[str], text: str) -> set[int]:
    """Lines where a call `name(` of one of `names` begins a word."""
    found: set[int] = set()
    line, last = 1, 0
    for match in _CALLED_WORD.finditer(text):
        if match.group(1) in names:
            line += text.count("\n", last, match.start())
            last = match.start()
            found.add(line)
    return found


def _lines_of(pattern: re.Pattern, text: str) -> set[int]:
    """Lines where a match of `pattern` begins a word (see _at_words)."""
    found: set[int] = set()
    line, last = 1, 0
    for match in _at_words(pattern, text):
        line += text.count("\n", last, match.start())
        last = match.start()
        found.add(line)
    return found


# A call whose name holds one of these may be a gradient event (api_names.py's groups
# all do): its receiver and arguments are names the analysis resolves.
FUNCTION, METHOD = "function", "method"  # how a def can be inlined: `f()`, `self.m()`


def _needed_tops(
    walk: _Walk, lines: list[str], candidates, marked: list[int], callees, wrapper_words, memo=None,
    holders: frozenset = frozenset(), callbacks=(),
) -> tuple[set[int], dict[int, list]]:
    """Pieces the analysis needs whole, and per piece of a def the statements in it it needs
    (assignments, `return`s of a factory, and defs, classes and imports inside it, whole).

    `marked`: the lines of the event spellings; `holders`: ids of the defs needed for their
    candidate loops only (_loop_holders), whose other words reach nothing; `callbacks`: names
    another module's reached functions call, which may be defs of this file handed to them."""
    from gradlint.model.loops import MAX_HELPER_DEPTH

    eventish = EVENT_WORDS + tuple(wrapper_words)
    aliases = {
        name
        for names, unit in walk.imports
        if any(word in "\n".join(lines[unit.start - 1 : unit.end]) for word in eventish)
        for name in names
    } | set(callees)
    # A function is needed only when code the model walks can call it (loops.py inlines
    # helpers and closures by name), or when an assignment reached calls it: bindings.py
    # reads what it returns (`sched = make_sched(opt)`).  Otherwise the words of
    # assignments, class headers and imports reach classes, imports and assignments only.
    callables: dict[tuple[str, str], list] = {}
    bound: dict[str, list] = {}
    for name, unit, node, method in walk.functions:
        callables.setdefault((METHOD if method else FUNCTION, name), []).append((unit, node))
    for name, unit, header_end in walk.classes:
        bound.setdefault(name, []).append((unit, None, (unit.start, header_end)))
    for names, unit in walk.imports:
        for name in names:
            bound.setdefault(name, []).append((unit, None, (unit.start, unit.end)))
    assign_words = walk.assign_words if walk.assign_words is not None else map(_bound_words, walk.assigns)
    for node, top, words in zip(walk.assigns, walk.assign_tops, assign_words):
        unit = _Unit(top, node.lineno, node.end_lineno)
        for word in words:
            bound.setdefault(word, []).append((unit, node, None))

    # Code words carry the helper depth at which their code runs: loops.py inlines a
    # call only MAX_HELPER_DEPTH deep, so a name called deeper needs no function kept.
    # Names that are not called (`opt.step(closure)`) may be inlined at any depth.
    depth_of: dict[tuple[str, str], int] = {}
    by_depth: list[tuple[int, str, str]] = []  # a heap: every function is first reached at its least depth
    reached: set[str] = set()  # binding words
    queue: list[str] = []

    def add(words) -> None:
        for word in words:
            if word not in reached:
                reached.add(word)
                queue.append(word)

    def add_text(start: int, end: int) -> None:
        add(_WORD.findall("\n".join(lines[start - 1 : end])))

    def call(kind: str, word: str, depth: int) -> None:
        if depth_of.get((kind, word), depth + 1) > depth:
            depth_of[kind, word] = depth
            heapq.heappush(by_depth, (depth, kind, word))

    frozen_aliases = frozenset(aliases)

    def resolved(node: ast.AST):
        if memo is None:
            return _resolved_names(node, eventish, aliases)
        return memo.get(node, ("names", eventish, frozen_aliases), lambda: _resolved_names(node, eventish, aliases))

    def add_code(node: ast.AST, depth: int) -> None:
        bare, self_calls, closures, names = resolved(node)
        calls = [(FUNCTION, bare), (METHOD, self_calls)] if depth < MAX_HELPER_DEPTH else []
        for kinds, words in calls + [((FUNCTION, METHOD), closures)]:
            for kind in kinds if isinstance(kinds, tuple) else (kinds,):
                for word in words:
                    call(kind, word, depth + 1)
        add(bare | self_calls | names)

    def need(unit: _Unit, node: Optional[ast.stmt]) -> None:
        """The piece whole when `node` is that piece, else the statement in its skeleton."""
        if node is None or node is walk.piece_nodes[unit.top]:
            needed.add(unit.top)
        else:
            partial.setdefault(unit.top, []).append(node)

    made: set[str] = set()

    def factory(name: str) -> None:
        """`x = name(...)`: bindings.py reads what a function of the file by that name returns
        (`sched = make_sched(opt)`), and what those values name; not the rest of its body."""
        if name in made:
            return
        made.add(name)
        for unit, node in callables.get((FUNCTION, name), ()):
            for ret in walk.returns.get(id(node), ()):
                if ret.value is None:
                    continue
                partial.setdefault(unit.top, []).append(ret)
                add(_names_in(ret.value))
                for sub in ast_nodes(ret.value):
                    if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
                        factory(sub.func.id)

    needed: set[int] = set()
    partial: dict[int, list] = {}  # piece -> the statements in it it is needed for
    for loop in candidates:
        add_code(loop[3], 0)
    for word in callbacks:  # called from another module's function that a loop calls
        call(FUNCTION, word, 1)
        call(METHOD, word, 1)
    for name, unit, node, method in walk.functions:
        if id(node) not in holders and _contains(marked, unit.start, unit.end):
            add_code(node, 0)
            if method and name == OBJECT_CALL:
                # called through any name its objects are bound to (`loss_scaler(loss, opt)`),
                # which no word of the loop spells: reached as a method called at depth 1
                call(METHOD, name, 1)
    for _, unit, header_end in walk.classes:  # Lightning bases, base classes of a loop's class
        if _contains(marked, unit.start, unit.end):
            add_text(unit.start, header_end)
    # Lightning's mode, wherever a class of the file sets it (a base's `__init__`, a property):
    # the subclasses that run training steps take it from there
    add([AUTOMATIC_OPTIMIZATION])
    call(METHOD, AUTOMATIC_OPTIMIZATION, 1)
    while by_depth or queue:
        if by_depth:
            depth, kind, word = heapq.heappop(by_depth)
            if depth_of[kind, word] == depth:
                for unit, node in callables.get((kind, word), ()):
                    if not unit.needed:
                        unit.needed = True
                        need(unit, node)
                        add_code(node, depth)
            continue
        word = queue.pop()
        for unit, node, span in bound.get(word, ()):
            if not unit.needed:
                unit.needed = True
                if node is not None:
                    partial.setdefault(unit.top, []).append(node)  # this assignment, not its function
                    add(_assignment_needs(node))
                    if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                        factory(node.value.func.id)  # what it returns
                    elif isinstance(node.value, ast.Call) and _self_method(node.value.func):
                        call(METHOD, node.value.func.attr, 1)  # `self.opt = self.make_optimizer()`
                    continue
                need(unit, unit.node)
                add_text(*span)
    return needed, partial


def _self_method(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _changes_a_table(node: ast.stmt) -> bool:
    """`T.update(...)` (a method call on a bare name that may change it, as a statement) or
    `T += [...]`, `T[k] += v`: statements that change what a name's table holds."""
    if isinstance(node, ast.AugAssign):
        return True
    if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
        return False
    func = node.value.func
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr not in CONTAINER_READ_METHODS


def _bound_words(node: ast.stmt) -> list[str]:
    """The words through which the analysis can reach an assignment: its targets' last names and
    its value's alias sources (sorted: the reach's order is the same in every check)."""
    if isinstance(node, ast.Expr):  # `T.update(...)`: reached with T
        return [node.value.func.value.id]
    words: set[str] = set()
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        _target_words(target, words)
    if node.value is not None:
        _alias_words(node.value, words, WRAPPER_METHODS)
    return sorted(words)


# Callees whose arguments bindings.py reads: optimizer constructions (their parameters),
# wrappers and engines (aliases), and the helpers a parameter expression goes through.
_ARGUMENTS_READ = re.compile(arguments_read_pattern())


def _assignment_needs(node: ast.stmt) -> set[str]:
    """The names bindings.py can read from this assignment: its targets, the callee
    (a kind, an import to qualify, a class), an alias source, and the arguments of
    calls whose arguments it reads.  Not every word: `loss = F.cross_entropy(model(x), y)`
    must not pull in every other assignment to `x` and `y` in the file."""
    if isinstance(node, ast.Expr):  # `T.update(...)`: what it puts in T is not read
        return {node.value.func.value.id}
    out: set[str] = set()
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        _target_words(target, out)
    value = node.value
    if value is None:
        return out
    if not isinstance(value, ast.Call):
        return out | _names_in(value)
    func = value.func
    parts = _dotted_parts(func)
    if parts is None:
        return out | _names_in(value)
    out |= set(parts)  # the callee, receiver included (`b.to(dev)` aliases b)
    if any(_ARGUMENTS_READ.search(part) for part in parts[-2:]):
        out |= _names_in(value)
    elif parts[-1][:1].isupper() and value.args:
        # a class's first argument: bindings.py reads the optimizer a library's wrapper is built
        # from (`LARC(optimizer)`, `Lookahead(base)`) or a scheduler's
        out |= _names_in(value.args[0])
    for keyword in value.keywords:  # `GradScaler(enabled=use_amp)`: bindings reads what use_amp holds
        out |= _names_in(keyword.value)
    return out  # other calls' arguments alias nothing and hold no parameters (bindings.py)


def _self_attribute(node: ast.AST) -> bool:
    """`self.x`: an attribute of the instance, which may hold an instance of a class of the file."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _resolved_names(region: ast.AST, eventish, aliases) -> tuple[set[str], set[str], set[str], set[str]]:
    """The names in `region` that building a loop model can look up: (bare calls `f()`,
    `self.m()` calls, plain names handed to a call that may be an event (a closure for
    `opt.step(closure)`), every name the file's bindings may be asked about).

    Every called name (a helper to inline); everything inside a call that
    may be an event (receiver, arguments: optimizers, modules, parameters);
    every `.grad` write; every `for` loop's iterable (whose parameters a
    `p.grad = None` clears).
    """
    bare: set[str] = set()
    self_calls: set[str] = set()
    closures: set[str] = set()
    out: set[str] = set()
    for node in ast_nodes(region):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name is None:
                out |= _names_in(func)
                continue
            # Only `f(...)`, `self.m(...)`, `x.m(...)` on a plain name (an instance of a
            # class of the file: `agent.learn()`) and `self.x.m(...)` (`self.d_optim.step()`
            # on such an instance kept in an attribute) are inlined as helpers: `x.y.sum()`
            # names no function of the file the model could follow.
            if isinstance(func, ast.Name):
                bare.add(name)
            elif isinstance(func.value, ast.Name) or _self_attribute(func.value):
                self_calls.add(name)
            if name in aliases or any(word in name for word in eventish):
                for sub in ast_nodes(node):  # (one walk for both: the names, the plain ones)
                    if isinstance(sub, ast.Name):
                        out.add(sub.id)
                        closures.add(sub.id)
                    elif isinstance(sub, ast.Attribute):
                        out.add(sub.attr)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            out |= _names_in(node.iter)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            out |= _names_in(node.test)  # a flag may be an accumulation test (bindings.accumulation_flag)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(GRAD in _names_in(t) for t in targets):
                out |= _names_in(node)
    return bare, self_calls, closures, out


def _names_in(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in ast_nodes(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def _target_words(node: ast.expr, out: set[str]) -> None:
    """Last names of what an assignment binds (`self.opt` -> opt), unpacking tuples."""
    if isinstance(node, ast.Name):
        out.add(node.id)
    elif isinstance(node, ast.Attribute):
        out.add(node.attr)
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            _target_words(element, out)
    elif isinstance(node, ast.Starred):
        _target_words(node.value, out)
    elif isinstance(node, ast.Subscript):  # `T[k] = v` writes an item of T: reached with T
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            out.add(node.id)


def _dotted_parts(node: ast.expr) -> Optional[list[str]]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _alias_words(value: ast.expr, out: set[str], wrapper_methods) -> None:
    """Last names of every alias source bindings.py could take from `value`, and more.

    Over-approximates ``Bindings._alias_source`` and the unpacking of
    wrapper calls: the value's own dotted name and its prefix before a
    wrapper method (`b.module` -> b), the receiver of a wrapper method call
    (`b.to(dev)` -> b), and every plain-name argument of a call
    (`DDP(model)`, `accelerator.prepare(model, opt)`).
    """
    if isinstance(value, (ast.Name, ast.Attribute)):
        parts = _dotted_parts(value)
        if parts:
            out.add(parts[-1])
            if len(parts) > 1:
                out.add(parts[-2])
        return
    if isinstance(value, (ast.Tuple, ast.List)):
        for element in value.elts:
            _alias_words(element, out, wrapper_methods)
        return
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr in wrapper_methods:
            _alias_words(func.value, out, wrapper_methods)
        for arg in value.args:
            _alias_words(arg.value if isinstance(arg, ast.Starred) else arg, out, wrapper_methods)
        for keyword in value.keywords:
            _alias_words(keyword.value, out, wrapper_methods)
        return
    if isinstance(value, (ast.IfExp,)):
        _alias_words(value.body, out, wrapper_methods)
        _alias_words(value.orelse, out, wrapper_methods)
