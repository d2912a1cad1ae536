"""benchmarks/fix_study: the table of fixes is well formed and the README's table matches it.

Running the study needs the repositories' snapshots (see its README); this checks what the
checkout holds: every row names a default rule, a kind, a line, and the README lists
exactly the rows of fixes.tsv."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "benchmarks" / "fix_study"


def _study():
    spec = importlib.util.spec_from_file_location("fix_study", STUDY / "study.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_row_is_well_formed():
    rows = _study().read_rows(STUDY / "fixes.tsv")
    assert len(rows) >= 40
    assert len({r.repo for r in rows}) >= 30
    realworld = {line.split()[0] for line in (ROOT / "benchmarks/realworld/repos.txt").read_text().splitlines() if line.strip()}
    for row in rows:
        assert re.fullmatch(r"GL00[1-8]", row.rule), row
        assert row.kind in ("bug", "reorder"), row
        assert re.fullmatch(r"[0-9a-f]{7,40}", row.fix), row
        assert row.repo not in realworld, row


def test_the_readme_table_lists_every_row():
    rows = _study().read_rows(STUDY / "fixes.tsv")
    table = [line for line in (STUDY / "README.md").read_text().splitlines() if line.startswith("| ") and "/" in line.split("|")[1]]
    listed = sorted((cells[1].strip(), cells[4].strip(), int(cells[5]), cells[6].strip())
                    for cells in (line.split("|") for line in table))
    assert listed == sorted((r.repo, r.path, r.line, r.rule) for r in rows)


def test_judged_findings_are_well_formed():
    judged = _study().read_judged(STUDY / "judged.tsv")
    for (repo, commit, path, line, code), (verdict, reason) in judged.items():
        assert re.fullmatch(r"GL\d{3}", code) and verdict in ("real bug", "false alarm") and reason, (repo, path, line)
