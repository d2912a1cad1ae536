"""An object of one of several classes of the project, built where the loop's file cannot see
the class by name: by a factory of another module (`agent = get_agent(cfg)`), or from a literal
table of classes (`AGENTS[name][0](cfg)`).  Each class is followed on its own path; what the
file does not show in full (a table it changes, a factory name two modules define) stays
unread, and its gradient calls are listed as not followed."""

from __future__ import annotations

import shutil
from pathlib import Path

import libcst as cst
import pytest

from gradlint.check.engine import RunOptions, check_paths
from gradlint.core.findings import FOLLOWED, NOT_FOLLOWED
from gradlint.check.unfollowed import verdicts
from gradlint.model.bindings import collect
from gradlint.model.tables import listed_callees
from gradlint.options.settings import Settings
from test_project import found, run

ROOT = Path(__file__).resolve().parent.parent
CROSS = ROOT / "fixtures" / "cross_file"


def run_of(folder: Path):
    return check_paths([str(folder)], Settings.default(), RunOptions(jobs=1))


def blind(run) -> list:
    return [(Path(v.path).name, v.call.line) for v in verdicts(run.results) if v.verdict == NOT_FOLLOWED]


def write(folder: Path, files: dict) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def agent(name: str, never_clears: bool = False) -> str:
    """A class whose `learn` backpropagates and steps.  `never_clears`: its bug shows only where
    a loop runs it (GL001 on its backward, line 10): read on its own, a caller may clear."""
    clear = "" if never_clears else "        self.optimizer.zero_grad()\n"
    return (f"import torch\n\n\nclass {name}:\n    def __init__(self):\n        self.net = torch.nn.Linear(4, 1)\n"
            "        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)\n\n"
            "    def learn(self, x):\n" + clear + "        self.net(x).sum().backward()\n"
            "        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 1.0)\n        self.optimizer.step()\n")


@pytest.mark.parametrize("folder", ["agent_from_a_factory_module_in_order", "agent_picked_from_a_table_in_order"])
def test_every_gradient_call_of_the_right_fixture_is_followed(folder):
    run = run_of(CROSS / folder)
    assert run.findings() == []
    assert blind(run) == []


def test_a_factory_module_builds_either_class_each_on_its_own_path(tmp_path):
    write(tmp_path, {
        "sac.py": agent("SAC", never_clears=True),
        "td3.py": agent("TD3"),
        "factory.py": "from sac import SAC\nfrom td3 import TD3\n\n\ndef get_agent(name):\n"
                      "    if name == 'sac':\n        return SAC()\n    return TD3()\n",
        "train.py": "import sys\nimport torch\nfrom factory import get_agent\n\nagent = get_agent(sys.argv[1])\n"
                    "for _ in range(3):\n    agent.learn(torch.randn(8, 4))\n",
    })
    run = run_of(tmp_path)
    assert [(Path(f.path).name, f.line, f.code) for f in run.findings()] == [("sac.py", 10, "GL001")]
    assert blind(run) == []


def test_a_factory_that_may_return_an_object_of_another_library_stays_unread(tmp_path):
    write(tmp_path, {
        "sac.py": agent("SAC", never_clears=True),
        "factory.py": "import baselines\nfrom sac import SAC\n\n\ndef get_agent(name):\n"
                      "    if name == 'sac':\n        return SAC()\n    return baselines.PPO()\n",
        "train.py": "import sys\nimport torch\nfrom factory import get_agent\n\nagent = get_agent(sys.argv[1])\n"
                    "for _ in range(3):\n    agent.learn(torch.randn(8, 4))\n",
    })
    run = run_of(tmp_path)
    assert run.findings() == []  # read as SAC's, its missing clear would be GL001
    # no loop reads it; `learn` backpropagates and steps in its own body, so it is read on its own
    assert {v.verdict for v in verdicts(run.results)} == {FOLLOWED}


TABLE_SCRIPT = """import sys
import torch
from agents import SAC, TD3

AGENTS = {"sac": (SAC, "sac_settings"), "td3": (TD3, "td3_settings")}


class Manager:
    def initialize(self, name):
        self.agent = AGENTS[name][0]()
%s
    def run(self, batches):
        for x in batches:
            self.agent.learn(x)
"""


@pytest.mark.parametrize("moved", [False, True])
def test_a_table_of_classes_gives_each_class_its_own_path(tmp_path, moved):
    """Also when the object is moved to a device as it is built (`.to(device)` returns it)."""
    script = TABLE_SCRIPT % ""
    if moved:
        script = script.replace("AGENTS[name][0]()", "AGENTS[name][0]().to('cpu').float()")
    write(tmp_path, {"agents.py": agent("SAC", never_clears=True) + "\n\n" + agent("TD3").split("\n\n\n", 1)[1],
                     "train.py": script})
    run = run_of(tmp_path)
    assert [(Path(f.path).name, f.line, f.code) for f in run.findings()] == [("agents.py", 10, "GL001")]
    assert blind(run) == []


@pytest.mark.parametrize("change", [
    '        AGENTS["ppo"] = (object, "")\n',
    '        AGENTS.update(ppo=(object, ""))\n',
    '        AGENTS |= {"ppo": (object, "")}\n',
])
def test_a_table_the_file_changes_anywhere_stays_unread(tmp_path, change):
    """A method no loop reaches adds an entry: the table does not show every class, so the
    call is not read as one of those it shows (the screen keeps the change with the table)."""
    extend = "\n    def register(self):\n" + change
    write(tmp_path, {"agents.py": agent("SAC", never_clears=True) + "\n\n" + agent("TD3").split("\n\n\n", 1)[1],
                     "train.py": TABLE_SCRIPT % extend})
    run = run_of(tmp_path)
    assert run.findings() == []  # read as SAC's, its missing clear would be GL001
    assert blind(run) == []  # each `learn` is read on its own (a step of its own), no loop reads them


def listed(module_text: str, call: str):
    module = cst.parse_module(module_text + "\n" + call + "\n")
    bindings = collect(module)
    return listed_callees(cst.parse_expression(call).func, bindings)


@pytest.mark.parametrize("table, call, expected", [
    ("T = {'a': A, 'b': m.B}", "T[k]()", ["A", "m.B"]),
    ("T = [(A, 1), (B, 2)]", "T[k][0]()", ["A", "B"]),
    ("T = [(A, 1), (B, 2)]", "T[k][-2]()", ["A", "B"]),
    ("T = [(A, 1), (B,)]", "T[k][1]()", None),  # an entry without that item
    ("T = {'a': A, **more}", "T[k]()", None),  # entries the file does not show
    ("T = {'a': A, 'b': make()}", "T[k]()", None),  # an entry that is no name
    ("T = {}", "T[k]()", None),
    ("T = {'a': A}\nT = {'b': B}", "T[k]()", None),  # bound twice
    ("def f():\n    T = {'a': A}", "T[k]()", None),  # a def's local, not the module's table
    ("T = {'a': A}\ndel T['a']", "T[k]()", None),
    ("T = {'a': A}\nT.setdefault('b', B)", "T[k]()", None),
    ("T = {'a': A}\nT.get('a')", "T[k]()", ["A"]),  # a read changes nothing
    ("T = [(A, 1)]", "T[k][i]()", None),  # an index not written as a constant
])
def test_which_classes_a_table_lists(table, call, expected):
    assert listed(table, call) == expected


def test_two_modules_may_define_a_factory_of_the_same_name(tmp_path):
    """Two experiments, each with its own `get_agent` and script: each script's loop runs the
    classes of the factory it imports."""
    for folder, never_clears in (("one", True), ("two", False)):
        (tmp_path / folder).mkdir()
        write(tmp_path / folder, {
            "sac.py": agent("SAC", never_clears=never_clears),
            "td3.py": agent("TD3"),
            "factory.py": "from sac import SAC\nfrom td3 import TD3\n\n\ndef get_agent(name):\n"
                          "    if name == 'sac':\n        return SAC()\n    return TD3()\n",
            "train.py": "import sys\nimport torch\nfrom factory import get_agent\n\nagent = get_agent(sys.argv[1])\n"
                        "for _ in range(3):\n    agent.learn(torch.randn(8, 4))\n",
        })
    run = run_of(tmp_path)
    assert [(Path(f.path).parent.name, Path(f.path).name, f.line) for f in run.findings()] == [("one", "sac.py", 10)]
    assert blind(run) == []


def test_naming_only_the_script_follows_the_factory_it_imports(tmp_path):
    """`gradlint wrong_train.py` (pre-commit passes only changed files; verify reads the script
    with its project): the factory module and the agents' modules are read, not checked."""
    for path in (CROSS / "agent_from_a_factory_module_clips_after_step").glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    assert found(run(tmp_path, "wrong_train.py")) == [("policy_agent.py", 20, "GL004")]
