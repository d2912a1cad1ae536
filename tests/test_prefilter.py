"""The prefilter and the ast screen never change a finding.

Every fixture (discovered, so new ones count) and every rule sample is
checked three ways: the prefilter must pass every file with a finding,
and the findings with the screen must equal those without it.
"""

from __future__ import annotations

import glob
import os

import pytest

from gradlint.check import engine
from gradlint.check.prefilter import for_wrappers, may_hold_events
from gradlint.rules.registry import all_rules
from gradlint.check.screen import screen
from gradlint.options.settings import Settings, Wrappers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL = Settings(select=frozenset(rule.code for rule in all_rules()))


def corpus() -> list[tuple[str, str]]:
    items = []
    for path in sorted(glob.glob(os.path.join(ROOT, "fixtures", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8", errors="replace") as handle:
            items.append((os.path.relpath(path, ROOT), handle.read()))
    for rule in all_rules():
        for kind, samples in (("valid", rule.valid), ("invalid", [s.source for s in rule.invalid])):
            items += [(f"{rule.code}-{kind}-{i}", sample) for i, sample in enumerate(samples)]
    return items


CORPUS = corpus()


def unscreened(monkeypatch, source: str, settings: Settings):
    with monkeypatch.context() as m:
        m.setattr(engine, "_screen", lambda context, s, project=None: context.source)
        return engine.check_source(source, "f.py", settings)


def test_corpus_has_findings():
    assert sum(bool(engine.check_source(s, "f.py", ALL).findings) for _, s in CORPUS) >= 10


@pytest.mark.parametrize("name, source", CORPUS, ids=[n for n, _ in CORPUS])
def test_never_skips_a_file_with_findings_and_screen_changes_nothing(monkeypatch, name, source):
    plain = unscreened(monkeypatch, source, ALL)
    if plain.findings:
        assert may_hold_events(source), name
    assert engine.check_source(source, "f.py", ALL) == plain


WRAPPED = '''
from utils import run_update

def train(model, opt, data):
    for batch in data:
        loss = model(batch)
        loss.sum()
        {call}
'''


@pytest.mark.parametrize(
    "wrappers, call",
    [
        (Wrappers(backward_functions=("run_backward",), step_functions=("run_update",)), "run_backward(loss); run_update(opt)"),
        (Wrappers(backward_functions=("utils.run_backward",), step_functions=("utils.run_update",)),
         "utils.run_backward(loss); run_update(opt)"),
        (Wrappers(backward_functions=("push_grads",), step_functions=("apply_update",)), "push_grads(loss); apply_update(opt)"),
    ],
)
def test_configured_wrappers_pass(monkeypatch, wrappers, call):
    source = WRAPPED.format(call=call)
    settings = Settings(select=ALL.select, wrappers=wrappers)
    plain = unscreened(monkeypatch, source, settings)
    assert plain.findings, "the sample must have a finding through its wrapper alone"
    assert for_wrappers(wrappers).may_hold_events(source)
    assert not may_hold_events(source)  # without the wrapper names the file would be skipped
    assert engine.check_source(source, "f.py", settings) == plain


@pytest.mark.parametrize(
    "text, expected",
    [
        ("loss.backward()", True),
        ("self.manual_backward(loss)", True),
        ("from torch.autograd import backward as bw", True),
        ("helper(torch.autograd.backward, loss)", True),
        ("opt.step()", True),
        ("opt.step  (\n)", True),
        ("xm.optimizer_step(opt)", True),
        ("def training_step(self, batch):", True),
        ("p.grad = g", True),
        ("(p.grad) += g", True),
        ("p.grad.data = g", True),
        ("# the backward pass\nx = 1", False),
        ("steps = 3; step_size(2); p.grad == q", False),
        ("pad_backward(x); mystep(1)", False),
        ("import os\nprint(os.sep)", False),
        # a definition runs nothing, a bare `grad` is a local variable
        ("class F:\n    def backward(ctx, g):\n        return g", False),
        ("def step(self):\n    pass", False),
        ("async def step(self):\n    pass", False),
        ("x = 1\n\n    grad = compute(x)\n", False),
        ("undef step(x)", True),
        ("def helper():\n    step(opt)", True),
        ("(p.\n\n  grad) = g", True),  # an attribute across lines inside brackets
        ("(p.  # why\n  grad) = g", True),
        ("(p. \\\n  grad) = g", True),
        # an engine whose documented process function backpropagates and steps
        ("trainer = create_supervised_trainer(model, opt, loss_fn)", True),
        ("trainer = ignite.engine.create_supervised_trainer (model, opt, loss_fn)", True),
        ("from ignite.engine import create_supervised_trainer", False),
        ("def create_supervised_trainer(model, opt, loss_fn):\n    pass", False),
        ("my_create_supervised_trainer(model, opt, loss_fn)", False),
    ],
)
def test_spellings(text, expected):
    assert may_hold_events(text) is expected


SCREENED = '''
import torch

def unrelated(x):
    y = x * 2
    return y

class Other:
    def a(self):
        return 1

    def b(self):
        return 2

def make():
    global opt
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

def train(data):
    for batch in data:
        loss = model(batch)
        loss.backward()
        opt.step()
'''


def test_screen_blanks_what_no_loop_reaches(monkeypatch):
    text = screen(SCREENED)
    assert text is not None and text != SCREENED
    assert text.count("\n") == SCREENED.count("\n")  # lines stay in place
    assert "def unrelated" not in text and "class Other" not in text
    assert "opt = torch.optim.SGD" in text  # an assignment of the stepped optimizer is reached
    assert engine.check_source(SCREENED, "f.py", ALL) == unscreened(monkeypatch, SCREENED, ALL)


def test_screen_without_candidate_loop_means_no_libcst():
    assert screen("import torch\nfor x in range(3):\n    print(x)\ny.backward()\n") is None


IGNITE_HANDLERS = """import torch
from ignite.engine import Engine, Events
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def process(engine, batch):
%s
trainer = %s
@trainer.on(Events.ITERATION_STARTED)
def clear(engine):
    optimizer.zero_grad()
def clip(engine):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
trainer.add_event_handler(Events.ITERATION_COMPLETED, clip)
"""


def test_screen_keeps_engine_handlers_that_only_clear_or_clip(monkeypatch):
    # A handler registered on an engine is part of its model whatever it holds (model/engines.py):
    # a clear before the process function, a clip after its step.
    source = IGNITE_HANDLERS % ("    model(batch).sum().backward()\n    optimizer.step()", "Engine(process)")
    text = screen(source)
    assert text is not None and "optimizer.zero_grad()" in text and "clip_grad_norm_" in text
    assert engine.check_source(source, "f.py", ALL) == unscreened(monkeypatch, source, ALL)
    # an engine whose process function the framework documents (it backpropagates and steps)
    documented = IGNITE_HANDLERS % ("    pass", "create_supervised_trainer(model, optimizer, None)")
    text = screen(documented)
    assert text is not None and "optimizer.zero_grad()" in text and "clip_grad_norm_" in text
    # no backward and no step anywhere: still answered without libcst
    assert screen(IGNITE_HANDLERS % ("    return model(batch)", "Engine(process)")) is None


def test_syntax_error_still_reported_with_position():
    result = engine.check_source("for x in data:\n    loss.backward(\n", "f.py", ALL)
    assert result.errors and result.errors[0].kind == "syntax-error"
    assert result.errors[0].line >= 1
