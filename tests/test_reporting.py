"""Reports that agree with themselves: counts that add up, a missing path
said plainly, findings in file, line and column order in every mode."""

from __future__ import annotations

import json

import pytest

from ci_snippets import CLEAN_LOOP, GL002_LOOP, GL004_LOOP, run_cli, snippet, write


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    write(tmp_path, "clean.py", snippet(CLEAN_LOOP))
    write(tmp_path, "binary.py", "")
    (tmp_path / "binary.py").write_bytes(b"opt.step()\x00")
    write(tmp_path, "syntax.py", "for x in loader:\n    loss.backward(\n")
    return tmp_path


def test_checked_and_not_checked_add_up(tree, capsys):
    code, out, _ = run_cli(capsys, "--no-cache", "a.py", "clean.py", "binary.py", "syntax.py", "missing.py")
    assert code == 1
    # 5 paths: a.py and clean.py checked; binary, syntax and missing could not be.
    assert out.splitlines()[-2] == "Found 1 problem in 1 file (2 files checked, 3 could not be checked)."
    data = json.loads(run_cli(capsys, "--no-cache", "--output-format", "json", *"a.py clean.py binary.py syntax.py missing.py".split())[1])
    assert (data["files_checked"], data["files_not_checked"]) == (2, 3)
    assert len({e["path"] for e in data["errors"]}) == 3
    _, stats, _ = run_cli(capsys, "--no-cache", "--statistics", "a.py", "binary.py", "missing.py")
    assert stats.splitlines()[-1] == "2  files that could not be checked"


def test_missing_path_is_said_plainly(tree, capsys):
    code, out, _ = run_cli(capsys, "--no-cache", "nonexistent.py")
    assert code == 1
    assert out.splitlines() == [
        "error: nonexistent.py: no such file or directory",
        "Found 0 problems in 0 files (0 files checked, 1 could not be checked).",
    ]


def test_syntax_error_keeps_its_position(tree, capsys):
    _, out, _ = run_cli(capsys, "--no-cache", "syntax.py")
    assert out.splitlines()[0].startswith("syntax.py:2:") and ": error: syntax error" in out


def two_files(root):
    """b.py: GL004 at line 10 suppressed, GL002-like findings around it; a.py after it in the arguments."""
    b = snippet(GL004_LOOP, "  # noqa: GL004") + "for x in range(3):\n    loss = model(x).sum()\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
    write(root, "b.py", b)
    write(root, "a.py", snippet(GL002_LOOP, "  # noqa: GL002"))


def positions_of_text(out: str) -> list[tuple[str, int, int]]:
    rows = []
    for line in out.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[1].isdigit():
            rows.append((parts[0], int(parts[1]), int(parts[2])))
    return rows


def test_show_suppressed_keeps_file_and_line_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    two_files(tmp_path)
    code, out, _ = run_cli(capsys, "--no-cache", "--show-suppressed", "b.py", "a.py")
    rows = positions_of_text(out)
    assert rows == sorted(rows) and len(rows) == 3, out
    assert [line.endswith("(suppressed)") for line in out.splitlines()[:3]] == [True, True, False]
    assert code == 1


def test_sarif_results_in_file_and_line_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    two_files(tmp_path)
    _, out, _ = run_cli(capsys, "--no-cache", "--show-suppressed", "--output-format", "sarif", "b.py", "a.py")
    results = json.loads(out)["runs"][0]["results"]
    where = [
        (
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"],
        )
        for r in results
    ]
    assert where == sorted(where) and len(where) == 3
    assert ["suppressions" in r for r in results] == [True, True, False]


MICRO_BATCH_CLIP = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(range(10)):
    loss = model(x).sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if (i + 1) % 4 == 0:
        opt.step()
        opt.zero_grad()
"""

CLEAR_EVERY_MICRO_BATCH = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i, x in enumerate(range(10)):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    if (i + 1) % 4 == 0:
        opt.step()
"""


@pytest.mark.parametrize(
    "source, expected",
    [
        # the backward on line 7 is above the clip: it is the next iteration's
        (MICRO_BATCH_CLIP, ("t.py:8:5: GL005 torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0) runs before"
                            " the next iteration's loss.backward() (line 7): ")),
        # the backward on line 8 is below the clear: it ran in the previous iteration
        (CLEAR_EVERY_MICRO_BATCH, ("t.py:6:5: GL002 opt.zero_grad() discards the gradients of the previous"
                                   " iteration's loss.backward() (line 8) before opt.step() (line 10)")),
        # the same iteration: no qualifier
        (snippet(GL002_LOOP), ("t.py:8:5: GL002 opt.zero_grad() discards the gradients of loss.backward() (line 7)"
                               " before opt.step() (line 9)")),
    ],
)
def test_related_lines_say_which_iteration(tmp_path, monkeypatch, capsys, source, expected):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "t.py", source)
    _, out, _ = run_cli(capsys, "--no-cache", "--isolated", "t.py")
    assert expected in out.replace(" [*] ", " "), out  # the fixable mark is not the message
