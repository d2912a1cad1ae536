"""Help written for users: every command's --help exits 0, names the command
in its usage line, and explains every option (with its default when it
takes a value); `explain` knows every code gradlint can print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ci_snippets import run_cli
from gradlint.commands.cli import check_parser
from gradlint.core.findings import FILE_ERROR_KINDS
from gradlint.rules.registry import all_rules
from gradlint.check.suppress import UNUSED_CODE

ROOT = Path(__file__).resolve().parent.parent
DOC_TEXTS = [(ROOT / "README.md").read_text()] + [page.read_text() for page in sorted((ROOT / "docs").rglob("*.md"))]
# verify's help text belongs to gradlint/verify/command.py; only its exit code and usage line are checked here.
COMMANDS = ("check", "rules", "explain", "lsp", "verify")


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_top_level_help_is_for_users(capsys, flag):
    code, out, err = run_cli(capsys, flag)
    assert code == 0 and err == ""
    assert out.startswith("usage: gradlint")
    assert "no analysis here" not in out and "Command line:" not in out  # not the module docstring
    for command in COMMANDS:
        assert f"\n  {command}" in out, command
    assert "--version" in out


def test_verify_help_exits_0(capsys):
    # Its text is issue 12's (gradlint/verify/command.py); once merged, add
    # "verify" to the usage-line test below.
    code, out, _ = run_cli(capsys, "verify", "--help")
    assert code == 0 and "gradlint verify" in out


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "verify"])
def test_every_command_help_exits_0_and_names_the_command(capsys, command):
    code, out, err = run_cli(capsys, command, "--help")
    assert code == 0, err
    assert out.startswith(f"usage: gradlint {command} ")
    assert "options:" in out


def test_every_check_option_says_what_it_does_and_its_default():
    for action in check_parser()._actions:
        if action.dest == "help":
            continue
        assert action.help and len(action.help) > 15, action.dest
        takes_value = action.nargs != 0
        if takes_value and action.dest not in ("output_file",):  # no default: standard output, said in the text
            assert "default" in action.help, action.dest


def test_check_help_is_the_same_without_the_command_name(capsys):
    assert run_cli(capsys, "check", "--help") == run_cli(capsys, "--select", "GL001", "--help")


@pytest.mark.parametrize("argv", [["rules", "extra"], ["explain"], ["explain", "GL001", "GL002"]])
def test_bad_arguments_are_usage_errors(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("gradlint: error:") and "Traceback" not in err


def codes_in_output() -> list[str]:
    """Every code a finding or a file diagnostic can carry in any output format."""
    return [rule.code for rule in all_rules()] + [UNUSED_CODE, *FILE_ERROR_KINDS]


@pytest.mark.parametrize("code", codes_in_output())
def test_explain_knows_every_code_in_output(capsys, code):
    status, out, err = run_cli(capsys, "explain", code.lower())
    assert status == 0 and err == ""
    assert out.startswith(code) and len(out.splitlines()) >= 4


def test_explain_of_a_rule_shows_both_examples(capsys):
    _, out, _ = run_cli(capsys, "explain", "GL002")
    assert "Wrong:" in out and "Right:" in out and "opt.zero_grad()" in out


def test_explain_unknown_code(capsys):
    code, _, err = run_cli(capsys, "explain", "GL999")
    assert code == 2 and "unknown code: 'GL999'" in err


def test_readme_installs_the_registry_name():
    """`pip install gradlint` installs an unrelated project: every install
    line of the README and of docs/ names torch-gradlint (from the index or
    from its git URL) or the checkout itself."""
    lines = [
        line.strip() for text in DOC_TEXTS for line in text.splitlines()
        if re.search(r"\bpip install\b", line) and "unrelated" not in line  # the line warning about it
    ]
    assert len(lines) > 5
    for line in lines:
        for _, target in re.findall(r"pip install ((?:-\S+ )*)(\S+)", line):
            name = target.strip("'\"`")
            assert name.startswith(("torch-gradlint", ".", "torch==")), line


def test_install_hints_name_the_distribution(capsys, monkeypatch):
    """Without the extras, the hints say what to install, under the registry name."""
    import sys

    from gradlint.verify.command import INSTALL_HINT

    monkeypatch.setitem(sys.modules, "gradlint.lsp", None)  # as if pygls (the lsp extra) were missing
    code, _, err = run_cli(capsys, "lsp")
    assert code == 2 and "pip install 'torch-gradlint[lsp]'" in err
    assert "pip install 'torch-gradlint[verify]'" in INSTALL_HINT


@pytest.mark.parametrize("flag", ["--help", "check --help"])
def test_help_names_every_way_to_exit_2(capsys, flag):
    """The exit codes in --help follow the error kinds that exit 2 (a new kind must be said)."""
    from gradlint.core.findings import EXIT_ERROR_KINDS

    code, out, _ = run_cli(capsys, *flag.split())
    codes = " ".join(out.split("exit codes:", 1)[1].split("\n\n", 1)[0].split())
    words = {"internal-error": "internal error", "timeout": "ran out of time", "not-python": "not Python"}
    assert code == 0 and set(EXIT_ERROR_KINDS) <= set(words)
    assert all(words[kind] in codes for kind in EXIT_ERROR_KINDS), codes
    assert "130" in codes
