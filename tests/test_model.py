"""The loop model alone: bindings, events and paths, without any rule."""

import libcst as cst

from gradlint.model.flow import iteration_paths, walks
from gradlint.model.loops import build
from gradlint.model.params import coverage


def model(source):
    return build(cst.parse_module(source), "m.py", source)


def kinds(loop):
    return "".join(e.kind for e in loop.events)


def test_import_aliases_name_one_clip():
    m = model(
        "import torch.nn as nn\n"
        "from torch.nn.utils import clip_grad_norm_ as clip\n"
        "import torch\n"
        "for b in data:\n"
        "    nn.utils.clip_grad_norm_(net.parameters(), 1)\n"
        "    clip(net.parameters(), 1)\n"
        "    torch.nn.utils.clip_grad.clip_grad_norm_(net.parameters(), 1)\n"
        "    opt.step()\n"
    )
    (loop,) = m.loops
    assert kinds(loop) == "CCCS"
    assert {e.module for e in loop.events if e.kind == "C"} == {"net"}


def test_autograd_grad_is_not_a_backward_and_scheduler_is_not_a_step():
    m = model(
        "import torch\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 3)\n"
        "for b in data:\n"
        "    g = torch.autograd.grad(loss, params)\n"
        "    torch.autograd.backward(loss)\n"
        "    prof.step()\n"
        "    env.step(action)\n"
        "    opt.step()\n"
        "    sched.step()\n"
    )
    assert kinds(m.loops[0]) == "BSL"


def test_optimizer_params_through_groups_chain_and_lists():
    m = model(
        "import itertools, torch\n"
        "a = Net(); b = Net()\n"
        "o1 = torch.optim.SGD([{'params': model.backbone.parameters()}, {'params': model.head.parameters()}])\n"
        "o2 = torch.optim.Adam(itertools.chain(a.parameters(), b.parameters()))\n"
        "params = list(a.parameters()) + list(b.parameters())\n"
        "o3 = torch.optim.AdamW(params)\n"
        "o4 = torch.optim.SGD(get_groups(model))\n"
    )
    b = m.bindings
    assert b.optimizer_params("o1") == {"model.backbone", "model.head"}
    assert b.optimizer_params("o2") == {"a", "b"}
    assert b.optimizer_params("o3") == {"a", "b"}
    assert b.optimizer_params("o4") is None


def test_wrappers_alias_the_module():
    m = model(
        "net = Net()\n"
        "model = DDP(net)\n"
        "opt = torch.optim.SGD(net.parameters())\n"
        "for x in data:\n"
        "    model.zero_grad()\n"
        "    model(x).backward()\n"
        "    opt.step()\n"
    )
    (loop,) = m.loops
    z = next(e for e in loop.events if e.kind == "Z")
    assert coverage(m, [z], "opt") is True


def test_same_condition_takes_the_same_side():
    m = model(
        "for i, x in enumerate(data):\n"
        "    loss.backward()\n"
        "    if (i + 1) % k == 0:\n"
        "        opt.step()\n"
        "    if (i + 1) % k == 0:\n"
        "        opt.zero_grad()\n"
    )
    paths = iteration_paths(m.loops[0])
    assert sorted("".join(e.kind for e in p.events) for p in paths) == ["B", "BSZ"]
    assert [p.deferred for p in paths if len(p.events) == 1] == [frozenset({"opt"})]


def shapes(loop):
    return sorted("".join(e.kind for e in p.events) for p in iteration_paths(loop))


def test_a_guard_keeps_its_meaning_inside_and_and_or():
    # `a and b` true means a true; `a or b` false means both false; and a part decided
    # earlier decides the whole (issue 19: `if accelerator.sync_gradients and max_norm > 0:`)
    m = model(
        "import torch\n"
        "for i, x in enumerate(data):\n"
        "    loss.backward()\n"
        "    if sync and max_norm > 0:\n"
        "        torch.nn.utils.clip_grad_norm_(net.parameters(), 1)\n"
        "    if sync:\n"
        "        opt.step()\n"
        "    if not (first or not sync):\n"
        "        opt.zero_grad()\n"
    )
    assert shapes(m.loops[0]) == ["B", "BCS", "BCSZ", "BS", "BSZ"]
    m = model(
        "import torch\n"
        "for i, x in enumerate(data):\n"
        "    loss.backward()\n"
        "    if sync:\n"
        "        opt.step()\n"
        "    if (warm and sync) and max_norm > 0:\n"
        "        torch.nn.utils.clip_grad_norm_(net.parameters(), 1)\n"
    )
    assert shapes(m.loops[0]) == ["B", "BS", "BSC"]
    m = model(
        "import torch\n"
        "for i, x in enumerate(data):\n"
        "    loss.backward()\n"
        "    if sync:\n"
        "        opt.step()\n"
        "    if warm:\n"
        "        opt.zero_grad()\n"
        "    if sync and warm:\n"
        "        torch.nn.utils.clip_grad_norm_(net.parameters(), 1)\n"
    )
    assert shapes(m.loops[0]) == ["B", "BS", "BSZC", "BZ"]


def test_the_else_of_a_step_test_is_off_the_boundary_and_counters_skip_the_first_iteration():
    m = model(
        "import torch\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 3)\n"
        "for i, x in enumerate(data):\n"
        "    if i > 0:\n"
        "        sched.step()\n"
        "    if warmup > 0:\n"
        "        sched.step()\n"
        "    loss.backward()\n"
        "    if (i + 1) % k == 0:\n"
        "        opt.step()\n"
        "    else:\n"
        "        opt.zero_grad()\n"
    )
    loop = m.loops[0]
    assert [(e.kind, e.skips_first) for e in loop.events if e.kind == "L"] == [("L", True), ("L", False)]
    assert [(e.kind, e.off_boundary) for e in loop.events if e.kind in "SZ"] == [("S", False), ("Z", True)]


def test_invariant_condition_is_the_same_in_both_iterations():
    m = model(
        "for x in data:\n"
        "    if use_amp:\n"
        "        scaler.scale(loss).backward()\n"
        "    else:\n"
        "        loss.backward()\n"
        "    opt.step()\n"
    )
    shapes = {tuple(e.scaled for e in w.events if e.kind == "B") for w in walks(m.loops[0])}
    assert shapes == {(True, True), (False, False)}


def test_helpers_are_followed_with_their_arguments():
    m = model(
        "def train_step(optimizer, batch):\n"
        "    optimizer.zero_grad()\n"
        "    model(batch).backward()\n"
        "    optimizer.step()\n"
        "class T:\n"
        "    def fit(self):\n"
        "        for b in self.data:\n"
        "            train_step(self.opt, b)\n"
        "            self._clip()\n"
        "    def _clip(self):\n"
        "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1)\n"
    )
    (loop,) = m.loops
    assert kinds(loop) == "ZBSC"
    assert loop.events[0].optimizer == "self.opt"
    assert loop.events[0].via == ("train_step()",)


def test_closure_step_and_engine():
    m = model(
        "engine, _, _, _ = deepspeed.initialize(model=net)\n"
        "for x in data:\n"
        "    def closure():\n"
        "        opt.zero_grad()\n"
        "        loss = f(x)\n"
        "        loss.backward()\n"
        "        return loss\n"
        "    opt.step(closure)\n"
        "    engine.backward(engine(x))\n"
        "    engine.step()\n"
    )
    (loop,) = m.loops
    assert kinds(loop) == "ZBSBS"
    steps = [e for e in loop.events if e.kind == "S"]
    assert steps[0].closure and steps[1].clears


def test_parameter_loops_clear_their_module():
    m = model(
        "for x in data:\n"
        "    for p in model.parameters():\n"
        "        p.grad = None\n"
        "    for g in opt.param_groups:\n"
        "        for p in g['params']:\n"
        "            p.grad.zero_()\n"
        "    model(x).backward()\n"
        "    opt.step()\n"
    )
    outer = m.loops[0]
    zs = [e for e in outer.events if e.kind == "Z"]
    assert [(z.module, z.optimizer) for z in zs] == [("model", None), (None, "opt")]


def test_a_tangled_loop_is_not_judged():
    body = "".join(f"    if c{i}:\n        opt.step()\n    else:\n        loss.backward()\n" for i in range(12))
    m = model("for x in data:\n" + body)
    assert iteration_paths(m.loops[0]) is None
    assert walks(m.loops[0]) == []


def _settings_helper(tests: int) -> str:
    """A method testing `tests` of its settings and running no gradient operation.  Each test
    holds a loop that skips some rows (a test holding nothing, or only assignments, never was
    a branch; a loop holding nothing never was a nested loop)."""
    body = "".join(
        f"        if s{i} is None:\n"
        "            for row in rows:\n"
        "                if row is None:\n"
        "                    continue\n"
        "                log(row)\n"
        for i in range(tests)
    )
    return f"    def report(self, {', '.join(f's{i}' for i in range(tests))}):\n" + body


def test_a_helper_with_no_gradient_event_does_not_make_the_loop_tangled():
    # 8 setting tests keep 2**8 decisions: beyond MAX_PATHS when the helper is enumerated
    args = ", ".join(f"a{i}" for i in range(8))
    source = (
        "import torch\n"
        "class T:\n"
        + _settings_helper(8)
        + "    def fit(self):\n"
        "        for x in data:\n"
        "            opt.zero_grad()\n"
        "            loss.backward()\n"
        "            opt.step()\n"
        f"            self.report({args})\n"
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    )
    m = model(source)
    assert shapes(m.loops[0]) == ["ZBSC"]
    assert walks(m.loops[0])


def test_a_return_that_skips_a_helper_event_is_kept():
    source = (
        "class T:\n"
        "    def maybe_step(self, skip):\n"
        "        if skip:\n"
        "            return\n"
        "        opt.step()\n"
        "    def fit(self):\n"
        "        for x in data:\n"
        "            loss.backward()\n"
        "            self.maybe_step(flag)\n"
    )
    assert shapes(model(source).loops[0]) == ["B", "BS"]


def test_a_continue_in_an_event_free_part_is_kept_and_a_raise_beside_it_is_an_error_path():
    """A `raise` on one side of a test whose other side goes on is an error path no rule
    judges (flow.RAISE): dropped, so setting checks do not multiply the paths."""
    source = (
        "def check(x):\n"
        "    if x is None:\n"
        "        raise ValueError\n"
        "for x in data:\n"
        "    check(x)\n"
        "    if x.empty:\n"
        "        continue\n"
        "    loss.backward()\n"
    )
    paths = iteration_paths(model(source).loops[0])
    assert sorted(("".join(e.kind for e in p.events), p.exits) for p in paths) == [
        ("", False), ("B", False)
    ]


def test_a_raise_on_every_side_still_ends_the_loop():
    source = (
        "for x in data:\n"
        "    loss.backward()\n"
        "    if x.kind == 'a':\n"
        "        raise ValueError('a')\n"
        "    else:\n"
        "        raise ValueError('b')\n"
        "    opt.step()\n"
    )
    paths = iteration_paths(model(source).loops[0])
    assert sorted(("".join(e.kind for e in p.events), p.exits) for p in paths) == [("B", True)]


def test_a_rebind_in_an_event_free_part_still_outdates_the_condition():
    source = (
        "for x in data:\n"
        "    if ready:\n"
        "        opt.step()\n"
        "    if x.last:\n"
        "        ready = False\n"
        "        for row in rows:\n"
        "            if row is None:\n"
        "                continue\n"
        "    if ready:\n"
        "        opt.step()\n"
    )
    assert shapes(model(source).loops[0]) == ["", "S", "S", "SS"]


def test_a_nested_loop_keeps_the_decisions_taken_before_it():
    # the inner loop's second run forgets what it decided itself, not what its iteration of
    # the outer loop decided before it: the clip and the step take the same side of `i % 2`
    source = (
        "import torch\n"
        "for i, x in enumerate(data):\n"
        "    loss.backward()\n"
        "    if i % 2 == 0:\n"
        "        for p in params:\n"
        "            if p.grad is None:\n"
        "                continue\n"
        "            p.grad = p.grad * 0.5\n"
        "        torch.nn.utils.clip_grad_norm_(params, 1.0)\n"
        "    if i % 2 == 0:\n"
        "        opt.step()\n"
        "        opt.zero_grad()\n"
    )
    found = set(shapes(model(source).loops[0]))
    assert found and all(("C" in s) == ("S" in s) for s in found), found


def test_a_nested_loop_rebinds_its_target():
    # `x` of the inner loop is another value than the `x` tested before it
    source = (
        "for batch in data:\n"
        "    x = batch[0]\n"
        "    if x.ready:\n"
        "        opt.step()\n"
        "    for x in batch:\n"
        "        if x.ready:\n"
        "            loss.backward()\n"
    )
    found = set(shapes(model(source).loops[0]))
    assert {"S", "B"} <= found, found  # a step without the inner backward, and the other way


def test_two_models_of_the_same_function_do_not_take_each_others_events():
    """An ignite engine's process function is modelled once per run of the engine (the
    factory's registrations, the caller's): the same events, the same header.  Neither is a
    loop nested in the other, so neither may mark the other's events as an inner loop's
    (both stayed silent on pytorch/ignite assets/tldr/teaser.py with its clear removed)."""
    from gradlint.core.findings import Span
    from gradlint.model.event import Event
    from gradlint.model.loops import LoopModel, Nested, _mark_foreign

    header = Span(3, 4, 3, 7)
    backward = Event("B", Span(5, 8, 5, 23), "loss.backward()")
    step = Event("S", Span(6, 8, 6, 24), "optimizer.step()", optimizer="optimizer")

    def model():
        return LoopModel(header, "iteration", [Nested([backward, step])], events=[backward, step])

    first, second = model(), model()
    _mark_foreign([first, second])
    assert first.foreign == frozenset() and second.foreign == frozenset()
    # a real inner loop still owns its events
    outer = LoopModel(Span(1, 0, 1, 3), "for", [Nested([backward, step])], events=[backward, step])
    inner = LoopModel(Span(4, 4, 4, 7), "for", [backward, step], events=[backward, step],
                      own=frozenset({backward.key, step.key}))
    _mark_foreign([outer, inner])
    assert outer.foreign == {backward.key, step.key}


def test_grad_assigned_from_the_same_gradient_overwrites_nothing():
    # docs-audit #5: `p.grad = p.grad + g` is `p.grad += g` written out (a B that adds); any other
    # function of the same gradient changes what is there (like `p.grad *= s`): no event; a value
    # that reads another gradient, or only the shape of this one, is a new gradient (overwrites)
    m = model(
        "import torch\n"
        "for x in data:\n"
        "    loss.backward()\n"
        "    for p in net.parameters():\n"
        "        p.grad = p.grad + 0.1 * torch.randn_like(p)\n"
        "        p.grad = g - p.grad if p.grad is None else p.grad - g\n"
        "        p.grad.data = p.grad.data.clamp(-1, 1)\n"
        "        p.grad = p.grad * mask\n"
        "        p.grad = torch.ones_like(p.grad, device=p.grad.device)\n"
        "        p.grad = q.grad + g\n"
        "    opt.step()\n"
    )
    loop = m.loops[0]
    hand = [e for e in loop.events if e.kind == "B" and e.span.line > 3]
    assert [(e.span.line, e.overwrites) for e in hand] == [(5, False), (6, False), (9, True), (10, True)]



def test_a_method_of_an_optimizer_beyond_torchs_api_is_a_use_of_unknown_reach():
    m = model(
        "import torch\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "for b in data:\n"
        "    loss(b).backward()\n"
        "    opt.update_hessian()\n"
        "    opt.add_param_group({'params': []})\n"
        "    opt.set_lr(0.1)\n"
        "    optimizer.update_hessian()\n"  # named like one, but never stepped: a configuration
        "    optim_cfg = torch.optim.AdamW(net.parameters())\n"  # a class of a module, not a method
        "    opt.step()\n"
    )
    (loop,) = m.loops
    assert kinds(loop) == "BZS"
    clear = loop.events[1]
    assert (clear.optimizer, clear.unknown_target, clear.text) == ("opt", True, "opt.update_hessian()")


def test_a_schedule_whose_step_result_is_kept_follows_its_own_convention():
    m = model(
        "def train(net, opt, scheduler, warmup_scheduler, data):\n"
        "    for b in data:\n"
        "        new_lr = scheduler.step()\n"
        "        warmup_scheduler.step()\n"
        "        loss(b).backward()\n"
        "        opt.step()\n"
    )
    (loop,) = m.loops
    assert kinds(loop) == "LLBS"
    assert [e.own_convention for e in loop.events[:2]] == [True, False]


def test_a_class_built_from_an_optimizer_handed_to_a_function_is_a_scheduler_not_a_wrapper():
    source = (
        "import torch\n"
        "from lib import Warmup\n"
        "from epochs import train_one_epoch\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "warm = Warmup(opt)\n"
        "for epoch in range(3):\n"
        "    loss(epoch).backward()\n"
        "    warm.step()\n"
        "    {hand}(opt)\n"
    )
    # handed to a function that may step it (a call of unknown reach, which may clear it too):
    # the class built from it schedules
    assert kinds(model(source.format(hand="train_one_epoch")).loops[0]) == "BLZ"
    # only printed: the class steps in its place (apex's LARC(optimizer) is stepped so)
    assert kinds(model(source.format(hand="print")).loops[0]) == "BS"
