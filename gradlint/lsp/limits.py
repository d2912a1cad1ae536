"""The language server's analyses, bounded as the command line bounds them.

The command line stops a file's analysis at its time limit (file-timeout,
30 s by default) with a SIGALRM in the analysing process (gradlint/run/pool.py).
The server analyses on a worker thread, where no alarm can be set, and it did
not stop at all: a file with eight nested loops kept a CPU busy for minutes,
even after `shutdown` and `exit`.  Here the thread is stopped the same way
the alarm stops the command line's analysis: an exception raised in it between
two bytecodes (CPython's PyThreadState_SetAsyncExc), so Python code and
regular expressions stop on time and native code (libcst's parser) stops when
it returns.  `shutdown` stops the running analysis too.

A stopped analysis may leave the buffer's memo half updated: the caller drops it.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Callable, Optional, TypeVar

T = TypeVar("T")

TIME_UP, SHUT_DOWN = "time", "shutdown"


class Stopped(BaseException):
    """Raised in the analysing thread.  Not an Exception: the analysis's own `except Exception`
    (engine.check_source) must not take it for a bug of its own."""


def _raise_in(thread_id: int, exc: Optional[type]) -> None:
    """Raise `exc` in the thread between two bytecodes (None: withdraw one not raised yet)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc else None)


class Analyses:
    """One analysis at a time on the calling thread, which another thread can stop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: Optional[int] = None
        self._why: Optional[str] = None
        self._closed = False

    def run(self, work: Callable[[], T], seconds: float) -> tuple[Optional[T], Optional[str]]:
        """(work(), None), or (None, why) when it was stopped: TIME_UP after `seconds`, SHUT_DOWN
        when the server shut down (then no analysis starts any more)."""
        with self._lock:
            if self._closed:
                return None, SHUT_DOWN
            self._thread, self._why = threading.get_ident(), None
        timer = threading.Timer(seconds, self.stop, args=(TIME_UP,))
        timer.daemon = True
        timer.start()
        try:
            try:
                return work(), None
            finally:
                timer.cancel()
                with self._lock:
                    if self._why is not None:  # fired after the work ended: withdraw it if still pending
                        _raise_in(self._thread, None)
                    self._thread = None
        except Stopped:
            return None, self._why or TIME_UP

    def stop(self, why: str) -> None:
        """Stop the running analysis, if any (from any thread)."""
        with self._lock:
            if why == SHUT_DOWN:
                self._closed = True
            if self._thread is not None and self._why is None:
                self._why = why
                _raise_in(self._thread, Stopped)
