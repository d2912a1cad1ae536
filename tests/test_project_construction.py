"""An attribute stored from a constructor parameter (`self.opt_pair = opt_pair`) has the class
of the project that every construction site of its class hands it (gradlint/project/
construction.py): built there by `Pair(...)`, or returned by a project factory.  What is not
certain (sites that disagree, an argument that cannot be resolved) leaves it unknown: silent."""

from __future__ import annotations

import pytest

from test_project import found, run, write

PAIRS = """\
import functools

import torch


class Pair:
    def __init__(self, optimizer, scheduler):
        self.optimizer = optimizer
        self.scheduler = scheduler

    def step(self):
        self.scheduler.step()
        self.optimizer.step()


class InOrder:
    def __init__(self, optimizer, scheduler):
        self.optimizer = optimizer
        self.scheduler = scheduler

    def step(self):
        self.optimizer.step()
        self.scheduler.step()


def _build(params):
    optimizer = torch.optim.SGD(params, lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    pair = Pair(optimizer, scheduler)
    return pair


def make_pair(model):
    return _build(model.parameters())


def make_in_order(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    return InOrder(optimizer, torch.optim.lr_scheduler.StepLR(optimizer, 10))


def make_either(model, ordered):
    if ordered:
        return make_in_order(model)
    return make_pair(model)


@functools.lru_cache(maxsize=None)
def make_cached(model):
    return make_pair(model)
"""

RUNNER = """\
import torch


class Runner:
    def __init__(self, model, opt_pair, log=None):
        self.model = model
        self.opt_pair = opt_pair
        self.log = log

    def fit(self, batches):
        for x, y in batches:
            self.opt_pair.optimizer.zero_grad()
            torch.nn.functional.mse_loss(self.model(x), y).backward()
            self.opt_pair.step()
"""
STEP_LINE = 14  # `self.opt_pair.step()` in runner.py, the loop's call
SCHEDULER_LINE = 12  # `self.scheduler.step()` in pairs.py, before the optimizer's: where the finding stands

MAIN = """\
import torch
import pairs
from runner import Runner

model = torch.nn.Linear(4, 1)
pair = {value}
Runner(model, {argument}).fit([(torch.randn(8, 4), torch.randn(8, 1))] * 3)
"""


def project(tmp_path, value="pairs.make_pair(model)", argument="opt_pair=pair", runner=RUNNER, **more):
    write(tmp_path, {"pairs.py": PAIRS, "runner.py": runner, "main.py": MAIN.format(value=value, argument=argument), **more})


@pytest.mark.parametrize("value, argument", [
    ("pairs.make_pair(model)", "opt_pair=pair"),  # a factory whose return is a factory's local
    ("pairs.make_pair(model)", "pair"),  # the same parameter by position
    ("pairs.make_cached(model)", "opt_pair=pairs.make_pair(model)"),  # the argument itself a factory's call
    ("None", "pairs.Pair(torch.optim.SGD(model.parameters()), None)"),  # built at the site
])
def test_the_class_every_construction_site_hands_is_followed(tmp_path, value, argument):
    project(tmp_path, value, argument)
    result = run(tmp_path)
    assert found(result) == [("pairs.py", SCHEDULER_LINE, "GL008")]
    assert ("runner.py", STEP_LINE) in [(r.path, r.span.line) for r in result.findings()[0].related]


def test_a_construction_site_inside_a_function_of_a_package_module(tmp_path):
    """The jiant shape: the site is in a function of a third module, which imports the runner's
    module through its package; the loop is a method of the runner around another method."""
    runner = RUNNER.replace(
        "    def fit(self, batches):\n        for x, y in batches:\n",
        "    def fit(self, batches):\n        for batch in batches:\n            self.train_step(batch)\n\n"
        "    def train_step(self, batch):\n        x, y = batch\n        if True:\n",
    )
    write(tmp_path, {
        "proj/__init__.py": "",
        "proj/pairs.py": PAIRS,
        "proj/loop/__init__.py": "",
        "proj/loop/runner.py": runner,
        "proj/setup.py": (
            "import proj.loop.runner as loop_runner\nfrom proj import pairs\n\n\n"
            "def build(model):\n    opt_pair = pairs.make_pair(model)\n"
            "    return loop_runner.Runner(model=model, opt_pair=opt_pair)\n"
        ),
    })
    assert [(path, code) for path, _, code in found(run(tmp_path))] == [("proj/pairs.py", "GL008")]


@pytest.mark.parametrize("value, argument, more", [
    # two sites that disagree: one hands Pair, the other InOrder
    ("pairs.make_pair(model)", "opt_pair=pair",
     {"other.py": "import pairs\nfrom runner import Runner\n\nRunner(None, pairs.make_in_order(None))\n"}),
    # a factory whose returns build different classes
    ("pairs.make_either(model, True)", "opt_pair=pair", {}),
    # the name bound twice, to different classes
    ("pairs.make_pair(model)\npair = pairs.make_in_order(model)", "opt_pair=pair", {}),
    # the name bound by a loop too
    ("pairs.make_pair(model)\nfor pair in [pair]:\n    pass", "opt_pair=pair", {}),
    # `**kwargs` at the site: which argument is the pair, the text does not say
    ("pairs.make_pair(model)", "**{'opt_pair': pair}", {}),
    # not passed: the default
    ("pairs.make_pair(model)", "", {}),
    # a subclass of the runner elsewhere: its sites hand the parameter too
    ("pairs.make_pair(model)", "opt_pair=pair",
     {"sub.py": "from runner import Runner\n\n\nclass Sub(Runner):\n    pass\n"}),
    # a decorated factory: the decorator may return something else
    ("pairs.make_cached(model)", "opt_pair=pair", {}),
    # the class handed around: a site out of sight
    ("pairs.make_pair(model)", "opt_pair=pair",
     {"other.py": "import functools\nimport pairs\nfrom runner import Runner\n\n"
                  "build = functools.partial(Runner, opt_pair=pairs.make_in_order(None))\n"}),
    # a function's parameter: what the caller passes, unknown
    ("None\n\n\ndef build(pair):\n    return Runner(model, pair)\n", "opt_pair=pairs.make_pair(model)", {}),
])
def test_what_is_not_certain_stays_unknown(tmp_path, value, argument, more):
    project(tmp_path, value, argument, **more)
    assert found(run(tmp_path)) == []


def test_an_attribute_also_set_elsewhere_in_the_class_stays_unknown(tmp_path):
    runner = RUNNER + "\n    def reset(self):\n        self.opt_pair = None\n"
    project(tmp_path, runner=runner)
    assert found(run(tmp_path)) == []


def test_a_class_that_builds_itself_stays_unknown(tmp_path):
    runner = RUNNER + "\n    @classmethod\n    def ordered(cls, model, pairs):\n        return cls(model, pairs.make_in_order(model))\n"
    project(tmp_path, runner=runner)
    assert found(run(tmp_path)) == []


def test_annotations_and_isinstance_tests_are_no_sites(tmp_path):
    project(tmp_path, value="pairs.make_pair(model)\n\n\ndef check(r: Runner) -> Runner:\n    assert isinstance(r, Runner)\n    return r\n")
    assert found(run(tmp_path)) == [("pairs.py", SCHEDULER_LINE, "GL008")]


def test_the_runner_imports_nothing_of_the_pair_and_alone_knows_nothing(tmp_path):
    """What makes the finding is the construction site: without main.py, runner.py is silent."""
    project(tmp_path)
    (tmp_path / "main.py").unlink()
    assert found(run(tmp_path)) == []


def test_the_cache_key_holds_the_construction_site_and_the_factory(tmp_path):
    project(tmp_path)
    cache = str(tmp_path / "cache")
    assert found(run(tmp_path, cache_dir=cache)) == [("pairs.py", SCHEDULER_LINE, "GL008")]
    (tmp_path / "main.py").write_text(MAIN.format(value="pairs.make_in_order(model)", argument="opt_pair=pair"))
    assert found(run(tmp_path, cache_dir=cache)) == []  # the site now hands InOrder
    (tmp_path / "main.py").write_text(MAIN.format(value="pairs.make_pair(model)", argument="opt_pair=pair"))
    assert found(run(tmp_path, cache_dir=cache)) == [("pairs.py", SCHEDULER_LINE, "GL008")]
    (tmp_path / "pairs.py").write_text(PAIRS.replace("return _build(model.parameters())", "return make_in_order(model)"))
    assert found(run(tmp_path, cache_dir=cache)) == []  # the factory now builds InOrder


def test_a_run_of_the_runner_alone_reads_no_construction_site(tmp_path):
    """`gradlint runner.py`: the sites are in files the run does not read; silent, as before."""
    project(tmp_path)
    assert found(run(tmp_path, "runner.py")) == []


def test_the_construction_sites_trees_kept_are_bounded(monkeypatch):
    """Deliveries keeps the latest few parsed sites (every site of a big tree at once was most
    of a run's peak memory); one asked again after it was let go is parsed again, the same."""
    from gradlint.project import construction
    from gradlint.project.index import Index

    monkeypatch.setattr(construction, "_TREES_KEPT", 3)
    texts = {f"/p/m{i}.py": f"class C{i}:\n    pass\n" for i in range(8)}
    deliveries = construction.Deliveries(Index(["/p"]), texts, {})
    trees = [deliveries._tree(key) for key in texts]
    assert len(deliveries._trees) == 3
    again = deliveries._tree("/p/m0.py")
    assert again is not trees[0] and again.body[0].name == "C0"
    assert deliveries._tree("/p/m0.py") is again  # kept now: no second parse
