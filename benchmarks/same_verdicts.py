"""Does a change keep every verdict of `gradlint verify`?  One run per script, two judges.

    git worktree add --detach /tmp/base main            # the code before the change
    python benchmarks/same_verdicts.py --base /tmp/base                 # every fixture
    python benchmarks/same_verdicts.py --base /tmp/base fixtures/gl002  # some of them

Each script is run once under the probes (this checkout's child: torch, a few
seconds each), and the event log it writes is judged twice: by the base
checkout's gradlint/verify/verdicts.py and by this one's, against this
checkout's static findings (benchmarks/same_output.py shows those are the
base's too).  Running the script twice would not do: parameters start from
random values, so the norms in the evidence differ from run to run.

Compared, as JSON: every verdict (code, line, column, message, verdict,
evidence), the runtime-only detections (code, file, line, column, evidence,
count), and the run's end and unverified reasons.  Exit 1 when one differs.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import os
import sys
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


def load_verdicts(checkout: Path):
    """A checkout's verdicts module, under its own name (it imports gradlint only lazily)."""
    name = f"verdicts_{abs(hash(str(checkout)))}"
    spec = importlib.util.spec_from_file_location(name, checkout / "gradlint" / "verify" / "verdicts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def judged(module, records: list[dict], findings, target: str) -> str:
    run = module.Run.from_records(copy.deepcopy(records))
    home = run.target_file or os.path.realpath(target)
    verdicts, runtime_only = module.judge(findings, run, home)
    return json.dumps({
        "verdicts": [v.to_dict() for v in verdicts],
        "runtime_only": [[d.code, d.file, d.line, d.col, d.evidence, d.count] for d in runtime_only],
        "end": module.end_reason(run, home),
        "unverified": module.unverified_reason(run, home),
    }, sort_keys=True, indent=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="a checkout of gradlint before the change")
    ap.add_argument("paths", nargs="*", help="scripts or folders (default: fixtures/)")
    args = ap.parse_args(argv)
    from gradlint.verify.command import static_findings

    before, after = load_verdicts(args.base.resolve()), load_verdicts(ROOT)
    different = confirmed = 0
    paths = scripts(args.paths)
    for path in paths:
        records = record_run(path)
        findings = static_findings(path)[0] if os.path.isfile(path) else []
        old, new = judged(before, records, findings, path), judged(after, records, findings, path)
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
