"""The run's verdict on every call that can be a gradient event (gradlint/model/coverage.py).

A file's check decides what it can alone: the calls its own model followed, and why others
are no training code or are not followed.  Two things only the whole run knows:

* a call of this file that another file's loop followed into (that file's `reached`) is
  followed, whatever this file's check said;
* a call in a function no loop of its own file reaches (UNREACHED) has a caller somewhere
  or none: the names every analysed file calls (`called`) say which.  No caller: code that
  runs when something outside the project calls it, if ever, so no training the checker can
  follow (NO_CALLER), unless its own file names it without calling it (`STEPS = {"sgd":
  update}`): then a call through that name (DYNAMIC_NAME).  A caller the model did not follow the call from: CALLER_NOT_FOLLOWED,
  or SEVERAL_CLASSES when more than one class of the run defines a method of that name with
  gradient calls in it (the receiver's class decides which one runs).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

from gradlint.core.findings import FOLLOWED, NOT_FOLLOWED, NOT_TRAINING, UNREACHED, FileResult, GradientCall
from gradlint.model.coverage import CALLER_NOT_FOLLOWED, DYNAMIC_NAME, NO_CALLER, REFERENCED, SEVERAL_CLASSES


@dataclass(frozen=True)
class Verdict:
    """A gradient call of the run with its final verdict."""

    path: str
    call: GradientCall

    @property
    def verdict(self) -> str:
        return self.call.verdict

    @property
    def reason(self) -> str:
        return self.call.reason


def verdicts(results: list[FileResult]) -> list[Verdict]:
    """Every gradient call of the run's results, each with its final verdict, in path order."""
    reached = {(os.path.abspath(path), line, col) for r in results for path, line, col in r.reached}
    called: set = set()
    for r in results:
        called |= r.called
    # how many classes define a method of each name that holds an unreached gradient call
    owners: Counter = Counter()
    seen: set = set()
    for r in results:
        for call in r.gradient_calls:
            owner = call.reason.removeprefix(REFERENCED)
            if call.verdict == UNREACHED and "." in owner and (r.path, owner) not in seen:
                seen.add((r.path, owner))
                owners[owner.rsplit(".", 1)[1]] += 1
    out = []
    for r in sorted(results, key=lambda r: r.path):
        where = os.path.abspath(r.path) if r.gradient_calls and reached else r.path
        for call in r.gradient_calls:
            if call.verdict != FOLLOWED and (where, call.line, call.col) in reached:
                call = GradientCall(call.line, call.col, FOLLOWED)
            elif call.verdict == UNREACHED:
                call = _decided(call, called, owners)
            out.append(Verdict(r.path, call))
    return out


def _decided(call: GradientCall, called: set, owners: Counter) -> GradientCall:
    name = call.reason.rsplit(".", 1)[-1]
    if name not in called:
        if call.reason.startswith(REFERENCED):  # named, never called by that name: a dynamic call
            return GradientCall(call.line, call.col, NOT_FOLLOWED, DYNAMIC_NAME)
        return GradientCall(call.line, call.col, NOT_TRAINING, NO_CALLER)
    if "." in call.reason.removeprefix(REFERENCED) and owners[name] > 1:
        return GradientCall(call.line, call.col, NOT_FOLLOWED, SEVERAL_CLASSES)
    return GradientCall(call.line, call.col, NOT_FOLLOWED, CALLER_NOT_FOLLOWED)


def not_followed(results: list[FileResult]) -> list[Verdict]:
    return [v for v in verdicts(results) if v.verdict == NOT_FOLLOWED]
