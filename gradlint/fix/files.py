"""`gradlint --fix`: apply the fixes of a run's findings to the files, atomically."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from gradlint.atomic import write_atomically
from gradlint.findings import FileResult
from gradlint.fix.session import Outcome


@dataclass
class FileFix:
    """One file's fixing: its text before and after (what --diff shows), and what was done."""

    before: str
    after: str
    outcome: Outcome


def fix_file(result: FileResult, settings, unsafe: bool = False, write: bool = True) -> tuple[FileResult, Optional[FileFix]]:
    """Fix what can be fixed in one file: its fresh result, and the fixing (None: nothing to try)."""
    from gradlint.engine import check_source, decode, read_source
    from gradlint.fix.session import fix_source
    from gradlint.notebook import is_notebook

    if result.errors or not result.findings:
        return result, None
    data, error = read_source(result.path)
    if error is not None:
        return result, None
    if is_notebook(result.path):
        from gradlint.fix.notebook import fix_notebook

        fixing = fix_notebook(data, result, settings, unsafe)
    else:
        source, error = decode(data, result.path)
        if error is not None or source is None:
            return result, None
        outcome = fix_source(source, lambda text: check_source(text, result.path, settings), unsafe, initial=result)
        fixing = FileFix(source, outcome.text, outcome)
    if fixing is None:
        return result, None
    if write and fixing.outcome.changed:
        _replace(result.path, fixing.after)
    fresh = fixing.outcome.result if fixing.outcome.changed else result
    return fresh, fixing


def _replace(path: str, text: str) -> None:
    write_atomically(path, text, mode=os.stat(path).st_mode & 0o7777)
