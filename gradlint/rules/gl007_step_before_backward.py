"""GL007: a step before the backward of its own iteration."""

from gradlint.fix import move
from gradlint.model.event import Event
from gradlint.core.events import OWN_STEP, B, C, S, U, Z
from gradlint.model.flow import walks
from gradlint.model.params import stepped_optimizers, touches
from gradlint.rules.base import RawFinding, at
from gradlint.rules.repairs import move_up, positions
from gradlint.rules.registry import Criterion, Invalid, Rule, claimed


def check(file):
    for loop in file.loops:
        only_one = len(stepped_optimizers(loop)) == 1
        discarding = None
        for walk in walks(loop):
            index = _WalkIndex(file, walk, only_one)
            for i in walk.first_iteration():
                found = _before_its_backward(loop, walk, i, index, step_before_backward(file, walk, i, only_one, index))
                if found is None:
                    continue
                cleared, later = found
                if cleared >= 0 and discarding is None:
                    discarding = claimed(file, loop, "GL007")
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
                    move(file.context, step, later, after=True, description=f"Move {step.text} after {later.text}"),
                )


def steps_before_backward(file, loop) -> frozenset:
    """Keys of the steps this rule reports in `loop`.  Other rules leave them alone: a step
    before its backward also re-applies or piles up gradients, but it is one misplaced call."""
    only_one = len(stepped_optimizers(loop)) == 1
    found = set()
    for walk in walks(loop):
        index = _WalkIndex(file, walk, only_one)
        found.update(
            walk.events[i].key for i in walk.first_iteration()
            if _before_its_backward(loop, walk, i, index, step_before_backward(file, walk, i, only_one, index))
        )
    return frozenset(found)


def _before_its_backward(loop, walk, i, index, found):
    """`found` of step_before_backward, when it is this rule's finding in `loop`.  A function's
    own step (OWN_STEP) may follow a backward its caller ran: it surely finds no gradient of
    its own only after a clear of its body with no backward between, or when the body clears
    what its backward wrote before any step of that optimizer (`step; backward; zero_grad`:
    every call throws its own gradients away, whatever the caller does)."""
    if found is None or loop.kind != OWN_STEP or found[0] >= 0:
        return found
    later = index.first_backward[i + 1]
    return found if index.cleared_before_step(later + 1, walk.events[i].optimizer) else None


def step_before_backward(file, walk, i, only_one, index=None):
    """(index of the step's optimizer's last clear or -1, the backward after it) when the event
    at `i` is a step with no backward for it since that clear and a backward later in its
    iteration; else None.  `index`: the walk's _WalkIndex, when several events of it are asked."""
    step = walk.events[i]
    if step.kind != S or step.closure:
        return None
    index = index or _WalkIndex(file, walk, only_one)
    # Each optimizer on its own: a backward counts for it only after its last clear.
    cleared = index.last_clear(i, step.optimizer)
    if index.backwards_before[i] > index.backwards_before[cleared + 1]:
        return None
    later = index.next_backward(i)
    return None if later is None else (cleared, later)


class _WalkIndex:
    """What every step of a walk asks, computed once per walk (per optimizer for the clears):
    asked event by event over the walk's prefix, a statement of thousands of steps cost the
    square of their number."""

    def __init__(self, file, walk, only_one: bool) -> None:
        self.file, self.walk, self.only_one = file, walk, only_one
        events, iteration = walk.events, walk.iteration
        # backwards_before[k]: how many backwards events[:k] holds
        self.backwards_before = [0]
        for event in events:
            self.backwards_before.append(self.backwards_before[-1] + (event.kind == B))
        # first_backward[k]: the first backward from k on within k's iteration (base.later_in_iteration)
        self.first_backward: list = [None] * (len(events) + 1)
        for k in range(len(events) - 1, -1, -1):
            if events[k].kind == B:
                self.first_backward[k] = k
            elif k + 1 < len(events) and iteration[k + 1] == iteration[k]:
                self.first_backward[k] = self.first_backward[k + 1]
        self._clears: dict = {}
        self._cleared_first: dict = {}

    def next_backward(self, i: int):
        """later_in_iteration(walk, i, B)."""
        events, iteration = self.walk.events, self.walk.iteration
        if i + 1 >= len(events) or iteration[i + 1] != iteration[i]:
            return None
        found = self.first_backward[i + 1]
        return None if found is None else events[found]

    def cleared_before_step(self, k: int, optimizer) -> bool:
        """Does a clear that surely resets `optimizer` come, from `k` on within k's iteration,
        before any step of it?  (Computed once per optimizer, from the end of the walk.)"""
        events, iteration = self.walk.events, self.walk.iteration
        if k >= len(events) or iteration[k] != iteration[k - 1]:
            return False
        known = self._cleared_first.get(optimizer)
        if known is None:
            known = [False] * len(events)
            for n in range(len(events) - 1, -1, -1):
                event = events[n]
                if event.kind == Z and touches(self.file, event, optimizer, self.only_one):
                    known[n] = True
                elif event.kind == S and event.optimizer == optimizer:
                    known[n] = False
                elif n + 1 < len(events) and iteration[n + 1] == iteration[n]:
                    known[n] = known[n + 1]
            self._cleared_first[optimizer] = known
        return known[k]

    def last_clear(self, i: int, optimizer) -> int:
        """Index of the last clear before `i` that surely resets `optimizer`'s gradients, or -1."""
        known = self._clears.get(optimizer)
        if known is None:
            known, last = [], -1
            for k, event in enumerate(self.walk.events):
                known.append(last)  # the last one before k
                if event.kind == Z and touches(self.file, event, optimizer, self.only_one):
                    last = k
            self._clears[optimizer] = known
        return known[i]


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """Move the step after the backward and what prepares its gradients, or the backward up before the step."""
    step = raw.event
    backward = raw.related[0][0] if raw.related else None
    if backward is None:
        return [raw.fix]
    # The step goes after the backward and what prepares its gradients (unscale_, clip).
    # read only: no copy of the loop's events per finding; where: an event's index, once per loop
    events, where = (raw.loop.events if raw.loop is not None else []), positions(raw.loop)
    last = backward
    if backward in where:
        for k in range(where[backward] + 1, len(events)):
            event = events[k]
            if event.kind not in (B, U, C) or event.via != step.via:
                break
            last = event
    if last in where and _stepped_next(events, where[last] + 1, step):
        # that backward already has its step (`if warmup: B; continue` ... `B; S`): moving this
        # one there would step twice; moving the backward up would leave the other step bare
        return []
    up = move_up(file, backward, step, f"Move {backward.text} before {step.text}")
    if _scaler_updated_before(file, step, last):
        # `scaler.step(opt); scaler.update()`: the step must stay before its scaler's update (which
        # reads the inf checks the step recorded), so only the backward may move
        return [up]
    down = move(file.context, step, last, after=True, description=f"Move {step.text} after {last.text}")
    plain = (
        move(file.context, step, backward, after=True, description=f"Move {step.text} after {backward.text}")
        if last is not backward
        else None
    )
    return [down, up, plain]


def _scaler_updated_before(file, step: Event, last: Event) -> bool:
    """Does `scaler.update()` of the scaler that runs `step` stand between it and `last`?"""
    if not step.by_scaler or step.path is not None or last.path is not None or ".step(" not in step.text:
        return False
    update = step.text.rsplit(".step(", 1)[0] + ".update("
    lines = file.context.lines
    return any(update in line for line in lines[step.span.end_line : last.span.line])


def _stepped_next(events: list[Event], start: int, step: Event) -> bool:
    """Is the first step or backward of `events[start:]` (source order) another step of `step`'s optimizer?"""
    for k in range(start, len(events)):
        event = events[k]
        if event.kind == B:
            return False
        if event.kind == S and event.optimizer == step.optimizer and event.key != step.key:
            return True
    return False


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A step with no backward into its parameters since their last step.  Parameters are
    followed by identity: a backward into them since their last step, by any optimizer (a
    SAM-style wrapper steps through its base optimizer), makes the step fresh.  Frozen
    parameters (requires_grad False) take no part: stepping them is a no-op."""
    number, name = replay.stepping
    pids = event.params
    frozen = event.raw.get("frozen")
    if frozen:
        frozen = set(frozen)
        live = [pid for pid in pids if pid not in frozen]
    else:
        live = pids
    fresh = any(replay.grad(pid).last_b > replay.grad(pid).last_s for pid in live)
    # A prevented step never ran its closure, so it cannot show a step before backward; a manual
    # update is only seen after the fact.
    quiet = event.raw.get("skipped") or event.raw.get("prevented") or event.raw.get("manual")
    if live and not fresh and not quiet:
        steps = replay.steps.get(event.raw.get("oid"), [])
        previous = replay.events[steps[-2]] if len(steps) > 1 else None
        since = f"since step {number - 1} ({replay.where(previous)})" if previous else "before it"
        replay.detect(
            "GL007", event,
            f"step {number} of {name} {replay.call(event)} ran with no backward into its parameters {since}: "
            "it used " + ("no gradients at all" if all(event.state(p) is None for p in pids) else "the previous batch's gradients"),
        )


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
    criterion=Criterion(on="S", detect=runtime, reported_on="S", followed_by="S", order=0),
    fixes=fixes,
    # the pile-up (GL001) or re-applied gradients (GL003) a step before its backward causes
    supersedes=("GL001", "GL003"),
    claims=steps_before_backward,
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
        Invalid(
            """
for x, y in loader:
    optimizer.zero_grad()
    optimizer.step()  # expect: GL007
    loss_fn(model(x), y).backward()
""",
            fixed="""
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()  # expect: GL007
""",
        ),
        # (no fixed text pinned: the fix leaves scaler.update() before the first step)
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
