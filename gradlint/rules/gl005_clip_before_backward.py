"""GL005: a clip before the backward whose gradients the next step uses."""

from gradlint.fix import move
from gradlint.core.events import S, U
from gradlint.rules.base import RawFinding, at_later
from gradlint.rules.clip_placement import clips_before_backward, next_of
from gradlint.rules.repairs import move_up, next_of_kind, order, previous_of
from gradlint.rules.registry import Criterion, Invalid, Rule


def check(file):
    for loop, walk, i, following in clips_before_backward(file):
        clip = walk.events[i]
        later_iteration = walk.iteration[walk.events.index(following, i)] != walk.iteration[i]
        step = next_of(walk, walk.events.index(following, i), S)
        if step is None:
            continue  # no step on this walk (one under a condition the loop never changes): nothing to shape
        fix = None
        if step is not None and walk.iteration[walk.events.index(step, i)] == walk.iteration[i]:
            fix = move(file.context, clip, step, after=False, description=f"Move the clip before {step.text}")
        yield RawFinding(
            "GL005",
            f"{clip.text} runs before {at_later(following, clip, later_iteration)}: it clips stale or partial gradients, "
            "not the ones the next step uses",
            clip,
            ((following, "the backward that adds gradients after the clip"),),
            loop,
            fix,
        )
    for clip in file.lightning_clips:
        yield RawFinding(
            "GL005",
            f"{clip.text} in training_step runs before Lightning calls backward (automatic optimization): "
            "set gradient_clip_val on the Trainer or clip in configure_gradient_clipping",
            clip,
        )


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """Move the backward up above the clip (and the unscale_ right before it), or the clip down before the step."""
    clip = raw.event
    backward = raw.related[0][0] if raw.related else None
    if backward is None:
        return [raw.fix]
    events = order(raw.loop)
    step = next_of_kind(events, backward, S)
    # An unscale_ right before the clip belongs with it: the backward goes above both.
    unscale = previous_of(events, clip)
    top = unscale if unscale is not None and unscale.kind == U else clip
    up = move_up(file, backward, top, f"Move {backward.text} before {top.text}")
    down = (
        move(file.context, clip, step, after=False, description=f"Move the clip before {step.text}")
        if step is not None
        else None
    )
    return [up, down] if top is not clip else [down, up]


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A clip followed by another backward into the same gradients before this step uses them."""
    if not replay.any_clipped_early:  # no backward of the run came after a clip of its gradients
        return
    for pid in event.params:
        g = replay.grad(pid)
        # (asked per parameter of every step: the common cases first.  Indexes are kept in the
        # order of the events, so no clip came before a backward when the first clip follows
        # the last backward.)
        if not (g.clips and g.sources) or g.clips[0] > g.sources[-1]:
            continue
        last = max(g.sources)
        early = [c for c in g.clips if c < last]  # clips some backward came after
        if early and event.state(pid) is not None:
            clip = replay.events[early[0]]
            later = replay.events[max(g.sources)]
            replay.detect(
                "GL005", clip,
                f"clip {replay.call(clip)} ran before {replay.call(later)}, whose gradient step "
                f"{len(replay.steps.get(event.raw.get('oid'), []))} of {replay.run.optimizer(event.raw.get('oid'))} "
                f"({replay.where(event)}) used: the clip did not bound it",
                also=[event],
            )
            return


RULE = Rule(
    code="GL005",
    name="clip-before-backward",
    summary="Gradient clipping runs before the backward() whose gradients the next step uses.",
    rationale=(
        "A clip only shapes an update when it sits after the last backward() and before step(). Before "
        "backward() it clips old, empty or partial gradients; per micro-batch it clips partial sums."
    ),
    wrong=(
        "for x, y in loader:\n    opt.zero_grad()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    loss_fn(model(x), y).backward()\n    opt.step()\n"
    ),
    right=(
        "for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n"
    ),
    default=True,
    check=check,
    criterion=Criterion(on="S", detect=runtime, reported_on="C", followed_by="S", order=3),
    fixes=fixes,
    fix='Safe: moves the clip right before the step, or moves the backward() up before the clip (and the unscale_ that goes with it), whichever leaves no other finding.',
    valid=(
        """
for i, (x, y) in enumerate(loader):
    loss_fn(model(x), y).backward()
    if (i + 1) % 4 == 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
""",
        """
class Lit(pl.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.loss(batch)
""",
        """
model, optimizer = accelerator.prepare(model, optimizer)
for batch in loader:
    with accelerator.accumulate(model):
        accelerator.backward(model(batch))
        if accelerator.sync_gradients and max_grad_norm != 0:
            accelerator.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        optimizer.zero_grad()
""",
    ),
    invalid=(
        Invalid(
            """
for x, y in loader:
    optimizer.zero_grad()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL005
    loss_fn(model(x), y).backward()
    optimizer.step()
""",
            fixed="""
for x, y in loader:
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL005
    optimizer.step()
""",
        ),
        Invalid(
            """
for i, (x, y) in enumerate(loader):
    loss_fn(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL005
    if (i + 1) % 4 == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
            fixed="""
for i, (x, y) in enumerate(loader):
    loss_fn(model(x), y).backward()
    if (i + 1) % 4 == 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL005
        optimizer.step()
        optimizer.zero_grad()
""",
        ),
        """
import lightning as L
class Lit(L.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.loss(batch)
        torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)  # expect: GL005
        return loss
""",
    ),
)
