"""The verify child: `python .../gradlint/verify/child.py --events LOG [--steps N] [--timeout S] TARGET [-- ARGS...]`.

Started on its file, not with `-m`: `-m` would put the working directory on
sys.path, where `python script.py` puts the script's folder only.

Installs the probes, runs the user's script (runpy, as `python script.py`
would) or calls `module:function`, and writes a JSON-lines event log.  The
log is flushed after every record, so the parent can still read it when it
has to kill this process.  Whatever the script does (raise, sys.exit, hang
until the soft timeout) ends in one `end` record.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
import traceback


def _parse(argv):
    parser = argparse.ArgumentParser(prog="gradlint.verify.child")
    parser.add_argument("--events", required=True)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--allow-writes", action="store_true")
    parser.add_argument("--overlay", default=None)  # the copy-on-write overlay's folder (none: real writes)
    parser.add_argument("--contained", action="store_true")  # in sandbox.py's namespace: the kernel contains
    parser.add_argument("--sums", action="store_true")
    parser.add_argument("target")
    if "--" in argv:
        cut = argv.index("--")
        return parser.parse_args(argv[:cut]), argv[cut + 1 :]
    return parser.parse_args(argv), []


def _user_line(tb):
    """The innermost frame of the user's code in a traceback, as (file, line); an installed
    library's frame only when none is the user's."""
    from gradlint.verify.probes import _USER, _file_kind, _is_user_file

    found = library = None
    for entry in traceback.extract_tb(tb):
        if _file_kind(entry.filename) == _USER:
            found = (os.path.realpath(entry.filename), entry.lineno)
        elif _is_user_file(entry.filename):
            library = (os.path.realpath(entry.filename), entry.lineno)
    return found or library


class _NoTarget(Exception):
    """The entry point names a function the module does not have: nothing of the user's ran as asked."""


def _resolve(target: str, script_args: list[str]):
    """(entry, file) for a script path or `module:function`; raises LookupError when there is no such target."""
    import importlib
    import importlib.util
    import runpy

    if target.endswith(".py") or os.path.sep in target or ":" not in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise LookupError(f"no such file: {target}")
        sys.argv = [target] + script_args
        sys.path.insert(0, os.path.dirname(path))  # as `python script.py` does: its siblings import
        return (lambda: runpy.run_path(path, run_name="__main__")), path
    module_name, _, function_name = target.partition(":")
    sys.argv = [module_name] + script_args
    sys.path.insert(0, os.getcwd())  # as `python -m` does
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError) as exc:
        raise LookupError(f"cannot find module {module_name!r}: {exc}")
    if spec is None:
        raise LookupError(f"no module named {module_name!r}")

    def call():
        module = importlib.import_module(module_name)
        function = getattr(module, function_name, None)
        if not callable(function):
            raise _NoTarget(f"{module_name} has no function {function_name!r}")
        return function()

    return call, spec.origin


GUARD = None  # the file guard, once installed (the watchdog's own clean-up passes it)


def _die_with_parent(events: str) -> None:
    """If gradlint itself is killed (SIGKILL gives it no chance to clean up), remove verify's
    temporary directory and end this process group (the script and whatever it started)."""
    parent = os.getppid()
    temporary = os.path.dirname(os.path.dirname(os.path.abspath(events)))  # events is in TEMP/box/

    def watch():
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                try:
                    if os.path.basename(temporary).startswith("gradlint-verify-"):
                        import shutil

                        if GUARD is not None:  # verify's own clean-up, not the script's write
                            GUARD.allow, GUARD.report = True, lambda record: None
                        shutil.rmtree(temporary, ignore_errors=True)
                except BaseException:
                    pass
                try:  # the processes that left the group (setsid): still ours, this process is a subreaper
                    from gradlint.verify import routes

                    routes.end_processes()
                    os.killpg(os.getpgrp(), signal.SIGKILL)
                finally:
                    os._exit(1)

    threading.Thread(target=watch, name="gradlint-verify-watchdog", daemon=True).start()


def main(argv=None) -> None:
    args, script_args = _parse(list(sys.argv[1:] if argv is None else argv))
    _die_with_parent(args.events)
    import warnings

    with warnings.catch_warnings():  # torch's import-time warnings are not the script's
        warnings.simplefilter("ignore")
        from gradlint.verify import probes

    recorder = probes.Recorder(args.events, args.steps, sums=args.sums)
    end: dict = {"reason": "completed"}
    try:
        entry, target_file = _resolve(args.target, script_args)
    except LookupError as exc:  # nothing to run: the parent says "could not run"
        recorder.write({"type": "start", "ok": False, "error": str(exc)})
        recorder.close({"reason": "not-started", "message": str(exc)})
        os._exit(0)
    recorder.write({"type": "start", "ok": True, "file": os.path.realpath(target_file) if target_file else None})
    if target_file:
        probes.HOME_DIR = os.path.dirname(os.path.normpath(os.path.abspath(target_file))) + os.sep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probes.install(recorder)  # before any of the user's code, so its imports get the probed functions
    from gradlint.verify import routes

    routes.install(recorder.write, contained=args.contained or args.allow_writes,
                   own=os.path.dirname(os.path.dirname(os.path.abspath(args.events))))
    if args.scratch and not args.contained:
        from gradlint.verify import protect

        global GUARD
        GUARD = protect.install(args.scratch, args.allow_writes, recorder.write, args.overlay)
    if args.overlay and not args.contained:
        from gradlint.verify import redirect
        from gradlint.verify.overlay import Overlay

        # verify's temporary folder (events is in TEMP/box/): its files are real, so that the watchdog's
        # clean-up removes them (the script's own writes there still meet the audit hook)
        own = os.path.dirname(os.path.dirname(os.path.abspath(args.events)))
        redirect.install(Overlay(args.overlay, own=(own,), on_remove=lambda path: recorder.write(
            {"type": "overlay-remove", "path": path})))
    try:
        if hasattr(signal, "setitimer") and args.timeout > 0:

            def on_alarm(signum, frame):
                recorder.stopped, recorder.stop_reason = True, "timeout"
                raise probes.BudgetReached("timeout")

            signal.signal(signal.SIGALRM, on_alarm)
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
        _forget_own_path()
        try:
            entry()
        finally:
            if hasattr(signal, "setitimer"):
                signal.setitimer(signal.ITIMER_REAL, 0)
    except probes.BudgetReached as stop:
        end = {"reason": stop.reason}
    except _NoTarget as exc:
        end = {"reason": "not-started", "message": str(exc)}
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            end = {"reason": "exit", "code": 0}
        else:
            end = {"reason": "exit", "code": code if isinstance(code, int) else str(code)}
        where = _user_line(exc.__traceback__)
        if where:
            end["file"], end["line"] = where
    except BaseException as exc:  # the script's own error: a reason, never a crash of gradlint
        end = {"reason": "exception", "message": f"{type(exc).__name__}: {exc}", "exception": type(exc).__name__}
        where = _user_line(exc.__traceback__)
        if where:
            end["file"], end["line"] = where
    # The script caught our BudgetReached, or Python wrapped it (an alarm inside __set_name__
    # becomes a RuntimeError): the budget is still why the run ended.
    if end["reason"] in ("completed", "exception") and recorder.stop_reason:
        end = {"reason": recorder.stop_reason, "swallowed": True}
    recorder.stopped = True
    routes.end_processes()  # what the script started (and left running) ends with it
    try:
        recorder.close(end)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the script's non-daemon threads must not keep the child alive


_ADDED_ROOT = None  # gradlint's folder, when this file's start had to put it on sys.path


def _forget_own_path() -> None:
    """gradlint's own folder leaves sys.path once its modules are imported (the script's imports
    must resolve as under `python script.py`)."""
    if _ADDED_ROOT is not None and _ADDED_ROOT in sys.path:
        sys.path.remove(_ADDED_ROOT)


if __name__ == "__main__":
    # Run on this file: sys.path[0] is this folder, which the script must not see.
    _own = sys.path.pop(0)
    try:
        import gradlint.verify.child as _module
    except ImportError:
        _module = None
    if _module is None:
        _root = os.path.dirname(os.path.dirname(os.path.abspath(_own)))
        sys.path.append(_root)
        import gradlint.verify.child as _module

        _module._ADDED_ROOT = _root
    _module.main()
