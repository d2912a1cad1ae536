"""A loop of a base class that calls `self.hook()`, a stub the base leaves to subclasses
(`raise NotImplementedError`, `return 0.0`): the one subclass of the file that overrides it
runs.  With several overriding subclasses, each runs on its own path; a base method that does
work is the one that runs."""

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

BASE = (
    "import torch\n"
    "\n"
    "class Base:\n"
    "    def __init__(self, model):\n"
    "        self.model = model\n"
    "        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    def hook(self, x):\n"
    "{stub}"
    "    def run(self, data):\n"
    "        for x in data:\n"
    "            self.hook(x)\n"
    "\n"
)
NO_CLEAR = (
    "class {name}(Base):\n"
    "    def hook(self, x):\n"
    "        self.model(x).sum().backward()\n"
    "        self.optimizer.step()\n"
)
RIGHT = (
    "class {name}(Base):\n"
    "    def hook(self, x):\n"
    "        self.optimizer.zero_grad()\n"
    "        self.model(x).sum().backward()\n"
    "        self.optimizer.step()\n"
)


def findings(source: str) -> list[str]:
    return [f.code for f in check_source(source, "train.py", Settings.default()).findings]


def test_the_one_override_of_an_abstract_hook_runs_in_the_loop():
    source = BASE.format(stub="        raise NotImplementedError\n") + NO_CLEAR.format(name="Trainer")
    assert findings(source) == ["GL001"]


def test_the_one_override_of_a_hook_that_returns_a_constant_runs_in_the_loop():
    source = BASE.format(stub="        return 0.0\n") + NO_CLEAR.format(name="Trainer")
    assert findings(source) == ["GL001"]


def test_a_right_override_is_quiet():
    source = BASE.format(stub="        raise NotImplementedError\n") + RIGHT.format(name="Trainer")
    assert findings(source) == []


def test_each_overriding_subclass_runs_in_the_loop_on_its_own_path():
    # an A never clears, a B does: the base loop run on an A piles up gradients, and the message
    # says the clear depends on the class, not on a setting
    source = BASE.format(stub="        raise NotImplementedError\n") + NO_CLEAR.format(name="A") + "\n" + RIGHT.format(name="B")
    (finding,) = check_source(source, "train.py", Settings.default()).findings
    assert (finding.code, finding.span.line) == ("GL001", 15)
    assert "runs only when self is of one of the classes it may be" in finding.message


def test_two_right_overriding_subclasses_are_quiet():
    source = BASE.format(stub="        raise NotImplementedError\n") + RIGHT.format(name="A") + "\n" + RIGHT.format(name="B")
    assert findings(source) == []


def test_a_base_hook_that_does_work_is_the_one_that_runs():
    stub = "        self.optimizer.zero_grad()\n        self.model(x).sum().backward()\n        self.optimizer.step()\n"
    assert findings(BASE.format(stub=stub) + NO_CLEAR.format(name="Trainer")) == []


def test_a_sibling_subclass_override_is_not_the_loop_classes():
    # the loop is in A (a subclass of Base that keeps the stub); B's override never runs in A
    source = (
        BASE.format(stub="        raise NotImplementedError\n")
        + "class A(Base):\n    def run(self, data):\n        for x in data:\n            self.hook(x)\n\n"
        + NO_CLEAR.format(name="B").replace("(Base)", "(Base)")
    )
    assert "GL001" in findings(source)  # Base.run's loop with B's hook
    source_a_only = source.replace("class B(Base)", "class B(object)")
    assert findings(source_a_only) == []
