"""GL101 (advice): `model.zero_grad()` where the optimizer's own clear says what is meant."""

from gradlint.model.events import Z
from gradlint.model.params import stepped_optimizers
from gradlint.rules.base import RawFinding
from gradlint.rules.registry import Rule


def check(file):
    b = file.bindings
    for loop in file.loops:
        optimizers = stepped_optimizers(loop)
        if len(optimizers) != 1:
            continue
        (optimizer,) = optimizers
        params = b.optimizer_params(optimizer)
        for z in loop.events:
            if z.kind != Z or z.module is None or params is None:
                continue
            if params == frozenset({b.canonical(z.module)}):
                yield RawFinding(
                    "GL101",
                    f"{z.text} clears exactly what {optimizer} steps: {optimizer}.zero_grad() says so and "
                    "keeps working if the optimizer's parameters change",
                    z,
                    (),
                    loop,
                )


RULE = Rule(
    code="GL101",
    name="prefer-optimizer-zero-grad",
    summary="model.zero_grad() where optimizer.zero_grad() clears exactly the stepped parameters.",
    rationale=(
        "Clearing through the optimizer ties the clear to what is stepped; a module's clear drifts from it "
        "when parameter groups change (frozen layers, a second optimizer)."
    ),
    wrong="opt = SGD(model.parameters())\nfor x, y in loader:\n    model.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()\n",
    right="opt = SGD(model.parameters())\nfor x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()\n",
    default=False,
    check=check,
    valid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
    ),
    invalid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    model.zero_grad()  # expect: GL101
    loss_fn(model(x), y).backward()
    opt.step()
""",
    ),
)
