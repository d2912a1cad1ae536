"""The guard's wrappers of torch's gradient calls, and their removal.

Every wrapper calls the original with the very arguments it was given (a generator of
parameters handed to a clip is made a list first, as the clip itself does) and returns its
result: the numbers of the run are torch's.  Each wrapper that sees a call nested in another of
its kind (torch's clip_grad_norm_ calling clip_grads_with_norm_, a scheduler's step calling its
base class's) lets only the outer one be an event.  `Patches.restore` puts every original back
and removes every hook.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.utils.clip_grad as clip_module
from torch.amp.grad_scaler import GradScaler
from torch.optim import lr_scheduler
from torch.optim.optimizer import Optimizer, register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from gradlint.core.api_names import (
    ADD_PARAM_GROUP,
    BACKWARD,
    BACKWARD_FUNCTION,
    CLIP_VALUE_KEYWORD,
    CLOSURE_KEYWORD,
    GRAD_ZERO,
    LEARNING_RATE_KEY,
    MAX_NORM_KEYWORD,
    SCALER_SCALE,
    SCALER_UNSCALE,
    SCHEDULER_OPTIMIZER,
    STEP,
    TORCH_CLIP_FUNCTIONS,
    ZERO_GRAD,
)
from gradlint.core.event_labels import MODULE_ZERO_GRAD, OPTIMIZER_ZERO_GRAD
from gradlint.guard.watcher import Watcher

_INHERITED = object()  # what `replace` saves for an attribute the class inherits
_SCALED = "_gradlint_guard_scaled"  # set on the tensor an enabled GradScaler.scale returns


class Patches:
    def __init__(self, watcher: Watcher):
        self.watcher = watcher
        self.saved: list = []  # (owner, attribute, original), in the order they were replaced
        self.handles: list = []

    def replace(self, owner, attribute: str, wrapper) -> None:
        # a class's own attribute (an inherited one, such as Tensor.zero_, is deleted again)
        original = owner.__dict__.get(attribute, _INHERITED) if isinstance(owner, type) else getattr(owner, attribute)
        self.saved.append((owner, attribute, original))
        setattr(owner, attribute, wrapper)

    def install(self) -> None:
        self._optimizer()
        self._backward()
        self._clips()
        self._scaler()
        self._schedulers()

    def restore(self) -> None:
        for owner, attribute, original in reversed(self.saved):
            if original is _INHERITED:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)
        self.saved.clear()
        for handle in self.handles:
            handle.remove()
        self.handles.clear()
        for handle in self.watcher.hooks:
            handle.remove()
        self.watcher.hooks.clear()

    # --- optimizers and modules ---------------------------------------------------------

    def _optimizer(self) -> None:
        w = self.watcher
        add_param_group = getattr(Optimizer, ADD_PARAM_GROUP)
        optimizer_zero = getattr(Optimizer, ZERO_GRAD)
        module_zero = getattr(torch.nn.Module, ZERO_GRAD)

        def add_group(self, param_group):
            result = add_param_group(self, param_group)
            w.optimizer(self)
            return result

        def zero_grad(self, set_to_none: bool = True):
            if w.depth["Z"]:
                return optimizer_zero(self, set_to_none)
            sites = w.sites()
            oid, pids = w.optimizer(self)
            w.depth["Z"] += 1
            try:
                result = optimizer_zero(self, set_to_none)
            finally:
                w.depth["Z"] -= 1
            w.cleared(sites, pids, bool(set_to_none), OPTIMIZER_ZERO_GRAD, oid)
            return result

        def zero_module(self, set_to_none: bool = True):
            if w.depth["Z"]:
                return module_zero(self, set_to_none)
            sites = w.sites()
            w.depth["Z"] += 1
            try:
                result = module_zero(self, set_to_none)
            finally:
                w.depth["Z"] -= 1
            w.cleared(sites, w.pids_of(self.parameters()), bool(set_to_none), MODULE_ZERO_GRAD)
            return result

        def before_step(opt, args, kwargs):
            closure = (len(args) > 1 and args[1] is not None) or kwargs.get(CLOSURE_KEYWORD) is not None
            w.stepped_in_scaler = True
            if closure:  # its backward runs inside the step: the step is an event once it has
                w.in_step += 1
            else:
                w.step(w.sites(), opt)

        def after_step(opt, args, kwargs):
            closure = (len(args) > 1 and args[1] is not None) or kwargs.get(CLOSURE_KEYWORD) is not None
            if closure:
                w.in_step = max(0, w.in_step - 1)
                w.step(w.sites(), opt, closure=True)

        self.replace(Optimizer, ADD_PARAM_GROUP, add_group)
        self.replace(Optimizer, ZERO_GRAD, zero_grad)
        self.replace(torch.nn.Module, ZERO_GRAD, zero_module)
        self.handles.append(register_optimizer_step_pre_hook(before_step))
        self.handles.append(register_optimizer_step_post_hook(after_step))

    # --- backward ------------------------------------------------------------------------

    def _backward(self) -> None:
        w = self.watcher
        tensor_backward = getattr(torch.Tensor, BACKWARD)
        autograd_backward = getattr(torch.autograd, BACKWARD)  # the function BACKWARD_FUNCTION names

        def run(call, tensors, api):
            if w.depth["B"]:  # a backward inside a backward (reentrant checkpointing): one event
                return call()
            if w.touched:
                w.flush_backward()
            w.backward_starts()
            w.backward_sites = w.sites()
            w.backward_scaled = any(getattr(t, _SCALED, False) for t in tensors if isinstance(t, torch.Tensor))
            w.depth["B"] += 1
            try:
                return call()
            finally:
                w.depth["B"] -= 1
                w.backward_done(w.backward_sites, api, w.backward_scaled)

        def backward(self, *args, **kwargs):
            return run(lambda: tensor_backward(self, *args, **kwargs), (self,), BACKWARD)

        def autograd(tensors, *args, **kwargs):
            listed = (tensors,) if isinstance(tensors, torch.Tensor) else tensors
            if not isinstance(listed, (tuple, list)):
                listed = tensors = list(tensors)  # a generator: read once, handed on as a list
            return run(lambda: autograd_backward(tensors, *args, **kwargs), listed, BACKWARD_FUNCTION)

        self.replace(torch.Tensor, BACKWARD, backward)
        self.replace(torch.autograd, BACKWARD, autograd)

        tensor_zero = getattr(torch.Tensor, GRAD_ZERO)

        def zero_(self):
            # inside a wrapped clear, torch's own work; else maybe a hand-written clear of a gradient
            if not w.depth["Z"] and w.refs:
                w.zeroed_in_place(self)
            return tensor_zero(self)

        self.replace(torch.Tensor, GRAD_ZERO, zero_)

    # --- clips ---------------------------------------------------------------------------

    def _clips(self) -> None:
        wrappers = {}
        for name in TORCH_CLIP_FUNCTIONS:
            original = getattr(torch.nn.utils, name, None) or getattr(clip_module, name, None)
            if original is not None:
                wrappers[id(original)] = (name, original, self._clip(name, original))
        # Every module that holds one (`from torch.nn.utils import clip_grad_norm_` ran before install).
        for module in list(sys.modules.values()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for key, value in list(namespace.items()):
                found = wrappers.get(id(value))
                if found is not None and key == found[0]:
                    self.replace(module, key, found[2])

    def _clip(self, name, original):
        w = self.watcher

        def clip(parameters, *args, **kwargs):
            if w.depth["C"]:
                return original(parameters, *args, **kwargs)
            listed = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            limit = args[0] if args else kwargs.get(MAX_NORM_KEYWORD, kwargs.get(CLIP_VALUE_KEYWORD))
            limit = float(limit) if isinstance(limit, (int, float)) else None  # a tensor is never read
            w.clip(w.sites(), w.pids_of(listed), name, limit)
            w.depth["C"] += 1
            try:
                return original(listed, *args, **kwargs)
            finally:
                w.depth["C"] -= 1

        clip.__name__ = name
        clip.__doc__ = original.__doc__
        clip.__wrapped__ = original
        return clip

    # --- GradScaler --------------------------------------------------------------------------

    def _scaler(self) -> None:
        w = self.watcher
        scale, unscale, step = (getattr(GradScaler, name) for name in (SCALER_SCALE, SCALER_UNSCALE, STEP))

        def scale_(self, outputs):
            result = scale(self, outputs)
            if self.is_enabled():
                for item in (result,) if isinstance(result, torch.Tensor) else result if isinstance(result, (list, tuple)) else ():
                    if isinstance(item, torch.Tensor):
                        setattr(item, _SCALED, True)
            return result

        def unscale_(self, optimizer):
            if w.scaler_step:  # the step's own unscale_
                return unscale(self, optimizer)
            sites = w.sites()
            try:
                result = unscale(self, optimizer)
            except Exception as exc:
                w.unscaled(sites, optimizer, f"{type(exc).__name__}: {exc}")
                raise
            w.unscaled(sites, optimizer, None)
            return result

        def step_(self, optimizer, *args, **kwargs):
            w.scaler_step += 1
            w.stepped_in_scaler = False
            try:
                result = step(self, optimizer, *args, **kwargs)
            finally:
                w.scaler_step -= 1
            if not w.stepped_in_scaler:  # inf or NaN gradients: the scaler skipped the update
                w.scaler_step += 1
                try:
                    w.step(w.sites(), optimizer, skipped=True)
                finally:
                    w.scaler_step -= 1
            return result

        self.replace(GradScaler, SCALER_SCALE, scale_)
        self.replace(GradScaler, SCALER_UNSCALE, unscale_)
        self.replace(GradScaler, STEP, step_)

    # --- LR schedulers ------------------------------------------------------------------------

    def _schedulers(self) -> None:
        w = self.watcher
        base = lr_scheduler.LRScheduler
        init = base.__init__

        def __init__(self, *args, **kwargs):
            w.building_scheduler += 1  # the constructor's own first step() is not the user's
            try:
                return init(self, *args, **kwargs)
            finally:
                w.building_scheduler -= 1

        self.replace(base, "__init__", __init__)
        classes = [base] + [c for c in vars(lr_scheduler).values() if isinstance(c, type) and issubclass(c, base)]
        for cls in dict.fromkeys(classes):
            if STEP in vars(cls):
                self.replace(cls, STEP, self._scheduler_step(vars(cls)[STEP]))

    def _scheduler_step(self, original):
        w = self.watcher

        def step(self, *args, **kwargs):
            if w.building_scheduler or w.depth["L"]:
                return original(self, *args, **kwargs)
            sites = w.sites()
            opt = getattr(self, SCHEDULER_OPTIMIZER, None)
            raw = {
                "plateau": isinstance(self, lr_scheduler.ReduceLROnPlateau),
                "positioned": bool(args or kwargs),  # step(epoch): the schedule is set to that position
                "lr_before": _learning_rate(opt),
            }
            w.depth["L"] += 1
            try:
                result = original(self, *args, **kwargs)
            except Exception as exc:
                raw["error"] = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                w.depth["L"] -= 1
                raw["lr_after"] = _learning_rate(opt)
                w.scheduled(sites, self, opt, raw)
            return result

        step.__wrapped__ = original
        step.__name__ = original.__name__
        step.__doc__ = original.__doc__
        return step


def _learning_rate(optimizer):
    """The first group's learning rate when it is a Python number (a tensor is never read)."""
    try:
        value = optimizer.param_groups[0][LEARNING_RATE_KEY]
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None

