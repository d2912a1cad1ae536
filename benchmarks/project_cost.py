"""What project-wide analysis costs on real trees (issue 27: at most 10% of a whole-tree run).

    python benchmarks/project_cost.py                       # the repositories of real_repos.txt
    python benchmarks/project_cost.py --src /work/study/src --only huggingface/diffusers

Per repository, in this one process and one after the other: a whole-tree check (`-j 1`, no
cache, as the command line runs it) with project-wide analysis, and the same check with the
project index replaced by an empty one (no file calls into another module), each timed in
CPU seconds of this process (the best of --repeat).  The ratio of the two is the cost of the
analysis: building the index, and modelling the loops that call into the project.  The
findings the analysis adds are counted too.  Exit 1 when the total ratio is above 1.10.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
TARGET = 1.10


def _run(tree: str) -> tuple[float, int]:
    from gradlint.run.discover import discover
    from gradlint.check.engine import RunOptions, check_files
    from gradlint.options.settings import Settings
    from gradlint.check.notebook import check_notebook_data

    start = time.process_time()
    files = discover([tree]).files
    # notebooks as the command line checks them (their cells, in the analysis), not as Python text
    options = RunOptions(jobs=1, cache_dir=None, roots=(tree,), notebooks=check_notebook_data)
    results = check_files([(p, Settings.default()) for p in files], options)
    return time.process_time() - start, sum(len(r.findings) for r in results)


def _without_project(tree: str) -> tuple[float, int]:
    from gradlint.run import project_run
    from gradlint.project.index import Index

    real = project_run.index_files

    def empty(files, roots=(), every_module=False):
        index = Index(roots)
        index.freeze()
        return index, {}

    project_run.index_files = empty
    try:
        return _run(tree)
    finally:
        project_run.index_files = real


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", default="/work/study/src")
    ap.add_argument("--list", default=str(HERE / "real_repos.txt"))
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    from gradlint.check.engine import load_analysis

    load_analysis()  # the imports, before the first timing
    rows = []
    for line in Path(args.list).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, *sub = line.split()
        if args.only and name not in args.only:
            continue
        tree = os.path.join(args.src, name.replace("/", "+"), *sub)
        if not os.path.isdir(tree):
            print(f"{name}: no checkout at {tree}", file=sys.stderr)
            continue
        with_, found = min(_run(tree) for _ in range(args.repeat))
        without, alone = min(_without_project(tree) for _ in range(args.repeat))
        rows.append((name, with_, without, found, alone))
        print(f"{name:<40} with {with_:7.2f} s  without {without:7.2f} s  ratio {with_ / without:5.3f}"
              f"  findings {found} (without: {alone})", flush=True)
    total_with = sum(r[1] for r in rows)
    total_without = sum(r[2] for r in rows)
    ratio = total_with / total_without if total_without else 0.0
    print(f"{'total':<40} with {total_with:7.2f} s  without {total_without:7.2f} s  ratio {ratio:5.3f}"
          f"  (target <= {TARGET}) {'PASS' if ratio <= TARGET else 'FAIL'}; load average {os.getloadavg()[0]:.1f}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
