"""GL003: the loop clears, but not the parameters an optimizer steps."""

from gradlint.core.events import B, S, Z
from gradlint.model.flow import conditional, walks
from gradlint.model.params import clears_module, coverage, stepped_optimizers, steps_module
from gradlint.rules.base import RawFinding, at, at_earlier
from gradlint.rules.repairs import insert_clear, names_in, replace_receiver
from gradlint.rules.registry import Criterion, Invalid, Rule, claimed


CLEAN, FRESH, CONSUMED, STALE = "clean", "fresh", "consumed", "stale"


def check(file):
    for loop in file.loops:
        clears = [e for e in loop.events if e.kind == Z]
        if not clears:
            continue  # no clear at all is GL001
        optimizers = stepped_optimizers(loop)
        for optimizer in optimizers:
            if coverage(file, clears, optimizer) is not False:
                yield from _uncleared_between_steps(file, loop, clears, optimizer)
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
                    f"{at(step)} uses stale gradients",
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


def _uncleared_between_steps(file, loop, clears, optimizer):
    """The loop's clears cover `optimizer` somewhere, but not where it matters: a module it
    steps was stepped before (by it or another optimizer), got a new backward, and is
    stepped again with no clear of it in between, so the step re-applies used gradients.

    (`opt_D.zero_grad(); d_loss.backward(); opt_D.step(); generator.zero_grad();
    info_loss.backward(); opt_info.step()` where opt_info holds both networks: the
    discriminator's gradients from d_loss reach opt_info's step.)
    """
    modules = file.bindings.optimizer_params(optimizer)
    if not modules or any(e.accumulation_guarded for e in loop.events if e.kind in (S, Z)):
        # Accumulation windows clear and step under two conditions the paths cannot
        # correlate (`if i % k == 0: clear` ... `if (i + 1) % k == 0: step`): GL001/GL002's.
        return
    # A module whose every clear runs only under a condition piles up gradients when it is
    # false: a clear skipped, not a clear of the wrong target (GL001's question, or none).
    skipped = {m for m in modules if _only_sometimes(file, loop, clears, optimizer, m)}
    early = None  # steps another rule reports: re-applying gradients is part of that one finding
    for walk in walks(loop):
        for module in sorted(modules - skipped):
            found = _follow_module(file, walk.events, optimizer, module)
            if found is not None and early is None:
                # steps GL007 reports, and steps GL001 reports on their backward (no clear at
                # all between one step and the next backward): one misplaced call, one finding
                early = claimed(file, loop, "GL003")
            if found is not None and found[0].key not in early:
                step, consumer, index, used_at = found
                other_iteration = walk.iteration[used_at] != walk.iteration[index]
                misplaced = [z for z in clears if _next_step(loop, z) == optimizer and not _clears(file, z, optimizer, module)]
                if misplaced:
                    blamed = misplaced[0]
                    message = (
                        f"{blamed.text} does not clear {module}, whose gradients {at(consumer)} already used: "
                        f"{at(step)} applies them again"
                    )
                elif consumer.key == step.key:  # its own previous run: never cite its own line
                    blamed = step
                    message = (
                        f"{step.text} steps {module} with gradients that it already used in the previous "
                        f"iteration: no clear of {module} runs between them"
                    )
                else:
                    blamed = step
                    message = (
                        f"{step.text} steps {module} with gradients that "
                        f"{at_earlier(consumer, step, other_iteration)} already used: "
                        f"no clear of {module} runs between them"
                    )
                yield RawFinding(
                    "GL003",
                    message,
                    blamed,
                    ((step, f"the step of {optimizer}"), (consumer, "the step that used them first")),
                    loop,
                )
                return


def _only_sometimes(file, loop, clears, optimizer, module) -> bool:
    """Do all the clears of `module` run only under a condition (on some iterations, or in
    some configurations: `if use_amp:`)?  Skipping a clear is no clear of the wrong target."""
    mine = [z for z in clears if _clears(file, z, optimizer, module)]
    guarded = conditional(loop)
    return bool(mine) and all(z.key in guarded for z in mine)


def _clears(file, z, optimizer, module) -> bool:
    """Does `z` reset `module`'s gradients?  Unknown counts as yes (precision first)."""
    return clears_module(file, z, optimizer, module) is not False


def _follow_module(file, events, optimizer, module):
    """(step of `optimizer`, earlier step, their indexes) when `module`'s used gradients
    reach that step."""
    b = file.bindings
    state, consumer, used_at = CLEAN, None, -1
    for index, event in enumerate(events):
        if event.kind == Z and _clears(file, event, optimizer, module):
            state = CLEAN
        elif event.kind == S and event.clears:
            state = CLEAN
        elif event.kind == B:
            state = FRESH if state == CLEAN else STALE if state == CONSUMED else state
        elif event.kind == S and steps_module(file, event.optimizer, module):
            if state == STALE and b.same(event.optimizer, optimizer):
                return event, consumer, index, used_at
            if state != CLEAN:
                state, consumer, used_at = CONSUMED, event, index
    return None


def _next_step(loop, clear):
    """The optimizer of the first step after `clear` in the loop's source order."""
    index = loop.events.index(clear)
    return next((e.optimizer for e in loop.events[index + 1 :] if e.kind == S), None)


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """The clear of the optimizer that steps: its receiver replaced, or one inserted when every clear serves another optimizer."""
    step = next((e for e, _ in raw.related if e.kind == S), raw.event if raw.event.kind == S else None)
    if step is None or not step.optimizer or not names_in(step.text, step.optimizer):
        return []
    if raw.event.kind == S:  # every clear serves another optimizer: add this one's
        return [insert_clear(file, raw.loop, step, None)]
    return [replace_receiver(file, raw.event, step.optimizer)]


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A step uses gradients that also hold backward passes an earlier step already used, though
    clears ran in between that did not clear them: a clear of some of the step's parameters, or
    of others while these are never cleared (GL001 when they are cleared elsewhere but not in
    between)."""
    found = replay.stale_use(i, event)
    if found is None or not found[5]:
        return
    pid, consumer, writer_index, clears, evidence, _ = found
    stepped = {p for o in replay.stepped_oids() for p in replay.owners if o in replay.owners_of(p)}
    orphans = [j for j in clears if not (set(replay.events[j].params) & stepped)]
    zs = [replay.events[j] for j in clears]
    blamed = replay.events[orphans[0]] if orphans else event
    cited = replay.events[orphans[0]] if orphans else zs[0]
    param = replay.run.param(pid)
    detection = replay.detect(
        "GL003", blamed,
        evidence + f": {replay.call(cited)} ran in between but does not clear {param}",
        also=zs + [event, replay.events[consumer]],
    )
    for clear in zs:  # a finding on one of these clears is told about its own call
        detection.by_line.setdefault(
            clear.site, evidence + f": {replay.call(clear)} ran in between but does not clear {param}")


RULE = Rule(
    code="GL003",
    name="zero-grad-target-mismatch",
    summary="The loop clears gradients, but not (all of) those an optimizer steps.",
    rationale=(
        "model.zero_grad() clears one module's parameters; an optimizer may hold another module's, or more. "
        "The parameters left out keep accumulating gradients across iterations."
    ),
    wrong=(
        "model_a, model_b = Net(), Net()\nopt = SGD(model_b.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    model_a.zero_grad()\n    loss_fn(model_b(x), y).backward()\n    opt.step()\n"
    ),
    right=(
        "model_a, model_b = Net(), Net()\nopt = SGD(model_b.parameters(), lr=0.1)\nfor x, y in loader:\n"
        "    opt.zero_grad()\n    loss_fn(model_b(x), y).backward()\n    opt.step()\n"
    ),
    default=True,
    check=check,
    criterion=Criterion(on="S", detect=runtime, reported_on="B", followed_by="S", order=2),
    fixes=fixes,
    fix="Unsafe: replaces the clear's receiver with the optimizer that steps those parameters (`model_a.zero_grad()` becomes `opt.zero_grad()`), or inserts that optimizer's clear before its backward() when every clear serves another optimizer.",
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
        Invalid(
            """
import itertools
G, D = Generator(), Discriminator()
opt_d = torch.optim.Adam(D.parameters())
opt_info = torch.optim.Adam(itertools.chain(G.parameters(), D.parameters()))
for x in loader:
    opt_d.zero_grad()
    d_loss(D, G, x).backward()
    opt_d.step()
    G.zero_grad()  # expect: GL003
    info_loss(D, G, x).backward()
    opt_info.step()
""",
            fixed="""
import itertools
G, D = Generator(), Discriminator()
opt_d = torch.optim.Adam(D.parameters())
opt_info = torch.optim.Adam(itertools.chain(G.parameters(), D.parameters()))
for x in loader:
    opt_d.zero_grad()
    d_loss(D, G, x).backward()
    opt_d.step()
    opt_info.zero_grad()  # expect: GL003
    info_loss(D, G, x).backward()
    opt_info.step()
""",
        ),
        Invalid(
            """
model_a = Net()
model_b = Net()
opt = torch.optim.SGD(model_b.parameters(), lr=0.1)
for x, y in loader:
    model_a.zero_grad()  # expect: GL003
    loss_fn(model_b(x), y).backward()
    opt.step()
""",
            fixed="""
model_a = Net()
model_b = Net()
opt = torch.optim.SGD(model_b.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()  # expect: GL003
    loss_fn(model_b(x), y).backward()
    opt.step()
""",
        ),
        Invalid(
            """
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    model.head.zero_grad()  # expect: GL003
    loss_fn(model(x), y).backward()
    opt.step()
""",
            fixed="""
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    opt.zero_grad()  # expect: GL003
    loss_fn(model(x), y).backward()
    opt.step()
""",
        ),
        Invalid(
            """
class Distiller(nn.Module):
    def __init__(self, student):
        super().__init__()
        self.student = student
        self.proj = nn.Linear(8, 16)
student = Net()
distiller = Distiller(student)
opt = torch.optim.SGD([{"params": student.parameters()}, {"params": distiller.proj.parameters()}], lr=0.1)
for x, y in loader:
    student.zero_grad()  # expect: GL003
    loss_fn(distiller(x), y).backward()
    opt.step()
""",
            fixed="""
class Distiller(nn.Module):
    def __init__(self, student):
        super().__init__()
        self.student = student
        self.proj = nn.Linear(8, 16)
student = Net()
distiller = Distiller(student)
opt = torch.optim.SGD([{"params": student.parameters()}, {"params": distiller.proj.parameters()}], lr=0.1)
for x, y in loader:
    opt.zero_grad()  # expect: GL003
    loss_fn(distiller(x), y).backward()
    opt.step()
""",
        ),
    ),
)
