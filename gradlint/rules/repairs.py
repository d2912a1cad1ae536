"""Repairs that several rules' fixes share, planned from a finding's own events.

A rule's `fixes(raw, file)` (its RULE's `fixes`) reads only what the rule reported (the wrong
event, the related events, the loop's events in order, optional names the rule filled in);
it never analyses the code again.  These helpers build on fix/'s edit primitives (insert,
move, statements_of): a clear inserted for an optimizer, a receiver replaced, a statement
moved up unless it reads a name assigned in between.
"""

from __future__ import annotations

import ast
import re
from typing import Optional

from gradlint.core.findings import UNSAFE, Edit, Fix, Span
from gradlint.fix import _statement, insert, move, statements_of
from gradlint.model.event import Event
from gradlint.core.events import B, S

DOTTED = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
SCALE_CALL = re.compile(r"^(?P<scaler>[A-Za-z_][\w.]*)\.scale\(")
ZERO_GRAD = re.compile(r"^(?P<receiver>[A-Za-z_][\w.]*)\.zero_grad\(")


def names_in(text: str, name: str) -> bool:
    """`name` is written in `text` (so it is in scope where that call is)."""
    return bool(DOTTED.match(name)) and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def order(loop) -> list[Event]:
    return list(loop.events) if loop is not None else []


def positions(loop) -> dict:
    """The index of each event of order(loop), its first when equal events repeat (list.index's
    answer), kept on the loop while its events stay as many: a fix plan per finding that asked
    list.index (an equality test of every field per event) cost the square of the events."""
    if loop is None:
        return {}
    kept = getattr(loop, "_positions", None)
    if kept is not None and kept[0] == len(loop.events):
        return kept[1]
    where: dict = {}
    for k, event in enumerate(loop.events):
        where.setdefault(event, k)
    loop._positions = (len(loop.events), where)
    return where


def insert_clear(file, loop, step: Event, writer: Optional[Event]) -> Optional[Fix]:
    """`<opt>.zero_grad()` before the first backward of the iteration that feeds `step`;
    with accumulation (the step guarded, on the loop's last iteration only, or the backward in
    an inner loop), after the step."""
    call = f"{step.optimizer}.zero_grad()"
    found = statements_of(file.context)
    if found is None:
        return None
    events = order(loop)
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
    accumulating = step.accumulation_guarded or step.last_iteration or (
        first_stmt is not None and step_stmt is not None and deeper_loop(first_stmt.chain, step_stmt.chain)
    )
    # `for o in optimizers: o.step()` after the backward: the receiver is that inner loop's own
    # name, unbound before the backward, so the clear goes after the step, inside that loop
    step_in_inner_loop = (
        first_stmt is not None and step_stmt is not None and deeper_loop(step_stmt.chain, first_stmt.chain)
    )
    if accumulating or step_in_inner_loop or first_stmt is None:
        return insert(file.context, call, step, True, f"Insert {call} after {step.text}", UNSAFE)
    return insert(file.context, call, first, False, f"Insert {call} before {first.text}", UNSAFE)


def deeper_loop(chain: tuple, other: tuple) -> bool:
    """`chain` runs in a loop that `other` is not in."""
    common = 0
    while common < min(len(chain), len(other)) and chain[common] == other[common]:
        common += 1
    return any(kind == "loop" for _, _, kind in chain[common:])


def replace_receiver(file, clear: Event, optimizer: str) -> Optional[Fix]:
    match = ZERO_GRAD.match(clear.text)
    span = clear.span
    if match is None or clear.via or span.line < 1 or span.line > len(file.lines):
        return None
    receiver = match.group("receiver")
    line = file.lines[span.line - 1]
    if line[span.col - 1 : span.col - 1 + len(receiver)] != receiver:
        return None  # the call is written across lines or differently than its text
    edit = Edit(Span(span.line, span.col, span.line, span.col + len(receiver)), optimizer)
    return Fix(f"Clear {optimizer} instead of {receiver}", (edit,), UNSAFE)


def move_up(file, moved: Event, anchor: Event, description: str) -> Optional[Fix]:
    """Move `moved` above `anchor`, unless it reads a name assigned in between."""
    found = statements_of(file.context)
    if found is None:
        return None
    home, there = _statement(found, moved), _statement(found, anchor)
    if home is None or there is None or there.first >= home.first:
        return None
    read = {n.id for n in ast.walk(home.node) if isinstance(n, ast.Name)}
    if found.binds_between(there.first, home.first - 1, read):
        return None
    return move(file.context, moved, anchor, after=False, description=description)


def next_of_kind(events: list[Event], after: Event, kind: str) -> Optional[Event]:
    if after not in events:
        return None
    return next((e for e in events[events.index(after) + 1 :] if e.kind == kind), None)


def previous_of(events: list[Event], before: Event) -> Optional[Event]:
    if before not in events:
        return None
    index = events.index(before)
    return events[index - 1] if index > 0 else None
