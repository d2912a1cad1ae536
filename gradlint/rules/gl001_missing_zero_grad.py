"""GL001: backward adds into gradients that a step already used, and the loop never clears."""

from gradlint.core.findings import UNSAFE
from gradlint.fix import insert
from gradlint.core.events import OWN_STEP, B, S, Z
from gradlint.model.flow import walks
from gradlint.rules.base import (
    RawFinding, at, class_of_the_clears, clears_local, configuration_cleared, may_clear, sometimes_cleared,
)
from gradlint.rules.repairs import insert_clear, names_in
from gradlint.rules.registry import Criterion, Invalid, Rule, claimed

CLEAN, FRESH, CONSUMED, STALE = "clean", "fresh", "consumed", "stale"


def check(file):
    for loop in file.loops:
        if not (loop.has(B) and loop.has(S)) or loop.kind == OWN_STEP:
            continue  # (a function's own step: its caller may clear before each call)
        yield from _never_or_sometimes_cleared(file, loop)
        yield from _restepped(file, loop)


def _never_or_sometimes_cleared(file, loop):
    # Which parameters a backward reaches is unknown, so each optimizer is
    # followed on its own: a backward after its step piles onto what it used.
    # In order of first step: a set would make the message depend on the hash seed.
    optimizers = {e.optimizer: [] for e in loop.events if e.kind == S}
    # modules whose gradients are handed to another model (`shared_p._grad = p.grad`)
    handed = {e.optimizer for e in loop.events if e.kind == S and e.handoff}
    # optimizers whose every clear runs only under a condition the loop never changes
    configured: dict = {}
    if loop.has(Z):
        never = {o for o in handed if not any(e.kind == Z and clears_local(file, loop, e, o) for e in loop.events)}
        # A loop that clears is GL003's to judge, but for an optimizer whose every
        # clear runs only on some iterations: the others never clear it.  And for one
        # whose clears all depend on a setting (`if args.amp: opt.zero_grad()`): with the
        # other setting, the loop never clears it.
        optimizers = {o: sometimes_cleared(file, loop, o) for o in optimizers if o is not None}
        configured = {o: configuration_cleared(file, loop, o) for o, clears in optimizers.items() if not clears}
        optimizers = {o: clears for o, clears in optimizers.items() if clears}
        if any(configured.values()) or optimizers:
            # a clear moved into one setting's branch, between its backward and step, is
            # GL002's one finding, not also a GL001 of the other setting; so is a clear that runs
            # on some iterations only but discards micro-batches on those (`if i > 0:
            # opt.zero_grad()` beside an accumulation step): one misplaced call, one finding
            misplaced = claimed(file, loop, "GL001")
            configured = {o: c for o, c in configured.items() if not any(z.key in misplaced for z in c)}
            optimizers = {o: c for o, c in optimizers.items() if not any(z.key in misplaced for z in c)}
        optimizers.update((o, clears) for o, clears in configured.items() if clears)
        optimizers.update((o, []) for o in never)
    early = claimed(file, loop, "GL001") if any(optimizers.values()) else frozenset()
    # One finding per optimizer: its missing clear is one misplaced call, however many
    # backwards pile onto its gradients (`if amp: scaler.scale(loss).backward() else:
    # loss.backward()`, two branches of one setting, need one zero_grad()).
    reported: set = set()
    for walk in walks(loop):
        for optimizer, clears in optimizers.items():
            if optimizer in reported or (configured.get(optimizer) and _runs_any(walk, clears)):
                continue  # (the setting that clears: only the walks of the other one count)
            for finding in _follow(file, loop, walk, optimizer, clears, bool(configured.get(optimizer)), optimizer in handed):
                if not (clears and finding.related[0][0].key in early):
                    reported.add(optimizer)
                    yield finding  # (a step before its backward is GL007's one finding)
                    break


def _restepped(file, loop):
    """`Z; B1; S; B2; S` in a loop that does clear this optimizer: no clear runs between the
    first step and the second backward, which adds to the gradients that step used (the rule
    contract's "no Z between one S and the next B"; a clear of other parameters there is GL003's)."""
    found = restepped_findings(file, loop)
    seen = set()
    for finding in found:
        if finding.event.key not in seen:
            seen.add(finding.event.key)
            yield finding


def restepped_findings(file, loop) -> list:
    """GL001's findings of `_restepped` (GL003 leaves their steps alone: one misplaced call).
    Computed once per loop and kept on it: the claims ask again."""
    if "_restepped" not in loop.__dict__:
        loop.__dict__["_restepped"] = _restepped_findings(file, loop)
    return loop.__dict__["_restepped"]


def restepped_steps(file, loop) -> frozenset:
    """Keys of the steps that apply again gradients a backward piled onto (this rule's claims:
    GL003 leaves those steps alone)."""
    return frozenset(f.related[0][0].key for f in restepped_findings(file, loop))


def _restepped_findings(file, loop) -> list:
    if not loop.has(Z):
        return []
    if any(e.accumulation_guarded for e in loop.events if e.kind in (S, Z)):
        # Accumulation windows clear and step under conditions the paths cannot correlate.
        return []
    # (an optimizer cleared only on some iterations, or only in some configurations, or whose
    # gradients are handed to another model, is _never_or_sometimes_cleared's)
    always = [
        o
        for o in dict.fromkeys(e.optimizer for e in loop.events if e.kind == S and not e.handoff)
        if o is not None
        and any(may_clear(file, z, o) for z in loop.events if z.kind == Z)
        and not sometimes_cleared(file, loop, o)
        and not configuration_cleared(file, loop, o)
    ]
    out = []
    early = None
    for walk in walks(loop):
        for optimizer in always:
            for finding in _follow(file, loop, walk, optimizer, (), restep=True):
                if early is None:
                    early = claimed(file, loop, "GL001")
                if not {r.key for r, _ in finding.related} & early:
                    out.append(finding)  # (a step before its backward is GL007's one finding)
    return out


def _runs_any(walk, clears) -> bool:
    keys = {e.key for e in clears}
    return any(e.key in keys for e in walk.events)


def _follow(file, loop, walk, optimizer, clears, configured=False, handed=False, restep=False):
    """`restep`: the loop clears this optimizer; a step right after a clear consumes nothing."""
    state, writer, consumer = CLEAN, None, None
    # `restep` reads one iteration: a backward after a step of its own iteration.  (Across the
    # back edge, a loop that clears is GL003's, or the other iterations' of a guarded clear.)
    events = walk.events[: len(walk.first_iteration())] if restep else walk.events
    for event in events:
        if event.kind == B:
            if handed and event.overwrites and event.module and not file.bindings.same(event.module, optimizer):
                continue  # the shared parameters get the gradients, not this module
            if event.overwrites:
                state = FRESH
            elif state == CONSUMED:
                state, writer = STALE, event
            elif state == CLEAN:
                state = FRESH
        elif event.kind == Z:
            if clears_local(file, loop, event, optimizer) if handed else may_clear(file, event, optimizer):
                state = CLEAN
        elif event.kind == S and event.optimizer == optimizer:
            if event.clears:
                state = CLEAN
                continue
            if state == STALE:
                if restep:
                    yield _restep_finding(loop, writer, consumer, event)
                else:
                    yield _finding(loop, writer, consumer, event, clears, configured)
            if restep and state == CLEAN:
                continue
            state, consumer = CONSUMED, event


def _restep_finding(loop, writer, consumer, step):
    message = (
        f"{writer.text} adds to gradients that {at(consumer)} already used: no zero_grad() runs "
        f"between that step and this backward, so {at(step)} applies them again"
    )
    related = ((step, "the step that uses the piled-up gradients"), (consumer, "the step that used them first"))
    return RawFinding("GL001", message, writer, related, loop)


def _finding(loop, writer, consumer, step, clears, configured=False):
    receiver = class_of_the_clears(loop, clears) if configured else None
    if receiver:
        cleared = (f"{at(clears[0])} runs only when {receiver} is of one of the classes it may be, "
                   "and with the others nothing clears them")
    elif configured:
        cleared = f"{at(clears[0])} runs only under a setting the loop never changes, and without it nothing clears them"
    elif clears:
        cleared = f"{at(clears[0])} runs only on some iterations, so the others do not clear them"
    else:
        cleared = "nothing in this loop clears them"
    if consumer == step:
        message = (
            f"{writer.text} adds to gradients that {at(step)} already used in the previous iteration: "
            f"{cleared} (call zero_grad() once per step)"
        )
        related = ((step, "the step that uses the piled-up gradients"),)
    else:
        message = f"{writer.text} adds to gradients that {at(consumer)} already used: {cleared} before {at(step)}"
        related = ((step, "the step that uses the piled-up gradients"), (consumer, "the step that used them first"))
    related += tuple((z, "a clear that only some runs make" if configured else "a clear that only some iterations run") for z in clears[:1])
    return RawFinding("GL001", message, writer, related, loop)


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """The clear, inserted where the iteration's first backward is (with accumulation: after the step); before the backward that adds to what the first step used when that is the one missing."""
    step = raw.related[0][0] if raw.related else None
    if step is None or not step.optimizer or not names_in(step.text, step.optimizer):
        return []
    if step.manual and _updates_itself(step):
        return []  # a tensor updated by hand (an attack's perturbation) has no zero_grad() to call
    candidates = [insert_clear(file, raw.loop, step, raw.event)]
    consumer = raw.related[1][0] if len(raw.related) > 1 else None
    if consumer is not None and consumer.kind == S and consumer.key != step.key and raw.event.via == step.via:
        # `Z; B1; S; B2; S`: the clear that is missing is the one between the first step and
        # the backward that adds to what it used
        call = f"{step.optimizer}.zero_grad()"
        candidates.insert(0, insert(file.context, call, raw.event, False, f"Insert {call} before {raw.event.text}", UNSAFE))
    return candidates


def _updates_itself(step) -> bool:
    """A manual step of the tensor it names (`delta.data = delta.data + ...`, `w -= lr * w.grad`),
    not of the parameters of a module it iterates (`p -= lr * p.grad` for `model`)."""
    rest = step.text[len(step.optimizer):] if step.text.startswith(step.optimizer) else None
    return rest is not None and not (rest[:1].isalnum() or rest[:1] == "_")


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A step uses gradients that also hold backward passes an earlier step already used, and
    no clear of them ran in between (GL003 when a clear of some of them did, or when they are
    never cleared while other parameters are)."""
    found = replay.stale_use(i, event)
    if found is not None and not found[5]:
        pid, consumer, writer_index, clears, evidence, _ = found
        why = ": nothing cleared them in between" if not clears else f": {replay.call(replay.events[clears[0]])} " \
            f"ran in between, a clear of other parameters ({replay.run.param(pid)} is cleared elsewhere)"
        replay.detect("GL001", replay.events[writer_index], evidence + why, also=[event])


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
    criterion=Criterion(on="S", detect=runtime, reported_on="B", followed_by="S", order=2),
    fixes=fixes,
    # a step that re-applies used gradients: GL003 leaves it alone
    supersedes=("GL003",),
    claims=restepped_steps,
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
        Invalid(
            """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()  # expect: GL001
    opt.step()
""",
            fixed="""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()  # expect: GL001
    opt.step()
""",
        ),
        Invalid(
            """
optimizer.zero_grad()
for i, (x, y) in enumerate(loader):
    loss = loss_fn(model(x), y)
    loss.backward()  # expect: GL001
    if (i + 1) % 4 == 0:
        optimizer.step()
""",
            fixed="""
optimizer.zero_grad()
for i, (x, y) in enumerate(loader):
    loss = loss_fn(model(x), y)
    loss.backward()  # expect: GL001
    if (i + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
        ),
        Invalid(
            """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    if i % 100 == 0:
        print(i)
        opt.zero_grad()
    loss_fn(model(x), y).backward()  # expect: GL001
    opt.step()
""",
            fixed="""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, (x, y) in enumerate(loader):
    if i % 100 == 0:
        print(i)
        opt.zero_grad()
    opt.zero_grad()
    loss_fn(model(x), y).backward()  # expect: GL001
    opt.step()
""",
        ),
        """
for x, y in loader:
    loss = loss_fn(model(x), y)
    if args.amp:
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()  # expect: GL001
        opt.step()
""",
        Invalid(
            """
opt_d = torch.optim.Adam(critic.parameters())
for fake, real in loader:
    opt_d.zero_grad()
    critic(fake).mean().backward()
    opt_d.step()
    (-critic(real).mean()).backward()  # expect: GL001
    opt_d.step()
""",
            fixed="""
opt_d = torch.optim.Adam(critic.parameters())
for fake, real in loader:
    opt_d.zero_grad()
    critic(fake).mean().backward()
    opt_d.step()
    opt_d.zero_grad()
    (-critic(real).mean()).backward()  # expect: GL001
    opt_d.step()
""",
        ),
    ),
)
