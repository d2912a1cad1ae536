"""Calls -> gradient events: what the API names of gradlint/core/api_names.py mean.

The names themselves are spelled in gradlint/core/api_names.py (and re-exported here
for the modules that read them through this one); adding a framework is a row
there, and here only when its calls make events of their own, not a change to
any rule.  Event kinds follow ../shared/design/rules.md:

    Z clear   B backward   U unscale   C clip   S step   L schedule
"""

from __future__ import annotations

import re

from gradlint.core.api_names import (  # noqa: F401 (re-exported: rules and model/ read them here)
    ACCUMULATE_CONTEXTS,
    AUTOMATIC_OPTIMIZATION,
    BACKWARD_FUNCTIONS,
    BACKWARD_NAMES,
    CHECKPOINT_LOADERS,
    CLIP_FUNCTIONS,
    DEEP_COPIES,
    DOCUMENTED_RUNNERS,
    ENGINE_FACTORIES,
    EVENT_WORDS,
    GLOBAL_STEP_HOOK_FUNCTIONS,
    GRAD_CLIP_METHODS,
    GRAD_DISABLING,
    GRAD_ENABLING,
    GRAD_SCALERS,
    GRAD_SETTERS,
    HANDLER_REGISTRATION_METHODS,
    HF_COMPUTE_LOSS,
    HF_TRAINER_OPTIMIZER,
    HF_TRAINER_PACKAGES,
    HF_TRAINER_SCHEDULER,
    HF_TRAINER_SUFFIX,
    IGNITE_EPOCH_END_EVENTS,
    IGNITE_EPOCH_START_EVENTS,
    IGNITE_ITERATION_END_EVENTS,
    IGNITE_ITERATION_START_EVENTS,
    IGNITE_ONCE_EVENTS,
    IGNITE_PACKAGE,
    INSPECTING_BUILTINS,
    ITERATION_HANDLER_DECORATORS,
    ITERATION_RUNNERS,
    LIGHTNING_MODULES,
    LIGHTNING_SCHEDULER_ACCESSORS,
    LOOP_EVENT_NAMES,
    MANUAL_BACKWARD_METHODS,
    MANUAL_UPDATE_METHODS,
    MODULE_FORWARD,
    NOT_BACKWARD,
    OPTIMIZER_CLASSES,
    OPTIMIZER_FACTORIES,
    OTHER_FRAMEWORKS,
    OWN_PROTOCOL_METHODS,
    PARAMETER_CHAINS,
    PARAMETER_SEQUENCES,
    PLATEAU_SCHEDULERS,
    PROTOCOL_FREE_BASES,
    SCALE_READERS,
    SCHEDULER_CLASSES,
    SCHEDULER_FACTORY,
    SCHEDULER_MODULE_PREFIXES,
    SELF_UNSCALING_CLIPS,
    SPEECHBRAIN_BRAIN,
    SPEECHBRAIN_FIT_BATCH,
    SPEECHBRAIN_PACKAGE,
    STEP_FUNCTIONS,
    STEP_HOOK_METHODS,
    STEP_NAMES,
    TORCH_PACKAGES,
    TRAINING_STEP,
    WRAPPER_CALLS,
    WRAPPER_METHODS,
    ZERO_GRAD_METHODS,
)

Z, B, U, C, S, L = "Z", "B", "U", "C", "S", "L"

# The kind of a loop model that is a function's body holding a backward and a step of its own
# (`def update(self): ... loss.backward(); self.opt.step()`), modelled as one iteration when no
# loop of its file runs it: whoever calls it, each call is a training step.  What happens before
# the call is unknown, so the rules that need it (a clear the caller may make) pass it by.
OWN_STEP = "own step"


def other_framework(packages: set) -> bool:
    """Do these imported top-level packages make the file another framework's code?"""
    return bool(packages & OTHER_FRAMEWORKS) and not packages & TORCH_PACKAGES


# --- names a reader recognises when nothing resolves --------------------------

# `optG`, `opt1` (camelCase, case-sensitive: `optional_ctx`, `options` are no optimizers)
_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser)s?(_|$)|optimi[sz]er|(?-i:^opt[A-Z0-9])", re.I)
# ...but a setting of one is no optimizer: `optim_dtype` (the dtype the step runs in),
# `opt_level` (apex), `optimizer_type`, `optim_config`, `optimizer_kwargs`, `optimizer_state`
_OPTIMIZER_SETTING = re.compile(
    r"_(dtype|type|level|name|cls|class|config|cfg|conf|args|kwargs|kw|state|states|sd|lr|idx|id|str|"
    r"mode|kind|key|path|file|dir|ckpt|steps|every|freq|interval)$",
    re.I,
)
_SCALER_NAME = re.compile(r"scaler", re.I)
# `scheduler`, `lr_sched`, `warmup_scheduler`: what a training function calls the parameter it
# is handed a scheduler through (`def train(model, optimizer, scheduler, loader)`).
_SCHEDULER_NAME = re.compile(r"sched", re.I)


def named_like_optimizer(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return bool(_OPTIMIZER_NAME.search(last)) and not _OPTIMIZER_SETTING.search(last)


def named_like_scaler(name: str) -> bool:
    return bool(_SCALER_NAME.search(name.rsplit(".", 1)[-1]))


def named_like_scheduler(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return bool(_SCHEDULER_NAME.search(last)) and not named_like_optimizer(name) and not named_like_scaler(name)


# --- calls --------------------------------------------------------------------

# What transformers' Trainer (and trl's, built on it) and SpeechBrain's Brain do around the
# per-batch methods a subclass may override, by the package the base comes from and the
# end of its name.  Per method: (what a `super().method(...)` call inside it does, what the
# framework does after it returns), as (event kind, `self` attribute it acts on).
# training_step computes the loss and backpropagates, then the trainer steps
# self.optimizer and self.lr_scheduler and clears the model; its training_step calls
# compute_loss and then backward.  SpeechBrain's Brain.fit calls fit_batch, which does it all.
_HF_AFTER = ((S, HF_TRAINER_OPTIMIZER), (L, HF_TRAINER_SCHEDULER), (Z, HF_TRAINER_OPTIMIZER))
_HF_METHODS = {TRAINING_STEP: (((B, None),), _HF_AFTER), HF_COMPUTE_LOSS: ((), ((B, None),) + _HF_AFTER)}
FRAMEWORK_TRAINERS = tuple((package, HF_TRAINER_SUFFIX, _HF_METHODS) for package in HF_TRAINER_PACKAGES) + (
    (SPEECHBRAIN_PACKAGE, SPEECHBRAIN_BRAIN, {SPEECHBRAIN_FIT_BATCH: ((), ())}),
)


# A framework calls a method of these names once per batch: a call inside one is a call in a
# training loop (project/scan.py's caller gate reads it so).
PER_BATCH_METHODS = frozenset({TRAINING_STEP}).union(*(methods for _, _, methods in FRAMEWORK_TRAINERS))


def framework_trainer(bases: list[str]) -> dict:
    """The per-batch methods (FRAMEWORK_TRAINERS) of a class with one of these qualified bases."""
    for base in bases:
        for package, suffix, methods in FRAMEWORK_TRAINERS:
            if base.startswith(package) and base.rsplit(".", 1)[-1].endswith(suffix):
                return methods
    return {}


# Where an engine runs a handler of each event (ignite's `Events`, api_names.py).
# ONCE: before or after the whole run, in no loop.
EPOCH_START, ITERATION_START, ITERATION_END, EPOCH_END, ONCE = "epoch start", "iteration start", "iteration end", "epoch end", "once"
ENGINE_EVENTS = {
    IGNITE_PACKAGE: {
        name: phase
        for names, phase in (
            (IGNITE_EPOCH_START_EVENTS, EPOCH_START),
            (IGNITE_ITERATION_START_EVENTS, ITERATION_START),
            (IGNITE_ITERATION_END_EVENTS, ITERATION_END),
            (IGNITE_EPOCH_END_EVENTS, EPOCH_END),
            (IGNITE_ONCE_EVENTS, ONCE),
        )
        for name in names
    },
}
# Receivers whose clip methods unscale AMP gradients first (`accelerator.clip_grad_norm_`).
SELF_UNSCALING_RECEIVERS = re.compile(r"accelerator|fabric", re.I)
# A condition that marks a deliberate accumulation step (besides a `%`).
ACCUMULATION_WORDS = re.compile(r"accum|sync_grad|grad_acc|boundary|should_step|do_step|update_step", re.I)


# Calls gradlint cannot see into that probably clear: `self.optimizer_zero_grad()`,
# `trainer.clear_grads()`.  They count as clears of unknown parameters (precision first).
CLEAR_LIKE_NAMES = re.compile(r"%s|clear_grad|reset_grad" % "|".join(sorted(ZERO_GRAD_METHODS)), re.I)
# An unreadable call handed an optimizer may clear it, unless its name says what else it
# does: `adjust_learning_rate(optimizer, epoch)`, `clip_gradient(optimizer, 5.0)`,
# `save_checkpoint(model, optimizer)`, apex's `amp.scale_loss(loss, optimizer)` and
# `amp.master_params(optimizer)` are no clears (and must not hide a missing one).
NOT_CLEARING_HELPERS = re.compile(
    r"lr|learning_rate|schedul|warmup|decay|momentum|clip|save|checkpoint|load|log|print|state_dict|"
    r"param|scale|summary|report|plot|track|monitor|count|describe",
    re.I,
)


def iteration_runner(qualified: str | None) -> bool:
    """Is `qualified` a framework object that runs its function argument once per iteration?"""
    if not qualified:
        return False
    package = ITERATION_RUNNERS.get(qualified.rsplit(".", 1)[-1])
    return package is not None and qualified.startswith(package)


def engine_event(qualified: str | None) -> str | None:
    """Where an engine runs a handler of the event named `qualified` (`ignite.engine.Events.EPOCH_STARTED`)."""
    if not qualified:
        return None
    for package, phases in ENGINE_EVENTS.items():
        if qualified.startswith(package) and ".Events." in qualified:
            return phases.get(qualified.rsplit(".", 1)[-1])
    return None


def documented_runner(qualified: str | None) -> tuple | None:
    """(position, keyword) of the optimizer argument of a framework's engine factory, or None."""
    if not qualified:
        return None
    found = DOCUMENTED_RUNNERS.get(qualified.rsplit(".", 1)[-1])
    return found[1:] if found is not None and qualified.startswith(found[0]) else None


def lightning_module(bases: list[str]) -> bool:
    return any(base.rsplit(".", 1)[-1] in LIGHTNING_MODULES for base in bases)


# --- spellings for the text screens --------------------------------------------
#
# prefilter.py and screen.py look for the words of api_names.py (BACKWARD_NAMES,
# STEP_NAMES, EVENT_WORDS) in raw text before any parse; the pattern below is derived
# from its groups, so a new row reaches them too.


def arguments_read_pattern() -> str:
    """A regex for the callee names whose arguments bindings.py reads (screen.py keeps them)."""
    exact = OPTIMIZER_CLASSES | OPTIMIZER_FACTORIES | WRAPPER_CALLS | PARAMETER_SEQUENCES | PARAMETER_CHAINS
    exact |= frozenset(name.rsplit(".", 1)[-1] for name in ENGINE_FACTORIES)
    exact |= frozenset(DOCUMENTED_RUNNERS)  # `create_supervised_trainer(model, optimizer, loss_fn)`
    return r"optim|Optimizer|^(?:%s)$" % "|".join(sorted(map(re.escape, exact)))

# Methods of a dict or a list that leave it as it is: a call of any other on a table of classes
# (`AGENTS.update(...)`) may add an entry the file does not write in the table (model/tables.py).
CONTAINER_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy", "index", "count", "__getitem__", "__contains__"})
