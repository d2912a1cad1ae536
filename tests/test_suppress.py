"""Every suppression form, --show-suppressed and --report-unused-noqa."""

import json

import pytest

from ci_snippets import GL002_LOOP, GL004_LOOP, CLEAN_LOOP, codes_by_file, run_cli, snippet, write
from gradlint.check.engine import check_source
from gradlint.options.settings import Settings
from gradlint.check.suppress import directives, line_suppressions


def check(text, select=None):
    settings = Settings.default() if select is None else Settings(select=frozenset(select))
    result = check_source(text, "train.py", settings)
    assert not result.errors
    return result


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: GL002",
        "  # noqa:GL002",
        "  # NOQA: gl002",
        "  # noqa: GL004, GL002",
        "  # noqa: E501,GL002",
        "  # noqa: GL002 the step is in a closure",
        "  # noqa",
        "  # gradlint: ignore[GL002]",
        "  # gradlint: ignore[GL004, GL002]",
        "  # gradlint: ignore",
        "  # type: ignore  # noqa: GL002",
    ],
)
def test_each_form_suppresses(comment):
    assert [f.code for f in check(snippet(GL002_LOOP)).findings] == ["GL002"]
    result = check(snippet(GL002_LOOP, comment))
    assert result.findings == []
    assert [(f.code, f.line) for f in result.suppressed] == [("GL002", 8)]


@pytest.mark.parametrize(
    "comment",
    [
        "  # noqa: GL004",  # another code
        "  # noqa: E501",  # another tool's code only
        "  # gradlint: ignore[GL001]",
        "  # noqa-GL002",  # not a directive
        '; s = "# noqa"',  # inside a string, not a comment
    ],
)
def test_forms_that_do_not_suppress(comment):
    result = check(snippet(GL002_LOOP, comment))
    assert [(f.code, f.line) for f in result.findings] == [("GL002", 8)]
    assert result.suppressed == []


def test_noqa_on_another_line_does_not_suppress():
    text = snippet(GL002_LOOP).replace("    loss.backward()\n", "    loss.backward()  # noqa: GL002\n")
    assert [f.line for f in check(text).findings] == [8]


def test_multiline_call_is_suppressed_on_its_first_line():
    first = snippet(GL004_LOOP).replace(
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "    torch.nn.utils.clip_grad_norm_(  # noqa: GL004\n        model.parameters(),\n        1.0,\n    )",
    )
    assert check(first).findings == [] and [f.line for f in check(first).suppressed] == [10]
    last = snippet(GL004_LOOP).replace(
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
        "    torch.nn.utils.clip_grad_norm_(\n        model.parameters(),\n        1.0,\n    )  # noqa: GL004",
    )
    assert [f.line for f in check(last).findings] == [10]


def test_directive_table():
    source = "x = 1  # noqa: GL001, GL004\ny = 2  # noqa\nz = '# noqa: GL002'\nw = 3  # gradlint: ignore[GL005]\n"
    assert line_suppressions(source) == {1: {"GL001", "GL004"}, 2: {"*"}, 4: {"GL005"}}
    assert [(d.line, d.col) for d in directives(source)] == [(1, 8), (2, 8), (4, 8)]


def test_untokenizable_source_falls_back_to_lines():
    assert line_suppressions("x = (  # noqa: GL001\n") == {1: {"GL001"}}


# --- through the CLI ----------------------------------------------------------------


def test_show_suppressed_text_and_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "train.py", snippet(GL002_LOOP, "  # noqa: GL002"))
    assert run_cli(capsys, "train.py") == (0, "All checks passed! (1 file checked)\n", "")
    code, out, _ = run_cli(capsys, "--show-suppressed", "train.py")
    assert code == 0
    assert "train.py:8:5: GL002 " in out and out.splitlines()[0].endswith("(suppressed)")
    assert "1 finding suppressed" in out
    code, out, _ = run_cli(capsys, "--show-suppressed", "--output-format", "json", "train.py")
    data = json.loads(out)
    assert data["findings"] == [] and [(s["code"], s["line"]) for s in data["suppressed"]] == [("GL002", 8)]


def test_report_unused_noqa(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = snippet(CLEAN_LOOP).replace("    opt.step()\n", "    opt.step()  # noqa: GL004, E501\n")
    text += "print(1)  # noqa\nprint(2)  # noqa: GL101\nprint(3)  # gradlint: ignore[GL998]\n"
    write(tmp_path, "clean.py", text)
    write(tmp_path, "used.py", snippet(GL002_LOOP, "  # noqa: GL002"))
    assert run_cli(capsys, ".")[0] == 0  # off by default
    code, out, _ = run_cli(capsys, "--report-unused-noqa", ".")
    assert code == 1
    # GL101 is not enabled (so its noqa may serve another run); a bare noqa may serve another tool
    assert codes_by_file(out) == {("clean.py", 9, "GL900"), ("clean.py", 12, "GL900")}
    lines = out.splitlines()
    assert any("clean.py:9:17: GL900 unused suppression of GL004" in line for line in lines)
    assert any("clean.py:12:" in line and "unknown rule code GL998" in line for line in lines)
    # with GL101 enabled its noqa is unused too
    out = run_cli(capsys, "--report-unused-noqa", "--extend-select", "GL101", "clean.py")[1]
    assert ("clean.py", 11, "GL900") in codes_by_file(out)
