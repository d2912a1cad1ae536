"""Copy the training files of fetched repositories out of their bare git dirs.

    python benchmarks/mutants/extract.py /work/.mirror /work/study/mutsrc

Reads benchmarks/mutants/repos.txt (`owner/name` per line, an optional
commit after it), takes from each repository's newest snapshot (the search
tool's `fetch` leaves a bare git dir at MIRROR/owner+name/repo) every `.py`
file that holds both `.backward(` and `.step(`, writes it under
DEST/owner+name/, and rewrites repos.txt with the commit that was read.
Third-party code is never written into this repository.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPOS = HERE / "repos.txt"


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def read_repos() -> list[tuple[str, str]]:
    rows = []
    for line in REPOS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            parts = line.split()
            rows.append((parts[0], parts[1] if len(parts) > 1 else ""))
    return rows


def extract(mirror: Path, dest: Path) -> list[tuple[str, str, int]]:
    done = []
    for repo, _ in read_repos():
        git_dir = mirror / repo.replace("/", "+") / "repo"
        if not git_dir.exists():
            print(f"{repo}: not fetched, skipped", file=sys.stderr)
            continue
        commit = _git(git_dir, "rev-parse", "HEAD").decode().strip()
        names = _git(git_dir, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
        kept = 0
        for name in names:
            if not name.endswith(".py"):
                continue
            try:
                data = _git(git_dir, "show", f"{commit}:{name}")
            except subprocess.CalledProcessError:
                continue  # a listed but absent large file
            if b".backward(" not in data or b".step(" not in data:
                continue
            out = dest / repo.replace("/", "+") / name
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            kept += 1
        done.append((repo, commit, kept))
        print(f"{repo} {commit[:12]}: {kept} files")
    return done


def main(argv: list[str]) -> int:
    mirror, dest = Path(argv[0]), Path(argv[1])
    done = extract(mirror, dest)
    header = [line for line in REPOS.read_text().splitlines() if line.startswith("#")]
    rows = [f"{repo} {commit}  # {kept} training files" for repo, commit, kept in done]
    REPOS.write_text("\n".join(header + rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
