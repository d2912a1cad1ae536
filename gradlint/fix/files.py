"""`gradlint --fix`: apply the fixes of a run's findings to the files, atomically.

A fix changes lines, nothing else about the file: the bytes are written back
in the encoding they were read in (a UTF-8 BOM and a PEP 263 coding kept),
with the file's line ending on every inserted line, the same mode bits, and
through a symbolic link into its target (the link stays a link).  A file
that changed on disk after it was read is left alone (an error says so).
"""

from __future__ import annotations

import os
from typing import Optional

from gradlint.atomic import ChangedOnDisk, write_atomically
from gradlint.findings import READ_ERROR, FileError, FileResult
from gradlint.fix.session import FileFix


def fix_file(
    result: FileResult, settings, unsafe: bool = False, write: bool = True, count_unsafe: bool = True
) -> tuple[FileResult, Optional[FileFix]]:
    """Fix what can be fixed in one file: its fresh result, and the fixing (None: nothing to try).
    With `count_unsafe`, the fixing's `outcome.left` says which of the fresh result's findings
    --unsafe-fixes would still repair."""
    from gradlint.engine import read_source

    if not _fixable(result):
        return result, None
    data, error = read_source(result.path)
    if error is not None:
        return result, None
    fixing = fix_data(data, result, settings, unsafe, count_unsafe=count_unsafe)
    if fixing is None:
        return result, None
    if write and fixing.outcome.changed:
        try:
            _replace(result.path, encode_like(fixing.after, fixing.before, data), data)
        except ChangedOnDisk:
            message = "changed on disk while being fixed: not written (run --fix again)"
            return _unwritten(result, message), None
        except (OSError, UnicodeEncodeError) as exc:
            return _unwritten(result, f"cannot write the fixed file: {getattr(exc, 'strerror', None) or exc}"), None
    fresh = fixing.outcome.result if fixing.outcome.changed else result
    return fresh, fixing


def _fixable(result: FileResult) -> bool:
    """Findings to try, in a file that was checked (a notebook with a broken cell was: its
    other cells were)."""
    return bool(result.findings) and not any(error.whole_file for error in result.errors)


def fix_data(
    data: bytes, result: FileResult, settings, unsafe: bool = False, count_unsafe: bool = False
) -> Optional[FileFix]:
    """The fixing of a file's bytes `data` (whose check gave `result`); None: nothing to try.
    `count_unsafe`: also learn what --unsafe-fixes would repair (fix/session.py)."""
    from gradlint.engine import check_source, decode
    from gradlint.fix.session import fix_source
    from gradlint.notebook import is_notebook

    if not _fixable(result):
        return None
    if is_notebook(result.path):
        from gradlint.fix.notebook import fix_notebook

        return fix_notebook(data, result, settings, unsafe, count_unsafe)
    source, error = decode(data, result.path)
    if error is not None or source is None:
        return None
    from gradlint.project.run import project_for

    project = project_for(result.path)  # the run's index: its cross-file findings must stay comparable
    outcome = fix_source(
        source, lambda text: check_source(text, result.path, settings, project=project), unsafe, initial=result,
        count_unsafe=count_unsafe,
    )
    return FileFix(source, outcome.text, outcome)


def offered(result: FileResult, settings, data: Optional[bytes] = None) -> FileResult:
    """`result` marked with what `--fix` would do to each finding: the text report's `[*]`
    and its fixable count say exactly that (the session is run, nothing is written).
    `data`: the file's bytes when they are not on disk (standard input)."""
    from gradlint.engine import read_source
    from gradlint.notebook import is_notebook

    if not _fixable(result) or not (is_notebook(result.path) or any(f.fix for f in result.findings)):
        return marked(result, {})  # nothing planned (a notebook's plans are made on its cells)
    if data is None:
        data, error = read_source(result.path)
        if error is not None:
            return marked(result, {})
    fixing = fix_data(data, result, settings, unsafe=True)
    return marked(result, fixing.outcome.offered if fixing is not None else {})


def marked(result: FileResult, kinds: dict) -> FileResult:
    """`result` whose findings carry a fix only where `kinds` (finding index -> SAFE or UNSAFE,
    fix/session.py's Outcome.offered) says the session repairs them, of that kind.  For the
    text report only: the fix's edits are not offered to anyone (a notebook's count lines of
    its joined cells)."""
    from dataclasses import replace

    from gradlint.findings import Fix

    def mark(index: int, finding):
        kind = kinds.get(index)
        if kind is None:
            return replace(finding, fix=None)
        fix = finding.fix or Fix("", ())
        return replace(finding, fix=replace(fix, applicability=kind, alternatives=()))

    return replace(result, findings=[mark(i, f) for i, f in enumerate(result.findings)])


def _unwritten(result: FileResult, message: str) -> FileResult:
    return FileResult(result.path, findings=result.findings, errors=[FileError(result.path, READ_ERROR, message)])


def encode_like(fixed: str, source: str, data: bytes) -> bytes:
    """`fixed` as bytes the way `source` was stored in `data`: its encoding (BOM included)
    and, when every line of it ends in CRLF (or CR), that ending on the lines a fix inserted."""
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)  # "utf-8-sig" writes the BOM back
    ending = _line_ending(source)
    if ending != "\n":
        fixed = fixed.replace("\r\n", "\n").replace("\r", "\n").replace("\n", ending)
    return fixed.encode(encoding)


def _line_ending(source: str) -> str:
    """The file's one line ending; "\\n" when it has none or mixes them (then nothing is rewritten)."""
    crlf = source.count("\r\n")
    lone_cr = source.count("\r") - crlf
    lone_lf = source.count("\n") - crlf
    if crlf and not lone_cr and not lone_lf:
        return "\r\n"
    if lone_cr and not crlf and not lone_lf:
        return "\r"
    return "\n"


def _replace(path: str, data: bytes, expected: bytes) -> None:
    """Write through a symbolic link (to the file it names), keeping the mode bits and,
    where allowed, the owner."""
    target = os.path.realpath(path)
    info = os.stat(target)
    write_atomically(target, data, mode=info.st_mode & 0o7777, expected=expected)
    if hasattr(os, "chown"):
        try:
            current = os.stat(target)
            if (current.st_uid, current.st_gid) != (info.st_uid, info.st_gid):
                os.chown(target, info.st_uid, info.st_gid)
        except OSError:
            pass  # not ours to give away: the new file keeps the writer's owner
