"""From an event log to verdicts.  Pure Python: runs in the parent, never imports torch.

A replay of the run: each tracked parameter carries the provenance of its
current gradient: which backward passes wrote it (``sources``), and which
steps already used it (``consumed``), and what clips, clears and unscale_
calls did to it.  At each event, every rule whose run-time criterion watches
that kind of event (its RULE's `criterion`, in its own module under
gradlint/rules/) is asked whether the run shows its bug there; this module
knows no rule by its code.

A detection remembers every line of the user's stack at the events that
prove it, so a static finding reported on a helper's line or on its call
site matches it (same code, same file, one of those lines).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence

CONFIRMED, NOT_REPRODUCED, NOT_REACHED, RUNTIME_ONLY = "confirmed", "not reproduced", "not reached", "runtime only"
NOT_PROBED = "not probed"
MANUAL_OID = 0  # probes.MANUAL_OID: parameters updated by hand


SCRIPT_DIR: Optional[str] = None  # the folder of the script under verify (set by the command)


def display_path(path: Optional[str]) -> str:
    """A path as the checker prints it: relative to the working directory (`../proj/train.py` for a
    script given so, and the files beside it), absolute elsewhere.  Every path in one report
    (verdicts, evidence, the end of the run) is spelled this way."""
    if not path:
        return "?"
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    if not relative.startswith(".."):
        return relative
    if SCRIPT_DIR and os.path.abspath(path).startswith(os.path.join(SCRIPT_DIR, "")):
        return relative
    return path


@dataclass
class Event:
    raw: dict

    def __getattr__(self, key):
        try:
            return self.raw[key]
        except KeyError:
            raise AttributeError(key)

    @property
    def sites(self) -> list[tuple[str, int]]:
        return [(site[0], site[1]) for site in self.raw.get("sites", ())]

    @property
    def site(self) -> tuple[Optional[str], int]:
        sites = self.sites
        return sites[0] if sites else (None, 0)

    @property
    def col(self) -> int:
        """The 1-based column of the call at the event's line (0 when the probes could not tell)."""
        sites = self.raw.get("sites") or ()
        return int(sites[0][3]) if sites and len(sites[0]) > 3 and sites[0][3] else 0

    @property
    def params(self) -> list[int]:
        return [int(p) for p in self.raw.get("params", ())]

    def state(self, pid: int):
        return self.raw.get("state", {}).get(str(pid))


@dataclass
class Run:
    """What the child reported, plus how the process ended."""

    events: list[Event] = field(default_factory=list)
    params: dict[int, dict] = field(default_factory=dict)  # pid -> {"name", "oid", "shape"}
    optimizers: dict[int, str] = field(default_factory=dict)
    started: Optional[bool] = None
    start_error: str = ""
    target_file: Optional[str] = None
    end: dict = field(default_factory=dict)  # reason: completed|steps|timeout|exit|exception|crash|not-started
    output: str = ""
    subprocesses: list = field(default_factory=list)  # training started in processes without probes
    writes: list = field(default_factory=list)  # files the script tried to write (refused or allowed)
    scalers_disabled: list = field(default_factory=list)  # GradScalers that scaled nothing (off, or no CUDA)

    @staticmethod
    def display_path(path: Optional[str]) -> str:
        """A path as this report spells every path (display_path): what a rule's run-time
        criterion names in its evidence, without importing the verifier."""
        return display_path(path)

    @staticmethod
    def from_records(records: list[dict]) -> "Run":
        run = Run()
        for record in records:
            kind = record.get("type")
            if kind == "start":
                run.started = bool(record.get("ok"))
                run.start_error = record.get("error", "")
                run.target_file = record.get("file")
            elif kind == "param":
                run.params[int(record["pid"])] = record
            elif kind == "event":
                if isinstance(record.get("state"), list):
                    record["state"] = _expand(record["state"])
                run.events.append(Event(record))
            elif kind == "subprocess":
                run.subprocesses.append({k: v for k, v in record.items() if k != "type"})
            elif kind == "write":
                run.writes.append({k: v for k, v in record.items() if k != "type"})
            elif kind == "scaler-disabled":
                run.scalers_disabled.append(record)
            elif kind == "names":
                run.optimizers = _distinct({int(k): v for k, v in record.get("optimizers", {}).items()})
            elif kind == "end":
                run.end = record
        return run

    def optimizer(self, oid) -> str:
        return self.optimizers.get(oid) or f"optimizer #{oid}"

    def param(self, pid) -> str:
        return self.params.get(pid, {}).get("name", f"param {pid}")

    @property
    def steps(self) -> int:
        return sum(1 for e in self.events if _counts_as_step(e))

    def steps_by_optimizer(self) -> dict:
        counts: dict = {}
        for e in self.events:
            if _counts_as_step(e):
                counts[e.raw.get("oid")] = counts.get(e.raw.get("oid"), 0) + 1
        return counts


def _distinct(names: dict) -> dict:
    """Optimizers that share a name (each network of a SAC agent keeps its own `self.optimizer`)
    get their number after it, so that a report never folds two of them into one."""
    counts: dict = {}
    for name in names.values():
        counts[name] = counts.get(name, 0) + 1
    return {oid: f"{name} #{oid}" if counts[name] > 1 else name for oid, name in names.items()}


def _expand(items: list) -> dict:
    """The probes' compact state (see probes._encode) as {pid: {"norm", "sum", "zero"} or None}."""
    state = {}
    for pid, item in enumerate(items, start=1):
        if item is None:
            state[str(pid)] = None
        elif item == "?":
            state[str(pid)] = {"norm": None, "sum": None, "zero": False}
        elif isinstance(item, list):
            state[str(pid)] = {"norm": item[0], "sum": item[1], "zero": item[0] == 0.0}
        else:
            state[str(pid)] = {"norm": item, "sum": None, "zero": item == 0.0}
    return state


def _counts_as_step(event) -> bool:
    """A step that ran (or a GradScaler skipped); a manual update spread over several clears is one."""
    return event.kind == "S" and not event.raw.get("prevented") and not event.raw.get("continued")


@dataclass
class Detection:
    code: str
    file: Optional[str]
    line: int
    evidence: str
    lines: set = field(default_factory=set)  # (file, line) pairs a static finding may sit on
    count: int = 1
    col: int = 0
    calls: set = field(default_factory=set)  # (file, line) of the calls themselves (no caller's line)
    message: str = ""  # the bug as the run saw it, when the checker's message may name another object
    by_line: dict = field(default_factory=dict)  # (file, line) -> the evidence told from that call's side

    @property
    def key(self):
        return (self.code, self.file, self.line)


_NONE: tuple = ()  # an empty list of indexes: one shared tuple, no list per parameter until one is needed


def _added(indexes, index: int) -> list:
    """`indexes` with `index` appended: a list of its own once it has an item (read only, `()`)."""
    if indexes:
        indexes.append(index)
        return indexes
    return [index]


class _Several(tuple):
    """The optimizers of a parameter that has more than one (the usual one is kept as itself)."""


_NO_OWNER = object()


@dataclass(slots=True)  # one per parameter tensor, for the whole of a guarded run: kept small
class _Grad:
    # Lists of event indexes, in increasing order (events are fed in order); `()` while empty (the common state after a clear), so that a clear
    # allocates nothing per parameter.  Add with `_added`, never `.append`.
    sources: Sequence[int] = _NONE  # indexes of backward events that wrote it
    consumed: Sequence[int] = _NONE  # indexes of steps that used it
    scaled: Optional[int] = None  # the scaled backward that wrote it, until unscale_
    clips: Sequence[int] = _NONE  # clips since the last clear or step
    discarded: Optional[tuple] = None  # (clear index, sources) of fresh gradients a clear threw away
    unusable: bool = False  # the discarded gradients were NaN or inf: no step was meant to use them
    last_b: int = -1
    last_s: int = -1


def _finite(state) -> bool:
    norm = state.get("norm") if isinstance(state, dict) else None
    return not isinstance(norm, float) or math.isfinite(norm)


def _lines(event: Event) -> set:
    return set(event.sites)


def _join(numbers) -> str:
    items = [str(n) for n in numbers]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


class Analysis:
    def __init__(self, run: Run, home: Optional[str] = None):
        self.run = run
        self.home = os.path.realpath(home) if home else run.target_file
        self.events = run.events
        self.grads: dict[int, _Grad] = {pid: _Grad() for pid in run.params}
        # pid -> the optimizer that steps it, or a _Several of them (read with `owners_of`): one
        # optimizer per parameter is the rule, and a set each would cost the guard ~200 B a tensor
        self.owners: dict[int, object] = {}
        for pid, record in run.params.items():
            self.own(pid, record.get("oid"))
        self.steps: dict[int, list[int]] = {}  # oid -> indexes of its steps
        self.fresh: dict[int, bool] = {}  # oid -> a backward wrote its parameters since its last step
        self.iteration: dict[int, int] = {}  # backward index -> how many times its line had run (1 = first)
        self.runs: dict[tuple, int] = {}  # a backward's line -> how many times it ran
        self.step_counted = False  # a backward inside the running step(closure) was counted already
        self.detections: dict[tuple, Detection] = {}
        # Sites of the loop's regular clears: ones that ran at least once without throwing anything
        # away, or that also cleared gradients a step had used.  A clear that only ever throws
        # fresh gradients away is a deliberate skip (a bad batch), not a lost accumulation.
        self.regular_clears: set = set()
        self.clear_runs: dict[tuple, int] = {}  # a clear's site -> index of its last run
        self.stepping: tuple = (0, "")  # the step being replayed: its number, its optimizer's name
        self._stale_at: Optional[tuple] = None  # (step index, stale_use's answer) for the last step asked
        self._ever_cleared: Optional[set] = None  # the parameters some clear of the run covered
        self.criteria: Optional[dict] = None  # criteria_by_kind(), read on the first event
        self._handlers: dict = {}  # kind -> (_on_<kind>, its criteria, _after_<kind>): looked up once per kind
        self._owned: dict = {}  # oid -> the params list of a step that made it an owner of each (see `feed`)
        # What the run has shown at least once, so that a criterion whose bug needs it can tell in
        # one test, not one per parameter, that this step cannot show it (a correct loop never
        # sets them): a backward through an enabled scaler, a clear that threw fresh gradients
        # away, a backward onto gradients a step had used, a backward onto gradients a clip had
        # bounded.  Only ever set: each stays true once a gradient was in that state.
        self.any_scaled = False
        self.any_discarded = False
        self.any_piled = False
        self.any_clipped_early = False

    # --- helpers ---------------------------------------------------------------

    def where(self, event: Event) -> str:
        path, line = event.site
        if path is None:
            return "an unknown line"
        # A hand-written update is seen by its effect, at the next probed call.
        before = "a hand-written update seen before " if event.raw.get("manual") else ""
        if self.home and path == self.home:
            return f"{before}line {line}"
        return f"{before}{display_path(path)}:{line}"

    def call(self, event: Event) -> str:
        text = event.raw.get("text") or event.raw.get("api", "")
        return f"`{text}` at {self.where(event)}" if text else self.where(event)

    def grad(self, pid) -> _Grad:
        found = self.grads.get(pid)  # (setdefault would build a _Grad on every call: the guard asks per event)
        if found is None:
            found = self.grads[pid] = _Grad()
        return found

    def own(self, pid, oid) -> None:
        """Optimizer `oid` steps parameter `pid` (one more owner, or one it had)."""
        known = self.owners.get(pid, _NO_OWNER)
        if known is _NO_OWNER:
            self.owners[pid] = oid
        elif isinstance(known, _Several):
            if oid not in known:
                self.owners[pid] = _Several((*known, oid))
        elif known != oid:
            self.owners[pid] = _Several((known, oid))

    def owners_of(self, pid) -> tuple:
        known = self.owners.get(pid, _NO_OWNER)
        if known is _NO_OWNER:
            return ()
        return known if isinstance(known, _Several) else (known,)

    def detect(self, code, event: Event, evidence: str, also=()):
        path, line = event.site
        key = (code, path, line)
        found = self.detections.get(key)
        lines = _lines(event)
        calls = {event.site}
        for other in also:
            lines |= _lines(other)
            calls.add(other.site)
        if found is None:
            self.detections[key] = Detection(code, path, line, evidence, lines, col=event.col, calls=calls)
        else:
            found.count += 1
            found.lines |= lines
            found.calls |= calls
        return self.detections[key]

    def stepped_oids(self):
        return {oid for oid, steps in self.steps.items() if steps}

    # --- the walk -----------------------------------------------------------------

    def analyse(self) -> list[Detection]:
        """Replay the run: each event updates the gradients' provenance, and every rule whose
        criterion watches that kind of event is asked whether the run shows its bug there."""
        for index, event in enumerate(self.events):
            self.feed(index, event)
        return list(self.detections.values())

    def feed(self, index: int, event: Event) -> None:
        """One event of the run, in order: update the provenance, then ask the criteria that
        watch its kind.  The replay of a whole log calls it for each event; gradlint.guard calls
        it as each event happens in the user's own run."""
        handlers = self._handlers.get(event.kind)
        if handlers is None:
            if self.criteria is None:
                self.criteria = criteria_by_kind()
            handlers = self._handlers[event.kind] = (
                getattr(self, f"_on_{event.kind}", None),
                tuple(criterion.detect for criterion in self.criteria.get(event.kind, ())),
                getattr(self, f"_after_{event.kind}", None),
            )
        before, criteria, after = handlers
        oid = event.raw.get("oid")
        if oid is not None and event.kind in ("S", "O"):  # whoever steps a parameter owns it too
            params = event.params
            if self._owned.get(oid) is not params:  # (the same list as a step before: all owned already)
                owners = self.owners
                for pid in params:
                    if owners.get(pid, _NO_OWNER) != oid:  # (per parameter: the usual case first)
                        self.own(pid, oid)
                # an owner is never taken back, so this very list (never changed: the guard's
                # events share one per optimizer) needs no second pass
                self._owned[oid] = params
        if not event.raw.get("in_step"):
            self.step_counted = False
        if before is not None:
            before(index, event)
        for detect in criteria:
            detect(self, index, event)
        if after is not None:
            after(index, event)

    def at_next_step(self, index: int, oid, then) -> None:
        """Call `then(step)` with the next step of optimizer `oid` after event `index`, if one
        comes (a criterion whose bug needs that step to happen: GL008).  A log is read ahead;
        a live replay calls `then` when that step comes."""
        later = next((e for e in self.events[index + 1:] if e.kind == "S" and e.raw.get("oid") == oid), None)
        if later is not None:
            then(later)

    def _on_B(self, i, event):
        # The iteration a backward ran in: how many times its line ran.  The evaluations of one
        # step(closure) (LBFGS calls its closure several times) are one run.
        site = event.site
        if not (event.raw.get("in_step") and self.step_counted):
            self.runs[site] = self.runs.get(site, 0) + 1
        self.step_counted = bool(event.raw.get("in_step"))
        self.iteration[i] = self.runs[site]
        overwrites, scaled = event.raw.get("overwrites"), event.raw.get("scaled")
        if scaled:
            self.any_scaled = True
        grads, owners, fresh = self.grads, self.owners, self.fresh
        marked = _NO_OWNER  # the owner just marked fresh: the next parameter's is usually the same
        # (per parameter of every backward: the grad lookup, `_added` and the owner's flag inline)
        for pid in event.params:
            g = grads.get(pid)
            if g is None:
                g = grads[pid] = _Grad()
            if overwrites:
                g.sources, g.consumed, g.clips = [i], _NONE, _NONE
            else:
                if g.consumed:
                    self.any_piled = True
                if g.clips:
                    self.any_clipped_early = True
                if g.sources:
                    g.sources.append(i)
                else:
                    g.sources = [i]
            if scaled:
                g.scaled = i
            g.last_b = i
            owner = owners.get(pid, _NO_OWNER)  # (owners_of, without a tuple per parameter)
            if owner is not marked:
                marked = owner
                if isinstance(owner, _Several):
                    for oid in owner:
                        fresh[oid] = True
                elif owner is not _NO_OWNER:
                    fresh[owner] = True

    def step_number(self, index) -> int:
        oid = self.events[index].raw.get("oid")
        return self.steps.get(oid, []).index(index) + 1 if index in self.steps.get(oid, []) else 0

    def _on_Z(self, i, event):
        previous = self.events[i - 1] if i else None
        site = tuple(event.sites[:1])
        last_run = self.clear_runs.get(site, -1)
        threw_away = cleared_used = False
        in_step = event.raw.get("in_step")
        before_of = previous.state if previous is not None else None
        after_of = event.state
        grads = self.grads
        for pid in event.params:
            before = before_of(pid) if before_of is not None else None
            after = after_of(pid)
            if after is not None and not after.get("zero"):
                continue  # the call did not clear this one (a clear that failed, or a manual write)
            g = grads.get(pid)
            if g is None:
                g = grads[pid] = _Grad()
            sources, consumed = g.sources, g.consumed
            if consumed:
                cleared_used = cleared_used or before is not None
                # (indexes are in increasing order: none is unused when the last source was used)
                unused = [j for j in sources if j > consumed[-1]] if sources and sources[-1] > consumed[-1] else _NONE
            else:
                unused = sources
            # A closure clearing between its own evaluations (LBFGS) throws nothing away.
            if before is not None and unused and not in_step:
                # A clear that runs less often than the step (once per epoch, before the inner
                # loop that accumulates) only drops what was left after the last step.
                g.discarded = (i, list(unused), g.last_s > last_run >= 0)
                g.unusable = not _finite(before)
                threw_away = self.any_discarded = True
            elif consumed:
                g.discarded = None
            g.sources, g.consumed, g.clips, g.scaled = _NONE, _NONE, _NONE, None
        if not event.raw.get("inferred"):
            self.clear_runs[site] = i
            if not threw_away or cleared_used:
                self.regular_clears.add(site)

    def _on_U(self, i, event):
        if event.raw.get("error"):
            return
        for pid in event.params:
            self.grad(pid).scaled = None


    def _on_C(self, i, event):
        grads = self.grads
        for pid in event.params:
            g = grads.get(pid)
            if g is None:
                g = grads[pid] = _Grad()
            g.clips = _added(g.clips, i)

    def _on_S(self, i, event):
        """Count the step (the criteria read `stepping`: its number and its optimizer's name)."""
        oid = event.raw.get("oid")
        steps = self.steps.setdefault(oid, [])
        if not event.raw.get("continued"):  # (the rest of a manual update spread over several clears)
            steps.append(i)
        self.stepping = (len(steps), self.run.optimizer(oid))

    def _after_S(self, i, event):
        """The step used its parameters' gradients: what a backward writes next piles onto them."""
        self.fresh[event.raw.get("oid")] = False
        by_scaler = event.raw.get("via") == "scaler"
        state, grads = event.state, self.grads
        for pid in event.params:
            g = grads.get(pid)
            if g is None:
                g = grads[pid] = _Grad()
            if g.sources and state(pid) is not None:
                g.consumed = _added(g.consumed, i)
            g.last_s = i
            g.clips = _NONE
            if by_scaler:
                g.scaled = None

    def stale_use(self, i, event):
        """A step uses a gradient that also holds backward passes an earlier step already used:
        (the parameter, the index of that earlier step, of the first backward after it, the
        clears that ran in between, the evidence, whether a clear stood in the wrong place), or
        None.  Checked when a step consumes, not when the backward writes: piled-up gradients
        cleared before any step uses them did no harm.  Worked out once per step, GL001 and
        GL003 both ask; which one it is follows the checker's reading (rules.md): a clear of
        some of the step's parameters ran in between, or the run never clears them at all
        while it clears others: GL003 (the clear is misplaced or aimed at the wrong target);
        no clear of them in between, though they are cleared elsewhere (a second update of the
        optimizer after another network's clear): GL001."""
        if not self.any_piled:  # no backward ever added to used gradients: no step can use them again
            return None
        if self._stale_at and self._stale_at[0] == i:
            return self._stale_at[1]
        found = None
        for pid in event.params:
            g = self.grad(pid)
            if g.consumed and g.sources and max(g.sources) > g.consumed[-1] and event.state(pid) is not None:
                consumer = g.consumed[-1]
                writer_index = next(j for j in g.sources if j > consumer)  # the first backward into used gradients
                clears = [
                    j for j in range(consumer + 1, writer_index)
                    if self.events[j].kind == "Z" and not self.events[j].raw.get("inferred")
                ]
                number, name = self.stepping
                lines = sorted({self.where(self.events[j]) for j in g.sources})
                iterations = sorted({self.iteration.get(j, 1) for j in g.sources})
                evidence = (
                    f"step {number} of {name} at {self.where(event)} used gradients accumulated over backward "
                    f"passes at {_join(lines)} in iterations {_join(iterations)}"
                )
                found = (pid, consumer, writer_index, clears, evidence, self._misplaced(clears, event))
                break
        self._stale_at = (i, found)
        return found

    def _misplaced(self, clears: list, step: Event) -> bool:
        if not clears:
            return False
        stepped = set(step.params)
        if any(set(self.events[j].params) & stepped for j in clears):
            return True
        if self._ever_cleared is None:
            self._ever_cleared = {
                pid for e in self.events if e.kind == "Z" and not e.raw.get("inferred") for pid in e.params
            }
        return not (stepped & self._ever_cleared)

    @staticmethod
    def join(numbers) -> str:
        return _join(numbers)

# --- matching static findings ----------------------------------------------------------


@dataclass
class Verdict:
    code: str
    path: str
    line: int
    col: int
    message: str
    verdict: str
    evidence: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _runs_at(run: Run, path: str, line: int) -> list:
    """(index, event) of the probed calls that ran at this line.  An inferred event only borrows the
    line where it was noticed; the evaluations a step(closure) makes (LBFGS's clears and backward
    passes) are part of that one step, not runs of the step's line."""
    return [
        (index, event) for index, event in enumerate(run.events)
        if (path, line) in event.sites and not event.raw.get("inferred")
        and (not event.raw.get("in_step") or event.site == (path, line))
    ]


def _ran(run: Run, path: str, line: int) -> int:
    """How many probed calls ran at this line."""
    return len(_runs_at(run, path, line))


def end_reason(run: Run, home: Optional[str] = None) -> str:
    end = run.end
    reason = end.get("reason", "crash")
    where = ""
    if end.get("line"):
        path = end.get("file")
        where = f" at line {end['line']}" if not home or path == home else f" at {display_path(path)}:{end['line']}"
    if reason == "completed":
        return "the script finished"
    if reason == "steps":
        budget = end.get("budget")
        if budget is not None and len(run.steps_by_optimizer()) > 1:
            return f"the step budget ({budget} steps per optimizer) was used up"
        return f"the step budget ({end.get('steps', run.steps)} optimizer steps) was used up"
    if reason == "timeout":
        seconds = end.get("seconds")
        return f"the run timed out after {seconds:g} s" if isinstance(seconds, (int, float)) else "the run timed out"
    if reason == "exit":
        return f"the script called sys.exit({end.get('code')!r}){where}"
    if reason == "exception":
        message = str(end.get("message"))
        if "\n" in message:  # "at line N" after a message of several lines would dangle at its end
            kind, _, rest = message.partition(": ")
            return f"the script raised {kind}{where}: {rest}"
        return f"the script raised {message}{where}"
    if reason == "not-started":
        return f"the script could not be started: {end.get('message')}"
    return f"the script's process died ({end.get('message', 'no report')})"


def unverified_reason(run: Run, home: Optional[str] = None) -> Optional[str]:
    """Why nothing could be verified (exit 2), or None when the run got far enough to judge."""
    reason = run.end.get("reason")
    if run.steps == 0 and run.subprocesses:
        return (
            f"the training ran in a subprocess ({_spawned(run, home)}), which verify does not probe; "
            "call the training function directly (world size 1) to verify it"
        )
    if run.steps > 0 or reason in ("completed", "steps"):
        return None
    base = f"{end_reason(run, home)}, before the first optimizer step"
    message = str(run.end.get("message", ""))
    if run.end.get("exception") == "EOFError" or message.startswith("EOFError"):
        return base + " (it read from stdin, and verify gives the script no input: pass answers as arguments after --)"
    if reason == "exit" and run.end.get("code") == 2:
        return base + " (a command-line error? give the script's arguments after --)"
    if run.end.get("exception") in ("FileNotFoundError", "PermissionError") and "gradlint verify refused" in message:
        return base + " (it tried to write a file: re-run with --allow-writes to let it)"
    if reason == "timeout":
        return base + " (raise --timeout, or give the script a smaller data set)"
    return base


def _spawned(run: Run, home: Optional[str]) -> str:
    first = run.subprocesses[0]
    sites = first.get("sites") or []
    where = ""
    if sites:
        path, line = sites[0][0], sites[0][1]
        where = f" at line {line}" if home and path == home else f" at {display_path(path)}:{line}"
    return f"{first.get('api')}({first.get('target')}){where}"


def criteria_by_kind() -> dict[str, list]:
    """The rules' run-time criteria, by the kind of event each watches, in the order they are
    asked (several look at one step; the first to detect tells a shared call's evidence)."""
    from gradlint.rules.registry import all_rules

    by_kind: dict[str, list] = {}
    for rule in all_rules():
        if rule.criterion is not None:
            by_kind.setdefault(rule.criterion.on, []).append(rule.criterion)
    for criteria in by_kind.values():
        criteria.sort(key=lambda criterion: criterion.order)
    return by_kind


def _criterion(code: str):
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code().get(code)
    return rule.criterion if rule is not None else None


def _path(code: str) -> tuple:
    """A finding's events: the kind of event it is reported on, and the kind that must follow
    it for the bug to show (GL001: a step then another backward into the same parameters)."""
    criterion = _criterion(code)
    return (criterion.reported_on, criterion.followed_by) if criterion is not None else (None, "S")


def _path_ran(finding, run: Run, home: str) -> Optional[str]:
    """None when the finding's path ran in the order that would show the bug and the probes saw
    the parameters involved; otherwise why it did not (for "not reached")."""
    line = finding.span.line
    at_line = _runs_at(run, home, line)
    if not at_line:
        return f"line {line} never ran: {end_reason(run, home)}"
    if len(at_line) < 2:
        return f"line {line} ran only once: {end_reason(run, home)}"
    seen = [(i, e) for i, e in at_line if e.params or (e.kind == "L" and e.raw.get("oid") is not None)]
    if not seen:
        return (f"line {line} ran {len(at_line)} times, but the probes saw no parameter there "
                "(its parameters belong to no optimizer verify could see)")
    kind, follow = _path(finding.code)
    first = seen[0][0]
    pids = {pid for _, e in seen for pid in e.params}
    oid = seen[0][1].raw.get("oid")
    followed = any(
        e.kind == follow and (set(e.params) & pids or (oid is not None and e.raw.get("oid") == oid))
        for e in run.events[first + 1:] if not e.raw.get("prevented")
    )
    if not followed:
        what = {"S": "no optimizer step of its parameters", "B": "no backward into its parameters"}[follow]
        return f"line {line} ran {len(at_line)} times, but {what} came after it: {end_reason(run, home)}"
    for related in finding.related:
        if not any((_site(getattr(related, "path", None), home), related.span.line) in e.sites for e in run.events):
            return f"line {related.span.line} ({related.message or 'the related event'}) never ran: {end_reason(run, home)}"
    return None


def _site(path: Optional[str], home: str) -> str:
    """The real path of a finding's (or a related location's) file, as the probes name files:
    `home` (the finding's own, or the script) when it names none or one that is not there."""
    if not path:
        return home
    real = os.path.realpath(path)
    return real if os.path.exists(real) else home


def _related_match(finding, detections, used, home):
    """A detection of the same code at one of the finding's related lines: the checker blames
    the misplaced clear (GL003), the run sees the step that used the stale gradients."""
    related = {(_site(getattr(r, "path", None), home), r.span.line) for r in finding.related}
    return next((d for d in detections if d.code == finding.code and id(d) not in used and related & d.lines), None)


def _same_call(finding, detection: Detection, home: str) -> bool:
    """The finding and a detection of another code name the same misplaced call: the finding sits
    on one of the calls the detection's evidence is made of (an actor's step before its backward
    is GL007; the run also sees the clear that later throws that backward away)."""
    return detection.code != finding.code and (home, finding.span.line) in detection.calls


def _nothing_to_act_on(finding, findings, run: Run, home: str) -> Optional[str]:
    """Why a clip (or clear) at the finding's line could not show its bug: every time it ran, there
    was no gradient for it to act on, because something before it had emptied them."""
    kind = _path(finding.code)[0]
    if kind not in ("C", "Z"):
        return None
    runs = [(i, e) for i, e in _runs_at(run, home, finding.span.line) if e.kind == kind and e.params]
    if not runs:
        return None
    for index, event in runs:
        before = event if kind == "C" else (run.events[index - 1] if index else None)
        if before is not None and any(_has_gradient(before.state(pid)) for pid in event.params):
            return None
    index, event = runs[0]
    what = "clip" if kind == "C" else "clear"
    emptied = next(
        (e for e in reversed(run.events[:index]) if e.kind == "Z" and set(e.params) & set(event.params)), None
    )
    analysis = Analysis(run, home)
    if emptied is None:
        cause = "no backward had written them"
    else:
        cause = f"{analysis.call(emptied)} had emptied them"
        other = next((f for f in findings if f.span.line == emptied.site[1] and emptied.site[0] == home), None)
        if other is not None:
            cause += f" (the {other.code} at line {other.span.line})"
    return f"the {what} at line {finding.span.line} ran {len(runs)} times but never had a gradient to act on: {cause}"


def _has_gradient(state) -> bool:
    return isinstance(state, dict) and not state.get("zero")


def judge(findings, run: Run, home: str) -> tuple[list[Verdict], list[Detection]]:
    """One verdict per static finding, and the runtime-only detections.

    One bug, one verdict: a detection of another code that names the same misplaced call as a
    finding is that finding's bug seen from the run, never a second, runtime-only finding.
    """
    home = os.path.realpath(home)
    detections = Analysis(run, home).analyse()
    used: set = set()
    verdicts = []
    for finding in findings:
        # the file the finding stands in: the script's, or a module of its project whose misplaced
        # call the script's loop runs (a finding stands on the misplaced call)
        site = _site(finding.path, home)
        match = next(
            (d for d in detections if d.code == finding.code and (site, finding.span.line) in d.lines),
            None,
        ) or _related_match(finding, detections, used, site)
        line = finding.span.line
        message = finding.message
        if match is not None:
            used.add(id(match))
            verdict, evidence = CONFIRMED, match.by_line.get((site, line), match.evidence)
            message = match.message or message
        else:
            missing = _path_ran(finding, run, site)
            times = _ran(run, site, line)
            if missing is None:
                missing = _nothing_to_act_on(finding, findings, run, site)
            criterion = _criterion(finding.code)
            masked = criterion.masked(run, home) if missing is None and criterion and criterion.masked else None
            if masked is not None:
                verdict, evidence = NOT_REACHED, masked
            elif missing is None:
                verdict = NOT_REPRODUCED
                evidence = f"line {line} ran {times} times over {run.steps} optimizer steps and the gradients behaved correctly"
            elif run.subprocesses and times == 0:
                verdict = NOT_PROBED
                evidence = f"training ran in a subprocess ({_spawned(run, home)}), which verify does not probe"
            else:
                verdict, evidence = NOT_REACHED, missing
        verdicts.append(Verdict(finding.code, finding.path, line, finding.span.col, message, verdict, evidence))
    for detection in detections:
        if id(detection) in used:
            continue
        # the finding on the detection's own call first, then one on a call its evidence is made of
        same = [i for i, f in enumerate(findings) if _same_call(f, detection, _site(f.path, home))]
        same.sort(key=lambda i: (_site(findings[i].path, home), findings[i].span.line) != (detection.file, detection.line))
        if not same:
            continue
        used.add(id(detection))
        verdict = verdicts[same[0]]
        if verdict.verdict != CONFIRMED:
            verdict.verdict = CONFIRMED
            verdict.evidence = f"the run saw this call's bug as {detection.code} at line {detection.line}: {detection.evidence}"
    runtime_only = [d for d in detections if id(d) not in used]
    runtime_only.sort(key=lambda d: (d.file or "", d.line, d.code))
    return verdicts, runtime_only
