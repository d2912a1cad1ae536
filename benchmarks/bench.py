"""Speed of gradlint against its references, measured side by side in one run.

    python benchmarks/bench.py            # the whole corpus, then the real repositories (minutes)
    python benchmarks/bench.py --every 10 # every 10th file, for a quick look
    python benchmarks/bench.py --no-real-repos   # the standard-library corpus only

Two corpora.  The real repositories (benchmarks/real_repos.py: eight pinned ML
repositories, gradlint's users' code) against ruff, the headline figure; then
the installed standard library, the installed torch package and the project's
fixtures/, where the prefilter passes over most files.  gradlint runs through
its CLI in a subprocess.  Prints every figure, its ratio and PASS/FAIL against
the targets (issues 6 and 28); exits 1 when one is missed.  Not a test:
timings belong here, never in the suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VENV_BIN = os.path.dirname(sys.executable)
SKIP_DIRS = {"__pycache__", "site-packages"}


def corpus_roots() -> list[str]:
    import importlib.util

    torch_dir = os.path.dirname(importlib.util.find_spec("torch").origin)
    return [sysconfig.get_paths()["stdlib"], torch_dir, os.path.join(ROOT, "fixtures")]


def python_files(roots: list[str], every: int) -> list[str]:
    files = []
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
    return files[::every]


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and theirs."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _machine_busy() -> float | None:
    """CPU seconds every process on the machine has used since boot (/proc/stat), None elsewhere."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


# What each timed run cost in CPU and what the rest of the machine used meanwhile, by row name:
# the wall times below are only comparable when the others used (next to) nothing.
CONTEXT: dict[str, tuple[float, float | None]] = {}


def measured(name: str, fn):
    """fn() (which runs child processes), recording its children's CPU seconds and the CPU
    seconds every other process on the machine used meanwhile under `name`."""
    cpu, busy = _children_cpu(), _machine_busy()
    result = fn()
    ours = _children_cpu() - cpu
    after = _machine_busy()
    others = None if busy is None or after is None else max(0.0, after - busy - ours)
    CONTEXT[name] = (ours, others)
    return result


def timed(cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    return time.perf_counter() - start, proc


def bare_parse(files: list[str]) -> float:
    """libcst.parse_module of every file, one process (a child, so its import is not counted)."""
    code = (
        "import sys, time, libcst\n"
        "paths = sys.stdin.read().split('\\n')\n"
        "t = time.perf_counter()\n"
        "for p in paths:\n"
        "    try:\n"
        "        libcst.parse_module(open(p, 'rb').read())\n"
        "    except Exception:\n"
        "        pass\n"
        "print(time.perf_counter() - t)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], input="\n".join(files), capture_output=True, text=True)
    return float(proc.stdout.strip().splitlines()[-1])


def gradlint_run(files: list[str], extra: list[str], list_file: str) -> tuple[float, subprocess.CompletedProcess, int]:
    """gradlint's CLI on `files`; wall time, the process, the peak RSS (KiB) of the children."""
    with open(list_file, "w") as handle:
        handle.write("\n".join(files))
    runner = (
        "import resource, subprocess, sys, time\n"
        "files = open(sys.argv[1]).read().split('\\n')\n"
        "t = time.perf_counter()\n"
        "p = subprocess.run([sys.executable, '-m', 'gradlint', '--exit-zero', *sys.argv[2:], *files],"
        " stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "sys.stdout.write(f'{dt} {rss} {p.returncode}\\n'); sys.stderr.write(p.stderr[-2000:])\n"
    )
    proc = subprocess.run([sys.executable, "-c", runner, list_file, *extra], capture_output=True, text=True, cwd=ROOT)
    dt, rss, code = proc.stdout.split()
    return float(dt), proc, int(rss)


def prefiltered(files: list[str]) -> list[str]:
    sys.path.insert(0, ROOT)
    from gradlint.check.engine import decode
    from gradlint.check.prefilter import may_hold_events

    out = []
    for path in files:
        text, error = decode(open(path, "rb").read(), path)
        if text is not None and may_hold_events(text):
            out.append(path)
    return out


def best(n: int, fn):
    return min(fn() for _ in range(n))


def as_installed() -> None:
    """Measure gradlint as `pip install` leaves it: its modules compiled to bytecode.

    An editable checkout has no __pycache__ until a run writes one, and none is
    ever written under PYTHONDONTWRITEBYTECODE (set on these machines): every
    process would then compile gradlint's sources again (40 ms), unlike the
    libcst it is compared with.  setuptools' default editable finder also costs
    every Python process (libcst's import included) 10 ms of start-up;
    `pip install -e . --config-settings editable_mode=compat` (docs/development.md) does not.
    """
    import compileall

    compileall.compile_dir(os.path.join(ROOT, "gradlint"), quiet=1)
    finders = [name for name in sys.modules if name.startswith("__editable__") and name.endswith("finder")]
    if finders:
        print(f"note: {finders[0]} is installed: every process pays its start-up (see docs/development.md, Setting up)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--every", type=int, default=1, help="take every Nth file (quick run)")
    ap.add_argument("--no-real-repos", action="store_true", help="skip the real-repository benchmark")
    ap.add_argument("--src", default="/work/study/src", help="the real repositories' checkouts (real_repos.py)")
    ap.add_argument("--real-repeat", type=int, default=1, help="runs per command of the real-repository benchmark")
    args = ap.parse_args()
    as_installed()
    real = 0
    if not args.no_real_repos:
        sys.path.insert(0, HERE)
        import real_repos

        print("== the real repositories (benchmarks/real_repos.py) ==", flush=True)
        real = real_repos.main(["--src", args.src, "--repeat", str(args.real_repeat)])
        print("\n== the standard library, torch and fixtures/ ==", flush=True)
    files = python_files(corpus_roots(), args.every)
    lines = sum(open(p, "rb").read().count(b"\n") for p in files)
    passing = prefiltered(files)
    passing_lines = sum(open(p, "rb").read().count(b"\n") for p in passing)
    print(f"corpus: {len(files)} files, {lines:,} lines; {len(passing)} files ({passing_lines:,} lines) pass the prefilter")
    print(f"machine: {os.cpu_count()} cores, {_cpu()}, python {sys.version.split()[0]}")
    tmp = tempfile.mkdtemp(prefix="gradlint-bench-")
    list_file = os.path.join(tmp, "files.txt")
    rows: list[tuple[str, float]] = []
    try:
        ref = bare_parse(files)
        rows.append(("bare libcst.parse_module, every file, 1 process", ref))
        ruff = os.path.join(VENV_BIN, "ruff")
        ruff_cmd = [ruff, "check", "--no-cache", "--select", "ALL", "--exit-zero", "--output-format", "concise",
                    "--no-respect-gitignore", "--isolated", *files]
        ruff_name = "ruff check --no-cache --select ALL"
        ruff_t = measured(ruff_name, lambda: timed(ruff_cmd)[0])  # the first of the best of 2
        ruff_t = min(ruff_t, timed(ruff_cmd)[0])
        rows.append((ruff_name, ruff_t))
        cache = os.path.join(tmp, "cache")
        cold_name = "gradlint cold (fresh cache dir)"
        cold, proc, rss = measured(cold_name, lambda: gradlint_run(files, ["--cache-dir", cache], list_file))
        if proc.stderr.strip():
            print("gradlint stderr:", proc.stderr.strip()[-500:])
        # the best of 2, as ruff's: one slow run under passing load should not decide the ratio
        again, _, _ = gradlint_run(files, ["--cache-dir", os.path.join(tmp, "cache-2")], list_file)
        cold = min(cold, again)
        warm, _, _ = gradlint_run(files, ["--cache-dir", cache], list_file)
        nocache, _, _ = measured("gradlint --no-cache", lambda: gradlint_run(files, ["--no-cache"], list_file))
        rows += [(cold_name, cold), ("gradlint warm (cache)", warm), ("gradlint --no-cache", nocache)]
        ref_passing = bare_parse(passing)
        cold_passing, _, _ = gradlint_run(passing, ["--no-cache"], list_file)
        rows += [("bare libcst parse of prefilter-passing files", ref_passing), ("gradlint cold on those files", cold_passing)]
        fixture = os.path.join(ROOT, "fixtures", "gl002")
        fixture = os.path.join(fixture, sorted(os.listdir(fixture))[0]) if os.path.isdir(fixture) else passing[0]
        # a copy, alone in a folder: beside the standard library's modules it imports, textwrap.py
        # would be a file that may call into its project (gradlint/check/quick.py), not a plain one
        plain = os.path.join(tmp, "textwrap.py")
        shutil.copyfile(os.path.join(sysconfig.get_paths()["stdlib"], "textwrap.py"), plain)
        imp = best(5, lambda: timed([sys.executable, "-c", "import libcst"])[0])
        one = best(5, lambda: timed([sys.executable, "-m", "gradlint", "--no-cache", fixture], cwd=ROOT)[0])
        none = best(5, lambda: timed([sys.executable, "-m", "gradlint", "--no-cache", plain], cwd=ROOT)[0])
        rows += [('python -c "import libcst"', imp), (f"gradlint one training file ({os.path.basename(fixture)})", one),
                 ("gradlint one file without gradient events (textwrap.py)", none)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        extra = ""
        if name in CONTEXT:
            ours, others = CONTEXT[name]
            extra = f"   CPU {ours:6.2f} s" + ("" if others is None else f", other processes meanwhile {others:6.2f} CPU s")
        print(f"  {name:<{width}}  {value:8.2f} s{extra}")
    print(f"  {'peak RSS of the cold run (largest process)':<{width}}  {rss / 1024:8.0f} MB")
    targets = [
        ("cold / ruff", cold / ruff_t, 1.5),
        ("cold / bare parse", cold / ref, 0.1),
        ("warm / bare parse", warm / ref, 0.02),
        ("prefilter-passing cold / their bare parse", cold_passing / ref_passing, 1.5),
        ("one training file / import libcst", one / imp, 1.3),
        ("one file without events / import libcst", none / imp, 0.15),
        ("peak RSS MB per process", rss / 1024, 300),
    ]
    contended = [name for name, (_, others) in CONTEXT.items() if others is not None and others > 0.1 * value_of(rows, name)]
    if contended:
        print("note: other processes used the CPUs during " + "; ".join(contended) + ": those wall times (and the"
              " ratios made of them) measure the load as much as the program; rerun on a quiet machine")
    if cold_name in CONTEXT and ruff_name in CONTEXT:
        print(f"cold / ruff in CPU seconds (information, not a target): {CONTEXT[cold_name][0] / CONTEXT[ruff_name][0]:.3f}")
    print("targets:")
    for name, value, limit in targets:
        print(f"  {name:<44} {value:8.3f}  (target <= {limit})  {'PASS' if value <= limit else 'FAIL'}")
    if not args.no_real_repos:
        print(f"real repositories: {'PASS' if real == 0 else 'FAIL'} (their targets above)")
    return 0 if all(value <= limit for _, value, limit in targets) and real == 0 else 1


def value_of(rows: list[tuple[str, float]], name: str) -> float:
    return next(value for row, value in rows if row == name)


def _cpu() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
