"""Random edits sent as incremental changes: every check the server publishes is a fresh full check.

The server keeps each open buffer through `TextDocumentSyncKind.Incremental`
changes (pygls applies them) and checks what it holds.  Here a buffer is
edited at random places (lines inserted and deleted, text typed into a line,
a def renamed, an import added, a line broken and then repaired) and after
every edit the server's check must equal `check_document` of the text the
test built itself.  Whatever the server reuses between checks, this is what
it must never change.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("pygls")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from gradlint.lsp.documents import check_document
from gradlint.lsp.protocol import PythonLinesWorkspace
from gradlint.lsp.server import make_server
from gradlint.options.settings import Settings

BASE = """\
import torch

model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 10)


def helper(loss):
    loss.backward()


def train(loader):
    for x, y in loader:
        loss = model(x).sum()
        helper(loss)
        opt.zero_grad()
        opt.step()
    sched.step()


for x, y in data:
    loss = model(x).sum()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
"""

LINES = [
    "",
    "# a comment",
    "\x0c",  # a page break: the lines below it are still LSP's (and Python's) next lines
    "# a line separator \u2028 in a comment",
    "x = 1",
    "import torch.nn.functional as F",
    "    opt.zero_grad()",
    "    opt.step()",
    "        opt.zero_grad()",
    "        loss.backward()",
    "    sched.step()",
    "opt = torch.optim.Adam(model.parameters())",
    "def helper(loss):",
    "    pass",
]
TYPED = ["x", " ", "(", ")", ":", "opt.", "zero_grad()", "#", "1", "\n", "\n    "]


def position(text: str, offset: int) -> types.Position:
    line = text.count("\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


def line_start(text: str, number: int) -> int:
    """Offset of the start of 0-based line `number` (the end of the text past the last line)."""
    offset = 0
    for _ in range(number):
        found = text.find("\n", offset)
        if found < 0:
            return len(text)
        offset = found + 1
    return offset


@st.composite
def edits(draw, text: str):
    """One edit of `text` as (start offset, end offset, new text), or a pair for break-then-repair."""
    kind = draw(st.sampled_from(["insert line", "delete line", "type", "erase", "rename def", "add import", "break"]))
    lines = text.count("\n") + 1
    number = draw(st.integers(0, lines - 1))
    start = line_start(text, number)
    end = line_start(text, number + 1)
    if kind == "insert line":
        return [(start, start, draw(st.sampled_from(LINES)) + "\n")]
    if kind == "delete line":
        return [(start, end, "")]
    if kind == "type":
        at = draw(st.integers(0, len(text)))
        return [(at, at, draw(st.sampled_from(TYPED)))]
    if kind == "erase":
        at = draw(st.integers(0, max(len(text) - 1, 0)))
        return [(at, min(at + draw(st.integers(1, 8)), len(text)), "")]
    if kind == "rename def":
        at = text.find("def helper")
        name = draw(st.sampled_from(["helper", "helper2", "train"]))
        return [(at + 4, at + 10, name)] if at >= 0 else [(0, 0, "")]
    if kind == "add import":
        return [(0, 0, draw(st.sampled_from(["import torch\n", "from torch import optim\n", "import os\n"])))]
    # a line broken (its last character removed, say the colon), then repaired
    content_end = end - 1 if end > start and text[end - 1 : end] == "\n" else end
    if content_end <= start:
        return [(start, start, "")]
    last = text[content_end - 1]
    return [(content_end - 1, content_end, ""), (content_end - 1, content_end - 1, last)]


def apply(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_check_after_an_incremental_edit_is_a_full_check(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("edits")
    uri = (root / "train.py").as_uri()
    server = make_server()
    server.protocol._workspace = PythonLinesWorkspace(root.as_uri(), sync_kind=types.TextDocumentSyncKind.Incremental)
    workspace = server.workspace
    text = BASE
    workspace.put_text_document(types.TextDocumentItem(uri=uri, language_id="python", version=0, text=text))
    version = 0
    path = str(root / "train.py")
    for _ in range(data.draw(st.integers(1, 6))):
        for start, end, new in data.draw(edits(text)):
            change = types.TextDocumentContentChangePartial(
                range=types.Range(position(text, start), position(text, end)), text=new
            )
            text = apply(text, start, end, new)
            version += 1
            workspace.update_text_document(types.VersionedTextDocumentIdentifier(version=version, uri=uri), change)
            published = asyncio.run(server.check(uri))
            assert workspace.get_text_document(uri).source == text
            fresh = check_document(text, path, uri, Settings.default())
            assert published.findings == fresh.findings
            assert published.diagnostics == fresh.diagnostics
