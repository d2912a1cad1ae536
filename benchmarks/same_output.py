"""Does a change keep every finding?  gradlint's JSON output before and after, byte for byte.

    git worktree add --detach /tmp/base main            # the code before the change
    python benchmarks/same_output.py --base /tmp/base   # this checkout is the code after
    python benchmarks/same_output.py --base /tmp/base --only fixtures --only samples --only fixes

A speed change (the prefilter, the screen, the syntax check, the model's
parsing in pieces) must not change any output.  Both checkouts are run by
this interpreter (the base through PYTHONPATH), with `--isolated --no-cache
--select GL --output-format json` and a generous --file-timeout, on:

* fixtures: fixtures/ of this checkout;
* samples: every rule's valid and invalid samples, one file each;
* fixes: what `--diff --unsafe-fixes` would change on fixtures/ and on the
  samples (the repairs each finding gets, alternatives tried in turn), with
  the summary it prints;
* judged: the files of the real-code study's verdicts
  (benchmarks/realworld/verdicts.tsv) under SRC/owner+name/;
* sample: --sample-size files (300) drawn at random (--seed, 31) from every
  checkout under SRC (issue 31's proof of a restructuring);
* repos: the real-repository benchmark's trees (benchmarks/real_repos.txt)
  under SRC.

Exit 1 when an output differs (the first differing entries are printed) or a
tree is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SETS = ("fixtures", "samples", "fixes", "judged", "sample", "repos")


def run_gradlint(checkout: Path, paths: list[str], jobs: str, fixes: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    output = ["--diff", "--unsafe-fixes"] if fixes else ["--output-format", "json"]
    cmd = [sys.executable, "-m", "gradlint", "check", "--isolated", "--no-cache", "--exit-zero", "--select", "GL",
           "--file-timeout", "600", *output, *(["-j", jobs] if jobs else []), *paths]
    return subprocess.run(cmd, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def write_samples(directory: Path) -> list[str]:
    sys.path.insert(0, str(ROOT))
    from gradlint.rules.registry import all_rules

    paths = []
    for rule in all_rules():
        for kind, samples in (("valid", rule.valid), ("invalid", [s.source for s in rule.invalid])):
            for index, sample in enumerate(samples):
                path = directory / f"{rule.code}_{kind}_{index}.py"
                path.write_text(sample)
                paths.append(str(path))
    return paths


def judged_files(src: Path) -> list[str]:
    out = []
    for line in (HERE / "realworld" / "verdicts.tsv").read_text().splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and "/" in fields[0]:
            path = src / fields[0].replace("/", "+") / fields[1]
            if path.is_file() and str(path) not in out:
                out.append(str(path))
    return out


def sampled_files(src: Path, count: int, seed: int) -> list[str]:
    """`count` Python files drawn at random (this seed) from every checkout under SRC: code
    nobody chose, as the real-code study holds it."""
    import random

    every = sorted(str(p) for p in src.glob("*/**/*.py") if p.is_file() and not p.is_symlink())
    return sorted(random.Random(seed).sample(every, min(count, len(every))))


def repo_trees(src: Path) -> list[str]:
    sys.path.insert(0, str(HERE))
    from real_repos import LIST, read_list

    return [str(src / name.replace("/", "+") / sub) for name, _, sub in read_list(LIST)]


def entries(output: str) -> list[str]:
    """The findings and errors of a JSON report, each as one line."""
    report = json.loads(output or "{}")
    rows = report.get("findings", []) + report.get("errors", []) if isinstance(report, dict) else report
    return [json.dumps(row, sort_keys=True) for row in rows]


def differences(before: str, after: str, limit: int = 5) -> list[str]:
    """The first entries (findings or errors) present on one side only."""
    try:
        old_rows, new_rows = entries(before), entries(after)
    except ValueError:
        return ["output is not JSON"]
    gone = [f"- {row}" for row in old_rows if row not in set(new_rows)]
    came = [f"+ {row}" for row in new_rows if row not in set(old_rows)]
    return (gone + came)[:limit] or ["same entries, different bytes (order or formatting)"]


def _summary(stderr: str) -> list[str]:
    """What a `--diff` run says besides the diff ("Would fix 91 problems.", files it could not read)."""
    return [line for line in stderr.splitlines() if line.strip()]


def _diff_differences(before, after, limit: int = 5) -> list[str]:
    old, new = before.stdout.splitlines(), after.stdout.splitlines()
    gone = [f"- {line}" for line in old if line not in set(new)]
    came = [f"+ {line}" for line in new if line not in set(old)]
    summary = [] if _summary(before.stderr) == _summary(after.stderr) else [
        f"summary: {_summary(before.stderr)[-2:]} -> {_summary(after.stderr)[-2:]}"]
    return (summary + gone + came)[:limit] or ["same lines, different order"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="a checkout of gradlint before the change")
    ap.add_argument("--src", type=Path, default=Path("/work/study/src"))
    ap.add_argument("--only", action="append", choices=SETS, help="these sets only (repeatable)")
    ap.add_argument("--jobs", default="", help="-j for both runs (default: gradlint's)")
    ap.add_argument("--sample-size", type=int, default=300, help="files in the `sample` set (default 300)")
    ap.add_argument("--seed", type=int, default=31, help="the `sample` set's draw (default 31)")
    args = ap.parse_args(argv)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or SETS:
            if name == "fixtures":
                paths = [str(ROOT / "fixtures")]
            elif name == "samples":
                paths = write_samples(Path(tmp))
            elif name == "fixes":
                (Path(tmp) / "fixes").mkdir()
                paths = [str(ROOT / "fixtures")] + write_samples(Path(tmp) / "fixes")
            elif name == "judged":
                paths = judged_files(args.src)
            elif name == "sample":
                paths = sampled_files(args.src, args.sample_size, args.seed)
            else:
                paths = repo_trees(args.src)
            missing = [p for p in paths if not Path(p).exists()]
            if missing or not paths:
                print(f"{name}: missing {missing[:3] or 'every path'}: FAIL")
                ok = False
                continue
            fixes = name == "fixes"
            before = run_gradlint(args.base.resolve(), paths, args.jobs, fixes)
            after = run_gradlint(ROOT, paths, args.jobs, fixes)
            same = before.stdout == after.stdout and before.returncode == after.returncode
            if fixes:  # the diff, and the summary ("Would fix 91 problems.") on stderr
                same = same and _summary(before.stderr) == _summary(after.stderr)
                count = sum(1 for line in after.stdout.splitlines() if line.startswith("+++ "))
            else:
                try:
                    count = len(entries(after.stdout))
                except ValueError:
                    count = -1
            print(f"{name:<9} {len(paths):>5} paths  {count:>6} entries  {'identical' if same else 'DIFFERENT'}",
                  flush=True)
            if not same:
                ok = False
                if before.returncode != after.returncode:
                    print(f"  exit {before.returncode} -> {after.returncode}: {after.stderr.strip()[-300:]}")
                for line in (_diff_differences(before, after) if fixes else differences(before.stdout, after.stdout)):
                    print("  " + line[:400])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
