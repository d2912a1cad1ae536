"""CPython's ast of an edited text, re-parsing only the top-level statements the edit touched.

A module's ast is the concatenation of its top-level statements' trees.  The
text is cut into chunks: each top-level statement with the blank and comment
lines above it (statements sharing a line, `a = 1; b = 2`, share a chunk; a
last chunk holds what follows the last statement).  After an edit, the lines
the old and new texts have in common at the start and at the end are found;
chunks wholly inside the common start are reused, chunks of the common end
are reused when they did not move (they are re-parsed at their new line
otherwise: ast nodes carry their line numbers), and only the region between
is parsed, prefixed by as many newlines as lines come before it, so that its
nodes get their lines in the whole text.

Why the trees are the whole parse's: every reused chunk and the new region
begin at column 0 on a line where a top-level statement began, and each parsed
on its own to its end, so the tokenizer left it with no open bracket, string,
block or continuation: the next chunk starts a fresh logical line in the whole
text exactly as it does alone.  Not tried: text with a carriage return
(CPython and a "\n" split count lines differently) or a byte order mark.  When
the region does not parse alone (the edit left the text broken, or joined two
statements), the whole text is parsed, as without this module.
tests/test_incremental.py compares the trees with `ast.parse` after random edits.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Optional

KEEP_BASELINES = 2  # the source and the screened text are parsed in every check


@dataclass
class Chunk:
    first: int  # 1-based line numbers in the text it was parsed in
    last: int
    statements: list  # ast.stmt


@dataclass
class _Baseline:
    text: str
    lines: list[str]  # keepends
    chunks: list[Chunk]


class AstChunks:
    """The last texts parsed whole or in chunks, and their chunks (one open document)."""

    def __init__(self) -> None:
        self._baselines: list[_Baseline] = []
        self.reparsed_lines = 0  # lines parsed by the last call (tests and benchmarks read it)

    def parse(self, text: str) -> ast.Module:
        """`ast.parse(text)`, raising as it does; reuses the chunks of a similar earlier text."""
        lines = _lines(text)
        tree = self._from_chunks(text, lines) if _chunkable(text) else None
        if tree is None:
            tree = _parse_whole(text)  # raises SyntaxError for a broken text: the baselines stay
            self.reparsed_lines = len(lines)
            chunks = _chunks_of(tree.body, 1, len(lines)) if _chunkable(text) else None
        else:
            tree, chunks = tree
        if chunks is not None:
            self._baselines = [_Baseline(text, lines, chunks)] + [b for b in self._baselines if b.text != text][
                : KEEP_BASELINES - 1
            ]
        return tree

    def _from_chunks(self, text: str, lines: list[str]):
        best, common = None, (0, 0)
        for baseline in self._baselines:
            if baseline.text == text:
                self.reparsed_lines = 0
                return _module([s for c in baseline.chunks for s in c.statements]), baseline.chunks
            shared = _common_lines(baseline.lines, lines)
            if best is None or sum(shared) > sum(common):
                best, common = baseline, shared
        if best is None or sum(common) == 0:
            return None
        head, tail = common
        old_count, new_count = len(best.lines), len(lines)
        delta = new_count - old_count
        kept_before: list[Chunk] = []
        kept_after: list[Chunk] = []
        region_first, region_last = None, None
        for chunk in best.chunks:
            if chunk.last <= head:
                kept_before.append(chunk)
            elif chunk.first > old_count - tail:
                kept_after.append(chunk)
            else:
                region_first = chunk.first if region_first is None else region_first
                region_last = chunk.last
        if region_first is None:  # the edit only added lines between chunks (at the very end)
            region_first = kept_before[-1].last + 1 if kept_before else 1
            region_last = region_first - 1
        new_last = region_last + delta  # the region's last line in the new text
        if new_last < region_first - 1:
            return None
        parsed = 0
        middle = _parse_lines(lines, region_first, new_last)
        if middle is None:
            return None
        parsed += new_last - region_first + 1
        after: list[Chunk] = []
        if delta == 0:
            after = kept_after
        elif kept_after:
            shifted = _parse_lines(lines, kept_after[0].first + delta, new_count)
            if shifted is None:
                return None
            parsed += new_count - kept_after[0].first - delta + 1
            after = shifted
        chunks = kept_before + middle + after
        if chunks and chunks[-1].last < new_count:  # trailing lines with no statement (comments, blanks)
            chunks.append(Chunk(chunks[-1].last + 1, new_count, []))
        self.reparsed_lines = parsed
        return _module([s for c in chunks for s in c.statements]), chunks


def _chunkable(text: str) -> bool:
    return "\r" not in text and not text.startswith("\ufeff")


def _lines(text: str) -> list[str]:
    """The text's lines with their ends, split where CPython counts a line (str.splitlines also
    splits at form feeds, \x85, \u2028 and others)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _common_lines(old: list[str], new: list[str]) -> tuple[int, int]:
    """How many lines the two texts share at their start, then at their end (not overlapping)."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    return head, tail


def _parse_whole(text: str) -> ast.Module:
    from gradlint.parse import python_ast

    return python_ast.parse(text)


def _parse_lines(lines: list[str], first: int, last: int) -> Optional[list[Chunk]]:
    """The chunks of lines first..last (1-based) parsed alone at their place; None when they do
    not parse alone.  (A future import below the first statement parses: the compiler, not
    the parser, refuses it, alone or in the whole text.)"""
    if last < first:
        return []
    text = "".join(lines[first - 1 : last])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse("\n" * (first - 1) + text)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            return None
    return _chunks_of(tree.body, first, last)


def _chunks_of(body: list, first: int, last: int) -> list[Chunk]:
    """Statements grouped into chunks covering lines first..last."""
    chunks: list[Chunk] = []
    start = first
    for stmt in body:
        begin = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", ())])
        end = stmt.end_lineno or stmt.lineno
        if chunks and begin <= chunks[-1].last:  # `a = 1; b = 2`: one line, one chunk
            chunks[-1].statements.append(stmt)
            chunks[-1].last = max(chunks[-1].last, end)
            continue
        chunks.append(Chunk(start, end, [stmt]))
        start = end + 1
    if start <= last:
        chunks.append(Chunk(start, last, []))
    return chunks


def _module(body: list) -> ast.Module:
    return ast.Module(body=body, type_ignores=[])
