"""Every call that can be a gradient event ends followed, not training, or not followed with a
reason (gradlint/model/coverage.py, gradlint/check/unfollowed.py); `--show-unfollowed` lists
the blind ones, the text summary counts them, JSON and SARIF carry them as notes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gradlint.check.engine import RunOptions, check_paths
from gradlint.check.unfollowed import verdicts
from gradlint.commands.cli import main
from gradlint.model import coverage
from gradlint.options.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "unfollowed"

# Each fixture of fixtures/unfollowed/ and the reasons its not-followed calls carry, by line.
EXPECTED = {
    "right_step_built_by_a_factory.py": {14: coverage.DYNAMIC_NAME, 15: coverage.DYNAMIC_NAME,
                                         18: coverage.DYNAMIC_NAME, 33: coverage.LOOP_NOT_MODELLED},
    "right_agent_of_two_classes.py": {line: coverage.SEVERAL_CLASSES for line in (18, 19, 22, 31, 32, 35)},
    "right_update_picked_from_a_table.py": {line: coverage.DYNAMIC_NAME for line in (12, 13, 17)},
    "right_manual_mode_set_by_an_argument.py": {line: coverage.FRAMEWORK_METHOD for line in (34, 35, 36)},
    "right_trainer_handed_in_by_the_caller.py": {line: coverage.CALLER_NOT_FOLLOWED for line in (16, 17, 20)},
}


def run_of(*paths, **options):
    return check_paths([str(p) for p in paths], Settings.default(), RunOptions(jobs=1, **options))


def blind(run) -> dict:
    return {v.call.line: v.reason for v in run.not_followed()}


def test_every_fixture_is_listed():
    assert sorted(p.name for p in FIXTURES.glob("*.py")) == sorted(EXPECTED)


def test_every_not_followed_reason_has_a_fixture():
    shown = {reason for lines in EXPECTED.values() for reason in lines.values()}
    assert shown == set(coverage.NOT_FOLLOWED_REASONS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_fixture_is_not_followed_for_its_reason(name):
    run = run_of(FIXTURES / name)
    assert run.findings() == []  # right code: the checker is blind there, the code is not wrong
    assert blind(run) == EXPECTED[name]


def write(folder: Path, files: dict) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# The backward half of a step (the caller steps): a function with a backward and a step of its
# own is read on its own whoever calls it (FULL_STEP), so it is followed without a caller.
STEP = """
    optimizer.zero_grad()
    model(x).sum().backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
"""
FULL_STEP = """
    optimizer.zero_grad()
    model(x).sum().backward()
    optimizer.step()
"""


def by_verdict(run) -> dict:
    out: dict = {}
    for v in verdicts(run.results):
        out.setdefault(v.verdict, []).append((os.path.basename(v.path), v.call.line, v.reason))
    return out


def test_a_modelled_loop_is_followed_and_its_calls_are_not_reported(tmp_path):
    write(tmp_path, {"train.py": "def train(model, optimizer, loader):\n    for x in loader:" + STEP.replace("\n    ", "\n        ")})
    run = run_of(tmp_path)
    assert by_verdict(run) == {"followed": [("train.py", 3, ""), ("train.py", 4, ""), ("train.py", 5, "")]}
    assert run.not_followed() == []


def test_a_function_followed_from_another_modules_loop_is_followed_there(tmp_path):
    write(tmp_path, {
        "steps.py": "def train_step(model, optimizer, x):" + STEP,
        "train.py": "from steps import train_step\n\n\ndef fit(model, optimizer, loader):\n"
                    "    for x in loader:\n        train_step(model, optimizer, x)\n",
    })
    assert by_verdict(run_of(tmp_path)) == {"followed": [("steps.py", 2, ""), ("steps.py", 3, ""), ("steps.py", 4, "")]}


@pytest.mark.parametrize("files, reason", [
    ({"lib.py": "def update(model, optimizer, x):" + STEP}, coverage.NO_CALLER),
    ({"tests/check_step.py": "def check(model, optimizer, x):" + STEP + "\ncheck(1, 2, 3)\n"}, coverage.IN_A_TEST),
    ({"test_step.py": "def run(model, optimizer, x):" + STEP + "\nrun(1, 2, 3)\n"}, coverage.IN_A_TEST),
    ({"swa.py": "import torch\ndef swa(model, optimizer, x):\n    with torch.no_grad():" + STEP.replace("\n    ", "\n        ")
      + "\nswa(1, 2, 3)\n"}, coverage.UNDER_NO_GRAD),
    ({"lookahead.py": "class Lookahead:\n    def step(self):\n        self.optimizer.step()\n"
                      "        self.base_optimizer.step()\n"}, coverage.OWN_METHOD),
    ({"kernel.py": "import torch\nclass Scan(torch.autograd.Function):\n    @staticmethod\n    def backward(ctx, g):\n"
                   "        return scan_cuda.backward(g, ctx.saved)\n"}, coverage.OWN_METHOD),
    ({"flow.py": "import torch\nclass Flow(torch.nn.Module):\n    def forward(self, z):\n"
                 "        return self.coupling.backward(z)\n",
      "sample.py": "from flow import Flow\nflow = Flow()\nfor z in zs:\n    print(flow.forward(z))\n"}, coverage.OWN_METHOD),
    ({"once.py": "import torch\nmodel = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=1)\n"
                 "x = torch.ones(2)" + STEP.replace("\n    ", "\n")}, coverage.NO_CALLER),
])
def test_code_that_is_no_training_says_why(tmp_path, files, reason):
    run = run_of(write(tmp_path, files))
    found = by_verdict(run)
    assert set(found) == {"not training"}
    assert {r for _, _, r in found["not training"]} == {reason}
    assert run.not_followed() == []


@pytest.mark.parametrize("files", [
    {"lib.py": "def update(model, optimizer, x):" + FULL_STEP},  # no caller
    {"agent.py": "class Agent:\n    def learn(self, model, optimizer, x):" + FULL_STEP.replace("\n    ", "\n        "),
     "main.py": "def run(agents, x):\n    for a in agents.values():\n        a.learn(1, 2, x)\n"},  # receiver unknown
    {"tests/check_step.py": "def check(model, optimizer, x):" + FULL_STEP + "\ncheck(1, 2, 3)\n"},
])
def test_a_function_with_a_step_of_its_own_is_followed_whoever_calls_it(tmp_path, files):
    """A backward and a step in one body: each call is a training step, read on its own."""
    run = run_of(write(tmp_path, files))
    assert set(by_verdict(run)) == {"followed"} and len(by_verdict(run)["followed"]) == 3


def test_a_step_of_its_own_run_by_another_modules_loop_is_one_finding(tmp_path, capsys):
    """Read on its own and through the loop that calls it: one misplaced clip, one finding,
    whichever of the files a run checks."""
    write(tmp_path, {
        "steps.py": "import torch\n\n\ndef train_step(model, optimizer, x):" + FULL_STEP
                    + "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "train.py": "from steps import train_step\n\n\ndef fit(model, optimizer, loader):\n"
                    "    for x in loader:\n        train_step(model, optimizer, x)\n",
    })
    for path in (tmp_path, tmp_path / "steps.py", tmp_path / "train.py"):
        code, out = cli(capsys, "--no-cache", "--output-format", "json", str(path))
        found = [(os.path.basename(f["path"]), f["line"], f["code"]) for f in json.loads(out)["findings"]]
        assert (code, found) == (1, [("steps.py", 8, "GL004")]), path


def test_a_function_only_code_without_a_loop_calls_runs_once(tmp_path):
    """main.py calls it once, and nothing calls main.py's function in a loop: no iteration."""
    write(tmp_path, {
        "agent.py": "def learn(model, optimizer, x):" + STEP,
        "main.py": "from agent import learn\n\n\ndef main(model, optimizer, x):\n    learn(model, optimizer, x)\n",
    })
    run = run_of(tmp_path)
    assert {v.reason for v in verdicts(run.results)} == {coverage.NO_CALLER} and run.not_followed() == []


def test_a_function_a_checked_file_calls_is_not_followed_when_the_model_misses_the_call(tmp_path):
    write(tmp_path, {
        "agent.py": "def learn(model, optimizer, x):" + STEP,
        "main.py": "import torch\nfrom agent import learn\n\n\ndef main(agents, optimizer, loader):\n"
                   "    for x in loader:\n        for a in agents:\n            a.opt.zero_grad()\n"
                   "        handlers['learn'] = learn\n        optimizer.step()\n    learn(1, 2, 3)\n",
    })
    assert set(blind(run_of(tmp_path)).values()) == {coverage.CALLER_NOT_FOLLOWED}


def test_a_sampler_or_an_environment_step_is_no_gradient_call(tmp_path):
    write(tmp_path, {"sample.py": "def sample(scheduler, env, unet, x):\n    for t in range(3):\n"
                                  "        x = scheduler.step(unet(x), t, x).prev_sample\n        env.step(0)\n"})
    assert verdicts(run_of(tmp_path).results) == []


def test_called_names_leave_out_definitions():
    text = "def train(a):\n    x.update(b)\n    foo (c)\nclass Net(B):\n    pass\nasync def g():\n    h()\n"
    assert coverage.called_names(text) == {"update", "foo", "h"}


def test_called_names_leave_out_calls_in_triple_quoted_strings():
    text = 'def f():\n    """Example: trainer.fit(x)"""\n    run()\n\n\n\'\'\'\nfor b in data:\n    t.step_ts(b)\n\'\'\'\ng(\'"""\')\n'
    assert coverage.called_names(text) == {"run", "g"}  # an unpaired quote cuts only what follows it


def test_a_file_with_a_syntax_error_has_no_gradient_calls(tmp_path):
    write(tmp_path, {"broken.py": "for x in loader:\n    loss.backward(\n"})
    run = run_of(tmp_path)
    assert run.errors() and verdicts(run.results) == []


# --- what the user sees ------------------------------------------------------------------


TABLE = FIXTURES / "right_update_picked_from_a_table.py"


def cli(capsys, *argv):
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_show_unfollowed_lists_path_line_col_reason(capsys):
    code, out = cli(capsys, "--no-cache", "--show-unfollowed", str(TABLE))
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith(str(TABLE))]
    assert rows == [f"{TABLE}:{line}:5: {coverage.DYNAMIC_NAME}" for line in (12, 13, 17)]
    assert out.splitlines()[-1] == "3 gradient calls were not followed."


def test_the_default_report_ends_with_the_count(capsys):
    code, out = cli(capsys, "--no-cache", str(TABLE))
    assert code == 0
    assert out.splitlines()[-1] == "3 gradient calls were not followed (--show-unfollowed lists them)"
    assert coverage.DYNAMIC_NAME not in out


def test_no_count_when_every_call_is_followed(capsys):
    code, out = cli(capsys, "--no-cache", str(ROOT / "fixtures" / "gl001" / "right_ignite_update_clears.py"))
    assert "not followed" not in out


def test_json_carries_them_as_notes_not_findings(capsys):
    code, out = cli(capsys, "--no-cache", "--output-format", "json", str(TABLE))
    data = json.loads(out)
    assert code == 0 and data["findings"] == []
    assert data["not_followed"] == [
        {"path": str(TABLE), "line": line, "column": 5, "reason": coverage.DYNAMIC_NAME} for line in (12, 13, 17)
    ]


def test_sarif_carries_them_as_note_notifications(capsys):
    code, out = cli(capsys, "--no-cache", "--output-format", "sarif", str(TABLE))
    run = json.loads(out)["runs"][0]
    assert code == 0 and run["results"] == []
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["level"] for n in notes] == ["note"] * 3
    assert {n["descriptor"]["id"] for n in notes} == {"not-followed"}
    assert run["invocations"][0]["executionSuccessful"] is True


def test_a_finding_keeps_its_exit_code_beside_them(capsys, tmp_path):
    write(tmp_path, {
        "wrong.py": "def train(model, optimizer, loader):\n    for x in loader:\n        model(x).sum().backward()\n"
                    "        optimizer.step()\n",
        "lib.py": "UPDATES = {}\n\ndef update(model, optimizer, x):" + STEP + "\nUPDATES['u'] = update\n",
    })
    code, out = cli(capsys, "--no-cache", str(tmp_path))
    assert code == 1
    assert "GL001" in out and out.splitlines()[-1].startswith("3 gradient calls were not followed")


def test_the_cache_keeps_them(tmp_path):
    cache = tmp_path / "cache"
    first = run_of(TABLE, cache_dir=str(cache))
    second = run_of(TABLE, cache_dir=str(cache))
    assert [v.call for v in second.not_followed()] == [v.call for v in first.not_followed()]
    assert len(second.not_followed()) == 3


@pytest.mark.parametrize("folder", ["agent_of_two_classes_one_never_clears", "agent_of_two_classes_from_a_factory"])
def test_a_receiver_bound_to_several_classes_follows_each_class(folder):
    """`agent` bound to either of two classes of the project (on two branches, or by a factory
    of the file whose returns build either): each class's `update` is a path of the loop."""
    run = run_of(ROOT / "fixtures" / "cross_file" / folder)
    assert blind(run) == {}
    followed = [v for v in verdicts(run.results) if v.verdict == coverage.FOLLOWED]
    assert {(os.path.basename(v.path), v.call.line) for v in followed} >= {("agents.py", 15), ("agents.py", 25)}


@pytest.mark.parametrize("folder", ["trainer_agent_picked_by_name_clips_after_step", "trainer_agent_picked_by_name_in_order"])
def test_a_receiver_of_several_classes_or_one_it_cannot_tell_follows_each_class_it_can(folder):
    """`self.agent` of the trainer is a ValueAgent or a PolicyAgent of agents.py, or a baseline
    whose class the analysis cannot tell: each agent's `learn` is a path of the loop, so every
    gradient call of agents.py is followed."""
    run = run_of(ROOT / "fixtures" / "cross_file" / folder)
    assert blind(run) == {}
    calls = [v for v in verdicts(run.results) if os.path.basename(v.path) == "agents.py"]
    assert len(calls) >= 7 and {v.verdict for v in calls} == {coverage.FOLLOWED}


@pytest.mark.parametrize("folder", ["base_loop_runs_a_subclass_clip_after_step", "base_loop_runs_subclass_steps_in_order"])
def test_a_base_loop_follows_the_overrides_of_its_stub_in_subclasses_of_other_modules(folder):
    """`self.run_step(x, y)` in the base's loop, `run_step` a stub there and written by two
    subclasses in another module: both are paths of the loop."""
    run = run_of(ROOT / "fixtures" / "cross_file" / folder)
    found = by_verdict(run)
    assert set(found) == {"followed"}
    assert {line for name, line, _ in found["followed"] if name == "trainers.py"} == {10, 11, 12, 17, 18, 19, 20}


BASE_AND_TWO_STEPS = """
import torch
from torch import nn


class Base:
    def __init__(self):
        self.net = nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def train(self, batches):
        for x, y in batches:
            self.run_step(x, y)

    def run_step(self, x, y):
        raise NotImplementedError


class Plain(Base):
    def run_step(self, x, y):
        self.optimizer.zero_grad()
        nn.functional.mse_loss(self.net(x), y).backward()
        self.optimizer.step()


class Clipped(Base):
    def run_step(self, x, y):
        self.optimizer.zero_grad()
        nn.functional.mse_loss(self.net(x), y).backward()
        self.optimizer.step()
        nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)
"""


def test_a_base_loop_follows_each_override_of_its_stub_in_the_same_file(tmp_path):
    run = run_of(write(tmp_path, {"trainers.py": BASE_AND_TWO_STEPS}))
    assert set(by_verdict(run)) == {"followed"}
    assert [(f.code, f.line) for f in run.findings()] == [("GL004", 31)]


def test_a_base_loop_follows_a_method_only_its_subclass_of_another_module_defines(tmp_path):
    """`self.process_batch(batch)` in the base's loop, a method the base never defines: the
    subclass's (another module) is the one that runs."""
    run = run_of(write(tmp_path, {
        "base_trainer.py": "class BaseTrainer:\n    def train(self, loader):\n        for batch in loader:\n"
                           "            self.process_batch(batch)\n",
        "trainer.py": "import torch\nfrom base_trainer import BaseTrainer\n\n\nclass Trainer(BaseTrainer):\n"
                      "    def process_batch(self, batch):\n        self.optimizer.zero_grad()\n"
                      "        self.model(batch).sum().backward()\n        self.optimizer.step()\n"
                      "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n",
    }))
    assert set(by_verdict(run)) == {"followed"}
    assert [(os.path.basename(f.path), f.code, f.line) for f in run.findings()] == [("trainer.py", "GL004", 10)]


def test_a_call_of_a_method_of_its_own_class_named_like_an_event_is_no_gradient_call(tmp_path):
    """`self.backward()` in a trainer that defines `backward` calls that method: the calls in
    its body are the gradient calls (followed from the loop), the call of it is none."""
    write(tmp_path, {"trainer.py": (
        "import torch\n\n\nclass Trainer:\n"
        "    def __init__(self, model):\n        self.model = model\n"
        "        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n"
        "    def backward(self):\n        self.loss.backward()\n\n"
        "    def optimize(self, x):\n        self.optimizer.zero_grad()\n        self.loss = self.model(x).sum()\n"
        "        self.backward()\n        self.optimizer.step()\n\n"
        "    def train(self, data):\n        for x in data:\n            self.optimize(x)\n"
    )})
    run = run_of(tmp_path)
    assert by_verdict(run) == {"followed": [("trainer.py", 10, ""), ("trainer.py", 13, ""), ("trainer.py", 16, "")]}


@pytest.mark.parametrize("path", [
    "fixtures/idioms/masked_pretrain_accum_iter.py",
    "fixtures/gl004/right_loss_scaler_object_clips_inside.py",
    "fixtures/cross_file/loss_scaler_object_accumulates",
    # the scaler a parameter of the engine's function, handed by the script (project/handed.py)
    "fixtures/cross_file/engine_loss_scaler_given_by_main_accumulates",
])
def test_an_object_called_through_its_class_call_method_is_followed(path):
    """`loss_scaler(loss, optimizer, update_grad=...)` (a name, a parameter handed one, or
    `self.loss_scaler`), the object of a class of the file or of another module whose
    `__call__` backpropagates, clips and steps: the loop runs that method, so the loop's own
    clears and the method's calls are followed, and the accumulation test handed as
    `update_grad` is the loop's own (no finding on the right idiom)."""
    run = run_of(ROOT / path)
    assert run.findings() == []
    assert blind(run) == {}
    followed = [v for v in verdicts(run.results) if v.verdict == coverage.FOLLOWED]
    assert len(followed) >= 5  # the loop's clears and the method's backward, unscale, clip, step


def test_a_call_of_a_name_that_is_no_object_of_a_class_with_call_runs_nothing(tmp_path):
    """A class of the file with a `__call__` does not make every call a call of it: a function
    parameter handed a plain module (`model(x)`) stays what it is, and the loop of the file
    without backward or step of its own is no training loop."""
    write(tmp_path, {"train.py": (
        "import torch\n\n\nclass Scaler:\n    def __call__(self, loss, optimizer):\n"
        "        loss.backward()\n        optimizer.step()\n\n\n"
        "def evaluate(model, loader, optimizer):\n    for x in loader:\n        optimizer.zero_grad()\n"
        "        print(model(x))\n\n\n"
        "model = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=1)\n"
        "evaluate(model, [torch.ones(2)], optimizer)\n"
    )})
    run = run_of(tmp_path)
    assert run.findings() == []
    assert coverage.FOLLOWED not in {v.verdict for v in verdicts(run.results) if v.call.line == 12}
