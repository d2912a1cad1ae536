"""What project-wide analysis costs on a whole-tree run of the study, and what it newly finds.

For each repository under SRC, runs `gradlint --isolated --no-cache --exit-zero --output-format
json REPO` twice, once with a reference checkout of gradlint's code (BASE: say `git archive
<commit> gradlint | tar -x -C /tmp/base`) and once with this one, alternating which goes first,
and adds up the CPU time of each (user + system, workers included).  The JSON reports are kept
under OUT/base and OUT/new; `--diff` prints the findings one side has and the other has not.

    python benchmarks/realworld/project_cost.py --base /tmp/base --out /tmp/cost [owner+name ...]
    python benchmarks/realworld/project_cost.py --out /tmp/cost --diff
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def run(code: str, repo: Path, out: Path) -> float:
    env = dict(os.environ, PYTHONPATH=code)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "gradlint", "--isolated", "--no-cache", "--exit-zero", "--output-format", "json", str(repo)],
        capture_output=True, text=True, env=env, timeout=3600,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    out.mkdir(parents=True, exist_ok=True)
    (out / (repo.name + ".json")).write_text(done.stdout)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def diff(out: Path) -> None:
    for report in sorted((out / "new").glob("*.json")):
        try:
            new = json.loads(report.read_text())
            base = json.loads((out / "base" / report.name).read_text())
        except (OSError, ValueError):
            continue
        key = lambda f: (f["path"], f["line"], f["code"])  # noqa: E731
        before = {key(f) for f in base["findings"]}
        after = {key(f): f for f in new["findings"]}
        for k in sorted(set(after) - before):
            print("NEW", report.stem, *k, after[k]["message"])
        for k in sorted(before - set(after)):
            print("GONE", report.stem, *k)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", type=Path, default=Path("/work/study/src"))
    parser.add_argument("--base", help="a checkout of the reference code (its folder holds gradlint/)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--diff", action="store_true", help="print new and gone findings of the reports in OUT")
    parser.add_argument("only", nargs="*", help="owner+name folders to run (default: all)")
    args = parser.parse_args(argv)
    if args.diff:
        diff(args.out)
        return 0
    if not args.base:
        parser.error("--base is needed to measure")
    totals = {"base": 0.0, "new": 0.0}
    codes = {"base": args.base, "new": str(ROOT)}
    for number, repo in enumerate(sorted(p for p in args.src.iterdir() if p.is_dir())):
        if args.only and repo.name not in args.only:
            continue
        row = [repo.name]
        for side in ("base", "new") if number % 2 else ("new", "base"):
            seconds = run(codes[side], repo, args.out / side)
            totals[side] += seconds
            row.append(f"{side} {seconds:.2f}s")
        print("\t".join(row), flush=True)
    print(f"TOTAL base {totals['base']:.1f}s new {totals['new']:.1f}s ratio {totals['new'] / max(totals['base'], 1e-9):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
