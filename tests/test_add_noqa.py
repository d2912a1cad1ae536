"""--add-noqa: adopting gradlint in an existing codebase without a red CI on day one."""

from __future__ import annotations

import pytest

from ci_snippets import GL001_LOOP, GL002_LOOP, GL004_LOOP, HEADER, codes_by_file, run_cli, snippet, write
from gradlint.edit.add_noqa import with_noqa
from gradlint.check.engine import check_source
from gradlint.options.settings import Settings


def add_noqa(capsys, *paths):
    return run_cli(capsys, "--no-cache", "--isolated", "--add-noqa", *paths)


def read(path) -> str:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def test_marks_every_finding_and_then_ci_is_green(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    a = write(tmp_path, "a.py", snippet(GL002_LOOP))
    b = write(tmp_path, "pkg/b.py", snippet(GL004_LOOP))
    assert run_cli(capsys, "--no-cache", "--isolated", ".")[0] == 1
    code, out, err = add_noqa(capsys, ".")
    assert (code, out) == (0, "All checks passed! (2 files checked)\n") and err == "Added 2 noqa directives to 2 files.\n"
    assert read(a) == snippet(GL002_LOOP, "  # noqa: GL002")
    assert read(b) == snippet(GL004_LOOP, "  # noqa: GL004")
    assert run_cli(capsys, "--no-cache", "--isolated", ".") == (0, "All checks passed! (2 files checked)\n", "")
    # a new bug still fails
    write(tmp_path, "c.py", snippet(GL001_LOOP))
    code, out, _ = run_cli(capsys, "--no-cache", "--isolated", ".")
    assert code == 1 and codes_by_file(out) == {("c.py", 7, "GL001")}


def test_idempotent(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    a = write(tmp_path, "a.py", snippet(GL002_LOOP))
    add_noqa(capsys, "a.py")
    once = read(a)
    assert add_noqa(capsys, "a.py") == (0, "All checks passed! (1 file checked)\n", "")
    assert read(a) == once


@pytest.mark.parametrize(
    "comment, expected",
    [
        ("  # noqa: E501", "  # noqa: E501, GL002"),
        ("  # keep this comment", "  # keep this comment  # noqa: GL002"),
        ("  # gradlint: ignore[GL004]", "  # gradlint: ignore[GL004, GL002]"),
        ("  # type: ignore[attr-defined]", "  # type: ignore[attr-defined]  # noqa: GL002"),
    ],
)
def test_merges_into_existing_comments(tmp_path, monkeypatch, capsys, comment, expected):
    monkeypatch.chdir(tmp_path)
    a = write(tmp_path, "a.py", snippet(GL002_LOOP, comment))
    assert add_noqa(capsys, "a.py")[0] == 0
    assert read(a) == snippet(GL002_LOOP, expected)


def test_multi_line_call_gets_it_on_the_line_that_is_honoured(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    loop = (
        "for x in range(10):\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n"
        "    torch.nn.utils.clip_grad_norm_(  # tuned\n        model.parameters(),\n        1.0,\n    )\n"
    )
    a = write(tmp_path, "a.py", HEADER + loop)
    assert add_noqa(capsys, "a.py")[0] == 0
    assert "    torch.nn.utils.clip_grad_norm_(  # tuned  # noqa: GL004\n        model.parameters(),\n" in read(a)
    assert run_cli(capsys, "--no-cache", "--isolated", "a.py") == (0, "All checks passed! (1 file checked)\n", "")


def test_keeps_line_endings_and_other_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "a.py"
    path.write_bytes(snippet(GL002_LOOP).replace("\n", "\r\n").encode())
    add_noqa(capsys, "a.py")
    assert path.read_bytes() == snippet(GL002_LOOP, "  # noqa: GL002").replace("\n", "\r\n").encode()


def test_a_line_that_cannot_take_a_comment_stays_reported(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = snippet(GL002_LOOP).replace("    opt.zero_grad()\n", "    opt.zero_grad() \\\n        if True else None\n")
    a = write(tmp_path, "a.py", text)
    assert [f.code for f in check_source(text, "a.py", Settings.default()).findings] == ["GL002"]
    code, out, err = add_noqa(capsys, "a.py")
    assert code == 1 and "GL002" in out and err == ""
    assert read(a) == text


def test_never_inside_a_multi_line_string():
    source = 'torch.nn.utils.clip_grad_norm_(params, float("""1.0\n"""))\n'
    from gradlint.core.findings import Finding, Span

    finding = Finding("a.py", "GL004", "m", Span(1, 1, 2, 6))
    assert with_noqa(source, [finding]) == (source, [])


def test_then_report_unused_noqa_shows_what_was_fixed(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    a = write(tmp_path, "a.py", snippet(GL002_LOOP))
    add_noqa(capsys, "a.py")
    fixed = read(a).replace("    opt.zero_grad()  # noqa: GL002\n    opt.step()\n", "    opt.step()\n    opt.zero_grad()  # noqa: GL002\n")
    write(tmp_path, "a.py", fixed)
    code, out, _ = run_cli(capsys, "--no-cache", "--isolated", "--report-unused-noqa", "a.py")
    assert code == 1 and codes_by_file(out) == {("a.py", 9, "GL900")}


@pytest.mark.parametrize("extra", [["-"], ["--fix", "a.py"], ["--report-unused-noqa", "a.py"]])
def test_usage_errors(tmp_path, monkeypatch, capsys, extra):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "--add-noqa", *extra)
    assert code == 2 and out == "" and "--add-noqa" in err
