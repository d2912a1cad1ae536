"""`--fix` on a Jupyter notebook: fixes found in the joined code cells, written back per cell.

The checker sees a notebook as its code cells joined (gradlint/check/notebook.py),
so a fix's edits count lines of that joined text.  Here each fix is allowed
only when all its edits fall in one cell and touch no blanked IPython line;
each kept fix is replayed on that cell's real source.  The notebook's JSON
is then rewritten cell by cell (gradlint/check/notebook_edit.py): every byte but
the changed cells' `source` values stays as it was.
"""

from __future__ import annotations

import copy
import json
from typing import Optional

from gradlint.core import source_lines
from gradlint.core.findings import Edit, FileResult, Fix, Span
from gradlint.fix import apply
from gradlint.fix.session import FileFix
from gradlint.check.notebook_edit import code_cells, replace_cell_sources, source_spans


def fix_notebook(data: bytes, result: FileResult, settings, unsafe: bool, count_unsafe: bool = False) -> Optional[FileFix]:
    from gradlint.check.engine import check_source
    from gradlint.fix.session import fix_source
    from gradlint.check.notebook import check_notebook_data, read_notebook

    try:
        text = data.decode("utf-8")
        notebook = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        return None
    spans = source_spans(text)
    read = read_notebook(data, result.path)
    joined, where = read.source, read.where
    if read.error is not None or spans is None or joined is None:
        return None
    found = code_cells(notebook)
    indices = [index for index, _ in found]
    cells = _Cells(joined, where, [source for _, source in found], indices)
    safe_cells: dict = {}
    outcome = fix_source(
        joined,
        lambda code: check_source(code, result.path, settings),
        unsafe,
        cells.allowed,
        cells.accepted,
        where=cells.name,
        count_unsafe=count_unsafe,
        safe_done=lambda: safe_cells.update(copy.deepcopy(vars(cells))),
    )
    if not unsafe and count_unsafe:
        vars(cells).update(safe_cells)  # the unsafe fixes were only counted: back to the safe ones' cells
    after = replace_cell_sources(text, spans, {indices[n - 1]: cells.real[n - 1] for n in cells.changed})
    if after != text:
        outcome.result, _ = check_notebook_data(after.encode("utf-8"), result.path, settings)
    else:
        outcome.result = result
    return FileFix(text, after, outcome)


class _Cells:
    """Which code cell each line of the joined text is in, kept up to date as fixes land."""

    def __init__(self, joined: str, where: list[tuple[int, int]], real: list[str], indices: list[int]):
        self.indices = indices  # code cell n -> its index among all the cells (n - 1 -> index)
        self.counts = [0] * len(real)
        for cell, _ in where:
            self.counts[cell - 1] += 1
        self.blanked = {
            (cell, line)
            for (cell, line), text in zip(where, joined.split("\n"))
            if text != source_lines.lines(real[cell - 1])[line - 1]
        }
        self.real = real
        self.changed: set[int] = set()

    def _locate(self, line: int) -> Optional[tuple[int, int]]:
        start = 1
        for number, count in enumerate(self.counts, start=1):
            if start <= line < start + count:
                return number, line - start + 1
            start += count
        return None

    def name(self, line: int) -> str:
        where = self._locate(line)  # cells counted over every cell, as the reports count them
        return f"cell {self.indices[where[0] - 1] + 1}, line {where[1]}" if where else f"line {line}"

    def _cell_of(self, fix: Fix) -> Optional[int]:
        cells = set()
        for edit in fix.edits:
            span = edit.span
            last = span.end_line - 1 if span.end_col == 1 and span.end_line > span.line else span.end_line
            for line in range(span.line, last + 1):
                where = self._locate(line)
                if where is None or where in self.blanked:
                    return None
                cells.add(where[0])
        return cells.pop() if len(cells) == 1 else None

    def allowed(self, fix: Fix) -> bool:
        return self._cell_of(fix) is not None

    def accepted(self, fix: Fix, before: str, after: str) -> None:
        number = self._cell_of(fix)
        start = 1 + sum(self.counts[: number - 1])
        local = Fix(
            fix.description,
            tuple(
                Edit(Span(e.span.line - start + 1, e.span.col, e.span.end_line - start + 1, e.span.end_col), e.new_text)
                for e in fix.edits
            ),
        )
        old = self.real[number - 1]
        new = apply(old, local)
        if not old.endswith("\n") and new.endswith("\n"):
            new = new[:-1]  # deleting a cell's last statement kept the line end before it
        self.real[number - 1] = new
        self.counts[number - 1] += after.count("\n") - before.count("\n")
        # Which of the cell's lines are blanked IPython lines, where they are now.
        start = 1 + sum(self.counts[: number - 1])
        joined = after.split("\n")[start - 1 : start - 1 + self.counts[number - 1]]
        self.blanked = {(cell, line) for cell, line in self.blanked if cell != number} | {
            (number, line)
            for line, (code, real) in enumerate(zip(joined, source_lines.lines(new)), start=1)
            if code != real
        }
        self.changed.add(number)
