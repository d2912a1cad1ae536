"""`python -m gradlint.guard [--mode warn|raise|log] (script.py | -m module) [ARGS...]`: run a
training script with the guard installed, as `python -m cProfile` runs one with the profiler
(also under a launcher: `torchrun --nproc-per-node 2 -m gradlint.guard train.py`).

The script sees its own arguments in sys.argv and its own folder first on sys.path; its exit
status is the process's.  In mode "raise" a bug ends the run with the report (exit 1).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from gradlint.guard import install
from gradlint.guard.report import MODES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gradlint.guard",
        description="Run a training script with gradlint's guard watching its optimizers, clips, scalers and schedulers.",
    )
    parser.add_argument("--mode", choices=MODES, default="warn",
                        help="warn (a Python warning once per line, the default), raise (stop at the first bug) or log")
    parser.add_argument("-m", dest="module", help="run a module as a script (like python -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script and its arguments")
    return parser


def main(argv=None) -> int:
    options = _parser().parse_args(argv)
    if options.module is None and not options.args:
        _parser().error("give a script to run, or -m module")
    install(options.mode)
    if options.module is not None:
        sys.argv = [options.module, *options.args]
        runpy.run_module(options.module, run_name="__main__", alter_sys=True)
        return 0
    script, *args = options.args
    if not os.path.isfile(script):
        _parser().error(f"no such script: {script}")
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
