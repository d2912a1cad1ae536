"""`gradlint --add-noqa`: mark every finding of today with `# noqa: GLxxx`.

A team adopting gradlint on an existing codebase runs it once: the old
findings are silenced where they are, and CI fails only on new ones.
`--report-unused-noqa` later shows the comments whose bug was fixed.

A finding is silenced by a directive on its own line (suppress.py), which
for a call spread over several lines is the call's first line, so that is
where the comment goes.  An existing `# noqa: E501` or
`# gradlint: ignore[...]` list gets the code added (the same edit as the
editor's "Suppress" quick fix); other comments stay as they are.  In a
notebook the comment goes on the finding's line of its cell, and nothing
else in the JSON changes.  A line that cannot take a comment (it ends in a backslash continuation or inside
a multi-line string) is left alone and its finding stays reported.
Running it twice changes nothing: the second run has no finding to mark.
The file is written as --fix writes it (gradlint/edit/rewrite.py): only when it
still holds the bytes that were checked, through symbolic links, keeping its
owner, mode, attributes and links; a file that cannot be written is one
error for that file, and the other files are still marked.
"""

from __future__ import annotations

import tokenize
from dataclasses import replace

from gradlint.core import source_lines
from gradlint.core.findings import FileResult, Finding


def lines_that_cannot_take_a_comment(source: str) -> set[int]:
    """1-based lines whose end lies inside a string token (a multi-line string)."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(source_lines.reader(source)):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass  # the check after the edit refuses a file the edit broke
    return inside


def with_noqa(source: str, findings: list[Finding]) -> tuple[str, list[Finding]]:
    """The source with a directive for each finding, and the findings that got one."""
    from gradlint.lsp.actions import suppression_edit  # pure text edits, no pygls

    lines = source_lines.lines(source, keepends=True)
    blocked = lines_that_cannot_take_a_comment(source)
    marked = []
    done: set[tuple[int, str]] = set()
    for finding in sorted(findings, key=Finding.sort_key):
        number = finding.span.line
        if (number, finding.code) in done:  # two findings of one code on one line: one directive
            marked.append(finding)
            continue
        if number in blocked or not 1 <= number <= len(lines):
            continue
        line = lines[number - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        edit = suppression_edit(body, number - 1, finding.code)
        if edit is None:
            continue  # a backslash continuation: a comment would break it
        start, end = edit["range"]["start"]["character"], edit["range"]["end"]["character"]
        lines[number - 1] = body[:start] + edit["newText"] + body[end:] + ending
        done.add((number, finding.code))
        marked.append(finding)
    return "".join(lines), marked


def add_noqa_to_file(result: FileResult, settings, staging=None) -> tuple[FileResult, int]:
    """Write the directives into the file; the result re-checked and how many findings were marked.

    Only plain UTF-8 files are edited (a file in another declared encoding is
    left as it is), and the file is re-checked before it is written: it must
    still parse and the marked findings must be gone.
    """
    from gradlint.check.engine import check_source
    from gradlint.edit.rewrite import read_analysed, write_edit

    from gradlint.check.elsewhere import is_elsewhere

    # a finding on a call in another file (which the run does not check) is that file's to mark
    elsewhere = [f for f in result.findings if is_elsewhere(f, result.path)]
    if elsewhere:
        kept = [f for f in result.findings if f not in elsewhere]
        marked, count = add_noqa_to_file(replace(result, findings=kept), settings, staging)
        own = [f for f in marked.findings if not is_elsewhere(f, result.path)]
        return replace(marked, findings=sorted(own + elsewhere, key=Finding.sort_key)), count
    if not result.findings or result.errors:
        return result, 0
    data, refused = read_analysed(result)  # the directives go on the lines that were checked
    if refused is not None:
        return refused, 0
    if result.path.lower().endswith(".ipynb"):
        return _add_noqa_to_notebook(result, settings, data, staging)
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return result, 0
    bom = source.startswith("\ufeff")
    edited, marked = with_noqa(source[1:] if bom else source, result.findings)
    if not marked:
        return result, 0
    edited = "\ufeff" + edited if bom else edited
    from gradlint.run.project_run import project_for

    # decoded as a run would, in the run's project (a finding about another module's function stays)
    from gradlint.run.pool import ChildDied, apart, died_while

    try:  # a big file is re-checked in a child process: libcst's abort there is this file's error
        from functools import partial

        check = partial(check_source, project=project_for(result.path))
        after = apart(len(edited), check, edited.encode("utf-8"), result.path, settings)
    except ChildDied:
        return died_while(result, "marking"), 0  # nothing written
    if after.errors:
        return result, 0
    left = {(f.span.line, f.code) for f in after.findings}
    if any((f.span.line, f.code) in left for f in marked):
        return result, 0  # a directive that does not silence: write nothing rather than a half-truth
    failed = write_edit(result, edited.encode("utf-8"), data, "the noqa directives", staging)
    if failed is not None:
        return failed, 0
    return after, len(marked)


def _add_noqa_to_notebook(result: FileResult, settings, data: bytes, staging=None) -> tuple[FileResult, int]:
    """The directives in a notebook's code cells: each goes on its finding's line of the cell;
    the JSON keeps every other byte (gradlint/check/notebook_edit.py).  A finding on a line that is
    not the cell's own text (a blanked IPython line) stays reported."""
    import json

    from gradlint.check.notebook import check_notebook_data, notebook_source
    from gradlint.check.notebook_edit import code_cells, replace_cell_sources, source_spans

    joined, where, error = notebook_source(data, result.path)
    text = data.decode("utf-8")  # notebook_source decoded it already
    spans = source_spans(text)
    if error is not None or joined is None or spans is None:
        return result, 0
    cells = code_cells(json.loads(text))
    old_lines = joined.split("\n")
    edited, marked = with_noqa(joined, result.findings)
    new_lines = edited.split("\n")
    cell_lines = {number: source_lines.lines(source, keepends=True) for number, (_, source) in enumerate(cells, start=1)}
    kept, changed = [], set()
    for finding in marked:
        number, line = where[finding.span.line - 1]
        old, new = old_lines[finding.span.line - 1], new_lines[finding.span.line - 1]
        real = cell_lines[number][line - 1]
        body = real.rstrip("\r\n")
        if body != old:
            continue  # a blanked IPython line: the comment would land in the joined text only
        if new != old:
            cell_lines[number][line - 1] = new + real[len(body):]
            changed.add(number)
        kept.append(finding)
    if not kept:
        return result, 0
    after = replace_cell_sources(text, spans, {cells[n - 1][0]: "".join(cell_lines[n]) for n in changed})
    from gradlint.run.pool import ChildDied, apart, died_while

    try:
        fresh, _ = apart(len(after), check_notebook_data, after.encode("utf-8"), result.path, settings)
    except ChildDied:
        return died_while(result, "marking"), 0
    if fresh.errors:
        return result, 0
    left = {(f.span.line, f.code) for f in fresh.findings}
    if any((f.span.line, f.code) in left for f in kept):
        return result, 0  # as for a .py file: no half-truth
    from gradlint.edit.rewrite import write_edit

    failed = write_edit(result, after.encode("utf-8"), data, "the noqa directives", staging)
    if failed is not None:
        return failed, 0
    return fresh, len(kept)
