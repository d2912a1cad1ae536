"""Calls -> gradient events.  The only module that knows API names.

Adding a framework is a row in one of the tables below, not a change to
any rule.  Event kinds follow ../shared/design/rules.md:

    Z clear   B backward   U unscale   C clip   S step   L schedule
"""

from __future__ import annotations

import re

Z, B, U, C, S, L = "Z", "B", "U", "C", "S", "L"

# --- what objects are -------------------------------------------------------

OPTIMIZER_CLASSES = frozenset(
    """SGD Adam AdamW Adamax Adagrad Adadelta RMSprop Rprop ASGD NAdam RAdam LBFGS
    SparseAdam Adafactor Lion LAMB Lamb LARS Novograd AdaBelief Lookahead SophiaG Muon
    FusedAdam FusedLAMB FusedSGD FusedNovoGrad Adam8bit AdamW8bit PagedAdamW PagedAdamW8bit
    Lion8bit SGD8bit DeepSpeedCPUAdam ZeroRedundancyOptimizer DistributedFusedAdam
    AdamWScheduleFree SGDScheduleFree DummyOptim MegatronLMDummyOptimizer""".split()
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
    CosineAnnealingWarmRestarts PolynomialLR LRScheduler _LRScheduler
    DummyScheduler MegatronLMDummyScheduler""".split()
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

# A file that imports one of these and none of TORCH_PACKAGES is written for another
# framework, whose gradients behave differently (MXNet's backward overwrites them): it is
# not analysed.  A file that imports neither (a helper taking `model, optimizer`) is.
OTHER_FRAMEWORKS = frozenset("mxnet gluonnlp tensorflow keras tf_keras jax jaxlib flax optax haiku equinox".split())
TORCH_PACKAGES = frozenset(
    "torch torchvision torchaudio torchtext lightning pytorch_lightning lightning_fabric accelerate deepspeed ignite timm".split()
)


def other_framework(packages: set) -> bool:
    """Do these imported top-level packages make the file another framework's code?"""
    return bool(packages & OTHER_FRAMEWORKS) and not packages & TORCH_PACKAGES


# --- names a reader recognises when nothing resolves --------------------------

# `optG`, `opt1` (camelCase, case-sensitive: `optional_ctx`, `options` are no optimizers)
_OPTIMIZER_NAME = re.compile(r"(^|_)(opt|optim|optimizer|optimiser)s?(_|$)|optimi[sz]er|(?-i:^opt[A-Z0-9])", re.I)
_SCALER_NAME = re.compile(r"scaler", re.I)
# `scheduler`, `lr_sched`, `warmup_scheduler`: what a training function calls the parameter it
# is handed a scheduler through (`def train(model, optimizer, scheduler, loader)`).
_SCHEDULER_NAME = re.compile(r"sched", re.I)


def named_like_optimizer(name: str) -> bool:
    return bool(_OPTIMIZER_NAME.search(name.rsplit(".", 1)[-1]))


def named_like_scaler(name: str) -> bool:
    return bool(_SCALER_NAME.search(name.rsplit(".", 1)[-1]))


def named_like_scheduler(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return bool(_SCHEDULER_NAME.search(last)) and not named_like_optimizer(name) and not named_like_scaler(name)


# --- calls --------------------------------------------------------------------

ZERO_GRAD_METHODS = frozenset({"zero_grad"})
# The last names of every call that can be a backward or a step: a loop needs one
# (or a call of a helper that has one) to be a training loop at all.
LOOP_EVENT_NAMES = frozenset({"backward", "manual_backward", "step", "optimizer_step"})
# A project class built on nothing but these bases defines its own `step()` / `backward()`
# (none of them has a method of these names): `gan.step(batch)` runs the project's method,
# where a subclass of a library's optimizer, scheduler or engine keeps the library's meaning.
# A GradScaler's methods that read its current scale (a clip threshold multiplied by it is in scaled units).
SCALE_READERS = frozenset({"get_scale"})
OWN_PROTOCOL_METHODS = frozenset({"backward", "step", "optimizer_step"})
PROTOCOL_FREE_BASES = frozenset({"object", "abc.ABC", "torch.nn.Module", "torch.nn.modules.module.Module"})
# `clip_grads_with_norm_(params, max_norm, total_norm)`: the clip half of clip_grad_norm_ (torch 2.6)
CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "dispatch_clip_grad", "clip_grads_with_norm_"})
# `p.grad.clamp_(-c, c)`, `p.grad.data.clip_(...)`: a clip by value, by hand
GRAD_CLIP_METHODS = frozenset({"clamp_", "clip_"})
# clip methods of objects that unscale AMP gradients themselves before clipping
SELF_UNSCALING_CLIPS = frozenset({"clip_gradients"})
SELF_UNSCALING_RECEIVERS = re.compile(r"accelerator|fabric", re.I)
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
# These compute gradients without writing .grad: not events.
NOT_BACKWARD = frozenset({"torch.autograd.grad", "torch.distributed.autograd.backward"})
MANUAL_BACKWARD_METHODS = frozenset({"manual_backward"})
STEP_FUNCTIONS = frozenset({"optimizer_step"})  # torch_xla: xm.optimizer_step(opt)
# In-place updates of a parameter: from its own gradient (`p.data.add_(p.grad, alpha=-lr)`,
# `p -= lr * p.grad`) they are a step by hand.
MANUAL_UPDATE_METHODS = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_"})
LIGHTNING_MODULES = frozenset({"LightningModule"})
TRAINING_STEP = "training_step"  # the LightningModule method run once per batch
# Per-batch methods of a framework's trainer class that a subclass may override, by the package
# the base comes from and the end of its name: the framework calls the method once per batch.
# Per method: (what a `super().method(...)` call inside it does, what the framework does after
# it returns), as (event kind, `self` attribute it acts on).  transformers' Trainer (and trl's,
# built on it): training_step computes the loss and backpropagates, then the trainer steps
# self.optimizer and self.lr_scheduler and clears the model; its training_step calls
# compute_loss and then backward.  SpeechBrain's Brain.fit calls fit_batch, which does it all.
_HF_AFTER = ((S, "self.optimizer"), (L, "self.lr_scheduler"), (Z, "self.optimizer"))
FRAMEWORK_TRAINERS = (
    ("transformers.", "Trainer", {"training_step": (((B, None),), _HF_AFTER), "compute_loss": ((), ((B, None),) + _HF_AFTER)}),
    ("trl.", "Trainer", {"training_step": (((B, None),), _HF_AFTER), "compute_loss": ((), ((B, None),) + _HF_AFTER)}),
    ("speechbrain.", "Brain", {"fit_batch": ((), ())}),
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


# `sch = self.lr_schedulers()` in a LightningModule: the schedulers configure_optimizers built.
LIGHTNING_SCHEDULER_ACCESSORS = frozenset({"lr_schedulers"})
# `self.automatic_optimization = False`, or a property of that name returning False: manual optimization
AUTOMATIC_OPTIMIZATION = "automatic_optimization"
# Framework objects built from a function that they run once per iteration, with the
# package they must come from: `Engine(update_fn)` (ignite) makes update_fn a loop body.
ITERATION_RUNNERS = {"Engine": "ignite."}
# `@trainer.on(Events.EPOCH_COMPLETED)` on such an object: the handler runs again and again.
ITERATION_HANDLER_DECORATORS = frozenset({"on"})
# `trainer.add_event_handler(Events.EPOCH_STARTED, handler, *args)`: the same, registered by a call.
HANDLER_REGISTRATION_METHODS = frozenset({"add_event_handler"})
# Where an engine runs a handler of each event (ignite's `Events`, its documented order: per
# epoch EPOCH_STARTED, then per batch GET_BATCH_*, ITERATION_STARTED, the process function,
# ITERATION_COMPLETED, then EPOCH_COMPLETED).  ONCE: before or after the whole run, in no loop.
EPOCH_START, ITERATION_START, ITERATION_END, EPOCH_END, ONCE = "epoch start", "iteration start", "iteration end", "epoch end", "once"
ENGINE_EVENTS = {
    "ignite.": {
        "EPOCH_STARTED": EPOCH_START,
        "GET_BATCH_STARTED": ITERATION_START,
        "GET_BATCH_COMPLETED": ITERATION_START,
        "ITERATION_STARTED": ITERATION_START,
        "ITERATION_COMPLETED": ITERATION_END,
        "EPOCH_COMPLETED": EPOCH_END,
        "STARTED": ONCE,
        "COMPLETED": ONCE,
        "TERMINATE": ONCE,
        "EXCEPTION_RAISED": ONCE,
        "DATALOADER_STOP_ITERATION": ONCE,
    },
}
# A framework's own factories of such engines, with the process function they document:
# ignite's `create_supervised_trainer(model, optimizer, loss_fn)` clears, backpropagates and
# steps `optimizer` once per batch; (package, position and keyword of the optimizer argument).
DOCUMENTED_RUNNERS = {"create_supervised_trainer": ("ignite.", 1, "optimizer")}
# `opt.register_step_post_hook(fn)` and torch's global `register_optimizer_step_post_hook(fn)`:
# a hook whose body clears acts as a clear right after every step (of `opt`, or of any optimizer).
STEP_HOOK_METHODS = frozenset({"register_step_post_hook"})
GLOBAL_STEP_HOOK_FUNCTIONS = frozenset({"register_optimizer_step_post_hook"})
# `with accelerator.accumulate(model):` makes the prepared optimizer's step and zero_grad no-ops
# except on the syncing step.
ACCUMULATE_CONTEXTS = frozenset({"accumulate"})
# `with torch.no_grad():`, `@torch.inference_mode()`: nothing computed there has a graph, so a
# helper run entirely without gradients does no backward (it would raise).  `enable_grad` turns
# them back on; `set_grad_enabled(flag)` does either, by its literal argument.
GRAD_DISABLING = frozenset(
    """torch.no_grad torch.inference_mode torch.autograd.no_grad torch.autograd.inference_mode
    torch.autograd.grad_mode.no_grad torch.autograd.grad_mode.inference_mode""".split()
)
GRAD_ENABLING = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
GRAD_SETTERS = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})
# A condition that marks a deliberate accumulation step (besides a `%`).
ACCUMULATION_WORDS = re.compile(r"accum|sync_grad|grad_acc|boundary|should_step|do_step|update_step", re.I)


# Calls gradlint cannot see into that probably clear: `self.optimizer_zero_grad()`,
# `trainer.clear_grads()`.  They count as clears of unknown parameters (precision first).
CLEAR_LIKE_NAMES = re.compile(r"zero_grad|clear_grad|reset_grad", re.I)
# An unreadable call handed an optimizer may clear it, unless its name says what else it
# does: `adjust_learning_rate(optimizer, epoch)`, `clip_gradient(optimizer, 5.0)`,
# `save_checkpoint(model, optimizer)`, apex's `amp.scale_loss(loss, optimizer)` and
# `amp.master_params(optimizer)` are no clears (and must not hide a missing one).
NOT_CLEARING_HELPERS = re.compile(
    r"lr|learning_rate|schedul|warmup|decay|momentum|clip|save|checkpoint|load|log|print|state_dict|"
    r"param|scale|summary|report|plot|track|monitor|count|describe",
    re.I,
)


# Builtins that only look at what they are handed (`hasattr(self.optimizer, "clip_grad_norm")`):
# never a clear of an optimizer passed to them.
INSPECTING_BUILTINS = frozenset(
    {"hasattr", "getattr", "isinstance", "issubclass", "type", "id", "len", "repr", "str", "vars", "dir",
     "callable", "hash", "format", "bool"}
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
# prefilter.py and screen.py look for these words in raw text before any parse;
# they are derived from the tables above, so a new row reaches them too.

# Names that make a call a B or S (a file without any cannot hold a finding),
# each the base word and the longer names that end with it.
BACKWARD_NAMES = frozenset({"backward"}) | MANUAL_BACKWARD_METHODS
STEP_NAMES = frozenset({"step", TRAINING_STEP}) | STEP_FUNCTIONS
# Words in a call's name that may make it an event (its receiver and arguments matter).
EVENT_WORDS = ("backward", "step", "grad", "zero", "clip", "unscale", "scale") + tuple(sorted(ACCUMULATE_CONTEXTS))
# Calls whose arguments bindings.py reads: optimizer constructions, wrappers, engines, and
# what a parameter expression goes through.
PARAMETER_SEQUENCES = frozenset("list tuple iter set sorted filter".split())
PARAMETER_CHAINS = frozenset({"chain"})


def arguments_read_pattern() -> str:
    """A regex for the callee names whose arguments bindings.py reads (screen.py keeps them)."""
    exact = OPTIMIZER_CLASSES | OPTIMIZER_FACTORIES | WRAPPER_CALLS | PARAMETER_SEQUENCES | PARAMETER_CHAINS
    exact |= frozenset(name.rsplit(".", 1)[-1] for name in ENGINE_FACTORIES)
    exact |= frozenset(DOCUMENTED_RUNNERS)  # `create_supervised_trainer(model, optimizer, loss_fn)`
    return r"optim|Optimizer|^(?:%s)$" % "|".join(sorted(map(re.escape, exact)))
