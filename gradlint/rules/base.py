"""What a rule yields, and small helpers that several rules share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from gradlint.findings import Fix
from gradlint.model.events import Event
from gradlint.model.loops import LoopModel


@dataclass(frozen=True)
class RawFinding:
    """A finding before it knows its file: the event that is wrong, and why."""

    code: str
    message: str
    event: Event
    related: tuple[tuple[Event, str], ...] = ()
    loop: Optional[LoopModel] = None  # the loop it was found in (None: file-level)
    fix: Optional[Fix] = None


def at(event: Event) -> str:
    """`loss.backward() (line 14)` for messages."""
    return f"{event.text} (line {event.span.line})"


def via(event: Event) -> str:
    return f" via {' -> '.join(event.via)}" if event.via else ""


def scan(events, start: int, stop_kinds: str) -> Iterator[tuple[int, Event]]:
    """Events after index `start`, up to and including the first whose kind is in stop_kinds."""
    for i in range(start + 1, len(events)):
        yield i, events[i]
        if events[i].kind in stop_kinds:
            return
