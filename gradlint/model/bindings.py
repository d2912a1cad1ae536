"""Names -> objects, within one file: which optimizer owns which module's
parameters, what is a scheduler or a GradScaler, which names alias.

A small pass of our own instead of libcst's scope metadata (ten times the
parse, see architecture.md).  It is flow-insensitive on purpose: every
assignment to a dotted name in the file counts.  Where a receiver's class is
read at a call (`values_seen_at`), Python's scoping applies: a name a def
binds is local to it, so `agent = train()` at module level is not the
`agent = Agent()` of the def `train`, nor the reverse.  When anything is
ambiguous the answers are None ("unknown"), and rules treat unknown as
"the code is right".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import libcst as cst

from gradlint.core import api_names
from gradlint.core import events as api
from gradlint.model.attribute_kinds import several_kinds
from gradlint.model.names import ExpressionNames, Imports, dotted, is_under, keyword_argument, last, root, target_names
from gradlint.model.positions import Numbering
from gradlint.model.walk import walk

OPTIMIZER, SCHEDULER, SCALER, ENGINE, MODULE = "optimizer", "scheduler", "scaler", "engine", "module"
CUSTOM = "custom"  # an instance of a class of the file that is no optimizer or scheduler
VALUE = "value"  # a tensor or other plain value made by a torch function
ALL_OPTIMIZERS = "*"  # a global step hook: it runs after the step of every optimizer
_MAX_DEPTH = 6


class Part(str):
    """A module some of whose parameters an optimizer holds, but which ones is not known:
    `model.get_parameters()`, a method of the model that returns parameter groups of its
    parts.  Equal to the module's name; params.py never reads it as all of that module."""

    __slots__ = ()


def is_part(module: str) -> bool:
    return isinstance(module, Part)


def _same_kind(module: str, name: str) -> str:
    """`name` (a canonical form of `module`), a Part when `module` is one."""
    return Part(name) if is_part(module) else name


def _merge(into: set, modules: Iterable[str]) -> None:
    """Add `modules` to `into`; where the same module is there as a Part and in full, the
    whole module wins (a Part beside its whole adds nothing)."""
    for module in modules:
        if module in into:
            if not is_part(module):
                into.discard(module)
                into.add(module)
        else:
            into.add(module)


@dataclass
class ClassInfo:
    name: str
    bases: list[str]
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    manual_optimization: bool = False


class Bindings(Numbering):
    """One pass over a module collecting imports, assignments, defs and classes.

    It also numbers the nodes whose positions may be reported (positions.py),
    so no second walk of the whole tree is needed.
    """

    def __init__(self, event_names: frozenset = frozenset(), starred: Optional[dict] = None) -> None:
        super().__init__()
        # Names of calls that can be a backward or a step (events.py's, plus the
        # configured wrappers): a loop with none of them, and calling no function of
        # the file, can never become a loop model, so the builder skips it.
        self._event_names = api.LOOP_EVENT_NAMES | event_names
        # per enclosing loop: [node id, relevant, called names, assigned names]
        self._open_loops: list[list] = []
        self._loops: dict[int, tuple[bool, frozenset]] = {}
        # In visit order: ("class", ClassInfo) and ("loop", node, enclosing class name),
        # so loops.py builds its models without walking the tree a second time.
        self.outline: list[tuple] = []
        self.imports = Imports()
        # the names the file's star imports bind (gradlint/project's index reads the modules
        # they import): as if imported by name, before the file's own imports
        self.imports.aliases.update(starred or {})
        self.assigns: dict[str, list[cst.BaseExpression]] = {}
        # (class, `self.x`) -> the values its methods assign to it: what `q1.x` holds when q1 is
        # an instance of that class (`self.x` in `assigns` mixes every class of the file)
        self._class_assigns: dict[tuple[str, str], list[cst.BaseExpression]] = {}
        # names the file updates in place anywhere (`step += 1`): counters, never settings
        self.incremented: set[str] = set()
        self.functions: dict[str, cst.FunctionDef] = {}  # top-level defs
        self.all_functions: dict[str, list[cst.FunctionDef]] = {}  # at any depth (closures)
        # every top-level def of a name, in order, each with whether it is straight in the module's body
        self.top_functions: dict[str, list[tuple[cst.FunctionDef, bool]]] = {}
        self.plain_functions: dict[str, list[cst.FunctionDef]] = {}  # not methods: callable by bare name
        self.classes: dict[str, ClassInfo] = {}
        self.engines: set[str] = set()  # receivers of `X.backward(loss)` and X.step()
        # `update` of `Engine(update)` (ignite), `self.update` of `Engine(self.update)`: loop bodies
        self.iteration_functions: list[str] = []
        self._run_functions: list[str] = []  # `update` of `Engine(update)`, in the file's order
        self._handlers: list[tuple[Optional[str], str]] = []  # (`trainer`, `update`) of `@trainer.on(...)`
        # Every handler registration (model/engines.py reads them): `@trainer.on(event, *args)` on a
        # def and `trainer.add_event_handler(event, handler, *args)`, as
        # (enclosing def or None, enclosing class name, receiver, event, handler def or expression, args).
        self.registrations: list[tuple] = []
        self._scopes: list[cst.FunctionDef] = []  # the defs being visited, innermost last
        # id of an assigned call -> the def it is assigned in (None: the module): which `trainer`
        # a handler registered in a function is registered on
        self.value_scope: dict[int, Optional[cst.FunctionDef]] = {}
        # optimizers with a step hook that clears (ALL_OPTIMIZERS: a global hook)
        self.cleared_by_step_hook: set[str] = set()
        self._step_hooks: list[tuple[str, cst.BaseExpression]] = []
        self._backward_receivers: set[str] = set()
        self._step_receivers: set[str] = set()
        self._stepped_arguments: set[str] = set()  # what `x.step(arg)` hands a step (a scaler's optimizer)
        self._class_stack: list[ClassInfo] = []
        self._elements: dict[str, set[str]] = {}  # `o` of `for o in X:` -> the Xs it iterates
        self._function_depth = 0
        # per open def: [node, class, calls a clip, calls `x.step(arg)`, calls `x.backward()`,
        # calls `x.step()`, loops open around it, calls either outside its own loops]
        # (scaler_steps.py; a step of its own: OWN_STEP)
        self._open_functions: list[list] = []
        self._parent: dict[str, str] = {}  # alias union-find
        # id of a value bound to a bare name inside a def -> (that def, the name): a local of
        # that def, which other scopes see only if the def hands it on (`_dead_end`)
        self._bound_in: dict[int, tuple[cst.FunctionDef, str]] = {}
        # a list filled after it is made (`params.append(p)`, `.extend(...)`, `+=`): bare name ->
        # [(the def it happens in, what is added)]; a loop variable added is its loop's iterable
        self._filled: dict[str, list[tuple[Optional[cst.FunctionDef], cst.BaseExpression]]] = {}
        self._for_stack: list[tuple[frozenset, cst.BaseExpression]] = []  # (target names, iterable)
        # name -> (block, is None) of each assignment, the block being the id of the suite
        # holding it (0: the module's): names set to None together (`else: opt = None; sched =
        # None`) and built together are None together (absent_together)
        self.reads_scale = False  # the file calls `x.get_scale()` somewhere (classify.reads_the_scale)
        self._placed: dict[str, list[tuple[int, bool]]] = {}
        self._blocks: list[int] = []
        # `net_g, net_d = nets` where `nets` is a parameter of the def: (name, id of the value) ->
        # (that def, the parameter, the position); and bare-name calls by callee, to read the
        # arguments every call of that def hands it (`_rebinds_itself`)
        self._unpacked_params: dict[tuple[str, int], tuple[cst.FunctionDef, str, int]] = {}
        self._bare_calls: dict[str, list[cst.Call]] = {}
        # Scoping of bare names (values_seen_at): id of a value bound to a bare name -> the def
        # it is bound in (None: the module); id of a def -> the def it is nested in; id of a
        # call on a bare name (`agent.train_step()`) -> the def it is made in
        self._value_def: dict[int, Optional[cst.FunctionDef]] = {}
        self._def_parent: dict[int, Optional[cst.FunctionDef]] = {}
        self._call_def: dict[int, Optional[cst.FunctionDef]] = {}
        # Bare names whose items the file may change: `T[k] = v`, `del T[k]`, `T.update(...)`,
        # any method call on it but a read (tables.py reads a table only when none is made)
        self.tables_changed: set[str] = set()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append(id(node))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self._blocks.pop()

    # --- collection -------------------------------------------------------

    def visit_Import(self, node: cst.Import) -> None:
        self.imports.add(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        self.imports.add(node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        bases = [self.imports.qualify(dotted(arg.value)) or "" for arg in node.bases]
        info = ClassInfo(node.name.value, bases)
        info = self.classes.setdefault(info.name, info)
        self._class_stack.append(info)
        self.outline.append(("class", info))

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._class_stack.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.number(node, keep=True)
        for decorator in node.decorators:
            call = decorator.decorator
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in api.ITERATION_HANDLER_DECORATORS
            ):
                self._handlers.append((dotted(call.func.value), node.name.value))
                if call.args:
                    self.registrations.append((
                        self._scopes[-1] if self._scopes else None, self._enclosing_class(), dotted(call.func.value),
                        call.args[0].value, node, tuple(a.value for a in call.args[1:]),
                    ))
        self.all_functions.setdefault(node.name.value, []).append(node)
        if not (self._class_stack and self._function_depth == 0):
            self.plain_functions.setdefault(node.name.value, []).append(node)
        if self._class_stack and self._function_depth == 0:
            self._class_stack[-1].methods.setdefault(node.name.value, node)
            if node.name.value == api.AUTOMATIC_OPTIMIZATION and _returns_false(node):
                self._class_stack[-1].manual_optimization = True  # `@property def automatic_optimization`
        elif not self._class_stack and self._function_depth == 0:
            self.functions.setdefault(node.name.value, node)
            # (with whether it stands straight in the module's body: not under an `if`/`try`)
            self.top_functions.setdefault(node.name.value, []).append((node, not self._blocks))
        self._function_depth += 1
        self._def_parent[id(node)] = self._scopes[-1] if self._scopes else None
        self._scopes.append(node)
        self._open_functions.append([node, self._enclosing_class(), False, False, False, False, len(self._open_loops), False])

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._function_depth -= 1
        self._scopes.pop()
        node, class_name, clips, steps, backward, any_step, _, direct = self._open_functions.pop()
        if clips and steps:
            # a clip and a `scaler.step(opt)`-like call: modelled on its own for GL006 (the
            # scaled backward may run in a caller the file does not show)
            self.outline.append(("function", node, class_name))
        if backward and any_step and direct:
            # a backward and a step in its own body, not all inside its own loops (which are
            # modelled as loops): a training step whoever calls it, modelled on its own when no
            # loop of the file runs it (loops.py, OWN_STEP)
            self.outline.append((api.OWN_STEP, node, class_name))

    def _enclosing_class(self) -> Optional[str]:
        return self._class_stack[-1].name if self._class_stack else None

    def visit_For(self, node: cst.For) -> None:
        self.number(node, self._function_depth > 0)
        self._open_loops.append([id(node), False, set(), set()])
        self.outline.append(("loop", node, self._enclosing_class()))
        self._assigned(node.target)
        self._for_stack.append((frozenset(target_names(node.target)), node.iter))
        if isinstance(node.target, cst.Name):  # `for o in optimizers:`: o is one of them
            source = dotted(node.iter)
            if source is not None:
                self._elements.setdefault(node.target.value, set()).add(source)

    def leave_For(self, original_node: cst.For) -> None:
        self._for_stack.pop()
        self._close_loop()

    def _fill(self, name: Optional[str], value: cst.BaseExpression) -> None:
        """`name.append(value)`, `name.extend(value)`, `name += value`: what a bare name's list
        is filled with; a loop variable of an enclosing loop stands for that loop's iterable
        (`for n, p in model.named_parameters(): params.append(p)` adds model's)."""
        if name is None or "." in name:
            return
        if isinstance(value, cst.Name):
            value = next((it for names, it in reversed(self._for_stack) if value.value in names), value)
        self._filled.setdefault(name, []).append((self._scopes[-1] if self._scopes else None, value))

    def visit_While(self, node: cst.While) -> None:
        self.number(node, self._function_depth > 0)
        self._open_loops.append([id(node), False, set(), set()])
        self.outline.append(("loop", node, self._enclosing_class()))

    def leave_While(self, original_node: cst.While) -> None:
        self._close_loop()

    def _close_loop(self) -> None:
        key, relevant, called, assigned = self._open_loops.pop()
        self._loops[key] = (relevant, frozenset(called), frozenset(assigned))
        if self._open_loops:
            parent = self._open_loops[-1]
            parent[1] = parent[1] or relevant
            parent[2] |= called
            parent[3] |= assigned

    def _assigned(self, target: cst.BaseExpression) -> None:
        """Names a loop assigns (at any depth): conditions on them can change between iterations."""
        if self._open_loops:
            self._open_loops[-1][3].update(target_names(target))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._assigned(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._assigned(node.asname.name)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == api_names.GRAD and self._open_loops:
            self._open_loops[-1][1] = True  # `p.grad = g` writes a gradient by hand

    def loop_facts(self, loop: cst.CSTNode) -> Optional[tuple[bool, frozenset, frozenset]]:
        """Of a loop this pass walked: does it call a backward or step API, the other names
        it calls, the names it assigns."""
        return self._loops.get(id(loop))

    def calls_file_function(self, called: frozenset) -> bool:
        if called and any(api_names.OBJECT_CALL in c.methods for c in self.classes.values()):
            return True  # any call may be of an object of that class (`loss_scaler(loss, opt)`)
        return any(
            name in self.functions or name in self.plain_functions or any(name in c.methods for c in self.classes.values())
            for name in called
        )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.number(node, self._function_depth > 0)
        self._assigned(node.target)
        self._note_item_write(node.target, augmented=True)
        self.incremented.update(target_names(node.target))
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._fill(node.target.value, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.number(node, self._function_depth > 0)
        for target in node.targets:
            self._bind(target.target, node.value)
            self._assigned(target.target)
            self._note_item_write(target.target)
        if isinstance(node.value, cst.Call):
            self.value_scope[id(node.value)] = self._scopes[-1] if self._scopes else None

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.number(node, self._function_depth > 0)
        self._assigned(node.target)
        if node.value is not None:
            self._bind(node.target, node.value)


    def visit_Del(self, node: cst.Del) -> None:
        self._note_item_write(node.target)

    def _note_item_write(self, target: cst.BaseExpression, augmented: bool = False) -> None:
        if augmented and isinstance(target, cst.Name):  # `T += [cls]`
            self.tables_changed.add(target.value)
        for element in target.elements if isinstance(target, (cst.Tuple, cst.List)) else ():
            self._note_item_write(element.value)
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
            self.tables_changed.add(target.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        # (a framework's engine factory at module level too: its documented events sit on it)
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.attr.value not in api.CONTAINER_READ_METHODS:
            self.tables_changed.add(func.value.value)
        self.number(node, self._function_depth > 0 or _names_documented_runner(node.func))
        if self._open_functions:
            func = node.func
            called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
            top = self._open_functions[-1]
            if called in api.CLIP_FUNCTIONS:
                top[2] = True
            elif called == api_names.STEP:
                top[3] = top[3] or bool(node.args)
                if isinstance(func, cst.Attribute):
                    top[5] = True
                    top[7] = top[7] or len(self._open_loops) == top[6]
            elif called == api_names.BACKWARD and isinstance(func, cst.Attribute):
                top[4] = True
                top[7] = top[7] or len(self._open_loops) == top[6]
        if self._open_loops:
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
            if name is not None:
                top = self._open_loops[-1]
                if name in self._event_names:
                    top[1] = True
                else:
                    top[2].add(name)
        self._step_hook(node)
        if isinstance(node.func, cst.Name):
            self._bare_calls.setdefault(node.func.value, []).append(node)
            self._call_def[id(node)] = self._scopes[-1] if self._scopes else None  # (what it hands a parameter)
        if node.args and api.iteration_runner(self.imports.qualify(dotted(node.func))):
            function = dotted(node.args[0].value)
            if function is not None and function not in self._run_functions:
                self._run_functions.append(function)
        if isinstance(node.func, cst.Attribute):
            if isinstance(node.func.value, cst.Name):
                self._call_def[id(node)] = self._scopes[-1] if self._scopes else None
            if node.func.attr.value in api.SCALE_READERS:
                self.reads_scale = True
            receiver = dotted(node.func.value)
            if receiver is None:
                return
            if node.func.attr.value in api.HANDLER_REGISTRATION_METHODS and len(node.args) >= 2:
                self.registrations.append((
                    self._scopes[-1] if self._scopes else None, self._enclosing_class(), receiver,
                    node.args[0].value, node.args[1].value, tuple(a.value for a in node.args[2:] if a.keyword is None),
                ))
            if node.func.attr.value == api_names.BACKWARD and node.args:
                self._backward_receivers.add(receiver)
            elif node.func.attr.value == api_names.STEP and not node.args:
                self._step_receivers.add(receiver)
            elif node.func.attr.value == api_names.STEP and node.args:
                stepped = dotted(node.args[0].value)  # `scaler.step(optimizer)`
                if stepped is not None:
                    self._stepped_arguments.add(stepped)
            elif node.func.attr.value in api.STEP_FUNCTIONS and node.args:
                # `strategy.optimizer_step(optimizer, model)`: the receiver runs the optimizer
                self._step_receivers.add(receiver)
            elif node.func.attr.value in api_names.LIST_FILLERS and len(node.args) == 1 and not node.args[0].star:
                self._fill(receiver, node.args[0].value)

    def _built_by_runner(self, value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Call) and api.iteration_runner(self.imports.qualify(dotted(value.func)))

    def _step_hook(self, node: cst.Call) -> None:
        """`opt.register_step_post_hook(lambda o, a, k: o.zero_grad())`: every step of opt clears."""
        func = node.func
        if not node.args:
            return
        if isinstance(func, cst.Attribute) and func.attr.value in api.STEP_HOOK_METHODS:
            target = dotted(func.value)
        elif last(self.imports.qualify(dotted(func)) or "") in api.GLOBAL_STEP_HOOK_FUNCTIONS:
            target = ALL_OPTIMIZERS
        else:
            return
        if target is not None:
            self._step_hooks.append((target, node.args[0].value))  # judged at the end: the def may come later

    def _function_named(self, node: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        name = dotted(node)
        defs = self.all_functions.get(last(name), []) if name else []
        return defs[0] if len(defs) == 1 else None

    def clears_after_step(self, optimizer: Optional[str]) -> bool:
        hooked = self.cleared_by_step_hook
        return bool(hooked) and (ALL_OPTIMIZERS in hooked or any(self.same(optimizer or "", h) for h in hooked))

    def leave_Module(self, original_node: cst.Module) -> None:
        self.finish()

    def learn(self, values: dict) -> None:
        """What another module builds the attributes of an object of this file from
        (gradlint/model/foreign.py: `gan.opt_d` = `torch.optim.Adam(gan.discriminator.parameters())`),
        for the names this file never assigns itself."""
        new = {name: list(built) for name, built in values.items() if name not in self.assigns}
        if new:
            self.assigns.update(new)
            for name in ("_kinds", "_params", "_resolved", "_returned", "_member_values"):
                self.__dict__.pop(name, None)

    def finish(self) -> None:
        """What needs every assignment and def seen so far, computed anew (a file built in
        pieces calls it after each piece), and the caches that new bindings outdate dropped."""
        for name in ("_kinds", "_params", "_resolved", "_accumulation_flags", "_returned", "_member_values", "_handed_on",
                     "_alias_members", "_handed"):
            self.__dict__.pop(name, None)
        # handlers of an object built by an iteration runner (`trainer = Engine(step)`)
        handlers = [
            function
            for runner, function in self._handlers
            if runner and any(self._built_by_runner(v) for v in self.assigns.get(runner, ()))
        ]
        self.iteration_functions = list(dict.fromkeys(self._run_functions + handlers))
        self.cleared_by_step_hook = {
            target
            for target, hook in self._step_hooks
            if _clears(hook if isinstance(hook, cst.Lambda) else self._function_named(hook))
        }
        # DeepSpeed's idiom: engine.backward(loss); engine.step() on one receiver; and a training
        # strategy wrapping such an engine: strategy.backward(loss, model, optimizer), then
        # strategy.optimizer_step(optimizer, model): it owns the optimizer and clears for it.
        self.engines = {
            r for r in self._backward_receivers & self._step_receivers if self.kind(r) in (None, ENGINE, MODULE)
        }
        self.__dict__.pop("_kinds", None)  # kinds depend on the engines just found

    # --- a file built in pieces (piecewise.py) ---------------------------------------

    def take_outline(self) -> list[tuple]:
        """The outline since the last call; forgotten here (it holds the piece's loop nodes)."""
        outline, self.outline = self.outline, []
        return outline

    def end_piece(self) -> None:
        """Forget what names the nodes of a piece that is about to be freed."""
        self._loops.clear()
        self.loose.clear()

    def adopt_scopes(self, again: "Bindings") -> list[int]:
        """A piece parsed a second time (piecewise.py): the def each of its new call nodes is
        made in, as `again`'s walk of the new tree found it, translated to this pass's node of
        that def (numbered alike: `again` counts on from where the piece began), so that
        values_seen_at reads Python's scoping at the new calls as at the first pass's (else a
        call it does not know reads every value of the name in the file).  Returns the keys
        added, for forget_scopes before the new tree is freed (its ids are handed out again)."""
        defs = {}
        for nodes in self.all_functions.values():
            for node in nodes:
                number = self.numbers.get(id(node))
                if number is not None:
                    defs[number] = node
        added = []
        for key, scope in again._call_def.items():
            mapped = defs.get(again.numbers.get(id(scope))) if scope is not None else None
            if scope is not None and mapped is None:
                self._call_def.pop(key, None)  # not placed: read file-wide, as for any unknown call
                continue
            self._call_def[key] = mapped
            added.append(key)
        return added

    def forget_scopes(self, keys: list[int]) -> None:
        for key in keys:
            self._call_def.pop(key, None)

    # --- questions the loop builder asks (answers only: a piece's are asked again) -------

    def is_engine(self, name: Optional[str]) -> bool:
        return name in self.engines

    def accumulation_flag(self, name: str) -> bool:
        """`need_update = (i + 1) % accum == 0` makes `if need_update:` an accumulation condition."""
        cache = self.__dict__.setdefault("_accumulation_flags", {})
        if name not in cache:
            cache[name] = any(_counts_accumulation(value) for value in self.assigns.get(name, ()))
        return cache[name]

    def helper_function(self, name: str) -> Optional[tuple[cst.FunctionDef, bool]]:
        """The def a bare call `name(...)` runs, and whether it is a top-level function
        (else a closure of the file, such as `def _backward(loss): ...` inside the loop)."""
        if name in self.functions:
            return self.functions[name], True
        local = self.plain_functions.get(name, [])
        return (local[0], False) if len(local) == 1 else None

    def only_function(self, name: str) -> Optional[cst.FunctionDef]:
        """The one def of that name at any depth, if there is exactly one."""
        defs = self.all_functions.get(name, [])
        return defs[0] if len(defs) == 1 else None

    def find_method(self, class_name: Optional[str], method: str) -> Optional[tuple[cst.FunctionDef, str]]:
        """`method` of a class of the file or of its first base class of the file, and that class."""
        seen: list[str] = []
        while class_name and class_name in self.classes and class_name not in seen:
            seen.append(class_name)
            info = self.classes[class_name]
            if method in info.methods:
                return info.methods[method], class_name
            bases = [b.rsplit(".", 1)[-1] for b in info.bases]
            class_name = next((b for b in bases if b in self.classes), None)
        return None

    def only_override(self, class_name: str, method: str) -> Optional[tuple[cst.FunctionDef, str]]:
        """`method` of the one class of the file that derives (through classes of the file) from
        `class_name` and defines it; None when no class or several do."""
        found = self.overrides(class_name, method)
        return found[0] if len(found) == 1 else None

    def overrides(self, class_name: str, method: str) -> list[tuple[cst.FunctionDef, str]]:
        """(def, class) of `method` in every class of the file that derives (through classes of
        the file) from `class_name` and defines it, in the file's order."""
        found = []
        for info in self.classes.values():
            if info.name == class_name or method not in info.methods:
                continue
            seen: list[str] = []
            parent = info.name
            while parent in self.classes and parent not in seen:
                seen.append(parent)
                bases = [b.rsplit(".", 1)[-1] for b in self.classes[parent].bases]
                parent = next((b for b in bases if b in self.classes), None)
                if parent == class_name:
                    found.append((info.methods[method], info.name))
                    break
        return found

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            self._bind_unpacked(target, value)
            return
        name = dotted(target)
        if name is not None:
            self._bind_name(name, value)

    def _bind_name(self, name: str, value: cst.BaseExpression) -> None:
        if self._class_stack and root(name) == "self":
            if last(name) == api.AUTOMATIC_OPTIMIZATION and isinstance(value, cst.Name) and value.value == "False":
                self._class_stack[-1].manual_optimization = True
        is_none = isinstance(value, cst.Name) and value.value == "None"
        self._placed.setdefault(name, []).append((self._blocks[-1] if self._blocks else 0, is_none))
        self._bind_value(name, value)

    def _bind_value(self, name: str, value: cst.BaseExpression) -> None:
        if isinstance(value, cst.IfExp):
            # `opt = Adam(...) if fine_tune else None`: bound to one side or the other
            for side in (value.body, value.orelse):
                self._bind_value(name, side)
            return
        self._append(name, value)
        if self._class_stack and root(name) == "self" and "." in name:
            # also per class: `self.optimizer` of two classes are two attributes (instance_attribute)
            self._class_assigns.setdefault((self._class_stack[-1].name, name), []).append(value)
        if self._scopes and "." not in name:
            self._bound_in[id(value)] = (self._scopes[-1], name)
        source = self._alias_source(value)
        if source is not None and not (source != name and is_under(source, name)):
            # (`x = x.feature_extractor` narrows x to a part of itself: no alias of that part)
            self._union(name, source)

    def _append(self, name: str, value: cst.BaseExpression) -> None:
        self.assigns.setdefault(name, []).append(value)
        if "." not in name:
            self._value_def[id(value)] = self._scopes[-1] if self._scopes else None

    def values_seen_at(self, name: str, call: Optional[cst.Call], depth: int = 0) -> Sequence[cst.BaseExpression]:
        """The values of bare `name` that the scope of `call` (a `name.m(...)` or a `f(name)` of
        this file) sees: Python's rule, a name a def binds anywhere in its body (an assignment,
        a loop target, a parameter, ...) is local to that def unless it declares it global or
        nonlocal; else the enclosing def's, up to the module's.  A parameter holds what the
        calls of its def hand it (_handed_in).  Without a known call (a node built by the model,
        a dotted name): every value of the file, as elsewhere in this pass.  Read, never changed:
        the sequence may be the bindings' own (a copy per call of a name bound in each of 4,000
        loops of one function, asked once per loop, cost the square of the loops)."""
        values = self.assigns.get(name, [])
        if "." in name or call is None or id(call) not in self._call_def:
            return values
        scope = self._call_def[id(call)]
        while scope is not None:
            local, declared = self._names_of(scope)
            if name in declared.get("global", ()):
                scope = None
            elif name in local:
                break
            else:
                scope = self._def_parent.get(id(scope))
        seen = self._values_by_scope(name, values).get(id(scope) if scope is not None else None, ())
        if scope is not None and name in _parameter_names(scope):
            return [*seen, *self._handed_in(scope, name, depth)]
        return seen

    def parameter_def(self, name: str, call: Optional[cst.Call]) -> Optional[str]:
        """The name of the top-level def whose parameter bare `name` is where `call` is made
        (`loss_scaler` of `loss_scaler(loss, opt)` in `def train_one_epoch(..., loss_scaler)`),
        when nothing in the file binds that name otherwise and no call of the def in the file
        hands it (its callers are in other modules: Index.handed_class); else None."""
        if "." in name or call is None or id(call) not in self._call_def or self.assigns.get(name):
            return None
        scope = self._call_def[id(call)]
        while scope is not None and name not in self._names_of(scope)[0]:
            scope = self._def_parent.get(id(scope))
        if scope is None or self._def_parent.get(id(scope)) is not None or name not in _parameter_names(scope):
            return None
        if self._bare_calls.get(scope.name.value) or self.plain_functions.get(scope.name.value, ()) != [scope]:
            return None
        return scope.name.value

    def _handed_in(self, function: cst.FunctionDef, parameter: str, depth: int) -> list[cst.BaseExpression]:
        """What every call of `function` in this file hands `parameter` (`train(env, agent)` with
        `agent = DQN()` where that call is made): the argument, or the values its name has there.
        None of it when a call may leave the default in place, the def is a method or has a
        namesake.  When this pass sees no call of it (its caller is elsewhere, or the screen kept
        only the assignments of the function that calls it), every value of the name in the file,
        the file-wide reading of the rest of this pass."""
        calls = self._bare_calls.get(function.name.value, ())
        if not calls:
            return list(self.assigns.get(parameter, []))
        if depth >= _MAX_DEPTH or self.plain_functions.get(function.name.value, ()) != [function]:
            return []
        out: list[cst.BaseExpression] = []
        for call in calls:
            argument = _argument_for(call, function, parameter)
            if argument is None:
                return []
            if isinstance(argument, cst.Name):
                out += self.values_seen_at(argument.value, call, depth + 1)
            else:
                out.append(argument)
        return out

    def _values_by_scope(self, name: str, values: list) -> dict:
        """The values of bare `name` grouped by the def whose local they are (id of the def, None:
        the module's), in file order; once per name while its values stay as many.  Asked per
        call, the owner of every value again: a function of 4,000 loops that reassign `loss` cost
        the square of them."""
        cache = self.__dict__.setdefault("_by_scope", {})
        known = cache.get(name)
        if known is None or known[0] != len(values):
            groups: dict = {}
            for value in values:
                owner = self._owning_scope(name, value)
                groups.setdefault(id(owner) if owner is not None else None, []).append(value)
            known = cache[name] = (len(values), groups)
        return known[1]

    def _names_of(self, scope: cst.FunctionDef) -> tuple[frozenset, dict]:
        cache = self.__dict__.setdefault("_scope_names", {})
        if id(scope) not in cache:
            cache[id(scope)] = _local_names(scope)
        return cache[id(scope)]

    def bound_at_module_level(self, name: str, value: cst.BaseExpression) -> bool:
        """Is this value of bare `name` bound to the module's global (not a def's local)?"""
        return id(value) in self._value_def and self._owning_scope(name, value) is None

    def _owning_scope(self, name: str, value: cst.BaseExpression) -> Optional[cst.FunctionDef]:
        """The def whose local `name` this value is bound to (None: the module's global); a def
        that declares it global or nonlocal binds the module's or the enclosing def's."""
        scope = self._value_def.get(id(value))
        while scope is not None and name not in self._names_of(scope)[0]:
            if name in self._names_of(scope)[1].get("global", ()):
                return None
            scope = self._def_parent.get(id(scope))
        return scope

    def _bind_unpacked(self, target: cst.Tuple | cst.List, value: cst.BaseExpression) -> None:
        names = [dotted(el.value) for el in target.elements]
        if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(names):
            for name, el in zip(names, value.elements):
                if name is not None:
                    self._bind_name(name, el.value)
            return
        if isinstance(value, cst.Call):
            callee = self.imports.qualify(dotted(value.func)) or ""
            if callee in api.ENGINE_FACTORIES and names and names[0] is not None:
                # engine, optimizer, loader, scheduler = deepspeed.initialize(...)
                self._append(names[0], value)
                for name in names[1:]:
                    if name is not None:
                        self._append(name, value)
                return
            if last(callee) in api.WRAPPER_CALLS:
                # model, opt = accelerator.prepare(model, opt): aliases by position
                positional = [a.value for a in value.args if a.keyword is None]
                for name, arg in zip(names, positional):
                    if name is not None:
                        self._append(name, arg)
                        source = dotted(arg)
                        if source is not None:
                            self._union(name, source)
                return
        parameter = self._parameter_of_def(value)
        for index, name in enumerate(names):
            if name is not None:
                self._append(name, value)
                if parameter is not None:
                    self._unpacked_params[(name, id(value))] = (self._scopes[-1], parameter, index)

    def _parameter_of_def(self, value: cst.BaseExpression) -> Optional[str]:
        """`nets` when `value` is the bare name of a parameter of the def being visited."""
        if not isinstance(value, cst.Name) or not self._scopes:
            return None
        params = self._scopes[-1].params
        names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        return value.value if value.value in names else None

    def _rebinds_itself(self, name: str, value: cst.BaseExpression) -> bool:
        """Does binding `value` to `name` hand back the object `name` already denotes?  `a = a.to(dev)`,
        `model, opt = accelerator.prepare(model, opt)`, and `net_g, net_d = nets` in `def
        train(nets)` when every call of train in the file hands `nets` a literal list whose element
        there is `net_g` itself (`train([net_g, net_d])`): the same object under the same name."""
        source = self._alias_source(value)
        if source is not None and is_under(source, name):
            return True  # (or a part of it: `x = x.feature_extractor`, still the object x was built as)
        unpacked = self._unpacked_params.get((name, id(value)))
        if unpacked is None:
            return False
        function, parameter, index = unpacked
        calls = self._bare_calls.get(function.name.value, ())
        if not calls or len(self.plain_functions.get(function.name.value, ())) != 1:
            return False  # never called here, a method, or two defs of that name: unknown
        for call in calls:
            argument = _argument_for(call, function, parameter)
            if not isinstance(argument, (cst.List, cst.Tuple)) or len(argument.elements) <= index:
                return False
            if any(isinstance(e, cst.StarredElement) for e in argument.elements):
                return False
            if dotted(argument.elements[index].value) != name:
                return False
        return True

    def _restored(self, value: cst.BaseExpression) -> bool:
        """`checkpoint['decoder_optimizer']` where `checkpoint = torch.load(path)`: an object read back
        from a checkpoint, saved from what the same name is built as on the other path (resuming a
        run).  Skipped beside that construction; alone, it leaves the name unknown."""
        if not isinstance(value, cst.Subscript):
            return False
        # (the same name may also hold the checkpoint's path, or None, before it is loaded)
        bound = [v for v in self.assigns.get(dotted(value.value) or "", ()) if not _constant(v)]
        return bool(bound) and all(
            isinstance(v, cst.Call) and self.imports.qualify(dotted(v.func)) in api.CHECKPOINT_LOADERS for v in bound
        )

    def _alias_source(self, value: cst.BaseExpression) -> Optional[str]:
        """`b` for `a = b`, `a = DDP(b)`, `a = b.to(dev)`, `a = b.module`.  (`a = None` names no
        object: every name set to None would otherwise be one alias class.)"""
        if isinstance(value, cst.Name) and value.value in _CONSTANTS:
            return None
        if isinstance(value, (cst.Name, cst.Attribute)):
            name = dotted(value)
            if name is not None and last(name) in api.WRAPPER_METHODS and "." in name:
                return name.rsplit(".", 1)[0]
            return name
        if isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value in api.WRAPPER_METHODS:
                return dotted(func.value) or self._alias_source(func.value)
            callee = self.imports.qualify(dotted(func))
            if callee and last(callee) in api.WRAPPER_CALLS:
                for arg in value.args:
                    if arg.keyword is None or arg.keyword.value in api_names.WRAPPED_KEYWORDS:
                        return dotted(arg.value)
        return None

    # --- aliases ---------------------------------------------------------------

    def _find(self, name: str) -> str:
        while self._parent.get(name, name) != name:
            name = self._parent[name]
        return name

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            # the representative names the object in messages: `student`, not `self.student`
            low, high = sorted((ra, rb), key=lambda name: (root(name) == "self", name))
            self._parent[high] = low
            self._parent.setdefault(low, low)

    def canonical(self, name: str) -> str:
        """The representative of `name`'s alias class, applied to its longest aliased prefix."""
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self._parent:
                rep = self._find(prefix)
                return ".".join([rep] + parts[cut:])
        return name

    def absent_together(self, name: str) -> str:
        """The first (by name) of the names set to None in the same block as `name` and built
        (one call each) in the same block as it, and nowhere else: `if optimizer1 is not None:`
        and `if scheduler1 is not None:` then test one thing.  `name` itself when none is."""
        shape = self._none_shape(name)
        if shape is None:
            return name
        partners = [other for other, placed in self._placed.items()
                    if other != name and len(placed) == 2 and self._none_shape(other) == shape]
        return min([name, *partners])

    def _none_shape(self, name: str) -> Optional[tuple]:
        placed = self._placed.get(name, ())
        if len(placed) != 2 or {p[1] for p in placed} != {True, False}:
            return None
        built = next(v for v in self.assigns.get(name, ()) if not (isinstance(v, cst.Name) and v.value == "None"))
        if not isinstance(built, cst.Call):
            return None
        return tuple(sorted(placed, key=lambda p: p[1]))

    def same(self, a: str, b: str) -> bool:
        # (one name is its own alias: the rules ask it of each event's optimizer, most alike)
        return a == b or self.canonical(a) == self.canonical(b)

    # --- what a name is --------------------------------------------------------

    def kind(self, name: Optional[str], depth: int = 0) -> Optional[str]:
        """optimizer / scheduler / scaler / engine / module, or None when unknown.

        Memoised: names chain through aliases, and unmemoised chains are exponential.
        A name met again while it is being resolved (a cycle) is unknown.
        """
        if name is None or depth > _MAX_DEPTH:
            return None
        cache = self.__dict__.setdefault("_kinds", {})
        if name in cache:
            return cache[name]
        cache[name] = None  # cycle guard while resolving
        cache[name] = result = self._kind(name, depth)
        return result

    def _kind(self, name: str, depth: int) -> Optional[str]:
        if name in self.engines:
            return ENGINE
        if name.endswith("]") and "[" in name:  # `opts[i]`: an element of a container
            return self.element_kind(name[: name.index("[")], depth)
        values = self.assigns.get(name, ())
        kinds = {self._kind_of_value(v, depth) for v in values}
        kinds.discard(None)
        if kinds == {MODULE} and self._optimizer_by_use(name, values, depth):
            return OPTIMIZER
        if not kinds and name in self._elements:  # `for o in opts:` and nothing else binds o
            kinds = {self.element_kind(source, depth) for source in self._elements[name]}
            kinds.discard(None)
        if len(kinds) == 1:
            return kinds.pop()
        if kinds:
            # `self.scaler = None` in __init__, `GradScaler(enabled=flag)` in setup(): every kind it
            # is assigned (see attribute_kinds.py)
            return several_kinds(kinds)
        if not kinds and self.canonical(name) != name:
            return self.kind(self.canonical(name), depth + 1)
        return None

    def _kind_of_value(self, value: cst.BaseExpression, depth: int) -> Optional[str]:
        if depth > _MAX_DEPTH:
            return None  # a method that returns what it (or another) returns, around and around
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.kind(dotted(value), depth + 1)
        if isinstance(value, cst.Subscript) and _lightning_schedulers(value.value, self):
            return SCHEDULER  # `schedulers = self.lr_schedulers()` ... `sch_g = schedulers[0]`
        if not isinstance(value, cst.Call):
            return None
        callee = self.imports.qualify(dotted(value.func))
        if callee is None:
            source = self._alias_source(value)
            if source is None and _wraps_a_call(value) and depth < _MAX_DEPTH:  # `Critic(d).double().to(device)`
                return self._kind_of_value(value.func.value, depth + 1)
            return self.kind(source, depth + 1) if source else None
        name = last(callee)
        if callee in api.ENGINE_FACTORIES:
            return ENGINE
        if self.scheduler_callee(callee):
            return SCHEDULER
        if name in api.GRAD_SCALERS:
            return SCALER
        if self.builds_optimizer(callee):
            return OPTIMIZER
        if name in self.classes:
            return self._kind_of_class(name, depth)
        returned = self.returned_values(callee) or self.method_returns(callee)
        if returned:
            # `sched = make_sched(opt)` where `def make_sched(opt): return StepLR(opt, 10)`
            kinds = {self._kind_of_value(v, depth + 1) for v in returned} - {None}
            return kinds.pop() if len(kinds) == 1 and kinds <= _MADE_BY_FACTORIES else None
        source = self._alias_source(value)
        if source is not None:
            return self.kind(source, depth + 1)
        if callee.startswith("self.") and callee.count(".") == 1 and name in api.LIGHTNING_SCHEDULER_ACCESSORS:
            return SCHEDULER  # Lightning hands the schedulers configure_optimizers built
        if callee.startswith(api_names.TORCH_PREFIX) and name[:1].islower():
            return VALUE  # `w_opt = torch.tensor(...)`: a tensor, whatever its name says
        if name[:1].isupper() and self._built_from_a_stepped_optimizer(value, depth):
            return SCHEDULER
        return MODULE if name[:1].isupper() else None

    def _optimizer_by_use(self, name: str, values, depth: int) -> bool:
        """A class the checker cannot read (a library's, or a subclass of Optimizer in another
        module), built from parameters and stepped by itself (`opt.step()`): an optimizer,
        however it is named.  A module is never built from another's parameters; an EMA built
        from them is updated, not stepped."""
        if name not in self._step_receivers and self.canonical(name) not in self._step_receivers:
            return False
        for value in values:
            if not isinstance(value, cst.Call) or last(dotted(value.func) or "") in self.classes:
                return False
            if self.wrapped_optimizer(value, depth) is not None and name not in self._backward_receivers:
                continue  # `LARC(optimizer)` stepped in its optimizer's place (not an engine: `x.backward(loss)`)
            params = next((a for a in value.args if a.keyword is not None and a.keyword.value == api_names.PARAMS_KEYWORD), None)
            params = params or next((a for a in value.args if a.keyword is None and not a.star), None)
            if params is None or not self._parameters_expression(params.value, depth + 1):
                return False
        return bool(values)

    def _parameters_expression(self, node: cst.BaseExpression, depth: int) -> bool:
        """Is this, as written, parameters: `m.parameters()`, a filter, list or comprehension of
        them, parameter groups (`[{"params": ...}]`), or a name bound only to such?  (Not
        resolve_params, which also takes a name for the tensors or modules it is bound to.)"""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and node.func.attr.value in api_names.PARAMETER_METHODS:
                return True
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            callee = last(self.imports.qualify(dotted(node.func)) or "")
            if callee in api_names.PARAMETER_PASSES and positional:
                return all(self._parameters_expression(p, depth + 1) for p in (positional if callee in api_names.PARAMETER_CHAINS else positional[-1:]))
            return False
        if isinstance(node, (cst.List, cst.Tuple)):
            items = [el.value for el in node.elements]
            return bool(items) and all(self._parameters_expression(item, depth + 1) for item in items)
        if isinstance(node, cst.Dict):
            return any(
                isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString) and el.key.evaluated_value == api_names.PARAMS_KEYWORD
                and self._parameters_expression(el.value, depth + 1)
                for el in node.elements
            )
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            return self._parameters_expression(node.for_in.iter, depth + 1)
        if isinstance(node, (cst.Name, cst.Attribute)):
            values = self.assigns.get(dotted(node) or "", ())
            return bool(values) and all(self._parameters_expression(v, depth + 1) for v in values)
        return False

    def wrapped_optimizer(self, call: cst.Call, depth: int = 0) -> Optional[str]:
        """The optimizer a library's wrapper is built from (its first argument or `optimizer=`:
        `LARC(optimizer)`, `Lookahead(base)`, `SWA(opt)`), when the file never steps that
        optimizer by itself: the wrapper steps it, and holds its parameters.  None otherwise
        (a class of the file, or an optimizer stepped beside what is built from it: a scheduler)."""
        if not isinstance(call, cst.Call) or depth > _MAX_DEPTH:
            return None
        callee = dotted(call.func) or ""
        if not (last(callee)[:1].isupper() and self.imports.is_imported(callee)) or last(callee) in self.classes:
            return None
        arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == api_names.SCHEDULER_OPTIMIZER), None)
        if arg is None:
            arg = next((a for a in call.args if a.keyword is None and not a.star), None)
        name = dotted(arg.value) if arg is not None else None
        if name is None or self.kind(name, depth + 1) != OPTIMIZER:
            return None
        if self.may_be_stepped(name):
            return None
        return name

    def is_stepping_wrapper(self, name: str) -> bool:
        """Is `name` an optimizer only as a library's wrapper of one (wrapped_optimizer)?"""
        values = self.assigns.get(name, ())
        return bool(values) and self.kind(name) == OPTIMIZER and all(
            isinstance(v, cst.Call) and self.wrapped_optimizer(v) is not None for v in values
        )

    def _built_from_a_stepped_optimizer(self, call: cst.Call, depth: int) -> bool:
        """A class the checker cannot read, built from an optimizer (its first argument, or
        `optimizer=`) that the file steps by itself beside it: a scheduler, however its library
        names it (`WarmupLinearSchedule(optimizer, ...)` of pytorch_transformers).  A wrapper
        that steps for the optimizer it wraps (`LARC(optimizer)`, `PCGrad(optimizer)`) leaves
        that optimizer's own `step()` unwritten: it stays what it was.  Stepped by itself:
        `optimizer.step()`, handed to a step (`scaler.step(optimizer)`), or handed to a
        function that may step it (may_be_stepped)."""
        arg = next((a for a in call.args if a.keyword is not None and a.keyword.value == api_names.SCHEDULER_OPTIMIZER), None)
        if arg is None:
            arg = next((a for a in call.args if a.keyword is None and not a.star), None)
        name = dotted(arg.value) if arg is not None else None
        if name is None or self.kind(name, depth + 1) != OPTIMIZER:
            return False
        return self.may_be_stepped(name)

    def element_kind(self, container: str, depth: int = 0) -> Optional[str]:
        """What every element of `container` is, when every value bound to it is a list, tuple
        or dict (literal or comprehension) of things of that one kind (`[Adam(c.parameters())
        for c in critics]`); else None."""
        values = self.assigns.get(container, ())
        kinds: set = set()
        for value in values:
            if dotted(value) == container or (isinstance(value, cst.Call) and self._alias_source(value) == container):
                continue  # handed back by a wrapper (`opts = accelerator.prepare(opts)`)
            found = self._element_kinds(value, depth)
            if not found:
                return None
            kinds |= found
        return kinds.pop() if len(kinds) == 1 else None

    def _element_kinds(self, value: cst.BaseExpression, depth: int) -> Optional[set]:
        """The kinds of the elements of a container value: a literal or comprehension, another
        name bound to one, or what a function or method of the file returns (`self.optimizer =
        self._build_optimizer()` whose body returns `{"optimizer_g": opt_g, "optimizer_d": opt_d}`)."""
        if isinstance(value, (cst.List, cst.Tuple)):
            elements = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
        elif isinstance(value, cst.Dict):
            elements = [e.value for e in value.elements if isinstance(e, cst.DictElement)]
        elif isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            elements = [value.elt]
        elif isinstance(value, cst.DictComp):
            elements = [value.value]
        elif depth >= _MAX_DEPTH:
            return None
        elif isinstance(value, (cst.Name, cst.Attribute)):
            name = dotted(value)
            kind = self.element_kind(name, depth + 1) if name is not None else None
            return {kind} if kind is not None else None
        elif isinstance(value, cst.Call):
            callee = self.imports.qualify(dotted(value.func))
            returned = (self.returned_values(callee) or self.method_returns(callee)) if callee else ()
            if not returned:
                return None
            kinds: set = set()
            for each in returned:
                found = self._element_kinds(each, depth + 1)
                if not found:
                    return None
                kinds |= found
            return kinds
        else:
            return None
        if not elements:
            return None
        return {self._kind_of_value(e, depth + 1) for e in elements}

    def _kind_of_class(self, class_name: str, depth: int) -> Optional[str]:
        for base in self.classes[class_name].bases:
            if self.scheduler_callee(base):
                return SCHEDULER  # a class of the file on top of LRScheduler / _LRScheduler
            if self.optimizer_callee(base):
                return OPTIMIZER
            if last(base) in self.classes and depth < _MAX_DEPTH:
                return self._kind_of_class(last(base), depth + 1)
        return CUSTOM

    def scheduler_callee(self, callee: str) -> bool:
        return (
            callee.startswith(api.SCHEDULER_MODULE_PREFIXES)
            or last(callee) in api.SCHEDULER_CLASSES
            or bool(api.SCHEDULER_FACTORY.match(last(callee)))
        )

    def optimizer_callee(self, callee: str) -> bool:
        name = last(callee)
        if callee.startswith(api_names.TORCH_OPTIM_PREFIX) and not callee.startswith(api_names.TORCH_SCHEDULER_MODULE):
            return name[:1].isupper()
        return name in api.OPTIMIZER_CLASSES or name in api.OPTIMIZER_FACTORIES

    def builds_optimizer(self, callee: str) -> bool:
        """A call of `callee` builds an optimizer: an optimizer class or factory by its name, or a
        name the file only ever binds to optimizer classes (`optimizer_cls = bnb.optim.AdamW8bit`
        in one branch, `torch.optim.AdamW` in the other: `optimizer_cls(params, ...)` is one)."""
        if self.optimizer_callee(callee):
            return True
        values = self.assigns.get(callee, ())
        if not values or not all(isinstance(v, (cst.Name, cst.Attribute)) for v in values):
            return False
        known = [self.optimizer_callee(self.imports.qualify(dotted(v)) or "") for v in values]
        # A class picked in place of an optimizer class (`optimizer = AnyPrecisionAdamW` in one
        # branch, `torch.optim.AdamW` in the other) is called the same way: it is one too, when
        # the checker cannot read it (imported from elsewhere).
        return any(known) and all(k or self._unreadable_class(dotted(v) or "") for k, v in zip(known, values))

    def _unreadable_class(self, name: str) -> bool:
        """An imported name that reads as a class (capitalised), not one of this file's."""
        return last(name)[:1].isupper() and self.imports.is_imported(name) and name not in self.classes

    def is_plateau_scheduler(self, name: str) -> bool:
        return any(self._builds_plateau(value, 0) for value in self.assigns.get(name, ()))

    def _builds_plateau(self, value: cst.BaseExpression, depth: int) -> bool:
        if not isinstance(value, cst.Call) or depth > _MAX_DEPTH:
            return False
        callee = self.imports.qualify(dotted(value.func)) or ""
        if last(callee) in api.PLATEAU_SCHEDULERS:
            return True
        return any(self._builds_plateau(v, depth + 1) for v in self.returned_values(callee))

    def returned_values(self, callee: str) -> tuple:
        """What the one function of the file that a bare call `callee(...)` runs returns (the
        values of its `return` statements, not those of defs inside it); () if none or unknown."""
        if not callee or "." in callee or self.imports.is_imported(callee):
            return ()
        cache = self.__dict__.setdefault("_returned", {})
        if callee not in cache:
            found = self.helper_function(callee)
            returns = _Returns()
            if found is not None:
                walk(found[0].body, returns)
            cache[callee] = tuple(returns.values)
        return cache[callee]

    def method_returns(self, callee: str) -> tuple:
        """What `self.make_optimizer()` returns: the `return` values of that method in the
        classes of the file that define it (an object built in one method, used in another)."""
        if not callee.startswith("self.") or callee.count(".") != 1:
            return ()
        cache = self.__dict__.setdefault("_returned", {})
        if callee not in cache:
            method = callee[len("self.") :]
            returns = _Returns()
            for info in self.classes.values():
                if method in info.methods:
                    walk(info.methods[method].body, returns)
            cache[callee] = tuple(returns.values)
        return cache[callee]

    def scaler_disabled(self, name: Optional[str]) -> bool:
        """Is `name` a GradScaler built with `enabled=False`, or with `enabled=` a name the file
        only ever sets to False?  Its scale() returns the loss as is: nothing to unscale."""
        values = list(self._values_following_aliases(name)) if name else []
        return bool(values) and all(
            isinstance(v, cst.Call)
            and last(self.imports.qualify(dotted(v.func)) or "") in api.GRAD_SCALERS
            and self._only_false(keyword_argument(v, api_names.SCALER_ENABLED_KEYWORD), 0)
            for v in values
        )

    def _only_false(self, node: Optional[cst.BaseExpression], depth: int) -> bool:
        if isinstance(node, cst.Name) and node.value == "False":
            return True
        name = dotted(node) if node is not None else None
        values = self.assigns.get(name, ()) if name and depth < _MAX_DEPTH else ()
        return bool(values) and all(self._only_false(v, depth + 1) for v in values)

    def is_optimizer(self, name: Optional[str]) -> bool:
        if name is None:
            return False
        kind = self.kind(name)
        if kind is not None:
            return kind == OPTIMIZER
        return api.named_like_optimizer(name) and not self.is_counter(name)

    def is_counter(self, name: str) -> bool:
        """Is `name` a counter: every value the file gives it is a number and it is advanced in
        place (`optim_step = 0` ... `optim_step += 1`)?  Named like an optimizer, it is none."""
        values = self.assigns.get(name, ())
        return bool(values) and name in self.incremented and all(
            isinstance(value, (cst.Integer, cst.Float)) for value in values
        )

    def is_stepped(self, name: str) -> bool:
        """Does the file step `name` by itself (`name.step()`) or hand it to a step
        (`scaler.step(name)`)?"""
        own = self.canonical(name)
        return any(r == name or self.canonical(r) == own for r in self._step_receivers | self._stepped_arguments)

    def may_be_stepped(self, name: str) -> bool:
        """is_stepped, or handed to a function the file calls by its bare name whose name does
        not say it only saves, logs or schedules (`train_one_epoch(model, loader, optimizer)`,
        defined here or imported from another module): that body may step it."""
        if self.is_stepped(name):
            return True
        handed = self.__dict__.get("_handed")
        if handed is None:
            handed = self.__dict__["_handed"] = {
                self.canonical(arg)
                for callee, calls in self._bare_calls.items()
                if callee[:1].islower() and not api.NOT_CLEARING_HELPERS.search(callee)
                and callee not in api_names.INSPECTING_BUILTINS  # `print(optimizer)`
                for call in calls
                for arg in (dotted(a.value) for a in call.args)
                if arg is not None
            }
        return self.canonical(name) in handed

    def used_like_scheduler(self, name: Optional[str]) -> bool:
        """A name nothing in the file resolves (a parameter: `def train(model, optimizer,
        scheduler, loader)`) that is stepped without arguments and named like a scheduler.
        Whether it runs beside an optimizer whose step it precedes is GL008's question."""
        return name is not None and self.kind(name) is None and api.named_like_scheduler(name)

    def is_scaler(self, name: Optional[str]) -> bool:
        if name is None:
            return False
        kind = self.kind(name)
        if kind is not None:
            return kind == SCALER
        return api.named_like_scaler(name)

    # --- which parameters an optimizer holds -----------------------------------

    def optimizer_params(self, name: str) -> Optional[frozenset[str]]:
        """Canonical module names whose parameters `name` steps, or None."""
        cache = self.__dict__.setdefault("_params", {})
        if name not in cache:
            cache[name] = self._optimizer_params(name)
        return cache[name]

    def _optimizer_params(self, name: str) -> Optional[frozenset[str]]:
        if name.endswith("]") and "[" in name:  # `opts[i]`: what any element of opts may step
            return self._element_params(name[: name.index("[")])
        if name not in self.assigns:
            held = self._instance_optimizer_params(name)
            if held is not None:
                return held
        found: set[str] = set()
        seen_any = False
        for value in self._values_following_aliases(name):
            modules = self._constructed_params(value)
            if modules is None:
                return None
            _merge(found, modules)
            seen_any = True
        return self._canonical_set(found) if seen_any else None

    def _instance_optimizer_params(self, name: str) -> Optional[frozenset[str]]:
        """`q1.optimizer` of `q1 = QNet()`, a class of the file whose methods build
        `self.optimizer = Adam(self.parameters())`: q1's modules (`q1`), as a method of q1 inlined
        into a loop names them (loops.py substitutes the receiver for `self`)."""
        head, dot, rest = name.partition(".")
        owner = self.instance_class(head) if dot and head != "self" else None
        found: set[str] = set()
        while owner is not None and not found:
            for value in self._class_assigns.get((owner, "self." + rest), ()):
                if _constant(value):
                    continue
                modules = self._constructed_params(value)
                if modules is None:
                    return None
                _merge(found, (head + module[4:] if root(module) == "self" else module for module in modules))
            info = self.classes.get(owner)
            bases = [b.rsplit(".", 1)[-1] for b in info.bases] if info is not None else []
            owner = next((b for b in bases if b in self.classes), None) if not found else None
        return self._canonical_set(found) if found else None

    def _canonical_set(self, modules: Iterable[str]) -> frozenset[str]:
        out: set[str] = set()
        _merge(out, (_same_kind(m, self.canonical(m)) for m in modules))
        return frozenset(out)

    def _constructed_params(self, value: cst.BaseExpression, depth: int = 0) -> Optional[set[str]]:
        """The modules an optimizer construction `Adam(model.parameters())` holds, or None.
        Also what a function of the file returns when it builds one from its arguments
        (`def make_optimizer(net, lr): return Adam(net.parameters(), lr=lr)`, called as
        `make_optimizer(generator, 1e-3)`: generator's)."""
        if not isinstance(value, cst.Call) or depth > _MAX_DEPTH:
            return None
        callee = self.imports.qualify(dotted(value.func)) or ""
        wrapped = None if self.builds_optimizer(callee) else self.wrapped_optimizer(value, depth + 1)
        if wrapped is not None:  # `LARC(optimizer)`: what the optimizer it steps holds
            held = self.optimizer_params(wrapped)
            return set(held) if held is not None else None
        factory = self._factory_params(value, callee, depth)
        if factory is not None:
            return factory
        if not self.builds_optimizer(callee):
            return None
        params = params_argument(value)
        # a factory's first argument may be a config or a model, not parameters: no Parts from it
        parts = last(callee) not in api.OPTIMIZER_FACTORIES
        return self.resolve_params(params, 0, parts) if params is not None else None

    def _factory_params(self, call: cst.Call, callee: str, depth: int) -> Optional[set[str]]:
        """The modules the optimizer a function of the file builds and returns holds, its
        parameters read as the call's arguments; None unless every return builds one whose
        modules are known and every module named by a parameter of the function gets a
        dotted argument."""
        returned = self.returned_values(callee)
        found = self.helper_function(callee) if returned else None
        if found is None or any(a.star for a in call.args):
            return None
        function = found[0]
        names = [p.name.value for p in function.params.params]
        arguments: dict[str, Optional[str]] = {}
        for index, arg in enumerate(call.args):
            key = arg.keyword.value if arg.keyword is not None else names[index] if index < len(names) else None
            if key is not None:
                arguments[key] = dotted(arg.value)
        parameters = set(names) | {p.name.value for p in function.params.kwonly_params}
        out: set[str] = set()
        for value in returned:
            modules = self._constructed_params(value, depth + 1)
            if modules is None:
                return None
            for module in modules:
                head, _, rest = module.partition(".")
                if head in parameters:
                    source = arguments.get(head)
                    if source is None:
                        return None  # a default, or an argument that is no name
                    module = _same_kind(module, source + ("." + rest if rest else ""))
                _merge(out, [module])
        return out

    def _element_params(self, container: str) -> Optional[frozenset[str]]:
        """The modules the optimizers of a container hold, all elements together: in
        `[Adam(critics[i].parameters()) for i in ...]` or `[Adam(c.parameters()) for c in
        critics]`, the container of modules `critics`."""
        found: set[str] = set()
        values = self.assigns.get(container, ())
        for value in values:
            if isinstance(value, (cst.List, cst.Tuple)):
                elements, variable, source = [e.value for e in value.elements], None, None
            elif isinstance(value, (cst.ListComp, cst.GeneratorExp)) and value.for_in.inner_for_in is None:
                target = value.for_in.target
                variable = target.value if isinstance(target, cst.Name) else None
                elements, source = [value.elt], dotted(value.for_in.iter)
            else:
                return None
            for element in elements:
                modules = self._constructed_params(element)
                if modules is None:
                    return None
                for module in modules:
                    if variable is not None and root(module) == variable:
                        # an element of what the comprehension iterates, if that is a container of modules
                        if module != variable or source is None or self.element_kind(source) not in _BUILT_MODULES:
                            return None
                        module = source
                    _merge(found, [module])
        return self._canonical_set(found) if values else None

    def _values_following_aliases(self, name: str, depth: int = 0) -> Iterable[cst.BaseExpression]:
        for value in self.assigns.get(name, ()):
            source = self._alias_source(value)
            if _constant(value):
                continue  # `opt = None` until it is built: holds nothing
            if source == name or self._rebinds_itself(name, value) or self._restored(value):
                continue  # `model, opt = accelerator.prepare(model, opt)` rebinds the same object
            if source is not None and depth < _MAX_DEPTH:
                yield from self._values_following_aliases(source, depth + 1)
            else:
                yield value

    def resolve_params(self, node: cst.BaseExpression, depth: int, parts: bool = False) -> Optional[set[str]]:
        """The modules (or tensors) whose parameters `node` holds, or None.  `parts`: an optimizer's
        own parameter argument, where a method's value is some of its receiver's (`_method_params`);
        elsewhere (a clip's or a loop's iterable, a factory's first argument) it stays unknown."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in api_names.PARAMETER_METHODS:
                module = dotted(func.value)
                if module is None and isinstance(func.value, cst.Subscript):
                    # `critics[i].parameters()`: some of the container of modules `critics`
                    container = dotted(func.value.value)
                    module = container if container and self.element_kind(container) in _BUILT_MODULES else None
                return {module} if module else None
            callee = last(self.imports.qualify(dotted(func)) or "")
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            if callee in api_names.PARAMETER_SEQUENCES and positional:
                return self.resolve_params(positional[-1], depth + 1, parts)
            if callee in api_names.PARAMETER_CHAINS and positional:
                return self._union_of(positional, depth, parts)
            if callee == "dict" and isinstance(func, cst.Name):  # `dict(params=model.parameters(), lr=...)`
                groups = keyword_argument(node, api_names.PARAMS_KEYWORD)
                return self.resolve_params(groups, depth + 1, parts) if groups is not None else None
            if isinstance(func, cst.Attribute) and parts:
                return self._method_params(node, func)
            return None
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            return self._union_of([node.left, node.right], depth, parts)
        if isinstance(node, (cst.List, cst.Tuple)):
            items = []
            for el in node.elements:
                items.append(el.value)
            return self._union_of(items, depth, parts) if items else None
        if isinstance(node, cst.Dict):
            for el in node.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                    if el.key.evaluated_value == api_names.PARAMS_KEYWORD:
                        return self.resolve_params(el.value, depth + 1, parts)
            return None
        if isinstance(node, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            comp = node.for_in
            if comp.inner_for_in is None:
                return self.resolve_params(comp.iter, depth + 1, parts)
            return None
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted(node) or ""
            if self.kind(name) == VALUE:
                return {name}  # `Adam([log_alpha])`: that tensor, apart from every module
            cache = self.__dict__.setdefault("_resolved", {})
            key = (name, parts)
            if key not in cache:
                values = self._list_contents(name)
                cache[key] = None  # cycle guard
                cache[key] = self._union_of(values, depth, parts) if values else None
            return set(cache[key]) if cache[key] is not None else None
        return None

    def _union_of(self, nodes: list[cst.BaseExpression], depth: int, parts: bool = False) -> Optional[set[str]]:
        out: set[str] = set()
        for node in nodes:
            part = self.resolve_params(node, depth + 1, parts)
            if part is None:
                return None
            _merge(out, part)
        return out

    def _list_contents(self, name: str) -> list[cst.BaseExpression]:
        """What `name` holds: its assigned values, and for a list filled after it is made
        (`params = []` then `params.append(p)` in a loop) what is added to it, provided that
        the list is made here and every assignment and addition happens in one def (the same
        name filled in two functions is two lists): else [] (unknown)."""
        values = self.assigns.get(name, [])
        filled = self._filled.get(name)
        if not filled:
            return values
        if not values:
            return []  # filled but never made here (a parameter): what it held before is unknown
        scopes = {id(scope) for scope, _ in filled}
        scopes |= {id(self._bound_in[id(v)][0]) if id(v) in self._bound_in else id(None) for v in values}
        if len(scopes) != 1:
            return []
        kept = [v for v in values if not _empty_sequence(v)]
        return kept + [value for _, value in filled]

    def _method_params(self, call: cst.Call, func: cst.Attribute) -> Optional[set[str]]:
        """`model.get_parameters(base_lr=0.1)`: a method of an object the checker cannot read
        that hands back parameters.  An object's method reaches only what the object holds
        and what the call hands it, so the parameters are some of the receiver's and of the
        arguments' (each a Part); an argument that is no name or constant leaves it unknown,
        and so does a receiver that is an optimizer, a scheduler or a scaler."""
        receiver = dotted(func.value)
        if receiver is None or self.kind(receiver) in (OPTIMIZER, SCHEDULER, SCALER, ENGINE, VALUE):
            return None
        owners = [receiver]
        for arg in call.args:
            if arg.star:
                return None
            if isinstance(arg.value, (cst.BaseNumber, cst.BaseString)):
                continue
            name = dotted(arg.value)
            if name is None:
                return None
            if name not in ("True", "False", "None"):
                owners.append(name)
        return {Part(owner) for owner in owners}

    def fresh_member(self, name: str) -> bool:
        """`distiller.proj` when `distiller = Distiller(...)` (a class of the file) and every
        method of Distiller sets `self.proj` to new parameters: a torch.nn layer, or a
        module built from none of the method's arguments.  (Not `self.backbone =
        student.encoder`: that is the argument's.)"""
        owner, _, attr = name.rpartition(".")
        if not owner or "." in owner:
            return False
        cls = self.instance_class(owner)
        if cls is None:
            return False
        values = self._members(cls).get(attr)
        return bool(values) and all(self._new_parameters(value, params) for value, params in values)

    def _members(self, cls: str) -> dict:
        """`attr` -> [(value, names of the method's arguments)] of every `self.attr = value` in cls."""
        cache = self.__dict__.setdefault("_member_values", {})
        if cls not in cache:
            members = _Members()
            for method in self.classes[cls].methods.values():
                members.arguments = frozenset(p.name.value for p in method.params.params[1:]) | frozenset(
                    p.name.value for p in method.params.kwonly_params
                )
                walk(method.body, members)
            cache[cls] = members.values
        return cache[cls]

    def _new_parameters(self, value: cst.BaseExpression, arguments: frozenset) -> bool:
        if not isinstance(value, cst.Call) or self._alias_source(value) is not None:
            return False
        callee = self.imports.qualify(dotted(value.func)) or ""
        if callee.startswith(api_names.TORCH_NN_PREFIX) and last(callee) not in _MODULE_CONTAINERS and last(callee)[:1].isupper():
            return True  # a layer: its arguments are sizes, not modules
        words = _Words()
        walk(value, words)
        return last(callee)[:1].isupper() and not words.names & arguments

    def instance_class(self, name: str, call: Optional[cst.Call] = None) -> Optional[str]:
        """The class of the file that every assignment of `name` instantiates (`agent = Agent()`);
        a wrapper that hands the same object back (`(self.d_optim, ...) = accelerator.prepare(
        self.d_optim, ...)`, recorded as `name` itself) keeps it.  With `call` (`name.m()`),
        only the assignments its scope sees count (values_seen_at)."""
        found = set()
        for value in self.values_seen_at(name, call):
            if dotted(value) == name:
                continue
            callee = dotted(value.func) if isinstance(value, cst.Call) else None
            if callee is None or callee not in self.classes or self.imports.is_imported(callee):
                return None
            found.add(callee)
        return found.pop() if len(found) == 1 else None

    # --- module identity ---------------------------------------------------------

    def surely_built(self, name: str) -> bool:
        """Every assignment of `name` in the file builds an optimizer, a scheduler or a scaler
        by its class (`Adam(...)`, `StepLR(opt)`, `GradScaler()`): it is never None.  A factory
        (`make_optimizer(model)`, `get_scheduler(...)`) may return None: not built."""
        values = self.assigns.get(name, ())
        if not values:
            return False
        for value in values:
            callee = self.imports.qualify(dotted(value.func)) if isinstance(value, cst.Call) else None
            if callee is None or not last(callee)[:1].isupper() or not (
                self.optimizer_callee(callee) or self.scheduler_callee(callee) or last(callee) in api.GRAD_SCALERS
            ):
                return False
        return True

    def constructed_here(self, name: str) -> bool:
        """Every assignment of `name` that can denote a module builds a new object (no alias,
        no wrapper).  Not counted: a value that is surely no module (`mu = torch.tanh(h) * 2`:
        the same name for a tensor in a forward method) beside one that may be, and a local of
        a def that hands it to nothing (`discriminator = models[1]` in a checkpoint hook):
        neither can be the module a loop elsewhere clears or steps."""
        # `g, opt_g = fabric.setup(g, opt_g)` hands the same object back: not a new binding
        values = [
            v for v in self.assigns.get(name, ())
            if not self._rebinds_itself(name, v) and not self._dead_end(v) and not self._restored(v)
        ]
        modules = [v for v in values if not self._surely_data(v)]
        values = modules or values  # a name only ever bound to tensors (`log_alpha`) is one built here
        if not values:
            return False
        if all(isinstance(v, (cst.List, cst.ListComp)) for v in values):
            return self.element_kind(name) in _BUILT_MODULES  # `[Critic() for _ in range(k)]`: new modules
        return all(isinstance(v, cst.Call) and self._alias_source(v) is None for v in values)

    def _surely_data(self, value: cst.BaseExpression) -> bool:
        """A value that is no module: arithmetic or a literal.  (A call is a construction for
        `constructed_here` whatever it returns, so calls need no look here.)"""
        return isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.BaseNumber, cst.BaseString))

    def _dead_end(self, value: cst.BaseExpression) -> bool:
        """Is `value` bound to a local of a def that cannot hand it to a loop: the def has no
        loop, no nested def, class or lambda, no gradient call (it is not a step a loop
        inlines), and reads the name only as the object of an attribute (`d.save_pretrained(...)`),
        never passing, returning, storing or declaring it global?"""
        bound = self._bound_in.get(id(value))
        if bound is None:
            return False
        scope, name = bound
        cache = self.__dict__.setdefault("_handed_on", {})
        if id(scope) not in cache:
            reads = _HandedOn(self._event_names)
            walk(scope.body, reads)
            cache[id(scope)] = None if reads.blocked else frozenset(reads.names)
        handed_on = cache[id(scope)]
        return handed_on is not None and name not in handed_on

    def definitely_distinct(self, a: str, b: str) -> bool:
        """True only when `a` and `b` surely are different modules."""
        ca, cb = self.canonical(a), self.canonical(b)
        if is_under(ca, cb) or is_under(cb, ca):
            return False
        if "." in ca and "." in cb and ca.rsplit(".", 1)[0] == cb.rsplit(".", 1)[0]:
            return True  # siblings: model.backbone and model.head are different submodules
        if self.kind(ca) == VALUE or self.kind(cb) == VALUE:
            return True  # a tensor the file makes (`torch.tensor(...)`) is a leaf of its own, in no module
        if self.fresh_member(ca) or self.fresh_member(cb):
            return True  # `distiller.proj`, a layer Distiller builds itself, is no part of `student`
        # Objects built separately, or parts of such objects (`agent` and `rnd_model.predictor`),
        # unless one was built from the other (`model = Wrapper(backbone)` holds backbone).
        a, b = self._built_member(a), self._built_member(b)
        if self.constructed_here(a) and self.constructed_here(b):
            # each a new object wherever it is bound; their alias representatives may be names
            # that only receive them (`clf.feature_extractor = target_model`)
            ra, rb, built = ca, cb, True
        else:
            ra, rb = root(ca), root(cb)
            built = self.constructed_here(ra) and self.constructed_here(rb)
        if ra == rb or not built:
            return False
        return not any(self._built_from(x, y) for x, y in {(ra, rb), (rb, ra), (a, b), (b, a)})

    def _deep_copy(self, value: cst.BaseExpression) -> bool:
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in api.WRAPPER_METHODS:
            value = value.func.value  # `.to(device)` of the copy
        return isinstance(value, cst.Call) and self.imports.qualify(dotted(value.func)) in api.DEEP_COPIES

    def _built_member(self, name: str) -> str:
        """`name`, or when it only receives objects (`clf.feature_extractor = target_model`) the one
        name of its alias class that is built here (`target_model = Net().to(device)`), if one is."""
        if self.constructed_here(name):
            return name
        members = self.__dict__.get("_alias_members")
        if members is None:
            members = self.__dict__["_alias_members"] = {}
            for member in self._parent:
                members.setdefault(self._find(member), []).append(member)
        built = [m for m in members.get(self.canonical(name), ()) if m != name and self.constructed_here(m)]
        return built[0] if len(built) == 1 else name

    def _built_from(self, name: str, other: str) -> bool:
        """Is `other` named in the construction of `name` (`name = Wrapper(other.encoder)`)?  A deep
        copy (`copy.deepcopy(other).to(device)`) holds new parameters: built from none."""
        for value in self.assigns.get(name, ()):
            if self._deep_copy(value):
                continue
            words = _Words()
            walk(value, words)
            if root(other) == "self" and "." in other:
                # `self` is in every construction that reads a setting (`.to(self.device)`):
                # only `self.generator` itself (or a part of it) names the other object
                if any(is_under(d, other) for d in words.dotted):
                    return True
            elif root(other) in words.names:
                return True
        return False


_CONSTANTS = frozenset({"None", "True", "False"})


def _constant(value: cst.BaseExpression) -> bool:
    return isinstance(value, (cst.BaseNumber, cst.BaseString)) or (isinstance(value, cst.Name) and value.value in _CONSTANTS)


# Kinds a function of the file can hand back that make its call that object (item: a
# scheduler factory); a module or a value it returns stays unknown, as before.
_MADE_BY_FACTORIES = frozenset({SCHEDULER, OPTIMIZER, SCALER})
# What a container's elements are when they are modules: torch's (or any capitalised class
# that is no optimizer, scheduler or scaler) or a class of the file
_BUILT_MODULES = frozenset({MODULE, CUSTOM})
# torch.nn classes that hold the modules they are given, not parameters of their own.
_MODULE_CONTAINERS = api_names.MODULE_CONTAINERS


class _Returns(cst.CSTVisitor):
    """The values of a function body's `return` statements (not those of defs inside it)."""

    def __init__(self) -> None:
        self.values: list[cst.BaseExpression] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)


class _Members(cst.CSTVisitor):
    """`self.attr = value` of the methods walked, with the arguments of each method."""

    def __init__(self) -> None:
        self.values: dict[str, list] = {}
        self.arguments: frozenset = frozenset()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._member(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._member(node.target, node.value)

    def _member(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        name = dotted(target)
        if name and name.startswith("self.") and name.count(".") == 1:
            self.values.setdefault(name[len("self.") :], []).append((value, self.arguments))


# Calls that make a def part of a training step (a loop may inline it): its locals stay.
_GRADIENT_CALLS = api.ZERO_GRAD_METHODS | api.CLIP_FUNCTIONS | frozenset(api_names.PARAMETER_METHODS)


def _parameter_names(definition: cst.FunctionDef) -> set[str]:
    params = definition.params
    names = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.add(star.name.value)
    return names


def _argument_for(call: cst.Call, function: cst.FunctionDef, parameter: str) -> Optional[cst.BaseExpression]:
    """What `call` of `function` hands `parameter` (by keyword or position); None when it hands
    nothing (the default) or a starred argument may."""
    if any(a.star for a in call.args):
        return None
    argument = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == parameter), None)
    positions = [p.name.value for p in (*function.params.posonly_params, *function.params.params)]
    if argument is None and parameter in positions:
        positional = [a.value for a in call.args if a.keyword is None]
        at = positions.index(parameter)
        argument = positional[at] if at < len(positional) else None
    return argument


def _local_names(definition: cst.FunctionDef) -> tuple[frozenset, dict]:
    """The names `definition` binds in its own scope (parameters, assignment, loop, `with`,
    `except` and walrus targets, imports, nested defs and classes), less those it declares
    global or nonlocal; and those declarations ({"global": names, "nonlocal": names})."""
    names = _parameter_names(definition)
    visitor = _LocalNames()
    walk(definition.body, visitor)  # read-only: libcst's visit rebuilds every node (model/walk.py)
    names |= visitor.bound
    declared = {"global": frozenset(visitor.globals), "nonlocal": frozenset(visitor.nonlocals)}
    return frozenset(names - visitor.globals - visitor.nonlocals), declared


class _LocalNames(cst.CSTVisitor):
    """Names bound in one def's body, not entering nested defs, classes, lambdas or
    comprehensions (scopes of their own)."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()

    def _targets(self, target: Optional[cst.BaseExpression]) -> None:
        if target is not None:
            self.bound.update(n for n in target_names(target) if "." not in n)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.bound.add(node.name.value)
        return False

    def _scope_of_its_own(self, node: cst.CSTNode) -> bool:
        return False

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _scope_of_its_own

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            name = dotted(node.name)
            if name is not None:
                self.bound.add(name.split(".")[0])

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.nonlocals.update(item.name.value for item in node.names)


class _HandedOn(cst.CSTVisitor):
    """The names a def's body reads other than as an attribute's object, a call's callee, an
    assignment's target or a `del`; `blocked` when it loops, nests a def, class or lambda, or
    calls a gradient API (then every local of it counts)."""

    def __init__(self, event_names: frozenset) -> None:
        self.names: set[str] = set()
        self.blocked = False
        self._gradient_calls = event_names | _GRADIENT_CALLS
        self._quiet: set[int] = set()  # ids of Name nodes that read nothing out of the def

    def _block(self, node: cst.CSTNode) -> bool:
        self.blocked = True
        return False

    visit_For = visit_While = visit_FunctionDef = visit_ClassDef = visit_Lambda = _block

    def visit_Global(self, node: cst.Global) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.names.update(item.name.value for item in node.names)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in self._gradient_calls:
            self.blocked = True
        if isinstance(func, cst.Name):
            self._quiet.add(id(func))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._quiet.add(id(node.attr))
        if isinstance(node.value, cst.Name):
            self._quiet.add(id(node.value))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._quiet.add(id(node.keyword))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._targets(node.target)

    def _targets(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._quiet.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value)

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._quiet:
            self.names.add(node.value)


class _Words(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.dotted: set[str] = set()  # `self.generator.encoder` and each prefix of it

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        name = dotted(node)
        if name is not None:
            self.dotted.add(name)


class _ClearCall(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in api.ZERO_GRAD_METHODS:
            self.found = True


def _empty_sequence(value: cst.BaseExpression) -> bool:
    """`[]`, `()`, `list()`: a list about to be filled."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return not value.elements
    return isinstance(value, cst.Call) and not value.args and dotted(value.func) in ("list", "tuple")


def _names_documented_runner(func: cst.BaseExpression) -> bool:
    """`create_supervised_trainer` or `x.create_supervised_trainer` (no chain walked: every call asks)."""
    if isinstance(func, cst.Attribute):
        return func.attr.value in api.DOCUMENTED_RUNNERS
    return isinstance(func, cst.Name) and func.value in api.DOCUMENTED_RUNNERS


def _lightning_schedulers(node: cst.BaseExpression, bindings: "Bindings") -> bool:
    """Is `node` Lightning's `self.lr_schedulers()`, or a name bound only to it (the list of
    the schedulers configure_optimizers built, when there are several)?"""
    if isinstance(node, cst.Name):
        values = bindings.assigns.get(node.value, ())
        return bool(values) and all(_lightning_schedulers_call(v) for v in values)
    return _lightning_schedulers_call(node)


def _lightning_schedulers_call(node: cst.BaseExpression) -> bool:
    if not isinstance(node, cst.Call) or node.args:
        return False
    callee = dotted(node.func) or ""
    return callee.startswith("self.") and callee.count(".") == 1 and last(callee) in api.LIGHTNING_SCHEDULER_ACCESSORS


def _wraps_a_call(value: cst.Call) -> bool:
    """`X(...).to(device)`: a method that hands back the same object, on a call's result."""
    func = value.func
    return isinstance(func, cst.Attribute) and func.attr.value in api.WRAPPER_METHODS and isinstance(func.value, cst.Call)


def _returns_false(node: cst.FunctionDef) -> bool:
    """A body that is one `return False`."""
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    statements = [s for s in body if not (isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Expr))]
    return (
        len(statements) == 1
        and isinstance(statements[0], cst.SimpleStatementLine)
        and isinstance(statements[0].body[0], cst.Return)
        and isinstance(statements[0].body[0].value, cst.Name)
        and statements[0].body[0].value.value == "False"
    )


def _clears(node: Optional[cst.CSTNode]) -> bool:
    """Does this hook (a lambda or a def) call zero_grad()?"""
    if node is None:
        return False
    finder = _ClearCall()
    walk(node, finder)
    return finder.found


def params_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in api_names.PARAMETERS_KEYWORDS:
            return arg.value
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def _counts_accumulation(value: cst.BaseExpression) -> bool:
    names = ExpressionNames()
    walk(value, names)
    return names.has_modulo or any(api.ACCUMULATION_WORDS.search(n) for n in names.names)


def collect(module: cst.Module, event_names: frozenset = frozenset(), starred: Optional[dict] = None) -> Bindings:
    bindings = Bindings(event_names, starred)
    walk(module, bindings)
    return bindings
