"""A `[*]` mark, the "N fixable" count and an editor's quick fix are shown only for a fix
that `--fix` really applies (issue 30, item 2): one decision (fix/session.py `decide`)
behind the mark, the count, `--fix`, `--diff` and the language server's code action."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from gradlint.commands.cli import main
from gradlint.check.engine import check_source
from gradlint.core.findings import FileResult
from gradlint.fix import apply
from gradlint.fix import session
from gradlint.rules.registry import all_rules
from gradlint.options.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = Settings(select=frozenset(rule.code for rule in all_rules() if rule.default))

# The clip after the prepared optimizer's step (fixtures/gl004/wrong_clip_after_prepared_step.py):
# the planned move of the clip before the step would put it before the next backward of the
# accumulation (GL005), so --fix drops it.
CLIP_AFTER_PREPARED_STEP = """\
accelerator = Accelerator(gradient_accumulation_steps=2)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for x, y in loader:
    with accelerator.accumulate(model):
        loss = nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.zero_grad()
"""
GOOD_GL002 = "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"


def run_cli(capsys, *args):
    capsys.readouterr()
    code = main(["--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _fixable(out: str) -> tuple[int, int]:
    """(safe, unsafe) from the text summary's fixable line."""
    safe = re.search(r"\[\*\] (\d+) fixable with `--fix`", out)
    unsafe = re.search(r"(\d+) unsafe fix(?:es)? available", out)
    return int(safe.group(1)) if safe else 0, int(unsafe.group(1)) if unsafe else 0


def _would_fix(err: str) -> int:
    found = re.search(r"Would fix (\d+) problems?\.", err)
    return int(found.group(1)) if found else 0


def test_a_fix_that_would_add_a_finding_is_neither_marked_nor_counted(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(CLIP_AFTER_PREPARED_STEP)
    (finding,) = check_source(path.read_text(), str(path), DEFAULT).findings
    assert finding.code == "GL004" and finding.fix is not None  # planned, but it would add GL005
    code, out, err = run_cli(capsys, str(path))
    assert code == 1 and "[*]" not in out and "fixable" not in out and "unsafe fix" not in out, out
    code, out, err = run_cli(capsys, "--fix", "--unsafe-fixes", str(path))
    assert path.read_text() == CLIP_AFTER_PREPARED_STEP and "Fixed" not in err


def test_the_count_is_what_fix_fixes_on_the_fixtures(tmp_path, capsys, monkeypatch):
    tree = tmp_path / "fixtures"
    shutil.copytree(ROOT / "fixtures", tree)
    monkeypatch.chdir(tmp_path)
    out = run_cli(capsys, "fixtures")[1]
    safe, unsafe = _fixable(out)
    marked = sum(1 for line in out.splitlines() if re.match(r"^\S+:\d+:\d+: GL\d+ \[\*\] ", line))
    assert _would_fix(run_cli(capsys, "--diff", "fixtures")[2]) == safe == marked > 0
    assert _would_fix(run_cli(capsys, "--diff", "--unsafe-fixes", "fixtures")[2]) == safe + unsafe
    # and --fix writes exactly that many
    assert re.search(rf"Fixed {safe} problems?\.", run_cli(capsys, "--fix", "fixtures")[2])


def test_after_fix_the_unsafe_count_is_what_unsafe_fixes_would_add(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(GOOD_GL002 + CLIP_AFTER_PREPARED_STEP.replace("optimizer", "opt2"))
    code, out, err = run_cli(capsys, "--fix", str(path))
    assert "Fixed 1 problem." in err and "[*]" not in out and "fixable" not in out and "unsafe fix" not in out, out


def test_the_decision_refuses_the_fix_the_session_drops():
    before = check_source(CLIP_AFTER_PREPARED_STEP, "t.py", DEFAULT)
    (finding,) = before.findings
    check = lambda text: check_source(text, "t.py", DEFAULT)  # noqa: E731
    assert session.decide(CLIP_AFTER_PREPARED_STEP, before, finding, check, unsafe=True).fix is None
    good = check_source(GOOD_GL002, "t.py", DEFAULT)
    chosen = session.decide(GOOD_GL002, good, good.findings[0], check, unsafe=False)
    assert chosen.fix is not None and check(apply(GOOD_GL002, chosen.fix)).findings == []
    assert isinstance(chosen.after, FileResult)


# --- notebooks -------------------------------------------------------------------------


def notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [{"cell_type": "code", "metadata": {}, "source": c, "outputs": [], "execution_count": None} for c in cells],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


def test_a_notebook_finding_that_fix_fixes_is_marked(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    path.write_text(notebook("import torch\n", GOOD_GL002))
    code, out, err = run_cli(capsys, str(path))
    assert " GL002 [*] " in out and out.splitlines()[-1] == "[*] 1 fixable with `--fix`.", out
    code, out, err = run_cli(capsys, "--fix", str(path))
    assert code == 0 and "Fixed 1 problem." in err


def test_a_broken_cell_does_not_stop_fix_in_the_other_cells(tmp_path, capsys):
    path = tmp_path / "nb.ipynb"
    text = notebook("def broken(:\n", GOOD_GL002)
    path.write_text(text)
    code, out, err = run_cli(capsys, str(path))
    assert " GL002 [*] " in out, out
    code, out, err = run_cli(capsys, "--diff", str(path))
    added = [line for line in out.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert code == 1 and "Would fix 1 problem." in err and any("opt.zero_grad()" in line for line in added), (out, err)
    assert path.read_text() == text
    code, out, err = run_cli(capsys, "--fix", str(path))
    assert "Fixed 1 problem." in err, err
    assert code == 1 and "cell 1" in out and "GL002" not in out  # the broken cell is still reported
    cells = [c["source"] for c in json.loads(path.read_text())["cells"]]
    assert cells[0] == "def broken(:\n" and cells[1].endswith("    opt.step()\n    opt.zero_grad()\n")


def test_marking_a_file_of_many_fixes_costs_one_analysis_more(tmp_path, capsys, monkeypatch):
    """Sixty misplaced clears: the marks and --fix agree on all sixty (more than the session's
    budget of analyses), and proving them costs one analysis beyond the check itself."""
    from gradlint.check import engine
    from gradlint.fix import session as fixing

    path = tmp_path / "dense.py"
    path.write_text("import torch\n" + GOOD_GL002 * 60)
    assert fixing.MAX_CHECKS < 60
    calls = []
    real = engine.check_source
    monkeypatch.setattr(engine, "check_source", lambda *args, **kw: calls.append(1) or real(*args, **kw))
    code, out, err = run_cli(capsys, "-j", "1", str(path))
    assert out.splitlines()[-1] == "[*] 60 fixable with `--fix`."
    assert len(calls) <= 2, len(calls)
    code, out, err = run_cli(capsys, "-j", "1", "--fix", str(path))
    assert code == 0 and "Fixed 60 problems." in err


def test_show_fixes_names_a_finding_without_a_repair(tmp_path, capsys):
    path = tmp_path / "train.py"  # the clear is in another block than the step: no repair is planned
    path.write_text("for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    if ready:\n        opt.zero_grad()\n    opt.step()\n")
    code, out, err = run_cli(capsys, "--fix", "--show-fixes", str(path))
    assert code == 1 and f"{path}: not fixed: GL002 line 5: no automatic fix for this shape of code" in err, err
