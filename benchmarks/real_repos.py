"""gradlint on the ML repositories its users run it on, side by side with ruff.

    python benchmarks/real_repos.py                 # every repository of real_repos.txt
    python benchmarks/real_repos.py --only vwxyzjn/cleanrl --repeat 1
    python benchmarks/real_repos.py --checkout      # first write the checkouts from /work/.mirror
    python benchmarks/real_repos.py --base ../main  # also time another checkout's gradlint -j 1, same run

Each repository of benchmarks/real_repos.txt (owner/name, commit, optional
subdirectory) is read from SRC/owner+name (benchmarks/realworld/checkout.py
writes it there from the snapshot in MIRROR/owner+name/repo, which the search
tool's `fetch` brings; `--checkout` does that first).  Per repository, in one
run, each command a child process whose CPU seconds (user + system, its
workers included) are measured, the least of --repeat runs:

* `ruff check --select ALL --no-cache --isolated --output-format concise` of
  the tree (ruff's default full format, which prints each violation's source
  lines, costs about 2.5 times the concise one: gradlint's text is concise);
* `gradlint --isolated --no-cache` of the tree with the default jobs, and with
  `-j 1`: their JSON outputs must be identical (same findings however the
  files are shared out);
* a bare `libcst.parse_module` of every .py file of the tree (a process that
  imports libcst and parses each file: what a libcst-based tool cannot avoid);
* CPython's `ast.parse` of every .py file (information: what a checker that
  parsed every file would pay at least; gradlint parses only the files that
  spell a gradient event);
* with `--base DIR`, `gradlint -j 1` run from that checkout too (the code
  before a change, timed under the same load: its ratio is printed beside).

Targets (issues 28 and 48), exit 1 when one is missed or when the two
gradlint runs disagree:

* gradlint `-j 1` over every repository <= 3 x ruff, in CPU seconds (the
  default jobs spend more CPU on starting workers, for less wall time: both
  are printed);
* cleanrl's training scripts (`-j 1`) <= 1.3 x their bare libcst parse.

CPU seconds are less sensitive than wall time to other work on a shared
machine, but not immune (caches, frequency): the load average and the CPU
that other processes used during the run are printed with the figures.
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
ROOT = HERE.parent
VENV_BIN = Path(sys.executable).parent
LIST = HERE / "real_repos.txt"
CLEANRL = "vwxyzjn/cleanrl"
TOTAL_TARGET = 3.0  # gradlint / ruff over every repository (issue 48)
CLEANRL_TARGET = 1.3  # gradlint / bare libcst parse on cleanrl

PARSE_CHILD = r"""
import sys
paths = sys.stdin.read().split("\n")
if sys.argv[1] == "libcst":
    import libcst
    parse = libcst.parse_module
else:
    import ast, warnings
    warnings.simplefilter("ignore")
    parse = ast.parse
for path in paths:
    try:
        parse(open(path, "rb").read())
    except Exception:
        pass
"""


def read_list(path: Path) -> list[tuple[str, str, str]]:
    """(owner/name, commit, subdirectory or "") per line; # comments and blank lines skipped."""
    out = []
    for line in path.read_text().splitlines():
        fields = line.split("#", 1)[0].split()
        if fields:
            out.append((fields[0], fields[1], fields[2] if len(fields) > 2 else ""))
    return out


def checkout(entries, mirror: Path, src: Path) -> None:
    sys.path.insert(0, str(HERE / "realworld"))
    from checkout import check_out, git_dir_of

    for name, commit, _ in entries:
        git_dir = git_dir_of(mirror, name)
        if git_dir is None:
            raise SystemExit(f"{name}: no snapshot under {mirror} (fetch github:{name} first)")
        count = check_out(git_dir, commit, src / name.replace("/", "+"))
        print(f"checked out {name} {commit[:10]}: {count} files", flush=True)


def python_files(tree: Path) -> list[str]:
    """The .py files gradlint's discovery would check (its default excludes apply)."""
    sys.path.insert(0, str(ROOT))
    from gradlint.run.discover import discover

    return [path for path in discover([str(tree)]).files if path.endswith(".py")]


def children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def machine_busy() -> float | None:
    """CPU seconds every process on the machine has used since boot (/proc/stat)."""
    try:
        with open("/proc/stat") as handle:
            fields = handle.readline().split()
        return sum(int(f) for i, f in enumerate(fields[1:9]) if i not in (3, 4)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


class Clock:
    """CPU seconds of the child processes run through it, and of every other process meanwhile."""

    def __init__(self):
        self.others = 0.0
        self.ours = 0.0

    def run(self, cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
        before, busy = children_cpu(), machine_busy()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
        cpu = children_cpu() - before
        after = machine_busy()
        self.ours += cpu
        if busy is not None and after is not None:
            self.others += max(0.0, after - busy - cpu)
        return cpu, proc

    def least(self, repeat: int, cmd: list[str], **kw) -> tuple[float, subprocess.CompletedProcess]:
        runs = [self.run(cmd, **kw) for _ in range(repeat)]
        return min(runs, key=lambda run: run[0])


def gradlint_cmd(tree: Path, jobs: list[str]) -> list[str]:
    """Run as `python -m gradlint` from a checkout's root: that checkout's package is imported."""
    return [sys.executable, "-m", "gradlint", "--isolated", "--no-cache", "--exit-zero", *jobs,
            "--output-format", "json", str(tree)]


def measure(name: str, tree: Path, clock: Clock, repeat: int, base: "Path | None" = None, quick: bool = False) -> dict:
    """`quick`: only what the targets need (ruff, gradlint -j 1, cleanrl's bare libcst parse)."""
    files = python_files(tree)
    lines = sum(Path(p).read_bytes().count(b"\n") for p in files)
    ruff = [str(VENV_BIN / "ruff"), "check", "--select", "ALL", "--no-cache", "--isolated", "--exit-zero",
            "--output-format", "concise", str(tree)]
    ruff_s, _ = clock.least(repeat, ruff)
    one_s, one = clock.least(repeat, gradlint_cmd(tree, ["-j", "1"]), cwd=ROOT)
    default_s, default = (0.0, one) if quick else clock.least(repeat, gradlint_cmd(tree, []), cwd=ROOT)
    base_s = clock.least(repeat, gradlint_cmd(tree, ["-j", "1"]), cwd=base)[0] if base is not None else 0.0
    for proc in (default, one):
        if proc.returncode not in (0, 1):
            print(f"{name}: gradlint exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    listing = "\n".join(files)
    parse_s = ast_s = 0.0
    if not quick or name.startswith(CLEANRL):
        parse_s, _ = clock.least(repeat, [sys.executable, "-c", PARSE_CHILD, "libcst"], input=listing)
    if not quick:
        ast_s, _ = clock.least(repeat, [sys.executable, "-c", PARSE_CHILD, "ast"], input=listing)
    report = json.loads(default.stdout or "[]")
    findings = report if isinstance(report, list) else report.get("findings", report)
    return {
        "name": name, "files": len(files), "lines": lines, "ruff": ruff_s, "gradlint": default_s,
        "gradlint_j1": one_s, "base_j1": base_s, "libcst": parse_s, "ast": ast_s, "findings": len(findings),
        "same": default.stdout == one.stdout, "exit": (default.returncode, one.returncode),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=Path("/work/study/src"))
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--list", type=Path, default=LIST)
    ap.add_argument("--checkout", action="store_true", help="write the checkouts from the snapshots first")
    ap.add_argument("--only", action="append", default=[], help="owner/name (repeatable)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per command (the least CPU counts)")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--quick", action="store_true", help="only what the targets need: no default-jobs run "
                    "(the same-output check is skipped), no bare parse but cleanrl's")
    ap.add_argument("--base", type=Path, help="another checkout of gradlint (the code before a change): "
                    "its -j 1 is timed in the same run")
    args = ap.parse_args(argv)
    return run(args)


def run(args) -> int:
    entries = [e for e in read_list(args.list) if not args.only or e[0] in args.only]
    if args.checkout:
        checkout(entries, args.mirror, args.src)
    import compileall

    for checkout_root in (ROOT, args.base) if args.base else (ROOT,):
        compileall.compile_dir(str(checkout_root / "gradlint"), quiet=1)  # as installed (see bench.py, as_installed)
    load = os.getloadavg()
    clock = Clock()
    rows = []
    for name, _commit, sub in entries:
        tree = args.src / name.replace("/", "+") / sub
        if not tree.is_dir():
            print(f"{name}: no checkout at {tree} (python benchmarks/real_repos.py --checkout): FAIL, not measured")
            return 1
        rows.append(measure(name + (f" ({sub}/)" if sub else ""), tree, clock, args.repeat, args.base, args.quick))
        print_row(rows[-1], flush=True)
    load_after = os.getloadavg()
    return summary(rows, entries, load, load_after, clock, args.json, args.quick)


HEAD = (f"{'repository':<34} {'files':>6} {'lines':>9} {'ruff s':>7} {'gradlint s':>10} {'-j 1 s':>7} "
        f"{'libcst s':>8} {'ast s':>6} {'j1/ruff':>7} {'j1/lcst':>8} {'findings':>8}")


def print_row(row: dict, flush: bool = False) -> None:
    if print_row.first:
        print(HEAD)
        print_row.first = False
    print(f"{row['name']:<34} {row['files']:>6} {row['lines']:>9,} {row['ruff']:>7.2f} {row['gradlint']:>10.2f} "
          f"{row['gradlint_j1']:>7.2f} {row['libcst']:>8.2f} {row['ast']:>6.2f} "
          f"{row['gradlint_j1'] / max(row['ruff'], 1e-9):>7.2f} "
          f"{row['gradlint_j1'] / row['libcst'] if row['libcst'] else float('nan'):>8.2f} "
          f"{row['findings']:>8}{'' if row['same'] else '  -j 1 DIFFERS'}", flush=flush)


print_row.first = True


def summary(rows, entries, load, load_after, clock, json_path, quick: bool = False) -> int:
    total = {key: sum(row[key] for row in rows) for key in ("files", "lines", "ruff", "gradlint", "gradlint_j1",
                                                           "base_j1", "libcst", "ast", "findings")}
    total.update(name="total", same=all(row["same"] for row in rows))
    print_row(total)
    print(f"load average {load[0]:.2f} at the start, {load_after[0]:.2f} at the end; CPU seconds of this run's "
          f"processes {clock.ours:.1f}, of every other process meanwhile {clock.others:.1f}")
    if not quick:
        print(f"default jobs / ruff (CPU s, information): {total['gradlint'] / total['ruff']:.3f}")
    if total["base_j1"]:
        each = ", ".join(f"{row['base_j1'] / max(row['ruff'], 1e-9):.2f}" for row in rows)
        print(f"the --base checkout's -j 1 / ruff, same run: {total['base_j1'] / total['ruff']:.3f} (per repository: {each})")
    targets = [("gradlint -j 1 / ruff, every repository (CPU s)", total["gradlint_j1"] / total["ruff"], TOTAL_TARGET)]
    cleanrl = [row for row in rows if row["name"].startswith(CLEANRL)]
    if cleanrl:
        targets.append(("cleanrl: gradlint -j 1 / bare libcst parse (CPU s)",
                        cleanrl[0]["gradlint_j1"] / cleanrl[0]["libcst"], CLEANRL_TARGET))
    print("targets:")
    ok = True
    for name, value, limit in targets:
        passed = value <= limit
        ok &= passed
        print(f"  {name:<48} {value:6.3f}  (target <= {limit})  {'PASS' if passed else 'FAIL'}")
    same = total["same"]
    if quick:
        print(f"  {'same JSON output with -j 1 and the default jobs':<48} not checked (--quick)")
    else:
        print(f"  {'same JSON output with -j 1 and the default jobs':<48} {'yes' if same else 'NO':>6}  "
              f"{'PASS' if same else 'FAIL'}")
    if json_path is not None:
        json_path.write_text(json.dumps({"rows": rows, "load": [load, load_after], "others": clock.others}, indent=1))
    return 0 if ok and same else 1


if __name__ == "__main__":
    sys.exit(main())
