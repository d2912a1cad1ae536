"""The language server's buffer and bookkeeping, driven in-process through pygls's protocol.

- An incremental edit lands where the editor made it, whatever characters the
  lines above hold: LSP lines end at \\n, \\r\\n and \\r only (pygls split them
  with str.splitlines, so a form feed or U+2028 above an edit shifted it), and
  columns count UTF-16 code units by default.
- The server keeps nothing per notification: memory stays flat over thousands of edits.
- The server says what `gradlint check` says on the same text.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("pygls")

from gradlint.lsp.server import make_server
from gradlint.options.settings import Settings


class Client:
    """Messages into the server's protocol as a client would send them; what it writes, kept."""

    def __init__(self, root, encodings=None) -> None:
        self.server = make_server()
        self.protocol = self.server.protocol
        self.sent: list[dict] = []
        self.protocol.set_writer(self, include_headers=False)
        self.root = root
        self.ids = 0
        capabilities = {"general": {"positionEncodings": encodings}} if encodings else {}
        self.request("initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": capabilities,
                                    "initializationOptions": {"debounce_ms": 0}})
        self.notify("initialized", {})

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def close(self) -> None:
        pass

    def _handle(self, payload: dict) -> None:
        message = json.loads(json.dumps(payload), object_hook=self.protocol.structure_message)
        self.protocol.handle_message(message)

    def request(self, method: str, params) -> None:
        self.ids += 1
        self._handle({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})

    def notify(self, method: str, params) -> None:
        self._handle({"jsonrpc": "2.0", "method": method, "params": params})

    def source(self, uri: str) -> str:
        return self.server.workspace.get_text_document(uri).source


def position(text: str, offset: int, utf16: bool = True) -> dict:
    """The LSP position of a code-point offset: lines end at \\n, \\r\\n or \\r only."""
    import re

    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    line = max(i for i, start in enumerate(starts) if start <= offset)
    column = text[starts[line]:offset]
    width = len(column.encode("utf-16-le")) // 2 if utf16 else len(column)
    return {"line": line, "character": width}


TEXT = (
    "import torch\n# page one \x0c and \u2028 and \x85 here\n\x0c\n"
    "s = '\U0001f600\u00e9'  # an emoji: two UTF-16 units\n"
    "for x, y in data:\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"
)


@pytest.mark.parametrize("encoding", [None, "utf-16", "utf-32"])
def test_incremental_edits_land_where_the_editor_made_them(tmp_path, encoding):
    async def run():
        client = Client(tmp_path, [encoding] if encoding else None)
        uri = (tmp_path / "t.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}})
        text = TEXT
        version = 1
        utf16 = encoding != "utf-32"
        for before, insert in (("    loss.backward()", "    opt.zero_grad()\n"), ("'  # an", " + 'x'"),
                               ("\U0001f600", "!"), ("here", " more \u2028")):
            at = text.index(before)
            version += 1
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": position(text, at, utf16), "end": position(text, at, utf16)},
                                    "text": insert}],
            })
            text = text[:at] + insert + text[at:]
            assert client.source(uri) == text
        client.server.forget(uri)

    asyncio.run(run())


def test_no_future_is_kept_per_notification(tmp_path):
    async def run():
        client = Client(tmp_path)
        uri = (tmp_path / "t.py").as_uri()
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}})
        for version in range(2, 302):
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                                    "text": "#\n" if version % 2 else ""}],
            })
            await asyncio.sleep(0)
        assert len(client.protocol._request_futures) < 5
        client.server.forget(uri)

    asyncio.run(run())


# --- limits: the command line's time and size limits, and shutdown --------------------------


def _forever(*args, **kwargs):
    while True:  # an analysis that never ends (Python code: stoppable between two bytecodes)
        pass


def _open(client: Client, path, text: str) -> str:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}})
    return uri


def test_a_check_stops_at_the_file_time_limit(tmp_path, monkeypatch):
    import gradlint.lsp.server as server_module

    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\nfile-timeout = 0.5\n")
    monkeypatch.setattr(server_module, "check_document", _forever)

    async def run():
        client = Client(tmp_path)
        uri = _open(client, tmp_path / "t.py", TEXT)
        started = asyncio.get_running_loop().time()
        result = await asyncio.wait_for(client.server.check(uri), 20)
        assert asyncio.get_running_loop().time() - started < 10
        (diagnostic,) = result.diagnostics
        assert diagnostic["code"] == "timeout"
        assert diagnostic["message"] == "gradlint could not check this file: analysis stopped after 0.5 s"
        assert uri not in client.server.memos  # it may be half updated
        client.server.forget(uri)

    asyncio.run(run())


def test_shutdown_stops_a_running_check(tmp_path, monkeypatch):
    import threading

    import gradlint.lsp.server as server_module

    monkeypatch.setattr(server_module, "check_document", _forever)

    async def run():
        client = Client(tmp_path)
        uri = _open(client, tmp_path / "t.py", TEXT)
        check = asyncio.ensure_future(client.server.check(uri))
        await asyncio.sleep(0.5)
        assert any(t.name.startswith("gradlint-check") for t in threading.enumerate())
        client.request("shutdown", None)
        assert await asyncio.wait_for(check, 10) is None
        assert any('"id": 2' in json.dumps(m) for m in client.sent)  # shutdown answered

    asyncio.run(run())


def test_a_buffer_over_the_size_limit_is_not_analysed(tmp_path, monkeypatch):
    from gradlint.check import engine
    from gradlint.lsp.documents import check_document

    monkeypatch.setattr(engine, "MAX_FILE_BYTES", 1024)
    monkeypatch.setattr(engine, "check_source", _forever)
    text = TEXT + "x = 1\n" * 400
    (diagnostic,) = check_document(text, "t.py", "file:///t.py", Settings.default()).diagnostics
    assert diagnostic["code"] == "read-error"
    assert diagnostic["message"] == "gradlint could not check this file: file too large to check (2 KiB > 1 KiB)"
    assert diagnostic["range"]["start"] == {"line": 0, "character": 0}


# A server whose GL002 rule never returns: `shutdown` and `exit` must still end it at once.
STUCK_SERVER = (
    "import dataclasses, sys\n"
    "import gradlint.rules.registry as registry\n"
    "rules = registry.all_rules()\n"
    "def forever(model):\n"
    "    open('check-started', 'w').close()\n"
    "    while True:\n"
    "        pass\n"
    "patched = tuple(dataclasses.replace(r, check=forever) if r.code == 'GL002' else r for r in rules)\n"
    "registry.all_rules = lambda: patched\n"
    "from gradlint.lsp import main\n"
    "sys.exit(main([]))\n"
)


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_exit_ends_the_server_while_a_check_runs(tmp_path):
    """Before, a check that ran for minutes kept the process (and a CPU) busy after `exit`."""
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", STUCK_SERVER], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (tmp_path / "t.py").as_uri(), "languageId": "python", "version": 1, "text": TEXT}}}))
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not (tmp_path / "check-started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "check-started").exists()  # the check runs, and its rule never returns
        proc.stdin.write(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        proc.stdin.write(_message({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()  # stdin stays open: the client did not close it
        start = time.monotonic()
        code = proc.wait(timeout=20)
        assert time.monotonic() - start < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    assert code == 0


# --- the server says what `gradlint check` says ----------------------------------------------

TRAINER = """\
class Trainer:
    def __init__(self, model):
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def train_step(self, x):
        loss = self.model(x).sum()
        loss.backward()
        self.opt.step()


trainer = Trainer(model)
for x in data:
    trainer.train_step(x)
"""
TWICE = "import torch\n\nmodel = torch.nn.Linear(2, 1)\n\n\n" + TRAINER + "\n\n" + TRAINER


def test_the_server_publishes_what_the_command_line_reports(tmp_path, capsys, monkeypatch):
    """A class whose step misses its clear, driven from a loop, then both written again: the
    server published GL001 twice (its memo shared one tree between the two equal classes) where
    `gradlint check` reports it once."""
    from ci_snippets import run_cli

    path = tmp_path / "train.py"
    path.write_text(TWICE)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run_cli(capsys, "--no-cache", "--output-format", "lsp", "train.py")
    (expected,) = json.loads(out).values()
    assert [d["code"] for d in expected] == ["GL001"]

    async def run():
        client = Client(tmp_path)
        uri = _open(client, path, TWICE)
        for version in (1, 2, 3):  # checked again with everything reused, then after an edit and its undo
            if version > 1:
                edit = "# edited\n" if version == 2 else ""
                end = {"line": 1, "character": 0} if version == 3 else {"line": 0, "character": 0}
                client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                         "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                                                                       "end": end}, "text": edit}]})
            result = await client.server.check(uri)
            if version != 2:
                assert result.diagnostics == expected
        client.server.forget(uri)

    asyncio.run(run())
