"""Project-wide analysis (gradlint/project): a loop that calls a function or method of another
module of the project is modelled through that function, as a helper of its own file is."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from gradlint.check.engine import RunOptions, check_source
from gradlint.options.settings import Settings

ROOT = Path(__file__).resolve().parent.parent

TRAINER = """\
import torch
from torch import nn


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, batch):
        x, y = batch
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
"""

TRAIN = """\
import torch
from torch import nn
from {module} import Trainer

trainer = Trainer(nn.Linear(4, 1))
for batch in [(torch.randn(8, 4), torch.randn(8, 1))] * 3:
    trainer.train_step(batch)
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def run(root: Path, *paths: str, jobs: int = 1, cache_dir=None):
    """A run from inside `root`, over its files named as the command line names them."""
    from gradlint.run.discover import discover
    from gradlint.check.engine import RunResult, check_files

    cwd = os.getcwd()
    os.chdir(root)
    try:
        files = [os.path.normpath(p) for p in discover(list(paths) or ["."]).files]
        options = RunOptions(jobs=jobs, cache_dir=cache_dir, roots=tuple(paths) or (".",))
        return RunResult(check_files([(p, Settings.default()) for p in files], options))
    finally:
        os.chdir(cwd)


def found(result) -> list[tuple[str, int, str]]:
    return sorted((f.path, f.line, f.code) for f in result.findings())


def test_a_trainer_method_of_another_module_is_modelled_on_the_call(tmp_path):
    """The finding stands on the misplaced clip, in trainer.py, where the fix goes and where a
    `# noqa` belongs; the loop's call in train.py is a related location."""
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    result = run(tmp_path)
    assert found(result) == [("trainer.py", 16, "GL004")]
    (finding,) = result.findings()
    # the check of train.py plans no edit of another file; trainer.py's own check reads
    # train_step alone (it backpropagates and steps in its own body) and plans the move there
    assert finding.fix is not None and sorted(e.span.line for e in finding.fix.edits) == [15, 16]
    step, call = finding.related
    assert (step.path, step.span.line) == (None, 15)  # the step it comes after, in its own file
    assert (call.path, call.span.line) == ("train.py", 7)  # the loop's call that runs it
    assert finding.message.startswith("nn.utils.clip_grad_norm_(self.model.parameters(), 1.0) runs after self.optimizer.step() (line 15)")
    assert finding.message.endswith("; run by the loop through trainer.train_step() (train.py line 7)")
    # the result of the file that holds the call carries it
    assert [f.code for r in result.results if r.path == "trainer.py" for f in r.findings] == ["GL004"]


def test_the_file_alone_knows_nothing_of_the_other_module(tmp_path):
    """What cannot be resolved stays silent: without the index the call is opaque."""
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    alone = check_source((tmp_path / "train.py").read_text(), "train.py", Settings.default())
    assert alone.findings == []


def test_a_named_file_reads_the_modules_it_imports(tmp_path):
    """`gradlint train.py` (a pre-commit run of the changed file): trainer.py is read for the
    index, and the bug train.py's loop makes of its clip is reported there, on the clip (the
    commit that makes the bug is stopped), though the run checks train.py alone."""
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    result = run(tmp_path, "train.py")
    assert found(result) == [("trainer.py", 16, "GL004")]
    assert [r.path for r in result.results] == ["train.py"] and result.files_checked == 1


@pytest.mark.parametrize(
    "files, expected",
    [
        # a relative import inside a package
        ({"pkg/__init__.py": "", "pkg/trainer.py": TRAINER, "pkg/train.py": TRAIN.format(module=".trainer")},
         [("pkg/trainer.py", 16, "GL004")]),
        # an absolute import from the package root
        ({"pkg/__init__.py": "", "pkg/core/__init__.py": "", "pkg/core/trainer.py": TRAINER,
          "pkg/train.py": TRAIN.format(module="pkg.core.trainer")},
         [("pkg/core/trainer.py", 16, "GL004")]),
        # re-exported by a package's __init__.py, which has no gradient word
        ({"lib/__init__.py": "from .trainer import Trainer\n", "lib/trainer.py": TRAINER,
          "train.py": TRAIN.format(module="lib")},
         [("lib/trainer.py", 16, "GL004")]),
        # a module that is not the project's (nothing on disk): silent
        ({"train.py": TRAIN.format(module="some_library")}, []),
    ],
    ids=["relative", "absolute-from-package-root", "re-exported", "not-the-project"],
)
def test_imports_resolve_by_path(tmp_path, files, expected):
    write(tmp_path, files)
    assert found(run(tmp_path)) == expected


def test_a_module_function_and_a_helper_chain_across_two_modules(tmp_path):
    write(tmp_path, {
        "clearing.py": "def clear(opt):\n    opt.zero_grad()\n",
        "steps.py": "from clearing import clear\n\n\ndef optimize(loss, opt):\n    loss.backward()\n    clear(opt)\n    opt.step()\n",
        "main.py": """\
            import torch
            import steps

            model = torch.nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in [torch.randn(4, 2)] * 3:
                steps.optimize(model(x).sum(), opt)
        """,
    })
    result = run(tmp_path)
    assert found(result) == [("clearing.py", 2, "GL002")]  # the clear, two modules away from the loop
    (finding,) = result.findings()
    assert [(r.path, r.span.line) for r in finding.related] == [("steps.py", 5), ("steps.py", 7), ("main.py", 7)]


def test_a_subclass_of_a_base_trainer_of_another_module(tmp_path):
    """`self.train_step(batch)` in a class whose base (another module) defines it."""
    write(tmp_path, {
        "base.py": TRAINER.replace("class Trainer:", "class BaseTrainer:"),
        "mine.py": """\
            import torch
            from torch import nn
            from base import BaseTrainer


            class MyTrainer(BaseTrainer):
                def fit(self, batches):
                    for batch in batches:
                        self.train_step(batch)


            MyTrainer(nn.Linear(4, 1)).fit([(torch.randn(8, 4), torch.randn(8, 1))] * 2)
        """,
    })
    assert found(run(tmp_path)) == [("base.py", 16, "GL004")]  # the clip of the base class


def test_an_attribute_of_another_modules_class_that_is_a_project_class(tmp_path):
    """`self.stepper.run(loss)` inside Trainer.fit (trainer.py), `self.stepper = Stepper(...)`."""
    write(tmp_path, {
        "stepper.py": "class Stepper:\n    def __init__(self, opt):\n        self.opt = opt\n\n"
                      "    def run(self, loss):\n        loss.backward()\n        self.opt.step()\n",
        "trainer.py": """\
            from stepper import Stepper


            class Trainer:
                def __init__(self, opt):
                    self.stepper = Stepper(opt)
                    self.other = dict(a=1)

                def train_step(self, loss):
                    self.stepper.run(loss)
        """,
        "main.py": """\
            import torch
            from trainer import Trainer

            model = torch.nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            trainer = Trainer(opt)
            for x in [torch.randn(4, 2)] * 3:
                trainer.train_step(model(x).sum())
        """,
    })
    assert found(run(tmp_path)) == [("stepper.py", 6, "GL001")]  # the backward, two modules away


def test_a_method_of_this_file_called_back_by_another_modules_function(tmp_path):
    """`moved_step(self, x, y)` whose body calls `self_.clip()`: Net.clip of this file, kept by
    the screen though nothing here calls it by name, clips after the step."""
    write(tmp_path, {
        "steps.py": """\
            def moved_step(self_, x, y):
                self_.opt.zero_grad()
                self_.model(x).sum().backward()
                self_.opt.step()
                self_.clip()
        """,
        "train.py": """\
            import torch
            from steps import moved_step


            class Net:
                def __init__(self):
                    self.model = torch.nn.Linear(4, 1)
                    self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

                def clip(self):
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)

                def fit(self, batches):
                    for x, y in batches:
                        moved_step(self, x, y)
        """,
    })
    result = run(tmp_path)
    assert found(result) == [("train.py", 11, "GL004")]
    (finding,) = result.findings()
    assert [(r.path, r.span.line) for r in finding.related] == [("steps.py", 4), (None, 15)]  # the step, the call


def test_modules_that_call_each_other_do_not_loop_forever(tmp_path):
    write(tmp_path, {
        "a.py": "from b import pong\n\n\ndef ping(loss, opt):\n    loss.backward()\n    pong(loss, opt)\n",
        "b.py": "from a import ping\n\n\ndef pong(loss, opt):\n    opt.step()\n    ping(loss, opt)\n",
        "main.py": """\
            import torch
            from a import ping

            model = torch.nn.Linear(2, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in [torch.randn(4, 2)] * 3:
                ping(model(x).sum(), opt)
        """,
    })
    assert found(run(tmp_path)) == [("a.py", 5, "GL001")]


def test_the_cache_key_holds_the_modules_a_result_depends_on(tmp_path):
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    cache = str(tmp_path / "cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]
    assert found(run(tmp_path, cache_dir=cache)) == [("trainer.py", 16, "GL004")]  # from the cache
    fixed = TRAINER.replace(
        "        self.optimizer.step()\n        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n",
        "        nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n        self.optimizer.step()\n",
    )
    (tmp_path / "trainer.py").write_text(fixed)
    assert found(run(tmp_path, cache_dir=cache)) == []  # train.py's entry is not served again


def test_a_file_that_reaches_no_other_module_keeps_its_cache_key(tmp_path):
    from gradlint.run.cache import Cache, content_digest
    from gradlint.check.engine import _with_view

    data = b"import torch\n"
    assert _with_view(content_digest(data), None) == content_digest(data)
    cache = Cache(str(tmp_path))
    assert cache.key("a.py", _with_view(content_digest(data), None), Settings.default()) == cache.key(
        "a.py", content_digest(data), Settings.default())


def test_the_pool_gets_the_index(tmp_path):
    files = {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")}
    for n in range(8):  # enough files that need an analysis for worker processes
        files[f"other{n}.py"] = "import torch\nfor x in range(3):\n    x.backward()\n"
    write(tmp_path, files)
    assert found(run(tmp_path, jobs=2)) == found(run(tmp_path, jobs=1)) == [("trainer.py", 16, "GL004")]


def test_files_without_gradient_words_are_not_parsed_for_the_index(tmp_path):
    from gradlint.run.project_run import index_files

    texts = {
        "trainer.py": TRAINER,
        "train.py": TRAIN.format(module="trainer"),
        "plots.py": "import matplotlib\nprint('a plot')\n",
        "data.py": "from trainer import Trainer\nimport numpy\n",
        # a training script of its own: gradient words, but no import of the project reaches it
        "script.py": "import torch\nfrom data import numpy\nfor x in range(3):\n    loss.backward()\n    opt.step()\n",
    }
    write(tmp_path, texts)
    files = [(str(tmp_path / name), text, "d", None) for name, text in texts.items()]
    index, views = index_files(files, [str(tmp_path)])
    parsed = {os.path.basename(k) for k, m in index.modules.items() if m is not None}
    # plots.py: no import of the project; data.py imports Trainer but calls nothing of it;
    # script.py calls nothing that touches gradients in another module
    assert parsed == {"trainer.py", "train.py"}
    assert set(views) == {str(tmp_path / "train.py")}
    assert "train_step" in views[str(tmp_path / "train.py")].words


# --- every output format points into the other file ---------------------------------------


def _cli(tmp_path, *args):
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "gradlint", "--no-cache", *args, "."], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )


def test_every_output_format_names_the_other_file(tmp_path):
    """The finding stands in trainer.py (the clip); the loop's call in train.py is related."""
    write(tmp_path, {"trainer.py": TRAINER, "train.py": TRAIN.format(module="trainer")})
    data = json.loads(_cli(tmp_path, "--output-format", "json").stdout)
    (finding,) = data["findings"]
    assert (finding["path"], finding["line"]) == ("trainer.py", 16)
    assert [(r["path"], r["line"]) for r in finding["related"]] == [("trainer.py", 15), ("train.py", 7)]

    sarif = json.loads(_cli(tmp_path, "--output-format", "sarif").stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("trainer.py")
    related = [r["physicalLocation"]["artifactLocation"]["uri"] for r in result["relatedLocations"]]
    assert related == ["trainer.py", "train.py"]
    assert "([line 15](1))" in result["message"]["text"] and "([train.py line 7](2))" in result["message"]["text"]

    github = _cli(tmp_path, "--output-format", "github").stdout
    assert "file=trainer.py,line=16," in github and "train.py line 7: " in github

    junit = _cli(tmp_path, "--output-format", "junit").stdout
    assert 'classname="trainer.py" file="trainer.py" line="16"' in junit and "train.py line 7: " in junit

    lsp = json.loads(_cli(tmp_path, "--output-format", "lsp").stdout)
    (diagnostic,) = next(diagnostics for uri, diagnostics in lsp.items() if uri.endswith("/trainer.py"))
    uris = [r["location"]["uri"] for r in diagnostic["relatedInformation"]]
    assert [uri.rsplit("/", 1)[1] for uri in uris] == ["trainer.py", "train.py"]


TRAIN_OR_TEST = """\
def _train_or_test(model, loader, optimizer=None):
    is_train = optimizer is not None
    for x in loader:
        loss = model(x).sum()
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


def train(model, loader, optimizer):
    return _train_or_test(model, loader, optimizer=optimizer)


def test(model, loader):
    return _train_or_test(model, loader, optimizer=None)
"""


def test_a_function_that_only_hands_its_arguments_to_one_of_its_modules_defs(tmp_path):
    """`tnt.train(...)` whose `train` calls `_train_or_test` of its own module, which holds the
    loop and the step: the text scan counts `train` as a def that reaches a gradient spelling."""
    write(tmp_path, {
        "train_and_test.py": TRAIN_OR_TEST,
        "main.py": """\
            import torch
            import train_and_test as tnt

            model = torch.nn.Linear(2, 1)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2)
            for epoch in range(3):
                scheduler.step()
                tnt.train(model, [torch.randn(4, 2)], optimizer)
        """,
    })
    assert found(run(tmp_path)) == [("main.py", 8, "GL008")]


EVALUATIONS = """\
import torch


def run_epoch(model, loader, optimizer=None):
    is_train = optimizer is not None
    for x in loader:
        loss = model(x).sum()
        if is_train:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


model = torch.nn.Linear(2, 1)
{binding}
for epoch in range(3):
    run_epoch(model, [torch.randn(4, 2)], optimizer=optimizer)
    run_epoch(model, [torch.randn(4, 2)])
"""


@pytest.mark.parametrize(
    "binding, expected",
    [
        # a new optimizer is never None: `is_train` is true in the first call, false in the second
        ("optimizer = torch.optim.SGD(model.parameters(), lr=0.1)", {"true", "false"}),
        # a name bound to something else (or to None somewhere) decides nothing
        ("optimizer = make_optimizer(model)", {"unknown", "false"}),
        ("optimizer = None\nif model.training:\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
         {"unknown", "false"}),
    ],
    ids=["built", "unknown-factory", "sometimes-none"],
)
def test_a_helper_name_set_once_from_its_constant_or_built_arguments_is_decided(binding, expected):
    """`is_train = optimizer is not None` then `if is_train:`: decided per call when the call binds
    `optimizer` to None (its default) or to a name the file binds only to a new optimizer."""
    from gradlint.model.flow import without_inert
    from gradlint.model.loops import Branch, Helper

    source = EVALUATIONS.format(binding=binding)
    from gradlint.check.engine import _parse_screened, _screen
    from gradlint.parse.file_context import FileContext
    from gradlint.model.loops import build

    settings = Settings.default()
    text = _screen(FileContext("epochs.py", source), settings)
    module, parsed = _parse_screened(text, source, "epochs.py")
    loop = max(build(module, "epochs.py", source, settings.wrappers, parsed_text=parsed).loops,
               key=lambda lp: lp.span.line)  # the epoch loop, last in the file
    decided = set()
    for helper in loop.body:
        assert isinstance(helper, Helper)
        branches = [n for n in _walk(helper.body) if isinstance(n, Branch)]
        events = [n for n in _walk(helper.body) if getattr(n, "kind", None) == "S"]
        decided.add("unknown" if branches else "true" if events else "false")
    assert decided == expected
    assert without_inert(loop.body) is not None


def _walk(nodes):
    for node in nodes:
        yield node
        for attr in ("body", "then", "orelse"):
            yield from _walk(getattr(node, attr, None) or [])


GRAD_TOOLS = """\
import torch


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, clip=True):
    grads = [p.grad for p in parameters if p.grad is not None]
    total = torch.norm(torch.stack([torch.norm(g, norm_type) for g in grads]), norm_type)
    if clip:
        for g in grads:
            g.detach().mul_(torch.clamp(max_norm / (total + 1e-6), max=1.0))
    return total
"""


@pytest.mark.parametrize(
    "call, expected",
    [
        ("clip_grad_norm_(model.parameters(), 1.0, clip=False)", []),
        ("clip_grad_norm_(model.parameters(), 1.0, 2.0, False)", []),
        ("clip_grad_norm_(model.parameters(), 1.0)", [("train.py", 7, "GL005")]),
        ("clip_grad_norm_(model.parameters(), 1.0, clip=True)", [("train.py", 7, "GL005")]),
        ("clip_grad_norm_(model.parameters(), 1.0, clip=flag)", [("train.py", 7, "GL005")]),
    ],
)
def test_a_project_clip_switched_off_by_a_constant_argument_only_measures(tmp_path, call, expected):
    """A project's own `clip_grad_norm_` is a clip by its name, except where the call's
    constant arguments switch off every in-place write of its body (`clip=False`)."""
    write(tmp_path, {"grad_tools.py": GRAD_TOOLS, "train.py": f"""\
import torch
from grad_tools import (
    clip_grad_norm_,
)
for x, y in loader:
    opt.zero_grad()
    norm = {call}
    model(x).sum().backward()
    opt.step()
"""})
    assert found(run(tmp_path)) == expected


def test_a_project_function_called_in_a_lightning_training_step_is_followed(tmp_path):
    """Lightning runs training_step once per batch, so a call in it is a call in a training
    loop: the project's measure-only clip (`clip=False`) is silent, its clipping call is
    reported (before Lightning's backward, under automatic optimization)."""
    write(tmp_path, {"utils/grad_tools.py": GRAD_TOOLS, "utils/__init__.py": "", "module.py": """\
import torch
from lightning import LightningModule
from utils.grad_tools import (
    clip_grad_norm_,
)


class Module(LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.net(batch).mean()
        if self.global_step < self.warmup:
            norm = clip_grad_norm_(self.net.parameters(), 1.0, clip=False)
        else:
            norm = clip_grad_norm_(self.net.parameters(), 1.0)
        self.log("norm", norm)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
"""})
    assert found(run(tmp_path)) == [("module.py", 14, "GL005")]


def test_a_parenthesized_import_names_its_modules():
    """`from . import (\\n    trainer,\\n)`: the names on the lines inside the parentheses are
    modules the index may read, as on one line."""
    from gradlint.project.index import import_targets

    one_line = import_targets("from . import trainer, utils\n")
    assert import_targets("from . import (\n    trainer,\n    utils,\n)\n") == one_line
    assert import_targets("from . import (trainer,\n    utils)\nimport os\n") == one_line + ["os"]


def test_one_misplaced_call_in_another_module_gives_one_finding(tmp_path):
    """The loop's call into the updater and the updater's own function both see its clip of
    scaled gradients: a run that checks both files reports it once, on the clip, with the
    loop's call as a related location; so does a run of the loop's file alone."""
    folder = ROOT / "fixtures" / "gl006" / "scaled_backward_in_caller"
    write(tmp_path, {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.py")})
    both = run(tmp_path)
    assert found(both) == [("wrong_updater.py", 17, "GL006")]
    (finding,) = both.findings()
    assert ("train_with_wrong_updater.py", 23) in [(r.path, r.span.line) for r in finding.related]
    alone = run(tmp_path, "train_with_wrong_updater.py")
    assert found(alone) == [("wrong_updater.py", 17, "GL006")]
    assert ("train_with_wrong_updater.py", 23) in [(r.path, r.span.line) for r in alone.findings()[0].related]


def test_a_caller_parsed_earlier_for_a_base_class_does_not_stop_the_run(tmp_path):
    """a_main.py's walk looks up Trainer's base class and so parses base_mod.py, which is also
    a caller (its loop calls Trainer.train_step) but holds no gradient def: when its own turn
    came, the index took it for unread and the whole run stopped with a KeyError (exit 2)."""
    write(tmp_path, {
        "trainer.py": """\
from base_mod import Base


class Trainer(Base):
    def train_step(self, batch):
        self.optimizer.zero_grad()
        self.loss(batch).backward()
        self.optimizer.step()
""",
        "base_mod.py": """\
from trainer import Trainer


class Base:
    pass


for b in []:
    Trainer().train_step(b)
""",
        "a_main.py": """\
from trainer import Trainer

for b in []:
    Trainer().train_step(b)
""",
    })
    result = run(tmp_path)
    assert result.errors() == [] and found(result) == []


# --- a call through a module reaches only a function that module holds or re-exports -------

OPS = """\
import torch


def update(model, optimizer):
    optimizer.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""
CALLER = """\
import torch
{imports}

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in [torch.randn(4, 2)] * 3:
    optimizer.zero_grad()
    model(x).sum().backward()
    {call}(model, optimizer)
"""


@pytest.mark.parametrize(
    "init, imports, call, reaches",
    [
        # the package never imports ops' function: `pkg.update` is not it (it is no call at all)
        ("", "import pkg", "pkg.update", False),
        ("from torch import nn\n", "import pkg", "pkg.update", False),
        # ...but re-exported by name, or by a parenthesized import, it is
        ("from .ops import update\n", "import pkg", "pkg.update", True),
        ("from pkg.ops import (\n    update,\n)\n", "import pkg", "pkg.update", True),
        # ...or by a star import, which binds every public name of ops (its `__all__` if literal)
        ("from .ops import *\n", "import pkg", "pkg.update", True),
        # through the module itself, named or aliased
        ("", "from pkg import ops", "ops.update", True),
        ("", "import pkg.ops as O", "O.update", True),
    ],
)
def test_a_call_through_a_module_reaches_a_function_only_where_the_module_holds_it(tmp_path, init, imports, call, reaches):
    """The text gate of the index: `module.f(...)` is a call of the project's `f` only when the
    module is one that holds `f` or a package whose __init__.py imports it.  In a large package
    (torch's own sources) `torch.sum(x)` would otherwise be a call of every `def sum` of it,
    and every module that imports torch a caller to parse."""
    from gradlint.run.project_run import index_files

    texts = {"pkg/__init__.py": init, "pkg/ops.py": OPS, "train.py": CALLER.format(imports=imports, call=call)}
    write(tmp_path, texts)
    files = [(str(tmp_path / name), (tmp_path / name).read_text(), "d", None) for name in texts]
    _, views = index_files(files, [str(tmp_path)])
    assert (str(tmp_path / "train.py") in views) is reaches
    expected = [("pkg/ops.py", 6, "GL004")] if reaches else []
    assert found(run(tmp_path)) == expected


def test_a_module_that_cannot_hold_the_function_makes_no_caller_to_parse(tmp_path):
    """The cost side of the same gate: a file calling `pkg.update(...)` where pkg/__init__.py
    never imports ops' `update` is not parsed for the index at all."""
    from gradlint.run.project_run import index_files

    texts = {"pkg/__init__.py": "from torch import nn\n", "pkg/ops.py": OPS,
             "train.py": CALLER.format(imports="import pkg", call="pkg.update")}
    write(tmp_path, texts)
    files = [(str(tmp_path / name), (tmp_path / name).read_text(), "d", None) for name in texts]
    index, _ = index_files(files, [str(tmp_path)])
    assert str(tmp_path / "train.py") not in index.modules
    assert str(tmp_path / "pkg" / "__init__.py") not in index.holders


def test_a_warm_text_run_of_a_file_calling_into_the_project_checks_nothing(tmp_path):
    """Issue 28: the text report's `[*]` of a file that calls into another module was proved in
    the main process on every run, rebuilding the whole project index for it (bench.py's warm
    run: 0.145 of a bare parse).  The workers mark it and the cache keeps the mark."""
    import subprocess
    import sys

    fixable = TRAIN.format(module="trainer") + "for x, y in [(1, 2)]:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
    write(tmp_path, {"trainer.py": TRAINER, "train.py": fixable})
    probe = (
        "import sys\nfrom gradlint.check import engine\nfrom gradlint.run import project_run\n"
        "from gradlint.commands.cli import main\n"
        "if {warm!r}:\n"
        "    engine.check_source = lambda *a, **k: sys.exit('analysed on a warm run')\n"
        "    project_run.index_files = lambda *a, **k: sys.exit('indexed on a warm run')\n"
        "print(main(['--cache-dir', 'c', '.']))"
    )
    runs = [
        subprocess.run([sys.executable, "-c", probe.format(warm=warm)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        for warm in (False, True)
    ]
    cold, warm = (run.stdout for run in runs)
    assert runs[1].returncode == 0, runs[1].stderr
    assert "GL004" in cold and "GL002 [*]" in cold and cold.endswith("1\n")
    assert warm == cold


def test_a_method_of_a_module_indented_with_tabs_is_followed(tmp_path):
    """RL course code indents with tabs (`class Agent():` then `\\tdef train(self):`): the text
    scan places a spelling in its def by indentation, and a tab is one column there, as in the
    pattern that finds the line closing a block (with tabs expanded to 8 columns, the method's
    own body lines read as closing it, and the step was never found)."""
    write(tmp_path, {
        "agent.py": "import torch\n\n\nclass Agent():\n"
                    "\tdef __init__(self, net):\n\t\tself.net = net\n"
                    "\t\tself.opt = torch.optim.Adam(net.parameters())\n\n"
                    "\tdef train(self, batch):\n\t\tloss = self.net(batch).sum()\n"
                    "\t\tif loss > 0:\n\t\t\tloss.backward()\n\t\tself.opt.step()\n",
        "main.py": """\
            import torch
            from agent import Agent

            agent = Agent(torch.nn.Linear(2, 1))
            for x in [torch.randn(4, 2)] * 3:
                agent.train(x)
        """,
    })
    assert found(run(tmp_path)) == [("agent.py", 12, "GL001")]


def test_an_agent_built_by_a_factory_of_the_loops_own_file(tmp_path):
    """`agent = make_agent(args)`, a def of the script whose every return builds one class of
    another module (`else: assert ...` falls off the end): the loop calls that class's step.
    A factory returning two classes stays unknown."""
    agent = """\
        import torch


        class Agent:
            def __init__(self, net, lr):
                self.net = net
                self.critic_opt = torch.optim.Adam(net.parameters(), lr=lr)

            def update(self, x):
                self.net(x).sum().backward()
                self.critic_opt.step()


        class Other(Agent):
            pass
    """
    train = """\
        import torch
        from agent import Agent, Other


        def make_agent(kind, net):
            if kind == "sac":
                return Agent(net, lr=1e-3)
            else:
                assert False, kind


        def make_either(kind, net):
            return Agent(net, 1e-3) if kind else Other(net, 1e-3)


        def main(kind, loader):
            agent = make_agent(kind, torch.nn.Linear(2, 1))
            for x in loader:
                agent.update(x)
            either = make_either(kind, torch.nn.Linear(2, 1))
            for x in loader:
                either.update(x)
    """
    write(tmp_path, {"agent.py": agent, "train.py": train})
    assert found(run(tmp_path)) == [("agent.py", 10, "GL001")]  # the backward of Agent.update


def test_an_instance_of_a_class_built_through_its_module(tmp_path):
    """`import agentmod` then `policy = agentmod.Agent(...)`: the loop calls that class's
    method as if `from agentmod import Agent` had named it (the index's caller scan took only
    classes an import line names)."""
    write(tmp_path, {
        "agentmod.py": """\
            import torch


            class Agent(object):
                def __init__(self, net):
                    self.net = net
                    self.opt = torch.optim.Adam(net.parameters())

                def update(self, batch):
                    self.net(batch).sum().backward()
                    self.opt.step()
        """,
        "main.py": """\
            import torch
            import agentmod


            def run(loader):
                policy = agentmod.Agent(torch.nn.Linear(2, 1))
                for batch in loader:
                    policy.update(batch)
        """,
    })
    assert found(run(tmp_path)) == [("agentmod.py", 10, "GL001")]


AGENTS_OF_TWO_CLASSES = """\
    import torch


    class PPO:
        def __init__(self, net):
            self.net = net
            self.opt = torch.optim.Adam(net.parameters())

        def update(self, x):
            self.net(x).sum().backward()
            self.opt.step()


    class DQN:
        def __init__(self, net):
            self.net = net
            self.opt = torch.optim.SGD(net.parameters(), lr=0.1)

        def update(self, x):
            self.opt.zero_grad()
            self.net(x).sum().backward()
            self.opt.step()
"""


def test_an_agent_of_project_classes_or_a_library_class(tmp_path):
    """`agent` is a PPO or a DQN of the project, or a library's agent: each class of the
    project is a path of the loop (PPO's never clears), the library's object keeps the call
    unread on a path of its own."""
    write(tmp_path, {
        "agents.py": AGENTS_OF_TWO_CLASSES,
        "train.py": """\
            import torch
            import baselines
            from agents import DQN, PPO


            def main(kind, loader):
                net = torch.nn.Linear(2, 1)
                if kind == "ppo":
                    agent = PPO(net)
                elif kind == "dqn":
                    agent = DQN(net)
                else:
                    agent = baselines.A2C(net)
                for x in loader:
                    agent.update(x)
        """,
    })
    assert found(run(tmp_path)) == [("agents.py", 10, "GL001")]


def test_an_agent_attribute_set_to_none_then_to_project_classes(tmp_path):
    """`self.agent = None` in `__init__` and a PPO or a DQN in `setup()`: None runs no
    method, so the loop of `fit()` runs one class's update or the other's."""
    write(tmp_path, {
        "agents.py": AGENTS_OF_TWO_CLASSES,
        "runner.py": """\
            import torch
            from agents import DQN, PPO


            class Runner:
                def __init__(self):
                    self.agent = None

                def setup(self, kind):
                    net = torch.nn.Linear(2, 1)
                    self.agent = PPO(net) if kind == "ppo" else None
                    if kind == "dqn":
                        self.agent = DQN(net)

                def fit(self, loader):
                    for x in loader:
                        self.agent.update(x)
        """,
    })
    assert found(run(tmp_path)) == [("agents.py", 10, "GL001")]


def test_an_agent_only_of_classes_that_cannot_be_told_stays_unread(tmp_path):
    """No class of the project among the objects the name is bound to: nothing to follow."""
    write(tmp_path, {
        "agents.py": AGENTS_OF_TWO_CLASSES,
        "train.py": """\
            import torch
            import baselines


            def main(kind, loader):
                net = torch.nn.Linear(2, 1)
                agent = baselines.A2C(net) if kind else baselines.PPO(net)
                for x in loader:
                    agent.update(x)
        """,
    })
    assert found(run(tmp_path)) == []
