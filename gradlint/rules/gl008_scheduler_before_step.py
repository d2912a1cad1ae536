"""GL008: an LR scheduler stepped before the optimizer in the same iteration."""

from gradlint.fix import move
from gradlint.core.events import B, L, S
from gradlint.model.flow import walks
from gradlint.rules.base import RawFinding, at, later_in_iteration
from gradlint.rules.registry import Rule


def check(file):
    for loop in file.loops:
        if not loop.has(L) or not loop.has(B):
            continue  # no backward in it or below it: no training loop (a scheduler's own test)
        for walk in walks(loop):
            for i in walk.first_iteration():
                sched = walk.events[i]
                if sched.kind != L or sched.plateau or sched.has_args or sched.skips_first:
                    # `sched.step(epoch)` sets the position itself; under `if epoch > 0:` the
                    # step at the top of an iteration is the previous iteration's last
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
                    move(file.lines, sched, later, after=True, description=f"Move {sched.text} after {later.text}"),
                )


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
        """
scheduler = get_linear_schedule_with_warmup(optimizer, 100, 1000)
for batch in loader:
    scheduler.step()  # expect: GL008
    optimizer.zero_grad()
    model(batch).backward()
    optimizer.step()
""",
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
    ),
)
