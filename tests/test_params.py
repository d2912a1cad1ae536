"""Which parameters an optimizer holds and which modules are surely distinct (model/bindings.py):
the mechanisms that read an optimizer's parameter source where the spelling varies."""

import libcst as cst
import pytest

from gradlint.model.bindings import collect, is_part
from gradlint.model.loops import build
from gradlint.model.params import coverage

GAN = (
    "import torch, torch.nn as nn\n"
    "generator = nn.Linear(4, 8)\n"
    "discriminator = nn.Linear(8, 1)\n"
)


def bindings(source):
    return collect(cst.parse_module(source))


def build_model(source):
    return build(cst.parse_module(source), "m.py", source)


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


def test_a_method_of_the_model_that_hands_back_parameters_holds_some_of_the_model():
    b = bindings(
        GAN + "opt = torch.optim.SGD(generator.get_parameters(base_lr=0.1), lr=0.01)\n"
        "opt_two = torch.optim.SGD(generator.groups(discriminator, 'x'))\n"
        "opt_unknown = torch.optim.SGD(generator.groups(make()))\n"
        "opt_of_opt = torch.optim.SGD(other_opt.param_groups_of())\n"
        "other_opt = torch.optim.SGD(discriminator.parameters())\n"
    )
    assert b.optimizer_params("opt") == {"generator"}
    (part,) = b.optimizer_params("opt")
    assert is_part(part)
    assert b.optimizer_params("opt_two") == {"generator", "discriminator"}  # what the call hands it too
    assert b.optimizer_params("opt_unknown") is None  # an argument that is no name
    assert b.optimizer_params("opt_of_opt") is None  # an optimizer's method: not a module's


@pytest.mark.parametrize(
    "clear, verdict",
    [
        ("discriminator.zero_grad()", False),  # another model altogether
        ("generator.zero_grad()", True),  # the whole model around the part
        ("generator.head.zero_grad()", None),  # maybe exactly the part, maybe not
        ("opt_d.zero_grad()", False),
    ],
)
def test_a_part_of_a_model_is_covered_only_by_the_whole_and_missed_only_by_another_model(clear, verdict):
    m = build_model(
        GAN + "opt = torch.optim.SGD(generator.get_parameters())\n"
        "opt_d = torch.optim.Adam(discriminator.parameters())\n"
        "for x in data:\n"
        f"    {clear}\n"
        "    generator(x).sum().backward()\n"
        "    opt.step()\n"
    )
    (loop,) = m.loops
    z = next(e for e in loop.events if e.kind == "Z")
    assert coverage(m, [z], "opt") is verdict


def test_a_whole_module_beside_a_part_of_it_is_the_whole_module():
    b = bindings(
        GAN + "opt = torch.optim.SGD([{'params': generator.get_parameters()}, {'params': generator.parameters()}])\n"
    )
    (module,) = b.optimizer_params("opt")
    assert module == "generator" and not is_part(module)


FACTORY = (
    "def adam_for(network, lr=1e-3, *, extra=None):\n"
    "    trainable = filter(lambda p: p.requires_grad, network.parameters())\n"
    "    return torch.optim.Adam(trainable, lr=lr)\n"
)


@pytest.mark.parametrize(
    "call, held",
    [
        ("adam_for(generator)", {"generator"}),
        ("adam_for(network=discriminator.body, lr=2e-4)", {"discriminator.body"}),
        ("adam_for(nets[0])", None),  # an argument that is no name
        ("adam_for()", None),  # nothing named for the network
        ("adam_for(*networks)", None),
    ],
)
def test_a_function_of_the_file_that_builds_an_optimizer_holds_what_its_arguments_name(call, held):
    b = bindings(GAN + FACTORY + f"opt = {call}\n")
    assert b.optimizer_params("opt") == (frozenset(held) if held is not None else None)


def test_a_factory_that_also_returns_something_else_holds_nothing_known():
    b = bindings(
        GAN + "def adam_for(network):\n"
        "    if network is None:\n"
        "        return None\n"
        "    return torch.optim.Adam(network.parameters())\n"
        "opt = adam_for(generator)\n"
    )
    assert b.optimizer_params("opt") is None


def test_dict_parameter_groups():
    b = bindings(GAN + "opt = torch.optim.SGD([dict(params=generator.parameters(), lr=0.1)])\n")
    assert b.optimizer_params("opt") == {"generator"}


LOOP_FILLED = (
    "def build(model, disc):\n"
    "    params = []\n"
    "    for n, p in disc.named_parameters():\n"
    "        if p.requires_grad:\n"
    "            params.append(p)\n"
    "{more}"
    "    return torch.optim.Adam(params)\n"
    "opt = build(generator, discriminator)\n"
)


@pytest.mark.parametrize(
    "more, held",
    [
        ("", {"discriminator"}),
        ("    params += list(model.parameters())\n", {"discriminator", "generator"}),
        ("    params.extend([{'params': model.parameters(), 'lr': 0.1}])\n", {"discriminator", "generator"}),
        ("    params.append(make_extra())\n", None),  # something the checker cannot read
    ],
)
def test_a_list_filled_in_a_loop_over_parameters_holds_that_loops_module(more, held):
    b = bindings(GAN + LOOP_FILLED.format(more=more))
    assert b.optimizer_params("opt") == (frozenset(held) if held is not None else None)


def test_a_list_filled_in_two_functions_or_handed_in_is_unknown():
    two = bindings(
        GAN + "def ema(teacher):\n"
        "    params = []\n"
        "    for p in teacher.parameters():\n"
        "        params.append(p)\n"
        "def build(student):\n"
        "    params = []\n"
        "    for p in student.parameters():\n"
        "        params.append(p)\n"
        "    return torch.optim.Adam(params)\n"
        "opt = build(generator)\n"
    )
    assert two.optimizer_params("opt") is None
    handed = bindings(
        GAN + "def build(params, student):\n"
        "    for p in student.parameters():\n"
        "        params.append(p)\n"
        "    return torch.optim.Adam(params)\n"
        "opt = build(groups, generator)\n"
    )
    assert handed.optimizer_params("opt") is None


def test_an_optimizer_factory_takes_no_part_from_a_config_it_is_handed():
    # `build_optimizer(config)`: the argument is a configuration, not parameters (a real-code
    # false GL003 when `config = self._get_config()` was read as some of `self`'s parameters)
    b = bindings("config = self._get_config()\nopt = build_optimizer(config)\n")
    assert b.optimizer_params("opt") is None


def test_a_clip_of_a_methods_value_keeps_an_unknown_target():
    m = build_model(
        GAN + "opt = torch.optim.SGD(generator.parameters())\n"
        "for x in data:\n"
        "    opt.zero_grad()\n"
        "    generator(x).sum().backward()\n"
        "    torch.nn.utils.clip_grad_norm_(generator.trainable(), 1.0)\n"
        "    opt.step()\n"
    )
    (clip,) = [e for e in m.loops[0].events if e.kind == "C"]
    assert clip.unknown_target and clip.module is None


# --- recall27: how a binding is read when the spelling varies --------------------------------

CHOSEN = (
    GAN + "if bf16:\n"
    "    from .low_precision import AnyPrecisionAdamW\n"
    "    optimizer = {first}\n"
    "else:\n"
    "    optimizer = torch.optim.AdamW\n"
    "opt_g = optimizer(generator.parameters(), 1e-3)\n"
)


def test_a_class_of_another_module_chosen_in_place_of_an_optimizer_class_builds_an_optimizer():
    b = bindings(CHOSEN.format(first="AnyPrecisionAdamW"))
    assert b.kind("opt_g") == "optimizer"
    assert b.optimizer_params("opt_g") == {"generator"}


@pytest.mark.parametrize(
    "source",
    [
        CHOSEN.format(first="AnyPrecisionAdamW").replace("    optimizer = torch.optim.AdamW\n", "    optimizer = AnyPrecisionAdamW\n"),
        CHOSEN.format(first="low_precision_adamw").replace("AnyPrecisionAdamW\n", "low_precision_adamw\n"),  # no class
        CHOSEN.format(first="Local") + "class Local:\n    pass\n",  # a class of the file, readable: no optimizer
        CHOSEN.format(first="Undefined"),  # not imported: unknown
    ],
)
def test_only_an_unreadable_class_beside_an_optimizer_class_counts(source):
    assert bindings(source).optimizer_params("opt_g") is None


HANDED = (
    "import torch, torch.nn as nn\n"
    "def train_epoch(epoch, nets, optims):\n"
    "    net_g, net_d = nets\n"
    "    optim_g, optim_d = optims\n"
    "def run():\n"
    "    net_g = nn.Linear(4, 8)\n"
    "    net_d = nn.Linear(8, 1)\n"
    "    optim_g = torch.optim.AdamW(net_g.parameters())\n"
    "    optim_d = torch.optim.AdamW(net_d.parameters())\n"
    "{calls}"
)


@pytest.mark.parametrize(
    "calls",
    [
        "    train_epoch(0, [net_g, net_d], [optim_g, optim_d])\n",
        "    train_epoch(0, optims=(optim_g, optim_d), nets=(net_g, net_d))\n",
        "    train_epoch(0, [net_g, net_d], [optim_g, optim_d])\n    train_epoch(1, [net_g, net_d], [optim_g, optim_d])\n",
    ],
)
def test_names_unpacked_from_a_parameter_every_call_fills_with_them_are_those_objects(calls):
    b = bindings(HANDED.format(calls=calls))
    assert b.definitely_distinct("net_g", "net_d")
    assert b.optimizer_params("optim_d") == {"net_d"}


@pytest.mark.parametrize(
    "calls",
    [
        "    train_epoch(0, [net_d, net_g], [optim_g, optim_d])\n",  # the other way round
        "    train_epoch(0, [net_g, net_d], [optim_g, optim_d])\n    train_epoch(1, pair, [optim_g, optim_d])\n",
        "    train_epoch(0, [*both], [optim_g, optim_d])\n",
        "    train_epoch(0, *args)\n",
        "",  # never called here
    ],
)
def test_names_unpacked_from_a_parameter_filled_otherwise_stay_unknown(calls):
    b = bindings(HANDED.format(calls=calls))
    assert not b.definitely_distinct("net_g", "net_d")


COPIED = (
    "import copy, torch, torch.nn as nn\n"
    "base_model = nn.Sequential(nn.Linear(4, 4))\n"
    "copied = {value}\n"
)


@pytest.mark.parametrize("value", ["copy.deepcopy(base_model)", "copy.deepcopy(base_model).to(device)"])
def test_a_deep_copy_holds_parameters_of_its_own(value):
    assert bindings(COPIED.format(value=value)).definitely_distinct("copied", "base_model")


@pytest.mark.parametrize("value", ["Wrapper(base_model)", "copy.copy(base_model)", "base_model.to(device)"])
def test_a_module_built_from_another_may_hold_it(value):
    assert not bindings(COPIED.format(value=value)).definitely_distinct("copied", "base_model")


AGENT = (
    "import torch, math\n"
    "class Agent:\n"
    "    def __init__(self, model):\n"
    "        self.model = model\n"
    "        self.log_alpha = {alpha}\n"
)


def test_a_tensor_the_file_makes_is_no_part_of_any_module():
    b = bindings(AGENT.format(alpha="torch.tensor(math.log(0.2)).float().to(device)"))
    assert b.definitely_distinct("self.log_alpha", "self.model.critic")
    assert b.definitely_distinct("self.model", "self.log_alpha")


def test_a_tensor_is_part_of_itself_and_of_what_holds_it():
    b = bindings(AGENT.format(alpha="torch.tensor(0.0)"))
    assert not b.definitely_distinct("self.log_alpha", "self.log_alpha")
    assert not b.definitely_distinct("self", "self.log_alpha")
    held = bindings(AGENT.format(alpha="nn.Parameter(torch.zeros(1))"))  # a module's own parameter
    assert not held.definitely_distinct("self.log_alpha", "self.model.critic")


NARROWED = (
    "import torch, torch.nn as nn\n"
    "source_model = Net()\n"
    "clf = source_model\n"
    "source_model = source_model.features\n"
    "target_model = Net()\n"
    "target_model = target_model.features\n"
    "discriminator = nn.Linear(8, 1)\n"
)


def test_a_name_narrowed_to_its_own_part_is_still_the_object_built_there():
    b = bindings(NARROWED)
    assert b.canonical("target_model") == "target_model"  # no alias of target_model.features
    assert b.definitely_distinct("target_model", "discriminator")


def test_a_name_that_only_receives_a_built_object_is_that_object():
    b = bindings(NARROWED + "clf.features = target_model\n")
    assert b.canonical("target_model") == "clf.features"
    assert b.definitely_distinct("clf.features", "discriminator")


def test_a_name_receiving_two_built_objects_stays_unknown():
    b = bindings(NARROWED + "clf.features = target_model\nclf.features = discriminator\n")
    assert not b.definitely_distinct("clf.features", "discriminator")
    aliased = bindings(NARROWED + "target_model = discriminator\n")  # bound to another object too
    assert not aliased.definitely_distinct("target_model", "discriminator")


def test_names_set_to_none_are_not_one_object():
    b = bindings(GAN + "opt_g = None\nopt_d = None\nflag = True\nother = True\n"
                 "opt_g = torch.optim.Adam(generator.parameters())\n"
                 "opt_d = torch.optim.Adam(discriminator.parameters())\n")
    assert not b.same("opt_g", "opt_d")
    assert not b.same("flag", "other")
    assert b.optimizer_params("opt_g") == {"generator"}  # None until built: holds nothing more


def test_a_conditional_expression_binds_each_of_its_sides():
    b = bindings(GAN + "opt_d = torch.optim.Adam(discriminator.parameters()) if train_d else None\n"
                 "model = DDP(generator) if distributed else generator\n")
    assert b.kind("opt_d") == "optimizer"
    assert b.optimizer_params("opt_d") == {"discriminator"}
    assert b.same("model", "generator")


def test_a_conditional_expression_with_an_unknown_side_stays_unknown():
    b = bindings(GAN + "opt_d = torch.optim.Adam(discriminator.parameters()) if train_d else make_opt()\n")
    assert b.optimizer_params("opt_d") is None


RESUMED = (
    GAN + "checkpoint = None\n"
    "if checkpoint is None:\n"
    "    opt_d = torch.optim.Adam(discriminator.parameters())\n"
    "    encoder = nn.Linear(8, 4)\n"
    "else:\n"
    "    checkpoint = {loader}(checkpoint)\n"
    "    opt_d = checkpoint['opt_d']\n"
    "    encoder = checkpoint['encoder']\n"
)


def test_an_object_read_back_from_a_checkpoint_is_what_the_other_path_builds():
    b = bindings(RESUMED.format(loader="torch.load"))
    assert b.optimizer_params("opt_d") == {"discriminator"}
    assert b.definitely_distinct("encoder", "generator")


def test_an_object_read_from_anything_else_stays_unknown():
    b = bindings(RESUMED.format(loader="load_state"))
    assert b.optimizer_params("opt_d") is None
    assert not b.definitely_distinct("encoder", "generator")
    alone = bindings(GAN + "state = torch.load(path)\nopt_d = state['opt_d']\n")  # no construction beside it
    assert alone.optimizer_params("opt_d") is None
