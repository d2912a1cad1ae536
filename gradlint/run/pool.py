"""Running many files' analyses in worker processes (imported lazily: a
single-process run does not pay for multiprocessing).

Workers get (path, settings), read the file themselves and send back a
plain FileResult with the digest of the bytes they read (the cache key
must describe what was analysed, even if the file changed meanwhile).
A worker that dies (a segfault, the OOM killer) breaks the whole pool in
concurrent.futures; the files that were in flight are then rerun one per
fresh process, and a file that kills its process again becomes an
internal-error FileError: the run goes on.  A file whose analysis runs past
its time limit (Settings.file_timeout) becomes a timeout FileError the same
way (guarded), in a worker or in the CLI's own process.

Ctrl-C reaches the parent only (workers ignore SIGINT); the parent then
drops the queued files and terminates the workers instead of waiting for
them, so the run ends at once with KeyboardInterrupt (the CLI exits 130).
SIGTERM unwinds the parent the same way (the CLI exits 143).  A parent that
dies without unwinding (SIGKILL, the OOM killer) cannot stop its workers:
each worker asks the kernel for SIGKILL when its parent dies (Linux's
PR_SET_PDEATHSIG; elsewhere a thread watches the parent), so none is left
blocked on its pipe for ever.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Callable

from gradlint.core.findings import INTERNAL_ERROR, TIMEOUT, FileError, FileResult
from gradlint.options.settings import Settings

Outcome = tuple[FileResult, "str | None"]  # the result, the digest of the bytes analysed


def _context():
    import multiprocessing

    # fork shares the parent's imported modules (cheap start); elsewhere the platform default
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _start_worker(prepare: "Callable[[], None] | None", parent: "int | None" = None) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # A forked worker inherits the CLI's SIGTERM handler, which unwinds: here the pool's worker
    # loop would catch that as the file's failure and go on.  Terminated is simply ended.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):  # held while the parent forked (_holding_stop_signals)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    if parent is not None:
        die_with_parent(parent)
    if prepare is not None:
        prepare()


def _stop_signals():
    import signal

    return {signal.SIGINT, signal.SIGTERM}


_STOP_SIGNALS = _stop_signals()


class _holding_stop_signals:
    """Ctrl-C and SIGTERM wait while the pool forks its workers.  Python runs a signal's handler
    at the next bytecode, which can be in an at-fork hook (logging's, in the parent), where
    the exception it raises is printed and ignored: the stop was lost and the run went on."""

    def __enter__(self):
        import signal

        self.previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS) if hasattr(signal, "pthread_sigmask") else None

    def __exit__(self, *exc):
        if self.previous is not None:
            import signal

            signal.pthread_sigmask(signal.SIG_SETMASK, self.previous)  # a held signal is handled now


def die_with_parent(parent: int) -> None:
    """End this process when `parent` (the pid that started it) dies, even by SIGKILL."""
    if sys.platform.startswith("linux") and _parent_death_signal():
        if os.getppid() != parent:  # it died before the request: no signal will come now
            os._exit(1)
        return
    _watch_parent(parent)


def _parent_death_signal() -> bool:
    """Ask Linux for SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG); False if refused."""
    import signal

    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):
        return False


def _watch_parent(parent: int, every: float = 0.25) -> None:
    """Elsewhere: a daemon thread that ends the process once the parent is gone (re-parented,
    or its multiprocessing sentinel says so, as on Windows, where the pid stays)."""
    import threading
    import time

    try:
        from multiprocessing import parent_process

        known = parent_process()
    except Exception:
        known = None

    def gone() -> bool:
        try:
            return os.getppid() != parent or (known is not None and not known.is_alive())
        except Exception:
            return False

    def watch() -> None:
        while not gone():
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="gradlint-parent-watch", daemon=True).start()


def crashed(path: str, why: str) -> FileResult:
    return FileResult(path, errors=[FileError(path, INTERNAL_ERROR, f"internal error: {why}")])


def died_while(result: FileResult, doing: str) -> FileResult:
    """`result` as checked, plus the internal error of the child process that died while `doing`
    ("fixing") the file (apart): its findings stay reported, nothing of it was written."""
    from dataclasses import replace

    error = FileError(result.path, INTERNAL_ERROR, f"internal error: the process {doing} this file died", whole_file=False)
    return replace(result, errors=[*result.errors, error])


def stopped(path: str, seconds: float) -> FileResult:
    return FileResult(path, errors=[FileError(path, TIMEOUT, f"analysis stopped after {seconds:g} s")])


class TimeUp(BaseException):
    """Raised in the analysing process when a file's time is up.  Not an Exception: the
    analysis's own `except Exception` (engine.check_source) must not take it for a bug."""


def _time_up(signum, frame):
    raise TimeUp


def _handle_alarm():
    """Make SIGALRM end the file's analysis.  Returns the handler to restore, or None where no
    alarm can be set (Windows, or a thread other than the main one).  The clock itself starts
    inside guarded's `try`: a limit shorter than the step from here to there must not escape."""
    import signal

    if not hasattr(signal, "setitimer"):
        return None
    try:
        previous = signal.signal(signal.SIGALRM, _time_up)
    except ValueError:  # not the main thread of the main interpreter
        return None
    return signal.SIG_DFL if previous is None else previous


# The per-file limit bounds memory as well as time: while a file is analysed, its process may
# grow by at most this much (RLIMIT_AS, where the platform has it).  Past it an allocation fails:
# CPython raises MemoryError, which becomes a `timeout` error for that file ("out of memory")
# instead of the machine's OOM killer ending the run.  The guards keep libcst's native parser,
# which cannot recover from a failed allocation, far below it (parse_guard.py).
FILE_MEMORY_BYTES = 4 * 1024**3


def _bound_memory():
    """Limit this process's address space to its size now plus FILE_MEMORY_BYTES; returns the
    limits to restore, or None where there is nothing to do (no RLIMIT_AS, a tighter limit)."""
    try:
        import resource

        with open("/proc/self/statm") as handle:
            size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    limit = size + FILE_MEMORY_BYTES
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):
        return None
    return soft, hard


def _unbound_memory(limits) -> None:
    if limits is not None:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, limits)
        except (ValueError, OSError):
            pass


class collector_paused:
    """`with collector_paused():` the cyclic collector does not run inside (as it was, after).

    A file's check allocates a libcst tree and a model of the file, hundreds of thousands of
    objects, and the collector would walk them again and again while they are built (8% of
    the CPU time of a whole-tree run, 20% on some trees: benchmarks/gc_pause.py).  The
    collector's state belongs to the process, so the library never touches it: the entry
    points that own their process pause it around one file's check at a time (guarded below:
    every file of a run, in a worker or in the command line's own process; the command line's
    fix loops; the language server's check thread).  Between files it runs: a run that never
    collected kept the cycles its checks leave, twice the memory on a tree of 3,000 files."""

    def __enter__(self) -> "collector_paused":
        import gc

        self.collecting = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc) -> None:
        if self.collecting:
            import gc

            gc.enable()


def guarded(work: Callable[[str, Settings], Outcome], path: str, settings: Settings) -> Outcome:
    """`work(path, settings)`, with a crash or a stall turned into an error for that file.

    The time limit is a SIGALRM in the process that analyses (a worker, or the CLI's own process
    with -j 1): the handler raises between two bytecodes, and the `re` module checks for signals
    while it matches, so Python code and regular expressions stop on time.  Native code that
    never looks at signals (libcst's parser) is stopped when it returns.
    """
    previous = _handle_alarm()
    memory = _bound_memory()
    try:
        try:
            if previous is not None:
                import signal

                signal.setitimer(signal.ITIMER_REAL, settings.file_timeout)
            with collector_paused():
                return work(path, settings)
        finally:
            _unbound_memory(memory)
            if previous is not None:
                import signal

                signal.setitimer(signal.ITIMER_REAL, 0)
    except TimeUp:
        return stopped(path, settings.file_timeout), None
    except Exception as exc:  # check_source already catches analysis bugs; this is the rest
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return crashed(path, f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"), None
    finally:
        if previous is not None:
            import signal

            signal.signal(signal.SIGALRM, previous)


def run_parallel(work, tasks: list[tuple[str, Settings]], jobs: int, prepare=None) -> list[Outcome]:
    """`work(path, settings)` for every task in `jobs` processes; outcomes in task order.
    `prepare()` runs once in each worker before its first task (imports, say)."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    outcomes: list = [None] * len(tasks)
    broken: list[int] = []
    # Big files first: the last file to finish then is a small one.
    order = sorted(range(len(tasks)), key=lambda i: -size_of(tasks[i][0]))
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=_context(), initializer=_start_worker, initargs=(prepare, os.getpid()))
    try:
        with _holding_stop_signals():  # submit forks the workers
            futures = {i: pool.submit(guarded, work, *tasks[i]) for i in order}
        for i in order:
            try:
                outcomes[i] = futures[i].result()
            except BrokenProcessPool:
                broken.append(i)
            except Exception as exc:  # an unpicklable result, say
                outcomes[i] = (crashed(tasks[i][0], f"{type(exc).__name__}: {exc}"), None)
    except BaseException:  # Ctrl-C, SIGTERM (or any failure here): stop now, not after the queued files
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    for i in broken:
        outcomes[i] = isolated(work, *tasks[i], prepare)
    return outcomes


def _stop(pool) -> None:
    """End the pool at once: queued files are dropped and the workers terminated (they only
    read files and send results back; nothing they do is left half-written)."""
    # the executor has no public handles, and shutdown() drops these
    workers = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=1)
    # The executor's manager thread closes its wake-up pipe when it sees the workers gone; the
    # exit hook of concurrent.futures writes to that pipe without a lock, so the two can meet
    # (a "Bad file descriptor" traceback on a SIGTERM'd run's stderr).  Waiting for the thread
    # is not enough on a loaded machine: take the pipe out of the hook's reach.  The thread
    # still ends by itself (its workers are gone) and the interpreter joins it at exit.
    if manager is not None:
        _forget_wakeup(manager)
        manager.join(timeout=1)


def _forget_wakeup(manager) -> None:
    from concurrent.futures import process

    wakeups = getattr(process, "_threads_wakeups", None)  # private: absent in some Python, no race there
    if wakeups is not None:
        wakeups.pop(manager, None)


def isolated(work, path: str, settings: Settings, prepare=None) -> Outcome:
    """`work(path, settings)` guarded in a process of its own: its death (a native abort, the
    OOM killer) is an error for that file, not the end of the run."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=1, mp_context=_context(), initializer=_start_worker, initargs=(prepare, os.getpid()))
    try:
        with _holding_stop_signals():
            future = pool.submit(guarded, work, path, settings)
        outcome = future.result()
    except BrokenProcessPool:
        outcome = crashed(path, "the worker process checking this file died"), None
    except BaseException:  # Ctrl-C, SIGTERM: as in run_parallel
        _stop(pool)
        raise
    pool.shutdown(wait=True)
    return outcome


# A file this big is never analysed in the command line's own process: not by the check
# (engine.check_files), nor by --fix, --diff, --add-noqa or a check of standard input (apart).
ISOLATED_FROM_BYTES = 1024 * 1024


class ChildDied(Exception):
    """The child process running a file's work died before it answered (a native abort)."""


def apart(size: int, function, *args):
    """`function(*args)` for a file of `size` bytes: in a child process when the file is
    ISOLATED_FROM_BYTES or more (where processes fork), else here.  libcst's native parser aborts
    its process when an allocation fails; in a child that is ChildDied for that one file, not the
    end of the run.  The child's memory is bounded as a worker's (guarded), and `function` is not
    pickled (the child is forked with it): only its value comes back."""
    if size < ISOLATED_FROM_BYTES or not sys.platform.startswith("linux"):
        return function(*args)
    return in_child(function, *args)


def in_child(function, *args):
    """`function(*args)` in a forked child; its value, its exception raised again here (as a
    RuntimeError naming it when it cannot be sent), or ChildDied.

    A bare fork: the child ends with os._exit, so nothing the parent buffered (the language
    server's protocol stream) is flushed twice, and no exit hook of the parent runs there.  The
    parent waits in short polls: a stop raised in its thread (the server's time limit,
    lsp/limits.py) is taken between two, and the child is then ended."""
    import pickle
    import select

    reader, writer = os.pipe()
    parent = os.getpid()
    with _holding_stop_signals():
        child = os.fork()
    if child == 0:  # pragma: no cover - the child's lines are measured in the tests' processes
        status = 1
        try:
            os.close(reader)
            _start_worker(None, parent)
            memory = _bound_memory()
            try:
                with collector_paused():
                    answer = ("value", function(*args))
            except Exception as exc:
                answer = ("raised", exc)
            try:
                data = pickle.dumps(answer)
            except Exception as exc:  # an exception that does not pickle
                data = pickle.dumps(("raised", RuntimeError(f"{type(answer[1]).__name__}: {answer[1]} ({exc})")))
            _unbound_memory(memory)
            with os.fdopen(writer, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([reader], [], [], 0.1)
            if not ready:
                continue
            chunk = os.read(reader, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        _, status = os.waitpid(child, 0)
    except BaseException:  # Ctrl-C, SIGTERM, the server's stop: the child goes too
        _end(child)
        raise
    finally:
        os.close(reader)
    if status != 0 or not chunks:
        raise ChildDied(f"status {status}")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "raised":
        raise value
    return value


def _end(child: int) -> None:
    import signal

    try:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    except (ChildProcessError, ProcessLookupError, OSError):
        pass


def size_of(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
