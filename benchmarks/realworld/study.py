"""Run gradlint over real training code and record what it finds.

For every repository in repos.txt checked out under SRC/owner+name (see
checkout.py), runs the installed gradlint (``--output-format json``,
``--isolated``, no cache) over its .py files and notebooks, counts the
training loops gradlint models (with dump_loops.py), and writes one JSON
document: per repository its commit, files, loops and findings, plus
totals.  It also prints one line per finding, to compare with the table in
README.md.

    python benchmarks/realworld/study.py [--src /work/study/src] [-o results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from checkout import read_repo_list  # noqa: E402
from dump_loops import loops_of, source_files  # noqa: E402


def run_gradlint(paths: list[str]) -> dict:
    """gradlint's JSON report for these paths (it walks directories itself)."""
    command = [sys.executable, "-m", "gradlint", "--isolated", "--no-cache", "--exit-zero",
               "--output-format", "json", *paths]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"gradlint failed ({done.returncode}): {done.stderr.strip()[:500]}")
    return json.loads(done.stdout)


def study_repo(folder: Path) -> dict:
    files = list(source_files([str(folder)]))
    # Notebooks are named one by one: a directory walk may not pick them up.
    notebooks = [f for f in files if f.endswith(".ipynb")]
    report = run_gradlint([str(folder), *notebooks])
    loops = 0
    loop_errors = []
    for path in files:
        try:
            loops += len(loops_of(path))
        except Exception as exc:  # counted, not fatal: the report already has gradlint's own errors
            loop_errors.append(f"{os.path.relpath(path, folder)}: {type(exc).__name__}")
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
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path("/work/study/src"))
    parser.add_argument("--repos", type=Path, default=HERE / "repos.txt")
    parser.add_argument("-o", "--output", type=Path, default=Path("/work/study/results.json"))
    parser.add_argument("--only", action="append", default=[], help="owner/name to run (repeatable)")
    args = parser.parse_args(argv)
    repos = {}
    for name, commit in read_repo_list(args.repos):
        if args.only and name not in args.only:
            continue
        folder = args.src / name.replace("/", "+")
        if not folder.is_dir():
            print(f"{name}: not checked out at {folder} (run checkout.py)", file=sys.stderr)
            continue
        result = study_repo(folder)
        result["commit"] = commit
        repos[name] = result
        for f in result["findings"]:
            print(f"{name}/{f['path']}:{f['line']}: {f['code']} {f['message']}")
    codes = Counter(f["code"] for r in repos.values() for f in r["findings"])
    totals = {
        "repos": len(repos),
        "files": sum(r["files"] for r in repos.values()),
        "loops": sum(r["loops"] for r in repos.values()),
        "findings": sum(codes.values()),
        "by_code": dict(sorted(codes.items())),
        "errors": sum(len(r["errors"]) for r in repos.values()),
    }
    args.output.write_text(json.dumps({"totals": totals, "repos": repos}, indent=1) + "\n")
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
