"""No regular expression gradlint runs over text can backtrack (issue 19).

tests/regex_probe.py finds every compiled pattern in the package and the
prefilter's scan, and times them on adversarial inputs (long runs of `#`,
spaces, backslashes, `\\` + newline, calls, after each word the patterns
look for).  It runs in a child process with a timeout: an exponential
pattern would otherwise hang the suite instead of failing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gradlint.check.prefilter import Prefilter

HERE = os.path.dirname(os.path.abspath(__file__))
# A linear pattern takes well under 2 ms per KB here even on a loaded machine; a
# quadratic one takes hundreds at the probe's 10 KB, an exponential one never ends.
MS_PER_KB = 20.0


@pytest.fixture(scope="module")
def probe() -> dict[str, float]:
    try:
        done = subprocess.run([sys.executable, os.path.join(HERE, "regex_probe.py")], capture_output=True,
                              text=True, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("a pattern did not finish on the adversarial inputs within 180 s (it backtracks)")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_probe_sees_the_patterns(probe):
    assert {"gradlint.check.prefilter._BLANKS", "gradlint.check.suppress._NOQA", "gradlint.check.notebook._ASSIGNED_MAGIC",
            "Prefilter.event_lines"} <= set(probe)


def test_every_pattern_is_linear(probe):
    slow = {name: round(seconds * 1000, 1) for name, seconds in probe.items() if seconds * 1000 > MS_PER_KB}
    assert not slow, f"ms per KB on adversarial input: {slow}"


@pytest.mark.parametrize(
    "text, counts",
    [
        ("loss.backward  # call it\n()", True),
        ("loss.backward \\\n  ()", True),
        ("x = backward # not ( a call\n", False),  # a comment runs to its line's end: its `(` is not code
        ("opt.step # (\n", False),
        ("opt.step" + "#" * 200 + "\n(", True),
        ("p.grad # c\n = g", True),
        ("(p.grad) = g", True),
        ("p.grad.data = g", True),
        ("p.grad //= 2", True),
        ("p.grad == g", False),
        ("def step(self):\n    pass\n", False),
        ("x = 1; redef step(", True),
    ],
)
def test_the_gap_scan_reads_python_spacing(text, counts):
    assert Prefilter().may_hold_events(text) is counts
