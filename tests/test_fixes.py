"""Autofixes: applying a finding's fix yields code on which the rule is silent."""

import pytest

from gradlint.engine import check_source
from gradlint.fix import apply
from gradlint.rules.registry import all_rules
from gradlint.settings import Settings

FIXABLE = {
    "GL002": "for x, y in loader:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n",
    "GL004": (
        "for x, y in loader:\n    opt.zero_grad()\n    f(x, y).backward()\n    opt.step()\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # keep me\n"
    ),
    "GL005": (
        "for x, y in loader:\n    opt.zero_grad()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        "    f(x, y).backward()\n    opt.step()\n"
    ),
    "GL007": "for x, y in loader:\n    opt.zero_grad()\n    opt.step()\n    f(x, y).backward()\n",
    "GL008": (
        "import torch\nsched = torch.optim.lr_scheduler.StepLR(opt, 3)\nfor x, y in loader:\n    sched.step()\n"
        "    opt.zero_grad()\n    f(x, y).backward()\n    opt.step()\n"
    ),
}
EVERYTHING = Settings(select=frozenset(rule.code for rule in all_rules() if rule.default))


@pytest.mark.parametrize("code", sorted(FIXABLE))
def test_fix_repairs_the_loop(code):
    source = FIXABLE[code]
    (finding,) = [f for f in check_source(source, "t.py", EVERYTHING).findings if f.code == code]
    assert finding.fix is not None
    fixed = apply(source, finding.fix)
    assert sorted(fixed.splitlines()) == sorted(source.splitlines())  # a move, nothing lost
    assert check_source(fixed, "t.py", EVERYTHING).findings == []


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
    path.write_text(FIXABLE["GL002"])
    path.chmod(0o640)
    proc = subprocess.run(
        [sys.executable, "-m", "gradlint", "--fix", "--no-cache", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 1 problem" in proc.stderr
    assert path.read_text().splitlines()[-1] == "    opt.zero_grad()"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]  # no temp file left
