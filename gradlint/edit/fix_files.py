"""`gradlint --fix`: apply the fixes of a run's findings to the files, atomically.

A fix changes lines, nothing else about the file: the bytes are written back
in the encoding they were read in (a UTF-8 BOM and a PEP 263 coding kept),
with the file's line ending on every inserted line.  gradlint/edit/rewrite.py
writes them: through a symbolic link into its target, keeping the file's
owner, mode, extended attributes and hard links, and never over bytes other
than those that were checked (a file changed since is left alone, an error
says so).
"""

from __future__ import annotations

from typing import Optional

from gradlint.core.findings import FileResult
from gradlint.fix.session import FileFix, marked


def fix_file(
    result: FileResult,
    settings,
    unsafe: bool = False,
    write: bool = True,
    count_unsafe: bool = True,
    staging: Optional[str] = None,
) -> tuple[FileResult, Optional[FileFix]]:
    """Fix what can be fixed in one file: its fresh result, and the fixing (None: nothing to try).
    The fixes are computed from the file's bytes only when they are the bytes `result` describes.
    With `count_unsafe`, the fixing's `outcome.left` says which of the fresh result's findings
    --unsafe-fixes would still repair.  `staging`: see rewrite.write_edit."""
    from gradlint.edit.rewrite import read_analysed, unwritten, write_edit

    if not _fixable(result):
        return result, None
    data, refused = read_analysed(result)
    if refused is not None:
        return refused, None
    from gradlint.run.pool import ChildDied, apart, died_while

    try:  # a big file is fixed in a child process: libcst's abort there is this file's error
        fixing = apart(len(data), fix_data, data, result, settings, unsafe, count_unsafe)
    except ChildDied:
        return died_while(result, "fixing"), None  # nothing written
    if fixing is None:
        return result, None
    if write and fixing.outcome.changed:
        try:
            fixed = encode_like(fixing.after, fixing.before, data)
        except UnicodeEncodeError as exc:
            return unwritten(result, f"cannot write the fixed file: {exc}"), None
        failed = write_edit(result, fixed, data, "the fixed file", staging)
        if failed is not None:
            return failed, None
    fresh = fixing.outcome.result if fixing.outcome.changed else result
    return fresh, fixing


def _analysed(result: FileResult, data: bytes) -> bool:
    from gradlint.core.digest import hex_digest

    return result.source_digest is None or hex_digest(data) == result.source_digest


def _fixable(result: FileResult) -> bool:
    """Findings to try, in a file that was checked (a notebook with a broken cell was: its
    other cells were)."""
    return bool(result.findings) and not any(error.whole_file for error in result.errors)


def fix_data(
    data: bytes, result: FileResult, settings, unsafe: bool = False, count_unsafe: bool = False
) -> Optional[FileFix]:
    """The fixing of a file's bytes `data` (whose check gave `result`); None: nothing to try.
    `count_unsafe`: also learn what --unsafe-fixes would repair (fix/session.py)."""
    from gradlint.check.engine import check_source, decode
    from gradlint.fix.session import fix_source
    from gradlint.check.notebook import is_notebook

    if not _fixable(result):
        return None
    if is_notebook(result.path):
        from gradlint.edit.fix_notebook import fix_notebook

        return fix_notebook(data, result, settings, unsafe, count_unsafe)
    source, error = decode(data, result.path)
    if error is not None or source is None:
        return None
    from gradlint.run.project_run import project_for

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
    from gradlint.check.engine import read_source
    from gradlint.check.notebook import is_notebook

    if not _fixable(result) or not (is_notebook(result.path) or any(f.fix for f in result.findings)):
        return marked(result, {})  # nothing planned (a notebook's plans are made on its cells)
    if data is None:
        data, error = read_source(result.path)
        if error is not None or not _analysed(result, data):
            return marked(result, {})  # a file changed since the check: no plan holds for it
    from gradlint.run.pool import ChildDied, apart, died_while

    try:  # a big file in a child process, as fix_file
        fixing = apart(len(data), fix_data, data, result, settings, True)
    except ChildDied:
        return died_while(marked(result, {}), "fixing")
    return marked(result, fixing.outcome.offered if fixing is not None else {})


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
