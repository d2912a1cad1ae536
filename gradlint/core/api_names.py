"""Every API name gradlint knows: torch's, Accelerate's, Lightning's, DeepSpeed's, ignite's,
other libraries' optimizers, schedulers and wrappers.  The one place they are spelled.

The checker (gradlint/model/), the text screens that run before any parse (prefilter.py,
screen.py, project/scan.py), the verifier's probes (gradlint/verify/) and the in-run
guard's patches (gradlint/guard/) all read these groups, so a name added here reaches all
of them (tests/test_api_names.py fails when a string literal elsewhere in gradlint is an
API name).  What a name *means* (which event a call is) is decided by
gradlint/core/events.py and classify.py, not here.

Stdlib only and cheap to import: the pre-commit shortcut (gradlint/check/quick.py) imports
prefilter.py, which imports this module and nothing else of gradlint.
"""

import re

# --- packages -------------------------------------------------------------------

# A file that imports one of OTHER_FRAMEWORKS and none of TORCH_PACKAGES is written for
# another framework, whose gradients behave differently (MXNet's backward overwrites them).
OTHER_FRAMEWORKS = frozenset("mxnet gluonnlp tensorflow keras tf_keras jax jaxlib flax optax haiku equinox".split())
TORCH_PACKAGES = frozenset(
    "torch torchvision torchaudio torchtext lightning pytorch_lightning lightning_fabric accelerate deepspeed ignite timm".split()
)
# Qualified names that are torch's own utilities (`torch.nn.utils.clip_grad_norm_`, and
# `nn.utils...` through `from torch import nn`), not a method of some other object.
TORCH_PREFIX = "torch."
TORCH_PREFIXES = (TORCH_PREFIX, "nn.")
TORCH_OPTIM_PREFIX = "torch.optim."
TORCH_NN_PREFIX = "torch.nn."
TORCH_SCHEDULER_MODULE = "torch.optim.lr_scheduler"
SCHEDULER_MODULE_PREFIXES = (TORCH_SCHEDULER_MODULE, "transformers.optimization")

# --- optimizers -------------------------------------------------------------------

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
# An optimizer's constructor: `SGD(params, lr)`, `SGD(params=...)`; a parameter group is a
# dict with a "params" entry (`[{"params": ..., "lr": ...}]`), kept in `opt.param_groups`.
PARAMS_KEYWORD = "params"
PARAM_GROUPS = "param_groups"
ADD_PARAM_GROUP = "add_param_group"  # `opt.add_param_group({"params": ...})` adds a group after construction
LEARNING_RATE_KEY = "lr"
CLOSURE_KEYWORD = "closure"  # `opt.step(closure)`
# A module's parameters: `model.parameters()`, `model.named_parameters()`.
PARAMETER_METHODS = ("parameters", "named_parameters")
# The keywords a call takes the parameters it optimizes by: an optimizer's `params=`,
# `deepspeed.initialize(model=..., model_parameters=...)`.
PARAMETERS_KEYWORDS = (PARAMS_KEYWORD, "model_parameters")
MODULE_FORWARD = "forward"  # what calling a module runs: `model(x)` is `model.forward(x)`
# What calling any other object runs: `loss_scaler(loss, opt)` is `loss_scaler.__call__(loss, opt)`.
OBJECT_CALL = "__call__"
# A wrapper's inner optimizer: Accelerate's `AcceleratedOptimizer.optimizer`, Lightning's
# `LightningOptimizer.optimizer`; stepping the wrapper steps this one.
WRAPPED_OPTIMIZER_ATTRIBUTE = "optimizer"
# Module classes of torch.nn that hold other modules and are no model of their own.
MODULE_CONTAINERS = frozenset("Sequential ModuleList ModuleDict DataParallel".split())

# --- schedulers -------------------------------------------------------------------

# Schedulers whose step() takes a metric and is meant to run per epoch after training.
PLATEAU_SCHEDULERS = frozenset({"ReduceLROnPlateau"})
SCHEDULER_CLASSES = frozenset(
    """LambdaLR MultiplicativeLR StepLR MultiStepLR ConstantLR LinearLR ExponentialLR
    SequentialLR CosineAnnealingLR ChainedScheduler ReduceLROnPlateau CyclicLR OneCycleLR
    CosineAnnealingWarmRestarts PolynomialLR LRScheduler _LRScheduler
    DummyScheduler MegatronLMDummyScheduler""".split()
)
# transformers' `get_linear_schedule_with_warmup`, `get_cosine_schedule_with_warmup`, ...
SCHEDULER_FACTORY = re.compile(r"^get_\w*schedule\w*$")
# A scheduler's optimizer: `LambdaLR(optimizer=opt, ...)`, `scheduler.optimizer`.
SCHEDULER_OPTIMIZER = "optimizer"

# --- AMP: GradScaler ----------------------------------------------------------------

GRAD_SCALERS = frozenset({"GradScaler", "ShardedGradScaler"})
SCALER_SCALE = "scale"  # `scaler.scale(loss).backward()`
SCALER_UNSCALE = "unscale_"  # `scaler.unscale_(optimizer)`
SCALER_ENABLED_KEYWORD = "enabled"  # `GradScaler(enabled=False)` scales nothing
# A GradScaler's methods that read its current scale (a clip threshold multiplied by it is in scaled units).
SCALE_READERS = frozenset({"get_scale"})
SCALER_DEVICE_ATTRIBUTE = "_device"  # torch's GradScaler keeps the device it scales on here
CUDA_DEVICE = "cuda"

# --- tensors and their gradients ---------------------------------------------------

GRAD = "grad"  # `p.grad`
REQUIRES_GRAD = "requires_grad"  # `p.requires_grad`: False for a frozen parameter, which gets no gradient
DATA = "data"  # `p.data`, `p.grad.data`
PRIVATE_GRAD = "_grad"  # the attribute behind `p.grad`, written by hand to share a tensor
GRAD_ZERO = "zero_"  # `p.grad.zero_()`
# Tensor methods that return the same values (a copy, elsewhere, in another dtype):
# `p.grad.clone()`, `p.grad.detach().cpu()`.
SAME_VALUE_METHODS = ("clone", "detach", "cpu", "cuda", "to", "contiguous", "float")
# What reads only a tensor's shape, type or place, not its values: `torch.zeros_like(p.grad)`,
# `p.grad.new_zeros(...)`, `p.grad.device`.  A `p.grad = ...` built from these alone is new.
SHAPE_ONLY_SUFFIX = "_like"
SHAPE_ONLY_ATTRIBUTES = frozenset({
    "shape", "size", "dtype", "device", "layout", "ndim", "dim", "numel", "is_sparse", "is_cuda",
    "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
})
TENSOR_TO = "to"  # `p.grad.to(device)`
# The attribute of an AccumulateGrad node of the autograd graph that holds its leaf tensor.
GRAPH_LEAF_ATTRIBUTE = "variable"
INFINITY = "inf"  # `float("inf")`, `math.inf`, `torch.inf`

# --- clear -----------------------------------------------------------------------

ZERO_GRAD = "zero_grad"  # `optimizer.zero_grad()`, `model.zero_grad()`
ZERO_GRAD_METHODS = frozenset({ZERO_GRAD})
SET_TO_NONE_KEYWORD = "set_to_none"  # `zero_grad(set_to_none=False)`

# --- backward --------------------------------------------------------------------

BACKWARD = "backward"  # `loss.backward()`
MANUAL_BACKWARD_METHODS = frozenset({"manual_backward"})  # Lightning, Fabric
BACKWARD_FUNCTION = "torch.autograd.backward"
BACKWARD_FUNCTIONS = frozenset({BACKWARD_FUNCTION})
# These compute gradients without writing .grad: not events.
NOT_BACKWARD = frozenset({"torch.autograd.grad", "torch.distributed.autograd.backward"})
# Names that make a call a backward (the base word and the longer names ending with it).
BACKWARD_NAMES = frozenset({BACKWARD}) | MANUAL_BACKWARD_METHODS

# --- step ------------------------------------------------------------------------

STEP = "step"  # `optimizer.step()`, `scaler.step(optimizer)`, `scheduler.step()`
STEP_FUNCTIONS = frozenset({"optimizer_step"})  # torch_xla: xm.optimizer_step(opt); strategy.optimizer_step
TRAINING_STEP = "training_step"  # the LightningModule method run once per batch
STEP_NAMES = frozenset({STEP, TRAINING_STEP}) | STEP_FUNCTIONS
# In-place updates of a parameter: from its own gradient (`p.data.add_(p.grad, alpha=-lr)`)
# they are a step by hand.
MANUAL_UPDATE_METHODS = frozenset({"add_", "sub_", "addcdiv_", "addcmul_", "copy_"})
# The last names of every call that can be a backward or a step: a loop needs one
# (or a call of a helper that has one) to be a training loop at all.
LOOP_EVENT_NAMES = BACKWARD_NAMES | {STEP} | STEP_FUNCTIONS
# A project class built on nothing but PROTOCOL_FREE_BASES defines its own `step()` /
# `backward()` (none of them has a method of these names).
OWN_PROTOCOL_METHODS = frozenset({BACKWARD, STEP}) | STEP_FUNCTIONS
PROTOCOL_FREE_BASES = frozenset({"object", "abc.ABC", "torch.nn.Module", "torch.nn.modules.module.Module"})
# `opt.register_step_post_hook(fn)` and torch's global `register_optimizer_step_post_hook(fn)`.
STEP_HOOK_METHODS = frozenset({"register_step_post_hook"})
# Methods of an optimizer that touch no gradient: torch.optim.Optimizer's own (its hooks are
# `register_*`), a schedule-free optimizer's `train()` / `eval()` (they swap the weights), and
# Horovod's `skip_synchronize()` context.  Any other method of an optimizer (Sophia's
# `update_hessian()`, SAM's `first_step()`) belongs to a class the checker does not read.
OPTIMIZER_QUIET_METHODS = frozenset({
    "add_param_group", "state_dict", "load_state_dict", "train", "eval", "skip_synchronize",
})
OPTIMIZER_HOOK_PREFIX = "register_"
GLOBAL_STEP_HOOK_FUNCTIONS = frozenset({"register_optimizer_step_post_hook"})

# --- clip ------------------------------------------------------------------------

# torch's clip functions (torch.nn.utils; `clip_grads_with_norm_(params, max_norm, total_norm)`
# is the clip half of clip_grad_norm_, torch 2.6), and timm's dispatcher.  Each writes .grad in place.
TORCH_CLIP_FUNCTIONS = ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_")
CLIP_FUNCTIONS = frozenset(TORCH_CLIP_FUNCTIONS) | {"dispatch_clip_grad"}
CLIP_GRAD_NORM = "clip_grad_norm_"  # FSDP's `model.clip_grad_norm_(max_norm)` too
CLIP_GRAD_VALUE = "clip_grad_value_"  # returns nothing (the others return the total norm)
# torch.nn.utils functions that only measure the gradients and write nothing: no clip
# (`get_total_norm(grads)`, the norm half of clip_grad_norm_, torch 2.6).
NORM_FUNCTIONS = frozenset({"get_total_norm"})
# The limit of a clip: `clip_grad_norm_(params, max_norm=1.0)`, `clip_grad_value_(params, clip_value=0.5)`.
MAX_NORM_KEYWORD = "max_norm"
CLIP_VALUE_KEYWORD = "clip_value"
# `p.grad.clamp_(-c, c)`, `p.grad.data.clip_(...)`: a clip by value, by hand
GRAD_CLIP_METHODS = frozenset({"clamp_", "clip_"})
# clip methods of objects that unscale AMP gradients themselves before clipping
# (Lightning's and Fabric's `clip_gradients`)
SELF_UNSCALING_CLIPS = frozenset({"clip_gradients"})

# --- wrappers and engines ------------------------------------------------------------

# Calls whose result is the same module or optimizer, wrapped.
WRAPPER_CALLS = frozenset(
    """DistributedDataParallel DDP DataParallel FullyShardedDataParallel FSDP compile
    DistributedOptimizer convert_sync_batchnorm prepare prepare_model prepare_optimizer
    setup setup_module setup_optimizers wrap optimize initialize""".split()
)
WRAPPER_METHODS = frozenset("to cuda cpu half float double bfloat16 train module".split())
# Calls that build a new object with copies of the parameters of what they are handed.
DEEP_COPIES = frozenset({"copy.deepcopy"})
# Calls that read back saved objects (`checkpoint = torch.load(path)`).
CHECKPOINT_LOADERS = frozenset({"torch.load"})
# The keywords a wrapper call takes what it wraps by: `DDP(module=m)`, `prepare(model=m, optimizer=o)`.
WRAPPED_KEYWORDS = ("module", "model", "optimizer")
# Engines that take the loss themselves and clear their own gradients in step().
ENGINE_FACTORIES = frozenset({"deepspeed.initialize"})
# `with accelerator.accumulate(model):` makes the prepared optimizer's step and zero_grad
# no-ops except on the syncing step.
ACCUMULATE_CONTEXTS = frozenset({"accumulate"})

# --- Lightning -------------------------------------------------------------------

LIGHTNING_MODULES = frozenset({"LightningModule"})
# `sch = self.lr_schedulers()` in a LightningModule: the schedulers configure_optimizers built.
LIGHTNING_SCHEDULER_ACCESSORS = frozenset({"lr_schedulers"})
# `self.automatic_optimization = False`, or a property of that name returning False: manual optimization
AUTOMATIC_OPTIMIZATION = "automatic_optimization"

# --- framework trainers -------------------------------------------------------------

# transformers' Trainer (and trl's, built on it): `training_step` computes the loss and
# backpropagates (through `compute_loss`), then the trainer steps `self.optimizer` and
# `self.lr_scheduler` and clears the model.  SpeechBrain's Brain.fit calls `fit_batch`,
# which does it all.  (gradlint/core/events.py says which events these are.)
HF_TRAINER_PACKAGES = ("transformers.", "trl.")
HF_TRAINER_SUFFIX = "Trainer"
HF_COMPUTE_LOSS = "compute_loss"
HF_TRAINER_OPTIMIZER = "self.optimizer"
HF_TRAINER_SCHEDULER = "self.lr_scheduler"
SPEECHBRAIN_PACKAGE = "speechbrain."
SPEECHBRAIN_BRAIN = "Brain"
SPEECHBRAIN_FIT_BATCH = "fit_batch"

# --- ignite ----------------------------------------------------------------------

IGNITE_PACKAGE = "ignite."
# Framework objects built from a function that they run once per iteration, with the
# package they must come from: `Engine(update_fn)` (ignite) makes update_fn a loop body.
ITERATION_RUNNERS = {"Engine": IGNITE_PACKAGE}
# `@trainer.on(Events.EPOCH_COMPLETED)` on such an object: the handler runs again and again.
ITERATION_HANDLER_DECORATORS = frozenset({"on"})
# `trainer.add_event_handler(Events.EPOCH_STARTED, handler, *args)`: the same, registered by a call.
HANDLER_REGISTRATION_METHODS = frozenset({"add_event_handler"})
# ignite's `Events`, by when an engine runs their handlers (its documented order: per epoch
# EPOCH_STARTED, then per batch GET_BATCH_*, ITERATION_STARTED, the process function,
# ITERATION_COMPLETED, then EPOCH_COMPLETED; the rest before or after the whole run).
IGNITE_EPOCH_START_EVENTS = ("EPOCH_STARTED",)
IGNITE_ITERATION_START_EVENTS = ("GET_BATCH_STARTED", "GET_BATCH_COMPLETED", "ITERATION_STARTED")
IGNITE_ITERATION_END_EVENTS = ("ITERATION_COMPLETED",)
IGNITE_EPOCH_END_EVENTS = ("EPOCH_COMPLETED",)
IGNITE_ONCE_EVENTS = ("STARTED", "COMPLETED", "TERMINATE", "EXCEPTION_RAISED", "DATALOADER_STOP_ITERATION")
# ignite's `create_supervised_trainer(model, optimizer, loss_fn)` clears, backpropagates and
# steps `optimizer` once per batch: (package, position and keyword of the optimizer argument).
DOCUMENTED_RUNNERS = {"create_supervised_trainer": (IGNITE_PACKAGE, 1, "optimizer")}

# --- autograd modes ------------------------------------------------------------------

# `with torch.no_grad():`, `@torch.inference_mode()`: nothing computed there has a graph.
# `enable_grad` turns gradients back on; `set_grad_enabled(flag)` does either.
GRAD_DISABLING = frozenset(
    """torch.no_grad torch.inference_mode torch.autograd.no_grad torch.autograd.inference_mode
    torch.autograd.grad_mode.no_grad torch.autograd.grad_mode.inference_mode""".split()
)
INFERENCE_MODE = "inference_mode"  # `inference_mode(False)` leaves gradients on
GRAD_ENABLING = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
GRAD_SETTERS = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})

# --- processes (the verifier follows a script into them) ------------------------------

SPAWN_FUNCTION = "torch.multiprocessing.spawn"
SPAWN_MODULE = "torch.multiprocessing.spawn"  # the module that defines it, of the same name
# Packages whose own processes (a DataLoader's workers, spawn's) are no script of the user's.
TORCH_PROCESS_PACKAGES = ("torch.utils.data", "torch.multiprocessing")

# --- Python's own names ----------------------------------------------------------------

# Builtins that only look at what they are handed (`hasattr(self.optimizer, "clip_grad_norm")`):
# never a clear of an optimizer passed to them.
INSPECTING_BUILTINS = frozenset(
    {"hasattr", "getattr", "isinstance", "issubclass", "type", "id", "len", "repr", "str", "vars", "dir",
     "callable", "hash", "format", "bool",
     # counting and arithmetic: `range(optim_epochs)` is handed a count named after the optimizer
     "range", "int", "float", "round", "abs", "min", "max", "divmod", "pow", "print"}
)
# What a parameter expression goes through and stays parameters: `list(model.parameters())`,
# `itertools.chain(a.parameters(), b.parameters())`.
PARAMETER_SEQUENCES = frozenset("list tuple iter set sorted filter".split())
PARAMETER_CHAINS = frozenset({"chain"})
PARAMETER_PASSES = PARAMETER_SEQUENCES | PARAMETER_CHAINS
LIST_FILLERS = ("append", "extend")  # `params.append(p)`, `params.extend(m.parameters())`

# --- spellings for the text screens -----------------------------------------------------
#
# prefilter.py and screen.py look for these words in raw text before any parse.

# Words in a call's name that may make it an event (its receiver and arguments matter).
EVENT_WORDS = (BACKWARD, STEP, GRAD, "zero", "clip", "unscale", SCALER_SCALE) + tuple(sorted(ACCUMULATE_CONTEXTS))
