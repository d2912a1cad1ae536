"""Issue 21: every script in tests/verify_scripts/ with a `verify-expect:` line, run through
`gradlint verify`, must get exactly the verdicts and exit code that line declares.

The line, in the script's docstring, is `;`-separated:
  exit N                         the exit code
  GL002 line 21 confirmed        a verdict (or `runtime only`) of that code at that line
  A or B                         either verdict will do (the checker may not say it yet)
  A or none                      that verdict, or no finding at all in its place
  nothing                        no verdict and no runtime-only finding
  --steps 8                      verify's own options for this script
Every verdict and runtime-only finding of the report must be one of those declared: a second
finding for the same bug fails the test.  The runs start together, in parallel, once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import pytest

from installed import require

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join("tests", "verify_scripts")
_EXPECT = re.compile(r"^verify-expect:\s*(.+)$", re.MULTILINE)
_VERDICT = re.compile(r"^(GL\d{3}) line (\d+) (confirmed|not reproduced|not reached|not probed|runtime only)$")


def parse_expectation(text: str) -> dict:
    """{"exit": int, "options": [...], "verdicts": [[(code, line, verdict), ...alternatives], ...]}"""
    match = _EXPECT.search(text)
    if match is None:
        raise ValueError("no verify-expect: line")
    expected = {"exit": None, "options": [], "verdicts": []}
    for item in (part.strip() for part in match.group(1).split(";")):
        if item.startswith("exit "):
            expected["exit"] = int(item.split()[1])
        elif item.startswith("--"):
            expected["options"] += item.split()
        elif item == "nothing":
            continue
        else:
            alternatives = []
            for choice in item.split(" or "):
                if choice.strip() == "none":
                    alternatives.append(None)
                    continue
                found = _VERDICT.match(choice.strip())
                if found is None:
                    raise ValueError(f"cannot read {choice!r}")
                alternatives.append((found.group(1), int(found.group(2)), found.group(3)))
            expected["verdicts"].append(alternatives)
    if expected["exit"] is None:
        raise ValueError("verify-expect: says no exit code")
    return expected


def _declared() -> dict:
    found = {}
    for name in sorted(os.listdir(os.path.join(ROOT, SCRIPTS))):
        if name.endswith(".py"):
            with open(os.path.join(ROOT, SCRIPTS, name), encoding="utf-8") as handle:
                text = handle.read()
            if _EXPECT.search(text):
                found[name] = parse_expectation(text)
    return found


DECLARED = _declared()


def _verify(name: str):
    result = subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", "--format", "json", *DECLARED[name]["options"],
         os.path.join(SCRIPTS, name)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    try:
        return result.returncode, json.loads(result.stdout)
    except ValueError:
        return result.returncode, {"stderr": result.stderr}


@lru_cache(maxsize=None)
def reports() -> dict:
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return dict(zip(DECLARED, pool.map(_verify, DECLARED)))


def seen(report: dict) -> list[tuple[str, int, str]]:
    return sorted((v["code"], v["line"], v["verdict"]) for v in report["verdicts"] + report["runtime_only"])


def unmet(expected: list, got: list) -> list:
    """The declared items no finding of the report meets, and the findings no declared item allows."""
    left = list(got)
    missing = []
    for alternatives in expected:
        hit = next((g for g in left if g in alternatives), None)
        if hit is None and None not in alternatives:
            missing.append(alternatives)
        elif hit is None:
            continue
        else:
            left.remove(hit)
    return missing + [("unexpected", *g) for g in left]


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_script_gets_its_declared_verdicts_and_exit_code(name):
    code, report = reports()[name]
    assert "stderr" not in report, report
    described = json.dumps({k: report.get(k) for k in ("run", "verdicts", "runtime_only")}, indent=1)[:3000]
    assert unmet(DECLARED[name]["verdicts"], seen(report)) == [], described
    assert code == DECLARED[name]["exit"] == report["exit_code"], described


def test_the_declarations_are_read_as_written():
    expected = parse_expectation('"""x\n\nverify-expect: exit 1; GL001 line 18 confirmed or GL003 line 19 confirmed; '
                                 'nothing; --steps 8\n"""')
    assert expected == {"exit": 1, "options": ["--steps", "8"],
                        "verdicts": [[("GL001", 18, "confirmed"), ("GL003", 19, "confirmed")]]}
    assert unmet(expected["verdicts"], [("GL003", 19, "confirmed")]) == []
    assert unmet(expected["verdicts"], [("GL003", 19, "confirmed"), ("GL002", 17, "runtime only")]) == [
        ("unexpected", "GL002", 17, "runtime only")]
    assert unmet(expected["verdicts"], []) == [expected["verdicts"][0]]
    optional = parse_expectation("verify-expect: exit 0; GL003 line 27 not reproduced or none")["verdicts"]
    assert unmet(optional, []) == [] and unmet(optional, [("GL003", 27, "not reproduced")]) == []
    assert unmet(optional, [("GL003", 27, "confirmed")]) == [("unexpected", "GL003", 27, "confirmed")]
    with pytest.raises(ValueError):
        parse_expectation("verify-expect: GL001 line 3 confirmed")


def test_a_library_between_the_script_and_torch_is_never_the_place_of_a_finding():
    _, report = reports()["library_wrapped_loop.py"]
    (only,) = report["runtime_only"]
    assert (only["path"], only["line"], only["col"]) == (os.path.join(SCRIPTS, "library_wrapped_loop.py"), 21, 5)
    assert "verify_lib" not in only["evidence"] and "site-packages" not in only["evidence"]
    assert "step 2 of SGD#1 at line 22 used gradients accumulated over backward passes at line 21" in only["evidence"]
    # every path of the report is spelled as the checker prints it (relative to the working directory)
    paths = {site[0] for event in report["events"] for site in event["sites"]}
    assert paths == {os.path.join(SCRIPTS, "library_wrapped_loop.py")}, paths
    assert report["file"] == os.path.join(SCRIPTS, "library_wrapped_loop.py")
