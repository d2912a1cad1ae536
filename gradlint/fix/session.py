"""Apply a source's fixes one at a time, keeping only those that provably help.

One decision, `decide`, says whether a finding's fix is worth applying to a
text: the first of its repairs after which the text still parses and has
strictly fewer findings, none of a code that was not there as often before (a
fix must not trade one bug for another).  Everything that shows or applies a
fix asks it: `--fix` and `--diff` (the session below, one fix at a time), the
text report's `[*]` marks and its "N fixable" count (the session run without
writing: a finding is marked when the session repairs it), JSON and SARIF
(`proven_fixes`) and the language server's quick fix.

The session first applies the safe fixes; with --unsafe-fixes it then goes on
with the unsafe ones, so `--fix --unsafe-fixes` does what `--fix` does and
more, as the summary's "N unsafe fixes available" says.  A rejected fix is
tried again after another fix succeeded (the code around it changed); each
finding's alternatives are tried in order.  What was fixed and what was not
(and why) is recorded for `--show-fixes`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple, Optional

from gradlint.findings import SAFE, UNSAFE, FileResult, Finding, Fix
from gradlint.fix import apply

MAX_CHECKS = 40  # re-checks per file: each costs one analysis


@dataclass
class Outcome:
    text: str  # the source after every kept fix
    result: FileResult  # its findings
    fixed: list[str] = field(default_factory=list)  # "GL002 line 14: Move ..." per kept fix
    not_fixed: list[str] = field(default_factory=list)  # "GL001 line 9: why"
    # What the marks say, by the index of a finding in the initial result: SAFE when --fix
    # repairs it, UNSAFE when only --fix --unsafe-fixes does (known when the session went on
    # with the unsafe fixes).
    offered: dict[int, str] = field(default_factory=dict)
    # The same for the findings of `result` (what is left): UNSAFE for those --unsafe-fixes repairs.
    left: dict[int, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.fixed)


@dataclass
class FileFix:
    """One file's fixing: its text before and after (what --diff shows), and what was done."""

    before: str
    after: str
    outcome: Outcome


class Decision(NamedTuple):
    fix: Optional[Fix]  # the repair to apply, or None
    after: Optional[FileResult]  # the text's findings once it is applied
    reason: str  # why none, when none
    checks: int  # analyses spent


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
    """The repairs to try in order: the safe ones first, then (with `unsafe`) the unsafe ones."""
    every = (fix, *fix.alternatives)
    return [f for f in every if f.safe] + ([f for f in every if not f.safe] if unsafe else [])


def decide(
    text: str,
    before: FileResult,
    finding: Finding,
    check: Callable[[str], FileResult],
    unsafe: bool,
    allowed: Callable[[Fix], bool] = lambda fix: True,
    limit: Optional[int] = None,
    tried: Optional[dict] = None,
) -> Decision:
    """The one decision: the first repair of `finding` (`before`: the findings of `text`) that
    `allowed` admits and after which `text` is better (_worse), or none and why.
    `limit`: at most that many analyses; `tried`: the answers already known for this `text`."""
    if finding.fix is None:
        return Decision(None, None, "", 0)
    reason, checks = "", 0
    for fix in _choices(finding.fix, unsafe):
        if not allowed(fix):
            continue
        known = tried.get(fix) if tried is not None else None
        if known is None:
            if limit is not None and checks >= limit:
                break
            candidate = apply(text, fix)
            after = check(candidate)
            checks += 1
            known = (after, _worse(before, after) or "")
            if tried is not None:
                tried[fix] = known
        after, reason = known
        if not reason:
            return Decision(fix, after, "", checks)
    return Decision(None, None, reason, checks)


def fix_source(
    source: str,
    check: Callable[[str], FileResult],
    unsafe: bool = False,
    allowed: Callable[[Fix], bool] = lambda fix: True,
    accepted: Callable[[Fix, str, str], None] = lambda fix, before, after: None,
    initial: Optional[FileResult] = None,
    where: Callable[[int], str] = _line,
    count_unsafe: bool = False,
    safe_done: Callable[[], None] = lambda: None,
) -> Outcome:
    """Fix `source`; `check(text)` analyses a version of it (`initial`: its result, if known).
    `allowed(fix)` can veto a fix before it is tried (a notebook refuses edits that span
    two cells); `accepted(fix, before, after)` hears of each fix kept; `where(line)` names
    a line in what --show-fixes prints (a notebook names the cell).  `count_unsafe`: without
    `unsafe`, go on with the unsafe fixes only to learn which findings they would repair
    (Outcome.offered, Outcome.left), keeping the text of the safe ones; `safe_done()` is
    called when the safe fixes are all applied, before any unsafe one."""
    current = initial if initial is not None else check(source)
    state = _Session(source, current, check, allowed, accepted, where)
    state.run(unsafe=False)
    safe = (state.text, state.result, list(state.fixed), dict(state.rejected), list(state.origins))
    safe_done()
    if not unsafe and not count_unsafe:
        return state.outcome(unsafe)
    state.left_origins = list(range(len(state.result.findings)))
    state.run(unsafe=True)
    if unsafe:
        return state.outcome(unsafe)
    # --fix without --unsafe-fixes: the safe fixes' text, and what the unsafe ones would repair
    unsafe_offers = state.offered
    state.text, state.result, state.fixed, state.rejected, state.origins = safe
    outcome = state.outcome(unsafe)
    outcome.offered = unsafe_offers
    outcome.left = state.left
    return outcome


class _Session:
    """The state of one file's fixing; `origins` follows each current finding back to the
    initial one it is (a fix shifts lines and rewrites the `(line N)` in messages)."""

    def __init__(self, source, current: FileResult, check, allowed, accepted, where):
        self.text, self.result = source, current
        self.check, self.allowed, self.accepted, self.where = check, allowed, accepted, where
        self.fixed: list[str] = []
        self.rejected: dict[tuple, str] = {}
        self.origins: list[Optional[int]] = list(range(len(current.findings)))
        self.left_origins: Optional[list[Optional[int]]] = None  # into the result of the safe fixes
        self.offered: dict[int, str] = {}
        self.left: dict[int, str] = {}
        self.kind = SAFE  # of the fixes being kept: UNSAFE once the session goes on with them
        self.checks = 0

    def run(self, unsafe: bool) -> None:
        self.kind = UNSAFE if unsafe else SAFE
        tried: dict = {}  # fix -> (after, reason) for the current text
        while self.checks < MAX_CHECKS:
            progress = False
            for index, finding in enumerate(self.result.findings):
                key = (finding.code, finding.span, finding.message, unsafe)
                if finding.fix is None or key in self.rejected:
                    continue
                decision = decide(
                    self.text, self.result, finding, self.check, unsafe, self.allowed,
                    MAX_CHECKS - self.checks, tried,
                )
                self.checks += decision.checks
                if decision.fix is not None:
                    self._keep(index, finding, decision)
                    tried.clear()
                    progress = True
                    break
                if decision.reason:
                    self.rejected[key] = decision.reason
                if self.checks >= MAX_CHECKS:
                    break
            if progress:
                self.rejected.clear()  # the code changed: what failed may work now
                continue
            break

    def _keep(self, index: int, finding: Finding, decision: Decision) -> None:
        fix, after = decision.fix, decision.after
        candidate = apply(self.text, fix)
        self.accepted(fix, self.text, candidate)
        self.fixed.append(f"{finding.code} {self.where(finding.span.line)}: {fix.description}")
        origin = self.origins[index]
        if origin is not None:
            self.offered[origin] = self.kind
        if self.left_origins is not None and self.left_origins[index] is not None:
            self.left[self.left_origins[index]] = self.kind
        matched = _carry(self.result.findings, fix, after.findings)
        self.origins = [None if m is None else self.origins[m] for m in matched]
        if self.left_origins is not None:
            self.left_origins = [None if m is None else self.left_origins[m] for m in matched]
        self.text, self.result = candidate, after

    def outcome(self, unsafe: bool) -> Outcome:
        outcome = Outcome(self.text, self.result, list(self.fixed), offered=dict(self.offered))
        for finding in self.result.findings:
            why = _why_not(finding, self.rejected, unsafe, self.allowed)
            outcome.not_fixed.append(f"{finding.code} {self.where(finding.span.line)}: {why}")
        return outcome


_NUMBER = re.compile(r"\d+")


def _moved_line(fix: Fix, line: int) -> Optional[int]:
    """Where line `line` of the text before `fix` is after it (None: an edit rewrote it)."""
    shift = 0
    for edit in fix.edits:
        span = edit.span
        if span.end_line < line or (span.end_line == line and span.end_col == 1):
            shift += edit.new_text.count("\n") - (span.end_line - span.line)
        elif span.line <= line:
            return None
    return line + shift


def _carry(old: list[Finding], fix: Fix, new: list[Finding]) -> list[Optional[int]]:
    """For each finding of `new` (after `fix`), the index of the one of `old` it is, or None:
    same code and message (line numbers aside), the nearest once old lines are moved by the
    fix; else the same code, nearest."""
    moved = [_moved_line(fix, f.span.line) for f in old]
    buckets: dict[tuple, list[int]] = {}
    for index, finding in enumerate(old):
        buckets.setdefault((finding.code, _NUMBER.sub("#", finding.message)), []).append(index)
        buckets.setdefault((finding.code,), []).append(index)
    taken: set[int] = set()
    out: list[Optional[int]] = [None] * len(new)
    for exact in (True, False):
        for position, finding in enumerate(new):
            if out[position] is not None:
                continue
            key = (finding.code, _NUMBER.sub("#", finding.message)) if exact else (finding.code,)
            free = [i for i in buckets.get(key, ()) if i not in taken]
            if not free:
                continue

            def distance(i: int, line: int = finding.span.line) -> int:
                return abs(moved[i] - line) if moved[i] is not None else 1 << 30

            best = min(free, key=distance)
            taken.add(best)
            out[position] = best
    return out


def _why_not(finding: Finding, rejected: dict, unsafe: bool, allowed) -> str:
    fix = finding.fix
    if fix is None:
        return "no automatic fix for this shape of code"
    choices = (fix, *fix.alternatives)
    if not unsafe and not any(f.safe for f in choices):
        return f"an unsafe fix is available ({fix.description}): use --unsafe-fixes"
    if not any(allowed(f) for f in choices):
        return "the fix would span two notebook cells"
    reason = rejected.get((finding.code, finding.span, finding.message, unsafe))
    return f"{fix.description} was dropped: {reason}" if reason else "too many fixes in one file"


def proven_fixes(source: str, result: FileResult, check: Callable[[str], FileResult]) -> FileResult:
    """`result` with each finding's fix replaced by the repair `decide` picks for `source`
    (safe ones first), or None: what JSON and SARIF offer to tools that apply fixes without
    re-checking."""
    findings = []
    for finding in result.findings:
        chosen = decide(source, result, finding, check, unsafe=True).fix
        findings.append(replace(finding, fix=None if chosen is None else replace(chosen, alternatives=())))
    return FileResult(result.path, findings, result.errors, result.suppressed)
