"""GL004: a clip after the step it should have shaped."""

from gradlint.fix import move
from gradlint.model.events import B, C, S, Z
from gradlint.model.flow import walks
from gradlint.model.params import steps_module
from gradlint.rules.base import RawFinding, at
from gradlint.rules.clip_placement import clips_with_walks, next_of, step_before
from gradlint.rules.registry import Rule


def check(file):
    for loop, clip, step in _clips_at_the_top(file):
        yield RawFinding(
            "GL004",
            f"{clip.text} runs after the previous iteration's {at(step)} and before a clear: "
            "it clips gradients no step uses",
            clip,
            ((step, "the step that already used the unclipped gradients"),),
            loop,
            move(file.lines, clip, step, after=False, description=f"Move the clip before {step.text}"),
        )
    for loop, walk, i in clips_with_walks(file):
        step = step_before(walk, i)
        if step is None:
            continue
        following = next_of(walk, i, B + S)
        clip = walk.events[i]
        if following is not None and following.kind == S and not _clips_for_the_step_before(file, clip, step, following):
            continue  # it clips for a later step (another optimizer's)
        yield RawFinding(
            "GL004",
            f"{clip.text} runs after {at(step)}: the update already happened, the clip changes nothing",
            clip,
            ((step, "the step that already used the unclipped gradients"),),
            loop,
            move(file.lines, clip, step, after=False, description=f"Move the clip before {step.text}"),
        )


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
