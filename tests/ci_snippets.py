"""Small buggy and clean training loops for the CLI, config, suppression and format tests."""

from __future__ import annotations

import os
import textwrap

from gradlint.commands.cli import main

HEADER = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""

# GL002 on line 8 (the zero_grad between backward and step), related lines 7 and 9.
GL002_LOOP = HEADER + """\
for x in range(10):
    loss = model(x).sum()
    loss.backward()
    opt.zero_grad(){comment}
    opt.step()
"""

# GL004 on line 10 (the clip after the step on line 9).
GL004_LOOP = HEADER + """\
for x in range(10):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0){comment}
"""

# GL001 on line 7 (backward into never-cleared gradients), related step line 8.
GL001_LOOP = HEADER + """\
for x in range(10):
    loss = model(x).sum()
    loss.backward(){comment}
    opt.step()
"""

CLEAN_LOOP = HEADER + """\
for x in range(10):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
"""


def snippet(template: str, comment: str = "") -> str:
    return template.format(comment=comment)


def write(root, relpath: str, text: str) -> str:
    path = os.path.join(str(root), relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(textwrap.dedent(text) if text.startswith("\n") else text)
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """gradlint in-process: (exit code, stdout, stderr)."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def codes_by_file(out: str) -> set[tuple[str, int, str]]:
    """(path, line, code) from the text format."""
    found = set()
    for line in out.splitlines():
        parts = line.split(":", 3)
        if len(parts) == 4 and parts[1].isdigit():
            code = parts[3].strip().split(" ", 1)[0]
            found.add((parts[0].replace(os.sep, "/"), int(parts[1]), code))
    return found


# --- the documentation's command lines, checked against the real parsers ---------------------

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README_PATH = os.path.join(ROOT_DIR, "README.md")


def doc_pages() -> list[str]:
    """README.md, then every Markdown page under docs/ (the user documentation), sorted."""
    import glob

    pages = glob.glob(os.path.join(ROOT_DIR, "docs", "**", "*.md"), recursive=True)
    return [README_PATH] + sorted(pages)


def readme_blocks(language: str) -> list[str]:
    """The fenced code blocks of one language in the README and the docs pages, in order."""
    import re

    blocks = []
    for path in doc_pages():
        with open(path, encoding="utf-8") as handle:
            blocks += re.findall(r"^```" + re.escape(language) + r"\n(.*?)^```", handle.read(), re.S | re.M)
    return blocks


def gradlint_argv(command_line: str) -> list[str] | None:
    """The arguments after `gradlint` in a shell line (comments, pipes and `$(...)` dropped), or None."""
    import re
    import shlex

    line = re.sub(r"\$\([^)]*\)", "FILES.py", command_line)
    for part in re.split(r"\|\||&&|\||;", line):
        words = shlex.split(part, comments=True)
        if words and words[0] == "gradlint":
            return words[1:]
    return None


def validate_gradlint_argv(argv: list[str]) -> None:
    """Raise if `gradlint argv` would be a usage error (unknown flag, format, rule code...).

    The same parsers and checks as the CLI, without running anything."""
    from gradlint.commands.cli import SUBCOMMANDS, UsageError, _overrides, check_parser

    if argv in (["--version"], ["-V"], ["--help"], ["-h"]):
        return
    command = argv[0] if argv and argv[0] in SUBCOMMANDS else "check"
    args = argv[1:] if argv and argv[0] == command else argv
    if command == "check":
        from gradlint.report import FORMATS

        parsed = check_parser().parse_args(args)
        if parsed.output_format not in FORMATS:
            raise UsageError(f"unknown --output-format {parsed.output_format!r}")
        _overrides(parsed)  # rule codes
    elif command == "explain":
        from gradlint.commands.explain import lookup

        if len(args) != 1 or lookup(args[0]) is None:
            raise UsageError(f"explain {args}")
    elif command == "rules":
        if args:
            raise UsageError("rules takes no arguments")
    elif command == "verify":
        from gradlint.verify.command import parser

        script_args = args.index("--") if "--" in args else len(args)
        parser().parse_args(args[:script_args])
    elif command == "lsp":
        if args not in ([], ["--stdio"]) and not (len(args) == 2 and args[0] == "--tcp" and ":" in args[1]):
            raise UsageError(f"lsp {args}")
