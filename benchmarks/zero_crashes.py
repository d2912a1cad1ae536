"""Run the checker over real code: the standard library, every package of the
environment's site-packages (torch included) and the notebooks of the
real-code study (/work/study/src, when present).  No file may end in an
internal error; a worker process that dies is one, too.  Syntax errors (the
stdlib's test data holds deliberately broken files, site-packages holds
Python 2 leftovers) and too-deep nesting are user input: counted, not failures.

    python benchmarks/zero_crashes.py [--every N] [--jobs N] [--root DIR ...]

A script rather than a test: over tens of thousands of files it takes longer
than the suite should.  Exit 1 when any internal error is found.  All rules
are on (GL101, GL102 too), so every rule's code runs on every loop found.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import sysconfig
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench import python_files  # noqa: E402

from gradlint.check import engine  # noqa: E402
from gradlint.rules.registry import all_rules  # noqa: E402
from gradlint.options.settings import Settings  # noqa: E402

STUDY_NOTEBOOKS = "/work/study/src"


def default_roots() -> list[str]:
    roots = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    if sysconfig.get_paths()["platlib"] not in roots:
        roots.append(sysconfig.get_paths()["platlib"])
    return roots


def notebooks(root: str) -> list[str]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".ipynb")]
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1, help="check every N-th file only")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--root", action="append", help="instead of the stdlib and site-packages")
    args = ap.parse_args()
    files = python_files(args.root or default_roots(), args.every)
    settings = Settings(select=frozenset(rule.code for rule in all_rules()))
    start = time.perf_counter()
    results = engine.check_files([(p, settings) for p in files], engine.RunOptions(jobs=args.jobs))
    books = notebooks(STUDY_NOTEBOOKS) if os.path.isdir(STUDY_NOTEBOOKS) and not args.root else []
    if books:
        from gradlint.check.notebook import check_notebook

        results += [check_notebook(p, settings)[0] for p in books[:: args.every]]
    elapsed = time.perf_counter() - start
    errors = [e for r in results for e in r.errors]
    kinds = collections.Counter(e.kind for e in errors)
    for e in errors:
        if e.kind != "internal-error":
            print(f"{e.kind} (user input): {e.path}:{e.line}:{e.col}: {e.message}")
    internal = [e for e in errors if e.kind == "internal-error"]
    for e in internal:
        print(f"INTERNAL ERROR: {e.path}: {e.message}")
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()) if kind != "internal-error")
    print(
        f"{len(files)} .py files ({sum(_lines(p) for p in files):,} lines) and {len(books[:: args.every])} "
        f"notebooks in {elapsed:.0f} s: {sum(len(r.findings) for r in results)} findings, "
        f"{counts + ', ' if counts else ''}{len(internal)} internal errors"
    )
    return 1 if internal else 0


def _lines(path: str) -> int:
    try:
        with open(path, "rb") as handle:
            return handle.read().count(b"\n")
    except OSError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
