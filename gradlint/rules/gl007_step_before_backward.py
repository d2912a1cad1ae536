"""GL007: a step before the backward of its own iteration."""

from gradlint.fix import move
from gradlint.core.events import B, S, Z
from gradlint.model.flow import walks
from gradlint.model.params import stepped_optimizers, touches
from gradlint.rules.base import RawFinding, at, later_in_iteration
from gradlint.rules.gl002_zero_grad_discards import discarding_clears
from gradlint.rules.registry import Rule


def check(file):
    for loop in file.loops:
        only_one = len(stepped_optimizers(loop)) == 1
        discarding = None
        for walk in walks(loop):
            for i in walk.first_iteration():
                found = step_before_backward(file, walk, i, only_one)
                if found is None:
                    continue
                cleared, later = found
                if cleared >= 0 and discarding is None:
                    discarding = discarding_clears(file, loop)
                if cleared >= 0 and walk.events[cleared].key in discarding:
                    continue  # the clear sits between a backward and this step: GL002's one finding
                step = walk.events[i]
                if cleared >= 0:
                    consequence = (
                        f"it finds no gradients at all after {at(walk.events[cleared])}, "
                        "so this optimizer never trains the model"
                    )
                else:
                    consequence = "every update uses the previous batch's gradients"
                yield RawFinding(
                    "GL007",
                    f"{step.text} runs before {at(later)} in the same iteration: {consequence}",
                    step,
                    ((later, "the backward that comes after the step"),),
                    loop,
                    move(file.lines, step, later, after=True, description=f"Move {step.text} after {later.text}"),
                )


def steps_before_backward(file, loop) -> frozenset:
    """Keys of the steps this rule reports in `loop`.  Other rules leave them alone: a step
    before its backward also re-applies or piles up gradients, but it is one misplaced call."""
    only_one = len(stepped_optimizers(loop)) == 1
    return frozenset(
        walk.events[i].key
        for walk in walks(loop)
        for i in walk.first_iteration()
        if step_before_backward(file, walk, i, only_one) is not None
    )


def step_before_backward(file, walk, i, only_one):
    """(index of the step's optimizer's last clear or -1, the backward after it) when the event
    at `i` is a step with no backward for it since that clear and a backward later in its
    iteration; else None."""
    step = walk.events[i]
    if step.kind != S or step.closure:
        return None
    # Each optimizer on its own: a backward counts for it only after its last clear.
    cleared = _last_clear(file, walk.events[:i], step.optimizer, only_one)
    if any(e.kind == B for e in walk.events[cleared + 1 : i]):
        return None
    later = later_in_iteration(walk, i, B)
    return None if later is None else (cleared, later)


def _last_clear(file, events, optimizer, only_one) -> int:
    """Index of the last clear among `events` that surely resets `optimizer`'s gradients, or -1."""
    for index in range(len(events) - 1, -1, -1):
        event = events[index]
        if event.kind == Z and touches(file, event, optimizer, only_one):
            return index
    return -1


RULE = Rule(
    code="GL007",
    name="step-before-backward",
    summary="optimizer.step() runs before this iteration's backward().",
    rationale=(
        "step() applies whatever is in .grad. Called before this iteration's backward(), it applies the "
        "previous batch's gradients (none at all on the first iteration), and the last batch is never used."
    ),
    wrong="for x, y in loader:\n    opt.zero_grad()\n    opt.step()\n    loss_fn(model(x), y).backward()\n",
    right="for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()\n",
    default=True,
    check=check,
    fix='Safe: moves the step after the backward() and the unscale_/clip that follow it, or moves the backward() up before the step, whichever leaves no other finding.',
    valid=(
        """
opt = torch.optim.LBFGS(model.parameters())
for x, y in loader:
    def closure():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        return loss
    opt.step(closure)
""",
        """
for x, y in loader:
    loss_fn(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
""",
    ),
    invalid=(
        """
for x, y in loader:
    optimizer.zero_grad()
    optimizer.step()  # expect: GL007
    loss_fn(model(x), y).backward()
""",
        """
scaler = torch.amp.GradScaler()
for x, y in loader:
    scaler.step(opt)  # expect: GL007
    scaler.update()
    opt.zero_grad()
    scaler.scale(loss_fn(model(x), y)).backward()
""",
    ),
)
