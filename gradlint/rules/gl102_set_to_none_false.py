"""GL102 (advice): `zero_grad(set_to_none=False)` where nothing reads `.grad`."""

from gradlint.core.events import Z
from gradlint.rules.base import RawFinding
from gradlint.rules.registry import Rule


def check(file):
    if file.reads_grad():
        return
    for loop in file.loops:
        for z in loop.events:
            if z.kind == Z and z.set_to_none_false:
                yield RawFinding(
                    "GL102",
                    f"{z.text} fills gradients with zeros that nothing reads: the default set_to_none=True "
                    "skips the memset and lets the optimizer skip unused parameters",
                    z,
                    (),
                    loop,
                )


RULE = Rule(
    code="GL102",
    name="set-to-none-false",
    summary="zero_grad(set_to_none=False) where nothing reads .grad afterwards.",
    rationale=(
        "Since PyTorch 2.0 zero_grad() sets gradients to None by default, which is faster and uses less "
        "memory. Zero tensors are needed only by code that reads .grad before the next backward."
    ),
    wrong="for x, y in loader:\n    opt.zero_grad(set_to_none=False)\n    loss_fn(model(x), y).backward()\n    opt.step()\n",
    right="for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()\n",
    default=False,
    check=check,
    valid=(
        """
for x, y in loader:
    opt.zero_grad(set_to_none=False)
    loss_fn(model(x), y).backward()
    norms = [p.grad.norm() for p in model.parameters()]
    opt.step()
""",
    ),
    invalid=(
        """
for x, y in loader:
    opt.zero_grad(set_to_none=False)  # expect: GL102
    loss_fn(model(x), y).backward()
    opt.step()
""",
    ),
)
