"""Findings that one file's check makes in another file of the project.

A loop in train.py that calls `trainer.train_step(batch)` makes a bug of the clip that
train_step (in trainer.py) runs after its step.  The check of train.py finds it, and the
finding stands on the clip, in trainer.py: that is where the fix goes and where a `# noqa`
belongs (the call in train.py is a related location).  A run then settles such findings:

- one misplaced call, one finding: findings of the same code on the same call, from several
  callers (or from the file's own loops as well), become one, with every caller's call
  as a related location;
- the `# noqa` comments of the file that holds the call decide (not the caller's lines);
- the finding goes with that file's result when the run checks it, else it stays with the
  result of the first file whose check found it (a run of `gradlint train.py` still reports
  the bug that train.py's loop makes of trainer.py's clip, as mypy reports an error in a
  module it followed).
"""

from __future__ import annotations

import os
from dataclasses import replace

from gradlint.core.findings import FileResult, Finding


def is_elsewhere(finding: Finding, result_path: str) -> bool:
    """Whether a finding of `result_path`'s result stands in another file."""
    return finding.path != result_path and os.path.abspath(finding.path) != os.path.abspath(result_path)


def merged(first: Finding, second: Finding) -> Finding:
    """`first` with the related locations of `second` it lacks (another path to the same call)."""
    more = tuple(r for r in second.related if r not in first.related)
    return replace(first, related=first.related + more) if more else first


def settle(results: list, read) -> list:
    """The results of a run with every finding made elsewhere settled (see the module's text).
    `results`: FileResults, or None for a file with none; a list of the same length comes back.
    `read`: path -> the file's text now, or None when it cannot be read (its comments unknown)."""
    moved: dict = {}  # (file, code, span) -> (the finding, the index of the result it came from)
    out = list(results)
    for i, result in enumerate(results):
        if result is None or not any(is_elsewhere(f, result.path) for f in result.findings):
            continue
        for finding in result.findings:
            if is_elsewhere(finding, result.path):
                key = (os.path.abspath(finding.path), finding.code, finding.span)
                moved[key] = (merged(moved[key][0], finding), moved[key][1]) if key in moved else (finding, i)
        out[i] = replace(result, findings=[f for f in result.findings if not is_elsewhere(f, result.path)])
    if not moved:
        return results
    where = {os.path.abspath(r.path): i for i, r in enumerate(out) if r is not None}
    by_file: dict = {}
    for (file, _, _), (finding, origin) in moved.items():
        by_file.setdefault(file, []).append((finding, origin))
    for file, found in by_file.items():
        home = where.get(file)
        kept, suppressed = _suppressed_there(read(file), [f for f, _ in found])
        silenced = {id(f) for f in suppressed}
        for finding, origin in found:
            silent = id(finding) in silenced
            if home is not None:  # named as the run names that file
                out[home] = _with(out[home], replace(finding, path=out[home].path), silent)
            else:
                out[origin] = _with(out[origin], finding, silent)
    return out


def adopt(results: list, companions: list, adopters: list, read) -> list:
    """The run's results (one per file it checks) with what the checks of its companions found
    for them.  A companion is a module the run does not check, analysed for a file it checks
    (its `adopters` entry: that file's index in `results`): a base class there whose loop runs,
    through `self`, the file's override (gradlint/project/view.py's runs_for).  Of a companion's
    findings, those that stand outside it or rest on a call outside it (a related location in
    another file: the override) become findings of the adopter's result made elsewhere, which
    `settle` then places; the rest are the companion's own, reported when it is checked.  The
    calls its loops followed into count as followed by the adopter (`reached`); nothing else of
    a companion is reported (not its errors: the run was not asked to check it).  A finding
    that stands in the adopter itself is put with its own, under its `# noqa` comments (`read`:
    path -> its text now, as for `settle`)."""
    out = list(results)
    for companion, home in zip(companions, adopters):
        if companion is None or out[home] is None:
            continue
        own = os.path.abspath(companion.path)
        found = [f for f in companion.findings if _outside(f, own)]
        there = [f for f in found if not is_elsewhere(f, out[home].path)]
        result = out[home]
        reached = [r for r in companion.reached if r not in result.reached]
        result = replace(result, findings=result.findings + [f for f in found if is_elsewhere(f, result.path)],
                         reached=result.reached + reached)
        if there:
            silenced = {id(f) for f in _suppressed_there(read(result.path), there)[1]}
            for finding in there:
                result = _with(result, replace(finding, path=result.path), id(finding) in silenced)
        out[home] = result
    return out


def _outside(finding: Finding, own: str) -> bool:
    """Does the finding stand, or rest on a related call, in another file than `own`?"""
    if os.path.abspath(finding.path) != own:
        return True
    return any(r.path is not None and os.path.abspath(r.path) != own for r in finding.related)


def _with(result: FileResult, finding: Finding, silenced: bool) -> FileResult:
    """`result` holding `finding` (merged into a finding of the same code on the same call)."""
    findings, suppressed = list(result.findings), list(result.suppressed)
    for group in (findings, suppressed):
        for n, other in enumerate(group):
            if (other.code, other.span) == (finding.code, finding.span) and not is_elsewhere(other, finding.path):
                # the file's own check read the call alone (a function with a step of its own):
                # its fix stays, the words of the loop that runs it tell more
                group[n] = replace(merged(other, finding), message=finding.message)
                return replace(result, findings=findings, suppressed=suppressed)
    (suppressed if silenced else findings).append(finding)
    key = Finding.sort_key
    return replace(result, findings=sorted(findings, key=key), suppressed=sorted(suppressed, key=key))


def _suppressed_there(source, findings: list) -> tuple[list, list]:
    """(kept, suppressed) by the `# noqa` comments of `source`, the text of the file that holds
    the findings' calls: a finding whose file could not be read (None) is kept."""
    from gradlint.check.suppress import apply_suppressions

    if source is None:
        return findings, []
    return apply_suppressions(findings, source)
