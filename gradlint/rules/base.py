"""What a rule yields, and small helpers that several rules share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gradlint.core.display import shown
from gradlint.core.findings import Fix
from gradlint.model.event import Event
from gradlint.core.events import S, Z
from gradlint.model.flow import conditional, plain_guards
from gradlint.model.loops import Branch, Helper, LoopModel, Nested
from gradlint.model.names import is_under
from gradlint.model.params import coverage


@dataclass(frozen=True)
class RawFinding:
    """A finding before it knows its file: the event that is wrong, and why."""

    code: str
    message: str
    event: Event
    related: tuple[tuple[Event, str], ...] = ()
    loop: Optional[LoopModel] = None  # the loop it was found in (None: file-level)
    fix: Optional[Fix] = None
    # Names a fix needs that the events alone do not give (GL006: the optimizer to unscale).
    optimizer: Optional[str] = None


# Where an event is, in a message.  A rule does not know which file its finding will stand in
# (the misplaced call's, which may be another module than the checked file's), so `place`
# marks the event's file and line with characters of Unicode's private use area, and the
# engine words the mark for the finding's own file (`worded`): `line 14` there, `trainer.py
# line 14` in any other.
_OPEN, _SEP, _CLOSE = "\ue000", "\ue001", "\ue002"


def place(event: Event) -> str:
    """The marked place of `event` (its file: None for the checked file's own events)."""
    path = event.path or ""
    if _OPEN in path or _SEP in path or _CLOSE in path:  # a name no mark can hold: in words now
        return f"{shown(path)} line {event.span.line}"
    return f"{_OPEN}{path}{_SEP}{event.span.line}{_CLOSE}"


def at(event: Event) -> str:
    """`loss.backward() (line 14)` for messages; `(trainer.py line 14)` in another file."""
    return f"{event.text} ({place(event)})"


def worded(message: str, checked: str, home: str) -> str:
    """`message` with each marked place in words, for a finding that stands in `home` and was
    found by the check of `checked` (the file of every unmarked-path event).  One pass over
    the text: every mark ends at the first closing character after its start."""
    if _OPEN not in message:
        return message
    out, i = [], 0
    while True:
        start = message.find(_OPEN, i)
        end = message.find(_CLOSE, start) if start >= 0 else -1
        if start < 0 or end < 0:
            out.append(message[i:])
            return "".join(out)
        path, _, line = message[start + 1 : end].partition(_SEP)
        path = path or checked
        out.append(message[i:start])
        out.append(f"line {line}" if path == home else f"{shown(path)} line {line}")
        i = end + 1


def at_later(event: Event, reference: Event, other_iteration: bool) -> str:
    """`at(event)` for an event that runs after `reference`, saying so when it
    belongs to a later iteration: its line may be above the reference's (the
    next iteration's backward sits above the clip that runs before it).
    `other_iteration` comes from the walk; in the same function, a line above
    means another iteration of an inner loop too."""
    above = event.via == reference.via and event.span.line < reference.span.line
    return f"the next iteration's {at(event)}" if other_iteration or above else at(event)


def at_earlier(event: Event, reference: Event, other_iteration: bool) -> str:
    """`at(event)` for an event that ran before `reference`, in an earlier iteration if so."""
    below = event.via == reference.via and event.span.line > reference.span.line
    return f"the previous iteration's {at(event)}" if other_iteration or below else at(event)


def later_in_iteration(walk, index: int, kind: str) -> Optional[Event]:
    """The first event of `kind` after `index` in the same iteration of the walk."""
    it = walk.iteration[index]
    for j in range(index + 1, len(walk.events)):
        if walk.iteration[j] != it:
            return None
        if walk.events[j].kind == kind:
            return walk.events[j]
    return None


def may_clear(file, clear: Event, optimizer: str) -> bool:
    """Can `clear` reset (some of) the parameters `optimizer` steps?  Unknown counts as yes."""
    return coverage(file, [clear], optimizer) is not False


def sometimes_cleared(file, loop: LoopModel, optimizer: str) -> list[Event]:
    """The clears of `optimizer`, when every one of them runs only on some iterations (`if i >
    10: opt.zero_grad()`) while its steps run on every one; else [].  The iterations that
    skip the clear pile up gradients: GL001's bug, not a clear of the wrong target (GL003)."""
    some = conditional(loop)
    steps = [e for e in loop.events if e.kind == S and e.optimizer == optimizer]
    if not steps:
        return []
    clears = [e for e in loop.events if e.kind == Z and may_clear(file, e, optimizer)]
    if not clears:
        return []
    if not any(some.get(e.key) or e.accumulation_guarded for e in steps):
        return clears if all(some.get(e.key) for e in clears) else []
    # Steps on a window's boundary (`if (i + 1) % k == 0: opt.step()`): the clears are of
    # only some of those iterations when each sits under a plain test the steps are not
    # under (`if i > 0: opt.zero_grad()` beside that step skips the clear at batch 0).
    guards = plain_guards(loop)
    if any(guards.get(e.key) for e in steps):
        return []
    return clears if all(guards.get(e.key) for e in clears) else []



def configuration_cleared(file, loop: LoopModel, optimizer: str) -> list[Event]:
    """The clears of `optimizer`, when every one of them runs only under conditions the loop
    never changes (`if args.amp: opt.zero_grad(); ...` with an `else:` that only
    backpropagates and steps), none of which calls anything or tests the optimizer itself (`if opt is not None:
    opt.zero_grad()` beside `opt.step()` cannot run with no optimizer); else [].  With the
    other setting the loop never clears: GL001's bug on those runs."""
    some = conditional(loop)
    clears = [e for e in loop.events if e.kind == Z and may_clear(file, e, optimizer)]
    if not clears or any(some.get(e.key) is not False for e in clears):
        return []
    keys = {e.key for e in clears}
    canonical = file.bindings.canonical(optimizer)
    for branch in _branches_around(loop.body, keys):
        if branch.calls:
            return []  # `if torch.is_grad_enabled():` is no setting a user picks, just unknown
        if any(is_under(name, optimizer) or is_under(file.bindings.canonical(name), canonical) for name in branch.reads):
            return []
    return clears


def class_of_the_clears(loop: LoopModel, clears: list) -> Optional[str]:
    """The receiver whose class decides whether these clears run (`agent.update()` on an object
    of one of several classes, modelled as `type(agent) is SAC`), or None: then the clears
    run under a setting the user picks."""
    keys = {e.key for e in clears}
    for branch in _branches_around(loop.body, keys):
        if branch.key.startswith("type(") and ") is " in branch.key:
            return branch.key[len("type("): branch.key.index(") is ")]
    return None


def _branches_around(nodes, keys: set) -> list[Branch]:
    """The branches that hold one of these events, at any depth."""
    found: list[Branch] = []

    def holds(nodes) -> bool:
        any_held = False
        for node in nodes:
            if isinstance(node, Event):
                any_held = any_held or node.key in keys
            elif isinstance(node, Branch):
                if holds(node.then) | holds(node.orelse):
                    found.append(node)
                    any_held = True
            elif isinstance(node, (Nested, Helper)):
                any_held = holds(node.body) or any_held
        return any_held

    holds(nodes)
    return found


def clears_local(file, loop: LoopModel, clear: Event, module: str) -> bool:
    """May `clear` reset a module whose gradients the loop hands to another model's parameters
    (`shared_p._grad = p.grad`)?  A clear of that module, or of one around or inside it, or of
    unknown parameters may; so may an optimizer that holds it.  An optimizer whose parameters
    cannot be resolved and that the loop steps after handing the gradients over is the shared
    model's (the worker's optimizer over the shared parameters): it does not."""
    bindings = file.bindings
    if clear.unknown_target:
        return True
    if clear.module is not None:
        return coverage_of_module(file, clear.module, module) is not False
    held = bindings.optimizer_params(clear.optimizer) if clear.optimizer else None
    if held is not None:
        return any(is_under(m, module) or is_under(module, m) for m in held)
    return not any(e.kind == S and e.optimizer == clear.optimizer and not e.handoff for e in loop.events)


def coverage_of_module(file, cleared: str, module: str) -> Optional[bool]:
    """Does clearing module `cleared` reset `module`'s gradients?  None when unknown."""
    bindings = file.bindings
    a, b = bindings.canonical(cleared), bindings.canonical(module)
    if is_under(b, a):
        return True
    if is_under(a, b):
        return None  # a part of it
    return False if bindings.definitely_distinct(a, b) else None
