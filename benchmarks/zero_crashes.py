"""Run the checker over every .py of the installed standard library and torch:
no file may end in an internal-error.  Syntax errors (the stdlib's test data
holds deliberately broken files) are user input: listed, not failures.

    python benchmarks/zero_crashes.py [--every N]

A script rather than a test: over 4,000 files it takes longer than the suite
should.  Exit 1 when any internal error is found.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench import corpus_roots, python_files  # noqa: E402

from gradlint import engine  # noqa: E402
from gradlint.settings import Settings  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args()
    files = python_files(corpus_roots()[:2], args.every)
    settings = Settings(select=frozenset(c for c in Settings.default().select) | {"GL101", "GL102"})
    results = engine.check_files([(p, settings) for p in files], engine.RunOptions(jobs=args.jobs))
    internal = [e for r in results for e in r.errors if e.kind == "internal-error"]
    syntax = [e for r in results for e in r.errors if e.kind == "syntax-error"]
    for e in syntax:
        print(f"syntax error (user input): {e.path}:{e.line}:{e.col}: {e.message}")
    for e in internal:
        print(f"INTERNAL ERROR: {e.path}: {e.message}")
    print(f"{len(files)} files, {sum(len(r.findings) for r in results)} findings, "
          f"{len(syntax)} syntax errors, {len(internal)} internal errors")
    return 1 if internal else 0


if __name__ == "__main__":
    sys.exit(main())
