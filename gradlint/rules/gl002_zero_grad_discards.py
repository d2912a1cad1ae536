"""GL002: a clear between a backward and the step meant to consume it."""

from gradlint.fix import move
from gradlint.model.events import B, S, Z
from gradlint.model.flow import walks
from gradlint.model.params import stepped_optimizers, touches
from gradlint.rules.base import RawFinding, at
from gradlint.rules.registry import Rule


def check(file):
    for loop in file.loops:
        if not (loop.has(Z) and loop.has(S)):
            continue
        only_one = len(stepped_optimizers(loop)) == 1
        for walk in walks(loop):
            yield from _walk(file, loop, walk, only_one)


def _walk(file, loop, walk, only_one):
    events = walk.events
    fresh: list[int] = []  # indexes of backward passes no step has consumed yet
    for i, event in enumerate(events):
        if event.kind == B:
            fresh.append(i)
        elif event.kind == S:
            fresh = []
        elif event.kind == Z and fresh:
            finding = _judge(file, loop, walk, i, fresh, only_one)
            if finding is not None:
                yield finding


def _judge(file, loop, walk, z_index, fresh, only_one):
    events = walk.events
    z = events[z_index]
    backward_between = False
    for j in range(z_index + 1, len(events)):
        later = events[j]
        if later.kind == B:
            backward_between = True
        elif later.kind == S:
            if not touches(file, z, later.optimizer, only_one):
                return None
            # Deliberate accumulation: the backward ran in an iteration that skipped this
            # optimizer's step on an accumulation condition, so this step was meant to use it.
            accumulated = [i for i in fresh if _deferred_for(file, walk.paths[walk.iteration[i]], later.optimizer)]
            if accumulated and z.key in loop.own and events[accumulated[-1]].key not in loop.own:
                # A clear at the top of each epoch, before the inner loop that accumulates: it
                # only drops the previous epoch's last, partial window (not this rule's question).
                accumulated = []
            same_iteration = walk.iteration[fresh[-1]] == walk.iteration[z_index] == walk.iteration[j]
            fix = None
            if not backward_between and same_iteration:
                lost = events[fresh[-1]]
                fix = move(file.lines, z, later, after=True, description=f"Move {z.text} after {later.text}")
            elif accumulated and not z.accumulation_guarded:
                lost = events[accumulated[-1]]
            else:
                return None
            return RawFinding(
                "GL002",
                f"{z.text} discards the gradients of {at(lost)} before {at(later)}",
                z,
                ((lost, "the backward whose gradients are lost"), (later, "the step that should use them")),
                loop,
                fix,
            )
    return None


def _deferred_for(file, path, optimizer) -> bool:
    return any(d is not None and optimizer is not None and file.bindings.same(d, optimizer) for d in path.deferred)


RULE = Rule(
    code="GL002",
    name="zero-grad-discards-gradients",
    summary="zero_grad() runs after backward() and before the step that should use those gradients.",
    rationale=(
        "A clear between backward() and step() throws the fresh gradients away, so the step uses nothing "
        "(or only part of an accumulated sum). With accumulation, clearing every micro-batch while stepping "
        "every k-th keeps only the last micro-batch."
    ),
    wrong="for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
    right="for x, y in loader:\n    opt.zero_grad()\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n",
    default=True,
    check=check,
    valid=(
        """
opt = torch.optim.AdamW(model.parameters())
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
        """
for step, batch in enumerate(loader):
    loss = model(batch) / accum_steps
    loss.backward()
    if (step + 1) % accum_steps == 0:
        optimizer.step()
    if (step + 1) % accum_steps == 0:
        optimizer.zero_grad()
""",
        """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        loss = model(batch)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
""",
    ),
    invalid=(
        """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.zero_grad()  # expect: GL002
    opt.step()
""",
        """
for i, (x, y) in enumerate(loader):
    optimizer.zero_grad()  # expect: GL002
    loss_fn(model(x), y).backward()
    if (i + 1) % 8 == 0:
        optimizer.step()
""",
        """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        loss = model(batch)
        accelerator.backward(loss)
        optimizer.step()
        model.zero_grad()  # expect: GL002
""",
    ),
)
