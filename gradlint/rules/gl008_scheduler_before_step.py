"""GL008: an LR scheduler stepped before the optimizer in the same iteration."""

from gradlint.fix import move
from gradlint.core.events import B, L, S
from gradlint.model.flow import walks
from gradlint.rules.base import RawFinding, at, later_in_iteration
from gradlint.rules.registry import Criterion, Invalid, Rule


def check(file):
    for loop in file.loops:
        if not loop.has(L) or not loop.has(B):
            continue  # no backward in it or below it: no training loop (a scheduler's own test)
        for walk in walks(loop):
            for i in walk.first_iteration():
                sched = walk.events[i]
                if sched.kind != L or sched.plateau or sched.has_args or sched.skips_first or sched.own_convention:
                    # `sched.step(epoch)` sets the position itself; under `if epoch > 0:` the
                    # step at the top of an iteration is the previous iteration's last; a
                    # schedule of its own sets the rate of the step about to run
                    continue
                if any(e.kind == S for e in walk.events[:i]):
                    continue
                later = later_in_iteration(walk, i, S)
                if later is None:
                    continue
                yield RawFinding(
                    "GL008",
                    f"{sched.text} runs before {at(later)}: the first learning rate of the schedule is skipped "
                    "(since PyTorch 1.1 the scheduler steps after the optimizer)",
                    sched,
                    ((later, "the optimizer step that should come first"),),
                    loop,
                    move(file.context, sched, later, after=True, description=f"Move {sched.text} after {later.text}"),
                )


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A scheduler step (without an explicit epoch) before its optimizer's first step, or while
    that optimizer has fresh gradients it has not stepped yet; reported once that optimizer's
    next step shows the update the premature scheduler step changed."""
    if event.raw.get("plateau") or event.raw.get("error") or event.raw.get("positioned"):
        return  # `sched.step(epoch)` sets its position itself: stepping first skips nothing
    oid = event.raw.get("oid")
    if oid is None:
        return
    first = not replay.steps.get(oid)
    if not (first or replay.fresh.get(oid)):
        return
    replay.at_next_step(i, oid, lambda later: _report(replay, event, oid, later, first))


def _report(replay, event, oid, later, first):
    name = replay.run.optimizer(oid)
    sched = event.raw.get("scheduler") or "the scheduler"
    before, after = event.raw.get("lr_before"), event.raw.get("lr_after")
    if first:
        found = replay.detect(
            "GL008", event,
            f"{replay.call(event)} ran before the first {name}.step() ({replay.where(later)}): "
            + _learning_rates(f"{name}'s first iterations trained with", before, after, "the schedule's first",
                              "the schedule's first learning rate was skipped"),
            also=[later],
        )
        found.message = (f"{sched}.step() runs before {name}.step() ({replay.where(later)}): the first learning "
                         "rate of the schedule is skipped (since PyTorch 1.1 the scheduler steps after the optimizer)")
    else:
        found = replay.detect(
            "GL008", event,
            f"{replay.call(event)} ran before the step of its iteration ({replay.where(later)}): "
            + _learning_rates(f"{name}'s update used", before, after, "this iteration's",
                              "the update used the next iteration's learning rate"),
            also=[later],
        )
        found.message = (f"{sched}.step() runs before {name}.step() ({replay.where(later)}) of the same iteration: "
                         "the update uses the next iteration's learning rate")


def _learning_rates(trained, before, after, meant, fallback) -> str:
    """The learning rates a premature scheduler step gave the optimizer, as numbers."""
    if not (isinstance(before, (int, float)) and isinstance(after, (int, float))) or before == after:
        return fallback
    factor = f", a factor of {after / before:.4g}" if before else ""
    return f"{trained} lr {after:.4g} instead of {meant} {before:.4g}{factor}"


RULE = Rule(
    code="GL008",
    name="scheduler-before-step",
    summary="lr_scheduler.step() runs before optimizer.step() in the same iteration or epoch.",
    rationale=(
        "Since PyTorch 1.1, scheduler.step() must follow optimizer.step(). Stepping the scheduler first skips "
        "the schedule's first value (warm-up starts one step late, step decays come early)."
    ),
    wrong=(
        "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\nfor epoch in range(epochs):\n    sched.step()\n"
        "    for x, y in loader:\n        opt.zero_grad()\n        loss_fn(model(x), y).backward()\n        opt.step()\n"
    ),
    right=(
        "sched = torch.optim.lr_scheduler.StepLR(opt, 10)\nfor epoch in range(epochs):\n"
        "    for x, y in loader:\n        opt.zero_grad()\n        loss_fn(model(x), y).backward()\n"
        "        opt.step()\n    sched.step()\n"
    ),
    default=True,
    check=check,
    criterion=Criterion(on="L", detect=runtime, reported_on="L", followed_by="S", order=0),
    fix='Safe: moves the scheduler step after the optimizer step (a per-epoch scheduler: after the inner loop, never into it).',
    valid=(
        """
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    sched.step(validate(model))
""",
        """
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=100)
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
    sched.step()
""",
        """
sched = torch.optim.lr_scheduler.StepLR(opt, 10)
for epoch in range(10):
    sched.step(epoch)
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
""",
        """
sched = torch.optim.lr_scheduler.ExponentialLR(opt, 0.9)
for epoch in range(10):
    if epoch > 0:
        sched.step()
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
""",
    ),
    invalid=(
        Invalid(
            """
from torch.optim import lr_scheduler
sched = lr_scheduler.StepLR(opt, step_size=10)
for epoch in range(10):
    sched.step()  # expect: GL008
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
""",
            fixed="""
from torch.optim import lr_scheduler
sched = lr_scheduler.StepLR(opt, step_size=10)
for epoch in range(10):
    for x, y in loader:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    sched.step()  # expect: GL008
""",
        ),
        Invalid(
            """
scheduler = get_linear_schedule_with_warmup(optimizer, 100, 1000)
for batch in loader:
    scheduler.step()  # expect: GL008
    optimizer.zero_grad()
    model(batch).backward()
    optimizer.step()
""",
            fixed="""
scheduler = get_linear_schedule_with_warmup(optimizer, 100, 1000)
for batch in loader:
    optimizer.zero_grad()
    model(batch).backward()
    optimizer.step()
    scheduler.step()  # expect: GL008
""",
        ),
        Invalid(
            """
def make_sched(opt):
    return torch.optim.lr_scheduler.StepLR(opt, 10)
sched = make_sched(opt)
for x, y in loader:
    sched.step()  # expect: GL008
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
""",
            fixed="""
def make_sched(opt):
    return torch.optim.lr_scheduler.StepLR(opt, 10)
sched = make_sched(opt)
for x, y in loader:
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()
    sched.step()  # expect: GL008
""",
        ),
    ),
)
