"""A name a def binds is local to it (Python's scoping): a module-level binding of the same name
neither hides nor replaces the class of the def's local when the analysis reads a receiver
(`agent.train_step()`), and the reverse (gradlint/model/bindings.py, values_seen_at)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradlint.check.engine import RunOptions, check_paths
from gradlint.check.unfollowed import verdicts
from gradlint.options.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

AGENT = '''import torch


class Agent:
    def __init__(self):
        self.net = torch.nn.Linear(4, 2)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.1)

    def train_step(self):  # never clears: GL001 when a loop runs it (its caller may clear)
        loss = self.net(torch.randn(8, 4)).sum()
        loss.backward()
        self.optimizer.step()


def load_agent():
    return None
'''


def run_of(*paths):
    return check_paths([str(p) for p in paths], Settings.default(), RunOptions(jobs=1))


def codes(run) -> list[str]:
    return [f.code for f in run.findings()]


def unfollowed(run) -> list:
    return [(Path(v.path).name, v.call.line, v.reason) for v in verdicts(run.results) if v.verdict == "not followed"]


@pytest.mark.parametrize("paths", [
    ["gl007/right_agent_of_a_function_named_again_at_module_level.py"],
    ["cross_file/agent_named_again_by_the_script/right_train.py", "cross_file/agent_named_again_by_the_script/steady_agent.py"],
])
def test_a_def_local_agent_is_followed_though_the_module_names_another(paths):
    run = run_of(*(FIXTURES / p for p in paths))
    assert run.findings() == []
    assert unfollowed(run) == []
    assert any(v.verdict == "followed" for v in verdicts(run.results))


def write(folder: Path, text: str) -> Path:
    path = folder / "train.py"
    path.write_text(text)
    return path


def test_a_module_level_loop_does_not_see_a_defs_local_of_the_same_name(tmp_path):
    path = write(tmp_path, AGENT + '''

def evaluate():
    agent = load_agent()
    return agent


agent = Agent()
for _ in range(3):
    agent.train_step()
''')
    assert codes(run_of(path)) == ["GL001"]


@pytest.mark.parametrize("loop", [
    "def train():\n    for _ in range(3):\n        agent.train_step()\n",  # a free name: the module's
    "def train():\n    def run():\n        for _ in range(3):\n            agent.train_step()\n    run()\n",
])
def test_a_def_that_binds_no_agent_sees_the_modules(tmp_path, loop):
    path = write(tmp_path, AGENT + "\n\nagent = Agent()\n\n\n" + loop + "\n\ntrain()\n")
    assert codes(run_of(path)) == ["GL001"]


def test_a_closure_sees_the_enclosing_defs_agent_not_the_modules(tmp_path):
    path = write(tmp_path, AGENT + '''

def train():
    agent = Agent()

    def run():
        for _ in range(3):
            agent.train_step()

    run()
    return agent


agent = train()
''')
    assert codes(run_of(path)) == ["GL001"]


def test_a_global_declaration_binds_the_modules_agent(tmp_path):
    path = write(tmp_path, AGENT + '''

def setup():
    global agent
    agent = Agent()


setup()
for _ in range(3):
    agent.train_step()
''')
    assert codes(run_of(path)) == ["GL001"]


def test_a_parameter_is_a_local_too(tmp_path):
    """`agent` of `train(agent)` is what its callers hand it, not the module's `agent`: the
    module's Agent() does not decide its class (unknown: no finding from a guess)."""
    path = write(tmp_path, AGENT + '''

class Other:
    def train_step(self):
        return 0


def train(agent):
    for _ in range(3):
        agent.train_step()


agent = Agent()
train(Other())
''')
    assert codes(run_of(path)) == []


def test_a_parameter_holds_what_the_calls_of_its_def_hand_it(tmp_path):
    """`train(agent)` called with the module's `agent = Agent()`: the parameter is that Agent."""
    path = write(tmp_path, AGENT + '''

def train(env, agent, episodes=3):
    for _ in range(episodes):
        agent.train_step()


if __name__ == "__main__":
    agent = Agent()
    train(None, agent)
''')
    assert codes(run_of(path)) == ["GL001"]


def test_a_parameter_handed_two_classes_is_not_guessed(tmp_path):
    path = write(tmp_path, AGENT + '''

class Other:
    def train_step(self):
        return 0


def train(agent):
    for _ in range(3):
        agent.train_step()


train(Other())
train(Agent())
''')
    run = run_of(path)
    assert codes(run) == []  # a guess of Agent would give its missing clear (GL001)
    # Agent.train_step backpropagates and steps in its own body: read on its own, it is followed
    assert unfollowed(run) == []
