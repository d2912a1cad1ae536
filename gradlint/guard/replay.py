"""The replay of `gradlint verify`, fed one event at a time as the user's run makes them.

verify replays a finished log (verify/verdicts.py `Analysis`); the guard is that same replay,
so that each rule's run-time criterion (its RULE's `criterion`, in gradlint/rules/) is the one
definition of its bug for both.  What differs is only what a live run needs:

- events arrive one by one, so a criterion that waits for a later step (`at_next_step`) is
  kept until that step comes;
- a run may last for days, so the replay keeps a bounded window: old events, and the provenance
  lists of gradients that are never cleared (a GL001 run), are trimmed to their recent part;
- a gradient's state is what the guard knows without reading it: None (no gradient), present,
  or zeroed by a clear that kept the tensor (`zero_grad(set_to_none=False)`).

Pure Python: no torch here (gradlint/guard/watcher.py makes the events).
"""

from __future__ import annotations

import linecache
from typing import Callable, Optional

from gradlint.verify.verdicts import Analysis, Event, Run, display_path

PRESENT = {"norm": None, "sum": None, "zero": False}  # a gradient the guard has not read
ZEROED = {"norm": 0.0, "sum": 0.0, "zero": True}  # kept by a clear that zeroes in place
_KEEP = 64  # provenance entries kept per gradient: more than any accumulation window's backward passes
_STEPS_KEPT = 4  # step indexes kept per optimizer: the criteria read the last two
_PRUNE_EVERY = 64  # events between two trims of the window (each costs a pass over the gradients)


class GuardEvent(Event):
    """An event of the live run.  `state(pid)` is the event's own after-state for the parameters
    it changed (a clear), else the live state, which the watcher updates after each event is fed:
    asked of the previous event while a clear is fed, it is the state before that clear."""

    __slots__ = ("kind", "params", "sites", "site")  # plain attributes: the replay reads them per parameter

    def __init__(self, raw: dict, live: dict):
        self.raw = raw
        raw["_live"] = live
        # What Event works out from `raw` on every read, worked out once: the watcher's
        # parameters are already ints and its sites already (path, line) pairs.
        self.kind = raw["kind"]
        self.params = raw.get("params", ())
        self.sites = raw["sites"]
        self.site = self.sites[0] if self.sites else (None, 0)
        if "own" not in raw:  # (no after-state of its own: `state` is the live state, asked per parameter)
            self.state = live.get

    def state(self, pid: int):
        own = self.raw.get("own")
        if own is not None and pid in own:
            return own[pid]
        return self.raw["_live"].get(pid)


class Window:
    """The replay's events by index, dropping the old ones (`prune`); iterating gives events."""

    def __init__(self):
        self.items: dict[int, Event] = {}
        self.count = 0

    def append(self, event: Event) -> int:
        self.items[self.count] = event
        self.count += 1
        return self.count - 1

    def __getitem__(self, index: int) -> Event:
        return self.items[index]

    def __iter__(self):
        return iter(self.items.values())

    def __len__(self) -> int:
        return self.count

    def prune(self, keep_from: int) -> None:
        for index in [i for i in self.items if i < keep_from]:
            del self.items[index]


class Recent:
    """An optimizer's step indexes: how many there were, and the last few (the criteria read the
    count, the last two and the position of a recent one)."""

    def __init__(self):
        self.total = 0
        self.tail: list[int] = []

    def append(self, index: int) -> None:
        self.total += 1
        self.tail.append(index)
        del self.tail[:-_STEPS_KEPT]

    def __len__(self) -> int:
        return self.total

    def __getitem__(self, position: int) -> int:
        if position >= 0:
            position -= self.total
        return self.tail[position]

    def __contains__(self, index) -> bool:
        return index in self.tail

    def index(self, index: int) -> int:
        return self.total - len(self.tail) + self.tail.index(index)


class LiveRun(Run):
    """The run's names, asked only when a report is written: `names(kind, key)` finds them."""

    def __init__(self, names: Callable[[str, int], Optional[str]]):
        super().__init__()
        self._names = names
        self._cache: dict = {}

    def _named(self, kind: str, key) -> Optional[str]:
        if (kind, key) not in self._cache:
            self._cache[(kind, key)] = self._names(kind, key)
        return self._cache[(kind, key)]

    def optimizer(self, oid) -> str:
        return self._named("optimizer", oid) or f"optimizer #{oid}"

    def param(self, pid) -> str:
        return self._named("param", pid) or f"parameter #{pid}"


class LiveReplay(Analysis):
    """Analysis fed live: `add(event)` replays one event and returns the detections it made new."""

    def __init__(self, run: LiveRun):
        super().__init__(run, None)
        self.home = None  # every line is reported with its file
        self.events = Window()
        self.waiting: dict = {}  # oid -> {site of the waiting event: then}
        self._ever_cleared = set()
        self.new: list = []
        self.reported: dict = {}  # (path, line) of a reported call -> its code

    def add(self, event: Event) -> list:
        index = self.events.append(event)
        oid = event.raw.get("oid")
        if event.kind == "S" and oid in self.waiting:
            for then in self.waiting.pop(oid).values():
                then(event)
        self.feed(index, event)
        if index % _PRUNE_EVERY == _PRUNE_EVERY - 1:
            self._prune(index)
        found, self.new = self.new, []
        return found

    # --- the replay's hooks, made live ------------------------------------------------

    def at_next_step(self, index: int, oid, then) -> None:
        self.waiting.setdefault(oid, {}).setdefault(tuple(self.events[index].site), then)

    def detect(self, code, event, evidence, also=()):
        """A new detection is reported, unless one of the other calls it is made of was already
        reported under another code (one bug, one finding: a step moved before its backward is
        GL007, and the clear that later throws that backward away is the same bug seen again).
        Two codes on the same call are both reported: a clip above a scaled backward is GL005
        and, on the micro-batches before unscale_, also GL006."""
        detection = super().detect(code, event, evidence, also)
        if detection.count == 1:
            own = (detection.file, detection.line)
            if not any(self.reported.get(site, code) != code for site in detection.calls if site != own):
                self.new.append(detection)
                self.reported.setdefault((detection.file, detection.line), code)
        return detection

    def call(self, event: Event) -> str:
        path, line = event.site
        if path and "text" not in event.raw:
            event.raw["text"] = linecache.getline(path, line).strip()
        return super().call(event)

    def where(self, event: Event) -> str:
        path, line = event.site
        if path is None:
            return "an unknown line"
        return f"{display_path(path)}:{line}"

    def _on_S(self, i, event):
        self.steps.setdefault(event.raw.get("oid"), Recent())
        super()._on_S(i, event)

    def _on_Z(self, i, event):
        super()._on_Z(i, event)
        if not event.raw.get("inferred"):
            self._ever_cleared.update(event.params)

    def _prune(self, index: int) -> None:
        """Drop the events no gradient's provenance, no step count and no waiting criterion refers to."""
        oldest = index - 1  # the previous event: a clear compares with its state
        for g in self.grads.values():
            # provenance never cleared (a GL001 run) keeps its recent part: trimmed here, once per
            # window, not per parameter of every event (it grows by at most one per event meanwhile)
            if len(g.sources) > _KEEP:  # (a list: past `_added`'s first item)
                del g.sources[:-_KEEP]
            if len(g.consumed) > _KEEP:
                del g.consumed[:-_KEEP]
            for indexes in (g.sources, g.consumed, g.clips):
                if indexes:
                    oldest = min(oldest, indexes[0])
            if g.scaled is not None:
                oldest = min(oldest, g.scaled)
            if g.discarded is not None:
                oldest = min([oldest, g.discarded[0], *g.discarded[1]])
        for steps in self.steps.values():
            if isinstance(steps, Recent) and steps.tail:
                oldest = min(oldest, steps.tail[0])
        self.events.prune(oldest)
        for key in [k for k in self.iteration if k < oldest]:
            del self.iteration[key]
