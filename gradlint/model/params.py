"""Which parameters a clear touches, compared with what an optimizer steps.

Three-valued where it matters: True (surely), False (surely not), None
(cannot tell).  Rules decide what None means for them, always in favour
of the user's code.
"""

from __future__ import annotations

from typing import Optional

from gradlint.model.events import Event, S
from gradlint.model.loops import FileModel, LoopModel
from gradlint.model.names import is_under


def stepped_optimizers(loop: LoopModel) -> list[str]:
    """Optimizers stepped in the loop, in order of first step (engines excluded: they clear)."""
    seen: dict[str, None] = {}
    for event in loop.events:
        if event.kind == S and event.optimizer and not event.clears:
            seen.setdefault(event.optimizer, None)
    return list(seen)


def clears_all(file: FileModel, z: Event, optimizer: str) -> Optional[bool]:
    """Does clear `z` reset every parameter that `optimizer` steps?"""
    b = file.bindings
    if z.unknown_target:
        return None
    if z.optimizer is not None:
        if b.same(z.optimizer, optimizer):
            return True
        mine, theirs = b.optimizer_params(z.optimizer), b.optimizer_params(optimizer)
        if mine is None or theirs is None:
            return None
        return all(any(is_under(t, m) for m in mine) for t in theirs)
    module = b.canonical(z.module or "")
    stepped = b.optimizer_params(optimizer)
    if stepped is None or not module:
        return None
    if all(is_under(t, module) for t in stepped):
        return True
    if any(is_under(module, t) and module != t for t in stepped):
        return False  # model.head.zero_grad() while the optimizer holds all of model
    if all(b.definitely_distinct(module, t) for t in stepped if not is_under(t, module)):
        return False
    return None


def touches(file: FileModel, z: Event, optimizer: Optional[str], only_optimizer: bool) -> bool:
    """Does clear `z` surely reset at least some parameters that `optimizer` steps?"""
    b = file.bindings
    if z.unknown_target or optimizer is None:
        return False
    if z.optimizer is not None:
        if b.same(z.optimizer, optimizer):
            return True
        mine, theirs = b.optimizer_params(z.optimizer), b.optimizer_params(optimizer)
        return bool(mine and theirs and any(is_under(t, m) or is_under(m, t) for m in mine for t in theirs))
    module = b.canonical(z.module or "")
    stepped = b.optimizer_params(optimizer)
    if stepped is None:
        return only_optimizer  # one optimizer, one model: the clear is surely of its parameters
    return any(is_under(t, module) or is_under(module, t) for t in stepped)
