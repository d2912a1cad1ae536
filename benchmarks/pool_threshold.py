"""Does the worker pool pay for itself?  Default jobs against -j 1, per corpus size.

    python benchmarks/pool_threshold.py [--repeat N] [--gradlint-path DIR]

Each corpus is a directory of copies of real files (every copy needs an
analysis: the prefilter passes it).  gradlint runs through its CLI in a
subprocess with --no-cache, alternating default jobs and -j 1, best of N.
The figures are the ratios default / -j 1 of the elapsed time and of the
CPU time: above 1.0 the pool made the run slower (on a loaded machine the
CPU ratio is the steadier one).  A small run must not be slower because of the pool (issue 22:
30 small files were 1.4x slower with the default jobs).  Not a test:
timings belong here, never in the suite.  Ratios, not seconds, compare
across machines; the machine's load is printed with them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SMALL = os.path.join(ROOT, "fixtures", "gl002", "wrong_zero_grad_between.py")  # 0.5 KB, one finding


def _fixture_files() -> list[str]:
    found = []
    for folder, _, names in os.walk(os.path.join(ROOT, "fixtures")):
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
    return sorted(found)


def corpora(base: str) -> dict[str, str]:
    """name -> directory: few small files up to many files of every size."""
    layouts = {
        "8 small files": [SMALL] * 8,
        "30 small files": [SMALL] * 30,
        "100 small files": [SMALL] * 100,
        f"{len(_fixture_files())} fixture files": _fixture_files(),
        f"{4 * len(_fixture_files())} fixture files": _fixture_files() * 4,
    }
    made = {}
    for name, sources in layouts.items():
        directory = os.path.join(base, name.replace(" ", "_"))
        os.makedirs(directory)
        for i, source in enumerate(sources):
            shutil.copy(source, os.path.join(directory, f"f{i}.py"))
        made[name] = directory
    return made


def run(directory: str, extra: list[str], path: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of gradlint and its workers) of one run."""
    import resource

    env = dict(os.environ, PYTHONPATH=path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", "--exit-zero", *extra, directory],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _size(directory: str) -> int:
    return sum(os.path.getsize(os.path.join(directory, n)) for n in os.listdir(directory))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--gradlint-path", default=ROOT, help="the source tree to measure (default: this one)")
    args = parser.parse_args()
    print(f"gradlint from {args.gradlint_path}; cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    print("best of", args.repeat, "runs each; wall = elapsed, cpu = user+sys of gradlint and its workers")
    print(f"{'corpus':<22} {'KB':>5} {'wall default':>12} {'wall -j 1':>9} {'ratio':>6} {'cpu ratio':>9}")
    with tempfile.TemporaryDirectory() as base:
        for name, directory in corpora(base).items():
            default, single = [], []
            for _ in range(args.repeat):  # alternated: a load spike hits both
                default.append(run(directory, [], args.gradlint_path))
                single.append(run(directory, ["-j", "1"], args.gradlint_path))
            wall_d, wall_1 = min(w for w, _ in default), min(w for w, _ in single)
            cpu_d, cpu_1 = min(c for _, c in default), min(c for _, c in single)
            print(f"{name:<22} {_size(directory) // 1024:5d} {wall_d:11.2f}s {wall_1:8.2f}s"
                  f" {wall_d / wall_1:6.2f} {cpu_d / cpu_1:9.2f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
