"""`gradlint lsp` end to end: a real LSP client (pytest-lsp) drives the server in a subprocess."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest.importorskip("pytest_lsp")

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from gradlint.rules.registry import rule_page_url
from gradlint.check.suppress import line_suppressions
from lsp_snippets import BUGGY

SERVER = [sys.executable, "-m", "gradlint", "lsp"]
TIMEOUT = 10  # seconds; generous for a loaded CI machine, a passing test takes far less

FIXED = BUGGY.replace(
    "    loss.backward()\n    opt.zero_grad()\n", "    opt.zero_grad()\n    loss.backward()\n"
)
BROKEN = BUGGY.replace("for x, y in data:", "for x, y in data")  # missing colon: line 5

# GL002 on `opt.zero_grad()`, line 8 (0-based 7), columns 4..19
ZERO_GRAD_RANGE = types.Range(start=types.Position(line=7, character=4), end=types.Position(line=7, character=19))


def initialize_params(root: Path | None = None, capabilities: types.ClientCapabilities | None = None):
    capabilities = capabilities or types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True)
        )
    )
    return types.InitializeParams(
        capabilities=capabilities,
        root_uri=root.as_uri() if root else None,
        initialization_options={"debounce_ms": 50},
    )


def make_client() -> LanguageClient:
    """pytest-lsp's client, plus an answer to client/registerCapability (the pyproject.toml watcher)."""
    client = pytest_lsp.make_test_lsp_client()
    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams):
        client.registrations.extend(params.registrations)

    return client


def config(command: list[str] = SERVER) -> ClientServerConfig:
    return ClientServerConfig(server_command=command, client_factory=make_client)


# One server for most tests (starting one costs about a second); each test uses its own
# documents under its own tmp_path, so nothing leaks between them.  The xdist group keeps
# the module on one worker: one server, not one per worker.
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.xdist_group("test_lsp")]


@pytest_lsp.fixture(config=config(), scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await lsp_client.initialize_session(initialize_params(tmp_path_factory.mktemp("workspace")))
    yield
    await lsp_client.shutdown_session()


PULL_CAPABILITIES = types.ClientCapabilities(
    text_document=types.TextDocumentClientCapabilities(diagnostic=types.DiagnosticClientCapabilities())
)


@pytest_lsp.fixture(config=config(), loop_scope="module")
async def pull_client(lsp_client: LanguageClient, tmp_path: Path):
    await lsp_client.initialize_session(initialize_params(tmp_path, PULL_CAPABILITIES))
    yield
    await lsp_client.shutdown_session()


# A server whose GL002 rule raises: the engine turns that into an internal error.
FAULTY_SERVER = [
    sys.executable,
    "-c",
    "import dataclasses, sys\n"
    "import gradlint.rules.registry as registry\n"
    "rules = registry.all_rules()\n"
    "def boom(model):\n"
    "    raise RuntimeError('rule exploded')\n"
    "patched = tuple(dataclasses.replace(r, check=boom) if r.code == 'GL002' else r for r in rules)\n"
    "registry.all_rules = lambda: patched\n"
    "from gradlint.lsp import main\n"
    "sys.exit(main([]))\n",
]


@pytest_lsp.fixture(config=config(FAULTY_SERVER), loop_scope="module")
async def faulty_client(lsp_client: LanguageClient, tmp_path: Path):
    await lsp_client.initialize_session(initialize_params(tmp_path))
    yield
    await lsp_client.shutdown_session()


# --- helpers ----------------------------------------------------------------------


async def until(ready) -> None:
    """Let the client process messages until ready() holds (polling: requests and notifications alike)."""

    async def loop():
        while not ready():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(loop(), TIMEOUT)


async def diagnostics_for(client: LanguageClient, uri: str, ready=lambda d: True) -> list[types.Diagnostic]:
    await until(lambda: uri in client.diagnostics and ready(client.diagnostics[uri]))
    return list(client.diagnostics[uri])


def open_doc(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)
        )
    )
    return uri


def replace_all(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply non-overlapping TextEdits (ASCII text) the way an editor would."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        return offsets[position.line] + position.character

    for edit in sorted(edits, key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


# --- tests ------------------------------------------------------------------------


@pytest_lsp.fixture(config=config(), loop_scope="module")
async def raw_client(lsp_client: LanguageClient):
    yield  # each test initializes and shuts down itself


async def test_initialize_then_shutdown_and_exit_cleanly(raw_client: LanguageClient, tmp_path: Path):
    result = await raw_client.initialize_session(initialize_params(tmp_path))
    caps = result.capabilities
    assert result.server_info.name == "gradlint"
    assert caps.hover_provider
    assert caps.code_action_provider
    assert caps.diagnostic_provider is not None
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    await until(lambda: raw_client.registrations)
    (watch,) = raw_client.registrations
    assert watch.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    assert watch.register_options["watchers"] == [{"globPattern": "**/pyproject.toml"}]
    await raw_client.shutdown_session()  # shutdown, exit, and wait for the process
    assert raw_client._server.returncode == 0


async def test_buggy_buffer_gets_diagnostics_then_fixing_clears_them(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    diagnostics = await diagnostics_for(client, uri, lambda d: len(d) > 0)
    assert [(d.code, d.range) for d in diagnostics] == [("GL002", ZERO_GRAD_RANGE)]
    (gl002,) = diagnostics
    assert gl002.source == "gradlint"
    assert gl002.severity == types.DiagnosticSeverity.Warning
    assert gl002.code_description is not None and gl002.code_description.href == rule_page_url("GL002")
    related_lines = sorted(r.location.range.start.line for r in gl002.related_information)
    assert related_lines == [6, 8]  # the backward and the step

    # typing: several quick versions, only the last one matters
    replace_all(client, uri, BUGGY + "\n", 2)
    replace_all(client, uri, FIXED + "# half", 3)
    replace_all(client, uri, FIXED, 4)
    assert await diagnostics_for(client, uri, lambda d: len(d) == 0) == []


async def test_broken_buffer_shows_syntax_error_and_server_survives(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    await diagnostics_for(client, uri, lambda d: any(x.code == "GL002" for x in d))

    replace_all(client, uri, BROKEN, 2)
    diagnostics = await diagnostics_for(client, uri, lambda d: not any(x.code == "GL002" for x in d))
    # the documented rule: stale findings cleared, one syntax-error diagnostic where parsing stopped
    assert [d.code for d in diagnostics] == ["syntax-error"]
    # at the missing colon (line 5, 0-based 4), with Python's own message
    assert diagnostics[0].range.start == types.Position(line=4, character=16)
    assert diagnostics[0].message.endswith("syntax error: expected ':'")
    assert diagnostics[0].severity == types.DiagnosticSeverity.Error

    # the server still answers, and recovers when the buffer parses again
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=6))
    )
    assert hover is None
    replace_all(client, uri, BUGGY, 3)
    diagnostics = await diagnostics_for(client, uri, lambda d: any(x.code == "GL002" for x in d))
    assert [d.code for d in diagnostics] == ["GL002"]


async def test_suppression_code_action_silences_the_finding(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    (diagnostic,) = await diagnostics_for(client, uri, lambda d: len(d) > 0)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [action.title for action in actions]
    assert titles == ["Move opt.zero_grad() after opt.step()", "Suppress GL002 on this line"]
    action = actions[1]
    assert action.kind == types.CodeActionKind.QuickFix
    assert [d.code for d in action.diagnostics] == ["GL002"]
    edited = apply_edits(BUGGY, action.edit.changes[uri])
    assert edited.splitlines()[7] == "    opt.zero_grad()  # noqa: GL002"
    assert line_suppressions(edited)[8] == {"GL002"}

    # a client asking only for source actions gets none of ours
    source_only = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.Source]),
        )
    )
    assert not source_only

    replace_all(client, uri, edited, 2)
    assert await diagnostics_for(client, uri, lambda d: len(d) == 0) == []
    # nothing left to suppress on that line
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=ZERO_GRAD_RANGE,
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert not actions


async def test_hover_explains_the_rule(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    await diagnostics_for(client, uri, lambda d: len(d) > 0)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=8))
    )
    assert hover is not None
    assert hover.range == ZERO_GRAD_RANGE
    assert hover.contents.kind == types.MarkupKind.Markdown
    from gradlint.rules.registry import rules_by_code

    rule = rules_by_code()["GL002"]
    assert hover.contents.value.startswith(f"**GL002 {rule.name}**")
    assert rule.summary.strip() in hover.contents.value
    assert rule.docs_url in hover.contents.value
    # a clean line has no hover from gradlint
    clean = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=6, character=8))
    )
    assert clean is None


async def test_close_clears_diagnostics(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    await diagnostics_for(client, uri, lambda d: len(d) > 0)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    assert await diagnostics_for(client, uri, lambda d: len(d) == 0) == []


async def test_pull_diagnostics(pull_client: LanguageClient, tmp_path: Path):
    uri = open_doc(pull_client, tmp_path / "train.py", BUGGY)
    identifier = types.TextDocumentIdentifier(uri=uri)
    report = await pull_client.text_document_diagnostic_async(types.DocumentDiagnosticParams(text_document=identifier))
    assert report.kind == "full"
    assert [(d.code, d.range) for d in report.items] == [("GL002", ZERO_GRAD_RANGE)]
    # unchanged buffer: the client's result id is still current
    again = await pull_client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=identifier, previous_result_id=report.result_id)
    )
    assert again.kind == "unchanged"
    replace_all(pull_client, uri, FIXED, 2)
    fixed = await pull_client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=identifier, previous_result_id=report.result_id)
    )
    assert fixed.kind == "full" and list(fixed.items) == []
    # a pull client gets no pushed copy
    assert uri not in pull_client.diagnostics


async def test_configuration_reload_on_pyproject_change(client: LanguageClient, tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.gradlint]\nignore = ["GL002"]\n')
    uri = open_doc(client, tmp_path / "train.py", BUGGY + "\n")
    # the configured workspace: GL002 is off, so no finding at all
    assert await diagnostics_for(client, uri) == []

    def changed():
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)]
            )
        )

    pyproject.write_text("[tool.gradlint]\nignore = []\n")
    changed()
    assert [d.code for d in await diagnostics_for(client, uri, lambda d: len(d) > 0)] == ["GL002"]

    # a broken configuration: a message to the user, and the server keeps serving with the defaults
    pyproject.write_text('[tool.gradlint]\nselect = ["NOPE"]\n')
    changed()
    await until(lambda: client.messages)
    assert "NOPE" in client.messages[-1].message
    replace_all(client, uri, BUGGY, 2)
    await asyncio.sleep(0.2)
    assert [d.code for d in await diagnostics_for(client, uri, lambda d: len(d) > 0)] == ["GL002"]


async def test_rule_that_raises_is_logged_and_server_keeps_running(faulty_client: LanguageClient, tmp_path: Path):
    uri = open_doc(faulty_client, tmp_path / "train.py", BUGGY)

    def logged():
        return [m for m in faulty_client.log_messages if "rule exploded" in m.message]

    await until(logged)
    (message,) = logged()
    assert message.type == types.MessageType.Error
    assert "train.py" in message.message
    # still serving: requests are answered and other documents are checked
    hover = await faulty_client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=8))
    )
    assert hover is None
    assert await diagnostics_for(faulty_client, uri) == []


async def test_quick_fix_moves_the_clear_and_the_finding_goes(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    (diagnostic,) = await diagnostics_for(client, uri, lambda d: len(d) > 0)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    fix = actions[0]  # the rule's autofix comes before the suppression
    assert fix.title == "Move opt.zero_grad() after opt.step()"
    assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
    assert [d.code for d in fix.diagnostics] == ["GL002"]
    fixed = apply_edits(BUGGY, fix.edit.changes[uri])
    assert fixed == BUGGY.replace("    opt.zero_grad()\n    opt.step()\n", "    opt.step()\n    opt.zero_grad()\n")
    replace_all(client, uri, fixed, 2)
    assert await diagnostics_for(client, uri, lambda d: len(d) == 0) == []


# fixtures/gl004/wrong_clip_after_prepared_step.py's loop: the planned move of the clip before
# the step would add GL005, so --fix drops it and the editor must not offer it (issue 30).
CLIP_AFTER_PREPARED_STEP = """\
accelerator = Accelerator(gradient_accumulation_steps=2)
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for x, y in loader:
    with accelerator.accumulate(model):
        loss = nn.functional.mse_loss(model(x), y)
        accelerator.backward(loss)
        optimizer.step()
        accelerator.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.zero_grad()
"""


async def test_no_quick_fix_that_fix_would_drop(client: LanguageClient, tmp_path: Path):
    uri = open_doc(client, tmp_path / "train.py", CLIP_AFTER_PREPARED_STEP)
    (diagnostic,) = await diagnostics_for(client, uri, lambda d: len(d) > 0)
    assert diagnostic.code == "GL004"
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert [action.title for action in actions] == ["Suppress GL004 on this line"]


async def test_columns_are_utf16_for_a_default_client(client: LanguageClient, tmp_path: Path):
    # the emoji is one code point but two UTF-16 units: everything after it shifts by one
    text = BUGGY.replace("    opt.zero_grad()", '    _ = "\U0001F600"; opt.zero_grad()')
    uri = open_doc(client, tmp_path / "emoji.py", text)
    (diagnostic,) = await diagnostics_for(client, uri, lambda d: len(d) > 0)
    assert diagnostic.range == types.Range(start=types.Position(line=7, character=14), end=types.Position(line=7, character=29))
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=7, character=14))
    )
    assert hover is not None and hover.range == diagnostic.range


async def test_saving_pyproject_in_the_editor_reloads_configuration(client: LanguageClient, tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.gradlint]\n")
    uri = open_doc(client, tmp_path / "train.py", BUGGY)
    await diagnostics_for(client, uri, lambda d: len(d) > 0)
    # the pyproject.toml is open in the editor too: not Python, so never checked itself
    config_uri = pyproject.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=config_uri, language_id="toml", version=1, text="")
        )
    )
    pyproject.write_text('[tool.gradlint]\nignore = ["GL002"]\n')
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=config_uri)))
    assert await diagnostics_for(client, uri, lambda d: len(d) == 0) == []
    assert config_uri not in client.diagnostics
