"""Calls -> gradient events.  The only module that knows API names.

Adding a framework is a row in one of the tables below, not a change to
any rule.  Event kinds follow ../shared/design/rules.md:

    Z clear   B backward   U unscale   C clip   S step   L schedule
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from gradlint.findings import Span

Z, B, U, C, S, L = "Z", "B", "U", "C", "S", "L"

# --- what objects are -------------------------------------------------------

OPTIMIZER_CLASSES = frozenset(
    """SGD Adam AdamW Adamax Adagrad Adadelta RMSprop Rprop ASGD NAdam RAdam LBFGS
    SparseAdam Adafactor Lion LAMB Lamb LARS Novograd AdaBelief Lookahead SophiaG Muon
    FusedAdam FusedLAMB FusedSGD FusedNovoGrad Adam8bit AdamW8bit PagedAdamW PagedAdamW8bit
    Lion8bit SGD8bit DeepSpeedCPUAdam ZeroRedundancyOptimizer DistributedFusedAdam
    AdamWScheduleFree SGDScheduleFree""".split()
)
OPTIMIZER_FACTORIES = frozenset(
    "create_optimizer create_optimizer_v2 build_optimizer make_optimizer get_optimizer configure_optimizer".split()
)
# Schedulers whose step() takes a metric and is meant to run per epoch after training.
PLATEAU_SCHEDULERS = frozenset({"ReduceLROnPlateau"})
SCHEDULER_MODULE_PREFIXES = ("torch.optim.lr_scheduler", "transformers.optimization")
SCHEDULER_CLASSES = frozenset(
    """LambdaLR MultiplicativeLR StepLR MultiStepLR ConstantLR LinearLR ExponentialLR
    SequentialLR CosineAnnealingLR ChainedScheduler ReduceLROnPlateau CyclicLR OneCycleLR
    CosineAnnealingWarmRestarts PolynomialLR LRScheduler _LRScheduler""".split()
)
SCHEDULER_FACTORY = re.compile(r"^get_\w*schedule\w*$")
GRAD_SCALERS = frozenset({"GradScaler", "ShardedGradScaler"})
# Calls whose result is the same module or optimizer, wrapped.
WRAPPER_CALLS = frozenset(
    """DistributedDataParallel DDP DataParallel FullyShardedDataParallel FSDP compile
    DistributedOptimizer convert_sync_batchnorm prepare prepare_model prepare_optimizer
    setup setup_module setup_optimizers wrap optimize initialize""".split()
)
WRAPPER_METHODS = frozenset("to cuda cpu half float double bfloat16 train module".split())
# Engines that take the loss themselves and clear their own gradients in step().
ENGINE_FACTORIES = frozenset({"deepspeed.initialize"})

# --- names a reader recognises when nothing resolves --------------------------

_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser)s?(_|$)|optimi[sz]er|^opt[A-Z0-9]", re.I)
_SCALER_NAME = re.compile(r"scaler", re.I)


def named_like_optimizer(name: str) -> bool:
    return bool(_OPTIMIZER_NAME.search(name.rsplit(".", 1)[-1]))


def named_like_scaler(name: str) -> bool:
    return bool(_SCALER_NAME.search(name.rsplit(".", 1)[-1]))


# --- calls --------------------------------------------------------------------

ZERO_GRAD_METHODS = frozenset({"zero_grad"})
# The last names of every call that can be a backward or a step: a loop needs one
# (or a call of a helper that has one) to be a training loop at all.
LOOP_EVENT_NAMES = frozenset({"backward", "manual_backward", "step", "optimizer_step"})
CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "dispatch_clip_grad"})
# clip methods of objects that unscale AMP gradients themselves before clipping
SELF_UNSCALING_CLIPS = frozenset({"clip_gradients"})
SELF_UNSCALING_RECEIVERS = re.compile(r"accelerator|fabric", re.I)
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
# These compute gradients without writing .grad: not events.
NOT_BACKWARD = frozenset({"torch.autograd.grad", "torch.distributed.autograd.backward"})
MANUAL_BACKWARD_METHODS = frozenset({"manual_backward"})
STEP_FUNCTIONS = frozenset({"optimizer_step"})  # torch_xla: xm.optimizer_step(opt)
LIGHTNING_MODULES = frozenset({"LightningModule"})
# `with accelerator.accumulate(model):` makes the prepared optimizer's step and zero_grad no-ops
# except on the syncing step.
ACCUMULATE_CONTEXTS = frozenset({"accumulate"})
# A condition that marks a deliberate accumulation step (besides a `%`).
ACCUMULATION_WORDS = re.compile(r"accum|sync_grad|grad_acc|boundary|should_step|do_step|update_step", re.I)


@dataclass(frozen=True)
class Event:
    kind: str
    span: Span
    text: str  # the call as written, for messages: `opt.zero_grad()`
    # Z: the optimizer it clears (opt.zero_grad) or the module (model.zero_grad);
    # S/U: the optimizer; C: the module whose parameters are clipped; L: the scheduler.
    optimizer: Optional[str] = None
    module: Optional[str] = None
    unknown_target: bool = False  # Z or C whose parameters cannot be resolved
    scaled: bool = False  # B through scaler.scale(loss)
    overwrites: bool = False  # B by `p.grad = g`: replaces rather than adds
    unscales: bool = False  # C that unscales AMP gradients itself
    clears: bool = False  # S of an engine that clears its own gradients
    set_to_none_false: bool = False  # Z with set_to_none=False
    has_args: bool = False  # L stepped with a metric/epoch argument
    plateau: bool = False  # L of a ReduceLROnPlateau-style scheduler
    sync_only: bool = False  # S or Z inside `with accelerator.accumulate(...)`
    accumulation_guarded: bool = False  # runs only under an accumulation condition
    closure: bool = False  # S that runs a closure doing its own backward (LBFGS)
    via: tuple[str, ...] = field(default=(), compare=False)  # helper calls that lead here

    @property
    def key(self) -> tuple:
        return (self.kind, self.span)

    def describe(self) -> str:
        return self.text


# --- classification -------------------------------------------------------------
#
# `ctx` is a gradlint.model.loops.Context: it resolves names (import aliases,
# helper-parameter substitution, bindings) and makes spans.  Everything that
# decides *what an API call means* stays here.

import libcst as cst  # noqa: E402  (kept below the tables: they need no libcst)

from gradlint.model.walk import walk  # noqa: E402


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _is_false(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _matches(name: Optional[str], entries: tuple[str, ...]) -> bool:
    if not name or not entries:
        return False
    tail = name.rsplit(".", 1)[-1]
    return any(entry == name or entry == tail for entry in entries)


def classify_call(call: cst.Call, ctx) -> Optional[Event]:
    """The gradient event a call is, or None."""
    func = call.func
    raw = ctx.name(func)
    qualified = ctx.qualify(raw)
    wrapped = _configured(call, raw, qualified, ctx)
    if wrapped is not None:
        return wrapped
    if isinstance(func, cst.Attribute):
        return _method_event(call, func.attr.value, func.value, qualified, ctx)
    if qualified is None:
        return None
    return _function_event(call, qualified, ctx)


def _configured(call, raw, qualified, ctx) -> Optional[Event]:
    w = ctx.wrappers
    for name in (raw, qualified):
        if _matches(name, w.backward_functions):
            return ctx.event(B, call)
        if _matches(name, w.zero_grad_functions):
            target = _first_name(call, ctx)
            if target is not None and ctx.bindings.is_optimizer(target):
                return ctx.event(Z, call, optimizer=target)
            return ctx.event(Z, call, unknown_target=True)
        if _matches(name, w.step_functions):
            target = _first_name(call, ctx)
            if target is None and isinstance(call.func, cst.Attribute):
                target = ctx.name(call.func.value)
            return ctx.event(S, call, optimizer=target or ctx.text(call.func))
        if _matches(name, w.clip_functions):
            return ctx.event(C, call, unknown_target=True)
    return None


def _first_name(call: cst.Call, ctx) -> Optional[str]:
    args = _positional(call)
    return ctx.name(args[0]) if args else None


def _method_event(call, method, receiver_node, qualified, ctx) -> Optional[Event]:
    bindings = ctx.bindings
    receiver = ctx.name(receiver_node)
    if qualified in NOT_BACKWARD:
        return None
    if qualified in BACKWARD_FUNCTIONS:
        return ctx.event(B, call)

    if method in ZERO_GRAD_METHODS:
        flag = _is_false(_keyword(call, "set_to_none")) or (
            bool(_positional(call)) and _is_false(_positional(call)[0])
        )
        if receiver is None:
            return ctx.event(Z, call, unknown_target=True, set_to_none_false=flag)
        if bindings.is_optimizer(receiver) or receiver in bindings.engines:
            return ctx.event(Z, call, optimizer=receiver, set_to_none_false=flag, sync_only=ctx.accumulate is not None)
        return ctx.event(Z, call, module=receiver, set_to_none_false=flag)

    if method == "backward":
        if isinstance(receiver_node, cst.Call) and isinstance(receiver_node.func, cst.Attribute):
            if receiver_node.func.attr.value == "scale" and bindings.is_scaler(ctx.name(receiver_node.func.value)):
                return ctx.event(B, call, scaled=True)
        return ctx.event(B, call)
    if method in MANUAL_BACKWARD_METHODS:
        return ctx.event(B, call)

    if method == "zero_" and _is_grad(receiver_node):
        return _grad_clear(call, receiver_node, ctx)

    if method in CLIP_FUNCTIONS or method in SELF_UNSCALING_CLIPS:
        return _clip_event(call, method, receiver, qualified, ctx)

    if method == "unscale_" and bindings.is_scaler(receiver):
        return ctx.event(U, call, optimizer=_first_name(call, ctx))

    if method in STEP_FUNCTIONS:
        return ctx.event(S, call, optimizer=_first_name(call, ctx))

    if method == "step" and receiver is not None:
        return _step_event(call, receiver, ctx)
    return None


def _step_event(call, receiver, ctx) -> Optional[Event]:
    bindings = ctx.bindings
    if receiver in bindings.engines:
        return ctx.event(S, call, optimizer=receiver, clears=True)
    kind = bindings.kind(receiver)
    if kind == "scheduler":
        # A prepared scheduler inside `accelerator.accumulate` also steps only with its optimizer.
        return ctx.event(
            L,
            call,
            optimizer=receiver,
            has_args=bool(call.args),
            plateau=bindings.is_plateau_scheduler(receiver),
            sync_only=ctx.accumulate is not None,
        )
    if kind is None and bindings.is_scaler(receiver) or kind == "scaler":
        target = _first_name(call, ctx)
        return ctx.event(S, call, optimizer=target, sync_only=ctx.accumulate is not None) if target else None
    if bindings.is_optimizer(receiver):
        return ctx.event(S, call, optimizer=receiver, closure=bool(_positional(call)), sync_only=ctx.accumulate is not None)
    return None


def _measures_only(call: cst.Call) -> bool:
    """`clip_grad_norm_(params, float('inf'))` only computes the norm (for logging): not a clip."""
    args = _positional(call)
    limit = _keyword(call, "max_norm") or _keyword(call, "clip_value") or (args[1] if len(args) > 1 else None)
    if limit is None and len(args) == 1 and isinstance(call.func, cst.Attribute):
        limit = args[0]  # model.clip_grad_norm_(max_norm)
    if limit is None:
        return False
    names = _NameCollector()
    walk(limit, names)
    return "inf" in names.words or any(w.endswith("inf") for w in names.strings)


class _NameCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.words: set[str] = set()
        self.strings: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.words.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.words.add(node.attr.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.strings.add(node.value.strip("'\"").lower())


def _clip_event(call, method, receiver, qualified, ctx) -> Optional[Event]:
    if _measures_only(call):
        return None
    unscales = method in SELF_UNSCALING_CLIPS or bool(receiver and SELF_UNSCALING_RECEIVERS.search(receiver))
    is_torch_utility = bool(qualified and qualified.startswith(("torch.", "nn.")))
    if method in SELF_UNSCALING_CLIPS or (receiver and not is_torch_utility and unscales):
        # accelerator.clip_grad_norm_(params, ...), fabric.clip_gradients(model, opt, ...)
        args = _positional(call)
        module = _params_module(args[0], ctx) if args and method not in SELF_UNSCALING_CLIPS else None
        return ctx.event(C, call, module=module, unknown_target=module is None, unscales=True)
    if receiver and not is_torch_utility and method == "clip_grad_norm_" and not ctx.bindings.imports.is_imported(receiver):
        # FSDP: model.clip_grad_norm_(max_norm) clips the module's own parameters.
        return ctx.event(C, call, module=receiver)
    args = _positional(call)
    module = _params_module(args[0], ctx) if args else None
    return ctx.event(C, call, module=module, unknown_target=module is None)


def _params_module(node, ctx) -> Optional[str]:
    resolved = ctx.bindings.resolve_params(node, 0)
    if resolved is not None and len(resolved) == 1:
        return ctx.substitute(next(iter(resolved)))
    return None


# Calls gradlint cannot see into that probably clear: `self.optimizer_zero_grad()`,
# `trainer.clear_grads()`.  They count as clears of unknown parameters (precision first).
CLEAR_LIKE_NAMES = re.compile(r"zero_grad|clear_grad|reset_grad", re.I)


def opaque_call(call: cst.Call, ctx) -> Optional[Event]:
    """A call gradlint cannot follow that may clear an optimizer's gradients.

    Either its name says it clears, or it is handed an optimizer (`utils.step_and_zero(opt)`):
    it becomes a clear of unknown parameters, which no rule blames and GL001 respects.
    """
    name = ctx.name(call.func) or ""
    if CLEAR_LIKE_NAMES.search(name.rsplit(".", 1)[-1]):
        return ctx.event(Z, call, unknown_target=True)
    for arg in call.args:
        target = ctx.name(arg.value)
        if target is not None and ctx.bindings.is_optimizer(target):
            return ctx.event(Z, call, unknown_target=True)
    return None


def _function_event(call, qualified, ctx) -> Optional[Event]:
    if qualified in NOT_BACKWARD:
        return None
    if qualified in BACKWARD_FUNCTIONS:
        return ctx.event(B, call)
    tail = qualified.rsplit(".", 1)[-1]
    if tail in CLIP_FUNCTIONS and (qualified.startswith("torch.") or qualified != tail):
        return _clip_event(call, tail, None, qualified, ctx)
    return None


def _is_grad(node: cst.BaseExpression) -> bool:
    """`p.grad` or `p.grad.data`."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"


def _grad_owner(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return node.value  # the parameter, `p` of `p.grad`


def _grad_clear(anchor: cst.CSTNode, grad_node: cst.BaseExpression, ctx) -> Event:
    owner = ctx.name(_grad_owner(grad_node))
    target = ctx.parameter_owner(owner)
    if target is None:
        return ctx.event(Z, anchor, unknown_target=True)
    kind, name = target
    if kind == "optimizer":
        return ctx.event(Z, anchor, optimizer=name)
    return ctx.event(Z, anchor, module=name)


def classify_grad_assign(node: cst.BaseSmallStatement, ctx) -> Optional[Event]:
    """`p.grad = None` clears; `p.grad = g` or `p.grad += g` writes a gradient by hand."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            if _is_grad(target.target):
                if isinstance(node.value, cst.Name) and node.value.value == "None":
                    return _grad_clear(node, target.target, ctx)
                return ctx.event(B, node, overwrites=True)
    if isinstance(node, cst.AugAssign) and _is_grad(node.target):
        return ctx.event(B, node)
    return None


def accumulate_context(item: cst.WithItem, ctx) -> Optional[str]:
    """`accelerator` for `with accelerator.accumulate(model):`, else None."""
    call = item.item
    if (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value in ACCUMULATE_CONTEXTS
    ):
        return ctx.name(call.func.value) or "accelerator"
    return None


def lightning_module(bases: list[str]) -> bool:
    return any(base.rsplit(".", 1)[-1] in LIGHTNING_MODULES for base in bases)
