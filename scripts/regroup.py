"""Put gradlint's modules in their stage packages and rewrite every reference to the old places.

    python scripts/regroup.py           # move what is still at an old place, rewrite references
    python scripts/regroup.py --check   # change nothing; exit 1 if anything is left to do

The layout is the pipeline (docs/development.md, "The pipeline"): each stage package may
import only the stages below it (tests/test_layout.py).  This script is the record of the
move from the flat layout and can be run again at any time: after a merge brings code written
against the old layout (a new `from gradlint import engine`, a change to a file this branch
moved), it moves what is left and rewrites what is old; what is already new it leaves alone.
Nothing imports it.

What it rewrites, in every file git knows (tracked or untracked but not ignored) except
CHANGELOG.md (history), fixtures/ (user code) and this script:
- `from gradlint import engine, DOCS_URL` and `from gradlint.project import run as r`:
  each moved module goes to its new package (the local name is kept with `as`);
- dotted names anywhere, code or string: `gradlint.engine`, `"gradlint.engine.check_file"`,
  `gradlint.cli:main` (pyproject's entry point), `sys.modules.get("gradlint.project.foreign")`;
- paths: `gradlint/engine.py`, `model/events.py`, `"gradlint", "screen.py"` in os.path.join.
It stops with an error, before writing anything, if a rewritten Python file no longer
compiles, and reports a module left at the top of the package that the map does not place.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gradlint"

# The stages, bottom first: a stage may import only the stages before it in this list
# (tests/test_layout.py reads this order from here).  The text is each new package's docstring.
STAGES = {
    "core": "What every stage speaks: findings and spans, source lines, digests, the tables of API\n"
    "names (and, living beside the rules it finds, rules/registry.py: the rule catalogue).  Imports\n"
    "nothing of gradlint but the package root.",
    "options": "What the user chose: [tool.gradlint] from pyproject.toml and the flags, made into the\n"
    "Settings of one check (settings.py, plain data every later stage reads).",
    "parse": "The parses of one file and the guards before them: the one CPython parse (python_ast),\n"
    "newer syntax blanked for an older Python, huge data literals emptied, what libcst's parser\n"
    "would reject (parse_guard), the syntax error every file gets (syntax), libcst's parse.",
    "incremental": None,  # existing package
    "project": None,
    "model": None,
    "fix": None,
    "rules": None,
    "run": "Many files: discovery, the process pool, the result cache, the run's index of the\n"
    "project (installed in the workers), files written so that no reader sees half of one.",
    "check": "One file through the pipeline: the prefilter, the screen, the engine that runs every\n"
    "stage (and the run over many files), suppressions; notebooks; the quick pre-commit path.",
    "report": None,
    "lsp": None,
    "verify": None,
    "guard": None,  # the rules watched in the user's own run, on verify's replay
    "edit": "Changing the user's files: --fix (fix_files, fix_notebook), --add-noqa, and the one\n"
    "writer they share (rewrite).",
    "commands": "The command line: argument parsing and exit codes (cli), `gradlint explain`.",
}

# rules/registry.py stays beside the rule modules it finds by their file names, though its job
# (the rule catalogue every stage asks for codes and names) is core's: tests/test_layout.py
# places it in core, and it imports nothing of gradlint but the root.
#
# old module -> new module.  A module added on main at the top of the package must get a row
# here (the script says so); a module named in a row that does not exist yet is skipped.
MOVES = {
    # core
    "gradlint.findings": "gradlint.core.findings",
    "gradlint.source_lines": "gradlint.core.source_lines",
    "gradlint.digest": "gradlint.core.digest",
    "gradlint.model.events": "gradlint.core.events",
    "gradlint.api_names": "gradlint.core.api_names",  # issue 31's one table of API names
    # options
    "gradlint.settings": "gradlint.options.settings",
    "gradlint.config": "gradlint.options.config",
    "gradlint.config_position": "gradlint.options.config_position",
    # parse
    "gradlint.python_ast": "gradlint.parse.python_ast",
    "gradlint.newer_syntax": "gradlint.parse.newer_syntax",
    "gradlint.ast_nodes": "gradlint.parse.ast_nodes",
    "gradlint.cst_parse": "gradlint.parse.cst_parse",
    "gradlint.parse_guard": "gradlint.parse.parse_guard",
    "gradlint.syntax": "gradlint.parse.syntax",
    "gradlint.data_literals": "gradlint.parse.data_literals",
    "gradlint.file_context": "gradlint.parse.file_context",  # issue 31's per-file context
    # model: a call into another module inlined into the loop model
    "gradlint.project.foreign": "gradlint.model.foreign",
    # run
    "gradlint.discover": "gradlint.run.discover",
    "gradlint.pool": "gradlint.run.pool",
    "gradlint.cache": "gradlint.run.cache",
    "gradlint.atomic": "gradlint.run.atomic",
    "gradlint.project.run": "gradlint.run.project_run",
    # check
    "gradlint.prefilter": "gradlint.check.prefilter",
    "gradlint.screen": "gradlint.check.screen",
    "gradlint.engine": "gradlint.check.engine",
    "gradlint.suppress": "gradlint.check.suppress",
    "gradlint.quick": "gradlint.check.quick",
    "gradlint.notebook": "gradlint.check.notebook",
    "gradlint.notebook_locations": "gradlint.check.notebook_locations",
    "gradlint.notebook_edit": "gradlint.check.notebook_edit",
    # lsp: the language server's background index
    "gradlint.project.workspace": "gradlint.lsp.workspace",
    # edit
    "gradlint.rewrite": "gradlint.edit.rewrite",
    "gradlint.add_noqa": "gradlint.edit.add_noqa",
    "gradlint.fix.files": "gradlint.edit.fix_files",
    "gradlint.fix.notebook": "gradlint.edit.fix_notebook",
    # commands
    "gradlint.cli": "gradlint.commands.cli",
    "gradlint.explain": "gradlint.commands.explain",
}

TOP_LEVEL_KEPT = {"__init__.py", "__main__.py"}  # the public API and `python -m gradlint`
SKIPPED = ("CHANGELOG.md", "fixtures/", "scripts/regroup.py")
TEXT_SUFFIXES = (".py", ".toml", ".md", ".cfg", ".ini", ".yaml", ".yml")
TEXT_NAMES = (".ci/run",)


def _path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _check_map() -> None:
    stages = set(STAGES)
    for old, new in MOVES.items():
        parts = new.split(".")
        assert parts[0] == "gradlint" and parts[1] in stages, new
        # An old name that is a prefix of a new one would be rewritten again on every run.
        assert not (new + ".").startswith(old + "."), (old, new)
        assert not any((new + ".").startswith(other + ".") for other in MOVES), new
    assert not set(STAGES) & {m.split(".")[1] for m in MOVES if m.count(".") == 1}, "stage named as an old module"


# --- rewriting text ------------------------------------------------------------------------

_OLD_DOTTED = sorted((old[len("gradlint.") :] for old in MOVES), key=len, reverse=True)
DOTTED = re.compile(r"(?<![\w.])gradlint\.(" + "|".join(re.escape(o) for o in _OLD_DOTTED) + r")(?![\w])")
SLASHED = re.compile(
    r"(?<![\w/.])gradlint/(" + "|".join(re.escape(o.replace(".", "/")) for o in _OLD_DOTTED) + r")\.py(?![\w])"
)
# A path inside the package written without `gradlint/` (`model/events.py` in a comment or a
# doc): only for modules that leave a subpackage; a bare `engine.py` still names its file.
_NESTED = [o for o in _OLD_DOTTED if "." in o]
NESTED = re.compile(r"(?<![\w/.])(" + "|".join(re.escape(o.replace(".", "/")) for o in _NESTED) + r")\.py(?![\w])")
JOINED = re.compile(r"""(["'])gradlint\1(,\s*)(["'])(\w+)\.py\3""")
# `from gradlint[.pkg] import a, b as c` (one line, or in parentheses), at the start of a line
# or of code in a string (after a quote, a `\n` escape or `; `).
FROM = re.compile(
    r"""(?P<lead>^[ \t]*|(?<=["'])|(?<=\\n)|(?<=;\ ))from\ (?P<module>gradlint(?:\.\w+)*)\ import\ """
    r"""(?:\((?P<parens>[^()#]*)\)|(?P<names>\w+(?:\ +as\ +\w+)?(?:[ \t]*,[ \t]*\w+(?:\ +as\ +\w+)?)*))""",
    re.MULTILINE,
)


def _rewrite_from(match: re.Match) -> str:
    module = match["module"]
    raw = match["parens"] if match["parens"] is not None else match["names"]
    names = [n.strip() for n in raw.replace("\n", " ").split(",") if n.strip()]
    if not any(f"{module}.{n.split()[0]}" in MOVES for n in names):
        return match[0]
    groups: dict[str, list[str]] = {}
    for entry in names:
        name, _, alias = (part.strip() for part in entry.partition(" as "))
        new = MOVES.get(f"{module}.{name}")
        if new is None:
            groups.setdefault(module, []).append(entry)
            continue
        home, _, leaf = new.rpartition(".")
        local = alias or name
        groups.setdefault(home, []).append(leaf if local == leaf else f"{leaf} as {local}")
    lead, start = match["lead"], match.start()
    statements = [f"from {home} import {', '.join(entries)}" for home, entries in groups.items()]
    on_a_line = start == 0 or match.string[start - 1] == "\n"
    # A statement of its own gets one line per package; code in a string, `; ` between them.
    return lead + (("\n" + lead) if on_a_line else "; ").join(statements)


def _joined(match: re.Match) -> str:
    q, sep, q2, name = match[1], match[2], match[3], match[4]
    new = MOVES.get(f"gradlint.{name}")
    if new is None:
        return match[0]
    parts = new.split(".")
    return sep.join(f"{q}{p}{q}" for p in parts[:-1]) + f"{sep}{q2}{parts[-1]}.py{q2}"


def rewrite(text: str) -> str:
    text = FROM.sub(_rewrite_from, text)
    text = DOTTED.sub(lambda m: MOVES["gradlint." + m[1]], text)
    text = SLASHED.sub(lambda m: _path(MOVES["gradlint." + m[1].replace("/", ".")]), text)
    text = NESTED.sub(lambda m: _path(MOVES["gradlint." + m[1].replace("/", ".")])[len("gradlint/") :], text)
    text = JOINED.sub(_joined, text)
    return text


# --- the repository ------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _files() -> list[Path]:
    listed = _git("ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
    chosen = []
    for name in sorted(set(listed)):
        if not name or name.startswith(SKIPPED) or name in SKIPPED:
            continue
        if name.endswith(TEXT_SUFFIXES) or name in TEXT_NAMES:
            path = ROOT / name
            if path.is_file():
                chosen.append(path)
    return chosen


def _stage_init(stage: str) -> str:
    return f'"""{STAGES[stage]}\n\nKept empty: importing a stage imports nothing else (docs/development.md, "The pipeline").\n"""\n'


def plan_moves() -> tuple[list[tuple[Path, Path]], list[str]]:
    moves, problems = [], []
    for old, new in MOVES.items():
        source, target = ROOT / _path(old), ROOT / _path(new)
        if not source.exists():
            continue
        if target.exists():
            problems.append(f"both {source.relative_to(ROOT)} and {target.relative_to(ROOT)} exist: keep one")
            continue
        moves.append((source, target))
    return moves, problems


def unplaced() -> list[str]:
    """Modules at the top of the package, or packages, that belong to no stage."""
    left = []
    for entry in sorted(PACKAGE.iterdir()):
        if entry.name == "__pycache__" or entry.name.startswith("."):
            continue
        if entry.is_file() and entry.suffix == ".py" and entry.name not in TOP_LEVEL_KEPT:
            if f"gradlint.{entry.stem}" not in MOVES:
                left.append(f"gradlint/{entry.name}: add a row to MOVES (which stage?)")
        elif entry.is_dir() and entry.name not in STAGES and (entry / "__init__.py").exists():
            left.append(f"gradlint/{entry.name}/: add it to STAGES (where in the order?)")
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if anything is left to do")
    args = parser.parse_args(argv)
    _check_map()

    moves, problems = plan_moves()
    # New stage packages first, so that a moved module's package exists.
    inits = [PACKAGE / stage / "__init__.py" for stage, text in STAGES.items() if text and not (PACKAGE / stage / "__init__.py").exists()]

    # Rewrite in memory first: nothing is written if any Python file would stop compiling.
    rewritten: dict[Path, str] = {}
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text)
        if new != text:
            if path.suffix == ".py":
                try:
                    compile(new, str(path), "exec")
                except SyntaxError as error:
                    problems.append(f"{path.relative_to(ROOT)}: the rewrite does not compile: {error}")
                    continue
            rewritten[path] = new

    for problem in problems:
        print(f"regroup: {problem}", file=sys.stderr)
    if problems:
        return 2
    if args.check:
        for path in inits:
            print(f"would create {path.relative_to(ROOT)}")
        for source, target in moves:
            print(f"would move {source.relative_to(ROOT)} -> {target.relative_to(ROOT)}")
        for path in rewritten:
            print(f"would rewrite {path.relative_to(ROOT)}")
        left = unplaced()
        for line in left:
            print(f"regroup: {line}", file=sys.stderr)
        return 1 if (inits or moves or rewritten or left) else 0

    for path in inits:
        path.parent.mkdir(exist_ok=True)
        path.write_text(_stage_init(path.parent.name), encoding="utf-8")
        _git("add", str(path.relative_to(ROOT)))
        print(f"created {path.relative_to(ROOT)}")
    # Text first, then the moves: a file moved below is rewritten under its old name.
    for path, text in rewritten.items():
        path.write_text(text, encoding="utf-8")
        print(f"rewrote {path.relative_to(ROOT)}")
    for source, target in moves:
        target.parent.mkdir(exist_ok=True)
        _git("mv", str(source.relative_to(ROOT)), str(target.relative_to(ROOT)))
        print(f"moved {source.relative_to(ROOT)} -> {target.relative_to(ROOT)}")
    left = unplaced()
    for line in left:
        print(f"regroup: {line}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
