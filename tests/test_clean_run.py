"""A run that finds nothing says so, as ruff does (issue 30, item 4): `All checks passed!`
with the number of files checked, on the stream the report goes to; a warning when no
file was found or no rule is selected; `-q` for silence; machine formats untouched."""

from __future__ import annotations

import io
import json
import sys

import pytest

from gradlint.commands import cli

CLEAN = "import torch\nfor x, y in data:\n    opt.zero_grad()\n    f(x, y).backward()\n    opt.step()\n"
BUGGY = "for x, y in data:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"
PLAIN = "import os\nprint(os.sep)\n"  # no training word: the early answer of quick.py


def run(capsys, *argv, shortcut=True, monkeypatch=None):
    capsys.readouterr()
    if not shortcut:
        monkeypatch.setattr(cli, "_clean_without_analysis", lambda args: False)
    code = cli.main(["--no-cache", *argv] if argv[:1] != ("-",) else list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(CLEAN)
    (tmp_path / "src" / "util.py").write_text(PLAIN)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no python here\n")
    return tmp_path


def test_a_clean_run_says_all_checks_passed_with_the_files_checked(tree, capsys):
    assert run(capsys, "src") == (0, "All checks passed! (2 files checked)\n", "")
    assert run(capsys, "src/train.py") == (0, "All checks passed! (1 file checked)\n", "")


def test_the_early_answer_says_the_same_as_the_full_run(tree, capsys, monkeypatch):
    argv = ("src/util.py", "./src/util.py", "--exit-zero")
    from gradlint.check import quick

    assert quick.clean_run(list(argv))
    early = run(capsys, *argv)
    assert early == (0, "All checks passed! (1 file checked)\n", "")
    assert run(capsys, *argv, shortcut=False, monkeypatch=monkeypatch) == early


def test_no_file_found_is_a_warning(tree, capsys):
    code, out, err = run(capsys, "empty")
    assert code == 0 and out == "All checks passed! (0 files checked)\n"
    assert err == "gradlint: warning: no Python files found under the given paths\n"


@pytest.mark.parametrize("selection", [["--select", ""], ["--select", "GL001", "--ignore", "GL001"]])
def test_no_rule_selected_is_a_warning(tree, capsys, selection):
    (tree / "src" / "bug.py").write_text(BUGGY)
    code, out, err = run(capsys, *selection, "src")
    assert code == 0 and out == "All checks passed! (3 files checked)\n"
    assert "gradlint: warning: no rule is selected" in err


def test_quiet_prints_only_findings(tree, capsys):
    assert run(capsys, "-q", "src") == (0, "", "")
    assert run(capsys, "--quiet", "src/util.py") == (0, "", "")  # the early answer too
    assert run(capsys, "-q", "empty") == (0, "", "")
    (tree / "src" / "bug.py").write_text(BUGGY)
    code, out, err = run(capsys, "-q", "src")
    assert code == 1 and out.splitlines() == [out.splitlines()[0]] and " GL002 [*] " in out
    code, out, err = run(capsys, "-q", "--fix", "src")
    assert (code, out, err) == (0, "", "")


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "github", "lsp"])
def test_machine_formats_stay_machine_readable(tree, capsys, fmt):
    code, out, err = run(capsys, "--output-format", fmt, "src", "empty")
    assert code == 0 and "All checks passed" not in out + err
    if fmt in ("json", "sarif", "lsp"):
        json.loads(out)
    assert "gradlint: warning" not in out  # warnings go to standard error


def test_statistics_of_a_clean_run_print_nothing(tree, capsys):
    assert run(capsys, "--statistics", "src") == (0, "", "")


def test_the_line_goes_where_the_report_goes(tree, capsys, monkeypatch):
    code, out, err = run(capsys, "-o", "report.txt", "src")
    assert (code, out, err) == (0, "", "") and (tree / "report.txt").read_text() == "All checks passed! (2 files checked)\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLEAN.encode())))
    code, out, err = run(capsys, "-", "--fix")
    assert code == 0 and out == CLEAN and err == "All checks passed! (1 file checked)\n"
