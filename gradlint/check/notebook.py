"""Jupyter notebooks: check the code cells of an .ipynb as one module.

The code cells are joined in order (a training loop lives in one cell, but
the optimizer it steps is usually built in an earlier one), so bindings
flow across cells.  IPython syntax is blanked out line for line: a `%magic`,
`!shell`, `x = !shell`, `x = %magic` or `obj?` line becomes `pass` at its
indentation, the lines it continues with a trailing backslash become
empty, and a `%%cell` magic blanks its whole cell.  None of them is a
reason to skip the notebook.  Line numbers therefore map back to (cell, line):
findings keep the line of the joined code-cell source in their span (what
suppressions and fixes work on) and carry where they are for the reader
(gradlint/check/notebook_locations.py): the cell counted from 1 over every cell,
markdown included, as ruff counts them, the line and column in it, and the
line of the .ipynb file that holds it.  The reports print those.

A `# noqa` in a cell works as in a .py file.

Each cell runs on its own in Jupyter, so each is read on its own first: a
cell whose every line carries the same indentation is dedented (IPython does
the same), and a cell that still does not parse is one syntax error, named
by its cell, and is left out (its lines become empty, so the numbers of the
others stay).  The other cells are checked: one broken cell must not hide
the notebook's findings.
"""

from __future__ import annotations

import json
import re
import warnings
from typing import NamedTuple

from gradlint.core import source_lines
from gradlint.core.findings import READ_ERROR, SYNTAX_ERROR, FileError, FileResult
from gradlint.options.settings import Settings

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


class NotebookSource(NamedTuple):
    source: "str | None"  # the code cells joined, IPython lines blanked, broken cells emptied
    where: list  # line of `source` -> (code cell number, line in that cell)
    error: "FileError | None"  # the file is no notebook at all
    cell_errors: list  # a FileError per code cell that does not parse (the rest is checked)
    indices: list = []  # code cell number n -> its index in the notebook's `cells` list (item n - 1)
    dedents: list = []  # code cell number n -> the width of the indentation taken off its lines


def read_notebook(data: bytes, path: str) -> NotebookSource:
    try:
        notebook = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return NotebookSource(None, [], FileError(path, READ_ERROR, f"not a Jupyter notebook (invalid JSON: {exc})"), [])
    except RecursionError:  # json recurses per level of nesting (an output nested thousands deep)
        return NotebookSource(None, [], FileError(path, READ_ERROR, "not a Jupyter notebook (JSON nested too deeply to read)"), [])
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return NotebookSource(None, [], FileError(path, READ_ERROR, "not a Jupyter notebook (no list of cells)"), [])
    lines: list[str] = []
    where: list[tuple[int, int]] = []
    cell_errors: list[FileError] = []
    indices: list[int] = []
    dedents: list[int] = []
    number = 0
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        number += 1
        indices.append(index)
        real_lines = source_lines.lines(_cell_text(cell))
        dedents.append(len(_dedent_prefix(real_lines)))
        cell_lines = _python_lines(real_lines)
        broken = _syntax_error(cell_lines)
        if broken is not None:
            message, line, col = broken
            cell_errors.append(
                FileError(path, SYNTAX_ERROR, f"syntax error: {message}; the other cells were checked",
                          len(lines) + line, col, whole_file=False)  # its cell is named where it is reported
            )
            cell_lines = [""] * len(cell_lines)
        lines.extend(cell_lines)
        where.extend((number, line) for line in range(1, len(cell_lines) + 1))
    return NotebookSource("\n".join(lines) + "\n", where, None, cell_errors, indices, dedents)


def joined_code(data: bytes, path: str) -> str | None:
    """The code cells joined as the check reads them, or None (no notebook): what the run's
    project index reads of a notebook (its imports, and its calls of other modules)."""
    return read_notebook(data, path).source


def notebook_source(data: bytes, path: str) -> tuple[str | None, list[tuple[int, int]], FileError | None]:
    """(joined source, line -> (code cell number, line in cell), error)."""
    read = read_notebook(data, path)
    return read.source, read.where, read.error


def _python_lines(cell_lines: list[str]) -> list[str]:
    """A cell's lines as Python: dedented when every line is indented alike, IPython blanked."""
    cell_lines = _dedented(cell_lines)
    whole_cell_magic = bool(cell_lines) and cell_lines[0].lstrip().startswith("%%")
    out = []
    continued = False  # the previous IPython line ended with a backslash
    python, inside = (0, ""), False  # what the Python lines so far leave open (_still_open)
    for line in cell_lines:
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
        out.append(line)
    return out


def _dedented(cell_lines: list[str]) -> list[str]:
    """Without the indentation that every non-blank line starts with (one prefix, not a mix)."""
    prefix = _dedent_prefix(cell_lines)
    if not prefix:
        return cell_lines
    return [line[len(prefix):] if line.strip() else "" for line in cell_lines]


def _dedent_prefix(cell_lines: list[str]) -> str:
    """The indentation every non-blank line starts with, or "" when they do not share one."""
    written = [line for line in cell_lines if line.strip()]
    if not written:
        return ""
    first = written[0]
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix or not all(line.startswith(prefix) for line in written):
        return ""
    return prefix


def _syntax_error(cell_lines: list[str]):
    """(message, line, column) where a cell is not Python, or None.  CPython's parser
    first; a cell it rejects that libcst reads (syntax newer than this interpreter)
    is left to the engine, which reads such files too."""
    text = "\n".join(cell_lines) + "\n"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<cell>", "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
        return None
    except SyntaxError as exc:
        found = (exc.msg, max(exc.lineno or 1, 1), max(exc.offset or 1, 1))
        from gradlint.parse.parse_guard import rejected_for_nesting

        if rejected_for_nesting(text, exc):
            return found  # libcst's native parser would overflow its stack: SIGSEGV (issue 34)
    except (RecursionError, MemoryError):  # CPython's parser ran out of stack on the nesting
        return ("too deeply nested to check", 1, 1)
    except (ValueError, OverflowError) as exc:
        return (str(exc) or type(exc).__name__, 1, 1)
    import libcst

    try:
        libcst.parse_module(text)
    except Exception:
        return found
    return None


def check_notebook(path: str, settings: Settings) -> tuple[FileResult, str | None]:
    """The notebook's FileResult, and the joined source (for --report-unused-noqa)."""
    from gradlint.core.digest import hex_digest
    from gradlint.check.engine import read_source

    data, error = read_source(path)
    if error is not None:
        return FileResult(path, errors=[error]), None
    result, source = check_notebook_data(data, path, settings)
    result.source_digest = hex_digest(data)  # what an edit of the notebook must find there
    return result, source


def check_notebook_data(data: bytes, path: str, settings: Settings) -> tuple[FileResult, str | None]:
    """check_notebook on the notebook's bytes.  Findings carry no fix: their edits count lines
    in the joined cells, which no tool could apply to the JSON (`--fix` maps them to cells).
    A notebook that calls a training step of a module of the run (`from agent import Agent`)
    is checked in the run's project, as a .py file is."""
    from gradlint.check.engine import check_source
    from gradlint.run.project_run import project_for

    read = read_notebook(data, path)
    if read.error is not None:
        return FileResult(path, errors=[read.error]), None
    result = check_source(read.source, path, settings, project=project_for(path))
    return locate(result, data, read), read.source


def locate(result: FileResult, data: bytes, read: NotebookSource) -> FileResult:
    """The result of checking the joined cells, each finding and error placed in its cell
    (gradlint/check/notebook_locations.py)."""
    from gradlint.check.elsewhere import is_elsewhere
    from gradlint.check.notebook_locations import Locator

    locator = Locator(data.decode("utf-8", "replace"), read.where, read.indices, read.dedents)
    path = result.path
    # a finding on a call of a module that a loop of the cells runs stands in that module: only
    # its related locations in the notebook (the loop's call) are placed in cells
    result.findings = [locator.related_in(f, path) if is_elsewhere(f, path) else locator.finding(f) for f in result.findings]
    result.suppressed = [locator.finding(f) for f in result.suppressed]
    # An error of the whole file (the joined cells too deeply nested) is the file's one result:
    # the broken cells skipped before it were not "the others checked".
    whole = [e for e in result.errors if e.whole_file]
    result.errors = [locator.error(e) for e in (whole or read.cell_errors + result.errors)]
    return result


def unused_noqa(data: bytes, path: str, suppressed: list, enabled: frozenset) -> list:
    """--report-unused-noqa's GL900 findings for a notebook's cells, placed in their cells."""
    from gradlint.check.suppress import unused_directives

    read = read_notebook(data, path)
    if read.error is not None:
        return []
    found = unused_directives(read.source, path, suppressed, enabled)
    return locate(FileResult(path, findings=found), data, read).findings if found else []
