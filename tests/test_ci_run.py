"""`.ci/run` is what the README tells a new user to run, plus what CI needs: the Quick
start's commands verbatim, then a nox session for every supported Python, lint and the
slow set.  pyproject.toml's requires-python and classifiers say the same range."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from pythons import PROJECT, SUPPORTED

ROOT = Path(__file__).resolve().parent.parent
CI_LINES = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]


def quick_start_commands() -> list[str]:
    """The lines of the shell blocks under the README's `## Quick start` heading."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Quick start\n")
    end = readme.find("\n## ", start + 1)
    section = readme[start : end if end != -1 else len(readme)]
    blocks = re.findall(r"^```(?:sh|bash|console)\n(.*?)^```", section, re.S | re.M)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip() and not line.startswith("#")]


def nox_sessions() -> list[str]:
    """Every session that .ci/run asks nox for."""
    sessions = []
    for line in CI_LINES:
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("nox") and "-s" in words:
            sessions += words[words.index("-s") + 1 :]
    return sessions


def test_ci_runs_the_readme_quick_start_as_written():
    commands = quick_start_commands()
    assert any(re.search(r"\bnox -s tests-3\.\d+$", c) for c in commands), commands  # the test command
    for command in commands:
        assert command in CI_LINES, f"the README's {command!r} is not a line of .ci/run"


def test_ci_runs_every_supported_python_lint_and_the_slow_set():
    sessions = nox_sessions()
    assert sorted(sessions) == sorted([f"tests-{v}" for v in SUPPORTED] + ["lint", "frameworks", "slow"])


def test_requires_python_and_classifiers_name_the_same_pythons():
    assert SUPPORTED, "no `Programming Language :: Python :: 3.x` classifier"
    assert PROJECT["requires-python"] == f">={SUPPORTED[0]}"
    minors = [int(v.split(".")[1]) for v in SUPPORTED]
    assert minors == list(range(minors[0], minors[0] + len(minors))), "a gap in the classifiers"
