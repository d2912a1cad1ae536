"""Where a clip sits relative to the backward and step around it (GL004, GL005).

Shared by the two rules so they agree: a clip is *after the step* when,
scanning back within its own iteration, a step comes before any backward;
otherwise GL005 asks whether a backward comes before the next step.
"""

from __future__ import annotations

from typing import Iterator, Optional

from gradlint.model.event import Event
from gradlint.model.events import B, C, S
from gradlint.model.flow import Walk, walks


def clips_with_walks(file) -> Iterator[tuple[object, Walk, int]]:
    """(loop, walk, index) of every clip in the first iteration of each walk."""
    for loop in file.loops:
        if not any(e.kind == C for e in loop.events):
            continue
        for walk in walks(loop):
            for i in walk.first_iteration():
                if walk.events[i].kind == C:
                    yield loop, walk, i


def step_before(walk: Walk, index: int, across_back_edge: bool = False) -> Optional[Event]:
    """The step that precedes this clip in its iteration (or, `across_back_edge`, in the
    iteration before) with no backward in between."""
    it = walk.iteration[index]
    for j in range(index - 1, -1, -1):
        if walk.iteration[j] != it and not across_back_edge:
            return None
        kind = walk.events[j].kind
        if kind == B:
            return None
        if kind == S:
            return walk.events[j]
    return None


def next_of(walk: Walk, index: int, kinds: str) -> Optional[Event]:
    for j in range(index + 1, len(walk.events)):
        if walk.events[j].kind in kinds:
            return walk.events[j]
    return None
