"""Shapes whose cost once grew faster than the file (issues 34, 48): nesting, one huge line, and more.

    python benchmarks/growth.py                      # the shapes, with their targets
    python benchmarks/growth.py --corpus DIR [DIR...]  # how close real loops come to the bounds

* Nested loops: `for` loops nested 1 to 8 deep around one clear, backward and step (a
  file of a few hundred bytes).  Each level of nesting used to multiply the time by 5 to
  15 (seven levels: past the 30 s limit).  Each loop's enumeration is now bounded by its
  model's size (gradlint/model/flow.py), so from the depth where the bound is reached each
  level adds about the same.  Targets: 8 levels at most 0.5 s, and the time level 8 adds at
  most 1.5 times what level 7 added (CPU, in one process, imports excluded).
* One huge line inside a training loop (`z = [x.y, x.y, ...]`, --line-mb megabytes):
  libcst needs about 2 KB of memory per byte of such a statement (13 GB and more for
  7 MB).  Target: the command line answers with one error line, within the time limit,
  under 300 MB of peak memory; a smaller line of the same shape (--small-kb) is still
  analysed (its finding is reported).
* One function holding 1,000, 2,000 and 4,000 copies of a five-line loop (issue 48: the
  project scan placed every event by walking back over every loop before it).  Targets:
  doubling the loops costs at most 2.2 times (command line CPU, -j 1, no cache), and the
  20,000-line file's analysis at most 1.5 times its bare libcst parse.
* 250, 500 and 1,000 modules of one package, each importing 20 helpers of the others and
  calling one in a loop (issue 48: every file's view walked the import graph four levels
  deep on its own).  Target: doubling the modules costs at most 2.2 times.
* One statement holding 2,000, 4,000 and 8,000 steps (`z = [opt.step(), ...]`, one per line)
  before the loop's backward: each is a GL007 (issue 48: each finding's fix plan and each step's
  look back over the walk cost the square of the steps).  Target: doubling the steps costs at
  most 2.2 times (the analysis's CPU, one process).
* Four statements of 500 KB each in a training loop (issue 48: libcst aborted the process).
  Target: the loop's GL001 is reported (the data is blanked before any parse).
* `--corpus`: the steps of each loop's path enumeration and the events of its walks, per
  node of its model, the largest over every loop of the trees given, against the bounds of
  gradlint/model/flow.py (STEPS_PER_NODE, WALK_EVENTS_PER_NODE).

Exits 1 when a target is missed.
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
sys.path.insert(0, ROOT)

HEADER = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"


def nested(depth: int) -> str:
    lines, indent = [], ""
    for level in range(depth):
        lines.append(f"{indent}for i{level} in range(2):")
        indent += "    "
    lines += [f"{indent}opt.zero_grad()", f"{indent}model(x).sum().backward()", f"{indent}opt.step()"]
    return HEADER + "\n".join(lines) + "\n"


def huge_line(chars: int) -> str:
    """A training loop that never clears (one GL001), with a line of about `chars` characters."""
    items = ", ".join(["x.y"] * max(1, chars // 5))
    return HEADER + f"for x in loader:\n    z = [{items}]\n    model(x).sum().backward()\n    opt.step()\n"


TIMED = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from gradlint.check.engine import check_source
check_source(open(sys.argv[2]).read(), "warm.py")  # imports and first calls: not timed
out = []
for path in sys.argv[3:]:
    source = open(path).read()
    start = time.process_time()
    result = check_source(source, path)
    out.append((time.process_time() - start, len(result.findings), len(result.errors)))
print(json.dumps(out))
"""


def nesting_rows(tmp: str) -> list[tuple[int, float]]:
    paths = []
    for depth in range(1, 9):
        path = os.path.join(tmp, f"nest{depth}.py")
        with open(path, "w") as handle:
            handle.write(nested(depth))
        paths.append(path)
    proc = subprocess.run([sys.executable, "-c", TIMED, ROOT, paths[0], *paths], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return [(depth, seconds) for depth, (seconds, _, _) in zip(range(1, 9), json.loads(proc.stdout))]


def cli(path: str) -> tuple[float, int, int, str]:
    """CPU seconds, peak RSS in MB, exit code, output of `gradlint --no-cache path` in a child."""
    runner = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'gradlint', '--no-cache', sys.argv[1]], capture_output=True, text=True)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss // 1024, p.returncode)\n"
        "print(p.stdout + p.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", runner, path], capture_output=True, text=True, cwd=ROOT, timeout=900)
    first, _, output = proc.stdout.partition("\n")
    cpu, rss, code = first.split()
    return float(cpu), int(rss), int(code), output.strip()


def corpus(roots: list[str]) -> int:
    """The largest steps and walk events per model node over every loop of the trees."""
    from gradlint.run.discover import discover
    from gradlint.check.engine import check_files
    from gradlint.model import flow
    from gradlint.options.settings import Settings

    worst = {"steps": (0.0, ""), "walk events": (0.0, "")}
    current = {"path": ""}
    real_paths, real_walks = flow.iteration_paths, flow._walk_events

    def paths(loop):
        size = max(flow.model_size(loop.body), 1)
        run_class = flow._Enumeration
        used = {}

        class Counted(run_class):
            def __init__(self, n):
                super().__init__(n)
                used["run"] = self

        flow._Enumeration = Counted
        try:
            found = real_paths(loop)
        finally:
            flow._Enumeration = run_class
        run = used["run"]
        steps = (flow.STEPS_PER_NODE * size - run.steps_left) / size
        where = f"{current['path']}:{loop.span.line}"
        if steps > worst["steps"][0]:
            worst["steps"] = (steps, where)
        if found is not None:
            events = real_walks(found) / size
            if events > worst["walk events"][0]:
                worst["walk events"] = (events, where)
        return found

    flow.iteration_paths = paths
    import gradlint.check.engine as engine

    real_check = engine.check_source

    def check_source(source, path, *args, **kwargs):
        current["path"] = path
        return real_check(source, path, *args, **kwargs)

    engine.check_source = check_source
    files = [path for root in roots for path in discover([root]).files if path.endswith(".py")]
    check_files([(path, Settings.default()) for path in files], engine.RunOptions(jobs=1))
    print(f"{len(files)} files")
    for name, bound in (("steps", flow.STEPS_PER_NODE), ("walk events", flow.WALK_EVENTS_PER_NODE)):
        value, where = worst[name]
        print(f"  largest {name} per model node: {value:10.1f} (bound {bound}, {value / bound:.4f} of it) at {where}")
    return 0 if all(worst[name][0] <= bound for name, bound in
                    (("steps", flow.STEPS_PER_NODE), ("walk events", flow.WALK_EVENTS_PER_NODE))) else 1


def loops_in_one_function(loops: int) -> str:
    """One function holding `loops` copies of a five-line training loop (generated, notebook-exported code)."""
    loop = ["    for b in loader:", "        loss = model(b).sum()", "        loss.backward()",
            "        opt.zero_grad()", "        opt.step()"]
    return "import torch\n\ndef main(model, loader, opt):\n" + "\n".join(loop * loops) + "\n"


def package(root: str, modules: int, imports: int = 20) -> str:
    """`modules` modules of one package, each importing `imports` helpers of the others and calling
    one in a small training loop (no finding); returns the folder to check."""
    folder = os.path.join(root, f"pkg{modules}")
    os.makedirs(os.path.join(folder, "pkg"))
    open(os.path.join(folder, "pkg", "__init__.py"), "w").close()
    for i in range(modules):
        others = [(i + 1 + 7 * step) % modules for step in range(imports)]
        with open(os.path.join(folder, "pkg", f"m{i}.py"), "w") as handle:
            handle.write("".join(f"from pkg.m{j} import update_{j}\n" for j in others))
            handle.write(f"\n\ndef update_{i}(model, opt, batch):\n    opt.zero_grad()\n    model(batch).sum().backward()\n"
                         f"    opt.step()\n\n\ndef train(model, opt, loader):\n    for batch in loader:\n"
                         f"        update_{others[0]}(model, opt, batch)\n")
    return folder


def big_statements(count: int = 100_000) -> str:
    """A loop that never clears (one GL001) holding four statements of about 5 * count characters."""
    items = ", ".join(["x.y"] * count)
    return HEADER + "for x in loader:\n" + "".join(f"    z{k} = [{items}]\n" for k in range(4)) + \
        "    model(x).sum().backward()\n    opt.step()\n"


def steps_in_one_statement(steps: int) -> str:
    """A loop whose one statement holds `steps` steps before its backward (a GL007 each)."""
    items = ",\n        ".join(["opt.step()"] * steps)
    return HEADER + f"for x in loader:\n    z = [\n        {items}\n    ]\n    model(x).sum().backward()\n    opt.step()\n"


def cli_cpu(args: list, cwd: str = ROOT) -> tuple[float, int, str]:
    """CPU seconds, exit code and output of `gradlint --no-cache -j 1 *args` in a child."""
    runner = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-m', 'gradlint', '--no-cache', '-j', '1', '--file-timeout', '600'] + sys.argv[1:],"
        " capture_output=True, text=True)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(u.ru_utime + u.ru_stime, p.returncode)\n"
        "print(p.stdout + p.stderr)\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", runner, *args], capture_output=True, text=True, cwd=cwd, timeout=1800, env=env)
    first, _, output = proc.stdout.partition("\n")
    cpu, code = first.split()
    return float(cpu), int(code), output.strip()


BARE_PARSE = r"""
import sys, time
import libcst
libcst.parse_module("x = 1\n")
source = open(sys.argv[1]).read()
start = time.process_time()
libcst.parse_module(source)
print(time.process_time() - start)
"""


def bare_parse(path: str) -> float:
    proc = subprocess.run([sys.executable, "-c", BARE_PARSE, path], capture_output=True, text=True, check=True, timeout=900)
    return float(proc.stdout)


ANALYSIS = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from gradlint.check.engine import check_source
from gradlint.options.settings import Settings
from gradlint.run.pool import collector_paused
check_source("import torch\nfor x in loader:\n    opt.zero_grad()\n    model(x).sum().backward()\n    opt.step()\n", "warm.py")
source = open(sys.argv[2]).read()
start = time.process_time()
with collector_paused():  # as the command line checks each file
    check_source(source, sys.argv[2], Settings.default())
print(time.process_time() - start)
"""


def analysis(path: str) -> float:
    """CPU seconds of the whole analysis of one file (check_source) in a fresh child."""
    proc = subprocess.run([sys.executable, "-c", ANALYSIS, ROOT, path], capture_output=True, text=True, check=True, timeout=900)
    return float(proc.stdout)


def new_shapes(tmp: str, targets: list) -> None:
    """Issue 48's shapes: loops in one function, modules of one package, big statements."""
    print("one function of N five-line loops (CLI CPU s, -j 1, no cache)")
    cpus = []
    for loops in (1_000, 2_000, 4_000):
        path = os.path.join(tmp, f"function{loops}.py")
        with open(path, "w") as handle:
            handle.write(loops_in_one_function(loops))
        cpu, code, output = cli_cpu([path])
        cpus.append(cpu)
        print(f"  {loops:6,} loops  {cpu:7.2f} s  exit {code}  {output.splitlines()[-1][:60]}")
    targets.append(("loops in one function: 4,000 / 2,000 loops <= 2.2", cpus[2] / cpus[1], 2.2))
    checked, parsed = analysis(path), bare_parse(path)
    print(f"  20,000 lines: analysis {checked:.2f} s, bare libcst parse {parsed:.2f} s")
    targets.append(("20,000 lines in one function: analysis / bare parse <= 1.5", checked / parsed, 1.5))
    print("one statement of N steps before the loop's backward (CPU s of the analysis, one process)")
    cpus = []
    for steps in (2_000, 4_000, 8_000):
        path = os.path.join(tmp, f"steps{steps}.py")
        with open(path, "w") as handle:
            handle.write(steps_in_one_statement(steps))
        cpus.append(analysis(path))
        print(f"  {steps:6,} steps  {cpus[-1]:7.2f} s")
    targets.append(("steps in one statement: 8,000 / 4,000 steps <= 2.2", cpus[2] / cpus[1], 2.2))
    print("N modules of one package, 20 imports each (CLI CPU s, -j 1, no cache)")
    cpus = []
    for modules in (250, 500, 1_000):
        folder = package(tmp, modules)
        cpu, code, output = cli_cpu(["pkg"], cwd=folder)
        cpus.append(cpu)
        print(f"  {modules:6,} modules  {cpu:7.2f} s  exit {code}  {output.splitlines()[-1][:60]}")
    targets.append(("modules of a package: 1,000 / 500 modules <= 2.2", cpus[2] / cpus[1], 2.2))
    path = os.path.join(tmp, "big_statements.py")
    with open(path, "w") as handle:
        handle.write(big_statements())
    cpu, code, output = cli_cpu([path])
    print(f"four statements of 500 KB in a loop: {cpu:.2f} CPU s, exit {code}")
    print("  " + output.replace("\n", "\n  "))
    targets.append(("four 500 KB statements: the loop's GL001 reported", float("GL001" in output and code == 1), 1.0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line-mb", type=float, default=7.0)
    ap.add_argument("--small-kb", type=float, default=20.0)
    ap.add_argument("--corpus", nargs="+", help="trees whose loops are measured against the bounds")
    args = ap.parse_args()
    if args.corpus:
        return corpus(args.corpus)
    targets = []
    with tempfile.TemporaryDirectory() as tmp:
        rows = nesting_rows(tmp)
        print("nested for loops around one clear, backward and step (CPU s of the analysis, one process)")
        for depth, seconds in rows:
            print(f"  {depth} levels  {seconds:7.3f} s")
        times = [seconds for _, seconds in rows]
        targets.append(("8 levels: seconds <= 0.5", times[-1], 0.5))
        # linear once the budget caps each loop: the last level adds no more than the one before it
        added = (times[-1] - times[-2]) / max(times[-2] - times[-3], 1e-3)
        targets.append(("time added by level 8 / by level 7 <= 1.5", added, 1.5))
        for label, chars in (("small", int(args.small_kb * 1024)), ("huge", int(args.line_mb * 1024 * 1024))):
            path = os.path.join(tmp, f"line_{label}.py")
            with open(path, "w") as handle:
                handle.write(huge_line(chars))
            cpu, rss, code, output = cli(path)
            print(f"one line of {chars / 1024:,.0f} KB in a training loop: {cpu:.2f} CPU s, {rss} MB peak, exit {code}")
            print("  " + output.replace("\n", "\n  "))
            if label == "small":
                targets.append(("the smaller line is analysed (its GL001 found)", float("GL001" in output), 1.0))
            else:
                targets.append(("the huge line: peak MB <= 300", rss, 300))
                targets.append(("the huge line: one error line", float(output.count("error:") == 1 and code in (1, 2)), 1.0))
        new_shapes(tmp, targets)
    print("targets:")
    ok = True
    for name, value, limit in targets:
        passed = value <= limit if "<=" in name else value >= limit
        ok &= passed
        print(f"  {name:<52} {value:9.3f}  (target {'<=' if '<=' in name else '>='} {limit:.3f})  {'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
