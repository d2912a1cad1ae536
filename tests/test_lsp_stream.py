"""The language server reads on past malformed input (gradlint/lsp/stream.py).

Before, one bad message cost the session: a header block without
Content-Length made the server wait for ever, and a Content-Length a few
bytes short or long left it alive and silent for good.  Now a malformed
message is skipped and logged, and the next well-formed one is answered.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("pygls")

from gradlint.lsp import stream


def message(payload: dict, delta: int = 0, header: bytes | None = None) -> bytes:
    body = json.dumps(payload).encode()
    head = header if header is not None else b"Content-Length: %d\r\n\r\n" % (len(body) + delta)
    return head + body


def request(number: int, method: str = "shutdown") -> dict:
    return {"jsonrpc": "2.0", "id": number, "method": method}


class Bytes:
    """An asyncio-style reader over fixed bytes, handing them out in small pieces."""

    def __init__(self, data: bytes, piece: int = 7) -> None:
        self.data, self.piece = data, piece

    async def readline(self) -> bytes:
        end = self.data.find(b"\n", 0, self.piece)
        cut = end + 1 if end >= 0 else min(self.piece, len(self.data))
        out, self.data = self.data[:cut], self.data[cut:]
        return out

    async def readexactly(self, size: int) -> bytes:
        out, self.data = self.data[:size], self.data[size:]
        if len(out) < size:
            raise asyncio.IncompleteReadError(out, size)
        return out


def bodies(data: bytes) -> tuple[list[dict], list[str]]:
    async def read():
        found, why = [], []
        reader = stream._Stream(Bytes(data))
        while True:
            body = await stream.next_body(reader, why.append)
            if body is None:
                return found, why
            found.append(json.loads(body))

    return asyncio.run(read())


def test_well_formed_messages_pass_untouched():
    data = message(request(1)) + b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n" + message(request(2))
    assert bodies(data) == ([request(1), request(2)], [])


def test_a_header_block_without_content_length_is_skipped():
    data = message(request(1), header=b"Content-Type: x\r\n\r\n") + message(request(2))
    found, why = bodies(data)
    assert found == [request(2)] and why == ["a message whose header has no Content-Length"]


@pytest.mark.parametrize("delta", [-5, -1, 1, 3, 12, 40])
def test_a_wrong_content_length_costs_that_message_only(delta):
    data = message(request(1), delta) + message(request(2)) + message(request(3))
    found, why = bodies(data)
    assert found[-2:] == [request(2), request(3)], (found, why)
    assert request(1) not in found and len(why) == 1, why


def test_junk_between_messages_and_a_bad_length():
    data = (b"garbage\r\n" + message(request(1)) + b"Content-Length: many\r\n\r\n{}" + message(request(2))
            + b"x" * 300_000 + message(request(3)))
    found, why = bodies(data)
    assert found == [request(1), request(2), request(3)], why
    assert len(why) == 3


def test_a_huge_declared_length_is_dropped_in_pieces(monkeypatch):
    monkeypatch.setattr(stream, "MAX_BODY_BYTES", 1000)
    data = b"Content-Length: 5000\r\n\r\n" + b"y" * 5000 + message(request(2))
    found, why = bodies(data)
    assert found == [request(2)] and why == ["a message of 5000 bytes (more than 1000)"]


def test_a_header_block_cut_short_by_another_message():
    data = b"Content-Length: 50\r\n" + message(request(2))
    found, why = bodies(data)
    assert found == [request(2)], why


def _server():
    return subprocess.Popen(
        [sys.executable, "-m", "gradlint", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _responses(proc, wanted: int, timeout: float = 30) -> list[dict]:
    """Read messages from the server until `wanted` responses (messages with an id) came."""
    import os
    import selectors

    found, data = [], b""
    deadline = time.monotonic() + timeout
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    while sum("id" in m for m in found) < wanted and time.monotonic() < deadline:
        if not selector.select(timeout=0.2):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        data += chunk
        while b"\r\n\r\n" in data:
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"Content-Length: *(\d+)", head).group(1))
            if len(rest) < length:
                break
            found.append(json.loads(rest[:length]))
            data = rest[length:]
    return found


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"processId": None, "rootUri": None, "capabilities": {}}}


@pytest.mark.parametrize("bad", ["no length", "short", "long"])
def test_the_server_answers_the_next_message_after_a_bad_one(bad):
    proc = _server()
    try:
        proc.stdin.write(message(INITIALIZE))
        proc.stdin.write(message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        hover = {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                 "params": {"textDocument": {"uri": "file:///none.py"}, "position": {"line": 0, "character": 0}}}
        if bad == "no length":
            proc.stdin.write(message(hover, header=b"Content-Type: application/vscode-jsonrpc\r\n\r\n"))
        else:
            proc.stdin.write(message(hover, -4 if bad == "short" else 4))
        proc.stdin.write(message(request(3)))  # shutdown
        proc.stdin.flush()
        found = _responses(proc, 2)
        ids = [m.get("id") for m in found if "id" in m]
        assert ids == [1, 3], found
        logs = [m["params"]["message"] for m in found if m.get("method") == "window/logMessage"]
        assert any("skipped" in text for text in logs), logs
        proc.stdin.write(message({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
