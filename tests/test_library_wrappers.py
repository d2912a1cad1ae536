"""A library's class built from an optimizer (apex's LARC, timm's Lookahead, SWA) and stepped in
its place is that optimizer: it holds its parameters, a missing clear is GL001, a clear of
another model GL003.  An object that also runs the backward is an engine (it clears for its
optimizer); one built from an optimizer the file steps itself is a scheduler."""

import pytest

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

HEAD = (
    "import torch\nfrom {module} import {cls}\n\nmodel = torch.nn.Linear(4, 1)\nhead = torch.nn.Linear(1, 1)\n"
    "base = torch.optim.SGD(model.parameters(), lr=0.1)\nwrapped = {cls}(base, 0.001)\n"
    "for x, y in loader:\n"
)


def codes(body: str, module: str = "apex.parallel.LARC", cls: str = "LARC") -> list[tuple[int, str]]:
    source = HEAD.format(module=module, cls=cls) + body
    return [(f.line, f.code) for f in check_source(source, "train.py", Settings.default()).findings]


@pytest.mark.parametrize("module, cls", [("apex.parallel.LARC", "LARC"), ("timm.optim", "Lookahead"), ("torchcontrib.optim", "SWA")])
def test_a_wrapper_stepped_in_its_optimizers_place_must_be_cleared(module, cls):
    assert codes("    loss = f(model(x), y)\n    loss.backward()\n    wrapped.step()\n", module, cls) == [(10, "GL001")]


@pytest.mark.parametrize("clear", ["wrapped.zero_grad()", "base.zero_grad()", "model.zero_grad()"])
def test_a_clear_of_the_wrapper_its_optimizer_or_their_model_is_right(clear):
    assert codes(f"    {clear}\n    loss = f(model(x), y)\n    loss.backward()\n    wrapped.step()\n") == []


def test_a_clear_of_another_model_is_a_mismatch():
    assert codes("    head.zero_grad()\n    loss = f(head(model(x)), y)\n    loss.backward()\n    wrapped.step()\n") == [(9, "GL003")]


@pytest.mark.parametrize("backward", ["wrapped.backward(loss)", "wrapped.backward(loss, base)"])
def test_an_object_that_runs_the_backward_too_is_an_engine_that_clears(backward):
    assert codes(f"    loss = f(model(x), y)\n    {backward}\n    wrapped.step()\n", "lib", "Strategy") == []


def test_built_from_an_optimizer_the_file_steps_itself_it_is_a_scheduler():
    body = "    base.zero_grad()\n    loss = f(model(x), y)\n    loss.backward()\n    wrapped.step()\n    base.step()\n"
    assert codes(body, "lib", "Warmup") == [(12, "GL008")]
