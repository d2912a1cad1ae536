"""`gradlint --fix`: apply the fixes of a run's findings to the files, atomically.

A fix changes lines, nothing else about the file: the bytes are written back
in the encoding they were read in (a UTF-8 BOM and a PEP 263 coding kept),
with the file's line ending on every inserted line, the same mode bits, and
through a symbolic link into its target (the link stays a link).  A file
that changed on disk after it was read is left alone (an error says so).
"""

from __future__ import annotations

import os

from gradlint.atomic import ChangedOnDisk, write_atomically
from gradlint.findings import READ_ERROR, FileError, FileResult
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
    if not applied:
        return current, 0
    try:
        _replace(result.path, encode_like(fixed, source, data), data)
    except ChangedOnDisk:
        message = "changed on disk while being fixed: not written (run --fix again)"
        return FileResult(result.path, findings=result.findings, errors=[FileError(result.path, READ_ERROR, message)]), 0
    except (OSError, UnicodeEncodeError) as exc:
        message = f"cannot write the fixed file: {getattr(exc, 'strerror', None) or exc}"
        return FileResult(result.path, findings=result.findings, errors=[FileError(result.path, READ_ERROR, message)]), 0
    return current, applied


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
