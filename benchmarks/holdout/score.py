"""Score gradlint against the hand-labelled hold-out set: precision, recall, every disagreement.

repos.txt names 40 public repositories (``owner/name commit``) that no other
study of this project read; labels.tsv says, for every training loop or step
read by hand in them, which findings the rule contract (shared/design/rules.md)
requires and where, or that the loop must stay silent.  This script checks the
repositories out from the fetched snapshots (benchmarks/realworld/checkout.py),
runs gradlint over each whole repository, and compares.

    python benchmarks/holdout/score.py [--mirror /work/.mirror] [--src /tmp/holdout-src]
        [--gradlint /path/to/gradlint] [--only owner/name] [--json results.json]

A label row is one of:

- ``GL00x`` at a line: a finding that must be there (a positive); ``GL00x|GL00y``
  accepts either code for one misplaced call (a second finding on it is a false alarm);
- ``opt:GL00x`` at a line: a finding accepted there but not required (counted in neither figure);
- ``clean`` over a line range: a loop or step that must get no finding;
- ``unknowable`` / ``outside`` at a line or range: excluded from both figures (correctness
  hangs on an object no reader of the file can see, or the defect is real but not a
  contract event).

Each finding is classified, in this order: TP (it matches a positive row's file, line
and code, first finding only), OPTIONAL, EXCLUDED (inside an unknowable/outside row),
FP (inside a clean row, or on a labelled file's line no row covers), UNJUDGED (a file
with no label at all: read it and add a row).  A positive row no finding matched is a
MISS.  Precision = TP / (TP + FP); recall = TP / positives.  The exit status is 0; the
figures are the output.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "realworld"))

from checkout import check_out, git_dir_of, read_repo_list  # noqa: E402

SOURCE_SUFFIXES = (".py", ".ipynb")


@dataclass
class Label:
    repo: str
    path: str
    first: int
    last: int
    kind: str  # "positive", "optional", "clean", "excluded"
    codes: frozenset = frozenset()
    reason: str = ""
    matched: list = field(default_factory=list)

    def covers(self, line: int) -> bool:
        return self.first <= line <= self.last


def read_labels(path: Path) -> list[Label]:
    labels = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        repo, file, lines, code, reason = raw.split("\t")
        first, _, last = lines.partition("-")
        first_line, last_line = int(first), int(last or first)
        if code == "clean":
            kind, codes = "clean", frozenset()
        elif code in ("unknowable", "outside"):
            kind, codes = "excluded", frozenset()
        elif code.startswith("opt:"):
            kind, codes = "optional", frozenset(code[4:].split("|"))
        elif code.startswith("GL"):
            kind, codes = "positive", frozenset(code.split("|"))
        else:
            raise ValueError(f"labels.tsv:{number}: unknown code {code!r}")
        labels.append(Label(repo, file, first_line, last_line, kind, codes, reason))
    return labels


def run_gradlint(command: list[str], folder: Path, timeout: float) -> list[dict]:
    """gradlint's findings for one checked-out repository, paths relative to it."""
    notebooks = sorted(str(p) for p in folder.rglob("*.ipynb"))
    done = subprocess.run(
        [*command, "--isolated", "--no-cache", "--exit-zero", "--output-format", "json",
         str(folder), *notebooks],
        capture_output=True, text=True, timeout=timeout,
    )
    if done.returncode != 0:
        raise RuntimeError(f"gradlint failed ({done.returncode}): "
                           f"{(done.stderr.strip() or done.stdout.strip())[-500:]}")
    report = json.loads(done.stdout)
    findings, seen = [], set()
    for finding in report.get("findings", []):
        rel = os.path.relpath(finding["path"], folder)
        key = (rel, finding["line"], finding["code"], finding["column"])
        if key in seen:  # a notebook named twice (walk and argument) is reported once
            continue
        seen.add(key)
        findings.append({"path": rel, "line": finding["line"], "code": finding["code"],
                         "message": finding["message"]})
    return findings


def classify(findings: list[dict], labels: list[Label]) -> list[tuple[str, dict, Label | None]]:
    by_file: dict[str, list[Label]] = defaultdict(list)
    for label in labels:
        by_file[label.path].append(label)
    verdicts = []
    for finding in sorted(findings, key=lambda f: (f["path"], f["line"], f["code"])):
        rows = by_file.get(finding["path"], [])
        line, code = finding["line"], finding["code"]
        hit = next((r for r in rows if r.kind == "positive" and r.covers(line)
                    and code in r.codes and not r.matched), None)
        if hit is not None:
            hit.matched.append(finding)
            verdicts.append(("TP", finding, hit))
            continue
        hit = next((r for r in rows if r.kind == "optional" and r.covers(line) and code in r.codes),
                   None)
        if hit is not None:
            verdicts.append(("OPTIONAL", finding, hit))
            continue
        hit = next((r for r in rows if r.kind == "excluded" and r.covers(line)), None)
        if hit is not None:
            verdicts.append(("EXCLUDED", finding, hit))
            continue
        hit = next((r for r in rows if r.covers(line)), None)
        if hit is not None:
            verdicts.append(("FP", finding, hit))
        elif rows:
            verdicts.append(("FP", finding, None))  # a labelled file, a line no row covers
        else:
            verdicts.append(("UNJUDGED", finding, None))
    return verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--src", type=Path, default=None,
                        help="where to check the repositories out (default: a temporary folder)")
    parser.add_argument("--gradlint", default=None,
                        help="the gradlint executable (default: this Python's `-m gradlint`)")
    parser.add_argument("--only", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per repository")
    parser.add_argument("--json", type=Path, default=None, help="write every verdict here")
    args = parser.parse_args(argv)

    command = [args.gradlint] if args.gradlint else [sys.executable, "-m", "gradlint"]
    labels = read_labels(HERE / "labels.tsv")
    repos = read_repo_list(HERE / "repos.txt")
    if args.only:
        repos = [(name, commit) for name, commit in repos if name in args.only]
    temporary = None
    if args.src is None:
        temporary = tempfile.TemporaryDirectory(prefix="holdout-")
        args.src = Path(temporary.name)

    per_repo: dict[str, Counter] = {}
    crashes: list[str] = []
    all_verdicts = []
    for name, commit in repos:
        git_dir = git_dir_of(args.mirror, name)
        if git_dir is None:
            print(f"{name}: no snapshot under {args.mirror} (fetch github:{name} first)",
                  file=sys.stderr)
            continue
        folder = args.src / name.replace("/", "+")
        if not folder.is_dir():
            check_out(git_dir, commit, folder)
        mine = [label for label in labels if label.repo == name]
        try:
            findings = run_gradlint(command, folder, args.timeout)
        except (RuntimeError, subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
            # A run that fails finds nothing: its positives count as misses, and it is named.
            print(f"CRASH    {name}: {str(exc)[:300]}")
            crashes.append(name)
            findings = []
        verdicts = classify(findings, mine)
        counts = Counter(kind for kind, _, _ in verdicts)
        counts["positives"] = sum(1 for label in mine if label.kind == "positive")
        counts["MISS"] = sum(1 for label in mine if label.kind == "positive" and not label.matched)
        counts["loops"] = sum(1 for label in mine if label.kind in ("clean", "excluded")) + len(
            {(label.path, label.first) for label in mine if label.kind == "positive"})
        per_repo[name] = counts
        for kind, finding, label in verdicts:
            all_verdicts.append({"repository": name, "verdict": kind, **finding,
                                 "label": label.reason if label else None})
        for label in mine:
            if label.kind == "positive" and not label.matched:
                all_verdicts.append({"repository": name, "verdict": "MISS", "path": label.path,
                                     "line": label.first, "code": "|".join(sorted(label.codes)),
                                     "message": "", "label": label.reason})

    print(f"{'repository':58} {'pos':>4} {'TP':>4} {'FP':>4} {'miss':>4} {'excl':>4} {'unj':>4}")
    total = Counter()
    for name, counts in per_repo.items():
        total.update(counts)
        print(f"{name:58} {counts['positives']:4} {counts['TP']:4} {counts['FP']:4} "
              f"{counts['MISS']:4} {counts['EXCLUDED']:4} {counts['UNJUDGED']:4}")
    print()
    for verdict in all_verdicts:
        if verdict["verdict"] in ("FP", "MISS", "UNJUDGED"):
            print(f"{verdict['verdict']:8} {verdict['repository']} {verdict['path']}:{verdict['line']} "
                  f"{verdict['code']}  {verdict['message'][:110]}")
            if verdict["label"]:
                print(f"         label: {verdict['label'][:150]}")
    tp, fp, positives = total["TP"], total["FP"], total["positives"]
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / positives if positives else float("nan")
    print()
    print(f"repositories {len(per_repo)}, labelled loops/steps {total['loops']}, positives {positives}, "
          f"TP {tp}, FP {fp}, misses {total['MISS']}, optional {total['OPTIONAL']}, "
          f"excluded {total['EXCLUDED']}, unjudged {total['UNJUDGED']}, crashed runs {len(crashes)}")
    print(f"precision {precision:.2f}  recall {recall:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"per_repository": per_repo, "verdicts": all_verdicts},
                                        indent=1, default=dict))
    if temporary is not None:
        temporary.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
