"""GL101 (advice): `model.zero_grad()` where the optimizer's own clear says what is meant."""

from gradlint.model.bindings import is_part
from gradlint.core.events import Z
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
            if params == frozenset({b.canonical(z.module)}) and not any(map(is_part, params)):
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
    limits=(
        "GL101 judges only loops that step exactly one optimizer. In a loop that steps several (a GAN, "
        "actor-critic, SAC), a module's zero_grad() is never reported, even one that clears exactly one "
        "optimizer's parameters: there the question is which clear serves which optimizer, and GL003 "
        "answers it (a clear that leaves some stepped parameters uncleared is a bug, not a matter of style). "
        "GL101 is also silent when it cannot tell which parameters the optimizer holds (an optimizer passed "
        "in as an argument), and when the module cleared is not exactly the one the optimizer was built "
        "from (`model.head.zero_grad()` with `SGD(model.parameters())`)."
    ),
    valid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
        """
opt_g = torch.optim.Adam(generator.parameters())
opt_d = torch.optim.Adam(discriminator.parameters())
for real in loader:
    discriminator.zero_grad()
    d_loss(discriminator, generator, real).backward()
    opt_d.step()
    generator.zero_grad()
    g_loss(discriminator, generator).backward()
    opt_g.step()
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
