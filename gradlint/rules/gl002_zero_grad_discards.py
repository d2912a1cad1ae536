"""GL002: a clear between a backward and the step meant to consume it."""

from gradlint.fix import move
from gradlint.core.event_labels import ZERO_GRAD_CALLS
from gradlint.core.events import OWN_STEP, B, S, Z
from gradlint.model.names import is_under
from gradlint.model.flow import walks
from gradlint.model.params import stepped_optimizers, touches
from gradlint.rules.base import RawFinding, at, at_earlier
from gradlint.rules.repairs import ZERO_GRAD, names_in, replace_receiver
from gradlint.rules.registry import Criterion, Invalid, Rule


def check(file):
    for loop in file.loops:
        if not (loop.has(Z) and loop.has(S)):
            continue
        only_one = len(stepped_optimizers(loop)) == 1
        for walk in walks(loop):
            yield from _walk(file, loop, walk, only_one)


def _walk(file, loop, walk, only_one):
    seen_backward = False
    for i, event in enumerate(walk.events):
        if event.kind == B:
            seen_backward = True
        elif event.kind == Z and seen_backward:
            finding = _judge(file, loop, walk, i, only_one)
            if finding is not None:
                yield finding


def discarding_clears(file, loop) -> frozenset:
    """Keys of the clears this rule reports in `loop` (in any walk): its claims.  The step
    after such a clear finds no gradients (GL007's question), but the misplaced call is the
    clear, and it gets one finding."""
    only_one = len(stepped_optimizers(loop)) == 1
    return frozenset(finding.event.key for walk in walks(loop) for finding in _walk(file, loop, walk, only_one))


def _pending(file, events, z_index, optimizer, only_one) -> list[int]:
    """Indexes of the backward passes before `z_index` whose gradients `optimizer` has not
    used yet: since its last step or clear.  Each optimizer on its own: another
    optimizer's step between them consumes nothing of this one's."""
    start = -1
    for k in range(z_index - 1, -1, -1):
        event = events[k]
        if event.kind == S and _same(file, event.optimizer, optimizer):
            start = k
            break
        if event.kind == Z and touches(file, event, optimizer, only_one):
            start = k
            break
    return start, [k for k in range(start + 1, z_index) if events[k].kind == B]


def _lost_here(walk, start, fresh, z_index, step_index):
    """The last backward of the clear's own iteration whose gradients it surely throws away.

    A backward that another optimizer's step followed counts only when this optimizer
    was cleared earlier in the same iteration (`Z_b; B_a; B_b; S_a; Z_b; S_b`), or when
    no backward follows this optimizer's step in the iteration (`Z_a; B; S_a; Z_c; S_c`:
    the one backward was for both).  Otherwise it may well have been the other
    optimizer's (`Z_d; B_d; S_d; Z_g; S_g; B_g` is GL007's).
    """
    events, iteration = walk.events, walk.iteration
    cleared_here = start >= 0 and events[start].kind == Z and iteration[start] == iteration[z_index]
    backward_after = any(
        events[m].kind == B and iteration[m] == iteration[step_index] for m in range(step_index + 1, len(events))
    )
    for k in reversed(fresh):
        if iteration[k] != iteration[z_index]:
            return None
        if cleared_here or not backward_after or not any(events[m].kind == S for m in range(k + 1, z_index)):
            return k
    return None


def _freezes_a_part(file, loop, z, optimizer) -> bool:
    """`for p in self.last_layer.parameters(): p.grad = None` while the optimizer steps the whole
    head: a chosen part skips this step (DINO's frozen last layer), the rest keeps its gradients
    (rules.md: a deliberate partial clear is no GL002)."""
    if not z.per_parameter or z.module is None or optimizer is None:
        return False
    held = {file.bindings.canonical(t) for t in file.bindings.optimizer_params(optimizer) or ()}
    module = file.bindings.canonical(z.module)
    if not held and loop.kind == OWN_STEP:
        # a function read on its own, whose optimizer its callers hand it (what it holds is
        # unknown): a part of something (`head.last_layer`) may be a part of what it steps
        return "." in module
    # inside a module the optimizer steps, and holding none of them whole (`optimizer` may be
    # read as stepping several modules: the file's other bindings of that name count too)
    return any(is_under(module, t) and module != t for t in held) and not any(is_under(t, module) for t in held)


def _used_by_its_optimizer(file, event, optimizer) -> bool:
    """A method of the optimizer's own class that the checker does not read (Sophia's
    `update_hessian()` on an iteration that skips the step): it may have been what that
    iteration's backward was for, not the later step."""
    return event.kind == Z and event.unknown_target and _same(file, event.optimizer, optimizer)


def _same(file, a, b) -> bool:
    return a is not None and b is not None and file.bindings.same(a, b)


def _judge(file, loop, walk, z_index, only_one):
    events = walk.events
    z = events[z_index]
    backward_between = False
    for j in range(z_index + 1, len(events)):
        later = events[j]
        if later.kind == B:
            backward_between = True
        elif later.kind == S:
            if _freezes_a_part(file, loop, z, later.optimizer):
                return None
            if not touches(file, z, later.optimizer, only_one):
                if later.accumulation_guarded:
                    # another optimizer's step of an accumulation window: this clear's own step may
                    # follow it (`opt_a.zero_grad(); opt_b.zero_grad(); B; if (i + 1) % k == 0:
                    # opt_a.step(); opt_b.step()` misplaces two clears)
                    continue
                return None
            start, fresh = _pending(file, events, z_index, later.optimizer, only_one)
            if not fresh:
                return None
            # Deliberate accumulation: the backward ran in an iteration that skipped this
            # optimizer's step on an accumulation condition, so this step was meant to use it.
            # (A backward that some step has consumed since, such as another optimizer's, was not.)
            accumulated = [
                i
                for i in fresh
                if _deferred_for(file, walk.paths[walk.iteration[i]], later.optimizer)
                and not any(events[m].kind == S or _used_by_its_optimizer(file, events[m], later.optimizer) for m in range(i + 1, z_index))
            ]
            if accumulated and z.key in loop.own and events[accumulated[-1]].key not in loop.own and later.key not in loop.own:
                # A clear at the top of each epoch, before the inner loop that accumulates and
                # steps: it only drops the previous epoch's last, partial window (not this rule's
                # question).  (When this loop steps, its own iterations are the window, and the
                # inner loop only splits one micro-batch.)
                accumulated = []
            here = _lost_here(walk, start, fresh, z_index, j) if walk.iteration[j] == walk.iteration[z_index] else None
            fix = None
            if not backward_between and here is not None:
                lost = events[here]
                lost_when = at(lost)
                fix = move(file.context, z, later, after=True, description=f"Move {z.text} after {later.text}")
            elif accumulated and (z.off_boundary or not z.accumulation_guarded or _discards_window(z, later)):
                # (a clear under another accumulation test may start the next window:
                # `if i % k == 0: Z` ... `if (i + 1) % k == 0: S`; the `else:` of the step's
                # own test surely runs between a micro-batch and its step, and a clear under the
                # step's own test before this iteration's backward, such as a prepared optimizer's
                # at the top of `with accelerator.accumulate(model):`, runs on the step's
                # iteration, after the window's other micro-batches)
                deferred = [i for i in fresh if _deferred_for(file, walk.paths[walk.iteration[i]], later.optimizer)]
                lost_index, earlier = _lost_in_window(walk, deferred, accumulated, z_index, later)
                lost = events[lost_index]
                lost_when = at_earlier(lost, z, earlier)
            else:
                return None
            return RawFinding(
                "GL002",
                f"{z.text} discards the gradients of {lost_when} before {at(later)}",
                z,
                ((lost, "the backward whose gradients are lost"), (later, "the step that should use them")),
                loop,
                fix,
            )
    return None


def _lost_in_window(walk, deferred, accumulated, z_index, step) -> tuple[int, bool]:
    """Which backward the message names, and whether it ran in an earlier iteration: the one
    the skipped step would have followed (the last written before the step) of an earlier
    iteration that skipped it; or, when the clear's own iteration skipped the step, the
    backward written between the clear and the step, whose gradients the clear of the next
    iteration throws away.  A backward written before the clear in the clear's own iteration
    may be another network's loss (a GAN clears the discriminator after the generator's
    backward on purpose): it is named only when there is no other."""
    events, iteration = walk.events, walk.iteration
    earlier = [i for i in deferred if iteration[i] != iteration[z_index]]
    if earlier:
        before = [i for i in earlier if _written_before(events[i], step)]
        return (before or earlier)[-1], True
    if deferred:
        after = []
        for i in range(z_index + 1, len(events)):
            if iteration[i] != iteration[z_index] or events[i].kind in (S, Z):
                break
            if events[i].kind == B and _written_before(events[z_index], events[i]) and _written_before(events[i], step):
                after.append(i)
        if after:
            return after[-1], True
    return accumulated[-1], iteration[accumulated[-1]] != iteration[z_index]


def _written_before(event, step) -> bool:
    if event.path != step.path or event.via != step.via:
        return False
    return (event.span.line, event.span.col) < (step.span.line, step.span.col)


def _discards_window(clear, step) -> bool:
    """Does the clear run under the step's own accumulation test: on the step's iteration
    (reached before its backward), or on exactly the iterations that skip the step
    (`if (i + 1) % k != 0: Z` beside `if (i + 1) % k == 0: S`)?"""
    if clear.boundary is None or step.boundary is None:
        return False
    return clear.boundary == step.boundary or clear.boundary == "!" + step.boundary


def _deferred_for(file, path, optimizer) -> bool:
    return any(_same(file, d, optimizer) for d in path.deferred)


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """The rule's move when it found one; with accumulation, the clear goes after the
    guarded step; a module's clear where only the optimizer's is a no-op (inside
    `accelerator.accumulate`) becomes the optimizer's."""
    clear = raw.event
    step = next((e for e, _ in raw.related if e.kind == S), None)
    candidates = [raw.fix]
    if step is None:
        return candidates
    if raw.fix is None:
        candidates.append(move(file.context, clear, step, after=True, description=f"Move {clear.text} after {step.text}"))
    match = ZERO_GRAD.match(clear.text)
    if match and step.optimizer and match.group("receiver") != step.optimizer and names_in(step.text, step.optimizer):
        candidates.append(replace_receiver(file, clear, step.optimizer))
    return candidates


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A clear threw away fresh gradients that this step of their optimizer should have used."""
    if not replay.any_discarded:  # no clear of the run threw fresh gradients away
        return
    number, name = replay.stepping
    for pid in event.params:
        g = replay.grad(pid)
        if g.discarded is None:
            continue
        z_index, lost, per_epoch = g.discarded
        g.discarded = None
        if g.unusable:  # `if not isfinite(loss): zero_grad(); continue`: nothing was meant to use them
            continue
        lost_sites = {tuple(replay.events[j].sites) for j in lost}
        now_sites = {tuple(replay.events[j].sites) for j in g.sources}
        # B; Z; S loses everything; Z between micro-batches of the same backward loses accumulation.
        if g.sources and not (lost_sites & now_sites):
            continue
        z = replay.events[z_index]
        if _freezes_a_part_at_run_time(replay, z, event):
            continue
        # Across iterations, only the loop's regular clear discards an accumulation, and not
        # when it runs once per epoch before the accumulating loop (rules.md, GL002).
        if g.sources and (per_epoch or tuple(z.sites[:1]) not in replay.regular_clears):
            continue
        first = replay.events[lost[0]]
        iterations = sorted({replay.iteration.get(j, 1) for j in lost})
        used = "found no gradient" if not g.sources else "used only the backward passes after it"
        replay.detect(
            "GL002", z,
            f"{replay.call(z)} cleared the gradient of {replay.run.param(pid)} written by {replay.call(first)} "
            f"(iteration{'s' if len(iterations) > 1 else ''} {replay.join(iterations)}) before step {number} of {name} "
            f"({replay.where(event)}), which {used}",
            also=[event, first],
        )
        return


def _freezes_a_part_at_run_time(replay, z, step) -> bool:
    """`p.grad = None` for a strict part of what the step updates, while the rest keeps fresh
    gradients, is that part frozen for this step (DINO's last layer), as the check reads a
    per-parameter clear of a subset (rules.md, GL002); a zero_grad() call is never one."""
    if z.raw.get("api") in ZERO_GRAD_CALLS:
        return False
    cleared, stepped = set(z.params), set(step.params)
    return cleared < stepped and any(replay.grad(pid).sources for pid in stepped - cleared)


RULE = Rule(
    code="GL002",
    name="zero-grad-discards-gradients",
    summary="zero_grad() runs after backward() and before the step that should use those gradients.",
    rationale=(
        "A clear between backward() and step() throws the fresh gradients away, so the step uses nothing "
        "(or only part of an accumulated sum). With accumulation, clearing every micro-batch while stepping "
        "every k-th keeps only the last micro-batch. Inside `with accelerator.accumulate(model):` the prepared "
        "optimizer's zero_grad() acts only on the syncing micro-step, which accumulate() decides on entry: "
        "at the top of the block, before the backward, it throws away the k-1 micro-batches accumulated "
        "before that step. Clear after the step, or in the loop body before the `with`."
    ),
    wrong="for x, y in loader:\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
    right="for x, y in loader:\n    opt.zero_grad()\n    loss = loss_fn(model(x), y)\n    loss.backward()\n    opt.step()\n",
    default=True,
    check=check,
    criterion=Criterion(on="S", detect=runtime, reported_on="Z", followed_by="S", order=1),
    fixes=fixes,
    # the step after a misplaced clear finds no gradients (GL007), or a setting's loop never clears (GL001)
    supersedes=("GL001", "GL007"),
    claims=discarding_clears,
    fix="Safe: moves the clear after the step it came before (with accumulation: into the step's block, right after the step). Unsafe: inside `accelerator.accumulate`, `model.zero_grad()` becomes the prepared optimizer's `zero_grad()`.",
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
        """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    optimizer.zero_grad()
    with accelerator.accumulate(model):
        accelerator.backward(model(batch))
        optimizer.step()
""",
    ),
    invalid=(
        Invalid(
            """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.zero_grad()  # expect: GL002
    opt.step()
""",
            fixed="""
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()  # expect: GL002
""",
        ),
        Invalid(
            """
for i, (x, y) in enumerate(loader):
    optimizer.zero_grad()  # expect: GL002
    loss_fn(model(x), y).backward()
    if (i + 1) % 8 == 0:
        optimizer.step()
""",
            fixed="""
for i, (x, y) in enumerate(loader):
    loss_fn(model(x), y).backward()
    if (i + 1) % 8 == 0:
        optimizer.step()
        optimizer.zero_grad()  # expect: GL002
""",
        ),
        Invalid(
            """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        loss = model(batch)
        accelerator.backward(loss)
        optimizer.step()
        model.zero_grad()  # expect: GL002
""",
            fixed="""
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        loss = model(batch)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()  # expect: GL002
""",
        ),
        Invalid(
            """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        optimizer.zero_grad()  # expect: GL002
        accelerator.backward(model(batch))
        optimizer.step()
""",
            fixed="""
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(batch))
        optimizer.step()
        optimizer.zero_grad()  # expect: GL002
""",
        ),
        """
for i, (x, y) in enumerate(loader):
    loss_fn(model(x), y).backward()
    if (i + 1) % k == 0:
        opt.step()
    else:
        opt.zero_grad()  # expect: GL002
""",
    ),
)
