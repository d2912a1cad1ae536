"""One gradient event of a loop: what a call does to `.grad`, where, and on what."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from gradlint.core.findings import Span


@dataclass(frozen=True)
class Event:
    kind: str
    span: Span
    text: str  # the call as written, for messages: `opt.zero_grad()`
    # Z: the optimizer it clears (opt.zero_grad) or the module (model.zero_grad); B by hand
    # (`p.grad = g`): the module of `p` when known;
    # S/U: the optimizer; C: the module whose parameters are clipped; L: the scheduler.
    optimizer: Optional[str] = None
    module: Optional[str] = None
    unknown_target: bool = False  # Z or C whose parameters cannot be resolved
    scaled: bool = False  # B through scaler.scale(loss)
    overwrites: bool = False  # B by `p.grad = g`: replaces rather than adds
    unscales: bool = False  # C that unscales AMP gradients itself
    clears: bool = False  # S of an engine that clears its own gradients
    set_to_none_false: bool = False  # Z with set_to_none=False
    # L that sets the schedule's position: stepped with a metric/epoch argument, or by a loop
    # that does nothing but step schedulers (a resume's replay)
    has_args: bool = False
    plateau: bool = False  # L of a ReduceLROnPlateau-style scheduler
    # L of a schedule of its own class, whose step returns the rate (`new_lr = scheduler.step()`;
    # torch's returns None): it may set the rate for the step about to run, so stepping it
    # first is its convention
    own_convention: bool = False
    sync_only: bool = False  # S or Z inside `with accelerator.accumulate(...)`
    accumulation_guarded: bool = False  # runs only under an accumulation condition
    # on the other side of an accumulation step test (`if (i+1) % k == 0: S else: Z`):
    # runs on exactly the iterations that skip the step
    off_boundary: bool = False
    # the accumulation condition it runs under (the innermost; `!key` for its other side): a
    # clear under the same condition as the step, before the backward, starts no window
    boundary: Optional[str] = None
    skips_first: bool = False  # under a condition false on the loop's first iteration (`if epoch > 0:`)
    # under a test of the loop's last iteration (`if i == len(xs) - 1:`): the loop accumulates
    # for it, so a clear belongs after it (rules/repairs.py), not before each backward
    last_iteration: bool = False
    closure: bool = False  # S that runs a closure doing its own backward (LBFGS)
    manual: bool = False  # S by hand: parameters updated from their own gradients
    by_scaler: bool = False  # S through a live GradScaler (`scaler.step(opt)`): it expects scaled gradients
    # S that hands a module's gradients to another model's parameters (`shared_p._grad = p.grad`,
    # asynchronous RL workers): it uses them as a step would (`optimizer` is that module)
    handoff: bool = False
    # Z by `p.grad = None` over the parameters of one module (`for p in self.last_layer.parameters()`):
    # when that module is a strict part of what the step updates, a freeze of that part (GL002)
    per_parameter: bool = False
    via: tuple[str, ...] = field(default=(), compare=False)  # helper calls that lead here
    # Project-wide analysis (gradlint/project): an event of a function of another module that
    # the loop calls sits in that file (`path`, as the run names it).  `anchor`: (span, label) of
    # the call in the checked file's loop that leads to this event, of a function of another
    # module or a helper of this file; a related location of a finding on this event.
    path: Optional[str] = None
    anchor: Optional[Span] = field(default=None, compare=False)

    @property
    def key(self) -> tuple:
        return (self.kind, self.span) if self.path is None else (self.kind, self.span, self.path)

    def describe(self) -> str:
        return self.text
