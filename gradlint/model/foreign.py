"""Calls of functions of other modules, inlined into a loop model as same-file helpers are.

loops.py asks `Project.helper_for(call, ctx)` for a call it cannot follow in its own file.
The answer is the definition (parsed with libcst here, once per process and function) and
a `Scope`: inside the inlined body, names resolve in the other module (its imports, its
class, its functions), events get that file's path and spans, and `self` is the object the
loop called the method on (`self.trainer` for `self.trainer.train_step(batch)`).
"""

from __future__ import annotations

import ast
import os
import warnings
from typing import Optional

import libcst as cst

from gradlint.core.api_names import OBJECT_CALL
from gradlint.core.findings import Span
from gradlint.core import events as api
from gradlint.model.names import Imports, dotted, last, root
from gradlint.model.positions import AstTable, Numbering, Positions
from gradlint.model.tables import listed_callees
from gradlint.project.index import PORTABLE_SELF, Class, Function, Index, Module

# What the `self` attributes of a class of another module are, from what builds them:
# the loop's own file cannot say (`self.scheduler = OneCycleLR(...)` is in trainer.py).
_OPTIMIZER, _SCHEDULER, _SCALER = "optimizer", "scheduler", "scaler"
_MEMBER_DEPTH = 1  # attributes of attributes: `gan.discriminator.optimizer`, no deeper
_BASE_DEPTH = 3  # a subclass of a subclass of ... the loop's class, this many levels
# The alternative of `alternatives_for` for the objects whose class cannot be told
UNTOLD = "another class"


class _Numbered(Numbering):
    """Numbers a definition's nodes as the bindings pass numbers a file's (positions.py)."""

    def visit_FunctionDef(self, node) -> None:
        self.number(node)

    def visit_For(self, node) -> None:
        self.number(node)

    def visit_While(self, node) -> None:
        self.number(node)

    def visit_Assign(self, node) -> None:
        self.number(node)

    def visit_AugAssign(self, node) -> None:
        self.number(node)

    def visit_AnnAssign(self, node) -> None:
        self.number(node)

    def visit_Call(self, node) -> None:
        self.number(node)


class Parsed:
    """One definition of another module, parsed alone, with the spans of its nodes in its file."""

    def __init__(self, function: Function) -> None:
        from gradlint.model.walk import walk

        module = cst.parse_module(function.text)
        definition = module.body[0]
        if not isinstance(definition, cst.FunctionDef):
            raise ValueError("not a def")
        numbering = _Numbered()
        walk(module, numbering)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = AstTable(ast.parse(function.text))
        self.definition = definition
        self.positions = Positions(module, function.text, numbering, table=table)
        self.line_offset = function.line - 1
        self.col_offset = len(function.indent)
        self.params = function.params

    def span(self, node: cst.CSTNode) -> Span:
        span = self.positions.span(node)
        return Span(
            span.line + self.line_offset, span.col + self.col_offset, span.end_line + self.line_offset, span.end_col + self.col_offset
        )

    def call_source(self, node: cst.CSTNode) -> Optional[str]:
        local = self.positions.span(node)
        return self.positions.call_source(node, local)


# Parsed definitions by (path, digest, qualname), for one check (several loops of a file often
# call the same trainer method); forgotten when the check ends, with the file's own trees.
_PARSED: dict[tuple, Optional[Parsed]] = {}


def forget() -> None:
    _PARSED.clear()


def parsed(key: str, module: Module, function: Function) -> Optional[Parsed]:
    cache_key = (key, module.digest, function.qualname, function.line)
    if cache_key not in _PARSED:
        try:
            _PARSED[cache_key] = Parsed(function)
        except (cst.ParserSyntaxError, SyntaxError, ValueError, RecursionError, MemoryError):
            _PARSED[cache_key] = None
    return _PARSED[cache_key]


class Scope:
    """The other module an inlined definition belongs to, while its body is modelled."""

    def __init__(
        self, key: str, module: Module, cls: Optional[Class], code: Parsed, anchor: tuple, home_class: Optional[str] = None
    ) -> None:
        self.home_class = home_class  # the class of the checked file's code that called out
        # the definition's parameters: what the caller handed it (a parameter named like its
        # argument has no substitution entry, yet it is the caller's object)
        self.params = frozenset(code.params)
        self.key = key
        self.module = module
        self.cls = cls
        self.code = code
        self.path = module.path
        self.anchor = anchor  # (span, label) of the call in the checked file that leads here
        imports = Imports()
        imports.aliases = dict(module.aliases)
        self.imports = imports

    def with_code(self, key: str, module: Module, cls: Optional[Class], code: Parsed) -> "Scope":
        return Scope(key, module, cls, code, self.anchor, self.home_class)


class HintedBindings:
    """The checked file's bindings, told what some names of another module's objects are
    (`trainer.scheduler`: a scheduler, built in Trainer.__init__ as OneCycleLR)."""

    def __init__(self, bindings, hints: dict) -> None:
        self._bindings = bindings
        self._hints = hints

    def __getattr__(self, name: str):
        return getattr(self._bindings, name)

    def _hint(self, name: Optional[str]) -> Optional[str]:
        if not name:
            return None
        return self._hints.get(self._bindings.canonical(name), self._hints.get(name))

    def kind(self, name, depth: int = 0):
        hint = self._hint(name)
        return hint if hint is not None else self._bindings.kind(name, depth)

    def is_optimizer(self, name) -> bool:
        hint = self._hint(name)
        return hint == _OPTIMIZER if hint is not None else self._bindings.is_optimizer(name)

    def is_scaler(self, name) -> bool:
        hint = self._hint(name)
        return hint == _SCALER if hint is not None else self._bindings.is_scaler(name)

    def is_plateau_scheduler(self, name) -> bool:
        return (name in self._hints and self._hints.get(name + "\0plateau") is True) or self._bindings.is_plateau_scheduler(name)


def _built_by_factories(callee: str, bindings) -> Optional[set]:
    """The imported names a factory function of the checked file calls in its `return`s
    (`def make_agent(args): if ...: return SacAeAgent(...) else: assert ...`, RL scripts' way
    of building the agent whose `update()` is the training step), or None: a return of anything
    else, a bare `return`, a `yield` or a decorator makes it unknown (a path that falls off the
    end returns None, which the loop could not call a method of)."""
    definition = bindings.functions.get(callee) if "." not in callee else None
    if definition is None or definition.decorators:
        return None
    built: set = set()
    stack: list = [definition.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue  # its returns are not the factory's
        if isinstance(node, (cst.Yield, cst.Await)):
            return None
        if isinstance(node, cst.Return):
            value = node.value
            name = dotted(value.func) if isinstance(value, cst.Call) else None
            if name is None or not bindings.imports.is_imported(name):
                return None
            built.add(name)
            continue
        stack.extend(node.children)
    return built


def _built_by_factory(callee: str, bindings) -> Optional[str]:
    """The one imported name `_built_by_factories` finds, or None."""
    built = _built_by_factories(callee, bindings)
    return built.pop() if built is not None and len(built) == 1 else None


def _qualified(key: str, cls: Class) -> str:
    """`ddpg.DDPG`: a class's name with its module's, so that two classes of one name in two
    modules (DDPG.py's and OurDDPG.py's `DDPG`) are two alternatives, not one condition."""
    return f"{os.path.splitext(os.path.basename(key))[0]}.{cls.name}"


def _kind_of_callee(qualified: str) -> Optional[tuple[str, bool]]:
    from gradlint.model.bindings import Bindings

    name = last(qualified)
    if Bindings.scheduler_callee(None, qualified):
        return _SCHEDULER, name in api.PLATEAU_SCHEDULERS
    if name in api.GRAD_SCALERS:
        return _SCALER, False
    if Bindings.optimizer_callee(None, qualified):
        return _OPTIMIZER, False
    return None


class Project:
    """The project as one check sees it: the index, and the checked file's place in it."""

    def __init__(self, index: Index, view) -> None:
        self.index = index
        self.key = view.key
        self.words = frozenset(view.words)
        self.digest = view.digest
        self.callbacks = frozenset(view.callbacks)
        self._overrides: dict = {}  # (class, method) -> the overrides of other modules found
        # a module analysed for another checked file (view.py's runs_for): only the overrides of
        # these subclasses ("module key\0class name") are followed; empty: every one
        self.subclasses = frozenset(getattr(view, "subclasses", ()))

    def starred(self) -> dict:
        """The names the checked file's star imports bind (Index.bind_stars): local -> qualified."""
        module = self.index.modules.get(self.key)
        return dict(module.starred) if module is not None else {}

    def calls_project_function(self, called) -> bool:
        """Does a loop that calls these names call a function of another module that touches gradients?
        Any call may, when the file imports a class whose `__call__` does (`loss_scaler(loss, opt)`)."""
        return not self.words.isdisjoint(called) or bool(called and OBJECT_CALL in self.words)

    # -- what loops.py asks ---------------------------------------------------------------

    def helper_for(self, call: cst.Call, ctx):
        """(definition, class name, label, scope, substitution) for a call that runs a
        function of another module, or None."""
        scope = ctx.foreign
        func = call.func
        found = None
        self_name: Optional[str] = None
        if isinstance(func, cst.Name):
            found = self._bare(func.value, ctx, scope)
        elif isinstance(func, cst.Attribute):
            receiver = dotted(func.value)
            if receiver is None:
                return None
            method = func.attr.value
            found = self._module_function(receiver + "." + method, ctx, scope)
            if found is None:
                cls_hit = self._receiver_class(receiver, ctx, scope, call)
                if cls_hit is not None:
                    found = self.index.method(cls_hit[0], cls_hit[1], method)
                    if found is not None:
                        self_name = ctx.name(func.value) or receiver
        if found is None and isinstance(func, (cst.Name, cst.Attribute)) and dotted(func) is not None:
            # `loss_scaler(loss, opt)`, `self.loss_scaler(loss, opt)`: an object of a class of the
            # project whose `__call__` runs (a loss scaler doing the backward, clip and step)
            cls_hit = self._receiver_class(dotted(func), ctx, scope, call)
            if cls_hit is not None:
                found = self.index.method(cls_hit[0], cls_hit[1], OBJECT_CALL)
                if found is not None:
                    self_name = ctx.name(func) or dotted(func)
        if found is None:
            return None
        return self._helper(call, ctx, scope, found, self_name)

    def handed_object(self, call: cst.Call, ctx, home, name: str):
        """`loss_scaler(loss, opt)` inside another module's function, on what the checked file
        handed it (`name`, read in the file's own context `home`): the `__call__` of the class
        of the project that object is an instance of, as helper_for gives a method."""
        hit = self._receiver_class(name, home, None)
        found = self.index.method(hit[0], hit[1], OBJECT_CALL) if hit is not None else None
        return None if found is None else self._helper(call, ctx, ctx.foreign, found, name)

    def _helper(self, call: cst.Call, ctx, scope, found, self_name: Optional[str]):
        """helper_for's answer for `found`, the (module key, Module, Class, Function) it runs."""
        func = call.func
        key, module, cls, function = found
        if not self.index.is_relevant(key, function):
            return None
        code = parsed(key, module, function)
        if code is None:
            return None
        label = f"{dotted(func) or function.name}()"
        if scope is None:
            new_scope = Scope(key, module, cls, code, (ctx.span(call), label), ctx.class_name)
        else:
            new_scope = scope.with_code(key, module, cls, code)
        substitution = {}
        if self_name is not None and self_name != "self":
            substitution["self"] = self_name
        hints = self._hints(cls, key, module, self_name) if cls is not None else {}
        members = self.member_values(cls, key, module, self_name) if cls is not None and self_name else {}
        return code.definition, cls.name if cls is not None else None, label, new_scope, substitution, hints, members

    def alternatives_for(self, call: cst.Call, ctx) -> list:
        """`agent.update(batch)` in a loop of the checked file, where `agent` is bound to
        instances of several classes of the project (`agent = SAC(...)` on one branch and
        `agent = TD3(...)` on another, or `agent = make_agent(cfg)` with a factory returning
        either): the helper of each class's method, as `helper_for` gives one.  A binding
        whose class cannot be told (a class of a library, a name the file never defines,
        `self.agent = RandomAgent()` in a method no import resolves) is one more alternative,
        UNTOLD (helper None): on that path the call stays what it is without a model (an
        opaque call), so the classes that can be told are still followed, each on its own
        path, without assuming the object is one of them.  Empty unless the scope of the
        call (Python's rule for a bare name) binds it to a class of the project that defines
        the method and there are at least two alternatives (a call that is one class's is
        `helper_for`'s)."""
        func = call.func
        if ctx.foreign is not None or not isinstance(func, cst.Attribute):
            return []
        receiver = dotted(func.value)
        if receiver is None or receiver == "self" or self._module_function(receiver + "." + func.attr.value, ctx, None):
            return []
        classes, untold = self._classes_told(ctx.bindings.values_seen_at(receiver, call), ctx.bindings)
        if not classes or (len(classes) < 2 and not untold):
            return []
        out: list = []
        seen = set()
        for key, cls in classes:
            found = self.index.method(key, cls, func.attr.value)
            if found is None or (found[0], found[3].qualname) in seen:
                continue  # a class without the method fails there at run time: no training path
            seen.add((found[0], found[3].qualname))
            helper = self._helper(call, ctx, None, found, ctx.name(func.value) or receiver)
            if helper is not None:
                out.append((_qualified(key, cls), helper))
        if untold and out:
            out.append((UNTOLD, None))
        return out if len(out) > 1 else []

    def overrides(self, class_name: str, method: str, call: cst.Call, ctx) -> list:
        """`self.run_step()` in the checked file's class `class_name`, whose own `run_step` is a
        stub: the helper of each override of it in a subclass of another module of the project
        (`class A2CAgent(DiscreteA2CBase)` in a2c_discrete.py), as [(class name, helper)].  Only
        the modules the index parsed are read (a frozen index parses nothing more)."""
        key = (class_name, method)
        if key not in self._overrides:
            self._overrides[key] = self._overriding(class_name, method)
        out = []
        for found in self._overrides[key]:
            helper = self._helper(call, ctx, None, found, "self")
            if helper is not None:
                out.append((_qualified(found[0], found[2]), helper))
        return out

    def _overriding(self, class_name: str, method: str) -> list:
        out = []
        for key, module in sorted(self.index.modules.items()):
            if key == self.key or module is None:
                continue
            for cls in module.classes.values():
                if self.subclasses and f"{key}\0{cls.name}" not in self.subclasses:
                    continue
                if method in cls.methods and self._derives(key, module, cls, class_name, 0):
                    out.append((key, module, cls, cls.methods[method]))
        return out

    def _derives(self, key: str, module: Module, cls: Class, class_name: str, depth: int) -> bool:
        """Does `cls` derive from the checked file's class `class_name`, through classes of the project?"""
        if depth > _BASE_DEPTH:
            return False
        for base in cls.bases:
            found = self.index.class_named(base, key, module)
            if found is None:
                continue
            if found[0] == self.key and found[1].name == class_name:
                return True
            inner = self.index.module(found[0])
            if inner is not None and self._derives(found[0], inner, found[1], class_name, depth + 1):
                return True
        return False

    def _classes_told(self, values, bindings) -> tuple[list, bool]:
        """([(module, Class)] of the classes of the project the assigned `values` build, whether
        some value builds an object of a class that cannot be told).  `None` is no object
        (a method called on it fails: no training path); each other value is a class of
        the project as `_classes_bound` reads one, or untold."""
        classes: dict = {}
        untold = False
        for value in values:
            if isinstance(value, cst.Name) and value.value == "None":
                continue
            told = self._classes_bound([value], bindings)
            if told is None:
                untold = True
                continue
            for key, cls in told:
                classes[(key, cls.name)] = (key, cls)
        return [classes[pair] for pair in sorted(classes)], untold

    def _classes_bound(self, values, bindings) -> Optional[list]:
        """[(module, Class)] of every class of the project the assigned `values` build: a call
        of an imported class, of an imported factory of the project, or of a factory of the
        checked file (each of their returns building one); None when one is anything else."""
        if not values:
            return None
        pairs: set = set()
        for value in values:
            while (
                isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in api.WRAPPER_METHODS and isinstance(value.func.value, cst.Call)
            ):
                value = value.func.value  # `SAC(cfg).to(device)`: a module's `.to()` returns the module
            if not isinstance(value, cst.Call):
                return None
            picked = self._picked_by_getattr(value.func, bindings)
            if picked is not None:
                pairs.update(picked)
                continue
            callee = dotted(value.func)
            # `AGENTS[name](cfg)`: each class the table lists (tables.py), or None
            listed = [callee] if callee is not None else listed_callees(value.func, bindings)
            if listed is None:
                return None
            callees: set = set()
            for name in listed:
                made = {name} if bindings.imports.is_imported(name) else _built_by_factories(name, bindings)
                if not made:
                    return None
                callees |= made
            for name in callees:
                found = self.index.lookup(bindings.imports.qualify(name), self.key)
                if found is not None and found[0] == "class":
                    pairs.add((found[1], found[3].name))
                elif found is not None and found[0] == "function":
                    made = self.index.factory_classes(found[1], found[2], found[3])
                    if made is None:
                        return None
                    pairs.update((k, c.name) for k, c in made)
                else:
                    return None
        return self.index.classes_of(pairs)

    def _picked_by_getattr(self, func: cst.BaseExpression, bindings) -> Optional[set]:
        """{(module, class name)} of the classes `getattr(losses, args.loss)` may give: `losses` a
        module of the project the file imports and the name a setting (every class that module
        defines: the object is an instance of one of them); None for any other callee."""
        if not (isinstance(func, cst.Call) and dotted(func.func) == "getattr" and not bindings.imports.is_imported("getattr")):
            return None
        args = func.args
        if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
            return None
        owner = dotted(args[0].value)
        if owner is None or not bindings.imports.is_imported(owner):
            return None
        found = self.index.lookup(bindings.imports.qualify(owner), self.key)
        if found is None or found[0] != "module":
            return None
        return {(found[1], name) for name in found[2].classes} or None

    def member_values(self, cls: Class, key: str, module: Module, owner: str, depth: int = 0) -> dict:
        """What the object's attributes are built from, as the checked file would write it
        (`gan.opt_d` = `torch.optim.Adam(gan.discriminator.parameters(), ...)`), and one level
        down for an attribute built from a class of the project (`gan.discriminator.optimizer`):
        the loop's file learns them (Bindings.learn), so which parameters an optimizer of the
        other module steps is known where the rules ask."""
        out: dict = {}
        for attr, texts in cls.portable.items():
            name = f"{owner}.{attr}"
            values = []
            for text in texts:
                try:
                    values.append(cst.parse_expression(text.replace(PORTABLE_SELF, owner)))
                except (cst.ParserSyntaxError, RecursionError, MemoryError):
                    values = []
                    break
            if not values:
                continue
            out[name] = values
            callees = set(cls.members.get(attr, ()))
            if depth < _MEMBER_DEPTH and len(callees) == 1 and len(texts) == 1:
                hit = self.index.class_named(callees.pop(), key, module)
                inner = self.index.module(hit[0]) if hit is not None else None
                if inner is not None:
                    out.update(self.member_values(hit[1], hit[0], inner, name, depth + 1))
        return out

    def learn_instances(self, bindings) -> None:
        """The attributes of the checked file's objects that are instances of a class of
        another module (`self.policy = Policy(...)`, `model = create_model(opt)` with the
        factory returning one class's instance): what that class builds them from, as if the
        class were in this file (`self.policy.optimizer` = `torch.optim.Adam(...)`).  One
        look-up per name the file assigns from an imported call; what does not resolve to one
        class stays unknown."""
        learned: dict = {}
        for name, values in list(bindings.assigns.items()):
            if not values or name.count(".") > 1 or (name.count(".") == 1 and not name.startswith("self.")):
                continue
            hit = self._instance_of(values, bindings)
            if hit is None:
                continue
            module = self.index.module(hit[0])
            if module is not None:
                learned.update(self.member_values(hit[1], hit[0], module, name))
        if learned:
            bindings.learn(learned)

    def _instance_of(self, values, bindings) -> Optional[tuple[str, Class]]:
        """The class of the project every value instantiates: a call of an imported class,
        or of an imported function of the project whose returns all build that class."""
        hits = set()
        for value in values:
            if not isinstance(value, cst.Call):
                return None
            callee = dotted(value.func)
            if callee is not None and not bindings.imports.is_imported(callee):
                callee = _built_by_factory(callee, bindings)  # `agent = make_agent(args)`, a def of this file
            if callee is None:
                return None
            found = self.index.lookup(bindings.imports.qualify(callee), self.key)
            if found is None:
                return None
            if found[0] == "class":
                hits.add((found[1], found[3].name))
            elif found[0] == "function":
                made = self.index.factory_class(found[1], found[2], found[3])
                if made is None:
                    return None
                hits.add((made[0], made[1].name))
            else:
                return None
        if len(hits) != 1:
            return None
        key, name = hits.pop()
        module = self.index.module(key)
        cls = module.classes.get(name) if module is not None else None
        return (key, cls) if cls is not None else None

    def _bare(self, name: str, ctx, scope):
        if scope is None:
            imports = ctx.bindings.imports
            if not imports.is_imported(name):
                return None
            found = self.index.lookup(imports.qualify(name), self.key)
        else:
            module = scope.module
            if name in module.functions:
                return scope.key, module, None, module.functions[name]
            if name not in module.aliases:
                return None
            found = self.index.lookup(module.aliases[name], scope.key)
        if found is not None and found[0] == "function":
            return found[1], found[2], None, found[3]
        return None

    def _module_function(self, dotted_name: str, ctx, scope):
        """`utils.clip(model)` with `import utils` (or `from . import utils`)."""
        imports = ctx.bindings.imports if scope is None else scope.imports
        if root(dotted_name) not in imports.aliases:
            return None
        found = self.index.lookup(imports.qualify(dotted_name), self.key if scope is None else scope.key)
        if found is None:
            return None
        if found[0] == "function":
            return found[1], found[2], None, found[3]
        return None

    def _receiver_class(self, receiver: str, ctx, scope, call: Optional[cst.Call] = None) -> Optional[tuple[str, Class]]:
        """The class of the project an object is an instance of: `trainer` of `trainer =
        Trainer(...)`, `self.trainer` of `self.trainer = Trainer(...)` (Trainer imported from
        another module), `self` inside a method of another module."""
        if scope is not None:
            if receiver == "self" and scope.cls is not None:
                return scope.key, scope.cls
            if receiver.startswith("self.") and receiver.count(".") == 1 and scope.cls is not None:
                callees = scope.cls.members.get(receiver[len("self.") :], ())
                hits = [self.index.class_named(c, scope.key, scope.module) for c in callees]
                classes = {(hit[0], hit[1].name): hit for hit in hits if hit is not None}
                if len(classes) == 1 and None not in hits:
                    return next(iter(classes.values()))
                if not callees:  # `self.pair = pair`: what the class's construction sites hand it
                    return self.index.delivered_class(scope.key, scope.cls.name, receiver[len("self.") :])
            return None
        bindings = ctx.bindings
        if receiver == "self":
            return self._base_class(ctx.class_name, bindings)
        values = bindings.values_seen_at(receiver, call)  # `agent` of the def the call is in, not the module's
        if receiver.startswith("self.") and receiver.count(".") == 1 and values and all(isinstance(v, cst.Name) for v in values):
            # `self.pair = pair` in this file's class: what the construction sites hand it (the
            # index read them as the file was saved: its assignments must still be only names)
            return self.index.delivered_class(self.key, ctx.class_name, receiver[len("self.") :])
        if not values and "." not in receiver:
            # a parameter only callers of other modules fill (`loss_scaler` of `def
            # train_one_epoch(..., loss_scaler)`): the class they all hand it (handed.py)
            function = bindings.parameter_def(receiver, call)
            return self.index.handed_class(self.key, function, receiver) if function is not None else None
        callees = set()
        for value in values:
            if not isinstance(value, cst.Call):
                return None
            callee = dotted(value.func)
            if callee is None:
                return None
            callees.add(callee)
        if len(callees) != 1:
            return None
        callee = callees.pop()
        if not bindings.imports.is_imported(callee):
            callee = _built_by_factory(callee, bindings)  # `agent = make_agent(args)`, a def of this file
            if callee is None:
                return None
        found = self.index.lookup(bindings.imports.qualify(callee), self.key)
        if found is not None and found[0] == "class":
            return found[1], found[3]
        if found is not None and found[0] == "function":  # `model = create_model(opt)`: the class it returns
            return self.index.factory_class(found[1], found[2], found[3])
        return None

    def _base_class(self, class_name: Optional[str], bindings) -> Optional[tuple[str, Class]]:
        """`self.m()` in a class of this file whose base class is one of another module."""
        info = bindings.classes.get(class_name) if class_name else None
        if info is None:
            return None
        for base in info.bases:  # already qualified by the bindings pass
            found = self.index.lookup(base, self.key) if base else None
            if found is not None and found[0] == "class":
                return found[1], found[3]
        return None

    def _hints(self, cls: Class, key: str, module: Module, self_name: Optional[str]) -> dict:
        """What the class's `self` attributes are, under the names the loop knows them by."""
        owner = self_name or "self"
        out: dict = {}
        for attr, callees in cls.members.items():
            kinds = set()
            for callee in callees:
                head = root(callee)
                qualified = module.aliases[head] + callee[len(head) :] if head in module.aliases else callee
                kinds.add(_kind_of_callee(qualified))
            if len(kinds) == 1 and None not in kinds:
                kind, plateau = kinds.pop()
                out[f"{owner}.{attr}"] = kind
                if plateau:
                    out[f"{owner}.{attr}\0plateau"] = True
        return out

