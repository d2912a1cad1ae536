"""A function's parameter that only callers of other modules fill (`def train_one_epoch(...,
loss_scaler)` in engine.py, `train_one_epoch(..., loss_scaler)` in main.py with `loss_scaler =
NativeScaler()`) has the class of the project that every call site hands it (gradlint/project/
handed.py): calling it runs that class's `__call__`, a method called on it runs that method.
What is not certain (sites that disagree, an argument that cannot be resolved, the function
handed around) leaves it unknown: silent."""

from __future__ import annotations

import pytest

from test_project import found, run, write

SCALERS = """\
import torch


class Scaler:
    def __call__(self, loss, optimizer, update_grad=True):
        loss.backward()
        if update_grad:
            optimizer.step()

    def apply(self, loss, optimizer):
        loss.backward()
        optimizer.step()


class PlainScaler:
    def __call__(self, loss, optimizer, update_grad=True):
        loss.backward()
        optimizer.step()

    def apply(self, loss, optimizer):
        loss.backward()
        optimizer.step()


def make_scaler():
    return Scaler()
"""

# every micro-batch cleared, the step on the accumulation boundary only: GL002 at the clear
ENGINE = """\
import torch


def train_one_epoch(model, batches, optimizer, loss_scaler, accum_iter=2):
    for it, (x, y) in enumerate(batches):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss_scaler(loss, optimizer, update_grad=(it + 1) % accum_iter == 0)
"""
CLEAR_LINE = 6

MAIN = """\
import torch
import scalers
from engine import train_one_epoch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = {value}
for epoch in range(2):
    train_one_epoch(model, [(torch.randn(8, 4), torch.randn(8, 1))] * 4, optimizer, {argument})
"""


def project(tmp_path, value="scalers.Scaler()", argument="scaler", engine=ENGINE, **more):
    write(tmp_path, {"scalers.py": SCALERS, "engine.py": engine, "main.py": MAIN.format(value=value, argument=argument), **more})


@pytest.mark.parametrize("value, argument", [
    ("scalers.Scaler()", "scaler"),  # by position
    ("scalers.Scaler()", "loss_scaler=scaler"),  # by keyword
    ("None", "scalers.Scaler()"),  # built at the site
    ("scalers.make_scaler()", "scaler"),  # returned by a factory of the project
])
def test_the_class_every_call_site_hands_is_followed(tmp_path, value, argument):
    project(tmp_path, value, argument)
    assert found(run(tmp_path)) == [("engine.py", CLEAR_LINE, "GL002")]


def test_a_call_site_inside_a_function_of_the_script(tmp_path):
    """MAE's main_pretrain.py: the scaler is built and handed inside `def main(args)`."""
    main = (
        "import torch\nfrom scalers import Scaler as NativeScaler\nimport engine\n\n\n"
        "def main():\n    model = torch.nn.Linear(4, 1)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    loss_scaler = NativeScaler()\n"
        "    for epoch in range(2):\n"
        "        engine.train_one_epoch(model, [(torch.randn(8, 4), torch.randn(8, 1))] * 4, optimizer, loss_scaler)\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    write(tmp_path, {"scalers.py": SCALERS, "engine.py": ENGINE, "main.py": main})
    assert found(run(tmp_path)) == [("engine.py", CLEAR_LINE, "GL002")]


def test_a_method_called_on_the_parameter_runs_that_method(tmp_path):
    """`loss_scaler.apply(loss, optimizer)`: the handed class's method, as for a call of it."""
    engine = ENGINE.replace(
        "loss_scaler(loss, optimizer, update_grad=(it + 1) % accum_iter == 0)",
        "if (it + 1) % accum_iter == 0:\n            loss_scaler.apply(loss, optimizer)\n"
        "        else:\n            loss.backward()",
    )
    project(tmp_path, engine=engine)
    assert found(run(tmp_path)) == [("engine.py", CLEAR_LINE, "GL002")]


@pytest.mark.parametrize("value, argument, more", [
    # two sites that disagree: one hands Scaler, the other PlainScaler
    ("scalers.Scaler()", "scaler",
     {"other.py": "import scalers\nfrom engine import train_one_epoch\n\n"
                  "train_one_epoch(None, [], None, scalers.PlainScaler())\n"}),
    # a site whose argument cannot be read (a parameter of its own function)
    ("scalers.Scaler()", "scaler",
     {"other.py": "from engine import train_one_epoch\n\n\ndef go(s):\n    train_one_epoch(None, [], None, s)\n"}),
    # an object of no class of the project
    ("torch.cuda.amp.GradScaler()", "scaler", {}),
    # the name bound twice, to different classes
    ("scalers.Scaler()\nscaler = scalers.PlainScaler()", "scaler", {}),
    # `**kwargs` at the site: which argument is the scaler, the text does not say
    ("scalers.Scaler()", "**{'loss_scaler': scaler}", {}),
    # the function handed around: a site out of sight
    ("scalers.Scaler()", "scaler",
     {"other.py": "import functools\nimport scalers\nfrom engine import train_one_epoch\n\n"
                  "run = functools.partial(train_one_epoch, loss_scaler=scalers.PlainScaler())\n"}),
])
def test_what_is_not_certain_stays_unknown(tmp_path, value, argument, more):
    project(tmp_path, value, argument, **more)
    assert found(run(tmp_path)) == []


def test_a_parameter_the_function_binds_again_stays_unknown(tmp_path):
    engine = ENGINE.replace("    for it,", "    loss_scaler = loss_scaler or None\n    for it,")
    project(tmp_path, engine=engine)
    assert found(run(tmp_path)) == []


def test_the_engine_alone_knows_nothing(tmp_path):
    """What makes the finding is the call site: without main.py, or in a run of engine.py
    alone, the engine is silent, as before."""
    project(tmp_path)
    assert found(run(tmp_path, "engine.py")) == []
    (tmp_path / "main.py").unlink()
    assert found(run(tmp_path)) == []


def test_the_cache_key_holds_the_call_site(tmp_path):
    project(tmp_path)
    cache = str(tmp_path / "cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("engine.py", CLEAR_LINE, "GL002")]
    (tmp_path / "main.py").write_text(MAIN.format(value="scalers.PlainScaler()", argument="scaler"))
    # PlainScaler steps on every call: the clear of every micro-batch is right there
    assert found(run(tmp_path, cache_dir=cache)) == []
    (tmp_path / "main.py").write_text(MAIN.format(value="scalers.Scaler()", argument="scaler"))
    assert found(run(tmp_path, cache_dir=cache)) == [("engine.py", CLEAR_LINE, "GL002")]


def test_a_run_of_the_script_alone_reports_the_bug_in_the_engine(tmp_path):
    """`gradlint main.py` (a pre-commit run of the changed script, `gradlint verify main.py`):
    engine.py, which main.py imports and hands the scaler to, is analysed for it, and the bug
    stands on the misplaced clear in engine.py."""
    project(tmp_path)
    assert found(run(tmp_path, "main.py")) == [("engine.py", CLEAR_LINE, "GL002")]
    (tmp_path / "main.py").write_text(MAIN.format(value="scalers.PlainScaler()", argument="scaler"))
    assert found(run(tmp_path, "main.py")) == []


@pytest.mark.parametrize("engine", [
    # decorated: what the callers call may take other arguments
    "import functools\n\n\n" + ENGINE.replace("import torch\n\n\n", "import torch\n\n\n@functools.lru_cache(None)\n"),
    # defined twice: which one the callers run, the text does not say
    ENGINE + "\n\nif False:\n    pass\nelse:\n    pass\n\n\n" + ENGINE.split("\n\n\n", 1)[1],
])
def test_a_function_that_is_not_one_plain_def_stays_unknown(tmp_path, engine):
    project(tmp_path, engine=engine)
    assert found(run(tmp_path)) == []


def test_a_comment_at_the_first_column_inside_the_function_does_not_end_it(tmp_path):
    """The function is read from its own lines up to the next statement at the first column;
    a comment there is no statement, and the parameter's later binding is still seen."""
    engine = ENGINE + "# the scaler is let go\n    loss_scaler = None\n"
    project(tmp_path, engine=engine)
    assert found(run(tmp_path)) == []
