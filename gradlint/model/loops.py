"""Find training loops and build each one's structure of gradient events.

A loop body becomes a small tree: events in evaluation order, branches
(keyed by their condition's text, so two `if` blocks with the same
condition take the same side), nested loops, jumps and inlined helper
calls.  flow.py walks paths through it; rules never see libcst.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Optional, Union

import libcst as cst

from gradlint.core import api_names
from gradlint.parse.file_context import FileContext
from gradlint.core.findings import Span
from gradlint.model import arguments, classify, conditions, last_iteration
from gradlint.core import events as api
from gradlint.model.bindings import Bindings, collect
from gradlint.model.call_text import message_text
from gradlint.model.engines import engine_runs
from gradlint.model.event import Event
from gradlint.model.names import AssignedNames, ExpressionNames, dotted, keyword_argument, last, root, target_names
from gradlint.model.positions import Positions
from gradlint.model.walk import walk
from gradlint.options.settings import Wrappers

MAX_HELPER_DEPTH = 3
# a class of the file on top of a class of the file ... on top of a framework's, this many levels
_BASE_DEPTH = 3
# `scope` of an inlined definition that is the checked file's own, reached from another
# module's function (Builder.handed_back)
HOME = "home"


# --- the structure --------------------------------------------------------------


@dataclass
class Branch:
    key: str  # the condition as written: equal keys take equal sides
    accumulation: bool  # looks like `(i + 1) % k == 0` or `accelerator.sync_gradients`
    invariant: bool  # names nothing the loop assigns: same side in every iteration
    then: list["Node"]
    orelse: list["Node"]
    # What each side says of the conditions it is made of, as (key, side, invariant):
    # the `then` of `a and b` has a and b true, the `else` of `a or b` has both false.
    then_implies: tuple = ()
    else_implies: tuple = ()
    reads: frozenset = frozenset()  # the dotted names the condition reads (after substitution)
    calls: bool = False  # the condition calls something (`torch.is_grad_enabled()`): not a plain setting
    divisor: Optional[str] = None  # `accum` of a boundary `(i + 1) % accum == 0`
    # (key, side) of the setting tests whose side makes that count 1: there the boundary always holds
    always_then: tuple = ()
    # The test's and/or structure, for what a side says once other tests are decided
    # (flow._propagate): (kind, key, invariant, children), kind "and", "or" or "atom", each
    # child (formula, polarity): the operand holds when its key is decided `polarity`.
    formula: tuple = ()


@dataclass
class Nested:
    body: list["Node"]


@dataclass
class Jump:
    kind: str  # "continue", "break", "return", "raise", "last" (last_iteration.LAST)


@dataclass
class Helper:
    """An inlined call of a function defined in the file: `return` ends it."""

    body: list["Node"]


@dataclass
class Rebind:
    """An assignment to names some condition of the loop reads: a later branch on that
    condition may take another side than an earlier one did in the same iteration."""

    names: frozenset
    keys: frozenset = frozenset()  # the conditions it outdates (filled when the loop is built)


Node = Union[Event, Branch, Nested, Jump, Helper, Rebind]


@dataclass
class LoopModel:
    span: Span  # the loop's header keyword
    # "for", "while", "training_step" (Lightning manual optimization) or "iteration"
    # (a function a framework runs once per iteration: ignite's `Engine(update)`)
    kind: str
    body: list[Node]
    events: list[Event] = field(default_factory=list)  # everything, nested and inlined
    own: frozenset = frozenset()  # keys of events not inside a nested loop
    # keys of events that belong to a smaller analysed loop inside this one:
    # that loop reports them, so this one does not
    foreign: frozenset = frozenset()
    walks: Optional[list] = field(default=None, repr=False, compare=False)  # flow.walks() fills it
    conditional: Optional[dict] = field(default=None, repr=False, compare=False)  # flow.conditional() fills it
    plain_guards: Optional[dict] = field(default=None, repr=False, compare=False)  # flow.plain_guards() fills it

    def has(self, kind: str) -> bool:
        return any(e.kind == kind for e in self.events)


@dataclass
class FileModel:
    path: str
    bindings: Bindings
    loops: list[LoopModel]
    # C events inside a LightningModule's training_step under automatic optimization
    lightning_clips: list[Event]
    source: str
    # functions that clip and step through a GradScaler, each modelled as one call of its own
    # (kind "function"): only GL006 reads them (the scaled backward may be the caller's)
    functions: list[LoopModel] = field(default_factory=list)
    # The check's FileContext (gradlint/parse/file_context.py): the source's lines and the statement
    # index fixes plan on, for this check only.  A model built without one makes its own.
    context: Optional[FileContext] = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.context is None:
            self.context = FileContext(self.path, self.source)

    @property
    def lines(self) -> list[str]:
        """The source split into lines with their ends (computed once: fixes read it often)."""
        return self.context.lines

    def reads_grad(self) -> bool:
        """Does anything read `.grad` (not only clear it)?"""
        return bool(_GRAD_READ.search(_GRAD_CLEARS.sub("", self.source)))


# Kinds of object that are true whenever they are not None (no __len__ or __bool__ of their
# own: a module may be an empty ModuleList, so modules are not among them).
_TRUE_WHEN_BUILT = frozenset({"optimizer", "scheduler", "scaler", "engine"})
_GRAD_CLEARS = re.compile(r"\.grad\s*=\s*None|\.grad(\.data)?\.zero_\(\)|\.zero_grad\(")
_GRAD_READ = re.compile(r"\.grad\b(?!_)")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


# --- building ---------------------------------------------------------------------


class Context:
    """Name resolution while building one loop (or one inlined helper)."""

    def __init__(self, builder: "Builder", class_name: Optional[str], assigned: frozenset[str]):
        self.builder = builder
        self.bindings = builder.bindings
        self.wrappers = builder.wrappers
        self.class_name = class_name
        self.assigned = assigned  # names the analysed loop assigns (for invariance)
        self.substitution: dict[str, str] = {}
        self.param_vars: dict[str, tuple[str, str]] = {}
        # `name` of `for name, p in model.named_parameters()`, to its `p`; never mutated, replaced
        self.param_names: dict[str, str] = {}
        # parameter variables under a test of their name: a clear there picks some parameters
        self.selective: frozenset[str] = frozenset()
        self.accumulate: Optional[str] = None  # the accelerator inside `with X.accumulate(...)`
        # in an override of a framework trainer's per-batch method: what `super().m(...)` does
        self.super_events: dict = {}
        # the accelerator of a `with X.accumulate(...)` that comes later in the same block: a
        # prepared optimizer's clear here runs while the previous step's sync flag holds
        self.accumulate_later: Optional[str] = None
        # parameters of the inlined helper that its call binds to constants (arguments.py)
        self.constants: dict[str, object] = {}
        # parameters of the inlined helper that its call binds to a test (`update_grad=(i + 1) %
        # k == 0`): the expression and the caller's context, so `if update_grad:` in the helper
        # reads as that test in the caller, the same condition as the caller's own `if`
        self.argument_tests: dict[str, tuple] = {}
        # gradients off: "block" inside `with torch.no_grad():` of this function, "all" in a helper
        # that runs entirely without them (called there, or decorated): no backward in it
        self.grad_off: Optional[str] = None
        self.via: tuple[str, ...] = ()
        # inside a helper of this file: (span, label) of the call in the loop's own code that
        # leads there, a related location of a finding on the helper's misplaced call
        self.call_site: Optional[tuple] = None
        self.helpers: tuple[int, ...] = ()  # ids of helper defs being inlined
        # parameters of the inlined helper bound to the GradScaler's scale (`scale=scaler.get_scale()`):
        # a clip threshold multiplied by it clips as if unscaled (classify._clip_event)
        self.scale_params: frozenset = frozenset()
        # Inside a function of another module (gradlint/model/foreign.py's Scope): its names,
        # spans and path; None in the checked file's own code.
        self.foreign = None
        # in a loop nested in the analysed one: its counters start again every outer iteration
        self.inner_loop = False
        # (counter, bound, sized) of the loop being built (last_iteration.loop_end): a test of
        # its last iteration ends the loop after that iteration
        self.loop_end: Optional[tuple] = None
        # in a helper the loop calls: its names reach the loop's counter only through the
        # parameters the call binds (substitution), and its own `name = <comparison>` lines
        # (`partial = k < len(chunks) - 1`) are in `compared`, not in the file's bindings
        self.loop_end_outside = False
        self.compared: dict = {}
        self.passed_as_is: frozenset = frozenset()  # the helper's parameters its call hands a same-named name

    def child(self, **changes) -> "Context":
        new = Context.__new__(Context)
        new.__dict__.update(self.__dict__)
        new.param_vars = dict(self.param_vars)
        new.__dict__.update(changes)
        return new

    # name resolution
    def substitute(self, name: Optional[str]) -> Optional[str]:
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        if head in self.substitution:
            value = self.substitution[head]
            if head == "self" and (name == value or name.startswith(value + ".")):
                return name  # already the receiver's (`self.d_optim.optimizer` for `self` -> `self.d_optim`)
            return value + dot + rest
        return name

    def name(self, node: cst.BaseExpression) -> Optional[str]:
        return self.substitute(dotted(node))

    def qualify(self, name: Optional[str]) -> Optional[str]:
        if self.foreign is not None and name and root(name) in self.foreign.imports.aliases:
            return self.foreign.imports.qualify(name)  # that module's own imports
        return self.bindings.imports.qualify(name)

    def parameter_owner(self, var: Optional[str]) -> Optional[tuple[str, str]]:
        return self.param_vars.get(var or "")

    def picks_by_name(self, var: Optional[str]) -> bool:
        """`p` sits under a test of its own name (`if "head" in name:`): not all of its owner."""
        return (var or "") in self.selective

    # making events
    def text(self, node: cst.CSTNode, span: Optional[Span] = None) -> str:
        builder = self.builder
        if self.foreign is not None:
            code = self.foreign.code.call_source(node) if span is not None else None
        else:
            code = builder.positions.call_source(node, span) if span is not None else None
        func = (lambda: builder.code(node.func)) if isinstance(node, cst.Call) else None
        return message_text(code if code is not None else builder.code(node), func)

    def span(self, node: cst.CSTNode) -> Span:
        if self.foreign is not None:
            return self.foreign.code.span(node)
        return self.builder.span(node)

    def event(self, kind: str, node: cst.CSTNode, text: Optional[str] = None, **fields) -> Event:
        for key in ("optimizer", "module"):
            if fields.get(key) is not None:
                fields[key] = self.substitute(fields[key])
        span = self.span(node)
        if self.foreign is not None:
            fields.update(path=self.foreign.path, anchor=self.foreign.anchor)
        elif self.call_site is not None:
            fields.update(anchor=self.call_site)
        return Event(kind, span, text if text is not None else self.text(node, span), via=self.via, **fields)


class _CallsInOrder(cst.CSTVisitor):
    """Calls of an expression in evaluation order (arguments before the call)."""

    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def leave_Call(self, original_node: cst.Call) -> None:
        self.calls.append(original_node)


def _itself(visitor):
    return visitor  # read, never changed, once walked


def _calls_found(collector: _CallsInOrder) -> tuple:
    return tuple(collector.calls)


def event_names(wrappers: Wrappers) -> frozenset:
    """The configured wrappers' call names, for the bindings pass (events.py has the API's)."""
    return frozenset(n.rsplit(".", 1)[-1] for n in wrappers.backward_functions + wrappers.step_functions)


class Builder:
    """Builds loop models from libcst nodes.  `bindings` is what the models ask about names:
    the file's Bindings, or, for a file built in pieces, a piece's Recorder of them."""

    def __init__(
        self, module: cst.Module, path: str, wrappers: Wrappers, bindings, positions: Optional[Positions] = None, project=None
    ):
        self.project = project  # gradlint/model/foreign.py's Project: functions of other modules
        # keys of the events of training loops inside other modules' functions (nested_loop)
        self.foreign_loop_events: set = set()
        self.module = module
        self.path = path
        self.wrappers = wrappers
        self.bindings = bindings
        self._codes: dict[int, str] = {}
        self.positions = positions
        # key -> names read, of the conditions of the loop being built (for its Rebind nodes)
        self.conditions: dict[str, frozenset] = {}
        # key -> (count, side) of the loop's setting tests whose side means the count is 1
        self.single_steps: dict[str, tuple[str, bool]] = {}
        self._reassigned: dict[int, frozenset] = {}  # id of a helper def -> names its body assigns
        self._derivations: dict[int, tuple] = {}  # id of a helper def -> its names set once
        # names bound to a GradScaler's scaled loss at this point of the body being built
        # (`loss = scaler.scale(loss)`): SCALED, or (test, side) when only one side of an `if`
        # bound it so; a backward of such a name is a scaled backward on those paths
        self.scaled: dict[str, object] = {}
        # id of an expression -> what a walk of it found (its calls in order, the names whose
        # `.grad` it reads): a statement is modelled again in each loop, branch and inlined
        # call that holds it (4 times on average on training scripts), its subtree walked once
        self._walked: dict[tuple, object] = {}

    def use_piece(self, module: cst.Module, bindings) -> None:
        """Go on with another piece of the file (piecewise.py); node ids of the last one are reused."""
        self.module = module
        self.bindings = bindings
        self._codes = {}
        self._reassigned = {}
        self._derivations = {}
        self._walked = {}

    def done(self) -> None:
        """The models are built: let go of the positions, whose `code` is this builder's method.
        That cycle kept the whole libcst tree alive until the cyclic collector found it, which
        walked the tree first (0.1 s of a 2,000-loop file)."""
        self.positions = None
        self._codes = {}
        self._reassigned = {}
        self._derivations = {}
        self._walked = {}

    def walked(self, node: cst.CSTNode, visitor_type, result):
        """`result(visitor)` of a `visitor_type()` walked over `node`, walked once per node."""
        key = (id(node), visitor_type)
        found = self._walked.get(key)
        if found is None:
            visitor = visitor_type()
            walk(node, visitor)
            self._walked[key] = found = (result(visitor), node)  # the node kept: its id stays its own
        return found[0]

    def code(self, node: cst.CSTNode) -> str:
        """The node's source (generated once: messages and position checks both need it)."""
        key = id(node)
        if key not in self._codes:
            self._codes[key] = self.module.code_for_node(node)
        return self._codes[key]

    def span(self, node: cst.CSTNode) -> Span:
        return self.positions.span(node)

    # -- statements --

    def block(self, stmts, ctx: Context) -> list[Node]:
        out: list[Node] = []
        contexts = self.accumulate_contexts(stmts, ctx)
        for stmt, stmt_ctx in zip(stmts, contexts):
            out.extend(self.statement(stmt, stmt_ctx))
        return out

    @staticmethod
    def accumulate_contexts(stmts, ctx: Context) -> list[Context]:
        """The context of each statement of a block that holds `with X.accumulate(...)`.

        `accumulate()` sets the sync flag on entry, and the prepared optimizer acts only
        while it holds: before the `with` (in the same block) that is the previous
        micro-step's flag, so a clear there runs at the start of a window; after it, the
        flag of this micro-step, as inside."""
        if ctx.accumulate is not None or len(stmts) < 2:
            return [ctx] * len(stmts)
        found = next(
            (
                (index, accelerator)
                for index, stmt in enumerate(stmts)
                if isinstance(stmt, cst.With)
                for accelerator in [classify.accumulate_with(stmt, ctx)]
                if accelerator is not None
            ),
            None,
        )
        if found is None:
            return [ctx] * len(stmts)
        index, accelerator = found
        before, after = ctx.child(accumulate_later=accelerator), ctx.child(accumulate=accelerator)
        return [before] * index + [ctx] + [after] * (len(stmts) - index - 1)

    def suite(self, suite: cst.BaseSuite, ctx: Context) -> list[Node]:
        if isinstance(suite, cst.IndentedBlock):
            return self.block(suite.body, ctx)
        return self.block(suite.body, ctx)  # SimpleStatementSuite: small statements

    def statement(self, stmt: cst.CSTNode, ctx: Context) -> list[Node]:
        # The commonest kinds first, by their exact type: an isinstance of a libcst class goes
        # through ABCMeta (a Python call), and an expression statement was the chain's 17th.
        kind = type(stmt)
        if kind is cst.Expr:
            return self.expression(stmt.value, ctx)
        if kind is cst.SimpleStatementLine:
            return self.block(stmt.body, ctx)
        if kind is cst.Assign:
            return self.assignment(stmt, ctx)
        if isinstance(stmt, cst.SimpleStatementLine):
            return self.block(stmt.body, ctx)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return []  # a def runs nothing; its body counts where it is called
        if isinstance(stmt, cst.If):
            return self.if_statement(stmt, ctx)
        if isinstance(stmt, (cst.For, cst.While)):
            return self.nested_loop(stmt, ctx)
        if isinstance(stmt, cst.With):
            inner = ctx
            pre: list[Node] = []
            for item in stmt.items:
                pre.extend(self.expression(item.item, ctx))
                accelerator = classify.accumulate_context(item, ctx)
                if accelerator is not None:
                    inner = inner.child(accumulate=accelerator)
                mode = classify.grad_mode(item.item, ctx)
                if mode is not None:
                    inner = inner.child(grad_off=None if mode else (ctx.grad_off or "block"))
            return pre + self.suite(stmt.body, inner)
        if isinstance(stmt, cst.Try):
            out = self.suite(stmt.body, ctx)
            if stmt.orelse is not None:
                out += self.suite(stmt.orelse.body, ctx)
            if stmt.finalbody is not None:
                out += self.suite(stmt.finalbody.body, ctx)
            return out
        if isinstance(stmt, cst.Match):
            return self.match_statement(stmt, ctx)
        # small statements
        if isinstance(stmt, (cst.Continue,)):
            return [Jump("continue")]
        if isinstance(stmt, cst.Break):
            return [Jump("break")]
        if isinstance(stmt, cst.Return):
            return (self.expression(stmt.value, ctx) if stmt.value else []) + [Jump("return")]
        if isinstance(stmt, cst.Raise):
            return [Jump("raise")]  # flow.RAISE: leaves every loop; an error path beside others is dropped
        if isinstance(stmt, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            return self.assignment(stmt, ctx)
        if isinstance(stmt, cst.Expr):
            return self.expression(stmt.value, ctx)
        return []

    def assignment(self, stmt, ctx: Context) -> list[Node]:
        """An Assign, AugAssign or AnnAssign: its value's events, then what it binds."""
        value = stmt.value
        out = self.expression(value, ctx) if value is not None else []
        if _a_step(value):
            # `new_lr = scheduler.step()`: torch's LRScheduler.step() returns None, so a
            # schedule whose step returns what the code keeps is a class of its own
            out = [replace(n, own_convention=True) if isinstance(n, Event) and n.kind == api.L else n for n in out]
        handoff = classify.gradient_handoff(stmt, ctx)
        if handoff:
            return out + handoff + [self.rebind(stmt, ctx)]
        grad = classify.classify_grad_assign(stmt, ctx) or classify.fresh_optimizer(stmt, ctx)
        self.note_scaled(stmt, ctx)
        return out + ([grad] if grad is not None else []) + [self.rebind(stmt, ctx)]

    def if_statement(self, stmt: cst.If, ctx: Context) -> list[Node]:
        pre = self.expression(stmt.test, ctx)
        # one side only: a test of the helper's constant arguments (`if do_backward:`), or of an
        # object built on every path (`if scaler is not None:` of `scaler = GradScaler()`)
        decided = arguments.truth(stmt.test, ctx.constants) if ctx.constants else None
        if decided is None:
            decided = self.built_truth(stmt.test, ctx)
        if decided is not None:
            if decided:
                return pre + self.suite(stmt.body, ctx)
            if isinstance(stmt.orelse, cst.If):
                return pre + self.if_statement(stmt.orelse, ctx)
            return pre + (self.suite(stmt.orelse.body, ctx) if isinstance(stmt.orelse, cst.Else) else [])
        ctx = self.name_filtered(stmt.test, ctx)
        handed = _handed_test(stmt.test, ctx)
        before = dict(self.scaled)
        then = self.suite(stmt.body, ctx)
        after_then, self.scaled = self.scaled, dict(before)
        if isinstance(stmt.orelse, cst.If):
            orelse = self.if_statement(stmt.orelse, ctx)
        elif isinstance(stmt.orelse, cst.Else):
            orelse = self.suite(stmt.orelse.body, ctx)
        else:
            orelse = []
        if after_then or self.scaled:
            self.scaled = _scaled_after(stmt.test, after_then, self.scaled)
        # `if p.grad is not None: p.grad.zero_()` (Module.zero_grad's own way), `if p.grad is None:
        # continue`: for a parameter without a gradient there is nothing to clear or update, so
        # the side that has one is what runs, when the other does nothing but go on to the next
        # parameter (and the side kept leaves nothing: an A3C hand-off's `if shared.grad is not
        # None: return` is a decision, not a skip)
        present = self.gradient_present(stmt.test, ctx)
        if present is not None:
            kept, skipped = (then, orelse) if present else (orelse, then)
            if _nothing_but_go_on(skipped) and not any(isinstance(node, Jump) for node in kept):
                return pre + kept
        if _only_rebinds(then) and _only_rebinds(orelse):
            return pre + then + orelse  # no event, no jump: only what it may assign counts
        if self.unscale_once(stmt, then, orelse):
            return pre + then + orelse
        if handed is not None:
            test, caller = handed
            return pre + [self.branch(test, caller, then, orelse)]
        return pre + [self.branch(stmt.test, ctx, then, orelse)]

    def unscale_once(self, stmt: cst.If, then: list, orelse: list) -> bool:
        """Whether the test only asks the scaler whether this unscale_ is still to do.

        An unscale_ alone under a test that reads the scaler's own state (`if state["stage"]
        is not OptState.UNSCALED:` with `state` taken from the scaler, `if scaler.is_enabled():`)
        is skipped only when the gradients are already unscaled or were never scaled: for
        what comes after it, it always ran.  A test of anything else (`if args.unscale:`)
        stays a branch whose other side clips scaled gradients."""
        sides = [side for side in (then, orelse) if not _only_rebinds(side)]
        if len(sides) != 1 or not all(isinstance(n, Rebind) or (isinstance(n, Event) and n.kind == api.U)
                                      for n in sides[0]):
            return False
        scalers = _unscale_receivers(stmt.body if sides[0] is then else stmt.orelse)
        if not scalers:
            return False
        if sides[0] is then and self.tests_enabling_flag(stmt.test, _unscale_calls(stmt.body)):
            return True
        return all(self.reads_state_of(part, scalers) for part in conditions.operands(stmt.test))

    def tests_enabling_flag(self, test: cst.BaseExpression, calls: list) -> bool:
        """Is the test the flag the scaler of each of these `unscale_` calls is built enabled by
        (`scaler = GradScaler(enabled=use_amp)` ... `if use_amp: scaler.unscale_(opt)`), as the
        call's scope sees both?  Where it is false the scaler is off and scales nothing, so the
        clip after it sees true gradients."""
        if not calls:
            return False
        for call in calls:
            flags = self.flag_names(conditions.bare(test), call)
            values = self.bindings.values_seen_at(dotted(call.func.value) or "", call)
            if not flags or not values:
                return False
            # every value a scaler, and one built enabled by the flag (a call the model builds
            # from another module's code sees the file's every value of the name, not its scope's)
            enabling = False
            for value in values:
                callee = last(self.bindings.imports.qualify(dotted(value.func)) or "") if isinstance(value, cst.Call) else ""
                if callee not in api.GRAD_SCALERS:
                    return False
                enabled = keyword_argument(value, api_names.SCALER_ENABLED_KEYWORD)
                enabling = enabling or (enabled is not None and bool(self.flag_names(conditions.bare(enabled), call) & flags))
            if not enabling:
                return False
        return True

    def flag_names(self, node: cst.BaseExpression, call: cst.Call) -> frozenset:
        """The dotted name a flag is, and the one it copies when the scope of `call` assigns it
        once (`use_amp = args.amp`): `{"use_amp", "args.amp"}`."""
        name = dotted(node)
        if name is None:
            return frozenset()
        values = self.bindings.values_seen_at(name, call)
        copied = dotted(conditions.bare(values[0])) if len(values) == 1 else None
        return frozenset({name, copied} - {None})

    def reads_state_of(self, test: cst.BaseExpression, objects: frozenset) -> bool:
        """Whether a test reads an attribute of one of `objects`, itself or through a local
        taken from one (`state = scaler._per_optimizer_states[id(opt)]`)."""
        names = ExpressionNames()
        walk(test, names)
        read = set(names.names)
        for name in names.names:
            for value in self.bindings.assigns.get(name, ()):
                if isinstance(value, cst.BaseExpression):
                    taken = ExpressionNames()
                    walk(value, taken)
                    read |= taken.names
        return any(name.startswith(owner + ".") for name in read for owner in objects)

    @staticmethod
    def name_filtered(test: cst.BaseExpression, ctx: Context) -> Context:
        """The context under a test that reads a parameter's name from `named_parameters()`.

        Both sides of such a test see only the parameters the name picks, so a
        `p.grad = None` there cancels some gradients (freezing part of the model
        for this step) instead of clearing the module."""
        if not ctx.param_names:
            return ctx
        names = ExpressionNames()
        walk(test, names)
        picked = {ctx.param_names[root(n)] for n in names.names if root(n) in ctx.param_names}
        return ctx.child(selective=ctx.selective | picked) if picked else ctx

    def rebind(self, stmt, ctx: Context) -> Rebind:
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, cst.Name):
                value = getattr(stmt, "value", None)
                if isinstance(stmt, cst.Assign) and len(targets) == 1 and isinstance(conditions.bare(value), cst.Comparison):
                    ctx.compared[target.value] = value
                else:
                    ctx.compared.pop(target.value, None)
        names = (ctx.substitute(name) for target in targets for name in target_names(target))
        return Rebind(frozenset(name for name in names if name))

    def branch(self, test: cst.BaseExpression, ctx: Context, then, orelse) -> Branch:
        # `if not x:` is `if x:` with the sides swapped, so both correlate with `if x:`
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, then, orelse = test.expression, orelse, then
        # `if i == len(batches) - 1: opt.step()`: the loop ends after the iteration that runs it
        last = self.last_side(test, ctx)
        if last is not None:
            if last:
                then = _mark(then, last_iteration=True) + [Jump(last_iteration.LAST)]
            else:
                orelse = _mark(orelse, last_iteration=True) + [Jump(last_iteration.LAST)]
        if any(_false_at_first(atom, side, ctx.assigned) for atom, side in _parts(test, cst.And, True)):
            then = _mark(then, skips_first=True)
        # `if epoch == 0: ... else: sched.step()` (an `elif` chain too): true on the first iteration
        if any(_false_at_first(atom, side, ctx.assigned) for atom, side in _parts(test, cst.Or, False)):
            orelse = _mark(orelse, skips_first=True)
        # `if accum == 1 and i == 0: zero_grad()`: a clear that runs on the first iteration only
        # runs before any backward of the loop, so it neither discards a window nor clears for
        # a later iteration: the loop reads as if it ran before it
        if not ctx.inner_loop:
            if any(self.only_first(atom, side, ctx) for atom, side in _parts(test, cst.And, True)):
                then = _without_clears(then)
            if any(self.only_first(atom, side, ctx) for atom, side in _parts(test, cst.Or, False)):
                orelse = _without_clears(orelse)
        # `if scaler is not None:` is `if scaler is None:` with the sides swapped (and `!=` is `==`)
        test, swapped = conditions.positive(test)
        test, swapped = self.as_truth(test, swapped, ctx)
        if swapped:
            then, orelse = orelse, then
        key, accumulation, invariant = self.condition(test, ctx)
        # A guard keeps its meaning inside `and`/`or`: `if accelerator.sync_gradients and
        # max_norm > 0:` runs only on sync steps, so it takes the side `if accelerator.sync_gradients:` takes.
        then_implies = self.implied(test, cst.And, True, ctx)
        else_implies = self.implied(test, cst.Or, False, ctx)
        if accumulation:
            then_steps, else_steps = steps_in(then), steps_in(orelse)
            then = _mark(then, accumulation_guarded=True, off_boundary=bool(else_steps - then_steps))
            orelse = _mark(orelse, accumulation_guarded=True, off_boundary=bool(then_steps - else_steps))
            then, orelse = _mark_boundary(then, key), _mark_boundary(orelse, "!" + key)
        reads = self.conditions.get(key, frozenset())
        calls = conditions.calls_something(test)
        divisor = conditions.modulo_divisor(test) if accumulation else None
        if divisor is not None:
            divisor = ctx.substitute(divisor) or divisor
        formula = self.formula(test, ctx) if isinstance(conditions.bare(test), cst.BooleanOperation) else ()
        return Branch(key, accumulation, invariant, then, orelse, then_implies, else_implies, reads, calls, divisor,
                      formula=formula)

    def formula(self, test: cst.BaseExpression, ctx: Context, depth: int = 0) -> tuple:
        """The and/or structure of a (positive) test, each part under the key a test of it alone
        would have: `grad_scaler and (clip_norm or clip_value)`."""
        key, _, invariant = self.condition(test, ctx)
        bare = conditions.bare(test)
        if depth >= _MAX_FORMULA_DEPTH or not isinstance(bare, cst.BooleanOperation):
            return ("atom", key, invariant, ())
        children = []
        for operand, side in _parts(bare, type(bare.operator), True):
            operand, swapped = conditions.positive(operand)
            operand, swapped = self.as_truth(operand, swapped, ctx)
            children.append((self.formula(operand, ctx, depth + 1), side != swapped))
        return ("and" if isinstance(bare.operator, cst.And) else "or", key, invariant, tuple(children))

    def condition(self, test: cst.BaseExpression, ctx: Context) -> tuple[str, bool, bool]:
        """A condition's key (its text), whether it is an accumulation test, whether it is loop-invariant."""
        names = self.walked(test, ExpressionNames, _itself)
        key = " ".join(self.code(test).split())
        key = " ".join(ctx.substitute(part) or part for part in key.split(" "))
        reads = frozenset(ctx.substitute(name) or name for name in names.names)
        self.conditions[key] = self.conditions.get(key, frozenset()) | reads
        assigned = ctx.assigned
        # Only what the loop itself assigns can change between iterations as far as this file
        # shows: a call of nothing else (`torch.is_grad_enabled()`, `dist.get_rank() == 0`) is
        # read as the same on every iteration (precision first: an unread call is no evidence
        # that an event under it runs only sometimes).
        varying = any(n in assigned or root(n) in assigned for n in names.names)
        if isinstance(conditions.bare(test), cst.BooleanOperation):
            # `accum == 1 and batch_index == 0`: a chain marks a window only where one of its
            # operands does; a setting among them picks a regime, the rest are plain tests
            accumulation = any(self.window(atom, ctx)[0] for atom in conditions.operands(test))
        else:
            accumulation, setting = self.window(test, ctx, names, key)
            if setting:
                single = conditions.single_step_side(test)
                if single is not None:
                    self.single_steps[key] = (ctx.substitute(single[0]) or single[0], single[1])
        return key, accumulation, not (varying or accumulation)

    def window(self, test: cst.BaseExpression, ctx: Context, names=None, key=None) -> tuple[bool, bool]:
        """(does this test mark an accumulation window, is it a setting) for one test."""
        if names is None:
            names = self.walked(test, ExpressionNames, _itself)
            key = " ".join(self.code(test).split())
            key = " ".join(ctx.substitute(part) or part for part in key.split(" "))
        assigned = ctx.assigned
        varying = any(n in assigned or root(n) in assigned for n in names.names)
        flag = any(self.bindings.accumulation_flag(n) for n in names.names)
        accumulation = names.has_modulo or flag or bool(api.ACCUMULATION_WORDS.search(key))
        # `if cfg.accum_steps > 1:` compares a setting with a number: it picks one regime for the
        # whole loop (accumulate, or clear and step every batch), the same side in every
        # iteration, though what it guards keeps its accumulation marks.  A window's boundary
        # (a modulo, a flag such as `accelerator.sync_gradients`) moves; so does a counter (a
        # name the file increments anywhere).
        setting = (
            accumulation
            and not (names.has_modulo or flag or varying or names.has_call)
            and conditions.compares_with_number(test)
            and not any(conditions.incremented(n, self.bindings.incremented) for n in names.names)
        )
        return accumulation and not setting, setting

    def as_truth(self, test: cst.BaseExpression, swapped: bool, ctx: Context) -> tuple[cst.BaseExpression, bool]:
        """`x is None` of an object the code builds (a scaler, an optimizer, a scheduler, a
        module) is `not x`: such an object is true whenever it is not None, so `if scaler is not
        None:` in a caller and `if scaler:` in the helper it calls take the same side."""
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
            return test, swapped
        target = test.comparisons[0]
        if not (isinstance(target.operator, cst.Is) and isinstance(target.comparator, cst.Name)
                and target.comparator.value == "None"):
            return test, swapped
        name = dotted(test.left)
        if name is None:
            return test, swapped
        name = ctx.substitute(name) or name
        bindings = self.bindings
        if bindings.is_scaler(name) or bindings.is_optimizer(name) or bindings.kind(name) in _TRUE_WHEN_BUILT:
            together = bindings.absent_together(name)
            # names None together are one test: `if optimizer1 is not None:` / `if scheduler1 ...`
            return (test.left if together == name else cst.parse_expression(together)), not swapped
        return test, swapped

    def built_truth(self, test: cst.BaseExpression, ctx: Context) -> Optional[bool]:
        """The truth of `x`, `x is not None` (or their negations) when the file builds `x` as an
        optimizer, scheduler or scaler by its class on every assignment (bindings.surely_built):
        such an object is never None and always true.  None when it cannot tell."""
        test, swapped = conditions.positive(test)
        if isinstance(test, cst.Comparison):
            target = test.comparisons[0]
            if not (len(test.comparisons) == 1 and isinstance(target.operator, cst.Is)
                    and isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
                return None
            test, swapped = test.left, not swapped
        name = dotted(test)
        if name is None or not isinstance(test, (cst.Name, cst.Attribute)):
            return None
        name = ctx.substitute(name) or name
        if name in ctx.assigned or not self.bindings.surely_built(name):
            return None
        return not swapped

    @staticmethod
    def gradient_present(test: cst.BaseExpression, ctx: Context) -> Optional[bool]:
        """The truth of a test that only asks whether a parameter of a loop over parameters
        has a gradient (`p.grad is not None`, `p.requires_grad`, their negations, an `and` of
        them), on the side where it has one; None for any other test."""
        if not ctx.param_vars:
            return None
        test, swapped = conditions.positive(test)
        if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And) and not swapped:
            sides = (Builder.gradient_present(test.left, ctx), Builder.gradient_present(test.right, ctx))
            return True if sides == (True, True) else None
        present = None
        if isinstance(test, cst.Comparison):  # `p.grad is None` (positive() took a `not` off)
            target = test.comparisons[0]
            if (isinstance(target.operator, cst.Is) and isinstance(target.comparator, cst.Name)
                    and target.comparator.value == "None" and _parameter_attribute(test.left, api_names.GRAD, ctx)):
                present = False
        elif _parameter_attribute(test, api_names.REQUIRES_GRAD, ctx):
            present = True
        return None if present is None else present != swapped

    def last_side(self, test: cst.BaseExpression, ctx: Context) -> Optional[bool]:
        """last_iteration.last_side of `test` in the loop being built, when its counter is only
        ever the loop's target (no `i += 1`); a bare name set to a comparison reads as it
        (`is_accumulating = i < len(xs) - 1` ... `if not is_accumulating:`): one the loop's
        code sets just before, or one the file sets once.  In a helper the loop calls, a name
        reaches the loop's counter only through a parameter its call binds to it."""
        end = ctx.loop_end
        if end is None or end[0] in self.bindings.assigns or conditions.incremented(end[0], self.bindings.incremented):
            return None
        bare = conditions.bare(test)
        while isinstance(bare, cst.UnaryOperation) and isinstance(bare.operator, cst.Not):
            bare = conditions.bare(bare.expression)
        values = {}
        if isinstance(bare, cst.Name):
            if bare.value in ctx.compared:
                values[bare.value] = ctx.compared[bare.value]
            elif not ctx.loop_end_outside:
                assigned = self.bindings.assigns.get(bare.value, ())
                if len(assigned) == 1:
                    values[bare.value] = assigned[0]
        if not ctx.loop_end_outside:
            return last_iteration.last_side(test, end, values)

        def through_parameters(name: Optional[str]) -> Optional[str]:
            head = (name or "").partition(".")[0]
            if head in ctx.substitution:
                return ctx.substitute(name)
            # a parameter named like the argument it is handed has no entry
            return name if head in ctx.passed_as_is else None

        return last_iteration.last_side(test, end, values, through_parameters)

    def only_first(self, atom: cst.BaseExpression, side: bool, ctx: Context) -> bool:
        return _only_first(atom, side, ctx.assigned, self.bindings)

    def implied(self, test: cst.BaseExpression, operator: type, side: bool, ctx: Context) -> tuple:
        """(key, side, invariant) of each operand of an `and` chain (operator And, for its
        `then`) or an `or` chain (Or, for its `else`); () for any other condition."""
        parts = _parts(test, operator, side)
        if len(parts) < 2:
            return ()
        out = []
        for atom, atom_side in parts:
            atom, swapped = conditions.positive(atom)
            atom, swapped = self.as_truth(atom, swapped, ctx)
            key, _, invariant = self.condition(atom, ctx)
            out.append((key, atom_side != swapped, invariant))
        return tuple(out)

    def match_statement(self, stmt: cst.Match, ctx: Context) -> list[Node]:
        pre = self.expression(stmt.subject, ctx)
        out: list[Node] = []
        for index in range(len(stmt.cases) - 1, -1, -1):
            case = stmt.cases[index]
            body = self.suite(case.body, ctx)
            key = f"match@{id(stmt)}#{index}"
            out = out + body if _only_rebinds(body) and _only_rebinds(out) else [Branch(key, False, False, body, out)]
        return pre + out

    def nested_loop(self, stmt: cst.For | cst.While, ctx: Context) -> list[Node]:
        end = last_iteration.loop_end(stmt) if isinstance(stmt, cst.For) else None
        ctx = ctx.child(inner_loop=True, loop_end=end, loop_end_outside=False)
        inner = ctx
        pre: list[Node] = []
        if isinstance(stmt, cst.For):
            pre = self.expression(stmt.iter, ctx)
            owner = self.iteration_owner(stmt.iter, ctx)
            if owner is not None:
                inner = ctx.child()
                for var in _target_names(stmt.target, owner[0]):
                    inner.param_vars[var] = owner
                inner.param_names = {**ctx.param_names, **_name_targets(stmt.target, owner[0])}
            zipped = self.zip_owners(stmt, ctx)
            if zipped:
                inner = ctx.child()
                inner.param_vars.update(zipped)
        else:
            pre = self.expression(stmt.test, ctx)
        hoisted, statements = self.first_iteration_clears(stmt, inner)
        body = self.block(statements, inner) if hoisted else self.suite(stmt.body, inner)
        pre = pre + hoisted
        orelse = self.suite(stmt.orelse.body, ctx) if stmt.orelse is not None else []
        if _only_rebinds(body):
            return pre + body + orelse
        if _replays_a_schedule(stmt, body):
            # `for _ in range(start_epoch): scheduler.step()`: a resume replaying the schedule to
            # where it stopped sets its position, as `scheduler.step(epoch)` does
            body = _mark(body, has_args=True)
        if isinstance(stmt, cst.For):
            # each run binds the target anew: a test of it taken before the loop may go either way
            names = (ctx.substitute(name) for name in target_names(stmt.target))
            body = [Rebind(frozenset(name for name in names if name)), *body]
        if ctx.foreign is not None and _is_training_body(body):
            # a training loop of another module's function: that module's check judges it
            self.foreign_loop_events |= {e.key for e in _events_of(body)}
        return pre + [Nested(body)] + orelse

    def first_iteration_clears(self, stmt: cst.For | cst.While, ctx: Context) -> tuple[list[Node], list]:
        """(the clears, the other statements) of a nested loop whose body starts by clearing
        under a test of its own counter's first value (`for j, part in enumerate(chunks): if
        j == 0: opt.zero_grad()`): that clear runs once, before the inner loop's
        micro-batches, as a clear before the loop would; else ([], [])."""
        counter = _first_counter(stmt) if isinstance(stmt, cst.For) else None
        if counter is None or not isinstance(stmt.body, cst.IndentedBlock):
            return [], []
        statements = list(stmt.body.body)
        for index, statement in enumerate(statements):
            if isinstance(statement, cst.If) and statement.orelse is None and _tests_first(statement.test, counter):
                clears = self.suite(statement.body, ctx)
                if clears and all(isinstance(node, Event) and node.kind == api.Z for node in clears):
                    return clears, statements[:index] + statements[index + 1 :]
                return [], []
            # only assignments that call nothing before it (`x, y = part`): they hold no event,
            # and nothing is built twice
            if not isinstance(statement, cst.SimpleStatementLine) or conditions.calls_something(statement):
                return [], []
        return [], []

    def zip_owners(self, stmt: cst.For, ctx: Context) -> dict:
        """`{"p": ("module", "model"), "shared_p": ("module", "shared_model")}` for
        `for p, shared_p in zip(model.parameters(), shared_model.parameters()):`."""
        iterable, target = stmt.iter, stmt.target
        if not (isinstance(iterable, cst.Call) and dotted(iterable.func) == "zip" and isinstance(target, cst.Tuple)):
            return {}
        if len(iterable.args) != len(target.elements) or any(a.star or a.keyword for a in iterable.args):
            return {}
        owners = {}
        for arg, element in zip(iterable.args, target.elements):
            owner = self.iteration_owner(arg.value, ctx)
            if isinstance(element.value, cst.Name) and owner is not None and owner[0] == "module":
                owners[element.value.value] = owner
        return owners

    def iteration_owner(self, iterable: cst.BaseExpression, ctx: Context) -> Optional[tuple[str, str]]:
        """What the loop variable of `for p in <iterable>` belongs to, for `p.grad = None`."""
        if isinstance(iterable, cst.Subscript):  # group["params"]
            owner = ctx.parameter_owner(ctx.name(iterable.value))
            if owner is not None and owner[0] == "group":
                return ("optimizer", owner[1])
            return None
        if isinstance(iterable, cst.Attribute) and iterable.attr.value == api_names.PARAM_GROUPS:
            name = ctx.name(iterable.value)
            return ("group", name) if name else None
        resolved = self.bindings.resolve_params(iterable, 0)
        if resolved is not None and len(resolved) == 1:
            return ("module", ctx.substitute(next(iter(resolved))))
        return None

    # -- expressions --

    def expression(self, node: cst.BaseExpression, ctx: Context) -> list[Node]:
        out: list[Node] = []
        for call in self.walked(node, _CallsInOrder, _calls_found):
            out.extend(self.call(call, ctx))
        return out

    def call(self, call: cst.Call, ctx: Context) -> list[Node]:
        # A method the file defines (even one named `backward` or `step`) is followed,
        # not taken for the API call of the same name.
        if ctx.super_events and _super_method(call) in ctx.super_events:
            return [self.documented(kind, target, call, ctx, f"super().{_super_method(call)}()")
                    for kind, target in ctx.super_events[_super_method(call)]]
        if _is_self_call(call) and ctx.foreign is None and len(ctx.helpers) < MAX_HELPER_DEPTH:
            overrides = self.overrides_for(call, ctx)
            if len(overrides) == 1:
                definition, owner, label, *other_module = overrides[0][1]
                return [Helper(self.inline(definition, call, owner, label, ctx, *other_module))]
            if overrides:
                return [self.one_of(call, overrides, ctx)]
        helper = self.helper_for(call, ctx) if _is_self_call(call) else None
        if helper is None and _own_backward_call(call) and len(ctx.helpers) < MAX_HELPER_DEPTH:
            # only a class of this file (also on an object this file handed another module's
            # function): another module's class with its own backward() (the library's own
            # repository: accelerate's `Accelerator.backward`) is not followed yet
            helper = self.file_helper(call, ctx) if ctx.foreign is None else self.handed_back(call, ctx)
        if helper is None and self.project is not None and _guessed_step(call, ctx) and len(ctx.helpers) < MAX_HELPER_DEPTH:
            # `self.optimizer_scheduler.step()` on an object the file cannot resolve, which the
            # project knows to be of its own class with a step(): that method, not the API's step
            # guessed from the name (an object the file does resolve keeps what it resolves to)
            helper = self.project.helper_for(call, ctx)
        event = classify.classify_call(call, ctx) if helper is None else None
        if event is not None and event.kind == api.B and ctx.grad_off == "all":
            return []  # a helper run without gradients computed its loss without a graph too
        if event is not None and event.kind == api.C and self.clip_switched_off(call, ctx):
            return []
        if event is not None and event.kind == api.B and not event.scaled and self.scaled:
            return self.scaled_backward(call, event, ctx)
        if event is not None:
            if event.kind == api.S and event.closure:
                return self.closure_step(call, event, ctx)
            if event.kind == api.S and self.bindings.clears_after_step(event.optimizer):
                # a step hook that clears runs right after the step
                hook = Event(api.Z, event.span, f"{event.text} (its step hook clears)", optimizer=event.optimizer, via=event.via)
                return [event, hook]
            if event.sync_only:
                # Inside `with accelerator.accumulate(...)`: runs only on the syncing step.
                # Same key as the user's own `if accelerator.sync_gradients:` so both take one side.
                key = f"{ctx.accumulate}.sync_gradients"
                marked = replace(event, accumulation_guarded=True, boundary=key)
                return [Branch(key, True, False, [marked], [])]
            if event.kind == api.Z and event.optimizer and ctx.accumulate_later is not None:
                # Before `with accelerator.accumulate(...)`: the previous micro-step's sync flag,
                # so the prepared optimizer clears at the start of each window.
                key = f"{ctx.accumulate_later}.sync_gradients before accumulate()"
                marked = replace(event, accumulation_guarded=True, boundary=key)
                return [Branch(key, True, False, [marked], [])]
            return [event]
        helper = helper or self.helper_for(call, ctx)
        if helper is None and self.project is not None and len(ctx.helpers) < MAX_HELPER_DEPTH:
            alternatives = self.project.alternatives_for(call, ctx)
            if alternatives:
                return [self.one_of(call, alternatives, ctx)]
        if helper is None:
            opaque = classify.opaque_call(call, ctx)
            return [opaque] if opaque is not None else []
        definition, class_name, label, *other_module = helper
        return [Helper(self.inline(definition, call, class_name, label, ctx, *other_module))]

    def overrides_for(self, call: cst.Call, ctx: Context) -> list:
        """`self.run_step()` in a class of the file whose own `run_step` is a stub left to its
        subclasses, or that it does not define at all (`BaseTrainer` calls `self.process_batch`,
        which only its subclasses write), in this file or other modules of the project: which
        one runs is the object's class, so each override is a path (as `one_of` builds them).
        Empty when the class defines the method, or only one subclass of the file or none
        overrides it (file_helper's answer)."""
        method = call.func.attr.value
        if ctx.class_name is None:
            return []
        found = self.bindings.find_method(ctx.class_name, method)
        if found is not None and not _stub(found[0]):
            return []
        if found is None and not self.bindings.classes.get(ctx.class_name):
            return []
        # the subclasses of the loop's class (a sibling's override never runs in this loop)
        here = self.bindings.overrides(ctx.class_name, method)
        elsewhere = self.project.overrides(ctx.class_name, method, call, ctx) if self.project is not None else []
        if not elsewhere and len(here) < 2:
            return []  # one override of the file or none: file_helper's
        return [(owner, (definition, owner, f"self.{method}()")) for definition, owner in here] + elsewhere

    def one_of(self, call: cst.Call, alternatives: list, ctx: Context) -> Branch:
        """`agent.update(batch)` on an object that is an instance of one of several classes:
        each class's method on its own side of a branch (`type(agent) is SAC`), so every path
        through the loop runs one of them, the same one in every iteration unless the loop
        rebinds the object."""
        receiver = ctx.name(call.func.value) or dotted(call.func.value) or ""
        invariant = receiver not in ctx.assigned and root(receiver) not in ctx.assigned
        (class_name, helper), *rest = alternatives
        then = self.alternative(call, helper, ctx)
        orelse = self.alternative(call, rest[0][1], ctx) if len(rest) == 1 else [self.one_of(call, rest, ctx)]
        return Branch(f"type({receiver}) is {class_name}", False, invariant, then, orelse)

    def alternative(self, call: cst.Call, helper, ctx: Context) -> list[Node]:
        """One side of `one_of`: the class's method inlined, or for an object whose class cannot
        be told (helper None) the call as it is read without a model (an opaque call)."""
        if helper is None:
            opaque = classify.opaque_call(call, ctx)
            return [opaque] if opaque is not None else []
        definition, owner, label, *other_module = helper
        return [Helper(self.inline(definition, call, owner, label, ctx, *other_module))]

    def note_scaled(self, stmt, ctx: Context) -> None:
        """Keep `self.scaled` up to date with an assignment: `loss = scaler.scale(loss)` binds
        `loss` to the scaled loss, any other binds it to something else."""
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        names = [ctx.substitute(name) for target in targets for name in target_names(target)]
        if not self.scaled and not isinstance(stmt.value, cst.Call):
            return
        for name in names:
            self.scaled.pop(name, None)
        value = stmt.value
        if (
            len(names) == 1 and names[0] and isinstance(targets[0], cst.Name)
            and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == api_names.SCALER_SCALE
        ):
            scaler = ctx.name(value.func.value)
            if self.bindings.is_scaler(scaler) and not self.bindings.scaler_disabled(scaler):
                self.scaled[names[0]] = SCALED

    def scaled_backward(self, call: cst.Call, event: Event, ctx: Context) -> list[Node]:
        """`loss.backward()` of a name bound to the scaled loss: scaled, on every path or on the
        side of the test under which it was bound (one test, so both take the same side)."""
        func = call.func
        state = self.scaled.get(ctx.name(func.value)) if isinstance(func, cst.Attribute) else None
        if state is None:
            return [event]
        scaled = replace(event, scaled=True)
        if state is SCALED:
            return [scaled]
        test, side = state
        return [self.branch(test, ctx, [scaled], [event]) if side else self.branch(test, ctx, [event], [scaled])]

    def clip_switched_off(self, call: cst.Call, ctx: Context) -> bool:
        """A clip by its name (`clip_grad_norm_(...)`) that runs a function of the project
        whose writes this call's constant arguments switch off (`clip_grad=False`): it
        only measures the norm."""
        helper = self.helper_for(call, ctx)
        if helper is None:
            return False
        definition = helper[0]
        first = definition.params.params[0].name.value if definition.params.params else None
        constants = arguments.bound_constants(definition, call, skip_first=first in ("self", "cls"), outer=ctx.constants)
        return bool(constants) and arguments.switched_off(definition, constants)

    def closure_step(self, call: cst.Call, event: Event, ctx: Context) -> list[Node]:
        closure = call.args[0].value
        body: list[Node] = []
        if isinstance(closure, cst.Lambda):
            body = self.expression(closure.body, ctx)
        elif isinstance(closure, cst.Name):
            definition = self.bindings.only_function(closure.value)
            if definition is not None:
                body = [Helper(self.inline(definition, None, ctx.class_name, closure.value, ctx))]
        return body + [event]

    def helper_for(self, call: cst.Call, ctx: Context):
        if len(ctx.helpers) >= MAX_HELPER_DEPTH:
            return None
        if ctx.foreign is not None:  # inside another module's function: its names, not this file's
            return self.project.helper_for(call, ctx) or self.handed_back(call, ctx)
        found = self.file_helper(call, ctx, placed=True)
        if found is None and self.project is not None:
            return self.project.helper_for(call, ctx)
        return found

    def handed_back(self, call: cst.Call, ctx: Context):
        """Inside another module's function, a call of what this file handed it: a function of
        this file passed as an argument (`step_fn(batch)`), or a method of the object it passed
        (`self_.clip()` with `self` passed as `self_`).  Modelled as this file's helper."""
        func = call.func
        params = ctx.foreign.params
        if isinstance(func, cst.Name):
            name = ctx.substitution.get(func.value, func.value if func.value in params else None)
            local = cst.Name(name) if name and "." not in name else None
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            name = ctx.substitution.get(func.value.value, func.value.value if func.value.value in params else None)
            local = cst.Attribute(value=cst.Name(name), attr=func.attr) if name and "." not in name else None
        else:
            local = None
        if local is None:
            return None
        home = ctx.child(foreign=None, bindings=self.bindings, substitution={}, class_name=ctx.foreign.home_class)
        found = self.file_helper(call.with_changes(func=local), home)
        if found is None and isinstance(local, cst.Name) and self.project is not None:
            # an object of a class of another module of the project, called (`loss_scaler(loss, opt)`)
            return self.project.handed_object(call, ctx, home, local.value)
        return None if found is None else (*found, HOME)

    def file_helper(self, call: cst.Call, ctx: Context, placed: bool = False):
        """`placed`: `call` is a node of this file's tree (its line is known)."""
        func = call.func
        if isinstance(func, cst.Name):
            name = func.value
            if self.bindings.imports.is_imported(name):
                return None
            found = self.bindings.helper_function(name)
            if found is None:
                return self.object_call(name, call)
            definition, top_level = found
            if top_level and placed:
                definition = self.def_in_effect(name, call, definition)
            # a closure such as `def _backward(loss): ...` inside the loop runs in the loop's class
            return definition, None if top_level else ctx.class_name, f"{name}()"
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = func.value.value
            # `self.m()`, or `agent.m()` on an instance of a class of the file (`agent = Agent()`)
            owner = ctx.class_name if receiver == "self" else self.bindings.instance_class(receiver, call)
            method = func.attr.value
            found = self.bindings.find_method(owner, method)
            if found is not None and receiver == "self" and _stub(found[0]):
                # a hook the loop's class leaves to a subclass (`raise NotImplementedError`,
                # `return 0.0`): the one subclass of the file that overrides it runs
                found = self.bindings.only_override(owner, method) or found
            if found is not None:
                return found[0], found[1], f"{receiver}.{method}()"
            if receiver == "self" and owner is not None:
                # `self.loss_scaler(loss, opt)`: an attribute holding an object, not a method
                return self.object_call(f"self.{method}", call)
        elif isinstance(func, cst.Attribute) and _self_attribute(func.value):
            # `self.d_optim.step()` on an attribute that every assignment makes an instance of a
            # class of the file (`self.d_optim = OptimWrapper(...)` in `__init__`; screen.py
            # keeps the methods such a call may reach)
            receiver = dotted(func.value)
            owner = self.bindings.instance_class(receiver) if receiver is not None else None
            method = func.attr.value
            found = self.bindings.find_method(owner, method) if owner is not None else None
            if found is not None:
                return found[0], found[1], f"{receiver}.{method}()"
        return None

    def object_call(self, name: str, call: cst.Call):
        """`loss_scaler(loss, optimizer, update_grad=...)` on an object that every assignment
        makes an instance of a class of the file with a `__call__` (a loss scaler that does the
        backward, the clip and the step): calling it runs that method, a helper to follow."""
        owner = self.bindings.instance_class(name, call)
        found = self.bindings.find_method(owner, api_names.OBJECT_CALL) if owner is not None else None
        return None if found is None else (found[0], found[1], f"{name}()")

    def def_in_effect(self, name: str, call: cst.Call, first: cst.FunctionDef) -> cst.FunctionDef:
        """Of several top-level defs of one name (a notebook that redefines `train` for each of
        its sections), the one a call runs: the last that starts above the call, as the file runs
        top to bottom (the first when none does: helpers defined below `main()`)."""
        defs = self.bindings.top_functions.get(name, ())
        if len(defs) < 2:
            return first
        if not all(direct for _, direct in defs):
            return first  # a def under `if use_amp:` / `else:`: which one runs is a setting
        line = self.span(call).line
        above = [d for d, _ in defs if self.span(d).line < line]
        return above[-1] if above else first

    @staticmethod
    def built_arguments(call: cst.Call, ctx: Context) -> dict:
        """The caller's constants, plus its names passed as arguments that the file binds only to
        a new optimizer, scheduler or scaler (arguments.BUILT): `train(optimizer=joint_optimizer)`
        makes a helper's `optimizer is not None` true.  Only names of the checked file's own
        code (another module's names are not in its bindings)."""
        if ctx.foreign is not None:
            return ctx.constants
        out = dict(ctx.constants)
        for arg in call.args:
            value = arg.value
            if isinstance(value, cst.Name) and value.value not in out and ctx.bindings.surely_built(value.value):
                out[value.value] = arguments.BUILT
        return out

    def derivations(self, definition: cst.FunctionDef) -> tuple:
        """The helper's names set once from others (arguments.derivations), kept like reassigned."""
        key = id(definition)
        if key not in self._derivations:
            self._derivations[key] = arguments.derivations(definition)
        return self._derivations[key]

    def reassigned(self, definition: cst.FunctionDef) -> frozenset:
        """What a helper's body assigns (kept: a helper is inlined at every call of it)."""
        key = id(definition)
        if key not in self._reassigned:
            self._reassigned[key] = arguments.assigned_in(definition)
        return self._reassigned[key]

    def inline(
        self, definition: cst.FunctionDef, call: Optional[cst.Call], class_name, label, ctx,
        scope=None, substitution=None, hints=None, members=None,
    ) -> list[Node]:
        """`scope` (with the `substitution` of its `self` and the `hints` of what its attributes
        are): the definition is another module's (gradlint/project), whose names are its own."""
        if id(definition) in ctx.helpers or _abstract(definition):
            return []  # an abstract method: a subclass the file may not show does the work
        disabled = ctx.grad_off is not None or any(
            classify.grad_mode(d.decorator, ctx) is False for d in definition.decorators
        )
        changes = {}
        if scope is HOME:  # back in this file's own code (handed_back)
            changes.update(foreign=None, bindings=self.bindings)
            scope = None
            substitution = {}
            fresh = True
        else:
            fresh = scope is not None
        if call is not None and scope is None and ctx.foreign is None and ctx.call_site is None:
            changes["call_site"] = (ctx.span(call), label)
        if scope is not None:
            changes["foreign"] = scope
            if members:
                self.bindings.learn(members)
            if hints:
                from gradlint.model.foreign import HintedBindings

                changes["bindings"] = HintedBindings(ctx.bindings, hints)
        inner = ctx.child(
            class_name=class_name,
            via=ctx.via + (label,),
            helpers=ctx.helpers + (id(definition),),
            loop_end_outside=ctx.loop_end is not None,
            compared={},
            substitution=dict(substitution or {}) if fresh else dict(ctx.substitution),
            constants={},
            argument_tests={},
            grad_off="all" if disabled else None,
            **changes,
        )
        if call is not None:
            inner.substitution.update(_argument_map(definition, call, ctx))
            inner.passed_as_is = _passed_as_is(definition, call)
            receiver = _instance_receiver(definition, call, ctx) if scope is None else None
            if receiver is not None:
                # `q1.train_net()` and `pi.train_net()` of two classes each with its own
                # `self.optimizer`: the method's `self` is the receiver, so two instances'
                # optimizers stay two optimizers in the loop
                inner.substitution["self"] = receiver
            inner.scale_params = _scale_params(definition, call, ctx)
            inner.constants = arguments.bound_constants(
                definition, call, _passes_self(definition), self.built_arguments(call, ctx), self.reassigned(definition)
            )
            # `is_train = optimizer is not None` of a call that passes `optimizer=None`
            inner.constants = arguments.derived_constants(self.derivations(definition), inner.constants)
            inner.argument_tests = _argument_tests(definition, call, ctx, self.reassigned(definition))
        outer_scaled, self.scaled = self.scaled, {}  # the helper's names are its own
        try:
            return self.suite(definition.body, inner)
        finally:
            self.scaled = outer_scaled

    # -- loops --

    def loop_model(
        self, node: cst.For | cst.While, class_name: Optional[str], assigned: Optional[frozenset] = None
    ) -> Optional[LoopModel]:
        """`assigned`: the names the loop assigns, if the bindings pass has them."""
        if assigned is None:
            names = AssignedNames()
            walk(node, names)
            assigned = frozenset(names.names)
        ctx = Context(self, class_name, assigned)
        self.conditions, self.single_steps, self.scaled = {}, {}, {}
        if isinstance(node, cst.For):
            ctx.loop_end = last_iteration.loop_end(node)
            owner = self.iteration_owner(node.iter, ctx)
            if owner is not None:
                for var in _target_names(node.target, owner[0]):
                    ctx.param_vars[var] = owner
                ctx.param_names = _name_targets(node.target, owner[0])
        body = self.suite(node.body, ctx)
        keyword = "for" if isinstance(node, cst.For) else "while"
        return self._finish(LoopModel(self._header_span(node), keyword, body))

    def step_function_model(
        self, node: cst.FunctionDef, class_name: Optional[str], kind: str = api.TRAINING_STEP
    ) -> Optional[LoopModel]:
        """A function a framework calls once per batch (Lightning's manual-optimization
        training_step, ignite's update function): a loop body."""
        assigned = AssignedNames()
        walk(node, assigned)
        names = frozenset(assigned.names)
        if kind == api.OWN_STEP:
            # called once per iteration: a parameter may be the caller's counter
            # (`def optimize(self, iteration): if iteration == 0: opt.zero_grad()`)
            names |= {p.name.value for p in node.params.params}
        ctx = Context(self, class_name, names)
        self.conditions, self.single_steps, self.scaled = {}, {}, {}
        # Its `return` ends one iteration, not the loop: the body runs as an inlined helper.
        body = [Helper(self.suite(node.body, ctx))]
        return self._finish(LoopModel(self._header_span(node), kind, body))

    def engine_model(self, run) -> Optional[LoopModel]:
        """An engine (model/engines.py's EngineRun) as the loops it runs: per epoch its epoch
        handlers around a batch loop of the iteration handlers and the process function."""
        defs = [h.definition for h in run.handlers] + ([run.process] if run.process is not None else [])
        assigned = AssignedNames()
        for definition in defs:
            walk(definition, assigned)
        ctx = Context(self, run.process_class, frozenset(assigned.names))

        def handlers(phase: str) -> list[Node]:
            out: list[Node] = []
            for handler in run.handlers:
                if handler.phase != phase:
                    continue
                inner = ctx.child(class_name=handler.class_name)
                params = [p.name.value for p in handler.definition.params.params][1:]  # after the engine
                for param, argument in zip(params, handler.arguments):
                    name = ctx.name(argument)
                    if name and name != param:
                        inner.substitution[param] = name
                body = self.inline(handler.definition, None, handler.class_name, f"{handler.definition.name.value}()", inner)
                if handler.filtered is not None:  # `Events.X(every=k)`: on some firings only
                    key = f"{phase} filter@{self.span(handler.definition).line}"
                    body = [Branch(key, False, False, _mark(body, skips_first=handler.filtered), [])]
                out.append(Helper(body))
            return out

        if run.process is not None:
            process_ctx = ctx
            if run.factory is not None:  # the factory's parameters are the caller's arguments
                process_ctx = ctx.child()
                process_ctx.substitution.update(_argument_map(run.factory, run.built, ctx))
            process = [Helper(self.inline(run.process, None, run.process_class, f"{run.process.name.value}()", process_ctx))]
            header = run.process
        else:
            process = self.documented_process(run, ctx)
            header = run.handlers[0].definition
        batch = handlers(api.ITERATION_START) + process + handlers(api.ITERATION_END)
        body = handlers(api.EPOCH_START) + [Nested(batch)] + handlers(api.EPOCH_END)
        return self._finish(LoopModel(self._header_span(header), "iteration", body))

    def documented_process(self, run, ctx: Context) -> list[Node]:
        """What a framework's own process function does each batch (events.py's
        DOCUMENTED_RUNNERS): clear, backward, step of its optimizer, at the factory call."""
        optimizer = ctx.name(run.optimizer)
        if optimizer is None:
            return []
        call = self.code(run.built.func)
        return [
            ctx.event(api.Z, run.built, optimizer=optimizer, text=f"{optimizer}.zero_grad() in {call}()"),
            ctx.event(api.B, run.built, text=f"loss.backward() in {call}()"),
            ctx.event(api.S, run.built, optimizer=optimizer, text=f"{optimizer}.step() in {call}()"),
        ]

    def override_model(self, method: cst.FunctionDef, class_name: str, documented: tuple) -> Optional[LoopModel]:
        """An override of a framework trainer's per-batch method (events.py's FRAMEWORK_TRAINERS):
        its body as one iteration, then what the framework documents doing after it returns."""
        supers, after = documented
        assigned = AssignedNames()
        walk(method, assigned)
        ctx = Context(self, class_name, frozenset(assigned.names))
        ctx.super_events = {method.name.value: supers} if supers else {}
        label = f"{method.name.value}()"
        body: list[Node] = [Helper(self.suite(method.body, ctx))]
        body += [self.documented(kind, target, method, ctx, f"the trainer after {label}") for kind, target in after]
        return self._finish(LoopModel(self._header_span(method), api.TRAINING_STEP, body))

    def documented(self, kind: str, target: Optional[str], node: cst.CSTNode, ctx: Context, where: str) -> Event:
        """An event a framework documents running (not written in the file), placed at `node`."""
        calls = {api.Z: "zero_grad()", api.B: "backward()", api.S: "step()", api.L: "step()"}
        text = f"{target + '.' if target else 'loss.'}{calls[kind]} ({where})"
        return ctx.event(kind, node, text=text, optimizer=target)

    def _finish(self, loop: LoopModel) -> Optional[LoopModel]:
        if self.conditions:
            loop.body = _resolve_rebinds(loop.body, self.conditions, conditions.by_root(self.conditions))
        else:
            loop.body = _resolve_rebinds(loop.body, {}, {})
        if self.single_steps:
            _mark_single_steps(loop.body, self.single_steps)
        self.conditions, self.single_steps = {}, {}
        everything: list[Event] = []
        own: list[tuple] = []
        _flatten(loop.body, everything, own, inside_nested=False)
        loop.events = everything
        loop.own = frozenset(own)
        if not (loop.has(api.B) or loop.has(api.S)):
            return None
        return loop

    def _header_span(self, node: cst.CSTNode) -> Span:
        start = self.span(node)
        return Span(start.line, start.col, start.line, start.col + 3)


def _mark(nodes: list[Node], **flags) -> list[Node]:
    """Set these Event flags (only the true ones) on every event of `nodes`, at any depth:
    `accumulation_guarded` for events that run only on an accumulation boundary, and so on."""
    flags = {name: value for name, value in flags.items() if value}
    if not flags:
        return nodes
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Event):
            out.append(replace(node, **flags))
        elif isinstance(node, Branch):
            out.append(replace(node, then=_mark(node.then, **flags), orelse=_mark(node.orelse, **flags)))
        elif isinstance(node, (Nested, Helper)):
            out.append(type(node)(_mark(node.body, **flags)))
        else:
            out.append(node)
    return out


def _unscale_calls(block) -> list:
    """The `X.unscale_(...)` calls written in a block (not in its nested defs)."""
    found: list = []

    class Calls(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == api_names.SCALER_UNSCALE and dotted(func.value):
                found.append(node)

    if block is not None:
        walk(block, Calls())
    return found


def _unscale_receivers(block) -> frozenset:
    """The receivers of the `X.unscale_(...)` calls written in a block (not in its nested defs)."""
    found = set()

    class Calls(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == api_names.SCALER_UNSCALE:
                name = dotted(func.value)
                if name:
                    found.add(name)

    if block is not None:
        walk(block, Calls())
    return frozenset(found)


def _only_rebinds(nodes: list[Node]) -> bool:
    return all(isinstance(node, Rebind) for node in nodes)


def _replays_a_schedule(stmt: cst.For | cst.While, nodes: list[Node]) -> bool:
    """`for _ in range(n):` whose only events are steps of schedulers its target does not pick
    (`for s in schedulers: s.step()` at the top of an epoch is each scheduler's first step)."""
    if not (isinstance(stmt, cst.For) and isinstance(stmt.iter, cst.Call) and dotted(stmt.iter.func) == "range"):
        return False
    events = _events_of(nodes)
    if not events or any(e.kind != api.L for e in events):
        return False
    targets = set(target_names(stmt.target))
    return not any(targets & set(_WORDS.findall(e.optimizer or e.text)) for e in events)


def _nothing_but_go_on(nodes: list[Node]) -> bool:
    """No event, only assignments or a `continue` to the next parameter."""
    return all(isinstance(node, Rebind) or (isinstance(node, Jump) and node.kind == "continue") for node in nodes)


def _parameter_attribute(node: cst.BaseExpression, attribute: str, ctx: Context) -> bool:
    """`p.grad` (attribute "grad") where p is the variable of a loop over parameters."""
    return (isinstance(node, cst.Attribute) and node.attr.value == attribute
            and isinstance(node.value, cst.Name) and node.value.value in ctx.param_vars)


def _resolve_rebinds(nodes: list[Node], read: dict, index: dict) -> list[Node]:
    """Each Rebind with the keys of the conditions it outdates; the ones that outdate none
    are dropped (most assignments: the walk need not stop at them)."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Rebind):
            keys = conditions.rebound_keys(node.names, read, index) if read else None
            if keys:
                out.append(Rebind(node.names, keys))
        elif isinstance(node, Branch):
            node.then, node.orelse = _resolve_rebinds(node.then, read, index), _resolve_rebinds(node.orelse, read, index)
            out.append(node)
        elif isinstance(node, (Nested, Helper)):
            node.body = _resolve_rebinds(node.body, read, index)
            out.append(node)
        else:
            out.append(node)
    return out


def _mark_single_steps(nodes: list[Node], single_steps: dict) -> None:
    """Tell each boundary `x % accum == 0` which setting sides make `accum` 1 (it holds there)."""
    for node in nodes:
        if isinstance(node, Branch):
            if node.divisor is not None:
                node.always_then = tuple((k, side) for k, (count, side) in single_steps.items() if count == node.divisor)
            _mark_single_steps(node.then, single_steps)
            _mark_single_steps(node.orelse, single_steps)
        elif isinstance(node, (Nested, Helper)):
            _mark_single_steps(node.body, single_steps)


def _mark_boundary(nodes: list[Node], key: str) -> list[Node]:
    """Set `boundary` on the clears and steps of `nodes` that have none yet (an inner
    accumulation condition, marked first, is the one an event runs under).  Only they: GL002
    compares a clear's boundary with its step's, and a backward marked with the side it runs
    on made the two sides' equal backwards two events, doubling a loop's paths."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Event):
            marks = node.kind in (api.Z, api.S) and node.boundary is None
            out.append(replace(node, boundary=key) if marks else node)
        elif isinstance(node, Branch):
            out.append(replace(node, then=_mark_boundary(node.then, key), orelse=_mark_boundary(node.orelse, key)))
        elif isinstance(node, (Nested, Helper)):
            out.append(type(node)(_mark_boundary(node.body, key)))
        else:
            out.append(node)
    return out


def _events_of(nodes) -> list:
    events: list[Event] = []
    _flatten(nodes, events, [], False)
    return events


def _is_training_body(nodes) -> bool:
    """Does a loop body hold a backward and a step (a training loop of its own)?"""
    kinds = {e.kind for e in _events_of(nodes)}
    return api.B in kinds and api.S in kinds


def steps_in(nodes) -> frozenset:
    """The optimizers that some path through `nodes` steps."""
    out: set = set()
    for node in nodes:
        if isinstance(node, Event) and node.kind == api.S:
            out.add(node.optimizer)
        elif isinstance(node, Branch):
            out |= steps_in(node.then) | steps_in(node.orelse)
        elif isinstance(node, (Nested, Helper)):
            out |= steps_in(node.body)
    return frozenset(out)


_MAX_FORMULA_DEPTH = 4  # nested and/or levels read into Branch.formula


def _parts(test: cst.BaseExpression, operator: type, side: bool) -> list[tuple[cst.BaseExpression, bool]]:
    """The operands of an `and` (or `or`) chain, at any nesting of that operator, each
    with the side it must take when the chain is `side`: `not x` is x on the other side."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, operator):
        return _parts(test.left, operator, side) + _parts(test.right, operator, side)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return [(test.expression, not side)]
    return [(test, side)]


# `x > 0`, `x >= 1`, `x != 0` on a counter the loop advances: false while it is still 0,
# that is on the loop's first iteration (`it > 1` after `it += 1` too).
_FIRST_FALSE = {cst.GreaterThan: 0, cst.GreaterThanEqual: 1, cst.NotEqual: 0}
# `x == 0`, `x <= 0`, `x < 1`: true while it is still 0
_FIRST_TRUE = {cst.LessThan: 1, cst.LessThanEqual: 0, cst.Equal: 0}
_MIRRORED = {
    cst.LessThan: cst.GreaterThan, cst.LessThanEqual: cst.GreaterThanEqual, cst.NotEqual: cst.NotEqual,
    cst.GreaterThan: cst.LessThan, cst.GreaterThanEqual: cst.LessThanEqual, cst.Equal: cst.Equal,
}


def _false_at_first(atom: cst.BaseExpression, side: bool, assigned: frozenset) -> bool:
    """Is `atom` surely not `side` on the first iteration: a counter of the loop compared
    with a bound it has not passed yet when it starts from zero?  (`side` False: is it surely
    true there, as `epoch == 0` and `epoch <= 0` are: the `else:` of such a test skips the
    first iteration.)"""
    if not isinstance(atom, cst.Comparison) or len(atom.comparisons) != 1:
        return False
    target = atom.comparisons[0]
    left, op, right = atom.left, type(target.operator), target.comparator
    if isinstance(left, cst.Integer) and op in _MIRRORED:  # `0 < epoch`
        left, op, right = right, _MIRRORED[op], left
    counter = dotted(left)
    if counter is None or not (counter in assigned or root(counter) in assigned):
        return False  # a setting (`if warmup_epochs > 0:`) is the same on every iteration
    bounds = _FIRST_FALSE if side else _FIRST_TRUE
    if op not in bounds or not isinstance(right, cst.Integer):
        return False
    try:
        bound = int(right.evaluated_value)
    except (TypeError, ValueError):
        return False
    return bound >= bounds[op] if op not in (cst.NotEqual, cst.Equal) else bound == 0


# `x == 0`, `x < 1`, `x <= 0` on a counter the loop advances from zero: true on the first
# iteration only (and `x > 0`, `x >= 1`, `x != 0` false there only)
_ONLY_FIRST_TRUE = {cst.Equal: 0, cst.LessThan: 1, cst.LessThanEqual: 0}
_ONLY_FIRST_FALSE = {cst.GreaterThan: 0, cst.GreaterThanEqual: 1, cst.NotEqual: 0}
_TURNED = {cst.LessThan: cst.GreaterThan, cst.LessThanEqual: cst.GreaterThanEqual, cst.Equal: cst.Equal,
           cst.NotEqual: cst.NotEqual, cst.GreaterThan: cst.LessThan, cst.GreaterThanEqual: cst.LessThanEqual}


def _only_first(atom: cst.BaseExpression, side: bool, assigned: frozenset, bindings: Bindings) -> bool:
    """Is `atom` `side` on the loop's first iteration and on no other: a counter of the loop
    that only advances (a loop variable, or a copy of one) compared with its first value?
    A window counter (`idx += 1` ... `idx = 0`) comes back to it."""
    atom = conditions.bare(atom)
    if not isinstance(atom, cst.Comparison) or len(atom.comparisons) != 1:
        return False
    target = atom.comparisons[0]
    left, op, right = conditions.bare(atom.left), type(target.operator), conditions.bare(target.comparator)
    if isinstance(left, cst.Integer) and op in _TURNED:  # `0 == step`
        left, op, right = right, _TURNED[op], left
    counter = dotted(left)
    if counter is None or not (counter in assigned or root(counter) in assigned):
        return False
    if not isinstance(right, cst.Integer) or not _only_advances(counter, bindings):
        return False
    table = _ONLY_FIRST_TRUE if side else _ONLY_FIRST_FALSE
    return op in table and _integer(right) == table[op]


def _first_counter(stmt: cst.For) -> Optional[str]:
    """`j` of `for j, x in enumerate(xs):` or `for j in range(n):` (from 0), else None."""
    iterable, target = stmt.iter, stmt.target
    if not isinstance(iterable, cst.Call) or dotted(iterable.func) not in ("enumerate", "range"):
        return None
    args = iterable.args
    if dotted(iterable.func) == "enumerate":
        if len(args) != 1 or args[0].keyword or args[0].star:
            return None  # a `start=` may not be 0
        if isinstance(target, cst.Tuple) and len(target.elements) == 2 and isinstance(target.elements[0].value, cst.Name):
            return target.elements[0].value.value
        return None
    if len(args) != 1 or args[0].keyword or args[0].star or not isinstance(target, cst.Name):
        return None  # `range(a, b)` may start past 0
    return target.value


def _tests_first(test: cst.BaseExpression, counter: str) -> bool:
    """`counter == 0` (or `0 == counter`, `counter < 1`, `not counter`)."""
    test = conditions.bare(test)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return dotted(conditions.bare(test.expression)) == counter
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    left, op, right = conditions.bare(test.left), type(target.operator), conditions.bare(target.comparator)
    if isinstance(left, cst.Integer) and op in _TURNED:
        left, op, right = right, _TURNED[op], left
    return dotted(left) == counter and isinstance(right, cst.Integer) and _ONLY_FIRST_TRUE.get(op) == _integer(right)


def _integer(node: cst.Integer) -> Optional[int]:
    try:
        return int(node.evaluated_value)
    except (TypeError, ValueError):
        return None


def _only_advances(counter: str, bindings: Bindings) -> bool:
    """Is every value the file gives `counter` its start (0) or a name it never assigns (a
    loop variable: `self.batch_index = batch_index`), and never a `+=`?"""
    if conditions.incremented(counter, bindings.incremented):
        return False
    for value in bindings.assigns.get(counter, ()):
        value = conditions.bare(value)
        if isinstance(value, cst.Integer) and value.value == "0":
            continue
        if isinstance(value, cst.Name) and value.value not in bindings.assigns:
            continue
        return False
    return True


def _without_clears(nodes: list[Node]) -> list[Node]:
    """`nodes` without their clears, at any depth."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Event):
            if node.kind != "Z":
                out.append(node)
        elif isinstance(node, Branch):
            out.append(replace(node, then=_without_clears(node.then), orelse=_without_clears(node.orelse)))
        elif isinstance(node, (Nested, Helper)):
            out.append(type(node)(_without_clears(node.body)))
        else:
            out.append(node)
    return out


def _flatten(nodes, out: list[Event], own: list[tuple], inside_nested: bool) -> None:
    for node in nodes:
        if isinstance(node, Event):
            out.append(node)
            if not inside_nested:
                own.append(node.key)
        elif isinstance(node, Branch):
            _flatten(node.then, out, own, inside_nested)
            _flatten(node.orelse, out, own, inside_nested)
        elif isinstance(node, Nested):
            _flatten(node.body, out, own, True)
        elif isinstance(node, Helper):
            _flatten(node.body, out, own, inside_nested)


def _super_method(call: cst.Call) -> Optional[str]:
    """`m` of `super().m(...)`."""
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Call)
        and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    ):
        return func.attr.value
    return None


def _guessed_step(call: cst.Call, ctx: Context) -> bool:
    """`x.step()` on a name the file's bindings do not resolve (only its name may say what it is),
    or `x.step()` / `x.zero_grad()` on an object of a class the file cannot read that is built
    from an optimizer (bindings.is_stepping_wrapper: taken for a library's wrapper, unless the
    project shows the class)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and (func.attr.value == api_names.STEP or func.attr.value in api_names.ZERO_GRAD_METHODS)):
        return False
    name = ctx.name(func.value)
    if name is None:
        return False
    if func.attr.value == api_names.STEP and ctx.bindings.kind(name) is None:
        return True
    return ctx.bindings.is_stepping_wrapper(name)


def _self_attribute(node: cst.BaseExpression) -> bool:
    """`self.x`."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _own_backward_call(call: cst.Call) -> bool:
    """`obj.backward(...)` on a name: when `obj` is an instance of a class of the file that
    defines `backward`, the call runs that method, a helper to follow (rules.md, B row), not
    autograd's backward.  file_helper decides; an unresolved receiver stays autograd's.  Not
    `scaler.scale(loss).backward()` or `super().backward(loss)` (a receiver that is a call)."""
    func = call.func
    return isinstance(func, cst.Attribute) and func.attr.value == api_names.BACKWARD and dotted(func.value) is not None


def _a_step(node: Optional[cst.BaseExpression]) -> bool:
    """`x.step(...)`."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == api_names.STEP


def _is_self_call(call: cst.Call) -> bool:
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"


def _target_names(target: cst.BaseExpression, owner_kind: str) -> list[str]:
    """`p` of `for p in ...`, and of `for name, p in model.named_parameters()`."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, cst.Tuple) and owner_kind == "module" and len(target.elements) == 2:
        second = target.elements[1].value
        if isinstance(second, cst.Name):
            return [second.value]
    return []


def _name_targets(target: cst.BaseExpression, owner_kind: str) -> dict[str, str]:
    """`{"name": "p"}` for `for name, p in model.named_parameters()`."""
    if isinstance(target, cst.Tuple) and owner_kind == "module" and len(target.elements) == 2:
        first, second = (element.value for element in target.elements)
        if isinstance(first, cst.Name) and isinstance(second, cst.Name):
            return {first.value: second.value}
    return {}


def _stub(definition: cst.FunctionDef) -> bool:
    """A method left to subclasses: abstract (_abstract), or a body (after its docstring) of only
    `return` of a constant (`return 0.0`, `return None`, `return {}`)."""
    if _abstract(definition):
        return True
    small = _small_statements(definition)
    if small is None:
        return False
    constants = (cst.Integer, cst.Float, cst.SimpleString, cst.Dict, cst.List, cst.Tuple)
    return len(small) == 1 and isinstance(small[0], cst.Return) and (
        small[0].value is None
        or (isinstance(small[0].value, cst.Name) and small[0].value.value in ("None", "True", "False"))
        or (isinstance(small[0].value, constants) and not getattr(small[0].value, "elements", None))
    )


def _small_statements(definition: cst.FunctionDef) -> Optional[list]:
    """The small statements of a def's body after its docstring; None when it holds a compound one."""
    body = definition.body
    small = []
    for statement in list(body.body) if isinstance(body, cst.IndentedBlock) else [body]:
        if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return None
        small.extend(statement.body)
    if small and isinstance(small[0], cst.Expr) and isinstance(small[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        small = small[1:]  # the docstring
    return small


def _abstract(definition: cst.FunctionDef) -> bool:
    """A stub a subclass overrides: `@abstractmethod`, or a body (after its docstring) of only
    `raise NotImplementedError`, `pass` or `...`.  Calling it says nothing about the events the
    real method has; inlined, its `raise` would end every iteration."""
    if any((dotted(d.decorator) or "").rsplit(".", 1)[-1] == "abstractmethod" for d in definition.decorators):
        return True
    small = _small_statements(definition)
    if small is None:
        return False
    if not small:
        return False
    for node in small:
        if isinstance(node, cst.Pass) or (isinstance(node, cst.Expr) and isinstance(node.value, cst.Ellipsis)):
            continue
        if isinstance(node, cst.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
            if dotted(exc) == "NotImplementedError":
                continue
        return False
    return True


def _instance_receiver(definition: cst.FunctionDef, call: cst.Call, ctx: Context) -> Optional[str]:
    """The name of the instance a same-file method is called on (`q1` of `q1.train_net()`), when
    it is not the caller's own `self`; else None."""
    func = call.func
    if not (_passes_self(definition) and definition.params.params[0].name.value == "self"):
        return None
    if definition.name.value == api_names.OBJECT_CALL and (isinstance(func, cst.Name) or _self_attribute(func)):
        name = ctx.name(func)  # `loss_scaler` of `loss_scaler(loss, opt)`: the object called
        return name if name and name != "self" else None
    if not isinstance(func, cst.Attribute):
        return None
    if isinstance(func.value, cst.Name) and func.value.value in ("self", "cls"):
        return None
    if not (isinstance(func.value, cst.Name) or _self_attribute(func.value)):
        return None
    name = ctx.name(func.value)  # `q1`, or `self.d_optim` of `self.d_optim.step()`
    return name if name and name != "self" else None


def _argument_tests(definition: cst.FunctionDef, call: cst.Call, ctx: Context, reassigned: frozenset) -> dict:
    """The parameters `call` binds to a comparison or a boolean test (`update_grad=(it + 1) %
    accum_iter == 0`), each with the expression and the caller's context; also a parameter
    handed a name that is itself such a parameter of the caller.  Not a parameter the body
    assigns again (its test reads the new value), nor any when `*args`/`**kwargs` fill some."""
    if any(a.star for a in call.args):
        return {}
    params = [p.name.value for p in list(definition.params.posonly_params) + list(definition.params.params)]
    if _passes_self(definition):
        params = params[1:]
    bound = dict(zip(params, (a.value for a in call.args if a.keyword is None)))
    known = set(params) | {p.name.value for p in definition.params.kwonly_params}
    bound.update((a.keyword.value, a.value) for a in call.args if a.keyword is not None and a.keyword.value in known)
    out = {}
    for param, value in bound.items():
        if param in reassigned:
            continue
        bare = value
        while isinstance(bare, cst.UnaryOperation) and isinstance(bare.operator, cst.Not):
            bare = bare.expression
        if isinstance(bare, (cst.Comparison, cst.BooleanOperation)):
            out[param] = (value, ctx)
        elif isinstance(value, cst.Name) and value.value in ctx.argument_tests:
            out[param] = ctx.argument_tests[value.value]
    return out


def _handed_test(test: cst.BaseExpression, ctx: Context) -> Optional[tuple]:
    """`if update_grad:` (or `if not update_grad:`) in a helper whose call bound `update_grad`
    to a test: (that test, negated alike, the caller's context); None otherwise."""
    if not ctx.argument_tests:
        return None
    negations = 0
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, negations = test.expression, negations + 1
    if not isinstance(test, cst.Name) or test.value not in ctx.argument_tests:
        return None
    value, caller = ctx.argument_tests[test.value]
    for _ in range(negations):
        value = cst.UnaryOperation(operator=cst.Not(), expression=value)
    return value, caller


def _passes_self(definition: cst.FunctionDef) -> bool:
    """Is the first parameter the receiver (`self`, `cls`), which a call does not pass?"""
    params = definition.params.params
    return bool(params) and params[0].name.value in ("self", "cls")


def _scale_params(definition: cst.FunctionDef, call: cst.Call, ctx: Context) -> frozenset:
    """The helper's parameters that the call binds to an expression reading the scaler's scale."""
    params = [p.name.value for p in definition.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    out = set()
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for param, arg in zip(params, positional):
        if classify.reads_the_scale(arg.value, ctx):
            out.add(param)
    for arg in call.args:
        if arg.keyword is not None and classify.reads_the_scale(arg.value, ctx):
            out.add(arg.keyword.value)
    return frozenset(out)


def _passed_as_is(definition: cst.FunctionDef, call: cst.Call) -> frozenset:
    """The parameters of `definition` the call hands a bare name of the same spelling
    (`moved_step(chunks, k)` into `def moved_step(chunks, k):`): the caller's own objects."""
    params = [p.name.value for p in definition.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    same = {param for param, arg in zip(params, positional) if isinstance(arg.value, cst.Name) and arg.value.value == param}
    same |= {a.keyword.value for a in call.args if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value == a.keyword.value}
    return frozenset(same)


def _argument_map(definition: cst.FunctionDef, call: cst.Call, ctx: Context) -> dict[str, str]:
    params = [p.name.value for p in definition.params.params]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    mapping: dict[str, str] = {}
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for param, arg in zip(params, positional):
        name = ctx.name(arg.value)
        if name:
            mapping[param] = name
    known = {p.name.value for p in definition.params.params} | {p.name.value for p in definition.params.kwonly_params}
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in known:
            name = ctx.name(arg.value)
            if name:
                mapping[arg.keyword.value] = name
    return {k: v for k, v in mapping.items() if k != v}


class LoopFinder:
    """Models for the loops, Lightning modules and framework-run functions of the outline."""

    def __init__(self, builder: Builder, facts: Bindings) -> None:
        self.builder = builder
        self.facts = facts  # the bindings pass that walked the loops handed in (loop_facts)
        self.lightning_clips: list[Event] = []

    def entry(self, entry: tuple) -> Optional[LoopModel]:
        """A model for one entry of the bindings pass's outline: a loop, a class, or a function
        that clips and steps through a scaler."""
        if entry[0] == "class":
            return self.lightning(entry[1])
        if entry[0] == "function":
            return self.function(entry[1], entry[2])
        if entry[0] == api.OWN_STEP:
            return self.own_step(entry[1], entry[2])
        return self.loop(entry[1], entry[2])

    def own_step(self, node: cst.FunctionDef, class_name: Optional[str]) -> Optional[LoopModel]:
        """A function whose body backpropagates and steps an optimizer (an agent's `update`, a
        trainer's `train_step`), as one iteration (kind OWN_STEP).  file_model drops it when a
        loop of the file runs it: that loop reads it with what its caller does around it."""
        model = self.builder.step_function_model(node, class_name, kind=api.OWN_STEP)
        if model is None or not model.has(api.B) or not any(e.kind == api.S and not e.closure for e in model.events):
            return None
        return model

    def function(self, node: cst.FunctionDef, class_name: Optional[str]) -> Optional[LoopModel]:
        """A function's body as one call (kind "function"), when it steps through a GradScaler."""
        model = self.builder.step_function_model(node, class_name, kind="function")
        if model is None or not any(e.kind == api.S and e.by_scaler for e in model.events):
            return None
        return model

    def loop(self, node, class_name: Optional[str]) -> Optional[LoopModel]:
        relevant, called, assigned = self.facts.loop_facts(node) or (True, frozenset(), None)
        project = self.builder.project
        if not (
            relevant
            or self.builder.bindings.calls_file_function(called)
            or (project is not None and project.calls_project_function(called))
        ):
            return None
        return self.builder.loop_model(node, class_name, assigned)

    def iteration_functions(self) -> list[LoopModel]:
        """`update` of ignite's `Engine(update)` and its `@trainer.on(...)` handlers: loop bodies.
        An engine whose handlers run on known events is one model of both (model/engines.py)."""
        runs, placed = engine_runs(self.builder.bindings)
        models = [self.builder.engine_model(run) for run in runs]
        found = (self.iteration_function(name, placed) for name in self.builder.bindings.iteration_functions)
        return [model for model in models + list(found) if model is not None]

    def iteration_function(self, name: str, placed: frozenset = frozenset()) -> Optional[LoopModel]:
        bindings = self.builder.bindings
        found = None
        if name.startswith("self.") and name.count(".") == 1:
            method = name[len("self.") :]
            owners = [c for c in bindings.classes.values() if method in c.methods]
            if len(owners) == 1:
                found = owners[0].methods[method], owners[0].name
        elif "." not in name:
            defs = bindings.all_functions.get(name, [])
            if name in bindings.functions:
                found = bindings.functions[name], None
            elif len(defs) == 1:
                found = defs[0], None
        if found is None or id(found[0]) in placed:
            return None
        return self.builder.step_function_model(found[0], found[1], kind="iteration")

    def _file_ancestors(self, info) -> list:
        """The classes of the file that `info` derives from, nearest first, up to _BASE_DEPTH
        levels: a framework's class reached through a base of the file (`class GAN(BaseModel)`
        on `class BaseModel(pl.LightningModule)`) is still the framework's."""
        classes = self.builder.bindings.classes
        found, seen, level = [], {info.name}, [info]
        for _ in range(_BASE_DEPTH):
            parents = []
            for cls in level:
                for base in cls.bases:
                    parent = classes.get(base.rsplit(".", 1)[-1])
                    if parent is not None and parent.name not in seen:
                        seen.add(parent.name)
                        parents.append(parent)
            found += parents
            level = parents
        return found

    def framework_override(self, info, ancestors: list) -> Optional[LoopModel]:
        """The first per-batch method of a framework trainer that this class overrides."""
        bases = list(info.bases) + [base for parent in ancestors for base in parent.bases]
        for name, documented in api.framework_trainer(bases).items():
            if name in info.methods:
                return self.builder.override_model(info.methods[name], info.name, documented)
        return None

    def lightning(self, info) -> Optional[LoopModel]:
        ancestors = self._file_ancestors(info)
        if not api.lightning_module(list(info.bases) + [base for parent in ancestors for base in parent.bases]):
            return self.framework_override(info, ancestors)
        if api.TRAINING_STEP not in info.methods:
            return None
        method = info.methods[api.TRAINING_STEP]
        # (the mode may be set in the base's __init__, which the subclass's super().__init__() runs)
        if info.manual_optimization or any(parent.manual_optimization for parent in ancestors):
            return self.builder.step_function_model(method, info.name)
        ctx = Context(self.builder, info.name, frozenset())
        body = self.builder.suite(method.body, ctx)
        events: list[Event] = []
        _flatten(body, events, [], False)
        if not any(e.kind == api.B for e in events):  # manual_backward means manual optimization
            self.lightning_clips.extend(e for e in events if e.kind == api.C)
        return None


SCALED = "scaled"  # Builder.scaled: bound to the scaled loss on every path


def _scaled_after(test: cst.BaseExpression, then: dict, orelse: dict) -> dict:
    """Builder.scaled after an `if`, from its state at the end of each side: a name scaled on
    one side only is scaled on that side of the test (read again by Builder.branch); a name
    whose sides disagree any other way is left out (its backward is read as unscaled)."""
    out = {}
    for name in then.keys() | orelse.keys():
        a, b = then.get(name), orelse.get(name)
        if a == b:
            if a is not None:
                out[name] = a
        elif a is SCALED and b is None:
            out[name] = (test, True)
        elif a is None and b is SCALED:
            out[name] = (test, False)
    return out


def _steps_before_the_end(nodes: list) -> bool:
    """Does some step of these nodes run on an iteration that another one may follow (one not
    on a side that ends the loop, `Jump(LAST)`)?"""
    if any(isinstance(node, Jump) and node.kind == last_iteration.LAST for node in nodes):
        return False
    for node in nodes:
        if isinstance(node, Event) and node.kind == api.S:
            return True
        if isinstance(node, Branch) and (_steps_before_the_end(node.then) or _steps_before_the_end(node.orelse)):
            return True
        if isinstance(node, Helper) and _steps_before_the_end(node.body):
            return True
        if isinstance(node, Nested) and steps_in(node.body):
            return True  # an inner loop's last iteration is not this loop's
    return False


def _mark_foreign(loops: list[LoopModel]) -> None:
    """An event inside a nested loop that is a training loop of its own belongs to that loop.

    Only loops nested inside this one count (all their events lie in its nested
    loops), and only if they hold a backward and a step: an inner loop that only
    backpropagates (micro-batches whose step is in the outer loop) reports nothing, so
    the outer loop reports what goes wrong with its events.
    """
    keys = [frozenset(e.key for e in loop.events) for loop in loops]
    # a loop that steps on its last iteration only (last_iteration.py) steps once, as if after
    # it: the loop around it is where a missing clear shows
    training = [loop.has(api.B) and _steps_before_the_end(loop.body) for loop in loops]
    for i, loop in enumerate(loops):
        nested = keys[i] - loop.own
        if not nested:
            continue
        # another model of the same code (an engine's process function modelled once per run
        # of the engine, each with its handlers) is no loop nested in this one
        inner = [
            keys[j] for j in range(len(loops))
            if j != i and training[j] and keys[j] <= nested and loops[j].span != loop.span
            and not _aliased_by_the_call(loops[j], loop)
        ]
        if inner:
            loop.foreign = loop.foreign | (nested & frozenset().union(*inner))


def _without_steps_run_by_loops(loops: list[LoopModel]) -> list[LoopModel]:
    """The models less each function modelled on its own (OWN_STEP) that another model runs:
    a loop of the file that calls it (or holds its events: its own loop over batches), or a
    larger function of its own that calls it.  Their model reads it with its caller's context."""
    own = [model for model in loops if model.kind == api.OWN_STEP]
    if not own:
        return loops
    ran = frozenset(e.key for model in loops if model.kind != api.OWN_STEP for e in model.events)
    kept = [model for model in own if not any(e.key in ran for e in model.events if e.kind in (api.B, api.S))]
    # a function of its own that a larger one calls (or holds): the larger model holds its events
    largest: dict = {}  # event key -> the most events of a kept model holding it
    for model in kept:
        for event in model.events:
            largest[event.key] = max(largest.get(event.key, 0), len(model.events))
    chosen = {
        id(model) for model in kept
        if not any(largest[e.key] > len(model.events) for e in model.events if e.kind in (api.B, api.S))
    }
    return [model for model in loops if model.kind != api.OWN_STEP or id(model) in chosen]


def _aliased_by_the_call(inner: LoopModel, outer: LoopModel) -> bool:
    """Does the outer loop run the inner one (a helper's loop it calls) with one object where
    the inner loop's own model has two (`train_epoch(g, d, loader, g_opt, g_opt)` for
    `def train_epoch(g, d, loader, g_optimizer, d_optimizer)`)?  Read alone, the inner loop
    steps two optimizers; only the call shows that they are one, so its events stay the outer
    loop's to report (a finding both report is one finding: same code, same place)."""
    mine = {e.key: e for e in outer.events}
    seen: dict = {}
    for event in inner.events:
        if event.kind not in (api.Z, api.S, api.U):
            continue
        there = mine.get(event.key)
        here_target = event.optimizer or event.module
        there_target = (there.optimizer or there.module) if there is not None else None
        if here_target is None or there_target is None:
            continue
        first = seen.setdefault((event.kind, there_target), here_target)
        if first != here_target:
            return True
    return False


def build(
    module: cst.Module,
    path: str,
    source: str,
    wrappers: Wrappers = Wrappers(),
    parsed_text: Optional[str] = None,
    project=None,
    context: Optional[FileContext] = None,
) -> FileModel:
    """The loop model of a module; `parsed_text` is the text libcst parsed (default: `source`);
    `project`: the other modules of the project (gradlint/model/foreign.py's Project);
    `context`: the check's FileContext (its CPython trees; the model keeps it for the fixes)."""
    bindings = collect(module, event_names(wrappers), project.starred() if project is not None else None)
    if project is not None:
        project.learn_instances(bindings)  # `self.policy.optimizer` of a class of another module
    builder = Builder(module, path, wrappers, bindings, project=project)
    text = source if parsed_text is None else parsed_text
    builder.positions = Positions(module, text, bindings, builder.code, context=context)
    finder = LoopFinder(builder, bindings)
    loops: list[LoopModel] = []
    if not api.other_framework(bindings.imports.packages):
        loops = [model for model in map(finder.entry, bindings.outline) if model is not None]
        loops += finder.iteration_functions()
    builder.done()
    return file_model(path, bindings, loops, finder.lightning_clips, source, context, builder.foreign_loop_events)


def file_model(
    path: str, bindings: Bindings, loops: list[LoopModel], lightning_clips: list[Event], source: str,
    context: Optional[FileContext] = None, foreign_loop_events=frozenset(),
) -> FileModel:
    """The file's model from its loops, however they were built (whole, or in pieces by
    piecewise.py: both end here, so both judge the same events another loop's).
    `foreign_loop_events`: the events of training loops inside other modules' functions the
    loops call (Builder.foreign_loop_events): that module's check reports them."""
    if foreign_loop_events:
        for model in loops:
            model.foreign = model.foreign | (foreign_loop_events & {e.key for e in model.events})
    functions = [model for model in loops if model.kind == "function"]
    loops = _without_steps_run_by_loops([model for model in loops if model.kind != "function"])
    _mark_foreign(loops)
    return FileModel(path, bindings, loops, lightning_clips, source, functions, context)
