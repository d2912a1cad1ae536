"""Does a change keep every verdict of `gradlint verify`?  One run per script, two judges.

    git worktree add --detach /tmp/base main            # the code before the change
    python benchmarks/same_verdicts.py --base /tmp/base                 # every fixture
    python benchmarks/same_verdicts.py --base /tmp/base fixtures/gl002  # some of them

Each script is run once under the probes (this checkout's child: torch, a few
seconds each), and the event log it writes is judged twice: by the base
checkout's gradlint and by this one's (each with its own static findings,
verdicts.py and rules' runtime criteria, in a process of its own).  Running
the script twice would not do: parameters start from random values, so the
norms in the evidence differ from run to run.

Compared, as JSON: every verdict (code, line, column, message, verdict,
evidence), the runtime-only detections (code, file, line, column, evidence,
count), and the run's end and unverified reasons.  Exit 1 when one differs.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SKIP_DIRS = {"_shims", "not_torch", "newer_syntax", "__pycache__"}  # as tests/test_verify_fixtures.py


def scripts(paths: list[str]) -> list[str]:
    found = []
    for start in paths or [str(ROOT / "fixtures")]:
        if os.path.isfile(start):
            found.append(os.path.abspath(start))
            continue
        for directory, dirs, files in os.walk(start):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            if "cross_file" in Path(directory).parts:  # a project: its scripts only
                files = [f for f in files if f.startswith(("wrong_", "right_"))]
            found += [os.path.abspath(os.path.join(directory, f)) for f in sorted(files) if f.endswith(".py")]
    return found


# A checkout's judge runs in a process of its own, with that checkout first on the path: the
# runtime criteria live in the rule modules (each rule's `runtime`), not in verdicts.py alone, so
# loading one file of the base beside this checkout's package would mix the two versions.
JUDGE = r"""
import json, os, sys
records_file, target, checkout = sys.argv[1:4]
sys.path.insert(0, checkout)  # before the current directory, which is this checkout for both
from gradlint.verify import verdicts as module
from gradlint.verify.command import static_findings
assert os.path.realpath(module.__file__).startswith(os.path.realpath(checkout) + os.sep), module.__file__
with open(records_file) as handle:
    records = json.load(handle)
findings = static_findings(target)[0] if os.path.isfile(target) else []
run = module.Run.from_records(records)
home = run.target_file or os.path.realpath(target)
verdicts, runtime_only = module.judge(findings, run, home)
print(json.dumps({
    "verdicts": [v.to_dict() for v in verdicts],
    "runtime_only": [[d.code, d.file, d.line, d.col, d.evidence, d.count] for d in runtime_only],
    "end": module.end_reason(run, home),
    "unverified": module.unverified_reason(run, home),
}, sort_keys=True, indent=1))
"""


def record_run(path: str) -> list[dict]:
    """The event log of one probed run of `path` (copied before Run.from_records reads it)."""
    from gradlint.verify import runner, verdicts

    seen: list = []
    original = verdicts.Run.from_records

    def keep(records):
        seen.append(copy.deepcopy(records))
        return original(records)

    runner.Run.from_records = staticmethod(keep)
    try:
        runner.run_child(path)
    finally:
        runner.Run.from_records = staticmethod(original)
    return seen[-1] if seen else []


def judged(checkout: Path, records_file: str, target: str) -> str:
    """The checkout's verdicts (its static findings, its judge) on one recorded run, as JSON."""
    # the same working directory for both: paths in the evidence are printed relative to it
    proc = subprocess.run([sys.executable, "-c", JUDGE, records_file, target, str(checkout)], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=300)
    return proc.stdout if proc.returncode == 0 else f"judge failed ({proc.returncode}):\n{proc.stderr[-2000:]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="a checkout of gradlint before the change")
    ap.add_argument("paths", nargs="*", help="scripts or folders (default: fixtures/)")
    args = ap.parse_args(argv)
    base = args.base.resolve()
    different = confirmed = 0
    paths = scripts(args.paths)
    for path in paths:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(record_run(path), handle)
        try:
            old, new = judged(base, handle.name, path), judged(ROOT, handle.name, path)
        finally:
            os.unlink(handle.name)
        confirmed += new.count('"verdict": "confirmed"')
        if old != new:
            different += 1
            print(f"DIFFERENT {os.path.relpath(path, ROOT)}")
            old_lines, new_lines = old.splitlines(), new.splitlines()
            for line in [f"- {x}" for x in old_lines if x not in new_lines] + [f"+ {x}" for x in new_lines if x not in old_lines]:
                print("  " + line[:300])
    print(f"{len(paths)} scripts, {confirmed} verdicts confirmed: {'identical' if not different else f'{different} DIFFERENT'}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
