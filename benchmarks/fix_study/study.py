"""The fix study: public commits that fixed a gradient bug, checked before and after.

For every row of fixes.tsv (repository, fix commit, path, line, rule, kind, cause of a
miss), this script finds the fix's parent in the repository's snapshot
(`/work/.mirror/<owner>+<name>/repo`, a bare git directory or a work tree's `.git`),
writes the file at the parent and at the fix to a scratch directory, runs the installed
gradlint on each (`--isolated --no-cache`, JSON) and gives two verdicts:

- before: `found` when a finding of the row's rule sits on the row's line (or names it
  as a related line), `other code` when a finding of another rule does, else `missed`;
  for a `reorder` row (a fix that only reorders correct code) `silent` or the findings.
- after: `silent` when the fixed file has no finding of the row's rule, else the
  findings of that rule.  Every other finding of either version is printed with its
  verdict from judged.tsv (repository, commit, path, line, code, verdict, reason), or
  UNJUDGED: read it and judge it before the figures are kept.

`--tree` writes each version's whole tree (git archive) and checks the path within it,
for project-wide analysis across files (issue 27): rows whose cause is `cross-file`
are the ones to rerun then.  No third-party code is kept: the scratch directory is
removed at the end.

    python benchmarks/fix_study/study.py [--mirror /work/.mirror] [--only owner/name] [--tree] [--table]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Row:
    repo: str
    fix: str
    path: str
    line: int
    rule: str
    kind: str  # "bug" (the parent has it) or "reorder" (both versions are correct)
    cause: str  # why gradlint misses it, when it does ("" when found)
    after_path: str = ""
    parent: str = ""
    before: str = ""
    after: str = ""
    others: list = field(default_factory=list)


def read_rows(path: Path) -> list[Row]:
    rows = []
    for text in path.read_text(encoding="utf-8").splitlines():
        if not text.strip() or text.startswith("#"):
            continue
        cells = text.split("\t")
        cells += [""] * (8 - len(cells))
        repo, fix, file, line, rule, kind, cause, after_path = cells[:8]
        rows.append(Row(repo, fix, file, int(line), rule, kind, cause, after_path or file))
    return rows


def read_judged(path: Path) -> dict:
    judged = {}
    if path.is_file():
        for text in path.read_text(encoding="utf-8").splitlines():
            if text.strip() and not text.startswith("#"):
                repo, commit, file, line, code, verdict, reason = text.split("\t")
                judged[(repo, commit[:12], file, int(line), code)] = (verdict, reason)
    return judged


def git_dir(mirror: Path, repo: str) -> Path:
    base = mirror / repo.replace("/", "+") / "repo"
    return base / ".git" if (base / ".git").exists() else base


def git(gdir: Path, *args: str, binary: bool = False):
    out = subprocess.run(["git", "--git-dir", str(gdir), *args], capture_output=True, check=True)
    return out.stdout if binary else out.stdout.decode("utf-8", "replace").strip()


def write_version(gdir: Path, commit: str, path: str, dest: Path, tree: bool) -> Path:
    """The file (or the whole tree) at `commit` under dest; the path to check."""
    dest.mkdir(parents=True, exist_ok=True)
    if tree:
        _write_python_files(gdir, commit, dest)
    else:
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(git(gdir, "show", f"{commit}:{path}", binary=True))
    return dest / path


_CHECKED_SUFFIXES = (".py", ".pyi", ".ipynb")


def _write_python_files(gdir: Path, commit: str, dest: Path) -> None:
    """The files gradlint reads of the tree at `commit` (a snapshot may lack other blobs, such
    as large data files, which makes `git archive` fail); an unreadable blob is left out."""
    listing = git(gdir, "ls-tree", "-r", "-z", commit, binary=True).split(b"\0")
    wanted = []
    for entry in listing:
        if not entry:
            continue
        meta, _, name = entry.partition(b"\t")
        mode, kind, sha = meta.split()
        path = name.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and path.endswith(_CHECKED_SUFFIXES):
            wanted.append((sha.decode(), path))
    for sha, path in wanted:
        done = subprocess.run(["git", "--git-dir", str(gdir), "cat-file", "blob", sha], capture_output=True)
        if done.returncode != 0:
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(done.stdout)


def findings(path: Path, root: Path, tree: bool = False) -> list[dict]:
    """The findings about `path`: on it, or (with the whole tree checked) on a call in another
    file of a loop whose misplaced call sits in `path` (a related location there)."""
    command = ["gradlint", "--isolated", "--no-cache", "--exit-zero", "--output-format", "json", "." if tree else str(path)]
    out = subprocess.run(command, capture_output=True, text=True, cwd=root)
    report = json.loads(out.stdout)
    found = []
    for f in report["findings"]:
        if Path(root, f["path"]).resolve() == path.resolve():
            found.append(f)
        elif tree:
            here = [r for r in f.get("related", ()) if Path(root, r["path"]).resolve() == path.resolve()]
            if here:  # judged by its lines in `path`
                found.append(dict(f, path=str(path.relative_to(root)), line=here[0]["line"], related=here))
    return found


def lines_of(finding: dict) -> set[int]:
    return {finding["line"]} | {r["line"] for r in finding.get("related", ())}


def judge(group: list[Row], mirror: Path, scratch: Path, tree: bool, judged: dict) -> None:
    """The verdicts of the rows of one fix and one file (one run of each version)."""
    row = group[0]
    gdir = git_dir(mirror, row.repo)
    fix = git(gdir, "rev-parse", row.fix)
    parent = git(gdir, "rev-parse", f"{fix}^")
    before_root, after_root = scratch / "before", scratch / "after"
    for root in (before_root, after_root):
        shutil.rmtree(root, ignore_errors=True)
    before = findings(write_version(gdir, parent, row.path, before_root, tree), before_root, tree)
    after = findings(write_version(gdir, fix, row.after_path, after_root, tree), after_root, tree)
    matched: list[dict] = []
    for r in group:
        r.fix, r.parent = fix, parent
        mine = [f for f in before if f["code"] == r.rule and r.line in lines_of(f)]
        matched += mine
        if r.kind == "reorder":
            r.before = "silent" if not before else "findings"
        elif mine:
            r.before = "found"
        elif any(r.line in lines_of(f) for f in before):
            r.before = "other code"
        else:
            r.before = "missed"
        r.after = "silent" if not any(f["code"] == r.rule for f in after) else "fires"
    others = []
    for version, commit, path, found in (("before", parent, row.path, before), ("after", fix, row.after_path, after)):
        for f in found:
            if version == "before" and f in matched:
                continue
            verdict = judged.get((row.repo, commit[:12], path, f["line"], f["code"]), ("UNJUDGED", ""))
            others.append((version, commit[:12], path, f["line"], f["code"], verdict[0], verdict[1], f["message"]))
    row.others = others  # printed once per group


def table(rows: list[Row]) -> str:
    out = [
        "| repository | fix | parent | path | line | rule | before | after | cause of a miss |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.repo} | {r.fix[:10]} | {r.parent[:10]} | {r.path} | {r.line} | {r.rule} | {r.before} | "
            f"{r.after} | {r.cause} |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--fixes", type=Path, default=HERE / "fixes.tsv")
    parser.add_argument("--judged", type=Path, default=HERE / "judged.tsv")
    parser.add_argument("--only", action="append", default=[], help="owner/name (repeatable)")
    parser.add_argument("--tree", action="store_true", help="check each version's whole tree (cross-file analysis)")
    parser.add_argument("--table", action="store_true", help="print the README's table")
    args = parser.parse_args(argv)
    if shutil.which("gradlint") is None:
        sys.exit("the gradlint command is not on PATH (use the checkout's venv: PATH=.venv/bin:$PATH)")
    rows = [r for r in read_rows(args.fixes) if not args.only or r.repo in args.only]
    judged = read_judged(args.judged)
    scratch = Path(tempfile.mkdtemp(prefix="gradlint-fix-study-"))
    try:
        groups: dict[tuple, list[Row]] = {}
        for row in rows:
            groups.setdefault((row.repo, row.fix, row.path), []).append(row)
        for group in groups.values():
            try:
                judge(group, args.mirror, scratch, args.tree, judged)
            except (subprocess.CalledProcessError, OSError, json.JSONDecodeError) as error:
                for row in group:
                    row.before = row.after = f"error: {type(error).__name__}"
            for row in group:
                print(f"{row.repo} {row.fix[:10]} {row.path}:{row.line} {row.rule} ({row.kind}): before {row.before}, "
                      f"after {row.after}" + (f"  [{row.cause}]" if row.cause else ""))
            for version, commit, path, line, code, verdict, reason, message in group[0].others:
                print(f"    {version} {commit} {path}:{line} {code} {verdict} {reason or message[:100]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    bugs = [r for r in rows if r.kind == "bug"]
    found = sum(r.before == "found" for r in bugs)
    after_silent = sum(r.after == "silent" for r in rows)
    others = Counter(v for r in rows for (_, _, _, _, _, v, _, _) in r.others)
    print(f"\nfixes: {len(rows)} from {len({r.repo for r in rows})} repositories; bugs found before the fix: "
          f"{found}/{len(bugs)} ({found / max(1, len(bugs)):.2f}); fixed versions silent about the rule: "
          f"{after_silent}/{len(rows)} ({after_silent / max(1, len(rows)):.2f}); other findings by verdict: {dict(others)}")
    commits: dict = {}
    for r in bugs:
        commits.setdefault((r.repo, r.fix), []).append(r.before == "found")
    whole = sum(all(v) for v in commits.values())
    later = [r for r in bugs if r.before != "found" and "issue 27" in r.cause]
    print(f"fix commits: {len(commits)} with a bug, every misplaced call found in {whole} ({whole / max(1, len(commits)):.2f}); "
          f"misses left to project-wide analysis (issue 27): {len(later)}; found among the rest: "
          f"{found}/{len(bugs) - len(later)} ({found / max(1, len(bugs) - len(later)):.2f})")
    misses = Counter(r.cause or "(none given)" for r in bugs if r.before != "found")
    if misses:
        print("misses by cause: " + ", ".join(f"{cause}: {n}" for cause, n in misses.most_common()))
    if args.table:
        print()
        print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
