"""[tool.gradlint]: discovery, precedence against flags, nested files, per-file-ignores, bad input."""

import os

import pytest

from ci_snippets import GL001_LOOP, GL002_LOOP, GL004_LOOP, codes_by_file, run_cli, snippet, write
from gradlint.options.config import ConfigError, Resolver, glob_matches, settings_for_file


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def pyproject(root, relpath, body):
    return write(root, relpath, "[project]\nname = 'x'\n\n[tool.gradlint]\n" + body)


# --- the nearest file ---------------------------------------------------------------


def test_config_ignore_applies(project, capsys):
    write(project, "train.py", snippet(GL002_LOOP))
    assert run_cli(capsys, "train.py")[0] == 1
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    code, out, err = run_cli(capsys, "train.py")
    assert (code, out, err) == (0, "All checks passed! (1 file checked)\n", "")


def test_nested_pyproject_wins_entirely(project, capsys):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "top.py", snippet(GL002_LOOP))
    write(project, "sub/deep/inner.py", snippet(GL002_LOOP))
    # the nearer table has no ignore: no inheritance from the outer one
    pyproject(project, "sub/pyproject.toml", 'extend-select = ["GL101"]\n')
    code, out, _ = run_cli(capsys, ".")
    assert code == 1
    assert codes_by_file(out) == {("sub/deep/inner.py", 8, "GL002")}


def test_pyproject_without_table_is_passed_over(project, capsys):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "pkg/pyproject.toml", "[project]\nname = 'pkg'\n")
    write(project, "pkg/train.py", snippet(GL002_LOOP))
    assert run_cli(capsys, "pkg/train.py")[0] == 0


def test_settings_for_file_is_the_nearest_config_without_flags(project):
    pyproject(project, "pyproject.toml", 'select = ["GL004"]\nstep-functions = ["my_step"]\n')
    write(project, "a/train.py", "")
    settings = settings_for_file(str(project / "a" / "train.py"))
    assert settings.select == frozenset({"GL004"})
    assert settings.wrappers.step_functions == ("my_step",)


def test_settings_for_file_sees_edits(project):
    path = pyproject(project, "pyproject.toml", 'select = ["GL004"]\n')
    assert settings_for_file(str(project / "x.py")).select == {"GL004"}
    pyproject(project, "pyproject.toml", 'select = ["GL002", "GL004"]\n')
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert settings_for_file(str(project / "x.py")).select == {"GL002", "GL004"}


# --- flags over the file ------------------------------------------------------------


def test_flag_select_replaces_file_selection(project, capsys):
    pyproject(project, "pyproject.toml", 'select = ["GL004"]\n')
    write(project, "a.py", snippet(GL002_LOOP))
    write(project, "b.py", snippet(GL004_LOOP))
    assert codes_by_file(run_cli(capsys, ".")[1]) == {("b.py", 10, "GL004")}
    assert codes_by_file(run_cli(capsys, "--select", "GL002", ".")[1]) == {("a.py", 8, "GL002")}


def test_flag_ignore_adds_to_file_selection(project, capsys):
    pyproject(project, "pyproject.toml", 'select = ["GL002", "GL004"]\n')
    write(project, "a.py", snippet(GL002_LOOP))
    write(project, "b.py", snippet(GL004_LOOP))
    assert codes_by_file(run_cli(capsys, "--ignore", "GL004", ".")[1]) == {("a.py", 8, "GL002")}


def test_flag_extend_select_keeps_file_ignore(project, capsys):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "a.py", snippet(GL002_LOOP))
    write(project, "b.py", snippet(GL004_LOOP))
    assert codes_by_file(run_cli(capsys, "--extend-select", "GL1", ".")[1]) == {("b.py", 10, "GL004")}


def test_isolated_ignores_files(project, capsys):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "a.py", snippet(GL002_LOOP))
    assert run_cli(capsys, "a.py")[0] == 0
    assert codes_by_file(run_cli(capsys, "--isolated", "a.py")[1]) == {("a.py", 8, "GL002")}


def test_explicit_config_file(project, capsys):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "ci/gradlint.toml", 'select = ["GL002"]\n')
    write(project, "ci/pyproject.toml", '[tool.gradlint]\nselect = ["GL004"]\n')
    write(project, "a.py", snippet(GL002_LOOP))
    write(project, "b.py", snippet(GL004_LOOP))
    assert codes_by_file(run_cli(capsys, "--config", "ci/gradlint.toml", ".")[1]) == {("a.py", 8, "GL002")}
    assert codes_by_file(run_cli(capsys, "--config", "ci/pyproject.toml", ".")[1]) == {("b.py", 10, "GL004")}


def test_config_and_isolated_conflict(project, capsys):
    write(project, "c.toml", "")
    code, _, err = run_cli(capsys, "--config", "c.toml", "--isolated", ".")
    assert code == 2 and "--isolated" in err


# --- per-file-ignores and excludes --------------------------------------------------


def test_per_file_ignores_relative_to_the_config(project, capsys):
    pyproject(project, "pyproject.toml", 'per-file-ignores = { "tests/*" = ["GL002"], "scripts/one.py" = ["GL0"] }\n')
    for rel in ("tests/t.py", "src/t.py", "scripts/one.py", "scripts/two.py"):
        write(project, rel, snippet(GL002_LOOP))
    out = run_cli(capsys, ".")[1]
    assert codes_by_file(out) == {("src/t.py", 8, "GL002"), ("scripts/two.py", 8, "GL002")}
    # the same per-file-ignores when run from a subdirectory
    os.chdir(project / "tests")
    assert run_cli(capsys, ".")[0] == 0


def test_exclude_walked_and_forced(project, capsys):
    pyproject(project, "pyproject.toml", 'exclude = ["legacy"]\nextend-exclude = ["*_old.py"]\n')
    write(project, "legacy/a.py", snippet(GL002_LOOP))
    write(project, "src/b_old.py", snippet(GL002_LOOP))
    write(project, "src/c.py", snippet(GL002_LOOP))
    assert codes_by_file(run_cli(capsys, ".")[1]) == {("src/c.py", 8, "GL002")}
    # a named file is checked unless --force-exclude (what pre-commit needs)
    assert run_cli(capsys, "legacy/a.py", "src/b_old.py")[0] == 1
    code, out, _ = run_cli(capsys, "--force-exclude", "legacy/a.py", "src/b_old.py", "src/c.py")
    assert codes_by_file(out) == {("src/c.py", 8, "GL002")}


def test_cli_exclude_replaces_file_exclude(project, capsys):
    pyproject(project, "pyproject.toml", 'exclude = ["legacy"]\nextend-exclude = ["gen"]\n')
    write(project, "legacy/a.py", snippet(GL002_LOOP))
    write(project, "gen/b.py", snippet(GL002_LOOP))
    write(project, "src/c.py", snippet(GL002_LOOP))
    out = run_cli(capsys, "--exclude", "src", ".")[1]
    assert codes_by_file(out) == {("legacy/a.py", 8, "GL002")}


def test_wrappers_make_events(project, capsys):
    body = snippet(GL001_LOOP).replace("loss.backward()", "backward_scaled(loss)")
    write(project, "a.py", body)
    assert run_cli(capsys, "a.py")[0] == 0  # an unknown helper is no event
    pyproject(project, "pyproject.toml", 'backward-functions = ["backward_scaled"]\n')
    assert codes_by_file(run_cli(capsys, "a.py")[1]) == {("a.py", 7, "GL001")}


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("legacy", "legacy/a.py", True),
        ("legacy", "src/legacy/a.py", True),
        ("legacy", "legacyx/a.py", False),
        ("legacy/", "legacy", True),
        ("src/legacy", "src/legacy/a.py", True),
        ("src/legacy", "legacy/a.py", False),
        ("tests/*", "tests/unit/t.py", True),
        ("*_old.py", "src/b_old.py", True),
        ("./src/*.py", "src/a.py", True),
    ],
)
def test_glob_matches(pattern, path, expected):
    assert glob_matches(pattern, path) is expected


# --- bad configuration --------------------------------------------------------------


@pytest.mark.parametrize(
    "body, expected",
    [
        ('selct = ["GL001"]\n', ["unknown key 'selct'", "did you mean 'select'"]),
        ('extend_select = ["GL001"]\n', ["unknown key 'extend_select'", "did you mean 'extend-select'"]),
        ('select = "GL001"\n', ["select", "expected a list of rule codes", "got a string"]),
        ("ignore = [1]\n", ["ignore", "a list containing an integer"]),
        ('select = ["GL999"]\n', ["select", "unknown rule code or prefix: 'GL999'"]),
        ('per-file-ignores = ["tests/*"]\n', ["per-file-ignores", "expected a table"]),
        ('per-file-ignores = { "t/*" = "GL001" }\n', ["per-file-ignores 't/*'", "expected a list"]),
        ("exclude = true\n", ["exclude", "expected a list of glob patterns", "got a boolean"]),
        ("step-functions = [{a = 1}]\n", ["step-functions", "a list containing a table"]),
        ('file-timeout = "30"\n', ["file-timeout", "expected a number of seconds from 0.001 to 86400", "got a string"]),
        ("file-timeout = 0\n", ["file-timeout", "expected a number of seconds from 0.001 to 86400", "got 0"]),
        ("file-timeout = true\n", ["file-timeout", "got a boolean"]),
        # issue 34: odd values that ended the run with an internal error (OverflowError from the
        # timer, or the timer firing before its guard was in place)
        ("file-timeout = inf\n", ["file-timeout", "from 0.001 to 86400", "got inf"]),
        ("file-timeout = 1e300\n", ["file-timeout", "from 0.001 to 86400", "got 1e+300"]),
        ("file-timeout = 99999999999999999999\n", ["file-timeout", "got 99999999999999999999"]),
        ("file-timeout = 1e-300\n", ["file-timeout", "got 1e-300"]),
        ("file-timeout = 1e-7\n", ["file-timeout", "got 1e-07"]),
        ("file-timeout = -inf\n", ["file-timeout", "got -inf"]),
        ("file-timeout = 1979-05-27\n", ["file-timeout", "got date"]),
        ('per-file-ignores = { "t/*" = { a = "GL001" } }\n', ["per-file-ignores 't/*'", "got a table"]),
        # a value quoted in a message is shortened, not reprinted whole
        ('select = ["GL' + "0" * 100_000 + '"]\n', ["select", "unknown rule code or prefix: 'GL000", "(100004 characters)"]),
        ("ignore = [1" + "0" * 4000 + "]\n", ["ignore", "an integer of about 4000 digits"]),
    ],
)
def test_bad_config_is_a_clear_error(project, capsys, body, expected):
    path = pyproject(project, "pyproject.toml", body)
    write(project, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "a.py")
    assert code == 2 and out == ""
    assert path in err and "[tool.gradlint]" in err
    for text in expected:
        assert text in err
    assert "Traceback" not in err and len(err) < 600
    assert f"{path}:5:" in err  # the key's line
    with pytest.raises(ConfigError):
        settings_for_file(str(project / "a.py"))


@pytest.mark.parametrize(
    "body, position, reason",
    [
        ("select = " + "[" * 1000 + "]" * 1000 + "\n", "5:10", "nested too deeply to read"),
        ("[tool.other]\nx = " + "[" * 1000 + "]" * 1000 + "\n", "6:5", "nested too deeply to read"),  # not even ours
        ("x = " + "{ a = " * 1000 + "1" + " }" * 1000 + "\n", "5:5", "nested too deeply to read"),
        ('s = "[[[["\n# [[[[[\nx = ' + "[" * 1000 + "]" * 1000 + "\n", "7:5", "nested too deeply to read"),
        ("file-timeout = 1" + "0" * 5000 + "\n", "5:16", "a number too long to read"),
    ],
    ids=["deep-array", "deep-array-elsewhere", "deep-inline-table", "strings-and-comments", "5000-digits"],
)
def test_toml_that_tomllib_cannot_read_is_a_configuration_error(project, capsys, body, position, reason):
    """They ended the run with `internal error: RecursionError` (or a ValueError about digits)."""
    path = pyproject(project, "pyproject.toml", body)
    write(project, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "a.py")
    assert (code, out) == (2, "")
    assert err.startswith(f"gradlint: error: {path}:{position}: invalid TOML: {reason}") and err.count("\n") == 1


@pytest.mark.parametrize("value", ["1e300", "inf", "nan", "0", "1e-9", "-1", "100000"])
def test_file_timeout_on_the_command_line_is_bounded_too(project, capsys, value):
    write(project, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "--file-timeout", value, "a.py")
    assert (code, out) == (2, "") and "from 0.001 to 86400" in err and "Traceback" not in err


def test_a_time_limit_that_runs_out_at_once_is_still_a_timeout_of_that_file():
    """The clock started before its guard: a limit that ran out in between escaped as _TimeUp."""
    from gradlint.core.findings import FileResult
    from gradlint.run.pool import guarded
    from gradlint.options.settings import Settings

    def work(path, settings):
        return FileResult(path), None

    for _ in range(300):
        result, _ = guarded(work, "a.py", Settings(file_timeout=1e-6))
        assert [e.kind for e in result.errors] in ([], ["timeout"])


def test_invalid_toml_names_path_and_line(project, capsys):
    path = write(project, "pyproject.toml", "[project]\nname = 'x'\n[tool.gradlint]\nselect = [\"GL001\"\nignore = 3\n")
    write(project, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "a.py")
    assert code == 2 and out == ""
    assert f"{path}:5:1: invalid TOML: " in err and "(at line" not in err


@pytest.mark.parametrize(
    "text, position",
    [
        ('[project]\nname = "x"\n[tool.gradlint]\nselect = ["GL001"', "4:18"),  # an array never closed
        ("[tool.gradlint", "1:15"),  # a table header never closed
        ("[tool.gradlint]\nselect = ", "2:10"),  # a value missing at the very end
    ],
)
def test_invalid_toml_at_end_of_document_names_line_and_column(project, capsys, text, position):
    path = write(project, "pyproject.toml", text)
    write(project, "a.py", snippet(GL002_LOOP))
    code, out, err = run_cli(capsys, "a.py")
    assert code == 2 and out == ""
    assert f"{path}:{position}: invalid TOML: " in err and "end of document" not in err


@pytest.mark.parametrize(
    "text, position",
    [
        ('[project]\nname = "x"\n\n[tool.gradlint]\nignore = ["GL002"]\n  select = "GL001"\n', "6:3"),
        ('[tool.gradlint]\nselect = ["GL001"]\nselct = ["GL001"]\n', "3:1"),
        ('[tool.gradlint]\n[tool.gradlint.per-file-ignores]\n"t/*" = "GL001"\n', "2:1"),
        ('[tool.other]\nselect = 1\n[tool.gradlint]\n"select" = 1\n', "4:1"),
    ],
)
def test_bad_key_is_reported_with_line_and_column(project, capsys, text, position):
    path = write(project, "pyproject.toml", text)
    write(project, "a.py", snippet(GL002_LOOP))
    code, _, err = run_cli(capsys, "a.py")
    assert code == 2 and err.startswith(f"gradlint: error: {path}:{position}: [tool.gradlint]"), err


def test_bad_key_in_a_config_file_of_its_own(project, capsys):
    path = write(project, "ci/gradlint.toml", '# shared\nexclude = ["a"]\nignore = 7\n')
    write(project, "a.py", snippet(GL002_LOOP))
    code, _, err = run_cli(capsys, "--config", path, "a.py")
    assert code == 2 and f"{os.path.abspath(path)}:3:1: [tool.gradlint] ignore: expected a list" in err, err


def test_broken_pyproject_above_a_configured_one_is_not_read(project, capsys):
    write(project, "pyproject.toml", "not toml at all [[[\n")
    pyproject(project, "sub/pyproject.toml", 'ignore = ["GL002"]\n')
    write(project, "sub/a.py", snippet(GL002_LOOP))
    assert run_cli(capsys, "sub/a.py")[0] == 0


def test_tool_gradlint_not_a_table(project, capsys):
    write(project, "pyproject.toml", "[tool]\ngradlint = 3\n")
    write(project, "a.py", "")
    code, _, err = run_cli(capsys, "a.py")
    assert code == 2 and "expected a table, got an integer" in err


def test_missing_config_file(project, capsys):
    code, _, err = run_cli(capsys, "--config", "nope.toml", ".")
    assert code == 2 and "nope.toml" in err


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_on_command_line(project, capsys, flag):
    code, out, err = run_cli(capsys, flag, "GL999", ".")
    assert code == 2 and out == ""
    assert "GL999" in err and flag in err


def test_resolver_caches_directory_lookups(project, monkeypatch):
    pyproject(project, "pyproject.toml", 'ignore = ["GL002"]\n')
    for name in ("a", "b", "c"):
        write(project, f"pkg/{name}.py", "")
    resolver = Resolver()
    calls = []
    real_isfile = os.path.isfile
    monkeypatch.setattr(os.path, "isfile", lambda p: calls.append(p) or real_isfile(p))
    for name in ("a", "b", "c"):
        resolver.settings_for(str(project / "pkg" / f"{name}.py"))
    assert len(calls) == 2  # pkg/pyproject.toml, then ./pyproject.toml, once


def test_force_exclude_skips_named_files_in_builtin_skipped_dirs(project, capsys):
    write(project, "build/lib/a.py", snippet(GL002_LOOP))
    write(project, "src/b.py", snippet(GL002_LOOP))
    assert run_cli(capsys, "build/lib/a.py")[0] == 1  # named: checked
    out = run_cli(capsys, "--force-exclude", "build/lib/a.py", "src/b.py")[1]
    assert codes_by_file(out) == {("src/b.py", 8, "GL002")}
    # a directory named explicitly is still walked
    assert codes_by_file(run_cli(capsys, "build")[1]) == {("build/lib/a.py", 8, "GL002")}


def test_file_timeout_comes_from_the_nearest_table_and_the_command_line_wins(project):
    from gradlint.options.config import Overrides, Resolver
    from gradlint.options.settings import DEFAULT_FILE_TIMEOUT

    pyproject(project, "pyproject.toml", "file-timeout = 90\n")
    write(project, "a.py", snippet(GL002_LOOP))
    path = str(project / "a.py")
    assert Resolver().settings_for(path).file_timeout == 90
    assert Resolver(Overrides(file_timeout=5)).settings_for(path).file_timeout == 5
    assert Resolver(isolated=True).settings_for(path).file_timeout == DEFAULT_FILE_TIMEOUT == 30
    assert Resolver().settings_for(path).fingerprint() == Resolver(isolated=True).settings_for(path).fingerprint()
