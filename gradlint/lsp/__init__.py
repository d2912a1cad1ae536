"""`gradlint lsp`: the language server (needs the `lsp` extra, pygls).

Only this package imports pygls, and only ``server`` does so at import
time, so ``import gradlint`` and the checker stay pygls-free.  The pure
parts (turning a check into diagnostics, suppression and fix edits, hover
text) live in ``documents``, ``actions`` and ``config_source`` and can be
tested without a client.

    gradlint lsp                  speak LSP over stdin/stdout (what editors start)
    gradlint lsp --tcp HOST:PORT  listen on a TCP socket instead (for debugging)
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence


def _address(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    if int(port) > 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return host or "127.0.0.1", int(port)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # a usage error: one line, exit 2, no traceback
        self.exit(2, f"gradlint lsp: error: {message}\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from gradlint import DOCS_URL  # the published page: an installed package ships no docs/

    parser = _Parser(
        prog="gradlint lsp",
        description="The gradlint language server: editors start it and get gradlint's findings as\n"
        "diagnostics while you type, with quick fixes and hover. It speaks LSP over\n"
        "stdin/stdout unless --tcp is given. Configuration is the nearest [tool.gradlint].\n"
        "Needs the `lsp` extra: pip install 'torch-gradlint[lsp]'. Set-ups for Neovim,\n"
        f"Helix, Emacs and VS Code: {DOCS_URL}editors.md",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="speak LSP over stdin/stdout (the default)")
    mode.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="listen on a TCP socket instead, for debugging (default: stdio)")
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)

    try:
        from gradlint.lsp.server import make_server
    except ImportError as exc:  # pygls or lsprotocol missing: the `lsp` extra is not installed
        print(f"gradlint lsp needs the `lsp` extra: pip install 'torch-gradlint[lsp]' ({exc})", file=sys.stderr)
        return 2

    server = make_server()
    _settle_imports()
    leave = _ctrl_c_ends_the_server()
    _read_messages_robustly(leave)
    if args.tcp is not None:
        _quiet_exit_in_tcp_mode()
        server.start_tcp(*args.tcp)
    else:
        server.start_io()
    # `exit` after `shutdown` is a clean stop; `exit` without it is 1 (the LSP rule).
    code = 0 if server.shutdown_requested else 1
    _leave_now_if_threads_remain(code)
    return code


def _leave_now_if_threads_remain(code: int) -> None:
    """The session is over.  Python would wait for every thread before exiting: a check stuck in
    native code, or pygls's reader waiting for input the client never sends or closes.  Each
    message was flushed as it was sent and the server writes no file, so leave without them."""
    import os
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _settle_imports() -> None:
    """Import the analysis now, then move everything alive (modules, classes, pygls) out of the
    cyclic collector's way: a long-running server's full collections scanned those hundreds of
    thousands of objects again and again, about 0.1 s each, landing on random keystrokes."""
    import gc

    from gradlint.check.engine import load_analysis

    load_analysis()
    gc.collect()
    gc.freeze()


def _ctrl_c_ends_the_server():
    """A server started by hand stops at the first Ctrl-C, exit 130.  pygls would catch the
    KeyboardInterrupt and then wait for its reader thread, which is blocked reading stdin
    for good: the first Ctrl-C seemed ignored and the second killed the interpreter while
    that thread held stdin's lock (`Fatal Python error: _enter_buffered_busy`).  The server
    writes no file and each message is flushed as it is sent: nothing is lost by leaving now.
    Returns the handler, which the event loop takes over once it runs (_read_messages_robustly)."""
    import os
    import signal

    def leave(signum, frame):
        try:
            sys.stderr.flush()
        finally:
            os._exit(130)

    try:
        signal.signal(signal.SIGINT, leave)
    except ValueError:  # not the main thread (an embedding program): its own Ctrl-C handling stands
        return None
    return leave


def _ctrl_c_wakes_the_loop(leave) -> None:
    """Hand the Ctrl-C handler to the running event loop.  A signal sent to the process may be
    delivered to any of its threads; Python runs a handler in the main thread only, when that
    thread next wakes, and the main thread sleeps in the event loop's poll while the client is
    quiet.  A Ctrl-C that landed on the thread reading stdin was thus lost until the next
    message (the test of the first Ctrl-C once waited 10 s for it).  The loop's signal handler
    writes to a pipe the loop watches, from whatever thread receives the signal."""
    import asyncio
    import signal

    if leave is None:
        return
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, leave, signal.SIGINT, None)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, or not the main thread
        pass


def _quiet_exit_in_tcp_mode() -> None:
    """pygls ends a TCP session by raising SystemExit inside asyncio's connection callback;
    asyncio would log that clean `exit` as an unhandled exception with a traceback."""

    def not_a_clean_exit(record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], SystemExit))

    logging.getLogger("asyncio").addFilter(not_a_clean_exit)


def _read_messages_robustly(leave=None) -> None:
    """pygls's message loop with gradlint's (gradlint/lsp/stream.py): a malformed message is
    skipped and logged and the next well-formed one answered, where pygls's lost every later
    message; and a TCP client that goes away mid-message (a reset, a half-sent request) ends the
    session as the end of its input does, where pygls let the read error escape into asyncio,
    which printed a traceback and kept a server with no client running.  The loop, once running,
    also takes over the Ctrl-C handler `leave` (_ctrl_c_wakes_the_loop)."""
    import pygls.server

    from gradlint.lsp import stream

    if getattr(pygls.server, "run_async", None) is None:  # another pygls layout: keep its own loop
        return
    async def run_async(*args, **kwargs):
        _ctrl_c_wakes_the_loop(leave)
        return await stream.run_async(*args, **kwargs)

    pygls.server.run_async = run_async
