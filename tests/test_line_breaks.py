"""Lines are counted as Python counts them: only \\n, \\r\\n and \\r end a line.

A form feed (a page break), a Unicode line separator or \\x85 in a comment or a
docstring above a finding is an ordinary character of its line for CPython,
libcst, tokenize, the LSP and every editor; `str.splitlines` ends a line there.
Each place that maps a position to text is checked with each such character
before a finding: the text a message quotes, the statement a fix moves, the
line a `# noqa` is read from and written to, a notebook cell's lines, the
language server's syntax-error range, `--diff`, a configuration key's line.
"""

from __future__ import annotations

import json

import pytest

from gradlint.core import source_lines
from gradlint.check.engine import check_source
from gradlint.fix import apply
from gradlint.rules.registry import all_rules
from gradlint.options.settings import Settings

EVERYTHING = Settings(select=frozenset(rule.code for rule in all_rules() if rule.default))

# What str.splitlines splits at and Python does not.
BREAKS = ["\x0c", "\u2028", "\u2029", "\x85", "\x0b", "\x1c", "\x1d", "\x1e"]
IDS = ["form-feed", "U+2028", "U+2029", "U+0085", "vt", "x1c", "x1d", "x1e"]

LOOP = """\
import torch
import torch.nn as nn

# page one{brk}
{page}
'''A docstring{brk}with a separator.'''
for x, y in batches:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
"""


def plain() -> str:
    return LOOP.format(brk="", page="")


def with_break(brk: str) -> str:
    """`brk` in a comment and in a docstring, and a page break on a line of its own."""
    return LOOP.format(brk=brk, page="\x0c")


def gl002(text: str):
    (finding,) = [f for f in check_source(text, "t.py", EVERYTHING).findings if f.code == "GL002"]
    return finding


def test_lines_split_only_where_python_does():
    text = "a\x0cb\nc\u2028d\r\ne\rf\x85"
    assert source_lines.lines(text) == ["a\x0cb", "c\u2028d", "e", "f\x85"]
    assert source_lines.lines(text, keepends=True) == ["a\x0cb\n", "c\u2028d\r\n", "e\r", "f\x85"]
    assert source_lines.lines("x\ny\n") == "x\ny\n".splitlines()
    assert source_lines.lines("") == []


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_the_message_quotes_the_right_calls(brk):
    finding, expected = gl002(with_break(brk)), gl002(plain())
    assert finding.message == expected.message
    assert "optimizer.zero_grad()" in finding.message and "loss.backward()" in finding.message
    assert finding.span == expected.span


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_the_fix_moves_the_right_statement(brk):
    text = with_break(brk)
    finding = gl002(text)
    assert finding.fix is not None
    fixed = apply(text, finding.fix)
    assert fixed.replace(brk, "").replace("\x0c", "") == apply(plain(), gl002(plain()).fix)
    assert fixed.count(brk) == text.count(brk)
    assert check_source(fixed, "t.py", EVERYTHING).findings == []


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_a_noqa_after_a_break_silences_its_line(brk):
    text = with_break(brk).replace("optimizer.zero_grad()\n", "optimizer.zero_grad()  # noqa: GL002\n")
    result = check_source(text, "t.py", EVERYTHING)
    assert [f.code for f in result.suppressed] == ["GL002"] and result.findings == []


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_the_fallback_scan_of_directives_counts_lines_as_python(brk):
    """Text that tokenize rejects is scanned line by line for directives."""
    from gradlint.check.suppress import line_suppressions

    text = f"x = 1  # {brk} page\ny = 2  # noqa: GL002\n'''never closed\n"
    assert line_suppressions(text) == {2: {"GL002"}}


def test_a_noqa_in_a_file_of_carriage_returns_silences_its_line():
    """Old Mac line ends: tokenize read the whole file as one line, and no directive counted."""
    text = plain().replace("optimizer.zero_grad()\n", "optimizer.zero_grad()  # noqa: GL002\n").replace("\n", "\r")
    result = check_source(text, "t.py", EVERYTHING)
    assert [f.code for f in result.suppressed] == ["GL002"] and result.findings == []


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_add_noqa_marks_the_finding_line(brk):
    from gradlint.edit.add_noqa import with_noqa

    text = with_break(brk)
    edited, marked = with_noqa(text, [gl002(text)])
    assert len(marked) == 1
    assert "    optimizer.zero_grad()  # noqa: GL002\n" in edited
    assert edited.replace("  # noqa: GL002", "") == text


@pytest.mark.parametrize("brk", ["\x0c", "\u2028"], ids=["form-feed", "U+2028"])
def test_add_noqa_on_disk(brk, tmp_path, monkeypatch, capsys):
    from ci_snippets import run_cli

    path = tmp_path / "train.py"
    path.write_text(with_break(brk), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli(capsys, "--add-noqa", "--no-cache", "train.py")
    assert code == 0
    assert path.read_text(encoding="utf-8") == with_break(brk).replace(
        "optimizer.zero_grad()\n", "optimizer.zero_grad()  # noqa: GL002\n"
    )


@pytest.mark.parametrize("brk", ["\x0c", "\u2028"], ids=["form-feed", "U+2028"])
def test_diff_shows_the_break_inside_its_line(brk, tmp_path, monkeypatch, capsys):
    from ci_snippets import run_cli

    (tmp_path / "train.py").write_text(with_break(brk), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, out, _ = run_cli(capsys, "--diff", "--no-cache", "train.py")
    assert "No newline at end of file" not in out
    assert "+    optimizer.step()\n" in out and "-    optimizer.step()\n" in out


@pytest.mark.parametrize("brk", BREAKS, ids=IDS)
def test_a_syntax_error_range_in_the_editor(brk):
    from gradlint.lsp.documents import check_document

    text = f"# {brk} page\nfor x in data:\n    f(x)\n    loss.backward(x)))\n"
    (diagnostic,) = check_document(text, "t.py", "file:///t.py", EVERYTHING).diagnostics
    assert diagnostic["code"] == "syntax-error"
    assert diagnostic["range"]["start"] == {"line": 3, "character": 20}
    assert diagnostic["range"]["end"] == {"line": 3, "character": 21}


def _notebook(*cells: str) -> str:
    return json.dumps(
        {
            "cells": [
                {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                 "source": source_lines.lines(c, keepends=True)}
                for c in cells
            ],
            "metadata": {},
            "nbformat": 4,
            "nbformat_minor": 5,
        },
        indent=1,
    )


@pytest.mark.parametrize("brk", ["\x0c", "\u2028"], ids=["form-feed", "U+2028"])
def test_a_notebook_cell_with_a_break(brk, tmp_path, monkeypatch, capsys):
    from ci_snippets import run_cli

    setup = "import torch\nimport torch.nn as nn\n"
    path = tmp_path / "nb.ipynb"
    path.write_text(_notebook(setup, with_break(brk)), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    _, out, _ = run_cli(capsys, "--no-cache", "--output-format", "json", "nb.ipynb")
    (finding,) = json.loads(out)["findings"]
    assert finding["cell"] == 2
    assert finding["line"] == source_lines.lines(with_break(brk)).index("    optimizer.zero_grad()") + 1
    assert "optimizer.zero_grad() discards the gradients of loss.backward()" in finding["message"]
    assert run_cli(capsys, "--fix", "--no-cache", "nb.ipynb")[0] == 0
    cells = [c["source"] for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    fixed = "".join(cells[1])
    assert fixed == apply(with_break(brk), gl002(with_break(brk)).fix)
    assert len(cells[1]) == len(source_lines.lines(with_break(brk))), "the cell's list keeps one item per line"


@pytest.mark.parametrize("brk", ["\u2028", "\x85"], ids=["U+2028", "U+0085"])
def test_a_configuration_key_after_a_break(brk):
    from gradlint.options.config_position import key_position

    text = f"[tool.gradlint]\n# {brk} notes\nselect = 3\n"
    assert key_position(text, "select", top_level=False) == (3, 1)
