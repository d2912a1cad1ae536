"""Every fixture under fixtures/ (outside fixtures/verify/) run through `gradlint verify`.

A fixture with `# expect: GLxxx` marks must have each mark confirmed at run
time; a clean fixture must get no runtime-only finding.  Fixtures are
discovered when the tests run (another author adds them).  Each verify run
pays torch's import (several seconds), so the default run verifies one
wrong fixture per rule folder and the first two clean idioms, and the rest
is in the slow set (`pytest -m slow`, `nox -s slow`); each test runs its
own fixture (pytest-xdist spreads them over the workers).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from installed import require

from marks import expected_marks

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "fixtures")
SKIP_DIRS = {"verify", "_shims", "not_torch", "newer_syntax", "__pycache__"}  # newer_syntax: 3.12 code, torch is on 3.11


def discover() -> list[str]:
    found = []
    for directory, dirs, files in os.walk(FIXTURES):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        if os.path.relpath(directory, FIXTURES).startswith("cross_file"):  # a project: its scripts only
            files = [f for f in files if f.startswith(("wrong_", "right_"))]
        found += [os.path.relpath(os.path.join(directory, f), ROOT) for f in sorted(files) if f.endswith(".py")]
    return found


def _verify(path: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", "--format", "json", path],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    if result.returncode not in (0, 1):
        return {"error": f"exit {result.returncode}: {result.stderr.strip()}"}
    return json.loads(result.stdout)




def _marks(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return expected_marks(handle.read())


PATHS = discover()


def _quick(paths: list[str]) -> set[str]:
    """The first marked fixture of each rule folder and the first two clean idioms."""
    quick, folders = set(), set()
    for path in paths:
        folder = os.path.dirname(path)
        if _marks(path) and folder not in folders:
            folders.add(folder)
            quick.add(path)
    return quick | set([p for p in paths if p.startswith(os.path.join("fixtures", "idioms", ""))][:2])


QUICK = _quick(PATHS)


# Known gaps of the verifier, each a strict xfail (it fails the day the gap closes, so the
# entry is removed): the checker reads these shapes, the run-time probes do not yet.
_SURGERY = ("the probes take `p.grad = None` for parameters picked by name (gradient surgery) "
            "as a clear of every parameter the step uses")
_HANDOFF = ("the probes do not see gradients handed to another model's parameters (`shared_p._grad = p.grad`): "
            "the shared optimizer's step looks like a step with no backward into its parameters")
VERIFY_GAPS = {
    "fixtures/gl001/wrong_only_clear_picks_parameters_by_name.py": _SURGERY,
    "fixtures/gl001/wrong_shared_model_worker_never_clears_local.py": _HANDOFF,
    "fixtures/gl001/right_shared_model_worker_clears_local.py": _HANDOFF,
    "fixtures/gl002/wrong_clear_at_top_of_accelerate_accumulate.py": (
        "a clear that throws fresh gradients away on every run it makes is taken for a deliberate "
        "skip (a bad batch), and the prepared optimizer's clear at the top of `accumulate()` runs only "
        "on the syncing micro-step, where it always does"),
    "fixtures/gl008/right_scheduler_fast_forwarded_on_resume.py": (
        "a run shows a scheduler stepped before its optimizer's first step, as the premature step "
        "does: that the steps come from a loop replaying the schedule on resume is in the code only"),
}


def fixtures_where(marked: bool) -> list:
    def marks(path):
        gap = VERIFY_GAPS.get(path)
        return [m for m in (None if path in QUICK else pytest.mark.slow,
                            gap and pytest.mark.xfail(strict=True, reason=gap)) if m]

    return [pytest.param(p, marks=marks(p)) for p in PATHS if bool(_marks(p)) == marked]


def _describe(report) -> str:
    return json.dumps({k: report.get(k) for k in ("run", "verdicts", "runtime_only")}, indent=1)[:3000]


@pytest.mark.parametrize("path", fixtures_where(marked=True))
def test_marked_fixture_is_confirmed(path):
    report = _verify(path)
    assert "error" not in report, report.get("error")
    if report["run"]["reason"] == "exception" and "ModuleNotFoundError" in report["run"]["summary"]:
        pytest.skip(f"needs a package that is not installed: {report['run']['summary']}")
    verdicts = {(v["line"], v["code"]): v["verdict"] for v in report["verdicts"]}
    for line, code in _marks(path):
        assert verdicts.get((line, code)) == "confirmed", f"{code} at line {line}\n{_describe(report)}"


@pytest.mark.parametrize("path", fixtures_where(marked=False))
def test_clean_fixture_has_no_runtime_only_finding(path):
    report = _verify(path)
    assert "error" not in report, report.get("error")
    assert report["runtime_only"] == [], _describe(report)
    assert report["run"]["reason"] in ("completed", "steps"), _describe(report)
    if os.path.basename(path).startswith("wrong_"):
        # a script of a project whose bug stands on the misplaced call in another module: verify
        # reads the script with its project, so that finding is judged (and never refuted: a run
        # that takes another path than the bug's says `not reached`)
        assert report["verdicts"], _describe(report)
        assert all(v["verdict"] != "not reproduced" and v["path"] != path for v in report["verdicts"]), _describe(report)
