"""What verify's Python-level overlay cannot contain, recorded for the report.  Runs in the verify child.

In the namespace mode (sandbox.py) the kernel contains the script's whole
process tree, so nothing is recorded here.  Without it (macOS, a container
that forbids user namespaces, `--containment python`) the overlay lives in
this interpreter's file functions: whatever runs outside them writes for
real.  Each such start is recorded once, with the user's line, so the report
can list it instead of promising "not to your files":

- processes: subprocess.Popen (subprocess.run, check_output, Popen(["setsid", ...])),
  os.system, os.exec*, os.posix_spawn*, os.spawn*, multiprocessing's spawn and
  forkserver start methods (a fresh interpreter without the overlay);
- C functions looked up through ctypes (a libc `open`/`write` writes for real), except those of
  Python's own C API;
- os.setsid / os.setpgid in a forked process: it leaves verify's process group;
- the network: each address the script connects or sends to (a server on the host, on 127.0.0.1 too,
  may write files for it), but for Unix sockets in verify's own temporary folder (multiprocessing's).

On Linux this process becomes a child subreaper, so a daemon the script
leaves behind stays its descendant; end_processes() kills them all when the
run ends (the parent does the same when it has to kill this process).
"""

from __future__ import annotations

import os
import sys

_PR_SET_CHILD_SUBREAPER = 36
_PROCESS_EVENTS = {
    "subprocess.Popen": "subprocess",
    "os.system": "os.system",
    "os.exec": "os.exec",
    "os.posix_spawn": "os.posix_spawn",
    "os.spawn": "os.spawn",
}

_state = {"report": None, "seen": set(), "busy": False}


def _describe(event: str, args) -> str:
    try:
        if event == "subprocess.Popen":
            command = args[1]
            if isinstance(command, (str, bytes, os.PathLike)):
                return os.fsdecode(command)
            return " ".join(os.fsdecode(part) for part in command)
        if event == "os.system":
            return os.fsdecode(args[0])
        if event in ("os.exec", "os.posix_spawn"):
            return " ".join(os.fsdecode(part) for part in args[1])
        if event == "os.spawn":
            return " ".join(os.fsdecode(part) for part in args[2])
    except (TypeError, IndexError, ValueError):
        pass
    return event


def record(route: str, what: str) -> None:
    report = _state["report"]
    if report is None or _state["busy"]:
        return
    key = (route, what)
    if key in _state["seen"]:
        return
    _state["seen"].add(key)
    _state["busy"] = True
    try:
        from gradlint.verify.probes import _sites, user_frames

        report({"type": "uncontained", "route": route, "what": what[:300], "sites": _sites(user_frames(3)[:1])})
    except Exception:
        pass
    finally:
        _state["busy"] = False


def _address(address) -> str | None:
    """How the report shows a socket address; None for a Unix socket in verify's own folder."""
    if isinstance(address, (str, bytes)):
        name = os.fsdecode(address)
        if name.startswith("\0"):
            return "abstract Unix socket @" + name[1:]
        own = _state.get("own")
        if own and os.path.abspath(name).startswith(own):
            return None
        return "Unix socket " + name
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]} port {address[1]}"
    return repr(address)


def _audit(event: str, args) -> None:
    route = _PROCESS_EVENTS.get(event)
    if route is not None:
        record(route, _describe(event, args))
    elif event in ("socket.connect", "socket.sendto", "socket.sendmsg") and len(args) > 1 and args[1] is not None:
        # (a sendmsg without an address goes to the peer its socket is connected to: listed at the connect)
        shown = _address(args[1])
        if shown is not None:
            record("network", shown)
    elif event == "ctypes.dlsym" and len(args) > 1 and isinstance(args[1], str):
        # Python's own C API (ctypes.pythonapi: tensorboard's PyBytes_FromStringAndSize) works on
        # objects of this interpreter, whose file functions the overlay holds: not a route around it
        if not args[1].startswith(("Py", "_Py")):
            record("ctypes", args[1])


def install(report, contained: bool, own: str | None = None) -> None:
    """Record what goes around the Python-level overlay (unless the kernel contains it, or writes are
    allowed); on Linux, keep the script's daemons as descendants of this process.  `own`: verify's
    temporary folder, whose Unix sockets are the script's own (multiprocessing's listeners)."""
    subreaper = _become_subreaper()
    if contained:
        return
    _state["report"] = report
    _state["own"] = os.path.join(os.path.realpath(own), "") if own else None
    if not subreaper:  # said, not implied: a setsid daemon could outlive a verify killed with SIGKILL
        record("processes", "a process that leaves verify's process group may outlive the run if verify is "
                            "killed with SIGKILL (no child subreaper on this system)")
    sys.addaudithook(_audit)
    _wrap_session_calls()
    _wrap_multiprocessing_spawn()


def _become_subreaper() -> bool:
    """Linux: this process adopts the script's orphans (a setsid daemon), so end_processes finds them."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _wrap_session_calls() -> None:
    for name in ("setsid", "setpgrp", "setpgid"):
        original = getattr(os, name, None)
        if original is None:
            continue

        def leave(*args, _original=original, _name=name):
            record("new session", f"os.{_name}() in process {os.getpid()}")
            return _original(*args)

        setattr(os, name, leave)


def _wrap_multiprocessing_spawn() -> None:
    try:
        import multiprocessing.util as util
    except ImportError:
        return
    original = util.spawnv_passfds

    def spawnv_passfds(path, args, passfds):
        record("multiprocessing", " ".join(os.fsdecode(a) for a in args))
        return original(path, args, passfds)

    util.spawnv_passfds = spawnv_passfds


def _descendants() -> list:
    found, todo = [], [os.getpid()]
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


def end_processes() -> None:
    """Kill every process the script started that is still running (Linux: /proc), a daemon included."""
    import signal

    _state["report"] = None
    for _ in range(3):  # a process forking while we kill: look again
        found = _descendants()
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
