"""What share of the gradient calls of many repositories the analysis follows, and why not the rest.

No labels: every call that can be a gradient event (a backward, an optimizer's step or clear, a
clip, an unscale, a scheduler's step) gets a verdict from the check itself (followed, not
training, not followed with a reason: gradlint/model/coverage.py, gradlint/check/unfollowed.py).
Over a corpus of repositories this counts them per repository and in all, groups the
not-followed calls by reason with examples (path:line), and prints the figure

    followed / (followed + not followed)      (the share of training code the rules read)

The corpus: the study's repositories (realworld/repos.txt) and coverage_repos.txt, each line
`owner/name commit  # domain`.  Each repository is checked out (its .py files at that commit)
from its snapshot under MIRROR (the search tool's `fetch`), then checked as one project, the
way `gradlint REPO` checks it (one process, no cache).

    python benchmarks/coverage.py [--mirror /work/.mirror] [--dest /work/coverage/src]
                                  [--lists realworld/repos.txt coverage_repos.txt]
                                  [--json out.json] [--examples 5]
    python benchmarks/coverage.py --fetch-list      (github:owner/name of each one not fetched)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "realworld"))

from checkout import check_out, git_dir_of, read_repo_list  # noqa: E402

DEFAULT_LISTS = (HERE / "realworld" / "repos.txt", HERE / "coverage_repos.txt")


def verdicts_of(folder: Path):
    """The run's verdicts (gradlint/check/unfollowed.py) on one checked-out repository."""
    from gradlint.check.engine import RunOptions, check_paths
    from gradlint.check.unfollowed import verdicts
    from gradlint.options.settings import Settings

    run = check_paths([str(folder)], Settings.default(), RunOptions(jobs=1))
    return verdicts(run.results), len(run.findings())


def figure(counts: Counter) -> float | None:
    followed, blind = counts["followed"], counts["not followed"]
    return followed / (followed + blind) if followed + blind else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--dest", type=Path, default=Path("/work/coverage/src"))
    parser.add_argument("--lists", type=Path, nargs="+", default=list(DEFAULT_LISTS))
    parser.add_argument("--json", type=Path, help="write per-repository counts and every not-followed call here")
    parser.add_argument("--examples", type=int, default=5, help="examples shown per reason")
    parser.add_argument("--fetch-list", action="store_true")
    args = parser.parse_args(argv)

    repos = []
    for listing in args.lists:
        source = listing.name
        repos += [(name, commit, source) for name, commit in read_repo_list(listing)]
    if args.fetch_list:
        for name, _, _ in repos:
            if git_dir_of(args.mirror, name) is None:
                print(f"github:{name}")
        return 0

    totals: dict = defaultdict(Counter)  # list -> verdict counts
    reasons: dict = defaultdict(Counter)  # list -> reason counts (not followed)
    spread: dict = defaultdict(lambda: defaultdict(set))  # list -> reason -> repositories
    examples: dict = defaultdict(list)  # reason -> "repo/path:line"
    rows = []
    missing = []
    started = time.perf_counter()
    for name, commit, source in repos:
        git_dir = git_dir_of(args.mirror, name)
        if git_dir is None:
            missing.append(name)
            continue
        folder = args.dest / name.replace("/", "+")
        if not folder.is_dir():
            folder.mkdir(parents=True)
            check_out(git_dir, commit, folder)
        found, findings = verdicts_of(folder)
        counts: Counter = Counter(v.verdict for v in found)
        why: Counter = Counter()
        for v in found:
            if v.verdict == "not followed":
                why[v.reason] += 1
                spread[source][v.reason].add(name)
                if len(examples[v.reason]) < 200:
                    where = Path(v.path).relative_to(args.dest) if Path(v.path).is_relative_to(args.dest) else v.path
                    examples[v.reason].append(f"{where}:{v.call.line}")
            elif v.verdict == "not training":
                why["(not training) " + v.reason] += 1
        totals[source].update(counts)
        reasons[source].update({r: n for r, n in why.items() if not r.startswith("(")})
        rows.append({"repo": name, "commit": commit, "list": source, "findings": findings, **counts,
                     "reasons": dict(why),
                     "not_followed": [f"{v.path}:{v.call.line}:{v.call.col}: {v.reason}" for v in found
                                      if v.verdict == "not followed"]})
        share = figure(counts)
        print(f"{name:60} followed {counts['followed']:4}  not training {counts['not training']:4}  "
              f"not followed {counts['not followed']:4}  {'' if share is None else f'{share:.0%}'}", flush=True)

    print()
    for source, counts in totals.items():
        share = figure(counts)
        repos_in = sum(1 for r in rows if r["list"] == source)
        print(f"== {source}: {repos_in} repositories; followed {counts['followed']}, not training "
              f"{counts['not training']}, not followed {counts['not followed']}; "
              f"followed / (followed + not followed) = {'n/a' if share is None else f'{share:.3f}'}")
        for reason, n in reasons[source].most_common():
            print(f"   {n:5}  {reason}  ({len(spread[source][reason])} repositories)")
    print()
    for reason, where in sorted(examples.items(), key=lambda item: -len(item[1])):
        print(f"-- {reason}: " + ", ".join(where[: args.examples]))
    if missing:
        print(f"\nnot fetched ({len(missing)}): " + " ".join(missing))
    print(f"\n{len(rows)} repositories in {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"repositories": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
