"""What the reports say about a code: its name, help text, severity.

The rule registry knows the rules; GL900 (an unused suppression comment) is
the one code that is not a rule of the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from gradlint import DOCS_URL
from gradlint.core.display import name_bytes
from gradlint.rules.registry import rule_page_url
from gradlint.check.suppress import UNUSED_CODE, UNUSED_NAME, UNUSED_SUMMARY


@dataclass(frozen=True)
class CodeInfo:
    code: str
    name: str
    summary: str
    rationale: str
    docs_url: str
    default: bool  # a bug rule (on by default) rather than advice

    @property
    def severity(self) -> str:
        """`warning` for a bug, `info` for advice (json's words)."""
        return "warning" if self.default else "info"


_UNUSED = CodeInfo(
    UNUSED_CODE,
    UNUSED_NAME,
    UNUSED_SUMMARY,
    "Reported only with --report-unused-noqa. A suppression that silences nothing hides the next real "
    "finding on that line; remove it or correct its code.",
    rule_page_url(UNUSED_CODE),
    True,
)


def info(code: str) -> CodeInfo:
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code().get(code)
    if rule is None:
        if code == UNUSED_CODE:
            return _UNUSED
        return CodeInfo(code, code.lower(), code, "", DOCS_URL, True)
    return CodeInfo(rule.code, rule.name, rule.summary, rule.rationale, rule.docs_url, rule.default)


@dataclass(frozen=True)
class Brief:
    """What a finding's line in JSON says about its code, known without importing the rules."""

    name: str
    severity: str
    docs_url: str


@lru_cache(maxsize=None)
def brief(code: str) -> Brief:
    """info(code)'s name, severity and docs_url from the registry's tables (no libcst)."""
    from gradlint.rules.registry import NAMES, OFF_BY_DEFAULT

    if code in NAMES:
        return Brief(NAMES[code], "info" if code in OFF_BY_DEFAULT else "warning", rule_page_url(code))
    full = info(code)
    return Brief(full.name, full.severity, full.docs_url)


def all_infos() -> list[CodeInfo]:
    from gradlint.rules.registry import all_rules

    return [info(rule.code) for rule in all_rules()] + [_UNUSED]


def path_uri(path: str) -> str:
    """A relative path stays a relative URI reference (SARIF resolves it against
    %SRCROOT%); an absolute one becomes a file: URI."""
    from urllib.parse import quote

    if path == "-":
        return "stdin"
    p = Path(path)
    if p.is_absolute():
        return p.as_uri()
    return quote(name_bytes(p.as_posix()))  # the name's bytes, UTF-8 or not
