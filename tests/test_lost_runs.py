"""Smaller ways a run was lost, each now a report or a clean stop.

- one correctly framed LSP message whose JSON nests 1,000 deep stopped the language server
  (RecursionError, exit 2);
- an output encoding that cannot hold a file's name (`PYTHONIOENCODING=ascii`), or `--diff`
  of a non-ASCII source, was an internal error;
- `gradlint - < /dev/zero` never ended;
- a SIGTERM before the check proper (during the early answer of quick.py) killed the process
  (-15) instead of the run's quiet exit 143.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from ci_snippets import GL002_LOOP, snippet

NESTED = 1000  # 900 was fine before: the decoder's recursion limit sits between


def gradlint(*argv, cwd, env=None, stdin=None, timeout=120):
    environment = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gradlint", "--no-cache", *argv], cwd=cwd, env=environment,
                          stdin=stdin, capture_output=True, timeout=timeout)


def _deep(depth: int) -> str:
    """JSON text of arrays `depth` deep (json.dumps itself stops at about 1,000)."""
    return "[" * depth + "0" + "]" * depth


def framed(text: str) -> bytes:
    body = text.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("where", ["notification", "request"])
def test_a_deeply_nested_message_costs_that_message_only(where):
    pytest.importorskip("pygls")
    from test_lsp_stream import INITIALIZE, _responses, _server, message, request

    proc = _server()
    try:
        proc.stdin.write(message(INITIALIZE))
        proc.stdin.write(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        deep = '{"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": %s}}'
        if where == "request":
            deep = '{"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": %s}'
        proc.stdin.write(framed(deep % _deep(NESTED)))
        proc.stdin.write(message(request(3)))  # shutdown
        proc.stdin.flush()
        found = _responses(proc, 3 if where == "request" else 2)
        ids = [m.get("id") for m in found if "id" in m]
        assert 1 in ids and 3 in ids, (found, proc.stderr.read1() if proc.poll() is not None else b"")
        proc.stdin.write(message({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        assert b"RecursionError" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_the_stream_skips_a_body_nested_past_the_decoder():
    pytest.importorskip("pygls")
    from test_lsp_stream import bodies, message, request

    for depth in (NESTED, 100_000):
        deep = framed('{"jsonrpc": "2.0", "method": "x", "params": %s}' % _deep(depth))
        found, why = bodies(deep + message(request(2)))
        assert found == [request(2)] and len(why) == 1 and "nested" in why[0], why
    found, why = bodies(framed('{"jsonrpc": "2.0", "method": "x", "params": %s}' % _deep(400)))
    assert len(found) == 1 and why == []  # deep, within the limit: handed on


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github", "lsp"])
def test_an_ascii_output_encoding_and_a_non_ascii_name(tmp_path, fmt):
    (tmp_path / "entraînement.py").write_text(snippet(GL002_LOOP), encoding="utf-8")
    proc = gradlint("--output-format", fmt, ".", cwd=tmp_path, env={"PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 1, proc.stderr
    assert b"internal error" not in proc.stderr and b"Traceback" not in proc.stderr
    text = proc.stdout.decode("ascii")
    if fmt == "text":
        assert text.startswith("entra\\xeenement.py:8:5: GL002 ")


def test_diff_of_a_non_ascii_source_on_an_ascii_terminal(tmp_path):
    source = snippet(GL002_LOOP).replace("opt.zero_grad()", "opt.zero_grad()  # remettre à zéro", 1)
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    for env in ({}, {"PYTHONIOENCODING": "ascii"}):
        proc = gradlint("--diff", "--unsafe-fixes", "train.py", cwd=tmp_path, env=env)
        assert proc.returncode == 1, proc.stderr
        assert b"internal error" not in proc.stderr
        assert "\n     opt.zero_grad()  # remettre à zéro\n".encode() in proc.stdout  # the source's own bytes
    patched = subprocess.run(["patch", "-p1", "--dry-run"], cwd=tmp_path, input=proc.stdout, capture_output=True)
    assert patched.returncode == 0, patched.stdout + patched.stderr


def test_endless_standard_input_is_one_error_at_the_size_limit(tmp_path):
    with open("/dev/zero", "rb") as endless:
        proc = gradlint("-", cwd=tmp_path, stdin=endless, timeout=60)
    assert proc.returncode == 1, proc.stderr
    (error,) = [line for line in proc.stdout.decode().splitlines() if "error:" in line]
    assert error.startswith("error: -: file too large to check (more than ")


def test_standard_input_from_a_big_file_says_its_size(tmp_path):
    from gradlint.check.engine import MAX_FILE_BYTES

    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 2 * 1024 * 1024))
    with open(big, "rb") as handle:
        proc = gradlint("-", cwd=tmp_path, stdin=handle)
    assert f"({MAX_FILE_BYTES // 1024 + 2048} KiB > {MAX_FILE_BYTES // 1024} KiB)".encode() in proc.stdout


def test_sigterm_during_the_early_answer_exits_143_quietly(tmp_path):
    """The early answer (quick.py) runs before the check proper: a SIGTERM there stopped the
    process by the signal's default action.  The signal is sent from inside it, so the moment
    is exact whatever the machine's load."""
    (tmp_path / "clean.py").write_text("print('no training here')\n")
    program = textwrap.dedent("""
        import os, signal, sys, time
        from gradlint.check import quick
        answer = quick.answer
        def stopped(argv):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
            return answer(argv)
        quick.answer = stopped
        from gradlint.commands.cli import main
        sys.exit(main(["clean.py"]))
    """)
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 143, (proc.returncode, proc.stderr)
    assert proc.stderr == b""


def test_a_sigterm_as_the_run_returns_raises_nothing_out_of_main(tmp_path):
    """A SIGTERM that lands after the check, before main() put the handler back, stops the run
    as any other: 143, no Terminated out of main() (a traceback), the handler put back."""
    (tmp_path / "clean.py").write_text("print('no training here')\n")
    program = textwrap.dedent("""
        import os, signal, sys
        from gradlint.commands import cli
        restore = cli._restore_sigterm
        def late(previous):
            os.kill(os.getpid(), signal.SIGTERM)
            restore(previous)
        cli._restore_sigterm = late
        first = cli.main(["clean.py"])
        print(first, signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    """)
    proc = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, capture_output=True, timeout=60, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines()[-1] == "143 True"


def test_a_main_that_ran_to_its_end_leaves_the_stop_state_clean(tmp_path, capsys):
    from gradlint.commands import cli

    (tmp_path / "clean.py").write_text("print('no training here')\n")
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main([str(tmp_path / "clean.py")]) == 0
    assert signal.getsignal(signal.SIGTERM) is before and cli._terminating == {}
