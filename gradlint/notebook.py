"""Jupyter notebooks: check the code cells of an .ipynb as one module.

The code cells are joined in order (a training loop lives in one cell, but
the optimizer it steps is usually built in an earlier one), so bindings
flow across cells.  IPython syntax is blanked out line for line: a `%magic`,
`!shell`, `x = !shell`, `x = %magic` or `obj?` line becomes `pass` at its
indentation, the lines it continues with a trailing backslash become
empty, and a `%%cell` magic blanks its whole cell.  None of them is a
reason to skip the notebook.  Line numbers therefore map back to (cell, line):
findings keep the line of the joined code-cell source in their span (the
same number in every output format) and name the cell in their message,
`[cell 3, line 2]`, where the cell number counts code cells from 1 (what
Jupyter shows as the execution order may differ).

A `# noqa` in a cell works as in a .py file.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from gradlint.findings import READ_ERROR, SYNTAX_ERROR, FileError, FileResult
from gradlint.settings import Settings

SUFFIX = ".ipynb"
_MAGIC = re.compile(r"^(\s*)(%|!|\?)")
# `files = !ls`, `t = %timeit -o f()`: an assignment from a shell command or a magic
# (the first target character is no space, so the indentation can be split one way only)
_ASSIGNED_MAGIC = re.compile(r"^(\s*)[\w.,\[\]()*][\w.,\s\[\]()*]*=\s*[!%]")
_HELP = re.compile(r"^(\s*)\??[\w.*]+\?\??\s*$")  # `model?`, `model??`, `?model`, `torch.*Tensor?`


def _magic_indent(line: str):
    """The indentation of an IPython line (then it is blanked), or None for Python."""
    for pattern in (_MAGIC, _ASSIGNED_MAGIC, _HELP):
        match = pattern.match(line)
        if match:
            return match.group(1)
    return None


def _still_open(line: str, state: tuple[int, str]) -> tuple[int, str]:
    """(bracket depth, open quote) after this Python line, from the state before it.

    A line that starts while a bracket or a string is open (`print('%d'` then
    `% (a,)` on the next line) is Python however it starts: IPython reads its
    escapes only at the start of a statement.  One pass over the characters."""
    depth, quote = state
    i, n = 0, len(line)
    while i < n:
        char = line[i]
        if quote:
            if char == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i, quote = i + len(quote), ""
                continue
        elif char == "#":
            break
        elif char in "'\"":
            quote = line[i:i + 3] if line[i:i + 3] in ("'''", '"""') else char
            i += len(quote)
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        i += 1
    if quote in ("'", '"'):
        quote = ""  # a one-line string never spans lines (a syntax error either way)
    return depth, quote


def _leaves_open(state: tuple[int, str], line: str) -> bool:
    """The statement goes on on the next line: a bracket or string open, or a backslash."""
    return state != (0, "") or line.rstrip().endswith("\\")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


def _cell_text(cell) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def notebook_source(data: bytes, path: str) -> tuple[str | None, list[tuple[int, int]], FileError | None]:
    """(joined source, line -> (code cell number, line in cell), error)."""
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return None, [], FileError(path, READ_ERROR, f"not a Jupyter notebook (invalid JSON: {exc})")
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None, [], FileError(path, READ_ERROR, "not a Jupyter notebook (no list of cells)")
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    number = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        cell_lines = _cell_text(cell).splitlines()
        whole_cell_magic = bool(cell_lines) and cell_lines[0].lstrip().startswith("%%")
        continued = False  # the previous IPython line ended with a backslash
        python, inside = (0, ""), False  # what the Python lines so far leave open (_still_open)
        for index, line in enumerate(cell_lines, start=1):
            if whole_cell_magic:
                line = ""
            elif continued:
                continued, line = line.rstrip().endswith("\\"), ""
            else:
                indent = None if inside else _magic_indent(line)
                if indent is not None:
                    continued, line = line.rstrip().endswith("\\"), indent + "pass"
                else:
                    python = _still_open(line, python)
                    inside = _leaves_open(python, line)
            lines.append(line)
            where.append((number, index))
    return "\n".join(lines) + "\n", where, None


def _locate(where: list[tuple[int, int]], line: int) -> str:
    if 1 <= line <= len(where):
        cell, cell_line = where[line - 1]
        return f"[cell {cell}, line {cell_line}]"
    return ""


def check_notebook(path: str, settings: Settings) -> tuple[FileResult, str | None]:
    """The notebook's FileResult, and the joined source (for --report-unused-noqa)."""
    from gradlint.engine import read_source

    data, error = read_source(path)
    if error is not None:
        return FileResult(path, errors=[error]), None
    return check_notebook_data(data, path, settings)


def check_notebook_data(data: bytes, path: str, settings: Settings) -> tuple[FileResult, str | None]:
    """check_notebook on the notebook's bytes.  Findings carry no fix: their edits count lines
    in the joined cells, which no tool could apply to the JSON (`--fix` maps them to cells)."""
    from gradlint.engine import check_source

    source, where, error = notebook_source(data, path)
    if error is not None:
        return FileResult(path, errors=[error]), None
    result = check_source(source, path, settings)

    def tag(finding):
        return replace(finding, message=f"{finding.message} {_locate(where, finding.span.line)}".rstrip(), fix=None)

    result.findings = [tag(f) for f in result.findings]
    result.suppressed = [tag(f) for f in result.suppressed]
    result.errors = [
        replace(e, message=f"{e.message} {_locate(where, e.line)}".rstrip()) if e.kind == SYNTAX_ERROR else e
        for e in result.errors
    ]
    return result, source
