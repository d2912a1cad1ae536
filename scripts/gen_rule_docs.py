"""Write docs/rules/: one page per rule, from the rule's own metadata and samples.

    python scripts/gen_rule_docs.py           # (re)write the pages
    python scripts/gen_rule_docs.py --check   # exit 1 if a committed page is stale

A rule page is never edited by hand: change the rule module
(gradlint/rules/glNNN_*.py: summary, rationale, wrong/right, fix, limits,
valid/invalid samples and the fixed text they pin) and run this script. tests/test_docs.py fails when a
committed page differs from what this script writes (as ruff checks its
generated rule docs). GL900, the one code that is not a rule, gets a page
from the text `gradlint explain GL900` prints.

This script is a development tool: nothing in the checker imports it, and it
is not part of the wheel.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RULES_DIR = ROOT / "docs" / "rules"
# Document this checkout, not whatever gradlint is installed.
sys.path.insert(0, str(ROOT))

from gradlint.commands.explain import explainable_codes  # noqa: E402
from gradlint.rules.registry import all_rules  # noqa: E402
from gradlint.check.suppress import UNUSED_CODE, UNUSED_NAME, UNUSED_SUMMARY  # noqa: E402

REGENERATE = "python scripts/gen_rule_docs.py"


def _banner(source: str) -> str:
    return (
        f"<!-- Generated from {source} by `{REGENERATE}`: do not edit by hand "
        "(tests/test_docs.py checks that this page is current). -->\n"
    )


def _python(code: str) -> str:
    return f"```python\n{code.strip(chr(10))}\n```\n"


def _fix_kind(fix: str) -> str:
    if not fix:
        return "none (the repair needs a human decision)"
    if fix.startswith("Unsafe"):
        return "unsafe: applied by `--fix --unsafe-fixes`, shown by `--diff --unsafe-fixes`"
    if fix.startswith("Safe") and "Unsafe" not in fix:
        return "safe: applied by `--fix`"
    return "safe or unsafe depending on the code (see [Fix](#fix))"


def source_of(rule) -> str:
    """The file that defines the rule (its module under gradlint/rules/, or wherever a
    registered rule lives), relative to the checkout."""
    path = Path(inspect.getsourcefile(rule.check)).resolve()
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def rule_page(rule) -> str:
    source = source_of(rule)
    bug = rule.default
    parts = [
        _banner(source),
        f"# {rule.code} {rule.name}\n",
        f"{rule.summary}\n",
        "| | |\n|---|---|\n"
        f"| default | {'on' if bug else 'off: enable it with `--extend-select ' + rule.code + '` or `extend-select`'} |\n"
        f"| kind | {'bug (severity `warning`; SARIF level `warning`)' if bug else 'advice (severity `info`; SARIF level `note`)'} |\n"
        f"| fix | {_fix_kind(rule.fix)} |\n"
        f"| source | [{source}](../../{source}) |\n",
        f"## {'Why it is a bug' if bug else 'Why'}\n",
        f"{rule.rationale}\n",
        "## Example\n",
        "Wrong:\n",
        _python(rule.wrong),
        "Right:\n",
        _python(rule.right),
        "## Fix\n",
        f"{rule.fix} See [Fixes](../fixes.md) for how `--fix` applies it.\n"
        if rule.fix
        else "None: the repair needs a human decision. `--fix` leaves these findings alone.\n",
    ]
    if bug:
        parts += [
            "## Where it is reported\n",
            "On the misplaced call itself, in whatever module holds it: that is where the fix goes and where a "
            "`# noqa` belongs. A call inside a helper or a method that a loop runs (a trainer's `train_step` "
            "called from a loop in `train.py`) is reported there, with the loop's call as a related location; "
            "one misplaced call run by several loops is one finding. A finding in another module than the "
            "loop's has no fix. See [Across files](../what-it-understands.md#across-files).\n",
        ]
    if rule.limits:
        parts += ["## What it leaves alone\n", f"{rule.limits}\n"]
    if rule.criterion is not None:
        watched = " ".join(inspect.getdoc(rule.criterion.detect).split())
        parts += [
            "## At run time\n",
            f"What `gradlint verify` watches for to confirm a finding: {watched[0].lower()}{watched[1:]} "
            "See [verify](../verify.md).\n",
        ]
    parts += [
        "## Samples\n",
        "The rule's own samples, each run by gradlint's tests: in each reported sample, the lines "
        f"marked `# expect: {rule.code}` are exactly the ones reported; the others are correct code on which "
        "no rule that is on by default fires.\n",
    ]
    for title, samples in (("Reported", [s.source for s in rule.invalid]), ("Not reported", rule.valid)):
        if samples:
            parts.append(f"### {title}\n")
            parts += [_python(sample) for sample in samples]
    pinned = [sample for sample in rule.invalid if sample.fixed is not None]
    if pinned:
        parts.append("### Fixed\n")
        parts.append("What `--fix --unsafe-fixes` makes of reported samples (the tests check this text):\n")
        for sample in pinned:
            parts += ["Before:\n", _python(sample.source), "After:\n", _python(sample.fixed)]
    parts += [
        "## Silencing it\n",
        f"`# noqa: {rule.code}` on the reported line silences one finding; `ignore = [\"{rule.code}\"]` or "
        f"`per-file-ignores` in `[tool.gradlint]` turns it off. See [Suppressing findings](../suppression.md) "
        "and [Configuration](../configuration.md).\n",
        f"`gradlint explain {rule.code}` prints this page's text in a terminal. [All rules](index.md)\n",
    ]
    return "\n".join(parts)


def _markdown_from_explain(text: str) -> str:
    """explain's plain text: paragraphs, and code indented by four spaces (becomes a fence)."""
    out, code = [], []
    for line in text.splitlines():
        if line.startswith("    "):
            code.append(line[4:])
            continue
        if code:
            out.append(_python("\n".join(code)).rstrip("\n"))
            code = []
        out.append(line)
    if code:
        out.append(_python("\n".join(code)).rstrip("\n"))
    return "\n".join(out).strip("\n") + "\n"


def unused_noqa_page() -> str:
    explanation = explainable_codes()[UNUSED_CODE].explanation()
    body = explanation.split("\n\n", 2)[2]  # after the title line and the summary
    return "\n".join(
        [
            _banner("gradlint/commands/explain.py and gradlint/check/suppress.py"),
            f"# {UNUSED_CODE} {UNUSED_NAME}\n",
            f"{UNUSED_SUMMARY}\n",
            "Not a rule of `gradlint rules`: only `--report-unused-noqa` reports it. "
            "See [Suppressing findings](../suppression.md).\n",
            _markdown_from_explain(body),
            f"`gradlint explain {UNUSED_CODE}` prints this page's text in a terminal. [All rules](index.md)\n",
        ]
    )


def index_page() -> str:
    rows = [
        f"| [{rule.code}]({rule.code}.md) | {rule.name} | {'on' if rule.default else 'off'} | {rule.summary} |"
        for rule in all_rules()
    ]
    rows.append(f"| [{UNUSED_CODE}]({UNUSED_CODE}.md) | {UNUSED_NAME} | with `--report-unused-noqa` | {UNUSED_SUMMARY} |")
    return "\n".join(
        [
            _banner("gradlint/rules/"),
            "# Rules\n",
            "GL0xx rules find bugs and are on by default; GL1xx rules are advice, off by default. "
            "Each page is written from the rule's metadata and the samples its tests run.\n",
            "| code | name | default | what it finds |\n|---|---|---|---|\n" + "\n".join(rows) + "\n",
        ]
    )


def pages() -> dict[str, str]:
    """Path relative to docs/rules/ -> the text this script writes there."""
    written = {"index.md": index_page(), f"{UNUSED_CODE}.md": unused_noqa_page()}
    for rule in all_rules():
        written[f"{rule.code}.md"] = rule_page(rule)
    return written


def stale_pages() -> list[str]:
    """Pages that differ from what this script writes, are missing, or belong to no rule."""
    expected = pages()
    stale = [name for name, text in expected.items() if _read(RULES_DIR / name) != text]
    stale += [path.name for path in sorted(RULES_DIR.glob("*.md")) if path.name not in expected]
    return stale


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="report stale pages and exit 1; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for name in stale:
            print(f"docs/rules/{name} is stale: run `{REGENERATE}`", file=sys.stderr)
        return 1 if stale else 0
    RULES_DIR.mkdir(parents=True, exist_ok=True)
    expected = pages()
    for path in RULES_DIR.glob("*.md"):
        if path.name not in expected:
            path.unlink()
    for name, text in expected.items():
        if _read(RULES_DIR / name) != text:
            (RULES_DIR / name).write_text(text, encoding="utf-8")
            print(f"wrote docs/rules/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
