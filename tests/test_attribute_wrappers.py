"""An optimizer wrapper class of the file kept in an attribute of the trainer
(`self.d_optim = StepWrapper(Adam(...))`) and called as `self.d_optim.step()`: the method the
file defines runs, as for `wrapper.step()` on a plain name; a hand-back through
`accelerator.prepare(...)` keeps the attribute that instance."""

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings

WRAPPER = (
    "import torch\n"
    "from accelerate import Accelerator\n"
    "\n"
    "class StepWrapper:\n"
    "    def __init__(self, optimizer):\n"
    "        self.optimizer = optimizer\n"
    "    def zero_grad(self):\n"
    "        self.optimizer.zero_grad()\n"
    "    def step(self):\n"
    "        self.optimizer.step()\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, model):\n"
    "        self.accelerator = Accelerator()\n"
    "        self.model = model\n"
    "        self.d_optim = StepWrapper(torch.optim.SGD(model.parameters(), lr=0.1))\n"
    "{prepare}"
    "    def train_step(self, x):\n"
    "{body}"
    "    def fit(self, batches):\n"
    "        for x in batches:\n"
    "            self.train_step(x)\n"
)
PREPARE = "        self.model, self.d_optim = self.accelerator.prepare(self.model, self.d_optim)\n"


def findings(body: str, prepare: str = "") -> list[tuple[int, str]]:
    source = WRAPPER.format(body=body, prepare=prepare)
    return [(f.line, f.code) for f in check_source(source, "train.py", Settings.default()).findings]


def line_of(body: str, prepare: str, text: str) -> int:
    return WRAPPER.format(body=body, prepare=prepare).splitlines().index(text) + 1


CLEAR_BETWEEN = (
    "        self.model(x).sum().backward()\n"
    "        self.d_optim.zero_grad()\n"
    "        self.d_optim.step()\n"
)
CLEAR_FIRST = (
    "        self.d_optim.zero_grad()\n"
    "        self.model(x).sum().backward()\n"
    "        self.d_optim.step()\n"
)
NO_CLEAR = (
    "        self.model(x).sum().backward()\n"
    "        self.d_optim.step()\n"
)


def test_a_wrapper_in_an_attribute_cleared_between_backward_and_step_discards_the_gradients():
    line = line_of(CLEAR_BETWEEN, "", "        self.d_optim.zero_grad()")
    assert findings(CLEAR_BETWEEN) == [(line, "GL002")]


def test_a_wrapper_handed_back_by_prepare_is_still_the_instance():
    line = line_of(CLEAR_BETWEEN, PREPARE, "        self.d_optim.zero_grad()")
    assert findings(CLEAR_BETWEEN, PREPARE) == [(line, "GL002")]


def test_a_wrapper_in_an_attribute_never_cleared_is_gl001():
    line = line_of(NO_CLEAR, PREPARE, "        self.model(x).sum().backward()")
    assert findings(NO_CLEAR, PREPARE) == [(line, "GL001")]


def test_a_wrapper_in_an_attribute_cleared_first_is_right():
    assert findings(CLEAR_FIRST) == []
    assert findings(CLEAR_FIRST, PREPARE) == []
