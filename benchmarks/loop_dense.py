"""Loop-dense files: does the checker stay linear and close to libcst's own parse?

    python benchmarks/loop_dense.py [--sizes 2000,4000,8333]

For each size it writes a file of that many small training loops (five
lines each; from 8,000 loops on a blank line between them, as in issue 13) and
measures, each in a fresh child process so that peak memory is that run's
own: a bare `libcst.parse_module` of it, and `gradlint.engine.check_source`
on it (the whole analysis, one process, no cache).  Each child first handles
a one-loop file outside the clock (imports are a per-process cost).  Times are CPU seconds
of the child (less sensitive to other load on a shared machine than wall
time); memory is the child's peak RSS.  Ratios, not absolute times, are
the point: check / bare parse per file, and time and memory of each size
against the first (doubling a file should at most double them).  It ends with the
targets of issue 13 and exits 1 if one is missed:

* check / bare parse <= 1.5 at every size;
* peak memory of the check <= 300 MB for the 50,000-line file;
* time per loop at each size <= 1.1 times the first size's (doubling a file at
  most doubles the time; the tenth is measurement noise on a shared machine).

Files of PIECES_FROM lines and more are modelled in pieces
(gradlint/model/piecewise.py); the "second passes" column counts the pieces
that had to be modelled again once the whole file's bindings were known.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

HEADER = "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
LOOP = "for x, y in loader:\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
source = open(sys.argv[2]).read()
# Both sides first handle a one-loop file, outside the clock: imports and first-call
# set-up are a per-process cost (benchmarks/bench.py measures it), not a per-line one.
WARM = "import torch\nfor x in loader:\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n"
if sys.argv[1] == "parse":
    import libcst
    libcst.parse_module(WARM)
    start = time.process_time()
    libcst.parse_module(source)
else:
    from gradlint import engine
    from gradlint.model import piecewise
    from gradlint.settings import Settings
    import libcst  # imported before the clock starts, as for the bare parse
    builds = []
    run = piecewise._Build.run
    def counted(self, spans, source):
        builds.append(self)
        return run(self, spans, source)
    piecewise._Build.run = counted
    engine.check_source(WARM, "warm.py", Settings.default())
    start = time.process_time()
    result = engine.check_source(source, "dense.py", Settings.default())
    assert not result.errors, result.errors
    pieces = [len(b.pieces) for b in builds]
    second = [b.second_passes for b in builds]
seconds = time.process_time() - start
def peak_kb():
    # VmHWM is this process image's own peak; ru_maxrss starts at the parent's (Linux keeps it across exec)
    try:
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"seconds": seconds, "peak_mb": peak_kb() / 1024}
if sys.argv[1] == "check":
    out.update(pieces=sum(pieces), second_passes=sum(second))
print(json.dumps(out))
"""


def loop_dense(loops: int, blank: bool) -> str:
    return HEADER + (LOOP + ("\n" if blank else "")) * loops


def measure(what: str, path: str, repeat: int) -> dict:
    """The fastest of `repeat` fresh processes (other load on the machine only ever adds time)."""
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", CHILD, what, path, ROOT], capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout))
    return min(runs, key=lambda run: run["seconds"])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,4000,8333", help="loops per file, comma-separated")
    ap.add_argument("--repeat", type=int, default=3, help="processes per measurement (the fastest counts)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for loops in sizes:
            path = os.path.join(tmp, f"dense_{loops}.py")
            text = loop_dense(loops, blank=loops >= 8000)  # the 50,000-line file of issue 13
            with open(path, "w") as handle:
                handle.write(text)
            parse, check = measure("parse", path, args.repeat), measure("check", path, args.repeat)
            rows.append((loops, text.count("\n"), parse, check))
    first_loops, _, _, first = rows[0]
    print(
        "| loops | lines | bare parse s | check s | check / parse | check ms per loop | peak MB (parse / check) "
        "| KB per loop | time per loop vs first size | pieces (second passes) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios, growths = [], []
    for loops, lines, parse, check in rows:
        growth = (check["seconds"] / loops) / (first["seconds"] / first_loops)
        ratios.append(check["seconds"] / parse["seconds"])
        growths.append(growth)
        print(
            f"| {loops:,} | {lines:,} | {parse['seconds']:.2f} | {check['seconds']:.2f} | "
            f"{ratios[-1]:.2f} | {1000 * check['seconds'] / loops:.2f} | "
            f"{parse['peak_mb']:.0f} / {check['peak_mb']:.0f} | {1024 * check['peak_mb'] / loops:.0f} | {growth:.2f} | "
            f"{check['pieces']} ({check['second_passes']}) |"
        )
    largest = rows[-1]
    targets = [
        ("check / bare parse <= 1.5, worst size", max(ratios), 1.5),
        (f"peak MB of the check, {largest[1]:,} lines <= 300", largest[3]["peak_mb"], 300),
        ("time per loop vs first size <= 1.1, worst size", max(growths), 1.1),
    ]
    print()
    print("| target | measured | |")
    print("|---|---|---|")
    for name, value, limit in targets:
        print(f"| {name} | {value:.2f} | {'PASS' if value <= limit else 'FAIL'} |")
    return 0 if all(value <= limit for _, value, limit in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
