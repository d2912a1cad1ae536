"""The test suite on every supported Python, one command each.

    nox -s tests-3.11    # the default suite on one Python (the README's test command)
    nox -s fast          # while working: the checker's tests in this venv, stop at the first failure
    nox -s slow          # the slow end-to-end set: verify on every fixture, editors, wheels, long fuzzing
    nox -s lint          # ruff
    nox                  # all of it, as .ci/run does

The supported Pythons are the trove classifiers of pyproject.toml (tests/test_pythons.py
checks they agree with requires-python).  The verifier's tests need torch, which the
3.11 session installs exactly as the README's Quick start does (TORCH_INSTALL: the CPU
build, never PyPI's multi-GB CUDA default; pip's cache serves the wheel the Quick start
downloaded); on the other Pythons they skip, and the checker's tests run on every one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
from pythons import SUPPORTED, interpreter_dirs  # noqa: E402  (tests/pythons.py: one list for nox and the tests)

# torch alone, from PyTorch's CPU wheel index (a find-links directory that holds the same
# version, as on the machines this project is developed on, answers first); its dependencies
# come from PyPI with the project's install.  The README's Quick start runs `pip install` of
# these very words (tests/test_readme.py checks it).
TORCH_INSTALL = ["--no-deps", "torch==2.13.0", "--index-url", "https://download.pytorch.org/whl/cpu"]
TORCH_PYTHON = "3.11"
# The classic rule set (ruff's newer defaults flag style the project does not follow),
# without E741: `l` for a line or loop in a comprehension is the house style.
RUFF_RULES = ["--select", "E4,E7,E9,F", "--ignore", "E741"]
LINTED = ["gradlint", "tests", "benchmarks", "noxfile.py"]
# each runs scripts under torch
VERIFIER_TESTS = ["tests/test_verify*.py", "tests/test_fix_verify.py", "tests/test_guard*.py"]
FRAMEWORK_TESTS = ["tests/test_guard_frameworks.py"]  # skipped elsewhere: the packages are absent

# pyenv's shims answer only for the selected version: put each interpreter's own directory on PATH.
os.environ["PATH"] = os.pathsep.join([*interpreter_dirs(), os.environ.get("PATH", "")])
nox.options.sessions = ["lint", "tests", "frameworks", "slow"]
nox.options.download_python = "never"  # no interpreter from the network: the machine's or none
nox.options.error_on_missing_interpreters = True


def _install(session: nox.Session, with_torch: bool) -> None:
    # compat: the checkout on sys.path by a plain .pth line (setuptools' editable finder
    # is imported by every Python process the tests start)
    editable = ["--config-settings", "editable_mode=compat", "-e"]
    if with_torch:
        session.install(*TORCH_INSTALL)  # first, so the verify extra finds it and pulls no other build
        session.install(*editable, ".[dev,verify]")
    else:
        session.install(*editable, ".[dev]")


@nox.session(python=SUPPORTED)
def tests(session: nox.Session) -> None:
    """The default suite (not slow), in parallel; verify tests need torch, so only 3.11 runs them."""
    _install(session, with_torch=session.python == TORCH_PYTHON)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=TORCH_PYTHON)
def frameworks(session: nox.Session) -> None:
    """gradlint.guard inside real Lightning, transformers and Accelerate runs, in a venv of its own:
    the fixtures run their stand-ins (fixtures/_shims) only where the real packages are absent,
    as in every other session.  Beside the CPU torch, which the pin keeps: a framework release
    that wants a newer torch fails the install instead of pulling PyPI's multi-GB CUDA build."""
    session.install(*TORCH_INSTALL)
    session.install("--config-settings", "editable_mode=compat", "-e", ".[dev,verify,frameworks]", TORCH_INSTALL[1])
    session.run("python", "-m", "pytest", "-m", "slow or not slow", *(session.posargs or FRAMEWORK_TESTS))


@nox.session(python=False)
def slow(session: nox.Session) -> None:
    """The slow set (`-m slow`) in the venv nox runs from (the Quick start's, with torch: no
    second torch install): every fixture as a script and under verify, real editors,
    pre-commit, the wheel in a fresh venv of every supported Python (its findings on
    fixtures/ compared with this checkout's); then the long fuzzing (new examples each run)."""
    pytest = [sys.executable, "-m", "pytest"]
    session.run(*pytest, "-m", "slow", *session.posargs, env={"GRADLINT_EVERY_PYTHON": "1"})
    if not session.posargs:
        session.run(*pytest, "tests/test_fuzz.py", env={"GRADLINT_FUZZ": "long"})


@nox.session(python=False)
def fast(session: nox.Session) -> None:
    """While working: the checker's tests (all but the verifier's runs under torch) in the venv
    nox runs from, no venv to build, last failures first, stopping at the first failure.
    `nox -s fast -- tests/test_verify.py` runs what you name instead."""
    chosen = session.posargs or ["-q", *(f"--ignore-glob={glob}" for glob in VERIFIER_TESTS)]
    session.run(sys.executable, "-m", "pytest", "-x", "--failed-first", *chosen)


@nox.session(python=False)
def lint(session: nox.Session) -> None:
    """ruff from the venv nox runs from (the dev extra has it)."""
    session.run(sys.executable, "-m", "ruff", "check", *RUFF_RULES, *LINTED)
