"""Probes on torch's gradient machinery.  Imported only in the verify child.

The probes record *facts*, one JSON line per event, and judge nothing: which
call ran (Z B U C S L, plus O for an optimizer being built), from which
lines of the user's code, which parameters it wrote, and the state of every
tracked parameter's ``.grad`` right after it.  gradlint.verify.verdicts reads
the log in the parent (without torch) and decides what was a bug.

Tracked parameters are those of every optimizer, hooked when a param group
is added.  Each probe calls ``before()`` first, which compares the live
gradients with the last snapshot, so a clear that no probe saw
(``p.grad.mul_(0)``, ``p.grad.data.zero_()``) still shows up as an inferred
clear.
"""

from __future__ import annotations

import ast
import json
import linecache
import operator
import os
import sys

import torch
import torch.nn.utils.clip_grad as _clip_module
from torch.optim import lr_scheduler as _sched_module
from torch.optim.optimizer import (
    Optimizer,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

import gradlint
from gradlint.core.api_names import (
    BACKWARD,
    BACKWARD_FUNCTION,
    CLIP_GRAD_VALUE,
    CLIP_VALUE_KEYWORD,
    CLOSURE_KEYWORD,
    CUDA_DEVICE,
    DATA,
    GRAD,
    GRAPH_LEAF_ATTRIBUTE,
    LEARNING_RATE_KEY,
    MAX_NORM_KEYWORD,
    PARAM_GROUPS,
    PARAMS_KEYWORD,
    SCALER_DEVICE_ATTRIBUTE,
    SCHEDULER_OPTIMIZER,
    SHAPE_ONLY_ATTRIBUTES,
    SHAPE_ONLY_SUFFIX,
    SPAWN_FUNCTION,
    SPAWN_MODULE,
    STEP,
    TORCH_CLIP_FUNCTIONS,
    TORCH_PROCESS_PACKAGES,
)
from gradlint.core.event_labels import (
    GRAD_ZERO,
    INFERRED_CLEAR,
    MANUAL_UPDATE,
    MODULE_ZERO_GRAD,
    OPTIMIZER_ZERO_GRAD,
    SCALER_STEP,
    SCALER_UNSCALE,
    SCHEDULER_STEP,
    UNPROBED_BACKWARD,
)

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_GRADLINT_DIR = os.path.dirname(gradlint.__file__) + os.sep
_STDLIB_DIR = os.path.dirname(os.__file__) + os.sep
_MAX_SITES = 12
_GRAD = torch._C.TensorBase.grad  # the real descriptor; Tensor.grad becomes a property over it


class BudgetReached(BaseException):
    """Unwinds the user's script when the step budget or the timeout is used up.

    A BaseException so that the script's own `except Exception:` does not swallow it.
    """

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


_LIBRARY_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
HOME_DIR = ""  # the directory of the script under verify: its files are the user's wherever it lives
_FILE_KINDS: dict[str, int] = {}  # filename -> _OURS, _USER or _LIBRARY
_OURS, _USER, _LIBRARY = 0, 1, 2


def _file_kind(filename: str) -> int:
    kind = _FILE_KINDS.get(filename)
    if kind is None:
        if not filename or filename.startswith("<") or filename.startswith((_TORCH_DIR, _GRADLINT_DIR, _STDLIB_DIR)):
            kind = _OURS
        elif any(part in filename for part in _LIBRARY_PARTS) and not (
                HOME_DIR and os.path.normpath(filename).startswith(HOME_DIR)):
            kind = _LIBRARY
        else:
            kind = _USER
        _FILE_KINDS[filename] = kind
    return kind


def _is_user_file(filename: str) -> bool:
    """Code of the user's or of a library they installed (accelerate, lightning): not torch, gradlint
    or the stdlib."""
    return _file_kind(filename) != _OURS


def user_frames(skip: int = 1):
    """Frames of the user's code, innermost first (torch, gradlint and the stdlib skipped).

    Installed libraries' frames (accelerate's `optimizer.step` wrapper, a trainer's loop) are
    left out, so that an event's line is the line of the user's script that called them; only
    when no frame is the user's (an entry point that lives in site-packages) do they count.
    """
    frames, libraries = [], []
    frame = sys._getframe(skip)
    while frame is not None and len(frames) < _MAX_SITES:
        kind = _file_kind(frame.f_code.co_filename)
        if kind == _USER:
            frames.append(frame)
        elif kind == _LIBRARY and len(libraries) < _MAX_SITES:
            libraries.append(frame)
        frame = frame.f_back
    return frames or libraries


# id(code object) -> (the code object, the start column of each of its instructions, 1-based or 0).
# Keyed by id: a code object's own hash walks its bytecode and constants on every call.
_POSITIONS: dict = {}


def _column(frame) -> int:
    """The 1-based column where the running call (or assignment) of this frame starts, as the
    checker counts columns; 0 when Python does not say (before 3.11)."""
    code = frame.f_code
    known = _POSITIONS.get(id(code))
    if known is not None and known[0] is code:
        columns = known[1]
    else:
        positions = getattr(code, "co_positions", None)
        columns = [(col + 1 if col is not None else 0) for _, _, col, _ in positions()] if positions else []
        _POSITIONS[id(code)] = (code, columns)
    index = frame.f_lasti // 2
    return columns[index] if 0 <= index < len(columns) else 0


def _sites(frames):
    return [[os.path.realpath(f.f_code.co_filename), f.f_lineno, f.f_code.co_name, _column(f)] for f in frames]


def _code_text(line: str) -> str:
    """The source line without its trailing comment (a `#` outside quotes)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#":
            return line[:index].strip()
    return line.strip()


_OWN_GRAD_USES: dict = {}


def _own_grad_use(sites):
    """How the assignment at the site uses the gradient it replaces: "adds" for
    `p.grad = p.grad + g`, `g + p.grad`, `p.grad - g`, `p.grad += g`; "changes" for any other
    value that reads `p.grad` (or `p.grad.data`) of the same `p` and for `p.grad *= s`; None
    when it does not read it (a real overwrite) or the statement is not on one line."""
    if not sites:
        return None
    key = (sites[0][0], sites[0][1])
    if key not in _OWN_GRAD_USES:
        _OWN_GRAD_USES[key] = _statement_grad_use(_code_text(linecache.getline(*key)))
    return _OWN_GRAD_USES[key]


def _statement_grad_use(text: str):
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    stmt = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Attribute) and stmt.target.attr == GRAD:
        return "adds" if isinstance(stmt.op, (ast.Add, ast.Sub)) else "changes"
    if not isinstance(stmt, ast.Assign):
        return None
    owners = {ast.dump(t.value) for t in stmt.targets if isinstance(t, ast.Attribute) and t.attr == GRAD}

    def own(node) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == DATA:
            node = node.value
        return isinstance(node, ast.Attribute) and node.attr == GRAD and ast.dump(node.value) in owners

    def adds(node) -> bool:
        if isinstance(node, ast.IfExp):
            return adds(node.body) or adds(node.orelse)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return own(node.left) or own(node.right)
        return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and own(node.left)

    if adds(stmt.value):
        return "adds"
    return "changes" if any(own(node) for node in _value_reads(stmt.value)) else None


def _value_reads(node):
    """The nodes of an expression whose values it reads: not inside `torch.zeros_like(...)`,
    nor `x` of `x.shape` (api_names.SHAPE_ONLY_*, as the checker reads them)."""
    yield node
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name.endswith(SHAPE_ONLY_SUFFIX):
            return
    if isinstance(node, ast.Attribute) and node.attr in SHAPE_ONLY_ATTRIBUTES:
        return
    for child in ast.iter_child_nodes(node):
        yield from _value_reads(child)


def _state(param, sums=True):
    grad = _GRAD.__get__(param)
    if grad is None:
        return None
    try:
        values = grad.detach().to(torch.float64)
        if values.is_sparse:
            values = values.to_dense()
        norm = float(values.norm())
        total = float(values.sum()) if sums else None
    except Exception:  # an exotic gradient layout: record presence only
        return {"norm": None, "sum": None, "zero": False}
    return {"norm": norm, "sum": total, "zero": norm == 0.0}


def _fingerprints(tensors) -> list:
    """One norm per tensor from one fused call (torch._foreach_norm), as Python floats.

    A fingerprint, not a snapshot: enough to tell None, zero, changed and
    unchanged apart, at a fraction of the cost of copying or reducing each
    tensor on its own.  Falls back to one norm per tensor for layouts the
    fused kernel refuses (sparse, mixed devices).
    """
    if not tensors:
        return []
    try:
        norms = torch._foreach_norm(tensors)
        try:
            return torch.stack(norms).tolist()
        except RuntimeError:  # mixed dtypes
            return torch.stack([n.to(torch.float64) for n in norms]).tolist()
    except Exception:
        out = []
        for t in tensors:
            try:
                values = t.detach()
                out.append(float((values.to_dense() if values.is_sparse else values).double().norm()))
            except Exception:
                out.append(None)
        return out


# Events whose in-place work on gradients may leave version counters alone (unscale_ does):
# measured again.  A backward's accumulation bumps the version, which the cache sees.
_WRITES_GRADS = frozenset("ZUC")
_is = operator.is_


def _encode(state: dict) -> list:
    """The log's compact state, one item per parameter in pid order (pids are 1, 2, ...):
    null for no gradient, its norm, "?" when it has one that cannot be measured, or
    [norm, sum] when sums are recorded (--trace).  verdicts.Run expands it again."""
    out = []
    for pid in range(1, len(state) + 1):  # pid order, whatever order the dict was filled in
        value = state.get(pid)
        if value is None:
            out.append(None)
        elif value["norm"] is None:
            out.append("?")
        elif value["sum"] is None:
            out.append(value["norm"])
        else:
            out.append([value["norm"], value["sum"]])
    return out


def _has(state) -> bool:
    return state is not None and not state.get("zero")


MANUAL_OID = 0  # the pseudo-optimizer of parameters updated by hand (`p -= lr * p.grad`)
# With several optimizers, the run ends once every optimizer that stepped made --steps steps,
# but never after more than this many steps per optimizer in all (one that steps rarely).
_BUDGET_SPREAD = 5


class Recorder:
    def __init__(self, log_path: str, max_steps: int, sums: bool = False):
        self.log = open(log_path, "w", encoding="utf-8")
        self.max_steps = max_steps
        self.sums = sums  # gradient sums too (for --trace); otherwise one fused norm per event
        self.steps = 0
        self.steps_by: dict[int, int] = {}  # oid -> steps taken (skipped by a GradScaler included)
        self.pid_steps: dict[int, int] = {}  # pid -> steps that updated it, by any optimizer
        self.refs: list = []  # (pid, param) in pid order, for the fused snapshot
        self.unhooked: dict[int, object] = {}  # pid -> param whose hook could not be registered yet (frozen)
        self.manual: dict[int, object] = {}  # pid -> param no optimizer holds (updated by hand, if at all)
        self.manual_values: dict[int, float] = {}  # pid -> fingerprint of its values at the last look
        self.manual_round: set = set()  # pids updated by hand in the current manual step
        self.pre_step = None  # (event count, state) at the start of the running step
        self.quiet_hooks = False  # inside a probed backward whose writes the snapshot finds
        self.changed: list[int] = []  # pids whose gradient the last snapshot had to measure again
        self.pid_cache: dict[int, tuple] = {}  # id(opt) -> (shape of its groups, opt, pids)
        self.cache: dict[int, tuple] = {}
        self.param_list: list = []  # the followed parameters in pid order
        self.fast = None  # (grads, their versions, state) of the last snapshot
        self.last_finished = None  # the state written with the last event, and its encoding
        self.last_encoded: list = []  # pid -> (weakref to its grad, grad version, state) at the last look
        self.stopped = False  # after the budget: record nothing, refuse further steps
        self.stop_reason = None  # why the budget ended the run, even if the script swallowed the exception
        self.inside = 0  # depth inside a probed call: nested probe hits are torch's own work
        self.count = 0
        self.params: dict[int, dict] = {}  # id(param) -> {"pid", "ref", "name"}
        self.optimizers: dict[int, dict] = {}  # id(opt) -> {"oid", "ref", "name", "cls"}
        self.names: dict[int, str] = {}
        self.last: dict[int, object] = {}  # pid -> state after the last event
        self.pending = None  # an event that may still absorb identical per-parameter events
        self.backward = None  # the backward event being recorded, while autograd runs
        self.running = None  # the part of a probed backward not written yet, while autograd runs it
        self.backward_depth = 0  # `inside` while a probed backward runs: a hook of the user's runs at this depth
        self.scaler_step = 0
        self.stepped_in_scaler = False
        self.in_step = 0  # inside optimizer.step(): a closure's own clears and backward passes

    # --- output -----------------------------------------------------------------

    def write(self, record: dict):
        self.log.write(json.dumps(record) + "\n")
        self.log.flush()

    def flush_pending(self):
        if self.pending is not None:
            event, self.pending = self.pending, None
            if self.backward is event:  # an unprobed backward ends with the next probed call
                self.backward = None
            self._finish(event)

    def close(self, end: dict):
        self.flush_pending()
        names = {str(o["oid"]): self._name(o) for o in self.optimizers.values()}
        if self.manual:
            names[str(MANUAL_OID)] = MANUAL_UPDATE
        self.write({"type": "names", "optimizers": names})
        self.write(dict(end, type="end", steps=self.steps, budget=self.max_steps))
        self.log.close()

    # --- identities --------------------------------------------------------------

    def _lookup_name(self, obj, frames):
        for frame in frames:
            for key, value in frame.f_locals.items():
                if value is obj:
                    return key
            owner = frame.f_locals.get("self")
            if owner is not None and owner is not obj:
                for key, value in getattr(owner, "__dict__", {}).items():
                    if value is obj:
                        return f"self.{key}"
        for frame in frames:
            for key, value in frame.f_globals.items():
                if value is obj:
                    return key
        return None

    def name_of(self, obj, frames, fallback: str) -> str:
        known = self.names.get(id(obj))
        if known is None:
            known = self._lookup_name(obj, frames)
            if known is not None:
                self.names[id(obj)] = known
        return known or fallback

    def _name(self, info) -> str:
        return self.names.get(id(info["ref"]), f"{info['cls']}#{info['oid']}")

    def optimizer(self, opt, frames=None) -> dict:
        info = self.optimizers.get(id(opt))
        if info is None:
            info = {"oid": len(self.optimizers) + 1, "ref": opt, "cls": type(opt).__name__}
            self.optimizers[id(opt)] = info
        if frames is not None and id(opt) not in self.names:
            self.name_of(opt, frames, "")
        return info

    def opt_pids(self, opt) -> list[int]:
        """The followed parameters an optimizer holds, cached while its groups keep the same lists
        and no parameter was newly followed."""
        groups = getattr(opt, PARAM_GROUPS, ())
        try:
            key = (len(self.params), tuple((id(g.get(PARAMS_KEYWORD)), len(g.get(PARAMS_KEYWORD, ()))) for g in groups))
        except Exception:
            key = None
        known = self.pid_cache.get(id(opt))
        if key is not None and known is not None and known[0] == key and known[1] is opt:
            return list(known[2])
        pids = []
        for group in groups:
            for p in group.get(PARAMS_KEYWORD, ()):
                info = self.params.get(id(p))
                if info is not None:
                    pids.append(info["pid"])
        if key is not None:
            self.pid_cache[id(opt)] = (key, opt, pids)
        return list(pids)

    def pids_of(self, tensors) -> list[int]:
        return [self.params[id(t)]["pid"] for t in tensors if id(t) in self.params]

    def _module_names(self, frames) -> dict[int, str]:
        """id(param) -> `model.layer.weight`, from the modules the user's frames can see."""
        found: dict[int, str] = {}
        for scope in [f.f_locals for f in frames] + [f.f_globals for f in frames]:
            candidates = list(scope.items())
            owner = scope.get("self")
            if owner is not None:
                candidates += [(f"self.{k}", v) for k, v in getattr(owner, "__dict__", {}).items()]
            for var, value in candidates:
                if isinstance(value, torch.nn.Module):
                    try:
                        for name, p in value.named_parameters():
                            found.setdefault(id(p), f"{var}.{name}")
                    except Exception:
                        continue
        return found

    def track(self, opt, params, frames=None):
        """Follow these parameters by identity from now on, whoever steps or clears them.

        opt None: parameters a backward wrote that no optimizer holds (a manual update loop).
        A parameter already followed (a SAM-style wrapper whose base optimizer shares the
        parameter groups) is not followed twice: events name parameters, not optimizers.
        """
        info = self.optimizer(opt) if opt is not None else None
        new = [p for p in params if isinstance(p, torch.Tensor) and id(p) not in self.params]
        if not new:
            return
        frames = user_frames(2) if frames is None else frames
        names = self._module_names(frames)
        for index, p in enumerate(new):
            pid = len(self.params) + 1
            fallback = f"{info['cls']}#{info['oid']}.param{index}" if info else f"param{pid}"
            name = names.get(id(p), fallback)
            self.params[id(p)] = {"pid": pid, "ref": p, "name": name}
            self.refs.append((pid, p))
            self.param_list.append(p)
            self._hook(pid, p)
            if info is None:
                self.manual[pid] = p
                self.manual_values.update(zip([pid], _fingerprints([p.detach()])))
            self.last[pid] = _state(p, self.sums)
            oid = info["oid"] if info else MANUAL_OID
            self.write({"type": "param", "pid": pid, "name": name, "shape": list(p.shape), "oid": oid})

    def _hook(self, pid, p):
        """A post-accumulate-grad hook says which backward wrote this parameter.  torch refuses it on a
        parameter that does not require grad (a frozen backbone): retried once it does."""
        try:
            p.register_post_accumulate_grad_hook(self._accumulated)
            self.unhooked.pop(pid, None)
        except RuntimeError:
            self.unhooked[pid] = p

    def hook_unfrozen(self):
        for pid, p in list(self.unhooked.items()):
            if p.requires_grad:
                self._hook(pid, p)

    def track_graph(self, tensors, frames):
        """Parameters a backward will write when no optimizer exists: walk the autograd graph to
        its leaves (AccumulateGrad nodes) so that a hand-written update loop is followed too."""
        found, seen = [], set()
        stack = [t.grad_fn for t in tensors if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        while stack and len(seen) < 100_000:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            leaf = getattr(node, GRAPH_LEAF_ATTRIBUTE, None)
            if leaf is not None and id(leaf) not in self.params:
                found.append(leaf)
            stack.extend(next_node for next_node, _ in node.next_functions)
        if found:
            self.track(None, found, frames)

    # --- events -----------------------------------------------------------------

    def snapshot(self) -> dict[int, object]:
        """The gradient state of every parameter; the same dict object as last time when no
        gradient is a different tensor or has a new version (two C-speed passes, no arithmetic:
        the common case before a step, and before a clear that follows one)."""
        if self.sums:
            return {pid: _state(p) for pid, p in self.refs}
        grads = list(map(_GRAD.__get__, self.param_list))
        last = self.fast
        if last is not None and len(last[0]) == len(grads) and all(map(_is, grads, last[0])):
            if [g._version for g in grads if g is not None] == last[1]:
                self.changed = []
                return last[2]
        state = self._measure()
        self.fast = (grads, [g._version for g in grads if g is not None], state)
        return state

    def _measure(self) -> dict[int, object]:
        """The gradient state of every followed parameter, measured only where it may have changed.

        A gradient tensor that is the same object with the same version counter as at the last
        look was not written since (backward accumulation, `mul_`, `zero_` all bump the version;
        set_to_none and a fresh backward make a new object), so its last fingerprint still holds.
        The others get one fused norm for all of them: an optimizer step, or a clear that sets
        None, costs no arithmetic at all.  The cache holds the gradient itself (not its id, which
        a new tensor may reuse) and lets go of it as soon as the parameter's .grad is None.
        """
        if self.sums:
            return {pid: _state(p) for pid, p in self.refs}
        state: dict[int, object] = {}
        stale, tensors = [], []
        cache = self.cache
        for pid, p in self.refs:
            grad = _GRAD.__get__(p)
            if grad is None:
                state[pid] = None
                if pid in cache:
                    del cache[pid]
                continue
            known = cache.get(pid)
            if known is not None and known[0] is grad and known[1] == grad._version:
                state[pid] = known[2]
                continue
            stale.append((pid, grad))
            tensors.append(grad.detach())
        self.changed = [pid for pid, _ in stale]
        for (pid, grad), norm in zip(stale, _fingerprints(tensors)):
            value = {"norm": norm, "sum": None, "zero": norm == 0.0} if norm is not None else {
                "norm": None, "sum": None, "zero": False}
            state[pid] = value
            cache[pid] = (grad, grad._version, value)
        return state

    def check_manual_updates(self, frames):
        """Parameters no optimizer holds whose values changed since the last look, while they
        had a gradient: a hand-written update (`p -= lr * p.grad`, `p.data.add_(...)`), an S."""
        pids = list(self.manual)
        values = _fingerprints([self.manual[pid].detach() for pid in pids])
        changed = []
        for pid, value in zip(pids, values):
            if value != self.manual_values.get(pid):
                self.manual_values[pid] = value
                if _GRAD.__get__(self.manual[pid]) is not None:
                    changed.append(pid)
        if not changed:
            return
        new_round = not self.manual_round or bool(self.manual_round & set(changed))
        if new_round:
            self.manual_round = set()
            if self.steps_by.get(MANUAL_OID, 0) >= self.max_steps and self._budget_spent(MANUAL_OID):
                self.stopped, self.stop_reason = True, "steps"
                raise BudgetReached("steps")
            self.count_step(MANUAL_OID)
        self.manual_round |= set(changed)
        self._finish(self._event(
            "S", frames, api=MANUAL_UPDATE, oid=MANUAL_OID, params=changed, inferred=True, manual=True,
            continued=not new_round,
        ))

    def before(self, frames):
        """Flush what came before and report clears and manual updates that no probe saw."""
        if self.running is not None:
            self._split_backward()
        self.flush_pending()
        if self.unhooked:
            self.hook_unfrozen()
        if self.manual:
            self.check_manual_updates(frames)
        previous = self.fast[2] if self.fast is not None else None
        now = self.snapshot()
        last = self.last
        # an unchanged gradient keeps the very same state object: only the others can be clears
        cleared = [] if now is previous and self.last_finished is now else [
            pid for pid, state in now.items()
            if state is not last.get(pid) and _has(last.get(pid)) and not _has(state)]
        if cleared:
            self._finish(self._event("Z", frames, api=INFERRED_CLEAR, params=cleared, inferred=True), now)
        self.last.update(now)

    def _event(self, kind, frames, **facts):
        self.count += 1
        sites = _sites(frames)
        text = _code_text(linecache.getline(sites[0][0], sites[0][1])) if sites else ""
        if self.in_step:
            facts["in_step"] = True
        return dict(type="event", i=self.count, kind=kind, sites=sites, text=text, **facts)

    def _finish(self, event, state=None):
        if event["kind"] in _WRITES_GRADS:
            # In-place work on gradients that may not bump a version counter (fused kernels):
            # measure again rather than trust the cache.
            self.cache.clear()
            self.fast = None
        state = self.snapshot() if state is None else state
        if state is not self.last_finished:
            self.last.update(state)
            self.last_encoded = _encode(state)
            self.last_finished = state
        event.pop("_seen", None)
        event["state"] = self.last_encoded
        self.write(event)

    def emit(self, event, mergeable=False):
        if mergeable:
            self.pending = event
        else:
            self._finish(event)

    def active(self) -> bool:
        return not self.stopped and self.inside == 0

    def in_users_hook(self, caller) -> bool:
        """Inside a probed backward, a probed call made straight from the user's code is a hook of
        theirs (optimizer in backward), not torch's own work: it is recorded."""
        return (not self.stopped and self.running is not None and self.inside == self.backward_depth
                and _file_kind(caller.f_code.co_filename) != _OURS)

    # --- probe bodies -------------------------------------------------------------

    def _accumulated(self, param):
        if self.quiet_hooks:  # a probed backward: the snapshot after it says which gradients it wrote
            return
        info = self.params.get(id(param))
        if info is None or self.stopped:
            return
        if self.backward is None:  # backward through a path no probe wraps: record it anyway
            self.flush_pending()
            self.pending = self._event("B", user_frames(2), api=UNPROBED_BACKWARD, params=[], implicit=True)
            self.backward = self.pending
        seen = self.backward.setdefault("_seen", set())
        if info["pid"] not in seen:
            seen.add(info["pid"])
            self.backward["params"].append(info["pid"])

    def run_backward(self, call, tensors, api):
        frames = user_frames(3)
        if not self.optimizers:
            self.track_graph(tensors, frames)
        self.before(frames)
        scaled = [t for t in tensors if isinstance(t, torch.Tensor) and getattr(t, "_gradlint_scale", None)]
        event = self._event("B", frames, api=api, params=[], scaled=bool(scaled))
        if scaled:
            event["scale"] = scaled[0]._gradlint_scale
        outer = (self.running, self.backward_depth, self.quiet_hooks)
        self.backward = self.running = event
        self.inside += 1
        self.backward_depth = self.inside
        # Without --trace the fingerprint cache knows which gradients changed: those are the ones
        # this backward wrote, so the per-parameter hooks need not run Python for it.
        self.quiet_hooks = not self.sums
        try:
            return call()
        except Exception as exc:
            self.running["error"] = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.inside -= 1
            part, quiet = self.running, self.quiet_hooks
            self.running, self.backward_depth, self.quiet_hooks = outer
            self.backward = self.running
            self._write_backward(part, quiet)

    def _write_backward(self, event, quiet):
        """Write (a part of) a probed backward with the parameters it wrote.  A later part that
        wrote nothing is dropped; it gets its number now, so that numbers follow the log's order."""
        state = None
        if quiet:
            state = self.snapshot()
            event["params"] = sorted(set(event["params"]) | set(self.changed))
        if event.get("part"):
            if not event["params"] and "error" not in event:
                return
            self.count += 1
            event["i"] = self.count
        self._finish(event, state)

    def _split_backward(self):
        """A hook of the user's steps or clears while a backward runs (optimizer in backward,
        `register_post_accumulate_grad_hook`): what the backward wrote so far is one B event,
        written before the hook's own events, and what it writes after is another part."""
        event = self.running
        self._write_backward(event, self.quiet_hooks)
        rest = {k: v for k, v in event.items() if k not in ("state", "params", "error", "_seen")}
        rest.update(params=[], part=True)
        self.backward = self.running = rest

    def assign_grad(self, param, value, api):
        frames = user_frames(3)
        pid = self.params[id(param)]["pid"]
        same_line = (
            pid not in self.manual
            and self.pending is not None
            and self.pending.get("api") == api
            and self.pending["sites"][:1] == _sites(frames[:1])
        )
        if same_line:  # `for p in model.parameters(): p.grad = None` is one clear, not one per parameter
            _GRAD.__set__(param, value)
            self.pending["params"].append(pid)
            return
        self.before(frames)
        # A value made from the gradient that is there keeps it (as the checker reads it,
        # classify.classify_grad_assign): `p.grad = p.grad + g` (or `p.grad += g`, which hands
        # the same tensor back) adds to it, a B that overwrites nothing; any other function of
        # it (`p.grad = p.grad * mask`, `p.grad *= s`) changes it in place, like `p.grad.mul_()`:
        # no event.
        use = _own_grad_use(_sites(frames[:1])) if value is not None and _GRAD.__get__(param) is not None else None
        if use == "changes":
            _GRAD.__set__(param, value)
            self.cache.clear()
            self.fast = None
            return
        overwrites = value is not None and use != "adds"
        _GRAD.__set__(param, value)
        kind = "Z" if value is None else "B"
        if pid in self.manual:  # each clear on its own, so that updates between them stay in order
            self._finish(self._event(kind, frames, api=api, params=[pid], overwrites=overwrites))
            return
        self.emit(self._event(kind, frames, api=api, params=[pid], overwrites=overwrites), mergeable=True)

    def zero_grad_tensor(self, tensor, original):
        pid = self._grad_owner(tensor)
        if pid is None:
            return original(tensor)
        frames = user_frames(3)
        if (self.pending is not None and self.pending.get("api") == GRAD_ZERO and pid not in self.manual
                and self.pending["sites"][:1] == _sites(frames[:1])):
            out = original(tensor)
            self.pending["params"].append(pid)
            return out
        self.before(frames)
        out = original(tensor)
        self.emit(self._event("Z", frames, api=GRAD_ZERO, params=[pid]), mergeable=pid not in self.manual)
        return out

    def _grad_owner(self, tensor):
        try:
            ptr = tensor.data_ptr()
        except Exception:
            return None
        if not ptr:
            return None
        for info in self.params.values():
            grad = _GRAD.__get__(info["ref"])
            if grad is not None and grad.data_ptr() == ptr and grad.shape == tensor.shape:
                return info["pid"]
        return None

    def around(self, kind, frames, call, post=None, **facts):
        """Record one event around a probed call whose nested work is torch's own."""
        self.before(frames)
        event = self._event(kind, frames, **facts)
        self.inside += 1
        try:
            result = call()
        except Exception as exc:
            self.inside -= 1
            event["error"] = f"{type(exc).__name__}: {exc}"
            self._finish(event)
            raise
        self.inside -= 1
        if post is not None:
            post(result, event)
        self._finish(event)
        return result

    def _budget_spent(self, oid) -> bool:
        """This optimizer made its --steps steps, and so did every other optimizer built so far (a
        WGAN's generator, stepped once per five critic steps, gets its own steps too).  An
        optimizer whose parameters others stepped that often counts as done (a SAM-style wrapper
        steps through its base optimizer; a second optimizer over the same model may never step).
        An optimizer over other parameters that never steps cannot hold the run forever: it
        ends after --steps x 5 steps per optimizer in all."""
        budget = self.max_steps
        if self.steps_by.get(oid, 0) < budget:
            return False
        if self.steps >= budget * _BUDGET_SPREAD * max(1, len(self.optimizers)):
            return True
        for info in self.optimizers.values():
            if self.steps_by.get(info["oid"], 0) >= budget:
                continue
            pids = self.opt_pids(info["ref"])
            if not pids or any(self.pid_steps.get(pid, 0) < budget for pid in pids):
                return False
        return True

    def check_budget(self, opt, skip=3):
        """Refuse a step past the budget.  It is recorded (it shows what the update would have used)
        but never runs."""
        if self.stopped:
            raise BudgetReached("steps")
        info = self.optimizer(opt)
        if not self._budget_spent(info["oid"]):
            return
        frames = user_frames(skip + 1)
        self.optimizer(opt, frames)
        self.before(frames)
        self._finish(self._event("S", frames, api=STEP, oid=info["oid"], params=self.opt_pids(opt), prevented=True))
        self.stopped, self.stop_reason = True, "steps"
        raise BudgetReached("steps")

    def count_step(self, oid, pids=()):
        for pid in pids:
            self.pid_steps[pid] = self.pid_steps.get(pid, 0) + 1
        self.steps += 1
        self.steps_by[oid] = self.steps_by.get(oid, 0) + 1

    def frozen(self, pids) -> list[int]:
        by_pid = dict(self.refs)
        return [pid for pid in pids if pid in by_pid and not by_pid[pid].requires_grad]

    def step_pre(self, opt):
        self.check_budget(opt)
        frames = user_frames(3)
        self.optimizer(opt, frames)
        self.before(frames)
        # a step does not write gradients: the state before it is reused after it
        self.pre_step = (self.count, self.fast[2] if self.fast is not None else dict(self.last))
        self.in_step += 1

    def step_post(self, opt, args, kwargs):
        self.in_step = max(0, self.in_step - 1)
        if self.stopped:
            return
        frames = user_frames(3)
        info = self.optimizer(opt, frames)
        self.flush_pending()
        # torch passes the step's own arguments with the optimizer first: (opt, closure?)
        closure = (len(args) > 1 and args[1] is not None) or kwargs.get(CLOSURE_KEYWORD) is not None
        pids = self.opt_pids(opt)
        event = self._event(
            "S", frames, api=STEP, oid=info["oid"], params=pids, closure=closure,
            via="scaler" if self.scaler_step else None, frozen=self.frozen(pids),
        )
        self.count_step(info["oid"], pids)
        self.stepped_in_scaler = True
        count, state = self.pre_step if self.pre_step is not None else (None, None)
        self.pre_step = None
        # Nothing probed ran inside the step (no closure doing backward): the state before it holds.
        self._finish(event, state if count == self.count - 1 else None)


RECORDER: Recorder | None = None


def _active() -> Recorder | None:
    rec = RECORDER
    if rec is None:
        return None
    if rec.active() or (rec.inside and rec.in_users_hook(sys._getframe(2))):
        return rec
    return None


# --- installation -----------------------------------------------------------------


def install(recorder: Recorder):
    global RECORDER
    RECORDER = recorder
    _patch_optimizer()
    _patch_backward()
    _patch_grad_attribute()
    _patch_clips()
    _patch_scalers()
    _patch_schedulers()
    _patch_subprocesses()


def _patch_subprocesses():
    """Training started in another process (torch.multiprocessing.spawn, multiprocessing.Process)
    runs in an interpreter without probes: record that it happened, so that verdicts can say
    "not probed" instead of "never ran".  DataLoader workers are not training."""
    import multiprocessing.process as mp_process

    import torch.multiprocessing as torch_mp

    def record(api, target):
        rec = RECORDER
        if rec is None or rec.stopped:
            return
        frames = user_frames(3)
        name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__
        rec.write({"type": "subprocess", "api": api, "target": name, "sites": _sites(frames)})

    original_start_processes = torch_mp.start_processes

    def start_processes(fn, *args, **kwargs):
        record(SPAWN_FUNCTION, fn)
        rec = RECORDER
        if rec is not None:
            rec.inside += 1  # its Process.start calls are this one spawn
        try:
            return original_start_processes(fn, *args, **kwargs)
        finally:
            if rec is not None:
                rec.inside -= 1

    original_spawn = torch_mp.spawn

    def spawn(fn, *args, **kwargs):
        record(SPAWN_FUNCTION, fn)
        rec = RECORDER
        if rec is not None:
            rec.inside += 1
        try:
            return original_spawn(fn, *args, **kwargs)
        finally:
            if rec is not None:
                rec.inside -= 1

    torch_mp.start_processes = start_processes
    torch_mp.spawn = spawn
    spawn_module = sys.modules.get(SPAWN_MODULE)
    if spawn_module is not None:
        spawn_module.spawn = spawn
        spawn_module.start_processes = start_processes

    original_start = mp_process.BaseProcess.start

    def start(self):
        target = getattr(self, "_target", None)
        module = getattr(target, "__module__", "") or ""
        if _active() is not None and not module.startswith(TORCH_PROCESS_PACKAGES):
            record("multiprocessing.Process.start", target)
        return original_start(self)

    mp_process.BaseProcess.start = start


def _patch_optimizer():
    original_add = Optimizer.add_param_group
    original_init = Optimizer.__init__
    original_zero = Optimizer.zero_grad

    def add_param_group(self, param_group):
        result = original_add(self, param_group)
        rec = RECORDER
        if rec is not None and not rec.stopped:
            rec.track(self, self.param_groups[-1]["params"])
        return result

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        rec = _active()
        if rec is not None:
            frames = user_frames(2)
            rec.before(frames)
            info = rec.optimizer(self)
            rec.emit(rec._event("O", frames, api=f"{type(self).__name__}(...)", oid=info["oid"], params=rec.opt_pids(self)))

    def zero_grad(self, set_to_none: bool = True):
        rec = _active()
        if rec is None:
            return original_zero(self, set_to_none)
        frames = user_frames(2)
        info = rec.optimizer(self, frames)
        return rec.around(
            "Z", frames, lambda: original_zero(self, set_to_none), api=OPTIMIZER_ZERO_GRAD, oid=info["oid"],
            params=rec.opt_pids(self), set_to_none=bool(set_to_none),
        )

    Optimizer.add_param_group = add_param_group
    Optimizer.__init__ = __init__
    Optimizer.zero_grad = zero_grad
    register_optimizer_step_pre_hook(lambda opt, args, kwargs: RECORDER and RECORDER.step_pre(opt))
    register_optimizer_step_post_hook(lambda opt, args, kwargs: RECORDER and RECORDER.step_post(opt, args, kwargs))

    module_zero = torch.nn.Module.zero_grad

    def module_zero_grad(self, set_to_none: bool = True):
        rec = _active()
        if rec is None:
            return module_zero(self, set_to_none)
        frames = user_frames(2)
        label = rec.name_of(self, frames, type(self).__name__)
        return rec.around(
            "Z", frames, lambda: module_zero(self, set_to_none), api=MODULE_ZERO_GRAD, module=label,
            params=rec.pids_of(self.parameters()), set_to_none=bool(set_to_none),
        )

    torch.nn.Module.zero_grad = module_zero_grad


def _patch_backward():
    tensor_backward = torch.Tensor.backward
    autograd_backward = torch.autograd.backward

    def backward(self, *args, **kwargs):
        rec = _active()
        if rec is None:
            return tensor_backward(self, *args, **kwargs)
        return rec.run_backward(lambda: tensor_backward(self, *args, **kwargs), [self], BACKWARD)

    def autograd(tensors, *args, **kwargs):
        rec = _active()
        if rec is None:
            return autograd_backward(tensors, *args, **kwargs)
        listed = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors)
        return rec.run_backward(lambda: autograd_backward(listed, *args, **kwargs), listed, BACKWARD_FUNCTION)

    torch.Tensor.backward = backward
    torch.autograd.backward = autograd

    tensor_zero = torch.Tensor.zero_

    def zero_(self):
        rec = _active()
        if rec is None:
            return tensor_zero(self)
        return rec.zero_grad_tensor(self, tensor_zero)

    torch.Tensor.zero_ = zero_


def _patch_grad_attribute():
    """`p.grad = None` and `p.grad = g` on a followed tensor (a parameter, or a plain leaf tensor an
    optimizer holds) become events with their own line."""

    def set_(self, value):
        rec = _active()
        if rec is None or id(self) not in rec.params:
            return _GRAD.__set__(self, value)
        rec.assign_grad(self, value, "grad = None" if value is None else "grad = tensor")

    def delete(self):
        set_(self, None)

    # the getter is the C descriptor itself: the optimizer reads p.grad for every parameter
    torch.Tensor.grad = property(_GRAD.__get__, set_, delete, _GRAD.__doc__)


_CLIP_NAMES = TORCH_CLIP_FUNCTIONS  # the checker's clips too (api_names.CLIP_FUNCTIONS)


def _patch_clips():
    replaced = {}
    for name in _CLIP_NAMES:
        # torch.nn.utils is where users reach them; some (clip_grads_with_norm_ in torch 2.13)
        # are defined outside clip_grad, which keeps only a private spelling.
        original = getattr(torch.nn.utils, name, None) or getattr(_clip_module, name, None)
        if original is None:
            continue
        replaced[id(original)] = _clip_wrapper(name, original)
    # Every public path, and any module that already did `from torch.nn.utils import X`.
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for key, value in list(namespace.items()):
            if id(value) in replaced and key in _CLIP_NAMES:
                try:
                    setattr(module, key, replaced[id(value)])
                except Exception:
                    continue


def _clip_wrapper(name, original):
    def clip(parameters, *args, **kwargs):
        rec = _active()
        if rec is None:
            return original(parameters, *args, **kwargs)
        listed = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        frames = user_frames(2)
        limit = args[0] if args else kwargs.get(MAX_NORM_KEYWORD, kwargs.get(CLIP_VALUE_KEYWORD))

        def measure(result, event):
            if name != CLIP_GRAD_VALUE:
                event["norm"] = _number(result)
            grads = [_GRAD.__get__(p) for p in listed if isinstance(p, torch.Tensor)]
            grads = [g for g in grads if g is not None]
            if grads:
                event["norm_after"] = float(torch.stack([g.detach().double().norm() for g in grads]).norm())

        return rec.around(
            "C", frames, lambda: original(listed, *args, **kwargs), post=measure, api=name,
            params=rec.pids_of(listed), limit=_number(limit),
        )

    clip.__name__ = name
    clip.__doc__ = original.__doc__
    clip.__wrapped__ = original
    return clip


def _number(value):
    try:
        return float(value)
    except Exception:
        return None


def _patch_scalers():
    from torch.amp.grad_scaler import GradScaler

    original_scale = GradScaler.scale
    original_unscale = GradScaler.unscale_
    original_step = GradScaler.step

    def scale(self, outputs):
        result = original_scale(self, outputs)
        if RECORDER is not None and not self.is_enabled() and not getattr(self, "_gradlint_told", False):
            self._gradlint_told = True  # once per scaler: GL006 cannot show through it
            device = getattr(self, SCALER_DEVICE_ATTRIBUTE, CUDA_DEVICE)
            no_cuda = device == CUDA_DEVICE and not torch.cuda.is_available()
            why = ("torch turns a GradScaler off when CUDA is not available, as on this machine" if no_cuda
                   else "its enabled argument was false at run time")
            RECORDER.write({"type": "scaler-disabled", "why": why, "sites": _sites(user_frames(2)[:1])})
        if RECORDER is not None and self.is_enabled():
            factor = _number(self.get_scale())
            items = [result] if isinstance(result, torch.Tensor) else result if isinstance(result, (list, tuple)) else []
            for item in items:
                if isinstance(item, torch.Tensor):
                    try:
                        item._gradlint_scale = factor or 1.0
                    except Exception:
                        pass
        return result

    def unscale_(self, optimizer):
        rec = _active()
        if rec is None or rec.scaler_step:
            return original_unscale(self, optimizer)
        frames = user_frames(2)
        info = rec.optimizer(optimizer, frames)
        return rec.around(
            "U", frames, lambda: original_unscale(self, optimizer), api=SCALER_UNSCALE, oid=info["oid"],
            params=rec.opt_pids(optimizer), enabled=self.is_enabled(),
        )

    def step(self, optimizer, *args, **kwargs):
        rec = _active()
        if rec is None:
            return original_step(self, optimizer, *args, **kwargs)
        rec.check_budget(optimizer, skip=1)  # a step the scaler skips still counts toward the budget
        rec.scaler_step += 1
        rec.stepped_in_scaler = False
        try:
            result = original_step(self, optimizer, *args, **kwargs)
        finally:
            rec.scaler_step -= 1
        if not rec.stepped_in_scaler and not rec.stopped:  # inf/NaN gradients: the scaler skipped the update
            frames = user_frames(2)
            info = rec.optimizer(optimizer, frames)
            rec.before(frames)
            rec.emit(rec._event("S", frames, api=SCALER_STEP, oid=info["oid"], params=rec.opt_pids(optimizer), skipped=True, via="scaler"))
            rec.count_step(info["oid"], rec.opt_pids(optimizer))
        return result

    GradScaler.scale = scale
    GradScaler.unscale_ = unscale_
    GradScaler.step = step


def _patch_schedulers():
    base = _sched_module.LRScheduler
    original_init = base.__init__

    def __init__(self, *args, **kwargs):
        rec = RECORDER
        if rec is None:
            return original_init(self, *args, **kwargs)
        rec.inside += 1  # the constructor's own initial step() is not the user's
        try:
            return original_init(self, *args, **kwargs)
        finally:
            rec.inside -= 1

    base.__init__ = __init__
    classes = [base] + [c for c in vars(_sched_module).values() if isinstance(c, type) and issubclass(c, base) and STEP in vars(c)]
    for cls in classes:
        if STEP in vars(cls):
            cls.step = _scheduler_step(cls.step)


def _first_lr(optimizer):
    try:
        value = optimizer.param_groups[0][LEARNING_RATE_KEY]
        return float(value.item() if isinstance(value, torch.Tensor) else value)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError, RuntimeError):
        return None


def _scheduler_step(original):
    def step(self, *args, **kwargs):
        rec = _active()
        if rec is None:
            return original(self, *args, **kwargs)
        frames = user_frames(2)
        opt = getattr(self, SCHEDULER_OPTIMIZER, None)
        oid = rec.optimizer(opt, frames)["oid"] if isinstance(opt, Optimizer) else None
        label = rec.name_of(self, frames, type(self).__name__)
        def learning_rate(result, event):  # the factor a premature step gives the next update
            event["lr_after"] = _first_lr(opt)

        return rec.around(
            "L", frames, lambda: original(self, *args, **kwargs), post=learning_rate, api=SCHEDULER_STEP, oid=oid,
            scheduler=label, cls=type(self).__name__, plateau=isinstance(self, _sched_module.ReduceLROnPlateau),
            positioned=bool(args or kwargs),  # step(epoch): the schedule is set to that position
            lr_before=_first_lr(opt),
        )

    step.__wrapped__ = original
    return step
