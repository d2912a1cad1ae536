"""Which parameters an optimizer holds and which modules are surely distinct (model/bindings.py):
the mechanisms that read an optimizer's parameter source where the spelling varies."""

import libcst as cst
import pytest

from gradlint.model.bindings import collect

GAN = (
    "import torch, torch.nn as nn\n"
    "generator = nn.Linear(4, 8)\n"
    "discriminator = nn.Linear(8, 1)\n"
)


def bindings(source):
    return collect(cst.parse_module(source))


@pytest.mark.parametrize("second", ["bnb.optim.AdamW8bit", "torch.optim.SGD"])
def test_an_optimizer_class_held_in_a_name_builds_an_optimizer(second):
    b = bindings(
        GAN + "import bitsandbytes as bnb\n"
        "if use_8bit:\n"
        f"    optimizer_cls = {second}\n"
        "else:\n"
        "    optimizer_cls = torch.optim.AdamW\n"
        "opt_g = optimizer_cls(list(generator.parameters()), lr=1e-3)\n"
        "opt_d = optimizer_cls(params=discriminator.parameters())\n"
    )
    assert b.kind("opt_g") == "optimizer"
    assert b.optimizer_params("opt_g") == {"generator"}
    assert b.optimizer_params("opt_d") == {"discriminator"}


@pytest.mark.parametrize(
    "binding",
    [
        "optimizer_cls = getattr(torch.optim, name)",  # a class the file cannot name
        "optimizer_cls = Wrapper",  # not an optimizer class
        "optimizer_cls = torch.optim.AdamW\noptimizer_cls = make_class()",  # bound to something else too
    ],
)
def test_a_name_not_only_bound_to_optimizer_classes_builds_nothing_known(binding):
    b = bindings(GAN + binding + "\nopt_g = optimizer_cls(generator.parameters())\n")
    assert b.optimizer_params("opt_g") is None


HOOK = (
    "def save_models(models, folder):\n"
    "    discriminator = models[1]\n"
    "{body}"
)


def test_a_local_that_a_def_never_hands_on_does_not_hide_a_built_module():
    b = bindings(GAN + HOOK.format(body="    discriminator.save_pretrained(folder)\n    del discriminator\n"))
    assert b.definitely_distinct("generator", "discriminator")


@pytest.mark.parametrize(
    "body",
    [
        "    keep(discriminator)\n",  # handed to a call (a function whose parameter may share the name)
        "    return discriminator\n",
        "    self.d = discriminator\n",  # stored where others read it
        "    global discriminator\n",
        "    for p in discriminator.parameters():\n        pass\n",  # a loop of its own
        "    discriminator.zero_grad()\n",  # a step a loop may inline
        "    fn = lambda: discriminator\n",  # a closure may hand it on
        "    def inner():\n        return discriminator\n",
    ],
)
def test_a_local_the_def_may_hand_on_still_counts(body):
    b = bindings(GAN + HOOK.format(body=body))
    assert not b.definitely_distinct("generator", "discriminator")


def test_a_tensor_named_like_a_network_does_not_hide_the_network():
    b = bindings(
        "import torch, torch.nn as nn, torch.nn.functional as F\n"
        "class MuNet(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.fc_mu = nn.Linear(16, 1)\n"
        "    def forward(self, x):\n"
        "        mu = torch.tanh(self.fc_mu(x)) * 2\n"
        "        return mu\n"
        "class QNet(nn.Module):\n"
        "    def __init__(self):\n"
        "        self.fc_q = nn.Linear(16, 1)\n"
        "    def forward(self, x):\n"
        "        q = F.relu(x)\n"
        "        q = self.fc_q(q)\n"
        "        return q\n"
        "mu, q = MuNet(), QNet()\n"
    )
    assert b.definitely_distinct("mu", "q")


@pytest.mark.parametrize("value", ["models[0]", "net", "x if x is not None else models[0]"])
def test_a_value_that_may_be_a_module_still_counts(value):
    b = bindings(
        "import torch\n"
        "def forward(x):\n"
        f"    mu = {value}\n"
        "    return mu\n"
        "mu, q = MuNet(), QNet()\n"
    )
    assert not b.definitely_distinct("mu", "q")
