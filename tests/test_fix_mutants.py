"""The fix benchmark's targets (benchmarks/fix_mutants.py): bugs injected into clean loops
are repaired by --fix --unsafe-fixes, and no fix makes anything worse."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))

import fix_mutants  # noqa: E402


def test_mutants_cover_every_rule_and_multi_line_statements():
    rules = {rule for _, rule, _, _ in fix_mutants.mutants()}
    assert rules == {f"GL00{n}" for n in range(1, 9)}
    assert sum(1 for _, _, _, source in fix_mutants.mutants() if "(\n" in source) >= 20


def test_fix_targets_on_mutants():
    figures = fix_mutants.measure()
    assert figures.mutants >= 60
    assert figures.gone_share >= 0.9, figures.unfixed
    assert figures.gained == [] and figures.unparsable == [] and figures.unstable == []
