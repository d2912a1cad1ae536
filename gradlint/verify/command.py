"""`gradlint verify`: arguments, output and exit codes.  Never imports torch.

    gradlint verify SCRIPT.py [--steps N] [--timeout S] [--trace] [--format text|json] [-- ARGS...]
    gradlint verify package.module:function [...]

Exit codes: 0 no finding confirmed and nothing runtime-only; 1 a finding was
confirmed or the run found a bug the checker did not flag; 2 usage error, no
torch, or the script could not be run at all.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import sys

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
INSTALL_HINT = "gradlint verify needs torch: pip install 'torch-gradlint[verify]' (or install torch first, then torch-gradlint)"
_ENTRY_POINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _UsageError(message)


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gradlint verify", description="Run a script under probes and give each static finding a verdict.")
    p.add_argument("target", help="a script (train.py) or an entry point (package.module:function)")
    p.add_argument("--steps", type=int, default=5, help="stop after this many optimizer steps (default 5)")
    p.add_argument("--timeout", type=float, default=60.0, help="stop after this many seconds (default 60)")
    p.add_argument("--trace", action="store_true", help="print every event and the gradient state after it")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    return p


def _split(argv):
    argv = list(argv)
    if "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def _display(path: str | None) -> str:
    if not path:
        return "?"
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _check_target(target: str) -> None:
    """Usage errors we can see without running anything."""
    if target.endswith(".py") or os.path.sep in target or not _ENTRY_POINT.match(target):
        if not os.path.isfile(target):
            raise _UsageError(f"no such script: {target} (give a .py file or package.module:function)")
        try:
            with open(target, "rb") as handle:
                compile(handle.read(), target, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise _UsageError(f"cannot run {target}: syntax error at line {exc.lineno}: {exc.msg}")
        except (OSError, ValueError) as exc:
            raise _UsageError(f"cannot read {target}: {exc}")


def main(argv) -> int:
    own, script_args = _split(argv)
    if own and own[0] in ("-h", "--help"):
        print(__doc__.strip())
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
    except _UsageError as exc:
        print(f"gradlint verify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR

    from gradlint.verify.runner import Child

    child = Child(args.target, script_args, steps=args.steps, timeout=args.timeout)
    early = None
    if os.path.isfile(args.target):  # check statically while the child imports torch
        early = (os.path.realpath(args.target), static_findings(args.target))
    run = child.wait()
    if not run.started or run.end.get("reason") == "not-started":
        reason = run.start_error or run.end.get("message") or "the child process did not start"
        print(f"gradlint verify: error: cannot run {args.target}: {reason}", file=sys.stderr)
        if run.output and not run.start_error:
            print(run.output, file=sys.stderr)
        return EXIT_ERROR

    report = build_report(args.target, run, early)
    if args.format == "json":
        print(json.dumps(report, indent=2))
    else:
        print(render_text(report, run, args.trace))
    confirmed = any(v["verdict"] == "confirmed" for v in report["verdicts"])
    return EXIT_FINDINGS if confirmed or report["runtime_only"] else EXIT_CLEAN


def static_findings(path: str):
    from gradlint.engine import check_file
    from gradlint.settings import Settings

    result = check_file(path, Settings.default())
    return result.findings, [e.message for e in result.errors]


def build_report(target: str, run, early=None) -> dict:
    from gradlint.verify.verdicts import end_reason, judge

    home = run.target_file or os.path.realpath(target)
    if early is not None and early[0] == home:
        findings, errors = early[1]
    else:
        findings, errors = static_findings(home) if os.path.isfile(home) else ([], ["file not found"])
    verdicts, runtime_only = judge(findings, run, home)
    names = [run.param(pid) for pid in sorted(run.params)]
    unique = len(set(names)) == len(names)

    def event_dict(event):
        data = {k: v for k, v in event.raw.items() if k not in ("type", "state")}
        if event.kind in ("S", "Z", "U", "O") and event.raw.get("oid") is not None:
            data["optimizer"] = run.optimizer(event.raw["oid"])
        data["state"] = {
            (run.param(int(pid)) if unique else pid): value for pid, value in event.raw.get("state", {}).items()
        }
        return data

    counts = {"confirmed": 0, "not reproduced": 0, "not reached": 0}
    for verdict in verdicts:
        counts[verdict.verdict] += 1
    counts["runtime only"] = len(runtime_only)
    return {
        "target": target,
        "file": _display(home),
        "run": {
            "reason": run.end.get("reason"),
            "summary": end_reason(run, home),
            "steps": run.steps,
            "end": {k: v for k, v in run.end.items() if k != "type"},
            "output_tail": run.output,
        },
        "static_errors": errors,
        "verdicts": [dict(v.to_dict(), path=_display(v.path)) for v in verdicts],
        "runtime_only": [
            {"code": d.code, "path": _display(d.file), "line": d.line, "verdict": "runtime only",
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
        entries.append((d["path"], d["line"], 0, d["code"], "runtime only", message, d["evidence"]))
    if entries:
        out.append("")
    for path, line, col, code, verdict, message, evidence in entries:
        place = f"{path}:{line}:{col}" if col else f"{path}:{line}"
        out.append(f"{place}: {code} {verdict}")
        if message:
            out.append(f"    {message}")
        out.append(f"    evidence: {evidence}")
    if not entries:
        out.append("No static findings, and the run saw no gradient bug.")
    if report["run"]["reason"] in ("exception", "crash") and report["run"]["output_tail"]:
        out.append("")
        out.append("script output (last lines):")
        out.extend("    " + line for line in report["run"]["output_tail"].splitlines())
    s = report["summary"]
    out.append("")
    out.append(
        f"{s['confirmed']} confirmed, {s['not reproduced']} not reproduced, {s['not reached']} not reached, "
        f"{s['runtime only']} runtime only."
    )
    return "\n".join(out)
