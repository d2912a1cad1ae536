"""The check command's plumbing: stdin, exit codes, bad flags, the run pipeline."""

import io
import json
import sys

import pytest

from ci_snippets import GL002_LOOP, CLEAN_LOOP, codes_by_file, run_cli, snippet, write


def feed(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_stdin_uses_config_of_stdin_filename(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pkg/pyproject.toml", '[tool.gradlint]\nignore = ["GL002"]\n')
    feed(monkeypatch, snippet(GL002_LOOP))
    code, out, _ = run_cli(capsys, "-", "--stdin-filename", "train.py")
    assert code == 1 and codes_by_file(out) == {("train.py", 8, "GL002")}
    feed(monkeypatch, snippet(GL002_LOOP))
    assert run_cli(capsys, "-", "--stdin-filename", "pkg/train.py") == (0, "All checks passed! (1 file checked)\n", "")


def test_stdin_force_exclude(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pyproject.toml", '[tool.gradlint]\nexclude = ["gen"]\n')
    feed(monkeypatch, snippet(GL002_LOOP))
    assert run_cli(capsys, "-", "--stdin-filename", "gen/a.py", "--force-exclude") == (0, "All checks passed! (0 files checked)\n", "")
    feed(monkeypatch, snippet(GL002_LOOP))
    assert run_cli(capsys, "-", "--stdin-filename", "gen/a.py")[0] == 1


def test_stdin_report_unused_noqa(monkeypatch, capsys):
    feed(monkeypatch, snippet(CLEAN_LOOP).replace("opt.step()", "opt.step()  # noqa: GL004"))
    code, out, _ = run_cli(capsys, "-", "--stdin-filename", "t.py", "--report-unused-noqa", "--isolated")
    assert code == 1 and codes_by_file(out) == {("t.py", 9, "GL900")}


def test_stdin_cannot_mix_with_paths(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "-", "a.py")
    assert code == 2 and "standard input" in err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--jobs", "0", "."], "--jobs"),
        (["--no-such-flag", "."], "unrecognized arguments"),
        (["--statistics", "--output-format", "junit", "."], "--statistics"),
    ],
)
def test_usage_errors(tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and expected in err and "Traceback" not in err


def test_internal_error_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    import gradlint.check.engine as engine

    def boom(tasks, options):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(engine, "check_files", boom)
    code, out, err = run_cli(capsys, "a.py")
    assert code == 2 and out == ""
    assert err.startswith("gradlint: internal error: RuntimeError: kaboom") and "Traceback" not in err


def test_pipeline_passes_per_file_settings_to_check_files(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pyproject.toml", '[tool.gradlint]\nper-file-ignores = { "tests/*" = ["GL002"] }\n')
    write(tmp_path, "src/a.py", "")
    write(tmp_path, "tests/b.py", "")
    import gradlint.check.engine as engine

    seen = {}
    real = engine.check_files

    def spy(tasks, options):
        seen.update({path: settings.select for path, settings in tasks})
        seen["options"] = options
        return real(tasks, options)

    monkeypatch.setattr(engine, "check_files", spy)
    assert run_cli(capsys, "--jobs", "1", "--no-cache", ".")[0] == 0
    assert "GL002" in seen["src/a.py"] and "GL002" not in seen["tests/b.py"]
    assert seen["options"].jobs == 1 and seen["options"].cache_dir is None


def test_missing_path_is_reported_in_json(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, "--output-format", "json", "missing.py")
    assert code == 1
    assert json.loads(out)["errors"] == [
        {"path": "missing.py", "kind": "read-error", "message": "no such file or directory", "line": 1, "column": 1,
         "cell": None}
    ]


def test_named_file_that_is_not_python_is_an_error_for_that_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "data.csv", "a,b\n1,2\n")
    write(tmp_path, "README.md", "# Train\n\n    loss.backward()\n    opt.step()\n")
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "data.csv", "README.md", "a.py")
    assert code == 2, err
    lines = out.splitlines()
    assert lines[0].startswith("error: README.md: not a Python file")
    assert lines[1].startswith("error: data.csv: not a Python file")
    assert "syntax error" not in out
    assert "Found 1 problem in 1 file (1 file checked, 2 could not be checked)." in lines
    # alone, and without a gradient event in it (the quick path for clean runs answers no differently)
    code, out, _ = run_cli(capsys, "data.csv")
    assert code == 2 and out.startswith("error: data.csv: not a Python file")


def test_named_stub_and_python_script_are_checked(tmp_path, monkeypatch, capsys):
    """As ruff: a .pyi stub and an extensionless script whose #! names python are Python."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "stub.pyi", snippet(GL002_LOOP))
    write(tmp_path, "train", "#!/usr/bin/env python3\n" + snippet(GL002_LOOP))
    write(tmp_path, "notes", snippet(GL002_LOOP))  # no #! line: not a script anyone runs as Python
    code, out, _ = run_cli(capsys, "stub.pyi", "train", "notes")
    assert code == 2
    assert {(path, rule) for path, _, rule in codes_by_file(out)} == {("stub.pyi", "GL002"), ("train", "GL002")}
    assert "error: notes: not a Python file" in out


def test_walked_directory_skips_other_files_silently(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pkg/data.csv", "a,b\n")
    write(tmp_path, "pkg/a.py", snippet(GL002_LOOP))
    code, out, _ = run_cli(capsys, "pkg")
    assert code == 1 and "not a Python file" not in out and "(1 file checked)" in out
