"""Apply a source's fixes, keeping only those that provably help.

One criterion, `_worse`, says whether fixes applied to a text helped: the
text still parses, has no finding of a code it did not have as often, and
for each fix one finding fewer of the code that fix repairs (a fix must not
trade one bug for another).  `decide` asks it of one finding's repairs.
Everything that shows or applies a fix rests on it: `--fix` and `--diff`
(the session below), the text report's `[*]` marks and its "N fixable" count
(the session run without writing: a finding is marked when the session
repairs it), JSON and SARIF (`proven_fixes`) and the language server's quick
fix (`decide` on the buffer).

The session applies every finding's first repair at once when their edits do
not overlap and the criterion holds for all of them (one analysis for a
whole file's fixes); when it does not, the shortest failing prefix of the
batch names the fix to drop (a bisection: log2 of the batch's size in
analyses), the prefix before it is kept, and the next round starts from the
new text.  A dropped repair gives way to the finding's next alternative; once
nothing is left to try, the dropped ones are tried once more if the code
changed since.  Notebooks take one fix at a time (each must stay within a
cell).  The safe fixes come first; with --unsafe-fixes the session then goes
on with the unsafe ones, so `--fix --unsafe-fixes` does what `--fix` does and
more, as the summary's "N unsafe fixes available" says.  What was fixed and
what was not (and why) is recorded for `--show-fixes`.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple, Optional, Sequence

from gradlint.core.findings import SAFE, UNSAFE, FileResult, Finding, Fix
from gradlint.fix import apply, apply_all

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


def _worse(before: FileResult, after: FileResult, targets: Sequence[str] = ()) -> Optional[str]:
    """Why `after` is not an improvement over `before`, or None if it is.  `targets`: the code
    of the finding each applied fix repairs (each must leave one finding of its code fewer)."""
    if after.errors:
        return "the fixed code would not parse"
    had = Counter(f.code for f in before.findings)
    has = Counter(f.code for f in after.findings)
    gained = has - had
    if gained:
        return "it would add " + ", ".join(sorted(gained))
    if not targets:
        return "the finding would remain" if len(after.findings) >= len(before.findings) else None
    for code, fixes in Counter(targets).items():
        if had[code] - has[code] < fixes:
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
            known = (after, _worse(before, after, (finding.code,)) or "")
            if tried is not None:
                tried[fix] = known
        after, reason = known
        if not reason:
            return Decision(fix, after, "", checks)
    return Decision(None, None, reason, checks)


def _ANY(fix: Fix) -> bool:
    return True


def _IGNORE(fix: Fix, before: str, after: str) -> None:
    return None


def fix_source(
    source: str,
    check: Callable[[str], FileResult],
    unsafe: bool = False,
    allowed: Callable[[Fix], bool] = _ANY,
    accepted: Callable[[Fix, str, str], None] = _IGNORE,
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
    one_at_a_time = allowed is not _ANY or accepted is not _IGNORE  # a notebook follows each fix
    state = _Session(source, current, check, allowed, accepted, where, one_at_a_time)
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

    def __init__(self, source, current: FileResult, check, allowed, accepted, where, one_at_a_time: bool):
        self.text, self.result = source, current
        self.check, self.allowed, self.accepted, self.where = check, allowed, accepted, where
        self.one_at_a_time = one_at_a_time
        self.fixed: list[str] = []
        self.rejected: dict[tuple, str] = {}  # finding key -> why its last repair tried was dropped
        self.origins: list[Optional[int]] = list(range(len(current.findings)))
        self.left_origins: Optional[list[Optional[int]]] = None  # into the result of the safe fixes
        self.offered: dict[int, str] = {}
        self.left: dict[int, str] = {}
        self.kind = SAFE  # of the fixes being kept: UNSAFE once the session goes on with them
        self.checks = 0

    def run(self, unsafe: bool) -> None:
        self.kind = UNSAFE if unsafe else SAFE
        dropped: set[tuple] = set()  # (finding key, repair) already refused
        changed_since = False  # the text changed after a repair was refused
        while self.checks < MAX_CHECKS:
            batch = self._batch(unsafe, dropped)
            if not batch:
                if dropped and changed_since:  # the code changed: what failed may work now
                    dropped.clear()
                    changed_since = False
                    continue
                break
            if self._round(batch, dropped):
                changed_since = True

    def _batch(self, unsafe: bool, dropped: set) -> list:
        """(finding index, finding, repair) for each finding with a repair left to try, the
        repairs' edits pairwise apart; one entry when fixes go one at a time."""
        batch = []
        for index, finding in enumerate(self.result.findings):
            if finding.fix is None:
                continue
            key = _key(finding, unsafe)
            for fix in _choices(finding.fix, unsafe):
                if self.allowed(fix) and (key, fix) not in dropped:
                    batch.append((index, finding, fix))
                    break
            if batch and self.one_at_a_time:
                break
        return _apart(batch)

    def _round(self, batch: list, dropped: set) -> bool:
        """Apply the batch, or its longest prefix that helps, dropping the repair after it;
        True when the text changed."""
        def attempt(size: int):
            self.checks += 1
            after = self.check(apply_all(self.text, [fix for _, _, fix in batch[:size]]))
            return after, _worse(self.result, after, [finding.code for _, finding, _ in batch[:size]])

        after, reason = attempt(len(batch))
        if not reason:
            self._keep(batch, after)
            return True
        good, bad = (0, None), len(batch)  # the prefix of `good[0]` helps, that of `bad` does not
        while bad - good[0] > 1 and self.checks < MAX_CHECKS:
            middle = (good[0] + bad) // 2
            tried, why = attempt(middle)
            if why:
                bad, reason = middle, why
            else:
                good = (middle, tried)
        if bad - good[0] == 1:
            _, finding, fix = batch[bad - 1]
            dropped.add((_key(finding, self.kind == UNSAFE), fix))
            self.rejected[_key(finding, self.kind == UNSAFE)] = reason
        if good[0]:
            self._keep(batch[: good[0]], good[1])
            return True
        return False

    def _keep(self, batch: list, after: FileResult) -> None:
        fixes = [fix for _, _, fix in batch]
        candidate = apply_all(self.text, fixes)
        if self.one_at_a_time:
            self.accepted(fixes[0], self.text, candidate)
        for index, finding, fix in batch:
            self.fixed.append(f"{finding.code} {self.where(finding.span.line)}: {fix.description}")
            origin = self.origins[index]
            if origin is not None:
                self.offered[origin] = self.kind
            if self.left_origins is not None and self.left_origins[index] is not None:
                self.left[self.left_origins[index]] = self.kind
        matched = _carry(self.result.findings, [edit for fix in fixes for edit in fix.edits], after.findings)
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


def _key(finding: Finding, unsafe: bool) -> tuple:
    return (finding.code, finding.span, finding.message, unsafe)


def _apart(batch: list) -> list:
    """The batch without every repair whose edits overlap or touch an earlier one's (a move's
    deletion and another's insertion at the same place cannot both be applied)."""
    spans = sorted(
        ((edit.span.line, edit.span.col), (edit.span.end_line, edit.span.end_col), position)
        for position, (_, _, fix) in enumerate(batch)
        for edit in fix.edits
    )
    clashing: set[int] = set()
    reach, owner = None, None  # the furthest end so far and whose edit it is
    for start, end, position in spans:
        if reach is not None and start <= reach and owner != position:
            clashing.add(max(position, owner))
        if reach is None or end > reach:
            reach, owner = end, position
    return [entry for position, entry in enumerate(batch) if position not in clashing]


def _line_map(edits) -> Callable[[int], Optional[int]]:
    """Where each line of the text before `edits` is after them (None: an edit rewrote it),
    in O(log edits) per line."""
    import bisect

    points, covered = [], []
    for edit in edits:
        span = edit.span
        delta = edit.new_text.count("\n") - (span.end_line - span.line)
        points.append((span.end_line if span.end_col == 1 else span.end_line + 1, delta))  # lines from here move
        last = span.end_line - 1 if span.end_col == 1 else span.end_line
        if last >= span.line:
            covered.append((span.line, last))
    points.sort()
    firsts = [first for first, _ in points]
    shifts = [0]
    for _, delta in points:
        shifts.append(shifts[-1] + delta)
    covered.sort()
    starts = [first for first, _ in covered]
    reach = []  # the furthest covered line among the first k intervals
    for _, last in covered:
        reach.append(max(last, reach[-1]) if reach else last)

    def moved(line: int) -> Optional[int]:
        k = bisect.bisect_right(starts, line)
        if k and reach[k - 1] >= line:
            return None
        return line + shifts[bisect.bisect_right(firsts, line)]

    return moved


def _carry(old: list[Finding], edits: list, new: list[Finding]) -> list[Optional[int]]:
    """For each finding of `new` (after `edits`), the index of the one of `old` it is, or None:
    the same code and message (line numbers aside) on the line the edits moved it to; else
    the nearest such one left over; else the nearest of the same code."""
    moved = _line_map(edits)
    lines = [moved(f.span.line) for f in old]
    shapes = [(f.code, _NUMBER.sub("#", f.message)) for f in old]
    exact: dict[tuple, list[int]] = {}
    for index in range(len(old) - 1, -1, -1):  # popped from the end: in file order
        if lines[index] is not None:
            exact.setdefault((*shapes[index], lines[index]), []).append(index)
    taken: set[int] = set()
    out: list[Optional[int]] = [None] * len(new)
    for position, finding in enumerate(new):
        here = exact.get((finding.code, _NUMBER.sub("#", finding.message), finding.span.line))
        if here:
            out[position] = here.pop()
            taken.add(out[position])
    left = [position for position, index in enumerate(out) if index is None]
    if not left:
        return out
    free = [index for index in range(len(old)) if index not in taken]
    for exact_shape in (True, False):
        for position in left:
            if out[position] is not None:
                continue
            finding = new[position]
            wanted = (finding.code, _NUMBER.sub("#", finding.message))

            def near(index: int, line: int = finding.span.line) -> int:
                return abs(lines[index] - line) if lines[index] is not None else abs(old[index].span.line - line)

            same = [i for i in free if (shapes[i] == wanted if exact_shape else shapes[i][0] == finding.code)]
            if same:
                best = min(same, key=near)
                free.remove(best)
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


def marked(result: FileResult, kinds: dict) -> FileResult:
    """`result` whose findings carry a fix only where `kinds` (finding index -> SAFE or UNSAFE,
    Outcome.offered) says the session repairs them, of that kind.  For the text report only:
    the fix's edits are not offered to anyone (a notebook's count lines of its joined cells)."""

    def mark(index: int, finding: Finding) -> Finding:
        kind = kinds.get(index)
        if kind is None:
            return replace(finding, fix=None)
        fix = finding.fix or Fix("", ())
        return replace(finding, fix=replace(fix, applicability=kind, alternatives=()))

    return replace(result, findings=[mark(i, f) for i, f in enumerate(result.findings)])


def marked_fixes(source: str, result: FileResult, check: Callable[[str], FileResult]) -> FileResult:
    """`result` marked with what `--fix --unsafe-fixes` does to each finding of `source` (the
    text report's `[*]` and fixable count): the session is run, nothing is written."""
    if not any(f.fix for f in result.findings) or any(error.whole_file for error in result.errors):
        return marked(result, {})
    return marked(result, fix_source(source, check, True, initial=result).offered)
