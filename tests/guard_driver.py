"""Runs scripts under gradlint.guard in one process (torch imported once), one after another,
and prints one JSON line per script: its reports, or why it stopped.  Used by
tests/test_guard_fixtures.py: `python tests/guard_driver.py PATH...`."""

from __future__ import annotations

import json
import os
import runpy
import sys
import warnings

import gradlint.guard

MARK = "GUARD-JSON "


def run(path: str) -> dict:
    before = set(sys.modules)
    argv, syspath, cwd = sys.argv[:], sys.path[:], os.getcwd()
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    outcome = "completed"
    gradlint.guard.install(mode="log")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        outcome = f"exit {exc.code}"
    except BaseException as exc:  # the script's own failure is a result too
        outcome = f"exception {type(exc).__name__}: {exc}"
    finally:
        found = gradlint.guard.uninstall()
        sys.argv, sys.path[:] = argv, syspath
        os.chdir(cwd)
        for name in set(sys.modules) - before:
            if not name.startswith(("torch", "gradlint", "numpy", "sympy")):
                del sys.modules[name]
    return {
        "path": path, "outcome": outcome,
        "reports": [{"code": r.code, "path": r.path, "line": r.line, "related": r.related, "lines": sorted(r.lines), "text": str(r)} for r in found],
    }


if __name__ == "__main__":
    import logging

    logging.getLogger("gradlint.guard").disabled = True
    for path in sys.argv[1:]:
        print(MARK + json.dumps(run(path)), flush=True)
