"""Every runnable fixture under gradlint.guard: a wrong one gives the checker's finding, a right
one and every idiom none.

The fixtures are the ones `gradlint verify` runs (tests/test_verify_fixtures.py picks them).
tests/guard_driver.py runs many in one process (torch imported once); the default run takes
the same quick set as verify's test (one wrong fixture per rule folder, two idioms), the slow
set all of them (about 80 s on two loaded cores).  A report matches a finding as verify's
verdicts do: same code, at the finding's line or at one of its related lines, anywhere in the
user's stack of the calls the report is made of.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


pytest.importorskip("torch")

import test_verify_fixtures as picked  # noqa: E402  (after the skip: it imports torch's absence too)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DRIVER = os.path.join(ROOT, "tests", "guard_driver.py")

# What the guard cannot see that verify does: verify measures every gradient and parameter,
# the guard reads none (docs/guard.md, "What it cannot see").
_MANUAL = "the guard reads no values, so an update written by hand (`p -= lr * p.grad`) is not a step it sees"
GUARD_GAPS = {
    # verify's gaps, but for what the guard does see: it reads no gradient values, so a clear of
    # parameters picked by name, or gradients handed to a shared model, fool it no more than
    # its own events do; and it needs no static finding to report what the run shows
    **{path: gap for path, gap in picked.VERIFY_GAPS.items() if path not in (
        "fixtures/gl001/wrong_only_clear_picks_parameters_by_name.py",
        "fixtures/gl001/right_shared_model_worker_clears_local.py",
        "fixtures/cross_file/base_loop_runs_a_subclass_clip_after_step/wrong_train.py")},
    "fixtures/gl001/wrong_manual_sgd_never_cleared.py": _MANUAL,
    "fixtures/gl001/wrong_adversarial_input_updated_in_place.py": _MANUAL,
    "fixtures/cross_file/model_factory_optimizers/wrong_train.py": (
        "the run blames the first clear between the step and the next backward (line 11); the "
        "project-wide check blames the other clear of the same optimizer (line 15)"),
    "fixtures/cross_file/agent_of_two_classes_one_never_clears/wrong_train.py": (
        "run without --policy, the script takes the value agent, whose update clears: the policy "
        "agent's update, where the bug is, never runs"),
}
_RESULTS: dict = {}


def _run(paths: list) -> None:
    proc = subprocess.run([sys.executable, DRIVER, *paths], cwd=ROOT, capture_output=True, text=True, timeout=900)
    for line in proc.stdout.splitlines():
        if line.startswith("GUARD-JSON "):
            result = json.loads(line[len("GUARD-JSON "):])
            _RESULTS[result["path"]] = result
    missing = [p for p in paths if p not in _RESULTS]
    assert not missing, f"the driver stopped before {missing[0]}:\n{proc.stderr[-3000:]}"


def _result(path: str) -> dict:
    if path not in _RESULTS:
        _run(sorted(picked.QUICK) if path in picked.QUICK else [p for p in picked.PATHS if p not in _RESULTS])
    return _RESULTS[path]


def _expected(path: str) -> list:
    """(file, line, code) of every mark the run of `path` must show: the script's own and, for a
    script of a fixtures/cross_file/ project, the marks of the project's modules that the check
    of the script (with its project, as `gradlint PATH` reads it) reports: a finding stands on
    the misplaced call in the module that holds it, and the right script of a project may use
    another module of the folder than the wrong one."""
    expected = [(path, line, code) for line, code in picked._marks(path)]
    folder = os.path.dirname(path)
    if not os.path.relpath(folder, "fixtures").startswith("cross_file"):
        return expected
    from gradlint.verify.command import static_findings

    found = {(os.path.normpath(f.path), f.span.line, f.code) for f in static_findings(path)[0]}
    every = not found and os.path.basename(path).startswith("wrong_")  # a loop the script's check misses
    for directory, dirs, files in os.walk(os.path.join(ROOT, folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py") and not name.startswith(("wrong_", "right_")):
                module = os.path.relpath(os.path.join(directory, name), ROOT)
                expected += [(module, line, code) for line, code in picked._marks(module)
                             if every or (module, line, code) in found]
    return expected


def _params(marked: bool) -> list:
    chosen = []
    for path in picked.PATHS:
        if bool(_expected(path)) != marked:
            continue
        marks = [] if path in picked.QUICK else [pytest.mark.slow]
        if path in GUARD_GAPS:
            marks.append(pytest.mark.xfail(strict=True, reason=GUARD_GAPS[path]))
        chosen.append(pytest.param(path, marks=marks))
    return chosen


def _text(result: dict) -> str:
    return "\n".join(r["text"] for r in result["reports"]) or "(no report)"


@pytest.mark.xdist_group("guard_fixtures")
@pytest.mark.parametrize("path", _params(marked=True))
def test_wrong_fixture_gives_the_checkers_finding(path):
    from gradlint.check.engine import check_source
    from gradlint.options.settings import Settings

    result = _result(path)
    if "ModuleNotFoundError" in result["outcome"]:
        pytest.skip(f"needs a package that is not installed: {result['outcome']}")
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        source = handle.read()
    real = os.path.realpath(os.path.join(ROOT, path))
    findings = {(f.span.line, f.code): f for f in check_source(source, path, Settings.default()).findings}
    for file, line, code in _expected(path):
        if file != path:  # a module of the project: the report names the line of the helper's call
            lines = {(os.path.realpath(os.path.join(ROOT, file)), line)}
            assert any(
                r["code"] == code and lines & {tuple(site) for site in r["lines"]} for r in result["reports"]
            ), f"{code} at {file}:{line}: {result['outcome']}\n{_text(result)}"
            continue
        # a project's script: the checker alone may not see the helper's bug; the mark is on the call
        finding = findings.get((line, code))
        lines = {(real, line)} | {(real, r.span.line) for r in (finding.related if finding else ())}
        assert any(
            r["code"] == code and lines & {tuple(site) for site in r["lines"]} for r in result["reports"]
        ), f"{code} at line {line}: {result['outcome']}\n{_text(result)}"


@pytest.mark.xdist_group("guard_fixtures")
@pytest.mark.parametrize("path", _params(marked=False))
def test_right_fixture_and_idiom_get_no_report(path):
    result = _result(path)
    if "ModuleNotFoundError" in result["outcome"]:
        pytest.skip(f"needs a package that is not installed: {result['outcome']}")
    assert result["reports"] == [], _text(result)
    assert result["outcome"] in ("completed", "exit 0", "exit None"), result["outcome"]
