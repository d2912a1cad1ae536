"""A big file is never parsed in the command line's own process (issue 48): `--fix`, `--diff`,
`--add-noqa` and standard input analyse a file of ISOLATED_FROM_BYTES or more in a child
process, as the plain check does (engine.check_files).  libcst's native parser aborts its
process when an allocation fails: in a child that is one error for that file, the other files
are fixed, and the file keeps its bytes.

The abort is real, not simulated: the run's address space is capped (RLIMIT_AS) a little above
what it holds, so libcst's parse of a file's four 40 KB statements fails to allocate.  For the
editing routes the cap is set once the check is done (the check itself runs in a child already):
the memory runs short while the file is fixed.  The inputs are built here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

HEADER = "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
# A loop that clears the gradients between backward and step: one GL002, which --fix repairs
# (the clear moves after the step).
LOOP = "for x in loader:\n{body}    model(x).sum().backward()\n    opt.zero_grad()\n    opt.step()\n"


def big_training_file(statements: int = 4, items: int = 8000, size: int = 1_100_000) -> str:
    """The loop holding `statements` assignments of `items` attribute reads each (40 KB each:
    under every bound of parse_guard.py, a few hundred MB of libcst's memory in all), padded
    with comment lines to `size` bytes (past ISOLATED_FROM_BYTES)."""
    row = ", ".join(["x.y"] * items)
    body = "".join(f"    z{k} = [{row}]\n" for k in range(statements))
    text = HEADER + LOOP.format(body=body)
    return text + "# padding\n" * ((size - len(text)) // 10 + 1)


SMALL = HEADER + LOOP.format(body="")

# Runs the command line with its address space capped `CAP_MB` above what it holds once the
# analysis is imported; with `after_check`, only from the end of the check (the editing).
CAPPED = textwrap.dedent('''
    import resource, sys
    from gradlint.check import engine
    from gradlint.commands import cli

    engine.load_analysis()
    CAP_MB = 128

    def cap():
        with open("/proc/self/statm") as handle:
            size = int(handle.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (size + CAP_MB * 2**20, resource.RLIM_INFINITY))

    if sys.argv[1] == "after_check":
        checked = engine.check_files

        def check_files(*args, **kwargs):
            results = checked(*args, **kwargs)
            cap()
            return results

        engine.check_files = check_files
    else:
        cap()
    sys.exit(cli.main(sys.argv[2:]))
''')

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and fork: Linux")


def _run(when: str, args: list, stdin: "bytes | None" = None, cwd=None):
    return subprocess.run(
        [sys.executable, "-c", CAPPED, when, "--no-cache", "-j", "1", *args],
        input=stdin, capture_output=True, timeout=300, cwd=cwd,
    )


def _files(tmp_path):
    big, small = tmp_path / "big.py", tmp_path / "small.py"
    big.write_text(big_training_file())
    small.write_text(SMALL)
    return big, small, big.read_bytes()


def _died(output: str, path) -> bool:
    return f"error: {path}: internal error: the process fixing this file died" in output


def test_fix_of_a_file_whose_parse_aborts_is_one_error_and_the_other_files_are_fixed(tmp_path):
    """Before: exit -6 (SIGABRT, 134 in a shell), no report, small.py not fixed."""
    big, small, before = _files(tmp_path)
    proc = _run("after_check", ["--fix", str(big), str(small)])
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 2, out
    assert _died(out, big), out
    assert big.read_bytes() == before  # nothing written
    assert small.read_text().endswith("opt.step()\n    opt.zero_grad()\n")  # the other file was fixed


def test_diff_of_a_file_whose_parse_aborts_is_one_error_and_the_other_diffs_are_shown(tmp_path):
    big, small, before = _files(tmp_path)
    proc = _run("after_check", ["--diff", str(big), str(small)])
    out = proc.stdout.decode()
    assert proc.returncode == 2, out + proc.stderr.decode()
    assert _died(out + proc.stderr.decode(), big), out + proc.stderr.decode()
    assert f"+++ {small}" in out and "+    opt.step()" in out
    assert f"+++ {big}" not in out
    assert big.read_bytes() == before and small.read_text() == SMALL


def test_add_noqa_to_a_file_whose_parse_aborts_is_one_error_and_the_other_files_are_marked(tmp_path):
    big, small, before = _files(tmp_path)
    proc = _run("after_check", ["--add-noqa", str(big), str(small)])
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 2, out
    assert _died(out, big), out
    assert big.read_bytes() == before
    assert "# noqa: GL002" in small.read_text()


@pytest.mark.parametrize("name", [[], ["--stdin-filename", "train.py"]], ids=["dash", "stdin-filename"])
def test_a_big_standard_input_whose_parse_aborts_is_one_error(tmp_path, name):
    """Before: standard input was checked in the command line's own process: exit -6, no report."""
    data = big_training_file().encode()
    proc = _run("from_start", [*name, "-"], stdin=data, cwd=tmp_path)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 2, out
    shown = name[1] if name else "-"
    assert f"error: {shown}: internal error: the worker process checking this file died" in out, out


def test_fix_of_a_big_standard_input_whose_parse_aborts_gives_the_input_back_unchanged(tmp_path):
    data = big_training_file().encode()
    proc = _run("from_start", ["--fix", "-"], stdin=data, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr.decode()
    assert proc.stdout == data  # the user's bytes, byte for byte
    assert "internal error: the worker process checking this file died" in proc.stderr.decode()


def test_a_big_file_that_parses_is_still_fixed_through_the_child(tmp_path):
    """No cap: the child fixes the big file as the command line's process would."""
    big, small, _ = _files(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "gradlint", "--no-cache", "-j", "1", "--fix", str(big), str(small)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 2 problems." in proc.stderr
    assert "opt.step()\n    opt.zero_grad()\n" in big.read_text()
    assert small.read_text().endswith("opt.step()\n    opt.zero_grad()\n")


# --- the language server: a big buffer is checked as the command line checks a big file

SERVER_CAPPED = textwrap.dedent('''
    import resource, sys
    from gradlint.check import engine
    from gradlint.commands import cli
    import gradlint.lsp.server  # noqa: F401  (pygls: imported before the cap)

    engine.load_analysis()
    with open("/proc/self/statm") as handle:
        size = int(handle.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (size + 128 * 2**20, resource.RLIM_INFINITY))
    sys.exit(cli.main(["lsp"]))
''')


def _message(payload: dict) -> bytes:
    import json

    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _diagnostics_or_end(proc, uri: str, timeout: float = 240) -> "list | None":
    """The first diagnostics the server publishes for `uri`; None when it ended first."""
    import json
    import os
    import re
    import selectors
    import time

    data = b""
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if not selector.select(timeout=0.2):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return None
        data += chunk
        while b"\r\n\r\n" in data:
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"Content-Length: *(\d+)", head).group(1))
            if len(rest) < length:
                break
            message = json.loads(rest[:length])
            data = rest[length:]
            if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
                return message["params"]["diagnostics"]
    raise AssertionError("no diagnostics in time")


def test_the_language_server_shows_an_error_for_a_big_buffer_whose_parse_aborts(tmp_path):
    """Before: the server checked every buffer in its own process, and libcst's abort ended the
    session (exit -6; a 7.5 MB buffer took it to 8.7 GB).  Now a buffer of ISOLATED_FROM_BYTES or
    more is checked in a child process: its death is the command line's error for the file."""
    pytest.importorskip("pygls")
    path = tmp_path / "big.py"
    uri = path.as_uri()
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER_CAPPED], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, cwd=tmp_path,
    )
    try:
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"processId": None, "rootUri": None, "capabilities": {}}}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": big_training_file()}}}))
        proc.stdin.flush()
        diagnostics = _diagnostics_or_end(proc, uri)
        assert diagnostics is not None, f"the server ended: {proc.wait(timeout=30)}"
        (diagnostic,) = diagnostics
        assert diagnostic["message"].endswith(": internal error: the worker process checking this file died"), diagnostic
        # and the session goes on: a small buffer is checked in the server as before
        small = (tmp_path / "small.py").as_uri()
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": small, "languageId": "python", "version": 1, "text": SMALL}}}))
        proc.stdin.flush()
        assert [d["code"] for d in _diagnostics_or_end(proc, small)] == ["GL002"]
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


def test_a_big_buffer_that_parses_gets_the_findings_of_the_command_line():
    """No cap: the child's check is the check (the findings come back to the server)."""
    from gradlint.lsp.documents import check_document_apart
    from gradlint.options.settings import Settings

    text = big_training_file()
    check = check_document_apart(text, "big.py", "file:///big.py", Settings.default(), lambda *args: None)
    assert [(d["code"], d["range"]["start"]["line"]) for d in check.diagnostics] == [("GL002", 9)]


def test_the_native_parser_is_mapped_before_any_child_is_forked():
    """libcst imports its native parser on its first parse.  A child forked for a big file
    (the language server's first buffer, say) that had to map it under its memory bound got
    an ImportError there: the buffer's check ended as an internal error, which the server logs
    instead of showing, so the buffer showed nothing.  load_analysis, run before any fork,
    maps it (a fresh interpreter: this test process has parsed already)."""
    code = "import sys\nfrom gradlint.check.engine import load_analysis\nload_analysis()\nprint('libcst.native' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr
