"""gradlint.guard: the rules of gradlint watched inside the user's own training run.

    import gradlint.guard
    gradlint.guard.install()            # or: with gradlint.guard.watch(): ...

Every optimizer, GradScaler, clip and LR scheduler that runs after `install()` in this process
is watched; a gradient bug (GL001 to GL008) is reported once per source line, as a
GradlintGuardWarning (mode "warn", the default), a GradlintGuardError raised from the offending
call (mode "raise") or a message on the `gradlint.guard` logger (mode "log").  torch is
imported by `install()`, not by this module.
"""

from __future__ import annotations

from contextlib import contextmanager

from gradlint.guard.report import MODES, GradlintGuardError, GradlintGuardWarning, Report

__all__ = ["install", "uninstall", "watch", "reports", "installed", "GradlintGuardWarning", "GradlintGuardError", "Report"]

_ACTIVE = None  # (watcher, patches) while installed


def install(mode: str = "warn"):
    """Watch the rest of this process's run.  Installing again only changes the mode."""
    global _ACTIVE
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if _ACTIVE is not None:
        _ACTIVE[0].mode = mode
        return _ACTIVE[0]
    from gradlint.guard.patches import Patches
    from gradlint.guard.watcher import Watcher

    watcher = Watcher(mode)
    patches = Patches(watcher)
    try:
        patches.install()
    except BaseException:
        patches.restore()
        raise
    _ACTIVE = (watcher, patches)
    return watcher


def uninstall() -> list:
    """Put back every function the guard replaced and remove every hook; returns the reports."""
    global _ACTIVE
    if _ACTIVE is None:
        return []
    watcher, patches = _ACTIVE
    _ACTIVE = None
    patches.restore()
    return list(watcher.reports)


def installed() -> bool:
    return _ACTIVE is not None


def active():
    """The Watcher of the guard installed now (its `reports` list fills as reports come), or None."""
    return _ACTIVE[0] if _ACTIVE is not None else None


def reports() -> list:
    """The reports of the guard installed now (each a Report: code, path, line, evidence, related)."""
    return list(_ACTIVE[0].reports) if _ACTIVE is not None else []


@contextmanager
def watch(mode: str = "warn"):
    """Install the guard for the block; yields the list its reports go to (filled as they come)."""
    was = installed()
    watcher = install(mode)
    try:
        yield watcher.reports
    finally:
        if not was:
            uninstall()
