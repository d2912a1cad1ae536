"""Which parameters a clear touches, compared with what an optimizer steps.

Three-valued where it matters: True (surely), False (surely not), None
(cannot tell).  Rules decide what None means for them, always in favour
of the user's code.
"""

from __future__ import annotations

from typing import Iterable, Optional

from gradlint.model.bindings import is_part
from gradlint.model.event import Event
from gradlint.core.events import S
from gradlint.model.loops import FileModel, LoopModel
from gradlint.model.names import is_under


def stepped_optimizers(loop: LoopModel) -> list[str]:
    """Optimizers stepped in the loop, in order of first step (engines excluded: they clear)."""
    seen: dict[str, None] = {}
    for event in loop.events:
        if event.kind == S and event.optimizer and not event.clears:
            seen.setdefault(event.optimizer, None)
    return list(seen)


def _element(optimizer: Optional[str]) -> bool:
    """`opts[i]`, an optimizer of a container: its parameters are known only as the container's
    modules all together (bindings._element_params), so an overlap is a maybe, never a surely."""
    return optimizer is not None and optimizer.endswith("]")


def clears_module(file: FileModel, z: Event, optimizer: str, target: str) -> Optional[bool]:
    """Does `z` clear the parameters of module `target`, one of those `optimizer` steps?"""
    b = file.bindings
    if z.unknown_target:
        return None
    if z.optimizer is not None:
        if b.same(z.optimizer, optimizer):
            return True
        theirs = b.optimizer_params(z.optimizer)
        if theirs is None:
            return None
        verdicts = [_module_clears(b, m, target) for m in theirs]
        if True in verdicts:
            return None if _element(z.optimizer) or _element(optimizer) else True
        return False if all(v is False for v in verdicts) else None
    module = b.canonical(z.module or "")
    return _module_clears(b, module, target) if module else None


def _module_clears(b, module: str, target: str) -> Optional[bool]:
    """Does clearing `module` reset `target`?  Either may be a Part (some parameters of that
    module, which ones unknown): then only another model altogether is a sure no, and only
    a whole module around a target is a sure yes."""
    if is_under(target, module):
        return None if is_part(module) else True
    if b.definitely_distinct(module, target):
        return False  # another model altogether
    if is_under(module, target):
        # a submodule only (model.head of model); of a Part, maybe all of what it holds
        return None if is_part(target) or is_part(module) else False
    return None


def coverage(file: FileModel, clears: Iterable[Event], optimizer: str) -> Optional[bool]:
    """Do these clears together reset every parameter that `optimizer` steps?

    False only when some stepped module is surely missed by every clear.
    """
    b = file.bindings
    clears = list(clears)
    if any(z.optimizer is not None and b.same(z.optimizer, optimizer) for z in clears):
        return True
    stepped = b.optimizer_params(optimizer)
    if stepped is None:
        return None
    answer: Optional[bool] = True
    for target in stepped:
        verdicts = [clears_module(file, z, optimizer, target) for z in clears]
        if any(v is True for v in verdicts):
            continue
        if all(v is False for v in verdicts):
            return False
        answer = None
    return answer


def touches(file: FileModel, z: Event, optimizer: Optional[str], only_optimizer: bool) -> bool:
    """Does clear `z` surely reset at least some parameters that `optimizer` steps?"""
    b = file.bindings
    if z.unknown_target or optimizer is None:
        return False
    if z.optimizer is not None:
        if b.same(z.optimizer, optimizer):
            return True
        if _element(z.optimizer) or _element(optimizer):
            return False  # (not surely)
        mine, theirs = b.optimizer_params(z.optimizer), b.optimizer_params(optimizer)
        if any(map(is_part, mine or ())) or any(map(is_part, theirs or ())):
            return False  # (not surely: two parts of one model may not meet)
        return bool(mine and theirs and any(is_under(t, m) or is_under(m, t) for m in mine for t in theirs))
    module = b.canonical(z.module or "")
    stepped = b.optimizer_params(optimizer)
    if stepped is None:
        return only_optimizer  # one optimizer, one model: the clear is surely of its parameters
    return any(is_under(t, module) or (is_under(module, t) and not is_part(t)) for t in stepped)


def steps_module(file: FileModel, optimizer: Optional[str], module: Optional[str]) -> Optional[bool]:
    """Does `optimizer` step (some of) `module`'s parameters?  None when either is unknown."""
    held = file.bindings.optimizer_params(optimizer) if optimizer else None
    if not held or not module:
        return None
    module = file.bindings.canonical(module)
    overlaps = any(is_under(module, m) or is_under(m, module) for m in held)
    # some parameters of `model` may or may not include those of `model.head`
    maybe = _element(optimizer) or any(is_part(m) and is_under(module, m) and module != m for m in held)
    return None if overlaps and maybe else overlaps
