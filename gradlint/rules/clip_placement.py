"""Where a clip sits relative to the backward and step around it (GL004, GL005, GL006).

Shared by the rules so they agree: a clip is *after the step* when,
scanning back within its own iteration, a step comes before any backward;
otherwise GL005 asks whether a backward comes before the next step.  One
misplaced clip gets one finding: a clip GL004 reports in any walk is not
GL005's too, and GL006 (a clip of scaled gradients) only judges a clip in
its place, after the last backward and before the step.
"""

from __future__ import annotations

from typing import Iterator, Optional

from gradlint.model.event import Event
from gradlint.core.events import B, C, S, Z
from gradlint.model.flow import Walk, walks
from gradlint.model.params import steps_module
from gradlint.rules.base import may_clear


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


def clips_after_step(file) -> Iterator[tuple[object, Event, Event, bool]]:
    """(loop, clip, the step it follows, whether that step is the previous iteration's) of
    every clip that runs after a step it should have shaped: right after it in its
    iteration, or at the top of the next one before a clear."""
    for loop, clip, step in _clips_at_the_top(file):
        yield loop, clip, step, True
    for loop, walk, i in clips_with_walks(file):
        step = step_before(walk, i)
        if step is None:
            continue
        following = next_of(walk, i, B + S)
        clip = walk.events[i]
        if following is not None and following.kind == S and not _clips_for_the_step_before(file, clip, step, following):
            continue  # it clips for a later step (another optimizer's)
        yield loop, clip, step, False


def _clips_at_the_top(file):
    """`clip; zero_grad(); ...; backward(); step()`: the clip runs after the previous
    iteration's step and before a clear, on gradients nobody uses again."""
    for loop in file.loops:
        if not any(e.kind == C for e in loop.events):
            continue
        for walk in walks(loop):
            for i, clip in enumerate(walk.events):
                if clip.kind != C or walk.iteration[i] == 0 or step_before(walk, i) is not None:
                    continue
                step = step_before(walk, i, across_back_edge=True)
                following = next_of(walk, i, B + S + Z)
                if step is not None and following is not None and following.kind == Z:
                    yield loop, clip, step


def _clips_for_the_step_before(file, clip, step, following) -> bool:
    """The clipped parameters surely belong to the step before and not to the one after
    (`actor_opt.step(); clip(actor.parameters()); critic_opt.step()`)."""
    return steps_module(file, step.optimizer, clip.module) is True and steps_module(
        file, following.optimizer, clip.module
    ) is False


def clips_before_backward(file) -> Iterator[tuple[object, Walk, int, Event]]:
    """(loop, walk, index, the backward after it) of every clip that runs before a backward
    whose gradients the next step uses, and that is not after a step (GL004's)."""
    after_step = _keys(clips_after_step(file))
    for loop, walk, i in clips_with_walks(file):
        if walk.events[i].key in after_step or step_before(walk, i) is not None:
            continue
        following = next_of(walk, i, B + S + Z)
        if following is not None and following.kind == B:
            if _sees_what_nothing_clears(file, loop, walk, i, following):
                continue
            yield loop, walk, i, following


def _sees_what_nothing_clears(file, loop, walk: Walk, index: int, following: Event) -> bool:
    """The clip sits after its iteration's backward and the next backward is the next
    iteration's, in a loop that never clears the optimizer stepped after it: the clip sees
    every gradient so far, as the step does.  That is GL001's bug (the missing clear), not a
    clip before the backward (clearing each step makes it right, or GL005's in a window)."""
    at = walk.events.index(following, index)
    if walk.iteration[at] == walk.iteration[index]:
        return False
    step = next_of(walk, at, S)
    if step is None or step.optimizer is None:
        return False
    return not any(e.kind == Z and may_clear(file, e, step.optimizer) for e in loop.events)


def misplaced_clips(file) -> frozenset:
    """Keys of the clips GL004 or GL005 reports."""
    return _keys(clips_after_step(file)) | frozenset(
        walk.events[i].key for loop, walk, i, _ in clips_before_backward(file) if walk.events[i].key not in loop.foreign
    )


def _keys(found) -> frozenset:
    """The clips reported: a clip that belongs to a smaller loop inside (foreign) is that loop's."""
    return frozenset(clip.key for loop, clip, _, _ in found if clip.key not in loop.foreign)

