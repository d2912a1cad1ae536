"""A huge file modelled in pieces, so that libcst never parses it whole.

libcst's native parser needs memory in proportion to the text it parses at once:
its parse of a 50,000-line file peaks at 576 MB, though the Python tree it hands
back is only 44 MB (measured with tracemalloc).  Above PIECES_FROM lines,
the text libcst would parse is cut between top-level statements into pieces of
about PIECE_LINES lines.  Each piece is parsed, walked by the one bindings pass
of the file, its loops are modelled, and its tree is dropped.  The bindings keep
what later pieces need: assignments' values and every def (helpers are inlined
wherever they are called), so a file made mostly of defs keeps most of its tree.

The catch: bindings are the whole file's (a loop at the top may step an
optimizer assigned at the bottom).  A piece's loops are modelled with the
bindings seen so far, through a Recorder that writes down every question asked
of them and its answer.  After the last piece every question is asked again of
the complete bindings, and a piece that would get a different answer is parsed
a second time and modelled anew.  The models are therefore the ones a whole parse
gives (tests/test_piecewise.py compares both on every fixture, cut into pieces of
a few lines).

What this cannot reproduce exactly (a piece libcst rejects, node counts that
disagree with the ast, a node the ast table cannot place) gives None, and the
caller parses the file whole.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import libcst as cst

from gradlint.parse.cst_parse import parse_module
from gradlint.core import events as api
from gradlint.model.bindings import Bindings, ClassInfo
from gradlint.model.loops import Builder, FileModel, LoopFinder, LoopModel, event_names, file_model
from gradlint.model.positions import KINDS, AstTable, Positions, PositionsDisagree
from gradlint.model.walk import walk
from gradlint.options.settings import Wrappers

# libcst's parse costs more per line the more it parses at once (training loops: 0.17 ms a
# five-line loop in a 500-line text, 0.22 in 2,000 lines, 0.29 in 20,000), so the pieces are
# small: a 10,000-line file of loops is checked in a tenth less time than in 2,000-line pieces.
PIECE_LINES = 500
PIECES_FROM = 4000  # below this a whole parse costs little memory

_LINE_END = re.compile(r"\r\n|\r|\n")  # the line ends CPython counts (str.splitlines counts more)


def cut(tree: ast.Module, piece_lines: Optional[int] = None) -> list[tuple[int, int]]:
    """(first line, last line) of each piece: whole top-level statements, cut where one
    starts at column 0 on a line of its own (with its decorators), once a piece has
    piece_lines lines (default PIECE_LINES).  The last piece runs to the end of the text (line -1)."""
    piece_lines = PIECE_LINES if piece_lines is None else piece_lines
    spans: list[tuple[int, int]] = []
    first = 1
    previous_end = 0
    for stmt in tree.body:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        if stmt.col_offset == 0 and start > previous_end and start - first >= piece_lines:
            spans.append((first, start - 1))
            first = start
        previous_end = max(previous_end, stmt.end_lineno or stmt.lineno)
    spans.append((first, -1))
    return spans


# A run of more blank or comment lines than this between two statements ends a piece and is
# left out of every piece: the screen blanks what the analysis cannot reach, and libcst would
# spend a fifth of a parse on blank lines (a generated module screened down to one loop: its
# 250,000 blank lines cost libcst seconds).
GAP_LINES = 50


def grouped(tree: ast.Module, piece_lines: Optional[int] = None) -> list[tuple[int, int]]:
    """statement_spans gathered into pieces of fewer than piece_lines lines (default PIECE_LINES),
    a piece ending where a gap of more than GAP_LINES lines follows; the gaps are in no piece."""
    piece_lines = PIECE_LINES if piece_lines is None else piece_lines
    out: list[tuple[int, int]] = []
    for start, end in statement_spans(tree):
        if out and start - out[-1][1] - 1 <= GAP_LINES and end - out[-1][0] < piece_lines:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def statement_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """(first line, last line) of each top-level statement with its decorators (statements
    sharing a line, `a = 1; b = 2`, make one span); the blank and comment lines between are
    left out: libcst need not parse them."""
    spans: list[tuple[int, int]] = []
    for stmt in tree.body:
        start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        end = stmt.end_lineno or stmt.lineno
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def def_chunks(tree: ast.Module, text: str, piece_lines: Optional[int] = None) -> dict[int, tuple]:
    """The top-level defs longer than piece_lines lines (default PIECE_LINES) that libcst can
    parse a part of the body at a time: first line (its decorators') -> (async, the chunks'
    (first line, last line)).  The first chunk holds the header; the others begin where the
    one before ended, on a body statement's line or on the blank lines before it, never on a
    comment or inside a statement.  `text`: what `tree` was parsed from.

    libcst's native parser holds memory in proportion to what it parses at once: a
    20,000-line `def train():` of loops peaks at 290 MB parsed whole (benchmarks/loop_dense.py).
    Only empty lines may lie between two chunks: a comment there, or a line of indentation
    only, can belong to the block that ends above it (its footer) in a whole parse; an empty
    line is the next statement's."""
    piece_lines = PIECE_LINES if piece_lines is None else piece_lines
    out: dict[int, tuple] = {}
    lines: list[str] = []  # the text's lines (0-based), split when a def is long enough to ask
    for stmt in tree.body:
        start = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list]) if isinstance(stmt, _DEFS) else 0
        if not start or (stmt.end_lineno or 0) - start < piece_lines:
            continue
        lines = lines or _LINE_END.split(text)  # (the line ends CPython counts, as the tree's numbers)
        chunks = [(start, 0)]
        body = stmt.body
        for before, after in zip(body, body[1:]):
            next_start = min([after.lineno] + [d.lineno for d in getattr(after, "decorator_list", ())])
            end = before.end_lineno or before.lineno
            if next_start <= end or any(lines[n - 1] for n in range(end + 1, next_start)):
                continue  # `a; b`, or a comment or indented whitespace between: no cut here
            if end - chunks[-1][0] >= piece_lines:
                chunks[-1] = (chunks[-1][0], end)
                chunks.append((end + 1, 0))
        if len(chunks) > 1:
            chunks[-1] = (chunks[-1][0], stmt.end_lineno)
            out[start] = (isinstance(stmt, ast.AsyncFunctionDef), tuple(chunks))
    return out


@dataclass
class Log:
    """One piece's questions to the bindings and their answers."""

    answers: dict = field(default_factory=dict)
    stale: bool = False  # it read the bindings' data directly: its answers cannot be asked again
    # the events of training loops inside other modules' functions its models ran into (the
    # builder's foreign_loop_events): a reused piece brings them back, as modelling it would
    foreign_loop_events: frozenset = frozenset()


class Recorder:
    """The bindings as one piece's models see them, every answer written down."""

    def __init__(self, target, log: Log, prefix: str = "") -> None:
        self._target = target
        self._log = log
        self._prefix = prefix

    def __getattr__(self, name: str):
        value = getattr(self._target, name)
        if name == "imports":
            wrapped = Recorder(value, self._log, "imports.")
        elif callable(value):
            wrapped = self._recorded(self._prefix + name, value)
        else:
            self._log.stale = True
            return value
        self.__dict__[name] = wrapped  # the next access does not come here
        return wrapped

    def _recorded(self, name: str, method):
        log = self._log

        def recorded(*args, **kwargs):
            answer = method(*args, **kwargs)
            if kwargs:
                log.stale = True
                return answer
            key = (name, args)
            try:
                if key not in log.answers:
                    log.answers[key] = frozen(answer)
            except TypeError:  # an argument that cannot be a key
                log.stale = True
            return answer

        return recorded


def frozen(answer):
    """An answer as a value that later changes to the bindings cannot alter."""
    if isinstance(answer, (list, tuple)):
        return tuple(frozen(item) for item in answer)
    if isinstance(answer, (set, frozenset)):
        return frozenset(answer)
    if isinstance(answer, dict):
        return tuple((key, frozen(value)) for key, value in answer.items())
    return answer


def _ask_again(bindings: Bindings, key: tuple, memo: dict):
    if key not in memo:
        name, args = key
        target = bindings
        for part in name.split("."):
            target = getattr(target, part)
        memo[key] = frozen(target(*args))
    return memo[key]


@dataclass
class _Piece:
    first: int
    last: int
    counts_before: dict
    log: Optional[Log]  # None: settled (run), its answers not recorded
    slots: range  # its entries in the file's outline
    # its tree, kept only when a memo keeps it anyway (the second pass models the same nodes)
    module: Optional[cst.Module] = None


class _Disagrees(Exception):
    """The pieces cannot give what a whole parse would: parse whole."""


def build_in_pieces(
    text: str,
    path: str,
    source: str,
    wrappers: Wrappers,
    table: AstTable,
    spans: list[tuple[int, int]],
    parse: Callable[[str], cst.Module] = parse_module,
    models=None,
    project=None,
    context=None,
    chunks: Optional[dict] = None,
) -> Optional[FileModel]:
    """The file's model built piece by piece (`text` is what libcst would parse whole,
    `table` its ast positions); None when only a whole parse can give it.  `spans` need not
    cover the lines between pieces that hold no statement; `parse` may hand back the tree
    of an equal text parsed before (gradlint/incremental: trees are never changed); `models`
    (a gradlint.incremental.ByIdentity) keeps each piece's first-pass models for the next build;
    `context`: the check's FileContext, which the model keeps for the fixes; `chunks`: def_chunks
    of the text, the long defs libcst parses a part of the body at a time."""
    try:
        return _Build(text, path, wrappers, table, parse, models, project, chunks).run(spans, source, context)
    except (_Disagrees, PositionsDisagree, cst.ParserSyntaxError):
        return None


class _Build:
    def __init__(
        self, text: str, path: str, wrappers: Wrappers, table: AstTable, parse=parse_module, models=None, project=None,
        chunks: Optional[dict] = None,
    ) -> None:
        self.text = text
        self.parse = parse
        self.chunks = chunks or {}
        self.models = models
        # what a model depends on besides its tree, place and answers (the project's modules too)
        self.model_key = (path, wrappers, project.digest if project is not None else None)
        self.project = project
        self.table = table
        self.names = event_names(wrappers)
        self.bindings = Bindings(self.names, project.starred() if project is not None else None)
        self.builder = Builder(None, path, wrappers, self.bindings, project=project)
        self.builder.positions = Positions(None, text, self.bindings, code=self.builder.code, table=table, strict=True)
        self.finder = LoopFinder(self.builder, self.bindings)
        starts = [0] + [m.end() for m in _LINE_END.finditer(text)]
        self.line_starts = starts
        # Per outline entry in source order: its model (or None), or a class to judge at the end.
        self.slots: list = []
        self.pieces: list[_Piece] = []
        self.second_passes = 0  # pieces modelled again (tests and benchmarks read it)
        self.config: Optional[cst.Module] = None  # code generation once no piece is left

    def run(self, spans: list[tuple[int, int]], source: str, context=None) -> FileModel:
        for index, (first, last) in enumerate(spans):
            # The last piece's models are built on the complete bindings: nothing comes after
            # it to change an answer (its end_piece forgets only node names no question reads),
            # so its questions need no record and no second asking (a function of 4,000 loops
            # asked 80,000).  Not when the project teaches the bindings after the last piece
            # (learn_instances), nor when a memo keeps the answers for the next build.
            settled = index == len(spans) - 1 and self.project is None and self.models is None
            self.first_pass(first, last if last > 0 else len(self.line_starts), settled)
        self.builder.use_piece(self.config, self.bindings)
        if self.project is not None:  # what another module's classes build (foreign.py): pieces that asked otherwise are modelled again
            self.project.learn_instances(self.bindings)
        memo: dict = {}
        for piece in self.pieces:
            log = piece.log
            if log is None:
                continue  # settled: modelled on the complete bindings
            if log.stale or any(_ask_again(self.bindings, key, memo) != answer for key, answer in log.answers.items()):
                self.second_pass(piece)
        loops: list[LoopModel] = []
        if not api.other_framework(self.bindings.imports.packages):
            for slot in self.slots:
                model = self.finder.lightning(slot) if isinstance(slot, ClassInfo) else slot
                if model is not None:
                    loops.append(model)
            loops += self.finder.iteration_functions()
        self.builder.done()
        return file_model(self.builder.path, self.bindings, loops, self.finder.lightning_clips, source, context,
                          self.builder.foreign_loop_events)

    def piece_text(self, first: int, last: int) -> str:
        starts = self.line_starts
        end = starts[last] if last < len(starts) else len(self.text)
        return self.text[starts[first - 1] : end]

    def parse_piece(self, first: int, last: int) -> cst.Module:
        """libcst's tree of lines first..last; a long def (def_chunks) that is the whole piece
        is parsed a part of its body at a time and its statements put together in one def: the
        tree a whole parse gives (tests/test_piecewise.py compares them)."""
        found = self.chunks.get(first)
        if found is None or found[1][-1][1] != last:
            return self.parse(self.piece_text(first, last))
        is_async, chunks = found
        module = self.parse(self.piece_text(*chunks[0]))
        definition = module.body[-1]
        statements = list(definition.body.body)
        # a header of its own for each later part, ended as the text's lines are (libcst reads
        # the first line end as the module's newline); the body's indentation is the text's
        line_end = _LINE_END.search(self.text, self.line_starts[first - 1]).group()
        header = ("async def _():" if is_async else "def _():") + line_end
        last, block = module, definition.body  # the text's end: its footers
        for chunk in chunks[1:]:
            last = self.parse(header + self.piece_text(*chunk))
            block = last.body[0].body
            statements += block.body
        block = definition.body.with_changes(body=tuple(statements), footer=block.footer)
        return module.with_changes(
            body=(*module.body[:-1], definition.with_changes(body=block)),
            footer=last.footer, has_trailing_newline=last.has_trailing_newline,
        )

    def first_pass(self, first: int, last: int, settled: bool = False) -> None:
        """`settled`: the piece is modelled on the complete bindings (run), its answers not recorded."""
        bindings = self.bindings
        before = dict(bindings.counts)
        module = self.parse_piece(first, last)
        if self.config is None:
            self.config = module.with_changes(body=(), header=(), footer=())
        walk(module, bindings)  # leave_Module runs bindings.finish()
        for kind in KINDS:
            if bindings.counts[kind] - before[kind] != self.table.count(kind, first, last):
                raise _Disagrees(kind.__name__)
        outline = bindings.take_outline()
        start = len(self.slots)
        log = self._reused(module, first, outline)
        if log is None:
            log = Log()
            self.builder.use_piece(module, bindings if settled else Recorder(bindings, log))
            models = []
            earlier, self.builder.foreign_loop_events = self.builder.foreign_loop_events, set()
            for entry in outline:
                self.slots.append(entry[1] if entry[0] == "class" else self.finder.entry(entry))
                models.append(self.slots[-1] if entry[0] != "class" else None)
            log.foreign_loop_events = frozenset(self.builder.foreign_loop_events)
            self.builder.foreign_loop_events = earlier | log.foreign_loop_events
            if self.models is not None:
                self.models.put(module, (first, self.model_key), (log, models))
            if settled:
                log = None
        kept = module if self.models is not None else None
        self.pieces.append(_Piece(first, last, before, log, range(start, len(self.slots)), kept))
        bindings.end_piece()
        self.builder.use_piece(self.config, bindings)  # drops the piece's tree

    def _reused(self, module: cst.Module, first: int, outline: list) -> Optional[Log]:
        """The first-pass models of a piece an earlier build modelled (the same tree at the same
        line, so the same spans), appended to the slots, with the log of the answers they were
        built on; None: model it.  Like every first pass, they stand only if the complete
        bindings give those answers (`run`): a model is a function of its tree and of the
        answers it got, so equal answers give an equal model."""
        if self.models is None:
            return None
        known = self.models.get(module, (first, self.model_key))
        if known is None:
            return None
        log, models = known
        if log.stale or len(models) != len(outline):
            return None
        self.builder.foreign_loop_events |= log.foreign_loop_events
        for entry, model in zip(outline, models):
            if entry[0] == "class":
                self.slots.append(entry[1])  # this build's ClassInfo, judged at the end
            else:  # a copy: which events are another loop's is decided again for this file
                self.slots.append(replace(model, foreign=frozenset()) if model is not None else None)
        return log

    def second_pass(self, piece: _Piece) -> None:
        """Model a piece again with the complete bindings (its first answers have changed)."""
        self.second_passes += 1
        module = piece.module or self.parse_piece(piece.first, piece.last)
        again = Bindings(self.names)  # numbers, outline and loop facts of the new nodes only
        again.counts = dict(piece.counts_before)
        walk(module, again)
        outline = again.take_outline()
        if len(outline) != len(piece.slots):
            raise _Disagrees("outline")
        positions = self.builder.positions
        positions.extra = again
        self.builder.use_piece(module, self.bindings)
        finder = LoopFinder(self.builder, again)
        scoped = self.bindings.adopt_scopes(again)  # the new calls' defs, for Python's scoping of names
        try:
            for index, entry in zip(piece.slots, outline):
                if entry[0] != "class":  # a class keeps the complete bindings' ClassInfo, judged at the end
                    self.slots[index] = finder.entry(entry)
        finally:
            self.bindings.forget_scopes(scoped)
        positions.extra = None
        self.builder.use_piece(self.config, self.bindings)
