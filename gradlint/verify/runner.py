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

from gradlint.verify.verdicts import Run

# The child's own timer starts when the user's code starts; importing torch
# before that takes a few seconds, so the hard kill waits this much longer.
KILL_GRACE_SECONDS = 15.0
OUTPUT_TAIL_LINES = 20


def _package_root() -> str:
    import gradlint

    return os.path.dirname(os.path.dirname(os.path.abspath(gradlint.__file__)))


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

    Its temporary directory holds the event log, the output, the scratch
    directory the script may write into (its TMPDIR and caches point there)
    and, unless allow_writes, the copy-on-write overlay that takes the
    script's other writes (copied to keep_writes at the end, when given).
    """

    def __init__(self, target, script_args=(), steps=5, timeout=60.0, grace=None, python=None,
                 allow_writes=False, trace=False, keep_writes=None):
        self.timeout = timeout
        self.grace = KILL_GRACE_SECONDS if grace is None else grace
        self._tmp = tempfile.TemporaryDirectory(prefix="gradlint-verify-")
        self.log = os.path.join(self._tmp.name, "events.jsonl")
        self.out = os.path.join(self._tmp.name, "output.txt")
        self.scratch = os.path.join(self._tmp.name, "scratch")
        os.mkdir(self.scratch)
        self.overlay = None if allow_writes else os.path.join(self._tmp.name, "overlay")
        if self.overlay:
            os.mkdir(self.overlay)
        self.keep_writes = keep_writes
        command = [
            python or sys.executable, "-m", "gradlint.verify.child", "--events", self.log, "--steps", str(steps),
            "--timeout", str(timeout), "--scratch", self.scratch,
            *(["--allow-writes"] if allow_writes else ["--overlay", self.overlay]), *(["--sums"] if trace else []),
            target, "--", *script_args,
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONWARNINGS", "ignore")  # torch's import-time warnings are not the script's output
        # Temp files and libraries' caches go to the scratch directory (removed afterwards), also
        # with --allow-writes: they are verify's side effects, not the script's results.
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        for name in ("TMPDIR", "TEMP", "TMP", "MPLCONFIGDIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
            env[name] = self.scratch
        self._handle = open(self.out, "wb")
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._handle, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )

    def kill(self) -> None:
        """End the child's whole process group (DataLoader workers, spawned trainers) and remove the files."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.process.wait(timeout=10)
        except (subprocess.TimeoutExpired, OSError):
            pass
        self._handle.close()
        self._keep_overlay()  # interrupted: what the script wrote so far, when asked
        self._tmp.cleanup()

    def _keep_overlay(self):
        """Where the overlay is, after copying it to --keep-writes' folder when asked; None with real writes."""
        if self.overlay is None:
            return None
        if not self.keep_writes:
            return {"path": self.overlay, "kept": False}
        from gradlint.verify.overlay import keep

        try:
            keep(self.overlay, self.keep_writes)
        except (OSError, shutil.Error) as exc:
            return {"path": self.overlay, "kept": False, "error": f"could not keep it in {self.keep_writes}: {exc}"}
        return {"path": os.path.abspath(self.keep_writes), "kept": True}

    def _redirected(self, records) -> list:
        """What the script wrote into the overlay, as the report's write entries."""
        if self.overlay is None:
            return []
        from gradlint.verify.overlay import written

        removed = [r.get("path") for r in records if r.get("type") == "overlay-remove" and r.get("path")]
        try:
            return [dict(e, refused=False, redirected=True) for e in written(self.overlay, removed)]
        except OSError:  # the report goes on without the list
            return []

    @contextlib.contextmanager
    def stopped_on_signals(self):
        """Ctrl-C or SIGTERM on verify stops the script and everything it started, then raises Interrupted."""

        def on_signal(signum, frame):
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

    def wait(self) -> Run:
        killed = False
        try:
            code = self.process.wait(timeout=self.timeout + self.grace)
        except subprocess.TimeoutExpired:
            killed = True
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                self.process.kill()
            code = self.process.wait()
        finally:
            self._handle.close()
        try:
            # DataLoader workers and other children of the script end with it.
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass
        records = read_log(self.log)
        run = Run.from_records(records)
        run.output = _tail(self.out)
        run.writes.extend(self._redirected(records))
        run.overlay = self._keep_overlay()
        self._tmp.cleanup()
        if killed:
            run.end = {"reason": "timeout", "seconds": self.timeout, "killed": True, "steps": run.steps}
        elif not run.end:
            run.end = {"reason": "crash", "message": _describe_status(code), "steps": run.steps}
        elif run.end.get("reason") == "timeout":
            run.end["seconds"] = self.timeout
        return run


def run_child(target, script_args=(), steps=5, timeout=60.0, grace=None, python=None, **options) -> Run:
    return Child(target, script_args, steps, timeout, grace, python, **options).wait()
