"""`gradlint explain CODE`: the text for every code gradlint can print.

The rules come from the registry; GL900 (an unused suppression) and the
kinds of files that could not be checked or written (`syntax-error`, `read-error`,
`internal-error`, `timeout`, `not-python`, `write-error`: the `code` of those diagnostics in the json, sarif,
github and lsp formats) are not rules, and are explained here so that
every code a user meets in output has an answer.
"""

from __future__ import annotations

from gradlint.core.findings import INTERNAL_ERROR, NOT_PYTHON, READ_ERROR, SYNTAX_ERROR, TIMEOUT, WRITE_ERROR
from gradlint.check.suppress import UNUSED_CODE, UNUSED_NAME, UNUSED_SUMMARY

_NOT_RULES = {
    UNUSED_CODE: f"""\
{UNUSED_CODE} {UNUSED_NAME} (reported only with --report-unused-noqa)

{UNUSED_SUMMARY}

A `# noqa: GLxxx` or `# gradlint: ignore[GLxxx]` comment names a gradlint
code that no finding on its line needs, or a code gradlint does not know.
A suppression that silences nothing hides the next real finding on that
line: remove the code from the comment (or the whole comment), or correct
it. Codes of rules that are not enabled for the file, and a bare `# noqa`,
are never reported (they may serve another run or another linter).
GL900 findings count as findings (exit 1).

Example (the line has no GL002 finding):

    opt.step()  # noqa: GL002
""",
    SYNTAX_ERROR: f"""\
{SYNTAX_ERROR} (a file that could not be checked)

Python's parser stopped at the line and column shown, with its message.
Nothing in the file was checked; the other files were. The run exits 1.
Fix the syntax (or exclude the file) and run again.
""",
    READ_ERROR: f"""\
{READ_ERROR} (a file that could not be checked)

The file could not be read as Python source: it does not exist, is not
readable, is binary (contains NUL bytes), is not valid UTF-8 nor in its
declared encoding, is a broken symbolic link, or is too large. Nothing in
it was checked; the other files were. The run exits 1.
""",
    INTERNAL_ERROR: f"""\
{INTERNAL_ERROR} (gradlint's own failure on a file)

gradlint failed while checking this file: a bug in gradlint, not in your
code. The other files were checked; the run exits 2. Please report it with
the file (or a small piece of it that still fails) and `gradlint --version`.
""",
    TIMEOUT: f"""\
{TIMEOUT} (a file whose analysis took too long)

`PATH: analysis stopped after 30 s`: checking this one file took longer
than the per-file time limit, so gradlint stopped it and went on with the
other files. No file should take that long: it is gradlint's failure, and
the run exits 2 as for an internal error. Please report it with the file.
Meanwhile, a larger limit (`--file-timeout SECONDS`, or `file-timeout` in
[tool.gradlint]) lets the file finish, and `exclude` skips it.

`PATH: analysis stopped: out of memory`: the analysis of one file may use
at most 4 GB more than the process held when it started (where the system
allows such a limit); past it the file is stopped the same way.
""",
    NOT_PYTHON: f"""\
{NOT_PYTHON} (a file named on the command line that is not Python)

gradlint checks .py and .pyi files, Jupyter notebooks (.ipynb) and scripts
whose first line is a `#!` naming python. A file named on the command line
that is none of these (`gradlint data.csv`) is not checked; the run exits
2, as for a usage error. Files found by walking a directory are chosen by
their extension and never give this error.
""",
    WRITE_ERROR: f"""\
{WRITE_ERROR} (a file that was checked but could not be written)

`--fix` or `--add-noqa` could not write its edit into this file, which was
left exactly as it was: the user may not write it (`Permission denied`: a
read-only file, a read-only file system), or it changed on disk after it
was checked (an editor saved it meanwhile: run again). Its findings are
still reported and it counts as checked; the other files were edited. The
run exits 1.
""",
}


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


class _Text:
    def __init__(self, text: str):
        self._text = text

    def explanation(self) -> str:
        return self._text


class _RuleText:
    def __init__(self, rule):
        self.rule = rule

    def explanation(self) -> str:
        rule = self.rule
        default = "on by default" if rule.default else "off by default (enable with --select or extend-select)"
        return (
            f"{rule.code} {rule.name} ({default})\n\n{rule.summary}\n\n{rule.rationale}\n\n"
            f"Wrong:\n\n{_indent(rule.wrong)}\n\nRight:\n\n{_indent(rule.right)}\n\n"
            f"Fix (--fix; unsafe ones with --unsafe-fixes):\n\n{rule.fix or 'None: the repair needs a human decision.'}\n"
            + (f"\nWhat it leaves alone:\n\n{rule.limits}\n" if rule.limits else "")
            + f"\nMore: {rule.docs_url}\n"
        )


def explainable_codes() -> dict:
    """Upper-cased code -> an object with .explanation()."""
    from gradlint.rules.registry import all_rules

    codes = {rule.code: _RuleText(rule) for rule in all_rules()}
    codes.update({code.upper(): _Text(text) for code, text in _NOT_RULES.items()})
    return codes


def lookup(word: str):
    """The explanation of a code (`GL002`, `syntax-error`) or a rule's name
    (`missing-zero-grad`), any case; None when there is none."""
    from gradlint.rules.registry import all_rules

    key = word.strip().upper()
    codes = explainable_codes()
    if key in codes:
        return codes[key]
    by_name = {rule.name.upper(): rule.code for rule in all_rules()}
    return codes[by_name[key]] if key in by_name else None


def near(word: str) -> list[str]:
    """Codes and rule names close to a word that is neither (for the error message)."""
    import difflib

    from gradlint.rules.registry import all_rules

    names = {rule.name: rule.code for rule in all_rules()}
    candidates = [*names, *(code.lower() for code in _NOT_RULES)]
    found = difflib.get_close_matches(word.strip().lower(), candidates, n=3, cutoff=0.75)
    return [f"{name} ({names[name]})" if name in names else name for name in found]
