"""Runs the verify child with a budget and collects its report.  No torch here.

The child gets its own session (process group) so that a hang, DataLoader
workers or a C-level abort can be ended as a whole; its output goes to a
file, never to our stdout, and only its tail is kept for the report.
"""

from __future__ import annotations

import json
import os
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


class Child:
    """One verify child process: started at once, so the caller can do the static check meanwhile."""

    def __init__(self, target, script_args=(), steps=5, timeout=60.0, grace=None, python=None):
        self.timeout = timeout
        self.grace = KILL_GRACE_SECONDS if grace is None else grace
        self._tmp = tempfile.TemporaryDirectory(prefix="gradlint-verify-")
        self.log = os.path.join(self._tmp.name, "events.jsonl")
        self.out = os.path.join(self._tmp.name, "output.txt")
        command = [
            python or sys.executable, "-m", "gradlint.verify.child", "--events", self.log, "--steps", str(steps),
            "--timeout", str(timeout), target, "--", *script_args,
        ]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_package_root(), env.get("PYTHONPATH")) if p)
        env.setdefault("PYTHONWARNINGS", "ignore")  # torch's import-time warnings are not the script's output
        self._handle = open(self.out, "wb")
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=self._handle, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )

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
        run = Run.from_records(read_log(self.log))
        run.output = _tail(self.out)
        self._tmp.cleanup()
        if killed:
            run.end = {"reason": "timeout", "seconds": self.timeout, "killed": True, "steps": run.steps}
        elif not run.end:
            run.end = {"reason": "crash", "message": _describe_status(code), "steps": run.steps}
        elif run.end.get("reason") == "timeout":
            run.end["seconds"] = self.timeout
        return run


def run_child(target, script_args=(), steps=5, timeout=60.0, grace=None, python=None) -> Run:
    return Child(target, script_args, steps, timeout, grace, python).wait()
