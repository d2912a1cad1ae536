"""Calls -> gradient events, with libcst.

What a call *means* is decided here, from the names in api_names.py (the only
module that spells an API); loops.py calls these functions while it walks
a loop body.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import libcst as cst

from gradlint.core.api_names import (
    ACCUMULATE_CONTEXTS,
    BACKWARD,
    BACKWARD_FUNCTIONS,
    CLIP_FUNCTIONS,
    CLIP_GRAD_NORM,
    CLIP_VALUE_KEYWORD,
    DATA,
    GRAD,
    GRAD_CLIP_METHODS,
    GRAD_DISABLING,
    GRAD_ENABLING,
    GRAD_SETTERS,
    GRAD_ZERO,
    INFERENCE_MODE,
    INFINITY,
    INSPECTING_BUILTINS,
    MANUAL_BACKWARD_METHODS,
    MANUAL_UPDATE_METHODS,
    MAX_NORM_KEYWORD,
    NOT_BACKWARD,
    OPTIMIZER_HOOK_PREFIX,
    OPTIMIZER_QUIET_METHODS,
    PRIVATE_GRAD,
    SAME_VALUE_METHODS,
    SCALER_SCALE,
    SCALER_UNSCALE,
    SCALE_READERS,
    SELF_UNSCALING_CLIPS,
    SET_TO_NONE_KEYWORD,
    SHAPE_ONLY_ATTRIBUTES,
    SHAPE_ONLY_SUFFIX,
    STEP,
    STEP_FUNCTIONS,
    TENSOR_TO,
    TORCH_PREFIX,
    TORCH_PREFIXES,
    ZERO_GRAD_METHODS,
)
from gradlint.model.bindings import OPTIMIZER, params_argument
from gradlint.model.event import Event
from gradlint.core.events import B, C, CLEAR_LIKE_NAMES, L, NOT_CLEARING_HELPERS, S, SELF_UNSCALING_RECEIVERS, U, Z, named_like_optimizer
from gradlint.model.names import dotted, keyword_argument
from gradlint.model.walk import walk

# --- classification -------------------------------------------------------------
#
# `ctx` is a gradlint.model.loops.Context: it resolves names (import aliases,
# helper-parameter substitution, bindings) and makes spans.  Everything that
# decides *what an API call means* stays here.



def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]




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


def _optimizer_argument(call: cst.Call, ctx) -> Optional[str]:
    """The positional argument that is an optimizer (`optimizer_step(epoch, i, optimizer)`),
    else the first one's name."""
    for arg in _positional(call):
        name = ctx.name(arg)
        if name is not None and ctx.bindings.is_optimizer(name):
            return name
    return _first_name(call, ctx)


def _first_name(call: cst.Call, ctx) -> Optional[str]:
    args = _positional(call)
    return ctx.name(args[0]) if args else None


def _method_event(call, method, receiver_node, qualified, ctx) -> Optional[Event]:
    bindings = ctx.bindings
    receiver = ctx.name(receiver_node) or _element(receiver_node, ctx)
    if qualified in NOT_BACKWARD:
        return None
    if qualified in BACKWARD_FUNCTIONS:
        return ctx.event(B, call)

    if method in ZERO_GRAD_METHODS:
        flag = _is_false(keyword_argument(call, SET_TO_NONE_KEYWORD)) or (
            bool(_positional(call)) and _is_false(_positional(call)[0])
        )
        if receiver is None:
            return ctx.event(Z, call, unknown_target=True, set_to_none_false=flag)
        if bindings.is_optimizer(receiver) or bindings.is_engine(receiver):
            return ctx.event(Z, call, optimizer=receiver, set_to_none_false=flag, sync_only=ctx.accumulate is not None)
        return ctx.event(Z, call, module=receiver, set_to_none_false=flag)

    if method == BACKWARD:
        if isinstance(receiver_node, cst.Call) and isinstance(receiver_node.func, cst.Attribute):
            scaler = ctx.name(receiver_node.func.value)
            if receiver_node.func.attr.value == SCALER_SCALE and bindings.is_scaler(scaler):
                # `GradScaler(enabled=False)` scales nothing
                return ctx.event(B, call, scaled=not bindings.scaler_disabled(scaler))
        return ctx.event(B, call)
    if method in MANUAL_BACKWARD_METHODS:
        return ctx.event(B, call)

    if method == GRAD_ZERO and _is_grad(receiver_node):
        return _grad_clear(call, receiver_node, ctx)

    if method in GRAD_CLIP_METHODS and _is_grad(receiver_node):
        owner = ctx.parameter_owner(ctx.name(_grad_owner(receiver_node)))
        module = owner[1] if owner is not None and owner[0] == "module" else None
        return ctx.event(C, call, module=module, unknown_target=module is None)

    if method in CLIP_FUNCTIONS or method in SELF_UNSCALING_CLIPS:
        return _clip_event(call, method, receiver, qualified, ctx)

    if method == SCALER_UNSCALE and bindings.is_scaler(receiver):
        return ctx.event(U, call, optimizer=_first_name(call, ctx))

    if method in MANUAL_UPDATE_METHODS:
        update = _manual_update(call, receiver_node, call.args, ctx)
        if update is not None:
            return update

    if method in STEP_FUNCTIONS:
        # on an engine that took the loss itself (`strategy.backward(loss, ...)`), it clears too
        engine = receiver is not None and bindings.is_engine(receiver)
        # A function of an imported module (`xm.optimizer_step(opt)`) steps the optimizer it is
        # handed.  A method of an object the file does not show the class of (a LightningModule's
        # `optimizer_step(epoch, batch_idx, optimizer)` hook called by hand) runs a body nobody
        # read here, which may clear as well: only what depends on that body is left unjudged.
        hook = receiver is not None and not engine and not bindings.imports.is_imported(receiver)
        return ctx.event(S, call, optimizer=_optimizer_argument(call, ctx) or receiver, clears=engine or hook)

    if method == STEP and receiver is not None:
        return _step_event(call, receiver, ctx)
    if receiver is not None and _own_method_of_an_optimizer(method, receiver, bindings):
        # Sophia's `optimizer.update_hessian()`, SAM's `optimizer.first_step()`: a method of a class
        # the checker does not read, run on the optimizer itself.  Like a call handed the optimizer
        # (opaque_call), its body may read, step or clear that optimizer's gradients.
        return ctx.event(Z, call, optimizer=receiver, unknown_target=True)
    return None


def _own_method_of_an_optimizer(method: str, receiver: str, bindings) -> bool:
    """A method beyond torch's Optimizer API, called on an optimizer: one the file builds, or a
    name nothing resolves that is named like one (`self.optimizer` a configuration sets), is
    stepped by the file, and is not a container of them (`optimizers.append(opt)`).  Methods
    whose name says they only set or read something else (`set_lr`, `get_state`, `log_stats`)
    are no gradient use."""
    if method in OPTIMIZER_QUIET_METHODS or method.startswith(OPTIMIZER_HOOK_PREFIX) or not method[:1].islower():
        return False  # (a capitalised name is a class: `torch.optim.SGD(...)`)
    if NOT_CLEARING_HELPERS.search(method) or bindings.imports.is_imported(receiver):
        return False  # (an imported module: `optim.lr_scheduler`, `apex.optimizers`)
    kind = bindings.kind(receiver)
    if kind is not None:
        return kind == OPTIMIZER
    # (a configuration named like one, `opt.get("lr")`, is never stepped)
    return named_like_optimizer(receiver) and not receiver.endswith("s") and bindings.is_stepped(receiver)


def _element(node: cst.BaseExpression, ctx) -> Optional[str]:
    """`opts[i]` for an element of a container of optimizers (one optimizer per index text:
    `opts[i]` in two places is the same one, `opts[0]` and `opts[1]` are two)."""
    if not isinstance(node, cst.Subscript):
        return None
    container = ctx.name(node.value)
    if container is None or ctx.bindings.element_kind(container) != "optimizer":
        return None
    index = " ".join(ctx.builder.code(node).split())[len(ctx.builder.code(node.value).strip()):]
    return container + index.replace(" ", "")


def _step_event(call, receiver, ctx) -> Optional[Event]:
    bindings = ctx.bindings
    if bindings.is_engine(receiver):
        return ctx.event(S, call, optimizer=receiver, clears=True)
    kind = bindings.kind(receiver)
    if kind == "scheduler" or bindings.used_like_scheduler(receiver):
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
        live = not bindings.scaler_disabled(receiver)
        return ctx.event(S, call, optimizer=target, sync_only=ctx.accumulate is not None, by_scaler=live) if target else None
    if kind is None and _given_a_number(call, bindings):
        # torch.optim's step() takes only a closure: an object of unknown class stepped with a
        # learning rate (`emb_optimizer.step(lr)`) is another library's optimizer (a sparse
        # embedding's, which applies and clears its own gradients), not one to pair with a clear
        return None
    if bindings.is_optimizer(receiver):
        return ctx.event(S, call, optimizer=receiver, closure=bool(_positional(call)), sync_only=ctx.accumulate is not None)
    return None


def _given_a_number(call: cst.Call, bindings) -> bool:
    """Is the first positional argument a number: a literal, or a name the file only ever
    assigns number literals?"""
    positional = _positional(call)
    if not positional:
        return False
    first = positional[0]
    if isinstance(first, cst.Name):
        values = bindings.assigns.get(first.value, ())
        return bool(values) and all(_number_literal(v) for v in values)
    return _number_literal(first)


def _number_literal(node) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _measures_only(call: cst.Call) -> bool:
    """`clip_grad_norm_(params, float('inf'))` only computes the norm (for logging): not a clip."""
    args = _positional(call)
    limit = keyword_argument(call, MAX_NORM_KEYWORD) or keyword_argument(call, CLIP_VALUE_KEYWORD) or (args[1] if len(args) > 1 else None)
    if limit is None and len(args) == 1 and isinstance(call.func, cst.Attribute):
        limit = args[0]  # model.clip_grad_norm_(max_norm)
    if limit is None:
        return False
    names = _NameCollector()
    walk(limit, names)
    return INFINITY in names.words or any(w.endswith(INFINITY) for w in names.strings)


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


def reads_the_scale(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """Does the expression read the GradScaler's current scale (`scaler.get_scale()`, a name
    bound to it, a helper parameter the caller bound to it)?"""
    if depth > 3 or not (ctx.scale_params or ctx.bindings.reads_scale):
        return False  # (most files: nothing reads the scale, nothing to walk)
    for sub in _nodes(node):
        if isinstance(sub, cst.Call) and isinstance(sub.func, cst.Attribute) and sub.func.attr.value in SCALE_READERS:
            return True
        if isinstance(sub, cst.Name):
            if sub.value in ctx.scale_params:
                return True
            values = ctx.bindings.assigns.get(sub.value, ())
            if values and all(reads_the_scale(v, ctx, depth + 1) for v in values):
                return True
    return False


def _nodes(node: cst.CSTNode) -> list:
    collector = _Collect()
    walk(node, collector)
    return collector.nodes


class _Collect(cst.CSTVisitor):
    """The calls and names of an expression (what reads_the_scale looks at)."""

    def __init__(self) -> None:
        self.nodes: list = []

    def visit_Call(self, node: cst.Call) -> None:
        self.nodes.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.nodes.append(node)


def _clip_event(call, method, receiver, qualified, ctx) -> Optional[Event]:
    if _measures_only(call):
        return None
    if any(reads_the_scale(a.value, ctx) for a in call.args):
        # `clip_grad_norm_(params, max_norm * scaler.get_scale())`: a threshold in scaled units
        # clips the scaled gradients as the unscaled ones would be
        module = _params_module(_positional(call)[0], ctx) if _positional(call) else None
        return ctx.event(C, call, module=module, unknown_target=module is None, unscales=True)
    if method in SELF_UNSCALING_CLIPS and receiver and ctx.bindings.imports.is_imported(receiver):
        # `utils.clip_gradients(model, 3.0)`: a clip helper of another file, not Lightning's or
        # Fabric's method, so nothing says it unscales AMP gradients first
        return ctx.event(C, call, unknown_target=True)
    unscales = method in SELF_UNSCALING_CLIPS or bool(receiver and SELF_UNSCALING_RECEIVERS.search(receiver))
    is_torch_utility = bool(qualified and qualified.startswith(TORCH_PREFIXES))
    if method in SELF_UNSCALING_CLIPS or (receiver and not is_torch_utility and unscales):
        # accelerator.clip_grad_norm_(params, ...), fabric.clip_gradients(model, opt, ...)
        args = _positional(call)
        module = _params_module(args[0], ctx) if args and method not in SELF_UNSCALING_CLIPS else None
        return ctx.event(C, call, module=module, unknown_target=module is None, unscales=True)
    if receiver and not is_torch_utility and method == CLIP_GRAD_NORM and not ctx.bindings.imports.is_imported(receiver):
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


def opaque_call(call: cst.Call, ctx) -> Optional[Event]:
    """A call gradlint cannot follow that may clear an optimizer's gradients.

    Either its name says it clears, or it is handed an optimizer (`utils.step_and_zero(opt)`):
    it becomes a clear of unknown parameters, which no rule blames and GL001 respects.
    """
    name = (ctx.name(call.func) or "").rsplit(".", 1)[-1]
    if CLEAR_LIKE_NAMES.search(name):
        return ctx.event(Z, call, unknown_target=True)
    if NOT_CLEARING_HELPERS.search(name):
        return None
    if isinstance(call.func, cst.Name) and name in INSPECTING_BUILTINS and not ctx.bindings.imports.is_imported(name):
        return None
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
    if tail in CLIP_FUNCTIONS and (qualified.startswith(TORCH_PREFIX) or qualified != tail):
        return _clip_event(call, tail, None, qualified, ctx)
    return None


def _is_grad(node: cst.BaseExpression) -> bool:
    """`p.grad` or `p.grad.data`."""
    if isinstance(node, cst.Attribute) and node.attr.value == DATA:
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == GRAD


def _grad_owner(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, cst.Attribute) and node.attr.value == DATA:
        node = node.value
    return node.value  # the parameter, `p` of `p.grad`


def _grad_clear(anchor: cst.CSTNode, grad_node: cst.BaseExpression, ctx) -> Optional[Event]:
    owner = ctx.name(_grad_owner(grad_node))
    if ctx.picks_by_name(owner):
        return None  # some parameters picked by name: gradient surgery, not a clear of the owner
    target = ctx.parameter_owner(owner)
    if target is None:
        return ctx.event(Z, anchor, unknown_target=True)
    kind, name = target
    if kind == "optimizer":
        return ctx.event(Z, anchor, optimizer=name)
    return ctx.event(Z, anchor, module=name, per_parameter=True)


def _is_grad_target(node: cst.BaseExpression) -> bool:
    """`p.grad` or `p._grad` (the attribute behind it, written by hand to share a tensor)."""
    return _is_grad(node) or (isinstance(node, cst.Attribute) and node.attr.value == PRIVATE_GRAD)


def gradient_handoff(node: cst.BaseSmallStatement, ctx) -> list[Event]:
    """`shared_p._grad = p.grad` (or `.grad =`, `.grad.clone()`...), with `p` and `shared_p` the
    parameters of two different modules: the local module's gradients are used (an S of that
    module, as a step by hand would be) and the shared parameters get them (a B that
    overwrites).  [] for anything else."""
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and _is_grad_target(node.targets[0].target)):
        return []
    source = _grad_source(node.value)
    if source is None:
        return []
    local = ctx.parameter_owner(ctx.name(source))
    target = node.targets[0].target
    shared = ctx.parameter_owner(ctx.name(target.value if not _is_grad(target) else _grad_owner(target)))
    if local is None or local[0] != "module" or (shared is not None and shared[1] == local[1]):
        return []
    module = shared[1] if shared is not None and shared[0] == "module" else None
    return [
        ctx.event(S, node, optimizer=local[1], manual=True, handoff=True),
        ctx.event(B, node, overwrites=True, module=module),
    ]


def _grad_source(value: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """`p` of `p.grad`, `p.grad.data`, `p.grad.clone()`, `p.grad.detach().clone()`."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args:
        if value.func.attr.value not in SAME_VALUE_METHODS:
            return None
        value = value.func.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == TENSOR_TO:
        value = value.func.value  # `p.grad.to(device)`
    return _grad_owner(value) if _is_grad(value) else None


def classify_grad_assign(node: cst.BaseSmallStatement, ctx) -> Optional[Event]:
    """`p.grad = None` clears; `p.grad = g` or `p.grad += g` writes a gradient by hand.

    A value computed from the same gradient keeps what is there, so it overwrites nothing:
    `p.grad = p.grad + g` (or `- g`) is `p.grad += g` written out, a B that adds; any other
    function of it (`p.grad = p.grad * mask`, `p.grad.data = p.grad.data.clamp(-1, 1)`) is
    like `p.grad *= s`: it changes the gradient there, writes nothing new, no event."""
    if isinstance(node, cst.Assign):
        for target in node.targets:
            if _is_grad(target.target):
                if isinstance(node.value, cst.Name) and node.value.value == "None":
                    return _grad_clear(node, target.target, ctx)
                owner = _grad_owner(target.target)
                if _adds_to_own(node.value, owner):
                    return ctx.event(B, node)
                if _reads_own_grad(node.value, owner):
                    return None
                source = _grad_source(node.value)
                if source is not None and ctx.name(source) is not None and ctx.name(source) == ctx.name(_grad_owner(target.target)):
                    return None  # `p.grad = p.grad.to(torch.float32)`: the same gradient, cast or copied
                return ctx.event(B, node, overwrites=True)
    if isinstance(node, cst.AugAssign) and _is_grad(node.target):
        if not isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            return None  # `p.grad /= n`, `p.grad *= s`: rescales what is there, writes nothing new
        return ctx.event(B, node)
    if isinstance(node, cst.AugAssign):
        return _manual_update(node, node.target, (node,), ctx)
    if isinstance(node, cst.Assign) and len(node.targets) == 1:
        target = node.targets[0].target
        update = _manual_update(node, target, (node.value,), ctx)
        if update is not None and isinstance(target, cst.Name) and not _in_place_on(node.value, target):
            # `x = x.detach() + a * x.grad.sign()` binds the name to a new tensor, whose `.grad`
            # is empty: the update leaves nothing for the next backward to add to (an attack's
            # or a latent search's step), as a step that clears
            return replace(update, clears=True)
        return update
    return None


def _in_place_on(value: cst.BaseExpression, target: cst.Name) -> bool:
    """`x.sub_(...)` or `x.data.add_(...)` of the same name: the same tensor, returned."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)):
        return False
    method = value.func.attr.value
    if not method.endswith("_") or method.startswith("__"):
        return False
    receiver = value.func.value
    if isinstance(receiver, cst.Attribute) and receiver.attr.value == DATA:
        receiver = receiver.value
    return isinstance(receiver, cst.Name) and receiver.value == target.value


def _same_grad(node: cst.BaseExpression, owner: cst.BaseExpression) -> bool:
    """`node` is `p.grad` or `p.grad.data` of the same `p` as `owner` (same text)."""
    return _is_grad(node) and _grad_owner(node).deep_equals(owner)


def _reads_own_grad(value: cst.BaseExpression, owner: cst.BaseExpression) -> bool:
    """Does the expression read the values of the gradient of `owner` (`p.grad`, `p.grad.data`)?
    Not its shape only (`torch.zeros_like(p.grad)`, `p.grad.new_zeros(n)`, `p.grad.device`)."""
    return any(_same_grad(node, owner) for node in _attributes(value))


def _attributes(node: cst.CSTNode) -> list:
    collector = _ValueAttributes()
    walk(node, collector)
    return collector.nodes


class _ValueAttributes(cst.CSTVisitor):
    """The attributes an expression reads the values of (not inside `torch.zeros_like(...)`,
    nor `x` of `x.shape`)."""

    def __init__(self) -> None:
        self.nodes: list = []

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return not name.endswith(SHAPE_ONLY_SUFFIX)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if node.attr.value in SHAPE_ONLY_ATTRIBUTES:
            return False
        self.nodes.append(node)
        return True


def _adds_to_own(value: cst.BaseExpression, owner: cst.BaseExpression) -> bool:
    """`p.grad + g`, `g + p.grad`, `p.grad - g` (either side of a conditional expression:
    `g if p.grad is None else p.grad + g`): what `p.grad += g` computes."""
    if isinstance(value, cst.IfExp):
        return _adds_to_own(value.body, owner) or _adds_to_own(value.orelse, owner)
    if not isinstance(value, cst.BinaryOperation):
        return False
    if isinstance(value.operator, cst.Add):
        return _same_grad(value.left, owner) or _same_grad(value.right, owner)
    return isinstance(value.operator, cst.Subtract) and _same_grad(value.left, owner)


def fresh_optimizer(node: cst.BaseSmallStatement, ctx) -> Optional[Event]:
    """`opt = SGD([x])` inside the loop, over tensors the loop itself binds each iteration:
    a new optimizer over new leaves, which hold no gradient yet; a clear of `opt`."""
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.value, cst.Call)):
        return None
    target = ctx.name(node.targets[0].target)
    callee = ctx.qualify(dotted(node.value.func))
    if target is None or callee is None or not ctx.bindings.optimizer_callee(callee):
        return None
    params = params_argument(node.value)
    if not isinstance(params, (cst.List, cst.Tuple)) or not params.elements:
        return None
    tensors = [element.value for element in params.elements]
    if all(isinstance(t, cst.Name) and t.value in ctx.assigned for t in tensors):
        return ctx.event(Z, node, optimizer=target)
    return None


def _manual_update(anchor: cst.CSTNode, target: cst.BaseExpression, reads, ctx) -> Optional[Event]:
    """`p -= lr * p.grad`, `p.data = p.data - lr * p.grad`, `p.data.add_(p.grad, alpha=-lr)`:
    a parameter updated from its own gradient is a step by hand, of what `p` belongs to."""
    if isinstance(target, cst.Attribute) and target.attr.value == DATA:
        target = target.value
    param = ctx.name(target)
    if param is None or "." in param:
        return None
    if not any(param in ctx.builder.walked(node, _GradReaders, _owners_found) for node in reads):
        return None
    owner = ctx.parameter_owner(param)
    name = owner[1] if owner is not None else param
    return ctx.event(S, anchor, optimizer=name, manual=True)


class _GradReaders(cst.CSTVisitor):
    """The names whose `.grad` an expression reads."""

    def __init__(self) -> None:
        self.owners: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == GRAD:
            owner = node.value
            if isinstance(owner, cst.Attribute) and owner.attr.value == DATA:
                owner = owner.value
            if isinstance(owner, cst.Name):
                self.owners.add(owner.value)


def _owners_found(readers: _GradReaders) -> frozenset:
    return frozenset(readers.owners)


def accumulate_with(stmt: cst.With, ctx) -> Optional[str]:
    """`accelerator` when one of the `with` statement's items is `accelerator.accumulate(...)`."""
    for item in stmt.items:
        accelerator = accumulate_context(item, ctx)
        if accelerator is not None:
            return accelerator
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


def grad_mode(node: cst.BaseExpression, ctx) -> Optional[bool]:
    """False for `torch.no_grad()` / `torch.inference_mode()` / `torch.set_grad_enabled(False)`
    (a `with` item or a decorator, called or not), True for `torch.enable_grad()` and
    `set_grad_enabled(True)`, None for anything else (`set_grad_enabled(is_train)` too)."""
    call = node if isinstance(node, cst.Call) else None
    qualified = ctx.qualify(dotted(call.func if call is not None else node))
    if qualified is None:
        return None
    if qualified in GRAD_DISABLING:
        if call is not None and call.args and qualified.endswith(INFERENCE_MODE):
            mode = call.args[0].value  # inference_mode(False) leaves gradients on
            return None if not (isinstance(mode, cst.Name) and mode.value == "True") else False
        return False
    if qualified in GRAD_ENABLING:
        return True
    if qualified in GRAD_SETTERS and call is not None and call.args:
        flag = call.args[0].value
        if isinstance(flag, cst.Name) and flag.value in ("True", "False"):
            return flag.value == "True"
    return None
