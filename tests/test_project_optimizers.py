"""Optimizers a class of another module stores on self (`self.optimizer = torch.optim.Adam(...)`
in a policy's set-up, a model's `initialize`) are optimizers where a loop steps them through an
instance: `self.policy.optimizer` of `self.policy = Policy(...)`, `model.optimizer_D` of
`model = create_model(...)` with the factory returning one class's instance (issue 27)."""

from __future__ import annotations

from tests.test_project import found, run, write

POLICY = """\
import torch as th
from torch import nn


class Policy(nn.Module):
    def __init__(self, lr):
        super().__init__()
        self._build(lr)

    def _build(self, lr):
        self.head = nn.Linear(4, 1)
        self.critic = nn.Linear(4, 1)
        self.optimizer = th.optim.Adam(self.head.parameters(), lr=lr)
        self.critic_optimizer = th.optim.SGD(self.critic.parameters(), lr=lr)
"""

ALGORITHM = """\
import torch
from policies import Policy


class Algorithm:
    def __init__(self):
        self.policy = Policy(0.01)

    def train(self, batches):
        for x, y in batches:
            self.policy.{cleared}.zero_grad()
            loss = ((self.policy.head(x) - y) ** 2).mean()
            loss.backward()
            self.policy.optimizer.step()
"""


def test_a_policy_of_another_module_cleared_through_the_wrong_optimizer(tmp_path):
    write(tmp_path, {"policies.py": POLICY, "algorithm.py": ALGORITHM.format(cleared="critic_optimizer")})
    assert found(run(tmp_path)) == [("algorithm.py", 11, "GL003")]


def test_a_policy_of_another_module_cleared_through_its_own_optimizer(tmp_path):
    write(tmp_path, {"policies.py": POLICY, "algorithm.py": ALGORITHM.format(cleared="optimizer")})
    assert found(run(tmp_path)) == []


MODEL = """\
import torch
from torch import nn


class PairModel(nn.Module):
    def initialize(self, lr):
        self.net_g = nn.Linear(2, 4)
        self.net_d = nn.Linear(4, 1)
        self.optimizer_G = torch.optim.Adam(self.net_g.parameters(), lr=lr)
        self.optimizer_D = torch.optim.Adam(self.net_d.parameters(), lr=lr)
"""

FACTORY = """\
from .pair_model import PairModel


def create_model(lr):
    model = PairModel()
    model.initialize(lr)
    return model
"""

TRAIN = """\
import torch
from models import create_model

model = create_model(0.001)
for real in [torch.randn(8, 4)] * 3:
    fake = model.net_g(torch.randn(8, 2))
    model.optimizer_G.zero_grad()
    (-model.net_d(fake).mean()).backward()
    model.optimizer_G.step()
    model.{cleared}.zero_grad()
    (model.net_d(fake.detach()) - model.net_d(real)).mean().backward()
    model.optimizer_D.step()
"""


def _model_project(tmp_path, cleared: str) -> None:
    write(tmp_path, {
        "models/__init__.py": FACTORY, "models/pair_model.py": MODEL, "train.py": TRAIN.format(cleared=cleared),
    })


def test_a_model_from_a_factory_of_another_module_cleared_through_the_wrong_optimizer(tmp_path):
    _model_project(tmp_path, "optimizer_G")
    assert found(run(tmp_path)) == [("train.py", 10, "GL003")]


def test_a_model_from_a_factory_of_another_module_cleared_through_its_own_optimizers(tmp_path):
    _model_project(tmp_path, "optimizer_D")
    assert found(run(tmp_path)) == []


def test_a_factory_that_returns_two_classes_stays_unknown(tmp_path):
    """What does not resolve to one class stays silent, as before."""
    factory = FACTORY.replace("    model = PairModel()\n", "    model = PairModel() if lr else Other()\n")
    factory += "\n\nclass Other:\n    pass\n"
    write(tmp_path, {
        "models/__init__.py": factory, "models/pair_model.py": MODEL, "train.py": TRAIN.format(cleared="optimizer_G"),
    })
    assert found(run(tmp_path)) == []


def test_the_index_names_the_classes_and_factories_that_build_optimizers(tmp_path):
    from gradlint.project.scan import scan

    assert scan(POLICY).builders == {"Policy"}
    assert scan(FACTORY).builders == set()
    assert scan("class A:\n    def f(self):\n        opt = torch.optim.SGD(p)\n").builders == set()


def test_a_method_of_a_factorys_model_is_followed(tmp_path):
    """`model.backward_g(fake)` of `model = create_model(...)`: the method of the class the factory
    returns is inlined (its backward is seen), not an opaque call before the generator's step."""
    model = MODEL + "\n    def backward_g(self, fake):\n        (-self.net_d(fake).mean()).backward()\n"
    train = TRAIN.format(cleared="optimizer_D").replace("    (-model.net_d(fake).mean()).backward()\n", "    model.backward_g(fake)\n")
    write(tmp_path, {"models/__init__.py": FACTORY, "models/pair_model.py": model, "train.py": train})
    assert found(run(tmp_path)) == []
