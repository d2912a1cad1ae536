"""One file in, findings out.

`check_source` is the single entry point every side uses (CLI, language
server, verifier): text and a path in, a FileResult out.  It never raises
for bad input: a file that does not parse becomes a FileError.
"""

from __future__ import annotations

import sys
import traceback
from typing import TYPE_CHECKING

from gradlint.core.findings import (
    EXIT_ERROR_KINDS,
    INTERNAL_ERROR,
    READ_ERROR,
    SYNTAX_ERROR,
    WRITE_ERROR,
    FileError,
    FileResult,
    Finding,
    Related,
)
from gradlint.options.settings import Settings

if TYPE_CHECKING:
    from typing import Callable

    from gradlint.parse.file_context import FileContext
    from gradlint.incremental import DocumentMemo


def decode(data: bytes, path: str) -> tuple[str | None, FileError | None]:
    """Source bytes -> text, honouring a PEP 263 coding line; a FileError when it is not text."""
    if b"\x00" in data:
        return None, FileError(path, READ_ERROR, "binary file (contains NUL bytes), not Python source")
    try:
        import io
        import tokenize

        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        reason = exc.reason if isinstance(exc, UnicodeDecodeError) else str(exc)
        return None, FileError(path, READ_ERROR, f"not valid UTF-8 or declared encoding: {reason}")
    try:
        return data.decode(encoding), None
    except UnicodeDecodeError as exc:
        if encoding in ("utf-8", "utf-8-sig"):
            return None, FileError(path, READ_ERROR, f"not valid UTF-8 or declared encoding: {exc.reason}")
        return None, FileError(path, READ_ERROR, f"not valid text in its declared encoding {encoding!r}: {exc.reason}")
    except Exception as exc:  # a codec may fail in any way (punycode: UnicodeError; a codec not for text)
        return None, FileError(path, READ_ERROR, f"cannot decode as the declared encoding {encoding!r}: {exc}")


def check_source(
    source: str | bytes,
    path: str,
    settings: Settings | None = None,
    memo: "DocumentMemo | None" = None,
    project=None,
    context: "FileContext | None" = None,
) -> FileResult:
    """`memo`: what earlier checks of the same buffer parsed (the language server keeps one per
    open document, gradlint/incremental): the result is the same, only the parsing is shared.
    `project`: the file's place in the project index (gradlint/project: a loop that calls a
    function of another module is modelled through it); None: the file alone.
    `context`: the FileContext of this text (with `memo`) when the caller made it to read the
    text before the check (the language server's project lookup); None: the check makes it."""
    settings = settings or Settings.default()
    if isinstance(source, bytes):
        text, error = decode(source, path)
        if error is not None:
            return FileResult(path, errors=[error])
        source = text
    if context is None:
        from gradlint.parse.file_context import FileContext

        context = FileContext(path, source, memo)
    try:
        findings = _analyse(source, path, settings, memo, project, context)
    except _ParseFailure as failure:
        return FileResult(path, errors=[failure.error])
    except RecursionError:
        return FileResult(path, errors=[FileError(path, SYNTAX_ERROR, "too deeply nested to analyse")])
    except MemoryError:  # the per-file memory limit (gradlint/run/pool.py) or the machine's
        from gradlint.core.findings import TIMEOUT

        return FileResult(path, errors=[FileError(path, TIMEOUT, "analysis stopped: out of memory")])
    except Exception as exc:  # a bug in gradlint: name the file and the crash, keep going
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = f"internal error: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        return FileResult(path, errors=[FileError(path, INTERNAL_ERROR, message)])
    from gradlint.check.suppress import apply_suppressions

    # A finding in another module (its misplaced call is there) answers to that file's own
    # noqa comments, which the run reads (gradlint/check/elsewhere.py): not to this file's lines.
    from gradlint.check.elsewhere import is_elsewhere

    elsewhere = [f for f in findings if is_elsewhere(f, path)]
    kept, suppressed = apply_suppressions([f for f in findings if not is_elsewhere(f, path)], source)
    if elsewhere:
        kept = sorted(kept + elsewhere, key=Finding.sort_key)
    calls, reached, called = context.coverage
    return FileResult(
        path, findings=kept, suppressed=suppressed, gradient_calls=list(calls), reached=sorted(reached), called=called
    )


class _ParseFailure(Exception):
    def __init__(self, error: FileError):
        self.error = error


def _parse(source: str, path: str):
    import libcst as cst

    from gradlint.parse.cst_parse import parse_module

    try:
        return parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise _ParseFailure(_syntax_error(source, path, exc))


def _syntax_error(source: str, path: str, exc) -> FileError:
    """Where the file is broken: CPython's parser says it best (libcst's raw_line can be
    lines off); libcst's own words only when CPython accepts the file."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():  # an invalid escape elsewhere is not this error's business
            warnings.simplefilter("ignore")
            ast.parse(source)
    except SyntaxError as py:
        return FileError(path, SYNTAX_ERROR, f"syntax error: {py.msg}", py.lineno or 1, py.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    return FileError(path, SYNTAX_ERROR, f"syntax error: {exc.message}", exc.raw_line, exc.raw_column + 1)


def _screen(context: "FileContext", settings: Settings, project=None):
    """What libcst should parse (gradlint/check/screen.py), None when nothing can be found."""
    from gradlint.check.screen import screen

    words = tuple(sorted(project.words)) if project is not None else ()
    # what the project's functions may call back in this file is kept by the screen too
    callbacks = tuple(sorted(project.callbacks)) if project is not None else ()
    memo = context.memo
    return screen(context.source, settings.wrappers, memo.nodes if memo is not None else None, words, callbacks, context)


def _guard(context: "FileContext") -> None:
    """gradlint/parse/parse_guard.py: input that would crash or stall libcst's native parser (deep
    nesting) becomes a one-line error here, before libcst sees it.  So does a text CPython does
    not parse: every checked file is judged by CPython's parser, whether the analysis needs
    libcst or not (gradlint/parse/syntax.py), with CPython's words."""
    from gradlint.parse import parse_guard

    source, path, memo = context.source, context.path, context.memo
    nodes = memo.nodes if memo is not None else None
    refused = parse_guard.long_line(source, path) or parse_guard.check(source, path, nodes, context)
    if refused is not None:
        raise _ParseFailure(refused)
    try:
        context.tree()  # the guard's tree: parsed once
    except SyntaxError as exc:
        raise _ParseFailure(FileError(path, SYNTAX_ERROR, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1))
    except (ValueError, RecursionError, MemoryError, OverflowError):
        pass  # the guard judged these


def _no_loop_by_text(source: str, settings: Settings, project=None) -> bool:
    from gradlint.check.screen import no_loop_by_text

    # a call into another module's gradient code is a spelling too (gradlint/project)
    words = tuple(sorted(project.words)) if project is not None else ()
    return no_loop_by_text(source, settings.wrappers, words)


def _syntax_only(source: str, path: str) -> None:
    """A file the analysis will not parse gets the check every file gets (gradlint/parse/syntax.py:
    CPython's symbol-table pass, its words for an error), as a file the prefilter passes
    over does; the nesting guard is libcst's, and libcst will not see it."""
    from gradlint.parse import parse_guard
    from gradlint.parse.syntax import syntax_error

    refused = parse_guard.long_line(source, path) or syntax_error(source, path)
    if refused is not None:
        raise _ParseFailure(refused)


def _parse_screened(text: str, source: str, path: str):
    """Parse the screened text; if libcst rejects it, the whole source decides (same error as unscreened).

    Returns the module and the text it was parsed from (positions are read from that text)."""
    if text is source:
        return _parse(source, path), source
    try:
        return _parse(text, path), text
    except _ParseFailure:
        return _parse(source, path), source


def _model_of_statements(context: "FileContext", text: str, settings: Settings, project=None):
    """The model built from one piece per top-level statement, each piece's libcst tree reused
    from the memo when its text is unchanged; None when only a whole parse can give it."""
    from gradlint.model import piecewise
    from gradlint.model.positions import AstTable

    try:
        tree = context.tree(text)  # the memo's chunks: only what the edit touched is parsed
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = piecewise.statement_spans(tree)
    if not spans:
        return None
    memo = context.memo
    return piecewise.build_in_pieces(
        text, context.path, context.source, settings.wrappers, AstTable(tree), spans, parse=memo.cst.parse,
        models=memo.models, project=project, context=context,
    )


def _model_in_pieces(context: "FileContext", text: str, settings: Settings, project=None):
    """A huge file's model built piece by piece (gradlint/model/piecewise.py), else None."""
    from gradlint.model import piecewise

    if text.count("\n") < piecewise.PIECES_FROM:
        return None
    from gradlint.model.positions import AstTable

    try:
        tree = context.tree(text)  # the guard's tree when the screen blanked nothing
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the whole parse says what is wrong
    spans = piecewise.grouped(tree)
    chunks = piecewise.def_chunks(tree, text)
    if not spans or (len(spans) < 2 and not chunks and 2 * (spans[0][1] - spans[0][0] + 1) > text.count("\n") + 1):
        return None  # one piece of most of the text: a whole parse costs the same
    table = AstTable(tree)
    del tree
    context.forget_trees()  # tens of megabytes; the table holds what positions need
    return piecewise.build_in_pieces(
        text, context.path, context.source, settings.wrappers, table, spans, project=project, context=context,
        chunks=chunks,
    )


def _analyse(source: str, path: str, settings: Settings, memo=None, project=None, context=None) -> list[Finding]:
    if not source.strip():
        return []
    if context is None:
        from gradlint.parse.file_context import FileContext

        context = FileContext(path, source, memo)
    if memo is not None:
        memo.next_check()
    try:
        return _analyse_parsed(context, settings, project)
    finally:
        # (the check's trees and the fixes' statements die with its FileContext)
        foreign = sys.modules.get("gradlint.model.foreign")
        if foreign is not None:
            foreign.forget()  # the other modules' definitions a loop called


def _analyse_parsed(context: "FileContext", settings: Settings, project=None) -> list[Finding]:
    from gradlint.parse.data_literals import without_data

    # From here on the source has its big numeric data literals emptied (gradlint/parse/data_literals.py):
    # the same lines, the same positions of everything else, and no 850 MB ast of the numbers.
    context.source = source = without_data(context.source, context)
    from gradlint.check.big_expressions import without_big_data
    from gradlint.check.prefilter import for_wrappers

    # and its big expressions that call nothing and spell no event blanked (the same lines and
    # columns): no pass below walks their nodes, and libcst never parses them
    words = tuple(sorted(project.words)) if project is not None else ()
    context.source = source = without_big_data(source, context, for_wrappers(settings.wrappers, words))
    path = context.path
    if context.memo is None and _no_loop_by_text(source, settings, project):
        _syntax_only(source, path)
        return []  # inference code (a sampler's `.step(`): its cost is one CPython parse
    _guard(context)
    text = _screen(context, settings, project)
    placed = _placed_calls(context, settings, project)  # before a build in pieces lets the trees go
    if text is None:
        _coverage(context, placed)  # its gradient calls are followed by no loop
        return []  # no loop can hold a backward or a step: nothing to parse
    context.screened = text  # a fix's proof re-checks the fixed screened text (_check_file_fixing)
    from gradlint.parse.parse_guard import oversized_statement

    refused = oversized_statement(text, path, context)  # in what libcst would parse: its memory grows with it
    if refused is not None:
        raise _ParseFailure(refused)
    from gradlint.rules.registry import all_rules

    if context.memo is not None:
        model = _model_of_statements(context, text, settings, project)
    else:
        model = _model_in_pieces(context, text, settings, project)
    if model is None:
        from gradlint.model.loops import build

        module, parsed = _parse_screened(text, source, path)
        model = build(module, path, source, settings.wrappers, parsed_text=parsed, project=project, context=context)
        del module
    _coverage(context, placed, model)
    if not model.loops and not model.lightning_clips and not model.functions:
        return []
    from gradlint.check.elsewhere import merged
    from gradlint.fix.plan import plan

    found: dict[tuple, Finding] = {}
    for rule in all_rules():
        if rule.code not in settings.select:
            continue
        for raw in rule.check(model):
            if raw.loop is not None and raw.event.key in raw.loop.foreign:
                continue  # an inner loop reports its own events
            # another walk's finding on the same call (each loop is walked over two iterations
            # and their exits): only its related locations are kept (merged), not its fix, so
            # no fix is planned for it (`_finding` keys a finding on its event's file and span)
            key = (raw.event.path if raw.event.path is not None else path, raw.code, raw.event.span)
            finding = _finding(raw, path, model, plan if key not in found else None)
            if finding is None:
                continue
            key = (finding.path, finding.code, finding.span)
            found[key] = merged(found[key], finding) if key in found else finding
    return sorted(found.values(), key=Finding.sort_key)


def _placed_calls(context: "FileContext", settings: Settings, project=None) -> "list | None":
    """Where each call of the file that can be a gradient event stands (gradlint/model/coverage.py),
    read from the file's CPython tree while it is still held (None: the file does not parse)."""
    from gradlint.check.prefilter import for_wrappers
    from gradlint.model import coverage

    try:
        tree = context.tree()
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    words = tuple(sorted(project.words)) if project is not None else ()
    spelled = context.event_lines  # the screen's, when it read this text
    if spelled is None:
        spelled = for_wrappers(settings.wrappers, words).event_lines(context.source)
    marked = coverage.marked_lines(context.source, spelled)
    return coverage.placed_calls(tree, context.path, context.lines, marked)


def _coverage(context: "FileContext", placed: "list | None", model=None) -> None:
    """Each placed gradient call with what the model made of it (gradlint/model/coverage.py),
    kept on the context for the file's result."""
    if placed is None:
        return
    from gradlint.core import events as api
    from gradlint.model import coverage

    here, elsewhere = coverage.followed_places(model) if model is not None else (frozenset(), frozenset())
    other = model is not None and api.other_framework(model.bindings.imports.packages)
    calls = coverage.judged(placed, here, other)
    calls = coverage.referenced_by_name(calls, context.source)
    context.coverage = (calls, elsewhere, coverage.called_names(context.source))


def _finding(raw, path: str, model, plan) -> Finding | None:
    """The finding of a rule's raw finding, on the misplaced call itself, in whatever file holds
    it: where the fix goes and where a `# noqa` belongs.  An event of a function of another
    module makes a finding in that module (`path` is then its file), with the call in this file
    that leads there as a related location; such a finding has no fix (this check's edits are
    of this file only).  `plan`: None when no fix is wanted (the finding is merged into an
    earlier one on the same call, whose fix stands)."""
    from gradlint.core.display import shown
    from gradlint.rules.base import worded

    event = raw.event
    home = event.path if event.path is not None else path
    message = worded(raw.message, path, home)
    # a related event in this file is named with this file's path: the finding may be elsewhere
    related = tuple(Related(e.span, why, path=e.path if e.path is not None else path) for e, why in raw.related)
    if event.path is None and not any(e.path is not None for e, _ in raw.related):
        related = tuple(Related(e.span, why) for e, why in raw.related)
        if event.anchor is not None and event.anchor[0] != event.span:  # in a helper: the loop's call of it
            related += (Related(event.anchor[0], f"the call of {event.anchor[1]} that runs it"),)
        fix = plan(raw, model) if plan is not None else None
        return Finding(path=path, code=raw.code, message=message, span=event.span, related=related, fix=fix)
    # the calls in this file that lead into the other module, for an editor to show too
    anchors = [e.anchor for e, _ in raw.related if e.path is not None and e.anchor is not None]
    if event.path is not None:
        if event.anchor is None:
            return None
        anchors.insert(0, event.anchor)
    related += tuple(
        Related(s, f"the call of {lab} that runs it", path=path) for s, lab in dict.fromkeys(anchors) if s != event.span
    )
    if event.path is None:
        return Finding(path=path, code=raw.code, message=message, span=event.span, related=_here(related, path))
    span, label = event.anchor  # the text report shows no related locations: the message names the caller
    message = f"{message}; run by the loop through {label} ({shown(path)} line {span.line})"
    return Finding(path=event.path, code=raw.code, message=message, span=event.span, related=_here(related, event.path))


def _here(related: tuple, path: str) -> tuple:
    """Related locations in the finding's own file carry no path (as a one-file finding's do)."""
    return tuple(replace(r, path=None) if r.path == path else r for r in related)


# --- many files ------------------------------------------------------------------

import os  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from typing import NamedTuple  # noqa: E402

MAX_FILE_BYTES = 8 * 1024 * 1024  # a generated or vendored monster: say so, do not stall the run


def read_source(path: str) -> tuple[bytes | None, FileError | None]:
    """The bytes of a regular file.  A FIFO, socket or device is refused without reading it:
    opening non-blocking and asking the open descriptor (not the path, which could be
    swapped meanwhile) means a FIFO without a writer cannot hang the run."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        try:  # a socket cannot be opened at all: name what it is
            mode = os.stat(path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            return None, FileError(path, READ_ERROR, f"not a regular file ({_file_kind(mode)})")
        return None, FileError(path, READ_ERROR, f"cannot read file: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        return None, FileError(path, READ_ERROR, f"cannot read file: {exc.strerror or exc}")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None, FileError(path, READ_ERROR, f"not a regular file ({_file_kind(info.st_mode)})")
    with os.fdopen(fd, "rb") as handle:
        try:
            if info.st_size > MAX_FILE_BYTES:
                return None, too_large(path, info.st_size)
            data = handle.read(MAX_FILE_BYTES + 1)  # bounded: the file may grow after fstat
            if len(data) > MAX_FILE_BYTES:
                return None, too_large(path, len(data))
            return data, None
        except OSError as exc:
            return None, FileError(path, READ_ERROR, f"cannot read file: {exc.strerror or exc}")


def too_large(path: str, size: int) -> FileError:
    """The size limit's error (a file, or standard input), with how to leave such a file out."""
    if path == "-":
        how = "leave it out with --force-exclude and an exclude matching --stdin-filename"
    else:
        name = os.path.basename(path)
        how = f"skip it with --extend-exclude {name} or extend-exclude = [\"{name}\"] in [tool.gradlint]"
    # Standard input is read one byte past the limit and no further: its size is not known.
    amount = f"more than {MAX_FILE_BYTES // 1024} KiB" if path == "-" and size == MAX_FILE_BYTES + 1 else (
        f"{size // 1024} KiB > {MAX_FILE_BYTES // 1024} KiB"
    )
    return FileError(path, READ_ERROR, f"file too large to check ({amount}); {how}")


def _file_kind(mode: int) -> str:
    import stat

    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a file"


def check_file(path: str, settings: Settings) -> FileResult:
    """One file from disk: read, the prefilter, then the analysis."""
    return _check_file(path, settings)[0]


def _check_file(path: str, settings: Settings, notebooks=None) -> tuple[FileResult, "str | None"]:
    """The result and the digest of the bytes it describes (None: not cacheable input)."""
    result, digest, _ = _read_and_check(path, settings, notebooks)
    return result, digest


# gradlint/check/notebook.py's suffix.  The engine does not import notebook.py (which imports the
# engine): a run that checks notebooks is handed their check (RunOptions.notebooks).
NOTEBOOK_SUFFIX = ".ipynb"


def _is_notebook(path: str, notebooks) -> bool:
    return notebooks is not None and path.lower().endswith(NOTEBOOK_SUFFIX)


def _read_and_check(
    path: str, settings: Settings, notebooks=None, context_out: "list | None" = None
) -> tuple[FileResult, "str | None", "str | None"]:
    """_check_file's result and digest, and the text analysed (None: no text a fix applies to).
    `notebooks`: notebook.check_notebook_data, for the .ipynb files of the run.  `context_out`:
    receives the check's FileContext when the file was analysed."""
    from gradlint.run.cache import content_digest

    from gradlint.run.project_run import project_for

    data, error = read_source(path)
    if error is not None:
        return FileResult(path, errors=[error]), None, None
    digest = content_digest(data)
    text = None
    if _is_notebook(path, notebooks):  # JSON, cells, dedenting: the same worker and guard as a .py file
        result = notebooks(data, path, settings)[0]
    else:
        text, error = decode(data, path)
        project = project_for(path) if error is None else None
        if error is not None:
            result = FileResult(path, errors=[error])  # (text is None)
        elif project is None and not _passes_prefilter(text, settings):
            result, text = FileResult(path), None  # no gradient event can be written here: not parsed
        else:
            from gradlint.parse.file_context import FileContext

            context = FileContext(path, text)
            result = check_source(text, path, settings, project=project, context=context)
            if context_out is not None:
                context_out.append(context)
    result.source_digest = digest  # what an edit of the file must find there (gradlint/edit/rewrite.py)
    return result, digest, text


class Made(NamedTuple):
    """What a worker made of a file besides its result: the digest of the bytes it describes
    (None: not cacheable) and the result as the reports that change its fixes want it
    (_check_file_for_every_report)."""

    digest: "str | None"
    variants: dict


# Proving fixes costs one analysis per fix (up to fix/session.py's MAX_CHECKS), marking them one
# in all: a run that does not report proofs proves a file's fixes only when they are this few, so
# that a text run stays cheap on a file of many fixes and a JSON run after it re-analyses only such files.
PROVE_EAGERLY_AT_MOST = 4


def _check_file_for_every_report(
    path: str, settings: Settings, notebooks=None, variant: str = ""
) -> tuple[FileResult, Made]:
    """_check_file, and the same findings as the reports that change their fixes want them:
    "proven", each fix replaced by the first of its choices that provably helps (fix/session.py's
    proven_fixes: what JSON and SARIF offer), and "marked", each finding marked with what `--fix`
    would do to it (marked_fixes: the text report's `[*]`); none when no finding has a fix
    (every report shows the result as it is).  Both are made here, in the worker, and cached
    with the result in one entry, so that a run in any format warms the cache for all: a JSON
    run after a text one was a cold run, and proving in the main process had made a warm JSON
    run 18 times as long as a text one.  A fixed text is checked once for both (a file with
    one finding: one check).  The proofs are left out (the cache then misses for a proving run)
    when `variant` is not "proven" and the file has more than PROVE_EAGERLY_AT_MOST fixes.  When
    the file's time runs out meanwhile, its findings are given without fixes (not cached)."""
    contexts: list = []
    result, digest, text = _read_and_check(path, settings, notebooks, contexts)
    if not any(f.fix for f in result.findings):
        return result, Made(digest, {})
    if text is None:  # a notebook: marked by the main process, on its cells (edit/fix_files.py `offered`)
        return result, Made(digest, {"proven": result, "marked": result})
    from gradlint.fix.session import marked_fixes, proven_fixes
    from gradlint.run.pool import TimeUp
    from gradlint.run.project_run import project_for

    screened = contexts[0].screened if contexts else None
    del contexts  # the check's trees and statements: a huge file's are hundreds of megabytes
    checked: dict[str, FileResult] = {}

    def check(fixed: str) -> FileResult:
        if fixed not in checked:
            # the fixed file's findings are those of the fixed screened text when the fix changed
            # only lines the screen kept (what no loop reaches cannot change them): a generated
            # module's 7.8 MB are checked once, not once per fix (issue 28)
            shown = _as_screened(text, fixed, screened)
            checked[fixed] = check_source(fixed if shown is None else shown, path, settings, project=project)
        return checked[fixed]

    try:
        project = project_for(path)  # a fix is judged in the run's project, as it was found
        made = {}
        if variant == "proven" or sum(1 for f in result.findings if f.fix) <= PROVE_EAGERLY_AT_MOST:
            made["proven"] = proven_fixes(text, result, check)
        made["marked"] = marked_fixes(text, result, check)
        return result, Made(digest, made)
    except TimeUp:
        from dataclasses import replace

        bare = FileResult(path, [replace(f, fix=None) for f in result.findings], result.errors, result.suppressed)
        return result, Made(None, {"proven": bare, "marked": bare})


def as_reported(result: FileResult, variants: dict, variant: str) -> FileResult:
    """The result as the run's report wants it: `variant` "proven", "marked" or "" (as found)."""
    return variants.get(variant, result) if variant else result


def _check_file_proving(path: str, settings: Settings, notebooks=None) -> tuple[FileResult, "str | None"]:
    """_check_file with the fixes JSON and SARIF offer (proven to help)."""
    result, made = _check_file_for_every_report(path, settings, notebooks, "proven")
    return as_reported(result, made.variants, "proven"), made.digest


def _check_file_marking(path: str, settings: Settings, notebooks=None) -> tuple[FileResult, "str | None"]:
    """_check_file with the text report's marks (what `--fix` would repair)."""
    result, made = _check_file_for_every_report(path, settings, notebooks, "marked")
    return as_reported(result, made.variants, "marked"), made.digest


def _as_screened(text: str, fixed: str, screened: "str | None") -> "str | None":
    """`fixed` (an edit of `text`) made on `screened` instead (`text` with lines blanked, the
    same number of lines), or None when the edit touches a line the screen changed."""
    from gradlint.parse.file_context import SCREENED_FIXES_FROM

    if screened is None or screened is text or len(text) < SCREENED_FIXES_FROM:
        return None
    old, new, kept = text.splitlines(True), fixed.splitlines(True), screened.splitlines(True)
    if len(old) != len(kept):
        return None
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    # the changed lines, and one on each side (an insertion's neighbours decide its block)
    start, end = max(head - 1, 0), min(len(old) - tail + 1, len(old))
    if old[start:end] != kept[start:end]:
        return None
    return "".join(kept[:head] + new[head : len(new) - tail] + kept[len(kept) - tail :])


def check_data(data: bytes, path: str, settings: Settings) -> tuple[FileResult, "str | None"]:
    """Python source bytes that are not read from `path` (standard input): the result and the
    text analysed, None when there is none.  The caller applies the limits."""
    stall_for_tests(path)
    text, error = decode(data, path)
    if error is not None:
        return FileResult(path, errors=[error]), None
    return check_source(text, path, settings), text


def _passes_prefilter(text: str, settings: Settings) -> bool:
    from gradlint.check.prefilter import for_wrappers

    return for_wrappers(settings.wrappers).may_hold_events(text)


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    discovery_errors: list[FileError] = field(default_factory=list)
    # Files reached by a walked link out of the tree named (discover.Discovery.outside): not written.
    outside: set[str] = field(default_factory=set)

    def findings(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.findings), key=Finding.sort_key)

    def suppressed(self) -> list[Finding]:
        return sorted((f for r in self.results for f in r.suppressed), key=Finding.sort_key)

    def not_followed(self) -> list:
        """The run's gradient calls that the analysis does not follow (gradlint/check/unfollowed.py's
        Verdicts, in path, line and column order): where the checker is blind, not the code right."""
        if not any(r.gradient_calls for r in self.results):
            return []
        from gradlint.check.unfollowed import not_followed

        return not_followed(self.results)

    def errors(self) -> list[FileError]:
        errors = self.discovery_errors + [e for r in self.results for e in r.errors]
        return sorted(errors, key=lambda e: (e.path, e.line, e.col))

    @property
    def files_not_checked(self) -> int:
        """Paths with an error (missing, unreadable, not Python, syntax or internal error);
        not a notebook with a broken cell, whose other cells were checked."""
        return len({e.path for e in self.errors() if e.whole_file})

    @property
    def files_checked(self) -> int:
        """Files analysed to the end; with files_not_checked, every path the run met once."""
        unchecked = {e.path for e in self.errors() if e.whole_file}
        return len({r.path for r in self.results} - unchecked)

    def summary(self) -> str:
        findings, errors = self.findings(), self.errors()
        if not findings and not errors:
            return ""
        files = len({f.path for f in findings})
        checked = self.files_checked
        text = (
            f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} in {files} "
            f"file{'s' if files != 1 else ''} ({checked} file{'s' if checked != 1 else ''} checked"
        )
        if self.files_not_checked:
            text += f", {self.files_not_checked} could not be checked"
        cells = sum(1 for e in errors if not e.whole_file and e.kind != WRITE_ERROR)
        if cells:
            text += f", {cells} notebook cell{'s' if cells != 1 else ''} skipped for a syntax error"
        unwritten = len({e.path for e in errors if e.kind == WRITE_ERROR})  # checked, then --fix could not write
        if unwritten:
            text += f", {unwritten} could not be written"
        return text + ")."

    def exit_code(self) -> int:
        """0 clean, 1 findings or unreadable/unparsable input, 2 an internal error, a timeout
        or a named file that is not Python."""
        if any(e.kind in EXIT_ERROR_KINDS for e in self.errors()):
            return 2
        return 1 if self.findings() or self.errors() else 0


# When to start worker processes.  With --jobs N given, from MIN_FILES_FOR_POOL files that
# need an analysis.  By default (the core count), only when the work is large enough to pay
# for the pool: MIN_BYTES_FOR_POOL bytes of source to analyse, about half a second of work
# (benchmarks/pool_threshold.py; a small run was 1.4x slower with the pool than without).
MIN_FILES_FOR_POOL = 8
MIN_BYTES_FOR_POOL = 64 * 1024


@dataclass(frozen=True)
class RunOptions:
    jobs: int | None = None  # None: the core count, when the work is large enough (see above)
    cache_dir: str | None = None  # None: no cache (the CLI passes cache.default_cache_dir() by default)
    prove_fixes: bool = False  # JSON and SARIF: only fixes that provably help (fix/session.py proven_fixes)
    mark_fixes: bool = False  # the text report: what --fix would repair (fix/session.py marked_fixes)
    # notebook.check_notebook_data: .ipynb files are checked as notebooks (None: as Python)
    notebooks: "Callable | None" = None
    # notebook.joined_code: a notebook's code cells joined, for the project index (a notebook
    # that calls a module's training step is a caller, as a .py file is); None: notebooks stay out
    notebook_code: "Callable | None" = None
    # The paths the run was given: absolute imports of the project resolve up to these
    # (gradlint/project); () means the folders of the checked files.
    roots: tuple = ()

    @property
    def variant(self) -> str:
        """Which of a file's results the run reports (the analysis makes, and the cache keeps, all
        three: _check_file_for_every_report): "proven", "marked" or "" (as found)."""
        return "proven" if self.prove_fixes else "marked" if self.mark_fixes else ""


def check_files(tasks: list[tuple[str, Settings]], options: RunOptions = RunOptions()) -> list[FileResult]:
    """Check each (path, settings) pair; results in the order given.

    Every file is read here once and put through the prefilter: a file that
    cannot hold a gradient event is checked (clean) without a parse.  The
    rest are served from the cache when their key matches, and the others
    are analysed, in worker processes when there are enough of them.
    """
    from gradlint.run.cache import Cache
    from gradlint.run import project_run

    cache = Cache(options.cache_dir) if options.cache_dir else None
    results: list = [None] * len(tasks)
    pending: list[int] = []
    pending_bytes = 0
    read: list = [None] * len(tasks)
    cells: dict = {}  # i -> a notebook's joined code cells, for the project index only
    for i, (path, settings) in enumerate(tasks):
        try:
            raw = _read_for_run(path, options.notebooks)
            if options.notebook_code is not None and isinstance(raw, tuple) and raw[1] is None:
                cells[i] = options.notebook_code(raw[0], path)
            read[i] = _digested(raw)  # the bytes are let go here
        except Exception as exc:  # one file's trouble is that file's error: the run goes on
            from gradlint.run.pool import crashed

            read[i] = crashed(path, f"{type(exc).__name__}: {exc}")
    # The project index (gradlint/project): what the functions of the run's modules do to
    # gradients, so that a loop calling into another module is modelled through it.
    files = [(tasks[i][0], r[2] if r[2] is not None else cells.get(i), r[0], tasks[i][1].wrappers)
             for i, r in enumerate(read) if isinstance(r, tuple) and (r[2] is not None or cells.get(i))]
    del cells
    index, views = project_run.views_of_run(files, options.roots, cache)
    # views from the cache: an index is built only if a file that calls into the project is
    # analysed, from the files read again (the texts are not kept through the run for that)
    again = [(path, wrappers) for path, _, _, wrappers in files]
    del files
    from functools import partial

    project_run.install(index, views, partial(_index_again, again, options.roots, options.notebooks, options.notebook_code))
    # modules the run does not check, analysed for a file it does (a base class whose loop runs
    # that file's override: gradlint/check/elsewhere.py's adopt), after the run's own files
    named = len(tasks)
    tasks = list(tasks) + _companion_tasks(tasks, views)
    results += [None] * (len(tasks) - named)
    read += [None] * (len(tasks) - named)
    for i, (path, settings) in enumerate(tasks):
        try:
            known = _without_analysis(path, settings, cache, options.variant, options.notebooks, read[i], views.get(path))
        except Exception as exc:  # one file's trouble is that file's error: the run goes on
            from gradlint.run.pool import crashed

            known = crashed(path, f"{type(exc).__name__}: {exc}")
        read[i] = None
        if isinstance(known, FileResult):
            results[i] = known
            continue
        pending.append(i)
        pending_bytes += known

    if index is None and any(tasks[i][0] in views for i in pending):
        # views from the cache, but a file that calls into the project must be analysed
        index = project_run.index_now()
        views = project_run.views_now()
    work = [tasks[i] for i in pending]
    jobs = _workers(options.jobs, len(work), pending_bytes)
    analyse = _Analysis(bool(os.environ.get(SLOW_FOR_TESTS)), options.notebooks, options.variant)
    if jobs > 1:
        from gradlint.run.pool import run_parallel

        load_analysis()  # here, before the fork: the workers inherit the imports instead of repeating them
        prepare = load_analysis
        if views:
            from functools import partial

            prepare = partial(project_run.install_and_load, index, views, load_analysis)
        outcomes = run_parallel(analyse, work, jobs, prepare)
    else:
        from gradlint.run.pool import guarded, isolated, size_of

        # A big file is analysed in a child process even so: libcst's native parser aborts its
        # process when an allocation fails, and the guards bound what it is given by estimates.
        # In a child an abort is one error for that file, and the run goes on.
        outcomes = [
            isolated(analyse, path, settings) if size_of(path) >= ISOLATED_FROM_BYTES else guarded(analyse, path, settings)
            for path, settings in work
        ]
    for i, (result, made) in zip(pending, outcomes):  # made: None when the file crashed or timed out
        variants = made.variants if made is not None else {}
        results[i] = as_reported(result, variants, options.variant)
        if cache is not None and made is not None and made.digest is not None:
            path, settings = tasks[i]
            cache.put(cache.key(path, _with_view(made.digest, views.get(path)), settings), result, variants)
    from gradlint.check.elsewhere import adopt, settle

    home = {path: i for i, (path, _) in enumerate(tasks[:named])}
    adopters = [home[views[path].runs_for] for path, _ in tasks[named:]]
    return settle(adopt(results[:named], results[named:], adopters, _text_now), _text_now)


def _companion_tasks(tasks: list, views: dict) -> list:
    """(path, settings) of each module the project index gave a view to analyse for a checked
    file (view.py's runs_for), with that file's settings; none the run checks anyway."""
    settings_of = {path: settings for path, settings in tasks}
    checked = {os.path.abspath(path) for path, _ in tasks}
    return [
        (path, settings_of[view.runs_for])
        for path, view in sorted(views.items())
        if view.runs_for in settings_of and os.path.abspath(path) not in checked
    ]


def _text_now(path: str) -> "str | None":
    """The text of a file as it is now, None when it cannot be read as text."""
    data, error = read_source(path)
    if error is not None:
        return None
    text, error = decode(data, path)
    return None if error is not None else text


def _index_again(files: list, roots: tuple, notebooks=None, notebook_code=None):
    """The run's project index, its files read again ((path, wrappers) of each)."""
    from gradlint.run import project_run

    texts = []
    for path, wrappers in files:
        try:
            raw = _read_for_run(path, notebooks)
            code = notebook_code(raw[0], path) if notebook_code is not None and isinstance(raw, tuple) and raw[1] is None else None
            read = _digested(raw)
        except Exception:  # gone or unreadable since: the run's other files still make the index
            continue
        if isinstance(read, tuple) and (read[2] is not None or code):
            digest, _, text = read
            texts.append((path, text if text is not None else code, digest, wrappers))
    return project_run.index_files(texts, roots)


def _with_view(digest: str, view) -> str:
    """A file's part of its cache key: its bytes' digest, and the digest of the other modules
    its result depends on (none: the key is the one it always had)."""
    return digest if view is None else f"{digest}+{view.digest}"


def _read_for_run(path: str, notebooks=None) -> "FileResult | tuple[bytes, str | None]":
    """The file's bytes and text (None for a notebook, whose worker reads its cells), or its
    error as a result."""
    data, error = read_source(path)
    if error is not None:
        return FileResult(path, errors=[error])
    if _is_notebook(path, notebooks):  # a notebook's text is JSON: its worker reads the cells
        return data, None
    text, error = decode(data, path)
    if error is not None:
        return FileResult(path, errors=[error])
    return data, text


def _without_analysis(
    path: str, settings: Settings, cache, variant: str = "", notebooks=None, read=None, view=None
) -> "FileResult | int":
    """The file's result when it needs no analysis (unreadable, undecodable, no gradient event
    in it and no call into the project (`view`), in the cache), else its size in bytes.
    `read`: what _digested(_read_for_run(...)) gave for it (None: read it now)."""
    if read is None:
        read = _digested(_read_for_run(path, notebooks))
    if isinstance(read, FileResult):
        return read
    digest, size, text = read
    if text is not None and view is None and not _passes_prefilter(text, settings):
        # No spelling of a gradient event and no call into the project: nothing to find, so
        # nothing is parsed (a syntax error here is Python's and ruff's to report: README).
        return FileResult(path)
    if cache is not None:
        hit = cache.get(cache.key(path, _with_view(digest, view), settings), path, variant)
        if hit is not None:
            hit.source_digest = digest  # what an edit of the file must find there (gradlint/edit/rewrite.py)
            return hit
    return size


def _digested(read):
    """(digest, size, text) of what _read_for_run gave (its error result as it is): a run keeps
    no file's bytes while the others are read and the project is indexed."""
    if isinstance(read, FileResult):
        return read
    from gradlint.run.cache import content_digest

    data, text = read
    return content_digest(data), len(data), text


from gradlint.run.pool import ISOLATED_FROM_BYTES  # noqa: E402,F401  a file this big is analysed in a child (check_files)


def _workers(asked: int | None, files: int, size: int) -> int:
    """How many processes analyse `files` files of `size` bytes in all (1: this one)."""
    if asked is not None and asked > 0:
        return min(asked, files) if files >= MIN_FILES_FOR_POOL else 1
    if files < MIN_FILES_FOR_POOL or size < MIN_BYTES_FOR_POOL:
        return 1
    return min(os.cpu_count() or 1, files)


def load_analysis() -> None:
    """Import what analysing a file needs (libcst, the model, the rules: 0.4 s) in a worker
    before its first file's clock starts.  A single-process run does not: a file that the
    screen finds empty never needs libcst, and a run of such files should not pay for it."""
    import libcst  # noqa: F401

    try:
        # libcst's native parser, which its first parse would import: a child forked for a big
        # file (run/pool.py `apart`) under its memory bound may fail to map it (an ImportError
        # there, the file's check lost), so it is mapped here, once, before any fork
        from libcst import native  # noqa: F401
    except ImportError:
        pass
    from gradlint.fix import plan  # noqa: F401
    from gradlint.model import loops  # noqa: F401
    from gradlint.rules.registry import all_rules

    all_rules()


# Tests only: the analysis of a file with this base name stalls (until its time limit stops
# it).  Read once per run, so the hook costs a normal run nothing per file.
SLOW_FOR_TESTS = "GRADLINT_TEST_STALL_ON"


@dataclass(frozen=True)
class _Analysis:
    """What a worker runs per file (a picklable callable): _check_file_for_every_report, and in
    the tests, the stall of SLOW_FOR_TESTS first."""

    stall: bool = False
    notebooks: "Callable | None" = None  # RunOptions.notebooks (a module-level function: picklable)
    variant: str = ""  # RunOptions.variant: the report this run makes

    def __call__(self, path: str, settings: Settings) -> tuple[FileResult, Made]:
        if self.stall:
            stall_for_tests(path)
        return _check_file_for_every_report(path, settings, self.notebooks, self.variant)


def stall_for_tests(path: str) -> None:
    if os.path.basename(path) == os.environ.get(SLOW_FOR_TESTS):
        import time

        time.sleep(24 * 3600)


def check_paths(paths: list[str], settings: Settings, options: RunOptions = RunOptions()) -> RunResult:
    """Discover and check with one Settings for every file (tests and simple callers)."""
    from gradlint.run.discover import discover

    found = discover(paths)
    results = check_files([(path, settings) for path in found.files], options)
    return RunResult(sorted(results, key=lambda r: r.path), found.errors, found.outside)
