"""Command line: argument parsing and exit codes only; no analysis here.

What users read is TOP_HELP and each subcommand parser's help, not this
docstring.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not typing's: `import typing` alone costs a clean pre-commit run 3 ms
if TYPE_CHECKING:
    import argparse
    from typing import Optional, Sequence

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SUBCOMMANDS = ("check", "rules", "explain", "verify", "lsp")


TOP_HELP = """\
usage: gradlint [check] [OPTIONS] PATH...
       gradlint rules | explain CODE | verify SCRIPT | lsp
       gradlint --version

A linter for PyTorch training loops: zero_grad(), backward(), gradient
clipping and optimizer/scheduler steps in the wrong place or on the wrong
object.

commands:
  check PATH...    check files and directories, `-` reads standard input
                   (the default command: `gradlint src/` is `gradlint check src/`)
  rules            list every rule: code, name, on or off by default, summary
  explain CODE     what a code in the output means; for a rule (its code or its
                   name), why it is a bug with a wrong and a right example
  verify SCRIPT    run a training script under probes and confirm or refute
                   each finding (needs torch)
  lsp              the language server for editors (needs the `lsp` extra)

options:
  -h, --help       show this help and exit
  -V, --version    show the installed version and exit

`gradlint COMMAND --help` lists a command's options.

exit codes: 0 no findings, 1 findings (or a file that does not read, or that
spells a gradient event and does not parse), 2 usage error, bad configuration, internal error, a file that is not Python
or whose analysis ran out of time (--file-timeout); 130 stopped by Ctrl-C;
143 stopped by SIGTERM (timeout, a cancelled CI job).
"""


class UsageError(Exception):
    pass


def _parser(prog: str, description: str, epilog: str = ""):
    """An ArgumentParser whose errors become UsageError (one line, exit 2) and
    whose --help prints and returns 0 through main() (see _HelpShown)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str):  # argparse exits 2 already; keep the message short
            raise UsageError(message)

        def exit(self, status: int = 0, message: Optional[str] = None):
            if message:
                sys.stderr.write(message)
            raise _HelpShown(status)

    return Parser(
        prog=prog, description=description, epilog=epilog or None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


class _HelpShown(Exception):
    """--help printed (argparse would call sys.exit); main() returns the status."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def _seconds(value: str) -> float:
    import argparse

    from gradlint.options.settings import FILE_TIMEOUT_RANGE, valid_file_timeout

    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not valid_file_timeout(seconds):
        low, high = FILE_TIMEOUT_RANGE
        raise argparse.ArgumentTypeError(f"expected a number of seconds from {low:g} to {high:g}, got {value!r}")
    return seconds


def _codes(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


CHECK_DESCRIPTION = """\
Check Python files and directories for gradient bugs in training loops.
Prints one line per finding (path:line:col: CODE message) and a summary;
a clean run prints `All checks passed!` and the number of files checked
(-q: only the findings). The command name is optional: `gradlint src/`
is `gradlint check src/`.

Settings come from the nearest [tool.gradlint] table in a pyproject.toml
(searched upward from each file); the options below override it. Switches
(options without a value) are off unless given."""

CHECK_EPILOG = """\
exit codes: 0 no findings, 1 findings or a file that does not read, or that
spells a gradient event and does not parse, 2 usage error, bad configuration,
internal error, a file that is not Python or whose analysis ran out of time
(--file-timeout); 130 stopped by Ctrl-C; 143 stopped by SIGTERM (timeout, a
cancelled CI job).

syntax errors: gradlint parses only the files in which it finds a spelling
of a gradient event (`backward(`, `.step(`, a write to `.grad`, a configured
wrapper); a file without any cannot hold a finding and is not parsed, so its
syntax errors are left to Python and ruff.

examples:
  gradlint check src/ train.py
  gradlint check --select GL0,GL101 --ignore GL003 src/
  gradlint check --output-format github src/
  cat train.py | gradlint check - --stdin-filename train.py"""


def check_parser() -> argparse.ArgumentParser:
    from gradlint.report import FORMATS

    p = _parser("gradlint check", CHECK_DESCRIPTION, CHECK_EPILOG)
    p.add_argument(
        "paths", nargs="*", default=["."], metavar="PATH",
        help="files or directories to check; `-` reads standard input (default: the current directory)",
    )
    rules = p.add_argument_group("rule selection (overrides [tool.gradlint])")
    rules.add_argument(
        "--select", type=_codes, action="extend", metavar="CODES",
        help="comma-separated rule codes or prefixes to enable, replacing the defaults and the"
        " configuration's select/ignore (default: every rule that is on in `gradlint rules`)",
    )
    rules.add_argument(
        "--extend-select", type=_codes, action="extend", default=[], metavar="CODES",
        help="codes or prefixes to enable on top of the selection (default: none)",
    )
    rules.add_argument(
        "--ignore", type=_codes, action="extend", default=[], metavar="CODES",
        help="codes or prefixes to disable (default: none)",
    )
    files = p.add_argument_group("files")
    files.add_argument(
        "--exclude", type=_codes, action="extend", metavar="GLOBS",
        help="comma-separated globs to skip when walking directories, replacing the configuration's"
        " exclude (default: the configuration's; built-in skips such as .git and venv always apply)",
    )
    files.add_argument(
        "--extend-exclude", type=_codes, action="extend", default=[], metavar="GLOBS",
        help="globs to skip on top of exclude (default: none)",
    )
    files.add_argument(
        "--force-exclude", action="store_true",
        help="apply excludes to files named on the command line too (for pre-commit)",
    )
    files.add_argument(
        "--stdin-filename", metavar="PATH",
        help="the path to report, and to pick configuration by, for `-` (default: `-`)",
    )
    config = p.add_argument_group("configuration")
    config.add_argument(
        "--config", metavar="PATH",
        help="use this pyproject.toml (its [tool.gradlint]) or gradlint.toml for every file"
        " (default: the nearest pyproject.toml with a [tool.gradlint] table)",
    )
    config.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    out = p.add_argument_group("output")
    out.add_argument(
        "--output-format", "--format", dest="output_format", default="text", metavar="FORMAT",
        help=f"one of {', '.join(FORMATS)} (default: text); --format is the same (verify's spelling)",
    )
    out.add_argument(
        "--output-file", "-o", metavar="PATH",
        help="write the report to PATH (atomically) instead of standard output",
    )
    out.add_argument(
        "--statistics", action="store_true",
        help="print the number of findings per code instead of the findings (text or json)",
    )
    out.add_argument(
        "--show-suppressed", action="store_true",
        help="also list the findings that `# noqa` comments silenced (they never change the exit code)",
    )
    out.add_argument(
        "--show-unfollowed", action="store_true",
        help="list each call that can be a gradient event (backward, step, clear, clip, unscale) but that"
        " the analysis does not follow, as `path:line:col: <reason>` (they never change the exit code)",
    )
    out.add_argument(
        "--report-unused-noqa", action="store_true",
        help="report noqa / gradlint: ignore comments that silence nothing (GL900)",
    )
    out.add_argument(
        "--add-noqa", action="store_true",
        help="write `# noqa: GLxxx` on each line that has a finding today, so that only new"
        " findings fail from now on (for adopting gradlint in an existing codebase)",
    )
    out.add_argument(
        "--quiet", "-q", action="store_true",
        help="print the findings and errors only: no summary, no `All checks passed!`, no warnings",
    )
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    out.add_argument("--fix", action="store_true", help="apply the available fixes to the files (moves misplaced lines)")
    out.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff: also apply unsafe fixes")
    out.add_argument("--diff", action="store_true", help="print the diff --fix would apply, write nothing (exit 1 if any)")
    out.add_argument("--show-fixes", action="store_true", help="with --fix or --diff: list what was fixed and what was not")
    run = p.add_argument_group("speed")
    run.add_argument(
        "--jobs", "-j", type=int, default=None, metavar="N",
        help="worker processes, from 8 files to analyse (default: the number of cores when"
        " there is enough to analyse to pay for them, about 64 KB of source; else one process)",
    )
    run.add_argument(
        "--file-timeout", type=_seconds, metavar="SECONDS",
        help="stop the analysis of a file that takes longer and report it as an error for that file"
        " (default: file-timeout in [tool.gradlint], else 30)",
    )
    run.add_argument("--no-cache", action="store_true", help="do not read or write the result cache")
    run.add_argument(
        "--cache-dir", metavar="DIR",
        help="where the result cache lives (default: .gradlint_cache in the project root; outside any"
        " project, gradlint in the user's cache directory: $XDG_CACHE_HOME or ~/.cache)",
    )
    return p


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM: timeout(1), a cancelled CI job, a wrapper that gives up


class Terminated(BaseException):
    """SIGTERM, raised where the run is, so that it unwinds as for Ctrl-C: workers stopped,
    a write in progress finished or its temporary file removed."""


_terminating: dict = {}  # set at the first SIGTERM: {"returned": main() has returned}


def _stop_on_sigterm():
    """Make SIGTERM raise Terminated; returns the handler to restore, None if it could not.

    The first thing a check does: until then SIGTERM kills the process (-15, not 143).  The
    C module, not `signal`, whose import of enum would hold that window open another 10-20 ms."""
    try:
        import _signal as signal
    except ImportError:  # pragma: no cover - an interpreter without CPython's module
        import signal

    def stop(signum, frame):
        if _terminating.get("returned"):
            return  # main() is returning 143 already
        if not _terminating:
            _terminating["returned"] = False
            _watch_the_stop()
        raise Terminated

    try:
        return signal.signal(signal.SIGTERM, stop)
    except (ValueError, AttributeError):  # not the main thread (an embedding program), or no SIGTERM
        return None


def _watch_the_stop() -> None:
    """Python ignores an exception raised where it cannot propagate (a __del__, an at-fork hook),
    so the Terminated of a SIGTERM can be lost and the run go on.  A daemon thread raises it
    again each second until main() returns, and ends a process whose shutdown then hangs.

    Started with _thread, not threading: the SIGTERM can arrive while the main thread is
    importing threading (a partly initialised module then has no Thread: an internal error
    instead of exit 143).  A _thread thread does not keep the process alive, as a daemon.
    Only built-in modules are imported here, for the same reason: the SIGTERM can land while
    enum (which `signal` imports) is half made."""
    import _signal as signal
    import _thread
    import os
    import time

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if _terminating.get("returned"):
                time.sleep(1.0)
                os._exit(EXIT_TERMINATED)
            _thread.interrupt_main(signal.SIGTERM)

    _thread.start_new_thread(watch, ())


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # A check stops at SIGTERM with 143 from its first line on, the early answer (quick.py)
    # included; the other commands have their own (verify, lsp) or finish at once.
    checking = args[:1] not in (["rules"], ["explain"], ["verify"], ["lsp"])
    previous = _stop_on_sigterm() if checking else None
    try:
        try:
            return _main(args)
        finally:
            if previous is not None:  # a program that called main() keeps its own SIGTERM handling
                _restore_sigterm(previous)
    except KeyboardInterrupt:  # Ctrl-C anywhere, even before a command started
        return EXIT_INTERRUPTED
    except Terminated:  # during the run, or as it returned (before the handler was put back)
        _terminating["returned"] = True
        if previous is not None:
            _restore_sigterm(previous)
        return EXIT_TERMINATED


def _restore_sigterm(previous) -> None:
    """Put back the handler main() found.  The run is over: a SIGTERM that lands from here on
    is ignored by ours (no Terminated raised out of main(), no traceback)."""
    try:
        import _signal as signal
    except ImportError:  # pragma: no cover
        import signal

    stopped = bool(_terminating)  # a SIGTERM came: its watcher waits for `returned`
    _terminating["returned"] = True
    signal.signal(signal.SIGTERM, previous)
    if not stopped:
        _terminating.clear()  # a later main() in this process starts afresh


def _main(args: list[str]) -> int:
    if args[:1] in (["-h"], ["--help"]):  # before anything else is imported
        print(TOP_HELP, end="")
        return EXIT_CLEAN
    if args[:1] in (["-V"], ["--version"]):
        print(f"gradlint {installed_version()}")
        return EXIT_CLEAN
    if args[:1] not in (["rules"], ["explain"], ["verify"], ["lsp"]) and _clean_without_analysis(args):
        return EXIT_CLEAN
    from gradlint.options.config import ConfigError

    try:
        command = args[0] if args and args[0] in SUBCOMMANDS else "check"
        if args and args[0] == command:
            args = args[1:]
        return _COMMANDS[command](args)
    except _HelpShown as shown:
        return shown.status
    except (UsageError, ConfigError) as exc:
        print(f"gradlint: error: {_escaped(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as exc:  # gradlint's own bug: one line, no traceback, exit 2
        stop = _stop_within(exc)
        if stop is not None:
            raise stop from None  # main() gives its exit status (130, 143)
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(
            _escaped(f"gradlint: internal error: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"),
            file=sys.stderr,
        )
        return EXIT_ERROR


def _stop_within(exc: BaseException) -> Optional[BaseException]:
    """A Ctrl-C or SIGTERM that Python wrapped in another exception: the signal raised inside
    a class being made while a module is imported comes out as `RuntimeError: Error calling
    __set_name__`, with the KeyboardInterrupt or Terminated as its cause.  The run was stopped,
    not broken."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, (KeyboardInterrupt, Terminated)):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def installed_version() -> str:
    """The version in the installed metadata (what pip installed), or the
    source tree's when gradlint runs from a checkout that is not installed.

    The `*.dist-info` directory on sys.path is read directly: importing
    importlib.metadata (email, zipfile, csv, pathlib) would cost `--version`
    several times the interpreter's own start-up.  importlib.metadata is
    asked only when no such directory is found (an egg, a zip, an import hook).
    """
    import os

    from gradlint import DISTRIBUTION, __version__

    prefix = DISTRIBUTION.replace("-", "_").lower() + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.lower().startswith(prefix) and name.endswith(".dist-info"):
                version = _metadata_version(os.path.join(entry or ".", name, "METADATA"))
                if version:
                    return version
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return __version__
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return __version__


def _metadata_version(path: str) -> Optional[str]:
    """`Version:` from a METADATA file's header (the first blank line ends it)."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return None


def _clean_without_analysis(args: list[str]) -> bool:
    """A run that surely finds nothing, answered before anything heavy is imported (quick.py)."""
    try:
        from gradlint.check.quick import answer

        return answer(args)
    except Exception:  # never let the shortcut fail a run: the full path decides
        return False


def _overrides(args):
    from gradlint.options.config import Layer, Overrides
    from gradlint.rules.registry import UnknownCode, expand

    for option in ("select", "extend_select", "ignore"):
        try:
            expand(getattr(args, option) or ())
        except UnknownCode as exc:
            raise UsageError(f"--{option.replace('_', '-')}: {exc} (see `gradlint rules`)")
    layer = Layer(
        select=None if args.select is None else tuple(args.select),
        extend_select=tuple(args.extend_select),
        ignore=tuple(args.ignore),
    )
    return Overrides(
        layer=layer,
        exclude=None if args.exclude is None else tuple(args.exclude),
        extend_exclude=tuple(args.extend_exclude),
        file_timeout=args.file_timeout,
    )


def run_check(argv: list[str]) -> int:
    """`gradlint [check] ...`: main() has made SIGTERM stop it."""
    from gradlint.options.config import Resolver
    from gradlint.report import FORMATS

    args = check_parser().parse_args(argv)
    if args.output_format not in FORMATS:
        raise UsageError(f"unknown --output-format {args.output_format!r} (choose from {', '.join(FORMATS)})")
    if args.statistics:
        from gradlint.report.statistics import STATISTICS_FORMATS

        if args.output_format not in STATISTICS_FORMATS:
            raise UsageError(f"--statistics works with --output-format {' or '.join(STATISTICS_FORMATS)}")
    if args.config and args.isolated:
        raise UsageError("--config and --isolated cannot be used together")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    resolver = Resolver(_overrides(args), config_path=args.config, isolated=args.isolated)

    _warn_about_idle_options(args)
    if args.add_noqa and ("-" in args.paths or args.fix or args.diff or args.report_unused_noqa):
        raise UsageError("--add-noqa works on files, alone (not with standard input, --fix, --diff or --report-unused-noqa)")
    if args.paths == ["-"] and (args.fix or args.diff):
        if args.report_unused_noqa:
            raise UsageError("--report-unused-noqa does not combine with --fix or --diff on standard input")
        return _fix_stdin(args, resolver)
    stdin = None
    if args.paths == ["-"]:
        stdin, size = _read_stdin()
        run, sources = _checked_stdin(args, resolver, stdin, size)
    elif "-" in args.paths:
        raise UsageError("- (standard input) cannot be combined with other paths")
    else:
        run, sources = _check_paths(args, resolver)
        _warn_about_an_empty_run(args, run, resolver)
        if args.diff:
            return _diff(run, resolver, args)
        if args.fix:
            run = _fix(run, resolver, args)
        if args.add_noqa:
            run = _add_noqa(run, resolver, args.quiet, _staging(args, run))
    if _marks_fixes(args) and not args.fix:
        # the workers marked the files of a plain run (check_files, cached); a notebook is
        # marked here, on its cells, and so is standard input and what --add-noqa rewrote
        _offer_fixes(run, resolver, stdin, every_file=stdin is not None or args.add_noqa)
    if args.report_unused_noqa:
        _add_unused_noqa(run, sources, resolver)
    if _offers_fixes(args) and (args.paths == ["-"] or args.fix or args.add_noqa):
        _prove_fixes(run, sources, resolver)  # else check_files proved them (cached, in the workers)
    text = _render(args, run)
    _write(text, args.output_file)
    code = run.exit_code()
    return EXIT_CLEAN if args.exit_zero and code == EXIT_FINDINGS else code


def _warn(args, message: str) -> None:
    if not args.quiet:
        print(f"gradlint: warning: {_escaped(message)}", file=sys.stderr)


def _warn_about_an_empty_run(args, run, resolver) -> None:
    """A run that checked nothing says why, as ruff does, rather than passing in silence."""
    if not run.results and not run.discovery_errors:
        _warn(args, "no Python files found under the given paths")
    selected = [resolver.settings_for(r.path).select for r in run.results]
    if (selected and not any(selected)) or (not selected and args.select == [] and not args.extend_select):
        _warn(args, "no rule is selected: nothing was checked (see --select, --ignore and `gradlint rules`)")


def _warn_about_idle_options(args) -> None:
    """Options that only mean something with --fix or --diff say so rather than doing nothing."""
    if args.fix or args.diff:
        return
    for given, option in ((args.unsafe_fixes, "--unsafe-fixes"), (args.show_fixes, "--show-fixes")):
        if given:
            _warn(args, f"{option} has no effect without --fix or --diff")


def _fix(run, resolver, args, write=True):
    """Fix every file; the fresh run and each file's fixing (for --diff)."""
    from gradlint.edit.fix_files import fix_file
    from gradlint.run.pool import collector_paused

    results, fixings = [], []
    staging = _staging(args, run) if write else None
    for result in run.results:
        if write and result.path in run.outside:
            results.append(_not_written_outside(result))
            continue
        with collector_paused():  # one file's checks at a time (gradlint/run/pool.py)
            fixed, fixing = fix_file(
                result, resolver.settings_for(result.path), unsafe=args.unsafe_fixes, write=write,
                count_unsafe=write and _marks_fixes(args),  # --diff prints no report to mark
                staging=staging,
            )
        results.append(_left_to_fix(fixed, fixing, args))
        if fixing is not None:
            fixings.append((result.path, fixing))
    _tell_fixes(fixings, args, write)
    run.results = results
    return run if write else fixings


def _tell_fixes(fixings, args, write: bool) -> None:
    """`Fixed 2 problems.` (`Would fix` for --diff) and, with --show-fixes, each one and each not fixed."""
    total = sum(len(fixing.outcome.fixed) for _, fixing in fixings)
    if total and not args.quiet:
        print(f"{'Fixed' if write else 'Would fix'} {total} problem{'s' if total != 1 else ''}.", file=sys.stderr)
    if args.show_fixes:
        from gradlint.core.display import shown

        done, not_done = ("fixed", "not fixed") if write else ("would fix", "would not fix")
        for path, fixing in fixings:
            for line in fixing.outcome.fixed:
                print(f"{shown(path)}: {done} {line}", file=sys.stderr)
            for line in fixing.outcome.not_fixed:
                print(f"{shown(path)}: {not_done}: {line}", file=sys.stderr)


def _marks_fixes(args) -> bool:
    """The text report marks what --fix would repair (`[*]`, the fixable count); nothing else does."""
    return args.output_format == "text" and not args.statistics


def _left_to_fix(result, fixing, args):
    """After --fix: the text report marks only what --unsafe-fixes would still repair
    (fix/session.py learnt it while fixing); other formats offer what fix/session.py proves."""
    if not _marks_fixes(args):
        return result
    from gradlint.fix.session import marked

    return marked(result, fixing.outcome.left if fixing is not None else {})


def _offer_fixes(run, resolver, stdin: Optional[bytes], every_file: bool = True) -> None:
    """Mark each finding with what `--fix` would really do to it (edit/fix_files.py `offered`);
    without `every_file`, only the notebooks' (check_files marked the other files)."""
    from gradlint.check.notebook import is_notebook
    from gradlint.edit.fix_files import offered
    from gradlint.run.pool import collector_paused

    def offer(result):
        if not every_file and not is_notebook(result.path):
            return result
        with collector_paused():  # one file's checks at a time (gradlint/run/pool.py)
            return offered(result, resolver.settings_for(result.path), stdin)

    run.results = [offer(r) for r in run.results]


def _fix_stdin(args, resolver) -> int:
    """`--fix -`: the fixed text on standard output (as ruff does), the report on standard
    error; `--diff -`: the diff on standard output.  Nothing is written anywhere else."""
    from gradlint.edit.fix_files import fix_data
    from gradlint.run.pool import collector_paused

    name = args.stdin_filename or "-"
    data, size = _read_stdin()
    run, _ = _checked_stdin(args, resolver, data, size)
    result = run.results[0] if run.results else None  # None: --force-exclude excluded it
    from gradlint.run.pool import ChildDied, apart, died_while

    try:
        with collector_paused():  # the file's checks (gradlint/run/pool.py); a big input's in a child
            fixing = None if result is None else apart(
                len(data), fix_data, data, result, resolver.settings_for(name), args.unsafe_fixes, True
            )
    except ChildDied:  # the input is given back unchanged, with this error
        fixing, run.results = None, [died_while(result, "fixing")]
    fixings = [(name, fixing)] if fixing is not None else []
    _tell_fixes(fixings, args, write=not args.diff)
    if args.diff:
        return _print_diffs(fixings)
    from gradlint.check.engine import MAX_FILE_BYTES
    from gradlint.edit.fix_files import encode_like

    fixed = fixing is not None and fixing.outcome.changed
    sys.stdout.buffer.write(encode_like(fixing.after, fixing.before, data) if fixed else data)  # else byte for byte
    if not fixed and len(data) > MAX_FILE_BYTES:
        _echo_rest_of_stdin()
    sys.stdout.flush()
    if fixed:
        run.results = [fixing.outcome.result]
    run.results = [_left_to_fix(r, fixing, args) for r in run.results]
    text = _render(args, run)
    if args.output_file is None:
        _written(sys.stderr, text)  # standard output holds the fixed text
    else:
        _write(text, args.output_file)
    code = run.exit_code()
    return EXIT_CLEAN if args.exit_zero and code == EXIT_FINDINGS else code


def _diff(run, resolver, args) -> int:
    """--diff: the unified diff of what --fix would write; exit 1 when there is one, 2 when a
    file could not be checked or fixed for a reason of exit 2 (an internal error, a timeout:
    said on standard error, one line per file, as the report says it)."""
    code = _print_diffs(_fix(run, resolver, args, write=False))
    from gradlint.core.findings import EXIT_ERROR_KINDS
    from gradlint.report.text import error_line

    failed = [error for result in run.results for error in result.errors if error.kind in EXIT_ERROR_KINDS]
    for error in failed:
        print(_escaped(error_line(error)), file=sys.stderr)
    return EXIT_ERROR if failed else code


def _print_diffs(fixings) -> int:
    import difflib

    from gradlint.core import source_lines
    from gradlint.core.display import shown

    changed = False
    sys.stdout.flush()
    for path, fixing in fixings:
        if fixing.before == fixing.after:
            continue
        changed = True
        before, after = source_lines.lines(fixing.before, keepends=True), source_lines.lines(fixing.after, keepends=True)
        import os

        # git's labels when relative; a name with a line end or an escape in it is quoted, as git does
        old, new = (path, path) if os.path.isabs(path) else (f"a/{path}", f"b/{path}")
        for line in difflib.unified_diff(before, after, shown(old), shown(new)):
            # as diff(1) writes a last line without a line end.  The diff is bytes in UTF-8 whatever
            # the terminal's encoding (as ruff's), so a source line in any script reaches `patch` intact.
            line = line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            sys.stdout.buffer.write(line.encode("utf-8", "surrogateescape"))
    sys.stdout.flush()
    return EXIT_FINDINGS if changed else EXIT_CLEAN


def _add_noqa(run, resolver, quiet: bool = False, staging=None):
    """Mark today's findings in the files; what could not be marked stays reported."""
    from gradlint.edit.add_noqa import add_noqa_to_file

    total, files, results = 0, 0, []
    from gradlint.run.pool import collector_paused

    for result in run.results:
        if result.path in run.outside:
            results.append(_not_written_outside(result))
            continue
        with collector_paused():  # one file's checks at a time (gradlint/run/pool.py)
            marked_result, marked = add_noqa_to_file(result, resolver.settings_for(result.path), staging)
        results.append(marked_result)
        total, files = total + marked, files + (marked > 0)
    if total and not quiet:
        print(
            f"Added {total} noqa directive{'s' if total != 1 else ''} to {files} file{'s' if files != 1 else ''}.",
            file=sys.stderr,
        )
    run.results = results
    return run


OUTSIDE_MESSAGE = (
    "not written: a symbolic link found while walking leads to a file outside the folder checked"
    " (name the file to write it)"
)


def _not_written_outside(result):
    """A file reached by a walked link out of the tree is checked, never written (discover.py):
    its findings stay reported, with a write-error that says why (exit 1)."""
    from gradlint.edit.rewrite import unwritten

    return unwritten(result, OUTSIDE_MESSAGE) if result.findings else result


def _staging(args, run):
    """Where the files' new text is made before it takes their place: the cache's staging
    directory (gradlint/run/cache.py); none with --no-cache (beside each file then), or when no
    file has a finding to edit."""
    if args.no_cache or not any(result.findings for result in run.results):
        return None
    from gradlint.run.cache import default_cache_dir, staging_dir

    return staging_dir(args.cache_dir or default_cache_dir(args.paths))


def _read_stdin() -> tuple[bytes, int]:
    """Standard input, bounded by the size limit of files: (what was read, its size).  Reading
    stops one byte past the limit, as a file past it is never read: an endless input
    (`< /dev/zero`, a stream) is an error at once, and its writer gets a closed pipe when the
    run ends rather than a reader that never does.  The size is the whole input's when it is a
    regular file (`< big.py`), else what was read (the error says `more than`)."""
    import os
    import stat

    from gradlint.check.engine import MAX_FILE_BYTES

    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        try:
            status = os.fstat(sys.stdin.fileno())
            if stat.S_ISREG(status.st_mode) and status.st_size >= len(data):
                return data, status.st_size
        except (OSError, ValueError):  # no descriptor (an embedding program's stream)
            pass
    return data, len(data)


def _echo_rest_of_stdin() -> None:
    """`--fix -` on an input past the limit gives it back byte for byte, as it came: the part
    read, then the rest copied a chunk at a time (memory stays bounded, however long)."""
    while True:
        chunk = sys.stdin.buffer.read(1 << 20)
        if not chunk:
            break
        sys.stdout.buffer.write(chunk)


def _too_large_stdin(args, resolver, size: int):
    from gradlint.check import engine
    from gradlint.core.findings import FileResult

    name = args.stdin_filename or "-"
    if args.stdin_filename and args.force_exclude and resolver.is_excluded(name):
        return engine.RunResult([]), {}
    error = engine.too_large("-", size)
    return engine.RunResult([FileResult(name, errors=[engine.FileError(name, error.kind, error.message)])]), {}


def _checked_stdin(args, resolver, data: bytes, size: Optional[int] = None):
    """Standard input as a file on disk is checked: the same size and time limits, the same guard."""
    from gradlint.check import engine

    name = args.stdin_filename or "-"
    if len(data) > engine.MAX_FILE_BYTES:
        return _too_large_stdin(args, resolver, size or len(data))
    if args.stdin_filename and args.force_exclude and resolver.is_excluded(name):
        return engine.RunResult([]), {}
    from gradlint.check.notebook import check_notebook_data, is_notebook
    from gradlint.run.pool import ChildDied, apart, crashed, guarded

    check = check_notebook_data if is_notebook(name) else engine.check_data  # a notebook's cells are named
    try:  # a big input is checked in a child process, as a big file is (engine.check_files)
        result, source = apart(len(data), guarded, lambda path, settings: check(data, path, settings), name, resolver.settings_for(name))
    except ChildDied:
        result, source = crashed(name, "the worker process checking this file died"), None
    if is_notebook(name):
        return engine.RunResult([result]), {name: data}  # a notebook's bytes: its cells are placed from them
    return engine.RunResult([result]), {} if source is None else {name: source}


def _check_paths(args, resolver):
    """discover -> (path, Settings) per file -> engine.check_files -> RunResult."""
    from gradlint.check import engine
    from gradlint.run.discover import discover
    from gradlint.check.notebook import check_notebook_data, joined_code

    excluded = resolver.is_excluded
    if args.force_exclude:
        excluded = _force_excluder(resolver, args.paths)
    found = discover(args.paths, excluded=excluded, force_exclude=args.force_exclude)
    tasks = []
    for path in found.files:  # notebooks too: each file behind the same guard, in a worker when there are many
        path = _display_path(path)
        tasks.append((path, resolver.settings_for(path)))
    from gradlint.run.cache import default_cache_dir  # .gradlint_cache/ in the project root unless told otherwise

    options = engine.RunOptions(
        jobs=args.jobs, cache_dir=None if args.no_cache else args.cache_dir or default_cache_dir(args.paths),
        prove_fixes=_offers_fixes(args) and not (args.fix or args.diff or args.add_noqa),  # those re-check anyway
        mark_fixes=_marks_fixes(args) and not (args.fix or args.diff or args.add_noqa),
        notebooks=check_notebook_data,
        notebook_code=joined_code,
        roots=tuple(p for p in args.paths if p != "-"),
    )
    results = engine.check_files(tasks, options) if tasks else []
    from dataclasses import replace

    errors = [replace(error, path=_display_path(error.path)) for error in found.errors]  # as the files' paths
    # No notebook text kept: a notebook is read again where needed (--fix may have changed it).
    outside = {_display_path(path) for path in found.outside}
    return engine.RunResult(sorted(results, key=lambda r: r.path), errors, outside), {}


def _force_excluder(resolver, paths):
    """With --force-exclude a named file under a built-in skipped directory
    (`build/`, `.venv/`, ...) is skipped too, as it would be when walking."""
    import os

    from gradlint.run.discover import SKIP_DIRS

    named = {os.path.normpath(p) for p in paths}

    def in_skipped_dir(path: str) -> bool:
        parts = os.path.normpath(os.path.relpath(os.path.abspath(path))).split(os.sep)[:-1]
        return any(part in SKIP_DIRS or part.endswith(".egg-info") for part in parts if part != "..")

    def excluded(path: str) -> bool:
        if resolver.is_excluded(path):
            return True
        return os.path.normpath(path) in named and in_skipped_dir(path)

    return excluded


def _display_path(path: str) -> str:
    """`./src/a.py` (what walking `.` yields) is shown as `src/a.py`, as ruff does."""
    import os

    return os.path.normpath(path) if path.startswith("." + os.sep) else path


def _add_unused_noqa(run, sources: dict[str, str], resolver) -> None:
    from gradlint.check import engine
    from gradlint.check.suppress import unused_directives

    from gradlint.check.notebook import is_notebook

    for result in run.results:
        if result.errors:
            continue  # not analysed: every suppression would look unused
        source = sources.get(result.path)
        if is_notebook(result.path):
            _add_unused_noqa_in_cells(result, source, resolver)
            continue
        if source is None:
            data, error = engine.read_source(result.path)
            if error is not None:
                continue
            source, error = engine.decode(data, result.path)
            if error is not None or source is None:
                continue
        enabled = resolver.settings_for(result.path).select
        extra = unused_directives(source, result.path, result.suppressed, enabled)
        if extra:
            from gradlint.core.findings import Finding

            result.findings = sorted(result.findings + extra, key=Finding.sort_key)


def _add_unused_noqa_in_cells(result, data: "bytes | None", resolver) -> None:
    """GL900 in a notebook's cells (`data`: its bytes when read from standard input)."""
    from gradlint.check import engine
    from gradlint.core.findings import Finding
    from gradlint.check.notebook import unused_noqa

    if data is None:
        data, error = engine.read_source(result.path)
        if error is not None:
            return
    extra = unused_noqa(data, result.path, result.suppressed, resolver.settings_for(result.path).select)
    if extra:
        result.findings = sorted(result.findings + extra, key=Finding.sort_key)


def _offers_fixes(args) -> bool:
    """JSON and SARIF carry fixes that tools apply without re-checking: only proven ones."""
    return args.output_format in ("json", "sarif") and not args.statistics


def _prove_fixes(run, sources: dict[str, str], resolver) -> None:
    """JSON and SARIF fixes are applied by tools that do not re-check: offer only
    fixes that leave the file with strictly fewer findings (fix/session.py)."""
    from gradlint.check import engine
    from dataclasses import replace

    from gradlint.fix.session import proven_fixes
    from gradlint.run.pool import ChildDied, apart, collector_paused, died_while

    for index, result in enumerate(run.results):
        if not any(f.fix for f in result.findings):
            continue
        source = sources.get(result.path)
        if source is None:
            data, error = engine.read_source(result.path)
            source, error = (None, error) if error is not None else engine.decode(data, result.path)
            if error is not None or source is None:
                continue
        settings = resolver.settings_for(result.path)

        def check(text, path=result.path, settings=settings):
            with collector_paused():  # one check at a time (gradlint/run/pool.py)
                return engine.check_source(text, path, settings)

        try:  # a big file's proofs in a child process (gradlint/run/pool.py apart)
            run.results[index] = apart(len(source), proven_fixes, source, result, check)
        except ChildDied:  # nothing proven: no fix offered
            unproven = [replace(f, fix=None) for f in result.findings]
            run.results[index] = died_while(replace(result, findings=unproven), "proving the fixes of")


def _render(args, run) -> str:
    if args.statistics:
        from gradlint.report.statistics import render as statistics

        return statistics(run, args.output_format)
    from gradlint.report import render

    return render(
        args.output_format, run, show_suppressed=args.show_suppressed, quiet=args.quiet,
        show_unfollowed=args.show_unfollowed,
    )


def _write(text: str, output_file: Optional[str]) -> None:
    """stdout, or the report file: a regular file is replaced atomically (a reader never sees
    half a report), reached through its symlinks (the link stays a link).  Anything else that
    exists there (`/dev/null`, `/dev/stdout`, a FIFO) is opened and written, as a shell
    redirection does: a rename would put a plain file in place of the device or pipe itself."""
    if output_file is None:
        _written(sys.stdout, text)
        sys.stdout.flush()
        return
    import os
    import stat

    from gradlint.run.atomic import write_atomically

    try:
        target = os.path.realpath(output_file)
        try:
            regular = stat.S_ISREG(os.stat(target).st_mode)
        except FileNotFoundError:
            regular = True  # a new file
        if regular:
            write_atomically(target, text, fsync=True)
        else:
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write --output-file {output_file}: {exc.strerror or exc}")


def _written(stream, text: str) -> None:
    """Write a report to a terminal or pipe whose encoding may not hold every character
    (`PYTHONIOENCODING=ascii`, a legacy console): what it cannot hold is written as its
    escape, `\\xe9`, rather than lose the report."""
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = stream.encoding or "utf-8"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))


def _escaped(line: str) -> str:
    from gradlint.core.display import escaped

    return escaped(line)


def run_rules(argv: list[str]) -> int:
    from gradlint.rules.registry import all_rules

    _parser(
        "gradlint rules",
        "List every rule: its code, its name, whether it is on by default, and what it finds.\n"
        "Rules that are off are enabled with --select or --extend-select (or select in\n"
        "[tool.gradlint]). `gradlint explain CODE` tells more about one.",
    ).parse_args(argv)
    width = max(len(rule.name) for rule in all_rules())
    for rule in all_rules():
        state = "on " if rule.default else "off"
        print(f"{rule.code}  {rule.name:<{width}}  {state}  {rule.summary}")
    return EXIT_CLEAN


def run_explain(argv: list[str]) -> int:
    from gradlint.commands.explain import lookup, near

    parser = _parser(
        "gradlint explain",
        "Explain a code that gradlint prints: why it is a bug, with a wrong and a right\n"
        "example for a rule; what it means and what to do for GL900 and for the kinds of\n"
        "files that could not be checked or written (syntax-error, read-error,\n"
        "internal-error, timeout, not-python, write-error).",
    )
    parser.add_argument(
        "code", metavar="CODE",
        help="a code from gradlint's output, e.g. GL002, GL900 or syntax-error, or a rule's name (missing-zero-grad)",
    )
    args = parser.parse_args(argv)
    entry = lookup(args.code)
    if entry is None:
        close = near(args.code)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UsageError(f"unknown code: {args.code!r} ({hint}see `gradlint rules`)")
    print(entry.explanation(), end="")
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
            f"gradlint lsp needs the `lsp` extra: pip install 'torch-gradlint[lsp]' ({exc})",
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
