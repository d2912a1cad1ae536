"""Autofixes: applying a finding's fix yields code on which the rule is silent."""

import pytest

from gradlint.check.engine import check_source
from gradlint.fix.session import fix_source
from gradlint.rules.registry import all_rules
from gradlint.options.settings import Settings

EVERYTHING = Settings(select=frozenset(rule.code for rule in all_rules() if rule.default))
# A file for the command-line tests: a clear between the backward and the step (GL002, a safe move).
MISPLACED_CLEAR = "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"

# Each rule's INVALID samples that pin the text their fix makes (Invalid.fixed), as Fixit's
# expected_replacement: the rule module holds what its repair must give.
PINNED = [
    pytest.param(rule, sample, id=f"{rule.code}-{index}")
    for rule in all_rules()
    for index, sample in enumerate(rule.invalid)
    if sample.fixed is not None
]


def _settings(rule) -> Settings:
    return Settings(select=EVERYTHING.select | {rule.code})


@pytest.mark.parametrize("rule, sample", PINNED)
def test_an_invalid_sample_is_fixed_to_its_pinned_text(rule, sample):
    settings = _settings(rule)
    findings = check_source(sample.source, "t.py", settings).findings
    assert any(f.code == rule.code and f.fix is not None for f in findings)
    outcome = fix_source(sample.source, lambda text: check_source(text, "t.py", settings), unsafe=True)
    assert outcome.text == sample.fixed
    assert outcome.result.findings == []
    assert check_source(sample.fixed, "t.py", settings).findings == []


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: rule.code)
def test_a_rule_with_a_fix_pins_one_fixed_sample(rule):
    """A rule that says it fixes (its docs' Fix section) shows the text of at least one repair;
    one that does not fix plans nothing and pins nothing."""
    pinned = [sample for sample in rule.invalid if sample.fixed is not None]
    if rule.fix:
        assert pinned, rule.code
    else:
        assert not pinned and rule.fixes is None, rule.code


def test_no_fix_when_the_statements_are_in_different_blocks():
    source = (
        "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    if ready:\n"
        "        opt.zero_grad()\n    opt.step()\n"
    )
    (finding,) = check_source(source, "t.py", EVERYTHING).findings
    assert finding.code == "GL002" and finding.fix is None


def test_no_fix_when_the_call_shares_its_line():
    source = "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    log(opt.zero_grad())\n    opt.step()\n"
    (finding,) = check_source(source, "t.py", EVERYTHING).findings
    assert finding.fix is None


def test_cli_fix_rewrites_the_file_and_exits_clean(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "train.py"
    path.write_text(MISPLACED_CLEAR)
    path.chmod(0o640)
    proc = subprocess.run(
        [sys.executable, "-m", "gradlint", "--fix", "--no-cache", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 1 problem" in proc.stderr
    assert path.read_text().splitlines()[-1] == "    opt.zero_grad()"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temp file left


# --- issue 14: every rule's repair, whole statements, safe and unsafe -----------------

from gradlint.commands.cli import main  # noqa: E402


def fixed_by_session(source: str, unsafe: bool = True):
    return fix_source(source, lambda text: check_source(text, "t.py", EVERYTHING), unsafe=unsafe)


REPAIRS = {
    # GL001: a clear inserted before the first backward of the iteration (unsafe)
    "GL001": (
        "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.step()\n",
        "for x, y in loader:\n    loss = f(x, y)\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n",
    ),
    # GL001 with accumulation: the clear goes after the guarded step
    "GL001-accumulation": (
        "for i, x in enumerate(loader):\n    f(x).backward()\n    if (i + 1) % 4 == 0:\n        opt.step()\n",
        "for i, x in enumerate(loader):\n    f(x).backward()\n    if (i + 1) % 4 == 0:\n        opt.step()\n"
        "        opt.zero_grad()\n",
    ),
    # GL003: the clear's receiver becomes the optimizer that steps
    "GL003": (
        "model_a = Net()\nmodel_b = Net()\nopt = torch.optim.SGD(model_b.parameters(), lr=0.1)\n"
        "for x, y in loader:\n    model_a.zero_grad()  # clear\n    f(model_b(x), y).backward()\n    opt.step()\n",
        "model_a = Net()\nmodel_b = Net()\nopt = torch.optim.SGD(model_b.parameters(), lr=0.1)\n"
        "for x, y in loader:\n    opt.zero_grad()  # clear\n    f(model_b(x), y).backward()\n    opt.step()\n",
    ),
    # GL003 with two optimizers, one never cleared: its clear goes before its own backward,
    # after the other optimizer's step
    "GL003-gan": (
        "g = Net()\nd = Net()\nopt_g = torch.optim.Adam(g.parameters())\nopt_d = torch.optim.Adam(d.parameters())\n"
        "for real in loader:\n    opt_d.zero_grad()\n    d_loss(d, g, real).backward()\n    opt_d.step()\n"
        "    loss = g_loss(d, g)\n    loss.backward()\n    opt_g.step()\n",
        "g = Net()\nd = Net()\nopt_g = torch.optim.Adam(g.parameters())\nopt_d = torch.optim.Adam(d.parameters())\n"
        "for real in loader:\n    opt_d.zero_grad()\n    d_loss(d, g, real).backward()\n    opt_d.step()\n"
        "    loss = g_loss(d, g)\n    opt_g.zero_grad()\n    loss.backward()\n    opt_g.step()\n",
    ),
    # GL007: the step goes after the backward and the clip that follows it (not between them: GL004)
    "GL007-clip": (
        "for x, y in loader:\n    opt.zero_grad()\n    opt.step()\n    f(x, y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
    ),
    # GL004: a clip written over three lines, with a comment, moves as a unit
    "GL004-multiline": (
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n    opt.step()\n"
        "    torch.nn.utils.clip_grad_norm_(\n        model.parameters(),  # every one\n        1.0,\n    )  # clip\n",
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n"
        "    torch.nn.utils.clip_grad_norm_(\n        model.parameters(),  # every one\n        1.0,\n    )  # clip\n"
        "    opt.step()\n",
    ),
    # GL004: the comment lines right above the clip go with it, and it lands above the
    # comment that leads the step
    "GL004-leading-comments": (
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n    # apply the update\n    opt.step()\n\n"
        "    # keep the norm in check\n    # (max 1.0)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n"
        "    # keep the norm in check\n    # (max 1.0)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    # apply the update\n    opt.step()\n\n",
    ),
    # GL004 into an accumulation step's block: re-indented for it
    "GL004-reindent": (
        "for i, x in enumerate(loader):\n    f(x).backward()\n    if (i + 1) % 4 == 0:\n        opt.step()\n"
        "        opt.zero_grad()\n    torch.nn.utils.clip_grad_norm_(\n        model.parameters(), 1.0\n    )\n",
        "for i, x in enumerate(loader):\n    f(x).backward()\n    if (i + 1) % 4 == 0:\n"
        "        torch.nn.utils.clip_grad_norm_(\n            model.parameters(), 1.0\n        )\n"
        "        opt.step()\n        opt.zero_grad()\n",
    ),
    # GL005 (the case): the backward moves up, before the unscale_, not the clip down
    "GL005-amp": (
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.scale(f(x, y)).backward()\n"
        "    scaler.step(opt)\n    scaler.update()\n",
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.scale(f(x, y)).backward()\n"
        "    scaler.unscale_(opt)\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n",
    ),
    # GL005 when the loss is computed after the clip: the clip moves down instead
    "GL005-loss-after": (
        "for x, y in loader:\n    opt.zero_grad()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    loss = f(x, y)\n    loss.backward()\n    opt.step()\n",
        "for x, y in loader:\n    opt.zero_grad()\n    loss = f(x, y)\n    loss.backward()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    opt.step()\n",
    ),
    # GL006: unscale_ inserted right before the clip
    "GL006": (
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.scale(f(x, y)).backward()\n"
        "    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    scaler.step(opt)\n    scaler.update()\n",
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.scale(f(x, y)).backward()\n"
        "    scaler.unscale_(opt)\n    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    scaler.step(opt)\n    scaler.update()\n",
    ),
    # GL008 per epoch: the scheduler moves after the inner loop, never into it
    "GL008-epoch": (
        "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 3)\nfor epoch in range(3):\n    sched.step()\n"
        "    for x, y in loader:\n        opt.zero_grad()\n        f(x, y).backward()\n        opt.step()\n",
        "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 3)\nfor epoch in range(3):\n"
        "    for x, y in loader:\n        opt.zero_grad()\n        f(x, y).backward()\n        opt.step()\n    sched.step()\n",
    ),
}


@pytest.mark.parametrize("name", sorted(REPAIRS))
def test_every_rule_has_its_repair(name):
    wrong, right = REPAIRS[name]
    assert check_source(wrong, "t.py", EVERYTHING).findings, "the wrong sample must have a finding"
    outcome = fixed_by_session(wrong)
    assert outcome.text == right
    assert outcome.result.findings == []
    assert fixed_by_session(outcome.text).text == outcome.text  # a second fix changes nothing


def test_inserted_clears_are_unsafe_and_moves_safe():
    gl001 = check_source(REPAIRS["GL001"][0], "t.py", EVERYTHING).findings[0]
    assert gl001.fix is not None and gl001.fix.applicability == "unsafe"
    gl006 = check_source(REPAIRS["GL006"][0], "t.py", EVERYTHING).findings[0]
    assert gl006.fix is not None and gl006.fix.safe
    outcome = fixed_by_session(REPAIRS["GL001"][0], unsafe=False)
    assert not outcome.changed
    assert outcome.not_fixed == [
        "GL001 line 3: an unsafe fix is available (Insert opt.zero_grad() before loss.backward()): use --unsafe-fixes"
    ]


def test_a_clear_for_optimizers_stepped_in_their_own_loop_goes_after_each_step():
    # `o` is bound by the inner loop only: a clear inserted before the backward named an
    # unbound variable (the fixed script raised NameError)
    source = (
        "for x in data:\n"
        "    loss = sum(m(x).sum() for m in members)\n"
        "    loss.backward()\n"
        "    for o in optimizers:\n"
        "        o.step()\n"
    )
    head = "import torch\nmembers = [torch.nn.Linear(2, 1) for _ in range(2)]\n" \
        "optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in members]\n"
    outcome = fixed_by_session(head + source)
    assert outcome.changed
    assert outcome.text.endswith("    for o in optimizers:\n        o.step()\n        o.zero_grad()\n")


def test_a_fix_that_would_add_a_finding_is_dropped_and_said_so():
    # Moving the clip below the backward would leave it before no unscale_ (GL006), and the
    # backward cannot move up (it reads the loss computed after the clip): nothing is fixed.
    source = (
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    loss = f(x, y)\n"
        "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
    )
    outcome = fixed_by_session(source)
    assert outcome.text == source
    (line,) = outcome.not_fixed
    assert line.startswith("GL005 line 5: Move the clip before scaler.step(opt) was dropped: it would add GL006")


def test_no_fix_moves_a_scheduler_told_its_epoch():
    # issue 19: moving `sched.step(epoch)` after the inner loop delays the schedule by one epoch
    source = (
        "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 3)\nfor epoch in range(3):\n"
        "    sched.step(epoch)\n    for x, y in loader:\n        opt.zero_grad()\n        f(x, y).backward()\n"
        "        opt.step()\n"
    )
    assert fixed_by_session(source).text == source


def test_no_step_is_moved_where_its_optimizer_already_steps():
    # the step at the top belongs in the warm-up branch; moving it after the other path's
    # backward would step twice there (and never in the warm-up)
    source = (
        "for i, (x, y) in enumerate(loader):\n    opt.step()\n    opt.zero_grad()\n    loss = f(x, y)\n"
        "    if i < warmup:\n        loss.backward()\n        continue\n    (loss + g(x)).backward()\n"
        "    opt.step()\n"
    )
    outcome = fixed_by_session(source)
    assert outcome.text == source
    assert [line.split(":")[0] for line in outcome.not_fixed] == ["GL007 line 2"]


def test_a_scaler_step_never_moves_past_its_scalers_update():
    # scaler.update() reads the inf checks scaler.step(opt) records: the step stays above it, so
    # the fix moves the backward up, or (when its loss is computed below) offers nothing
    head = "scaler = torch.cuda.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n"
    movable = head + "    loss = f(x, y)\n    scaler.step(opt)\n    scaler.update()\n    scaler.scale(loss).backward()\n"
    assert fixed_by_session("import torch\n" + movable).text == "import torch\n" + head + (
        "    loss = f(x, y)\n    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
    )
    stuck = head + "    scaler.step(opt)\n    scaler.update()\n    loss = f(x, y)\n    scaler.scale(loss).backward()\n"
    outcome = fixed_by_session("import torch\n" + stuck)
    assert outcome.text == "import torch\n" + stuck
    assert [line.split(":")[0] for line in outcome.not_fixed] == ["GL007 line 5"]


def test_a_statement_never_moves_out_of_its_block():
    source = (
        "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    if ready:\n"
        "        opt.zero_grad()\n    opt.step()\n"
    )
    assert check_source(source, "t.py", EVERYTHING).findings[0].fix is None


def test_an_assignment_is_not_moved_below_a_read_of_its_name():
    source = (
        "for x, y in loader:\n    opt.zero_grad()\n    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    log(norm)\n    f(x, y).backward()\n    opt.step()\n"
    )
    (finding,) = check_source(source, "t.py", EVERYTHING).findings
    assert finding.code == "GL005"
    assert all("Move the clip" not in fix.description for fix in (finding.fix, *finding.fix.alternatives) if fix)


def run_cli(capsys, *args):
    code = main(["--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_diff_prints_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(REPAIRS["GL001"][0])
    code, out, err = run_cli(capsys, "--diff", str(path))
    assert code == 0 and out == ""  # the only fix is unsafe
    code, out, err = run_cli(capsys, "--diff", "--unsafe-fixes", "--show-fixes", str(path))
    assert code == 1
    assert "+    opt.zero_grad()\n" in out and out.startswith(f"--- {path}\n+++ {path}\n")  # absolute: as is
    assert path.read_text() == REPAIRS["GL001"][0]
    assert "Would fix 1 problem." in err
    assert f"{path}: would fix GL001 line 3: Insert opt.zero_grad() before loss.backward()" in err
    assert ": fixed" not in err  # --diff writes nothing: nothing was fixed


def test_fix_with_unsafe_fixes_writes_and_shows(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(REPAIRS["GL001"][0])
    code, out, err = run_cli(capsys, "--fix", "--show-fixes", str(path))
    assert code == 1 and path.read_text() == REPAIRS["GL001"][0]
    assert "not fixed: GL001 line 3: an unsafe fix is available" in err
    code, out, err = run_cli(capsys, "--fix", "--unsafe-fixes", str(path))
    assert code == 0 and path.read_text() == REPAIRS["GL001"][1]


def test_explain_shows_each_rules_fix(capsys):
    for rule in all_rules():
        assert main(["explain", rule.code]) == 0
        out = capsys.readouterr().out
        assert "Fix (--fix; unsafe ones with --unsafe-fixes):" in out
        if rule.default:
            assert rule.fix and rule.fix in out, rule.code
            assert "Safe" in rule.fix or "Unsafe" in rule.fix, rule.code
        else:
            assert "None: the repair needs a human decision." in out


def test_crlf_and_a_last_line_without_end_keep_the_files_line_ends():
    source = "for x, y in loader:\r\n    loss = f(x, y)\r\n    loss.backward()\r\n    opt.zero_grad()\r\n    opt.step()"
    outcome = fixed_by_session(source)
    assert outcome.text == "for x, y in loader:\r\n    loss = f(x, y)\r\n    loss.backward()\r\n    opt.step()\r\n    opt.zero_grad()"


def test_diff_applies_with_git_apply_to_what_fix_writes(tmp_path, capsys):
    import shutil
    import subprocess

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "t.py").write_bytes(b"for x, y in loader:\r\n    loss = f(x, y)\r\n    loss.backward()\r\n    opt.step()")
    (tmp_path / "a" / "u.py").write_text(REPAIRS["GL004-multiline"][0])
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    paths = ["t.py", "u.py"]
    import os

    cwd = os.getcwd()
    try:
        os.chdir(tmp_path / "a")
        code, out, err = run_cli(capsys, "--diff", "--unsafe-fixes", *paths)
        assert code == 1
        assert "\\ No newline at end of file\n" in out
        (tmp_path / "d.patch").write_text(out)
        subprocess.run(["git", "apply", "-p1", str(tmp_path / "d.patch")], check=True, cwd=tmp_path / "a")
        os.chdir(tmp_path / "b")
        assert run_cli(capsys, "--fix", "--unsafe-fixes", *paths)[0] == 0
    finally:
        os.chdir(cwd)
    for name in paths:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_json_offers_only_fixes_that_help(tmp_path, capsys):
    import json

    hopeless = tmp_path / "hopeless.py"  # the only move would add GL006 (see the test above)
    hopeless.write_text(
        "scaler = torch.amp.GradScaler()\nfor x, y in loader:\n    opt.zero_grad()\n    scaler.unscale_(opt)\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n    loss = f(x, y)\n"
        "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
    )
    (raw,) = check_source(hopeless.read_text(), str(hopeless), EVERYTHING).findings
    assert raw.fix is not None  # planned, but it would not help
    good = tmp_path / "good.py"
    good.write_text(REPAIRS["GL005-amp"][0])
    code, out, err = run_cli(capsys, "--output-format", "json", str(hopeless), str(good))
    fixes = {f["path"]: f["fix"] for f in json.loads(out)["findings"]}
    assert fixes[str(hopeless)] is None
    assert fixes[str(good)]["description"] == "Move scaler.scale(f(x, y)).backward() before scaler.unscale_(opt)"
    assert fixes[str(good)]["applicability"] == "safe"


# --- what the text output and the fix options say ---------------------------------------

SAFE_AND_UNSAFE = MISPLACED_CLEAR + REPAIRS["GL001"][0].replace("opt", "opt2")  # GL002 safe, GL001 unsafe


def test_text_marks_fixable_findings_and_counts_them_as_ruff_does(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(SAFE_AND_UNSAFE)
    code, out, err = run_cli(capsys, str(path))
    assert code == 1
    lines = out.splitlines()
    assert f"{path}:4:5: GL002 [*] opt.zero_grad() discards" in out
    assert any(line.startswith(f"{path}:8:5: GL001 loss.backward()") for line in lines), out  # unsafe: no mark
    assert lines[-1] == "[*] 1 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."
    # After --fix the safe one is gone; the unsafe one is still on offer, unmarked.
    code, out, err = run_cli(capsys, "--fix", str(path))
    assert code == 1 and "[*]" not in out
    assert out.splitlines()[-1] == "1 unsafe fix available with `--fix --unsafe-fixes`."
    code, out, err = run_cli(capsys, "--fix", "--unsafe-fixes", str(path))
    assert code == 0 and out == "All checks passed! (1 file checked)\n"


def test_no_fixable_line_without_fixes(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(MISPLACED_CLEAR)
    out = run_cli(capsys, str(path))[1]
    assert out.splitlines()[-1] == "[*] 1 fixable with `--fix`."
    dropped = tmp_path / "other.py"  # a fix --fix tried and dropped is no longer offered
    dropped.write_text(REPAIRS["GL001"][0])
    from gradlint.fix import session

    original = session._worse
    try:
        session._worse = lambda before, after, targets=(): "refused for the test"
        code, out, err = run_cli(capsys, "--fix", "--unsafe-fixes", str(dropped))
    finally:
        session._worse = original
    assert code == 1 and " GL001 [*]" not in out and out.splitlines()[-1].startswith("Found 1 problem")


@pytest.mark.parametrize("option", ["--unsafe-fixes", "--show-fixes"])
def test_fix_options_without_fix_warn(tmp_path, capsys, option):
    path = tmp_path / "train.py"
    path.write_text(MISPLACED_CLEAR)
    code, out, err = run_cli(capsys, option, str(path))
    assert code == 1 and f"gradlint: warning: {option} has no effect without --fix or --diff" in err
    assert path.read_text() == MISPLACED_CLEAR
    assert "warning" not in run_cli(capsys, option, "--diff", str(path))[2]


def _feed(monkeypatch, data: bytes) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_fix_on_stdin_writes_the_fixed_text_to_stdout(monkeypatch, capsys):
    _feed(monkeypatch, SAFE_AND_UNSAFE.encode())
    code, out, err = run_cli(capsys, "--fix", "--show-fixes", "-", "--stdin-filename", "train.py")
    assert code == 1  # the unsafe GL001 is left
    assert out == SAFE_AND_UNSAFE.replace("    opt.zero_grad()\n    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n", 1)
    assert "Fixed 1 problem." in err and "train.py: fixed GL002 line 4" in err
    assert "train.py:8:5: GL001 " in err  # the report goes to standard error
    _feed(monkeypatch, SAFE_AND_UNSAFE.encode())
    code, out, err = run_cli(capsys, "--fix", "--unsafe-fixes", "-")
    assert code == 0 and "opt2.zero_grad()\n    loss.backward()" in out
    assert err == "Fixed 2 problems.\nAll checks passed! (1 file checked)\n"  # the report: standard error
    crlf = b"x = 1\r\n"  # nothing to fix: the very bytes come back
    _feed(monkeypatch, crlf)
    assert run_cli(capsys, "--fix", "-")[:2] == (0, crlf.decode())


def test_diff_on_stdin(monkeypatch, capsys):
    _feed(monkeypatch, MISPLACED_CLEAR.encode())
    code, out, err = run_cli(capsys, "--diff", "-", "--stdin-filename", "train.py")
    assert code == 1 and out.startswith("--- a/train.py\n+++ b/train.py\n") and "+    opt.step()\n" in out


def test_the_fixes_of_many_findings_read_the_file_once(monkeypatch):
    """Each fix used to join the file's lines, hash the text and walk its whole ast again: a
    file with thousands of findings (one per loop) spent time quadratic in its size on fixes."""
    import ast

    import gradlint.fix as fix

    loop = (
        "    for x, y in loader:\n        opt.zero_grad()\n        loss = model(x).sum()\n"
        "        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        loss.backward()\n        opt.step()\n"
    )
    source = "import torch\ndef train(model, opt, loader):\n" + loop * 30
    builds, walks = [], []
    real_build, real_walk = fix.Statements, ast.walk
    monkeypatch.setattr(fix, "Statements", lambda *args: builds.append(1) or real_build(*args))
    monkeypatch.setattr(ast, "walk", lambda node: (walks.append(1) if isinstance(node, ast.Module) else None) or real_walk(node))
    findings = check_source(source, "t.py", EVERYTHING).findings
    assert [f.code for f in findings] == ["GL005"] * 30 and all(f.fix is not None for f in findings)
    assert len(builds) == 1  # one Statements per file
    assert len(walks) <= 2  # names read and names bound: each indexed in one walk of the tree, not one per fix


# A loop with a fixable GL002 and a GL001 whose fix inserts a clear; then, in the big variant,
# generated code that no loop reaches (the screen blanks it).
SMALL_LOOPS = (
    "import torch\n\ndef train(model, loader, opt, optimizer):\n    for x, y in loader:\n        loss = f(x, y)\n"
    "        loss.backward()\n        opt.zero_grad()\n        opt.step()\n    for x in loader:\n"
    "        model(x).sum().backward()\n        optimizer.step()\n"
)
PADDING = "".join(f"\n\ndef pad_{i}(value):\n    return {{'k_{i}': value * {i}}}\n" for i in range(3000))


@pytest.mark.parametrize("variant", ["proven", "marked"])
def test_a_big_files_fixes_are_proven_on_its_screened_text_with_the_same_result(tmp_path, monkeypatch, variant):
    """Issue 28: proving or marking the fixes of a generated module re-parsed all of it per fix
    (the 7.8 MB module: 7.4 CPU s).  A big file's fixes read the screened text's statements and
    their proof checks the fixed screened text: the same fixes, the whole file parsed once."""
    from gradlint.check import engine
    from gradlint.parse import python_ast

    small, big = tmp_path / "small.py", tmp_path / "big.py"
    small.write_text(SMALL_LOOPS)
    big.write_text(SMALL_LOOPS + PADDING)
    assert len(big.read_text()) > 2 * 64 * 1024
    parse, whole = python_ast.parse, []

    def counting(text, *args, **kwargs):
        whole.append("def pad_1(" in text)
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(python_ast, "parse", counting)
    check = {"proven": engine._check_file_proving, "marked": engine._check_file_marking}[variant]
    expected, _ = check(str(small), EVERYTHING)
    whole.clear()
    got, _ = check(str(big), EVERYTHING)
    assert sum(whole) == 1  # the guard's parse only (the old code: once more per fix and for its statements)
    strip = lambda result: [(f.code, f.span, f.fix) for f in result.findings]  # noqa: E731
    assert [f.code for f in expected.findings] == ["GL002", "GL001"] and all(f.fix for f in expected.findings)
    assert strip(got) == strip(expected)
