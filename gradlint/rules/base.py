"""What a rule yields, and small helpers that several rules share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gradlint.findings import Fix
from gradlint.model.event import Event
from gradlint.model.events import S, Z
from gradlint.model.flow import conditional
from gradlint.model.loops import LoopModel
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


def at(event: Event) -> str:
    """`loss.backward() (line 14)` for messages; `(trainer.py line 14)` in another file."""
    if event.path is not None:
        return f"{event.text} ({event.path} line {event.span.line})"
    return f"{event.text} (line {event.span.line})"


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
    if not steps or any(some.get(e.key) or e.accumulation_guarded for e in steps):
        return []
    clears = [e for e in loop.events if e.kind == Z and may_clear(file, e, optimizer)]
    return clears if clears and all(some.get(e.key) for e in clears) else []

