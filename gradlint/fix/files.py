"""`gradlint --fix`: apply the fixes of a run's findings to the files, atomically."""

from __future__ import annotations

import os

from gradlint.atomic import write_atomically
from gradlint.findings import FileResult
from gradlint.fix import apply

MAX_ROUNDS = 20  # each round applies one fix and re-checks: fixes never overlap


def fix_file(result: FileResult, settings) -> tuple[FileResult, int]:
    """Fix what can be fixed in one file; the fresh result and how many fixes were applied."""
    from gradlint.engine import check_source, decode, read_source

    if not any(f.fix for f in result.findings):
        return result, 0
    data, error = read_source(result.path)
    if error is not None:
        return result, 0
    source, error = decode(data, result.path)
    if error is not None or source is None:
        return result, 0
    fixed, applied, current = source, 0, result
    for _ in range(MAX_ROUNDS):
        fixable = next((f for f in current.findings if f.fix is not None), None)
        if fixable is None:
            break
        candidate = apply(fixed, fixable.fix)
        after = check_source(candidate, result.path, settings)
        if after.errors:
            break  # never write a file the fix made unparsable
        fixed, current, applied = candidate, after, applied + 1
    if applied:
        _replace(result.path, fixed)
    return current, applied


def _replace(path: str, text: str) -> None:
    write_atomically(path, text, mode=os.stat(path).st_mode & 0o7777)
