"""Metadata of every rule, and selection by code or prefix.

Kept free of libcst and of the analysis so that `gradlint rules`,
`--select` validation and the reports can use it cheaply.

A rule is one module, gradlint/rules/glNNN_<name>.py, that defines RULE:
its metadata and docs, its VALID / INVALID samples (with the text its fix
makes of them), `check()`, its fixes, its run-time criterion and the codes it
supersedes.  This module discovers those modules by their file names (no
list to edit), reads each one's code, name and default from its RULE
statement without importing it (the rules import libcst), and resolves
`supersedes`: a rule never imports another rule to stay silent where that
one reports (see `claimed`).
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Optional, Union

from gradlint import DOCS_URL

_RULE_FILE = re.compile(r"gl\d{3}_\w+")


def _discover() -> tuple[str, ...]:
    """The rule modules beside this one, in code order (their names start with the code)."""
    return tuple(sorted(name for _, name, _ in pkgutil.iter_modules([str(Path(__file__).parent)])
                        if _RULE_FILE.fullmatch(name)))


RULE_MODULES = _discover()

# Rules added at run time (a plugin, or a rule written in a test): see register().
_REGISTERED: list = []


def rule_page_url(code: str) -> str:
    """The page docs/rules/<code>.md (scripts/gen_rule_docs.py writes it from the rule's metadata)."""
    return f"{DOCS_URL}rules/{code}.md"


@dataclass(frozen=True)
class Invalid:
    """An INVALID sample (Fixit's habit): code whose reported lines are marked `# expect: GLxxx`,
    and, where the rule has a fix, the text `--fix --unsafe-fixes` makes of it (tests/test_fixes.py
    checks both, and that no finding is left)."""

    source: str
    fixed: Optional[str] = None  # None: not pinned (no fix, or one this sample does not show)


@dataclass(frozen=True)
class Criterion:
    """What `gradlint verify` watches for to confirm a finding of the rule (verify/verdicts.py).

    `detect(replay, index, event)` runs on every event of kind `on` (in the order given by
    `order`, lowest first, among the criteria of that kind) and calls `replay.detect(...)` when
    the run shows the bug; it sees the state the replay keeps (each gradient's provenance).
    `reported_on` is the kind of event the static finding sits on, `followed_by` the kind that
    must come after it for the bug to show; a finding whose path never ran so is "not reached"."""

    on: str
    detect: Callable = field(compare=False, repr=False)
    reported_on: str
    followed_by: str = "S"
    order: int = 0
    # masked(run, home) -> why this run could not show the bug although its path ran (GL006: the
    # GradScaler was disabled on this device), or None.
    masked: Optional[Callable] = field(default=None, compare=False, repr=False)


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
    invalid: tuple[Union[Invalid, str], ...] = ()
    # What `--fix` does for it and whether that is safe (`gradlint explain`, its docs page); "" if nothing.
    fix: str = ""
    # What the rule deliberately leaves alone, for its docs page and `gradlint explain`; "" if nothing.
    limits: str = ""
    # fixes(raw, file) -> the candidate repairs of one finding, best first (None where one cannot
    # be made): fix/plan.py keeps the first and offers the others as alternatives.  None: the
    # finding's own `fix`.
    fixes: Optional[Callable] = field(default=None, compare=False, repr=False)
    # The codes this rule supersedes: where it reports a call, they leave that call alone (one
    # misplaced call, one finding).  `claims(file, loop)` gives the keys of those calls.
    supersedes: tuple[str, ...] = ()
    claims: Optional[Callable] = field(default=None, compare=False, repr=False)
    criterion: Optional[Criterion] = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.supersedes and self.claims is None:
            raise ValueError(f"{self.code} supersedes {', '.join(self.supersedes)} but gives no claims")
        invalid = tuple(s if isinstance(s, Invalid) else Invalid(s) for s in self.invalid)
        object.__setattr__(self, "invalid", invalid)

    @property
    def docs_url(self) -> str:
        return rule_page_url(self.code)

    @property
    def samples(self) -> tuple[str, ...]:
        """Every sample's text: the valid ones, then the invalid ones."""
        return self.valid + tuple(sample.source for sample in self.invalid)


def register(rule: Rule) -> Rule:
    """Add a rule that lives outside gradlint/rules/ (a plugin; a rule written in a test).
    It is checked, fixed, documented and verified like the others, in this process."""
    if rule.code in {r.code for r in all_rules()}:
        raise ValueError(f"{rule.code} is already a rule")
    _REGISTERED.append(rule)
    _forget()
    return rule


def unregister(code: str) -> None:
    _REGISTERED[:] = [rule for rule in _REGISTERED if rule.code != code]
    _forget()


def _forget() -> None:
    for cached in (all_rules, rules_by_code, _superseders):
        cached.cache_clear()


@lru_cache(maxsize=None)
def all_rules() -> tuple[Rule, ...]:
    rules = []
    for module_name in RULE_MODULES:
        module = importlib.import_module(f"gradlint.rules.{module_name}")
        rules.append(module.RULE)
    return tuple(rules) + tuple(_REGISTERED)


@lru_cache(maxsize=None)
def rules_by_code() -> dict[str, Rule]:
    return {rule.code: rule for rule in all_rules()}


@lru_cache(maxsize=None)
def _superseders() -> dict[str, tuple[Rule, ...]]:
    """code -> the rules that declare they supersede it."""
    by: dict[str, list] = {}
    for rule in all_rules():
        for code in rule.supersedes:
            by.setdefault(code, []).append(rule)
    return {code: tuple(rules) for code, rules in by.items()}


def claimed(file, loop, code: str) -> frozenset:
    """The keys of the calls in `loop` that a rule superseding `code` reports, whether or not
    that rule is selected: the rule `code` leaves them alone.  Each rule's claims are worked
    out once per loop (several rules ask) and kept on the loop."""
    keys: frozenset = frozenset()
    for rule in _superseders().get(code, ()):
        memo = loop.__dict__.setdefault("_claims", {})
        if rule.code not in memo:
            memo[rule.code] = frozenset(rule.claims(file, loop))
        keys |= memo[rule.code]
    return keys


@lru_cache(maxsize=None)
def _statements() -> tuple[tuple[str, str, bool], ...]:
    """(code, name, default) of each rule module, read from its `RULE = Rule(...)` statement
    without importing it: --select, Settings.default() and a warm run's JSON stay cheap."""
    found = []
    folder = Path(__file__).parent
    for module_name in RULE_MODULES:
        tree = _rule_statement((folder / f"{module_name}.py").read_text(encoding="utf-8"))
        call = next(
            node.value for node in tree.body
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["RULE"]
        )
        words = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in ("code", "name", "default")}
        found.append((words["code"], words["name"], words["default"]))
    return tuple(found)


def _rule_statement(text: str) -> ast.Module:
    """The module's `RULE = Rule(...)` statement parsed alone when it is written as the rule
    modules write it (ending with a `)` of its own at the line's start): parsing every rule
    module whole cost about 8 ms a process.  Otherwise the whole module."""
    start = text.find("\nRULE = Rule(")
    end = text.find("\n)", start) if start >= 0 else -1
    if end >= 0:
        try:
            return ast.parse(text[start + 1 : end + 2])
        except SyntaxError:
            pass
    return ast.parse(text)


def _metadata() -> list[tuple[str, str, bool]]:
    return list(_statements()) + [(rule.code, rule.name, rule.default) for rule in _REGISTERED]


def __getattr__(name: str):
    # OFF_BY_DEFAULT and NAMES: from the rules' own metadata, read when first asked for.
    if name == "OFF_BY_DEFAULT":
        return frozenset(code for code, _, default in _metadata() if not default)
    if name == "NAMES":
        return {code: rule_name for code, rule_name, _ in _metadata()}
    raise AttributeError(name)


def all_codes() -> list[str]:
    return [code for code, _, _ in _metadata()]


def default_codes() -> list[str]:
    return [code for code, _, default in _metadata() if default]


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
