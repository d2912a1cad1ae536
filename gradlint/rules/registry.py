"""Metadata of every rule, and selection by code or prefix.

Kept free of libcst and of the analysis so that `gradlint rules`,
`--select` validation and the reports can use it cheaply.  Each rule
module under gradlint/rules/ defines a RULE; this module lists them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from gradlint import DOCS_URL

RULE_MODULES = (
    "gl001_missing_zero_grad",
    "gl002_zero_grad_discards",
    "gl003_zero_grad_target_mismatch",
    "gl004_clip_after_step",
    "gl005_clip_before_backward",
    "gl006_clip_without_unscale",
    "gl007_step_before_backward",
    "gl008_scheduler_before_step",
    "gl101_prefer_optimizer_zero_grad",
    "gl102_set_to_none_false",
)


def rule_page_url(code: str) -> str:
    """The page docs/rules/<code>.md (scripts/gen_rule_docs.py writes it from the rule's metadata)."""
    return f"{DOCS_URL}rules/{code}.md"


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str  # one line, what the bug is
    rationale: str  # why, in PyTorch terms
    wrong: str  # a short wrong example for `gradlint explain`
    right: str  # the same loop, fixed
    default: bool
    # check(file_model) -> iterable of RawFinding; see gradlint/rules/base.py
    check: Callable = field(compare=False, repr=False)
    # Samples that the generic test runs: each INVALID sample marks its
    # offending lines with `# expect: GLxxx`; VALID samples must be clean.
    valid: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    # What `--fix` does for it and whether that is safe (`gradlint explain`, its docs page); "" if nothing.
    fix: str = ""
    # What the rule deliberately leaves alone, for its docs page and `gradlint explain`; "" if nothing.
    limits: str = ""

    @property
    def docs_url(self) -> str:
        return rule_page_url(self.code)


@lru_cache(maxsize=None)
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for module_name in RULE_MODULES:
        module = importlib.import_module(f"gradlint.rules.{module_name}")
        rules.append(module.RULE)
    return tuple(rules)


@lru_cache(maxsize=None)
def rules_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}


# Codes and default states without importing the rules (they import libcst):
# --select and Settings.default() stay cheap.  tests/test_startup.py checks
# these against all_rules().
OFF_BY_DEFAULT = frozenset({"GL101", "GL102"})


# Names without importing the rules: the JSON report of a warm run never needs libcst (0.3 s and
# more of a run answered from the cache).  tests/test_run.py checks them against all_rules().
NAMES = {
    "GL001": "missing-zero-grad",
    "GL002": "zero-grad-discards-gradients",
    "GL003": "zero-grad-target-mismatch",
    "GL004": "clip-after-step",
    "GL005": "clip-before-backward",
    "GL006": "clip-without-unscale",
    "GL007": "step-before-backward",
    "GL008": "scheduler-before-step",
    "GL101": "prefer-optimizer-zero-grad",
    "GL102": "set-to-none-false",
}


def all_codes() -> list[str]:
    return [name.split("_", 1)[0].upper() for name in RULE_MODULES]


def default_codes() -> list[str]:
    return [code for code in all_codes() if code not in OFF_BY_DEFAULT]


class UnknownCode(ValueError):
    pass


def expand(selectors: Iterable[str]) -> set[str]:
    """Codes matching each selector: a full code, a prefix (`GL1`), or ALL."""
    codes = all_codes()
    chosen: set[str] = set()
    for raw in selectors:
        selector = raw.strip().upper()
        if not selector:
            continue
        if selector == "ALL":
            chosen.update(codes)
            continue
        matched = [code for code in codes if code.startswith(selector)]
        if not matched:
            raise UnknownCode(f"unknown rule code or prefix: {raw!r}")
        chosen.update(matched)
    return chosen


def effective_codes(
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    extend_select: Iterable[str] = (),
) -> frozenset[str]:
    """ruff's semantics: select replaces the defaults, extend-select adds, ignore removes."""
    base = set(default_codes()) if select is None else expand(select)
    base |= expand(extend_select)
    base -= expand(ignore)
    return frozenset(base)
