"""Issue 47: verify's namespace mode contains what bubblewrap's `--unshare-all --dev /dev --ro-bind`
contains: a project folder with mount points in it, remounts, devices, /sys, /dev/shm, sysctls and
the network (TCP on 127.0.0.1, an abstract Unix socket, a socket file of a host service).

Each run is a real `gradlint verify --containment namespace` of tests/verify_scripts/escapes.py in a
project folder beside a read-only mount (frozen/, as an NFS share mounted read-only) and a file
(notes.txt); as root the project holds a tmpfs mount point (data/) too.  The folders, the host's
/dev/shm and cgroups are compared before and after, and a TCP listener on 127.0.0.1 and an abstract
Unix socket on the host wait for the script.  Making mounts needs root: skipped otherwise.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import signal
import threading
import time

import pytest

from installed import require

from trees import tree_digest
from test_verify_containment import _sleepers
from unprivileged import unprivileged_run

require("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "tests", "verify_scripts", "escapes.py")
ROUTES = ["append", "remount", "device", "cgroup", "shm", "sysctl", "tcp", "abstract", "unix"]
CGROUPS = ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup")

needs_root = pytest.mark.skipif(not sys.platform.startswith("linux") or os.geteuid() != 0,
                                reason="making the test's mounts needs root on Linux")


def _mount(*args):
    return subprocess.run(["mount", *args], capture_output=True, text=True).returncode == 0


class Listener:
    """A host service the script must not reach: it records whatever arrives."""

    def __init__(self, family, address):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind(address)
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.received, self.stopped = [], False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.received.append(conn.recv(200))
                except OSError:
                    self.received.append(b"(connected)")

    def close(self):
        self.stopped = True
        self.thread.join(5)
        self.sock.close()


@pytest.fixture
def site(tmp_path):
    """tmp/project (config.yaml, data/ a tmpfs), tmp/frozen (a read-only bind of tmp/frozen_src),
    tmp/notes.txt; unmounted and cleaned whatever happens."""
    tag = str(random.randint(100000, 999999))
    project, source, frozen = tmp_path / "project", tmp_path / "frozen_src", tmp_path / "frozen"
    for folder in (project, source, frozen, project / "data"):
        folder.mkdir()
    (project / "config.yaml").write_text("lr: 0.1\n")
    (source / "model.txt").write_text("weights\n")
    (tmp_path / "notes.txt").write_text("notes\n")
    mounted = []
    try:
        if not (_mount("--bind", str(source), str(frozen)) and _mount("-o", "remount,bind,ro", str(frozen))):
            pytest.skip("this machine does not let root make a read-only bind mount")
        mounted.append(frozen)
        tcp = Listener(socket.AF_INET, ("127.0.0.1", 0))
        abstract = Listener(socket.AF_UNIX, f"\0escape-{tag}")
        unix = Listener(socket.AF_UNIX, str(tmp_path / "service.sock"))  # a file beside the mount
        yield {"tmp": tmp_path, "project": project, "tag": tag, "tcp": tcp, "abstract": abstract, "unix": unix,
               "mounted": mounted}
    finally:
        for listener in ("tcp", "abstract", "unix"):
            if listener in locals():
                locals()[listener].close()
        for point in reversed(mounted):
            subprocess.run(["umount", "-l", str(point)], capture_output=True)
        for leftover in [f"/dev/shm/escape-{tag}"]:
            if os.path.exists(leftover):
                os.unlink(leftover)
        for root in CGROUPS:
            if os.path.isdir(os.path.join(root, f"escape-{tag}")):
                os.rmdir(os.path.join(root, f"escape-{tag}"))


def _mount_data(site):
    data = site["project"] / "data"
    if not _mount("-t", "tmpfs", f"escape-{site['tag']}", str(data)):
        pytest.skip("this machine does not let root mount a tmpfs")
    site["mounted"].append(data)
    (data / "d.csv").write_text("1,2\n")


def _host_state(site):
    return {"tree": tree_digest(site["tmp"]),
            "shm": os.path.exists(f"/dev/shm/escape-{site['tag']}"),
            "cgroups": [r for r in CGROUPS if os.path.isdir(os.path.join(r, f"escape-{site['tag']}"))],
            "mounts": _mounts(site["tmp"])}


def _mounts(tmp) -> list:
    """The host's mounts in the test's folder and any of verify's: a run must leave none behind."""
    with open("/proc/self/mountinfo") as handle:
        lines = handle.read().splitlines()
    return sorted(line.split()[4] for line in lines
                  if line.split()[4].startswith(str(tmp)) or "gradlint-verify-" in line)


def _verify(site, run=subprocess.run, **kwargs):
    env = dict(os.environ, ESCAPE_TAG=site["tag"], ESCAPE_PORT=str(site["tcp"].sock.getsockname()[1]))
    return run([sys.executable, "-m", "gradlint", "verify", "--containment", "namespace", "--format", "json",
                SCRIPT, "--", *ROUTES], cwd=site["project"], env=env, timeout=300, **kwargs)


def _attempts(report) -> dict:
    found = {}
    for line in report["run"]["output_tail"].splitlines():
        if line.startswith("ESCAPE "):
            route, outcome, *detail = line.split(" ", 3)[1:]
            found.setdefault(route, []).append((outcome, *detail))
    return found


def _check_contained(site, before, result):
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    assert report["run"]["steps"] == 5 and report["run"]["containment"]["mode"] == "namespace"
    assert _host_state(site) == before  # folders, /dev/shm, cgroups, mounts: as they were
    assert site["tcp"].received == [] and site["abstract"].received == [] and site["unix"].received == []
    attempts = _attempts(report)
    # a read-only mount stays read-only (remounting an overlay, writable already, changes nothing)
    assert not {("ok", "../frozen"), ("ok", "../notes.txt")} & set(attempts.get("remount", ())), attempts
    assert "umount" not in attempts, attempts  # no mount can be taken away to show what is under it
    for route in ("loop0", "cgroup", "sysctl", "tcp", "abstract", "unix", "write_frozen"):
        assert attempts[route][0][0] == "refused", (route, attempts)
    assert attempts["block_devices"] == [("refused",)], attempts  # no block device in its /dev
    assert attempts["shm_written"] == [("ok",)]  # into its own /dev/shm
    assert report["run"]["containment"]["network"] == "loopback only"
    return report, attempts


@needs_root
def test_as_root_a_project_with_a_mount_point_is_overlaid_and_nothing_gets_out(site):
    _mount_data(site)
    before = _host_state(site)
    report, attempts = _check_contained(site, before, _verify(site, capture_output=True, text=True))
    assert attempts["append"] == [("ok",)]  # a correct script's append works, into the overlay
    writes = {w["path"]: w for w in report["run"]["writes"]}
    assert writes["config.yaml"]["size"] == len("lr: 0.1\nappended by the script\n")


@needs_root
def test_as_a_user_the_same_routes_stay_inside(site):
    before = _host_state(site)
    report, attempts = _check_contained(site, before, _verify(site, run=unprivileged_run, no_mounts=True))
    assert attempts["append"] == [("ok",)]
    assert attempts["write_notes"] == [("refused", "Read-only file system")]
    assert [str(site["tmp"] / "notes.txt"), report["run"]["containment"]["readonly"][0][1]] in \
        report["run"]["containment"]["readonly"]


@needs_root
def test_as_a_user_a_project_holding_a_mount_point_is_refused_with_the_reason(site):
    _mount_data(site)
    before = _host_state(site)
    result = _verify(site, run=unprivileged_run, no_mounts=True)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    assert (f"{site['project']} cannot be overlaid here: it holds a mount point ({site['project'] / 'data'}), and a "
            "user namespace cannot overlay the files beside one") in result.stderr
    assert _host_state(site) == before


# --- the Python mode: what it cannot contain, it refuses or lists ----------------------------------------


@pytest.fixture
def tcp_listener():
    listener = Listener(socket.AF_INET, ("127.0.0.1", 0))
    try:
        yield listener
    finally:
        listener.close()


def test_python_mode_contains_chown_refuses_fchmod_and_lists_exec_and_the_network(tmp_path, tcp_listener):
    (tmp_path / "data.txt").write_text("data\n")
    os.chmod(tmp_path / "data.txt", 0o644)
    before = os.stat(tmp_path / "data.txt")
    port = tcp_listener.sock.getsockname()[1]
    result = subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", "--containment", "python", "--format", "json",
         os.path.join(ROOT, "tests", "verify_scripts", "python_escapes.py"), "--", "fchmod", "chown", "exec", "tcp"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ, ESCAPE_PORT=str(port)))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    report = json.loads(result.stdout)
    after = os.stat(tmp_path / "data.txt")
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    attempts = _attempts(report)
    assert attempts["fchmod"][0][0] == "refused"
    writes = {(w["action"], os.path.basename(w["path"]), w["refused"]) for w in report["run"]["writes"]}
    assert ("change the mode of", "data.txt", True) in writes
    uncontained = {(u["route"], u["what"]) for u in report["run"]["uncontained"]}
    assert ("network", f"127.0.0.1 port {port}") in uncontained  # the host's loopback: listed, not cut
    assert ("os.exec", "sh -c echo from exec > exec.txt") in uncontained
    containment = report["run"]["containment"]
    assert containment["passed_through"] == ["/dev", "/proc", "/sys"]
    assert containment["network"].startswith("host")
    text = subprocess.run(
        [sys.executable, "-m", "gradlint", "verify", "--containment", "python",
         os.path.join(ROOT, "tests", "verify_scripts", "python_escapes.py"), "--", "tcp"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ, ESCAPE_PORT=str(port)))
    assert f"    connected to 127.0.0.1 port {port} (line " in text.stdout, text.stdout
    assert "passes /dev, /proc and /sys through" in text.stdout


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_python_mode_sigkill_of_verify_ends_the_setsid_daemon_and_removes_the_temporary_folder(tmp_path):
    tag = f"{random.randint(10000, 99999)}.75"
    verify = subprocess.Popen(
        [sys.executable, "-m", "gradlint", "verify", "--containment", "python", "--timeout", "120",
         os.path.join(ROOT, "tests", "verify_scripts", "setsid_and_hang.py")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, ROUTES_TAG=tag))
    try:
        deadline = time.monotonic() + 120
        while not _sleepers(tag):
            assert verify.poll() is None and time.monotonic() < deadline, verify.communicate()
            time.sleep(0.2)
        folders = [f for f in os.listdir(tempfile_dir()) if f.startswith("gradlint-verify-")
                   and _owner(os.path.join(tempfile_dir(), f)) == verify.pid]
        verify.send_signal(signal.SIGKILL)
        verify.wait(30)
        deadline = time.monotonic() + 10
        while (_sleepers(tag) or any(os.path.exists(os.path.join(tempfile_dir(), f)) for f in folders)) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _sleepers(tag)
    finally:
        if verify.poll() is None:
            verify.kill()
            verify.wait()
        for pid in _sleepers(tag):
            os.kill(pid, signal.SIGKILL)
    assert left == []
    assert len(folders) == 1 and not os.path.exists(os.path.join(tempfile_dir(), folders[0]))


def tempfile_dir():
    import tempfile

    return tempfile.gettempdir()


def _owner(folder):
    try:
        with open(os.path.join(folder, "owner.pid")) as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def test_the_next_run_removes_the_folders_of_dead_runs_only(tmp_path):
    from gradlint.verify.runner import remove_stale_folders

    dead = subprocess.Popen(["true"])
    dead.wait()
    for name, owner in (("gradlint-verify-dead", dead.pid), ("gradlint-verify-live", os.getpid()),
                        ("gradlint-verify-older", None), ("other-dead", dead.pid)):
        (tmp_path / name / "ns" / "work" / "0" / "work").mkdir(parents=True)
        os.chmod(tmp_path / name / "ns" / "work" / "0" / "work", 0)  # as overlayfs leaves it
        if owner is not None:
            (tmp_path / name / "owner.pid").write_text(str(owner))
    assert remove_stale_folders(str(tmp_path)) == [str(tmp_path / "gradlint-verify-dead")]
    assert sorted(os.listdir(tmp_path)) == ["gradlint-verify-live", "gradlint-verify-older", "other-dead"]


def test_allow_network_gives_the_namespace_the_hosts_network_and_the_report_says_so(tmp_path, tcp_listener):
    port = tcp_listener.sock.getsockname()[1]
    command = [sys.executable, "-m", "gradlint", "verify", "--containment", "namespace", "--allow-network", SCRIPT,
               "--", "tcp"]
    env = dict(os.environ, ESCAPE_TAG="allowed", ESCAPE_PORT=str(port))
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    if "cannot contain the script in a namespace" in result.stderr:
        pytest.skip("this system does not allow user namespaces with overlayfs: " + result.stderr)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "note: the script had the host's network (--allow-network)" in result.stdout
    deadline = time.monotonic() + 5
    while not tcp_listener.received and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tcp_listener.received == [b"secret allowed\n"]


def test_without_a_subreaper_the_python_mode_says_daemons_may_outlive_a_killed_verify(monkeypatch):
    from gradlint.verify import routes

    seen = []
    monkeypatch.setattr(routes, "_state", {"report": None, "seen": set(), "busy": False})
    monkeypatch.setattr(routes, "_become_subreaper", lambda: False)
    for name in ("_wrap_session_calls", "_wrap_multiprocessing_spawn"):
        monkeypatch.setattr(routes, name, lambda: None)
    monkeypatch.setattr(routes.sys, "addaudithook", lambda hook: None)  # not in the test's own process
    routes.install(seen.append, contained=False)
    assert [(r["route"], r["what"].split(" (")[0]) for r in seen] == [
        ("processes", "a process that leaves verify's process group may outlive the run if verify is killed "
                      "with SIGKILL")]


def test_the_python_mode_lists_each_address_once_but_not_its_own_sockets(monkeypatch, tmp_path):
    from gradlint.verify import routes

    seen = []
    own = os.path.join(os.path.realpath(tmp_path), "")
    monkeypatch.setattr(routes, "_state", {"report": seen.append, "seen": set(), "busy": False, "own": own})
    routes._audit("socket.connect", (None, ("127.0.0.1", 8080)))
    routes._audit("socket.sendto", (None, ("127.0.0.1", 8080)))  # the same address: once
    routes._audit("socket.sendmsg", (None, None))  # a connected socket's peer: listed at its connect
    routes._audit("socket.connect", (None, str(tmp_path / "box" / "listener-1")))  # multiprocessing's own
    routes._audit("socket.connect", (None, "\0/tmp/.X11-unix/X0"))
    routes._audit("socket.connect", (None, "/run/docker.sock"))
    assert [r["what"] for r in seen] == ["127.0.0.1 port 8080", "abstract Unix socket @/tmp/.X11-unix/X0",
                                         "Unix socket /run/docker.sock"]


@pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"), reason="reads the mount table (Linux)")
def test_only_a_project_folder_with_a_mount_point_is_refused_not_slash_or_verifys_own_parent(tmp_path):
    from gradlint.verify.sandbox import Layout

    base = tmp_path / "gradlint-verify-x" / "ns"
    base.mkdir(parents=True)
    layout = Layout(str(base), projects=["/", str(tmp_path), str(tmp_path / "project")])
    layout.readonly = [["/.dockerenv", "a file in a folder that cannot be overlaid whole"],
                       [str(tmp_path / "notes.txt"), "a file in a folder that cannot be overlaid whole"]]
    layout._check_projects()  # / and the folder holding verify's own: read-only files, listed, run goes on
    layout.readonly.append([str(tmp_path / "project" / "config.yaml"), "a file in a folder that ..."])
    layout.points.append(str(tmp_path / "project" / "data"))
    with pytest.raises(OSError) as refused:
        layout._check_projects()
    assert refused.value.strerror == (
        f"{tmp_path / 'project'} cannot be overlaid here: it holds a mount point ({tmp_path / 'project' / 'data'}), "
        f"and a user namespace cannot overlay the files beside one: {tmp_path / 'project' / 'config.yaml'} would be "
        "read-only")
