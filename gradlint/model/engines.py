"""Engines that run a function once per batch, and the handlers they run around it.

ignite's `trainer = Engine(update)` calls `update(engine, batch)` once per batch; a handler
registered on it (`@trainer.on(Events.EPOCH_STARTED)`, `trainer.add_event_handler(
Events.ITERATION_COMPLETED, fn, *args)`) runs where the engine fires that event: per epoch
before or after its batches, per batch before or after `update`.  What a handler does to
gradients (a scheduler step at the start of each epoch) is only wrong or right relative to
the process function's events, so both go into one model: an epoch loop around a batch loop
(loops.py builds it from the EngineRun found here).  Which event a handler runs on comes from
how it is registered, never from its name.

The engine's process function is found from what the receiver is bound to in the scope of
the registration: `Engine(update)`, a function of the file that returns one (its own nested
`update`, with the caller's arguments for the factory's parameters), or a framework factory
whose process function the framework documents (events.py's DOCUMENTED_RUNNERS).  Anything
else is not modelled (precision first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from gradlint.core import events as api
from gradlint.model.names import dotted, keyword_argument


@dataclass
class Handler:
    definition: cst.FunctionDef
    class_name: Optional[str]
    phase: str  # events.py's EPOCH_START ... EPOCH_END
    # None: the handler runs on every firing; else under an event filter (`every=`, `once=`),
    # True when the filter skips the first firing
    filtered: Optional[bool]
    arguments: tuple  # the extra arguments of add_event_handler, after the engine


@dataclass
class EngineRun:
    built: cst.Call  # `Engine(update)`, `factory(...)` or the framework's factory call
    process: Optional[cst.FunctionDef] = None
    process_class: Optional[str] = None
    factory: Optional[cst.FunctionDef] = None  # the file's factory whose parameters `built` binds
    optimizer: Optional[cst.BaseExpression] = None  # a documented process function's optimizer
    handlers: list[Handler] = field(default_factory=list)


def engine_runs(bindings) -> tuple[list[EngineRun], set[int]]:
    """The engines of the file with handlers on known events, and the ids of the defs they
    account for (not to be modelled again as loops of their own)."""
    runs: dict[tuple, EngineRun] = {}
    placed: set[int] = set()
    for scope, class_name, receiver, event, target, arguments in bindings.registrations:
        phase, filtered = _event(event, bindings)
        if phase is None or receiver is None:
            continue
        definition = target if isinstance(target, cst.FunctionDef) else _handler_def(target, scope, bindings)
        if definition is None:
            continue
        built = _built(receiver, scope, bindings)
        if built is None:
            continue
        placed.add(id(definition))
        if phase == api.ONCE:
            continue  # runs before or after the whole run: in no loop
        key = id(built)
        if key not in runs:
            run = _run_of(built, scope, class_name, bindings)
            if run is None:
                placed.discard(id(definition))
                continue
            runs[key] = run
        runs[key].handlers.append(Handler(definition, class_name, phase, filtered, arguments))
    for run in runs.values():
        if run.process is not None:
            placed.add(id(run.process))
    return list(runs.values()), placed


def _event(event: cst.BaseExpression, bindings) -> tuple[Optional[str], Optional[bool]]:
    """(phase, filtered) of `Events.X` or `Events.X(every=k)`; (None, None) when unknown."""
    filtered = None
    if isinstance(event, cst.Call):
        filtered = _skips_first(event)
        event = event.func
    phase = api.engine_event(bindings.imports.qualify(dotted(event)))
    return phase, (filtered if phase is not None else None)


def _skips_first(call: cst.Call) -> Optional[bool]:
    """An event filter: `every=1` / `once=1` fires on the first time too (no filter at all for
    `every=1`); any other filter (a larger or unknown number, `event_filter=`) does not."""
    if len(call.args) == 1 and call.args[0].keyword is not None and call.args[0].keyword.value in ("every", "once"):
        value = call.args[0].value
        if isinstance(value, cst.Integer) and value.value == "1":
            return None if call.args[0].keyword.value == "every" else False
    return True


def _handler_def(target: cst.BaseExpression, scope, bindings) -> Optional[cst.FunctionDef]:
    name = dotted(target)
    if name is None or "." in name:
        return None
    return _local_def(scope, name) or _unique_def(name, bindings)


def _local_def(scope: Optional[cst.FunctionDef], name: str) -> Optional[cst.FunctionDef]:
    """The def named `name` right inside `scope` (not inside a def nested in it)."""
    if scope is None:
        return None
    stack = list(scope.body.body) if isinstance(scope.body, cst.IndentedBlock) else []
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, cst.FunctionDef):
            if stmt.name.value == name:
                return stmt
            continue
        for block in _blocks(stmt):
            stack.extend(block)
    return None


def _blocks(stmt: cst.CSTNode):
    for attr in ("body", "orelse", "finalbody"):
        part = getattr(stmt, attr, None)
        if isinstance(part, (cst.Else, cst.Finally)):
            part = part.body
        if isinstance(part, cst.IndentedBlock):
            yield part.body
        elif isinstance(part, cst.If):
            yield [part]
    for handler in getattr(stmt, "handlers", ()) or ():
        if isinstance(handler.body, cst.IndentedBlock):
            yield handler.body.body


def _unique_def(name: str, bindings) -> Optional[cst.FunctionDef]:
    if name in bindings.functions:
        return bindings.functions[name]
    defs = bindings.all_functions.get(name, [])
    return defs[0] if len(defs) == 1 else None


def _built(receiver: str, scope, bindings) -> Optional[cst.Call]:
    """The one call `receiver` is bound to in the registration's scope (else at module level)."""
    values = [v for v in bindings.assigns.get(receiver, ()) if isinstance(v, cst.Call)]
    for where in (scope, None) if scope is not None else (None,):
        here = [v for v in values if bindings.value_scope.get(id(v), "?") is where]
        if here:
            return here[0] if len(here) == 1 else None
    return None


def _run_of(built: cst.Call, scope, class_name, bindings) -> Optional[EngineRun]:
    qualified = bindings.imports.qualify(dotted(built.func))
    if api.iteration_runner(qualified) and built.args:
        process = _process(built.args[0].value, scope, class_name, bindings)
        return EngineRun(built, process[0], process[1]) if process is not None else None
    documented = api.documented_runner(qualified)
    if documented is not None:
        position, keyword = documented
        optimizer = keyword_argument(built, keyword)
        positional = [a for a in built.args if a.keyword is None and not a.star]
        if optimizer is None and len(positional) > position:
            optimizer = positional[position].value
        return EngineRun(built, optimizer=optimizer) if optimizer is not None else None
    factory = bindings.helper_function(dotted(built.func) or "") if isinstance(built.func, cst.Name) else None
    if factory is None:
        return None
    for value in bindings.returned_values(built.func.value):
        if isinstance(value, cst.Name):
            inner = [
                v for v in bindings.assigns.get(value.value, ())
                if isinstance(v, cst.Call) and bindings.value_scope.get(id(v), "?") is factory[0]
            ]
            value = inner[0] if len(inner) == 1 else value
        if isinstance(value, cst.Call) and api.iteration_runner(bindings.imports.qualify(dotted(value.func))) and value.args:
            process = _process(value.args[0].value, factory[0], None, bindings)
            if process is not None:
                return EngineRun(built, process[0], process[1], factory=factory[0])
    return None


def _process(function: cst.BaseExpression, scope, class_name, bindings):
    """(def, class name) of the process function handed to the engine."""
    name = dotted(function)
    if name is None:
        return None
    if name.startswith("self.") and name.count(".") == 1:
        found = bindings.find_method(class_name, name[len("self."):])
        return found if found is not None else None
    if "." in name:
        return None
    definition = _local_def(scope, name) or _unique_def(name, bindings)
    return (definition, None) if definition is not None else None
