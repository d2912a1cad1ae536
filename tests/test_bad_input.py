"""Bad input never crashes the run and never hides the other files' findings."""

import os
import subprocess
import sys

import pytest

from gradlint.check import engine
from gradlint.core.findings import INTERNAL_ERROR, READ_ERROR, SYNTAX_ERROR
from gradlint.options.settings import Settings

BUGGY = """\
import torch
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.zero_grad()
    opt.step()
"""


def run_cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "gradlint", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "good.py").write_text(BUGGY)
    (tmp_path / "syntax.py").write_text("for x in loader:\n    opt.step(\n")
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\nopt.step()\n")
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02step(backward")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "only_comments.py").write_text("# nothing here\n")
    return tmp_path


def test_each_bad_file_gets_one_line_and_the_rest_is_checked(tree):
    proc = run_cli(".", cwd=tree)
    out = proc.stdout
    assert "Traceback" not in out + proc.stderr
    assert proc.returncode == 1
    assert "good.py:6:5: GL002" in out
    # a syntax error has a place (`syntax.py:2:5: error: ...`); the others concern the path (`error: binary.py: ...`)
    lines = {line.split(":", 1)[0]: line for line in out.splitlines() if ": error: " in line}
    lines.update({line.split(": ", 2)[1]: line for line in out.splitlines() if line.startswith("error: ")})
    assert set(lines) == {"syntax.py", "latin1.py", "binary.py"}
    assert "binary" in lines["binary.py"]
    assert "UTF-8" in lines["latin1.py"]
    assert "empty.py" not in out and "only_comments.py" not in out


def test_syntax_error_reports_line_and_column():
    result = engine.check_source("for x in loader:\n    opt.step(\n", "s.py", Settings.default())
    (error,) = result.errors
    assert error.kind == SYNTAX_ERROR
    assert error.line == 2 or error.line == 3  # the unclosed call; libcst reports where it notices
    assert error.col >= 1


def test_declared_encoding_is_honoured():
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n".encode("latin-1") + BUGGY.encode()
    result = engine.check_source(source, "enc.py", Settings.default())
    assert not result.errors
    assert [f.code for f in result.findings] == ["GL002"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file without read permission")
def test_unreadable_file(tmp_path):
    path = tmp_path / "secret.py"
    path.write_text(BUGGY)
    path.chmod(0)
    result = engine.check_file(str(path), Settings.default())
    assert result.errors[0].kind == READ_ERROR


def test_unreadable_file_as_root_via_directory(tmp_path):
    """A path that cannot be opened (a directory named like a file) is a read error."""
    (tmp_path / "dir.py").mkdir()
    result = engine.check_file(str(tmp_path / "dir.py"), Settings.default())
    assert result.errors and result.errors[0].kind == READ_ERROR


def test_symlink_loop_is_reported_once_and_the_walk_ends(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(BUGGY)
    os.symlink(tmp_path, tmp_path / "pkg" / "loop")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    proc = run_cli(".", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.count("GL002") == 1
    assert "symbolic link loop" in proc.stdout
    assert "dangling.py" in proc.stdout and "broken symbolic link" in proc.stdout


def test_missing_path_is_reported(tmp_path):
    proc = run_cli("nope.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "nope.py" in proc.stdout and "no such file" in proc.stdout


def test_huge_file_is_refused_with_a_diagnostic(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 1000)
    path = tmp_path / "big.py"
    path.write_text(BUGGY * 40)
    result = engine.check_file(str(path), Settings.default())
    assert result.errors[0].kind == READ_ERROR and "too large" in result.errors[0].message


def test_deeply_nested_code_does_not_crash():
    source = "x = " + "(" * 300 + "1" + ")" * 300 + "\n" + BUGGY
    result = engine.check_source(source, "deep.py", Settings.default())
    assert all(e.kind != INTERNAL_ERROR for e in result.errors)


def test_internal_error_names_the_file_and_the_run_goes_on(tmp_path, monkeypatch):
    from gradlint.rules import registry

    rules = registry.all_rules()
    boom = registry.Rule(**{**rules[0].__dict__, "check": lambda model: 1 / 0})
    monkeypatch.setattr(registry, "all_rules", lambda: (boom,) + rules[1:])
    (tmp_path / "a.py").write_text(BUGGY)
    run = engine.check_paths([str(tmp_path)], Settings.default())
    (result,) = run.results
    assert result.errors[0].kind == INTERNAL_ERROR
    assert "ZeroDivisionError" in result.errors[0].message
    assert run.exit_code() == 2
