"""Apply a source's fixes one at a time, keeping only those that provably help.

A fix is kept only if the file still parses afterwards and has strictly
fewer findings, none of a code that was not there as often before (a fix
must not trade one bug for another).  A rejected fix is tried again after
another fix succeeded (the code around it changed); each finding's
alternatives are tried in order.  What was fixed and what was not (and
why) is recorded for `--show-fixes`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from gradlint.findings import FileResult, Finding, Fix
from gradlint.fix import apply

MAX_CHECKS = 40  # re-checks per file: each costs one analysis


@dataclass
class Outcome:
    text: str  # the source after every kept fix
    result: FileResult  # its findings
    fixed: list[str] = field(default_factory=list)  # "GL002 line 14: Move ..." per kept fix
    not_fixed: list[str] = field(default_factory=list)  # "GL001 line 9: why"

    @property
    def changed(self) -> bool:
        return bool(self.fixed)


@dataclass
class FileFix:
    """One file's fixing: its text before and after (what --diff shows), and what was done."""

    before: str
    after: str
    outcome: Outcome


def _line(line: int) -> str:
    return f"line {line}"


def _worse(before: FileResult, after: FileResult) -> Optional[str]:
    """Why `after` is not an improvement over `before`, or None if it is."""
    if after.errors:
        return "the fixed code would not parse"
    gained = Counter(f.code for f in after.findings) - Counter(f.code for f in before.findings)
    if gained:
        return "it would add " + ", ".join(sorted(gained))
    if len(after.findings) >= len(before.findings):
        return "the finding would remain"
    return None


def _choices(fix: Fix, unsafe: bool) -> list[Fix]:
    return [f for f in (fix, *fix.alternatives) if unsafe or f.safe]


def fix_source(
    source: str,
    check: Callable[[str], FileResult],
    unsafe: bool = False,
    allowed: Callable[[Fix], bool] = lambda fix: True,
    accepted: Callable[[Fix, str, str], None] = lambda fix, before, after: None,
    initial: Optional[FileResult] = None,
    where: Callable[[int], str] = _line,
) -> Outcome:
    """Fix `source`; `check(text)` analyses a version of it (`initial`: its result, if known).
    `allowed(fix)` can veto a fix before it is tried (a notebook refuses edits that span
    two cells); `accepted(fix, before, after)` hears of each fix kept; `where(line)` names
a line in what --show-fixes prints (a notebook names the cell)."""

    def _label(finding: Finding) -> str:
        return f"{finding.code} {where(finding.span.line)}"

    current = initial if initial is not None else check(source)
    outcome = Outcome(source, current)
    rejected: dict[tuple, str] = {}
    checks = 0
    while checks < MAX_CHECKS:
        progress = False
        for finding in current.findings:
            key = (finding.code, finding.span, finding.message)
            if finding.fix is None or key in rejected:
                continue
            choices = [f for f in _choices(finding.fix, unsafe) if allowed(f)]
            if not choices:
                continue
            reason = ""
            for fix in choices:
                candidate = apply(outcome.text, fix)
                after = check(candidate)
                checks += 1
                reason = _worse(current, after) or ""
                if not reason:
                    accepted(fix, outcome.text, candidate)
                    outcome.fixed.append(f"{_label(finding)}: {fix.description}")
                    outcome.text, current = candidate, after
                    progress = True
                    break
                if checks >= MAX_CHECKS:
                    break
            if progress:
                rejected.clear()  # the code changed: what failed may work now
                break
            rejected[key] = reason
        if not progress:
            break
    outcome.result = current
    for finding in current.findings:
        outcome.not_fixed.append(f"{_label(finding)}: {_why_not(finding, rejected, unsafe, allowed)}")
    return outcome


def _why_not(finding: Finding, rejected: dict, unsafe: bool, allowed) -> str:
    fix = finding.fix
    if fix is None:
        return "no automatic fix for this shape of code"
    if not unsafe and not any(f.safe for f in (fix, *fix.alternatives)):
        return f"an unsafe fix is available ({fix.description}): use --unsafe-fixes"
    if not any(allowed(f) for f in (fix, *fix.alternatives)):
        return "the fix would span two notebook cells"
    reason = rejected.get((finding.code, finding.span, finding.message))
    return f"{fix.description} was dropped: {reason}" if reason else "too many fixes in one file"


def proven_fixes(source: str, result: FileResult, check: Callable[[str], FileResult]) -> FileResult:
    """`result` with each finding's fix replaced by the first of its choices that leaves
    `source` with strictly fewer findings and none new (or None): what JSON and SARIF
    offer to tools that apply fixes without re-checking."""
    from dataclasses import replace

    findings = []
    for finding in result.findings:
        chosen = None
        if finding.fix is not None:
            for fix in (finding.fix, *finding.fix.alternatives):
                if _worse(result, check(apply(source, fix))) is None:
                    chosen = replace(fix, alternatives=())
                    break
        findings.append(replace(finding, fix=chosen))
    return FileResult(result.path, findings, result.errors, result.suppressed)
