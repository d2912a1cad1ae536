"""Which repair each rule's finding gets, from the finding's own events.

A planner reads only what the rule reported (the wrong event, the related
events, the loop's events in order, optional names the rule filled in);
it never analyses the code again.  Where two repairs are possible (GL005,
GL007: move the clip or the backward, the step or the backward), the
first choice is the Fix and the others ride along as its alternatives:
`--fix` tries them in turn and keeps the first after which the file has
strictly fewer findings and none new (fix/session.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Callable, Optional

from gradlint.core.findings import SAFE, UNSAFE, Edit, Fix, Span
from gradlint.fix import _statement, insert, move, statements_of
from gradlint.model.event import Event
from gradlint.core.events import B, C, S, U

_DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_SCALE_CALL = re.compile(r"^(?P<scaler>[A-Za-z_][\w.]*)\.scale\(")
_ZERO_GRAD = re.compile(r"^(?P<receiver>[A-Za-z_][\w.]*)\.zero_grad\(")


def plan(raw, file) -> Optional[Fix]:
    """The fix for one RawFinding (with alternatives), or None when no repair is unambiguous."""
    planner = _PLANNERS.get(raw.code)
    try:
        candidates = [fix for fix in (planner(raw, file) if planner else [raw.fix]) if fix is not None]
    except Exception:  # a repair is optional: code it cannot handle gets none, the finding stays
        return None
    if not candidates:
        return None
    return replace(candidates[0], alternatives=tuple(candidates[1:]))


def _names_in(text: str, name: str) -> bool:
    """`name` is written in `text` (so it is in scope where that call is)."""
    return bool(_DOTTED.match(name)) and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def _order(loop) -> list[Event]:
    return list(loop.events) if loop is not None else []


# --- GL001 / GL003: a missing clear --------------------------------------------


def _gl001(raw, file):
    step = raw.related[0][0] if raw.related else None
    if step is None or not step.optimizer or not _names_in(step.text, step.optimizer):
        return []
    candidates = [_insert_clear(file, raw.loop, step, raw.event)]
    consumer = raw.related[1][0] if len(raw.related) > 1 else None
    if consumer is not None and consumer.kind == S and consumer.key != step.key and raw.event.via == step.via:
        # `Z; B1; S; B2; S`: the clear that is missing is the one between the first step and
        # the backward that adds to what it used
        call = f"{step.optimizer}.zero_grad()"
        candidates.insert(0, insert(file.lines, call, raw.event, False, f"Insert {call} before {raw.event.text}", UNSAFE))
    return candidates


def _insert_clear(file, loop, step: Event, writer: Optional[Event]) -> Optional[Fix]:
    """`<opt>.zero_grad()` before the first backward of the iteration that feeds `step`;
    with accumulation (the step guarded, or the backward in an inner loop), after the step."""
    call = f"{step.optimizer}.zero_grad()"
    found = statements_of(file.lines)
    if found is None:
        return None
    events = _order(loop)
    backwards = [e for e in events if e.kind == B]
    if step in events:  # only backwards since the last other optimizer's step feed this one
        before_step = events[: events.index(step)]
        others = [i for i, e in enumerate(before_step) if e.kind == S and e.optimizer != step.optimizer]
        after_other = before_step[others[-1] + 1 :] if others else before_step
        backwards = [e for e in after_other if e.kind == B] or backwards
    first = backwards[0] if backwards else writer
    if first is not None and first.via != step.via:
        first = None  # a backward inside a helper: the optimizer's name may not be in scope there
    step_stmt, first_stmt = _statement(found, step), _statement(found, first) if first else None
    accumulating = step.accumulation_guarded or (
        first_stmt is not None and step_stmt is not None and _deeper_loop(first_stmt.chain, step_stmt.chain)
    )
    # `for o in optimizers: o.step()` after the backward: the receiver is that inner loop's own
    # name, unbound before the backward, so the clear goes after the step, inside that loop
    step_in_inner_loop = (
        first_stmt is not None and step_stmt is not None and _deeper_loop(step_stmt.chain, first_stmt.chain)
    )
    if accumulating or step_in_inner_loop or first_stmt is None:
        return insert(file.lines, call, step, True, f"Insert {call} after {step.text}", UNSAFE)
    return insert(file.lines, call, first, False, f"Insert {call} before {first.text}", UNSAFE)


def _deeper_loop(chain: tuple, other: tuple) -> bool:
    """`chain` runs in a loop that `other` is not in."""
    common = 0
    while common < min(len(chain), len(other)) and chain[common] == other[common]:
        common += 1
    return any(kind == "loop" for _, _, kind in chain[common:])


def _gl003(raw, file):
    step = next((e for e, _ in raw.related if e.kind == S), raw.event if raw.event.kind == S else None)
    if step is None or not step.optimizer or not _names_in(step.text, step.optimizer):
        return []
    if raw.event.kind == S:  # every clear serves another optimizer: add this one's
        return [_insert_clear(file, raw.loop, step, None)]
    return [_replace_receiver(file, raw.event, step.optimizer)]


def _replace_receiver(file, clear: Event, optimizer: str) -> Optional[Fix]:
    match = _ZERO_GRAD.match(clear.text)
    span = clear.span
    if match is None or clear.via or span.line < 1 or span.line > len(file.lines):
        return None
    receiver = match.group("receiver")
    line = file.lines[span.line - 1]
    if line[span.col - 1 : span.col - 1 + len(receiver)] != receiver:
        return None  # the call is written across lines or differently than its text
    edit = Edit(Span(span.line, span.col, span.line, span.col + len(receiver)), optimizer)
    return Fix(f"Clear {optimizer} instead of {receiver}", (edit,), UNSAFE)


# --- GL005 / GL007: two statements in the wrong order ---------------------------


def _gl005(raw, file):
    clip = raw.event
    backward = raw.related[0][0] if raw.related else None
    if backward is None:
        return [raw.fix]
    events = _order(raw.loop)
    step = _next(events, backward, S)
    # An unscale_ right before the clip belongs with it: the backward goes above both.
    unscale = _previous(events, clip)
    top = unscale if unscale is not None and unscale.kind == U else clip
    up = _move_up(file, backward, top, f"Move {backward.text} before {top.text}")
    down = (
        move(file.lines, clip, step, after=False, description=f"Move the clip before {step.text}")
        if step is not None
        else None
    )
    return [up, down] if top is not clip else [down, up]


def _gl007(raw, file):
    step = raw.event
    backward = raw.related[0][0] if raw.related else None
    if backward is None:
        return [raw.fix]
    # The step goes after the backward and what prepares its gradients (unscale_, clip).
    events = _order(raw.loop)
    last = backward
    if backward in events:
        for event in events[events.index(backward) + 1 :]:
            if event.kind not in (B, U, C) or event.via != step.via:
                break
            last = event
    if last in events and _stepped_next(events[events.index(last) + 1 :], step):
        # that backward already has its step (`if warmup: B; continue` ... `B; S`): moving this
        # one there would step twice; moving the backward up would leave the other step bare
        return []
    down = move(file.lines, step, last, after=True, description=f"Move {step.text} after {last.text}")
    up = _move_up(file, backward, step, f"Move {backward.text} before {step.text}")
    plain = (
        move(file.lines, step, backward, after=True, description=f"Move {step.text} after {backward.text}")
        if last is not backward
        else None
    )
    return [down, up, plain]


def _stepped_next(following: list[Event], step: Event) -> bool:
    """Is the first step or backward of `following` (source order) another step of `step`'s optimizer?"""
    for event in following:
        if event.kind == B:
            return False
        if event.kind == S and event.optimizer == step.optimizer and event.key != step.key:
            return True
    return False


def _move_up(file, moved: Event, anchor: Event, description: str) -> Optional[Fix]:
    """Move `moved` above `anchor`, unless it reads a name assigned in between."""
    found = statements_of(file.lines)
    if found is None:
        return None
    home, there = _statement(found, moved), _statement(found, anchor)
    if home is None or there is None or there.first >= home.first:
        return None
    read = {n.id for n in ast.walk(home.node) if isinstance(n, ast.Name)}
    if found.binds_between(there.first, home.first - 1, read):
        return None
    return move(file.lines, moved, anchor, after=False, description=description)


def _next(events: list[Event], after: Event, kind: str) -> Optional[Event]:
    if after not in events:
        return None
    return next((e for e in events[events.index(after) + 1 :] if e.kind == kind), None)


def _previous(events: list[Event], before: Event) -> Optional[Event]:
    if before not in events:
        return None
    index = events.index(before)
    return events[index - 1] if index > 0 else None


# --- GL006: clip before unscale_ --------------------------------------------------


def _gl006(raw, file):
    clip = raw.event
    backward = raw.related[0][0] if raw.related else None
    events = _order(raw.loop)
    step = _next(events, clip, S)
    optimizer = raw.optimizer or (step.optimizer if step is not None else None)
    late = _next(events, clip, U)
    if late is not None and (step is None or events.index(late) < events.index(step)):
        # unscale_ is there, but after the clip: move it up
        return [move(file.lines, late, clip, after=False, description=f"Move {late.text} before the clip")]
    if any(e.kind == U for e in events):
        return []  # a second unscale_ before one step raises at run time
    match = _SCALE_CALL.match(backward.text) if backward is not None else None
    if match is None or not optimizer or not _DOTTED.match(optimizer):
        return []
    call = f"{match.group('scaler')}.unscale_({optimizer})"
    resolved = step is not None and _names_in(step.text, optimizer)
    return [insert(file.lines, call, clip, False, f"Insert {call} before the clip", SAFE if resolved else UNSAFE)]


def _gl002(raw, file):
    """The rule's move when it found one; with accumulation, the clear goes after the
    guarded step; a module's clear where only the optimizer's is a no-op (inside
    `accelerator.accumulate`) becomes the optimizer's."""
    clear = raw.event
    step = next((e for e, _ in raw.related if e.kind == S), None)
    candidates = [raw.fix]
    if step is None:
        return candidates
    if raw.fix is None:
        candidates.append(move(file.lines, clear, step, after=True, description=f"Move {clear.text} after {step.text}"))
    match = _ZERO_GRAD.match(clear.text)
    if match and step.optimizer and match.group("receiver") != step.optimizer and _names_in(step.text, step.optimizer):
        candidates.append(_replace_receiver(file, clear, step.optimizer))
    return candidates


_PLANNERS: dict[str, Callable] = {
    "GL001": _gl001,
    "GL002": _gl002,
    "GL003": _gl003,
    "GL005": _gl005,
    "GL006": _gl006,
    "GL007": _gl007,
}
