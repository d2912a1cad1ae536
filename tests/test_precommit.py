"""The pre-commit hook, run by the real pre-commit against a copy of this working tree.

The README's snippet that works today (`repo: local`, the user's clone as an
additional dependency) is used as written, the clone's path replaced by the
copy's.  The copy is also committed into a throwaway repository, so that
try-repo runs the published hooks file (what a `repo:` with a `rev:` gets after
the first release).  pre-commit builds the hook's virtualenv by pip-installing
that copy (libcst from PyPI): slow (tens of seconds) and it needs PyPI;
PRE_COMMIT_HOME is a temporary directory so nothing leaks into the user's cache.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ci_snippets import CLEAN_LOOP, GL002_LOOP, snippet, write

REPO = Path(__file__).resolve().parent.parent
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
COPIED = ("gradlint", "pyproject.toml", "README.md", ".pre-commit-hooks.yaml")

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not os.path.exists(PRE_COMMIT), reason="needs git and pre-commit on PATH"
)


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "gradlint test")
    git(path, "config", "commit.gpgsign", "false")


def hook_repo(tmp_path: Path) -> tuple[Path, str]:
    copy = tmp_path / "gradlint-src"
    copy.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=ignore)
        else:
            shutil.copy2(source, copy / name)
    init_repo(copy)
    git(copy, "add", ".")
    git(copy, "commit", "-q", "-m", "snapshot of the working tree")
    return copy, git(copy, "rev-parse", "HEAD")


def env_for(tmp_path: Path) -> dict:
    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    env["PRE_COMMIT_COLOR"] = "never"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.pop("VIRTUAL_ENV", None)
    # git hooks run with this PATH: pre-commit itself must be found
    env["PATH"] = os.pathsep.join([str(Path(PRE_COMMIT).parent), env.get("PATH", "")])
    return env


def test_hooks_file_declares_what_the_issue_asks():
    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    lint = hooks["gradlint"]
    assert lint["language"] == "python" and lint["types_or"] == ["python", "jupyter"]
    assert lint["require_serial"] is False and lint.get("pass_filenames", True) is True
    assert "--force-exclude" in lint["entry"].split() + lint.get("args", [])
    verify = hooks["gradlint-verify"]
    assert verify["stages"] == ["manual"] and verify["entry"].split()[:2] == ["gradlint", "verify"]


def test_hook_install_does_not_pull_torch():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("torch")]


CLONE = "/path/to/gradlint"  # the README snippet's stand-in for the user's clone


def readme_snippet_of_today() -> str:
    """The first `.pre-commit-config.yaml` block of the README's pre-commit section, as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## pre-commit\n")
    section = readme[start : readme.index("\n## ", start + 1)]
    return re.findall(r"```yaml\n(.*?)```", section, re.S)[0]


def test_commit_blocked_then_allowed(tmp_path):
    source, rev = hook_repo(tmp_path)
    work = tmp_path / "project"
    init_repo(work)
    env = env_for(tmp_path)
    snippet_text = readme_snippet_of_today()
    assert CLONE in snippet_text
    (work / ".pre-commit-config.yaml").write_text(snippet_text.replace(CLONE, str(source)))
    # configured excludes must hold for file names pre-commit passes explicitly (--force-exclude)
    write(work, "pyproject.toml", '[tool.gradlint]\nextend-exclude = ["legacy"]\n')
    write(work, "legacy/old_train.py", snippet(GL002_LOOP))
    write(work, "train.py", snippet(GL002_LOOP))
    write(work, "README.txt", "not python\n")
    subprocess.run([PRE_COMMIT, "install"], cwd=work, env=env, check=True, capture_output=True)
    git(work, "add", ".")

    blocked = subprocess.run(["git", "commit", "-m", "buggy"], cwd=work, env=env, capture_output=True, text=True)
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode != 0, output
    assert "gradlint" in output and "Failed" in output, output
    assert "train.py:8:5: GL002 [*] opt.zero_grad() discards the gradients" in output, output
    assert "legacy/old_train.py" not in output, output
    with pytest.raises(subprocess.CalledProcessError):
        git(work, "rev-parse", "HEAD")  # nothing was committed

    write(work, "train.py", snippet(CLEAN_LOOP))
    git(work, "add", "train.py")
    allowed = subprocess.run(["git", "commit", "-m", "clean"], cwd=work, env=env, capture_output=True, text=True)
    output = allowed.stdout + allowed.stderr
    assert allowed.returncode == 0, output
    assert "gradlint" in output and "Passed" in output, output

    # the same hook through try-repo, on a file named explicitly
    write(work, "second.py", snippet(GL002_LOOP))
    tried = subprocess.run(
        [PRE_COMMIT, "try-repo", str(source), "gradlint", "--ref", rev, "--files", "second.py"],
        cwd=work, env=env, capture_output=True, text=True,
    )
    assert tried.returncode == 1, tried.stdout + tried.stderr
    assert "second.py:8:5: GL002" in tried.stdout
