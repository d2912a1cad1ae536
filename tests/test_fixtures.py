"""The fixtures/ corpus: realistic training scripts marked with `# expect: CODE`.

One table drives everything: the marks in each file.  The checker's findings
over a file must equal its marks exactly (same codes, same lines, nothing
more), through the engine and through the installed CLI; every default rule
has at least two wrong and two right fixtures; and every fixture really runs
on the CPU (the verifier executes them, so they must).

Running each fixture as its own `python path` costs a torch import (about
3 s of CPU) per file, so that test is marked `slow` and only runs when
selected: `pytest -m slow tests/test_fixtures.py`.  The default run proves
the same thing faster by running every fixture in one child process that
imports torch once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from gradlint.check.engine import check_source
from gradlint.options.settings import Settings
from installed import require
from marks import expected_marks, found_marks

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
DEFAULT_RULES = [f"GL00{n}" for n in range(1, 9)]
# Owned by the verifier: checked for marks like every fixture, but its scripts are not ours to run.
NOT_RUN = {"verify", "_shims", "not_torch", "newer_syntax"}  # newer_syntax: Python 3.12 code, torch is on 3.11
RUN_TIMEOUT = 300  # seconds for the whole in-process run; generous because CI machines are shared

ALL_FIXTURES = sorted(FIXTURES.rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def is_clean_fixture(path: Path) -> bool:
    parts = path.relative_to(FIXTURES).parts
    return parts[0] in ("idioms", "not_torch") or path.name.startswith("right_")


def runnable(path: Path) -> bool:
    parts = path.relative_to(FIXTURES).parts
    if parts[0] == "cross_file":  # a project's modules are imported by its scripts, not run
        return len(parts) == 3 and path.name.startswith(("wrong_", "right_"))
    return parts[0] not in NOT_RUN and path.name != "__init__.py"


RUNNABLE = [p for p in ALL_FIXTURES if runnable(p)]


def marks_of(path: Path) -> list[tuple[int, str]]:
    return expected_marks(path.read_text(encoding="utf-8"))


def test_fixtures_exist():
    assert len(RUNNABLE) >= 2 * 2 * len(DEFAULT_RULES)


# Multi-file fixtures: each folder under fixtures/cross_file/ is a small project, checked as
# one run (gradlint/project): a loop in one file calls a function of another.
PROJECTS = FIXTURES / "cross_file"


def project_of(path: Path) -> Path | None:
    parts = path.relative_to(FIXTURES).parts
    if parts[0] == "verify":  # runtime_only_train.py's step is in hidden_step.py
        return FIXTURES / "verify"
    if parts[0] == PROJECTS.name and len(parts) > 2:
        return FIXTURES.joinpath(*parts[:2])
    # a folder inside a rule's fixtures (gl006/scaled_backward_in_caller) is a small project too
    return FIXTURES.joinpath(*parts[:-1]) if len(parts) > 2 and parts[0] not in ("_shims",) else None


@lru_cache(maxsize=None)
def project_run(folder: Path):
    from gradlint.check.engine import RunOptions, check_paths

    cwd = os.getcwd()
    os.chdir(ROOT)  # the run names files as the command line does from the repository root
    try:
        return check_paths([rel(folder)], Settings.default(), RunOptions(jobs=1))
    finally:
        os.chdir(cwd)


def result_of(path: Path):
    folder = project_of(path)
    if folder is None:
        return check_source(path.read_text(encoding="utf-8"), rel(path), Settings.default())
    return next(r for r in project_run(folder).results if r.path == rel(path))


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[rel(p) for p in ALL_FIXTURES])
def test_findings_equal_marks(path):
    source = path.read_text(encoding="utf-8")
    result = result_of(path)
    assert result.errors == []
    assert found_marks(result.findings) == expected_marks(source)


def test_every_project_fixture_is_a_folder_with_a_wrong_or_right_script():
    folders = sorted(p for p in PROJECTS.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        scripts = [p.name for p in folder.glob("*.py") if p.name.startswith(("wrong_", "right_"))]
        assert scripts, f"{rel(folder)} has no wrong_ or right_ script"
        assert len(list(folder.rglob("*.py"))) >= 2, f"{rel(folder)} is one file: put it with the others"


@pytest.mark.parametrize("code", DEFAULT_RULES)
def test_every_rule_has_two_wrong_and_two_right_fixtures(code):
    folder = FIXTURES / code.lower()
    wrong = sorted(folder.glob("wrong_*.py"))
    right = sorted(folder.glob("right_*.py"))
    assert len(wrong) >= 2 and len(right) >= 2, (code, [p.name for p in wrong], [p.name for p in right])
    for path in wrong:
        assert code in {c for _, c in marks_of(path)}, f"{rel(path)} carries no `# expect: {code}` mark"


def test_clean_fixtures_carry_no_marks_and_wrong_ones_do():
    for path in ALL_FIXTURES:
        if is_clean_fixture(path):
            assert marks_of(path) == [], rel(path)
        elif path.name.startswith("wrong_"):
            # a project's wrong script may only run the misplaced call of another of its
            # modules, where the finding stands (trainer_clip_after_step/trainer.py)
            folder = project_of(path)
            marked = [path] if folder is None else sorted(folder.rglob("*.py"))
            assert any(marks_of(p) for p in marked), rel(path)


def test_marks_name_only_default_rules():
    for path in ALL_FIXTURES:
        for line, code in marks_of(path):
            assert code in DEFAULT_RULES, f"{rel(path)}:{line}: {code} is not a default rule"


# --- the installed command line -------------------------------------------------------

_FINDING_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>GL\d+) ")
_SUMMARY_LINE = re.compile(r"^Found \d+ problems? in \d+ files? \(\d+ files? checked\)\.$")
_FIXABLE_LINE = re.compile(r"^(\[\*\] \d+ fixable with `--fix`|\d+ unsafe fix)")
_UNFOLLOWED_LINE = re.compile(r"^\d+ gradient calls? (were|was) not followed \(--show-unfollowed lists them\)$")


def gradlint_command() -> list[str]:
    installed = Path(sys.executable).parent / "gradlint"
    if installed.exists():
        return [str(installed)]
    found = shutil.which("gradlint")
    if found is None:
        pytest.fail("the gradlint command is not installed (pip install -e .)")
    return [found]


def run_cli(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        gradlint_command() + ["--no-cache"] + args,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_prints_exactly_the_marks():
    proc = run_cli(["fixtures/"])
    assert proc.returncode == 1, proc.stderr
    found = []
    lines = proc.stdout.splitlines()
    if lines and _UNFOLLOWED_LINE.match(lines[-1]):  # fixtures/unfollowed/ holds calls it is blind to
        lines.pop()
    if lines and _FIXABLE_LINE.match(lines[-1]):
        lines.pop()
    assert lines and _SUMMARY_LINE.match(lines[-1]), proc.stdout[-500:]
    for text in lines[:-1]:
        match = _FINDING_LINE.match(text)
        assert match, f"not a finding line: {text!r}"
        found.append((match["path"], int(match["line"]), match["code"]))
    expected = [(rel(p), line, code) for p in ALL_FIXTURES for line, code in marks_of(p)]
    assert sorted(found) == sorted(expected)


def test_cli_passes_the_clean_fixtures():
    clean = [rel(p) for p in ALL_FIXTURES if is_clean_fixture(p)]
    assert clean
    proc = run_cli(clean)
    lines = proc.stdout.splitlines()
    if lines and _UNFOLLOWED_LINE.match(lines[-1]):  # right code the analysis is blind to is no finding
        lines.pop()
    assert (proc.returncode, lines) == (0, [f"All checks passed! ({len(clean)} files checked)"]), proc.stdout


# --- the fixtures run on the CPU ---------------------------------------------------------

_IN_ONE_PROCESS = r"""
import json, os, runpy, sys, time, traceback
results = []
base_path = list(sys.path)
for path in sys.argv[1:]:
    sys.argv[:] = [path]
    folder = os.path.dirname(os.path.abspath(path))
    sys.path[:] = [folder] + base_path
    # a multi-file fixture's modules (`trainer`) must not be the previous folder's of that name
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None) or ""
        if where.startswith(os.path.join(os.getcwd(), "fixtures", "cross_file")):
            del sys.modules[name]
    start = time.perf_counter()
    error = None
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = f"SystemExit({exc.code!r})"
    except BaseException:
        error = traceback.format_exc(limit=3)
    results.append({"path": path, "seconds": time.perf_counter() - start, "error": error})
sys.stdout.flush()
sys.__stdout__.write("\nRESULTS " + json.dumps(results) + "\n")
"""


def test_every_fixture_runs_on_cpu_in_one_process():
    """Each fixture runs to completion with torch only (one torch import for all of them)."""
    require("torch")  # the child imports it
    paths = [rel(p) for p in RUNNABLE]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", _IN_ONE_PROCESS, *paths],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(l for l in reversed(proc.stdout.splitlines()) if l.startswith("RESULTS "))
    results = json.loads(line[len("RESULTS "):])
    assert [r["path"] for r in results] == paths
    failures = {r["path"]: r["error"] for r in results if r["error"]}
    assert failures == {}


@pytest.mark.slow
@pytest.mark.parametrize("path", RUNNABLE, ids=[rel(p) for p in RUNNABLE])
def test_fixture_runs_as_a_script(path):
    """`python fixtures/.../x.py` from the repository root, as the verifier runs it."""
    require("torch")  # the child imports it
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, rel(path)], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
