"""Check out the .py and .ipynb files of each study repository.

Reads repos.txt (``owner/name commit`` per line) and, for each repository
whose bare git snapshot exists under MIRROR/owner+name/repo (where the
search tool's ``fetch`` puts them), writes that commit's Python files and
notebooks to DEST/owner+name. Only source files are taken: snapshots may
lack their largest blobs, and ``git archive`` of the whole tree would stop
at the first missing one.

    python benchmarks/realworld/checkout.py [--mirror /work/.mirror] [--dest /work/study/src]
    python benchmarks/realworld/checkout.py --fetch-list   (what to fetch first)

Some snapshots arrive as a work tree's MIRROR/owner+name/repo/.git rather
than a bare MIRROR/owner+name/repo: both are read.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tarfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".ipynb")


def read_repo_list(path: Path) -> list[tuple[str, str]]:
    """(owner/name, commit) pairs; blank lines and # comments skipped."""
    pairs = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, commit = line.split()
            pairs.append((name, commit))
    return pairs


def git_dir_of(mirror: Path, name: str) -> Path | None:
    """The snapshot's git directory (bare, or the .git of a work tree), None when not fetched."""
    base = mirror / name.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def source_paths(git_dir: Path, commit: str) -> list[str]:
    listing = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", "--name-only", commit],
        check=True, capture_output=True,
    ).stdout.decode("utf-8", "replace")
    return [p for p in listing.split("\0") if p.endswith(SOURCE_SUFFIXES)]


def check_out(git_dir: Path, commit: str, dest: Path) -> int:
    """Write the commit's source files under dest; returns how many."""
    paths = source_paths(git_dir, commit)
    written = 0
    # In batches: a command line of thousands of paths can exceed ARG_MAX.
    for start in range(0, len(paths), 500):
        batch = paths[start:start + 500]
        archive = subprocess.run(
            ["git", f"--git-dir={git_dir}", "archive", "--format=tar", commit, "--", *batch],
            capture_output=True,
        )
        if archive.returncode != 0:
            # A missing blob in this batch: fall back to one file at a time.
            for path in batch:
                written += _check_out_one(git_dir, commit, path, dest)
            continue
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            tar.extractall(dest, members=members, filter="data")
            written += len(members)
    return written


def _check_out_one(git_dir: Path, commit: str, path: str, dest: Path) -> int:
    blob = subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], capture_output=True,
    )
    if blob.returncode != 0:
        return 0
    target = dest / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(blob.stdout)
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--dest", type=Path, default=Path("/work/study/src"))
    parser.add_argument("--repos", type=Path, default=HERE / "repos.txt")
    parser.add_argument("--fetch-list", action="store_true",
                        help="print `github:owner/name` for each repository not yet fetched, and stop")
    args = parser.parse_args(argv)
    missing = 0
    for name, commit in read_repo_list(args.repos):
        slug = name.replace("/", "+")
        git_dir = git_dir_of(args.mirror, name)
        if args.fetch_list:
            if git_dir is None:
                print(f"github:{name}")
            continue
        if git_dir is None:
            print(f"{name}: no snapshot under {args.mirror / slug} (fetch github:{name} first)",
                  file=sys.stderr)
            missing += 1
            continue
        count = check_out(git_dir, commit, args.dest / slug)
        print(f"{name} {commit[:10]}: {count} files")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
