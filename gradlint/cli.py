"""Command line: argument parsing and exit codes only; no analysis here.

    gradlint [check] PATH...      check files and directories (`-` reads stdin)
    gradlint rules                list every rule
    gradlint explain CODE         a rule's rationale with a wrong and a right example
    gradlint verify SCRIPT.py     run a script under probes (needs the `verify` extra)
    gradlint lsp                  the language server (needs the `lsp` extra)

Exit codes: 0 no findings, 1 findings (or a file that cannot be read or
parsed), 2 usage error or internal failure.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rules", "explain", "verify", "lsp")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse exits 2 already; keep the message short
        raise UsageError(message)


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def check_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gradlint", description="Lint PyTorch training loops.")
    p.add_argument("paths", nargs="*", default=["."], help="files or directories; - reads standard input")
    p.add_argument("--select", type=_codes, action="extend", help="rule codes or prefixes to enable (replaces defaults)")
    p.add_argument("--extend-select", type=_codes, action="extend", default=[], help="codes to enable on top")
    p.add_argument("--ignore", type=_codes, action="extend", default=[], help="codes or prefixes to disable")
    p.add_argument("--output-format", default="text", help="output format (default: text)")
    p.add_argument("--stdin-filename", help="name to report for standard input")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: core count)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    p.add_argument("--cache-dir", help="where the result cache lives (default: .gradlint_cache)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] in ("-h", "--help"):
            print(__doc__.strip())
            return EXIT_CLEAN
        if args and args[0] in ("-V", "--version"):
            from gradlint import __version__

            print(f"gradlint {__version__}")
            return EXIT_CLEAN
        command = args[0] if args and args[0] in SUBCOMMANDS else "check"
        if args and args[0] == command:
            args = args[1:]
        return _COMMANDS[command](args)
    except UsageError as exc:
        print(f"gradlint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN


def run_check(argv: list[str]) -> int:
    from gradlint.rules.registry import UnknownCode, effective_codes
    from gradlint.settings import Settings

    args = check_parser().parse_args(argv)
    try:
        select = effective_codes(args.select, args.ignore, args.extend_select)
    except UnknownCode as exc:
        raise UsageError(str(exc))
    from gradlint.report import FORMATS, render

    if args.output_format not in FORMATS:
        raise UsageError(f"unknown --output-format {args.output_format!r} (choose from {', '.join(FORMATS)})")
    settings = Settings(select=select)
    from gradlint import engine

    if args.paths == ["-"]:
        name = args.stdin_filename or "-"
        result = engine.check_source(sys.stdin.buffer.read(), name, settings)
        run = engine.RunResult([result])
    else:
        options = engine.RunOptions(jobs=args.jobs, cache_dir=None if args.no_cache else args.cache_dir)
        run = engine.check_paths(args.paths, settings, options)
    sys.stdout.write(render(args.output_format, run))
    return EXIT_CLEAN if args.exit_zero and run.exit_code() == EXIT_FINDINGS else run.exit_code()


def run_rules(argv: list[str]) -> int:
    from gradlint.rules.registry import all_rules

    if argv:
        raise UsageError("`gradlint rules` takes no arguments")
    width = max(len(rule.name) for rule in all_rules())
    for rule in all_rules():
        state = "on " if rule.default else "off"
        print(f"{rule.code}  {rule.name:<{width}}  {state}  {rule.summary}")
    return EXIT_CLEAN


def run_explain(argv: list[str]) -> int:
    from gradlint.rules.registry import rules_by_code

    if len(argv) != 1:
        raise UsageError("usage: gradlint explain CODE")
    rule = rules_by_code().get(argv[0].strip().upper())
    if rule is None:
        raise UsageError(f"unknown rule code: {argv[0]!r} (see `gradlint rules`)")
    default = "on by default" if rule.default else "off by default (enable with --select or extend-select)"
    print(f"{rule.code} {rule.name} ({default})\n")
    print(rule.summary + "\n")
    print(rule.rationale + "\n")
    print("Wrong:\n")
    print("\n".join("    " + line for line in rule.wrong.rstrip().splitlines()) + "\n")
    print("Right:\n")
    print("\n".join("    " + line for line in rule.right.rstrip().splitlines()))
    return EXIT_CLEAN


def run_verify(argv: list[str]) -> int:
    try:
        from gradlint.verify.command import main as verify_main
    except ImportError as exc:  # the verifier package itself is missing (not torch)
        raise UsageError(f"verify is not available: {exc}")
    return verify_main(argv)


def run_lsp(argv: list[str]) -> int:
    try:
        from gradlint.lsp import main as lsp_main
    except ImportError as exc:
        print(
            f"gradlint lsp needs the `lsp` extra: pip install 'gradlint[lsp]' ({exc})",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return lsp_main(argv)


_COMMANDS = {
    "check": run_check,
    "rules": run_rules,
    "explain": run_explain,
    "verify": run_verify,
    "lsp": run_lsp,
}
