"""Mutation study: does each rule fire on the bugs it names, and stay quiet on clean code?

    python benchmarks/mutants/run.py                       # the project's clean fixtures only
    python benchmarks/mutants/run.py --corpus /work/study/mutsrc --report /work/study/MUTANTS.md

For every clean file (fixtures/gl00N/right_*.py, fixtures/idioms/*.py, and
with --corpus every .py under that directory), mutate.py makes single-bug
variants labelled with the rule that must fire.  gradlint (the installed
CLI, `--isolated --output-format json`) checks the originals and the
mutants.  A mutant is *detected* when a finding with the expected code lies
inside the mutated loop.  A mutant whose original already has that code in
that loop proves nothing and is counted apart.  Every finding a mutant has
beyond its original's is new: of the expected code it is right, of any other
code it is a cascade (one misplaced call must give one finding), and
precision is right / new.  Prints the per-rule table and the clean files
with findings; --report appends the table and every undetected mutant's
diff to a Markdown file.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from mutate import Mutant, mutants  # noqa: E402

RULES = [f"GL00{n}" for n in range(1, 9)]
BATCH = 400  # files per gradlint call: long enough argv, short enough to see progress


def clean_fixtures(root: Path = ROOT) -> list[Path]:
    fixtures = root / "fixtures"
    return sorted(fixtures.glob("gl00*/right_*.py")) + sorted((fixtures / "idioms").glob("*.py"))


@dataclass
class Case:
    source_path: Path
    mutant: Mutant
    file: Path  # where the mutant was written
    status: str = ""  # detected, missed, preexisting
    right: int = 0  # new findings of the mutant's code
    cascades: int = 0  # new findings of other codes


def gradlint_findings(paths: list[Path]) -> dict[str, list[dict]]:
    """Findings per absolute path, from the installed CLI."""
    by_path: dict[str, list[dict]] = defaultdict(list)
    for start in range(0, len(paths), BATCH):
        chunk = [str(p) for p in paths[start : start + BATCH]]
        proc = subprocess.run(
            ["gradlint", "--isolated", "--output-format", "json", *chunk], capture_output=True, text=True
        )
        if proc.returncode not in (0, 1):
            raise SystemExit(f"gradlint failed ({proc.returncode}): {proc.stderr[-2000:]}")
        report = json.loads(proc.stdout)
        for finding in report["findings"]:
            # a finding on a misplaced call of another module belongs to the checked files that
            # call it too (its related locations): the mutant that moved a loop's body there
            where = {str(Path(finding["path"]).resolve())}
            where |= {str(Path(r["path"]).resolve()) for r in finding.get("related", []) if r.get("path")}
            for path in sorted(where):
                by_path[path].append(finding)
        for error in report.get("errors", []):
            by_path[str(Path(error.get("path", "?")).resolve())].append({"code": "error", "line": 0, **error})
    return by_path


def _in_loop(findings, code, start, end, home=None):
    """Findings of `code` pointing into the loop: their own line or a related one in the loop's
    file `home` (None: each finding's own file).  A rule may report on a helper the loop calls,
    with the loop's event as the related location; a finding on a misplaced call in another
    module stands there, with the loop's call in `home` as a related location."""

    def here(path, own):
        return path == own if home is None else path is not None and os.path.realpath(path) == os.path.realpath(home)

    return [
        f
        for f in findings
        if f["code"] == code
        and any(
            start <= line <= end
            for line in [f["line"]] * here(f.get("path"), f.get("path"))
            + [r["line"] for r in f.get("related", []) if here(r.get("path") or f.get("path"), f.get("path"))]
        )
    ]


def judge(mutant: Mutant, clean_findings: list[dict], mutant_findings: list[dict], home=None, clean_home=None) -> str:
    """detected, missed, or preexisting (the original already has that code in that loop).

    Findings are dicts with at least "code" and "line" (the JSON output's shape).  `home` and
    `clean_home`: the files of the mutated loop and of the original's (None: each finding's own).
    """
    if _in_loop(clean_findings, mutant.code, mutant.original_loop_start, mutant.original_loop_end, clean_home):
        return "preexisting"
    if _in_loop(mutant_findings, mutant.code, mutant.loop_start, mutant.loop_end, home):
        return "detected"
    return "missed"


def new_findings(mutant: Mutant, clean_findings: list[dict], mutant_findings: list[dict]) -> tuple[int, int]:
    """(right, cascades): the mutant's findings beyond its original's (counted per code), of
    the mutant's own code and of other codes."""
    new = Counter(f["code"] for f in mutant_findings) - Counter(f["code"] for f in clean_findings)
    right = new.pop(mutant.code, 0)
    return right, sum(new.values())


def precision(right: int, cascades: int) -> float:
    return right / (right + cascades) if right + cascades else 1.0


def _write(folder: Path, name: str, source: str, files: dict) -> Path:
    """A mutant (or a baseline) with the other modules it imports, in a folder of its own."""
    folder.mkdir(parents=True, exist_ok=True)
    for other, text in files.items():
        (folder / other).write_text(text, encoding="utf-8")
    out = folder / name
    out.write_text(source, encoding="utf-8")
    return out


def study(sources: list[Path], workdir: Path, label_root: Path, across_files: bool = False):
    """`across_files`: the cross-file operator's mutants (mutate.cross_file), each judged
    against its baseline (the original with the same loop moved into another module)."""
    cases: list[Case] = []
    skips = []
    originals = {}
    baselines: dict[Path, Path] = {}  # mutant file -> its baseline's file
    for number, path in enumerate(sources):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        originals[path] = text
        found, skipped = mutants(text, across_files)
        skips.extend((path, s) for s in skipped)
        written: dict[int, Path] = {}
        for index, mutant in enumerate(found):
            name = f"{number:04d}_{index:03d}_{mutant.code}_{path.name}"
            if mutant.files:
                out = _write(workdir / name[:-3], path.name, mutant.source, mutant.files)
                source, files, start, _ = mutant.baseline
                if start not in written:
                    written[start] = _write(workdir / f"{number:04d}_base_{start}", path.name, source, files)
                baselines[out] = written[start]
            else:
                out = workdir / name
                out.write_text(mutant.source, encoding="utf-8")
            cases.append(Case(path, mutant, out))
    clean = gradlint_findings([p.resolve() for p in originals])
    base = gradlint_findings(sorted({b.resolve() for b in baselines.values()})) if baselines else {}
    mutated = gradlint_findings([c.file.resolve() for c in cases])
    for case in cases:
        m = case.mutant
        if case.file in baselines:
            before = base.get(str(baselines[case.file].resolve()), [])
        else:
            before = clean.get(str(case.source_path.resolve()), [])
        after = mutated.get(str(case.file.resolve()), [])
        home = case.file if case.file in baselines else None
        case.status = judge(m, before, after, home, baselines[case.file] if home else None)
        case.right, case.cascades = new_findings(m, before, after)
    if baselines:  # a moved clean loop that gets a finding is a false alarm of the move itself
        clean = {**clean, **{str(b.resolve()): base.get(str(b.resolve()), []) for b in set(baselines.values())}}
    return cases, skips, clean, originals


def operator_table(cases: list[Case]) -> str:
    """Recall per operator (the cross-file operator is judged per operator it composes with)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for case in cases:
        counts[f"{case.mutant.code} {case.mutant.operator}"][case.status] += 1
    rows = ["| rule and operator | mutants | detected | rate |", "|---|---|---|---|"]
    for key in sorted(counts):
        c = counts[key]
        total = c["detected"] + c["missed"]
        rows.append(f"| {key} | {total} | {c['detected']} | {100 * c['detected'] / total:.1f}% |" if total else f"| {key} | 0 | 0 | - |")
    return "\n".join(rows)


def table(cases: list[Case]) -> tuple[str, dict]:
    counts = {rule: defaultdict(int) for rule in RULES}
    for case in cases:
        counts[case.mutant.code][case.status] += 1
        counts[case.mutant.code]["right"] += case.right
        counts[case.mutant.code]["cascades"] += case.cascades
    rows = [
        "| rule | mutants | detected | rate | missed | original already fired | cascades | precision |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rates = {}
    for rule in RULES:
        c = counts[rule]
        total = c["detected"] + c["missed"]
        rate = c["detected"] / total if total else None
        rates[rule] = rate
        shown = f"{100 * rate:.1f}%" if rate is not None else "-"
        rows.append(
            f"| {rule} | {total} | {c['detected']} | {shown} | {c['missed']} | {c['preexisting']} | "
            f"{c['cascades']} | {precision(c['right'], c['cascades']):.3f} |"
        )
    right, cascades = sum(c.right for c in cases), sum(c.cascades for c in cases)
    rows.append(f"\nprecision over all mutants: {precision(right, cascades):.3f} ({cascades} cascade findings)")
    return "\n".join(rows), rates


def _short(path: Path, label_root: Path) -> str:
    for root in (label_root, ROOT):
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return str(path)


def report(cases, skips, clean, originals, label_root: Path, title: str) -> str:
    text, _ = table(cases)
    out = [f"## {title}", "", f"{len(originals)} clean files, {len(cases)} mutants.", "", text, ""]
    flagged = {p: clean.get(str(p.resolve()), []) for p in originals}
    flagged = {p: f for p, f in flagged.items() if f}
    out.append(f"### Clean files with findings ({len(flagged)})\n")
    for path, findings in sorted(flagged.items()):
        for f in findings:
            out.append(f"- `{_short(path, label_root)}:{f.get('line')}` {f['code']} {f.get('message', '')}")
    out.append("")
    missed = [c for c in cases if c.status == "missed"]
    out.append(f"### Undetected mutants ({len(missed)})\n")
    for case in missed:
        original = originals[case.source_path]
        diff = difflib.unified_diff(original.splitlines(), case.mutant.source.splitlines(), lineterm="", n=2)
        got = sorted({f["code"] for f in gradlint_cache.get(case.file, [])})
        out.append(f"#### {case.mutant.code} `{_short(case.source_path, label_root)}`: {case.mutant.description}")
        out.append(f"(loop lines {case.mutant.loop_start}-{case.mutant.loop_end}; gradlint gave: {', '.join(got) or 'nothing'})\n")
        out.append("```diff")
        out.extend(list(diff)[2:])
        out.append("```\n")
    reasons = defaultdict(int)
    for _, s in skips:
        reasons[(s.code, s.reason.split(" (")[0] if s.code == "GL008" else s.reason)] += 1
    out.append("### Mutations left out (edge cases)\n")
    out.append("| rule | reason | count |\n|---|---|---|")
    for (code, reason), n in sorted(reasons.items()):
        out.append(f"| {code} | {reason} | {n} |")
    out.append("")
    return "\n".join(out)


gradlint_cache: dict[Path, list[dict]] = {}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="also mutate every .py file under this directory")
    parser.add_argument("--no-fixtures", action="store_true", help="only the corpus")
    parser.add_argument("--report", type=Path, help="append the results (Markdown) to this file")
    parser.add_argument("--json", type=Path, help="write per-mutant results here")
    parser.add_argument(
        "--across-files", action="store_true",
        help="the cross-file operator: each mutant's loop body moved into a second module the loop imports",
    )
    args = parser.parse_args(argv)

    runs = []
    if not args.no_fixtures:
        runs.append(("project fixtures", clean_fixtures(), ROOT))
    if args.corpus:
        runs.append((f"public training files ({args.corpus})", sorted(args.corpus.rglob("*.py")), args.corpus))
    all_cases = []
    results = []
    for title, sources, label_root in runs:
        started = time.time()
        workdir = Path(tempfile.mkdtemp(prefix="gradlint-mutants-"))
        try:
            cases, skips, clean, originals = study(sources, workdir, label_root, args.across_files)
            # keep the mutants' findings for the report, keyed by file, before the files go
            for case in cases:
                gradlint_cache[case.file] = []
            found = gradlint_findings([c.file.resolve() for c in cases if c.status == "missed"])
            for case in cases:
                gradlint_cache[case.file] = found.get(str(case.file.resolve()), [])
            stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
            text = report(cases, skips, clean, originals, label_root, f"{title}, {stamp}")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        rows, _ = table(cases)
        flagged = sum(1 for p in originals if clean.get(str(p.resolve())))
        print(f"# {title}: {len(originals)} clean files, {len(cases)} mutants, {time.time() - started:.0f} s")
        print(rows)
        if args.across_files:
            print(operator_table(cases))
        print(f"clean files with findings: {flagged}\n")
        if args.report:
            with args.report.open("a", encoding="utf-8") as handle:
                handle.write(text + "\n")
        all_cases.extend(cases)
        results.extend(
            {
                "source": _short(c.source_path, label_root),
                "code": c.mutant.code,
                "operator": c.mutant.operator,
                "description": c.mutant.description,
                "status": c.status,
            }
            for c in cases
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
