"""`kill -9` at random moments of `gradlint --fix` (or `--add-noqa`): count what is left behind.

A tree of small fixable training scripts is fixed again and again; each run
gets SIGKILL at a random moment after it changed its first file, within the
time a whole run spends writing (the tree is watched every millisecond).  After
each kill the tree is inspected: a stray file (any name the tree did not
have: a temporary file of a write, in the sources or in the cache), and a
corrupt file (neither its old bytes nor the fixed ones).  The tree is then
restored for the next run.

    python benchmarks/kill_during_fix.py                      # 200 kills of --fix, this checkout
    python benchmarks/kill_during_fix.py --source /path/to/other/checkout   # compare another version
    python benchmarks/kill_during_fix.py --edit=--add-noqa --runs 100 --no-cache

Exits 1 when a file was corrupt or a stray file was left in the sources.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LOOP = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in range(10):
    loss = model(x).sum()
    loss.backward()
    opt.zero_grad()
    opt.step()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--files", type=int, default=40, help="fixable files in the tree")
    parser.add_argument("--edit", default="--fix", choices=["--fix", "--add-noqa"])
    parser.add_argument("--no-cache", action="store_true", help="run without the cache (by default it lives in the tree)")
    parser.add_argument("--source", default=os.path.dirname(HERE), help="the gradlint checkout to run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random.seed(args.seed)

    root = tempfile.mkdtemp(prefix="gradlint-kill-")
    tree = os.path.join(root, "tree")
    try:
        original = {}
        for i in range(args.files):
            path = os.path.join(tree, f"pkg{i % 4}", f"train_{i}.py")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            original[path] = (LOOP + f"# file {i}\n").encode()
        # Run from a folder of its own: `python -m` puts the current folder first on sys.path.
        env = dict(os.environ, PYTHONPATH=args.source, PYTHONDONTWRITEBYTECODE="1")
        command = [sys.executable, "-m", "gradlint", args.edit, "--isolated", tree]
        command[-1:-1] = ["--no-cache"] if args.no_cache else ["--cache-dir", os.path.join(tree, ".gradlint_cache")]

        def restore() -> None:
            shutil.rmtree(tree, ignore_errors=True)
            for path, data in original.items():
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(data)

        def names() -> set[str]:
            found = set()
            for directory, _, files in os.walk(tree):
                found.update(os.path.join(directory, name) for name in files)
            return found

        def identities() -> list:
            identity = []
            for path in original:
                try:
                    info = os.stat(path)
                    identity.append((info.st_ino, info.st_mtime_ns, info.st_size))
                except OSError:
                    identity.append(None)
            return identity

        def first_write(proc) -> "float | None":
            """Wait until the run changes a file of the tree (or ends); when it did, since when."""
            before = identities()
            started = time.perf_counter()
            while proc.poll() is None:
                if identities() != before:
                    return time.perf_counter() - started
                time.sleep(0.001)
            return None

        # Whole runs: what they write (the fixed files), and how long their writing lasts, from the
        # first file changed to the end of the run.
        stretches = []
        for _ in range(3):
            restore()
            proc = subprocess.Popen(command, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            first_write(proc)
            first = time.perf_counter()
            proc.wait()
            stretches.append(time.perf_counter() - first)
            stderr = proc.stderr.read().decode()
        fixed = {path: open(path, "rb").read() for path in original}
        assert all(fixed[p] != original[p] for p in original), stderr[-2000:]
        high = max(stretches)
        print(f"whole runs ({len(original)} files): the writes last {min(stretches):.2f} to {high:.2f} s;"
              f" {args.runs} kills at a random moment of that stretch")

        stray_sources = stray_cache = corrupt = 0
        phases = {"before the first write": 0, "during the writes": 0, "after the last write": 0, "not killed": 0}
        for _ in range(args.runs):
            restore()
            proc = subprocess.Popen(command, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            first_write(proc)
            time.sleep(random.uniform(0.0, high))
            alive = proc.poll() is None
            if alive:
                os.killpg(proc.pid, signal.SIGKILL)  # the run and any worker it started
            proc.wait()
            written = sum(1 for path, data in fixed.items() if open(path, "rb").read() == data)
            phase = ("not killed" if not alive else "before the first write" if written == 0
                     else "after the last write" if written == len(fixed) else "during the writes")
            phases[phase] += 1
            for path in names() - set(original):
                if os.sep + ".gradlint_cache" + os.sep in path and not path.endswith(".tmp"):
                    continue  # a finished cache entry, the cache's .gitignore
                if os.sep + ".gradlint_cache" + os.sep in path:
                    stray_cache += 1
                else:
                    stray_sources += 1
                    print("stray:", os.path.relpath(path, tree))
            for path, data in original.items():
                now = open(path, "rb").read()
                if now not in (data, fixed[path]):
                    corrupt += 1
                    print("corrupt:", os.path.relpath(path, tree))
        print("kills: " + ", ".join(f"{count} {phase}" for phase, count in phases.items()))
        print(f"left: {stray_sources} stray files in the sources, {stray_cache} in the cache, {corrupt} corrupt files")
        return 1 if stray_sources or corrupt else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
