"""`gradlint verify`: arguments, output and exit codes.  Never imports torch.

Exit codes (the contract a CI gates on, also in `--help` and docs/verify.md):
0 the script ran and no bug was confirmed or seen at run time; 1 a bug was
confirmed or seen at run time (runtime only); 2 nothing could be verified
(usage error, no torch, the script crashed, exited or timed out before its
first optimizer step, training ran only in an unprobed subprocess) or, with
--strict, a static finding was not reached; 130/143 verify itself was
interrupted (SIGINT/SIGTERM) and stopped the script.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import signal
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
SCRIPT_SUFFIXES = (".py", ".pyw")
INSTALL_HINT = "gradlint verify needs torch: pip install 'torch-gradlint[verify]' (or install torch first, then torch-gradlint)"
_ENTRY_POINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


DESCRIPTION = """\
Run a training script for a few optimizer steps in a child process, watch
what really happens to every parameter's .grad, and give each static finding
of the file a verdict: confirmed, not reproduced (its path ran and the
gradients were right), not reached (with the reason) or not probed (training
ran in a subprocess).  Bugs the run sees that the checker did not flag are
reported as "runtime only".  The script runs as `python SCRIPT` would, from
the current directory; it gets no stdin."""

EPILOG = """\
arguments for the script go after `--`:
  gradlint verify train.py -- --epochs 1 --data data/small.csv
  gradlint verify mypkg.train:main -- --lr 0.1   (imports mypkg.train, calls main())

verify runs the script's code: treat it as `python SCRIPT`.  The script's files: it
sees your folders as they are, and what it writes goes to an overlay that is
removed at the end (--keep-writes DIR keeps it); the report lists what it
wrote (path and size).  On Linux, where the system allows it, the script and
every process it starts run in their own user, mount, pid and network
namespaces over a kernel overlay (as bubblewrap's --unshare-all --dev /dev):
nothing they do reaches your files, a minimal /dev, /sys read-only, loopback
only (--allow-network opts out), and no process outlives the run.  Elsewhere
(or --containment python) the overlay lives in the script's Python file
functions, and the report lists what it could not contain (processes started,
C functions called through ctypes, network connections).
--allow-writes lets the script write your files for real.

exit codes:
  0  the script ran and no bug was confirmed or seen at run time
  1  a finding was confirmed, or the run saw a bug the checker did not flag
  2  nothing could be verified: usage error, torch missing, or the script
     crashed, exited or timed out before its first optimizer step (the
     reason and the tail of its output are printed); with --strict, also
     when a static finding was not reached or not probed
  130, 143  verify was interrupted (Ctrl-C, SIGTERM); the script and every
     process it started were stopped and the temporary files removed"""


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="gradlint verify", description=DESCRIPTION, epilog=EPILOG, add_help=False,
        usage="gradlint verify [options] SCRIPT.py|package.module:function [-- SCRIPT_ARGS...]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("target", metavar="SCRIPT", help="a Python script (train.py) or an entry point (package.module:function)")
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("--steps", type=int, default=5, metavar="N",
                   help="stop once every optimizer has made N steps (each optimizer counts on its own; "
                        "steps a GradScaler skips count too); the script is unwound at the next step (default 5)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="stop the script after this many seconds of its own run time, not counting torch's "
                        "import; a script that ignores it is killed 15 s later (default 60)")
    p.add_argument("--trace", action="store_true",
                   help="also print every gradient event (backward, step, clear, clip, ...) with its line and "
                        "the gradient of each parameter after it")
    p.add_argument("--format", "--output-format", dest="format", choices=("text", "json"), default="text",
                   help="output format (default text); --output-format is the same (check's spelling)")
    p.add_argument("--strict", action="store_true",
                   help="exit 2 when a static finding was not reached or not probed (default: only a "
                        "confirmed or runtime-only bug fails)")
    p.add_argument("--allow-writes", action="store_true",
                   help="let the script write, rename and delete your files for real (default: its writes go "
                        "to a copy-on-write overlay, listed in the report)")
    p.add_argument("--allow-network", action="store_true",
                   help="let the script use the host's network (default, namespace mode: a network of its own with "
                        "loopback only; the Python mode cannot cut the network and lists each connection)")
    p.add_argument("--containment", choices=("auto", "namespace", "python"), default="auto",
                   help="how the script's writes and processes are contained: namespace (Linux: its own user, "
                        "mount and pid namespaces over a kernel overlay: everything it starts is contained), "
                        "python (a copy-on-write overlay in the script's Python file functions; the report lists "
                        "what it could not contain), auto (default: namespace where the system allows it)")
    p.add_argument("--keep-writes", metavar="DIR",
                   help="keep what the script wrote in DIR (a new or empty folder), each file under its "
                        "absolute path: DIR/home/me/proj/ckpt.pt for /home/me/proj/ckpt.pt (default: removed)")
    return p


def _split(argv):
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def _display(path: str | None) -> str:
    from gradlint.verify.verdicts import display_path

    return display_path(path)


def _check_target(target: str) -> None:
    """Usage errors we can see without running anything."""
    if target.endswith(".py") or os.path.sep in target or not _ENTRY_POINT.match(target):
        if not os.path.isfile(target):
            raise _UsageError(f"no such script: {target} (give a .py file or package.module:function)")
        if not _is_python_script(target):
            raise _UsageError(
                f"{target} is not a Python script: verify runs .py files (or a file whose first line is a "
                "python #! line) and package.module:function entry points"
            )
        try:
            with open(target, "rb") as handle:
                compile(handle.read(), target, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise _UsageError(f"cannot run {target}: syntax error at line {exc.lineno}: {exc.msg}")
        except (OSError, ValueError) as exc:
            raise _UsageError(f"cannot read {target}: {exc}")


def _check_keep_writes(args) -> None:
    folder = args.keep_writes
    if folder is None:
        return
    if args.allow_writes:
        raise _UsageError("--keep-writes keeps the overlay's files; with --allow-writes there is no overlay")
    if os.path.exists(folder) and not (os.path.isdir(folder) and not os.listdir(folder)):
        raise _UsageError(f"--keep-writes {folder}: give a new or empty folder (verify never writes over files)")


def _is_python_script(path: str) -> bool:
    """A .py file, or an extension-less script with a python #! line.  A CSV whose header
    happens to parse as Python is data, not a script."""
    if path.lower().endswith(SCRIPT_SUFFIXES):
        return True
    if os.path.splitext(path)[1]:
        return False
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def main(argv) -> int:
    own, script_args = _split(argv)
    if any(arg in ("-h", "--help") for arg in own):
        print(parser().format_help())
        return EXIT_CLEAN
    try:
        args = parser().parse_args(own)
        if args.steps < 1:
            raise _UsageError("--steps must be at least 1")
        if args.timeout <= 0:
            raise _UsageError("--timeout must be positive")
        if importlib.util.find_spec("torch") is None:
            print(f"gradlint: error: {INSTALL_HINT}", file=sys.stderr)
            return EXIT_ERROR
        _check_target(args.target)
        _check_keep_writes(args)
    except _UsageError as exc:
        print(f"gradlint verify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR

    from gradlint.verify.runner import Child, Interrupted

    child = Child(args.target, script_args, steps=args.steps, timeout=args.timeout, allow_writes=args.allow_writes,
                  trace=args.trace, keep_writes=args.keep_writes, containment=args.containment,
                  allow_network=args.allow_network)
    try:
        with child.stopped_on_signals():
            early = None
            if os.path.isfile(args.target):  # check statically while the child imports torch
                early = (os.path.realpath(args.target), static_findings(args.target))
            run = child.wait()
    except (Interrupted, KeyboardInterrupt) as stop:
        signum = getattr(stop, "signum", signal.SIGINT)
        print(f"gradlint verify: interrupted ({signal.Signals(signum).name}): stopped {args.target} and every "
              "process it started", file=sys.stderr)
        return 128 + signum
    if not run.started or run.end.get("reason") == "not-started":
        reason = run.start_error or run.end.get("message") or "the child process did not start"
        print(f"gradlint verify: error: cannot run {args.target}: {reason}", file=sys.stderr)
        if run.output and not run.start_error:
            print(run.output, file=sys.stderr)
        return EXIT_ERROR

    report = build_report(args.target, run, early)
    code = exit_code(report, args.strict)
    report["exit_code"] = code
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(render_text(report, run, args.trace))
    return code


def exit_code(report: dict, strict: bool = False) -> int:
    """1 for a bug seen, else 2 when nothing could be verified (or, --strict, a finding was not), else 0."""
    from gradlint.verify.verdicts import CONFIRMED, NOT_PROBED, NOT_REACHED

    if report["runtime_only"] or any(v["verdict"] == CONFIRMED for v in report["verdicts"]):
        return EXIT_FINDINGS
    if report["run"]["unverified"]:
        return EXIT_ERROR
    if strict and any(v["verdict"] in (NOT_REACHED, NOT_PROBED) for v in report["verdicts"]):
        return EXIT_ERROR
    return EXIT_CLEAN


def static_findings(path: str):
    """The script's findings as `gradlint PATH` reports them: read with its project, so a finding
    stands on the misplaced call in whichever module of the project holds it."""
    from gradlint.check.engine import RunOptions, check_files
    from gradlint.options.settings import Settings

    results = check_files([(path, Settings.default())], RunOptions(jobs=1, roots=(path,)))
    findings = [finding for result in results for finding in result.findings]
    return findings, [error.message for result in results for error in result.errors]


def build_report(target: str, run, early=None) -> dict:
    from gradlint.verify import verdicts as verdicts_module
    from gradlint.verify.verdicts import end_reason, judge, unverified_reason

    home = run.target_file or os.path.realpath(target)
    # the script given as `../proj/train.py`: its folder is spelled relative, as the user spelled it
    relative = os.path.isfile(target) and not os.path.isabs(target)
    verdicts_module.SCRIPT_DIR = os.path.dirname(os.path.abspath(target)) if relative else None
    if early is not None and early[0] == home:
        findings, errors = early[1]
    else:
        findings, errors = static_findings(home) if os.path.isfile(home) else ([], ["file not found"])
    verdicts, runtime_only = judge(findings, run, home)
    names = [run.param(pid) for pid in sorted(run.params)]
    unique = len(set(names)) == len(names)

    def sites(entries):  # every path in one report spelled the same way, as the checker prints it
        return [[_display(entry[0]), *entry[1:]] for entry in entries or ()]

    def event_dict(event):
        data = {k: v for k, v in event.raw.items() if k not in ("type", "state")}
        data["sites"] = sites(data.get("sites"))
        if event.kind in ("S", "Z", "U", "O") and event.raw.get("oid") is not None:
            data["optimizer"] = run.optimizer(event.raw["oid"])
        data["state"] = {
            (run.param(int(pid)) if unique else pid): value for pid, value in event.raw.get("state", {}).items()
        }
        return data

    counts = {"confirmed": 0, "not reproduced": 0, "not reached": 0, "not probed": 0}
    for verdict in verdicts:
        counts[verdict.verdict] += 1
    counts["runtime only"] = len(runtime_only)
    return {
        "target": target,
        "file": _display(home),
        "run": {
            "reason": run.end.get("reason"),
            "summary": end_reason(run, home),
            "unverified": unverified_reason(run, home),
            "steps": run.steps,
            "steps_by_optimizer": {run.optimizer(oid): n for oid, n in sorted(run.steps_by_optimizer().items())},
            "subprocesses": [dict(s, sites=sites(s.get("sites"))) for s in run.subprocesses],
            "writes": [dict(w, path=_display(w.get("path"))) if w.get("redirected") else w for w in run.writes],
            "overlay": getattr(run, "overlay", None),
            "containment": getattr(run, "containment", None) or {"mode": "none"},
            "uncontained": [dict(u, sites=sites(u.get("sites"))) for u in getattr(run, "uncontained", ())],
            "end": {k: (_display(v) if k == "file" else v) for k, v in run.end.items() if k != "type"},
            "output_tail": run.output,
        },
        "static_errors": errors,
        "verdicts": [dict(v.to_dict(), path=_display(v.path)) for v in verdicts],
        "runtime_only": [
            {"code": d.code, "path": _display(d.file), "line": d.line, "col": d.col, "verdict": "runtime only",
             "evidence": d.evidence, "times": d.count}
            for d in runtime_only
        ],
        "summary": counts,
        "parameters": [
            {"pid": pid, "name": run.param(pid), "shape": run.params[pid].get("shape"),
             "optimizer": run.optimizer(run.params[pid].get("oid"))}
            for pid in sorted(run.params)
        ],
        "events": [event_dict(e) for e in run.events],
    }


def render_text(report: dict, run, trace: bool) -> str:
    from gradlint.rules.registry import rules_by_code
    from gradlint.verify.trace import format_trace

    rules = rules_by_code()
    out = []
    steps = report["run"]["steps"]
    out.append(
        f"gradlint verify {report['file']}: {steps} optimizer step{'s' if steps != 1 else ''}; "
        f"stopped because {report['run']['summary']}"
    )
    if trace:
        out.append("")
        out.append(format_trace(run, run.target_file))
    for error in report["static_errors"]:
        out.append(f"note: the static check could not read the file: {error}")
    entries = []
    for v in report["verdicts"]:
        entries.append((v["path"], v["line"], v["col"], v["code"], v["verdict"], v["message"], v["evidence"]))
    for d in report["runtime_only"]:
        rule = rules.get(d["code"])
        message = f"{rule.name}: {rule.summary}" if rule else ""
        entries.append((d["path"], d["line"], d["col"], d["code"], "runtime only", message, d["evidence"]))
    if entries:
        out.append("")
    for path, line, col, code, verdict, message, evidence in entries:
        place = f"{path}:{line}:{col}" if col else f"{path}:{line}"
        out.append(f"{place}: {code} {verdict}")
        if message:
            out.append(f"    {message}")
        out.append(f"    evidence: {evidence}")
    if not entries and not report["run"]["unverified"]:
        out.append("No static findings, and the run saw no gradient bug.")
    _render_writes(report["run"]["writes"], out, report["run"].get("overlay"), report["run"].get("containment"))
    _render_uncontained(report["run"].get("uncontained") or (), report["run"].get("containment") or {}, out)
    containment = report["run"].get("containment") or {}
    if containment.get("mode") == "namespace" and containment.get("network", "").startswith("host"):
        out.append("")
        out.append("note: the script had the host's network (--allow-network)")
    if containment.get("mode") == "python":
        out.append("")
        out.append("note: the Python mode passes /dev, /proc and /sys through and leaves the host's network open "
                   "(connections are listed above); the namespace mode cuts both")
    unverified = report["run"]["unverified"]
    if unverified:
        out.append("")
        out.append(f"could not verify: {unverified}")
    early = unverified or report["run"]["reason"] in ("exception", "crash")
    if early and report["run"]["output_tail"]:
        out.append("")
        out.append("script output (last lines):")
        out.extend("    " + line for line in report["run"]["output_tail"].splitlines())
    s = report["summary"]
    out.append("")
    out.append(
        f"{s['confirmed']} confirmed, {s['not reproduced']} not reproduced, {s['not reached']} not reached, "
        f"{s['not probed']} not probed, {s['runtime only']} runtime only."
    )
    return "\n".join(out)


def _render_writes(writes: list, out: list, overlay=None, containment=None) -> None:
    overlay = overlay or {}
    mode = (containment or {}).get("mode")
    refused = [w for w in writes if w.get("refused")]
    redirected = [w for w in writes if w.get("redirected")]
    allowed = [w for w in writes if not w.get("refused") and not w.get("redirected")]
    if redirected or overlay.get("kept") or overlay.get("error"):
        where = (f"kept in {overlay.get('path')}" if overlay.get("kept")
                 else f"{overlay.get('path')}, removed after the run: --keep-writes DIR keeps it")
        out.append("")
        if mode == "namespace":
            out.append(f"the script ran in its own namespaces: its writes, and those of every process it started, "
                       f"went to a kernel overlay ({where}), not to your files:")
        else:
            out.append(f"the script's writes through Python's file functions went to a copy-on-write overlay "
                       f"({where}):")
        out.extend(f"    {w['action']} {w['path']}" + (f" ({_size(w['size'])})" if "size" in w else "")
                   + (f" -> {w['target']}" if "target" in w else "") for w in redirected[:20])
        if len(redirected) > 20:
            out.append(f"    ... and {len(redirected) - 20} more (--format json lists them all)")
        if overlay.get("error"):
            out.append(f"    note: {overlay['error']}")
    if refused:
        out.append("")
        out.append(f"the script tried to write {len(refused)} file{'s' if len(refused) != 1 else ''}; "
                   "verify refused (re-run with --allow-writes to let it):")
        out.extend(f"    {w['action']} {w['path']}" for w in refused[:20])
    if allowed:
        out.append("")
        out.append(f"the script wrote {len(allowed)} file{'s' if len(allowed) != 1 else ''} (--allow-writes):")
        out.extend(f"    {w['action']} {w['path']}" for w in allowed[:20])


_ROUTES = {
    "subprocess": "started a process", "os.system": "ran a shell command", "os.exec": "replaced itself with",
    "os.posix_spawn": "started a process", "os.spawn": "started a process",
    "multiprocessing": "started a fresh interpreter (multiprocessing)", "ctypes": "called the C function",
    "new session": "left verify's process group:", "network": "connected to", "processes": "note:",
}


def _render_uncontained(uncontained, containment: dict, out: list) -> None:
    """What the Python-level overlay could not contain: listed, never called "not your files"."""
    if not uncontained:
        return
    out.append("")
    why = containment.get("namespace_unavailable")
    out.append("verify could not contain these (they ran outside its Python-level overlay and may have changed "
               "your files" + (f"; namespaces unavailable: {why}" if why else "") + "):")
    for entry in uncontained[:20]:
        sites = entry.get("sites") or []
        where = f" (line {sites[0][1]} of {sites[0][0]})" if sites else ""
        out.append(f"    {_ROUTES.get(entry.get('route'), entry.get('route'))} {entry.get('what')}{where}")
    if len(uncontained) > 20:
        out.append(f"    ... and {len(uncontained) - 20} more (--format json lists them all)")


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KB", "MB", "GB"):
        n /= 1024
        if n < 1024 or unit == "GB":
            break
    return f"{n:.1f} {unit}"
