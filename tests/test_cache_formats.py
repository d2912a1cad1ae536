"""One cache entry serves every output format (issue 48).

CI runs `gradlint .` and then `--output-format github` or `sarif` on the same
tree.  The text report marks what `--fix` would repair, JSON and SARIF offer
only fixes proven to help, the other formats show the findings as found: the
analysis makes all three in the worker and the cache keeps them in one entry,
so the second run, in any format, analyses nothing (counted), and prints what
a cold run in its format prints.
"""

from __future__ import annotations

import pytest

from ci_snippets import CLEAN_LOOP, GL002_LOOP, GL004_LOOP, run_cli, snippet, write
from gradlint.check import engine

# A loop with a fixable GL002 and a GL001 whose fix inserts a clear: two fixes to prove and mark.
TWO_FIXES = (
    "import torch\n\ndef train(model, loader, opt, optimizer):\n    for x, y in loader:\n        loss = f(x, y)\n"
    "        loss.backward()\n        opt.zero_grad()\n        opt.step()\n    for x in loader:\n"
    "        model(x).sum().backward()\n        optimizer.step()\n"
)

FORMAT_PAIRS = [
    ("text", "json"), ("text", "sarif"), ("text", "github"), ("sarif", "github"), ("json", "text"),
    ("github", "sarif"), ("github", "text"), ("junit", "json"),
]


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "a.py", snippet(GL002_LOOP))
    write(tmp_path, "b.py", snippet(GL004_LOOP))
    write(tmp_path, "two.py", TWO_FIXES)
    write(tmp_path, "clean.py", snippet(CLEAN_LOOP))
    write(tmp_path, "broken.py", "for x in :\n    loss.backward()\n")
    return tmp_path


@pytest.fixture
def analyses(monkeypatch):
    """The files analysed (each check of a text, fixed or not, is one)."""
    calls = []
    real = engine.check_source

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "check_source", counted)
    return calls


def report(capsys, fmt: str, *cache: str) -> tuple[int, str]:
    code, out, err = run_cli(capsys, "-j", "1", "--output-format", fmt, *cache, ".")
    assert "Traceback" not in err and code == 1, err
    return code, out


@pytest.mark.parametrize("first, second", FORMAT_PAIRS, ids=[f"{a}-then-{b}" for a, b in FORMAT_PAIRS])
def test_a_run_in_one_format_warms_the_cache_for_another(tree, capsys, analyses, first, second):
    cold = report(capsys, second, "--no-cache")
    assert analyses  # (the tree has files to analyse, and fixes to prove and mark)
    cache = ("--cache-dir", str(tree / "cache"))
    report(capsys, first, *cache)
    analyses.clear()
    assert report(capsys, second, *cache) == cold
    assert analyses == []  # served from the cache: no file analysed, no fix checked


def test_a_cold_run_checks_a_fixed_text_once_for_both_proofs_and_marks(tree, capsys, analyses):
    """The proofs (JSON, SARIF) and the marks (text) apply the same first repair to a file with
    one fixable finding: it is checked once, not once for each."""
    for name in ("two.py", "b.py", "clean.py", "broken.py"):
        (tree / name).unlink()
    report(capsys, "text", "--no-cache")
    assert analyses == ["a.py", "a.py"]  # the file, then the file with its fix applied
