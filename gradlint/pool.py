"""Running many files' analyses in worker processes (imported lazily: a
single-process run does not pay for multiprocessing).

Workers get (path, settings), read the file themselves and send back a
plain FileResult with the digest of the bytes they read (the cache key
must describe what was analysed, even if the file changed meanwhile).
A worker that dies (a segfault, the OOM killer) breaks the whole pool in
concurrent.futures; the files that were in flight are then rerun one per
fresh process, and a file that kills its process again becomes an
internal-error FileError: the run goes on.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Callable

from gradlint.findings import INTERNAL_ERROR, FileError, FileResult
from gradlint.settings import Settings

Outcome = tuple[FileResult, "str | None"]  # the result, the digest of the bytes analysed


def _context():
    import multiprocessing

    # fork shares the parent's imported modules (cheap start); elsewhere the platform default
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _quiet_worker() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def crashed(path: str, why: str) -> FileResult:
    return FileResult(path, errors=[FileError(path, INTERNAL_ERROR, f"internal error: {why}")])


def guarded(work: Callable[[str, Settings], Outcome], path: str, settings: Settings) -> Outcome:
    try:
        return work(path, settings)
    except Exception as exc:  # check_source already catches analysis bugs; this is the rest
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return crashed(path, f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"), None


def run_parallel(work, tasks: list[tuple[str, Settings]], jobs: int) -> list[Outcome]:
    """`work(path, settings)` for every task in `jobs` processes; outcomes in task order."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    outcomes: list = [None] * len(tasks)
    broken: list[int] = []
    # Big files first: the last file to finish then is a small one.
    order = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i][0]))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_quiet_worker) as pool:
        futures = {i: pool.submit(guarded, work, *tasks[i]) for i in order}
        for i in order:
            try:
                outcomes[i] = futures[i].result()
            except BrokenProcessPool:
                broken.append(i)
            except Exception as exc:  # an unpicklable result, say
                outcomes[i] = (crashed(tasks[i][0], f"{type(exc).__name__}: {exc}"), None)
    for i in broken:
        outcomes[i] = _isolated(work, *tasks[i])
    return outcomes


def _isolated(work, path: str, settings: Settings) -> Outcome:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=_context(), initializer=_quiet_worker) as pool:
            return pool.submit(guarded, work, path, settings).result()
    except BrokenProcessPool:
        return crashed(path, "the worker process checking this file died"), None


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
