"""`--statistics`: how many findings per code, instead of the findings themselves.

    3  GL002  zero-grad-discards-gradients
    1  GL004  clip-after-step

With --output-format json: [{"code", "name", "count"}], most frequent first.
"""

from __future__ import annotations

import json
from collections import Counter

from gradlint.report.meta import info

STATISTICS_FORMATS = ("text", "json")


def counts(run) -> list[tuple[str, int]]:
    counter = Counter(f.code for f in run.findings())
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def render(run, fmt: str = "text") -> str:
    rows = counts(run)
    if fmt == "json":
        return json.dumps([{"code": c, "name": info(c).name, "count": n} for c, n in rows], indent=2) + "\n"
    lines = []
    width = max((len(str(n)) for _, n in rows), default=1)
    for code, count in rows:
        lines.append(f"{count:>{width}}  {code}  {info(code).name}")
    errors = run.errors()
    if errors:
        lines.append(f"{run.files_not_checked:>{width}}  files that could not be checked")
    return "\n".join(lines) + ("\n" if lines else "")
