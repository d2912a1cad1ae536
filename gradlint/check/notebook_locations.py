"""Where a notebook's finding is for the person reading the report.

The checker sees a notebook as its code cells joined into one module
(gradlint/check/notebook.py), so a finding's Span counts lines of that joined text:
suppressions, `--add-noqa` and `--fix` work on it.  A reader needs what ruff
prints, `nb.ipynb:cell 3:4:5`: the cell counted from 1 over every cell
(markdown included, as Jupyter shows them), and the line and column in that
cell's own source (its indentation back when the cell was dedented).  Formats
that can only point at a line of the file (GitHub annotations, SARIF, JUnit)
get the line of the .ipynb file that holds the source line.

Each finding, related event and cell error gets a CellSpan; a message's
`(line 14)` (a related event) becomes `(line 4)` when the event is in the
finding's cell and `(cell 2, line 4)` when it is in another.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import replace
from typing import Optional

from gradlint.core import source_lines
from gradlint.core.findings import CellSpan, FileError, Finding, Related, Span

_LINE_IN_MESSAGE = re.compile(r"\(line (\d+)\)")
_LINE_END = re.compile(r"\r\n|\r|\n")  # the lines of the .ipynb file, as an editor counts them
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


class Locator:
    """Joined-text positions -> CellSpans, for one notebook."""

    def __init__(self, text: Optional[str], where: list, indices: list, dedents: list) -> None:
        """`text`: the notebook's JSON text (None when unknown: every file line is 1); `where`,
        `indices`, `dedents`: what gradlint.check.notebook.read_notebook found."""
        self.where = where
        self.indices = indices
        self.dedents = dedents
        self._file_lines = _FileLines(text) if text is not None else None

    def place(self, span: Span) -> Optional[CellSpan]:
        found = self._in_cell(span.line)
        if found is None:
            return None
        number, line = found
        end = self._in_cell(span.end_line)
        if end is None or end[0] != number:  # a span that runs past its cell's last line
            end_line, end_col = line, span.col
        else:
            end_line, end_col = end[1], span.end_col
        shift = self.dedents[number - 1] if number - 1 < len(self.dedents) else 0
        index = self.indices[number - 1]
        file_line = self._file_lines.line_of(index, line) if self._file_lines is not None else 1
        return CellSpan(index + 1, Span(line, span.col + shift, end_line, end_col + shift), file_line)

    def _in_cell(self, line: int) -> Optional[tuple[int, int]]:
        return self.where[line - 1] if 1 <= line <= len(self.where) else None

    def finding(self, finding: Finding) -> Finding:
        """The finding with its places in cells, its message naming cells, and no fix (its edits
        count lines of the joined cells, which no tool could apply to the JSON)."""
        cell = self.place(finding.span)
        related = tuple(replace(r, cell=self.place(r.span)) for r in finding.related)
        return replace(finding, message=self._message(finding.message, cell), related=related, fix=None, cell=cell)

    def related_in(self, finding: Finding, path: str) -> Finding:
        """A finding of another file with its related locations in this notebook (`path`) placed
        in their cells."""
        related = tuple(replace(r, cell=self.place(r.span)) if r.path == path else r for r in finding.related)
        message = finding.message
        for r in related:  # the message names the loop's call as `(nb.ipynb line 6)`: its cell's line
            if r.cell is not None:
                message = message.replace(f"({path} line {r.span.line})", f"({path} {r.cell.label()})")
        return replace(finding, related=related, message=message)

    def error(self, error: FileError) -> FileError:
        if error.kind == "syntax-error" or not error.whole_file:
            cell = self.place(Span(error.line, error.col, error.line, error.col))
            if cell is not None:
                return replace(error, cell=cell)
        return error

    def _message(self, message: str, cell: Optional[CellSpan]) -> str:
        def label(match: re.Match) -> str:
            place = self.place(Span(int(match.group(1)), 1, int(match.group(1)), 1))
            if place is None:
                return match.group(0)
            return f"({Related(Span(0, 0, 0, 0), '', place).label(cell)})"

        return _LINE_IN_MESSAGE.sub(label, message)


class _FileLines:
    """The .ipynb line of each source line of each cell, read from the JSON text (every byte of
    which is kept by --fix and --add-noqa, so the text is what the user's editor shows)."""

    def __init__(self, text: str) -> None:
        from gradlint.check.notebook_edit import source_spans

        self.text = text
        self.spans = source_spans(text) or []
        self._cells: dict[int, tuple[list[int], list[int]]] = {}
        self._line_starts_of: dict[int, list[int]] = {}
        self._ends = [m.end() for m in _LINE_END.finditer(text)]  # where each line of the file ends

    def line_of(self, index: int, line: int) -> int:
        """The file line holding line `line` (1-based) of the source of cell `index`."""
        if index >= len(self.spans) or self.spans[index] is None:
            return 1
        starts, file_lines = self._cell(index)
        if not starts:
            return self._file_line(self.spans[index][0])
        line_starts = self._line_starts(index)
        offset = line_starts[min(line, len(line_starts)) - 1]
        return file_lines[max(bisect_right(starts, offset) - 1, 0)]

    def _cell(self, index: int) -> tuple[list[int], list[int]]:
        """(offset in the cell's source where each JSON string of its `source` starts, the file
        line of that string)."""
        if index not in self._cells:
            start, end = self.spans[index]
            starts, file_lines, offset = [], [], 0
            for match in _JSON_STRING.finditer(self.text, start, end):
                try:
                    piece = json.loads(match.group())
                except ValueError:
                    continue
                starts.append(offset)
                file_lines.append(self._file_line(match.start()))
                offset += len(piece)
            self._cells[index] = (starts, file_lines)
        return self._cells[index]

    def _line_starts(self, index: int) -> list[int]:
        if index not in self._line_starts_of:
            self._line_starts_of[index] = self._read_line_starts(index)
        return self._line_starts_of[index]

    def _read_line_starts(self, index: int) -> list[int]:
        """Where each line of the cell's source starts (as the checker split it)."""
        start, end = self.spans[index]
        try:
            value = json.loads(self.text[start:end])
        except ValueError:
            value = ""
        source = "".join(s for s in value if isinstance(s, str)) if isinstance(value, list) else value
        source = source if isinstance(source, str) else ""
        starts, offset = [0], 0
        for text in source_lines.lines(source, keepends=True):
            offset += len(text)
            starts.append(offset)
        return starts

    def _file_line(self, offset: int) -> int:
        return bisect_right(self._ends, offset) + 1
