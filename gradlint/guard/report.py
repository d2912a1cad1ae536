"""A finding of the guard, in the rule's words, and how it reaches the user (warn, raise, log).

No torch here: the rank comes from torch.distributed only when torch is already imported.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Optional

from gradlint.rules.registry import rules_by_code
from gradlint.verify.verdicts import display_path

MODES = ("warn", "raise", "log")
LOGGER = logging.getLogger("gradlint.guard")


class GradlintGuardWarning(UserWarning):
    """A gradient bug the guard saw in this run (mode "warn"); `-W error` turns it into an error."""


class GradlintGuardError(RuntimeError):
    """A gradient bug the guard saw in this run (mode "raise"), raised from the offending call."""


def rank() -> Optional[int]:
    """This process's rank in a distributed run, or None in a single-process run."""
    dist = getattr(sys.modules.get("torch"), "distributed", None)
    try:
        if dist is not None and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            return dist.get_rank()
    except (RuntimeError, ValueError):
        pass
    value = os.environ.get("RANK")
    world = os.environ.get("WORLD_SIZE")
    return int(value) if value and value.isdigit() and world and world != "1" else None


@dataclass
class Report:
    code: str
    name: str
    summary: str  # the rule's own words
    path: Optional[str]
    line: int
    evidence: str  # what this run did
    related: list = field(default_factory=list)  # (path, line) of the calls that make it a bug
    rank: Optional[int] = None
    lines: set = field(default_factory=set, repr=False)  # every user line of the calls' stacks (helpers' callers)

    @staticmethod
    def of(detection, replay) -> "Report":
        rule = rules_by_code().get(detection.code)
        own = (detection.file, detection.line)
        related = sorted({site for site in detection.calls if site != own and site[0]}, key=lambda s: (s[0], s[1]))
        return Report(
            detection.code, rule.name if rule else "", rule.summary if rule else "", detection.file,
            detection.line, detection.evidence, related, rank(), set(detection.lines),
        )

    @property
    def where(self) -> str:
        return f"{display_path(self.path)}:{self.line}" if self.path else "an unknown line"

    def __str__(self) -> str:
        rank = f" [rank {self.rank}]" if self.rank is not None else ""
        related = ""
        if self.related:
            related = " Related: " + ", ".join(f"{display_path(p)}:{n}" for p, n in self.related) + "."
        return f"{self.where}: {self.code} {self.name}{rank}: {self.summary} In this run: {self.evidence}.{related}"


def deliver(report: Report, mode: str) -> None:
    text = str(report)
    if mode == "raise":
        raise GradlintGuardError(text)
    if mode == "log":
        LOGGER.warning(text)
        return
    # once per site: the guard reports a site once, so the registry need not remember it
    warnings.warn_explicit(text, GradlintGuardWarning, report.path or "<unknown>", report.line or 0)
