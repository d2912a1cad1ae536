"""Runs the verify child with a budget and collects its report.  No torch here.

The child gets its own session (process group) so that a hang, DataLoader
workers or a C-level abort can be ended as a whole; its output goes to a
file, never to our stdout, and only its tail is kept for the report.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

from gradlint.verify.sandbox import SETUP_FAILED
from gradlint.verify.verdicts import Run

# The child's own timer starts when the user's code starts; importing torch
# before that takes a few seconds, so the hard kill waits this much longer.
KILL_GRACE_SECONDS = 15.0
_SIGNAL_POLL_SECONDS = 0.25  # how often the wait for the script looks for a stop it missed
OUTPUT_TAIL_LINES = 20


_HERE = os.path.dirname(os.path.abspath(__file__))
_CHILD = os.path.join(_HERE, "child.py")
_SANDBOX = os.path.join(_HERE, "sandbox.py")


def sandbox_possible() -> bool:
    """Linux, where user namespaces may exist (sandbox.py tries, and says why when it cannot)."""
    return sys.platform.startswith("linux") and os.path.exists("/proc/self/ns/user")


def read_log(path: str) -> list[dict]:
    """Every complete JSON record; a line cut short by a kill is dropped."""
    records = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    records.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        pass
    return records


def _describe_status(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exited with status {code} before reporting"


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-OUTPUT_TAIL_LINES:])


class Interrupted(BaseException):
    """verify itself got SIGINT or SIGTERM: the child's group is gone, the temp files removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Child:
    """One verify child process: started at once, so the caller can do the static check meanwhile.

    Its temporary directory holds the output, a folder shared with the script's process (box/: the
    event log and the scratch directory the script may write into: its TMPDIR and caches point
    there) and what contains the script's other writes: by default, on Linux where the system
    allows it, a private user, mount and pid namespace over kernel overlays (sandbox.py, in ns/);
    elsewhere, or with containment="python", the Python-level copy-on-write overlay (overlay/).
    With allow_writes neither.  What the script wrote is copied to keep_writes at the end, when
    given.
    """

    def __init__(self, target, script_args=(), steps=5, timeout=60.0, grace=None, python=None,
                 allow_writes=False, trace=False, keep_writes=None, containment="auto", allow_network=False):
        self.timeout = timeout
        self.grace = KILL_GRACE_SECONDS if grace is None else grace
        self.signalled: Optional[int] = None  # SIGINT or SIGTERM on verify, once it came (stopped_on_signals)
        remove_stale_folders()
        self._tmp = tempfile.TemporaryDirectory(prefix=_PREFIX)
        with open(os.path.join(self._tmp.name, _OWNER), "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
        box = os.path.join(self._tmp.name, "box")
        os.mkdir(box)
        self.log = os.path.join(box, "events.jsonl")
        self.out = os.path.join(self._tmp.name, "output.txt")
        self.scratch = os.path.join(box, "scratch")
        os.mkdir(self.scratch)
        self.box = box
        self.keep_writes = keep_writes
        self.allow_writes = allow_writes
        self.containment = containment
        self.allow_network = allow_network
        self._projects = [os.getcwd()] + ([os.path.dirname(os.path.abspath(target))] if os.path.isfile(target) else [])
        self.fallback = None  # why the namespace could not be used, when it was tried
        self.sandbox = None  # the namespace's layout (sandbox.py's status), once it ran
        self.overlay = None
        self._base_command = [
            "--events", self.log, "--steps", str(steps), "--timeout", str(timeout), "--scratch", self.scratch,
            *(["--sums"] if trace else []), target, "--", *script_args,
        ]
        self._python = python or sys.executable
        env = dict(os.environ)
        # Temp files and libraries' caches go to the scratch directory (removed afterwards), also
        # with --allow-writes: they are verify's side effects, not the script's results.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for name in ("TMPDIR", "TEMP", "TMP", "MPLCONFIGDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            env[name] = self.scratch
        self._env = env
        self._handle = open(self.out, "wb")
        if allow_writes:
            self.mode = "none"
            self._start(["--allow-writes"])
        elif containment in ("auto", "namespace") and sandbox_possible():
            self.mode = "namespace"
            self._start_sandboxed()
        else:
            self.mode = "python"
            if containment == "namespace":
                self.fallback = "namespaces are available on Linux only"
            self._start_python_overlay()

    def _interpreter(self) -> list:
        """The child's interpreter, run on a file (as `python script.py` runs, not `-m`): the user's
        -W options and PYTHONWARNINGS stay as they are."""
        warnings = [] if self._python != sys.executable else [f"-W{w}" for w in sys.warnoptions]
        return [self._python, *warnings, _CHILD]

    def _start(self, flags, prefix=()):
        command = [*prefix, *self._interpreter(), *flags, *self._base_command]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._handle, stderr=subprocess.STDOUT, env=self._env,
            start_new_session=True,
        )

    def _start_python_overlay(self):
        self.overlay = os.path.join(self._tmp.name, "overlay")
        os.makedirs(self.overlay, exist_ok=True)
        self._start(["--overlay", self.overlay])

    def _start_sandboxed(self):
        base = os.path.join(self._tmp.name, "ns")
        os.mkdir(base)
        self._status = os.path.join(self._tmp.name, "ns-status.json")
        projects = [arg for folder in self._projects for arg in ("--project", folder)]
        prefix = [self._python, _SANDBOX, "--base", base, "--status", self._status, "--bind", self.box, *projects,
                  "--network", "host" if self.allow_network else "none", "--"]
        self._start(["--contained"], prefix)

    def _sandbox_failed(self):
        """The namespace's setup failed (nothing of the user's ran): the reason, else None."""
        if self.mode != "namespace":
            return None
        try:
            with open(self._status, encoding="utf-8") as handle:
                status = json.load(handle)
        except (OSError, ValueError):
            status = None
        if status and status.get("ok"):
            self.sandbox = status
            return None
        if status is None and self.process.returncode != SETUP_FAILED:
            return None
        return (status or {}).get("error") or "the namespace could not be set up"

    def kill(self) -> None:
        """End the child's whole process group (DataLoader workers, spawned trainers) and remove the files."""
        _kill_tree(self.process.pid)
        try:
            self.process.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            pass
        self._handle.close()
        self._sandbox_failed()  # reads the namespace's layout, if it ran
        self._keep_overlay()  # interrupted: what the script wrote so far, when asked
        self._tmp.cleanup()

    def _keep_overlay(self):
        """Where the overlay is, after copying it to --keep-writes' folder when asked; None with real writes."""
        if self.mode == "namespace" and self.sandbox:
            where, keep = self.sandbox["base"], _keep_namespace(self.sandbox)
        elif self.mode == "python" and self.overlay:
            from gradlint.verify.overlay import keep as keep_python

            where, keep = self.overlay, (lambda destination: keep_python(self.overlay, destination))
        else:
            return None
        if not self.keep_writes:
            return {"path": where, "kept": False, "mode": self.mode}
        try:
            keep(self.keep_writes)
        except (OSError, shutil.Error) as exc:
            return {"path": where, "kept": False, "mode": self.mode,
                    "error": f"could not keep it in {self.keep_writes}: {exc}"}
        return {"path": os.path.abspath(self.keep_writes), "kept": True, "mode": self.mode}

    def _redirected(self, records) -> list:
        """What the script wrote into the overlay, as the report's write entries."""
        try:
            if self.mode == "namespace" and self.sandbox:
                from gradlint.verify.sandbox import written as written_namespace

                found = written_namespace(self.sandbox)
            elif self.mode == "python" and self.overlay:
                from gradlint.verify.overlay import written

                removed = [r.get("path") for r in records if r.get("type") == "overlay-remove" and r.get("path")]
                found = written(self.overlay, removed)
            else:
                return []
        except OSError:  # the report goes on without the list
            return []
        return [dict(e, refused=False, redirected=True) for e in found]

    def containment_report(self) -> dict:
        """How the script's writes and processes were contained, for the report."""
        report = {"mode": self.mode}
        if self.mode == "namespace":
            report["network"] = "host (--allow-network)" if self.allow_network else "loopback only"
        elif self.mode == "python":  # nothing below Python's file functions is cut: said, never implied
            report["network"] = "host (connections listed in uncontained)"
            report["passed_through"] = ["/dev", "/proc", "/sys"]
        if self.fallback:
            report["namespace_unavailable"] = self.fallback
        if self.sandbox:
            report["readonly"] = self.sandbox.get("readonly", [])
        return report

    @contextlib.contextmanager
    def stopped_on_signals(self):
        """Ctrl-C or SIGTERM on verify stops the script and everything it started, then raises Interrupted."""

        def on_signal(signum, frame):
            # Kept as well as raised: a signal that lands while Python runs a callback whose
            # exceptions it ignores (an import lock's weakref callback, a __del__) loses the raise,
            # and verify would wait for a hanging script until its timeout; the waits look here.
            self.signalled = signum
            raise Interrupted(signum)

        previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[signum] = signal.signal(signum, on_signal)
            except (ValueError, OSError):  # not the main thread: the caller handles signals
                pass
        try:
            yield
        except (Interrupted, KeyboardInterrupt):
            self.kill()
            raise
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _wait_process(self):
        killed = False
        deadline = time.monotonic() + self.timeout + self.grace
        while True:
            if self.signalled is not None:  # a stop whose raise was lost (on_signal)
                raise Interrupted(self.signalled)
            try:
                code = self.process.wait(timeout=max(0.0, min(_SIGNAL_POLL_SECONDS, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() < deadline:
                    continue
                killed = True
                _kill_tree(self.process.pid)
                code = self.process.wait()
                break
        # DataLoader workers and other children of the script end with it.
        _kill_tree(self.process.pid)
        return code, killed

    def wait(self) -> Run:
        try:
            code, killed = self._wait_process()
            failed = self._sandbox_failed()
            if failed is not None:  # nothing of the user's ran: run it again, contained by Python
                self.fallback = failed
                self.mode = "python"
                if self.containment == "namespace":
                    self._handle.close()
                    run = Run(started=False, start_error=f"cannot contain the script in a namespace: {failed}")
                    run.end = {"reason": "not-started", "message": run.start_error}
                    self._tmp.cleanup()
                    return run
                self._handle.seek(0)
                self._handle.truncate()
                self._start_python_overlay()
                code, killed = self._wait_process()
        finally:
            self._handle.close()
        records = read_log(self.log)
        run = Run.from_records(records)
        run.output = _tail(self.out)
        run.writes.extend(self._redirected(records))
        run.overlay = self._keep_overlay()
        run.containment = self.containment_report()
        run.uncontained = [{k: v for k, v in r.items() if k != "type"} for r in records if r.get("type") == "uncontained"]
        self._tmp.cleanup()
        if killed:
            run.end = {"reason": "timeout", "seconds": self.timeout, "killed": True, "steps": run.steps}
        elif not run.end:
            run.end = {"reason": "crash", "message": _describe_status(code), "steps": run.steps}
        elif run.end.get("reason") == "timeout":
            run.end["seconds"] = self.timeout
        return run


_PREFIX, _OWNER = "gradlint-verify-", "owner.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def remove_stale_folders(where: str | None = None) -> list:
    """Remove the temporary folders of earlier runs whose verify is gone (killed with SIGKILL, with its
    child, before either could clean up): those of this user whose owner.pid names no live process.
    Returns what it removed."""
    where = where or tempfile.gettempdir()
    removed = []
    try:
        names = [n for n in os.listdir(where) if n.startswith(_PREFIX)]
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(where, name)
        try:
            if os.lstat(folder).st_uid != os.getuid() or not os.path.isdir(folder) or os.path.islink(folder):
                continue
            with open(os.path.join(folder, _OWNER), encoding="ascii") as handle:
                owner = int(handle.read().strip() or 0)
        except (OSError, ValueError):
            continue  # not ours to judge (no owner file: a run of an older version, or just starting)
        if owner > 0 and not _alive(owner):
            _remove_tree(folder)
            removed.append(folder)
    return removed


def _remove_tree(folder: str) -> None:
    def writable(function, path, *info):  # overlayfs leaves its work folders without permissions
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            function(path)
        except OSError:
            pass

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=writable)
    else:
        shutil.rmtree(folder, onerror=writable)


def _kill_tree(pid: int) -> None:
    """SIGKILL to the child's process group, and to every process below it that left the group
    (a `setsid` daemon; in the namespace mode the kernel ends those with the namespace)."""
    for target in _descendants(pid):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _descendants(pid: int) -> list:
    """pid's descendants, from /proc (Linux); none elsewhere."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    children = [int(c) for c in handle.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(children)
            todo.extend(children)
    return found


def _keep_namespace(status):
    from gradlint.verify.sandbox import keep

    return lambda destination: keep(status, destination)


def run_child(target, script_args=(), steps=5, timeout=60.0, grace=None, python=None, **options) -> Run:
    return Child(target, script_args, steps, timeout, grace, python, **options).wait()
