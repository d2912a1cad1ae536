"""gradlint/parse/data_literals.py: big numeric literals are emptied before any parse, and the
findings (spans, messages, fixes) are exactly those of the whole text."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradlint.parse import data_literals
from gradlint.check import engine
from gradlint.options.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


@pytest.fixture
def small_literals(monkeypatch):
    """Literals of 12 characters count as big, so that short texts exercise every path."""
    monkeypatch.setattr(data_literals, "MIN_CHARS", 12)


def test_a_big_numeric_literal_keeps_its_brackets_and_line_ends(small_literals):
    source = "x = 1\nDATA: list = [\n    [1.5, -2e-3, .5, 5., 1_000, 00, 0_0],\n    (3, 4,),\n]  # data\ny = 2\n"
    assert data_literals.without_data(source) == "x = 1\nDATA: list = [\n\n\n]  # data\ny = 2\n"
    assert data_literals.without_data("A = B = (1, 2, 3, 4, 5, 6)\n") == "A = B = ()\n"


@pytest.mark.parametrize(
    "source",
    [
        "x = [01, 2, 3, 4, 5, 6]\n",  # not Python: the parsers must say so
        "x = [1__0, 2, 3, 4, 5]\n",
        "x = [1 2 3 4 5 6 7 8]\n",
        "x = [(1)(2), 3, 4, 5]\n",  # a call
        "x = [[1][0], 3, 4, 5]\n",  # a subscript
        "x = [[[[1, 2, 3, 4]]]]\n",  # deeper than MAX_DEPTH
        "x = [1, 2, 3, 4, 5]; y = 2\n",  # something else after it on its line
        "x = [1, 2, 3, 4, 5] + y\n",
        "y = f([1, 2, 3, 4, 5])\n",  # a call's text is read for messages
        "y = a[1, 2, 3, 4, 5]\n",
        "a, b = [1, 2, 3, 4, 5]\n",  # unpacked: the count of elements matters
        "self.x = [1, 2, 3, 4, 5]\n",
        "def f():\n    x = [1, 2, 3, 4, 5]\n",  # not at the top level: a fix may move a block it ends
        "for i in y:\n    x = [1, 2, 3, 4, 5]\n",
        "s = '[1, 2, 3, 4, 5]'\n",  # in a string
        "s = '''\n[1, 2, 3, 4, 5]\n'''\n",
        "# x = [1, 2, 3, 4, 5]\n",
        "x = [1, 2, 3, 4, 5\n",  # does not parse
        "x = [1, 2, 3, 4, 5]\r\n",
    ],
)
def test_what_is_not_a_plain_assignment_of_numbers_stays(small_literals, source):
    assert data_literals.without_data(source) == source


def test_one_literal_kept_does_not_keep_the_others(small_literals):
    source = "y = f([1, 2, 3, 4, 5])\nx = [6, 7, 8, 9, 10]\n"
    assert data_literals.without_data(source) == "y = f([1, 2, 3, 4, 5])\nx = []\n"


LITERAL_ROW = "[0.25, -1.5e-3, 7, 0.125]"


def with_literals(source: str) -> str:
    """Data assignments before and after every top-level statement that starts a line."""
    out = []
    for number, line in enumerate(source.splitlines(keepends=True)):
        if line[:1].isalpha() and not line.startswith(("else", "elif", "except", "finally")) and number % 3 == 0:
            out.append(f"TABLE_{number} = [\n    {LITERAL_ROW},\n    {LITERAL_ROW},\n]\n")
            out.append(f"ROW_{number} = {LITERAL_ROW}  # noqa: GL001\n")
        out.append(line)
    return "".join(out)


EVERY_RULE = Settings(select=frozenset(f"GL{n}" for n in ("001", "002", "003", "004", "005", "006", "007", "008", "101", "102")))


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_findings_are_those_of_the_whole_text(small_literals, monkeypatch, path):
    source = with_literals(path.read_text(encoding="utf-8"))
    emptied = data_literals.without_data(source)
    if "TABLE_0 =" in source:  # the first line is a top-level statement: at least that one is emptied
        assert emptied != source
    fast = engine.check_source(source, "t.py", EVERY_RULE)
    monkeypatch.setattr(data_literals, "without_data", lambda text, context=None: text)
    assert fast == engine.check_source(source, "t.py", EVERY_RULE)


CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from gradlint.check import engine
from gradlint.options.settings import Settings
import random
rng = random.Random(23)
numbers = ", ".join(f"{rng.random():.6f}" for _ in range(770_000))
loop = "for x, y in loader:\\n    loss = model(x).sum()\\n    loss.backward()\\n    opt.step()\\n"
source = "import torch\\nDATA = [" + numbers + "]\\n" + loop
result = engine.check_source(source, "data.py", Settings.default())
print([(f.code, f.span.line) for f in result.findings], result.errors)
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc")
def test_a_7_mb_list_of_numbers_stays_within_300_mb():
    """Issue 23: a 7.7 MB list of numbers and one loop took 25.8 s and 1.86 GB."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], capture_output=True, text=True, check=True)
    findings, peak = proc.stdout.splitlines()
    assert findings == "[('GL001', 5)] []"  # the backward of the loop after the literal
    assert int(peak) < 300 * 1024, peak
