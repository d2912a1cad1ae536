"""The effective settings of one check: which rules run, and which of the
project's own functions count as gradient events.

Plain data, hashable, so it can key the cache and cross process
boundaries.  ``gradlint.options.config`` builds it from pyproject.toml and flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field, asdict


@dataclass(frozen=True)
class Wrappers:
    """Project-specific helpers that act as gradient events.

    Each entry is a dotted name (``utils.optim_step``) or a bare method or
    function name (``optimizer_step``); a call matches when its dotted text
    or its last name component equals an entry.
    """

    backward_functions: tuple[str, ...] = ()
    step_functions: tuple[str, ...] = ()
    zero_grad_functions: tuple[str, ...] = ()
    clip_functions: tuple[str, ...] = ()

    def all_names(self) -> tuple[str, ...]:
        return self.backward_functions + self.step_functions + self.zero_grad_functions + self.clip_functions


DEFAULT_FILE_TIMEOUT = 30.0  # seconds; no real file takes more than a few
# What file-timeout and --file-timeout accept: below a millisecond the timer rounds to "never";
# above a day nothing is left to limit (and 1e300 overflows the timer).
FILE_TIMEOUT_RANGE = (0.001, 86400.0)


def valid_file_timeout(value) -> bool:
    low, high = FILE_TIMEOUT_RANGE
    return not isinstance(value, bool) and isinstance(value, (int, float)) and low <= value <= high


@dataclass(frozen=True)
class Settings:
    select: frozenset[str] = field(default_factory=frozenset)
    wrappers: Wrappers = field(default_factory=Wrappers)
    # How long one file's analysis may run before it is stopped and reported (pool.py).
    # It changes no finding, so it is not part of the fingerprint.
    file_timeout: float = DEFAULT_FILE_TIMEOUT

    @staticmethod
    def default() -> "Settings":
        from gradlint.rules.registry import default_codes

        return Settings(select=frozenset(default_codes()))

    def fingerprint(self) -> str:
        """A stable digest of everything that can change a file's findings."""
        import json  # only a cached run asks

        from gradlint.core.digest import hex_digest

        data = {"select": sorted(self.select), "wrappers": asdict(self.wrappers)}
        return hex_digest(json.dumps(data, sort_keys=True).encode(), size=8)
