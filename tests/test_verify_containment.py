"""Issue 29: every route a script can write by, or escape by, is contained or listed in the report.

Each run is a real `gradlint verify` of tests/verify_scripts/routes.py in a project folder, with a
sibling folder and $HOME (a folder of the test's) hashed before and after, in both containment
modes: `namespace` (its own user, mount and pid namespaces over kernel overlays; skipped where
the system does not allow it) and `python` (the Python-level overlay, which must list whatever it
could not contain).  The default suite runs every route at once in each mode; the slow set runs
each route on its own.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time

import pytest

from installed import require

from trees import tree_digest

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "verify_scripts", "routes.py")
ALL = ["sqlite", "from_file", "mkfifo", "ctypes", "subprocess", "system", "helper", "fork_setsid", "setsid"]
# routes the Python-level overlay contains (redirected into it); the others it must list
PYTHON_CONTAINS = {"sqlite", "from_file", "mkfifo"}
LISTED_AS = {"ctypes": "ctypes", "subprocess": "subprocess", "system": "os.system", "helper": "subprocess",
             "fork_setsid": "new session", "setsid": "subprocess"}


@pytest.fixture
def places(tmp_path):
    project, sibling, home = tmp_path / "project", tmp_path / "sibling", tmp_path / "home"
    for folder in (project, sibling, home):
        folder.mkdir()
    (project / "train.log").write_text("old\n")
    (sibling / "notes.txt").write_text("notes\n")
    (sibling / "weights.bin").write_bytes(b"\0" * 16)
    connection = sqlite3.connect(sibling / "shared.db")
    connection.execute("create table runs (step integer)")
    connection.commit()
    connection.close()
    (home / ".config").mkdir()
    return project, sibling, home


def _sleepers(tag: str) -> list:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if handle.read().split(b"\0")[:2] == [b"sleep", tag.encode()]:
                    found.append(int(pid))
        except OSError:
            continue
    return found


def run_routes(places, mode, routes):
    project, sibling, home = places
    tag = f"{random.randint(10000, 99999)}.5"
    before = [tree_digest(p) for p in places]
    env = dict(os.environ, HOME=str(home), ROUTES_TAG=tag)
    result = subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", "--containment", mode, "--format", "json", SCRIPT, "--", *routes],
        cwd=project, capture_output=True, text=True, timeout=300, env=env)
    time.sleep(0.5)
    left = _sleepers(tag)
    for pid in left:
        os.kill(pid, 9)
    if mode == "namespace" and "cannot contain the script in a namespace" in result.stderr:
        pytest.skip("this system does not allow user namespaces with overlayfs: " + result.stderr)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    assert report["run"]["steps"] == 5, report["run"]
    assert report["run"]["containment"]["mode"] == mode
    after = [tree_digest(p) for p in places]
    return report, before, after, left


def _listed(report) -> set:
    return {u["route"] for u in report["run"]["uncontained"]}


def check_namespace(report, before, after, left, places, routes):
    assert after == before  # nothing reached the folders, whatever route
    assert left == []  # the pid namespace ended the daemons
    assert report["run"]["uncontained"] == []
    project, sibling, home = places
    written = {w["path"] for w in report["run"]["writes"]}
    expected = {
        "sqlite": {"runs.db", str(sibling / "shared.db")}, "from_file": {str(sibling / "weights.bin")},
        "mkfifo": {"pipe", str(home / "pipe")}, "ctypes": {"ctypes.txt"},
        "subprocess": {"subprocess.txt", str(sibling / "notes.txt")}, "system": {str(home / "system.txt")},
        "helper": {"wandb", "wandb/run-1", "wandb/run-1/events"},
    }
    for route in routes:
        assert expected.get(route, set()) <= written, (route, written)


def check_python(report, before, after, left, places, routes):
    listed = _listed(report)
    for route in routes:
        if route in PYTHON_CONTAINS:
            continue
        assert LISTED_AS[route] in listed, (route, report["run"]["uncontained"])
    assert left == []  # verify's clean-up ends what the script left running
    if not set(routes) - PYTHON_CONTAINS:
        assert after == before
    project, sibling, home = places
    written = {w["path"] for w in report["run"]["writes"]}
    if "sqlite" in routes:
        assert {"runs.db", str(sibling / "shared.db")} <= written
    if "from_file" in routes:
        assert str(sibling / "weights.bin") in written
    if "mkfifo" in routes:
        assert {"pipe", str(home / "pipe")} <= written


@pytest.mark.parametrize("mode", ["namespace", "python"])
def test_every_route_at_once_is_contained_or_listed(places, mode):
    report, before, after, left = run_routes(places, mode, ALL)
    (check_namespace if mode == "namespace" else check_python)(report, before, after, left, places, ALL)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["namespace", "python"])
@pytest.mark.parametrize("route", ALL)
def test_each_route_is_contained_or_listed(places, mode, route):
    report, before, after, left = run_routes(places, mode, [route])
    (check_namespace if mode == "namespace" else check_python)(report, before, after, left, places, [route])


def test_routes_the_python_overlay_contains_leave_the_folders_unchanged(places):
    report, before, after, left = run_routes(places, "python", sorted(PYTHON_CONTAINS))
    assert after == before and report["run"]["uncontained"] == []


def test_a_ctypes_lookup_is_listed_unless_it_is_pythons_own_c_api(monkeypatch):
    from gradlint.verify import routes

    seen = []
    monkeypatch.setattr(routes, "_state", {"report": seen.append, "seen": set(), "busy": False})
    routes._audit("ctypes.dlsym", (object(), "PyBytes_FromStringAndSize"))  # tensorboard, via ctypes.pythonapi
    routes._audit("ctypes.dlsym", (object(), "open"))
    routes._audit("ctypes.dlsym", (object(), "open"))  # once per name
    routes._audit("os.system", (b"echo hi",))
    assert [(r["route"], r["what"]) for r in seen] == [("ctypes", "open"), ("os.system", "echo hi")]


def test_where_the_namespace_cannot_be_built_the_python_overlay_runs_and_says_why(tmp_path, monkeypatch):
    from gradlint.verify import runner

    failing = tmp_path / "sandbox.py"  # stands for a system that refuses user namespaces
    failing.write_text("import json, sys\nstatus = sys.argv[sys.argv.index('--status') + 1]\n"
                       "json.dump({'ok': False, 'error': 'unshare: Operation not permitted'}, open(status, 'w'))\n"
                       "sys.exit(111)\n")
    monkeypatch.setattr(runner, "_SANDBOX", str(failing))
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run = runner.Child(SCRIPT, ["mkfifo"], containment="auto", timeout=120).wait()
    assert run.containment == {"mode": "python", "namespace_unavailable": "unshare: Operation not permitted",
                               "network": "host (connections listed in uncontained)",
                               "passed_through": ["/dev", "/proc", "/sys"]}
    assert run.steps == 5 and not os.path.exists(tmp_path / "pipe") and os.listdir(tmp_path / "home") == []
    assert sorted((w["action"], w["path"]) for w in run.writes) == [
        ("create FIFO", str(tmp_path / "home" / "pipe")), ("create FIFO", str(tmp_path / "pipe"))]
    refused = runner.Child(SCRIPT, containment="namespace", timeout=120).wait()
    assert refused.started is False
    assert refused.start_error == "cannot contain the script in a namespace: unshare: Operation not permitted"
