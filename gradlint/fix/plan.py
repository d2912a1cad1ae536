"""Which repair a finding gets: its rule's own fixes, tried in turn.

Each rule plans its repairs in its own module (its RULE's `fixes`, reading
only what the rule reported; gradlint/rules/repairs.py holds what several
share); fix/ keeps the edit primitives they are made of.  Where two repairs
are possible (GL005, GL007: move the clip or the backward, the step or the
backward), the first choice is the Fix and the others ride along as its
alternatives: `--fix` tries them in turn and keeps the first after which the
file has strictly fewer findings and none new (fix/session.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

from gradlint.core.findings import Fix


def plan(raw, file) -> Optional[Fix]:
    """The fix for one RawFinding (with alternatives), or None when no repair is unambiguous."""
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code().get(raw.code)
    planner = rule.fixes if rule is not None else None
    try:
        candidates = [fix for fix in (planner(raw, file) if planner else [raw.fix]) if fix is not None]
    except Exception:  # a repair is optional: code it cannot handle gets none, the finding stays
        return None
    if not candidates:
        return None
    return replace(candidates[0], alternatives=tuple(candidates[1:]))
