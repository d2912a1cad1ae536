"""Command-line conventions a user expects (issue 30, item 7): one spelling of the output
format option works everywhere, a rule's name works where its code does, help points at
pages an installed package can reach, a refused file says how to skip it."""

from __future__ import annotations

import json

import pytest

from gradlint import DOCS_URL
from gradlint.commands import cli
from gradlint.check import engine


def run(capsys, *argv):
    capsys.readouterr()
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BUGGY = "for x, y in data:\n    loss = f(x, y)\n    loss.backward()\n    opt.zero_grad()\n    opt.step()\n"


def test_check_accepts_verify_s_spelling_of_the_format(tmp_path, capsys):
    path = tmp_path / "train.py"
    path.write_text(BUGGY)
    code, out, err = run(capsys, "check", "--no-cache", "--format", "json", str(path))
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["GL002"], err
    assert run(capsys, "--no-cache", "--format", "json", str(path))[1] == out
    code, out, err = run(capsys, "--no-cache", "--format", "xml", str(path))
    assert code == 2 and "xml" in err and "json" in err


def test_verify_accepts_check_s_spelling_of_the_format():
    from gradlint.verify.command import parser

    assert parser().parse_args(["--output-format", "json", "train.py"]).format == "json"
    assert parser().parse_args(["--format", "json", "train.py"]).format == "json"


@pytest.mark.parametrize("name, code", [("missing-zero-grad", "GL001"), ("Clip-After-Step", "GL004")])
def test_explain_takes_a_rule_s_name(capsys, name, code):
    by_code = run(capsys, "explain", code)
    assert by_code[0] == 0 and run(capsys, "explain", name) == by_code


def test_explain_suggests_a_near_name(capsys):
    code, out, err = run(capsys, "explain", "missing-zerograd")
    assert code == 2 and "missing-zero-grad" in err and "GL001" in err


def test_lsp_help_points_at_a_page_an_installed_package_reaches(capsys):
    code, out, err = run(capsys, "lsp", "--help")
    assert code == 0
    assert f"{DOCS_URL}editors.md" in out
    assert "are in docs/editors.md" not in out  # a checkout's path: not in a wheel


def test_a_file_over_the_size_limit_says_how_to_skip_it(tmp_path, monkeypatch, capsys):
    from gradlint.check import quick

    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(quick, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "generated_weights.py"
    path.write_text("x = 1\n" * 400)
    code, out, err = run(capsys, "--no-cache", "-j", "1", str(path))
    (line,) = [line for line in out.splitlines() if line.startswith("error:")]
    assert "too large" in line and "--extend-exclude generated_weights.py" in line and "extend-exclude" in line
