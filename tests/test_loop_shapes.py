"""Loop shapes from real training code (issue 11) that the fixtures cover as
files; here the parts a fixture's marks cannot state: messages and what the
model builds."""

from __future__ import annotations

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings


def findings(source: str):
    return check_source(source, "train.py", Settings.default()).findings


def test_gl007_after_a_clear_says_the_step_finds_no_gradients():
    (finding,) = findings(
        "import torch\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    opt.zero_grad()\n"
        "    opt.step()\n"
        "    model(x).sum().backward()\n"
    )
    assert finding.code == "GL007"
    assert "no gradients at all" in finding.message and "previous batch" not in finding.message


def test_gl007_without_a_clear_says_the_step_uses_the_previous_batch():
    (finding,) = findings(
        "import torch\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    opt.step()\n"
        "    model(x).sum().backward()\n"
        "    opt.zero_grad()\n"
    )
    assert finding.code == "GL007"
    assert "previous batch's gradients" in finding.message


def test_a_file_for_another_framework_is_not_analysed_but_one_without_imports_is():
    loop = "for x in data:\n    loss(x).backward()\n    optimizer.step()\n"
    assert [f.code for f in findings("from mxnet import autograd\n" + loop)] == []
    assert [f.code for f in findings("import jax\nimport torch\n" + loop)] == ["GL001"]
    assert [f.code for f in findings(loop)] == ["GL001"]


def test_a_step_hook_that_clears_counts_as_a_clear_after_every_step():
    loop = "for x in data:\n    model(x).sum().backward()\n    opt.step()\n"
    hooked = "import torch\nopt = torch.optim.SGD(model.parameters())\n"
    assert findings(hooked + "opt.register_step_post_hook(lambda o, a, k: o.zero_grad())\n" + loop) == []
    assert [f.code for f in findings(hooked + "opt.register_step_post_hook(lambda o, a, k: print(o))\n" + loop)] == ["GL001"]
    assert findings(hooked + "torch.optim.optimizer.register_optimizer_step_post_hook(clear)\n"
                    "def clear(o, a, k):\n    o.zero_grad()\n" + loop) == []


def test_an_inner_loop_of_backward_passes_reports_through_the_outer_loop():
    (finding,) = findings(
        "import torch\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for it in range(10):\n"
        "    for micro in range(4):\n"
        "        model(x).sum().backward()\n"
        "    opt.step()\n"
    )
    assert (finding.code, finding.span.line) == ("GL001", 5)


def test_manual_update_from_the_parameters_own_gradient_is_a_step():
    source = (
        "import torch\n"
        "for x in loader:\n"
        "    model(x).sum().backward()\n"
        "    with torch.no_grad():\n"
        "        for p in model.parameters():\n"
        "            {update}\n"
    )
    for update in ("p -= lr * p.grad", "p.data.add_(p.grad, alpha=-lr)", "p.data = p.data - lr * p.grad.data"):
        assert [f.code for f in findings(source.format(update=update))] == ["GL001"], update
    # an update from something else is no step: nothing to say
    assert findings(source.format(update="p.data.add_(noise)")) == []


def test_a_clip_by_hand_in_a_helper_is_a_clip():
    # `p.grad.clamp_` is clip_grad_value_ written out; the verifier does not probe it,
    # so this shape has no fixture of its own.
    source = (
        "import torch\n"
        "def clip_gradients(model, limit):\n"
        "    for p in model.parameters():\n"
        "        p.grad.data.clamp_(-limit, limit)\n"
        "scaler = torch.amp.GradScaler()\n"
        "for x in loader:\n"
        "    optimizer.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n"
        "    clip_gradients(model, 0.5)\n"
        "    scaler.step(optimizer)\n"
        "    scaler.update()\n"
    )
    assert [(f.code, f.span.line) for f in findings(source)] == [("GL006", 4)]
    unscaled = source.replace("    clip_gradients(model, 0.5)\n", "    scaler.unscale_(optimizer)\n    clip_gradients(model, 0.5)\n")
    assert findings(unscaled) == []


def test_an_imported_clip_gradients_helper_does_not_unscale_for_you():
    source = (
        "import torch\nimport utils\n"
        "scaler = torch.amp.GradScaler()\n"
        "for x in loader:\n"
        "    optimizer.zero_grad()\n"
        "    scaler.scale(model(x).sum()).backward()\n"
        "    utils.clip_gradients(model, 3.0)\n"
        "    scaler.step(optimizer)\n"
        "    scaler.update()\n"
    )
    assert [f.code for f in findings(source)] == ["GL006"]
    assert [f.code for f in findings(source.replace("utils.clip_gradients", "fabric.clip_gradients"))] == []


def test_accelerate_deepspeed_placeholders_are_an_optimizer_and_a_scheduler():
    source = (
        "from accelerate.utils import DummyOptim, DummyScheduler\n"
        "optimizer = DummyOptim(model.parameters(), lr=1e-3)\n"
        "if use_ds:\n"
        "    lr_scheduler = DummyScheduler(optimizer, total_num_steps=100)\n"
        "else:\n"
        "    lr_scheduler = get_linear_schedule_with_warmup(optimizer, 10, 100)\n"
        "for batch in loader:\n"
        "    accelerator.backward(model(batch).loss)\n"
        "    lr_scheduler.step()\n"
        "    optimizer.step()\n"
        "    optimizer.zero_grad()\n"
    )
    assert [(f.code, f.span.line) for f in findings(source)] == [("GL008", 9)]


def test_a_tensor_named_like_an_optimizer_is_not_one():
    # `torch.randn_like(w_opt)` hands no optimizer to anything: it is no clear
    source = (
        "import torch\n"
        "w_opt = torch.zeros(1, 4, requires_grad=True)\n"
        "optimizer = torch.optim.Adam([w_opt])\n"
        "for step in range(5):\n"
        "    noise = torch.randn_like(w_opt)\n"
        "    loss(w_opt + noise).backward()\n"
        "    optimizer.step()\n"
    )
    assert [f.code for f in findings(source)] == ["GL001"]


def test_a_clip_at_the_top_of_the_iteration_before_the_clear_is_after_the_step():
    source = (
        "import torch\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for x in loader:\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    opt.zero_grad()\n"
        "    model(x).sum().backward()\n"
        "    opt.step()\n"
    )
    (finding,) = findings(source)
    assert (finding.code, finding.span.line) == ("GL004", 4)
    assert "previous iteration" in finding.message
    # with the clear at the end of the body the next event is the backward: GL005's, not both
    moved = source.replace("    opt.zero_grad()\n", "") + "    opt.zero_grad()\n"
    assert [f.code for f in findings(moved)] == ["GL005"]


def test_gl002_in_a_gan_window_names_the_backward_of_the_cleared_networks_own_loss():
    """Each network cleared before its own backward every micro-batch, both stepped every
    `accum`-th: the lost gradients are the previous micro-batch's backward of that network's
    loss, not the other network's backward (a GAN clears the discriminator after the
    generator's backward on purpose)."""
    from pathlib import Path

    path = Path(__file__).parent.parent / "fixtures" / "gl002" / "wrong_gan_accumulation_clears_every_micro_batch.py"
    found = {f.span.line: f for f in findings(path.read_text())}
    lost = {line: [r for r in f.related if r.message == "the backward whose gradients are lost"] for line, f in found.items()}
    assert sorted(found) == [22, 28]
    assert [r.span.line for r in lost[22]] == [23] and "previous iteration's g_loss.backward() (line 23)" in found[22].message
    assert [r.span.line for r in lost[28]] == [29] and "previous iteration's d_loss.backward() (line 29)" in found[28].message


def test_a_step_given_a_number_on_an_object_of_unknown_class_is_no_optimizer_step():
    """torch.optim's step() takes only a closure: `emb_optimizer.step(lr)` on an object a
    library's factory built (a sparse-embedding optimizer, which applies and clears its own
    gradients) is not an optimizer step to pair with a clear; a torch optimizer given the same
    number, and the same object stepped with no argument, still are."""
    library = (
        "import torch\n"
        "from sparse_embeddings import create_sparse_optimizer\n"
        "lr = 0.01\n"
        "emb_optimizer = create_sparse_optimizer('adam', {{}})\n"
        "for x in loader:\n"
        "    model(x).sum().backward()\n"
        "    emb_optimizer.step({arg})\n"
    )
    assert findings(library.format(arg="lr")) == []
    assert findings(library.format(arg="0.01")) == []
    assert [f.code for f in findings(library.format(arg=""))] == ["GL001"]
    torch_optimizer = library.replace("create_sparse_optimizer('adam', {{}})", "torch.optim.SGD(model.parameters(), lr=lr)")
    assert [f.code for f in findings(torch_optimizer.format(arg="lr"))] == ["GL001"]
