"""The pygls server: document events in, diagnostics, code actions and hovers out.

All analysis is ``gradlint.check.engine.check_source`` (through
``documents.check_document``); this module only schedules checks and
speaks the protocol.

Limits: a check stops at the file's time limit (file-timeout, as on the
command line; gradlint/lsp/limits.py) and at ``shutdown``; a buffer over the
size limit is not analysed (documents.py).  Each says so in one diagnostic.

Scheduling: ``didOpen`` and ``didSave`` check at once; ``didChange``
waits ``debounce`` seconds (0.05 by default, ``initializationOptions``
``{"debounce_ms": N}`` changes it) and each change cancels the check still
waiting for the previous one.  Checks run one at a time on a worker
thread so the server keeps answering while a large buffer is parsed; a
result is published only if the buffer's version and the configuration
are still the ones it was computed for, so a slow old check never
overwrites a newer one.

Push or pull: a client that declares pull diagnostics
(``textDocument.diagnostic``) asks with ``textDocument/diagnostic`` and
gets no pushed copy (it would show each finding twice); every other
client gets ``textDocument/publishDiagnostics``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Callable, Optional

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from gradlint import __version__
from gradlint.incremental import DocumentMemo
from gradlint.lsp import actions
from gradlint.lsp.config_source import SettingsCache, is_config_file
from gradlint.lsp.protocol import GradlintProtocol, use_python_lines
from gradlint.lsp.documents import (
    DocumentCheck,
    check_document,
    check_document_apart,
    finding_at,
    findings_on_lines,
    stopped_check,
)
from gradlint.lsp.limits import SHUT_DOWN, Analyses

# Seconds a change waits for the next one before it is checked.  Keystrokes come 100 to 200 ms
# apart at 60 to 100 words a minute, a held key's autorepeat every 30 to 50 ms: 50 ms gathers a
# burst and an autorepeat into one check, yet a pause after one keystroke shows its result at
# once (an edit's check of a 3,000-line module costs about 20 ms, so diagnostics arrive about
# 70 ms after the key; benchmarks/lsp_large_document.py).  Checks run one at a time and a result
# for an outdated version is never published, so a check between two keystrokes costs only
# CPU.  250 ms made every result wait a quarter of a second longer than its analysis.
DEFAULT_DEBOUNCE = 0.05
PYTHON_SUFFIXES = (".py", ".pyi")

_converter = get_converter()


def guarded(handler: Callable) -> Callable:
    """A handler that fails logs to the client and answers nothing, instead of killing the session."""

    def report(server: "GradlintServer", exc: BaseException) -> None:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        server.log(
            f"gradlint: error in {handler.__name__}: {type(exc).__name__}: {exc} "
            f"(at {os.path.basename(where.filename)}:{where.lineno})",
            types.MessageType.Error,
        )

    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(server, *args):
            try:
                return await handler(server, *args)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                report(server, exc)
                return None

        return run_async

    @functools.wraps(handler)
    def run(server, *args):
        try:
            return handler(server, *args)
        except Exception as exc:
            report(server, exc)
            return None

    return run


INDEX_READY = "gradlint: the workspace's project index is ready; open files checked again"


class GradlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gradlint",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=GradlintProtocol,  # no future kept per notification (gradlint/lsp/protocol.py)
        )
        self.debounce = DEFAULT_DEBOUNCE
        self.settings = SettingsCache()
        self.push = True
        self.shutdown_requested = False
        # uri -> ((version, settings generation), check) of the newest published check
        self.results: dict[str, tuple[tuple, DocumentCheck]] = {}
        self.pending: dict[str, asyncio.Task] = {}
        # uri -> what the buffer's last checks parsed (gradlint/incremental): an edit re-parses
        # only the statements it touched.  Used on the check thread only.
        self.memos: dict[str, DocumentMemo] = {}
        # uri -> (version key, finding -> the fix --fix would apply to it): code actions are asked often
        self.proven: dict[str, tuple[tuple, dict]] = {}
        # what each buffer's check found on calls of other files (gradlint/lsp/contributions.py)
        from gradlint.lsp.contributions import Contributions

        self.contributions = Contributions()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradlint-check")
        self.analyses = Analyses()  # the running check, stoppable at its time limit or at shutdown
        self._config_problems_shown: set[str] = set()
        self._internal_logged: dict[str, set[str]] = {}
        # The workspace's project index (gradlint/project), built in the background: a check
        # reads it as it is, never waits for it; once ready, the open buffers are checked again.
        from gradlint.lsp.workspace import WorkspaceIndex

        self.workspace_index = WorkspaceIndex(on_ready=self._index_ready)
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def _index_ready(self) -> None:
        """On the index's thread: re-check every open buffer (on the server's loop), and say so
        in the client's log: from then on a check sees the other modules of the workspace."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return

        def recheck() -> None:
            self.log(INDEX_READY)
            for uri, doc in list(self.workspace.text_documents.items()):
                if self.is_python(doc):
                    self.results.pop(uri, None)
                    self.schedule(uri, 0)

        loop.call_soon_threadsafe(recheck)

    def shutdown(self) -> None:
        # a check still running on the worker must not hold up the process's exit
        self.analyses.stop(SHUT_DOWN)
        self._pool.shutdown(wait=False, cancel_futures=True)
        # nor the thread reading the client's input, which may wait for bytes that never come
        readers, self._thread_pool = getattr(self, "_thread_pool", None), None
        if readers is not None:
            readers.shutdown(wait=False, cancel_futures=True)
        super().shutdown()

    # --- messages to the client ---------------------------------------------------

    def log(self, message: str, kind: types.MessageType = types.MessageType.Info) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def config_problem(self, problem: str) -> None:
        """A broken [tool.gradlint]: say so once per distinct error, keep serving with the defaults."""
        if problem in self._config_problems_shown:
            return
        self._config_problems_shown.add(problem)
        message = f"gradlint: {problem}; using the default rules until it is fixed"
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))
        self.log(message, types.MessageType.Warning)

    # --- documents ----------------------------------------------------------------

    def document(self, uri: str) -> Optional[TextDocument]:
        return self.workspace.text_documents.get(uri)

    def is_python(self, doc: TextDocument) -> bool:
        return doc.language_id == "python" or (doc.path or "").endswith(PYTHON_SUFFIXES)

    def path_of(self, doc: TextDocument) -> str:
        path = to_fs_path(doc.uri) if doc.uri.startswith("file:") else None
        if path:
            return path
        # an unsaved buffer: configuration comes from the workspace root
        root = self.workspace.root_path or os.getcwd()
        return os.path.join(root, os.path.basename(doc.path or "untitled.py") or "untitled.py")

    def key_of(self, doc: TextDocument) -> tuple:
        return (doc.version, self.settings.generation)

    def is_current(self, uri: str, key: tuple) -> bool:
        doc = self.document(uri)
        return doc is not None and self.key_of(doc) == key

    async def check(self, uri: str) -> Optional[DocumentCheck]:
        """The check of the buffer as it is now; None if it changed or closed meanwhile."""
        doc = self.document(uri)
        if doc is None or not self.is_python(doc):
            return None
        key = self.key_of(doc)
        cached = self.results.get(uri)
        if cached is not None and cached[0] == key:
            return cached[1]
        path = self.path_of(doc)
        settings, problem = self.settings.get(path)
        if problem:
            self.config_problem(problem)
        text = doc.source
        memo = self.memos.setdefault(uri, DocumentMemo())

        index = self.workspace_index

        def analyse() -> DocumentCheck:
            from gradlint.parse.file_context import FileContext
            from gradlint.run.pool import ISOLATED_FROM_BYTES, collector_paused

            if len(text) >= ISOLATED_FROM_BYTES:  # as the command line checks a big file: in a child
                self.memos.pop(uri, None)  # the child's trees do not come back: keep none of an older version
                return check_document_apart(text, path, uri, settings, index.project_for)
            with collector_paused():  # the process's collector: paused per check (gradlint/run/pool.py)
                # one context for the check and the project lookup, which reads the buffer's imports
                # from the tree the check parses (through the memo's chunks)
                context = FileContext(path, text, memo)
                return check_document(text, path, uri, settings, memo, index.project_for(path, text, context), context)

        def run() -> Optional[DocumentCheck]:
            if not self.is_current(uri, key):
                return None  # superseded while waiting for the worker: do not spend a check on it
            checked, stopped = self.analyses.run(analyse, settings.file_timeout)
            if stopped is not None:
                self.memos.pop(uri, None)  # the memo may be half updated
                return None if stopped == SHUT_DOWN else stopped_check(text, path, settings.file_timeout)
            return checked

        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self._pool, run)
        if result is None or not self.is_current(uri, key):
            return None  # superseded: a newer version has its own check scheduled
        self.results[uri] = (key, result)
        self.log_internal_errors(uri, path, result)
        return result

    async def checked_document(self, uri: str) -> tuple[Optional[DocumentCheck], Optional[TextDocument]]:
        """The current check of an open document and the document, or (None, None)."""
        result = await self.current_check(uri)
        doc = self.document(uri)
        return (result, doc) if result is not None and doc is not None else (None, None)

    async def current_check(self, uri: str) -> Optional[DocumentCheck]:
        """Like check, but retried when the buffer changes mid-check (for requests that need an answer)."""
        for _ in range(5):
            result = await self.check(uri)
            if result is not None or self.document(uri) is None:
                return result
        return None

    async def proven_fixes(self, doc: TextDocument, result: DocumentCheck, findings: list) -> list:
        """For each finding, the fix --fix would apply in this buffer, or None
        (actions.proven_fix); on the check thread, remembered for the buffer's version."""
        if not any(finding.fix for finding in findings):
            return [None] * len(findings)
        key = self.key_of(doc)
        known = self.proven.get(doc.uri)
        if known is None or known[0] != key:
            known = self.proven[doc.uri] = (key, {})
        path = self.path_of(doc)
        settings, _ = self.settings.get(path)
        text = doc.source

        def run() -> list:
            from gradlint.check.engine import check_source
            from gradlint.run.pool import collector_paused

            def check(version: str):
                from gradlint.run.pool import ChildDied, apart, crashed

                try:  # a big buffer's proof in a child, as its check (check_document_apart)
                    with collector_paused():  # as for every check (gradlint/run/pool.py)
                        return apart(len(version), check_source, version, path, settings)
                except ChildDied:
                    return crashed(path, "the worker process checking this file died")

            out = []
            for finding in findings:
                if finding not in known[1]:
                    known[1][finding] = actions.proven_fix(text, path, result.findings, finding, check)
                out.append(known[1][finding])
            return out

        return await asyncio.get_running_loop().run_in_executor(self._pool, run)

    def log_internal_errors(self, uri: str, path: str, result: DocumentCheck) -> None:
        seen = self._internal_logged.setdefault(uri, set())
        for message in result.internal_errors:
            if message not in seen:  # once per distinct failure, not once per keystroke
                seen.add(message)
                self.log(f"gradlint: could not check {path}: {message}", types.MessageType.Error)

    def client_diagnostics(self, doc: TextDocument, diagnostics: list[dict]) -> list[types.Diagnostic]:
        """Our dicts (code-point columns) as lsprotocol Diagnostics in the client's position encoding."""
        out = _converter.structure(diagnostics, list[types.Diagnostic])
        if doc.source.isascii():
            return out  # every encoding counts ASCII the same
        lines = doc.lines
        codec = doc.position_codec
        for diagnostic in out:
            diagnostic.range = codec.range_to_client_units(lines, diagnostic.range)
            for related in diagnostic.related_information or ():
                if related.location.uri == doc.uri:
                    related.location.range = codec.range_to_client_units(lines, related.location.range)
        return out

    def client_range(self, doc: TextDocument, value: dict) -> dict:
        if doc.source.isascii():
            return value
        converted = doc.position_codec.range_to_client_units(doc.lines, _converter.structure(value, types.Range))
        return _converter.unstructure(converted)

    async def publish(self, uri: str) -> None:
        result = await self.check(uri)
        doc = self.document(uri)
        if result is None or doc is None or not self.push:
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, version=doc.version,
                diagnostics=self.client_diagnostics(doc, self.contributions.to(uri, result.diagnostics)),
            )
        )
        for other in sorted(self.contributions.give(uri, result.elsewhere, self.text_now) - {uri}):
            self.publish_given(other)

    def publish_given(self, uri: str) -> None:
        """A file's diagnostics again after what other buffers give it changed: its own from its
        newest check (none when it is not open), and theirs."""
        doc = self.document(uri)
        known = self.results.get(uri)
        own = known[1].diagnostics if known is not None and doc is not None and known[0] == self.key_of(doc) else []
        diagnostics = self.contributions.to(uri, own)
        converted = self.client_diagnostics(doc, diagnostics) if doc is not None else _converter.structure(
            diagnostics, list[types.Diagnostic]
        )
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=doc.version if doc is not None else None, diagnostics=converted)
        )

    def text_now(self, path: str) -> Optional[str]:
        """A file's text as the user sees it: its open buffer's, else the file's on disk."""
        for doc in list(self.workspace.text_documents.values()):
            if doc.uri.startswith("file:") and os.path.abspath(to_fs_path(doc.uri) or "") == path:
                return doc.source
        try:
            with open(path, encoding="utf-8") as handle:
                return handle.read()
        except (OSError, UnicodeDecodeError, ValueError):
            return None

    def schedule(self, uri: str, delay: float) -> None:
        """Check `uri` after `delay`, replacing a check still waiting for an older version."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.ensure_future(self._later(uri, delay))

    @guarded
    async def _later(self, uri: str, delay: float) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            await self.publish(uri)
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    def forget(self, uri: str) -> None:
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.results.pop(uri, None)
        self.memos.pop(uri, None)
        self.proven.pop(uri, None)
        self._internal_logged.pop(uri, None)

    def reload_configuration(self, why: str) -> None:
        self.settings.clear()
        self._config_problems_shown.clear()
        self.log(f"gradlint: {why}; configuration reloaded")
        for uri, doc in list(self.workspace.text_documents.items()):
            if self.is_python(doc):
                self.schedule(uri, 0)
        if not self.push and _get(self.client_capabilities, "workspace", "diagnostics", "refresh_support"):
            self.workspace_diagnostic_refresh(None)


def _get(obj: Any, *names: str) -> Any:
    for name in names:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def _in_range(range_: types.Range) -> tuple[int, int]:
    return range_.start.line, range_.end.line


def make_server() -> GradlintServer:
    server = GradlintServer()

    @server.feature(types.INITIALIZE)
    @guarded
    def initialize(ls: GradlintServer, params: types.InitializeParams):
        use_python_lines(ls.workspace)  # lines end where LSP ends them (gradlint/lsp/protocol.py)
        ls.push = _get(params.capabilities, "text_document", "diagnostic") is None
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounce_ms"), (int, float)):
            ls.debounce = max(0.0, float(options["debounce_ms"]) / 1000)

    @server.feature(types.INITIALIZED)
    @guarded
    def initialized(ls: GradlintServer, params: types.InitializedParams):
        try:
            ls._loop = asyncio.get_running_loop()
        except RuntimeError:
            ls._loop = None
        folders = [to_fs_path(f.uri) for f in (ls.workspace.folders or {}).values()] if ls.workspace.folders else []
        ls.workspace_index.start([f for f in folders if f] or ([ls.workspace.root_path] if ls.workspace.root_path else []))
        # Ask to hear about pyproject.toml edits made outside the editor too (git checkout, other tools).
        if _get(ls.client_capabilities, "workspace", "did_change_watched_files", "dynamic_registration"):
            watcher = types.FileSystemWatcher(glob_pattern="**/pyproject.toml")
            registration = types.Registration(
                id="gradlint-pyproject-watcher",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[watcher]),
            )
            ls.client_register_capability(types.RegistrationParams(registrations=[registration]))

    @server.feature(types.SHUTDOWN)
    @guarded
    def shutdown(ls: GradlintServer, params: None):
        ls.shutdown_requested = True
        ls.analyses.stop(SHUT_DOWN)  # no check outlives the session's end
        for uri in list(ls.pending):
            ls.forget(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guarded
    def did_open(ls: GradlintServer, params: types.DidOpenTextDocumentParams):
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guarded
    def did_change(ls: GradlintServer, params: types.DidChangeTextDocumentParams):
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @guarded
    def did_save(ls: GradlintServer, params: types.DidSaveTextDocumentParams):
        uri = params.text_document.uri
        if is_config_file(uri):
            ls.reload_configuration(f"{to_fs_path(uri) or uri} saved")
            return
        ls.workspace_index.file_saved(to_fs_path(uri) or "")
        ls.schedule(uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guarded
    def did_close(ls: GradlintServer, params: types.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        ls.forget(uri)
        if ls.push:  # a closed file's findings would otherwise linger in the problems list
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            # what it gave other files goes too; what other buffers give it stays shown
            for other in sorted(ls.contributions.withdraw(uri) | ({uri} if ls.contributions.to(uri, []) else set())):
                ls.publish_given(other)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guarded
    def did_change_watched_files(ls: GradlintServer, params: types.DidChangeWatchedFilesParams):
        changed = [change.uri for change in params.changes if is_config_file(change.uri)]
        if changed:
            ls.reload_configuration(f"{to_fs_path(changed[0]) or changed[0]} changed")

    @server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(identifier="gradlint", inter_file_dependencies=False, workspace_diagnostics=False),
    )
    @guarded
    async def pull_diagnostics(ls: GradlintServer, params: types.DocumentDiagnosticParams):
        uri = params.text_document.uri
        result, doc = await ls.checked_document(uri)
        if result is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        version, generation = ls.key_of(doc)
        result_id = f"{version}.{generation}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        ls.contributions.give(uri, result.elsewhere, ls.text_now)
        return types.RelatedFullDocumentDiagnosticReport(
            items=ls.client_diagnostics(doc, ls.contributions.to(uri, result.diagnostics)), result_id=result_id
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    @guarded
    async def code_action(ls: GradlintServer, params: types.CodeActionParams):
        only = params.context.only
        if only and not any(types.CodeActionKind.QuickFix.value.startswith(kind) for kind in only):
            return None  # e.g. "source.organizeImports" on save: we offer quick fixes only
        uri = params.text_document.uri
        result, doc = await ls.checked_document(uri)
        if result is None:
            return None
        first, last = _in_range(params.range)
        on_lines = findings_on_lines(result.findings, first, last)
        proven = await ls.proven_fixes(doc, result, on_lines)
        by_key = {(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"]): d for d in result.diagnostics}
        out = []
        for finding, fix in zip(on_lines, proven):
            diagnostic = by_key.get((finding.code, finding.span.line - 1, finding.span.col - 1))
            client_diagnostic = ls.client_diagnostics(doc, [diagnostic])[0] if diagnostic else None
            line_text = doc.lines[finding.span.line - 1].rstrip("\r\n") if finding.span.line <= len(doc.lines) else ""
            for action in (
                actions.fix_action(replace(finding, fix=fix), uri, None),
                actions.suppression_action(finding, line_text, uri, None),
            ):
                if action is None:
                    continue
                for edit in action["edit"]["changes"][uri]:
                    edit["range"] = ls.client_range(doc, edit["range"])
                code_action = _converter.structure(action, types.CodeAction)
                if client_diagnostic is not None:
                    code_action.diagnostics = [client_diagnostic]
                out.append(code_action)
        return out

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    @guarded
    async def hover(ls: GradlintServer, params: types.HoverParams):
        uri = params.text_document.uri
        result, doc = await ls.checked_document(uri)
        if result is None:
            return None
        position = doc.position_codec.position_from_client_units(doc.lines, params.position)
        finding = finding_at(result.findings, position.line, position.character)
        if finding is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=actions.hover_markdown(finding)),
            range=_converter.structure(ls.client_range(doc, actions.span_range(finding.span)), types.Range),
        )

    return server
