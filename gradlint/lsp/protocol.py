"""Where gradlint's server departs from pygls's defaults (pygls 2), each for a measured fault.

- Lines as LSP counts them.  pygls's TextDocument splits its text with
  `str.splitlines`, which also ends a line at a form feed, `\\x85`, U+2028 and
  others; LSP positions count only `\\n`, `\\r\\n` and `\\r`.  An incremental
  edit below a form feed in a comment landed on another line of the server's
  copy, which then differed from the editor's until the file was reopened.
  PythonLinesDocument splits as LSP (and Python) do, and keeps the split of its
  current text instead of making it again for every position.
- No future kept per notification.  pygls files the future of every handled
  notification under a fresh id in `_request_futures` and only a response
  takes a request's out again, so each keystroke's didChange stayed for the
  session: memory grew by about 2 MB per thousand edits with no plateau.
"""

from __future__ import annotations

from typing import Sequence

from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from gradlint.core import source_lines


class PythonLinesDocument(TextDocument):
    """A TextDocument whose lines end only at `\\n`, `\\r\\n` and `\\r` (LSP's lines)."""

    _split_source = None
    _split_lines: tuple = ()

    @property
    def lines(self) -> Sequence[str]:
        source = self.source
        if source is not self._split_source:
            self._split_lines = tuple(source_lines.lines(source, keepends=True))
            self._split_source = source
        return self._split_lines


class PythonLinesWorkspace(Workspace):
    """A pygls Workspace whose documents are PythonLinesDocuments."""

    def _create_text_document(self, doc_uri, source=None, version=None, language_id=None) -> TextDocument:
        return PythonLinesDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )


def use_python_lines(workspace: Workspace) -> None:
    """Make the workspace pygls built at `initialize` (before any document is open) a
    PythonLinesWorkspace.  Another layout of pygls is left as it is."""
    if type(workspace) is Workspace and callable(getattr(workspace, "_create_text_document", None)):
        workspace.__class__ = PythonLinesWorkspace


class GradlintProtocol(LanguageServerProtocol):
    """pygls's protocol, forgetting each notification's future once its handler is done.

    Done ones are taken out when the next message is handled (in the loop's thread, never
    while pygls walks the futures to cancel them at `shutdown`)."""

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        futures = getattr(self, "_request_futures", None)
        if futures is None or callback != getattr(self, "_check_handler_result", None):
            return  # a request: sending its response takes its future out
        pending = self.__dict__.setdefault("_notification_ids", set())
        pending.add(msg_id)
        for key in [key for key in pending if key not in futures or futures[key].done()]:
            pending.discard(key)
            futures.pop(key, None)
