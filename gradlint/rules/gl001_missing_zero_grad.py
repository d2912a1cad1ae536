"""GL001: backward adds into gradients that a step already used, and the loop never clears."""

from gradlint.model.events import B, S, Z
from gradlint.model.flow import walks
from gradlint.rules.base import RawFinding, at
from gradlint.rules.registry import Rule

CLEAN, FRESH, CONSUMED, STALE = "clean", "fresh", "consumed", "stale"


def check(file):
    for loop in file.loops:
        if loop.has(Z) or not (loop.has(B) and loop.has(S)):
            continue  # a loop that clears anything is GL003's to judge
        # Which parameters a backward reaches is unknown, so each optimizer is
        # followed on its own: a backward after its step piles onto what it used.
        # In order of first step: a set would make the message depend on the hash seed.
        optimizers = dict.fromkeys(e.optimizer for e in loop.events if e.kind == S)
        for walk in walks(loop):
            for optimizer in optimizers:
                yield from _follow(loop, walk, optimizer)


def _follow(loop, walk, optimizer):
    state, writer, consumer = CLEAN, None, None
    for event in walk.events:
        if event.kind == B:
            if event.overwrites:
                state = FRESH
            elif state == CONSUMED:
                state, writer = STALE, event
            elif state == CLEAN:
                state = FRESH
        elif event.kind == S and event.optimizer == optimizer:
            if event.clears:
                state = CLEAN
                continue
            if state == STALE:
                yield _finding(loop, writer, consumer, event)
            state, consumer = CONSUMED, event


def _finding(loop, writer, consumer, step):
    if consumer == step:
        message = (
            f"{writer.text} adds to gradients that {at(step)} already used in the previous iteration: "
            "nothing in this loop clears them (call zero_grad() once per step)"
        )
        related = ((step, "the step that uses the piled-up gradients"),)
    else:
        message = (
            f"{writer.text} adds to gradients that {at(consumer)} already used: "
            f"nothing in this loop clears them before {at(step)}"
        )
        related = ((step, "the step that uses the piled-up gradients"), (consumer, "the step that used them first"))
    return RawFinding("GL001", message, writer, related, loop)


RULE = Rule(
    code="GL001",
    name="missing-zero-grad",
    summary="A loop steps an optimizer but never clears its gradients between steps.",
    rationale=(
        "backward() adds into each parameter's .grad. Without zero_grad() between one step and the next "
        "backward, every step uses the sum of all gradients so far: no error, just a model that trains badly."
    ),
    wrong="for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n",
    right="for x, y in loader:\n    opt.zero_grad()\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n",
    default=True,
    check=check,
    fix='Unsafe: inserts `<optimizer>.zero_grad()` before the first backward() of the iteration (with accumulation: right after the step), for the optimizer the finding names.',
    valid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
""",
        """
engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters())
for batch in loader:
    loss = engine(batch)
    engine.backward(loss)
    engine.step()
""",
        """
for i, (x, y) in enumerate(loader):
    loss = loss_fn(model(x), y) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
    ),
    invalid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()  # expect: GL001
    opt.step()
""",
        """
optimizer.zero_grad()
for i, (x, y) in enumerate(loader):
    loss = loss_fn(model(x), y)
    loss.backward()  # expect: GL001
    if (i + 1) % 4 == 0:
        optimizer.step()
""",
    ),
)
