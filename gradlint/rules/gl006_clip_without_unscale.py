"""GL006: clipping AMP-scaled gradients without unscaling them first."""

from dataclasses import replace

from gradlint.core.findings import SAFE, UNSAFE
from gradlint.fix import insert, move
from gradlint.core.events import B, C, S, U
from gradlint.model.flow import Walk, iteration_paths, walks
from gradlint.rules.base import RawFinding, at, later_in_iteration
from gradlint.rules.clip_placement import misplaced_clips
from gradlint.rules.repairs import DOTTED, SCALE_CALL, names_in, next_of_kind, order
from gradlint.rules.registry import Criterion, Invalid, Rule


def check(file):
    misplaced = None
    for loop in file.loops:
        if not any(e.kind == C and not e.unscales for e in loop.events):
            continue
        if misplaced is None:
            misplaced = misplaced_clips(file)  # GL004's or GL005's: moving the clip is the one finding
        found: dict = {}  # clip key -> its first finding
        runs: dict = {}  # flagged clip key -> the walks whose first iteration runs it (linear, not pairs)
        for number, walk in enumerate(walks(loop)):
            for i, clip in enumerate(walk.events):
                if clip.kind != C or clip.unscales or clip.key in misplaced:
                    continue
                finding = _judge(loop, walk, i)
                if finding is not None:
                    found.setdefault(clip.key, finding)
                    if walk.iteration[i] == 0:
                        runs.setdefault(clip.key, set()).add(number)
        yield from _one_per_missing_unscale(found, _Together(runs))
    yield from _functions(file)


class _Together:
    """`(a, b) in together`: one iteration (one walk) runs both flagged clips."""

    def __init__(self, runs: dict):
        self.runs = runs

    def __contains__(self, pair) -> bool:
        a, b = pair
        return a != b and not self.runs.get(a, set()).isdisjoint(self.runs.get(b, set()))


def _one_per_missing_unscale(found: dict, together):
    """One finding for clips that are alternatives of each other (no iteration runs two of
    them: `if hasattr(opt, "clip_grad_norm"): ... else: clip_grad_norm_(...)`) after the same
    scaled backward: one missing unscale_ before them is one bug.  It is reported on the first
    of them, with the others as related locations."""
    groups: dict = {}
    for key, finding in found.items():
        backward = finding.related[0][0].key if finding.related else None
        groups.setdefault(backward, []).append(finding)
    for group in groups.values():
        group.sort(key=lambda f: (f.event.path or "", f.event.span.line, f.event.span.col))
        while group:
            first = group.pop(0)
            alternatives = [f for f in group if all((f.event.key, o.event.key) not in together for o in [first])]
            alternatives = [f for i, f in enumerate(alternatives)
                            if all((f.event.key, o.event.key) not in together for o in alternatives[:i])]
            group = [f for f in group if f not in alternatives]
            if alternatives:
                extra = tuple((f.event, "another clip of these scaled gradients, on another path") for f in alternatives)
                first = replace(first, related=first.related + extra)
            yield first


def _functions(file):
    """Functions that clip and step through a GradScaler, read on their own: one call of each
    (its paths through one call, not two iterations in a row), for the clips no loop of the
    file runs (a loop that calls the function judges them with what comes before the call).
    One finding per clip."""
    in_loops = {e.key for loop in file.loops for e in loop.events}
    for function in file.functions:
        if all(e.key in in_loops for e in function.events if e.kind == C):
            continue  # every clip of it runs in a loop of the file, which judges it
        reported: set = set()
        for path in iteration_paths(function) or ():
            walk = Walk(path.events, (0,) * len(path.events), (path,))
            for i, clip in enumerate(walk.events):
                if clip.kind != C or clip.unscales or clip.key in in_loops or clip.key in reported:
                    continue
                finding = _judge(function, walk, i, first_only=True)
                if finding is not None:
                    reported.add(clip.key)
                    yield finding


def _judge(loop, walk, i, first_only=False):
    clip = walk.events[i]
    backward = _last_backward_or_unscale(walk, i, first_only)
    if backward is None:
        # No backward before it here: the caller's.  A step through the GradScaler right after the
        # clip says the gradients it sees are scaled.
        step = _next_of(walk, i, (B, U, S))
        if step is None or step.kind != S or not step.by_scaler:
            return None
        return RawFinding(
            "GL006",
            f"{clip.text} clips gradients that {at(step)} expects multiplied by the GradScaler's scale "
            f"(the scaled backward runs before this code): call unscale_(optimizer) on the scaler before clipping",
            clip,
            ((step, "the step through the GradScaler"),),
            loop,
            optimizer=step.optimizer,
        )
    if backward.kind != B or not backward.scaled:
        return None
    return RawFinding(
        "GL006",
        f"{clip.text} clips gradients still multiplied by the GradScaler's scale "
        f"(from {at(backward)}): call scaler.unscale_(optimizer) before clipping",
        clip,
        ((backward, "the scaled backward"),),
        loop,
        optimizer=getattr(later_in_iteration(walk, i, S), "optimizer", None),  # for the fix
    )


def _last_backward_or_unscale(walk, index, first_only=False):
    events = walk.events
    for j in range(index - 1, -1, -1):
        if first_only and walk.iteration[j] != walk.iteration[index]:
            return None
        if events[j].kind in (B, U):
            return events[j]
    return None


def _next_of(walk, index, kinds):
    """The next event of these kinds in the same iteration."""
    events = walk.events
    for j in range(index + 1, len(events)):
        if walk.iteration[j] != walk.iteration[index]:
            return None
        if events[j].kind in kinds:
            return events[j]
    return None


# --- the fix -------------------------------------------------------------------------


def fixes(raw, file):
    """Move a late unscale_ up before the clip, or insert one."""
    clip = raw.event
    backward = raw.related[0][0] if raw.related else None
    events = order(raw.loop)
    step = next_of_kind(events, clip, S)
    optimizer = raw.optimizer or (step.optimizer if step is not None else None)
    late = next_of_kind(events, clip, U)
    if late is not None and (step is None or events.index(late) < events.index(step)):
        # unscale_ is there, but after the clip: move it up
        return [move(file.context, late, clip, after=False, description=f"Move {late.text} before the clip")]
    if any(e.kind == U for e in events):
        return []  # a second unscale_ before one step raises at run time
    match = SCALE_CALL.match(backward.text) if backward is not None else None
    if match is None or not optimizer or not DOTTED.match(optimizer):
        return []
    call = f"{match.group('scaler')}.unscale_({optimizer})"
    resolved = step is not None and names_in(step.text, optimizer)
    return [insert(file.context, call, clip, False, f"Insert {call} before the clip", SAFE if resolved else UNSAFE)]


# --- at run time: what `gradlint verify` watches for to confirm a finding ---------------


def runtime(replay, i, event):
    """A clip on gradients written through an enabled GradScaler with no unscale_ since."""
    if not replay.any_scaled:  # no backward of the run went through an enabled scaler
        return
    scaled = [pid for pid in event.params if replay.grad(pid).scaled is not None and event.state(pid) is not None]
    if scaled:
        writer = replay.events[replay.grad(scaled[0]).scaled]
        factor = writer.raw.get("scale")
        norm = event.raw.get("norm")
        measured = f"measured norm {norm:.4g} on" if isinstance(norm, (int, float)) else "ran on"
        replay.detect(
            "GL006", event,
            f"clip {replay.call(event)} {measured} gradients scaled by {factor:g} "
            f"({replay.call(writer)} went through scaler.scale): no scaler.unscale_ ran in between"
            if isinstance(factor, (int, float)) else
            f"clip {replay.call(event)} {measured} scaled gradients from {replay.call(writer)}: no scaler.unscale_ ran in between",
            also=[writer],
        )


def _disabled_scaler(run, home: str):
    """Why the run cannot show the bug on this device: the GradScaler scaled nothing."""
    if not run.scalers_disabled:
        return None
    first = run.scalers_disabled[0]
    sites = first.get("sites") or []
    where = ""
    if sites:
        where = f" at line {sites[0][1]}" if sites[0][0] == home else f" at {run.display_path(sites[0][0])}:{sites[0][1]}"
    why = first.get("why") or "it was disabled"
    return (f"could not be reproduced on this device: the GradScaler used{where} was disabled ({why}), so the "
            "gradients it clipped were never scaled; the clip still needs scaler.unscale_ before it where the "
            "scaler is enabled")


RULE = Rule(
    code="GL006",
    name="clip-without-unscale",
    summary="With a GradScaler, gradients are clipped while still scaled (no scaler.unscale_ first).",
    rationale=(
        "scaler.scale(loss).backward() leaves gradients multiplied by the loss scale (65536 at first). "
        "Clipping them to max_norm before scaler.unscale_(optimizer) clips by a threshold thousands of times "
        "too small."
    ),
    wrong=(
        "for x, y in loader:\n    opt.zero_grad()\n    scaler.scale(loss_fn(model(x), y)).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(opt)\n    scaler.update()\n"
    ),
    right=(
        "for x, y in loader:\n    opt.zero_grad()\n    scaler.scale(loss_fn(model(x), y)).backward()\n"
        "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n"
    ),
    default=True,
    check=check,
    criterion=Criterion(on="C", detect=runtime, reported_on="C", followed_by="S", order=0, masked=_disabled_scaler),
    fixes=fixes,
    fix="Inserts `<scaler>.unscale_(<optimizer>)` right before the clip, or moves an unscale_ written after the clip up before it. Safe when the loop's own step names that optimizer, unsafe otherwise.",
    valid=(
        """
scaler = torch.amp.GradScaler()
for x, y in loader:
    opt.zero_grad()
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
""",
        """
for batch in loader:
    accelerator.backward(model(batch))
    accelerator.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad()
""",
        """
use_amp = False
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
for x, y in loader:
    opt.zero_grad()
    scaler.scale(loss_fn(model(x), y)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
""",
    ),
    invalid=(
        Invalid(
            """
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
for x, y in loader:
    opt.zero_grad()
    scaler.scale(loss_fn(model(x), y)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
    scaler.step(opt)
    scaler.update()
""",
            fixed="""
scaler = torch.cuda.amp.GradScaler(enabled=use_amp)
for x, y in loader:
    opt.zero_grad()
    scaler.scale(loss_fn(model(x), y)).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
    scaler.step(opt)
    scaler.update()
""",
        ),
        Invalid(
            """
from torch.amp import GradScaler
grad_scaler = GradScaler("cuda")
for x, y in loader:
    grad_scaler.scale(loss_fn(model(x), y)).backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)  # expect: GL006
    grad_scaler.step(opt)
    grad_scaler.update()
    opt.zero_grad()
""",
            fixed="""
from torch.amp import GradScaler
grad_scaler = GradScaler("cuda")
for x, y in loader:
    grad_scaler.scale(loss_fn(model(x), y)).backward()
    grad_scaler.unscale_(opt)
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)  # expect: GL006
    grad_scaler.step(opt)
    grad_scaler.update()
    opt.zero_grad()
""",
        ),
        """
class Updater:
    def step(self, grad_scaler):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: GL006
        grad_scaler.step(self.optimizer)
        grad_scaler.update()
""",
    ),
)
