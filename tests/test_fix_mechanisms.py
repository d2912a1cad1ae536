"""Mechanisms of issue 33 (real fixes: the version before a fix gets the finding, the fixed
version none) and issue 27's guards and gradient hand-off, each as wrong and right snippets.

Every snippet's findings must equal its `# expect:` marks exactly (codes and lines); a
snippet without marks must be silent.  The fixtures under fixtures/ run the same shapes as
scripts (and under `gradlint verify`); these cover the spellings a fixture cannot all hold.
"""

from __future__ import annotations

import pytest

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings
from marks import expected_marks, found_marks


def marks(source: str) -> list[tuple[int, str]]:
    return found_marks(check_source(source, "train.py", Settings.default()).findings)


def case(source: str) -> str:
    return source.lstrip("\n")


# --- accelerate's accumulate block: a clear before the backward fires, after the step or
# before the `with` it does not, whatever the spelling of the block --------------------------

_ACCUMULATE = """
import torch
from accelerate import Accelerator
class Trainer:
    def __init__(self, model):
        self.accelerator = Accelerator(gradient_accumulation_steps=4)
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.model, self.optimizer = self.accelerator.prepare(model, self.optimizer)
    def clear(self):
        self.optimizer.zero_grad()
    def fit(self, loader):
        accelerator, model, optimizer = self.accelerator, self.model, self.optimizer
        for batch in loader:
{body}
"""

ACCUMULATE_SPELLINGS = {
    "plain": "with accelerator.accumulate(model):",
    "two items, accumulate first": "with accelerator.accumulate(model), accelerator.autocast():",
    "two items, accumulate second": "with accelerator.autocast(), accelerator.accumulate(model):",
    "attribute receiver": "with self.accelerator.accumulate(self.model):",
    "several models": "with accelerator.accumulate(model, model):",
    "parenthesised": "with (accelerator.accumulate(model)):",
}

ACCUMULATE_BODIES = {
    "clear at the top": ("optimizer.zero_grad()  # expect: GL002", "accelerator.backward(model(batch))", "optimizer.step()"),
    "clear at the top, by a method": ("self.clear()", "accelerator.backward(model(batch))", "optimizer.step()"),
    "clear under the sync test": (
        "if accelerator.sync_gradients:\n{inner}    optimizer.zero_grad()  # expect: GL002",
        "accelerator.backward(model(batch))",
        "optimizer.step()",
    ),
    "clear under autocast": ("with torch.autocast('cpu'):\n{inner}    optimizer.zero_grad()  # expect: GL002",
                             "accelerator.backward(model(batch))", "optimizer.step()"),
    "backward, clear, step": ("accelerator.backward(model(batch))", "optimizer.zero_grad()  # expect: GL002", "optimizer.step()"),
    "clear after the step": ("accelerator.backward(model(batch))", "optimizer.step()", "optimizer.zero_grad()"),
}


def _accumulate_source(spelling: str, body: tuple) -> tuple[str, bool]:
    inner = " " * 16
    lines = [" " * 12 + spelling] + [inner + line.format(inner=inner) for line in body]
    source = _ACCUMULATE.format(body="\n".join(lines)).lstrip("\n")
    if body[0] == "self.clear()":
        # the clear is reported where it is written, in the method
        source = source.replace("        self.optimizer.zero_grad()\n", "        self.optimizer.zero_grad()  # expect: GL002\n")
    return source


@pytest.mark.parametrize("spelling", list(ACCUMULATE_SPELLINGS))
@pytest.mark.parametrize("body", list(ACCUMULATE_BODIES))
def test_accumulate_contract_holds_for_every_spelling_of_the_block(spelling, body):
    source = _accumulate_source(ACCUMULATE_SPELLINGS[spelling], ACCUMULATE_BODIES[body])
    assert marks(source) == expected_marks(source), source


@pytest.mark.parametrize("spelling", list(ACCUMULATE_SPELLINGS))
def test_a_clear_in_the_loop_body_before_the_accumulate_block_is_right(spelling):
    body = "\n".join(
        [" " * 12 + "optimizer.zero_grad()", " " * 12 + ACCUMULATE_SPELLINGS[spelling]]
        + [" " * 16 + line for line in ("accelerator.backward(model(batch))", "optimizer.step()")]
    )
    assert marks(_ACCUMULATE.format(body=body).lstrip("\n")) == []


# --- same test, same branch: a test and its negation are one condition ---------------------

SAME_TEST = {
    "the scaler loop of issue 33 (is None / is not None)": ("""
import torch
def train(model, loader, loss_fn, args):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda") if args.amp else None
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        if scaler is None:
            loss.backward()
        else:
            scaler.scale(loss).backward()
        if scaler is not None:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if scaler is None:
            opt.step()
        else:
            scaler.step(opt)
            scaler.update()
"""),
    "a flag and its negation": ("""
import torch
def train(model, loader, cfg, scaler):
    opt = torch.optim.AdamW(model.parameters())
    for x in loader:
        opt.zero_grad()
        if cfg.fp16:
            scaler.scale(model(x).sum()).backward()
        if not cfg.fp16:
            model(x).sum().backward()
        if cfg.fp16:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if not cfg.fp16:
            opt.step()
        else:
            scaler.step(opt)
            scaler.update()
"""),
    "== and !=": ("""
import torch
def train(model, loader, args, scaler):
    opt = torch.optim.AdamW(model.parameters())
    for x in loader:
        opt.zero_grad()
        if args.precision != "fp16":
            model(x).sum().backward()
        else:
            scaler.scale(model(x).sum()).backward()
        if args.precision == "fp16":
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if args.precision == "fp16":
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
"""),
    "the clear only with the amp setting (issue 33)": ("""
import torch
def train(model, loader, loss_fn, args):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = loss_fn(model(x), y)
        if args.amp:
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()  # expect: GL001
            opt.step()
"""),
    "the clear on both settings": ("""
import torch
def train(model, loader, loss_fn, args):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        loss = loss_fn(model(x), y)
        if args.amp:
            opt.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            opt.zero_grad()
            loss.backward()
            opt.step()
"""),
    "a clear guarded by the optimizer's own presence": ("""
import torch
def train(model, loader, optimizer=None):
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        if optimizer is not None:
            optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
"""),
    "a clear on the iterations that skip the step (!=)": ("""
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % k != 0:
            opt.zero_grad()  # expect: GL002
        if (i + 1) % k == 0:
            opt.step()
"""),
    "a clear on the step's iterations, after it (!= negated)": ("""
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % k == 0:
            opt.step()
        if not (i + 1) % k != 0:
            opt.zero_grad()
"""),
    "a setting rebound between two tests of it": ("""
import torch
def train(model, loader, warmup):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for step, x in enumerate(loader):
        opt.zero_grad()
        scaled = step >= warmup
        if scaled:
            scaler.scale(model(x).sum()).backward()
        else:
            model(x).sum().backward()
        scaled = False
        if scaled:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        scaler.step(opt)
        scaler.update()
"""),
}


@pytest.mark.parametrize("name", list(SAME_TEST))
def test_same_test_same_branch(name):
    source = case(SAME_TEST[name])
    assert marks(source) == expected_marks(source)


# --- an accumulation setting compared with a number picks a regime for the whole loop --------

SETTING_REGIME = {
    "accumulate or clear-backward-step, the step of one side under a modulo": ("""
import torch
def train(config, model, loader, optimizer):
    for idx, x in enumerate(loader):
        loss = model(x).sum()
        if config.TRAIN.ACCUMULATION_STEPS > 1:
            loss = loss / config.TRAIN.ACCUMULATION_STEPS
            loss.backward()
            if (idx + 1) % config.TRAIN.ACCUMULATION_STEPS == 0:
                optimizer.step()
                optimizer.zero_grad()
        else:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "the same with the setting's sides swapped (== 1)": ("""
import torch
def train(accum, model, loader, optimizer):
    for idx, x in enumerate(loader):
        loss = model(x).sum()
        if accum == 1:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            (loss / accum).backward()
            if (idx + 1) % accum == 0:
                optimizer.step()
                optimizer.zero_grad()
"""),
    "a clear before every micro-batch on the accumulating side": ("""
import torch
def train(cfg, model, loader, optimizer):
    for idx, x in enumerate(loader):
        loss = model(x).sum()
        if cfg.grad_accum_steps > 1:
            optimizer.zero_grad()  # expect: GL002
            (loss / cfg.grad_accum_steps).backward()
            if (idx + 1) % cfg.grad_accum_steps == 0:
                optimizer.step()
        else:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""),
    "where the setting makes the count 1, the modulo boundary always holds": ("""
import torch
def train(accum_steps, model, loader, optimizer):
    for idx, x in enumerate(loader):
        loss = model(x).sum()
        if accum_steps > 1:
            (loss / accum_steps).backward()
        else:
            optimizer.zero_grad()
            loss.backward()
        if (idx + 1) % accum_steps == 0:
            optimizer.step()
            if accum_steps > 1:
                optimizer.zero_grad()
"""),
    "a counter the file increments is no setting: the window still moves": ("""
import torch
class Trainer:
    def __init__(self, model, accum):
        self.model, self.accum, self.accum_count = model, accum, 0
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    def micro(self, x):
        self.model(x).sum().backward()
        self.accum_count += 1
    def fit(self, loader):
        for x in loader:
            self.optimizer.zero_grad()  # expect: GL002
            self.micro(x)
            if self.accum_count >= 4:
                self.optimizer.step()
                self.restart()
    def restart(self):
        self.accum_count = 0
"""),
}


@pytest.mark.parametrize("name", list(SETTING_REGIME))
def test_an_accumulation_setting_picks_one_regime(name):
    source = case(SETTING_REGIME[name])
    assert marks(source) == expected_marks(source)


# A setting inside `and`/`or` with a test that varies (`accum == 1 and batch_index == 0`) is
# no accumulation window: the chain is one only when an operand is (a modulo, a flag, an
# accumulation-worded counter). Read as a whole, the words of the setting made the skipped
# clear look deliberate (abhishekkrthakur/tez 11d3a891a7).  Two more readings complete it: a
# clear under a test true on the first iteration only (`batch_index == 0`) runs before any
# backward of the loop, as if before it; and a clear under a plain test inside the step's
# window boundary (`if batch_index > 0:`) is a clear of only some of the step's iterations.
SETTING_IN_CHAIN = {
    "a clear only at batch 0 of the count-1 regime, the clear after the step skipped at batch 0": ("""
import torch
class Runner:
    def __init__(self, model, optimizer, accumulation_steps):
        self.model, self.optimizer = model, optimizer
        self.accumulation_steps, self.batch_index = accumulation_steps, 0
    def _clear(self):
        if self.accumulation_steps == 1 and self.batch_index == 0:
            self.model.zero_grad()
    def _update(self):
        if (self.batch_index + 1) % self.accumulation_steps == 0:
            self.optimizer.step()
            if self.batch_index > 0:
                self.model.zero_grad()
    def fit(self, loader):
        for batch_index, x in enumerate(loader):
            self.batch_index = batch_index
            self._clear()
            self.model(x).sum().backward()  # expect: GL001
            self._update()
"""),
    "the same, fixed: the clear after the step is unconditional": ("""
import torch
class Runner:
    def __init__(self, model, optimizer, accumulation_steps):
        self.model, self.optimizer = model, optimizer
        self.accumulation_steps, self.batch_index = accumulation_steps, 0
    def _clear(self):
        if self.accumulation_steps == 1 and self.batch_index == 0:
            self.model.zero_grad()
    def _update(self):
        if (self.batch_index + 1) % self.accumulation_steps == 0:
            self.optimizer.step()
            self.model.zero_grad()
    def fit(self, loader):
        for batch_index, x in enumerate(loader):
            self.batch_index = batch_index
            self._clear()
            self.model(x).sum().backward()
            self._update()
"""),
    "a plain function": ("""
import torch
def train(model, optimizer, loader, grad_accum):
    for i, x in enumerate(loader):
        if grad_accum == 1 and i == 0:
            optimizer.zero_grad()
        model(x).sum().backward()  # expect: GL001
        if (i + 1) % grad_accum == 0:
            optimizer.step()
            if i > 0:
                optimizer.zero_grad()
"""),
    "the same test spelled as a negated `or`": ("""
import torch
def train(model, optimizer, loader, grad_accum):
    for i, x in enumerate(loader):
        if not (grad_accum > 1 or i > 0):
            optimizer.zero_grad()
        model(x).sum().backward()  # expect: GL001
        if (i + 1) % grad_accum == 0:
            optimizer.step()
            if i > 0:
                optimizer.zero_grad()
"""),
    "a window counter comes back to 0: its clear is no first-iteration clear": ("""
import torch
def train(model, optimizer, loader, per_step):
    micro = 0
    for x in loader:
        if micro == 0:
            optimizer.zero_grad()
        (model(x).sum() / per_step).backward()
        micro += 1
        if micro == per_step:
            optimizer.step()
            micro = 0
"""),
    "a counter the loop resets by assignment is no loop variable": ("""
import torch
def train(model, optimizer, loader, per_step):
    micro = 0
    for x in loader:
        if micro == 0:
            optimizer.zero_grad()
        (model(x).sum() / per_step).backward()
        micro = micro + 1
        if micro == per_step:
            optimizer.step()
            micro = 0
"""),
    "an operand that is a window keeps the chain a window": ("""
import torch
def train(model, optimizer, loader, grad_accum):
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if grad_accum > 1 and (i + 1) % grad_accum == 0:
            optimizer.step()
            optimizer.zero_grad()
        elif grad_accum == 1:
            optimizer.step()
            optimizer.zero_grad()
"""),
}


@pytest.mark.parametrize("name", list(SETTING_IN_CHAIN))
def test_a_setting_inside_and_or_is_no_accumulation_window(name):
    source = case(SETTING_IN_CHAIN[name])
    assert marks(source) == expected_marks(source)


# An inner loop that accumulates the chunks of a batch and clears on its own first chunk:
# that clear runs once per batch, before the chunks' backwards (main read it as a clear of
# only some iterations: a false GL001).  Its counter starts again every outer iteration, so
# it is no first-iteration clear of the outer loop either.
FIRST_CHUNK = {
    "the clear first in the inner loop": ("""
import torch
def train(model, optimizer, loader):
    for batch in loader:
        for j, part in enumerate(batch.chunk(4)):
            if j == 0:
                optimizer.zero_grad()
            model(part).sum().backward()
        optimizer.step()
"""),
    "after an unpacking that calls nothing, with `range`": ("""
import torch
def train(model, optimizer, loader):
    for inputs, targets in loader:
        for j in range(4):
            x, y = inputs[j], targets[j]
            if not j:
                optimizer.zero_grad()
            (model(x) - y).pow(2).sum().backward()
        optimizer.step()
"""),
    "a clear on the first chunk of every other batch is still GL001": ("""
import torch
def train(model, optimizer, loader):
    for i, batch in enumerate(loader):
        for j, part in enumerate(batch.chunk(4)):
            if j == 0 and i % 2 == 0:
                optimizer.zero_grad()
            model(part).sum().backward()  # expect: GL001
        optimizer.step()
"""),
}


@pytest.mark.parametrize("name", list(FIRST_CHUNK))
def test_an_inner_loop_clearing_on_its_first_chunk_clears_once_per_batch(name):
    source = case(FIRST_CHUNK[name])
    assert marks(source) == expected_marks(source)


# --- constant arguments switch a helper's events; no backward without gradients ------------

_HELPER = """
import torch
class Model:
    def __init__(self, net):
        self.net = net
        self.optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
{helper}
    def train_step(self, batch):
        self.optimizer.zero_grad()
        {train_call}
        self.optimizer.step()
    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
            {eval_call}
"""

_FORWARD_BACKWARD = """
    def forward_backward(self, batch, do_backward=True):
        loss = self.net(batch).sum()
        if do_backward:
            loss.backward()
        return loss
"""

CONSTANT_ARGUMENTS = {
    "keyword False, default True": (_FORWARD_BACKWARD, "self.forward_backward(batch)",
                                    "self.forward_backward(batch, do_backward=False)"),
    "positional False": (_FORWARD_BACKWARD, "self.forward_backward(batch, True)", "self.forward_backward(batch, False)"),
    "early return on the negation": ("""
    def forward_backward(self, batch, train=True):
        loss = self.net(batch).sum()
        if not train:
            return loss
        loss.backward()
        return loss
""", "self.forward_backward(batch)", "self.forward_backward(batch, train=False)"),
    "a mode string": ("""
    def run(self, batch, mode="train"):
        loss = self.net(batch).sum()
        if mode == "train":
            loss.backward()
        elif mode != "eval":
            raise ValueError(mode)
        return loss
""", "self.run(batch)", "self.run(batch, mode='eval')"),
    "passed through a second helper": ("""
    def forward_backward(self, batch, do_backward=True):
        return self.inner(batch, do_backward)
    def inner(self, batch, backward):
        loss = self.net(batch).sum()
        if backward and self.net.training:
            loss.backward()
        return loss
""", "self.forward_backward(batch)", "self.forward_backward(batch, do_backward=False)"),
    "called under no_grad": ("""
    def forward_backward(self, batch):
        loss = self.net(batch).sum()
        if self.net.training:
            loss.backward()
        return loss
    def evaluate(self, batch):
        with torch.no_grad():
            return self.forward_backward(batch)
""", "self.forward_backward(batch)", "self.evaluate(batch)"),
    "a helper decorated with inference_mode": ("""
    def forward_backward(self, batch):
        loss = self.net(batch).sum()
        if self.net.training:
            loss.backward()
        return loss
    @torch.inference_mode()
    def evaluate(self, batch):
        return self.forward_backward(batch)
""", "self.forward_backward(batch)", "self.evaluate(batch)"),
}


@pytest.mark.parametrize("name", list(CONSTANT_ARGUMENTS))
def test_constant_arguments_decide_the_helper_s_tests(name):
    helper, train_call, eval_call = CONSTANT_ARGUMENTS[name]
    source = _HELPER.format(helper=helper.rstrip("\n"), train_call=train_call, eval_call=eval_call).lstrip("\n")
    assert marks(source) == [], source
    # and without the clear, the one bug left is the missing clear (not a step before a backward)
    broken = source.replace("        self.optimizer.zero_grad()\n", "")
    assert {code for _, code in marks(broken)} == {"GL001"}, broken


def _backward_is_conditional(source: str) -> bool:
    import libcst as cst

    from gradlint.model.flow import conditional
    from gradlint.model.loops import build

    (loop,) = build(cst.parse_module(source), "train.py", source).loops
    (backward,) = {e.key for e in loop.events if e.kind == "B"}
    return backward in conditional(loop)


def test_an_unknown_argument_or_a_reassigned_parameter_decides_nothing():
    def source(train_call, helper=_FORWARD_BACKWARD):
        return _HELPER.format(helper=helper.rstrip("\n"), train_call=train_call, eval_call="pass").lstrip("\n")

    assert not _backward_is_conditional(source("self.forward_backward(batch, do_backward=True)"))
    assert not _backward_is_conditional(source("self.forward_backward(batch)"))
    assert _backward_is_conditional(source("self.forward_backward(batch, do_backward=flag)"))
    assert _backward_is_conditional(source("self.forward_backward(batch, *args)"))
    assert _backward_is_conditional(source("self.forward_backward(batch, **options)"))
    reassigned = _FORWARD_BACKWARD.replace("        loss = self.net", "        do_backward = not do_backward\n        loss = self.net")
    assert _backward_is_conditional(source("self.forward_backward(batch, do_backward=True)", reassigned))


def test_no_backward_in_a_helper_run_without_gradients():
    """The model itself: the evaluation's call of the helper brings no backward into the loop."""
    from gradlint.model.loops import build
    import libcst as cst

    for helper, eval_call in [(name, CONSTANT_ARGUMENTS[name]) for name in ("called under no_grad", "a helper decorated with inference_mode")]:
        source = _HELPER.format(helper=eval_call[0].rstrip("\n"), train_call=eval_call[1], eval_call=eval_call[2]).lstrip("\n")
        (loop,) = build(cst.parse_module(source), "train.py", source).loops
        backwards = [e for e in loop.events if e.kind == "B"]
        assert len(backwards) == 1 and backwards[0].via == ("self.train_step()", "self.forward_backward()"), (helper, backwards)


def test_a_backward_in_a_no_grad_block_of_its_own_function_stays_a_backward():
    source = case("""
import torch
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x).sum()
    with torch.no_grad():
        loss.backward()
        opt.step()
""")
    assert [code for _, code in marks(source)] == ["GL001"]


# --- an attribute is every kind it is assigned ------------------------------------------------


def test_an_attribute_assigned_none_and_an_object_is_that_object():
    from gradlint.model.attribute_kinds import several_kinds

    assert several_kinds({"scaler", "module"}) == "scaler"
    assert several_kinds({"optimizer", "custom"}) == "optimizer"
    assert several_kinds({"scheduler", "module"}) == "scheduler"
    # two kinds that matter contradict each other; a class of the file may be a custom scheduler
    assert several_kinds({"optimizer", "scheduler"}) is None
    assert several_kinds({"optimizer", "engine"}) is None
    assert several_kinds({"scheduler", "custom"}) is None
    assert several_kinds({"scaler", "value"}) is None


def test_objects_built_by_methods_of_the_class():
    source = case("""
import torch
class Trainer:
    def __init__(self, model):
        self.model = model
        self.sched = None
    def setup(self):
        self.opt = self.make_optimizer()
        self.sched = self.make_scheduler()
    def make_optimizer(self):
        return torch.optim.AdamW(self.model.parameters())
    def make_scheduler(self):
        return torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=0.1, total_steps=100)
    def fit(self, loader):
        self.setup()
        for x in loader:
            self.opt.zero_grad()
            self.model(x).sum().backward()
            self.sched.step()  # expect: GL008
            self.opt.step()
""")
    assert marks(source) == expected_marks(source)


# --- a scaler's step implies scaled gradients ----------------------------------------------------

SCALER_STEP = {
    "a method no loop of the file calls": """
import torch
class Updater:
    def step(self, model, optimizer, grad_scaler):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        grad_scaler.step(optimizer)
        grad_scaler.update()
""",
    "a loop whose backward is in another module": """
import torch
from .losses import backward_through
def train(model, loader, scaler):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        opt.zero_grad()
        backward_through(scaler, model(x).sum())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        scaler.step(opt)
        scaler.update()
""",
    "unscaled first": """
import torch
class Updater:
    def step(self, model, optimizer, grad_scaler):
        grad_scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        grad_scaler.step(optimizer)
        grad_scaler.update()
""",
    "a scaler built disabled": """
import torch
scaler = torch.amp.GradScaler("cuda", enabled=False)
def update(model, optimizer):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""",
    "a plain step after the clip": """
import torch
def update(model, optimizer):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
""",
}


@pytest.mark.parametrize("name", list(SCALER_STEP))
def test_a_scaler_step_implies_scaled_gradients(name):
    source = case(SCALER_STEP[name])
    assert marks(source) == expected_marks(source)


# --- gradients handed to another model (issue 27) ---------------------------------------------

HANDOFF = {
    "the local copy never cleared": ("""
import torch
def share(model, shared_model):
    for p, shared_p in zip(model.parameters(), shared_model.parameters()):
        shared_p._grad = p.grad
def worker(model, shared_model, optimizer, data):
    for x in data:
        optimizer.zero_grad()
        model(x).sum().backward()  # expect: GL001
        share(model, shared_model)
        optimizer.step()
"""),
    "the local copy cleared": ("""
import torch
def share(model, shared_model):
    for p, shared_p in zip(model.parameters(), shared_model.parameters()):
        shared_p.grad = p.grad.clone()
def worker(model, shared_model, optimizer, data):
    for x in data:
        optimizer.zero_grad()
        model.zero_grad()
        model(x).sum().backward()
        share(model, shared_model)
        optimizer.step()
"""),
    "the optimizer holds the local copy": ("""
import torch
def worker(model, shared_model, data):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in data:
        optimizer.zero_grad()
        model(x).sum().backward()
        for p, shared_p in zip(model.parameters(), shared_model.parameters()):
            shared_p._grad = p.grad
        optimizer.step()
"""),
}


@pytest.mark.parametrize("name", list(HANDOFF))
def test_gradients_handed_to_another_model(name):
    source = case(HANDOFF[name])
    assert marks(source) == expected_marks(source)


# --- mechanisms the fix study needed (benchmarks/fix_study) -------------------------------------

STUDY = {
    "an abstract method called in the loop does not end the iteration": """
import abc
import torch
class Trainer(abc.ABC):
    @abc.abstractmethod
    def compute_loss(self, batch):
        raise NotImplementedError
    def fit(self, loader, accelerator, policy, optimizer):
        for batch in loader:
            with accelerator.accumulate(policy):
                loss = self.compute_loss(batch)
                accelerator.backward(loss)
                optimizer.step()
                policy.zero_grad()  # expect: GL002
""",
    "a stub without the decorator": """
import torch
class Trainer:
    def compute_loss(self, batch):
        \"\"\"Subclasses compute the loss.\"\"\"
        raise NotImplementedError()
    def fit(self, loader, model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            self.compute_loss(batch).backward()  # expect: GL001
            optimizer.step()
""",
    "rescaling a gradient writes no new one": """
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (x, n) in enumerate(loader):
        model(x).sum().backward()
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n
        if step % k == 0:
            opt.step()
            opt.zero_grad()
""",
    "a clear before an inner loop that only splits the micro-batch": """
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, sequence in enumerate(loader):
        opt.zero_grad()  # expect: GL002
        for piece in sequence.split(128):
            model(piece).sum().backward()
        if step % k == 0:
            opt.step()
""",
}


@pytest.mark.parametrize("name", list(STUDY))
def test_mechanisms_the_fix_study_needed(name):
    source = case(STUDY[name])
    assert marks(source) == expected_marks(source)


def test_a_name_that_starts_with_opt_is_not_an_optimizer_for_that():
    # `optional_ctx` handed to an unread context helper is no clear of an optimizer (camelCase
    # `optG` still reads as one)
    source = case("""
import torch
def train(model, loader, optimizer, train_context, optional_ctx):
    optimizer.zero_grad()
    for x in loader:
        with train_context(optional_ctx):
            loss = model(x).sum()
            loss.backward()  # expect: GL001
        optimizer.step()
""")
    assert marks(source) == expected_marks(source)


def test_a_method_returning_its_own_call_is_no_endless_kind():
    # `self.x = self.pick()` where pick() returns `self.pick()`: the kind is unknown, the file is
    # analysed (it was "too deeply nested" once methods' returns were followed)
    source = case("""
import torch
class Teacher:
    def pick(self, data):
        if data:
            return data
        return self.pick(data)
    def fit(self, model, loader):
        self.opt = self.pick(loader)
        for x in loader:
            model(x).sum().backward()  # expect: GL001
            self.opt.step()
""")
    result = check_source(source, "train.py", Settings.default())
    assert result.errors == []
    assert found_marks(result.findings) == expected_marks(source)


# --- a decision no other branch reads does not split the paths -------------------------------

def test_guards_that_nothing_reads_again_do_not_multiply_the_paths():
    """Logging, saving and evaluating every so many steps (each a branch around a method with no
    event) split no path that matters: the loop is still judged (it was `too complex` once a
    scheduler step under a setting added one more branch: a TorchSSL fix of the fix study)."""
    source = case("""
import torch
class Trainer:
    def log(self):
        print(self.it)
    def save(self):
        torch.save(self.model.state_dict(), "m.pt")
    def evaluate(self):
        return self.model.eval()
    def train(self, args):
        scaler = torch.amp.GradScaler("cuda")
        for x in self.loader:
            if self.it > args.max_iter:
                break
            loss = self.model(x).sum()
            if args.amp:
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)  # expect: GL006
                scaler.step(self.optimizer)
                scaler.update()
            else:
                loss.backward()
                self.optimizer.step()
            if args.optim == "SGD":
                self.scheduler.step()
            self.model.zero_grad()
            if self.it % 10 == 0:
                self.log()
            if self.it % 100 == 0:
                self.save()
            if self.it % 1000 == 0:
                self.evaluate()
            if self.it % 50 == 0 and args.rank == 0:
                self.log()
            if self.it % 7 == 0:
                self.save()
            self.it += 1
""")
    assert marks(source) == expected_marks(source)


# --- issue 27's guards: `or`, `not` and `!=` read as sets of iterations -----------------------

GUARDS = {
    "step and clear on the boundary or the last batch (or)": ("""
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    last = len(loader) - 1
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % k == 0 or i == last:
            opt.step()
            opt.zero_grad()
"""),
    "a clear on the iterations the negated `or` leaves out": ("""
import torch
def train(model, loader, k):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    last = len(loader) - 1
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if not ((i + 1) % k == 0 or i == last):
            opt.zero_grad()  # expect: GL002
        if (i + 1) % k == 0 or i == last:
            opt.step()
"""),
    "skip the step off the boundary (`!=` and `not` under `and`)": ("""
import torch
def train(model, loader, k, accelerator):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % k != 0 and not accelerator.sync_gradients:
            continue
        opt.step()
        opt.zero_grad()
"""),
}


@pytest.mark.parametrize("name", list(GUARDS))
def test_guards_combined_by_any_boolean_operator(name):
    source = case(GUARDS[name])
    assert marks(source) == expected_marks(source)


def test_one_missing_clear_is_one_finding_however_many_backwards():
    # two branches of one setting each do the backward; the loop never clears: one misplaced
    # call (the missing zero_grad), so one GL001, on the first backward
    source = case("""
import torch
def train(model, loader, optimizer, scaler, fp16):
    for x in loader:
        loss = model(x).sum()
        if fp16:
            scaler.scale(loss).backward()  # expect: GL001
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
""")
    assert marks(source) == expected_marks(source)
    # two optimizers never cleared are two missing clears
    two = case("""
import torch
def train(gen, disc, loader, opt_g, opt_d):
    for x in loader:
        disc(x).sum().backward()  # expect: GL001
        opt_d.step()
        gen(x).sum().backward()  # expect: GL001
        opt_g.step()
""")
    assert marks(two) == expected_marks(two)


# --- a library's scheduler decided by how it is built and used (issue 27): built from an
# optimizer that the code steps by itself beside it, whatever its class is called ---------------

_LIBRARY_SCHEDULER = """
import torch
from pytorch_transformers import AdamW, WarmupLinearSchedule
def train(model, loader, args):
    optimizer = AdamW(model.parameters(), lr=args.lr)
    scheduler = WarmupLinearSchedule(optimizer, warmup_steps=args.warmup, t_total=100)
    for batch in loader:
        model(batch).backward()
        {first}
        {second}
        optimizer.zero_grad()
"""


def test_a_library_scheduler_is_known_by_how_it_is_built_and_stepped():
    wrong = case(_LIBRARY_SCHEDULER.format(first="scheduler.step()  # expect: GL008", second="optimizer.step()"))
    assert marks(wrong) == expected_marks(wrong)
    right = case(_LIBRARY_SCHEDULER.format(first="optimizer.step()", second="scheduler.step()"))
    assert marks(right) == expected_marks(right) == []
    # stepped through a GradScaler: the optimizer is stepped beside it all the same
    scaled = case(_LIBRARY_SCHEDULER.format(first="scheduler.step()  # expect: GL008", second="scaler.step(optimizer)"))
    assert marks(scaled) == expected_marks(scaled)
    # built from an optimizer the code never steps itself (a wrapper stepped in its place):
    # not taken for a scheduler
    wrapped = case(_LIBRARY_SCHEDULER.format(first="scheduler.step()", second="pass"))
    assert marks(wrapped) == expected_marks(wrapped) == []


def test_a_scheduler_test_without_a_backward_is_no_training_loop():
    # the contract's training loop holds a B and an S: a loop that only steps a scheduler and
    # an optimizer to print the learning rates is not one
    source = case("""
import torch
from solver.lr_scheduler import WarmupMultiStepLR
def test_schedule(net, make_optimizer, cfg):
    optimizer = make_optimizer(cfg, net)
    lr_scheduler = WarmupMultiStepLR(optimizer, [20, 40], warmup_iters=10)
    for i in range(50):
        lr_scheduler.step()
        for j in range(3):
            print(i, lr_scheduler.get_lr()[0])
            optimizer.step()
""")
    assert marks(source) == expected_marks(source) == []


# --- `scaler is not None` in a caller and `if scaler:` in its helper are one test: a scaler, an
# optimizer, a scheduler is true whenever it is not None ---------------------------------------

_TRUTH = """
import torch
class Trainer:
    def _clip(self, grad_clip, optimizer, scaler):
        if grad_clip > 0:
{clip}
    def optimize(self, batch, optimizer, scaler, grad_clip):
        optimizer.zero_grad()
        loss = self.model(batch).sum()
        if self.use_amp and scaler is not None:
            scaler.scale(loss).backward()
            self._clip(grad_clip=grad_clip, optimizer=optimizer, scaler=scaler)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
    def fit(self, loader, optimizer, scaler):
        for batch in loader:
            self.optimize(batch, optimizer, scaler, 1.0)
"""


def test_a_built_object_is_true_whenever_it_is_not_none():
    right = case(_TRUTH.format(clip="""\
            if scaler:
                scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), grad_clip)"""))
    assert marks(right) == expected_marks(right) == []
    wrong = case(_TRUTH.format(clip="""\
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), grad_clip)  # expect: GL006
            if scaler:
                scaler.unscale_(optimizer)"""))
    assert marks(wrong) == expected_marks(wrong)


# --- a test of an object the file always builds is decided (study27b: tnt's guarded unscale) --

_GUARDED_UNSCALE = """
import torch
from torch.cuda.amp import GradScaler
scaler = GradScaler()
for x, y in loader:
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    {guard}
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0){mark}
    scaler.step(opt)
    scaler.update()
"""


@pytest.mark.parametrize("guard", ["if scaler is not None:", "if scaler:", "if not scaler is None:"])
def test_an_unscale_under_a_test_of_a_built_scaler_always_runs(guard):
    source = case(_GUARDED_UNSCALE.format(guard=guard, mark=""))
    assert marks(source) == []


@pytest.mark.parametrize("guard", ["if scaler is None:", "if not scaler:"])
def test_an_unscale_under_the_other_side_never_runs(guard):
    source = case(_GUARDED_UNSCALE.format(guard=guard, mark="  # expect: GL006"))
    assert marks(source) == expected_marks(source) != []


@pytest.mark.xfail(strict=True, reason="not done: the scaled backward before the test says the scaler is not None "
                   "(it would raise), but a use is not yet read as deciding a later test of the same name")
def test_a_scaler_from_a_factory_may_be_none():
    source = case(_GUARDED_UNSCALE.replace("scaler = GradScaler()", "scaler = make_scaler(cfg)").format(
        guard="if scaler is not None:", mark=""))
    assert marks(source) == []  # `scaler.scale(...)` ran, so the scaler is no None here


def test_a_comparison_with_an_empty_tuple_is_read():
    source = case("""
for batch in loader:
    opt.zero_grad()
    model(batch).sum().backward()
    if token_idx.size() != ():
        opt.step()
""")
    result = check_source(source, "train.py", Settings.default())
    assert result.errors == [] and result.findings == []


# --- an unscale_ under a test of the scaler's own state always ran for the clip after it
# (study: allennlp's `clip_gradient`, which unscales only if the optimizer is not unscaled yet) --

_STATE_GUARD = """
import torch
from torch.cuda.amp.grad_scaler import OptState
def train(model, loader, scaler, max_norm, args):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
{guard}
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm){mark}
        scaler.step(opt)
        scaler.update()
"""

SCALER_STATE_GUARDS = {
    "a local taken from the scaler": """\
        state = scaler._per_optimizer_states[id(opt)]
        if state["stage"] is not OptState.UNSCALED:
            scaler.unscale_(opt)""",
    "the state read in the test": """\
        if scaler._per_optimizer_states[id(opt)]["stage"] != OptState.UNSCALED:
            scaler.unscale_(opt)""",
    "the unscale_ on the else side": """\
        if scaler._per_optimizer_states[id(opt)]["stage"] is OptState.UNSCALED:
            pass
        else:
            scaler.unscale_(opt)""",
    "an enabled scaler": """\
        if scaler.is_enabled():
            scaler.unscale_(opt)""",
}

OTHER_GUARDS = {
    "a setting": """\
        if args.unscale_first:
            scaler.unscale_(opt)""",
    "the scaler's state and a setting": """\
        if scaler.is_enabled() and args.unscale_first:
            scaler.unscale_(opt)""",
    "the scaler's state, with another call under it": """\
        if scaler.is_enabled():
            scaler.unscale_(opt)
            opt.zero_grad()""",
}


@pytest.mark.parametrize("name", list(SCALER_STATE_GUARDS))
def test_an_unscale_under_a_test_of_the_scaler_s_state_ran_for_the_clip(name):
    source = case(_STATE_GUARD.format(guard=SCALER_STATE_GUARDS[name], mark=""))
    result = check_source(source, "train.py", Settings.default())
    assert result.errors == [] and marks(source) == []


@pytest.mark.parametrize("name", list(OTHER_GUARDS))
def test_an_unscale_under_any_other_test_may_not_run(name):
    source = case(_STATE_GUARD.format(guard=OTHER_GUARDS[name], mark="  # expect: GL006"))
    found = marks(source)
    assert expected_marks(source) == [mark for mark in found if mark[1] == "GL006"] != []


# --- an and/or test's side decides its parts once the others are known (study27b: tnt) -------

_UNIT = """
{src}"""


def test_the_else_of_an_and_test_decides_its_open_part():
    source = case(_UNIT.format(src='import torch\n\n\nclass Unit:\n    def __init__(self, model, precision, clip_grad_norm=None, clip_grad_value=None):\n        self.model = model\n        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n        self.grad_scaler = torch.cuda.amp.GradScaler() if precision == "fp16" else None\n        self.clip_grad_norm = clip_grad_norm\n        self.clip_grad_value = clip_grad_value\n\n    def fit(self, loader):\n        for x in loader:\n            loss = self.model(x).sum()\n            grad_scaler = self.grad_scaler\n            if grad_scaler:\n                grad_scaler.scale(loss).backward()\n            else:\n                loss.backward()\n            clip_grad_norm = self.clip_grad_norm\n            clip_grad_value = self.clip_grad_value\n            if grad_scaler and (clip_grad_norm or clip_grad_value):\n                grad_scaler.unscale_(self.optimizer)\n            if clip_grad_norm:\n                torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=clip_grad_norm)\n            if clip_grad_value:\n                torch.nn.utils.clip_grad_value_(self.model.parameters(), clip_value=clip_grad_value)\n            if grad_scaler:\n                grad_scaler.step(self.optimizer)\n                grad_scaler.update()\n            else:\n                self.optimizer.step()\n            self.optimizer.zero_grad()\n'))
    assert marks(source) == []


def test_an_unscale_under_a_test_of_another_setting_is_no_unscale_for_the_clip():
    source = case(_UNIT.format(src='import torch\n\n\nclass Unit:\n    def __init__(self, model, precision, clip_grad_norm=None, clip_grad_value=None):\n        self.model = model\n        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n        self.grad_scaler = torch.cuda.amp.GradScaler() if precision == "fp16" else None\n        self.clip_grad_norm = clip_grad_norm\n        self.clip_grad_value = clip_grad_value\n\n    def fit(self, loader):\n        for x in loader:\n            loss = self.model(x).sum()\n            grad_scaler = self.grad_scaler\n            if grad_scaler:\n                grad_scaler.scale(loss).backward()\n            else:\n                loss.backward()\n            clip_grad_norm = self.clip_grad_norm\n            clip_grad_value = self.clip_grad_value\n            if grad_scaler and (clip_grad_norm or clip_grad_value):\n                grad_scaler.unscale_(self.optimizer)\n            if clip_grad_norm:\n                torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=clip_grad_norm)\n            if clip_grad_value:\n                torch.nn.utils.clip_grad_value_(self.model.parameters(), clip_value=clip_grad_value)\n            if grad_scaler:\n                grad_scaler.step(self.optimizer)\n                grad_scaler.update()\n            else:\n                self.optimizer.step()\n            self.optimizer.zero_grad()\n'.replace(
        "if grad_scaler and (clip_grad_norm or clip_grad_value):", "if grad_scaler and clip_grad_value:").replace(
        "max_norm=clip_grad_norm)", "max_norm=clip_grad_norm)  # expect: GL006")))
    assert marks(source) == expected_marks(source) != []


# --- a scheduler is early only before its own optimizer's step (study27b: OpenPrompt) ---------

_TWO_OPTIMIZERS = """
import torch
from transformers import get_linear_schedule_with_warmup
if tune_model:
    optimizer1 = torch.optim.AdamW(model.parameters(), lr=3e-5)
    scheduler1 = get_linear_schedule_with_warmup(optimizer1, 10, 100)
else:
    optimizer1 = None
    scheduler1 = None
optimizer2 = torch.optim.AdamW(prompt.parameters(), lr=0.3)
scheduler2 = get_linear_schedule_with_warmup(optimizer2, 10, 100)
for batch in loader:
    loss = model(batch)
    loss.backward()
{steps}
"""


def test_a_guarded_scheduler_after_its_own_optimizer_is_right():
    source = case(_TWO_OPTIMIZERS.format(steps="""\
    if optimizer1 is not None:
        optimizer1.step()
        optimizer1.zero_grad()
    if scheduler1 is not None:
        scheduler1.step()
    optimizer2.step()
    optimizer2.zero_grad()
    scheduler2.step()"""))
    assert marks(source) == []


def test_a_scheduler_before_its_own_optimizer_is_still_early():
    source = case(_TWO_OPTIMIZERS.format(steps="""\
    scheduler2.step()  # expect: GL008
    if optimizer1 is not None:
        optimizer1.step()
        optimizer1.zero_grad()
    if scheduler1 is not None:
        scheduler1.step()
    optimizer2.step()
    optimizer2.zero_grad()"""))
    assert marks(source) == expected_marks(source) != []


_UPDATE = """
{src}"""


def test_a_later_test_contradicts_an_and_test_taken_before():
    """The method alone (its scaled backward in the caller): the `else` of the unscale's test
    with `grad_scaler` true later (its step) has both settings false, so no path clips there."""
    source = case(_UPDATE.format(src='import torch\n\n\nclass Unit:\n    def update(self, module, optimizer):\n        grad_scaler = self.grad_scaler\n        clip_grad_norm = self.clip_grad_norm\n        clip_grad_value = self.clip_grad_value\n        if grad_scaler and (clip_grad_norm or clip_grad_value):\n            grad_scaler.unscale_(optimizer)\n        if clip_grad_norm:\n            torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm=clip_grad_norm)\n        if clip_grad_value:\n            torch.nn.utils.clip_grad_value_(module.parameters(), clip_value=clip_grad_value)\n        if grad_scaler:\n            grad_scaler.step(optimizer)\n            grad_scaler.update()\n        else:\n            optimizer.step()\n'))
    assert marks(source) == []


def test_a_later_test_leaves_a_clip_of_another_setting_unscaled():
    source = case(_UPDATE.format(src='import torch\n\n\nclass Unit:\n    def update(self, module, optimizer):\n        grad_scaler = self.grad_scaler\n        clip_grad_norm = self.clip_grad_norm\n        clip_grad_value = self.clip_grad_value\n        if grad_scaler and (clip_grad_norm or clip_grad_value):\n            grad_scaler.unscale_(optimizer)\n        if clip_grad_norm:\n            torch.nn.utils.clip_grad_norm_(module.parameters(), max_norm=clip_grad_norm)\n        if clip_grad_value:\n            torch.nn.utils.clip_grad_value_(module.parameters(), clip_value=clip_grad_value)\n        if grad_scaler:\n            grad_scaler.step(optimizer)\n            grad_scaler.update()\n        else:\n            optimizer.step()\n'.replace(
        "if grad_scaler and (clip_grad_norm or clip_grad_value):", "if grad_scaler and clip_grad_value:").replace(
        "max_norm=clip_grad_norm)", "max_norm=clip_grad_norm)  # expect: GL006")))
    assert marks(source) == expected_marks(source) != []


# --- a clip threshold in the scaler's units clips as unscaled (study27b: mmf) -----------------

_SCALED_THRESHOLD = """
import torch
def clip_gradients(model, max_norm, scale=1.0):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm * scale){mark}
scaler = torch.cuda.amp.GradScaler()
for x in loader:
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    clip_gradients(model, 1.0{scale})
    scaler.step(opt)
    scaler.update()
"""


def test_a_threshold_multiplied_by_the_scale_needs_no_unscale():
    source = case(_SCALED_THRESHOLD.format(mark="", scale=", scale=scaler.get_scale()"))
    assert marks(source) == []


def test_a_threshold_in_plain_units_still_needs_the_unscale():
    source = case(_SCALED_THRESHOLD.format(mark="  # expect: GL006", scale=""))
    assert marks(source) == expected_marks(source) != []


# --- a name bound to the scaled loss (`loss = scaler.scale(loss)`): its backward is scaled, on
# the paths where that binding reaches it ---------------------------------------------------

_SCALED_HEAD = """
import torch
scaler = torch.amp.GradScaler("cuda")
def train(model, opt, loader, amp):
    for x, y in loader:
        opt.zero_grad()
        loss = model(x).sum()
"""
SCALED_NAME = {
    "rebound": """
        loss = scaler.scale(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        scaler.step(opt)
        scaler.update()
""",
    "a name of its own": """
        scaled_loss = scaler.scale(loss)
        scaled_loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        scaler.step(opt)
        scaler.update()
""",
    "rebound on one side, clipped on that side's path": """
        if amp:
            loss = scaler.scale(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        if amp:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
""",
    "rebound on the other side of a negated test": """
        if not amp:
            pass
        else:
            loss = scaler.scale(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # expect: GL006
        scaler.step(opt)
        scaler.update()
""",
    "rebound, then unscaled on the same test": """
        if amp:
            loss = scaler.scale(loss)
        loss.backward()
        if amp:
            scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if amp:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
""",
    "rebound, then bound again to the plain loss": """
        loss = scaler.scale(loss)
        loss = model(x).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
""",
    "scaled under another name, the plain loss backpropagated": """
        scaled = scaler.scale(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
""",
    "a disabled scaler scales nothing": """
        plain = torch.amp.GradScaler("cuda", enabled=False)
        loss = plain.scale(loss)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        plain.step(opt)
        plain.update()
""",
}


@pytest.mark.parametrize("name", list(SCALED_NAME))
def test_a_name_bound_to_the_scaled_loss(name):
    source = case(_SCALED_HEAD + SCALED_NAME[name].lstrip("\n"))
    assert marks(source) == expected_marks(source)
