"""A base class's loop in a module the run does not check, running through `self` the override
of a subclass that a checked file defines or uses (gradlint/run/project_run.py's _companions,
gradlint/check/elsewhere.py's adopt).

fixtures/cross_file/base_loop_runs_a_subclass_clip_after_step: base.py's `TrainerBase.train`
loops over `self.run_step(x, y)`, trainers.py's ClippedTrainer clips after its step there, and
wrong_train.py calls `ClippedTrainer(...).train(...)`.  `gradlint .` found the clip; a
pre-commit run of trainers.py or of wrong_train.py alone said "All checks passed".
"""

from __future__ import annotations

import shutil
import textwrap

import pytest

from test_project import ROOT, found, run

FOLDER = ROOT / "fixtures" / "cross_file" / "base_loop_runs_a_subclass_clip_after_step"
CLIP = ("trainers.py", 20, "GL004")


@pytest.fixture
def project(tmp_path):
    for path in FOLDER.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    return tmp_path


@pytest.mark.parametrize("named", [["trainers.py"], ["wrong_train.py"], ["trainers.py", "wrong_train.py"], ["."]])
def test_the_override_s_misplaced_call_is_found_whichever_file_is_named(project, named):
    result = run(project, *named)
    assert found(result) == [CLIP]
    (finding,) = result.findings()
    assert [(r.path, r.span.line) for r in finding.related] == [(None, 19), ("base.py", 14)]
    # the run reports only the files it was given: base.py is analysed, not checked
    assert "base.py" not in [r.path for r in result.results] or named == ["."]


def test_the_pool_finds_it_too(project):
    assert found(run(project, "trainers.py", "wrong_train.py", jobs=2)) == [CLIP]


def test_a_warm_run_finds_it_and_an_edit_of_the_override_is_seen(project, tmp_path_factory):
    cache = str(tmp_path_factory.mktemp("cache"))
    assert found(run(project, "wrong_train.py", cache_dir=cache)) == [CLIP]
    assert found(run(project, "wrong_train.py", cache_dir=cache)) == [CLIP]
    trainers = project / "trainers.py"
    trainers.write_text(trainers.read_text().replace("        nn.utils.clip_grad_norm_(", "        pass  # ("), encoding="utf-8")
    assert found(run(project, "wrong_train.py", cache_dir=cache)) == []
    assert found(run(project, "trainers.py", cache_dir=cache)) == []


def test_the_noqa_of_the_override_s_file_decides(project):
    trainers = project / "trainers.py"
    trainers.write_text(trainers.read_text().replace("# expect: GL004", "# noqa: GL004"), encoding="utf-8")
    for named in ("trainers.py", "wrong_train.py"):
        result = run(project, named)
        assert found(result) == []
        assert [(f.path, f.line) for r in result.results for f in r.suppressed] == [("trainers.py", 20)]


def test_a_script_that_runs_the_other_subclass_is_not_told_of_this_one(project):
    """The script runs the base's loop on PlainTrainer: ClippedTrainer's override is not run by
    it (a run of trainers.py, which defines it, reports it)."""
    (project / "right_train.py").write_text(
        (project / "wrong_train.py").read_text().replace("ClippedTrainer", "PlainTrainer"), encoding="utf-8"
    )
    assert found(run(project, "right_train.py")) == []


def test_the_base_s_own_bug_is_left_to_a_check_of_the_base(project):
    """A loop of base.py that needs no override to be wrong is base.py's own finding: a run of
    trainers.py reports what trainers.py's override makes of the base's loop, not all of base.py."""
    base = project / "base.py"
    base.write_text(base.read_text() + textwrap.dedent("""\


        def pretrain(model, batches):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in batches:
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()
    """), encoding="utf-8")
    assert found(run(project, ".")) == [("base.py", 28, "GL001"), CLIP]
    assert found(run(project, "trainers.py")) == [CLIP]
    assert found(run(project, "wrong_train.py")) == [CLIP]


# fixtures/cross_file/package_root_base_loop_clips_after_step: the project's root holds an
# __init__.py, so trainers/critic.py's `from trainers.base import BatchTrainer` named nothing
# of the project (it was looked up above the root only); the base's loop, inside a `with` of
# its own context manager, never reached the critic's clip after the step.
PACKAGE_ROOT = ROOT / "fixtures" / "cross_file" / "package_root_base_loop_clips_after_step"


@pytest.mark.parametrize("named", [["."], ["wrong_train.py"], ["trainers/critic.py"]])
def test_a_base_class_of_a_root_that_is_a_package_is_found(tmp_path, named):
    shutil.copytree(PACKAGE_ROOT, tmp_path / "project")
    assert found(run(tmp_path / "project", *named)) == [("trainers/critic.py", 20, "GL004")]


def test_a_root_package_s_module_still_never_imports_from_its_own_folder(tmp_path):
    """`import base` in trainers/critic.py is no sibling module: a package's module imports
    absolutely (the library of that name), whatever package folders lie above it."""
    from gradlint.project.index import Index

    files = {"__init__.py": "", "trainers/__init__.py": "", "trainers/base.py": "", "trainers/critic.py": ""}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    index = Index([str(tmp_path)])
    for name in files:
        index.know(str(tmp_path / name), "", name)
    critic = str(tmp_path / "trainers" / "critic.py")
    assert index.resolve("trainers.base", critic) == (str(tmp_path / "trainers" / "base.py"), [])
    assert index.resolve("base", critic) is None


# fixtures/cross_file/base_loop_self_step_clips_after_step: the base's loop calls `self.step(data)`
# and both subclasses (in trainers.py, deriving from base.py's `Trainer(ABC)`) write `step`.  A
# `step` was taken for an optimizer's or a scheduler's unless its class's own bases were plainly
# free of that API (`object`, `ABC`, `nn.Module`): a base class of another module was not read,
# so neither override was followed and the fine-tuner's clip after the update went unseen.
SELF_STEP = ROOT / "fixtures" / "cross_file" / "base_loop_self_step_clips_after_step"


@pytest.mark.parametrize("named", [["."], ["wrong_train.py"], ["trainers.py"]])
def test_a_base_loop_follows_each_subclass_s_own_step(tmp_path, named):
    for path in SELF_STEP.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    assert found(run(tmp_path, *named)) == [("trainers.py", 37, "GL004")]


def test_a_step_of_a_subclass_of_a_library_optimizer_is_still_no_helper(tmp_path):
    """The same shape on an optimizer of the project (`class Clipped(Base)`, `class
    Base(torch.optim.SGD)`): its `step` is the API's event, whatever its own body does."""
    from test_project import write

    write(tmp_path, {
        "opt.py": "import torch\n\n\nclass Base(torch.optim.SGD):\n    pass\n\n\nclass Clipped(Base):\n    def step(self, closure=None):\n"
                  "        torch.nn.utils.clip_grad_norm_(self.param_groups[0]['params'], 1.0)\n"
                  "        return super().step(closure)\n",
        "train.py": "import torch\nfrom opt import Clipped\n\nmodel = torch.nn.Linear(2, 1)\n"
                    "optimizer = Clipped(model.parameters(), lr=0.1)\nfor x in [torch.randn(4, 2)] * 3:\n"
                    "    optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()\n",
    })
    assert found(run(tmp_path)) == []
