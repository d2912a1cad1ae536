"""What the guard knows about the user's run, and the events it makes of it.

The patches (gradlint/guard/patches.py) call one method per gradient event: a backward, a
clear, a clip, an unscale_, a step, a scheduler step.  Each becomes an event of the replay that
`gradlint verify` uses (gradlint/guard/replay.py), so each rule's run-time criterion decides.

What it costs, and why it never changes a result: it reads no gradient's values, only whether
a parameter has one (`p.grad is None`, a Python attribute, no device synchronisation); which
parameters a backward wrote comes from `Tensor.register_post_accumulate_grad_hook`, a flag per
parameter.  Everything it keeps is per parameter tensor, per optimizer, or per source line.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import Optional

import torch

from gradlint.core.api_names import BACKWARD, PARAM_GROUPS, PARAMS_KEYWORD, WRAPPED_OPTIMIZER_ATTRIBUTE
from gradlint.core.event_labels import (
    GRAD_ZERO,
    INFERRED_BACKWARD,
    INFERRED_CLEAR,
    OPTIMIZER_STEP,
    SCALER_UNSCALE,
    SCHEDULER_STEP,
    UNSEEN_BACKWARD,
)
from gradlint.guard.replay import PRESENT, ZEROED, GuardEvent, LiveReplay, LiveRun
from gradlint.guard.report import Report, deliver
from gradlint.verify.probes import _LIBRARY, _USER, _file_kind

_SITES = 4  # user frames kept per event: the call, and the helpers' callers a report names
_PID_LISTS_KEPT = 4  # pid lists of one length kept for `shared`: a loop's step, backward and clip


class Watcher:
    def __init__(self, mode: str):
        self.mode = mode
        self.live: dict[int, object] = {}  # pid -> None | PRESENT | ZEROED
        self.replay = LiveReplay(LiveRun(self._name))
        self.params: dict[int, int] = {}  # id(param) -> pid (refs[pid]() is the parameter)
        # Per parameter tensor, indexed by pid (pids are 1, 2, ...: lists, not dicts, cost 8 B a tensor)
        self.refs: list = [None]  # pid -> weakref of the parameter
        self.hooked = bytearray(1)  # pid -> 1 once its hook is registered
        self.hooks: list = []  # the hooks' handles, removed by uninstall
        self._pid_lists: dict[int, list] = {}  # len -> the last pid lists of that length (see `shared`)
        self.optimizers: dict[int, tuple] = {}  # id(opt) -> (weakref, oid, signature, pids)
        self.scheduler_names: dict[int, str] = {}
        self.touched: list = []  # parameters the hooks saw accumulate since the last backward event
        # The hook of every parameter, one object for all (a closure per parameter cost ~170 B
        # each): it is handed the parameter, whose pid `backward_done` looks up.
        self.accumulated = self.touched.append
        self.depth = {"B": 0, "Z": 0, "C": 0, "S": 0, "L": 0}  # nested calls of one event (torch's own)
        self.in_step = 0  # inside a step(closure)
        self.scaler_step = 0  # inside GradScaler.step
        self.stepped_in_scaler = False
        self.building_scheduler = 0  # LRScheduler.__init__ steps once itself
        self.reports: list[Report] = []
        self.pending_clear: Optional[tuple] = None  # (sites, pids) of `p.grad.zero_()` calls on one line
        self.grad_owners: Optional[dict] = None  # data_ptr of a gradient -> pid, rebuilt after a backward
        self.backward_sites: list = []  # of the running backward
        self.backward_scaled = False
        self.frames: list = []  # the user's frames of the event being reported (names come from them)
        self._files: dict[str, tuple] = {}  # a frame's file name -> (its kind, its real path)

    # --- parameters and optimizers ---------------------------------------------------

    def _pid(self, param) -> Optional[int]:
        pid = self.params.get(id(param))
        if pid is not None and self.refs[pid]() is param:
            return pid
        return None

    def track_param(self, param, oid: Optional[int]) -> Optional[int]:
        if not isinstance(param, torch.Tensor):
            return None
        pid = self._pid(param)
        if pid is None:
            pid = len(self.refs)
            self.params[id(param)] = pid
            self.refs.append(weakref.ref(param))
            self.hooked.append(0)
            # A gradient already there was written by a backward before the guard saw this
            # parameter: unknown until the next step, where `_reconcile` counts it as a backward
            # (taken for a used one, a first step after install() would be GL007's "no backward").
            self.live[pid] = None
            self._hook(pid, param)
        if oid is not None:
            self.replay.own(pid, oid)
        return pid

    def _hook(self, pid: int, param) -> None:
        if self.hooked[pid] or not (param.requires_grad and param.is_leaf):
            return
        try:
            self.hooks.append(param.register_post_accumulate_grad_hook(self.accumulated))
            self.hooked[pid] = 1
        except RuntimeError:  # a tensor that takes no hooks: seen through `p.grad is None` only
            pass

    def optimizer(self, opt) -> tuple[int, list]:
        """The optimizer's number and its pids (one list, shared by its events: never changed),
        tracked on first sight and again when its groups change."""
        groups = getattr(opt, PARAM_GROUPS, None) or []
        signature = tuple(len(group.get(PARAMS_KEYWORD, ())) for group in groups)
        known = self.optimizers.get(id(opt))
        if known is not None and known[0]() is opt and known[2] == signature:
            return known[1], known[3]
        oid = known[1] if known is not None and known[0]() is opt else len(self.optimizers) + 1
        pids = []
        for group in groups:
            for param in group.get(PARAMS_KEYWORD, ()):
                pid = self.track_param(param, oid)
                if pid is not None:
                    pids.append(pid)
        pids = self.shared(pids)
        self.optimizers[id(opt)] = (weakref.ref(opt), oid, signature, pids)
        return oid, pids

    def pids_of(self, tensors) -> list[int]:
        pids = []
        params, refs = self.params, self.refs
        for tensor in tensors:  # (`_pid` inline: a clip asks this of every parameter, every step)
            pid = params.get(id(tensor))
            if pid is not None and refs[pid]() is tensor:
                pids.append(pid)
        return self.shared(pids)

    def shared(self, pids: list) -> list:
        """`pids`, or an equal list an earlier event holds: the events of a loop name the same
        parameters again and again (the clip's, the backward's and the step's are the model's),
        and the window of recent events would otherwise keep a list per event, 8 B a tensor each.
        Event pid lists are never changed after the event is made."""
        recent = self._pid_lists.setdefault(len(pids), [])
        for known in recent:
            if known == pids:  # (unequal lists differ early: a backward's order is the reverse)
                return known
        recent.insert(0, pids)
        del recent[_PID_LISTS_KEPT:]
        return pids

    # --- where -------------------------------------------------------------------------

    def sites(self) -> list:
        """(path, line) of the first user frames, innermost first: the first frame outside torch,
        gradlint and installed frameworks (a framework's frame only when no user frame exists)."""
        frames, libraries, sites, library_sites = [], [], [], []
        files = self._files
        frame = sys._getframe(1)
        while frame is not None and len(frames) < _SITES:
            filename = frame.f_code.co_filename
            known = files.get(filename)  # one lookup per frame: this runs on every event
            if known is None:
                known = files[filename] = (_file_kind(filename), os.path.realpath(filename))
            if known[0] == _USER:
                frames.append(frame)
                sites.append((known[1], frame.f_lineno))
            elif known[0] == _LIBRARY and len(libraries) < _SITES:
                libraries.append(frame)
                library_sites.append((known[1], frame.f_lineno))
            frame = frame.f_back
        if frames:
            self.frames = frames
            return sites
        self.frames = libraries
        return library_sites

    # --- events --------------------------------------------------------------------------

    def _event(self, kind: str, sites: list, **raw):
        if self.pending_clear is not None and raw.get("api") != GRAD_ZERO:
            self.flush_clear()
        if kind != "B" and self.touched:
            self.flush_backward()
        raw["kind"], raw["sites"] = kind, sites
        if self.in_step:
            raw["in_step"] = True
        event = GuardEvent(raw, self.live)
        found = self.replay.add(event)
        return event, found

    def _deliver(self, found: list) -> None:
        for detection in found:
            report = Report.of(detection, self.replay)
            self.reports.append(report)
            deliver(report, self.mode)

    def flush_backward(self) -> None:
        """What the hooks saw before another event: the part of the running backward so far (a
        step in a hook of the user's while backward runs: optimizer in backward), or a backward
        no wrapper saw (a C++ caller), at an unknown line."""
        if self.depth["B"]:
            self.backward_done(self.backward_sites, api=BACKWARD, scaled=self.backward_scaled)
        else:
            self.backward_done([], api=UNSEEN_BACKWARD)

    def backward_starts(self) -> None:
        """Before a backward: gradients set to None by hand since the last event (`p.grad = None`)
        were a clear, at an unknown line (the guard does not wrap the `grad` attribute)."""
        if self.pending_clear is not None:
            self.flush_clear()
        gone = [pid for pid, ref in enumerate(self.refs)
                if ref is not None and self.live.get(pid) is not None and (ref() is None or ref().grad is None)]
        if gone:
            own = {pid: None for pid in gone}
            event, _ = self._event("Z", [], api=INFERRED_CLEAR, params=gone, own=own, inferred=True)
            self.live.update(own)
            del event.raw["own"]

    def zeroed_in_place(self, tensor) -> bool:
        """`p.grad.zero_()` (or `.data.zero_()`) on a watched parameter's gradient: a clear, merged
        with the others of the same line.  False for any other tensor."""
        try:
            pointer = tensor.data_ptr()
        except Exception:
            return False
        if not pointer or tensor.requires_grad:
            return False
        if self.grad_owners is None:
            self.grad_owners = {}
            for pid, ref in enumerate(self.refs):
                param = ref() if ref is not None else None
                grad = param.grad if param is not None else None
                if grad is not None and grad.data_ptr():
                    self.grad_owners[grad.data_ptr()] = pid
        pid = self.grad_owners.get(pointer)
        if pid is None:
            return False
        sites = self.sites()
        if self.pending_clear is not None and self.pending_clear[0][:1] != sites[:1]:
            self.flush_clear()
        if self.pending_clear is None:
            self.pending_clear = (sites, [])
        self.pending_clear[1].append(pid)
        return True

    def flush_clear(self) -> None:
        sites, pids = self.pending_clear
        self.pending_clear = None
        self.cleared(sites, pids, False, GRAD_ZERO)

    def backward_done(self, sites: list, api: str, scaled: bool = False) -> None:
        self.grad_owners = None
        pids = self._pids_touched()
        self.touched.clear()
        if not pids:
            return
        self.live.update(dict.fromkeys(pids, PRESENT))
        _, found = self._event("B", sites, api=api, params=pids, scaled=scaled)
        self._deliver(found)

    def _pids_touched(self) -> list:
        """The pids of the parameters in `touched`, once each, in order.  Each is alive (`touched`
        holds it) and tracked (only a tracked parameter gets the hook), so its id is its key."""
        params = self.params
        return self.shared([pid for pid in dict.fromkeys(map(params.get, map(id, self.touched))) if pid is not None])

    def cleared(self, sites: list, pids: list, set_to_none: bool, api: str, oid=None) -> None:
        if set_to_none:
            own = dict.fromkeys(pids)
        else:
            live = self.live
            own = {pid: None if live.get(pid) is None else ZEROED for pid in pids}
        event, found = self._event("Z", sites, api=api, params=pids, own=own, oid=oid)
        self.live.update(own)
        del event.raw["own"]  # the live state says the same from now on; the window keeps no copy
        self._deliver(found)

    def clip(self, sites: list, pids: list, api: str, limit) -> None:
        _, found = self._event("C", sites, api=api, params=pids, limit=limit)
        self._deliver(found)

    def unscaled(self, sites: list, opt, error: Optional[str]) -> None:
        oid, pids = self.optimizer(opt)
        raw = {"error": error} if error else {}
        _, found = self._event("U", sites, api=SCALER_UNSCALE, oid=oid, params=pids, **raw)
        self._deliver(found)

    def step(self, sites: list, opt, closure: bool = False, skipped: bool = False) -> None:
        oid, pids = self.optimizer(opt)
        frozen = self._reconcile(sites, pids)
        raw = {"via": "scaler"} if self.scaler_step else {}
        if skipped:
            raw["skipped"] = True
        _, found = self._event("S", sites, api=OPTIMIZER_STEP, oid=oid, params=pids, frozen=frozen, closure=closure, **raw)
        self._deliver(found)

    def _reconcile(self, sites: list, pids: list) -> list:
        """Before a step, what the hooks could not see: gradients set to None by hand (`p.grad =
        None`) are a clear, gradients that appeared without a hook (an optimizer first seen now,
        a parameter unfrozen since, a gradient assigned by hand or by a sharding wrapper) are a
        backward, both at an unknown line.  Reads `p.grad is None` only.  Returns the step's frozen
        parameters (read in the same pass: this runs on every step)."""
        if self.touched:
            self.flush_backward()
        gone, appeared, frozen = [], [], []
        live, refs = self.live, self.refs
        for pid in pids:
            param = refs[pid]()
            if param is None:
                continue
            if not param.requires_grad:
                frozen.append(pid)
            has = param.grad is not None
            state = live.get(pid)
            if state is not None and not has:
                gone.append(pid)
            elif state is None and has:
                appeared.append(param)
                self._hook(pid, param)
        if gone:
            own = {pid: None for pid in gone}
            event, _ = self._event("Z", [], api=INFERRED_CLEAR, params=gone, own=own, inferred=True)
            self.live.update(own)
            del event.raw["own"]
        if appeared:
            self.touched.extend(appeared)
            self.backward_done([], api=INFERRED_BACKWARD)
        return frozen

    def scheduled(self, sites: list, scheduler, opt, raw: dict) -> None:
        # a wrapper that steps its inner optimizer (Accelerate's, Lightning's): the inner one steps
        while isinstance(getattr(opt, WRAPPED_OPTIMIZER_ATTRIBUTE, None), torch.optim.Optimizer):
            opt = getattr(opt, WRAPPED_OPTIMIZER_ATTRIBUTE)
        oid = self.optimizer(opt)[0] if isinstance(opt, torch.optim.Optimizer) else None
        label = self.scheduler_names.get(id(scheduler))
        if label is None:
            label = self.scheduler_names[id(scheduler)] = _local_name(self.frames, scheduler) or type(scheduler).__name__
        _, found = self._event("L", sites, api=SCHEDULER_STEP, oid=oid, scheduler=label, **raw)
        self._deliver(found)

    # --- names, asked only for a report ---------------------------------------------------

    def _name(self, kind: str, key: int) -> Optional[str]:
        if kind == "optimizer":
            for ref, oid, *_ in self.optimizers.values():
                if oid == key and ref() is not None:
                    return _local_name(self.frames, ref())
            return None
        ref = self.refs[key] if isinstance(key, int) and 0 < key < len(self.refs) else None
        param = ref() if ref is not None else None
        return _param_name(self.frames, param) if param is not None else None


def _local_name(frames, obj) -> Optional[str]:
    """The name the user's code gives `obj` in the frames of the current event (`opt`,
    `self.optimizer`), or None."""
    for frame in frames:
        names = frame.f_locals
        for name, value in names.items():
            if value is obj:
                return name
        owner = names.get("self")
        for name, value in getattr(owner, "__dict__", {}).items():
            if value is obj:
                return f"self.{name}"
    for frame in frames[:1]:
        for name, value in frame.f_globals.items():
            if value is obj:
                return name
    return None


def _param_name(frames, param) -> Optional[str]:
    """`model.fc.weight` for a parameter of a module the user's frames hold."""
    for frame in frames:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in list(scope.items()):
                if isinstance(value, torch.nn.Module):
                    for sub, candidate in value.named_parameters():
                        if candidate is param:
                            return f"{name}.{sub}"
    return None
