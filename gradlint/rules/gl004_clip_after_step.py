"""GL004: a clip after the step it should have shaped."""

import math

from gradlint.fix import move
from gradlint.rules.base import RawFinding, at
from gradlint.rules.clip_placement import clips_after_step
from gradlint.rules.registry import Criterion, Invalid, Rule


def check(file):
    for loop, clip, step, previous_iteration in clips_after_step(file):
        message = (
            f"{clip.text} runs after the previous iteration's {at(step)} and before a clear: "
            "it clips gradients no step uses"
            if previous_iteration
            else f"{clip.text} runs after {at(step)}: the update already happened, the clip changes nothing"
        )
        yield RawFinding(
            "GL004",
            message,
            clip,
            ((step, "the step that already used the unclipped gradients"),),
            loop,
            move(file.context, clip, step, after=False, description=f"Move the clip before {step.text}"),
        )


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A clip on gradients whose last use was a step: it runs after the update.  (Cleared
    gradients after a step are a clip before the next backward: GL005's to judge.)"""
    limit = event.raw.get("limit")
    if isinstance(limit, (int, float)) and math.isinf(limit):
        return  # clip_grad_norm_(params, inf) measures the norm (for a log): it never clips
    # The clipped gradients that some backward wrote; the first one a step has not used since
    # (indexes are in increasing order: its last backward came after its last step) settles it.
    # (Asked per parameter of every clip: the test that fails in a correct loop comes first.)
    touched = []
    for pid in event.params:
        g = replay.grad(pid)
        if g.sources and event.state(pid) is not None:
            if not (g.consumed and g.consumed[-1] > g.sources[-1]):
                return
            touched.append(g.consumed[-1])
    if touched:
        step_index = max(touched)
        step = replay.events[step_index]
        norm, limit, after = event.raw.get("norm"), event.raw.get("limit"), event.raw.get("norm_after")
        if isinstance(norm, (int, float)) and isinstance(limit, (int, float)) and norm > limit and after is not None:
            what = f"norm {norm:.4g} was clipped to {after:.4g} after the update"
        elif isinstance(norm, (int, float)):
            what = f"norm {norm:.4g} was measured after the update"
        else:
            what = "after the update"
        replay.detect(
            "GL004", event,
            f"clip {replay.call(event)} ran after {replay.call(step)} (step {replay.step_number(step_index)} "
            f"of {replay.run.optimizer(step.raw.get('oid'))}): {what}",
            also=[step],
        )


RULE = Rule(
    code="GL004",
    name="clip-after-step",
    summary="Gradient clipping runs after optimizer.step(), so it never affects an update.",
    rationale=(
        "Clipping rescales .grad in place; the optimizer reads .grad in step(). A clip after step() changes "
        "gradients that are about to be cleared: the updates were never clipped."
    ),
    wrong=(
        "for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    ),
    right=(
        "for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n"
    ),
    default=True,
    check=check,
    criterion=Criterion(on="C", detect=runtime, reported_on="C", followed_by="B", order=1),
    fix="Safe: moves the clip right before the step (into the step's block when an accumulation `if` guards it).",
    valid=(
        """
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
""",
        """
for real in loader:
    opt_d.zero_grad()
    d_loss(D, G, real).backward()
    opt_g.zero_grad()
    g_loss(D, G).backward()
    opt_d.step()
    torch.nn.utils.clip_grad_norm_(G.parameters(), 5.0)
    opt_g.step()
""",
    ),
    invalid=(
        Invalid(
            """
from torch.nn.utils import clip_grad_norm_ as clip
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
    clip(model.parameters(), 1.0)  # expect: GL004
""",
            fixed="""
from torch.nn.utils import clip_grad_norm_ as clip
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    clip(model.parameters(), 1.0)  # expect: GL004
    opt.step()
""",
        ),
        Invalid(
            """
import torch.nn as nn
for x, y in loader:
    loss_fn(model(x), y).backward()
    optimizer.step()
    nn.utils.clip_grad_value_(model.parameters(), 0.5)  # expect: GL004
    optimizer.zero_grad()
""",
            fixed="""
import torch.nn as nn
for x, y in loader:
    loss_fn(model(x), y).backward()
    nn.utils.clip_grad_value_(model.parameters(), 0.5)  # expect: GL004
    optimizer.step()
    optimizer.zero_grad()
""",
        ),
    ),
)
