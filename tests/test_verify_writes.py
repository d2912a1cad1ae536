"""Issue 21: `gradlint verify` runs scripts that write, in a copy-on-write view of their folders.

Each run here is a real `gradlint verify` on a script of tests/verify_scripts in
a folder of its own, hashed before and after: the script must reach its steps
and the folder (and the files outside it the script writes) must not change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from installed import require
from trees import tree_digest

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "tests", "verify_scripts")


def verify(*args, cwd, env=None):
    return subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", *args], cwd=cwd, capture_output=True, text=True, timeout=180,
        env=env,
    )


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "train.log").write_text("old run\n")
    (folder / "final.pt").write_bytes(b"the real checkpoint")
    return folder


def test_a_script_that_writes_like_real_ones_is_verified_and_its_folder_is_unchanged(project):
    before = tree_digest(project)
    result = verify("--format", "json", os.path.join(SCRIPTS, "writes_outputs.py"), cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert (report["run"]["reason"], report["run"]["steps"]) == ("steps", 5)
    assert tree_digest(project) == before
    writes = {w["path"]: w for w in report["run"]["writes"]}
    assert set(writes) == {
        "final.pt", "train.log", "outputs", "outputs/checkpoints", "outputs/config.json", "outputs/config.backup.json",
        "outputs/checkpoints/step_3.pt", "outputs/checkpoints/step_4.pt",  # the script removed the older ones
    }
    assert all(w["redirected"] and not w["refused"] for w in writes.values())
    assert writes["outputs"]["action"] == "create directory"
    assert writes["outputs/checkpoints/step_4.pt"]["size"] > 1000
    assert writes["outputs/config.json"]["size"] == len('{"lr": 0.1, "steps": 100}')
    overlay = report["run"]["overlay"]
    assert overlay["kept"] is False and not os.path.exists(overlay["path"])


@pytest.mark.xdist_group("imports_torch")  # torch in this process: on one worker, not on each
@pytest.mark.parametrize("mode", ["auto", "python"])
def test_keep_writes_keeps_the_overlay_under_absolute_paths(project, tmp_path, mode):
    before = tree_digest(project)
    kept = tmp_path / "kept"
    result = verify("--containment", mode, "--keep-writes", str(kept), os.path.join(SCRIPTS, "writes_outputs.py"),
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_digest(project) == before
    assert (f"the script ran in its own namespaces: its writes, and those of every process it started, went to a "
            f"kernel overlay (kept in {kept}), not to your files:" in result.stdout
            or f"the script's writes through Python's file functions went to a copy-on-write overlay (kept in {kept}):"
            in result.stdout)
    assert "    write outputs/config.json (25 bytes)\n" in result.stdout
    mirror = kept / str(project).lstrip(os.sep)
    log = (mirror / "train.log").read_text().splitlines()
    assert log[0] == "old run" and [line.split()[:2] for line in log[1:]] == [["step", str(i)] for i in range(5)]
    import torch  # here only: the other tests run torch in the processes they start

    assert torch.load(mirror / "outputs" / "checkpoints" / "step_4.pt")["step"] == 4
    assert sorted(os.listdir(mirror / "outputs" / "checkpoints")) == ["step_3.pt", "step_4.pt"]


def test_writes_outside_the_project_go_to_the_overlay_too(project, tmp_path):
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / ".cache" / "my_tool").mkdir(parents=True)
    (home / ".cache" / "my_tool" / "seen.txt").write_text("first\n")
    outside.mkdir()
    before = tree_digest(tmp_path)
    result = verify("--format", "json", os.path.join(SCRIPTS, "writes_outside_project.py"), "--", str(outside),
                    cwd=project, env=dict(os.environ, HOME=str(home)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_digest(tmp_path) == before
    report = json.loads(result.stdout)
    written = {w["path"]: w.get("size") for w in report["run"]["writes"] if w["action"] == "write"}
    assert written == {str(home / ".cache" / "my_tool" / "seen.txt"): len("first\nrun\n"),
                       str(outside / "out" / "metrics.txt"): len("loss 1.0\n")}


def test_a_write_that_goes_around_the_python_overlay_is_still_refused(project):
    before = tree_digest(project)
    result = verify("--containment", "python", "--format", "json", os.path.join(SCRIPTS, "writes_around_overlay.py"),
                    cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_digest(project) == before
    report = json.loads(result.stdout)
    assert report["run"]["steps"] == 5
    refused = [(w["action"], os.path.basename(w["path"])) for w in report["run"]["writes"] if w["refused"]]
    assert refused == [("write", "around.txt")]


def test_in_the_namespace_a_write_around_python_lands_in_the_kernel_overlay(project):
    before = tree_digest(project)
    result = verify("--format", "json", os.path.join(SCRIPTS, "writes_around_overlay.py"), cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_digest(project) == before
    report = json.loads(result.stdout)
    if report["run"]["containment"]["mode"] != "namespace":
        pytest.skip("this system does not allow user namespaces with overlayfs")
    assert [(w["action"], w["path"], w["refused"]) for w in report["run"]["writes"]] == [
        ("write", "around.txt", False)]


@pytest.mark.parametrize("extra, message", [
    (("--allow-writes",), "with --allow-writes there is no overlay"),
    ((), "give a new or empty folder"),
])
def test_keep_writes_refuses_a_folder_with_files_and_allow_writes(project, tmp_path, extra, message):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("mine")
    result = verify(*extra, "--keep-writes", str(kept), os.path.join(SCRIPTS, "writes_outputs.py"), cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert (kept / "mine.txt").read_text() == "mine" and os.listdir(kept) == ["mine.txt"]
