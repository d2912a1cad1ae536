"""Times every regular expression gradlint runs over text on adversarial inputs.

Run as a script (tests/test_regex_linear.py starts it in a child process with
a timeout, so a pattern that backtracks cannot hang the suite): prints one
JSON line, the slowest time per KB of input for each pattern.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
import sys
import time

import gradlint
from gradlint.check.prefilter import Prefilter

# What a pattern may meet right before the filler: the words the patterns look for.
LEADS = ("", "backward", "step", "grad", "p.grad", "p.grad.data", "# noqa", "# noqa: GL001", "# gradlint: ignore[",
         "[", "[tool", "def step", "x =", "x", "%", "a.b", "(at line 1, column 2)")
# Runs that overlap the alternatives a careless pattern repeats.
FILLERS = ("#", " ", "\\", "\\\n", "# ", "\t", "\n", "a ", " ,", "(", ")", ".", " #\n", "GL001", "=",
           "step(", "x.grad=", "backward(", "def step(", "import ", "for ", "self.a.b(")
RECHECK_ABOVE = 0.002  # seconds per KB
SIZE = 10_000  # characters of filler: a quadratic pattern needs seconds here, a linear one microseconds


def patterns() -> dict[str, re.Pattern]:
    found = {}
    for info in pkgutil.walk_packages(gradlint.__path__, "gradlint."):
        if info.name.endswith("__main__"):  # importing it runs the command
            continue
        try:
            module = importlib.import_module(info.name)
        except Exception:  # an extra (lsp, verify) that this interpreter lacks
            continue
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{info.name}.{name}"] = value
    return found


def slowest(run) -> float:
    worst = 0.0
    for lead in LEADS:
        for filler in FILLERS:
            text = lead + filler * (SIZE // len(filler))
            for candidate in (text, text + "\n" + lead):
                worst = max(worst, _per_kb(run, candidate))
    return worst


def _per_kb(run, text: str) -> float:
    """Seconds per KB; a slow reading is taken twice more and the fastest kept, since a loaded
    machine can stall any one call, while a backtracking pattern is slow every time."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        run(text)
        best = min(best, (time.perf_counter() - start) / (len(text) / 1000))
        if best < RECHECK_ABOVE:
            break
    return best


def main() -> None:
    results = {}
    for name, pattern in patterns().items():
        if isinstance(pattern.pattern, bytes):  # the language server's input stream (gradlint/lsp/stream.py)
            results[name] = slowest(lambda text, p=pattern: (p.search(text.encode()), p.match(text.encode())))
        else:
            results[name] = slowest(lambda text, p=pattern: (p.search(text), p.match(text)))
    prefilter = Prefilter()
    results["Prefilter.event_lines"] = slowest(prefilter.event_lines)
    # the project index's text scans: patterns tried at the lines or words they look for
    from gradlint.project import index, scan

    for name, run in [("scan.scan", scan.scan), ("scan.called_names", scan._call_names),
                      ("index.text_aliases", index.text_aliases), ("index.import_targets", index.import_targets)]:
        results[name] = slowest(run)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
