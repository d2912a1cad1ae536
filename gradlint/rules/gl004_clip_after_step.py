"""GL004: a clip after the step it should have shaped."""

from gradlint.fix import move
from gradlint.rules.base import RawFinding, at
from gradlint.rules.clip_placement import clips_after_step
from gradlint.rules.registry import Rule


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
            move(file.lines, clip, step, after=False, description=f"Move the clip before {step.text}"),
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
        """
from torch.nn.utils import clip_grad_norm_ as clip
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
    clip(model.parameters(), 1.0)  # expect: GL004
""",
        """
import torch.nn as nn
for x, y in loader:
    loss_fn(model(x), y).backward()
    optimizer.step()
    nn.utils.clip_grad_value_(model.parameters(), 0.5)  # expect: GL004
    optimizer.zero_grad()
""",
    ),
)
