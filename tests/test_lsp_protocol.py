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

from lsprotocol import types

from gradlint.engine import check_source
from gradlint.lsp.server import make_server
from gradlint.settings import Settings


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
