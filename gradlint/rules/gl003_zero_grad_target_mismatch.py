"""GL003: the loop clears, but not the parameters an optimizer steps."""

from gradlint.model.events import S, Z
from gradlint.model.params import coverage, stepped_optimizers
from gradlint.rules.base import RawFinding
from gradlint.rules.registry import Rule


def check(file):
    for loop in file.loops:
        clears = [e for e in loop.events if e.kind == Z]
        if not clears:
            continue  # no clear at all is GL001
        optimizers = stepped_optimizers(loop)
        for optimizer in optimizers:
            if coverage(file, clears, optimizer) is not False:
                continue
            step = next(e for e in loop.events if e.kind == S and e.optimizer == optimizer)
            # The clear to blame is one that serves no stepped optimizer; else blame the step.
            orphans = [z for z in clears if all(coverage(file, [z], o) is False for o in optimizers)]
            # ...or the clear that stands where this optimizer's belongs: the next step after it
            # is this optimizer's (`generator.zero_grad()` before the discriminator's update).
            misplaced = [z for z in clears if _next_step(loop, z) == optimizer and coverage(file, [z], optimizer) is False]
            orphans = orphans or misplaced
            params = file.bindings.optimizer_params(optimizer) or ()
            held = ", ".join(sorted(params))
            if orphans:
                z = orphans[0]
                yield RawFinding(
                    "GL003",
                    f"{z.text} does not clear all the parameters that {optimizer} steps ({held}): "
                    f"{step.text} (line {step.span.line}) uses stale gradients",
                    z,
                    ((step, f"the step of {optimizer}"),),
                    loop,
                )
            else:
                yield RawFinding(
                    "GL003",
                    f"{step.text} steps {optimizer} ({held}) but no zero_grad() in this loop clears its "
                    "gradients: they pile up across iterations",
                    step,
                    tuple((z, "a clear of other parameters") for z in clears[:3]),
                    loop,
                )


def _next_step(loop, clear):
    """The optimizer of the first step after `clear` in the loop's source order."""
    index = loop.events.index(clear)
    return next((e.optimizer for e in loop.events[index + 1 :] if e.kind == S), None)


RULE = Rule(
    code="GL003",
    name="zero-grad-target-mismatch",
    summary="The loop clears gradients, but not (all of) those an optimizer steps.",
    rationale=(
        "model.zero_grad() clears one module's parameters; an optimizer may hold another module's, or more. "
        "The parameters left out keep accumulating gradients across iterations."
    ),
    wrong=(
        "opt = SGD(model_b.parameters(), lr=0.1)\nfor x, y in loader:\n    model_a.zero_grad()\n"
        "    loss_fn(model_b(x), y).backward()\n    opt.step()\n"
    ),
    right=(
        "opt = SGD(model_b.parameters(), lr=0.1)\nfor x, y in loader:\n    opt.zero_grad()\n"
        "    loss_fn(model_b(x), y).backward()\n    opt.step()\n"
    ),
    default=True,
    check=check,
    valid=(
        """
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    model.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
        """
model = Net()
opt = torch.optim.SGD(model.head.parameters(), lr=0.1)
for x, y in loader:
    model.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
        """
def train(model, opt, loader):
    for x, y in loader:
        net.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
""",
    ),
    invalid=(
        """
model_a = Net()
model_b = Net()
opt = torch.optim.SGD(model_b.parameters(), lr=0.1)
for x, y in loader:
    model_a.zero_grad()  # expect: GL003
    loss_fn(model_b(x), y).backward()
    opt.step()
""",
        """
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    model.head.zero_grad()  # expect: GL003
    loss_fn(model(x), y).backward()
    opt.step()
""",
    ),
)
