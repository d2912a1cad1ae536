"""gradlint.guard in plain loops: each rule's bug is reported on its line, the right loop (and
gradient accumulation) gets nothing, the modes, GradScaler on CPU, results bit for bit the same,
uninstall puts everything back, and each wrapper or hook is needed by the test of its rule."""

from __future__ import annotations

import inspect
import logging
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")

import gradlint.guard as guard  # noqa: E402
from gradlint.guard.patches import Patches  # noqa: E402
from gradlint.guard.watcher import Watcher  # noqa: E402

nn = torch.nn


def _setup(scaler=False, enabled=True):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [torch.randn(3, 4) for _ in range(8)]
    if scaler:
        return model, opt, data, torch.amp.GradScaler("cpu", enabled=enabled)
    return model, opt, data


# --- one loop per rule, wrong and right; `# <-` marks the line the report must name --------


def gl001_wrong():
    model, opt, data = _setup()
    for x in data:
        model(x).sum().backward()  # <-
        opt.step()


def gl001_right_accumulation():
    model, opt, data = _setup()
    for i, x in enumerate(data):
        model(x).sum().backward()
        if (i + 1) % 4 == 0:
            opt.step()
            opt.zero_grad()


def gl002_wrong():
    model, opt, data = _setup()
    for i, x in enumerate(data):
        model(x).sum().backward()
        opt.zero_grad()  # <-
        if (i + 1) % 2 == 0:
            opt.step()


def gl002_right():
    model, opt, data = _setup()
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()


def gl002_right_part_frozen_by_hand():
    """`p.grad = None` for the last layer only, between backward and step, in the first
    iterations: that layer skips those steps, the rest is stepped (rules.md: a freeze)."""
    model, opt, data = _setup()
    for i, x in enumerate(data):
        opt.zero_grad()
        model(x).sum().backward()
        if i < 3:
            for p in model[2].parameters():
                p.grad = None
        opt.step()


def gl003_wrong():
    model, opt, data = _setup()
    for x in data:
        model[2].zero_grad()  # <~ (the clear of too few: a related line, as verify reports it)
        model(x).sum().backward()
        opt.step()  # <-


def gl003_right():
    model, opt, data = _setup()
    for x in data:
        model.zero_grad()
        model(x).sum().backward()
        opt.step()


def gl004_wrong():
    model, opt, data = _setup()
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # <-


def gl004_right():
    model, opt, data = _setup()
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()


def gl005_wrong():
    model, opt, data = _setup()
    for i, x in enumerate(data):
        model(x).sum().backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)  # <-
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()


def gl005_right():
    model, opt, data = _setup()
    for i, x in enumerate(data):
        model(x).sum().backward()
        if (i + 1) % 2 == 0:
            torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
            opt.step()
            opt.zero_grad()


def gl006_wrong():
    model, opt, data, scaler = _setup(scaler=True)
    for x in data:
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # <-
        scaler.step(opt)
        scaler.update()


def gl006_right():
    model, opt, data, scaler = _setup(scaler=True)
    for x in data:
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


def gl006_right_disabled_scaler():
    """The disabled form: the scaler scales nothing, so clipping before unscale_ clips true gradients."""
    model, opt, data, scaler = _setup(scaler=True, enabled=False)
    for x in data:
        opt.zero_grad()
        scaler.scale(model(x).sum()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


def gl007_wrong():
    model, opt, data = _setup()
    for x in data:
        opt.zero_grad()
        opt.step()  # <-
        model(x).sum().backward()


def gl007_right_closure():
    model, opt, data = _setup()
    for x in data:
        def closure():
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            return loss
        opt.step(closure)


def gl008_wrong():
    model, opt, data = _setup()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        sched.step()  # <-
        opt.step()


def gl008_right():
    model, opt, data = _setup()
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    for x in data:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        sched.step()
    plateau.step(1.0)


WRONG = {"GL001": gl001_wrong, "GL002": gl002_wrong, "GL003": gl003_wrong, "GL004": gl004_wrong,
         "GL005": gl005_wrong, "GL006": gl006_wrong, "GL007": gl007_wrong, "GL008": gl008_wrong}
RIGHT = [gl001_right_accumulation, gl002_right, gl002_right_part_frozen_by_hand, gl003_right, gl004_right, gl005_right, gl006_right,
         gl006_right_disabled_scaler, gl007_right_closure, gl008_right]


def _marked_line(function, mark="# <-") -> int:
    lines, start = inspect.getsourcelines(function)
    return next((start + i for i, line in enumerate(lines) if mark in line), None)


def _reports(function, mode="log"):
    with guard.watch(mode=mode) as found:
        function()
    return list(found)


@pytest.mark.parametrize("code", sorted(WRONG))
def test_each_rules_bug_is_reported_on_its_line(code):
    found = _reports(WRONG[code])
    assert [(r.code, r.line, r.path) for r in found] == [(code, _marked_line(WRONG[code]), __file__)], \
        "\n".join(map(str, found))
    related = _marked_line(WRONG[code], "# <~")
    assert related is None or (__file__, related) in found[0].related
    text = str(found[0])
    from gradlint.rules.registry import rules_by_code

    assert rules_by_code()[code].summary in text and f"test_guard.py:{found[0].line}" in text


@pytest.mark.parametrize("function", RIGHT, ids=lambda f: f.__name__)
def test_a_right_loop_gets_no_report(function):
    assert _reports(function) == []


def test_the_related_lines_name_the_other_calls():
    (report,) = _reports(gl002_wrong)
    lines, start = inspect.getsourcelines(gl002_wrong)
    backward = next(start + i for i, line in enumerate(lines) if ".backward()" in line)
    step = next(start + i for i, line in enumerate(lines) if "opt.step()" in line)
    assert (__file__, backward) in report.related and (__file__, step) in report.related


# --- modes ---------------------------------------------------------------------------------


def test_warn_mode_warns_once_per_site_with_its_own_category():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with guard.watch():
            gl001_wrong()
            gl001_wrong()  # the same line again: no second warning
    ours = [w for w in caught if issubclass(w.category, guard.GradlintGuardWarning)]
    assert len(ours) == 1 and issubclass(guard.GradlintGuardWarning, UserWarning)
    assert ours[0].filename == __file__ and ours[0].lineno == _marked_line(gl001_wrong)


def test_raise_mode_stops_at_the_offending_call_before_it_runs():
    model, opt, data = _setup()
    with guard.watch(mode="raise"):
        opt.zero_grad()
        model(data[0]).sum().backward()
        opt.zero_grad()
        before = [p.detach().clone() for p in model.parameters()]
        with pytest.raises(guard.GradlintGuardError, match="GL002"):
            model(data[1]).sum().backward()
            opt.zero_grad()
            opt.step()
        # GL002 is known when the step comes: the step it would have spoiled never ran
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_log_mode_logs(caplog):
    with caplog.at_level(logging.WARNING, logger="gradlint.guard"):
        _reports(gl004_wrong, mode="log")
    assert [r.message.split(": ")[1].split()[0] for r in caplog.records] == ["GL004"]


def test_dash_w_error_turns_the_warning_into_an_error(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""\
        import torch
        import gradlint.guard
        gradlint.guard.install()
        model = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.ones(1, 2)).sum().backward()
            opt.step()
        print("finished")
    """))
    # (a torch without numpy warns on import: that one is let through)
    run = subprocess.run([sys.executable, "-W", "error::UserWarning", "-W", "ignore:Failed to initialize NumPy",
                          str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "GradlintGuardWarning" in run.stderr and "GL001" in run.stderr
    assert "finished" not in run.stdout
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stderr.count("GL001") == 1 and "finished" in run.stdout


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        guard.install(mode="loud")
    assert not guard.installed()


# --- never changes a result ------------------------------------------------------------------


def _twenty_steps():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
    scaler = torch.amp.GradScaler("cpu")
    for step in range(40):
        x = torch.randn(5, 6)
        loss = nn.functional.cross_entropy(model(x), torch.randint(0, 3, (5,)))
        scaler.scale(loss / 2).backward()
        if step % 2 == 1:  # accumulation over two micro-batches: 20 steps
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            sched.step()
    return [p.detach().clone() for p in model.parameters()]


def test_parameters_after_twenty_steps_are_bit_identical():
    plain = _twenty_steps()
    with guard.watch(mode="raise") as found:
        watched = _twenty_steps()
    assert found == []
    assert all(torch.equal(a, b) for a, b in zip(plain, watched))


# --- uninstall -----------------------------------------------------------------------------------


def _patchable():
    from torch.amp.grad_scaler import GradScaler
    from torch.optim import lr_scheduler
    from torch.optim import optimizer as optimizer_module
    import torch.nn.utils.clip_grad as clip_module

    state = {
        "Optimizer.zero_grad": torch.optim.Optimizer.__dict__["zero_grad"],
        "Optimizer.add_param_group": torch.optim.Optimizer.__dict__["add_param_group"],
        "Module.zero_grad": nn.Module.__dict__["zero_grad"],
        "Tensor.backward": torch.Tensor.__dict__["backward"],
        "Tensor.zero_ own": "zero_" in torch.Tensor.__dict__,
        "autograd.backward": torch.autograd.backward,
        "pre hooks": dict(optimizer_module._global_optimizer_pre_hooks),
        "post hooks": dict(optimizer_module._global_optimizer_post_hooks),
        "LRScheduler.__init__": lr_scheduler.LRScheduler.__dict__["__init__"],
    }
    for name in ("scale", "unscale_", "step"):
        state[f"GradScaler.{name}"] = GradScaler.__dict__[name]
    for cls in vars(lr_scheduler).values():
        if isinstance(cls, type) and "step" in vars(cls):
            state[f"{cls.__name__}.step"] = vars(cls)["step"]
    for module in (torch.nn.utils, clip_module, sys.modules[__name__]):
        for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_"):
            state[f"{module.__name__}.{name}"] = getattr(module, name, None)
    return state


def test_uninstall_restores_every_function_and_removes_every_hook():
    before = _patchable()
    guard.install()
    try:
        model, opt, data = _setup()
        during = _patchable()
        assert [k for k in before if before[k] != during[k]], "nothing was patched"
        model(data[0]).sum().backward()
        assert model[0].weight._post_accumulate_grad_hooks
    finally:
        guard.uninstall()
    assert _patchable() == before
    assert not model[0].weight._post_accumulate_grad_hooks
    assert guard.reports() == [] and not guard.installed()


# --- every wrapper and hook is needed ------------------------------------------------------------

# The rule whose test fails when that part of the guard is left out.
NEEDED = {
    "_optimizer": "GL007",  # the step hooks and the clears
    "_backward": "GL001",  # without it a backward has no line: GL001's report moves to an unknown one
    "_clips": "GL004",
    "_scaler": "GL006",
    "_schedulers": "GL008",
}


@pytest.mark.parametrize("part", sorted(NEEDED))
def test_each_wrapper_is_needed_by_its_rules_test(part, monkeypatch):
    monkeypatch.setattr(Patches, part, lambda self: None)
    with pytest.raises(AssertionError):
        test_each_rules_bug_is_reported_on_its_line(NEEDED[part])


def test_the_accumulate_hook_is_needed(monkeypatch):
    monkeypatch.setattr(Watcher, "_hook", lambda self, pid, param: None)
    with pytest.raises(AssertionError):
        test_each_rules_bug_is_reported_on_its_line("GL002")


def test_installed_between_a_backward_and_the_first_step():
    # (as a framework's callback installs it: the optimizer was made, and a backward ran, before)
    model, opt, data = _setup()
    model(data[0]).sum().backward()
    with guard.watch(mode="raise") as found:
        opt.step()  # the gradients there are that backward's: no GL007
        opt.zero_grad()
        for x in data[1:3]:
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
    assert found == []


def test_uninstalled_guard_sees_nothing():
    guard.install()
    guard.uninstall()
    gl001_wrong()
    assert guard.reports() == []


# --- python -m gradlint.guard --------------------------------------------------------------------

_SCRIPT = """\
import sys
import torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(int(sys.argv[1])):
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
print("steps", sys.argv[1:])
"""


def _guarded(*args, cwd):
    return subprocess.run([sys.executable, "-m", "gradlint.guard", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_the_command_runs_a_script_with_its_arguments_under_the_guard(tmp_path):
    (tmp_path / "train.py").write_text(_SCRIPT)
    run = _guarded("train.py", "3", "--flag", cwd=tmp_path)
    assert run.returncode == 0 and "steps ['3', '--flag']" in run.stdout
    assert run.stderr.count("GL001 missing-zero-grad") == 1 and "train.py:6" in run.stderr
    run = _guarded("--mode", "raise", "train.py", "3", cwd=tmp_path)
    assert run.returncode == 1 and "GradlintGuardError" in run.stderr and "steps" not in run.stdout
    run = _guarded("--mode", "log", "train.py", "1", cwd=tmp_path)
    assert run.returncode == 0 and "GL001" not in run.stderr  # one step: nothing piled up yet


def test_the_command_runs_a_module(tmp_path):
    (tmp_path / "trainer_pkg").mkdir()
    (tmp_path / "trainer_pkg" / "__init__.py").write_text("")
    (tmp_path / "trainer_pkg" / "train.py").write_text(_SCRIPT)
    run = _guarded("--mode", "raise", "-m", "trainer_pkg.train", "2", cwd=tmp_path)
    assert run.returncode == 1 and "GL001" in run.stderr


def test_the_command_refuses_a_missing_script(tmp_path):
    run = _guarded("nothing.py", cwd=tmp_path)
    assert run.returncode == 2 and "no such script" in run.stderr
