"""Loop-dense files: does the checker stay linear and close to libcst's own parse?

    python benchmarks/loop_dense.py [--sizes 2000,4000,8333] [--function-sizes 2000,4000] [--literal-mb 7.7]

Three shapes of file, each measured in a fresh child process so that peak
memory is that run's own (each child first handles a one-loop file outside
the clock: imports are a per-process cost).  Times are CPU seconds of the
child (less sensitive to other load on a shared machine than wall time);
memory is the child's peak RSS; each figure is the fastest of --repeat runs.

* top-level: that many small five-line training loops at the top level (from
  8,000 loops on a blank line between them, as in issue 13);
* function: the same loops inside one `def train():` (issue 23: one
  top-level statement, so no pieces, and every loop shares one function);
* function, findings: as function, but no loop clears its gradients: one
  GL001 and its fix per loop (issue 23: each fix joined and walked the
  whole file again, so doubling the loops multiplied the time by 2.4 to 3);
* data literal: a list of --literal-mb megabytes of numbers on one line,
  then one training loop that never clears its gradients (issue 23: 25.8 s
  and 1.86 GB before); its one GL001 finding must still be reported.

Compared: a bare `libcst.parse_module` of the file, CPython's `ast.parse`
of the data-literal file, and `gradlint.check.engine.check_source` (the whole
analysis, one process, no cache) as the command line runs it for each file:
with the cyclic collector paused (gradlint/run/pool.py's collector_paused; the
bare parse runs as libcst's users run it, with the collector on).  Ratios, not absolute times, are the
point.  It ends with the targets of issues 13 and 23 and exits 1 if one
is missed:

* check / bare parse <= 1.5 at every size of the loop shapes;
* time per loop at each size <= 1.1 times the first size's, per shape
  (doubling a file at most doubles the time; the tenth is measurement noise
  on a shared machine), and peak memory per loop likewise;
* peak memory of the check <= 300 MB for the 50,000-line file and for the
  data-literal file;
* the data-literal check <= 0.5 times CPython's `ast.parse` of the file (a
  file with one loop should cost little more than reading it).

Files of PIECES_FROM lines and more are modelled in pieces
(gradlint/model/piecewise.py); the "second passes" column counts the pieces
that had to be modelled again once the whole file's bindings were known.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

HEADER = "import torch\nmodel = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
LOOP = "for x, y in loader:\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
# Never clears its gradients: one GL001, which the data-literal file must still report.
UNCLEARED_LOOP = "for x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[3])
source = open(sys.argv[2]).read()
# Both sides first handle a one-loop file, outside the clock: imports and first-call
# set-up are a per-process cost (benchmarks/bench.py measures it), not a per-line one.
WARM = "import torch\nfor x in loader:\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n"
out = {}
if sys.argv[1] == "parse":
    import libcst
    libcst.parse_module(WARM)
    start = time.process_time()
    libcst.parse_module(source)
elif sys.argv[1] == "ast":
    import ast
    ast.parse(WARM)
    start = time.process_time()
    ast.parse(source)
else:
    from gradlint.check import engine
    from gradlint.model import piecewise
    from gradlint.options.settings import Settings
    import libcst  # imported before the clock starts, as for the bare parse
    builds = []
    run = piecewise._Build.run
    def counted(self, *args, **kwargs):  # whatever run() takes: counted, not changed
        builds.append(self)
        return run(self, *args, **kwargs)
    piecewise._Build.run = counted
    from gradlint.run.pool import collector_paused
    engine.check_source(WARM, "warm.py", Settings.default())
    start = time.process_time()
    with collector_paused():  # as the command line checks each file (pool.guarded)
        result = engine.check_source(source, "dense.py", Settings.default())
    assert not result.errors, result.errors
    out.update(
        pieces=sum(len(b.pieces) for b in builds),
        second_passes=sum(b.second_passes for b in builds),
        findings=[[f.code, f.span.line] for f in result.findings],
    )
seconds = time.process_time() - start
def peak_kb():
    # VmHWM is this process image's own peak; ru_maxrss starts at the parent's (Linux keeps it across exec)
    try:
        return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out.update(seconds=seconds, peak_mb=peak_kb() / 1024)
print(json.dumps(out))
"""


def loop_dense(loops: int, blank: bool) -> str:
    return HEADER + (LOOP + ("\n" if blank else "")) * loops


def loops_in_one_function(loops: int, loop: str = LOOP) -> str:
    body = "".join("    " + line + "\n" for line in (loop * loops).splitlines())
    return HEADER + "def train():\n" + body


def data_literal(megabytes: float) -> str:
    """One assignment of a list of random numbers (about `megabytes` MB), then one loop."""
    rng = random.Random(23)
    count = int(megabytes * 1e6 / len("0.123456, "))
    numbers = ", ".join(f"{rng.random():.6f}" for _ in range(count))
    return HEADER + "DATA = [" + numbers + "]\n" + UNCLEARED_LOOP


def measure(what: str, path: str, repeat: int) -> dict:
    """The fastest of `repeat` fresh processes (other load on the machine only ever adds time)."""
    runs = []
    for _ in range(repeat):
        proc = subprocess.run([sys.executable, "-c", CHILD, what, path, ROOT], capture_output=True, text=True, check=True)
        runs.append(json.loads(proc.stdout))
    return min(runs, key=lambda run: run["seconds"])


def loop_table(title: str, rows: list) -> tuple[float, float, float]:
    """Print one shape's table; (worst check/parse, worst time per loop vs first, worst memory per loop vs first)."""
    first_loops, _, _, first = rows[0]
    print(f"\n{title}\n")
    print(
        "| loops | lines | bare parse s | check s | check / parse | check ms per loop | peak MB (parse / check) "
        "| KB per loop | time per loop vs first size | memory per loop vs first size | pieces (second passes) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, growths, memories = [], [], []
    for loops, lines, parse, check in rows:
        growth = (check["seconds"] / loops) / (first["seconds"] / first_loops)
        memory = (check["peak_mb"] / loops) / (first["peak_mb"] / first_loops)
        ratios.append(check["seconds"] / parse["seconds"])
        growths.append(growth)
        memories.append(memory)
        print(
            f"| {loops:,} | {lines:,} | {parse['seconds']:.2f} | {check['seconds']:.2f} | "
            f"{ratios[-1]:.2f} | {1000 * check['seconds'] / loops:.2f} | "
            f"{parse['peak_mb']:.0f} / {check['peak_mb']:.0f} | {1024 * check['peak_mb'] / loops:.0f} | {growth:.2f} | "
            f"{memory:.2f} | {check['pieces']} ({check['second_passes']}) |"
        )
    return max(ratios), max(growths), max(memories)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,4000,8333", help="top-level loops per file, comma-separated")
    ap.add_argument("--function-sizes", default="2000,4000", help="loops in one function per file, comma-separated")
    ap.add_argument("--findings-sizes", default="2000,4000", help="loops with a finding each in one function")
    ap.add_argument("--literal-mb", type=float, default=7.7, help="size of the data literal (0: leave it out)")
    ap.add_argument("--repeat", type=int, default=3, help="processes per measurement (the fastest counts)")
    args = ap.parse_args()
    shapes = [
        ("top-level", [int(s) for s in args.sizes.split(",") if s]),
        ("function", [int(s) for s in args.function_sizes.split(",") if s]),
        ("function, findings", [int(s) for s in args.findings_sizes.split(",") if s]),
    ]
    tables: dict[str, list] = {}
    literal = None
    with tempfile.TemporaryDirectory() as tmp:
        for shape, sizes in shapes:
            for loops in sizes:
                path = os.path.join(tmp, f"{shape.replace(', ', '_')}_{loops}.py")
                if shape == "top-level":
                    text = loop_dense(loops, blank=loops >= 8000)  # the 50,000-line file of issue 13
                elif shape == "function":
                    text = loops_in_one_function(loops)
                else:
                    text = loops_in_one_function(loops, UNCLEARED_LOOP)
                with open(path, "w") as handle:
                    handle.write(text)
                parse, check = measure("parse", path, args.repeat), measure("check", path, args.repeat)
                tables.setdefault(shape, []).append((loops, text.count("\n"), parse, check))
        if args.literal_mb > 0:
            path = os.path.join(tmp, "data_literal.py")
            text = data_literal(args.literal_mb)
            with open(path, "w") as handle:
                handle.write(text)
            literal = (len(text), measure("ast", path, 1), measure("check", path, args.repeat))
    targets = []
    titles = {
        "top-level": "Loops at the top level",
        "function": "Loops inside one `def train():`",
        "function, findings": "Loops inside one `def train():`, a GL001 and its fix per loop",
    }
    for shape, rows in tables.items():
        title = titles[shape]
        ratio, growth, memory = loop_table(title, rows)
        targets.append((f"{shape}: check / bare parse <= 1.5, worst size", ratio, 1.5))
        if len(rows) > 1:
            targets.append((f"{shape}: time per loop vs first size <= 1.1, worst size", growth, 1.1))
            targets.append((f"{shape}: memory per loop vs first size <= 1.1, worst size", memory, 1.1))
        largest = rows[-1]
        if shape == "top-level" and largest[1] >= 50_000:
            targets.append((f"top-level: peak MB of the check, {largest[1]:,} lines <= 300", largest[3]["peak_mb"], 300))
    if literal is not None:
        size, reference, check = literal
        print("\nA data literal and one loop\n")
        print("| MB | ast.parse s | ast.parse peak MB | check s | check / ast.parse | check peak MB | findings |")
        print("|---|---|---|---|---|---|---|")
        found = ", ".join(f"{code} line {line}" for code, line in check["findings"]) or "none"
        print(
            f"| {size / 1e6:.1f} | {reference['seconds']:.2f} | {reference['peak_mb']:.0f} | {check['seconds']:.2f} | "
            f"{check['seconds'] / reference['seconds']:.2f} | {check['peak_mb']:.0f} | {found} |"
        )
        targets.append(("data literal: check / ast.parse <= 0.5", check["seconds"] / reference["seconds"], 0.5))
        targets.append(("data literal: peak MB of the check <= 300", check["peak_mb"], 300))
        # GL001 at the loop's backward: after the header, the literal's line and the loop's first two lines
        expected = [["GL001", HEADER.count("\n") + 1 + UNCLEARED_LOOP.splitlines().index("    loss.backward()") + 1]]
        targets.append(("data literal: its loop's finding reported (1 = yes)", float(check["findings"] == expected), None))
    print()
    print("| target | measured | |")
    print("|---|---|---|")
    passed = []
    for name, value, limit in targets:
        ok = value == 1.0 if limit is None else value <= limit
        passed.append(ok)
        print(f"| {name} | {value:.2f} | {'PASS' if ok else 'FAIL'} |")
    return 0 if all(passed) else 1


if __name__ == "__main__":
    sys.exit(main())
