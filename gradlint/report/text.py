"""ruff-style text: `path:line:col: CODE message`, then a one-line summary.

As ruff does, a finding that `--fix` repairs is marked `[*]` before its
message, and the summary is followed by how many `--fix` would repair and
how many more only `--unsafe-fixes` would (ruff 0.17's words).  Unlike
ruff's, gradlint's --unsafe-fixes is no setting that lasts: without --fix or
--diff it changes nothing (cli.py warns), so only safe fixes are marked.  A mark is
a promise: before rendering, cli.py runs the fixing session on each file
without writing (edit/fix_files.py `offered`) and keeps a finding's fix only when
the session repairs it, SAFE when `--fix` does, UNSAFE when only
`--fix --unsafe-fixes` does; so the count is what `--fix` then reports.
"""

from __future__ import annotations

from gradlint.core.display import shown
from gradlint.core.findings import SAFE, SYNTAX_ERROR, UNSAFE
from gradlint.check.quick import clean_summary  # the early answer of a clean run prints the same line


def location(item) -> str:
    """`path:line:col` of a finding or an error; in a notebook `path:cell 3:4:5` (the line and
    column in that cell), as ruff prints it."""
    cell = item.cell
    if cell is not None:
        return f"{shown(item.path)}:cell {cell.cell}:{cell.span.line}:{cell.span.col}"
    return f"{shown(item.path)}:{item.line}:{item.col}"


def error_line(error) -> str:
    """A syntax error has a place in the file; the other kinds (a missing or
    unreadable path, a binary file, an internal error) concern the whole
    path: `error: PATH: no such file or directory`."""
    if error.kind == SYNTAX_ERROR:
        return f"{location(error)}: error: {error.message}"
    return f"error: {shown(error.path)}: {error.message}"


def render(run, show_suppressed: bool = False, quiet: bool = False, show_unfollowed: bool = False) -> str:
    """The findings and errors, then (unless `quiet`, ruff's -q) the summary: `Found ...` or,
    when there is nothing to report, ruff's `All checks passed!` with the files checked, and a
    line counting the gradient calls the analysis does not follow, if any.  `show_unfollowed`:
    each of those calls too, `path:line:col: <reason>`, after the findings."""
    lines = [error_line(error) for error in run.errors()]
    findings = [(f, "") for f in run.findings()]
    suppressed = run.suppressed() if show_suppressed else []
    # One list in file, line and column order: a suppressed finding sits where it is in the file.
    rows = sorted(findings + [(f, " (suppressed)") for f in suppressed], key=lambda row: row[0].sort_key())
    for finding, mark in rows:
        fixable = "[*] " if not mark and fix_kind(finding) == SAFE else ""
        lines.append(f"{location(finding)}: {finding.code} {fixable}{finding.message}{mark}")
    blind = run.not_followed()
    if show_unfollowed:
        lines.extend(f"{v.path}:{v.call.line}:{v.call.col}: {v.reason}" for v in blind)
    if quiet:
        return "\n".join(lines) + ("\n" if lines else "")
    summary = run.summary() or clean_summary(run.files_checked)
    if suppressed:
        note = f"{len(suppressed)} finding{'s' if len(suppressed) != 1 else ''} suppressed by noqa comments."
        summary = f"{summary} {note}".strip()
    if summary:
        lines.append(summary)
    fixes = fixable_summary(run.findings())
    if fixes:
        lines.append(fixes)
    if blind:
        lines.append(unfollowed_summary(len(blind), listed=show_unfollowed))
    return "\n".join(lines) + ("\n" if lines else "")


def unfollowed_summary(count: int, listed: bool = False) -> str:
    """`3 gradient calls were not followed (--show-unfollowed lists them)`."""
    calls = f"{count} gradient call{'s' if count != 1 else ''} {'were' if count != 1 else 'was'} not followed"
    return f"{calls}." if listed else f"{calls} (--show-unfollowed lists them)"


def fix_kind(finding) -> str | None:
    """SAFE when --fix repairs the finding, UNSAFE when only --unsafe-fixes does, else None
    (what cli.py marked: see the module docstring)."""
    if finding.fix is None:
        return None
    return SAFE if finding.fix.safe else UNSAFE


def fixable_summary(findings) -> str:
    """ruff's line (0.17): `[*] 2 fixable with `--fix` (1 unsafe fix available with
    `--fix --unsafe-fixes`).`, or only the part in brackets when no safe fix is on offer."""
    kinds = [fix_kind(f) for f in findings]
    safe, unsafe = kinds.count(SAFE), kinds.count(UNSAFE)
    hidden = f"{unsafe} unsafe fix{'es' if unsafe != 1 else ''} available with `--fix --unsafe-fixes`"
    if safe:
        return f"[*] {safe} fixable with `--fix`" + (f" ({hidden})." if unsafe else ".")
    return f"{hidden}." if unsafe else ""
