"""Run gradlint over real training code and record what it finds.

For every repository in repos.txt checked out under SRC/owner+name (see
checkout.py), runs the installed gradlint (``--output-format json``,
``--isolated``, no cache) over its .py files and notebooks, counts the
training loops gradlint models (with dump_loops.py), and writes one JSON
document: per repository its commit, files, loops and findings, plus
totals.  It also prints one line per finding, to compare with the table in
README.md.

Every run has a time limit (--timeout, per repository): a repository whose
run does not finish is re-run file by file under the same limit per file,
so the file that hangs is named (a "hang" in the totals) and the rest of
the repository is still counted.  A gradlint run that fails is a "crash".

    python benchmarks/realworld/study.py [--src /work/study/src] [-o results.json] [--timeout 900]

Each finding is printed with its verdict from verdicts.tsv (repository,
path, line, code, verdict, reason; tab-separated), or UNJUDGED: a finding
that moved or is new must be read and judged before the figures are kept.
`--table` prints the README's verdict rows (markdown) for the findings of
this run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from checkout import read_repo_list  # noqa: E402
from dump_loops import source_files  # noqa: E402


def read_verdicts(path: Path) -> dict[tuple[str, str, int, str], tuple[str, str]]:
    """(repository, path, line, code) -> (verdict, reason)."""
    verdicts = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                repo, file, number, code, verdict, reason = line.split("\t")
                verdicts[(repo, file, int(number), code)] = (verdict, reason)
    return verdicts


class Hang(Exception):
    """A run that did not finish in its time limit."""


def run_gradlint(paths: list[str], timeout: float) -> dict:
    """gradlint's JSON report for these paths (it walks directories itself)."""
    command = [sys.executable, "-m", "gradlint", "--isolated", "--no-cache", "--exit-zero",
               "--output-format", "json", *paths]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Hang(f"gradlint did not finish in {timeout:.0f} s") from None
    if done.returncode != 0:
        raise RuntimeError(f"gradlint failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return json.loads(done.stdout)


def run_file_by_file(files: list[str], timeout: float) -> tuple[dict, list[str]]:
    """The merged report of one run per file, and the files whose run did not finish."""
    merged: dict = {"findings": [], "errors": [], "files_checked": 0}
    hangs = []
    for path in files:
        try:
            report = run_gradlint([path], timeout)
        except Hang:
            hangs.append(path)
            continue
        merged["findings"] += report.get("findings", [])
        merged["errors"] += report.get("errors", [])
        merged["files_checked"] += report.get("files_checked") or 0
    return merged, hangs


def count_loops(folder: Path, timeout: float) -> tuple[int, list[str]]:
    """How many loops gradlint models under folder, and the files it could not model.

    Run as a child process (dump_loops.py --json) so a model that never
    finishes costs a time limit, not the study."""
    command = [sys.executable, str(HERE / "dump_loops.py"), "--json", str(folder)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 0, [f"loop count did not finish in {timeout:.0f} s"]
    loops = sum(len(json.loads(line)["loops"]) for line in done.stdout.splitlines() if line.strip())
    errors = [os.path.relpath(line.split(": cannot model", 1)[0], folder)
              for line in done.stderr.splitlines() if ": cannot model" in line]
    if done.returncode != 0:
        errors.append(f"dump_loops failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return loops, errors


def study_repo(folder: Path, timeout: float) -> dict:
    files = list(source_files([str(folder)]))
    # Notebooks are named one by one: a directory walk may not pick them up.
    notebooks = [f for f in files if f.endswith(".ipynb")]
    hangs: list[str] = []
    crash = None
    try:
        report = run_gradlint([str(folder), *notebooks], timeout)
    except Hang:
        report, hangs = run_file_by_file(files, timeout)
    except RuntimeError as exc:
        report, crash = {}, str(exc)
    loops, loop_errors = count_loops(folder, timeout)
    findings = [
        {
            "path": os.path.relpath(f["path"], folder),
            "line": f["line"],
            "code": f["code"],
            "message": f["message"],
        }
        for f in report.get("findings", [])
    ]
    return {
        "files": len(files),
        "notebooks": len(notebooks),
        "files_checked": report.get("files_checked"),
        "loops": loops,
        "findings": sorted(findings, key=lambda f: (f["path"], f["line"], f["code"])),
        "errors": [
            {"path": os.path.relpath(e.get("path", ""), folder), "message": e.get("message", "")}
            for e in report.get("errors", [])
        ],
        "loop_errors": loop_errors,
        "hangs": [os.path.relpath(h, folder) for h in hangs],
        "crash": crash,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("/work/study/src"))
    parser.add_argument("--repos", type=Path, default=HERE / "repos.txt")
    parser.add_argument("-o", "--output", type=Path, default=Path("/work/study/results.json"))
    parser.add_argument("--only", action="append", default=[], help="owner/name to run (repeatable)")
    parser.add_argument("--verdicts", type=Path, default=HERE / "verdicts.tsv")
    parser.add_argument("--table", action="store_true", help="also print the verdict table rows (markdown)")
    parser.add_argument("--timeout", type=float, default=900.0,
                        help="seconds a repository's run (or one file's, on the re-run) may take")
    args = parser.parse_args(argv)
    verdicts = read_verdicts(args.verdicts)
    judged: Counter = Counter()
    rows = []
    repos = {}
    for name, commit in read_repo_list(args.repos):
        if args.only and name not in args.only:
            continue
        folder = args.src / name.replace("/", "+")
        if not folder.is_dir():
            print(f"{name}: not checked out at {folder} (run checkout.py)", file=sys.stderr)
            continue
        started = time.monotonic()
        result = study_repo(folder, args.timeout)
        result["seconds"] = round(time.monotonic() - started, 1)
        result["commit"] = commit
        repos[name] = result
        for f in result["findings"]:
            verdict, reason = verdicts.get((name, f["path"], f["line"], f["code"]), ("UNJUDGED", ""))
            f["verdict"] = verdict
            judged[next((k for k in ("false alarm", "real bug") if verdict.startswith(k)), verdict)] += 1
            rows.append(f"| {name} | `{commit[:10]}` | {f['path']} | {f['line']} | {f['code']} | {verdict} | {reason} |")
            print(f"{name}/{f['path']}:{f['line']}: {f['code']} {f['message']}\n    -> {verdict}", flush=True)
        for hang in result["hangs"]:
            print(f"{name}/{hang}: HANG (no result in {args.timeout:.0f} s)", flush=True)
        if result["crash"]:
            print(f"{name}: CRASH {result['crash']}", flush=True)
    codes = Counter(f["code"] for r in repos.values() for f in r["findings"])
    totals = {
        "repos": len(repos),
        "files": sum(r["files"] for r in repos.values()),
        "loops": sum(r["loops"] for r in repos.values()),
        "findings": sum(codes.values()),
        "by_code": dict(sorted(codes.items())),
        "errors": sum(len(r["errors"]) for r in repos.values()),
        "hangs": sum(len(r["hangs"]) for r in repos.values()),
        "crashes": sum(1 for r in repos.values() if r["crash"]),
        "verdicts": dict(sorted(judged.items())),
    }
    args.output.write_text(json.dumps({"totals": totals, "repos": repos}, indent=1) + "\n")
    if args.table:
        print("\n".join(rows))
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
